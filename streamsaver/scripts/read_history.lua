#!lua flags=no-writes
-- read_history: the ancestor walk of get_delta_channel_history on the full view, in one round trip.
-- KEYS[1] ids (zset), KEYS[2] pointers (hash), KEYS[3] thread log (stream); KEYS[4] (optional)
--         positions (hash): the client holds some of the thread's log entries (read_cached.lua),
--         named first in ARGV: the incarnation they belong to, n, n entry ids (with every entry a
--         held delta links to), m, and m "<entry id> <field>" of held channel values of serde
--         type "empty" (the walk reads no held entry: it must know which values are none)
-- ARGV (after those) document key stem, writes key stem (the escaped checkpoint id is appended),
--      the checkpoint to start from ("" for the latest), then the channels walked for
-- Returns: one row per ancestor visited, parent first: {document JSON, flat {channel, payload,
--          entry id} of the walked channels whose value is stored there, flat {field, task, path,
--          write, entry id}, delta links of the seeds: flat {entry id, field, payload}} (entry ids
--          name the log entries, for a reader that cannot decode one). With KEYS[4]: {incarnation,
--          shipped entries, rows...} as read_cached.lua returns them: every payload, task and path
--          a 1 (take it from the entry named beside it), no delta links.
-- Like the base class walk, it follows parent_checkpoint_id and stops for a channel at the
-- first ancestor holding a value for it (a stored payload that is not of serde type "empty").
local function value_type(payload)
  local size, pos = struct.unpack('>I4', payload, 1)
  pos = pos + size
  size, pos = struct.unpack('>I4', payload, pos)
  pos = pos + size
  size, pos = struct.unpack('>I4', payload, pos)
  return string.sub(payload, pos, pos + size - 1)
end

local read, out, at, empty = nil, {}, 0, {}
if KEYS[4] then
  local incarnation = redis.call('HGET', KEYS[4], '@inc') or ''
  local n = tonumber(ARGV[2])
  local m = tonumber(ARGV[3 + n])
  local held = {}
  if incarnation ~= '' and incarnation == ARGV[1] then
    for k = 3, 2 + n do held[ARGV[k]] = true end
    for k = 4 + n, 3 + n + m do empty[ARGV[k]] = true end
  end
  read, at = log_reader(KEYS[3], held), 3 + n + m
  out = {incarnation, shipped[read]}
else
  read = log_reader(KEYS[3])
end
local stem, writes_stem = ARGV[at + 1], ARGV[at + 2]
local cid = ARGV[at + 3]
if cid == '' then
  cid = redis.call('ZRANGE', KEYS[1], '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, 1)[1]
  if not cid then return out end
end
local doc = redis.call('JSON.GET', stem .. esc(cid))
if not doc then return out end
local parent = cjson.decode(doc)['parent_checkpoint_id']
local remaining, left = {}, 0
for k = at + 4, #ARGV do
  if not remaining[ARGV[k]] then left = left + 1 end
  remaining[ARGV[k]] = true
end

-- Whether `payload` (of field `field` in entry `id`; 1: held by the client) is a value.
local function is_value(id, field, payload)
  if payload == 1 then return not empty[id .. ' ' .. field] end
  -- A payload too damaged to parse counts as a value: the reader names its entry.
  local parsed, kind = pcall(value_type, payload or '')
  return payload and not (parsed and kind == 'empty')
end

while type(parent) == 'string' and left > 0 do
  doc = redis.call('JSON.GET', stem .. esc(parent))
  if not doc then break end
  local decoded = cjson.decode(doc)
  local seeds, chain = {}, {}
  for _, ref in ipairs(decoded['refs']) do
    local colon = string.find(ref, ':', 1, true)
    if colon and string.sub(ref, 1, 1) ~= '@' then
      local channel = string.sub(ref, 1, colon - 1)
      for name in pairs(remaining) do
        if esc(name) == channel then
          local id = redis.call('HGET', KEYS[2], ref)
          local payload = id and read(id, 'c:' .. channel)
          if is_value(id, 'c:' .. channel, payload) then
            seeds[#seeds + 1] = name
            seeds[#seeds + 1] = KEYS[4] and 1 or payload
            seeds[#seeds + 1] = id
            follow_links(read, 'c:' .. channel, payload, chain)
            remaining[name] = nil
            left = left - 1
          end
        end
      end
    end
  end
  local writes = resolve_writes(read, writes_stem .. esc(parent))
  if KEYS[4] then
    for k = 2, #writes, 5 do writes[k], writes[k + 1], writes[k + 2] = 1, 1, 1 end
    chain = {}
  end
  out[#out + 1] = {doc, seeds, writes, chain}
  parent = decoded['parent_checkpoint_id']
end
return out
