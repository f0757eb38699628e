/*
 * purge_key.c
 *		ttl.doc_purge_key(doc), the key of a container's purge index, and
 *		its encoding.
 *
 * One btree serves both kinds of due items, so a row costs one expression
 * and one index entry (the 1.0 layout had two partial indexes: two
 * predicates and two expressions per row).  The key is
 *
 *		items inheriting the default:	INHERITED_BASE + _ts
 *		items with a positive own ttl:	OWN_BASE + (_ts + ttl)
 *		anything else (ttl -1, no _ts):	NULL
 *
 * (an invalid root ttl, which only a row written around the trigger can
 * hold, counts as absent, as everywhere)
 *
 * with each second clamped to [-2^61, 2^61) so the two ranges can never
 * meet (real Unix seconds are far inside).  Clamping keeps the order of
 * every real value; a clamped absurd value only moves to the end of its
 * range, and every purge re-checks the rule on the row itself.  Inherited
 * items are keyed by _ts, not by _ts + default: a new default applies to
 * them at once (the walk's bound moves, not the keys), while an item's own
 * ttl is its own.  A purge walks [low(kind), encode(kind, cutoff)] of one
 * range, in key order: its cost follows the due rows.
 *
 * Locking: none.  Never raises on document content (an index expression).
 */
#include "postgres.h"

#include "fmgr.h"

#include "document.h"
#include "purge_key.h"

#define KEY_LIMIT		(INT64CONST(1) << 61)
#define INHERITED_BASE	(INT64CONST(1) << 62)
#define OWN_BASE		(-(INT64CONST(1) << 62))

static inline int64
clamp_seconds(int64 s)
{
	if (s < -KEY_LIMIT)
		return -KEY_LIMIT;
	if (s >= KEY_LIMIT)
		return KEY_LIMIT - 1;
	return s;
}

/* The key of an item of that kind whose walk value (_ts or expiry) is seconds. */
int64
ttl_purge_key_encode(int kind, int64 seconds)
{
	return (kind == TTL_KEY_OWN ? OWN_BASE : INHERITED_BASE) + clamp_seconds(seconds);
}

/* The walk value of a key of that kind (clamped values stay clamped). */
int64
ttl_purge_key_decode(int kind, int64 key)
{
	return key - (kind == TTL_KEY_OWN ? OWN_BASE : INHERITED_BASE);
}

/* The lowest key of a kind's range. */
int64
ttl_purge_key_low(int kind)
{
	return ttl_purge_key_encode(kind, PG_INT64_MIN);
}

/* The purge key of a document; false when it has none (NULL in the index). */
bool
ttl_doc_purge_key(Jsonb *doc, int64 *key)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		ttl;

	ttl_doc_ts_and_ttl(doc, &has_ts, &ts, &item, &ttl);
	if (!has_ts)
		return false;
	if (item != TTL_ITEM_VALID)
	{
		/* an invalid ttl counts as absent, as in the rule (expiry.c) */
		*key = ttl_purge_key_encode(TTL_KEY_INHERITED, ts);
		return true;
	}
	if (ttl <= 0)
		return false;			/* -1: never expires */
	/* ts is clamped first so that ts + ttl cannot overflow */
	*key = ttl_purge_key_encode(TTL_KEY_OWN, clamp_seconds(ts) + ttl);
	return true;
}

/* ttl.doc_purge_key(doc): the purge index's key, or NULL.  Never raises. */
PG_FUNCTION_INFO_V1(ttl_doc_purge_key_sql);
Datum
ttl_doc_purge_key_sql(PG_FUNCTION_ARGS)
{
	int64		key;

	if (!ttl_doc_purge_key(PG_GETARG_JSONB_P(0), &key))
		PG_RETURN_NULL();
	PG_RETURN_INT64(key);
}
