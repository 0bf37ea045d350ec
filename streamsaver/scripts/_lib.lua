-- Shared prelude, prepended to every streamsaver script (after its shebang line).
-- Holds the op interpreter for projector commands (see projectors/commands.py), the key
-- escaping rule of streamsaver/codec.py `escape`, and the pointer rules of
-- projectors/documents.py (views point at the log entries that hold payloads).

-- Locals, not globals, in the op interpreter's loops: a global is a table lookup per use.
local ARGV = ARGV
local rcall = redis.call

local function esc(s)
  return (string.gsub(s, '[^%w%._%-]', function(c) return string.format('%%%02X', string.byte(c)) end))
end

local function purge(nsset, cp, ids, ptrs, writes)
  for _, ns in ipairs(redis.call('SMEMBERS', nsset)) do
    if ids ~= '' then
      local idkey = ids .. ':' .. ns
      for _, cid in ipairs(redis.call('ZRANGE', idkey, 0, -1)) do
        redis.call('DEL', cp .. ':' .. ns .. ':' .. esc(cid), writes .. ':' .. ns .. ':' .. esc(cid))
      end
      redis.call('DEL', idkey)
    else
      redis.call('DEL', cp .. ':' .. ns, writes .. ':' .. ns)
    end
    redis.call('DEL', ptrs .. ':' .. ns)
  end
  redis.call('DEL', nsset)
end

-- Every key of one view of one thread: the keys `purge` would delete (same stems), into `out`.
local function view_keys(nsset, cp, ids, ptrs, writes, out)
  out[#out + 1] = nsset
  for _, ns in ipairs(redis.call('SMEMBERS', nsset)) do
    if ids ~= '' then
      local idkey = ids .. ':' .. ns
      for _, cid in ipairs(redis.call('ZRANGE', idkey, 0, -1)) do
        out[#out + 1] = cp .. ':' .. ns .. ':' .. esc(cid)
        out[#out + 1] = writes .. ':' .. ns .. ':' .. esc(cid)
      end
      out[#out + 1] = idkey
    else
      out[#out + 1] = cp .. ':' .. ns
      out[#out + 1] = writes .. ':' .. ns
    end
    out[#out + 1] = ptrs .. ':' .. ns
  end
  return out
end

-- TTL of a thread (see streamsaver/saver/ttl.py). Every key of the thread shares the log's
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

-- A deferral of root JSON.SETs (batches only): key -> document, flushed in first-seen order.
local function new_deferral()
  return {docs = {}, keys = {}}
end

local function flush_deferred(defer)
  for _, key in ipairs(defer.keys) do
    rcall('JSON.SET', key, '$', defer.docs[key])
  end
  defer.docs, defer.keys = {}, {}
end

-- Whether an op (ARGV i .. i + argc) names a key whose JSON.SET is deferred.
local function touches_deferred(defer, i, argc)
  for k = i + 2, i + argc do
    if defer.docs[ARGV[k]] then return true end
  end
  return false
end

-- Applies `count` ops encoded in ARGV from index `i` (each op: argc, then argc arguments) for
-- the event `id`. A guard (SS.IFNEWER, SS.IFEQ) gates the ops after it up to the next guard;
-- every guard is evaluated, whatever the previous one decided. Returns the index after the block.
-- With `defer`, a root JSON.SET is held back and only the last document per key is written;
-- any other op that names a held key, and every SS.PURGE, first writes what is held, so the
-- result equals running each op in order (nothing else in a script reads a held document).
local function apply_ops(i, count, id, defer)
  local live = true
  for _ = 1, count do
    local argc = tonumber(ARGV[i])
    local op = ARGV[i + 1]
    if defer and op ~= 'JSON.SET' and (op == 'SS.PURGE' or touches_deferred(defer, i, argc)) then
      flush_deferred(defer)
    end
    if op == 'SS.IFNEWER' then
      local cur = rcall('HGET', ARGV[i + 2], ARGV[i + 3])
      live = (not cur) or cur < ARGV[i + 4]
    elseif op == 'SS.IFEQ' then
      live = rcall('HGET', ARGV[i + 2], ARGV[i + 3]) == ARGV[i + 4]
    elseif live then
      if op == 'SS.PTR' then
        local cmd = {'HSET', ARGV[i + 2]}
        for k = i + 3, i + argc do
          cmd[#cmd + 1] = ARGV[k]
          cmd[#cmd + 1] = id
        end
        rcall(unpack(cmd))
      elseif op == 'SS.PTRNX' then
        rcall('HSETNX', ARGV[i + 2], ARGV[i + 3], id)
      elseif op == 'SS.PURGE' then
        purge(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
      elseif defer and op == 'JSON.SET' and argc == 4 and ARGV[i + 3] == '$' then
        local key = ARGV[i + 2]
        if not defer.docs[key] then defer.keys[#defer.keys + 1] = key end
        defer.docs[key] = ARGV[i + 4]
      else
        if defer and op == 'JSON.SET' and touches_deferred(defer, i, argc) then flush_deferred(defer) end
        rcall(unpack(ARGV, i + 1, i + argc))
      end
    end
    i = i + 1 + argc
  end
  return i
end

local function expect_type(key, allowed)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= allowed then
    return redis.error_reply('WRONGTYPE streamsaver key ' .. key .. ' holds a ' .. t .. ', not a ' .. allowed)
  end
end

-- The id of the entry of `log` that hash `probe` names in `field` (when `cid` is not "", only
-- if the hash's '@cid' is `cid`), provided its fields equal ARGV[first .. first + n - 1] in
-- order; false otherwise. Lets an append recognise an event it already logged.
local function logged_entry(log, probe, field, cid, first, n)
  local held = redis.call('HMGET', probe, field, '@cid')
  if not held[1] or (cid ~= '' and held[2] ~= cid) then return false end
  local found = redis.call('XRANGE', log, held[1], held[1])[1]
  if not found or #found[2] ~= n then return false end
  local kv = found[2]
  for k = 1, n do
    if kv[k] ~= ARGV[first + k - 1] then return false end
  end
  return held[1]
end

-- A reader of log entry fields: read(id, field) -> value or false. Each entry is read once.
local function log_reader(log)
  local cache = {}
  return function(id, field)
    local entry = cache[id]
    if entry == nil then
      entry = {}
      local found = redis.call('XRANGE', log, id, id)
      if found[1] then
        local kv = found[1][2]
        for k = 1, #kv, 2 do entry[kv[k]] = kv[k + 1] end
      end
      cache[id] = entry
    end
    return entry[field] or false
  end
end

-- The log entry field a pointer-hash ref names: '@body...' -> 'body', 'ch[:version]' -> 'c:ch'.
local function ref_field(ref)
  if string.sub(ref, 1, 5) == '@body' then return 'body' end
  local colon = string.find(ref, ':', 1, true)
  if colon then return 'c:' .. string.sub(ref, 1, colon - 1) end
  return 'c:' .. ref
end

-- The payloads a document's refs point at, in refs order (false where missing), and the ids
-- of the log entries they come from (so a reader can name an entry it cannot decode).
local function resolve_refs(read, ptrs, refs)
  local values, ids = {}, {}
  if #refs == 0 then return values, ids end
  local found = redis.call('HMGET', ptrs, unpack(refs))
  for k, ref in ipairs(refs) do
    ids[k] = found[k] or ''
    values[k] = (found[k] and read(found[k], ref_field(ref))) or false
  end
  return values, ids
end

-- The writes a writes hash points at: flat {field, task id, task path, write, entry id, ...}.
local function resolve_writes(read, key)
  local out = {}
  local flat = redis.call('HGETALL', key)
  for k = 1, #flat, 2 do
    local field, id = flat[k], flat[k + 1]
    if field ~= '@cid' then
      local write = read(id, 'w:' .. string.match(field, ':(%-?%d+)$'))
      if write then
        out[#out + 1] = field
        out[#out + 1] = read(id, 'task')
        out[#out + 1] = read(id, 'path')
        out[#out + 1] = write
        out[#out + 1] = id
      end
    end
  end
  return out
end

-- Reads one checkpoint of the full view: {document, payloads of its refs, writes, entry ids
-- of the payloads} or false.
local function read_full_checkpoint(read, cp_prefix, ptrs, writes_prefix, cid)
  local doc = redis.call('JSON.GET', cp_prefix .. esc(cid))
  if not doc then return false end
  local values, ids = resolve_refs(read, ptrs, cjson.decode(doc)['refs'])
  return {doc, values, resolve_writes(read, writes_prefix .. esc(cid)), ids}
end
