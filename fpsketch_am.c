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
#include "access/subtrans.h"
#include "access/tableam.h"
#include "access/nbtree.h"
#include "access/hash.h"
#include "access/relscan.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "executor/execdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "access/sysattr.h"
#include "commands/trigger.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "miscadmin.h"

#include "cc/cc.h"
#include "fpsketch_am.h"

static TableAmRoutine fps_routine;
static const TableAmRoutine *heap_routine;

static void write_predicate_keys_of_row(FpsRelInfo *info, TupleTableSlot *slot);
static void write_predicate_key(FpsRelInfo *info, fps_u64 key);
static void write_moved_predicate_keys(Relation rel, FpsRelInfo *info,
									   TupleTableSlot *old, TupleTableSlot *new);
struct FpsIndexFetch;
static void release_fresh_snapshot(struct FpsIndexFetch *f);
static uint32 current_statement(void);
static bool statement_only_reads(void);
static FpsGroupMask statement_groups(Relation rel, FpsRelInfo *info, bool written);

/* ---- what a heap version tells the protocol ---- */

/* The transaction that created the version in slot. */
static TransactionId
version_xmin(TupleTableSlot *slot)
{
	bool		should_free;
	HeapTuple	tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
	TransactionId xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);

	if (should_free)
		heap_freetuple(tuple);
	return xmin;
}

typedef struct StaleCheckArg
{
	Relation	rel;
	TupleTableSlot *slot;
} StaleCheckArg;

/*
 * Share-lock the page of the version in check's slot and return the
 * version's header, or NULL if its line pointer no longer holds a tuple.
 * The slot's own buffer pin is used when it has one (the common case: scans
 * and index fetches return buffer slots), saving a buffer lookup per read.
 */
static HeapTupleHeader
lock_version_header(StaleCheckArg *check, Buffer *buffer, bool *pinned_here)
{
	TupleTableSlot *slot = check->slot;
	ItemPointer tid = &slot->tts_tid;
	BlockNumber block = ItemPointerGetBlockNumber(tid);
	OffsetNumber offset = ItemPointerGetOffsetNumber(tid);
	Page		page;
	ItemId		lp;

	*pinned_here = true;
	if (TTS_IS_BUFFERTUPLE(slot))
	{
		Buffer		slot_buffer = ((BufferHeapTupleTableSlot *) slot)->buffer;

		if (BufferIsValid(slot_buffer) && BufferGetBlockNumber(slot_buffer) == block)
		{
			*buffer = slot_buffer;
			*pinned_here = false;
		}
	}
	if (*pinned_here)
		*buffer = ReadBuffer(check->rel, block);
	LockBuffer(*buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(*buffer);
	if (offset > PageGetMaxOffsetNumber(page))
		return NULL;
	lp = PageGetItemId(page, offset);
	if (!ItemIdIsNormal(lp))
		return NULL;
	return (HeapTupleHeader) PageGetItem(page, lp);
}

static void
unlock_version_header(Buffer buffer, bool pinned_here)
{
	if (pinned_here)
		UnlockReleaseBuffer(buffer);
	else
		LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
}

/* The transaction that updated or deleted this version (not a mere locker). */
static TransactionId
version_updater(HeapTupleHeader htup)
{
	if ((htup->t_infomask & HEAP_XMAX_INVALID) ||
		HEAP_XMAX_IS_LOCKED_ONLY(htup->t_infomask))
		return InvalidTransactionId;
	return HeapTupleHeaderGetUpdateXid(htup);
}

/*
 * Does the version in slot have a committed updater or deleter, i.e. is it
 * no longer the latest?  An updater that has committed in clog but is still
 * in the proc array counts as in progress: it holds the lock bits of what
 * it wrote (taken in PRE_COMMIT), so the protocol's validation sees it
 * instead.
 */
static bool
version_is_stale(void *arg)
{
	Buffer		buffer;
	bool		pinned_here;
	HeapTupleHeader htup = lock_version_header(arg, &buffer, &pinned_here);
	bool		stale = true;	/* a version we cannot find is not current */

	if (htup != NULL)
	{
		TransactionId updater = version_updater(htup);

		stale = TransactionIdIsValid(updater) &&
			!TransactionIdIsCurrentTransactionId(updater) &&
			!TransactionIdIsInProgress(updater) &&
			TransactionIdDidCommit(updater);
	}
	unlock_version_header(buffer, pinned_here);
	return stale;
}

/*
 * The transaction updating or deleting the version right now, if any.  An
 * updater that was a subtransaction rolled back since (ROLLBACK TO
 * SAVEPOINT) names its top-level transaction while that runs: the write
 * stays in its write set, and its dirty mark, until it ends.
 */
static TransactionId
version_updater_in_progress(void *arg)
{
	Buffer		buffer;
	bool		pinned_here;
	HeapTupleHeader htup = lock_version_header(arg, &buffer, &pinned_here);
	TransactionId updater = InvalidTransactionId;

	if (htup != NULL)
	{
		updater = version_updater(htup);

		/* a rolled-back updater may be hinted invalid; its xid is still there */
		if (!TransactionIdIsValid(updater) &&
			!(htup->t_infomask & HEAP_XMAX_IS_MULTI) &&
			!HEAP_XMAX_IS_LOCKED_ONLY(htup->t_infomask))
			updater = HeapTupleHeaderGetRawXmax(htup);
		if (TransactionIdIsNormal(updater) && !TransactionIdIsInProgress(updater) &&
			TransactionIdFollowsOrEquals(updater, TransactionXmin))
			updater = SubTransGetTopmostTransaction(updater);
		if (!TransactionIdIsValid(updater) ||
			TransactionIdIsCurrentTransactionId(updater) ||
			!TransactionIdIsInProgress(updater))
			updater = InvalidTransactionId;
	}
	unlock_version_header(buffer, pinned_here);
	return updater;
}

static inline bool
snapshot_is_tracked(Snapshot snapshot)
{
	return snapshot != NULL &&
		(IsMVCCSnapshot(snapshot) || snapshot->snapshot_type == SNAPSHOT_DIRTY);
}

/*
 * Keep the versions this transaction reads from being pruned until it
 * commits: at READ COMMITTED a backend's xmin otherwise advances between
 * statements, and a reread (see reread_first_version) needs the version
 * read before, and its TOAST chunks (which detoasting finds for as long as
 * they are not pruned, deleted or not).  Versions read later are protected too: their successors'
 * xids are at least the xmin of any snapshot that does not see them, and
 * snapshot xmins only grow.
 */
static void
hold_read_versions(void)
{
	if (!fps_stable_rereads ||
		fps_protocol != FPS_PROTOCOL_TICTOC || IsolationUsesXactSnapshot() ||
		!ActiveSnapshotSet())
		return;
	fps_txn.held_snapshot = RegisterSnapshotOnOwner(GetActiveSnapshot(),
													TopTransactionResourceOwner);
}

/*
 * Put the version at first_tid (created by first_xmin) into slot in place of
 * the newer version there, if the newer one is its HOT successor: then no
 * indexed column differs (an index scan's keys match both), and the heap
 * chain between them proves that first_tid still names the version read
 * (a pruned and reused line pointer would break the xmin/xmax links).
 */
static bool
store_first_version(Relation rel, ItemPointer first_tid, TransactionId first_xmin,
					TupleTableSlot *slot)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	ItemPointerData newest = slot->tts_tid;
	BlockNumber block = ItemPointerGetBlockNumber(first_tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(first_tid);
	HeapTupleHeader first = NULL;
	uint32		first_len = 0;
	TransactionId prev_xmax = InvalidTransactionId;
	bool		found = false;
	Buffer		buffer;
	Page		page;
	int			steps;

	if (!TTS_IS_BUFFERTUPLE(slot) || !TransactionIdIsValid(first_xmin) ||
		!ItemPointerIsValid(first_tid) ||
		ItemPointerGetBlockNumber(&newest) != block ||
		ItemPointerEquals(&newest, first_tid))
		return false;

	buffer = ReadBuffer(rel, block);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	for (steps = 0; steps < MaxHeapTuplesPerPage; steps++)
	{
		ItemId		lp;
		HeapTupleHeader htup;

		if (offnum < FirstOffsetNumber || offnum > PageGetMaxOffsetNumber(page))
			break;
		lp = PageGetItemId(page, offnum);
		if (!ItemIdIsNormal(lp))
			break;
		htup = (HeapTupleHeader) PageGetItem(page, lp);
		if (steps == 0)
		{
			if (!TransactionIdEquals(HeapTupleHeaderGetRawXmin(htup), first_xmin))
				break;
			first = htup;
			first_len = ItemIdGetLength(lp);
		}
		else if (!TransactionIdEquals(HeapTupleHeaderGetXmin(htup), prev_xmax))
			break;
		if (offnum == ItemPointerGetOffsetNumber(&newest))
		{
			found = true;
			break;
		}
		if (!HeapTupleHeaderIsHotUpdated(htup))
			break;
		prev_xmax = HeapTupleHeaderGetUpdateXid(htup);
		offnum = ItemPointerGetOffsetNumber(&htup->t_ctid);
	}
	if (found)
	{
		/* the slot keeps its own pin of the page: the tuple stays put */
		bslot->base.tupdata.t_data = first;
		bslot->base.tupdata.t_len = first_len;
		bslot->base.tupdata.t_self = *first_tid;
		bslot->base.tupdata.t_tableOid = RelationGetRelid(rel);
		ExecStoreBufferHeapTuple(&bslot->base.tupdata, slot, buffer);
	}
	UnlockReleaseBuffer(buffer);
	return found;
}

/*
 * A second read of a row found a version other than the one in the read set
 * (the key's wts moved): give a plain SELECT the version it read before, if
 * every group it reads was read from that version, instead of a 40001.
 * That is a read of a version overwritten since, which validation accepts
 * only if the overwrite committed after our commit_ts (TicToc's commit in
 * the past).  Groups up to failed went through cc_read already.
 */
static bool
reread_first_version(Relation rel, FpsRelInfo *info, fps_u64 key,
					 FpsGroupMask groups, int failed, FpsAccess *failed_access,
					 TupleTableSlot *slot)
{
	int			g;

	/* a row we also write cannot commit before its overwrite: lost update */
	if (!fps_stable_rereads || failed_access->is_write || !statement_only_reads())
		return false;
	for (g = failed + 1; g < info->ngroups; g++)
	{
		FpsAccess  *access;

		if (!(groups & (1 << g)))
			continue;
		access = fps_txn_lookup(fps_group_key(key, g));
		if (access == NULL || !access->is_read ||
			!ItemPointerEquals(&access->first_tid, &failed_access->first_tid) ||
			access->first_xmin != failed_access->first_xmin)
			return false;
	}
	if (!store_first_version(rel, &failed_access->first_tid,
							 failed_access->first_xmin, slot))
		return false;
	for (g = failed + 1; g < info->ngroups; g++)
		if (groups & (1 << g))
			fps_txn_lookup(fps_group_key(key, g))->nreads++;
	fps_atomic_add(&fps_counters->stable_rereads, 1);
	return true;
}

static bool holds_relation_exclusively(Relation rel);

/*
 * The version in slot was read by the transaction's logic: the column
 * groups the statement references, or all of them (all_groups: a unique
 * check, which compares whole rows).
 */
static void
track_read(Relation rel, TupleTableSlot *slot, bool all_groups)
{
	FpsRelInfo *info;
	StaleCheckArg check;
	FpsVersion	version;
	FpsAccess  *access;
	FpsGroupMask groups;
	TransactionId xmin;
	fps_u64		key;
	bool		all_read_before = true;
	ItemPointerData first_tid;
	TransactionId first_xmin = InvalidTransactionId;
	int			g;

	if (!fps_tracking_active(rel, &info))
		return;
	xmin = version_xmin(slot);
	if (TransactionIdIsCurrentTransactionId(xmin))
		return;					/* own writes are not reads */
	if ((unlikely(fps_ddl_depth > 0) && CheckRelationLockedByMe(rel, ShareLock, true)) ||
		holds_relation_exclusively(rel))
	{
		fps_txn_note_untracked_write();
		return;
	}
	check.rel = rel;
	check.slot = slot;

	/*
	 * Past its share of row pins for this relation, the transaction reads
	 * the relation's predicate key instead, which every writer of the
	 * relation writes (lock escalation, DESIGN §6).  Staleness is still
	 * checked: a version overwritten before the predicate key was sampled
	 * would otherwise go unnoticed.
	 */
	if (fps_txn_count_row_read(info->relid))
	{
		if (version_is_stale(&check))
			fps_abort(FPS_ABORT_STALE_READ, info->relid);
		return;
	}
	key = fps_key_from_slot(rel, info, slot);
	groups = all_groups ? FPS_ALL_GROUPS(info) : statement_groups(rel, info, false);
	version.is_stale = version_is_stale;
	version.updater_in_progress = version_updater_in_progress;
	version.arg = &check;
	for (g = 0; g < info->ngroups; g++)
	{
		if (!(groups & (1 << g)))
			continue;
		access = fps_txn_access(fps_group_key(key, g), info->relid);
		/* after the first access: the transaction's end will release it */
		if (unlikely(fps_txn.held_snapshot == NULL))
			hold_read_versions();
		if (access->nreads++ == 0)
		{
			access->read_stmt = current_statement();
			access->first_tid = slot->tts_tid;
			/* a version read while nothing kept it (or its TOAST) unpruned: no reread */
			access->first_xmin = fps_txn.held_snapshot != NULL ? xmin : InvalidTransactionId;
			all_read_before = false;
		}
		else if (all_read_before)
		{
			/* groups read from different versions: no one version fits */
			if (first_xmin == InvalidTransactionId)
			{
				first_tid = access->first_tid;
				first_xmin = access->first_xmin;
			}
			else if (!ItemPointerEquals(&first_tid, &access->first_tid) ||
					 first_xmin != access->first_xmin)
				all_read_before = false;
		}
		if (!cc_read(access, &version))
		{
			if (all_read_before &&
				reread_first_version(rel, info, key, groups, g, access, slot))
				return;
			fps_abort(FPS_ABORT_REREAD_CHANGED, info->relid);
		}
	}
}

/* Write the keys of groups of the row whose key is key. */
static void
write_row_groups(FpsRelInfo *info, fps_u64 key, FpsGroupMask groups)
{
	int			g;

	for (g = 0; g < info->ngroups; g++)
		if (groups & (1 << g))
			cc_write(fps_txn_access(fps_group_key(key, g), info->relid));
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

/* while accesses stay tracked past the crowding point, try the lock this often */
#define FPS_ESCALATION_RETRY 256

/*
 * Once the transaction's pins crowd the exact table: does it hold rel in
 * ACCESS EXCLUSIVE mode, or can it take that lock now, as a writer of rel?
 * Then no other running transaction has touched rel (it would hold a lock
 * on it until its end, after its pins are gone) or can until we end, so
 * rel's rows need no pins: the floor raise at commit orders the transaction
 * after every version it read and every key it wrote, as for storage new in
 * the transaction.  A bulk load (pg_restore's COPY into a table created by
 * an earlier transaction) or an UPDATE of a large table would otherwise
 * fail for want of entries once it pinned them all.  The lock is taken only
 * without waiting, so only if nobody else uses rel; if it goes away (a
 * subtransaction rolled back), accesses are tracked again.
 */
static bool
holds_relation_exclusively(Relation rel)
{
	static uint32 tries = 0;

	/*
	 * TicToc only: its floor raise lifts commit_ts above every version read
	 * untracked.  STO orders by the timestamp taken at BEGIN, which a version
	 * read without its check could postdate.
	 */
	if (likely(!fps_txn_pins_crowd_table()) || fps_protocol != FPS_PROTOCOL_TICTOC)
		return false;
	if (CheckRelationLockedByMe(rel, AccessExclusiveLock, false))
		return true;
	/* readers escalate by the relation key instead; only writers lock */
	if (!CheckRelationLockedByMe(rel, RowExclusiveLock, true))
		return false;
	/* a lock manager call per row would slow an access that must stay tracked */
	if (tries++ % FPS_ESCALATION_RETRY != 0)
		return false;
	if (!ConditionalLockRelation(rel, AccessExclusiveLock))
		return false;
	fps_atomic_add(&fps_counters->write_escalations, 1);
	return true;
}

/*
 * Is this write to rel tracked per key?  Writes to storage new in this
 * transaction, or to a relation the transaction holds exclusively, are
 * covered by the floor raise instead.
 */
static bool
write_is_tracked(Relation rel, FpsRelInfo **info)
{
	if (!fps_tracking_active(rel, info))
		return false;
	if (storage_is_new_in_xact(rel) || holds_relation_exclusively(rel))
	{
		fps_txn_note_untracked_write();
		return false;
	}
	return true;
}

/* The row in slot was inserted: all its groups, and every predicate. */
static void
track_write_slot(Relation rel, TupleTableSlot *slot)
{
	FpsRelInfo *info;

	if (!write_is_tracked(rel, &info))
		return;
	write_row_groups(info, fps_key_from_slot(rel, info, slot), FPS_ALL_GROUPS(info));
	write_predicate_key(info, info->escalation_key);
	write_predicate_keys_of_row(info, slot);
}

/* The version at tid, which this transaction just replaced or deleted. */
static TupleTableSlot *
refetch_old_version(Relation rel, ItemPointer tid)
{
	TupleTableSlot *old = MakeSingleTupleTableSlot(RelationGetDescr(rel),
												   &TTSOpsBufferHeapTuple);

	if (!heap_routine->tuple_fetch_row_version(rel, tid, SnapshotAny, old))
		elog(ERROR, "fpsketch: could not refetch the old version of a row of \"%s\"",
			 RelationGetRelationName(rel));
	return old;
}

/*
 * The version at tid was just deleted by this transaction: the row leaves
 * the equality predicates of its index keys, so a scan that found it there,
 * or finds it missing, conflicts through those keys.
 */
static void
track_write_delete(Relation rel, ItemPointer tid)
{
	FpsRelInfo *info;
	TupleTableSlot *old = NULL;
	fps_u64		key;

	if (!write_is_tracked(rel, &info))
		return;
	if (!info->by_tid || info->nprefix > 0)
		old = refetch_old_version(rel, tid);
	key = info->by_tid ? fps_key_from_tid(rel, tid) : fps_key_from_slot(rel, info, old);
	write_row_groups(info, key, FPS_ALL_GROUPS(info));

	/* escalated readers of the relation see every write through this key */
	write_predicate_key(info, info->escalation_key);
	if (old != NULL)
		write_predicate_keys_of_row(info, old);
	else
		write_predicate_key(info, info->relation_key);	/* no prefix indexes */
	if (old != NULL)
		ExecDropSingleTupleTableSlot(old);
}

/*
 * This transaction updated the version at old_tid to the one in slot,
 * changing the column groups the statement sets; update_indexes: not HOT.
 */
static void
track_write_update(Relation rel, ItemPointer old_tid, TupleTableSlot *slot,
				   bool update_indexes)
{
	FpsRelInfo *info;
	TupleTableSlot *old = NULL;
	FpsGroupMask groups;
	fps_u64		old_key;
	fps_u64		new_key;

	if (!write_is_tracked(rel, &info))
		return;
	if (!info->by_tid || update_indexes)
		old = refetch_old_version(rel, old_tid);
	groups = statement_groups(rel, info, true);
	old_key = info->by_tid ? fps_key_from_tid(rel, old_tid) : fps_key_from_slot(rel, info, old);
	new_key = fps_key_from_slot(rel, info, slot);
	write_row_groups(info, old_key, groups);
	if (new_key != old_key)
		write_row_groups(info, new_key, groups);

	/* escalated readers of the relation see every write through this key */
	write_predicate_key(info, info->escalation_key);
	if (update_indexes)
		write_moved_predicate_keys(rel, info, old, slot);
	if (old != NULL)
		ExecDropSingleTupleTableSlot(old);
}

static void
refuse_concurrent_update(Relation rel)
{
	FpsRelInfo *info;

	if (fps_tracking_active(rel, &info))
		fps_abort(FPS_ABORT_CONCURRENT_UPDATE, info->relid);
}

static bool reevaluation_is_safe(Relation rel, FpsRelInfo *info,
								 TupleTableSlot *newest);

/*
 * UPDATE or DELETE found the row updated by a concurrent committed
 * transaction.  Under READ COMMITTED the executor then locks the newest
 * version (fps_tuple_lock, which decides whether re-evaluation is safe);
 * otherwise, or for a deleted row (skipped: its absence was observed), it
 * is a 40001 now.
 */
static void
concurrent_update_found(Relation rel, TM_Result result)
{
	if (result == TM_Updated && fps_reevaluate_updates &&
		fps_protocol == FPS_PROTOCOL_TICTOC && !IsolationUsesXactSnapshot())
		return;
	refuse_concurrent_update(rel);
}

/* ---- predicate reads and phantom keys (DESIGN §6) ---- */

/*
 * After sampling a predicate key for a scan on snapshot: NULL if snapshot
 * sees every transaction that has completed so far, else a newer registered
 * snapshot the scan must use instead.  A predicate key sampled after a
 * completion the snapshot misses may already include an insert the scan
 * would not see (DESIGN §6.3): an insert's install follows its
 * ProcArrayEndTransaction().  The snapshot taken here follows the sample
 * (GetSnapshotData takes ProcArrayLock: a barrier), so it sees such an
 * insert.
 *
 * Two snapshots see the same transactions if their xmax and in-progress
 * counts agree: the later one's in-progress set is a subset of the earlier
 * one's below the same xmax, and a completion at or above it moves xmax.
 *
 * READ COMMITTED allows a statement's scans to see newer data (every row
 * version read is validated anyway); under REPEATABLE READ and SERIALIZABLE
 * the transaction snapshot must stay, so a changed world is a 40001.
 */
static Snapshot
snapshot_after_predicate_sample(Snapshot snapshot, Oid relid)
{
	/*
	 * Our own snapshot buffer, not GetLatestSnapshot(): that refuses to run
	 * in parallel mode, which a leader is in when another relation of the
	 * query is scanned in parallel.  fpsketch relations are only scanned in
	 * the leader, so a newer snapshot there is fine.
	 */
	static SnapshotData latest_data = {SNAPSHOT_MVCC};
	Snapshot	latest = GetSnapshotData(&latest_data);
	Snapshot	fresh;

	if (latest->xmax == snapshot->xmax && latest->xcnt == snapshot->xcnt)
		return NULL;
	if (IsolationUsesXactSnapshot())
		fps_abort(FPS_ABORT_PHANTOM_SNAPSHOT, relid);
	fresh = RegisterSnapshot(latest);
	/* same command: the scan must not see what this statement writes */
	fresh->curcid = snapshot->curcid;
	fps_atomic_add(&fps_counters->snapshot_refreshes, 1);
	return fresh;
}

/* Record a read of a predicate key of rel. */
static void
read_predicate_key(FpsRelInfo *info, fps_u64 key, bool is_prefix)
{
	FpsAccess  *access = fps_txn_access(key, info->relid);

	if (!access->is_read)
		fps_atomic_add(is_prefix ? &fps_counters->phantom_prefix_reads :
					   &fps_counters->phantom_relation_reads, 1);
	cc_phantom_read(access);
}

static void
write_predicate_key(FpsRelInfo *info, fps_u64 key)
{
	FpsAccess  *access = fps_txn_access(key, info->relid);

	if (!access->is_write)
		fps_atomic_add(&fps_counters->phantom_writes, 1);
	cc_phantom_write(access);
}

/*
 * A new row (insert, or a non-HOT update's new version) enters every
 * predicate that could contain it: the relation's, and each equality prefix
 * of each eligible index.  A NULL ends an index's prefixes: equality never
 * matches it.
 */
static void
write_prefix_keys_of_row(FpsRelInfo *info, FpsPrefixIndex *pi, TupleTableSlot *slot)
{
	uint64		hashes[INDEX_MAX_KEYS];
	int			p;

	for (p = 0; p < pi->nkeys; p++)
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, pi->attnums[p], &isnull);

		if (isnull)
			break;
		hashes[p] = fps_hash_value(pi->types[p], pi->collations[p], value, false);
		if (!pi->is_hash || p + 1 == pi->nkeys)
			write_predicate_key(info, fps_prefix_key(pi, p + 1, hashes));
	}
}

static void
write_predicate_keys_of_row(FpsRelInfo *info, TupleTableSlot *slot)
{
	int			i;

	write_predicate_key(info, info->relation_key);
	for (i = 0; i < info->nprefix; i++)
		write_prefix_keys_of_row(info, &info->prefix[i], slot);
}

/*
 * The predicates an UPDATE that was not HOT moves its row between: the
 * equality prefixes, old and new, of every eligible index whose columns
 * changed, and the relation's key if one did (scans without an equality
 * prefix read it) or if an index whose scans always read that key
 * (expressions, partial indexes, ...) exists.  An index whose columns kept
 * their values keeps the row in the same predicates: a scan that found the
 * row there conflicts through the row key, one that did not would still not
 * find it.  Values that are equal but not binary equal count as changed.
 */
static void
write_moved_predicate_keys(Relation rel, FpsRelInfo *info,
						   TupleTableSlot *old, TupleTableSlot *new)
{
	bool		moved = info->has_coarse_indexes;
	int			i;

	for (i = 0; i < info->nprefix; i++)
	{
		FpsPrefixIndex *pi = &info->prefix[i];
		int			p;

		for (p = 0; p < pi->nkeys; p++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), pi->attnums[p] - 1);
			bool		oldnull;
			bool		newnull;
			Datum		oldval = slot_getattr(old, pi->attnums[p], &oldnull);
			Datum		newval = slot_getattr(new, pi->attnums[p], &newnull);

			if (oldnull != newnull ||
				(!oldnull && !datum_image_eq(oldval, newval, att->attbyval, att->attlen)))
				break;
		}
		if (p < pi->nkeys)
		{
			write_prefix_keys_of_row(info, pi, old);
			write_prefix_keys_of_row(info, pi, new);
			moved = true;
		}
	}
	if (moved)
		write_predicate_key(info, info->relation_key);
}

/*
 * Sample the coarse predicate of a scan that can see any row of rel (a
 * sequential, bitmap, sample or TID scan).  Returns a newer snapshot for the
 * scan, or NULL.
 */
static Snapshot
read_relation_predicate(Relation rel, Snapshot snapshot)
{
	FpsRelInfo *info;

	if (!fps_tracking_active(rel, &info))
		return NULL;
	read_predicate_key(info, info->relation_key, false);
	return snapshot_after_predicate_sample(snapshot, info->relid);
}

static TableScanDesc
fps_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
			   struct ScanKeyData *key, ParallelTableScanDesc pscan,
			   uint32 flags)
{
	if (snapshot != NULL && IsMVCCSnapshot(snapshot) && pscan == NULL &&
		(flags & (SO_TYPE_SEQSCAN | SO_TYPE_BITMAPSCAN | SO_TYPE_SAMPLESCAN |
				  SO_TYPE_TIDSCAN | SO_TYPE_TIDRANGESCAN)))
	{
		Snapshot	fresh = read_relation_predicate(rel, snapshot);

		if (fresh != NULL)
		{
			if (flags & SO_TEMP_SNAPSHOT)
				UnregisterSnapshot(snapshot);
			snapshot = fresh;
			flags |= SO_TEMP_SNAPSHOT;	/* heap_endscan unregisters it */
		}
	}
	return heap_routine->scan_begin(rel, snapshot, nkeys, key, pscan, flags);
}

/*
 * Index fetches carry their predicate state with them: heap's callbacks
 * get the embedded IndexFetchHeapData (first member, so heap's pfree frees
 * the whole struct).
 */
typedef struct FpsIndexFetch
{
	IndexFetchHeapData heap;
	bool		predicate_pending;	/* no predicate key read yet for this scan */
	bool		predicate_read; /* predicate_key was read, fresh_snapshot set */
	fps_u64		predicate_key;	/* the last one read */
	Snapshot	fresh_snapshot;	/* registered; replaces the scan's snapshot */
} FpsIndexFetch;

/* Executors running now, innermost last: where index scan keys are found. */
/*
 * Executors running now, innermost last: where index scan keys are found.
 * Grows with nesting (functions calling functions); max_stack_depth bounds
 * it in practice.
 */
static QueryDesc **running_queries = NULL;
static uint32 *running_statements = NULL;	/* their statement numbers */
static int	nrunning_queries = 0;
static int	maxrunning_queries = 0;
static uint32 last_statement = 0;

void
fps_executor_running(QueryDesc *queryDesc, bool starting)
{
	if (!starting)
	{
		if (nrunning_queries > 0)
			nrunning_queries--;
		return;
	}
	if (nrunning_queries >= maxrunning_queries)
	{
		int			newmax = Max(32, maxrunning_queries * 2);

		running_queries = running_queries == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(QueryDesc *) * newmax) :
			repalloc(running_queries, sizeof(QueryDesc *) * newmax);
		running_statements = running_statements == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(uint32) * newmax) :
			repalloc(running_statements, sizeof(uint32) * newmax);
		maxrunning_queries = newmax;
	}
	/* every run is a statement of its own; 0 means none */
	if (++last_statement == 0)
		++last_statement;
	running_statements[nrunning_queries] = last_statement;
	running_queries[nrunning_queries++] = queryDesc;
}

/* Is a statement running already (is the next one run from inside it)? */
bool
fps_executor_nested(void)
{
	return nrunning_queries > 0;
}

/* The innermost running statement, 0 outside the executor. */
static uint32
current_statement(void)
{
	return nrunning_queries > 0 ? running_statements[nrunning_queries - 1] : 0;
}

/* Does the innermost statement only read (a SELECT without row locks)? */
static bool
statement_only_reads(void)
{
	PlannedStmt *stmt;

	if (nrunning_queries == 0)
		return false;
	stmt = running_queries[nrunning_queries - 1]->plannedstmt;
	return stmt != NULL && stmt->commandType == CMD_SELECT &&
		stmt->rowMarks == NIL && !stmt->hasModifyingCTE;
}

/*
 * Column groups the innermost statement reads (written = false) or writes
 * in rel, from the columns its range table entries for rel reference: the
 * same sets that column privileges are checked on (selectedCols covers every
 * reference, target list, quals and RETURNING alike; updatedCols the SET
 * targets, extraUpdatedCols the generated columns they change).  All groups
 * whenever that is not the whole story: no statement (COPY, maintenance),
 * no entry for rel, a whole-row or system-column reference, row security
 * policies (their quals are not in selectedCols), and, for writes, row
 * triggers (they see and may change whole rows), CHECK constraints and
 * generated columns (computed from columns not SET), or a changed identity
 * (a new row key).  A statement that only tests existence reads group 0.
 */
static FpsGroupMask
statement_groups(Relation rel, FpsRelInfo *info, bool written)
{
	static uint32 cached_statement[2];
	static Oid	cached_relid[2];
	static FpsGroupMask cached_mask[2];
	FpsGroupMask all = FPS_ALL_GROUPS(info);
	FpsGroupMask mask = 0;
	uint32		statement = current_statement();
	bool		found = false;
	QueryDesc  *qd;
	ListCell   *lc;

	if (info->ngroups <= 1)
		return all;
	if (statement == 0)
		return all;
	if (cached_statement[written] == statement && cached_relid[written] == info->relid)
		return cached_mask[written];
	if (written)
	{
		TriggerDesc *trig = rel->trigdesc;
		TupleConstr *constr = RelationGetDescr(rel)->constr;

		if ((trig && (trig->trig_update_before_row || trig->trig_update_after_row)) ||
			(constr && (constr->num_check > 0 || constr->has_generated_stored)))
			return all;
	}
	else if (rel->rd_rel->relrowsecurity)
		return all;

	qd = running_queries[nrunning_queries - 1];
	if (qd->plannedstmt == NULL)
		return all;
	foreach(lc, qd->plannedstmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		Bitmapset  *cols;
		int			x = -1;

		if (rte->rtekind != RTE_RELATION || rte->relid != info->relid)
			continue;
		if (written && bms_is_empty(rte->updatedCols))
			continue;			/* not the UPDATE's target */
		found = true;
		cols = written ? bms_union(rte->updatedCols, rte->extraUpdatedCols) :
			rte->selectedCols;
		while ((x = bms_next_member(cols, x)) >= 0)
		{
			AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;
			int			k;

			if (attno == SelfItemPointerAttributeNumber ||
				attno == TableOidAttributeNumber)
				continue;		/* where the version is, not what it says */
			if (attno <= 0 || attno > info->natts)
				return all;
			if (written)
				for (k = 0; k < info->nkeys; k++)
					if (info->attnums[k] == attno)
						return all;
			mask |= 1 << info->attgroup[attno];
		}
	}
	if (!found)
		return all;
	if (mask == 0)
		mask = 1;
	cached_statement[written] = statement;
	cached_relid[written] = info->relid;
	cached_mask[written] = mask;
	return mask;
}

/*
 * May the innermost statement re-evaluate itself on the newest version of
 * a row of rel (EvalPlanQual) instead of failing?  EvalPlanQual recomputes
 * the statement's result for that row from the new version, but with the
 * rows of every other relation of the statement as they were first found:
 * a join partner that the new version would have found instead is never
 * read, so joins (which give the other relations row marks) are refused.
 * Within one relation, the new version replaces the old in the read set
 * when the old was the transaction's only read of the row
 * (fps_txn_replace_read), and a column group the concurrent writer did not
 * write (its wts unchanged) keeps its observation: the new version carries
 * the same values there.  TicToc only: STO decides at read time.
 */
static bool
reevaluation_is_safe(Relation rel, FpsRelInfo *info, TupleTableSlot *newest)
{
	QueryDesc  *qd;
	ListCell   *lc;
	fps_u64		key;
	int			g;

	if (!fps_reevaluate_updates || fps_protocol != FPS_PROTOCOL_TICTOC ||
		IsolationUsesXactSnapshot() || nrunning_queries == 0)
		return false;
	qd = running_queries[nrunning_queries - 1];
	if (qd->plannedstmt == NULL)
		return false;
	foreach(lc, qd->plannedstmt->rowMarks)
	{
		PlanRowMark *rc = (PlanRowMark *) lfirst(lc);
		RangeTblEntry *rte = rt_fetch(rc->rti, qd->plannedstmt->rtable);

		if (rc->markType == ROW_MARK_REFERENCE || rc->markType == ROW_MARK_COPY ||
			rte->rtekind != RTE_RELATION || rte->relid != RelationGetRelid(rel))
			return false;
	}
	key = fps_key_from_slot(rel, info, newest);
	for (g = 0; g < info->ngroups; g++)
	{
		FpsAccess  *access = fps_txn_lookup(fps_group_key(key, g));
		fps_u64		word;

		if (access == NULL || !access->is_read)
			continue;
		word = fps_entry_load(access->entry);
		if (!fps_word_locked(word) &&
			fps_word_wts(word) == fps_word_wts(access->observed))
			continue;
		if (!fps_txn_replace_read(access, current_statement()))
			return false;
	}
	return true;
}

static bool
find_index_scan_walker(PlanState *planstate, void *context)
{
	IndexFetchTableData *fetch = *(IndexFetchTableData **) context;

	if (planstate == NULL)
		return false;
	if (IsA(planstate, IndexScanState))
	{
		IndexScanState *iss = (IndexScanState *) planstate;

		if (iss->iss_ScanDesc != NULL && iss->iss_ScanDesc->xs_heapfetch == fetch)
		{
			*(PlanState **) context = planstate;
			return true;
		}
	}
	return planstate_tree_walker(planstate, find_index_scan_walker, context);
}

/*
 * The executor node whose index scan uses fetch, or NULL.  Besides the main
 * plan tree, a query's subplans (CTEs, among them data-modifying ones that
 * only run in ExecutorFinish) are searched.
 */
static IndexScanState *
find_index_scan(IndexFetchTableData *fetch)
{
	int			i;

	for (i = nrunning_queries - 1; i >= 0; i--)
	{
		QueryDesc  *qd = running_queries[i];
		void	   *context = fetch;
		ListCell   *lc;

		if (qd->planstate != NULL &&
			find_index_scan_walker(qd->planstate, &context))
			return (IndexScanState *) context;
		if (qd->estate == NULL)
			continue;
		foreach(lc, qd->estate->es_subplanstates)
		{
			context = fetch;
			if (find_index_scan_walker((PlanState *) lfirst(lc), &context))
				return (IndexScanState *) context;
		}
	}
	return NULL;
}

/*
 * How many leading index columns the scan keys fix by equality, and their
 * hashes.  Only plain equality on the column's own type qualifies: arrays,
 * row comparisons, IS NULL and cross-type operators end the prefix.
 */
static int
equality_prefix(IndexScanState *iss, FpsPrefixIndex *pi, uint64 *hashes)
{
	Relation	indexrel = iss->iss_ScanDesc->indexRelation;
	StrategyNumber eq = pi->is_hash ? HTEqualStrategyNumber : BTEqualStrategyNumber;
	int			p;

	for (p = 0; p < pi->nkeys; p++)
	{
		int			k;
		bool		found = false;

		for (k = 0; k < iss->iss_NumScanKeys && !found; k++)
		{
			ScanKey		sk = &iss->iss_ScanKeys[k];

			if (sk->sk_attno != p + 1 || sk->sk_strategy != eq ||
				(sk->sk_flags & (SK_ISNULL | SK_ROW_HEADER | SK_SEARCHARRAY |
								 SK_SEARCHNULL | SK_SEARCHNOTNULL | SK_ORDER_BY)) ||
				(OidIsValid(sk->sk_subtype) && sk->sk_subtype != indexrel->rd_opcintype[p]))
				continue;
			hashes[p] = fps_hash_value(pi->types[p], pi->collations[p],
									   sk->sk_argument, false);
			found = true;
		}
		if (!found)
			break;
	}
	if (pi->is_hash && p < pi->nkeys)
		return 0;
	return p;
}

/*
 * Read the predicate of the index scan about to run on fetch: the
 * equality-prefix key when the scan keys give one, else the relation key.
 */
static void
read_index_predicate(FpsIndexFetch *f, IndexScanState *iss, Snapshot snapshot)
{
	Relation	rel = f->heap.xs_base.rel;
	FpsRelInfo *info;
	FpsPrefixIndex *pi = NULL;
	uint64		hashes[INDEX_MAX_KEYS];
	int			nprefix = 0;
	fps_u64		key;

	if (!fps_tracking_active(rel, &info))
		return;
	if (holds_relation_exclusively(rel))
	{
		/* nobody else can insert into rel before we end */
		fps_txn_note_untracked_write();
		return;
	}
	if (iss != NULL && fps_prefix_predicates)
		pi = fps_prefix_index(info, RelationGetRelid(iss->iss_ScanDesc->indexRelation));
	if (pi != NULL)
		nprefix = equality_prefix(iss, pi, hashes);
	key = nprefix > 0 ? fps_prefix_key(pi, nprefix, hashes) : info->relation_key;

	/*
	 * The same predicate again (a rescan with the same keys, or the reset
	 * index_getnext_slot() does when the index is exhausted): the first
	 * reading stands and its snapshot still sees every insert that came
	 * before it; later ones change the key and fail validation.
	 */
	if (f->predicate_read && f->predicate_key == key)
		return;
	release_fresh_snapshot(f);
	read_predicate_key(info, key, nprefix > 0);
	f->predicate_key = key;
	f->predicate_read = true;
	f->fresh_snapshot = snapshot_after_predicate_sample(snapshot, info->relid);
}

static void
release_fresh_snapshot(FpsIndexFetch *f)
{
	if (f->fresh_snapshot != NULL)
	{
		UnregisterSnapshot(f->fresh_snapshot);
		f->fresh_snapshot = NULL;
	}
	f->predicate_read = false;
}

static struct IndexFetchTableData *
fps_index_fetch_begin(Relation rel)
{
	FpsIndexFetch *f = palloc0(sizeof(FpsIndexFetch));

	/* as heapam_index_fetch_begin() */
	f->heap.xs_base.rel = rel;
	f->heap.xs_cbuf = InvalidBuffer;
	f->predicate_pending = true;
	return &f->heap.xs_base;
}

/*
 * index_rescan() resets the fetch before the index AM takes the new keys;
 * the executor node already holds them, evaluated.
 */
static void
fps_index_fetch_reset(struct IndexFetchTableData *fetch)
{
	FpsIndexFetch *f = (FpsIndexFetch *) fetch;
	IndexScanState *iss;

	heap_routine->index_fetch_reset(fetch);
	f->predicate_pending = true;

	iss = find_index_scan(fetch);
	if (iss != NULL && iss->iss_ScanDesc->xs_snapshot != NULL &&
		IsMVCCSnapshot(iss->iss_ScanDesc->xs_snapshot))
	{
		read_index_predicate(f, iss, iss->iss_ScanDesc->xs_snapshot);
		f->predicate_pending = false;
	}
}

static void
fps_index_fetch_end(struct IndexFetchTableData *fetch)
{
	release_fresh_snapshot((FpsIndexFetch *) fetch);
	heap_routine->index_fetch_end(fetch);
}

/*
 * Called by cc/txn.c when a transaction escalates its reads of a relation:
 * from now on the escalation key, which every write of the relation writes,
 * stands for every row of it.
 */
void
fps_read_relation_key(Oid relid)
{
	FpsAccess  *access;
	Relation	rel = RelationIdGetRelation(relid);
	FpsRelInfo *info = fps_relinfo(rel);

	access = fps_txn_access(info->escalation_key, relid);
	if (!access->is_read)
		fps_atomic_add(&fps_counters->phantom_relation_reads, 1);
	cc_phantom_read(access);
	RelationClose(rel);
}

/* ---- reads ---- */

static bool
fps_scan_getnextslot(TableScanDesc scan, ScanDirection direction,
					 TupleTableSlot *slot)
{
	if (!heap_routine->scan_getnextslot(scan, direction, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot, false);
	return true;
}

static bool
fps_scan_getnextslot_tidrange(TableScanDesc scan, ScanDirection direction,
							  TupleTableSlot *slot)
{
	if (!heap_routine->scan_getnextslot_tidrange(scan, direction, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot, false);
	return true;
}

static bool
fps_index_fetch_tuple(struct IndexFetchTableData *scan, ItemPointer tid,
					  Snapshot snapshot, TupleTableSlot *slot,
					  bool *call_again, bool *all_dead)
{
	FpsIndexFetch *f = (FpsIndexFetch *) scan;

	/* an index scan outside the executor: its keys are unknown, be coarse */
	if (f->predicate_pending && snapshot != NULL && IsMVCCSnapshot(snapshot))
	{
		read_index_predicate(f, NULL, snapshot);
		f->predicate_pending = false;
	}
	if (f->fresh_snapshot != NULL && snapshot != NULL && IsMVCCSnapshot(snapshot))
		snapshot = f->fresh_snapshot;

	if (!heap_routine->index_fetch_tuple(scan, tid, snapshot, slot,
										 call_again, all_dead))
		return false;
	if (snapshot_is_tracked(snapshot))
		track_read(scan->rel, slot, snapshot->snapshot_type == SNAPSHOT_DIRTY);
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
		fresh = read_relation_predicate(rel, snapshot);
	found = heap_routine->tuple_fetch_row_version(rel, tid,
												  fresh ? fresh : snapshot, slot);
	if (fresh != NULL)
		UnregisterSnapshot(fresh);
	if (!found)
		return false;
	if (snapshot != NULL && IsMVCCSnapshot(snapshot))
		track_read(rel, slot, false);
	return true;
}

static bool
fps_scan_bitmap_next_tuple(TableScanDesc scan, struct TBMIterateResult *tbmres,
						   TupleTableSlot *slot)
{
	if (!heap_routine->scan_bitmap_next_tuple(scan, tbmres, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot, false);
	return true;
}

static bool
fps_scan_sample_next_tuple(TableScanDesc scan, struct SampleScanState *scanstate,
						   TupleTableSlot *slot)
{
	if (!heap_routine->scan_sample_next_tuple(scan, scanstate, slot))
		return false;
	if (snapshot_is_tracked(scan->rs_snapshot))
		track_read(scan->rs_rd, slot, false);
	return true;
}

/* ---- waits for row locks (cycle_check) ---- */

/*
 * fpsketch.wait_policy = cycle_check.  Heap finds a deadlock only after a
 * waiter has slept deadlock_timeout (1 s by default), which under skewed
 * write-heavy load costs more than all the work done.  Here UPDATE, DELETE
 * and row locks first try without waiting; a transaction that must wait
 * publishes whom it waits for, then follows the chain of published waits
 * from its holder (whom the holder waits for, whom that one waits for, ...).
 * If the chain comes back to it, the wait would close a cycle: it fails at
 * once with 40001 instead.  Otherwise it waits in the lock manager, like
 * heap, so a row's next writer is woken the moment the holder ends and its
 * UPDATE can still end in re-evaluation.
 *
 * Why every cycle of such waits is refused: the cycle is closed by the last
 * of its waits to be published, and each waiter publishes, then issues a
 * full memory barrier, then looks.  Of any two waits, the later to publish
 * therefore sees the earlier; the last of a cycle sees all the others.  Two
 * waits closing one cycle at the same moment may both refuse: one needless
 * retry, never a deadlock.
 *
 * Each backend writes only its own slot of fps_row_lock_waits_for and
 * clears it however its wait ends (PG_FINALLY); others read the slots
 * without a lock.  A slot that is stale by the time it is read can only
 * make a cycle appear (a needless retry) or hide one that is not yet
 * closed, whose closing waiter will look again.  Waits that fpsketch does
 * not publish (heap's own for MultiXacts and key-share lockers, table locks)
 * end a chain: cycles through them are left to PostgreSQL's detector.
 */

/* chains longer than this are not followed (taken for no cycle) */
#define FPS_MAX_WAIT_CHAIN 64

static inline void
publish_row_lock_wait(TransactionId awaited)
{
	pg_atomic_write_u32(&fps_row_lock_waits_for[MyProc->pgprocno], awaited);
}

/*
 * Does the chain of published waits that starts at holder (a top-level
 * transaction ID) lead back to this transaction, me?
 */
static bool
wait_closes_cycle(TransactionId me, TransactionId holder)
{
	for (int hops = 0; hops < FPS_MAX_WAIT_CHAIN; hops++)
	{
		int			pid = BackendXidGetPid(holder);
		PGPROC	   *proc = pid != 0 ? BackendPidGetProc(pid) : NULL;

		if (proc == NULL)
			return false;		/* ended */
		holder = pg_atomic_read_u32(&fps_row_lock_waits_for[proc->pgprocno]);
		if (!TransactionIdIsValid(holder))
			return false;		/* running, or in a wait we do not follow */
		if (TransactionIdEquals(holder, me))
			return true;
	}
	return false;
}

/*
 * Wait for holder (a transaction or subtransaction; top, its top-level
 * transaction) in the lock manager, unless the wait would close a cycle
 * (false).
 */
static bool
wait_unless_cycle(Relation rel, ItemPointer tid, TransactionId holder,
				  TransactionId top, XLTW_Oper oper)
{
	TransactionId me = GetTopTransactionIdIfAny();

	if (!TransactionIdIsValid(me))
	{
		/* nobody can be waiting for a transaction without an ID */
		XactLockTableWait(holder, rel, tid, oper);
		return true;
	}
	publish_row_lock_wait(top);
	pg_memory_barrier();
	if (wait_closes_cycle(me, top))
	{
		publish_row_lock_wait(InvalidTransactionId);
		return false;
	}
	PG_TRY();
	{
		XactLockTableWait(holder, rel, tid, oper);
	}
	PG_FINALLY();
	{
		publish_row_lock_wait(InvalidTransactionId);
	}
	PG_END_TRY();
	return true;
}

/*
 * Wait for transaction xid to end, as XactLockTableWait does, for a protocol
 * that must see a writer's outcome (STO's reader of an older writer's row).
 * Under cycle_check such a wait is published and checked like a row-lock
 * wait: false, without waiting, if it would close a cycle.
 */
bool
fps_wait_for_transaction(TransactionId xid)
{
	if (fps_wait_policy != FPS_WAIT_CYCLE_CHECK)
	{
		XactLockTableWait(xid, NULL, NULL, XLTW_None);
		return true;
	}
	return wait_unless_cycle(NULL, NULL, xid, SubTransGetTopmostTransaction(xid),
							 XLTW_None);
}

typedef enum RowLockAttempt
{
	ROW_UPDATE,
	ROW_DELETE,
	ROW_LOCK
} RowLockAttempt;

/*
 * After a no-wait attempt found the row locked by holder: wait for it, or
 * find it gone already, and have the caller try again without waiting
 * (true); or have the caller make the blocking call heap would have made
 * (false: the holder is not a plain transaction, e.g. a MultiXact of
 * lockers, or our own lock, or it is still there after we waited for it).
 * Fails with 40001 if the wait would close a cycle of waits.
 */
static bool
wait_for_row_lock_holder(Relation rel, ItemPointer tid, TransactionId holder,
						 TransactionId *last_holder, RowLockAttempt what)
{
	if (!TransactionIdIsNormal(holder) || holder == *last_holder ||
		TransactionIdIsCurrentTransactionId(holder))
		return false;
	if (!TransactionIdIsInProgress(holder))
	{
		/* ended since the attempt: try again, do not queue behind a newcomer */
		*last_holder = holder;
		return true;
	}
	fps_atomic_add(&fps_counters->row_lock_waits, 1);
	if (!wait_unless_cycle(rel, tid, holder, SubTransGetTopmostTransaction(holder),
						   what == ROW_UPDATE ? XLTW_Update :
						   what == ROW_DELETE ? XLTW_Delete : XLTW_Lock))
		fps_abort(FPS_ABORT_WAIT_CYCLE, RelationGetRelid(rel));
	*last_holder = holder;
	return true;
}

/*
 * The transaction whose update, delete, or share or exclusive lock of the
 * version at tid an UPDATE or DELETE must wait for; InvalidTransactionId
 * when there is none, or when heap must judge the conflict itself (a
 * MultiXact, a key-share lock, which a non-key update need not wait for,
 * or this transaction's own lock, e.g. from re-evaluation).  heap_update
 * and heap_delete without waiting report any locker at all.  With
 * follow_updates (a row lock that follows the update chain), a version whose
 * updater committed leads on to the newer version, whose locker it is.
 */
static TransactionId
conflicting_row_locker(Relation rel, ItemPointer tid, bool follow_updates)
{
	ItemPointerData cur = *tid;
	TransactionId prior_xmax = InvalidTransactionId;

	for (int hops = 0; hops < FPS_MAX_WAIT_CHAIN; hops++)
	{
		Buffer		buf = ReadBuffer(rel, ItemPointerGetBlockNumber(&cur));
		Page		page;
		ItemId		lp = NULL;
		TransactionId xid = InvalidTransactionId;
		bool		next = false;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (ItemPointerGetOffsetNumber(&cur) <= PageGetMaxOffsetNumber(page))
			lp = PageGetItemId(page, ItemPointerGetOffsetNumber(&cur));
		if (lp != NULL && ItemIdIsNormal(lp))
		{
			HeapTupleHeader htup = (HeapTupleHeader) PageGetItem(page, lp);
			uint16		infomask = htup->t_infomask;

			if (TransactionIdIsValid(prior_xmax) &&
				!TransactionIdEquals(HeapTupleHeaderGetXmin(htup), prior_xmax))
				;				/* the chain was broken by pruning: give up */
			else if (!(infomask & HEAP_XMAX_INVALID) && !(infomask & HEAP_XMAX_IS_MULTI) &&
					 !(HEAP_XMAX_IS_LOCKED_ONLY(infomask) && HEAP_XMAX_IS_KEYSHR_LOCKED(infomask)))
			{
				xid = HeapTupleHeaderGetRawXmax(htup);

				/*
				 * A committed updater: with follow_updates, the lock that
				 * blocked us is on the newer version.  (An aborted one's new
				 * version is dead: the caller finds it ended and retries.)
				 */
				if (follow_updates && !HEAP_XMAX_IS_LOCKED_ONLY(infomask) &&
					!ItemPointerEquals(&htup->t_ctid, &cur) &&
					!TransactionIdIsInProgress(xid) && TransactionIdDidCommit(xid))
				{
					prior_xmax = xid;
					cur = htup->t_ctid;
					next = true;
				}
			}
		}
		UnlockReleaseBuffer(buf);
		if (!next)
			return xid;
	}
	return InvalidTransactionId;
}

/* Should waits for rel's row locks be checked for cycles? */
static bool
cycle_check_applies(Relation rel)
{
	FpsRelInfo *info;

	return fps_wait_policy == FPS_WAIT_CYCLE_CHECK && fps_tracking_active(rel, &info);
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
	TM_Result	result;

	if (wait_policy == LockWaitBlock && cycle_check_applies(rel))
	{
		TransactionId last_holder = InvalidTransactionId;
		TransactionId holder;

		for (;;)
		{
			result = heap_routine->tuple_lock(rel, tid, snapshot, slot, cid, mode,
											  LockWaitSkip, flags, tmfd);
			if (result != TM_WouldBlock)
				break;

			/*
			 * Following the update chain, heap names the updater of the
			 * version it started from, which has ended: the holder is the
			 * locker of a newer version.
			 */
			holder = tmfd->xmax;
			if (!TransactionIdIsValid(holder) || !TransactionIdIsInProgress(holder))
				holder = conflicting_row_locker(rel, tid, true);
			if (!wait_for_row_lock_holder(rel, tid, holder, &last_holder, ROW_LOCK))
			{
				result = heap_routine->tuple_lock(rel, tid, snapshot, slot, cid, mode,
												  LockWaitBlock, flags, tmfd);
				break;
			}
		}
	}
	else
		result = heap_routine->tuple_lock(rel, tid, snapshot, slot, cid, mode,
										  wait_policy, flags, tmfd);

	if (result == TM_Ok)
	{
		FpsRelInfo *info;

		if ((flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) && tmfd->traversed &&
			fps_tracking_active(rel, &info))
		{
			if (!reevaluation_is_safe(rel, info, slot))
				fps_abort(FPS_ABORT_CONCURRENT_UPDATE, info->relid);
			fps_atomic_add(&fps_counters->reevaluations, 1);
		}
		track_read(rel, slot, false);
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
	TM_Result	result;

	if (wait && cycle_check_applies(rel))
	{
		TransactionId last_holder = InvalidTransactionId;

		for (;;)
		{
			result = heap_routine->tuple_delete(rel, tid, cid, snapshot, crosscheck,
												false, tmfd, changingPart);
			if (result != TM_BeingModified)
				break;
			if (!wait_for_row_lock_holder(rel, tid, conflicting_row_locker(rel, tid, false),
										  &last_holder, ROW_DELETE))
			{
				result = heap_routine->tuple_delete(rel, tid, cid, snapshot, crosscheck,
													true, tmfd, changingPart);
				break;
			}
		}
	}
	else
		result = heap_routine->tuple_delete(rel, tid, cid, snapshot, crosscheck,
											wait, tmfd, changingPart);

	if (result == TM_Ok)
		track_write_delete(rel, tid);
	else if (result == TM_Updated || result == TM_Deleted)
		concurrent_update_found(rel, result);
	return result;
}

static TM_Result
fps_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				 bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				 bool *update_indexes)
{
	ItemPointerData old_tid = *otid;
	TM_Result	result;

	if (wait && cycle_check_applies(rel))
	{
		TransactionId last_holder = InvalidTransactionId;

		for (;;)
		{
			result = heap_routine->tuple_update(rel, otid, slot, cid, snapshot,
												crosscheck, false, tmfd, lockmode,
												update_indexes);
			if (result != TM_BeingModified)
				break;
			if (!wait_for_row_lock_holder(rel, otid, conflicting_row_locker(rel, otid, false),
										  &last_holder, ROW_UPDATE))
			{
				result = heap_routine->tuple_update(rel, otid, slot, cid, snapshot,
													crosscheck, true, tmfd, lockmode,
													update_indexes);
				break;
			}
		}
	}
	else
		result = heap_routine->tuple_update(rel, otid, slot, cid, snapshot,
											crosscheck, wait, tmfd, lockmode,
											update_indexes);

	if (result == TM_Ok)
	{
		track_write_update(rel, &old_tid, slot, *update_indexes);
	}
	else if (result == TM_Updated || result == TM_Deleted)
		concurrent_update_found(rel, result);
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

		fps_routine.scan_begin = fps_scan_begin;
		fps_routine.scan_getnextslot = fps_scan_getnextslot;
		fps_routine.scan_getnextslot_tidrange = fps_scan_getnextslot_tidrange;
		fps_routine.index_fetch_begin = fps_index_fetch_begin;
		fps_routine.index_fetch_reset = fps_index_fetch_reset;
		fps_routine.index_fetch_end = fps_index_fetch_end;
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
