/*
 * launcher.c
 *		The ttl launcher: a static background worker, connected to no
 *		database, that hands the databases to a pool of at most
 *		ttl.max_workers purge workers (worker.c), the autovacuum way.  Each
 *		worker serves one database for a round and leaves; whenever a place
 *		is free the launcher starts one for the most urgent database
 *		(db_states.c: never visited first, then by waiting time and
 *		backlog, and none passed over more than a few times).  Workers are
 *		dynamic background workers started through handles: the launcher
 *		waits for each to start, and is woken (bgw_notify_pid) when one
 *		stops.  So ttl never holds more than 1 + ttl.max_workers of
 *		max_worker_processes.
 *
 * No owner can hold a place of the pool: a worker whose visit has lasted
 * longer than ttl.max_visit_time of working time (ttl_visit_bound_ms:
 * never less than ttl.naptime + 2 x ttl.batch_timeout; time it waits on
 * purpose does not count: worker_slots.c) is ended with
 * TerminateBackgroundWorker: a SIGTERM, whose FATAL no owner's code can
 * trap, unlike the cancel of a statement's own bound.  Never SIGKILL, which
 * would restart the cluster.  Its place is free again when it has gone;
 * the next worker in its database backs off the container it was in
 * (worker.c).  The launcher wakes in time for the next such bound.
 *
 * While a standby or an active replication slot is further behind than
 * ttl.max_replication_lag (replication_wait.c), the launcher starts no
 * visit and looks again every second; running workers end their visits
 * after the batch in progress.
 *
 * Databases without the extension cost nothing between rescans: a worker
 * that finds none there says so (db_states.c) and no other is started
 * there until ttl.rescan_interval has passed, or CREATE EXTENSION ttl
 * marks the database (worker_slots.c).
 *
 * Locking: the launcher holds no locks while it sleeps; it reads
 * pg_database in a short transaction when it wakes.  It starts only once
 * recovery has finished, so a hot standby never purges, and a promoted one
 * starts.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "utils/acl.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "scheduler/replication_wait.h"
#include "scheduler/scheduler.h"

/* How often the launcher looks at the replicas while it waits for them. */
#define TTL_LAG_RECHECK_MS 1000L

/* The launcher's naptime wait, by name in pg_stat_activity on 17+. */
static uint32 launcher_wait_event = 0;

/* One place of the pool: the worker serving dboid, or free (handle NULL). */
typedef struct PoolWorker
{
	Oid			dboid;
	BackgroundWorkerHandle *handle;
} PoolWorker;

static PoolWorker *pool = NULL;	/* ttl.max_workers places */

/* From _PG_init, when loaded by shared_preload_libraries. */
void
ttl_register_launcher(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "ttl");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "ttl_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "ttl launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "ttl launcher");
	RegisterBackgroundWorker(&worker);
}

static bool
launch_worker(Oid dboid, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "ttl");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "ttl_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "ttl worker for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "ttl worker");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

/* Databases a worker could serve: connectable, not templates. */
static List *
connectable_databases(void)
{
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext caller_cxt = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (!db->datallowconn || db->datistemplate)
			continue;
		old = MemoryContextSwitchTo(caller_cxt);
		result = lappend_oid(result, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

/* Free the places of the workers that have stopped. */
static void
reap_workers(void)
{
	int			i;

	for (i = 0; i < ttl_max_workers; i++)
	{
		pid_t		pid;

		if (pool[i].handle == NULL ||
			GetBackgroundWorkerPid(pool[i].handle, &pid) != BGWH_STOPPED)
			continue;
		ttl_db_worker_gone(pool[i].dboid);
		pfree(pool[i].handle);
		pool[i].handle = NULL;
		pool[i].dboid = InvalidOid;
	}
}

/*
 * Start a worker in place i for dboid and wait until it has started (or
 * already stopped).  False when no background worker slot is free.
 */
static bool
start_worker(int i, Oid dboid)
{
	static bool warned = false;
	pid_t		pid;

	if (!launch_worker(dboid, &pool[i].handle))
	{
		pool[i].handle = NULL;
		ttl_db_worker_gone(dboid);
		if (!warned)
			ereport(WARNING,
					(errmsg("ttl launcher could not start a worker for database %u", dboid),
					 errdetail("All of max_worker_processes are in use."),
					 errhint("ttl needs 1 + ttl.max_workers of max_worker_processes; raise max_worker_processes.")));
		warned = true;
		return false;
	}
	pool[i].dboid = dboid;
	if (WaitForBackgroundWorkerStartup(pool[i].handle, &pid) == BGWH_POSTMASTER_DIED)
		proc_exit(1);
	return true;
}

/* The name of a database, for a message (the launcher has no database). */
static char *
database_name(Oid dboid)
{
	char	   *name;
	char	   *copy;

	StartTransactionCommand();
	name = get_database_name(dboid);
	copy = name != NULL ? MemoryContextStrdup(TopMemoryContext, name) : NULL;
	CommitTransactionCommand();
	return copy;
}

/*
 * End the workers that have overstayed the visit bound.  Returns how long
 * the launcher may sleep at most (wait_ms, or less): until the next
 * worker's bound.
 */
static long
enforce_visit_bound(long wait_ms)
{
	int64		bound_ms = ttl_visit_bound_ms();
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	ttl_visit_publish_bound(bound_ms);
	for (i = 0; i < ttl_max_workers; i++)
	{
		pid_t		pid;
		Oid			relid = InvalidOid;
		TtlStep		step = TTL_STEP_NONE;
		char	   *name;

		if (pool[i].handle == NULL ||
			GetBackgroundWorkerPid(pool[i].handle, &pid) != BGWH_STARTED ||
			!ttl_visit_overstayed(pid, now, bound_ms, &wait_ms, &relid, &step))
			continue;
		TerminateBackgroundWorker(pool[i].handle);
		ttl_db_note_termination(pool[i].dboid, relid, step, bound_ms);
		name = database_name(pool[i].dboid);
		ereport(LOG,
				(errmsg("ttl launcher terminated the purge worker of database \"%s\" after ttl.max_visit_time (" INT64_FORMAT " ms)",
						name ? name : "?", bound_ms),
				 OidIsValid(relid) ?
				 errdetail("It was in the container with OID %u (%s); the next worker in that database backs it off.",
						   relid, ttl_step_name(step)) :
				 errdetail("It was between statements on user tables."),
				 errhint("ttl.max_visit_time bounds a purge worker's visit to one database.")));
		if (name != NULL)
			pfree(name);
	}
	return Max(wait_ms, 10);
}

/*
 * Fill the free places of the pool, most urgent database first.  Returns
 * how long to sleep at most: until the next database is due, unless a
 * worker stops before (its stop sets our latch).
 */
static long
fill_pool(void)
{
	long		wait_ms = ttl_naptime * 1000L;
	int			i;

	for (i = 0; i < ttl_max_workers; i++)
	{
		Oid			dboid;

		if (pool[i].handle != NULL)
			continue;
		dboid = ttl_db_pick(GetCurrentTimestamp(), ttl_naptime * 1000,
							ttl_database_blocked, &wait_ms);
		if (!OidIsValid(dboid) || !start_worker(i, dboid))
			break;
	}
	return wait_ms;
}

void
ttl_launcher_main(Datum arg)
{
	TimestampTz last_rescan = GetCurrentTimestamp();

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("ttl launcher");
	pool = MemoryContextAllocZero(TopMemoryContext, sizeof(PoolWorker) * ttl_max_workers);
	ttl_db_launcher_started();

	for (;;)
	{
		long		wait_ms = ttl_naptime * 1000L;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		reap_workers();
		if (ttl_enabled)
		{
			List	   *dbs = connectable_databases();
			bool		rescan = TimestampDifferenceExceeds(last_rescan, GetCurrentTimestamp(),
															ttl_rescan_interval * 1000);

			if (rescan)
				last_rescan = GetCurrentTimestamp();
			ttl_db_sync(dbs, rescan);
			list_free(dbs);
			/* replicas first: no visit starts while one lags (replication_wait.c) */
			if (ttl_replication_wait_check(true))
				wait_ms = Min(wait_ms, TTL_LAG_RECHECK_MS);
			else
				wait_ms = fill_pool();
		}
		/* also with ttl.enabled off: a worker may still be running */
		wait_ms = enforce_visit_bound(wait_ms);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms,
						 ttl_wait_event(&launcher_wait_event, "TtlLauncherNaptime"));
		ResetLatch(MyLatch);
	}
}
