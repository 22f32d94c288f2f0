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
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
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
 * The parents this top-level transaction scanned through (by MyProc->lxid):
 * whether their lock is kept to the transaction's end, and whether a read
 * at ts checked their members.  Past the array's end a parent is only
 * looked at again.
 */
#define FPS_PARENTS_SEEN 32
typedef struct ParentSeen
{
	Oid			relid;
	bool		is_parent;		/* partitioned, or has inheritance children */
	bool		lock_kept;
	bool		ts_checked;
} ParentSeen;

static ParentSeen parents_seen[FPS_PARENTS_SEEN];
static int	nparents_seen = 0;
static LocalTransactionId parents_seen_lxid = InvalidLocalTransactionId;
static ParentSeen parent_unrecorded;

static ParentSeen *
parent_seen(RangeTblEntry *rte)
{
	ParentSeen *p;

	if (parents_seen_lxid != MyProc->lxid)
	{
		parents_seen_lxid = MyProc->lxid;
		nparents_seen = 0;
	}
	for (int i = 0; i < nparents_seen; i++)
		if (parents_seen[i].relid == rte->relid)
			return &parents_seen[i];
	p = nparents_seen < FPS_PARENTS_SEEN ?
		&parents_seen[nparents_seen++] : &parent_unrecorded;
	p->relid = rte->relid;

	/*
	 * Plain inheritance flattens the parents between the one named and the
	 * leaves into the range table as non-parents (helper-24): those count
	 * by their catalog flag.
	 */
	p->is_parent = rte->inh || rte->relkind == RELKIND_PARTITIONED_TABLE ||
		has_subclass(rte->relid);
	p->lock_kept = false;
	p->ts_checked = false;
	return p;
}

/*
 * A statement about to run (fpsketch.c, ExecutorStart) scans through the
 * parents in its range table.
 *
 * Their ACCESS SHARE lock is what makes a new member wait for this
 * transaction (lock_parent_for_new_member), so it is kept to the end of
 * the top-level transaction, as the fpsketch tables' own locks are
 * (fps_txn_keep_lock): a ROLLBACK TO would otherwise release it
 * (helper-23).  Whatever the parent's members are now: an fpsketch member
 * may be attached later (helper-24).
 *
 * A transaction that reads at a timestamp must find every parent with the
 * members (at any depth) it had at the transaction's first snapshot; the
 * kept lock keeps them so afterwards.
 */
void
fps_membership_statement_start(PlannedStmt *stmt)
{
	bool		nested = GetCurrentTransactionNestLevel() > 1;
	bool		at_ts = fps_txn.mode_decided && fps_txn.ts_mode &&
		fps_txn.ts_snapshot != NULL;
	bool		catalog_may_be_newer;
	ListCell   *lc;

	if (!nested && !at_ts)
		return;

	/*
	 * A change of members commits, becomes visible, and then sends relcache
	 * invalidations; one made after the ts snapshot reaches this backend's
	 * plans only through them.  Without any since the end of the last
	 * transaction (before the snapshot), the members are those of ts, and
	 * the catalog scans of members_in(), two per level of the tree, are
	 * spared (helper-24: a READ ONLY point select through 200 partitions
	 * ran at a quarter of its speed).
	 */
	catalog_may_be_newer = at_ts &&
		fps_relcache_invalidations != fps_txn.ts_relcache_invalidations;
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		ParentSeen *p;

		if (rte->rtekind != RTE_RELATION)
			continue;
		if (!rte->inh && !nested)
			continue;
		p = parent_seen(rte);
		if (!p->is_parent)
			continue;
		if (!p->lock_kept && nested)
		{
			fps_txn_keep_relation_lock(rte->relid, AccessShareLock);
			p->lock_kept = true;
		}
		if (at_ts && rte->inh && !p->ts_checked)
		{
			if (catalog_may_be_newer)
			{
				List	   *then = members_in(rte->relid, fps_txn.ts_snapshot);
				List	   *now = members_in(rte->relid, NULL);
				bool		same = equal(then, now);

				list_free(then);
				list_free(now);
				if (!same)
					fps_abort_members_changed(rte->relid);
			}
			p->ts_checked = true;
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
 */
static object_access_hook_type prev_object_access_hook = NULL;

static void
note_dropped_relation(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		IsTransactionState() && fps_relam_is_fpsketch(objectId) &&
		get_rel_persistence(objectId) != RELPERSISTENCE_TEMP)
		fps_txn_note_untracked_write(objectId);
}

void
fps_membership_register_hooks(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = note_dropped_relation;
}
