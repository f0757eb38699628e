/*
 * replication_lag.h
 *		How far the replicas are behind (replication_lag.c), for
 *		ttl.max_replication_lag (1.7): the launcher and the workers
 *		(scheduler/replication_wait.c) and CALL ttl.run_purge().
 */
#ifndef TTL_REPLICATION_LAG_H
#define TTL_REPLICATION_LAG_H

#define TTL_LAG_WHO_LEN 96

/* The replica furthest behind, of those that count. */
typedef struct TtlReplicationLag
{
	int64		lag_bytes;
	char		who[TTL_LAG_WHO_LEN];	/* standby "name" or slot "name" */
} TtlReplicationLag;

extern bool ttl_replication_lag_over(TtlReplicationLag *lag);
extern bool ttl_replication_lag_wait(int64 max_ms, TtlReplicationLag *lag);

#endif							/* TTL_REPLICATION_LAG_H */
