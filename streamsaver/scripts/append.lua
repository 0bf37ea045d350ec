#!lua
-- append: one event, atomically: log entry, feed pointer, projections, positions.
-- KEYS[1] thread log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash)
-- ARGV: nf, nf event field/value args; np, np feed pointer field/value args; erase ("1": drop
--       the log and positions after applying, for ThreadDeleted); nv; then nv view blocks, each:
--       view name, op count, ops (argc, args...); then the TTL block: ttl in ms (0: none), the
--       view count and 5 purge stems per view (see keep_alive in _lib.lua)
-- Returns: the id of the appended log entry.
-- Validates key types before the first write; the #!lua shebang makes Redis refuse the whole
-- script up front when out of memory, so it writes all or nothing.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
if err then return err end

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
local touched = {}
for _ = 1, nv do
  local view, count = ARGV[i], tonumber(ARGV[i + 1])
  local j = i + 2
  for _ = 1, count do
    touched[#touched + 1] = ARGV[j + 2]
    j = j + 1 + tonumber(ARGV[j])
  end
  i = apply_ops(i + 2, count, id)
  redis.call('HSET', KEYS[3], view, id)
end
if erase then
  redis.call('DEL', KEYS[1], KEYS[3])
elseif ARGV[i] then
  keep_alive(KEYS[1], KEYS[3], tonumber(ARGV[i]), i + 1, touched)
end
return id
