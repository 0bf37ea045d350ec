-- Prelude of every script that names view keys: the key escaping rule of streamsaver/log/codec.py
-- `escape` (thread ids, namespaces and checkpoint ids in key names), and the key names of
-- streamsaver/log/keys.py that scripts build themselves (tests/integration/test_key_escaping.py
-- checks both against Python). `thread` is a thread's tag and escaped id (``{pN}:t``), `ens`
-- an escaped namespace, as the namespaces set holds it.

local function esc(s)
  return (string.gsub(s, '[^%w%._%-]', function(c) return string.format('%%%02X', string.byte(c)) end))
end

-- ThreadKeys.base: ``P:view:kind:T:t``.
local function thread_base(prefix, view, kind, thread) return prefix .. ':' .. view .. ':' .. kind .. ':' .. thread end
-- ThreadKeys.in_ns, from a base (or stem) and an escaped namespace.
local function in_ns(base, ens) return base .. ':' .. ens end
-- ThreadKeys.per_checkpoint, from a base, an escaped namespace and a checkpoint id.
local function per_checkpoint(base, ens, cid) return base .. ':' .. ens .. ':' .. esc(cid) end
-- ThreadKeys.log.
local function thread_log(prefix, thread) return prefix .. ':log:' .. thread end
-- Keyspace.document_prefix.
local function document_prefix(prefix, view) return prefix .. ':' .. view .. ':cp:' end
