/*
 * legal_hold_backlog.c
 *		Legal holds (1.8) in the backlog walks of stats.c, which
 *		ttl.stats, ttl.backlog and the worker (due_rows, oldest_due, so the
 *		scheduler's urgency) read.  A backlog leaves held rows out: they
 *		are not due, and a database whose only due rows are held must not
 *		look urgent forever.  Its walks start at the floors the purge keeps
 *		(registry/legal_hold.c), so held rows below them cost nothing; a
 *		walk is bounded by its LIMIT in rows read (held or not), as before.
 *		ttl._legal_hold_expired counts, with the same bounded walks from
 *		the bottom (no floor: the held rows are below it), the due rows one
 *		match keeps: held_expired of ttl.legal_holds.
 *
 * Locking: none of its own; the floors are read as committed now.
 */
#include "postgres.h"

#include "document/purge_key.h"
#include "insight/legal_hold_backlog.h"
#include "registry/legal_hold.h"

/*
 * The pieces of the walks' SQL for relid (its document column col, quoted):
 * with held_match, the due rows it matches; else the due rows no hold of
 * relid keeps, from its floors.
 */
void
ttl_backlog_holds_begin(TtlBacklogHolds *h, Oid relid, const char *col, Jsonb *held_match)
{
	TtlLegalHolds *holds = NULL;
	TtlLegalHolds one;
	struct TtlHoldPairs *no_pairs = NULL;
	int			kind;

	memset(h, 0, sizeof(TtlBacklogHolds));
	if (held_match != NULL)
	{
		one.n = 1;
		one.names = NULL;
		one.matches = &held_match;
		one.pairs = &no_pairs;
		one.nkeys = 0;
		holds = &one;
	}
	else
		holds = ttl_legal_holds_read(relid);
	h->wanted = held_match != NULL ? "s.h" : "NOT s.h";
	h->count = psprintf("pg_catalog.count(*) FILTER (WHERE %s)", h->wanted);
	h->min = psprintf("pg_catalog.min(s.k) FILTER (WHERE %s)", h->wanted);
	if (holds == NULL)
	{
		h->held = "false";
		return;
	}
	h->matches = ttl_legal_holds_array(holds);
	h->held = psprintf("(%s OPERATOR(pg_catalog.@>) ANY ($3::pg_catalog.jsonb[]))", col);
	if (held_match != NULL)
		return;
	for (kind = 0; kind < TTL_HOLD_FLOOR_KINDS; kind++)
		h->have_floor[kind] =
			ttl_legal_hold_floor_get(relid, kind, &h->floor[kind]) == TTL_FLOOR_FRESH;
}

/*
 * A due range of the backlog, from its kind's floor past held rows (as the
 * purge starts there: due_range.c encodes it as the range's keys).
 */
void
ttl_backlog_holds_from(const TtlBacklogHolds *h, TtlDueRange *range)
{
	if (h->have_floor[range->kind])
		ttl_due_range_from(range, h->floor[range->kind]);
}
