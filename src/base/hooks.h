/*
 * hooks.h
 *		The shape of a subsystem's step in one of the hooks that ttl.c
 *		installs: ttl.c owns every hook (and every shared-memory request)
 *		of the library and chains the subsystems' steps in a fixed order;
 *		a step that must wrap the rest of the chain (PG_TRY around it, a
 *		counter around it) takes the next step as its last argument and
 *		calls it exactly once.
 */
#ifndef TTL_HOOKS_H
#define TTL_HOOKS_H

#include "executor/executor.h"
#include "tcop/utility.h"

#include "base/compat.h"

/* ProcessUtility's parameters (the same on 15-18), and passing them on. */
#define TTL_UTILITY_PARAMS \
	PlannedStmt *pstmt, const char *query_string, bool read_only_tree, \
	ProcessUtilityContext context, ParamListInfo params, \
	QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc
#define TTL_UTILITY_ARGS \
	pstmt, query_string, read_only_tree, context, params, query_env, dest, qc

/* The rest of a ProcessUtility chain, after the step that calls it. */
typedef void (*TtlUtilityNext) (TTL_UTILITY_PARAMS);

/* The rest of an ExecutorRun chain (TTL_EXECUTOR_RUN_PARAMS: compat.h). */
typedef void (*TtlExecutorRunNext) (TTL_EXECUTOR_RUN_PARAMS);

#endif							/* TTL_HOOKS_H */
