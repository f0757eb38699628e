/*
 * guard.c
 *		The restore guard: automatic purging (the worker's rounds and CALL
 *		ttl.run_purge(), purge_round.c) holds a container whose due backlog
 *		exceeds ttl.restore_guard_fraction of its rows, in these cases only:
 *
 *		(a) the container arrived by restore: its registry row records the
 *			cluster's system identifier and the database's OID of
 *			ttl.enable (ttl._set_objects, the last step of enable, writes
 *			them; the 1.5 update gives the containers that exist then the
 *			current ones), and a pg_dump/pg_restore into another database
 *			or cluster shows as a mismatch at the next round;
 *		    and a container enabled over existing documents whose stored
 *		    _ts already make more than the fraction due (checked by
 *		    ttl.enable itself, at once);
 *		(b) the first round in each database after the server started from
 *			a base backup (backup_label in the data directory) or for
 *			point-in-time recovery (recovery.signal);
 *		(c) the first round in each database after the wall clock moved
 *			ahead of the monotonic clock by more than
 *			ttl.clock_jump_threshold between two rounds of the pool.
 *
 * A held container is not purged automatically (hiding goes on): the hold
 * is recorded in its registry row (held_since, hold_reason: ttl.stats) and
 * logged once.  ttl.resume() releases it and records the current identity
 * (container_admin.c calls ttl_guard_release);
 * ttl.purge('container') is deliberate and purges anyway.  Raising
 * ttl.restore_guard_fraction re-checks a held container once (a hold
 * remembers the fraction it was placed under); setting it to 0 turns the
 * guard off and releases holds at the next round.
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
 * Locking: the shared state's spinlock for short copies only.  The checks
 * run in the round's transaction, each estimate in a subtransaction as the
 * table's owner with lock_timeout 1s (a failure leaves the container
 * unpurged for this round and the event unchecked); the registry is written
 * as the extension's owner (ttl_registry_execute).
 */
#include "postgres.h"

#include <sys/stat.h>
#include <float.h>
#include <limits.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "citus_meta.h"
#include "compat.h"
#include "guard.h"
#include "guard_estimate.h"
#include "registry.h"
#include "run_as.h"
#include "settings.h"

double		ttl_restore_guard_fraction = 0.2;
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
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The guard's registry columns of one container, for a round. */
typedef struct GuardRow
{
	Oid			relid;
	bool		has_home;
	int64		home_system;
	Oid			home_database;
	bool		held;
	double		hold_fraction;
} GuardRow;

void
ttl_guard_define_settings(void)
{
	DefineCustomRealVariable("ttl.restore_guard_fraction",
							 "Due share of a container's rows above which automatic purge holds it after a restore or a clock jump.",
							 "Checked only after a restore, a start from a base backup or point-in-time recovery, a clock jump, and when a container is enabled over existing documents. 0 turns the guard off.",
							 &ttl_restore_guard_fraction,
							 0.2, 0.0, 1.0,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("ttl.clock_jump_threshold",
							"How far the wall clock may move ahead of the monotonic clock between two purge rounds before the restore guard checks the containers.",
							"0 turns this check off.",
							&ttl_clock_jump_threshold,
							3600, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}

/* ---- shared memory ---- */

static void
guard_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
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

static void
guard_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
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

void
ttl_install_guard_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = guard_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = guard_shmem_startup;
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

/* ---- the registry's columns ---- */

/* Whether ttl.registry has the guard's columns (1.5 and later). */
static bool
registry_has_guard(void)
{
	Oid			nsp = get_namespace_oid("ttl", true);
	Oid			registry;

	if (!OidIsValid(nsp))
		return false;
	registry = get_relname_relid("registry", nsp);
	return OidIsValid(registry) &&
		get_attnum(registry, "hold_fraction") != InvalidAttrNumber &&
		get_attnum(registry, "home_system_identifier") != InvalidAttrNumber;
}

static int64
current_system(void)
{
	return (int64) GetSystemIdentifier();
}

static HTAB *
load_rows(void)
{
	HASHCTL		ctl;
	HTAB	   *rows;
	MemoryContext cxt = CurrentMemoryContext;
	uint64		i;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(GuardRow);
	ctl.hcxt = cxt;
	rows = hash_create("ttl guard rows", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT r.relid::pg_catalog.oid, r.home_system_identifier, r.home_database,"
					" r.held_since IS NOT NULL, r.hold_fraction FROM ttl.registry r",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read ttl.registry");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		null_db;
		Oid			relid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		GuardRow   *row = hash_search(rows, &relid, HASH_ENTER, NULL);
		Datum		d;

		row->relid = relid;
		d = SPI_getbinval(tup, desc, 2, &isnull);
		row->home_system = isnull ? 0 : DatumGetInt64(d);
		row->home_database = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &null_db));
		row->has_home = !isnull && !null_db;
		row->held = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		d = SPI_getbinval(tup, desc, 5, &isnull);
		row->hold_fraction = isnull ? 0 : DatumGetFloat4(d);
	}
	SPI_finish();
	return rows;
}

/* The container is at home from now on; its hold (if any) is released. */
static void
release(Oid relid)
{
	Oid			argtypes[3] = {OIDOID, INT8OID, OIDOID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int64GetDatum(current_system());
	values[2] = ObjectIdGetDatum(MyDatabaseId);
	ttl_registry_execute("UPDATE ttl.registry SET held_since = NULL, hold_reason = NULL,"
						 " hold_fraction = NULL, home_system_identifier = $2, home_database = $3"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 3, argtypes, values, NULL, NULL);
}

static void
record_hold(Oid relid, const char *reason, const TtlGuardEstimate *est, double fraction)
{
	Oid			argtypes[4] = {OIDOID, TIMESTAMPTZOID, TEXTOID, FLOAT4OID};
	Datum		values[4];
	char	   *name = ttl_relation_display_name(relid);

	values[0] = ObjectIdGetDatum(relid);
	values[1] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[2] = CStringGetTextDatum(reason);
	values[3] = Float4GetDatum((float4) fraction);
	ttl_registry_execute("UPDATE ttl.registry SET held_since = $2, hold_reason = $3, hold_fraction = $4"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 4, argtypes, values, NULL, NULL);
	ereport(LOG,
			(errmsg("ttl restore guard: automatic purge of container \"%s\" held", name),
			 errdetail("Reason: %s. At least " INT64_FORMAT " of about %.0f rows are due, more than ttl.restore_guard_fraction (%g).",
					   reason, est->due, est->total, fraction),
			 errhint("Expired items stay hidden. Check the container, then run SELECT ttl.resume('%s') to purge it again.",
					 name)));
}

/* The hold's fraction follows the setting (no new check until it rises). */
static void
update_hold_fraction(Oid relid, double fraction)
{
	Oid			argtypes[2] = {OIDOID, FLOAT4OID};
	Datum		values[2];

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Float4GetDatum((float4) fraction);
	ttl_registry_execute("UPDATE ttl.registry SET hold_fraction = $2 WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, NULL, NULL);
}

/*
 * The estimate in a subtransaction with lock_timeout 1s: false (and a
 * WARNING) when it failed; a cancel is thrown.
 */
static bool
estimate_safely(Oid relid, double fraction, TtlGuardEstimate *est)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		TtlContainer c;

		(void) set_config_option("lock_timeout", "1s", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		if (!ttl_read_container(relid, &c))
			memset(est, 0, sizeof(*est));	/* gone meanwhile */
		else
			ttl_guard_estimate(relid, &c, ttl_current_unix_seconds(), fraction, est);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			PG_RE_THROW();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ereport(WARNING,
				(errmsg("ttl restore guard could not check container \"%s\": %s",
						ttl_relation_display_name(relid), edata->message),
				 errdetail("The container is not purged automatically in this round.")));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/* ---- a round ---- */

void
ttl_guard_round_begin(TtlGuardRound *round)
{
	memset(round, 0, sizeof(*round));
	if (!registry_has_guard())
		return;					/* the database is still at 1.4 or older */
	round->active = true;
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
	round->rows = load_rows();
}

/*
 * Whether the round must leave relid alone (see the file header); places,
 * re-checks and releases holds as it goes.
 */
bool
ttl_guard_holds(TtlGuardRound *round, Oid relid)
{
	GuardRow   *row;
	double		fraction = ttl_restore_guard_fraction;
	bool		at_home;
	const char *reason;
	TtlGuardEstimate est;

	if (!round->active)
		return false;
	row = hash_search(round->rows, &relid, HASH_FIND, NULL);
	if (row == NULL || ttl_citus_kind(relid) != TTL_CITUS_NONE)
		return false;
	if (fraction <= 0)
	{
		if (row->held)
		{
			release(relid);
			ereport(LOG,
					(errmsg("ttl restore guard: hold of container \"%s\" released: ttl.restore_guard_fraction is 0",
							ttl_relation_display_name(relid))));
		}
		return false;
	}
	if (row->held)
	{
		if (fraction <= row->hold_fraction + 1e-6)
			return true;
		/* the setting now allows more: check again, once */
		if (!estimate_safely(relid, fraction, &est))
			return true;
		if (est.exceeded)
		{
			update_hold_fraction(relid, fraction);
			return true;
		}
		release(relid);
		ereport(LOG,
				(errmsg("ttl restore guard: hold of container \"%s\" released: ttl.restore_guard_fraction is now %g",
						ttl_relation_display_name(relid), fraction)));
		return false;
	}

	at_home = row->has_home && row->home_system == current_system() &&
		row->home_database == MyDatabaseId;
	if (!at_home)
		reason = row->has_home ?
			psprintf("the container was enabled in another database or cluster (system identifier " INT64_FORMAT ", database %u): restored by pg_restore or copied",
					 row->home_system, row->home_database) :
			"the container's registry row does not say where it was enabled: restored from a dump of ttl 1.4 or older";
	else if (round->check_all)
		reason = round->event_reason;
	else
		return false;

	if (!estimate_safely(relid, fraction, &est))
	{
		round->failed = true;
		return true;
	}
	if (est.exceeded)
	{
		record_hold(relid, reason, &est, fraction);
		return true;
	}
	/* an empty container (a restore still loading it) stays unchecked */
	if (!at_home && est.total > 0)
		release(relid);
	return false;
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

/*
 * Whether relid is held now (for the backlog the worker publishes: a held
 * container's backlog must not make its database look urgent forever).
 */
bool
ttl_guard_held_now(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	bool		isnull;
	bool		held = false;

	if (ttl_restore_guard_fraction <= 0 || !registry_has_guard())
		return false;
	values[0] = ObjectIdGetDatum(relid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT r.held_since IS NOT NULL FROM ttl.registry r"
							  " WHERE r.relid OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		held = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return held;
}

/*
 * The end of ttl.enable (ttl._set_objects): the container is at home here;
 * enabled over existing documents that are mostly due already, it is held.
 */
void
ttl_guard_after_enable(Oid relid)
{
	TtlGuardEstimate est;
	TtlContainer c;
	double		fraction = ttl_restore_guard_fraction;

	if (!registry_has_guard())
		return;
	release(relid);
	if (fraction <= 0 || ttl_citus_kind(relid) != TTL_CITUS_NONE ||
		!ttl_read_container(relid, &c))
		return;
	ttl_guard_estimate(relid, &c, ttl_current_unix_seconds(), fraction, &est);
	if (est.exceeded)
		record_hold(relid, "the container was enabled over existing documents already due", &est,
					fraction);
}

/*
 * ttl.resume (1.5, container_admin.c): the container's hold is released
 * and it is at home here from now on.  Nothing for a database at 1.4.
 */
void
ttl_guard_release(Oid relid)
{
	if (registry_has_guard())
		release(relid);
}
