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
 * indexes of both layouts by their shape (expression, predicate, access
 * method, operator family), so that containers enabled before 1.3 keep
 * being purged through their two partial indexes until
 * ttl.upgrade_purge_index_sql() moves them over, and so that an index
 * restored without its comment (pg_dump --no-comments), a user's index of
 * the same shape or a Citus shard's copy serves the purge just the same.
 * Nothing here reads a comment (1.0-1.7 did): which indexes ttl made, for
 * ttl.disable and the other functions that drop them, is recorded in
 * ttl.indexes (registry/index_owner.c).
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
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/definitions.h"
#include "document/document.h"
#include "document/document_read.h"
#include "document/purge_key.h"

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
 * Whether the index's single column orders int8 as int8 does (the default
 * btree family, or a BRIN minmax family): strategy 1 of its family for
 * (int8, int8) is int8's "<".  A bloom BRIN, or a btree family of another
 * order, cannot be walked by key.
 */
static bool
int8_ordered(Relation index)
{
	return index->rd_opcintype[0] == INT8OID &&
		get_opfamily_member(index->rd_opfamily[0], INT8OID, INT8OID,
							BTLessStrategyNumber) == Int8LessOperator;
}

/* Whether expr is ttl.<fname>(doc) with doc the column doc_attno of the table. */
static bool
is_doc_call(Node *expr, AttrNumber doc_attno, const char *fname)
{
	FuncExpr   *func;
	Var		   *arg;

	if (expr == NULL || !IsA(expr, FuncExpr))
		return false;
	func = (FuncExpr *) expr;
	if (list_length(func->args) != 1 || !IsA(linitial(func->args), Var))
		return false;
	arg = (Var *) linitial(func->args);
	return arg->varattno == doc_attno && arg->varlevelsup == 0 &&
		get_func_namespace(func->funcid) == get_namespace_oid("ttl", false) &&
		strcmp(get_func_name(func->funcid), fname) == 0;
}

/*
 * Whether the predicate is what ttl.enable wrote for a purge index of that
 * kind: none for the 1.3 key index (btree or BRIN), WHERE ttl.doc_ttl(doc)
 * IS NULL for 1.0-1.2's inherited index and WHERE ttl.doc_expiry(doc) IS
 * NOT NULL for its own-ttl index.
 */
static bool
purge_predicate_matches(Relation index, TtlPurgeIndexKind kind, AttrNumber doc_attno)
{
	List	   *pred = ttl_index_predicate_as_stored(index);
	NullTest   *test;
	bool		own = (kind == TTL_INDEX_EXPIRY);

	if (kind == TTL_INDEX_KEY || kind == TTL_INDEX_KEY_BRIN)
		return pred == NIL;
	if (list_length(pred) != 1 || !IsA(linitial(pred), NullTest))
		return false;
	test = (NullTest *) linitial(pred);
	if (test->nulltesttype != (own ? IS_NOT_NULL : IS_NULL) || test->argisrow)
		return false;
	return is_doc_call((Node *) test->arg, doc_attno, own ? "doc_expiry" : "doc_ttl");
}

/*
 * What index is to purge, by its shape alone: a valid btree on one of
 * ttl's key functions of doc_attno with the predicate ttl.enable writes
 * for it (or, for an append-only container, a BRIN on ttl.doc_purge_key),
 * ordering int8 as int8.  Whoever made it (ttl, a user, a restore, Citus
 * on a shard): an index of that shape holds exactly the due items' keys.
 * Which of them ttl made, for ttl.disable, is recorded in ttl.indexes
 * (index_owner.c); the comment ttl.enable still writes is only informative.
 */
TtlPurgeIndexKind
ttl_purge_index_kind(Relation index, AttrNumber doc_attno)
{
	List	   *exprs;
	FuncExpr   *func;
	char	   *name;
	TtlPurgeIndexKind kind;

	if ((index->rd_rel->relam != BTREE_AM_OID && index->rd_rel->relam != BRIN_AM_OID) ||
		index->rd_index->indnatts != 1 ||
		!index->rd_index->indisvalid ||
		index->rd_index->indkey.values[0] != 0 ||
		!int8_ordered(index))
		return TTL_INDEX_OTHER;
	exprs = ttl_index_expressions_as_stored(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return TTL_INDEX_OTHER;
	func = (FuncExpr *) linitial(exprs);
	name = get_func_name(func->funcid);
	if (name == NULL || !is_doc_call((Node *) func, doc_attno, name))
		return TTL_INDEX_OTHER;
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
	return purge_predicate_matches(index, kind, doc_attno) ? kind : TTL_INDEX_OTHER;
}

/*
 * Whether an index is on expressions, from its pg_index row: every purge
 * and deadline index is, so an index on plain columns (a primary key) is
 * passed over without building its relation cache entry, the most of what
 * a first look at a table's indexes costs a session.
 */
bool
ttl_index_has_expressions(Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	bool		has;

	if (!HeapTupleIsValid(tup))
		return false;			/* dropped meanwhile */
	has = !heap_attisnull(tup, Anum_pg_index_indexprs, NULL);
	ReleaseSysCache(tup);
	return has;
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
		Relation	index;

		if (!ttl_index_has_expressions(lfirst_oid(lc)))
			continue;
		index = index_open(lfirst_oid(lc), AccessShareLock);
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
 * The deadline property of a deadline index (rule 9), by its shape alone:
 * a valid btree on ttl.doc_deadline_key(<doc>, '<property>'), partial WHERE
 * that key IS NOT NULL, ordering int8 as int8, whoever made it (ttl, a
 * user, a restore, Citus on a shard).  NULL when index is no deadline
 * index.  Which of them ttl made is recorded in ttl.indexes.
 */
char *
ttl_deadline_index_property(Relation index, AttrNumber doc_attno)
{
	List	   *exprs;
	List	   *pred;
	FuncExpr   *func;
	Const	   *prop;
	NullTest   *test;

	if (index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_index->indnatts != 1 || !index->rd_index->indisvalid ||
		index->rd_index->indkey.values[0] != 0 || !int8_ordered(index))
		return NULL;
	exprs = ttl_index_expressions_as_stored(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return NULL;
	func = (FuncExpr *) linitial(exprs);
	if (list_length(func->args) != 2 || !IsA(linitial(func->args), Var) ||
		!IsA(lsecond(func->args), Const))
		return NULL;
	prop = (Const *) lsecond(func->args);
	if (((Var *) linitial(func->args))->varattno != doc_attno ||
		((Var *) linitial(func->args))->varlevelsup != 0 ||
		prop->constisnull || prop->consttype != TEXTOID ||
		get_func_namespace(func->funcid) != get_namespace_oid("ttl", false) ||
		strcmp(get_func_name(func->funcid), "doc_deadline_key") != 0)
		return NULL;
	/* the predicate: the same key IS NOT NULL */
	pred = ttl_index_predicate_as_stored(index);
	if (list_length(pred) != 1 || !IsA(linitial(pred), NullTest))
		return NULL;
	test = (NullTest *) linitial(pred);
	if (test->nulltesttype != IS_NOT_NULL || test->argisrow ||
		!equal(test->arg, func))
		return NULL;
	return TextDatumGetCString(prop->constvalue);
}

/*
 * Whether index is the deadline index of a container with this deadline
 * property (rule 9).  An index of another property (the property was
 * changed since) is not.
 */
bool
ttl_is_deadline_index(Relation index, AttrNumber doc_attno, const char *property)
{
	char	   *has;

	if (property == NULL)
		return false;
	has = ttl_deadline_index_property(index, doc_attno);
	return has != NULL && strcmp(has, property) == 0;
}
