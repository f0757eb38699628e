/*
 * worker.c
 *		A purge worker of the pool (launcher.c): it serves one database (its
 *		OID in bgw_main_arg) for one round, bounded by ttl.naptime, and
 *		leaves.  The round purges every unpaused container with
 *		ttl_purge_round(), one committed batch at a time, within the cost
 *		budget, as each table's owner, from the resume points its
 *		predecessor left in shared memory.  Leaving, it publishes there what
 *		the launcher ranks databases by (db_states.c): whether the database
 *		has the extension, its backlog (due rows, oldest due item), the
 *		error that ended the visit, and the resume points of the containers
 *		it did not finish.
 *
 * The visit is bounded (visit.h): before each statement on a user table
 * (a batch, a backlog walk, the restore guard's estimate) the worker
 * records in its slot which container it is in; each such statement is
 * bounded by ttl.batch_timeout; none starts that could outlast what is left
 * of ttl.max_visit_time; and the launcher terminates a worker that
 * overstays it all the same (an owner's code that traps the cancel).  On
 * arrival the worker acts on the in-flight record its predecessor left if
 * it exited in the middle of such a statement: that container's last_error
 * says so and it is backed off (backoff.c), so the database's other
 * containers are served first.  Resume points reach shared memory after
 * each committed batch, so a terminated visit loses nothing.
 *
 * Security: it connects as the bootstrap superuser, pins search_path to
 * pg_catalog, pg_temp for its whole life, lists containers in C and runs
 * each batch as the table's owner (purge_batch.c).
 *
 * Locking: ttl.registry first in each transaction, without queueing (an
 * ALTER EXTENSION ttl UPDATE holding it ends the visit: registry.c), then
 * only what purge_batch.c takes, one short transaction per batch,
 * and the shared state's lock for a copy (db_states.c).  The worker never
 * sleeps holding a snapshot or a lock (the cost budget sleeps between
 * transactions).  With ttl.mark_purge_deletes on, all its transactions run
 * under a replication origin of ttl's and each batch logs a message
 * (mark.c).  SIGHUP reloads the settings (ttl.enabled off ends the
 * round at the next batch); SIGTERM ends it.  A replica further behind
 * than ttl.max_replication_lag, checked between batches
 * (replication_wait.c), is waited for there, outside any transaction, for
 * at most a naptime; if it is still behind, the visit ends.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "base/visit.h"
#include "guard/guard.h"
#include "insight/stats.h"
#include "purge/mark.h"
#include "purge/progress.h"
#include "purge/purge.h"
#include "registry/container_window.h"
#include "registry/policy.h"
#include "registry/registry.h"
#include "scheduler/replication_wait.h"
#include "scheduler/scheduler.h"

static HTAB *resume_points = NULL;

/*
 * The backlog the worker leaves: due rows (a lower bound when a count
 * stopped at its cap) and the oldest due item.
 */
typedef struct LeftBacklog
{
	int64		due_rows;
	bool		due_rows_capped;
	TimestampTz oldest_due;		/* 0: none */
	bool		unknown;		/* not counted: the last one stands */
} LeftBacklog;

static void
reload_settings_if_asked(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

static void
worker_report(void *arg, const char *activity)
{
	pgstat_report_activity(STATE_RUNNING, activity);
}

/*
 * Whether this transaction holds ttl.registry (ttl_registry_lock_first):
 * false while an ALTER EXTENSION ttl UPDATE (or a DROP EXTENSION) holds
 * it, and then the visit touches no table of ttl's and ends.
 */
static bool catalog_ours = false;

/* Commit the batch, pay the budget outside any transaction, begin anew. */
static void
worker_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* whatever the database's defaults: see purge_batch.c */
	XactIsoLevel = XACT_READ_COMMITTED;
	XactReadOnly = false;
	ttl_purge_commit_async();
	/* before the snapshot, which then sees all of an update that held it */
	catalog_ours = ttl_registry_lock_first(false);
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
worker_commit(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/* Commit and begin anew, for mark.c (creating a replication origin). */
static void
worker_restart(void)
{
	worker_commit();
	worker_begin();
}

/*
 * Between batches, outside any transaction: a replica further behind than
 * ttl.max_replication_lag is waited for, showing the phase "waiting for
 * replicas" in ttl.purge_progress (with the container the visit is in) and
 * the wait event TtlReplicationLag, for at most ttl.naptime, read afresh at
 * each poll (a SIGHUP that shortens it, or turns ttl.enabled off, is seen
 * within a poll).  The wait is marked, so the visit's bound leaves it out;
 * no visit can start meanwhile anyway (the launcher's own check), so the
 * pool slot it keeps serves nobody else.  Returns whether the visit goes on.
 */
#define WORKER_LAG_POLL_MS 1000

static bool
worker_replicas_caught_up(void)
{
	TimestampTz began;
	TtlPhase	phase;
	bool		lagging = true;

	if (!ttl_replication_wait_check(false))
		return true;
	began = GetCurrentTimestamp();
	phase = ttl_progress_current_phase();
	ttl_progress_phase(TTL_PHASE_WAITING_FOR_REPLICAS);
	for (;;)
	{
		TtlReplicationLag lag;
		long		left_ms;

		reload_settings_if_asked();
		left_ms = (long) ttl_naptime * 1000L -
			TimestampDifferenceMilliseconds(began, GetCurrentTimestamp());
		if (!ttl_enabled || left_ms <= 0)
			break;
		if (ttl_replication_lag_wait(Min(left_ms, WORKER_LAG_POLL_MS), &lag))
		{
			/* caught up: ends the episode (and logs it) for everyone */
			lagging = ttl_replication_wait_check(false);
			if (!lagging)
				break;
		}
	}
	ttl_progress_phase(phase);
	return !lagging;
}

static bool
worker_next_transaction(void *arg)
{
	bool		go_on;

	worker_commit();
	ttl_cost_sleep();
	reload_settings_if_asked();
	CHECK_FOR_INTERRUPTS();
	go_on = worker_replicas_caught_up();
	worker_begin();
	return ttl_enabled && go_on && catalog_ours;
}

/*
 * AccessShareLock on a container and all its partitions, or false at once
 * when someone else's lock stands in the way (no queueing behind DDL; the
 * locks taken stay until the end of the transaction, as a SELECT's would).
 */
static bool
lock_container_now(Oid relid)
{
	List	   *rels;
	ListCell   *lc;

	if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return false;
	rels = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, rels)
	{
		if (lfirst_oid(lc) != relid &&
			!ConditionalLockRelationOid(lfirst_oid(lc), AccessShareLock))
			return false;
	}
	return true;
}

/* One container's backlog walk, as a step of walk_bounded(). */
typedef struct WalkStep
{
	Oid			relid;
	bool		known;
	int64		due;
	bool		capped;
	TimestampTz oldest;
} WalkStep;

static void
walk_step(void *arg)
{
	WalkStep   *w = (WalkStep *) arg;

	ttl_statement_bound_arm(ttl_batch_timeout);
	w->known = ttl_scheduler_backlog(w->relid, &w->due, &w->capped, &w->oldest);
	ttl_statement_bound_disarm();
}

/*
 * relid's backlog walk in a subtransaction, bounded by ttl.batch_timeout
 * and announced in the in-flight record (an owner's code that traps the
 * cancel is ended by the visit bound).  False when it ran out of its
 * bound: relid is backed off.  Any other cancel is thrown.
 */
static bool
walk_bounded(WalkStep *w)
{
	ErrorData  *edata;

	ttl_visit_enter(w->relid, TTL_STEP_BACKLOG);
	edata = ttl_subxact_run(walk_step, w, CurrentMemoryContext, true);
	ttl_statement_bound_disarm();
	ttl_visit_leave();
	if (edata == NULL)
		return true;
	w->known = false;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !ttl_statement_bound_expired(edata))
		ReThrowError(edata);
	if (ttl_statement_bound_expired(edata))
	{
		char	   *message = psprintf("backlog walk cancelled after ttl.batch_timeout (%d ms)",
									   ttl_batch_timeout);

		ereport(WARNING,
				(errmsg("ttl backlog of container \"%s\" failed: %s",
						ttl_relation_display_name(w->relid), message),
				 errdetail("The container is backed off: later rounds leave it out for a while (ttl.purge_stats.retry_after).")));
		ttl_backoff_record(w->relid, message);
		return false;
	}
	/* ttl_scheduler_backlog catches the rest itself; this is unforeseen */
	ereport(WARNING,
			(errmsg("ttl backlog of container \"%s\" failed: %s",
					ttl_relation_display_name(w->relid), edata->message)));
	return true;
}

/* ttl_behind_note in a subtransaction: a failure is only logged. */
typedef struct BehindStep
{
	Oid			relid;
	TimestampTz oldest;
} BehindStep;

static void
behind_step(void *arg)
{
	BehindStep *b = (BehindStep *) arg;

	ttl_behind_note(b->relid, b->oldest);
}

static void
note_behind(Oid relid, TimestampTz oldest)
{
	BehindStep	b = {relid, oldest};
	ErrorData  *edata;

	edata = ttl_subxact_run(behind_step, &b, CurrentMemoryContext, false);
	if (edata != NULL)
		ereport(LOG,
				(errmsg("could not record whether ttl container \"%s\" is behind: %s",
						ttl_relation_display_name(relid), edata->message)));
}

/*
 * The backlog of the unpaused containers, as ttl.stats computes it (each
 * walk as the table's owner) but counted only up to TTL_SCHEDULER_WALK_LIMIT
 * rows per purge index: the launcher ranks databases by it, and it is
 * computed at every visit.  A table locked by someone else is left out
 * rather than waited for, as the round skips it, and so is a container
 * the restore guard holds (else its database would look urgent forever),
 * or the worker has backed off (a walk it cannot finish would end every
 * visit).  Each walk is bounded (walk_bounded); none starts that could
 * outlast the visit (the rest stay unknown, 0).  A walk that completes
 * ends an earlier back-off: the container was served within its bounds,
 * and says whether the container has fallen behind or caught up
 * (behind.c).  A container outside its purge window is walked (it may
 * fall behind there) but its backlog is left out: it waits, whatever its
 * backlog, and must not make its database look urgent.
 * Before 1.1 the walks do
 * not exist in that form (no ttl._backlog): the backlog is left unknown (0).
 */
static void
compute_backlog(LeftBacklog *left)
{
	List	   *relids = ttl_list_purge_targets(true);
	List	   *backed_off;
	List	   *overran;
	ListCell   *lc;
	bool		isnull;

	left->due_rows = 0;
	left->due_rows_capped = false;
	left->oldest_due = 0;
	ttl_spi_connect();
	if (SPI_execute("SELECT pg_catalog.to_regprocedure('ttl._backlog(pg_catalog.regclass)')"
					" IS NOT NULL", true, 1) != SPI_OK_SELECT ||
		!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		relids = NIL;
	/* a partition locked by DDL: that container's backlog is unknown (a WARNING) */
	if (SPI_execute("SET LOCAL lock_timeout = '1s'", false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not set lock_timeout");
	SPI_finish();
	ttl_backoff_load(&backed_off, &overran);
	foreach(lc, relids)
	{
		WalkStep	w = {lfirst_oid(lc)};

		if (list_member_oid(backed_off, w.relid))
			continue;			/* backed off: its walk waits too */
		if (!ttl_visit_may_start())
			break;				/* the visit's time is up: the rest unknown */
		if (!lock_container_now(w.relid))
			continue;			/* locked by DDL: the round skipped it too */
		if (ttl_guard_held_now(w.relid))
			continue;			/* held by the restore guard (guard.c): not due */
		if (!walk_bounded(&w))
			continue;
		if (list_member_oid(overran, w.relid))
			ttl_backoff_clear(w.relid, true);
		if (!w.known)
			continue;
		note_behind(w.relid, w.due > 0 ? w.oldest : 0);
		if (w.due == 0 || !ttl_container_window_open(w.relid))
			continue;			/* outside its purge window: not due now */
		left->due_rows += w.due;
		left->due_rows_capped |= w.capped;
		if (w.oldest != 0 && (left->oldest_due == 0 || w.oldest < left->oldest_due))
			left->oldest_due = w.oldest;
	}
}

/*
 * The in-flight record a predecessor left when it exited in the middle of
 * a statement on a user table (worker_slots.c, db_states.c): that
 * container's last_error says what happened and it is backed off
 * (backoff.c), in a transaction of its own.  A failure to record it is
 * only logged: it must not end every visit of the database.
 */
typedef struct InterruptedStep
{
	Oid			relid;
	const char *message;
} InterruptedStep;

static void
record_interrupted(void *arg)
{
	InterruptedStep *step = (InterruptedStep *) arg;

	ttl_backoff_record(step->relid, step->message);
}

static void
act_on_interrupted_visit(void)
{
	TtlInterrupted rec;
	InterruptedStep step;
	ErrorData  *edata;

	/* recorded by a later visit: an upgrade holds ttl.purge_stats */
	if (!catalog_ours || !ttl_db_take_interrupted(MyDatabaseId, &rec))
		return;
	step.relid = rec.relid;
	if (rec.by_bound)
		step.message = psprintf("purge worker terminated after ttl.max_visit_time (" INT64_FORMAT " ms) while in this container (%s)",
								rec.bound_ms, ttl_step_name(rec.step));
	else
		step.message = psprintf("purge worker exited while in this container (%s)",
								ttl_step_name(rec.step));
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(rec.relid)))
	{
		ereport(WARNING,
				(errmsg("ttl purge of \"%s\": %s", ttl_relation_display_name(rec.relid),
						step.message),
				 errdetail("The container is backed off: later rounds leave it out for a while (ttl.purge_stats.retry_after).")));
		edata = ttl_subxact_run(record_interrupted, &step, CurrentMemoryContext, false);
		if (edata != NULL)
			ereport(LOG,
					(errmsg("could not record ttl purge error: %s", edata->message)));
	}
	worker_commit();
	worker_begin();
	ttl_db_forget_interrupted(MyDatabaseId, rec.seq);
}

/* Whether the round may start another batch: see ttl_visit_may_start. */
static bool
worker_may_start(void *arg)
{
	return ttl_visit_may_start();
}

/* A batch committed: where its container resumes, in shared memory now. */
static void
worker_committed(void *arg, Oid relid, const TtlResumePoint *point)
{
	ttl_db_save_resume_point(MyDatabaseId, relid, point);
}

/*
 * The visit: one round and the backlog it leaves; false when the extension
 * is not installed in this database.
 */
static bool
worker_round(LeftBacklog *left)
{
	TtlRoundOps ops = {0};
	bool		installed;
	int64		deleted;
	uint32		marks_before = ttl_db_ext_marks(MyDatabaseId);

	worker_begin();
	installed = OidIsValid(get_extension_oid("ttl", true));
	/* said at once: a round that fails still leaves this known */
	ttl_db_set_has_ttl(MyDatabaseId, installed, marks_before);
	if (installed && catalog_ours)
	{
		pgstat_report_activity(STATE_RUNNING, "ttl purge round");
		/*
		 * With ttl.mark_purge_deletes on, every transaction of this worker
		 * from now on carries a replication origin of ttl's (mark.c); the
		 * worker lets it go when it exits.
		 */
		ttl_mark_begin(TTL_MARK_BY_WORKER, worker_restart);
		act_on_interrupted_visit();
		ops.next_transaction = worker_next_transaction;
		ops.report = worker_report;
		ops.all_owners = true;
		/* a round lasts at most a naptime, so other databases wait no longer */
		ops.max_round_ms = ttl_naptime * 1000;
		ops.resume = resume_points;
		ops.backoff = true;
		ops.record_backoff = true;
		ops.may_start = worker_may_start;
		ops.committed = worker_committed;
		ops.first = (uint64) ttl_db_visits(MyDatabaseId);
		ops.max_container_ms = ttl_max_purge_time;
		/* each step above began a transaction: an upgrade may have come */
		deleted = catalog_ours ? ttl_purge_round(&ops) : 0;
		if (deleted > 0)
			elog(DEBUG1, "ttl worker deleted %lld expired items", (long long) deleted);
		pgstat_report_activity(STATE_RUNNING, "ttl backlog");
		worker_commit();
		/* the round's last batch has committed: its points are safe now */
		ttl_db_save_resume_points(MyDatabaseId, resume_points);
		worker_begin();
		if (catalog_ours)
			compute_backlog(left);
	}
	/* an upgrade of ttl holds its tables: back at the next visit */
	left->unknown = installed && !catalog_ours;
	if (left->unknown)
		elog(DEBUG1, "ttl worker: the extension's tables are locked (ALTER EXTENSION ttl UPDATE?): visit ended");
	worker_commit();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return installed;
}

/* Any exit: the pool's count and the database's last visit. */
static void
worker_leaves(int code, Datum arg)
{
	ttl_db_worker_left(DatumGetObjectId(arg));
}

/* The visit, with the error that ends it (if any) kept for ttl.databases. */
static void
worker_visit(Oid dboid)
{
	LeftBacklog left = {0};

	PG_TRY();
	{
		if (worker_round(&left) && !left.unknown)
			ttl_db_publish_backlog(dboid, left.due_rows, left.due_rows_capped,
								   left.oldest_due);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		ttl_db_publish_error(dboid, edata->message);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

void
ttl_worker_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (!ttl_claim_worker_slot(dboid))
		proc_exit(0);			/* another worker serves this database */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("ttl worker");
	ttl_db_worker_arrived(dboid);
	/* before the dynamic shared memory is detached (db_states.c lives there) */
	before_shmem_exit(worker_leaves, ObjectIdGetDatum(dboid));
	/*
	 * The worker is the bootstrap superuser: whatever the database's or the
	 * role's setting (lower sources than this one), nothing it runs
	 * resolves a name through a schema users can create in (purge_batch.c also
	 * pins it per statement).  Not PGC_S_OVERRIDE: that would also defeat
	 * the SET search_path clause of an owner's trigger function.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION);
	resume_points = ttl_create_resume_map();
	ttl_db_load_resume_points(dboid, resume_points);

	reload_settings_if_asked();
	/* ttl.worker_enabled comes from the database's settings (ALTER DATABASE) */
	if (ttl_enabled && ttl_worker_enabled)
		worker_visit(dboid);
	proc_exit(0);
}
