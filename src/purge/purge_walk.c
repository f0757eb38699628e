/*
 * purge_walk.c
 *		The walk of the direct path (purge_direct.c): the due rows of a
 *		container gathered from its purge indexes into one TID bitmap per
 *		partition, then taken page by page, in physical order, by the
 *		batches that follow (ttl.purge without max_rows, CALL ttl.run_purge,
 *		an append-only container's BRIN index).  An append-only container
 *		without a purge index (1.6) sweeps: its bitmap holds every page of
 *		each partition.  Each row is re-checked and deleted by purge_rows.c.
 *
 * Locking: the caller's (purge_direct.c): RowExclusiveLock on the table
 * and every partition, the purge indexes opened by purge_leaves.c, as the
 * table's owner.  Between batches a walk holds no lock, buffer or
 * snapshot: only its bitmaps and iterator, in its own memory context.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "base/compat.h"
#include "document/deadline.h"
#include "document/purge_key.h"
#include "purge/purge_internal.h"

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
		!ttl_direct_row_is_due(leaf, slot, run, &ts, &expiry, &deadline))
		return false;
	return ttl_direct_delete_row(leaf, slot, run);
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
	int			end;			/* lossy: past the page's last line pointer */
};

void
ttl_free_walk(TtlWalk *walk)
{
	if (walk != NULL)
		MemoryContextDelete(walk->cxt);
}

TtlWalk *
ttl_new_walk(Oid relid, DirectLeaf *leaves, int nleaves, const bool *want,
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

/* Whether walk takes the kinds wanted (else the caller starts a new one). */
bool
ttl_walk_wants(const TtlWalk *walk, const bool *want)
{
	return walk->with_inherited == want[0] && walk->with_deadline == want[2];
}

/*
 * The due rows of one leaf, from its purge indexes, into the walk's bitmap;
 * without a purge index (sweep), every page the leaf has now, as lossy
 * pages (a few hundred kB for a 10 GB table).  Pages added
 * later hold rows written after the walk began: the next walk takes them.
 */
static void
gather_leaf(TtlWalk *walk, DirectLeaf *leaf, DirectRun *run)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(walk->cxt);
	int			kind;

	walk->tbm = tbm_create(work_mem * 1024L, NULL);
	if (leaf->sweep)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(leaf->rel);
		BlockNumber blkno;

		for (blkno = 0; blkno < nblocks; blkno++)
			tbm_add_page(walk->tbm, blkno);
	}
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
			/* legal hold: from the floor past held rows (purge_hold.c) */
			ScanKeyInit(&keys[1], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
						Int64GetDatum(ttl_purge_hold_walk_low(kind, false,
															  TTL_DEADLINE_MALFORMED_KEY + 1)));
			nkeys = 2;
		}
		else if (leaf->keyed[kind])
		{
			/* the kind's range of the single index (purge_key.c) */
			ScanKeyInit(&keys[0], 1, BTLessEqualStrategyNumber, F_INT8LE,
						Int64GetDatum(ttl_purge_key_encode(kind, walk->cutoff[kind])));
			/* legal hold: from the floor past held rows (purge_hold.c) */
			ScanKeyInit(&keys[1], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
						Int64GetDatum(ttl_purge_hold_walk_low(kind, true,
															  ttl_purge_key_low(kind))));
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
 * Past the last line pointer of a page taken whole (lossy): the offsets
 * worth trying.  Line pointers added after this look belong to row
 * versions newer than the walk's snapshot, or to rows the next walk takes.
 */
static int
lossy_page_end(Relation rel, BlockNumber blkno)
{
	Buffer		buf = ReadBuffer(rel, blkno);
	OffsetNumber maxoff;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	maxoff = PageGetMaxOffsetNumber(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	return maxoff + 1;
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
	int			end = lossy ? walk->end : page->ntuples;
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
 * The pages one batch of a walk may start (32 MB of 8 kB pages): a batch
 * ends there even when it found fewer due rows than its limit, so that a
 * sweep (or a walk of page ranges) with few due rows in a big table is
 * cut into short transactions that each commit and are throttled, never
 * one that outlasts ttl.batch_timeout and starts over every round.
 */
#define WALK_BATCH_PAGES 4096

/*
 * Go on with the walk until out->found reaches limit (< 0: to its end, no
 * page bound), or the batch has started WALK_BATCH_PAGES pages.  Returns
 * whether the walk is done.
 */
bool
ttl_take_walk(TtlWalk *walk, DirectLeaf *leaves, int nleaves, int64 limit,
			  DirectRun *run)
{
	int			pages = 0;

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
				if (limit >= 0 && pages >= WALK_BATCH_PAGES)
					break;		/* this batch read its share: the next goes on */
				pages++;
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
			if (walk->page->ntuples < 0 && walk->pos == FirstOffsetNumber)
				walk->end = lossy_page_end(leaf->rel, walk->page->blockno);
			take_page(walk, leaf, fetch, slot, limit, run);
		}
		ExecDropSingleTupleTableSlot(slot);
		table_index_fetch_end(fetch);
		if (limit >= 0 && pages >= WALK_BATCH_PAGES && walk->page == NULL)
			return false;		/* bound reached between pages */
		if (walk->page == NULL && walk->tbm != NULL &&
			(limit < 0 || run->out->found < limit))
			next_leaf(walk);
	}
	return false;
}

