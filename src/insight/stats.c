/*
 * stats.c
 *		The purge backlog of a container: ttl.backlog(regclass) and
 *		ttl._backlog(regclass) (ttl.stats up to 1.8), each key range walked
 *		up to 1,000,000 rows; ttl._stats_backlog(regclass) (1.9), read by
 *		the view ttl.stats, and ttl._monitor_backlog(regclass) (1.9), read
 *		by ttl.container_metrics for monitoring roles without table rights,
 *		both counting up to 1,000 rows per container and saying when they
 *		stopped there (capped), so that a view over every container costs
 *		per container a few index pages, not its backlog; and
 *		ttl_record_purge(), which adds a purge's outcome to ttl.purge_stats
 *		(as the extension's owner, ttl_registry_execute), and with it the
 *		replacement deletes of rule 10 pending in ttl.purge_stats_pending.
 *
 * Reading statistics must never run anything on a user table as the
 * reader: planning a query on a table constant-folds the IMMUTABLE
 * functions of its index expressions, which belong to the table's owner.
 * So the two walks over the purge indexes are planned and run as the
 * table's owner, inside a security-restricted operation with search_path
 * pg_catalog, pg_temp (ttl_become_user), and name every function and
 * operator with its schema.  The reader needs SELECT on the table, and
 * row-level security must not apply to the reader there (the walks count
 * rows its policies would hide): otherwise ttl._backlog returns NULLs and
 * ttl.backlog raises 42501.  A table that
 * no longer exists (a registry row left behind, e.g. by a TEMP table whose
 * session ended) or a temporary table of another session gives NULLs.
 * In ttl.stats, an error while computing one container's backlog gives
 * NULLs and a WARNING rather than failing the whole view.  A container with
 * a deadline property (rule 9) has a third walk, over its deadline index.
 * Where a walk reads no row (a btree purge index, no legal hold, no failing
 * row, no row-level security on the leaf), it is no query: the btree is
 * counted in C as an index-only scan counts (index_count.c), so nothing is
 * planned and nothing of the owner's runs.  The oldest due item is always
 * exact: the first key of each range, by a probe of its own.
 *
 * Locking: AccessShareLock on the table, taken after the privilege check
 * and held to the end of the transaction, as a SELECT would; existence is
 * checked again once it is held, so a concurrent DROP gives NULLs rather
 * than an error.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "base/run_as.h"
#include "base/settings.h"
#include "base/sql_version.h"
#include "base/subxact.h"
#include "document/deadline.h"
#include "document/due_range.h"
#include "document/purge_key.h"
#include "insight/index_count.h"
#include "insight/legal_hold_backlog.h"
#include "insight/purge_failures.h"
#include "insight/stats.h"
#include "registry/leaf_owner.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * ttl.backlog walks each purge key range for at most this many rows (as in
 * 1.0).  The worker, which publishes a backlog each time it leaves a
 * database (once a round), walks far fewer (TTL_SCHEDULER_WALK_LIMIT).
 */
#define BACKLOG_WALK_LIMIT 1000000

/*
 * ttl.stats and ttl.container_metrics (1.9) count at most this many due
 * rows per container, in all its key ranges and leaves: a view over every
 * container must answer in a time that follows the number of containers,
 * not their backlogs (1,000 containers holding 10M expired rows in all:
 * 4 s with the walks of ttl.backlog, bench row 19).  Past it the count is
 * a lower bound and says so (expired_backlog_capped); the oldest due item
 * is exact whatever the count (a probe of each range).
 */
#define STATS_WALK_LIMIT 1000

typedef struct TtlBacklog
{
	bool		known;			/* false: NULL columns */
	int64		expired;
	bool		have_oldest;
	int64		oldest_s;		/* Unix seconds */
	/* the walks stopped at their limit: expired is a lower bound */
	bool		capped;
	/* the limit is the container's in all (STATS_WALK_LIMIT), not per range */
	bool		cap_total;
	/* legal hold: set, count the due items it matches (held_expired) */
	Jsonb	   *held_match;
} TtlBacklog;

/*
 * One walk, as the current (owner's) role: the count of at most `limit`
 * due entries (the walk's LIMIT; its key ranges [$2, $1]), the smallest
 * key of the wanted ones and how many entries were read.  The smallest key
 * comes from a probe of its own (the first wanted entry of the range, one
 * descent of the index: past a few held or failing rows at worst), so that
 * it is exact however small the limit is.  Needs SPI connected.
 */
static Datum backlog_holds;		/* legal hold: $3, when there are holds */
static Datum backlog_failed[2];	/* rows recorded as failing: $4, $5, or 0 */

typedef struct BacklogWalk
{
	const char *key;			/* SQL: the walk's key */
	const char *cond;			/* SQL: its range ($1, $2) */
	const char *table;			/* ONLY the leaf */
	const char *count;			/* SQL on s: what it counts (NULL: h->count) */
	const char *extra;			/* SQL: more columns of s, or "" */
	bool		probe;			/* the smallest key by a probe of its own */
} BacklogWalk;

static void
backlog_walk(const BacklogWalk *w, const TtlBacklogHolds *h, const TtlDueRange *range,
			 int64 limit, int64 *count, bool *have_min, int64 *min, int64 *read)
{
	Oid			argtypes[5] = {INT8OID, INT8OID, JSONBARRAYOID, OIDARRAYOID, TIDARRAYOID};
	Datum		values[5] = {Int64GetDatum(range->high), Int64GetDatum(range->low),
						   backlog_holds, backlog_failed[0], backlog_failed[1]};
	char		nulls[5] = {' ', ' ', backlog_holds != (Datum) 0 ? ' ' : 'n', ' ', ' '};
	const char *min_sql = h->min;
	const char *sql;
	bool		isnull;
	int			rc;

	if (w->probe)
		min_sql = psprintf("(SELECT s.k FROM (SELECT %s AS k, %s AS h FROM %s WHERE %s) s"
						   " WHERE %s ORDER BY 1 LIMIT 1)",
						   w->key, h->held, w->table, w->cond, h->wanted);
	sql = psprintf("SELECT %s, %s, pg_catalog.count(*) FROM"
				   " (SELECT %s AS k, %s AS h%s FROM %s WHERE %s ORDER BY 1 LIMIT " INT64_FORMAT ") s",
				   w->count ? w->count : h->count, min_sql,
				   w->key, h->held, w->extra, w->table, w->cond, limit);
	rc = SPI_execute_with_args(sql,
							   backlog_failed[0] != (Datum) 0 ? 5 :
							   backlog_holds != (Datum) 0 ? 3 : 2,
							   argtypes, values, nulls, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "ttl backlog walk failed: %s", SPI_result_code_string(rc));
	*count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	*min = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 2, &isnull));
	*have_min = !isnull;
	*read = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 3, &isnull));
}

/*
 * Walk one range of one leaf with what is left of the limit (of the leaf's
 * share: ttl.backlog; of the container's: ttl.stats), adding its count to
 * out; the smallest key in *k.  A walk with nothing left still probes its
 * smallest key (the oldest stays exact); where that needs a walk (no index
 * to probe) it reads one entry and does not count it.
 */
static void
walk_add(TtlBacklog *out, const BacklogWalk *w, const TtlBacklogHolds *h,
		 const TtlDueRange *range, int64 limit, int64 leaf_left, bool *have_k, int64 *k)
{
	int64		left = out->cap_total ? limit - out->expired : leaf_left;
	int64		n;
	int64		read;
	bool		forced = false;

	left = Max(left, 0);
	if (left == 0 && !w->probe)
	{
		left = 1;
		forced = true;
	}
	backlog_walk(w, h, range, left, &n, have_k, k, &read);
	if (forced || left == 0)
	{
		/* nothing counted here: something due makes the count a lower bound */
		if (*have_k)
			out->capped = true;
		return;
	}
	if (read >= left)
		out->capped = true;
	out->expired += n;
}

/*
 * The btree on the purge key of one leaf (1.3), locked as the planner
 * would lock it; NULL when it has none (BRIN, index-free, 1.0-1.2, invalid).
 */
static Relation
open_key_btree(Relation leaf, const char *doc_column)
{
	AttrNumber	attno = get_attnum(RelationGetRelid(leaf), doc_column);
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(leaf))
	{
		Relation	index;

		if (!ttl_index_has_expressions(lfirst_oid(lc)))
			continue;			/* not a purge index: not opened */
		index = index_open(lfirst_oid(lc), AccessShareLock);
		if (index->rd_rel->relam == BTREE_AM_OID &&
			ttl_purge_index_kind(index, attno) == TTL_INDEX_KEY)
			return index;
		index_close(index, AccessShareLock);
	}
	return NULL;
}

/*
 * walk_add without SQL: one range of a leaf counted through its purge key
 * btree in C, as an index-only scan counts (index_count.c), and its first
 * key.  For the walks that need no row read (no legal hold, no failing
 * row) on a leaf without row-level security (with it, forced on the owner,
 * the walk counts what its policies show): nothing is planned or run, so a
 * view over many containers costs a descent of each index and the entries
 * counted, and nothing of the owner's (an index expression folded by a
 * planner) runs.
 */
static void
scan_add(TtlBacklog *out, Relation leaf, Relation index, const TtlDueRange *range,
		 int64 limit, int64 leaf_left, bool *have_k, int64 *k)
{
	ScanKeyData keys[2];
	int64		left = out->cap_total ? limit - out->expired : leaf_left;
	int64		n;
	bool		capped;

	ttl_due_scankeys(range, keys);
	ttl_btree_count_range(leaf, index,
						  ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot(),
						  keys, 2, Max(left, 0), &n, &capped, have_k, k);
	out->expired += n;
	if (capped)
		out->capped = true;
}

/*
 * The two walks of 1.0's ttl.backlog, as the table's owner: items without
 * their own ttl through the _ts index (only for a positive default), items
 * with a positive own ttl through the expiry index.
 */
static void
compute_backlog(Oid relid, Oid owner, Oid nspid, const TtlContainer *c,
				int64 now_s, int64 limit, TtlBacklog *out)
{
	char	   *table;
	const char *col = quote_identifier(NameStr(c->doc_column));
	ListCell   *lc;
	TtlUserContext ctx;
	int64		k;
	bool		have_k;
	bool		keyed;
	TtlDueRange inherited;
	TtlDueRange own;
	TtlDueRange deadline;
	TtlBacklogHolds h;

	out->known = true;
	out->expired = 0;
	out->have_oldest = false;
	out->capped = false;
	if (c->default_is_null)
		return;					/* TTL off: nothing expires */
	/* legal hold: held rows are left out, or counted alone (legal_hold_backlog.c) */
	ttl_backlog_holds_begin(&h, relid, col, out->held_match);
	backlog_holds = h.matches;
	/*
	 * 1.9: rows recorded as failing (ttl.purge_failures) are left out like
	 * held ones: no purge deletes them until they change, and the oldest
	 * of them must not keep the container behind (behind.c).
	 */
	backlog_failed[0] = backlog_failed[1] = (Datum) 0;
	if (out->held_match == NULL &&
		ttl_failures_places(relid, &backlog_failed[0], &backlog_failed[1]) > 0)
		h.held = psprintf("(%s OR EXISTS (SELECT FROM ROWS FROM (pg_catalog.unnest($4::pg_catalog.oid[]),"
						  " pg_catalog.unnest($5::pg_catalog.tid[])) q(o, c)"
						  " WHERE q.o OPERATOR(pg_catalog.=) tableoid"
						  " AND q.c OPERATOR(pg_catalog.=) ctid))", h.held);

	ttl_become_user(owner, &ctx);
	ttl_spi_connect();
	/* the due keys: one place for them all (due_range.c) */
	keyed = c->index_free || ttl_has_purge_key_index(relid, NameStr(c->doc_column));
	inherited = ttl_due_range(TTL_DUE_INHERITED, keyed, c->default_ttl, now_s);
	own = ttl_due_range(TTL_DUE_OWN, keyed, c->default_ttl, now_s);
	deadline = ttl_due_range(TTL_DUE_DEADLINE, keyed, c->default_ttl, now_s);
	/* legal hold: from the floors past held rows (legal_hold_backlog.c) */
	ttl_backlog_holds_from(&h, &inherited);
	ttl_backlog_holds_from(&h, &own);
	ttl_backlog_holds_from(&h, &deadline);

	/*
	 * Leaf by leaf, on ONLY each leaf with the container's owner: a walk
	 * of the parent would be planned over every partition, so another
	 * role's partition would have its index expressions folded as this
	 * owner (registry/leaf_owner.c).  Such a partition is not purged
	 * either, so its rows are not counted.  Each leaf walks at most what
	 * is left of the limit.  An owner changed meanwhile only makes the
	 * count approximate: the purge checks again under its own lock.
	 */
	foreach(lc, ttl_owned_leaves(relid))
	{
		int64		leaf_left = limit - out->expired;
		BacklogWalk w = {0};

		table = ttl_only_name(lfirst_oid(lc));
		w.table = table;
		w.extra = "";
		/* without an index the walk reads the table: its own smallest key */
		w.probe = !c->index_free;
		have_k = false;
		if (keyed)
		{
			Relation	leaf = NULL;
			Relation	index = NULL;

			/*
			 * 1.3: both kinds are ranges of the single index (purge_key.c); an
			 * index-free container (1.6) scans the table for the same ranges.
			 * Without a hold or a failing row to leave out, a btree is read
			 * in C (scan_add); else by SQL, which reads the rows.
			 */
			if (!c->index_free && h.matches == (Datum) 0 && backlog_failed[0] == (Datum) 0)
			{
				leaf = table_open(lfirst_oid(lc), AccessShareLock);
				/* row-level security counts what the owner's policies show: SQL */
				if (!leaf->rd_rel->relrowsecurity)
					index = open_key_btree(leaf, NameStr(c->doc_column));
			}
			w.key = psprintf("ttl.doc_purge_key(%s)", col);
			w.cond = psprintf("%1$s OPERATOR(pg_catalog.<=) $1 AND %1$s OPERATOR(pg_catalog.>=) $2",
							  w.key);
			if (c->default_ttl > 0)
			{
				if (index != NULL)
					scan_add(out, leaf, index, &inherited, limit, leaf_left, &have_k, &k);
				else
					walk_add(out, &w, &h, &inherited, limit, leaf_left, &have_k, &k);
				if (have_k)
				{
					/* a due key decodes to a _ts <= now - default: no overflow */
					k = ttl_due_seconds(&inherited, k) + c->default_ttl;
					if (!out->have_oldest || k < out->oldest_s)
						out->oldest_s = k;
					out->have_oldest = true;
				}
			}
			if (index != NULL)
				scan_add(out, leaf, index, &own, limit, leaf_left, &have_k, &k);
			else
				walk_add(out, &w, &h, &own, limit, leaf_left, &have_k, &k);
			if (have_k)
				k = ttl_due_seconds(&own, k);
			if (index != NULL)
				index_close(index, NoLock);
			if (leaf != NULL)
				table_close(leaf, NoLock);
		}
		else
		{
			/* 1.0-1.2: one partial index per kind */
			if (c->default_ttl > 0)
			{
				w.key = psprintf("ttl.doc_ts(%s)", col);
				w.cond = psprintf("ttl.doc_ttl(%1$s) IS NULL AND ttl.doc_ts(%1$s) OPERATOR(pg_catalog.<=) $1",
								  col);
				walk_add(out, &w, &h, &inherited, limit, leaf_left, &have_k, &k);
				if (have_k)
				{
					/* k <= now - default, so this cannot overflow */
					if (!out->have_oldest || k + c->default_ttl < out->oldest_s)
						out->oldest_s = k + c->default_ttl;
					out->have_oldest = true;
				}
			}
			w.key = psprintf("ttl.doc_expiry(%s)", col);
			w.cond = psprintf("%s OPERATOR(pg_catalog.<=) $1", w.key);
			walk_add(out, &w, &h, &own, limit, leaf_left, &have_k, &k);
		}
		if (have_k && (!out->have_oldest || k < out->oldest_s))
		{
			out->oldest_s = k;
			out->have_oldest = true;
		}
		if (TTL_HAS_DEADLINE(c))
		{
			/*
			 * Rule 9: the deadline index up to now; items the walks above
			 * counted already (due by their lifetime too) are not counted
			 * again, and an item expired at the earlier of the two.
			 */
			w.key = psprintf("ttl.doc_deadline_key(%s, %s::pg_catalog.text)", col,
							 quote_literal_cstr(c->deadline_property));
			w.cond = psprintf("%1$s OPERATOR(pg_catalog.<=) $1 AND %1$s OPERATOR(pg_catalog.>=) $2",
							  w.key);
			w.count = psprintf("pg_catalog.count(*) FILTER (WHERE NOT s.e AND %s)", h.wanted);
			w.extra = psprintf(", ttl.doc_expired(%s, %d, " INT64_FORMAT "::pg_catalog.int8) AS e",
							   col, c->default_ttl, now_s);
			walk_add(out, &w, &h, &deadline, limit, leaf_left, &have_k, &k);
			if (have_k && (!out->have_oldest || k < out->oldest_s))
			{
				out->oldest_s = k;
				out->have_oldest = true;
			}
		}
	}
	SPI_finish();
	ttl_restore_user(&ctx);
	backlog_holds = (Datum) 0;
	backlog_failed[0] = backlog_failed[1] = (Datum) 0;
}

/*
 * compute_backlog for ttl.stats, where one container must not break the
 * view for everyone: an error (say, the owner's index expression raises
 * one when planned) gives NULLs and a WARNING instead.  A cancel or a
 * timeout still ends the statement.  The subtransaction's abort also
 * undoes the role switch and the SPI connection.
 */
typedef struct BacklogStep
{
	Oid			relid;
	Oid			owner;
	Oid			nspid;
	const TtlContainer *c;
	int64		now_s;
	int64		limit;
	TtlBacklog *out;
} BacklogStep;

static void
backlog_step(void *arg)
{
	BacklogStep *s = (BacklogStep *) arg;

	compute_backlog(s->relid, s->owner, s->nspid, s->c, s->now_s, s->limit, s->out);
}

static void
compute_backlog_or_null(Oid relid, Oid owner, Oid nspid, const TtlContainer *c,
						int64 now_s, int64 limit, bool stats_reader, TtlBacklog *out)
{
	BacklogStep step = {relid, owner, nspid, c, now_s, limit, out};
	ErrorData  *edata;

	if (ttl_run_in_subtransaction(backlog_step, &step, &edata))
		return;
	out->known = false;
	/*
	 * A reader who may not read the table (pg_read_all_stats, for
	 * ttl.container_metrics) is not shown the error's words, which may
	 * quote a row: as ttl.stats.last_error is not shown to it.
	 */
	if (stats_reader)
	{
		ereport(WARNING,
				(errmsg("could not compute the backlog of container \"%s\"",
						quote_qualified_identifier(get_namespace_name(nspid),
												   get_rel_name(relid))),
				 errdetail("Its backlog columns in ttl.container_metrics are NULL; ttl.stats shows the error to readers of the table.")));
		FreeErrorData(edata);
		return;
	}
	ereport(WARNING,
			(errmsg("could not compute the backlog of container \"%s\": %s",
					quote_qualified_identifier(get_namespace_name(nspid),
											   get_rel_name(relid)),
					edata->message),
			 errdetail("Its backlog columns in ttl.stats are NULL.")));
	FreeErrorData(edata);
}

/*
 * Whether the caller may see relid's backlog as far as row-level security
 * goes: the walks count every row, as the owner, so where policies filter
 * the caller's rows (RLS enabled and the caller neither the owner without
 * FORCE nor BYPASSRLS; also with row_security off, which would make the
 * caller's own query fail) the count would tell what they hide.  Decided
 * here, as the caller (GetUserId()), before anything runs as the owner,
 * for which check_enable_rls would answer.  With must_read, 42501 as
 * ttl.preview gives; else false (NULLs).
 */
static bool
backlog_visible_to_caller(Oid relid, bool must_read)
{
	if (check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED)
		return true;
	if (!must_read)
		return false;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("row-level security applies to you on table %s",
					ttl_relation_display_name(relid)),
			 errdetail("ttl.backlog counts every expired item of the table, which would reveal items row-level security hides from you."),
			 errhint("Run it as the table's owner or as a role that bypasses row-level security; ttl.stats shows NULL backlog columns for such tables instead.")));
	return false;				/* keep the compiler quiet */
}

/*
 * The backlog of relid as the caller may see it.  With must_read, a
 * caller without SELECT on the table, or to whom row-level security
 * applies on it, gets 42501; else NULLs.
 */
static void
container_backlog(Oid relid, bool must_read, bool stats_reader, int64 limit,
				  TtlBacklog *out)
{
	HeapTuple	tup;
	Oid			nspid;
	Oid			owner;
	bool		is_missing = false;
	TtlContainer c;
	int64		now_s = ttl_current_unix_seconds();

	out->known = false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return;					/* gone: a registry row left behind */
	nspid = ((Form_pg_class) GETSTRUCT(tup))->relnamespace;
	ReleaseSysCache(tup);
	if (isOtherTempNamespace(nspid))
		return;					/* nobody but its session can read it */

	if (!stats_reader &&
		pg_class_aclcheck_ext(relid, GetUserId(), ACL_SELECT, &is_missing) != ACLCHECK_OK)
	{
		if (is_missing || !must_read)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(relid)),
				 errdetail("The backlog of a container is computed only for roles that can SELECT from its table."),
				 errhint("ttl.stats shows NULL backlog columns for such tables instead.")));
	}

	LockRelationOid(relid, AccessShareLock);
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return;					/* dropped while we waited */
	nspid = ((Form_pg_class) GETSTRUCT(tup))->relnamespace;
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	if (!stats_reader && !backlog_visible_to_caller(relid, must_read))
		return;

	/* a shard of a distributed container: the policy its trigger carries */
	if (!ttl_policy_lookup(relid, &c))
	{
		/* not a container: nothing expires (as 1.0) */
		out->known = true;
		out->expired = 0;
		out->have_oldest = false;
		return;
	}
	if (must_read)
		compute_backlog(relid, owner, nspid, &c, now_s, limit, out);
	else
		compute_backlog_or_null(relid, owner, nspid, &c, now_s, limit, stats_reader, out);
}

static Datum
backlog_datum(FunctionCallInfo fcinfo, const TtlBacklog *b)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (b->known)
	{
		values[0] = Int64GetDatum(b->expired);
		nulls[0] = false;
		/* 1.9's functions for ttl.stats and ttl.container_metrics: capped */
		values[2] = BoolGetDatum(b->capped);
		nulls[2] = false;
	}
	if (b->known && b->have_oldest)
	{
		TimestampTz ts;

		/* an instant before the timestamp range is older than anything */
		if (pg_sub_s64_overflow(b->oldest_s, TTL_UNIX_EPOCH_OFFSET, &ts) ||
			pg_mul_s64_overflow(ts, USECS_PER_SEC, &ts) ||
			!IS_VALID_TIMESTAMP(ts))
			TIMESTAMP_NOBEGIN(ts);
		values[1] = TimestampTzGetDatum(ts);
		nulls[1] = false;
	}
	Assert(tupdesc->natts == 2 || tupdesc->natts == 3);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/* ttl.backlog(container): 42501 for a caller who cannot read the table. */
PG_FUNCTION_INFO_V1(ttl_backlog);
Datum
ttl_backlog(PG_FUNCTION_ARGS)
{
	TtlBacklog	b = {0};

	container_backlog(PG_GETARG_OID(0), true, false, BACKLOG_WALK_LIMIT, &b);
	return backlog_datum(fcinfo, &b);
}

/*
 * ttl._backlog(container), for ttl.stats up to 1.8: NULLs instead of
 * 42501, each key range walked up to BACKLOG_WALK_LIMIT.
 */
PG_FUNCTION_INFO_V1(ttl_backlog_if_readable);
Datum
ttl_backlog_if_readable(PG_FUNCTION_ARGS)
{
	TtlBacklog	b = {0};

	container_backlog(PG_GETARG_OID(0), false, false, BACKLOG_WALK_LIMIT, &b);
	return backlog_datum(fcinfo, &b);
}

/*
 * ttl._stats_backlog(container) (1.9), for ttl.stats: as ttl._backlog, the
 * count stopped at STATS_WALK_LIMIT for the container (capped says so),
 * the oldest exact.
 */
PG_FUNCTION_INFO_V1(ttl_stats_backlog);
Datum
ttl_stats_backlog(PG_FUNCTION_ARGS)
{
	TtlBacklog	b = {0};

	b.cap_total = true;
	container_backlog(PG_GETARG_OID(0), false, false, STATS_WALK_LIMIT, &b);
	return backlog_datum(fcinfo, &b);
}

/*
 * ttl._monitor_backlog(container) (1.9), for the view ttl.container_metrics:
 * the same counts and oldest due item as ttl._backlog, for a role with the
 * privileges of pg_read_all_stats (pg_monitor's), which may read every
 * table's statistics (pg_stat_all_tables counts rows whatever their
 * privileges and policies) but need not read any table.  Only a count and
 * a time: nothing of a document.  Not a SECURITY DEFINER: the walks run as
 * the table's owner, as for every other reader (compute_backlog).
 */
PG_FUNCTION_INFO_V1(ttl_monitor_backlog);
Datum
ttl_monitor_backlog(PG_FUNCTION_ARGS)
{
	TtlBacklog	b = {0};

	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the backlog of container %s for monitoring",
						ttl_relation_display_name(PG_GETARG_OID(0))),
				 errdetail("Only roles with the privileges of pg_read_all_stats (pg_monitor has them) read every container's backlog."),
				 errhint("Read ttl.stats instead, which shows the backlog of the tables you may read.")));
	b.cap_total = true;
	container_backlog(PG_GETARG_OID(0), false, true, STATS_WALK_LIMIT, &b);
	return backlog_datum(fcinfo, &b);
}

/*
 * For the worker as it leaves a database: relid's due rows, counted up to
 * TTL_SCHEDULER_WALK_LIMIT per purge index (capped: a count stopped there,
 * so a lower bound), and its oldest due item (0: none).  False when it
 * could not be computed (a WARNING says why).
 */
bool
ttl_scheduler_backlog(Oid relid, int64 *due_rows, bool *capped, TimestampTz *oldest_due)
{
	TtlBacklog	b = {0};

	container_backlog(relid, false, false, TTL_SCHEDULER_WALK_LIMIT, &b);
	*due_rows = b.known ? b.expired : 0;
	*capped = b.known && b.capped;
	*oldest_due = 0;
	if (b.known && b.have_oldest &&
		!pg_sub_s64_overflow(b.oldest_s, TTL_UNIX_EPOCH_OFFSET, oldest_due) &&
		!pg_mul_s64_overflow(*oldest_due, USECS_PER_SEC, oldest_due) &&
		IS_VALID_TIMESTAMP(*oldest_due))
		return true;
	*oldest_due = 0;
	return b.known;
}

/*
 * For a purge's progress (purge/progress.c): relid's due rows, counted as
 * ttl.stats counts expired_backlog (the same walks and cap), as the
 * current role (the purge's: the owner).  False when it could not be
 * counted (row-level security forced on the owner, an error: a WARNING).
 */
bool
ttl_progress_due_rows(Oid relid, int64 *due_rows)
{
	TtlBacklog	b = {0};

	container_backlog(relid, false, false, BACKLOG_WALK_LIMIT, &b);
	*due_rows = b.known ? b.expired : 0;
	return b.known;
}

/*
 * Rule 10's replacement deletes counted in ttl.purge_stats_pending (1.7,
 * purge_replace.c) move into ttl.purge_stats, with the purge's own record.
 */
static void
fold_pending(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	static SPIPlanPtr plan = NULL;

	if (!ttl_sql_at_least(1, 7))	/* ttl.purge_stats_pending */
		return;
	ttl_registry_execute(
		"WITH p AS (DELETE FROM ttl.purge_stats_pending q"
		"  WHERE q.relid OPERATOR(pg_catalog.=) $1 RETURNING q.rows_purged, q.purged_at)"
		" INSERT INTO ttl.purge_stats AS s (relid, rows_purged, last_purge_at)"
		" SELECT $1, pg_catalog.sum(p.rows_purged)::pg_catalog.int8, pg_catalog.max(p.purged_at)"
		"  FROM p HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0"
		" ON CONFLICT (relid) DO UPDATE SET"
		"  rows_purged = s.rows_purged OPERATOR(pg_catalog.+) excluded.rows_purged,"
		"  last_purge_at = GREATEST(s.last_purge_at, excluded.last_purge_at)",
		1, argtypes, values, NULL, &plan);
}

/* Add a purge's outcome to ttl.purge_stats (as the extension's owner). */
void
ttl_record_purge(Oid relid, int64 deleted, const char *error)
{
	Oid			argtypes[4] = {OIDOID, INT8OID, TEXTOID, BOOLOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	static SPIPlanPtr plan = NULL;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int64GetDatum(deleted);
	values[2] = error ? CStringGetTextDatum(error) : (Datum) 0;
	/* a piece of a distributed container has no registry row (policy.c) */
	values[3] = BoolGetDatum(ttl_is_placement(relid));
	if (error == NULL)
		nulls[2] = 'n';
	ttl_registry_execute(
		"INSERT INTO ttl.purge_stats AS s"
		" (relid, rows_purged, last_purge_at, last_error, last_error_at)"
		" SELECT $1, $2, CASE WHEN $3 IS NULL THEN ttl.now() END, $3,"
		"  CASE WHEN $3 IS NOT NULL THEN ttl.now() END"
		" WHERE $4 OR EXISTS (SELECT FROM ttl.registry WHERE relid OPERATOR(pg_catalog.=) $1)"
		" ON CONFLICT (relid) DO UPDATE SET"
		"  rows_purged = s.rows_purged OPERATOR(pg_catalog.+) $2,"
		"  last_purge_at = CASE WHEN $3 IS NULL THEN ttl.now() ELSE s.last_purge_at END,"
		"  last_error = $3,"
		"  last_error_at = CASE WHEN $3 IS NULL THEN s.last_error_at ELSE ttl.now() END",
		4, argtypes, values, nulls, &plan);
	fold_pending(relid);
}

/*
 * ttl._legal_hold_expired(container, match), for ttl.legal_holds: the due
 * items match keeps, counted by the bounded walks of the backlog
 * (BACKLOG_WALK_LIMIT rows read per key range, from the bottom), or NULL
 * where the caller may not see the backlog (no SELECT, row-level
 * security).
 */
PG_FUNCTION_INFO_V1(ttl_legal_hold_expired);
Datum
ttl_legal_hold_expired(PG_FUNCTION_ARGS)
{
	TtlBacklog	b = {0};

	ttl_check_relation_exists(PG_GETARG_OID(0));
	b.held_match = PG_GETARG_JSONB_P(1);
	container_backlog(PG_GETARG_OID(0), false, false, BACKLOG_WALK_LIMIT, &b);
	if (!b.known)
		PG_RETURN_NULL();
	PG_RETURN_INT64(b.expired);
}

/*
 * The retire step retired leaves of relid holding rows rows (1.9):
 * counted in ttl.purge_stats (leaves_retired, rows_retired), as the
 * extension's owner.  The rows are not in rows_purged: they were not
 * deleted one by one.
 */
void
ttl_record_retire(Oid relid, int64 leaves, int64 rows)
{
	Oid			argtypes[3] = {OIDOID, INT8OID, INT8OID};
	Datum		values[3];
	static SPIPlanPtr plan = NULL;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int64GetDatum(leaves);
	values[2] = Int64GetDatum(rows);
	ttl_registry_execute(
		"INSERT INTO ttl.purge_stats AS s (relid, last_purge_at, leaves_retired, rows_retired)"
		" VALUES ($1, ttl.now(), $2, $3)"
		" ON CONFLICT (relid) DO UPDATE SET"
		"  last_purge_at = ttl.now(),"
		"  leaves_retired = s.leaves_retired OPERATOR(pg_catalog.+) $2,"
		"  rows_retired = s.rows_retired OPERATOR(pg_catalog.+) $3",
		3, argtypes, values, NULL, &plan);
}
