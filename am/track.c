/*-------------------------------------------------------------------------
 *
 * track.c
 *	  Row reads and writes of fpsketch tables reach the protocol (cc/): the
 *	  row's key per column group, the predicate keys a write changes, and
 *	  the writes that bypass per-key tracking (storage new in the
 *	  transaction, a relation held exclusively), covered by the floor raise.
 *
 * Shared state: none directly; the protocol's entries through cc/.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/xact.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "am.h"


/*
 * The version in slot was read by the transaction's logic: the column
 * groups the statement references, or all of them for a unique check (a
 * dirty snapshot: unique, exclusion and ON CONFLICT arbiter checks), which
 * compares whole rows and must not report a row the transaction saw absent
 * as a unique violation.
 */
void
fps_track_read(Relation rel, TupleTableSlot *slot, bool unique_check)
{
	FpsRelInfo *info;
	FpsVersionCheck check;
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
	xmin = fps_version_xmin(slot);
	if (TransactionIdIsCurrentTransactionId(xmin))
		return;					/* own writes are not reads */
	if ((unlikely(fps_ddl_depth > 0) && CheckRelationLockedByMe(rel, ShareLock, true)) ||
		fps_holds_relation_exclusively(rel))
	{
		fps_txn_note_untracked_write();
		return;
	}
	check.rel = rel;
	check.slot = slot;
	if (unlikely(unique_check))
		fps_refuse_unique_conflict(info, slot);

	/*
	 * Past its share of row pins for this relation, the transaction reads
	 * the relation's predicate key instead, which every writer of the
	 * relation writes (lock escalation, DESIGN §6).  Staleness is still
	 * checked: a version overwritten before the predicate key was sampled
	 * would otherwise go unnoticed.
	 */
	if (fps_txn_count_row_read(info->relid))
	{
		if (fps_version_is_stale(&check))
			fps_abort(FPS_ABORT_STALE_READ, info->relid);
		return;
	}
	key = fps_key_from_slot(rel, info, slot);
	groups = unique_check ? FPS_ALL_GROUPS(info) : fps_statement_groups(rel, info, false);
	version.is_stale = fps_version_is_stale;
	version.updater_in_progress = fps_version_updater_in_progress;
	version.arg = &check;
	for (g = 0; g < info->ngroups; g++)
	{
		if (!(groups & (1 << g)))
			continue;
		access = fps_txn_access(fps_group_key(key, g), info->relid);
		/* after the first access: the transaction's end will release it */
		if (unlikely(fps_txn.held_snapshot == NULL))
			fps_hold_read_versions();
		if (access->nreads++ == 0)
		{
			access->read_stmt = fps_current_statement();
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
				fps_reread_first_version(rel, info, key, groups, g, access, slot))
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
bool
fps_holds_relation_exclusively(Relation rel)
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
	if (storage_is_new_in_xact(rel) || fps_holds_relation_exclusively(rel))
	{
		fps_txn_note_untracked_write();
		return false;
	}
	return true;
}

/* The row in slot was inserted: all its groups, and every predicate. */
void
fps_track_insert(Relation rel, TupleTableSlot *slot)
{
	FpsRelInfo *info;

	if (!write_is_tracked(rel, &info))
		return;
	write_row_groups(info, fps_key_from_slot(rel, info, slot), FPS_ALL_GROUPS(info));
	fps_write_predicate_key(info, info->escalation_key);
	fps_write_predicate_keys_of_row(info, slot);
}

/* The version at tid, which this transaction just replaced or deleted. */
static TupleTableSlot *
refetch_old_version(Relation rel, ItemPointer tid)
{
	TupleTableSlot *old = MakeSingleTupleTableSlot(RelationGetDescr(rel),
												   &TTSOpsBufferHeapTuple);

	if (!GetHeapamTableAmRoutine()->tuple_fetch_row_version(rel, tid, SnapshotAny, old))
		elog(ERROR, "fpsketch: could not refetch the old version of a row of \"%s\"",
			 RelationGetRelationName(rel));
	return old;
}

/*
 * The version at tid was just deleted by this transaction: the row leaves
 * the equality predicates of its index keys, so a scan that found it there,
 * or finds it missing, conflicts through those keys.
 */
void
fps_track_delete(Relation rel, ItemPointer tid)
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
	fps_write_predicate_key(info, info->escalation_key);
	if (old != NULL)
		fps_write_predicate_keys_of_row(info, old);
	else
		fps_write_predicate_key(info, info->relation_key);	/* no prefix indexes */
	if (old != NULL)
		ExecDropSingleTupleTableSlot(old);
}

/*
 * This transaction updated the version at old_tid to the one in slot,
 * changing the column groups the statement sets; update_indexes: not HOT.
 */
void
fps_track_update(Relation rel, ItemPointer old_tid, TupleTableSlot *slot,
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
	groups = fps_statement_groups(rel, info, true);
	old_key = info->by_tid ? fps_key_from_tid(rel, old_tid) : fps_key_from_slot(rel, info, old);
	new_key = fps_key_from_slot(rel, info, slot);
	write_row_groups(info, old_key, groups);
	if (new_key != old_key)
		write_row_groups(info, new_key, groups);

	/* escalated readers of the relation see every write through this key */
	fps_write_predicate_key(info, info->escalation_key);
	if (update_indexes)
		fps_write_moved_predicate_keys(rel, info, old, slot);
	if (old != NULL)
		ExecDropSingleTupleTableSlot(old);
}

void
fps_refuse_concurrent_update(Relation rel)
{
	FpsRelInfo *info;

	if (fps_tracking_active(rel, &info))
		fps_abort(FPS_ABORT_CONCURRENT_UPDATE, info->relid);
}

/*
 * UPDATE or DELETE found the row updated by a concurrent committed
 * transaction.  Under READ COMMITTED the executor then locks the newest
 * version (fps_tuple_lock, which decides whether re-evaluation is safe);
 * otherwise, or for a deleted row (skipped: its absence was observed), it
 * is a 40001 now.
 */
void
fps_concurrent_update_found(Relation rel, TM_Result result)
{
	if (result == TM_Updated && fps_reevaluate_updates &&
		fps_protocol == FPS_PROTOCOL_TICTOC && !IsolationUsesXactSnapshot())
		return;
	fps_refuse_concurrent_update(rel);
}

