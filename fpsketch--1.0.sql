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
    OUT lock_waits bigint,
    OUT floor_raises bigint,
    OUT phantom_relation_reads bigint,
    OUT phantom_prefix_reads bigint,
    OUT phantom_writes bigint,
    OUT snapshot_refreshes bigint,
    OUT escalations bigint,
    OUT sto_writer_waits bigint,
    OUT reevaluations bigint)
RETURNS record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

CREATE VIEW fpsketch_stats AS SELECT * FROM fpsketch_stats();
GRANT SELECT ON fpsketch_stats TO PUBLIC;

CREATE FUNCTION fpsketch_stats_reset() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION fpsketch_stats_reset() FROM PUBLIC;
