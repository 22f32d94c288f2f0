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
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "am.h"
#include "../fpsketch_am.h"

/* Is relid an fpsketch table, or a parent with one among its members? */
static bool
brings_fpsketch_rows(Oid relid)
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
 * Before the parent named rv gains member (InvalidOid: a table the
 * statement creates, fpsketch if new_is_fpsketch): ACCESS EXCLUSIVE on the
 * parent.  Only by its owner, whom the statement requires anyway: nobody
 * else may queue a lock that blocks the parent's readers.
 */
static Oid
lock_parent_for_new_member(RangeVar *rv, Oid member, bool new_is_fpsketch)
{
	Oid			parent = RangeVarGetRelid(rv, NoLock, true);

	if (!OidIsValid(parent) || !pg_class_ownercheck(parent, GetUserId()))
		return InvalidOid;
	if (OidIsValid(member) ? !brings_fpsketch_rows(member) : !new_is_fpsketch)
		return InvalidOid;
	LockRelationOid(parent, AccessExclusiveLock);
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

		/* PARTITION OF takes ACCESS EXCLUSIVE on the parent itself */
		if (cs->partbound != NULL || cs->inhRelations == NIL ||
			!creates_fpsketch_table(cs))
			return false;
		foreach(lc, cs->inhRelations)
		{
			Oid			locked = lock_parent_for_new_member((RangeVar *) lfirst(lc),
															InvalidOid, true);

			if (OidIsValid(locked) && nlocked++ == 0)
				*parent = locked;
		}
	}
	if (nlocked > 1)
		*parent = InvalidOid;
	return nlocked > 0;
}

/* The members of parent that snapshot shows, sorted. */
static List *
members_in(Oid parent, Snapshot snapshot)
{
	Relation	inherits = table_open(InheritsRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *members = NIL;

	ScanKeyInit(&key, Anum_pg_inherits_inhparent, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(parent));
	scan = systable_beginscan(inherits, InheritsParentIndexId, true,
							  snapshot, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		members = lappend_oid(members,
							  ((Form_pg_inherits) GETSTRUCT(tup))->inhrelid);
	systable_endscan(scan);
	table_close(inherits, AccessShareLock);
	list_sort(members, list_oid_cmp);
	return members;
}

/*
 * Parents checked in this transaction (by its ts generation); past the
 * array's end a parent is only checked again.
 */
#define FPS_MEMBERS_CHECKED 32
static Oid	members_checked[FPS_MEMBERS_CHECKED];
static int	nmembers_checked = 0;
static uint32 members_checked_generation = 0;

static bool
members_checked_already(Oid parent)
{
	if (members_checked_generation != fps_txn.ts_generation)
	{
		members_checked_generation = fps_txn.ts_generation;
		nmembers_checked = 0;
	}
	for (int i = 0; i < nmembers_checked; i++)
		if (members_checked[i] == parent)
			return true;
	return false;
}

/*
 * A statement about to run in a transaction that reads at a timestamp:
 * every parent it scans through must have the members it had at the
 * transaction's first snapshot.
 */
void
fps_membership_check_ts(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (!fps_txn.mode_decided || !fps_txn.ts_mode || fps_txn.ts_snapshot == NULL)
		return;
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		List	   *then;
		List	   *now;
		bool		same;

		if (rte->rtekind != RTE_RELATION || !rte->inh)
			continue;
		if (rte->relkind != RELKIND_PARTITIONED_TABLE &&
			rte->relkind != RELKIND_RELATION)
			continue;
		if (members_checked_already(rte->relid))
			continue;
		then = members_in(rte->relid, fps_txn.ts_snapshot);
		now = members_in(rte->relid, NULL);
		same = equal(then, now);
		list_free(then);
		list_free(now);
		if (!same)
			fps_abort_members_changed(rte->relid);
		if (nmembers_checked < FPS_MEMBERS_CHECKED)
			members_checked[nmembers_checked++] = rte->relid;
	}
}
