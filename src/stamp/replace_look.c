/*
 * replace_look.c
 *		Rule 10's per-statement look: whether a statement's leaf holds
 *		anything due (the shortcut), the keys of its due items (the due
 *		filter, shared across statements through due_set.c), and the
 *		look's guard (a row due when written is announced in the leaf's
 *		due-floor slot; a look is begun and trusted only as due_floor.c's
 *		due writes and policy epoch allow).  See replace.c's header.
 *
 * Locking: the purge and deadline indexes are read with a dirty snapshot
 * under the statement's locks (the purge index opened with
 * AccessShareLock); the policy is read as committed (a fresh catalog
 * snapshot); the shared counters are due_floor.c's.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/due_range.h"
#include "document/purge_key.h"
#include "stamp/due_set.h"
#include "stamp/replace_look.h"

/* A row whose expiry is at most this far ahead of the clock is announced. */
#define DUE_MARGIN_SECONDS	2

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
bool
ttl_look_may_hold_due(TtlReplaceState *state, Relation rel)
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
 * right after a look (ttl_look_begin); true when made.  From the shared set
 * when one was made under the same look's key (due_set.c), else by listing
 * the due items, when they are at most cap, and then published.
 */
bool
ttl_look_make_filters(TtlReplaceState *state, Relation rel, MemoryContext mcxt, int64 cap)
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
bool
ttl_look_filter_may_hold(TtlReplaceState *state, int i, Datum *values, bool *isnull)
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
void
ttl_look_before_write(TtlReplaceState *state, Relation rel, HeapTuple newtuple)
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
 * Read the container's policy as committed now into the statement's state
 * (the look, and the probe before a replacement); a list of due items made
 * under another default, or now that a deadline applies, no longer holds.
 * false: the container was disabled meanwhile (the statement is done).
 */
bool
ttl_look_read_committed_policy(TtlReplaceState *state)
{
	TtlContainer fresh;

	if (!ttl_read_container(state->container, &fresh))
	{
		state->active = false;
		return false;
	}
	if (state->filters != NULL &&
		(fresh.default_is_null || fresh.default_ttl != state->filter_default ||
		 TTL_HAS_DEADLINE(&fresh)))
	{
		state->filters = NULL;
		state->look = LOOK_NONE;
	}
	state->policy = fresh;
	return true;
}

/*
 * Take the statement's look (see "the look's guard" above):
 * true when it may be trusted.  The policy is read as committed first (and
 * again after every policy change: the epoch).
 */
bool
ttl_look_begin(TtlReplaceState *state, Relation rel)
{
	uint64		epoch = ttl_floor_epoch();

	if (state->floor == NULL || state->from_trigger)
		return false;			/* no preload, no slot, a shard: probe */
	/* a clock ahead of the writers' (ttl.now_override): probe */
	if (state->now_seconds > real_unix_seconds())
		return false;
	if (!state->policy_fresh || epoch != state->epoch_seen)
	{
		const TtlContainer *fresh = &state->policy;

		if (!ttl_look_read_committed_policy(state))
			return false;
		state->policy_fresh = true;
		state->epoch_seen = epoch;
		if (TTL_HAS_DEADLINE(fresh))
			state->floor_usable = false;
		if (fresh->default_is_null || !fresh->replace_expired)
		{
			state->active = false;
			return false;
		}
	}
	return ttl_floor_look_begin(state->floor, RelationGetRelid(rel), epoch, &state->mark);
}
