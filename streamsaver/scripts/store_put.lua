#!lua
-- store_put: ONE put of a store item, atomically: what append_batch.lua does for a partition
-- batch of that single event (its log entry, its feed pointer, the item's document and the
-- namespace registry through `put_item`, the document's TTL, the view's position), with the
-- projection's arguments at fixed places instead of an op list (streamsaver/store/put.py).
-- KEYS[1] log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash), KEYS[4] the
--         item's document, KEYS[5] the partition's item set, KEYS[6] its namespace counts
--         (hash), KEYS[7] its expiring stems (sorted set)
-- ARGV[1] the document body, ARGV[2] the item's stem, ARGV[3] its namespace (escaped labels
--      joined by '.'), ARGV[4] the document's deadline (Unix ms; '': none, PERSIST), then the
--      values of the log entry's fields (below) after its type and version (ItemPut, 3: the
--      script writes no other), in its order (an optional field, '': absent): the entry's 'at'
--      is the document's 'c' when new, its 'ttl' > 0 makes the item expiring, and the feed
--      pointer is 'id' and the entry's type, thread, labels and key.
-- Returns: the id of the log entry, in a list (as append_batch.lua's).
-- Validates the type of every key it writes before the first write (in append_batch.lua's
-- order, so the same damaged key is named); #!lua makes Redis refuse it whole when out of memory.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
  or expect_type(KEYS[4], 'ReJSON-RL') or expect_type(KEYS[5], 'set') or expect_type(KEYS[6], 'hash')
  or expect_type(KEYS[7], 'zset')
if err then return err end

-- The log entry: the values of its fields in `streamsaver.log.items.item_fields`'s order, their
-- names constants here rather than arguments (each argument costs the client and the server to
-- pass); `streamsaver.store.put.ENTRY` lists the same, which a unit test reads from these lines.
local A = ARGV
local entry = {'type', 'ItemPut', 'v', '3', 'thread', A[5], 'labels', A[6], 'key', A[7], 'at', A[8], 'writer', A[9]}
local n = 14
if A[10] ~= '' then entry[15], entry[16], n = 'run', A[10], 16 end
entry[n + 1], entry[n + 2], entry[n + 3], entry[n + 4], n = 'value', A[11], 'ttl', A[12], n + 4
if A[13] ~= '' then entry[n + 1], entry[n + 2], n = 'expires', A[13], n + 2 end
if A[14] ~= '' then entry[n + 1], entry[n + 2], entry[n + 3], entry[n + 4] = 'vectors', A[14], 'embedding', A[15] end
local id = rcall('XADD', KEYS[1], '*', unpack(entry))
local fed = rcall('XADD', KEYS[2], '*', 'id', id, 'type', 'ItemPut', 'thread', A[5], 'labels', A[6], 'key', A[7])
rcall('HSETNX', KEYS[3], '@inc', fed)  -- see append.lua
put_item(KEYS[4], A[8], A[1], KEYS[5], A[2], KEYS[6], A[3], KEYS[7], tonumber(A[12]) > 0)
if A[4] ~= '' then rcall('PEXPIREAT', KEYS[4], A[4]) else rcall('PERSIST', KEYS[4]) end
rcall('HSET', KEYS[3], 'items', id)  -- the store's one view (projectors/store.py VIEW)
-- When the log expires, the keys written that have no expiry of their own get its deadline.
local deadline = rcall('PEXPIRETIME', KEYS[1])
if deadline > 0 then
  for k = 3, 7 do rcall('PEXPIREAT', KEYS[k], deadline, 'NX') end
end
return {id}
