/*-------------------------------------------------------------------------
 *
 * membership.c
 *	  Which tables a scan of an inheritance or partitioned parent reaches.
 *
 * A scan through a parent reads the rows of its members, and which tables
 * are members is itself something the scan read.  PostgreSQL adds members
 * under locks a reader does not conflict with: ATTACH PARTITION and
 * ALTER TABLE ... INHERIT take SHARE UPDATE EXCLUSIVE on the parent (since
 * PostgreSQL 12 for ATTACH), and so does CREATE TABLE ... INHERITS.  No key
 * of the rows the reader read changes, so nothing orders the reader before
 * the transaction that added rows to its result (helper-21's cycle: R
 * counts p, W reads x and attaches a filled partition to p, R writes x).
 *
 * So a statement that adds an fpsketch table (or one with fpsketch tables
 * below it) to a parent takes ACCESS EXCLUSIVE on the parent first, as
 * CREATE TABLE ... PARTITION OF and DETACH PARTITION already do, and its
 * transaction commits at the floor.  Readers keep their lock of the parent
 * to their end (fps_txn_keep_lock), so the change waits for every
 * transaction that planned a scan of the parent, every later plan sees it,
 * and its commit timestamp is above theirs: what it read that they wrote
 * then fails its validation.  DETACH PARTITION CONCURRENTLY, which cannot
 * run in a transaction block, keeps its weaker lock.
 *
 * A read at a timestamp (am/visibility.c) also sees the members of now,
 * not those of ts: a parent whose members changed since the transaction's
 * first snapshot fails it with 40001, as new storage does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_policy.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_trigger.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "am.h"
#include "../fpsketch_am.h"

/* Is relid an fpsketch table, or a parent with one among its members? */
bool
fps_membership_has_fpsketch(Oid relid)
{
	List	   *members;
	ListCell   *lc;
	bool		found = false;

	/* relid itself comes first; no lock: the statement takes its own */
	members = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, members)
		if (fps_relam_is_fpsketch(lfirst_oid(lc)))
		{
			found = true;
			break;
		}
	list_free(members);
	return found;
}

/*
 * The tables related to relid through pg_inherits at any distance, nearest
 * first: its ancestors (up) or its members (down), as snapshot shows them
 * (NULL: the catalog snapshot).
 */
static List *
walk_inherits(Oid relid, bool up, Snapshot snapshot)
{
	Relation	inherits = table_open(InheritsRelationId, AccessShareLock);
	List	   *found = NIL;
	List	   *todo = list_make1_oid(relid);

	while (todo != NIL)
	{
		Oid			next = linitial_oid(todo);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		todo = list_delete_first(todo);
		ScanKeyInit(&key, up ? Anum_pg_inherits_inhrelid : Anum_pg_inherits_inhparent,
					BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(next));
		scan = systable_beginscan(inherits,
								  up ? InheritsRelidSeqnoIndexId : InheritsParentIndexId,
								  true, snapshot, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_inherits form = (Form_pg_inherits) GETSTRUCT(tup);
			Oid			other = up ? form->inhparent : form->inhrelid;

			/* multiple inheritance: a table may be reached twice */
			if (list_member_oid(found, other))
				continue;
			found = lappend_oid(found, other);
			todo = lappend_oid(todo, other);
		}
		systable_endscan(scan);
	}
	table_close(inherits, AccessShareLock);
	return found;
}


/*
 * Before the parent named rv gains member (InvalidOid: a table the
 * statement creates, fpsketch if new_is_fpsketch): ACCESS EXCLUSIVE on the
 * parent and on every ancestor of it, roots first, as readers lock them.
 * A reader of an ancestor need not hold the parent itself: it may have been
 * attached, empty, after the reader planned (helper-24: ATTACH an empty
 * heap h to p, then ATTACH a filled fpsketch c to h).
 *
 * Only by the parent's owner, whom the statement requires anyway: nobody
 * else may queue a lock that blocks the readers.  Returns the parent, or
 * InvalidOid when nothing was locked.
 */
static Oid
lock_parent_for_new_member(RangeVar *rv, Oid member, bool new_is_fpsketch)
{
	Oid			parent = RangeVarGetRelid(rv, NoLock, true);
	List	   *ancestors;

	if (!OidIsValid(parent) || !pg_class_ownercheck(parent, GetUserId()))
		return InvalidOid;

	/*
	 * The parent's own tree counts too: an empty member can be given
	 * fpsketch partitions, or SET ACCESS METHOD fpsketch, later in the same
	 * transaction (helper-23).
	 */
	if (!(OidIsValid(member) ? fps_membership_has_fpsketch(member) : new_is_fpsketch) &&
		!fps_membership_has_fpsketch(parent))
		return InvalidOid;
	ancestors = walk_inherits(parent, true, NULL);
	ancestors = lcons_oid(parent, ancestors);
	for (int i = list_length(ancestors) - 1; i >= 0; i--)
		LockRelationOid(list_nth_oid(ancestors, i), AccessExclusiveLock);
	list_free(ancestors);
	return parent;
}

/* Would CREATE TABLE stmt make an fpsketch table? */
static bool
creates_fpsketch_table(CreateStmt *stmt)
{
	const char *am = stmt->accessMethod;

	if (stmt->partspec != NULL)
		return false;			/* partitioned: no storage, no rows */
	if (am == NULL)
		am = default_table_access_method;
	return am != NULL && strcmp(am, "fpsketch") == 0;
}

/*
 * Called by the utility hook before the statement runs (fpsketch.c).
 * Returns whether a parent was locked, and in *parent the one (InvalidOid:
 * several): the transaction then commits at the floor (fpsketch.c).  The
 * lock alone orders the change after the parent's readers in real time;
 * its commit timestamp must follow theirs too, and an ordinary commit of
 * a transaction that wrote no key could take an earlier one.
 */
bool
fps_membership_lock_parents(Node *stmt, Oid *parent)
{
	ListCell   *lc;
	int			nlocked = 0;

	*parent = InvalidOid;
	if (IsA(stmt, AlterTableStmt))
	{
		AlterTableStmt *ats = (AlterTableStmt *) stmt;

		foreach(lc, ats->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);
			Oid			locked = InvalidOid;

			if (!IsA(cmd, AlterTableCmd))
				continue;
			if (cmd->subtype == AT_AttachPartition &&
				ats->objtype == OBJECT_TABLE)
			{
				PartitionCmd *pc = (PartitionCmd *) cmd->def;
				Oid			member = RangeVarGetRelid(pc->name, NoLock, true);

				if (OidIsValid(member))
					locked = lock_parent_for_new_member(ats->relation, member, false);
			}
			else if (cmd->subtype == AT_AddInherit)
			{
				Oid			member = RangeVarGetRelid(ats->relation, NoLock, true);

				if (OidIsValid(member))
					locked = lock_parent_for_new_member((RangeVar *) cmd->def, member, false);
			}
			if (OidIsValid(locked) && nlocked++ == 0)
				*parent = locked;
		}
	}
	else if (IsA(stmt, CreateStmt))
	{
		CreateStmt *cs = (CreateStmt *) stmt;
		bool		fpsketch_child;

		if (cs->inhRelations == NIL)
			return false;

		/*
		 * A heap child may yet SET ACCESS METHOD fpsketch: the parent's tree
		 * counts.  PARTITION OF takes ACCESS EXCLUSIVE on the parent itself,
		 * but not on its ancestors, nor does it commit at the floor.
		 */
		fpsketch_child = creates_fpsketch_table(cs);
		foreach(lc, cs->inhRelations)
		{
			Oid			locked = lock_parent_for_new_member((RangeVar *) lfirst(lc),
															InvalidOid,
															fpsketch_child);

			if (OidIsValid(locked) && nlocked++ == 0)
				*parent = locked;
		}
	}
	if (nlocked > 1)
		*parent = InvalidOid;
	return nlocked > 0;
}

/* Every member of parent at any depth that snapshot shows, sorted. */
static List *
members_in(Oid parent, Snapshot snapshot)
{
	List	   *members = walk_inherits(parent, false, snapshot);

	list_sort(members, list_oid_cmp);
	return members;
}

/*
 * The tables this top-level transaction scanned (by MyProc->lxid): whether
 * their lock is kept to the transaction's end, and whether a read at ts
 * checked their members.  Past the array's end a table is only looked at
 * again.
 */
#define FPS_TABLES_SEEN 32
typedef struct TableSeen
{
	Oid			relid;
	bool		lock_kept;
	bool		ts_checked;
	int8		is_fpsketch;	/* -1: not looked up yet */
} TableSeen;

static TableSeen tables_seen[FPS_TABLES_SEEN];
static int	ntables_seen = 0;
static LocalTransactionId tables_seen_lxid = InvalidLocalTransactionId;
static TableSeen table_unrecorded;

static TableSeen *
table_seen(Oid relid)
{
	TableSeen  *t;

	if (tables_seen_lxid != MyProc->lxid)
	{
		tables_seen_lxid = MyProc->lxid;
		ntables_seen = 0;
	}
	for (int i = 0; i < ntables_seen; i++)
		if (tables_seen[i].relid == relid)
			return &tables_seen[i];
	t = ntables_seen < FPS_TABLES_SEEN ?
		&tables_seen[ntables_seen++] : &table_unrecorded;
	t->relid = relid;
	t->lock_kept = false;
	t->ts_checked = false;
	t->is_fpsketch = -1;
	return t;
}

/*
 * Has relid the members (at any depth) it had at the transaction's ts
 * snapshot, apart from the transaction's own changes?  An MVTO transaction
 * that attached a partition reads through the parent at its ts (every MVTO
 * transaction does), and must not fail on its own ATTACH at every retry:
 * the ts snapshot is looked through with the current command id, as the
 * transaction sees its own changes, for the scan's length.
 */
static bool
members_unchanged_since_ts(Oid relid)
{
	Snapshot	ts_snapshot = fps_txn.ts_snapshot;
	CommandId	saved = ts_snapshot->curcid;
	List	   *then;
	List	   *now;
	bool		same;

	ts_snapshot->curcid = GetCurrentCommandId(false);
	PG_TRY();
	{
		then = members_in(relid, ts_snapshot);
	}
	PG_FINALLY();
	{
		ts_snapshot->curcid = saved;
	}
	PG_END_TRY();
	now = members_in(relid, NULL);
	same = equal(then, now);
	list_free(then);
	list_free(now);
	return same;
}

/*
 * Could a scan of this range-table entry reach members?  Not a plain table
 * that is a partition (it cannot have any).  The plan's inh flag does not
 * tell: the planner clears it for a table whose relhassubclass is unset,
 * which ANALYZE does once the last member is gone (helper-25), and a table
 * without members may gain some.  An entry read with ONLY is taken along.
 */
static bool
may_have_members(RangeTblEntry *rte)
{
	if (rte->inh || rte->relkind == RELKIND_PARTITIONED_TABLE ||
		rte->relkind == RELKIND_FOREIGN_TABLE)
		return true;
	return rte->relkind == RELKIND_RELATION && !get_rel_relispartition(rte->relid);
}

/*
 * Does the statement read or write an fpsketch table?  Each table looked up
 * once a transaction: every statement of a PL/pgSQL EXCEPTION block asks.
 */
static bool
reads_fpsketch(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		TableSeen  *t;

		if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION)
			continue;
		t = table_seen(rte->relid);
		if (t->is_fpsketch < 0)
			t->is_fpsketch = fps_relam_is_fpsketch(rte->relid) ? 1 : 0;
		if (t->is_fpsketch)
			return true;
	}
	return false;
}

/*
 * A statement about to run (fpsketch.c, ExecutorStart) scans the tables of
 * its range table.
 *
 * A table's ACCESS SHARE lock is what makes a new member of it wait for
 * this transaction (lock_parent_for_new_member), so in a subtransaction it
 * is kept to the end of the top-level transaction, as the fpsketch tables'
 * own locks are (fps_txn_keep_lock): a ROLLBACK TO would otherwise release
 * it (helper-23).  Every table's, heap ones too, whatever its members are
 * now: any may gain an fpsketch member later (helpers 24 and 25), and the
 * middle levels of plain inheritance are plain entries of the plan.  Only
 * in a transaction that uses fpsketch tables, or a statement that does: a
 * heap-only transaction keeps PostgreSQL's behaviour, and its reads are
 * not ordered anyway.
 *
 * A transaction that reads at a timestamp must find every table it scans
 * with the members (at any depth) it had at the transaction's first
 * snapshot; the kept lock keeps them so afterwards.
 */
void
fps_membership_statement_start(PlannedStmt *stmt)
{
	bool		nested = GetCurrentTransactionNestLevel() > 1;
	bool		at_ts = fps_txn.mode_decided && fps_txn.ts_mode &&
		fps_txn.ts_snapshot != NULL;
	bool		catalog_may_be_newer;
	bool		keep_locks;
	ListCell   *lc;

	/*
	 * A change of members commits, becomes visible, and then sends relcache
	 * invalidations; one committed after the transaction's ts was drawn (at
	 * its first read, in this transaction) reaches this backend's plans
	 * only through them.  Without any since the end of the last
	 * transaction, the members are those of ts, and the catalog scans of
	 * members_in(), two per level of the tree, are spared (helper-24: a
	 * READ ONLY point select through 200 partitions ran at a quarter of its
	 * speed).  The statements before the first read need no check at all,
	 * whatever snapshot they read on (REPEATABLE READ's, taken before the
	 * first statement's locks, or an imported one): the ts is drawn after
	 * their locks, so after any change their plans show
	 * (specs/membership-first-statement, t/019_membership_snapshots.pl).
	 */
	catalog_may_be_newer = at_ts &&
		fps_relcache_invalidations != fps_txn.ts_relcache_invalidations;
	if (!nested && !catalog_may_be_newer)
		return;
	keep_locks = nested && (fps_txn.active || reads_fpsketch(stmt));
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		TableSeen  *t;

		if (rte->rtekind != RTE_RELATION)
			continue;
		t = table_seen(rte->relid);
		if (nested && !t->lock_kept && keep_locks)
		{
			fps_txn_keep_relation_lock(rte->relid, AccessShareLock);
			t->lock_kept = true;
		}
		if (catalog_may_be_newer && !t->ts_checked)
		{
			if (may_have_members(rte) && !members_unchanged_since_ts(rte->relid))
				fps_abort_members_changed(rte->relid);
			t->ts_checked = true;
		}
	}
}

/*
 * Dropping an fpsketch table takes its rows out of every read that saw
 * them, and out of its parents' scans: like the other changes of what a
 * scan reaches, its transaction commits at the floor, after the readers
 * its ACCESS EXCLUSIVE lock waited for (helper-23: R counts t, W reads x
 * and drops t, R inserts x; W had taken a timestamp below R's).  Every
 * dropped relation passes here, those a CASCADE or DROP SCHEMA takes along
 * included; temporary ones are untracked.
 *
 * A DROP also changes the fpsketch tables that stay when it takes a part of
 * them along: a column (DROP TYPE or DROP TABLE of a row type, CASCADE),
 * an index, a constraint (a foreign key to a dropped table), a policy, a
 * rule, a trigger or a default (DROP FUNCTION or DROP TABLE of what they
 * use, CASCADE).  Their key
 * scheme, or what their writes may do, changes without a write of theirs,
 * so the floor of every key rises, as for DROP of a table (helper-28: with
 * only the dropped table's keys raised, DROP TABLE x CASCADE removed c's
 * primary-key column, or its foreign key to x, and a transaction that then
 * used c was ordered before the DROP).
 */
static object_access_hook_type prev_object_access_hook = NULL;

/*
 * Catalogs of the parts of a table that a DROP may take along, and the
 * column naming the table.
 */
static const struct
{
	Oid			catalog;
	Oid			oid_index;
	AttrNumber	oid_attnum;
	AttrNumber	relid_attnum;
}			table_parts[] = {
	{PolicyRelationId, PolicyOidIndexId, Anum_pg_policy_oid, Anum_pg_policy_polrelid},
	{RewriteRelationId, RewriteOidIndexId, Anum_pg_rewrite_oid, Anum_pg_rewrite_ev_class},
	{TriggerRelationId, TriggerOidIndexId, Anum_pg_trigger_oid, Anum_pg_trigger_tgrelid},
	{AttrDefaultRelationId, AttrDefaultOidIndexId, Anum_pg_attrdef_oid, Anum_pg_attrdef_adrelid},
};

/* The table that part i of table_parts (its row objectId) belongs to. */
static Oid
owning_table(int i, Oid objectId)
{
	Relation	catalog = table_open(table_parts[i].catalog, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			relid = InvalidOid;

	ScanKeyInit(&key, table_parts[i].oid_attnum, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(objectId));
	scan = systable_beginscan(catalog, table_parts[i].oid_index, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, table_parts[i].relid_attnum,
									 RelationGetDescr(catalog), &isnull);

		if (!isnull)
			relid = DatumGetObjectId(d);
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
	return relid;
}

/* The table that the dropped object is (a part of), or InvalidOid. */
static Oid
dropped_table(Oid classId, Oid objectId, int subId)
{
	if (classId == RelationRelationId)
	{
		char		relkind = get_rel_relkind(objectId);

		if (subId == 0 &&
			(relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX))
			return IndexGetRelation(objectId, true);
		return objectId;
	}
	if (classId == ConstraintRelationId)
	{
		HeapTuple	tup = SearchSysCache1(CONSTROID, ObjectIdGetDatum(objectId));
		Oid			conrelid = InvalidOid;

		if (HeapTupleIsValid(tup))
		{
			conrelid = ((Form_pg_constraint) GETSTRUCT(tup))->conrelid;
			ReleaseSysCache(tup);
		}
		return conrelid;
	}
	/* what its readers see, or what its writes do */
	for (int i = 0; i < lengthof(table_parts); i++)
		if (classId == table_parts[i].catalog)
			return owning_table(i, objectId);
	return InvalidOid;
}

static void
note_dropped_relation(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	Oid			table;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || !IsTransactionState())
		return;
	table = dropped_table(classId, objectId, subId);
	if (OidIsValid(table) && fps_relam_is_fpsketch(table) &&
		get_rel_persistence(table) != RELPERSISTENCE_TEMP)
		fps_txn_note_untracked_write_everywhere(table);
}

void
fps_membership_register_hooks(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = note_dropped_relation;
}
