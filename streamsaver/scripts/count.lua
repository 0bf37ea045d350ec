#!lua
-- count: add to a partition's counters once per feed entry (the analytics example).
-- KEYS[1] counters (hash, one per partition and analytics name)
-- ARGV: feed entry id, then field, increment pairs
-- Returns: 1 when counted, 0 when the entry (or a later one) was counted already.
-- One owner handles a partition in feed order, so the last counted id ("@last") makes a
-- re-delivered entry a no-op: the counts stay exact under at-least-once delivery.
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local last = redis.call('HGET', KEYS[1], '@last')
if last then
  local lm, ls = parse(last)
  local em, es = parse(ARGV[1])
  if em < lm or (em == lm and es <= ls) then return 0 end
end
for i = 2, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[1], '@last', ARGV[1])
return 1
