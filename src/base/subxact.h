/*
 * subxact.h
 *		One step in an internal subtransaction, its failure returned as a
 *		value (subxact.c).
 */
#ifndef TTL_SUBXACT_H
#define TTL_SUBXACT_H

#include "utils/palloc.h"

typedef void (*TtlSubxactStep) (void *arg);

extern struct ErrorData *ttl_subxact_run(TtlSubxactStep step, void *arg,
										 MemoryContext err_cxt, bool catch_cancel);
extern bool ttl_run_in_subtransaction(TtlSubxactStep step, void *arg,
									  struct ErrorData **error);

#endif							/* TTL_SUBXACT_H */
