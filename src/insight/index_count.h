/*
 * index_count.h
 *		Exact counts over a btree on one int8 key without the index AM's
 *		per-tuple machinery (index_count.c): a walk of the leaf level that
 *		hands each key to a visitor with the number of its entries whose
 *		row the snapshot sees.
 */
#ifndef TTL_INDEX_COUNT_H
#define TTL_INDEX_COUNT_H

#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * Called with a key and a number n > 0 of its visible rows (a key may come
 * several times); with an index page locked: it must only count.
 */
typedef void (*TtlKeyVisitor) (void *arg, bool isnull, int64 key, int64 n);

extern void ttl_btree_count_visible(Relation heap, Relation index, Snapshot snapshot,
									TtlKeyVisitor visit, void *arg);

#endif							/* TTL_INDEX_COUNT_H */
