/*-------------------------------------------------------------------------
 *
 * point_lookup.c
 *	  Point lookups by row identity (DESIGN §6): the equality-prefix key of
 *	  a lookup is read only if it finds no row.
 *
 * Under TicToc, an index scan whose keys fix every column of the index
 * that gives rows their keys (the primary key, or the replica identity
 * index: unique, checked at once) by equality selects at most one row, and
 * every row it could ever select has the same row key K(v).  If it finds
 * that row, the row's keys protect the read as they protect any read:
 *	- the row leaves the predicate only by a delete, or an update of its
 *	  identity, and either writes every group of K(v);
 *	- a row enters it only by an insert with identity v, which writes
 *	  every group of K(v) as well, after the removal's install (the unique
 *	  check waited for it): a row write commits after the key's rts.
 * Validation of the read then orders the lookup before both.  So the
 * equality-prefix key P(v) need not be read, nor a snapshot taken after
 * it.  Other unique indexes do not qualify: their rows have other row
 * keys, and inserts only write P(v), a phantom key whose writers are not
 * ordered among themselves (cc/tictoc.c), so nothing would order the
 * re-insert after the removal, or after the lookup.  STO orders phantom
 * writers by their start, not after one another, either.
 *
 * A lookup that finds nothing reads P(v) when it ends, after its snapshot
 * rather than before it (§6.3).  The read waits until no writer is between
 * PRE_COMMIT and its install.  An insert of v that installed on P(v) before
 * it, and that the snapshot misses, is a row the lookup should have
 * returned.  So unless the snapshot still sees every writer of this
 * database's fpsketch tables that has completed by the read, the index is
 * looked at again: an entry for v whose inserter committed unseen is a
 * 40001.  Later writers change P(v) after the read, which validation sees.
 *
 * A scan observes absence only when the index is exhausted, which resets
 * the fetch; a reset cannot tell that from a rescan, so every reset settles
 * the lookup it ends, with the keys saved when it began (a rescan's reset
 * comes after the executor evaluated the new ones).  A lookup ended
 * without a reset returned a row or observed nothing.
 *
 * Shared state: none directly; the protocol's entries through cc/.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "catalog/pg_index.h"
#include "nodes/execnodes.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am.h"
#include "../fpsketch_am.h"

/* No lookup is saved any more (the scan ends, or is no point lookup). */
void
fps_point_lookup_forget(FpsIndexFetch *f)
{
	FpsPointLookup *l = &f->lookup;

	for (int i = 0; i < l->nkeys; i++)
		if (!l->byval[i] && DatumGetPointer(l->keys[i].sk_argument) != NULL)
			pfree(DatumGetPointer(l->keys[i].sk_argument));
	l->nkeys = 0;
	l->deferred = false;
	l->found = false;
}

/*
 * Save the scan's equality keys, keyidx[p] for column p (those that
 * equality_prefix() hashed), with their values copied into the fetch's
 * memory.
 */
static void
save_equality_keys(FpsIndexFetch *f, IndexScanState *iss, int nkeys, const int *keyidx)
{
	FpsPointLookup *l = &f->lookup;
	Relation	index = iss->iss_ScanDesc->indexRelation;
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(f));

	for (int p = 0; p < nkeys; p++)
	{
		ScanKey		sk = &iss->iss_ScanKeys[keyidx[p]];

		get_typlenbyval(index->rd_opcintype[p], &l->len[p], &l->byval[p]);
		l->keys[p] = *sk;
		l->keys[p].sk_argument = datumCopy(sk->sk_argument, l->byval[p], l->len[p]);
		l->nkeys = p + 1;
	}
	MemoryContextSwitchTo(old);
}

/*
 * Are pi's columns those row keys hash, in their order and collations?
 * Then values equal by the index's equality (its columns' default one,
 * keys.c) give one row key.
 */
static bool
is_row_identity(FpsRelInfo *info, FpsPrefixIndex *pi)
{
	if (info->by_tid || info->nkeys != pi->nkeys)
		return false;
	for (int i = 0; i < pi->nkeys; i++)
		if (info->attnums[i] != pi->attnums[i] ||
			info->collations[i] != pi->collations[i])
			return false;
	return true;
}

/* Do iss's equality keys (keyidx) name the values saved for the last lookup? */
static bool
same_values(FpsPointLookup *l, IndexScanState *iss, const int *keyidx)
{
	if (l->nkeys == 0 || l->index != iss->iss_ScanDesc->indexRelation)
		return false;
	for (int p = 0; p < l->nkeys; p++)
	{
		ScanKey		sk = &iss->iss_ScanKeys[keyidx[p]];

		if (sk->sk_flags != l->keys[p].sk_flags ||
			sk->sk_subtype != l->keys[p].sk_subtype ||
			sk->sk_collation != l->keys[p].sk_collation ||
			!datumIsEqual(sk->sk_argument, l->keys[p].sk_argument,
						  l->byval[p], l->len[p]))
			return false;
	}
	return true;
}

/*
 * The executor's index scan iss is about to run with keys that fix every
 * column of pi by equality (hashes of their values): defer its predicate
 * read if pi is a unique index checked at once.  Under READ COMMITTED the
 * scan still reads with a snapshot taken now if a transaction completed
 * since the statement's (as a scan that read its key does): fewer versions
 * that are already stale.
 *
 * The same values again, just settled (a rescan with them, or the reset at
 * exhaustion): the scan reads with the same snapshot, so it finds what the
 * last one found, and what that one settled stands.
 */
bool
fps_point_lookup_defer(FpsIndexFetch *f, IndexScanState *iss, FpsRelInfo *info,
					   FpsPrefixIndex *pi, const uint64 *hashes, const int *keyidx)
{
	FpsPointLookup *l = &f->lookup;
	IndexScanDesc scan = iss->iss_ScanDesc;
	Form_pg_index index = scan->indexRelation->rd_index;
	FpsAccess  *access;
	fps_u64		key;

	if (fps_protocol != FPS_PROTOCOL_TICTOC ||
		!index->indisunique || !index->indimmediate || !index->indisvalid ||
		index->indnkeyatts != pi->nkeys || !is_row_identity(info, pi))
	{
		fps_point_lookup_forget(f);
		return false;
	}
	if (!l->deferred && same_values(l, iss, keyidx))
		return true;
	fps_point_lookup_forget(f);
	key = fps_prefix_key(pi, pi->nkeys, hashes);

	/*
	 * Read before (an earlier lookup found nothing): reading it again costs
	 * no pin, and finds at once that an insert came since.
	 */
	access = fps_txn_lookup(key);
	if (access != NULL && access->is_read)
		return false;
	save_equality_keys(f, iss, pi->nkeys, keyidx);
	l->index = scan->indexRelation;
	l->key = key;
	if (f->fresh_snapshot != NULL)
	{
		UnregisterSnapshot(f->fresh_snapshot);
		f->fresh_snapshot = NULL;
	}
	f->predicate_read = false;
	if (!IsolationUsesXactSnapshot())
		f->fresh_snapshot = fps_fresher_snapshot(scan->xs_snapshot);
	l->snapshot = f->fresh_snapshot != NULL ? f->fresh_snapshot : scan->xs_snapshot;
	l->deferred = true;
	l->found = false;
	return true;
}

/*
 * The lookup ends (or may have): if it found no row, read its key now, and
 * look at the index again if its snapshot misses a writer that may have
 * installed there before the read (header).
 */
void
fps_point_lookup_settle(FpsIndexFetch *f)
{
	FpsPointLookup *l = &f->lookup;
	Relation	heap = f->heap.xs_base.rel;
	FpsRelInfo *info;
	static SnapshotData latest_data = {SNAPSHOT_MVCC};
	Snapshot	latest;
	IndexScanDesc walk;
	ItemPointer tid;

	if (!l->deferred)
		return;
	l->deferred = false;
	if (l->found || !fps_tracking_active(heap, &info) || fps_writes_escalated(heap))
		return;
	f->predicate_key = fps_read_predicate_key(info, l->key, true);
	f->predicate_read = true;
	latest = GetSnapshotData(&latest_data);
	if (fps_snapshot_sees_writers(l->snapshot, latest,
								  fps_relation_filter(RelationGetRelid(heap))))
		return;
	walk = fps_index_walk_begin(l->index, l->snapshot, l->keys, l->nkeys);
	while ((tid = index_getnext_tid(walk, ForwardScanDirection)) != NULL)
	{
		bool		unseen;

		(void) fps_examine_index_entry(heap, tid, latest, l->snapshot, &unseen);
		if (unseen)
			fps_abort(FPS_ABORT_PHANTOM, info->relid);
	}
	index_endscan(walk);
}
