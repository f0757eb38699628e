/*
 * replace.c
 *		Rule 10: an expired item is gone for writes too.  Called by the
 *		stamp trigger (stamp.c) for every row it stamps: when the new row's
 *		key in a unique index of the table (primary key, unique constraint,
 *		expression, partial, NULLS NOT DISTINCT, DEFERRABLE) is held by an
 *		item that is expired (rules 5 and 9, at ttl.now()), that item is
 *		deleted first, as a purge delete (purge_replace.c), so the unique
 *		check and ON CONFLICT, which look with a dirty snapshot and do not
 *		see a row deleted by the current transaction, find no conflict: the
 *		write takes effect (ON CONFLICT DO UPDATE takes its INSERT path).
 *		A BEFORE ROW trigger runs before those checks, which is why this is
 *		here.  Exclusion constraints are not looked at (they conflict as
 *		before).  The key is that of the row as it will be stored: stored
 *		generated columns are computed on the probe's copy of the row
 *		first (the executor computes them only after the BEFORE triggers),
 *		and no BEFORE ROW trigger may fire after this one (ddl/ddl_triggers.c
 *		refuses one), so nothing changes the row after it is judged.
 *
 * The probe is core's (check_exclusion_or_unique_constraint in
 * execIndexing.c): the new row's key (FormIndexDatum; a partial index's
 * predicate first) looked up in the index with a dirty snapshot.  A holder
 * whose inserting or deleting transaction is in progress is waited for,
 * then looked up again; so is a speculative insertion.  A holder that is
 * not expired is left to the unique check (23505, ON CONFLICT), as before.
 * An UPDATE never looks at its own old row.
 *
 * Cost: a probe is one more descent of each unique index per row (on a
 * text key about what the insertion's own unique check costs: callgrind,
 * bench/callgrind-rule10).  First, the leaf's due floor (due_floor.c, in
 * shared memory with the preload): every row lowers it to its purge key,
 * and while it is valid and above the due keys of now nothing of the leaf
 * is due, so no row probes; that serves single-row statements and the
 * append-only containers.  Without a valid floor, from its second row on,
 * a statement looks whether its leaf holds any due item at all (the purge
 * index's key ranges and the deadline index); when none, it probes no more
 * while the look holds ("the look's guard" in replace_look.c; never without
 * the preload, nor on a Citus shard: those probe every row).  Where keys
 * are never written twice, ttl.set_replace_expired(container, false) turns
 * rule 10 off (the setting is the registry's, replace_expired).
 *
 * Files, one phase each: replace.c (this: the statement's state and the
 * steps of one row), replace_leaf.c (the leaf's cache), replace_look.c
 * (the shortcut, the due filter, the look's guard), replace_probe.c (the
 * probe and the replacement), replace_running.c (the statements running,
 * their ON CONFLICT); due_floor.c and due_set.c (shared memory).
 *
 * Kept per leaf across statements (replace_leaf.c): the unique
 * indexes with their IndexInfo, an EState of the cache's own for their
 * expressions and predicates, the row type and the leaf's ancestors.  Per
 * statement (the trigger's FmgrInfo lives as long as the statement's
 * result relation, one per leaf partition): the container's policy as
 * cached (registry.c; pending invalidations processed first, so a
 * prepared statement re-run in a transaction that holds its locks sees a
 * change committed meanwhile) or carried by a Citus shard's trigger, and
 * two slots.  Nothing is probed for a container whose default is NULL (nothing
 * is expired there) or whose setting is off, nor in a database whose
 * extension SQL is older than 1.7 (the library serves it unchanged: rule
 * 10 takes effect with ALTER EXTENSION ttl UPDATE: base/sql_version.c).
 *
 * Locking: the probe reads the indexes the statement has opened
 * (RowExclusiveLock) without locking them again.  Before a replacement
 * the writer takes the container's replace lock (registry.c;
 * RowExclusiveLock, which only a policy change conflicts with) and reads
 * the policy as committed now: a writer never replaces by a policy that
 * a concurrent change has made stale, and a policy change waits for the
 * writers that replaced by the old one.  The delete itself waits for
 * whoever holds the row (purge_replace.c).  A container the restore guard
 * holds replaces nothing: the write conflicts (23505, the detail naming
 * the hold) unless its ON CONFLICT clause covers that index.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "base/compat.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "registry/policy.h"
#include "registry/trigger_args.h"
#include "stamp/replace_look.h"
#include "stamp/replace_probe.h"
#include "stamp/replace_running.h"

/* An xact callback (ttl.c registers it). */
void
ttl_replace_xact_callback(XactEvent event, void *arg)
{
	ttl_running_pop_all();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		ttl_leaf_free_retired();
		/* the rows are in the indexes (or gone): no look need wait for them */
		ttl_floor_xact_end();
		/* after the commit is visible: a look re-reads the policy */
		if (ttl_policy_change_ended() &&
			(event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT))
			ttl_floor_policy_changed();
	}
}

/* A subxact callback (ttl.c registers it). */
void
ttl_replace_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	ttl_running_pop_level(level);
}

/* ---- the statement's state ---- */

/*
 * Build the statement's state in mcxt: which container and policy, whether
 * anything can be replaced at all, the leaf's cached entry and the slots.
 */
static TtlReplaceState *
build_state(MemoryContext mcxt, TriggerData *trigdata, int doc_attnum)
{
	Relation	rel = trigdata->tg_relation;
	Trigger    *trigger = trigdata->tg_trigger;
	TtlReplaceState *state = MemoryContextAllocZero(mcxt, sizeof(TtlReplaceState));
	LeafInfo   *leaf;
	MemoryContext old;
	TtlTriggerArgs args;

	state->doc_attnum = doc_attnum;
	/*
	 * Rule 7: a policy change applies to every statement that starts after
	 * its commit.  The registry's cache is refreshed by invalidations, which
	 * a statement processes when it takes a lock it does not hold yet; a
	 * prepared statement (or a PL/pgSQL plan) run again in a transaction
	 * that holds its locks takes none, so they are processed here, at the
	 * statement's first row.
	 */
	AcceptInvalidationMessages();
	/* before the policy is read: a change committed later is seen */
	state->epoch_seen = ttl_floor_epoch();
	/* a leaf with a floor lowers it with every row, whatever else holds */
	state->floor = ttl_floor_find(RelationGetRelid(rel), false);
	if (!ttl_sql_at_least(1, 7))
		return state;
	leaf = ttl_leaf_info(rel, doc_attnum);
	ttl_trigger_args_read(rel, trigger, &args);
	if (args.has_policy)
	{
		/* a distributed container's piece: the policy is the trigger's */
		state->from_trigger = true;
		state->policy.relid = RelationGetRelid(rel);
		state->policy.doc_column = args.doc_column;
		state->policy.default_is_null = args.default_is_null;
		state->policy.default_ttl = args.default_ttl;
		state->policy.replace_expired = true;	/* no setting there */
		strlcpy(state->policy.deadline_property, args.deadline_property,
				sizeof(state->policy.deadline_property));
	}
	/* the container of the leaf: the first of its ancestors the registry knows */
	else if (!ttl_policy_of_partition(leaf->ancestors, leaf->nancestors, &state->policy))
		return state;
	/*
	 * A container's leaf gets its floor's slot whatever else holds, so that
	 * an inactive statement lowers it too while a nested one validates it.
	 */
	if (state->floor == NULL && !state->from_trigger)
		state->floor = ttl_floor_find(RelationGetRelid(rel), true);
	state->container = state->policy.relid;
	/* TTL off: nothing is expired; rule 10 turned off (ttl.set_replace_expired) */
	if (state->policy.default_is_null || !state->policy.replace_expired ||
		leaf->nindexes == 0)
		return state;
	state->leaf = leaf;
	/* due rows are announced, whether this statement replaces or not */
	state->announce = !state->from_trigger;
	state->now_seconds = ttl_current_unix_seconds();
	/* the slots are the statement's: nothing kept holds a buffer pin */
	old = MemoryContextSwitchTo(mcxt);
	state->new_slot = MakeSingleTupleTableSlot(leaf->desc, &TTSOpsHeapTuple);
	state->holder_slot = MakeSingleTupleTableSlot(leaf->desc, leaf->table_ops);
	MemoryContextSwitchTo(old);
	state->active = true;
	state->next_filter = FILTER_FIRST_TRY;
	/* the due floor (due_floor.c); not for a deadline property nor a shard */
	if (!state->from_trigger && !TTL_HAS_DEADLINE(&state->policy))
	{
		if (state->floor != NULL)
			state->floor_usable = ttl_floor_validate(state->floor, rel, leaf->purge_index,
													 doc_attnum);
	}
	return state;
}

/* The look, the filter and the probes for one row (ttl_replace_expired). */
static void
replace_for_row(TtlReplaceState *state, MemoryContext mcxt, TriggerData *trigdata,
				HeapTuple newtuple)
{
	Relation	rel = trigdata->tg_relation;
	ExprContext *econtext;
	ItemPointer self = NULL;
	bool		relook = false;
	int			i;

	if (!state->active)
		return;
	/* nothing of the leaf is due (the floor): no holder can be expired */
	if (state->floor_usable &&
		ttl_floor_nothing_due(state->floor, RelationGetRelid(rel),
							  state->policy.default_ttl, state->now_seconds))
		return;

	/* a look that no longer holds is dropped: this row is looked at anew */
	++state->rows;
	if (state->look != LOOK_NONE && !ttl_floor_look_holds(state->floor, &state->mark))
	{
		state->look = LOOK_NONE;
		state->filters = NULL;
		state->next_filter = Max(state->rows * 2, FILTER_FIRST_TRY);
		relook = true;
	}
	if (state->look == LOOK_NOTHING_DUE)
		return;

	/*
	 * The per-statement shortcut: from a statement's second row on, nothing
	 * is probed while the leaf holds nothing due (looked at once, and again
	 * when the look stops holding).  A one-row statement probes at once:
	 * that costs it less than the look.
	 */
	if (state->rows == 2 || relook || state->rows == state->next_look)
	{
		if (!ttl_look_begin(state, rel))
			state->next_look = state->rows * 2;	/* probe meanwhile */
		else
		{
			if (!ttl_look_may_hold_due(state, rel))
			{
				state->look = LOOK_NOTHING_DUE;
				return;
			}
			if (state->rows == 2)
			{
				/* a statement planned to write many rows tries the filter at once */
				double		planned = ttl_running_rows(state->leaf->ancestors,
													 state->leaf->nancestors);

				if (planned >= FILTER_FIRST_TRY &&
					ttl_look_make_filters(state, rel, mcxt,
								 (int64) Min(planned, 1e8) * FILTER_PLANNED_RATIO))
					state->look = LOOK_FILTER;
			}
		}
		if (!state->active)
			return;
	}
	else if (state->rows == state->next_filter && state->filters == NULL)
	{
		if (ttl_look_begin(state, rel) &&
			ttl_look_make_filters(state, rel, mcxt, state->rows * FILTER_RATIO))
			state->look = LOOK_FILTER;
		else
			state->next_filter *= FILTER_STEP;
		if (!state->active)
			return;
	}
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		self = &trigdata->tg_trigtuple->t_self;
	econtext = GetPerTupleExprContext(state->leaf->estate);
	ExecStoreHeapTuple(newtuple, state->new_slot, false);
	/* the row as it will be stored: its stored generated columns computed */
	if (state->leaf->generated != NULL)
	{
		state->leaf->generated->ri_RelationDesc = rel;
		ExecComputeStoredGenerated(state->leaf->generated, state->leaf->estate,
								   state->new_slot, CMD_INSERT);
		state->leaf->generated->ri_RelationDesc = NULL;
	}
	econtext->ecxt_scantuple = state->new_slot;
	for (i = 0; i < state->leaf->nindexes && state->active; i++)
	{
		ReplaceIndex *u = &state->leaf->indexes[i];
		Relation	index;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		if (u->predicate != NULL && !ExecQual(u->predicate, econtext))
			continue;			/* not in this partial index */
		FormIndexDatum(u->info, state->new_slot, state->leaf->estate, values, isnull);
		if (!ttl_look_filter_may_hold(state, i, values, isnull))
			continue;			/* no due item holds that key: nothing to probe */
		index = index_open(u->indexoid, NoLock);
		ttl_probe_index(state, rel, index, u, values, isnull, self);
		index_close(index, NoLock);
	}
	ExecClearTuple(state->new_slot);
	ResetExprContext(econtext);
}

/*
 * Rule 10 for the row a stamp trigger returns (see the file header).
 * *statep is the statement's state, built in mcxt on the first row.  The
 * row lowers the floor and is announced after its probes, which may wait
 * for other writers: as late as can be before it is inserted.
 */
void
ttl_replace_expired(TtlReplaceState **statep, MemoryContext mcxt, TriggerData *trigdata,
					int doc_attnum, HeapTuple newtuple)
{
	TtlReplaceState *state = *statep;

	if (state == NULL)
		*statep = state = build_state(mcxt, trigdata, doc_attnum);
	replace_for_row(state, mcxt, trigdata, newtuple);
	if (state->floor != NULL)
		ttl_look_before_write(state, trigdata->tg_relation, newtuple);
}
