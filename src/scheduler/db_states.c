/*
 * db_states.c
 *		What the scheduler knows about each database, in fixed-size shared
 *		memory, since the launcher connects to none: whether it has the
 *		extension (unknown until a worker looked, or CREATE EXTENSION ttl
 *		said so), when it was last served, the backlog its last worker left
 *		(due rows, oldest due item), its last error, the visits the
 *		launcher ended for overstaying ttl.max_visit_time, and the in-flight
 *		record of a worker that exited in the middle of a statement on a
 *		user table (worker_slots.c hands it over; the next worker there
 *		takes it: worker.c).  From this the
 *		launcher picks the next database to serve (ttl_db_pick);
 *		ttl.databases and ttl.worker_pool show a copy of it (pool_views.c).
 *		The containers' resume points live next to it (resume_store.c).
 *
 * Locking: one LWLock (tranche "ttl") guards the whole table; every
 * function here takes it for a short copy or scan, never across anything
 * that may wait or raise (a dropped database's resume points are forgotten
 * under it: resume_store.c's lock is always taken second).  A database the
 * table has no room for (TTL_MAX_DATABASES) is not served.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "scheduler/scheduler.h"

#define TTL_MAX_DATABASES 1024

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
	TtlInterrupted interrupted; /* left by a worker that exited mid-statement */
	int64		terminations;	/* visits the launcher ended */
	char		last_termination[TTL_ERROR_LEN];
} TtlDbState;

typedef struct TtlDbTable
{
	LWLock	   *lock;
	int			running;		/* workers connected now */
	int			high_water;		/* most ever connected at once */
	int64		terminations;	/* visits the launcher ended, all databases */
	uint32		interrupted_seq;
	TtlDbState	dbs[TTL_MAX_DATABASES];
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
	ttl_resume_store_request();
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
	ttl_resume_store_attach();
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
			ttl_db_forget_resume_points(db->dboid);
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

/*
 * Worker: how many workers the launcher has started for dboid (this one
 * included), for the round to start at a different container each visit.
 */
int64
ttl_db_visits(Oid dboid)
{
	TtlDbState *db;
	int64		visits = 0;

	LWLockAcquire(db_table->lock, LW_SHARED);
	db = find_db(dboid, false);
	if (db != NULL)
		visits = db->visits;
	LWLockRelease(db_table->lock);
	return visits;
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

/*
 * A worker's exit callback (worker_slots.c): it exited in the middle of a
 * statement on relid.  Kept for the next worker of dboid, which records it
 * as relid's error and backs relid off.  A later record replaces an
 * earlier one not yet taken (the earlier worker's successor could not
 * take it, so it died too; the latest is the one to act on).
 */
void
ttl_db_note_interrupted(Oid dboid, Oid relid, TtlStep step, bool by_bound, int64 bound_ms)
{
	TtlDbState *db;

	if (db_table == NULL)
		return;
	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL)
	{
		db->interrupted.relid = relid;
		db->interrupted.step = step;
		db->interrupted.by_bound = by_bound;
		db->interrupted.bound_ms = bound_ms;
		db->interrupted.seq = ++db_table->interrupted_seq;
	}
	LWLockRelease(db_table->lock);
}

/* Worker, on arrival: the record its predecessor left, if any (kept). */
bool
ttl_db_take_interrupted(Oid dboid, TtlInterrupted *rec)
{
	TtlDbState *db;

	memset(rec, 0, sizeof(*rec));
	LWLockAcquire(db_table->lock, LW_SHARED);
	db = find_db(dboid, false);
	if (db != NULL)
		*rec = db->interrupted;
	LWLockRelease(db_table->lock);
	return OidIsValid(rec->relid);
}

/* Worker, once the record is acted on (committed): gone, unless replaced. */
void
ttl_db_forget_interrupted(Oid dboid, uint32 seq)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL && db->interrupted.seq == seq)
		memset(&db->interrupted, 0, sizeof(TtlInterrupted));
	LWLockRelease(db_table->lock);
}

/* Launcher: it has terminated dboid's worker for overstaying bound_ms. */
void
ttl_db_note_termination(Oid dboid, Oid relid, TtlStep step, int64 bound_ms)
{
	TtlDbState *db;

	LWLockAcquire(db_table->lock, LW_EXCLUSIVE);
	db_table->terminations++;
	db = find_db(dboid, false);
	if (db != NULL)
	{
		db->terminations++;
		if (OidIsValid(relid))
			snprintf(db->last_termination, TTL_ERROR_LEN,
					 "terminated after ttl.max_visit_time (" INT64_FORMAT " ms) in container %u (%s)",
					 bound_ms, relid, ttl_step_name(step));
		else
			snprintf(db->last_termination, TTL_ERROR_LEN,
					 "terminated after ttl.max_visit_time (" INT64_FORMAT " ms) between statements",
					 bound_ms);
	}
	LWLockRelease(db_table->lock);
}

/*
 * A copy of what is known of every database, for ttl.databases
 * (pool_views.c): *n entries, palloc'd; NULL when there is no shared memory
 * (ttl not in shared_preload_libraries).
 */
TtlDbReport *
ttl_db_report(int *n)
{
	TtlDbReport *out;
	int			i;

	*n = 0;
	if (db_table == NULL)
		return NULL;
	out = palloc0(sizeof(TtlDbReport) * TTL_MAX_DATABASES);
	LWLockAcquire(db_table->lock, LW_SHARED);
	for (i = 0; i < TTL_MAX_DATABASES; i++)
	{
		TtlDbState *db = &db_table->dbs[i];
		TtlDbReport *r;

		if (db->dboid == InvalidOid)
			continue;
		r = &out[(*n)++];
		r->dboid = db->dboid;
		r->has_ttl_known = (db->has_ttl != TTL_DB_UNKNOWN);
		r->has_ttl = (db->has_ttl == TTL_DB_YES);
		r->pid = db->pid;
		r->last_served = db->last_served;
		r->due_rows = db->due_rows;
		r->oldest_due = db->oldest_due;
		strlcpy(r->last_error, db->last_error, sizeof(r->last_error));
		r->visits = db->visits;
		r->terminations = db->terminations;
		strlcpy(r->last_termination, db->last_termination, sizeof(r->last_termination));
	}
	LWLockRelease(db_table->lock);
	return out;
}

/*
 * The pool's workers now, the most ever at once and the visits the
 * launcher ended; false without a pool.
 */
bool
ttl_db_pool_counts(int *running, int *high_water, int64 *terminations)
{
	if (db_table == NULL)
		return false;
	LWLockAcquire(db_table->lock, LW_SHARED);
	*running = db_table->running;
	*high_water = db_table->high_water;
	*terminations = db_table->terminations;
	LWLockRelease(db_table->lock);
	return true;
}
