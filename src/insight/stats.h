/*
 * stats.h
 *		Purge statistics (stats.c): what purge records in ttl.purge_stats.
 */
#ifndef TTL_STATS_H
#define TTL_STATS_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

/*
 * The worker's backlog walks stop after this many due rows per purge index:
 * enough to rank databases, cheap to repeat every round (a full count of a
 * big backlog would cost each round as much as the purge itself).
 */
#define TTL_SCHEDULER_WALK_LIMIT 10000

extern void ttl_record_purge(Oid relid, int64 deleted, const char *error);
extern void ttl_record_retire(Oid relid, int64 leaves, int64 rows);
extern bool ttl_scheduler_backlog(Oid relid, int64 *due_rows, bool *capped,
								  TimestampTz *oldest_due);
extern bool ttl_progress_due_rows(Oid relid, int64 *due_rows);
/* behind.c: the worker's WARNING on falling behind, LOG on catching up */
extern void ttl_behind_note(Oid relid, TimestampTz oldest);

/*
 * backoff.c: containers whose worker statements overran their bound, backed
 * off durably in ttl.purge_stats (overruns, retry_after)
 */
extern bool ttl_backoff_available(void);
extern void ttl_backoff_load(List **backed_off, List **overran);
extern void ttl_backoff_record(Oid relid, const char *message);
extern void ttl_backoff_clear(Oid relid, bool walk);

#endif							/* TTL_STATS_H */
