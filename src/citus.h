/*
 * citus.h
 *		What ttl does to containers on Citus distributed tables (citus.c).
 */
#ifndef TTL_CITUS_H
#define TTL_CITUS_H

#include "postgres.h"

extern void ttl_citus_sync_policy(Oid relid);
extern void ttl_citus_check_kind(Oid relid);
extern void ttl_citus_refuse_index_free(Oid relid, bool index_free);
extern void ttl_citus_refuse_replace_off(Oid relid, bool replace_expired);
extern int64 ttl_citus_purge(Oid relid, int64 max_rows);
extern void ttl_install_citus_hooks(void);

#endif							/* TTL_CITUS_H */
