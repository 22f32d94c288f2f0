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
 *	XACT_EVENT_PRE_PREPARE	validate as PRE_COMMIT, then reserve what the
 *							prepared transaction keeps (cc/prepared.c)
 *	XACT_EVENT_PREPARE		hand it over to the prepared transaction; no
 *							ERROR from here on
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
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/timestamp.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "cc.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

FpsTxn		fps_txn = {.last_rel = -1, .pool_slot = -1};

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
	[FPS_ABORT_SNAPSHOT_TOO_OLD] = "A row of relation \"%s\" was written by a transaction whose commit timestamp this timestamp snapshot can no longer find (snapshot too old).",
	[FPS_ABORT_READ_ONLY_GUESS] = "The statement looked read-only, so it read at a timestamp without validation, but it writes relation \"%s\" (a function that writes but is not declared VOLATILE, or more statements in the same transaction).",
	/* fps_abort_pool_held() says who holds the pool */
	[FPS_ABORT_POOL_HELD] = "Other transactions hold the shared pool of pins; a row of relation \"%s\" could not be pinned.",
};

/* a key read at ts, checked at a floor commit after another floor raise */
static const char *const floor_raised_detail =
"A row or predicate of relation \"%s\" read by this transaction at its timestamp shows a later write, or a floor raised since: this transaction commits at the floor (it ran DDL or wrote new storage), and another transaction raised the floor meanwhile (DDL, TRUNCATE or new storage of an fpsketch table, or a learned regrouping), which makes keys read look written.";

static const char *const read_only_undone_detail =
"The transaction was READ ONLY at its first read, so it read at a timestamp without validation, but it writes relation \"%s\": a rolled-back savepoint or a function's SET clause had made it read-only for a while.";

/*
 * Raise the 40001 for reason.  The caller's state is released by the
 * XACT_EVENT_ABORT callback that follows.
 */
static pg_attribute_noreturn() void
raise_abort(FpsAbortReason reason, Oid relid, int group, FpsEntry *entry,
			bool predicate, const char *detail)
{
	char	   *relname;
	char		gid[GIDSIZE];

	/* not a guess: READ ONLY, which a savepoint or a SET clause undid */
	bool		read_only_undone = reason == FPS_ABORT_READ_ONLY_GUESS &&
		!fps_txn.ts_guessed;

	/* a lock a prepared transaction holds: name it, it waits for its gid */
	if (reason == FPS_ABORT_LOCK_TIMEOUT && entry != NULL &&
		fps_prepared_lock_gid(entry, gid))
		fps_abort_prepared(relid, group, gid, predicate);
	relname = OidIsValid(relid) ? get_rel_name(relid) : NULL;

	fps_atomic_add(&fps_counters->aborts[reason], 1);
	/* now, not at the transaction's end: a savepoint may catch the ERROR */
	fps_relstats_abort(reason, relid, group);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 errdetail(detail ? detail :
					   read_only_undone ? read_only_undone_detail : abort_detail[reason],
					   relname ? relname : "?"),
			 detail == floor_raised_detail ?
			 errhint("The transaction might succeed if retried; DDL in a transaction of its own has no earlier reads for a floor raise to fail.") :
			 read_only_undone ?
			 errhint("This session's READ ONLY transactions now validate their reads: the transaction might succeed if retried.") :
			 reason == FPS_ABORT_TABLE_FULL ?
			 errhint("Increase fpsketch.max_entries or make transactions touch fewer rows.") :
			 reason == FPS_ABORT_PHANTOM_SNAPSHOT ?
			 errhint("Use READ COMMITTED, where each scan can take a newer snapshot; the transaction might succeed if retried.") :
			 reason == FPS_ABORT_READ_ONLY_GUESS ?
			 errhint("This session no longer guesses which statements are read-only: the transaction might succeed if retried.  Declare transactions that only read READ ONLY to have them read at a timestamp.") :
			 errhint("The transaction might succeed if retried.")));
}

void
fps_abort(FpsAbortReason reason, Oid relid)
{
	raise_abort(reason, relid, -1, NULL, false, NULL);
}

/*
 * The same for a key read at ts that a floor commit found changed
 * (cc/sto.c): if a floor was raised since ts, the change may be only that
 * floor, and the DETAIL says so rather than name a write nobody made.
 */
void
fps_abort_at_floor(FpsAbortReason reason, Oid relid, bool floor_raised_since_ts)
{
	raise_abort(reason, relid, -1, NULL, false,
				floor_raised_since_ts ? floor_raised_detail : NULL);
}

/*
 * A read at ts through a parent whose members changed since ts: the scan
 * would read the members of now (am/membership.c).
 */
static const char *const members_changed_detail =
"The tables that \"%s\" reaches (its partitions or inheritance children) changed after this transaction's timestamp snapshot was taken.";

void
fps_abort_members_changed(Oid parent)
{
	raise_abort(FPS_ABORT_SNAPSHOT_TOO_OLD, parent, -1, NULL, false,
				members_changed_detail);
}

/*
 * The same for a reason found on a key's entry the caller has pinned;
 * predicate: a predicate key (it names no row).
 */
void
fps_abort_entry(FpsAbortReason reason, Oid relid, FpsEntry *entry, bool predicate)
{
	raise_abort(reason, relid, -1, entry, predicate, NULL);
}

/*
 * A wait for a key or row that a prepared transaction holds timed out.
 * Only COMMIT PREPARED or ROLLBACK PREPARED ends that transaction, which a
 * retry may find done: a 40001 that names it.
 */
void
fps_abort_prepared(Oid relid, int group, const char *gid, bool predicate)
{
	char	   *relname = OidIsValid(relid) ? get_rel_name(relid) : NULL;

	fps_atomic_add(&fps_counters->aborts[FPS_ABORT_LOCK_TIMEOUT], 1);
	fps_relstats_abort(FPS_ABORT_LOCK_TIMEOUT, relid, group);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 predicate ?
			 errdetail("A range or predicate of relation \"%s\" is locked by prepared transaction \"%s\", which was not committed or rolled back within fpsketch.lock_wait_timeout.",
					   relname ? relname : "?", gid) :
			 errdetail("A row of relation \"%s\" is locked by prepared transaction \"%s\", which was not committed or rolled back within fpsketch.lock_wait_timeout.",
					   relname ? relname : "?", gid),
			 errhint("COMMIT PREPARED or ROLLBACK PREPARED ends it; the transaction might succeed if retried after that.")));
}

/*
 * The same for a reason found on one key of the access set: a row key
 * names its column group, which fpsketch_relation_stats counts too (the
 * columns whose conflicts make clients retry).
 */
void
fps_abort_key(FpsAbortReason reason, FpsAccess *access)
{
	raise_abort(reason, access->relid,
				access->row_group == FPS_NO_ROW_GROUP ? -1 : access->row_group,
				access->entry, access->is_phantom, NULL);
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
	if (unlikely(!fps_txn.active))
		fps_prepared_check_recovered();
	if (unlikely(fps_prepared_orphans_any()))
		fps_prepared_check_orphans(RelationGetRelid(rel));
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

/* ---- the pin budget ---- */

/*
 * No transaction may pin more than its share of the exact table, so that
 * nobody can fill it for everyone else (DESIGN §6, large reads).  Every
 * backend may pin pins_guaranteed row and prefix keys ("fine" keys) on its
 * own; beyond that it borrows from a pool shared by all backends, in
 * chunks, up to fpsketch.max_pins_per_transaction in all.  The guaranteed
 * shares and the pool together are three quarters of the table; the rest
 * is room for coarse keys (relation and escalation keys, one or two per
 * relation, which the lock table bounds) and for the uneven filling of the
 * table's partitions, so that a pin fails only when the table is far too
 * small.  Past the budget, reads escalate to the relation's escalation key
 * and writes to ACCESS EXCLUSIVE (am/track.c); fps_txn_try_access() reports
 * the refusal and pins_refusal says why.
 *
 * The pool is shared between roles, too: the transactions of one login
 * role may borrow fpsketch.max_pool_pins_per_role from it at once, in all
 * (half the pool by default).  A per-transaction limit alone let two idle
 * transactions of one role hold the whole pool, and every other role's
 * writer that needed more than its backend's own share then failed with
 * 40001 at every retry, for as long as they stayed idle.  The role is the
 * one that authenticated the session (GetAuthenticatedUserId()), which
 * neither SET ROLE nor a SECURITY DEFINER function changes, and superusers
 * count like everyone (they may raise the limit for themselves).
 *
 * Shared: FpsPool, under its LWLock: one slot per login role whose open
 * transactions hold a reservation (a transaction holds at most one, so
 * MaxBackends slots are enough), and fps_counters->pool_pins, the pool's
 * total, changed only under that lock (atomically, so that fpsketch_stats
 * reads it without the lock).  A transaction takes the lock for each chunk
 * it borrows (every FPS_POOL_CHUNK pins past its own share, never for the
 * small transactions that stay within it), and once more when it ends: its
 * COMMIT, ABORT or the backend's exit returns the whole reservation and
 * leaves the slot when the role's last borrowing transaction ends.  Nothing
 * between LWLockAcquire and LWLockRelease can ERROR.
 */
#define FPS_POOL_CHUNK 64

/*
 * The first loan is this small and each next one doubles, up to the
 * chunk: a loan is reserved whether or not it is pinned, and a fixed 64
 * let only max_pool_pins_per_role / 64 transactions past their own share
 * at once, however few pins each needed (helper-22: 16 such transactions
 * of one role with max_entries = 4096, the rest failing with 40001 at
 * every retry while the exact table stood 92% empty).
 */
#define FPS_POOL_FIRST_LOAN 4

/* what the pool held when it refused, for the DETAIL (fps_abort_pool_held) */
static int	refused_role_pins = 0;
static int	refused_pool_pins = 0;

/* fps_txn.pins_refusal */
typedef enum FpsPinRefusal
{
	FPS_PINS_GRANTED,
	FPS_PINS_OWN_LIMIT,			/* the transaction alone took all it may */
	FPS_PINS_ROLE_HELD,			/* the role's transactions hold its share */
	FPS_PINS_POOL_HELD			/* other transactions hold the pool */
} FpsPinRefusal;

typedef struct FpsPoolSlot
{
	Oid			roleid;			/* login role; InvalidOid: free */
	int			ntxns;			/* its open transactions that borrowed */
	int			pins;			/* borrowed by them, in all */
} FpsPoolSlot;

typedef struct FpsPool
{
	LWLock	   *lock;
	int			nslots;
	FpsPoolSlot slots[FLEXIBLE_ARRAY_MEMBER];
} FpsPool;

static FpsPool *fps_pool = NULL;

static int	pins_guaranteed = -1;	/* per backend */
static int	pins_pool_size;
static int	pool_slot_hint = 0;		/* where this backend's role was last */

int
fps_pool_slots(void)
{
	return MaxBackends;
}

Size
fps_pool_shmem_size(void)
{
	return add_size(offsetof(FpsPool, slots),
					mul_size(fps_pool_slots(), sizeof(FpsPoolSlot)));
}

/* Create (postmaster) or attach to the pool's accounting in mem. */
void
fps_pool_shmem_init(void *mem, bool found)
{
	fps_pool = (FpsPool *) mem;
	if (found)
		return;
	memset(fps_pool, 0, fps_pool_shmem_size());
	fps_pool->lock = &GetNamedLWLockTranche("fpsketch pool")->lock;
	fps_pool->nslots = fps_pool_slots();
}

static void
pin_budget_init(void)
{
	int			capacity = (int) fps_capacity(fps_sketch);

	pins_guaranteed = capacity / 4 / Max(MaxBackends, 1);
	pins_pool_size = capacity / 2;
}

/* Fine pins the transaction may borrow from the pool, in all. */
static int
pins_borrow_limit(void)
{
	if (fps_max_pins_per_transaction < 0)
		return pins_pool_size / 2;
	return Min(Max(fps_max_pins_per_transaction - pins_guaranteed, 0), pins_pool_size);
}

/* Fine pins the login role's transactions may borrow, in all. */
static int
pins_role_limit(void)
{
	if (fps_max_pool_pins_per_role < 0)
		return pins_pool_size / 2;
	return Min(fps_max_pool_pins_per_role, pins_pool_size);
}

/* The slot of role, or -1; under the pool's lock. */
static int
pool_find_role(Oid roleid)
{
	if (fps_pool->slots[pool_slot_hint].roleid == roleid)
		return pool_slot_hint;
	for (int i = 0; i < fps_pool->nslots; i++)
		if (fps_pool->slots[i].roleid == roleid)
			return pool_slot_hint = i;
	return -1;
}

/*
 * Borrow up to chunk pins for the transaction; under the pool's lock, no
 * ERROR.  The first loan joins (or opens) the login role's slot.
 */
static FpsPinRefusal
pool_borrow(int chunk)
{
	Oid			roleid = GetAuthenticatedUserId();
	int			s = fps_txn.pool_slot;
	int			role_pins;
	int			pool_pins;

	if (s < 0)
		s = pool_find_role(roleid);
	role_pins = s >= 0 ? fps_pool->slots[s].pins : 0;
	pool_pins = (int) fps_atomic_load(&fps_counters->pool_pins);
	refused_role_pins = role_pins;
	refused_pool_pins = pool_pins;
	if (role_pins >= pins_role_limit())
		return FPS_PINS_ROLE_HELD;
	if (pool_pins >= pins_pool_size)
		return FPS_PINS_POOL_HELD;
	chunk = Min(chunk, Min(pins_role_limit() - role_pins, pins_pool_size - pool_pins));
	if (fps_txn.pool_slot < 0)
	{
		if (s < 0)
		{
			/* a free slot: there is one for every backend */
			s = pool_find_role(InvalidOid);
			if (s < 0)
				return FPS_PINS_POOL_HELD;
			fps_pool->slots[s].roleid = roleid;
			Assert(fps_pool->slots[s].ntxns == 0 && fps_pool->slots[s].pins == 0);
		}
		fps_pool->slots[s].ntxns++;
		fps_txn.pool_slot = s;
	}
	fps_pool->slots[s].pins += chunk;
	fps_atomic_add(&fps_counters->pool_pins, chunk);
	fps_txn.pool_reserved += chunk;
	return FPS_PINS_GRANTED;
}

/* May the transaction pin one more fine key? */
static bool
pin_budget_allows(void)
{
	int			chunk;
	FpsPinRefusal result;

	if (unlikely(pins_guaranteed < 0))
		pin_budget_init();
	if (fps_txn.nfine - pins_guaranteed < fps_txn.pool_reserved)
		return true;
	chunk = Min(Min(FPS_POOL_CHUNK, Max(FPS_POOL_FIRST_LOAN, fps_txn.pool_reserved)),
				Min(pins_borrow_limit(), pins_role_limit()) - fps_txn.pool_reserved);
	if (chunk <= 0)
	{
		fps_txn.pins_refusal = FPS_PINS_OWN_LIMIT;
		return false;
	}
	LWLockAcquire(fps_pool->lock, LW_EXCLUSIVE);
	result = pool_borrow(chunk);
	LWLockRelease(fps_pool->lock);
	if (result == FPS_PINS_GRANTED)
		fps_txn.active = true;	/* the transaction's end returns the loan */
	fps_txn.pins_refusal = result;
	return result == FPS_PINS_GRANTED;
}

/*
 * Has the transaction pinned all it may borrow (not only what is left)?
 * Which limit it reached: the smaller of its own and its role's.
 */
FpsPinLimit
fps_txn_pin_limit_reached(void)
{
	int			own;
	int			role;

	if (unlikely(pins_guaranteed < 0))
		pin_budget_init();
	own = pins_borrow_limit();
	role = pins_role_limit();
	if (fps_txn.nfine - pins_guaranteed < Min(own, role))
		return FPS_PIN_LIMIT_NONE;
	return role < own ? FPS_PIN_LIMIT_ROLE : FPS_PIN_LIMIT_TRANSACTION;
}

/* Return the transaction's loan: COMMIT, ABORT or exit, so no ERROR. */
static void
pin_budget_release(void)
{
	if (fps_txn.pool_slot >= 0)
	{
		FpsPoolSlot *slot = &fps_pool->slots[fps_txn.pool_slot];

		LWLockAcquire(fps_pool->lock, LW_EXCLUSIVE);
		Assert(slot->pins >= fps_txn.pool_reserved && slot->ntxns > 0);
		slot->pins -= fps_txn.pool_reserved;
		fps_atomic_sub(&fps_counters->pool_pins, fps_txn.pool_reserved);
		if (--slot->ntxns == 0)
			slot->roleid = InvalidOid;
		LWLockRelease(fps_pool->lock);
	}
	fps_txn.pool_slot = -1;
	fps_txn.pool_reserved = 0;
	fps_txn.nfine = 0;
	fps_txn.pins_refusal = FPS_PINS_GRANTED;
}

/* The roles that borrow from the pool now (fpsketch_pool_pins). */
int
fps_pool_role_stats(FpsPoolRoleStats *out, int max)
{
	int			n = 0;

	LWLockAcquire(fps_pool->lock, LW_SHARED);
	for (int i = 0; i < fps_pool->nslots && n < max; i++)
	{
		if (!OidIsValid(fps_pool->slots[i].roleid))
			continue;
		out[n].roleid = fps_pool->slots[i].roleid;
		out[n].transactions = fps_pool->slots[i].ntxns;
		out[n].pins = fps_pool->slots[i].pins;
		n++;
	}
	LWLockRelease(fps_pool->lock);
	return n;
}

/*
 * The top-level transaction holding entry's lock bit, if it recorded
 * itself (STO and MVTO writers) and is another backend: what a reader or
 * writer that must see the outcome waits for in the lock manager, where
 * PostgreSQL finds a deadlock.  A hint: the holder may be done by now, and
 * the caller looks at the entry again after the wait.
 */
TransactionId
fps_lock_holder_xid(const FpsEntry *entry)
{
	fps_u32		owner = fps_entry_lock_owner(entry);
	PGPROC	   *proc;

	if (owner >= FPS_PREPARED_OWNER_BASE)
		return fps_prepared_owner_xid(owner);
	if (owner == 0 || owner - 1 >= ProcGlobal->allProcCount ||
		owner == FPS_MY_LOCK_OWNER)
		return InvalidTransactionId;
	proc = GetPGProcByNumber(owner - 1);
	return *(volatile TransactionId *) &proc->xid;
}

/* ---- writes at a timestamp ---- */

/* Set once a guess proved wrong: the session's statements are validated. */
static bool ts_guess_disabled = false;

/*
 * Set once a transaction read at a timestamp because it was READ ONLY and
 * then wrote after all (a rolled-back savepoint or a function's SET clause
 * had made it read-only for a while): the session's READ ONLY transactions
 * are validated from then on.
 */
static bool ts_read_only_undone = false;

/* May a statement that looks read-only read at a timestamp unvalidated? */
bool
fps_txn_may_guess_read_only(void)
{
	return !ts_guess_disabled;
}

/* May a READ ONLY transaction read at a timestamp unvalidated? */
bool
fps_txn_may_trust_read_only(void)
{
	return !ts_read_only_undone;
}

/*
 * A TicToc transaction reading at a timestamp validates nothing: it may
 * not write (a row, a predicate, or untracked), and it may not lock a row,
 * since its writes would commit above ts with reads nobody checked.  Its
 * mode was decided before any write (am/visibility.c, fps_ts_mode), so a
 * write here means the statement was guessed read-only wrongly, or that
 * READ ONLY was undone since (ROLLBACK TO a savepoint that set it, the end
 * of a function whose SET clause set it): fail it, and stop reading at a
 * timestamp on that ground in this session, so that the retry is
 * validated.  (READ ONLY transactions cannot write fpsketch tables.)
 */
void
fps_txn_refuse_write_at_ts(Oid relid)
{
	if (fps_txn.ts_guessed)
		ts_guess_disabled = true;
	else if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot write fpsketch tables in a read-only transaction")));
	else
		ts_read_only_undone = true;
	fps_abort(FPS_ABORT_READ_ONLY_GUESS, relid);
}

/* The snapshot an MVTO transaction that begins with a write reads at. */
static Snapshot
ts_base_snapshot(void)
{
	if (IsolationUsesXactSnapshot())
		return GetTransactionSnapshot();
	if (ActiveSnapshotSet())
		return GetActiveSnapshot();
	return GetLatestSnapshot();
}

/*
 * A write needed a pin that the pool would not lend, and its table could
 * not be taken instead (am/track.c), while the transaction is still within
 * what it may borrow alone: other transactions hold the pool, or the login
 * role's share of it.  A retry can succeed once they end, so it is a 40001,
 * whose DETAIL says who holds the pins (what fpsketch_pool_pins shows
 * everyone anyway).  Not "the exact table is full": the table has room,
 * the budget keeps it for others.
 */
void
fps_abort_pool_held(Oid relid)
{
	char	   *relname = get_rel_name(relid);
	Oid			me = GetAuthenticatedUserId();
	Oid			top = InvalidOid;
	int			top_pins = 0;
	char	   *name;

	/* the counts are those of the refusal: the holders may have ended */
	LWLockAcquire(fps_pool->lock, LW_SHARED);
	for (int i = 0; i < fps_pool->nslots; i++)
	{
		FpsPoolSlot *slot = &fps_pool->slots[i];

		if (!OidIsValid(slot->roleid))
			continue;
		if (slot->pins > top_pins)
		{
			top = slot->roleid;
			top_pins = slot->pins;
		}
	}
	LWLockRelease(fps_pool->lock);

	fps_atomic_add(&fps_counters->aborts[FPS_ABORT_POOL_HELD], 1);
	fps_relstats_abort(FPS_ABORT_POOL_HELD, relid, -1);
	if (fps_txn.pins_refusal == FPS_PINS_ROLE_HELD)
	{
		name = GetUserNameFromId(me, true);
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to the role's other transactions holding its share of the fpsketch pin pool"),
				 errdetail("A row of relation \"%s\" could not be pinned: the transactions of role \"%s\" hold %d pins of the shared pool, the most one role may hold (fpsketch.max_pool_pins_per_role = %d).",
						   relname ? relname : "?", name ? name : "?",
						   refused_role_pins, pins_role_limit()),
				 errhint("The transaction might succeed if retried once the role's other transactions have ended; fpsketch_pool_pins shows what each role holds.")));
	}
	name = OidIsValid(top) ? GetUserNameFromId(top, true) : NULL;
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to other transactions holding the fpsketch pin pool"),
			 errdetail("A row of relation \"%s\" could not be pinned: the shared pool is held by other transactions (%d of its %d pins); role \"%s\" holds the most, %d pins.",
					   relname ? relname : "?", refused_pool_pins, pins_pool_size,
					   name ? name : "?", top_pins),
			 errhint("The transaction might succeed if retried once they have ended; fpsketch_pool_pins shows what each role holds, and pg_terminate_backend() or idle_in_transaction_session_timeout ends idle transactions.")));
}

/*
 * Pin key (INCREF) and add it to the access set at map slot s.  Raises
 * 40001 if the exact table has no room: never an out-of-memory error a
 * client would not retry.
 */
static FpsAccess *
pin_access(fps_u64 key, Oid relid, uint32 s)
{
	FpsAccess  *access;
	FpsEntry   *entry;

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

	if (unlikely(fps_txn.ts_mode) && fps_protocol == FPS_PROTOCOL_TICTOC)
		fps_txn_refuse_write_at_ts(relid);

	entry = fps_incref(fps_sketch, key);
	if (entry == NULL)
		fps_abort(FPS_ABORT_TABLE_FULL, relid);

	if (fps_timestamp_ordered() && fps_txn.sto_ts == 0)
	{
		/* MVTO reads at its ts from the first access on, a write included */
		if (fps_protocol == FPS_PROTOCOL_MVTO && !fps_txn.ts_mode)
			fps_txn_begin_ts(ts_base_snapshot());
		else
			sto_begin(&fps_txn);
	}

	access = &fps_txn.accesses[fps_txn.naccesses];
	memset(access, 0, sizeof(FpsAccess));
	access->key = key;
	access->entry = entry;
	access->relid = relid;
	access->row_group = FPS_NO_ROW_GROUP;	/* track.c names a row key's */
	fps_txn.map[s] = fps_txn.naccesses++;
	fps_txn.active = true;
	return access;
}

static void
access_set_init(void)
{
	fps_txn.maxaccesses = 256;
	fps_txn.accesses = MemoryContextAlloc(TopMemoryContext,
										  sizeof(FpsAccess) * fps_txn.maxaccesses);
	map_rebuild(1024);
	before_shmem_exit(fps_before_shmem_exit, 0);
}

/*
 * The access for a coarse key (a relation's or escalation key), pinning it
 * on first touch.  Not limited by the pin budget.
 */
FpsAccess *
fps_txn_access(fps_u64 key, Oid relid)
{
	uint32		s;
	FpsAccess  *access;

	if (unlikely(fps_txn.map == NULL))
		access_set_init();
	access = map_find(key, &s);
	if (access != NULL)
		return access;
	return pin_access(key, relid, s);
}

/* fps_txn_try_access() and fps_txn_try_read_access() */
static FpsAccess *
try_fine_access(fps_u64 key, Oid relid, bool read)
{
	uint32		s;
	FpsAccess  *access;

	if (unlikely(fps_txn.map == NULL))
		access_set_init();
	access = map_find(key, &s);
	if (access != NULL)
		return access;
	if (unlikely(pins_guaranteed < 0))
		pin_budget_init();
	/* the limit is pins_guaranteed at least: a bound that skips most calls */
	if (read && unlikely(fps_txn.nfine >= pins_guaranteed - pins_guaranteed / 8) &&
		fps_timestamp_ordered())
	{
		int			own_limit = pins_guaranteed +
			Min(pins_borrow_limit(), pins_role_limit());

		if (fps_txn.nfine >= own_limit - own_limit / 8)
		{
			fps_txn.pins_refusal = FPS_PINS_OWN_LIMIT;
			fps_atomic_add(&fps_counters->pins_refused, 1);
			return NULL;
		}
	}
	if (!pin_budget_allows())
	{
		fps_atomic_add(&fps_counters->pins_refused, 1);
		if (fps_txn.pins_refusal == FPS_PINS_ROLE_HELD)
			fps_atomic_add(&fps_counters->pins_refused_role, 1);
		return NULL;
	}
	access = pin_access(key, relid, s);
	fps_txn.nfine++;
	return access;
}

/*
 * The access for a fine key (a row's or an equality prefix's), pinning it
 * on first touch if the pin budget allows; else NULL.
 */
FpsAccess *
fps_txn_try_access(fps_u64 key, Oid relid)
{
	return try_fine_access(key, relid, false);
}

/*
 * The same for a read, which under STO and MVTO leaves an eighth of the
 * transaction's own limit to its writes: past the rest, reads escalate (the
 * caller reads the relation's escalation or relation key instead), so that
 * a transaction that read much can still write a few rows.  helper-26:
 * under STO, whose writes cannot escalate, a transaction that counted 17
 * tables of 1000 rows (each below fpsketch.escalation_threshold) had no pin
 * left for a one-row INSERT, which failed with 54000 on every retry.  Under
 * TicToc a write past the budget takes its table in ACCESS EXCLUSIVE mode
 * instead (am/track.c), and reads use the whole budget, as before.
 */
FpsAccess *
fps_txn_try_read_access(fps_u64 key, Oid relid)
{
	return try_fine_access(key, relid, true);
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
fps_txn_read_replaceable(const FpsAccess *access, uint32 statement)
{
	if (!access->is_read)
		return true;			/* only written, or forgotten already */
	return !access->is_phantom && access->nreads == 1 && statement != 0 &&
		access->read_stmt == statement;
}

/*
 * Forget the read that fps_txn_read_replaceable() allowed to replace;
 * *saved keeps it for fps_txn_restore_read().
 */
void
fps_txn_forget_read(FpsAccess *access, FpsAccess *saved)
{
	*saved = *access;
	access->is_read = false;
	access->nreads = 0;
	access->read_stmt = 0;
	access->observed = 0;
}

/*
 * The statement failed before it read the newer version (a savepoint may
 * catch that and go on): the transaction saw the version it read before,
 * so that read stands again, as fps_txn_forget_read() found it.  By key:
 * the access array may have moved since.
 */
void
fps_txn_restore_read(const FpsAccess *saved)
{
	FpsAccess  *access = fps_txn_lookup(saved->key);

	if (access == NULL)
		return;					/* accesses are kept until the end: not reached */
	access->is_read = saved->is_read;
	access->nreads = saved->nreads;
	access->read_stmt = saved->read_stmt;
	access->last_read_stmt = saved->last_read_stmt;
	access->effects_at_last_read = saved->effects_at_last_read;
	access->observed = saved->observed;
	access->read_zero = saved->read_zero;
	access->first_tid = saved->first_tid;
	access->first_xmin = saved->first_xmin;
}

/* ---- relations touched ---- */

static inline uint32
relmap_slot(Oid relid, int size)
{
	return (uint32) ((relid * UINT64CONST(0x9E3779B97F4A7C15)) >> 40) & (size - 1);
}

static void
relmap_rebuild(int size)
{
	int		   *map = MemoryContextAlloc(TopMemoryContext, sizeof(int) * size);

	if (fps_txn.relmap)
		pfree(fps_txn.relmap);
	fps_txn.relmap = map;
	fps_txn.relmapsize = size;
	memset(map, -1, sizeof(int) * size);
	for (int i = 0; i < fps_txn.nrels; i++)
	{
		uint32		s = relmap_slot(fps_txn.rels[i].relid, size);

		while (map[s] >= 0)
			s = (s + 1) & (size - 1);
		map[s] = i;
	}
}

/*
 * The state of relid in this transaction if it has one (nothing added, so
 * that pointers to other relations' states stay valid).
 */
FpsRelState *
fps_txn_rel_find(Oid relid)
{
	uint32		s;

	if (fps_txn.last_rel >= 0 && fps_txn.rels[fps_txn.last_rel].relid == relid)
		return &fps_txn.rels[fps_txn.last_rel];
	if (fps_txn.rels == NULL)
		return NULL;
	for (s = relmap_slot(relid, fps_txn.relmapsize); fps_txn.relmap[s] >= 0;
		 s = (s + 1) & (fps_txn.relmapsize - 1))
		if (fps_txn.rels[fps_txn.relmap[s]].relid == relid)
		{
			fps_txn.last_rel = fps_txn.relmap[s];
			return &fps_txn.rels[fps_txn.last_rel];
		}
	return NULL;
}

/*
 * The state of relid in this transaction, added on first touch.  As many
 * relations as the transaction opens: a scan of a partitioned table with
 * thousands of partitions included.
 */
FpsRelState *
fps_txn_rel(Oid relid)
{
	FpsRelState *rs;
	uint32		s;

	if (fps_txn.last_rel >= 0 && fps_txn.rels[fps_txn.last_rel].relid == relid)
		return &fps_txn.rels[fps_txn.last_rel];
	if (unlikely(fps_txn.rels == NULL))
	{
		fps_txn.maxrels = 16;
		fps_txn.rels = MemoryContextAlloc(TopMemoryContext,
										  sizeof(FpsRelState) * fps_txn.maxrels);
		relmap_rebuild(64);
	}
	for (s = relmap_slot(relid, fps_txn.relmapsize); fps_txn.relmap[s] >= 0;
		 s = (s + 1) & (fps_txn.relmapsize - 1))
		if (fps_txn.rels[fps_txn.relmap[s]].relid == relid)
		{
			fps_txn.last_rel = fps_txn.relmap[s];
			return &fps_txn.rels[fps_txn.last_rel];
		}

	/* grow first: an out-of-memory ERROR leaves the state consistent */
	if (fps_txn.nrels >= fps_txn.maxrels)
	{
		fps_txn.rels = repalloc(fps_txn.rels, sizeof(FpsRelState) * fps_txn.maxrels * 2);
		fps_txn.maxrels *= 2;
	}
	if (fps_txn.nrels * 2 >= fps_txn.relmapsize)
	{
		relmap_rebuild(fps_txn.relmapsize * 2);
		s = relmap_slot(relid, fps_txn.relmapsize);
		while (fps_txn.relmap[s] >= 0)
			s = (s + 1) & (fps_txn.relmapsize - 1);
	}
	rs = &fps_txn.rels[fps_txn.nrels];
	memset(rs, 0, sizeof(FpsRelState));
	rs->relid = relid;
	rs->escalation = -1;
	fps_txn.relmap[s] = fps_txn.nrels;
	fps_txn.last_rel = fps_txn.nrels++;
	fps_txn.active = true;		/* so that the transaction's end resets this */
	return rs;
}

/*
 * Keep the relation locked in mode until the transaction ends, even if the
 * subtransaction that locked it rolls back.  fpsketch reasons from locks: a
 * writer that holds a relation ACCESS EXCLUSIVE, or rewrites it, or a DDL
 * statement reading it under SHARE, takes it that no other transaction has
 * the relation's keys pinned, or writes it.  Pins and read-set entries
 * outlive a rolled-back subtransaction (its reads may have steered what the
 * transaction did next), so its locks must too, as the top-level
 * transaction's.  The subtransaction holds the lock already, so this never
 * waits; at the top level there is nothing to do.  No invalidation
 * messages are processed here (LockAcquire, not LockRelationOid): the
 * relation is in use by the caller.
 */
void
fps_txn_keep_lock(FpsRelState *rs, LOCKMODE mode)
{
	if (likely(rs->kept_locks & (1 << mode)))
		return;
	fps_txn_keep_relation_lock(rs->relid, mode);
	rs->kept_locks |= 1 << mode;
}

/*
 * The same for a relation without state here (a parent scanned through,
 * am/membership.c); the caller remembers that it kept it.
 */
void
fps_txn_keep_relation_lock(Oid relid, LOCKMODE mode)
{
	ResourceOwner saved = CurrentResourceOwner;
	LOCKTAG		tag;
	LockAcquireResult result;

	if (GetCurrentTransactionNestLevel() <= 1)
		return;
	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	CurrentResourceOwner = TopTransactionResourceOwner;
	PG_TRY();
	{
		result = LockAcquire(&tag, mode, false, true);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = saved;
	}
	PG_END_TRY();
	if (result == LOCKACQUIRE_NOT_AVAIL)
		fps_abort(FPS_ABORT_LOCK_TIMEOUT, relid);
	fps_atomic_add(&fps_counters->kept_locks, 1);
}

/*
 * Count a row read through row keys; true once the transaction has read
 * fpsketch.escalation_threshold rows of the relation that way, when it
 * should read the relation through its escalation key instead.
 */
bool
fps_txn_count_row_read(FpsRelState *rs)
{
	return ++rs->nreads > fps_escalation_threshold;
}

/*
 * This transaction wrote rows of relid (or changed its key scheme) past
 * per-key tracking; InvalidOid: of relations not known here, any.  At
 * commit the floor rises under the keys of relid only (its key class,
 * cc/keys.c): every row, predicate and index key the write may have
 * changed is one of them, and DDL on one table then leaves the running
 * transactions that use others alone (helper-27: under STO a TRUNCATE
 * every 0.25 s in another database failed every 0.4 s transaction, on
 * every retry).
 */
void
fps_txn_note_untracked_write(Oid relid)
{
	if (fps_protocol == FPS_PROTOCOL_OFF)
		return;
	fps_require_shmem();
	if (unlikely(fps_txn.ts_mode) && fps_protocol == FPS_PROTOCOL_TICTOC)
		fps_txn_refuse_write_at_ts(relid);
	fps_txn.written_relations |= OidIsValid(relid) ?
		fps_relation_filter(relid) : FPS_ANY_RELATION;
	if (!OidIsValid(relid))
		fps_txn.floor_everywhere = true;
	else if (!fps_txn.floor_everywhere)
	{
		uint32		key_class = fps_relation_key_class(relid);
		int			i;

		for (i = 0; i < fps_txn.nfloor_classes; i++)
			if (fps_txn.floor_classes[i] == key_class)
				break;
		if (i == fps_txn.nfloor_classes)
		{
			if (i == FPS_MAX_FLOOR_CLASSES)
				fps_txn.floor_everywhere = true;
			else
				fps_txn.floor_classes[fps_txn.nfloor_classes++] = key_class;
		}
	}
	fps_txn.raise_floor = true;
	fps_txn.wrote = true;
	fps_txn.active = true;
}

/*
 * The same for a change that other relations' readers see: a change of
 * which tables a parent's scans reach (am/membership.c), DROP, ALTER TABLE
 * (which may detach, or recurse).  A reader that sees it through a
 * relation other than relid must read at a timestamp after it too, so the
 * floor of every key rises.
 */
void
fps_txn_note_untracked_write_everywhere(Oid relid)
{
	fps_txn_note_untracked_write(relid);
	if (fps_protocol != FPS_PROTOCOL_OFF)
		fps_txn.floor_everywhere = true;
}

/*
 * At commit, before the commit is visible (cc/tictoc.c, cc/sto.c): raise
 * the floor of the keys the untracked writes may have changed to ts.  A
 * transaction that noted no relation (a prepared one resolved after a
 * restart) raises every key's.
 */
void
fps_txn_raise_floor(FpsTxn *txn, fps_u64 ts)
{
	if (txn->floor_everywhere || txn->nfloor_classes == 0)
		fps_raise_floor(fps_sketch, ts);
	else
		for (int i = 0; i < txn->nfloor_classes; i++)
			fps_raise_class_floor(fps_sketch, txn->floor_classes[i], ts);
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

		/*
		 * What we wait for may be a prepared transaction that ended without
		 * anyone resolving it yet (COMMIT PREPARED by a path that does not
		 * reach our utility hook): about every 50 ms, resolve those.
		 */
		if (backoff->spins % 50 == 0 && fps_prepared_any())
			fps_prepared_resolve_ended();
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
	if (fps_timestamp_ordered())
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
	fps_txn.wrote = true;
	if (fps_timestamp_ordered())
		sto_write(access);
	else
		tictoc_write(access);
}

/*
 * The transaction replaced a version of a row whose other column groups it
 * does not write (column groups): it must still commit after the writers
 * of those groups, whose versions it replaced in heap's chain of the row,
 * so that versions and their commit timestamps stay in the same order
 * (a timestamp snapshot reads the version whose interval holds its ts).
 */
void
cc_follow(FpsAccess *access)
{
	access->follows = true;
	if (fps_timestamp_ordered())
		sto_follow(access);
}

/*
 * A gap key whose entry's inserter committed (am/gap.c): this writer
 * commits after it, so after every reader of the gap that entry split.
 */
void
cc_phantom_follow(FpsAccess *access)
{
	if (fps_timestamp_ordered())
		sto_follow(access);
	else
		tictoc_phantom_follow(access);
}

void
cc_phantom_read(FpsAccess *access)
{
	if (!access->is_read)
	{
		FpsRelState *rs = fps_txn_rel_find(access->relid);

		if (rs != NULL)
			rs->stat_predicate_reads++;
	}
	if (fps_timestamp_ordered())
		sto_phantom_read(access);
	else
		tictoc_phantom_read(access);
}

void
cc_phantom_write(FpsAccess *access)
{
	fps_txn.wrote = true;
	fps_txn.written_relations |= fps_relation_filter(access->relid);
	if (!access->is_write)
	{
		FpsRelState *rs = fps_txn_rel_find(access->relid);

		if (rs != NULL)
			rs->stat_predicate_writes++;
	}
	if (fps_timestamp_ordered())
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
	if (fps_timestamp_ordered())
		return true;
	return tictoc_phantom_unchanged(access);
}

/* ---- reads at a timestamp (am/visibility.c) ---- */

/*
 * Keys this transaction raised to its ts already (a raise lasts: rts only
 * grows), in a direct-mapped table tagged with the transaction's
 * generation, so that resetting it costs nothing.
 */
#define FPS_TS_RAISED 4096
static struct
{
	fps_u64		key;
	uint32		generation;
}			ts_raised[FPS_TS_RAISED];

/*
 * Start reading at a timestamp, at the transaction's first access: its
 * snapshot stays registered (the xmin horizon that keeps the versions it
 * may read), and its ts is published for the map's drop rule.
 *
 * The order matters (STO, MVTO): the snapshot was taken before the ts is
 * drawn, so every transaction it sees completed drew a smaller ts
 * (xid_at_ts() reads those as before ts without the map); and the map's
 * slot takes a bound below the ts before it is drawn, so that no entry
 * above the ts is dropped in between.
 */
void
fps_txn_begin_ts(Snapshot snapshot)
{
	fps_txn.ts_snapshot = RegisterSnapshotOnOwner(snapshot, TopTransactionResourceOwner);
	/* the snapshot may be older than this call, not than the last end */
	fps_txn.ts_relcache_invalidations = fps_relcache_invalidations_at_xact_end;
	fps_txn.ts_mode = true;
	fps_txn.mode_decided = true;
	fps_txn.active = true;		/* the transaction's end resets the mode */
	if (fps_timestamp_ordered())
	{
		/* the first access decides the mode: no ts drawn yet */
		Assert(fps_txn.sto_ts == 0);
		fps_reader_begin(fps_txn.sto_ts != 0 ? fps_txn.sto_ts :
						 Max(fps_atomic_load(&fps_counters->sto_clock), 1));
		if (fps_txn.sto_ts == 0)
			sto_begin(&fps_txn);
		fps_txn.ts = fps_reader_ts(fps_txn.sto_ts);
	}
	else
	{
		fps_reader_begin(0);
		fps_txn.ts = fps_reader_ts(0);
	}
	fps_atomic_add(&fps_counters->ts_snapshots, 1);
	if (++fps_txn.ts_generation == 0)
		++fps_txn.ts_generation;
}

/*
 * The entry a read at ts has pinned while it may wait: an interrupt (cancel,
 * statement_timeout) raises an ERROR from the wait, and the abort that
 * follows (of the transaction, or of the subtransaction that caught the
 * ERROR), or the next read at ts, unpins it.
 */
static FpsEntry *ts_read_pin = NULL;

static void ts_read_unpin(void);

static FpsEntry *
ts_read_pin_key(fps_u64 key, Oid relid)
{
	if (ts_read_pin != NULL)
		ts_read_unpin();
	ts_read_pin = fps_incref(fps_sketch, key);
	if (ts_read_pin == NULL)
		fps_abort(FPS_ABORT_TABLE_FULL, relid);
	return ts_read_pin;
}

static void
ts_read_unpin(void)
{
	FpsEntry   *entry = ts_read_pin;

	ts_read_pin = NULL;
	if (entry != NULL)
		fps_decref(fps_sketch, entry);
}

/*
 * A read at ts waited too long for key's entry: name the prepared
 * transaction that holds it, if one does, before the pin (and with it the
 * entry) goes.
 */
static pg_attribute_noreturn() void
ts_read_timed_out(FpsEntry *entry, Oid relid, bool predicate)
{
	char		gid[GIDSIZE];
	bool		prepared_holder = fps_prepared_lock_gid(entry, gid);

	ts_read_unpin();
	if (prepared_holder)
		fps_abort_prepared(relid, -1, gid, predicate);
	fps_abort(FPS_ABORT_LOCK_TIMEOUT, relid);
}

/*
 * STO and MVTO: the keys read at ts, for a floor commit to validate (sto.c,
 * validate_ts_reads_at_floor).  Row keys are bounded per relation by
 * escalation already, predicate keys are not (one absent-key lookup per
 * statement, in a long loop).  Past FPS_TS_READS_PER_ESCALATION times
 * fpsketch.escalation_threshold keys the list is full:
 *	- in a transaction that can write now, the relations read from then on
 *	  are read through their escalation keys (am/visibility.c asks
 *	  cc_ts_reads_full), which are remembered still: they stand for the
 *	  keys that are not;
 *	- in one that is read-only now, nothing is escalated (a report over a
 *	  busy table must not fail the older writers of every relation it reads
 *	  next) and the keys not remembered are counted lost: if a ROLLBACK TO
 *	  or the end of a function's SET clause later lifts READ ONLY and the
 *	  transaction commits at the floor, that commit is refused
 *	  (fps_txn_refuse_floor_commit_at_ts).
 * 16 bytes a key, kept in TopMemoryContext.
 */
#define FPS_TS_READS_PER_ESCALATION 64
#define FPS_TS_READS_KEPT 4096
#define FPS_TS_READS_MAX (4 * 1024 * 1024)	/* 64 MB, whatever the threshold */

static int64
ts_reads_bound(void)
{
	return Min((int64) FPS_TS_READS_PER_ESCALATION * fps_escalation_threshold,
			   FPS_TS_READS_MAX);
}

static bool
ts_reads_at_bound(void)
{
	return (int64) fps_txn.nts_reads >= ts_reads_bound();
}

bool
cc_ts_reads_full(void)
{
	return fps_timestamp_ordered() && !XactReadOnly && ts_reads_at_bound();
}

static void
remember_ts_read(fps_u64 key, Oid relid, bool predicate)
{
	FpsTsRead  *r;

	/*
	 * TicToc refuses writes at ts (fps_txn_refuse_write_at_ts).  STO does
	 * not: a transaction begun READ ONLY reads at ts, and may write once a
	 * ROLLBACK TO or the end of a function's SET clause lifts READ ONLY.
	 */
	if (!fps_timestamp_ordered())
		return;
	if (XactReadOnly && ts_reads_at_bound())
	{
		fps_txn.ts_reads_overflowed = true;
		return;
	}
	if (fps_txn.nts_reads >= fps_txn.maxts_reads)
	{
		int			newmax = Max(fps_txn.maxts_reads * 2, 256);

		fps_txn.ts_reads = fps_txn.ts_reads == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(FpsTsRead) * newmax) :
			repalloc(fps_txn.ts_reads, sizeof(FpsTsRead) * newmax);
		fps_txn.maxts_reads = newmax;
	}
	r = &fps_txn.ts_reads[fps_txn.nts_reads++];
	r->key = key;
	r->relid = relid;
	r->predicate = predicate;
}

/*
 * A floor commit of a transaction that read more keys at ts, while it was
 * read-only, than it could remember: what it read cannot be checked.  Under
 * STO the session's READ ONLY transactions stop reading at ts (as when
 * TicToc refuses a write at ts), so a retry validates pinned reads: a
 * 40001.  MVTO reads at ts always, and a retry would fail the same way: not
 * a 40001.
 */
void
fps_txn_refuse_floor_commit_at_ts(FpsTxn *txn)
{
	Oid			relid = txn->nts_reads > 0 ? txn->ts_reads[0].relid : InvalidOid;

	/* the DETAIL names a relation it writes */
	for (int i = 0; i < txn->naccesses; i++)
		if (txn->accesses[i].is_write)
		{
			relid = txn->accesses[i].relid;
			break;
		}

	/* no longer read-only: the session stops guessing, or reading at ts */
	if (fps_protocol == FPS_PROTOCOL_STO)
		fps_txn_refuse_write_at_ts(relid);
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("fpsketch: transaction read too many keys at its timestamp to commit at the floor"),
			 errdetail("It read more than %d keys while it was read-only, then ran DDL or wrote new storage, which commits it at the floor, where every read must be checked.",
					   (int) ts_reads_bound()),
			 errhint("Run the DDL in a transaction of its own, or raise fpsketch.escalation_threshold.")));
}

/* At the transaction's end: a list grown by a large one is given back. */
static void
forget_ts_reads(void)
{
	fps_txn.nts_reads = 0;
	fps_txn.ts_reads_overflowed = false;
	if (fps_txn.maxts_reads > FPS_TS_READS_KEPT)
	{
		pfree(fps_txn.ts_reads);
		fps_txn.ts_reads = NULL;
		fps_txn.maxts_reads = 0;
	}
}

/*
 * Read key at the transaction's ts: raise its rts (no pin kept).  False if
 * an older writer holds it (STO, MVTO): the caller waits for that writer,
 * whose top-level xid *holder names if the writer recorded itself, and
 * asks again.
 */
bool
cc_ts_read_key(fps_u64 key, Oid relid, TransactionId *holder)
{
	uint32		slot = (uint32) (key ^ (key >> 32)) & (FPS_TS_RAISED - 1);
	FpsAccess  *own;
	FpsEntry   *entry;
	bool		done;

	*holder = InvalidTransactionId;
	if (ts_raised[slot].key == key && ts_raised[slot].generation == fps_txn.ts_generation)
		return true;
	entry = ts_read_pin_key(key, relid);
	if (fps_timestamp_ordered())
	{
		own = fps_txn_lookup(key);
		done = sto_ts_read(entry, fps_txn.ts, own != NULL && own->locked);
		if (!done)
			*holder = fps_lock_holder_xid(entry);
	}
	else if (!(done = tictoc_ts_read(entry, fps_txn.ts)))
		ts_read_timed_out(entry, relid, false);
	ts_read_unpin();
	if (done)
	{
		remember_ts_read(key, relid, false);
		ts_raised[slot].key = key;
		ts_raised[slot].generation = fps_txn.ts_generation;
	}
	return done;
}

/*
 * Has this transaction read the predicate key at its ts (raised its
 * readers_rts, and waited for the committers registered before)?  False
 * when not known: the cache of keys raised forgets.
 */
bool
cc_ts_predicate_raised(fps_u64 key)
{
	uint32		slot = (uint32) (key ^ (key >> 32)) & (FPS_TS_RAISED - 1);

	return fps_txn.ts_generation != 0 && ts_raised[slot].key == key &&
		ts_raised[slot].generation == fps_txn.ts_generation;
}

/*
 * Read a predicate key at the transaction's ts: raise its readers_rts, so
 * that writers registering later commit after ts, then wait until those
 * registered before (which may commit at or below ts, and must be in the
 * map of commit timestamps before this reader judges their rows) are done.
 * stands_for_relation: the relation's escalation key, remembered for a
 * floor commit even once the list is full (remember_ts_read).
 */
void
cc_ts_read_predicate(fps_u64 key, Oid relid, bool stands_for_relation)
{
	uint32		slot = (uint32) (key ^ (key >> 32)) & (FPS_TS_RAISED - 1);
	FpsEntry   *entry;
	FpsBackoff	backoff;
	fps_u64		counted_committers = 0;

	if (ts_raised[slot].key == key && ts_raised[slot].generation == fps_txn.ts_generation)
		return;
	entry = ts_read_pin_key(key, relid);
	fps_backoff_init(&backoff);
	if (fps_entry_readers_rts_load(entry) < fps_txn.ts)
		fps_atomic_max(&entry->readers_rts, fps_txn.ts);
	for (;;)
	{
		fps_u64		committers = fps_committers(fps_entry_committers_load(entry));

		if (committers == 0)
			break;

		/*
		 * Prepared inserters that commit after ts: no wait (cc/prepared.c).
		 * Counting them scans the prepared keys: again only when the number
		 * of committers changed.
		 */
		if (committers != counted_committers && fps_prepared_any())
		{
			counted_committers = committers;
			if (committers == fps_prepared_committers_after(entry, fps_txn.ts) &&
				committers == fps_committers(fps_entry_committers_load(entry)))
				break;
		}
		if (!fps_backoff_wait(&backoff))
			ts_read_timed_out(entry, relid, true);
	}
	ts_read_unpin();
	if (stands_for_relation || !cc_ts_reads_full())
		remember_ts_read(key, relid, true);
	ts_raised[slot].key = key;
	ts_raised[slot].generation = fps_txn.ts_generation;
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
	fps_txn.floor_everywhere = false;
	fps_txn.nfloor_classes = 0;
	if (fps_txn.nrels > 0)
		memset(fps_txn.relmap, -1, sizeof(int) * fps_txn.relmapsize);
	fps_txn.nrels = 0;
	fps_txn.last_rel = -1;
	pin_budget_release();
	fps_txn.commit_ts = 0;
	fps_txn.sto_ts = 0;
	/* unregistered in PRE_COMMIT, or by the resource owner on abort */
	fps_txn.held_snapshot = NULL;
	fps_txn.wrote = false;
	fps_txn.written_relations = 0;
	fps_txn.published_xid = InvalidTransactionId;
	if (fps_txn.ts_mode)
		fps_reader_end();
	fps_txn.mode_decided = false;
	fps_txn.ts_mode = false;
	fps_txn.ts_guessed = false;
	fps_txn.ts = 0;
	fps_txn.ts_snapshot = NULL;
	forget_ts_reads();
}

/*
 * PRE_COMMIT of a writer, once its commit_ts is chosen: into the map of
 * commit timestamps, before the commit becomes visible.
 */
static void
publish_commit_ts(void)
{
	TransactionId xid = GetTopTransactionIdIfAny();

	if (!fps_txn.wrote || !TransactionIdIsValid(xid))
		return;
	fps_commit_ts_publish(xid, fps_txn.commit_ts, fps_txn.written_relations);
	fps_txn.published_xid = xid;
}

/* COMMIT or ABORT (or exit) of a transaction that published: no ERROR */
static void
finish_commit_ts(bool committed)
{
	if (TransactionIdIsValid(fps_txn.published_xid))
		fps_commit_ts_finish(fps_txn.published_xid, committed);
	fps_txn.published_xid = InvalidTransactionId;
}

/*
 * PRE_COMMIT and PRE_PREPARE: the last read is done (deferred triggers ran
 * before); validate and publish the commit timestamp.
 */
static void
validate(void)
{
	if (fps_txn.held_snapshot != NULL)
	{
		UnregisterSnapshotFromOwner(fps_txn.held_snapshot,
									TopTransactionResourceOwner);
		fps_txn.held_snapshot = NULL;
	}
	if (fps_txn.ts_snapshot != NULL)
	{
		UnregisterSnapshotFromOwner(fps_txn.ts_snapshot,
									TopTransactionResourceOwner);
		fps_txn.ts_snapshot = NULL;
	}
	if (fps_protocol == FPS_PROTOCOL_TICTOC)
		tictoc_validate(&fps_txn);
	else
		sto_pre_commit(&fps_txn);
	publish_commit_ts();
}

/*
 * Test builds only (-DFPS_TEST_COMMIT_WINDOW, scripts/test.sh): hold this
 * commit for fpsketch_test.commit_window_ms between the moment it became
 * visible (ProcArrayEndTransaction) and the installs below, so that the
 * specs in test/window can run a statement of another session there.  The
 * window is otherwise microseconds long, but real: a descheduled backend
 * can sit in it for milliseconds.  Ordinary builds compile nothing here.
 */
static inline void
hold_commit_window(void)
{
#ifdef FPS_TEST_COMMIT_WINDOW
	const char *ms = GetConfigOption("fpsketch_test.commit_window_ms", true, false);

	if (ms != NULL && atoi(ms) > 0)
		pg_usleep(atoi(ms) * 1000L);
#endif
}

static void
fps_xact_callback(XactEvent event, void *arg)
{
	if (!fps_txn.active)
		return;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			validate();
			break;

		case XACT_EVENT_PRE_PREPARE:
			/* PrepareTransaction assigns an xid anyway: the map needs it now */
			if (fps_txn.wrote)
				(void) GetTopTransactionId();
			validate();
			fps_prepared_reserve(&fps_txn);
			break;

		case XACT_EVENT_PREPARE:
			/* no ERROR, no palloc from here on: the transaction is prepared */
			ts_read_unpin();
			fps_prepared_hand_over(&fps_txn);
			/* the prepared transaction's slot finishes its map entry */
			fps_txn.published_xid = InvalidTransactionId;
			fps_relstats_flush(&fps_txn, true);
			txn_reset();
			break;

		case XACT_EVENT_COMMIT:
			/* no ERROR, no palloc from here on */
			hold_commit_window();
			ts_read_unpin();
			finish_commit_ts(true);
			if (fps_protocol == FPS_PROTOCOL_TICTOC)
				tictoc_commit(&fps_txn);
			else
				sto_finish(&fps_txn, true);
			fps_relstats_flush(&fps_txn, true);
			txn_reset();
			break;

		case XACT_EVENT_ABORT:
			ts_read_unpin();
			fps_prepared_abort();
			finish_commit_ts(false);
			if (fps_protocol == FPS_PROTOCOL_TICTOC)
				tictoc_abort(&fps_txn);
			else
				sto_finish(&fps_txn, false);
			fps_relstats_flush(&fps_txn, false);
			txn_reset();
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
		ts_read_unpin();
		fps_prepared_abort();
		if (TransactionIdIsValid(fps_txn.published_xid))
			finish_commit_ts(TransactionIdDidCommit(fps_txn.published_xid));
		if (fps_protocol == FPS_PROTOCOL_TICTOC)
			tictoc_abort(&fps_txn);
		else
			sto_finish(&fps_txn, false);
		txn_reset();
	}
}

/*
 * A subtransaction that caught the ERROR ending a wait at ts (an EXCEPTION
 * block, a savepoint) lets its transaction go on and commit: the pin of the
 * read that waited goes with the subtransaction.
 */
static void
fps_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && fps_sketch != NULL)
		ts_read_unpin();
}

void
fps_txn_register_callbacks(void)
{
	RegisterXactCallback(fps_xact_callback, NULL);
	RegisterSubXactCallback(fps_subxact_callback, NULL);
}
