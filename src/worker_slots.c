/*
 * worker_slots.c
 *		The shared memory of the scheduler: one slot per purge worker
 *		(claimed by ttl_claim_worker_slot at the worker's start, at most
 *		ttl.max_workers at once) and the list of databases blocked by a
 *		command that needs them alone, with the ProcessUtility hook that
 *		lets DROP DATABASE, ALTER DATABASE ... RENAME, ALTER DATABASE ...
 *		SET TABLESPACE and CREATE DATABASE ... TEMPLATE stop that
 *		database's worker first.  The same hook tells the launcher at once
 *		when CREATE EXTENSION ttl gives a database the extension
 *		(db_states.c, whose shared memory is requested here too).
 *
 * Locking: TtlShared->mutex (a spinlock) guards the slot array and the
 * list of blocked databases.  A slot is claimed by a worker at start and
 * released by its exit callback.  A backend about to run one of those
 * commands blocks the database for the duration of the command (no worker
 * may start there), stops its worker and waits for it, so the command
 * never finds our worker connected; the block is lifted when the command
 * ends.  It does so only when core's permission checks for that command
 * (mirrored in database_commands.c) will pass, so no role can stop a
 * worker with a command it may not run.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "scheduler.h"
#include "settings.h"

/* Waiting for a database's worker to exit, by name on 17+. */
static uint32 worker_exit_wait_event = 0;

typedef struct TtlWorkerSlot
{
	Oid			dboid;
	pid_t		pid;
} TtlWorkerSlot;

#define TTL_MAX_BLOCKED 16

typedef struct TtlBlockedDatabase
{
	Oid			dboid;
	pid_t		by_pid;			/* the backend running the command */
} TtlBlockedDatabase;

typedef struct TtlShared
{
	slock_t		mutex;
	TtlBlockedDatabase blocked[TTL_MAX_BLOCKED];
	int			nslots;
	TtlWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} TtlShared;

static TtlShared *ttl_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_process_utility_hook = NULL;

static Size
ttl_shared_size(void)
{
	return add_size(offsetof(TtlShared, slots),
					mul_size(max_worker_processes, sizeof(TtlWorkerSlot)));
}

static void
ttl_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(ttl_shared_size());
	ttl_db_states_request();
}

static void
ttl_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ttl_shared = ShmemInitStruct("ttl", ttl_shared_size(), &found);
	if (!found)
	{
		SpinLockInit(&ttl_shared->mutex);
		memset(ttl_shared->blocked, 0, sizeof(ttl_shared->blocked));
		ttl_shared->nslots = max_worker_processes;
		memset(ttl_shared->slots, 0, sizeof(TtlWorkerSlot) * max_worker_processes);
	}
	ttl_db_states_attach();
	LWLockRelease(AddinShmemInitLock);
}

static void
release_worker_slot(int code, Datum arg)
{
	int			i = DatumGetInt32(arg);

	SpinLockAcquire(&ttl_shared->mutex);
	ttl_shared->slots[i].dboid = InvalidOid;
	ttl_shared->slots[i].pid = 0;
	SpinLockRelease(&ttl_shared->mutex);
}

/* Whether a command blocks workers for this database; caller holds mutex. */
static bool
database_blocked_locked(Oid dboid)
{
	int			i;

	for (i = 0; i < TTL_MAX_BLOCKED; i++)
	{
		TtlBlockedDatabase *b = &ttl_shared->blocked[i];

		if (b->dboid == dboid && b->by_pid != 0)
			return true;
	}
	return false;
}

bool
ttl_database_blocked(Oid dboid)
{
	bool		blocked;

	SpinLockAcquire(&ttl_shared->mutex);
	blocked = database_blocked_locked(dboid);
	SpinLockRelease(&ttl_shared->mutex);
	return blocked;
}

/*
 * Called by a worker: record that it serves this database.  False when
 * another worker serves it already, a command has blocked it, or
 * ttl.max_workers workers run already (the launcher never starts more;
 * this makes the bound hold whatever happens).
 */
bool
ttl_claim_worker_slot(Oid dboid)
{
	int			i;
	int			free_slot = -1;
	int			taken = 0;

	SpinLockAcquire(&ttl_shared->mutex);
	if (database_blocked_locked(dboid))
	{
		SpinLockRelease(&ttl_shared->mutex);
		return false;
	}
	for (i = 0; i < ttl_shared->nslots; i++)
	{
		if (ttl_shared->slots[i].dboid == dboid && ttl_shared->slots[i].pid != 0)
		{
			SpinLockRelease(&ttl_shared->mutex);
			return false;		/* another worker serves it already */
		}
		if (ttl_shared->slots[i].pid != 0)
			taken++;
		else if (free_slot < 0)
			free_slot = i;
	}
	if (taken >= ttl_max_workers)
		free_slot = -1;
	if (free_slot >= 0)
	{
		ttl_shared->slots[free_slot].dboid = dboid;
		ttl_shared->slots[free_slot].pid = MyProcPid;
	}
	SpinLockRelease(&ttl_shared->mutex);
	if (free_slot < 0)
		return false;
	on_shmem_exit(release_worker_slot, Int32GetDatum(free_slot));
	return true;
}

static pid_t
worker_pid_for(Oid dboid)
{
	pid_t		pid = 0;
	int			i;

	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < ttl_shared->nslots; i++)
		if (ttl_shared->slots[i].dboid == dboid && ttl_shared->slots[i].pid != 0)
			pid = ttl_shared->slots[i].pid;
	SpinLockRelease(&ttl_shared->mutex);
	return pid;
}

/* At backend exit (also FATAL): lift any block this backend still holds. */
static void
unblock_my_databases(int code, Datum arg)
{
	int			i;

	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < TTL_MAX_BLOCKED; i++)
	{
		if (ttl_shared->blocked[i].by_pid == MyProcPid)
		{
			ttl_shared->blocked[i].dboid = InvalidOid;
			ttl_shared->blocked[i].by_pid = 0;
		}
	}
	SpinLockRelease(&ttl_shared->mutex);
}

static int
block_database(Oid dboid)
{
	static bool exit_callback_registered = false;
	int			i;
	int			slot = -1;

	if (!exit_callback_registered)
	{
		before_shmem_exit(unblock_my_databases, (Datum) 0);
		exit_callback_registered = true;
	}
	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < TTL_MAX_BLOCKED; i++)
	{
		if (ttl_shared->blocked[i].by_pid == 0)
		{
			ttl_shared->blocked[i].dboid = dboid;
			ttl_shared->blocked[i].by_pid = MyProcPid;
			slot = i;
			break;
		}
	}
	SpinLockRelease(&ttl_shared->mutex);
	return slot;
}

static void
unblock_database(int slot)
{
	SpinLockAcquire(&ttl_shared->mutex);
	ttl_shared->blocked[slot].dboid = InvalidOid;
	ttl_shared->blocked[slot].by_pid = 0;
	SpinLockRelease(&ttl_shared->mutex);
}

/*
 * Stop the worker of a database and wait (bounded) until it has gone.  The
 * database is blocked first, so no new worker can take its place.
 */
static void
stop_database_worker(Oid dboid)
{
	pid_t		pid;
	pid_t		signalled = 0;
	int			waited_ms = 0;

	while ((pid = worker_pid_for(dboid)) != 0 && waited_ms < 10000)
	{
		if (pid != signalled)
		{
			(void) kill(pid, SIGTERM);
			signalled = pid;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, ttl_wait_event(&worker_exit_wait_event, "TtlWorkerExit"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		waited_ms += 10;
	}
}

/*
 * CREATE EXTENSION ttl: the launcher is told (db_states.c) rather than
 * left to its next rescan, when the transaction commits.  Not before: a
 * worker that looked in between would not see the extension yet and say
 * so after our mark, and the database would wait for the rescan.  A
 * savepoint rolled back after the command leaves a mark that the next
 * worker there corrects.
 */
static bool ttl_created_in_xact = false;

static void
mark_created_at_commit(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && ttl_created_in_xact)
		ttl_db_mark_has_ttl(MyDatabaseId);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		ttl_created_in_xact = false;
}

static bool
creates_ttl_extension(Node *stmt)
{
	return IsA(stmt, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) stmt)->extname, "ttl") == 0;
}

static void
ttl_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Oid			dboid = ttl_shared ? ttl_database_needed_alone(pstmt->utilityStmt) : InvalidOid;
	int			block = OidIsValid(dboid) ? block_database(dboid) : -1;

	PG_TRY();
	{
		if (block >= 0)
			stop_database_worker(dboid);
		if (prev_process_utility_hook)
			prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
									  params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (block >= 0)
			unblock_database(block);
	}
	PG_END_TRY();
	if (creates_ttl_extension(pstmt->utilityStmt))
		ttl_created_in_xact = true;
}

/*
 * The shared memory of the worker slots, and the utility hook that stops a
 * database's worker before DROP DATABASE and the like.
 */
void
ttl_install_worker_slot_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ttl_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ttl_shmem_startup;
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = ttl_process_utility;
	RegisterXactCallback(mark_created_at_commit, NULL);
}
