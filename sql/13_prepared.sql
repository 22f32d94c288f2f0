--
-- 13_prepared: two-phase commit of transactions that touched fpsketch
-- tables.  PREPARE TRANSACTION validates as COMMIT does and hands what the
-- transaction must keep (the lock bits of its written keys, its commit
-- timestamp) to the prepared transaction; COMMIT PREPARED and ROLLBACK
-- PREPARED, from any session, install or release it.  PostgreSQL's own
-- errors (duplicate gid, unknown gid, no free slot) and fpsketch's limit on
-- the keys prepared transactions may hold (fpsketch.max_prepared_keys,
-- 53400) leave nothing behind: no row in fpsketch_prepared_xacts, no file
-- in pg_fpsketch/prepared, nothing pinned once no transaction runs, no lock
-- bit, and the rows writable at once.  This suite runs alone and the cluster allows 4 prepared
-- transactions (scripts/cluster.sh).
--
\set VERBOSITY default
SET enable_seqscan = off;
SET enable_bitmapscan = off;
-- a lock bit left behind fails a later writer after 100ms instead of 10s,
-- and a prepared transaction left behind fails a statement that waits for
-- its row or table locks instead of hanging the suite
SET fpsketch.lock_wait_timeout = '100ms';
SET lock_timeout = '10s';

CREATE TABLE p_t (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
INSERT INTO p_t SELECT g, g FROM generate_series(1, 10) g;
CREATE TABLE p_heap (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO p_heap VALUES (1, 1);
SELECT fpsketch_stats_reset();

-- the view's columns
SELECT attname, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = 'fpsketch_prepared_xacts'::regclass AND attnum > 0
ORDER BY attnum;

--
-- PREPARE, then the preparing backend exits (\c); the new session commits
--
BEGIN;
UPDATE p_t SET v = 100 WHERE id = 1;
INSERT INTO p_t VALUES (11, 11);
DELETE FROM p_t WHERE id = 10;
PREPARE TRANSACTION 'p_commit';
-- the transaction block ended with PREPARE
SHOW transaction_isolation;
SELECT gid, transaction = (SELECT transaction FROM pg_prepared_xacts WHERE gid = 'p_commit') AS same_xid,
       database = current_database() AS this_db, commit_ts > 0 AS has_commit_ts,
       locked_keys, keys >= locked_keys AS keys_cover_locked, recovered,
       prepared = (SELECT prepared FROM pg_prepared_xacts WHERE gid = 'p_commit') AS same_time
FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys = (SELECT keys FROM fpsketch_prepared_xacts) AS prepared_keys_counted,
       pinned = prepared_keys AS pinned_are_prepared, prepares, lock_leaks
FROM fpsketch_stats;
-- and its file, which PREPARE made durable before its WAL record
SELECT count(*) AS prepared_files FROM pg_ls_dir('pg_fpsketch/prepared') AS f;
\c -
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET fpsketch.lock_wait_timeout = '100ms';
SET lock_timeout = '10s';
SELECT gid FROM pg_prepared_xacts;
SELECT gid, locked_keys FROM fpsketch_prepared_xacts;
-- a TicToc reader meets the locked row: 40001 after lock_wait_timeout, and
-- the DETAIL names the prepared transaction
BEGIN;
SELECT v FROM p_t WHERE id = 1;
ROLLBACK;
COMMIT PREPARED 'p_commit';
SELECT id, v FROM p_t WHERE id IN (1, 10, 11) ORDER BY id;
BEGIN;
SELECT id, v FROM p_t WHERE id IN (1, 10, 11) ORDER BY id;
COMMIT;
SELECT count(*) AS prepared_rows FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned, prepares, prepared_commits, prepared_rollbacks, lock_leaks
FROM fpsketch_stats;
SELECT count(*) AS prepared_files FROM pg_ls_dir('pg_fpsketch/prepared') AS f;
-- the rows are writable at once
UPDATE p_t SET v = v + 1 WHERE id IN (1, 11);
INSERT INTO p_t VALUES (10, 10);
SELECT id, v FROM p_t WHERE id IN (1, 10, 11) ORDER BY id;

--
-- ROLLBACK PREPARED after the preparing backend exited
--
BEGIN;
UPDATE p_t SET v = 200 WHERE id = 2;
INSERT INTO p_t VALUES (12, 12);
DELETE FROM p_t WHERE id = 9;
PREPARE TRANSACTION 'p_rollback';
SELECT gid, locked_keys FROM fpsketch_prepared_xacts;
\c -
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET fpsketch.lock_wait_timeout = '100ms';
SET lock_timeout = '10s';
ROLLBACK PREPARED 'p_rollback';
SELECT count(*) AS prepared_rows FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned, prepares, prepared_commits, prepared_rollbacks, lock_leaks
FROM fpsketch_stats;
SELECT id, v FROM p_t WHERE id IN (2, 9, 12) ORDER BY id;
SELECT count(*) AS prepared_files FROM pg_ls_dir('pg_fpsketch/prepared') AS f;
-- nothing of it is left: the rows are readable and writable at once
BEGIN;
SELECT id, v FROM p_t WHERE id IN (2, 9, 12) ORDER BY id;
UPDATE p_t SET v = 201 WHERE id = 2;
DELETE FROM p_t WHERE id = 9;
INSERT INTO p_t VALUES (12, 12);
COMMIT;
INSERT INTO p_t VALUES (9, 9);
SELECT id, v FROM p_t WHERE id IN (2, 9, 12) ORDER BY id;
SELECT pinned, lock_leaks FROM fpsketch_stats;

--
-- duplicate gid: PostgreSQL's error (42710) comes after fpsketch handed the
-- transaction's keys over; they must all come back
--
BEGIN;
UPDATE p_t SET v = 300 WHERE id = 3;
PREPARE TRANSACTION 'p_dup';
BEGIN;
UPDATE p_t SET v = 400 WHERE id = 4;
INSERT INTO p_t VALUES (13, 13);
PREPARE TRANSACTION 'p_dup';
\echo :LAST_ERROR_SQLSTATE
-- the second transaction rolled back; only the first is prepared
SELECT gid, locked_keys FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
SELECT id, v FROM p_t WHERE id IN (4, 13) ORDER BY id;
SELECT count(*) AS prepared_files FROM pg_ls_dir('pg_fpsketch/prepared') AS f;
-- its rows are writable at once
UPDATE p_t SET v = 401 WHERE id = 4;
INSERT INTO p_t VALUES (13, 13);
ROLLBACK PREPARED 'p_dup';
SELECT count(*) AS prepared_rows FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
UPDATE p_t SET v = 301 WHERE id = 3;
SELECT id, v FROM p_t WHERE id IN (3, 4, 13) ORDER BY id;

--
-- COMMIT PREPARED and ROLLBACK PREPARED of an unknown gid (42704)
--
COMMIT PREPARED 'p_unknown';
\echo :LAST_ERROR_SQLSTATE
ROLLBACK PREPARED 'p_unknown';
\echo :LAST_ERROR_SQLSTATE
SELECT prepared_xacts, pinned, lock_leaks FROM fpsketch_stats;

--
-- a transaction that only read fpsketch tables holds nothing once prepared
--
BEGIN;
SELECT sum(v) FROM p_t WHERE id BETWEEN 1 AND 5;
UPDATE p_heap SET v = 2 WHERE id = 1;
PREPARE TRANSACTION 'p_read_only';
SELECT gid FROM pg_prepared_xacts;
SELECT count(*) AS prepared_rows FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned FROM fpsketch_stats;
-- the rows it read are writable (it locked nothing)
UPDATE p_t SET v = v + 1 WHERE id = 5;
COMMIT PREPARED 'p_read_only';
SELECT v FROM p_heap;

--
-- no free prepared-transaction slot (max_prepared_transactions = 4): the
-- fifth PREPARE fails, and its keys come back.  fpsketch's own slots run out
-- first, and it reports what PostgreSQL would, with PostgreSQL's SQLSTATE
-- (53200).
BEGIN; UPDATE p_t SET v = v + 1 WHERE id = 1; PREPARE TRANSACTION 'p_slot1';
BEGIN; UPDATE p_t SET v = v + 1 WHERE id = 2; PREPARE TRANSACTION 'p_slot2';
BEGIN; UPDATE p_t SET v = v + 1 WHERE id = 3; PREPARE TRANSACTION 'p_slot3';
BEGIN; UPDATE p_t SET v = v + 1 WHERE id = 4; PREPARE TRANSACTION 'p_slot4';
BEGIN;
UPDATE p_t SET v = v + 1 WHERE id = 6;
PREPARE TRANSACTION 'p_slot5';
\echo :LAST_ERROR_SQLSTATE
SELECT gid, locked_keys FROM fpsketch_prepared_xacts ORDER BY gid;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
UPDATE p_t SET v = v + 1 WHERE id = 6;
COMMIT PREPARED 'p_slot1';
ROLLBACK PREPARED 'p_slot2';
COMMIT PREPARED 'p_slot3';
ROLLBACK PREPARED 'p_slot4';
SELECT id, v FROM p_t WHERE id IN (1, 2, 3, 4, 6) ORDER BY id;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;

-- the same with PostgreSQL's slots taken by transactions that hold nothing
-- in fpsketch: fpsketch reserves a slot of its own and writes its file, then
-- PostgreSQL refuses the PREPARE (53200); the slot and keys come back
INSERT INTO p_heap SELECT g, 0 FROM generate_series(2, 5) g;
BEGIN; UPDATE p_heap SET v = 1 WHERE id = 2; PREPARE TRANSACTION 'p_heap2';
BEGIN; UPDATE p_heap SET v = 1 WHERE id = 3; PREPARE TRANSACTION 'p_heap3';
BEGIN; UPDATE p_heap SET v = 1 WHERE id = 4; PREPARE TRANSACTION 'p_heap4';
BEGIN; UPDATE p_heap SET v = 1 WHERE id = 5; PREPARE TRANSACTION 'p_heap5';
BEGIN;
UPDATE p_t SET v = v + 1 WHERE id = 7;
INSERT INTO p_t VALUES (14, 14);
PREPARE TRANSACTION 'p_slot6';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS prepared_rows FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
SELECT count(*) AS prepared_files FROM pg_ls_dir('pg_fpsketch/prepared') AS f;
UPDATE p_t SET v = v + 1 WHERE id = 7;
INSERT INTO p_t VALUES (14, 14);
COMMIT PREPARED 'p_heap2';
COMMIT PREPARED 'p_heap3';
COMMIT PREPARED 'p_heap4';
COMMIT PREPARED 'p_heap5';
SELECT id, v FROM p_t WHERE id IN (7, 14) ORDER BY id;

--
-- fpsketch.max_prepared_keys (1000 on the test cluster, scripts/cluster.sh):
-- a PREPARE needing more keys than are free fails with 53400 and leaves
-- nothing behind.  p_big's transactions keep per-row keys: the pin budget
-- per transaction is far above 1100 (no write escalation), and reads
-- escalate only past 5000 rows here (a read of the relation's key would
-- meet every prepared writer of p_big).
--
SHOW fpsketch.max_prepared_keys;
SET fpsketch.escalation_threshold = 5000;
CREATE TABLE p_big (id int PRIMARY KEY, v int NOT NULL) USING fpsketch WITH (fillfactor = 50);
INSERT INTO p_big SELECT g, 0 FROM generate_series(1, 1200) g;
-- one that fits, prepared first, keeps its keys
BEGIN;
UPDATE p_big SET v = 1 WHERE id <= 100;
PREPARE TRANSACTION 'p_fits';
SELECT gid, keys, locked_keys FROM fpsketch_prepared_xacts;
-- 1100 keys alone exceed the limit
BEGIN;
UPDATE p_big SET v = 2 WHERE id > 100;
SELECT pinned, escalations, write_escalations FROM fpsketch_stats;
PREPARE TRANSACTION 'p_too_big';
\echo :LAST_ERROR_SQLSTATE
SELECT gid FROM pg_prepared_xacts ORDER BY gid;
SELECT gid, keys, locked_keys FROM fpsketch_prepared_xacts;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
-- 950 keys fit the limit alone, but not beside p_fits
BEGIN;
UPDATE p_big SET v = 3 WHERE id BETWEEN 101 AND 1050;
PREPARE TRANSACTION 'p_no_room';
\echo :LAST_ERROR_SQLSTATE
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
-- what is free still takes a transaction that fits
BEGIN;
UPDATE p_big SET v = 4 WHERE id BETWEEN 1101 AND 1150;
PREPARE TRANSACTION 'p_fits_too';
SELECT gid, keys, locked_keys FROM fpsketch_prepared_xacts ORDER BY gid;
COMMIT PREPARED 'p_fits';
COMMIT PREPARED 'p_fits_too';
SELECT v, count(*) FROM p_big GROUP BY v ORDER BY v;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;
-- the rows the refused transactions wrote are writable at once, and the
-- same transaction commits without PREPARE
BEGIN;
UPDATE p_big SET v = 2 WHERE id > 100;
COMMIT;
SELECT v, count(*) FROM p_big GROUP BY v ORDER BY v;
SELECT prepared_xacts, prepared_keys, pinned, lock_leaks FROM fpsketch_stats;

SELECT prepares, prepared_commits, prepared_rollbacks FROM fpsketch_stats;
-- nothing prepared is left
SELECT gid FROM pg_prepared_xacts;
SELECT count(*) AS prepared_files FROM pg_ls_dir('pg_fpsketch/prepared') AS f;
DROP TABLE p_big;
DROP TABLE p_heap;
DROP TABLE p_t;
