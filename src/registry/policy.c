/*
 * policy.c
 *		The one door to a relation's policy: the registry's row for a
 *		container (registry.c), else, for a piece of a distributed container
 *		on this node, the policy its stamp trigger carries.  It is also the
 *		only door to Citus: what Citus makes of a table, the placements this
 *		node purges, the policy pushed to the nodes and the distributed
 *		purge.  That half lives in src/citus/ (citus_meta.c, citus.c) and
 *		is installed here by ttl.c at load, so nothing outside src/citus/
 *		and this file knows Citus exists; without Citus (or before it is
 *		installed) every question here gets the answer of a plain table.
 *
 * Locking: none of its own; that of registry.c and of the distributed
 * half (AccessShareLock on the Citus catalogs it reads).
 */
#include "postgres.h"

#include "registry/policy.h"

static const TtlDistributedOps *distributed = NULL;

/* ttl.c, at load: the Citus half of this door (citus_meta.c). */
void
ttl_policy_install_distributed(const TtlDistributedOps *ops)
{
	distributed = ops;
}

/* Is a distribution layer (Citus) loaded in this backend? */
bool
ttl_distribution_loaded(void)
{
	return distributed != NULL && distributed->loaded();
}

/* What the distribution layer makes of relid (TTL_DIST_*). */
char
ttl_distribution_of(Oid relid)
{
	return ttl_distribution_loaded() ? distributed->kind(relid) : TTL_DIST_NONE;
}

/*
 * The policy of a piece of a distributed container on this node, if relid
 * is one; its archive is the archive's piece on this node (a shard's: the
 * colocated shard of the archive).  With strict (the purge's read), an
 * archive the piece names but this node lacks raises; readers get
 * InvalidOid.
 */
static bool
placement_policy(Oid relid, TtlContainer *out, bool strict)
{
	return ttl_distribution_loaded() && distributed->trigger_policy(relid, out, strict);
}

/*
 * The policy of relid, from the backend's registry cache, or the one a
 * piece of a distributed container carries (it has no registry row).
 */
bool
ttl_policy_lookup(Oid relid, TtlContainer *out)
{
	return ttl_lookup_container(relid, out) || placement_policy(relid, out, false);
}

/*
 * The same without a copy for a container (the registry cache's entry,
 * valid until the next catalog access), or buf filled for a piece; NULL
 * when relid has no policy.
 */
const TtlContainer *
ttl_policy_ref(Oid relid, TtlContainer *buf)
{
	const TtlContainer *c = ttl_container_ref(relid);

	if (c == NULL && placement_policy(relid, buf, false))
		c = buf;
	return c;
}

/*
 * The policy as committed now (ttl_read_container; purge reads it so under
 * the container's lock), or a piece's, whose archive (the colocated shard
 * of the archive) must be on this node: a purge never deletes from a piece
 * without it (an error naming both).
 */
bool
ttl_policy_read(Oid relid, TtlContainer *out)
{
	return ttl_read_container(relid, out) || placement_policy(relid, out, true);
}

/*
 * The policy of a partition (or of a plain table): the registry row of the
 * first container among ancestors (the relation itself, then its
 * ancestors up to the root, as the caller keeps them: rule 10 caches them
 * per leaf).
 */
bool
ttl_policy_of_partition(const Oid *ancestors, int nancestors, TtlContainer *out)
{
	int			i;

	for (i = 0; i < nancestors; i++)
		if (ttl_lookup_container(ancestors[i], out))
			return true;
	return false;
}

/* Is relid a piece of a distributed container here (no registry row)? */
bool
ttl_is_placement(Oid relid)
{
	TtlContainer policy;

	return placement_policy(relid, &policy, false);
}

/* For messages: the distributed table whose piece rel is, or NULL. */
char *
ttl_placement_table_name(Relation rel)
{
	return ttl_distribution_loaded() ? distributed->piece_table_name(rel) : NULL;
}

/*
 * The pieces of container (InvalidOid: of every distributed container)
 * placed and active on this node, as local relation OIDs.
 */
List *
ttl_list_local_placements(Oid container, bool due_only)
{
	return ttl_distribution_loaded() ?
		distributed->local_placements(container, due_only) : NIL;
}

/*
 * The registry's hash-distributed containers (registered where ttl.enable
 * ran: the coordinator), in relid order; with due_only, those with a
 * default and not paused.
 */
List *
ttl_list_distributed_containers(bool due_only)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (!ttl_distribution_loaded())
		return NIL;
	foreach(lc, ttl_list_containers(due_only))
		if (ttl_distribution_of(lfirst_oid(lc)) == TTL_DIST_HASH)
			result = lappend_oid(result, lfirst_oid(lc));
	return result;
}

/*
 * What this node purges: the registry's containers that are not
 * distributed (a distributed table's DELETE would reach every node), then
 * this node's active pieces of distributed containers.
 */
List *
ttl_list_purge_targets(bool due_only)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, ttl_list_containers(due_only))
		if (ttl_distribution_of(lfirst_oid(lc)) == TTL_DIST_NONE)
			result = lappend_oid(result, lfirst_oid(lc));
	return list_concat(result, ttl_list_local_placements(InvalidOid, due_only));
}

/*
 * The policy of a hash-distributed container changed: its stamp triggers
 * on every node carry it (nothing for other tables).
 */
void
ttl_policy_push(Oid relid)
{
	if (ttl_distribution_loaded())
		distributed->push_policy(relid);
}

/* Refuse a container on a kind of distributed table ttl cannot serve. */
void
ttl_policy_check_distribution(Oid relid)
{
	if (ttl_distribution_loaded())
		distributed->check_kind(relid);
}

/* Refuse an index-free distributed container. */
void
ttl_policy_refuse_index_free(Oid relid, bool index_free)
{
	if (ttl_distribution_loaded())
		distributed->refuse_index_free(relid, index_free);
}

/* Refuse turning rule 10 off on a distributed container. */
void
ttl_policy_refuse_replace_off(Oid relid, bool replace_expired)
{
	if (ttl_distribution_loaded())
		distributed->refuse_replace_off(relid, replace_expired);
}

/*
 * Refuse a purge window of a distributed container's own: its nodes purge
 * its shards by the policy the stamp trigger carries, without one (the
 * nodes' ttl.purge_window applies there).
 */
void
ttl_policy_refuse_purge_window(Oid relid, bool has_window)
{
	if (ttl_distribution_loaded())
		distributed->refuse_purge_window(relid, has_window);
}

/*
 * Refuse an archive that does not fit the container's distribution: a
 * distributed container's archive is a distributed table colocated with it
 * (its shards archive into their colocated shards); a table of this node
 * only archives into a table of this node only.
 */
void
ttl_policy_check_archive(Oid container, Oid archive)
{
	if (ttl_distribution_loaded() && OidIsValid(archive))
		distributed->check_archive(container, archive);
}

/* The purge of a hash-distributed container: each node purges its pieces. */
int64
ttl_purge_distributed(Oid relid, int64 max_rows)
{
	if (!ttl_distribution_loaded())
		elog(ERROR, "relation %u is not distributed", relid);
	return distributed->purge(relid, max_rows);
}
