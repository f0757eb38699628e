/*
 * replace_raise.h
 *		Rule 10's floor recomputed from a leaf's indexes (replace_raise.c).
 *		Internal to stamp/.
 */
#ifndef TTL_REPLACE_RAISE_H
#define TTL_REPLACE_RAISE_H

#include "utils/rel.h"

#include "registry/registry.h"
#include "stamp/replace_floor.h"

extern bool ttl_floor_raise(TtlFloorSlot *slot, uint64 word, Relation rel,
							const TtlContainer *policy, AttrNumber doc_attnum);

#endif							/* TTL_REPLACE_RAISE_H */
