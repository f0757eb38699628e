/*
 * live_view.c
 *		Plans a read of <table>_live as a scan of the table with ttl.live()
 *		as a security qual, instead of a security-barrier subquery.
 *
 * Why: PostgreSQL never pulls a security_barrier view up into the outer
 * query.  The rewriter copies the view's query in as a subquery and the
 * planner plans it on its own (a second subquery_planner pass, a
 * SubqueryScan), which made a primary-key read through the view with the
 * simple protocol ~20% dearer than on the table.  Row-level security and
 * DML on security_barrier views get the same guarantee without a subquery:
 * the barrier quals become securityQuals of the relation's range table
 * entry, which the planner evaluates before any qual of the query that is
 * not leakproof and never pushes such a qual below them
 * (process_security_barrier_quals, security_level ordering).  This file puts
 * our live views into exactly that form, so nothing a reader could see
 * changes: no expired document reaches a non-leakproof function, leakproof
 * filters (ttl.field, ttl.@>, int4eq, texteq) still use indexes.
 *
 * Two stages.  After parse analysis of a SELECT (post_parse_analyze_hook),
 * a live view still is a relation: it becomes the table scan before the
 * rewriter would copy the view in.  Views the parser does not see (inside
 * other views, in EXPLAIN or DML, in cursors) arrive at the planner as the
 * rewriter's subquery (planner_hook) and are flattened there.  CREATE VIEW
 * analyses its query like a query to run; the post-parse stage stays away
 * from it (a ProcessUtility hook counts the ViewStmts running), so stored
 * definitions keep naming the view.
 *
 * Only views of the exact shape ttl.enable creates are flattened
 * (security_barrier, SELECT of the columns in table order FROM one table
 * WHERE ttl.live(...), nothing else); anything else (whole-row references
 * to the view, FOR UPDATE, a view edited by hand) keeps PostgreSQL's
 * subquery.  When the table has dropped columns, the view's column i is not
 * the table's attribute i: the query's references to the view's columns
 * are mapped to the table's attributes (ReplaceVarsFromTargetList) before
 * the scan and its security quals, which name the table's attributes, take
 * the view's place.  The view's
 * own range table entry, which carries the reader's permission check on the
 * view, is kept in the query's range table (as a pulled-up view's is); it
 * also makes a cached plan depend on the view's definition.
 *
 * Locking: the parser holds AccessShareLock on the view; the post-parse
 * stage takes the table's lock as the rewriter would (the rewriter's own
 * locks cover the planner stage).  The relcache's copy of the view's query
 * is only read.
 *
 * Majors (15, 17, 18 tested; 16 builds by the same guards).  16 moved
 * permission checks into Query->rteperminfos (rte->perminfoindex) and
 * dropped OLD/NEW from views: on 15 the view's check sits on the OLD entry
 * of the view's query, on 16+ on the view's subquery entry itself (relid,
 * perminfoindex kept), and the table is entry 1 (= PRS2_OLD_VARNO).  Those
 * questions are the wrappers of compat.h (no version test here); the result
 * has the shape PostgreSQL leaves after pulling up a plain view (one
 * permission entry per range table entry, the view's kept unreferenced).
 *
 * Why this design (estimated from callgrind counts per point read by key,
 * simple protocol, 15/17/18): PostgreSQL's barrier subquery, no hooks,
 * ~1.2x-1.26x the table (a second planner pass); the planner stage alone
 * ~1.10x-1.12x (the rewriter's view expansion); both stages ~1.08x (1.02x
 * prepared).  Row 3 on 18: bench/results/RESULTS-pg18-row3-after.md.
 * Adding the filter after subquery_planner fixed the qual security levels
 * would lose the ordering guarantee.
 *
 * Citus (behind registry/policy.c): both stages leave a live view of a Citus table to
 * PostgreSQL's security-barrier subquery, which Citus deparses into the
 * shard queries as a subquery (it would drop securityQuals), so the filter
 * runs on the nodes next to the data; router pruning and the shard's
 * indexes still work (leakproof quals pass the barrier).  The node that
 * receives the shard query restores the barrier the text lost
 * (flatten_shard_subquery).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rewriteManip.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "live/live_view.h"
#include "live/live_view_parts.h"
#include "registry/policy.h"


/*
 * Does the query use the view's whole row (v, to_jsonb(v), v.*)?  The
 * parser marks such a use in the view's selected columns for the privilege
 * check (a whole row needs SELECT on every column), whatever query level it
 * comes from.
 */
static bool
uses_whole_row(Bitmapset *selected)
{
	return bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber,
						 selected);
}

/*
 * Turn range table entry rti of query (a live view, as the rewriter's
 * subquery or still as the view relation) into a scan of the view's table
 * with the view's filter as its last security qual.  view is the view's
 * query, table_rti its table's entry in it; the entries that carry the
 * reader's SELECT check on the view (perm_rtes, the view's own entry first)
 * go to the end of the query's range table.  False (nothing changed) when
 * the query locks the view FOR UPDATE or uses its whole row.
 */
static bool
flatten_live_view(Query *query, int rti, RangeTblEntry *rte, Query *view,
				  int table_rti, List *perm_rtes, Bitmapset *selected,
				  List **extra_rtes)
{
	RangeTblEntry *table = rt_fetch(table_rti, view->rtable);
	RangeTblEntry *scan;
	Node	   *filter;

	if (get_parse_rowmark(query, rti) != NULL ||
		uses_whole_row(selected))
		return false;

	filter = copyObject(view->jointree->quals);
	ChangeVarNodes(filter, table_rti, rti, 0);

	if (!ttl_identity_columns(view))
	{
		/*
		 * The table has dropped columns: first the query's references to
		 * the view's columns become references to the table's attributes,
		 * at every query level, as the rewriter maps an updatable view's
		 * columns onto its table (rewriteTargetView).  This runs before the
		 * scan and its security quals, which name the table's attributes
		 * already, take the view's place.
		 */
		List	   *columns = copyObject(view->targetList);
		bool		has_sublinks = query->hasSubLinks;
		Query	   *mapped;

		ChangeVarNodes((Node *) columns, table_rti, rti, 0);
		mapped = (Query *) ttl_replace_vars_from_tlist((Node *) query, rti, 0, rte,
													   columns, REPLACEVARS_REPORT_ERROR,
													   0, &has_sublinks);
		mapped->hasSubLinks = has_sublinks;
		*query = *mapped;
	}

	/*
	 * The view's table entry, copied shallowly (on every read): alias and
	 * eref are replaced below, security quals and (15) the permission
	 * column sets copied: nothing may point into the relcache's view query.
	 */
	scan = makeNode(RangeTblEntry);
	memcpy(scan, table, sizeof(RangeTblEntry));
	scan->securityQuals = copyObject(table->securityQuals);
	ttl_own_rte_perm_columns(scan);
	ttl_copy_perminfo_to(query, view, table, scan);
	ChangeVarNodes((Node *) scan->securityQuals, table_rti, rti, 0);
	scan->securityQuals = lappend(scan->securityQuals, filter);
	scan->alias = rte->alias;
	/* the names the query knows it by, at the table's attribute numbers */
	scan->eref = ttl_identity_columns(view) ? rte->eref : ttl_live_table_eref(rte, table, view);
	scan->inFromCl = rte->inFromCl;
	if (view->hasRowSecurity)
		query->hasRowSecurity = true;

	*extra_rtes = list_concat(*extra_rtes, perm_rtes);
	list_nth_cell(query->rtable, rti - 1)->ptr_value = scan;
	return true;
}

/*
 * Planner stage on a Citus node: the shard query of a read through a
 * distributed container's live view, whose barrier the SQL text lost
 * (live_view_shard.c says which subqueries those are, and why).  It
 * becomes the shard's scan with the filter as its security qual, as a live
 * view is planned on one node; the shard's own entry carries the reader's
 * permission check (no view here).
 */
static void
flatten_shard_subquery(Query *query, int rti, RangeTblEntry *rte, List **extra_rtes)
{
	Query	   *view = rte->subquery;
	int			table_rti = ttl_live_view_table_index(view);

	if (table_rti == 0 || !ttl_is_shipped_shard_read(query, rti, view, table_rti))
		return;
	flatten_live_view(query, rti, rte, view, table_rti, NIL, NULL, extra_rtes);
}

/*
 * Planner stage: the rewriter has made the view a security-barrier
 * subquery.  The reader's permission check on the view is on the entry
 * ttl_view_perm_rte finds (15: the view query's OLD entry, where the
 * rewriter moved it; 16+: the subquery entry itself).  Every check is
 * decided before anything is copied into the query, so that a view that
 * stays a subquery leaves no permission info behind.
 */
static void
flatten_subquery(Query *query, int rti, RangeTblEntry *rte, List **extra_rtes)
{
	Query	   *view = rte->subquery;
	int			table_rti;
	RangeTblEntry *perm;
	Bitmapset  *selected = NULL;
	List	   *perm_rtes;
	int			i;

	if (rte->lateral)
		return;
	if (!rte->security_barrier)
	{
		flatten_shard_subquery(query, rti, rte, extra_rtes);
		return;
	}
	table_rti = ttl_live_view_table_index(view);
	if (table_rti == 0 || table_rti == ttl_view_old_varno)
		return;
	/* a Citus table: Citus ships the subquery to the shards (see above) */
	if (ttl_distribution_of(rt_fetch(table_rti, view->rtable)->relid) != TTL_DIST_NONE)
	{
		ttl_name_shipped_outputs(rte);
		return;
	}
	perm = ttl_view_perm_rte(query, rte, &selected);
	if (perm == NULL || get_parse_rowmark(query, rti) != NULL ||
		uses_whole_row(selected))
		return;
	perm_rtes = list_make1(perm);
	for (i = 1; i <= list_length(view->rtable); i++)
		if (i != table_rti && i != ttl_view_old_varno &&
			ttl_rte_checks_perms(rt_fetch(i, view->rtable)))
			perm_rtes = lappend(perm_rtes,
								ttl_copy_rte_to(query, view, rt_fetch(i, view->rtable)));
	flatten_live_view(query, rti, rte, view, table_rti, perm_rtes, selected,
					  extra_rtes);
}

/*
 * Parse-analysis stage: the view is still a relation, so the rewriter will
 * have nothing to expand (its copy of the view's query, its locks, its
 * walks are a sizeable part of a short query).  The view's definition is
 * read from the relcache; the view's own entry, with the reader's
 * permission check, is kept, as OLD would keep it.
 */
static void
flatten_view_relation(Query *query, int rti, RangeTblEntry *rte,
					  List **extra_rtes)
{
	Relation	rel;
	RuleLock   *rules;
	Query	   *view = NULL;
	int			table_rti = 0;

	if (rte->relkind != RELKIND_VIEW || !rte->inFromCl ||
		query->commandType != CMD_SELECT)
		return;

	rel = relation_open(rte->relid, NoLock);
	rules = rel->rd_rules;
	if (RelationIsSecurityView(rel) && rules != NULL && rules->numLocks == 1 &&
		rules->rules[0]->event == CMD_SELECT && rules->rules[0]->isInstead &&
		rules->rules[0]->qual == NULL &&
		list_length(rules->rules[0]->actions) == 1)
	{
		view = linitial(rules->rules[0]->actions);
		table_rti = ttl_live_view_table_index(view);
	}
	/* a Citus table: the rewriter's barrier subquery, which Citus ships */
	if (table_rti > 0 &&
		ttl_distribution_of(rt_fetch(table_rti, view->rtable)->relid) != TTL_DIST_NONE)
		table_rti = 0;
	if (table_rti > 0)
	{
		/* the reader's check on the view: the query's own entry, shallowly */
		RangeTblEntry *perm = makeNode(RangeTblEntry);
		RangeTblEntry *table = rt_fetch(table_rti, view->rtable);

		memcpy(perm, rte, sizeof(RangeTblEntry));
		perm->inFromCl = false;
		if (flatten_live_view(query, rti, rte, view, table_rti,
							  list_make1(perm), ttl_rte_selected_cols(query, rte),
							  extra_rtes))
			LockRelationOid(table->relid, table->rellockmode);
	}
	relation_close(rel, NoLock);
}

/* When flatten_query runs: after parse analysis, or on the rewritten query. */
typedef enum FlattenStage
{
	FLATTEN_AT_PARSE,
	FLATTEN_AT_PLAN
} FlattenStage;

static void flatten_query(Query *query, FlattenStage stage);

static bool
flatten_sublinks(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))		/* a sublink's subselect */
	{
		flatten_query((Query *) node, *(FlattenStage *) context);
		return false;
	}
	return expression_tree_walker(node, flatten_sublinks, context);
}

/*
 * Every query level: the range table, then the subqueries in it, the CTEs
 * and, only when the parser or rewriter saw any, the sublinks (walking
 * every expression of every query would be most of this file's cost).
 */
static void
flatten_query(Query *query, FlattenStage stage)
{
	List	   *extra_rtes = NIL;
	int			n = list_length(query->rtable);
	int			rti;
	ListCell   *lc;

	for (rti = 1; rti <= n; rti++)
	{
		RangeTblEntry *rte = rt_fetch(rti, query->rtable);

		if (stage == FLATTEN_AT_PLAN && rte->rtekind == RTE_SUBQUERY)
			flatten_subquery(query, rti, rte, &extra_rtes);
		else if (stage == FLATTEN_AT_PARSE && rte->rtekind == RTE_RELATION)
			flatten_view_relation(query, rti, rte, &extra_rtes);
		rte = rt_fetch(rti, query->rtable); /* a flattened view is no subquery */
		if (rte->rtekind == RTE_SUBQUERY)
			flatten_query(rte->subquery, stage);
	}
	query->rtable = list_concat(query->rtable, extra_rtes);

	foreach(lc, query->cteList)
		flatten_query((Query *) ((CommonTableExpr *) lfirst(lc))->ctequery, stage);
	if (query->hasSubLinks)
		query_tree_walker(query, flatten_sublinks, &stage,
						  QTW_IGNORE_RT_SUBQUERIES | QTW_IGNORE_CTE_SUBQUERIES);
}

/* planner_hook's step (ttl.c), before the planner proper. */
void
ttl_live_view_plan(Query *parse)
{
	flatten_query(parse, FLATTEN_AT_PLAN);
}

/* ViewStmts running: their query is a definition to store as written. */
static int	defining_views = 0;

/* post_parse_analyze_hook's step (ttl.c), after the other libraries'. */
void
ttl_live_view_analyzed(Query *query)
{
	if (defining_views == 0 && query->commandType == CMD_SELECT &&
		query->utilityStmt == NULL)
		flatten_query(query, FLATTEN_AT_PARSE);
}

/* ProcessUtility_hook's step (ttl.c): counts the ViewStmts running. */
void
ttl_live_view_utility(TTL_UTILITY_PARAMS, TtlUtilityNext next)
{
	bool		is_view = IsA(pstmt->utilityStmt, ViewStmt);

	if (is_view)
		defining_views++;
	PG_TRY();
	{
		next(TTL_UTILITY_ARGS);
	}
	PG_FINALLY();
	{
		if (is_view)
			defining_views--;
	}
	PG_END_TRY();
}
