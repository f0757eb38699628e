/*
 * behind.c
 *		The falling-behind signal and the purge window's next opening, as
 *		ttl.stats shows them (ttl._behind: behind, behind_since,
 *		next_window_at), and the worker's one WARNING when a container falls
 *		behind and one LOG line when it catches up (ttl_behind_note).
 *
 * A container is behind when the oldest expired item a purge could delete
 * (the backlog's oldest: held items and rows recorded in
 * ttl.purge_failures left out, stats.c) expired longer ago than
 * ttl.backlog_alert_age; a paused container, or one the restore guard
 * holds, is not (nothing purges it on purpose).  It has been behind since
 * that item's expiry plus the alert age: computed, not stored, so ttl.stats
 * says the same with or without the worker.  What is stored is whether the
 * worker has said so: ttl.purge_stats.behind_since, set with the WARNING
 * and cleared with the LOG line, so that the pool's workers, each of which
 * serves a database for one round and exits, say each crossing once.
 *
 * Locking: the note writes ttl.purge_stats as the extension's owner
 * (ttl_registry_execute) in the worker's transaction; a conditional
 * UPDATE decides who logs, so a crossing is logged once even if two
 * writers raced (they do not: one worker per database).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/purge_window.h"
#include "base/run_as.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "insight/stats.h"
#include "registry/container_window.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * Whether a container whose oldest deletable expired item expired at
 * oldest (0: none) is behind at now, and since when.
 */
static bool
judge_behind(TimestampTz oldest, TimestampTz now, TimestampTz *since)
{
	int64		age_us = (int64) ttl_backlog_alert_age * USECS_PER_SEC;

	if (ttl_backlog_alert_age < 0 || oldest == 0 || TIMESTAMP_NOT_FINITE(oldest))
		return false;
	if (now - oldest <= age_us)
		return false;
	*since = oldest + age_us;
	return true;
}

/* Whether relid's purge is stopped on purpose (paused, guard hold). */
static bool
purge_stopped(Oid relid)
{
	TtlContainer c;

	return ttl_lookup_container(relid, &c) && (c.paused || c.held);
}

/*
 * ttl._behind(container, oldest_expired_at), for ttl.stats: behind,
 * behind_since and next_window_at (NULL without a window; ttl.now() inside
 * one; else when the next one opens).  NULLs for a table that no longer
 * exists, as ttl._backlog gives.
 */
PG_FUNCTION_INFO_V1(ttl_behind_sql);
Datum
ttl_behind_sql(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, true, true};
	TimestampTz since;
	TimestampTz next;
	TtlPurgeWindow w;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	/* gone (dropped under ttl.stats, as for ttl._backlog): NULLs */
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
	{
		nulls[0] = true;
		return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
	}
	values[0] = BoolGetDatum(false);
	if (!PG_ARGISNULL(1) && !purge_stopped(relid) &&
		judge_behind(PG_GETARG_TIMESTAMPTZ(1), ttl_current_time(), &since))
	{
		values[0] = BoolGetDatum(true);
		values[1] = TimestampTzGetDatum(since);
		nulls[1] = false;
	}
	if (ttl_container_window(relid, &w) &&
		ttl_window_next_start(&w, ttl_window_clock(), &next))
	{
		values[2] = TimestampTzGetDatum(next);
		nulls[2] = false;
	}
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/*
 * The worker has walked relid's backlog (oldest: its oldest deletable
 * expired item, 0 for none): one WARNING when it has fallen behind since
 * the last note, one LOG line when it has caught up.  Before 1.9 (no
 * column to keep it in) nothing is said: it would be said at every visit.
 */
void
ttl_behind_note(Oid relid, TimestampTz oldest)
{
	static SPIPlanPtr set_plan = NULL;
	static SPIPlanPtr clear_plan = NULL;
	Oid			argtypes[3] = {OIDOID, TIMESTAMPTZOID, BOOLOID};
	Datum		values[3];
	TimestampTz now = ttl_current_time();
	TimestampTz since = 0;

	if (ttl_backlog_alert_age < 0 || !ttl_sql_at_least(1, 9))
		return;
	values[0] = ObjectIdGetDatum(relid);
	if (judge_behind(oldest, now, &since))
	{
		values[1] = TimestampTzGetDatum(since);
		values[2] = BoolGetDatum(ttl_is_placement(relid));
		if (ttl_registry_execute_count(
									   "INSERT INTO ttl.purge_stats AS s (relid, behind_since)"
									   " SELECT $1, $2"
									   " WHERE $3 OR EXISTS (SELECT FROM ttl.registry WHERE relid OPERATOR(pg_catalog.=) $1)"
									   " ON CONFLICT (relid) DO UPDATE SET behind_since = $2"
									   " WHERE s.behind_since IS NULL",
									   3, argtypes, values, NULL, &set_plan) > 0)
			ereport(WARNING,
					(errmsg("ttl container \"%s\" is behind: its oldest expired item expired at %s",
							ttl_relation_display_name(relid), timestamptz_to_str(oldest)),
					 errdetail("Its oldest expired item that a purge could delete is older than ttl.backlog_alert_age (%d s); it has been behind since %s.",
							   ttl_backlog_alert_age, timestamptz_to_str(since)),
					 errhint("See ttl.stats (last_error, retry_after, next_window_at) and the purge settings (ttl.cost_limit, ttl.batch_size, ttl.max_purge_time, ttl.purge_window).")));
		return;
	}
	if (ttl_registry_execute_count(
								   "UPDATE ttl.purge_stats SET behind_since = NULL"
								   " WHERE relid OPERATOR(pg_catalog.=) $1 AND behind_since IS NOT NULL",
								   1, argtypes, values, NULL, &clear_plan) > 0)
		ereport(LOG,
				(errmsg("ttl container \"%s\" has caught up", ttl_relation_display_name(relid)),
				 errdetail("Its oldest expired item that a purge could delete is no older than ttl.backlog_alert_age (%d s).",
						   ttl_backlog_alert_age)));
}
