/*
 * live_view_columns.c
 *		How a live view's columns map onto its table's attributes when the
 *		table has dropped columns (the view's column i is then not the
 *		table's attribute i), for live_view.c's flattening: whether the
 *		columns between two attributes are all dropped, whether the mapping
 *		is the identity, and the column names the scan keeps.
 *
 * Locking: none; attribute look-ups through the syscache, on a table the
 * caller has locked.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "utils/syscache.h"

#include "live/live_view_parts.h"

/* Are the table's attributes after `from` and before `to` all dropped? */
bool
ttl_only_dropped_between(Oid relid, AttrNumber from, AttrNumber to)
{
	AttrNumber	a;

	for (a = from + 1; a < to; a++)
	{
		HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
										  Int16GetDatum(a));
		bool		dropped;

		if (!HeapTupleIsValid(tup))
			return false;
		dropped = ((Form_pg_attribute) GETSTRUCT(tup))->attisdropped;
		ReleaseSysCache(tup);
		if (!dropped)
			return false;
	}
	return true;
}

/* Does the view's column i read the table's attribute i, for every i? */
bool
ttl_identity_columns(Query *view)
{
	ListCell   *lc;

	foreach(lc, view->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (((Var *) tle->expr)->varattno != tle->resno)
			return false;
	}
	return true;
}

/*
 * The names the query knows the scan's columns by, indexed by the table's
 * attribute numbers (dropped attributes get empty names, as the parser
 * gives them): the view's names where the view has the column.
 */
Alias *
ttl_live_table_eref(RangeTblEntry *view_rte, RangeTblEntry *table, Query *view)
{
	int			natts = list_length(table->eref->colnames);
	List	   *names = NIL;
	int			a;
	ListCell   *lc;

	for (a = 1; a <= natts; a++)
		names = lappend(names, list_nth(table->eref->colnames, a - 1));
	foreach(lc, view->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		AttrNumber	tattno = ((Var *) tle->expr)->varattno;

		if (tattno <= natts && tle->resno <= list_length(view_rte->eref->colnames))
			list_nth_cell(names, tattno - 1)->ptr_value =
				list_nth(view_rte->eref->colnames, tle->resno - 1);
	}
	return makeAlias(view_rte->eref->aliasname, names);
}
