--
-- 03_constraints: foreign keys between fpsketch tables, row triggers,
-- deferred constraint triggers, savepoints and PL/pgSQL exception blocks.
--

-- foreign keys
CREATE TABLE con_parent (id int PRIMARY KEY, name text) USING fpsketch;
CREATE TABLE con_child (
    id int PRIMARY KEY,
    parent_id int NOT NULL REFERENCES con_parent (id) ON DELETE CASCADE ON UPDATE CASCADE,
    note text
) USING fpsketch;
CREATE TABLE con_restrict (
    id int PRIMARY KEY,
    parent_id int REFERENCES con_parent (id) ON DELETE RESTRICT
) USING fpsketch;

INSERT INTO con_parent VALUES (1, 'p1'), (2, 'p2'), (3, 'p3');
INSERT INTO con_child VALUES (10, 1, 'c10'), (11, 1, 'c11'), (20, 2, 'c20');
INSERT INTO con_restrict VALUES (100, 3);
SELECT pinned FROM fpsketch_stats;

-- violations
INSERT INTO con_child VALUES (40, 4, 'no parent');
UPDATE con_child SET parent_id = 5 WHERE id = 10;
DELETE FROM con_parent WHERE id = 3;
UPDATE con_parent SET id = 33 WHERE id = 3;
SELECT pinned FROM fpsketch_stats;

-- cascades
UPDATE con_parent SET id = 12 WHERE id = 1;
DELETE FROM con_parent WHERE id = 2;
SELECT * FROM con_parent ORDER BY id;
SELECT * FROM con_child ORDER BY id;
SELECT pinned FROM fpsketch_stats;

-- a foreign key added later is validated by reading both tables
ALTER TABLE con_restrict DROP CONSTRAINT con_restrict_parent_id_fkey;
INSERT INTO con_restrict VALUES (101, 99);
ALTER TABLE con_restrict ADD CONSTRAINT con_restrict_fk
    FOREIGN KEY (parent_id) REFERENCES con_parent (id);
DELETE FROM con_restrict WHERE id = 101;
ALTER TABLE con_restrict ADD CONSTRAINT con_restrict_fk
    FOREIGN KEY (parent_id) REFERENCES con_parent (id) NOT VALID;
ALTER TABLE con_restrict VALIDATE CONSTRAINT con_restrict_fk;
SELECT conname, convalidated FROM pg_constraint
WHERE conrelid = 'con_restrict'::regclass AND contype = 'f';
SELECT pinned FROM fpsketch_stats;

-- deferrable foreign key: checked at COMMIT
CREATE TABLE con_deferred (
    id int PRIMARY KEY,
    parent_id int REFERENCES con_parent (id) DEFERRABLE INITIALLY DEFERRED
) USING fpsketch;
BEGIN;
INSERT INTO con_deferred VALUES (1, 50);
INSERT INTO con_parent VALUES (50, 'p50, inserted after the child');
COMMIT;
BEGIN;
INSERT INTO con_deferred VALUES (2, 51);
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM con_deferred ORDER BY id;

-- row triggers: BEFORE modifies the row, AFTER writes an audit row
CREATE TABLE con_audit (seq serial PRIMARY KEY, op text, tbl text, row_id int, info text)
    USING fpsketch;
CREATE FUNCTION con_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.name = 'PROTECTED' THEN
            RETURN NULL;		-- skip the delete
        END IF;
        RETURN OLD;
    END IF;
    NEW.name := upper(NEW.name);
    RETURN NEW;
END $$;
CREATE FUNCTION con_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO con_audit (op, tbl, row_id, info)
    VALUES (TG_OP, TG_TABLE_NAME,
            CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END,
            CASE WHEN TG_OP = 'UPDATE' THEN OLD.name || ' -> ' || NEW.name
                 WHEN TG_OP = 'DELETE' THEN OLD.name ELSE NEW.name END);
    RETURN NULL;
END $$;
CREATE TABLE con_trig (id int PRIMARY KEY, name text) USING fpsketch;
CREATE TRIGGER con_trig_before BEFORE INSERT OR UPDATE OR DELETE ON con_trig
    FOR EACH ROW EXECUTE FUNCTION con_before();
CREATE TRIGGER con_trig_after AFTER INSERT OR UPDATE OR DELETE ON con_trig
    FOR EACH ROW EXECUTE FUNCTION con_after();
INSERT INTO con_trig VALUES (1, 'alpha'), (2, 'beta'), (3, 'protected');
UPDATE con_trig SET name = 'gamma' WHERE id = 2;
DELETE FROM con_trig WHERE id IN (1, 3);
SELECT pinned FROM fpsketch_stats;
SELECT * FROM con_trig ORDER BY id;
SELECT op, tbl, row_id, info FROM con_audit ORDER BY seq;

-- statement triggers with transition tables
CREATE FUNCTION con_stmt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO con_audit (op, tbl, row_id, info)
    SELECT 'STMT ' || TG_OP, TG_TABLE_NAME, count(*), string_agg(n.name, ',' ORDER BY n.id)
    FROM newrows n;
    RETURN NULL;
END $$;
CREATE TRIGGER con_trig_stmt AFTER INSERT ON con_trig
    REFERENCING NEW TABLE AS newrows FOR EACH STATEMENT EXECUTE FUNCTION con_stmt();
INSERT INTO con_trig VALUES (4, 'delta'), (5, 'epsilon');
SELECT op, row_id, info FROM con_audit WHERE op LIKE 'STMT%';
SELECT pinned FROM fpsketch_stats;

-- a deferred constraint trigger runs at COMMIT and can abort it
CREATE TABLE con_balance (id int PRIMARY KEY, amount int) USING fpsketch;
INSERT INTO con_balance VALUES (1, 100), (2, 100);
CREATE FUNCTION con_check_total() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total int;
BEGIN
    SELECT sum(amount) INTO total FROM con_balance;
    IF total <> 200 THEN
        RAISE EXCEPTION 'total is %, not 200', total;
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER con_balance_total AFTER INSERT OR UPDATE ON con_balance
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION con_check_total();
-- a transfer: unbalanced in between, balanced at COMMIT
BEGIN;
UPDATE con_balance SET amount = amount - 30 WHERE id = 1;
SELECT sum(amount) FROM con_balance;
UPDATE con_balance SET amount = amount + 30 WHERE id = 2;
COMMIT;
SELECT * FROM con_balance ORDER BY id;
-- unbalanced at COMMIT: the trigger aborts the transaction
BEGIN;
UPDATE con_balance SET amount = amount - 1 WHERE id = 1;
COMMIT;
SELECT * FROM con_balance ORDER BY id;
-- SET CONSTRAINTS IMMEDIATE fires it before COMMIT
BEGIN;
UPDATE con_balance SET amount = 0 WHERE id = 2;
SET CONSTRAINTS con_balance_total IMMEDIATE;
ROLLBACK;
SELECT pinned FROM fpsketch_stats;

-- savepoints
CREATE TABLE con_sp (id int PRIMARY KEY, v text) USING fpsketch;
INSERT INTO con_sp VALUES (1, 'base');
BEGIN;
INSERT INTO con_sp VALUES (2, 'before sp1');
UPDATE con_sp SET v = 'updated before sp1' WHERE id = 1;
SAVEPOINT sp1;
INSERT INTO con_sp VALUES (3, 'in sp1');
UPDATE con_sp SET v = 'updated in sp1' WHERE id = 1;
DELETE FROM con_sp WHERE id = 2;
SAVEPOINT sp2;
INSERT INTO con_sp VALUES (4, 'in sp2');
ROLLBACK TO SAVEPOINT sp1;
SELECT * FROM con_sp ORDER BY id;
INSERT INTO con_sp VALUES (5, 'after rollback to sp1');
SAVEPOINT sp3;
INSERT INTO con_sp VALUES (5, 'duplicate');
ROLLBACK TO SAVEPOINT sp3;
UPDATE con_sp SET v = v || ' (released)' WHERE id = 5;
SAVEPOINT sp4;
UPDATE con_sp SET v = 'kept by release' WHERE id = 2;
RELEASE SAVEPOINT sp4;
COMMIT;
SELECT pinned FROM fpsketch_stats;
SELECT * FROM con_sp ORDER BY id;

-- rolling back the whole transaction after savepoints
BEGIN;
SAVEPOINT a;
DELETE FROM con_sp;
SAVEPOINT b;
INSERT INTO con_sp VALUES (9, 'nine');
ROLLBACK;
SELECT pinned FROM fpsketch_stats;
SELECT count(*) FROM con_sp;

-- PL/pgSQL EXCEPTION blocks are subtransactions
CREATE FUNCTION con_try(p_id int, p_v text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO con_sp VALUES (p_id, p_v);
        UPDATE con_sp SET v = v || '+' WHERE id = 1;
        RETURN 'inserted';
    EXCEPTION WHEN unique_violation THEN
        UPDATE con_sp SET v = p_v WHERE id = p_id;
        RETURN 'updated';
    END;
END $$;
SELECT con_try(1, 'conflict on 1'), con_try(6, 'six');
SELECT pinned FROM fpsketch_stats;
SELECT * FROM con_sp ORDER BY id;

DROP TABLE con_child, con_restrict, con_deferred, con_parent, con_trig, con_audit,
    con_balance, con_sp;
DROP FUNCTION con_before(), con_after(), con_stmt(), con_check_total(), con_try(int, text);
SELECT pinned FROM fpsketch_stats;
