/*
 * purge_batch.c
 *		One purge batch of one container: the locks it takes first, the
 *		choice between the direct path and the index-driven statement
 *		(purge_statement.c), the executor hook that fires its deferred
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
 * statement (purge_statement.c) whose own WHERE clause repeats the expiry
 * predicate, so
 * triggers, foreign keys, rules and row security all act.  Either way a
 * row whose _ts was refreshed concurrently is never deleted.
 *
 * Security: no SQL runs with the caller's search_path.  Containers are
 * listed and read in C (registry.c); every statement names its operators
 * and functions schema-qualified.  Deferred triggers queued by a purge fire
 * before it returns, as the owner (ttl_purge_executor_started), never at the
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
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/run_as.h"
#include "base/settings.h"
#include "document/deadline.h"
#include "document/purge_key.h"
#include "insight/purge_failures.h"
#include "insight/stats.h"
#include "purge/archive.h"
#include "purge/mark.h"
#include "purge/progress.h"
#include "purge/purge.h"
#include "purge/purge_internal.h"
#include "registry/policy.h"
#include "registry/registry.h"

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
	cur->kind = TTL_DUE_INHERITED;
	cur->leaf = InvalidOid;
	cur->lower_key = PG_INT64_MIN;
	cur->progress_due = -1;
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
		cur->done = true;
		return false;
	}
	/* looked up under the lock: a concurrent DROP has finished by now */
	*relname = get_rel_name(cur->relid);
	if (*relname == NULL)
	{
		cur->done = true;
		return false;
	}

	/*
	 * The policy, read under the lock a policy change also takes, as
	 * committed now (not as the caller's snapshot saw it): a default set to
	 * NULL after a REPEATABLE READ caller's snapshot deletes nothing.
	 */
	if (!ttl_policy_read(cur->relid, policy) ||	/* a container's, or a piece's */
		(cur->honour_pause && policy->paused))
	{
		cur->done = true;	/* disabled or paused meanwhile */
		return false;
	}
	if (policy->default_is_null)
	{
		cur->done = true;	/* TTL off: nothing expires */
		return false;
	}
	/*
	 * archive: its fit checked again before each batch; an archive locked
	 * by DDL is busy like the container (archive.c)
	 */
	if (OidIsValid(policy->archive) &&
		!ttl_archive_check_fit(cur->relid, policy->archive, true))
	{
		cur->busy = true;
		cur->done = true;
		return false;
	}
	return true;
}

/*
 * ttl.purge_progress (progress.c): cur's container is the one this purge is
 * in now, from when this purge first reached it (a batch, or before any
 * batch the retire step, purge_retire.c).
 */
void
ttl_cursor_show_progress(PurgeCursor *cur)
{
	if (cur->progress_started == 0)
		cur->progress_started = GetCurrentTimestamp();
	ttl_progress_container(cur->relid, cur->progress_started, cur->deleted,
						   cur->progress_due);
}

/*
 * The container this batch is in (above).  The first batch of a worker's or
 * run_purge's pass over it counts its due rows first, under the batch's
 * locks, as its owner, with ttl.stats' walks (a resumed pass keeps its
 * count: the resume point carries it); ttl.purge() counts nothing (the
 * caller's own call costs what it did).
 */
static void
progress_batch_begins(PurgeCursor *cur)
{
	ttl_cursor_show_progress(cur);
	if (cur->count_due && cur->progress_due < 0)
	{
		int64		due;

		cur->count_due = false; /* once, even when it fails */
		if (ttl_progress_due_rows(cur->relid, &due))
		{
			cur->progress_due = due;
			ttl_progress_due(due);
		}
	}
}

/*
 * Move the cursor past a batch: to where it stopped, or, when its key range
 * is exhausted, to the next kind (or done).
 */
static void
advance_cursor(PurgeCursor *cur, bool exhausted, Oid last_leaf, int64 last_key)
{
	if (exhausted)
	{
		/* this key range is exhausted: next kind, or done */
		if (cur->kind == TTL_DUE_INHERITED)
			cur->kind = TTL_DUE_OWN;
		else if (cur->kind == TTL_DUE_OWN && cur->has_deadline)
			cur->kind = TTL_DUE_DEADLINE;
		else
			cur->done = true;
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
 * A leaf the batch left alone because another role owns it (purge_owner.c):
 * kept in the cursor for the container's last_error, with one WARNING per
 * visit (the worker's round, a ttl.purge() call), not one per batch.
 */
static void
note_foreign_leaf(PurgeCursor *cur)
{
	const char *note = ttl_batch_owner_note();

	if (note == NULL || cur->leaf_note != NULL)
		return;
	cur->leaf_note = MemoryContextStrdup(cur->walk_cxt, note);
	ereport(WARNING,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("ttl purge of %s skipped a partition: %s",
					ttl_relation_display_name(cur->relid), note),
			 errdetail("ttl acts on a container only as its owner and never runs another role's code with those rights; the rest of the container is purged."),
			 errhint("Give the partition to the container's owner (ALTER TABLE ... OWNER TO), or detach it.")));
}

/*
 * The plan of the cursor's next batch under policy.  A bitmap walk (no
 * limit, the procedure's batches, or an append-only container, whose BRIN
 * index or none gives pages, not keys in order) takes every kind in one
 * pass over the table; else a keyset walk of the cursor's kind.  The
 * direct deleter unless the table needs the executor (purge_leaves.c says).
 */
static void
plan_batch(PurgeCursor *cur, const TtlContainer *policy, int64 limit, TtlBatchPlan *plan)
{
	bool		bitmap = cur->use_walk || limit < 0 || policy->append_only;

	memset(plan, 0, sizeof(*plan));
	plan->relid = cur->relid;
	plan->policy = policy;
	plan->deadline = cur->has_deadline ? policy->deadline_property : NULL;
	plan->now_seconds = cur->now_seconds;
	plan->kind = cur->kind;
	plan->kinds[TTL_DUE_INHERITED] = cur->kind == TTL_DUE_INHERITED;
	plan->kinds[TTL_DUE_OWN] = cur->kind == TTL_DUE_OWN || bitmap;
	plan->kinds[TTL_DUE_DEADLINE] = cur->has_deadline &&
		(cur->kind == TTL_DUE_DEADLINE || bitmap);
	plan->start_leaf = cur->leaf;
	plan->lower_key = cur->lower_key;
	plan->limit = limit;
	plan->source = bitmap ? TTL_SOURCE_BITMAP : TTL_SOURCE_KEYSET;
	/* the procedure's walk, or an append-only one, lasts across batches */
	plan->walk = (cur->use_walk || policy->append_only) ? &cur->walk : NULL;
	plan->walk_parent = cur->walk_cxt;
	plan->deleter = TTL_DELETER_DIRECT;
}

/* The deleters of one batch, as one step of a subtransaction. */
typedef struct DeleterStep
{
	PurgeCursor *cur;
	TtlBatchPlan *plan;
	const char *relname;
	TtlDirectBatch *batch;
	const char *obstacle;		/* out: why the direct deleter did not apply */
} DeleterStep;

static void
run_deleters(void *arg)
{
	DeleterStep *step = (DeleterStep *) arg;

	/*
	 * archive: either deleter archives (the direct one inserts its copies
	 * in this transaction, archive_rows.c; the statement's INSERT joins its
	 * DELETE, purge_rows.c)
	 */
	step->obstacle = ttl_purge_direct(step->plan, step->batch);
	if (step->obstacle == NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("ttl purge of \"%s\": direct delete", step->relname)));
		return;
	}
	ereport(DEBUG1,
			(errmsg_internal("ttl purge of \"%s\" runs a DELETE statement: %s",
							 step->relname, step->obstacle)));
	/* the statement takes the cursor's kind in key order */
	step->plan->deleter = TTL_DELETER_STATEMENT;
	step->plan->source = TTL_SOURCE_KEYSET;
	ttl_free_walk(step->cur->walk);
	step->cur->walk = NULL;
	ttl_statement_batch(step->plan, step->relname, step->batch);
}

/*
 * One batch of one container in the current transaction, as the current
 * user (the caller switches to the owner), of at most limit rows (< 0: no
 * limit).  Returns rows deleted; advances the cursor, setting it done when
 * nothing is left, or busy.
 *
 * The deleters run in a subtransaction: when they fail on a row (a row's
 * error, not the container's: purge_split.c says which), the batch is
 * split until the failing rows are isolated and recorded, and the rest
 * commits; a container's error fails the batch as before.
 */
static int64
purge_batch(PurgeCursor *cur, int64 limit)
{
	char	   *relname;
	TtlContainer policy;
	TtlBatchPlan plan;
	TtlDirectBatch batch;
	DeleterStep step;
	ErrorData  *failed;
	bool		split = false;
	bool		exhausted = false;

	ttl_batch_owner_reset();
	cur->row_error = NULL;
	memset(&batch, 0, sizeof(batch));
	if (!begin_batch(cur, &relname, &policy))
		return 0;
	progress_batch_begins(cur);
	/* rule 9: a deadline property adds a walk of the deadline index */
	cur->has_deadline = TTL_HAS_DEADLINE(&policy);
	if (cur->kind == TTL_DUE_DEADLINE && !cur->has_deadline)
	{
		cur->done = true;		/* removed meanwhile */
		return 0;
	}

	ttl_spi_connect();
	if (cur->kind == TTL_DUE_INHERITED && policy.default_ttl <= 0)
	{
		cur->kind = TTL_DUE_OWN;	/* -1: only items with their own ttl */
		cur->leaf = InvalidOid;
		cur->lower_key = PG_INT64_MIN;
	}
	/* legal hold: the holds and the floor, read under the batch's lock */
	ttl_purge_hold_begin(cur->relid, cur->kind, cur->lower_key);
	/* the rows whose purge failed, left out until their retry_after */
	ttl_failures_begin(cur->relid, cur->now_seconds);
	plan_batch(cur, &policy, limit, &plan);
	step.cur = cur;
	step.plan = &plan;
	step.relname = relname;
	step.batch = &batch;
	step.obstacle = NULL;
	failed = ttl_split_try(run_deleters, &step);
	if (failed != NULL)
	{
		if (!ttl_split_row_error(failed))
			ReThrowError(failed);
		/*
		 * A row's failure: the batch's rows again, in key order of the
		 * cursor's kind, split until the failing ones are isolated.  A
		 * walk starts afresh (the failed try moved it), and the legal hold
		 * floor is read again (the failed try's moves are void).
		 */
		split = true;
		ttl_free_walk(cur->walk);
		cur->walk = NULL;
		ttl_purge_hold_begin(cur->relid, cur->kind, cur->lower_key);
		plan.deleter = TTL_DELETER_STATEMENT;
		plan.source = TTL_SOURCE_KEYSET;
		/* the failed try's rows are back: none was skipped either */
		batch.skipped_locked = batch.skipped_held = batch.skipped_quarantined = 0;
		ttl_split_batch(&plan, relname, failed, &batch);
		/* SPI's memory goes at SPI_finish: the transaction's lasts for the record */
		if (batch.row_error != NULL)
			cur->row_error = MemoryContextStrdup(TopTransactionContext, batch.row_error);
		FreeErrorData(failed);
	}
	else if (step.obstacle == NULL && plan.source == TTL_SOURCE_BITMAP)
	{
		exhausted = batch.range_done;
		if (exhausted)			/* every kind done: the next step ends */
			cur->kind = cur->has_deadline ? TTL_DUE_DEADLINE : TTL_DUE_OWN;
	}
	/* legal hold: keep the floor a keyset walk reached, in this transaction */
	ttl_purge_hold_end(!split && step.obstacle == NULL && plan.source == TTL_SOURCE_KEYSET &&
					   batch.found < limit,
					   cur->kind == TTL_DUE_INHERITED ?
					   cur->now_seconds - policy.default_ttl : cur->now_seconds);
	SPI_finish();

	/*
	 * A keyset's range is done when a batch comes back short.  A full batch
	 * that deleted nothing and did not move the key would find the same rows
	 * again: the range is done for this walk too.
	 */
	if (plan.source == TTL_SOURCE_KEYSET)
		exhausted = limit < 0 || batch.found < limit ||
			(batch.deleted == 0 && batch.last_leaf == cur->leaf &&
			 batch.last_key == cur->lower_key);
	advance_cursor(cur, exhausted, batch.last_leaf, batch.last_key);
	cur->deleted += batch.deleted;
	ttl_progress_rows(cur->deleted);
	ttl_visit_log_batch(&cur->log, &batch, OidIsValid(policy.archive));
	note_foreign_leaf(cur);
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
static int	purge_nesting = 0;

/* ExecutorStart_hook's step (ttl.c), after the executor has started. */
void
ttl_purge_executor_started(QueryDesc *queryDesc)
{
	ListCell   *lc;

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
 * step(arg) with the deferred triggers of the statements it runs made
 * immediate, as in a purge batch: rule 10's delete of one expired item
 * (purge_replace.c).
 */
void
ttl_with_immediate_triggers(void (*step) (void *arg), void *arg)
{
	purge_nesting++;
	PG_TRY();
	{
		step(arg);
	}
	PG_FINALLY();
	{
		purge_nesting--;
	}
	PG_END_TRY();
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
	char	   *row_error = NULL;
	TtlVisitMark mark;

	ttl_cursor_init(&cur, relid, owner, ttl_current_unix_seconds(), false, false);
	ttl_visit_log_begin(&mark);
	ttl_become_user(owner, &ctx);

	/*
	 * Whole leaves first (purge_retire.c), in the caller's transaction:
	 * their parents stay locked (AccessExclusiveLock) until it ends.  Not
	 * in a REPEATABLE READ or SERIALIZABLE one: its snapshot would not
	 * see what writers committed since, and such a caller's rows are
	 * purged one by one.
	 */
	if (!IsolationUsesXactSnapshot())
	{
		bool		busy;

		(void) ttl_retire_step(&cur, &busy);
	}
	else
		ttl_retire_forget(relid);	/* no look: no leaf waits for one */

	/*
	 * One statement per purge index, not batches: within one transaction a
	 * later batch would walk again over the entries of rows an earlier one
	 * deleted (not yet dead to anyone else), which is quadratic when many
	 * rows share a key.  Batching pays off only with a commit in between
	 * (ttl_purge_round).
	 */
	while (!cur.done && (max_rows < 0 || cur.deleted < max_rows))
	{
		(void) ttl_purge_batch_immediate(&cur, max_rows < 0 ? -1 : max_rows - cur.deleted);
		if (cur.row_error != NULL)
			row_error = cur.row_error;	/* failing rows: last_error says so */
		CHECK_FOR_INTERRUPTS();
	}
	ttl_restore_user(&ctx);
	ttl_visit_log_end(&cur.log, &mark);
	ttl_visit_log_emit(relid, &cur.log, "ttl.purge()");
	*skipped = cur.busy;
	/* failing rows left in place, or a partition left alone (another role's) */
	if (!cur.busy)
		ttl_record_purge(relid, cur.deleted,
						 row_error != NULL ? row_error : cur.leaf_note);
	return cur.deleted;
}
