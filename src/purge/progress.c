/*
 * progress.c
 *		ttl.purge_progress: what each running purge (the worker's visit,
 *		CALL ttl.run_purge(), ttl.purge()) is doing now.  PostgreSQL's
 *		pgstat_progress_* API knows a fixed list of commands and one command
 *		per backend (a purge runs inside a CALL or a SELECT, and VACUUM may
 *		report too), so ttl keeps its own: one slot per backend (indexed by
 *		the backend's PGPROC number, MaxBackends of them), written only by
 *		that backend, and ttl._purge_progress() behind the view copies them.
 *
 *		Where the slots live: with shared_preload_libraries, in the main
 *		shared memory (requested in ttl.c).  Without it, on 17 and later in
 *		a segment of the DSM registry made by the first backend that purges
 *		or reads (compat.h, ttl_named_shmem); on 15 and 16 nowhere: the view
 *		is empty.
 *
 *		What a row says: the container the purge is in now (the worker and
 *		run_purge take one batch of each container in turn), when this
 *		purge first reached it, its rows deleted since then and the rows
 *		that were due then, counted as ttl.stats counts expired_backlog
 *		(purge_batch.c; NULL where not counted), and the phase.
 *
 * Locking: none that a purge takes.  Each slot has a change counter read
 * as a seqlock (as PgBackendStatus's st_changecount): its one writer makes
 * it odd, writes, makes it even, with write barriers between; never an
 * error in between.  A reader copies the slot between two reads of the
 * counter and tries again while they differ or are odd: the writer never
 * waits for a reader and a reader never sees half a write.  A slot is
 * cleared when its purge ends (the callers' PG_FINALLY) and when its
 * backend exits (before_shmem_exit), so a FATAL leaves nothing behind.
 *
 * Privacy: as pg_stat_activity's details.  A reader sees pid and database
 * of every purge; the rest only of purges run by a role whose privileges it
 * has, or with pg_read_all_stats (the worker runs as the bootstrap
 * superuser).  A container is an OID of its own database: shown in the
 * reader's database only, NULL elsewhere (pg_stat_progress_vacuum shows
 * the bare OID).
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "purge/progress.h"

typedef struct ProgressSlot
{
	uint32		changecount;	/* odd while its writer writes */
	int32		pid;			/* 0: no purge */
	Oid			dboid;
	Oid			userid;			/* the purging session's role */
	Oid			relid;			/* InvalidOid: none yet */
	int32		phase;			/* a TtlPhase */
	int64		rows_done;
	int64		rows_due;		/* < 0: not counted */
	TimestampTz started;		/* this purge first reached relid */
} ProgressSlot;

typedef struct ProgressArea
{
	int			nslots;
	ProgressSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ProgressArea;

static const char *const phase_names[] = {
	[TTL_PHASE_WALKING] = "walking",
	[TTL_PHASE_DELETING] = "deleting",
	[TTL_PHASE_ARCHIVING] = "archiving",
	[TTL_PHASE_RETIRING] = "retiring",
	[TTL_PHASE_THROTTLED] = "throttled",
	[TTL_PHASE_WAITING_FOR_REPLICAS] = "waiting for replicas",
};

/* the main shared memory's area (with the preload), or the registry's */
static ProgressArea *area = NULL;
static bool area_looked_up = false;

/* this backend's purge: its slot, nesting, and what it last published */
static volatile ProgressSlot *my_slot = NULL;
static int	depth = 0;
static ProgressSlot mine;
static bool exit_callback_set = false;

static Size
area_size(int nslots)
{
	return add_size(offsetof(ProgressArea, slots),
					mul_size(sizeof(ProgressSlot), nslots));
}

static void
area_init(void *ptr)
{
	ProgressArea *a = (ProgressArea *) ptr;

	memset(a, 0, area_size(MaxBackends));
	a->nslots = MaxBackends;
}

void
ttl_progress_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(area_size(MaxBackends)));
}

void
ttl_progress_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	area = ShmemInitStruct("ttl purge progress", area_size(MaxBackends), &found);
	if (!found)
		area_init(area);
	LWLockRelease(AddinShmemInitLock);
	area_looked_up = true;
}

/* The slots: the preload's, else the DSM registry's (17+), else NULL. */
static ProgressArea *
progress_area(void)
{
	bool		found;

	if (!area_looked_up)
	{
		area = (ProgressArea *) ttl_named_shmem("ttl purge progress",
												area_size(MaxBackends),
												area_init, &found);
		area_looked_up = true;
	}
	return area;
}

/* Copy mine into the slot, as its one writer (see Locking above). */
static void
publish(void)
{
	volatile ProgressSlot *s = my_slot;

	if (s == NULL)
		return;
	s->changecount++;
	pg_write_barrier();
	s->pid = mine.pid;
	s->dboid = mine.dboid;
	s->userid = mine.userid;
	s->relid = mine.relid;
	s->phase = mine.phase;
	s->rows_done = mine.rows_done;
	s->rows_due = mine.rows_due;
	s->started = mine.started;
	pg_write_barrier();
	s->changecount++;
}

static void
clear_at_exit(int code, Datum arg)
{
	depth = 0;
	mine.pid = 0;
	publish();
	my_slot = NULL;
}

void
ttl_progress_begin(void)
{
	ProgressArea *a;
	int			procno;

	if (depth++ > 0)
		return;
	a = progress_area();
	procno = MyProc != NULL ? (int) (MyProc - ProcGlobal->allProcs) : -1;
	if (a == NULL || procno < 0 || procno >= a->nslots)
		return;					/* nowhere to show it */
	if (!exit_callback_set)
	{
		before_shmem_exit(clear_at_exit, (Datum) 0);
		exit_callback_set = true;
	}
	my_slot = &a->slots[procno];
	memset(&mine, 0, sizeof(mine));
	mine.pid = MyProcPid;
	mine.dboid = MyDatabaseId;
	mine.userid = GetSessionUserId();
	mine.relid = InvalidOid;
	mine.phase = TTL_PHASE_WALKING;
	mine.rows_due = -1;
	mine.started = GetCurrentTimestamp();
	publish();
}

void
ttl_progress_end(void)
{
	if (depth == 0 || --depth > 0)
		return;
	mine.pid = 0;
	publish();
	my_slot = NULL;
}

void
ttl_progress_container(Oid relid, TimestampTz started, int64 rows_done, int64 rows_due)
{
	mine.relid = relid;
	mine.started = started;
	mine.rows_done = rows_done;
	mine.rows_due = rows_due;
	mine.phase = TTL_PHASE_WALKING;
	publish();
}

void
ttl_progress_phase(TtlPhase phase)
{
	if (mine.phase == (int32) phase)
		return;
	mine.phase = phase;
	publish();
}

TtlPhase
ttl_progress_current_phase(void)
{
	return (TtlPhase) mine.phase;
}

void
ttl_progress_rows(int64 rows_done)
{
	mine.rows_done = rows_done;
	publish();
}

/* One row gone (the direct deleter's loop): a few stores, no lock. */
void
ttl_progress_row_deleted(void)
{
	mine.rows_done++;
	if (mine.phase == TTL_PHASE_WALKING)
		mine.phase = TTL_PHASE_DELETING;
	publish();
}

void
ttl_progress_due(int64 rows_due)
{
	mine.rows_due = rows_due;
	publish();
}

/* A consistent copy of slot (see Locking above). */
static void
read_slot(volatile ProgressSlot *s, ProgressSlot *copy)
{
	for (;;)
	{
		uint32		before = s->changecount;
		uint32		after;

		pg_read_barrier();
		copy->pid = s->pid;
		copy->dboid = s->dboid;
		copy->userid = s->userid;
		copy->relid = s->relid;
		copy->phase = s->phase;
		copy->rows_done = s->rows_done;
		copy->rows_due = s->rows_due;
		copy->started = s->started;
		pg_read_barrier();
		after = s->changecount;
		if (before == after && (before & 1) == 0)
			return;
		CHECK_FOR_INTERRUPTS();
	}
}

/* ttl._purge_progress(), behind the view ttl.purge_progress. */
PG_FUNCTION_INFO_V1(ttl_purge_progress);
Datum
ttl_purge_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ProgressArea *a;
	TimestampTz now = GetCurrentTimestamp();
	bool		all_stats;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	a = progress_area();
	if (a == NULL)
		return (Datum) 0;
	all_stats = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	for (i = 0; i < a->nslots; i++)
	{
		ProgressSlot s;
		Datum		values[8];
		bool		nulls[8] = {0};
		char	   *dbname;
		long		secs;
		int			usecs;
		double		elapsed;

		if (a->slots[i].pid == 0)
			continue;			/* a glance without the seqlock: idle */
		read_slot(&a->slots[i], &s);
		if (s.pid == 0)
			continue;
		values[0] = Int32GetDatum(s.pid);
		dbname = get_database_name(s.dboid);
		if (dbname != NULL)
			values[1] = DirectFunctionCall1(namein, CStringGetDatum(dbname));
		else
			nulls[1] = true;	/* dropped meanwhile */
		if (!all_stats && !has_privs_of_role(GetUserId(), s.userid))
		{
			nulls[2] = nulls[3] = nulls[4] = nulls[5] = nulls[6] = nulls[7] = true;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			continue;
		}
		values[2] = ObjectIdGetDatum(s.relid);
		nulls[2] = !OidIsValid(s.relid) || s.dboid != MyDatabaseId;
		values[3] = CStringGetTextDatum(phase_names[Min(Max(s.phase, 0),
														lengthof(phase_names) - 1)]);
		values[4] = Int64GetDatum(s.rows_done);
		/* a count is a lower bound past its cap: never below what is done */
		values[5] = Int64GetDatum(Max(s.rows_due, s.rows_done));
		nulls[5] = s.rows_due < 0;
		TimestampDifference(s.started, now, &secs, &usecs);
		elapsed = secs + usecs / 1000000.0;
		values[6] = Float8GetDatum(elapsed > 0 ? s.rows_done / elapsed : 0.0);
		nulls[6] = elapsed <= 0;
		values[7] = TimestampTzGetDatum(s.started);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
