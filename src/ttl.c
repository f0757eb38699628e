/*
 * ttl.c
 *		Module load, and every hook of the library in one place: _PG_init()
 *		defines the settings, registers the callbacks and the launcher,
 *		and installs each hook once, chaining the subsystems' steps in a
 *		fixed order and then whatever was installed before ttl (another
 *		library's hook, or PostgreSQL's standard function).  The
 *		subsystems (src/README.md) export steps, never install hooks.
 *
 * The chains:
 *   planner             live: flatten <table>_live           -> previous
 *   post_parse_analyze  previous -> live: flatten <table>_live
 *   ProcessUtility      scheduler: stop a database's worker first (with
 *                       the preload) -> citus: a COPY's shard errors
 *                       -> live: count the ViewStmts running -> previous
 *   ExecutorStart       previous -> purge: a purge's triggers not deferred
 *                       -> stamp: rule 10 notes the INSERT/UPDATE running
 *   ExecutorEnd         stamp: rule 10 forgets it -> previous
 *   ExecutorRun         citus: an INSERT ... SELECT's shard errors
 *                       -> previous
 *   needs_fmgr / fmgr   previous -> citus: around Citus's table makers
 *   shmem_request /     (with the preload) previous -> scheduler: worker
 *   shmem_startup       slots, databases, resume points, the replication
 *                       wait -> guard: events -> purge: the purges'
 *                       progress slots (without the preload, 17+
 *                       takes the slots from the DSM registry at run
 *                       time) -> stamp: rule 10's due floors
 *   callbacks           relcache: registry (cached policies), stamp (rule
 *                       10's cached leaves), purge (archive fits); syscache
 *                       EXTENSIONOID: base (the installed SQL version); xact:
 *                       stamp (rule 10's statements, retired leaves, the
 *                       floors' writers in flight), purge (a marking round's
 *                       origin given back at abort), scheduler (CREATE EXTENSION ttl tells
 *                       the launcher, with the preload); subxact: stamp
 *   policy door         registry/policy.c <- citus (ttl_citus_ops): the
 *                       one way the rest reaches Citus
 *
 * Locking: none.
 */
#include "postgres.h"

#include "catalog/pg_extension.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "base/hooks.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "citus/citus.h"
#include "citus/citus_copy.h"
#include "citus/citus_meta.h"
#include "guard/guard.h"
#include "guard/guard_events.h"
#include "live/live_view.h"
#include "purge/archive.h"
#include "purge/mark.h"
#include "purge/progress.h"
#include "purge/purge.h"
#include "registry/policy.h"
#include "registry/registry.h"
#include "scheduler/replication_wait.h"
#include "scheduler/scheduler.h"
#include "stamp/replace.h"
#include "stamp/replace_floor.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static planner_hook_type prev_planner = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorRun_hook_type prev_executor_run = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;
static needs_fmgr_hook_type prev_needs_fmgr = NULL;
static fmgr_hook_type prev_fmgr = NULL;
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

/* loaded by shared_preload_libraries: the scheduler and guard are there */
static bool loaded_at_start = false;

/* ---- planner, parse analysis ---- */

static PlannedStmt *
ttl_planner(Query *parse, const char *query_string, int cursor_options,
			ParamListInfo bound_params)
{
	ttl_live_view_plan(parse);
	if (prev_planner)
		return prev_planner(parse, query_string, cursor_options, bound_params);
	return standard_planner(parse, query_string, cursor_options, bound_params);
}

static void
ttl_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	ttl_live_view_analyzed(query);
}

/* ---- ProcessUtility: each step calls the next exactly once ---- */

static void
utility_previous(TTL_UTILITY_PARAMS)
{
	if (prev_process_utility)
		prev_process_utility(TTL_UTILITY_ARGS);
	else
		standard_ProcessUtility(TTL_UTILITY_ARGS);
}

static void
utility_live(TTL_UTILITY_PARAMS)
{
	ttl_live_view_utility(TTL_UTILITY_ARGS, utility_previous);
}

static void
utility_citus(TTL_UTILITY_PARAMS)
{
	ttl_citus_copy_utility(TTL_UTILITY_ARGS, utility_live);
}

static void
ttl_process_utility(TTL_UTILITY_PARAMS)
{
	if (loaded_at_start)
		ttl_scheduler_utility(TTL_UTILITY_ARGS, utility_citus);
	else
		utility_citus(TTL_UTILITY_ARGS);
}

/* ---- the executor ---- */

static void
ttl_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	ttl_purge_executor_started(queryDesc);
	ttl_replace_executor_started(queryDesc, eflags);
}

static void
ttl_executor_end(QueryDesc *queryDesc)
{
	ttl_replace_executor_ending(queryDesc);
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

static void
executor_run_previous(TTL_EXECUTOR_RUN_PARAMS)
{
	if (prev_executor_run)
		prev_executor_run(TTL_EXECUTOR_RUN_ARGS);
	else
		standard_ExecutorRun(TTL_EXECUTOR_RUN_ARGS);
}

static void
ttl_executor_run(TTL_EXECUTOR_RUN_PARAMS)
{
	ttl_citus_copy_executor_run(TTL_EXECUTOR_RUN_ARGS, executor_run_previous);
}

/* ---- fmgr ---- */

static bool
ttl_needs_fmgr(Oid fn_oid)
{
	if (prev_needs_fmgr && prev_needs_fmgr(fn_oid))
		return true;
	return ttl_citus_needs_fmgr(fn_oid);
}

static void
ttl_fmgr(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	if (prev_fmgr)
		prev_fmgr(event, flinfo, private);
	ttl_citus_fmgr(event, flinfo, private);
}

/* ---- shared memory (with the preload only) ---- */

static void
ttl_shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	ttl_scheduler_shmem_request();
	ttl_replication_wait_shmem_request();
	ttl_guard_shmem_request();
	ttl_progress_shmem_request();
	ttl_floor_shmem_request();
}

static void
ttl_shmem_startup(void)
{
	if (prev_shmem_startup)
		prev_shmem_startup();
	ttl_scheduler_shmem_startup();
	ttl_replication_wait_shmem_startup();
	ttl_guard_shmem_startup();
	ttl_progress_shmem_startup();
	ttl_floor_shmem_startup();
}

/*
 * The relcache invalidations ttl's caches follow, in one callback: a
 * backend has room for few of them (MAX_RELCACHE_CALLBACKS, 10 before 18),
 * which Citus and a walsender's pgoutput share with ttl ("out of
 * relcache_callback_list slots" ended a Citus shard move's walsender when
 * ttl took three).  The registry cache, rule 10's leaf cache and the
 * archives' fits.
 */
static void
ttl_relcache_invalidate(Datum arg, Oid relid)
{
	ttl_registry_invalidate(arg, relid);
	ttl_replace_invalidate(arg, relid);
	ttl_archive_invalidate(arg, relid);
}

void
_PG_init(void)
{
	/* before ttl_define_settings(), which reserves the prefix */
	ttl_guard_define_settings();
	ttl_define_settings();

	/* the Citus half of the one policy door (registry/policy.c) */
	ttl_policy_install_distributed(&ttl_citus_ops);
	/* one slot of the relcache's few (see ttl_relcache_invalidate) */
	CacheRegisterRelcacheCallback(ttl_relcache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(EXTENSIONOID, ttl_sql_version_forget, (Datum) 0);
	RegisterXactCallback(ttl_replace_xact_callback, NULL);
	RegisterXactCallback(ttl_mark_xact_callback, NULL);
	/* a policy change resets rule 10's floors (before it commits) */
	ttl_policy_change_hook = ttl_floor_reset_container;
	RegisterSubXactCallback(ttl_replace_subxact_callback, NULL);

	prev_planner = planner_hook;
	planner_hook = ttl_planner;
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = ttl_post_parse_analyze;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ttl_process_utility;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = ttl_executor_start;
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = ttl_executor_run;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = ttl_executor_end;
	prev_needs_fmgr = needs_fmgr_hook;
	needs_fmgr_hook = ttl_needs_fmgr;
	prev_fmgr = fmgr_hook;
	fmgr_hook = ttl_fmgr;

	if (process_shared_preload_libraries_in_progress)
	{
		loaded_at_start = true;
		prev_shmem_request = shmem_request_hook;
		shmem_request_hook = ttl_shmem_request;
		prev_shmem_startup = shmem_startup_hook;
		shmem_startup_hook = ttl_shmem_startup;
		RegisterXactCallback(ttl_scheduler_xact_callback, NULL);
		ttl_register_launcher();
	}
}
