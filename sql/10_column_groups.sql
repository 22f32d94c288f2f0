-- Column groups: declaration, errors, the view, and which keys a
-- statement pins (reads pin the groups of the columns they reference,
-- UPDATE writes the groups it sets).
CREATE TABLE cg (id int PRIMARY KEY, tax int, ytd int, cnt int, name text) USING fpsketch;
INSERT INTO cg VALUES (1, 5, 0, 0, 'one'), (2, 7, 0, 0, 'two');
SELECT fpsketch_set_column_group('cg', 'ytd', ARRAY['ytd', 'cnt']);
SELECT relation, group_name, group_number, columns FROM fpsketch_column_groups;

-- errors: each leaves the groups unchanged
SELECT fpsketch_set_column_group('cg', 'bad', ARRAY['id']);
SELECT fpsketch_set_column_group('cg', 'bad', ARRAY['nope']);
SELECT fpsketch_set_column_group('cg', 'bad', ARRAY['ytd']);
SELECT fpsketch_set_column_group('cg', 'bad', ARRAY['tax', 'tax']);
SELECT fpsketch_set_column_group('cg', 'bad', ARRAY['xmin']);
CREATE TABLE cg_nopk (a int, b int) USING fpsketch;
SELECT fpsketch_set_column_group('cg_nopk', 'x', ARRAY['b']);
CREATE TABLE cg_heap (a int PRIMARY KEY, b int);
SELECT fpsketch_set_column_group('cg_heap', 'x', ARRAY['b']);
CREATE ROLE cg_stranger;
SET ROLE cg_stranger;
SELECT fpsketch_set_column_group('cg', 'x', ARRAY['name']);
RESET ROLE;
DROP ROLE cg_stranger;
SELECT relation, group_name, columns FROM fpsketch_column_groups;

-- keys pinned inside a transaction: row keys only (a lookup by primary key
-- that finds its row reads no equality-prefix key, am/point_lookup.c)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
SELECT tax FROM cg WHERE id = 1;
SELECT pinned AS "group 0" FROM fpsketch_stats;
SELECT ytd FROM cg WHERE id = 1;
SELECT pinned AS "+ group ytd" FROM fpsketch_stats;
COMMIT;
BEGIN;
SELECT * FROM cg WHERE id = 2;
SELECT pinned AS "whole row: both groups" FROM fpsketch_stats;
COMMIT;
BEGIN;
SELECT count(*) FROM cg WHERE id = 2;
SELECT pinned AS "existence: group 0" FROM fpsketch_stats;
COMMIT;

-- replace, then drop a group; dropping the table forgets its groups
SELECT fpsketch_set_column_group('cg', 'ytd', ARRAY['ytd']);
SELECT relation, group_name, group_number, columns FROM fpsketch_column_groups;
SELECT fpsketch_set_column_group('cg', 'ytd', NULL);
SELECT count(*) AS groups_left FROM fpsketch_column_groups;
SELECT fpsketch_set_column_group('cg', 'ytd', ARRAY['ytd']);
DROP TABLE cg;
SELECT count(*) AS rows_of_dropped_tables FROM fpsketch_column_group;
DROP TABLE cg_nopk, cg_heap;

-- pg_dump dumps fpsketch_column_group: its column names follow renames,
-- and dropped columns leave their groups (attnums too)
CREATE TABLE cg2 (id int PRIMARY KEY, gone int, a int, b int, c int) USING fpsketch;
INSERT INTO cg2 VALUES (1, 0, 0, 0, 0);
SELECT fpsketch_set_column_group('cg2', 'ab', ARRAY['a', 'b']);
ALTER TABLE cg2 RENAME COLUMN a TO a2;
SELECT group_name, groupno, attnums, columns FROM fpsketch_column_group WHERE rel = 'cg2'::regclass;
ALTER TABLE cg2 DROP COLUMN b;
SELECT group_name, groupno, attnums, columns FROM fpsketch_column_group WHERE rel = 'cg2'::regclass;
SELECT fpsketch_set_column_group('cg2', 'ab', NULL);
-- a group whose last column is dropped goes with it (a row without
-- columns could not be restored)
CREATE TABLE cg3 (id int PRIMARY KEY, x int, y int) USING fpsketch;
SELECT fpsketch_set_column_group('cg3', 'x', ARRAY['x']);
SELECT fpsketch_set_column_group('cg3', 'y', ARRAY['y']);
ALTER TABLE cg3 DROP COLUMN x;
SELECT group_name, groupno, attnums, columns FROM fpsketch_column_group WHERE rel = 'cg3'::regclass;
DROP TABLE cg3;

-- pg_restore COPYs the rows back into a table without the dropped columns:
-- a row inserted by SQL takes its attribute numbers from the names
-- (a2 is attribute 3 here whatever the row says), and takes effect
BEGIN;
SELECT a2 FROM cg2 WHERE id = 1;
SELECT pinned AS "no group: group 0" FROM fpsketch_stats;
COMMIT;
INSERT INTO fpsketch_column_group VALUES ('cg2', 'restored', 4, '{99}', '{a2}');
SELECT group_name, groupno, attnums, columns FROM fpsketch_column_group WHERE rel = 'cg2'::regclass;
BEGIN;
SELECT a2 FROM cg2 WHERE id = 1;
SELECT pinned AS "restored group + group 0" FROM fpsketch_stats;
COMMIT;

-- restored rows are checked like declarations and each leaves the groups
-- as they were: a row that does not fit the table (a column that does not
-- exist or is in the row identity, no columns, not an fpsketch table) is
-- skipped with a WARNING, so that one stale row does not abort a restore;
-- a row that conflicts with a group already there is an error
INSERT INTO fpsketch_column_group VALUES ('cg2', 'x', 5, '{1}', '{nope}');
INSERT INTO fpsketch_column_group VALUES ('cg2', 'x', 5, '{1}', '{id}');
INSERT INTO fpsketch_column_group VALUES ('cg2', 'restored', 5, '{1}', '{c}');
INSERT INTO fpsketch_column_group VALUES ('cg2', 'x', 4, '{1}', '{c}');
INSERT INTO fpsketch_column_group VALUES ('cg2', 'x', 5, '{1}', '{a2}');
INSERT INTO fpsketch_column_group VALUES ('cg2', 'x', 5, '{1}', NULL);
INSERT INTO fpsketch_column_group VALUES ('cg2', 'x', 5, '{1}', '{}');
CREATE TABLE cg_heap2 (a int PRIMARY KEY, b int);
INSERT INTO fpsketch_column_group VALUES ('cg_heap2', 'x', 1, '{2}', '{b}');
SELECT group_name, groupno, attnums, columns FROM fpsketch_column_group WHERE rel = 'cg2'::regclass;
DROP TABLE cg2, cg_heap2;
