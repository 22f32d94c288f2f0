/*-------------------------------------------------------------------------
 *
 * am.h
 *	  What the files of the fpsketch table access method share.
 *
 * fpsketch_am.c is the routing table: heap's routine with the callbacks
 * that read or write a row version wrapped.  Each concern lives in a file
 * of its own under am/:
 *
 *	versions.c		what a heap version tells the protocol (its creator,
 *					whether it has a committed successor, who is writing
 *					one), and rereads of the version read before
 *	track.c			row reads and writes reach the protocol (cc/): keys,
 *					column groups, untracked writes
 *	predicate.c		phantom keys: relation, equality-prefix and escalation
 *					keys, and the snapshot a predicate read must use
 *	gap.c			gap keys: the part of a btree's order a scan read, and
 *					what inserts and deletes change in it
 *	gap_levels.c	which levels (prefix lengths) of an index gap scans
 *					read: the only ones writers walk
 *	statement.c		the statements running now (executor stack), and the
 *					column groups a statement reads or writes
 *	reevaluate.c	whether EvalPlanQual may re-evaluate a statement on a
 *					newer version of a row
 *	rowlock.c		waits for row locks that would close a cycle
 *
 * None of this is visible outside the access method; fpsketch_am.h is.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FPS_AM_INTERNAL_H
#define FPS_AM_INTERNAL_H

#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "executor/execdesc.h"
#include "executor/tuptable.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"

#include "../cc/cc.h"

/* ---- versions.c ---- */

/* The version a read just returned, for the protocol's questions. */
typedef struct FpsVersionCheck
{
	Relation	rel;
	TupleTableSlot *slot;
	FpsRelInfo *info;
	int			group;			/* the column group read, or -1: the row */
} FpsVersionCheck;

extern TransactionId fps_version_xmin(TupleTableSlot *slot);
extern bool fps_version_is_stale(void *arg);
extern TransactionId fps_version_committed_updater(FpsVersionCheck *check);
extern TransactionId fps_version_updater_in_progress(void *arg);
extern void fps_hold_read_versions(void);
extern void fps_hold_gap_entries(Snapshot snapshot);
extern bool fps_reread_first_version(Relation rel, FpsRelInfo *info, fps_u64 key,
									 FpsGroupMask groups, int failed,
									 FpsAccess *failed_access, TupleTableSlot *slot);

/* Reads on these snapshots are reads of the transaction's logic. */
static inline bool
fps_snapshot_is_tracked(Snapshot snapshot)
{
	return snapshot != NULL &&
		(IsMVCCSnapshot(snapshot) || snapshot->snapshot_type == SNAPSHOT_DIRTY);
}

/* ---- track.c ---- */

extern void fps_track_read(Relation rel, TupleTableSlot *slot, bool unique_check);
extern void fps_track_insert(Relation rel, TupleTableSlot *slot);
extern void fps_track_delete(Relation rel, ItemPointer tid);
extern void fps_track_update(Relation rel, ItemPointer old_tid, TupleTableSlot *slot,
							 bool update_indexes);
extern void fps_refuse_concurrent_update(Relation rel);
extern void fps_concurrent_update_found(Relation rel, TM_Result result);
extern bool fps_writes_escalated(Relation rel);

/*
 * A scan at a timestamp: what it needs to find, and not return twice, the
 * versions made by writers that were running when the transaction began
 * (visibility.c).
 */
typedef struct FpsTsScan
{
	bool		follow;			/* may successors be fetched (not a TID fetch) */
	Relation	index;			/* index scans: the index, when known */
	const void *owner;			/* the table scan it belongs to */
	HTAB	   *returned;		/* versions a successor walk can reach again,
								 * each with the place it was returned from;
								 * created on first use */
	CommandId	curcid;			/* table scans: their MVCC snapshot's */
	Snapshot	mvcc_snapshot;	/* ... and that snapshot, if its owner keeps it */
	bool		has_range;		/* a TID-range scan: what it returns */
	ItemPointerData mintid;
	ItemPointerData maxtid;
} FpsTsScan;

/* ---- gap.c ---- */

/* A scan key that says where a gap scan starts (its group, its lower bound). */
typedef struct FpsGapStartKey
{
	AttrNumber	attno;
	StrategyNumber strategy;
	int			flags;
	Oid			subtype;
	Oid			collation;
	bool		byval;
	int16		len;
	Datum		value;			/* a copy */
} FpsGapStartKey;

#define FPS_GAP_MAX_START_KEYS (2 * INDEX_MAX_KEYS)

/*
 * An index scan that reads gap keys instead of an equality-prefix key: the
 * executor's scan (its current entry, xs_itup) and where it started.
 */
typedef struct FpsGapScan
{
	bool		active;			/* this scan reads gap keys */
	bool		check_unseen;	/* ... or did, until it widened */
	bool		widened;		/* it read the prefix (or relation) key instead */
	bool		passed_any;		/* an entry was passed: last holds it */
	bool		walked_end;		/* the end walk ran since the last entry */
	int			nread;			/* gap keys read */
	bool		start_saved;	/* start holds the last begin's start keys */
	int			nstart;
	FpsGapStartKey start[FPS_GAP_MAX_START_KEYS];
	IndexScanDesc scan;			/* the executor's */
	struct IndexScanState *iss; /* its node: the scan keys */
	FpsPrefixIndex index;		/* a copy: the relcache entry may be rebuilt */
	int			nprefix;		/* columns the scan keys fix by equality */
	uint64		group[INDEX_MAX_KEYS];	/* hashes of those values */
	IndexTuple	last;			/* a copy of the last entry passed */
	Size		last_space;
} FpsGapScan;

/* ---- point_lookup.c ---- */

/*
 * An index scan that fixes every column of the row identity by equality:
 * its predicate key is read only if it finds no row (point_lookup.c).
 */
typedef struct FpsPointLookup
{
	bool		deferred;		/* this execution's predicate read waits */
	bool		found;			/* ... and it found a row: none needed */
	Relation	index;			/* the scan's, open while the fetch is */
	Snapshot	snapshot;		/* the one the scan read rows with */
	fps_u64		key;			/* the equality-prefix key of the values */
	int			nkeys;
	ScanKeyData keys[INDEX_MAX_KEYS];	/* their equality keys, values copied */
	bool		byval[INDEX_MAX_KEYS];
	int16		len[INDEX_MAX_KEYS];
} FpsPointLookup;

/* ---- predicate.c ---- */

/*
 * Index fetches carry their predicate state with them: heap's callbacks
 * get the embedded IndexFetchHeapData (first member, so heap's pfree frees
 * the whole struct).
 */
typedef struct FpsIndexFetch
{
	IndexFetchHeapData heap;
	bool		predicate_pending;	/* no predicate key read yet for this scan */
	bool		predicate_read; /* predicate_key was read, fresh_snapshot set */
	fps_u64		predicate_key;	/* the last one read */
	Snapshot	fresh_snapshot;	/* registered; replaces the scan's snapshot */
	FpsTsScan	ts;				/* at a timestamp */
	FpsGapScan	gap;			/* gap keys */
	FpsPointLookup lookup;		/* a unique point lookup */
} FpsIndexFetch;

extern bool fps_gap_scan_begin(FpsIndexFetch *f, struct IndexScanState *iss,
							   FpsPrefixIndex *pi, int nprefix, const uint64 *group);
extern void fps_gap_scan_reset(FpsIndexFetch *f);
extern void fps_gap_read_entry(FpsIndexFetch *f);
extern void fps_gap_check_unseen(FpsIndexFetch *f, ItemPointer tid, Snapshot snapshot);
extern void fps_gap_note_row(Relation rel, FpsRelInfo *info, TupleTableSlot *slot);
extern void fps_gap_note_moved(Relation rel, FpsRelInfo *info, TupleTableSlot *old,
							   TupleTableSlot *new);
extern IndexScanDesc fps_index_walk_begin(Relation index, Snapshot snapshot,
										  ScanKey keys, int nkeys);
extern bool fps_examine_index_entry(Relation heap, ItemPointer tid, Snapshot now,
									Snapshot reader, bool *unseen);

/* ---- gap_levels.c ---- */
extern int	fps_gap_level_lifetime_s;	/* fpsketch.gap_level_lifetime */
extern void fps_gap_level_read(Oid indexoid, int nprefix);
extern uint32 fps_gap_levels_walked(Oid indexoid);

extern bool fps_point_lookup_defer(FpsIndexFetch *f, struct IndexScanState *iss,
								   FpsRelInfo *info, FpsPrefixIndex *pi,
								   const uint64 *hashes, const int *keyidx);
extern void fps_point_lookup_settle(FpsIndexFetch *f);
extern void fps_point_lookup_forget(FpsIndexFetch *f);
extern bool fps_snapshot_sees_writers(Snapshot snapshot, Snapshot latest,
									  fps_u64 relations);
extern Snapshot fps_fresher_snapshot(Snapshot snapshot);

extern Snapshot fps_read_relation_predicate(Relation rel, Snapshot snapshot);
extern void fps_index_predicate_reset(FpsIndexFetch *f);
extern Snapshot fps_index_predicate_snapshot(FpsIndexFetch *f, Snapshot snapshot);
extern void fps_index_predicate_end(FpsIndexFetch *f);
extern void fps_write_predicate_key(FpsRelInfo *info, fps_u64 key);
extern void fps_follow_predicate_key(FpsRelInfo *info, fps_u64 key);
extern void fps_follow_predicate_key_unwritten(FpsRelInfo *info, fps_u64 key);
extern fps_u64 fps_read_predicate_key(FpsRelInfo *info, fps_u64 key, bool is_prefix);

/* room for every prefix of every prefix index of a row */
#define FPS_MAX_ROW_PREDICATES (FPS_MAX_PREFIX_INDEXES * INDEX_MAX_KEYS)

extern int	fps_prefix_keys_of_row(FpsRelInfo *info, TupleTableSlot *slot, fps_u64 *keys);
extern int	fps_moved_prefix_keys(Relation rel, FpsRelInfo *info, TupleTableSlot *old,
								  TupleTableSlot *new, fps_u64 *keys, bool *moved);
extern void fps_refuse_unique_conflict(void);
extern void fps_escalated_read(Relation rel, FpsRelInfo *info, FpsRelState *rs,
							   FpsVersionCheck *check, TransactionId xmin);

/* ---- statement.c ---- */

extern QueryDesc *fps_running_query(int depth);
extern uint32 fps_current_statement(void);
extern uint64 fps_effectful_statements(void);
extern bool fps_statement_only_reads(void);
extern bool fps_outer_statement_only_reads(void);
extern FpsGroupMask fps_statement_groups(Relation rel, FpsRelInfo *info, bool written);

/* ---- volatility.c ---- */

struct Plan;
struct ModifyTable;
extern bool fps_plan_runs_volatile_code(struct Plan *plan, List *subplans);
extern bool fps_update_runs_volatile_checks(struct ModifyTable *mt, Relation rel,
											List *subplans);

/* ---- reevaluate.c ---- */

extern void fps_reevaluate_on(Relation rel, FpsRelInfo *info,
							  TupleTableSlot *newest, ItemPointer found_tid);

/* ---- visibility.c ---- */

/* scans that read at a timestamp carry this in rs_flags (above heap's) */
#define FPS_SO_TIMESTAMP (1U << 30)

extern bool fps_ts_mode(Snapshot snapshot);
extern bool fps_ts_read_of(Relation rel, Snapshot snapshot);
extern void fps_ts_scan_start(Relation rel, bool sequential);
extern void fps_ts_relation_check(Relation rel);
extern bool fps_ts_visible(Relation rel, TupleTableSlot *slot, FpsTsScan *scan,
						   CommandId curcid);
extern FpsTsScan *fps_ts_scan_of(TableScanDesc scan, bool begin);
extern void fps_ts_scan_reset(FpsTsScan *scan);
extern void fps_ts_scan_set_range(FpsTsScan *scan, ItemPointer mintid, ItemPointer maxtid);
extern void fps_ts_scan_forget(TableScanDesc scan);
extern void fps_ts_escalate(FpsRelInfo *info, FpsRelState *rs);
extern void fps_ts_read_predicate(FpsRelInfo *info, fps_u64 key, bool is_prefix);

/* ---- rowlock.c ---- */

extern bool fps_wait_for_transaction(TransactionId xid);

extern TM_Result fps_rowlock_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
										TupleTableSlot *slot, CommandId cid,
										LockTupleMode mode, LockWaitPolicy wait_policy,
										uint8 flags, TM_FailureData *tmfd);
extern TM_Result fps_rowlock_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
										  Snapshot snapshot, Snapshot crosscheck,
										  bool wait, TM_FailureData *tmfd,
										  bool changingPart);
extern TM_Result fps_rowlock_tuple_update(Relation rel, ItemPointer otid,
										  TupleTableSlot *slot, CommandId cid,
										  Snapshot snapshot, Snapshot crosscheck,
										  bool wait, TM_FailureData *tmfd,
										  LockTupleMode *lockmode, bool *update_indexes);

#endif							/* FPS_AM_INTERNAL_H */
