/*
 * live_view_shard.c
 *		Which subqueries a Citus node receives are reads through a
 *		distributed container's live view.  Citus ships the view's
 *		security-barrier subquery as SQL text, which cannot say "security
 *		barrier": (SELECT <columns> FROM <shard> <alias> WHERE
 *		ttl.live(<doc>, '<distributed table>'::regclass)) <view>.  Planned
 *		as it stands, the subquery would be pulled up and its filter ordered
 *		by cost among the reader's quals, so a cheap leaky function could
 *		see expired documents; live_view.c restores the barrier for the
 *		subqueries this file recognises: a plain subquery of exactly the
 *		live view's shape (checked by the caller) over a table that is not
 *		itself a Citus table (a shard), filtered for a Citus table, whose
 *		whole row the query does not use.  Treating a user's own subquery of
 *		that shape as a barrier changes no result.  On the coordinator, the
 *		subquery Citus will ship gets the view's column names
 *		(ttl_name_shipped_outputs).
 *
 * Locking: none; Citus metadata is read through registry/policy.c.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"

#include "live/live_view_parts.h"
#include "registry/policy.h"

/* Does query (at depth levelsup below the entry's level) use entry rti's whole row? */
typedef struct WholeRowContext
{
	int			rti;
	int			levelsup;
} WholeRowContext;

static bool
whole_row_walker(Node *node, WholeRowContext *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		return var->varno == ctx->rti && var->varattno == InvalidAttrNumber &&
			(int) var->varlevelsup == ctx->levelsup;
	}
	if (IsA(node, Query))
	{
		bool		found;

		ctx->levelsup++;
		found = query_tree_walker((Query *) node, whole_row_walker, ctx, 0);
		ctx->levelsup--;
		return found;
	}
	return expression_tree_walker(node, whole_row_walker, ctx);
}

/*
 * Is range table entry rti of query, whose subquery view has the live
 * view's shape over entry table_rti, the shipped shard read of a
 * distributed container's live view?
 */
bool
ttl_is_shipped_shard_read(Query *query, int rti, Query *view, int table_rti)
{
	FuncExpr   *filter = (FuncExpr *) view->jointree->quals;
	Const	   *container = (Const *) lsecond(filter->args);
	WholeRowContext ctx;

	if (!ttl_distribution_loaded())
		return false;
	if (container->constisnull || container->consttype != REGCLASSOID ||
		ttl_distribution_of(DatumGetObjectId(container->constvalue)) == TTL_DIST_NONE ||
		ttl_distribution_of(rt_fetch(table_rti, view->rtable)->relid) != TTL_DIST_NONE)
		return false;
	ctx.rti = rti;
	ctx.levelsup = 0;
	return !query_tree_walker(query, whole_row_walker, &ctx, QTW_IGNORE_RANGE_TABLE);
}

/*
 * A view's stored query names its outputs as they were when it was
 * defined; ALTER VIEW ... RENAME COLUMN (ddl_follow.c, after a column of
 * the table was renamed) renames only the view's columns.  Citus deparses
 * the shipped subquery with the stored names and the query around it with
 * the view's: give the subquery the view's names, as PostgreSQL's own
 * planner sees them.
 */
void
ttl_name_shipped_outputs(RangeTblEntry *rte)
{
	ListCell   *lc;
	int			i = 0;

	foreach(lc, rte->subquery->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (i < list_length(rte->eref->colnames))
			tle->resname = pstrdup(strVal(list_nth(rte->eref->colnames, i)));
		i++;
	}
}
