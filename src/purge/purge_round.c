/*
 * purge_round.c
 *		A purge round over every due container, shared by the background
 *		worker and the ttl.run_purge() procedure: one batch per container in
 *		turn, each in a subtransaction bounded by ttl.batch_timeout
 *		(visit.c), within the cost budget, resuming where a bounded round
 *		stopped.  A failing batch of the worker or of run_purge
 *		(TtlRoundOps.record_backoff) backs its container off (backoff.c)
 *		and one that commits ends that.  For the worker
 *		(TtlRoundOps.backoff) each batch is announced in its in-flight
 *		record first, containers backed off are left out, no batch starts
 *		that could outlast the visit,
 *		and where each container resumes is handed to the worker after
 *		each batch commits.  Both leave a container outside its purge
 *		window (base/purge_window.c: its own, else ttl.purge_window), asked
 *		before each of its batches; the worker also leaves a container once
 *		its visit has spent ttl.max_purge_time on it (its batches, commits
 *		and the budget's sleeps after them), to resume there next round.
 *
 * Locking: each transaction takes ttl.registry first (registry.c: the
 * one order of ttl's tables, which every update script follows too), each
 * batch its own locks (purge_batch.c), and the caller commits between
 * batches; one container's failure is recorded in
 * ttl.purge_stats and does not end the round.  Containers are listed in C
 * (registry.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/purge_window.h"
#include "base/run_as.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "base/visit.h"
#include "guard/guard.h"
#include "insight/stats.h"
#include "purge/mark.h"
#include "purge/progress.h"
#include "purge/purge.h"
#include "purge/purge_internal.h"
#include "registry/container_window.h"
#include "registry/policy.h"
#include "registry/registry.h"

/* The cost budget's sleep, by name in pg_stat_activity on 17+. */
static uint32 cost_delay_wait_event = 0;

/* Slept since the round last asked (visit_log.c: its batch's visit). */
static int64 slept_us = 0;

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
	TtlPhase	phase;
	TimestampTz start;

	if (!VacuumCostActive || VacuumCostBalance < VacuumCostLimit)
		return;
	msec = VacuumCostDelay * VacuumCostBalance / VacuumCostLimit;
	VacuumCostBalance = 0;
	phase = ttl_progress_current_phase();
	ttl_progress_phase(TTL_PHASE_THROTTLED);
	start = GetCurrentTimestamp();
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) Max(msec, 1),
					 ttl_wait_event(&cost_delay_wait_event, "TtlCostDelay"));
	ResetLatch(MyLatch);
	slept_us += GetCurrentTimestamp() - start;
	ttl_progress_phase(phase);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Where a bounded round left each unfinished container, so the next round
 * resumes its keyset walk instead of starting again at the lowest key.
 * Resuming is safe: below the saved key, every row was expired at the old
 * clock and is either gone or was skipped (locked); a skipped row is found
 * again when the walk completes and the next walk starts from the bottom.
 */
typedef TtlResumePoint ResumePoint;

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
	cur->kind = (TtlDueKind) point->kind;
	cur->leaf = point->leaf;
	cur->lower_key = point->lower_key;
	cur->deleted = point->deleted;
	cur->progress_started = point->progress_started;
	cur->progress_due = point->progress_due;
}

static void
save_resume_points(HTAB *resume, PurgeCursor *cursors, int ncursors, const bool *set_aside)
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
		if (cursors[i].done && !set_aside[i])
			continue;
		point = hash_search(resume, &cursors[i].relid, HASH_ENTER, NULL);
		point->kind = (int) cursors[i].kind;
		point->leaf = cursors[i].leaf;
		point->lower_key = cursors[i].lower_key;
		point->deleted = cursors[i].deleted;
		point->progress_started = cursors[i].progress_started;
		point->progress_due = cursors[i].progress_due;
	}
}

/*
 * The due containers of the database (all, or the current user's), in
 * relid order, in the caller's memory context.  Read in C, no SQL: this
 * runs as the worker's superuser or as a superuser calling ttl.purge().
 */
List *
ttl_list_due_containers(bool all_owners)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, ttl_list_purge_targets(true))
	{
		Oid			relid = lfirst_oid(lc);

		if (all_owners || ttl_class_ownercheck(relid, GetUserId()))
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
 * The purge's own transactions (the worker's, ttl.run_purge()'s) commit
 * without waiting for their WAL to be flushed: a purge commit lost in a
 * crash only brings back rows that are still expired, still hidden by the
 * view and purged again next round, while a flush per batch costs the
 * purge (and the disk every other backend writes to) a sync each time.
 * Set in each such transaction (LOCAL: gone at its end); never in a
 * caller's transaction (ttl.purge()).
 */
void
ttl_purge_commit_async(void)
{
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
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
	 * pending (ttl_purge_batch_immediate covers the rest).
	 */
	ttl_spi_connect();
	SPI_execute("SET CONSTRAINTS ALL IMMEDIATE", false, 0);
	SPI_finish();
	ttl_statement_bound_arm(ttl_batch_timeout);
	/*
	 * Whole leaves first, once a round (purge_retire.c): a step that
	 * retired a leaf holds its parent's AccessExclusiveLock, so it is this
	 * turn's whole transaction and the rows wait for the next turn; a busy
	 * container waits for the next round, rows included, so that a leaf
	 * about to be retired is not purged row by row meanwhile.
	 */
	if (!cur->retire_tried)
	{
		bool		busy;

		cur->retire_tried = true;
		if (ttl_retire_step(cur, &busy) > 0 || busy)
		{
			ttl_statement_bound_disarm();
			CHECK_FOR_INTERRUPTS();
			ttl_restore_user(&ctx);
			if (busy)
				cur->done = true;
			return;
		}
	}
	/* the leaves the step detached in drop mode: dropped in a turn of their own */
	if (ttl_retire_drop_pending(cur) > 0)
	{
		ttl_statement_bound_disarm();
		CHECK_FOR_INTERRUPTS();
		ttl_restore_user(&ctx);
		return;
	}
	deleted = ttl_purge_batch_immediate(cur, ttl_batch_size);
	ttl_statement_bound_disarm();
	/* a timeout that fired just now is this batch's, not the round's */
	CHECK_FOR_INTERRUPTS();
	ttl_restore_user(&ctx);
	/*
	 * A partition left alone (another role's) or rows left in place by a
	 * split batch (purge_split.c) are the container's last_error.
	 */
	{
		const char *note = cur->row_error != NULL ? cur->row_error : cur->leaf_note;

		if (deleted > 0 || note != NULL)
			ttl_record_purge(cur->relid, deleted, note);
	}
	/*
	 * Served again (an archive repaired, say): no more back-off.  Not by a
	 * batch of a kind with nothing due while another kind fails: only
	 * once rows were deleted or every kind is done.
	 */
	if (cur->clear_backoff && (deleted > 0 || (cur->done && !cur->busy)))
	{
		ttl_backoff_clear(cur->relid, false);
		cur->clear_backoff = false;
	}
}

typedef struct FailedBatch
{
	Oid			relid;
	const char *message;
	bool		overran;		/* counts for the back-off (the worker's) */
} FailedBatch;

static void
record_failure(void *arg)
{
	FailedBatch *failed = (FailedBatch *) arg;

	if (failed->overran)
		ttl_backoff_record(failed->relid, failed->message);
	else
		ttl_record_purge(failed->relid, 0, failed->message);
}

/*
 * One batch of one container in a subtransaction, as its owner, announced
 * in the worker's in-flight record.  A failure is logged and recorded for
 * that container and ends its round; it never escapes (a failure to
 * record it is only logged).  With backoff (the worker and run_purge), a
 * failing batch also backs its container off, whatever failed: one that
 * ran out of ttl.batch_timeout, or an archive's constraint or trigger, a
 * full disk under the archive, which would fail again at once.
 */
static void
round_batch(PurgeCursor *cur, MemoryContext round_cxt, bool backoff)
{
	ErrorData  *edata;
	ErrorData  *record_error;
	FailedBatch failed;
	char	   *name;
	char	   *message;
	bool		timed_out;
	TtlVisitMark mark;

	ttl_visit_enter(cur->relid, TTL_STEP_BATCH);
	ttl_visit_log_begin(&mark);
	edata = ttl_subxact_run(owner_batch, cur, round_cxt, true);
	ttl_visit_log_end(&cur->log, &mark);
	ttl_statement_bound_disarm();	/* the batch failed with it armed */
	ttl_visit_leave();
	if (edata == NULL)
		return;
	ttl_progress_rows(cur->deleted);	/* the failed batch's rows are back */
	timed_out = ttl_statement_bound_expired(edata);
	/*
	 * A cancel that is not the batch's own bound (pg_cancel_backend, the
	 * session's statement_timeout) ends a CALL ttl.run_purge(), like any
	 * statement.  The worker skips the container instead: nobody waits for
	 * it to end.
	 */
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !timed_out &&
		!ttl_am_background_worker())
		ReThrowError(edata);
	cur->done = true;
	name = get_rel_name(cur->relid);
	message = edata->message;
	if (timed_out)
		message = psprintf("batch cancelled after ttl.batch_timeout (%d ms)",
						   ttl_batch_timeout);
	ereport(WARNING,
			(errmsg("ttl purge of \"%s\" failed: %s", name ? name : "?", message),
			 backoff ?
			 errdetail("The container is backed off: later rounds leave it out for a while (ttl.purge_stats.retry_after).") :
			 errdetail("The container is skipped until the next round.")));
	failed.relid = cur->relid;
	failed.message = message;
	failed.overran = backoff;
	record_error = ttl_subxact_run(record_failure, &failed, round_cxt, true);
	if (record_error != NULL)
		ereport(LOG,
				(errmsg("could not record ttl purge error: %s", record_error->message)));
}

/* A batch of cur has committed: the worker learns where cur resumes. */
static void
report_committed(TtlRoundOps *ops, PurgeCursor *cur)
{
	ResumePoint point;

	if (ops->committed == NULL)
		return;
	if (cur->done)
	{
		ops->committed(ops->arg, cur->relid, NULL);
		return;
	}
	point.relid = cur->relid;
	point.kind = (int) cur->kind;
	point.leaf = cur->leaf;
	point.lower_key = cur->lower_key;
	point.deleted = cur->deleted;
	point.progress_started = cur->progress_started;
	point.progress_due = cur->progress_due;
	ops->committed(ops->arg, cur->relid, &point);
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
	TtlGuardRound guard;
	volatile bool cost_started = false;
	bool		first_pass = true;
	List	   *backed_off = NIL;
	List	   *overran = NIL;
	PurgeCursor *last = NULL;	/* the batch the next commit commits */
	TtlPurgeWindow *windows;	/* per cursor; nranges 0: none */
	bool	   *set_aside;		/* per cursor: left at ttl.max_purge_time */
	int64	   *spent_us;		/* per cursor: this visit's time on it */
	int			last_index = -1;
	int			first = 0;		/* the cursor each pass starts at */
	ListCell   *lc;
	int			i;
	int			k;

	ops->unfinished = false;
	round_cxt = AllocSetContextCreate(TopMemoryContext, "ttl purge round",
									  ALLOCSET_DEFAULT_SIZES);
	caller_cxt = CurrentMemoryContext;
	ttl_progress_begin();		/* ttl.purge_progress shows it (progress.c) */
	PG_TRY();
	{
		MemoryContextSwitchTo(round_cxt);
		/* ttl's tables in their one order (registry.c), as in each batch */
		(void) ttl_registry_lock_first(true);
		relids = ttl_list_due_containers(ops->all_owners);
		/*
		 * The worker's: run_purge serves backed-off containers anyway and
		 * leaves ending a back-off to the worker (its caller may not read
		 * ttl.purge_stats)
		 */
		if (ops->backoff)
			ttl_backoff_load(&backed_off, &overran);
		/* the restore guard may hold some of them (guard.c) */
		ttl_guard_round_begin(&guard);
		ncursors = list_length(relids);
		cursors = palloc0(sizeof(PurgeCursor) * Max(ncursors, 1));
		windows = palloc0(sizeof(TtlPurgeWindow) * Max(ncursors, 1));
		set_aside = palloc0(sizeof(bool) * Max(ncursors, 1));
		spent_us = palloc0(sizeof(int64) * Max(ncursors, 1));
		i = 0;
		foreach(lc, relids)
		{
			Oid			relid = lfirst_oid(lc);

			ttl_cursor_init(&cursors[i], relid, ttl_table_owner(relid), now_seconds, true,
							ops->walks);
			cursors[i].count_due = true;	/* ttl.purge_progress's rows_due */
			resume_cursor(ops->resume, &cursors[i]);
			/* a copy: a reload may free the setting's own */
			(void) ttl_container_window(relid, &windows[i]);
			cursors[i].clear_backoff = list_member_oid(overran, relid);
			if (list_member_oid(backed_off, relid))
			{
				/* not even estimated: the guard's check waits for it */
				cursors[i].done = true;
				ttl_guard_unchecked(&guard, relid);
			}
			else if (ttl_guard_holds(&guard, relid))
				cursors[i].done = true;
			i++;
		}
		MemoryContextSwitchTo(caller_cxt);

		cost_begin(&cost_saved);
		cost_started = true;
		if (ncursors > 0)
			first = (int) (ops->first % (uint64) ncursors);
		active = ncursors;
		while (active > 0)
		{
			active = 0;
			for (k = 0; k < ncursors; k++)
			{
				int			idx = (k + first) % ncursors;
				PurgeCursor *cur = &cursors[idx];
				int64		before = cur->deleted;
				TimestampTz t0;

				if (cur->done)
					continue;
				/*
				 * A bounded round ends with work left; the next one starts
				 * at once, with a fresh clock, list of containers and pauses.
				 * Not before every container has had its first batch: a
				 * slow one (up to ttl.batch_timeout) early in the list must
				 * not end every round before the others get their turn.
				 * The worker's visit bound may end even the first pass:
				 * then the rounds start at a different container each
				 * visit (ops->first), so none is always the one cut off.
				 */
				if ((!first_pass && ops->max_round_ms > 0 &&
					 TimestampDifferenceExceeds(started, GetCurrentTimestamp(),
												ops->max_round_ms)) ||
					(ops->may_start != NULL && !ops->may_start(ops->arg)))
				{
					/* nor past what is left of the worker's visit */
					ops->unfinished = true;
					active = 0;
					break;
				}
				/*
				 * The visit's time on one container: each batch, and the
				 * commit and the budget's sleep after it (charged to the
				 * batch they pay for).  Past ttl.max_purge_time the
				 * container resumes there next round.
				 */
				if (ops->max_container_ms > 0 &&
					spent_us[idx] >= (int64) ops->max_container_ms * 1000)
				{
					cur->done = true;
					set_aside[idx] = true;
					ops->unfinished = true;
					continue;
				}
				t0 = GetCurrentTimestamp();
				slept_us = 0;
				if (!ops->next_transaction(ops->arg))
				{
					if (last != NULL)
						report_committed(ops, last);
					active = 0;
					break;
				}
				(void) ttl_registry_lock_first(true);
				/* the sleep paid for the last batch: its container's visit */
				if (last != NULL)
					last->log.throttled_us += slept_us;
				if (last_index >= 0)
					spent_us[last_index] += GetCurrentTimestamp() - t0;
				if (last != NULL)
					report_committed(ops, last);
				/* outside its window: left for this round (hiding goes on) */
				if (windows[idx].nranges > 0 &&
					!ttl_window_contains(&windows[idx], ttl_window_clock()))
				{
					cur->done = true;
					continue;
				}
				if (ops->report)
					ops->report(ops->arg, activity_text(cur));
				/* the batch's transaction carries ttl's origin or not (mark.c) */
				ttl_mark_container(cur->relid);
				t0 = GetCurrentTimestamp();
				round_batch(cur, round_cxt, ops->record_backoff);
				spent_us[idx] += GetCurrentTimestamp() - t0;
				last = cur;
				last_index = idx;
				total += cur->deleted - before;
				if (!cur->done)
					active++;
			}
			first_pass = false;
		}
		save_resume_points(ops->resume, cursors, ops->unfinished ? ncursors : 0, set_aside);
		/* ttl.log_min_duration: a line per container this round visited */
		for (i = 0; i < ncursors; i++)
			ttl_visit_log_emit(cursors[i].relid, &cursors[i].log, ttl_visit_log_round_by());
		/* every container was checked: the event is, for this database */
		if (ops->all_owners)
			ttl_guard_round_end(&guard);
	}
	PG_FINALLY();
	{
		ttl_progress_end();
		if (cost_started)
			cost_end(&cost_saved);
		if (CurrentMemoryContext == round_cxt)
			MemoryContextSwitchTo(caller_cxt);
		MemoryContextDelete(round_cxt);
	}
	PG_END_TRY();
	return total;
}
