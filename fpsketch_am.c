/*-------------------------------------------------------------------------
 *
 * fpsketch_am.c
 *	  The fpsketch table access method: heap's routine, with every callback
 *	  that reads or writes a row version wrapped so that cc/ sees it.
 *
 * Storage, WAL, VACUUM, TOAST and crash recovery are heap's, unchanged.
 * This file holds all the heap knowledge the protocols need: which version
 * a callback returned, whether that version was created by this transaction
 * (own writes are not reads), and whether it already has a committed
 * successor (the staleness check of DESIGN §5).
 *
 * Reads are recorded for MVCC and dirty snapshots (the latter are how unique
 * and ON CONFLICT arbiter checks see rows); SnapshotAny and friends belong to
 * maintenance (CLUSTER, triggers' old rows, EvalPlanQual fetches) and are not
 * reads of the transaction's logic.  Writes are recorded after heap reports
 * TM_Ok.  A concurrent update that heap reports (TM_Updated/TM_Deleted) is a
 * 40001: re-evaluating the statement on the newer version (EvalPlanQual)
 * could silently break serializability.
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
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "cc/cc.h"
#include "fpsketch_am.h"

static TableAmRoutine fps_routine;
static const TableAmRoutine *heap_routine;

/* ---- what a heap version tells the protocol ---- */

/* Version created by this transaction (or one of its subtransactions)? */
static bool
version_is_own(TupleTableSlot *slot)
{
	bool		should_free;
	HeapTuple	tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
	bool		own;

	own = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetRawXmin(tuple->t_data));
	if (should_free)
		heap_freetuple(tuple);
	return own;
}

typedef struct StaleCheckArg
{
	Relation	rel;
	TupleTableSlot *slot;
} StaleCheckArg;

/*
 * Does the version in slot have a committed updater or deleter, i.e. is it
 * no longer the latest?  Read under the buffer's share lock.  An updater that
 * has committed in clog but is still in the proc array counts as in progress:
 * it holds the lock bits of what it wrote (taken in PRE_COMMIT), so the
 * protocol's validation sees it instead.
 */
static bool
version_is_stale(void *arg)
{
	StaleCheckArg *check = (StaleCheckArg *) arg;
	ItemPointer tid = &check->slot->tts_tid;
	Buffer		buffer;
	Page		page;
	ItemId		lp;
	bool		stale = true;	/* a version we cannot find is not current */

	buffer = ReadBuffer(check->rel, ItemPointerGetBlockNumber(tid));
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	if (ItemPointerGetOffsetNumber(tid) <= PageGetMaxOffsetNumber(page))
	{
		lp = PageGetItemId(page, ItemPointerGetOffsetNumber(tid));
		if (ItemIdIsNormal(lp))
		{
			HeapTupleHeader htup = (HeapTupleHeader) PageGetItem(page, lp);

			stale = false;
			if (!(htup->t_infomask & HEAP_XMAX_INVALID) &&
				!HEAP_XMAX_IS_LOCKED_ONLY(htup->t_infomask))
			{
				TransactionId xmax = HeapTupleHeaderGetUpdateXid(htup);

				stale = TransactionIdIsValid(xmax) &&
					!TransactionIdIsCurrentTransactionId(xmax) &&
					!TransactionIdIsInProgress(xmax) &&
					TransactionIdDidCommit(xmax);
			}
		}
	}
	UnlockReleaseBuffer(buffer);
	return stale;
}

static inline bool
snapshot_is_tracked(Snapshot snapshot)
{
	return snapshot != NULL &&
		(IsMVCCSnapshot(snapshot) || snapshot->snapshot_type == SNAPSHOT_DIRTY);
}

/* The version in slot was read by the transaction's logic. */
static void
track_read(Relation rel, TupleTableSlot *slot)
{
	FpsRelInfo *info;
	StaleCheckArg check;
	FpsAccess  *access;

	if (!fps_tracking_active(rel, &info) || version_is_own(slot))
		return;
	if (unlikely(fps_ddl_depth > 0) && CheckRelationLockedByMe(rel, ShareLock, true))
	{
		fps_txn_note_untracked_write();
		return;
	}
	access = fps_txn_access(fps_key_from_slot(rel, info, slot), info->relid);
	check.rel = rel;
	check.slot = slot;
	tictoc_read(access, version_is_stale, &check);
}

/*
 * Rows written into a relation whose storage was created in this
 * transaction (CREATE TABLE, TRUNCATE) are invisible to everyone else until
 * commit and the ACCESS EXCLUSIVE lock keeps readers away; they are covered
 * by the floor raise at commit instead of one pin per row.
 */
static bool
storage_is_new_in_xact(Relation rel)
{
	return rel->rd_createSubid != InvalidSubTransactionId ||
		rel->rd_firstRelfilenodeSubid != InvalidSubTransactionId;
}

static void
track_write_slot(Relation rel, TupleTableSlot *slot)
{
	FpsRelInfo *info;

	if (!fps_tracking_active(rel, &info))
		return;
	if (storage_is_new_in_xact(rel))
	{
		fps_txn_note_untracked_write();
		return;
	}
	tictoc_write(fps_txn_access(fps_key_from_slot(rel, info, slot), info->relid));
}

/* The key of the version at tid, which this transaction just updated/deleted. */
static void
track_write_old_version(Relation rel, ItemPointer tid)
{
	FpsRelInfo *info;
	fps_u64		key;

	if (!fps_tracking_active(rel, &info))
		return;
	if (storage_is_new_in_xact(rel))
	{
		fps_txn_note_untracked_write();
		return;
	}
	if (info->by_tid)
		key = fps_key_from_tid(rel, tid);
	else
	{
		TupleTableSlot *old = MakeSingleTupleTableSlot(RelationGetDescr(rel),
													   &TTSOpsBufferHeapTuple);

		if (!heap_routine->tuple_fetch_row_version(rel, tid, SnapshotAny, old))
			elog(ERROR, "fpsketch: could not refetch the old version of a row of \"%s\"",
				 RelationGetRelationName(rel));
		key = fps_key_from_slot(rel, info, old);
		ExecDropSingleTupleTableSlot(old);
	}
	tictoc_write(fps_txn_access(key, info->relid));
}

static void
refuse_concurrent_update(Relation rel)
{
	FpsRelInfo *info;

	if (fps_tracking_active(rel, &info))
		fps_abort(FPS_ABORT_CONCURRENT_UPDATE, info->relid);
}

/* ---- reads ---- */

static bool
fps_scan_getnextslot(TableScanDesc scan, ScanDirection direction,
					 TupleTableSlot *slot)
{
	if (!heap_routine->scan_getnextslot(scan, direction, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot);
	return true;
}

static bool
fps_scan_getnextslot_tidrange(TableScanDesc scan, ScanDirection direction,
							  TupleTableSlot *slot)
{
	if (!heap_routine->scan_getnextslot_tidrange(scan, direction, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot);
	return true;
}

static bool
fps_index_fetch_tuple(struct IndexFetchTableData *scan, ItemPointer tid,
					  Snapshot snapshot, TupleTableSlot *slot,
					  bool *call_again, bool *all_dead)
{
	if (!heap_routine->index_fetch_tuple(scan, tid, snapshot, slot,
										 call_again, all_dead))
		return false;
	if (snapshot_is_tracked(snapshot))
		track_read(scan->rel, slot);
	return true;
}

static bool
fps_tuple_fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
							TupleTableSlot *slot)
{
	if (!heap_routine->tuple_fetch_row_version(rel, tid, snapshot, slot))
		return false;
	if (snapshot != NULL && IsMVCCSnapshot(snapshot))
		track_read(rel, slot);
	return true;
}

static bool
fps_scan_bitmap_next_tuple(TableScanDesc scan, struct TBMIterateResult *tbmres,
						   TupleTableSlot *slot)
{
	if (!heap_routine->scan_bitmap_next_tuple(scan, tbmres, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot);
	return true;
}

static bool
fps_scan_sample_next_tuple(TableScanDesc scan, struct SampleScanState *scanstate,
						   TupleTableSlot *slot)
{
	if (!heap_routine->scan_sample_next_tuple(scan, scanstate, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot);
	return true;
}

/*
 * Locking a row reads its latest version (ON CONFLICT DO UPDATE, FOR UPDATE).
 * Under READ COMMITTED, heap follows the update chain to a newer version
 * (traversed) so that the executor can re-evaluate the statement on it; that
 * re-evaluation is not serializable in general, so it is a 40001 here.
 */
static TM_Result
fps_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
			   TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
			   LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	TM_Result	result = heap_routine->tuple_lock(rel, tid, snapshot, slot, cid,
												  mode, wait_policy, flags, tmfd);

	if (result == TM_Ok)
	{
		if ((flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) && tmfd->traversed)
			refuse_concurrent_update(rel);
		track_read(rel, slot);
	}
	else if (result == TM_Updated || result == TM_Deleted)
	{
		/*
		 * The executor would skip the row (FOR UPDATE of a row deleted
		 * meanwhile) or retry (ON CONFLICT): either way the version this
		 * transaction found is gone, which no serial order explains.
		 */
		refuse_concurrent_update(rel);
	}
	return result;
}

/* ---- writes ---- */

static void
fps_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
				 int options, struct BulkInsertStateData *bistate)
{
	heap_routine->tuple_insert(rel, slot, cid, options, bistate);
	track_write_slot(rel, slot);
}

static void
fps_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
							 int options, struct BulkInsertStateData *bistate,
							 uint32 specToken)
{
	heap_routine->tuple_insert_speculative(rel, slot, cid, options, bistate,
										   specToken);
	/* kept in the write set even if the insertion is killed: safe */
	track_write_slot(rel, slot);
}

static void
fps_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
				 CommandId cid, int options, struct BulkInsertStateData *bistate)
{
	int			i;

	heap_routine->multi_insert(rel, slots, nslots, cid, options, bistate);
	for (i = 0; i < nslots; i++)
		track_write_slot(rel, slots[i]);
}

static TM_Result
fps_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
				 Snapshot snapshot, Snapshot crosscheck, bool wait,
				 TM_FailureData *tmfd, bool changingPart)
{
	TM_Result	result = heap_routine->tuple_delete(rel, tid, cid, snapshot,
													crosscheck, wait, tmfd,
													changingPart);

	if (result == TM_Ok)
		track_write_old_version(rel, tid);
	else if (result == TM_Updated || result == TM_Deleted)
		refuse_concurrent_update(rel);
	return result;
}

static TM_Result
fps_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				 bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				 bool *update_indexes)
{
	ItemPointerData old_tid = *otid;
	TM_Result	result = heap_routine->tuple_update(rel, otid, slot, cid,
													snapshot, crosscheck, wait,
													tmfd, lockmode,
													update_indexes);

	if (result == TM_Ok)
	{
		track_write_old_version(rel, &old_tid);
		track_write_slot(rel, slot);
	}
	else if (result == TM_Updated || result == TM_Deleted)
		refuse_concurrent_update(rel);
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
		fps_txn_note_untracked_write();
}

static void
fps_relation_nontransactional_truncate(Relation rel)
{
	heap_routine->relation_nontransactional_truncate(rel);
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP)
		fps_txn_note_untracked_write();
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

		fps_routine.scan_getnextslot = fps_scan_getnextslot;
		fps_routine.scan_getnextslot_tidrange = fps_scan_getnextslot_tidrange;
		fps_routine.index_fetch_tuple = fps_index_fetch_tuple;
		fps_routine.tuple_fetch_row_version = fps_tuple_fetch_row_version;
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
