/*
 * index_count.c
 *		Counting the rows a snapshot sees through a btree on one int8 key
 *		(a container's purge index, purge_key.c), by walking its leaf level
 *		from left to right instead of fetching entries one by one through
 *		the index AM: ttl.preview (preview.c) counts a 10M-row container in
 *		a fraction of a second this way.
 *
 * Exactness: every entry of the index is one row version (the root of a
 * HOT chain).  An entry counts when its row is visible to the snapshot:
 * entries whose heap block is all-visible in the visibility map count
 * without touching the heap, as in an index-only scan; for the others the
 * HOT chain is followed on the heap page and the snapshot decides.
 * A posting-list tuple (deduplication) holds many heap TIDs under one key:
 * each is checked on its own.  Entries marked LP_DEAD (known dead to every
 * snapshot) are skipped, except during recovery, where those hints cannot
 * be trusted (nbtree's own rule).
 *
 * Locking, as nbtree's forward scans (src/backend/access/nbtree/README):
 * AccessShareLock on the index and the table is the caller's.  Each page
 * is read under a share buffer lock, one page at a time, never coupled.
 * While it is held, its right-link is remembered and each entry is looked
 * up in the visibility map (which takes no buffer lock, only a pin: never
 * a deadlock; it may read a map page meanwhile); entries on all-visible
 * blocks are counted at once.  Then the lock is released and the pin kept
 * while the remaining entries are checked on the heap, so that VACUUM
 * (which needs a cleanup lock on the leaf page to remove its entries)
 * cannot recycle those TIDs for other rows meanwhile: the reason
 * index-only scans keep their pin.  Following the remembered right-link is
 * safe against concurrent splits (entries moved right were read already;
 * entries inserted since are not visible to the snapshot) and deleted or
 * half-dead pages are stepped over.  No heap buffer lock is taken while an
 * index buffer is locked.
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "insight/index_count.h"

/*
 * The entries of a leaf page whose heap block was not all-visible: their
 * keys and TIDs, checked on the heap once the page's lock is released.
 */
typedef struct Pending
{
	int			n;
	bool		isnull[MaxTIDsPerBTreePage];
	int64		key[MaxTIDsPerBTreePage];
	ItemPointerData tid[MaxTIDsPerBTreePage];
} Pending;

/*
 * Heap blocks per visibility-map page, as visibilitymap.c lays them out
 * (two bits per block on a page's content area).  Only used to keep one
 * pinned map page per slot: were it wrong, visibilitymap_get_status would
 * just read the right page itself.
 */
#define VM_BLOCKS_PER_PAGE \
	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * (BITS_PER_BYTE / BITS_PER_HEAPBLOCK))

/* What the walk keeps across pages to check heap visibility. */
typedef struct HeapCheck
{
	Relation	heap;
	Snapshot	snapshot;
	Buffer	   *vmbuffers;		/* one pinned map page per slot */
	int			nvmbuffers;
	BlockNumber last_block;		/* the block of the last VM lookup */
	bool		last_all_visible;
	IndexFetchTableData *fetch;
	TupleTableSlot *slot;
} HeapCheck;

/* The share-locked page blkno, checked to be a btree page. */
static Buffer
read_locked(Relation index, BlockNumber blkno)
{
	Buffer		buf = ReadBuffer(index, blkno);

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	_bt_checkpage(index, buf);
	return buf;
}

/*
 * The leftmost leaf page, or P_NONE when the index is empty: from the
 * (fast) root down the first downlink of each level, moving right over
 * pages being deleted, as nbtree's _bt_get_endpoint does.
 */
static BlockNumber
leftmost_leaf(Relation index)
{
	Buffer		buf;
	Page		page;
	BTMetaPageData *meta;
	BlockNumber blkno;
	BTPageOpaque opaque;

	buf = read_locked(index, BTREE_METAPAGE);
	meta = BTPageGetMeta(BufferGetPage(buf));
	if (meta->btm_magic != BTREE_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a btree", RelationGetRelationName(index))));
	blkno = meta->btm_fastroot;
	UnlockReleaseBuffer(buf);

	while (blkno != P_NONE)
	{
		CHECK_FOR_INTERRUPTS();
		buf = read_locked(index, blkno);
		page = BufferGetPage(buf);
		opaque = BTPageGetOpaque(page);
		if (P_IGNORE(opaque))
		{
			blkno = opaque->btpo_next;
			if (blkno == P_NONE)
				elog(ERROR, "fell off the end of index \"%s\"",
					 RelationGetRelationName(index));
		}
		else if (P_ISLEAF(opaque))
		{
			UnlockReleaseBuffer(buf);
			return blkno;
		}
		else
			blkno = BTreeTupleGetDownLink((IndexTuple)
										  PageGetItem(page, PageGetItemId(page, P_FIRSTDATAKEY(opaque))));
		UnlockReleaseBuffer(buf);
	}
	return P_NONE;
}

/* Whether the visibility map says the heap block of tid is all-visible. */
static inline bool
block_all_visible(HeapCheck *hc, ItemPointer tid)
{
	BlockNumber block = ItemPointerGetBlockNumber(tid);

	if (block != hc->last_block)
	{
		/*
		 * Keys in index order jump between distant heap blocks, so one
		 * pinned map page per slot saves a buffer lookup per entry.
		 */
		int			slot = block / VM_BLOCKS_PER_PAGE;

		if (slot >= hc->nvmbuffers)
		{
			int			n = Max(slot + 1, hc->nvmbuffers * 2);

			hc->vmbuffers = repalloc(hc->vmbuffers, sizeof(Buffer) * n);
			while (hc->nvmbuffers < n)
				hc->vmbuffers[hc->nvmbuffers++] = InvalidBuffer;
		}
		hc->last_block = block;
		hc->last_all_visible = VM_ALL_VISIBLE(hc->heap, block, &hc->vmbuffers[slot]);
	}
	return hc->last_all_visible;
}

/*
 * Count the entries of a share-locked leaf page (not ignored): those whose
 * heap block is all-visible go to visit at once, the others to *pending.
 *
 * The visibility map is read while the page is locked, after the entry:
 * a writer clears a block's bit before it inserts the index entry of a new
 * row version there, so a bit read after the entry is never stale for it
 * (a bit read before this page, or cached from another page, could be).
 */
static void
count_leaf(Relation index, Page page, BTPageOpaque opaque, bool skip_killed,
		   HeapCheck *hc, Pending *pending, TtlKeyVisitor visit, void *arg)
{
	TupleDesc	desc = RelationGetDescr(index);
	OffsetNumber off;
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

	pending->n = 0;
	hc->last_block = InvalidBlockNumber;
	for (off = P_FIRSTDATAKEY(opaque); off <= maxoff; off = OffsetNumberNext(off))
	{
		ItemId		itemid = PageGetItemId(page, off);
		IndexTuple	itup;
		bool		isnull;
		int64		key;
		Datum		d;
		int64		n = 0;
		int			ntids;
		int			i;

		if (skip_killed && ItemIdIsDead(itemid))
			continue;
		itup = (IndexTuple) PageGetItem(page, itemid);
		d = index_getattr(itup, 1, desc, &isnull);
		key = isnull ? 0 : DatumGetInt64(d);
		ntids = BTreeTupleIsPosting(itup) ? BTreeTupleGetNPosting(itup) : 1;
		for (i = 0; i < ntids; i++)
		{
			ItemPointer tid = BTreeTupleIsPosting(itup) ?
				BTreeTupleGetPostingN(itup, i) : &itup->t_tid;

			if (block_all_visible(hc, tid))
				n++;
			else
			{
				pending->isnull[pending->n] = isnull;
				pending->key[pending->n] = key;
				pending->tid[pending->n++] = *tid;
			}
		}
		if (n > 0)
			visit(arg, isnull, key, n);
	}
}

/* Whether the snapshot sees the row whose HOT chain starts at tid. */
static bool
row_visible(HeapCheck *hc, ItemPointer tid)
{
	ItemPointerData probe = *tid;
	bool		call_again = false;
	bool		all_dead = false;
	bool		found;

	found = table_index_fetch_tuple(hc->fetch, &probe, hc->snapshot, hc->slot,
									&call_again, &all_dead);
	ExecClearTuple(hc->slot);
	return found;
}

/*
 * Walk the whole leaf level of index (a btree on one int8 key of heap) and
 * call visit with each key and a number (> 0) of its heap TIDs whose row
 * the (MVCC) snapshot sees; a key may come several times, in no particular
 * order.  visit may be called with the index page locked: it must only
 * count, never block or raise.
 */
void
ttl_btree_count_visible(Relation heap, Relation index, Snapshot snapshot,
						TtlKeyVisitor visit, void *arg)
{
	HeapCheck	hc;
	Pending    *pending = palloc(sizeof(Pending));
	bool		skip_killed = !RecoveryInProgress();
	BlockNumber blkno;
	int			i;

	if (index->rd_rel->relam != BTREE_AM_OID ||
		IndexRelationGetNumberOfKeyAttributes(index) != 1 ||
		TupleDescAttr(RelationGetDescr(index), 0)->atttypid != INT8OID ||
		!IsMVCCSnapshot(snapshot))
		elog(ERROR, "ttl_btree_count_visible: unsupported index \"%s\"",
			 RelationGetRelationName(index));

	hc.heap = heap;
	hc.snapshot = snapshot;
	hc.nvmbuffers = 8;
	hc.vmbuffers = palloc(sizeof(Buffer) * hc.nvmbuffers);
	for (i = 0; i < hc.nvmbuffers; i++)
		hc.vmbuffers[i] = InvalidBuffer;
	hc.last_block = InvalidBlockNumber;
	hc.last_all_visible = false;
	hc.fetch = table_index_fetch_begin(heap);
	hc.slot = table_slot_create(heap, NULL);

	blkno = leftmost_leaf(index);
	while (blkno != P_NONE)
	{
		Buffer		buf;
		Page		page;
		BTPageOpaque opaque;

		CHECK_FOR_INTERRUPTS();
		buf = read_locked(index, blkno);
		page = BufferGetPage(buf);
		opaque = BTPageGetOpaque(page);
		blkno = opaque->btpo_next;
		if (P_IGNORE(opaque))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		if (!P_ISLEAF(opaque))
			elog(ERROR, "index \"%s\": page %u on the leaf level is not a leaf",
				 RelationGetRelationName(index), BufferGetBlockNumber(buf));
		count_leaf(index, page, opaque, skip_killed, &hc, pending, visit, arg);
		/* keep the pin: VACUUM cannot remove these entries meanwhile */
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		for (i = 0; i < pending->n; i++)
			if (row_visible(&hc, &pending->tid[i]))
				visit(arg, pending->isnull[i], pending->key[i], 1);
		ReleaseBuffer(buf);
	}

	for (i = 0; i < hc.nvmbuffers; i++)
		if (BufferIsValid(hc.vmbuffers[i]))
			ReleaseBuffer(hc.vmbuffers[i]);
	pfree(hc.vmbuffers);
	ExecDropSingleTupleTableSlot(hc.slot);
	table_index_fetch_end(hc.fetch);
	pfree(pending);
}
