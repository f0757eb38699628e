/*
 * due_floor.h
 *		Rule 10's due floor (due_floor.c): per leaf, in shared memory, the
 *		lowest purge key of each range any row of the leaf can carry, so a
 *		write can tell without a probe that no item of the leaf is due.
 */
#ifndef TTL_DUE_FLOOR_H
#define TTL_DUE_FLOOR_H

#include "utils/rel.h"

typedef struct TtlFloor TtlFloor;

/* What a statement's look saw of its leaf's due writes and the policies */
typedef struct TtlLookMark
{
	uint64		due_writes;
	uint64		epoch;
	int			slot;			/* the slot's number (due_set.c) */
	uint64		generation;		/* the floor's (relcache invalidations) */
} TtlLookMark;

/* ttl.c's steps: shmem_request, shmem_startup; the relcache callback */
extern void ttl_floor_shmem_request(void);
extern void ttl_floor_shmem_startup(void);
extern void ttl_floor_invalidate(Oid relid);

extern TtlFloor *ttl_floor_find(Oid relid, bool create);
extern void ttl_floor_lower(TtlFloor *floor, int64 key);
extern bool ttl_floor_validate(TtlFloor *floor, Relation rel, Oid purge_index,
							   AttrNumber doc_attnum);
extern bool ttl_floor_nothing_due(TtlFloor *floor, Oid relid, int32 default_ttl,
								  int64 now_seconds);


/* the look's guard: due writes in flight, policy changes */
extern void ttl_floor_announce_due(TtlFloor **floorp, Oid relid);
extern void ttl_floor_xact_end(void);
extern void ttl_floor_policy_changed(void);
extern uint64 ttl_floor_epoch(void);
extern bool ttl_floor_look_begin(TtlFloor *floor, Oid relid, uint64 epoch,
								 TtlLookMark *mark);
extern bool ttl_floor_look_holds(TtlFloor *floor, const TtlLookMark *mark);

#endif							/* TTL_DUE_FLOOR_H */
