--
-- 14_gap_scans: plan shapes of gap-key scans (am/gap.c) that must not cost
-- more than the scan itself.
--
-- A merge join restores its inner index scan to the marked entry at every
-- outer row that repeats the previous one's key (index_restrpos), which
-- resets the table fetch.  A gap scan that started afresh there looked at
-- the gap from the scan's start up to each entry again, at every restore:
-- quadratic in the inner scan's length (tens of seconds for these 50000
-- outer rows; found by review).  It goes on where it was instead.  The
-- statement timeout is two orders of magnitude above the join's cost.
--

-- created and filled in one transaction: writes to new storage are not tracked
BEGIN;
CREATE TABLE gm (g int NOT NULL, k int NOT NULL) USING fpsketch;
CREATE INDEX gm_gk ON gm (g, k);
INSERT INTO gm SELECT 1, i FROM generate_series(1, 60000) i;
COMMIT;
-- every key five times (heap: only the inner scan is of interest)
CREATE TABLE gm_outer (k int NOT NULL) USING heap;
CREATE INDEX gm_outer_k ON gm_outer (k);
INSERT INTO gm_outer SELECT i / 5 FROM generate_series(5, 50004) i;
ANALYZE gm, gm_outer;

SET enable_hashjoin = off;
SET enable_nestloop = off;
SET enable_material = off;
SET enable_sort = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
-- the fpsketch table is the inner side: mark and restore
EXPLAIN (COSTS OFF)
SELECT count(*) FROM gm_outer o JOIN gm ON gm.g = 1 AND gm.k = o.k;

SET statement_timeout = '20s';
BEGIN;
SELECT count(*) FROM gm_outer o JOIN gm ON gm.g = 1 AND gm.k = o.k;
COMMIT;
RESET statement_timeout;

RESET enable_hashjoin;
RESET enable_nestloop;
RESET enable_material;
RESET enable_sort;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE gm, gm_outer;
