/*
 * guard_events.c
 *		The restore guard's events in shared memory (guard.c decides per
 *		container): (b) a start from a base backup or for point-in-time
 *		recovery, seen in the postmaster, and (c) the wall clock moving
 *		ahead of the monotonic clock between two rounds of the pool; and
 *		which generation of events each database has checked.
 *
 * (b) is decided in the postmaster: the shared memory startup hook runs
 * there before the startup process is forked, and the startup process is
 * what renames backup_label to backup_label.old (as soon as it has read it)
 * and removes recovery.signal (at the end of recovery).  A plain restart or
 * a crash restart after recovery found neither file, and standby.signal
 * means a standby, which never purges (a promoted standby is not held).
 * Events (b) and (c) bump a generation in shared memory; each database
 * remembers the last generation its containers were checked at.
 *
 * Locking: the shared state's spinlock for short copies only (this_db
 * is called with it held).
 */
#include "postgres.h"

#include <sys/stat.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "guard/guard_events.h"

int			ttl_clock_jump_threshold = 3600;

#define GUARD_MAX_DATABASES 1024
#define GUARD_REASON_LEN 160

typedef struct GuardDb
{
	Oid			dboid;			/* InvalidOid: free */
	uint64		checked;		/* generation its containers were checked at */
} GuardDb;

typedef struct GuardShared
{
	slock_t		mutex;
	uint64		generation;		/* events so far (b, c) */
	char		reason[GUARD_REASON_LEN];	/* the last event's */
	bool		have_clock;
	TimestampTz wall;			/* at the last round of the pool */
	instr_time	mono;
	GuardDb		dbs[GUARD_MAX_DATABASES];
} GuardShared;

static GuardShared *guard_shared = NULL;

/* ---- shared memory ---- */

/* shmem_request_hook's step (ttl.c) */
void
ttl_guard_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(GuardShared)));
}

/*
 * In the postmaster (cwd: the data directory), before the startup process
 * runs: a start from a base backup or for point-in-time recovery.
 */
static const char *
start_event(void)
{
	struct stat st;

	if (stat("standby.signal", &st) == 0)
		return NULL;			/* a standby never purges */
	if (stat("backup_label", &st) == 0)
		return "the server started from a base backup (backup_label)";
	if (stat("recovery.signal", &st) == 0)
		return "the server started for point-in-time recovery (recovery.signal)";
	return NULL;
}

/* shmem_startup_hook's step (ttl.c) */
void
ttl_guard_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	guard_shared = ShmemInitStruct("ttl restore guard", sizeof(GuardShared), &found);
	if (!found)
	{
		const char *event = IsUnderPostmaster ? NULL : start_event();

		memset(guard_shared, 0, sizeof(GuardShared));
		SpinLockInit(&guard_shared->mutex);
		if (event != NULL)
		{
			guard_shared->generation = 1;
			strlcpy(guard_shared->reason, event, GUARD_REASON_LEN);
			ereport(LOG,
					(errmsg("ttl restore guard: %s", event),
					 errdetail("The first purge round of each database checks its containers' backlogs before purging.")));
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * A worker's round: compare the wall clock's move since the pool's last
 * round with the monotonic clock's; a jump ahead beyond the threshold is an
 * event.  The wall clock is ttl's (ttl.now_override when set), so a test
 * can move it.
 */
static void
note_clock(void)
{
	TimestampTz wall = ttl_current_time();
	instr_time	mono;
	char		reason[GUARD_REASON_LEN];
	bool		jumped = false;

	INSTR_TIME_SET_CURRENT(mono);
	SpinLockAcquire(&guard_shared->mutex);
	if (guard_shared->have_clock && ttl_clock_jump_threshold > 0)
	{
		instr_time	elapsed = mono;
		int64		mono_us;
		int64		ahead_s;

		INSTR_TIME_SUBTRACT(elapsed, guard_shared->mono);
		mono_us = (int64) INSTR_TIME_GET_MICROSEC(elapsed);
		ahead_s = ((wall - guard_shared->wall) - mono_us) / USECS_PER_SEC;
		if (ahead_s > ttl_clock_jump_threshold)
		{
			jumped = true;
			guard_shared->generation++;
			snprintf(reason, sizeof(reason),
					 "the wall clock jumped " INT64_FORMAT " s ahead between two purge rounds",
					 ahead_s);
			strlcpy(guard_shared->reason, reason, GUARD_REASON_LEN);
		}
	}
	guard_shared->have_clock = true;
	guard_shared->wall = wall;
	guard_shared->mono = mono;
	SpinLockRelease(&guard_shared->mutex);
	if (jumped)
		ereport(LOG,
				(errmsg("ttl restore guard: %s", reason),
				 errdetail("The next purge round of each database checks its containers' backlogs before purging.")));
}

/* The entry of this database; lock held.  NULL when the table is full. */
static GuardDb *
this_db(void)
{
	GuardDb    *free_entry = NULL;
	int			i;

	for (i = 0; i < GUARD_MAX_DATABASES; i++)
	{
		if (guard_shared->dbs[i].dboid == MyDatabaseId)
			return &guard_shared->dbs[i];
		if (free_entry == NULL && guard_shared->dbs[i].dboid == InvalidOid)
			free_entry = &guard_shared->dbs[i];
	}
	if (free_entry != NULL)
	{
		free_entry->dboid = MyDatabaseId;
		free_entry->checked = 0;
	}
	return free_entry;
}

/*
 * The start of a round (ttl_guard_round_begin): a worker notes the clock,
 * and the round learns whether an event is unchecked in this database.
 */
void
ttl_guard_events_begin(TtlGuardRound *round)
{
	if (guard_shared != NULL)
	{
		GuardDb    *db;
		char		reason[GUARD_REASON_LEN];

		if (ttl_am_background_worker())
			note_clock();
		SpinLockAcquire(&guard_shared->mutex);
		round->generation = guard_shared->generation;
		db = this_db();
		round->check_all = db != NULL && db->checked < round->generation;
		strlcpy(reason, guard_shared->reason, GUARD_REASON_LEN);
		SpinLockRelease(&guard_shared->mutex);
		if (round->check_all)
			round->event_reason = pstrdup(reason);
	}
}

/*
 * After every container of the database was asked (all_owners), the event
 * is checked for this database.
 */
void
ttl_guard_round_end(TtlGuardRound *round)
{
	if (!round->active || guard_shared == NULL || !round->check_all || round->failed)
		return;
	SpinLockAcquire(&guard_shared->mutex);
	{
		GuardDb    *db = this_db();

		if (db != NULL && db->checked < round->generation)
			db->checked = round->generation;
	}
	SpinLockRelease(&guard_shared->mutex);
}
