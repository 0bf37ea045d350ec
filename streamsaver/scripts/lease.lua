#!lua
-- lease: own one partition feed for one consumer group (a view's projector workers, or a
-- subscriber group), and read its next pointers.
-- KEYS[1] lease (string: the owning consumer's name, with a PX TTL), KEYS[2] partition feed
--   (stream), KEYS[3] (optional) attempts (hash: feed entry id -> failed handler attempts)
-- ARGV: owner (consumer name), lease ms, group, count
--       (count "0": release the lease if this owner holds it, and read nothing)
-- Returns: 0 when another consumer holds the lease (and after a release); otherwise
--   {claimed, entries, tail, attempts}. Taking a free or expired lease first claims every pending entry of the
--   group (the previous owners' unacked pointers; `claimed` counts them) and deletes the other
--   consumers, empty by then. `entries` are up to `count` feed entries (id, fields): this
--   owner's pending ones first, oldest first (one trimmed from the feed has no fields), else
--   new ones. `tail` is the feed's last entry id when nothing was read (every entry up to it
--   was delivered to the group: a consumer may block on XREAD after it), else false.
--   With KEYS[3], pending entries are read one at a time and `attempts` holds the entry's count
--   before this read (the read adds one): {n}; otherwise (and for new entries) it is empty.
-- Reading in the same script as the lease check means only the owner ever takes entries from
-- the group, so a new owner's claim finds everything any previous owner left.
local owner, ms, group, count = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local holder = redis.call('GET', KEYS[1])
if count == 0 then
  if holder == owner then redis.call('DEL', KEYS[1]) end
  return 0
end
local claimed = 0
if holder == owner then
  redis.call('PEXPIRE', KEYS[1], ms)
elseif holder then
  return 0
else
  redis.call('SET', KEYS[1], owner, 'PX', ms)
  local cursor = '0-0'
  repeat
    local reply = redis.call('XAUTOCLAIM', KEYS[2], group, owner, 0, cursor, 'COUNT', 100, 'JUSTID')
    cursor = reply[1]
    claimed = claimed + #reply[2]
  until cursor == '0-0'
  -- the previous owners hold nothing now: drop them, so consumers do not pile up per restart
  for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[2], group)) do
    local info = {}
    for k = 1, #consumer, 2 do info[consumer[k]] = consumer[k + 1] end
    if info['name'] ~= owner and info['pending'] == 0 then
      redis.call('XGROUP', 'DELCONSUMER', KEYS[2], group, info['name'])
    end
  end
end
local function read(from, n)
  local reply = redis.call('XREADGROUP', 'GROUP', group, owner, 'COUNT', n, 'STREAMS', KEYS[2], from)
  return reply and reply[1] and reply[1][2] or {}
end
-- With an attempts hash, pending entries (a retry, or a dead owner's) are read one at a time
-- and counted before the handler sees them, so one that crashes its consumer is counted too.
local entries = read('0', KEYS[3] and 1 or count)
local pending = #entries > 0
if not pending then entries = read('>', count) end
local tail = false
if #entries == 0 then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  tail = last[1] and last[1][1] or '0-0'
end
local attempts = {}
if KEYS[3] and pending then
  attempts = {redis.call('HINCRBY', KEYS[3], entries[1][1], 1) - 1}
end
return {claimed, entries, tail, attempts}
