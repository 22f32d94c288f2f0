/*-------------------------------------------------------------------------
 *
 * fpsketch_am.h
 *	  The fpsketch table access method (fpsketch_am.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FPSKETCH_AM_H
#define FPSKETCH_AM_H

#include "access/tableam.h"
#include "utils/relcache.h"

/* am/gap.c: walks at PRE_COMMIT, before the protocol's callback */
extern void fps_gap_register_callbacks(void);
extern Size fps_gap_levels_shmem_size(void);
extern void fps_gap_levels_shmem_init(void);
extern const TableAmRoutine *fps_table_am_routine(void);
extern bool fps_is_fpsketch_relation(Relation rel);
extern bool fps_relam_is_fpsketch(Oid relid);
/* am/track.c: a write past per-key tracking, for the commit_ts map */
extern void fps_note_untracked_write_of(Relation rel);

/* am/membership.c: the members a scan of a parent reaches */
struct PlannedStmt;
extern bool fps_membership_lock_parents(Node *stmt, Oid *parent);
extern bool fps_membership_has_fpsketch(Oid relid);
extern void fps_membership_statement_start(struct PlannedStmt *stmt);
extern void fps_membership_register_hooks(void);

struct QueryDesc;
extern void fps_executor_running(struct QueryDesc *queryDesc, bool starting);
extern void fps_executor_starting(struct QueryDesc *queryDesc, bool starting);
extern void fps_note_statement_start(struct QueryDesc *queryDesc);
extern void fps_note_utility_statement(void);
extern void fps_enter_utility_or_planner(bool utility, bool entering);
extern bool fps_executor_nested(void);

#endif							/* FPSKETCH_AM_H */
