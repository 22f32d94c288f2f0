/* fpsketch--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fpsketch" to load this file. \quit

CREATE FUNCTION fpsketch_require_preload() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

-- fail early and clearly when the library is not preloaded
SELECT fpsketch_require_preload();

CREATE FUNCTION fpsketch_tableam_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

CREATE ACCESS METHOD fpsketch TYPE TABLE HANDLER fpsketch_tableam_handler;
COMMENT ON ACCESS METHOD fpsketch IS 'heap storage, serializable by TicToc or STO with per-row timestamps in an FPSketch';

CREATE FUNCTION fpsketch_stats(
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
    OUT kept_locks bigint)
RETURNS record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

CREATE VIEW fpsketch_stats AS SELECT * FROM fpsketch_stats();
GRANT SELECT ON fpsketch_stats TO PUBLIC;

CREATE FUNCTION fpsketch_stats_reset() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION fpsketch_stats_reset() FROM PUBLIC;

-- Column groups: per-group row timestamps (see column_groups.c).  Written
-- by fpsketch_set_column_group().  pg_dump dumps the rows (a configuration
-- table); on restore the trigger below takes the attribute numbers again
-- from the column names, which follow renames.
CREATE TABLE fpsketch_column_group (
    rel regclass NOT NULL,
    group_name name NOT NULL,
    groupno int2 NOT NULL CHECK (groupno BETWEEN 1 AND 15),
    attnums int2[] NOT NULL,
    columns name[]
);
REVOKE ALL ON fpsketch_column_group FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fpsketch_column_group', '');

CREATE FUNCTION fpsketch_column_group_restore() RETURNS trigger
AS 'MODULE_PATHNAME' LANGUAGE C;
REVOKE ALL ON FUNCTION fpsketch_column_group_restore() FROM PUBLIC;
CREATE TRIGGER fpsketch_column_group_restore BEFORE INSERT ON fpsketch_column_group
    FOR EACH ROW EXECUTE FUNCTION fpsketch_column_group_restore();

CREATE FUNCTION fpsketch_set_column_group(rel regclass, group_name name, columns name[])
RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C CALLED ON NULL INPUT VOLATILE;

COMMENT ON FUNCTION fpsketch_set_column_group(regclass, name, name[]) IS
'give columns of an fpsketch table their own row timestamps (NULL columns: drop the group)';

CREATE VIEW fpsketch_column_groups AS
SELECT g.rel AS relation, g.group_name, g.groupno AS group_number,
       ARRAY(SELECT a.attname
               FROM unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
               JOIN pg_catalog.pg_attribute a
                 ON a.attrelid = g.rel AND a.attnum = u.attnum AND NOT a.attisdropped
              ORDER BY u.ord) AS columns
  FROM fpsketch_column_group g
  JOIN pg_catalog.pg_class c ON c.oid = g.rel
 ORDER BY g.rel::oid, g.groupno;
GRANT SELECT ON fpsketch_column_groups TO PUBLIC;

-- Forget the groups of dropped tables (their OIDs may be reused).
CREATE FUNCTION fpsketch_forget_dropped_tables() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM @extschema@.fpsketch_column_group g
     WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = g.rel);
END
$$;
REVOKE ALL ON FUNCTION fpsketch_forget_dropped_tables() FROM PUBLIC;
CREATE EVENT TRIGGER fpsketch_forget_dropped_tables ON sql_drop
    EXECUTE FUNCTION fpsketch_forget_dropped_tables();

-- Keep the column names of groups current (for pg_dump) after ALTER TABLE:
-- renamed columns, and dropped ones left out.
CREATE FUNCTION fpsketch_rename_group_columns() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE @extschema@.fpsketch_column_group g
       SET columns = ARRAY(SELECT a.attname
                             FROM unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
                             JOIN pg_attribute a
                               ON a.attrelid = g.rel AND a.attnum = u.attnum AND NOT a.attisdropped
                            ORDER BY u.ord)
     WHERE g.rel IN (SELECT c.objid FROM pg_event_trigger_ddl_commands() c
                      WHERE c.classid = 'pg_class'::regclass);
END
$$;
REVOKE ALL ON FUNCTION fpsketch_rename_group_columns() FROM PUBLIC;
CREATE EVENT TRIGGER fpsketch_rename_group_columns ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION fpsketch_rename_group_columns();
