/*
 * preview.c
 *		ttl.preview(container, default_ttl, at): the container's items, the
 *		items hidden at `at` and those expiring within 1 hour, 1 day, 7 days
 *		and 30 days after it, under its present default and under a proposed
 *		one.  Changes nothing.
 *
 * Exact counts under the caller's snapshot.  On the fast path
 * (preview_leaves.c) the purge btree is read once by an index-only scan
 * (index_count.c) and each visible entry is sorted into the figures by its
 * key: the own-ttl range holds expiry seconds, the inherited range _ts (so
 * any default is a bound), NULL keys never expire, and the total is the
 * number of visible entries.  The scan path computes each visible item's
 * expiry under both defaults with the expiry rules (expiry.c).
 *
 * Locking: as preview_leaves.c (AccessShareLock, as a SELECT); buffers as
 * index_count.c and the table AM's scan.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "catalog/pg_class.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "document/deadline.h"
#include "document/document.h"
#include "document/due_range.h"
#include "document/expiry.h"
#include "document/purge_key.h"
#include "insight/index_count.h"
#include "insight/preview_leaves.h"

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
	/* 1.9: leaves whose every item has expired at `at` (retiring) */
	int64		leaves_due;
	bool		leaf_live;		/* the current leaf has an item not expired */
} Scenario;

typedef struct PreviewCounts
{
	int64		at_s;			/* `at` in whole Unix seconds, rounded down */
	int64		inherited_low;	/* the lowest key of the inherited range */
	int64		inherited_zero; /* the keys of second 0 in each range: */
	int64		own_zero;		/* key - zero decodes (purge_key.c) */
	int64		items;
	const char *deadline;		/* the deadline property (scan path), or NULL */
	int64		leaf_items;		/* the current leaf's items */
	Scenario	s[2];			/* current, proposed */
} PreviewCounts;

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
	s->leaf_live = true;
	for (w = 0; w < NWINDOWS; w++)
		if (expiry <= at_s + window_seconds[w])
			s->expiring[w] += n;
}

/* index_count.c's visitor: the n visible items with that purge key. */
static void
preview_visit(void *arg, bool isnull, int64 key, int64 n)
{
	PreviewCounts *pc = (PreviewCounts *) arg;
	int			i;

	pc->items += n;
	pc->leaf_items += n;
	if (isnull)
	{
		/* pinned, or no _ts: never expires, and keeps its leaf */
		pc->s[0].leaf_live = pc->s[1].leaf_live = true;
		return;
	}
	if (key >= pc->inherited_low)
	{
		int64		ts = key - pc->inherited_zero;	/* decoded */

		/* ts is clamped to +-2^61: ts + default cannot overflow */
		for (i = 0; i < 2; i++)
		{
			if (!pc->s[i].off && pc->s[i].default_ttl > 0)
				count_expiry(&pc->s[i], pc->at_s, ts + pc->s[i].default_ttl, n);
			else
				pc->s[i].leaf_live = true;
		}
	}
	else
	{
		int64		expiry = key - pc->own_zero;	/* decoded */

		for (i = 0; i < 2; i++)
		{
			if (!pc->s[i].off)
				count_expiry(&pc->s[i], pc->at_s, expiry, n);
			else
				pc->s[i].leaf_live = true;
		}
	}
}

/* The scan path of ttl.preview for one leaf. */
static void
preview_scan_leaf(TtlPreviewLeaf *leaf, Snapshot snapshot, PreviewCounts *pc)
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
		pc->leaf_items++;
		doc = slot_getattr(slot, leaf->doc_attno, &isnull);
		if (isnull)
			pc->s[0].leaf_live = pc->s[1].leaf_live = true;
		else
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(row_cxt);
			const char *root = ttl_datum_jsonb_root(doc);
			int64		expiry;

			for (i = 0; i < 2; i++)
			{
				bool		live = pc->s[i].leaf_live;

				if (pc->deadline ?
					ttl_datum_expiry_with_deadline(doc, pc->s[i].off, pc->s[i].default_ttl,
												   pc->deadline, &expiry) :
					ttl_root_expiry_second(root, pc->s[i].off, pc->s[i].default_ttl, &expiry))
					count_expiry(&pc->s[i], pc->at_s, expiry, 1);
				/*
				 * a leaf is retired by its items' lifetimes alone (a
				 * deadline only brings an expiry earlier: retire_check.c)
				 */
				pc->s[i].leaf_live = live ||
					!ttl_root_expiry_second(root, pc->s[i].off, pc->s[i].default_ttl, &expiry) ||
					expiry > pc->at_s;
			}
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
	TtlPreviewLeaf *leaves;
	int			nleaves;
	int			i;
	Snapshot	snapshot;
	bool		partitioned;

	relid = ttl_preview_container_arg(fcinfo, "ttl.preview", &c);
	partitioned = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE;
	if (!PG_ARGISNULL(1) && !ttl_is_valid_ttl(PG_GETARG_INT32(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid default_ttl for container \"%s\": %d",
						ttl_relation_display_name(relid), PG_GETARG_INT32(1)),
				 errdetail("The default must be NULL (time-to-live off), -1 (on, items expire only with their own ttl) or between 1 and 2147483647 seconds.")));
	at = ttl_preview_at_arg(fcinfo, 2);

	memset(&pc, 0, sizeof(pc));
	pc.at_s = ttl_unix_floor_seconds(at);
	{
		/* where each kind's keys start and where its second 0 is (due_range.c) */
		TtlDueRange inherited = ttl_due_range(TTL_DUE_INHERITED, true, 0, 0);
		TtlDueRange own = ttl_due_range(TTL_DUE_OWN, true, 0, 0);

		pc.inherited_low = inherited.low;
		pc.inherited_zero = ttl_due_key(&inherited, 0);
		pc.own_zero = ttl_due_key(&own, 0);
		Assert(ttl_due_seconds(&own, pc.own_zero + 12345) == 12345);
	}
	pc.deadline = TTL_HAS_DEADLINE(&c) ? c.deadline_property : NULL;
	pc.s[0].off = c.default_is_null;
	pc.s[0].default_ttl = c.default_ttl;
	pc.s[1].off = PG_ARGISNULL(1);
	pc.s[1].default_ttl = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);

	InitMaterializedSRF(fcinfo, 0);
	snapshot = RegisterSnapshot(GetActiveSnapshot());
	leaves = ttl_preview_open_leaves(relid, &c, ttl_preview_fast_path_applies(&c), &nleaves);
	for (i = 0; i < nleaves; i++)
	{
		int			k;

		pc.leaf_items = 0;
		pc.s[0].leaf_live = pc.s[1].leaf_live = false;
		ereport(DEBUG1,
				(errmsg_internal("ttl.preview: %s path for \"%s\"",
								 leaves[i].key_index ? "index" : "scan",
								 RelationGetRelationName(leaves[i].rel))));
		if (leaves[i].key_index)
			ttl_btree_count_visible(leaves[i].rel, leaves[i].key_index, snapshot,
									preview_visit, &pc);
		else
			preview_scan_leaf(&leaves[i], snapshot, &pc);
		/* a leaf partition whose every item has expired: it would retire */
		for (k = 0; k < 2; k++)
			if (partitioned && pc.leaf_items > 0 && !pc.s[k].leaf_live)
				pc.s[k].leaves_due++;
	}
	ttl_preview_close_leaves(leaves, nleaves);
	UnregisterSnapshot(snapshot);

	for (i = 0; i < 2; i++)
	{
		Datum		values[9];
		bool		nulls[9] = {false};
		int			w;

		values[0] = CStringGetTextDatum(i == 0 ? "current" : "proposed");
		values[1] = Int32GetDatum(pc.s[i].default_ttl);
		nulls[1] = pc.s[i].off;
		values[2] = Int64GetDatum(pc.items);
		values[3] = Int64GetDatum(pc.s[i].hidden);
		for (w = 0; w < NWINDOWS; w++)
			values[4 + w] = Int64GetDatum(pc.s[i].expiring[w]);
		/* 1.9's column, NULL for a container that is not partitioned */
		values[8] = Int64GetDatum(pc.s[i].leaves_due);
		nulls[8] = !partitioned;
		Assert(rsinfo->setDesc->natts <= 9);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
