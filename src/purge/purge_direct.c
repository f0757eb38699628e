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
 * Two row sources, one loop (take_rows: re-check, direct delete, count,
 * under the batch's limit; purge_rows.c does the row).  A worker batch
 * (and ttl.purge with max_rows) walks one
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
 * does everything a DELETE does.  A container with an archive (1.8)
 * takes this path too: the rows it deletes are copied and inserted into
 * the archive before the batch ends (archive_rows.c).
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
#include "document/due_range.h"
#include "document/expiry.h"
#include "document/purge_key.h"
#include "insight/purge_failures.h"
#include "purge/archive.h"
#include "purge/progress.h"
#include "purge/purge_internal.h"

/*
 * The keyset walk as a row source: each leaf's index of the plan's kind, in
 * key order from lower_key (in start_leaf; from the start in the leaves
 * after it) to the end of the kind's due range.  The index scan itself
 * checks visibility, so the entries of rows earlier batches deleted are
 * marked dead in the index as it passes them and later walks skip them
 * cheaply.
 */
typedef struct KeysetSource
{
	TtlRowSourceOps base;
	DirectLeaf *leaves;
	int			nleaves;
	int			next_leaf;		/* the leaf to open after the current one */
	TtlDueKind	kind;
	Oid			start_leaf;
	int64		lower_key;
	IndexScanDesc scan;			/* the current leaf's scan, or NULL */
	TupleTableSlot *slot;
	DirectLeaf *leaf;
} KeysetSource;

static void
keyset_end(TtlRowSourceOps *base)
{
	KeysetSource *src = (KeysetSource *) base;

	if (src->scan == NULL)
		return;
	ExecDropSingleTupleTableSlot(src->slot);
	index_endscan(src->scan);
	src->scan = NULL;
}

static bool
keyset_next(TtlRowSourceOps *base, DirectRun *run, DirectLeaf **leaf, TupleTableSlot **slot)
{
	KeysetSource *src = (KeysetSource *) base;

	for (;;)
	{
		if (src->scan == NULL)
		{
			ScanKeyData keys[2];
			TtlDueRange range;
			Oid			leafid;

			/* leaves before start_leaf were done earlier in this walk */
			while (src->next_leaf < src->nleaves &&
				   RelationGetRelid(src->leaves[src->next_leaf].rel) < src->start_leaf)
				src->next_leaf++;
			if (src->next_leaf >= src->nleaves)
				return false;
			src->leaf = &src->leaves[src->next_leaf++];
			leafid = RelationGetRelid(src->leaf->rel);
			/* the kind's due keys in this leaf's index (due_range.c), from the keyset on */
			range = ttl_due_range(src->kind, src->leaf->keyed[src->kind],
								  run->default_ttl, run->now_seconds);
			ttl_due_range_from(&range, leafid == src->start_leaf ? src->lower_key : PG_INT64_MIN);
			/* legal hold: start past the held rows at the bottom (purge_hold.c) */
			ttl_due_range_from(&range, ttl_purge_hold_floor(src->kind));
			ttl_due_scankeys(&range, keys);
			src->scan = ttl_index_beginscan(src->leaf->rel, src->leaf->index[src->kind],
											run->snapshot, 2, 0);
			index_rescan(src->scan, keys, 2, NULL, 0);
			src->slot = table_slot_create(src->leaf->rel, NULL);
		}
		if (index_getnext_slot(src->scan, ForwardScanDirection, src->slot))
		{
			*leaf = src->leaf;
			*slot = src->slot;
			return true;
		}
		keyset_end(base);
	}
}

static TtlRowSourceOps *
keyset_source(const TtlBatchPlan *plan, DirectLeaf *leaves, int nleaves)
{
	KeysetSource *src = palloc0(sizeof(KeysetSource));

	src->base.next = keyset_next;
	src->base.end = keyset_end;
	src->leaves = leaves;
	src->nleaves = nleaves;
	src->kind = plan->kind;
	src->start_leaf = plan->start_leaf;
	src->lower_key = plan->lower_key;
	return &src->base;
}

/* A row's walk value in kind's range (the keyset's and a floor's key). */
static inline int64
due_key(TtlDueKind kind, int64 ts, int64 expiry, int64 deadline)
{
	return kind == TTL_DUE_DEADLINE ? deadline : kind == TTL_DUE_OWN ? expiry : ts;
}

/*
 * The one loop of the direct path: take the source's rows until limit (< 0:
 * none) rows not skipped as busy are gone, re-check each against the whole
 * rule and delete it with the direct deleter.  A keyset batch remembers
 * where it stopped (the next batch's keyset).
 */
static void
take_rows(TtlRowSourceOps *source, const TtlBatchPlan *plan, DirectRun *run)
{
	DirectLeaf *leaf;
	TupleTableSlot *slot;
	bool		keyset = plan->source == TTL_SOURCE_KEYSET;

	while ((plan->limit < 0 || run->out->found < plan->limit) &&
		   source->next(source, run, &leaf, &slot))
	{
		int64		ts;
		int64		expiry;
		int64		deadline;

		CHECK_FOR_INTERRUPTS();
		/* a row whose purge failed waits for its retry_after (purge_failures.c) */
		if (ttl_failures_covers(RelationGetRelid(leaf->rel), &slot->tts_tid))
		{
			run->out->skipped_quarantined++;
			if (keyset)
				ttl_purge_hold_note(false, 0);	/* legal hold: the floor stops */
			continue;
		}
		if (!ttl_direct_row_is_due(leaf, slot, run, &ts, &expiry, &deadline))
		{
			if (ttl_purge_hold_last_held())
				run->out->skipped_held++;
			/* legal hold: a held row moves the floor, another stops it */
			if (keyset)
				ttl_purge_hold_note(ttl_purge_hold_last_held(),
									due_key(plan->kind, ts, expiry, deadline));
			continue;			/* cannot be, unless the index lies: not ours */
		}
		if (!ttl_direct_delete_row(leaf, slot, run))
		{
			run->out->skipped_locked++;
			if (keyset)
				ttl_purge_hold_note(false, 0);	/* legal hold: the floor stops */
			continue;			/* busy: left for a later walk */
		}
		/* legal hold: a deleted row is gone, the floor may pass it */
		if (keyset)
			ttl_purge_hold_note(true, due_key(plan->kind, ts, expiry, deadline));
		run->out->found++;
		ttl_progress_row_deleted();	/* ttl.purge_progress, lock-free */
		if (keyset)
		{
			run->out->last_leaf = RelationGetRelid(leaf->rel);
			run->out->last_key = due_key(plan->kind, ts, expiry, deadline);
		}
	}
	source->end(source);
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
	run->archive = NULL;
}

static void
end_run(DirectRun *run)
{
	MemoryContextDelete(run->row_cxt);
	PopActiveSnapshot();
	CommandCounterIncrement();
}

/*
 * Run the batch plan with the direct deleter where it applies
 * (purge_leaves.c decides): delete due rows of the plan's kinds (the
 * inherited kind, the own kind, the deadline kind of rule 9, through the
 * container's deadline index keyed by ttl.doc_deadline_key(doc, property)).
 *
 * Bitmap source (CALL ttl.run_purge, ttl.purge without max_rows, an
 * append-only container): go on with the walk of every kind's index
 * (*plan->walk, a child of plan->walk_parent, kept by the caller across
 * batches; a new one when there is none, or a one-shot one without
 * plan->walk) until limit rows not skipped as busy are gone;
 * out->range_done when the walk is done (it is then freed).
 *
 * Keyset source (the worker, ttl.purge with max_rows): one batch of limit
 * rows: walk the one kind's index, leaf by leaf (in OID order), in key
 * order from (start_leaf, lower_key); out->last_leaf and last_key say
 * where it stopped (the next batch's keyset).
 *
 * Returns NULL when it ran, else why the direct deleter does not apply
 * (nothing done: the caller runs the statement).
 */
const char *
ttl_purge_direct(TtlBatchPlan *plan, TtlDirectBatch *out)
{
	DirectLeaf *leaves;
	int			nleaves;
	const char *obstacle;
	DirectRun	run;
	TtlWalk    *one_shot = NULL;
	TtlWalk   **walk = plan->walk;
	MemoryContext walk_parent = plan->walk_parent;
	int			i;

	memset(out, 0, sizeof(TtlDirectBatch));
	out->last_leaf = plan->start_leaf;
	out->last_key = plan->lower_key;
	obstacle = ttl_open_leaves(plan, &leaves, &nleaves);
	if (obstacle != NULL)
	{
		ttl_close_leaves(leaves, nleaves);
		return obstacle;
	}
	for (i = 0; i < nleaves && plan->source == TTL_SOURCE_KEYSET; i++)
	{
		/* a BRIN index or none (append-only) gives pages, not keys in order */
		if (leaves[i].brin || leaves[i].sweep)
		{
			ttl_close_leaves(leaves, nleaves);
			return leaves[i].sweep ? "it has no purge index: only a walk can take it" :
				"its purge index is a BRIN index, which only a walk can use";
		}
	}
	plan->deleter = TTL_DELETER_DIRECT;
	begin_run(&run, plan->policy->default_ttl, plan->deadline, plan->now_seconds, out);
	/* the archive (1.8): the deleted rows' copies, inserted with the batch */
	if (OidIsValid(plan->policy->archive))
		run.archive = ttl_archive_rows_begin(plan->relid, plan->policy->archive);
	if (plan->source == TTL_SOURCE_BITMAP)
	{
		TtlRowSourceOps *source;

		if (walk == NULL)
		{
			walk = &one_shot;
			walk_parent = CurrentMemoryContext;
		}
		if (*walk != NULL && !ttl_walk_wants(*walk, plan->kinds))
		{
			ttl_free_walk(*walk);
			*walk = NULL;
		}
		if (*walk == NULL)
			*walk = ttl_new_walk(plan, leaves, nleaves, walk_parent);
		source = ttl_walk_source(*walk, leaves, nleaves, plan->limit);
		take_rows(source, plan, &run);
		out->range_done = ttl_walk_source_done(source);
		if (out->range_done)
		{
			ttl_free_walk(*walk);
			*walk = NULL;
		}
	}
	else
		take_rows(keyset_source(plan, leaves, nleaves), plan, &run);
	/* archive: the rest of the copies into the archive, in this transaction */
	if (run.archive != NULL)
		ttl_archive_rows_end(run.archive);
	end_run(&run);
	ttl_close_leaves(leaves, nleaves);
	return obstacle;
}
