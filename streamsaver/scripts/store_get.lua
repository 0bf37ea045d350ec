#!lua flags=allow-oom
-- Flagged allow-oom: it only reads and moves expiries, so a full server (noeviction) still serves gets.
-- store_get: the item documents of KEYS (nil for a missing one); with ARGV[1] == '1', each
-- found item that expires gets its own TTL again (its document's '$.i.t', ms): a refreshing read.
-- With ARGV[2] == '1' (a store with a local cache), each key's PTTL too, after any renewal.
-- With ARGV[3] == '1' (the local cache on Redis Cluster), then the id of the primary running it.
-- Returns: one JSON text (or nil) per key, in order; then, with ARGV[2] == '1', one PTTL per key;
-- then, with ARGV[3] == '1', this node's CLUSTER MYID.
local out = {}
for k, key in ipairs(KEYS) do
  local doc = redis.call('JSON.GET', key)
  out[k] = doc or false
  -- PTTL first: an item without a TTL (-1) costs no second read.
  if doc and ARGV[1] == '1' and redis.call('PTTL', key) > 0 then
    local ttl = tonumber(string.match(redis.call('JSON.GET', key, '$.i.t'), '%d+'))
    if ttl and ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  end
  if ARGV[2] == '1' then out[#KEYS + k] = redis.call('PTTL', key) end
end
if ARGV[3] == '1' then out[2 * #KEYS + 1] = redis.call('CLUSTER', 'MYID') end
return out
