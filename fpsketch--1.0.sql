/* fpsketch--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fpsketch" to load this file. \quit

-- Guard against search_path attacks (see "Security Considerations for
-- Extension Scripts" in the PostgreSQL documentation): CREATE EXTENSION
-- runs this script with the extension's schema on the search_path, where
-- anyone who may create objects there could have placed an operator or
-- function that matches an expression below better than pg_catalog's (an
-- "=" for (oid, regclass), an unnest(int2[])).  A view or trigger bound to
-- it would run it as whoever uses the extension, a superuser included.
-- So: only pg_catalog on the path (the setting ends with CREATE
-- EXTENSION), the extension's own objects named with @extschema@, and
-- operators, functions and types in expressions qualified anyway.
SET LOCAL search_path = pg_catalog, pg_temp;

CREATE FUNCTION @extschema@.fpsketch_require_preload() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

-- fail early and clearly when the library is not preloaded
SELECT @extschema@.fpsketch_require_preload();

CREATE FUNCTION @extschema@.fpsketch_tableam_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

CREATE ACCESS METHOD fpsketch TYPE TABLE HANDLER @extschema@.fpsketch_tableam_handler;
COMMENT ON ACCESS METHOD fpsketch IS 'heap storage, serializable by TicToc or STO with per-row timestamps in an FPSketch';

CREATE FUNCTION @extschema@.fpsketch_stats(
    OUT protocol text,
    OUT variant text,
    OUT eviction text,
    OUT max_entries bigint,
    OUT entries bigint,
    OUT entries_hwm bigint,
    OUT pinned bigint,
    OUT pinned_hwm bigint,
    OUT increfs bigint,
    OUT decrefs bigint,
    OUT seeds bigint,
    OUT merges bigint,
    OUT evictions bigint,
    OUT table_full bigint,
    OUT lock_leaks bigint,
    OUT sketch_rows integer,
    OUT sketch_cols integer,
    OUT sketch_readers_cols integer,
    OUT sketch_bytes bigint,
    OUT table_bytes bigint,
    OUT sketch_cells_used bigint,
    OUT floor_ts bigint,
    OUT commits bigint,
    OUT read_only_commits bigint,
    OUT aborts_stale_read bigint,
    OUT aborts_reread_changed bigint,
    OUT aborts_validate_changed bigint,
    OUT aborts_validate_locked bigint,
    OUT aborts_concurrent_update bigint,
    OUT aborts_lock_timeout bigint,
    OUT aborts_table_full bigint,
    OUT aborts_phantom bigint,
    OUT aborts_phantom_snapshot bigint,
    OUT aborts_sto_read_too_late bigint,
    OUT aborts_sto_write_too_late bigint,
    OUT aborts_sto_waited_for_writer bigint,
    OUT aborts_wait_cycle bigint,
    OUT aborts_snapshot_too_old bigint,
    OUT aborts_read_only_guess bigint,
    OUT aborts_pool_held bigint,
    OUT lock_waits bigint,
    OUT floor_raises bigint,
    OUT phantom_relation_reads bigint,
    OUT phantom_prefix_reads bigint,
    OUT phantom_writes bigint,
    OUT snapshot_refreshes bigint,
    OUT escalations bigint,
    OUT sto_writer_waits bigint,
    OUT reevaluations bigint,
    OUT row_lock_waits bigint,
    OUT reads_valid_before_overwrite bigint,
    OUT stable_rereads bigint,
    OUT early_aborts bigint,
    OUT write_escalations bigint,
    OUT pool_pins bigint,
    OUT pins_refused bigint,
    OUT pins_refused_role bigint,
    OUT kept_locks bigint,
    OUT ts_snapshots bigint,
    OUT ts_waits bigint,
    OUT ts_successor_fetches bigint,
    OUT commit_ts_capacity bigint,
    OUT commit_ts_entries bigint,
    OUT commit_ts_entries_hwm bigint,
    OUT commit_ts_drops bigint,
    OUT commit_ts_lost bigint,
    OUT commit_ts_bytes bigint,
    OUT prepared_xacts bigint,
    OUT prepared_keys bigint,
    OUT prepares bigint,
    OUT prepared_commits bigint,
    OUT prepared_rollbacks bigint)
RETURNS record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

CREATE VIEW @extschema@.fpsketch_stats AS SELECT * FROM @extschema@.fpsketch_stats();
GRANT SELECT ON @extschema@.fpsketch_stats TO PUBLIC;

CREATE FUNCTION @extschema@.fpsketch_stats_reset() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION @extschema@.fpsketch_stats_reset() FROM PUBLIC;

-- The login roles whose transactions borrow from the shared pool of pins
-- now (fpsketch.max_pool_pins_per_role bounds each): who holds the pool
-- when writers fail with 40001 for want of it.  Role names are no secret
-- (pg_stat_activity shows every session's), so everyone may read it.
CREATE FUNCTION @extschema@.fpsketch_pool_pins(
    OUT roleid oid,
    OUT rolname name,
    OUT transactions integer,
    OUT pins bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

CREATE VIEW @extschema@.fpsketch_pool_pins AS
    SELECT * FROM @extschema@.fpsketch_pool_pins() ORDER BY pins DESC, roleid;
GRANT SELECT ON @extschema@.fpsketch_pool_pins TO PUBLIC;

-- What each prepared transaction holds of the FPSketch (its written keys,
-- locked until COMMIT PREPARED or ROLLBACK PREPARED); pg_prepared_xacts has
-- the rest.  A prepared transaction that only read fpsketch tables holds
-- nothing.
CREATE FUNCTION @extschema@.fpsketch_prepared_xacts(
    OUT gid text,
    OUT transaction xid,
    OUT database name,
    OUT commit_ts bigint,
    OUT keys integer,
    OUT locked_keys integer,
    OUT recovered boolean,
    OUT prepared timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

CREATE VIEW @extschema@.fpsketch_prepared_xacts AS
    SELECT * FROM @extschema@.fpsketch_prepared_xacts() ORDER BY prepared, gid;
GRANT SELECT ON @extschema@.fpsketch_prepared_xacts TO PUBLIC;

-- Column groups: per-group row timestamps (see column_groups.c).  Written
-- by fpsketch_set_column_group().  pg_dump dumps the rows (a configuration
-- table); on restore the trigger below takes the attribute numbers again
-- from the column names, which follow renames and drops (the event
-- triggers further down).
CREATE TABLE @extschema@.fpsketch_column_group (
    rel pg_catalog.regclass NOT NULL,
    group_name pg_catalog.name NOT NULL,
    groupno pg_catalog.int2 NOT NULL
        CHECK (groupno OPERATOR(pg_catalog.>=) 1 AND groupno OPERATOR(pg_catalog.<=) 15),
    attnums pg_catalog.int2[] NOT NULL,
    columns pg_catalog.name[],
    -- 'declared' by fpsketch_set_column_group() (or a restore), or
    -- 'learned' from the columns UPDATEs write (column_groups.c)
    source pg_catalog.text NOT NULL DEFAULT 'declared'
        CHECK (source OPERATOR(pg_catalog.=) ANY (ARRAY['declared', 'learned']::pg_catalog.text[]))
) USING heap;	-- whatever default_table_access_method says: the AM reads it
				-- while it builds its own tables' keys (cc/keys.c)

-- The event triggers below update and delete its rows on every DROP and
-- ALTER TABLE; a publication FOR ALL TABLES includes it, and would refuse
-- those without a replica identity (so the DDL of the whole database).
ALTER TABLE @extschema@.fpsketch_column_group REPLICA IDENTITY FULL;

-- Every relcache build of an fpsketch table looks up its groups
-- (cc/keys.c): by this index, not by reading every table's.
CREATE INDEX fpsketch_column_group_rel_idx ON @extschema@.fpsketch_column_group (rel);

-- Everyone may read the table and insert into it; nobody but its owner may
-- update, delete or truncate.  pg_dump must read it to dump a database
-- (whoever runs it), and it holds only relation OIDs, group names and
-- column names, which pg_class, pg_attribute and pg_constraint show to
-- everyone anyway.  An INSERT (a restore's COPY) goes through the trigger
-- below, which lets only a table's owner add its groups.  Dropping a group
-- is fpsketch_set_column_group's job, which checks ownership too.
REVOKE ALL ON @extschema@.fpsketch_column_group FROM PUBLIC;
GRANT SELECT, INSERT ON @extschema@.fpsketch_column_group TO PUBLIC;
-- Only declared groups are dumped: learned ones are relearned from the
-- restored database's own UPDATEs (see column_groups.c).
SELECT pg_catalog.pg_extension_config_dump('@extschema@.fpsketch_column_group',
                                           'WHERE source OPERATOR(pg_catalog.=) ''declared''');

CREATE FUNCTION @extschema@.fpsketch_column_group_restore() RETURNS trigger
AS 'MODULE_PATHNAME' LANGUAGE C;
REVOKE ALL ON FUNCTION @extschema@.fpsketch_column_group_restore() FROM PUBLIC;
CREATE TRIGGER fpsketch_column_group_restore BEFORE INSERT ON @extschema@.fpsketch_column_group
    FOR EACH ROW EXECUTE FUNCTION @extschema@.fpsketch_column_group_restore();

-- A logical replication worker's changes to it are skipped: they would
-- name the publisher's tables by OID and attribute number, and bypass what
-- a change of groups needs (column_groups.c).  ALWAYS: apply workers run
-- with session_replication_role = replica.
CREATE FUNCTION @extschema@.fpsketch_column_group_replicated() RETURNS trigger
AS 'MODULE_PATHNAME' LANGUAGE C;
REVOKE ALL ON FUNCTION @extschema@.fpsketch_column_group_replicated() FROM PUBLIC;
CREATE TRIGGER fpsketch_column_group_replicated
    BEFORE INSERT OR UPDATE OR DELETE ON @extschema@.fpsketch_column_group
    FOR EACH ROW EXECUTE FUNCTION @extschema@.fpsketch_column_group_replicated();
ALTER TABLE @extschema@.fpsketch_column_group
    ENABLE ALWAYS TRIGGER fpsketch_column_group_replicated;

CREATE FUNCTION @extschema@.fpsketch_set_column_group(rel pg_catalog.regclass,
                                                      group_name pg_catalog.name,
                                                      columns pg_catalog.name[])
RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C CALLED ON NULL INPUT VOLATILE;

COMMENT ON FUNCTION @extschema@.fpsketch_set_column_group(pg_catalog.regclass, pg_catalog.name,
                                                          pg_catalog.name[]) IS
'give columns of an fpsketch table their own row timestamps (NULL columns: drop the group)';

CREATE VIEW @extschema@.fpsketch_column_groups AS
SELECT g.rel AS relation, g.group_name, g.groupno AS group_number,
       ARRAY(SELECT a.attname
               FROM pg_catalog.unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
               JOIN pg_catalog.pg_attribute a
                 ON a.attrelid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid
                AND a.attnum OPERATOR(pg_catalog.=) u.attnum
                AND NOT a.attisdropped
              ORDER BY u.ord) AS columns,
       g.source
  FROM @extschema@.fpsketch_column_group g
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid
 ORDER BY g.rel::pg_catalog.oid, g.groupno;
-- Not filtered by privileges: the table it reads is readable by everyone
-- (see above), and pg_class shows every table's name to everyone.
GRANT SELECT ON @extschema@.fpsketch_column_groups TO PUBLIC;

-- Per relation: which fpsketch tables, and which column groups of them,
-- make transactions retry (relation_stats.c).  One row per (database,
-- relation) counted since the server started or fpsketch_stats_reset(),
-- fpsketch.max_tracked_relations of them in all databases; relations past
-- that are counted together in one row whose datid and relid are NULL
-- (relations: an estimate of how many).  Dropped tables' rows go with them
-- (the event trigger fpsketch_forget_dropped_tables); dropped databases'
-- stay until the next reset.
CREATE FUNCTION @extschema@.fpsketch_relation_stats(
    OUT datid oid,
    OUT relid oid,
    OUT relations bigint,
    OUT row_reads bigint,
    OUT row_writes bigint,
    OUT predicate_reads bigint,
    OUT predicate_writes bigint,
    OUT commits bigint,
    OUT rollbacks bigint,
    OUT aborts_stale_read bigint,
    OUT aborts_reread_changed bigint,
    OUT aborts_validate_changed bigint,
    OUT aborts_validate_locked bigint,
    OUT aborts_concurrent_update bigint,
    OUT aborts_lock_timeout bigint,
    OUT aborts_table_full bigint,
    OUT aborts_phantom bigint,
    OUT aborts_phantom_snapshot bigint,
    OUT aborts_sto_read_too_late bigint,
    OUT aborts_sto_write_too_late bigint,
    OUT aborts_sto_waited_for_writer bigint,
    OUT aborts_wait_cycle bigint,
    OUT aborts_snapshot_too_old bigint,
    OUT aborts_read_only_guess bigint,
    OUT aborts_pool_held bigint,
    OUT aborts_by_group bigint[])
RETURNS SETOF record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

-- relname and the column groups are those of the current database's
-- relations (NULL and empty for other databases' and dropped ones)
CREATE VIEW @extschema@.fpsketch_relation_stats AS
SELECT s.datid, s.relid, c.relname, s.relations,
       s.row_reads, s.row_writes, s.predicate_reads, s.predicate_writes,
       s.commits, s.rollbacks,
       s.aborts_stale_read OPERATOR(pg_catalog.+)
       s.aborts_reread_changed OPERATOR(pg_catalog.+)
       s.aborts_validate_changed OPERATOR(pg_catalog.+)
       s.aborts_validate_locked OPERATOR(pg_catalog.+)
       s.aborts_concurrent_update OPERATOR(pg_catalog.+)
       s.aborts_lock_timeout OPERATOR(pg_catalog.+)
       s.aborts_table_full OPERATOR(pg_catalog.+)
       s.aborts_phantom OPERATOR(pg_catalog.+)
       s.aborts_phantom_snapshot OPERATOR(pg_catalog.+)
       s.aborts_sto_read_too_late OPERATOR(pg_catalog.+)
       s.aborts_sto_write_too_late OPERATOR(pg_catalog.+)
       s.aborts_sto_waited_for_writer OPERATOR(pg_catalog.+)
       s.aborts_wait_cycle OPERATOR(pg_catalog.+)
       s.aborts_snapshot_too_old OPERATOR(pg_catalog.+)
       s.aborts_read_only_guess OPERATOR(pg_catalog.+)
       s.aborts_pool_held AS aborts,
       s.aborts_stale_read,
       s.aborts_reread_changed,
       s.aborts_validate_changed,
       s.aborts_validate_locked,
       s.aborts_concurrent_update,
       s.aborts_lock_timeout,
       s.aborts_table_full,
       s.aborts_phantom,
       s.aborts_phantom_snapshot,
       s.aborts_sto_read_too_late,
       s.aborts_sto_write_too_late,
       s.aborts_sto_waited_for_writer,
       s.aborts_wait_cycle,
       s.aborts_snapshot_too_old,
       s.aborts_read_only_guess,
       s.aborts_pool_held,
       s.aborts_by_group,
       ARRAY(SELECT g.group_name::pg_catalog.text OPERATOR(pg_catalog.||) ': '
                    OPERATOR(pg_catalog.||) pg_catalog.array_to_string(g.columns, ', ')
               FROM @extschema@.fpsketch_column_groups g
              WHERE c.oid IS NOT NULL
                AND g.relation::pg_catalog.oid OPERATOR(pg_catalog.=) c.oid
              ORDER BY g.group_number) AS column_groups
  FROM @extschema@.fpsketch_relation_stats() s
  LEFT JOIN pg_catalog.pg_class c
    ON c.oid OPERATOR(pg_catalog.=) s.relid
   AND s.datid OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
 ORDER BY s.datid, s.relid;
-- Counts and OIDs, like pg_stat_all_tables and fpsketch_stats: everyone.
GRANT SELECT ON @extschema@.fpsketch_relation_stats TO PUBLIC;

-- The column groups whose keys failed (fpsketch_relation_stats'
-- aborts_by_group, by name): the columns that make clients retry.  Group 0
-- is the row's identity and every column in no declared group (every
-- column when fpsketch.column_groups is off).  Only the reasons that name
-- one key of a row count here; see README, Observability.
CREATE VIEW @extschema@.fpsketch_conflict_columns AS
SELECT s.datid, s.relid, s.relname,
       (a.n OPERATOR(pg_catalog.-) 1)::pg_catalog.int4 AS group_number,
       g.group_name,
       CASE WHEN s.relname IS NULL THEN NULL
            WHEN a.n OPERATOR(pg_catalog.>) 1 THEN g.columns
            ELSE ARRAY(SELECT att.attname FROM pg_catalog.pg_attribute att
                        WHERE att.attrelid OPERATOR(pg_catalog.=) s.relid
                          AND att.attnum OPERATOR(pg_catalog.>) 0
                          AND NOT att.attisdropped
                          AND (NOT pg_catalog.current_setting('fpsketch.column_groups')::pg_catalog.bool
                               OR NOT EXISTS (
                                   SELECT 1 FROM @extschema@.fpsketch_column_group x
                                    WHERE x.rel::pg_catalog.oid OPERATOR(pg_catalog.=) s.relid
                                      AND att.attnum OPERATOR(pg_catalog.=) ANY (x.attnums)))
                        ORDER BY att.attnum)
       END AS columns,
       a.aborts
  FROM @extschema@.fpsketch_relation_stats s
 CROSS JOIN LATERAL pg_catalog.unnest(s.aborts_by_group) WITH ORDINALITY AS a(aborts, n)
  LEFT JOIN @extschema@.fpsketch_column_groups g
    ON s.relname IS NOT NULL
   AND g.relation::pg_catalog.oid OPERATOR(pg_catalog.=) s.relid
   AND g.group_number OPERATOR(pg_catalog.=) (a.n OPERATOR(pg_catalog.-) 1)
 WHERE a.aborts OPERATOR(pg_catalog.>) 0
 ORDER BY a.aborts DESC, s.datid, s.relid, a.n;
GRANT SELECT ON @extschema@.fpsketch_conflict_columns TO PUBLIC;

-- for the event trigger below: dropped tables leave fpsketch_relation_stats
CREATE FUNCTION @extschema@.fpsketch_relation_stats_forget(pg_catalog.oid[]) RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION @extschema@.fpsketch_relation_stats_forget(pg_catalog.oid[]) FROM PUBLIC;

-- The event triggers' functions run as the extension's owner (a
-- superuser) for everyone's DDL: a fixed search_path, and qualified names.
--
-- They keep every group's attnums and column names those of the table's
-- live columns, in the declared order: a dropped column leaves its group,
-- and a group left without columns is dropped (a row without columns
-- could not be restored).  The UPDATE below does that for the tables in
-- rels; both functions run it.

-- Forget the groups of dropped tables (their OIDs may be reused), and
-- dropped columns: ALTER TABLE ... DROP COLUMN, DROP TYPE ... CASCADE; and
-- dropped tables' rows of fpsketch_relation_stats.
CREATE FUNCTION @extschema@.fpsketch_forget_dropped_tables() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rels pg_catalog.oid[];
BEGIN
    PERFORM @extschema@.fpsketch_relation_stats_forget(pg_catalog.array_agg(o.objid))
       FROM pg_catalog.pg_event_trigger_dropped_objects() o
      WHERE o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
        AND o.objsubid OPERATOR(pg_catalog.=) 0;

    DELETE FROM @extschema@.fpsketch_column_group g
     WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                        WHERE c.oid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid);

    SELECT pg_catalog.array_agg(DISTINCT o.objid) INTO rels
      FROM pg_catalog.pg_event_trigger_dropped_objects() o
     WHERE o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND o.objsubid OPERATOR(pg_catalog.<>) 0;
    IF rels IS NULL THEN
        RETURN;
    END IF;
    UPDATE @extschema@.fpsketch_column_group g
       SET attnums = ARRAY(SELECT u.attnum
                             FROM pg_catalog.unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
                             JOIN pg_catalog.pg_attribute a
                               ON a.attrelid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid
                              AND a.attnum OPERATOR(pg_catalog.=) u.attnum
                              AND NOT a.attisdropped
                            ORDER BY u.ord),
           columns = ARRAY(SELECT a.attname
                             FROM pg_catalog.unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
                             JOIN pg_catalog.pg_attribute a
                               ON a.attrelid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid
                              AND a.attnum OPERATOR(pg_catalog.=) u.attnum
                              AND NOT a.attisdropped
                            ORDER BY u.ord)
     WHERE g.rel::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (rels);
    DELETE FROM @extschema@.fpsketch_column_group g
     WHERE g.rel::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (rels)
       AND pg_catalog.cardinality(g.attnums) OPERATOR(pg_catalog.=) 0;
END
$$;
REVOKE ALL ON FUNCTION @extschema@.fpsketch_forget_dropped_tables() FROM PUBLIC;
CREATE EVENT TRIGGER fpsketch_forget_dropped_tables ON sql_drop
    EXECUTE FUNCTION @extschema@.fpsketch_forget_dropped_tables();

-- Keep the column names of groups current (for pg_dump) after ALTER TABLE:
-- renamed columns (and dropped ones, already done at sql_drop).
CREATE FUNCTION @extschema@.fpsketch_rename_group_columns() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rels pg_catalog.oid[];
BEGIN
    -- ENABLE or DISABLE TRIGGER ALL (pg_restore --disable-triggers) leaves
    -- the skip of replicated changes ORIGIN or disabled: ALWAYS again.
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                WHERE t.tgrelid OPERATOR(pg_catalog.=) '@extschema@.fpsketch_column_group'::pg_catalog.regclass
                  AND t.tgname OPERATOR(pg_catalog.=) 'fpsketch_column_group_replicated'
                  AND t.tgenabled OPERATOR(pg_catalog.<>) 'A') THEN
        ALTER TABLE @extschema@.fpsketch_column_group
            ENABLE ALWAYS TRIGGER fpsketch_column_group_replicated;
    END IF;
    SELECT pg_catalog.array_agg(DISTINCT c.objid) INTO rels
      FROM pg_catalog.pg_event_trigger_ddl_commands() c
     WHERE c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid;
    IF rels IS NULL THEN
        RETURN;
    END IF;
    UPDATE @extschema@.fpsketch_column_group g
       SET attnums = ARRAY(SELECT u.attnum
                             FROM pg_catalog.unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
                             JOIN pg_catalog.pg_attribute a
                               ON a.attrelid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid
                              AND a.attnum OPERATOR(pg_catalog.=) u.attnum
                              AND NOT a.attisdropped
                            ORDER BY u.ord),
           columns = ARRAY(SELECT a.attname
                             FROM pg_catalog.unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
                             JOIN pg_catalog.pg_attribute a
                               ON a.attrelid OPERATOR(pg_catalog.=) g.rel::pg_catalog.oid
                              AND a.attnum OPERATOR(pg_catalog.=) u.attnum
                              AND NOT a.attisdropped
                            ORDER BY u.ord)
     WHERE g.rel::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (rels);
    DELETE FROM @extschema@.fpsketch_column_group g
     WHERE g.rel::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (rels)
       AND pg_catalog.cardinality(g.attnums) OPERATOR(pg_catalog.=) 0;
END
$$;
REVOKE ALL ON FUNCTION @extschema@.fpsketch_rename_group_columns() FROM PUBLIC;
CREATE EVENT TRIGGER fpsketch_rename_group_columns ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION @extschema@.fpsketch_rename_group_columns();
