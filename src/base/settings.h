/*
 * settings.h
 *		The ttl.* settings and the clock every rule uses (settings.c).
 */
#ifndef TTL_SETTINGS_H
#define TTL_SETTINGS_H

#include "datatype/timestamp.h"

/* Seconds from the Unix epoch to the PostgreSQL epoch (2000-01-01). */
#define TTL_UNIX_EPOCH_OFFSET \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

extern bool ttl_enabled;
extern bool ttl_worker_enabled;
extern int	ttl_naptime;
extern int	ttl_max_workers;
extern int	ttl_rescan_interval;
extern int	ttl_batch_size;
extern int	ttl_batch_timeout;
extern int	ttl_max_visit_time;
extern int	ttl_cost_limit;
extern int	ttl_test_floor_gate;
extern double ttl_cost_delay;
extern bool ttl_mark_purge_deletes;
extern int	ttl_max_replication_lag;
extern char *ttl_replication_lag_ignore;
extern int	ttl_log_min_duration;
extern int	ttl_backlog_alert_age;
extern int	ttl_max_purge_time;

extern void ttl_define_settings(void);
extern int64 ttl_visit_bound_ms(void);

/* The clock: the statement timestamp, or ttl.now_override. */
extern TimestampTz ttl_current_time(void);
extern int64 ttl_current_unix_seconds(void);
extern bool ttl_clock_overridden(void);

#endif							/* TTL_SETTINGS_H */
