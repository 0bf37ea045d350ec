-- The read side's prelude, spliced after `_esc.lua` into the read scripts: the pointer rules of
-- projectors/documents.py (views point at the log entries that hold payloads).

-- A reader of log entry fields: read(id, field) -> value or false. Each entry is read once.
-- links_sent[read] holds the delta links already returned in this call (see follow_links).
-- With `held` (read_cached.lua: the entry ids the client holds, as a set), an entry it holds is
-- not read: read returns 1 (the client takes the field from its copy); every entry read from
-- the log is added to shipped[read] as flat {entry id, flat {field, value}}.
local links_sent, shipped = {}, {}
local function log_reader(log, held)
  local cache, sent = {}, {}
  local read = function(id, field)
    if held and held[id] then return 1 end
    local entry = cache[id]
    if entry == nil then
      entry = {}
      local found = redis.call('XRANGE', log, id, id)
      if found[1] then
        local kv = found[1][2]
        for k = 1, #kv, 2 do entry[kv[k]] = kv[k + 1] end
        if held then sent[#sent + 1], sent[#sent + 2] = id, kv end
      end
      cache[id] = entry
    end
    return entry[field] or false
  end
  links_sent[read], shipped[read] = {}, sent
  return read
end

-- The log entry field a pointer-hash ref names: '@body...' -> 'body', 'ch[:version]' -> 'c:ch'.
local function ref_field(ref)
  if string.sub(ref, 1, 5) == '@body' then return 'body' end
  local colon = string.find(ref, ':', 1, true)
  if colon then return 'c:' .. string.sub(ref, 1, colon - 1) end
  return 'c:' .. ref
end

-- Adds to `chain` what the delta `payload` (stored in log field `field`) extends: flat {entry
-- id, field, payload} for each link followed, at most 64: one for a delta linked to its base
-- (streamsaver/checkpoints/delta_plan.py), up to 7 for one an older writer linked to the version before.
-- A link already returned in this call from the same log is not returned again (nor what it
-- extends): the client joins with the links of every earlier row of the same thread.
local function follow_links(read, field, payload, chain)
  if type(payload) ~= 'string' then return end  -- held by the client, with what it links to
  local sent = links_sent[read]
  local link = delta_link(payload)
  local hops = 0
  while link and hops < 64 do
    local key = link .. ' ' .. field
    if sent[key] then return end
    sent[key] = true
    local held = read(link, field)
    if type(held) ~= 'string' then return end
    chain[#chain + 1] = link
    chain[#chain + 1] = field
    chain[#chain + 1] = held
    link = delta_link(held)
    hops = hops + 1
  end
end

-- The payloads a document's refs point at, in refs order (false where missing), the ids of the
-- log entries they come from (so a reader can name an entry it cannot decode), and the links
-- of those that are deltas (see follow_links).
local function resolve_refs(read, ptrs, refs)
  local values, ids, chain = {}, {}, {}
  if #refs == 0 then return values, ids, chain end
  local found = redis.call('HMGET', ptrs, spread(refs, 1, #refs))
  for k, ref in ipairs(refs) do
    ids[k] = found[k] or ''
    local field = ref_field(ref)
    local value = (found[k] and read(found[k], field)) or false
    values[k] = value
    if value then follow_links(read, field, value, chain) end
  end
  return values, ids, chain
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
-- of the payloads, delta links} or false. The refs are asked of RedisJSON on their own:
-- decoding them alone in Lua is cheaper than decoding the whole document (~2.4 us a checkpoint
-- of ~1 KB).
local function read_full_checkpoint(read, cp_prefix, ptrs, writes_prefix, cid)
  local key = cp_prefix .. esc(cid)
  local doc = redis.call('JSON.GET', key)
  if not doc then return false end
  local values, ids, chain = resolve_refs(read, ptrs, cjson.decode(redis.call('JSON.GET', key, 'refs')))
  return {doc, values, resolve_writes(read, writes_prefix .. esc(cid)), ids, chain}
end

-- Reads the checkpoint a shallow view's document holds: {document, payloads of its refs,
-- writes, entry ids of the payloads, delta links}, or false when there is none or it is not `wanted` (an id,
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
  local values, ids, chain = resolve_refs(read, ptrs, decoded['refs'])
  return {doc, values, writes, ids, chain}
end
