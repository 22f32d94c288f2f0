/*-------------------------------------------------------------------------
 *
 * column_groups.c
 *	  fpsketch_set_column_group(): declare which columns of an fpsketch
 *	  table get timestamps of their own.
 *
 * Most conflicts on hot rows are between transactions that touch different
 * columns (TPC-C's New-Order reads w_tax while Payment adds to w_ytd).  With
 * column groups each row has one FPSketch key per group, reads record the
 * groups of the columns a statement references and UPDATEs write the groups
 * they change (fpsketch_am.c, statement_groups).
 *
 * The mapping is kept in the extension's table fpsketch_column_group, written
 * here (as the table owner, whatever the privileges on that table).  A
 * change takes ACCESS EXCLUSIVE lock on the table, so no transaction uses
 * the table while the mapping changes, invalidates its relcache entry (every
 * backend reloads the mapping), and raises the FPSketch floor at commit: a
 * group key that did not exist before starts above every timestamp a row of
 * the table was ever written with.
 *
 * pg_dump dumps that table (it is an extension configuration table) and
 * pg_restore COPYs its rows back, which fires fpsketch_column_group_restore:
 * the same ownership check, lock, invalidation and floor, with the
 * attribute numbers taken again from the column names, since a restored
 * table has none of the original's dropped columns.  The names follow
 * renames and drops (the extension's event triggers).  Everyone may read
 * the table (pg_dump must, whoever runs it) and insert into it (a restore
 * by a table's owner); the trigger lets only the owner add a table's
 * groups, and nobody but the extension's owner may update or delete rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/genam.h"
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "cc/cc.h"
#include "fpsketch_am.h"

#define Anum_group_rel		1
#define Anum_group_name		2
#define Anum_group_number	3
#define Anum_group_attnums	4
#define Anum_group_columns	5
#define Natts_group			5

/* the types of fpsketch_column_group's columns, which the C code relies on */
static const Oid group_column_types[Natts_group] = {
	REGCLASSOID, NAMEOID, INT2OID, INT2ARRAYOID, NAMEARRAYOID
};

/*
 * Is attnum in a stored row's attnums?  The rows are written by this file
 * (or by the extension's owner), but the array is read as plain int16s only
 * when it is what we wrote: one dimension, no NULLs.
 */
static bool
attnum_in(int16 attnum, ArrayType *arr)
{
	int16	   *a;
	int			n;
	int			i;

	if (ARR_NDIM(arr) > 1 || ARR_HASNULL(arr) || ARR_ELEMTYPE(arr) != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("fpsketch_column_group has a row whose attnums are not a one-dimensional smallint array without nulls")));
	a = (int16 *) ARR_DATA_PTR(arr);
	n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	for (i = 0; i < n; i++)
		if (a[i] == attnum)
			return true;
	return false;
}

/*
 * A column list given by a caller: one dimension (or none: empty), no NULL
 * elements, names.
 */
static void
check_column_list(ArrayType *columns)
{
	if (ARR_ELEMTYPE(columns) != NAMEOID)
		elog(ERROR, "fpsketch: column list of type %u, expected name[]", ARR_ELEMTYPE(columns));
	if (ARR_NDIM(columns) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column list must be a one-dimensional array without nulls")));
	if (ARR_HASNULL(columns))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("column list must be a one-dimensional array without nulls")));
}

/*
 * Why a group cannot be declared on a table as it is now.
 * fpsketch_set_column_group raises it as an ERROR.  The restore trigger
 * skips the row with a WARNING instead: a row that was valid when it was
 * dumped may not fit the restored table (a column dropped by an older
 * build that kept it in the group, a table restored with another access
 * method), and an ERROR would abort the COPY of every user's groups and,
 * in a one-transaction restore, the whole restore.
 */
typedef struct GroupProblem
{
	int			sqlerrcode;
	char	   *message;		/* as an error message */
	char	   *sentence;		/* the same as a detail sentence */
	char	   *detail;			/* for the ERROR, or NULL */
	char	   *hint;			/* for the ERROR, or NULL */
} GroupProblem;

static void
set_problem(GroupProblem *problem, int sqlerrcode, char *message, char *sentence)
{
	problem->sqlerrcode = sqlerrcode;
	problem->message = message;
	problem->sentence = sentence;
	problem->detail = NULL;
	problem->hint = NULL;
}

static void raise_problem(GroupProblem *problem) pg_attribute_noreturn();

static void
raise_problem(GroupProblem *problem)
{
	ereport(ERROR,
			(errcode(problem->sqlerrcode),
			 errmsg_internal("%s", problem->message),
			 problem->detail ? errdetail_internal("%s", problem->detail) : 0,
			 problem->hint ? errhint("%s", problem->hint) : 0));
}

/*
 * The attribute numbers of a group's columns, given by name; NULL and a
 * problem for a column that does not exist, a system column, a row
 * identity column or a column listed twice.
 */
static int16 *
resolve_columns(Relation rel, FpsRelInfo *info, Datum *names, int ncolumns,
				GroupProblem *problem)
{
	int16	   *attnums = palloc(sizeof(int16) * Max(ncolumns, 1));
	const char *relname = RelationGetRelationName(rel);
	int			i;
	int			j;

	for (i = 0; i < ncolumns; i++)
	{
		char	   *colname = NameStr(*DatumGetName(names[i]));
		AttrNumber	attnum = get_attnum(RelationGetRelid(rel), colname);

		if (attnum == InvalidAttrNumber)
		{
			set_problem(problem, ERRCODE_UNDEFINED_COLUMN,
						psprintf(_("column \"%s\" of relation \"%s\" does not exist"),
								 colname, relname),
						psprintf(_("Column \"%s\" of relation \"%s\" does not exist."),
								 colname, relname));
			return NULL;
		}
		if (attnum < 0)
		{
			set_problem(problem, ERRCODE_INVALID_PARAMETER_VALUE,
						psprintf(_("system column \"%s\" cannot be in a column group"), colname),
						psprintf(_("System column \"%s\" cannot be in a column group."), colname));
			return NULL;
		}
		for (j = 0; j < info->nkeys; j++)
			if (info->attnums[j] == attnum)
			{
				set_problem(problem, ERRCODE_INVALID_PARAMETER_VALUE,
							psprintf(_("column \"%s\" is part of the row identity of \"%s\""),
									 colname, relname),
							psprintf(_("Column \"%s\" is part of the row identity of \"%s\"."),
									 colname, relname));
				problem->detail = _("Primary key (or replica identity) columns stay in group 0, with every column not in a declared group.");
				return NULL;
			}
		for (j = 0; j < i; j++)
			if (attnums[j] == attnum)
			{
				set_problem(problem, ERRCODE_DUPLICATE_COLUMN,
							psprintf(_("column \"%s\" is listed twice"), colname),
							psprintf(_("Column \"%s\" is listed twice."), colname));
				return NULL;
			}
		attnums[i] = attnum;
	}
	return attnums;
}

/*
 * The extension's btree index on fpsketch_column_group (rel), or
 * InvalidOid (then a heap scan finds the same rows).  fill_column_groups
 * in cc/keys.c looks for it the same way.
 */
static Oid
column_group_index(Relation cfg)
{
	Oid			indexoid = InvalidOid;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(cfg))
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);

		if (idx->rd_rel->relam == BTREE_AM_OID && idx->rd_index->indisvalid &&
			idx->rd_index->indkey.values[0] == Anum_group_rel &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL))
			indexoid = RelationGetRelid(idx);
		index_close(idx, AccessShareLock);
		if (OidIsValid(indexoid))
			break;
	}
	return indexoid;
}

/*
 * rel's mapping changes in this transaction: every backend reloads it (at
 * our next command or commit, after the change is visible), and the floor
 * rises at commit.
 */
static void
column_groups_changed(Relation rel)
{
	CacheInvalidateRelcache(rel);
	fps_txn_note_untracked_write();
}

/*
 * An ERROR unless the current user may change relid's column groups: it
 * must exist, the user must own it (or be a member of its owner's role) and
 * have USAGE on its schema, as a lookup of the table by name would need
 * (a regclass given as a number skips that lookup).  Reads the syscache
 * only: it takes no lock.
 */
static void
check_grouped_table_permissions(Oid relid)
{
	HeapTuple	tuple;
	Form_pg_class classform;
	AclResult	aclresult;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	classform = (Form_pg_class) GETSTRUCT(tuple);
	aclresult = pg_namespace_aclcheck(classform->relnamespace, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_SCHEMA, get_namespace_name(classform->relnamespace));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(classform->relkind),
					   NameStr(classform->relname));
	ReleaseSysCache(tuple);
}

/*
 * Open rel for a change of its groups: ACCESS EXCLUSIVE, and an ERROR
 * unless the current user owns it.  NULL and a problem unless it is a
 * permanent fpsketch table (the lock is kept).
 *
 * The permissions are checked before the lock is requested, as core's
 * RangeVarCallbackOwnsTable does for DDL: a request for ACCESS EXCLUSIVE
 * that has to wait makes every later reader of the table wait behind it,
 * so anyone allowed to queue one could stall any table (pg_authid too,
 * and with it every new login).  Whatever committed while we waited (a
 * DROP, ALTER ... OWNER, REVOKE USAGE) is visible once LockRelationOid
 * has processed the invalidations, so the same checks run again then.
 */
static Relation
open_grouped_table(Oid relid, GroupProblem *problem)
{
	Relation	rel;
	const char *relname;

	check_grouped_table_permissions(relid);
	LockRelationOid(relid, AccessExclusiveLock);
	check_grouped_table_permissions(relid);
	rel = table_open(relid, NoLock);
	relname = RelationGetRelationName(rel);

	if (!fps_is_fpsketch_relation(rel) || rel->rd_rel->relkind != RELKIND_RELATION)
	{
		set_problem(problem, ERRCODE_WRONG_OBJECT_TYPE,
					psprintf(_("\"%s\" is not an fpsketch table"), relname),
					psprintf(_("\"%s\" is not an fpsketch table."), relname));
		problem->hint = _("Column groups apply to tables created USING fpsketch.");
	}
	else if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
	{
		set_problem(problem, ERRCODE_FEATURE_NOT_SUPPORTED,
					psprintf(_("temporary table \"%s\" cannot have column groups"), relname),
					psprintf(_("Temporary table \"%s\" cannot have column groups."), relname));
		problem->detail = _("Temporary tables are not shared, so fpsketch does not track them.");
	}
	else
		return rel;
	table_close(rel, NoLock);
	return NULL;
}

PG_FUNCTION_INFO_V1(fpsketch_set_column_group);

/*
 * fpsketch_set_column_group(rel regclass, group_name name, columns name[])
 * creates or replaces the group; NULL or an empty array drops it.
 */
Datum
fpsketch_set_column_group(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Name		group_name;
	ArrayType  *columns;
	Relation	rel;
	Relation	cfg;
	Oid			cfgoid;
	Oid			indexoid;
	FpsRelInfo *info;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		used[FPS_MAX_COLUMN_GROUPS] = {false};
	int			groupno = 0;
	Datum	   *names = NULL;
	bool	   *nulls = NULL;
	int			ncolumns = 0;
	int16	   *attnums;
	GroupProblem problem;
	int			i;

	/*
	 * CALLED ON NULL INPUT, because NULL columns drop the group; the
	 * relation and the group name must be given.
	 */
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("relation must not be null"),
				 errhint("Pass the fpsketch table whose column group to set or drop.")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("column group name must not be null"),
				 errhint("A NULL column list drops a group; the group's name is still needed.")));
	relid = PG_GETARG_OID(0);
	group_name = PG_GETARG_NAME(1);
	columns = PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2);

	rel = open_grouped_table(relid, &problem);
	if (rel == NULL)
		raise_problem(&problem);
	info = fps_relinfo(rel);
	if (info->by_tid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("fpsketch table \"%s\" has no primary key", RelationGetRelationName(rel)),
				 errdetail("Column groups need a logical row identity: a primary key or a replica identity index on hashable columns."),
				 errhint("Add a primary key first.")));
	cfgoid = fps_column_group_table(rel);
	if (!OidIsValid(cfgoid))
		elog(ERROR, "fpsketch: table fpsketch_column_group is missing: reinstall the extension");
	if (columns != NULL)
	{
		check_column_list(columns);
		deconstruct_array(columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
						  &names, &nulls, &ncolumns);
	}

	/* the table's groups now: drop the one replaced, note the numbers used */
	cfg = table_open(cfgoid, RowExclusiveLock);
	ScanKeyInit(&key, Anum_group_rel, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	indexoid = column_group_index(cfg);
	scan = systable_beginscan(cfg, indexoid, OidIsValid(indexoid), NULL, 1, &key);
	attnums = resolve_columns(rel, info, names, ncolumns, &problem);
	if (attnums == NULL)
		raise_problem(&problem);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Name		name = DatumGetName(heap_getattr(tup, Anum_group_name, RelationGetDescr(cfg), &isnull));
		int			no = DatumGetInt16(heap_getattr(tup, Anum_group_number, RelationGetDescr(cfg), &isnull));
		ArrayType  *arr = DatumGetArrayTypeP(heap_getattr(tup, Anum_group_attnums, RelationGetDescr(cfg), &isnull));

		if (namestrcmp(name, NameStr(*group_name)) == 0)
		{
			groupno = no;
			simple_heap_delete(cfg, &tup->t_self);
			continue;
		}
		if (no > 0 && no < FPS_MAX_COLUMN_GROUPS)
			used[no] = true;
		for (i = 0; i < ncolumns; i++)
			if (attnum_in(attnums[i], arr))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("column \"%s\" is already in column group \"%s\" of \"%s\"",
								get_attname(relid, attnums[i], false), NameStr(*name),
								RelationGetRelationName(rel)),
						 errhint("Drop it from that group first: fpsketch_set_column_group('%s', '%s', NULL) drops the whole group.",
								 RelationGetRelationName(rel), NameStr(*name))));
	}
	systable_endscan(scan);

	if (ncolumns > 0)
	{
		Datum		values[Natts_group];
		bool		isnull[Natts_group] = {false};
		Datum	   *elems = palloc(sizeof(Datum) * ncolumns);
		Datum	   *canonical = palloc(sizeof(Datum) * ncolumns);

		if (groupno == 0)
			for (groupno = 1; groupno < FPS_MAX_COLUMN_GROUPS && used[groupno]; groupno++)
				;
		if (groupno >= FPS_MAX_COLUMN_GROUPS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("table \"%s\" cannot have more than %d column groups",
							RelationGetRelationName(rel), FPS_MAX_COLUMN_GROUPS - 1)));
		for (i = 0; i < ncolumns; i++)
		{
			elems[i] = Int16GetDatum(attnums[i]);
			canonical[i] = DirectFunctionCall1(namein,
											   CStringGetDatum(get_attname(relid, attnums[i], false)));
		}
		values[Anum_group_rel - 1] = ObjectIdGetDatum(relid);
		values[Anum_group_name - 1] = NameGetDatum(group_name);
		values[Anum_group_number - 1] = Int16GetDatum(groupno);
		values[Anum_group_attnums - 1] =
			PointerGetDatum(construct_array(elems, ncolumns, INT2OID, 2, true, TYPALIGN_SHORT));
		values[Anum_group_columns - 1] =
			PointerGetDatum(construct_array(canonical, ncolumns, NAMEOID, NAMEDATALEN, false,
											TYPALIGN_CHAR));
		/* with its index entry: CatalogTupleInsert works on any table */
		CatalogTupleInsert(cfg, heap_form_tuple(RelationGetDescr(cfg), values, isnull));
	}
	table_close(cfg, RowExclusiveLock);

	CommandCounterIncrement();
	column_groups_changed(rel);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(fpsketch_column_group_restore);

/*
 * BEFORE INSERT trigger on fpsketch_column_group: a row inserted by SQL (a
 * restore's COPY; fpsketch_set_column_group inserts below triggers).  Its
 * columns are resolved by name on this table, as the attribute numbers it
 * carries are the dumped table's, and the change takes effect as
 * fpsketch_set_column_group's do.  The primary key is not required here:
 * pg_restore adds it after the data.
 */
Datum
fpsketch_column_group_restore(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	cfg;
	HeapTuple	tuple;
	TupleDesc	tupdesc;
	Relation	rel;
	FpsRelInfo *info;
	Datum		values[Natts_group];
	bool		isnull[Natts_group];
	bool		replace[Natts_group] = {false};
	Datum	   *names;
	bool	   *nulls;
	int			ncolumns;
	int16	   *attnums = NULL;
	Datum	   *elems;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	other;
	Oid			indexoid;
	const char *group_name;
	GroupProblem problem;
	int			i;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fpsketch_column_group_restore() must be fired BEFORE INSERT FOR EACH ROW")));
	cfg = trigdata->tg_relation;
	tuple = trigdata->tg_trigtuple;
	tupdesc = RelationGetDescr(cfg);

	/*
	 * The row is read as fpsketch_column_group's: make sure it is one (a
	 * superuser could attach the function to any table), before a datum is
	 * taken for an array or a name.
	 */
	if (tupdesc->natts != Natts_group)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fpsketch_column_group_restore() fired on \"%s\", which is not fpsketch_column_group",
						RelationGetRelationName(cfg)),
				 errdetail("The table has %d columns, fpsketch_column_group %d.",
						   tupdesc->natts, Natts_group)));
	for (i = 0; i < Natts_group; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->atttypid != group_column_types[i])
			ereport(ERROR,
					(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
					 errmsg("fpsketch_column_group_restore() fired on \"%s\", which is not fpsketch_column_group",
							RelationGetRelationName(cfg)),
					 errdetail("Column %d is of type %s, expected %s.", i + 1,
							   format_type_be(att->atttypid),
							   format_type_be(group_column_types[i]))));
	}
	heap_deform_tuple(tuple, tupdesc, values, isnull);

	/*
	 * A BEFORE trigger sees the row before its NOT NULL constraints are
	 * checked: report what they would.
	 */
	for (i = 0; i < Natts_group; i++)
		if (isnull[i] && i + 1 != Anum_group_attnums && i + 1 != Anum_group_columns)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
							NameStr(TupleDescAttr(tupdesc, i)->attname),
							RelationGetRelationName(cfg))));
	if (isnull[Anum_group_columns - 1])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("fpsketch_column_group rows need their column names"),
				 errhint("Declare column groups with fpsketch_set_column_group().")));
	check_column_list(DatumGetArrayTypeP(values[Anum_group_columns - 1]));

	group_name = NameStr(*DatumGetName(values[Anum_group_name - 1]));

	/*
	 * Only the table's owner may add its groups (42501 otherwise, checked
	 * before the lock).  A row that does not fit the table as it is now is
	 * skipped with a WARNING (see GroupProblem).
	 */
	rel = open_grouped_table(DatumGetObjectId(values[Anum_group_rel - 1]), &problem);
	if (rel != NULL)
	{
		info = fps_relinfo(rel);
		deconstruct_array(DatumGetArrayTypeP(values[Anum_group_columns - 1]), NAMEOID,
						  NAMEDATALEN, false, TYPALIGN_CHAR, &names, &nulls, &ncolumns);
		if (ncolumns == 0)
		{
			/* what an older build left when a group's last column was dropped */
			set_problem(&problem, ERRCODE_INVALID_PARAMETER_VALUE, NULL,
						_("The group has no columns."));
			attnums = NULL;
		}
		else
			attnums = resolve_columns(rel, info, names, ncolumns, &problem);
	}
	if (rel == NULL || attnums == NULL)
	{
		ereport(WARNING,
				(errmsg("column group \"%s\" of \"%s\" is not restored", group_name,
						rel ? RelationGetRelationName(rel) :
						get_rel_name(DatumGetObjectId(values[Anum_group_rel - 1]))),
				 errdetail_internal("%s", problem.sentence),
				 problem.hint ? errhint("%s", problem.hint) :
				 errhint("Declare the group again with fpsketch_set_column_group() if it is still wanted.")));
		if (rel != NULL)
			table_close(rel, NoLock);
		return PointerGetDatum(NULL);
	}

	/* a group of its name or number, or one of its columns, already there */
	ScanKeyInit(&key, Anum_group_rel, BTEqualStrategyNumber, F_OIDEQ,
				values[Anum_group_rel - 1]);
	indexoid = column_group_index(cfg);
	scan = systable_beginscan(cfg, indexoid, OidIsValid(indexoid), NULL, 1, &key);
	while (HeapTupleIsValid(other = systable_getnext(scan)))
	{
		bool		null;
		Name		name = DatumGetName(heap_getattr(other, Anum_group_name, tupdesc, &null));
		int			no = DatumGetInt16(heap_getattr(other, Anum_group_number, tupdesc, &null));
		ArrayType  *arr = DatumGetArrayTypeP(heap_getattr(other, Anum_group_attnums, tupdesc, &null));
		bool		overlaps = false;

		for (i = 0; i < ncolumns; i++)
			overlaps |= attnum_in(attnums[i], arr);
		if (namestrcmp(name, group_name) == 0 ||
			no == DatumGetInt16(values[Anum_group_number - 1]) || overlaps)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("column group \"%s\" of \"%s\" conflicts with its group \"%s\"",
							group_name, RelationGetRelationName(rel), NameStr(*name)),
					 errdetail("Two groups of a table cannot share a name, a number or a column."),
					 errhint("Drop the existing group with fpsketch_set_column_group('%s', '%s', NULL) first.",
							 RelationGetRelationName(rel), NameStr(*name))));
	}
	systable_endscan(scan);

	elems = palloc(sizeof(Datum) * ncolumns);
	for (i = 0; i < ncolumns; i++)
		elems[i] = Int16GetDatum(attnums[i]);
	values[Anum_group_attnums - 1] =
		PointerGetDatum(construct_array(elems, ncolumns, INT2OID, 2, true, TYPALIGN_SHORT));
	isnull[Anum_group_attnums - 1] = false;
	replace[Anum_group_attnums - 1] = true;
	tuple = heap_modify_tuple(tuple, tupdesc, values, isnull, replace);

	column_groups_changed(rel);
	table_close(rel, NoLock);
	return PointerGetDatum(tuple);
}
