/*
 * expiring.c
 *		ttl.expiring(container, within, at): the items not expired at `at`
 *		that expire within `within` after it, soonest first (ties in jsonb
 *		order), under the container's present default.
 *
 * On the fast path (preview_leaves.c) the window is two key ranges of the
 * purge btree, read through the index AM, so only the rows returned are
 * fetched: own ttls with expiry in (at, at + within], inherited items with
 * _ts in (at - default, at + within - default].  The scan path applies the
 * expiry rules (expiry.c) to every visible row.  Each candidate is checked
 * against the rule on the row itself, then sorted (tuplesort, spilling to
 * disk past work_mem) into the function's result.
 *
 * Locking: as preview_leaves.c (AccessShareLock, as a SELECT).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "base/compat.h"
#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/expiry.h"
#include "document/purge_key.h"
#include "insight/preview_leaves.h"

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
expiring_candidate(ExpiringRun *run, TtlPreviewLeaf *leaf, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		doc;
	int64		expiry;
	MemoryContext oldcxt;

	doc = slot_getattr(slot, leaf->doc_attno, &isnull);
	if (isnull)
		return;
	oldcxt = MemoryContextSwitchTo(run->row_cxt);
	if ((TTL_HAS_DEADLINE(run->c) ?
		 ttl_datum_expiry_with_deadline(doc, run->c->default_is_null, run->c->default_ttl,
										run->c->deadline_property, &expiry) :
		 ttl_root_expiry_second(ttl_datum_jsonb_root(doc), run->c->default_is_null,
								run->c->default_ttl, &expiry)) &&
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
expiring_index_range(ExpiringRun *run, TtlPreviewLeaf *leaf, Snapshot snapshot, int64 low, int64 high)
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
expiring_scan_leaf(ExpiringRun *run, TtlPreviewLeaf *leaf, Snapshot snapshot)
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
	TtlPreviewLeaf *leaves;
	int			nleaves;
	int			i;

	relid = ttl_preview_container_arg(fcinfo, "ttl.expiring", &c);
	if (PG_ARGISNULL(1))
		ttl_preview_null_argument("within");
	at = ttl_preview_at_arg(fcinfo, 2);
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
	run.from_s = ttl_unix_floor_seconds(at);
	run.to_s = ttl_unix_floor_seconds(until);
	sort_ops[0] = lookup_type_cache(TIMESTAMPTZOID, TYPECACHE_LT_OPR)->lt_opr;
	sort_ops[1] = lookup_type_cache(JSONBOID, TYPECACHE_LT_OPR)->lt_opr;
	run.sort = tuplesort_begin_heap(rsinfo->setDesc, 2, sort_cols, sort_ops, sort_colls,
									nulls_first, work_mem, NULL, TUPLESORT_NONE);
	run.row = MakeSingleTupleTableSlot(rsinfo->setDesc, &TTSOpsVirtual);
	run.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl expiring row",
										ALLOCSET_DEFAULT_SIZES);

	snapshot = RegisterSnapshot(GetActiveSnapshot());
	leaves = ttl_preview_open_leaves(relid, &c, ttl_preview_fast_path_applies(&c), &nleaves);
	for (i = 0; i < nleaves; i++)
	{
		TtlPreviewLeaf *leaf = &leaves[i];

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
	ttl_preview_close_leaves(leaves, nleaves);
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
