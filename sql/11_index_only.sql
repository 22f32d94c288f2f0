--
-- 11_index_only: no plan reads an fpsketch table through an index-only
-- scan, which answers from the index and the visibility map without the
-- access method seeing the read.  07_planner checks the scans that return
-- columns from the index; these are the plans that need no column of the
-- table at all, which PostgreSQL answers from any index, whatever it can
-- return.  Each plan is made twice, on heap tables (the positive control:
-- index-only scans) and on fpsketch tables of the same names.
--

CREATE SCHEMA io_heap;
CREATE SCHEMA io_fps;

SET search_path = io_heap, public;
SET default_table_access_method = heap;
CREATE TABLE io (id int PRIMARY KEY, grp int NOT NULL, flag bool NOT NULL);
CREATE INDEX io_flag ON io (id) WHERE flag;
CREATE TABLE io_part (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE io_part_a PARTITION OF io_part FOR VALUES FROM (0) TO (500);
CREATE TABLE io_part_b PARTITION OF io_part FOR VALUES FROM (500) TO (1000);
CREATE TABLE io_inh (id int PRIMARY KEY);
CREATE TABLE io_inh_child (id int PRIMARY KEY) INHERITS (io_inh);
CREATE MATERIALIZED VIEW io_mv AS SELECT g AS id FROM generate_series(1, 1000) g;
CREATE UNIQUE INDEX io_mv_id ON io_mv (id);

SET search_path = io_fps, public;
SET default_table_access_method = fpsketch;
CREATE TABLE io (id int PRIMARY KEY, grp int NOT NULL, flag bool NOT NULL);
CREATE INDEX io_flag ON io (id) WHERE flag;
-- a partitioned table's partitions may differ: b stays heap
CREATE TABLE io_part (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE io_part_a PARTITION OF io_part FOR VALUES FROM (0) TO (500);
CREATE TABLE io_part_b PARTITION OF io_part FOR VALUES FROM (500) TO (1000) USING heap;
CREATE TABLE io_inh (id int PRIMARY KEY);
CREATE TABLE io_inh_child (id int PRIMARY KEY) INHERITS (io_inh);
CREATE MATERIALIZED VIEW io_mv AS SELECT g AS id FROM generate_series(1, 1000) g;
CREATE UNIQUE INDEX io_mv_id ON io_mv (id);

RESET default_table_access_method;
SET search_path = public;
-- a heap table both plans join
CREATE TABLE io_other (id int PRIMARY KEY) USING heap;
INSERT INTO io_other SELECT g FROM generate_series(1, 10) g;

SELECT n.nspname, c.relname, a.amname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_am a ON a.oid = c.relam
WHERE n.nspname IN ('io_heap', 'io_fps') AND c.relkind IN ('r', 'm')
ORDER BY 1, 2;

INSERT INTO io_heap.io SELECT g, g % 10, g % 2 = 0 FROM generate_series(1, 1000) g;
INSERT INTO io_fps.io SELECT * FROM io_heap.io;
INSERT INTO io_heap.io_part SELECT g FROM generate_series(0, 999) g;
INSERT INTO io_fps.io_part SELECT g FROM generate_series(0, 999) g;
INSERT INTO io_heap.io_inh SELECT g FROM generate_series(1, 500) g;
INSERT INTO io_heap.io_inh_child SELECT g FROM generate_series(501, 1000) g;
INSERT INTO io_fps.io_inh SELECT g FROM generate_series(1, 500) g;
INSERT INTO io_fps.io_inh_child SELECT g FROM generate_series(501, 1000) g;
-- all-visible, so that an index-only scan would not visit the table at all
VACUUM ANALYZE io_heap.io, io_heap.io_part, io_heap.io_inh, io_heap.io_inh_child,
  io_heap.io_mv, io_fps.io, io_fps.io_part, io_fps.io_inh, io_fps.io_inh_child,
  io_fps.io_mv, io_other;

-- The scan nodes of a query's plan on the heap tables and on the fpsketch
-- tables, one per line.
CREATE FUNCTION io_scans(query text, OUT heap text, OUT fpsketch text)
LANGUAGE plpgsql AS $$
DECLARE
	schema		text;
	line		text;
	scans		text[];
BEGIN
	FOREACH schema IN ARRAY ARRAY['io_heap', 'io_fps'] LOOP
		PERFORM set_config('search_path', schema || ', public', true);
		scans := '{}';
		FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
			IF line ~ 'Scan' THEN
				scans := scans || regexp_replace(line, '^[ >-]*', '');
			END IF;
		END LOOP;
		IF schema = 'io_heap' THEN
			heap := array_to_string(scans, E'\n');
		ELSE
			fpsketch := array_to_string(scans, E'\n');
		END IF;
	END LOOP;
END
$$;

SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- count(*), the reviewer's write skew (specs/index-only-count.spec)
SELECT * FROM io_scans('SELECT count(*) FROM io');
SET search_path = io_fps, public;
EXPLAIN (COSTS OFF) SELECT count(*) FROM io;
SET search_path = public;
-- EXISTS, and a select list without columns
SELECT * FROM io_scans('SELECT EXISTS (SELECT 1 FROM io)');
SELECT * FROM io_scans('SELECT 1 FROM io LIMIT 1');
-- a WHERE clause the partial index's predicate implies needs no column
SELECT * FROM io_scans('SELECT count(*) FROM io WHERE flag');
SELECT * FROM io_scans('SELECT 1 FROM io WHERE flag');
-- a filter without the table's columns (a one-time filter)
SELECT * FROM io_scans('SELECT count(*) FROM io WHERE now() > ''2000-01-01''');
-- joins whose fpsketch side needs no column: io_other, heap in both plans,
-- keeps its index-only scan in the same query
SELECT * FROM io_scans('SELECT count(*) FROM io_other o, io');
SELECT * FROM io_scans('SELECT o.id FROM io_other o WHERE EXISTS (SELECT 1 FROM io WHERE o.id > 5)');
SELECT * FROM io_scans('SELECT o.id, (SELECT count(*) FROM io WHERE o.id > 5) FROM io_other o');
SELECT * FROM io_scans('SELECT o.id FROM io_other o, LATERAL (SELECT 1 FROM io WHERE o.id > 5 LIMIT 1) s');
-- parameterized index scans inside nested loops (the join column is needed)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT * FROM io_scans('SELECT count(*) FROM io_other o JOIN io ON io.id = o.id');
SELECT * FROM io_scans('SELECT count(*) FROM io_other o WHERE EXISTS (SELECT 1 FROM io WHERE io.id = o.id)');
RESET enable_hashjoin;
RESET enable_mergejoin;
-- partitions (io_part_b is heap in both plans), inheritance children and
-- UNION ALL members
SELECT * FROM io_scans('SELECT count(*) FROM io_part');
SELECT * FROM io_scans('SELECT count(*) FROM io_inh');
SELECT * FROM io_scans('SELECT count(*) FROM (SELECT 1 FROM io UNION ALL SELECT 1 FROM io_inh_child) s');
-- MIN/MAX become ORDER BY ... LIMIT 1 index scans, planned again
SELECT * FROM io_scans('SELECT min(id), max(id) FROM io');
SELECT * FROM io_scans('SELECT max(id) FROM io_part');
-- CTEs, window functions, and reads in writing statements
SELECT * FROM io_scans('WITH c AS MATERIALIZED (SELECT 1 FROM io) SELECT count(*) FROM c');
SELECT * FROM io_scans('SELECT count(*) OVER () FROM io LIMIT 1');
SELECT * FROM io_scans('UPDATE io_other SET id = id WHERE EXISTS (SELECT 1 FROM io)');
-- a materialized view of access method fpsketch (untracked, like its
-- other reads; no index-only scan either)
SELECT * FROM io_scans('SELECT count(*) FROM io_mv');
-- a generic plan
SET search_path = io_fps, public;
PREPARE io_generic(int) AS SELECT count(*) FROM io WHERE $1 > 0;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE io_generic(1);
EXECUTE io_generic(1);
RESET plan_cache_mode;
DEALLOCATE io_generic;
SET search_path = public;
-- the planner's own setting is untouched
SHOW enable_indexonlyscan;

-- the same answers as heap
SELECT (SELECT count(*) FROM io_heap.io) AS heap, (SELECT count(*) FROM io_fps.io) AS fpsketch;
SELECT (SELECT count(*) FROM io_heap.io WHERE flag) AS heap,
       (SELECT count(*) FROM io_fps.io WHERE flag) AS fpsketch;
SELECT (SELECT count(*) FROM io_heap.io_part) AS heap,
       (SELECT count(*) FROM io_fps.io_part) AS fpsketch;
SELECT min(id), max(id) FROM io_fps.io;

-- and the count reaches the access method: a read of the relation key
SELECT fpsketch_stats_reset();
BEGIN;
SELECT count(*) FROM io_fps.io;
SELECT phantom_relation_reads FROM fpsketch_stats;
COMMIT;

RESET enable_seqscan;
RESET enable_bitmapscan;
DROP FUNCTION io_scans(text);
DROP TABLE io_other;
SET client_min_messages = warning;
DROP SCHEMA io_heap, io_fps CASCADE;
RESET client_min_messages;
SELECT pinned FROM fpsketch_stats;
