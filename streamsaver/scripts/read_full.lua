#!lua flags=no-writes
-- read_full: checkpoints of one (thread, namespace) from the full view, in one round trip.
-- KEYS[1] ids (zset), KEYS[2] pointers (hash), KEYS[3] thread log (stream)
-- ARGV[1] document key stem, ARGV[2] writes key stem (the escaped checkpoint id is appended)
-- ARGV[3] mode: "id" (the checkpoint ARGV[4]) or "page" (newest first, ids before ARGV[4]
--         when not empty, at most ARGV[5])
-- Returns: a list of {document JSON, payloads in `refs` order, flat {field, task, path, write,
--          entry id}, entry ids of the payloads, delta links: flat {entry id, field, payload}}.
local read = log_reader(KEYS[3])
local out = {}
if ARGV[3] == 'id' then
  local one = read_full_checkpoint(read, ARGV[1], KEYS[2], ARGV[2], ARGV[4])
  if one then out[1] = one end
  return out
end
local upper = '+'
if ARGV[4] ~= '' then upper = '(' .. ARGV[4] end
local ids = redis.call('ZRANGE', KEYS[1], upper, '-', 'BYLEX', 'REV', 'LIMIT', 0, tonumber(ARGV[5]))
for _, cid in ipairs(ids) do
  local one = read_full_checkpoint(read, ARGV[1], KEYS[2], ARGV[2], cid)
  if one then out[#out + 1] = one end
end
return out
