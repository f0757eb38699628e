/*
 * worker.c
 *		The purge worker of one database (its OID in bgw_main_arg): round
 *		after round, every ttl.naptime, it purges every unpaused container
 *		with ttl_purge_round(), one committed batch at a time, within the
 *		cost budget, as each table's owner.
 *
 * Security: it connects as the bootstrap superuser, pins search_path to
 * pg_catalog, pg_temp for its whole life, lists containers in C and runs
 * each batch as the table's owner (purge_batch.c).
 *
 * Locking: only what purge_batch.c takes, one short transaction per batch.  The
 * worker holds no snapshot and no lock while it sleeps.  SIGHUP reloads the
 * settings (ttl.enabled off ends a round at the next batch); SIGTERM ends it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "purge.h"
#include "scheduler.h"
#include "settings.h"

/* The worker's naptime wait, by name in pg_stat_activity on 17+. */
static uint32 worker_wait_event = 0;

static HTAB *resume_points = NULL;

static void
reload_settings_if_asked(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

static void
worker_report(void *arg, const char *activity)
{
	pgstat_report_activity(STATE_RUNNING, activity);
}

/* Commit the batch, pay the budget outside any transaction, begin anew. */
static void
worker_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* whatever the database's defaults: see purge_batch.c */
	XactIsoLevel = XACT_READ_COMMITTED;
	XactReadOnly = false;
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
worker_commit(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
}

static bool
worker_next_transaction(void *arg)
{
	worker_commit();
	ttl_cost_sleep();
	reload_settings_if_asked();
	CHECK_FOR_INTERRUPTS();
	worker_begin();
	return ttl_enabled;
}

/*
 * One round; false when the extension is not installed in this database.
 * *unfinished: the round stopped at its time bound with work left.
 */
static bool
worker_round(bool *unfinished)
{
	TtlRoundOps ops = {0};
	bool		installed;
	int64		deleted;

	*unfinished = false;
	worker_begin();
	installed = OidIsValid(get_extension_oid("ttl", true));
	if (installed)
	{
		pgstat_report_activity(STATE_RUNNING, "ttl purge round");
		ops.next_transaction = worker_next_transaction;
		ops.report = worker_report;
		ops.all_owners = true;
		/* a round lasts at most a naptime, so new expiries wait no longer */
		ops.max_round_ms = ttl_naptime * 1000;
		ops.resume = resume_points;
		deleted = ttl_purge_round(&ops);
		*unfinished = ops.unfinished;
		if (deleted > 0)
			elog(DEBUG1, "ttl worker deleted %lld expired items", (long long) deleted);
	}
	worker_commit();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return installed;
}

void
ttl_worker_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (!ttl_claim_worker_slot(dboid))
		proc_exit(0);			/* another worker serves this database */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("ttl worker");
	/*
	 * The worker is the bootstrap superuser: whatever the database's or the
	 * role's setting (lower sources than this one), nothing it runs
	 * resolves a name through a schema users can create in (purge_batch.c also
	 * pins it per statement).  Not PGC_S_OVERRIDE: that would also defeat
	 * the SET search_path clause of an owner's trigger function.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION);
	resume_points = ttl_create_resume_map();

	for (;;)
	{
		bool		unfinished = false;

		CHECK_FOR_INTERRUPTS();
		reload_settings_if_asked();
		if (ttl_enabled && !worker_round(&unfinished))
			break;				/* no ttl here: the launcher asks again later */
		if (unfinished)
			continue;			/* backlog left: next round at once */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ttl_naptime * 1000L,
						 ttl_wait_event(&worker_wait_event, "TtlWorkerNaptime"));
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}
