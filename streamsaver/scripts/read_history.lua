#!lua flags=no-writes
-- read_history: the ancestor walk of get_delta_channel_history on the full view, in one round trip.
-- KEYS[1] ids (zset), KEYS[2] pointers (hash), KEYS[3] thread log (stream)
-- ARGV[1] document key stem, ARGV[2] writes key stem (the escaped checkpoint id is appended)
-- ARGV[3] the checkpoint to start from ("" for the latest); ARGV[4..] the channels walked for
-- Returns: one row per ancestor visited, parent first: {document JSON, flat {channel, payload,
--          entry id} of the walked channels whose value is stored there, flat {field, task, path,
--          write, entry id}, delta links of the seeds: flat {entry id, field, payload}} (entry ids
--          name the log entries, for a reader that cannot decode one).
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

local read = log_reader(KEYS[3])
local cid = ARGV[3]
if cid == '' then
  cid = redis.call('ZRANGE', KEYS[1], '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, 1)[1]
  if not cid then return {} end
end
local doc = redis.call('JSON.GET', ARGV[1] .. esc(cid))
if not doc then return {} end
local parent = cjson.decode(doc)['parent_checkpoint_id']
local remaining, left = {}, 0
for k = 4, #ARGV do
  if not remaining[ARGV[k]] then left = left + 1 end
  remaining[ARGV[k]] = true
end
local out = {}
while type(parent) == 'string' and left > 0 do
  doc = redis.call('JSON.GET', ARGV[1] .. esc(parent))
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
          -- A payload too damaged to parse counts as a value: the reader names its entry.
          local parsed, kind = pcall(value_type, payload or '')
          if payload and not (parsed and kind == 'empty') then
            seeds[#seeds + 1] = name
            seeds[#seeds + 1] = payload
            seeds[#seeds + 1] = id
            follow_links(read, 'c:' .. channel, payload, chain)
            remaining[name] = nil
            left = left - 1
          end
        end
      end
    end
  end
  out[#out + 1] = {doc, seeds, resolve_writes(read, ARGV[2] .. esc(parent)), chain}
  parent = decoded['parent_checkpoint_id']
end
return out
