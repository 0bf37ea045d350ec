-- The read side's prelude, spliced after `_esc.lua` into the read scripts: the pointer rules of
-- projectors/documents.py (views point at the log entries that hold payloads).

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
-- of the payloads} or false. The refs are asked of RedisJSON on their own: decoding them alone
-- in Lua is cheaper than decoding the whole document (~2.4 us a checkpoint of ~1 KB).
local function read_full_checkpoint(read, cp_prefix, ptrs, writes_prefix, cid)
  local key = cp_prefix .. esc(cid)
  local doc = redis.call('JSON.GET', key)
  if not doc then return false end
  local values, ids = resolve_refs(read, ptrs, cjson.decode(redis.call('JSON.GET', key, 'refs')))
  return {doc, values, resolve_writes(read, writes_prefix .. esc(cid)), ids}
end

-- Reads the checkpoint a shallow view's document holds: {document, payloads of its refs,
-- writes, entry ids of the payloads}, or false when there is none or it is not `wanted` (an id,
-- or '' for whatever is held). The writes hash may already belong to a newer checkpoint (its
-- writes were saved first); then the checkpoint held has no writes to show.
local function read_shallow_checkpoint(read, doc_key, ptrs, writes_key, wanted)
  local doc = redis.call('JSON.GET', doc_key)
  if not doc then return false end
  -- decoded whole: asking RedisJSON for the id and the refs (one call or two) measured slower
  local decoded = cjson.decode(doc)
  local held = decoded['checkpoint_id']
  if wanted ~= '' and held ~= wanted then return false end
  local writes = {}
  if redis.call('HGET', writes_key, '@cid') == held then writes = resolve_writes(read, writes_key) end
  local values, ids = resolve_refs(read, ptrs, decoded['refs'])
  return {doc, values, writes, ids}
end
