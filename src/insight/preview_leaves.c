/*
 * preview_leaves.c
 *		What ttl.preview (preview.c) and ttl.expiring (expiring.c) share:
 *		their arguments checked, the container checked for the caller and
 *		locked, its leaves opened each with the purge btree the fast path
 *		reads, and the predicate saying whether that fast path may answer
 *		for a container at all.
 *
 * Two paths per leaf (a plain table is its own leaf; a partitioned or
 * inherited table has one per table with storage):
 *
 *	fast	the leaf has the purge btree of ttl.doc_purge_key (1.3 layout),
 *			which holds one entry per row version, NULL keys included
 *			(pinned items, items without _ts): the own-ttl range holds
 *			expiry seconds, the inherited range _ts, so any default is a
 *			bound on the key (purge_key.c).
 *	scan	everything else: containers still on the 1.0 layout (two partial
 *			indexes, before ttl.upgrade_purge_index_sql()), append-only ones
 *			(BRIN), and any container ttl_preview_fast_path_applies() turns
 *			away: a sequential scan that applies the expiry rules (expiry.c)
 *			to each visible item.
 *
 * Neither path runs code of the table's owner or the caller (no planning,
 * no index expression is evaluated: keys are read as stored), so nothing
 * switches roles.  The caller needs SELECT on the table (42501 otherwise)
 * and must not be subject to its row-level security: counting every row
 * would tell such a caller about rows a SELECT hides (42501 too).
 *
 * Locking: AccessShareLock on the table (taken after the privilege check),
 * its partitions or children and the purge indexes used, held to the end
 * of the transaction, as a SELECT would.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "document/purge_key.h"
#include "insight/preview_leaves.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * Whether the fast path (the purge btree's key ranges) can answer for this
 * container at all: its key must decide every item's expiry under any
 * default.  Rules that the key does not hold (a per-item deadline, say)
 * must return false here; the scan path then applies the expiry rules
 * (expiry.c) to each visible item.
 */
bool
ttl_preview_fast_path_applies(const TtlContainer *c)
{
	/*
	 * The purge index keys the lifetime only; an item's deadline (rule 9)
	 * is in another index whose entries overlap it: the scan path applies
	 * both to each item.
	 */
	return !TTL_HAS_DEADLINE(c);
}

/* t in whole Unix seconds, rounded down (t finite). */
int64
ttl_unix_floor_seconds(TimestampTz t)
{
	int64		secs = t / USECS_PER_SEC;

	if (t < 0 && t % USECS_PER_SEC != 0)
		secs--;
	return secs + TTL_UNIX_EPOCH_OFFSET;
}

void
ttl_preview_null_argument(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("%s must not be null", name)));
}

/* The `at` argument (argument number argno): not NULL, finite. */
TimestampTz
ttl_preview_at_arg(FunctionCallInfo fcinfo, int argno)
{
	TimestampTz at;

	if (PG_ARGISNULL(argno))
		ttl_preview_null_argument("at");
	at = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(at))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("at must be a finite timestamp"),
				 errdetail("It is %s.",
						   DatumGetCString(DirectFunctionCall1(timestamptz_out,
															   TimestampTzGetDatum(at))))));
	return at;
}

/*
 * The container of argument 0, checked for the caller and locked as a
 * SELECT would: 42501 without SELECT or under row-level security, 42704
 * when it is not a container.
 */
Oid
ttl_preview_container_arg(FunctionCallInfo fcinfo, const char *fname, TtlContainer *c)
{
	Oid			relid;
	char		kind;

	if (PG_ARGISNULL(0))
		ttl_preview_null_argument("container");
	relid = PG_GETARG_OID(0);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", ttl_relation_display_name(relid)),
				 errdetail("%s needs SELECT on the container's table.", fname)));
	LockRelationOid(relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	ttl_get_container(relid, c);
	if (isOtherTempNamespace(get_rel_namespace(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions")));
	kind = ttl_distribution_of(relid);
	if (kind == 'h' || kind == 'r')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s does not support distributed container \"%s\"",
						fname, ttl_relation_display_name(relid)),
				 errdetail("Its items live in shards on the worker nodes.")));
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security applies to you on table %s",
						ttl_relation_display_name(relid)),
				 errdetail("%s reads every item of the table, which would reveal items row-level security hides from you.",
						   fname),
				 errhint("Run it as the table's owner or as a role that bypasses row-level security.")));
	return relid;
}

/* The 1.3 purge btree of a leaf, opened and locked, or NULL. */
static Relation
open_key_btree(Relation rel, AttrNumber doc_attno)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (ttl_purge_index_kind(index, doc_attno) == TTL_INDEX_KEY)
			return index;
		index_close(index, AccessShareLock);
	}
	return NULL;
}

/*
 * The leaves of the container, opened and locked, each with its purge
 * btree when the fast path may use it.
 */
TtlPreviewLeaf *
ttl_preview_open_leaves(Oid relid, const TtlContainer *c, bool fast, int *nleaves)
{
	List	   *oids = find_all_inheritors(relid, AccessShareLock, NULL);
	TtlPreviewLeaf *leaves = palloc0(sizeof(TtlPreviewLeaf) * list_length(oids));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, oids)
	{
		Oid			oid = lfirst_oid(lc);
		char		relkind = get_rel_relkind(oid);
		TtlPreviewLeaf *leaf;

		if (relkind == RELKIND_PARTITIONED_TABLE)
			continue;
		if (relkind != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("\"%s\" of container \"%s\" is not a plain table",
							ttl_relation_display_name(oid), ttl_relation_display_name(relid)),
					 errdetail("Only the items of plain tables can be counted.")));
		leaf = &leaves[n++];
		leaf->rel = table_open(oid, NoLock);
		leaf->doc_attno = get_attnum(oid, NameStr(c->doc_column));
		if (leaf->doc_attno == InvalidAttrNumber)
			elog(ERROR, "column \"%s\" of \"%s\" is missing",
				 NameStr(c->doc_column), ttl_relation_display_name(oid));
		leaf->key_index = fast ? open_key_btree(leaf->rel, leaf->doc_attno) : NULL;
	}
	*nleaves = n;
	return leaves;
}

void
ttl_preview_close_leaves(TtlPreviewLeaf *leaves, int nleaves)
{
	int			i;

	for (i = 0; i < nleaves; i++)
	{
		if (leaves[i].key_index)
			index_close(leaves[i].key_index, NoLock);
		table_close(leaves[i].rel, NoLock);
	}
}
