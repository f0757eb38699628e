/*
 * due_range.h
 *		The key ranges that hold the due items of a container now
 *		(due_range.c), computed in this one place for every reader of a
 *		purge or deadline index: the purge (keyset walk, bitmap walk,
 *		statement), the backlog (ttl.stats), the restore guard's estimate
 *		and ttl.preview.
 */
#ifndef TTL_DUE_RANGE_H
#define TTL_DUE_RANGE_H

#include "access/skey.h"

#include "registry/registry.h"

/* The kinds of due items, one key range each, in the order purge takes them. */
typedef enum TtlDueKind
{
	TTL_DUE_INHERITED,			/* without their own ttl: by _ts */
	TTL_DUE_OWN,				/* with their own ttl: by _ts + ttl */
	TTL_DUE_DEADLINE			/* with a deadline (rule 9): by the deadline */
} TtlDueKind;

#define TTL_DUE_KINDS 3

/*
 * Where a kind's keys are: the single purge index of 1.3 (btree or BRIN on
 * ttl.doc_purge_key, or the same key scanned on an index-free container),
 * or the partial index of the kind of 1.0-1.2 (doc_ts, doc_expiry).  The
 * deadline kind has one layout (ttl.doc_deadline_key) either way.
 */
typedef struct TtlDueRange
{
	TtlDueKind	kind;
	bool		keyed;			/* keys of the single purge index */
	int64		low;			/* the first key of the kind, inclusive */
	int64		high;			/* the last due key, inclusive */
} TtlDueRange;

extern TtlDueRange ttl_due_range(TtlDueKind kind, bool keyed, int32 default_ttl,
								 int64 now_s);
extern int64 ttl_due_key(const TtlDueRange *range, int64 seconds);
extern int64 ttl_due_seconds(const TtlDueRange *range, int64 key);
extern void ttl_due_range_from(TtlDueRange *range, int64 seconds);
extern void ttl_due_scankeys(const TtlDueRange *range, ScanKey keys);

#endif							/* TTL_DUE_RANGE_H */
