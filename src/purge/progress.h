/*
 * progress.h
 *		What a running purge shows in ttl.purge_progress (progress.c): one
 *		slot per backend in ttl's own shared memory, written by the purging
 *		backend alone and read with a seqlock.
 */
#ifndef TTL_PROGRESS_H
#define TTL_PROGRESS_H

#include "datatype/timestamp.h"

/* The phases, as ttl.purge_progress names them (progress.c). */
typedef enum TtlPhase
{
	TTL_PHASE_WALKING,			/* finding due rows (and counting them) */
	TTL_PHASE_DELETING,
	TTL_PHASE_ARCHIVING,		/* inserting deleted rows into the archive */
	TTL_PHASE_RETIRING,			/* retiring a whole partition */
	TTL_PHASE_THROTTLED,		/* the cost budget's sleep */
	TTL_PHASE_WAITING_FOR_REPLICAS	/* ttl.max_replication_lag */
} TtlPhase;

/* ttl.c: the slots, with the preload */
extern void ttl_progress_shmem_request(void);
extern void ttl_progress_shmem_startup(void);

/*
 * A purge (the worker's visit, CALL ttl.run_purge(), ttl.purge()) shows
 * from begin to end; nested calls count, only the outermost end clears.
 * ttl_progress_end must run on error too (PG_FINALLY).
 */
extern void ttl_progress_begin(void);
extern void ttl_progress_end(void);

/*
 * The container the purge is in now: when this purge first reached it,
 * its rows deleted so far and its due rows (< 0: not counted).
 */
extern void ttl_progress_container(Oid relid, TimestampTz started, int64 rows_done,
								   int64 rows_due);
extern void ttl_progress_phase(TtlPhase phase);
extern TtlPhase ttl_progress_current_phase(void);
extern void ttl_progress_rows(int64 rows_done);
extern void ttl_progress_row_deleted(void);
extern void ttl_progress_due(int64 rows_due);

#endif							/* TTL_PROGRESS_H */
