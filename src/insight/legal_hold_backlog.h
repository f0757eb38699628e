/*
 * legal_hold_backlog.h
 *		Legal holds in the backlog walks (stats.c): held rows are left out
 *		of the backlog and of the worker's due_rows and oldest_due, or
 *		counted alone for ttl.legal_holds.held_expired
 *		(legal_hold_backlog.c).
 */
#ifndef TTL_LEGAL_HOLD_BACKLOG_H
#define TTL_LEGAL_HOLD_BACKLOG_H

#include "utils/jsonb.h"

#include "document/due_range.h"

typedef struct TtlBacklogHolds
{
	Datum		matches;		/* jsonb[] for $3, or 0: no holds */
	const char *held;			/* SQL: the row is held ("false": none) */
	const char *wanted;			/* SQL on s.h: the rows the walk counts */
	const char *count;			/* SQL: count of the wanted rows */
	const char *min;			/* SQL: smallest key of the wanted rows */
	bool		have_floor[3];
	int64		floor[3];		/* raw keys of the PurgeKinds */
} TtlBacklogHolds;

extern void ttl_backlog_holds_begin(TtlBacklogHolds *h, Oid relid, const char *col,
									Jsonb *held_match);
extern void ttl_backlog_holds_from(const TtlBacklogHolds *h, TtlDueRange *range);

#endif							/* TTL_LEGAL_HOLD_BACKLOG_H */
