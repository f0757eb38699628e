/*
 * stamp_row.h
 *		The row the stamp trigger (stamp.c) returns: its document replaced
 *		by the stamped one (stamp_row.c).
 */
#ifndef TTL_STAMP_ROW_H
#define TTL_STAMP_ROW_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/jsonb.h"

extern HeapTuple ttl_stamp_row(HeapTuple tuple, TupleDesc tupdesc, int attnum,
							   Jsonb *newdoc);

#endif							/* TTL_STAMP_ROW_H */
