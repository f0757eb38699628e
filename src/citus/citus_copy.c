/*
 * citus_copy.c
 *		Rows Citus copies from the coordinator into a distributed
 *		container (COPY ... FROM, INSERT ... SELECT through the
 *		coordinator): the SQLSTATE of ttl's write errors.
 *
 * Those rows are stamped and validated on the shards, by the stamp trigger
 * of the node that stores them.  Citus streams them to each shard with a
 * COPY of its own and reads the shard's result only at the end
 * (EndRemoteCopy); a failed shard COPY is re-raised on the coordinator by
 * ReportCopyError (commands/multi_copy.c), which keeps the shard's primary
 * message and detail but not its SQLSTATE: every such error arrives as
 * XX000.  Nothing of the statement is written on any node (the
 * coordinator's error aborts the distributed transaction), only the code
 * is lost.  The coordinator cannot validate the rows itself first: Citus
 * parses a COPY's rows in its own ProcessUtility hook and ships the jsonb
 * column as text (citus.skip_jsonb_validation_in_copy), and no trigger of
 * the coordinator's table fires for either path.  (A multi-row INSERT or
 * an INSERT ... SELECT Citus pushes down to the shards reports a shard's
 * error with its SQLSTATE, ReportResultError.)
 *
 * So ttl's ProcessUtility hook (COPY) and ExecutorRun hook (INSERT ...
 * SELECT), which run around Citus's (Citus must be first in
 * shared_preload_libraries), catch an error that ReportCopyError raised
 * with XX000 and whose message is one of the write errors ttl raises on a
 * shard (the table below), and re-raise it with that error's SQLSTATE: the
 * same code as on one node, also for a caller's EXCEPTION block.  Any
 * other error passes unchanged.  Without Citus loaded, the hooks only pass
 * the call on.
 *
 * Locking: none.
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/elog.h"

#include "base/compat.h"
#include "citus/citus_copy.h"
#include "citus/citus_meta.h"


/*
 * ttl's errors on writing a row (document.c, expiry.c, stamp.c), as their
 * primary message starts and, where two share a start, what follows.
 */
typedef struct WriteError
{
	const char *starts;
	const char *contains;		/* NULL: any */
	int			sqlstate;
} WriteError;

static const WriteError write_errors[] = {
	{"invalid ttl in container \"", NULL, ERRCODE_INVALID_PARAMETER_VALUE},
	{"document of container \"", "\" is not a JSON object: ", ERRCODE_INVALID_PARAMETER_VALUE},
	{"document of container \"", "\" is null", ERRCODE_NOT_NULL_VIOLATION},
	{"invalid effective time-to-live: ", NULL, ERRCODE_INVALID_PARAMETER_VALUE},
	{"expiry time out of range: _ts ", NULL, ERRCODE_DATETIME_VALUE_OUT_OF_RANGE},
	{"stamped document of container \"", "\" exceeds the maximum jsonb size",
	ERRCODE_PROGRAM_LIMIT_EXCEEDED},
};

/* The SQLSTATE of ttl's write error with this message, or 0. */
static int
write_error_sqlstate(const char *message)
{
	int			i;

	if (message == NULL)
		return 0;
	for (i = 0; i < lengthof(write_errors); i++)
		if (strncmp(message, write_errors[i].starts, strlen(write_errors[i].starts)) == 0 &&
			(write_errors[i].contains == NULL ||
			 strstr(message, write_errors[i].contains) != NULL))
			return write_errors[i].sqlstate;
	return 0;
}

/*
 * In a PG_CATCH block: re-raise the current error with its write error's
 * SQLSTATE when Citus's ReportCopyError raised a write error of ttl as
 * XX000; else re-raise it as it is.  caller: the memory context before
 * PG_TRY.
 */
static void
rethrow_copy_error(MemoryContext caller)
{
	ErrorData  *edata;
	int			sqlstate;

	MemoryContextSwitchTo(caller);
	edata = CopyErrorData();
	sqlstate = write_error_sqlstate(edata->message);
	if (edata->sqlerrcode != ERRCODE_INTERNAL_ERROR || sqlstate == 0 ||
		edata->funcname == NULL || strcmp(edata->funcname, "ReportCopyError") != 0)
	{
		FreeErrorData(edata);
		PG_RE_THROW();
	}
	FlushErrorState();
	edata->sqlerrcode = sqlstate;
	ReThrowError(edata);
}

/* ProcessUtility_hook's step (ttl.c): a COPY FROM's shard errors. */
void
ttl_citus_copy_utility(TTL_UTILITY_PARAMS, TtlUtilityNext next)
{
	MemoryContext caller = CurrentMemoryContext;

	if (!IsA(pstmt->utilityStmt, CopyStmt) || !((CopyStmt *) pstmt->utilityStmt)->is_from ||
		!ttl_citus_loaded())
	{
		next(TTL_UTILITY_ARGS);
		return;
	}
	PG_TRY();
	{
		next(TTL_UTILITY_ARGS);
	}
	PG_CATCH();
	{
		rethrow_copy_error(caller);
	}
	PG_END_TRY();
}

/* ExecutorRun_hook's step (ttl.c): an INSERT ... SELECT's shard errors. */
void
ttl_citus_copy_executor_run(TTL_EXECUTOR_RUN_PARAMS, TtlExecutorRunNext next)
{
	MemoryContext caller = CurrentMemoryContext;

	if ((queryDesc->operation == CMD_SELECT && !queryDesc->plannedstmt->hasModifyingCTE) ||
		!ttl_citus_loaded())
	{
		next(TTL_EXECUTOR_RUN_ARGS);
		return;
	}
	PG_TRY();
	{
		next(TTL_EXECUTOR_RUN_ARGS);
	}
	PG_CATCH();
	{
		rethrow_copy_error(caller);
	}
	PG_END_TRY();
}
