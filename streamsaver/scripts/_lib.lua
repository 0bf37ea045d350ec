-- Shared prelude, prepended to every streamsaver script (after its shebang line).
-- Holds the op interpreter for projector commands (see projectors/commands.py) and the key
-- escaping rule of streamsaver/codec.py `escape`.

local function esc(s)
  return (string.gsub(s, '[^%w%._%-]', function(c) return string.format('%%%02X', string.byte(c)) end))
end

local function purge(nsset, cp, ids, blobs, writes)
  for _, ns in ipairs(redis.call('SMEMBERS', nsset)) do
    if ids ~= '' then
      local idkey = ids .. ':' .. ns
      for _, cid in ipairs(redis.call('ZRANGE', idkey, 0, -1)) do
        redis.call('DEL', cp .. ':' .. ns .. ':' .. esc(cid), writes .. ':' .. ns .. ':' .. esc(cid))
      end
      redis.call('DEL', idkey)
    else
      redis.call('DEL', cp .. ':' .. ns, writes .. ':' .. ns)
    end
    redis.call('DEL', blobs .. ':' .. ns)
  end
  redis.call('DEL', nsset)
end

-- Applies `count` ops encoded in ARGV from index `i` (each op: argc, then argc arguments).
-- A guard (SS.IFNEWER, SS.IFEQ) gates the ops after it up to the next guard; every guard is
-- evaluated, whatever the previous one decided. Returns the index after the block.
local function apply_ops(i, count)
  local live = true
  for _ = 1, count do
    local argc = tonumber(ARGV[i])
    local op = ARGV[i + 1]
    if op == 'SS.IFNEWER' then
      local cur = redis.call('HGET', ARGV[i + 2], ARGV[i + 3])
      live = (not cur) or cur < ARGV[i + 4]
    elseif op == 'SS.IFEQ' then
      live = redis.call('HGET', ARGV[i + 2], ARGV[i + 3]) == ARGV[i + 4]
    elseif live then
      if op == 'SS.PURGE' then
        purge(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
      else
        redis.call(unpack(ARGV, i + 1, i + argc))
      end
    end
    i = i + 1 + argc
  end
  return i
end

local function expect_type(key, allowed)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= allowed then
    return redis.error_reply('WRONGTYPE streamsaver key ' .. key .. ' holds a ' .. t .. ', not a ' .. allowed)
  end
end

-- Reads one checkpoint of the full view: {document, blob values, flat writes} or false.
local function read_full_checkpoint(cp_prefix, blobs, writes_prefix, cid)
  local doc = redis.call('JSON.GET', cp_prefix .. esc(cid))
  if not doc then return false end
  local refs = cjson.decode(redis.call('JSON.GET', cp_prefix .. esc(cid), '$.refs'))[1]
  local values = {}
  if #refs > 0 then values = redis.call('HMGET', blobs, unpack(refs)) end
  return {doc, values, redis.call('HGETALL', writes_prefix .. esc(cid))}
end
