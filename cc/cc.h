/*-------------------------------------------------------------------------
 *
 * cc.h
 *	  fpsketch concurrency control: what the table AM and the protocols share.
 *
 * Layering:
 *	fpsketch_am.c, am/	heap details: which callbacks read or write which
 *					row version, staleness and visibility of a heap version,
 *					key derivation input; they call into cc/, never back
 *	cc/keys.c		row identity -> 64-bit key
 *	cc/txn.c		per-backend transaction state (the access set), the pin
 *					budget, xact and subxact callbacks, shared counters, errors
 *	cc/tictoc.c		the TicToc protocol over FPSketch entries, in the words
 *					of the dissertation's Algorithm 3
 *	cc/sto.c		STO (Algorithm 4) and MVTO's reads at a timestamp
 *	cc/commit_ts.c	the map from writer xid to commit timestamp that
 *					timestamp snapshots read
 *	sketch/			the FPSketch itself
 *
 *-------------------------------------------------------------------------
 */
#ifndef FPS_CC_H
#define FPS_CC_H

#include "access/tableam.h"
#include "access/xact.h"
#include "storage/lockdefs.h"
#include "executor/tuptable.h"
#include "port/atomics.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "../sketch/fpsketch.h"

/* fpsketch.protocol */
typedef enum FpsProtocol
{
	FPS_PROTOCOL_OFF,
	FPS_PROTOCOL_TICTOC,
	FPS_PROTOCOL_STO,
	FPS_PROTOCOL_MVTO			/* STO's writes, reads at the timestamp */
} FpsProtocol;

/* STO and MVTO order by a timestamp taken at the first access */
#define fps_timestamp_ordered() \
	(fps_protocol == FPS_PROTOCOL_STO || fps_protocol == FPS_PROTOCOL_MVTO)

extern int	fps_protocol;
extern int	fps_lock_wait_timeout_ms;
extern bool fps_prefix_predicates;
extern bool fps_gap_predicates;
extern bool fps_reevaluate_updates;
extern bool fps_column_groups_enabled;
extern bool fps_stable_rereads;
extern bool fps_early_aborts;
extern bool fps_timestamp_snapshots;
extern bool fps_serializable_timestamp_snapshots;
extern bool fps_prefer_index_scans;
extern int	fps_wait_policy;

/* fpsketch.wait_policy */
typedef enum FpsWaitPolicy
{
	FPS_WAIT_CYCLE_CHECK,		/* refuse a row-lock wait that closes a cycle */
	FPS_WAIT_BLOCK				/* heap's waits and deadlock detector */
} FpsWaitPolicy;

/* ---- shared state (fpsketch.c) ---- */

/*
 * Why a transaction was aborted.  Every reason is a 40001 with its own
 * errdetail and its own counter in fpsketch_stats.
 */
typedef enum FpsAbortReason
{
	FPS_ABORT_STALE_READ,		/* read a version with a committed successor */
	FPS_ABORT_REREAD_CHANGED,	/* read two different versions of one row */
	FPS_ABORT_VALIDATE_CHANGED,	/* validation: wts moved since the read */
	FPS_ABORT_VALIDATE_LOCKED,	/* validation: concurrent committer holds it */
	FPS_ABORT_CONCURRENT_UPDATE,	/* heap reported TM_Updated/TM_Deleted */
	FPS_ABORT_LOCK_TIMEOUT,		/* waited too long for a locked key */
	FPS_ABORT_TABLE_FULL,		/* no free exact-table entry */
	FPS_ABORT_PHANTOM,			/* an insert into a predicate that was read */
	FPS_ABORT_PHANTOM_SNAPSHOT,	/* predicate read on a too old snapshot */
	FPS_ABORT_STO_READ_TOO_LATE,	/* STO: a younger transaction wrote it */
	FPS_ABORT_STO_WRITE_TOO_LATE,	/* STO: a younger transaction read or wrote it */
	FPS_ABORT_STO_WAITED_FOR_WRITER,	/* STO: the older writer waited for committed */
	FPS_ABORT_WAIT_CYCLE,		/* a row-lock wait would close a cycle */
	FPS_ABORT_SNAPSHOT_TOO_OLD,	/* a timestamp snapshot lost what it needs */
	FPS_ABORT_READ_ONLY_GUESS,	/* a statement run read-only at ts wrote */
	FPS_ABORT_POOL_HELD,		/* others hold the shared pool of pins, or
								 * the role's share of it */
	FPS_NUM_ABORT_REASONS
} FpsAbortReason;

typedef struct FpsSharedCounters
{
	volatile fps_u64 commits;		/* transactions that touched fpsketch */
	volatile fps_u64 read_only_commits;
	volatile fps_u64 aborts[FPS_NUM_ABORT_REASONS];
	volatile fps_u64 lock_waits;	/* reads or locks that had to wait */
	volatile fps_u64 floor_raises;
	volatile fps_u64 phantom_relation_reads;	/* coarse predicate reads */
	volatile fps_u64 phantom_prefix_reads;	/* equality-prefix reads */
	volatile fps_u64 phantom_writes;	/* phantom keys written */
	volatile fps_u64 snapshot_refreshes;	/* scans given a newer snapshot */
	volatile fps_u64 escalations;	/* row reads of a relation -> its key */
	volatile fps_u64 sto_clock;		/* STO: the next transaction timestamp */
	volatile fps_u64 sto_writer_waits;	/* STO: reads that waited for a writer */
	volatile fps_u64 reevaluations;	/* EvalPlanQual on a newer version allowed */
	volatile fps_u64 row_lock_waits;	/* cycle_check: waits for a row lock */
	volatile fps_u64 reads_valid_before_overwrite;	/* TicToc: overwritten after commit_ts */
	volatile fps_u64 stable_rereads;	/* rereads given the version read before */
	volatile fps_u64 early_aborts;	/* validate_changed found before a writing statement */
	volatile fps_u64 write_escalations; /* ACCESS EXCLUSIVE taken instead of more pins */
	volatile fps_u64 pool_pins;	/* pins reserved from the shared pool now;
								 * changed under the pool's lock only */
	volatile fps_u64 pins_refused;	/* fine pins refused by the pin budget */
	volatile fps_u64 pins_refused_role;	/* ... of which because the login
										 * role's other transactions held its
										 * share of the pool */
	volatile fps_u64 kept_locks;	/* locks kept past a subtransaction's end */
	volatile fps_u64 ts_snapshots;	/* transactions that began reading at a timestamp */
	volatile fps_u64 ts_waits;	/* timestamp reads that waited for a writer */
	volatile fps_u64 ts_successor_fetches;	/* versions at ts found along an
											 * update chain */
} FpsSharedCounters;

extern FPSketch *fps_sketch;
extern FpsSharedCounters *fps_counters;

/* cycle_check: per PGPROC, the transaction its backend waits for, or 0 */
extern pg_atomic_uint32 *fps_row_lock_waits_for;

extern void fps_require_shmem(void);


/* ---- keys (cc/keys.c) ---- */

/*
 * An index whose equality prefixes can serve as phantom keys: btree or hash,
 * plain columns, no predicate, default operator classes (so that equality
 * is the type's default hash equality and both readers and writers can hash
 * values the same way).
 */
typedef struct FpsPrefixIndex
{
	Oid			indexoid;
	uint32		key_class;		/* its table's (fps_relation_key_class) */
	bool		is_hash;		/* hash index: only the full key is a prefix */
	bool		is_unique;
	bool		has_gaps;		/* btree on NOT NULL columns: gap keys */
	int			nkeys;
	AttrNumber	attnums[INDEX_MAX_KEYS];	/* heap column of each key */
	Oid			collations[INDEX_MAX_KEYS];
	struct TypeCacheEntry *types[INDEX_MAX_KEYS];
} FpsPrefixIndex;

#define FPS_MAX_PREFIX_INDEXES 8

typedef struct FpsRelInfo
{
	Oid			relid;
	uint32		key_class;		/* of every key of the relation */
	bool		tracked;		/* permanent fpsketch relation */
	bool		by_tid;			/* no primary key / replica identity index */
	int			nkeys;
	AttrNumber	attnums[INDEX_MAX_KEYS];
	Oid			collations[INDEX_MAX_KEYS];
	struct TypeCacheEntry *types[INDEX_MAX_KEYS];
	fps_u64		relation_key;	/* the coarse phantom key: rows in or out */
	fps_u64		escalation_key; /* written by every write of the relation */
	int			nprefix;
	FpsPrefixIndex prefix[FPS_MAX_PREFIX_INDEXES];
	bool		has_coarse_indexes;	/* indexes whose scans read relation_key */
	int			natts;
	int			ngroups;		/* column groups, group 0 included */
	bool		groups_declared;	/* a group declared, so none is learned */
	struct FpsRelInfo *retired_next;	/* keys.c: freed at transaction end */
	uint8		attgroup[FLEXIBLE_ARRAY_MEMBER];	/* by attnum, [0] unused */
} FpsRelInfo;

/*
 * Column groups (fpsketch_set_column_group): each row has one key per
 * group; group 0 holds the identity and every column not declared in a
 * group.  A mask has bit g set for group g.
 */
#define FPS_MAX_COLUMN_GROUPS 16
typedef uint16 FpsGroupMask;
#define FPS_ALL_GROUPS(info) ((FpsGroupMask) ((1U << (info)->ngroups) - 1))

extern fps_u64 fps_group_key(fps_u64 row_key, int group);
extern Oid	fps_column_group_table(Relation rel);

/* learned column groups (column_groups.c) */
extern bool fps_learn_column_groups;
extern void fps_learn_init(void);
extern Size fps_learn_shmem_size(void);
extern void fps_learn_shmem_startup(void);
extern void fps_learn_updated_columns(Relation rel, FpsRelInfo *info, List *rtable);

extern void fps_relinfo_register_callback(void);
extern uint64 fps_relcache_invalidations;
extern uint64 fps_relcache_invalidations_at_xact_end;
extern FpsRelInfo *fps_relinfo(Relation rel);
extern fps_u64 fps_key_from_slot(Relation rel, FpsRelInfo *info, TupleTableSlot *slot);
extern fps_u64 fps_key_from_tid(FpsRelInfo *info, ItemPointer tid);
extern uint32 fps_relation_key_class(Oid relid);
extern FpsPrefixIndex *fps_prefix_index(FpsRelInfo *info, Oid indexoid);
extern uint64 fps_hash_value(struct TypeCacheEntry *type, Oid collation, Datum value, bool isnull);
extern fps_u64 fps_prefix_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes);
extern fps_u64 fps_gap_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes);
extern fps_u64 fps_gap_end_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes);
extern fps_u64 fps_gap_escalation_key(FpsPrefixIndex *index, int nprefix);

/* ---- transaction state (cc/txn.c) ---- */

/* One key the transaction touched: the access set's element. */
typedef struct FpsAccess
{
	fps_u64		key;
	FpsEntry   *entry;			/* pinned until the transaction ends */
	fps_u64		observed;		/* entry word when first read (unlocked) */
	Oid			relid;			/* for error messages */
	uint8		row_group;		/* column group of a row key, for
								 * fpsketch_relation_stats; FPS_NO_ROW_GROUP */
	fps_u64		observed_committers;	/* phantom keys: committer word read */
	fps_u64		observed_readers_rts;	/* phantom keys: readers_rts before it */
	bool		is_read;
	bool		is_write;
	bool		is_phantom;		/* predicate key: committer-word protocol */
	bool		follows;		/* commit after its wts: a group of a row we
								 * wrote other groups of (cc_follow) */
	bool		locked;			/* we hold the entry's lock bit */
	bool		committing;		/* we count among the entry's committers */
	uint16		nreads;			/* row versions read through this key */
	bool		read_zero;		/* learned groups: group 0 read through it
								 * too (am/track.c) */
	uint32		read_stmt;		/* statement of the first read (0: none) */
	uint32		last_read_stmt; /* statement of the latest read */
	uint64		effects_at_last_read;	/* the access method's count of
										 * statements that may have changed
										 * something, at the latest read
										 * (am/statement.c) */
	ItemPointerData first_tid;	/* storage's name of the version first read */
	TransactionId first_xmin;
	fps_u64		min_commit_ts;	/* commit no earlier (escalated reads of newer rows) */
} FpsAccess;

/*
 * One relation the transaction touched: its row reads (for escalation),
 * whether it reads or writes the relation through coarse keys now, and the
 * heavyweight locks kept for the top-level transaction.
 */
typedef struct FpsRelState
{
	Oid			relid;
	int			nreads;			/* row reads through row keys */
	bool		escalated;		/* reads through the escalation key */
	bool		write_escalated;	/* holds it ACCESS EXCLUSIVE: untracked */
	uint16		kept_locks;		/* LOCKMODEs held by the top-level owner */
	int			escalation;		/* the escalation key's access, -1 */
	bool		ts_checked;		/* timestamp snapshot: unchanged since ts */
	bool		ts_escalated;	/* timestamp snapshot: escalation key raised */
	/* the world just before and just after the escalation key's sample */
	Snapshot	before_escalation;
	Snapshot	after_escalation;
	/* counted here, added to fpsketch_relation_stats at the end (relation_stats.c) */
	uint64		stat_row_reads;
	uint64		stat_row_writes;
	uint64		stat_predicate_reads;
	uint64		stat_predicate_writes;
	bool		stat_pending;	/* not added yet (relation_stats.c) */
	bool		stat_dropped;	/* dropped by this transaction: not added */
} FpsRelState;

/*
 * A key an STO or MVTO transaction read at its ts (cc_ts_read_key,
 * cc_ts_read_predicate).  The read keeps no pin, but a floor commit, which
 * moves the transaction from its ts to the floor, must find the key
 * unchanged there (sto_pre_commit).
 */
typedef struct FpsTsRead
{
	fps_u64		key;
	Oid			relid;
	bool		predicate;
} FpsTsRead;

/* untracked writes of more relations than this raise the floor everywhere */
#define FPS_MAX_FLOOR_CLASSES 16

typedef struct FpsTxn
{
	FpsAccess  *accesses;
	int			naccesses;
	int			maxaccesses;
	int		   *map;			/* open addressing: key -> access index */
	int			mapsize;		/* power of two */
	bool		active;			/* touched an fpsketch table */
	bool		validated;		/* PRE_COMMIT succeeded, commit_ts valid */
	bool		raise_floor;	/* wrote past per-key tracking (DDL, bulk) */
	bool		floor_everywhere;	/* raise the floor of every key */
	int			nfloor_classes; /* else of the key classes of those writes */
	uint32		floor_classes[FPS_MAX_FLOOR_CLASSES];
	FpsRelState *rels;			/* the relations touched */
	int			nrels;
	int			maxrels;
	int		   *relmap;			/* open addressing: relid -> rels index */
	int			relmapsize;		/* power of two */
	int			last_rel;		/* rels index of the last lookup, or -1 */
	int			nfine;			/* pins of row and prefix keys */
	int			pool_reserved;	/* pins reserved from the shared pool */
	int			pool_slot;		/* the login role's slot in the pool, -1 */
	int			pins_refusal;	/* FpsPinRefusal: why the last one was */
	fps_u64		commit_ts;		/* from validation; STO: its ts or the floor */
	fps_u64		sto_ts;			/* STO: from the clock at the first access */
	Snapshot	held_snapshot;	/* keeps versions read from being pruned */
	bool		wrote;			/* wrote fpsketch tables (tracked or not) */
	fps_u64		written_relations;	/* fps_relation_filter of those whose
									 * predicates it changed, tracked or not */
	TransactionId published_xid;	/* in the commit_ts map since PRE_COMMIT */
	/* timestamp snapshot (DESIGN §9, am/visibility.c) */
	bool		mode_decided;	/* at the first access */
	bool		ts_mode;		/* reads versions at ts */
	bool		ts_guessed;		/* ts_mode for a statement that looked read-only */
	fps_u64		ts;
	Snapshot	ts_snapshot;	/* registered: holds the xmin horizon */
	uint32		ts_generation;	/* tags this transaction's raised keys */
	uint64		ts_relcache_invalidations;	/* before its ts snapshot, at least */
	FpsTsRead  *ts_reads;		/* STO, MVTO: the keys read at ts */
	int			nts_reads;
	int			maxts_reads;
	bool		ts_reads_overflowed;	/* some not listed (remember_ts_read) */
} FpsTxn;

extern FpsTxn fps_txn;
extern int	fps_ddl_depth;

extern bool fps_tracking_active(Relation rel, FpsRelInfo **info);
extern FpsAccess *fps_txn_access(fps_u64 key, Oid relid);
extern FpsAccess *fps_txn_try_access(fps_u64 key, Oid relid);
extern FpsAccess *fps_txn_try_read_access(fps_u64 key, Oid relid);
extern FpsAccess *fps_txn_lookup(fps_u64 key);
extern bool fps_txn_read_replaceable(const FpsAccess *access, uint32 statement);
extern void fps_txn_forget_read(FpsAccess *access, FpsAccess *saved);
extern void fps_txn_restore_read(const FpsAccess *saved);
extern void fps_txn_note_untracked_write(Oid relid);
extern void fps_txn_note_untracked_write_everywhere(Oid relid);
extern void fps_txn_raise_floor(FpsTxn *txn, fps_u64 ts);

/* lock owners recorded in entries (STO, MVTO dirty marks): PGPROC number + 1 */
#define FPS_MY_LOCK_OWNER ((fps_u32) MyProc->pgprocno + 1)
extern TransactionId fps_lock_holder_xid(const FpsEntry *entry);
extern bool fps_txn_may_guess_read_only(void);
extern bool fps_txn_may_trust_read_only(void);
extern void fps_txn_refuse_write_at_ts(Oid relid);
extern FpsRelState *fps_txn_rel(Oid relid);
extern FpsRelState *fps_txn_rel_find(Oid relid);
extern void fps_txn_keep_lock(FpsRelState *rs, LOCKMODE mode);
extern void fps_txn_keep_relation_lock(Oid relid, LOCKMODE mode);
extern bool fps_txn_count_row_read(FpsRelState *rs);
/* which limit a transaction reached by itself (fps_txn_pin_limit_reached) */
typedef enum FpsPinLimit
{
	FPS_PIN_LIMIT_NONE,
	FPS_PIN_LIMIT_TRANSACTION,	/* fpsketch.max_pins_per_transaction */
	FPS_PIN_LIMIT_ROLE			/* fpsketch.max_pool_pins_per_role */
} FpsPinLimit;

extern FpsPinLimit fps_txn_pin_limit_reached(void);
extern pg_attribute_noreturn() void fps_abort_pool_held(Oid relid);
extern int	fps_escalation_threshold;
extern int	fps_max_pins_per_transaction;
extern int	fps_max_pool_pins_per_role;

/* the shared pool of pins, by login role (cc/txn.c) */
extern Size fps_pool_shmem_size(void);
extern void fps_pool_shmem_init(void *mem, bool found);

typedef struct FpsPoolRoleStats
{
	Oid			roleid;
	int			transactions;	/* its open transactions that borrowed */
	int			pins;			/* borrowed by them, in all */
} FpsPoolRoleStats;

extern int	fps_pool_role_stats(FpsPoolRoleStats *out, int max);
extern int	fps_pool_slots(void);
extern void fps_txn_register_callbacks(void);
extern pg_attribute_noreturn() void fps_abort(FpsAbortReason reason, Oid relid);
extern pg_attribute_noreturn() void fps_abort_members_changed(Oid parent);
extern pg_attribute_noreturn() void fps_abort_at_floor(FpsAbortReason reason, Oid relid,
													   bool floor_raised_since_ts);
extern pg_attribute_noreturn() void fps_abort_key(FpsAbortReason reason, FpsAccess *access);
extern bool fps_wait_while_locked(FpsAccess *access, fps_u64 *word);

typedef struct FpsBackoff
{
	int			timeout_ms;		/* fpsketch.lock_wait_timeout unless lowered */
	TimestampTz start;
	long		sleep_us;
	int			spins;
} FpsBackoff;

extern void fps_backoff_init(FpsBackoff *backoff);
extern bool fps_backoff_wait(FpsBackoff *backoff);

/*
 * What the storage knows about the row version just read, asked by the
 * protocols: does it have a committed successor, and which transaction is
 * writing a successor right now.
 */
typedef struct FpsVersion
{
	bool		(*is_stale) (void *arg);
	TransactionId (*updater_in_progress) (void *arg);
	/* wait for xid to end, unless that would close a cycle of waits (false) */
	bool		(*wait_for) (TransactionId xid);
	void	   *arg;
} FpsVersion;

/* ---- commit timestamps of versions (cc/commit_ts.c) ---- */

typedef enum FpsCtsState
{
	FPS_CTS_UNKNOWN,			/* not in the map */
	FPS_CTS_PENDING,			/* validated, committing */
	FPS_CTS_COMMITTED,
	FPS_CTS_ABORTED
} FpsCtsState;

typedef struct FpsCtsStats
{
	uint64		capacity;
	uint64		entries;
	uint64		entries_hwm;
	uint64		drops;
	uint64		lost;
	uint64		max_published;
	uint64		bytes;
} FpsCtsStats;

extern int	fps_commit_ts_entries;
extern Size fps_commit_ts_shmem_size(int entries);
extern int	fps_commit_ts_lwlocks(int entries);
extern void fps_commit_ts_shmem_init(void *mem, bool found, int entries);
/*
 * A 64-bit filter of relations (one bit per relation, by a hash of its
 * OID): which relations' predicates a writer in the commit_ts map may have
 * changed (installed on their keys, or written them past per-key tracking).
 * All bits: any relation.
 */
#define FPS_ANY_RELATION	UINT64_MAX

static inline fps_u64
fps_relation_filter(Oid relid)
{
	return UINT64_C(1) << (((uint32) relid * UINT32_C(2654435761)) >> 26);
}

extern void fps_commit_ts_publish(TransactionId xid, fps_u64 commit_ts,
								  fps_u64 relations);
extern void fps_commit_ts_publish_for(TransactionId xid, fps_u64 commit_ts, Oid dbid,
									  fps_u64 relations);
extern void fps_commit_ts_finish(TransactionId xid, bool committed);
extern FpsCtsState fps_commit_ts_lookup(TransactionId xid, fps_u64 *commit_ts, Oid *dbid);
extern bool fps_commit_ts_miss_is_before(fps_u64 ts);
extern bool fps_commit_ts_writer(TransactionId xid, Oid dbid, fps_u64 relations,
								 bool *known);
extern void fps_reader_begin(fps_u64 bound);
extern fps_u64 fps_reader_ts(fps_u64 fixed_ts);
extern void fps_reader_end(void);
extern void fps_commit_ts_stats(FpsCtsStats *stats);
extern void fps_commit_ts_reset_stats(void);

/* ---- per-relation statistics (relation_stats.c) ---- */

#define FPS_NO_ROW_GROUP 0xFF

extern int	fps_max_tracked_relations;
extern void fps_relstats_define_guc(void);
extern Size fps_relstats_shmem_size(void);
extern void fps_relstats_shmem_request(void);
extern void fps_relstats_shmem_init(void);
extern void fps_relstats_abort(FpsAbortReason reason, Oid relid, int group);
extern void fps_relstats_flush(FpsTxn *txn, bool committed);
extern void fps_relstats_reset(void);

/* ---- prepared transactions (cc/prepared.c) ---- */

/*
 * Lock owners (FpsEntry.lock_owner) at and above this name a prepared
 * transaction's slot; below it, a PGPROC (FPS_MY_LOCK_OWNER).
 */
#define FPS_PREPARED_OWNER_BASE		((fps_u32) 0x40000000)
#define FPS_PREPARED_OWNER(slot)	(FPS_PREPARED_OWNER_BASE + (fps_u32) (slot))

typedef struct FpsPreparedStats
{
	uint64		xacts;			/* holding keys now */
	uint64		keys;
	uint64		prepares;		/* since reset */
	uint64		commits;
	uint64		rollbacks;
} FpsPreparedStats;

typedef struct FpsPreparedInfo
{
	char		gid[GIDSIZE];
	TransactionId xid;
	Oid			dbid;
	fps_u64		commit_ts;
	int			keys;
	int			locked_keys;
	bool		recovered;
	TimestampTz prepared_at;
} FpsPreparedInfo;

extern int	fps_max_prepared_keys;
extern Size fps_prepared_shmem_size(void);
extern void fps_prepared_shmem_request(void);
extern void fps_prepared_shmem_init(void);
extern void fps_prepared_remember_gid(const char *gid);
extern void fps_prepared_reserve(FpsTxn *txn);
extern void fps_prepared_hand_over(FpsTxn *txn);
extern void fps_prepared_abort(void);
extern void fps_prepared_resolve_ended(void);
extern void fps_prepared_check_recovered(void);
extern void fps_prepared_check_orphans(Oid relid);
extern bool fps_prepared_orphans_any(void);
extern void fps_prepared_sweep_orphans(void);
extern bool fps_prepared_any(void);
extern TransactionId fps_prepared_owner_xid(fps_u32 owner);
extern fps_u64 fps_prepared_lock_commit_ts(FpsEntry *entry, fps_u64 word);
extern bool fps_prepared_lock_gid(FpsEntry *entry, char *gid);
extern int	fps_prepared_committers_after(FpsEntry *entry, fps_u64 ts);
extern bool fps_prepared_xid_gid(TransactionId xid, char *gid);
extern bool fps_prepared_wait(TransactionId xid, Oid relid, int group);
extern void fps_prepared_stats(FpsPreparedStats *stats);
extern void fps_prepared_reset_stats(void);
extern int	fps_prepared_list(FpsPreparedInfo **out);
extern pg_attribute_noreturn() void fps_abort_prepared(Oid relid, int group, const char *gid,
														 bool predicate);
extern pg_attribute_noreturn() void fps_abort_entry(FpsAbortReason reason, Oid relid,
													 FpsEntry *entry, bool predicate);

/* ---- the protocol in force (cc/txn.c dispatches) ---- */

extern bool cc_read(FpsAccess *access, FpsVersion *version);
extern void cc_before_writing_statement(void);
extern void cc_write(FpsAccess *access);
extern void cc_follow(FpsAccess *access);
extern void cc_phantom_read(FpsAccess *access);
extern void cc_phantom_write(FpsAccess *access);
extern void cc_phantom_follow(FpsAccess *access);
extern bool cc_phantom_read_unchanged(FpsAccess *access);
extern bool cc_ts_read_key(fps_u64 key, Oid relid, TransactionId *holder);
extern void cc_ts_read_predicate(fps_u64 key, Oid relid, bool stands_for_relation);
extern bool cc_ts_predicate_raised(fps_u64 key);
extern bool cc_ts_reads_full(void);
extern void fps_txn_refuse_floor_commit_at_ts(FpsTxn *txn);
extern void fps_txn_begin_ts(Snapshot snapshot);

/* ---- TicToc (cc/tictoc.c) ---- */

extern bool tictoc_read(FpsAccess *access, FpsVersion *version);
extern void tictoc_write(FpsAccess *access);
extern void tictoc_phantom_read(FpsAccess *access);
extern void tictoc_phantom_write(FpsAccess *access);
extern void tictoc_phantom_follow(FpsAccess *access);
extern bool tictoc_phantom_unchanged(FpsAccess *access);
extern void tictoc_validate(FpsTxn *txn);
extern void tictoc_abort_if_doomed(FpsTxn *txn);
extern void tictoc_commit(FpsTxn *txn);
extern void tictoc_abort(FpsTxn *txn);
extern bool tictoc_ts_read(FpsEntry *entry, fps_u64 ts);

/* ---- STO (cc/sto.c) ---- */

extern void sto_begin(FpsTxn *txn);
extern void sto_read(FpsAccess *access, FpsVersion *version);
extern void sto_write(FpsAccess *access);
extern void sto_follow(FpsAccess *access);
extern void sto_phantom_read(FpsAccess *access);
extern void sto_phantom_write(FpsAccess *access);
extern void sto_pre_commit(FpsTxn *txn);
extern void sto_finish(FpsTxn *txn, bool committed);
extern bool sto_ts_read(FpsEntry *entry, fps_u64 ts, bool own_write);

#endif							/* FPS_CC_H */
