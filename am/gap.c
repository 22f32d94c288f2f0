/*-------------------------------------------------------------------------
 *
 * gap.c
 *	  Gap keys (DESIGN §6): a btree scan conflicts only with the inserts
 *	  and deletes in the part of the index order it read, as next-key
 *	  locking gives, instead of with every change to its equality prefix.
 *
 * A queue consumer (ORDER BY k LIMIT 1, min(k)) under an equality prefix
 * reads one entry; an equality-prefix key would make it conflict with
 * every insert into the prefix, at the other end of the range too (TPC-C's
 * Delivery against New-Order).
 *
 * Keys.  For a btree whose key columns are NOT NULL, and a scan whose keys
 * fix its first p columns by equality and bound at most column p + 1 (a
 * contiguous range of the index order), in group g (the p values):
 *	GAP(p, e)	the gap just below entry e and e itself, for scans in e's
 *				p-group: hash of the index, p and all of e's key values;
 *	END(p, g)	the gap after the last entry of group g;
 *	ESC(p)		every gap of the index at level p: read once by each gap
 *				scan under p columns (with the snapshot rules of a prefix
 *				key, predicate.c), written by a transaction that changed
 *				too many entries to walk them, and instead of walks at a
 *				level no gap scan has read (gap_levels.c).
 * Entries with equal values share their keys; that is only coarser.
 *
 * Readers.  A forward scan reads GAP(p, e) for every entry e the index
 * returns (visible or not: the entry's values come from the index tuple),
 * when it passes it.  When the index is exhausted it walks on, from after
 * the last entry, through the group: GAP(p, x) for each entry x up to and
 * including the first stable one (below), or END(p, g) if there is none.
 * A scan that stops early (LIMIT) reads nothing beyond its last entry.
 *
 * Writers.  A transaction that inserted or deleted entry w (an UPDATE
 * that changed the index's columns does both) walks at PRE_COMMIT, before
 * it locks its keys, from after w: it writes GAP(p, w) for every p, and
 * for every p, GAP(p, x) for each entry x in w's p-group up to and
 * including the first stable one (which it also follows), or END(p, w's
 * group) once the walk leaves that group or the index ends.  At a level p
 * that no gap scan has read it writes ESC(p) once instead, which every
 * scan at p reads: enough whenever a scan at p begins (gap_levels.c).
 * The walks of several entries of one index go in index order, one going
 * on as the next where it meets it (walk_after_writes).
 *
 * Stable: the entry's row was inserted by a committed transaction (not
 * this one) and a snapshot taken now sees it (no committed delete).  Both
 * walks step over unstable entries (in-progress or aborted inserts, rows
 * deleted by committed or own transactions) because these may vanish:
 * the gap a reader read up to an unstable entry would otherwise merge,
 * unseen, with the next one.
 *
 * Why this is enough, in every order of events.  Let reader R's range
 * contain the place of a new entry w.
 *	- R passed the place before w was in the index: the entries above the
 *	  place that R read a key of (passed, or walked at its end) include
 *	  the first one stable when R read it, s (or R read END).  w's walk,
 *	  which follows w's insertion, meets only entries between w and s
 *	  that arrived after R passed, and s itself (or a stable entry past
 *	  it, if s was deleted: its deleter wrote GAP(p, s), which R read, and
 *	  walked on).  If w's walk stops at one of the new entries, x, x's
 *	  inserter committed and wrote the gap R read (or a gap whose
 *	  inserter did, and so on), so it commits after R; w follows GAP(p, x)
 *	  (cc_phantom_follow: commit after its last install, x's inserter's),
 *	  so w commits after R too.  An inserter of x that did not walk p
 *	  (p had expired for it, or x was past FPS_GAP_MAX_WALKS) installed
 *	  ESC(p), which R read, instead of GAP(p, x): so w also follows ESC(p)
 *	  of every level it walks, once its walks are done.  Phantom-key writers are otherwise not
 *	  ordered among themselves: without the follow, a gap split by a
 *	  committed insert would lose its readers.  Otherwise w writes the key
 *	  R read and commits after R.
 *	- R passes w's entry: R reads GAP(p, w), which w writes.  If w's
 *	  writer has already committed unseen by R's snapshot, R fails at once
 *	  (an insert into its range that its result misses, and a read of its
 *	  key would order R after it).
 * Deletes need no more for R: a row R returned is a row key R read.
 * Reads of gap keys happen after the scan's snapshot was taken, unlike
 * prefix keys (§6.3): a writer that installed on GAP(p, e) unseen did so
 * for an entry R passes (caught above) or for one outside R's range, which
 * only orders R after it; R's reads of anything else it wrote are stale
 * reads, caught by row keys.
 *
 * Scans read prefix keys instead when they run backward (a cursor that can
 * scroll, max()), hold an array, row or NULL key, bound columns after
 * p + 1, or read at a timestamp; so do indexes with a nullable key column.
 * Writers always walk (except under MVTO, whose readers all read at a
 * timestamp, through prefix keys): fpsketch.gap_predicates only chooses
 * what readers read, so sessions may differ.
 *
 * Shared state: none directly; keys through predicate.c and cc/.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/transam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "nodes/plannodes.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am.h"
#include "../fpsketch_am.h"

bool		fps_gap_predicates = true;

/*
 * Entries a transaction walks from at PRE_COMMIT; past this it writes the
 * index's ESC key instead (a bulk load would otherwise walk every row).
 */
#define FPS_GAP_MAX_WALKS 1024

/* An entry this transaction inserted or deleted. */
typedef struct GapWrite
{
	Oid			relid;
	Oid			indexoid;
	int			nkeys;
	Datum		values[INDEX_MAX_KEYS];
} GapWrite;

static List *gap_writes = NIL;	/* in TopTransactionContext */
static int	ngap_writes = 0;

/* ---- entries ---- */

/* Hashes of the key values of an index tuple. */
static void
entry_hashes(FpsPrefixIndex *pi, IndexTuple itup, TupleDesc itupdesc, uint64 *hashes)
{
	for (int i = 0; i < pi->nkeys; i++)
	{
		bool		isnull;
		Datum		value = index_getattr(itup, i + 1, itupdesc, &isnull);

		hashes[i] = fps_hash_value(pi->types[i], pi->collations[i], value, isnull);
	}
}

/*
 * The heap row the entry at tid points to: is it stable (see the header),
 * and (reader != NULL) was it inserted by a transaction that committed
 * but that reader's snapshot does not see?
 */
bool
fps_examine_index_entry(Relation heap, ItemPointer tid, Snapshot now, Snapshot reader,
						bool *unseen)
{
	Buffer		buf = ReadBuffer(heap, ItemPointerGetBlockNumber(tid));
	Page		page;
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);
	bool		inserted = false;
	bool		stable = false;

	*unseen = false;
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (off >= FirstOffsetNumber && off <= PageGetMaxOffsetNumber(page))
	{
		ItemId		lp = PageGetItemId(page, off);

		/* a redirect: the root was pruned, its insert is long visible */
		if (ItemIdIsRedirected(lp))
			inserted = true;
		else if (ItemIdIsNormal(lp))
		{
			HeapTupleHeader htup = (HeapTupleHeader) PageGetItem(page, lp);
			TransactionId xmin = HeapTupleHeaderGetXmin(htup);

			inserted = !TransactionIdIsCurrentTransactionId(xmin) &&
				TransactionIdDidCommit(xmin);
			*unseen = inserted && reader != NULL && XidInMVCCSnapshot(xmin, reader);
		}
	}
	if (inserted)
	{
		ItemPointerData t = *tid;
		HeapTupleData tuple;
		bool		all_dead;

		stable = heap_hot_search_buffer(&t, heap, buf, now, &tuple, &all_dead, true);
	}
	UnlockReleaseBuffer(buf);
	return stable;
}

/* Which transactions have completed now (not registered: used at once). */
static Snapshot
snapshot_now(void)
{
	static SnapshotData now_data = {SNAPSHOT_MVCC};

	return GetSnapshotData(&now_data);
}

/*
 * keys[0] = the entries whose columns first..first+ncols-1 come after
 * values, in the index's order (a row comparison for several columns).
 * members must have room for ncols keys.
 */
static void
keys_after(Relation index, int first, int ncols, const Datum *values,
		   ScanKey key, ScanKey members)
{
	if (ncols == 1)
	{
		Oid			type = index->rd_opcintype[first];
		Oid			op = get_opfamily_member(index->rd_opfamily[first], type, type,
											 BTGreaterStrategyNumber);

		if (!OidIsValid(op))
			elog(ERROR, "fpsketch: no > operator in the operator family of index \"%s\"",
				 RelationGetRelationName(index));
		ScanKeyEntryInitialize(key, 0, first + 1, BTGreaterStrategyNumber, type,
							   index->rd_indcollation[first], get_opcode(op), values[0]);
		return;
	}
	for (int i = 0; i < ncols; i++)
	{
		int			col = first + i;
		Oid			type = index->rd_opcintype[col];

		ScanKeyEntryInitialize(&members[i], SK_ROW_MEMBER, col + 1,
							   BTGreaterStrategyNumber, type, index->rd_indcollation[col],
							   get_opfamily_proc(index->rd_opfamily[col], type, type,
												 BTORDER_PROC),
							   values[i]);
	}
	members[ncols - 1].sk_flags |= SK_ROW_END;
	ScanKeyEntryInitialize(key, SK_ROW_HEADER, first + 1, BTGreaterStrategyNumber,
						   InvalidOid, InvalidOid, InvalidOid, PointerGetDatum(members));
}

/* A scan of index's entries (every one, visible or not) with keys. */
IndexScanDesc
fps_index_walk_begin(Relation index, Snapshot snapshot, ScanKey keys, int nkeys)
{
	/* the bitmap variant: no table fetch, which would be ours */
	IndexScanDesc scan = index_beginscan_bitmap(index, snapshot, nkeys);

	scan->xs_want_itup = true;
	index_rescan(scan, keys, nkeys, NULL, 0);
	return scan;
}

/* ---- readers ---- */

/*
 * Do the scan keys select one contiguous range of the index order: the
 * first nprefix columns fixed, bounds on the next one only?
 */
static bool
scan_is_contiguous(IndexScanState *iss, int nprefix)
{
	for (int k = 0; k < iss->iss_NumScanKeys; k++)
	{
		ScanKey		sk = &iss->iss_ScanKeys[k];

		/* every key column is NOT NULL */
		if (sk->sk_flags & SK_SEARCHNOTNULL)
			continue;
		if (sk->sk_flags & (SK_ISNULL | SK_ROW_HEADER | SK_SEARCHARRAY |
							SK_SEARCHNULL | SK_ORDER_BY))
			return false;
		if (sk->sk_attno <= nprefix)
			continue;
		if (sk->sk_attno == nprefix + 1 && sk->sk_strategy != BTEqualStrategyNumber)
			continue;
		return false;
	}
	return true;
}

/* Is scan key sk one that says where the scan starts (group_keys)? */
static bool
is_start_key(ScanKey sk, int nprefix)
{
	if (sk->sk_flags & SK_SEARCHNOTNULL)
		return false;
	if (sk->sk_attno <= nprefix)
		return sk->sk_strategy == BTEqualStrategyNumber;
	return sk->sk_attno == nprefix + 1 &&
		(sk->sk_strategy == BTGreaterStrategyNumber ||
		 sk->sk_strategy == BTGreaterEqualStrategyNumber);
}

/*
 * Do iss's keys start where those saved at the last begin did?  Then the
 * scan goes on (index_restrpos, or a rescan with the same keys): every
 * gap up to the last entry passed was read, and a change there since
 * installs on a key read, which a read again or validation finds.
 */
static bool
same_start(FpsGapScan *g, IndexScanState *iss, int nprefix)
{
	int			n = 0;

	if (!g->start_saved || g->iss != iss || g->nprefix != nprefix)
		return false;
	for (int k = 0; k < iss->iss_NumScanKeys; k++)
	{
		ScanKey		sk = &iss->iss_ScanKeys[k];
		FpsGapStartKey *s = &g->start[n];

		if (!is_start_key(sk, nprefix))
			continue;
		if (n >= g->nstart || s->attno != sk->sk_attno || s->strategy != sk->sk_strategy ||
			s->flags != sk->sk_flags || s->subtype != sk->sk_subtype ||
			s->collation != sk->sk_collation ||
			!datumIsEqual(s->value, sk->sk_argument, s->byval, s->len))
			return false;
		n++;
	}
	return n == g->nstart;
}

/* Save iss's start keys (copies in the fetch's memory) for same_start. */
static void
save_start(FpsIndexFetch *f, IndexScanState *iss, int nprefix)
{
	FpsGapScan *g = &f->gap;
	Relation	index = iss->iss_ScanDesc->indexRelation;
	int			n = 0;

	for (int i = 0; i < g->nstart; i++)
		if (!g->start[i].byval && DatumGetPointer(g->start[i].value) != NULL)
			pfree(DatumGetPointer(g->start[i].value));
	g->nstart = 0;
	g->start_saved = false;
	for (int k = 0; k < iss->iss_NumScanKeys; k++)
	{
		ScanKey		sk = &iss->iss_ScanKeys[k];
		FpsGapStartKey *s;
		Oid			type;
		MemoryContext old;

		if (!is_start_key(sk, nprefix))
			continue;
		/* too many to compare: a later begin starts afresh */
		if (n >= FPS_GAP_MAX_START_KEYS)
		{
			g->nstart = n;
			return;
		}
		s = &g->start[n];
		s->attno = sk->sk_attno;
		s->strategy = sk->sk_strategy;
		s->flags = sk->sk_flags;
		s->subtype = sk->sk_subtype;
		s->collation = sk->sk_collation;
		type = OidIsValid(sk->sk_subtype) ? sk->sk_subtype :
			index->rd_opcintype[sk->sk_attno - 1];
		get_typlenbyval(type, &s->len, &s->byval);
		old = MemoryContextSwitchTo(GetMemoryChunkContext(f));
		s->value = datumCopy(sk->sk_argument, s->byval, s->len);
		MemoryContextSwitchTo(old);
		g->nstart = ++n;
	}
	g->start_saved = true;
}

/*
 * The executor's index scan iss is about to run with keys that fix nprefix
 * columns of pi (hashes of their values in group): read gap keys for it,
 * if it qualifies (header).  The caller then reads pi's ESC key.
 *
 * index_restrpos() resets the fetch too (a merge join's inner scan, at
 * every outer row that repeats a key): a scan that starts where the last
 * one did keeps what it passed and whether it widened.  Starting afresh
 * there would look at the gap from the scan's start up to each entry
 * again, at every restore (quadratic; found by review).
 */
bool
fps_gap_scan_begin(FpsIndexFetch *f, IndexScanState *iss, FpsPrefixIndex *pi,
				   int nprefix, const uint64 *group)
{
	FpsGapScan *g = &f->gap;
	IndexScan  *plan = (IndexScan *) iss->ss.ps.plan;

	g->active = false;
	g->check_unseen = false;
	if (!fps_gap_predicates || !pi->has_gaps || nprefix >= pi->nkeys ||
		iss->iss_NumOrderByKeys > 0 ||
		ScanDirectionIsBackward(plan->indexorderdir) ||
		(iss->ss.ps.state->es_top_eflags & EXEC_FLAG_BACKWARD) ||
		!scan_is_contiguous(iss, nprefix))
	{
		g->start_saved = false;
		return false;
	}
	fps_gap_level_read(pi->indexoid, nprefix);
	/* before amrescan, which allocates the room for index tuples then */
	iss->iss_ScanDesc->xs_want_itup = true;
	g->check_unseen = true;
	fps_hold_gap_entries(iss->iss_ScanDesc->xs_snapshot);
	if (same_start(g, iss, nprefix))
	{
		/* its prefix key stands for the rest (widen_to_prefix) */
		g->active = !g->widened;
		return true;
	}
	g->scan = iss->iss_ScanDesc;
	g->iss = iss;
	g->index = *pi;
	g->nprefix = nprefix;
	memcpy(g->group, group, sizeof(uint64) * nprefix);
	g->passed_any = false;
	g->walked_end = false;
	g->widened = false;
	g->nread = 0;
	save_start(f, iss, nprefix);
	g->active = true;
	return true;
}

/* The snapshot the scan reads rows with. */
static Snapshot
scan_snapshot(FpsIndexFetch *f)
{
	return f->fresh_snapshot != NULL ? f->fresh_snapshot : f->gap.scan->xs_snapshot;
}

/* Keys selecting the scan's group (its equality keys); *nkeys set. */
static void
group_keys(FpsGapScan *g, ScanKey keys, int *nkeys, bool with_start)
{
	*nkeys = 0;
	for (int k = 0; k < g->iss->iss_NumScanKeys; k++)
	{
		ScanKey		sk = &g->iss->iss_ScanKeys[k];

		if (sk->sk_flags & SK_SEARCHNOTNULL)
			continue;
		if (sk->sk_attno <= g->nprefix && sk->sk_strategy == BTEqualStrategyNumber)
			keys[(*nkeys)++] = *sk;
		/* where the scan began */
		else if (with_start && sk->sk_attno == g->nprefix + 1 &&
				 (sk->sk_strategy == BTGreaterStrategyNumber ||
				  sk->sk_strategy == BTGreaterEqualStrategyNumber))
			keys[(*nkeys)++] = *sk;
	}
}

/*
 * A walk through the scan's group from after entry prev (an index tuple of
 * the index), or from where the scan began if prev is NULL.
 */
static IndexScanDesc
walk_group_from(FpsIndexFetch *f, IndexTuple prev, ScanKey keys, ScanKey members)
{
	FpsGapScan *g = &f->gap;
	Relation	index = g->scan->indexRelation;
	int			nkeys;

	group_keys(g, keys, &nkeys, prev == NULL);
	if (prev != NULL)
	{
		Datum		values[INDEX_MAX_KEYS];
		int			ncols = g->index.nkeys - g->nprefix;

		for (int i = 0; i < ncols; i++)
		{
			bool		isnull;

			values[i] = index_getattr(prev, g->nprefix + i + 1,
									  g->scan->xs_itupdesc, &isnull);
		}
		keys_after(index, g->nprefix, ncols, values, &keys[nkeys++], members);
	}
	return fps_index_walk_begin(index, scan_snapshot(f), keys, nkeys);
}

/* Does entry a come before entry b in the index order (same group)? */
static bool
entry_precedes(FpsGapScan *g, IndexTuple a, TupleDesc adesc, IndexTuple b, TupleDesc bdesc)
{
	Relation	index = g->scan->indexRelation;

	for (int col = g->nprefix; col < g->index.nkeys; col++)
	{
		bool		anull;
		bool		bnull;
		Datum		av = index_getattr(a, col + 1, adesc, &anull);
		Datum		bv = index_getattr(b, col + 1, bdesc, &bnull);
		int32		cmp = DatumGetInt32(FunctionCall2Coll(index_getprocinfo(index, col + 1, BTORDER_PROC),
														  index->rd_indcollation[col], av, bv));

		if (cmp != 0)
			return cmp < 0;
	}
	return false;
}

/*
 * The key covering the part of the group after prev (up to entry upto, or
 * to the group's end if NULL) has just been read: look at that part of the
 * index now.  An entry the scan did not pass came after its snapshot: if
 * its inserter committed, the scan misses a row of its range (40001); if
 * it is in flight, its gap key is read (its commit installs there).
 * Inserts after this look write the key read, or the gap of an entry read
 * here (header).  gaps: read the keys of unstable entries.
 *
 * with_upto: upto is in the scan's range, and every entry with its values
 * is looked at too, whichever side of upto its heap TID puts it: entries
 * with equal values share their key, so one inserted after the page was
 * copied (a duplicate, or a deleted key inserted again beside its dead
 * entry) and committed before the key was read orders the scan after a
 * row it misses (found by review).  Entries with prev's values need no
 * look: the look when prev's key was read covered those there were, and
 * later ones install on that key after the scan read it.  Within a run of
 * equal values the walk starts past the run: a run costs its length once,
 * not once per entry.  upto itself (its heap TID, upto_tid) is skipped: the
 * scan fetches it next, or the end walk examined it.
 */
static void
look_again(FpsIndexFetch *f, IndexTuple prev, IndexTuple upto, ItemPointer upto_tid,
		   bool with_upto, bool gaps)
{
	FpsGapScan *g = &f->gap;
	Relation	heap = f->heap.xs_base.rel;
	FpsRelInfo *info = fps_relinfo(heap);
	Snapshot	reader = scan_snapshot(f);
	ScanKeyData keys[2 * INDEX_MAX_KEYS + 1];
	ScanKeyData members[INDEX_MAX_KEYS];
	IndexScanDesc walk = walk_group_from(f, prev, keys, members);
	ItemPointer tid;

	while ((tid = index_getnext_tid(walk, ForwardScanDirection)) != NULL)
	{
		bool		unseen;
		bool		stable;

		if (upto != NULL &&
			(with_upto ?
			 entry_precedes(g, upto, g->scan->xs_itupdesc, walk->xs_itup, walk->xs_itupdesc) :
			 !entry_precedes(g, walk->xs_itup, walk->xs_itupdesc, upto, g->scan->xs_itupdesc)))
			break;
		if (upto_tid != NULL && ItemPointerEquals(tid, upto_tid))
			continue;
		stable = fps_examine_index_entry(heap, tid, snapshot_now(), reader, &unseen);
		if (unseen)
			fps_abort(FPS_ABORT_PHANTOM, info->relid);
		if (gaps && !stable)
		{
			uint64		hashes[INDEX_MAX_KEYS];

			entry_hashes(&g->index, walk->xs_itup, walk->xs_itupdesc, hashes);
			fps_read_predicate_key(info, fps_gap_key(&g->index, g->nprefix, hashes), true);
		}
	}
	index_endscan(walk);
}

/*
 * Past fpsketch.escalation_threshold gap keys in one scan, or when the pin
 * budget refuses one, the rest of the scan reads the equality prefix (or
 * the relation) instead: read, then the rest of the group looked at again
 * (look_again), as for a gap key.
 */
static void
widen_to_prefix(FpsIndexFetch *f, FpsRelInfo *info, IndexTuple prev)
{
	FpsGapScan *g = &f->gap;

	g->active = false;
	g->widened = true;
	fps_read_predicate_key(info,
						   g->nprefix > 0 ? fps_prefix_key(&g->index, g->nprefix, g->group) :
						   info->relation_key,
						   g->nprefix > 0);
	look_again(f, prev, NULL, NULL, false, false);
}

/* Has the leaf page blkno changed since the scan read it at lsn? */
static bool
leaf_page_changed(Relation index, BlockNumber blkno, XLogRecPtr lsn)
{
	Buffer		buf = ReadBuffer(index, blkno);
	XLogRecPtr	now;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	now = PageGetLSN(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	return now != lsn;
}

/*
 * The index returned an entry (f->gap.scan->xs_itup): read its gap.
 *
 * btree copies a leaf page's entries when it first reads the page, so the
 * gap key is read after the scan looked at the gap.  An insert below the
 * entry in between, committed and installed on the key before the read,
 * would order the scan after a row it missed.  Unless the page is
 * unchanged since (its LSN: an insert into the page changes it) and the
 * previous entry is on it too, the gap is looked at again after the read.
 */
void
fps_gap_read_entry(FpsIndexFetch *f)
{
	FpsGapScan *g = &f->gap;
	IndexTuple	itup = g->scan->xs_itup;
	FpsRelInfo *info = fps_relinfo(f->heap.xs_base.rel);
	BTScanOpaque so = (BTScanOpaque) g->scan->opaque;
	IndexTuple	prev = g->passed_any ? g->last : NULL;
	uint64		hashes[INDEX_MAX_KEYS];
	fps_u64		key;
	Size		size;

	if (itup == NULL)
		elog(ERROR, "fpsketch: index scan of \"%s\" returned no index tuple",
			 RelationGetRelationName(g->scan->indexRelation));
	if (++g->nread > fps_escalation_threshold)
	{
		widen_to_prefix(f, info, prev);
		return;
	}
	entry_hashes(&g->index, itup, g->scan->xs_itupdesc, hashes);
	key = fps_gap_key(&g->index, g->nprefix, hashes);
	if (fps_read_predicate_key(info, key, true) != key)
	{
		/* the pin budget is spent: the relation key was read instead */
		g->active = false;
		g->widened = true;
		look_again(f, prev, NULL, NULL, false, false);
		return;
	}
	if (prev == NULL || so->currPos.itemIndex == so->currPos.firstItem ||
		leaf_page_changed(g->scan->indexRelation, so->currPos.currPage, so->currPos.lsn))
		look_again(f, prev, itup, &g->scan->xs_heaptid, true, true);

	/* where the walk at the end of the scan starts from */
	size = IndexTupleSize(itup);
	if (g->last_space < size)
	{
		if (g->last != NULL)
			pfree(g->last);
		g->last = MemoryContextAlloc(GetMemoryChunkContext(f), size);
		g->last_space = size;
	}
	memcpy(g->last, itup, size);
	g->passed_any = true;
	g->walked_end = false;
}

/*
 * The scan's entry at tid has no version its snapshot sees.  If its row
 * was inserted by a transaction that committed unseen, the scan's result
 * misses a row of its range: fail (header).
 */
void
fps_gap_check_unseen(FpsIndexFetch *f, ItemPointer tid, Snapshot snapshot)
{
	bool		unseen;

	(void) fps_examine_index_entry(f->heap.xs_base.rel, tid, snapshot_now(), snapshot,
								   &unseen);
	if (unseen)
		fps_abort(FPS_ABORT_PHANTOM, RelationGetRelid(f->heap.xs_base.rel));
}

/* Does entry e satisfy the scan's upper bounds (on column nprefix + 1)? */
static bool
within_upper_bounds(FpsGapScan *g, IndexTuple e, TupleDesc desc)
{
	for (int k = 0; k < g->iss->iss_NumScanKeys; k++)
	{
		ScanKey		sk = &g->iss->iss_ScanKeys[k];
		bool		isnull;
		Datum		value;

		if (sk->sk_attno != g->nprefix + 1 || (sk->sk_flags & SK_SEARCHNOTNULL) ||
			(sk->sk_strategy != BTLessStrategyNumber &&
			 sk->sk_strategy != BTLessEqualStrategyNumber))
			continue;
		value = index_getattr(e, sk->sk_attno, desc, &isnull);
		if (isnull ||
			!DatumGetBool(FunctionCall2Coll(&sk->sk_func, sk->sk_collation, value,
											sk->sk_argument)))
			return false;
	}
	return true;
}

/*
 * The index is exhausted: the rest of the range lies between the last
 * entry passed (or where the scan began) and the first stable entry after
 * it in the group, or the group's end.  Find that entry, read its gap key
 * (or END), then look at the part before it again (look_again).
 */
static void
walk_to_group_end(FpsIndexFetch *f)
{
	FpsGapScan *g = &f->gap;
	Relation	heap = f->heap.xs_base.rel;
	FpsRelInfo *info = fps_relinfo(heap);
	ScanKeyData keys[2 * INDEX_MAX_KEYS + 1];
	ScanKeyData members[INDEX_MAX_KEYS];
	IndexTuple	prev = g->passed_any ? g->last : NULL;
	IndexScanDesc walk = walk_group_from(f, prev, keys, members);
	ItemPointer tid;
	IndexTuple	stop = NULL;
	ItemPointerData stop_tid;
	bool		stop_in_range = false;

	while ((tid = index_getnext_tid(walk, ForwardScanDirection)) != NULL)
	{
		bool		unseen;

		if (fps_examine_index_entry(heap, tid, snapshot_now(), scan_snapshot(f), &unseen))
		{
			uint64		hashes[INDEX_MAX_KEYS];

			/*
			 * It may have come into the range after the scan read the
			 * index: then the scan missed it (found by the checker).
			 */
			stop_in_range = within_upper_bounds(g, walk->xs_itup, walk->xs_itupdesc);
			if (unseen && stop_in_range)
				fps_abort(FPS_ABORT_PHANTOM, info->relid);

			entry_hashes(&g->index, walk->xs_itup, walk->xs_itupdesc, hashes);
			fps_read_predicate_key(info, fps_gap_key(&g->index, g->nprefix, hashes), true);
			stop = CopyIndexTuple(walk->xs_itup);
			stop_tid = *tid;
			break;
		}
	}
	index_endscan(walk);
	if (stop == NULL)
		fps_read_predicate_key(info, fps_gap_end_key(&g->index, g->nprefix, g->group), true);
	look_again(f, prev, stop, stop != NULL ? &stop_tid : NULL, stop_in_range, true);
	if (stop != NULL)
		pfree(stop);
}

/*
 * index_rescan() or index_getnext_tid() reset the fetch: a scan that ran
 * out of entries (its position is gone; one stopped early keeps it until
 * amrescan) reads the rest of its range.
 */
void
fps_gap_scan_reset(FpsIndexFetch *f)
{
	FpsGapScan *g = &f->gap;
	bool		exhausted;

	g->check_unseen = false;
	if (!g->active)
		return;
	g->active = false;
	exhausted = !BTScanPosIsValid(((BTScanOpaque) g->scan->opaque)->currPos);

	/*
	 * Once per end: the reset of a rescan finds the position still gone,
	 * and the executor's keys already changed to the next scan's.
	 */
	if (exhausted && !g->walked_end)
	{
		walk_to_group_end(f);
		g->walked_end = true;
	}
}

/* ---- writers ---- */

/* Remember the entry slot's row has (or had) in index pi, for the walk. */
static void
note_entry(Relation rel, FpsRelInfo *info, FpsPrefixIndex *pi, TupleTableSlot *slot)
{
	MemoryContext old;
	GapWrite   *w;

	if (ngap_writes >= FPS_GAP_MAX_WALKS)
	{
		for (int p = 0; p < pi->nkeys; p++)
			fps_write_predicate_key(info, fps_gap_escalation_key(pi, p));
		return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	w = palloc(sizeof(GapWrite));
	w->relid = info->relid;
	w->indexoid = pi->indexoid;
	w->nkeys = pi->nkeys;
	for (int i = 0; i < pi->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), pi->attnums[i] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, pi->attnums[i], &isnull);

		Assert(!isnull);
		/* the walk runs at PRE_COMMIT: TOAST of a rolled-back row may be gone */
		if (att->attlen == -1)
			w->values[i] = PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
		else
			w->values[i] = datumCopy(value, att->attbyval, att->attlen);
	}
	gap_writes = lappend(gap_writes, w);
	ngap_writes++;
	MemoryContextSwitchTo(old);
}

/*
 * MVTO reads every row at a timestamp (am/visibility.c), through
 * equality-prefix keys: nobody reads gap keys there.
 */
static inline bool
gap_keys_read(void)
{
	return fps_protocol != FPS_PROTOCOL_MVTO;
}

/* The row in slot was inserted or deleted: its entry in every gap index. */
void
fps_gap_note_row(Relation rel, FpsRelInfo *info, TupleTableSlot *slot)
{
	if (!gap_keys_read())
		return;
	for (int i = 0; i < info->nprefix; i++)
		if (info->prefix[i].has_gaps)
			note_entry(rel, info, &info->prefix[i], slot);
}

/*
 * An UPDATE that was not HOT moved the row from old to new: in each gap
 * index whose columns changed, the old entry goes and the new one comes.
 * An index whose columns kept their values keeps the row at its place.
 */
void
fps_gap_note_moved(Relation rel, FpsRelInfo *info, TupleTableSlot *old, TupleTableSlot *new)
{
	if (!gap_keys_read())
		return;
	for (int i = 0; i < info->nprefix; i++)
	{
		FpsPrefixIndex *pi = &info->prefix[i];
		int			k;

		if (!pi->has_gaps)
			continue;
		for (k = 0; k < pi->nkeys; k++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), pi->attnums[k] - 1);
			bool		oldnull;
			bool		newnull;
			Datum		oldval = slot_getattr(old, pi->attnums[k], &oldnull);
			Datum		newval = slot_getattr(new, pi->attnums[k], &newnull);

			if (!datum_image_eq(oldval, newval, att->attbyval, att->attlen))
				break;
		}
		if (k < pi->nkeys)
		{
			note_entry(rel, info, pi, old);
			note_entry(rel, info, pi, new);
		}
	}
}

/*
 * The order of key values a and b in index: negative, zero or positive as
 * strcmp (every key column of a gap index is NOT NULL).
 */
static int
compare_values(Relation index, int nkeys, const Datum *a, const Datum *b)
{
	for (int i = 0; i < nkeys; i++)
	{
		int32		cmp = DatumGetInt32(FunctionCall2Coll(index_getprocinfo(index, i + 1, BTORDER_PROC),
														  index->rd_indcollation[i], a[i], b[i]));

		if (cmp != 0)
			return cmp;
	}
	return 0;
}

static int
compare_gap_writes(const void *a, const void *b, void *arg)
{
	const GapWrite *wa = *(GapWrite *const *) a;
	const GapWrite *wb = *(GapWrite *const *) b;

	return compare_values((Relation) arg, wa->nkeys, wa->values, wb->values);
}

static int
compare_by_index(const void *a, const void *b)
{
	const GapWrite *wa = *(GapWrite *const *) a;
	const GapWrite *wb = *(GapWrite *const *) b;

	if (wa->indexoid != wb->indexoid)
		return wa->indexoid < wb->indexoid ? -1 : 1;
	return 0;
}

/* The state of the walk from one written entry (header: Writers). */
typedef struct WalkFrom
{
	GapWrite   *w;
	uint32		levels;			/* the levels p walked (am/gap_levels.c) */
	uint64		own[INDEX_MAX_KEYS];
	bool		done[INDEX_MAX_KEYS];
	int			ndone;
} WalkFrom;

/* Begin the walk from w: GAP(p, w) for every p walked. */
static void
walk_from(WalkFrom *s, GapWrite *w, FpsRelInfo *info, FpsPrefixIndex *pi)
{
	s->w = w;
	s->ndone = 0;
	for (int i = 0; i < pi->nkeys; i++)
	{
		s->own[i] = fps_hash_value(pi->types[i], pi->collations[i], w->values[i], false);
		s->done[i] = (s->levels & ((uint32) 1 << i)) == 0;
		if (s->done[i])
			s->ndone++;
	}
	for (int p = 0; p < pi->nkeys; p++)
		if (!s->done[p])
			fps_write_predicate_key(info, fps_gap_key(pi, p, s->own));
}

/*
 * The walks after the entries ws[0..n-1] this transaction inserted or
 * deleted in one index (header: Writers), in index order.  A walk that
 * meets the next written entry goes on, in the same index scan, as that
 * entry's walk: in the groups the two share, what this walk would have
 * walked from there on is the next one's walk (both go on to the same
 * first stable entry, or the group's end), and in the others this one has
 * ended.  So the lines of one order take one index descent, not one each
 * with ever longer walks.  A written entry
 * the scan passes without meeting (its index tuple was removed: a
 * rolled-back insert) gets a walk of its own.
 */
static void
walk_after_writes(GapWrite **ws, int n)
{
	Relation	heap = try_relation_open(ws[0]->relid, AccessShareLock);
	Relation	index;
	FpsRelInfo *info;
	FpsPrefixIndex *pi;
	uint32		levels;
	bool	   *walked;

	/* dropped by this transaction: nobody reads its gaps any more */
	if (heap == NULL)
		return;
	index = try_relation_open(ws[0]->indexoid, AccessShareLock);
	if (index == NULL || !fps_tracking_active(heap, &info) ||
		(pi = fps_prefix_index(info, ws[0]->indexoid)) == NULL || !pi->has_gaps ||
		pi->nkeys != ws[0]->nkeys)
	{
		if (index != NULL)
			relation_close(index, AccessShareLock);
		relation_close(heap, AccessShareLock);
		return;
	}

	/*
	 * The levels no gap scan has read: their ESC keys instead of walks
	 * (am/gap_levels.c).
	 */
	levels = fps_gap_levels_walked(pi->indexoid);
	for (int p = 0; p < pi->nkeys; p++)
		if ((levels & ((uint32) 1 << p)) == 0)
			fps_write_predicate_key(info, fps_gap_escalation_key(pi, p));
	if ((levels & (((uint64) 1 << pi->nkeys) - 1)) == 0)
		n = 0;

	qsort_arg(ws, n, sizeof(GapWrite *), compare_gap_writes, index);
	walked = palloc0(sizeof(bool) * n);
	for (int first = 0; first < n; first++)
	{
		WalkFrom	s;
		ScanKeyData key;
		ScanKeyData members[INDEX_MAX_KEYS];
		IndexScanDesc walk;
		ItemPointer tid;
		int			next = first;

		if (walked[first])
			continue;
		s.levels = levels;
		/* entries with equal values share their keys and their walk */
		while (next < n && compare_values(index, pi->nkeys, ws[next]->values,
										  ws[first]->values) == 0)
			walked[next++] = true;
		walk_from(&s, ws[first], info, pi);

		keys_after(index, 0, pi->nkeys, s.w->values, &key, members);
		walk = fps_index_walk_begin(index, snapshot_now(), &key, 1);
		while (s.ndone < pi->nkeys &&
			   (tid = index_getnext_tid(walk, ForwardScanDirection)) != NULL)
		{
			Datum		values[INDEX_MAX_KEYS];
			uint64		hashes[INDEX_MAX_KEYS];
			bool		unseen;
			bool		stable;
			int			common;

			for (int i = 0; i < pi->nkeys; i++)
			{
				bool		isnull;

				values[i] = index_getattr(walk->xs_itup, i + 1, walk->xs_itupdesc, &isnull);
				if (isnull)
					elog(ERROR, "fpsketch: NULL in key column %d of index \"%s\"",
						 i + 1, RelationGetRelationName(index));
			}
			/* the entry is in w's p-groups for p <= common */
			for (common = 0; common < pi->nkeys; common++)
				if (DatumGetInt32(FunctionCall2Coll(index_getprocinfo(index, common + 1, BTORDER_PROC),
													index->rd_indcollation[common],
													values[common], s.w->values[common])) != 0)
					break;
			/* a duplicate of the entry walked from: its keys are w's */
			if (common == pi->nkeys)
				continue;

			entry_hashes(pi, walk->xs_itup, walk->xs_itupdesc, hashes);
			stable = fps_examine_index_entry(heap, tid, snapshot_now(), NULL, &unseen);
			for (int p = 0; p < pi->nkeys; p++)
			{
				if (s.done[p])
					continue;
				if (p <= common && stable)
					fps_follow_predicate_key(info, fps_gap_key(pi, p, hashes));
				else if (p <= common)
					fps_write_predicate_key(info, fps_gap_key(pi, p, hashes));
				else
					fps_write_predicate_key(info, fps_gap_end_key(pi, p, s.own));
				if (p > common || stable)
				{
					s.done[p] = true;
					s.ndone++;
				}
			}

			/* skip written entries walked already or passed unmet */
			while (next < n &&
				   (walked[next] ||
					compare_values(index, pi->nkeys, ws[next]->values, values) < 0))
				next++;
			/* met the next one: its walk goes on from here */
			if (next < n && compare_values(index, pi->nkeys, ws[next]->values, values) == 0)
			{
				GapWrite   *v = ws[next];

				while (next < n &&
					   compare_values(index, pi->nkeys, ws[next]->values, v->values) == 0)
					walked[next++] = true;
				walk_from(&s, v, info, pi);
			}
		}
		index_endscan(walk);
		for (int p = 0; p < pi->nkeys; p++)
			if (!s.done[p])
				fps_write_predicate_key(info, fps_gap_end_key(pi, p, s.own));
	}

	/*
	 * A walk that stopped at an entry x another transaction inserted
	 * follows GAP(p, x) to commit after x's inserter, and so after every
	 * reader of the gap x split.  An inserter that did not walk level p
	 * (the level had expired for it, or x was past FPS_GAP_MAX_WALKS)
	 * never installed GAP(p, x): it wrote ESC(p), which those readers
	 * read.  Following ESC(p) too, after the walks saw x committed, orders
	 * this transaction after it all the same.
	 */
	if (n > 0)
		for (int p = 0; p < pi->nkeys; p++)
			if ((levels & ((uint32) 1 << p)) != 0)
				fps_follow_predicate_key_unwritten(info, fps_gap_escalation_key(pi, p));
	pfree(walked);
	relation_close(index, AccessShareLock);
	relation_close(heap, AccessShareLock);
}

/*
 * Registered after the protocol's callback, so it runs before it (the
 * last registered runs first): the keys the walks write are in the write
 * set that validation locks.
 */
static void
fps_gap_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (gap_writes != NIL)
			{
				int			n = list_length(gap_writes);
				GapWrite  **ws = palloc(sizeof(GapWrite *) * n);
				int			i = 0;
				int			run;

				foreach(lc, gap_writes)
					ws[i++] = (GapWrite *) lfirst(lc);
				/* one index at a time (indexes of different tables differ) */
				qsort(ws, n, sizeof(GapWrite *), compare_by_index);
				for (run = 0; run < n; run = i)
				{
					for (i = run + 1; i < n && ws[i]->indexoid == ws[run]->indexoid; i++)
						;
					walk_after_writes(ws + run, i - run);
				}
				pfree(ws);
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			/* the memory goes with TopTransactionContext */
			gap_writes = NIL;
			ngap_writes = 0;
			break;
		default:
			break;
	}
}

void
fps_gap_register_callbacks(void)
{
	RegisterXactCallback(fps_gap_xact_callback, NULL);
}
