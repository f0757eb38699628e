/*
 * index_count.h
 *		Exact counts over a btree on one int8 key (index_count.c): an
 *		index-only scan through the index AM that hands each key to a
 *		visitor with the number of its entries whose row the snapshot sees,
 *		or counts a key range up to a limit.
 */
#ifndef TTL_INDEX_COUNT_H
#define TTL_INDEX_COUNT_H

#include "access/skey.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * Called with a key and the number n > 0 of its visible rows, each key
 * once; it must only count (it runs inside the scan).
 */
typedef void (*TtlKeyVisitor) (void *arg, bool isnull, int64 key, int64 n);

extern void ttl_btree_count_range(Relation heap, Relation index, Snapshot snapshot,
								  ScanKey keys, int nkeys, int64 limit,
								  int64 *count, bool *capped, bool *have_first,
								  int64 *first);
extern void ttl_btree_count_visible(Relation heap, Relation index, Snapshot snapshot,
									TtlKeyVisitor visit, void *arg);

#endif							/* TTL_INDEX_COUNT_H */
