--
-- 05_stats: the fpsketch_stats view and fpsketch_stats_reset().
--
-- The counters are cluster-wide and this suite runs alone, so a known
-- workload after a reset gives exact numbers.  Each tracked key is pinned
-- (INCREF) at its first touch in a transaction and unpinned (DECREF) at its
-- end.  With fpsketch.eviction = clock (the default) an unpinned entry stays
-- in the exact table, exact, until CLOCK needs its slot: the table keeps
-- what earlier suites touched, so entries are shown as growth since the
-- reset (new_entries), and a key touched again is found, not seeded.
--

-- configuration columns (server defaults)
SHOW fpsketch.eviction;
SELECT protocol, variant, eviction, max_entries, sketch_rows, sketch_cols, sketch_readers_cols, sketch_bytes,
       table_bytes > 0 AS has_table
FROM fpsketch_stats;

-- every column, by name and type
SELECT attname, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = 'fpsketch_stats'::regclass AND attnum > 0
ORDER BY attnum;

CREATE TABLE st (id int PRIMARY KEY, v text) USING fpsketch;
CREATE TABLE st_tid (id int, v text) USING fpsketch;
INSERT INTO st SELECT g, 'v' || g FROM generate_series(1, 10) g;
INSERT INTO st_tid SELECT g, 'v' || g FROM generate_series(1, 3) g;

-- after a reset every counter is zero and nothing is pinned
SELECT fpsketch_stats_reset();
SELECT entries AS entries0 FROM fpsketch_stats \gset
SELECT entries - :entries0 AS new_entries, entries_hwm - :entries0 AS new_entries_hwm, pinned, pinned_hwm, increfs, decrefs, seeds, merges,
       evictions, table_full, lock_leaks, commits, read_only_commits,
       aborts_stale_read + aborts_reread_changed + aborts_validate_changed +
       aborts_validate_locked + aborts_concurrent_update + aborts_lock_timeout +
       aborts_table_full AS aborts, lock_waits, floor_raises
FROM fpsketch_stats;

-- one transaction reads 3 distinct rows (by primary key: the rows' keys, and
-- no equality-prefix key, as each lookup finds its row, am/point_lookup.c)
-- and updates 1 of them (its escalation key besides)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
SELECT v FROM st WHERE id = 1;
SELECT v FROM st WHERE id = 2;
SELECT v FROM st WHERE id = 3;
SELECT pinned, pinned_hwm, entries - :entries0 AS new_entries, increfs, decrefs FROM fpsketch_stats;
UPDATE st SET v = 'updated' WHERE id = 2;
-- rereading and updating keys already pinned pins nothing new
SELECT v FROM st WHERE id = 2;
SELECT pinned, increfs FROM fpsketch_stats;
COMMIT;
-- the INSERTs above left every key of st in the table: nothing to seed or merge
SELECT entries - :entries0 AS new_entries, entries_hwm - :entries0 AS new_entries_hwm,
       pinned, pinned_hwm, increfs, decrefs, seeds, merges,
       commits, read_only_commits, lock_waits, lock_leaks, table_full
FROM fpsketch_stats;
SELECT sketch_cells_used <= sketch_rows * sketch_cols AS in_range
FROM fpsketch_stats;

-- a read-only transaction: 2 rows, counted as a read-only commit.  An
-- autocommit SELECT that can write nothing reads at a timestamp: each key
-- (two rows, the IN list's predicate) is pinned only while its rts is raised
SELECT fpsketch_stats_reset();
SELECT v FROM st WHERE id IN (4, 5) ORDER BY id;
SELECT pinned, pinned_hwm, increfs, decrefs, commits, read_only_commits, ts_snapshots FROM fpsketch_stats;
-- the same without timestamp snapshots: the transaction keeps its 3 pins
SET fpsketch.timestamp_snapshots = off;
SELECT fpsketch_stats_reset();
SELECT v FROM st WHERE id IN (4, 5) ORDER BY id;
SELECT pinned, pinned_hwm, increfs, decrefs, commits, read_only_commits, ts_snapshots FROM fpsketch_stats;
RESET fpsketch.timestamp_snapshots;

-- the same row read by several statements of one transaction is pinned once
-- (its key: each lookup finds the row)
SELECT fpsketch_stats_reset();
BEGIN;
SELECT v FROM st WHERE id = 6;
SELECT v FROM st WHERE id = 6;
SELECT count(*) FROM st WHERE id = 6;
COMMIT;
SELECT pinned_hwm, increfs, decrefs, read_only_commits FROM fpsketch_stats;

-- an aborted transaction releases its pins and counts no commit
SELECT fpsketch_stats_reset();
BEGIN;
SELECT v FROM st WHERE id = 7;
UPDATE st SET v = 'rolled back' WHERE id = 8;
ROLLBACK;
SELECT pinned, pinned_hwm, increfs, decrefs, commits, read_only_commits FROM fpsketch_stats;
SELECT v FROM st WHERE id = 8;

-- a multi-row insert pins every new key: row, relation, escalation and
-- prefix keys, and one ESC key for the gaps of st_pkey, which no gap scan
-- has read yet (am/gap_levels.c)
SELECT fpsketch_stats_reset();
INSERT INTO st SELECT g, 'new' FROM generate_series(11, 15) g;
SELECT pinned_hwm, increfs, decrefs, commits FROM fpsketch_stats;
-- after a range scan of st_pkey (a gap scan at level 0), inserts walk that
-- level instead: the gap keys of the new entries and the one after the
-- last (am/gap.c), one walk for the five, and the level's ESC key, which a
-- walker follows without writing it
BEGIN;
SELECT count(*) FROM st WHERE id > 100;
COMMIT;
SELECT fpsketch_stats_reset();
INSERT INTO st SELECT g, 'new' FROM generate_series(16, 20) g;
SELECT pinned_hwm, increfs, decrefs, commits FROM fpsketch_stats;
-- a level expires fpsketch.gap_level_lifetime after its last gap scan:
-- writers then write its ESC key again instead of walking (the same keys as
-- the first insert above); with the default lifetime the scan above is
-- recent, and inserts walk again
SET fpsketch.gap_level_lifetime = 0;
SELECT fpsketch_stats_reset();
INSERT INTO st SELECT g, 'new' FROM generate_series(21, 25) g;
SELECT pinned_hwm, increfs, decrefs, commits FROM fpsketch_stats;
RESET fpsketch.gap_level_lifetime;
SELECT fpsketch_stats_reset();
INSERT INTO st SELECT g, 'new' FROM generate_series(26, 30) g;
SELECT pinned_hwm, increfs, decrefs, commits FROM fpsketch_stats;
-- the time of a scan is noted whatever the scanner's own lifetime: after a
-- scan by a session with a lifetime of a day, a writer with one of 3 s
-- walks (19 keys, not 13), however long ago the level's last scan was
SELECT pg_sleep(3.1);
SET fpsketch.gap_level_lifetime = '1d';
BEGIN;
SELECT count(*) FROM st WHERE id > 100;
COMMIT;
SET fpsketch.gap_level_lifetime = 3;
SELECT fpsketch_stats_reset();
INSERT INTO st SELECT g, 'new' FROM generate_series(31, 35) g;
SELECT pinned_hwm, increfs, decrefs, commits FROM fpsketch_stats;
RESET fpsketch.gap_level_lifetime;
DELETE FROM st WHERE id > 20;
-- a sequential scan reads every row
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT fpsketch_stats_reset();
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM st;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT pinned_hwm, increfs, decrefs, read_only_commits, ts_snapshots FROM fpsketch_stats;

-- without a primary key a row is keyed by its TID: reading 3 rows and
-- updating 1 of them also pins the new version's TID
SELECT fpsketch_stats_reset();
SELECT entries AS entries0 FROM fpsketch_stats \gset
BEGIN;
SELECT id, v FROM st_tid ORDER BY id;
UPDATE st_tid SET v = 'moved' WHERE id = 2;
SELECT pinned FROM fpsketch_stats;
COMMIT;
SELECT entries - :entries0 AS new_entries, entries_hwm - :entries0 AS new_entries_hwm,
       pinned, pinned_hwm, increfs, decrefs, commits FROM fpsketch_stats;

-- storage rewrites are covered by raising the floor instead of per-row pins
SELECT fpsketch_stats_reset();
SELECT floor_ts AS floor_before FROM fpsketch_stats \gset
TRUNCATE st_tid;
SELECT floor_raises, floor_ts > :floor_before AS floor_raised, increfs, pinned
FROM fpsketch_stats;
BEGIN;
TRUNCATE st_tid;
INSERT INTO st_tid SELECT g, 'bulk' FROM generate_series(1, 100) g;
COMMIT;
SELECT floor_raises, increfs, pinned FROM fpsketch_stats;

-- statements that touch no fpsketch table count nothing
SELECT fpsketch_stats_reset();
CREATE TABLE st_heap (id int) USING heap;
INSERT INTO st_heap VALUES (1);
SELECT count(*) FROM st_heap;
SELECT increfs, commits, read_only_commits, floor_raises FROM fpsketch_stats;

-- the shared pool of pins, by login role (fpsketch_pool_pins): a
-- transaction that pins more row keys than its backend's own share
-- (max_entries / 4 / max backends) borrows the rest in chunks of 64 for its
-- login role, and its end returns them
SHOW fpsketch.max_pool_pins_per_role;
CREATE TABLE st_pool (id int PRIMARY KEY, v int) USING fpsketch;
INSERT INTO st_pool SELECT g, 0 FROM generate_series(1, 1000) g;
SELECT fpsketch_stats_reset();
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
SELECT count(*) FROM st_pool WHERE id <= 1000;
SELECT rolname = session_user AS mine, transactions, pins > 0 AS borrowed, pins % 64 AS rest
FROM fpsketch_pool_pins;
SELECT pool_pins = (SELECT sum(pins) FROM fpsketch_pool_pins) AS accounted FROM fpsketch_stats;
COMMIT;
SELECT count(*) AS roles FROM fpsketch_pool_pins;
SELECT pool_pins, pins_refused, pins_refused_role, aborts_pool_held FROM fpsketch_stats;

-- the reset function is for superusers only; fpsketch_stats() is not
CREATE ROLE regress_fps_user;
GRANT SELECT ON st TO regress_fps_user;
SET ROLE regress_fps_user;
SELECT fpsketch_stats_reset();
SELECT count(*) FROM st;
SELECT protocol, pinned FROM fpsketch_stats();
-- nor is the pool's limit per role; who borrows is for everyone to see
SET fpsketch.max_pool_pins_per_role = 100000;
SELECT count(*) FROM fpsketch_pool_pins;
RESET ROLE;
SELECT has_function_privilege('regress_fps_user', 'fpsketch_stats_reset()', 'EXECUTE');

-- a role that may borrow nothing from the pool, and may only insert (no
-- ACCESS EXCLUSIVE instead): 500 rows, 1000 row and prefix keys, are more
-- than its transaction may ever pin, a 54000 that names the limit
SET fpsketch.max_pool_pins_per_role = 0;
GRANT INSERT ON st_pool TO regress_fps_user;
SET ROLE regress_fps_user;
INSERT INTO st_pool SELECT g, 0 FROM generate_series(1001, 1500) g;
RESET ROLE;
RESET fpsketch.max_pool_pins_per_role;
SELECT pool_pins, pins_refused > 0 AS refused, aborts_pool_held FROM fpsketch_stats;
RESET enable_seqscan;
RESET enable_bitmapscan;

DROP TABLE st, st_tid, st_heap, st_pool;
DROP ROLE regress_fps_user;
SELECT pinned FROM fpsketch_stats;
