/*
 * resume_store.c
 *		Where each container's next purge batch starts (its resume point in
 *		the purge index), kept between the visits of the pool's workers in
 *		a dshash table of the scheduler's dynamic shared memory
 *		(shared_area.c), keyed by database and container: a worker loads
 *		its database's points when it arrives, saves a container's after
 *		each batch of it commits and all of them when its round ends, so
 *		the next worker goes on where it stopped, also when this one was
 *		terminated (visit.h).  The table has no fixed size: a point is never
 *		dropped for want of room (only running out of memory refuses one,
 *		with an error); a dropped database's points are forgotten
 *		(db_states.c).
 *
 * Locking: its own LWLock (tranche "ttl resume points") around each load,
 * save or forget, and under it the table's partition locks, one at a
 * time; db_states.c may call ttl_db_forget_resume_points while holding
 * its own locks (that order only, never the reverse).
 */
#include "postgres.h"

#include "lib/dshash.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "base/compat.h"
#include "purge/purge.h"
#include "scheduler/scheduler.h"

typedef struct TtlResumeKey
{
	Oid			dboid;
	Oid			relid;
} TtlResumeKey;

typedef struct TtlSavedResume
{
	TtlResumeKey key;
	TtlResumePoint point;
} TtlSavedResume;

typedef struct TtlResumeStore
{
	LWLock	   *lock;
	int			tranche_id;		/* of the table's partition locks */
	dshash_table_handle points; /* TtlResumeKey -> TtlSavedResume */
} TtlResumeStore;

static TtlResumeStore *store = NULL;
static dshash_table *points = NULL;	/* this process's attachment */

static dshash_parameters
resume_params(int tranche_id)
{
	return ttl_dshash_params(sizeof(TtlResumeKey), sizeof(TtlSavedResume), tranche_id);
}

/* From db_states.c's shmem request. */
void
ttl_resume_store_request(void)
{
	RequestAddinShmemSpace(sizeof(TtlResumeStore));
	RequestNamedLWLockTranche("ttl resume points", 1);
}

/*
 * From db_states.c's shmem attach, AddinShmemInitLock held; area: the
 * scheduler's area when it is new (the table is made in it), else NULL.
 */
void
ttl_resume_store_attach(dsa_area *area, int tranche_id)
{
	bool		found;

	store = ShmemInitStruct("ttl resume points", sizeof(TtlResumeStore), &found);
	if (!found)
	{
		memset(store, 0, sizeof(TtlResumeStore));
		store->lock = &(GetNamedLWLockTranche("ttl resume points"))->lock;
		store->tranche_id = tranche_id;
	}
	if (area != NULL)
	{
		dshash_parameters params = resume_params(store->tranche_id);
		dshash_table *made = dshash_create(area, &params, NULL);

		store->points = dshash_get_hash_table_handle(made);
		dshash_detach(made);
	}
}

static void
lock_store(LWLockMode mode)
{
	if (points == NULL)
	{
		dshash_parameters params = resume_params(store->tranche_id);
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		points = dshash_attach(ttl_sched_area(), &params, store->points, NULL);
		MemoryContextSwitchTo(old);
	}
	LWLockAcquire(store->lock, mode);
}

static void
forget_locked(Oid dboid)
{
	dshash_seq_status scan;
	TtlSavedResume *saved;

	dshash_seq_init(&scan, points, true);
	while ((saved = dshash_seq_next(&scan)) != NULL)
		if (saved->key.dboid == dboid)
			dshash_delete_current(&scan);
	dshash_seq_term(&scan);
}

/* A database is gone: its points are nobody's. */
void
ttl_db_forget_resume_points(Oid dboid)
{
	lock_store(LW_EXCLUSIVE);
	forget_locked(dboid);
	LWLockRelease(store->lock);
}

/*
 * Worker, on arrival: the resume points its predecessor left.  The map is
 * filled after the scan: hash_search may raise, never with a partition
 * lock held.
 */
void
ttl_db_load_resume_points(Oid dboid, HTAB *map)
{
	dshash_seq_status scan;
	TtlSavedResume *saved;
	List	   *found = NIL;
	ListCell   *lc;

	lock_store(LW_SHARED);
	dshash_seq_init(&scan, points, false);
	while ((saved = dshash_seq_next(&scan)) != NULL)
	{
		if (saved->key.dboid == dboid)
		{
			TtlResumePoint *copy = palloc(sizeof(TtlResumePoint));

			*copy = saved->point;
			found = lappend(found, copy);
		}
	}
	dshash_seq_term(&scan);
	LWLockRelease(store->lock);
	foreach(lc, found)
	{
		TtlResumePoint *copy = lfirst(lc);
		TtlResumePoint *point = hash_search(map, &copy->relid, HASH_ENTER, NULL);

		*point = *copy;
	}
	list_free_deep(found);
}

/* Under the lock: relid's point in dboid is now point (NULL: none). */
static void
put_locked(Oid dboid, Oid relid, const TtlResumePoint *point)
{
	TtlResumeKey key;
	TtlSavedResume *saved;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.relid = relid;
	if (point == NULL)
	{
		(void) dshash_delete_key(points, &key);
		return;
	}
	saved = dshash_find_or_insert(points, &key, &found);
	saved->point = *point;
	dshash_release_lock(points, saved);
}

/* Worker, when it leaves: its resume points replace the saved ones. */
void
ttl_db_save_resume_points(Oid dboid, HTAB *map)
{
	HASH_SEQ_STATUS status;
	TtlResumePoint *point;

	lock_store(LW_EXCLUSIVE);
	forget_locked(dboid);
	hash_seq_init(&status, map);
	while ((point = hash_seq_search(&status)) != NULL)
		put_locked(dboid, point->relid, point);
	LWLockRelease(store->lock);
}

/*
 * Worker, after a batch of relid committed: where relid resumes (NULL:
 * from its lowest key).
 */
void
ttl_db_save_resume_point(Oid dboid, Oid relid, const TtlResumePoint *point)
{
	lock_store(LW_EXCLUSIVE);
	put_locked(dboid, relid, point);
	LWLockRelease(store->lock);
}
