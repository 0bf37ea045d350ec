#!lua
-- trim: drop the entries of a partition feed that every consumer group has acknowledged; a
-- feed no group reads is trimmed to the retention policy instead (none given: nothing goes).
-- KEYS[1] partition feed (stream)
-- ARGV[1] (optional) retention for a feed without groups: the most entries it keeps ('' none)
-- ARGV[2] (optional) retention for a feed without groups: the oldest age kept, ms ('' none)
-- Returns: {entries removed, the lowest id kept (false when the feed has no group)}
-- Per group, what must stay starts at its oldest pending entry, or (nothing pending) right
-- after its last delivered id; the feed keeps everything from the lowest such id over all
-- groups (projector workers' included). Reading the groups and trimming in one script means an
-- entry delivered meanwhile cannot be trimmed before its group sees it. Thread logs are untouched.
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, false} end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then
  -- The server's clock ages the entries: their ids are the server's append times.
  local removed = 0
  if ARGV[1] and ARGV[1] ~= '' then removed = removed + redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[1]) end
  if ARGV[2] and ARGV[2] ~= '' then
    local now = redis.call('TIME')
    local floor = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[2])
    removed = removed + redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d-0', math.max(floor, 0)))
  end
  return {removed, false}
end
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function lower(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
local floor = nil
for _, group in ipairs(groups) do
  local info = {}
  for k = 1, #group, 2 do info[group[k]] = group[k + 1] end
  local keep
  if info['pending'] > 0 then
    keep = redis.call('XPENDING', KEYS[1], info['name'])[2]
  else
    local ms, seq = parse(info['last-delivered-id'])
    keep = string.format('%d-%d', ms, seq + 1)
  end
  if floor == nil or lower(keep, floor) then floor = keep end
end
return {redis.call('XTRIM', KEYS[1], 'MINID', floor), floor}
