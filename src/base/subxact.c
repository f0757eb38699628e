/*
 * subxact.c
 *		Running one step in an internal subtransaction, so that its failure
 *		becomes a value for the caller (a WARNING and a NULL, a container
 *		skipped this round, an upgrade that goes on) instead of ending the
 *		statement: a purge batch of one container (purge_round.c), the
 *		restore guard's estimate (guard.c), the backlog of ttl.stats
 *		(stats.c), bringing a container in line during ALTER EXTENSION
 *		UPDATE (ddl_follow.c), a replication origin that may be busy
 *		(mark.c).
 *
 * Locking: what the step takes is kept when it succeeds and released with
 * its subtransaction when it fails.  A cancel (or statement_timeout) is
 * caught only where the caller asks for it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "base/subxact.h"

/*
 * step(arg) in a subtransaction.  NULL: it succeeded and what it did
 * stays.  Otherwise it raised: everything it did is rolled back and its
 * error, copied into err_cxt, is returned for the caller to report (and
 * FreeErrorData).  A cancel is thrown on unless catch_cancel (the purge
 * round's own batch timeout cancels a batch and is that batch's error).
 */
ErrorData *
ttl_subxact_run(TtlSubxactStep step, void *arg, MemoryContext err_cxt, bool catch_cancel)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		step(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(err_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;

	/*
	 * A cancel goes on only after the subtransaction is gone: thrown from
	 * inside it, a caller's PL/pgSQL handler (EXCEPTION WHEN
	 * query_canceled) would roll back this subtransaction instead of its
	 * own and go on in the state the step left, as the role the step had
	 * become (rule 10's writer as the table's owner).
	 */
	if (edata != NULL && edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !catch_cancel)
		ReThrowError(edata);
	return edata;
}

/* The same, in the caller's memory context, a cancel thrown on: true when it succeeded. */
bool
ttl_run_in_subtransaction(TtlSubxactStep step, void *arg, ErrorData **error)
{
	*error = ttl_subxact_run(step, arg, CurrentMemoryContext, false);
	return *error == NULL;
}
