/*
 * live_view.c
 *		Planner hook that plans a scan of <table>_live as a scan of the table
 *		with ttl.live() as a security qual, instead of a security-barrier
 *		subquery.
 *
 * Why: PostgreSQL never pulls a security_barrier view up into the outer
 * query; it plans the view as a subquery of its own (a second
 * subquery_planner pass, a SubqueryScan to set up), which makes a primary
 * key read through the view with the simple protocol ~20% dearer than on the
 * table.  Row-level security and DML on security_barrier views get the same
 * guarantee without a subquery: the barrier quals become securityQuals of
 * the relation's range table entry, which the planner evaluates before any
 * qual of the query that is not leakproof and never pushes such a qual below
 * them (process_security_barrier_quals, security_level ordering).  This
 * file rewrites our live views into exactly that form, so nothing a reader
 * could see changes: no expired document reaches a non-leakproof function,
 * leakproof filters (ttl.field, ttl.@>, int4eq, texteq) still use indexes.
 *
 * Only views of the exact shape ttl.enable creates are rewritten
 * (SELECT of all columns in table order FROM one table WHERE ttl.live(...),
 * nothing else); anything else (whole-row references to the view, FOR
 * UPDATE, a view edited by hand, a table with dropped columns before the
 * view's columns) is left to the planner's usual subquery.  The view's own
 * range table entries, which carry the reader's permission check on the
 * view, are kept in the query's range table, as a pulled-up view's are.
 *
 * Locking: none taken here; the rewriter has locked the view and the table.
 */
#include "ttl.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"

static planner_hook_type prev_planner_hook = NULL;

/* OID of ttl.live(jsonb, regclass) as last seen; re-checked on mismatch. */
static Oid	live_func_oid = InvalidOid;

static bool
is_live_function(Oid funcid)
{
	char	   *name;
	Oid			nspid;

	if (funcid == live_func_oid)
		return true;
	name = get_func_name(funcid);
	if (name == NULL || strcmp(name, "live") != 0)
		return false;
	nspid = get_func_namespace(funcid);
	if (nspid != get_namespace_oid("ttl", true))
		return false;
	live_func_oid = funcid;
	return true;
}

/*
 * Is this the query of a live view as ttl.enable writes it?  Returns the
 * range table index of the table inside it, or 0.
 */
static int
live_view_table_index(Query *view)
{
	RangeTblRef *ref;
	RangeTblEntry *table;
	FuncExpr   *qual;
	ListCell   *lc;
	AttrNumber	attno = 0;

	if (view->commandType != CMD_SELECT || view->utilityStmt != NULL ||
		view->hasAggs || view->hasWindowFuncs || view->hasTargetSRFs ||
		view->hasSubLinks || view->hasDistinctOn || view->hasRecursive ||
		view->hasModifyingCTE || view->hasForUpdate ||
		view->cteList != NIL || view->groupClause != NIL ||
		view->groupingSets != NIL || view->havingQual != NULL ||
		view->windowClause != NIL || view->distinctClause != NIL ||
		view->sortClause != NIL || view->limitOffset != NULL ||
		view->limitCount != NULL || view->rowMarks != NIL ||
		view->setOperations != NULL || view->withCheckOptions != NIL)
		return 0;

	if (view->jointree == NULL || list_length(view->jointree->fromlist) != 1)
		return 0;
	ref = linitial(view->jointree->fromlist);
	if (!IsA(ref, RangeTblRef))
		return 0;
	table = rt_fetch(ref->rtindex, view->rtable);
	if (table->rtekind != RTE_RELATION || table->tablesample != NULL ||
		(table->relkind != RELKIND_RELATION &&
		 table->relkind != RELKIND_PARTITIONED_TABLE))
		return 0;

	/* WHERE ttl.live(<column of the table>, <constant>) and nothing else */
	qual = (FuncExpr *) view->jointree->quals;
	if (qual == NULL || !IsA(qual, FuncExpr) || list_length(qual->args) != 2 ||
		!IsA(linitial(qual->args), Var) || !IsA(lsecond(qual->args), Const) ||
		((Var *) linitial(qual->args))->varno != ref->rtindex ||
		((Var *) linitial(qual->args))->varlevelsup != 0 ||
		!is_live_function(qual->funcid))
		return 0;

	/* the view's column i is the table's attribute i */
	foreach(lc, view->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var = (Var *) tle->expr;

		attno++;
		if (tle->resjunk || tle->resno != attno || !IsA(var, Var) ||
			var->varno != ref->rtindex || var->varlevelsup != 0 ||
			var->varattno != attno)
			return 0;
	}
	return ref->rtindex;
}

/* Does the query refer to the whole row of range table entry varno? */
typedef struct WholeRowSearch
{
	int			varno;
	int			sublevels_up;
} WholeRowSearch;

static bool
whole_row_walker(Node *node, WholeRowSearch *search)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		return var->varno == search->varno &&
			var->varlevelsup == search->sublevels_up &&
			var->varattno <= 0;
	}
	if (IsA(node, Query))
	{
		bool		found;

		search->sublevels_up++;
		found = query_tree_walker((Query *) node, whole_row_walker, search, 0);
		search->sublevels_up--;
		return found;
	}
	return expression_tree_walker(node, whole_row_walker, search);
}

/*
 * Turn range table entry rti of query (a live view's subquery) into a scan
 * of the view's table with the view's filter as its last security qual.
 * The view's OLD entry, carrying the reader's SELECT check on the view, goes
 * to the end of the query's range table.
 */
static void
flatten_live_view(Query *query, int rti, RangeTblEntry *rte, int table_rti,
				  List **extra_rtes)
{
	Query	   *view = rte->subquery;
	RangeTblEntry *table = rt_fetch(table_rti, view->rtable);
	RangeTblEntry *scan;
	Node	   *filter;
	WholeRowSearch search = {rti, 0};
	int			i;

	if (get_parse_rowmark(query, rti) != NULL)
		return;
	if (query_tree_walker(query, whole_row_walker, &search, 0))
		return;

	filter = copyObject(view->jointree->quals);
	ChangeVarNodes(filter, table_rti, rti, 0);

	scan = copyObject(table);
	ChangeVarNodes((Node *) scan->securityQuals, table_rti, rti, 0);
	scan->securityQuals = lappend(scan->securityQuals, filter);
	scan->alias = rte->alias;
	scan->eref = rte->eref;		/* the names the query knows it by */
	scan->inFromCl = rte->inFromCl;
	scan->lateral = false;
	if (view->hasRowSecurity)
		query->hasRowSecurity = true;

	/*
	 * OLD carries the reader's permission check on the view and makes the
	 * plan depend on the view's definition; NEW checks nothing.
	 */
	for (i = 1; i <= list_length(view->rtable); i++)
		if (i != table_rti &&
			(i == PRS2_OLD_VARNO || rt_fetch(i, view->rtable)->requiredPerms != 0))
			*extra_rtes = lappend(*extra_rtes, rt_fetch(i, view->rtable));

	list_nth_cell(query->rtable, rti - 1)->ptr_value = scan;
}

static bool
flatten_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		List	   *extra_rtes = NIL;
		int			n = list_length(query->rtable);
		int			rti;

		for (rti = 1; rti <= n; rti++)
		{
			RangeTblEntry *rte = rt_fetch(rti, query->rtable);
			int			table_rti;

			if (rte->rtekind != RTE_SUBQUERY || !rte->security_barrier ||
				rte->lateral)
				continue;
			table_rti = live_view_table_index(rte->subquery);
			if (table_rti > 0)
				flatten_live_view(query, rti, rte, table_rti, &extra_rtes);
		}
		query->rtable = list_concat(query->rtable, extra_rtes);
		return query_tree_walker(query, flatten_walker, context, 0);
	}
	return expression_tree_walker(node, flatten_walker, context);
}

static PlannedStmt *
ttl_planner(Query *parse, const char *query_string, int cursor_options,
			ParamListInfo bound_params)
{
	flatten_walker((Node *) parse, NULL);

	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursor_options,
								 bound_params);
	return standard_planner(parse, query_string, cursor_options, bound_params);
}

/* From _PG_init. */
void
ttl_install_planner_hook(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = ttl_planner;
}
