/*
 * pool_views.c
 *		The SQL face of the worker pool: ttl._databases() behind the view
 *		ttl.databases (one row per database the launcher knows) and
 *		ttl._worker_pool() behind ttl.worker_pool (its size, the workers
 *		running now, the high-water mark).  Both read a copy of the shared
 *		state that db_states.c makes under its lock; without
 *		shared_preload_libraries there is no pool: no rows, and NULLs.
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

#include "scheduler.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(ttl_databases);
Datum
ttl_databases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TtlDbReport *dbs;
	int			n;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	dbs = ttl_db_report(&n);
	for (i = 0; i < n; i++)
	{
		TtlDbReport *db = &dbs[i];
		Datum		values[9];
		bool		nulls[9] = {0};
		char	   *name = get_database_name(db->dboid);

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
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(ttl_worker_pool);
Datum
ttl_worker_pool(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {0};
	int			running;
	int			high_water;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (ttl_db_pool_counts(&running, &high_water))
	{
		values[0] = Int32GetDatum(ttl_max_workers);
		values[1] = Int32GetDatum(running);
		values[2] = Int32GetDatum(high_water);
	}
	else
		nulls[0] = nulls[1] = nulls[2] = true;	/* not preloaded: no pool */
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}
