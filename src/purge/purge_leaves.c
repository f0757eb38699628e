/*
 * purge_leaves.c
 *		Where the direct path of purge (purge_direct.c) applies, and what it
 *		walks: the leaves of a container (a plain table, or the plain-table
 *		partitions of a partitioned one) without anything a DELETE would have
 *		to run (triggers, rules, row security for the owner), each opened
 *		with its valid purge indexes (the single index of 1.3, or the two
 *		partial indexes of containers enabled before, and the deadline index
 *		of a container with a deadline property, rule 9).
 *
 * Locking: the caller holds RowExclusiveLock on the table and every
 * partition (taken without waiting) and runs as the table's owner; a leaf
 * another role owns (or that is below a partitioned table another role
 * owns) is left out of the walk, checked under that lock (purge_owner.c).  Indexes
 * are locked AccessShareLock without waiting; an index we cannot lock now
 * is not used.  The leaves stay open until ttl_close_leaves, with their locks
 * held to the end of the transaction.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "document/expiry.h"
#include "document/purge_key.h"
#include "purge/purge_internal.h"

/*
 * Why a DELETE statement is needed for this table (a plain table, or the
 * root of a partitioned one), or NULL when direct deletes do exactly what
 * it would.  Also what keeps a leaf from being retired whole
 * (retire_check.c): whatever a DELETE would run, a DROP would skip.
 */
const char *
ttl_relation_obstacle(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;
	Oid			relid = RelationGetRelid(rel);

	if (trig && (trig->trig_delete_before_row || trig->trig_delete_after_row ||
				 trig->trig_delete_instead_row ||
				 trig->trig_delete_before_statement ||
				 trig->trig_delete_after_statement ||
				 trig->trig_delete_old_table))
		return "it has DELETE triggers or is referenced by a foreign key";
	if (rel->rd_rules != NULL)
		return "it has rules";
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		return "row-level security applies to its owner";
	if (pg_class_aclcheck(relid, GetUserId(), ACL_DELETE) != ACLCHECK_OK ||
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return "its owner lacks DELETE or SELECT on it";
	return NULL;
}

/*
 * The leaves to walk, in OID order (a plain table is its own leaf), or NIL
 * with *obstacle set.  The caller holds locks on all of them.
 */
static List *
direct_leaves(Relation root, const char **obstacle)
{
	Oid			relid = RelationGetRelid(root);
	List	   *leaves = NIL;
	ListCell   *lc;

	*obstacle = NULL;
	if (root->rd_rel->relkind == RELKIND_RELATION)
	{
		if (root->rd_rel->relhassubclass)
			*obstacle = "it has inheritance children";
		else
			*obstacle = ttl_relation_obstacle(root);
		return *obstacle ? NIL : list_make1_oid(relid);
	}
	if (root->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		*obstacle = "it is not a table";
		return NIL;
	}
	*obstacle = ttl_relation_obstacle(root);
	if (*obstacle)
		return NIL;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			child = lfirst_oid(lc);
		char		relkind = get_rel_relkind(child);
		Relation	rel;

		if (relkind == RELKIND_PARTITIONED_TABLE)
			continue;
		/* held already, unless attached since the caller locked the tree */
		if (!ConditionalLockRelationOid(child, RowExclusiveLock))
		{
			*obstacle = "a partition attached meanwhile is locked";
			return NIL;
		}
		/*
		 * another role's leaf is never touched as the owner: checked under
		 * the lock, which holds off OWNER TO (purge_owner.c)
		 */
		if (!ttl_batch_leaf_fits(relid, child))
			continue;
		/* about to be retired whole: its rows leave with it */
		if (ttl_retire_defers(relid, child))
			continue;
		if (relkind != RELKIND_RELATION)
		{
			*obstacle = "a partition is not a plain table";
			return NIL;
		}
		rel = table_open(child, NoLock);
		*obstacle = ttl_relation_obstacle(rel);
		table_close(rel, NoLock);
		if (*obstacle)
			return NIL;
		leaves = lappend_oid(leaves, child);
	}
	list_sort(leaves, list_oid_cmp);
	return leaves;
}

/*
 * The purge index for that kind, opened and locked, or NULL: the single
 * index of 1.3 (*keyed; *brin for an append-only container's), else the
 * partial index of that kind of 1.0-1.2.
 */
static Relation
open_purge_index(Relation rel, AttrNumber doc_attno, bool own, bool *keyed, bool *brin)
{
	TtlPurgeIndexKind wanted = own ? TTL_INDEX_EXPIRY : TTL_INDEX_TS;
	Relation	fallback = NULL;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index;
		TtlPurgeIndexKind kind;

		if (!ConditionalLockRelationOid(indexoid, AccessShareLock))
			continue;
		index = index_open(indexoid, NoLock);
		kind = ttl_purge_index_kind(index, doc_attno);
		if (kind == TTL_INDEX_KEY || kind == TTL_INDEX_KEY_BRIN)
		{
			*brin = kind == TTL_INDEX_KEY_BRIN;
			if (fallback)
				index_close(fallback, NoLock);
			*keyed = true;
			return index;
		}
		if (kind == wanted && fallback == NULL)
			fallback = index;
		else
			index_close(index, NoLock);
	}
	*keyed = false;
	return fallback;
}

/* The deadline index of the property (rule 9), opened and locked, or NULL. */
static Relation
open_deadline_index(Relation rel, AttrNumber doc_attno, const char *deadline)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index;

		if (!ConditionalLockRelationOid(indexoid, AccessShareLock))
			continue;
		index = index_open(indexoid, NoLock);
		if (ttl_is_deadline_index(index, doc_attno, deadline))
			return index;
		index_close(index, NoLock);
	}
	return NULL;
}

/*
 * Open the leaves, each with the purge indexes wanted (none for the
 * lifetimes of an index-free container, 1.6, whose walk sweeps every page),
 * all or nothing.  Returns why the direct path does not apply, or NULL.
 */
const char *
ttl_open_leaves(const TtlBatchPlan *plan, DirectLeaf **leaves_out, int *nleaves_out)
{
	const char *doc_column = NameStr(plan->policy->doc_column);
	bool		index_free = plan->policy->index_free;
	const bool *want = plan->kinds;
	Relation	root;
	const char *obstacle;
	List	   *leaf_oids;
	DirectLeaf *leaves;
	int			nleaves = 0;
	ListCell   *lc;

	/* the caller holds RowExclusiveLock on the table and its partitions */
	root = table_open(plan->relid, NoLock);
	leaf_oids = direct_leaves(root, &obstacle);
	table_close(root, NoLock);
	*leaves_out = leaves = palloc0(sizeof(DirectLeaf) * Max(list_length(leaf_oids), 1));
	*nleaves_out = 0;
	if (obstacle)
		return obstacle;

	foreach(lc, leaf_oids)
	{
		DirectLeaf *leaf = &leaves[nleaves];
		int			kind;

		leaf->rel = table_open(lfirst_oid(lc), NoLock);
		*nleaves_out = ++nleaves;
		leaf->doc_attno = get_attnum(RelationGetRelid(leaf->rel), doc_column);
		if (leaf->doc_attno == InvalidAttrNumber)
			return "its document column is missing";
		/* index-free (1.6): the walk takes every page, no index to open */
		leaf->sweep = index_free;
		for (kind = TTL_DUE_INHERITED; kind <= TTL_DUE_OWN && !index_free; kind++)
		{
			if (want[kind] &&
				(leaf->index[kind] = open_purge_index(leaf->rel, leaf->doc_attno,
													  kind == TTL_DUE_OWN, &leaf->keyed[kind],
													  &leaf->brin)) == NULL)
				return "its purge index is missing, invalid or locked";
		}
		if (want[TTL_DUE_DEADLINE] &&
			(leaf->index[TTL_DUE_DEADLINE] = open_deadline_index(leaf->rel, leaf->doc_attno,
																 plan->deadline)) == NULL)
			return "its deadline index is missing, invalid or locked";
		/* a published table without a replica identity cannot DELETE either */
		CheckCmdReplicaIdentity(leaf->rel, CMD_DELETE);
	}
	return NULL;
}

void
ttl_close_leaves(DirectLeaf *leaves, int nleaves)
{
	int			i;
	int			kind;

	for (i = 0; i < nleaves; i++)
	{
		for (kind = 0; kind < TTL_DUE_KINDS; kind++)
			if (leaves[i].index[kind])
				index_close(leaves[i].index[kind], NoLock);
		table_close(leaves[i].rel, NoLock);
	}
}
