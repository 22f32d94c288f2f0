/*-------------------------------------------------------------------------
 *
 * statement.c
 *	  The statements running now, and what one of them reads and writes.
 *
 * The executor hooks (fpsketch.c) push every statement run, nested ones
 * (functions, triggers, SPI) included, onto a stack: index scans look for
 * their scan keys in these plan trees (predicate.c), re-evaluation looks at
 * their plans (reevaluate.c), and each run gets a number so that a read
 * knows whether it belongs to the statement that read a row first.
 *
 * Shared state: none; this is per-backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "commands/trigger.h"
#include "executor/execdesc.h"
#include "nodes/execnodes.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am.h"
#include "../fpsketch_am.h"

/*
 * Executors running now, innermost last: where index scan keys are found.
 * Grows with nesting (functions calling functions); max_stack_depth bounds
 * it in practice.
 */
static QueryDesc **running_queries = NULL;
static uint32 *running_statements = NULL;	/* their statement numbers */
static int	nrunning_queries = 0;
static int	maxrunning_queries = 0;
static uint32 last_statement = 0;

/*
 * The outermost statement while its executor starts (scans begin there,
 * before it runs), and how deep we are in utility statements and in the
 * planner: an executor run from those (DO, CALL, a stable function the
 * planner evaluates) is not the statement the client sent.
 */
static QueryDesc *starting_query = NULL;
static int	utility_depth = 0;
static int	planning_depth = 0;

void
fps_executor_starting(QueryDesc *queryDesc, bool starting)
{
	if (starting && starting_query == NULL && nrunning_queries == 0)
		starting_query = queryDesc;
	else if (!starting && starting_query == queryDesc)
		starting_query = NULL;
}

void
fps_enter_utility_or_planner(bool utility, bool entering)
{
	int		   *depth = utility ? &utility_depth : &planning_depth;

	if (entering)
		(*depth)++;
	else if (*depth > 0)
		(*depth)--;
}

void
fps_executor_running(QueryDesc *queryDesc, bool starting)
{
	if (!starting)
	{
		if (nrunning_queries > 0)
			nrunning_queries--;
		return;
	}
	if (nrunning_queries >= maxrunning_queries)
	{
		int			newmax = Max(32, maxrunning_queries * 2);

		running_queries = running_queries == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(QueryDesc *) * newmax) :
			repalloc(running_queries, sizeof(QueryDesc *) * newmax);
		running_statements = running_statements == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(uint32) * newmax) :
			repalloc(running_statements, sizeof(uint32) * newmax);
		maxrunning_queries = newmax;
	}
	/* every run is a statement of its own; 0 means none */
	if (++last_statement == 0)
		++last_statement;
	running_statements[nrunning_queries] = last_statement;
	running_queries[nrunning_queries++] = queryDesc;
}

/*
 * Statements that may have changed something, counted as they start:
 * data-modifying statements, row locks, and utility statements.  A row's
 * read notes the count (am/track.c); re-evaluation asks whether any began
 * since, that is, whether the first evaluation of the row, through code
 * however reached (a trigger, a function a domain's CHECK or a cast runs),
 * wrote anything that EvalPlanQual would not take back (reevaluate.c).
 */
static uint64 effectful_statements = 0;

void
fps_note_statement_start(QueryDesc *queryDesc)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (queryDesc->operation != CMD_SELECT || stmt == NULL ||
		stmt->hasModifyingCTE || stmt->rowMarks != NIL)
		effectful_statements++;
}

void
fps_note_utility_statement(void)
{
	effectful_statements++;
}

uint64
fps_effectful_statements(void)
{
	return effectful_statements;
}

/* The running statement depth levels out from the innermost, or NULL. */
QueryDesc *
fps_running_query(int depth)
{
	return depth >= 0 && depth < nrunning_queries ?
		running_queries[nrunning_queries - 1 - depth] : NULL;
}

/* Is a statement running already (is the next one run from inside it)? */
bool
fps_executor_nested(void)
{
	return nrunning_queries > 0;
}

/* The innermost running statement, 0 outside the executor. */
uint32
fps_current_statement(void)
{
	return nrunning_queries > 0 ? running_statements[nrunning_queries - 1] : 0;
}

/* Does the innermost statement only read (a SELECT without row locks)? */
bool
fps_statement_only_reads(void)
{
	PlannedStmt *stmt;

	if (nrunning_queries == 0)
		return false;
	stmt = running_queries[nrunning_queries - 1]->plannedstmt;
	return stmt != NULL && stmt->commandType == CMD_SELECT &&
		stmt->rowMarks == NIL && !stmt->hasModifyingCTE;
}

/*
 * Column groups the innermost statement reads (written = false) or writes
 * in rel, from the columns its range table entries for rel reference: the
 * same sets that column privileges are checked on (selectedCols covers every
 * reference, target list, quals and RETURNING alike; updatedCols the SET
 * targets, extraUpdatedCols the generated columns they change).  All groups
 * whenever that is not the whole story: no statement (COPY, maintenance),
 * no entry for rel, a whole-row or system-column reference, row security
 * policies (their quals are not in selectedCols), and, for writes, row
 * triggers (they see and may change whole rows), CHECK constraints and
 * generated columns (computed from columns not SET), or a changed identity
 * (a new row key).  A statement that only tests existence reads group 0.
 * With learned groups, a write of group 0 writes every group (below).
 */
FpsGroupMask
fps_statement_groups(Relation rel, FpsRelInfo *info, bool written)
{
	static uint32 cached_statement[2];
	static Oid	cached_relid[2];
	static FpsGroupMask cached_mask[2];
	static uint32 learned_statement;
	static Oid	learned_relid;
	FpsGroupMask all = FPS_ALL_GROUPS(info);
	FpsGroupMask mask = 0;
	uint32		statement = fps_current_statement();
	bool		found = false;
	QueryDesc  *qd;
	ListCell   *lc;

	/*
	 * Learning (column_groups.c) looks at each UPDATE statement's columns
	 * once, not at every row it writes.
	 */
	if (written && statement != 0 && fps_learn_column_groups &&
		(learned_statement != statement || learned_relid != info->relid))
	{
		learned_statement = statement;
		learned_relid = info->relid;
		if (running_queries[nrunning_queries - 1]->plannedstmt != NULL)
			fps_learn_updated_columns(rel, info,
									  running_queries[nrunning_queries - 1]->plannedstmt->rtable);
	}
	if (info->ngroups <= 1)
		return all;
	if (statement == 0)
		return all;
	if (cached_statement[written] == statement && cached_relid[written] == info->relid)
		return cached_mask[written];
	if (written)
	{
		TriggerDesc *trig = rel->trigdesc;
		TupleConstr *constr = RelationGetDescr(rel)->constr;

		if ((trig && (trig->trig_update_before_row || trig->trig_update_after_row)) ||
			(constr && (constr->num_check > 0 || constr->has_generated_stored)))
			return all;
	}
	else if (rel->rd_rel->relrowsecurity)
		return all;

	qd = running_queries[nrunning_queries - 1];
	if (qd->plannedstmt == NULL)
		return all;
	foreach(lc, qd->plannedstmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		Bitmapset  *cols;
		int			x = -1;

		if (rte->rtekind != RTE_RELATION || rte->relid != info->relid)
			continue;
		if (written && bms_is_empty(rte->updatedCols))
			continue;			/* not the UPDATE's target */
		found = true;
		cols = written ? bms_union(rte->updatedCols, rte->extraUpdatedCols) :
			rte->selectedCols;
		while ((x = bms_next_member(cols, x)) >= 0)
		{
			AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;
			int			k;

			if (attno == SelfItemPointerAttributeNumber ||
				attno == TableOidAttributeNumber)
				continue;		/* where the version is, not what it says */
			if (attno <= 0 || attno > info->natts)
				return all;
			if (written)
				for (k = 0; k < info->nkeys; k++)
					if (info->attnums[k] == attno)
						return all;
			mask |= 1 << info->attgroup[attno];
		}
	}
	if (!found)
		return all;
	if (mask == 0)
		mask = 1;

	/*
	 * Learned groups: group 0 holds the identity and the columns no UPDATE
	 * was seen to set.  An UPDATE that sets one of them anyway writes every
	 * group, as inserts, deletes and identity changes do, so the key of any
	 * other group also describes group 0's columns: a read of group 0 and
	 * others pins only the others (one key less per row of a Payment, or of
	 * a New-Order's stock rows), which track.c decides per row, from what
	 * the transaction read of the row before.  Declared groups keep group 0
	 * apart.
	 */
	if (!info->groups_declared && (mask & 1) && written)
		mask = all;
	cached_statement[written] = statement;
	cached_relid[written] = info->relid;
	cached_mask[written] = mask;
	return mask;
}

/* ---- statements that only read ---- */

static bool plan_only_reads(Plan *plan);

static bool
exprs_only_read(Node *node)
{
	return node == NULL || !contain_volatile_functions(node);
}

static bool
plans_only_read(List *plans)
{
	ListCell   *lc;

	foreach(lc, plans)
		if (!plan_only_reads((Plan *) lfirst(lc)))
			return false;
	return true;
}

/*
 * Can nothing in plan write: no volatile function anywhere in its
 * expressions (a function that writes must be volatile: PostgreSQL runs
 * stable and immutable functions read-only) and nothing but nodes that
 * read?  Node types not known here count as writing.
 */
static bool
plan_only_reads(Plan *plan)
{
	if (plan == NULL)
		return true;
	if (!exprs_only_read((Node *) plan->targetlist) ||
		!exprs_only_read((Node *) plan->qual) ||
		!plan_only_reads(plan->lefttree) || !plan_only_reads(plan->righttree))
		return false;
	switch (nodeTag(plan))
	{
		case T_Result:
			return exprs_only_read(((Result *) plan)->resconstantqual);
		case T_Append:
			return plans_only_read(((Append *) plan)->appendplans);
		case T_MergeAppend:
			return plans_only_read(((MergeAppend *) plan)->mergeplans);
		case T_BitmapAnd:
			return plans_only_read(((BitmapAnd *) plan)->bitmapplans);
		case T_BitmapOr:
			return plans_only_read(((BitmapOr *) plan)->bitmapplans);
		case T_SampleScan:
			return exprs_only_read((Node *) ((SampleScan *) plan)->tablesample);
		case T_IndexScan:
			return exprs_only_read((Node *) ((IndexScan *) plan)->indexqual) &&
				exprs_only_read((Node *) ((IndexScan *) plan)->indexorderby);
		case T_IndexOnlyScan:
			return exprs_only_read((Node *) ((IndexOnlyScan *) plan)->indexqual) &&
				exprs_only_read((Node *) ((IndexOnlyScan *) plan)->indexorderby);
		case T_BitmapIndexScan:
			return exprs_only_read((Node *) ((BitmapIndexScan *) plan)->indexqual);
		case T_BitmapHeapScan:
			return exprs_only_read((Node *) ((BitmapHeapScan *) plan)->bitmapqualorig);
		case T_TidScan:
			return exprs_only_read((Node *) ((TidScan *) plan)->tidquals);
		case T_TidRangeScan:
			return exprs_only_read((Node *) ((TidRangeScan *) plan)->tidrangequals);
		case T_SubqueryScan:
			return plan_only_reads(((SubqueryScan *) plan)->subplan);
		case T_FunctionScan:
			return exprs_only_read((Node *) ((FunctionScan *) plan)->functions);
		case T_ValuesScan:
			return exprs_only_read((Node *) ((ValuesScan *) plan)->values_lists);
		case T_TableFuncScan:
			return exprs_only_read((Node *) ((TableFuncScan *) plan)->tablefunc);
		case T_NestLoop:
			return exprs_only_read((Node *) ((Join *) plan)->joinqual);
		case T_MergeJoin:
			return exprs_only_read((Node *) ((Join *) plan)->joinqual) &&
				exprs_only_read((Node *) ((MergeJoin *) plan)->mergeclauses);
		case T_HashJoin:
			return exprs_only_read((Node *) ((Join *) plan)->joinqual) &&
				exprs_only_read((Node *) ((HashJoin *) plan)->hashclauses) &&
				exprs_only_read((Node *) ((HashJoin *) plan)->hashkeys);
		case T_Hash:
			return exprs_only_read((Node *) ((Hash *) plan)->hashkeys);
		case T_Memoize:
			return exprs_only_read((Node *) ((Memoize *) plan)->param_exprs);
		case T_WindowAgg:
			return exprs_only_read(((WindowAgg *) plan)->startOffset) &&
				exprs_only_read(((WindowAgg *) plan)->endOffset) &&
				exprs_only_read((Node *) ((WindowAgg *) plan)->runCondition);
		case T_Limit:
			return exprs_only_read(((Limit *) plan)->limitOffset) &&
				exprs_only_read(((Limit *) plan)->limitCount);
		case T_SeqScan:
		case T_CteScan:
		case T_WorkTableScan:
		case T_NamedTuplestoreScan:
		case T_RecursiveUnion:
		case T_Material:
		case T_Sort:
		case T_IncrementalSort:
		case T_Group:
		case T_Agg:
		case T_Unique:
		case T_Gather:
		case T_GatherMerge:
		case T_SetOp:
		case T_ProjectSet:
			return true;
		default:
			return false;
	}
}

/*
 * Is the statement the client sent, running or starting now, a SELECT
 * without row locks or data-modifying CTEs, whose plan calls no volatile
 * function?  Then a transaction that is only this statement writes
 * nothing, unless a function lies about its volatility or a pipeline sends
 * more statements before its Sync: the transaction refuses to write then
 * (fps_txn_refuse_write_at_ts).  Inside a utility statement (DO, CALL,
 * EXPLAIN, cursors) or the planner, the client's statement is not known.
 */
bool
fps_outer_statement_only_reads(void)
{
	PlannedStmt *stmt;
	QueryDesc  *qd;

	if (utility_depth > 0 || planning_depth > 0)
		return false;
	qd = nrunning_queries > 0 ? running_queries[0] : starting_query;
	if (qd == NULL)
		return false;
	stmt = qd->plannedstmt;
	return stmt != NULL && stmt->commandType == CMD_SELECT &&
		stmt->rowMarks == NIL && !stmt->hasModifyingCTE &&
		plan_only_reads(stmt->planTree) && plans_only_read(stmt->subplans);
}
