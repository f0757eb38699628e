/*
 * visit.c
 *		The time bound of each statement ttl runs on a user table in the
 *		background worker or ttl.run_purge(): a purge batch
 *		(purge_round.c), the worker's backlog walk (worker.c), the restore
 *		guard's estimate (guard.c); all three are bounded by
 *		ttl.batch_timeout.  Whether a worker may still start such a
 *		statement, given what is left of its visit.  And the in-flight
 *		record the worker keeps before each such statement, through its
 *		slot (worker_slots.c lends it: visit.h).
 *
 * A bound is a cancel, which an owner's code can trap (a PL/pgSQL
 * EXCEPTION WHEN query_canceled); what catches that is the visit bound the
 * launcher enforces from outside (launcher.c: ttl.max_visit_time, a
 * SIGTERM whose FATAL no code traps).  So the worker stops starting
 * statements before its visit's end, and only a statement that ignored its
 * own bound makes the launcher step in.
 *
 * Locking: none; the timer is this backend's.  Nothing starts the
 * statement timer for SPI in a background worker, and a CALL's timer
 * covers the whole procedure, so a bounded statement arms
 * STATEMENT_TIMEOUT itself: its expiry cancels the statement like a
 * statement timeout.  A session's own statement_timeout that would end
 * sooner is left alone; one that would end later is re-armed when the
 * statement is over.  Bounds do not nest.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "base/visit.h"

typedef struct StatementTimer
{
	bool		armed;
	TimestampTz deadline;		/* 0: no bound */
	bool		restore_session;
	TimestampTz session_fin;
} StatementTimer;

static StatementTimer timer;

/* The worker's slot, once claimed (worker_slots.c); NULL elsewhere. */
static const TtlVisitSlot *visit_slot = NULL;

const char *
ttl_step_name(TtlStep step)
{
	switch (step)
	{
		case TTL_STEP_BATCH:
			return "batch";
		case TTL_STEP_BACKLOG:
			return "backlog walk";
		case TTL_STEP_GUARD:
			return "restore guard estimate";
		case TTL_STEP_NONE:
			break;
	}
	return "none";
}

/* Bound the statement about to run to timeout_ms (<= 0: no bound). */
void
ttl_statement_bound_arm(int timeout_ms)
{
	memset(&timer, 0, sizeof(timer));
	if (timeout_ms <= 0)
		return;
	timer.deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	if (get_timeout_active(STATEMENT_TIMEOUT))
	{
		TimestampTz fin = get_timeout_finish_time(STATEMENT_TIMEOUT);

		if (fin <= timer.deadline)
		{
			timer.deadline = 0; /* the session's own comes first */
			return;
		}
		timer.restore_session = true;
		timer.session_fin = fin;
	}
	enable_timeout_at(STATEMENT_TIMEOUT, timer.deadline);
	timer.armed = true;
}

/* The statement is over (or failed): the session's own timer is back. */
void
ttl_statement_bound_disarm(void)
{
	if (!timer.armed)
		return;
	timer.armed = false;
	if (timer.restore_session)
		enable_timeout_at(STATEMENT_TIMEOUT, timer.session_fin);
	else
		disable_timeout(STATEMENT_TIMEOUT, false);
}

/* Whether a statement's error is its bound running out (after disarm too). */
bool
ttl_statement_bound_expired(ErrorData *edata)
{
	return edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		timer.deadline != 0 &&
		GetCurrentTimestamp() >= timer.deadline;
}

void
ttl_visit_attach(const TtlVisitSlot *slot)
{
	visit_slot = slot;
}

/* Worker, before a statement on a user table: where it is, what it does. */
void
ttl_visit_enter(Oid relid, TtlStep step)
{
	if (visit_slot != NULL)
		visit_slot->set_inflight(relid, step);
}

/* Worker, after the statement (also when it failed and was caught). */
void
ttl_visit_leave(void)
{
	if (visit_slot != NULL)
		visit_slot->set_inflight(InvalidOid, TTL_STEP_NONE);
}

/*
 * A worker waiting on purpose (for replicas, say) marks it, so that the
 * launcher leaves the wait out of the visit's time; a wait that is not
 * marked (the cost budget's sleep between batches) counts as working.
 */
void
ttl_visit_wait_begin(void)
{
	if (visit_slot != NULL)
		visit_slot->set_waiting(true);
}

void
ttl_visit_wait_end(void)
{
	if (visit_slot != NULL)
		visit_slot->set_waiting(false);
}

/* What is left of the worker's visit (ms) and its bound; else both max. */
int64
ttl_visit_time_left_ms(int64 *bound_ms)
{
	if (visit_slot != NULL)
		return visit_slot->time_left_ms(bound_ms);
	*bound_ms = PG_INT64_MAX;
	return PG_INT64_MAX;
}

/*
 * Worker: whether a statement on a user table may still start, so that it
 * ends (by its own bound, ttl.batch_timeout) before the visit's does.
 * Outside a worker, always.  With ttl.batch_timeout off, until the visit's
 * end itself.  A ttl.batch_timeout of the database's own (ALTER DATABASE
 * ... SET) longer than half the visit counts as half: the launcher's
 * floor on the visit bound was computed with its own value.
 */
bool
ttl_visit_may_start(void)
{
	int64		bound_ms;
	int64		left_ms = ttl_visit_time_left_ms(&bound_ms);
	int64		margin_ms = Min((int64) Max(ttl_batch_timeout, 0), bound_ms / 2);

	return left_ms > margin_ms;
}
