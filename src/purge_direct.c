/*
 * purge_direct.c
 *		The fast path of purge: find the due rows through the purge indexes
 *		and delete each with table_tuple_delete(wait = false), the way the
 *		executor's DELETE would, minus what it cannot need here.
 *
 * Why: the statement path (purge_batch.c) must first lock its batch FOR UPDATE
 * SKIP LOCKED, which writes a WAL record and dirties the page once per row
 * before the DELETE writes another, then fetches every row again by TID.
 * A delete that does not wait gives the same "skip what others hold"
 * without the lock pass: a row being updated, locked or deleted by another
 * transaction comes back as busy and is left for a later walk.
 *
 * The purge index is the single index of ttl.doc_purge_key (1.3), whose
 * key ranges hold each kind (purge_key.c encodes the bounds), or, on
 * containers enabled before 1.3, one partial index per kind.  A container
 * with a deadline property (rule 9) has a third walk, over its deadline
 * index in deadline order up to now; every row of every walk is re-checked
 * against the whole rule (lifetime or deadline) before it is deleted.
 *
 * An append-only container's purge index is a BRIN index on the same key:
 * its bitmap holds whole page ranges (lossy pages), every row of which is
 * re-checked; such a container always takes the walk (purge_batch.c).
 *
 * Two shapes.  A worker batch (and ttl.purge with max_rows) walks one
 * purge index in key order from where the previous batch stopped, deleting
 * as it goes; the index scan marks the entries of rows earlier batches
 * deleted as dead, so later walks skip them cheaply, and nothing is held
 * between transactions (the worker's memory stays flat).  ttl.purge
 * without max_rows and CALL ttl.run_purge put the due entries of both
 * purge indexes into one TID bitmap per partition (a TtlWalk) and visit
 * each page once, in physical order, like a bitmap heap scan; the
 * procedure's batches take the walk in turn and it ends with the CALL.
 *
 * It applies only when a plain DELETE would do nothing but delete
 * (purge_leaves.c decides and opens what it walks): a plain table without
 * inheritance children, or a partitioned one whose leaves are
 * all plain tables; no DELETE triggers (foreign keys pointing at the table
 * are triggers too), no rules, no row security that applies to the owner,
 * DELETE and SELECT granted, and valid purge indexes on every leaf.
 * Otherwise it returns the reason and the caller runs the statement, which
 * does everything a DELETE does.
 *
 * Locking: the caller holds RowExclusiveLock on the table and every
 * partition (taken without waiting) and runs as the table's owner.  Indexes
 * are locked AccessShareLock without waiting; an index we cannot lock now
 * is not used.  The expiry rule is checked on the row version the snapshot
 * sees just before it is deleted; a version changed since that snapshot
 * fails to delete and is skipped.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "nodes/tidbitmap.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "deadline.h"
#include "expiry.h"
#include "purge_internal.h"
#include "purge_key.h"

/* What all the deletes of one direct batch share. */
typedef struct DirectRun
{
	Snapshot	snapshot;
	CommandId	cid;
	MemoryContext row_cxt;
	int32		default_ttl;
	const char *deadline;		/* rule 9: the deadline property, or NULL */
	int64		now_seconds;
	TtlDirectBatch *out;
} DirectRun;

/*
 * Whether the row in slot is due now (its _ts, lifetime expiry second and
 * deadline set for the caller: the keys of the three walks).  Rule 9: due
 * when its lifetime or its deadline has come.  Never raises.
 */
static bool
row_is_due(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run,
		   int64 *ts, int64 *expiry, int64 *deadline)
{
	bool		isnull;
	Datum		doc;
	bool		due;
	Jsonb	   *jb;
	MemoryContext oldcxt;

	*deadline = TTL_DEADLINE_MALFORMED_KEY + 1;
	doc = slot_getattr(slot, leaf->doc_attno, &isnull);
	if (isnull)
		return false;
	oldcxt = MemoryContextSwitchTo(run->row_cxt);
	jb = DatumGetJsonbP(doc);
	due = ttl_doc_expiry(jb, run->default_ttl, ts, expiry) &&
		*expiry <= run->now_seconds;
	if (run->deadline != NULL &&
		ttl_doc_deadline(jb, run->deadline, deadline) == TTL_DEADLINE_VALID &&
		*deadline <= run->now_seconds)
		due = true;
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(run->row_cxt);
	return due;
}

/*
 * Delete the row version in slot without waiting.  Returns false when it
 * is busy (locked, being changed, or changed since the snapshot): it is
 * left for a later batch.
 */
static bool
delete_row(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run)
{
	TM_Result	result;
	TM_FailureData tmfd;

	result = table_tuple_delete(leaf->rel, &slot->tts_tid, run->cid, run->snapshot,
								InvalidSnapshot, false, &tmfd, false);
	if (result == TM_BeingModified || result == TM_Updated || result == TM_Deleted)
		return false;
	if (result != TM_Ok && result != TM_SelfModified)
		elog(ERROR, "unexpected table_tuple_delete status %d", (int) result);
	if (result == TM_Ok)
		run->out->deleted++;
	return true;
}

/*
 * Delete the row version visible through tid (the root of a HOT chain) if
 * it is due.  Returns whether it counts as found: visible, due, not busy.
 */
static bool
delete_candidate(DirectLeaf *leaf, IndexFetchTableData *fetch, TupleTableSlot *slot,
				 ItemPointer tid, DirectRun *run)
{
	bool		call_again = false;
	bool		all_dead = false;
	int64		ts;
	int64		expiry;
	int64		deadline;

	CHECK_FOR_INTERRUPTS();
	if (!table_index_fetch_tuple(fetch, tid, run->snapshot, slot,
								 &call_again, &all_dead) ||
		!row_is_due(leaf, slot, run, &ts, &expiry, &deadline))
		return false;
	return delete_row(leaf, slot, run);
}

/*
 * A batch's walk of one leaf's purge index of that kind, in key order from
 * lower_key to cutoff, deleting each due row as it is found, until
 * out->found reaches limit.  The index scan itself checks visibility, so
 * the entries of rows earlier batches deleted are marked dead in the index
 * as it passes them and later walks skip them cheaply.
 */
static void
walk_leaf(DirectLeaf *leaf, int kind, int64 lower_key, int64 cutoff, int64 limit,
		  DirectRun *run)
{
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;

	if (kind == PURGE_DEADLINE)
	{
		/* deadlines as they are, above the key of malformed ones */
		lower_key = Max(lower_key, TTL_DEADLINE_MALFORMED_KEY + 1);
	}
	else if (leaf->keyed[kind])
	{
		/* the kind's range of the single index (purge_key.c) */
		lower_key = ttl_purge_key_encode(kind, lower_key);
		cutoff = ttl_purge_key_encode(kind, cutoff);
	}
	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(lower_key));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(cutoff));
	scan = ttl_index_beginscan(leaf->rel, leaf->index[kind], run->snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	slot = table_slot_create(leaf->rel, NULL);
	while (run->out->found < limit &&
		   index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		int64		ts;
		int64		expiry;
		int64		deadline;

		CHECK_FOR_INTERRUPTS();
		if (!row_is_due(leaf, slot, run, &ts, &expiry, &deadline))
			continue;			/* cannot be, unless the index lies: not ours */
		if (!delete_row(leaf, slot, run))
			continue;			/* busy: left for a later walk */
		run->out->found++;
		run->out->last_leaf = RelationGetRelid(leaf->rel);
		run->out->last_key = kind == PURGE_DEADLINE ? deadline :
			kind == PURGE_OWN ? expiry : ts;
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
}

/*
 * A walk of the direct path: the due rows of a container, found through
 * its purge indexes into one TID bitmap per leaf (bounded by work_mem,
 * lossy beyond), taken page by page by the batches that follow, each in
 * its own transaction.  Every page is visited once per walk, like a bitmap
 * heap scan, and no batch walks again over index entries of rows earlier
 * batches deleted.  A TID may meanwhile hold another row (vacuum, then an
 * insert): every delete reads the row as its snapshot sees it and checks
 * the rule on it first.  A walk lives in its own memory context.
 */
struct TtlWalk
{
	MemoryContext cxt;
	bool		with_inherited; /* both kinds, or only items with their own ttl */
	bool		with_deadline;	/* and the deadline index (rule 9) */
	int64		cutoff[TTL_PURGE_KINDS];	/* inherited: _ts <= now - default;
											 * own: expiry <= now; deadline <= now */
	int			nleaves;
	Oid		   *leaves;			/* in OID order */
	int			leaf;			/* the leaf being taken */
	TIDBitmap  *tbm;			/* its due rows; NULL: not gathered yet */
	TtlTbmIterator *iterator;
	TtlTbmPage *page;			/* the page being taken; NULL: the next one */
	TtlTbmPage page_buf;		/* where page points when set */
	int			pos;			/* next offsets[] index, or lossy: offset */
};

void
ttl_free_walk(TtlWalk *walk)
{
	if (walk != NULL)
		MemoryContextDelete(walk->cxt);
}

static TtlWalk *
new_walk(Oid relid, DirectLeaf *leaves, int nleaves, const bool *want,
		 const int64 *cutoff, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "ttl purge walk",
											  ALLOCSET_DEFAULT_SIZES);
	TtlWalk *walk = MemoryContextAllocZero(cxt, sizeof(TtlWalk));
	int			i;

	ereport(DEBUG1,
			(errmsg_internal("ttl purge of \"%s\": new walk", get_rel_name(relid))));
	walk->cxt = cxt;
	walk->with_inherited = want[0];
	walk->with_deadline = want[2];
	for (i = 0; i < TTL_PURGE_KINDS; i++)
		walk->cutoff[i] = cutoff[i];
	walk->nleaves = nleaves;
	walk->leaves = MemoryContextAlloc(cxt, sizeof(Oid) * Max(nleaves, 1));
	for (i = 0; i < nleaves; i++)
		walk->leaves[i] = RelationGetRelid(leaves[i].rel);
	return walk;
}

/* The due rows of one leaf, from its purge indexes, into the walk's bitmap. */
static void
gather_leaf(TtlWalk *walk, DirectLeaf *leaf, DirectRun *run)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(walk->cxt);
	int			kind;

	walk->tbm = tbm_create(work_mem * 1024L, NULL);
	for (kind = 0; kind < TTL_PURGE_KINDS; kind++)
	{
		IndexScanDesc scan;
		ScanKeyData keys[2];
		int			nkeys = 1;

		if (leaf->index[kind] == NULL)
			continue;
		if (kind == PURGE_DEADLINE)
		{
			/* deadlines up to now, above the key of malformed ones */
			ScanKeyInit(&keys[0], 1, BTLessEqualStrategyNumber, F_INT8LE,
						Int64GetDatum(walk->cutoff[kind]));
			ScanKeyInit(&keys[1], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
						Int64GetDatum(TTL_DEADLINE_MALFORMED_KEY + 1));
			nkeys = 2;
		}
		else if (leaf->keyed[kind])
		{
			/* the kind's range of the single index (purge_key.c) */
			ScanKeyInit(&keys[0], 1, BTLessEqualStrategyNumber, F_INT8LE,
						Int64GetDatum(ttl_purge_key_encode(kind, walk->cutoff[kind])));
			ScanKeyInit(&keys[1], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
						Int64GetDatum(ttl_purge_key_low(kind)));
			/* BRIN looks its operators up by the right-hand type */
			keys[0].sk_subtype = INT8OID;
			keys[1].sk_subtype = INT8OID;
			nkeys = 2;
		}
		else
			ScanKeyInit(&keys[0], 1, BTLessEqualStrategyNumber, F_INT8LE,
						Int64GetDatum(walk->cutoff[kind]));
		scan = ttl_index_beginscan_bitmap(leaf->index[kind], run->snapshot, nkeys);
		index_rescan(scan, keys, nkeys, NULL, 0);
		(void) index_getbitmap(scan, walk->tbm);
		index_endscan(scan);
	}
	walk->iterator = ttl_tbm_begin_iterate(walk->tbm);
	walk->page = NULL;
	MemoryContextSwitchTo(oldcxt);
}

/* Done with the current leaf's bitmap: on to the next leaf. */
static void
next_leaf(TtlWalk *walk)
{
	if (walk->tbm != NULL)
	{
		ttl_tbm_end_iterate(walk->iterator);
		tbm_free(walk->tbm);
	}
	walk->tbm = NULL;
	walk->iterator = NULL;
	walk->page = NULL;
	walk->leaf++;
}

/*
 * Take rows of the current page until it is done or out->found reaches
 * limit (< 0: no limit).
 */
static void
take_page(TtlWalk *walk, DirectLeaf *leaf, IndexFetchTableData *fetch,
		  TupleTableSlot *slot, int64 limit, DirectRun *run)
{
	TtlTbmPage *page = walk->page;
	bool		lossy = page->ntuples < 0;
	int			end = lossy ? MaxHeapTuplesPerPage + 1 : page->ntuples;
	ItemPointerData tid;

	while (walk->pos < end && (limit < 0 || run->out->found < limit))
	{
		/* lossy: every chain of the page; the expiry re-check decides */
		ItemPointerSet(&tid, page->blockno,
					   lossy ? (OffsetNumber) walk->pos : page->offsets[walk->pos]);
		walk->pos++;
		if (delete_candidate(leaf, fetch, slot, &tid, run))
			run->out->found++;
	}
	if (walk->pos >= end)
		walk->page = NULL;
}

/*
 * Go on with the walk until out->found reaches limit (< 0: to its end).
 * Returns whether the walk is done.
 */
static bool
take_walk(TtlWalk *walk, DirectLeaf *leaves, int nleaves, int64 limit,
		  DirectRun *run)
{
	while (limit < 0 || run->out->found < limit)
	{
		DirectLeaf *leaf = NULL;
		IndexFetchTableData *fetch;
		TupleTableSlot *slot;
		BlockNumber nblocks;
		int			i;

		if (walk->leaf >= walk->nleaves)
			return true;
		for (i = 0; i < nleaves; i++)
			if (RelationGetRelid(leaves[i].rel) == walk->leaves[walk->leaf])
				leaf = &leaves[i];
		if (leaf == NULL)
		{
			next_leaf(walk);	/* detached meanwhile: not ours any more */
			continue;
		}
		if (walk->tbm == NULL)
			gather_leaf(walk, leaf, run);

		/*
		 * Between batches, VACUUM may have cut empty pages off the end of
		 * the table (not during one: our lock keeps it from truncating).
		 */
		nblocks = RelationGetNumberOfBlocks(leaf->rel);
		fetch = table_index_fetch_begin(leaf->rel);
		slot = table_slot_create(leaf->rel, NULL);
		while (limit < 0 || run->out->found < limit)
		{
			if (walk->page == NULL)
			{
				walk->page = ttl_tbm_iterate(walk->iterator, &walk->page_buf) ?
					&walk->page_buf : NULL;
				walk->pos = walk->page && walk->page->ntuples < 0 ? FirstOffsetNumber : 0;
				if (walk->page == NULL)
					break;
			}
			if (walk->page->blockno >= nblocks)
			{
				walk->page = NULL;	/* truncated away: nothing left there */
				continue;
			}
			take_page(walk, leaf, fetch, slot, limit, run);
		}
		ExecDropSingleTupleTableSlot(slot);
		table_index_fetch_end(fetch);
		if (walk->page == NULL && walk->tbm != NULL &&
			(limit < 0 || run->out->found < limit))
			next_leaf(walk);
	}
	return false;
}

/* A statement's snapshot and command id, as SPI gives the statement path. */
static void
begin_run(DirectRun *run, int32 default_ttl, const char *deadline, int64 now_seconds,
		  TtlDirectBatch *out)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	run->snapshot = GetActiveSnapshot();
	run->cid = GetCurrentCommandId(true);
	run->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl purge row",
										 ALLOCSET_SMALL_SIZES);
	run->default_ttl = default_ttl;
	run->deadline = deadline;
	run->now_seconds = now_seconds;
	run->out = out;
}

static void
end_run(DirectRun *run)
{
	MemoryContextDelete(run->row_cxt);
	PopActiveSnapshot();
	CommandCounterIncrement();
}

/*
 * Delete due rows of the kinds wanted (want[0]: items inheriting the
 * default, want[1]: items with their own ttl, want[2]: items whose
 * deadline, rule 9, has come: the container's deadline index, keyed by
 * ttl.doc_deadline_key(doc, deadline)).
 *
 * With walk (CALL ttl.run_purge) or limit < 0 (ttl.purge without
 * max_rows): go on with the walk of both wanted indexes (*walk, a child of
 * walk_parent, kept by the caller across batches; a new one when there is
 * none) until limit rows not skipped as busy are gone; out->range_done
 * when the walk is done (it is then freed).
 *
 * Otherwise (the worker, ttl.purge with max_rows), one batch of limit
 * rows: walk the one wanted index, leaf by leaf (in OID order), in key
 * order from (start_leaf, lower_key); out->last_leaf and last_key say where
 * it stopped (the next batch's keyset).
 *
 * Returns NULL when it ran, else why the direct path does not apply
 * (nothing done).
 */
const char *
ttl_purge_direct(Oid relid, const char *doc_column, const bool *want,
				 Oid start_leaf, int64 lower_key, int64 limit,
				 TtlWalk **walk, MemoryContext walk_parent,
				 int32 default_ttl, const char *deadline, int64 now_seconds,
				 TtlDirectBatch *out)
{
	int64		cutoff[TTL_PURGE_KINDS] = {now_seconds - default_ttl, now_seconds, now_seconds};
	DirectLeaf *leaves;
	int			nleaves;
	const char *obstacle;
	DirectRun	run;
	TtlWalk    *one_shot = NULL;
	int			i;

	memset(out, 0, sizeof(TtlDirectBatch));
	out->last_leaf = start_leaf;
	out->last_key = lower_key;
	obstacle = ttl_open_leaves(relid, doc_column, want, deadline, &leaves, &nleaves);
	if (obstacle != NULL)
	{
		ttl_close_leaves(leaves, nleaves);
		return obstacle;
	}
	for (i = 0; i < nleaves && walk == NULL && limit >= 0; i++)
	{
		/* a BRIN index (append-only) gives pages, not keys in order */
		if (leaves[i].brin)
		{
			ttl_close_leaves(leaves, nleaves);
			return "its purge index is a BRIN index, which only a walk can use";
		}
	}
	begin_run(&run, default_ttl, deadline, now_seconds, out);
	if (walk == NULL && limit < 0)
	{
		walk = &one_shot;
		walk_parent = CurrentMemoryContext;
	}
	if (walk != NULL)
	{
		if (*walk != NULL && ((*walk)->with_inherited != want[0] ||
							  (*walk)->with_deadline != want[2]))
		{
			ttl_free_walk(*walk);
			*walk = NULL;
		}
		if (*walk == NULL)
			*walk = new_walk(relid, leaves, nleaves, want, cutoff, walk_parent);
		out->range_done = take_walk(*walk, leaves, nleaves, limit, &run);
		if (out->range_done)
		{
			ttl_free_walk(*walk);
			*walk = NULL;
		}
	}
	else
	{
		int			kind = want[0] ? PURGE_INHERITED : want[1] ? PURGE_OWN : PURGE_DEADLINE;

		for (i = 0; i < nleaves && out->found < limit; i++)
		{
			Oid			leafid = RelationGetRelid(leaves[i].rel);

			if (leafid >= start_leaf)	/* else done earlier in this walk */
				walk_leaf(&leaves[i], kind,
						  leafid == start_leaf ? lower_key : PG_INT64_MIN,
						  cutoff[kind], limit, &run);
		}
	}
	end_run(&run);
	ttl_close_leaves(leaves, nleaves);
	return obstacle;
}
