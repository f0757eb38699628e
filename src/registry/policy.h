/*
 * policy.h
 *		The one door to "what is this relation's policy" (policy.c): a
 *		container's registry row, or, for a piece of a distributed container
 *		on this node, the policy its stamp trigger carries; what distribution
 *		makes of a table; what this node purges; and the few things only the
 *		distributed half can do (push a policy to the nodes, purge there).
 *		Callers never ask which kind of relation they hold.
 */
#ifndef TTL_POLICY_H
#define TTL_POLICY_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

#include "registry/registry.h"

/* ttl_distribution_of(): what the distribution layer makes of a table */
#define TTL_DIST_NONE		'\0'	/* a table of this node only */
#define TTL_DIST_HASH		'h'		/* hash-distributed */
#define TTL_DIST_REFERENCE	'r'		/* a reference table */
#define TTL_DIST_OTHER		'o'		/* any other distributed kind */

/*
 * The distributed half, installed by ttl.c at load (NULL: none).  Every
 * member is set; the door answers "not distributed" before it is installed.
 */
typedef struct TtlDistributedOps
{
	bool		(*loaded) (void);
	char		(*kind) (Oid relid);
	/* strict: an archive the piece's trigger names but this node lacks raises */
	bool		(*trigger_policy) (Oid relid, TtlContainer *out, bool strict);
	char	   *(*piece_table_name) (Relation rel);
	List	   *(*local_placements) (Oid container, bool due_only);
	void		(*push_policy) (Oid relid);
	void		(*check_kind) (Oid relid);
	void		(*refuse_index_free) (Oid relid, bool index_free);
	void		(*refuse_replace_off) (Oid relid, bool replace_expired);
	void		(*refuse_purge_window) (Oid relid, bool has_window);
	void		(*check_archive) (Oid container, Oid archive);
	int64		(*purge) (Oid relid, int64 max_rows);
} TtlDistributedOps;

extern void ttl_policy_install_distributed(const TtlDistributedOps *ops);

/* the policy of a container or of a piece of one on this node */
extern bool ttl_policy_lookup(Oid relid, TtlContainer *out);
extern const TtlContainer *ttl_policy_ref(Oid relid, TtlContainer *buf);
extern bool ttl_policy_read(Oid relid, TtlContainer *out);
extern bool ttl_policy_of_partition(const Oid *ancestors, int nancestors, TtlContainer *out);
extern bool ttl_is_placement(Oid relid);

/* what distribution makes of a table */
extern bool ttl_distribution_loaded(void);
extern char ttl_distribution_of(Oid relid);
extern char *ttl_placement_table_name(Relation rel);

/* what this node purges */
extern List *ttl_list_local_placements(Oid container, bool due_only);
extern List *ttl_list_distributed_containers(bool due_only);
extern List *ttl_list_purge_targets(bool due_only);

/* what only the distributed half does (nothing for other tables) */
extern void ttl_policy_push(Oid relid);
extern void ttl_policy_check_distribution(Oid relid);
extern void ttl_policy_refuse_index_free(Oid relid, bool index_free);
extern void ttl_policy_refuse_replace_off(Oid relid, bool replace_expired);
extern void ttl_policy_refuse_purge_window(Oid relid, bool has_window);
extern void ttl_policy_check_archive(Oid container, Oid archive);
extern int64 ttl_purge_distributed(Oid relid, int64 max_rows);

#endif							/* TTL_POLICY_H */
