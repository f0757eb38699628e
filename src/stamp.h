/*
 * stamp.h
 *		Where a row is stamped: the trigger ttl.stamp() (stamp.c) and the
 *		row it returns (stamp_row.c).
 */
#ifndef TTL_STAMP_H
#define TTL_STAMP_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/jsonb.h"

extern HeapTuple ttl_stamp_row(HeapTuple tuple, TupleDesc tupdesc, int attnum,
							   Jsonb *newdoc);

#endif							/* TTL_STAMP_H */
