/*
 * guard.h
 *		The restore guard (guard.c): automatic purging holds a container
 *		whose due backlog exceeds ttl.restore_guard_fraction of its rows
 *		after a restore, a start from a base backup, point-in-time recovery
 *		or a clock jump, and when it is enabled over old documents; the
 *		estimate it decides on is guard_estimate.c's (guard_estimate.h);
 *		the events are detected in shared memory by guard_events.c
 *		(guard_events.h, which also holds TtlGuardRound).
 */
#ifndef TTL_GUARD_H
#define TTL_GUARD_H

#include "guard/guard_events.h"
#include "registry/registry.h"

extern double ttl_restore_guard_fraction;

/* guard.c */
extern void ttl_guard_define_settings(void);
extern void ttl_guard_round_begin(TtlGuardRound *round);
extern bool ttl_guard_holds(TtlGuardRound *round, Oid relid);
extern void ttl_guard_unchecked(TtlGuardRound *round, Oid relid);
extern void ttl_guard_after_enable(Oid relid);
extern bool ttl_guard_held_now(Oid relid);
extern void ttl_guard_release(Oid relid);

#endif							/* TTL_GUARD_H */
