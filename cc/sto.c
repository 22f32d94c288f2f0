/*-------------------------------------------------------------------------
 *
 * sto.c
 *	  Strict timestamp ordering over FPSketch entries (the dissertation's
 *	  Algorithm 4).
 *
 * Every transaction takes its timestamp ts from a shared clock at its first
 * access to an fpsketch table and is serialized at ts.  Each access checks
 * the key's (wts, rts) at once; there is no validation at commit:
 *
 *	READ	abort if ts < wts (a younger transaction wrote it: read too late);
 *			if an older writer is still in flight (dirty), wait for it to end
 *			through the lock manager (a wait that would close a cycle with
 *			row-lock waits is a 40001 under fpsketch.wait_policy =
 *			cycle_check, else the detector's 40P01) -- if it committed, the
 *			version read is not the one ts must see: abort;
 *			then rts = max(rts, ts).
 *	WRITE	abort if ts < wts or ts < rts (write too late) or another
 *			transaction's write is in flight; then wts = ts, dirty.
 *	COMMIT	clear dirty (wts stays ts), unpin.
 *	ABORT	clear dirty; wts stays: a safe over-approximation.
 *
 * "wts" in these checks is the wts the key's last write gave
 * (fps_entry_written_wts), not the entry word's: an rts extension more than
 * FPS_MAX_DELTA past the last write moves the word's wts up with no write
 * (fps_word_make), and a transaction older than the row's newest readers by
 * that much would fail at a row nobody wrote -- a long report on a busy
 * table, on every retry.  So every write here raises the written wts before
 * the word shows it (fps_entry_raise_written).
 *
 * Heap applies the write before sto_write() runs.  That order is safe: a
 * younger reader that read the old version in between has raised rts past
 * ts, so the write is refused; an older one reads what it must.
 *
 * A version read must also be the latest committed one: a committed
 * successor by an older transaction means ts should have seen it (abort),
 * one by a younger transaction shows in wts (read too late).
 *
 * Phantom keys (predicates): inserters do not exclude one another, and a
 * reader must not wait for an insert in flight, which may belong to a
 * transaction that stays idle for an hour.  An inserter raises wts to its
 * ts at its write (a reader older than that fails: read too late) and
 * checks that no younger transaction has read the predicate (readers_rts,
 * raised by readers only).  A reader raises readers_rts to its ts without
 * waiting for inserts in flight: an older inserter that commits later would
 * have to appear in the reader's past, so it fails instead, at its
 * PRE_COMMIT, where it registers in the entry's committer word and then
 * checks readers_rts again.  A reader waits only for inserters registered
 * there (between PRE_COMMIT and their end, a short wait), and the scan then
 * takes a snapshot that sees every insert that completed.  Either the
 * reader sees the registration or the inserter sees the reader's raise:
 * both are sequentially consistent atomics.
 *
 * Shared state: entry words by CAS, committer words by atomic add, the
 * clock (fps_counters->sto_clock) by atomic add; the dirty bit is the entry's
 * lock bit and is held from sto_write() to sto_finish().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lmgr.h"
#include "storage/proc.h"

#include "cc.h"

/* BEGIN: the transaction's timestamp, unique and increasing. */
void
sto_begin(FpsTxn *txn)
{
	txn->sto_ts = fps_atomic_add(&fps_counters->sto_clock, 1);

	/* keys seeded from the floor must not look written in our future */
	if (txn->sto_ts <= fps_max_floor(fps_sketch))
	{
		fps_atomic_max(&fps_counters->sto_clock, fps_max_floor(fps_sketch) + 1);
		txn->sto_ts = fps_atomic_add(&fps_counters->sto_clock, 1);
	}
}

/* Algorithm 4, READ. */
void
sto_read(FpsAccess *access, FpsVersion *version)
{
	fps_u64		ts = fps_txn.sto_ts;
	FpsBackoff	backoff;
	fps_u64		word;

	fps_backoff_init(&backoff);
	/* a dirty bit whose writer the lock manager cannot name: bounded */
	backoff.timeout_ms = Min(backoff.timeout_ms, DeadlockTimeout);
	word = fps_entry_load(access->entry);
	for (;;)
	{
		/*
		 * A younger writer whose word we did not load yet makes our rts
		 * extension's CAS fail, and we are back here with its word.
		 */
		if (ts < fps_entry_written_wts(access->entry, word))
			fps_abort_key(FPS_ABORT_STO_READ_TOO_LATE, access);

		if (fps_word_locked(word) && !access->locked)
		{
			/*
			 * An older writer in flight: ts must see its outcome.  The
			 * version names it, or, for a write heap does not show here (one
			 * rolled back with a subtransaction, a failed insert), the
			 * entry does.
			 */
			TransactionId writer = version->updater_in_progress(version->arg);

			if (!TransactionIdIsValid(writer))
				writer = fps_lock_holder_xid(access->entry);
			if (TransactionIdIsValid(writer))
			{
				fps_atomic_add(&fps_counters->sto_writer_waits, 1);
				/* a prepared writer: bounded, it ends only when told to */
				if (!fps_prepared_wait(writer, access->relid, -1) &&
					!version->wait_for(writer))
					fps_abort_key(FPS_ABORT_WAIT_CYCLE, access);
			}
			else if (!fps_backoff_wait(&backoff))
				fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, access);
			if (version->is_stale(version->arg))
				fps_abort_key(FPS_ABORT_STO_WAITED_FOR_WRITER, access);
			word = fps_entry_load(access->entry);
			continue;
		}

		/* a successor of the row, whichever groups it changed: no group named */
		if (version->is_stale(version->arg))
			fps_abort(FPS_ABORT_STALE_READ, access->relid);

		if (fps_word_rts(word) >= ts ||
			fps_entry_cas(access->entry, &word,
						  fps_word_make(fps_word_locked(word), fps_word_wts(word), ts)))
			break;
	}
	access->is_read = true;
}

/* Algorithm 4, WRITE: heap has applied the write already (see above). */
void
sto_write(FpsAccess *access)
{
	fps_u64		ts = fps_txn.sto_ts;
	fps_u64		word;

	access->is_write = true;
	if (access->locked)
		return;					/* timestamp updates are idempotent */

	for (;;)
	{
		FpsBackoff	backoff;

		/*
		 * Heap's row lock ordered writers of this row, and a writer clears
		 * its dirty mark before releasing it: a dirty mark still set belongs
		 * to a writer heap did not order (an insert of the same key, a
		 * rolled-back subtransaction's update), which the lock manager
		 * cannot see us wait for: bounded like a deadlock check.
		 */
		fps_backoff_init(&backoff);
		backoff.timeout_ms = Min(backoff.timeout_ms, DeadlockTimeout);
		word = fps_entry_load(access->entry);
		while (fps_word_locked(word))
		{
			TransactionId holder = fps_lock_holder_xid(access->entry);

			/* the holder recorded itself: wait where a deadlock is found */
			if (TransactionIdIsValid(holder))
			{
				if (!fps_prepared_wait(holder, access->relid, -1))
					XactLockTableWait(holder, NULL, NULL, XLTW_None);
			}
			else if (!fps_backoff_wait(&backoff))
				fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, access);
			word = fps_entry_load(access->entry);
		}
		/* rts bounds the word's wts, moved or not: the written wts too */
		if (ts < fps_word_rts(word))
			fps_abort_key(FPS_ABORT_STO_WRITE_TOO_LATE, access);

		/*
		 * Our wts is written before the word shows it.  Should the CAS
		 * fail and the retry give up, the raise stays: conservative.
		 */
		fps_entry_raise_written(access->entry, ts);
		if (fps_entry_cas(access->entry, &word,
						  fps_word_make(true, ts, fps_word_rts(word))))
			break;
	}
	fps_entry_set_lock_owner(access->entry, FPS_MY_LOCK_OWNER);
	access->locked = true;
}

/*
 * The row's other column groups: the version replaced was written at their
 * written wts, at most; a younger one makes this write too late.  Their
 * readers do not: ts need only follow their writers.
 */
void
sto_follow(FpsAccess *access)
{
	FpsEntry   *entry = access->entry;

	if (fps_txn.sto_ts < fps_entry_written_wts(entry, fps_entry_load(entry)))
		fps_abort_key(FPS_ABORT_STO_WRITE_TOO_LATE, access);
}

/*
 * READ of a phantom key: raise readers_rts to ts, once no inserter is
 * between PRE_COMMIT and its end; inserters still in flight will fail.
 */
void
sto_phantom_read(FpsAccess *access)
{
	fps_u64		ts = fps_txn.sto_ts;
	fps_u64		own = access->committing ? FPS_COMMITTER_ONE : 0;
	FpsBackoff	backoff;

	access->is_phantom = true;
	fps_backoff_init(&backoff);
	for (;;)
	{
		fps_u64		cword = fps_entry_committers_load(access->entry);

		if (ts < fps_entry_written_wts(access->entry, fps_entry_load(access->entry)))
			fps_abort_key(FPS_ABORT_STO_READ_TOO_LATE, access);
		if (fps_committers(cword) - own > 0)
		{
			/* committing inserters finish without waiting for anyone */
			if (!fps_backoff_wait(&backoff))
				fps_abort_key(FPS_ABORT_LOCK_TIMEOUT, access);
			continue;
		}
		if (fps_entry_readers_rts_load(access->entry) < ts)
			fps_atomic_max(&access->entry->readers_rts, ts);

		/*
		 * An inserter that registered before our raise may have missed it:
		 * wait for it.  One that registers after sees readers_rts >= ts.
		 */
		if (fps_entry_committers_load(access->entry) == cword)
			break;
	}
	access->is_read = true;
}

/*
 * The entry shows a write at ts: the written wts first, then the word
 * (readers may CAS it meanwhile), its lock bit kept.
 */
static void
show_write_at(FpsEntry *entry, fps_u64 ts)
{
	fps_u64		word;

	fps_entry_raise_written(entry, ts);
	word = fps_entry_load(entry);
	while (fps_word_wts(word) < ts &&
		   !fps_entry_cas(entry, &word,
						  fps_word_make(fps_word_locked(word), ts,
										Max(fps_word_rts(word), ts))))
		;
}

/*
 * WRITE of a phantom key: too late if a younger transaction read the
 * predicate; then raise wts.  The check is repeated at PRE_COMMIT.
 */
void
sto_phantom_write(FpsAccess *access)
{
	access->is_phantom = true;
	access->is_write = true;
	if (fps_entry_readers_rts_load(access->entry) > fps_txn.sto_ts)
		fps_abort_key(FPS_ABORT_STO_WRITE_TOO_LATE, access);
	show_write_at(access->entry, fps_txn.sto_ts);
}

/*
 * A writer that commits at the floor commits above its ts: every key it
 * wrote must show commit_ts before the commit becomes visible.  Otherwise,
 * between its commit and sto_finish (XACT_EVENT_COMMIT runs after the
 * commit is visible), a younger transaction could update a row on top of
 * its version and pass sto_follow on a group still showing ts, committing
 * below the version it replaced; and predicate keys, which sto_finish does
 * not raise, would show ts for good to followers of the gaps it split.  A
 * timestamp reader between the two would then see both versions of the
 * row.  Should the commit fail after this, the raised keys only make later
 * writers too late: conservative.
 */
static void
show_commit_ts_before_visible(FpsTxn *txn)
{
	for (int i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->locked || (a->is_phantom && a->is_write))
			show_write_at(a->entry, txn->commit_ts);
	}
}

/*
 * A writer that commits at the floor moves from its ts to commit_ts, above
 * every ts handed out: what it read at ts must still be there at commit_ts,
 * as TicToc's validation asks.  A younger writer may have overwritten a row
 * read (its ts was above the read's rts) or inserted into a predicate read
 * (above its readers_rts) meanwhile; fail then.  Otherwise extend each read
 * to commit_ts, so that such writers still running fail from now on: a row
 * read by CAS on its word, which their writes CAS too; a predicate by
 * raising readers_rts before looking for inserters, which register before
 * they look at it (sto_pre_commit).  These return the reason to fail, or
 * FPS_NUM_ABORT_REASONS.
 */
static FpsAbortReason
extend_row_read_to_floor(FpsEntry *entry, FpsTxn *txn)
{
	fps_u64		word = fps_entry_load(entry);

	for (;;)
	{
		if (fps_word_locked(word))
			return FPS_ABORT_VALIDATE_LOCKED;
		if (fps_entry_written_wts(entry, word) > txn->sto_ts)
			return FPS_ABORT_VALIDATE_CHANGED;
		if (fps_word_rts(word) >= txn->commit_ts ||
			fps_entry_cas(entry, &word,
						  fps_word_make(false, fps_word_wts(word), txn->commit_ts)))
			return FPS_NUM_ABORT_REASONS;
	}
}

/* own_committer: this transaction is registered on it (it inserted there) */
static FpsAbortReason
extend_predicate_read_to_floor(FpsEntry *entry, FpsTxn *txn, bool own_committer)
{
	fps_u64		own = own_committer ? FPS_COMMITTER_ONE : 0;

	fps_atomic_max(&entry->readers_rts, txn->commit_ts);
	if (fps_committers(fps_entry_committers_load(entry)) - own > 0)
		return FPS_ABORT_VALIDATE_LOCKED;
	if (fps_entry_written_wts(entry, fps_entry_load(entry)) > txn->sto_ts)
		return FPS_ABORT_PHANTOM;
	return FPS_NUM_ABORT_REASONS;
}

static void
validate_reads_at_floor(FpsTxn *txn)
{
	for (int i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];
		FpsAbortReason failed;

		if (!a->is_read || a->locked)
			continue;			/* our own lock: nobody else wrote it */
		failed = a->is_phantom ?
			extend_predicate_read_to_floor(a->entry, txn, a->committing) :
			extend_row_read_to_floor(a->entry, txn);
		if (failed != FPS_NUM_ABORT_REASONS)
			fps_abort_key(failed, a);
	}
}

/*
 * Reads at ts (MVTO's, and those of an STO transaction begun READ ONLY)
 * keep no pin (cc_ts_read_key): the keys come from the transaction's list
 * of them and are pinned again here.  A key that went back to the sketch
 * meanwhile shows an over-approximated written wts, and one seeded anew
 * shows any floor raised since ts: false aborts only, since a retry takes
 * a ts above both.  Keys the transaction holds or validated above need
 * nothing more.
 */
static void
validate_ts_reads_at_floor(FpsTxn *txn)
{
	if (txn->ts_reads_overflowed)
		fps_txn_refuse_floor_commit_at_ts(txn);
	for (int i = 0; i < txn->nts_reads; i++)
	{
		FpsTsRead  *r = &txn->ts_reads[i];
		FpsAccess  *own = fps_txn_lookup(r->key);
		FpsEntry   *entry;
		FpsAbortReason failed;

		if (own != NULL && (own->locked || own->is_read))
			continue;
		entry = fps_incref(fps_sketch, r->key);
		if (entry == NULL)
			fps_abort(FPS_ABORT_TABLE_FULL, r->relid);
		failed = r->predicate ?
			extend_predicate_read_to_floor(entry, txn, own != NULL && own->committing) :
			extend_row_read_to_floor(entry, txn);
		fps_decref(fps_sketch, entry);
		if (failed != FPS_NUM_ABORT_REASONS)
			fps_abort_at_floor(failed, r->relid,
							   failed != FPS_ABORT_VALIDATE_LOCKED &&
							   fps_key_floor(fps_sketch, r->key) > txn->sto_ts);
	}
}

/*
 * PRE_COMMIT: inserters register on their predicates' keys and check once
 * more that no younger transaction read them meanwhile (see above); STO
 * has nothing else to validate.  Writes that bypassed per-key tracking
 * (DDL, bulk loads) raise the floor above every timestamp stored and every
 * transaction timestamp handed out, as TicToc's commit does.
 */
void
sto_pre_commit(FpsTxn *txn)
{
	for (int i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (!a->is_phantom || !a->is_write)
			continue;
		fps_entry_committers_add(a->entry, FPS_COMMITTER_ONE);
		a->committing = true;
		if (fps_entry_readers_rts_load(a->entry) > txn->sto_ts)
			fps_abort_key(FPS_ABORT_STO_WRITE_TOO_LATE, a);
	}
	txn->commit_ts = txn->sto_ts;
	if (txn->raise_floor)
	{
		/*
		 * The versions written untracked are after every timestamp stored or
		 * handed out so far, and before every one handed out later: the
		 * floor is drawn from the clock, like a ts.
		 */
		fps_atomic_max(&fps_counters->sto_clock, fps_max_timestamp(fps_sketch) + 1);
		txn->commit_ts = fps_atomic_add(&fps_counters->sto_clock, 1);

		/*
		 * Reads first: once raised, the floor seeds every key not pinned at
		 * it, MVTO's reads at ts among them, which would all look
		 * overwritten.
		 */
		validate_reads_at_floor(txn);
		validate_ts_reads_at_floor(txn);
		fps_txn_raise_floor(txn, txn->commit_ts);
		fps_atomic_add(&fps_counters->floor_raises, 1);
		show_commit_ts_before_visible(txn);
	}
}

/*
 * COMMIT and ABORT alike: clear dirty bits (wts stays), end inserter
 * registrations, unpin.  No ERROR, no palloc.
 */
void
sto_finish(FpsTxn *txn, bool committed)
{
	bool		wrote = txn->raise_floor;
	int			i;

	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (a->locked)
		{
			fps_u64		word;
			fps_u64		wts;

			fps_entry_set_lock_owner(a->entry, 0);
			word = fps_entry_load(a->entry);

			/*
			 * A writer past per-key tracking too commits at the floor it
			 * raised (its entry in the map of commit timestamps): its
			 * versions are after every younger writer's ts below that.
			 * Readers may raise rts meanwhile: CAS.  The written wts goes
			 * first (sto_write raised it to ts already).
			 */
			if (committed)
				fps_entry_raise_written(a->entry, txn->commit_ts);
			do
			{
				wts = committed ? Max(fps_word_wts(word), txn->commit_ts) : fps_word_wts(word);
			} while (!fps_entry_cas(a->entry, &word,
									fps_word_make(false, wts, Max(fps_word_rts(word), wts))));
			a->locked = false;
			wrote = true;
		}
		if (a->committing)
		{
			fps_entry_committers_add(a->entry, FPS_COMMITTER_DONE);
			a->committing = false;
			wrote = true;
		}
		fps_decref(fps_sketch, a->entry);
	}
	if (committed)
		fps_atomic_add(wrote ? &fps_counters->commits : &fps_counters->read_only_commits, 1);
}

/*
 * READ at the transaction's timestamp ts (MVTO, and STO's read-only
 * transactions): raise the key's rts to ts, keeping the dirty mark.  False,
 * with nothing raised, if an older writer holds the key dirty: its outcome
 * decides which version ts reads, so the caller waits for it and retries.
 * A younger writer's version is after ts and needs no wait.
 */
bool
sto_ts_read(FpsEntry *entry, fps_u64 ts, bool own_write)
{
	fps_u64		word = fps_entry_load(entry);

	for (;;)
	{
		if (fps_word_locked(word) && fps_word_wts(word) <= ts && !own_write)
			return false;
		if (fps_word_rts(word) >= ts ||
			fps_entry_cas(entry, &word,
						  fps_word_make(fps_word_locked(word), fps_word_wts(word), ts)))
			return true;
	}
}
