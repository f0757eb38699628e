/*
 * purge_failures.h
 *		Rows a purge isolated as failing (purge_failures.c): the record in
 *		ttl.purge_failure that ttl.purge_failures shows, and the quarantine
 *		a batch and rule 10 read from it.
 */
#ifndef TTL_PURGE_FAILURES_H
#define TTL_PURGE_FAILURES_H

#include "storage/itemptr.h"

extern bool ttl_failures_available(void);

/* one batch's quarantine, read under its locks (purge_batch.c) */
extern void ttl_failures_begin(Oid relid, int64 now_seconds);
extern bool ttl_failures_active(void);
extern bool ttl_failures_covers(Oid leaf, ItemPointer tid);
extern const char *ttl_failures_filter_sql(int oid_param, int tid_param);
extern void ttl_failures_arrays(Datum *oids, Datum *tids);

/* every recorded place of relid, as the filter's two arrays; how many */
extern int	ttl_failures_places(Oid relid, Datum *oids, Datum *tids);

/* the record of one failing row, in the caller's transaction */
extern void ttl_failure_record(Oid relid, Oid leaf, ItemPointer tid, const char *key,
							   int sqlerrcode, const char *message, int64 now_seconds);

/* the retire step: whether a leaf has failing rows recorded */
extern bool ttl_failures_in_leaf(Oid relid, Oid leaf);

/* rule 10: whether the expired row at tid of leaf is quarantined now */
extern bool ttl_failure_quarantined(Oid relid, Oid leaf, ItemPointer tid, int64 now_seconds);

#endif							/* TTL_PURGE_FAILURES_H */
