-- The write side's prelude, spliced after `_esc.lua` and `_item.lua` (the type checks and the
-- store's item put) into the scripts that write views: the op interpreter for projector commands (see projectors/commands.py), view purges and TTL blocks.
-- A batch's deferral is in `_defer.lua`, spliced only into apply.lua: every script evaluates
-- its preludes on each call, and an append has no use for it.

-- Locals, not globals, in the op interpreter's loops: a global is a table lookup per use.
local ARGV = ARGV
local rcall = redis.call

local function purge(nsset, cp, ids, ptrs, writes)
  for _, ns in ipairs(redis.call('SMEMBERS', nsset)) do
    if ids ~= '' then
      local idkey = in_ns(ids, ns)
      for _, cid in ipairs(redis.call('ZRANGE', idkey, 0, -1)) do
        redis.call('DEL', per_checkpoint(cp, ns, cid), per_checkpoint(writes, ns, cid))
      end
      redis.call('DEL', idkey)
    else
      redis.call('DEL', in_ns(cp, ns), in_ns(writes, ns))
    end
    redis.call('DEL', in_ns(ptrs, ns))
  end
  redis.call('DEL', nsset)
end

-- Every key of one view of one thread: the keys `purge` would delete (same stems), into `out`.
local function view_keys(nsset, cp, ids, ptrs, writes, out)
  out[#out + 1] = nsset
  for _, ns in ipairs(redis.call('SMEMBERS', nsset)) do
    if ids ~= '' then
      local idkey = in_ns(ids, ns)
      for _, cid in ipairs(redis.call('ZRANGE', idkey, 0, -1)) do
        out[#out + 1] = per_checkpoint(cp, ns, cid)
        out[#out + 1] = per_checkpoint(writes, ns, cid)
      end
      out[#out + 1] = idkey
    else
      out[#out + 1] = in_ns(cp, ns)
      out[#out + 1] = in_ns(writes, ns)
    end
    out[#out + 1] = in_ns(ptrs, ns)
  end
  return out
end

-- TTL of a thread (see streamsaver/checkpoints/ttl.py). Every key of the thread shares the log's
-- deadline. `stems` are ARGV from index `s`: a count, then 5 purge stems per view. When the log
-- has less than half of `ttl` ms left (or none), every key gets `ttl` again; otherwise only the
-- keys in `touched` get the log's deadline. A pinned thread (positions field @pinned) is left.
local function keep_alive(log, positions, ttl, s, touched)
  if ttl <= 0 or redis.call('HGET', positions, '@pinned') then return end
  local left = redis.call('PTTL', log)
  if left >= 0 and left >= ttl / 2 then
    local deadline = redis.call('PEXPIRETIME', log)
    for _, key in ipairs(touched) do redis.call('PEXPIREAT', key, deadline) end
    return
  end
  local keys = {log, positions}
  for v = 0, tonumber(ARGV[s]) - 1 do
    local b = s + 1 + 5 * v
    view_keys(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], keys)
  end
  for _, key in ipairs(keys) do redis.call('PEXPIRE', key, ttl) end
end

-- Most arguments of one HSET that holds several ops' writes: beyond it ops go out separately,
-- each whole (`spread` passes a long one), as before they were held together.
local HELD_MAX = 2000
-- Their arguments, reused by every apply_ops of a call: a table built up from empty is rehashed
-- at each power of two (a rehash costs about what a merged HSET saves), one made sized is not.
local hargs = {false, false, false, false, false, false, false, false, false, false, false, false}

-- Op lengths recur in every op; tonumber goes through strtod (~1,000 instructions), a table
-- lookup does not. The usual ones are filled in: a table made sized costs less than strtod.
local counts = {['1'] = 1, ['2'] = 2, ['3'] = 3, ['4'] = 4, ['5'] = 5, ['6'] = 6, ['7'] = 7, ['8'] = 8}
local function count_of(s)
  local n = tonumber(s)
  counts[s] = n
  return n
end

-- Adds the writes of hash op ARGV[i .. i + argc] (HSET pairs, SS.PTR fields, the fields an
-- SS.PTRNX finds missing) to the HSET held for key `hkey` (`hn` arguments in hargs; `hfresh`:
-- the stored hash is empty), writing what was held first when the op names another key or
-- would make it too long. Returns the new held key, count and freshness.
local function hold_hash_op(op, key, i, argc, id, hkey, hn, hfresh)
  local n = argc - 2
  if hkey ~= key or hn + 2 * n > HELD_MAX or (op == 'SS.PTRNX' and hn > 16) then
    if hkey then rcall('HSET', hkey, spread(hargs, 1, hn)) end
    hkey, hn, hfresh = key, 0, false
  end
  if op == 'HSET' then
    for k = i + 3, i + argc do
      hn = hn + 1
      hargs[hn] = ARGV[k]
    end
  elseif op == 'SS.PTR' then
    for k = i + 3, i + argc do
      hargs[hn + 1], hargs[hn + 2] = ARGV[k], id
      hn = hn + 2
    end
  else  -- SS.PTRNX: a field already held, or stored, keeps its value
    local stored = (not hfresh) and rcall('HMGET', key, unpack(ARGV, i + 3, i + argc))
    local before = hn
    for k = i + 3, i + argc do
      local f = ARGV[k]
      if not (stored and stored[k - i - 2]) then
        for h = 1, before, 2 do
          if hargs[h] == f then f = nil break end
        end
        if f then
          hargs[hn + 1], hargs[hn + 2] = f, id
          hn = hn + 2
        end
      end
    end
    if hn == 0 then hkey = nil end
  end
  return hkey, hn, hfresh
end

-- SS.FOLLOW on hash `key`: when its field `f` is missing or sorts before `newest`, the hash is
-- deleted (the caller holds `f` = `newest` for it). Returns the field's value after the op and
-- whether the hash was deleted.
local function follow(key, f, newest)
  local cur = rcall('HGET', key, f)
  if (not cur) or cur < newest then
    rcall('DEL', key)
    return newest, true
  end
  return cur, false
end

-- The store's ops (projectors/commands.py), each given the index `i` of its argument count.
-- SS.ITEM is `put_item` (_item.lua).
local STORE_OPS = {
  ['SS.ITEM'] = function(i)
    put_item(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9],
             ARGV[i + 10] == '1')
  end,
  ['SS.NSREM'] = function(i)
    local stem = ARGV[i + 3]
    if rcall('SREM', ARGV[i + 2], stem) == 1 then
      if rcall('HINCRBY', ARGV[i + 4], ARGV[i + 5], -1) <= 0 then rcall('HDEL', ARGV[i + 4], ARGV[i + 5]) end
      rcall('ZREM', ARGV[i + 6], stem)
    end
  end,
}

-- Applies `count` ops encoded in ARGV from index `i` (each op: argc, then argc arguments) for
-- the event `id`, in order. A guard (SS.IFNEWER, SS.IFEQ) gates the ops after it up to the next
-- guard; every guard is evaluated, whatever the previous one decided. Returns the index after
-- the block. A batch holds its writes instead (apply_deferred, _defer.lua).
-- Fewer redis.calls, same result as a command per op: hash writes to one key that follow each
-- other (HSET, SS.PTR, the new fields of SS.PTRNX) go out as one HSET, fields in op order;
-- SS.PTRNX of four fields or more reads them with one HMGET instead of an HSETNX each (none
-- after SS.FOLLOW emptied the hash; with fewer, HSETNXs cost less than HMGET's reply table);
-- a guard reading the field SS.FOLLOW or the previous guard just read, no op having run
-- since, reuses it. Written for few Lua instructions: each costs.
local function apply_ops(i, count, id)
  local live = true
  local hkey, hn, hfresh = nil, 0, false  -- hash writes held for one HSET on hkey (in hargs)
  local known_key, known_field, known  -- the last value a guard or SS.FOLLOW saw
  for _ = 1, count do
    local argc = counts[ARGV[i]] or count_of(ARGV[i])
    local op, key = ARGV[i + 1], ARGV[i + 2]
    if op == 'SS.IFNEWER' or op == 'SS.IFEQ' then
      local f = ARGV[i + 3]
      if known_key ~= key or known_field ~= f then
        if hkey == key then
          rcall('HSET', hkey, spread(hargs, 1, hn))
          hkey = nil
        end
        known_key, known_field, known = key, f, rcall('HGET', key, f)
      end
      if op == 'SS.IFEQ' then live = known == ARGV[i + 4] else live = (not known) or known < ARGV[i + 4] end
    elseif live then
      known_key = nil
      local n = argc - 2  -- fields (SS.PTR, SS.PTRNX) or field/value arguments (HSET)
      if op == 'SS.PTR' or (op == 'HSET' and n % 2 == 0 and n > 0)
          or (op == 'SS.PTRNX' and n > 3 and 2 * n <= HELD_MAX) then
        hkey, hn, hfresh = hold_hash_op(op, key, i, argc, id, hkey, hn, hfresh)
      else
        if hkey then
          rcall('HSET', hkey, spread(hargs, 1, hn))
          hkey = nil
        end
        if op == 'SS.PTRNX' then
          for k = i + 3, i + argc do rcall('HSETNX', key, ARGV[k], id) end
        elseif op == 'SS.FOLLOW' then
          local f, emptied = ARGV[i + 3], false
          known, emptied = follow(key, f, ARGV[i + 4])
          known_key, known_field = key, f
          if emptied then hkey, hn, hfresh, hargs[1], hargs[2] = key, 2, true, f, known end
        elseif op == 'SS.PURGE' then
          purge(key, ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
        elseif STORE_OPS[op] then
          STORE_OPS[op](i)
        else
          rcall(spread(ARGV, i + 1, i + argc))
        end
      end
    end
    i = i + 1 + argc
  end
  if hkey then rcall('HSET', hkey, spread(hargs, 1, hn)) end
  return i
end

-- The id of the entry of `log` that hash `probe` names in `field` (when `cid` is not "", only
-- if the hash's '@cid' is `cid`), provided its fields equal ARGV[first .. first + n - 1] in
-- order; false otherwise. Lets an append recognise an event it already logged.
local function logged_entry(log, probe, field, cid, first, n)
  local entry
  if cid == '' then
    entry = redis.call('HGET', probe, field)  -- a bulk reply: no table made, as for HMGET's
  else
    local held = redis.call('HMGET', probe, field, '@cid')
    entry = held[2] == cid and held[1]
  end
  if not entry then return false end
  local found = redis.call('XRANGE', log, entry, entry)[1]
  if not found or #found[2] ~= n then return false end
  local kv = found[2]
  for k = 1, n do
    if kv[k] ~= ARGV[first + k - 1] then return false end
  end
  return entry
end

-- The type each op needs its key to hold (an op not named here takes a key of any type).
local OP_TYPE = {
  HSET = 'hash', ['SS.PTR'] = 'hash', ['SS.PTRNX'] = 'hash', ['SS.FOLLOW'] = 'hash',
  ['SS.IFNEWER'] = 'hash', ['SS.IFEQ'] = 'hash', ['SS.PURGE'] = 'set',
  SADD = 'set', SREM = 'set', ZADD = 'zset', ['JSON.SET'] = 'ReJSON-RL',
  ['SS.ITEM'] = 'ReJSON-RL', ['SS.NSREM'] = 'set',
}
-- The ops that write more keys than their first: each one's argument offset and type.
local OP_MORE_KEYS = {
  ['SS.ITEM'] = {{5, 'set'}, {7, 'hash'}, {9, 'zset'}}, ['SS.NSREM'] = {{4, 'hash'}, {6, 'zset'}},
}

-- Adds the keys the op at ARGV[j] (its argument count) writes to `out`.
local function add_op_keys(out, j)
  out[#out + 1] = ARGV[j + 2]
  local more = OP_MORE_KEYS[ARGV[j + 1]]
  if more then
    for _, at in ipairs(more) do out[#out + 1] = ARGV[j + at[1]] end
  end
end

-- An error naming the first key the `nv` view blocks from ARGV[i] would write that holds
-- another type than its op needs, else nil and the index after the blocks: run before an
-- append's first write, so a damaged key refuses the whole call (the log entry too). Each key
-- is probed once.
local function check_view_keys(i, nv)
  local seen = {}
  for _ = 1, nv do
    local j = i + 2
    for _ = 1, counts[ARGV[i + 1]] or count_of(ARGV[i + 1]) do
      local needed, key = OP_TYPE[ARGV[j + 1]], ARGV[j + 2]
      if needed and not seen[key] then
        seen[key] = true
        local err = expect_type(key, needed)
        if err then return err end
      end
      for _, more in ipairs(OP_MORE_KEYS[ARGV[j + 1]] or OP_MORE_KEYS) do  -- OP_MORE_KEYS: no array part
        local err = expect_type(ARGV[j + more[1]], more[2])
        if err then return err end
      end
      j = j + 1 + (counts[ARGV[j]] or count_of(ARGV[j]))
    end
    i = j
  end
  return nil, i
end
