#!lua
-- roster: the live projector workers of one view; each call is one worker's heartbeat.
-- KEYS[1] roster (zset: worker name -> expiry, in server milliseconds)
-- ARGV: name, ttl ms ("0": leave the roster)
-- Returns: the names of the live workers (this one included unless it left).
-- Server time, not the workers' clocks, decides who is live; the roster key expires with its
-- last worker.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ttl > 0 then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return redis.call('ZRANGE', KEYS[1], 0, -1)
