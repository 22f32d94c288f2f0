/*-------------------------------------------------------------------------
 *
 * fpsketch_am.c
 *	  The fpsketch table access method: heap's routine, with every callback
 *	  that reads or writes a row version wrapped so that cc/ sees it.
 *
 * Storage, WAL, VACUUM, TOAST and crash recovery are heap's, unchanged.
 * This file is the routing table; what each wrapper does lives in am/
 * (see am/am.h): versions, tracking of reads and writes, predicate keys,
 * statements, re-evaluation and row-lock waits.
 *
 * Reads are recorded for MVCC and dirty snapshots (the latter are how unique
 * and ON CONFLICT arbiter checks see rows); SnapshotAny and friends belong to
 * maintenance (CLUSTER, triggers' old rows, EvalPlanQual fetches) and are not
 * reads of the transaction's logic.  Writes are recorded after heap reports
 * TM_Ok.
 *
 * Index builds call heap_getnext(), which insists on heap's own routine, so
 * the build callbacks swap rd_tableam for their duration.  TOAST tables of
 * fpsketch tables are plain heap: their chunks are reached only through the
 * owning row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "fmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am/am.h"
#include "fpsketch_am.h"

static TableAmRoutine fps_routine;
static const TableAmRoutine *heap_routine;

/*
 * A scan that can see any row of the relation reads its relation key first,
 * and may get a newer snapshot (am/predicate.c).  A scan at a timestamp
 * (am/visibility.c) runs on SnapshotAny: every version, judged by commit
 * timestamps.
 */
static TableScanDesc
fps_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
			   struct ScanKeyData *key, ParallelTableScanDesc pscan,
			   uint32 flags)
{
	CommandId	curcid = InvalidCommandId;
	Snapshot	mvcc_snapshot = NULL;

	if (snapshot != NULL && IsMVCCSnapshot(snapshot) && pscan == NULL &&
		(flags & (SO_TYPE_SEQSCAN | SO_TYPE_BITMAPSCAN | SO_TYPE_SAMPLESCAN |
				  SO_TYPE_TIDSCAN | SO_TYPE_TIDRANGESCAN)))
	{
		Snapshot	fresh = fps_read_relation_predicate(rel, snapshot);

		if (fresh != NULL)
		{
			if (flags & SO_TEMP_SNAPSHOT)
				UnregisterSnapshot(snapshot);
			snapshot = fresh;
			flags |= SO_TEMP_SNAPSHOT;	/* heap_endscan unregisters it */
		}
		else if (fps_ts_read_of(rel, snapshot))
		{
			fps_ts_scan_start(rel, (flags & SO_TYPE_SEQSCAN) != 0);
			curcid = snapshot->curcid;
			if (flags & SO_TEMP_SNAPSHOT)
				UnregisterSnapshot(snapshot);
			else
				mvcc_snapshot = snapshot;
			snapshot = SnapshotAny;
			flags &= ~SO_TEMP_SNAPSHOT;
			flags |= FPS_SO_TIMESTAMP;
		}
	}
	if (flags & FPS_SO_TIMESTAMP)
	{
		TableScanDesc scan = heap_routine->scan_begin(rel, snapshot, nkeys, key,
													  pscan, flags);

		FpsTsScan  *ts = fps_ts_scan_of(scan, true);

		ts->curcid = curcid != InvalidCommandId ? curcid : GetCurrentCommandId(false);
		ts->mvcc_snapshot = mvcc_snapshot;
		return scan;
	}
	return heap_routine->scan_begin(rel, snapshot, nkeys, key, pscan, flags);
}

/* Does a scan read at a timestamp (its versions judged by fps_ts_visible)? */
static inline bool
scan_at_timestamp(TableScanDesc scan)
{
	return (scan->rs_flags & FPS_SO_TIMESTAMP) != 0;
}

/* Is the version in slot, which a scan at a timestamp found, to be read? */
static inline bool
ts_visible_in_scan(TableScanDesc scan, TupleTableSlot *slot)
{
	FpsTsScan  *s = fps_ts_scan_of(scan, false);

	return fps_ts_visible(scan->rs_rd, slot, s, s->curcid);
}

static void
fps_scan_rescan(TableScanDesc scan, struct ScanKeyData *key, bool set_params,
				bool allow_strat, bool allow_sync, bool allow_pagemode)
{
	if (scan_at_timestamp(scan))
		fps_ts_scan_reset(fps_ts_scan_of(scan, false));
	heap_routine->scan_rescan(scan, key, set_params, allow_strat, allow_sync,
							  allow_pagemode);
}

static void
fps_scan_end(TableScanDesc scan)
{
	if (scan_at_timestamp(scan))
		fps_ts_scan_forget(scan);
	heap_routine->scan_end(scan);
}

/* ---- index fetches: their predicate state rides along (am/predicate.c) ---- */

static struct IndexFetchTableData *
fps_index_fetch_begin(Relation rel)
{
	FpsIndexFetch *f = palloc0(sizeof(FpsIndexFetch));

	/* as heapam_index_fetch_begin() */
	f->heap.xs_base.rel = rel;
	f->heap.xs_cbuf = InvalidBuffer;
	f->predicate_pending = true;
	f->ts.follow = true;
	return &f->heap.xs_base;
}

static void
fps_index_fetch_reset(struct IndexFetchTableData *fetch)
{
	heap_routine->index_fetch_reset(fetch);
	fps_ts_scan_reset(&((FpsIndexFetch *) fetch)->ts);
	fps_index_predicate_reset((FpsIndexFetch *) fetch);
}

static void
fps_index_fetch_end(struct IndexFetchTableData *fetch)
{
	fps_ts_scan_reset(&((FpsIndexFetch *) fetch)->ts);
	fps_index_predicate_end((FpsIndexFetch *) fetch);
	heap_routine->index_fetch_end(fetch);
}

/* ---- reads ---- */

static bool
fps_scan_getnextslot(TableScanDesc scan, ScanDirection direction,
					 TupleTableSlot *slot)
{
	if (scan_at_timestamp(scan))
	{
		while (heap_routine->scan_getnextslot(scan, direction, slot))
			if (ts_visible_in_scan(scan, slot))
				return true;
		return false;
	}
	if (!heap_routine->scan_getnextslot(scan, direction, slot))
		return false;
	if (fps_snapshot_is_tracked(scan->rs_snapshot))
		fps_track_read(scan->rs_rd, slot, false);
	return true;
}

/*
 * At a timestamp a row's version in the range may have a predecessor
 * outside it, which the walk must start from (am/visibility.c): heap scans
 * the whole relation, and fps_ts_visible() keeps the range.
 */
static void
fps_scan_set_tidrange(TableScanDesc scan, ItemPointer mintid, ItemPointer maxtid)
{
	if (scan_at_timestamp(scan))
	{
		ItemPointerData first;
		ItemPointerData last;

		fps_ts_scan_set_range(fps_ts_scan_of(scan, false), mintid, maxtid);
		ItemPointerSet(&first, 0, FirstOffsetNumber);
		ItemPointerSet(&last, MaxBlockNumber, MaxOffsetNumber);
		heap_routine->scan_set_tidrange(scan, &first, &last);
		return;
	}
	heap_routine->scan_set_tidrange(scan, mintid, maxtid);
}

static bool
fps_scan_getnextslot_tidrange(TableScanDesc scan, ScanDirection direction,
							  TupleTableSlot *slot)
{
	if (scan_at_timestamp(scan))
	{
		while (heap_routine->scan_getnextslot_tidrange(scan, direction, slot))
			if (ts_visible_in_scan(scan, slot))
				return true;
		return false;
	}
	if (!heap_routine->scan_getnextslot_tidrange(scan, direction, slot))
		return false;
	if (fps_snapshot_is_tracked(scan->rs_snapshot))
		fps_track_read(scan->rs_rd, slot, false);
	return true;
}

/*
 * At a timestamp, the index entry's HOT chain is walked member by member
 * (SnapshotAny hands them out one call at a time) until the version at ts.
 */
static bool
index_fetch_at_timestamp(struct IndexFetchTableData *scan, ItemPointer tid,
						 Snapshot snapshot, TupleTableSlot *slot,
						 bool *call_again, bool *all_dead)
{
	bool		again = *call_again;

	*call_again = false;
	for (;;)
	{
		if (!heap_routine->index_fetch_tuple(scan, tid, SnapshotAny, slot,
											 &again, all_dead))
			return false;
		if (fps_ts_visible(scan->rel, slot, &((FpsIndexFetch *) scan)->ts,
						   snapshot->curcid))
			return true;		/* one version per row is at ts */
		if (!again)
			return false;
	}
}

static bool
fps_index_fetch_tuple(struct IndexFetchTableData *scan, ItemPointer tid,
					  Snapshot snapshot, TupleTableSlot *slot,
					  bool *call_again, bool *all_dead)
{
	FpsIndexFetch *f = (FpsIndexFetch *) scan;

	snapshot = fps_index_predicate_snapshot(f, snapshot);
	if (fps_ts_read_of(scan->rel, snapshot))
		return index_fetch_at_timestamp(scan, tid, snapshot, slot, call_again, all_dead);
	/* a new entry (not the next member of a HOT chain) */
	if (f->gap.active && !*call_again)
		fps_gap_read_entry(f);
	if (!heap_routine->index_fetch_tuple(scan, tid, snapshot, slot,
										 call_again, all_dead))
	{
		if (f->gap.check_unseen)
			fps_gap_check_unseen(f, tid, snapshot);
		return false;
	}
	if (fps_snapshot_is_tracked(snapshot))
		fps_track_read(scan->rel, slot, snapshot->snapshot_type == SNAPSHOT_DIRTY);
	/* its row keys protect a lookup by row identity (am/point_lookup.c) */
	f->lookup.found = true;
	return true;
}

static bool
fps_tuple_fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
							TupleTableSlot *slot)
{
	Snapshot	fresh = NULL;
	bool		found;

	/* a fetch by TID on an MVCC snapshot is a TID scan: coarse predicate */
	if (snapshot != NULL && IsMVCCSnapshot(snapshot))
		fresh = fps_read_relation_predicate(rel, snapshot);
	if (fresh == NULL && fps_ts_read_of(rel, snapshot))
	{
		fps_ts_relation_check(rel);
		return heap_routine->tuple_fetch_row_version(rel, tid, SnapshotAny, slot) &&
			fps_ts_visible(rel, slot, NULL, snapshot->curcid);
	}
	found = heap_routine->tuple_fetch_row_version(rel, tid,
												  fresh ? fresh : snapshot, slot);
	if (fresh != NULL)
		UnregisterSnapshot(fresh);
	if (!found)
		return false;
	if (snapshot != NULL && IsMVCCSnapshot(snapshot))
		fps_track_read(rel, slot, false);
	return true;
}

/*
 * At a timestamp every line pointer of the page is a candidate (an exact
 * page's TIDs name HOT chains, whose members heap would not hand out):
 * the page is read as lossy, and the executor rechecks the quals.
 */
static bool
fps_scan_bitmap_next_block(TableScanDesc scan, struct TBMIterateResult *tbmres)
{
	if (scan_at_timestamp(scan))
	{
		tbmres->ntuples = -1;
		tbmres->recheck = true;
	}
	return heap_routine->scan_bitmap_next_block(scan, tbmres);
}

static bool
fps_scan_bitmap_next_tuple(TableScanDesc scan, struct TBMIterateResult *tbmres,
						   TupleTableSlot *slot)
{
	if (scan_at_timestamp(scan))
	{
		while (heap_routine->scan_bitmap_next_tuple(scan, tbmres, slot))
			if (ts_visible_in_scan(scan, slot))
				return true;
		return false;
	}
	if (!heap_routine->scan_bitmap_next_tuple(scan, tbmres, slot))
		return false;
	if (fps_snapshot_is_tracked(scan->rs_snapshot))
		fps_track_read(scan->rs_rd, slot, false);
	return true;
}

static bool
fps_scan_sample_next_tuple(TableScanDesc scan, struct SampleScanState *scanstate,
						   TupleTableSlot *slot)
{
	if (scan_at_timestamp(scan))
	{
		while (heap_routine->scan_sample_next_tuple(scan, scanstate, slot))
			if (ts_visible_in_scan(scan, slot))
				return true;
		return false;
	}
	if (!heap_routine->scan_sample_next_tuple(scan, scanstate, slot))
		return false;
	if (fps_snapshot_is_tracked(scan->rs_snapshot))
		fps_track_read(scan->rs_rd, slot, false);
	return true;
}

/*
 * Locking a row reads its latest version (ON CONFLICT DO UPDATE, FOR UPDATE).
 * Under READ COMMITTED, heap follows the update chain to a newer version
 * (traversed) so that the executor can re-evaluate the statement on it;
 * that is allowed only where it is serializable (reevaluate.c).
 */
static TM_Result
fps_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
			   TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
			   LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	ItemPointerData found_tid = *tid;	/* heap moves tid to the newest version */
	TM_Result	result = fps_rowlock_tuple_lock(rel, tid, snapshot, slot, cid, mode,
												wait_policy, flags, tmfd);

	if (result == TM_Ok)
	{
		FpsRelInfo *info;

		if ((flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) && tmfd->traversed &&
			fps_tracking_active(rel, &info))
			fps_reevaluate_on(rel, info, slot, &found_tid);
		else
			fps_track_read(rel, slot, false);
	}
	else if (result == TM_Updated || result == TM_Deleted)
	{
		/*
		 * The executor would skip the row (FOR UPDATE of a row deleted
		 * meanwhile) or retry (ON CONFLICT): either way the version this
		 * transaction found is gone, which no serial order explains.
		 */
		fps_refuse_concurrent_update(rel);
	}
	return result;
}

/* ---- writes ---- */

static void
fps_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
				 int options, struct BulkInsertStateData *bistate)
{
	heap_routine->tuple_insert(rel, slot, cid, options, bistate);
	fps_track_insert(rel, slot);
}

static void
fps_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
							 int options, struct BulkInsertStateData *bistate,
							 uint32 specToken)
{
	heap_routine->tuple_insert_speculative(rel, slot, cid, options, bistate,
										   specToken);
	/* kept in the write set even if the insertion is killed: safe */
	fps_track_insert(rel, slot);
}

static void
fps_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
				 CommandId cid, int options, struct BulkInsertStateData *bistate)
{
	int			i;

	heap_routine->multi_insert(rel, slots, nslots, cid, options, bistate);
	for (i = 0; i < nslots; i++)
		fps_track_insert(rel, slots[i]);
}

static TM_Result
fps_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
				 Snapshot snapshot, Snapshot crosscheck, bool wait,
				 TM_FailureData *tmfd, bool changingPart)
{
	TM_Result	result = fps_rowlock_tuple_delete(rel, tid, cid, snapshot, crosscheck,
												  wait, tmfd, changingPart);

	if (result == TM_Ok)
		fps_track_delete(rel, tid);
	else if (result == TM_Updated || result == TM_Deleted)
		fps_concurrent_update_found(rel, result);
	return result;
}

static TM_Result
fps_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				 bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				 bool *update_indexes)
{
	ItemPointerData old_tid = *otid;
	TM_Result	result = fps_rowlock_tuple_update(rel, otid, slot, cid, snapshot,
												  crosscheck, wait, tmfd, lockmode,
												  update_indexes);

	if (result == TM_Ok)
		fps_track_update(rel, &old_tid, slot, *update_indexes);
	else if (result == TM_Updated || result == TM_Deleted)
		fps_concurrent_update_found(rel, result);
	return result;
}

/* ---- DDL: storage replaced, keys may change ---- */

static void
fps_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
							  char persistence, TransactionId *freezeXid,
							  MultiXactId *minmulti)
{
	heap_routine->relation_set_new_filenode(rel, newrnode, persistence,
											freezeXid, minmulti);
	if (persistence == RELPERSISTENCE_PERMANENT ||
		persistence == RELPERSISTENCE_UNLOGGED)
		fps_note_untracked_write_of(rel);
}

static void
fps_relation_nontransactional_truncate(Relation rel)
{
	heap_routine->relation_nontransactional_truncate(rel);
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP)
		fps_note_untracked_write_of(rel);
}

/* heap's index build scans call heap_getnext(), which wants heap's routine */
static double
fps_index_build_range_scan(Relation table_rel, Relation index_rel,
						   struct IndexInfo *index_info, bool allow_sync,
						   bool anyvisible, bool progress,
						   BlockNumber start_blockno, BlockNumber numblocks,
						   IndexBuildCallback callback, void *callback_state,
						   TableScanDesc scan)
{
	const TableAmRoutine *saved = table_rel->rd_tableam;
	double		result;

	/*
	 * A scan begun by the caller (amcheck's heapallindexed) on an MVCC
	 * snapshot reads heap's way, by that snapshot, not at a timestamp: heap
	 * judges the tuples by the scan's snapshot itself, and SnapshotAny would
	 * hand it every dead member of a HOT chain.  It has read nothing yet.
	 */
	if (scan != NULL && scan_at_timestamp(scan))
	{
		Snapshot	mvcc = fps_ts_scan_of(scan, false)->mvcc_snapshot;

		if (mvcc == NULL)
			elog(ERROR, "fpsketch: index build scan at a timestamp without its snapshot");
		fps_ts_scan_forget(scan);
		scan->rs_snapshot = mvcc;
		scan->rs_flags &= ~FPS_SO_TIMESTAMP;
	}
	table_rel->rd_tableam = heap_routine;
	PG_TRY();
	{
		result = heap_routine->index_build_range_scan(table_rel, index_rel,
													  index_info, allow_sync,
													  anyvisible, progress,
													  start_blockno, numblocks,
													  callback, callback_state,
													  scan);
	}
	PG_FINALLY();
	{
		table_rel->rd_tableam = saved;
	}
	PG_END_TRY();
	return result;
}

static void
fps_index_validate_scan(Relation table_rel, Relation index_rel,
						struct IndexInfo *index_info, Snapshot snapshot,
						struct ValidateIndexState *state)
{
	const TableAmRoutine *saved = table_rel->rd_tableam;

	table_rel->rd_tableam = heap_routine;
	PG_TRY();
	{
		heap_routine->index_validate_scan(table_rel, index_rel, index_info,
										  snapshot, state);
	}
	PG_FINALLY();
	{
		table_rel->rd_tableam = saved;
	}
	PG_END_TRY();
}

static Oid
fps_relation_toast_am(Relation rel)
{
	return HEAP_TABLE_AM_OID;
}

/* ---- the routine ---- */

const TableAmRoutine *
fps_table_am_routine(void)
{
	if (heap_routine == NULL)
	{
		heap_routine = GetHeapamTableAmRoutine();
		fps_routine = *heap_routine;

		fps_routine.scan_begin = fps_scan_begin;
		fps_routine.scan_rescan = fps_scan_rescan;
		fps_routine.scan_end = fps_scan_end;
		fps_routine.scan_getnextslot = fps_scan_getnextslot;
		fps_routine.scan_set_tidrange = fps_scan_set_tidrange;
		fps_routine.scan_getnextslot_tidrange = fps_scan_getnextslot_tidrange;
		fps_routine.index_fetch_begin = fps_index_fetch_begin;
		fps_routine.index_fetch_reset = fps_index_fetch_reset;
		fps_routine.index_fetch_end = fps_index_fetch_end;
		fps_routine.index_fetch_tuple = fps_index_fetch_tuple;
		fps_routine.tuple_fetch_row_version = fps_tuple_fetch_row_version;
		fps_routine.scan_bitmap_next_block = fps_scan_bitmap_next_block;
		fps_routine.scan_bitmap_next_tuple = fps_scan_bitmap_next_tuple;
		fps_routine.scan_sample_next_tuple = fps_scan_sample_next_tuple;
		fps_routine.tuple_lock = fps_tuple_lock;

		fps_routine.tuple_insert = fps_tuple_insert;
		fps_routine.tuple_insert_speculative = fps_tuple_insert_speculative;
		fps_routine.multi_insert = fps_multi_insert;
		fps_routine.tuple_delete = fps_tuple_delete;
		fps_routine.tuple_update = fps_tuple_update;

		fps_routine.relation_set_new_filenode = fps_relation_set_new_filenode;
		fps_routine.relation_nontransactional_truncate = fps_relation_nontransactional_truncate;
		fps_routine.index_build_range_scan = fps_index_build_range_scan;
		fps_routine.index_validate_scan = fps_index_validate_scan;
		fps_routine.relation_toast_am = fps_relation_toast_am;
	}
	return &fps_routine;
}

bool
fps_is_fpsketch_relation(Relation rel)
{
	return rel->rd_tableam == &fps_routine;
}

PG_FUNCTION_INFO_V1(fpsketch_tableam_handler);

Datum
fpsketch_tableam_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(fps_table_am_routine());
}
