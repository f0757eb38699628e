/*
 * replication_lag.c
 *		How far the replicas are behind, read from shared memory, for
 *		ttl.max_replication_lag (1.7).  What counts: the streaming
 *		standbys of pg_stat_replication that report a replay position (the
 *		WalSnd array; a standby in catch-up counts too: it is the one a
 *		purge burst would leave furthest behind) and the replication slots
 *		a process is attached to (ReplicationSlotCtl, active_pid); not an
 *		inactive or invalidated slot, nor a name in
 *		ttl.replication_lag_ignore (a standby's application_name, compared
 *		without regard to case as synchronous_standby_names does, or a slot's
 *		name; a walsender attached to an ignored slot is left out too).
 *
 *		The lag is measured from GetFlushRecPtr(), not the insert position:
 *		a replica can only be sent WAL that is flushed, so WAL still in the
 *		buffers (the purge commits asynchronously) is no replica's fault
 *		and would count up to wal_buffers of phantom lag against a replica
 *		that is fully caught up.  A standby's distance is to its replay
 *		position (what a reader of the standby sees); a logical slot's to
 *		its confirmed_flush (what its consumer has acknowledged; restart_lsn
 *		can trail far behind for a long transaction that is no consumer's
 *		lag); a physical slot's to its restart_lsn (the standby's flush).
 *
 *		The launcher calls this connected to no database: no SQL, no
 *		catalog; the standbys' application_names come from the backends'
 *		status (pg_stat_activity's source).
 *
 * Locking: each walsender's spinlock and ReplicationSlotControlLock (shared)
 * with each slot's spinlock, held only to copy a few fields, as
 * pg_stat_get_wal_senders() and pg_get_replication_slots() do.  No lock is
 * held while waiting.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/slot.h"
#include "replication/walsender_private.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "base/compat.h"
#include "base/replication_lag.h"
#include "base/settings.h"
#include "base/visit.h"

/* How often a waiter looks again. */
#define TTL_LAG_POLL_MS 200

static uint32 lag_wait_event = 0;

/* The names of ttl.replication_lag_ignore, in the caller's memory. */
static List *
ignored_names(void)
{
	List	   *names = NIL;
	char	   *copy;

	if (ttl_replication_lag_ignore == NULL || ttl_replication_lag_ignore[0] == '\0')
		return NIL;
	copy = pstrdup(ttl_replication_lag_ignore);
	/* the check hook accepted it */
	if (!SplitIdentifierString(copy, ',', &names))
		return NIL;
	return names;
}

static bool
name_ignored(List *ignored, const char *name)
{
	ListCell   *lc;

	if (name == NULL || name[0] == '\0')
		return false;
	foreach(lc, ignored)
	{
		if (pg_strcasecmp((const char *) lfirst(lc), name) == 0)
			return true;
	}
	return false;
}

static int64
distance(XLogRecPtr now, XLogRecPtr pos)
{
	return now > pos ? (int64) (now - pos) : 0;
}

static void
note_worst(TtlReplicationLag *worst, int64 bytes, const char *kind, const char *name)
{
	if (bytes <= worst->lag_bytes && worst->who[0] != '\0')
		return;
	worst->lag_bytes = bytes;
	snprintf(worst->who, TTL_LAG_WHO_LEN, "%s \"%s\"", kind, name);
}

/*
 * The active slots: their lag, and the processes attached to the ignored
 * ones (a standby streaming through an ignored slot is left out too).
 */
static List *
measure_slots(XLogRecPtr now, List *ignored, TtlReplicationLag *worst)
{
	List	   *ignored_pids = NIL;
	int			i;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];
		ReplicationSlotPersistentData data;
		pid_t		active_pid;
		XLogRecPtr	pos;

		if (!s->in_use)
			continue;
		SpinLockAcquire(&s->mutex);
		data = s->data;
		active_pid = s->active_pid;
		SpinLockRelease(&s->mutex);
		/* inactive, or invalidated (wal_status 'lost'): no one to wait for */
		if (active_pid == 0 || ttl_slot_invalidated(&data))
			continue;
		if (name_ignored(ignored, NameStr(data.name)))
		{
			ignored_pids = lappend_int(ignored_pids, (int) active_pid);
			continue;
		}
		pos = OidIsValid(data.database) ? data.confirmed_flush : data.restart_lsn;
		if (XLogRecPtrIsInvalid(pos))
			continue;			/* nothing reserved yet: nothing to wait for */
		note_worst(worst, distance(now, pos), "slot", NameStr(data.name));
	}
	LWLockRelease(ReplicationSlotControlLock);
	return ignored_pids;
}

/* A walsender's application_name, from the backends' status; "" if gone. */
static const char *
walsender_name(pid_t pid)
{
	int			n = pgstat_fetch_stat_numbackends();
	int			i;

	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *entry = ttl_local_beentry(i);

		if (entry != NULL && entry->backendStatus.st_procpid == pid)
			return entry->backendStatus.st_appname;
	}
	return "";
}

static void
measure_standbys(XLogRecPtr now, List *ignored, List *ignored_pids,
				 TtlReplicationLag *worst)
{
	bool		status_read = false;
	int			i;

	for (i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *walsnd = &WalSndCtl->walsnds[i];
		pid_t		pid;
		WalSndState state;
		XLogRecPtr	apply;
		const char *name;
		char		fallback[32];

		SpinLockAcquire(&walsnd->mutex);
		pid = walsnd->pid;
		state = walsnd->state;
		apply = walsnd->apply;
		SpinLockRelease(&walsnd->mutex);
		if (pid == 0 || XLogRecPtrIsInvalid(apply) ||
			(state != WALSNDSTATE_STREAMING && state != WALSNDSTATE_CATCHUP) ||
			list_member_int(ignored_pids, (int) pid))
			continue;
		if (!status_read)
		{
			/* a fresh copy: the launcher runs for days */
			pgstat_clear_snapshot();
			status_read = true;
		}
		name = walsender_name(pid);
		if (name_ignored(ignored, name))
			continue;
		if (name[0] == '\0')
		{
			snprintf(fallback, sizeof(fallback), "walsender %d", (int) pid);
			name = fallback;
		}
		note_worst(worst, distance(now, apply), "standby", name);
	}
}

/*
 * Whether a replica that counts is further behind than
 * ttl.max_replication_lag; *lag names the one furthest behind.  False when
 * the setting is off (-1) and during recovery (a standby does not purge).
 */
bool
ttl_replication_lag_over(TtlReplicationLag *lag)
{
	static MemoryContext cxt = NULL;
	MemoryContext old;
	XLogRecPtr	now;
	List	   *ignored;
	List	   *ignored_pids;

	lag->lag_bytes = 0;
	lag->who[0] = '\0';
	if (ttl_max_replication_lag < 0 || RecoveryInProgress())
		return false;
	if (cxt == NULL)
		cxt = AllocSetContextCreate(TopMemoryContext, "ttl replication lag",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	now = GetFlushRecPtr(NULL);
	ignored = ignored_names();
	ignored_pids = measure_slots(now, ignored, lag);
	measure_standbys(now, ignored, ignored_pids, lag);
	MemoryContextSwitchTo(old);
	MemoryContextReset(cxt);
	return lag->who[0] != '\0' &&
		lag->lag_bytes > (int64) ttl_max_replication_lag * 1024 * 1024;
}

/*
 * Wait at most max_ms for the lag to drop within ttl.max_replication_lag:
 * true when it has (at once, usually), false with *lag the replica still
 * behind.  A worker's wait is marked, so it does not count against its
 * visit (visit.c).
 */
bool
ttl_replication_lag_wait(int64 max_ms, TtlReplicationLag *lag)
{
	TimestampTz deadline;
	bool		over;

	if (!ttl_replication_lag_over(lag))
		return true;
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), max_ms);
	ttl_visit_wait_begin();
	for (;;)
	{
		long		left_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

		if (left_ms <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left_ms, TTL_LAG_POLL_MS),
						 ttl_wait_event(&lag_wait_event, "TtlReplicationLag"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		over = ttl_replication_lag_over(lag);
		if (!over)
		{
			ttl_visit_wait_end();
			return true;
		}
	}
	ttl_visit_wait_end();
	return !ttl_replication_lag_over(lag);
}
