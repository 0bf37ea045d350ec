#!lua
-- apply: project logged events of one thread into views, skipping what a view applied already.
-- KEYS[1] positions (hash: view -> id of the last event applied), KEYS[2] (optional) the thread
--         log: when it expires (a saver's `default_ttl`), every key the call wrote gets its
--         deadline, so views a worker or a replay builds expire with the log, not after it
-- ARGV: ne, then ne events in log order, each: id (its stream id), nv, then nv view blocks:
--       view name, op count, ops; then nr and nr recovery blocks (same form, one per view:
--       the ops that erase the thread from that view; nr is 0 for a single event); then, for a
--       single ThreadDeleted, "forget"
-- Returns: the number of (event, view) applications made (0 when every view had them all).
-- Positions are read once and recorded once, in the same script as the view changes, so a
-- crash or a second delivery never applies an event twice, and views apply their thread's
-- events in log order. A batch holds its writes back (see new_deferral): a document rewritten
-- by a later event of the batch is written once, and each hash, set and sorted set once, with
-- the same final content. Lua does not undo what ran before an error, and with writes held
-- back a failed batch would leave some keys ahead of others that no later replay fixes; so
-- when a batch fails, the recovery blocks erase the thread from the batch's views and their
-- positions are dropped: the error comes back, and the next replay (or `replay --keep`) folds
-- the thread whole again.
local err = expect_type(KEYS[1], 'hash')
if err then return err end

-- A stream id as two numbers (milliseconds, sequence), compared without string matching per view.
local function parse_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

local ne = tonumber(ARGV[1])
local defer = ne > 1 and new_deferral() or nil
local done, at_ms, at_seq, moved, order = {}, {}, {}, {}, {}
local i = 2
local applied = 0

local function apply_events()
  for _ = 1, ne do
    local id, nv = ARGV[i], counts[ARGV[i + 1]] or count_of(ARGV[i + 1])
    local ms, seq = parse_id(id)
    i = i + 2
    for _ = 1, nv do
      local view, count = ARGV[i], counts[ARGV[i + 1]] or count_of(ARGV[i + 1])
      if done[view] == nil then
        done[view] = redis.call('HGET', KEYS[1], view)
        if done[view] then at_ms[view], at_seq[view] = parse_id(done[view]) end
        order[#order + 1] = view
      end
      if done[view] and not (ms > at_ms[view] or (ms == at_ms[view] and seq > at_seq[view])) then
        -- skip the block: walk past its ops without running them
        i = i + 2
        for _ = 1, count do i = i + 1 + (counts[ARGV[i]] or count_of(ARGV[i])) end
      else
        i = defer and apply_deferred(i + 2, count, id, defer) or apply_ops(i + 2, count, id)
        done[view], at_ms[view], at_seq[view], moved[view] = id, ms, seq, true
        applied = applied + 1
      end
    end
  end
  if defer then flush_deferred(defer) end
end

-- Walks every op of the events' view blocks, calling `visit(j)` with each op's index (when
-- given); returns the index after the events (where the recovery blocks start).
local function each_op(visit)
  local j = 2
  for _ = 1, ne do
    local nv = tonumber(ARGV[j + 1])
    j = j + 2
    for _ = 1, nv do
      local count = tonumber(ARGV[j + 1])
      j = j + 2
      for _ = 1, count do
        if visit then visit(j) end
        j = j + 1 + tonumber(ARGV[j])
      end
    end
  end
  return j
end

local ok, failure = pcall(apply_events)
if not ok then
  -- Walk to the recovery blocks (the failed walk stopped anywhere), erase, forget positions.
  local j = each_op(nil)
  local nr = tonumber(ARGV[j])
  j = j + 1
  for _ = 1, nr do
    local view, count = ARGV[j], tonumber(ARGV[j + 1])
    j = apply_ops(j + 2, count, '0-0')
    redis.call('HDEL', KEYS[1], view)
  end
  local message = type(failure) == 'table' and (failure.err or failure.message) or tostring(failure)
  return redis.error_reply(tostring(message))
end
-- A deleted thread leaves no position: its log is erased (a re-delivered deletion purges
-- again, changing nothing), and a position kept would be a key nothing ever removes.
local forget = ne == 1 and ARGV[each_op(nil) + 1] == 'forget'
for _, view in ipairs(order) do
  if moved[view] then
    if forget then redis.call('HDEL', KEYS[1], view) else redis.call('HSET', KEYS[1], view, done[view]) end
  end
end

-- The keys the ops of the call name (a purge names stems, not keys: it only deletes).
local function written_keys()
  local keys, seen = {KEYS[1]}, {}
  each_op(function(j)
    local key = ARGV[j + 2]
    if ARGV[j + 1] ~= 'SS.PURGE' and not seen[key] then
      seen[key] = true
      keys[#keys + 1] = key
    end
  end)
  return keys
end

if KEYS[2] and applied > 0 then
  local deadline = redis.call('PEXPIRETIME', KEYS[2])
  if deadline > 0 and not redis.call('HGET', KEYS[1], '@pinned') then
    for _, key in ipairs(written_keys()) do redis.call('PEXPIREAT', key, deadline) end
  end
end
return applied
