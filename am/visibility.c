/*-------------------------------------------------------------------------
 *
 * visibility.c
 *	  Timestamp snapshots: reading every row in the version that was
 *	  current at a timestamp ts (DESIGN §9).
 *
 * A read-only transaction (BEGIN READ ONLY, SET TRANSACTION READ ONLY,
 * default_transaction_read_only, and an autocommit SELECT that can write
 * nothing), and every transaction under fpsketch.protocol = mvto, picks a
 * timestamp ts at its first access to an fpsketch table: TicToc's readers
 * the largest commit_ts published so far, so that everything visible to
 * them then is at or before ts; STO's and MVTO's their own timestamp.  A
 * version (heap tuple) is read iff its interval [commit_ts(xmin),
 * commit_ts(xmax)) contains ts, the commit timestamps coming from the map
 * of cc/commit_ts.c, never from a PostgreSQL snapshot: TicToc's timestamps
 * do not follow the order in which transactions become visible.  Heap
 * scans run with SnapshotAny and hand every version to fps_ts_visible().
 *
 * Why a version judged now stays judged.  Before a version is returned the
 * keys of its row (every column group: a writer of any group makes a new
 * version of the whole row) have their rts raised to ts, after any
 * committer holding them is done (tictoc_ts_read, sto_ts_read); then the
 * version is judged again.  A writer that locks the key after the raise
 * commits after ts; one that locked it before has installed, and its
 * commit_ts is in the map.  Past fpsketch.escalation_threshold rows of a
 * relation (or for a sequential scan of a large one) the relation's
 * escalation key, which every writer of the relation writes, has its
 * readers_rts raised instead, once: later writers of the relation commit
 * after ts, writers registered before it are waited for.  Predicate keys
 * (relation, equality prefix) are raised the same way before the scan, so
 * an insert committed at or below ts is seen and one above it is not.
 * None of this orders writers among themselves, and nothing is validated:
 * the transaction never aborts for a serialization reason.
 *
 * What may not be known.  Transactions below the snapshot's xmin completed
 * before ts was picked: committed ones are at or before ts.  A writer that
 * is validated but not yet visible, or visible but not yet installed, is
 * PENDING in the map: at or below ts it is waited for, above ts it does
 * not matter.  A committed writer missing from the map was dropped once no
 * reader needed it (at or before ts), unless the map lost entries above ts
 * under a very long reader: then 40001 "snapshot too old".  So is a
 * relation changed by a writer after ts (TRUNCATE, a rewrite: the old
 * versions are gone).  The snapshot stays registered until the end, so
 * VACUUM and pruning keep every version whose replacer is after ts (it is
 * not visible to the snapshot, hence at or above its xmin).
 *
 * Versions a scan passes before they exist.  A scan finds the versions
 * that existed when it reached their place: heap's sequential scans take a
 * page's line pointers (and the relation's length) once, btree scans a leaf
 * page's entries once.  Under an MVCC snapshot that is enough, since a
 * writer running at the snapshot is invisible and so is everything it adds
 * later.  At ts it is not: a writer that was running when the transaction
 * began may replace a version after the scan passed the place of the new
 * one, and still come before ts (TicToc: it validated below ts without
 * writing a key this reader had raised yet; MVTO: an older transaction,
 * whose outcome the read waited for).  The old version is then invisible
 * and the new one never seen: the row vanishes.  So a version replaced at
 * or before ts by a writer running at the transaction's first snapshot
 * leads the scan along the update chain (t_ctid) to the version at ts
 * (fetch_successor); versions made by such writers that a scan returns are
 * remembered per scan pass with the place the scan handed them out from
 * (their own, or a predecessor's), so that the walk and the scan's own visit
 * return them once (returned_before).  A place the scan visits again in the
 * same pass (a cursor moving backward, a turn of direction, a restored mark)
 * returns the same version again; another place never does.  Writers that
 * had completed by that snapshot made their versions before any scan of the
 * transaction began.  A TID-range scan covers the whole relation, since a
 * version in its range may have a predecessor outside it, and returns only
 * what its range holds (the executor does not check the range again).  An index scan
 * follows a hop to a new index entry only if the index's key columns are
 * unchanged and the new version satisfies a partial index's predicate (then
 * it satisfies the scan's index quals and the quals the planner dropped as
 * implied by the predicate, neither of which the executor checks again); a
 * writer that changes the key columns writes the predicate keys the scan
 * read first (am/predicate.c), so it commits after ts (TicToc) or fails
 * (STO, MVTO).  Inserts are covered
 * by predicate keys the same way, and a row moved to another partition
 * also writes the predicate keys of the partition it moves to.
 *
 * Shared state: entry words and readers_rts through cc/, the map through
 * cc/commit_ts.c, heap pages share-locked while a version's header is read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "am.h"

/*
 * Does this transaction read at a timestamp?  Decided at its first tracked
 * access (snapshot: the one that access uses).
 */
bool
fps_ts_mode(Snapshot snapshot)
{
	bool		ts_mode;

	if (likely(fps_txn.mode_decided))
		return fps_txn.ts_mode;
	fps_txn.mode_decided = true;
	fps_txn.active = true;		/* the transaction's end forgets the decision */
	if (fps_protocol == FPS_PROTOCOL_MVTO)
		ts_mode = true;
	else if (!fps_timestamp_snapshots ||
			 TransactionIdIsValid(GetTopTransactionIdIfAny()))
		ts_mode = false;		/* it wrote already: reads are validated */
	else if (IsolationIsSerializable() && !fps_serializable_timestamp_snapshots)
	{
		/*
		 * PostgreSQL's SSI runs too, and must see these reads: a transaction
		 * may also read heap tables, and only SSI orders those.  SSI takes
		 * its predicate locks in heap's scans under an MVCC snapshot, which
		 * a read at a timestamp does not use (it would let a read-only
		 * transaction close a cycle through heap and fpsketch tables).  The
		 * GUC, on by default, trades that for reports that never fail, for
		 * databases whose SERIALIZABLE transactions use no heap tables.
		 */
		ts_mode = false;
	}
	else if (XactReadOnly && fps_txn_may_trust_read_only())
		ts_mode = true;
	else
	{
		/* a guess, which a write proves wrong (fps_txn_refuse_write_at_ts) */
		ts_mode = !IsTransactionBlock() && fps_txn_may_guess_read_only() &&
			fps_outer_statement_only_reads();
		fps_txn.ts_guessed = ts_mode;
	}
	if (!ts_mode)
		return false;
	if (IsolationUsesXactSnapshot())
		snapshot = GetTransactionSnapshot();
	else if (snapshot == NULL || !IsMVCCSnapshot(snapshot))
		snapshot = GetActiveSnapshot();
	fps_txn_begin_ts(snapshot);
	return true;
}

/* The header fields of a version that decide it, read under a share lock. */
typedef struct VersionHeader
{
	TransactionId xmin;
	TransactionId updater;		/* update or delete xid, or invalid */
	bool		xmin_frozen;
	bool		xmin_invalid;	/* hinted aborted */
	CommandId	cmin;			/* own xmin only */
	CommandId	cmax;			/* own updater only */
	bool		is_update;		/* made by an UPDATE (has a predecessor) */
	bool		hot_updated;	/* its successor is in the same HOT chain */
	bool		moved;			/* its successor is in another partition */
	ItemPointerData next;		/* t_ctid: its successor, or itself */
} VersionHeader;

static void
read_header(TupleTableSlot *slot, VersionHeader *h)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	Buffer		buffer = bslot->buffer;
	HeapTupleHeader tup = bslot->base.tuple->t_data;
	uint16		infomask;

	Assert(TTS_IS_BUFFERTUPLE(slot) && BufferIsValid(buffer));
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	infomask = tup->t_infomask;
	h->xmin = HeapTupleHeaderGetRawXmin(tup);
	h->xmin_frozen = HeapTupleHeaderXminFrozen(tup);
	h->xmin_invalid = HeapTupleHeaderXminInvalid(tup);
	h->updater = InvalidTransactionId;
	if (!(infomask & HEAP_XMAX_INVALID) && !HEAP_XMAX_IS_LOCKED_ONLY(infomask))
		h->updater = HeapTupleHeaderGetUpdateXid(tup);
	h->cmin = TransactionIdIsCurrentTransactionId(h->xmin) ?
		HeapTupleHeaderGetCmin(tup) : InvalidCommandId;
	h->cmax = TransactionIdIsValid(h->updater) &&
		TransactionIdIsCurrentTransactionId(h->updater) ?
		HeapTupleHeaderGetCmax(tup) : InvalidCommandId;
	h->is_update = (infomask & HEAP_UPDATED) != 0;
	h->hot_updated = HeapTupleHeaderIsHotUpdated(tup);
	h->moved = HeapTupleHeaderIndicatesMovedPartitions(tup);
	h->next = tup->t_ctid;
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
}

/* Where a transaction stands against ts. */
typedef enum XidAtTs
{
	XID_BEFORE,					/* committed at or before ts */
	XID_AFTER,					/* commits (if at all) after ts */
	XID_ABORTED,
	XID_OWN,					/* this transaction */
	XID_UNSETTLED				/* running, not validated: after ts unless it
								 * writes a key before this reader raises it */
} XidAtTs;

static pg_attribute_noreturn() void
snapshot_too_old(Oid relid)
{
	fps_abort(FPS_ABORT_SNAPSHOT_TOO_OLD, relid);
}

/*
 * Wait for a transaction that has validated (its commit timestamp is
 * published) to finish committing.  It holds its keys' lock bits until
 * then, and a wait for those is bounded by fpsketch.lock_wait_timeout like
 * every such wait: a commit held up (in a synchronous-replication wait, say)
 * must not hold its readers forever.
 */
static void
wait_for_committer(TransactionId top, Oid relid)
{
	FpsBackoff	backoff;

	fps_atomic_add(&fps_counters->ts_waits, 1);
	if (fps_prepared_wait(top, relid, -1))
		return;
	fps_backoff_init(&backoff);
	while (TransactionIdIsInProgress(top))
	{
		if (!fps_backoff_wait(&backoff))
			fps_abort(FPS_ABORT_LOCK_TIMEOUT, relid);
	}
}

static XidAtTs
xid_at_ts(TransactionId xid, Oid relid)
{
	fps_u64		commit_ts;
	TransactionId top;

	if (!TransactionIdIsValid(xid))
		return XID_ABORTED;
	if (!TransactionIdIsNormal(xid))
		return XID_BEFORE;		/* bootstrap, frozen */
	if (TransactionIdIsCurrentTransactionId(xid))
		return XID_OWN;
#ifdef FPS_BROKEN_TS_VISIBILITY

	/*
	 * Only for the checkers' proof that they have teeth: visibility from the
	 * statement's PostgreSQL snapshot instead of commit timestamps.
	 */
	if (XidInMVCCSnapshot(xid, GetActiveSnapshot()))
		return TransactionIdIsInProgress(xid) ? XID_UNSETTLED : XID_AFTER;
	return TransactionIdDidCommit(xid) ? XID_BEFORE : XID_ABORTED;
#endif
	if (TransactionIdPrecedes(xid, fps_txn.ts_snapshot->xmin))
		return TransactionIdDidCommit(xid) ? XID_BEFORE : XID_ABORTED;
	for (;;)
	{
		if (TransactionIdIsInProgress(xid))
		{
			top = SubTransGetTopmostTransaction(xid);
			switch (fps_commit_ts_lookup(top, &commit_ts, NULL))
			{
				case FPS_CTS_PENDING:
				case FPS_CTS_COMMITTED:
					if (commit_ts > fps_txn.ts)
						return XID_AFTER;
					/* validated at or below ts: its outcome decides */
					wait_for_committer(top, relid);
					continue;
				case FPS_CTS_ABORTED:
					return XID_ABORTED;
				default:
					return XID_UNSETTLED;
			}
		}
		if (!TransactionIdDidCommit(xid))
			return XID_ABORTED;
		top = SubTransGetTopmostTransaction(xid);
		switch (fps_commit_ts_lookup(top, &commit_ts, NULL))
		{
			case FPS_CTS_PENDING:
			case FPS_CTS_COMMITTED:
				return commit_ts <= fps_txn.ts ? XID_BEFORE : XID_AFTER;
			case FPS_CTS_ABORTED:
				return XID_ABORTED;
			default:
				if (fps_commit_ts_miss_is_before(fps_txn.ts))
					return XID_BEFORE;
				snapshot_too_old(relid);
		}
	}
}

typedef enum VersionAtTs
{
	VERSION_INVISIBLE,
	VERSION_VISIBLE,
	VERSION_UNSETTLED,			/* an unsettled creator or replacer */
	VERSION_REPLACED			/* replaced at or before ts: a successor is */
} VersionAtTs;

/*
 * Is the version whose header is h the row's version at ts?  Unsettled
 * transactions count as after ts when unsettled_is_after (the version's key
 * has been raised), else the answer may be VERSION_UNSETTLED; *waitfor then
 * names the running transaction.  The transaction's own writes are seen as
 * under the MVCC snapshot the read was given: those of commands before its
 * curcid, not those made while a scan is open (a cursor's loop that updates
 * the rows it reads, a trigger's writes: the Halloween problem).
 */
static VersionAtTs
version_at_ts(VersionHeader *h, bool unsettled_is_after, Oid relid,
			  TransactionId *waitfor, CommandId curcid)
{
	XidAtTs		created;
	XidAtTs		replaced;
	bool		unsettled = false;

	if (h->xmin_invalid)
		return VERSION_INVISIBLE;
	created = h->xmin_frozen ? XID_BEFORE : xid_at_ts(h->xmin, relid);
	if (created == XID_OWN && h->cmin >= curcid)
		return VERSION_INVISIBLE;
	if (created == XID_ABORTED || created == XID_AFTER)
		return VERSION_INVISIBLE;
	if (created == XID_UNSETTLED)
	{
		if (unsettled_is_after)
			return VERSION_INVISIBLE;
		unsettled = true;
		*waitfor = h->xmin;
	}

	replaced = xid_at_ts(h->updater, relid);
	if (replaced == XID_BEFORE || (replaced == XID_OWN && h->cmax < curcid))
		return VERSION_REPLACED;
	if (replaced == XID_UNSETTLED && !unsettled_is_after)
	{
		unsettled = true;
		*waitfor = h->updater;
	}
	return unsettled ? VERSION_UNSETTLED : VERSION_VISIBLE;
}

/*
 * A writer that gave the relation new storage after the transaction's first
 * snapshot (TRUNCATE, a rewrite) took away the versions ts reads: snapshot
 * too old.  Asked once per relation and transaction.  A change of its
 * pg_class row alone (GRANT, ALTER TABLE ... SET, statistics) leaves the
 * versions where they were, so the storage is compared with the one the
 * first snapshot shows, whoever changed the row last (a GRANT after a
 * TRUNCATE hides the TRUNCATE's xmin).  Storage this transaction made
 * itself (MVTO) holds its own writes.
 */
static void
relation_unchanged_since_ts(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	HeapTuple	tup;
	TransactionId xmin;
	Relation	pg_class;
	ScanKeyData key;
	SysScanDesc scan;
	bool		same_storage = false;

	if (rel->rd_createSubid != InvalidSubTransactionId ||
		rel->rd_newRelfilenodeSubid != InvalidSubTransactionId)
		return;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return;
	xmin = HeapTupleHeaderGetXmin(tup->t_data);
	ReleaseSysCache(tup);
	if (!XidInMVCCSnapshot(xmin, fps_txn.ts_snapshot))
		return;					/* the row the first snapshot shows */

	pg_class = table_open(RelationRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_class_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(pg_class, ClassOidIndexId, true,
							  fps_txn.ts_snapshot, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		same_storage = ((Form_pg_class) GETSTRUCT(tup))->relfilenode ==
			rel->rd_rel->relfilenode;
	systable_endscan(scan);
	table_close(pg_class, AccessShareLock);
	if (!same_storage)
		snapshot_too_old(relid);
}

/*
 * Before rel is first read at ts, by any scan or fetch (an empty relation
 * hands over no version to look at): keep it locked until the end, and
 * make sure its storage is the one ts reads.
 */
void
fps_ts_relation_check(Relation rel)
{
	FpsRelState *rs = fps_txn_rel(RelationGetRelid(rel));

	if (likely(rs->ts_checked))
		return;
	fps_txn_keep_lock(rs, AccessShareLock);
	relation_unchanged_since_ts(rel);
	rs->ts_checked = true;
}

/*
 * From now on rel is read through its escalation key: raised once, it
 * keeps every later writer of rel after ts.
 */
void
fps_ts_escalate(FpsRelInfo *info, FpsRelState *rs)
{
	if (rs->ts_escalated)
		return;
	cc_ts_read_predicate(info->escalation_key, info->relid, true);
	rs->ts_escalated = true;
	fps_atomic_add(&fps_counters->escalations, 1);
}

/*
 * Raise the keys of the row in slot, waiting for an older writer in flight
 * (STO, MVTO) when the key says so.  Every column group, not only those the
 * statement reads: a writer of another group makes a new version of the
 * whole row, and that version must not slip in at or below ts after the
 * reader judged the row's versions (it would see neither).  False if the
 * version stopped being a candidate meanwhile (replaced, or its creator
 * aborted): the caller judges it again.
 */
static bool
raise_row_keys(Relation rel, FpsRelInfo *info, TupleTableSlot *slot,
			   CommandId curcid)
{
	fps_u64		key = fps_key_from_slot(rel, info, slot);

	for (int g = 0; g < info->ngroups; g++)
	{
		TransactionId holder;

		while (!cc_ts_read_key(fps_group_key(key, g), info->relid, &holder))
		{
			VersionHeader h;
			TransactionId waitfor = InvalidTransactionId;

			/*
			 * An older writer holds the key.  If it changed this version, the
			 * version names it; if the version is no longer a candidate, its
			 * successor does (judge again); otherwise its write is one heap
			 * does not show here (rolled back with a subtransaction, a failed
			 * insert, another row with the same key), and the key names it.
			 */
			read_header(slot, &h);
			switch (version_at_ts(&h, false, info->relid, &waitfor, curcid))
			{
				case VERSION_UNSETTLED:
					break;
				case VERSION_VISIBLE:
					waitfor = holder;
					break;
				default:
					return false;
			}
			if (TransactionIdIsValid(waitfor))
			{
				fps_atomic_add(&fps_counters->ts_waits, 1);
				if (!fps_prepared_wait(waitfor, info->relid, -1) &&
					!fps_wait_for_transaction(waitfor))
					fps_abort(FPS_ABORT_WAIT_CYCLE, info->relid);
			}
			else
			{
				/* the holder is releasing it now */
				CHECK_FOR_INTERRUPTS();
				pg_usleep(1000L);
			}
		}
	}
	return true;
}

/*
 * Was xid (not ours) running, or not yet begun, when the transaction took
 * its first snapshot?  Then what it wrote may have been written after a
 * scan of ours passed its place.
 */
static bool
running_at_first_snapshot(TransactionId xid)
{
	return TransactionIdIsNormal(xid) &&
		!TransactionIdIsCurrentTransactionId(xid) &&
		XidInMVCCSnapshot(xid, fps_txn.ts_snapshot);
}

/* A version a successor walk can reach, and where the scan returned it. */
typedef struct ReturnedVersion
{
	ItemPointerData version;	/* hash key */
	ItemPointerData place;		/* the TID the scan handed out */
} ReturnedVersion;

/*
 * Has this scan pass returned the version in slot already, from another
 * place than place (the TID the scan handed out: the version's own, or a
 * predecessor's it walked from)?  Remembers it if not.  Only versions a
 * successor walk can reach twice are remembered: the new versions of
 * UPDATEs by writers running at the first snapshot.
 */
static bool
returned_before(FpsTsScan *scan, TupleTableSlot *slot, VersionHeader *h,
				ItemPointer place)
{
	ReturnedVersion *r;
	bool		found;

	if (scan == NULL || !scan->follow || !h->is_update ||
		!running_at_first_snapshot(h->xmin))
		return false;
	if (scan->returned == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(ItemPointerData);
		ctl.entrysize = sizeof(ReturnedVersion);
		ctl.hcxt = TopTransactionContext;
		scan->returned = hash_create("fpsketch versions returned at ts", 64, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	r = hash_search(scan->returned, &slot->tts_tid, HASH_ENTER, &found);
	if (!found)
		r->place = *place;
	return found && !ItemPointerEquals(&r->place, place);
}

/*
 * Does a TID-range scan's range hold tid?  At ts heap scans the whole
 * relation for it (fps_scan_set_tidrange), and the executor does not check
 * the range again.
 */
static bool
within_scan_range(FpsTsScan *scan, ItemPointer tid)
{
	if (scan == NULL || !scan->has_range)
		return true;
	return ItemPointerCompare(tid, &scan->mintid) >= 0 &&
		ItemPointerCompare(tid, &scan->maxtid) <= 0;
}

/*
 * Does the version in slot satisfy the index's predicate (true for an index
 * that is not partial)?  Only such a version has an entry in it.
 */
static bool
index_predicate_holds(Relation index, TupleTableSlot *slot)
{
	List	   *predicate = RelationGetIndexPredicate(index);
	MemoryContext cxt;
	MemoryContext old;
	ExprContext *econtext;
	bool		holds;

	if (predicate == NIL)
		return true;
	/* rare (a hop under a partial index): nothing is kept between calls */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "fpsketch index predicate",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	econtext = CreateStandaloneExprContext();
	econtext->ecxt_scantuple = slot;
	holds = ExecQual(ExecInitQual(predicate, NULL), econtext);
	FreeExprContext(econtext, true);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return holds;
}

/* Are the index's key columns the same in both versions of a row? */
static bool
index_keys_equal(Relation rel, Relation index, HeapTuple old, TupleTableSlot *new)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < index->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attnum = index->rd_index->indkey.values[i];
		Form_pg_attribute att;
		bool		oldnull;
		bool		newnull;
		Datum		oldval;
		Datum		newval;

		if (attnum <= 0)
			return false;		/* an expression: not compared */
		att = TupleDescAttr(desc, attnum - 1);
		oldval = heap_getattr(old, attnum, desc, &oldnull);
		newval = slot_getattr(new, attnum, &newnull);
		if (oldnull != newnull ||
			(!oldnull && !datum_image_eq(oldval, newval, att->attbyval, att->attlen)))
			return false;
	}
	return true;
}

/*
 * The version in slot, whose header is h, was replaced at or before ts.
 * Fetch its successor into slot if the scan might not find it on its own
 * (see the top of the file); false if it need not, or there is none to
 * fetch (a delete, a move to another partition, a chain cut by pruning of
 * versions no snapshot needs).
 */
static bool
fetch_successor(Relation rel, TupleTableSlot *slot, VersionHeader *h, FpsTsScan *scan,
				bool followed)
{
	ItemPointerData next = h->next;
	HeapTuple	old = NULL;
	VersionHeader nh;
	bool		ok;

	if (scan == NULL || !scan->follow || h->moved ||
		ItemPointerEquals(&next, &slot->tts_tid) ||
		!running_at_first_snapshot(h->updater))
		return false;
	if (scan->owner == NULL)
	{
		/*
		 * An index fetch: heap walks the HOT chain of the entry it was
		 * given when asked for its next member, never missing one; beyond
		 * a hop of ours, we walk.  A hop to a new index entry is taken only
		 * while the index keys stay (an unknown index: never).
		 */
		if (h->hot_updated && !followed)
			return false;
		if (!h->hot_updated)
		{
			if (scan->index == NULL)
				return false;
			old = ExecCopySlotHeapTuple(slot);
		}
	}
	ok = GetHeapamTableAmRoutine()->tuple_fetch_row_version(rel, &next, SnapshotAny, slot);
	if (ok)
	{
		read_header(slot, &nh);
		ok = TransactionIdEquals(nh.xmin, h->updater);
	}
	if (ok && old != NULL)
		ok = index_keys_equal(rel, scan->index, old, slot) &&
			index_predicate_holds(scan->index, slot);
	if (old != NULL)
		heap_freetuple(old);
	if (ok)
		fps_atomic_add(&fps_counters->ts_successor_fetches, 1);
	return ok;
}

/*
 * STO and MVTO: is the version in slot the insert of a writer still in
 * flight (neither validated nor ended), into a predicate that this
 * transaction has read at ts (the row's relation, escalation or prefix
 * key)?  That read raised the predicate's readers_rts to ts, after waiting
 * for the writers then committing, so an older inserter fails at its
 * commit (sto_pre_commit) and a younger one is after ts anyway: the version
 * is not at ts, and the reader need not wait for the inserter.  An open
 * INSERT must not hold up every reader of its table.
 */
static bool
insert_after_ts(FpsRelInfo *info, TupleTableSlot *slot, VersionHeader *h)
{
	fps_u64		keys[FPS_MAX_ROW_PREDICATES + 2];
	fps_u64		commit_ts;
	int			nkeys;

	if (!fps_timestamp_ordered() || h->is_update || h->xmin_frozen ||
		!TransactionIdIsNormal(h->xmin) ||
		TransactionIdIsCurrentTransactionId(h->xmin) ||
		!TransactionIdIsInProgress(h->xmin))
		return false;
	if (fps_commit_ts_lookup(SubTransGetTopmostTransaction(h->xmin), &commit_ts, NULL) !=
		FPS_CTS_UNKNOWN)
		return false;			/* validated: its outcome decides */
	nkeys = fps_prefix_keys_of_row(info, slot, keys);
	keys[nkeys++] = info->relation_key;
	keys[nkeys++] = info->escalation_key;
	for (int i = 0; i < nkeys; i++)
		if (cc_ts_predicate_raised(keys[i]))
			return true;
	return false;
}

/*
 * Is the version in slot (a buffer tuple of rel, found with SnapshotAny)
 * the one to read at the transaction's ts?  Reads it if so: its keys are
 * raised to ts (or rel's escalation key is).  The slot may then hold a
 * successor of the version the scan found (fetch_successor).  scan: the
 * scan's state, NULL for a fetch of one TID.
 */
bool
fps_ts_visible(Relation rel, TupleTableSlot *slot, FpsTsScan *scan,
			   CommandId curcid)
{
	FpsRelInfo *info;
	FpsRelState *rs;
	bool		counted = false;
	bool		followed = false;
	ItemPointerData place = slot->tts_tid;

	/* first: its catalog read may process an invalidation that frees info */
	fps_ts_relation_check(rel);
	info = fps_relinfo(rel);
	rs = fps_txn_rel(info->relid);
	for (;;)
	{
		VersionHeader h;
		TransactionId waitfor = InvalidTransactionId;
		VersionAtTs v;

		read_header(slot, &h);
		v = version_at_ts(&h, rs->ts_escalated, info->relid, &waitfor, curcid);
		if (v == VERSION_UNSETTLED && insert_after_ts(info, slot, &h))
			return false;
		if (v != VERSION_INVISIBLE && v != VERSION_REPLACED && !rs->ts_escalated)
		{
			/* to be read: raise its keys first, then judge it for good */
			if (!counted && (fps_txn_count_row_read(rs) || cc_ts_reads_full()))
				fps_ts_escalate(info, rs);
			else if (!raise_row_keys(rel, info, slot, curcid))
			{
				counted = true;
				continue;		/* changed meanwhile: judge it again */
			}
			counted = true;
			read_header(slot, &h);
			v = version_at_ts(&h, true, info->relid, &waitfor, curcid);
		}
		if (v == VERSION_VISIBLE)
		{
			if (!within_scan_range(scan, &slot->tts_tid) ||
				returned_before(scan, slot, &h, &place))
				return false;
			rs->stat_row_reads++;
			return true;
		}
		if (v != VERSION_REPLACED || !fetch_successor(rel, slot, &h, scan, followed))
			return false;
		followed = true;
	}
}

/* ---- the scans' state ---- */

/*
 * Table scans at a timestamp, each with its FpsTsScan: heap allocates the
 * scan descriptor, so the state lives beside it, in TopTransactionContext
 * (forgotten with the transaction that made it).
 */
static List *ts_scans = NIL;
static LocalTransactionId ts_scans_lxid = InvalidLocalTransactionId;

FpsTsScan *
fps_ts_scan_of(TableScanDesc scan, bool begin)
{
	ListCell   *lc;
	FpsTsScan  *s;

	if (ts_scans_lxid != MyProc->lxid)
	{
		ts_scans = NIL;			/* the memory went with its transaction */
		ts_scans_lxid = MyProc->lxid;
	}
	foreach(lc, ts_scans)
	{
		s = lfirst(lc);
		if (s->owner != scan)
			continue;
		if (!begin)
			return s;
		/* a stale entry of a scan that an error ended without scan_end */
		fps_ts_scan_reset(s);
		ts_scans = foreach_delete_current(ts_scans, lc);
		pfree(s);
		break;
	}
	Assert(begin);
	s = MemoryContextAllocZero(TopTransactionContext, sizeof(FpsTsScan));
	s->owner = scan;
	/*
	 * Every table scan: heap's sequential, TID-range and sample scans take a
	 * page's line pointers and the relation's length once, and a bitmap's
	 * pages are those the index scan found.
	 */
	s->follow = true;
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		ts_scans = lappend(ts_scans, s);
		MemoryContextSwitchTo(old);
	}
	return s;
}

/* A new pass of the scan (rescan): it returns every version again. */
void
fps_ts_scan_reset(FpsTsScan *scan)
{
	if (scan->returned != NULL)
	{
		hash_destroy(scan->returned);
		scan->returned = NULL;
	}
}

/* A TID-range scan's range (heap is given the whole relation). */
void
fps_ts_scan_set_range(FpsTsScan *scan, ItemPointer mintid, ItemPointer maxtid)
{
	scan->has_range = true;
	scan->mintid = *mintid;
	scan->maxtid = *maxtid;
}

void
fps_ts_scan_forget(TableScanDesc scan)
{
	ListCell   *lc;

	if (ts_scans_lxid != MyProc->lxid)
		return;
	foreach(lc, ts_scans)
	{
		FpsTsScan  *s = lfirst(lc);

		if (s->owner == scan)
		{
			fps_ts_scan_reset(s);
			ts_scans = foreach_delete_current(ts_scans, lc);
			pfree(s);
			return;
		}
	}
}

/* Read a predicate key of rel at ts (before the scan that needs it). */
void
fps_ts_read_predicate(FpsRelInfo *info, fps_u64 key, bool is_prefix)
{
	FpsRelState *rs = fps_txn_rel_find(info->relid);

	if (rs != NULL)
		rs->stat_predicate_reads++;
	fps_atomic_add(is_prefix ? &fps_counters->phantom_prefix_reads :
				   &fps_counters->phantom_relation_reads, 1);
	/* no more room to remember keys for a floor commit: the relation's */
	if (cc_ts_reads_full())
		fps_ts_escalate(info, rs != NULL ? rs : fps_txn_rel(info->relid));
	cc_ts_read_predicate(key, info->relid, false);
}

/* Is a read of rel on snapshot (MVCC) a read at the transaction's ts? */
bool
fps_ts_read_of(Relation rel, Snapshot snapshot)
{
	FpsRelInfo *info;

	return snapshot != NULL && IsMVCCSnapshot(snapshot) &&
		fps_tracking_active(rel, &info) && fps_ts_mode(snapshot);
}

/*
 * A sequential scan of a relation larger than fpsketch.escalation_threshold
 * rows reads it through its escalation key from the start, not one key per
 * row.
 */
void
fps_ts_scan_start(Relation rel, bool sequential)
{
	FpsRelInfo *info;
	FpsRelState *rs;
	double		rows;

	/* first: its catalog read may process an invalidation that frees info */
	fps_ts_relation_check(rel);
	info = fps_relinfo(rel);
	rs = fps_txn_rel(info->relid);
	rows = rel->rd_rel->reltuples;
	if (!sequential || rs->ts_escalated)
		return;
	if (rows < 0)				/* never analyzed: guess from the size */
		rows = (double) RelationGetNumberOfBlocks(rel) * 50;
	if (rows > fps_escalation_threshold)
		fps_ts_escalate(info, rs);
}
