/*
 * purge_batch.c
 *		One purge batch of one container: the index-driven statement, the
 *		locks it takes first, the executor hook that fires its deferred
 *		triggers before it ends, and the purge of one container in the
 *		caller's transaction (ttl.purge()).
 *
 * Locking: a batch runs in its own (sub)transaction as the table's owner,
 * inside a security-restricted operation with search_path pg_catalog,
 * pg_temp.  It first takes the container's purge lock without waiting
 * (another purger, or a policy change, means "skip"; the lock is the
 * extension's own, see registry.c), then RowExclusiveLock on the table and
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
 * listed and read in C (registry.c); every statement names its operators
 * and functions schema-qualified.  Deferred triggers queued by a purge fire
 * before it returns, as the owner (purge_executor_start), never at the
 * caller's commit.  A batch of the worker or ttl.run_purge() is bounded by
 * ttl.batch_timeout.  With ttl.mark_purge_deletes on, a batch that deleted
 * rows says so in the change stream (mark.c).
 */
#include "postgres.h"

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
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "citus_meta.h"
#include "deadline.h"
#include "mark.h"
#include "purge.h"
#include "purge_internal.h"
#include "purge_key.h"
#include "registry.h"
#include "run_as.h"
#include "settings.h"
#include "stats.h"

void
ttl_cursor_init(PurgeCursor *cur, Oid relid, Oid owner, int64 now_seconds,
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
 * keyed: through the single purge index of 1.3, whose keys $1 and $2 are
 * (purge_key.c); else through the partial index of the kind (1.0-1.2).
 * It locks a batch in key order through the purge index, skipping rows
 * others hold, then deletes exactly those rows by TID.  The DELETE repeats
 * the expiry rule (ttl.doc_expired) in its own WHERE clause on the target,
 * so it re-checks the very row version it removes: a ctid match alone
 * re-checks nothing on some PostgreSQL 15 minors.  A plain table takes all
 * TIDs in one TID scan; a partitioned one joins on (tableoid, ctid), since
 * a ctid alone names a row only within one partition.
 */
char *
ttl_batch_statement(const char *table, const char *doc, PurgeKind kind, bool partitioned,
					bool keyed, const char *deadline)
{
	const char *key;
	const char *filter;
	const char *delete;
	const char *recheck;

	/* rule 9: the re-check of a container with a deadline property */
	recheck = deadline == NULL ? psprintf("ttl.doc_expired(t.%s, $4, $5)", doc) :
		psprintf("ttl.doc_expired(t.%s, $4, $5, %s::pg_catalog.text)", doc,
				 quote_literal_cstr(deadline));
	if (kind == PURGE_DEADLINE)
	{
		/* the deadline index's expression, exactly (with its constant) */
		key = psprintf("ttl.doc_deadline_key(t.%s, %s::pg_catalog.text)", doc,
					   quote_literal_cstr(deadline));
		filter = "";
	}
	else if (keyed)
	{
		/* $1 and $2 are keys of the kind's range (purge_key.c) */
		key = psprintf("ttl.doc_purge_key(t.%s)", doc);
		filter = "";
	}
	else if (kind == PURGE_INHERITED)
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
						  " AND %s RETURNING 1",
						  table, recheck);
	else
		delete = psprintf("DELETE FROM %s t"
						  " WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT tid FROM c))"
						  " AND %s RETURNING 1",
						  table, recheck);
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
void
ttl_set_purge_plan_options(void)
{
	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
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
 * Take a batch's locks without waiting and read the container's policy
 * under them.  False, with the cursor busy or done, when there is nothing
 * to purge now.
 */
static bool
begin_batch(PurgeCursor *cur, char **relname, TtlContainer *policy)
{
	if (!ttl_try_lock_container(cur->relid) || !try_lock_table_tree(cur->relid))
	{
		cur->busy = true;
		cur->kind = PURGE_DONE;
		return false;
	}
	/* looked up under the lock: a concurrent DROP has finished by now */
	*relname = get_rel_name(cur->relid);
	if (*relname == NULL)
	{
		cur->kind = PURGE_DONE;
		return false;
	}

	/*
	 * The policy, read under the lock a policy change also takes, as
	 * committed now (not as the caller's snapshot saw it): a default set to
	 * NULL after a REPEATABLE READ caller's snapshot deletes nothing.
	 */
	if (!(ttl_read_container(cur->relid, policy) ||
		  ttl_trigger_policy_if_citus(cur->relid, policy)) ||	/* a shard: citus_meta.c */
		(cur->honour_pause && policy->paused))
	{
		cur->kind = PURGE_DONE;	/* disabled or paused meanwhile */
		return false;
	}
	if (policy->default_is_null)
	{
		cur->kind = PURGE_DONE;	/* TTL off: nothing expires */
		return false;
	}
	return true;
}

/*
 * The statement path of a batch: the batch statement (ttl_batch_statement)
 * under purge's planner settings, its counts and last key into *out.  Needs
 * SPI connected.
 */
static void
statement_batch(PurgeCursor *cur, const char *relname, const char *doc_name,
				int64 limit, int64 cutoff, int32 default_ttl, const char *deadline,
				TtlDirectBatch *out)
{
	Oid			argtypes[5] = {INT8OID, INT8OID, INT8OID, INT4OID, INT8OID};
	Datum		values[5];
	bool		isnull;
	bool		partitioned = get_rel_relkind(cur->relid) == RELKIND_PARTITIONED_TABLE;
	bool		keyed = cur->kind != PURGE_DEADLINE &&
		ttl_has_purge_key_index(cur->relid, doc_name);
	int			kind = cur->kind == PURGE_OWN ? TTL_KEY_OWN : TTL_KEY_INHERITED;
	int64		lower = cur->lower_key;
	char	   *table;
	char	   *sql;
	int			guc_level;

	table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(cur->relid)),
									   relname);
	sql = ttl_batch_statement(table, quote_identifier(doc_name), cur->kind, partitioned, keyed,
							  deadline);
	/* deadlines: above the key of malformed ones (deadline.h) */
	if (cur->kind == PURGE_DEADLINE)
		lower = Max(lower, TTL_DEADLINE_MALFORMED_KEY + 1);
	values[0] = Int64GetDatum(keyed ? ttl_purge_key_encode(kind, lower) : lower);
	values[1] = Int64GetDatum(keyed ? ttl_purge_key_encode(kind, cutoff) : cutoff);
	values[2] = Int64GetDatum(limit);
	values[3] = Int32GetDatum(default_ttl);
	values[4] = Int64GetDatum(cur->now_seconds);
	guc_level = NewGUCNestLevel();
	ttl_set_purge_plan_options();
	if (SPI_execute_with_args(sql, 5, argtypes, values, limit < 0 ? "  n  " : NULL,
							  false, 0) != SPI_OK_SELECT)
		elog(ERROR, "purge statement failed on %s", table);
	AtEOXact_GUC(true, guc_level);
	out->found = spi_int64(0, 1, &isnull);
	out->deleted = spi_int64(0, 2, &isnull);
	out->last_leaf = InvalidOid;
	out->last_key = spi_int64(0, 3, &isnull);
	if (keyed && !isnull)
		out->last_key = ttl_purge_key_decode(kind, out->last_key);
}

/*
 * Move the cursor past a batch: to where it stopped, or, when its key range
 * is exhausted, to the next index (or done).
 */
static void
advance_cursor(PurgeCursor *cur, bool exhausted, Oid last_leaf, int64 last_key)
{
	if (exhausted)
	{
		/* this key range is exhausted: next index, or done */
		cur->kind = (cur->kind == PURGE_INHERITED) ? PURGE_OWN :
			(cur->kind == PURGE_OWN && cur->has_deadline) ? PURGE_DEADLINE : PURGE_DONE;
		cur->leaf = InvalidOid;
		cur->lower_key = PG_INT64_MIN;
	}
	else
	{
		cur->leaf = last_leaf;
		cur->lower_key = last_key;
	}
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
	TtlContainer policy;
	int64		default_ttl;
	int64		cutoff;
	char	   *doc_name;
	const char *obstacle;
	TtlDirectBatch batch;
	bool		want[TTL_PURGE_KINDS];
	bool		walking;
	const char *deadline;
	bool		exhausted = false;

	if (!begin_batch(cur, &relname, &policy))
		return 0;
	default_ttl = policy.default_ttl;
	doc_name = pstrdup(NameStr(policy.doc_column));
	/* rule 9: a deadline property adds a walk of the deadline index */
	cur->has_deadline = TTL_HAS_DEADLINE(&policy);
	deadline = cur->has_deadline ? pstrdup(policy.deadline_property) : NULL;
	if (cur->kind == PURGE_DEADLINE && !cur->has_deadline)
	{
		cur->kind = PURGE_DONE;	/* removed meanwhile */
		return 0;
	}

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
	/*
	 * A walk (no limit, or the procedure's batches) takes both kinds in
	 * one pass over the table; else one keyset walk of one index.
	 */
	walking = cur->use_walk || limit < 0 || policy.append_only;
	want[0] = cur->kind == PURGE_INHERITED;
	want[1] = cur->kind == PURGE_OWN || walking;
	want[2] = cur->has_deadline && (cur->kind == PURGE_DEADLINE || walking);
	/* append-only: the BRIN index gives page ranges, so batches take a walk */
	obstacle = ttl_purge_direct(cur->relid, doc_name, want, cur->leaf, cur->lower_key,
								limit, (cur->use_walk || policy.append_only) ? &cur->walk : NULL,
								cur->walk_cxt,
								(int32) default_ttl, deadline, cur->now_seconds, &batch);
	if (obstacle == NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("ttl purge of \"%s\": direct delete", relname)));
		if (walking)
		{
			exhausted = batch.range_done;
			if (exhausted)		/* every kind done: the next step ends */
				cur->kind = cur->has_deadline ? PURGE_DEADLINE : PURGE_OWN;
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
		statement_batch(cur, relname, doc_name, limit, cutoff, (int32) default_ttl,
						deadline, &batch);
	}
	SPI_finish();

	/*
	 * The key range is done when a batch comes back short.  A full batch
	 * that deleted nothing and did not move the key would find the same rows
	 * again: the range is done for this walk too.
	 */
	if (!walking)
		exhausted = limit < 0 || batch.found < limit ||
			(batch.deleted == 0 && batch.last_leaf == cur->leaf &&
			 batch.last_key == cur->lower_key);
	advance_cursor(cur, exhausted, batch.last_leaf, batch.last_key);
	cur->deleted += batch.deleted;
	/* in the batch's transaction, after its deletes: see mark.c */
	ttl_mark_batch(cur->relid, batch.deleted);
	return batch.deleted;
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
int64
ttl_purge_batch_immediate(PurgeCursor *cur, int64 limit)
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

	ttl_cursor_init(&cur, relid, owner, ttl_current_unix_seconds(), false, false);
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
		(void) ttl_purge_batch_immediate(&cur, max_rows < 0 ? -1 : max_rows - cur.deleted);
		CHECK_FOR_INTERRUPTS();
	}
	ttl_restore_user(&ctx);
	*skipped = cur.busy;
	if (!cur.busy)
		ttl_record_purge(relid, cur.deleted, NULL);
	return cur.deleted;
}
