/*
 * purge_statement.c
 *		The statement path of a purge batch (purge_batch.c), for a table
 *		whose DELETE must do more than delete (triggers, foreign keys,
 *		rules, row security; purge_direct.c says why): the index-driven
 *		batch statement, which locks its rows FOR UPDATE SKIP LOCKED and
 *		deletes them with a DELETE that repeats the expiry rule, the
 *		planner settings it runs under, and the run of one batch of it.
 *
 * Locking: the caller's (purge_batch.c): the container's purge lock and
 * RowExclusiveLock on the table and its partitions, taken without waiting,
 * as the table's owner, SPI connected.  The statement runs on ONLY each
 * leaf in turn (1.9), each leaf's owner checked under that lock
 * (purge_owner.c).  The statement itself locks the
 * rows of its batch, skipping those others hold; the planner settings are
 * set at a GUC nest level of their own and undone after it.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "document/deadline.h"
#include "document/due_range.h"
#include "document/purge_key.h"
#include "insight/purge_failures.h"
#include "purge/archive.h"
#include "purge/progress.h"
#include "purge/purge_internal.h"

/*
 * The batch statement, with $1 = lower key (keyset), $2 = cutoff key,
 * $3 = batch size (NULL: all), $4 = the default, $5 = now (Unix seconds).
 * keyed: through the single purge index of 1.3, whose keys $1 and $2 are
 * (purge_key.c); else through the partial index of the kind (1.0-1.2).
 * It locks a batch in key order through the purge index, skipping rows
 * others hold, then deletes exactly those rows by TID.  The DELETE repeats
 * the expiry rule (ttl.doc_expired) in its own WHERE clause on the target,
 * so it re-checks the very row version it removes: a ctid match alone
 * re-checks nothing on some PostgreSQL 15 minors.  A plain table takes all
 * TIDs in one TID scan; a partitioned one joins on (tableoid, ctid), since
 * a ctid alone names a row only within one partition.  holds: $6 holds the
 * legal holds' matches (purge_hold.c); failures: $7 and $8 the places of
 * the rows left out after their purge failed (purge_failures.c).  With an
 * archive, a fourth column counts the rows the archive took.
 *
 * ttl_batch_candidates_sql is its first part, the rows of one batch locked
 * in key order, which purge_split.c also takes when it splits a batch.
 */
char *
ttl_batch_candidates_sql(const char *table, const char *doc, TtlDueKind kind, bool keyed,
						 const char *deadline, bool holds, bool failures)
{
	const char *key;
	const char *filter;

	if (kind == TTL_DUE_DEADLINE)
	{
		/* the deadline index's expression, exactly (with its constant) */
		key = psprintf("ttl.doc_deadline_key(t.%s, %s::pg_catalog.text)", doc,
					   quote_literal_cstr(deadline));
		filter = "";
	}
	else if (keyed)
	{
		/* $1 and $2 are keys of the kind's range (purge_key.c) */
		key = psprintf("ttl.doc_purge_key(t.%s)", doc);
		filter = "";
	}
	else if (kind == TTL_DUE_INHERITED)
	{
		key = psprintf("ttl.doc_ts(t.%s)", doc);
		filter = psprintf("ttl.doc_ttl(t.%s) IS NULL AND ", doc);
	}
	else
	{
		key = psprintf("ttl.doc_expiry(t.%s)", doc);
		filter = "";
	}
	/* legal hold: held rows are neither locked nor deleted ($6) */
	if (holds)
		filter = psprintf("%s%s", ttl_purge_hold_filter(doc), filter);
	/* rows whose purge failed are left out until their retry_after ($7, $8) */
	if (failures)
		filter = psprintf("%s%s", ttl_failures_filter_sql(7, 8), filter);
	return psprintf("SELECT t.tableoid AS toid, t.ctid AS tid, %s AS k FROM %s t"
					" WHERE %s%s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<=) $2"
					" ORDER BY %s LIMIT $3 FOR UPDATE OF t SKIP LOCKED",
					key, table, filter, key, key, key);
}

char *
ttl_batch_statement(const char *table, const char *doc, TtlDueKind kind, bool partitioned,
					bool keyed, const char *deadline, bool holds, bool failures,
					Oid container, Oid archive)
{
	const char *from;
	const char *where;
	const char *delete;
	const char *recheck;

	/* the whole rule, as the direct deleter re-checks it (purge_rows.c) */
	recheck = ttl_purge_recheck_sql(doc, deadline, 4, 5);
	/* legal hold: held rows are never deleted ($6) */
	if (holds)
		recheck = psprintf("%s%s", ttl_purge_hold_filter(doc), recheck);
	/* the statement deleter (purge_rows.c) */
	if (partitioned)
	{
		from = psprintf("%s t USING c", table);
		where = psprintf("t.tableoid OPERATOR(pg_catalog.=) c.toid"
						 " AND t.ctid OPERATOR(pg_catalog.=) c.tid"
						 " AND %s", recheck);
	}
	else
	{
		from = psprintf("%s t", table);
		where = psprintf("t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT tid FROM c))"
						 " AND %s", recheck);
	}
	/*
	 * archive: the deleted rows go to the archive in this statement, and
	 * the rows it took are counted (ttl_archive_check_count)
	 */
	if (OidIsValid(archive))
		delete = ttl_purge_archived_delete_sql(container, archive, from, where);
	else
		delete = psprintf("d AS (%s)", ttl_purge_delete_sql(from, where, "1"));
	return psprintf("WITH c AS MATERIALIZED ( %s),"
					" %s"
					" SELECT (SELECT pg_catalog.count(*) FROM c),"
					" (SELECT pg_catalog.count(*) FROM d),"
					" (SELECT pg_catalog.max(k) FROM c)%s",
					ttl_batch_candidates_sql(table, doc, kind, keyed, deadline, holds, failures),
					delete,
					OidIsValid(archive) ? ", (SELECT pg_catalog.count(*) FROM a)" : "");
}

/*
 * The DELETE must visit only the locked rows, by TID: a hash or merge join
 * would rescan the whole due key range once per batch.
 */
void
ttl_set_purge_plan_options(void)
{
	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

static int64
spi_int64(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
								  col, isnull);

	return *isnull ? 0 : DatumGetInt64(d);
}

/*
 * The leaves of the batch's container in OID order (a plain table is its
 * own first leaf, then its inheritance children): each gets a statement
 * of its own on ONLY that leaf.  A DELETE on the parent could neither skip
 * a leaf another role owns (its planning alone folds that leaf's index
 * expressions as the owner) nor leave out one attached after the check.
 */
List *
ttl_statement_leaves(Oid relid)
{
	List	   *leaves = NIL;
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			leaf = lfirst_oid(lc);

		if (get_rel_relkind(leaf) != RELKIND_PARTITIONED_TABLE)
			leaves = lappend_oid(leaves, leaf);
	}
	list_sort(leaves, list_oid_cmp);
	return leaves;
}

/*
 * The batch statement on one leaf, under purge's planner settings, from
 * lower (a key of the kind's range) for at most limit rows (< 0: all);
 * its counts and last key added to *out.
 */
static void
leaf_statement(const TtlBatchPlan *plan, Oid leaf, int64 lower, int64 limit,
			   TtlDirectBatch *out)
{
	const char *doc_name = NameStr(plan->policy->doc_column);
	Oid			argtypes[8] = {INT8OID, INT8OID, INT8OID, INT4OID, INT8OID, JSONBARRAYOID,
	OIDARRAYOID, TIDARRAYOID};
	Datum		values[8];
	char		nulls[9] = "        ";
	bool		holds = ttl_purge_hold_active();	/* legal hold: $6 */
	bool		failures = ttl_failures_active();	/* failed rows: $7, $8 */
	int			nargs = failures ? 8 : holds ? 6 : 5;
	bool		isnull;
	bool		keyed = plan->kind != TTL_DUE_DEADLINE &&
		ttl_has_purge_key_index(leaf, doc_name);
	/* the kind's due keys (due_range.c), from the keyset on */
	TtlDueRange range = ttl_due_range(plan->kind, keyed, plan->policy->default_ttl,
									  plan->now_seconds);
	char	   *table;
	char	   *sql;
	int			guc_level;
	int64		found;
	int64		deleted;

	table = psprintf("ONLY %s",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
												get_rel_name(leaf)));
	sql = ttl_batch_statement(table, quote_identifier(doc_name), plan->kind, false, keyed,
							  plan->deadline, holds, failures, plan->relid,
							  plan->policy->archive);
	ttl_due_range_from(&range, lower);
	/* legal hold: start past the held rows at the bottom (purge_hold.c) */
	ttl_due_range_from(&range, ttl_purge_hold_floor(plan->kind));
	values[0] = Int64GetDatum(range.low);
	values[1] = Int64GetDatum(range.high);
	values[2] = Int64GetDatum(limit);
	if (limit < 0)
		nulls[2] = 'n';
	values[3] = Int32GetDatum(plan->policy->default_ttl);
	values[4] = Int64GetDatum(plan->now_seconds);
	values[5] = (Datum) 0;
	if (holds)
		values[5] = ttl_purge_hold_matches();
	else
		nulls[5] = 'n';
	if (failures)
		ttl_failures_arrays(&values[6], &values[7]);
	nulls[nargs] = '\0';
	guc_level = NewGUCNestLevel();
	ttl_set_purge_plan_options();
	if ((OidIsValid(plan->policy->archive) ?	/* its errors name the archive (archive.c) */
		 ttl_archive_execute(plan->relid, plan->policy->archive, sql, nargs, argtypes,
							 values, nulls, 0) :
		 SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0)) != SPI_OK_SELECT)
		elog(ERROR, "purge statement failed on %s", table);
	AtEOXact_GUC(true, guc_level);
	found = spi_int64(0, 1, &isnull);
	deleted = spi_int64(0, 2, &isnull);
	out->found += found;
	out->deleted += deleted;
	out->last_leaf = leaf;
	/* archive: every row deleted is in the archive, or the batch fails */
	if (OidIsValid(plan->policy->archive))
		ttl_archive_check_count(plan->relid, plan->policy->archive, deleted,
								spi_int64(0, 4, &isnull));
	out->last_key = spi_int64(0, 3, &isnull);
	if (!isnull)
		out->last_key = ttl_due_seconds(&range, out->last_key);
	else
		out->last_key = lower;
}

/*
 * The statement path of a batch: the batch statement (ttl_batch_statement)
 * on each leaf in turn (ttl_statement_leaves), from where the last batch
 * stopped (plan->start_leaf at plan->lower_key), until the limit is taken.
 * A leaf another role owns is left alone (purge_owner.c), checked under
 * its lock: the tree's, or taken here without waiting for a leaf attached
 * since (locked by its ATTACH: left for the next round).  Its counts and
 * where it stopped into *out.  Needs SPI connected.
 */
void
ttl_statement_batch(const TtlBatchPlan *plan, const char *relname, TtlDirectBatch *out)
{
	int64		limit = plan->limit;
	ListCell   *lc;

	out->found = 0;
	out->deleted = 0;
	out->last_leaf = plan->start_leaf;
	out->last_key = plan->lower_key;
	/* the statement finds and deletes at once (its archive's INSERT joins it) */
	ttl_progress_phase(TTL_PHASE_DELETING);
	foreach(lc, ttl_statement_leaves(plan->relid))
	{
		Oid			leaf = lfirst_oid(lc);
		bool		first = leaf == plan->start_leaf;

		if (OidIsValid(plan->start_leaf) && leaf < plan->start_leaf)
			continue;			/* done by earlier batches of this kind */
		if (limit >= 0 && out->found >= limit)
			break;
		if (!ConditionalLockRelationOid(leaf, RowExclusiveLock) ||
			!ttl_batch_leaf_fits(plan->relid, leaf) ||
			ttl_retire_defers(plan->relid, leaf))	/* purge_retire.c */
			continue;
		leaf_statement(plan, leaf, first ? plan->lower_key : PG_INT64_MIN,
					   limit < 0 ? -1 : limit - out->found, out);
	}
}
