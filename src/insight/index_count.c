/*
 * index_count.c
 *		Counting the rows a snapshot sees through a btree on one int8 key
 *		(a container's purge index, purge_key.c), through the index AM, as
 *		an index-only scan counts: ttl.preview (preview.c) reads its
 *		figures from the keys alone, and ttl.stats (stats.c) counts a due
 *		range up to a limit and finds its first key, without planning a
 *		query per container.
 *
 * Exactness: the scan returns every entry of the index once, with its key
 * (a posting-list tuple, from deduplication, once per heap TID), skipping
 * entries the AM knows dead to every snapshot.  An entry counts when its
 * row is visible to the snapshot: entries whose heap block is all-visible
 * in the visibility map count without touching the heap, the others are
 * fetched through the HOT chain on the heap and the snapshot decides.
 * This is nodeIndexonlyscan.c's rule, and the AM's contract for a scan
 * that returns its tuples (xs_want_itup) is what makes it exact: the
 * visibility map is read after the entry was returned, and a writer
 * clears a block's bit before it inserts an index entry pointing there.
 *
 * Locking: AccessShareLock on the index and the table is the caller's.
 * Buffers are the AM's (nbtree reads a page at a time under a share lock
 * and keeps its pin while the page's entries are returned to a scan that
 * returns tuples, so VACUUM cannot recycle those TIDs meanwhile) and the
 * table AM's for the heap fetches.  The visibility map pages are pinned,
 * never locked.  No lock of ours is held while the visitor runs.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "insight/index_count.h"

/*
 * Heap blocks per visibility-map page, as visibilitymap.c lays them out
 * (two bits per block on a page's content area).  Only used to keep one
 * pinned map page per slot: were it wrong, visibilitymap_get_status would
 * just read the right page itself.
 */
#define VM_BLOCKS_PER_PAGE \
	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * (BITS_PER_BYTE / BITS_PER_HEAPBLOCK))

/* The visibility map as the scan reads it: one pinned page per slot. */
typedef struct VmCache
{
	Relation	heap;
	Buffer	   *buffers;
	int			nbuffers;
	BlockNumber last_block;		/* the block of the last lookup */
	bool		last_all_visible;
} VmCache;

/*
 * Whether the visibility map says the heap block of tid is all-visible.
 * Keys in index order jump between distant heap blocks, so one pinned map
 * page per slot saves a buffer lookup per entry.
 */
static bool
block_all_visible(VmCache *vm, ItemPointer tid)
{
	BlockNumber block = ItemPointerGetBlockNumber(tid);
	int			slot;

	if (block == vm->last_block)
		return vm->last_all_visible;
	slot = block / VM_BLOCKS_PER_PAGE;
	if (slot >= vm->nbuffers)
	{
		int			n = Max(slot + 1, vm->nbuffers * 2);

		vm->buffers = repalloc(vm->buffers, sizeof(Buffer) * n);
		while (vm->nbuffers < n)
			vm->buffers[vm->nbuffers++] = InvalidBuffer;
	}
	vm->last_block = block;
	vm->last_all_visible = VM_ALL_VISIBLE(vm->heap, block, &vm->buffers[slot]);
	return vm->last_all_visible;
}

/*
 * Whether the scan's current entry (at tid) has a row its snapshot sees:
 * an all-visible page answers without the heap, as an index-only scan does.
 */
static bool
entry_visible(VmCache *vm, IndexScanDesc scan, TupleTableSlot *slot, ItemPointer tid)
{
	bool		visible;

	if (block_all_visible(vm, tid))
		return true;
	visible = index_fetch_heap(scan, slot);
	ExecClearTuple(slot);
	return visible;
}

static void
check_index(Relation index, Snapshot snapshot)
{
	if (index->rd_rel->relam != BTREE_AM_OID ||
		IndexRelationGetNumberOfKeyAttributes(index) != 1 ||
		TupleDescAttr(RelationGetDescr(index), 0)->atttypid != INT8OID ||
		!IsMVCCSnapshot(snapshot))
		elog(ERROR, "ttl_btree_count_visible: unsupported index \"%s\"",
			 RelationGetRelationName(index));
}

static void
vm_begin(VmCache *vm, Relation heap)
{
	int			i;

	vm->heap = heap;
	vm->nbuffers = 8;
	vm->buffers = palloc(sizeof(Buffer) * vm->nbuffers);
	for (i = 0; i < vm->nbuffers; i++)
		vm->buffers[i] = InvalidBuffer;
	vm->last_block = InvalidBlockNumber;
	vm->last_all_visible = false;
}

static void
vm_end(VmCache *vm)
{
	int			i;

	for (i = 0; i < vm->nbuffers; i++)
		if (BufferIsValid(vm->buffers[i]))
			ReleaseBuffer(vm->buffers[i]);
	pfree(vm->buffers);
}

/*
 * The entries of index (a btree on one int8 key of heap) within keys
 * (nkeys scan keys on its key), in index order, whose row the (MVCC)
 * snapshot sees: *count of them, up to limit (*capped when there are
 * more), and the first one's key (*have_first).  With limit 0 only the
 * first key is looked for.  Reads at most limit + 1 visible entries (and
 * the dead ones between them).
 */
void
ttl_btree_count_range(Relation heap, Relation index, Snapshot snapshot,
					  ScanKey keys, int nkeys, int64 limit,
					  int64 *count, bool *capped, bool *have_first, int64 *first)
{
	IndexScanDesc scan;
	TupleTableSlot *slot;
	VmCache		vm;
	ItemPointer tid;

	check_index(index, snapshot);
	*count = 0;
	*capped = false;
	*have_first = false;
	*first = 0;
	vm_begin(&vm, heap);
	slot = table_slot_create(heap, NULL);
	scan = ttl_index_beginscan(heap, index, snapshot, nkeys, 0);
	scan->xs_want_itup = true;	/* the key, and the AM keeps its pin */
	index_rescan(scan, keys, nkeys, NULL, 0);
	while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();
		if (!entry_visible(&vm, scan, slot, tid))
			continue;
		if (!*have_first)
		{
			bool		isnull;
			Datum		d = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);

			if (isnull)
				continue;		/* the scan keys exclude NULL: cannot happen */
			*first = DatumGetInt64(d);
			*have_first = true;
		}
		if (*count >= limit)
		{
			/* one more than the limit, or any with limit 0 */
			*capped = limit > 0 || *have_first;
			break;
		}
		(*count)++;
	}
	index_endscan(scan);
	vm_end(&vm);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * Scan the whole of index (a btree on one int8 key of heap) and call visit
 * with each key and the number (> 0) of its entries whose row the (MVCC)
 * snapshot sees: the scan returns a key's entries together, so each key
 * comes once, in index order (NULL last).
 */
void
ttl_btree_count_visible(Relation heap, Relation index, Snapshot snapshot,
						TtlKeyVisitor visit, void *arg)
{
	IndexScanDesc scan;
	TupleTableSlot *slot;
	VmCache		vm;
	ItemPointer tid;
	bool		have = false;
	bool		run_isnull = false;
	int64		run_key = 0;
	int64		run_n = 0;

	check_index(index, snapshot);
	vm_begin(&vm, heap);
	slot = table_slot_create(heap, NULL);

	scan = ttl_index_beginscan(heap, index, snapshot, 0, 0);
	scan->xs_want_itup = true;	/* the key, and the AM keeps its pin */
	index_rescan(scan, NULL, 0, NULL, 0);
	while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		int64		key;
		Datum		d;

		CHECK_FOR_INTERRUPTS();
		if (!entry_visible(&vm, scan, slot, tid))
			continue;
		d = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);
		key = isnull ? 0 : DatumGetInt64(d);
		if (have && isnull == run_isnull && key == run_key)
		{
			run_n++;
			continue;
		}
		if (have)
			visit(arg, run_isnull, run_key, run_n);
		have = true;
		run_isnull = isnull;
		run_key = key;
		run_n = 1;
	}
	if (have)
		visit(arg, run_isnull, run_key, run_n);
	index_endscan(scan);
	vm_end(&vm);
	ExecDropSingleTupleTableSlot(slot);
}
