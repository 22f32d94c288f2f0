/*-------------------------------------------------------------------------
 *
 * rowlock.c
 *	  Waits for row locks on fpsketch tables that would close a cycle of
 *	  waits fail at once (fpsketch.wait_policy = cycle_check).
 *
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
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/subtrans.h"
#include "access/xact.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/rel.h"

#include "am.h"


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

/*
 * heap's tuple_lock, but under cycle_check a wait for the row's locker is
 * first checked for a cycle (a 40001 instead of a deadlock).
 */
TM_Result
fps_rowlock_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
					   TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
					   LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	const TableAmRoutine *heap = GetHeapamTableAmRoutine();
	TransactionId last_holder = InvalidTransactionId;
	TransactionId holder;
	TM_Result	result;

	if (wait_policy != LockWaitBlock || !cycle_check_applies(rel))
		return heap->tuple_lock(rel, tid, snapshot, slot, cid, mode,
								wait_policy, flags, tmfd);
	for (;;)
	{
		result = heap->tuple_lock(rel, tid, snapshot, slot, cid, mode,
								  LockWaitSkip, flags, tmfd);
		if (result != TM_WouldBlock)
			return result;

		/*
		 * Following the update chain, heap names the updater of the version
		 * it started from, which has ended: the holder is the locker of a
		 * newer version.
		 */
		holder = tmfd->xmax;
		if (!TransactionIdIsValid(holder) || !TransactionIdIsInProgress(holder))
			holder = conflicting_row_locker(rel, tid, true);
		if (!wait_for_row_lock_holder(rel, tid, holder, &last_holder, ROW_LOCK))
			return heap->tuple_lock(rel, tid, snapshot, slot, cid, mode,
									LockWaitBlock, flags, tmfd);
	}
}

/* heap's tuple_delete, with cycle_check's waits */
TM_Result
fps_rowlock_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
						 Snapshot snapshot, Snapshot crosscheck, bool wait,
						 TM_FailureData *tmfd, bool changingPart)
{
	const TableAmRoutine *heap = GetHeapamTableAmRoutine();
	TransactionId last_holder = InvalidTransactionId;
	TM_Result	result;

	if (!wait || !cycle_check_applies(rel))
		return heap->tuple_delete(rel, tid, cid, snapshot, crosscheck,
								  wait, tmfd, changingPart);
	for (;;)
	{
		result = heap->tuple_delete(rel, tid, cid, snapshot, crosscheck,
									false, tmfd, changingPart);
		if (result != TM_BeingModified)
			return result;
		if (!wait_for_row_lock_holder(rel, tid, conflicting_row_locker(rel, tid, false),
									  &last_holder, ROW_DELETE))
			return heap->tuple_delete(rel, tid, cid, snapshot, crosscheck,
									  true, tmfd, changingPart);
	}
}

/* heap's tuple_update, with cycle_check's waits */
TM_Result
fps_rowlock_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
						 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
						 bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
						 bool *update_indexes)
{
	const TableAmRoutine *heap = GetHeapamTableAmRoutine();
	TransactionId last_holder = InvalidTransactionId;
	TM_Result	result;

	if (!wait || !cycle_check_applies(rel))
		return heap->tuple_update(rel, otid, slot, cid, snapshot, crosscheck,
								  wait, tmfd, lockmode, update_indexes);
	for (;;)
	{
		result = heap->tuple_update(rel, otid, slot, cid, snapshot, crosscheck,
									false, tmfd, lockmode, update_indexes);
		if (result != TM_BeingModified)
			return result;
		if (!wait_for_row_lock_holder(rel, otid, conflicting_row_locker(rel, otid, false),
									  &last_holder, ROW_UPDATE))
			return heap->tuple_update(rel, otid, slot, cid, snapshot, crosscheck,
									  true, tmfd, lockmode, update_indexes);
	}
}
