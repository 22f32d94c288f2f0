/*-------------------------------------------------------------------------
 *
 * commit_ts.c
 *	  The commit timestamps of versions: a shared map from the transaction
 *	  id of every writer of fpsketch tables to the timestamp it commits at
 *	  (DESIGN §9), and the timestamps of the readers that use it.
 *
 * A version of a row is a heap tuple; its interval is [commit_ts(xmin),
 * commit_ts(xmax)).  A reader at a timestamp ts (a timestamp snapshot, see
 * am/visibility.c) asks this map for the commit_ts of the transactions
 * that created and replaced a version.  TicToc's commit timestamps do not
 * follow the order in which transactions become visible, so a PostgreSQL
 * snapshot cannot answer that; only the map can.
 *
 * Every transaction that writes fpsketch tables (tracked or not: DDL,
 * loads into new storage, escalated writers) publishes its top-level xid
 * and commit_ts in PRE_COMMIT, once the timestamp is chosen and before the
 * transaction becomes visible (ProcArrayEndTransaction), as PENDING; COMMIT
 * makes it COMMITTED and ABORT ABORTED, without ERROR or palloc.  The
 * largest commit_ts published so far (max_published) is where a TicToc
 * reader takes its ts: everything visible to it when it starts has a
 * commit_ts at or below it.
 *
 * When an entry may go.  An entry of a completed transaction X can be
 * dropped once every running reader's ts is at or above commit_ts(X) (or X
 * aborted): then every reader, running or future, sees X's versions as
 * committed at or before its ts, which is what a reader concludes from a
 * committed xid it does not find (readers that started before X completed
 * have a ts of at least X's; later readers take a ts of at least
 * max_published).  Each reader publishes, before taking its ts, a lower
 * bound of it in its slot of reader_ts[], and droppers take the minimum.
 * Entries are dropped lazily, when a partition is three quarters full, so
 * that the map keeps a recent history (fps_commit_ts_writer() uses it).
 * If a partition is full of entries some reader still needs (one very long
 * reader, many writers), the entry with the lowest commit_ts goes anyway
 * and lost_ts records it: a reader whose ts is below lost_ts that misses an
 * entry cannot tell, and gets a 40001 "snapshot too old" instead of a wrong
 * answer.
 *
 * Locking: the map is split into partitions, each an open-addressing table
 * (linear probing, deletion by backward shift) under an LWLock: shared for
 * lookups, exclusive for publishing, finishing and dropping.  reader_ts[]
 * slots are written by their own backend only, atomically; max_published,
 * lost_ts and the counters are atomics.  Lookups of completed transactions
 * are cached per backend: a COMMITTED or ABORTED entry never changes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/twophase.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"

#include "cc.h"

#define FPS_CTS_PARTITIONS_MAX	64

typedef struct FpsCtsSlot
{
	TransactionId xid;			/* top-level; InvalidTransactionId: free */
	uint8		state;			/* FpsCtsState */
	Oid			dbid;
	fps_u64		commit_ts;
	fps_u64		relations;		/* fps_relation_filter: whose predicates */
} FpsCtsSlot;

typedef struct FpsCtsPartition
{
	LWLock	   *lock;
	uint32		nused;
	uint32		mask;			/* slots - 1, a power of two minus one */
	uint32		since_sweep;	/* entries added since the last sweep */
	FpsCtsSlot *slots;
} FpsCtsPartition;

typedef struct FpsCtsMap
{
	int			npartitions;
	uint32		capacity;
	int			nreaders;
	Size		bytes;
	volatile fps_u64 max_published;	/* largest commit_ts published */
	volatile fps_u64 lost_ts;	/* largest commit_ts dropped while needed */
	volatile fps_u64 max_dropped_xid;	/* largest committed xid dropped */
	volatile fps_u64 entries;	/* in use now */
	volatile fps_u64 entries_hwm;
	volatile fps_u64 drops;		/* entries dropped once no reader needed them */
	volatile fps_u64 lost;		/* entries dropped while a reader might */
	volatile fps_u64 *reader_ts;	/* per PGPROC: 0, or a bound of its ts */
	FpsCtsPartition partitions[FPS_CTS_PARTITIONS_MAX];
} FpsCtsMap;

static FpsCtsMap *cts_map = NULL;

/* this backend's cache of completed lookups: xid -> (state, commit_ts) */
#define FPS_CTS_CACHE 1024
typedef struct FpsCtsCached
{
	TransactionId xid;
	uint8		state;
	fps_u64		commit_ts;
} FpsCtsCached;
static FpsCtsCached cts_cache[FPS_CTS_CACHE];

static int
partitions_for(int entries)
{
	int			n = FPS_CTS_PARTITIONS_MAX;

	while (n > 1 && entries / n < 256)
		n /= 2;
	return n;
}

static uint32
slots_per_partition(int entries, int npartitions)
{
	uint32		per = 1;

	while (per < (uint32) (entries / npartitions))
		per <<= 1;
	return per;
}

static int
reader_slots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

Size
fps_commit_ts_shmem_size(int entries)
{
	int			np = partitions_for(entries);
	Size		size = MAXALIGN(sizeof(FpsCtsMap));

	size = add_size(size, MAXALIGN(mul_size(sizeof(fps_u64), reader_slots())));
	size = add_size(size, mul_size(mul_size(sizeof(FpsCtsSlot),
											slots_per_partition(entries, np)), np));
	return size;
}

int
fps_commit_ts_lwlocks(int entries)
{
	return partitions_for(entries);
}

/* Create (postmaster) or attach to the map in mem. */
void
fps_commit_ts_shmem_init(void *mem, bool found, int entries)
{
	int			np = partitions_for(entries);
	uint32		per = slots_per_partition(entries, np);
	char	   *p = (char *) mem;
	LWLockPadded *locks;

	cts_map = (FpsCtsMap *) p;
	if (found)
		return;
	memset(cts_map, 0, sizeof(FpsCtsMap));
	cts_map->npartitions = np;
	cts_map->capacity = per * np;
	cts_map->nreaders = reader_slots();
	cts_map->bytes = fps_commit_ts_shmem_size(entries);
	p += MAXALIGN(sizeof(FpsCtsMap));
	cts_map->reader_ts = (volatile fps_u64 *) p;
	memset((void *) cts_map->reader_ts, 0, sizeof(fps_u64) * cts_map->nreaders);
	p += MAXALIGN(sizeof(fps_u64) * cts_map->nreaders);
	locks = GetNamedLWLockTranche("fpsketch commit_ts");
	for (int i = 0; i < np; i++)
	{
		FpsCtsPartition *part = &cts_map->partitions[i];

		part->lock = &locks[i].lock;
		part->nused = 0;
		part->mask = per - 1;
		part->slots = (FpsCtsSlot *) p;
		memset(part->slots, 0, sizeof(FpsCtsSlot) * per);
		p += sizeof(FpsCtsSlot) * per;
	}
}

static inline uint32
xid_hash(TransactionId xid)
{
	return (uint32) (((uint64) xid * UINT64CONST(0x9E3779B97F4A7C15)) >> 32);
}

static inline FpsCtsPartition *
partition_of(TransactionId xid)
{
	return &cts_map->partitions[xid_hash(xid) % cts_map->npartitions];
}

static inline uint32
home_slot(FpsCtsPartition *part, TransactionId xid)
{
	return (xid_hash(xid) >> 8) & part->mask;
}

/* The slot holding xid, or -1.  Partition lock held. */
static int
find_slot(FpsCtsPartition *part, TransactionId xid)
{
	uint32		i = home_slot(part, xid);

	for (uint32 n = 0; n <= part->mask; n++, i = (i + 1) & part->mask)
	{
		if (part->slots[i].xid == xid)
			return (int) i;
		if (part->slots[i].xid == InvalidTransactionId)
			return -1;
	}
	return -1;
}

/* Empty slot i, shifting back what probed past it.  Exclusive lock held. */
static void
delete_slot(FpsCtsPartition *part, uint32 i)
{
	uint32		j = i;

	/* at most every other slot once, also when the partition is full */
	for (uint32 n = 0; n < part->mask; n++)
	{
		uint32		k;

		j = (j + 1) & part->mask;
		if (part->slots[j].xid == InvalidTransactionId)
			break;
		k = home_slot(part, part->slots[j].xid);
		/* slot j stays if its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		part->slots[i] = part->slots[j];
		i = j;
	}
	part->slots[i].xid = InvalidTransactionId;
	part->nused--;
	fps_atomic_sub(&cts_map->entries, 1);
}

/*
 * The lowest ts of a running reader: at or below every ts that a reader
 * uses now or will take later (readers take theirs at or above
 * max_published, and publish a bound before they take it).
 */
static fps_u64
min_reader_ts(void)
{
	fps_u64		min_ts = fps_atomic_load(&cts_map->max_published);

	for (int i = 0; i < cts_map->nreaders; i++)
	{
		fps_u64		ts = fps_atomic_load(&cts_map->reader_ts[i]);

		if (ts != 0 && ts < min_ts)
			min_ts = ts;
	}
	return min_ts;
}

/* xid, a transaction that has started already, as a 64-bit number. */
static uint64
full_xid(TransactionId xid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	uint64		epoch = EpochFromFullTransactionId(next);

	if (xid > XidFromFullTransactionId(next) && epoch > 0)
		epoch--;
	return (epoch << 32) | xid;
}

/* Note a committed xid dropped: lookups of newer xids stay authoritative. */
static void
note_dropped_xid(TransactionId xid)
{
	fps_atomic_max(&cts_map->max_dropped_xid, full_xid(xid));
}

/*
 * Make room in part (exclusive lock held): drop the entries no reader
 * needs; if the partition is still full, the completed entry with the
 * lowest commit_ts, noting it in lost_ts.
 */
static void
make_room(FpsCtsPartition *part)
{
	fps_u64		horizon = min_reader_ts();

	for (uint32 i = 0; i <= part->mask;)
	{
		FpsCtsSlot *s = &part->slots[i];

		if (s->xid != InvalidTransactionId &&
			(s->state == FPS_CTS_ABORTED ||
			 (s->state == FPS_CTS_COMMITTED && s->commit_ts <= horizon)))
		{
			if (s->state == FPS_CTS_COMMITTED)
				note_dropped_xid(s->xid);
			delete_slot(part, i);
			fps_atomic_add(&cts_map->drops, 1);
			continue;			/* slot i may hold a shifted entry now */
		}
		i++;
	}
	while (part->nused > part->mask)
	{
		int			victim = -1;

		for (uint32 i = 0; i <= part->mask; i++)
		{
			FpsCtsSlot *s = &part->slots[i];

			if (s->xid != InvalidTransactionId && s->state == FPS_CTS_COMMITTED &&
				(victim < 0 || s->commit_ts < part->slots[victim].commit_ts))
				victim = (int) i;
		}
		if (victim < 0)
			break;				/* all pending: the caller reports it */
		fps_atomic_max(&cts_map->lost_ts, part->slots[victim].commit_ts);
		note_dropped_xid(part->slots[victim].xid);
		delete_slot(part, victim);
		fps_atomic_add(&cts_map->lost, 1);
	}
}

/*
 * PRE_COMMIT of a writer of fpsketch tables: publish its top-level xid
 * with the commit_ts it commits at, PENDING, before it becomes visible.
 */
void
fps_commit_ts_publish(TransactionId xid, fps_u64 commit_ts, fps_u64 relations)
{
	fps_commit_ts_publish_for(xid, commit_ts, MyDatabaseId, relations);
}

/* The same for a transaction of database dbid (a recovered prepared one). */
void
fps_commit_ts_publish_for(TransactionId xid, fps_u64 commit_ts, Oid dbid,
						  fps_u64 relations)
{
	FpsCtsPartition *part = partition_of(xid);
	uint32		i;
	int			found;

	LWLockAcquire(part->lock, LW_EXCLUSIVE);
	found = find_slot(part, xid);
	if (found >= 0)
	{
		/* published again (commit_ts may only grow) */
		part->slots[found].commit_ts = Max(part->slots[found].commit_ts, commit_ts);
		part->slots[found].relations |= relations;
		part->slots[found].state = FPS_CTS_PENDING;
	}
	else
	{
		/*
		 * Past three quarters, sweep; while a long reader keeps the entries
		 * needed, not at every insert (a sweep reads the whole partition).
		 */
		if (part->nused > part->mask ||
			(part->nused >= (part->mask + 1) * 3 / 4 &&
			 part->since_sweep >= (part->mask + 1) / 16))
		{
			make_room(part);
			part->since_sweep = 0;
		}
		if (part->nused > part->mask)
		{
			LWLockRelease(part->lock);
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent update"),
					 errdetail("The map of commit timestamps has no room: every entry belongs to a transaction still committing."),
					 errhint("Increase fpsketch.commit_ts_entries.")));
		}
		for (i = home_slot(part, xid); part->slots[i].xid != InvalidTransactionId;
			 i = (i + 1) & part->mask)
			;
		part->slots[i].xid = xid;
		part->slots[i].state = FPS_CTS_PENDING;
		part->slots[i].dbid = dbid;
		part->slots[i].commit_ts = commit_ts;
		part->slots[i].relations = relations;
		part->nused++;
		part->since_sweep++;
		fps_atomic_max(&cts_map->entries_hwm, fps_atomic_add(&cts_map->entries, 1));
	}
	LWLockRelease(part->lock);
	/* after the entry: a reader that takes this ts finds it */
	fps_atomic_max(&cts_map->max_published, commit_ts);
}

/*
 * COMMIT or ABORT of a transaction that published: its entry becomes
 * COMMITTED or ABORTED.  No ERROR, no palloc (it runs in XACT_EVENT_COMMIT).
 */
void
fps_commit_ts_finish(TransactionId xid, bool committed)
{
	FpsCtsPartition *part = partition_of(xid);
	int			i;

	LWLockAcquire(part->lock, LW_EXCLUSIVE);
	i = find_slot(part, xid);
	if (i >= 0)
		part->slots[i].state = committed ? FPS_CTS_COMMITTED : FPS_CTS_ABORTED;
	LWLockRelease(part->lock);
}

/*
 * The state of top-level transaction xid in the map, and its commit_ts if
 * it is there (FPS_CTS_UNKNOWN: not there).
 */
FpsCtsState
fps_commit_ts_lookup(TransactionId xid, fps_u64 *commit_ts, Oid *dbid)
{
	FpsCtsCached *cached = &cts_cache[xid % FPS_CTS_CACHE];
	FpsCtsPartition *part;
	FpsCtsState state = FPS_CTS_UNKNOWN;
	int			i;

	if (cached->xid == xid && cached->state != FPS_CTS_UNKNOWN && dbid == NULL)
	{
		*commit_ts = cached->commit_ts;
		return (FpsCtsState) cached->state;
	}
	part = partition_of(xid);
	LWLockAcquire(part->lock, LW_SHARED);
	i = find_slot(part, xid);
	if (i >= 0)
	{
		state = (FpsCtsState) part->slots[i].state;
		*commit_ts = part->slots[i].commit_ts;
		if (dbid != NULL)
			*dbid = part->slots[i].dbid;
	}
	LWLockRelease(part->lock);
	if (state == FPS_CTS_COMMITTED || state == FPS_CTS_ABORTED)
	{
		cached->xid = xid;
		cached->state = state;
		cached->commit_ts = *commit_ts;
	}
	return state;
}

/*
 * Does a committed transaction that is not in the map count as committed
 * at or before ts?  Yes, unless an entry above ts was lost (see above).
 */
bool
fps_commit_ts_miss_is_before(fps_u64 ts)
{
	return ts >= fps_atomic_load(&cts_map->lost_ts);
}

/*
 * Did committed transaction xid write fpsketch tables of database dbid, and
 * predicate keys of a relation in the filter relations (FPS_ANY_RELATION:
 * any)?  *known is false when the map cannot tell (its entry may have been
 * dropped).  For REPEATABLE READ's check of what its snapshot misses.
 */
bool
fps_commit_ts_writer(TransactionId xid, Oid dbid, fps_u64 relations, bool *known)
{
	FpsCtsPartition *part = partition_of(xid);
	bool		found = false;
	bool		writer = false;
	int			i;

	*known = true;
	LWLockAcquire(part->lock, LW_SHARED);
	i = find_slot(part, xid);
	if (i >= 0)
	{
		found = true;
		writer = part->slots[i].dbid == dbid &&
			(part->slots[i].relations & relations) != 0;
	}
	LWLockRelease(part->lock);
	if (found)
		return writer;
	*known = full_xid(xid) > fps_atomic_load(&cts_map->max_dropped_xid);
	return false;
}

/*
 * Start reading at a timestamp.  The reader's slot takes a lower bound of
 * its ts before the ts is taken, so that no entry the reader may need is
 * dropped meanwhile: bound is at most the ts to come (STO, MVTO: the clock
 * before the transaction draws from it), or 0 for TicToc, whose ts is the
 * largest commit_ts published (fps_reader_ts).
 */
void
fps_reader_begin(fps_u64 bound)
{
	if (bound == 0)
		bound = fps_atomic_load(&cts_map->max_published);
	fps_atomic_store(&cts_map->reader_ts[MyProc->pgprocno], Max(bound, 1));
}

/* The reader's ts: fixed_ts, or for TicToc the largest commit_ts published. */
fps_u64
fps_reader_ts(fps_u64 fixed_ts)
{
	volatile fps_u64 *slot = &cts_map->reader_ts[MyProc->pgprocno];
	fps_u64		ts;

	ts = fixed_ts != 0 ? fixed_ts : fps_atomic_load(&cts_map->max_published);
	ts = Max(ts, 1);
	Assert(fps_atomic_load(slot) != 0);
	fps_atomic_store(slot, Min(ts, fps_atomic_load(slot)));
	return ts;
}

void
fps_reader_end(void)
{
	if (cts_map != NULL && MyProc != NULL)
		fps_atomic_store(&cts_map->reader_ts[MyProc->pgprocno], 0);
}

void
fps_commit_ts_stats(FpsCtsStats *stats)
{
	stats->capacity = cts_map->capacity;
	stats->entries = fps_atomic_load(&cts_map->entries);
	stats->entries_hwm = fps_atomic_load(&cts_map->entries_hwm);
	stats->drops = fps_atomic_load(&cts_map->drops);
	stats->lost = fps_atomic_load(&cts_map->lost);
	stats->max_published = fps_atomic_load(&cts_map->max_published);
	stats->bytes = cts_map->bytes;
}

void
fps_commit_ts_reset_stats(void)
{
	fps_atomic_store(&cts_map->entries_hwm, fps_atomic_load(&cts_map->entries));
	fps_atomic_store(&cts_map->drops, 0);
	fps_atomic_store(&cts_map->lost, 0);
}
