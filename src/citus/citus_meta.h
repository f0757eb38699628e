/*
 * citus_meta.h
 *		What ttl reads of Citus at run time (citus_meta.c).
 */
#ifndef TTL_CITUS_META_H
#define TTL_CITUS_META_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

#include "registry/policy.h"

/* ttl_citus_kind(): what Citus makes of a table */
#define TTL_CITUS_NONE		TTL_DIST_NONE	/* not a Citus table (or no Citus) */
#define TTL_CITUS_HASH		TTL_DIST_HASH	/* hash-distributed */
#define TTL_CITUS_REFERENCE TTL_DIST_REFERENCE	/* reference table */
#define TTL_CITUS_OTHER		TTL_DIST_OTHER		/* any other kind (local, append...) */

extern bool ttl_citus_loaded(void);
extern char ttl_citus_kind(Oid relid);
extern bool ttl_citus_colocated(Oid a, Oid b);
extern bool ttl_trigger_policy(Oid relid, TtlContainer *out);
extern char *ttl_trigger_archive_name(Oid relid);
extern Oid	ttl_citus_relation_by_name(const char *qualified);
extern char *ttl_citus_shard_table_name(Relation rel);
extern List *ttl_citus_local_placements(Oid container, bool due_only);

/* the Citus half of the policy door, installed by ttl.c */
extern const TtlDistributedOps ttl_citus_ops;

#endif							/* TTL_CITUS_META_H */
