#!lua
-- store_put: ONE put of a store item, atomically: what append_batch.lua does for a partition
-- batch of that single event (its log entry, its feed pointer, the item's document and the
-- namespace registry through `put_item`, the document's TTL, the view's position), with the
-- projection's arguments at fixed places instead of an op list (streamsaver/store/put.py).
-- KEYS[1] log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash), KEYS[4] the
--         item's document, KEYS[5] the partition's item set, KEYS[6] its namespace counts
--         (hash), KEYS[7] its expiring stems (sorted set)
-- ARGV[1] the view (positions field), ARGV[2] the put's time (the document's 'c' when new),
--      ARGV[3] the document body, ARGV[4] the item's stem, ARGV[5] its namespace (escaped
--      labels joined by '.'), ARGV[6] '1' when the put gives a TTL, ARGV[7] the document's
--      deadline (Unix ms; '': none, PERSIST), ARGV[8] nf, then nf log entry field/value args
--      (streamsaver/log/items.py: type, v, thread, labels, key, ...): the feed pointer is 'id'
--      and the entry's type, thread, labels and key pairs, as `item_pointer` spells it.
-- Returns: the id of the log entry, in a list (as append_batch.lua's).
-- Validates the type of every key it writes before the first write (in append_batch.lua's
-- order, so the same damaged key is named); #!lua makes Redis refuse it whole when out of memory.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
  or expect_type(KEYS[4], 'ReJSON-RL') or expect_type(KEYS[5], 'set') or expect_type(KEYS[6], 'hash')
  or expect_type(KEYS[7], 'zset')
if err then return err end

local nf = tonumber(ARGV[8])
local id = rcall('XADD', KEYS[1], '*', unpack(ARGV, 9, 8 + nf))
local fed = rcall('XADD', KEYS[2], '*', 'id', id, ARGV[9], ARGV[10], ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17],
                 ARGV[18])
rcall('HSETNX', KEYS[3], '@inc', fed)  -- see append.lua
put_item(KEYS[4], ARGV[2], ARGV[3], KEYS[5], ARGV[4], KEYS[6], ARGV[5], KEYS[7], ARGV[6] == '1')
if ARGV[7] ~= '' then rcall('PEXPIREAT', KEYS[4], ARGV[7]) else rcall('PERSIST', KEYS[4]) end
rcall('HSET', KEYS[3], ARGV[1], id)
-- When the log expires, the keys written that have no expiry of their own get its deadline.
local deadline = rcall('PEXPIRETIME', KEYS[1])
if deadline > 0 then
  for k = 3, 7 do rcall('PEXPIREAT', KEYS[k], deadline, 'NX') end
end
return {id}
