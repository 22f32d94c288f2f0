/*-------------------------------------------------------------------------
 *
 * reevaluate.c
 *	  When READ COMMITTED's re-evaluation of a concurrently updated row
 *	  (EvalPlanQual) is serializable.
 *
 * An UPDATE, DELETE or SELECT FOR UPDATE/SHARE that finds its row updated
 * by a transaction that has committed since locks the newest version and
 * has EvalPlanQual run the plan below the node that asked (ModifyTable or
 * LockRows) once more, on that one version.  What that recomputes is the
 * row's own quals and projection, and the subplans they call.  It does not
 * recompute anything that was decided from other rows together with the old
 * version: the join partners found for it, its place in a sort (and so what
 * a LIMIT above kept), an aggregate, a second scan of the same table
 * elsewhere in the statement.  Those stay as computed from the old version,
 * which no serial order gives.
 *
 * The rule (fps_reevaluation_is_safe):
 *	1. the statement scans the relation once (it appears once in the range
 *	   table: no self-join, no subquery or CTE over the same table);
 *	2. below every ModifyTable or LockRows node that covers the relation,
 *	   the plan handles each row on its own: scans, Result, ProjectSet and
 *	   Append (partitions) only; no join, Sort, MergeAppend, aggregate,
 *	   subquery scan or anything else that combines or orders rows;
 *	3. an index scan there orders its rows by the index's key columns, so
 *	   those must be unchanged from the version the scan found to the newest
 *	   one: the row then keeps its place (with a LIMIT above: its
 *	   membership), and the index quals EvalPlanQual rechecks give the same
 *	   answer as the scan;
 *	4. the read set: the new version replaces the old only where the old
 *	   was read once, by this statement's scan (fps_txn_read_replaceable);
 *	   a column group the concurrent writer did not write keeps its
 *	   observation (same values in both versions);
 *	5. no volatile code ran on the row since the statement read it: what
 *	   it did on the old version (a write to another table) would stay when
 *	   EvalPlanQual runs it again on the newest one, so the transaction
 *	   would keep effects of a version its read set no longer names.  Two
 *	   checks: a walk over the code the plan runs, for an UPDATE its checks
 *	   on the new row too, MERGE refused (volatility.c, where it says what
 *	   the walk covers and which harmless volatile functions it allows);
 *	   and, for code reached where no walk can see, no data-modifying,
 *	   row-locking or utility statement may have begun since this
 *	   statement read the row (am/statement.c counts them).  Changes made
 *	   without a statement by code the walk cannot see (a large-object
 *	   write, pg_notify) are not caught.
 * Otherwise the statement fails with 40001 (aborts_concurrent_update), as
 * it does under STO, REPEATABLE READ and SERIALIZABLE.  Nothing changes in
 * the read set until every rule holds, and if reading the newest version
 * fails (a savepoint may catch that), the reads it was to replace stand
 * again: the transaction saw the old version.  Correlated subplans
 * in the row's quals are run again by EvalPlanQual on the statement's
 * snapshot and read through the access method like any read (their index
 * scans are found in the EvalPlanQual trees, see predicate.c), and initplans
 * read other relations, whose reads are validated at commit as usual.
 *
 * Shared state: entry words, loaded only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_index.h"
#include "executor/execdesc.h"
#include "executor/tuptable.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/datum.h"
#include "utils/rel.h"

#include "am.h"

/* The RT index of relid in rtable: 0 if absent, -1 if there more than once. */
static int
range_table_index(List *rtable, Oid relid)
{
	ListCell   *lc;
	int			rti = 0;
	int			found = 0;

	foreach(lc, rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);

		rti++;
		if (rte->rtekind == RTE_RELATION && rte->relid == relid)
		{
			if (found != 0)
				return -1;
			found = rti;
		}
	}
	return found;
}

/*
 * Are the statement's row marks all rti's own: its lock, or those of its
 * partitions' siblings and their parent (FOR UPDATE of a partitioned table)?
 * Any other row mark belongs to a join, whose partners EvalPlanQual would
 * not look for again.
 */
static bool
row_marks_are_own(List *rowMarks, Index rti)
{
	PlanRowMark *own = NULL;
	ListCell   *lc;

	foreach(lc, rowMarks)
		if (((PlanRowMark *) lfirst(lc))->rti == rti)
			own = lfirst(lc);
	foreach(lc, rowMarks)
	{
		PlanRowMark *rc = (PlanRowMark *) lfirst(lc);

		if (rc == own)
			continue;
		if (own == NULL || own->prti == own->rti ||
			rc->markType == ROW_MARK_REFERENCE || rc->markType == ROW_MARK_COPY ||
			(rc->prti != own->prti && rc->rti != own->prti))
			return false;
	}
	return true;
}

/*
 * Does plan handle every row on its own (rule 2)?  Index scans of rti are
 * collected in *indexscans for rule 3.
 */
static bool
plan_is_row_local(Plan *plan, Index rti, List **indexscans)
{
	ListCell   *lc;

	if (plan == NULL)
		return true;
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			return true;
		case T_IndexScan:
			if (((Scan *) plan)->scanrelid == rti)
				*indexscans = lappend(*indexscans, plan);
			return true;
		case T_Result:
		case T_ProjectSet:
			return plan->righttree == NULL &&
				plan_is_row_local(plan->lefttree, rti, indexscans);
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				if (!plan_is_row_local((Plan *) lfirst(lc), rti, indexscans))
					return false;
			return true;
		default:
			return false;
	}
}

/* Is plan a ModifyTable or LockRows node that re-evaluates rows of rti? */
static bool
plan_reevaluates(Plan *plan, Index rti)
{
	ListCell   *lc;

	if (IsA(plan, ModifyTable))
		return list_member_int(((ModifyTable *) plan)->resultRelations, rti);
	if (IsA(plan, LockRows))
		foreach(lc, ((LockRows *) plan)->rowMarks)
			if (((PlanRowMark *) lfirst(lc))->rti == rti)
				return true;
	return false;
}

/*
 * Rules 2 and 5 for every node of the tree under plan that re-evaluates
 * rows of rti (subplans: the statement's); *nodes counts them.
 */
static bool
plan_tree_reevaluates_row_locally(Plan *plan, Relation rel, Index rti, List *subplans,
								  List **indexscans, int *nodes)
{
	ListCell   *lc;

	if (plan == NULL)
		return true;
	if (plan_reevaluates(plan, rti))
	{
		(*nodes)++;
		if (!plan_is_row_local(plan->lefttree, rti, indexscans) ||
			fps_plan_runs_volatile_code(plan->lefttree, subplans) ||
			(IsA(plan, ModifyTable) &&
			 fps_update_runs_volatile_checks((ModifyTable *) plan, rel, subplans)))
			return false;
	}
	if (!plan_tree_reevaluates_row_locally(plan->lefttree, rel, rti, subplans, indexscans, nodes) ||
		!plan_tree_reevaluates_row_locally(plan->righttree, rel, rti, subplans, indexscans, nodes))
		return false;
	switch (nodeTag(plan))
	{
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				if (!plan_tree_reevaluates_row_locally(lfirst(lc), rel, rti, subplans,
													   indexscans, nodes))
					return false;
			break;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				if (!plan_tree_reevaluates_row_locally(lfirst(lc), rel, rti, subplans,
													   indexscans, nodes))
					return false;
			break;
		case T_SubqueryScan:
			return plan_tree_reevaluates_row_locally(((SubqueryScan *) plan)->subplan,
													 rel, rti, subplans, indexscans, nodes);
		default:
			break;
	}
	return true;
}

/*
 * Rule 3: are the key columns of every index scanned (indexscans) the same
 * in the version the scan found (at found_tid) and in newest?
 */
static bool
index_keys_unchanged(Relation rel, List *indexscans, ItemPointer found_tid,
					 TupleTableSlot *newest)
{
	TupleTableSlot *found;
	ListCell   *lc;
	bool		same = true;

	if (indexscans == NIL)
		return true;
	found = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsBufferHeapTuple);
	if (!GetHeapamTableAmRoutine()->tuple_fetch_row_version(rel, found_tid,
															 SnapshotAny, found))
		same = false;
	foreach(lc, indexscans)
	{
		Relation	indexrel;
		int			k;

		if (!same)
			break;
		indexrel = index_open(((IndexScan *) lfirst(lc))->indexid, AccessShareLock);
		if (!heap_attisnull(indexrel->rd_indextuple, Anum_pg_index_indexprs, NULL))
			same = false;		/* expressions: not compared, refused */
		for (k = 0; same && k < indexrel->rd_index->indnkeyatts; k++)
		{
			AttrNumber	attnum = indexrel->rd_index->indkey.values[k];
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
			bool		found_null;
			bool		newest_null;
			Datum		found_value = slot_getattr(found, attnum, &found_null);
			Datum		newest_value = slot_getattr(newest, attnum, &newest_null);

			if (found_null != newest_null ||
				(!found_null && !datum_image_eq(found_value, newest_value,
												att->attbyval, att->attlen)))
				same = false;
		}
		index_close(indexrel, AccessShareLock);
	}
	ExecDropSingleTupleTableSlot(found);
	return same;
}

/*
 * May the innermost statement re-evaluate itself on newest, the newest
 * version of the row of rel whose version at found_tid its scan found,
 * instead of failing?  See the rules at the top of this file.  TicToc only:
 * STO decides at read time.  The keys whose reads newest replaces go to
 * forget (*nforget of them); nothing is changed here.
 */
static bool
reevaluation_is_safe(Relation rel, FpsRelInfo *info, TupleTableSlot *newest,
					 ItemPointer found_tid, fps_u64 *forget, int *nforget)
{
	QueryDesc  *qd;
	PlannedStmt *stmt;
	List	   *indexscans = NIL;
	ListCell   *lc;
	int			rti;
	int			nodes = 0;
	fps_u64		key;
	int			g;
	bool		read_by_statement = false;

	*nforget = 0;
	if (!fps_reevaluate_updates || fps_protocol != FPS_PROTOCOL_TICTOC ||
		IsolationUsesXactSnapshot())
		return false;
	qd = fps_running_query(0);
	if (qd == NULL || qd->plannedstmt == NULL)
		return false;
	stmt = qd->plannedstmt;

	/* 5: MERGE runs its actions from the ModifyTable node itself */
	if (stmt->commandType == CMD_MERGE)
		return false;

	/*
	 * A row identified by its TID has another key in its newest version:
	 * the read of the version found could never be replaced (rule 4), and
	 * validation would fail the transaction at COMMIT
	 */
	if (info->by_tid)
		return false;

	/* 1: one scan of rel; and, as a second fence, no other row marks */
	rti = range_table_index(stmt->rtable, RelationGetRelid(rel));
	if (rti <= 0 || !row_marks_are_own(stmt->rowMarks, rti))
		return false;

	/*
	 * 2 and 5: row-local plans without volatile functions below the nodes
	 * that re-evaluate (there must be one), nor in an UPDATE's checks
	 */
	if (!plan_tree_reevaluates_row_locally(stmt->planTree, rel, rti, stmt->subplans,
										   &indexscans, &nodes))
		return false;
	foreach(lc, stmt->subplans)
		if (!plan_tree_reevaluates_row_locally(lfirst(lc), rel, rti, stmt->subplans,
											   &indexscans, &nodes))
			return false;
	if (nodes == 0)
		return false;

	/* 3: index scans keep the row where they found it */
	if (!index_keys_unchanged(rel, indexscans, found_tid, newest))
		return false;

	/*
	 * 4: the read set; every group must allow it before any read is
	 * forgotten.  And 5, however the code was reached: EvalPlanQual runs the
	 * row's code again whichever groups changed, so nothing may have been
	 * written since this statement read the row; where it read the row
	 * through no key of its own (escalated, or a reread), nothing tells.
	 */
	key = fps_key_from_slot(rel, info, newest);
	for (g = 0; g < info->ngroups; g++)
	{
		FpsAccess  *access = fps_txn_lookup(fps_group_key(key, g));
		fps_u64		word;

		if (access == NULL || !access->is_read)
			continue;
		if (access->last_read_stmt == fps_current_statement())
		{
			if (access->effects_at_last_read != fps_effectful_statements())
				return false;
			read_by_statement = true;
		}
		word = fps_entry_load(access->entry);
		if (!fps_word_locked(word) &&
			!fps_entry_overwritten(access->entry, access->observed, word))
			continue;
		if (!fps_txn_read_replaceable(access, fps_current_statement()))
			return false;
		forget[(*nforget)++] = access->key;
	}
	return read_by_statement;
}

/*
 * Heap locked newest, the newest version of the row of rel whose version at
 * found_tid the innermost statement's scan found, and EvalPlanQual is about
 * to re-evaluate the statement on it: read newest in place of the version
 * found, or fail with 40001 where that is not serializable.
 */
void
fps_reevaluate_on(Relation rel, FpsRelInfo *info, TupleTableSlot *newest,
				  ItemPointer found_tid)
{
	fps_u64		forget[FPS_MAX_COLUMN_GROUPS];
	FpsAccess	forgotten[FPS_MAX_COLUMN_GROUPS];
	int			nforget;
	int			i;

	if (!reevaluation_is_safe(rel, info, newest, found_tid, forget, &nforget))
		fps_abort(FPS_ABORT_CONCURRENT_UPDATE, info->relid);
	for (i = 0; i < nforget; i++)
		fps_txn_forget_read(fps_txn_lookup(forget[i]), &forgotten[i]);
	PG_TRY();
	{
		fps_track_read(rel, newest, false);
	}
	PG_CATCH();
	{
		for (i = 0; i < nforget; i++)
			fps_txn_restore_read(&forgotten[i]);
		PG_RE_THROW();
	}
	PG_END_TRY();
	fps_atomic_add(&fps_counters->reevaluations, 1);
}
