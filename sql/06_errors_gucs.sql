--
-- 06_errors_gucs: configuration parameters and the errors fpsketch raises
-- on its own (not serialization failures: those need concurrent sessions
-- and are covered by the isolation specs).
--
\set VERBOSITY default

-- the parameters and their server defaults
SHOW fpsketch.protocol;
SHOW fpsketch.variant;
SHOW fpsketch.sketch_size;
SHOW fpsketch.sketch_rows;
SHOW fpsketch.max_entries;
SHOW fpsketch.lock_wait_timeout;
SELECT name, setting, unit, context, vartype, min_val, max_val, enumvals
FROM pg_settings WHERE name LIKE 'fpsketch.%' ORDER BY name;

-- postmaster parameters cannot be changed in a session
SET fpsketch.variant = 'exact';
SET fpsketch.protocol = 'off';
SET fpsketch.sketch_size = '64kB';
SET fpsketch.max_entries = 1000;
-- nor given a bad value
SET fpsketch.variant = 'bogus';
SHOW fpsketch.variant;

-- lock_wait_timeout is superuser-settable, with a range
SET fpsketch.lock_wait_timeout = '2s';
SHOW fpsketch.lock_wait_timeout;
SET fpsketch.lock_wait_timeout = 250;
SHOW fpsketch.lock_wait_timeout;
SET fpsketch.lock_wait_timeout = 0;
SET fpsketch.lock_wait_timeout = -1;
SET fpsketch.lock_wait_timeout = 'soon';
SHOW fpsketch.lock_wait_timeout;
BEGIN;
SET LOCAL fpsketch.lock_wait_timeout = '1min';
SHOW fpsketch.lock_wait_timeout;
COMMIT;
SHOW fpsketch.lock_wait_timeout;
RESET fpsketch.lock_wait_timeout;
SHOW fpsketch.lock_wait_timeout;
-- gap_level_lifetime: seconds, -1 for never
SET fpsketch.gap_level_lifetime = '1h';
SHOW fpsketch.gap_level_lifetime;
SET fpsketch.gap_level_lifetime = -1;
SHOW fpsketch.gap_level_lifetime;
SET fpsketch.gap_level_lifetime = -2;
SET fpsketch.gap_level_lifetime = '10ms';
SHOW fpsketch.gap_level_lifetime;
RESET fpsketch.gap_level_lifetime;
CREATE ROLE regress_fps_guc;
SET ROLE regress_fps_guc;
SET fpsketch.lock_wait_timeout = '5s';
SHOW fpsketch.lock_wait_timeout;
SET fpsketch.gap_level_lifetime = 0;
RESET ROLE;
DROP ROLE regress_fps_guc;

-- the prefix is reserved: misspelled parameters are errors, not placeholders
SET fpsketch.nonexistent = 1;
SET fpsketch.lock_wait_timout = '1s';
SHOW fpsketch.nonexistent;

-- PREPARE TRANSACTION (sql/13_prepared.sql has more): a transaction that
-- only read fpsketch tables holds nothing once prepared
CREATE TABLE err_t (id int PRIMARY KEY, v int) USING fpsketch;
INSERT INTO err_t VALUES (1, 1), (2, 2);
BEGIN;
SELECT v FROM err_t WHERE id = 1;
PREPARE TRANSACTION 'fps_read';
SELECT gid FROM pg_prepared_xacts;
SELECT count(*) FROM fpsketch_prepared_xacts;
SELECT pinned, prepared_xacts FROM fpsketch_stats;
COMMIT PREPARED 'fps_read';
-- one that wrote keeps its written keys locked, and nothing else pinned
BEGIN;
UPDATE err_t SET v = 20 WHERE id = 2;
INSERT INTO err_t VALUES (3, 3);
PREPARE TRANSACTION 'fps_write';
SELECT gid, locked_keys, keys >= locked_keys AS with_predicates, recovered
  FROM fpsketch_prepared_xacts;
SELECT pinned <= prepared_keys AS only_prepared_pins, prepared_xacts FROM fpsketch_stats;
-- a reader waits for it, then gives up naming it
SET fpsketch.lock_wait_timeout = 100;
SELECT * FROM err_t ORDER BY id;
RESET fpsketch.lock_wait_timeout;
COMMIT PREPARED 'fps_write';
SELECT * FROM err_t ORDER BY id;
SELECT pinned, prepared_xacts, lock_leaks FROM fpsketch_stats;
-- one that only rewrote storage (no per-row keys): its commit timestamp
-- still orders it
BEGIN;
TRUNCATE err_t;
PREPARE TRANSACTION 'fps_truncate';
SELECT gid, keys FROM fpsketch_prepared_xacts;
ROLLBACK PREPARED 'fps_truncate';
SELECT count(*) FROM err_t;
-- a subtransaction's reads are kept, rolled back or not
BEGIN;
SAVEPOINT s;
SELECT v FROM err_t WHERE id = 1;
ROLLBACK TO SAVEPOINT s;
PREPARE TRANSACTION 'fps_subxact';
COMMIT PREPARED 'fps_subxact';
SELECT count(*) FROM pg_prepared_xacts;
SELECT pinned, prepared_xacts FROM fpsketch_stats;

-- SERIALIZABLE sessions may use fpsketch tables too
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT v FROM err_t WHERE id = 1;
UPDATE err_t SET v = v + 100 WHERE id = 1;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT v FROM err_t WHERE id = 1;
COMMIT;
SELECT pinned FROM fpsketch_stats;

DROP TABLE err_t;
