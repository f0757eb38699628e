/*
 * replace_running.c
 *		Rule 10's view of the statements running in this backend: a stack
 *		of the INSERT and UPDATE statements being executed (ExecutorStart /
 *		ExecutorEnd steps of ttl.c's hooks), with their ON CONFLICT clause,
 *		so that rule 10's errors are not raised for a conflict ON CONFLICT
 *		handles, and DO UPDATE never merges into an expired item.
 *
 * Locking: none; backend-local memory (TopMemoryContext), popped at
 * ExecutorEnd and at the abort of the (sub)transaction that pushed it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/partition.h"
#include "executor/executor.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "base/compat.h"
#include "stamp/replace.h"
#include "stamp/replace_running.h"

/* ---- ON CONFLICT of the statement running now (for the guard's error) ---- */

/*
 * A stack of the INSERT and UPDATE statements being executed, innermost on
 * top: the one whose row the trigger stamps is the top.  Each entry says
 * whether it has an ON CONFLICT clause and which indexes it names.
 * Entries are popped at ExecutorEnd, and at the abort of the
 * (sub)transaction that pushed them.  COPY runs no ExecutorStart and has
 * no ON CONFLICT.
 */
typedef struct RunningWrite
{
	struct RunningWrite *next;
	QueryDesc  *query;
	int			nest_level;
	bool		on_conflict;
	bool		do_update;		/* ON CONFLICT DO UPDATE (not DO NOTHING) */
	Oid			target;			/* the ON CONFLICT statement's table */
	List	   *arbiters;		/* its arbiter indexes; NIL: all */
} RunningWrite;

static RunningWrite *running = NULL;

static void
pop_running(RunningWrite *upto)
{
	while (running != NULL)
	{
		RunningWrite *top = running;

		running = top->next;
		list_free(top->arbiters);
		pfree(top);
		if (top == upto)
			break;
	}
}

/* ExecutorStart_hook's step (ttl.c), after the executor has started. */
void
ttl_replace_executor_started(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (stmt != NULL && (stmt->commandType == CMD_INSERT || stmt->commandType == CMD_UPDATE ||
						 stmt->hasModifyingCTE) &&
		!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
	{
		RunningWrite *w = MemoryContextAllocZero(TopMemoryContext, sizeof(RunningWrite));
		Plan	   *plan = stmt->planTree;

		w->query = queryDesc;
		w->nest_level = GetCurrentTransactionNestLevel();
		if (plan != NULL && IsA(plan, ModifyTable) &&
			((ModifyTable *) plan)->onConflictAction != ONCONFLICT_NONE)
		{
			ModifyTable *mt = (ModifyTable *) plan;
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			w->on_conflict = true;
			w->do_update = mt->onConflictAction == ONCONFLICT_UPDATE;
			w->target = rt_fetch(mt->nominalRelation, stmt->rtable)->relid;
			w->arbiters = list_copy(mt->arbiterIndexes);
			MemoryContextSwitchTo(old);
		}
		w->next = running;
		running = w;
	}
}

/* ExecutorEnd_hook's step (ttl.c), before the executor ends. */
void
ttl_replace_executor_ending(QueryDesc *queryDesc)
{
	RunningWrite *w;

	for (w = running; w != NULL; w = w->next)
	{
		if (w->query == queryDesc)
		{
			pop_running(w);
			break;
		}
	}
}

/*
 * Whether the running statement's ON CONFLICT clause covers a conflict in
 * index (of leaf, a partition of container or container itself): then the
 * conflict is no error, and the guard's hold must not make it one.
 * *do_update: the clause is DO UPDATE, which would merge into the holder.
 */
bool
ttl_running_covers(Oid container, Oid leaf, Oid index, bool *do_update)
{
	ListCell   *lc;
	List	   *ancestors;

	*do_update = false;
	if (running == NULL || !running->on_conflict ||
		(running->target != container && running->target != leaf))
		return false;
	*do_update = running->do_update;
	if (running->arbiters == NIL || list_member_oid(running->arbiters, index))
		return true;
	/* a partition's index: the arbiters name the partitioned table's */
	ancestors = get_rel_relispartition(index) ? get_partition_ancestors(index) : NIL;
	foreach(lc, ancestors)
	{
		if (list_member_oid(running->arbiters, lfirst_oid(lc)))
			return true;
	}
	return false;
}

/* Forget every statement (the transaction's end). */
void
ttl_running_pop_all(void)
{
	pop_running(NULL);
}

/* Forget the statements of the subtransaction level aborted, and deeper. */
void
ttl_running_pop_level(int level)
{
	while (running != NULL && running->nest_level >= level)
		pop_running(running);
}
