/*
 * citus_copy.h
 *		COPY through a Citus coordinator: the SQLSTATE of ttl's write
 *		errors on the shards (citus_copy.c).
 */
#ifndef TTL_CITUS_COPY_H
#define TTL_CITUS_COPY_H

#include "base/hooks.h"

/* ttl.c's hooks: ProcessUtility and ExecutorRun */
extern void ttl_citus_copy_utility(TTL_UTILITY_PARAMS, TtlUtilityNext next);
extern void ttl_citus_copy_executor_run(TTL_EXECUTOR_RUN_PARAMS, TtlExecutorRunNext next);

#endif							/* TTL_CITUS_COPY_H */
