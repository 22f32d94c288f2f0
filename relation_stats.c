/*-------------------------------------------------------------------------
 *
 * relation_stats.c
 *	  Per-relation counters behind the fpsketch_relation_stats view: which
 *	  tables, and which column groups of them, make transactions retry.
 *
 * A transaction counts its row reads, row writes and predicate keys per
 * relation in its own FpsRelState (cc/txn.c, am/track.c), at the cost of
 * an increment of backend-local memory, and adds them here when it ends
 * (fps_relstats_flush, in the COMMIT or ABORT callback: no ERROR, no
 * palloc), together with one commit or rollback per relation it touched.
 * Aborts are added at once, by fps_abort(), since a savepoint may catch the
 * 40001 and the transaction go on; with the column group of the key that
 * failed when the reason names one key of a row (validation, rereads, lock
 * waits, STO's checks), not when it names a row version (a stale read: any
 * group may have changed), a predicate, or a whole relation.
 *
 * Shared state: a dynahash of at most fpsketch.max_tracked_relations
 * entries keyed by (database, relation), under one LWLock: counters are
 * added with atomics under the lock in shared mode (many backends at
 * once), entries are created, and removed by a reset, in exclusive mode.
 * A relation that finds the table full is counted in one "other" entry
 * (relid NULL in the view), and a small bitmap of the relations counted
 * there estimates how many they are.  The extension's sql_drop event
 * trigger removes the entries of dropped tables (fpsketch_relation_stats_
 * forget), so that a workload that creates and drops tables does not fill
 * the table with the dead; other transactions cannot add to them any more
 * (DROP waits for their locks, which they hold past their flush), and the
 * dropping transaction skips them at its end.  Nothing survives a restart,
 * like fpsketch_stats.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"

#include <math.h>

#include "cc/cc.h"

int			fps_max_tracked_relations = 1000;

typedef struct FpsRelStatsKey
{
	Oid			dbid;
	Oid			relid;
} FpsRelStatsKey;

typedef struct FpsRelCounters
{
	volatile fps_u64 row_reads;
	volatile fps_u64 row_writes;
	volatile fps_u64 predicate_reads;
	volatile fps_u64 predicate_writes;
	volatile fps_u64 commits;
	volatile fps_u64 rollbacks;
	volatile fps_u64 aborts[FPS_NUM_ABORT_REASONS];
	volatile fps_u64 group_aborts[FPS_MAX_COLUMN_GROUPS];
} FpsRelCounters;

typedef struct FpsRelStatsEntry
{
	FpsRelStatsKey key;			/* hash key: first */
	FpsRelCounters c;
} FpsRelStatsEntry;

/* bits of the estimate of how many relations the "other" entry counts */
#define OTHER_BITS 8192

typedef struct FpsRelStatsShared
{
	LWLock	   *lock;
	FpsRelCounters other;		/* relations that found the table full */
	pg_atomic_uint32 other_seen[OTHER_BITS / 32];
} FpsRelStatsShared;

static FpsRelStatsShared *relstats = NULL;
static HTAB *relstats_hash = NULL;	/* NULL: fpsketch.max_tracked_relations = 0 */

void
fps_relstats_define_guc(void)
{
	DefineCustomIntVariable("fpsketch.max_tracked_relations",
							"Relations fpsketch_relation_stats keeps counters for, in all databases.",
							"Relations seen after the table is full are counted together in one row whose relid is NULL, until fpsketch_stats_reset().  Each relation takes about 350 bytes of shared memory.",
							&fps_max_tracked_relations, 1000, 0, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
}

Size
fps_relstats_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(FpsRelStatsShared));

	if (fps_max_tracked_relations > 0)
		size = add_size(size, hash_estimate_size(fps_max_tracked_relations,
												 sizeof(FpsRelStatsEntry)));
	return size;
}

void
fps_relstats_shmem_request(void)
{
	RequestNamedLWLockTranche("fpsketch relation stats", 1);
}

/* In shmem_startup_hook, under AddinShmemInitLock. */
void
fps_relstats_shmem_init(void)
{
	bool		found;

	relstats = ShmemInitStruct("fpsketch relation stats",
							   sizeof(FpsRelStatsShared), &found);
	if (!found)
	{
		memset(relstats, 0, sizeof(FpsRelStatsShared));
		relstats->lock = &GetNamedLWLockTranche("fpsketch relation stats")->lock;
		for (int i = 0; i < OTHER_BITS / 32; i++)
			pg_atomic_init_u32(&relstats->other_seen[i], 0);
	}
	if (fps_max_tracked_relations > 0)
	{
		HASHCTL		info;

		info.keysize = sizeof(FpsRelStatsKey);
		info.entrysize = sizeof(FpsRelStatsEntry);
		/* all entries allocated now: HASH_ENTER_NULL never allocates */
		relstats_hash = ShmemInitHash("fpsketch relation stats hash",
									  fps_max_tracked_relations,
									  fps_max_tracked_relations,
									  &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	}
}

static void
counters_zero(FpsRelCounters *c)
{
	fps_atomic_store(&c->row_reads, 0);
	fps_atomic_store(&c->row_writes, 0);
	fps_atomic_store(&c->predicate_reads, 0);
	fps_atomic_store(&c->predicate_writes, 0);
	fps_atomic_store(&c->commits, 0);
	fps_atomic_store(&c->rollbacks, 0);
	for (int r = 0; r < FPS_NUM_ABORT_REASONS; r++)
		fps_atomic_store(&c->aborts[r], 0);
	for (int g = 0; g < FPS_MAX_COLUMN_GROUPS; g++)
		fps_atomic_store(&c->group_aborts[g], 0);
}

/* Count relid (not tracked on its own) among those in the "other" entry. */
static void
other_note(FpsRelStatsKey *key)
{
	uint64		h = (((uint64) key->dbid << 32) | key->relid) * UINT64CONST(0x9E3779B97F4A7C15);
	uint32		bit = (uint32) (h >> 51) & (OTHER_BITS - 1);

	pg_atomic_fetch_or_u32(&relstats->other_seen[bit / 32], 1U << (bit % 32));
}

/*
 * The counters of key, created if there is room; NULL if the table is
 * full.  The caller holds the lock in exclusive mode when create.  Never
 * ERRORs: the table's entries were allocated at startup.
 */
static FpsRelCounters *
counters_of(FpsRelStatsKey *key, bool create)
{
	FpsRelStatsEntry *e;
	bool		found;

	if (relstats_hash == NULL)
		return NULL;
	e = hash_search(relstats_hash, key, create ? HASH_ENTER_NULL : HASH_FIND, &found);
	if (e == NULL)
		return NULL;
	if (create && !found)
		counters_zero(&e->c);
	return &e->c;
}

/* An abort for reason, found on relid (or none) and a row key's group. */
void
fps_relstats_abort(FpsAbortReason reason, Oid relid, int group)
{
	FpsRelStatsKey key;
	FpsRelCounters *c;

	if (relstats == NULL)
		return;
	key.dbid = MyDatabaseId;
	key.relid = relid;
	LWLockAcquire(relstats->lock, LW_SHARED);
	c = OidIsValid(relid) ? counters_of(&key, false) : &relstats->other;
	if (c == NULL)
	{
		LWLockRelease(relstats->lock);
		LWLockAcquire(relstats->lock, LW_EXCLUSIVE);
		c = counters_of(&key, true);
		if (c == NULL)
		{
			other_note(&key);
			c = &relstats->other;
		}
	}
	fps_atomic_add(&c->aborts[reason], 1);
	if (group >= 0 && group < FPS_MAX_COLUMN_GROUPS)
		fps_atomic_add(&c->group_aborts[group], 1);
	LWLockRelease(relstats->lock);
}

static void
counters_add(FpsRelCounters *c, FpsRelState *rs, bool committed)
{
	if (rs->stat_row_reads)
		fps_atomic_add(&c->row_reads, rs->stat_row_reads);
	if (rs->stat_row_writes)
		fps_atomic_add(&c->row_writes, rs->stat_row_writes);
	if (rs->stat_predicate_reads)
		fps_atomic_add(&c->predicate_reads, rs->stat_predicate_reads);
	if (rs->stat_predicate_writes)
		fps_atomic_add(&c->predicate_writes, rs->stat_predicate_writes);
	fps_atomic_add(committed ? &c->commits : &c->rollbacks, 1);
}

/*
 * The transaction ends (COMMIT or ABORT callback, before txn_reset()):
 * add what it counted per relation.  No ERROR and no palloc: one lock
 * acquisition in shared mode, and one in exclusive mode if a relation is
 * new to the table.
 */
void
fps_relstats_flush(FpsTxn *txn, bool committed)
{
	FpsRelStatsKey key;
	bool		missing = false;

	if (relstats == NULL || txn->nrels == 0)
		return;
	key.dbid = MyDatabaseId;
	LWLockAcquire(relstats->lock, LW_SHARED);
	for (int i = 0; i < txn->nrels; i++)
	{
		FpsRelState *rs = &txn->rels[i];
		FpsRelCounters *c;

		if (rs->stat_dropped)
		{
			rs->stat_pending = false;
			continue;
		}
		key.relid = rs->relid;
		c = counters_of(&key, false);
		rs->stat_pending = (c == NULL);
		if (c != NULL)
			counters_add(c, rs, committed);
		else
			missing = true;
	}
	LWLockRelease(relstats->lock);
	if (!missing)
		return;
	LWLockAcquire(relstats->lock, LW_EXCLUSIVE);
	for (int i = 0; i < txn->nrels; i++)
	{
		FpsRelState *rs = &txn->rels[i];
		FpsRelCounters *c;

		if (!rs->stat_pending)
			continue;
		key.relid = rs->relid;
		c = counters_of(&key, true);
		if (c == NULL)
		{
			other_note(&key);
			c = &relstats->other;
		}
		counters_add(c, rs, committed);
	}
	LWLockRelease(relstats->lock);
}

/* fpsketch_stats_reset(): forget every relation. */
void
fps_relstats_reset(void)
{
	if (relstats == NULL)
		return;
	LWLockAcquire(relstats->lock, LW_EXCLUSIVE);
	if (relstats_hash != NULL)
	{
		HASH_SEQ_STATUS seq;
		FpsRelStatsEntry *e;

		hash_seq_init(&seq, relstats_hash);
		while ((e = hash_seq_search(&seq)) != NULL)
			hash_search(relstats_hash, &e->key, HASH_REMOVE, NULL);
	}
	counters_zero(&relstats->other);
	for (int i = 0; i < OTHER_BITS / 32; i++)
		pg_atomic_write_u32(&relstats->other_seen[i], 0);
	LWLockRelease(relstats->lock);
}

/*
 * fpsketch_relation_stats_forget(oid[]): the relations of the current
 * database that the event trigger fpsketch_forget_dropped_tables saw
 * dropped (EXECUTE revoked from PUBLIC; the trigger runs as the
 * extension's owner).  Also tells this transaction not to add its own
 * counts of them at its end.  A DROP that rolls back has lost the
 * relation's counts so far.
 */
PG_FUNCTION_INFO_V1(fpsketch_relation_stats_forget);

Datum
fpsketch_relation_stats_forget(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *elem_nulls;
	int			n;
	FpsRelStatsKey key;

	fps_require_shmem();
	if (ARR_ELEMTYPE(arr) != OIDOID)
		elog(ERROR, "fpsketch_relation_stats_forget: oid[] expected");
	deconstruct_array(arr, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, &elem_nulls, &n);
	key.dbid = MyDatabaseId;
	LWLockAcquire(relstats->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		if (elem_nulls[i] || relstats_hash == NULL)
			continue;
		key.relid = DatumGetObjectId(elems[i]);
		hash_search(relstats_hash, &key, HASH_REMOVE, NULL);
	}
	LWLockRelease(relstats->lock);
	for (int i = 0; i < n; i++)
	{
		FpsRelState *rs;

		if (elem_nulls[i])
			continue;
		rs = fps_txn_rel_find(DatumGetObjectId(elems[i]));
		if (rs != NULL)
			rs->stat_dropped = true;
	}
	PG_RETURN_VOID();
}

/* How many relations the "other" entry counts: linear counting's estimate. */
static int64
other_relations(void)
{
	int			zeros = 0;

	for (int i = 0; i < OTHER_BITS / 32; i++)
		zeros += 32 - pg_popcount32(pg_atomic_read_u32(&relstats->other_seen[i]));
	if (zeros == OTHER_BITS)
		return 0;
	if (zeros == 0)
		zeros = 1;				/* saturated: a lower bound */
	return (int64) rint(OTHER_BITS * log((double) OTHER_BITS / zeros));
}

/* one row of fpsketch_relation_stats(), copied out of shared memory */
typedef struct RelStatsRow
{
	FpsRelStatsKey key;
	bool		other;
	uint64		v[6 + FPS_NUM_ABORT_REASONS];
	uint64		groups[FPS_MAX_COLUMN_GROUPS];
} RelStatsRow;

static void
row_copy(RelStatsRow *row, FpsRelCounters *c)
{
	int			i = 0;

	row->v[i++] = fps_atomic_load(&c->row_reads);
	row->v[i++] = fps_atomic_load(&c->row_writes);
	row->v[i++] = fps_atomic_load(&c->predicate_reads);
	row->v[i++] = fps_atomic_load(&c->predicate_writes);
	row->v[i++] = fps_atomic_load(&c->commits);
	row->v[i++] = fps_atomic_load(&c->rollbacks);
	for (int r = 0; r < FPS_NUM_ABORT_REASONS; r++)
		row->v[i++] = fps_atomic_load(&c->aborts[r]);
	for (int g = 0; g < FPS_MAX_COLUMN_GROUPS; g++)
		row->groups[g] = fps_atomic_load(&c->group_aborts[g]);
}

static bool
row_is_empty(RelStatsRow *row)
{
	for (int i = 0; i < lengthof(row->v); i++)
		if (row->v[i] != 0)
			return false;
	return true;
}

/*
 * fpsketch_relation_stats(): one row per (database, relation) counted
 * since the start or the last reset, and one with relid NULL for those the
 * table had no room for (when it counted anything).  Columns: datid, relid,
 * relations (1; for the NULL row, an estimate of how many it stands for),
 * row_reads, row_writes, predicate_reads, predicate_writes, commits,
 * rollbacks, one per abort reason as in fpsketch_stats, and aborts_by_group
 * (element g + 1 for column group g, up to the last group counted).
 */
PG_FUNCTION_INFO_V1(fpsketch_relation_stats);

Datum
fpsketch_relation_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RelStatsRow *rows;
	int			nrows = 0;
	int			maxrows;

	fps_require_shmem();
	InitMaterializedSRF(fcinfo, 0);

	/* copy under the lock (an ERROR releases it), build tuples after it */
	LWLockAcquire(relstats->lock, LW_SHARED);
	maxrows = (relstats_hash != NULL ? (int) hash_get_num_entries(relstats_hash) : 0) + 1;
	rows = palloc(sizeof(RelStatsRow) * maxrows);
	if (relstats_hash != NULL)
	{
		HASH_SEQ_STATUS seq;
		FpsRelStatsEntry *e;

		hash_seq_init(&seq, relstats_hash);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			if (nrows >= maxrows - 1)
			{
				hash_seq_term(&seq);
				break;
			}
			rows[nrows].key = e->key;
			rows[nrows].other = false;
			row_copy(&rows[nrows], &e->c);
			nrows++;
		}
	}
	rows[nrows].other = true;
	row_copy(&rows[nrows], &relstats->other);
	if (!row_is_empty(&rows[nrows]))
		nrows++;
	LWLockRelease(relstats->lock);

	for (int r = 0; r < nrows; r++)
	{
		RelStatsRow *row = &rows[r];
		Datum		values[4 + lengthof(row->v)];
		bool		nulls[4 + lengthof(row->v)];
		Datum		groups[FPS_MAX_COLUMN_GROUPS];
		int			ngroups = 0;
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));
		if (row->other)
		{
			nulls[i++] = true;
			nulls[i++] = true;
			values[i++] = Int64GetDatum(other_relations());
		}
		else
		{
			values[i++] = ObjectIdGetDatum(row->key.dbid);
			values[i++] = ObjectIdGetDatum(row->key.relid);
			values[i++] = Int64GetDatum(1);
		}
		for (int v = 0; v < lengthof(row->v); v++)
			values[i++] = Int64GetDatum((int64) row->v[v]);
		for (int g = 0; g < FPS_MAX_COLUMN_GROUPS; g++)
			if (row->groups[g] != 0)
				ngroups = g + 1;
		for (int g = 0; g < ngroups; g++)
			groups[g] = Int64GetDatum((int64) row->groups[g]);
		values[i++] = PointerGetDatum(construct_array(groups, ngroups, INT8OID,
													  sizeof(int64), FLOAT8PASSBYVAL,
													  TYPALIGN_DOUBLE));
		if (i != rsinfo->setDesc->natts)
			elog(ERROR, "fpsketch_relation_stats() returns %d columns, its SQL definition %d: reinstall the extension",
				 i, rsinfo->setDesc->natts);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
