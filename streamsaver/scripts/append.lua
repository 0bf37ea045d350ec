#!lua
-- append: one event, atomically: log entry, feed pointer, projections, positions.
-- KEYS[1] thread log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash)
-- ARGV: nf, nf event field/value args; np, np feed pointer field/value args; erase ("1": drop
--       the log and positions after applying, for ThreadDeleted); nv; then nv view blocks, each:
--       view name, op count, ops (argc, args...)
-- KEYS[4] (optional, with the last two ARGV): where a view records the log entry holding this
--       event: a hash, the field naming the entry, and "" or the checkpoint id its '@cid' field
--       must hold. When that entry equals the event field for field, the call is a repeat (a
--       retry after a lost reply): nothing is written and the entry's id is returned.
-- Returns: the id of the appended (or already logged) log entry.
-- Validates key types before the first write; the #!lua shebang makes Redis refuse the whole
-- script up front when out of memory, so it writes all or nothing.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
if err then return err end
if KEYS[4] then
  local held = logged_entry(KEYS[1], KEYS[4], ARGV[#ARGV - 1], ARGV[#ARGV], 2, tonumber(ARGV[1]))
  if held then return held end
end

local i = 1
local nf = tonumber(ARGV[i])
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + nf))
i = i + 1 + nf
local np = tonumber(ARGV[i])
redis.call('XADD', KEYS[2], '*', 'id', id, unpack(ARGV, i + 1, i + np))
i = i + 1 + np
local erase = ARGV[i] == '1'
local nv = tonumber(ARGV[i + 1])
i = i + 2
for _ = 1, nv do
  local view = ARGV[i]
  i = apply_ops(i + 2, tonumber(ARGV[i + 1]), id)
  redis.call('HSET', KEYS[3], view, id)
end
if erase then redis.call('DEL', KEYS[1], KEYS[3]) end
return id
