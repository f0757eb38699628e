/*
 * stats.h
 *		Purge statistics (stats.c): what purge records in ttl.purge_stats.
 */
#ifndef TTL_STATS_H
#define TTL_STATS_H

extern void ttl_record_purge(Oid relid, int64 deleted, const char *error);

#endif							/* TTL_STATS_H */
