/*
 * leaf_owner.c
 *		One owner per container tree (SPEC, "After 1.8", Ownership): ttl
 *		runs a statement on a relation only as that relation's owner, and
 *		it acts on a whole container (or archive) as the container's owner.
 *		So a leaf of a container or of its archive, at any depth, is ttl's
 *		to touch only when it and every partitioned table between it and
 *		the root have the root's owner: one partition handed to another role
 *		(ALTER TABLE ... OWNER TO, ATTACH PARTITION of a table another role
 *		owns) would otherwise run that role's triggers, rules and index
 *		functions with the container owner's rights.  This file answers
 *		"does this leaf fit", names a leaf that does not, and warns where
 *		DDL or ttl.enable leaves one behind.  Purge skips such a leaf
 *		(purge_leaves.c, purge_statement.c); rule 10 conflicts there
 *		(replace_probe.c); an archive with one fails its fit (archive.c).
 *
 * Why the check is made at the batch, not only at DDL: event triggers can
 * be bypassed (session_replication_role = replica, an event trigger
 * disabled by a superuser) and ownership is also changed by REASSIGN
 * OWNED, which fires none.  The WARNING here is advice; the check made
 * under the batch's lock is the rule.
 *
 * Locking: none taken.  A caller that acts on the answer holds the leaf
 * (and the root) in RowExclusiveLock or stronger: ALTER TABLE ... OWNER TO
 * takes AccessExclusiveLock, so the owner cannot change until the caller's
 * transaction ends.  pg_class is read through the syscache, which the lock
 * acquisition has brought up to date.
 */
#include "postgres.h"

#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "base/run_as.h"
#include "registry/leaf_owner.h"
#include "registry/registry.h"

/*
 * leaf, or the first partitioned table between leaf and root (root
 * excluded) whose owner is not root's, or InvalidOid when they all have
 * root's owner.  A partitioned table in between counts: what is below a
 * table is its owner's to shape (detach, attach, index, and what core
 * lets it do to the partitions there).
 */
static Oid
foreign_member(Oid root, Oid leaf)
{
	Oid			owner = ttl_table_owner(root);
	Oid			found = InvalidOid;
	List	   *ancestors;
	ListCell   *lc;

	if (leaf == root)
		return InvalidOid;
	if (ttl_table_owner(leaf) != owner)
		return leaf;
	if (!get_rel_relispartition(leaf))
		return InvalidOid;		/* an inheritance child: its own owner only */
	ancestors = get_partition_ancestors(leaf);
	foreach(lc, ancestors)
	{
		Oid			up = lfirst_oid(lc);

		if (up == root)
			break;
		if (ttl_table_owner(up) != owner)
		{
			found = up;
			break;
		}
	}
	list_free(ancestors);
	return found;
}

/* The owner foreign_member() found, or InvalidOid when leaf fits. */
Oid
ttl_leaf_foreign_owner(Oid root, Oid leaf)
{
	Oid			member = foreign_member(root, leaf);

	return OidIsValid(member) ? ttl_table_owner(member) : InvalidOid;
}

bool
ttl_leaf_owner_fits(Oid root, Oid leaf)
{
	return !OidIsValid(ttl_leaf_foreign_owner(root, leaf));
}

/*
 * The leaves of root that have its owner, in OID order: root itself when
 * it is a plain table, its inheritance children, every non-partitioned
 * partition at any depth that fits (ttl_leaf_foreign_owner).  For a
 * statement on ONLY each of them (ttl_only_name), as root's owner, instead
 * of one on root: planning a statement on a parent plans every partition
 * (its index expressions folded, as whoever plans), another role's too.
 */
List *
ttl_owned_leaves(Oid root)
{
	List	   *leaves = NIL;
	ListCell   *lc;

	foreach(lc, find_all_inheritors(root, NoLock, NULL))
	{
		Oid			leaf = lfirst_oid(lc);

		if (get_rel_relkind(leaf) != RELKIND_PARTITIONED_TABLE &&
			ttl_leaf_owner_fits(root, leaf))
			leaves = lappend_oid(leaves, leaf);
	}
	list_sort(leaves, list_oid_cmp);
	return leaves;
}

/* "ONLY schema.leaf", each name quoted once. */
char *
ttl_only_name(Oid leaf)
{
	return psprintf("ONLY %s",
					quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
											   get_rel_name(leaf)));
}

static const char *
role_name(Oid role)
{
	char	   *name = GetUserNameFromId(role, true);

	return name ? quote_identifier(name) : psprintf("%u", role);
}

/*
 * What last_error and the WARNINGs say of a leaf of container that does
 * not fit: the leaf and both owners (no row data).
 */
char *
ttl_foreign_leaf_text(Oid container, Oid leaf)
{
	Oid			member = foreign_member(container, leaf);
	const char *theirs = role_name(ttl_table_owner(OidIsValid(member) ? member : leaf));
	const char *ours = role_name(ttl_table_owner(container));

	if (OidIsValid(member) && member != leaf)
		return psprintf("partition %s of container %s is below %s, owned by %s, not by the container's owner %s: ttl leaves it alone",
						ttl_relation_display_name(leaf),
						ttl_relation_display_name(container),
						ttl_relation_display_name(member), theirs, ours);
	return psprintf("partition %s of container %s is owned by %s, not by the container's owner %s: ttl leaves it alone",
					ttl_relation_display_name(leaf),
					ttl_relation_display_name(container), theirs, ours);
}

/*
 * The tables relid is in (itself and its partition ancestors) that are
 * containers, or archives of containers: the roots whose owner its
 * leaves must have, each with the container it belongs to.
 */
static void
roots_of(Oid relid, List **roots, List **containers)
{
	List	   *up = list_make1_oid(relid);
	List	   *all = NIL;
	ListCell   *lc;

	if (get_rel_relispartition(relid))
		up = list_concat(up, get_partition_ancestors(relid));
	*roots = NIL;
	*containers = NIL;
	foreach(lc, ttl_list_containers(false))
	{
		Oid			c = lfirst_oid(lc);
		TtlContainer policy;

		if (!ttl_lookup_container(c, &policy))
			continue;
		all = lappend_oid(all, c);
		if (list_member_oid(up, c))
		{
			*roots = lappend_oid(*roots, c);
			*containers = lappend_oid(*containers, c);
		}
		if (OidIsValid(policy.archive) && list_member_oid(up, policy.archive))
		{
			*roots = lappend_oid(*roots, policy.archive);
			*containers = lappend_oid(*containers, c);
		}
	}
	list_free(all);
}

/*
 * After DDL on relid (ATTACH PARTITION, OWNER TO; ddl_events.c) and after
 * ttl.enable: a WARNING for every leaf at or below relid that belongs to a
 * container or an archive and does not have its owner.  The change is
 * not refused (the container's owner may be handing a partition over on
 * purpose, and a refusal could be bypassed anyway, see the file header):
 * the WARNING says what the purge will do about it.
 */
void
ttl_warn_foreign_leaves(Oid relid)
{
	List	   *roots;
	List	   *containers;
	List	   *below;
	ListCell   *r;
	ListCell   *c;

	roots_of(relid, &roots, &containers);
	if (roots == NIL)
		return;
	below = find_all_inheritors(relid, NoLock, NULL);
	forboth(r, roots, c, containers)
	{
		Oid			root = lfirst_oid(r);
		Oid			container = lfirst_oid(c);
		ListCell   *lc;

		foreach(lc, below)
		{
			Oid			leaf = lfirst_oid(lc);
			Oid			foreign;

			if (leaf == root || get_rel_relkind(leaf) == RELKIND_PARTITIONED_TABLE)
				continue;
			foreign = ttl_leaf_foreign_owner(root, leaf);
			if (!OidIsValid(foreign))
				continue;
			if (root == container)
				ereport(WARNING,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("%s", ttl_foreign_leaf_text(container, leaf)),
						 errdetail("ttl acts on a container as its owner and never runs another role's code with those rights: the purge skips this partition (ttl.stats.last_error names it) and rule 10 does not replace items there."),
						 errhint("Give the partition back with ALTER TABLE %s OWNER TO %s, or detach it.",
								 ttl_relation_display_name(foreign_member(root, leaf)),
								 role_name(ttl_table_owner(container)))));
			else
				ereport(WARNING,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("partition %s of archive %s of container %s is owned by %s, not by the container's owner %s",
								ttl_relation_display_name(leaf),
								ttl_relation_display_name(root),
								ttl_relation_display_name(container),
								role_name(foreign), role_name(ttl_table_owner(container))),
						 errdetail("The purge inserts into the archive as the container's owner: it fails every batch of the container, deleting nothing, while the archive has this partition."),
						 errhint("Give the partition back with ALTER TABLE %s OWNER TO %s, or detach it.",
								 ttl_relation_display_name(foreign_member(root, leaf)),
								 role_name(ttl_table_owner(container)))));
		}
	}
}
