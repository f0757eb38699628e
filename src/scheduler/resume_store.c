/*
 * resume_store.c
 *		Where each container's next purge batch starts (its resume point in
 *		the purge index), kept in fixed-size shared memory between the
 *		visits of the pool's workers: a worker loads its database's points
 *		when it arrives, saves a container's after each batch of it commits
 *		and all of them when its round ends, so the next worker goes on
 *		where it stopped, also when this one was terminated (visit.h).  A
 *		point that finds no room (TTL_MAX_RESUME_POINTS) is dropped, which
 *		only costs that container a walk from its lowest key; a dropped
 *		database's points are forgotten (db_states.c).
 *
 * Locking: its own LWLock (tranche "ttl resume points") around each load,
 * save or forget; db_states.c may call ttl_db_forget_resume_points while
 * holding its own lock (that order only, never the reverse).
 */
#include "postgres.h"

#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "purge/purge.h"
#include "scheduler/scheduler.h"

#define TTL_MAX_RESUME_POINTS 1024

typedef struct TtlSavedResume
{
	Oid			dboid;			/* InvalidOid: a free entry */
	TtlResumePoint point;
} TtlSavedResume;

typedef struct TtlResumeStore
{
	LWLock	   *lock;
	TtlSavedResume points[TTL_MAX_RESUME_POINTS];
} TtlResumeStore;

static TtlResumeStore *store = NULL;

/* From db_states.c's shmem request. */
void
ttl_resume_store_request(void)
{
	RequestAddinShmemSpace(sizeof(TtlResumeStore));
	RequestNamedLWLockTranche("ttl resume points", 1);
}

/* From db_states.c's shmem attach, AddinShmemInitLock held. */
void
ttl_resume_store_attach(void)
{
	bool		found;

	store = ShmemInitStruct("ttl resume points", sizeof(TtlResumeStore), &found);
	if (!found)
	{
		memset(store, 0, sizeof(TtlResumeStore));
		store->lock = &(GetNamedLWLockTranche("ttl resume points"))->lock;
	}
}

static void
forget_locked(Oid dboid)
{
	int			i;

	for (i = 0; i < TTL_MAX_RESUME_POINTS; i++)
		if (store->points[i].dboid == dboid)
			store->points[i].dboid = InvalidOid;
}

/* A database is gone: its points are nobody's. */
void
ttl_db_forget_resume_points(Oid dboid)
{
	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	forget_locked(dboid);
	LWLockRelease(store->lock);
}

/* Worker, on arrival: the resume points its predecessor left. */
void
ttl_db_load_resume_points(Oid dboid, HTAB *map)
{
	int			i;

	LWLockAcquire(store->lock, LW_SHARED);
	for (i = 0; i < TTL_MAX_RESUME_POINTS; i++)
	{
		TtlSavedResume *saved = &store->points[i];
		TtlResumePoint *point;

		if (saved->dboid != dboid)
			continue;
		point = hash_search(map, &saved->point.relid, HASH_ENTER, NULL);
		*point = saved->point;
	}
	LWLockRelease(store->lock);
}

/* Worker, when it leaves: its resume points replace the saved ones. */
void
ttl_db_save_resume_points(Oid dboid, HTAB *map)
{
	HASH_SEQ_STATUS status;
	TtlResumePoint *point;
	int			next = 0;

	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	forget_locked(dboid);
	hash_seq_init(&status, map);
	while ((point = hash_seq_search(&status)) != NULL)
	{
		while (next < TTL_MAX_RESUME_POINTS && store->points[next].dboid != InvalidOid)
			next++;
		if (next == TTL_MAX_RESUME_POINTS)
		{
			hash_seq_term(&status);
			break;				/* no room: a walk from the start next time */
		}
		store->points[next].dboid = dboid;
		store->points[next].point = *point;
	}
	LWLockRelease(store->lock);
}

/*
 * Worker, after a batch of relid committed: where relid resumes (NULL:
 * from its lowest key).
 */
void
ttl_db_save_resume_point(Oid dboid, Oid relid, const TtlResumePoint *point)
{
	TtlSavedResume *found = NULL;
	TtlSavedResume *free_entry = NULL;
	int			i;

	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	for (i = 0; i < TTL_MAX_RESUME_POINTS; i++)
	{
		TtlSavedResume *saved = &store->points[i];

		if (saved->dboid == dboid && saved->point.relid == relid)
		{
			found = saved;
			break;
		}
		if (free_entry == NULL && saved->dboid == InvalidOid)
			free_entry = saved;
	}
	if (point == NULL)
	{
		if (found != NULL)
			found->dboid = InvalidOid;
	}
	else if (found != NULL || (found = free_entry) != NULL)
	{
		found->dboid = dboid;
		found->point = *point;
	}
	/* else no room: a walk from the start next time */
	LWLockRelease(store->lock);
}
