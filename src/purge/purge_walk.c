/*
 * purge_walk.c
 *		The walk of the direct path (purge_direct.c): the due rows of a
 *		container gathered from its purge indexes into one TID bitmap per
 *		partition, then taken page by page, in physical order, by the
 *		batches that follow (ttl.purge without max_rows, CALL ttl.run_purge,
 *		an append-only container's BRIN index).  An append-only container
 *		without a purge index (1.6) sweeps: its bitmap holds every page of
 *		each partition.  For each batch the walk is a row source
 *		(ttl_walk_source) that purge_direct.c's one loop takes; each row is
 *		re-checked and deleted by purge_rows.c.
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
#include "document/due_range.h"
#include "document/purge_key.h"
#include "purge/purge_internal.h"

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
	int32		default_ttl;	/* the due ranges' policy and clock, */
	int64		now_seconds;	/* as of the walk's start (due_range.c) */
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
ttl_new_walk(const TtlBatchPlan *plan, DirectLeaf *leaves, int nleaves,
			 MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "ttl purge walk",
											  ALLOCSET_DEFAULT_SIZES);
	TtlWalk *walk = MemoryContextAllocZero(cxt, sizeof(TtlWalk));
	int			i;

	ereport(DEBUG1,
			(errmsg_internal("ttl purge of \"%s\": new walk", get_rel_name(plan->relid))));
	walk->cxt = cxt;
	walk->with_inherited = plan->kinds[TTL_DUE_INHERITED];
	walk->with_deadline = plan->kinds[TTL_DUE_DEADLINE];
	walk->default_ttl = plan->policy->default_ttl;
	walk->now_seconds = plan->now_seconds;
	walk->nleaves = nleaves;
	walk->leaves = MemoryContextAlloc(cxt, sizeof(Oid) * Max(nleaves, 1));
	for (i = 0; i < nleaves; i++)
		walk->leaves[i] = RelationGetRelid(leaves[i].rel);
	return walk;
}

/* Whether walk takes the kinds wanted (else the caller starts a new one). */
bool
ttl_walk_wants(const TtlWalk *walk, const bool *kinds)
{
	return walk->with_inherited == kinds[TTL_DUE_INHERITED] &&
		walk->with_deadline == kinds[TTL_DUE_DEADLINE];
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
	for (kind = 0; kind < TTL_DUE_KINDS; kind++)
	{
		IndexScanDesc scan;
		ScanKeyData keys[2];
		int			nkeys = 2;
		TtlDueRange range;

		if (leaf->index[kind] == NULL)
			continue;
		/* the kind's due keys (due_range.c); BRIN: the pages that may hold them */
		range = ttl_due_range(kind, leaf->keyed[kind],
							  walk->default_ttl, walk->now_seconds);
		/* legal hold: from the floor past held rows (purge_hold.c) */
		ttl_due_range_from(&range, ttl_purge_hold_floor(kind));
		ttl_due_scankeys(&range, keys);
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
 * The pages one batch of a walk may start (32 MB of 8 kB pages): a batch
 * ends there even when it found fewer due rows than its limit, so that a
 * sweep (or a walk of page ranges) with few due rows in a big table is
 * cut into short transactions that each commit and are throttled, never
 * one that outlasts ttl.batch_timeout and starts over every round.
 */
#define WALK_BATCH_PAGES 4096

/* The walk as one batch's row source (purge_direct.c's loop). */
typedef struct WalkSource
{
	TtlRowSourceOps base;
	TtlWalk    *walk;
	DirectLeaf *leaves;
	int			nleaves;
	bool		bounded;		/* a limit: at most WALK_BATCH_PAGES pages */
	int			pages;			/* pages this batch started */
	DirectLeaf *leaf;			/* the leaf being taken (NULL: find it), */
	IndexFetchTableData *fetch; /* its fetch, */
	TupleTableSlot *slot;		/* slot */
	BlockNumber nblocks;		/* and length as this batch found it */
	bool		page_ready;		/* walk->page checked in this batch, and */
	int			end;			/* past its last offset worth trying */
	bool		done;			/* out: the walk is done */
} WalkSource;

static void
close_source_leaf(WalkSource *src)
{
	if (src->leaf == NULL)
		return;
	ExecDropSingleTupleTableSlot(src->slot);
	table_index_fetch_end(src->fetch);
	src->leaf = NULL;
}

/* Open the walk's current leaf for this batch; false when the walk is done. */
static bool
open_source_leaf(WalkSource *src, DirectRun *run)
{
	TtlWalk    *walk = src->walk;

	while (src->leaf == NULL)
	{
		int			i;

		if (walk->leaf >= walk->nleaves)
			return false;
		for (i = 0; i < src->nleaves; i++)
			if (RelationGetRelid(src->leaves[i].rel) == walk->leaves[walk->leaf])
				src->leaf = &src->leaves[i];
		if (src->leaf == NULL)
		{
			next_leaf(walk);	/* detached meanwhile: not ours any more */
			continue;
		}
		if (walk->tbm == NULL)
			gather_leaf(walk, src->leaf, run);

		/*
		 * Between batches, VACUUM may have cut empty pages off the end of
		 * the table (not during one: our lock keeps it from truncating).
		 */
		src->nblocks = RelationGetNumberOfBlocks(src->leaf->rel);
		src->fetch = table_index_fetch_begin(src->leaf->rel);
		src->slot = table_slot_create(src->leaf->rel, NULL);
	}
	return true;
}

/*
 * The next row version the run's snapshot sees through the walk's bitmap
 * (the root of a HOT chain at each TID; every chain of a lossy page):
 * false when the walk is done (src->done) or the batch has started
 * WALK_BATCH_PAGES pages.
 */
static bool
walk_source_next(TtlRowSourceOps *base, DirectRun *run, DirectLeaf **leaf,
				 TupleTableSlot **slot)
{
	WalkSource *src = (WalkSource *) base;
	TtlWalk    *walk = src->walk;

	for (;;)
	{
		ItemPointerData tid;
		bool		call_again = false;
		bool		all_dead = false;

		if (src->leaf == NULL)
		{
			if (!open_source_leaf(src, run))
			{
				src->done = true;
				return false;
			}
			src->page_ready = false;
		}
		if (!src->page_ready)
		{
			if (walk->page == NULL)
			{
				if (src->bounded && src->pages >= WALK_BATCH_PAGES)
					return false;	/* this batch read its share: the next goes on */
				src->pages++;
				walk->page = ttl_tbm_iterate(walk->iterator, &walk->page_buf) ?
					&walk->page_buf : NULL;
				if (walk->page == NULL)
				{
					close_source_leaf(src);
					next_leaf(walk);
					continue;
				}
				walk->pos = walk->page->ntuples < 0 ? FirstOffsetNumber : 0;
			}
			if (walk->page->blockno >= src->nblocks)
			{
				walk->page = NULL;	/* truncated away: nothing left there */
				continue;
			}
			if (walk->page->ntuples < 0 && walk->pos == FirstOffsetNumber)
				walk->end = lossy_page_end(src->leaf->rel, walk->page->blockno);
			src->end = walk->page->ntuples < 0 ? walk->end : walk->page->ntuples;
			src->page_ready = true;
		}
		if (walk->pos >= src->end)
		{
			walk->page = NULL;
			src->page_ready = false;
			continue;
		}
		/* lossy: every chain of the page; the expiry re-check decides */
		ItemPointerSet(&tid, walk->page->blockno,
					   walk->page->ntuples < 0 ? (OffsetNumber) walk->pos :
					   walk->page->offsets[walk->pos]);
		walk->pos++;
		if (table_index_fetch_tuple(src->fetch, &tid, run->snapshot, src->slot,
									&call_again, &all_dead))
		{
			*leaf = src->leaf;
			*slot = src->slot;
			return true;
		}
		CHECK_FOR_INTERRUPTS();
	}
}

static void
walk_source_end(TtlRowSourceOps *base)
{
	close_source_leaf((WalkSource *) base);
}

/*
 * The walk as the row source of one batch of at most limit rows (< 0: to
 * the walk's end, no page bound); ttl_walk_source_done says afterwards
 * whether the walk is done.
 */
TtlRowSourceOps *
ttl_walk_source(TtlWalk *walk, DirectLeaf *leaves, int nleaves, int64 limit)
{
	WalkSource *src = palloc0(sizeof(WalkSource));

	src->base.next = walk_source_next;
	src->base.end = walk_source_end;
	src->walk = walk;
	src->leaves = leaves;
	src->nleaves = nleaves;
	src->bounded = limit >= 0;
	return &src->base;
}

bool
ttl_walk_source_done(const TtlRowSourceOps *source)
{
	return ((const WalkSource *) source)->done;
}
