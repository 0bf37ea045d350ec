-- The batch side's prelude, spliced after `_lib.lua` into apply.lua: a batch of several events
-- holds its writes in Lua and writes each key once, with the same final content as apply_ops
-- running each event's ops in order.

-- A batch's deferral (apply.lua, several events): what the batch writes is held in Lua and
-- written once at the end (or earlier, see below), with the same final content as running each
-- op in order: root JSON.SETs (the last document per key), and hashes, sets and sorted sets
-- (one HSET, SADD, ZADD per key). A hash field set "if new" (SS.PTRNX) on a key whose stored
-- fields are unknown is resolved with one HMGET when written; guards read through the held
-- state. New hash fields are written in the order they were first set, as in order.
local function new_deferral()
  return {docs = {}, keys = {}, held = {}, heldkeys = {}}
end

-- Arguments per HSET/HMGET/SADD/ZADD sent at flush (Lua's unpack has a stack limit).
local CHUNK = 1000

local function call_chunked(head, key, args)
  for first = 1, #args, CHUNK do
    rcall(head, key, unpack(args, first, math.min(first + CHUNK - 1, #args)))
  end
end

-- A held hash: `val[f]` the field's value as the ops in order would leave it (false: missing,
-- nil: not known), `st[f]` what the flush does with it (WRITE; PENDING: `val[f]` is an "if new"
-- value, written only if the stored hash lacks the field; KEEP: nothing), `order` the fields
-- in the order they were first set, `cleared` whether the stored hash was deleted first.
local WRITE, PENDING, KEEP = 1, 2, 3

local function flush_hash(key, h)
  if h.cleared then rcall('DEL', key) end
  local order, st, val = h.order, h.st, h.val
  local pending = {}
  for _, f in ipairs(order) do
    if st[f] == PENDING then pending[#pending + 1] = f end
  end
  for first = 1, #pending, CHUNK do
    local last = math.min(first + CHUNK - 1, #pending)
    local got = rcall('HMGET', key, unpack(pending, first, last))
    for k = first, last do
      st[pending[k]] = got[k - first + 1] and KEEP or WRITE
    end
  end
  local args = {}
  for _, f in ipairs(order) do
    if st[f] == WRITE then
      args[#args + 1] = f
      args[#args + 1] = val[f]
    end
  end
  call_chunked('HSET', key, args)
end

local function flush_deferred(defer)
  for _, key in ipairs(defer.keys) do
    rcall('JSON.SET', key, '$', defer.docs[key])
  end
  for _, key in ipairs(defer.heldkeys) do
    local held = defer.held[key]
    if held.kind == 'hash' then flush_hash(key, held)
    elseif held.kind == 'set' then call_chunked('SADD', key, held.members)
    else call_chunked('ZADD', key, held.pairs) end
  end
  defer.docs, defer.keys, defer.held, defer.heldkeys = {}, {}, {}, {}
end

-- The held state of `key` as `kind` ('hash', 'set', 'zset'), created empty; nil when the key
-- is held as another kind or as a document (the caller writes everything held and runs the op).
local function held_as(defer, key, kind)
  local held = defer.held[key]
  if held == nil then
    if defer.docs[key] then return nil end
    if kind == 'hash' then
      held = {kind = kind, val = {}, st = {}, order = {}, cleared = false}
    elseif kind == 'set' then
      held = {kind = kind, members = {}, seen = {}}
    else
      held = {kind = kind, pairs = {}}
    end
    defer.held[key] = held
    defer.heldkeys[#defer.heldkeys + 1] = key
  elseif held.kind ~= kind then
    return nil
  end
  return held
end

local function hash_set(h, f, v)
  if h.st[f] == nil then h.order[#h.order + 1] = f end
  h.val[f], h.st[f] = v, WRITE
end

-- The value of field `f` of held hash `h` (key `key`) as running the ops in order would leave
-- it (false when missing); reads the stored field at most once.
local function hash_get(key, h, f)
  local s = h.st[f]
  if s == PENDING then
    local stored = rcall('HGET', key, f)
    if stored then
      h.val[f], h.st[f] = stored, KEEP
    else
      h.st[f] = WRITE
    end
    return h.val[f]
  end
  local v = h.val[f]
  if v ~= nil then return v end
  if h.cleared then return false end
  v = rcall('HGET', key, f)
  h.val[f] = v
  return v
end

-- Whether an op (ARGV i .. i + argc) names a key whose writes are held.
local function touches_deferred(defer, i, argc)
  for k = i + 2, i + argc do
    if defer.docs[ARGV[k]] or defer.held[ARGV[k]] then return true end
  end
  return false
end

-- Holds a field write (SS.PTRNX, SS.PTR, or HSET: op ARGV i .. i + argc) on held hash `h`.
local function hold_fields(h, i, argc, op, id)
  local val, st, order = h.val, h.st, h.order  -- loops inlined: a Lua call per field costs more
  if op == 'SS.PTRNX' then
    local unknown = h.cleared and WRITE or PENDING
    for k = i + 3, i + argc do
      local f = ARGV[k]
      local cur = val[f]
      if st[f] == nil and not cur then  -- set or pending already: the first value stands
        order[#order + 1] = f
        val[f], st[f] = id, (cur == false) and WRITE or unknown
      end
    end
  elseif op == 'SS.PTR' then
    for k = i + 3, i + argc do
      local f = ARGV[k]
      if st[f] == nil then order[#order + 1] = f end
      val[f], st[f] = id, WRITE
    end
  else
    for k = i + 3, i + argc, 2 do
      local f = ARGV[k]
      if st[f] == nil then order[#order + 1] = f end
      val[f], st[f] = ARGV[k + 1], WRITE
    end
  end
end

-- Holds an SADD (op ARGV i .. i + argc) on held set `s`, each member once.
local function hold_members(s, i, argc)
  for k = i + 3, i + argc do
    local m = ARGV[k]
    if not s.seen[m] then
      s.seen[m] = true
      s.members[#s.members + 1] = m
    end
  end
end

-- Holds op ARGV i .. i + argc (live: not gated off by a guard) when it is one the deferral
-- holds; returns false (holding nothing) otherwise.
local function hold(defer, i, argc, op, id)
  local key = ARGV[i + 2]
  if op == 'SS.PTRNX' or op == 'SS.PTR' or (op == 'HSET' and argc % 2 == 0) then
    local h = held_as(defer, key, 'hash')
    if not h then return false end
    hold_fields(h, i, argc, op, id)
  elseif op == 'DEL' and argc == 2 then
    local h = held_as(defer, key, 'hash')
    if not h then return false end
    h.val, h.st, h.order, h.cleared = {}, {}, {}, true
  elseif op == 'SS.FOLLOW' then
    local h = held_as(defer, key, 'hash')
    if not h then return false end
    local cur, newest = hash_get(key, h, ARGV[i + 3]), ARGV[i + 4]
    if (not cur) or cur < newest then
      h.val, h.st, h.order, h.cleared = {}, {}, {}, true
      hash_set(h, ARGV[i + 3], newest)
    end
  elseif op == 'SADD' and argc >= 3 then
    local s = held_as(defer, key, 'set')
    if not s then return false end
    hold_members(s, i, argc)
  elseif op == 'ZADD' and argc == 4 and tonumber(ARGV[i + 3]) then
    local z = held_as(defer, key, 'zset')
    if not z then return false end
    z.pairs[#z.pairs + 1] = ARGV[i + 3]
    z.pairs[#z.pairs + 1] = ARGV[i + 4]
  elseif op == 'JSON.SET' and argc == 4 and ARGV[i + 3] == '$' and not defer.held[key] then
    if not defer.docs[key] then defer.keys[#defer.keys + 1] = key end
    defer.docs[key] = ARGV[i + 4]
  else
    return false
  end
  return true
end

-- A guard's read of hash field ARGV[i + 3] of key ARGV[i + 2], through the deferral if any.
local function guard_read(defer, i)
  if defer then
    local h = held_as(defer, ARGV[i + 2], 'hash')
    if h then return hash_get(ARGV[i + 2], h, ARGV[i + 3]) end
    flush_deferred(defer)
  end
  return rcall('HGET', ARGV[i + 2], ARGV[i + 3])
end

-- apply_ops (see _lib.lua) with writes held in `defer` (see new_deferral); an op the deferral
-- does not hold runs as apply_ops runs it, after everything held is written when the op names a
-- held key or is a SS.PURGE, so the result equals running each op in order.
local function apply_deferred(i, count, id, defer)
  local live = true
  for _ = 1, count do
    local argc = counts[ARGV[i]] or count_of(ARGV[i])
    local op = ARGV[i + 1]
    if op == 'SS.IFNEWER' then
      local cur = guard_read(defer, i)
      live = (not cur) or cur < ARGV[i + 4]
    elseif op == 'SS.IFEQ' then
      live = guard_read(defer, i) == ARGV[i + 4]
    elseif live and not hold(defer, i, argc, op, id) then
      if op == 'SS.PURGE' or touches_deferred(defer, i, argc) then flush_deferred(defer) end
      apply_ops(i, 1, id)
    end
    i = i + 1 + argc
  end
  return i
end
