-- The fence of a write-ownership claim (streamsaver/checkpoints/ownership.py), spliced first into
-- fenced_append.lua (append.lua's body): its last ARGV is the claim's token, removed here so the
-- append reads its arguments as an unfenced call has them. A token that is not the thread's
-- current claim (positions field '@owner') refuses the call before anything is written.
local fence_token = table.remove(ARGV)
local fence_held = redis.call('HGET', KEYS[3], '@owner')
if fence_held ~= fence_token then
  return redis.error_reply('SSOWNER claim ' .. fence_token .. ' is not the current one ('
    .. (fence_held and ('claim ' .. fence_held .. ' is') or 'the thread was deleted or expired: no claim is') .. ')')
end
