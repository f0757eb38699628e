/*
 * citus_meta.h
 *		What ttl reads of Citus at run time (citus_meta.c).
 */
#ifndef TTL_CITUS_META_H
#define TTL_CITUS_META_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

#include "registry/registry.h"

/* ttl_citus_kind(): what Citus makes of a table */
#define TTL_CITUS_NONE		'\0'	/* not a Citus table (or no Citus) */
#define TTL_CITUS_HASH		'h'		/* hash-distributed */
#define TTL_CITUS_REFERENCE 'r'		/* reference table */
#define TTL_CITUS_OTHER		'o'		/* any other kind (local, append...) */

extern bool ttl_citus_loaded(void);
extern char ttl_citus_kind(Oid relid);
extern bool ttl_trigger_policy(Oid relid, TtlContainer *out);
extern bool ttl_trigger_policy_if_citus(Oid relid, TtlContainer *out);
extern char *ttl_citus_shard_table_name(Relation rel);
extern List *ttl_citus_local_placements(Oid container, bool due_only);
extern List *ttl_list_distributed_containers(bool due_only);
extern List *ttl_list_purge_targets(bool due_only);

#endif							/* TTL_CITUS_META_H */
