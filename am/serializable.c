/*-------------------------------------------------------------------------
 *
 * serializable.c
 *	  Read-only transactions at SERIALIZABLE: at a timestamp, unless a
 *	  SERIALIZABLE transaction has used heap and fpsketch tables together.
 *
 * At SERIALIZABLE PostgreSQL's SSI orders heap tables and fpsketch's
 * protocol orders fpsketch tables.  A read-only transaction that reads at
 * a timestamp (am/visibility.c) never fails, but its fpsketch reads take no
 * SIREAD lock (SSI takes those in heap's scans, under an MVCC snapshot), and
 * it may see a version its snapshot does not: SSI cannot see the edges
 * through them.  A cycle through such a reader R needs a mixer: a
 * SERIALIZABLE transaction that may write and uses heap and fpsketch tables
 * together.  R's edges through fpsketch tables follow timestamps (an edge
 * into R from a version at or below its ts, out of it to one above), and
 * its edges through heap tables are SSI's, which SSI checks; a path that
 * leaves R by one kind of edge and comes back by the other changes kind in
 * a transaction that uses both, and only SERIALIZABLE ones order heap
 * tables at all.  (Read-write transactions at SERIALIZABLE read on their
 * snapshot: SSI sees them like heap's.)
 *
 * So R reads at a timestamp only if no mixer has been seen, and a mixer
 * fails while such a reader runs.  Dekker's handshake: a reader sets its
 * slot, then looks at the flag; a mixer sets the flag, then looks at the
 * slots; with a full barrier between, one of the two sees the other.  The
 * flag stays set until restart (a mixer may already have committed when a
 * reader's snapshot, older than its first fpsketch read, misses it), and
 * fpsketch_serializable_mixing_reset() clears it for tests.  Off with
 * fpsketch.serializable_timestamp_snapshots: read-only transactions at
 * SERIALIZABLE then always read on their snapshot.
 *
 * Shared state: the flag and one slot per PGPROC, atomics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "port/atomics.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/syscache.h"

#include "am.h"
#include "../fpsketch_am.h"

typedef struct SerializableMixing
{
	pg_atomic_uint32 mixer_seen;
	int			nslots;
	pg_atomic_uint32 ts_reader[FLEXIBLE_ARRAY_MEMBER];	/* per PGPROC */
} SerializableMixing;

static SerializableMixing *mixing = NULL;

/* Is relam the fpsketch access method? */
static bool
am_is_fpsketch(Oid relam)
{
	return OidIsValid(relam) && relam == get_table_am_oid("fpsketch", true);
}

/* this transaction */
static bool used_heap = false;
static bool used_fpsketch = false;
static bool may_write = false;	/* was read-write at one of its uses */
static bool is_mixer = false;
static bool is_ts_reader = false;

static int
slots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

Size
fps_serializable_shmem_size(void)
{
	return add_size(offsetof(SerializableMixing, ts_reader),
					mul_size(sizeof(pg_atomic_uint32), slots()));
}

/* In shmem_startup_hook, under AddinShmemInitLock. */
void
fps_serializable_shmem_init(void)
{
	bool		found;

	mixing = ShmemInitStruct("fpsketch serializable mixing",
							 fps_serializable_shmem_size(), &found);
	if (!found)
	{
		pg_atomic_init_u32(&mixing->mixer_seen, 0);
		mixing->nslots = slots();
		for (int i = 0; i < mixing->nslots; i++)
			pg_atomic_init_u32(&mixing->ts_reader[i], 0);
	}
}

/*
 * May this read-only SERIALIZABLE transaction read at a timestamp?  If so,
 * it is registered until it ends.
 */
bool
fps_serializable_may_read_at_ts(void)
{
	if (!fps_serializable_timestamp_snapshots || mixing == NULL ||
		pg_atomic_read_u32(&mixing->mixer_seen) != 0)
		return false;
	pg_atomic_write_u32(&mixing->ts_reader[MyProc->pgprocno], 1);
	pg_memory_barrier();
	if (pg_atomic_read_u32(&mixing->mixer_seen) != 0)
	{
		pg_atomic_write_u32(&mixing->ts_reader[MyProc->pgprocno], 0);
		return false;
	}
	is_ts_reader = true;
	return true;
}

/* This transaction is a mixer: say so, then fail if a reader at ts runs. */
static void
become_mixer(void)
{
	is_mixer = true;
	if (pg_atomic_exchange_u32(&mixing->mixer_seen, 1) == 0)
		ereport(LOG,
				(errmsg("fpsketch: a SERIALIZABLE transaction used heap and fpsketch tables together"),
				 errdetail("Read-only SERIALIZABLE transactions read on their snapshot from now on, not at a timestamp, until the server restarts.")));
	pg_memory_barrier();
	for (int i = 0; i < mixing->nslots; i++)
	{
		if (i == MyProc->pgprocno ||
			pg_atomic_read_u32(&mixing->ts_reader[i]) == 0)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update"),
				 errdetail("A read-only SERIALIZABLE transaction (process %d) reads fpsketch tables at a timestamp, which PostgreSQL's SSI does not see; a SERIALIZABLE transaction that uses heap and fpsketch tables together cannot run beside it.",
						   ProcGlobal->allProcs[i].pid),
				 errhint("The transaction might succeed if retried once that one ends.")));
	}
}

/*
 * A SERIALIZABLE transaction uses relation relid: note which kind of table
 * it is (catalogs, temporary tables and relations without storage do not
 * count), and whether the transaction is now a mixer.  Read-only uses count
 * too, for a transaction that was read-write at another (SET TRANSACTION
 * READ ONLY after a write).
 */
void
fps_serializable_note_relation(Oid relid)
{
	HeapTuple	tuple;
	Form_pg_class form;

	if (is_mixer || mixing == NULL || !IsolationIsSerializable() ||
		relid < FirstNormalObjectId)
		return;
	if (!XactReadOnly)
		may_write = true;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return;
	form = (Form_pg_class) GETSTRUCT(tuple);
	if ((form->relkind == RELKIND_RELATION || form->relkind == RELKIND_MATVIEW) &&
		form->relpersistence != RELPERSISTENCE_TEMP)
	{
		if (am_is_fpsketch(form->relam))
			used_fpsketch = true;
		else
			used_heap = true;
	}
	ReleaseSysCache(tuple);
	if (used_heap && used_fpsketch && may_write)
		become_mixer();
}

/* The relations a statement of a SERIALIZABLE transaction uses. */
void
fps_serializable_note_rtable(List *rtable)
{
	ListCell   *lc;

	if (is_mixer || mixing == NULL || !IsolationIsSerializable())
		return;
	foreach(lc, rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION)
			fps_serializable_note_relation(rte->relid);
	}
}

/* The transaction's end (commit, abort, prepare): forget it.  No ERROR. */
static void
fps_serializable_end_of_xact(void)
{
	if (is_ts_reader)
		pg_atomic_write_u32(&mixing->ts_reader[MyProc->pgprocno], 0);
	is_ts_reader = false;
	is_mixer = false;
	used_heap = false;
	used_fpsketch = false;
	may_write = false;
}

static void
serializable_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			fps_serializable_end_of_xact();
			break;
		default:
			break;
	}
}

void
fps_serializable_register_callbacks(void)
{
	RegisterXactCallback(serializable_xact_callback, NULL);
}

PG_FUNCTION_INFO_V1(fpsketch_serializable_mixing_reset);

/*
 * Forget that a mixer was seen, for tests: a mixer that committed while a
 * transaction that is still running read nothing yet could otherwise be
 * missed, so only when no other transaction runs.  Refused while a reader
 * at a timestamp or a mixer runs.
 */
Datum
fpsketch_serializable_mixing_reset(PG_FUNCTION_ARGS)
{
	fps_require_shmem();
	for (int i = 0; i < mixing->nslots; i++)
		if (pg_atomic_read_u32(&mixing->ts_reader[i]) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("a read-only SERIALIZABLE transaction reading at a timestamp is running")));
	if (is_mixer)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("this transaction used heap and fpsketch tables together at SERIALIZABLE")));
	pg_atomic_write_u32(&mixing->mixer_seen, 0);
	PG_RETURN_VOID();
}
