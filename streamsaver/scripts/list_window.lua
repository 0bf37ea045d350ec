#!lua flags=no-writes
-- list_window: one page of a listing across threads, sorted among the newest matches only
-- (see _window.lua); on Redis Cluster, one primary's part (its checkpoints are fetched after).
-- KEYS[1] the view's index (on Redis Cluster: this primary's)
-- ARGV[1] query (field names and hex digests only, or '*'), ARGV[2] `before` id or '',
-- ARGV[3] order key of `before` or '', ARGV[4] offset, ARGV[5] page size,
-- ARGV[6] the order key a window hangs from without `before` (a guess of the newest id's),
-- ARGV[7] the first window's width (a previous page's, or a small guess),
-- ARGV[8] below how many matches to sort them all without a window,
-- ARGV[9] '1' when the first window is a fresh remembered one (sorted before any count),
-- ARGV[10] '1' when ARGV[2] is a keyset cursor's id: the page starts strictly after the row
-- (ARGV[2], ARGV[11] its `tk`, ARGV[12] its `nk`) in the order id DESC, tk ASC, nk ASC
-- Returns: {'missing'} when a match has no `ck` (written before index schema v3), else
--          {width of the window used (2^53: the whole index), FT.AGGREGATE reply (RESP2)}.
return window_page({idx = KEYS[1], query = ARGV[1], before = ARGV[2], bkey = ARGV[3],
                    offset = tonumber(ARGV[4]), size = tonumber(ARGV[5]), base = tonumber(ARGV[6]),
                    width = tonumber(ARGV[7]), few = tonumber(ARGV[8]), fresh = ARGV[9] == '1',
                    after = ARGV[10] == '1' and {ARGV[11], ARGV[12]} or nil})
