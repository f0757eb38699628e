/*
 * replace_probe.h
 *		Rule 10's probe of a unique index and the replacement of an expired
 *		holder (replace_probe.c).  Internal to stamp/.
 */
#ifndef TTL_REPLACE_PROBE_H
#define TTL_REPLACE_PROBE_H

#include "stamp/replace_state.h"

extern void ttl_probe_index(TtlReplaceState *state, Relation rel, Relation index, ReplaceIndex *u,
						Datum *values, bool *isnull, ItemPointer self);

#endif							/* TTL_REPLACE_PROBE_H */
