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
 * A worker's slot also holds what the visit bound needs (visit.h): when
 * its visit started, the time it has spent waiting on purpose (which does
 * not count), and its in-flight record: the container it is in and what
 * it does there (a batch, the backlog walk, the restore guard's estimate),
 * set before each statement on a user table and cleared after.  The
 * launcher reads them to end a visit that overstays ttl.max_visit_time
 * (launcher.c); a worker that exits with its in-flight record still set
 * (the launcher terminated it, or it died otherwise) hands the record to
 * its database's state (db_states.c), where the next worker there finds
 * it and backs that container off.  A worker stopped for a database
 * command (below) hands nothing on: the container did nothing wrong.
 *
 * The list of blocked databases has one place per backend (MaxBackends):
 * a backend runs one such command at a time, so every command finds a
 * place, however many run at once; should one ever find none, it waits
 * for one rather than run without its guard.
 *
 * Locking: TtlShared->mutex (a spinlock) guards the slot array and the
 * list of blocked databases.  A slot is claimed by a worker at start and
 * released by its exit callback (before_shmem_exit: db_states.c lives in
 * dynamic shared memory; its lock is taken only after releasing the
 * spinlock).  A backend about to run one of those
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

#include "base/compat.h"
#include "base/settings.h"
#include "base/visit.h"
#include "scheduler/scheduler.h"

/* Waiting for a database's worker to exit, by name on 17+. */
static uint32 worker_exit_wait_event = 0;

/* Who ended a worker from outside, as its exit callback sees it. */
typedef enum TtlSlotEnd
{
	TTL_END_NONE = 0,
	TTL_END_VISIT_BOUND,		/* the launcher: ttl.max_visit_time */
	TTL_END_DB_COMMAND			/* DROP DATABASE and the like (below) */
} TtlSlotEnd;

typedef struct TtlWorkerSlot
{
	Oid			dboid;
	pid_t		pid;
	TimestampTz visit_start;	/* when the worker claimed the slot */
	TimestampTz wait_since;		/* 0: not waiting on purpose now */
	int64		waited_us;		/* waits on purpose that have ended */
	Oid			relid;			/* in-flight record: InvalidOid, none */
	TtlStep		step;
	TtlSlotEnd	end;
	int64		bound_ms;		/* with TTL_END_VISIT_BOUND: the bound */
} TtlWorkerSlot;

typedef struct TtlBlockedDatabase
{
	Oid			dboid;
	pid_t		by_pid;			/* the backend running the command */
} TtlBlockedDatabase;

typedef struct TtlShared
{
	slock_t		mutex;
	int64		visit_bound_ms; /* the launcher's, 0: not published yet */
	int			nblocked;		/* MaxBackends places after the slots */
	int			nslots;
	TtlWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} TtlShared;

static TtlShared *ttl_shared = NULL;
static TtlBlockedDatabase *blocked = NULL;	/* ttl_shared->nblocked places */
static int	my_slot = -1;		/* a worker's own slot, once claimed */

static void slot_set_inflight(Oid relid, TtlStep step);
static void slot_set_waiting(bool waiting);
static int64 slot_time_left_ms(int64 *bound_ms);

/* What the worker's slot lends visit.c once claimed (visit.h). */
static const TtlVisitSlot my_visit_slot = {
	slot_set_inflight, slot_set_waiting, slot_time_left_ms
};

static Size
slots_size(void)
{
	return MAXALIGN(add_size(offsetof(TtlShared, slots),
							 mul_size(max_worker_processes, sizeof(TtlWorkerSlot))));
}

/* MaxBackends is known by the time shared memory is requested. */
static Size
ttl_shared_size(void)
{
	return add_size(slots_size(), mul_size(MaxBackends, sizeof(TtlBlockedDatabase)));
}

/* shmem_request_hook's step (ttl.c): the slots and the databases' states */
void
ttl_scheduler_shmem_request(void)
{
	RequestAddinShmemSpace(ttl_shared_size());
	ttl_db_states_request();
}

/* shmem_startup_hook's step (ttl.c) */
void
ttl_scheduler_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ttl_shared = ShmemInitStruct("ttl", ttl_shared_size(), &found);
	blocked = (TtlBlockedDatabase *) ((char *) ttl_shared + slots_size());
	if (!found)
	{
		SpinLockInit(&ttl_shared->mutex);
		ttl_shared->visit_bound_ms = 0;
		ttl_shared->nblocked = MaxBackends;
		memset(blocked, 0, sizeof(TtlBlockedDatabase) * MaxBackends);
		ttl_shared->nslots = max_worker_processes;
		memset(ttl_shared->slots, 0, sizeof(TtlWorkerSlot) * max_worker_processes);
	}
	ttl_db_states_attach();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * At the worker's exit (any exit, FATAL included): the slot is free, and
 * an in-flight record still set goes to the database's state for the next
 * worker there (db_states.c).
 */
static void
release_worker_slot(int code, Datum arg)
{
	int			i = DatumGetInt32(arg);
	TtlWorkerSlot left;

	SpinLockAcquire(&ttl_shared->mutex);
	left = ttl_shared->slots[i];
	memset(&ttl_shared->slots[i], 0, sizeof(TtlWorkerSlot));
	SpinLockRelease(&ttl_shared->mutex);
	ttl_visit_attach(NULL);
	my_slot = -1;
	if (OidIsValid(left.relid) && left.end != TTL_END_DB_COMMAND)
		ttl_db_note_interrupted(left.dboid, left.relid, left.step,
								left.end == TTL_END_VISIT_BOUND, left.bound_ms);
}

/* Whether a command blocks workers for this database; caller holds mutex. */
static bool
database_blocked_locked(Oid dboid)
{
	int			i;

	for (i = 0; i < ttl_shared->nblocked; i++)
	{
		TtlBlockedDatabase *b = &blocked[i];

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
	TimestampTz now = GetCurrentTimestamp();

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
		TtlWorkerSlot *slot = &ttl_shared->slots[free_slot];

		memset(slot, 0, sizeof(TtlWorkerSlot));
		slot->dboid = dboid;
		slot->pid = MyProcPid;
		slot->visit_start = now;
	}
	SpinLockRelease(&ttl_shared->mutex);
	if (free_slot < 0)
		return false;
	my_slot = free_slot;
	/*
	 * Before the dynamic shared memory is detached: the in-flight record
	 * goes to db_states.c, which lives there.  Registered before
	 * InitPostgres, so it runs after the transaction is aborted.
	 */
	before_shmem_exit(release_worker_slot, Int32GetDatum(free_slot));
	ttl_visit_attach(&my_visit_slot);
	return true;
}

/* ---- the visit bound (visit.h) ---- */

/*
 * The in-flight record, lent to visit.c (visit.h) once the worker has its
 * slot: the container it is in and what it does there.
 */
static void
slot_set_inflight(Oid relid, TtlStep step)
{
	SpinLockAcquire(&ttl_shared->mutex);
	ttl_shared->slots[my_slot].relid = relid;
	ttl_shared->slots[my_slot].step = step;
	SpinLockRelease(&ttl_shared->mutex);
}

/* A wait on purpose begins or ends: it does not count (visit.c). */
static void
slot_set_waiting(bool waiting)
{
	TtlWorkerSlot *slot;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&ttl_shared->mutex);
	slot = &ttl_shared->slots[my_slot];
	if (waiting && slot->wait_since == 0)
		slot->wait_since = now;
	else if (!waiting && slot->wait_since != 0)
	{
		slot->waited_us += now - slot->wait_since;
		slot->wait_since = 0;
	}
	SpinLockRelease(&ttl_shared->mutex);
}

/* Working time of a slot's visit so far, in microseconds; mutex held. */
static int64
working_us_locked(TtlWorkerSlot *slot, TimestampTz now)
{
	int64		us = now - slot->visit_start - slot->waited_us;

	if (slot->wait_since != 0)
		us -= now - slot->wait_since;
	return us;
}

/* Launcher: the bound it enforces, for the workers to plan by. */
void
ttl_visit_publish_bound(int64 bound_ms)
{
	SpinLockAcquire(&ttl_shared->mutex);
	ttl_shared->visit_bound_ms = bound_ms;
	SpinLockRelease(&ttl_shared->mutex);
}

/*
 * Worker: what is left of its visit, in ms, and the whole bound
 * (*bound_ms).  The bound is the launcher's (its settings are the ones
 * enforced), else this backend's own.
 */
static int64
slot_time_left_ms(int64 *bound_ms)
{
	int64		working_us;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&ttl_shared->mutex);
	*bound_ms = ttl_shared->visit_bound_ms;
	working_us = working_us_locked(&ttl_shared->slots[my_slot], now);
	SpinLockRelease(&ttl_shared->mutex);
	if (*bound_ms <= 0)
		*bound_ms = ttl_visit_bound_ms();
	return *bound_ms - working_us / 1000;
}

/*
 * Launcher: whether the worker pid has overstayed bound_ms of working
 * time, the first time it is asked (the slot then says so, for the
 * worker's exit callback); *relid and *step: where it is.  Otherwise
 * *left_ms: how long until it would have overstayed (unchanged when the
 * pid has no slot, or was told already).
 */
bool
ttl_visit_overstayed(pid_t pid, TimestampTz now, int64 bound_ms,
					 long *left_ms, Oid *relid, TtlStep *step)
{
	bool		over = false;
	int			i;

	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < ttl_shared->nslots; i++)
	{
		TtlWorkerSlot *slot = &ttl_shared->slots[i];
		int64		left;

		if (slot->pid != pid || pid == 0 || slot->end != TTL_END_NONE)
			continue;
		left = bound_ms - working_us_locked(slot, now) / 1000;
		if (left > 0)
		{
			*left_ms = (long) Min(left, (int64) *left_ms);
			break;
		}
		slot->end = TTL_END_VISIT_BOUND;
		slot->bound_ms = bound_ms;
		*relid = slot->relid;
		*step = slot->step;
		over = true;
		break;
	}
	SpinLockRelease(&ttl_shared->mutex);
	return over;
}

/* For ttl.databases: the container worker pid is in now, if any. */
void
ttl_visit_inflight_of(pid_t pid, Oid *relid, TtlStep *step)
{
	int			i;

	*relid = InvalidOid;
	*step = TTL_STEP_NONE;
	if (ttl_shared == NULL || pid == 0)
		return;
	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < ttl_shared->nslots; i++)
	{
		if (ttl_shared->slots[i].pid == pid)
		{
			*relid = ttl_shared->slots[i].relid;
			*step = ttl_shared->slots[i].step;
			break;
		}
	}
	SpinLockRelease(&ttl_shared->mutex);
}

/*
 * The pid of dboid's worker, or 0.  For a database command about to stop
 * it, which marks the slot: the worker's in-flight record is not handed on.
 */
static pid_t
worker_pid_for(Oid dboid)
{
	pid_t		pid = 0;
	int			i;

	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < ttl_shared->nslots; i++)
		if (ttl_shared->slots[i].dboid == dboid && ttl_shared->slots[i].pid != 0)
		{
			pid = ttl_shared->slots[i].pid;
			ttl_shared->slots[i].end = TTL_END_DB_COMMAND;
		}
	SpinLockRelease(&ttl_shared->mutex);
	return pid;
}

/* At backend exit (also FATAL): lift any block this backend still holds. */
static void
unblock_my_databases(int code, Datum arg)
{
	int			i;

	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < ttl_shared->nblocked; i++)
	{
		if (blocked[i].by_pid == MyProcPid)
		{
			blocked[i].dboid = InvalidOid;
			blocked[i].by_pid = 0;
		}
	}
	SpinLockRelease(&ttl_shared->mutex);
}

/* A free place of the list made ours for dboid, or -1; mutex not held. */
static int
take_block_place(Oid dboid)
{
	int			i;
	int			place = -1;

	SpinLockAcquire(&ttl_shared->mutex);
	for (i = 0; i < ttl_shared->nblocked; i++)
	{
		if (blocked[i].by_pid == 0)
		{
			blocked[i].dboid = dboid;
			blocked[i].by_pid = MyProcPid;
			place = i;
			break;
		}
	}
	SpinLockRelease(&ttl_shared->mutex);
	return place;
}

/*
 * Block dboid for this backend's command: its place in the list.  There
 * is one place per backend, so one is always free; were none, the command
 * waits for one (it never runs unguarded).
 */
static int
block_database(Oid dboid)
{
	static bool exit_callback_registered = false;
	int			place;

	if (!exit_callback_registered)
	{
		before_shmem_exit(unblock_my_databases, (Datum) 0);
		exit_callback_registered = true;
	}
	while ((place = take_block_place(dboid)) < 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, ttl_wait_event(&worker_exit_wait_event, "TtlWorkerExit"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return place;
}

static void
unblock_database(int place)
{
	SpinLockAcquire(&ttl_shared->mutex);
	blocked[place].dboid = InvalidOid;
	blocked[place].by_pid = 0;
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

/* An xact callback (ttl.c registers it). */
void
ttl_scheduler_xact_callback(XactEvent event, void *arg)
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

/*
 * ProcessUtility_hook's step (ttl.c): a command that needs its database
 * alone stops that database's worker first; CREATE EXTENSION ttl tells the
 * launcher at commit.
 */
void
ttl_scheduler_utility(TTL_UTILITY_PARAMS, TtlUtilityNext next)
{
	Oid			dboid = ttl_shared ? ttl_database_needed_alone(pstmt->utilityStmt) : InvalidOid;
	int			block = OidIsValid(dboid) ? block_database(dboid) : -1;

	PG_TRY();
	{
		if (block >= 0)
			stop_database_worker(dboid);
		next(TTL_UTILITY_ARGS);
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
