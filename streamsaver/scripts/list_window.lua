#!lua flags=no-writes
-- list_window: one page of a listing across threads, sorted among the newest matches only.
-- KEYS[1] the view's index (on Redis Cluster: this primary's)
-- ARGV[1] query (field names and hex digests only, or '*'), ARGV[2] `before` id or '',
-- ARGV[3] order key of `before` or '', ARGV[4] offset, ARGV[5] page size,
-- ARGV[6] the order key a window hangs from without `before` (a guess of the newest id's),
-- ARGV[7] the first window's width (a previous page's, or a small guess),
-- ARGV[8] below how many matches to sort them all without a window
-- Every query says TIMEOUT 0: cut short at RediSearch's own timeout, a count or a sort would
-- answer with what it reached as if whole.
-- Returns: {'missing'} when a match has no `ck` (written before index schema v3), else
--          {width of the window used (2^53: the whole index), FT.AGGREGATE reply (RESP2)}.
--
-- Sorting every match by checkpoint id costs what the matches count; the page needs only the
-- offset + size newest. `ck` (streamsaver.codec.order_key) never disagrees with the id order,
-- so the window `@ck:[lo top]` holding at least offset + size of the matches holds the page:
-- a match outside it has a smaller `ck`, so a smaller id, than every match inside (equal `ck`
-- values are all inside). The window is found by counting matches, each count capped (an
-- FT.AGGREGATE without sorting stops at its LIMIT), so it costs what the page asks, not what
-- the index holds. With `before`, the counts leave out the matches tying with its key (their
-- ids may not be below it), so a window holds enough of the matches the page may show.
local idx, query, before, bkey = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local offset, size = tonumber(ARGV[4]), tonumber(ARGV[5])
local need = offset + size
-- a window may hold up to `cap` matches: a few more than the page, so it is found in few counts
-- and each count builds at most 65 rows
local cap = need + math.min(3 * need, 64)
local filter = ''
if query ~= '*' then filter = query .. ' ' end

local function num(x) return string.format('%.0f', x) end

-- matches of the query not yet given a `ck`: listing would miss them silently
local function missing()
  local reply = redis.call('FT.AGGREGATE', idx, filter .. 'ismissing(@ck)', 'LIMIT', 0, 1, 'DIALECT', 2, 'TIMEOUT', 0)
  return #reply > 1
end

if missing() then return {'missing'} end

local top, ceiling, base
if bkey ~= '' then
  base = tonumber(bkey)
  top, ceiling = '(' .. bkey, base
else
  base = tonumber(ARGV[6])
  top, ceiling = '+inf', 2 ^ 53
end

-- min(matches of q, cap), from rows need..cap of an unsorted, lazily stopped query
local function capped(q)
  local reply = redis.call('FT.AGGREGATE', idx, q, 'LIMIT', need - 1, cap - need + 1, 'DIALECT', 2, 'TIMEOUT', 0)
  if #reply == 1 then return 0 end
  return need - 1 + #reply - 1
end

-- min(matches in [lo, top], cap)
local function count(lo)
  if lo >= ceiling then return 0 end
  return capped(filter .. '@ck:[' .. num(lo) .. ' ' .. top .. ']')
end

local function good(n) return n >= need and n < cap end

local few = math.max(cap, tonumber(ARGV[8]))

-- The lowest `ck` of the window, or nil for the whole index (fewer than `few` matches: sorting
-- them all is as cheap). Invariant of the bisection: [wide, top] holds at least `need`
-- matches, [narrow, top] fewer.
local function window()
  local width = math.max(tonumber(ARGV[7]), 1)
  local lo = math.max(base - width, 0)
  local n = count(lo)
  -- A first window that holds the page (a remembered one, usually) is exact whatever the
  -- matches count: the probe below, which walks `few` matches, is only needed to choose
  -- between searching further and sorting them all.
  if good(n) then return lo end
  local probe = redis.call('FT.AGGREGATE', idx, query, 'LIMIT', few - 1, 1, 'DIALECT', 2, 'TIMEOUT', 0)
  if #probe == 1 then return nil end
  local wide, narrow
  if n < need then
    if lo == 0 then return nil end
    repeat
      narrow = lo
      width = width * 8
      lo = math.max(base - width, 0)
      n = count(lo)
      if good(n) then return lo end
      if n < need and lo == 0 then return nil end
    until n >= need
    wide = lo
  else
    wide = lo
    local step = 0
    repeat
      lo = math.min(base + step, ceiling)
      n = count(lo)
      if good(n) then return lo end
      if n >= need then wide = lo end
      step = math.max(step * 8, width)
    until n < need
    narrow = lo
  end
  while narrow - wide > 1 do
    local mid = wide + math.floor((narrow - wide) / 2)
    n = count(mid)
    if good(n) then return mid end
    if n < need then narrow = mid else wide = mid end
  end
  return wide
end

local lo = window()
local q, used
if lo == nil then
  q, used = query, 2 ^ 53
  if bkey ~= '' then q = filter .. '@ck:[-inf ' .. bkey .. ']' end
else
  local upper = '+inf'
  if bkey ~= '' then upper = bkey end
  q, used = filter .. '@ck:[' .. num(lo) .. ' ' .. upper .. ']', base - lo
end
local command = {'FT.AGGREGATE', idx, q}
if before ~= '' then
  table.insert(command, 'FILTER')
  table.insert(command, "@checkpoint_id < '" .. before .. "'")
end
for _, arg in ipairs({'SORTBY', 6, '@checkpoint_id', 'DESC', '@tk', 'ASC', '@nk', 'ASC',
                      'LIMIT', offset, size, 'DIALECT', 2, 'TIMEOUT', 0}) do
  table.insert(command, arg)
end
return {used, redis.call(unpack(command))}
