#!lua
-- drop_if_stale: drop a view's index on this Redis Cluster primary unless this primary's own
-- slot map makes it current; the check and the drop in one atomic call, so a slot map changed
-- back (a slot moved home, a setup() of the current map) between the plan and the drop keeps it.
-- KEYS[1] the index name (<stem>{iK}:<node id>: RediSearch routes FT.DROPINDEX by it, as a key)
-- ARGV[1] the node id in the name
-- ARGV[2..] the slots of the hash tags {i0} .. {iK}, in order: the name's own tag last
-- Returns: 1 dropped; 0 kept, current (its node id is this primary's and {iK} is the first tag
-- whose slot it owns: the name setup() gives its index, streamsaver.log.routing.index_targets);
-- -1 gone (no such index here)
local myid = redis.call('CLUSTER', 'MYID')
local mine = {}
for _, range in ipairs(redis.call('CLUSTER', 'SLOTS')) do
  if range[3][3] == myid then mine[#mine + 1] = {tonumber(range[1]), tonumber(range[2])} end
end
local first
for i = 2, #ARGV do
  local slot = tonumber(ARGV[i])
  for _, span in ipairs(mine) do
    if span[1] <= slot and slot <= span[2] then first = first or i end
  end
end
if ARGV[1] == myid and first == #ARGV then return 0 end
for _, name in ipairs(redis.call('FT._LIST')) do
  -- RediSearch lists the names as status replies: Lua sees each as {ok = name}
  if (type(name) == 'table' and name.ok or name) == KEYS[1] then
    redis.call('FT.DROPINDEX', KEYS[1])
    return 1
  end
end
return -1
