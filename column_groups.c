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
 * Learned groups (issue 19).  A table with no declared group gets groups
 * from the columns its UPDATEs write: the partition of its columns into
 * the sets that are always updated together (the atoms of the observed
 * update sets: two columns share a group exactly when every UPDATE seen
 * writes both or neither), with the identity and the never-updated
 * columns in group 0.  An UPDATE then writes exactly the groups of the
 * columns it sets, and a read of other columns does not conflict with it.
 * For TPC-C as users write it that gives warehouse {w_ytd}, district
 * {d_next_o_id}, {d_ytd}, customer {c_balance}, {c_ytd_payment,
 * c_payment_cnt}, {c_data}, {c_delivery_cnt} and stock {s_quantity, s_ytd,
 * s_order_cnt, s_remote_cnt}: bench/tpcc/indexes.sql's declarations or
 * finer, without a declaration.  Learning only ever splits groups (a new
 * set refines the current partition), so a table is regrouped at most once
 * per column, and 15 groups at most: past that a block stays unsplit,
 * which is coarser, never wrong.
 *
 * Recording (fps_learn_updated_columns) runs once per UPDATE statement and
 * relation, where statement_groups looks at the statement's columns
 * anyway: it builds the statement's set of updated columns and stops if
 * the current groups already fit it (every column in a group other than
 * 0, every group it touches wholly written): that is the steady state, a
 * loop over the table's columns in backend memory.  Only a set that does
 * not fit is counted in a backend-local hash table, and only once a
 * backend has seen it in fpsketch.learn_column_groups_threshold statements
 * is it published to the shared queue, once per backend, so a set is
 * acted on for a workload, not for a single statement (and the isolation
 * and regression tests, with a handful of UPDATEs each, see the groups
 * they declare and nothing else).
 *
 * Changing the groups is the dangerous part: a transaction that read a row
 * under one mapping and validated under another would look up other keys
 * than it pinned, and miss a conflict.  A learned change is therefore made
 * exactly as a declaration is, ACCESS EXCLUSIVE lock, relcache
 * invalidation, floor raised at commit, by a background worker (one per
 * database at a time, started by the publishing backend) in a transaction
 * of its own.  Every transaction that used the table under the old mapping
 * holds a lock on it until it has committed or aborted (PostgreSQL keeps
 * relation locks to the end; validation and the COMMIT-time installs run
 * before they are released), so while the worker holds ACCESS EXCLUSIVE
 * no such transaction is in flight; every transaction that uses the table
 * afterwards locks it first, which processes the invalidation, and sees
 * only the new mapping, whenever it began; and the floor makes every key
 * that did not exist before (the new groups' keys) start above every
 * timestamp a row was written with, so nothing read under the new mapping
 * can look older than it is.  That holds in every order of events: the
 * regrouping either waits for a transaction that touched the table or
 * precedes all its uses of it.  The UPDATE that observed the set takes no
 * lock and raises no ERROR for learning, so a lock upgrade or deadlock in
 * the user's transaction cannot come of it, and no work happens after
 * commit.
 *
 * The worker asks for the lock with a lock_timeout of
 * fpsketch.learn_column_groups_lock_timeout: while it waits, new users of
 * the table queue behind it (holders of a lock on the table go ahead of
 * it), so the wait is short; on timeout it retries after
 * fpsketch.learn_column_groups_retry_interval, doubled after each timeout
 * up to 64 times, so that a long transaction on the table does not make
 * its users wait a lock timeout every interval.  A conditional lock alone
 * would never be granted on a table that some transaction always has
 * open.  Keep the timeout below deadlock_timeout: a cycle through the
 * worker's queued request is then broken by the worker's timeout, not by
 * canceling a user's transaction.
 *
 * Declared groups take precedence: a table with a declared group is
 * neither recorded nor regrouped, and declaring a group (or restoring one)
 * deletes the table's learned groups under the same lock.  Learned groups
 * are rows of fpsketch_column_group with source = 'learned', shown by the
 * view fpsketch_column_groups; pg_dump leaves them out (the table's dump
 * condition), so a dump holds exactly what users declared, and a restored
 * database relearns from its own UPDATEs.  A row inserted by SQL (a
 * restore) is always a declaration.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relation.h"
#include "access/xact.h"
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
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/logicalworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
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
#define Anum_group_source	6
#define Natts_group			6

/* the types of fpsketch_column_group's columns, which the C code relies on */
static const Oid group_column_types[Natts_group] = {
	REGCLASSOID, NAMEOID, INT2OID, INT2ARRAYOID, NAMEARRAYOID, TEXTOID
};

/* Was this fpsketch_column_group row learned (not declared)? */
static bool
group_row_learned(HeapTuple tup, TupleDesc tupdesc)
{
	bool		isnull;
	Datum		d;

	if (tupdesc->natts < Anum_group_source)
		return false;
	d = heap_getattr(tup, Anum_group_source, tupdesc, &isnull);
	return !isnull && strcmp(TextDatumGetCString(d), "learned") == 0;
}

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
	fps_note_untracked_write_of(rel);
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

		/* a declaration replaces every learned group of the table */
		if (group_row_learned(tup, RelationGetDescr(cfg)))
		{
			simple_heap_delete(cfg, &tup->t_self);
			continue;
		}
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
		values[Anum_group_source - 1] = CStringGetTextDatum("declared");
		/* with its index entry: CatalogTupleInsert works on any table */
		CatalogTupleInsert(cfg, heap_form_tuple(RelationGetDescr(cfg), values, isnull));
	}
	table_close(cfg, RowExclusiveLock);

	CommandCounterIncrement();
	column_groups_changed(rel);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(fpsketch_column_group_replicated);

/*
 * BEFORE INSERT, UPDATE or DELETE row trigger on fpsketch_column_group,
 * enabled ALWAYS: a logical replication worker's change is skipped.  A
 * publication FOR ALL TABLES includes the table, but its rows name the
 * publisher's tables by OID and attribute number, and a change of groups
 * must take effect as fpsketch_set_column_group's do (lock, invalidation,
 * floor raise), which an apply worker's row change does not: backends that
 * had the table cached kept the old groups while new ones used the new,
 * and a read and a write of one column went unseen.  Each database keeps,
 * and learns, its own groups.
 */
Datum
fpsketch_column_group_replicated(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fpsketch_column_group_replicated() must run as a BEFORE ROW trigger")));
	if (IsLogicalWorker())
		return PointerGetDatum(NULL);
	return PointerGetDatum(TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
						   trigdata->tg_newtuple : trigdata->tg_trigtuple);
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
		if (isnull[i] && i + 1 != Anum_group_attnums && i + 1 != Anum_group_columns &&
			i + 1 != Anum_group_source)
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

		/* as in fpsketch_set_column_group: declared groups replace learned ones */
		if (group_row_learned(other, tupdesc))
		{
			simple_heap_delete(cfg, &other->t_self);
			continue;
		}
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
	/* a row inserted by SQL is a declaration, whatever it says */
	values[Anum_group_source - 1] = CStringGetTextDatum("declared");
	isnull[Anum_group_source - 1] = false;
	replace[Anum_group_source - 1] = true;
	tuple = heap_modify_tuple(tuple, tupdesc, values, isnull, replace);

	column_groups_changed(rel);
	table_close(rel, NoLock);
	return PointerGetDatum(tuple);
}

/* ---------------------------------------------------------------------
 * Learned groups (see the header comment)
 * ---------------------------------------------------------------------
 */

bool		fps_learn_column_groups = true;
static int	learn_threshold = 100;
static int	learn_lock_timeout_ms = 100;
static int	learn_retry_ms = 1000;

/* Columns past this attnum are not learned (their sets are ignored). */
#define LEARN_MAX_ATTNUM	256
#define LEARN_WORDS			(LEARN_MAX_ATTNUM / 64)
#define LEARN_QUEUE			64
#define LEARN_WORKERS		8
/* a worker that has not started this long after its launch is presumed lost */
#define LEARN_LAUNCH_GRACE_MS	10000

/* a set of attnums: bit attnum - 1 */
typedef struct LearnSet
{
	uint64		w[LEARN_WORDS];
} LearnSet;

#define LEARN_HAS(set, a)	(((set)->w[((a) - 1) / 64] >> (((a) - 1) % 64)) & 1)
#define LEARN_ADD(set, a)	((set)->w[((a) - 1) / 64] |= UINT64CONST(1) << (((a) - 1) % 64))

typedef struct LearnEntry
{
	Oid			dbid;
	Oid			relid;
	LearnSet	set;
	TimestampTz not_before;		/* retry time after a lock timeout */
	int			attempts;		/* lock timeouts so far */
} LearnEntry;

typedef struct LearnWorkerSlot
{
	Oid			dbid;			/* InvalidOid: free */
	int			pid;			/* 0 until the worker has started */
	TimestampTz launched;
} LearnWorkerSlot;

typedef struct LearnShared
{
	slock_t		mutex;
	int			nentries;
	LearnEntry	entries[LEARN_QUEUE];
	LearnWorkerSlot workers[LEARN_WORKERS];
} LearnShared;

static LearnShared *learn_shared = NULL;

/* backend-local: update sets that did not fit, by relation */
typedef struct LearnSeenKey
{
	Oid			relid;
	LearnSet	set;
} LearnSeenKey;

typedef struct LearnSeen
{
	LearnSeenKey key;
	int			count;
	bool		published;
} LearnSeen;

static HTAB *learn_seen = NULL;

PGDLLEXPORT void fps_learn_worker_main(Datum arg);

void
fps_learn_init(void)
{
	DefineCustomBoolVariable("fpsketch.learn_column_groups",
							 "Learn column groups from the columns UPDATEs write, for tables without declared groups.",
							 "Off in a session: its UPDATEs are not learned from; off in the server configuration: learned sets are not applied either.  Groups learned already stay.",
							 &fps_learn_column_groups, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.learn_column_groups_threshold",
							"UPDATE statements a backend runs with one new set of updated columns before it asks for the table's groups to be split by it.",
							NULL,
							&learn_threshold, 100, 1, 1000000,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.learn_column_groups_lock_timeout",
							"Longest wait of the column group learner for its ACCESS EXCLUSIVE lock on a table before it retries later.",
							"New users of the table wait behind the learner meanwhile; keep it below deadlock_timeout.",
							&learn_lock_timeout_ms, 100, 1, 60000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("fpsketch.learn_column_groups_retry_interval",
							"Wait of the column group learner before it tries a busy table again.",
							NULL,
							&learn_retry_ms, 1000, 10, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
}

Size
fps_learn_shmem_size(void)
{
	return sizeof(LearnShared);
}

/* called with AddinShmemInitLock held */
void
fps_learn_shmem_startup(void)
{
	bool		found;

	learn_shared = ShmemInitStruct("fpsketch learned column groups",
								   sizeof(LearnShared), &found);
	if (!found)
	{
		memset(learn_shared, 0, sizeof(LearnShared));
		SpinLockInit(&learn_shared->mutex);
	}
}

/* Is attnum part of the row identity (always group 0)? */
static bool
learn_is_identity(FpsRelInfo *info, AttrNumber attnum)
{
	int			k;

	for (k = 0; k < info->nkeys; k++)
		if (info->attnums[k] == attnum)
			return true;
	return false;
}

/*
 * Do rel's current groups fit an UPDATE of set: each column in a group of
 * its own (not 0), and every group it touches wholly written?
 */
static bool
learn_set_fits(FpsRelInfo *info, const LearnSet *set)
{
	uint32		touched = 0;
	AttrNumber	a;

	for (a = 1; a <= Min(info->natts, LEARN_MAX_ATTNUM); a++)
		if (LEARN_HAS(set, a))
		{
			if (info->attgroup[a] == 0)
				return false;
			touched |= 1U << info->attgroup[a];
		}
	for (a = 1; a <= info->natts; a++)
		if ((touched & (1U << info->attgroup[a])) &&
			(a > LEARN_MAX_ATTNUM || !LEARN_HAS(set, a)))
			return false;
	return true;
}

/*
 * Ask the learner for rel to be split by set; start a learner for this
 * database unless one runs.  False if it could not be asked now (the
 * queue is full, no worker could be started): the caller asks again at a
 * later statement.
 */
static bool
learn_publish(Oid relid, const LearnSet *set)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		launch = false;
	bool		queued = false;
	int			slot = -1;
	int			i;

	SpinLockAcquire(&learn_shared->mutex);
	for (i = 0; i < learn_shared->nentries; i++)
	{
		LearnEntry *e = &learn_shared->entries[i];

		if (e->dbid == MyDatabaseId && e->relid == relid &&
			memcmp(&e->set, set, sizeof(LearnSet)) == 0)
		{
			queued = true;
			break;
		}
	}
	if (!queued && learn_shared->nentries < LEARN_QUEUE)
	{
		LearnEntry *e = &learn_shared->entries[learn_shared->nentries++];

		e->dbid = MyDatabaseId;
		e->relid = relid;
		e->set = *set;
		e->not_before = 0;
		e->attempts = 0;
		queued = true;
	}
	if (queued)
	{
		for (i = 0; i < LEARN_WORKERS; i++)
		{
			LearnWorkerSlot *w = &learn_shared->workers[i];

			if (w->dbid == MyDatabaseId &&
				(w->pid != 0 ||
				 !TimestampDifferenceExceeds(w->launched, now, LEARN_LAUNCH_GRACE_MS)))
				break;			/* a learner for this database runs */
			if (slot < 0 && (w->dbid == InvalidOid ||
							 (w->pid == 0 &&
							  TimestampDifferenceExceeds(w->launched, now, LEARN_LAUNCH_GRACE_MS))))
				slot = i;
		}
		if (i == LEARN_WORKERS && slot >= 0)
		{
			learn_shared->workers[slot].dbid = MyDatabaseId;
			learn_shared->workers[slot].pid = 0;
			learn_shared->workers[slot].launched = now;
			launch = true;
		}
	}
	SpinLockRelease(&learn_shared->mutex);

	if (launch)
	{
		BackgroundWorker worker;

		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
		worker.bgw_restart_time = BGW_NEVER_RESTART;
		snprintf(worker.bgw_library_name, BGW_MAXLEN, "fpsketch");
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "fps_learn_worker_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "fpsketch column group learner for database %u",
				 MyDatabaseId);
		snprintf(worker.bgw_type, BGW_MAXLEN, "fpsketch column group learner");
		worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
		worker.bgw_notify_pid = 0;
		if (!RegisterDynamicBackgroundWorker(&worker, NULL))
		{
			SpinLockAcquire(&learn_shared->mutex);
			learn_shared->workers[slot].dbid = InvalidOid;
			SpinLockRelease(&learn_shared->mutex);
			return false;
		}
	}
	return queued;
}

/*
 * An UPDATE statement writes rel (once per statement: statement_groups).
 * Cheap unless its set of updated columns is new to the table's groups.
 */
void
fps_learn_updated_columns(Relation rel, FpsRelInfo *info, List *rtable)
{
	LearnSeenKey key;
	LearnSeen  *seen;
	bool		found = false;
	bool		any = false;
	ListCell   *lc;
	TriggerDesc *trig = rel->trigdesc;
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	if (!fps_column_groups_enabled || learn_shared == NULL || info->by_tid ||
		info->groups_declared || !OidIsValid(MyDatabaseId))
		return;

	/*
	 * Such UPDATEs write every group (statement_groups): groups would cost
	 * reads without sparing a conflict.
	 */
	if ((trig && (trig->trig_update_before_row || trig->trig_update_after_row)) ||
		(constr && (constr->num_check > 0 || constr->has_generated_stored)))
		return;

	memset(&key, 0, sizeof(key));
	key.relid = info->relid;
	foreach(lc, rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		int			x = -1;

		if (rte->rtekind != RTE_RELATION || rte->relid != info->relid ||
			bms_is_empty(rte->updatedCols))
			continue;
		while ((x = bms_next_member(rte->updatedCols, x)) >= 0)
		{
			AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;

			if (attno <= 0 || attno > info->natts || learn_is_identity(info, attno))
				continue;
			if (attno > LEARN_MAX_ATTNUM)
				return;
			LEARN_ADD(&key.set, attno);
			any = true;
		}
	}
	if (!any || learn_set_fits(info, &key.set))
		return;

	/* sets of many tables (or dynamic SQL): start counting afresh */
	if (learn_seen != NULL && hash_get_num_entries(learn_seen) >= 1024)
	{
		hash_destroy(learn_seen);
		learn_seen = NULL;
	}
	if (learn_seen == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(LearnSeenKey);
		ctl.entrysize = sizeof(LearnSeen);
		ctl.hcxt = TopMemoryContext;
		learn_seen = hash_create("fpsketch learned update sets", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	seen = hash_search(learn_seen, &key, HASH_ENTER, &found);
	if (!found)
	{
		seen->count = 0;
		seen->published = false;
	}
	if (seen->published || ++seen->count < learn_threshold)
		return;
	seen->published = learn_publish(info->relid, &key.set);
}

/* ---- the learner (a background worker per database) ---- */

static int	learn_slot = -1;
static bool learn_slot_released = false;

static void
learn_worker_exit(int code, Datum arg)
{
	int			i;

	if (learn_slot < 0 || learn_slot_released)
		return;
	SpinLockAcquire(&learn_shared->mutex);

	/*
	 * An unexpected exit (shutdown, the database dropped) forgets this
	 * database's requests: the queue is small, and learning is a hint.
	 */
	for (i = 0; i < learn_shared->nentries;)
	{
		if (learn_shared->entries[i].dbid == MyDatabaseId ||
			learn_shared->entries[i].dbid == learn_shared->workers[learn_slot].dbid)
			learn_shared->entries[i] = learn_shared->entries[--learn_shared->nentries];
		else
			i++;
	}
	learn_shared->workers[learn_slot].dbid = InvalidOid;
	learn_shared->workers[learn_slot].pid = 0;
	SpinLockRelease(&learn_shared->mutex);
}

/*
 * Split a partition (group by attnum) by an update set: within each
 * group, the columns the set writes and those it does not part ways (in
 * group 0 the written ones leave; the identity and dropped columns stay).
 * True if anything moved.
 */
static bool
learn_refine(Relation rel, FpsRelInfo *info, uint8 *grp, const LearnSet *set)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	bool		changed = false;
	int			g;
	AttrNumber	a;

	for (g = 0; g < FPS_MAX_COLUMN_GROUPS; g++)
	{
		bool		has_in = false;
		bool		has_out = false;
		bool		used[FPS_MAX_COLUMN_GROUPS] = {false};
		int			newno;

		for (a = 1; a <= info->natts; a++)
		{
			used[grp[a]] = true;
			if (grp[a] != g || TupleDescAttr(tupdesc, a - 1)->attisdropped ||
				learn_is_identity(info, a))
				continue;
			if (a <= LEARN_MAX_ATTNUM && LEARN_HAS(set, a))
				has_in = true;
			else
				has_out = true;
		}
		if (!has_in || (g != 0 && !has_out))
			continue;
		for (newno = 1; newno < FPS_MAX_COLUMN_GROUPS && used[newno]; newno++)
			;
		if (newno >= FPS_MAX_COLUMN_GROUPS)
			continue;			/* out of groups: this one stays whole */
		for (a = 1; a <= info->natts; a++)
		{
			bool		in;

			if (grp[a] != g || TupleDescAttr(tupdesc, a - 1)->attisdropped ||
				learn_is_identity(info, a))
				continue;
			in = a <= LEARN_MAX_ATTNUM && LEARN_HAS(set, a);
			if (g == 0 ? in : !in)
				grp[a] = newno;
		}
		changed = true;
	}
	return changed;
}

/*
 * Regroup relid by sets, in the current transaction: ACCESS EXCLUSIVE lock
 * (an ERROR with ERRCODE_LOCK_NOT_AVAILABLE after the learner's lock
 * timeout), the learned rows replaced, relcache invalidation and the floor
 * raised at commit, as fpsketch_set_column_group does.
 */
static void
learn_regroup(Oid relid, LearnSet *sets, int nsets)
{
	Relation	rel;
	Relation	cfg;
	Oid			cfgoid;
	Oid			indexoid;
	FpsRelInfo *info;
	uint8	   *grp;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		changed = false;
	char		timeout[32];
	StringInfoData desc;
	int			g;
	int			i;

	if (!fps_learn_column_groups || !fps_column_groups_enabled)
		return;
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return;
	snprintf(timeout, sizeof(timeout), "%d", learn_lock_timeout_ms);
	SetConfigOption("lock_timeout", timeout, PGC_SUSET, PGC_S_SESSION);
	LockRelationOid(relid, AccessExclusiveLock);
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
		return;					/* dropped meanwhile */
	if (!fps_is_fpsketch_relation(rel) || rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
	{
		relation_close(rel, NoLock);
		return;
	}

	/*
	 * The lock has processed every invalidation: info is the mapping every
	 * transaction that used the table had, and that nobody uses now.
	 */
	info = fps_relinfo(rel);
	cfgoid = fps_column_group_table(rel);
	if (info->by_tid || info->groups_declared || !OidIsValid(cfgoid))
	{
		relation_close(rel, NoLock);
		return;
	}
	grp = palloc(info->natts + 1);
	memcpy(grp, info->attgroup, info->natts + 1);
	for (i = 0; i < nsets; i++)
		changed |= learn_refine(rel, info, grp, &sets[i]);
	if (!changed)
	{
		relation_close(rel, NoLock);
		return;
	}

	cfg = table_open(cfgoid, RowExclusiveLock);
	ScanKeyInit(&key, Anum_group_rel, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	indexoid = column_group_index(cfg);
	scan = systable_beginscan(cfg, indexoid, OidIsValid(indexoid), NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		if (!group_row_learned(tup, RelationGetDescr(cfg)))
		{
			/* declared since the relcache entry was built: cannot be */
			elog(ERROR, "fpsketch: relation %u has declared column groups", relid);
		}
		simple_heap_delete(cfg, &tup->t_self);
	}
	systable_endscan(scan);

	initStringInfo(&desc);
	for (g = 1; g < FPS_MAX_COLUMN_GROUPS; g++)
	{
		Datum		values[Natts_group];
		bool		isnull[Natts_group] = {false};
		Datum	   *elems = palloc(sizeof(Datum) * info->natts);
		Datum	   *names = palloc(sizeof(Datum) * info->natts);
		int			n = 0;
		AttrNumber	a;

		for (a = 1; a <= info->natts; a++)
			if (grp[a] == g)
			{
				elems[n] = Int16GetDatum(a);
				names[n] = DirectFunctionCall1(namein,
											   CStringGetDatum(get_attname(relid, a, false)));
				appendStringInfo(&desc, "%s%s%s", desc.len > 0 && n == 0 ? "; " : "",
								 n > 0 ? ", " : "", get_attname(relid, a, false));
				n++;
			}
		if (n == 0)
			continue;
		values[Anum_group_rel - 1] = ObjectIdGetDatum(relid);
		values[Anum_group_name - 1] =
			DirectFunctionCall1(namein, CStringGetDatum(psprintf("learned_%d", g)));
		values[Anum_group_number - 1] = Int16GetDatum(g);
		values[Anum_group_attnums - 1] =
			PointerGetDatum(construct_array(elems, n, INT2OID, 2, true, TYPALIGN_SHORT));
		values[Anum_group_columns - 1] =
			PointerGetDatum(construct_array(names, n, NAMEOID, NAMEDATALEN, false,
											TYPALIGN_CHAR));
		values[Anum_group_source - 1] = CStringGetTextDatum("learned");
		CatalogTupleInsert(cfg, heap_form_tuple(RelationGetDescr(cfg), values, isnull));
	}
	table_close(cfg, RowExclusiveLock);

	CommandCounterIncrement();
	column_groups_changed(rel);
	ereport(LOG,
			(errmsg("fpsketch: learned column groups of \"%s\": %s",
					RelationGetRelationName(rel), desc.data)));
	relation_close(rel, NoLock);
}

/*
 * One attempt at relid's requested sets in a transaction of its own.
 * True if the table was busy (lock timeout): try again later.
 */
static bool
learn_attempt(Oid relid, LearnSet *sets, int nsets, MemoryContext cxt)
{
	volatile bool busy = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "learning column groups");
	PG_TRY();
	{
		learn_regroup(relid, sets, nsets);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			busy = true;
		else
			ereport(LOG,
					(errmsg("fpsketch: could not learn the column groups of relation %u: %s",
							relid, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	MemoryContextSwitchTo(cxt);
	return busy;
}

void
fps_learn_worker_main(Datum arg)
{
	Oid			dbid = DatumGetObjectId(arg);
	MemoryContext cxt;
	int			i;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	SpinLockAcquire(&learn_shared->mutex);
	for (i = 0; i < LEARN_WORKERS; i++)
		if (learn_shared->workers[i].dbid == dbid && learn_shared->workers[i].pid == 0)
		{
			learn_shared->workers[i].pid = MyProcPid;
			learn_slot = i;
			break;
		}
	SpinLockRelease(&learn_shared->mutex);
	if (learn_slot < 0)
		proc_exit(0);			/* presumed lost, and replaced */
	before_shmem_exit(learn_worker_exit, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	cxt = AllocSetContextCreate(TopMemoryContext, "fpsketch learner",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	for (;;)
	{
		LearnSet	sets[LEARN_QUEUE];
		int			nsets = 0;
		int			attempts = 0;
		Oid			relid = InvalidOid;
		bool		mine = false;
		TimestampTz now;
		TimestampTz next = 0;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		MemoryContextReset(cxt);

		/* the first due request of this database, with its relation's others */
		now = GetCurrentTimestamp();
		SpinLockAcquire(&learn_shared->mutex);
		for (i = 0; i < learn_shared->nentries; i++)
		{
			LearnEntry *e = &learn_shared->entries[i];

			if (e->dbid != dbid)
				continue;
			mine = true;
			if (e->not_before <= now)
			{
				relid = e->relid;
				break;
			}
			if (next == 0 || e->not_before < next)
				next = e->not_before;
		}
		if (OidIsValid(relid))
		{
			/* in order: FIFO, and the queue is compacted in place */
			int			j = 0;

			for (i = 0; i < learn_shared->nentries; i++)
			{
				LearnEntry *e = &learn_shared->entries[i];

				if (e->dbid == dbid && e->relid == relid)
				{
					sets[nsets++] = e->set;
					attempts = Max(attempts, e->attempts);
				}
				else
					learn_shared->entries[j++] = *e;
			}
			learn_shared->nentries = j;
		}
		else if (!mine)
		{
			/* nothing left: a publisher from now on starts a new learner */
			learn_shared->workers[learn_slot].dbid = InvalidOid;
			learn_shared->workers[learn_slot].pid = 0;
			learn_slot_released = true;
		}
		SpinLockRelease(&learn_shared->mutex);

		if (learn_slot_released)
			break;
		if (!OidIsValid(relid))
		{
			/* at most a second: a new request need not wait for a retry */
			long		ms = Min((next - now) / 1000 + 1, 1000);

			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}

		if (learn_attempt(relid, sets, nsets, cxt))
		{
			/*
			 * Each attempt makes new users of the table wait up to the lock
			 * timeout: back off (up to 64 times the interval) while a long
			 * transaction keeps the table busy.
			 */
			TimestampTz retry = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															(int64) learn_retry_ms << Min(attempts, 6));

			elog(DEBUG1, "fpsketch: relation %u is busy, its column groups are learned at the next try in %d ms",
				 relid, (int) ((retry - GetCurrentTimestamp()) / 1000));
			SpinLockAcquire(&learn_shared->mutex);
			for (i = 0; i < nsets && learn_shared->nentries < LEARN_QUEUE; i++)
			{
				LearnEntry *e = &learn_shared->entries[learn_shared->nentries++];

				e->dbid = dbid;
				e->relid = relid;
				e->set = sets[i];
				e->not_before = retry;
				e->attempts = attempts + 1;
			}
			SpinLockRelease(&learn_shared->mutex);
		}
	}
	proc_exit(0);
}
