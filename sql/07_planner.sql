--
-- 07_planner: reads that would bypass the access method are planned away
-- for fpsketch tables: no parallel plans (workers would read outside the
-- leader's read set) and no index-only scans (they answer from the index
-- for all-visible pages).  Each check has a heap positive control.
--

CREATE TABLE pl_fps (id int PRIMARY KEY, grp int, pad text) USING fpsketch;
CREATE TABLE pl_heap (id int PRIMARY KEY, grp int, pad text) USING heap;
INSERT INTO pl_fps SELECT g, g % 10, repeat('p', 50) FROM generate_series(1, 2000) g;
INSERT INTO pl_heap SELECT g, g % 10, repeat('p', 50) FROM generate_series(1, 2000) g;
VACUUM ANALYZE pl_fps;
VACUUM ANALYZE pl_heap;

-- parallel plans, made as cheap as possible
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- positive control: heap gets a Gather
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_heap;
EXPLAIN (COSTS OFF) SELECT grp, count(*) FROM pl_heap GROUP BY grp;
-- fpsketch does not
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_fps;
EXPLAIN (COSTS OFF) SELECT grp, count(*) FROM pl_fps GROUP BY grp;
SELECT count(*) FROM pl_fps;
SELECT grp, count(*) FROM pl_fps GROUP BY grp ORDER BY grp;
-- a join may still run the heap side in parallel, never the fpsketch side
EXPLAIN (COSTS OFF)
SELECT count(*) FROM pl_fps f JOIN pl_heap h ON f.id = h.id WHERE h.grp = 3;
SELECT count(*) FROM pl_fps f JOIN pl_heap h ON f.id = h.id WHERE h.grp = 3;
-- fpsketch tables in subqueries and CTEs stay out of parallel plans too
EXPLAIN (COSTS OFF)
SELECT count(*) FROM pl_heap h WHERE h.grp IN (SELECT grp FROM pl_fps WHERE id < 5);
SELECT count(*) FROM pl_heap h WHERE h.grp IN (SELECT grp FROM pl_fps WHERE id < 5);
-- ... and out of partitioned tables' parallel appends
CREATE TABLE pl_part (id int, grp int) PARTITION BY RANGE (id);
CREATE TABLE pl_part_fps PARTITION OF pl_part FOR VALUES FROM (0) TO (1000) USING fpsketch;
CREATE TABLE pl_part_heap PARTITION OF pl_part FOR VALUES FROM (1000) TO (2000) USING heap;
INSERT INTO pl_part SELECT g, g % 10 FROM generate_series(0, 1999) g;
VACUUM ANALYZE pl_part;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_part WHERE id >= 1000;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_part;
SELECT count(*) FROM pl_part;

-- force_parallel_mode adds a Gather only to parallel-safe plans
SET force_parallel_mode = on;
EXPLAIN (COSTS OFF) SELECT id FROM pl_heap WHERE id = 1;
EXPLAIN (COSTS OFF) SELECT id FROM pl_fps WHERE id = 1;
SELECT id, grp FROM pl_fps WHERE id = 1;
-- a function wrongly marked PARALLEL SAFE cannot smuggle a read of an
-- fpsketch table into a worker: the worker refuses it
CREATE FUNCTION pl_get(int) RETURNS int LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT grp FROM pl_fps WHERE id = $1 $$;
EXPLAIN (COSTS OFF) SELECT pl_get(7);
\set VERBOSITY terse
SELECT pl_get(7);
\set VERBOSITY default
RESET force_parallel_mode;
SELECT pl_get(7);
SELECT pinned FROM fpsketch_stats;
-- the same function in a parallel plan over a heap table: the error says
-- what to do (0A000 fails again on every retry, so never 40001) ...
-- (the workers, not the leader, must scan: the leader could finish first)
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_heap WHERE pl_get(id % 100 + 1) = 3;
\set SHOW_CONTEXT never
SELECT count(*) FROM pl_heap WHERE pl_get(id % 100 + 1) = 3;
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
-- ... and doing it keeps the function in the leader
ALTER FUNCTION pl_get(int) PARALLEL RESTRICTED;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_heap WHERE pl_get(id % 100 + 1) = 3;
SELECT count(*) FROM pl_heap WHERE pl_get(id % 100 + 1) = 3;
SELECT pinned FROM fpsketch_stats;
RESET parallel_leader_participation;

RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET min_parallel_index_scan_size;
RESET max_parallel_workers_per_gather;

-- index-only scans
SET enable_seqscan = off;
SET enable_bitmapscan = off;
-- positive control: heap answers from the index after VACUUM
EXPLAIN (COSTS OFF) SELECT id FROM pl_heap WHERE id = 5;
EXPLAIN (COSTS OFF) SELECT id FROM pl_heap WHERE id BETWEEN 5 AND 10;
-- fpsketch always visits the table
EXPLAIN (COSTS OFF) SELECT id FROM pl_fps WHERE id = 5;
EXPLAIN (COSTS OFF) SELECT id FROM pl_fps WHERE id BETWEEN 5 AND 10;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_fps WHERE id < 100;
-- a covering index is no exception
CREATE INDEX pl_fps_grp ON pl_fps (grp) INCLUDE (id);
EXPLAIN (COSTS OFF) SELECT id FROM pl_fps WHERE grp = 3;
SELECT count(*), sum(id) FROM pl_fps WHERE grp = 3;
-- and the read reaches the access method: one row pinned
SELECT fpsketch_stats_reset();
SELECT id FROM pl_fps WHERE id = 5;
SELECT increfs, read_only_commits FROM fpsketch_stats;
RESET enable_seqscan;
RESET enable_bitmapscan;

DROP TABLE pl_fps, pl_heap, pl_part;
DROP FUNCTION pl_get(int);
SELECT pinned FROM fpsketch_stats;

-- A sequential scan would read every row of a small hot table (and conflict
-- with every write to it): with an index that restricts the rows, fpsketch
-- plans the index scan even where the cost model prefers the sequential one
-- (heap, and fpsketch with fpsketch.prefer_index_scans = off).
CREATE TABLE pl_hot_heap (w int, id int, next int, pad text, PRIMARY KEY (w, id));
CREATE TABLE pl_hot (w int, id int, next int, pad text, PRIMARY KEY (w, id)) USING fpsketch;
INSERT INTO pl_hot_heap SELECT 1, g, 0, 'x' FROM generate_series(1, 10) g;
INSERT INTO pl_hot SELECT * FROM pl_hot_heap;
ANALYZE pl_hot_heap, pl_hot;
EXPLAIN (COSTS OFF) SELECT next FROM pl_hot_heap WHERE w = 1 AND id = 3 FOR UPDATE;
EXPLAIN (COSTS OFF) SELECT next FROM pl_hot WHERE w = 1 AND id = 3 FOR UPDATE;
EXPLAIN (COSTS OFF) UPDATE pl_hot SET next = next + 1 WHERE w = 1 AND id = 3;
-- no index restricts pad: the sequential scan stays
EXPLAIN (COSTS OFF) SELECT next FROM pl_hot WHERE pad = 'x';
SET fpsketch.prefer_index_scans = off;
EXPLAIN (COSTS OFF) SELECT next FROM pl_hot WHERE w = 1 AND id = 3 FOR UPDATE;
RESET fpsketch.prefer_index_scans;
DROP TABLE pl_hot_heap, pl_hot;
