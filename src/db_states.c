/*
 * db_states.c
 *		What the scheduler knows about each database, in fixed-size shared
 *		memory, since the launcher connects to none: whether it has the
 *		extension (unknown until a worker looked, or CREATE EXTENSION ttl
 *		said so), when it was last served, the backlog its last worker left
 *		(due rows, oldest due item), its last error, and the resume points
 *		of its unfinished containers.  From this the launcher picks the next
 *		database to serve (ttl_db_pick); ttl.databases and ttl.worker_pool
 *		show it.
 *
 * Locking: one LWLock (tranche "ttl") guards the whole table; every
 * function here takes it for a short copy or scan, never across anything
 * that may wait or raise.  A database the table has no room for
 * (TTL_MAX_DATABASES) is not served; a resume point that finds no room
 * (TTL_MAX_RESUME_POINTS) is dropped, which only costs that container a
 * walk from its lowest key.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "purge.h"
#include "scheduler.h"
#include "settings.h"

#define TTL_MAX_DATABASES 1024
#define TTL_MAX_RESUME_POINTS 1024
#define TTL_ERROR_LEN 256

/* A database passed over this many times goes before any other. */
#define TTL_MAX_PASSES 4

typedef enum TtlHasTtl
{
	TTL_DB_UNKNOWN = 0,			/* never visited (or the rescan is due) */
	TTL_DB_YES,
	TTL_DB_NO
} TtlHasTtl;

typedef struct TtlDbState
{
	Oid			dboid;			/* InvalidOid: a free entry */
	TtlHasTtl	has_ttl;
	bool		seen;			/* in pg_database at the last sync */
	bool		running;		/* the launcher started a worker for it */
	pid_t		pid;			/* that worker, once it has connected */
	int			passed_over;	/* picks that chose another database */
	uint32		ext_marks;		/* CREATE EXTENSION ttl commits seen */
	int64		visits;			/* workers started for it */
	TimestampTz last_served;	/* the end of its last worker's visit */
	int64		due_rows;		/* backlog when its last worker left */
	TimestampTz oldest_due;		/* 0: none due */
	TimestampTz last_error_at;
	char		last_error[TTL_ERROR_LEN];
} TtlDbState;

typedef struct TtlSavedResume
{
	Oid			dboid;			/* InvalidOid: a free entry */
	TtlResumePoint point;
} TtlSavedResume;

typedef struct TtlDbTable
{
	LWLock	   *lock;
	int			running;		/* workers connected now */
	int			high_water;		/* most ever connected at once */
	TtlDbState	dbs[TTL_MAX_DATABASES];
	TtlSavedResume resume[TTL_MAX_RESUME_POINTS];
} TtlDbTable;

static TtlDbTable *db_table = NULL;

Size
ttl_db_states_size(void)
{
	return sizeof(TtlDbTable);
}

/* From the shmem request hook. */
void
ttl_db_states_request(void)
{
	RequestAddinShmemSpace(ttl_db_states_size());
	RequestNamedLWLockTranche("ttl", 1);
}

/* From the shmem startup hook, AddinShmemInitLock held. */
void
ttl_db_states_attach(void)
{
	bool		found;

	db_table = ShmemInitStruct("ttl databases", ttl_db_states_size(), &found);
	if (!found)
	{
		memset(db_table, 0, sizeof(TtlDbTable));
		db_table->lock = &(GetNamedLWLockTranche("ttl"))->lock;
	}
}

/* The entry of dboid; with create, a free one made its own.  Lock held. */
static TtlDbState *
find_db(Oid dboid, bool create)
{
	TtlDbState *free_entry = NULL;
	int			i;

	for (i = 0; i < TTL_MAX_DATABASES; i++)
	{
		if (db_table->dbs[i].dboid == dboid)
			return &db_table->dbs[i];
		if (free_entry == NULL && db_table->dbs[i].dboid == InvalidOid)
			free_entry = &db_table->dbs[i];
	}
	if (!create || free_entry == NULL)
		return NULL;
	memset(free_entry, 0, sizeof(TtlDbState));
	free_entry->dboid = dboid;
	free_entry->seen = true;
	return free_entry;
}

static void
forget_resume_points(Oid dboid)
{
	int			i;

	for (i = 0; i < TTL_MAX_RESUME_POINTS; i++)
		if (db_table->resume[i].dboid == dboid)
			db_table->resume[i].dboid = InvalidOid;
}

/*
 * Launcher, at its start: workers of a previous launcher (that exited on
 * an error) are no longer its to wait for.  Should one still run, the
 * worker started in its place finds the slot taken and leaves.
 */
void
ttl_db_launcher_started(void)
{
	int			i;

	if (db_table == NULL)
		return;
	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	for (i = 0; i < TTL_MAX_DATABASES; i++)
		db_table->dbs[i].running = false;
	LWLockRelease(db_table->lock);
}

/*
 * Launcher: the connectable databases now.  New ones are entered as never
 * visited; those gone are forgotten.  With rescan, databases found without
 * the extension are visited once more (a restore, CREATE DATABASE ...
 * TEMPLATE of a database that has it).
 */
void
ttl_db_sync(List *dboids, bool rescan)
{
	ListCell   *lc;
	int			i;
	static bool warned = false;

	if (db_table == NULL)
		return;
	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	for (i = 0; i < TTL_MAX_DATABASES; i++)
		db_table->dbs[i].seen = false;
	foreach(lc, dboids)
	{
		TtlDbState *db = find_db(lfirst_oid(lc), true);

		if (db == NULL)
		{
			if (!warned)
				ereport(WARNING,
						(errmsg("ttl launcher cannot track more than %d databases",
								TTL_MAX_DATABASES),
						 errdetail("Databases beyond that number are not purged in the background.")));
			warned = true;
			continue;
		}
		db->seen = true;
		if (rescan && db->has_ttl == TTL_DB_NO)
			db->has_ttl = TTL_DB_UNKNOWN;
	}
	for (i = 0; i < TTL_MAX_DATABASES; i++)
	{
		TtlDbState *db = &db_table->dbs[i];

		if (db->dboid != InvalidOid && !db->seen && !db->running)
		{
			forget_resume_points(db->dboid);
			db->dboid = InvalidOid;
		}
	}
	LWLockRelease(db_table->lock);
}

/*
 * How urgent a database is, in microseconds of waiting: how long since it
 * was last served, plus how long its oldest due item has been waiting.
 * Negative: not due yet (served less than a naptime ago with nothing left).
 */
static int64
urgency(TtlDbState *db, TimestampTz now, int naptime_ms)
{
	int64		since_served = now - db->last_served;
	int64		score = since_served;

	/*
	 * Never visited: at once.  A visit that ended before the worker could
	 * tell (it failed to connect, say) counts as one with nothing left, so
	 * such a database is not tried again and again.
	 */
	if (db->has_ttl == TTL_DB_UNKNOWN && db->visits == 0)
		return 0;

	if (db->due_rows == 0 && since_served < (int64) naptime_ms * 1000)
		return since_served - (int64) naptime_ms * 1000;
	if (db->due_rows > 0 && db->oldest_due != 0)
		score += now - db->oldest_due;
	return score;
}

/* Whether a goes before b; both are due. */
static bool
more_urgent(TtlDbState *a, int64 ua, TtlDbState *b, int64 ub)
{
	bool		a_new = (a->has_ttl == TTL_DB_UNKNOWN);
	bool		b_new = (b->has_ttl == TTL_DB_UNKNOWN);
	bool		a_starved = (a->passed_over >= TTL_MAX_PASSES);
	bool		b_starved = (b->passed_over >= TTL_MAX_PASSES);

	if (a_new != b_new)
		return a_new;			/* never visited: first */
	if (a_starved != b_starved)
		return a_starved;		/* bounded waiting */
	if (a_starved)
		return a->last_served < b->last_served; /* in turn */
	return ua > ub;
}

/*
 * Launcher: the database to serve next, marked running, or InvalidOid.
 * The others that were due are passed over once more.  *wait_ms: when
 * nothing is due, how long until something is (at most naptime).
 * Databases for which is_blocked says true (a command needs them alone:
 * worker_slots.c) are left out; taken as a parameter so that this file
 * does not depend on the one that owns the blocks.
 */
Oid
ttl_db_pick(TimestampTz now, int naptime_ms, bool (*is_blocked) (Oid dboid),
			long *wait_ms)
{
	TtlDbState *best = NULL;
	int64		best_urgency = 0;
	int64		soonest = (int64) naptime_ms * 1000;
	Oid			result = InvalidOid;
	int			i;

	*wait_ms = naptime_ms;
	if (db_table == NULL)
		return InvalidOid;
	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	for (i = 0; i < TTL_MAX_DATABASES; i++)
	{
		TtlDbState *db = &db_table->dbs[i];
		int64		u;

		if (db->dboid == InvalidOid || db->running || db->has_ttl == TTL_DB_NO ||
			is_blocked(db->dboid))
			continue;
		u = urgency(db, now, naptime_ms);
		if (u < 0)
		{
			soonest = Min(soonest, -u);
			continue;
		}
		if (best == NULL || more_urgent(db, u, best, best_urgency))
		{
			best = db;
			best_urgency = u;
		}
	}
	if (best != NULL)
	{
		for (i = 0; i < TTL_MAX_DATABASES; i++)
		{
			TtlDbState *db = &db_table->dbs[i];

			if (db != best && db->dboid != InvalidOid && !db->running &&
				db->has_ttl != TTL_DB_NO && urgency(db, now, naptime_ms) >= 0)
				db->passed_over++;
		}
		best->running = true;
		best->passed_over = 0;
		best->visits++;
		result = best->dboid;
	}
	LWLockRelease(db_table->lock);
	*wait_ms = Max((long) (soonest / 1000), 10);
	return result;
}

/*
 * Launcher: the worker it started for dboid has stopped (or never
 * started).  Whatever its fate, the database counts as served now, so a
 * database whose worker fails at once does not take the pool over.
 */
void
ttl_db_worker_gone(Oid dboid)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL && db->running)
	{
		db->running = false;
		db->last_served = GetCurrentTimestamp();
		db->pid = 0;
	}
	LWLockRelease(db_table->lock);
}

/* Worker, once connected; counts the pool's high-water mark. */
void
ttl_db_worker_arrived(Oid dboid)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, true);
	if (db != NULL)
		db->pid = MyProcPid;
	db_table->running++;
	db_table->high_water = Max(db_table->high_water, db_table->running);
	LWLockRelease(db_table->lock);
}

/* Worker, at exit (any exit: an on_shmem_exit callback). */
void
ttl_db_worker_left(Oid dboid)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL && db->pid == MyProcPid)
	{
		db->pid = 0;
		db->last_served = GetCurrentTimestamp();
	}
	db_table->running--;
	LWLockRelease(db_table->lock);
}

/*
 * CREATE EXTENSION ttl has committed in dboid (worker_slots.c calls this
 * from its commit callback): the database is served at once, without
 * waiting for the rescan.  The count tells a worker that looked for the
 * extension before this commit that its "not installed" is out of date.
 */
void
ttl_db_mark_has_ttl(Oid dboid)
{
	TtlDbState *db;

	if (db_table == NULL)
		return;
	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, true);
	if (db != NULL)
	{
		db->has_ttl = TTL_DB_YES;
		db->ext_marks++;
	}
	LWLockRelease(db_table->lock);
}

/* How many CREATE EXTENSION ttl commits dboid has seen; read before looking. */
uint32
ttl_db_ext_marks(Oid dboid)
{
	TtlDbState *db;
	uint32		marks = 0;

	LWLockAcquire(db_table->lock, LW_SHARED);
	db = find_db(dboid, false);
	if (db != NULL)
		marks = db->ext_marks;
	LWLockRelease(db_table->lock);
	return marks;
}

/*
 * Worker: whether it found the extension in its database.  marks_before is
 * ttl_db_ext_marks() read before the worker took the snapshot it looked
 * with: a "not installed" is dropped when CREATE EXTENSION ttl committed
 * since, or it would keep a new installation waiting for the rescan.
 */
void
ttl_db_set_has_ttl(Oid dboid, bool has_ttl, uint32 marks_before)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, has_ttl);
	if (db != NULL && (has_ttl || db->ext_marks == marks_before))
		db->has_ttl = has_ttl ? TTL_DB_YES : TTL_DB_NO;
	LWLockRelease(db_table->lock);
}

/*
 * Worker, when it leaves after a visit without error: the backlog it
 * leaves behind.  An earlier visit's error is cleared, as ttl.stats clears
 * a container's once it is purged again.
 */
void
ttl_db_publish_backlog(Oid dboid, int64 due_rows, TimestampTz oldest_due)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL)
	{
		db->due_rows = due_rows;
		db->oldest_due = oldest_due;
		db->last_error[0] = '\0';
	}
	LWLockRelease(db_table->lock);
}

/* Worker: the error that ended its visit. */
void
ttl_db_publish_error(Oid dboid, const char *message)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL)
	{
		strlcpy(db->last_error, message, TTL_ERROR_LEN);
		db->last_error_at = GetCurrentTimestamp();
	}
	LWLockRelease(db_table->lock);
}

/* Worker, on arrival: the resume points its predecessor left. */
void
ttl_db_load_resume_points(Oid dboid, HTAB *map)
{
	int			i;

	LWLockAcquire(db_table->lock, LW_SHARED);
	for (i = 0; i < TTL_MAX_RESUME_POINTS; i++)
	{
		TtlSavedResume *saved = &db_table->resume[i];
		TtlResumePoint *point;

		if (saved->dboid != dboid)
			continue;
		point = hash_search(map, &saved->point.relid, HASH_ENTER, NULL);
		*point = saved->point;
	}
	LWLockRelease(db_table->lock);
}

/* Worker, when it leaves: its resume points replace the saved ones. */
void
ttl_db_save_resume_points(Oid dboid, HTAB *map)
{
	HASH_SEQ_STATUS status;
	TtlResumePoint *point;
	int			next = 0;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	forget_resume_points(dboid);
	hash_seq_init(&status, map);
	while ((point = hash_seq_search(&status)) != NULL)
	{
		while (next < TTL_MAX_RESUME_POINTS && db_table->resume[next].dboid != InvalidOid)
			next++;
		if (next == TTL_MAX_RESUME_POINTS)
		{
			hash_seq_term(&status);
			break;				/* no room: a walk from the start next time */
		}
		db_table->resume[next].dboid = dboid;
		db_table->resume[next].point = *point;
	}
	LWLockRelease(db_table->lock);
}

/*
 * ttl._databases(): one row per database the launcher knows, for the view
 * ttl.databases.
 */
PG_FUNCTION_INFO_V1(ttl_databases);
Datum
ttl_databases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TtlDbState *copy;
	int			n = 0;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (db_table == NULL)
		return (Datum) 0;
	copy = palloc(sizeof(TtlDbState) * TTL_MAX_DATABASES);
	LWLockAcquire(db_table->lock, LW_SHARED);
	for (i = 0; i < TTL_MAX_DATABASES; i++)
		if (db_table->dbs[i].dboid != InvalidOid)
			copy[n++] = db_table->dbs[i];
	LWLockRelease(db_table->lock);

	for (i = 0; i < n; i++)
	{
		TtlDbState *db = &copy[i];
		Datum		values[9];
		bool		nulls[9] = {0};
		char	   *name = get_database_name(db->dboid);

		values[0] = ObjectIdGetDatum(db->dboid);
		if (name != NULL)
			values[1] = CStringGetTextDatum(name);
		else
			nulls[1] = true;
		values[2] = BoolGetDatum(db->has_ttl == TTL_DB_YES);
		nulls[2] = (db->has_ttl == TTL_DB_UNKNOWN);
		values[3] = Int32GetDatum(db->pid);
		nulls[3] = (db->pid == 0);
		values[4] = TimestampTzGetDatum(db->last_served);
		nulls[4] = (db->last_served == 0);
		values[5] = Int64GetDatum(db->due_rows);
		nulls[5] = (db->last_served == 0 || db->has_ttl != TTL_DB_YES);
		values[6] = TimestampTzGetDatum(db->oldest_due);
		nulls[6] = (db->oldest_due == 0);
		values[7] = CStringGetTextDatum(db->last_error);
		nulls[7] = (db->last_error[0] == '\0');
		values[8] = Int64GetDatum(db->visits);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ttl._worker_pool(): the pool's size, workers now, high-water mark; NULLs
 * when ttl is not in shared_preload_libraries (there is no pool).
 */
PG_FUNCTION_INFO_V1(ttl_worker_pool);
Datum
ttl_worker_pool(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (db_table != NULL)
	{
		values[0] = Int32GetDatum(ttl_max_workers);
		LWLockAcquire(db_table->lock, LW_SHARED);
		values[1] = Int32GetDatum(db_table->running);
		values[2] = Int32GetDatum(db_table->high_water);
		LWLockRelease(db_table->lock);
	}
	else
		nulls[0] = nulls[1] = nulls[2] = true;	/* not preloaded: no pool */
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}
