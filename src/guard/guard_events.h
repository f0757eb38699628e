/*
 * guard_events.h
 *		The restore guard's events in shared memory (guard_events.c): a
 *		start from a base backup or for point-in-time recovery, a clock
 *		jump, and which of them each database has checked; and one purge
 *		round's view of the guard, which guard.c fills in per container.
 */
#ifndef TTL_GUARD_EVENTS_H
#define TTL_GUARD_EVENTS_H

extern int	ttl_clock_jump_threshold;

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

/* ttl.c's shared-memory hooks */
extern void ttl_guard_shmem_request(void);
extern void ttl_guard_shmem_startup(void);
extern void ttl_guard_events_begin(TtlGuardRound *round);
extern void ttl_guard_round_end(TtlGuardRound *round);

#endif							/* TTL_GUARD_EVENTS_H */
