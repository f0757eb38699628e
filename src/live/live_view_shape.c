/*
 * live_view_shape.c
 *		Recognises the query of a live view exactly as ttl.enable writes
 *		it (a security_barrier SELECT of the table's columns in order FROM
 *		one table WHERE ttl.live(<doc column>, <table>) and nothing else),
 *		for the flattening in live_view.c.  Anything else (a view edited by
 *		hand) is not a live view and keeps PostgreSQL's own plan.
 *
 * Locking: none taken; the query is only read (it may be the relcache's
 * copy of the view's rule).  The OID of ttl.live is remembered per backend
 * and re-checked by name on a mismatch (the extension may be re-created).
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "live/live_view_parts.h"

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
int
ttl_live_view_table_index(Query *view)
{
	RangeTblRef *ref;
	RangeTblEntry *table;
	FuncExpr   *qual;
	ListCell   *lc;
	AttrNumber	attno = 0;
	AttrNumber	tableattno = 0;

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

	/*
	 * The view's column i is the table's i-th column that is not dropped
	 * (attribute i when none is: the usual case, checked without a look-up).
	 */
	foreach(lc, view->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var = (Var *) tle->expr;

		attno++;
		if (tle->resjunk || tle->resno != attno || !IsA(var, Var) ||
			var->varno != ref->rtindex || var->varlevelsup != 0 ||
			var->varattno < attno)
			return 0;
		if (var->varattno != tableattno + 1 &&
			!ttl_only_dropped_between(table->relid, tableattno, var->varattno))
			return 0;
		tableattno = var->varattno;
	}
	return ref->rtindex;
}
