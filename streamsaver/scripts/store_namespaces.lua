#!lua flags=no-writes
-- store_namespaces: the live namespaces of one store partition, from its namespace registry
-- (see projectors/store.py): KEYS[1] the counts hash (escaped namespace -> stems in the item
-- set), KEYS[2] the sorted set of expiring stems (every score 0: ranged by lex).
-- ARGV[1] the stem of the item documents (a document is ARGV[1] .. ':' .. stem), ARGV[2] the
-- escaped labels every namespace listed starts with, whole labels ('' for all).
-- A namespace is live when it holds more stems than expiring ones (an item without a TTL only
-- goes by a delete), or else when one of its expiring items' documents still exists: an
-- expired item is no event, so the registry still counts it, and it is checked here. The
-- documents read are found from stored state (not declared): each carries KEYS' hash tag.
-- Returns: the live escaped namespaces, in no order.
local counts = redis.call('HGETALL', KEYS[1])
local fixed = ARGV[2]
local under = fixed .. '.'
local expiring = redis.call('EXISTS', KEYS[2]) == 1
local out = {}
for k = 1, #counts, 2 do
  local n = counts[k]
  if fixed == '' or n == fixed or string.sub(n, 1, #under) == under then
    local live = not expiring
    if not live then
      local lo, hi = '[' .. n .. ':', '(' .. n .. ';'  -- the stems 'n:key' (escaped keys hold no ':')
      live = tonumber(counts[k + 1]) > redis.call('ZLEXCOUNT', KEYS[2], lo, hi)
      if not live then
        for _, stem in ipairs(redis.call('ZRANGE', KEYS[2], lo, hi, 'BYLEX')) do
          if redis.call('EXISTS', ARGV[1] .. ':' .. stem) == 1 then live = true break end
        end
      end
    end
    if live then out[#out + 1] = n end
  end
end
return out
