-- Prelude of the listing scripts across threads (list_window.lua, list_page.lua): one page of a
-- query, sorted among the newest matches only.
--
-- Sorting every match by checkpoint id costs what the matches count; the page needs only the
-- offset + size newest. `ck` (streamsaver.log.codec.order_key) never disagrees with the id order,
-- so the window `@ck:[lo top]` holding at least offset + size of the matches holds the page:
-- a match outside it has a smaller `ck`, so a smaller id, than every match inside (equal `ck`
-- values are all inside). The window is found by counting matches, each count capped (an
-- FT.AGGREGATE without sorting stops at its LIMIT), so it costs what the page asks, not what
-- the index holds. With `before`, the counts leave out the matches tying with its key (their
-- ids may not be below it), so a window holds enough of the matches the page may show. A
-- keyset cursor (`after`: the last row a listing returned, id `before` with its `tk`, `nk`)
-- bounds the page the same way, except that it also keeps the rows of id `before` that sort
-- after the cursor (id DESC, tk ASC, nk ASC): rows deleted above it shift nothing.
-- Every query says TIMEOUT 0: cut short at RediSearch's own timeout, a count or a sort would
-- answer with what it reached as if whole.

local function num(x) return string.format('%.0f', x) end

-- The FILTER of a page bounded by `before` (and a keyset cursor's `after`), '' for none. The
-- client checks `before`, tk and nk: [A-Za-z0-9._:%-] only, quoted verbatim (checked here
-- again: no input alters a query).
local function page_bound(p)
  local before = p.before
  if before == '' then return '' end
  for _, s in ipairs({before, unpack(p.after or {})}) do
    if not string.find(s, '^[%w._:%%-]*$') then error('unsafe id in a listing bound') end
  end
  local bound = "@checkpoint_id < '" .. before .. "'"
  if p.after then
    local tk, nk = p.after[1], p.after[2]
    bound = '(' .. bound .. ") || (@checkpoint_id == '" .. before .. "' && (@tk > '" .. tk ..
            "' || (@tk == '" .. tk .. "' && @nk > '" .. nk .. "')))"
  end
  return bound
end

-- The search state of one page `p` (see window_page): the query's filter and bound, how many
-- matches the page needs, and the range of `ck` its windows hang from.
local function window_search(p)
  local need = p.offset + p.size
  -- a window may hold up to `cap` matches: a few more than the page, so it is found in few
  -- counts and each count builds at most 65 rows
  local w = {p = p, idx = p.idx, query = p.query, bkey = p.bkey, need = need,
             cap = need + math.min(3 * need, 64), filter = '', bound = page_bound(p)}
  if p.query ~= '*' then w.filter = p.query .. ' ' end
  if p.bkey ~= '' then
    w.base = tonumber(p.bkey)
    w.top, w.ceiling = '(' .. p.bkey, w.base
  else
    w.base = p.base
    w.top, w.ceiling = '+inf', 2 ^ 53
  end
  w.few = math.max(w.cap, p.few)
  w.first = math.max(w.base - math.max(p.width, 1), 0)
  return w
end

-- min(matches in [lo, top], cap), from rows need..cap of an unsorted, lazily stopped query
local function window_count(w, lo)
  if lo >= w.ceiling then return 0 end
  local q = w.filter .. '@ck:[' .. num(lo) .. ' ' .. w.top .. ']'
  local reply = redis.call('FT.AGGREGATE', w.idx, q, 'LIMIT', w.need - 1, w.cap - w.need + 1,
                           'DIALECT', 2, 'TIMEOUT', 0)
  if #reply == 1 then return 0 end
  return w.need - 1 + #reply - 1
end

local function window_good(w, n) return n >= w.need and n < w.cap end

-- The first window (from `lo`) held too few matches: widen it downwards, 8 times each step.
-- Returns true and the window's lowest `ck` (nil: the whole index) when found, else false
-- and the bounds (wide, narrow) to bisect.
local function widen_down(w, lo, width)
  if lo == 0 then return true, nil end
  local narrow, n
  repeat
    narrow = lo
    width = width * 8
    lo = math.max(w.base - width, 0)
    n = window_count(w, lo)
    if window_good(w, n) then return true, lo end
    if n < w.need and lo == 0 then return true, nil end
  until n >= w.need
  return false, lo, narrow
end

-- The first window (from `lo`) held too many matches: narrow it upwards from `base`. Returns
-- as widen_down.
local function narrow_up(w, lo, width)
  local wide, step, n = lo, 0, nil
  repeat
    lo = math.min(w.base + step, w.ceiling)
    n = window_count(w, lo)
    if window_good(w, n) then return true, lo end
    if n >= w.need then wide = lo end
    step = math.max(step * 8, width)
  until n < w.need
  return false, wide, lo
end

-- Bisect until a window holds the page. Invariant: [wide, top] holds at least `need`
-- matches, [narrow, top] fewer.
local function bisect(w, wide, narrow)
  while narrow - wide > 1 do
    local mid = wide + math.floor((narrow - wide) / 2)
    local n = window_count(w, mid)
    if window_good(w, n) then return mid end
    if n < w.need then narrow = mid else wide = mid end
  end
  return wide
end

-- The lowest `ck` of the window, or nil for the whole index (fewer than `few` matches:
-- sorting them all is as cheap).
local function window_low(w)
  local width = math.max(w.p.width, 1)
  local lo = w.first
  local n = window_count(w, lo)
  -- A first window that holds the page (a remembered one, usually) is exact whatever the
  -- matches count: the probe below, which walks `few` matches, is only needed to choose
  -- between searching further and sorting them all.
  if window_good(w, n) then return lo end
  local probe = redis.call('FT.AGGREGATE', w.idx, w.query, 'LIMIT', w.few - 1, 1, 'DIALECT', 2, 'TIMEOUT', 0)
  if #probe == 1 then return nil end
  local done, a, b
  if n < w.need then done, a, b = widen_down(w, lo, width) else done, a, b = narrow_up(w, lo, width) end
  if done then return a end
  return bisect(w, a, b)
end

-- the page of the window from `lo` (nil: the whole index): {width used, reply}
local function window_sorted(w, lo)
  local q, used
  if lo == nil then
    q, used = w.query, 2 ^ 53
    if w.bkey ~= '' then q = w.filter .. '@ck:[-inf ' .. w.bkey .. ']' end
  else
    local upper = '+inf'
    if w.bkey ~= '' then upper = w.bkey end
    q, used = w.filter .. '@ck:[' .. num(lo) .. ' ' .. upper .. ']', w.base - lo
  end
  local command = {'FT.AGGREGATE', w.idx, q}
  if w.bound ~= '' then
    table.insert(command, 'FILTER')
    table.insert(command, w.bound)
  end
  for _, arg in ipairs({'SORTBY', 6, '@checkpoint_id', 'DESC', '@tk', 'ASC', '@nk', 'ASC',
                        'LIMIT', w.p.offset, w.p.size}) do
    table.insert(command, arg)
  end
  for _, arg in ipairs(w.p.load or {}) do table.insert(command, arg) end
  for _, arg in ipairs({'DIALECT', 2, 'TIMEOUT', 0}) do table.insert(command, arg) end
  return {used, redis.call(unpack(command))}
end

-- One page. `p` holds: idx (the index), query (field names and hex digests only, or '*'),
-- before (`before` id or ''), bkey (its order key or ''), offset, size, base (the order key a
-- window hangs from without `before`), width (the first window's width), few (below how many
-- matches to sort them all), fresh (true: the first window is a remembered one, recent enough
-- to be sorted without counting first; the sort tells whether it held the page), after (nil,
-- or {tk, nk}: `before` is then a cursor's id, see above), load (extra FT.AGGREGATE arguments
-- after the sort, or nil); `before`, tk and nk are checked (page_bound).
-- Returns {'missing'} when a match has no `ck` (written before index schema v3), else
-- {width of the window used (2^53: the whole index), FT.AGGREGATE reply (RESP2)}.
local function window_page(p)
  local w = window_search(p)
  -- matches of the query not yet given a `ck`: listing would miss them silently
  local gone = redis.call('FT.AGGREGATE', w.idx, w.filter .. 'ismissing(@ck)', 'LIMIT', 0, 1, 'DIALECT', 2, 'TIMEOUT', 0)
  if #gone > 1 then return {'missing'} end
  -- A fresh remembered window is sorted at once: a full page from it is the page (the window
  -- then holds at least offset + size matches, the condition above); a short one may only
  -- mean the window no longer holds it, so the search runs as without it.
  if p.fresh and p.size > 0 and w.first < w.ceiling then
    local page = window_sorted(w, w.first)
    if #page[2] - 1 == p.size then return page end
  end
  return window_sorted(w, window_low(w))
end
