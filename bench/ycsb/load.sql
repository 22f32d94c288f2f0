-- YCSB-like key/value table: int key, 100-byte value.
--   psql -v am=heap|fpsketch -v records=N -f load.sql
-- Created and filled in one transaction (fpsketch does not track bulk
-- writes into a table created in the same transaction); the primary key is
-- built afterwards.
\set ON_ERROR_STOP on
SET synchronous_commit = off;
DROP TABLE IF EXISTS usertable;
BEGIN;
CREATE TABLE usertable (
	ycsb_key	int NOT NULL,
	ycsb_value	text NOT NULL
) USING :am;
INSERT INTO usertable
SELECT k, left(repeat(md5(k::text), 4), 100)
FROM generate_series(1, :records) k;
COMMIT;
ALTER TABLE usertable ADD PRIMARY KEY (ycsb_key);
VACUUM ANALYZE usertable;
