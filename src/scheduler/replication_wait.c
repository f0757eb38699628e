/*
 * replication_wait.c
 *		The background purge waits for lagging replicas
 *		(ttl.max_replication_lag, 1.7).  An episode starts when the
 *		launcher (before starting a visit) or a worker (between batches)
 *		finds a replica that counts further behind than the setting
 *		(base/replication_lag.c), and ends when one of them finds none.
 *		While it lasts the launcher starts no visit and a running worker
 *		waits after the batch in progress (for a naptime at most, then
 *		ends its visit: worker.c); the episode (since
 *		when, which standby or slot, how far behind) is kept here for
 *		ttl.worker_pool and ttl.databases, and logged once when it starts
 *		and once when it ends, whoever notices.  The worker marks its
 *		wait (base/visit.c), so it does not count against the visit bound.
 *
 * Locking: a spinlock over the episode, held to copy or update a few
 * fields; the measurement is made before it is taken.  Shared memory is
 * requested and attached from ttl.c's hooks; without the preload there is
 * none and no episode (CALL ttl.run_purge measures for itself).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "base/replication_lag.h"
#include "base/settings.h"
#include "scheduler/replication_wait.h"

typedef struct TtlReplicationWait
{
	slock_t		mutex;
	TimestampTz since;			/* 0: not waiting */
	TtlReplicationLag lag;		/* the replica furthest behind, last seen */
} TtlReplicationWait;

static TtlReplicationWait *wait_state = NULL;

void
ttl_replication_wait_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(TtlReplicationWait)));
}

void
ttl_replication_wait_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	wait_state = ShmemInitStruct("ttl replication wait", sizeof(TtlReplicationWait), &found);
	if (!found)
	{
		memset(wait_state, 0, sizeof(TtlReplicationWait));
		SpinLockInit(&wait_state->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Whether the background purge must wait for replicas now: the launcher
 * before it starts a visit, a worker between batches.  Starts or ends the
 * episode, logging each once.
 */
bool
ttl_replication_wait_check(bool by_launcher)
{
	TtlReplicationLag lag;
	bool		over = ttl_replication_lag_over(&lag);
	bool		started = false;
	bool		ended = false;
	TimestampTz since;

	if (wait_state == NULL)
		return over;
	SpinLockAcquire(&wait_state->mutex);
	since = wait_state->since;
	if (over)
	{
		if (since == 0)
		{
			wait_state->since = since = GetCurrentTimestamp();
			started = true;
		}
		wait_state->lag = lag;
	}
	else if (since != 0)
	{
		wait_state->since = 0;
		ended = true;
	}
	SpinLockRelease(&wait_state->mutex);

	if (started)
		ereport(LOG,
				(errmsg("ttl purge waits for replication: %s is " INT64_FORMAT " bytes behind, more than ttl.max_replication_lag (%d MB)",
						lag.who, lag.lag_bytes, ttl_max_replication_lag),
				 by_launcher ?
				 errdetail("The launcher starts no purge visit until it has caught up.") :
				 errdetail("The purge worker waits after the batch in progress, for a naptime at most, then ends its visit; the launcher starts no other until it has caught up."),
				 errhint("ttl.replication_lag_ignore leaves out a standby or slot that is meant to lag.")));
	if (ended)
		ereport(LOG,
				(errmsg("ttl purge resumes: replication is within ttl.max_replication_lag again"),
				 errdetail("It waited %.0f s.",
						   (double) (GetCurrentTimestamp() - since) / USECS_PER_SEC)));
	return over;
}

/* For the pool views: the episode now, false when there is none. */
bool
ttl_replication_wait_report(TimestampTz *since, TtlReplicationLag *lag)
{
	if (wait_state == NULL)
		return false;
	SpinLockAcquire(&wait_state->mutex);
	*since = wait_state->since;
	*lag = wait_state->lag;
	SpinLockRelease(&wait_state->mutex);
	return *since != 0;
}
