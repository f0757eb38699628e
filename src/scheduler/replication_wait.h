/*
 * replication_wait.h
 *		The background purge waiting for lagging replicas
 *		(replication_wait.c, 1.7): the episode in shared memory, for
 *		the launcher, the workers and the pool views.
 */
#ifndef TTL_REPLICATION_WAIT_H
#define TTL_REPLICATION_WAIT_H

#include "datatype/timestamp.h"

#include "base/replication_lag.h"

extern void ttl_replication_wait_shmem_request(void);
extern void ttl_replication_wait_shmem_startup(void);
extern bool ttl_replication_wait_check(bool by_launcher);
extern bool ttl_replication_wait_report(TimestampTz *since, TtlReplicationLag *lag);

#endif							/* TTL_REPLICATION_WAIT_H */
