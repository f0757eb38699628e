/*
 * guard_estimate.c
 *		The figure the restore guard (guard.c) decides on: how many rows of
 *		a container are due now, against how many it has, only as far as
 *		telling whether due > fraction * total.
 *
 * total: the planner's estimate of each leaf (estimate_rel_size: reltuples
 * scaled to the table's current size, so a table that grew since its last
 * VACUUM/ANALYZE or index build is still right within a few percent), and
 * an exact count, bounded at EXACT_TOTAL_LIMIT rows, when that estimate is
 * small (a table never vacuumed is assumed to hold 10 pages by the
 * planner, which is far off for a small one).
 *
 * due: a key-ordered walk of the purge index (purge_key.c: the range of
 * items inheriting the default up to now - default, then the range of
 * items with their own ttl up to now) that counts index entries and stops
 * as soon as it has counted floor(fraction * total) + 1 of them: its cost
 * is bounded by the fraction of the table, never by the backlog.  A
 * container of the 1.0 layout walks its two partial indexes the same way
 * (doc_ts for inherited items, doc_expiry for own ones).  An append-only
 * container has a BRIN, no btree: its walk is the same statement without
 * ORDER BY, a bitmap scan over the BRIN's candidate ranges that also stops
 * at the bound (it reads whole block ranges, so it costs more than the
 * btree walk for the same count, but never more than the bound's share of
 * the table).  One without a purge index (1.6) runs the same statement
 * as a sequential scan, stopping at the bound too.
 *
 * Security: the statements are planned and run as the table's owner in a
 * security-restricted operation with search_path pg_catalog, pg_temp
 * (ttl_become_user), naming every function and operator with its schema,
 * as the backlog's walks do (stats.c).
 *
 * Locking: AccessShareLock on the table and its partitions, held to the end
 * of the caller's (sub)transaction, as a SELECT's.
 */
#include "postgres.h"

#include <math.h>

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "optimizer/plancat.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/run_as.h"
#include "document/due_range.h"
#include "document/purge_key.h"
#include "guard/guard_estimate.h"
#include "registry/leaf_owner.h"
#include "registry/registry.h"

/* Below this planner estimate, the rows are counted (up to this many). */
#define EXACT_TOTAL_LIMIT 1000000

/* The planner's estimate of the rows of relid and all its partitions. */
static double
planner_rows(Oid relid)
{
	List	   *rels = find_all_inheritors(relid, AccessShareLock, NULL);
	ListCell   *lc;
	double		total = 0;

	foreach(lc, rels)
	{
		Relation	rel;
		BlockNumber pages;
		double		tuples;
		double		allvisfrac;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		rel = table_open(lfirst_oid(lc), AccessShareLock);
		estimate_rel_size(rel, NULL, &pages, &tuples, &allvisfrac);
		table_close(rel, AccessShareLock);
		if (tuples > 0)
			total += tuples;
	}
	return total;
}

/* Run a count(*) statement with the two int8 bounds ($1 cutoff, $2 low). */
static int64
run_count(const char *sql, int64 cutoff, int64 low)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(cutoff), Int64GetDatum(low)};
	bool		isnull;
	int			rc;

	rc = SPI_execute_with_args(sql, 2, argtypes, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "ttl restore guard count failed: %s", SPI_result_code_string(rc));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Count the entries of key expression `key` in [low, cutoff] (and whatever
 * `extra` adds), at most `limit`.
 */
static int64
walk(const char *table, const char *key, const char *extra, bool ordered,
	 const TtlDueRange *range, int64 limit)
{
	/* a partial index of 1.0-1.2 holds its kind only: no lower bound */
	bool		use_low = range->keyed;

	if (limit <= 0)
		return 0;
	return run_count(psprintf("SELECT pg_catalog.count(*) FROM"
							  " (SELECT 1 FROM %s WHERE %s OPERATOR(pg_catalog.<=) $1%s%s%s%s%s"
							  " LIMIT " INT64_FORMAT ") s",
							  table, key,
							  use_low ? " AND " : "", use_low ? key : "",
							  use_low ? " OPERATOR(pg_catalog.>=) $2" : "",
							  extra,
							  ordered ? psprintf(" ORDER BY %s", key) : "",
							  limit),
					 range->high, range->low);
}

/*
 * The estimate for container c (its registry entry) at now_s (Unix
 * seconds), run as the table's owner.  fraction > 0.
 */
void
ttl_guard_estimate(Oid relid, const TtlContainer *c, int64 now_s, double fraction,
				   TtlGuardEstimate *out)
{
	Oid			owner = ttl_table_owner(relid);
	/*
	 * ONLY each leaf with the owner's: a count on the parent would be
	 * planned over another role's partition too (registry/leaf_owner.c),
	 * whose rows the purge does not take either
	 */
	List	   *leaves;
	const char *col = quote_identifier(NameStr(c->doc_column));
	TtlUserContext ctx;
	int64		limit;
	int64		n = 0;
	ListCell   *lc;

	memset(out, 0, sizeof(*out));
	ttl_become_user(owner, &ctx);
	ttl_spi_connect();

	leaves = ttl_owned_leaves(relid);
	out->total = planner_rows(relid);
	if (out->total < EXACT_TOTAL_LIMIT)
	{
		foreach(lc, leaves)
		{
			if (n > EXACT_TOTAL_LIMIT)
				break;
			n += run_count(psprintf("SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s LIMIT "
									INT64_FORMAT ") s", ttl_only_name(lfirst_oid(lc)),
									(int64) EXACT_TOTAL_LIMIT + 1 - n), 0, 0);
		}
		out->exact_total = n <= EXACT_TOTAL_LIMIT;
		out->total = out->exact_total ? (double) n : Max(out->total, (double) n);
	}

	limit = (int64) floor(fraction * out->total) + 1;
	if (!c->default_is_null && out->total > 0)
	{
		/* the due keys: one place for them all (due_range.c) */
		bool		keyed = c->index_free ||
			ttl_has_purge_key_index(relid, NameStr(c->doc_column));
		TtlDueRange inherited = ttl_due_range(TTL_DUE_INHERITED, keyed, c->default_ttl, now_s);
		TtlDueRange own = ttl_due_range(TTL_DUE_OWN, keyed, c->default_ttl, now_s);

		foreach(lc, leaves)
		{
			char	   *table = ttl_only_name(lfirst_oid(lc));

			if (keyed)
			{
				const char *key = psprintf("ttl.doc_purge_key(%s)", col);
				/* BRIN or no index (append-only): a scan, no order to keep */
				bool		ordered = !c->append_only;

				if (c->default_ttl > 0)
					out->due += walk(table, key, "", ordered, &inherited, limit - out->due);
				out->due += walk(table, key, "", ordered, &own, limit - out->due);
			}
			else
			{
				/* 1.0-1.2 layout: the two partial indexes */
				if (c->default_ttl > 0)
					out->due += walk(table, psprintf("ttl.doc_ts(%s)", col),
									 psprintf(" AND ttl.doc_ttl(%s) IS NULL", col), true,
									 &inherited, limit - out->due);
				out->due += walk(table, psprintf("ttl.doc_expiry(%s)", col), "", true,
								 &own, limit - out->due);
			}
		}
	}
	out->exceeded = out->total > 0 && (double) out->due > fraction * out->total;
	SPI_finish();
	ttl_restore_user(&ctx);
}
