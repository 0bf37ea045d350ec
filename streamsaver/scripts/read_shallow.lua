#!lua flags=no-writes
-- read_shallow: the latest checkpoint of one (thread, namespace) from the shallow view.
-- KEYS[1] document (JSON), KEYS[2] blobs (hash), KEYS[3] writes (hash)
-- ARGV[1] checkpoint id the caller asks for, or "" for whatever is latest
-- Returns: {} or a one-element list of {document JSON, blob values in `refs` order, flat writes}.
local doc = redis.call('JSON.GET', KEYS[1])
if not doc then return {} end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[3], '@cid') ~= ARGV[1] then return {} end
local refs = cjson.decode(redis.call('JSON.GET', KEYS[1], '$.refs'))[1]
local values = {}
if #refs > 0 then values = redis.call('HMGET', KEYS[2], unpack(refs)) end
return {{doc, values, redis.call('HGETALL', KEYS[3])}}
