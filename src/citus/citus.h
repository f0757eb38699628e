/*
 * citus.h
 *		What ttl does to containers on Citus distributed tables (citus.c).
 */
#ifndef TTL_CITUS_H
#define TTL_CITUS_H

#include "postgres.h"

#include "fmgr.h"

extern void ttl_citus_sync_policy(Oid relid);
extern void ttl_citus_check_kind(Oid relid);
extern void ttl_citus_refuse_index_free(Oid relid, bool index_free);
extern void ttl_citus_refuse_replace_off(Oid relid, bool replace_expired);
extern void ttl_citus_refuse_purge_window(Oid relid, bool has_window);
extern void ttl_citus_check_archive(Oid container, Oid archive);
extern int64 ttl_citus_purge(Oid relid, int64 max_rows);
/* ttl.c's fmgr hooks: around Citus's table makers (citus.c) */
extern bool ttl_citus_needs_fmgr(Oid fn_oid);
extern void ttl_citus_fmgr(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private);

#endif							/* TTL_CITUS_H */
