/*
 * replace_floor.h
 *		Rule 10's due floor (replace_floor.c): per leaf, in shared memory, a
 *		time before which no item of the leaf can be expired, so that a row
 *		written before it skips the probe.  Internal to stamp/ (ttl.c calls
 *		the shared-memory steps and the resets).
 */
#ifndef TTL_REPLACE_FLOOR_H
#define TTL_REPLACE_FLOOR_H

#include "utils/rel.h"

#include "registry/registry.h"

typedef struct TtlFloorSlot TtlFloorSlot;

/* ttl.c's steps */
extern void ttl_floor_shmem_request(void);
extern void ttl_floor_shmem_startup(void);
extern void ttl_floor_reset_container(Oid container);

/* stamp/'s */
extern TtlFloorSlot *ttl_floor_slot(Oid relid, bool create);
extern bool ttl_floor_enter(TtlFloorSlot *slot);
extern bool ttl_floor_may_raise(TtlFloorSlot *slot, int64 now_seconds, uint64 *word);
extern void ttl_floor_lower(TtlFloorSlot *slot, int64 expiry);
extern bool ttl_floor_skips(TtlFloorSlot *slot, int64 now_seconds);
extern void ttl_floor_reset(Oid relid);
extern void ttl_floor_xact_end(void);

extern bool ttl_floor_raise(TtlFloorSlot *slot, uint64 word, Relation rel,
							const TtlContainer *policy, AttrNumber doc_attnum);

#endif							/* TTL_REPLACE_FLOOR_H */
