/*
 * purge.h
 *		Physical deletion of expired items, as the rest of the extension
 *		uses it: the round over every due container (purge_round.c), the
 *		cost budget and the executor hook (purge_batch.c).  The family's
 *		internals are in purge_internal.h.
 */
#ifndef TTL_PURGE_H
#define TTL_PURGE_H

#include "datatype/timestamp.h"
#include "executor/execdesc.h"
#include "storage/itemptr.h"

/*
 * A purge round over every due container, one batch per container in turn
 * (fair), each batch committed by the caller's callback, which also decides
 * whether the round goes on (the worker stops when ttl.enabled goes off).
 */
struct TtlResumePoint;

typedef struct TtlRoundOps
{
	bool		(*next_transaction) (void *arg);	/* commit, start another */
	void		(*report) (void *arg, const char *activity);
	void	   *arg;
	bool		all_owners;		/* worker: every container; else the caller's */
	bool		walks;			/* direct path: one bitmap walk per container
								 * for the round (CALL ttl.run_purge) */
	int			max_round_ms;	/* > 0: end the round after this long */
	bool		unfinished;		/* out: the round ended with work left */
	struct HTAB *resume;		/* where unfinished containers stopped */
	/* the worker's visit bound (visit.h); all three unset for run_purge */
	bool		backoff;		/* leave backed-off containers out; a batch
								 * that commits ends its container's */
	bool		record_backoff; /* a failing batch backs its container off
								 * (worker and run_purge; ttl.purge() is the
								 * caller's own) */
	bool		(*may_start) (void *arg);	/* false: end the round now */
	uint64		first;			/* passes start at container first % n */
	int			max_container_ms;	/* > 0: ttl.max_purge_time (worker) */
	void		(*committed) (void *arg, Oid relid,
							  const struct TtlResumePoint *point);	/* a batch
																	 * committed;
																	 * NULL
																	 * point:
																	 * from the
																	 * start */
} TtlRoundOps;

/*
 * Where a bounded round left an unfinished container (an entry of the
 * resume map, keyed by relid); kind is a TtlDueKind (document/due_range.h).
 * The worker keeps them in shared memory between its visits (worker.c).
 */
typedef struct TtlResumePoint
{
	Oid			relid;
	int			kind;
	Oid			leaf;
	int64		lower_key;
	int64		deleted;
	TimestampTz progress_started;	/* ttl.purge_progress: since when, */
	int64		progress_due;	/* and the due rows counted then (< 0: not) */
} TtlResumePoint;

extern struct HTAB *ttl_create_resume_map(void);
extern int64 ttl_purge_round(TtlRoundOps *ops);

extern void ttl_cost_sleep(void);
extern void ttl_purge_commit_async(void);
extern void ttl_purge_executor_started(QueryDesc *queryDesc);
extern void ttl_with_immediate_triggers(void (*step) (void *arg), void *arg);

/* purge_replace.c: rule 10's purge delete of one item a write replaces */
struct TtlContainer;
extern bool ttl_purge_replaced_item(Oid container, Oid leaf, ItemPointer tid,
									const struct TtlContainer *policy, int64 now_seconds);

#endif							/* TTL_PURGE_H */
