--
-- 09_alter_rewrite: ALTER TABLE forms that rewrite an fpsketch table.  The
-- rewrite scans the old storage with the old row descriptor while the
-- catalogs (and so the key columns) may already describe the new one.
--

CREATE TABLE alt_t (id int PRIMARY KEY, v text, n int) USING fpsketch;
INSERT INTO alt_t SELECT g, 'v' || g, g FROM generate_series(1, 10) g;

-- a volatile default forces a rewrite
ALTER TABLE alt_t ADD COLUMN r float8 DEFAULT random();
SELECT count(*), count(DISTINCT r) > 1 AS varied FROM alt_t;
ALTER TABLE alt_t DROP COLUMN r;

-- the type of a non-key column
ALTER TABLE alt_t ALTER COLUMN n TYPE bigint;
ALTER TABLE alt_t ALTER COLUMN n TYPE numeric USING n * 1.5;
SELECT id, n FROM alt_t WHERE id IN (1, 2) ORDER BY id;

-- the type of the primary key column
ALTER TABLE alt_t ALTER COLUMN id TYPE bigint;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'alt_t'::regclass AND attname = 'id';
UPDATE alt_t SET v = 'after type change' WHERE id = 3;
SELECT * FROM alt_t WHERE id = 3;

-- SET LOGGED / UNLOGGED rewrite too
ALTER TABLE alt_t SET UNLOGGED;
UPDATE alt_t SET v = 'unlogged' WHERE id = 4;
ALTER TABLE alt_t SET LOGGED;
SELECT relpersistence FROM pg_class WHERE relname = 'alt_t';
SELECT id, v FROM alt_t WHERE id IN (3, 4) ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- a primary key added on an existing column changes the key scheme without
-- a rewrite; so does dropping it
CREATE TABLE alt_addpk (a int NOT NULL, b text) USING fpsketch;
INSERT INTO alt_addpk SELECT g, 'b' FROM generate_series(1, 5) g;
ALTER TABLE alt_addpk ADD PRIMARY KEY (a);
UPDATE alt_addpk SET b = 'keyed' WHERE a = 2;
ALTER TABLE alt_addpk DROP CONSTRAINT alt_addpk_pkey;
UPDATE alt_addpk SET b = 'unkeyed' WHERE a = 3;
SELECT * FROM alt_addpk ORDER BY a;
SELECT pinned FROM fpsketch_stats;

-- a primary key added together with its (rewriting) column: the new key
-- column does not exist in the rows being rewritten
CREATE TABLE alt_nopk (a int, b text) USING fpsketch;
INSERT INTO alt_nopk SELECT g, 'b' || g FROM generate_series(1, 5) g;
ALTER TABLE alt_nopk ADD COLUMN id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
SELECT count(*), count(DISTINCT id), min(id), max(id) FROM alt_nopk;
UPDATE alt_nopk SET b = 'keyed' WHERE id = 1;
ALTER TABLE alt_nopk DROP CONSTRAINT alt_nopk_pkey;
UPDATE alt_nopk SET b = 'unkeyed' WHERE id = 2;
SELECT id, b FROM alt_nopk WHERE id <= 2 ORDER BY id;
SELECT pinned FROM fpsketch_stats;

DROP TABLE alt_t, alt_addpk, alt_nopk;
