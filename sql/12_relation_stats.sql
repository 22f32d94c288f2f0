--
-- 12_relation_stats: fpsketch_relation_stats and fpsketch_conflict_columns,
-- the per-relation counters (relation_stats.c).
--
-- Like 05_stats, this suite runs alone, so a known workload after a reset
-- gives exact numbers, and each table's row shows only its own: a count
-- given to the wrong table shows twice here.  Aborts whose failed key names
-- a column group need two sessions: specs/relation-stats.spec.
--

SHOW fpsketch.max_tracked_relations;

-- every column, by name and type
SELECT attname, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = 'fpsketch_relation_stats'::regclass AND attnum > 0
ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = 'fpsketch_conflict_columns'::regclass AND attnum > 0
ORDER BY attnum;

CREATE TABLE rs_a (id int PRIMARY KEY, hot int NOT NULL, cold int NOT NULL) USING fpsketch;
CREATE TABLE rs_b (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
CREATE TABLE rs_heap (id int PRIMARY KEY) USING heap;
INSERT INTO rs_a SELECT g, 0, 0 FROM generate_series(1, 10) g;
INSERT INTO rs_b SELECT g, 0 FROM generate_series(1, 10) g;
INSERT INTO rs_heap SELECT g FROM generate_series(1, 10) g;
SELECT fpsketch_set_column_group('rs_a', 'hot', ARRAY['hot']);
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- after a reset no relation is counted
SELECT fpsketch_stats_reset();
SELECT count(*) FROM fpsketch_relation_stats;

-- one transaction reads 3 rows of rs_a (by primary key: no predicate key,
-- as each lookup finds its row, am/point_lookup.c) and looks up 2 absent
-- ones (a predicate key each), reads 1 row of rs_b, and updates another row
-- of rs_b (a read by the UPDATE's scan, a write, the escalation key as a
-- predicate write)
BEGIN;
SELECT hot FROM rs_a WHERE id = 1;
SELECT hot FROM rs_a WHERE id = 2;
SELECT hot, cold FROM rs_a WHERE id = 3;
SELECT hot FROM rs_a WHERE id = 98;
SELECT hot FROM rs_a WHERE id = 99;
SELECT v FROM rs_b WHERE id = 1;
UPDATE rs_b SET v = v + 1 WHERE id = 2;
COMMIT;
SELECT relname, relations, row_reads, row_writes, predicate_reads, predicate_writes,
       commits, rollbacks, aborts, aborts_by_group, column_groups
FROM fpsketch_relation_stats ORDER BY relname;

-- a rolled-back transaction counts its reads and writes, and a rollback
-- for each relation it touched
SELECT fpsketch_stats_reset();
BEGIN;
SELECT v FROM rs_b WHERE id = 5;
SELECT v FROM rs_b WHERE id = 50;
INSERT INTO rs_a VALUES (11, 0, 0);
ROLLBACK;
SELECT relname, row_reads, row_writes, predicate_reads, predicate_writes, commits, rollbacks
FROM fpsketch_relation_stats ORDER BY relname;

-- reads at a timestamp (an autocommit SELECT) count as reads; heap tables,
-- temporary tables and statements on no fpsketch table count nothing
SELECT fpsketch_stats_reset();
SELECT count(*) FROM rs_b WHERE id BETWEEN 3 AND 6;
SELECT count(*) FROM rs_heap WHERE id = 1;
CREATE TEMP TABLE rs_temp (id int) USING fpsketch;
INSERT INTO rs_temp VALUES (1);
SELECT relname, row_reads, row_writes, predicate_reads, commits, rollbacks
FROM fpsketch_relation_stats ORDER BY relname;

-- a known abort on rs_a, in one session: a SELECT that calls a STABLE
-- function is guessed read-only and reads rs_b at a timestamp; the VOLATILE
-- function it calls then updates rs_a: 40001 (aborts_read_only_guess),
-- counted for rs_a, which the write would have changed, and not for rs_b,
-- which the transaction only read.  (The session guesses no more.)
CREATE FUNCTION rs_bump(k int) RETURNS int VOLATILE LANGUAGE plpgsql AS $$
BEGIN
  UPDATE rs_a SET cold = cold + 1 WHERE id = k;
  RETURN k;
END $$;
CREATE FUNCTION rs_stable_bump(k int) RETURNS int STABLE LANGUAGE plpgsql AS $$
BEGIN RETURN rs_bump(k); END $$;
SELECT fpsketch_stats_reset();
SELECT rs_stable_bump(v + 1) FROM rs_b WHERE id = 7;
SELECT relname, row_reads, row_writes, commits, rollbacks, aborts,
       aborts_read_only_guess, aborts_by_group
FROM fpsketch_relation_stats ORDER BY relname;
SELECT aborts_read_only_guess FROM fpsketch_stats;
-- no group named (the write was refused before any key): no conflict columns
SELECT count(*) FROM fpsketch_conflict_columns;

-- a subtransaction that catches the 40001 does not lose its count: the
-- statement commits, and the abort stays counted for rs_a (in a new
-- session, which guesses again)
CREATE FUNCTION rs_try_bump(k int) RETURNS int STABLE LANGUAGE plpgsql AS $$
BEGIN
  RETURN rs_bump(k);
EXCEPTION WHEN serialization_failure THEN
  RETURN -1;
END $$;
\c -
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT fpsketch_stats_reset();
SELECT rs_try_bump(v + 1) FROM rs_b WHERE id = 8;
SELECT relname, row_reads, row_writes, commits, rollbacks, aborts, aborts_read_only_guess
FROM fpsketch_relation_stats ORDER BY relname;
SELECT cold FROM rs_a WHERE id = 1;

-- a dropped table's row goes with it (the sql_drop event trigger), also
-- when the transaction that drops it read it before; other rows stay
SELECT 'rs_b'::regclass::oid AS rs_b_oid \gset
BEGIN;
SELECT v FROM rs_b WHERE id = 9;
DROP TABLE rs_b;
COMMIT;
SELECT count(*) FROM fpsketch_relation_stats WHERE relid = :rs_b_oid;
SELECT relname FROM fpsketch_relation_stats;
-- nobody else may forget rows
CREATE ROLE regress_fps_relstats;
SET ROLE regress_fps_relstats;
SELECT fpsketch_relation_stats_forget(ARRAY['rs_a'::regclass::oid]);
RESET ROLE;
SELECT fpsketch_stats_reset();
SELECT count(*) FROM fpsketch_relation_stats;

-- everyone may read the views
SET ROLE regress_fps_relstats;
SELECT count(*) FROM fpsketch_relation_stats;
SELECT count(*) FROM fpsketch_conflict_columns;
RESET ROLE;
DROP ROLE regress_fps_relstats;

DROP TABLE rs_a, rs_heap;
DROP FUNCTION rs_bump(int), rs_stable_bump(int), rs_try_bump(int);
