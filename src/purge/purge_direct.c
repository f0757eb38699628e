/*
 * purge_direct.c
 *		The fast path of purge: find the due rows through the purge indexes
 *		and delete each with table_tuple_delete(wait = false), the way the
 *		executor's DELETE would, minus what it cannot need here.
 *
 * Why: the statement path (purge_batch.c) must first lock its batch FOR UPDATE
 * SKIP LOCKED, which writes a WAL record and dirties the page once per row
 * before the DELETE writes another, then fetches every row again by TID.
 * A delete that does not wait gives the same "skip what others hold"
 * without the lock pass: a row being updated, locked or deleted by another
 * transaction comes back as busy and is left for a later walk.
 *
 * The purge index is the single index of ttl.doc_purge_key (1.3), whose
 * key ranges hold each kind (purge_key.c encodes the bounds), or, on
 * containers enabled before 1.3, one partial index per kind.  A container
 * with a deadline property (rule 9) has a third walk, over its deadline
 * index in deadline order up to now; every row of every walk is re-checked
 * against the whole rule (lifetime or deadline) before it is deleted.
 *
 * An append-only container's purge index is a BRIN index on the same key:
 * its bitmap holds whole page ranges (lossy pages), every row of which is
 * re-checked; such a container always takes the walk (purge_batch.c).
 * An append-only container without a purge index (1.6) takes the same walk
 * over every page of the table.
 *
 * Two shapes.  A worker batch (and ttl.purge with max_rows) walks one
 * purge index in key order from where the previous batch stopped, deleting
 * as it goes; the index scan marks the entries of rows earlier batches
 * deleted as dead, so later walks skip them cheaply, and nothing is held
 * between transactions (the worker's memory stays flat).  ttl.purge
 * without max_rows and CALL ttl.run_purge put the due entries of both
 * purge indexes into one TID bitmap per partition (a TtlWalk, purge_walk.c)
 * and visit each page once, in physical order, like a bitmap heap scan; the
 * procedure's batches take the walk in turn and it ends with the CALL.
 *
 * It applies only when a plain DELETE would do nothing but delete
 * (purge_leaves.c decides and opens what it walks): a plain table without
 * inheritance children, or a partitioned one whose leaves are
 * all plain tables; no DELETE triggers (foreign keys pointing at the table
 * are triggers too), no rules, no row security that applies to the owner,
 * DELETE and SELECT granted, and valid purge indexes on every leaf.
 * Otherwise it returns the reason and the caller runs the statement, which
 * does everything a DELETE does.
 *
 * Locking: the caller holds RowExclusiveLock on the table and every
 * partition (taken without waiting) and runs as the table's owner.  Indexes
 * are locked AccessShareLock without waiting; an index we cannot lock now
 * is not used.  The expiry rule is checked on the row version the snapshot
 * sees just before it is deleted; a version changed since that snapshot
 * fails to delete and is skipped.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "nodes/tidbitmap.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "document/deadline.h"
#include "document/expiry.h"
#include "document/purge_key.h"
#include "purge/purge_internal.h"

/*
 * A batch's walk of one leaf's purge index of that kind, in key order from
 * lower_key to cutoff, deleting each due row as it is found, until
 * out->found reaches limit.  The index scan itself checks visibility, so
 * the entries of rows earlier batches deleted are marked dead in the index
 * as it passes them and later walks skip them cheaply.
 */
static void
walk_leaf(DirectLeaf *leaf, int kind, int64 lower_key, int64 cutoff, int64 limit,
		  DirectRun *run)
{
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;

	/* legal hold: start past the held rows at the bottom (purge_hold.c) */
	lower_key = ttl_purge_hold_lower(lower_key);
	if (kind == PURGE_DEADLINE)
	{
		/* deadlines as they are, above the key of malformed ones */
		lower_key = Max(lower_key, TTL_DEADLINE_MALFORMED_KEY + 1);
	}
	else if (leaf->keyed[kind])
	{
		/* the kind's range of the single index (purge_key.c) */
		lower_key = ttl_purge_key_encode(kind, lower_key);
		cutoff = ttl_purge_key_encode(kind, cutoff);
	}
	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(lower_key));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(cutoff));
	scan = ttl_index_beginscan(leaf->rel, leaf->index[kind], run->snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	slot = table_slot_create(leaf->rel, NULL);
	while (run->out->found < limit &&
		   index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		int64		ts;
		int64		expiry;
		int64		deadline;

		CHECK_FOR_INTERRUPTS();
		if (!ttl_direct_row_is_due(leaf, slot, run, &ts, &expiry, &deadline))
		{
			/* legal hold: a held row moves the floor, another stops it */
			ttl_purge_hold_note(ttl_purge_hold_last_held(),
								kind == PURGE_DEADLINE ? deadline :
								kind == PURGE_OWN ? expiry : ts);
			continue;			/* cannot be, unless the index lies: not ours */
		}
		if (!ttl_direct_delete_row(leaf, slot, run))
		{
			ttl_purge_hold_note(false, 0);	/* legal hold: the floor stops */
			continue;			/* busy: left for a later walk */
		}
		/* legal hold: a deleted row is gone, the floor may pass it */
		ttl_purge_hold_note(true, kind == PURGE_DEADLINE ? deadline :
							kind == PURGE_OWN ? expiry : ts);
		run->out->found++;
		run->out->last_leaf = RelationGetRelid(leaf->rel);
		run->out->last_key = kind == PURGE_DEADLINE ? deadline :
			kind == PURGE_OWN ? expiry : ts;
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
}

/* A statement's snapshot and command id, as SPI gives the statement path. */
static void
begin_run(DirectRun *run, int32 default_ttl, const char *deadline, int64 now_seconds,
		  TtlDirectBatch *out)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	run->snapshot = GetActiveSnapshot();
	run->cid = GetCurrentCommandId(true);
	run->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl purge row",
										 ALLOCSET_SMALL_SIZES);
	run->default_ttl = default_ttl;
	run->deadline = deadline;
	run->now_seconds = now_seconds;
	run->out = out;
}

static void
end_run(DirectRun *run)
{
	MemoryContextDelete(run->row_cxt);
	PopActiveSnapshot();
	CommandCounterIncrement();
}

/*
 * Delete due rows of the kinds wanted (want[0]: items inheriting the
 * default, want[1]: items with their own ttl, want[2]: items whose
 * deadline, rule 9, has come: the container's deadline index, keyed by
 * ttl.doc_deadline_key(doc, deadline)).
 *
 * With walk (CALL ttl.run_purge) or limit < 0 (ttl.purge without
 * max_rows): go on with the walk of both wanted indexes (*walk, a child of
 * walk_parent, kept by the caller across batches; a new one when there is
 * none) until limit rows not skipped as busy are gone; out->range_done
 * when the walk is done (it is then freed).
 *
 * Otherwise (the worker, ttl.purge with max_rows), one batch of limit
 * rows: walk the one wanted index, leaf by leaf (in OID order), in key
 * order from (start_leaf, lower_key); out->last_leaf and last_key say where
 * it stopped (the next batch's keyset).
 *
 * Returns NULL when it ran, else why the direct path does not apply
 * (nothing done).
 */
const char *
ttl_purge_direct(Oid relid, const char *doc_column, bool index_free, const bool *want,
				 Oid start_leaf, int64 lower_key, int64 limit,
				 TtlWalk **walk, MemoryContext walk_parent,
				 int32 default_ttl, const char *deadline, int64 now_seconds,
				 TtlDirectBatch *out)
{
	int64		cutoff[TTL_PURGE_KINDS] = {now_seconds - default_ttl, now_seconds, now_seconds};
	DirectLeaf *leaves;
	int			nleaves;
	const char *obstacle;
	DirectRun	run;
	TtlWalk    *one_shot = NULL;
	int			i;

	memset(out, 0, sizeof(TtlDirectBatch));
	out->last_leaf = start_leaf;
	out->last_key = lower_key;
	obstacle = ttl_open_leaves(relid, doc_column, index_free, want, deadline,
							   &leaves, &nleaves);
	if (obstacle != NULL)
	{
		ttl_close_leaves(leaves, nleaves);
		return obstacle;
	}
	for (i = 0; i < nleaves && walk == NULL && limit >= 0; i++)
	{
		/* a BRIN index or none (append-only) gives pages, not keys in order */
		if (leaves[i].brin || leaves[i].sweep)
		{
			ttl_close_leaves(leaves, nleaves);
			return leaves[i].sweep ? "it has no purge index: only a walk can take it" :
				"its purge index is a BRIN index, which only a walk can use";
		}
	}
	begin_run(&run, default_ttl, deadline, now_seconds, out);
	if (walk == NULL && limit < 0)
	{
		walk = &one_shot;
		walk_parent = CurrentMemoryContext;
	}
	if (walk != NULL)
	{
		if (*walk != NULL && !ttl_walk_wants(*walk, want))
		{
			ttl_free_walk(*walk);
			*walk = NULL;
		}
		if (*walk == NULL)
			*walk = ttl_new_walk(relid, leaves, nleaves, want, cutoff, walk_parent);
		out->range_done = ttl_take_walk(*walk, leaves, nleaves, limit, &run);
		if (out->range_done)
		{
			ttl_free_walk(*walk);
			*walk = NULL;
		}
	}
	else
	{
		int			kind = want[0] ? PURGE_INHERITED : want[1] ? PURGE_OWN : PURGE_DEADLINE;

		for (i = 0; i < nleaves && out->found < limit; i++)
		{
			Oid			leafid = RelationGetRelid(leaves[i].rel);

			if (leafid >= start_leaf)	/* else done earlier in this walk */
				walk_leaf(&leaves[i], kind,
						  leafid == start_leaf ? lower_key : PG_INT64_MIN,
						  cutoff[kind], limit, &run);
		}
	}
	end_run(&run);
	ttl_close_leaves(leaves, nleaves);
	return obstacle;
}
