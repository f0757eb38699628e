/*
 * guard_estimate.h
 *		The restore guard's figure (guard_estimate.c): due rows against
 *		total rows of a container, bounded by the fraction.
 */
#ifndef TTL_GUARD_ESTIMATE_H
#define TTL_GUARD_ESTIMATE_H

#include "registry/registry.h"

typedef struct TtlGuardEstimate
{
	double		total;			/* rows of the container (estimate) */
	bool		exact_total;	/* total was counted */
	int64		due;			/* due entries counted, at most fraction*total + 1 */
	bool		exceeded;		/* due > fraction * total */
} TtlGuardEstimate;

extern void ttl_guard_estimate(Oid relid, const TtlContainer *c, int64 now_s,
							   double fraction, TtlGuardEstimate *out);

#endif							/* TTL_GUARD_ESTIMATE_H */
