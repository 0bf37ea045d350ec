#!lua
-- ttl: refresh, pin or unpin the expiry of every key of one thread.
-- KEYS[1] thread log (stream), KEYS[2] positions (hash)
-- ARGV[1] mode: "touch" (give every key the full TTL again when less than half is left),
--         "pin" (no key of the thread expires, now or after later appends), "unpin" (expire
--         again: every key gets the full TTL)
-- ARGV[2..] the TTL block: ttl in ms, the view count and 5 purge stems per view
-- Returns: 1.
local mode = ARGV[1]
if mode == 'pin' then
  redis.call('HSET', KEYS[2], '@pinned', '1')
  local keys = {KEYS[1]}
  for v = 0, tonumber(ARGV[3]) - 1 do
    local b = 4 + 5 * v
    view_keys(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], keys)
  end
  keys[#keys + 1] = KEYS[2]
  for _, key in ipairs(keys) do redis.call('PERSIST', key) end
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
