/*-------------------------------------------------------------------------
 *
 * prepared.c
 *	  Two-phase commit: what a prepared transaction keeps of the FPSketch
 *	  between PREPARE TRANSACTION and COMMIT/ROLLBACK PREPARED.
 *
 * PostgreSQL 15 has no two-phase resource manager for extensions, so the
 * transaction's own outcome, as PostgreSQL records it (clog and the proc
 * array), is the only truth, and everything here is resolved from it:
 *
 *	XACT_EVENT_PRE_PREPARE	validate as PRE_COMMIT does (cc/txn.c), then
 *							reserve a slot and copy the keys the prepared
 *							transaction must keep (lock bits of its
 *							writes, committer registrations of phantom keys
 *							it wrote) into the shared key area, and write
 *							them to a file made durable before PREPARE's
 *							own WAL record.  An ERROR here, or later in
 *							PrepareTransaction (a duplicate gid), aborts the
 *							transaction: the backend still owns its keys,
 *							XACT_EVENT_ABORT releases them, and the slot and
 *							file go (fps_prepared_abort).
 *	XACT_EVENT_PREPARE		hand over: the slot now owns the copies (their
 *							pins and lock bits), the backend drops the rest.
 *							No ERROR from here on.
 *	COMMIT/ROLLBACK PREPARED	(any backend, any time, after a restart too)
 *							PostgreSQL records the outcome; the first backend
 *							that finds the xid no longer in progress installs
 *							(commit) or releases (rollback) exactly as the
 *							protocol's COMMIT or ABORT would: the session of
 *							COMMIT PREPARED right after it (fpsketch.c), a
 *							reader waiting for one of the keys, or the first
 *							transaction after a restart.
 *
 * Why resolving from PostgreSQL's outcome is right in every order of
 * events: until COMMIT/ROLLBACK PREPARED removes the xid from the proc
 * array, the slot keeps every write key locked, so no reader can see the
 * versions it wrote without waiting (as between PRE_COMMIT and COMMIT of
 * an ordinary commit), and no other writer can install over them.  The
 * outcome is in clog before the xid leaves the proc array, so whoever sees
 * it gone reads the final outcome.  Resolution runs under the slot array's
 * lock, so it happens once.
 *
 * Restart.  Timestamps do not survive a restart; the files do.  At server
 * start (shmem_startup_hook, before recovery) every file is loaded: the
 * floor and the STO clock go above every timestamp the files hold, so that
 * no later transaction is ordered before a prepared one, and the write
 * keys are locked again for the recovered slot.  The first transaction
 * after recovery resolves the files of transactions that were never
 * prepared (a crash between the file and PREPARE's WAL record) or that
 * ended before the crash removed their file.
 *
 * A recovered or prepared transaction's xid stays in the proc array (a
 * dummy PGPROC, pid 0) until it ends; an xid that a live backend runs is
 * not the one a stale file names (after a crash an xid whose assignment
 * never reached the WAL may be handed out again): that file is released.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/stat.h>

#include "access/subtrans.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogdefs.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "cc.h"

int			fps_max_prepared_keys = 16384;

#define PREPARED_DIR		"pg_fpsketch/prepared"
#define PREPARED_MAGIC		0x46505350	/* "FPSP" */
#define PREPARED_VERSION	3	/* 3: keys in their relation's key class */
#define PREPARED_TEMP_SUFFIX	".tmp"

typedef enum PreparedState
{
	PREPARED_FREE,
	PREPARED_RESERVING,			/* PRE_PREPARE done, the backend owns it */
	PREPARED_HELD				/* owned by the prepared transaction */
} PreparedState;

typedef struct FpsPreparedXact
{
	PreparedState state;
	bool		recovered;		/* loaded from its file at server start */
	bool		confirmed;		/* recovered: found prepared since */
	bool		holds;			/* keys or a commit_ts: not only reads */
	TransactionId xid;
	Oid			dbid;
	fps_u64		commit_ts;
	TimestampTz prepared_at;
	int			first;			/* its keys: [first, first + nkeys) */
	int			nkeys;
	int			nlocked;
	char		gid[GIDSIZE];
} FpsPreparedXact;

/*
 * A relation that a prepared transaction wrote (it holds a lock on it
 * stronger than a reader's) but whose fpsketch state this server does not
 * have: the transaction was prepared on another server, before a failover
 * or the base backup this server was restored from, since the files are
 * not in WAL.  Its written keys are not locked here, so until it ends no
 * tracked transaction may use the relation.
 */
#define FPS_MAX_ORPHANS 1024
#define FPS_MAX_ORPHAN_XIDS 256

typedef struct FpsPreparedOrphan
{
	Oid			dbid;
	Oid			relid;
	TransactionId xid;			/* Invalid once it ended */
} FpsPreparedOrphan;

typedef struct FpsPreparedShared
{
	LWLock	   *lock;
	pg_atomic_uint32 nheld;		/* slots not free: the fast path's test */
	pg_atomic_uint32 unconfirmed;	/* recovered slots not resolved once */
	pg_atomic_uint32 orphans_checked;	/* looked for orphans since recovery */
	pg_atomic_uint32 norphans;	/* entries of orphans[] in use */
	pg_atomic_uint32 orphans_left;	/* of them, with a prepared xid */
	bool		orphans_everywhere;	/* orphans[] overflowed: every relation
									 * waits for every xid of orphan_xids[] */
	int			norphan_xids;
	TransactionId orphan_xids[FPS_MAX_ORPHAN_XIDS];
	FpsPreparedOrphan orphans[FPS_MAX_ORPHANS];
	int			nslots;
	int			capacity;		/* keys */
	int			keys_used;
	uint64		prepares;
	uint64		commits;
	uint64		rollbacks;
	FpsPreparedXact xacts[FLEXIBLE_ARRAY_MEMBER];
} FpsPreparedShared;

/* one key in a file */
typedef struct PreparedFileKey
{
	fps_u64		key;
	Oid			relid;
	uint8		row_group;
	bool		locked;
	bool		committing;
} PreparedFileKey;

typedef struct PreparedFileHeader
{
	uint32		magic;
	uint32		version;
	TransactionId xid;
	Oid			dbid;
	fps_u64		commit_ts;
	TimestampTz prepared_at;
	int32		nkeys;
	bool		holds;			/* see FpsPreparedXact */
	char		gid[GIDSIZE];
} PreparedFileHeader;

static void finish(FpsPreparedXact *x, bool committed);

static FpsPreparedShared *prepared;
static FpsAccess *prepared_keys;	/* capacity of them, after the slots */

/* this backend's slot between PRE_PREPARE and PREPARE, or -1 */
static int	my_slot = -1;

/* the gid of the PREPARE TRANSACTION this backend runs (fpsketch.c) */
static char prepare_gid[GIDSIZE];

static Size
slots_size(void)
{
	return add_size(offsetof(FpsPreparedShared, xacts),
					mul_size(max_prepared_xacts, sizeof(FpsPreparedXact)));
}

Size
fps_prepared_shmem_size(void)
{
	if (max_prepared_xacts == 0)
		return MAXALIGN(slots_size());
	return add_size(MAXALIGN(slots_size()),
					mul_size(fps_max_prepared_keys, sizeof(FpsAccess)));
}

void
fps_prepared_shmem_request(void)
{
	RequestNamedLWLockTranche("fpsketch prepared", 1);
}

static void
file_path(char *path, TransactionId xid)
{
	snprintf(path, MAXPGPATH, PREPARED_DIR "/%08X", xid);
}

/*
 * Where a file is written before it is renamed to its name: a backend that
 * dies while writing leaves a torn file only under this name, which server
 * start removes, instead of one under the real name, which it cannot read
 * and refuses to start for.
 */
static void
temp_file_path(char *path, TransactionId xid)
{
	snprintf(path, MAXPGPATH, PREPARED_DIR "/%08X" PREPARED_TEMP_SUFFIX, xid);
}

/* ---- the shared key area ---- */

static int
compare_ranges(const void *a, const void *b)
{
	const FpsPreparedXact *x = *(FpsPreparedXact *const *) a;
	const FpsPreparedXact *y = *(FpsPreparedXact *const *) b;

	return (x->first > y->first) - (x->first < y->first);
}

/* The slots that hold keys, in the order of their keys in the key area. */
static FpsPreparedXact **
slots_by_range(int *nused)
{
	FpsPreparedXact **used = palloc(sizeof(FpsPreparedXact *) * (prepared->nslots + 1));

	*nused = 0;
	for (int i = 0; i < prepared->nslots; i++)
		if (prepared->xacts[i].state != PREPARED_FREE && prepared->xacts[i].nkeys > 0)
			used[(*nused)++] = &prepared->xacts[i];
	qsort(used, *nused, sizeof(FpsPreparedXact *), compare_ranges);
	return used;
}

/* First fit in the key area for nkeys keys, or -1.  Caller holds the lock. */
static int
find_key_range(int nkeys)
{
	int			nused;
	FpsPreparedXact **used = slots_by_range(&nused);
	int			start = 0;
	int			i;

	for (i = 0; i < nused; i++)
	{
		if (used[i]->first - start >= nkeys)
			break;
		start = used[i]->first + used[i]->nkeys;
	}
	pfree(used);
	return prepared->capacity - start >= nkeys ? start : -1;
}

/*
 * Slide the held slots' keys down over the holes that ended transactions
 * left, so that the free keys form one range at the end: a PREPARE then
 * fails only when the keys it needs are not free at all, as the error
 * says (and as after a restart, which loads the files packed).  A slot
 * being reserved stays where it is: its backend copies its keys and
 * writes its file from them without the lock.  Everyone else reads a
 * slot's keys under the lock, which the caller holds exclusively.
 */
static void
compact_key_area(void)
{
	int			nused;
	FpsPreparedXact **used = slots_by_range(&nused);
	int			start = 0;
	int			i;

	for (i = 0; i < nused; i++)
	{
		FpsPreparedXact *x = used[i];

		if (x->state == PREPARED_HELD && x->first > start)
		{
			memmove(&prepared_keys[start], &prepared_keys[x->first],
					sizeof(FpsAccess) * x->nkeys);
			x->first = start;
		}
		start = x->first + x->nkeys;
	}
	pfree(used);
}

static int
free_slot(void)
{
	for (int i = 0; i < prepared->nslots; i++)
		if (prepared->xacts[i].state == PREPARED_FREE)
			return i;
	return -1;
}

/* Mark slot free.  Caller holds the lock. */
static void
release_slot(FpsPreparedXact *x)
{
	if (x->recovered && !x->confirmed)
		pg_atomic_fetch_sub_u32(&prepared->unconfirmed, 1);
	prepared->keys_used -= x->nkeys;
	x->state = PREPARED_FREE;
	x->xid = InvalidTransactionId;
	x->nkeys = 0;
	pg_atomic_fetch_sub_u32(&prepared->nheld, 1);
}

static inline bool
is_kept(const FpsAccess *a)
{
	return a->locked || a->committing;
}

/* ---- files ---- */

static void
write_file(FpsPreparedXact *x)
{
	char		path[MAXPGPATH];
	char		final_path[MAXPGPATH];
	PreparedFileHeader header;
	PreparedFileKey *keys;
	pg_crc32c	crc;
	int			fd;
	Size		keys_size = sizeof(PreparedFileKey) * x->nkeys;

	memset(&header, 0, sizeof(header));
	header.magic = PREPARED_MAGIC;
	header.version = PREPARED_VERSION;
	header.xid = x->xid;
	header.dbid = x->dbid;
	header.commit_ts = x->commit_ts;
	header.prepared_at = x->prepared_at;
	header.nkeys = x->nkeys;
	header.holds = x->holds;
	strlcpy(header.gid, x->gid, GIDSIZE);
	keys = palloc0(keys_size + 1);
	for (int i = 0; i < x->nkeys; i++)
	{
		FpsAccess  *a = &prepared_keys[x->first + i];

		keys[i].key = a->key;
		keys[i].relid = a->relid;
		keys[i].row_group = a->row_group;
		keys[i].locked = a->locked;
		keys[i].committing = a->committing;
	}
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &header, sizeof(header));
	COMP_CRC32C(crc, keys, keys_size);
	FIN_CRC32C(crc);

	temp_file_path(path, x->xid);
	fd = OpenTransientFile(path, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	errno = 0;
	if (write(fd, &header, sizeof(header)) != sizeof(header) ||
		write(fd, keys, keys_size) != keys_size ||
		write(fd, &crc, sizeof(crc)) != sizeof(crc))
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		unlink(path);
		errno = save_errno ? save_errno : ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	}
	if (pg_fsync(fd) != 0)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		unlink(path);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", path)));
	}
	if (CloseTransientFile(fd) != 0)
	{
		int			save_errno = errno;

		unlink(path);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", path)));
	}
	/* complete and durable: now under its name */
	file_path(final_path, x->xid);
	if (rename(path, final_path) != 0)
	{
		int			save_errno = errno;

		unlink(path);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename file \"%s\" to \"%s\": %m",
						path, final_path)));
	}
	/* the directory entry too: a lost file would unlock keys at restart */
	fsync_fname(PREPARED_DIR, true);
	pfree(keys);
}

/* No ERROR: runs where a transaction has ended. */
static void
remove_file(TransactionId xid)
{
	char		path[MAXPGPATH];

	file_path(path, xid);
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
	temp_file_path(path, xid);
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
}

/* ---- PREPARE ---- */

void
fps_prepared_remember_gid(const char *gid)
{
	strlcpy(prepare_gid, gid, GIDSIZE);
}

/*
 * A transaction validated for PREPARE: reserve what it keeps, and make it
 * durable before PostgreSQL writes PREPARE's record.  A transaction that
 * keeps nothing (it only read fpsketch tables) needs no slot: its reads
 * were validated at commit_ts, as at COMMIT.
 */
void
fps_prepared_reserve(FpsTxn *txn)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	FpsPreparedXact *x;
	int			nkeys = 0;
	int			nlocked = 0;
	int			slot;
	int			first = 0;
	int			i;

	if (max_prepared_xacts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("prepared transactions are disabled"),
				 errhint("Set max_prepared_transactions to a nonzero value.")));
	for (i = 0; i < txn->naccesses; i++)
	{
		if (is_kept(&txn->accesses[i]))
			nkeys++;
		if (txn->accesses[i].locked)
			nlocked++;
	}
	/*
	 * A transaction that only read fpsketch tables keeps nothing (its reads
	 * were validated at commit_ts, as at COMMIT), but it takes a slot and a
	 * file all the same: a prepared transaction without one is taken for one
	 * whose state was lost (find_orphans), and it may hold a writer's lock
	 * on a table (an UPDATE that found no row).
	 */
	if (!TransactionIdIsValid(xid))
		xid = GetTopTransactionId();

	/*
	 * Every WAL record of this xid durable first: after a crash, recovery
	 * then hands out xids above it, and the file cannot name another
	 * transaction (PREPARE's own record follows right after anyway).
	 */
	if (XactLastRecEnd != 0)
		XLogFlush(XactLastRecEnd);

	LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
	/* a stale file's slot for this very xid, which we run (see the header) */
	for (i = 0; i < prepared->nslots; i++)
		if (prepared->xacts[i].state == PREPARED_HELD &&
			prepared->xacts[i].xid == xid)
			finish(&prepared->xacts[i], false);
	slot = free_slot();
	if (slot >= 0 && nkeys > 0)
	{
		first = find_key_range(nkeys);
		/* enough keys free, but not in one range */
		if (first < 0 && prepared->capacity - prepared->keys_used >= nkeys)
		{
			compact_key_area();
			first = find_key_range(nkeys);
		}
	}
	if (slot < 0 || first < 0)
	{
		int			used = prepared->keys_used;

		LWLockRelease(prepared->lock);
		if (slot < 0)			/* as PostgreSQL's own MarkAsPreparing() says it */
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("maximum number of prepared transactions reached"),
					 errhint("Increase max_prepared_transactions (currently %d).",
							 max_prepared_xacts)));
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many fpsketch keys for a prepared transaction"),
				 errdetail("The transaction holds %d keys (rows and predicates it wrote); prepared transactions may hold %d in all, and %d are held now.",
						   nkeys, prepared->capacity, used),
				 errhint(nkeys > prepared->capacity ?
						 "Increase fpsketch.max_prepared_keys, or prepare smaller transactions." :
						 "Commit or roll back other prepared transactions, or increase fpsketch.max_prepared_keys.")));
	}
	x = &prepared->xacts[slot];
	x->state = PREPARED_RESERVING;
	x->recovered = false;
	x->confirmed = true;
	x->holds = nkeys > 0 || TransactionIdIsValid(txn->published_xid);
	x->xid = xid;
	x->dbid = MyDatabaseId;
	x->commit_ts = txn->commit_ts;
	x->prepared_at = GetCurrentTimestamp();
	x->first = first;
	x->nkeys = nkeys;
	x->nlocked = nlocked;
	strlcpy(x->gid, prepare_gid, GIDSIZE);
	prepare_gid[0] = '\0';
	prepared->keys_used += nkeys;
	pg_atomic_fetch_add_u32(&prepared->nheld, 1);
	my_slot = slot;
	LWLockRelease(prepared->lock);

	nkeys = 0;
	for (i = 0; i < txn->naccesses; i++)
		if (is_kept(&txn->accesses[i]))
			prepared_keys[first + nkeys++] = txn->accesses[i];

	/* an ERROR from here on: fps_prepared_abort frees the slot */
	write_file(x);
}

/*
 * XACT_EVENT_PREPARE: PostgreSQL has prepared the transaction.  The slot
 * takes over the keys it copied, with their pins and lock bits; the
 * backend unpins the rest.  No ERROR, no palloc.
 */
void
fps_prepared_hand_over(FpsTxn *txn)
{
	int			i;

	if (my_slot >= 0)
	{
		FpsPreparedXact *x = &prepared->xacts[my_slot];

		for (i = 0; i < x->nkeys; i++)
		{
			FpsAccess  *a = &prepared_keys[x->first + i];

			/* waiters ask the lock owner who holds it (fps_lock_holder_xid) */
			if (a->locked)
				fps_entry_set_lock_owner(a->entry, FPS_PREPARED_OWNER(my_slot));
		}
		LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
		x->state = PREPARED_HELD;
		if (x->holds)
			prepared->prepares++;
		LWLockRelease(prepared->lock);
		my_slot = -1;
	}
	for (i = 0; i < txn->naccesses; i++)
	{
		FpsAccess  *a = &txn->accesses[i];

		if (is_kept(a))
		{
			/* the slot's copy owns it now */
			a->locked = false;
			a->committing = false;
			continue;
		}
		fps_decref(fps_sketch, a->entry);
	}
}

/* ABORT of a transaction that had reserved a slot: no ERROR. */
void
fps_prepared_abort(void)
{
	FpsPreparedXact *x;

	if (my_slot < 0)
		return;
	x = &prepared->xacts[my_slot];
	remove_file(x->xid);
	LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
	release_slot(x);
	LWLockRelease(prepared->lock);
	my_slot = -1;
}

/* ---- COMMIT / ROLLBACK PREPARED ---- */

/*
 * Install (committed) or release as the protocol's COMMIT or ABORT would.
 * Caller holds the lock.  No ERROR.
 */
static void
finish(FpsPreparedXact *x, bool committed)
{
	FpsTxn		txn;
	int			i;

	memset(&txn, 0, sizeof(txn));
	txn.accesses = &prepared_keys[x->first];
	txn.naccesses = x->nkeys;
	txn.commit_ts = x->commit_ts;
	/* a slot is a writer's (it wrote keys or published a commit_ts): count it so */
	txn.raise_floor = x->holds;
	for (i = 0; i < x->nkeys; i++)
	{
		FpsAccess  *a = &txn.accesses[i];

		if (!a->locked)
			continue;
		fps_entry_set_lock_owner(a->entry, 0);

		/*
		 * TicToc: readers at a timestamp below commit_ts read the version
		 * before ours without waiting (tictoc_ts_read); had we committed, our
		 * install would have put the key after them.  Rolled back, the key
		 * must still not take a write at or below their ts.
		 */
		if (!committed && fps_protocol == FPS_PROTOCOL_TICTOC && x->commit_ts > 0)
		{
			fps_u64		word = fps_entry_load(a->entry);

			fps_atomic_store(&a->entry->word,
							 fps_word_make(true, fps_word_wts(word),
										   Max(fps_word_rts(word), x->commit_ts - 1)));
		}
	}
	if (fps_protocol == FPS_PROTOCOL_TICTOC)
	{
		if (committed)
			tictoc_commit(&txn);
		else
			tictoc_abort(&txn);
	}
	else
		sto_finish(&txn, committed);
	fps_commit_ts_finish(x->xid, committed);
	remove_file(x->xid);
	if (committed && x->holds)
		prepared->commits++;
	else if (x->holds)
		prepared->rollbacks++;
	release_slot(x);
}

/*
 * Resolve every prepared transaction PostgreSQL has finished with.  Cheap
 * when none is held.
 */
void
fps_prepared_resolve_ended(void)
{
	if (prepared == NULL || pg_atomic_read_u32(&prepared->nheld) == 0 ||
		RecoveryInProgress())
		return;
	LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < prepared->nslots; i++)
	{
		FpsPreparedXact *x = &prepared->xacts[i];

		if (x->state != PREPARED_HELD)
			continue;
		/*
		 * A stale file's xid that recovery has not handed out yet, or one so
		 * old that its commit status is gone (a restored backup): neither is
		 * a prepared transaction's.
		 */
		if (x->recovered && !x->confirmed &&
			(TransactionIdFollowsOrEquals(x->xid, ReadNextTransactionId()) ||
			 TransactionIdPrecedes(x->xid, ShmemVariableCache->oldestClogXid)))
		{
			finish(x, false);
			continue;
		}
		if (TransactionIdIsInProgress(x->xid))
		{
			/* a live backend's xid is not the one a stale file names */
			if (!x->recovered || BackendXidGetPid(x->xid) == 0)
			{
				if (x->recovered && !x->confirmed)
				{
					x->confirmed = true;
					pg_atomic_fetch_sub_u32(&prepared->unconfirmed, 1);
				}
				continue;
			}
			finish(x, false);
			continue;
		}
		finish(x, TransactionIdDidCommit(x->xid));
	}
	LWLockRelease(prepared->lock);
}

/* Is xid one of the slots'?  Caller holds the lock. */
static bool
xid_has_slot(TransactionId xid)
{
	for (int i = 0; i < prepared->nslots; i++)
		if (prepared->xacts[i].state != PREPARED_FREE && prepared->xacts[i].xid == xid)
			return true;
	return false;
}

/*
 * Once after recovery (a start, a crash restart, a promotion): find the
 * prepared transactions that wrote relations but have no slot (see
 * FpsPreparedOrphan), from the lock manager: a prepared transaction keeps
 * its locks in a dummy PGPROC, pid 0.  Every fpsketch transaction that
 * prepares has a slot (fps_prepared_reserve), so a prepared transaction
 * without one either never touched fpsketch tables (its relations are not
 * tracked, and their entries cost nothing) or lost its state.
 */
static void
find_orphans(void)
{
	LockData   *locks;
	int			n = 0;

	LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&prepared->orphans_checked) != 0)
	{
		LWLockRelease(prepared->lock);
		return;
	}
	locks = GetLockStatusData();
	for (int i = 0; i < locks->nelements; i++)
	{
		LockInstanceData *l = &locks->locks[i];
		VirtualTransactionId vxid;
		TransactionId xid;
		bool		have_more = false;
		int			j;

		if (l->pid != 0 || l->locktag.locktag_type != LOCKTAG_RELATION ||
			(l->holdMask & ~(LOCKBIT_ON(AccessShareLock) | LOCKBIT_ON(RowShareLock) |
							 LOCKBIT_ON(ShareLock))) == 0 ||
			!LocalTransactionIdIsValid(l->lxid))
			continue;
		vxid.backendId = l->backend;
		vxid.localTransactionId = l->lxid;
		xid = TwoPhaseGetXidByVirtualXID(vxid, &have_more);
		if (!TransactionIdIsValid(xid) || xid_has_slot(xid))
			continue;

		for (j = 0; j < prepared->norphan_xids; j++)
			if (prepared->orphan_xids[j] == xid)
				break;
		if (j == prepared->norphan_xids)
		{
			if (j == FPS_MAX_ORPHAN_XIDS)
				ereport(WARNING,
						(errmsg("fpsketch: more than %d prepared transactions without fpsketch state; transaction %u is not waited for",
								FPS_MAX_ORPHAN_XIDS, xid)));
			else
				prepared->orphan_xids[prepared->norphan_xids++] = xid;
		}

		/* one entry per relation and transaction: each must be waited for */
		for (j = 0; j < n; j++)
			if (prepared->orphans[j].dbid == l->locktag.locktag_field1 &&
				prepared->orphans[j].relid == l->locktag.locktag_field2 &&
				prepared->orphans[j].xid == xid)
				break;
		if (j < n)
			continue;
		if (n == FPS_MAX_ORPHANS)
		{
			prepared->orphans_everywhere = true;
			continue;
		}
		prepared->orphans[n].dbid = l->locktag.locktag_field1;
		prepared->orphans[n].relid = l->locktag.locktag_field2;
		prepared->orphans[n].xid = xid;
		n++;
		ereport(LOG,
				(errmsg("fpsketch: prepared transaction %u wrote relation %u of database %u, but its fpsketch state is not on this server",
						xid, l->locktag.locktag_field2, l->locktag.locktag_field1),
				 errdetail("It was prepared before a failover or a restore from a base backup (pg_fpsketch/prepared is not in WAL), or by an older version of fpsketch."),
				 errhint("COMMIT PREPARED or ROLLBACK PREPARED it (pg_prepared_xacts); if the relation uses fpsketch, transactions on it fail until then.")));
	}
	if (prepared->orphans_everywhere)
		ereport(LOG,
				(errmsg("fpsketch: prepared transactions without fpsketch state wrote more than %d relations: every fpsketch table waits for them",
						FPS_MAX_ORPHANS)));
	/* the entries before the counts that publish them, read unlocked */
	pg_write_barrier();
	pg_atomic_write_u32(&prepared->orphans_left,
						n + (prepared->orphans_everywhere ? 1 : 0));
	pg_atomic_write_u32(&prepared->norphans, n);
	pg_write_barrier();
	pg_atomic_write_u32(&prepared->orphans_checked, 1);
	LWLockRelease(prepared->lock);
}

/*
 * The first transaction after recovery resolves what the files left, and
 * looks for prepared transactions the files do not know.
 */
void
fps_prepared_check_recovered(void)
{
	if (prepared == NULL || RecoveryInProgress())
		return;
	if (pg_atomic_read_u32(&prepared->unconfirmed) > 0)
		fps_prepared_resolve_ended();
	if (pg_atomic_read_u32(&prepared->orphans_checked) == 0 && max_prepared_xacts > 0)
		find_orphans();
}

/* Wait for orphan xid to end, at most fpsketch.lock_wait_timeout. */
static void
wait_for_orphan(TransactionId xid, Oid relid)
{
	FpsBackoff	backoff;

	fps_backoff_init(&backoff);
	while (TransactionIdIsInProgress(xid))
	{
		if (!fps_backoff_wait(&backoff))
		{
			char	   *relname = get_rel_name(relid);

			fps_atomic_add(&fps_counters->aborts[FPS_ABORT_LOCK_TIMEOUT], 1);
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent update"),
					 errdetail("Relation \"%s\" was written by prepared transaction %u, whose fpsketch state is not on this server (it was prepared before a failover or a restore from a base backup, or by an older version of fpsketch).",
							   relname ? relname : "?", xid),
					 errhint("COMMIT PREPARED or ROLLBACK PREPARED it (see pg_prepared_xacts); the transaction might succeed if retried after that.")));
		}
	}
}

/*
 * A tracked access to relid: refused while an orphan (above) that wrote it
 * is prepared, after waiting for it as for a prepared transaction's key.
 * Entries whose transaction ended are cleared, so that a relation no orphan
 * holds any more costs one unlocked pass.
 */
void
fps_prepared_check_orphans(Oid relid)
{
	int			n = pg_atomic_read_u32(&prepared->norphans);
	bool		everywhere;

	pg_read_barrier();
	everywhere = prepared->orphans_everywhere;
	for (int i = 0; i < n; i++)
	{
		TransactionId xid = prepared->orphans[i].xid;

		if (!TransactionIdIsValid(xid) ||
			prepared->orphans[i].dbid != MyDatabaseId ||
			prepared->orphans[i].relid != relid)
			continue;
		wait_for_orphan(xid, relid);
		LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
		if (TransactionIdIsValid(prepared->orphans[i].xid))
		{
			prepared->orphans[i].xid = InvalidTransactionId;
			pg_atomic_fetch_sub_u32(&prepared->orphans_left, 1);
		}
		LWLockRelease(prepared->lock);
	}
	if (everywhere)
	{
		int			nxids;

		LWLockAcquire(prepared->lock, LW_SHARED);
		nxids = prepared->norphan_xids;
		LWLockRelease(prepared->lock);
		for (int i = 0; i < nxids; i++)
			wait_for_orphan(prepared->orphan_xids[i], relid);
		/* every one ended: nothing is held up any more */
		LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
		if (prepared->orphans_everywhere)
		{
			prepared->orphans_everywhere = false;
			pg_atomic_fetch_sub_u32(&prepared->orphans_left, 1);
		}
		LWLockRelease(prepared->lock);
	}
}

/*
 * After COMMIT or ROLLBACK PREPARED: forget the orphans that ended, also
 * those of relations nobody accessed since (heap tables, say), so that
 * tracked accesses stop looking once none is left.
 */
void
fps_prepared_sweep_orphans(void)
{
	if (!fps_prepared_orphans_any() || RecoveryInProgress())
		return;
	LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < (int) pg_atomic_read_u32(&prepared->norphans); i++)
	{
		TransactionId xid = prepared->orphans[i].xid;

		if (TransactionIdIsValid(xid) && !TransactionIdIsInProgress(xid))
		{
			prepared->orphans[i].xid = InvalidTransactionId;
			pg_atomic_fetch_sub_u32(&prepared->orphans_left, 1);
		}
	}
	if (prepared->orphans_everywhere)
	{
		int			i;

		for (i = 0; i < prepared->norphan_xids; i++)
			if (TransactionIdIsInProgress(prepared->orphan_xids[i]))
				break;
		if (i == prepared->norphan_xids)
		{
			prepared->orphans_everywhere = false;
			pg_atomic_fetch_sub_u32(&prepared->orphans_left, 1);
		}
	}
	LWLockRelease(prepared->lock);
}

bool
fps_prepared_orphans_any(void)
{
	return prepared != NULL && pg_atomic_read_u32(&prepared->orphans_left) > 0;
}

bool
fps_prepared_any(void)
{
	return prepared != NULL && pg_atomic_read_u32(&prepared->nheld) > 0;
}

/* ---- who holds a key ---- */

static FpsPreparedXact *
slot_of_owner(fps_u32 owner)
{
	fps_u32		slot;

	if (prepared == NULL || owner < FPS_PREPARED_OWNER_BASE)
		return NULL;
	slot = owner - FPS_PREPARED_OWNER_BASE;
	if (slot >= (fps_u32) prepared->nslots)
		return NULL;
	return &prepared->xacts[slot];
}

/*
 * The xid of the prepared transaction a lock owner names, or Invalid.  A
 * hint, as lock owners are: read without the lock.
 */
TransactionId
fps_prepared_owner_xid(fps_u32 owner)
{
	FpsPreparedXact *x = slot_of_owner(owner);

	if (x == NULL || x->state != PREPARED_HELD)
		return InvalidTransactionId;
	return *(volatile TransactionId *) &x->xid;
}

/*
 * If a prepared transaction holds entry's lock bit: its commit_ts, else 0.
 * The word and the owner are read again after the slot, so that the answer
 * belongs to the lock seen: the owner is cleared before the unlock.
 */
fps_u64
fps_prepared_lock_commit_ts(FpsEntry *entry, fps_u64 word)
{
	FpsPreparedXact *x = slot_of_owner(fps_entry_lock_owner(entry));
	fps_u64		commit_ts;
	TransactionId xid;

	if (x == NULL)
		return 0;
	xid = *(volatile TransactionId *) &x->xid;
	commit_ts = *(volatile fps_u64 *) &x->commit_ts;
	pg_read_barrier();
	if (*(volatile PreparedState *) &x->state != PREPARED_HELD ||
		*(volatile TransactionId *) &x->xid != xid ||
		fps_entry_load(entry) != word ||
		slot_of_owner(fps_entry_lock_owner(entry)) != x)
		return 0;
	return commit_ts;
}

/*
 * The gid of a prepared transaction that holds entry's lock bit or counts
 * among its committers (a phantom key it wrote), if one does.  For error
 * messages only: a scan of every prepared key.
 */
bool
fps_prepared_lock_gid(FpsEntry *entry, char *gid)
{
	FpsPreparedXact *owner = slot_of_owner(fps_entry_lock_owner(entry));
	bool		found = false;

	if (!fps_prepared_any())
		return false;
	LWLockAcquire(prepared->lock, LW_SHARED);
	for (int i = 0; i < prepared->nslots && !found; i++)
	{
		FpsPreparedXact *x = &prepared->xacts[i];

		if (x->state != PREPARED_HELD)
			continue;
		for (int k = 0; k < x->nkeys && !found; k++)
		{
			FpsAccess  *a = &prepared_keys[x->first + k];

			if (a->entry == entry &&
				((a->locked && owner == x) || a->committing))
			{
				strlcpy(gid, x->gid, GIDSIZE);
				found = true;
			}
		}
	}
	LWLockRelease(prepared->lock);
	return found;
}

/*
 * How many of entry's registered committers are prepared transactions that
 * commit after ts (a timestamp reader of the predicate need not wait for
 * those: their inserts are after ts).
 */
int
fps_prepared_committers_after(FpsEntry *entry, fps_u64 ts)
{
	int			n = 0;

	if (!fps_prepared_any())
		return 0;
	LWLockAcquire(prepared->lock, LW_SHARED);
	for (int i = 0; i < prepared->nslots; i++)
	{
		FpsPreparedXact *x = &prepared->xacts[i];

		if (x->state != PREPARED_HELD || x->commit_ts <= ts)
			continue;
		for (int k = 0; k < x->nkeys; k++)
			if (prepared_keys[x->first + k].entry == entry &&
				prepared_keys[x->first + k].committing)
				n++;
	}
	LWLockRelease(prepared->lock);
	return n;
}

/* The gid of prepared transaction xid, if it holds fpsketch keys. */
bool
fps_prepared_xid_gid(TransactionId xid, char *gid)
{
	bool		found = false;

	if (!fps_prepared_any())
		return false;
	LWLockAcquire(prepared->lock, LW_SHARED);
	for (int i = 0; i < prepared->nslots; i++)
		if (prepared->xacts[i].state == PREPARED_HELD && prepared->xacts[i].xid == xid)
		{
			strlcpy(gid, prepared->xacts[i].gid, GIDSIZE);
			found = true;
			break;
		}
	LWLockRelease(prepared->lock);
	return found;
}

/*
 * Wait for xid if it is a prepared transaction holding fpsketch keys: not
 * on its heavyweight lock, which only COMMIT/ROLLBACK PREPARED releases,
 * but for at most fpsketch.lock_wait_timeout, resolving it once it ends.
 * False if xid is no such transaction (the caller waits as it would).
 */
bool
fps_prepared_wait(TransactionId xid, Oid relid, int group)
{
	char		gid[GIDSIZE];
	FpsBackoff	backoff;

	if (!fps_prepared_any())
		return false;
	/* heap names the subtransaction that wrote; slots, the top level */
	xid = SubTransGetTopmostTransaction(xid);
	if (!fps_prepared_xid_gid(xid, gid))
		return false;
	fps_backoff_init(&backoff);
	while (TransactionIdIsInProgress(xid))
	{
		if (!fps_backoff_wait(&backoff))
			fps_abort_prepared(relid, group, gid, false);
	}
	fps_prepared_resolve_ended();
	return true;
}

/* ---- server start ---- */

static bool
read_file(const char *path, PreparedFileHeader *header, PreparedFileKey **keys)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	struct stat st;
	Size		keys_size;
	pg_crc32c	crc;
	pg_crc32c	file_crc;
	bool		ok = false;

	*keys = NULL;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && st.st_size >= sizeof(*header) + sizeof(crc) &&
		read(fd, header, sizeof(*header)) == sizeof(*header) &&
		header->magic == PREPARED_MAGIC && header->version == PREPARED_VERSION &&
		header->nkeys >= 0 &&
		st.st_size == sizeof(*header) + sizeof(PreparedFileKey) * (Size) header->nkeys + sizeof(crc))
	{
		keys_size = sizeof(PreparedFileKey) * header->nkeys;
		*keys = palloc(keys_size + 1);
		if (read(fd, *keys, keys_size) == keys_size &&
			read(fd, &file_crc, sizeof(file_crc)) == sizeof(file_crc))
		{
			INIT_CRC32C(crc);
			COMP_CRC32C(crc, header, sizeof(*header));
			COMP_CRC32C(crc, *keys, keys_size);
			FIN_CRC32C(crc);
			ok = EQ_CRC32C(crc, file_crc);
		}
	}
	CloseTransientFile(fd);
	return ok;
}

/*
 * Is path a prepared transaction file of an older format (its header in
 * *header)?  Version 2 holds keys computed before key classes (cc/keys.c),
 * which no key of this version equals.
 */
static bool
older_format(const char *path, PreparedFileHeader *header)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	bool		older;

	if (fd < 0)
		return false;
	older = read(fd, header, sizeof(*header)) == sizeof(*header) &&
		header->magic == PREPARED_MAGIC && header->version < PREPARED_VERSION;
	CloseTransientFile(fd);
	return older;
}

/*
 * Lock a recovered key again.  TicToc: the lock bit; STO and MVTO: the
 * dirty mark, at the commit timestamp it will install.
 */
static void
relock(FpsAccess *a, int slot, fps_u64 commit_ts)
{
	fps_u64		word = fps_entry_load(a->entry);

	if (a->locked)
	{
		/* the write it will install shows in the word: announce it first */
		if (fps_timestamp_ordered())
			fps_entry_raise_written(a->entry, commit_ts);
		while (!fps_entry_cas(a->entry, &word,
							  fps_word_make(true,
											fps_timestamp_ordered() ?
											Max(fps_word_wts(word), commit_ts) :
											fps_word_wts(word),
											Max(fps_word_rts(word),
												fps_timestamp_ordered() ? commit_ts : 0))))
			;
		fps_entry_set_lock_owner(a->entry, FPS_PREPARED_OWNER(slot));
	}
	if (a->committing)
		fps_entry_committers_add(a->entry, FPS_COMMITTER_ONE);
}

/*
 * Load the files of prepared transactions (postmaster, shmem_startup_hook,
 * before recovery).  A file that cannot be read or does not fit is a
 * transaction whose keys we cannot protect: refuse to start, as PostgreSQL
 * does for a corrupt two-phase state file.
 */
static void
recover(void)
{
	DIR		   *dir;
	struct dirent *de;
	fps_u64		max_ts = 0;
	int			nloaded = 0;

	if (MakePGDirectory("pg_fpsketch") < 0 && errno != EEXIST)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"pg_fpsketch\": %m")));
	if (MakePGDirectory(PREPARED_DIR) < 0 && errno != EEXIST)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", PREPARED_DIR)));

	dir = AllocateDir(PREPARED_DIR);
	while ((de = ReadDir(dir, PREPARED_DIR)) != NULL)
	{
		char		path[MAXPGPATH];
		PreparedFileHeader header;
		PreparedFileKey *keys;
		FpsPreparedXact *x;
		int			slot;
		int			first = 0;

		if (strspn(de->d_name, "0123456789ABCDEF") != 8)
			continue;
		snprintf(path, sizeof(path), PREPARED_DIR "/%s", de->d_name);
		/* a file whose writer died before it was complete: never prepared */
		if (strcmp(de->d_name + 8, PREPARED_TEMP_SUFFIX) == 0)
		{
			if (unlink(path) != 0)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", path)));
			continue;
		}
		if (strlen(de->d_name) != 8)
			continue;
		if (older_format(path, &header))
		{
			char		aside[MAXPGPATH];

			/*
			 * Its keys lock nothing this version reads: set it aside, and the
			 * transaction is one prepared without fpsketch state, whose
			 * relations wait for its end (find_orphans).
			 */
			snprintf(aside, sizeof(aside), "%s.v%u", path, header.version);
			if (rename(path, aside) != 0)
				ereport(FATAL,
						(errcode_for_file_access(),
						 errmsg("could not rename file \"%s\" to \"%s\": %m", path, aside)));
			ereport(WARNING,
					(errmsg("fpsketch: prepared transaction file \"%s\" is of an older version of fpsketch, set aside as \"%s\"",
							path, aside),
					 errdetail("Its keys are not the keys this version computes.  Until transaction %u (\"%s\") ends, tracked access to the relations it wrote waits for it, as for a transaction prepared on another server.",
							   header.xid, header.gid)));
			continue;
		}
		if (!read_file(path, &header, &keys))
			ereport(FATAL,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("fpsketch: could not read prepared transaction file \"%s\"", path),
					 errdetail("The file is missing, truncated or its checksum does not match."),
					 errhint("If no prepared transaction with this transaction id exists (pg_prepared_xacts), remove the file.")));
		slot = free_slot();
		if (slot >= 0 && header.nkeys > 0)
			first = find_key_range(header.nkeys);
		if (slot < 0 || first < 0)
			ereport(FATAL,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("fpsketch: prepared transaction \"%s\" holds %d keys, more than fit",
							header.gid, header.nkeys),
					 errhint("Set max_prepared_transactions and fpsketch.max_prepared_keys at least as high as before the restart.")));
		x = &prepared->xacts[slot];
		memset(x, 0, sizeof(*x));
		x->state = PREPARED_HELD;
		x->recovered = true;
		x->confirmed = false;
		x->holds = header.holds;
		x->xid = header.xid;
		x->dbid = header.dbid;
		x->commit_ts = header.commit_ts;
		x->prepared_at = header.prepared_at;
		x->first = first;
		x->nkeys = header.nkeys;
		strlcpy(x->gid, header.gid, GIDSIZE);
		for (int i = 0; i < header.nkeys; i++)
		{
			FpsAccess  *a = &prepared_keys[first + i];

			memset(a, 0, sizeof(*a));
			a->key = keys[i].key;
			a->relid = keys[i].relid;
			a->row_group = keys[i].row_group;
			a->locked = keys[i].locked;
			a->committing = keys[i].committing;
			if (a->locked)
				x->nlocked++;
		}
		prepared->keys_used += header.nkeys;
		pg_atomic_fetch_add_u32(&prepared->nheld, 1);
		pg_atomic_fetch_add_u32(&prepared->unconfirmed, 1);
		max_ts = Max(max_ts, header.commit_ts);
		nloaded++;
		pfree(keys);
	}
	FreeDir(dir);
	if (nloaded == 0)
		return;

	/*
	 * Timestamps start afresh: put every later one above the recovered
	 * transactions', which then commit at the floor (they are ordered after
	 * everything before the restart and before everything after it).
	 */
	fps_raise_floor(fps_sketch, max_ts + 1);
	fps_atomic_max(&fps_counters->sto_clock, max_ts + 2);
	for (int s = 0; s < prepared->nslots; s++)
	{
		FpsPreparedXact *x = &prepared->xacts[s];

		if (x->state != PREPARED_HELD)
			continue;
		x->commit_ts = max_ts + 1;
		for (int i = 0; i < x->nkeys; i++)
		{
			FpsAccess  *a = &prepared_keys[x->first + i];

			a->entry = fps_incref(fps_sketch, a->key);
			if (a->entry == NULL)
				ereport(FATAL,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("fpsketch: the exact table cannot hold the keys of the prepared transactions"),
						 errhint("Increase fpsketch.max_entries.")));
			relock(a, s, x->commit_ts);
		}
		if (x->holds)
			fps_commit_ts_publish_for(x->xid, x->commit_ts, x->dbid, FPS_ANY_RELATION);
	}
	ereport(LOG,
			(errmsg("fpsketch: %d prepared transactions recovered, floor raised to " UINT64_FORMAT,
					nloaded, max_ts + 1)));
}

void
fps_prepared_shmem_init(void)
{
	bool		found;

	prepared = ShmemInitStruct("fpsketch prepared", fps_prepared_shmem_size(), &found);
	prepared_keys = (FpsAccess *) ((char *) prepared + MAXALIGN(slots_size()));
	if (found)
		return;
	memset(prepared, 0, slots_size());
	prepared->lock = &(GetNamedLWLockTranche("fpsketch prepared"))->lock;
	pg_atomic_init_u32(&prepared->nheld, 0);
	pg_atomic_init_u32(&prepared->unconfirmed, 0);
	pg_atomic_init_u32(&prepared->orphans_checked, 0);
	pg_atomic_init_u32(&prepared->norphans, 0);
	pg_atomic_init_u32(&prepared->orphans_left, 0);
	prepared->nslots = max_prepared_xacts;
	/*
	 * Prepared keys stay pinned outside the pin pool's accounting: at most a
	 * quarter of the exact table, so that running transactions keep room.
	 */
	prepared->capacity = max_prepared_xacts > 0 ?
		Min(fps_max_prepared_keys, (int) Min(fps_capacity(fps_sketch) / 4, INT_MAX)) : 0;
	if (max_prepared_xacts > 0)
		recover();
}

/* ---- observability ---- */

void
fps_prepared_stats(FpsPreparedStats *stats)
{
	memset(stats, 0, sizeof(*stats));
	if (prepared == NULL)
		return;
	LWLockAcquire(prepared->lock, LW_SHARED);
	for (int i = 0; i < prepared->nslots; i++)
		if (prepared->xacts[i].state == PREPARED_HELD && prepared->xacts[i].holds)
		{
			stats->xacts++;
			stats->keys += prepared->xacts[i].nkeys;
		}
	stats->prepares = prepared->prepares;
	stats->commits = prepared->commits;
	stats->rollbacks = prepared->rollbacks;
	LWLockRelease(prepared->lock);
}

void
fps_prepared_reset_stats(void)
{
	if (prepared == NULL)
		return;
	LWLockAcquire(prepared->lock, LW_EXCLUSIVE);
	prepared->prepares = prepared->commits = prepared->rollbacks = 0;
	LWLockRelease(prepared->lock);
}

/* A copy of every held slot, for the view; returns how many. */
int
fps_prepared_list(FpsPreparedInfo **out)
{
	int			n = 0;

	*out = NULL;
	if (prepared == NULL || prepared->nslots == 0)
		return 0;
	*out = palloc(sizeof(FpsPreparedInfo) * prepared->nslots);
	LWLockAcquire(prepared->lock, LW_SHARED);
	for (int i = 0; i < prepared->nslots; i++)
	{
		FpsPreparedXact *x = &prepared->xacts[i];
		FpsPreparedInfo *info = &(*out)[n];

		/* one that only read holds nothing */
		if (x->state != PREPARED_HELD || !x->holds)
			continue;
		strlcpy(info->gid, x->gid, GIDSIZE);
		info->xid = x->xid;
		info->dbid = x->dbid;
		info->commit_ts = x->commit_ts;
		info->keys = x->nkeys;
		info->locked_keys = x->nlocked;
		info->recovered = x->recovered;
		info->prepared_at = x->prepared_at;
		n++;
	}
	LWLockRelease(prepared->lock);
	return n;
}
