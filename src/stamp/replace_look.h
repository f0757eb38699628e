/*
 * replace_look.h
 *		Rule 10's per-statement look (replace_look.c): the shortcut, the due
 *		filter and the look's guard.  Internal to stamp/.
 */
#ifndef TTL_REPLACE_LOOK_H
#define TTL_REPLACE_LOOK_H

#include "stamp/replace_state.h"

extern bool ttl_look_may_hold_due(TtlReplaceState *state, Relation rel);
extern bool ttl_look_make_filters(TtlReplaceState *state, Relation rel, MemoryContext mcxt, int64 cap);
extern bool ttl_look_filter_may_hold(TtlReplaceState *state, int i, Datum *values, bool *isnull);
extern bool ttl_look_read_committed_policy(TtlReplaceState *state);
extern bool ttl_look_begin(TtlReplaceState *state, Relation rel);
extern void ttl_look_before_write(TtlReplaceState *state, Relation rel, HeapTuple newtuple);

/* When a statement tries the due filter (replace.c) */
#define FILTER_FIRST_TRY	64
#define FILTER_STEP			8
#define FILTER_RATIO		8
#define FILTER_PLANNED_RATIO 2

#endif							/* TTL_REPLACE_LOOK_H */
