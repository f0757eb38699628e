/*
 * write_horizon.h
 *		The oldest "_ts" a running statement of this database can still
 *		write (write_horizon.c).
 */
#ifndef TTL_WRITE_HORIZON_H
#define TTL_WRITE_HORIZON_H

extern int64 ttl_write_horizon_seconds(void);

#endif							/* TTL_WRITE_HORIZON_H */
