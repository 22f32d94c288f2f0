--
-- 16_relation_metadata: the per-relation key metadata (cc/keys.c) outlives
-- the relcache's rd_amcache, which every invalidation of the relation frees:
-- callers keep it across catalog accesses, where invalidations arrive.
--

-- Invalidations of the relation being read, between its rows: a function in
-- the query changes md_t's privileges, and the CommandCounterIncrement after
-- it processes the relcache invalidation of md_t there and then.  The scans
-- go on with the metadata they hold, and each statement sees every row once.
CREATE TABLE md_t (id int PRIMARY KEY, a int NOT NULL, v int NOT NULL) USING fpsketch;
CREATE INDEX md_t_a ON md_t (a);
INSERT INTO md_t SELECT g, g % 10, 0 FROM generate_series(1, 200) g;
CREATE FUNCTION md_reanalyze(n int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF n % 100 = 0 THEN
		GRANT SELECT ON md_t TO PUBLIC;
	ELSIF n % 100 = 50 THEN
		REVOKE SELECT ON md_t FROM PUBLIC;
	END IF;
	RETURN true;
END $$;

SELECT count(*), sum(id) FROM md_t WHERE md_reanalyze(id);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*), sum(id) FROM md_t WHERE a = 0 AND md_reanalyze(id);
SELECT count(*), sum(id) FROM (SELECT id FROM md_t WHERE a = 0 AND md_reanalyze(id) FOR UPDATE) s;
RESET enable_seqscan;
RESET enable_bitmapscan;
BEGIN;
UPDATE md_t SET v = v + 1 WHERE md_reanalyze(id);
INSERT INTO md_t SELECT g, g % 10, 0 FROM generate_series(201, 260) g WHERE md_reanalyze(g);
DELETE FROM md_t WHERE id > 240 AND md_reanalyze(id);
COMMIT;
SELECT count(*), sum(v), sum(id) FROM md_t;

-- A dropped relation's metadata is freed: 300 tables created, read and
-- dropped leave the cache no bigger than core's own entries do (about
-- 0.35 MB here; the metadata alone is over 4 kB a table).
CREATE FUNCTION md_cache_used() RETURNS bigint LANGUAGE sql AS
$$SELECT sum(used_bytes)::bigint FROM pg_backend_memory_contexts
  WHERE name = 'CacheMemoryContext' OR name LIKE 'fpsketch relation metadata%'$$;
CREATE PROCEDURE md_churn(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		CREATE TABLE md_churn (id int PRIMARY KEY, a int NOT NULL, b text) USING fpsketch;
		CREATE INDEX ON md_churn (a);
		INSERT INTO md_churn VALUES (1, 1, 'x');
		PERFORM * FROM md_churn WHERE id = 1;
		DROP TABLE md_churn;
		COMMIT;
	END LOOP;
END $$;
CALL md_churn(30);
SELECT md_cache_used() AS cache_before \gset
CALL md_churn(300);
SELECT md_cache_used() - :cache_before < 1000000 AS metadata_freed;

-- Invalidations that change no metadata, in a loop in one transaction:
-- each rebuild keeps the copy it had (2000 new copies would be 8 MB, held
-- until the transaction ends).
CREATE TABLE md_loop (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
INSERT INTO md_loop VALUES (1, 1);
SELECT md_cache_used() AS cache_before \gset
BEGIN;
DO $$
DECLARE
	s bigint;
BEGIN
	FOR i IN 1..1000 LOOP
		IF i % 2 = 0 THEN
			GRANT SELECT ON md_loop TO PUBLIC;
		ELSE
			REVOKE SELECT ON md_loop FROM PUBLIC;
		END IF;
		SELECT v INTO s FROM md_loop WHERE id = 1;
	END LOOP;
	FOR i IN 1..1000 LOOP
		TRUNCATE md_loop;
		INSERT INTO md_loop VALUES (i, i);
	END LOOP;
END $$;
SELECT md_cache_used() - :cache_before < 1000000 AS metadata_kept;
COMMIT;
SELECT * FROM md_loop;

DROP TABLE md_loop;
DROP PROCEDURE md_churn(int);
DROP FUNCTION md_cache_used();
DROP FUNCTION md_reanalyze(int);
DROP TABLE md_t;
