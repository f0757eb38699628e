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
 *		before).
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
 * while the look holds (see "the look's guard" below; never without the
 * preload, nor on a Citus shard: those probe every row).  Where keys are
 * never written twice,
 * ttl.set_replace_expired(container, false) turns rule 10 off (the setting
 * is the registry's, replace_expired).
 *
 * Kept per leaf across statements (see "the leaf's cache"): the unique
 * indexes with their IndexInfo, an EState of the cache's own for their
 * expressions and predicates, the row type and the leaf's ancestors.  Per
 * statement (the trigger's FmgrInfo lives as long as the statement's
 * result relation, one per leaf partition): the container's policy as
 * cached (registry.c) or carried by a Citus shard's trigger, and two
 * slots.  Nothing is probed for a container whose default is NULL (nothing
 * is expired there) or whose setting is off, nor in a database whose
 * extension SQL is older than 1.7 (the library serves it unchanged: rule
 * 10 takes effect with ALTER EXTENSION ttl UPDATE; the mark of 1.7 is the
 * table ttl.purge_stats_pending, registry.c's ttl_rule10_installed).
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
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "common/hashfn.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/due_range.h"
#include "document/purge_key.h"
#include "purge/purge.h"
#include "registry/policy.h"
#include "registry/registry.h"
#include "stamp/due_floor.h"
#include "stamp/due_set.h"
#include "stamp/replace.h"

/* One unique index of the leaf, ready to probe. */
typedef struct ReplaceIndex
{
	Oid			indexoid;
	IndexInfo  *info;			/* with the equality operators of its keys */
	ExprState  *predicate;		/* a partial index's, or NULL */
	bool		equalimage;		/* equal keys have equal images (the filter) */
	int			nkeys;			/* its key columns, as the filter hashes them */
	bool		keybyval[INDEX_MAX_KEYS];
	int16		keylen[INDEX_MAX_KEYS];
} ReplaceIndex;

/*
 * What the probes of one leaf need, built once and kept across statements
 * and transactions (see "the leaf's cache" below).
 */
typedef struct LeafInfo
{
	struct LeafInfo *next;		/* on the retired list */
	MemoryContext mcxt;			/* holds all of it */
	int			nancestors;		/* the leaf, then the tables it is a */
	Oid		   *ancestors;		/* partition of, nearest first */
	EState	   *estate;			/* for index expressions and predicates */
	TupleDesc	desc;			/* a copy of the row type */
	const TupleTableSlotOps *table_ops;
	int			nindexes;
	ReplaceIndex *indexes;
	Oid			purge_index;	/* the btree on ttl.doc_purge_key, or none */
} LeafInfo;

/* When a statement tries the due filter (see "the due filter" below). */
#define FILTER_FIRST_TRY	64
#define FILTER_STEP			8
#define FILTER_RATIO		8
#define FILTER_PLANNED_RATIO 2

/* The hashes of the keys of the due items in one unique index (sorted). */
typedef struct DueFilter
{
	bool		usable;			/* false: that index is probed */
	int			n;
	int			size;
	uint32	   *hashes;
} DueFilter;

struct TtlReplaceState
{
	bool		active;			/* false: nothing to do for this statement */
	Oid			container;		/* the registered table, or a Citus shard */
	bool		from_trigger;	/* the policy is the trigger's (a piece of a
								 * distributed container) */
	TtlContainer policy;		/* as the statement found it, then as committed */
	int64		now_seconds;
	AttrNumber	doc_attnum;
	LeafInfo   *leaf;
	TupleTableSlot *new_slot;	/* the row being written */
	TupleTableSlot *holder_slot;	/* a row holding its key */
	int64		rows;			/* rows seen by this statement */
	int64		next_filter;	/* the row at which to try the due filter */
	DueFilter  *filters;		/* one per index of the leaf, or NULL */
	int32		filter_default; /* the default the filter was made with */
	TtlFloor   *floor;			/* the leaf's due floor, or NULL */
	bool		floor_usable;	/* validated for this statement's policy */
	bool		announce;		/* the policy is known: due rows are announced */
	int			look;			/* LOOK_*: what the statement's look holds */
	TtlLookMark mark;			/* when it was taken (due_floor.c) */
	int64		next_look;		/* the row at which to look again */
	bool		policy_fresh;	/* read as committed by a look */
	uint64		epoch_seen;		/* the policy epoch it was read at */
};

/* What the statement's look found (see "the look's guard"). */
#define LOOK_NONE			0	/* none, or it no longer holds: probe */
#define LOOK_NOTHING_DUE	1	/* the shortcut: skip every row */
#define LOOK_FILTER			2	/* the due filter: skip the rows it clears */

/* A row whose expiry is at most this far ahead of the clock is announced. */
#define DUE_MARGIN_SECONDS	2

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
	Oid			target;			/* the ON CONFLICT statement's table */
	List	   *arbiters;		/* its arbiter indexes; NIL: all */
	Oid			written;		/* the table it writes (ModifyTable's) */
	double		est_rows;		/* the rows it is planned to write */
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
		if (plan != NULL && IsA(plan, ModifyTable) && plan->lefttree != NULL)
		{
			w->written = rt_fetch(((ModifyTable *) plan)->nominalRelation, stmt->rtable)->relid;
			w->est_rows = plan->lefttree->plan_rows;
		}
		if (plan != NULL && IsA(plan, ModifyTable) &&
			((ModifyTable *) plan)->onConflictAction != ONCONFLICT_NONE)
		{
			ModifyTable *mt = (ModifyTable *) plan;
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			w->on_conflict = true;
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

static void free_retired(void);

/* An xact callback (ttl.c registers it). */
void
ttl_replace_xact_callback(XactEvent event, void *arg)
{
	pop_running(NULL);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		free_retired();
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
	while (running != NULL && running->nest_level >= level)
		pop_running(running);
}


/*
 * Whether the running statement's ON CONFLICT clause covers a conflict in
 * index (of leaf, a partition of container or container itself): then the
 * conflict is no error, and the guard's hold must not make it one.
 */
static bool
on_conflict_covers(Oid container, Oid leaf, Oid index)
{
	ListCell   *lc;
	List	   *ancestors;

	if (running == NULL || !running->on_conflict ||
		(running->target != container && running->target != leaf))
		return false;
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

/*
 * The rows the running statement is planned to write into leaf (one of
 * ancestors, nearest first, is its target), or 0 when unknown (COPY, whose
 * rows nobody estimates, or a statement writing another table).
 */
static double
statement_rows(const Oid *ancestors, int nancestors)
{
	int			i;

	if (running == NULL || running->est_rows <= 0)
		return 0;
	for (i = 0; i < nancestors; i++)
	{
		if (ancestors[i] == running->written)
			return running->est_rows;
	}
	return 0;
}

/* ---- the leaf's cache ---- */

/*
 * Per leaf (hash on its OID): its unique btree indexes with their
 * IndexInfo (key equality operators, expressions and predicate prepared in
 * an EState of the cache's own), the row type, and the tables it is a
 * partition of.  Building that costs a one-row INSERT more than its probe
 * (catalog look-ups for every key's operator), so it is kept across
 * statements.  Anything that changes what it holds invalidates the leaf's
 * relcache entry: an index created, dropped or made valid, a column
 * changed, ATTACH / DETACH PARTITION; the relcache callback then drops the
 * entry.  A dropped entry may still serve a statement that is running (an
 * inner write of the same leaf from a trigger can rebuild it meanwhile),
 * so it is only retired then, and freed at the end of the transaction.
 * The container's policy is never kept here: the registry's cache
 * (registry.c) serves it to every statement.  Nothing here holds a buffer
 * pin or a relation reference: the slots are the statement's.
 */
typedef struct LeafEntry
{
	Oid			relid;			/* hash key */
	LeafInfo   *info;
} LeafEntry;

static HTAB *leaf_cache = NULL;
static LeafInfo *retired = NULL;

static void
retire_entry(LeafEntry *entry)
{
	entry->info->next = retired;
	retired = entry->info;
	hash_search(leaf_cache, &entry->relid, HASH_REMOVE, NULL);
}

/* A relcache callback (ttl.c registers it): cached leaves go stale. */
void
ttl_replace_invalidate(Datum arg, Oid relid)
{
	LeafEntry  *entry;

	ttl_floor_invalidate(relid);
	if (leaf_cache == NULL)
		return;
	if (relid != InvalidOid)
	{
		entry = hash_search(leaf_cache, &relid, HASH_FIND, NULL);
		if (entry != NULL)
			retire_entry(entry);
	}
	else
	{
		HASH_SEQ_STATUS status;

		hash_seq_init(&status, leaf_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
			retire_entry(entry);
	}
}

/* At the end of a transaction no statement uses a retired entry any more. */
static void
free_retired(void)
{
	while (retired != NULL)
	{
		LeafInfo   *info = retired;

		retired = info->next;
		MemoryContextDelete(info->mcxt);
	}
}

/* The unique btree indexes of rel, with what the probe needs. */
/*
 * How the filter hashes the index's key columns (their images), kept so
 * that a row the filter clears does not open the index at all.
 */
static void
load_key_images(ReplaceIndex *u, Relation index)
{
	int			i;

	u->nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	for (i = 0; i < u->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(index), i);

		u->keybyval[i] = att->attbyval;
		u->keylen[i] = att->attlen;
	}
}

static void
load_indexes(LeafInfo *leaf, Relation rel, AttrNumber doc_attnum)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	leaf->indexes = palloc0(sizeof(ReplaceIndex) * Max(list_length(indexes), 1));
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), RowExclusiveLock);
		Form_pg_index form = index->rd_index;
		ReplaceIndex *u = &leaf->indexes[leaf->nindexes];

		if (form->indisunique && form->indisvalid && form->indisready &&
			!form->indisexclusion && index->rd_rel->relam == BTREE_AM_OID)
		{
			u->indexoid = RelationGetRelid(index);
			u->info = BuildIndexInfo(index);
			BuildSpeculativeIndexInfo(index, u->info);
			if (u->info->ii_Predicate != NIL)
				u->predicate = ExecPrepareQual(u->info->ii_Predicate, leaf->estate);
			u->equalimage = _bt_allequalimage(index, false);
			load_key_images(u, index);
			leaf->nindexes++;
		}
		else if (ttl_purge_index_kind(index, doc_attnum) == TTL_INDEX_KEY)
			leaf->purge_index = RelationGetRelid(index);
		index_close(index, NoLock);
	}
	list_free(indexes);
}

static LeafInfo *
build_leaf(Relation rel, AttrNumber doc_attnum)
{
	MemoryContext mcxt = AllocSetContextCreate(CacheMemoryContext, "ttl rule 10 leaf",
											   ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	LeafInfo   *leaf = palloc0(sizeof(LeafInfo));
	List	   *ancestors = rel->rd_rel->relispartition ?
		get_partition_ancestors(RelationGetRelid(rel)) : NIL;
	ListCell   *lc;

	leaf->mcxt = mcxt;
	leaf->ancestors = palloc(sizeof(Oid) * (list_length(ancestors) + 1));
	leaf->ancestors[leaf->nancestors++] = RelationGetRelid(rel);
	foreach(lc, ancestors)
		leaf->ancestors[leaf->nancestors++] = lfirst_oid(lc);
	leaf->estate = CreateExecutorState();
	leaf->desc = CreateTupleDescCopy(RelationGetDescr(rel));
	leaf->table_ops = table_slot_callbacks(rel);
	load_indexes(leaf, rel, doc_attnum);
	MemoryContextSwitchTo(old);
	return leaf;
}

/* The leaf's cached entry, built if missing. */
static LeafInfo *
leaf_info(Relation rel, AttrNumber doc_attnum)
{
	Oid			relid = RelationGetRelid(rel);
	LeafEntry  *entry;
	bool		found;
	LeafInfo   *leaf;

	if (leaf_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(LeafEntry);
		leaf_cache = hash_create("ttl rule 10 leaves", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(leaf_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->info;
	/* built first: building may take invalidations, which edit the hash */
	leaf = build_leaf(rel, doc_attnum);
	entry = hash_search(leaf_cache, &relid, HASH_ENTER, &found);
	if (found)
	{
		entry->info->next = retired;	/* cannot happen; keep it safe */
		retired = entry->info;
	}
	entry->info = leaf;
	return leaf;
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

	state->doc_attnum = doc_attnum;
	/* before the policy is read: a change committed later is seen */
	state->epoch_seen = ttl_floor_epoch();
	/* a leaf with a floor lowers it with every row, whatever else holds */
	state->floor = ttl_floor_find(RelationGetRelid(rel), false);
	if (!ttl_rule10_installed())
		return state;
	leaf = leaf_info(rel, doc_attnum);
	if (trigger->tgnargs >= 3)
	{
		/* a distributed container's piece: the policy is the trigger's */
		state->from_trigger = true;
		state->policy.relid = RelationGetRelid(rel);
		namestrcpy(&state->policy.doc_column, trigger->tgargs[0]);
		state->policy.default_is_null = trigger->tgargs[1][0] == '\0';
		state->policy.default_ttl = state->policy.default_is_null ? 0 :
			pg_strtoint32(trigger->tgargs[1]);
		state->policy.replace_expired = true;	/* no setting there */
		if (trigger->tgnargs == 4)
			strlcpy(state->policy.deadline_property, trigger->tgargs[3],
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

/* ---- the shortcut: nothing due in the leaf ---- */

/* Whether index has an entry in the range for a row the dirty snapshot sees. */
static bool
range_has_row(TtlReplaceState *state, Relation rel, Relation index, TtlDueRange range)
{
	ScanKeyData keys[2];
	SnapshotData dirty;
	IndexScanDesc scan;
	bool		found;

	if (range.low > range.high)
		return false;
	InitDirtySnapshot(dirty);
	ttl_due_scankeys(&range, keys);
	scan = ttl_index_beginscan(rel, index, &dirty, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, state->holder_slot);
	ExecClearTuple(state->holder_slot);
	index_endscan(scan);
	return found;
}

/*
 * Whether the leaf may hold a due item now: looked up in its purge index
 * (the key ranges of both kinds, purge_key.c) and its deadline index (rule
 * 9), or true when it cannot tell cheaply (an append-only container's BRIN
 * index, or none).  A statement whose leaf holds nothing due cannot meet an
 * expired holder: the rows it writes itself are not due (their _ts is
 * now) unless a deadline has passed, and a deadline index then shows them.
 */
static bool
leaf_may_hold_due(TtlReplaceState *state, Relation rel)
{
	const TtlContainer *p = &state->policy;
	int64		now = state->now_seconds;
	bool		lifetimes_known = false;
	bool		deadlines_known = !TTL_HAS_DEADLINE(p);
	bool		due = false;
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), NoLock);

		switch (ttl_purge_index_kind(index, state->doc_attnum))
		{
			case TTL_INDEX_KEY:
				lifetimes_known = true;
				due |= p->default_ttl > 0 &&
					range_has_row(state, rel, index,
								  ttl_due_range(TTL_DUE_INHERITED, true, p->default_ttl, now));
				due |= range_has_row(state, rel, index,
									 ttl_due_range(TTL_DUE_OWN, true, p->default_ttl, now));
				break;
			case TTL_INDEX_TS:	/* 1.0-1.2: two partial indexes */
				due |= p->default_ttl > 0 &&
					range_has_row(state, rel, index,
								  ttl_due_range(TTL_DUE_INHERITED, false, p->default_ttl, now));
				break;
			case TTL_INDEX_EXPIRY:
				lifetimes_known = true;
				due |= range_has_row(state, rel, index,
									 ttl_due_range(TTL_DUE_OWN, false, p->default_ttl, now));
				break;
			default:
				if (TTL_HAS_DEADLINE(p) &&
					index->rd_rel->relam == BTREE_AM_OID &&
					ttl_is_deadline_index(index, state->doc_attnum, p->deadline_property))
				{
					deadlines_known = true;
					due |= range_has_row(state, rel, index,
										 ttl_due_range(TTL_DUE_DEADLINE, false,
													   p->default_ttl, now));
				}
				break;
		}
		index_close(index, NoLock);
		if (due)
			break;
	}
	list_free(indexes);
	return due || !lifetimes_known || !deadlines_known;
}

/* ---- the due filter: the keys of the leaf's due items ---- */

/*
 * A statement of many rows whose leaf holds due items would probe every
 * row.  When the due items are few against its rows (at most
 * FILTER_PLANNED_RATIO times the rows its plan expects, looked at on its
 * second row; or, for COPY and when that failed, FILTER_RATIO times the
 * rows it has written so far, at row FILTER_FIRST_TRY, then each time
 * FILTER_STEP times further; counted on the purge index alone), it
 * lists them once instead (the purge index's two key ranges, read with a
 * dirty snapshot as the probe reads) and keeps, per unique index, the
 * hashes of their keys: a row whose key hashes to none of them cannot meet
 * a due holder and is not probed; one that does is probed as before (a
 * collision costs one probe, nothing more).  The hash is of the key's image
 * (datum_image_hash), which equality agrees with only where the index's
 * operator classes say so (_bt_allequalimage, as for deduplication: not
 * numeric, float or a nondeterministic collation): such an index keeps
 * being probed.  Not for a container with a deadline property (a row of
 * the statement itself may be due at once, past its deadline) nor for one
 * without a btree purge index (BRIN, none: the due items cannot be listed
 * cheaply).  The list is as of the moment it is made, as the shortcut's
 * look is; a statement that replaces an item under a policy changed
 * meanwhile drops the list (replace_holder).  A list made is left in
 * shared memory (due_set.c) under its look's key; a later statement, in
 * any backend, whose look has the same key takes it instead of reading
 * every due item's row again, and reads from the purge index only the
 * items that came due since the list's second (filters_from_set).
 *
 * The look's guard.  A look (the shortcut, the filter) is of the rows in
 * the indexes at that moment; an item not due then cannot become due
 * during the statement (its clock, ttl.now(), is fixed), but another
 * transaction can write a row that is due the moment it is written (its
 * deadline is past, rule 9; or its _ts, its statement's timestamp, is older
 * than its lifetime: a long INSERT ... SELECT, a CALL that commits in a
 * loop, ttl.now_override in the past).  So (due_floor.c, "Due writes"):
 * every writer of a row whose earliest expiry is at most DUE_MARGIN_SECONDS
 * ahead of the real clock announces it in its leaf's slot before the row is
 * inserted (in flight until its transaction ends; a due_writes counter);
 * a look is taken only when no other transaction is in flight there, the
 * statement's clock is not ahead of the real one (ttl.now_override), and
 * with the policy read as committed (again after every policy change: the
 * epoch); and every row the look lets skip re-reads due_writes and the
 * epoch: a change drops the look, the row is looked at again (or probed).
 * Without the preload there is no slot: no look, every row is probed; so
 * on a Citus shard.
 */
/* The two key ranges of the due items in the purge index at the second now. */
static int
due_ranges_at(TtlReplaceState *state, int64 now, int64 *lo, int64 *hi)
{
	int			n = 0;

	TtlDueRange ranges[TTL_DUE_KINDS];
	TtlContainer lifetimes = state->policy;
	int			i;

	/* the lifetime kinds only (no deadline here: see above) */
	lifetimes.deadline_property[0] = '\0';
	n = ttl_due_ranges(&lifetimes, true, now, ranges);
	for (i = 0; i < n; i++)
	{
		lo[i] = ranges[i].low;
		hi[i] = ranges[i].high;
	}
	return n;
}

static int
due_ranges(TtlReplaceState *state, int64 *lo, int64 *hi)
{
	return due_ranges_at(state, state->now_seconds, lo, hi);
}

static IndexScanDesc
begin_range(Relation rel, Relation index, Snapshot snap, int64 lo, int64 hi)
{
	ScanKeyData keys[2];
	IndexScanDesc scan;

	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(lo));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(hi));
	scan = ttl_index_beginscan(rel, index, snap, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	return scan;
}

/* Entries of the due ranges, counted up to cap + 1 (no heap access). */
static int64
count_due(TtlReplaceState *state, Relation rel, Relation index, int64 cap)
{
	int64		lo[2], hi[2];
	int			nranges = due_ranges(state, lo, hi);
	int64		n = 0;
	int			r;
	SnapshotData dirty;

	InitDirtySnapshot(dirty);
	for (r = 0; r < nranges && n <= cap; r++)
	{
		IndexScanDesc scan = begin_range(rel, index, &dirty, lo[r], hi[r]);

		while (n <= cap && index_getnext_tid(scan, ForwardScanDirection) != NULL)
			n++;
		index_endscan(scan);
	}
	return n;
}

/*
 * sort_hashes(): the filter's hashes sorted with the comparison inlined
 * (pg_qsort's call per comparison was a sixth of the filter's making).
 */
#define ST_SORT sort_hashes
#define ST_ELEMENT_TYPE uint32
#define ST_COMPARE(a, b) (*(a) < *(b) ? -1 : *(a) > *(b) ? 1 : 0)
#define ST_SCOPE static
#define ST_DECLARE
#define ST_DEFINE
#include "lib/sort_template.h"

/* The hash of a key (values, isnull) of index u, from the images of its columns. */
static uint32
key_hash(const ReplaceIndex *u, Datum *values, bool *isnull)
{
	uint32		h = 0;
	int			i;

	for (i = 0; i < u->nkeys; i++)
		h = hash_combine(h, isnull[i] ? 0x9e3779b9 :
						 datum_image_hash(values[i], u->keybyval[i], u->keylen[i]));
	return h;
}

/* Add the keys of the holder slot's row to the filters. */
static void
filter_add_row(TtlReplaceState *state)
{
	LeafInfo   *leaf = state->leaf;
	ExprContext *econtext = GetPerTupleExprContext(leaf->estate);
	int			i;

	econtext->ecxt_scantuple = state->holder_slot;
	for (i = 0; i < leaf->nindexes; i++)
	{
		ReplaceIndex *u = &leaf->indexes[i];
		DueFilter  *f = &state->filters[i];
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		if (!f->usable || (u->predicate != NULL && !ExecQual(u->predicate, econtext)))
			continue;
		FormIndexDatum(u->info, state->holder_slot, leaf->estate, values, isnull);
		if (f->n == f->size)
		{
			f->size *= 2;
			f->hashes = repalloc(f->hashes, sizeof(uint32) * f->size);
		}
		f->hashes[f->n++] = key_hash(u, values, isnull);
	}
	ResetExprContext(econtext);
}

/* Add the keys of the rows of the purge index in [lo, hi] to the filters. */
static int64
filter_add_range(TtlReplaceState *state, Relation rel, Relation purge,
				 MemoryContext mcxt, int64 lo, int64 hi)
{
	SnapshotData dirty;
	IndexScanDesc scan;
	MemoryContext old;
	int64		n = 0;

	if (lo > hi)
		return 0;
	InitDirtySnapshot(dirty);
	scan = begin_range(rel, purge, &dirty, lo, hi);
	while (index_getnext_slot(scan, ForwardScanDirection, state->holder_slot))
	{
		old = MemoryContextSwitchTo(mcxt);
		filter_add_row(state);
		MemoryContextSwitchTo(old);
		n++;
	}
	ExecClearTuple(state->holder_slot);
	index_endscan(scan);
	return n;
}

/* The shared set's key for this statement's look (due_set.c). */
static bool
set_key(TtlReplaceState *state, Relation rel, TtlDueSetKey *key)
{
	LeafInfo   *leaf = state->leaf;
	int			i;

	if (leaf->nindexes > TTL_DUE_SET_INDEXES)
		return false;
	memset(key, 0, sizeof(TtlDueSetKey));
	key->relid = RelationGetRelid(rel);
	key->mark = state->mark;
	key->default_ttl = state->policy.default_ttl;
	key->nindexes = leaf->nindexes;
	for (i = 0; i < leaf->nindexes; i++)
		key->indexes[i] = leaf->indexes[i].indexoid;
	return true;
}

/*
 * The filters from the shared set made under this look's key, with the
 * items that came due since it was made read from the purge index: true
 * when there was one.
 */
static bool
filters_from_set(TtlReplaceState *state, Relation rel, Relation purge,
				 MemoryContext mcxt, const TtlDueSetKey *key)
{
	LeafInfo   *leaf = state->leaf;
	int			counts[TTL_DUE_SET_INDEXES];
	uint32	   *hashes[TTL_DUE_SET_INDEXES];
	int64		made;
	int64		lo0[2], hi0[2], lo[2], hi[2];
	int			nranges, r, i;
	int64		added = 0;

	if (!ttl_due_set_fetch(key, &made, counts, hashes, mcxt))
		return false;
	state->filters = MemoryContextAllocZero(mcxt, sizeof(DueFilter) * leaf->nindexes);
	for (i = 0; i < leaf->nindexes; i++)
	{
		DueFilter  *f = &state->filters[i];

		f->usable = leaf->indexes[i].equalimage;
		f->n = counts[i];
		f->size = Max(counts[i], 16);
		f->hashes = hashes[i];
	}
	/* the items that came due between the set's second and this statement's */
	if (made < state->now_seconds)
	{
		(void) due_ranges_at(state, made, lo0, hi0);
		nranges = due_ranges(state, lo, hi);
		for (r = 0; r < nranges; r++)
			added += filter_add_range(state, rel, purge, mcxt, hi0[r] + 1, hi[r]);
		if (added > 0)
		{
			for (i = 0; i < leaf->nindexes; i++)
			{
				if (state->filters[i].usable)
					sort_hashes(state->filters[i].hashes, state->filters[i].n);
			}
		}
		/* the next statements start from here */
		for (i = 0; i < leaf->nindexes; i++)
		{
			counts[i] = state->filters[i].n;
			hashes[i] = state->filters[i].hashes;
		}
		ttl_due_set_publish(key, state->now_seconds, counts, hashes);
	}
	return true;
}

/*
 * Try to make the filters (see above) at the statement's row state->rows,
 * right after a look (begin_look); true when made.  From the shared set
 * when one was made under the same look's key (due_set.c), else by listing
 * the due items, when they are at most cap, and then published.
 */
static bool
make_filters(TtlReplaceState *state, Relation rel, MemoryContext mcxt, int64 cap)
{
	LeafInfo   *leaf = state->leaf;
	Relation	purge;
	int64		due;
	int64		lo[2], hi[2];
	int			nranges;
	int			r, i;
	bool		any = false;
	bool		keyed;
	TtlDueSetKey key;
	MemoryContext old;

	if (!OidIsValid(leaf->purge_index) || TTL_HAS_DEADLINE(&state->policy))
		return false;
	for (i = 0; i < leaf->nindexes; i++)
		any |= leaf->indexes[i].equalimage;
	if (!any)
		return false;
	purge = index_open(leaf->purge_index, AccessShareLock);
	keyed = set_key(state, rel, &key);
	if (keyed && filters_from_set(state, rel, purge, mcxt, &key))
	{
		index_close(purge, AccessShareLock);
		state->filter_default = state->policy.default_ttl;
		return true;
	}
	due = count_due(state, rel, purge, cap);
	if (due > cap)
	{
		index_close(purge, AccessShareLock);
		return false;
	}
	old = MemoryContextSwitchTo(mcxt);
	state->filters = palloc0(sizeof(DueFilter) * leaf->nindexes);
	for (i = 0; i < leaf->nindexes; i++)
	{
		DueFilter  *f = &state->filters[i];

		f->usable = leaf->indexes[i].equalimage;
		f->size = Max(due, 16);
		f->hashes = palloc(sizeof(uint32) * f->size);
	}
	MemoryContextSwitchTo(old);
	nranges = due_ranges(state, lo, hi);
	for (r = 0; r < nranges; r++)
		(void) filter_add_range(state, rel, purge, mcxt, lo[r], hi[r]);
	for (i = 0; i < leaf->nindexes; i++)
	{
		DueFilter  *f = &state->filters[i];

		if (f->usable)
			sort_hashes(f->hashes, f->n);
	}
	index_close(purge, AccessShareLock);
	state->filter_default = state->policy.default_ttl;
	if (keyed)
	{
		int			counts[TTL_DUE_SET_INDEXES];
		uint32	   *hashes[TTL_DUE_SET_INDEXES];

		for (i = 0; i < leaf->nindexes; i++)
		{
			counts[i] = state->filters[i].n;
			hashes[i] = state->filters[i].hashes;
		}
		ttl_due_set_publish(&key, state->now_seconds, counts, hashes);
	}
	return true;
}

/* Whether the key may be held by a due item (true: probe it). */
static bool
filter_may_hold(TtlReplaceState *state, int i, Datum *values, bool *isnull)
{
	DueFilter  *f;
	uint32		h;
	int			lo = 0,
				hi;

	if (state->filters == NULL || !state->filters[i].usable)
		return true;
	f = &state->filters[i];
	h = key_hash(&state->leaf->indexes[i], values, isnull);
	hi = f->n;
	while (lo < hi)				/* the first hash >= h */
	{
		int			mid = lo + (hi - lo) / 2;

		if (f->hashes[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->n && f->hashes[lo] == h;
}

/* ---- one row ---- */

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

/* 23505 for a conflict with an expired item the restore guard holds. */
static void
report_held(TtlReplaceState *state, Relation rel, Relation index,
			Datum *values, bool *isnull)
{
	char	   *key = BuildIndexValueDescription(index, values, isnull);
	char	   *name = ttl_relation_display_name(state->container);

	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates unique constraint \"%s\"",
					RelationGetRelationName(index)),
			 key ?
			 errdetail("Key %s is held by an expired item of container %s, which the restore guard holds: nothing is replaced while the hold stands.",
					   key, name) :
			 errdetail("The key is held by an expired item of container %s, which the restore guard holds: nothing is replaced while the hold stands.",
					   name),
			 errhint("Check the container, then run SELECT ttl.resume('%s') to release the hold.",
					 name),
			 errtableconstraint(rel, RelationGetRelationName(index))));
}

/*
 * The holder at tid is expired by the statement's policy: replace it.
 * Takes the replace lock and reads the policy as committed now (a
 * shard's is its trigger's, which a change cannot replace while this
 * statement holds the shard).  true: it is gone.
 */
static bool
replace_holder(TtlReplaceState *state, Relation rel, Relation index,
			   ItemPointer tid, Datum *values, bool *isnull)
{
	if (!state->from_trigger)
	{
		TtlContainer fresh;

		ttl_lock_container_for_replace(state->container);
		if (!ttl_read_container(state->container, &fresh))
		{
			state->active = false;	/* disabled meanwhile */
			return false;
		}
		/* a list of due items made by another default is no longer one */
		if (state->filters != NULL &&
			(fresh.default_is_null || fresh.default_ttl != state->filter_default ||
			 TTL_HAS_DEADLINE(&fresh)))
		{
			state->filters = NULL;
			state->look = LOOK_NONE;
		}
		state->policy = fresh;	/* the probes of this statement go on with it */
		if (fresh.default_is_null || !fresh.replace_expired)
		{
			state->active = false;
			return false;
		}
		if (fresh.held)
		{
			if (on_conflict_covers(state->container, RelationGetRelid(rel),
								   RelationGetRelid(index)))
				return false;	/* ON CONFLICT handles it as a conflict */
			report_held(state, rel, index, values, isnull);
		}
	}

	/*
	 * A legal hold (SPEC, "After 1.6") plugs in here: a holder its match
	 * covers raises 55000, also under ON CONFLICT DO NOTHING.
	 */
	return ttl_purge_replaced_item(state->container, RelationGetRelid(rel), tid,
								   &state->policy, state->now_seconds);
}

/*
 * Probe one unique index for the key (values, isnull) and replace an
 * expired holder; self is the UPDATE's old row (never a holder).
 */
static void
probe_index(TtlReplaceState *state, Relation rel, Relation index, ReplaceIndex *u,
			Datum *values, bool *isnull, ItemPointer self)
{
	IndexInfo  *info = u->info;
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	ScanKeyData scankeys[INDEX_MAX_KEYS];
	SnapshotData dirty;
	ItemPointerData tried;
	int			i;

	ItemPointerSetInvalid(&tried);
	for (i = 0; i < nkeys; i++)
	{
		if (isnull[i] && !info->ii_NullsNotDistinct)
			return;				/* a NULL key conflicts with nothing */
		ScanKeyEntryInitialize(&scankeys[i], isnull[i] ? SK_ISNULL | SK_SEARCHNULL : 0,
							   i + 1, info->ii_UniqueStrats[i], InvalidOid,
							   index->rd_indcollation[i], info->ii_UniqueProcs[i],
							   values[i]);
	}
	InitDirtySnapshot(dirty);
	for (;;)
	{
		IndexScanDesc scan;
		TransactionId xwait = InvalidTransactionId;
		uint32		token = 0;
		bool		found = false;
		bool		expired = false;
		ItemPointerData tid;

		ItemPointerSetInvalid(&tid);
		scan = ttl_index_beginscan(rel, index, &dirty, nkeys, 0);
		index_rescan(scan, scankeys, nkeys, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, state->holder_slot))
		{
			if (self != NULL && ItemPointerEquals(&state->holder_slot->tts_tid, self))
				continue;
			tid = state->holder_slot->tts_tid;
			xwait = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
			token = dirty.speculativeToken;
			if (!TransactionIdIsValid(xwait))
				expired = holder_expired(state, state->holder_slot);
			found = true;
			break;
		}
		ExecClearTuple(state->holder_slot);
		index_endscan(scan);
		if (!found)
			return;				/* no holder: nothing conflicts */
		if (TransactionIdIsValid(xwait))
		{
			/* its writer is busy: wait, then look at its newest version */
			if (token != 0)
				SpeculativeInsertionWait(dirty.xmin, token);
			else
				XactLockTableWait(xwait, rel, &tid, XLTW_InsertIndex);
			continue;
		}
		if (!expired)
			return;				/* a live item: it conflicts, as before */
		if (ItemPointerEquals(&tid, &tried))
			return;				/* its delete was refused: it conflicts */
		if (replace_holder(state, rel, index, &tid, values, isnull))
			return;
		if (!state->active)
			return;
		tried = tid;			/* changed meanwhile, or refused: look again */
	}
}

/* ---- the look's guard ---- */

/*
 * The earliest expiry of the row about to be written (Unix seconds), from
 * its purge key, or its deadline too; false when it never expires.
 */
static bool
row_expiry(TtlReplaceState *state, Datum doc, bool has_key, int64 key, int64 *expiry)
{
	if (TTL_HAS_DEADLINE(&state->policy))
		return ttl_datum_expiry_with_deadline(doc, state->policy.default_is_null,
											  state->policy.default_ttl,
											  state->policy.deadline_property, expiry);
	if (!has_key)
		return false;
	if (key < 0)
	{
		*expiry = ttl_purge_key_decode(TTL_KEY_OWN, key);
		return true;
	}
	if (state->policy.default_ttl <= 0)
		return false;
	*expiry = ttl_purge_key_decode(TTL_KEY_INHERITED, key) + state->policy.default_ttl;
	return true;
}

/* The real clock in whole Unix seconds (not ttl.now_override). */
static int64
real_unix_seconds(void)
{
	return GetCurrentTimestamp() / USECS_PER_SEC + TTL_UNIX_EPOCH_OFFSET;
}

/*
 * The row about to be written lowers its leaf's due floor to its purge key
 * and, when it is due already or about to be by the real clock, is
 * announced (due_floor.c, "Due writes"): another statement's look taken
 * before it cannot have seen it, and must not be trusted from now on.
 * Called after the row's probes (which may wait for other writers), as
 * late as can be before the row is inserted.
 */
static void
before_write(TtlReplaceState *state, Relation rel, HeapTuple newtuple)
{
	bool		isnull;
	Datum		doc = heap_getattr(newtuple, state->doc_attnum, RelationGetDescr(rel), &isnull);
	int64		key = 0;
	int64		expiry;
	bool		has_key;

	if (isnull)
		return;
	has_key = ttl_doc_purge_key(ttl_datum_jsonb_root(doc), &key);
	if (has_key)
		ttl_floor_lower(state->floor, key);
	if (state->announce && row_expiry(state, doc, has_key, key, &expiry) &&
		expiry <= real_unix_seconds() + DUE_MARGIN_SECONDS)
	{
		TtlFloor   *before = state->floor;

		ttl_floor_announce_due(&state->floor, RelationGetRelid(rel));
		/* this statement's own bump does not undo its own look */
		if (state->look != LOOK_NONE && state->floor == before)
			state->mark.due_writes++;
	}
}

/*
 * Take the statement's look (see "the look's guard" in the file header):
 * true when it may be trusted.  The policy is read as committed first (and
 * again after every policy change: the epoch).
 */
static bool
begin_look(TtlReplaceState *state, Relation rel)
{
	uint64		epoch = ttl_floor_epoch();

	if (state->floor == NULL || state->from_trigger)
		return false;			/* no preload, no slot, a shard: probe */
	/* a clock ahead of the writers' (ttl.now_override): probe */
	if (state->now_seconds > real_unix_seconds())
		return false;
	if (!state->policy_fresh || epoch != state->epoch_seen)
	{
		TtlContainer fresh;

		if (!ttl_read_container(state->container, &fresh))
		{
			state->active = false;	/* disabled meanwhile */
			return false;
		}
		if (state->filters != NULL &&
			(fresh.default_is_null || fresh.default_ttl != state->filter_default ||
			 TTL_HAS_DEADLINE(&fresh)))
			state->filters = NULL;
		state->policy = fresh;
		state->policy_fresh = true;
		state->epoch_seen = epoch;
		if (TTL_HAS_DEADLINE(&fresh))
			state->floor_usable = false;
		if (fresh.default_is_null || !fresh.replace_expired)
		{
			state->active = false;
			return false;
		}
	}
	return ttl_floor_look_begin(state->floor, RelationGetRelid(rel), epoch, &state->mark);
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
		if (!begin_look(state, rel))
			state->next_look = state->rows * 2;	/* probe meanwhile */
		else
		{
			if (!leaf_may_hold_due(state, rel))
			{
				state->look = LOOK_NOTHING_DUE;
				return;
			}
			if (state->rows == 2)
			{
				/* a statement planned to write many rows tries the filter at once */
				double		planned = statement_rows(state->leaf->ancestors,
													 state->leaf->nancestors);

				if (planned >= FILTER_FIRST_TRY &&
					make_filters(state, rel, mcxt,
								 (int64) Min(planned, 1e8) * FILTER_PLANNED_RATIO))
					state->look = LOOK_FILTER;
			}
		}
		if (!state->active)
			return;
	}
	else if (state->rows == state->next_filter && state->filters == NULL)
	{
		if (begin_look(state, rel) &&
			make_filters(state, rel, mcxt, state->rows * FILTER_RATIO))
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
		if (!filter_may_hold(state, i, values, isnull))
			continue;			/* no due item holds that key: nothing to probe */
		index = index_open(u->indexoid, NoLock);
		probe_index(state, rel, index, u, values, isnull, self);
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
		before_write(state, trigdata->tg_relation, newtuple);
}
