/*
 * purge.c
 *		Physical deletion of expired items: one index-driven batch, the
 *		round over every due container (shared by the background worker and
 *		the ttl.run_purge() procedure), ttl.purge() and the statistics.
 *
 * Locking: a batch runs in its own (sub)transaction as the table's owner,
 * inside a security-restricted operation with search_path pg_catalog,
 * pg_temp.  It first takes the container's purge lock without waiting
 * (another purger, or a policy change, means "skip"; the lock is the
 * extension's own, see catalog.c), then RowExclusiveLock on the table and
 * all its partitions without waiting (a table locked by DDL is skipped,
 * not queued behind), then re-reads the default and the pause flag under
 * that lock, as committed now (a fresh snapshot, whatever the caller's
 * isolation level: a REPEATABLE READ caller must not purge by a default
 * that has been changed since its snapshot).  A table whose
 * DELETE would do nothing but delete takes the direct path
 * (purge_direct.c: deletes that skip, never wait for, rows others hold).
 * Otherwise rows are locked FOR UPDATE SKIP LOCKED and deleted by a DELETE
 * statement whose own WHERE clause repeats the expiry predicate, so
 * triggers, foreign keys, rules and row security all act.  Either way a
 * row whose _ts was refreshed concurrently is never deleted.
 *
 * Security: no SQL runs with the caller's search_path.  Containers are
 * listed and read in C (catalog.c); every statement names its operators
 * and functions schema-qualified.  Deferred triggers queued by a purge fire
 * before it returns, as the owner (purge_executor_start), never at the
 * caller's commit.  A batch of the worker or ttl.run_purge() is bounded by
 * ttl.batch_timeout.
 */
#include "ttl.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

typedef enum PurgeKind
{
	PURGE_INHERITED,			/* items without their own ttl: key _ts */
	PURGE_OWN,					/* items with their own ttl: key _ts + ttl */
	PURGE_DONE
} PurgeKind;

typedef struct PurgeCursor
{
	Oid			relid;
	Oid			owner;
	int64		now_seconds;	/* the round's clock */
	PurgeKind	kind;
	Oid			leaf;			/* keyset: resume where the last batch ended, */
	int64		lower_key;		/* (partition of a direct walk, key) */
	int64		deleted;
	bool		busy;			/* skipped this round: locked by someone else */
	bool		honour_pause;	/* automatic purge stops when paused */
	bool		use_walk;		/* direct path: batches take from one walk */
	TtlWalk    *walk;			/* that walk, */
	MemoryContext walk_cxt;		/* in the round's memory */
} PurgeCursor;

static void
cursor_init(PurgeCursor *cur, Oid relid, Oid owner, int64 now_seconds,
			bool honour_pause, bool use_walk)
{
	memset(cur, 0, sizeof(PurgeCursor));
	cur->use_walk = use_walk;
	cur->walk_cxt = CurrentMemoryContext;
	cur->relid = relid;
	cur->owner = owner;
	cur->now_seconds = now_seconds;
	cur->honour_pause = honour_pause;
	cur->kind = PURGE_INHERITED;
	cur->leaf = InvalidOid;
	cur->lower_key = PG_INT64_MIN;
}

/*
 * The batch statement, with $1 = lower key (keyset), $2 = cutoff key,
 * $3 = batch size (NULL: all), $4 = the default, $5 = now (Unix seconds).
 * It locks a batch in key order through the purge index, skipping rows
 * others hold, then deletes exactly those rows by TID.  The DELETE repeats
 * the expiry rule (ttl.doc_expired) in its own WHERE clause on the target,
 * so it re-checks the very row version it removes: a ctid match alone
 * re-checks nothing on some PostgreSQL 15 minors.  A plain table takes all
 * TIDs in one TID scan; a partitioned one joins on (tableoid, ctid), since
 * a ctid alone names a row only within one partition.
 */
static char *
purge_statement(const char *table, const char *doc, PurgeKind kind, bool partitioned)
{
	const char *key;
	const char *filter;
	const char *delete;

	if (kind == PURGE_INHERITED)
	{
		key = psprintf("ttl.doc_ts(t.%s)", doc);
		filter = psprintf("ttl.doc_ttl(t.%s) IS NULL AND ", doc);
	}
	else
	{
		key = psprintf("ttl.doc_expiry(t.%s)", doc);
		filter = "";
	}
	if (partitioned)
		delete = psprintf("DELETE FROM %s t USING c"
						  " WHERE t.tableoid OPERATOR(pg_catalog.=) c.toid"
						  " AND t.ctid OPERATOR(pg_catalog.=) c.tid"
						  " AND ttl.doc_expired(t.%s, $4, $5) RETURNING 1",
						  table, doc);
	else
		delete = psprintf("DELETE FROM %s t"
						  " WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT tid FROM c))"
						  " AND ttl.doc_expired(t.%s, $4, $5) RETURNING 1",
						  table, doc);
	return psprintf("WITH c AS MATERIALIZED ("
					" SELECT t.tableoid AS toid, t.ctid AS tid, %s AS k FROM %s t"
					" WHERE %s%s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<=) $2"
					" ORDER BY %s LIMIT $3 FOR UPDATE OF t SKIP LOCKED),"
					" d AS (%s)"
					" SELECT (SELECT pg_catalog.count(*) FROM c),"
					" (SELECT pg_catalog.count(*) FROM d),"
					" (SELECT pg_catalog.max(k) FROM c)",
					key, table, filter, key, key, key, delete);
}

/*
 * The DELETE must visit only the locked rows, by TID: a hash or merge join
 * would rescan the whole due key range once per batch.
 */
static void
set_purge_plan_options(void)
{
	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * ttl._purge_plan_options(): apply the planner settings purge uses, for the
 * rest of the transaction (tests EXPLAIN the statement under them).
 */
PG_FUNCTION_INFO_V1(ttl_purge_plan_options);
Datum
ttl_purge_plan_options(PG_FUNCTION_ARGS)
{
	set_purge_plan_options();
	PG_RETURN_VOID();
}

/* ttl._purge_statement(container, own): the batch statement, for tests. */
PG_FUNCTION_INFO_V1(ttl_purge_statement);
Datum
ttl_purge_statement(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TtlContainer c;
	char	   *table;

	if (!ttl_lookup_container(relid, &c))
		PG_RETURN_NULL();
	table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									   get_rel_name(relid));
	PG_RETURN_TEXT_P(cstring_to_text(purge_statement(table,
													 quote_identifier(NameStr(c.doc_column)),
													 PG_GETARG_BOOL(1) ? PURGE_OWN : PURGE_INHERITED,
													 get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)));
}

static int64
spi_int64(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
								  col, isnull);

	return *isnull ? 0 : DatumGetInt64(d);
}

/*
 * RowExclusiveLock on the table and, for a partitioned table, on every
 * partition, without waiting: a table or partition locked by DDL is skipped
 * for this round rather than queued behind (and queueing others behind us).
 */
static bool
try_lock_table_tree(Oid relid)
{
	List	   *children;
	ListCell   *lc;

	if (!ConditionalLockRelationOid(relid, RowExclusiveLock))
		return false;
	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return true;
	children = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, children)
	{
		if (lfirst_oid(lc) != relid &&
			!ConditionalLockRelationOid(lfirst_oid(lc), RowExclusiveLock))
			return false;
	}
	return true;
}

/*
 * One batch of one container in the current transaction, as the current
 * user (the caller switches to the owner), of at most limit rows (< 0: no
 * limit).  Returns rows deleted; advances the cursor, setting kind =
 * PURGE_DONE when nothing is left, or busy.
 */
static int64
purge_batch(PurgeCursor *cur, int64 limit)
{
	char	   *relname;
	char	   *nspname;
	char	   *table;
	const char *doc;
	char	   *sql;
	Oid			argtypes[5] = {INT8OID, INT8OID, INT8OID, INT4OID, INT8OID};
	Datum		values[5];
	bool		isnull;
	TtlContainer policy;
	int64		default_ttl;
	int64		found;
	int64		deleted;
	Oid			last_leaf;
	int64		last_key;
	int64		cutoff;
	int			guc_level;
	bool		partitioned;
	char	   *doc_name;
	const char *obstacle;
	TtlDirectBatch direct;
	bool		want[2];
	bool		walking;
	bool		exhausted = false;

	if (!ttl_try_lock_container(cur->relid) || !try_lock_table_tree(cur->relid))
	{
		cur->busy = true;
		cur->kind = PURGE_DONE;
		return 0;
	}
	/* looked up under the lock: a concurrent DROP has finished by now */
	relname = get_rel_name(cur->relid);
	if (relname == NULL)
	{
		cur->kind = PURGE_DONE;
		return 0;
	}

	/*
	 * The policy, read under the lock a policy change also takes, as
	 * committed now (not as the caller's snapshot saw it): a default set to
	 * NULL after a REPEATABLE READ caller's snapshot deletes nothing.
	 */
	if (!ttl_read_container(cur->relid, &policy) ||
		(cur->honour_pause && policy.paused))
	{
		cur->kind = PURGE_DONE;	/* disabled or paused meanwhile */
		return 0;
	}
	if (policy.default_is_null)
	{
		cur->kind = PURGE_DONE;	/* TTL off: nothing expires */
		return 0;
	}
	default_ttl = policy.default_ttl;
	doc_name = pstrdup(NameStr(policy.doc_column));
	doc = quote_identifier(doc_name);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (cur->kind == PURGE_INHERITED && default_ttl <= 0)
	{
		cur->kind = PURGE_OWN;	/* -1: only items with their own ttl */
		cur->leaf = InvalidOid;
		cur->lower_key = PG_INT64_MIN;
	}

	cutoff = (cur->kind == PURGE_INHERITED) ?
		cur->now_seconds - default_ttl : cur->now_seconds;
	partitioned = get_rel_relkind(cur->relid) == RELKIND_PARTITIONED_TABLE;
	/*
	 * A walk (no limit, or the procedure's batches) takes both kinds in
	 * one pass over the table; else one keyset walk of one index.
	 */
	walking = cur->use_walk || limit < 0;
	want[0] = cur->kind == PURGE_INHERITED;
	want[1] = cur->kind == PURGE_OWN || walking;
	obstacle = ttl_purge_direct(cur->relid, doc_name, want, cur->leaf, cur->lower_key,
								limit, cur->use_walk ? &cur->walk : NULL,
								cur->walk_cxt,
								(int32) default_ttl, cur->now_seconds, &direct);
	if (obstacle == NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("ttl purge of \"%s\": direct delete", relname)));
		found = direct.found;
		deleted = direct.deleted;
		last_leaf = direct.last_leaf;
		last_key = direct.last_key;
		if (walking)
		{
			exhausted = direct.range_done;
			if (exhausted)
				cur->kind = PURGE_OWN;	/* both kinds done: the next step ends */
		}
	}
	else
	{
		ereport(DEBUG1,
				(errmsg_internal("ttl purge of \"%s\" runs a DELETE statement: %s",
								 relname, obstacle)));
		walking = false;
		ttl_free_walk(cur->walk);
		cur->walk = NULL;
		nspname = get_namespace_name(get_rel_namespace(cur->relid));
		table = quote_qualified_identifier(nspname, relname);
		sql = purge_statement(table, doc, cur->kind, partitioned);
		values[0] = Int64GetDatum(cur->lower_key);
		values[1] = Int64GetDatum(cutoff);
		values[2] = Int64GetDatum(limit);
		values[3] = Int32GetDatum((int32) default_ttl);
		values[4] = Int64GetDatum(cur->now_seconds);
		guc_level = NewGUCNestLevel();
		set_purge_plan_options();
		if (SPI_execute_with_args(sql, 5, argtypes, values, limit < 0 ? "  n  " : NULL,
								  false, 0) != SPI_OK_SELECT)
			elog(ERROR, "purge statement failed on %s", table);
		AtEOXact_GUC(true, guc_level);
		found = spi_int64(0, 1, &isnull);
		deleted = spi_int64(0, 2, &isnull);
		last_leaf = InvalidOid;
		last_key = spi_int64(0, 3, &isnull);
	}
	SPI_finish();

	/*
	 * The key range is done when a batch comes back short.  A full batch
	 * that deleted nothing and did not move the key would find the same rows
	 * again: the range is done for this walk too.
	 */
	if (!walking)
		exhausted = limit < 0 || found < limit ||
			(deleted == 0 && last_leaf == cur->leaf && last_key == cur->lower_key);

	if (exhausted)
	{
		/* this key range is exhausted: next index, or done */
		cur->kind = (cur->kind == PURGE_INHERITED) ? PURGE_OWN : PURGE_DONE;
		cur->leaf = InvalidOid;
		cur->lower_key = PG_INT64_MIN;
	}
	else
	{
		cur->leaf = last_leaf;
		cur->lower_key = last_key;
	}
	cur->deleted += deleted;
	return deleted;
}

/* Add a purge's outcome to ttl.purge_stats (as the extension's owner). */
void
ttl_record_purge(Oid relid, int64 deleted, const char *error)
{
	Oid			argtypes[3] = {OIDOID, INT8OID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	static SPIPlanPtr plan = NULL;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int64GetDatum(deleted);
	values[2] = error ? CStringGetTextDatum(error) : (Datum) 0;
	if (error == NULL)
		nulls[2] = 'n';
	ttl_registry_execute(
		"INSERT INTO ttl.purge_stats AS s"
		" (relid, rows_purged, last_purge_at, last_error, last_error_at)"
		" SELECT $1, $2, CASE WHEN $3 IS NULL THEN ttl.now() END, $3,"
		"  CASE WHEN $3 IS NOT NULL THEN ttl.now() END"
		" WHERE EXISTS (SELECT FROM ttl.registry WHERE relid OPERATOR(pg_catalog.=) $1)"
		" ON CONFLICT (relid) DO UPDATE SET"
		"  rows_purged = s.rows_purged OPERATOR(pg_catalog.+) $2,"
		"  last_purge_at = CASE WHEN $3 IS NULL THEN ttl.now() ELSE s.last_purge_at END,"
		"  last_error = $3,"
		"  last_error_at = CASE WHEN $3 IS NULL THEN s.last_error_at ELSE ttl.now() END",
		3, argtypes, values, nulls, &plan);
}

/*
 * Deferred triggers of a purge fire before it ends, as the owner.
 *
 * A DELETE run inside a security-restricted operation may not leave
 * deferred trigger events behind (afterTriggerMarkEvents in
 * commands/trigger.c raises "cannot fire deferred trigger within
 * security-restricted operation"), and they must not fire later at the
 * caller's commit, as the caller.  SET CONSTRAINTS ALL IMMEDIATE would fire
 * them, but also every deferred event the caller's transaction has queued
 * (as the owner) and it would change the caller's constraint mode for the
 * rest of the transaction.  Instead, while a purge runs, every statement
 * it starts (the batch DELETE, and what its triggers and cascading foreign
 * keys run) treats its own triggers as not deferrable: after-trigger events
 * are marked deferrable from the ResultRelInfo's copy of the trigger
 * descriptor (AfterTriggerSaveEvent), which belongs to that one executor
 * run.  Their events then fire at the end of that statement, still inside
 * the purge; the caller's queued events and SET CONSTRAINTS state are not
 * touched.
 */
static ExecutorStart_hook_type prev_executor_start = NULL;
static int	purge_nesting = 0;

static void
purge_executor_start(QueryDesc *queryDesc, int eflags)
{
	ListCell   *lc;

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (purge_nesting == 0 || queryDesc->estate == NULL)
		return;
	foreach(lc, queryDesc->estate->es_opened_result_relations)
	{
		ResultRelInfo *rri = (ResultRelInfo *) lfirst(lc);
		TriggerDesc *trigdesc = rri->ri_TrigDesc;
		int			i;

		if (trigdesc == NULL)
			continue;
		for (i = 0; i < trigdesc->numtriggers; i++)
		{
			trigdesc->triggers[i].tgdeferrable = false;
			trigdesc->triggers[i].tginitdeferred = false;
		}
	}
}

void
ttl_install_purge_hooks(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = purge_executor_start;
}

/* purge_batch() with its deferred triggers made immediate (see above). */
static int64
purge_batch_immediate(PurgeCursor *cur, int64 limit)
{
	int64		deleted = 0;

	purge_nesting++;
	PG_TRY();
	{
		deleted = purge_batch(cur, limit);
	}
	PG_FINALLY();
	{
		purge_nesting--;
	}
	PG_END_TRY();
	return deleted;
}

/*
 * Purge one container in the caller's transaction, as its owner, until
 * nothing is due or max_rows (< 0: no limit) are gone.
 */
int64
ttl_purge_container(Oid relid, int64 max_rows, bool *skipped)
{
	PurgeCursor cur;
	TtlUserContext ctx;
	Oid			owner = ttl_table_owner(relid);

	cursor_init(&cur, relid, owner, ttl_current_unix_seconds(), false, false);
	ttl_become_user(owner, &ctx);

	/*
	 * One statement per purge index, not batches: within one transaction a
	 * later batch would walk again over the entries of rows an earlier one
	 * deleted (not yet dead to anyone else), which is quadratic when many
	 * rows share a key.  Batching pays off only with a commit in between
	 * (ttl_purge_round).
	 */
	while (cur.kind != PURGE_DONE && (max_rows < 0 || cur.deleted < max_rows))
	{
		(void) purge_batch_immediate(&cur, max_rows < 0 ? -1 : max_rows - cur.deleted);
		CHECK_FOR_INTERRUPTS();
	}
	ttl_restore_user(&ctx);
	*skipped = cur.busy;
	if (!cur.busy)
		ttl_record_purge(relid, cur.deleted, NULL);
	return cur.deleted;
}

/*
 * The cost budget: PostgreSQL's page accounting, as autovacuum uses it.
 * The variables are the session's own (VacuumCostLimit and VacuumCostDelay
 * are vacuum_cost_limit and vacuum_cost_delay): a round saves them and
 * cost_end() puts them back, also on error, so the session's own VACUUM
 * is not throttled by ttl's budget afterwards.
 */
typedef struct CostState
{
	bool		active;
	int			limit;
	double		delay;
	int			balance;
} CostState;

static void
cost_begin(CostState *saved)
{
	saved->active = VacuumCostActive;
	saved->limit = VacuumCostLimit;
	saved->delay = VacuumCostDelay;
	saved->balance = VacuumCostBalance;
	VacuumCostActive = (ttl_cost_limit > 0 && ttl_cost_delay > 0);
	VacuumCostLimit = Max(ttl_cost_limit, 1);
	VacuumCostDelay = ttl_cost_delay;
	VacuumCostBalance = 0;
}

static void
cost_end(CostState *saved)
{
	VacuumCostActive = saved->active;
	VacuumCostLimit = saved->limit;
	VacuumCostDelay = saved->delay;
	VacuumCostBalance = saved->balance;
}

/*
 * Sleep for what the last batch cost, outside any transaction.  Like
 * vacuum_delay_point(), but not capped at 4 x cost_delay: it runs once per
 * batch rather than once per page, so the whole balance must be paid.
 */
void
ttl_cost_sleep(void)
{
	double		msec;

	if (!VacuumCostActive || VacuumCostBalance < VacuumCostLimit)
		return;
	msec = VacuumCostDelay * VacuumCostBalance / VacuumCostLimit;
	VacuumCostBalance = 0;
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) Max(msec, 1), PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Where a bounded round left each unfinished container, so the next round
 * resumes its keyset walk instead of starting again at the lowest key.
 * Resuming is safe: below the saved key, every row was expired at the old
 * clock and is either gone or was skipped (locked); a skipped row is found
 * again when the walk completes and the next walk starts from the bottom.
 */
typedef struct ResumePoint
{
	Oid			relid;
	PurgeKind	kind;
	Oid			leaf;
	int64		lower_key;
	int64		deleted;
} ResumePoint;

HTAB *
ttl_create_resume_map(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(ResumePoint);
	return hash_create("ttl purge resume points", 64, &ctl, HASH_ELEM | HASH_BLOBS);
}

static void
resume_cursor(HTAB *resume, PurgeCursor *cur)
{
	ResumePoint *point;

	if (resume == NULL)
		return;
	point = hash_search(resume, &cur->relid, HASH_FIND, NULL);
	if (point == NULL)
		return;
	cur->kind = point->kind;
	cur->leaf = point->leaf;
	cur->lower_key = point->lower_key;
	cur->deleted = point->deleted;
}

static void
save_resume_points(HTAB *resume, PurgeCursor *cursors, int ncursors)
{
	HASH_SEQ_STATUS status;
	ResumePoint *point;
	int			i;

	if (resume == NULL)
		return;
	hash_seq_init(&status, resume);
	while ((point = hash_seq_search(&status)) != NULL)
		hash_search(resume, &point->relid, HASH_REMOVE, NULL);
	for (i = 0; i < ncursors; i++)
	{
		if (cursors[i].kind == PURGE_DONE)
			continue;
		point = hash_search(resume, &cursors[i].relid, HASH_ENTER, NULL);
		point->kind = cursors[i].kind;
		point->leaf = cursors[i].leaf;
		point->lower_key = cursors[i].lower_key;
		point->deleted = cursors[i].deleted;
	}
}

/*
 * The due containers of the database (all, or the current user's), in
 * relid order, in the caller's memory context.  Read in C, no SQL: this
 * runs as the worker's superuser or as a superuser calling ttl.purge().
 */
static List *
list_due_containers(bool all_owners)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, ttl_list_containers(true))
	{
		Oid			relid = lfirst_oid(lc);

		if (all_owners || pg_class_ownercheck(relid, GetUserId()))
			result = lappend_oid(result, relid);
	}
	return result;
}

static char *
activity_text(PurgeCursor *cur)
{
	char	   *name = get_rel_name(cur->relid);

	return psprintf("ttl purge of %s: %lld rows deleted",
					name ? name : "?", (long long) cur->deleted);
}

/*
 * Run fn(arg) in a subtransaction.  NULL when it succeeded; otherwise the
 * subtransaction is rolled back and the error, copied into err_cxt, is
 * returned instead of thrown, so one container's failure stays its own.
 */
static ErrorData *
run_in_subtransaction(void (*fn) (void *arg), void *arg, MemoryContext err_cxt)
{
	ResourceOwner oldowner = CurrentResourceOwner;
	MemoryContext oldcxt = CurrentMemoryContext;
	ErrorData  *edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(err_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return edata;
}

/*
 * The time bound of one batch of a round (ttl.batch_timeout).  Nothing
 * starts the statement timer for SPI in a background worker, and a CALL's
 * timer covers the whole procedure, so a batch arms STATEMENT_TIMEOUT
 * itself: its expiry cancels the batch like a statement timeout.  A
 * session's own statement_timeout that would end sooner is left alone;
 * one that would end later is re-armed when the batch is over.
 */
typedef struct BatchTimer
{
	bool		armed;
	TimestampTz deadline;		/* 0: no bound */
	bool		restore_session;
	TimestampTz session_fin;
} BatchTimer;

static BatchTimer batch_timer;

static void
batch_timer_arm(void)
{
	memset(&batch_timer, 0, sizeof(batch_timer));
	if (ttl_batch_timeout <= 0)
		return;
	batch_timer.deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   ttl_batch_timeout);
	if (get_timeout_active(STATEMENT_TIMEOUT))
	{
		TimestampTz fin = get_timeout_finish_time(STATEMENT_TIMEOUT);

		if (fin <= batch_timer.deadline)
		{
			batch_timer.deadline = 0;	/* the session's own comes first */
			return;
		}
		batch_timer.restore_session = true;
		batch_timer.session_fin = fin;
	}
	enable_timeout_at(STATEMENT_TIMEOUT, batch_timer.deadline);
	batch_timer.armed = true;
}

static void
batch_timer_disarm(void)
{
	if (!batch_timer.armed)
		return;
	batch_timer.armed = false;
	if (batch_timer.restore_session)
		enable_timeout_at(STATEMENT_TIMEOUT, batch_timer.session_fin);
	else
		disable_timeout(STATEMENT_TIMEOUT, false);
}

/* Whether a batch's error is its time bound running out. */
static bool
batch_timed_out(ErrorData *edata)
{
	return edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		batch_timer.deadline != 0 &&
		GetCurrentTimestamp() >= batch_timer.deadline;
}

/* One batch of one container as its owner; see round_batch(). */
static void
owner_batch(void *arg)
{
	PurgeCursor *cur = (PurgeCursor *) arg;
	TtlUserContext ctx;
	int64		deleted;

	ttl_become_user(cur->owner, &ctx);
	/* a lock we could not foresee fails the batch rather than queueing it */
	(void) set_config_option("lock_timeout", "1s", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	/*
	 * Deferred constraint triggers fire now, as the owner, not at commit:
	 * this transaction is the batch's own, so nothing of anyone else's is
	 * pending (purge_batch_immediate covers the rest).
	 */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	SPI_execute("SET CONSTRAINTS ALL IMMEDIATE", false, 0);
	SPI_finish();
	batch_timer_arm();
	deleted = purge_batch_immediate(cur, ttl_batch_size);
	batch_timer_disarm();
	/* a timeout that fired just now is this batch's, not the round's */
	CHECK_FOR_INTERRUPTS();
	ttl_restore_user(&ctx);
	if (deleted > 0)
		ttl_record_purge(cur->relid, deleted, NULL);
}

typedef struct FailedBatch
{
	Oid			relid;
	const char *message;
} FailedBatch;

static void
record_failure(void *arg)
{
	FailedBatch *failed = (FailedBatch *) arg;

	ttl_record_purge(failed->relid, 0, failed->message);
}

/*
 * One batch of one container in a subtransaction, as its owner.  A failure
 * is logged and recorded for that container and ends its round; it never
 * escapes (a failure to record it is only logged).
 */
static void
round_batch(PurgeCursor *cur, MemoryContext round_cxt)
{
	ErrorData  *edata = run_in_subtransaction(owner_batch, cur, round_cxt);
	ErrorData  *record_error;
	FailedBatch failed;
	char	   *name;
	char	   *message;

	batch_timer_disarm();		/* the batch failed with it armed */
	if (edata == NULL)
		return;
	/*
	 * A cancel that is not the batch's own bound (pg_cancel_backend, the
	 * session's statement_timeout) ends a CALL ttl.run_purge(), like any
	 * statement.  The worker skips the container instead: nobody waits for
	 * it to end.
	 */
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !batch_timed_out(edata) &&
		!IsBackgroundWorker)
		ReThrowError(edata);
	cur->kind = PURGE_DONE;
	name = get_rel_name(cur->relid);
	message = edata->message;
	if (batch_timed_out(edata))
		message = psprintf("batch cancelled after ttl.batch_timeout (%d ms)",
						   ttl_batch_timeout);
	ereport(WARNING,
			(errmsg("ttl purge of \"%s\" failed: %s", name ? name : "?", message),
			 errdetail("The container is skipped until the next round.")));
	failed.relid = cur->relid;
	failed.message = message;
	record_error = run_in_subtransaction(record_failure, &failed, round_cxt);
	if (record_error != NULL)
		ereport(LOG,
				(errmsg("could not record ttl purge error: %s", record_error->message)));
}

/*
 * A round: every due container, one batch each in turn, committing after
 * every batch.  Must start inside a transaction, which it may end.
 */
int64
ttl_purge_round(TtlRoundOps *ops)
{
	MemoryContext round_cxt;
	MemoryContext caller_cxt;
	List	   *relids;
	PurgeCursor *cursors;
	int			ncursors;
	int			active;
	int64		total = 0;
	int64		now_seconds = ttl_current_unix_seconds();
	TimestampTz started = GetCurrentTimestamp();
	CostState	cost_saved;
	volatile bool cost_started = false;
	bool		first_pass = true;
	ListCell   *lc;
	int			i;

	ops->unfinished = false;
	round_cxt = AllocSetContextCreate(TopMemoryContext, "ttl purge round",
									  ALLOCSET_DEFAULT_SIZES);
	caller_cxt = CurrentMemoryContext;
	PG_TRY();
	{
		MemoryContextSwitchTo(round_cxt);
		relids = list_due_containers(ops->all_owners);
		ncursors = list_length(relids);
		cursors = palloc0(sizeof(PurgeCursor) * Max(ncursors, 1));
		i = 0;
		foreach(lc, relids)
		{
			Oid			relid = lfirst_oid(lc);

			cursor_init(&cursors[i], relid, ttl_table_owner(relid), now_seconds, true,
						ops->walks);
			resume_cursor(ops->resume, &cursors[i]);
			i++;
		}
		MemoryContextSwitchTo(caller_cxt);

		cost_begin(&cost_saved);
		cost_started = true;
		active = ncursors;
		while (active > 0)
		{
			active = 0;
			for (i = 0; i < ncursors; i++)
			{
				PurgeCursor *cur = &cursors[i];
				int64		before = cur->deleted;

				if (cur->kind == PURGE_DONE)
					continue;
				/*
				 * A bounded round ends with work left; the next one starts
				 * at once, with a fresh clock, list of containers and pauses.
				 * Not before every container has had its first batch: a
				 * slow one (up to ttl.batch_timeout) early in the list must
				 * not end every round before the others get their turn.
				 */
				if (!first_pass && ops->max_round_ms > 0 &&
					TimestampDifferenceExceeds(started, GetCurrentTimestamp(),
											   ops->max_round_ms))
				{
					ops->unfinished = true;
					active = 0;
					break;
				}
				if (!ops->next_transaction(ops->arg))
				{
					active = 0;
					break;
				}
				if (ops->report)
					ops->report(ops->arg, activity_text(cur));
				round_batch(cur, round_cxt);
				total += cur->deleted - before;
				if (cur->kind != PURGE_DONE)
					active++;
			}
			first_pass = false;
		}
		save_resume_points(ops->resume, cursors, ops->unfinished ? ncursors : 0);
	}
	PG_FINALLY();
	{
		if (cost_started)
			cost_end(&cost_saved);
		if (CurrentMemoryContext == round_cxt)
			MemoryContextSwitchTo(caller_cxt);
		MemoryContextDelete(round_cxt);
	}
	PG_END_TRY();
	return total;
}

/* ttl.purge(container, max_rows): purge now, in the caller's transaction. */
PG_FUNCTION_INFO_V1(ttl_purge);
Datum
ttl_purge(PG_FUNCTION_ARGS)
{
	int64		max_rows = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	int64		total = 0;
	bool		skipped;
	List	   *relids;
	ListCell   *lc;

	if (!PG_ARGISNULL(1) && max_rows < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must not be negative: %lld", (long long) max_rows)));
	/* before anything is deleted: the direct path bypasses the executor's check */
	PreventCommandIfReadOnly("ttl.purge()");

	if (!PG_ARGISNULL(0))
	{
		Oid			relid = PG_GETARG_OID(0);
		TtlContainer c;

		ttl_check_container_owner(relid);
		ttl_get_container(relid, &c);
		relids = list_make1_oid(relid);
	}
	else
		relids = list_due_containers(false);

	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);

		if (max_rows >= 0 && total >= max_rows)
			break;
		total += ttl_purge_container(relid, max_rows < 0 ? -1 : max_rows - total,
									 &skipped);
		if (skipped)
			ereport(NOTICE,
					(errmsg("container \"%s\" skipped: locked by another purge, a policy change or DDL",
							get_rel_name(relid))));
	}
	PG_RETURN_INT64(total);
}

static bool
procedure_next_transaction(void *arg)
{
	SPI_commit();
	/* before the new transaction's first snapshot: see the file header */
	XactIsoLevel = XACT_READ_COMMITTED;
	XactReadOnly = false;
	ttl_cost_sleep();
	return ttl_enabled;
}

/*
 * CALL ttl.run_purge(): one round over the caller's containers (all, for a
 * superuser), committing after each batch and sleeping per the budget
 * between transactions.  For pg_cron and manual maintenance.
 */
PG_FUNCTION_INFO_V1(ttl_run_purge);
Datum
ttl_run_purge(PG_FUNCTION_ARGS)
{
	TtlRoundOps ops = {0};
	int64		total;
	bool		atomic = fcinfo->context && IsA(fcinfo->context, CallContext) &&
		((CallContext *) fcinfo->context)->atomic;

	if (atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("ttl.run_purge() cannot run inside a transaction block"),
				 errhint("CALL it on its own, or use SELECT ttl.purge() inside a transaction.")));
	if (!ttl_enabled)
	{
		ereport(NOTICE, (errmsg("ttl.enabled is off: nothing purged")));
		PG_RETURN_VOID();
	}
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ops.next_transaction = procedure_next_transaction;
	ops.all_owners = superuser();
	ops.walks = true;
	total = ttl_purge_round(&ops);
	SPI_finish();
	ereport(DEBUG1, (errmsg("ttl.run_purge deleted %lld rows", (long long) total)));
	PG_RETURN_VOID();
}
