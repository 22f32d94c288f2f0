--
-- 02_dml: INSERT / UPDATE / DELETE / COPY / ON CONFLICT / MERGE on fpsketch
-- tables keyed by an int, a text, a composite primary key and by TID.
--

CREATE TABLE dml_a (
    id int PRIMARY KEY,
    k int NOT NULL,
    payload text
) USING fpsketch WITH (fillfactor = 50);
CREATE INDEX dml_a_k ON dml_a (k);

INSERT INTO dml_a VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three');
INSERT INTO dml_a SELECT g, g * 10, 'gen' || g FROM generate_series(4, 10) g;
INSERT INTO dml_a VALUES (11, 110, 'eleven') RETURNING *;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_a ORDER BY id;

-- HOT update (no indexed column changes): same page, counted as HOT
BEGIN;
SELECT ctid AS old_ctid FROM dml_a WHERE id = 2 \gset
UPDATE dml_a SET payload = 'two, hot' WHERE id = 2;
SELECT ctid <> :'old_ctid' AS moved,
       (ctid::text::point)[0] = (:'old_ctid'::text::point)[0] AS same_page
FROM dml_a WHERE id = 2;
SELECT pg_stat_get_xact_tuples_updated('dml_a'::regclass) AS updated,
       pg_stat_get_xact_tuples_hot_updated('dml_a'::regclass) AS hot_updated;
-- non-HOT update (an indexed column changes)
UPDATE dml_a SET k = 21 WHERE id = 2;
SELECT pg_stat_get_xact_tuples_updated('dml_a'::regclass) AS updated,
       pg_stat_get_xact_tuples_hot_updated('dml_a'::regclass) AS hot_updated;
-- a primary key change is a non-HOT update too
UPDATE dml_a SET id = 12 WHERE id = 11;
SELECT pg_stat_get_xact_tuples_updated('dml_a'::regclass) AS updated,
       pg_stat_get_xact_tuples_hot_updated('dml_a'::regclass) AS hot_updated;
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_a WHERE id IN (2, 11, 12) ORDER BY id;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, payload FROM dml_a WHERE k = 21;
SELECT id, payload FROM dml_a WHERE k = 20;
SELECT id, k FROM dml_a WHERE id = 12;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- a chain of HOT updates of one row, then VACUUM prunes it
UPDATE dml_a SET payload = 'v1' WHERE id = 3;
UPDATE dml_a SET payload = 'v2' WHERE id = 3;
UPDATE dml_a SET payload = payload || '+v3' WHERE id = 3;
VACUUM dml_a;
SELECT * FROM dml_a WHERE id = 3;

-- multi-row UPDATE, UPDATE ... FROM, DELETE ... USING, RETURNING
UPDATE dml_a SET k = k + 1 WHERE id BETWEEN 4 AND 6 RETURNING id, k;
CREATE TABLE dml_src (id int, delta int) USING fpsketch;
INSERT INTO dml_src VALUES (7, 100), (8, 200);
UPDATE dml_a a SET k = a.k + s.delta FROM dml_src s WHERE s.id = a.id;
DELETE FROM dml_a a USING dml_src s WHERE s.id = a.id AND s.delta = 200 RETURNING a.*;
DELETE FROM dml_a WHERE id = 9;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_a ORDER BY id;

-- SELECT ... FOR UPDATE / FOR SHARE lock rows through the AM
BEGIN;
SELECT id, k FROM dml_a WHERE id = 1 FOR UPDATE;
SELECT id, k FROM dml_a WHERE id IN (4, 5) ORDER BY id FOR SHARE;
SELECT id FROM dml_a WHERE id = 10 FOR NO KEY UPDATE SKIP LOCKED;
UPDATE dml_a SET payload = 'locked then updated' WHERE id = 1;
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_a WHERE id = 1;

-- TID scans, TID range scans, bitmap scans and TABLESAMPLE read through the AM
SELECT ctid AS tid1 FROM dml_a WHERE id = 1 \gset
SELECT id FROM dml_a WHERE ctid = :'tid1';
SELECT count(*) FROM dml_a WHERE ctid >= '(0,0)' AND ctid < '(1000,0)';
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM dml_a WHERE k IN (10, 30);
SELECT id FROM dml_a WHERE k IN (10, 30) ORDER BY id;
RESET enable_seqscan;
RESET enable_indexscan;
SELECT count(*) FROM dml_a TABLESAMPLE SYSTEM (100);
SELECT pinned FROM fpsketch_stats;

-- COPY FROM STDIN (multi-insert path) and COPY TO
COPY dml_a (id, k, payload) FROM STDIN;
100	1000	copied 100
101	1010	copied 101
102	1020	\N
\.
COPY dml_a FROM STDIN WITH (FORMAT csv);
103,1030,"csv, with comma"
104,1040,csv
\.
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_a WHERE id >= 100 ORDER BY id;
COPY (SELECT id, payload FROM dml_a WHERE id >= 100 ORDER BY id) TO STDOUT;
-- a COPY that fails midway leaves nothing behind
COPY dml_a FROM STDIN;
105	1050	ok
100	1000	duplicate
\.
SELECT count(*) FROM dml_a WHERE id >= 100;
SELECT pinned FROM fpsketch_stats;

-- INSERT ... ON CONFLICT
INSERT INTO dml_a VALUES (1, 0, 'ignored') ON CONFLICT DO NOTHING;
INSERT INTO dml_a VALUES (1, 0, 'ignored'), (200, 2000, 'new 200')
    ON CONFLICT (id) DO NOTHING RETURNING *;
INSERT INTO dml_a VALUES (1, 11, 'upserted'), (201, 2010, 'new 201')
    ON CONFLICT (id) DO UPDATE SET k = excluded.k, payload = excluded.payload
    RETURNING *, (xmax = 0) AS inserted;
INSERT INTO dml_a VALUES (2, 0, 'not applied')
    ON CONFLICT (id) DO UPDATE SET payload = excluded.payload WHERE dml_a.k = -1
    RETURNING *;
-- the same key twice in one command is refused, as for heap
INSERT INTO dml_a VALUES (300, 1, 'a'), (300, 2, 'b')
    ON CONFLICT (id) DO UPDATE SET payload = excluded.payload;
-- upsert in a loop, in one transaction
BEGIN;
INSERT INTO dml_a SELECT 400 + g % 3, g, 'loop ' || g FROM generate_series(1, 3) g
    ON CONFLICT (id) DO UPDATE SET k = dml_a.k + excluded.k;
INSERT INTO dml_a SELECT 400 + g % 3, g, 'loop ' || g FROM generate_series(1, 3) g
    ON CONFLICT (id) DO UPDATE SET k = dml_a.k + excluded.k;
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_a WHERE id IN (1, 2, 200, 201, 300) OR id >= 400 ORDER BY id;

-- MERGE
CREATE TABLE dml_m (id int PRIMARY KEY, v int) USING fpsketch;
INSERT INTO dml_m VALUES (1, 1), (2, 2), (3, 3);
MERGE INTO dml_m m
USING (VALUES (2, 20), (3, NULL), (4, 40)) AS s(id, v) ON m.id = s.id
WHEN MATCHED AND s.v IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET v = s.v
WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v);
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_m ORDER BY id;

-- a text primary key (hashed with its collation's hash function)
CREATE TABLE dml_text (name text PRIMARY KEY, n int) USING fpsketch;
INSERT INTO dml_text VALUES ('alpha', 1), ('beta', 2), ('gamma', 3), (repeat('long', 100), 4);
UPDATE dml_text SET n = n * 10 WHERE name = 'beta';
UPDATE dml_text SET name = 'delta' WHERE name = 'gamma';
DELETE FROM dml_text WHERE name = 'alpha';
INSERT INTO dml_text VALUES ('beta', 0) ON CONFLICT (name) DO UPDATE SET n = dml_text.n + 1;
INSERT INTO dml_text VALUES ('alpha', 100);
SELECT pinned FROM fpsketch_stats;
SELECT left(name, 12) AS name, n FROM dml_text ORDER BY name;

-- a composite primary key
CREATE TABLE dml_comp (
    w int,
    d int,
    name varchar(10),
    qty numeric,
    PRIMARY KEY (w, d, name)
) USING fpsketch;
INSERT INTO dml_comp SELECT w, d, 'n' || (w + d), w * d
FROM generate_series(1, 3) w, generate_series(1, 3) d;
UPDATE dml_comp SET qty = qty + 0.5 WHERE w = 2;
UPDATE dml_comp SET d = 9 WHERE w = 3 AND d = 3 AND name = 'n6';
DELETE FROM dml_comp WHERE w = 1 AND d = 2;
INSERT INTO dml_comp VALUES (1, 1, 'n2', 0) ON CONFLICT (w, d, name) DO UPDATE SET qty = -1;
INSERT INTO dml_comp VALUES (2, 2, 'n4', 7);
SELECT pinned FROM fpsketch_stats;
SELECT * FROM dml_comp ORDER BY w, d, name;

-- no primary key: rows are identified by TID, an UPDATE moves the key
CREATE TABLE dml_nopk (a int, b text) USING fpsketch;
INSERT INTO dml_nopk SELECT g % 4, 'b' || g FROM generate_series(1, 12) g;
UPDATE dml_nopk SET b = b || '!' WHERE a = 1;
UPDATE dml_nopk SET a = a + 10 WHERE a = 2 RETURNING a, b;
DELETE FROM dml_nopk WHERE a = 3;
UPDATE dml_nopk SET b = 'again' WHERE b = 'b1!';
SELECT pinned FROM fpsketch_stats;
SELECT a, b FROM dml_nopk ORDER BY a, b;
-- duplicates are fine without a key
INSERT INTO dml_nopk VALUES (0, 'dup'), (0, 'dup');
DELETE FROM dml_nopk WHERE ctid = (SELECT min(ctid) FROM dml_nopk WHERE b = 'dup');
SELECT a, b, count(*) FROM dml_nopk WHERE b = 'dup' GROUP BY a, b;
VACUUM FULL dml_nopk;
UPDATE dml_nopk SET b = 'after vacuum full' WHERE a = 0 AND b = 'dup';
SELECT a, b FROM dml_nopk ORDER BY a, b;
SELECT pinned FROM fpsketch_stats;

-- replica identity index instead of a primary key
CREATE TABLE dml_ri (id int NOT NULL, v text) USING fpsketch;
CREATE UNIQUE INDEX dml_ri_id ON dml_ri (id);
ALTER TABLE dml_ri REPLICA IDENTITY USING INDEX dml_ri_id;
INSERT INTO dml_ri VALUES (1, 'a'), (2, 'b');
UPDATE dml_ri SET v = 'bb' WHERE id = 2;
DELETE FROM dml_ri WHERE id = 1;
SELECT * FROM dml_ri;
SELECT pinned FROM fpsketch_stats;

-- cursors: a WITH HOLD cursor is materialized while its transaction
-- commits, so every row it returns later was read (and pinned) by it
SELECT count(*) AS dml_a_rows FROM dml_a \gset
SELECT fpsketch_stats_reset();
BEGIN;
DECLARE h CURSOR WITH HOLD FOR SELECT id, k FROM dml_a ORDER BY id;
FETCH 2 FROM h;
COMMIT;
SELECT increfs = :dml_a_rows + phantom_relation_reads + phantom_prefix_reads AS all_rows_read,
       pinned, read_only_commits FROM fpsketch_stats;
FETCH ALL FROM h;
CLOSE h;
SELECT increfs = :dml_a_rows + phantom_relation_reads + phantom_prefix_reads AS no_more_reads,
       pinned FROM fpsketch_stats;
BEGIN;
DECLARE u CURSOR FOR SELECT id, k FROM dml_a WHERE id >= 400 ORDER BY id FOR UPDATE;
FETCH 1 FROM u;
UPDATE dml_a SET payload = 'current of' WHERE CURRENT OF u;
FETCH 1 FROM u;
DELETE FROM dml_a WHERE CURRENT OF u;
COMMIT;
SELECT * FROM dml_a WHERE id >= 400 ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- COPY FREEZE into a table created in the same transaction
BEGIN;
CREATE TABLE dml_frozen (id int PRIMARY KEY, v text) USING fpsketch;
COPY dml_frozen FROM STDIN WITH (FREEZE);
1	frozen one
2	frozen two
\.
COMMIT;
UPDATE dml_frozen SET v = 'thawed' WHERE id = 2;
SELECT * FROM dml_frozen ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- a failed statement in a transaction block, then ROLLBACK
BEGIN;
UPDATE dml_a SET payload = 'doomed' WHERE id = 1;
SELECT 1 / 0;
ROLLBACK;
SELECT pinned FROM fpsketch_stats;
SELECT payload FROM dml_a WHERE id = 1;

DROP TABLE dml_a, dml_src, dml_m, dml_text, dml_comp, dml_nopk, dml_ri, dml_frozen;
SELECT pinned FROM fpsketch_stats;
