#!lua flags=no-writes
-- read_cached: get_tuple's read of one checkpoint (full or shallow view) for a client that holds
-- some of the thread's log entries (streamsaver/checkpoints/entry_cache.py): the entries it holds
-- are neither read nor shipped, those it lacks are shipped whole, so it can hold them next time.
-- KEYS[1] positions (hash), KEYS[2] thread log (stream), then the view's keys: "full": ids
--         (zset), pointers (hash); "shallow": document (JSON), pointers (hash), writes (hash)
-- ARGV[1] the thread incarnation the client's entries belong to ("" for none), ARGV[2] n, then n
--         entry ids it holds (with every entry a held delta links to); then the view's name and
--         "full": document key stem, writes key stem, checkpoint id ("" for the latest);
--         "shallow": checkpoint id ("" for whatever is held)
-- Returns: {incarnation ("": the thread has none, hold nothing of it), shipped entries: flat
--          {entry id, flat {field, value}}, and the checkpoint's row when there is one}: a row of
--          read_full.lua where every payload, task and path read is 1 (take field of the entry
--          named beside it, held or shipped) and the delta links are {} (the client follows them
--          in the same entries).
-- The incarnation (positions field @inc) changes whenever the thread's log is made anew or
-- rewritten, so ids held of another incarnation are ignored: everything needed is shipped.
local incarnation = redis.call('HGET', KEYS[1], '@inc') or ''
local n = tonumber(ARGV[2])
local held = {}
if incarnation ~= '' and incarnation == ARGV[1] then
  for k = 3, 2 + n do held[ARGV[k]] = true end
end
local read = log_reader(KEYS[2], held)
local at = 3 + n
local one
if ARGV[at] == 'full' then
  local cid = ARGV[at + 3]
  if cid == '' then cid = redis.call('ZRANGE', KEYS[3], '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, 1)[1] end
  if cid then one = read_full_checkpoint(read, ARGV[at + 1], KEYS[4], ARGV[at + 2], cid) end
else
  one = read_shallow_checkpoint(read, KEYS[3], KEYS[4], KEYS[5], ARGV[at + 1])
end
local out = {incarnation, shipped[read]}
if one then
  local values, writes = one[2], one[3]
  for k = 1, #one[4] do
    if values[k] then values[k] = 1 end
  end
  for k = 2, #writes, 5 do writes[k], writes[k + 1], writes[k + 2] = 1, 1, 1 end
  one[5] = {}
  out[3] = one
end
return out
