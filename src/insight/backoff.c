/*
 * backoff.c
 *		The durable back-off of a container whose statements overran their
 *		time bound in the background worker (visit.h): a batch cancelled by
 *		ttl.batch_timeout, a backlog walk cancelled by it, or a worker the
 *		launcher terminated after ttl.max_visit_time while it was in the
 *		container.  Each overrun is counted in ttl.purge_stats.overruns and
 *		sets retry_after to now + ttl.naptime x 2^overruns, capped at an
 *		hour (or one naptime, if longer); until then the worker leaves the
 *		container out of its rounds and backlog walks, so the database's
 *		other containers are served first.  A table, not shared memory: it
 *		holds any number of containers and survives a restart.  A backlog
 *		walk of the container that completes within its bound (the last
 *		statement of a visit that reached it) sets overruns back to 0.
 *		1.8 (archives, whose failures repeat): any failing batch of the worker or of run_purge
 *		backs its container off the same way (an archive's trigger or
 *		constraint fails every retry until repaired), and a batch that
 *		commits sets overruns back to 0; each of the two ends only a
 *		back-off of its own kind (ttl_backoff_clear).
 *
 * ttl.run_purge() and ttl.purge() do not honour it: they are a caller's
 * own statements, bounded by that caller (README, "Background purge");
 * a failing batch of ttl.run_purge() counts (purge_round.c), so the
 * worker leaves that container out too.  It lives beside stats.c, which owns ttl.purge_stats, below
 * both the purge (purge_round.c) and the scheduler (worker.c) that use it.
 * A database whose extension is still at 1.6 has no such
 * columns: overruns are recorded as last_error only, without back-off.
 *
 * Locking: ttl.purge_stats is written as the extension's owner
 * (ttl_registry_execute) in the caller's transaction; one worker per
 * database writes a container's row at a time.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "base/run_as.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "base/visit.h"
#include "insight/stats.h"
#include "registry/policy.h"

/* The longest back-off, in seconds (unless ttl.naptime is longer). */
#define BACKOFF_CAP_S 3600

/* Whether ttl.purge_stats has the back-off columns (1.7 and later). */
bool
ttl_backoff_available(void)
{
	return ttl_sql_at_least(1, 7);
}

/*
 * The containers backed off now (*backed_off) and those with overruns
 * counted (*overran, a superset), as OID lists in the caller's memory
 * context.  NIL and NIL before 1.7.
 */
void
ttl_backoff_load(List **backed_off, List **overran)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	uint64		i;

	*backed_off = NIL;
	*overran = NIL;
	if (!ttl_backoff_available())
		return;
	ttl_spi_connect();
	if (SPI_execute("SELECT s.relid, s.retry_after OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()"
					" FROM ttl.purge_stats s WHERE s.overruns OPERATOR(pg_catalog.>) 0",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read ttl.purge_stats");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		Datum		later = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);
		MemoryContext old = MemoryContextSwitchTo(caller_cxt);

		*overran = lappend_oid(*overran, relid);
		if (!isnull && DatumGetBool(later))
			*backed_off = lappend_oid(*backed_off, relid);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
}

/*
 * relid overran: message is its last_error, one more overrun is counted
 * and it is backed off.  In the caller's transaction.
 */
void
ttl_backoff_record(Oid relid, const char *message)
{
	Oid			argtypes[5] = {OIDOID, TEXTOID, FLOAT8OID, FLOAT8OID, BOOLOID};
	Datum		values[5];
	static SPIPlanPtr plan = NULL;

	if (!ttl_backoff_available())
	{
		ttl_record_purge(relid, 0, message);
		return;
	}
	values[0] = ObjectIdGetDatum(relid);
	values[1] = CStringGetTextDatum(message);
	/* the first overrun backs off for two naptimes, each next one twice that */
	values[2] = Float8GetDatum(2.0 * ttl_naptime);
	values[3] = Float8GetDatum((double) Max(BACKOFF_CAP_S, ttl_naptime));
	/* a piece of a distributed container has no registry row (policy.c) */
	values[4] = BoolGetDatum(ttl_is_placement(relid));
	ttl_registry_execute(
		"INSERT INTO ttl.purge_stats AS s"
		" (relid, last_error, last_error_at, overruns, retry_after)"
		" SELECT $1, $2, ttl.now(), 1, pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+)"
		"  pg_catalog.make_interval(secs => LEAST($4, $3))"
		" WHERE $5 OR EXISTS (SELECT FROM ttl.registry WHERE relid OPERATOR(pg_catalog.=) $1)"
		" ON CONFLICT (relid) DO UPDATE SET"
		"  last_error = $2,"
		"  last_error_at = ttl.now(),"
		"  overruns = s.overruns OPERATOR(pg_catalog.+) 1,"
		"  retry_after = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+)"
		"   pg_catalog.make_interval(secs => LEAST($4, $3 OPERATOR(pg_catalog.*)"
		"    pg_catalog.power(2::pg_catalog.float8, LEAST(s.overruns, 30)::pg_catalog.float8)))",
		5, argtypes, values, NULL, &plan);
}

/*
 * relid was served within its bounds: no more back-off.  walk: a backlog
 * walk completed, which ends a back-off a walk caused (its last_error
 * names the backlog walk); else a purge batch committed, which ends one a
 * batch caused (an overrun, a failing archive).  Each ends only its own,
 * so a container whose batches fail keeps doubling its back-off while its
 * walks complete, and the other way round.
 */
void
ttl_backoff_clear(Oid relid, bool walk)
{
	Oid			argtypes[2] = {OIDOID, BOOLOID};
	Datum		values[2];
	static SPIPlanPtr plan = NULL;

	if (!ttl_backoff_available())
		return;
	values[0] = ObjectIdGetDatum(relid);
	values[1] = BoolGetDatum(walk);
	ttl_registry_execute("UPDATE ttl.purge_stats SET overruns = 0, retry_after = NULL"
						 " WHERE relid OPERATOR(pg_catalog.=) $1"
						 " AND overruns OPERATOR(pg_catalog.>) 0"
						 " AND (last_error IS NOT NULL AND pg_catalog.strpos(last_error,"
						 "  'backlog walk') OPERATOR(pg_catalog.>) 0) OPERATOR(pg_catalog.=) $2",
						 2, argtypes, values, NULL, &plan);
}
