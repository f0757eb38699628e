/*
 * shared_area.c
 *		The scheduler's dynamic shared memory: one dsa area whose first
 *		piece lies in the main shared memory (as PostgreSQL's statistics
 *		keep theirs), in which db_states.c and resume_store.c keep their
 *		dshash tables.  The area grows in dynamic shared memory segments as
 *		databases and resume points are added, so the scheduler has no
 *		fixed cap on either: what it holds is bounded by memory only.
 *
 * The postmaster creates the area (ttl_sched_area_create) while the
 * shared memory is set up, the tables are made in it, and
 * ttl_sched_area_created lets go; every other process attaches on first
 * use (ttl_sched_area), for its lifetime.
 *
 * Locking: the dsa's own (tranche "ttl"); the tables lock themselves and
 * their owners' files say in what order.
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "utils/dsa.h"
#include "utils/memutils.h"

#include "scheduler/scheduler.h"

/*
 * The piece in the main shared memory: room for the dsa's control and the
 * two tables' directories, so that the postmaster creates no segment.
 */
#define TTL_AREA_INIT_SIZE (256 * 1024)

static void *area_place = NULL;
static dsa_area *area = NULL;

/* From the shmem request (worker_slots.c). */
Size
ttl_sched_area_size(void)
{
	return TTL_AREA_INIT_SIZE;
}

/*
 * From the shmem startup, AddinShmemInitLock held: the place of the area;
 * when it is new (*created), the area is made there and returned for the
 * tables to be made in it, until ttl_sched_area_created.
 */
dsa_area *
ttl_sched_area_create(int tranche_id, bool *created)
{
	bool		found;

	area_place = ShmemInitStruct("ttl scheduler area", TTL_AREA_INIT_SIZE, &found);
	*created = !found;
	if (found)
		return NULL;
	area = dsa_create_in_place(area_place, TTL_AREA_INIT_SIZE, tranche_id, NULL);
	dsa_pin(area);
	/* the tables' directories go in the main shared memory */
	dsa_set_size_limit(area, TTL_AREA_INIT_SIZE);
	return area;
}

/* The tables are made: the creator (the postmaster) lets go of the area. */
void
ttl_sched_area_created(void)
{
	dsa_set_size_limit(area, (size_t) -1);
	dsa_detach(area);
	area = NULL;
}

/* The area, attached on first use for the process's lifetime; NULL without it. */
dsa_area *
ttl_sched_area(void)
{
	MemoryContext old;

	if (area != NULL || area_place == NULL)
		return area;
	old = MemoryContextSwitchTo(TopMemoryContext);
	area = dsa_attach_in_place(area_place, NULL);
	dsa_pin_mapping(area);
	MemoryContextSwitchTo(old);
	return area;
}
