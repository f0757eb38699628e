/*
 * container_window.h
 *		The purge window that applies to a container (container_window.c):
 *		its own (ttl.set_purge_window), else the setting ttl.purge_window.
 */
#ifndef TTL_CONTAINER_WINDOW_H
#define TTL_CONTAINER_WINDOW_H

#include "base/purge_window.h"

extern bool ttl_container_window(Oid relid, TtlPurgeWindow *out);
extern TimestampTz ttl_window_clock(void);
extern bool ttl_container_window_open(Oid relid);

#endif							/* TTL_CONTAINER_WINDOW_H */
