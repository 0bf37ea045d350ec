#!lua
-- swap: move one thread's shadow-built view into place, atomically, once it is caught up.
-- KEYS[1] thread log (stream), KEYS[2] live positions (hash), KEYS[3] shadow positions (hash)
-- ARGV: view; then the live stems nsset, cp, ids, ptrs, writes; then the shadow stems likewise
--       (ids empty for a view keeping one document per namespace)
-- Returns: 1 when swapped; 0 when the shadow has not applied the thread's last log entry yet
--          (catch it up and call again); nothing is changed then.
-- Every key touched carries the thread's partition tag, so the swap stays in one hash slot.
-- Documents renamed under the live prefix are indexed by the live index as they move.
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'hash') or expect_type(KEYS[3], 'hash')
if err then return err end

local view = ARGV[1]
local live = {ns = ARGV[2], cp = ARGV[3], ids = ARGV[4], ptrs = ARGV[5], writes = ARGV[6]}
local shadow = {ns = ARGV[7], cp = ARGV[8], ids = ARGV[9], ptrs = ARGV[10], writes = ARGV[11]}

local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local want = last and last[1] or false
if want and redis.call('HGET', KEYS[3], view) ~= want then return 0 end

local function rename_if(from, to)
  if redis.call('EXISTS', from) == 1 then redis.call('RENAME', from, to) end
end

purge(live.ns, live.cp, live.ids, live.ptrs, live.writes)
if want then
  for _, ns in ipairs(redis.call('SMEMBERS', shadow.ns)) do
    if shadow.ids ~= '' then
      for _, cid in ipairs(redis.call('ZRANGE', in_ns(shadow.ids, ns), 0, -1)) do
        rename_if(per_checkpoint(shadow.cp, ns, cid), per_checkpoint(live.cp, ns, cid))
        rename_if(per_checkpoint(shadow.writes, ns, cid), per_checkpoint(live.writes, ns, cid))
      end
      rename_if(in_ns(shadow.ids, ns), in_ns(live.ids, ns))
    else
      rename_if(in_ns(shadow.cp, ns), in_ns(live.cp, ns))
      rename_if(in_ns(shadow.writes, ns), in_ns(live.writes, ns))
    end
    rename_if(in_ns(shadow.ptrs, ns), in_ns(live.ptrs, ns))
  end
  rename_if(shadow.ns, live.ns)
  redis.call('HSET', KEYS[2], view, want)
else
  -- the thread was deleted after the shadow read its log: nothing of it stays
  purge(shadow.ns, shadow.cp, shadow.ids, shadow.ptrs, shadow.writes)
  redis.call('HDEL', KEYS[2], view)
end
redis.call('HDEL', KEYS[3], view)
return 1
