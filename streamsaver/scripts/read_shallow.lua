#!lua flags=no-writes
-- read_shallow: the latest checkpoint of one (thread, namespace) from the shallow view.
-- KEYS[1] document (JSON), KEYS[2] pointers (hash), KEYS[3] writes (hash), KEYS[4] thread log
-- ARGV[1] checkpoint id the caller asks for, or "" for whatever is latest
-- Returns: {} or {{document JSON, payloads in `refs` order, flat {field, task, path, write,
--          entry id}, entry ids of the payloads, delta links: flat {entry id, field, payload}}}.
-- The writes hash may already belong to a newer checkpoint (its writes were saved first); then
-- the checkpoint held has no writes to show.
local one = read_shallow_checkpoint(log_reader(KEYS[4]), KEYS[1], KEYS[2], KEYS[3], ARGV[1])
if not one then return {} end
return {one}
