/*
 * replace.c
 *		Rule 10: an expired item is gone for writes too.  For every row the
 *		stamp trigger (stamp.c) stamps: when the row's key in a unique btree
 *		index of the table (primary key, unique constraint, expression,
 *		partial, NULLS NOT DISTINCT, DEFERRABLE) is held by an item expired
 *		at ttl.now() (rules 5 and 9), that item is deleted first, as a purge
 *		delete (replace_holder.c, purge_replace.c): the unique check and ON
 *		CONFLICT, which do not see a row the current transaction deleted,
 *		find no conflict (DO UPDATE takes its INSERT path).  A BEFORE ROW
 *		trigger runs before those checks: that is why this is here.
 *		Exclusion constraints are not probed (an overlap with an expired
 *		row is 23P01 as before).  The key is that of the row as stored:
 *		stored generated columns are computed on the probe's copy first, and
 *		no BEFORE ROW trigger fires after this one (ddl/ddl_triggers.c).
 *
 * Exact: every row probes every unique index it has a key in, unless its
 * leaf's due floor (replace_floor.c, read at every row) says nothing of
 * the leaf can be expired yet.  What is left is the race of core's own
 * check: a holder indexed after the row's check and before its insertion
 * (src/stamp/README.md).
 *
 * The probe is core's (check_exclusion_or_unique_constraint): the row's
 * key (a partial index's predicate first) looked up with a dirty
 * snapshot; a busy holder's writer (or speculative insertion) is waited
 * for, then it is looked up again; a live holder is left to the unique
 * check (23505, ON CONFLICT); an UPDATE never looks at its own old row.
 *
 * Per statement (the trigger's FmgrInfo lives as long as the statement's
 * result relation, one per leaf): the policy as cached (invalidations
 * processed first: a prepared statement re-run in a transaction holding
 * its locks sees a change committed meanwhile) or carried by a Citus
 * shard's trigger, the leaf's floor, two slots and a scan of each unique
 * index, begun at its first probe (a begin and an end were a tenth of a
 * probe's instructions).  It runs in the statement's memory, not the
 * row's (what the AM allocates as it goes, such as btree's killed items,
 * must last as long).  Between rows it holds no pin (a probe ends by
 * rescanning it empty) nor relcache reference (it gives its begin's back:
 * the probe's index_open pins the index); an index whose relcache entry
 * was made anew gets a new scan.  Nothing is probed where the default is
 * NULL, rule 10 is off or the SQL is older than 1.7.
 *
 * Locking: the probe reads the indexes the statement has opened
 * (RowExclusiveLock) without locking them again; a busy holder's writer is
 * waited for as core's unique check waits.  A replacement's locks are
 * replace_holder.c's.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "document/deadline.h"
#include "registry/policy.h"
#include "registry/trigger_args.h"
#include "stamp/replace.h"
#include "stamp/replace_holder.h"
#include "stamp/replace_floor.h"
#include "stamp/replace_leaf.h"
#include "stamp/replace_running.h"

/* The statement's state: written here only. */
struct TtlReplaceState
{
	bool		active;			/* false: nothing to do for this statement */
	Oid			container;		/* the registered table, or a Citus shard */
	bool		from_trigger;	/* the policy is the trigger's (a piece of a
								 * distributed container) */
	TtlContainer policy;		/* as the statement found it, then as committed
								 * (replace_holder.c reads it again) */
	int64		now_seconds;
	AttrNumber	doc_attnum;
	LeafInfo   *leaf;
	TtlFloorSlot *floor;		/* the leaf's due floor, or NULL (replace_floor.c) */
	TupleTableSlot *new_slot;	/* the row being written */
	TupleTableSlot *holder_slot;	/* a row holding its key */
	IndexScanDesc *scans;		/* the probe's scan of each unique index */
	SnapshotData dirty;			/* theirs */
};

/* An xact callback (ttl.c registers it). */
void
ttl_replace_xact_callback(XactEvent event, void *arg)
{
	ttl_running_pop_all();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		/* its rows are in the indexes (or dead): no longer in flight */
		ttl_floor_xact_end();
		ttl_leaf_free_retired();
	}
}

/* A subxact callback (ttl.c registers it). */
void
ttl_replace_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		ttl_running_pop_level(GetCurrentTransactionNestLevel());
}

/*
 * Build the statement's state in mcxt: which container and policy, whether
 * anything can be replaced at all, the leaf's cached entry and the slots.
 */
static TtlReplaceState *
build_state(MemoryContext mcxt, TriggerData *trigdata, int doc_attnum)
{
	Relation	rel = trigdata->tg_relation;
	TtlReplaceState *state = MemoryContextAllocZero(mcxt, sizeof(TtlReplaceState));
	LeafInfo   *leaf;
	MemoryContext old;
	TtlTriggerArgs args;
	bool		first = false;

	state->doc_attnum = doc_attnum;
	/*
	 * Rule 7: a prepared statement re-run in a transaction that holds its
	 * locks processes no invalidations: here, at its first row, it does.
	 */
	AcceptInvalidationMessages();
	if (!ttl_sql_at_least(1, 7))
		return state;
	leaf = ttl_leaf_info(rel);
	ttl_trigger_args_read(rel, trigdata->tg_trigger, &args);
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
	else
	{
		/* in flight on the leaf's floor before the policy is read */
		if (!leaf->floor_looked)
		{
			leaf->floor = ttl_floor_slot(RelationGetRelid(rel), true);
			leaf->floor_looked = true;
		}
		if (leaf->floor != NULL)
			first = ttl_floor_enter(leaf->floor);
		/* the container of the leaf: the first of its ancestors the registry knows */
		if (!ttl_policy_of_partition(leaf->ancestors, leaf->nancestors, &state->policy))
			return state;
	}
	state->container = state->policy.relid;
	/* TTL off: nothing is expired; rule 10 turned off (ttl.set_replace_expired) */
	if (state->policy.default_is_null || !state->policy.replace_expired ||
		leaf->nindexes == 0)
		return state;
	state->now_seconds = ttl_current_unix_seconds();
	if (!state->from_trigger && leaf->floor != NULL)
	{
		uint64		word;
		bool		was_held;
		Oid			locked = state->container;

		/* alone on a floor unknown or passed: recompute it (replace_floor.c) */
		if (first && ttl_floor_may_raise(leaf->floor, state->now_seconds, &word) &&
			ttl_try_lock_container_for_replace(locked, &was_held))
		{
			bool		on = ttl_policy_of_partition(leaf->ancestors, leaf->nancestors,
													 &state->policy) &&
				!state->policy.default_is_null && state->policy.replace_expired;

			if (on)
				(void) ttl_floor_raise(leaf->floor, word, rel, &state->policy, doc_attnum);
			if (!was_held)
				ttl_unlock_container_for_replace(locked);
			if (!on)
				return state;
			state->container = state->policy.relid;
		}
		state->floor = leaf->floor;
	}
	state->leaf = leaf;
	/* the slots are the statement's: nothing kept holds a buffer pin */
	old = MemoryContextSwitchTo(mcxt);
	state->new_slot = MakeSingleTupleTableSlot(leaf->desc, &TTSOpsHeapTuple);
	state->holder_slot = MakeSingleTupleTableSlot(leaf->desc, leaf->table_ops);
	state->scans = palloc0(sizeof(IndexScanDesc) * leaf->nindexes);
	MemoryContextSwitchTo(old);
	InitDirtySnapshot(state->dirty);
	state->active = true;
	return state;
}

/* Whether the row in the holder slot is expired under the policy now. */
static bool
holder_expired(TtlReplaceState *state, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		doc = slot_getattr(slot, state->doc_attnum, &isnull);
	int64		expiry;

	if (isnull)
		return false;
	return ttl_datum_expiry_with_deadline(doc, state->policy.default_is_null,
										  state->policy.default_ttl,
										  TTL_HAS_DEADLINE(&state->policy) ?
										  state->policy.deadline_property : NULL,
										  &expiry) &&
		expiry <= state->now_seconds;
}

/*
 * Probe unique index i for the key (values, isnull) and replace an expired
 * holder; self is the UPDATE's old row (never a holder).
 */
static void
probe_index(TtlReplaceState *state, Relation rel, int i, Relation index,
			Datum *values, bool *isnull, ItemPointer self)
{
	IndexInfo  *info = state->leaf->indexes[i].info;
	IndexScanDesc scan = state->scans[i];
	MemoryContext scan_cxt = GetMemoryChunkContext(state);
	Snapshot	dirty = &state->dirty;
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	ScanKeyData scankeys[INDEX_MAX_KEYS];
	ItemPointerData tried;

	ItemPointerSetInvalid(&tried);
	for (int k = 0; k < nkeys; k++)
	{
		if (isnull[k] && !info->ii_NullsNotDistinct)
			return;				/* a NULL key conflicts with nothing */
		ScanKeyEntryInitialize(&scankeys[k], isnull[k] ? SK_ISNULL | SK_SEARCHNULL : 0,
							   k + 1, info->ii_UniqueStrats[k], InvalidOid,
							   index->rd_indcollation[k], info->ii_UniqueProcs[k],
							   values[k]);
	}
	for (;;)
	{
		TransactionId xwait = InvalidTransactionId;
		uint32		token = 0;
		bool		found = false;
		bool		expired;
		ItemPointerData tid;
		MemoryContext old = MemoryContextSwitchTo(scan_cxt);	/* see above */

		if (scan == NULL || scan->indexRelation != index)
		{
			state->scans[i] = scan = ttl_index_beginscan(rel, index, dirty, nkeys, 0);
			RelationDecrementReferenceCount(index);
		}
		ItemPointerSetInvalid(&tid);
		index_rescan(scan, scankeys, nkeys, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, state->holder_slot))
		{
			if (self != NULL && ItemPointerEquals(&state->holder_slot->tts_tid, self))
				continue;
			tid = state->holder_slot->tts_tid;
			xwait = TransactionIdIsValid(dirty->xmin) ? dirty->xmin : dirty->xmax;
			token = dirty->speculativeToken;
			found = true;
			break;
		}
		MemoryContextSwitchTo(old);
		expired = found && !TransactionIdIsValid(xwait) &&
			holder_expired(state, state->holder_slot);
		ExecClearTuple(state->holder_slot);
		old = MemoryContextSwitchTo(scan_cxt);
		index_rescan(scan, NULL, nkeys, NULL, 0);	/* its pins given back */
		MemoryContextSwitchTo(old);
		if (!found)
			return;				/* no holder: nothing conflicts */
		if (TransactionIdIsValid(xwait))
		{
			/* its writer is busy: wait, then look at its newest version */
			if (token != 0)
				SpeculativeInsertionWait(dirty->xmin, token);
			else
				XactLockTableWait(xwait, rel, &tid, XLTW_InsertIndex);
			continue;
		}
		if (!expired)
			return;				/* a live item: it conflicts, as before */
		if (ItemPointerEquals(&tid, &tried))
		{
			/* its delete was refused: it conflicts (replace_holder.c) */
			ttl_holder_refused(state->container, rel, index, values, isnull);
			return;
		}
		switch (ttl_replace_holder(state->container, state->from_trigger, &state->policy,
								   state->now_seconds, rel, index, &tid, values, isnull))
		{
			case TTL_HOLDER_GONE:
			case TTL_HOLDER_CONFLICTS:
				return;
			case TTL_HOLDER_STOP:
				state->active = false;	/* disabled or off meanwhile */
				return;
			case TTL_HOLDER_LOOK_AGAIN:
				tried = tid;	/* changed meanwhile, or refused */
				break;
		}
	}
}

/*
 * Rule 10 for the row a stamp trigger returns (see the file header).
 * *statep is the statement's state, built in mcxt on the first row.
 */
void
ttl_replace_expired(TtlReplaceState **statep, MemoryContext mcxt, TriggerData *trigdata,
					int doc_attnum, HeapTuple newtuple)
{
	TtlReplaceState *state = *statep;
	Relation	rel = trigdata->tg_relation;
	ExprContext *econtext;
	ItemPointer self = NULL;

	if (state == NULL)
		*statep = state = build_state(mcxt, trigdata, doc_attnum);
	if (!state->active)
		return;
	if (state->floor != NULL)
	{
		bool		isnull;
		Datum		doc = heap_getattr(newtuple, doc_attnum, RelationGetDescr(rel), &isnull);
		int64		expiry;

		/* the floor lowered to this row's expiry before it can be indexed */
		if (!isnull &&
			ttl_datum_expiry_with_deadline(doc, false, state->policy.default_ttl,
										   TTL_HAS_DEADLINE(&state->policy) ?
										   state->policy.deadline_property : NULL,
										   &expiry))
			ttl_floor_lower(state->floor, expiry);
		/* nothing of the leaf can be expired now: no probe */
		if (ttl_floor_skips(state->floor, state->now_seconds))
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
	for (int i = 0; i < state->leaf->nindexes && state->active; i++)
	{
		ReplaceIndex *u = &state->leaf->indexes[i];
		Relation	index;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		if (u->predicate != NULL && !ExecQual(u->predicate, econtext))
			continue;			/* not in this partial index */
		FormIndexDatum(u->info, state->new_slot, state->leaf->estate, values, isnull);
		index = index_open(u->indexoid, NoLock);
		probe_index(state, rel, i, index, values, isnull, self);
		index_close(index, NoLock);
	}
	ExecClearTuple(state->new_slot);
	ResetExprContext(econtext);
}
