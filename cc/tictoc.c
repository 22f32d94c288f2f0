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
 * Shared state: entry words, by CAS only, and only while pinned.  A lock bit
 * is held from tictoc_validate() to tictoc_commit() or tictoc_abort().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "cc.h"

/* Algorithm 3, READ: record the (wts, rts) of the version just read. */
void
tictoc_read(FpsAccess *access, FpsStaleCheck is_stale, void *arg)
{
	fps_u64		word;

	if (!fps_wait_while_locked(access, &word))
		fps_abort(FPS_ABORT_LOCK_TIMEOUT, access->relid);

	if (is_stale(arg))
		fps_abort(FPS_ABORT_STALE_READ, access->relid);

	if (!access->is_read)
	{
		access->observed = word & ~FPS_LOCK_BIT;
		access->is_read = true;
	}
	else if (fps_word_wts(word) != fps_word_wts(access->observed))
	{
		/* a second version of the row: validation could only fail later */
		fps_abort(FPS_ABORT_REREAD_CHANGED, access->relid);
	}
}

/* Algorithm 3 keeps the write set until commit; heap already has the data. */
void
tictoc_write(FpsAccess *access)
{
	access->is_write = true;
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
			fps_abort(FPS_ABORT_LOCK_TIMEOUT, access->relid);
		if (fps_entry_cas(access->entry, &word, word | FPS_LOCK_BIT))
			break;
	}
	access->locked = true;
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
	fps_u64		commit_ts = 0;
	int			i;

	writes = palloc(sizeof(FpsAccess *) * (txn->naccesses + 1));
	for (i = 0; i < txn->naccesses; i++)
		if (txn->accesses[i].is_write)
			writes[nwrites++] = &txn->accesses[i];
	qsort(writes, nwrites, sizeof(FpsAccess *), compare_by_key);
	for (i = 0; i < nwrites; i++)
		tictoc_lock(writes[i]);

	/* commit_ts: after every version read, after every read of what we write */
	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->is_write)
			commit_ts = Max(commit_ts, fps_word_rts(fps_entry_load(a->entry)) + 1);
		if (a->is_read)
			commit_ts = Max(commit_ts, fps_word_wts(a->observed));
	}
	if (txn->raise_floor)
		commit_ts = Max(commit_ts, fps_max_timestamp(fps_sketch) + 1);

	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];
		fps_u64		cur;

		if (!a->is_read || fps_word_rts(a->observed) >= commit_ts)
			continue;			/* the version read is still valid at commit_ts */

		cur = fps_entry_load(a->entry);
		for (;;)
		{
			if (fps_word_wts(cur) != fps_word_wts(a->observed))
				fps_abort(FPS_ABORT_VALIDATE_CHANGED, a->relid);
			if (a->locked || fps_word_rts(cur) >= commit_ts)
				break;			/* our own lock: nobody else can move wts */
			if (fps_word_locked(cur))
				fps_abort(FPS_ABORT_VALIDATE_LOCKED, a->relid);
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
		fps_raise_floor(fps_sketch, commit_ts);
		fps_atomic_add(&fps_counters->floor_raises, 1);
	}

	pfree(writes);
	txn->commit_ts = commit_ts;
	txn->validated = true;
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
			/* a locked word changes only through its owner: a store is enough */
			fps_atomic_store(&a->entry->word,
							 fps_word_make(false, txn->commit_ts, txn->commit_ts));
			a->locked = false;
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
		fps_decref(fps_sketch, a->entry);
	}
}
