/*
 * purge_rows.c
 *		One row of the direct path (purge_direct.c's keyset walk and
 *		purge_walk.c's bitmap walk): the re-check of the whole expiry rule
 *		(lifetime or deadline, rule 9) on the row version the snapshot
 *		sees, and its delete with table_tuple_delete(wait = false).
 *
 * Locking: the caller's (purge_direct.c): RowExclusiveLock on the table,
 * as its owner.  A delete never waits: a row locked, being changed or
 * changed since the snapshot comes back as busy and is left alone.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "document/deadline.h"
#include "document/expiry.h"
#include "purge/purge_internal.h"

/*
 * Whether the row in slot is due now (its _ts, lifetime expiry second and
 * deadline set for the caller: the keys of the three walks).  Rule 9: due
 * when its lifetime or its deadline has come.  Never raises.
 */
bool
ttl_direct_row_is_due(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run,
					  int64 *ts, int64 *expiry, int64 *deadline)
{
	bool		isnull;
	Datum		doc;
	bool		due;
	Jsonb	   *jb;
	MemoryContext oldcxt;

	*deadline = TTL_DEADLINE_MALFORMED_KEY + 1;
	doc = slot_getattr(slot, leaf->doc_attno, &isnull);
	if (isnull)
		return false;
	oldcxt = MemoryContextSwitchTo(run->row_cxt);
	jb = DatumGetJsonbP(doc);
	due = ttl_doc_expiry(jb, run->default_ttl, ts, expiry) &&
		*expiry <= run->now_seconds;
	if (run->deadline != NULL &&
		ttl_doc_deadline(jb, run->deadline, deadline) == TTL_DEADLINE_VALID &&
		*deadline <= run->now_seconds)
		due = true;
	/* legal hold: a due row a hold keeps is not due (purge_hold.c) */
	if (ttl_purge_hold_covers(due ? jb : NULL))
		due = false;
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(run->row_cxt);
	return due;
}

/*
 * Delete the row version in slot without waiting.  Returns false when it
 * is busy (locked, being changed, or changed since the snapshot): it is
 * left for a later batch.
 */
bool
ttl_direct_delete_row(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run)
{
	TM_Result	result;
	TM_FailureData tmfd;

	result = table_tuple_delete(leaf->rel, &slot->tts_tid, run->cid, run->snapshot,
								InvalidSnapshot, false, &tmfd, false);
	if (result == TM_BeingModified || result == TM_Updated || result == TM_Deleted)
		return false;
	if (result != TM_Ok && result != TM_SelfModified)
		elog(ERROR, "unexpected table_tuple_delete status %d", (int) result);
	if (result == TM_Ok)
		run->out->deleted++;
	return true;
}
