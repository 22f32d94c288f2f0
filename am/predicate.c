/*-------------------------------------------------------------------------
 *
 * predicate.c
 *	  Phantom keys (DESIGN §6): what a scan reads besides its rows, and what
 *	  a write that moves rows into or out of predicates writes.
 *
 *	- the relation key: read by scans that can see any row (sequential,
 *	  bitmap, sample, TID), written by inserts, deletes and updates that
 *	  move rows between predicates;
 *	- equality-prefix keys (index, p, hash of the first p values): read by
 *	  an index scan whose keys fix the first p columns by equality, written
 *	  for every prefix of every eligible index of a new or removed row;
 *	- the escalation key: written by every write of the relation, read by a
 *	  transaction instead of more row keys (lock escalation).
 *
 * A predicate key must be sampled before the snapshot the scan uses (§6.3):
 * snapshot_after_predicate_sample() gives the scan a newer snapshot when a
 * transaction completed between the two.
 *
 * Index scans find their runtime scan keys in the executor node that runs
 * them, searched in the plan trees of the running statements (statement.c),
 * their subplans, and the trees EvalPlanQual builds for re-evaluation.
 *
 * Shared state: none directly; the protocol's entries through cc/.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am.h"
#include "../fpsketch_am.h"

static void release_fresh_snapshot(FpsIndexFetch *f);

/* more transactions than this completed since the snapshot: assume the worst */
#define FPS_MAX_MISSED_CHECK 100000

/*
 * Did xid, which completed, commit writes of this database's fpsketch
 * tables, to predicate keys of a relation in the filter relations?
 */
static bool
committed_fpsketch_writer(TransactionId xid, fps_u64 relations)
{
	bool		known;
	bool		writer;

	if (!TransactionIdDidCommit(xid))
		return false;
	writer = fps_commit_ts_writer(SubTransGetTopmostTransaction(xid), MyDatabaseId,
								  relations, &known);
	return writer || !known;
}

/*
 * Does snapshot miss a transaction that has completed by latest and wrote
 * predicate keys of a relation in the filter relations, in this database
 * (per the map of commit timestamps)?  Only such a writer can have
 * installed on a predicate key of those relations that the scan just
 * sampled: commits in other databases, of heap-only transactions, and of
 * writers of other relations do not matter (a writer past per-key
 * tracking counts for every relation: its floor raise reaches every key).
 */
static bool
snapshot_misses_writer(Snapshot snapshot, Snapshot latest, fps_u64 relations)
{
	TransactionId xid;

	for (int i = 0; i < snapshot->xcnt; i++)
	{
		xid = snapshot->xip[i];
		if (!XidInMVCCSnapshot(xid, latest) && committed_fpsketch_writer(xid, relations))
			return true;
	}
	if (TransactionIdPrecedes(latest->xmax, snapshot->xmax) ||
		latest->xmax - snapshot->xmax > FPS_MAX_MISSED_CHECK)
		return latest->xmax != snapshot->xmax;
	for (xid = snapshot->xmax; TransactionIdPrecedes(xid, latest->xmax);)
	{
		if (TransactionIdIsNormal(xid) &&
			!XidInMVCCSnapshot(xid, latest) && committed_fpsketch_writer(xid, relations))
			return true;
		TransactionIdAdvance(xid);
	}
	return false;
}

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
 * the transaction snapshot must stay, so a writer of this database's
 * fpsketch tables that completed unseen is a 40001 (read-only transactions
 * there read at a timestamp instead, am/visibility.c).
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
	Snapshot	latest;

	if (IsolationUsesXactSnapshot())
	{
		latest = GetSnapshotData(&latest_data);
		if (!fps_snapshot_sees_writers(snapshot, latest, fps_relation_filter(relid)))
			fps_abort(FPS_ABORT_PHANTOM_SNAPSHOT, relid);
		return NULL;
	}
	return fps_fresher_snapshot(snapshot);
}

/*
 * Does snapshot see every transaction that had completed when latest was
 * taken, or miss only some that wrote no predicate key of the relations in
 * the filter relations, in this database?
 */
bool
fps_snapshot_sees_writers(Snapshot snapshot, Snapshot latest, fps_u64 relations)
{
	if (latest->xmax == snapshot->xmax && latest->xcnt == snapshot->xcnt)
		return true;
	return !snapshot_misses_writer(snapshot, latest, relations);
}

/*
 * READ COMMITTED: a registered snapshot taken now, for a scan that would
 * read with snapshot, if a transaction completed since snapshot was taken;
 * else NULL.
 */
Snapshot
fps_fresher_snapshot(Snapshot snapshot)
{
	static SnapshotData latest_data = {SNAPSHOT_MVCC};
	Snapshot	latest = GetSnapshotData(&latest_data);
	Snapshot	fresh;

	if (latest->xmax == snapshot->xmax && latest->xcnt == snapshot->xcnt)
		return NULL;
	fresh = RegisterSnapshot(latest);
	/* same command: the scan must not see what this statement writes */
	fresh->curcid = snapshot->curcid;
	fps_atomic_add(&fps_counters->snapshot_refreshes, 1);
	return fresh;
}

/* Record a read of a predicate key of rel; the key read is returned. */
fps_u64
fps_read_predicate_key(FpsRelInfo *info, fps_u64 key, bool is_prefix)
{
	FpsAccess  *access = is_prefix ? fps_txn_try_read_access(key, info->relid) : NULL;

	/* past the pin budget, an equality prefix widens to the whole relation */
	if (access == NULL)
	{
		key = info->relation_key;
		is_prefix = false;
		access = fps_txn_access(key, info->relid);
	}
	if (!access->is_read)
		fps_atomic_add(is_prefix ? &fps_counters->phantom_prefix_reads :
					   &fps_counters->phantom_relation_reads, 1);
	cc_phantom_read(access);
	return key;
}

void
fps_write_predicate_key(FpsRelInfo *info, fps_u64 key)
{
	FpsAccess  *access = fps_txn_access(key, info->relid);

	if (!access->is_write)
		fps_atomic_add(&fps_counters->phantom_writes, 1);
	cc_phantom_write(access);
}

/*
 * Commit after the last install of a predicate key, without writing it
 * (cc_phantom_follow): a walker after the ESC keys of the levels it walks.
 */
void
fps_follow_predicate_key_unwritten(FpsRelInfo *info, fps_u64 key)
{
	cc_phantom_follow(fps_txn_access(key, info->relid));
}

/* Write a gap key and commit after its last install (cc_phantom_follow). */
void
fps_follow_predicate_key(FpsRelInfo *info, fps_u64 key)
{
	fps_write_predicate_key(info, key);
	cc_phantom_follow(fps_txn_access(key, info->relid));
}

/*
 * The equality-prefix keys of index pi that the row in slot belongs to,
 * appended to keys[*nkeys].  A NULL ends an index's prefixes: equality never
 * matches it.
 */
static void
prefix_keys_of_row(FpsPrefixIndex *pi, TupleTableSlot *slot, fps_u64 *keys, int *nkeys)
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
			keys[(*nkeys)++] = fps_prefix_key(pi, p + 1, hashes);
	}
}

/*
 * Every equality prefix of every eligible index that the row in slot
 * belongs to (FPS_MAX_ROW_PREDICATES at most); the relation key besides.
 */
int
fps_prefix_keys_of_row(FpsRelInfo *info, TupleTableSlot *slot, fps_u64 *keys)
{
	int			nkeys = 0;

	for (int i = 0; i < info->nprefix; i++)
		prefix_keys_of_row(&info->prefix[i], slot, keys, &nkeys);
	return nkeys;
}

/*
 * A unique or exclusion check (or ON CONFLICT's arbiter) found a row
 * committed by another transaction.  If a predicate this transaction
 * read has changed since (the row's insert installed on it after the read),
 * the transaction may have seen the row absent and now finds it present:
 * fail with 40001, which a retry can fix (the retry reads the row), before
 * the check reports a unique violation that no serial order explains (heap
 * SERIALIZABLE does the same, see _bt_check_unique).  Any predicate, not
 * only those of the row's prefixes: a gap key is named by the index entries
 * around the gap, which the row does not tell, and a transaction with a
 * changed predicate fails validation anyway.
 */
void
fps_refuse_unique_conflict(void)
{
	for (int i = 0; i < fps_txn.naccesses; i++)
	{
		FpsAccess  *access = &fps_txn.accesses[i];

		if (access->is_read && access->is_phantom &&
			!cc_phantom_read_unchanged(access))
			fps_abort(FPS_ABORT_PHANTOM, access->relid);
	}
}

/*
 * The equality prefixes an UPDATE that was not HOT moves its row between
 * (into keys; the count is returned): old and new, of every eligible index
 * whose columns changed.  *moved: the relation's key too, if one did (scans
 * without an equality prefix read it) or if an index whose scans always
 * read that key (expressions, partial indexes, ...) exists.  An index whose
 * columns kept their values keeps the row in the same predicates: a scan
 * that found the row there conflicts through the row key, one that did not
 * would still not find it.  Values that are equal but not binary equal
 * count as changed.
 */
int
fps_moved_prefix_keys(Relation rel, FpsRelInfo *info, TupleTableSlot *old,
					  TupleTableSlot *new, fps_u64 *keys, bool *moved)
{
	int			nkeys = 0;

	*moved = info->has_coarse_indexes;
	for (int i = 0; i < info->nprefix; i++)
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
			prefix_keys_of_row(pi, old, keys, &nkeys);
			prefix_keys_of_row(pi, new, keys, &nkeys);
			*moved = true;
		}
	}
	return nkeys;
}

/*
 * Must a scan of the relation read its predicate keys?  Not once the
 * transaction holds it ACCESS EXCLUSIVE for its writes: nobody else can
 * insert into it before we end.  The relation stays locked (ACCESS SHARE)
 * until the transaction ends, for the predicate read.
 */
static bool
predicate_reads_tracked(FpsRelInfo *info)
{
	FpsRelState *rs = fps_txn_rel(info->relid);

	fps_txn_keep_lock(rs, AccessShareLock);
	return !rs->write_escalated;
}

/*
 * A scan of a relation the transaction writes without pins (write
 * escalation) reads no key, but the floor raise orders the transaction
 * after everyone who inserted into it before our lock, so the scan must see
 * their inserts, as a tracked scan's snapshot must see every insert before
 * its key's sample: a snapshot older than the lock may miss some (the
 * transaction snapshot of REPEATABLE READ, or that of the statement that
 * escalated).  The same answer as after a sample: a newer snapshot for the
 * scan, or NULL, or under REPEATABLE READ a 40001.
 */
static Snapshot
escalated_scan_snapshot(Snapshot snapshot, Oid relid)
{
	return snapshot_after_predicate_sample(snapshot, relid);
}

/*
 * Sample the coarse predicate of a scan that can see any row of rel (a
 * sequential, bitmap, sample or TID scan).  Returns a newer snapshot for the
 * scan, or NULL.
 */
Snapshot
fps_read_relation_predicate(Relation rel, Snapshot snapshot)
{
	FpsRelInfo *info;

	if (!fps_tracking_active(rel, &info))
		return NULL;
	if (!predicate_reads_tracked(info))
		return escalated_scan_snapshot(snapshot, info->relid);
	if (fps_ts_mode(snapshot))
	{
		/* visibility comes from commit timestamps: no newer snapshot */
		fps_ts_read_predicate(info, info->relation_key, false);
		return NULL;
	}
	fps_read_predicate_key(info, info->relation_key, false);
	return snapshot_after_predicate_sample(snapshot, info->relid);
}

static bool find_index_scan_walker(PlanState *planstate, void *context);

/* Search the trees EvalPlanQual runs for epq (its plan and its subplans). */
static bool
find_index_scan_in_epq(EPQState *epq, void *context)
{
	ListCell   *lc;

	if (epq->recheckplanstate != NULL &&
		find_index_scan_walker(epq->recheckplanstate, context))
		return true;
	if (epq->recheckestate == NULL)
		return false;
	foreach(lc, epq->recheckestate->es_subplanstates)
		if (find_index_scan_walker((PlanState *) lfirst(lc), context))
			return true;
	return false;
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

	/*
	 * Re-evaluation (EvalPlanQual) runs copies of the plan below these nodes,
	 * subplans included, in an EState of its own.
	 */
	if (IsA(planstate, ModifyTableState) &&
		find_index_scan_in_epq(&((ModifyTableState *) planstate)->mt_epqstate, context))
		return true;
	if (IsA(planstate, LockRowsState) &&
		find_index_scan_in_epq(&((LockRowsState *) planstate)->lr_epqstate, context))
		return true;
	return planstate_tree_walker(planstate, find_index_scan_walker, context);
}

/*
 * The executor node whose index scan uses fetch, or NULL.  Besides the main
 * plan tree, a query's subplans (CTEs, among them data-modifying ones that
 * only run in ExecutorFinish) and the trees of re-evaluation are searched.
 */
static IndexScanState *
find_index_scan(IndexFetchTableData *fetch)
{
	QueryDesc  *qd;

	for (int depth = 0; (qd = fps_running_query(depth)) != NULL; depth++)
	{
		void	   *context = fetch;
		ListCell   *lc;

		if (qd->planstate != NULL &&
			find_index_scan_walker(qd->planstate, &context))
			return (IndexScanState *) context;
		if (qd->estate == NULL)
			continue;
		foreach(lc, qd->estate->es_subplanstates)
		{
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
equality_prefix(IndexScanState *iss, FpsPrefixIndex *pi, uint64 *hashes, int *keyidx)
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
			keyidx[p] = k;
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
	int			keyidx[INDEX_MAX_KEYS];
	int			nprefix = 0;
	fps_u64		key;

	if (!fps_tracking_active(rel, &info))
		return;
	if (!predicate_reads_tracked(info))
	{
		release_fresh_snapshot(f);
		f->fresh_snapshot = escalated_scan_snapshot(snapshot, info->relid);
		return;
	}
	if (iss != NULL && fps_prefix_predicates)
		pi = fps_prefix_index(info, RelationGetRelid(iss->iss_ScanDesc->indexRelation));
	if (pi != NULL)
		nprefix = equality_prefix(iss, pi, hashes, keyidx);
	/* a lookup by row identity: read only if it finds nothing */
	if (pi != NULL && nprefix == pi->nkeys && !fps_ts_mode(snapshot) &&
		fps_point_lookup_defer(f, iss, info, pi, hashes, keyidx))
		return;
	fps_point_lookup_forget(f);
	/* a scan that reads gap keys reads its level's ESC key here (am/gap.c) */
	if (pi != NULL && !fps_ts_mode(snapshot) &&
		fps_gap_scan_begin(f, iss, pi, nprefix, hashes))
		key = fps_gap_escalation_key(pi, nprefix);
	else
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
	if (fps_ts_mode(snapshot))
	{
		/* its catalog read may process an invalidation that frees info */
		fps_ts_relation_check(rel);
		fps_ts_read_predicate(fps_relinfo(rel), key, nprefix > 0);
		f->predicate_key = key;
		f->predicate_read = true;
		return;
	}
	f->predicate_key = fps_read_predicate_key(info, key, nprefix > 0 || f->gap.active);
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

/*
 * index_rescan() resets the fetch before the index AM takes the new keys;
 * the executor node already holds them, evaluated.
 */
void
fps_index_predicate_reset(FpsIndexFetch *f)
{
	IndexScanState *iss;

	fps_point_lookup_settle(f);
	fps_gap_scan_reset(f);
	f->predicate_pending = true;
	iss = find_index_scan(&f->heap.xs_base);
	f->ts.index = iss != NULL ? iss->iss_ScanDesc->indexRelation : NULL;
	if (iss != NULL && iss->iss_ScanDesc->xs_snapshot != NULL &&
		IsMVCCSnapshot(iss->iss_ScanDesc->xs_snapshot))
	{
		read_index_predicate(f, iss, iss->iss_ScanDesc->xs_snapshot);
		f->predicate_pending = false;
	}
}

/*
 * The snapshot a fetch of the index scan must use instead of snapshot: the
 * one taken after its predicate key was sampled, if any.  An index scan
 * outside the executor has unknown keys: it reads the relation key.
 */
Snapshot
fps_index_predicate_snapshot(FpsIndexFetch *f, Snapshot snapshot)
{
	if (snapshot == NULL || !IsMVCCSnapshot(snapshot))
		return snapshot;
	if (f->predicate_pending)
	{
		read_index_predicate(f, NULL, snapshot);
		f->predicate_pending = false;
	}
	return f->fresh_snapshot != NULL ? f->fresh_snapshot : snapshot;
}

void
fps_index_predicate_end(FpsIndexFetch *f)
{
	f->gap.active = false;
	f->gap.check_unseen = false;
	fps_point_lookup_forget(f);
	release_fresh_snapshot(f);
}

/* ---- escalation ---- */

/* A copy of snapshot, xid arrays included, in cxt. */
static Snapshot
copy_snapshot_to(Snapshot snapshot, MemoryContext cxt)
{
	int			nsub = snapshot->suboverflowed ? 0 : snapshot->subxcnt;
	Snapshot	copy = MemoryContextAlloc(cxt, sizeof(SnapshotData) +
										  sizeof(TransactionId) * (snapshot->xcnt + nsub));

	memcpy(copy, snapshot, sizeof(SnapshotData));
	copy->xip = (TransactionId *) (copy + 1);
	memcpy(copy->xip, snapshot->xip, sizeof(TransactionId) * snapshot->xcnt);
	copy->subxip = copy->xip + snapshot->xcnt;
	if (nsub > 0)
		memcpy(copy->subxip, snapshot->subxip, sizeof(TransactionId) * nsub);
	copy->subxcnt = nsub;
	copy->copied = true;
	copy->regd_count = 0;
	copy->active_count = 0;
	return copy;
}

/* The world now: which transactions have completed. */
static Snapshot
snapshot_now(void)
{
	static SnapshotData now_data = {SNAPSHOT_MVCC};

	return copy_snapshot_to(GetSnapshotData(&now_data), TopTransactionContext);
}

/*
 * From now on the transaction reads rel's rows through its escalation key,
 * which every write of rel writes, instead of one key per row.  Under
 * TicToc the world just before and just after the sample is noted for
 * fps_escalated_read().
 */
static void
escalate_reads(FpsRelInfo *info, FpsRelState *rs)
{
	FpsAccess  *access;

	if (fps_protocol == FPS_PROTOCOL_TICTOC)
		rs->before_escalation = snapshot_now();
	access = fps_txn_access(info->escalation_key, info->relid);
	if (!access->is_read)
		fps_atomic_add(&fps_counters->phantom_relation_reads, 1);
	cc_phantom_read(access);
	if (fps_protocol == FPS_PROTOCOL_TICTOC)
		rs->after_escalation = snapshot_now();
	rs->escalation = access - fps_txn.accesses;
	rs->escalated = true;
	fps_atomic_add(&fps_counters->escalations, 1);
}

/*
 * A read of rel's row version in check (created by xmin) once reads of rel
 * are escalated (escalating them now if not yet): no row key, only the
 * escalation key's observation, which every write of rel changes.
 *
 * TicToc: the escalation key's readers_rts was raised to at least the wts
 * it observed, so every writer that registers after the sample commits
 * after it (see tictoc_phantom_read).  The transaction commits at commit_ts
 * >= that wts; versions read this way must be valid at commit_ts:
 *	- a version with a committed successor: the successor's writer must
 *	  have registered after the sample.  If it completed before the world
 *	  "after" the sample, it may have installed before the sample: 40001
 *	  now (stale).  Otherwise validation sees its install unless commit_ts
 *	  stays at or below the observed readers_rts, which it then follows.
 *	- a version whose creator completed after the world "before" the
 *	  sample may have installed after it, at a commit_ts above readers_rts:
 *	  the transaction must commit after it, so its commit_ts is pushed above
 *	  the observed readers_rts, and validation then checks that no writer
 *	  installed since the sample.
 * STO: a younger writer of rel raised the escalation key's written wts at
 * its write, before its version could be read: read too late, as for a row
 * key.  Older writers in flight fail at their PRE_COMMIT (the key's
 * readers_rts); a committed successor is stale.
 */
void
fps_escalated_read(Relation rel, FpsRelInfo *info, FpsRelState *rs,
				   FpsVersionCheck *check, TransactionId xmin)
{
	TransactionId updater;
	FpsAccess  *escalation;

	if (!rs->escalated)
		escalate_reads(info, rs);
	escalation = &fps_txn.accesses[rs->escalation];
	if (fps_protocol != FPS_PROTOCOL_TICTOC)
	{
		FpsEntry   *entry = escalation->entry;

		/* its last writer's wts, which rts extensions do not move */
		if (fps_txn.sto_ts < fps_entry_written_wts(entry, fps_entry_load(entry)))
			fps_abort(FPS_ABORT_STO_READ_TOO_LATE, info->relid);
		if (fps_version_is_stale(check))
			fps_abort(FPS_ABORT_STALE_READ, info->relid);
		return;
	}
	updater = fps_version_committed_updater(check);
	if (TransactionIdIsValid(updater) &&
		!XidInMVCCSnapshot(updater, rs->after_escalation))
		fps_abort(FPS_ABORT_STALE_READ, info->relid);
	if (XidInMVCCSnapshot(xmin, rs->before_escalation))
		escalation->min_commit_ts = Max(escalation->min_commit_ts,
										escalation->observed_readers_rts + 1);
}
