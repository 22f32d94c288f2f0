-- TPC-C-like initial population (clause 4.3.3.1), generated on the server.
--   psql -v warehouses=N -f load.sql        (after schema.sql)
-- Every table is truncated and filled in one transaction: fpsketch does not
-- track bulk writes into a table truncated in the same transaction, so the
-- load is not limited by fpsketch.max_entries.  ORDERS, NEW_ORDER and
-- ORDER_LINE are filled together (ORDER_LINE's rows are generated from the
-- ORDERS rows that the same transaction just wrote).
-- Strings are random hex (md5) of the specified lengths; C_LAST uses the
-- syllables with NURand(255,0,999) and C_LOAD = 157 (the run uses C = 223,
-- |223 - 157| = 66 as clause 2.1.6.1 requires).
\set ON_ERROR_STOP on
SET synchronous_commit = off;

-- random int in [lo, hi] and random hex string with length in [lo, hi]
CREATE FUNCTION pg_temp.rnd(lo int, hi int) RETURNS int LANGUAGE sql VOLATILE
	AS $$ SELECT lo + floor(random() * (hi - lo + 1))::int $$;
CREATE FUNCTION pg_temp.astr(lo int, hi int) RETURNS text LANGUAGE sql VOLATILE
	AS $$ SELECT substr(repeat(md5(random()::text), 16), 1, lo + floor(random() * (hi - lo + 1))::int) $$;
CREATE FUNCTION pg_temp.zip() RETURNS text LANGUAGE sql VOLATILE
	AS $$ SELECT lpad(floor(random() * 10000)::int::text, 4, '0') || '11111' $$;
-- 10% of I_DATA / S_DATA contain "ORIGINAL" at a random position (4.3.3.1)
CREATE FUNCTION pg_temp.data_original() RETURNS text LANGUAGE sql VOLATILE
	AS $$ SELECT CASE WHEN random() < 0.1
				 THEN overlay(s placing 'ORIGINAL' from 1 + floor(random() * (length(s) - 8))::int)
				 ELSE s END
		  FROM (SELECT substr(repeat(md5(random()::text), 2), 1, 26 + floor(random() * 25)::int) AS s) x $$;

BEGIN;
TRUNCATE item;
INSERT INTO item
SELECT i, pg_temp.rnd(1, 10000), pg_temp.astr(14, 24),
	   pg_temp.rnd(100, 10000) / 100.0, pg_temp.data_original()
FROM generate_series(1, 100000) i;
COMMIT;

BEGIN;
TRUNCATE warehouse;
INSERT INTO warehouse
SELECT w, pg_temp.astr(6, 10), pg_temp.astr(10, 20), pg_temp.astr(10, 20),
	   pg_temp.astr(10, 20), upper(pg_temp.astr(2, 2)), pg_temp.zip(),
	   pg_temp.rnd(0, 2000) / 10000.0, 300000.00
FROM generate_series(1, :warehouses) w;
COMMIT;

BEGIN;
TRUNCATE stock;
INSERT INTO stock
SELECT i, w, pg_temp.rnd(10, 100),
	   pg_temp.astr(24, 24), pg_temp.astr(24, 24), pg_temp.astr(24, 24),
	   pg_temp.astr(24, 24), pg_temp.astr(24, 24), pg_temp.astr(24, 24),
	   pg_temp.astr(24, 24), pg_temp.astr(24, 24), pg_temp.astr(24, 24),
	   pg_temp.astr(24, 24), 0, 0, 0, pg_temp.data_original()
FROM generate_series(1, :warehouses) w, generate_series(1, 100000) i;
COMMIT;

BEGIN;
TRUNCATE district;
INSERT INTO district
SELECT d, w, pg_temp.astr(6, 10), pg_temp.astr(10, 20), pg_temp.astr(10, 20),
	   pg_temp.astr(10, 20), upper(pg_temp.astr(2, 2)), pg_temp.zip(),
	   pg_temp.rnd(0, 2000) / 10000.0, 30000.00, 3001
FROM generate_series(1, :warehouses) w, generate_series(1, 10) d;
COMMIT;

BEGIN;
TRUNCATE customer;
INSERT INTO customer
SELECT c, d, w, pg_temp.astr(8, 16), 'OE',
	   tpcc_lastname(CASE WHEN c <= 1000 THEN c - 1
						  ELSE ((pg_temp.rnd(0, 255) | pg_temp.rnd(0, 999)) + 157) % 1000 END),
	   pg_temp.astr(10, 20), pg_temp.astr(10, 20), pg_temp.astr(10, 20),
	   upper(pg_temp.astr(2, 2)), pg_temp.zip(),
	   lpad((floor(random() * 1e16))::bigint::text, 16, '0'),
	   now(), CASE WHEN random() < 0.1 THEN 'BC' ELSE 'GC' END,
	   50000.00, pg_temp.rnd(0, 5000) / 10000.0, -10.00, 10.00, 1, 0,
	   pg_temp.astr(300, 500)
FROM generate_series(1, :warehouses) w, generate_series(1, 10) d,
	 generate_series(1, 3000) c;
COMMIT;

BEGIN;
TRUNCATE history;
INSERT INTO history
SELECT c, d, w, d, w, now(), 10.00, pg_temp.astr(12, 24)
FROM generate_series(1, :warehouses) w, generate_series(1, 10) d,
	 generate_series(1, 3000) c;
COMMIT;

BEGIN;
TRUNCATE orders, new_order, order_line;
-- O_C_ID: a random permutation of 1..3000 per district
INSERT INTO orders
SELECT o, d, w,
	   row_number() OVER (PARTITION BY w, d ORDER BY random()),
	   now(), CASE WHEN o < 2101 THEN pg_temp.rnd(1, 10) END,
	   pg_temp.rnd(5, 15), 1
FROM generate_series(1, :warehouses) w, generate_series(1, 10) d,
	 generate_series(1, 3000) o;
INSERT INTO order_line
SELECT o_id, o_d_id, o_w_id, n, pg_temp.rnd(1, 100000), o_w_id,
	   CASE WHEN o_id < 2101 THEN o_entry_d END, 5,
	   CASE WHEN o_id < 2101 THEN 0.00 ELSE pg_temp.rnd(1, 999999) / 100.0 END,
	   pg_temp.astr(24, 24)
FROM orders, generate_series(1, o_ol_cnt) n;
INSERT INTO new_order
SELECT o, d, w
FROM generate_series(1, :warehouses) w, generate_series(1, 10) d,
	 generate_series(2101, 3000) o;
COMMIT;
