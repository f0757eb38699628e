/*
 * due_range.c
 *		The key ranges of a container's due items now, the one place that
 *		knows which keys hold which kind and where "due" ends: the purge
 *		index's two ranges (purge_key.c encodes them), the partial indexes
 *		of 1.0-1.2, the deadline index above the key of malformed deadlines
 *		(deadline.h).  A BRIN purge index is read with the same range (its
 *		bitmap gives page ranges); an index-free container's walk takes all
 *		pages and re-checks every row, and its SQL readers scan with the
 *		same range.  Rows in a range are candidates: each reader re-checks
 *		the whole rule on the row.
 *
 * Locking: none (pure computation).
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "utils/fmgroids.h"

#include "document/deadline.h"
#include "document/due_range.h"
#include "document/purge_key.h"

/* The purge key's range of a kind (the two lifetime kinds only). */
static inline int
key_kind(TtlDueKind kind)
{
	return kind == TTL_DUE_OWN ? TTL_KEY_OWN : TTL_KEY_INHERITED;
}

/* The key of an item of the range's kind whose walk value is seconds. */
int64
ttl_due_key(const TtlDueRange *range, int64 seconds)
{
	if (range->kind == TTL_DUE_DEADLINE)
		return Max(seconds, TTL_DEADLINE_MALFORMED_KEY + 1);
	return range->keyed ? ttl_purge_key_encode(key_kind(range->kind), seconds) : seconds;
}

/* The walk value (_ts, expiry or deadline second) of a key of the range. */
int64
ttl_due_seconds(const TtlDueRange *range, int64 key)
{
	if (range->kind != TTL_DUE_DEADLINE && range->keyed)
		return ttl_purge_key_decode(key_kind(range->kind), key);
	return key;
}

/*
 * The keys of the items of that kind due at now_s under default_ttl (the
 * inherited kind: _ts <= now - default; own: expiry <= now; deadline:
 * deadline <= now, malformed ones excluded).
 */
TtlDueRange
ttl_due_range(TtlDueKind kind, bool keyed, int32 default_ttl, int64 now_s)
{
	TtlDueRange range;

	range.kind = kind;
	range.keyed = keyed && kind != TTL_DUE_DEADLINE;
	range.low = ttl_due_key(&range, PG_INT64_MIN);
	range.high = ttl_due_key(&range, kind == TTL_DUE_INHERITED ?
							 now_s - default_ttl : now_s);
	return range;
}

/* Resume the range at the walk value seconds (a keyset batch's last key). */
void
ttl_due_range_from(TtlDueRange *range, int64 seconds)
{
	range->low = Max(range->low, ttl_due_key(range, seconds));
}

/*
 * The range as two scan keys on an index's first column: key >= low and
 * key <= high, typed for BRIN too (which looks its operators up by the
 * right-hand type).
 */
void
ttl_due_scankeys(const TtlDueRange *range, ScanKey keys)
{
	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(range->low));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(range->high));
	keys[0].sk_subtype = INT8OID;
	keys[1].sk_subtype = INT8OID;
}
