/*
 * due_set.c
 *		Rule 10's shared due sets: the hashes of the keys of a leaf's due
 *		items, as a statement's due filter listed them (replace.c), kept in
 *		shared memory so that the next statements, in any backend, need not
 *		read every due item's row again.  A set serves a statement only if
 *		its look (due_floor.c's ttl_floor_look_begin) matches the set's
 *		key: the same leaf, floor slot, due writes (no due row announced
 *		since: a change of the slot's owner bumps them too), policy epoch
 *		(no policy change committed since), floor generation (no relcache
 *		invalidation of the leaf since: an index changed, VACUUM), default
 *		and unique indexes.  The set holds the items due at the second it
 *		was made; items that came due since are read by the statement from
 *		the purge index (only the key range between that second and its
 *		own), and items written since that are due already were announced
 *		(due writes moved).  Keys of items gone since are only extra
 *		probes.
 *
 * Memory: DUE_SETS sets of DUE_SET_CAPACITY hashes (all its indexes
 * together), one per leaf by a hash of the leaf's identity (two leaves on
 * one set replace each other); a leaf with more due keys has no set.
 *
 * Locking: a seqlock per set.  A publisher takes the version from even to
 * odd with a compare-and-swap (a publisher that fails gives up: the set is
 * being written), writes, and makes it even again; a reader copies the
 * header and the hashes between two reads of an even, unchanged version,
 * else it has no set.  Nothing waits.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "stamp/due_set.h"

#define DUE_SETS			16
#define DUE_SET_CAPACITY	(64 * 1024)

typedef struct DueSet
{
	pg_atomic_uint64 version;	/* odd: being written */
	Oid			dboid;			/* InvalidOid: empty */
	TtlDueSetKey key;
	int64		made_seconds;
	int			counts[TTL_DUE_SET_INDEXES];
	uint32		hashes[DUE_SET_CAPACITY];
} DueSet;

static DueSet *due_sets = NULL;

/* shmem_request_hook's step (ttl.c) */
void
ttl_due_set_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(DueSet) * DUE_SETS));
}

/* shmem_startup_hook's step (ttl.c) */
void
ttl_due_set_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	due_sets = ShmemInitStruct("ttl rule 10 due sets", sizeof(DueSet) * DUE_SETS, &found);
	if (!found)
	{
		int			i;

		for (i = 0; i < DUE_SETS; i++)
		{
			pg_atomic_init_u64(&due_sets[i].version, 0);
			due_sets[i].dboid = InvalidOid;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

static DueSet *
set_of(Oid relid)
{
	return &due_sets[(MyDatabaseId * 31 + relid) % DUE_SETS];
}

static bool
same_key(const TtlDueSetKey *a, const TtlDueSetKey *b)
{
	int			i;

	if (a->relid != b->relid || a->mark.slot != b->mark.slot ||
		a->mark.due_writes != b->mark.due_writes || a->mark.epoch != b->mark.epoch ||
		a->mark.generation != b->mark.generation || a->default_ttl != b->default_ttl ||
		a->nindexes != b->nindexes)
		return false;
	for (i = 0; i < a->nindexes; i++)
	{
		if (a->indexes[i] != b->indexes[i])
			return false;
	}
	return true;
}

/*
 * The set made under key, if there is one: *made_seconds, and per index
 * its count and hashes (sorted; allocated in mcxt, at least 16 each).
 */
bool
ttl_due_set_fetch(const TtlDueSetKey *key, int64 *made_seconds, int *counts,
				  uint32 **hashes, MemoryContext mcxt)
{
	DueSet	   *set;
	uint64		v;
	int			i, at;
	bool		same;

	if (due_sets == NULL || key->nindexes > TTL_DUE_SET_INDEXES)
		return false;
	set = set_of(key->relid);
	v = pg_atomic_read_u64(&set->version);
	if (v & 1)
		return false;
	pg_read_barrier();
	same = set->dboid == MyDatabaseId && same_key(&set->key, key);
	if (!same)
		return false;
	*made_seconds = set->made_seconds;
	at = 0;
	for (i = 0; i < key->nindexes; i++)
	{
		int			n = set->counts[i];

		if (n < 0 || n > DUE_SET_CAPACITY - at)
			return false;		/* torn: the version says so below */
		counts[i] = n;
		hashes[i] = MemoryContextAlloc(mcxt, sizeof(uint32) * Max(n, 16));
		memcpy(hashes[i], &set->hashes[at], sizeof(uint32) * n);
		at += n;
	}
	pg_read_barrier();
	return pg_atomic_read_u64(&set->version) == v;
}

/* Publish the hashes listed under key (each index's sorted) as of made_seconds. */
void
ttl_due_set_publish(const TtlDueSetKey *key, int64 made_seconds, const int *counts,
					uint32 *const *hashes)
{
	DueSet	   *set;
	uint64		v;
	int			i, total = 0, at = 0;

	if (due_sets == NULL || key->nindexes > TTL_DUE_SET_INDEXES)
		return;
	for (i = 0; i < key->nindexes; i++)
		total += counts[i];
	if (total > DUE_SET_CAPACITY)
		return;
	set = set_of(key->relid);
	v = pg_atomic_read_u64(&set->version);
	if ((v & 1) || !pg_atomic_compare_exchange_u64(&set->version, &v, v + 1))
		return;					/* another publisher is writing it */
	/* the compare-and-swap is a full barrier: readers see odd first */
	set->dboid = MyDatabaseId;
	set->key = *key;
	set->made_seconds = made_seconds;
	for (i = 0; i < key->nindexes; i++)
	{
		set->counts[i] = counts[i];
		if (counts[i] > 0)
			memcpy(&set->hashes[at], hashes[i], sizeof(uint32) * counts[i]);
		at += counts[i];
	}
	pg_write_barrier();
	pg_atomic_write_u64(&set->version, v + 2);
}
