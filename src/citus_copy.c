/*
 * citus_copy.c
 *		COPY ... FROM through a Citus coordinator into a distributed
 *		container: the SQLSTATE of ttl's write errors.
 *
 * The rows of such a COPY are stamped and validated on the shards, by the
 * stamp trigger of the node that stores them.  Citus streams the rows to
 * each shard with a COPY of its own and reads the shard's result only at
 * the end (EndRemoteCopy); a failed shard COPY is re-raised on the
 * coordinator by ReportCopyError (commands/multi_copy.c), which keeps the
 * shard's primary message and detail but not its SQLSTATE: every such error
 * arrives as XX000.  Nothing of the statement is written on any node (the
 * coordinator's error aborts the distributed transaction), only the code
 * is lost.  The coordinator cannot validate the rows itself first: Citus
 * parses them in its own ProcessUtility hook and ships the jsonb column as
 * text (citus.skip_jsonb_validation_in_copy), no trigger of the shell table
 * fires and no executor hook runs.
 *
 * So ttl's ProcessUtility hook, which runs around Citus's (Citus must be
 * first in shared_preload_libraries), catches an error of a COPY FROM that
 * ReportCopyError raised with XX000 and whose message is one of the write
 * errors ttl raises on a shard (the table below), and re-raises it with
 * that error's SQLSTATE: the same code as on one node, also for a caller's
 * EXCEPTION block.  Any other error passes unchanged.
 *
 * Locking: none.
 */
#include "postgres.h"

#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/elog.h"

#include "citus_copy.h"
#include "citus_meta.h"

static ProcessUtility_hook_type prev_process_utility_hook = NULL;

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

static void
ttl_copy_utility(PlannedStmt *pstmt, const char *query_string,
				 bool read_only_tree, ProcessUtilityContext context,
				 ParamListInfo params, QueryEnvironment *query_env,
				 DestReceiver *dest, QueryCompletion *qc)
{
	MemoryContext caller = CurrentMemoryContext;

	if (!IsA(pstmt->utilityStmt, CopyStmt) || !((CopyStmt *) pstmt->utilityStmt)->is_from ||
		!ttl_citus_loaded())
	{
		if (prev_process_utility_hook)
			prev_process_utility_hook(pstmt, query_string, read_only_tree,
									  context, params, query_env, dest, qc);
		else
			standard_ProcessUtility(pstmt, query_string, read_only_tree,
									context, params, query_env, dest, qc);
		return;
	}
	PG_TRY();
	{
		if (prev_process_utility_hook)
			prev_process_utility_hook(pstmt, query_string, read_only_tree,
									  context, params, query_env, dest, qc);
		else
			standard_ProcessUtility(pstmt, query_string, read_only_tree,
									context, params, query_env, dest, qc);
	}
	PG_CATCH();
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
	PG_END_TRY();
}

/* From _PG_init. */
void
ttl_install_citus_copy_hook(void)
{
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = ttl_copy_utility;
}
