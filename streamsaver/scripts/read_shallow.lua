#!lua flags=no-writes
-- read_shallow: the latest checkpoint of one (thread, namespace) from the shallow view.
-- KEYS[1] document (JSON), KEYS[2] pointers (hash), KEYS[3] writes (hash), KEYS[4] thread log
-- ARGV[1] checkpoint id the caller asks for, or "" for whatever is latest
-- Returns: {} or {{document JSON, payloads in `refs` order, flat {field, task, path, write,
--          entry id}, entry ids of the payloads, delta links: flat {entry id, field, payload}}}.
-- The writes hash may already belong to a newer checkpoint (its writes were saved first); then
-- the checkpoint held has no writes to show.
local doc = redis.call('JSON.GET', KEYS[1])
if not doc then return {} end
local decoded = cjson.decode(doc)
local held = decoded['checkpoint_id']
if ARGV[1] ~= '' and held ~= ARGV[1] then return {} end
local read = log_reader(KEYS[4])
local writes = {}
if redis.call('HGET', KEYS[3], '@cid') == held then writes = resolve_writes(read, KEYS[3]) end
local values, ids, chain = resolve_refs(read, KEYS[2], decoded['refs'])
return {{doc, values, writes, ids, chain}}
