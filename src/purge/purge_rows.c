/*
 * purge_rows.c
 *		One due row, whichever deleter takes it: the re-check of the whole
 *		expiry rule (lifetime or deadline, rule 9) on the row version the
 *		snapshot sees and its delete with table_tuple_delete(wait = false)
 *		(the direct deleter, for purge_direct.c's one loop over either row
 *		source), and the same re-check and delete in SQL for the deleters
 *		that run a statement (purge_statement.c's batch, purge_replace.c's
 *		one item of rule 10).  The one place a legal hold (the re-checks)
 *		and an archive (the deletes) plug in: src/purge/README.md.
 *
 * Locking: the caller's (purge_direct.c): RowExclusiveLock on the table,
 * as its owner.  A delete never waits: a row locked, being changed or
 * changed since the snapshot comes back as busy and is left alone.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "document/deadline.h"
#include "document/expiry.h"
#include "purge/archive.h"
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
 * left for a later batch.  A container with an archive keeps a copy of
 * each row it deletes (archive_rows.c), inserted into the archive before
 * the batch ends, in its transaction.
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
	{
		run->out->deleted++;
		/* archive: a copy of the deleted row, inserted with the batch */
		if (run->archive != NULL)
			ttl_archive_rows_add(run->archive, leaf->rel, slot);
	}
	return true;
}

/*
 * The same re-check in SQL, for the deleters that run a DELETE statement
 * (the batch statement, purge_statement.c; rule 10's delete of one item,
 * purge_replace.c): the whole rule on the row version t that the DELETE
 * removes, with the default and now in parameters $default_param and
 * $now_param.  A legal hold's exclusion goes here and in
 * ttl_direct_row_is_due (src/purge/README.md).
 */
char *
ttl_purge_recheck_sql(const char *doc, const char *deadline, int default_param,
					  int now_param)
{
	/* rule 9: the re-check of a container with a deadline property */
	if (deadline == NULL)
		return psprintf("ttl.doc_expired(t.%s, $%d, $%d)", doc, default_param, now_param);
	return psprintf("ttl.doc_expired(t.%s, $%d, $%d, %s::pg_catalog.text)", doc,
					default_param, now_param, quote_literal_cstr(deadline));
}

/*
 * The delete in SQL, for the same deleters: DELETE FROM from WHERE where
 * [RETURNING returning].  An archive wraps it here, as ttl_direct_delete_row
 * is its direct form (src/purge/README.md).
 */
char *
ttl_purge_delete_sql(const char *from, const char *where, const char *returning)
{
	return psprintf("DELETE FROM %s WHERE %s%s%s", from, where,
					returning ? " RETURNING " : "", returning ? returning : "");
}

/*
 * The archived delete (1.8, an archive set): "d AS (DELETE ... RETURNING
 * t.*), a AS (INSERT INTO archive (cols) SELECT cols FROM d RETURNING 1)",
 * the WITH items that
 * replace the delete's own in a statement deleter, so each deleted row
 * goes through the executor into the archive in the statement of its
 * delete (archive.c).  A data-modifying WITH item must be at the top
 * level, so the caller writes "WITH <this> SELECT ... FROM d"; it counts
 * the rows of d and of a, which must be as many (ttl_archive_check_count).
 */
char *
ttl_purge_archived_delete_sql(Oid container, Oid archive, const char *from,
							  const char *where)
{
	return psprintf("d AS (%s), a AS (%s RETURNING 1)",
					ttl_purge_delete_sql(from, where, "t.*"),
					ttl_archive_insert_sql(container, archive, "d"));
}
