/*
 * visit.h
 *		The bounds of a purge worker's visit (1.7: one container never holds a worker): the time
 *		bound of each statement ttl runs on a user table (visit.c), the
 *		in-flight record a worker keeps in its slot before each such
 *		statement and the waits that do not count against the visit
 *		(worker_slots.c), and the durable back-off of a container whose
 *		statements overran (backoff.c).
 */
#ifndef TTL_VISIT_H
#define TTL_VISIT_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/elog.h"

/* What a worker is doing in a container (its in-flight record). */
typedef enum TtlStep
{
	TTL_STEP_NONE = 0,
	TTL_STEP_BATCH,				/* a purge batch (purge_round.c) */
	TTL_STEP_BACKLOG,			/* the end-of-visit backlog walk (worker.c) */
	TTL_STEP_GUARD				/* the restore guard's estimate (guard.c) */
} TtlStep;

extern const char *ttl_step_name(TtlStep step);

/* visit.c: the time bound of one statement on a user table */
extern void ttl_statement_bound_arm(int timeout_ms);
extern void ttl_statement_bound_disarm(void);
extern bool ttl_statement_bound_expired(ErrorData *edata);
extern bool ttl_visit_may_start(void);

/*
 * visit.c: the worker's in-flight record and its visit's clock.  They live
 * in the worker's slot, in the scheduler's shared memory (worker_slots.c),
 * which lends these to visit.c once the worker has claimed it: so the
 * modules below the scheduler (purge_round.c, guard.c) keep the record
 * without calling up into it.  Outside a worker (ttl.run_purge,
 * ttl.enable) nothing is lent, and there is nothing to record.
 */
typedef struct TtlVisitSlot
{
	void		(*set_inflight) (Oid relid, TtlStep step);
	void		(*set_waiting) (bool waiting);
	int64		(*time_left_ms) (int64 *bound_ms);
} TtlVisitSlot;

extern void ttl_visit_attach(const TtlVisitSlot *slot);
extern void ttl_visit_enter(Oid relid, TtlStep step);
extern void ttl_visit_leave(void);
extern void ttl_visit_wait_begin(void);
extern void ttl_visit_wait_end(void);
extern int64 ttl_visit_time_left_ms(int64 *bound_ms);

#endif							/* TTL_VISIT_H */
