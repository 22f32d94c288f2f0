/*-------------------------------------------------------------------------
 *
 * txn.c
 *	  Per-backend transaction state and the transaction callbacks.
 *
 * The access set (fps_txn) lives in TopMemoryContext and is reused across
 * transactions, so steady-state reads do not palloc.  Every key in it is
 * pinned in the FPSketch (INCREF at first touch) until the transaction ends.
 *
 * Callback placement follows CommitTransaction():
 *	XACT_EVENT_PRE_COMMIT	validate (may ERROR: the transaction aborts
 *							cleanly and XACT_EVENT_ABORT releases)
 *	XACT_EVENT_COMMIT		install and release: runs after the commit is
 *							visible, must not ERROR or palloc (it would PANIC)
 *	XACT_EVENT_ABORT		release every lock bit and pin; idempotent, also
 *							after a successful PRE_COMMIT
 *	XACT_EVENT_PRE_PREPARE	refused: a prepared transaction would hold pins
 *							and lock bits across sessions and restarts
 *
 * Subtransactions: the reads of an aborted subtransaction stay in the read
 * set (what a PL/pgSQL EXCEPTION block read may have influenced what the
 * transaction did next) and so do its writes (installing a timestamp for a
 * row that was not changed after all is a safe over-approximation).
 *
 * Shared state touched here: entry words through the protocol, the pins
 * through fps_incref/fps_decref, and fps_counters with atomics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/timestamp.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "cc.h"
#include "../fpsketch_am.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

FpsTxn		fps_txn;

/*
 * > 0 while an ALTER TABLE on an fpsketch table runs.  Its reads of tables
 * it holds at least SHARE lock on (no concurrent writers) are not tracked
 * per row: the statement raises the floor at commit, which puts the
 * transaction after every write it could have read.
 */
int			fps_ddl_depth = 0;

static void fps_before_shmem_exit(int code, Datum arg);

static const char *const abort_detail[FPS_NUM_ABORT_REASONS] = {
	[FPS_ABORT_STALE_READ] = "A row of relation \"%s\" was read after a concurrent transaction had committed a newer version of it.",
	[FPS_ABORT_REREAD_CHANGED] = "Two different versions of a row of relation \"%s\" were read in one transaction.",
	[FPS_ABORT_VALIDATE_CHANGED] = "A row of relation \"%s\" read by this transaction was overwritten before it could commit.",
	[FPS_ABORT_VALIDATE_LOCKED] = "A row of relation \"%s\" read by this transaction is being overwritten by a concurrently committing transaction.",
	[FPS_ABORT_CONCURRENT_UPDATE] = "A row of relation \"%s\" was updated or deleted by a concurrent transaction.",
	[FPS_ABORT_LOCK_TIMEOUT] = "Waited longer than fpsketch.lock_wait_timeout for a committing writer of relation \"%s\".",
	[FPS_ABORT_TABLE_FULL] = "The FPSketch exact table is full; a row of relation \"%s\" could not be pinned.",
	[FPS_ABORT_PHANTOM] = "A concurrent transaction inserted into a range or predicate of relation \"%s\" read by this transaction.",
	[FPS_ABORT_PHANTOM_SNAPSHOT] = "A predicate of relation \"%s\" was read on a snapshot taken before a concurrent commit.",
	[FPS_ABORT_STO_READ_TOO_LATE] = "A row or predicate of relation \"%s\" was written by a younger transaction (timestamp ordering: read too late).",
	[FPS_ABORT_STO_WRITE_TOO_LATE] = "A row or predicate of relation \"%s\" was read or written by a younger transaction (timestamp ordering: write too late).",
	[FPS_ABORT_STO_WAITED_FOR_WRITER] = "An older transaction's write of a row of relation \"%s\" committed while this transaction waited to read it.",
	[FPS_ABORT_WAIT_CYCLE] = "Waiting for the lock on a row of relation \"%s\" would close a cycle of waits (a deadlock) among transactions on fpsketch tables.",
};

/*
 * Raise the 40001 for reason.  The caller's state is released by the
 * XACT_EVENT_ABORT callback that follows.
 */
void
fps_abort(FpsAbortReason reason, Oid relid)
{
	char	   *relname = OidIsValid(relid) ? get_rel_name(relid) : NULL;

	fps_atomic_add(&fps_counters->aborts[reason], 1);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 errdetail(abort_detail[reason], relname ? relname : "?"),
			 reason == FPS_ABORT_TABLE_FULL ?
			 errhint("Increase fpsketch.max_entries or make transactions touch fewer rows.") :
			 reason == FPS_ABORT_PHANTOM_SNAPSHOT ?
			 errhint("Use READ COMMITTED, where each scan can take a newer snapshot; the transaction might succeed if retried.") :
			 errhint("The transaction might succeed if retried.")));
}

/*
 * Is rel's access to be tracked by the protocol now?  Temporary tables,
 * recovery and fpsketch.protocol = off are untracked; a tracked read in a
 * parallel worker would escape the leader's read set, so it is refused (the
 * planner hook keeps plans from getting here).
 */
bool
fps_tracking_active(Relation rel, FpsRelInfo **info)
{
	if (fps_protocol == FPS_PROTOCOL_OFF)
		return false;
	*info = fps_relinfo(rel);
	if (!(*info)->tracked || RecoveryInProgress())
		return false;
	if (IsInParallelMode() && IsParallelWorker())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("fpsketch table \"%s\" cannot be read in a parallel worker",
						RelationGetRelationName(rel)),
				 errdetail("fpsketch records what a transaction reads in the backend that runs it; a parallel worker's reads would escape that record.  Plans that scan fpsketch tables are kept serial, but a function called in a parallel plan runs in the workers."),
				 errhint("Declare functions that read fpsketch tables PARALLEL RESTRICTED (they then run in the leader only), or set max_parallel_workers_per_gather to 0.")));
	fps_require_shmem();
	return true;
}

/* ---- the access set ---- */

static inline uint32
map_slot(fps_u64 key, int mapsize)
{
	/* keys are already hashes */
	return (uint32) (key ^ (key >> 32)) & (mapsize - 1);
}

static void
map_rebuild(int mapsize)
{
	/* allocate first: if that fails, the old map still serves the abort */
	int		   *map = MemoryContextAlloc(TopMemoryContext, sizeof(int) * mapsize);
	int			i;

	if (fps_txn.map)
		pfree(fps_txn.map);
	fps_txn.map = map;
	fps_txn.mapsize = mapsize;
	memset(fps_txn.map, -1, sizeof(int) * mapsize);
	for (i = 0; i < fps_txn.naccesses; i++)
	{
		uint32		s = map_slot(fps_txn.accesses[i].key, mapsize);

		while (fps_txn.map[s] >= 0)
			s = (s + 1) & (mapsize - 1);
		fps_txn.map[s] = i;
	}
}

/* The access for key, or NULL and in *slot the free map slot for it. */
static FpsAccess *
map_find(fps_u64 key, uint32 *slot)
{
	uint32		s;

	for (s = map_slot(key, fps_txn.mapsize); fps_txn.map[s] >= 0;
		 s = (s + 1) & (fps_txn.mapsize - 1))
		if (fps_txn.accesses[fps_txn.map[s]].key == key)
			return &fps_txn.accesses[fps_txn.map[s]];
	*slot = s;
	return NULL;
}

/*
 * The access for key, pinning it on first touch.  Raises 40001 if the exact
 * table has no room: never an out-of-memory error a client would not retry.
 */
FpsAccess *
fps_txn_access(fps_u64 key, Oid relid)
{
	uint32		s;
	FpsAccess  *access;
	FpsEntry   *entry;

	if (unlikely(fps_txn.map == NULL))
	{
		fps_txn.maxaccesses = 256;
		fps_txn.accesses = MemoryContextAlloc(TopMemoryContext,
											  sizeof(FpsAccess) * fps_txn.maxaccesses);
		map_rebuild(1024);
		before_shmem_exit(fps_before_shmem_exit, 0);
	}

	access = map_find(key, &s);
	if (access != NULL)
		return access;

	/* grow before pinning, so that an out-of-memory ERROR leaks no pin */
	if (fps_txn.naccesses >= fps_txn.maxaccesses)
	{
		fps_txn.accesses = repalloc(fps_txn.accesses,
									sizeof(FpsAccess) * fps_txn.maxaccesses * 2);
		fps_txn.maxaccesses *= 2;
	}
	if (fps_txn.naccesses * 2 >= fps_txn.mapsize)
	{
		map_rebuild(fps_txn.mapsize * 2);
		s = map_slot(key, fps_txn.mapsize);
		while (fps_txn.map[s] >= 0)
			s = (s + 1) & (fps_txn.mapsize - 1);
	}

	entry = fps_incref(fps_sketch, key);
	if (entry == NULL)
		fps_abort(FPS_ABORT_TABLE_FULL, relid);

	if (fps_txn.naccesses == 0 && fps_protocol == FPS_PROTOCOL_STO &&
		fps_txn.sto_ts == 0)
		sto_begin(&fps_txn);

	access = &fps_txn.accesses[fps_txn.naccesses];
	memset(access, 0, sizeof(FpsAccess));
	access->key = key;
	access->entry = entry;
	access->relid = relid;
	fps_txn.map[s] = fps_txn.naccesses++;
	fps_txn.active = true;
	return access;
}

/* The access for key if the transaction touched it, else NULL; no pin. */
FpsAccess *
fps_txn_lookup(fps_u64 key)
{
	uint32		s;

	return fps_txn.map == NULL ? NULL : map_find(key, &s);
}

/*
 * A READ COMMITTED statement is about to re-evaluate itself on a newer
 * version of a row (EvalPlanQual) after a concurrent writer committed.  May
 * the transaction forget the version it read before and read the new one?
 * Only if that read was the transaction's one read of the key and belongs
 * to this statement: then nothing but this statement's evaluation of this
 * row saw the old version, and EvalPlanQual redoes exactly that.  A key
 * read again (a subquery, an earlier statement) may have fed other
 * decisions, which the transaction cannot take back: false.
 */
bool
fps_txn_replace_read(FpsAccess *access, uint32 statement)
{
	if (!access->is_read)
		return true;			/* only written, or forgotten already */
	if (access->is_phantom || access->nreads != 1 || statement == 0 ||
		access->read_stmt != statement)
		return false;
	access->is_read = false;
	access->nreads = 0;
	access->read_stmt = 0;
	access->observed = 0;
	return true;
}

/*
 * Count a row read of relid; true if the transaction reads the relation
 * through its relation key instead (escalated), which happens once it read
 * fpsketch.escalation_threshold rows of it.
 */
bool
fps_txn_count_row_read(Oid relid)
{
	FpsRelReads *r = NULL;
	int			i;

	for (i = 0; i < fps_txn.nrelreads; i++)
		if (fps_txn.relreads[i].relid == relid)
		{
			r = &fps_txn.relreads[i];
			break;
		}
	if (r == NULL)
	{
		if (fps_txn.nrelreads >= FPS_MAX_REL_READS)
			return false;		/* untallied: per-row keys, as before */
		r = &fps_txn.relreads[fps_txn.nrelreads++];
		fps_txn.active = true;	/* so that the transaction's end resets this */
		r->relid = relid;
		r->nreads = 0;
		r->escalated = false;
	}
	if (r->escalated)
		return true;
	if (++r->nreads <= fps_escalation_threshold)
		return false;
	fps_read_relation_key(relid);
	r->escalated = true;
	fps_atomic_add(&fps_counters->escalations, 1);
	return true;
}

/*
 * Does the transaction pin a quarter of the exact table?  Past that, a
 * writer tries to cover its writes by an exclusive lock instead (see
 * holds_relation_exclusively): others need entries too, and the table fails
 * a pin once a partition is all pinned, before it is all pinned as a whole.
 */
bool
fps_txn_pins_crowd_table(void)
{
	/* every row read asks: the capacity is fixed at server start */
	static uint64 crowd = 0;

	if (unlikely(crowd == 0))
	{
		if (fps_sketch == NULL)
			return false;
		crowd = Max(fps_capacity(fps_sketch) / 4, 1);
	}
	return (uint64) fps_txn.naccesses >= crowd;
}

/* This transaction wrote rows (or changed key schemes) past per-key tracking. */
void
fps_txn_note_untracked_write(void)
{
	if (fps_protocol == FPS_PROTOCOL_OFF)
		return;
	fps_require_shmem();
	fps_txn.raise_floor = true;
	fps_txn.active = true;
}

/*
 * Waiting for another transaction's commit to finish with an entry.  Lock
 * bits and committer counts are held only from PRE_COMMIT to COMMIT of their
 * owner, so waits are short; they are bounded by fpsketch.lock_wait_timeout
 * and interruptible.  Spin first, then sleep with exponential backoff.
 */
void
fps_backoff_init(FpsBackoff *backoff)
{
	backoff->timeout_ms = fps_lock_wait_timeout_ms;
	backoff->start = 0;
	backoff->sleep_us = 10;
	backoff->spins = 0;
}

/* One round of waiting; false once the timeout has passed. */
bool
fps_backoff_wait(FpsBackoff *backoff)
{
	if (backoff->start == 0)
	{
		backoff->start = GetCurrentTimestamp();
		fps_atomic_add(&fps_counters->lock_waits, 1);
	}
	CHECK_FOR_INTERRUPTS();
	if (++backoff->spins > 100)
	{
		pg_usleep(backoff->sleep_us);
		backoff->sleep_us = Min(backoff->sleep_us * 2, 1000);
		if (TimestampDifferenceExceeds(backoff->start, GetCurrentTimestamp(),
									   backoff->timeout_ms))
			return false;
	}
	return true;
}

/*
 * Wait until the entry is not locked by another transaction's commit.
 * Returns false on timeout; *word receives the last word loaded.
 */
bool
fps_wait_while_locked(FpsAccess *access, fps_u64 *word)
{
	FpsBackoff	backoff;

	fps_backoff_init(&backoff);
	*word = fps_entry_load(access->entry);
	while (fps_word_locked(*word) && !access->locked)
	{
		if (!fps_backoff_wait(&backoff))
			return false;
		*word = fps_entry_load(access->entry);
	}
	return true;
}

/* ---- the protocol in force ---- */

bool
cc_read(FpsAccess *access, FpsVersion *version)
{
	if (fps_protocol == FPS_PROTOCOL_STO)
	{
		sto_read(access, version);
		return true;
	}
	return tictoc_read(access, version);
}

/*
 * A client statement that writes or locks rows is about to run: under
 * TicToc, fail now a transaction that validation would fail anyway (STO
 * fails its reads as they happen).
 */
void
cc_before_writing_statement(void)
{
	if (fps_txn.active && fps_protocol == FPS_PROTOCOL_TICTOC && fps_txn.naccesses > 0)
		tictoc_abort_if_doomed(&fps_txn);
}

void
cc_write(FpsAccess *access)
{
	if (fps_protocol == FPS_PROTOCOL_STO)
		sto_write(access);
	else
		tictoc_write(access);
}

void
cc_phantom_read(FpsAccess *access)
{
	if (fps_protocol == FPS_PROTOCOL_STO)
		sto_phantom_read(access);
	else
		tictoc_phantom_read(access);
}

void
cc_phantom_write(FpsAccess *access)
{
	if (fps_protocol == FPS_PROTOCOL_STO)
		sto_phantom_write(access);
	else
		tictoc_phantom_write(access);
}

/*
 * Would a read of this predicate key still find what it found?  STO orders
 * predicate writers against readers at the access itself: always.
 */
bool
cc_phantom_read_unchanged(FpsAccess *access)
{
	if (fps_protocol == FPS_PROTOCOL_STO)
		return true;
	return tictoc_phantom_unchanged(access);
}

/* ---- release ---- */

static void
txn_reset(void)
{
	if (fps_txn.naccesses > 0)
		memset(fps_txn.map, -1, sizeof(int) * fps_txn.mapsize);
	fps_txn.naccesses = 0;
	fps_txn.active = false;
	fps_txn.validated = false;
	fps_txn.raise_floor = false;
	fps_txn.nrelreads = 0;
	fps_txn.commit_ts = 0;
	fps_txn.sto_ts = 0;
	/* unregistered in PRE_COMMIT, or by the resource owner on abort */
	fps_txn.held_snapshot = NULL;
}

static void
fps_xact_callback(XactEvent event, void *arg)
{
	if (!fps_txn.active)
		return;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* the last read is done (deferred triggers ran before) */
			if (fps_txn.held_snapshot != NULL)
			{
				UnregisterSnapshotFromOwner(fps_txn.held_snapshot,
											TopTransactionResourceOwner);
				fps_txn.held_snapshot = NULL;
			}
			if (fps_protocol == FPS_PROTOCOL_TICTOC)
				tictoc_validate(&fps_txn);
			else
				sto_pre_commit(&fps_txn);
			break;

		case XACT_EVENT_COMMIT:
			/* no ERROR, no palloc from here on */
			if (fps_protocol == FPS_PROTOCOL_TICTOC)
				tictoc_commit(&fps_txn);
			else
				sto_finish(&fps_txn, true);
			txn_reset();
			break;

		case XACT_EVENT_ABORT:
			if (fps_protocol == FPS_PROTOCOL_TICTOC)
				tictoc_abort(&fps_txn);
			else
				sto_finish(&fps_txn, false);
			txn_reset();
			break;

		case XACT_EVENT_PRE_PREPARE:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that has accessed fpsketch tables"),
					 errdetail("fpsketch keeps per-row timestamps pinned in shared memory only until the transaction ends."),
					 errhint("Commit or roll back the transaction instead.")));
			break;

		default:
			break;
	}
}

/*
 * A FATAL exit or an error escaping before the transaction machinery runs
 * must not leave pins or lock bits behind.
 */
static void
fps_before_shmem_exit(int code, Datum arg)
{
	/* a FATAL exit from a row-lock wait skips its PG_FINALLY */
	if (fps_row_lock_waits_for != NULL && MyProc != NULL)
		pg_atomic_write_u32(&fps_row_lock_waits_for[MyProc->pgprocno],
							InvalidTransactionId);

	if (fps_txn.active && fps_sketch != NULL)
	{
		if (fps_protocol == FPS_PROTOCOL_TICTOC)
			tictoc_abort(&fps_txn);
		else
			sto_finish(&fps_txn, false);
		txn_reset();
	}
}

void
fps_txn_register_callbacks(void)
{
	RegisterXactCallback(fps_xact_callback, NULL);
}
