#!lua
-- append_batch: several events of one log, atomically, in order: for each, its log entry, its
-- feed pointer and its projections; then the positions of the views (the last event's id).
-- KEYS[1] log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash),
--   KEYS[4..] (optional) guarded JSON documents
-- ARGV: ne, then ne events, each: nf, nf event field/value args; np, np feed pointer args;
--       nv, then nv view blocks (view name, op count, ops: argc, args...); then, for each
--       guarded document, a JSONPath and the JSON text JSON.GET of it must reply (the append
--       is refused with STALE, before any write, when one differs: a compare-and-set).
-- Returns: the ids of the appended log entries, in order.
-- Validates key types before the first write; the #!lua shebang makes Redis refuse the whole
-- script up front when out of memory, so it writes all or nothing.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
if err then return err end
local guards = #KEYS - 3
for g = 1, guards do
  local at = #ARGV - 2 * (guards - g) - 1
  if redis.pcall('JSON.GET', KEYS[3 + g], ARGV[at]) ~= ARGV[at + 1] then
    return redis.error_reply('STALE the document ' .. KEYS[3 + g] .. ' changed since it was read')
  end
end

local ids, positions = {}, {}
local i = 2
for e = 1, tonumber(ARGV[1]) do
  local nf = tonumber(ARGV[i])
  local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + nf))
  ids[e] = id
  i = i + 1 + nf
  local np = tonumber(ARGV[i])
  redis.call('XADD', KEYS[2], '*', 'id', id, unpack(ARGV, i + 1, i + np))
  i = i + 1 + np
  local nv = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, nv do
    positions[ARGV[i]] = id
    i = apply_ops(i + 2, tonumber(ARGV[i + 1]), id)
  end
end
for view, id in pairs(positions) do redis.call('HSET', KEYS[3], view, id) end
return ids
