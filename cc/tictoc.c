/*-------------------------------------------------------------------------
 *
 * tictoc.c
 *	  TicToc over FPSketch entries (the dissertation's Algorithm 3).
 *
 * Heap keeps the data and its row locks: a write has already been applied
 * to heap (invisible until commit) when it reaches tictoc_write(), so the
 * write set holds only keys.  What TicToc's "atomic section" around a read
 * gives in the paper is given here by the order of the steps in
 * tictoc_read(): load the entry (waiting while a committer holds it locked),
 * then ask heap whether the version read already has a committed successor.
 * A writer locks its keys in PRE_COMMIT, before its commit becomes visible,
 * and installs wts = rts = commit_ts and unlocks only after, in COMMIT; so a
 * reader that got a version from before a concurrent commit either waits for
 * the unlock and then finds the version stale, or records the old wts and
 * fails validation.
 *
 * Phantom keys (predicates: a relation, an index equality prefix) are
 * written by every insert into them, so their writers must not exclude one
 * another: instead of the lock bit they register in the entry's committer
 * word from PRE_COMMIT until their install, which adds FPS_COMMITTER_DONE
 * (one fewer committer, one more install) after MAXing wts/rts to commit_ts.
 * A reader records the committer word with the (wts, rts) it read, having
 * waited until no writer was committing; validation then requires that no
 * install happened and nobody is committing, which also catches writers
 * whose install leaves wts unchanged (a smaller commit_ts than another's).
 * Such writers take a commit_ts above the entry's readers_rts, not its rts:
 * their installs raise rts, and inserts need no order among themselves,
 * only after the readers (and so after the inserts those readers saw).
 *
 * A read of a row overwritten before validation still validates if the
 * overwrite committed at a timestamp after ours (the entry's install record,
 * fps_entry_replaced_after): TicToc's commit in the past.
 *
 * Shared state: entry words, by CAS only, and only while pinned (an install
 * by the lock holder: its record, then the word, by stores); committer words
 * by atomic add only; readers_rts by atomic max only.  A lock bit or
 * committer registration is held from tictoc_validate() to tictoc_commit()
 * or tictoc_abort().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/procarray.h"

#include "cc.h"

/*
 * Algorithm 3, READ: record the (wts, rts) of the version just read.  False,
 * with nothing recorded, if the transaction has read this key before and the
 * entry has moved on since: the version just read is not the one in the
 * read set.  The storage may then hand the transaction the version it read
 * before (validated like any read overwritten since); otherwise validation
 * could only fail, and the caller aborts.
 */
bool
tictoc_read(FpsAccess *access, FpsVersion *version)
{
	fps_u64		word;

	if (!fps_wait_while_locked(access, &word))
		fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, access);

	if (access->is_read && fps_entry_overwritten(access->entry, access->observed, word))
		return false;

	/* a successor of the row, whichever groups it changed: no group named */
	if (version->is_stale(version->arg))
		fps_abort(FPS_ABORT_STALE_READ, access->relid);

	if (!access->is_read)
	{
		access->observed = word & ~FPS_LOCK_BIT;
		access->is_read = true;
	}
	return true;
}

/* Algorithm 3 keeps the write set until commit; heap already has the data. */
void
tictoc_write(FpsAccess *access)
{
	access->is_write = true;
}

/*
 * READ of a phantom key: an observation of (wts, rts) together with the
 * committer word, taken when no writer is between PRE_COMMIT and install,
 * and readers_rts raised to the observed wts.
 */
void
tictoc_phantom_read(FpsAccess *access)
{
	FpsBackoff	backoff;
	fps_u64		readers_rts;
	fps_u64		cword;
	fps_u64		word;

	access->is_phantom = true;
	fps_backoff_init(&backoff);
	for (;;)
	{
		/* before cword: a writer registering after it reads at least this */
		readers_rts = fps_entry_readers_rts_load(access->entry);
		cword = fps_entry_committers_load(access->entry);
		if (fps_committers(cword) - (access->committing ? 1 : 0) == 0)
		{
			word = fps_entry_load(access->entry);
			/* no install between the two loads: word belongs to cword */
			if (fps_entry_committers_load(access->entry) != cword)
				continue;
			if (readers_rts >= fps_word_wts(word))
				break;

			/*
			 * Writers from now on commit after every insert this read
			 * sees, so that a reader whose commit_ts is the wts it
			 * observed (a long read-only scan) validates without
			 * depending on the absence of writers.  A writer that
			 * registered before the raise may have missed it.
			 */
			readers_rts = fps_atomic_max(&access->entry->readers_rts,
										 fps_word_wts(word));
			if (fps_entry_committers_load(access->entry) == cword)
				break;
			continue;
		}
		if (!fps_backoff_wait(&backoff))
			fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, access);
	}
	if (!access->is_read)
	{
		access->observed = word & ~FPS_LOCK_BIT;
		access->observed_committers = cword;
		access->observed_readers_rts = readers_rts;
		access->is_read = true;
	}
	else if (cword != access->observed_committers)
	{
		/* the predicate changed between two reads: validation would fail */
		fps_abort_key(FPS_ABORT_PHANTOM, access);
	}
}

/*
 * Has no writer installed on, or started committing to, the phantom key
 * since this transaction read it?  (What validation would check first.)
 */
bool
tictoc_phantom_unchanged(FpsAccess *access)
{
	fps_u64		own = access->committing ? FPS_COMMITTER_ONE : 0;

	return fps_entry_committers_load(access->entry) - own == access->observed_committers;
}

/*
 * A gap key a writer follows (am/gap.c): commit no earlier than the wts
 * installed there, once no writer is between PRE_COMMIT and its install
 * (the committed inserter that made the gap may not have installed yet).
 * Unlike a read, later installs do not fail validation: they only come
 * later still.
 */
void
tictoc_phantom_follow(FpsAccess *access)
{
	FpsBackoff	backoff;

	fps_backoff_init(&backoff);
	for (;;)
	{
		fps_u64		cword = fps_entry_committers_load(access->entry);

		if (fps_committers(cword) - (access->committing ? 1 : 0) == 0)
		{
			fps_u64		word = fps_entry_load(access->entry);

			/* no install between the two loads: word belongs to cword */
			if (fps_entry_committers_load(access->entry) == cword)
			{
				access->min_commit_ts = Max(access->min_commit_ts, fps_word_wts(word));
				return;
			}
			continue;
		}
		if (!fps_backoff_wait(&backoff))
			fps_abort_entry(FPS_ABORT_LOCK_TIMEOUT, access->relid, access->entry, true);
	}
}

/* WRITE of a phantom key: an insert made the predicate's result change. */
void
tictoc_phantom_write(FpsAccess *access)
{
	access->is_phantom = true;
	access->is_write = true;
}

/*
 * Validation of a phantom key read (cf. Algorithm 3 lines 24-36): the
 * predicate's result must be unchanged at commit_ts.  Any install since the
 * observation, or a writer between PRE_COMMIT and install, may be an insert
 * this transaction did not see.
 *
 * Writers of a phantom key commit after readers_rts, which only readers
 * raise (to the wts they observed, then to their commit_ts): inserts
 * commute, so writers need not be ordered among themselves where nobody
 * reads the predicate, and a total order of all writers of a relation (every
 * write writes its escalation key) would leave TicToc no room to commit a
 * reader of an overwritten row before the overwrite.
 */
static void
tictoc_validate_phantom(FpsAccess *a, fps_u64 commit_ts)
{
	fps_u64		own = a->committing ? FPS_COMMITTER_ONE : 0;

	if (a->observed_readers_rts >= commit_ts)
		return;					/* every writer since the observation commits after us */
	/* the sketch keeps readers_rts apart from rts, and reseeds it from there */
	if (fps_entry_readers_rts_load(a->entry) < commit_ts)
		fps_atomic_max(&a->entry->readers_rts, commit_ts);

	/*
	 * A writer registering after this check reads a readers_rts of at least
	 * commit_ts and commits after us; one that registered since our
	 * observation may have read less.  The atomics are sequentially
	 * consistent, so one of the two is visible.
	 */
	if (fps_entry_committers_load(a->entry) - own != a->observed_committers)
		fps_abort_key(FPS_ABORT_PHANTOM, a);
}

static int
compare_by_key(const void *a, const void *b)
{
	fps_u64		ka = (*(FpsAccess *const *) a)->key;
	fps_u64		kb = (*(FpsAccess *const *) b)->key;

	return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/* LOCK k: set the lock bit, waiting for another committer to finish. */
static void
tictoc_lock(FpsAccess *access)
{
	fps_u64		word;

	for (;;)
	{
		if (!fps_wait_while_locked(access, &word))
			fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, access);
		if (fps_entry_cas(access->entry, &word, word | FPS_LOCK_BIT))
			break;
	}
	access->locked = true;
}

/*
 * The least timestamp the transaction can commit at: after every version it
 * read (min_commit_ts: versions read through an escalated key, see
 * fps_escalated_read, and gap keys followed, tictoc_phantom_follow), after every read of what it writes, after the last
 * writer of every group of a row it wrote (follows).  The last are stable
 * at validation: such a writer held the row lock until its commit, and
 * tictoc_validate waits for its install.  Rts and readers_rts only grow,
 * so before validation this is a lower bound of the commit_ts to come.
 */
static fps_u64
least_commit_ts(FpsTxn *txn)
{
	fps_u64		commit_ts = 0;
	int			i;

	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->is_write && a->is_phantom)
			commit_ts = Max(commit_ts, fps_entry_readers_rts_load(a->entry) + 1);
		else if (a->is_write)
			commit_ts = Max(commit_ts, fps_word_rts(fps_entry_load(a->entry)) + 1);
		else if (a->follows)
			commit_ts = Max(commit_ts, fps_word_wts(fps_entry_load(a->entry)) + 1);
		if (a->is_read)
			commit_ts = Max(commit_ts, fps_word_wts(a->observed));
		commit_ts = Max(commit_ts, a->min_commit_ts);
	}
	return commit_ts;
}

/*
 * Wait while a group this transaction follows is locked (tictoc_validate).
 * A prepared transaction still in progress that holds it cannot have
 * written the version we replaced: it would still hold the row, and heap
 * would have made us wait for it.  Its lock comes from a write that a
 * savepoint rolled back, and the group's wts without it is the right one:
 * no wait, which could only time out until COMMIT PREPARED.  Once it is no
 * longer in progress, its install is what we wait for.
 */
static bool
wait_for_followed_install(FpsAccess *access)
{
	FpsBackoff	backoff;

	fps_backoff_init(&backoff);
	for (;;)
	{
		fps_u64		word = fps_entry_load(access->entry);

		if (!fps_word_locked(word))
			return true;
		if (fps_prepared_lock_commit_ts(access->entry, word) > 0 &&
			TransactionIdIsInProgress(fps_lock_holder_xid(access->entry)))
			return true;
		if (!fps_backoff_wait(&backoff))
			return false;
	}
}

/*
 * Algorithm 3, VALIDATE, run in XACT_EVENT_PRE_COMMIT: lock the write set in
 * key order (no deadlock among committers), compute commit_ts, then check
 * and extend every read.  Raising an ERROR here aborts the transaction
 * cleanly; tictoc_abort() then releases the locks taken so far.
 */
void
tictoc_validate(FpsTxn *txn)
{
	FpsAccess **writes;
	int			nwrites = 0;
	fps_u64		commit_ts;
	int			i;

	/*
	 * A group followed is stable only once its last writer installed.  Heap
	 * shows that writer committed before its XACT_EVENT_COMMIT installs (and
	 * COMMIT PREPARED releases its row locks before fpsketch's hook does),
	 * so our update may have landed on its version in between, while the
	 * word still shows the wts from before it: commit_ts would come out
	 * below the version we replaced.  Wait for the install, before taking
	 * our own locks and registering as an inserter: a writer whose
	 * savepoint rolled back keeps the group in its write set, and may wait
	 * for those while it validates.  No new writer of the row can lock the
	 * group after the wait: we hold the row.
	 */
	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->follows && !a->is_write && !wait_for_followed_install(a))
			fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, a);
	}

	writes = palloc(sizeof(FpsAccess *) * (txn->naccesses + 1));
	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (!a->is_write)
			continue;
		if (a->is_phantom)
		{
			/* before reading rts for commit_ts, see tictoc_validate_phantom */
			fps_entry_committers_add(a->entry, FPS_COMMITTER_ONE);
			a->committing = true;
		}
		else
			writes[nwrites++] = a;
	}
	qsort(writes, nwrites, sizeof(FpsAccess *), compare_by_key);
	for (i = 0; i < nwrites; i++)
		tictoc_lock(writes[i]);

	commit_ts = least_commit_ts(txn);
	if (txn->raise_floor)
		commit_ts = Max(commit_ts, fps_max_timestamp(fps_sketch) + 1);

	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];
		fps_u64		cur;

		if (a->is_read && a->is_phantom)
		{
			tictoc_validate_phantom(a, commit_ts);
			continue;
		}
		if (!a->is_read || fps_word_rts(a->observed) >= commit_ts)
			continue;			/* the version read is still valid at commit_ts */

		cur = fps_entry_load(a->entry);
		for (;;)
		{
			if (fps_entry_overwritten(a->entry, a->observed, cur))
			{
				/*
				 * Overwritten, but perhaps by a write that committed at a
				 * timestamp after ours: then the version read was still the
				 * row's version at commit_ts, and no later writer can slip
				 * in between it and that write.  Not for a row we write too:
				 * our write would be lost under the other one.
				 */
				if (!a->is_write &&
					fps_entry_replaced_after(a->entry, fps_word_wts(a->observed), commit_ts))
				{
					fps_atomic_add(&fps_counters->reads_valid_before_overwrite, 1);
					break;
				}
				fps_abort_key(FPS_ABORT_VALIDATE_CHANGED, a);
			}
			if (a->locked || fps_word_rts(cur) >= commit_ts)
				break;			/* our own lock: nobody else can move wts */
			if (fps_word_locked(cur))
				fps_abort_key(FPS_ABORT_VALIDATE_LOCKED, a);
			/* extend rts; fails, and is re-examined, if the key got locked */
			if (fps_entry_cas(a->entry, &cur,
							  fps_word_make(false, fps_word_wts(cur), commit_ts)))
				break;
		}
	}

	/*
	 * Writes that bypassed per-key tracking (a table created or truncated in
	 * this transaction, key scheme changes) are covered by raising the floor
	 * of every unpinned key above every timestamp stored so far, before the
	 * commit becomes visible.  Such writes hold ACCESS EXCLUSIVE locks, so no
	 * other transaction has a key of theirs pinned now.
	 */
	if (txn->raise_floor)
	{
		fps_txn_raise_floor(txn, commit_ts);
		fps_atomic_add(&fps_counters->floor_raises, 1);
	}

	pfree(writes);
	txn->commit_ts = commit_ts;
	txn->validated = true;
}

/* transactions with more keys skip tictoc_abort_if_doomed: O(keys) per call */
#define FPS_DOOMED_CHECK_MAX_KEYS 64

/*
 * Fail early a transaction that can no longer commit: a row it read (and
 * does not write) was overwritten by a commit at a timestamp no later than
 * least_commit_ts().  commit_ts will be at least that, so the version read
 * was not the row's version at commit_ts and tictoc_validate() must fail
 * it: the overwrite is not after commit_ts (fps_entry_replaced_after only
 * turns false as installs go on), and the read's rts, below that bound, is
 * below commit_ts.  Failing before the next write saves the rest of the
 * transaction, and above all the waits of others for the row locks it would
 * take and hold until its commit.  The check costs a load of a shared entry
 * per key read, so the caller runs it only before statements that write or
 * lock rows.
 */
void
tictoc_abort_if_doomed(FpsTxn *txn)
{
	fps_u64		min_commit_ts;
	int			i;

	if (txn->naccesses > FPS_DOOMED_CHECK_MAX_KEYS)
		return;
	min_commit_ts = least_commit_ts(txn);
	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];
		fps_u64		observed_wts = fps_word_wts(a->observed);

		if (!a->is_read || a->is_phantom || a->is_write ||
			fps_word_rts(a->observed) >= min_commit_ts)
			continue;
		if (fps_entry_overwritten(a->entry, a->observed, fps_entry_load(a->entry)) &&
			!fps_entry_replaced_after(a->entry, observed_wts, min_commit_ts))
		{
			fps_atomic_add(&fps_counters->early_aborts, 1);
			fps_abort_key(FPS_ABORT_VALIDATE_CHANGED, a);
		}
	}
}

/*
 * Algorithm 3, COMMIT, run in XACT_EVENT_COMMIT after the commit is visible:
 * install wts = rts = commit_ts, unlock, unpin.  No ERROR, no palloc.
 */
void
tictoc_commit(FpsTxn *txn)
{
	bool		wrote = txn->raise_floor;	/* DDL, bulk loads */
	int			i;

	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->locked)
		{
			/* a locked word changes only through its owner: stores suffice */
			fps_entry_install(a->entry, txn->commit_ts, txn->commit_ts);
			a->locked = false;
			wrote = true;
		}
		else if (a->committing)
		{
			fps_u64		cur = fps_entry_load(a->entry);

			while (!fps_entry_cas(a->entry, &cur,
								  fps_word_make(false,
												Max(fps_word_wts(cur), txn->commit_ts),
												Max(fps_word_rts(cur), txn->commit_ts))))
				;
			fps_entry_committers_add(a->entry, FPS_COMMITTER_DONE);
			a->committing = false;
			wrote = true;
		}
		fps_decref(fps_sketch, a->entry);
	}
	fps_atomic_add(wrote ? &fps_counters->commits : &fps_counters->read_only_commits, 1);
}

/* Abort: unlock without installing, unpin.  txn_reset() then empties the set. */
void
tictoc_abort(FpsTxn *txn)
{
	int			i;

	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->locked)
		{
			fps_u64		word = fps_entry_load(a->entry);

			fps_atomic_store(&a->entry->word, word & ~FPS_LOCK_BIT);
			a->locked = false;
		}
		if (a->committing)
		{
			fps_atomic_sub(&a->entry->committers, FPS_COMMITTER_ONE);
			a->committing = false;
		}
		fps_decref(fps_sketch, a->entry);
	}
}

/*
 * READ at a timestamp (a timestamp snapshot, DESIGN §9): raise the key's
 * rts to ts once no committer holds it, so that no writer that locks it
 * later can commit at or below ts; the version to read is then the one
 * whose commit_ts interval contains ts (am/visibility.c).  False if the
 * wait for the committer timed out.
 */
bool
tictoc_ts_read(FpsEntry *entry, fps_u64 ts)
{
	FpsBackoff	backoff;
	fps_u64		word = fps_entry_load(entry);

	fps_backoff_init(&backoff);
	for (;;)
	{
		if (fps_word_locked(word))
		{
			/*
			 * A prepared transaction's lock, which commits after ts: the
			 * version before it is the one at ts, with no wait.  Should it
			 * roll back instead, its release raises rts to just below its
			 * commit_ts, above ts (cc/prepared.c).
			 */
			if (fps_prepared_any() && fps_prepared_lock_commit_ts(entry, word) > ts)
				return true;
			if (!fps_backoff_wait(&backoff))
				return false;
			word = fps_entry_load(entry);
			continue;
		}
		if (fps_word_rts(word) >= ts ||
			fps_entry_cas(entry, &word, fps_word_make(false, fps_word_wts(word), ts)))
			return true;
	}
}
