/*
 * purge_functions.c
 *		The SQL entry points of purge: ttl.purge(), CALL ttl.run_purge(),
 *		ttl._purge_placements() (a node's share of a distributed purge), and
 *		ttl._purge_statement() / ttl._purge_plan_options() for tests.  The
 *		work is in purge_batch.c (one batch), purge_direct.c (the direct
 *		path) and purge_round.c (a round over every container).
 *
 * Locking: see purge_batch.c.  ttl.purge() purges in the caller's
 * transaction; ttl.run_purge() commits after each batch.  Marking in the
 * change stream (mark.c): ttl.purge() logs a message per batch only (an
 * origin would mark the caller's whole transaction); ttl.run_purge() also
 * runs the transactions it commits itself under ttl's replication origin.
 * ttl.run_purge() waits for replicas further behind than
 * ttl.max_replication_lag (replication_lag.c), a naptime at most in all,
 * then returns with a NOTICE; ttl.purge() is never throttled (an explicit
 * call is the caller's decision).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/replication_lag.h"
#include "base/settings.h"
#include "insight/stats.h"
#include "document/purge_key.h"
#include "purge/mark.h"
#include "purge/progress.h"
#include "purge/purge.h"
#include "purge/purge_internal.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * ttl._purge_plan_options(): apply the planner settings purge uses, for the
 * rest of the transaction (tests EXPLAIN the statement under them).
 */
PG_FUNCTION_INFO_V1(ttl_purge_plan_options);
Datum
ttl_purge_plan_options(PG_FUNCTION_ARGS)
{
	ttl_set_purge_plan_options();
	PG_RETURN_VOID();
}

/* ttl._purge_statement(container, own): the batch statement, for tests. */
PG_FUNCTION_INFO_V1(ttl_purge_statement);
Datum
ttl_purge_statement(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TtlContainer c;
	char	   *table;

	ttl_check_relation_exists(relid);
	if (!ttl_lookup_container(relid, &c))
		PG_RETURN_NULL();
	table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									   get_rel_name(relid));
	PG_RETURN_TEXT_P(cstring_to_text(ttl_batch_statement(table,
														 quote_identifier(NameStr(c.doc_column)),
														 PG_GETARG_BOOL(1) ? TTL_DUE_OWN : TTL_DUE_INHERITED,
														 get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE,
														 ttl_has_purge_key_index(relid, NameStr(c.doc_column)),
														 TTL_HAS_DEADLINE(&c) ? c.deadline_property : NULL,
														 false, false, relid,
														 InvalidOid /* archive: without its INSERT */ )));
}

/* One container of ttl.purge() over every container, as a subtransaction's step. */
typedef struct PurgeOne
{
	Oid			relid;
	int64		max_rows;
	bool		skipped;		/* out */
	int64		deleted;		/* out */
	const char *deleted_error;	/* the error to record */
} PurgeOne;

static void
purge_one(void *arg)
{
	PurgeOne   *one = (PurgeOne *) arg;

	one->deleted = ttl_purge_container(one->relid, one->max_rows, &one->skipped);
}

static void
record_error(void *arg)
{
	PurgeOne   *one = (PurgeOne *) arg;

	ttl_record_purge(one->relid, 0, one->deleted_error);
}

/*
 * ttl.purge() without a container purges each of the caller's containers
 * in a subtransaction: one whose purge fails (its archive, a trigger of its
 * owner) is rolled back alone, with a WARNING and its last_error, as the
 * round does (purge_round.c); the others' work stays.  A cancel ends the
 * call.
 */
static int64
purge_one_of_all(Oid relid, int64 max_rows, bool *skipped)
{
	PurgeOne	one = {relid, max_rows, false, 0, NULL};
	/* rolled back before a cancel is thrown on, unlike ttl_subxact_run */
	ErrorData  *edata = ttl_split_try(purge_one, &one);
	char	   *name;

	*skipped = one.skipped;
	if (edata == NULL)
		return one.deleted;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		ReThrowError(edata);
	*skipped = false;
	name = get_rel_name(relid);
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("ttl purge of \"%s\" failed: %s", name ? name : "?", edata->message),
			 errdetail("Its purge was rolled back; the other containers were purged.")));
	one.deleted_error = edata->message;
	edata = ttl_split_try(record_error, &one);
	if (edata != NULL)
		ereport(LOG,
				(errmsg("could not record ttl purge error: %s", edata->message)));
	return 0;
}

static int64 purge_containers(FunctionCallInfo fcinfo, int64 max_rows);

/* ttl.purge(container, max_rows): purge now, in the caller's transaction. */
PG_FUNCTION_INFO_V1(ttl_purge);
Datum
ttl_purge(PG_FUNCTION_ARGS)
{
	int64		max_rows = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	int64		total = 0;

	if (!PG_ARGISNULL(1) && max_rows < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must not be negative: %lld", (long long) max_rows)));
	/* before anything is deleted: the direct path bypasses the executor's check */
	PreventCommandIfReadOnly("ttl.purge()");

	/* shown in ttl.purge_progress while it runs (progress.c) */
	ttl_progress_begin();
	PG_TRY();
	{
		total = purge_containers(fcinfo, max_rows);
	}
	PG_FINALLY();
	{
		ttl_progress_end();
	}
	PG_END_TRY();
	PG_RETURN_INT64(total);
}

/* ttl.purge()'s work: its container's purge, or every container's. */
static int64
purge_containers(FunctionCallInfo fcinfo, int64 max_rows)
{
	int64		total = 0;
	bool		skipped;
	List	   *relids;
	ListCell   *lc;

	if (!PG_ARGISNULL(0))
	{
		Oid			relid = PG_GETARG_OID(0);
		TtlContainer c;

		ttl_check_container_owner(relid);
		ttl_get_container(relid, &c);
		/* a distributed container: each node purges its pieces (policy.c) */
		if (ttl_distribution_of(relid) == TTL_DIST_HASH)
			return ttl_purge_distributed(relid, max_rows);
		relids = list_make1_oid(relid);
	}
	else
		relids = ttl_list_due_containers(false);

	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);

		if (max_rows >= 0 && total >= max_rows)
			break;
		/* every container: one that fails is a WARNING, the rest is purged */
		if (PG_ARGISNULL(0))
			total += purge_one_of_all(relid, max_rows < 0 ? -1 : max_rows - total,
									  &skipped);
		else
			total += ttl_purge_container(relid, max_rows < 0 ? -1 : max_rows - total,
										 &skipped);
		if (skipped)
			ereport(NOTICE,
					(errmsg("container \"%s\" skipped: locked by another purge, a policy change or DDL",
							get_rel_name(relid))));
	}

	/*
	 * Without a container, also the caller's due distributed containers
	 * registered here (on the coordinator): each node purges its shards, as
	 * ttl.purge(container) does.  The local list above held only this
	 * node's own placements.
	 */
	if (PG_ARGISNULL(0))
		foreach(lc, ttl_list_distributed_containers(true))
		{
			Oid			relid = lfirst_oid(lc);

			if (max_rows >= 0 && total >= max_rows)
				break;
			if (ttl_class_ownercheck(relid, GetUserId()))
				total += ttl_purge_distributed(relid, max_rows < 0 ? -1 : max_rows - total);
		}
	return total;
}

/* Commit, and begin a transaction of the procedure's own. */
static void
procedure_restart(void)
{
	SPI_commit();
	/* before the new transaction's first snapshot: see purge_batch.c */
	XactIsoLevel = XACT_READ_COMMITTED;
	XactReadOnly = false;
	ttl_purge_commit_async();
}

/* A CALL ttl.run_purge(), for its round's steps. */
typedef struct ProcedureRound
{
	bool		marking_begun;
	TimestampTz wait_deadline;	/* the most it waits for replicas, in all */
} ProcedureRound;

/*
 * Whether replication is within ttl.max_replication_lag, waiting for it
 * until the call's deadline (a naptime in all: pg_cron must never hang);
 * else a NOTICE naming the replica behind.
 */
static bool
procedure_replicas_caught_up(ProcedureRound *round, const char *what)
{
	TtlReplicationLag lag;
	long		left_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
														  round->wait_deadline);
	TtlPhase	phase = ttl_progress_current_phase();
	bool		caught_up;

	ttl_progress_phase(TTL_PHASE_WAITING_FOR_REPLICAS);
	caught_up = ttl_replication_lag_wait(Max(left_ms, 0), &lag);
	ttl_progress_phase(phase);
	if (caught_up)
		return true;
	ereport(NOTICE,
			(errmsg("ttl.run_purge %s: %s is " INT64_FORMAT " bytes behind, more than ttl.max_replication_lag (%d MB)",
					what, lag.who, lag.lag_bytes, ttl_max_replication_lag),
			 errdetail("It waited up to ttl.naptime (%d s) for replication to catch up.", ttl_naptime),
			 errhint("The next call purges once replication has caught up; ttl.purge() is not throttled.")));
	return false;
}

/*
 * Before each batch.  The first commit ends what the caller's transaction
 * held; from then on every transaction is the procedure's own, which is
 * when marking may put ttl's replication origin on them (mark.c).  A
 * replica too far behind is waited for, within what is left of the call's
 * naptime, or ends the round here.
 */
static bool
procedure_next_transaction(void *arg)
{
	ProcedureRound *round = (ProcedureRound *) arg;

	procedure_restart();
	if (!round->marking_begun)
	{
		round->marking_begun = true;
		ttl_mark_begin(TTL_MARK_BY_RUN_PURGE, procedure_restart);
	}
	ttl_cost_sleep();
	return ttl_enabled &&
		procedure_replicas_caught_up(round, "stopped after the batch in progress");
}

static int64 procedure_round(ProcedureRound *round);

/*
 * CALL ttl.run_purge(): one round over the caller's containers (all, for a
 * superuser), committing after each batch and sleeping per the budget
 * between transactions.  For pg_cron and manual maintenance.
 */
PG_FUNCTION_INFO_V1(ttl_run_purge);
Datum
ttl_run_purge(PG_FUNCTION_ARGS)
{
	int64		total = 0;
	ProcedureRound round = {false, 0};
	bool		atomic = fcinfo->context && IsA(fcinfo->context, CallContext) &&
		((CallContext *) fcinfo->context)->atomic;

	if (atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("ttl.run_purge() cannot run inside a transaction block"),
				 errhint("CALL it on its own, or use SELECT ttl.purge() inside a transaction.")));
	if (!ttl_enabled)
	{
		ereport(NOTICE, (errmsg("ttl.enabled is off: nothing purged")));
		PG_RETURN_VOID();
	}
	round.wait_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  (int64) ttl_naptime * 1000);
	/* shown in ttl.purge_progress from here, its wait for replicas too */
	ttl_progress_begin();
	PG_TRY();
	{
		if (procedure_replicas_caught_up(&round, "purged nothing"))
			total = procedure_round(&round);
	}
	PG_FINALLY();
	{
		ttl_progress_end();
	}
	PG_END_TRY();
	ereport(DEBUG1, (errmsg("ttl.run_purge deleted %lld rows", (long long) total)));
	PG_RETURN_VOID();
}

/* run_purge's round, once replication is within bounds. */
static int64
procedure_round(ProcedureRound *round)
{
	TtlRoundOps ops = {0};
	int64		total = 0;

	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ops.next_transaction = procedure_next_transaction;
	ops.arg = round;
	ops.all_owners = superuser();
	ops.walks = true;
	/* a failing batch backs its container off for the worker (backoff.c) */
	ops.record_backoff = true;
	PG_TRY();
	{
		total = ttl_purge_round(&ops);
		/* commits the last batch under the origin, then lets it go */
		if (round->marking_begun)
			ttl_mark_end(procedure_restart);
	}
	PG_CATCH();
	{
		ttl_mark_abandon();
		PG_RE_THROW();
	}
	PG_END_TRY();
	SPI_finish();
	return total;
}

/*
 * ttl._purge_placements(container, max_rows): purge this node's active
 * placements of a distributed container now, as its owner; how many rows.
 * Each node runs it for its share of a distributed ttl.purge() (the
 * distributed half sends it); the placements are found through the policy
 * door (registry/policy.c).
 */
PG_FUNCTION_INFO_V1(ttl_purge_placements);
Datum
ttl_purge_placements(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		max_rows = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	int64		total = 0;
	ListCell   *lc;

	PreventCommandIfReadOnly("ttl._purge_placements()");
	ttl_check_container_owner(relid);
	ttl_progress_begin();
	PG_TRY();
	{
		foreach(lc, ttl_list_local_placements(relid, false))
		{
			bool		skipped;

			if (max_rows >= 0 && total >= max_rows)
				break;
			total += ttl_purge_container(lfirst_oid(lc),
										 max_rows < 0 ? -1 : max_rows - total, &skipped);
		}
	}
	PG_FINALLY();
	{
		ttl_progress_end();
	}
	PG_END_TRY();
	PG_RETURN_INT64(total);
}
