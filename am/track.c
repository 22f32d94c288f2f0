/*-------------------------------------------------------------------------
 *
 * track.c
 *	  Row reads and writes of fpsketch tables reach the protocol (cc/): the
 *	  row's key per column group, the predicate keys a write changes, and
 *	  the reads and writes that go past per-key tracking.
 *
 * Per-key tracking ends where the pin budget does (cc/txn.c): reads then
 * escalate to the relation's escalation key (predicate.c), and writes to
 * an ACCESS EXCLUSIVE lock of the relation, covered by the floor raise at
 * commit like writes into storage new in the transaction.
 *
 * Every relation the transaction touches keeps a lock, as the top-level
 * transaction's, until the transaction ends (fps_txn_keep_lock): reads
 * ACCESS SHARE, writes ROW EXCLUSIVE, escalated writers ACCESS EXCLUSIVE,
 * untracked DDL reads the SHARE (or stronger) lock they rely on.  A
 * subtransaction that rolls back keeps its reads and writes in the access
 * set, so it must not give back the locks that other transactions' untracked
 * writes and reads are ordered by.
 *
 * Shared state: none directly; the protocol's entries through cc/.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/rel.h"

#include "am.h"
#include "../fpsketch_am.h"

/* The relation's state in this transaction, with mode kept till its end. */
static FpsRelState *
relation_state(Relation rel, LOCKMODE mode)
{
	FpsRelState *rs = fps_txn_rel(RelationGetRelid(rel));

	fps_txn_keep_lock(rs, mode);
	return rs;
}

/*
 * The transaction wrote rel past per-key tracking: note it for the map of
 * commit timestamps, whose relation filter tells a REPEATABLE READ scan of
 * rel whether a writer it missed changed it.  A table rewrite (ALTER
 * TABLE, SET ACCESS METHOD, CLUSTER, VACUUM FULL) copies the rows into a
 * transient relation that make_new_heap() creates in this transaction,
 * named "pg_temp_<OID of the table>", and then swaps its storage into the
 * table: the table is what scans read, so note it as well.  (A user's own
 * table of that name, created in this transaction, only notes one more.)
 */
void
fps_note_untracked_write_of(Relation rel)
{
	const char *name = RelationGetRelationName(rel);

	fps_txn_note_untracked_write(RelationGetRelid(rel));
	if (rel->rd_createSubid != InvalidSubTransactionId &&
		strncmp(name, "pg_temp_", 8) == 0 && name[8] >= '0' && name[8] <= '9')
	{
		char	   *end;
		unsigned long rewritten = strtoul(name + 8, &end, 10);

		if (*end == '\0' && rewritten <= PG_UINT32_MAX)
			fps_txn_note_untracked_write((Oid) rewritten);
	}
}

/*
 * Reads by DDL (ALTER TABLE rewriting or validating a table) under a lock
 * that keeps writers out (SHARE or stronger) are covered by the floor raise
 * at commit; keep that lock.
 */
static bool
untracked_ddl_read(Relation rel, FpsRelState *rs)
{
	LOCKMODE	mode;

	if (likely(fps_ddl_depth == 0))
		return false;
	for (mode = AccessExclusiveLock; mode >= ShareLock; mode--)
		if (CheckRelationLockedByMe(rel, mode, false))
		{
			fps_txn_keep_lock(rs, mode);
			fps_note_untracked_write_of(rel);
			return true;
		}
	return false;
}

/*
 * Learned groups: the keys a read of the groups the statement references
 * (groups) goes through for the row whose key is key.  The key of any
 * group but 0 describes group 0's columns as well (an UPDATE that sets one
 * of them writes every group, am/statement.c), so a read of group 0 and
 * others pins only the others.  But group 0 must be read through the same
 * keys all transaction long, or a reread of its columns would be a first
 * read of another key and return a newer version, where a reread gets the
 * version read before or fails (fps_reread_first_version): so add the keys
 * group 0 of the row was read through before (its own, or those marked
 * read_zero), and read group 0 alone through them if there are any.
 */
static FpsGroupMask
learned_group_keys(FpsRelInfo *info, fps_u64 key, FpsGroupMask groups)
{
	FpsGroupMask before = 0;

	if (info->groups_declared || info->ngroups <= 1 || !(groups & 1))
		return groups;
	for (int g = 0; g < info->ngroups; g++)
	{
		FpsAccess  *access = fps_txn_lookup(fps_group_key(key, g));

		if (access != NULL && access->is_read && (g == 0 || access->read_zero))
			before |= (FpsGroupMask) 1 << g;
	}
	if (groups == 1)
		return before != 0 ? before : groups;
	return (groups & ~(FpsGroupMask) 1) | before;
}

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
	FpsRelState *rs;
	FpsVersionCheck check;
	FpsVersion	version;
	FpsAccess  *access;
	FpsGroupMask groups;
	TransactionId xmin;
	fps_u64		key;
	bool		all_read_before = true;
	bool		read_zero = false;
	bool		in_progress;
	ItemPointerData first_tid;
	TransactionId first_xmin = InvalidTransactionId;
	uint32		statement;
	uint64		effects;
	int			g;

	if (!fps_tracking_active(rel, &info))
		return;
	xmin = fps_version_xmin(slot);
	if (TransactionIdIsCurrentTransactionId(xmin))
		return;					/* own writes are not reads */
	rs = relation_state(rel, AccessShareLock);
	check.rel = rel;
	check.slot = slot;
	check.info = info;
	check.group = -1;
	if (rs->write_escalated || untracked_ddl_read(rel, rs))
	{
		/*
		 * Nobody else writes rel till we end, and the floor raise orders us
		 * after every transaction that did: so what we read of it must be
		 * their newest versions.  A snapshot older than our lock can still
		 * return one they replaced: the transaction snapshot of REPEATABLE
		 * READ, or a statement's that waited for the lock (a STABLE
		 * function in ALTER TABLE's DEFAULT).
		 */
		if (fps_version_is_stale(&check))
			fps_abort(FPS_ABORT_STALE_READ, info->relid);
		return;
	}
	rs->stat_row_reads++;
	if (unlikely(unique_check))
		fps_refuse_unique_conflict();

	/*
	 * A unique check's dirty snapshot also hands over a version whose
	 * creator is still running.  Its writer locks the row's keys only when
	 * it commits, so cc_read observes the words from before its write: that
	 * version is not the one the read set describes, and no reread may give
	 * it back.  (Asked before cc_read: a creator that ends after it held
	 * the keys locked from its validation on, so cc_read waited for its
	 * install and observed its words.)
	 */
	in_progress = unique_check && TransactionIdIsInProgress(xmin);

	/*
	 * Past its share of row pins for this relation, or of the exact table,
	 * the transaction reads the relation through its escalation key, which
	 * every writer of the relation writes (lock escalation, DESIGN §6).
	 */
	if (rs->escalated || fps_txn_count_row_read(rs))
	{
		fps_escalated_read(rel, info, rs, &check, xmin);
		return;
	}
	key = fps_key_from_slot(rel, info, slot);
	if (unique_check)
		groups = FPS_ALL_GROUPS(info);
	else
	{
		FpsGroupMask referenced = fps_statement_groups(rel, info, false);

		groups = learned_group_keys(info, key, referenced);
		read_zero = (referenced & 1) != 0 && !info->groups_declared;
	}
	statement = fps_current_statement();
	effects = fps_effectful_statements();
	version.is_stale = fps_version_is_stale;
	version.updater_in_progress = fps_version_updater_in_progress;
	version.wait_for = fps_wait_for_transaction;
	version.arg = &check;
	for (g = 0; g < info->ngroups; g++)
	{
		if (!(groups & (1 << g)))
			continue;
		access = fps_txn_try_read_access(fps_group_key(key, g), info->relid);
		if (access == NULL)
		{
			/* the pin budget is spent: the groups read so far stay */
			check.group = -1;
			fps_escalated_read(rel, info, rs, &check, xmin);
			return;
		}
		access->row_group = g;
		/* after the first access: the transaction's end will release it */
		if (unlikely(fps_txn.held_snapshot == NULL))
			fps_hold_read_versions();
		if (access->nreads == 0)
			all_read_before = false;
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
		/* a successor that changed only other groups leaves this one current */
		check.group = info->ngroups > 1 ? g : -1;
		if (!cc_read(access, &version))
		{
			if (all_read_before &&
				fps_reread_first_version(rel, info, key, groups, g, access, slot))
			{
				/*
				 * The version read before gave group 0's columns through
				 * these keys too: a later read of group 0 alone must go
				 * through them, not be a first read of group 0's own key.
				 */
				if (read_zero)
					for (; g < info->ngroups; g++)
						if (g != 0 && (groups & (1 << g)))
							fps_txn_lookup(fps_group_key(key, g))->read_zero = true;
				return;
			}
			fps_abort_key(FPS_ABORT_REREAD_CHANGED, access);
		}

		/*
		 * Only now is the version the transaction's read of this key.  A
		 * read that failed above (a 40001 that a savepoint or an EXCEPTION
		 * block caught) returned nothing and recorded no entry word; had it
		 * named the version it found as the one read first, a reread after
		 * the next successful read would hand back that older version,
		 * behind what the transaction saw since.
		 */
		if (access->nreads++ == 0)
		{
			access->read_stmt = statement;
			access->first_tid = slot->tts_tid;
			/*
			 * a version read while nothing kept it (or its TOAST) unpruned,
			 * or a running writer's: no reread
			 */
			access->first_xmin = fps_txn.held_snapshot != NULL && !in_progress ?
				xmin : InvalidTransactionId;
		}
		if (read_zero && g != 0)
			access->read_zero = true;
		/* what ran since this statement read the row (reevaluate.c, rule 5) */
		access->last_read_stmt = statement;
		access->effects_at_last_read = effects;
	}
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

/* ACCESS EXCLUSIVE on rel now, without waiting and without invalidations. */
static bool
lock_exclusively_now(Relation rel)
{
	LOCKTAG		tag;

	if (CheckRelationLockedByMe(rel, AccessExclusiveLock, false))
		return true;
	SET_LOCKTAG_RELATION(tag, MyDatabaseId, RelationGetRelid(rel));
	return LockAcquire(&tag, AccessExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * The pin budget refused a key this write needs.  Write escalation: hold
 * rel ACCESS EXCLUSIVE and write it without pins from now on, covered by the
 * floor raise at commit (TicToc: its commit_ts then lies above every version
 * read and every key written; STO's order is fixed at BEGIN, so not there).
 * Holding the lock means no running transaction has touched rel (each keeps
 * its lock until it ends, after its pins are gone, rolled-back
 * subtransactions included) and none can until we end.  The lock is taken
 * only without waiting, and only by a user who may take it with LOCK TABLE
 * (UPDATE, DELETE or TRUNCATE privilege): an INSERT privilege must not lock
 * others out of a table.  Otherwise the write fails: with 40001 if others
 * hold the pool, or the transactions of the same login role its share of
 * the pool (a retry may find room once they end), with 54000 if the
 * transaction itself needs more than it may ever pin.
 */
static void
escalate_writes(Relation rel, FpsRelState *rs)
{
	FpsPinLimit limit;
	const char *how;

	if (fps_protocol == FPS_PROTOCOL_TICTOC &&
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(),
						  ACL_UPDATE | ACL_DELETE | ACL_TRUNCATE) == ACLCHECK_OK &&
		lock_exclusively_now(rel))
	{
		fps_txn_keep_lock(rs, AccessExclusiveLock);
		rs->write_escalated = true;
		fps_note_untracked_write_of(rel);
		fps_atomic_add(&fps_counters->write_escalations, 1);
		return;
	}
	how = fps_protocol == FPS_PROTOCOL_TICTOC ?
		"could not be taken without waiting, or which this user may not take" :
		fps_protocol == FPS_PROTOCOL_MVTO ? "MVTO cannot use" : "STO cannot use";
	limit = fps_txn_pin_limit_reached();
	if (limit != FPS_PIN_LIMIT_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("transaction writes more rows than fpsketch can track in \"%s\"",
						RelationGetRelationName(rel)),
				 limit == FPS_PIN_LIMIT_TRANSACTION ?
				 errdetail("A transaction may pin fpsketch.max_pins_per_transaction keys of the shared exact table; past that, its writes need the table in ACCESS EXCLUSIVE mode, which %s.",
						   how) :
				 errdetail("The transactions of one login role may borrow fpsketch.max_pool_pins_per_role keys of the shared exact table's pool, and this transaction holds that many by itself; past that, its writes need the table in ACCESS EXCLUSIVE mode, which %s.",
						   how),
				 fps_protocol == FPS_PROTOCOL_TICTOC ?
				 errhint("Run LOCK TABLE \"%s\" IN ACCESS EXCLUSIVE MODE first, write fewer rows per transaction, or raise %s or fpsketch.max_entries.",
						 RelationGetRelationName(rel),
						 limit == FPS_PIN_LIMIT_TRANSACTION ?
						 "fpsketch.max_pins_per_transaction" :
						 "fpsketch.max_pool_pins_per_role") :
				 errhint("Write fewer rows per transaction, or raise %s or fpsketch.max_entries.",
						 limit == FPS_PIN_LIMIT_TRANSACTION ?
						 "fpsketch.max_pins_per_transaction" :
						 "fpsketch.max_pool_pins_per_role")));
	/* within its own limit: others hold the pool, a retry may find room */
	fps_abort_pool_held(RelationGetRelid(rel));
}

/*
 * Write a fine key (a row's, of column group group; or an equality
 * prefix's) of rel; false if the pin budget refused it and rel is now
 * written untracked.
 */
static bool
write_fine_key(Relation rel, FpsRelState *rs, FpsRelInfo *info, fps_u64 key,
			   bool predicate, int group)
{
	FpsAccess  *access = fps_txn_try_access(key, info->relid);

	if (access == NULL)
	{
		escalate_writes(rel, rs);
		return false;
	}
	if (predicate)
	{
		if (!access->is_write)
			fps_atomic_add(&fps_counters->phantom_writes, 1);
		cc_phantom_write(access);
	}
	else
	{
		access->row_group = group;
		cc_write(access);
	}
	return true;
}

/*
 * Write the keys of groups of the row whose key is key; false: untracked.
 * The row's other groups are followed (cc_follow): heap's new version of the
 * row carries them too, so it must come after their last writers.  With
 * learned groups, every writer of group 0 writes every group (statement.c),
 * so a write of another group comes after group 0's last writer already.
 */
static bool
write_row_groups(Relation rel, FpsRelState *rs, FpsRelInfo *info, fps_u64 key,
				 FpsGroupMask groups)
{
	for (int g = 0; g < info->ngroups; g++)
	{
		if (g == 0 && !info->groups_declared && groups != 0 && !(groups & 1))
			continue;
		if (groups & (1 << g))
		{
			if (!write_fine_key(rel, rs, info, fps_group_key(key, g), false, g))
				return false;
		}
		else
		{
			FpsAccess  *access = fps_txn_try_access(fps_group_key(key, g), info->relid);

			if (access == NULL)
			{
				escalate_writes(rel, rs);
				return false;
			}
			access->row_group = g;
			cc_follow(access);
		}
	}
	return true;
}

/* Write the equality-prefix keys keys[0..nkeys); false: untracked. */
static bool
write_prefix_keys(Relation rel, FpsRelState *rs, FpsRelInfo *info,
				  fps_u64 *keys, int nkeys)
{
	for (int i = 0; i < nkeys; i++)
		if (!write_fine_key(rel, rs, info, keys[i], true, -1))
			return false;
	return true;
}

/*
 * Is this write to rel tracked per key?  Writes to storage new in this
 * transaction, or to a relation the transaction escalated its writes of,
 * are covered by the floor raise instead.
 */
static bool
write_is_tracked(Relation rel, FpsRelInfo **info, FpsRelState **rs)
{
	if (!fps_tracking_active(rel, info))
		return false;
	if (storage_is_new_in_xact(rel))
	{
		fps_note_untracked_write_of(rel);
		fps_txn_rel(RelationGetRelid(rel))->stat_row_writes++;
		return false;
	}
	*rs = relation_state(rel, RowExclusiveLock);
	(*rs)->stat_row_writes++;
	return !(*rs)->write_escalated;
}

/* The row in slot was inserted: all its groups, and every predicate. */
void
fps_track_insert(Relation rel, TupleTableSlot *slot)
{
	FpsRelInfo *info;
	FpsRelState *rs;
	fps_u64		keys[FPS_MAX_ROW_PREDICATES];

	if (!write_is_tracked(rel, &info, &rs) ||
		!write_row_groups(rel, rs, info, fps_key_from_slot(rel, info, slot),
						  FPS_ALL_GROUPS(info)))
		return;
	fps_write_predicate_key(info, info->escalation_key);
	fps_write_predicate_key(info, info->relation_key);
	if (write_prefix_keys(rel, rs, info, keys, fps_prefix_keys_of_row(info, slot, keys)))
		fps_gap_note_row(rel, info, slot);
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
	FpsRelState *rs;
	TupleTableSlot *old = NULL;
	fps_u64		keys[FPS_MAX_ROW_PREDICATES];
	fps_u64		key;

	if (!write_is_tracked(rel, &info, &rs))
		return;
	if (!info->by_tid || info->nprefix > 0)
		old = refetch_old_version(rel, tid);
	key = info->by_tid ? fps_key_from_tid(info, tid) : fps_key_from_slot(rel, info, old);
	if (write_row_groups(rel, rs, info, key, FPS_ALL_GROUPS(info)))
	{
		/* escalated readers of the relation see every write through this key */
		fps_write_predicate_key(info, info->escalation_key);
		fps_write_predicate_key(info, info->relation_key);
		if (old != NULL &&
			write_prefix_keys(rel, rs, info, keys, fps_prefix_keys_of_row(info, old, keys)))
			fps_gap_note_row(rel, info, old);
	}
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
	FpsRelState *rs;
	TupleTableSlot *old = NULL;
	FpsGroupMask groups;
	fps_u64		old_key;
	fps_u64		new_key;

	if (!write_is_tracked(rel, &info, &rs))
		return;

	/*
	 * A HOT update (!update_indexes) changed no column of any index, the
	 * identity's included: heap compared them byte for byte.  The old
	 * version's key is then the new one's, and the page need not be read
	 * again.
	 */
	if (update_indexes)
		old = refetch_old_version(rel, old_tid);
	groups = fps_statement_groups(rel, info, true);
	new_key = fps_key_from_slot(rel, info, slot);
	if (info->by_tid)
		old_key = fps_key_from_tid(info, old_tid);
	else
		old_key = old != NULL ? fps_key_from_slot(rel, info, old) : new_key;
	if (write_row_groups(rel, rs, info, old_key, groups) &&
		(new_key == old_key || write_row_groups(rel, rs, info, new_key, groups)))
	{
		/* escalated readers of the relation see every write through this key */
		fps_write_predicate_key(info, info->escalation_key);
		if (update_indexes)
		{
			fps_u64		keys[2 * FPS_MAX_ROW_PREDICATES];
			bool		moved;
			int			nkeys = fps_moved_prefix_keys(rel, info, old, slot, keys, &moved);

			if (write_prefix_keys(rel, rs, info, keys, nkeys))
			{
				if (moved)
					fps_write_predicate_key(info, info->relation_key);
				fps_gap_note_moved(rel, info, old, slot);
			}
		}
	}
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

/* Is rel written untracked (held ACCESS EXCLUSIVE) by this transaction? */
bool
fps_writes_escalated(Relation rel)
{
	return fps_txn_rel(RelationGetRelid(rel))->write_escalated;
}
