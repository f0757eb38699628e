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
 * Case (a) is judged only once the restore is complete: a container not
 * at home without its stamp trigger (pg_restore's post-data creates it
 * last) or without rows is left alone, neither held nor purged nor taken
 * as at home, round after round, and judged on all its rows when they and
 * the trigger are there.
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
 * The events (b) and (c) are detected in guard_events.c, in shared
 * memory; this file decides, holds and releases per container.
 *
 * Locking: the shared state is guard_events.c's (its spinlock).  The checks
 * run in the round's transaction, each estimate in a subtransaction as the
 * table's owner with lock_timeout 1s and bounded by ttl.batch_timeout (a
 * failure leaves the container unpurged for this round and the event
 * unchecked; in the worker, the estimate is in its in-flight record, so an
 * owner's code that traps the cancel is ended by the visit bound:
 * visit.h); the registry is written as the extension's owner
 * (ttl_registry_execute).  A container the worker has backed off is not
 * estimated, and the event stays unchecked until it is.
 */
#include "postgres.h"

#include <float.h>
#include <limits.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "base/subxact.h"
#include "base/visit.h"
#include "guard/guard.h"
#include "guard/guard_estimate.h"
#include "registry/policy.h"
#include "registry/registry.h"
#include "registry/trigger_args.h"

double		ttl_restore_guard_fraction = 0.2;

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

/* ---- the registry's columns ---- */

/* Whether ttl.registry has the guard's columns (1.5 and later). */
static bool
registry_has_guard(void)
{
	return ttl_sql_at_least(1, 5);
}

static int64
current_system(void)
{
	return (int64) GetSystemIdentifier();
}

/*
 * The registry's rows, read in C (registry.c) as committed now: no SQL runs
 * to read them.
 */
static HTAB *
load_rows(void)
{
	HASHCTL		ctl;
	HTAB	   *rows;
	ListCell   *lc;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(GuardRow);
	ctl.hcxt = CurrentMemoryContext;
	rows = hash_create("ttl guard rows", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	foreach(lc, ttl_list_containers(false))
	{
		Oid			relid = lfirst_oid(lc);
		TtlContainer c;
		GuardRow   *row;

		if (!ttl_read_container(relid, &c))
			continue;			/* disabled meanwhile */
		row = hash_search(rows, &relid, HASH_ENTER, NULL);
		row->relid = relid;
		row->home_system = c.has_home ? c.home_system : 0;
		row->home_database = c.home_database;
		row->has_home = c.has_home;
		row->held = c.held;
		row->hold_fraction = c.hold_fraction;
	}
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

/* The estimate of one container, as a step of estimate_safely(). */
typedef struct EstimateStep
{
	Oid			relid;
	double		fraction;
	TtlGuardEstimate *est;
} EstimateStep;

static void
estimate_step(void *arg)
{
	EstimateStep *step = (EstimateStep *) arg;
	TtlContainer c;

	(void) set_config_option("lock_timeout", "1s", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (!ttl_read_container(step->relid, &c))
		memset(step->est, 0, sizeof(*step->est));	/* gone meanwhile */
	else
	{
		/*
		 * What is committed now, not the transaction's first snapshot: the
		 * registry row was just read as committed now, and rows restored
		 * before it must count (a subtransaction's abort pops it)
		 */
		PushActiveSnapshot(GetLatestSnapshot());
		ttl_statement_bound_arm(ttl_batch_timeout);
		ttl_guard_estimate(step->relid, &c, ttl_current_unix_seconds(), step->fraction,
						   step->est);
		ttl_statement_bound_disarm();
		PopActiveSnapshot();
	}
}

/*
 * The estimate in a subtransaction with lock_timeout 1s, bounded by
 * ttl.batch_timeout (visit.c) and announced in the worker's in-flight
 * record: false (and a WARNING) when it failed or ran out of its bound;
 * any other cancel is thrown.
 */
static bool
estimate_safely(Oid relid, double fraction, TtlGuardEstimate *est)
{
	EstimateStep step = {relid, fraction, est};
	ErrorData  *edata;
	const char *message;

	ttl_visit_enter(relid, TTL_STEP_GUARD);
	edata = ttl_subxact_run(estimate_step, &step, CurrentMemoryContext, true);
	ttl_statement_bound_disarm();	/* it failed with the bound armed */
	ttl_visit_leave();
	if (edata == NULL)
		return true;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !ttl_statement_bound_expired(edata))
		ReThrowError(edata);
	message = ttl_statement_bound_expired(edata) ?
		psprintf("estimate cancelled after ttl.batch_timeout (%d ms)", ttl_batch_timeout) :
		edata->message;
	ereport(WARNING,
			(errmsg("ttl restore guard could not check container \"%s\": %s",
					ttl_relation_display_name(relid), message),
			 errdetail("The container is not purged automatically in this round.")));
	FreeErrorData(edata);
	return false;
}

/* ---- a round ---- */

void
ttl_guard_round_begin(TtlGuardRound *round)
{
	memset(round, 0, sizeof(*round));
	if (!registry_has_guard())
		return;					/* the database is still at 1.4 or older */
	round->active = true;
	ttl_guard_events_begin(round);
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
	if (row == NULL || ttl_distribution_of(relid) != TTL_DIST_NONE)
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

	/*
	 * A restore still loading it: pg_restore creates the stamp trigger in
	 * its post-data, after every table's data, and a leaf's data (or a
	 * container's whose schema sorts after ttl) may come after its
	 * registry row.  Judged on part of its rows, a container could be
	 * taken as at home and the rest purged as it arrives: it waits, not
	 * purged and not at home, until the restore is complete.
	 */
	if (!at_home && !OidIsValid(get_trigger_oid(relid, TTL_STAMP_TRIGGER, true)))
		return true;
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
	if (!at_home)
	{
		/*
		 * Nothing to judge: it waits for rows (a data-only restore may load
		 * them later in this round, which would then purge them unjudged)
		 */
		if (est.total <= 0)
			return true;
		release(relid);
	}
	return false;
}

/*
 * The round leaves relid out without asking (the worker backs it off:
 * backoff.c): an event it should have been checked for stays unchecked,
 * so that it is checked before it is purged again.
 */
void
ttl_guard_unchecked(TtlGuardRound *round, Oid relid)
{
	if (round->active && round->check_all)
		round->failed = true;
}

/*
 * Whether relid is held now (for the backlog the worker publishes: a held
 * container's backlog must not make its database look urgent forever).
 */
bool
ttl_guard_held_now(Oid relid)
{
	TtlContainer c;

	if (ttl_restore_guard_fraction <= 0 || !registry_has_guard())
		return false;
	/* the registry's row as committed now, read in C (registry.c) */
	return ttl_read_container(relid, &c) && c.held;
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
	if (fraction <= 0 || ttl_distribution_of(relid) != TTL_DIST_NONE ||
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
