/*-------------------------------------------------------------------------
 *
 * reevaluate.c
 *	  When READ COMMITTED's re-evaluation of a concurrently updated row
 *	  (EvalPlanQual) is serializable.
 *
 * Shared state: entry words, loaded only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/execdesc.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/rel.h"

#include "am.h"

/*
 * May the innermost statement re-evaluate itself on the newest version of
 * a row of rel (EvalPlanQual) instead of failing?  EvalPlanQual recomputes
 * the statement's result for that row from the new version, but with the
 * rows of every other relation of the statement as they were first found:
 * a join partner that the new version would have found instead is never
 * read, so joins (which give the other relations row marks) are refused.
 * Within one relation, the new version replaces the old in the read set
 * when the old was the transaction's only read of the row
 * (fps_txn_replace_read), and a column group the concurrent writer did not
 * write (its wts unchanged) keeps its observation: the new version carries
 * the same values there.  TicToc only: STO decides at read time.
 */
bool
fps_reevaluation_is_safe(Relation rel, FpsRelInfo *info, TupleTableSlot *newest)
{
	QueryDesc  *qd;
	ListCell   *lc;
	fps_u64		key;
	int			g;

	if (!fps_reevaluate_updates || fps_protocol != FPS_PROTOCOL_TICTOC ||
		IsolationUsesXactSnapshot())
		return false;
	qd = fps_running_query(0);
	if (qd == NULL || qd->plannedstmt == NULL)
		return false;
	foreach(lc, qd->plannedstmt->rowMarks)
	{
		PlanRowMark *rc = (PlanRowMark *) lfirst(lc);
		RangeTblEntry *rte = rt_fetch(rc->rti, qd->plannedstmt->rtable);

		if (rc->markType == ROW_MARK_REFERENCE || rc->markType == ROW_MARK_COPY ||
			rte->rtekind != RTE_RELATION || rte->relid != RelationGetRelid(rel))
			return false;
	}
	key = fps_key_from_slot(rel, info, newest);
	for (g = 0; g < info->ngroups; g++)
	{
		FpsAccess  *access = fps_txn_lookup(fps_group_key(key, g));
		fps_u64		word;

		if (access == NULL || !access->is_read)
			continue;
		word = fps_entry_load(access->entry);
		if (!fps_word_locked(word) &&
			fps_word_wts(word) == fps_word_wts(access->observed))
			continue;
		if (!fps_txn_replace_read(access, fps_current_statement()))
			return false;
	}
	return true;
}
