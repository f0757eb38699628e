/*
 * purge_leaves.c
 *		Where the direct path of purge (purge_direct.c) applies, and what it
 *		walks: the leaves of a container (a plain table, or the plain-table
 *		partitions of a partitioned one) without anything a DELETE would have
 *		to run (triggers, rules, row security for the owner), each opened
 *		with its valid purge indexes.
 *
 * Locking: the caller holds RowExclusiveLock on the table and every
 * partition (taken without waiting) and runs as the table's owner.  Indexes
 * are locked AccessShareLock without waiting; an index we cannot lock now
 * is not used.  The leaves stay open until ttl_close_leaves, with their locks
 * held to the end of the transaction.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "commands/comment.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "citus_meta.h"
#include "expiry.h"
#include "purge_internal.h"

#define TTL_PURGE_INDEX_COMMENT "ttl purge index"

/*
 * Why a DELETE statement is needed for this table (a plain table, or the
 * root of a partitioned one), or NULL when direct deletes do exactly what
 * it would.
 */
static const char *
relation_obstacle(Relation rel)
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
			*obstacle = relation_obstacle(root);
		return *obstacle ? NIL : list_make1_oid(relid);
	}
	if (root->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		*obstacle = "it is not a table";
		return NIL;
	}
	*obstacle = relation_obstacle(root);
	if (*obstacle)
		return NIL;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			child = lfirst_oid(lc);
		char		relkind = get_rel_relkind(child);
		Relation	rel;

		if (relkind == RELKIND_PARTITIONED_TABLE)
			continue;
		if (relkind != RELKIND_RELATION)
		{
			*obstacle = "a partition is not a plain table";
			return NIL;
		}
		/* held already, unless attached since the caller locked the tree */
		if (!ConditionalLockRelationOid(child, RowExclusiveLock))
		{
			*obstacle = "a partition attached meanwhile is locked";
			return NIL;
		}
		rel = table_open(child, NoLock);
		*obstacle = relation_obstacle(rel);
		table_close(rel, NoLock);
		if (*obstacle)
			return NIL;
		leaves = lappend_oid(leaves, child);
	}
	list_sort(leaves, list_oid_cmp);
	return leaves;
}

/*
 * A shard of a distributed container (citus.c): Citus copies the purge
 * indexes to the shards but not their comment, so the predicate itself is
 * checked: WHERE ttl.doc_expiry(doc) IS NOT NULL (own) or WHERE
 * ttl.doc_ttl(doc) IS NULL (inherited), exactly what ttl.enable writes.
 */
static bool
citus_shard_purge_index(Relation index, AttrNumber doc_attno, bool own)
{
	TtlContainer policy;
	List	   *pred;
	NullTest   *test;
	FuncExpr   *func;

	if (!ttl_trigger_policy_if_citus(index->rd_index->indrelid, &policy))
		return false;
	pred = RelationGetIndexPredicate(index);
	if (list_length(pred) != 1 || !IsA(linitial(pred), NullTest))
		return false;
	test = (NullTest *) linitial(pred);
	if (test->nulltesttype != (own ? IS_NOT_NULL : IS_NULL) || test->argisrow ||
		!IsA(test->arg, FuncExpr))
		return false;
	func = (FuncExpr *) test->arg;
	return list_length(func->args) == 1 && IsA(linitial(func->args), Var) &&
		((Var *) linitial(func->args))->varattno == doc_attno &&
		((Var *) linitial(func->args))->varlevelsup == 0 &&
		get_func_namespace(func->funcid) == get_namespace_oid("ttl", false) &&
		strcmp(get_func_name(func->funcid), own ? "doc_expiry" : "doc_ttl") == 0;
}

/*
 * Whether index is a ttl purge index of the wanted kind on doc_attno: a
 * valid btree on ttl.doc_expiry(doc) (own) or ttl.doc_ts(doc) (inherited),
 * marked by ttl.enable's comment, itself or (on a partition) the
 * partitioned index it belongs to.  The comment vouches for the predicate.
 */
static bool
is_purge_index(Relation index, AttrNumber doc_attno, bool own)
{
	List	   *exprs;
	FuncExpr   *func;
	Var		   *arg;
	List	   *ancestors;
	char	   *comment;

	if (index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_index->indnatts != 1 ||
		!index->rd_index->indisvalid ||
		index->rd_index->indkey.values[0] != 0)
		return false;
	exprs = RelationGetIndexExpressions(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return false;
	func = (FuncExpr *) linitial(exprs);
	if (list_length(func->args) != 1 || !IsA(linitial(func->args), Var))
		return false;
	arg = (Var *) linitial(func->args);
	if (arg->varattno != doc_attno ||
		get_func_namespace(func->funcid) != get_namespace_oid("ttl", false) ||
		strcmp(get_func_name(func->funcid), own ? "doc_expiry" : "doc_ts") != 0)
		return false;
	ancestors = index->rd_rel->relispartition ?
		get_partition_ancestors(RelationGetRelid(index)) : NIL;
	comment = GetComment(ancestors ? llast_oid(ancestors) : RelationGetRelid(index),
						 RelationRelationId, 0);
	if (comment != NULL && strcmp(comment, TTL_PURGE_INDEX_COMMENT) == 0)
		return true;
	return citus_shard_purge_index(index, doc_attno, own);
}

/* The purge index of that kind, opened and locked, or NULL. */
static Relation
open_purge_index(Relation rel, AttrNumber doc_attno, bool own)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index;

		if (!ConditionalLockRelationOid(indexoid, AccessShareLock))
			continue;
		index = index_open(indexoid, NoLock);
		if (is_purge_index(index, doc_attno, own))
			return index;
		index_close(index, NoLock);
	}
	return NULL;
}

/*
 * Open the leaves, each with the purge indexes wanted, all or nothing.
 * Returns why the direct path does not apply, or NULL.
 */
const char *
ttl_open_leaves(Oid relid, const char *doc_column, const bool *want,
				DirectLeaf **leaves_out, int *nleaves_out)
{
	Relation	root;
	const char *obstacle;
	List	   *leaf_oids;
	DirectLeaf *leaves;
	int			nleaves = 0;
	ListCell   *lc;

	/* the caller holds RowExclusiveLock on the table and its partitions */
	root = table_open(relid, NoLock);
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
		for (kind = 0; kind < 2; kind++)
		{
			if (want[kind] &&
				(leaf->index[kind] = open_purge_index(leaf->rel, leaf->doc_attno,
													  kind == 1)) == NULL)
				return "its purge index is missing, invalid or locked";
		}
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
		for (kind = 0; kind < 2; kind++)
			if (leaves[i].index[kind])
				index_close(leaves[i].index[kind], NoLock);
		table_close(leaves[i].rel, NoLock);
	}
}
