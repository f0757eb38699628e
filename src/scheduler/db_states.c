/*
 * db_states.c
 *		What the scheduler knows about each database, in a dshash table of
 *		the scheduler's dynamic shared memory (shared_area.c), since the
 *		launcher connects to none: whether it has the
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
 * The table has no fixed size: every connectable database has an entry
 * (about 700 bytes of shared memory each, with or without ttl), added as
 * the launcher finds it and removed once it is gone.  Only running out of
 * memory can refuse one, and that is an error, never a skip.
 *
 * Locking: one LWLock (tranche "ttl") guards the whole table; every
 * function here takes it for a short copy or scan, never across anything
 * that may wait (a dropped database's resume points are forgotten under
 * it: resume_store.c's locks are always taken second).  Under it, an
 * entry is used between find_db and put_db (the dshash's partition lock),
 * and a scan holds one partition at a time, never with an entry found.
 */
#include "postgres.h"

#include "lib/dshash.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "scheduler/scheduler.h"

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
	Oid			dboid;			/* the key */
	TtlHasTtl	has_ttl;
	bool		seen;			/* in pg_database at the last sync */
	bool		running;		/* the launcher started a worker for it */
	pid_t		pid;			/* that worker, once it has connected */
	int			passed_over;	/* picks that chose another database */
	uint32		ext_marks;		/* CREATE EXTENSION ttl commits seen */
	int64		visits;			/* workers started for it */
	TimestampTz last_served;	/* the end of its last worker's visit */
	int64		due_rows;		/* backlog when its last worker left */
	bool		due_rows_capped;	/* a lower bound: a count stopped */
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
	dshash_table_handle dbs;	/* Oid -> TtlDbState */
} TtlDbTable;

static TtlDbTable *db_table = NULL;
static dshash_table *dbs = NULL;	/* this process's attachment */

Size
ttl_db_states_size(void)
{
	return sizeof(TtlDbTable);
}

static dshash_parameters
db_params(void)
{
	return ttl_dshash_params(sizeof(Oid), sizeof(TtlDbState), db_table->lock->tranche);
}

/* The table, attached on first use; db_table is set. */
static void
attach_dbs(void)
{
	MemoryContext old;
	dshash_parameters params;

	if (dbs != NULL)
		return;
	params = db_params();
	old = MemoryContextSwitchTo(TopMemoryContext);
	dbs = dshash_attach(ttl_sched_area(), &params, db_table->dbs, NULL);
	MemoryContextSwitchTo(old);
}

static void
lock_table(LWLockMode mode)
{
	attach_dbs();
	LWLockAcquire(db_table->lock, mode);
}

/* From the shmem request hook. */
void
ttl_db_states_request(void)
{
	RequestAddinShmemSpace(ttl_db_states_size());
	RequestAddinShmemSpace(ttl_sched_area_size());
	RequestNamedLWLockTranche("ttl", 1);
	ttl_resume_store_request();
}

/*
 * From the shmem startup hook, AddinShmemInitLock held.  The first time,
 * the tables are made in the scheduler's area (shared_area.c).
 */
void
ttl_db_states_attach(void)
{
	bool		found;
	bool		area_new;
	dsa_area   *area;

	db_table = ShmemInitStruct("ttl databases", ttl_db_states_size(), &found);
	if (!found)
	{
		memset(db_table, 0, sizeof(TtlDbTable));
		db_table->lock = &(GetNamedLWLockTranche("ttl"))->lock;
	}
	area = ttl_sched_area_create(db_table->lock->tranche, &area_new);
	if (area_new)
	{
		dshash_parameters params = db_params();
		dshash_table *made = dshash_create(area, &params, NULL);

		db_table->dbs = dshash_get_hash_table_handle(made);
		dshash_detach(made);
	}
	ttl_resume_store_attach(area, db_table->lock->tranche);
	if (area_new)
		ttl_sched_area_created();
}

/*
 * The entry of dboid, its partition locked until put_db; with create, made
 * when missing (an error only when memory runs out).  Table lock held.
 */
static TtlDbState *
find_db(Oid dboid, bool create)
{
	TtlDbState *db;
	bool		found;

	if (!create)
		return dshash_find(dbs, &dboid, true);
	db = dshash_find_or_insert(dbs, &dboid, &found);
	if (!found)
	{
		memset(db, 0, sizeof(TtlDbState));
		db->dboid = dboid;
		db->seen = true;
	}
	return db;
}

static void
put_db(TtlDbState *db)
{
	if (db != NULL)
		dshash_release_lock(dbs, db);
}

/*
 * Launcher, at its start: workers of a previous launcher (that exited on
 * an error) are no longer its to wait for.  Should one still run, the
 * worker started in its place finds the slot taken and leaves.
 */
void
ttl_db_launcher_started(void)
{
	dshash_seq_status scan;
	TtlDbState *db;

	if (db_table == NULL)
		return;
	lock_table(LW_EXCLUSIVE);
	dshash_seq_init(&scan, dbs, true);
	while ((db = dshash_seq_next(&scan)) != NULL)
		db->running = false;
	dshash_seq_term(&scan);
	LWLockRelease(db_table->lock);
}

/*
 * Launcher: the connectable databases now.  New ones are entered as never
 * visited, however many there are; those gone are forgotten.  With rescan, databases found without
 * the extension are visited once more (a restore, CREATE DATABASE ...
 * TEMPLATE of a database that has it).
 */
void
ttl_db_sync(List *dboids, bool rescan)
{
	ListCell   *lc;
	dshash_seq_status scan;
	TtlDbState *db;

	if (db_table == NULL)
		return;
	lock_table(LW_EXCLUSIVE);
	dshash_seq_init(&scan, dbs, true);
	while ((db = dshash_seq_next(&scan)) != NULL)
		db->seen = false;
	dshash_seq_term(&scan);
	foreach(lc, dboids)
	{
		db = find_db(lfirst_oid(lc), true);
		db->seen = true;
		if (rescan && db->has_ttl == TTL_DB_NO)
			db->has_ttl = TTL_DB_UNKNOWN;
		put_db(db);
	}
	dshash_seq_init(&scan, dbs, true);
	while ((db = dshash_seq_next(&scan)) != NULL)
	{
		if (!db->seen && !db->running)
		{
			ttl_db_forget_resume_points(db->dboid);
			dshash_delete_current(&scan);
		}
	}
	dshash_seq_term(&scan);
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
	TtlDbState	best;			/* a copy: the scan holds no entry */
	int64		best_urgency = 0;
	int64		soonest = (int64) naptime_ms * 1000;
	Oid			result = InvalidOid;
	dshash_seq_status scan;
	TtlDbState *db;

	*wait_ms = naptime_ms;
	if (db_table == NULL)
		return InvalidOid;
	memset(&best, 0, sizeof(best));
	lock_table(LW_EXCLUSIVE);
	dshash_seq_init(&scan, dbs, false);
	while ((db = dshash_seq_next(&scan)) != NULL)
	{
		int64		u;

		if (db->running || db->has_ttl == TTL_DB_NO || is_blocked(db->dboid))
			continue;
		u = urgency(db, now, naptime_ms);
		if (u < 0)
		{
			soonest = Min(soonest, -u);
			continue;
		}
		if (!OidIsValid(best.dboid) || more_urgent(db, u, &best, best_urgency))
		{
			best = *db;
			best_urgency = u;
		}
	}
	dshash_seq_term(&scan);
	if (OidIsValid(best.dboid))
	{
		dshash_seq_init(&scan, dbs, true);
		while ((db = dshash_seq_next(&scan)) != NULL)
		{
			if (db->dboid == best.dboid)
			{
				db->running = true;
				db->passed_over = 0;
				db->visits++;
			}
			else if (!db->running && db->has_ttl != TTL_DB_NO &&
					 urgency(db, now, naptime_ms) >= 0)
				db->passed_over++;
		}
		dshash_seq_term(&scan);
		result = best.dboid;
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

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL && db->running)
	{
		db->running = false;
		db->last_served = GetCurrentTimestamp();
		db->pid = 0;
	}
	put_db(db);
	LWLockRelease(db_table->lock);
}

/* Worker, once connected; counts the pool's high-water mark. */
void
ttl_db_worker_arrived(Oid dboid)
{
	TtlDbState *db;

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, true);
	if (db != NULL)
		db->pid = MyProcPid;
	db_table->running++;
	db_table->high_water = Max(db_table->high_water, db_table->running);
	put_db(db);
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

	lock_table(LW_SHARED);
	db = find_db(dboid, false);
	if (db != NULL)
		visits = db->visits;
	put_db(db);
	LWLockRelease(db_table->lock);
	return visits;
}

/*
 * Worker, at exit (any exit: a before_shmem_exit callback, since the table
 * is in dynamic shared memory, detached before on_shmem_exit callbacks).
 */
void
ttl_db_worker_left(Oid dboid)
{
	TtlDbState *db;

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL && db->pid == MyProcPid)
	{
		db->pid = 0;
		db->last_served = GetCurrentTimestamp();
	}
	db_table->running--;
	put_db(db);
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
	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, true);
	if (db != NULL)
	{
		db->has_ttl = TTL_DB_YES;
		db->ext_marks++;
	}
	put_db(db);
	LWLockRelease(db_table->lock);
}

/* How many CREATE EXTENSION ttl commits dboid has seen; read before looking. */
uint32
ttl_db_ext_marks(Oid dboid)
{
	TtlDbState *db;
	uint32		marks = 0;

	lock_table(LW_SHARED);
	db = find_db(dboid, false);
	if (db != NULL)
		marks = db->ext_marks;
	put_db(db);
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

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, has_ttl);
	if (db != NULL && (has_ttl || db->ext_marks == marks_before))
		db->has_ttl = has_ttl ? TTL_DB_YES : TTL_DB_NO;
	put_db(db);
	LWLockRelease(db_table->lock);
}

/*
 * Worker, when it leaves after a visit without error: the backlog it
 * leaves behind.  An earlier visit's error is cleared, as ttl.stats clears
 * a container's once it is purged again.
 */
void
ttl_db_publish_backlog(Oid dboid, int64 due_rows, bool due_rows_capped,
					   TimestampTz oldest_due)
{
	TtlDbState *db;

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL)
	{
		db->due_rows = due_rows;
		db->due_rows_capped = due_rows_capped;
		db->oldest_due = oldest_due;
		db->last_error[0] = '\0';
	}
	put_db(db);
	LWLockRelease(db_table->lock);
}

/* Worker: the error that ended its visit. */
void
ttl_db_publish_error(Oid dboid, const char *message)
{
	TtlDbState *db;

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL)
	{
		strlcpy(db->last_error, message, TTL_ERROR_LEN);
		db->last_error_at = GetCurrentTimestamp();
	}
	put_db(db);
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
	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL)
	{
		db->interrupted.relid = relid;
		db->interrupted.step = step;
		db->interrupted.by_bound = by_bound;
		db->interrupted.bound_ms = bound_ms;
		db->interrupted.seq = ++db_table->interrupted_seq;
	}
	put_db(db);
	LWLockRelease(db_table->lock);
}

/* Worker, on arrival: the record its predecessor left, if any (kept). */
bool
ttl_db_take_interrupted(Oid dboid, TtlInterrupted *rec)
{
	TtlDbState *db;

	memset(rec, 0, sizeof(*rec));
	lock_table(LW_SHARED);
	db = find_db(dboid, false);
	if (db != NULL)
		*rec = db->interrupted;
	put_db(db);
	LWLockRelease(db_table->lock);
	return OidIsValid(rec->relid);
}

/* Worker, once the record is acted on (committed): gone, unless replaced. */
void
ttl_db_forget_interrupted(Oid dboid, uint32 seq)
{
	TtlDbState *db;

	lock_table(LW_EXCLUSIVE);
	db = find_db(dboid, false);
	if (db != NULL && db->interrupted.seq == seq)
		memset(&db->interrupted, 0, sizeof(TtlInterrupted));
	put_db(db);
	LWLockRelease(db_table->lock);
}

/* Launcher: it has terminated dboid's worker for overstaying bound_ms. */
void
ttl_db_note_termination(Oid dboid, Oid relid, TtlStep step, int64 bound_ms)
{
	TtlDbState *db;

	lock_table(LW_EXCLUSIVE);
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
	put_db(db);
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
	int			room = 64;
	dshash_seq_status scan;
	TtlDbState *db;

	*n = 0;
	if (db_table == NULL)
		return NULL;
	out = palloc0(sizeof(TtlDbReport) * room);
	lock_table(LW_SHARED);
	dshash_seq_init(&scan, dbs, false);
	while ((db = dshash_seq_next(&scan)) != NULL)
	{
		TtlDbReport *r;

		if (*n == room)
		{
			/* repalloc may raise: the locks go with the error */
			room *= 2;
			out = repalloc(out, sizeof(TtlDbReport) * room);
		}
		r = &out[(*n)++];
		memset(r, 0, sizeof(TtlDbReport));
		r->dboid = db->dboid;
		r->has_ttl_known = (db->has_ttl != TTL_DB_UNKNOWN);
		r->has_ttl = (db->has_ttl == TTL_DB_YES);
		r->pid = db->pid;
		r->last_served = db->last_served;
		r->due_rows = db->due_rows;
		r->due_rows_capped = db->due_rows_capped;
		r->oldest_due = db->oldest_due;
		strlcpy(r->last_error, db->last_error, sizeof(r->last_error));
		r->visits = db->visits;
		r->terminations = db->terminations;
		strlcpy(r->last_termination, db->last_termination, sizeof(r->last_termination));
	}
	dshash_seq_term(&scan);
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
