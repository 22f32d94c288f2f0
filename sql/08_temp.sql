--
-- 08_temp: temporary fpsketch tables work like heap and are not tracked:
-- no other session can race with them, so nothing is pinned or counted.
--
\set VERBOSITY default

SELECT fpsketch_stats_reset();

CREATE TEMP TABLE tmp_t (id int PRIMARY KEY, v text) USING fpsketch;
SELECT c.relpersistence, a.amname
FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'tmp_t';

INSERT INTO tmp_t SELECT g, 'v' || g FROM generate_series(1, 20) g;
UPDATE tmp_t SET v = 'updated' WHERE id <= 5;
DELETE FROM tmp_t WHERE id > 15;
INSERT INTO tmp_t VALUES (1, 'conflict') ON CONFLICT (id) DO UPDATE SET v = excluded.v;
COPY tmp_t FROM STDIN;
100	copied
\.
BEGIN;
SELECT count(*) FROM tmp_t;
SELECT v FROM tmp_t WHERE id = 1 FOR UPDATE;
SAVEPOINT s;
DELETE FROM tmp_t;
ROLLBACK TO SAVEPOINT s;
SELECT pinned FROM fpsketch_stats;
COMMIT;
SELECT id, v FROM tmp_t ORDER BY id;
CREATE INDEX tmp_t_v ON tmp_t (v);
VACUUM FULL tmp_t;
CLUSTER tmp_t USING tmp_t_pkey;
TRUNCATE tmp_t;
INSERT INTO tmp_t VALUES (1, 'after truncate');
SELECT * FROM tmp_t;

-- nothing was pinned, committed or floor-raised on fpsketch's account
SELECT increfs, decrefs, pinned_hwm, commits, read_only_commits, floor_raises
FROM fpsketch_stats;

-- ON COMMIT DELETE ROWS truncates without a rewrite
CREATE TEMP TABLE tmp_oc (id int) USING fpsketch ON COMMIT DELETE ROWS;
BEGIN;
INSERT INTO tmp_oc VALUES (1), (2);
SELECT count(*) FROM tmp_oc;
COMMIT;
SELECT count(*) FROM tmp_oc;
SELECT increfs, commits, read_only_commits, floor_raises FROM fpsketch_stats;

-- a temporary table touched by a transaction does not make PREPARE an
-- fpsketch error: PostgreSQL's own rule about temporary objects applies
BEGIN;
SELECT count(*) FROM tmp_t;
PREPARE TRANSACTION 'fps_temp';
SELECT count(*) FROM pg_prepared_xacts;

-- a transaction touching a temporary and a permanent fpsketch table tracks
-- only the permanent one
CREATE TABLE perm_t (id int PRIMARY KEY, v text) USING fpsketch;
INSERT INTO perm_t VALUES (1, 'p1'), (2, 'p2');
SELECT fpsketch_stats_reset();
BEGIN;
INSERT INTO tmp_t SELECT id + 10, v FROM perm_t;
UPDATE perm_t SET v = (SELECT v FROM tmp_t WHERE id = 1) WHERE id = 2;
COMMIT;
SELECT increfs, decrefs, commits, pinned FROM fpsketch_stats;
SELECT * FROM perm_t ORDER BY id;
SELECT * FROM tmp_t ORDER BY id;

DROP TABLE tmp_t, tmp_oc, perm_t;
SELECT pinned FROM fpsketch_stats;
