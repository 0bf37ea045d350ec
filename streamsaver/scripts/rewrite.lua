#!lua
-- rewrite: write several entries into one thread's log and fold them into its views, atomically
-- (copy_thread, prune, delete_for_runs).
-- KEYS[1] thread log (stream), KEYS[2] partition feed (stream), KEYS[3] positions (hash)
-- ARGV[1] guard: the id of the last log entry the caller read, "" when it read no log; the
--         script refuses (error STALE) when the log changed since
-- ARGV[2] mode: "replace" (delete the log, purge the views, then add the entries under the
--         ids they name), "append" (add the entries after the log's end) or "refold" (the
--         projector worker: purge the views and fold the entries, logged under the ids they
--         name, into them; the log is neither checked nor written)
-- ARGV[3..] the purge: nv, then nv view blocks (view name, op count, ops: argc, args...), run
--         in "replace" mode only; the views named are the views the entries are folded into
-- then ne, then ne entries, each: id ("*" for a new one), np, np feed pointer field/value args
--         (np 0: no pointer), nf, nf field/value args, nv view blocks as above
-- then the TTL block: ttl in ms (0: none), the view count and 5 purge stems per view; without
--         one (or with ttl 0), every key the call wrote gets the deadline the log had before
--         it (a "replace" deletes the log, and with it its expiry)
-- Returns: the id of the last entry added.
-- Validates before the first write; the #!lua shebang refuses the whole script when out of
-- memory. The views after a "replace" are the fold of the new log, as a replay would make them
-- (a log replaced by no entry leaves no position of the views).
local err = expect_type(KEYS[1], 'stream') or expect_type(KEYS[2], 'stream') or expect_type(KEYS[3], 'hash')
if err then return err end
local deadline = redis.call('PEXPIRETIME', KEYS[1])
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local current = ''
if last[1] then current = last[1][1] end
local refold = ARGV[2] == 'refold'
if current ~= ARGV[1] and not refold then
  return redis.error_reply('STALE the log ' .. KEYS[1] .. ' changed since it was read')
end

local replace = ARGV[2] == 'replace'
if replace then
  redis.call('DEL', KEYS[1])
  -- The records of full values append.lua checks deltas against name entries of the old log:
  -- entries come back under their ids without what was dropped, so none may vouch for them.
  -- HGETALL, not HKEYS: the deployment's documented ACL allows the one (docs/security.md).
  local records, held = {}, redis.call('HGETALL', KEYS[3])
  for k = 1, #held, 2 do
    if string.sub(held[k], 1, 6) == '@base:' then records[#records + 1] = held[k] end
  end
  if records[1] then redis.call('HDEL', KEYS[3], spread(records, 1, #records)) end
end
replace = replace or refold
local nv = tonumber(ARGV[3])
local views = {}
local i = 4
for v = 1, nv do
  views[v] = ARGV[i]
  local count = tonumber(ARGV[i + 1])
  if replace then
    i = apply_ops(i + 2, count, '')
  else
    i = i + 2
    for _ = 1, count do i = i + 1 + tonumber(ARGV[i]) end
  end
end

-- Adds the keys the `count` ops from ARGV[j] name to `out` (a purge names stems: it only deletes).
local function op_keys(j, count, out)
  for _ = 1, count do
    if ARGV[j + 1] ~= 'SS.PURGE' then out[#out + 1] = ARGV[j + 2] end
    j = j + 1 + tonumber(ARGV[j])
  end
end

local ne = tonumber(ARGV[i])
i = i + 1
local id = current
local touched = {KEYS[1], KEYS[3]}
for _ = 1, ne do
  local np = tonumber(ARGV[i + 1])
  local pointer = i + 2
  local nf = tonumber(ARGV[pointer + np])
  local fields = pointer + np + 1
  if refold then
    id = ARGV[i]
  else
    id = redis.call('XADD', KEYS[1], ARGV[i], spread(ARGV, fields, fields + nf - 1))
  end
  if np > 0 then redis.call('XADD', KEYS[2], '*', 'id', id, spread(ARGV, pointer, pointer + np - 1)) end
  i = fields + nf + 1 -- skip the entry's view count (the purge named the views)
  for _ = 1, nv do
    op_keys(i + 2, tonumber(ARGV[i + 1]), touched)
    i = apply_ops(i + 2, tonumber(ARGV[i + 1]), id)
  end
end
-- A log replaced by nothing folds to no position (as a replay of no log): none may name an erased entry.
local emptied = ARGV[2] == 'replace' and ne == 0
for v = 1, nv do
  if emptied then redis.call('HDEL', KEYS[3], views[v]) else redis.call('HSET', KEYS[3], views[v], id) end
end
if emptied then
  -- No log, no incarnation: the next append starts one from its own feed pointer.
  redis.call('HDEL', KEYS[3], '@inc')
elseif not refold then
  -- Entries may come back under ids a reader holds: a new incarnation (read_cached.lua), made of
  -- the feed's last id and the server's clock, so that no earlier one of the thread is repeated.
  local fed = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
  local now = redis.call('TIME')
  local fresh = (fed and fed[1] or '0-0') .. '/' .. now[1] .. '.' .. now[2]
  redis.call(ARGV[2] == 'replace' and 'HSET' or 'HSETNX', KEYS[3], '@inc', fresh)
end
local ttl = tonumber(ARGV[i] or '0')
if ttl > 0 then
  keep_alive(KEYS[1], KEYS[3], ttl, i + 1, touched)
elseif deadline > 0 then
  for _, key in ipairs(touched) do redis.call('PEXPIREAT', key, deadline) end
end
return id
