#!lua
-- apply: project one logged event into views, skipping views that already applied it.
-- KEYS[1] positions (hash: view -> id of the last event applied)
-- ARGV: id (the event's stream id), nv, then nv view blocks: view name, op count, ops
-- Returns: the number of views the event was applied to (0 when every view had it already).
-- The position is recorded in the same script as the view change, so a crash or a second
-- delivery never applies an event twice, and views apply their thread's events in log order.
local err = expect_type(KEYS[1], 'hash')
if err then return err end

local function newer(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams > bms or (ams == bms and aseq > bseq)
end

local id = ARGV[1]
local nv = tonumber(ARGV[2])
local i = 3
local applied = 0
for _ = 1, nv do
  local view, count = ARGV[i], tonumber(ARGV[i + 1])
  local done = redis.call('HGET', KEYS[1], view)
  if done and not newer(id, done) then
    -- skip the block: walk past its ops without running them
    i = i + 2
    for _ = 1, count do i = i + 1 + tonumber(ARGV[i]) end
  else
    i = apply_ops(i + 2, count, id)
    redis.call('HSET', KEYS[1], view, id)
    applied = applied + 1
  end
end
return applied
