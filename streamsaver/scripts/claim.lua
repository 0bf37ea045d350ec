#!lua
-- claim: take write ownership of a thread, superseding its current owner (if any).
-- KEYS[1] the thread's positions (hash; its field '@owner' holds the current claim), KEYS[2]
--         the thread's log (stream: a positions hash made here takes its deadline)
-- ARGV[1] a nonce unique to this claim
-- Returns: the claim's token "<n>:<nonce>", n one more than the claim it supersedes (1 for the
--          first). The nonce keeps a token unique when the count restarts (the thread was
--          deleted or expired), so a superseded claim never matches again.
local held = redis.call('HGET', KEYS[1], '@owner')
local n = 1
if held then n = (tonumber(string.match(held, '^(%d+):')) or 0) + 1 end
local token = n .. ':' .. ARGV[1]
local fresh = redis.call('EXISTS', KEYS[1]) == 0
redis.call('HSET', KEYS[1], '@owner', token)
if fresh then
  local deadline = redis.call('PEXPIRETIME', KEYS[2])
  if deadline > 0 then redis.call('PEXPIREAT', KEYS[1], deadline) end
end
return token
