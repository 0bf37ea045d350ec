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

-- One page. `p` holds: idx (the index), query (field names and hex digests only, or '*'),
-- before (`before` id or ''), bkey (its order key or ''), offset, size, base (the order key a
-- window hangs from without `before`), width (the first window's width), few (below how many
-- matches to sort them all), fresh (true: the first window is a remembered one, recent enough
-- to be sorted without counting first; the sort tells whether it held the page), after (nil,
-- or {tk, nk}: `before` is then a cursor's id, see above), load (extra FT.AGGREGATE arguments
-- after the sort, or nil). The client checks `before`, tk and nk: [A-Za-z0-9._:%-] only,
-- quoted verbatim (checked here again: no input alters a query).
-- Returns {'missing'} when a match has no `ck` (written before index schema v3), else
-- {width of the window used (2^53: the whole index), FT.AGGREGATE reply (RESP2)}.
local function window_page(p)
  local idx, query, before, bkey = p.idx, p.query, p.before, p.bkey
  local bound = ''
  if before ~= '' then
    for _, s in ipairs({before, unpack(p.after or {})}) do
      if not string.find(s, '^[%w._:%%-]*$') then error('unsafe id in a listing bound') end
    end
    bound = "@checkpoint_id < '" .. before .. "'"
    if p.after then
      local tk, nk = p.after[1], p.after[2]
      bound = '(' .. bound .. ") || (@checkpoint_id == '" .. before .. "' && (@tk > '" .. tk ..
              "' || (@tk == '" .. tk .. "' && @nk > '" .. nk .. "')))"
    end
  end
  local offset, size = p.offset, p.size
  local need = offset + size
  -- a window may hold up to `cap` matches: a few more than the page, so it is found in few
  -- counts and each count builds at most 65 rows
  local cap = need + math.min(3 * need, 64)
  local filter = ''
  if query ~= '*' then filter = query .. ' ' end

  -- matches of the query not yet given a `ck`: listing would miss them silently
  local gone = redis.call('FT.AGGREGATE', idx, filter .. 'ismissing(@ck)', 'LIMIT', 0, 1, 'DIALECT', 2, 'TIMEOUT', 0)
  if #gone > 1 then return {'missing'} end

  local top, ceiling, base
  if bkey ~= '' then
    base = tonumber(bkey)
    top, ceiling = '(' .. bkey, base
  else
    base = p.base
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

  local few = math.max(cap, p.few)
  local first = math.max(base - math.max(p.width, 1), 0)

  -- The lowest `ck` of the window, or nil for the whole index (fewer than `few` matches:
  -- sorting them all is as cheap). Invariant of the bisection: [wide, top] holds at least
  -- `need` matches, [narrow, top] fewer.
  local function window()
    local width = math.max(p.width, 1)
    local lo = first
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

  -- the page of the window from `lo` (nil: the whole index): {width used, reply}
  local function sorted(lo)
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
    if bound ~= '' then
      table.insert(command, 'FILTER')
      table.insert(command, bound)
    end
    for _, arg in ipairs({'SORTBY', 6, '@checkpoint_id', 'DESC', '@tk', 'ASC', '@nk', 'ASC',
                          'LIMIT', offset, size}) do
      table.insert(command, arg)
    end
    for _, arg in ipairs(p.load or {}) do table.insert(command, arg) end
    for _, arg in ipairs({'DIALECT', 2, 'TIMEOUT', 0}) do table.insert(command, arg) end
    return {used, redis.call(unpack(command))}
  end

  -- A fresh remembered window is sorted at once: a full page from it is the page (the window
  -- then holds at least offset + size matches, the condition above); a short one may only
  -- mean the window no longer holds it, so the search runs as without it.
  if p.fresh and size > 0 and first < ceiling then
    local page = sorted(first)
    if #page[2] - 1 == size then return page end
  end
  return sorted(window())
end
