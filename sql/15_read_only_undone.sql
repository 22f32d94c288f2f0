-- READ ONLY undone after a transaction's first read: it read at a
-- timestamp, unvalidated, and then writes.  The write fails once with
-- 40001 (not 25006: the transaction is read-write), and the session's READ
-- ONLY transactions validate their reads from then on, so the retry
-- commits.  Found by an adversarial review.
CREATE TABLE ro_undo (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
INSERT INTO ro_undo VALUES (1, 0);

-- a savepoint that set READ ONLY, rolled back
BEGIN;
SAVEPOINT s;
SET LOCAL transaction_read_only = on;
SELECT v FROM ro_undo WHERE k = 1;
ROLLBACK TO s;
UPDATE ro_undo SET v = v + 1 WHERE k = 1;
ROLLBACK;
-- the retry
BEGIN;
SAVEPOINT s;
SET LOCAL transaction_read_only = on;
SELECT v FROM ro_undo WHERE k = 1;
ROLLBACK TO s;
UPDATE ro_undo SET v = v + 1 WHERE k = 1;
COMMIT;
SELECT v FROM ro_undo;

-- a function whose SET clause makes the transaction read-only while it runs
\c
CREATE FUNCTION ro_peek() RETURNS int LANGUAGE sql STABLE
  SET transaction_read_only = on
  AS $$ SELECT v FROM ro_undo WHERE k = 1 $$;
BEGIN;
SELECT ro_peek();
SHOW transaction_read_only;
UPDATE ro_undo SET v = v + 1 WHERE k = 1;
ROLLBACK;
BEGIN;
SELECT ro_peek();
UPDATE ro_undo SET v = v + 1 WHERE k = 1;
COMMIT;
SELECT v FROM ro_undo;

-- a transaction READ ONLY from its start still cannot write
BEGIN READ ONLY;
SELECT v FROM ro_undo WHERE k = 1;
UPDATE ro_undo SET v = v + 1 WHERE k = 1;
ROLLBACK;

DROP TABLE ro_undo;
DROP FUNCTION ro_peek();
