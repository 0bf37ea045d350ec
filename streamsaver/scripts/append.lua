#!lua
-- append: one event, atomically: log entry, feed pointer, projections, positions.
-- KEYS[1] thread log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash)
-- ARGV: nf, nf event field/value args; np, np feed pointer field/value args; erase ("1": drop
--       the log and positions after applying, for ThreadDeleted); nv; then nv view blocks, each:
--       view name, op count, ops (argc, args...); then, optionally, the TTL block: ttl in ms
--       (0: none), the view count and 5 purge stems per view (see keep_alive in _lib.lua);
--       without one, the keys the call touches get the log's deadline, if it has one
-- KEYS[4] (optional) the repeat probe, or KEYS[3] again for none (then KEYS[5..] declare every
--       key the view ops name, so that Redis Cluster routes the call, and holds it during a slot
--       migration, by all the keys it writes; the script reads them from ARGV). The probe (with
--       the last two ARGV, after the TTL block): where a view records the log
--       entry holding this event: a hash, the field naming the entry, and "" or the checkpoint
--       id its '@cid' field must hold. When that entry equals the event field for field, the
--       call is a repeat (a retry after a lost reply): nothing is logged, projected or fed; only
--       the thread's TTL is refreshed as an append would (a no-op when the first call did it).
-- Returns: {the id of the appended (or already logged) log entry, the thread's incarnation after
--          the call (positions field '@inc', see read_cached.lua; "" when the call erased the log
--          or the log has none)}: the writer holds its entry under that incarnation
--          (streamsaver/checkpoints/entry_cache.py); nil: a deletion of a thread that has no key,
--          nothing written; error SSBASE (nothing written) when a delta's link is not the
--          positions' record of its channel's last full value (see below).
-- Validates the type of every key it will write (the view keys too) before the first write; the
-- #!lua shebang makes Redis refuse the whole script up front when out of memory, so it writes
-- all or nothing.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
if err then return err end

-- Where the blocks start.
local nf = tonumber(ARGV[1])
local pointer = 2 + nf
local np = counts[ARGV[pointer]] or count_of(ARGV[pointer])
local erase = ARGV[pointer + 1 + np] == '1'
local nv = counts[ARGV[pointer + 2 + np]] or count_of(ARGV[pointer + 2 + np])
local blocks = pointer + 3 + np
local last = #ARGV
local probe = KEYS[4] ~= KEYS[3] and KEYS[4]
if probe then last = last - 2 end

-- The index after the view blocks (where the TTL block is, if any); when `keys` is given, the
-- keys the view ops name are added to it (they get the log's deadline). Walked only with a TTL.
local function walk_blocks(keys)
  local i = blocks
  for _ = 1, nv do
    local j = i + 2
    for _ = 1, tonumber(ARGV[i + 1]) do
      if keys then add_op_keys(keys, j) end
      j = j + 1 + tonumber(ARGV[j])
    end
    i = j
  end
  return i
end

-- Deleting a thread none of whose keys exist (never written, deleted, expired) appends nothing:
-- no tombstone on the feed. The keys are the log, its positions and those the view ops name.
if erase then
  local keys = {KEYS[1], KEYS[3]}
  walk_blocks(keys)
  if redis.call('EXISTS', spread(keys, 1, #keys)) == 0 then return false end
end

if probe then
  err = expect_type(probe, 'hash')
  if err then return err end
  local held = logged_entry(KEYS[1], probe, ARGV[#ARGV - 1], ARGV[#ARGV], 2, nf)
  if held then
    local ttl_at = walk_blocks(nil)
    if not erase and ttl_at <= last then
      keep_alive(KEYS[1], KEYS[3], tonumber(ARGV[ttl_at]), ttl_at + 1, {})
    end
    return {held, redis.call('HGET', KEYS[3], '@inc') or ''}
  end
end

-- The positions field recording the last full value of channel field `name` in namespace `ns`
-- (the length first: no two namespace and channel pairs share a field).
local function base_field(ns, name)
  return '@base:' .. #ns .. ':' .. ns .. name
end

-- "<field size> <version>" of a stored channel value a delta may later extend: a msgpack array
-- (the only values stored as deltas), or a compressed msgpack value (whose kind is not seen);
-- nil for any other value. The record adds its entry id in front once the entry is logged.
local function base_record(payload)
  local kind, at = packed_part(payload, 1, 2)
  if kind == 'msgpack' then
    local first = string.byte(payload, at + 4) or 0  -- the data's first byte
    if not (first >= 0x90 and first <= 0x9f or first == 0xdc or first == 0xdd) then return nil end
  elseif kind ~= 'zstd:msgpack' then
    return nil
  end
  return #payload .. ' ' .. stored_version(payload)
end

-- A delta must extend a value this log holds (streamsaver/log/deltas.py). The positions hash keeps
-- a record of the last full msgpack array this script logged for each namespace and channel
-- (base_field: "<entry id> <field size> <version>"), written in the same atomic call as its
-- entry and dropped by every write that removes or rewrites entries (the erase below, with the
-- positions; rewrite.lua; expiry, the positions expiring with the log). A delta whose link is
-- not its channel's record is refused before the first write: what the saver remembered is
-- stale (another writer, a deletion, a prune, a copy or restore, expiry), so it sends the full
-- value instead and no delta ever points at nothing. One HGET, where reading the linked entry
-- (XRANGE) turned a whole entry, its base value included, into Lua strings.
local ns, channels, bases = '', {}, {}
for k = 2, 1 + nf, 2 do
  local name = ARGV[k]
  if name == 'ns' then
    ns = ARGV[k + 1]
  elseif string.byte(name, 1) == 99 and string.byte(name, 2) == 58 then  -- 'c:'
    channels[#channels + 1] = k
  end
end
for _, k in ipairs(channels) do
  local field = base_field(ns, ARGV[k])
  local link, version, size = delta_link(ARGV[k + 1])
  if link then
    if redis.call('HGET', KEYS[3], field) ~= link .. ' ' .. size .. ' ' .. version then
      return redis.error_reply('SSBASE the log entry ' .. link .. ' does not hold the value a delta of ' .. ARGV[k] .. ' extends')
    end
  else
    local record = base_record(ARGV[k + 1])
    if record then
      bases[#bases + 1] = field
      bases[#bases + 1] = record
    end
  end
end

err = check_view_keys(blocks, nv)
if err then return err end

local id = redis.call('XADD', KEYS[1], '*', spread(ARGV, 2, 1 + nf))
local fed = redis.call('XADD', KEYS[2], '*', 'id', id, unpack(ARGV, pointer + 1, pointer + np))
local i = blocks
local positions = {false, false, false, false, false, false}  -- sized for two views and a base: no rehash
for v = 1, nv do
  positions[2 * v - 1], positions[2 * v] = ARGV[i], id
  i = apply_ops(i + 2, counts[ARGV[i + 1]] or count_of(ARGV[i + 1]), id)
end
local n = 2 * nv
for j = 1, #bases, 2 do
  positions[n + 1], positions[n + 2] = bases[j], id .. ' ' .. bases[j + 1]
  n = n + 2
end
if n > 0 then redis.call('HSET', KEYS[3], spread(positions, 1, n)) end  -- one call for all views and bases
-- A log made anew gets a new incarnation (read_cached.lua): a feed id is never handed out twice.
local incarnation = ''
if not erase then
  incarnation = redis.call('HSETNX', KEYS[3], '@inc', fed) == 1 and fed or redis.call('HGET', KEYS[3], '@inc')
end
if erase then
  redis.call('DEL', KEYS[1], KEYS[3])
elseif i <= last then
  local touched = {}
  walk_blocks(touched)
  keep_alive(KEYS[1], KEYS[3], tonumber(ARGV[i]), i + 1, touched)
else
  -- A writer without a TTL: the thread's deadline (another writer's default_ttl) belongs to the
  -- thread, so every key this append touched gets it too; none when the log never expires.
  local deadline = redis.call('PEXPIRETIME', KEYS[1])
  if deadline > 0 then
    local touched = {KEYS[3]}
    walk_blocks(touched)
    for _, key in ipairs(touched) do redis.call('PEXPIREAT', key, deadline) end
  end
end
return {id, incarnation}
