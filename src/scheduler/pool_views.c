/*
 * pool_views.c
 *		The SQL face of the worker pool: ttl._databases() behind the view
 *		ttl.databases (one row per database the launcher knows) and
 *		ttl._worker_pool() behind ttl.worker_pool (its size, the workers
 *		running now, the high-water mark).  Both read a copy of the shared
 *		state that db_states.c makes under its lock; without
 *		shared_preload_libraries there is no pool: no rows, and NULLs.
 *		Since 1.7 they also show the visit bound at work (visit.h): the
 *		container a database's worker is in now and what it does there,
 *		and the visits the launcher terminated; and the background purge
 *		waiting for a lagging replica (replication_wait.c).  A database
 *		whose extension is still older gets the columns its SQL declares.
 *
 * Locking: none here (db_states.c copies under its LWLock).  Who may read
 * is decided by the grants of ttl--1.1--1.2.sql (superusers and
 * pg_read_all_stats, as for other sessions' details in pg_stat_activity).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "base/visit.h"
#include "scheduler/replication_wait.h"
#include "scheduler/scheduler.h"

/*
 * The three columns of the replication wait (1.7): since when, which
 * standby or slot, how many bytes behind; NULLs when not waiting.
 */
static void
set_replication_wait(Datum *values, bool *nulls, bool waiting, TimestampTz since,
					 const TtlReplicationLag *lag)
{
	values[0] = TimestampTzGetDatum(since);
	values[1] = waiting ? CStringGetTextDatum(lag->who) : (Datum) 0;
	values[2] = Int64GetDatum(lag->lag_bytes);
	nulls[0] = nulls[1] = nulls[2] = !waiting;
}

PG_FUNCTION_INFO_V1(ttl_databases);
Datum
ttl_databases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TtlDbReport *dbs;
	int			n;
	int			i;
	TimestampTz since;
	TtlReplicationLag lag;
	bool		waiting;

	InitMaterializedSRF(fcinfo, 0);
	waiting = ttl_replication_wait_report(&since, &lag);
	dbs = ttl_db_report(&n);
	for (i = 0; i < n; i++)
	{
		TtlDbReport *db = &dbs[i];
		Datum		values[17];
		bool		nulls[17] = {0};
		char	   *name = get_database_name(db->dboid);
		Oid			relid;
		TtlStep		step;

		values[0] = ObjectIdGetDatum(db->dboid);
		if (name != NULL)
			values[1] = CStringGetTextDatum(name);
		else
			nulls[1] = true;	/* dropped since the launcher last looked */
		values[2] = BoolGetDatum(db->has_ttl);
		nulls[2] = !db->has_ttl_known;
		values[3] = Int32GetDatum(db->pid);
		nulls[3] = (db->pid == 0);
		values[4] = TimestampTzGetDatum(db->last_served);
		nulls[4] = (db->last_served == 0);
		/* a backlog only once a worker has served a database with ttl */
		values[5] = Int64GetDatum(db->due_rows);
		nulls[5] = (db->last_served == 0 || !db->has_ttl);
		values[6] = TimestampTzGetDatum(db->oldest_due);
		nulls[6] = (db->oldest_due == 0);
		values[7] = CStringGetTextDatum(db->last_error);
		nulls[7] = (db->last_error[0] == '\0');
		values[8] = Int64GetDatum(db->visits);
		ttl_visit_inflight_of(db->pid, &relid, &step);
		values[9] = ObjectIdGetDatum(relid);
		nulls[9] = !OidIsValid(relid);
		values[10] = CStringGetTextDatum(ttl_step_name(step));
		nulls[10] = !OidIsValid(relid);
		values[11] = Int64GetDatum(db->terminations);
		values[12] = CStringGetTextDatum(db->last_termination);
		nulls[12] = (db->last_termination[0] == '\0');
		/* replicas first: a database with ttl waits while the launcher does */
		set_replication_wait(&values[13], &nulls[13],
							 waiting && !(db->has_ttl_known && !db->has_ttl),
							 since, &lag);
		/* 1.9: whether due_rows is a lower bound (a count stopped) */
		values[16] = BoolGetDatum(db->due_rows_capped);
		nulls[16] = nulls[5];
		/* 1.2 to 1.6 declare the first nine columns; an older 1.7 build 13 */
		Assert(rsinfo->setDesc->natts == 9 || rsinfo->setDesc->natts == 13 ||
			   rsinfo->setDesc->natts == 16 || rsinfo->setDesc->natts == 17);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(ttl_worker_pool);
Datum
ttl_worker_pool(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {0};
	int			running;
	int			high_water;
	int64		terminations;
	TimestampTz since;
	TtlReplicationLag lag;
	bool		waiting = ttl_replication_wait_report(&since, &lag);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (ttl_db_pool_counts(&running, &high_water, &terminations))
	{
		values[0] = Int32GetDatum(ttl_max_workers);
		values[1] = Int32GetDatum(running);
		values[2] = Int32GetDatum(high_water);
		values[3] = Int64GetDatum(terminations);
	}
	else
		nulls[0] = nulls[1] = nulls[2] = nulls[3] = true;	/* not preloaded: no pool */
	set_replication_wait(&values[4], &nulls[4], waiting, since, &lag);
	/* 1.2 to 1.6 declare the first three columns; an older 1.7 build four */
	Assert(tupdesc->natts == 3 || tupdesc->natts == 4 || tupdesc->natts == 7);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}
