#!lua flags=no-writes
-- read_shallow: the latest checkpoint of one (thread, namespace) from the shallow view.
-- KEYS[1] document (JSON), KEYS[2] blobs (hash), KEYS[3] writes (hash)
-- ARGV[1] checkpoint id the caller asks for, or "" for whatever is latest
-- Returns: {} or a one-element list of {document JSON, blob values in `refs` order, flat writes}.
-- The writes hash may already belong to a newer checkpoint (its writes were saved first); then
-- the checkpoint held has no writes to show.
local doc = redis.call('JSON.GET', KEYS[1])
if not doc then return {} end
local paths = cjson.decode(redis.call('JSON.GET', KEYS[1], '$.refs', '$.checkpoint_id'))
local held = paths['$.checkpoint_id'][1]
if ARGV[1] ~= '' and held ~= ARGV[1] then return {} end
local refs = paths['$.refs'][1]
local values = {}
if #refs > 0 then values = redis.call('HMGET', KEYS[2], unpack(refs)) end
local writes = {}
if redis.call('HGET', KEYS[3], '@cid') == held then writes = redis.call('HGETALL', KEYS[3]) end
return {{doc, values, writes}}
