/*
 * definitions.c
 *		The one gate through which ttl reads a user table's index
 *		definitions: the expressions and the predicate of an index exactly
 *		as pg_index stores them, as node trees, with nothing evaluated.
 *
 * Why not RelationGetIndexExpressions() / RelationGetIndexPredicate():
 * the first call in a session constant-folds the definition, which runs
 * every IMMUTABLE function in it, and those are the table owner's code,
 * run with the rights of whoever happens to ask (a superuser calling
 * ttl.preview(), the worker, a reader).  ttl only needs to recognise the
 * shape of its own indexes (a call of one of its functions on the document
 * column, a NULL test), which the stored tree shows as well as the folded
 * one: a folded tree differs only where the owner's code ran.  So every
 * look at an index's definition goes through here, and nothing in ttl
 * calls the relcache functions that fold (test/t/011_canary.pl plants
 * such functions and calls every function of the extension).
 *
 * Row-level security policies are never read by ttl (it asks
 * check_enable_rls() whether they apply, which evaluates nothing); a
 * check constraint, default or trigger of the owner's runs only in
 * statements ttl runs as the owner (run_as.c).
 *
 * Locking: none of its own; the caller holds a lock on the index.
 */
#include "postgres.h"

#include "catalog/pg_index.h"
#include "nodes/makefuncs.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/definitions.h"

/* The stored node tree of a pg_index column of the index, or NULL. */
static Node *
stored_index_tree(Relation index, AttrNumber column)
{
	Datum		datum;
	bool		isnull;
	char	   *stored;
	Node	   *tree;

	if (index->rd_indextuple == NULL)
		return NULL;
	datum = SysCacheGetAttr(INDEXRELID, index->rd_indextuple, column, &isnull);
	if (isnull)
		return NULL;
	stored = TextDatumGetCString(datum);
	tree = (Node *) stringToNode(stored);
	pfree(stored);
	return tree;
}

/*
 * The expressions of the index's expression columns, in column order, as
 * stored (NIL when it has none).  Unlike RelationGetIndexExpressions(),
 * nothing is folded, and the list is the caller's.
 */
List *
ttl_index_expressions_as_stored(Relation index)
{
	return (List *) stored_index_tree(index, Anum_pg_index_indexprs);
}

/*
 * The index's predicate as an implicit-AND list, as stored (NIL for a
 * full index).  Unlike RelationGetIndexPredicate(), nothing is folded or
 * canonicalised: ttl compares it with the predicates it writes itself,
 * which are single clauses.
 */
List *
ttl_index_predicate_as_stored(Relation index)
{
	Node	   *pred = stored_index_tree(index, Anum_pg_index_indpred);

	if (pred == NULL)
		return NIL;
	return make_ands_implicit((Expr *) pred);
}
