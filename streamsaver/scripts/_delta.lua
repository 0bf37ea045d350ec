-- Prelude of the scripts that meet append-only list deltas (streamsaver/log/deltas.py): append
-- checks a delta's link (the base: the last full value), the readers follow links. A stored channel value is a packing of
-- {channel, version, type, data} (4-byte big-endian length before each part); a delta's type
-- starts with 'delta:' and its data packs {link entry id, link version, link field size,
-- element count, elements}.

-- The part of packing `s` after `skip` parts (pos: where it starts), or nil when `s` is too
-- short: a damaged payload is not the script's to report (the client names its entry).
local function packed_part(s, pos, skip)
  local len = #s
  for _ = 1, skip do
    if pos + 3 > len then return nil end
    pos = pos + 4 + struct.unpack('>I4', s, pos)
  end
  if pos + 3 > len then return nil end
  local n = struct.unpack('>I4', s, pos)
  if pos + 3 + n > len then return nil end
  return string.sub(s, pos + 4, pos + 3 + n), pos + 4 + n
end

-- The link of a stored channel value: entry id, version (JSON) and field size of the value it
-- extends; nil when it is not a delta.
local function delta_link(payload)
  local kind, pos = packed_part(payload, 1, 2)
  if not kind or string.sub(kind, 1, 6) ~= 'delta:' then return nil end
  local link, at = packed_part(payload, pos + 4, 0)  -- inside the data part
  if not link then return nil end
  local version, at2 = packed_part(payload, at, 0)
  if not version then return nil end
  local size = packed_part(payload, at2, 0)
  return link, version, size
end

-- The version (JSON) of a stored channel value, or nil.
local function stored_version(payload)
  return (packed_part(payload, 1, 1))
end
