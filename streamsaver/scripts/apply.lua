#!lua
-- apply: project logged events of one thread into views, skipping what a view applied already.
-- KEYS[1] positions (hash: view -> id of the last event applied)
-- ARGV: ne, then ne events in log order, each: id (its stream id), nv, then nv view blocks:
--       view name, op count, ops
-- Returns: the number of (event, view) applications made (0 when every view had them all).
-- Positions are read once and recorded once, in the same script as the view changes, so a
-- crash or a second delivery never applies an event twice, and views apply their thread's
-- events in log order. A batch defers root JSON.SETs (see apply_ops): a document rewritten by
-- a later event of the batch is written once, with the same final content.
local err = expect_type(KEYS[1], 'hash')
if err then return err end

local function newer(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams > bms or (ams == bms and aseq > bseq)
end

local ne = tonumber(ARGV[1])
local defer = ne > 1 and new_deferral() or nil
local done, moved, order = {}, {}, {}
local i = 2
local applied = 0
for _ = 1, ne do
  local id, nv = ARGV[i], tonumber(ARGV[i + 1])
  i = i + 2
  for _ = 1, nv do
    local view, count = ARGV[i], tonumber(ARGV[i + 1])
    if done[view] == nil then
      done[view] = redis.call('HGET', KEYS[1], view)
      order[#order + 1] = view
    end
    if done[view] and not newer(id, done[view]) then
      -- skip the block: walk past its ops without running them
      i = i + 2
      for _ = 1, count do i = i + 1 + tonumber(ARGV[i]) end
    else
      i = apply_ops(i + 2, count, id, defer)
      done[view], moved[view] = id, true
      applied = applied + 1
    end
  end
end
if defer then flush_deferred(defer) end
for _, view in ipairs(order) do
  if moved[view] then redis.call('HSET', KEYS[1], view, done[view]) end
end
return applied
