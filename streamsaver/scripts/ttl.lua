#!lua
-- ttl: refresh, pin, unpin or set the expiry of every key of one thread.
-- KEYS[1] thread log (stream), KEYS[2] positions (hash)
-- ARGV[1] mode: "touch" (give every key the full TTL again when less than half is left),
--         "pin" (no key of the thread expires, now or after later appends), "unpin" (expire
--         again: every key gets the full TTL), "at" (every key expires at one absolute moment:
--         an import restoring a thread's deadline; a moment already past deletes the keys)
-- ARGV[2..] the TTL block: ttl in ms (for "at": the deadline, ms since the epoch), the view
--         count and 5 purge stems per view
-- Returns: 1.
local mode = ARGV[1]

-- Every key of the thread: the log, every view key, the positions.
local function thread_keys()
  local keys = {KEYS[1]}
  for v = 0, tonumber(ARGV[3]) - 1 do
    local b = 4 + 5 * v
    view_keys(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], keys)
  end
  keys[#keys + 1] = KEYS[2]
  return keys
end

if mode == 'pin' then
  redis.call('HSET', KEYS[2], '@pinned', '1')
  for _, key in ipairs(thread_keys()) do redis.call('PERSIST', key) end
  return 1
end
if mode == 'at' then
  for _, key in ipairs(thread_keys()) do redis.call('PEXPIREAT', key, ARGV[2]) end
  return 1
end
if mode == 'unpin' then
  if redis.call('HDEL', KEYS[2], '@pinned') == 1 and redis.call('HLEN', KEYS[2]) == 0 then
    return 1 -- the thread had no keys but the pin
  end
  redis.call('PERSIST', KEYS[1])
end
keep_alive(KEYS[1], KEYS[2], tonumber(ARGV[2]), 3, {})
return 1
