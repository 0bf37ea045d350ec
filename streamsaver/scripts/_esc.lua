-- Prelude of every script that names view keys: the key escaping rule of streamsaver/log/codec.py
-- `escape` (thread ids, namespaces and checkpoint ids in key names).

local function esc(s)
  return (string.gsub(s, '[^%w%._%-]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
