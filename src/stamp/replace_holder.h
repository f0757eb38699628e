/*
 * replace_holder.h
 *		Rule 10's judgement of an expired holder a probe found
 *		(replace_holder.c).  Internal to stamp/.
 */
#ifndef TTL_REPLACE_HOLDER_H
#define TTL_REPLACE_HOLDER_H

#include "registry/registry.h"
#include "utils/rel.h"

/* What became of an expired holder (ttl_replace_holder) */
typedef enum TtlHolderFate
{
	TTL_HOLDER_GONE,			/* deleted: the key is free */
	TTL_HOLDER_CONFLICTS,		/* kept; the statement's ON CONFLICT handles it */
	TTL_HOLDER_STOP,			/* the container was disabled, or rule 10
								 * turned off, meanwhile: the statement probes
								 * no more */
	TTL_HOLDER_LOOK_AGAIN		/* nothing deleted (changed meanwhile, or
								 * refused): probe the key again */
} TtlHolderFate;

extern TtlHolderFate ttl_replace_holder(Oid container, bool from_trigger, TtlContainer *policy,
										int64 now_seconds, Relation rel, Relation index,
										ItemPointer tid, Datum *values, bool *isnull);
extern void ttl_holder_refused(Oid container, Relation rel, Relation index,
							   Datum *values, bool *isnull);

#endif							/* TTL_REPLACE_HOLDER_H */
