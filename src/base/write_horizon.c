/*
 * write_horizon.c
 *		The write horizon: the oldest "_ts" a running or future statement
 *		of this database can still write, in Unix seconds.  ttl stamps a
 *		row with its statement's start (ttl.now()), so a long statement or
 *		a procedure that commits in a loop writes rows whose _ts lies far
 *		behind the clock; a floor kept above such a _ts (the legal-hold
 *		floor, purge_hold.c) would skip those rows.  The horizon is the
 *		earliest statement start among this database's client backends and
 *		background workers that are running a statement (their status, as
 *		pg_stat_activity shows it),
 *		or now when none is: a statement that starts later stamps later.
 *		Rows written under ttl.now_override are not covered (it is a test
 *		clock, superuser only), nor rows written with the stamp trigger
 *		disabled.  A backend that does not report its activity
 *		(track_activities off) could be running anything: the horizon is
 *		then PG_INT64_MIN (no floor may move).
 *
 * Locking: none; the backends' status is read as a fresh local copy
 * (the copy of this transaction is dropped first, as pg_stat_clear_snapshot
 * does), each entry consistent by its changecount.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/backend_status.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "base/write_horizon.h"

/* Whole Unix seconds, rounded down. */
static int64
unix_seconds(TimestampTz t)
{
	int64		secs = t / USECS_PER_SEC;

	if (t < 0 && t % USECS_PER_SEC != 0)
		secs--;
	return secs + TTL_UNIX_EPOCH_OFFSET;
}

int64
ttl_write_horizon_seconds(void)
{
	TimestampTz oldest = GetCurrentTimestamp();
	int			n;
	int			i;

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *entry = ttl_local_beentry(i);
		PgBackendStatus *be;

		if (entry == NULL)
			continue;
		be = &entry->backendStatus;
		/* client backends and background workers write rows, others do not */
		if (be->st_databaseid != MyDatabaseId ||
			(be->st_backendType != B_BACKEND && be->st_backendType != B_BG_WORKER))
			continue;
		if (be->st_state == STATE_DISABLED)
			return PG_INT64_MIN;
		if ((be->st_state == STATE_RUNNING || be->st_state == STATE_FASTPATH) &&
			be->st_activity_start_timestamp != 0 &&
			be->st_activity_start_timestamp < oldest)
			oldest = be->st_activity_start_timestamp;
	}
	return unix_seconds(oldest);
}
