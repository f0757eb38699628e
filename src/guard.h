/*
 * guard.h
 *		The restore guard (guard.c): automatic purging holds a container
 *		whose due backlog exceeds ttl.restore_guard_fraction of its rows
 *		after a restore, a start from a base backup, point-in-time recovery
 *		or a clock jump, and when it is enabled over old documents; the
 *		estimate it decides on is guard_estimate.c's (guard_estimate.h);
 *		the events are detected in shared memory by guard_events.c.
 */
#ifndef TTL_GUARD_H
#define TTL_GUARD_H

#include "registry.h"

extern double ttl_restore_guard_fraction;
extern int	ttl_clock_jump_threshold;

/* guard.c */
extern void ttl_guard_define_settings(void);

/*
 * One purge round's view of the guard: begin it before the round's
 * containers are purged, ask for each whether it is held, end it when they
 * have all been asked.
 */
typedef struct TtlGuardRound
{
	bool		active;			/* the registry has the guard's columns */
	bool		check_all;		/* an event (start, clock jump) is unchecked */
	bool		failed;			/* a check failed: the event stays unchecked */
	uint64		generation;		/* the event's, in shared memory */
	char	   *event_reason;
	struct HTAB *rows;			/* relid -> the guard's registry columns */
} TtlGuardRound;

extern void ttl_guard_round_begin(TtlGuardRound *round);
extern bool ttl_guard_holds(TtlGuardRound *round, Oid relid);
extern void ttl_guard_after_enable(Oid relid);
extern bool ttl_guard_held_now(Oid relid);
extern void ttl_guard_release(Oid relid);

/* guard_events.c: the events (start, clock jump) in shared memory */
extern void ttl_install_guard_hooks(void);
extern void ttl_guard_events_begin(TtlGuardRound *round);
extern void ttl_guard_round_end(TtlGuardRound *round);

#endif							/* TTL_GUARD_H */
