/*-------------------------------------------------------------------------
 *
 * volatility.c
 *	  Does a plan run volatile code, code whose effects would stay if
 *	  EvalPlanQual ran it a second time (reevaluate.c, rule 5)?
 *
 * The walk covers every expression of the plan's nodes and of the
 * correlated subplans they run, the functions of aggregates (pg_proc
 * labels every aggregate immutable), the CHECKs of domains, the code a
 * value's type makes functions labelled stable run (domain CHECKs of
 * composite fields and array elements; a user's cast to json), and for an
 * UPDATE what runs on the row it computed from the old version before heap
 * finds the newer one.  Volatile functions without effects that a serial
 * order constrains are allowed.  What no walk can see, code a stable
 * built-in reaches through the catalog, is caught where it writes, by the
 * statement count (am/statement.c).
 *
 * Shared state: none; catalog and type cache lookups only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "am.h"

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
			if (fps_plan_runs_volatile_code(list_nth(subplans, ((SubPlan *) node)->plan_id - 1),
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
		if (fps_plan_runs_volatile_code((Plan *) lfirst(lc), subplans))
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
bool
fps_update_runs_volatile_checks(ModifyTable *mt, Relation rel, List *subplans)
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
bool
fps_plan_runs_volatile_code(Plan *plan, List *subplans)
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
			return fps_plan_runs_volatile_code(((SubqueryScan *) plan)->subplan, subplans);
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
	return fps_plan_runs_volatile_code(plan->lefttree, subplans) ||
		fps_plan_runs_volatile_code(plan->righttree, subplans);
}
