/*
 * settings.c
 *		The ttl.* settings and ttl.now(), the single clock used by every rule.
 *
 * Locking: none.  Settings are per backend; ttl.now_override is parsed once
 * by its check hook so that reading the clock per row costs a branch.
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/varlena.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tzparser.h"

#include "base/compat.h"
#include "base/purge_window.h"
#include "base/settings.h"

bool		ttl_enabled = true;
bool		ttl_worker_enabled = true;
int			ttl_naptime = 10;
int			ttl_max_workers = 2;
int			ttl_rescan_interval = 300;
int			ttl_batch_size = 1000;
int			ttl_batch_timeout = 60000;
int			ttl_max_visit_time = 300000;
int			ttl_cost_limit = 200;
int			ttl_test_floor_gate = 0;
double		ttl_cost_delay = 2.0;
bool		ttl_mark_purge_deletes = false;
int			ttl_max_replication_lag = -1;
char	   *ttl_replication_lag_ignore = NULL;
int			ttl_log_min_duration = -1;
int			ttl_backlog_alert_age = 3600;
int			ttl_max_purge_time = 0;

static char *ttl_purge_window_text = NULL;
static const TtlPurgeWindow *ttl_purge_window_parsed = NULL;

static char *ttl_now_override_text = NULL;
static bool ttl_now_override_active = false;
static TimestampTz ttl_now_override_value = 0;

/*
 * Parse a timestamptz without raising: the check hook of a setting must
 * report a bad value, not throw.
 */
static bool
parse_timestamptz_quietly(const char *text, TimestampTz *result)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	int			tz;
	fsec_t		fsec;
	struct pg_tm tt;

	if (ParseDateTime(text, workbuf, sizeof(workbuf), field, ftype,
					  MAXDATEFIELDS, &nf) != 0)
		return false;
	if (ttl_decode_datetime(field, ftype, nf, &dtype, &tt, &fsec, &tz) != 0)
		return false;
	if (dtype != DTK_DATE)
		return false;
	return tm2timestamp(&tt, fsec, &tz, result) == 0;
}

static bool
check_now_override(char **newval, void **extra, GucSource source)
{
	TimestampTz *parsed;
	TimestampTz value;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	if (!parse_timestamptz_quietly(*newval, &value))
	{
		GUC_check_errdetail("\"%s\" is not a timestamp with time zone.", *newval);
		GUC_check_errhint("Use a value such as '2026-01-01 00:00:00+00', or an empty string to use the real clock.");
		return false;
	}
	parsed = (TimestampTz *) ttl_guc_malloc(sizeof(TimestampTz));
	if (parsed == NULL)
		return false;
	*parsed = value;
	*extra = parsed;
	return true;
}

static void
assign_now_override(const char *newval, void *extra)
{
	ttl_now_override_active = (extra != NULL);
	if (extra != NULL)
		ttl_now_override_value = *(TimestampTz *) extra;
}

/*
 * ttl.replication_lag_ignore: a list of names, as synchronous_standby_names
 * and temp_tablespaces are written (commas, double quotes for a name that
 * needs them).  Only checked here; replication_lag.c splits it when it
 * reads it.
 */
static bool
check_replication_lag_ignore(char **newval, void **extra, GucSource source)
{
	char	   *copy;
	List	   *names;
	bool		ok;

	if (*newval == NULL)
		return true;
	copy = pstrdup(*newval);
	ok = SplitIdentifierString(copy, ',', &names);
	list_free(names);
	pfree(copy);
	if (!ok)
	{
		GUC_check_errdetail("List syntax is invalid.");
		GUC_check_errhint("Give standby application_names and replication slot names, separated by commas.");
		return false;
	}
	return true;
}

/*
 * ttl.purge_window: parsed once here (purge_window.c), so that the purge
 * asks a parsed window; a bad value is refused with the parser's sentence.
 */
static bool
check_purge_window(char **newval, void **extra, GucSource source)
{
	TtlPurgeWindow parsed;
	TtlPurgeWindow *kept;
	char	   *problem;

	if (!ttl_window_parse(*newval, &parsed, &problem))
	{
		GUC_check_errdetail("%s", problem);
		GUC_check_errhint("Write ranges of times of day such as '01:00-05:00', comma-separated, optionally followed by a time zone name; empty means always.");
		return false;
	}
	if (parsed.nranges == 0)
		return true;
	kept = (TtlPurgeWindow *) ttl_guc_malloc(sizeof(TtlPurgeWindow));
	if (kept == NULL)
		return false;
	*kept = parsed;
	*extra = kept;
	return true;
}

static void
assign_purge_window(const char *newval, void *extra)
{
	ttl_purge_window_parsed = (const TtlPurgeWindow *) extra;
}

/* The window of ttl.purge_window, or NULL (empty: always). */
const TtlPurgeWindow *
ttl_setting_window(void)
{
	return ttl_purge_window_parsed;
}

/*
 * The clock of every rule: the statement timestamp, or ttl.now_override.
 */
TimestampTz
ttl_current_time(void)
{
	if (ttl_now_override_active)
		return ttl_now_override_value;
	return GetCurrentStatementStartTimestamp();
}

/* Whether the clock is ttl.now_override (a test clock), not the real one. */
bool
ttl_clock_overridden(void)
{
	return ttl_now_override_active;
}

/* ttl_current_time() in whole Unix seconds, rounded down. */
int64
ttl_current_unix_seconds(void)
{
	TimestampTz now = ttl_current_time();
	int64		secs = now / USECS_PER_SEC;

	if (now < 0 && now % USECS_PER_SEC != 0)
		secs--;
	return secs + TTL_UNIX_EPOCH_OFFSET;
}

PG_FUNCTION_INFO_V1(ttl_now);
Datum
ttl_now(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(ttl_current_time());
}

/*
 * The visit bound the launcher enforces: ttl.max_visit_time, but never
 * less than an ordinary visit may take (a round of ttl.naptime, the batch
 * started just before its end, one backlog walk), or it would end healthy
 * visits: so at least ttl.naptime + 2 x ttl.batch_timeout.
 */
int64
ttl_visit_bound_ms(void)
{
	int64		floor_ms = (int64) ttl_naptime * 1000 + 2 * (int64) Max(ttl_batch_timeout, 0);

	return Max((int64) ttl_max_visit_time, floor_ms);
}

/*
 * The ttl.* settings, defined at module load (_PG_init).
 */
void
ttl_define_settings(void)
{
	DefineCustomStringVariable("ttl.now_override",
							   "Fixed time returned by ttl.now(), for tests.",
							   "Empty means the statement timestamp. Stamping, hiding, purge and the item functions all use it.",
							   &ttl_now_override_text,
							   "",
							   PGC_SUSET,
							   0,
							   check_now_override,
							   assign_now_override,
							   NULL);

	DefineCustomBoolVariable("ttl.enabled",
							 "Enables automatic physical purge of expired items.",
							 "Off stops the background worker and scheduled purges at once; hiding goes on.",
							 &ttl_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Per database (ALTER DATABASE ... SET): the worker reads its database's
	 * settings when it connects, so this keeps it out of one database while
	 * ttl.purge() and ttl.run_purge() go on there, as in a database of
	 * tests, or one purged by pg_cron.  Superuser-only: an owner must not
	 * be able to stop the purge of a database for the other owners.
	 */
	DefineCustomBoolVariable("ttl.worker_enabled",
							 "Lets the background purge worker visit this database.",
							 "Set it off for one database with ALTER DATABASE ... SET; ttl.purge() and ttl.run_purge() are not affected.",
							 &ttl_worker_enabled,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("ttl.naptime",
							"Time between purge rounds of a database, and the longest a round lasts.",
							"A worker serves its database for one round, then leaves the pool's slot to the next database.",
							&ttl_naptime,
							10, 1, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("ttl.rescan_interval",
							"Time between visits to the databases where no ttl extension was found.",
							"Catches a database restored or created from a template that has the extension; CREATE EXTENSION ttl is noticed at once.",
							&ttl_rescan_interval,
							300, 1, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("ttl.batch_size",
							"Rows deleted per purge transaction.",
							NULL,
							&ttl_batch_size,
							1000, 1, 1000000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("ttl.batch_timeout",
							"Longest a purge batch of the worker or ttl.run_purge() may run.",
							"A batch that runs longer (a slow DELETE trigger, say) is cancelled and recorded as its container's error; the round goes on with the other containers. 0 turns the bound off.",
							&ttl_batch_timeout,
							60000, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * The hard bound on a worker's visit (launcher.c ends a worker that
	 * overstays it).  No value turns it off: a bound that an owner's code
	 * can lift protects nobody; a cluster that wants very long batches
	 * sets it large.  SIGHUP: the launcher enforces it, with its own value.
	 */
	DefineCustomIntVariable("ttl.max_visit_time",
							"Longest a purge worker may serve a database before the launcher terminates it.",
							"Time the worker waits on purpose does not count. A value below ttl.naptime + 2 x ttl.batch_timeout is raised to that. The container it was in is backed off.",
							&ttl_max_visit_time,
							300000, 1000, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * A test's hook into rule 10's floor (stamp/replace_floor.c): a
	 * recompute of a leaf's floor first takes and releases this advisory
	 * lock (shared, bigint key), so an isolation spec can hold it there
	 * between its look at the writers in flight and its index reads.  0:
	 * none.  Superuser only, hidden.
	 */
	DefineCustomIntVariable("ttl.test_floor_gate",
							"Advisory lock key a recompute of a rule 10 floor waits on (tests only).",
							NULL,
							&ttl_test_floor_gate,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("ttl.cost_limit",
							"Cost units a purge may spend before it sleeps for ttl.cost_delay.",
							"Counted like vacuum_cost_page_hit/miss/dirty. 0 disables throttling.",
							&ttl_cost_limit,
							200, 0, 10000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("ttl.cost_delay",
							 "Sleep of a purge that has spent ttl.cost_limit.",
							 "0 disables throttling.",
							 &ttl_cost_delay,
							 2.0, 0.0, 100.0,
							 PGC_USERSET,
							 GUC_UNIT_MS,
							 NULL, NULL, NULL);

	/*
	 * Who decides whether TTL deletes are marked in the change stream
	 * (mark.c): superusers (postgresql.conf for the worker, ALTER
	 * DATABASE/ROLE SET, or SET in a superuser's session).  A consumer that
	 * skips marked deletes (an archive, an audit trail) relies on it, so a
	 * table owner may neither hide the purge of their own rows from such a
	 * consumer by turning it on nor send it unmarked by turning it off.
	 */
	DefineCustomBoolVariable("ttl.mark_purge_deletes",
							 "Marks the deletes of purges in the logical decoding change stream.",
							 "A transactional message with prefix \"ttl\" per purge batch; the worker's and ttl.run_purge()'s own transactions also run under a replication origin named ttl_purge_<n>. Needs wal_level = logical.",
							 &ttl_mark_purge_deletes,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Replicas first (1.7): while a streaming standby or an active
	 * replication slot is further behind than this, the background purge
	 * waits (replication_lag.c).  Units as max_wal_size.  SIGHUP: the
	 * launcher decides, with its own value; a table owner cannot lift it.
	 */
	DefineCustomIntVariable("ttl.max_replication_lag",
							"Amount of WAL a standby or an active replication slot may be behind before the background purge waits.",
							"Counts streaming standbys that report a replay position and active replication slots, less those in ttl.replication_lag_ignore. -1 turns the check off. Explicit ttl.purge() is never throttled.",
							&ttl_max_replication_lag,
							-1, -1, MAX_KILOBYTES,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomStringVariable("ttl.replication_lag_ignore",
							   "Standby application_names and replication slot names that ttl.max_replication_lag leaves out.",
							   "A comma-separated list, as synchronous_standby_names: delayed standbys, pg_receivewal, backup tools, other tools' slots.",
							   &ttl_replication_lag_ignore,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   check_replication_lag_ignore,
							   NULL, NULL);

	/*
	 * One LOG line per container a purge visited (1.9, purge/visit_log.c),
	 * as log_autovacuum_min_duration does for a table autovacuum visited.
	 * Superusers decide what the server log receives: postgresql.conf for
	 * the worker, ALTER DATABASE/ROLE SET, or SET in a superuser's session.
	 */
	DefineCustomIntVariable("ttl.log_min_duration",
							"Logs each container visit of a purge that took at least this long.",
							"-1 (default) logs none, 0 every visit of the worker, ttl.run_purge() or ttl.purge(): rows deleted, archived and skipped, batches, elapsed and throttled time, WAL bytes.",
							&ttl_log_min_duration,
							-1, -1, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * Purge windows (purge_window.c).  Per server or per database (ALTER
	 * DATABASE ... SET): the worker reads its database's settings when it
	 * connects, never a role's, so a window set per role would bind only
	 * that role's ttl.run_purge(); superuser-only, as a window keeps the
	 * purge away from every owner's containers.
	 */
	DefineCustomStringVariable("ttl.purge_window",
							   "Times of day outside which the background worker and ttl.run_purge() leave containers without a window of their own.",
							   "Ranges such as '01:00-05:00', comma-separated, optionally followed by a time zone name (else TimeZone). Empty means always. ttl.purge() ignores windows.",
							   &ttl_purge_window_text,
							   "",
							   PGC_SUSET,
							   0,
							   check_purge_window,
							   assign_purge_window,
							   NULL);

	/*
	 * The falling-behind signal (insight/behind.c): ttl.stats.behind, and
	 * the worker's one WARNING when a container crosses it.  SIGHUP: one
	 * threshold for the worker and every reader.
	 */
	DefineCustomIntVariable("ttl.backlog_alert_age",
							"Age of a container's oldest expired item beyond which the container is behind.",
							"Held items, quarantined rows and paused containers are left out. The worker logs one WARNING when a container falls behind and one LOG line when it catches up. -1 turns the signal off.",
							&ttl_backlog_alert_age,
							3600, -1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * How long one visit of the worker may spend on one container (its
	 * batches and the cost budget's sleeps after them) before the rest of
	 * its backlog waits for the next round (purge_round.c).
	 */
	DefineCustomIntVariable("ttl.max_purge_time",
							"Longest one visit of the background worker spends on one container before it moves on.",
							"The rest of the container's backlog waits for a later round, resumed where it stopped. 0 means no limit.",
							&ttl_max_purge_time,
							0, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * The pool's size fixes shared memory: defined only when loaded by
	 * shared_preload_libraries (core refuses a server-start setting
	 * defined later), so a session that loads ttl by itself does not know
	 * it; there is no pool then.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("ttl.max_workers",
								"Most purge workers running at once, in the whole cluster.",
								"Each serves one database for a round, then leaves. Together with the launcher, ttl takes 1 + ttl.max_workers of max_worker_processes.",
								&ttl_max_workers,
								2, 1, 64,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);

	MarkGUCPrefixReserved("ttl");
}
