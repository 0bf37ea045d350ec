#!lua
-- append_batch: several events of one log, atomically, in order: for each, its log entry, its
-- feed pointer and its projections; then the positions of the views (the last event's id).
-- KEYS[1] log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash); then every
--         key the view ops name, declared for Redis Cluster (read from ARGV)
-- ARGV: ne, then ne events, each: nf, nf event field/value args; np, np feed pointer args;
--       nv, then nv view blocks (view name, op count, ops: argc, args...); then (optional) ng
--       and ng guards, each a JSON document key (declared in KEYS too), a JSONPath and the JSON
--       text JSON.GET of it must reply (the append is refused with STALE, before any write,
--       when one differs: a compare-and-set).
-- Returns: the ids of the appended log entries, in order.
-- When the log expires, the keys the call wrote that have no expiry of their own get its
-- deadline (a TTL a projection set, an item's, is kept).
-- Validates the type of every key it writes before the first write; the #!lua shebang makes
-- Redis refuse the whole script up front when out of memory, so it writes all or nothing.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
if err then return err end

-- Every key the events' view ops name has the type they need, before the first write.
local at = 2
for _ = 1, tonumber(ARGV[1]) do
  at = at + 1 + tonumber(ARGV[at])  -- the event's fields
  at = at + 1 + tonumber(ARGV[at])  -- its feed pointer
  err, at = check_view_keys(at + 1, tonumber(ARGV[at]))
  if err then return err end
end
for g = at + 1, at + 3 * (tonumber(ARGV[at]) or 0), 3 do
  if redis.pcall('JSON.GET', ARGV[g], ARGV[g + 1]) ~= ARGV[g + 2] then
    return redis.error_reply('STALE the document ' .. ARGV[g] .. ' changed since it was read')
  end
end

local ids, positions, touched = {}, {}, {KEYS[3]}
local i = 2
for e = 1, tonumber(ARGV[1]) do
  local nf = tonumber(ARGV[i])
  local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + nf))
  ids[e] = id
  i = i + 1 + nf
  local np = tonumber(ARGV[i])
  local fed = redis.call('XADD', KEYS[2], '*', 'id', id, unpack(ARGV, i + 1, i + np))
  if e == 1 then redis.call('HSETNX', KEYS[3], '@inc', fed) end  -- see append.lua
  i = i + 1 + np
  local nv = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, nv do
    positions[ARGV[i]] = id
    local j = i + 2
    for _ = 1, tonumber(ARGV[i + 1]) do
      add_op_keys(touched, j)
      j = j + 1 + tonumber(ARGV[j])
    end
    i = apply_ops(i + 2, tonumber(ARGV[i + 1]), id)
  end
end
for view, id in pairs(positions) do redis.call('HSET', KEYS[3], view, id) end
local deadline = redis.call('PEXPIRETIME', KEYS[1])
if deadline > 0 then
  for _, key in ipairs(touched) do redis.call('PEXPIREAT', key, deadline, 'NX') end
end
return ids
