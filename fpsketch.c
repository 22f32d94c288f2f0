/*-------------------------------------------------------------------------
 *
 * fpsketch.c
 *	  Module entry: GUCs, shared memory, planner and utility hooks, the
 *	  statistics functions behind the fpsketch_stats view (per relation:
 *	  relation_stats.c).
 *
 * Shared memory: one FPSketch (sketch/fpsketch.c documents its locking)
 * and one FpsSharedCounters, updated with atomics only.  Both are created
 * in shmem_startup_hook by the postmaster and inherited by every backend;
 * after a crash the postmaster re-creates them empty, which is correct:
 * timestamps need not survive a restart (no transaction does either).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "optimizer/pathnode.h"
#include "optimizer/cost.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "cc/cc.h"
#include "fpsketch_am.h"

PG_MODULE_MAGIC;

/* ---- GUCs ---- */

int			fps_protocol = FPS_PROTOCOL_TICTOC;
int			fps_lock_wait_timeout_ms = 10000;
int			fps_gap_level_lifetime_s = 600;
bool		fps_prefix_predicates = true;
bool		fps_reevaluate_updates = true;
bool		fps_stable_rereads = true;
bool		fps_early_aborts = true;
bool		fps_timestamp_snapshots = true;
bool		fps_serializable_timestamp_snapshots = true;
int			fps_commit_ts_entries = 131072;
bool		fps_column_groups_enabled = true;
bool		fps_prefer_index_scans = true;
int			fps_wait_policy = FPS_WAIT_CYCLE_CHECK;
int			fps_escalation_threshold = 1000;
int			fps_max_pins_per_transaction = -1;
int			fps_max_pool_pins_per_role = -1;
static int	fps_variant = FPS_VARIANT_FOCUS_SKETCH;
static int	fps_eviction = FPS_EVICT_CLOCK;
static int	fps_sketch_size_kb = 32;
static int	fps_sketch_rows = 4;
static int	fps_max_entries = -1;

static const struct config_enum_entry protocol_options[] = {
	{"tictoc", FPS_PROTOCOL_TICTOC, false},
	{"sto", FPS_PROTOCOL_STO, false},
	{"mvto", FPS_PROTOCOL_MVTO, false},
	{"off", FPS_PROTOCOL_OFF, false},
	{NULL, 0, false}
};

static const struct config_enum_entry wait_policy_options[] = {
	{"cycle_check", FPS_WAIT_CYCLE_CHECK, false},
	{"block", FPS_WAIT_BLOCK, false},
	{NULL, 0, false}
};

static const struct config_enum_entry variant_options[] = {
	{"focus_sketch", FPS_VARIANT_FOCUS_SKETCH, false},
	{"focus_counter", FPS_VARIANT_FOCUS_COUNTER, false},
	{"exact", FPS_VARIANT_EXACT, false},
	{NULL, 0, false}
};

static const struct config_enum_entry eviction_options[] = {
	{"unpin", FPS_EVICT_ON_UNPIN, false},
	{"clock", FPS_EVICT_CLOCK, false},
	{NULL, 0, false}
};

/* ---- shared state ---- */

FPSketch   *fps_sketch = NULL;
FpsSharedCounters *fps_counters = NULL;
pg_atomic_uint32 *fps_row_lock_waits_for = NULL;
static bool fps_preloaded = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static get_relation_info_hook_type prev_get_relation_info_hook = NULL;
static ProcessUtility_hook_type prev_process_utility_hook = NULL;
static ExecutorStart_hook_type prev_executor_start_hook = NULL;
static ExecutorRun_hook_type prev_executor_run_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;
static ExecutorFinish_hook_type prev_executor_finish_hook = NULL;

void		_PG_init(void);

/* The exact table's size: fpsketch.max_entries, or a default per variant. */
static int
effective_max_entries(void)
{
	if (fps_max_entries > 0)
		return fps_max_entries;
	switch (fps_variant)
	{
		case FPS_VARIANT_FOCUS_COUNTER:
			return 262144;
		case FPS_VARIANT_EXACT:
			return 1048576;
		default:
			return 65536;
	}
}

static void
fps_config(FpsConfig *config)
{
	memset(config, 0, sizeof(*config));
	config->variant = (FpsVariant) fps_variant;
	config->eviction = (FpsEviction) fps_eviction;
	config->max_entries = effective_max_entries();
	config->sketch_rows = fps_sketch_rows;
	config->sketch_cols = fps_sketch_cols_for_bytes((uint64) fps_sketch_size_kb * 1024,
													fps_sketch_rows);
	/* fps_shmem_startup() draws the seed: sizes do not depend on it */
	config->seed = 0;
}

/* Every tracked access goes through here: say clearly what is missing. */
void
fps_require_shmem(void)
{
	if (likely(fps_sketch != NULL))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("fpsketch must be loaded via shared_preload_libraries"),
			 errdetail("fpsketch keeps per-row timestamps in shared memory, which can only be set up at server start."),
			 errhint("Add fpsketch to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/*
 * One slot per PGPROC: the transaction a backend waits for under
 * fpsketch.wait_policy = cycle_check (see fpsketch_am.c).  Each backend writes
 * only its own slot; others read it without a lock when they follow a chain
 * of waits.
 */
static int
row_lock_wait_slots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
row_lock_waits_size(void)
{
	return mul_size(row_lock_wait_slots(), sizeof(pg_atomic_uint32));
}

static void
fps_shmem_request(void)
{
	FpsConfig	config;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	fps_config(&config);
	RequestAddinShmemSpace(add_size(add_size(add_size(add_size(fps_shmem_size(&config),
															   sizeof(FpsSharedCounters)),
													  row_lock_waits_size()),
											 fps_commit_ts_shmem_size(fps_commit_ts_entries)),
									add_size(add_size(add_size(fps_pool_shmem_size(),
															   fps_relstats_shmem_size()),
													  fps_learn_shmem_size()),
											 add_size(fps_prepared_shmem_size(),
													  fps_gap_levels_shmem_size()))));
	RequestNamedLWLockTranche("fpsketch commit_ts",
							  fps_commit_ts_lwlocks(fps_commit_ts_entries));
	RequestNamedLWLockTranche("fpsketch pool", 1);
	fps_prepared_shmem_request();
	fps_relstats_shmem_request();
}

static void
fps_shmem_startup(void)
{
	FpsConfig	config;
	bool		found;
	void	   *mem;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	fps_config(&config);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	mem = ShmemInitStruct("fpsketch", fps_shmem_size(&config), &found);
	if (!found)
	{
		/*
		 * A seed drawn at every start, so that nobody can aim keys at one
		 * partition of the exact table or one cell of the sketch.
		 */
		if (!pg_strong_random(&config.seed, sizeof(config.seed)))
			ereport(FATAL,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate a random seed for the FPSketch")));
		fps_sketch = fps_create(mem, &config);
	}
	else
		fps_sketch = fps_attach(mem);
	fps_counters = ShmemInitStruct("fpsketch counters",
								   sizeof(FpsSharedCounters), &found);
	if (!found)
		memset(fps_counters, 0, sizeof(FpsSharedCounters));
	fps_row_lock_waits_for = ShmemInitStruct("fpsketch row lock waits",
											 row_lock_waits_size(), &found);
	if (!found)
	{
		for (int i = 0; i < row_lock_wait_slots(); i++)
			pg_atomic_init_u32(&fps_row_lock_waits_for[i], InvalidTransactionId);
	}
	mem = ShmemInitStruct("fpsketch commit_ts",
						  fps_commit_ts_shmem_size(fps_commit_ts_entries), &found);
	fps_commit_ts_shmem_init(mem, found, fps_commit_ts_entries);
	mem = ShmemInitStruct("fpsketch pool", fps_pool_shmem_size(), &found);
	fps_pool_shmem_init(mem, found);
	fps_relstats_shmem_init();
	fps_learn_shmem_startup();
	fps_gap_levels_shmem_init();
	/* last: recovering prepared transactions locks keys, publishes commit_ts */
	fps_prepared_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/* Is relid's table access method fpsketch?  No lock needed: catalog only. */
bool
fps_relam_is_fpsketch(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		result = false;

	if (HeapTupleIsValid(tuple))
	{
		Oid			amoid = ((Form_pg_class) GETSTRUCT(tuple))->relam;

		result = OidIsValid(amoid) && amoid == get_table_am_oid("fpsketch", true);
		ReleaseSysCache(tuple);
	}
	return result;
}

/* ---- planner: close the reads the AM would not see ---- */

static bool
relid_is_fpsketch(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	bool		result = fps_is_fpsketch_relation(rel);

	table_close(rel, NoLock);
	return result;
}

/*
 * A path that reads only rows its restriction clauses select, of a kind the
 * user has not disabled (enable_indexscan, enable_bitmapscan).
 */
static bool
is_restricting_path(Path *path)
{
	if (path->param_info != NULL)
		return false;			/* usable only inside a particular join */
	if (IsA(path, IndexPath))
		return enable_indexscan && ((IndexPath *) path)->indexclauses != NIL;
	return enable_bitmapscan && IsA(path, BitmapHeapPath);
}

/*
 * create_index_paths() without index-only scans.  check_index_only() asks
 * enable_indexonlyscan first, and nothing else there asks it (cost_index()
 * leaves it to indxpath.c); the setting is back before anything else is
 * planned, on error too.
 */
static void
create_plain_index_paths(PlannerInfo *root, RelOptInfo *rel)
{
	bool		save_enable_indexonlyscan = enable_indexonlyscan;

	enable_indexonlyscan = false;
	PG_TRY();
	{
		create_index_paths(root, rel);
	}
	PG_FINALLY();
	{
		enable_indexonlyscan = save_enable_indexonlyscan;
	}
	PG_END_TRY();
}

/*
 * An index-only scan answers from the index for all-visible pages and
 * never fetches the row: fpsketch would see neither the rows it reads nor
 * its predicate.  fps_get_relation_info() clears canreturn, which rules out
 * every index-only scan that needs a column of the table; one that needs
 * none (count(*), EXISTS (SELECT 1 ...), a WHERE clause implied by a partial
 * index's predicate) check_index_only() plans anyway.  By now such a path
 * has beaten the others in add_path(), which freed those it dominated (the
 * sequential scan among them), so converting it in place would leave an
 * index scan costed as index-only and nothing to compare it with.  Instead:
 * drop it, build the relation's paths again as set_plain_rel_pathlist() does
 * but without index-only scans, and add back the other paths there were
 * (another module's too).
 */
static void
drop_index_only_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	List	   *kept = NIL;
	List	   *kept_partial = NIL;
	bool		dropped = false;
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->pathtype == T_IndexOnlyScan)
			dropped = true;
		else
			kept = lappend(kept, path);
	}
	foreach(lc, rel->partial_pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->pathtype == T_IndexOnlyScan)
			dropped = true;
		else
			kept_partial = lappend(kept_partial, path);
	}
	if (!dropped)
		return;

	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	/* a sampled relation's only path is its sample scan, among those kept */
	if (rte->tablesample == NULL)
	{
		add_path(rel, create_seqscan_path(root, rel, rel->lateral_relids, 0));
		create_plain_index_paths(root, rel);
		create_tidscan_paths(root, rel);
	}

	/*
	 * add_path() frees the paths it rejects or displaces (index paths
	 * excepted, which bitmap paths may point to); nothing refers to these
	 * ones but the lists being rebuilt.
	 */
	foreach(lc, kept)
		add_path(rel, (Path *) lfirst(lc));
	foreach(lc, kept_partial)
		add_partial_path(rel, (Path *) lfirst(lc));
}

/*
 * A sequential scan reads every row of an fpsketch table, and so conflicts
 * with every write to it, however few rows pass its filter; an index scan
 * reads only the rows (and the equality prefix) it selects.  On small hot
 * tables (TPC-C's district: one page) the cost model picks the sequential
 * scan, and add_path has already thrown the index paths away as dominated.
 * So: drop the sequential scans, rebuild the index paths, and keep them if
 * one of them restricts; otherwise put the sequential scans back.
 */
static void
prefer_index_scans(PlannerInfo *root, RelOptInfo *rel)
{
	List	   *seqscans = NIL;
	List	   *others = NIL;
	ListCell   *lc;

	if (rel->baserestrictinfo == NIL || rel->indexlist == NIL)
		return;
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->pathtype == T_SeqScan)
			seqscans = lappend(seqscans, path);
		else
			others = lappend(others, path);
	}
	if (seqscans == NIL)
		return;
	rel->pathlist = others;
	create_plain_index_paths(root, rel);
	foreach(lc, rel->pathlist)
		if (is_restricting_path((Path *) lfirst(lc)))
			return;
	foreach(lc, seqscans)
		add_path(rel, (Path *) lfirst(lc));
}

static void
fps_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					 RangeTblEntry *rte)
{
	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (rte->rtekind != RTE_RELATION || !relid_is_fpsketch(rte->relid))
		return;

	/*
	 * Parallel workers would read outside the leader's read set: no partial
	 * paths and no parallel-safe paths over fpsketch relations.
	 */
	if (rte->relkind == RELKIND_RELATION)
	{
		rel->partial_pathlist = NIL;
		rel->consider_parallel = false;
	}
	/* an appendrel's own paths are appends of its members' */
	if (!rte->inh)
		drop_index_only_paths(root, rel, rte);
	if (rte->relkind == RELKIND_RELATION)
	{
		ListCell   *lc;

		if (fps_prefer_index_scans)
			prefer_index_scans(root, rel);
		foreach(lc, rel->pathlist)
			((Path *) lfirst(lc))->parallel_safe = false;
	}
}

/*
 * Index-only scans answer from the index for all-visible pages without
 * fetching the row version, so the read would never reach the AM.  Without
 * canreturn no index-only scan can return a column; those that need none
 * are dropped in fps_set_rel_pathlist().
 */
static void
fps_get_relation_info(PlannerInfo *root, Oid relationObjectId, bool inhparent,
					  RelOptInfo *rel)
{
	if (prev_get_relation_info_hook)
		prev_get_relation_info_hook(root, relationObjectId, inhparent, rel);

	if (!inhparent && relid_is_fpsketch(relationObjectId))
	{
		ListCell   *lc;

		foreach(lc, rel->indexlist)
		{
			IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
			int			i;

			for (i = 0; i < index->ncolumns; i++)
				index->canreturn[i] = false;
		}
	}
}

static void no_parallel_workers_if_am_created(void);

/*
 * Does DROP INDEX name an index of an fpsketch table (a replica identity or
 * primary key whose loss changes its row keys)?  Only then does the floor
 * rise: a no-op DROP INDEX IF EXISTS, which needs no privilege, or one on
 * another table must not disturb fpsketch's transactions.
 */
static bool
drops_fpsketch_index(DropStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->objects)
	{
		RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			indexoid = RangeVarGetRelid(rv, NoLock, true);
		Oid			tableoid;

		if (!OidIsValid(indexoid))
			continue;
		/* a partitioned index reaches its partitions' indexes: any may be */
		if (get_rel_relkind(indexoid) == RELKIND_PARTITIONED_INDEX)
			return true;
		tableoid = IndexGetRelation(indexoid, true);
		if (OidIsValid(tableoid) && fps_relam_is_fpsketch(tableoid))
			return true;
	}
	return false;
}

/*
 * Does stmt change what reads or writes of fpsketch tables do, without a
 * write of theirs: a trigger, rule or policy of one (or of a parent of
 * one), a domain's constraints, a composite type's attributes (typed
 * tables)?  Then the transaction commits at the floor, after the
 * transactions that read and wrote them under the old rules (helper-29:
 * T read acct, W changed acct and created a trigger that sets v = 99, T's
 * insert got 99; and the same with CREATE RULE, ALTER POLICY, ALTER DOMAIN
 * ... DROP CONSTRAINT, ALTER TYPE ... CASCADE).  The domain and type are
 * not followed to their tables: rare DDL, every key's floor.
 */
static bool
changes_rules(Node *stmt)
{
	RangeVar   *rv = NULL;
	Oid			relid;

	switch (nodeTag(stmt))
	{
		case T_CreateTrigStmt:
			rv = ((CreateTrigStmt *) stmt)->relation;
			break;
		case T_RuleStmt:
			rv = ((RuleStmt *) stmt)->relation;
			break;
		case T_CreatePolicyStmt:
			rv = ((CreatePolicyStmt *) stmt)->table;
			break;
		case T_AlterPolicyStmt:
			rv = ((AlterPolicyStmt *) stmt)->table;
			break;
		case T_AlterDomainStmt:
			return true;
		case T_AlterTableStmt:
			return ((AlterTableStmt *) stmt)->objtype == OBJECT_TYPE;
		default:
			return false;
	}
	relid = RangeVarGetRelid(rv, NoLock, true);
	return OidIsValid(relid) && fps_membership_has_fpsketch(relid);
}

/*
 * Statements that can change an fpsketch table's key scheme (primary key,
 * replica identity) without rewriting it: the transaction raises the floor
 * at commit, as a rewrite does.
 */
static void
fps_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	bool		may_change_keys = false;
	Oid			altered = InvalidOid;	/* InvalidOid: not known (DROP INDEX) */
	bool		finishes_prepared = false;
	bool		adds_members = false;
	bool		changes_members = false;
	bool		rules_change = fps_sketch != NULL && changes_rules(stmt);
	Oid			parent = InvalidOid;

	if (fps_sketch != NULL && IsA(stmt, AlterTableStmt) && !rules_change)
	{
		Oid			relid = RangeVarGetRelid(((AlterTableStmt *) stmt)->relation,
											 NoLock, true);

		may_change_keys = OidIsValid(relid) && fps_relam_is_fpsketch(relid);
		altered = relid;
		/* DETACH PARTITION and the like change what scans of it reach */
		changes_members = OidIsValid(relid) && !may_change_keys &&
			fps_membership_has_fpsketch(relid);
	}
	else if (fps_sketch != NULL && IsA(stmt, DropStmt) &&
			 ((DropStmt *) stmt)->removeType == OBJECT_INDEX)
		may_change_keys = drops_fpsketch_index((DropStmt *) stmt);

	/*
	 * ALTER TABLE reads the table to rewrite or validate it, with the old
	 * row layout and under a lock that keeps writers out; those reads are
	 * covered by the floor raise instead (see fps_ddl_depth).
	 */
	if (fps_sketch != NULL && IsA(stmt, TransactionStmt))
	{
		TransactionStmt *tstmt = (TransactionStmt *) stmt;

		/* PrepareTransaction() runs later, and keeps the gid to itself */
		if (tstmt->kind == TRANS_STMT_PREPARE)
			fps_prepared_remember_gid(tstmt->gid);
		finishes_prepared = tstmt->kind == TRANS_STMT_COMMIT_PREPARED ||
			tstmt->kind == TRANS_STMT_ROLLBACK_PREPARED;
	}
	/* a new member of a parent waits for the parent's readers */
	if (fps_sketch != NULL)
		adds_members = fps_membership_lock_parents(stmt, &parent);
	if (may_change_keys)
		fps_ddl_depth++;
	fps_note_utility_statement();
	fps_enter_utility_or_planner(true, true);
	PG_TRY();
	{
		if (prev_process_utility_hook)
			prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
									  params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		fps_enter_utility_or_planner(true, false);
		if (may_change_keys)
			fps_ddl_depth--;
	}
	PG_END_TRY();

	if (may_change_keys && fps_sketch != NULL && IsTransactionState())
		fps_txn_note_untracked_write_everywhere(altered);
	if (adds_members && IsTransactionState())
		fps_txn_note_untracked_write_everywhere(parent);
	if (changes_members && IsTransactionState())
		fps_txn_note_untracked_write_everywhere(altered);
	if (rules_change && IsTransactionState())
		fps_txn_note_untracked_write_everywhere(InvalidOid);

	/*
	 * PostgreSQL has recorded the outcome and removed the transaction from
	 * the proc array: install or release what it held, now rather than when
	 * a waiter finds it ended.
	 */
	if (finishes_prepared)
	{
		fps_prepared_resolve_ended();
		fps_prepared_sweep_orphans();
	}
	if (IsA(stmt, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) stmt)->extname, "fpsketch") == 0)
		no_parallel_workers_if_am_created();
}

/*
 * A parallel worker loads the leader's settings before it joins the
 * leader's transaction, so it cannot see an access method that transaction
 * created.  With default_table_access_method = fpsketch, which a dump sets
 * before each fpsketch table, every parallel index build or query of the
 * transaction that created the extension would fail in its workers ("table
 * access method "fpsketch" does not exist"): restoring a dump in one
 * transaction does exactly that.  That transaction runs without workers.
 */
static void
no_parallel_workers_if_am_created(void)
{
	HeapTuple	tup = SearchSysCache1(AMNAME, CStringGetDatum("fpsketch"));
	bool		created_now;

	if (!HeapTupleIsValid(tup))
		return;
	created_now = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data));
	ReleaseSysCache(tup);
	if (!created_now)
		return;
	(void) set_config_option("max_parallel_workers_per_gather", "0", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	(void) set_config_option("max_parallel_maintenance_workers", "0", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

/* ---- executor: no index-only scan of an fpsketch table runs ---- */

static void refuse_index_only_scans(Plan *plan, List *rtable);

static void
refuse_index_only_scans_in(List *plans, List *rtable)
{
	ListCell   *lc;

	foreach(lc, plans)
		refuse_index_only_scans((Plan *) lfirst(lc), rtable);
}

/*
 * The planner never leaves an index-only scan of an fpsketch relation
 * (fps_set_rel_pathlist), but another module's planner hook may add one
 * after it, and such a scan would read untracked.  Refuse to run it.
 */
static void
refuse_index_only_scans(Plan *plan, List *rtable)
{
	if (plan == NULL)
		return;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_IndexOnlyScan:
			{
				Oid			relid = rt_fetch(((Scan *) plan)->scanrelid, rtable)->relid;

				if (fps_relam_is_fpsketch(relid))
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("index-only scan of fpsketch table \"%s\" cannot run",
									get_rel_name(relid)),
							 errdetail("An index-only scan answers from the index without reading the table, so the read would not be part of the transaction's serialization order."),
							 errhint("fpsketch plans index-only scans of its tables away; another extension's planner hook chose this one.  Set enable_indexonlyscan = off for this statement.")));
				break;
			}
		case T_Append:
			refuse_index_only_scans_in(((Append *) plan)->appendplans, rtable);
			break;
		case T_MergeAppend:
			refuse_index_only_scans_in(((MergeAppend *) plan)->mergeplans, rtable);
			break;
		case T_BitmapAnd:
			refuse_index_only_scans_in(((BitmapAnd *) plan)->bitmapplans, rtable);
			break;
		case T_BitmapOr:
			refuse_index_only_scans_in(((BitmapOr *) plan)->bitmapplans, rtable);
			break;
		case T_SubqueryScan:
			refuse_index_only_scans(((SubqueryScan *) plan)->subplan, rtable);
			break;
		case T_CustomScan:
			refuse_index_only_scans_in(((CustomScan *) plan)->custom_plans, rtable);
			break;
		default:
			break;
	}
	refuse_index_only_scans(plan->lefttree, rtable);
	refuse_index_only_scans(plan->righttree, rtable);
}

/*
 * Before the executor opens anything.  Every plan that runs starts here:
 * statements, cursors, SPI and SQL functions; subplans, initplans and CTEs
 * are in the statement's subplans, and EvalPlanQual runs parts of the same
 * trees.  EXPLAIN without ANALYZE reads nothing and may show the plan.
 * Scans begin while the executor starts: the statement that starts is known
 * to them (fps_outer_statement_only_reads) before it runs.
 */
static void
fps_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
	{
		PlannedStmt *stmt = queryDesc->plannedstmt;

		refuse_index_only_scans(stmt->planTree, stmt->rtable);
		refuse_index_only_scans_in(stmt->subplans, stmt->rtable);
		fps_membership_statement_start(stmt);
		fps_note_statement_start(queryDesc);
	}
	fps_executor_starting(queryDesc, true);
	PG_TRY();
	{
		if (prev_executor_start_hook)
			prev_executor_start_hook(queryDesc, eflags);
		else
			standard_ExecutorStart(queryDesc, eflags);
	}
	PG_FINALLY();
	{
		fps_executor_starting(queryDesc, false);
	}
	PG_END_TRY();
}

/*
 * Index scans find their runtime keys in the plan state of the query that
 * runs them (fpsketch_am.c, index predicates), so keep track of which
 * queries are running.
 */
static void
fps_executor_run(QueryDesc *queryDesc, ScanDirection direction, uint64 count,
				 bool execute_once)
{
	/*
	 * Before a statement that takes row locks, which would make others wait
	 * for a transaction that cannot commit.  Not before every statement: the
	 * check loads an entry per key read, and under contention those are
	 * cache misses.
	 */
	if (fps_early_aborts && !fps_executor_nested() &&
		(queryDesc->operation != CMD_SELECT ||
		 (queryDesc->plannedstmt != NULL &&
		  (queryDesc->plannedstmt->rowMarks != NIL ||
		   queryDesc->plannedstmt->hasModifyingCTE))))
		cc_before_writing_statement();
	fps_executor_running(queryDesc, true);
	PG_TRY();
	{
		if (prev_executor_run_hook)
			prev_executor_run_hook(queryDesc, direction, count, execute_once);
		else
			standard_ExecutorRun(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		fps_executor_running(queryDesc, false);
	}
	PG_END_TRY();
}

/* Statements the planner runs (stable functions it evaluates) are not the client's. */
static PlannedStmt *
fps_planner(Query *parse, const char *query_string, int cursorOptions,
			ParamListInfo boundParams)
{
	PlannedStmt *result;

	fps_enter_utility_or_planner(false, true);
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		fps_enter_utility_or_planner(false, false);
	}
	PG_END_TRY();
	return result;
}

/* Data-modifying CTEs the main query does not read run to completion here. */
static void
fps_executor_finish(QueryDesc *queryDesc)
{
	fps_executor_running(queryDesc, true);
	PG_TRY();
	{
		if (prev_executor_finish_hook)
			prev_executor_finish_hook(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		fps_executor_running(queryDesc, false);
	}
	PG_END_TRY();
}

/* ---- module load ---- */

/*
 * The server applies a preloaded library's settings from postgresql.conf
 * with a WARNING only and falls back to the defaults; for settings that size
 * shared memory and choose the protocol, starting with something else than
 * what was configured is worse than not starting.  Before the variables are
 * defined their configured values are still placeholders holding the raw
 * text: check that text and refuse to start on a bad value.
 */
static void
check_raw_enum(const char *name, const struct config_enum_entry *options)
{
	const char *raw = GetConfigOption(name, true, false);
	const struct config_enum_entry *o;

	if (raw == NULL)
		return;
	for (o = options; o->name != NULL; o++)
		if (pg_strcasecmp(raw, o->name) == 0)
			return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parameter \"%s\": \"%s\"", name, raw),
			 errhint("Available values: %s.",
					 options == protocol_options ? "tictoc, sto, mvto, off" :
					 "focus_sketch, focus_counter, exact")));
}

static void
check_raw_int(const char *name, int flags, int min, int max)
{
	const char *raw = GetConfigOption(name, true, false);
	const char *hint = NULL;
	int			value;

	if (raw == NULL)
		return;
	if (!parse_int(raw, &value, flags, &hint))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\": \"%s\"", name, raw),
				 hint ? errhint("%s", _(hint)) : 0));
	if (value < min || value > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d%s is outside the valid range for parameter \"%s\" (%d .. %d)",
						value, (flags & GUC_UNIT_KB) ? "kB" : (flags & GUC_UNIT_MS) ? "ms" : "",
						name, min, max)));
}

static void
check_raw_bool(const char *name)
{
	const char *raw = GetConfigOption(name, true, false);

	if (raw != NULL && !parse_bool(raw, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parameter \"%s\" requires a Boolean value, not \"%s\"", name, raw)));
}

static void
check_raw_settings(void)
{
	check_raw_bool("fpsketch.column_groups");
	check_raw_enum("fpsketch.protocol", protocol_options);
	check_raw_enum("fpsketch.variant", variant_options);
	check_raw_enum("fpsketch.eviction", eviction_options);
	check_raw_int("fpsketch.sketch_size", GUC_UNIT_KB, 1, 1024 * 1024);
	check_raw_int("fpsketch.sketch_rows", 0, 1, 16);
	check_raw_int("fpsketch.max_entries", 0, -1, 64 * 1024 * 1024);
	check_raw_int("fpsketch.lock_wait_timeout", GUC_UNIT_MS, 1, INT_MAX);
	check_raw_int("fpsketch.commit_ts_entries", 0, 1024, 64 * 1024 * 1024);
	check_raw_int("fpsketch.max_prepared_keys", 0, 0, 16 * 1024 * 1024);
	check_raw_int("fpsketch.max_tracked_relations", 0, 0, 1000000);
}


void
_PG_init(void)
{
	/*
	 * Loaded by CREATE EXTENSION or a function call instead: PGC_POSTMASTER
	 * variables cannot be defined any more, and there is no shared memory.
	 * fps_require_shmem() explains at first use.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	check_raw_settings();

	DefineCustomEnumVariable("fpsketch.protocol",
							 "Concurrency control protocol for fpsketch tables.",
							 "tictoc (optimistic, validated at commit), sto (strict timestamp ordering, checked at every access) or mvto (sto's writes, reads of the version current at the transaction's timestamp) make every transaction that touches fpsketch tables serializable; off tracks nothing (heap READ COMMITTED behaviour).",
							 &fps_protocol, FPS_PROTOCOL_TICTOC, protocol_options,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("fpsketch.variant",
							 "FPSketch variant: focus_sketch, focus_counter or exact.",
							 NULL,
							 &fps_variant, FPS_VARIANT_FOCUS_SKETCH, variant_options,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("fpsketch.eviction",
							 "When focus_sketch moves a key no running transaction uses from the exact table into the sketch.",
							 "clock: the key keeps its exact timestamps in the table until its slot is needed (CLOCK order), so the sketch over-approximates only keys untouched for longer; unpin: at once when its last user ends (the dissertation's Focus-Sketch), which leaves the table holding only pinned keys.",
							 &fps_eviction, FPS_EVICT_CLOCK, eviction_options,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.sketch_size",
							"Memory for the FPSketch's sketch (peripheral region).",
							"Ignored by focus_counter, whose sketch is a single cell.",
							&fps_sketch_size_kb, 32, 1, 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.sketch_rows",
							"Number of hash rows of the FPSketch's sketch.",
							NULL,
							&fps_sketch_rows, 4, 1, 16,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.max_entries",
							"Capacity of the FPSketch's exact table (keys pinned by running transactions).",
							"-1 picks a default for the variant: 65536 (focus_sketch), 262144 (focus_counter), 1048576 (exact).",
							&fps_max_entries, -1, -1, 64 * 1024 * 1024,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.lock_wait_timeout",
							"Longest wait for a committing writer's lock on a row before the waiter aborts with 40001.",
							NULL,
							&fps_lock_wait_timeout_ms, 10000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.prefix_predicates",
							 "Index scans read equality-prefix phantom keys instead of the relation's.",
							 "Off makes every predicate read conflict with every insert into the relation (for comparison); writers always write both kinds of key, so sessions may differ.",
							 &fps_prefix_predicates, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.gap_predicates",
							 "Btree scans read the gaps between the index entries they pass instead of their equality prefix.",
							 "A scan that stops early (LIMIT, min()) or reads a range then conflicts only with inserts and deletes in the part of the index it read.  Writers always write gap keys, so sessions may differ; off reads equality-prefix keys (for comparison).",
							 &fps_gap_predicates, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.gap_level_lifetime",
							"How long after the last gap scan of an index level writers keep walking that level's gaps.",
							"Writers of an index walk only the levels (equality-prefix lengths) gap scans have read this recently, and write one key per level for the others, which every gap scan reads; a level that expires under a running reader costs that reader a possible 40001, never correctness.  -1: levels never expire; 0: writers never walk, so gap scans conflict with every writer of their level.",
							&fps_gap_level_lifetime_s, 600, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.column_groups",
							 "Use the column groups declared with fpsketch_set_column_group().",
							 "Off gives every row a single key (for comparison); the mapping must be the same in every backend, so it is fixed at server start.",
							 &fps_column_groups_enabled, true,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	fps_learn_init();
	DefineCustomEnumVariable("fpsketch.wait_policy",
							 "How transactions on fpsketch tables wait for each other's row locks.",
							 "cycle_check: a transaction about to wait follows the chain of row-lock waits from the holder and fails at once with 40001 if the chain leads back to it (a deadlock), instead of waiting deadlock_timeout for the deadlock detector; block: wait like heap.",
							 &fps_wait_policy, FPS_WAIT_CYCLE_CHECK, wait_policy_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.prefer_index_scans",
							 "Plan index scans instead of sequential scans of fpsketch tables whenever an index restricts the rows read.",
							 "A sequential scan reads, and so conflicts with writes to, every row of the table, however few rows pass its filter.",
							 &fps_prefer_index_scans, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.reevaluate_updates",
							 "Let READ COMMITTED statements re-evaluate a row updated concurrently (EvalPlanQual) when that is serializable.",
							 "Allowed when the statement's own scan was the transaction's only read of the row and the statement joins no other relation; otherwise, or when off, such a statement fails with 40001.",
							 &fps_reevaluate_updates, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.stable_rereads",
							 "Give a plain SELECT the row version the transaction read before instead of failing when the row has been updated since.",
							 "Applies when the newer version is on the same heap page (a HOT update); the transaction then commits if it can be serialized before that update.  When off, or otherwise, a second read of a changed row fails with 40001.",
							 &fps_stable_rereads, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.early_aborts",
							 "Fail a transaction before a statement that writes or locks rows once one of its reads can no longer validate.",
							 "TicToc only: a row read earlier was overwritten by a commit whose timestamp the transaction cannot commit before, so validation at commit would fail; failing before the statement takes row locks spares the transactions that would wait for them.  Skipped for transactions of more than 64 keys.",
							 &fps_early_aborts, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.timestamp_snapshots",
							 "Read-only transactions read every row in its version at a timestamp and never abort.",
							 "Applies to BEGIN READ ONLY, SET TRANSACTION READ ONLY, default_transaction_read_only and single-statement SELECTs that can write nothing; versions are chosen by their commit timestamps.  Off: they are validated like any transaction (and may abort).",
							 &fps_timestamp_snapshots, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("fpsketch.serializable_timestamp_snapshots",
							 "Read-only transactions read at a timestamp at SERIALIZABLE too.",
							 "On: they never abort, but PostgreSQL's SSI does not see those reads, so where SERIALIZABLE transactions use heap and fpsketch tables together a cycle through heap tables can commit: set it off there (ALTER DATABASE ... SET).  Off: at SERIALIZABLE they read on their snapshot, which SSI sees, and abort when rows they read change.",
							 &fps_serializable_timestamp_snapshots, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.commit_ts_entries",
							"Entries of the shared map from transaction to commit timestamp, which timestamp snapshots read.",
							"An entry goes once no running reader's timestamp is below it; a reader that outlives what the map can keep at the current write rate gets 40001 (snapshot too old).",
							&fps_commit_ts_entries, 131072, 1024, 64 * 1024 * 1024,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.max_prepared_keys",
							"Keys (rows and predicates written) that all prepared transactions together may hold.",
							"A prepared transaction keeps its written keys locked in shared memory until COMMIT PREPARED or ROLLBACK PREPARED; PREPARE TRANSACTION fails if they do not fit.  Unused when max_prepared_transactions is 0.",
							&fps_max_prepared_keys, 16384, 0, 16 * 1024 * 1024,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.escalation_threshold",
							"Rows of one relation a transaction reads with row keys before it reads the whole relation's key instead.",
							"Escalation bounds how much of the exact table one transaction pins, and under STO and MVTO how many keys read at its timestamp it remembers for a commit at the floor (64 times this, in all relations; past that, relations are escalated while it can write); it is always safe, but the transaction then conflicts with every writer of the relation.",
							&fps_escalation_threshold, 1000, 1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.max_pins_per_transaction",
							"Row and predicate keys one transaction may pin in the exact table.",
							"Past it, reads escalate to relation keys and writes to an ACCESS EXCLUSIVE lock of the table (if the user may take one); shared memory is shared, so one transaction must not fill it for everyone.  -1: half of the pool shared by all backends (max_entries / 4), plus each backend's own share.",
							&fps_max_pins_per_transaction, -1, -1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.max_pool_pins_per_role",
							"Row and predicate keys the transactions of one login role may borrow from the shared pool of the exact table at once, in all.",
							"Counted for the role that authenticated the session, which SET ROLE and SECURITY DEFINER functions do not change; each backend's own share (max_entries / 4 / max backends) is not counted.  Past it, reads escalate to relation keys and writes need an ACCESS EXCLUSIVE lock of the table, as past fpsketch.max_pins_per_transaction, so that one role's idle transactions cannot hold the pool that other roles' writers need.  -1: half of the pool (max_entries / 4); 0: nothing beyond the backends' own shares.",
							&fps_max_pool_pins_per_role, -1, -1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	fps_relstats_define_guc();
	MarkGUCPrefixReserved("fpsketch");

	if (fps_max_entries >= 0 && fps_max_entries < 64)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"fpsketch.max_entries\": %d", fps_max_entries),
				 errhint("Use -1 for the variant's default or a value of at least 64.")));
	/* one cell of (wts, rts) and one readers_rts cell per row */
	if ((uint64) fps_sketch_size_kb * 1024 < sizeof(fps_u64) * 3 * fps_sketch_rows)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fpsketch.sketch_size is too small for fpsketch.sketch_rows = %d", fps_sketch_rows)));

	(void) fps_table_am_routine();

	fps_preloaded = true;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = fps_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = fps_shmem_startup;
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = fps_set_rel_pathlist;
	prev_get_relation_info_hook = get_relation_info_hook;
	get_relation_info_hook = fps_get_relation_info;
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = fps_process_utility;
	prev_executor_start_hook = ExecutorStart_hook;
	ExecutorStart_hook = fps_executor_start;
	prev_executor_run_hook = ExecutorRun_hook;
	ExecutorRun_hook = fps_executor_run;
	prev_executor_finish_hook = ExecutorFinish_hook;
	ExecutorFinish_hook = fps_executor_finish;
	prev_planner_hook = planner_hook;
	planner_hook = fps_planner;
	fps_membership_register_hooks();
	/* first: it frees retired relation metadata after the others ran */
	fps_relinfo_register_callback();
	fps_txn_register_callbacks();
	/* after the protocol's: runs before it (am/gap.c) */
	fps_gap_register_callbacks();
}

/* ---- SQL-callable ---- */

PG_FUNCTION_INFO_V1(fpsketch_require_preload);

Datum
fpsketch_require_preload(PG_FUNCTION_ARGS)
{
	fps_require_shmem();
	PG_RETURN_VOID();
}

static const char *const variant_names[] = {"focus_sketch", "focus_counter", "exact"};

PG_FUNCTION_INFO_V1(fpsketch_stats);

Datum
fpsketch_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[80];
	bool		nulls[80];
	FpsStats	s;
	int			i = 0;
	int			r;

	fps_require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	fps_get_stats(fps_sketch, &s);
	memset(nulls, 0, sizeof(nulls));
	values[i++] = CStringGetTextDatum(fps_protocol == FPS_PROTOCOL_TICTOC ? "tictoc" :
									  fps_protocol == FPS_PROTOCOL_STO ? "sto" :
									  fps_protocol == FPS_PROTOCOL_MVTO ? "mvto" : "off");
	values[i++] = CStringGetTextDatum(variant_names[s.variant]);
	/* when an unpinned key leaves the exact table for the sketch */
	values[i++] = CStringGetTextDatum(fps_evicts_on_unpin(s.variant, s.eviction) ? "unpin" :
									  fps_evicts_by_clock(s.variant, s.eviction) ? "clock" :
									  "never");
	values[i++] = Int64GetDatum(s.max_entries);
	values[i++] = Int64GetDatum(s.entries);
	values[i++] = Int64GetDatum(s.entries_hwm);
	values[i++] = Int64GetDatum(s.pinned);
	values[i++] = Int64GetDatum(s.pinned_hwm);
	values[i++] = Int64GetDatum(s.increfs);
	values[i++] = Int64GetDatum(s.decrefs);
	values[i++] = Int64GetDatum(s.seeds);
	values[i++] = Int64GetDatum(s.merges);
	values[i++] = Int64GetDatum(s.evictions);
	values[i++] = Int64GetDatum(s.table_full);
	values[i++] = Int64GetDatum(s.lock_leaks);
	values[i++] = Int32GetDatum((int32) s.sketch_rows);
	values[i++] = Int32GetDatum((int32) s.sketch_cols);
	values[i++] = Int32GetDatum((int32) s.readers_cols);
	values[i++] = Int64GetDatum(s.sketch_bytes);
	values[i++] = Int64GetDatum(s.table_bytes);
	values[i++] = Int64GetDatum(s.sketch_cells_used);
	values[i++] = Int64GetDatum(s.floor_ts);
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->commits));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->read_only_commits));
	for (r = 0; r < FPS_NUM_ABORT_REASONS; r++)
		values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->aborts[r]));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->lock_waits));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->floor_raises));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->phantom_relation_reads));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->phantom_prefix_reads));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->phantom_writes));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->snapshot_refreshes));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->escalations));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->sto_writer_waits));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->reevaluations));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->row_lock_waits));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->reads_valid_before_overwrite));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->stable_rereads));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->early_aborts));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->write_escalations));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->pool_pins));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->pins_refused));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->pins_refused_role));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->kept_locks));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->ts_snapshots));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->ts_waits));
	values[i++] = Int64GetDatum(fps_atomic_load(&fps_counters->ts_successor_fetches));
	{
		FpsCtsStats cs;

		fps_commit_ts_stats(&cs);
		values[i++] = Int64GetDatum(cs.capacity);
		values[i++] = Int64GetDatum(cs.entries);
		values[i++] = Int64GetDatum(cs.entries_hwm);
		values[i++] = Int64GetDatum(cs.drops);
		values[i++] = Int64GetDatum(cs.lost);
		values[i++] = Int64GetDatum(cs.bytes);
	}
	{
		FpsPreparedStats ps;

		fps_prepared_stats(&ps);
		values[i++] = Int64GetDatum(ps.xacts);
		values[i++] = Int64GetDatum(ps.keys);
		values[i++] = Int64GetDatum(ps.prepares);
		values[i++] = Int64GetDatum(ps.commits);
		values[i++] = Int64GetDatum(ps.rollbacks);
	}
	if (i != tupdesc->natts)
		elog(ERROR, "fpsketch_stats() returns %d columns, its SQL definition %d: reinstall the extension",
			 i, tupdesc->natts);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

PG_FUNCTION_INFO_V1(fpsketch_stats_reset);

Datum
fpsketch_stats_reset(PG_FUNCTION_ARGS)
{
	int			r;

	fps_require_shmem();
	fps_reset_stats(fps_sketch);
	fps_prepared_reset_stats();
	fps_atomic_store(&fps_counters->commits, 0);
	fps_atomic_store(&fps_counters->read_only_commits, 0);
	for (r = 0; r < FPS_NUM_ABORT_REASONS; r++)
		fps_atomic_store(&fps_counters->aborts[r], 0);
	fps_atomic_store(&fps_counters->lock_waits, 0);
	fps_atomic_store(&fps_counters->floor_raises, 0);
	fps_atomic_store(&fps_counters->phantom_relation_reads, 0);
	fps_atomic_store(&fps_counters->phantom_prefix_reads, 0);
	fps_atomic_store(&fps_counters->phantom_writes, 0);
	fps_atomic_store(&fps_counters->snapshot_refreshes, 0);
	fps_atomic_store(&fps_counters->escalations, 0);
	fps_atomic_store(&fps_counters->sto_writer_waits, 0);
	fps_atomic_store(&fps_counters->reevaluations, 0);
	fps_atomic_store(&fps_counters->row_lock_waits, 0);
	fps_atomic_store(&fps_counters->reads_valid_before_overwrite, 0);
	fps_atomic_store(&fps_counters->stable_rereads, 0);
	fps_atomic_store(&fps_counters->early_aborts, 0);
	fps_atomic_store(&fps_counters->write_escalations, 0);
	fps_atomic_store(&fps_counters->pins_refused, 0);
	fps_atomic_store(&fps_counters->pins_refused_role, 0);
	fps_atomic_store(&fps_counters->kept_locks, 0);
	fps_atomic_store(&fps_counters->ts_snapshots, 0);
	fps_atomic_store(&fps_counters->ts_waits, 0);
	fps_atomic_store(&fps_counters->ts_successor_fetches, 0);
	fps_commit_ts_reset_stats();
	fps_relstats_reset();
	PG_RETURN_VOID();
}

/*
 * fpsketch_pool_pins(): the login roles whose open transactions borrow from
 * the shared pool of pins now, what they hold and in how many transactions
 * (fpsketch.max_pool_pins_per_role bounds each role).  Like pg_stat_activity's
 * usename, which everyone may read, it shows roles, not what they run.
 */
/*
 * fpsketch_prepared_xacts(): what each prepared transaction holds of the
 * FPSketch until COMMIT PREPARED or ROLLBACK PREPARED; pg_prepared_xacts
 * shows the rest of it.
 */
PG_FUNCTION_INFO_V1(fpsketch_prepared_xacts);

Datum
fpsketch_prepared_xacts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FpsPreparedInfo *xacts;
	int			n;

	fps_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	/* not those PostgreSQL has finished with (see cc/prepared.c) */
	fps_prepared_resolve_ended();
	n = fps_prepared_list(&xacts);
	for (int x = 0; x < n; x++)
	{
		Datum		values[8];
		bool		nulls[8] = {false, false, false, false, false, false, false, false};
		char	   *dbname = get_database_name(xacts[x].dbid);

		values[0] = CStringGetTextDatum(xacts[x].gid);
		values[1] = TransactionIdGetDatum(xacts[x].xid);
		if (dbname != NULL)
		{
			NameData   *name = palloc0(sizeof(NameData));

			namestrcpy(name, dbname);
			values[2] = NameGetDatum(name);
		}
		else
			nulls[2] = true;
		values[3] = Int64GetDatum(xacts[x].commit_ts);
		values[4] = Int32GetDatum(xacts[x].keys);
		values[5] = Int32GetDatum(xacts[x].locked_keys);
		values[6] = BoolGetDatum(xacts[x].recovered);
		values[7] = TimestampTzGetDatum(xacts[x].prepared_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(fpsketch_pool_pins);

Datum
fpsketch_pool_pins(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FpsPoolRoleStats *roles;
	int			n;

	fps_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	/* copy under the lock, look names up after it */
	roles = palloc(sizeof(FpsPoolRoleStats) * fps_pool_slots());
	n = fps_pool_role_stats(roles, fps_pool_slots());
	for (int r = 0; r < n; r++)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		char	   *name = GetUserNameFromId(roles[r].roleid, true);

		values[0] = ObjectIdGetDatum(roles[r].roleid);
		if (name != NULL)
		{
			NameData   *rolname = palloc0(sizeof(NameData));

			namestrcpy(rolname, name);
			values[1] = NameGetDatum(rolname);
		}
		else
			nulls[1] = true;	/* dropped while its sessions run */
		values[2] = Int32GetDatum(roles[r].transactions);
		values[3] = Int64GetDatum(roles[r].pins);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
