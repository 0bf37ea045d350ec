-- The store's item put and the key type checks, spliced before `_lib.lua` into every script
-- that writes views, and alone into `store_put.lua` (one put, without the op interpreter:
-- every script evaluates its preludes on each call).
local rcall = redis.call

-- The keys this call's type checks found empty (see expect_type), until an op adds to them: a
-- ZREM from a sorted set known empty is skipped (a put without a TTL, where none has one).
local known_empty = {}

-- A put of the store's item document `doc` (SS.ITEM, projectors/store.py) with one JSON.SET
-- (one index update): whole for a `stem` new to the item set `items`, else its body alone (its
-- creation time 'c' stays), whole again when that fails because the document expired (the set
-- holds the stem of every document, and expired ones'). The namespace registry (`namespaces`
-- counts, the `expiring` stems) follows SADD's reply, never whether a document exists: expiry
-- is not an event, and a replay must rebuild the registry exactly.
local function put_item(doc, created, body, items, stem, namespaces, joined, expiring, expires)
  local new = rcall('SADD', items, stem) == 1
  local kept = not new and redis.pcall('JSON.SET', doc, '$.i', body)
  if not kept or kept.err then rcall('JSON.SET', doc, '$', '{"c":' .. created .. ',"i":' .. body .. '}') end
  if new then rcall('HINCRBY', namespaces, joined, 1) end
  if expires then
    rcall('ZADD', expiring, 0, stem)
    known_empty[expiring] = nil
  elseif not (new or known_empty[expiring]) then
    rcall('ZREM', expiring, stem)
  end
end

-- The command giving the length of a key of each type: it fails only on a key of another type.
local LENGTH = {stream = 'XLEN', hash = 'HLEN', set = 'SCARD', zset = 'ZCARD'}

-- An error naming `key` when it exists with another type than `allowed`, else nil. A stream,
-- hash, set or sorted set is probed with its length command, which fails only on another type:
-- its integer reply costs less than TYPE's status reply, which becomes a Lua table; TYPE then
-- names the type.
local function expect_type(key, allowed)
  local length = LENGTH[allowed]
  local n = length and redis.pcall(length, key)
  if type(n) == 'number' then
    if n == 0 then known_empty[key] = true end
    return nil
  end
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= allowed then
    return redis.error_reply('WRONGTYPE streamsaver key ' .. key .. ' holds a ' .. t .. ', not a ' .. allowed)
  end
end
