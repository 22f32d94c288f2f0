--
-- 01_ddl: creating fpsketch tables and indexes, and the maintenance
-- commands that rewrite or reorganise their storage.
--
-- The FPSketch is cluster-wide; this suite runs alone, so "pinned" must be
-- back to 0 whenever no transaction is running.
--

-- the access method and its catalog entries
SELECT amname, amtype FROM pg_am WHERE amname = 'fpsketch';
SELECT obj_description(oid, 'pg_am') FROM pg_am WHERE amname = 'fpsketch';

CREATE TABLE ddl_a (
    id int PRIMARY KEY,
    code text UNIQUE,
    grp int NOT NULL,
    note text
) USING fpsketch;
CREATE INDEX ddl_a_grp ON ddl_a (grp);

SELECT c.relname, a.amname
FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam
WHERE c.relname LIKE 'ddl_a%'
ORDER BY c.relname;

INSERT INTO ddl_a SELECT g, 'c' || g, g % 3, NULL FROM generate_series(1, 20) g;
SELECT pinned FROM fpsketch_stats;
SELECT count(*), sum(id), count(DISTINCT code), sum(grp) FROM ddl_a;
SELECT * FROM ddl_a WHERE id = 7;
SELECT id FROM ddl_a WHERE code = 'c13';
SELECT pinned FROM fpsketch_stats;

-- unique and primary key violations
INSERT INTO ddl_a VALUES (1, 'new', 0, NULL);
INSERT INTO ddl_a VALUES (100, 'c1', 0, NULL);
SELECT pinned FROM fpsketch_stats;
SELECT count(*) FROM ddl_a;

-- CREATE INDEX and CREATE INDEX CONCURRENTLY
CREATE INDEX ddl_a_note ON ddl_a (note);
CREATE UNIQUE INDEX CONCURRENTLY ddl_a_grp_id ON ddl_a (grp, id);
CREATE INDEX CONCURRENTLY ddl_a_expr ON ddl_a ((id * 10));
SELECT indexrelid::regclass, indisvalid, indisready
FROM pg_index WHERE indrelid = 'ddl_a'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
SELECT pinned FROM fpsketch_stats;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ddl_a WHERE id * 10 = 50;
SELECT id, code FROM ddl_a WHERE id * 10 = 50;
SELECT id FROM ddl_a WHERE grp = 2 AND id = 5;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- a concurrently built unique index enforces uniqueness like any other
INSERT INTO ddl_a VALUES (21, 'c21', 1, NULL);
SELECT count(*) FROM ddl_a;

-- DDL inside a transaction block, with DML on the same table
BEGIN;
ALTER TABLE ddl_a ADD COLUMN extra int DEFAULT 42;
UPDATE ddl_a SET extra = id WHERE id <= 3;
CREATE INDEX ddl_a_extra ON ddl_a (extra);
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT id, extra FROM ddl_a WHERE id <= 5 ORDER BY id;
ALTER TABLE ddl_a DROP COLUMN extra;

-- VACUUM and ANALYZE
DELETE FROM ddl_a WHERE id > 15;
VACUUM ddl_a;
VACUUM (ANALYZE, VERBOSE false) ddl_a;
ANALYZE ddl_a;
SELECT reltuples FROM pg_class WHERE relname = 'ddl_a';
SELECT pinned FROM fpsketch_stats;
SELECT count(*), sum(id) FROM ddl_a;

-- VACUUM FULL and CLUSTER rewrite the storage (new relfilenode, same OID)
SELECT relfilenode AS fn_before, oid AS oid_before FROM pg_class WHERE relname = 'ddl_a' \gset
UPDATE ddl_a SET note = 'n' || id WHERE id % 2 = 0;
VACUUM FULL ddl_a;
SELECT relfilenode <> :fn_before AS new_filenode, oid = :oid_before AS same_oid
FROM pg_class WHERE relname = 'ddl_a';
SELECT pinned FROM fpsketch_stats;
SELECT id, code, grp, note FROM ddl_a ORDER BY id;

SELECT relfilenode AS fn_before FROM pg_class WHERE relname = 'ddl_a' \gset
CLUSTER ddl_a USING ddl_a_grp;
SELECT relfilenode <> :fn_before AS new_filenode FROM pg_class WHERE relname = 'ddl_a';
SELECT indisclustered FROM pg_index WHERE indexrelid = 'ddl_a_grp'::regclass;
-- physical order now follows grp
SELECT grp, count(*) FROM (SELECT grp, ctid FROM ddl_a ORDER BY ctid) s GROUP BY grp ORDER BY grp;
SELECT (array_agg(grp ORDER BY ctid))[1:5] AS first_five_grp FROM ddl_a;
CLUSTER ddl_a;
SELECT pinned FROM fpsketch_stats;
SELECT count(*), sum(id), string_agg(note, ',' ORDER BY id) FROM ddl_a;
SELECT * FROM ddl_a WHERE id = 4;
SELECT id FROM ddl_a WHERE code = 'c9';

-- REINDEX, plain and concurrent
REINDEX TABLE ddl_a;
REINDEX TABLE CONCURRENTLY ddl_a;
SELECT pinned FROM fpsketch_stats;
SELECT id FROM ddl_a WHERE code = 'c11';

-- TRUNCATE, also inside a transaction that then refills the table
TRUNCATE ddl_a;
SELECT count(*) FROM ddl_a;
BEGIN;
INSERT INTO ddl_a VALUES (1, 'one', 1, 'kept');
TRUNCATE ddl_a;
INSERT INTO ddl_a SELECT g, 'c' || g, g % 3, 'refill' FROM generate_series(1, 10) g;
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT count(*), min(note), max(note) FROM ddl_a;
BEGIN;
TRUNCATE ddl_a;
INSERT INTO ddl_a VALUES (99, 'c99', 0, 'rolled back');
ROLLBACK;
SELECT pinned FROM fpsketch_stats;
SELECT count(*), min(id), max(id) FROM ddl_a;

-- ALTER TABLE ... SET ACCESS METHOD heap, and back to fpsketch
SELECT oid AS ddl_a_oid FROM pg_class WHERE relname = 'ddl_a' \gset
ALTER TABLE ddl_a SET ACCESS METHOD heap;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'ddl_a';
SELECT count(*), sum(id), string_agg(code, ',' ORDER BY id) FROM ddl_a;
UPDATE ddl_a SET note = 'as heap' WHERE id = 2;
ALTER TABLE ddl_a SET ACCESS METHOD fpsketch;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'ddl_a';
SELECT oid = :ddl_a_oid AS same_oid FROM pg_class WHERE relname = 'ddl_a';
SELECT pinned FROM fpsketch_stats;
SELECT count(*), sum(id), string_agg(code, ',' ORDER BY id) FROM ddl_a;
SELECT * FROM ddl_a WHERE id = 2;
-- indexes were rebuilt and still enforce constraints
INSERT INTO ddl_a VALUES (3, 'dup', 0, NULL);
SELECT id FROM ddl_a WHERE code = 'c7';
UPDATE ddl_a SET note = 'fpsketch again' WHERE id = 2;
SELECT * FROM ddl_a WHERE id = 2;
SELECT pinned FROM fpsketch_stats;

-- the same round trip inside one transaction
BEGIN;
ALTER TABLE ddl_a SET ACCESS METHOD heap;
INSERT INTO ddl_a VALUES (50, 'c50', 2, 'heap in xact');
ALTER TABLE ddl_a SET ACCESS METHOD fpsketch;
INSERT INTO ddl_a VALUES (51, 'c51', 0, 'fpsketch in xact');
COMMIT;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'ddl_a';
SELECT id, note FROM ddl_a WHERE id >= 50 ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- default_table_access_method
SET default_table_access_method = fpsketch;
CREATE TABLE ddl_b (id int PRIMARY KEY, v int);
CREATE TABLE ddl_c AS SELECT g AS id, g * 2 AS v FROM generate_series(1, 5) g;
SELECT * INTO ddl_d FROM ddl_c WHERE id <= 2;
RESET default_table_access_method;
CREATE TABLE ddl_e (id int);
SELECT c.relname, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.relname IN ('ddl_b', 'ddl_c', 'ddl_d', 'ddl_e') ORDER BY 1;
INSERT INTO ddl_b SELECT id, v FROM ddl_c;
UPDATE ddl_b SET v = v + 1 WHERE id = 3;
DELETE FROM ddl_b WHERE id = 5;
SELECT * FROM ddl_b ORDER BY id;
SELECT * FROM ddl_d ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- CREATE TABLE ... (LIKE ...) does not copy the access method
CREATE TABLE ddl_f (LIKE ddl_a INCLUDING ALL);
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'ddl_f';
DROP TABLE ddl_f;

-- unlogged fpsketch tables
CREATE UNLOGGED TABLE ddl_u (id int PRIMARY KEY, v text) USING fpsketch;
INSERT INTO ddl_u VALUES (1, 'a'), (2, 'b');
UPDATE ddl_u SET v = 'bb' WHERE id = 2;
SELECT relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'ddl_u';
SELECT * FROM ddl_u ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- partitions may use fpsketch (the partitioned parent has no storage)
CREATE TABLE ddl_p (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE ddl_p1 PARTITION OF ddl_p FOR VALUES FROM (0) TO (100) USING fpsketch;
CREATE TABLE ddl_p2 PARTITION OF ddl_p FOR VALUES FROM (100) TO (200) USING heap;
INSERT INTO ddl_p SELECT g, 'p' || g FROM generate_series(95, 104) g;
UPDATE ddl_p SET id = id + 10, v = v || 'moved' WHERE id = 95;
UPDATE ddl_p SET id = id - 10, v = v || 'back' WHERE id = 103;
SELECT tableoid::regclass, id, v FROM ddl_p ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- DROP
DROP TABLE ddl_p, ddl_u, ddl_b, ddl_c, ddl_d, ddl_e;
DROP TABLE ddl_a;
SELECT pinned FROM fpsketch_stats;
