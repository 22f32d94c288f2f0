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
 *	5. no volatile function that the first evaluation ran on the old
 *	   version: what it did there (a write to another table) stays when
 *	   EvalPlanQual runs it again on the newest one, so the transaction
 *	   would keep effects of a version its read set no longer names.  That
 *	   is every expression below those nodes (correlated subplans, the
 *	   functions of aggregates, whose own pg_proc label says immutable, and
 *	   the CHECKs of domains included), and, for an UPDATE without a BEFORE
 *	   row trigger (which locks the newest version first), what runs on the
 *	   row computed from the old version before heap finds the newer one:
 *	   stored generated columns, the partition constraint, the WITH CHECK
 *	   options (row-level security) and the table's CHECK constraints.
 *	   MERGE is refused: its actions' conditions and projections run from
 *	   the ModifyTable node itself.
 *	   The code a value's type makes stable functions run counts too: the
 *	   CHECKs of domains among a composite's fields or an array's elements
 *	   (record_in, array_in, jsonb_populate_record check them), and a
 *	   user's volatile cast to json (to_json and its kin call it).
 *	   What the walk cannot see (code a stable built-in reaches through the
 *	   catalog: a user's cast that textanycat calls, the views that
 *	   table_to_xml reads) is caught where it writes: a data-modifying,
 *	   row-locking or utility statement that began after the scan read the
 *	   row refuses (am/statement.c counts them).
 *	   Volatile functions without such effects (random(), clock_timestamp(),
 *	   timeofday(), gen_random_uuid(), and nextval(), currval(), lastval():
 *	   sequences are outside every order) are allowed.  Volatility labels are trusted, as the
 *	   planner trusts them: a function labelled STABLE that writes gets by,
 *	   and so do the support functions of operator classes (a superuser's)
 *	   that record comparisons and hashed subplans call through the type
 *	   cache; GREATEST/LEAST's and a hashed IN list's are looked at.
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
#include "catalog/pg_aggregate.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/execdesc.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

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

static bool plan_has_volatile(Plan *plan, List *subplans);
static bool expr_has_volatile(void *expr, List *subplans);

/*
 * Volatile, but with no effect that a serial order constrains: they read a
 * clock or a random source, or advance a sequence (sequences are outside
 * every transaction's order, and a skipped value is allowed).
 */
static bool
volatile_without_effects(Oid funcid)
{
	switch (funcid)
	{
		case F_RANDOM:
		case F_CLOCK_TIMESTAMP:
		case F_TIMEOFDAY:
		case F_GEN_RANDOM_UUID:
		case F_NEXTVAL:
		case F_CURRVAL:
		case F_LASTVAL:
			return true;
		default:
			return false;
	}
}

static bool
function_is_volatile(Oid funcid, void *context)
{
	return func_volatile(funcid) == PROVOLATILE_VOLATILE &&
		!volatile_without_effects(funcid);
}

/* The functions an aggregate runs: its pg_proc entry is always immutable. */
static bool
aggregate_is_volatile(Oid aggfnoid)
{
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	Form_pg_aggregate agg;
	Oid			fns[8];
	bool		result = false;

	if (!HeapTupleIsValid(tup))
		return true;
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	fns[0] = agg->aggtransfn;
	fns[1] = agg->aggfinalfn;
	fns[2] = agg->aggcombinefn;
	fns[3] = agg->aggserialfn;
	fns[4] = agg->aggdeserialfn;
	fns[5] = agg->aggmtransfn;
	fns[6] = agg->aggminvtransfn;
	fns[7] = agg->aggmfinalfn;
	ReleaseSysCache(tup);
	for (int i = 0; i < lengthof(fns); i++)
		if (OidIsValid(fns[i]) && function_is_volatile(fns[i], NULL))
			result = true;
	return result;
}

/* The CHECK constraints of a domain and of the domains it is over. */
static bool
domain_is_volatile(Oid typid, List *subplans)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "fpsketch domain constraints",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	DomainConstraintRef *ref = palloc(sizeof(DomainConstraintRef));
	ListCell   *lc;
	bool		result = false;

	InitDomainConstraintRef(typid, ref, cxt, false);
	foreach(lc, ref->constraints)
	{
		DomainConstraintState *c = (DomainConstraintState *) lfirst(lc);

		if (c->check_expr != NULL && expr_has_volatile(c->check_expr, subplans))
			result = true;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);	/* releases the reference */
	return result;
}

/*
 * Does building a value of type typid run volatile code that the node
 * building it does not show: the CHECK of a domain (input functions such
 * as record_in and array_in, and jsonb_populate_record, check the domains
 * of fields and elements from inside functions labelled stable), or, for
 * a value made into json (to_json, row_to_json, json_agg, ...), a cast of
 * a type to json that a user created?  Through fields, elements, range
 * subtypes and domains' base types; too deep counts as yes.
 */
static bool
type_runs_volatile_code(Oid typid, bool to_json, List *subplans, int depth)
{
	Oid			inner;

	if (!OidIsValid(typid))
		return false;
	if (depth > 8)
		return true;
	check_stack_depth();
	if (to_json)
	{
		Oid			targets[2] = {JSONOID, JSONBOID};

		for (int i = 0; i < lengthof(targets); i++)
		{
			HeapTuple	tup = SearchSysCache2(CASTSOURCETARGET, ObjectIdGetDatum(typid),
											  ObjectIdGetDatum(targets[i]));
			bool		volatile_cast = false;

			if (!HeapTupleIsValid(tup))
				continue;
			if (((Form_pg_cast) GETSTRUCT(tup))->castmethod == COERCION_METHOD_FUNCTION)
				volatile_cast = function_is_volatile(((Form_pg_cast) GETSTRUCT(tup))->castfunc,
													 NULL);
			ReleaseSysCache(tup);
			if (volatile_cast)
				return true;
		}
	}
	switch (get_typtype(typid))
	{
		case TYPTYPE_DOMAIN:
			return domain_is_volatile(typid, subplans) ||
				type_runs_volatile_code(getBaseType(typid), to_json, subplans, depth + 1);
		case TYPTYPE_COMPOSITE:
			{
				TupleDesc	desc = lookup_rowtype_tupdesc_noerror(typid, -1, true);
				bool		result = false;

				if (desc == NULL)
					return false;
				for (int i = 0; i < desc->natts && !result; i++)
					if (!TupleDescAttr(desc, i)->attisdropped &&
						type_runs_volatile_code(TupleDescAttr(desc, i)->atttypid, to_json,
												subplans, depth + 1))
						result = true;
				ReleaseTupleDesc(desc);
				return result;
			}
		case TYPTYPE_RANGE:
			return type_runs_volatile_code(get_range_subtype(typid), to_json, subplans,
										   depth + 1);
		case TYPTYPE_MULTIRANGE:
			return type_runs_volatile_code(get_multirange_range(typid), to_json, subplans,
										   depth + 1);
		default:
			inner = get_element_type(typid);
			return OidIsValid(inner) &&
				type_runs_volatile_code(inner, to_json, subplans, depth + 1);
	}
}

/* Do the arguments of a function making json run a user's volatile cast? */
static bool
json_arguments_run_volatile_code(List *args, List *subplans)
{
	ListCell   *lc;

	foreach(lc, args)
	{
		Node	   *arg = lfirst(lc);

		if (IsA(arg, TargetEntry))
			arg = (Node *) ((TargetEntry *) arg)->expr;
		if (type_runs_volatile_code(exprType(arg), true, subplans, 0))
			return true;
	}
	return false;
}

/* Rule 5 for a node that computes a value: what its types make it run. */
static bool
computed_value_runs_volatile_code(Node *node, List *subplans)
{
	Oid			type;
	List	   *args;

	switch (nodeTag(node))
	{
		case T_FuncExpr:
			args = ((FuncExpr *) node)->args;
			break;
		case T_Aggref:
			args = ((Aggref *) node)->args;
			break;
		case T_WindowFunc:
			args = ((WindowFunc *) node)->args;
			break;
		case T_OpExpr:
		case T_CoerceViaIO:
		case T_ArrayCoerceExpr:
		case T_SubscriptingRef:
		case T_FieldStore:
		case T_RowExpr:
		case T_ArrayExpr:
			args = NIL;
			break;
		default:
			return false;
	}
	type = exprType(node);
	if (type_runs_volatile_code(type, false, subplans, 0))
		return true;
	return (type == JSONOID || type == JSONBOID) &&
		json_arguments_run_volatile_code(args, subplans);
}

/*
 * Rule 5 for an expression: a volatile function with effects, here, in a
 * subplan it runs, in an aggregate's functions or in a domain's CHECKs.
 */
static bool
volatile_walker(Node *node, List *subplans)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, function_is_volatile, NULL) ||
		computed_value_runs_volatile_code(node, subplans))
		return true;
	switch (nodeTag(node))
	{
		case T_Aggref:
			if (aggregate_is_volatile(((Aggref *) node)->aggfnoid))
				return true;
			break;
		case T_WindowFunc:
			if (get_func_prokind(((WindowFunc *) node)->winfnoid) == PROKIND_AGGREGATE &&
				aggregate_is_volatile(((WindowFunc *) node)->winfnoid))
				return true;
			break;
		case T_CoerceToDomain:
			if (domain_is_volatile(((CoerceToDomain *) node)->resulttype, subplans))
				return true;
			break;
		case T_MinMaxExpr:
			/* GREATEST and LEAST compare with the type's btree support function */
			if (function_is_volatile(lookup_type_cache(((MinMaxExpr *) node)->minmaxtype,
													   TYPECACHE_CMP_PROC)->cmp_proc, NULL))
				return true;
			break;
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) node;

				/* a hashed IN list hashes with the type's hash support function */
				if ((OidIsValid(saop->hashfuncid) &&
					 function_is_volatile(saop->hashfuncid, NULL)) ||
					(OidIsValid(saop->negfuncid) &&
					 function_is_volatile(saop->negfuncid, NULL)))
					return true;
				break;
			}
		case T_SubPlan:
			if (plan_has_volatile(list_nth(subplans, ((SubPlan *) node)->plan_id - 1),
								  subplans))
				return true;
			break;
		case T_Query:
			return query_tree_walker((Query *) node, volatile_walker, subplans, 0);
		default:
			break;
	}
	return expression_tree_walker(node, volatile_walker, subplans);
}

static bool
expr_has_volatile(void *expr, List *subplans)
{
	check_stack_depth();
	return volatile_walker((Node *) expr, subplans);
}

static bool
plans_have_volatile(List *plans, List *subplans)
{
	ListCell   *lc;

	foreach(lc, plans)
		if (plan_has_volatile((Plan *) lfirst(lc), subplans))
			return true;
	return false;
}

/*
 * Rule 5 for what an UPDATE runs on the row it computed from the old
 * version before heap finds the newer one (ExecUpdateAct): rel's stored
 * generated columns, its partition constraint, the WITH CHECK options of the
 * ModifyTable node (row-level security) and rel's CHECK constraints.
 * Immutable as PostgreSQL requires them to be, they may still cast to a
 * domain whose CHECK is not.  A BEFORE UPDATE row trigger locks the newest
 * version first (GetTupleForTrigger), and all of these then run on it only.
 */
static bool
update_checks_are_volatile(ModifyTable *mt, Relation rel, List *subplans)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;
	ListCell   *lc;
	ListCell   *lc2;

	if (mt->operation != CMD_UPDATE ||
		(rel->trigdesc != NULL && rel->trigdesc->trig_update_before_row))
		return false;
	foreach(lc, mt->withCheckOptionLists)
		foreach(lc2, (List *) lfirst(lc))
			if (expr_has_volatile(((WithCheckOption *) lfirst(lc2))->qual, subplans))
				return true;
	for (int i = 0; constr != NULL && i < constr->num_check; i++)
		if (expr_has_volatile(stringToNode(constr->check[i].ccbin), subplans))
			return true;
	for (int i = 0; constr != NULL && i < constr->num_defval; i++)
		if (TupleDescAttr(desc, constr->defval[i].adnum - 1)->attgenerated ==
			ATTRIBUTE_GENERATED_STORED &&
			expr_has_volatile(stringToNode(constr->defval[i].adbin), subplans))
			return true;
	if (rel->rd_rel->relispartition &&
		expr_has_volatile(RelationGetPartitionQual(rel), subplans))
		return true;
	return false;
}

/*
 * Rule 5 for a plan tree: does any of its expressions call a volatile
 * function?  A node whose expressions are not looked at here counts as one
 * that does.  Initplans run once, before the statement's first row, and
 * EvalPlanQual does not run them again.
 */
static bool
plan_has_volatile(Plan *plan, List *subplans)
{
	if (plan == NULL)
		return false;
	check_stack_depth();
	if (expr_has_volatile(plan->qual, subplans) ||
		expr_has_volatile(plan->targetlist, subplans))
		return true;
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_ProjectSet:
		case T_Material:
		case T_Sort:
		case T_IncrementalSort:
		case T_Unique:
		case T_Hash:
		case T_Agg:
		case T_Group:
		case T_SetOp:
			break;
		case T_SampleScan:
			if (expr_has_volatile(((SampleScan *) plan)->tablesample, subplans))
				return true;
			break;
		case T_IndexScan:
			{
				IndexScan  *scan = (IndexScan *) plan;

				if (expr_has_volatile(scan->indexqualorig, subplans) ||
					expr_has_volatile(scan->indexorderbyorig, subplans))
					return true;
				break;
			}
		case T_IndexOnlyScan:
			{
				IndexOnlyScan *scan = (IndexOnlyScan *) plan;

				if (expr_has_volatile(scan->indexqual, subplans) ||
					expr_has_volatile(scan->recheckqual, subplans) ||
					expr_has_volatile(scan->indexorderby, subplans))
					return true;
				break;
			}
		case T_BitmapIndexScan:
			if (expr_has_volatile(((BitmapIndexScan *) plan)->indexqualorig, subplans))
				return true;
			break;
		case T_BitmapHeapScan:
			if (expr_has_volatile(((BitmapHeapScan *) plan)->bitmapqualorig, subplans))
				return true;
			break;
		case T_BitmapAnd:
			return plans_have_volatile(((BitmapAnd *) plan)->bitmapplans, subplans);
		case T_BitmapOr:
			return plans_have_volatile(((BitmapOr *) plan)->bitmapplans, subplans);
		case T_TidScan:
			if (expr_has_volatile(((TidScan *) plan)->tidquals, subplans))
				return true;
			break;
		case T_TidRangeScan:
			if (expr_has_volatile(((TidRangeScan *) plan)->tidrangequals, subplans))
				return true;
			break;
		case T_Result:
			if (expr_has_volatile(((Result *) plan)->resconstantqual, subplans))
				return true;
			break;
		case T_Limit:
			if (expr_has_volatile(((Limit *) plan)->limitOffset, subplans) ||
				expr_has_volatile(((Limit *) plan)->limitCount, subplans))
				return true;
			break;
		case T_NestLoop:
			if (expr_has_volatile(((Join *) plan)->joinqual, subplans))
				return true;
			break;
		case T_MergeJoin:
			if (expr_has_volatile(((Join *) plan)->joinqual, subplans) ||
				expr_has_volatile(((MergeJoin *) plan)->mergeclauses, subplans))
				return true;
			break;
		case T_HashJoin:
			if (expr_has_volatile(((Join *) plan)->joinqual, subplans) ||
				expr_has_volatile(((HashJoin *) plan)->hashclauses, subplans))
				return true;
			break;
		case T_Append:
			return plans_have_volatile(((Append *) plan)->appendplans, subplans);
		case T_MergeAppend:
			return plans_have_volatile(((MergeAppend *) plan)->mergeplans, subplans);
		case T_SubqueryScan:
			return plan_has_volatile(((SubqueryScan *) plan)->subplan, subplans);
		case T_FunctionScan:
			if (expr_has_volatile(((FunctionScan *) plan)->functions, subplans))
				return true;
			break;
		case T_ValuesScan:
			if (expr_has_volatile(((ValuesScan *) plan)->values_lists, subplans))
				return true;
			break;
		default:
			return true;
	}
	return plan_has_volatile(plan->lefttree, subplans) ||
		plan_has_volatile(plan->righttree, subplans);
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
			plan_has_volatile(plan->lefttree, subplans) ||
			(IsA(plan, ModifyTable) &&
			 update_checks_are_volatile((ModifyTable *) plan, rel, subplans)))
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
			fps_word_wts(word) == fps_word_wts(access->observed))
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
