#!lua flags=no-writes
-- list_page: one page of a listing across threads on a single server, found as list_window.lua
-- finds it (_window.lua) and read in the same call (_read.lua): one round trip a page. Only on
-- one server: the page's checkpoints are keys the call does not declare (on Redis Cluster they
-- live on other primaries, so there the page is found with list_window.lua and fetched after).
-- KEYS[1] the view's index
-- ARGV[1..12] as list_window.lua, ARGV[13] key prefix, ARGV[14] view ('full' or 'shallow')
-- Returns: {'missing'} when a match has no `ck` (written before index schema v3), else
--          {width of the window used (2^53: the whole index), FT.AGGREGATE reply (RESP2, each
--          row with its document's key `__key`), the page's checkpoints in row order as
--          read_full.lua / read_shallow.lua return one (false where none is found)}.
local prefix, view = ARGV[13], ARGV[14]
local found = window_page({idx = KEYS[1], query = ARGV[1], before = ARGV[2], bkey = ARGV[3],
                           offset = tonumber(ARGV[4]), size = tonumber(ARGV[5]), base = tonumber(ARGV[6]),
                           width = tonumber(ARGV[7]), few = tonumber(ARGV[8]), fresh = ARGV[9] == '1',
                           after = ARGV[10] == '1' and {ARGV[11], ARGV[12]} or nil,
                           load = {'LOAD', 1, '@__key'}})
if found[1] == 'missing' then return found end
local documents = document_prefix(prefix, view)
local readers, out = {}, {}
for r = 2, #found[2] do
  local row, fields = found[2][r], {}
  for k = 1, #row, 2 do fields[row[k]] = row[k + 1] end
  -- a document from before index schema v2 (no `tk`): the client refuses the rows, unread
  if not fields['tk'] then return {found[1], found[2], {}} end
  -- the partition tag comes from the document's key (it is a hash the script cannot compute);
  -- thread and namespace come from the row, as keys spell them
  local tag = string.match(fields['__key'], '^{[^}]*}', #documents + 1)
  local thread, ns = tag .. ':' .. fields['tk'], fields['nk']
  local log = thread_log(prefix, thread)
  local read = readers[log]
  if read == nil then
    read = log_reader(log)
    readers[log] = read
  end
  local one
  local cp, ptrs = thread_base(prefix, view, 'cp', thread), thread_base(prefix, view, 'ptrs', thread)
  local writes = thread_base(prefix, view, 'writes', thread)
  if view == 'full' then
    one = read_full_checkpoint(read, in_ns(cp, ns) .. ':', in_ns(ptrs, ns), in_ns(writes, ns) .. ':',
                               fields['checkpoint_id'])
  else
    one = read_shallow_checkpoint(read, in_ns(cp, ns), in_ns(ptrs, ns), in_ns(writes, ns), fields['checkpoint_id'])
  end
  out[r - 1] = one
end
return {found[1], found[2], out}
