/*
 * purge_key.c
 *		ttl.doc_purge_key(doc), the key of a container's purge index, and
 *		its encoding.
 *
 * One btree serves both kinds of due items, so a row costs one expression
 * and one index entry (the 1.0 layout had two partial indexes: two
 * predicates and two expressions per row).  The key is
 *
 *		items inheriting the default:	INHERITED_BASE + _ts
 *		items with a positive own ttl:	OWN_BASE + (_ts + ttl)
 *		anything else (ttl -1, no _ts):	NULL
 *
 * (an invalid root ttl, which only a row written around the trigger can
 * hold, counts as absent, as everywhere)
 *
 * with each second clamped to [-2^61, 2^61) so the two ranges can never
 * meet (real Unix seconds are far inside).  Clamping keeps the order of
 * every real value; a clamped absurd value only moves to the end of its
 * range, and every purge re-checks the rule on the row itself.  Inherited
 * items are keyed by _ts, not by _ts + default: a new default applies to
 * them at once (the walk's bound moves, not the keys), while an item's own
 * ttl is its own.  A purge walks [low(kind), encode(kind, cutoff)] of one
 * range, in key order: its cost follows the due rows.
 *
 * Which index is which: ttl_purge_index_kind() recognises the purge
 * indexes of both layouts (ttl.enable marks them with a comment), so that
 * containers enabled before 1.3 keep being purged through their two partial
 * indexes until ttl.upgrade_purge_index_sql() moves them over.
 *
 * Security: an index's definition is read as stored (definitions.c), never
 * through the relcache functions that fold it: folding runs the owner's
 * IMMUTABLE functions with the rights of whoever asks (a superuser, the
 * worker, a reader calling ttl.preview()).
 *
 * Locking: ttl_has_purge_key_index() takes AccessShareLock on the table's
 * indexes it looks at, like the planner; the rest takes none.  Never raises
 * on document content (an index expression).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "fmgr.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/definitions.h"
#include "document/document.h"
#include "document/document_read.h"
#include "document/purge_key.h"
#include "registry/policy.h"

#define TTL_PURGE_INDEX_COMMENT "ttl purge index"

#define KEY_LIMIT		(INT64CONST(1) << 61)
#define INHERITED_BASE	(INT64CONST(1) << 62)
#define OWN_BASE		(-(INT64CONST(1) << 62))

static inline int64
clamp_seconds(int64 s)
{
	if (s < -KEY_LIMIT)
		return -KEY_LIMIT;
	if (s >= KEY_LIMIT)
		return KEY_LIMIT - 1;
	return s;
}

/* The key of an item of that kind whose walk value (_ts or expiry) is seconds. */
int64
ttl_purge_key_encode(int kind, int64 seconds)
{
	return (kind == TTL_KEY_OWN ? OWN_BASE : INHERITED_BASE) + clamp_seconds(seconds);
}

/* The walk value of a key of that kind (clamped values stay clamped). */
int64
ttl_purge_key_decode(int kind, int64 key)
{
	return key - (kind == TTL_KEY_OWN ? OWN_BASE : INHERITED_BASE);
}

/* The lowest key of a kind's range. */
int64
ttl_purge_key_low(int kind)
{
	return ttl_purge_key_encode(kind, PG_INT64_MIN);
}

/*
 * The purge key of a document (its root container, at any address:
 * ttl_datum_jsonb_root); false when it has none (NULL in the index).
 */
bool
ttl_doc_purge_key(const char *root, int64 *key)
{
	bool		has_ts;
	int64		ts = 0;
	TtlItemState item;
	int32		ttl;

	ttl_read_root(root, &has_ts, &ts, &item, &ttl);
	if (!has_ts)
		return false;
	if (item != TTL_ITEM_VALID)
	{
		/* an invalid ttl counts as absent, as in the rule (expiry.c) */
		*key = ttl_purge_key_encode(TTL_KEY_INHERITED, ts);
		return true;
	}
	if (ttl <= 0)
		return false;			/* -1: never expires */
	/* ts is clamped first so that ts + ttl cannot overflow */
	*key = ttl_purge_key_encode(TTL_KEY_OWN, clamp_seconds(ts) + ttl);
	return true;
}

/* ttl.doc_purge_key(doc): the purge index's key, or NULL.  Never raises. */
PG_FUNCTION_INFO_V1(ttl_doc_purge_key_sql);
Datum
ttl_doc_purge_key_sql(PG_FUNCTION_ARGS)
{
	int64		key;

	if (!ttl_doc_purge_key(ttl_jsonb_root_of(PG_GETARG_DATUM(0)), &key))
		PG_RETURN_NULL();
	PG_RETURN_INT64(key);
}

/*
 * A shard of a distributed container (registry/policy.c): Citus copies the purge
 * indexes to the shards but not their comment, so the predicate itself is
 * checked: none for the 1.3 key index (btree or BRIN), WHERE
 * ttl.doc_ttl(doc) IS NULL for 1.0-1.2's inherited index and WHERE
 * ttl.doc_expiry(doc) IS NOT NULL for its own-ttl index, exactly what
 * ttl.enable writes.
 */
static bool
shard_purge_index(Relation index, TtlPurgeIndexKind kind, AttrNumber doc_attno)
{
	List	   *pred;
	NullTest   *test;
	FuncExpr   *func;
	bool		own = (kind == TTL_INDEX_EXPIRY);

	if (!ttl_is_placement(index->rd_index->indrelid))
		return false;
	pred = ttl_index_predicate_as_stored(index);
	if (kind == TTL_INDEX_KEY || kind == TTL_INDEX_KEY_BRIN)
		return pred == NIL;
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
 * What index is to purge: a valid btree on one of ttl's key functions of
 * doc_attno (or, for an append-only container, a BRIN on ttl.doc_purge_key)
 * marked by ttl.enable's comment, itself or (on a partition) the
 * partitioned index it belongs to.  The comment vouches for the predicate
 * of the 1.0-1.2 partial indexes (on a Citus shard, which has no comment,
 * the predicate is checked).
 */
TtlPurgeIndexKind
ttl_purge_index_kind(Relation index, AttrNumber doc_attno)
{
	List	   *exprs;
	FuncExpr   *func;
	Var		   *arg;
	List	   *ancestors;
	char	   *comment;
	char	   *name;
	TtlPurgeIndexKind kind;

	if ((index->rd_rel->relam != BTREE_AM_OID && index->rd_rel->relam != BRIN_AM_OID) ||
		index->rd_index->indnatts != 1 ||
		!index->rd_index->indisvalid ||
		index->rd_index->indkey.values[0] != 0)
		return TTL_INDEX_OTHER;
	exprs = ttl_index_expressions_as_stored(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return TTL_INDEX_OTHER;
	func = (FuncExpr *) linitial(exprs);
	if (list_length(func->args) != 1 || !IsA(linitial(func->args), Var))
		return TTL_INDEX_OTHER;
	arg = (Var *) linitial(func->args);
	if (arg->varattno != doc_attno ||
		get_func_namespace(func->funcid) != get_namespace_oid("ttl", false))
		return TTL_INDEX_OTHER;
	name = get_func_name(func->funcid);
	if (strcmp(name, "doc_purge_key") == 0)
		kind = index->rd_rel->relam == BRIN_AM_OID ? TTL_INDEX_KEY_BRIN : TTL_INDEX_KEY;
	else if (index->rd_rel->relam != BTREE_AM_OID)
		return TTL_INDEX_OTHER;
	else if (strcmp(name, "doc_ts") == 0)
		kind = TTL_INDEX_TS;
	else if (strcmp(name, "doc_expiry") == 0)
		kind = TTL_INDEX_EXPIRY;
	else
		return TTL_INDEX_OTHER;
	ancestors = index->rd_rel->relispartition ?
		get_partition_ancestors(RelationGetRelid(index)) : NIL;
	comment = GetComment(ancestors ? llast_oid(ancestors) : RelationGetRelid(index),
						 RelationRelationId, 0);
	if (comment != NULL && strcmp(comment, TTL_PURGE_INDEX_COMMENT) == 0)
		return kind;
	return shard_purge_index(index, kind, doc_attno) ? kind : TTL_INDEX_OTHER;
}

/*
 * Whether the table (the root of a partitioned one) has a valid purge index
 * of the 1.3 layout on doc_column (btree, or BRIN for append-only): then the statements of purge and of the
 * backlog name ttl.doc_purge_key(doc), else the 1.0-1.2 expressions.
 */
bool
ttl_has_purge_key_index(Oid relid, const char *doc_column)
{
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber	attno = get_attnum(relid, doc_column);
	bool		found = false;
	TtlPurgeIndexKind kind;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		kind = ttl_purge_index_kind(index, attno);
		found = kind == TTL_INDEX_KEY || kind == TTL_INDEX_KEY_BRIN;
		index_close(index, AccessShareLock);
		if (found)
			break;
	}
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Whether index is the deadline index of a container with this deadline
 * property (rule 9): a valid btree on ttl.doc_deadline_key(<doc>,
 * '<property>'), partial WHERE that key IS NOT NULL, marked by
 * ttl.set_deadline_property's comment (itself or, on a partition, its
 * partitioned index), or on a Citus shard, which has no comment, of that
 * shape.  An index of another property (the property was changed since)
 * is not.
 */
bool
ttl_is_deadline_index(Relation index, AttrNumber doc_attno, const char *property)
{
	List	   *exprs;
	List	   *pred;
	FuncExpr   *func;
	Const	   *prop;
	NullTest   *test;
	List	   *ancestors;
	char	   *comment;

	if (property == NULL || index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_index->indnatts != 1 || !index->rd_index->indisvalid ||
		index->rd_index->indkey.values[0] != 0)
		return false;
	exprs = ttl_index_expressions_as_stored(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return false;
	func = (FuncExpr *) linitial(exprs);
	if (list_length(func->args) != 2 || !IsA(linitial(func->args), Var) ||
		!IsA(lsecond(func->args), Const))
		return false;
	prop = (Const *) lsecond(func->args);
	if (((Var *) linitial(func->args))->varattno != doc_attno ||
		((Var *) linitial(func->args))->varlevelsup != 0 ||
		prop->constisnull || prop->consttype != TEXTOID ||
		strcmp(TextDatumGetCString(prop->constvalue), property) != 0 ||
		get_func_namespace(func->funcid) != get_namespace_oid("ttl", false) ||
		strcmp(get_func_name(func->funcid), "doc_deadline_key") != 0)
		return false;
	/* the predicate: the same key IS NOT NULL */
	pred = ttl_index_predicate_as_stored(index);
	if (list_length(pred) != 1 || !IsA(linitial(pred), NullTest))
		return false;
	test = (NullTest *) linitial(pred);
	if (test->nulltesttype != IS_NOT_NULL || test->argisrow ||
		!equal(test->arg, func))
		return false;
	ancestors = index->rd_rel->relispartition ?
		get_partition_ancestors(RelationGetRelid(index)) : NIL;
	comment = GetComment(ancestors ? llast_oid(ancestors) : RelationGetRelid(index),
						 RelationRelationId, 0);
	if (comment != NULL && strcmp(comment, TTL_DEADLINE_INDEX_COMMENT) == 0)
		return true;
	/* a Citus shard: the shape is what ttl.set_deadline_property writes */
	return ttl_is_placement(index->rd_index->indrelid);
}
