/*
 * preview.c
 *		ttl.preview(container, default_ttl, at): the container's items, the
 *		items hidden at `at` and those expiring within 1 hour, 1 day, 7 days
 *		and 30 days after it, under its present default and under a proposed
 *		one; ttl.expiring(container, within, at): the items that expire
 *		within a window after `at`, soonest first.  Both change nothing.
 *
 * Exact counts under the caller's snapshot, by one of two paths per leaf
 * (a plain table is its own leaf; a partitioned or inherited table has one
 * per table with storage):
 *
 *	fast	the leaf has the purge btree of ttl.doc_purge_key (1.3 layout),
 *			which holds one entry per row version, NULL keys included
 *			(pinned items, items without _ts).  ttl.preview walks its leaf
 *			level once (index_count.c) and sorts each visible entry by its
 *			key: the own-ttl range holds expiry seconds, the inherited range
 *			_ts, so any default is a bound on the key, and the total is the
 *			number of visible entries.  ttl.expiring scans the key ranges of
 *			the window through the index AM and fetches only those rows.
 *	scan	everything else: containers still on the 1.0 layout (two partial
 *			indexes, before ttl.upgrade_purge_index_sql()), append-only ones
 *			(BRIN), and any container ttl_preview_fast_path_applies() turns
 *			away: a sequential scan that computes each visible item's expiry
 *			with the expiry rules themselves (expiry.c).
 *
 * Neither path runs code of the table's owner or the caller (no planning,
 * no index expression is evaluated: keys are read as stored), so nothing
 * here switches roles.  The caller needs SELECT on the table (42501
 * otherwise) and must not be subject to its row-level security: counting
 * every row would tell such a caller about rows a SELECT hides (42501 too).
 *
 * Locking: AccessShareLock on the table, its partitions or children and
 * the purge indexes used, taken after the privilege check and held to the
 * end of the transaction, as a SELECT would.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "citus_meta.h"
#include "compat.h"
#include "document.h"
#include "expiry.h"
#include "index_count.h"
#include "preview.h"
#include "purge_key.h"
#include "registry.h"
#include "settings.h"

/* The windows of ttl.preview's expiring_1h .. expiring_30d, in seconds. */
#define NWINDOWS 4
static const int64 window_seconds[NWINDOWS] = {3600, 86400, 7 * 86400, 30 * 86400};

/* One scenario of ttl.preview: a default and its counts. */
typedef struct Scenario
{
	bool		off;			/* default NULL: nothing expires */
	int32		default_ttl;
	int64		hidden;
	int64		expiring[NWINDOWS];
} Scenario;

typedef struct PreviewCounts
{
	int64		at_s;			/* `at` in whole Unix seconds, rounded down */
	int64		inherited_low;	/* the lowest key of the inherited range */
	int64		items;
	Scenario	s[2];			/* current, proposed */
} PreviewCounts;

/* One leaf of a container: a table with storage, its document column. */
typedef struct Leaf
{
	Relation	rel;
	AttrNumber	doc_attno;
	Relation	key_index;		/* the 1.3 purge btree, or NULL */
} Leaf;

/*
 * Whether the fast path (the purge btree's key ranges) can answer for this
 * container at all: its key must decide every item's expiry under any
 * default.  Rules that the key does not hold (a per-item deadline, say)
 * must return false here; the scan path then applies the expiry rules
 * (expiry.c) to each visible item.
 */
bool
ttl_preview_fast_path_applies(const TtlContainer *c)
{
	(void) c;
	return true;
}

/* t in whole Unix seconds, rounded down (t finite). */
static int64
unix_floor_seconds(TimestampTz t)
{
	int64		secs = t / USECS_PER_SEC;

	if (t < 0 && t % USECS_PER_SEC != 0)
		secs--;
	return secs + TTL_UNIX_EPOCH_OFFSET;
}

static void
null_argument(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("%s must not be null", name)));
}

/* The `at` argument (argument number argno): not NULL, finite. */
static TimestampTz
at_arg(FunctionCallInfo fcinfo, int argno)
{
	TimestampTz at;

	if (PG_ARGISNULL(argno))
		null_argument("at");
	at = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(at))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("at must be a finite timestamp"),
				 errdetail("It is %s.",
						   DatumGetCString(DirectFunctionCall1(timestamptz_out,
															   TimestampTzGetDatum(at))))));
	return at;
}

/*
 * The container of argument 0, checked for the caller and locked as a
 * SELECT would: 42501 without SELECT or under row-level security, 42704
 * when it is not a container.
 */
static Oid
container_arg(FunctionCallInfo fcinfo, const char *fname, TtlContainer *c)
{
	Oid			relid;
	char		kind;

	if (PG_ARGISNULL(0))
		null_argument("container");
	relid = PG_GETARG_OID(0);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", ttl_relation_display_name(relid)),
				 errdetail("%s needs SELECT on the container's table.", fname)));
	LockRelationOid(relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	ttl_get_container(relid, c);
	if (isOtherTempNamespace(get_rel_namespace(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions")));
	kind = ttl_citus_kind(relid);
	if (kind == 'h' || kind == 'r')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s does not support distributed container \"%s\"",
						fname, ttl_relation_display_name(relid)),
				 errdetail("Its items live in shards on the worker nodes.")));
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security applies to you on table %s",
						ttl_relation_display_name(relid)),
				 errdetail("%s counts every item of the table, which would reveal items row-level security hides from you.",
						   fname),
				 errhint("Run it as the table's owner or as a role that bypasses row-level security.")));
	return relid;
}

/* The 1.3 purge btree of a leaf, opened and locked, or NULL. */
static Relation
open_key_btree(Relation rel, AttrNumber doc_attno)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (ttl_purge_index_kind(index, doc_attno) == TTL_INDEX_KEY)
			return index;
		index_close(index, AccessShareLock);
	}
	return NULL;
}

/*
 * The leaves of the container, opened and locked, each with its purge
 * btree when the fast path may use it.
 */
static Leaf *
open_leaves(Oid relid, const TtlContainer *c, bool fast, int *nleaves)
{
	List	   *oids = find_all_inheritors(relid, AccessShareLock, NULL);
	Leaf	   *leaves = palloc0(sizeof(Leaf) * list_length(oids));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, oids)
	{
		Oid			oid = lfirst_oid(lc);
		char		relkind = get_rel_relkind(oid);
		Leaf	   *leaf;

		if (relkind == RELKIND_PARTITIONED_TABLE)
			continue;
		if (relkind != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("\"%s\" of container \"%s\" is not a plain table",
							ttl_relation_display_name(oid), ttl_relation_display_name(relid)),
					 errdetail("Only the items of plain tables can be counted.")));
		leaf = &leaves[n++];
		leaf->rel = table_open(oid, NoLock);
		leaf->doc_attno = get_attnum(oid, NameStr(c->doc_column));
		if (leaf->doc_attno == InvalidAttrNumber)
			elog(ERROR, "column \"%s\" of \"%s\" is missing",
				 NameStr(c->doc_column), ttl_relation_display_name(oid));
		leaf->key_index = fast ? open_key_btree(leaf->rel, leaf->doc_attno) : NULL;
	}
	*nleaves = n;
	return leaves;
}

static void
close_leaves(Leaf *leaves, int nleaves)
{
	int			i;

	for (i = 0; i < nleaves; i++)
	{
		if (leaves[i].key_index)
			index_close(leaves[i].key_index, NoLock);
		table_close(leaves[i].rel, NoLock);
	}
}

/* ---- ttl.preview ---- */

/* Count n items of a scenario that expire at the second expiry. */
static inline void
count_expiry(Scenario *s, int64 at_s, int64 expiry, int64 n)
{
	int			w;

	if (expiry <= at_s)
	{
		s->hidden += n;
		return;
	}
	for (w = 0; w < NWINDOWS; w++)
		if (expiry <= at_s + window_seconds[w])
			s->expiring[w] += n;
}

/* index_count.c's visitor: n visible items with that purge key. */
static void
preview_visit(void *arg, bool isnull, int64 key, int64 n)
{
	PreviewCounts *pc = (PreviewCounts *) arg;
	int			i;

	pc->items += n;
	if (isnull)
		return;					/* pinned, or no _ts: never expires */
	if (key >= pc->inherited_low)
	{
		int64		ts = ttl_purge_key_decode(TTL_KEY_INHERITED, key);

		/* ts is clamped to +-2^61: ts + default cannot overflow */
		for (i = 0; i < 2; i++)
			if (!pc->s[i].off && pc->s[i].default_ttl > 0)
				count_expiry(&pc->s[i], pc->at_s, ts + pc->s[i].default_ttl, n);
	}
	else
	{
		int64		expiry = ttl_purge_key_decode(TTL_KEY_OWN, key);

		for (i = 0; i < 2; i++)
			if (!pc->s[i].off)
				count_expiry(&pc->s[i], pc->at_s, expiry, n);
	}
}

/* The scan path of ttl.preview for one leaf. */
static void
preview_scan_leaf(Leaf *leaf, Snapshot snapshot, PreviewCounts *pc)
{
	TableScanDesc scan = table_beginscan(leaf->rel, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(leaf->rel, NULL);
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl preview row",
												  ALLOCSET_SMALL_SIZES);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		doc;
		int			i;

		CHECK_FOR_INTERRUPTS();
		pc->items++;
		doc = slot_getattr(slot, leaf->doc_attno, &isnull);
		if (!isnull)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(row_cxt);
			const char *root = ttl_datum_jsonb_root(doc);
			int64		expiry;

			for (i = 0; i < 2; i++)
				if (ttl_root_expiry_second(root, pc->s[i].off, pc->s[i].default_ttl, &expiry))
					count_expiry(&pc->s[i], pc->at_s, expiry, 1);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(row_cxt);
		}
	}
	MemoryContextDelete(row_cxt);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
}

/*
 * ttl.preview(container regclass, default_ttl integer, at timestamptz)
 * RETURNS SETOF ttl.preview_row: rows 'current' and 'proposed'.
 */
PG_FUNCTION_INFO_V1(ttl_preview);
Datum
ttl_preview(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TtlContainer c;
	Oid			relid;
	TimestampTz at;
	PreviewCounts pc;
	Leaf	   *leaves;
	int			nleaves;
	int			i;
	Snapshot	snapshot;

	relid = container_arg(fcinfo, "ttl.preview", &c);
	if (!PG_ARGISNULL(1) && !ttl_is_valid_ttl(PG_GETARG_INT32(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid default_ttl for container \"%s\": %d",
						ttl_relation_display_name(relid), PG_GETARG_INT32(1)),
				 errdetail("The default must be NULL (time-to-live off), -1 (on, items expire only with their own ttl) or between 1 and 2147483647 seconds.")));
	at = at_arg(fcinfo, 2);

	memset(&pc, 0, sizeof(pc));
	pc.at_s = unix_floor_seconds(at);
	pc.inherited_low = ttl_purge_key_low(TTL_KEY_INHERITED);
	pc.s[0].off = c.default_is_null;
	pc.s[0].default_ttl = c.default_ttl;
	pc.s[1].off = PG_ARGISNULL(1);
	pc.s[1].default_ttl = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);

	InitMaterializedSRF(fcinfo, 0);
	snapshot = RegisterSnapshot(GetActiveSnapshot());
	leaves = open_leaves(relid, &c, ttl_preview_fast_path_applies(&c), &nleaves);
	for (i = 0; i < nleaves; i++)
	{
		ereport(DEBUG1,
				(errmsg_internal("ttl.preview: %s path for \"%s\"",
								 leaves[i].key_index ? "index" : "scan",
								 RelationGetRelationName(leaves[i].rel))));
		if (leaves[i].key_index)
			ttl_btree_count_visible(leaves[i].rel, leaves[i].key_index, snapshot,
									preview_visit, &pc);
		else
			preview_scan_leaf(&leaves[i], snapshot, &pc);
	}
	close_leaves(leaves, nleaves);
	UnregisterSnapshot(snapshot);

	for (i = 0; i < 2; i++)
	{
		Datum		values[8];
		bool		nulls[8] = {false};
		int			w;

		values[0] = CStringGetTextDatum(i == 0 ? "current" : "proposed");
		values[1] = Int32GetDatum(pc.s[i].default_ttl);
		nulls[1] = pc.s[i].off;
		values[2] = Int64GetDatum(pc.items);
		values[3] = Int64GetDatum(pc.s[i].hidden);
		for (w = 0; w < NWINDOWS; w++)
			values[4 + w] = Int64GetDatum(pc.s[i].expiring[w]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---- ttl.expiring ---- */

/* What ttl.expiring collects: rows expiring in (from_s, to_s], sorted. */
typedef struct ExpiringRun
{
	const TtlContainer *c;
	int64		from_s;
	int64		to_s;
	Tuplesortstate *sort;
	TupleTableSlot *row;		/* (doc, expires_at), virtual */
	MemoryContext row_cxt;
} ExpiringRun;

/* Add the row in slot when it expires within the window. */
static void
expiring_candidate(ExpiringRun *run, Leaf *leaf, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		doc;
	int64		expiry;
	MemoryContext oldcxt;

	doc = slot_getattr(slot, leaf->doc_attno, &isnull);
	if (isnull)
		return;
	oldcxt = MemoryContextSwitchTo(run->row_cxt);
	if (ttl_root_expiry_second(ttl_datum_jsonb_root(doc), run->c->default_is_null,
							   run->c->default_ttl, &expiry) &&
		expiry > run->from_s && expiry <= run->to_s)
	{
		ExecClearTuple(run->row);
		run->row->tts_values[0] = PointerGetDatum(DatumGetJsonbP(doc));
		run->row->tts_isnull[0] = false;
		run->row->tts_values[1] =
			TimestampTzGetDatum((expiry - TTL_UNIX_EPOCH_OFFSET) * USECS_PER_SEC);
		run->row->tts_isnull[1] = false;
		ExecStoreVirtualTuple(run->row);
		tuplesort_puttupleslot(run->sort, run->row);
		ExecClearTuple(run->row);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(run->row_cxt);
}

/* The rows of a leaf whose purge keys lie in [low, high], through the index. */
static void
expiring_index_range(ExpiringRun *run, Leaf *leaf, Snapshot snapshot, int64 low, int64 high)
{
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;

	if (low > high)
		return;
	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(low));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(high));
	scan = ttl_index_beginscan(leaf->rel, leaf->key_index, snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	slot = table_slot_create(leaf->rel, NULL);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		expiring_candidate(run, leaf, slot);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
}

/* The scan path of ttl.expiring for one leaf. */
static void
expiring_scan_leaf(ExpiringRun *run, Leaf *leaf, Snapshot snapshot)
{
	TableScanDesc scan = table_beginscan(leaf->rel, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(leaf->rel, NULL);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		expiring_candidate(run, leaf, slot);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
}

/*
 * ttl.expiring(container regclass, within interval, at timestamptz)
 * RETURNS TABLE (doc jsonb, expires_at timestamptz): the items not expired
 * at `at` that expire within `within` after it, soonest first (ties in
 * jsonb order).
 */
PG_FUNCTION_INFO_V1(ttl_expiring);
Datum
ttl_expiring(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TtlContainer c;
	Oid			relid;
	TimestampTz at;
	TimestampTz until;
	ExpiringRun run;
	AttrNumber	sort_cols[2] = {2, 1};
	Oid			sort_ops[2];
	Oid			sort_colls[2] = {InvalidOid, InvalidOid};
	bool		nulls_first[2] = {false, false};
	TupleTableSlot *out;
	Snapshot	snapshot;
	Leaf	   *leaves;
	int			nleaves;
	int			i;

	relid = container_arg(fcinfo, "ttl.expiring", &c);
	if (PG_ARGISNULL(1))
		null_argument("within");
	at = at_arg(fcinfo, 2);
	until = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
													TimestampTzGetDatum(at),
													PG_GETARG_DATUM(1)));
	if (until < at)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("within must not be negative: %s",
						DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(1)))),
				 errdetail("ttl.expiring lists the items that expire within that interval after at.")));
	if (TIMESTAMP_NOT_FINITE(until))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("at plus within is out of range")));

	InitMaterializedSRF(fcinfo, 0);
	if (c.default_is_null)
		return (Datum) 0;		/* TTL off: nothing expires */

	run.c = &c;
	run.from_s = unix_floor_seconds(at);
	run.to_s = unix_floor_seconds(until);
	sort_ops[0] = lookup_type_cache(TIMESTAMPTZOID, TYPECACHE_LT_OPR)->lt_opr;
	sort_ops[1] = lookup_type_cache(JSONBOID, TYPECACHE_LT_OPR)->lt_opr;
	run.sort = tuplesort_begin_heap(rsinfo->setDesc, 2, sort_cols, sort_ops, sort_colls,
									nulls_first, work_mem, NULL, TUPLESORT_NONE);
	run.row = MakeSingleTupleTableSlot(rsinfo->setDesc, &TTSOpsVirtual);
	run.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl expiring row",
										ALLOCSET_DEFAULT_SIZES);

	snapshot = RegisterSnapshot(GetActiveSnapshot());
	leaves = open_leaves(relid, &c, ttl_preview_fast_path_applies(&c), &nleaves);
	for (i = 0; i < nleaves; i++)
	{
		Leaf	   *leaf = &leaves[i];

		ereport(DEBUG1,
				(errmsg_internal("ttl.expiring: %s path for \"%s\"",
								 leaf->key_index ? "index" : "scan",
								 RelationGetRelationName(leaf->rel))));
		if (leaf->key_index == NULL)
		{
			expiring_scan_leaf(&run, leaf, snapshot);
			continue;
		}
		/* own ttl: expiry in (from, to]; inherited: _ts in (from - d, to - d] */
		expiring_index_range(&run, leaf, snapshot,
							 ttl_purge_key_encode(TTL_KEY_OWN, run.from_s + 1),
							 ttl_purge_key_encode(TTL_KEY_OWN, run.to_s));
		if (c.default_ttl > 0)
			expiring_index_range(&run, leaf, snapshot,
								 ttl_purge_key_encode(TTL_KEY_INHERITED,
													  run.from_s + 1 - c.default_ttl),
								 ttl_purge_key_encode(TTL_KEY_INHERITED,
													  run.to_s - c.default_ttl));
	}
	close_leaves(leaves, nleaves);
	UnregisterSnapshot(snapshot);

	tuplesort_performsort(run.sort);
	out = MakeSingleTupleTableSlot(rsinfo->setDesc, &TTSOpsMinimalTuple);
	while (tuplesort_gettupleslot(run.sort, true, false, out, NULL))
		tuplestore_puttupleslot(rsinfo->setResult, out);
	tuplesort_end(run.sort);
	ExecDropSingleTupleTableSlot(out);
	ExecDropSingleTupleTableSlot(run.row);
	MemoryContextDelete(run.row_cxt);
	return (Datum) 0;
}
