/*-------------------------------------------------------------------------
 *
 * versions.c
 *	  What a heap version tells the protocol: which transaction created it,
 *	  whether it already has a committed successor (the staleness check of
 *	  DESIGN §5), which transaction is writing one right now; and rereads
 *	  that get the version the transaction read before.
 *
 * Shared state: heap pages, share-locked while a version's header is read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "am.h"

/* The transaction that created the version in slot. */
TransactionId
fps_version_xmin(TupleTableSlot *slot)
{
	bool		should_free;
	HeapTuple	tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
	TransactionId xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);

	if (should_free)
		heap_freetuple(tuple);
	return xmin;
}

/*
 * Share-lock the page of the version in check's slot and return the
 * version's header, or NULL if its line pointer no longer holds a tuple.
 * The slot's own buffer pin is used when it has one (the common case: scans
 * and index fetches return buffer slots), saving a buffer lookup per read.
 */
static HeapTupleHeader
lock_version_header(FpsVersionCheck *check, Buffer *buffer, bool *pinned_here)
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
 * The committed updater or deleter of the version in check, if it has one
 * (it is no longer the latest); FrozenTransactionId, committed before any
 * snapshot, if the version is gone altogether.  An updater that has
 * committed in clog but is still in the proc array counts as in progress:
 * it holds the lock bits of what it wrote (taken in PRE_COMMIT), so the
 * protocol's validation sees it instead.
 */
TransactionId
fps_version_committed_updater(FpsVersionCheck *check)
{
	Buffer		buffer;
	bool		pinned_here;
	HeapTupleHeader htup = lock_version_header(check, &buffer, &pinned_here);
	TransactionId committed = FrozenTransactionId;

	if (htup != NULL)
	{
		TransactionId updater = version_updater(htup);

		if (TransactionIdIsValid(updater) &&
			!TransactionIdIsCurrentTransactionId(updater) &&
			!TransactionIdIsInProgress(updater) &&
			TransactionIdDidCommit(updater))
			committed = updater;
		else
			committed = InvalidTransactionId;
	}
	unlock_version_header(buffer, pinned_here);
	return committed;
}

/*
 * Does the newest committed version of the row, reached from the version
 * in check through committed updates, differ from it in a column of group
 * g?  A deleted row differs in everything.
 */
static bool
newest_differs_in_group(FpsVersionCheck *check, int g)
{
	Relation	rel = check->rel;
	TupleDesc	desc = RelationGetDescr(rel);
	ItemPointerData tid = check->slot->tts_tid;
	HeapTupleData newest;
	Buffer		buffer = InvalidBuffer;
	bool		differs = false;

	for (;;)
	{
		HeapTupleData tuple;
		Buffer		buf;
		TransactionId updater;

		tuple.t_self = tid;
		if (!heap_fetch(rel, SnapshotAny, &tuple, &buf, false))
			return true;		/* pruned: long gone */
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		updater = version_updater(tuple.t_data);
		if (TransactionIdIsValid(updater) &&
			!TransactionIdIsCurrentTransactionId(updater) &&
			!TransactionIdIsInProgress(updater) &&
			TransactionIdDidCommit(updater))
		{
			tid = tuple.t_data->t_ctid;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			ReleaseBuffer(buf);
			if (ItemPointerEquals(&tid, &tuple.t_self) ||
				ItemPointerIndicatesMovedPartitions(&tid))
				return true;	/* deleted (or moved away) */
			continue;
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		newest = tuple;
		buffer = buf;
		break;
	}
	for (int attnum = 1; attnum <= check->info->natts && !differs; attnum++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
		bool		oldnull;
		bool		newnull;
		Datum		oldval;
		Datum		newval;

		/* learned groups: a read of group g also read group 0 (statement.c) */
		if (att->attisdropped ||
			(check->info->attgroup[attnum] != g &&
			 (check->info->attgroup[attnum] != 0 || check->info->groups_declared)))
			continue;
		oldval = slot_getattr(check->slot, attnum, &oldnull);
		newval = heap_getattr(&newest, attnum, desc, &newnull);
		differs = oldnull != newnull ||
			(!oldnull && !datum_image_eq(oldval, newval, att->attbyval, att->attlen));
	}
	ReleaseBuffer(buffer);
	return differs;
}

/*
 * Is the version in check no longer the latest (the staleness check)?  For
 * a read of one column group: no longer the latest in that group's columns
 * (an UPDATE of other groups writes their keys only, so this group's key
 * still describes the version read).
 */
bool
fps_version_is_stale(void *arg)
{
	FpsVersionCheck *check = arg;

	if (!TransactionIdIsValid(fps_version_committed_updater(check)))
		return false;
	return check->group < 0 || newest_differs_in_group(check, check->group);
}

/*
 * The transaction updating or deleting the version right now, if any.  An
 * updater that was a subtransaction rolled back since (ROLLBACK TO
 * SAVEPOINT) names its top-level transaction while that runs: the write
 * stays in its write set, and its dirty mark, until it ends.
 */
TransactionId
fps_version_updater_in_progress(void *arg)
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

/*
 * Keep the versions this transaction reads from being pruned until it
 * commits: at READ COMMITTED a backend's xmin otherwise advances between
 * statements, and a reread (see fps_reread_first_version) needs the version
 * read before, and its TOAST chunks (which detoasting finds for as long as
 * they are not pruned, deleted or not).  Versions read later are protected
 * too: their successors' xids are at least the xmin of any snapshot that
 * does not see them, and snapshot xmins only grow.
 */
void
fps_hold_read_versions(void)
{
	if (!fps_stable_rereads ||
		fps_protocol != FPS_PROTOCOL_TICTOC || IsolationUsesXactSnapshot() ||
		!ActiveSnapshotSet())
		return;
	fps_txn.held_snapshot = RegisterSnapshotOnOwner(GetActiveSnapshot(),
													TopTransactionResourceOwner);
}

/*
 * A gap scan (am/gap.c) relies on the index entries whose gap keys it read
 * staying in the index until it commits, deleted or not: an insert below one
 * of them walks to it and writes that key (or its deleter's successor, which
 * does).  At READ COMMITTED without fpsketch.stable_rereads, or before any
 * row was read, nothing else keeps them from being removed (VACUUM, or
 * killed by a scan) once their deleter is older than every snapshot; the
 * insert's walk then steps past, and two deletes of neighbouring entries by
 * different transactions are not ordered among themselves (found by
 * review).  Keep the xmin of the scan's snapshot: an entry deleted after it
 * stays, and one deleted before it was no row of the scan.
 */
void
fps_hold_gap_entries(Snapshot snapshot)
{
	if (fps_txn.held_snapshot != NULL ||
		fps_protocol != FPS_PROTOCOL_TICTOC || IsolationUsesXactSnapshot() ||
		snapshot == NULL || !IsMVCCSnapshot(snapshot))
		return;
	fps_txn.held_snapshot = RegisterSnapshotOnOwner(snapshot, TopTransactionResourceOwner);
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
bool
fps_reread_first_version(Relation rel, FpsRelInfo *info, fps_u64 key,
					 FpsGroupMask groups, int failed, FpsAccess *failed_access,
					 TupleTableSlot *slot)
{
	int			g;

	/* a row we also write cannot commit before its overwrite: lost update */
	if (!fps_stable_rereads || failed_access->is_write || !fps_statement_only_reads())
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
	/* the failed group's read and those after it count as read now */
	failed_access->nreads++;
	for (g = failed + 1; g < info->ngroups; g++)
		if (groups & (1 << g))
			fps_txn_lookup(fps_group_key(key, g))->nreads++;
	fps_atomic_add(&fps_counters->stable_rereads, 1);
	return true;
}
