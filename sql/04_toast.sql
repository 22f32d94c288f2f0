--
-- 04_toast: large values in fpsketch tables.  The TOAST table of an
-- fpsketch table is plain heap; chunks are reached only through the owner.
--

CREATE TABLE toast_t (id int PRIMARY KEY, compressible text, plain text, tag text)
    USING fpsketch;
-- EXTERNAL: stored out of line without compression, so the TOAST table is used
ALTER TABLE toast_t ALTER COLUMN plain SET STORAGE EXTERNAL;

SELECT a.amname AS table_am, ta.amname AS toast_am, t.relkind AS toast_relkind
FROM pg_class c
JOIN pg_am a ON a.oid = c.relam
JOIN pg_class t ON t.oid = c.reltoastrelid
JOIN pg_am ta ON ta.oid = t.relam
WHERE c.relname = 'toast_t';

INSERT INTO toast_t
SELECT g, repeat('x', 100000), repeat(md5(g::text), 4000), 'row ' || g
FROM generate_series(1, 3) g;
SELECT pinned FROM fpsketch_stats;

SELECT pg_relation_size(reltoastrelid) > 0 AS toast_used
FROM pg_class WHERE relname = 'toast_t';
SELECT id, length(compressible), md5(compressible) = md5(repeat('x', 100000)) AS c_ok,
       length(plain), md5(plain) = md5(repeat(md5(id::text), 4000)) AS p_ok,
       pg_column_size(compressible) < 100000 AS compressed,
       pg_column_size(plain) >= 128000 AS uncompressed
FROM toast_t ORDER BY id;

-- update a non-TOASTed column: the TOASTed values are carried over
UPDATE toast_t SET tag = 'retagged' WHERE id = 1;
-- update the TOASTed values themselves
UPDATE toast_t SET plain = repeat('y', 150000), compressible = compressible || 'tail'
WHERE id = 2;
SELECT pinned FROM fpsketch_stats;
SELECT id, tag, length(compressible), md5(compressible), length(plain), md5(plain)
FROM toast_t ORDER BY id;

-- VACUUM FULL rewrites the table and its TOAST table
SELECT reltoastrelid AS toast_before FROM pg_class WHERE relname = 'toast_t' \gset
VACUUM FULL toast_t;
SELECT pinned FROM fpsketch_stats;
SELECT c.reltoastrelid = :toast_before AS same_toast_oid, ta.amname AS toast_am
FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid JOIN pg_am ta ON ta.oid = t.relam
WHERE c.relname = 'toast_t';
SELECT id, tag, length(compressible), md5(compressible), length(plain), md5(plain)
FROM toast_t ORDER BY id;

-- and CLUSTER too; then an update after the rewrite
CLUSTER toast_t USING toast_t_pkey;
UPDATE toast_t SET plain = plain || 'z' WHERE id = 3;
SELECT id, length(plain), md5(plain) = md5(repeat(md5('3'), 4000) || 'z') AS p_ok
FROM toast_t WHERE id = 3;

-- a large value in a savepoint that is rolled back
BEGIN;
SAVEPOINT s;
UPDATE toast_t SET plain = repeat('r', 200000) WHERE id = 1;
ROLLBACK TO SAVEPOINT s;
DELETE FROM toast_t WHERE id = 2;
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT id, tag, length(plain),
       md5(plain) = md5(repeat(md5(id::text), 4000) || CASE WHEN id = 3 THEN 'z' ELSE '' END) AS p_ok
FROM toast_t ORDER BY id;

-- a large text primary key (compressed, hashed by value)
CREATE TABLE toast_pk (k text PRIMARY KEY, n int) USING fpsketch;
INSERT INTO toast_pk VALUES (repeat('k', 2000), 1), (repeat('k', 1999) || 'l', 2);
UPDATE toast_pk SET n = n + 10 WHERE k = repeat('k', 2000);
SELECT length(k), right(k, 1), n FROM toast_pk ORDER BY n;
SELECT pinned FROM fpsketch_stats;

DROP TABLE toast_t, toast_pk;
