-- Learned column groups: a table with no declared group gets groups from
-- the columns its UPDATEs write (column_groups.c), applied by a background
-- worker; declared groups win; fpsketch.learn_column_groups = off stops it.
CREATE FUNCTION wait_learned(r regclass, ngroups int) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 1200 LOOP
    IF (SELECT count(*) FROM fpsketch_column_groups
         WHERE relation = r AND source = 'learned') >= ngroups THEN
      RETURN 'learned';
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN 'timed out';
END $$;
CREATE VIEW learned AS
  SELECT relation, group_name, group_number, columns, source
    FROM fpsketch_column_groups ORDER BY relation::text, group_number;

SET fpsketch.learn_column_groups_threshold = 10;
CREATE TABLE lg (id int PRIMARY KEY, tax int, ytd int, cnt int, bal int,
                 name text) USING fpsketch;
INSERT INTO lg SELECT g, 5, 0, 0, 0, 'n' || g FROM generate_series(1, 10) g;

-- below the threshold: nothing is asked for
DO $$ BEGIN FOR i IN 1 .. 9 LOOP
  UPDATE lg SET ytd = ytd + 1, cnt = cnt + 1 WHERE id = 1;
END LOOP; END $$;
SELECT pg_sleep(1);
SELECT * FROM learned;

-- the 10th statement with {ytd, cnt}: they get a group, the rest stay in 0,
-- and the floor rises as for a declaration
SELECT floor_raises AS raises_before FROM fpsketch_stats \gset
UPDATE lg SET ytd = ytd + 1, cnt = cnt + 1 WHERE id = 2;
SELECT wait_learned('lg', 1);
SELECT * FROM learned;
SELECT floor_raises > :raises_before AS floor_raised FROM fpsketch_stats;

-- a set that cuts through a group splits it: {cnt, bal} splits {ytd, cnt}
-- and takes bal out of group 0; sets that fit the groups change nothing
DO $$ BEGIN FOR i IN 1 .. 10 LOOP
  UPDATE lg SET cnt = cnt + 1, bal = bal + 1 WHERE id = 3;
  UPDATE lg SET ytd = ytd + 1 WHERE id = 4;
END LOOP; END $$;
SELECT wait_learned('lg', 3);
SELECT * FROM learned;

-- what a learned group costs: a read of a column outside group 0 pins its
-- group's key (the WHERE clause reads id: group 0 goes with the others, as
-- every writer of group 0 writes every group); an UPDATE of bal writes
-- bal's group, follows the other groups but group 0, and writes the
-- escalation key (lookups by primary key that find their row read no
-- equality-prefix key, am/point_lookup.c)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
SELECT tax FROM lg WHERE id = 1;
SELECT pinned AS "group 0" FROM fpsketch_stats;
SELECT ytd, cnt FROM lg WHERE id = 1;
SELECT pinned AS "+ 2 groups" FROM fpsketch_stats;
COMMIT;
BEGIN;
UPDATE lg SET bal = bal + 1 WHERE id = 5;
SELECT pinned AS "UPDATE of bal" FROM fpsketch_stats;
COMMIT;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- declared groups win: declaring one drops the learned ones ...
SELECT fpsketch_set_column_group('lg', 'tax', ARRAY['tax']);
SELECT * FROM learned;
-- ... and a table with a declared group is not learned from
CREATE TABLE lg_ctl (id int PRIMARY KEY, a int, b int) USING fpsketch;
INSERT INTO lg_ctl VALUES (1, 0, 0);
DO $$ BEGIN FOR i IN 1 .. 10 LOOP
  UPDATE lg SET name = name || 'x', bal = bal + 1 WHERE id = 6;
END LOOP; END $$;
-- (the learner takes requests in order: once a later one is done, an
-- earlier one would be too)
DO $$ BEGIN FOR i IN 1 .. 10 LOOP
  UPDATE lg_ctl SET a = a + 1 WHERE id = 1;
END LOOP; END $$;
SELECT wait_learned('lg_ctl', 1);
SELECT * FROM learned;
-- dropping the last declared group lets learning start again
SELECT fpsketch_set_column_group('lg', 'tax', NULL);
DO $$ BEGIN FOR i IN 1 .. 10 LOOP
  UPDATE lg SET tax = tax + 1 WHERE id = 7;
END LOOP; END $$;
SELECT wait_learned('lg', 1);
SELECT * FROM learned WHERE relation = 'lg'::regclass;

-- fpsketch.learn_column_groups = off: the session's UPDATEs are not learned from
SET fpsketch.learn_column_groups = off;
DO $$ BEGIN FOR i IN 1 .. 20 LOOP
  UPDATE lg SET name = name || 'y' WHERE id = 8;
END LOOP; END $$;
RESET fpsketch.learn_column_groups;
DO $$ BEGIN FOR i IN 1 .. 10 LOOP
  UPDATE lg_ctl SET b = b + 1 WHERE id = 1;
END LOOP; END $$;
SELECT wait_learned('lg_ctl', 2);
SELECT * FROM learned;

-- only declared groups are dumped
SELECT c.extcondition FROM pg_extension c WHERE c.extname = 'fpsketch';
-- an INSERT (a restore) is a declaration, whatever its source says
INSERT INTO fpsketch_column_group (rel, group_name, groupno, attnums, columns, source)
  VALUES ('lg_ctl', 'ab', 1, '{}', ARRAY['a', 'b'], 'learned');
SELECT * FROM learned WHERE relation = 'lg_ctl'::regclass;

-- dropping a group by any name clears the learned ones (learning may start again)
SELECT fpsketch_set_column_group('lg', 'any', NULL);
SELECT * FROM learned;

-- the GUCs' ranges
SET fpsketch.learn_column_groups_threshold = 0;
SET fpsketch.learn_column_groups_lock_timeout = 10;

DROP TABLE lg, lg_ctl;
SELECT count(*) AS rows_of_dropped_tables FROM fpsketch_column_group;
DROP VIEW learned;
DROP FUNCTION wait_learned(regclass, int);
