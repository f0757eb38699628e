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
 * as the table's owner, SPI connected.  The statement itself locks the
 * rows of its batch, skipping those others hold; the planner settings are
 * set at a GUC nest level of their own and undone after it.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "document/deadline.h"
#include "document/purge_key.h"
#include "purge/archive.h"
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
 * a ctid alone names a row only within one partition.
 */
char *
ttl_batch_statement(const char *table, const char *doc, PurgeKind kind, bool partitioned,
					bool keyed, const char *deadline, const char *archive_insert)
{
	const char *key;
	const char *filter;
	const char *delete;
	const char *recheck;

	/* rule 9: the re-check of a container with a deadline property */
	recheck = deadline == NULL ? psprintf("ttl.doc_expired(t.%s, $4, $5)", doc) :
		psprintf("ttl.doc_expired(t.%s, $4, $5, %s::pg_catalog.text)", doc,
				 quote_literal_cstr(deadline));
	if (kind == PURGE_DEADLINE)
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
	else if (kind == PURGE_INHERITED)
	{
		key = psprintf("ttl.doc_ts(t.%s)", doc);
		filter = psprintf("ttl.doc_ttl(t.%s) IS NULL AND ", doc);
	}
	else
	{
		key = psprintf("ttl.doc_expiry(t.%s)", doc);
		filter = "";
	}
	if (partitioned)
		delete = psprintf("DELETE FROM %s t USING c"
						  " WHERE t.tableoid OPERATOR(pg_catalog.=) c.toid"
						  " AND t.ctid OPERATOR(pg_catalog.=) c.tid"
						  " AND %s RETURNING %s",
						  table, recheck, archive_insert ? "t.*" : "1");
	else
		delete = psprintf("DELETE FROM %s t"
						  " WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT tid FROM c))"
						  " AND %s RETURNING %s",
						  table, recheck, archive_insert ? "t.*" : "1");
	/* archive: the deleted rows go to the archive in this statement (archive.c) */
	if (archive_insert != NULL)
		delete = psprintf("%s), a AS (%s", delete, archive_insert);
	return psprintf("WITH c AS MATERIALIZED ("
					" SELECT t.tableoid AS toid, t.ctid AS tid, %s AS k FROM %s t"
					" WHERE %s%s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<=) $2"
					" ORDER BY %s LIMIT $3 FOR UPDATE OF t SKIP LOCKED),"
					" d AS (%s)"
					" SELECT (SELECT pg_catalog.count(*) FROM c),"
					" (SELECT pg_catalog.count(*) FROM d),"
					" (SELECT pg_catalog.max(k) FROM c)",
					key, table, filter, key, key, key, delete);
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
 * The statement path of a batch: the batch statement (ttl_batch_statement)
 * under purge's planner settings, its counts and last key into *out.  Needs
 * SPI connected.
 */
void
ttl_statement_batch(PurgeCursor *cur, const char *relname, const char *doc_name,
					int64 limit, int64 cutoff, int32 default_ttl, const char *deadline,
					Oid archive, TtlDirectBatch *out)
{
	Oid			argtypes[5] = {INT8OID, INT8OID, INT8OID, INT4OID, INT8OID};
	Datum		values[5];
	bool		isnull;
	bool		partitioned = get_rel_relkind(cur->relid) == RELKIND_PARTITIONED_TABLE;
	bool		keyed = cur->kind != PURGE_DEADLINE &&
		ttl_has_purge_key_index(cur->relid, doc_name);
	int			kind = cur->kind == PURGE_OWN ? TTL_KEY_OWN : TTL_KEY_INHERITED;
	int64		lower = cur->lower_key;
	char	   *table;
	char	   *sql;
	int			guc_level;

	table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(cur->relid)),
									   relname);
	/*
	 * archive: checked again before each batch (an archive locked by DDL:
	 * busy, like the container); its INSERT joins the DELETE (archive.c)
	 */
	if (OidIsValid(archive) && !ttl_archive_check_fit(cur->relid, archive, true))
	{
		cur->busy = true;
		cur->kind = PURGE_DONE;
		memset(out, 0, sizeof(TtlDirectBatch));
		out->last_key = cur->lower_key;
		return;
	}
	sql = ttl_batch_statement(table, quote_identifier(doc_name), cur->kind, partitioned, keyed,
							  deadline,
							  OidIsValid(archive) ? ttl_archive_insert_sql(cur->relid, archive, "d") : NULL);
	/* deadlines: above the key of malformed ones (deadline.h) */
	if (cur->kind == PURGE_DEADLINE)
		lower = Max(lower, TTL_DEADLINE_MALFORMED_KEY + 1);
	values[0] = Int64GetDatum(keyed ? ttl_purge_key_encode(kind, lower) : lower);
	values[1] = Int64GetDatum(keyed ? ttl_purge_key_encode(kind, cutoff) : cutoff);
	values[2] = Int64GetDatum(limit);
	values[3] = Int32GetDatum(default_ttl);
	values[4] = Int64GetDatum(cur->now_seconds);
	guc_level = NewGUCNestLevel();
	ttl_set_purge_plan_options();
	if ((OidIsValid(archive) ?	/* archive: its errors name it (archive.c) */
		 ttl_archive_execute(cur->relid, archive, sql, 5, argtypes, values,
							 limit < 0 ? "  n  " : NULL, 0) :
		 SPI_execute_with_args(sql, 5, argtypes, values, limit < 0 ? "  n  " : NULL,
							   false, 0)) != SPI_OK_SELECT)
		elog(ERROR, "purge statement failed on %s", table);
	AtEOXact_GUC(true, guc_level);
	out->found = spi_int64(0, 1, &isnull);
	out->deleted = spi_int64(0, 2, &isnull);
	out->last_leaf = InvalidOid;
	out->last_key = spi_int64(0, 3, &isnull);
	if (keyed && !isnull)
		out->last_key = ttl_purge_key_decode(kind, out->last_key);
}
