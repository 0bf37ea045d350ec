#!lua
-- lease: own one partition feed for one view's projector group, and read its next pointers.
-- KEYS[1] lease (string: the owning worker's name, with a PX TTL), KEYS[2] partition feed (stream)
-- ARGV: owner (worker name, also its consumer name), lease ms, group, count
--       (count "0": release the lease if this owner holds it, and read nothing)
-- Returns: 0 when another worker holds the lease (and after a release); otherwise
--   {claimed, entries}. Taking a free or expired lease first claims every pending entry of the
--   group (the previous owners' unacked pointers; `claimed` counts them) and deletes the other
--   consumers, empty by then. `entries` are up to `count` feed entries (id, fields): this
--   owner's pending ones first, oldest first (one trimmed from the feed has no fields), else
--   new ones.
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
local function read(from)
  local reply = redis.call('XREADGROUP', 'GROUP', group, owner, 'COUNT', count, 'STREAMS', KEYS[2], from)
  return reply and reply[1] and reply[1][2] or {}
end
local entries = read('0')
if #entries == 0 then entries = read('>') end
return {claimed, entries}
