#!lua flags=no-writes
-- read_cached: get_tuple's read of one checkpoint (full or shallow view), or a page of list's walk
-- of one thread (full view), for a client that holds some of the thread's log entries
-- (streamsaver/checkpoints/entry_cache.py): the entries it holds are neither read nor shipped,
-- those it lacks are shipped whole, so it can hold them next time.
-- KEYS[1] positions (hash), KEYS[2] thread log (stream), then the view's keys: "full" and
--         "page": ids (zset), pointers (hash); "shallow": document (JSON), pointers (hash),
--         writes (hash)
-- ARGV[1] the thread incarnation the client's entries belong to ("" for none), ARGV[2] n, then n
--         entry ids it holds (with every entry a held delta links to); then the mode and
--         "full": document key stem, writes key stem, checkpoint id ("" for the latest);
--         "page": document key stem, writes key stem, the checkpoint ids below which the page
--         starts ("" for the newest), the page size (newest first, as read_full.lua's page);
--         "shallow": checkpoint id ("" for whatever is held)
-- Returns: {incarnation ("": the thread has none, hold nothing of it), shipped entries: flat
--          {entry id, flat {field, value}}, then the row of each checkpoint read (none: there
--          is no such checkpoint)}: a row of read_full.lua where every payload, task and path
--          read is 1 (take field of the entry named beside it, held or shipped) and the delta
--          links are {} (the client follows them in the same entries).
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
local out = {incarnation, shipped[read]}

-- `one` (a row of _read.lua) with markers where payloads, tasks and paths were, added to `out`.
local function add(one)
  if not one then return end
  local values, writes = one[2], one[3]
  for k = 1, #one[4] do
    if values[k] then values[k] = 1 end
  end
  for k = 2, #writes, 5 do writes[k], writes[k + 1], writes[k + 2] = 1, 1, 1 end
  one[5] = {}
  out[#out + 1] = one
end

local mode = ARGV[at]
if mode == 'page' then
  local upper = ARGV[at + 3] == '' and '+' or '(' .. ARGV[at + 3]
  local ids = redis.call('ZRANGE', KEYS[3], upper, '-', 'BYLEX', 'REV', 'LIMIT', 0, tonumber(ARGV[at + 4]))
  for _, cid in ipairs(ids) do add(read_full_checkpoint(read, ARGV[at + 1], KEYS[4], ARGV[at + 2], cid)) end
elseif mode == 'full' then
  local cid = ARGV[at + 3]
  if cid == '' then cid = redis.call('ZRANGE', KEYS[3], '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, 1)[1] end
  if cid then add(read_full_checkpoint(read, ARGV[at + 1], KEYS[4], ARGV[at + 2], cid)) end
else
  add(read_shallow_checkpoint(read, KEYS[3], KEYS[4], KEYS[5], ARGV[at + 1]))
end
return out
