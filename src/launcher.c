/*
 * launcher.c
 *		The ttl launcher: a static background worker that keeps one purge
 *		worker (worker.c) per database.  The shared memory that lets DROP
 *		DATABASE stop that worker first is in worker_slots.c.
 *
 * Locking: the launcher holds no locks while it sleeps; it reads
 * pg_database in a short transaction each round.  It starts only once
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
#include "utils/acl.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "scheduler.h"
#include "settings.h"

/* The launcher's naptime wait, by name in pg_stat_activity on 17+. */
static uint32 launcher_wait_event = 0;

typedef struct LaunchedWorker
{
	Oid			dboid;
	BackgroundWorkerHandle *handle;
	TimestampTz launched_at;
} LaunchedWorker;

/* From _PG_init, when loaded by shared_preload_libraries. */
void
ttl_register_launcher(void)
{
	BackgroundWorker worker;

	ttl_install_worker_slot_hooks();

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

/*
 * Start a worker for every database that has none.  A worker finding no
 * ttl extension in its database exits at once; it is tried again next
 * round, which is how new installations are picked up with no set-up.
 */
static void
launch_round(HTAB *launched)
{
	List	   *dbs = connectable_databases();
	ListCell   *lc;
	static bool warned = false;

	foreach(lc, dbs)
	{
		Oid			dboid = lfirst_oid(lc);
		LaunchedWorker *entry;
		bool		found;
		pid_t		pid;

		if (ttl_database_blocked(dboid))
			continue;			/* a command needs it to itself */
		entry = hash_search(launched, &dboid, HASH_ENTER, &found);
		if (found && entry->handle != NULL &&
			GetBackgroundWorkerPid(entry->handle, &pid) != BGWH_STOPPED)
			continue;
		/* at most one start per database and naptime, whatever wakes us */
		if (found && !TimestampDifferenceExceeds(entry->launched_at,
												 GetCurrentTimestamp(),
												 ttl_naptime * 1000))
			continue;
		entry->launched_at = GetCurrentTimestamp();
		if (found && entry->handle != NULL)
			pfree(entry->handle);
		entry->handle = NULL;
		if (!launch_worker(dboid, &entry->handle))
		{
			entry->handle = NULL;
			if (!warned)
				ereport(WARNING,
						(errmsg("ttl launcher could not start a worker for database %u", dboid),
						 errhint("Raise max_worker_processes.")));
			warned = true;
		}
	}
	list_free(dbs);
}

void
ttl_launcher_main(Datum arg)
{
	HASHCTL		ctl;
	HTAB	   *launched;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("ttl launcher");

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(LaunchedWorker);
	launched = hash_create("ttl launched workers", 16, &ctl, HASH_ELEM | HASH_BLOBS);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (ttl_enabled)
			launch_round(launched);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ttl_naptime * 1000L,
						 ttl_wait_event(&launcher_wait_event, "TtlLauncherNaptime"));
		ResetLatch(MyLatch);
	}
}
