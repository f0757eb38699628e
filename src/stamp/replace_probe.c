/*
 * replace_probe.c
 *		Rule 10's probe: the new row's key looked up in one unique index
 *		with a dirty snapshot (as core's unique check does), a busy holder
 *		waited for, and an expired holder replaced (purge_replace.c's
 *		delete) after the container's replace lock is taken and the policy
 *		read as committed; the restore guard's hold, and a leaf another
 *		role owns (registry/leaf_owner.c), raise 23505 instead.
 *		A holder whose replacement is refused (a restricting foreign key,
 *		an owner's BEFORE DELETE trigger returning NULL, a DELETE policy)
 *		conflicts: 23505, DO NOTHING skips the row, and DO UPDATE, which
 *		would merge into the expired item, raises 23505 here.
 *
 * Locking: the index is the statement's (RowExclusiveLock); the replace
 * lock (registry.c, RowExclusiveLock until commit) orders a replacement
 * against policy changes; the delete waits for whoever holds the row.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "document/deadline.h"
#include "purge/purge.h"
#include "registry/leaf_owner.h"
#include "registry/policy.h"
#include "stamp/replace_look.h"
#include "stamp/replace_probe.h"
#include "stamp/replace_running.h"

/* ---- one row ---- */

/* Whether the row in the holder slot is expired under the policy now. */
static bool
holder_expired(TtlReplaceState *state, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		doc = slot_getattr(slot, state->doc_attnum, &isnull);
	int64		expiry;

	if (isnull)
		return false;
	return ttl_datum_expiry_with_deadline(doc, state->policy.default_is_null,
										  state->policy.default_ttl,
										  TTL_HAS_DEADLINE(&state->policy) ?
										  state->policy.deadline_property : NULL,
										  &expiry) &&
		expiry <= state->now_seconds;
}

/* 23505 for a conflict with an expired item the restore guard holds. */
static void
report_held(TtlReplaceState *state, Relation rel, Relation index,
			Datum *values, bool *isnull)
{
	char	   *key = BuildIndexValueDescription(index, values, isnull);
	char	   *name = ttl_relation_display_name(state->container);

	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates unique constraint \"%s\"",
					RelationGetRelationName(index)),
			 key ?
			 errdetail("Key %s is held by an expired item of container %s, which the restore guard holds: nothing is replaced while the hold stands.",
					   key, name) :
			 errdetail("The key is held by an expired item of container %s, which the restore guard holds: nothing is replaced while the hold stands.",
					   name),
			 errhint("Check the container, then run SELECT ttl.resume('%s') to release the hold.",
					 name),
			 errtableconstraint(rel, RelationGetRelationName(index))));
}

/*
 * 23505 for a key held by an expired item that is not replaced: why (a
 * sentence's end, no period) and what to do say which case.
 */
static void
report_not_replaced(Relation rel, Relation index, Datum *values, bool *isnull,
					const char *why, const char *hint)
{
	char	   *key = BuildIndexValueDescription(index, values, isnull);

	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates unique constraint \"%s\"",
					RelationGetRelationName(index)),
			 key ?
			 errdetail("Key %s is held by an expired item %s.", key, why) :
			 errdetail("The key is held by an expired item %s.", why),
			 errhint("%s", hint),
			 errtableconstraint(rel, RelationGetRelationName(index))));
}

/*
 * A leaf another role owns (registry/leaf_owner.c): its delete would run
 * that role's code with the container owner's rights, so it is not
 * replaced.
 */
static void
report_foreign_leaf(TtlReplaceState *state, Relation rel, Relation index,
					Datum *values, bool *isnull)
{
	report_not_replaced(rel, index, values, isnull,
						psprintf("that rule 10 does not replace: %s",
								 ttl_foreign_leaf_text(state->container, RelationGetRelid(rel))),
						"Give the partition to the container's owner (ALTER TABLE ... OWNER TO), or wait for its owner to delete the item.");
}

/*
 * An ON CONFLICT DO UPDATE whose conflict is with an expired item whose
 * replacement was refused: the expired item is never merged into.
 */
static void
report_refused(TtlReplaceState *state, Relation rel, Relation index,
			   Datum *values, bool *isnull)
{
	report_not_replaced(rel, index, values, isnull,
						psprintf("of container %s whose replacement was refused: ON CONFLICT DO UPDATE never merges into an expired item",
								 ttl_relation_display_name(state->container)),
						"A restricting foreign key, a BEFORE DELETE trigger or a row security policy of the table's owner refuses the delete.");
}

/*
 * The holder at tid is expired by the statement's policy: replace it.
 * Takes the replace lock and reads the policy as committed now (a
 * shard's is its trigger's, which a change cannot replace while this
 * statement holds the shard).  true: it is gone; *held: the restore guard
 * holds it and the statement's ON CONFLICT clause handles the conflict.
 */
static bool
replace_holder(TtlReplaceState *state, Relation rel, Relation index,
			   ItemPointer tid, Datum *values, bool *isnull, bool *held)
{
	*held = false;
	if (!state->from_trigger)
	{
		const TtlContainer *fresh = &state->policy;

		ttl_lock_container_for_replace(state->container);
		/* the probes of this statement go on with the policy read here */
		if (!ttl_look_read_committed_policy(state))
			return false;
		if (fresh->default_is_null || !fresh->replace_expired)
		{
			state->active = false;
			return false;
		}
		if (fresh->held)
		{
			bool		do_update;

			/*
			 * ON CONFLICT handles it as a conflict (DO UPDATE too: the
			 * guard's hold is documented so; a refused replacement is not,
			 * see ttl_probe_index)
			 */
			if (ttl_running_covers(state->container, RelationGetRelid(rel),
								   RelationGetRelid(index), &do_update))
			{
				*held = true;
				return false;
			}
			report_held(state, rel, index, values, isnull);
		}
	}
	else
	{
		TtlContainer piece;

		/*
		 * A shard's archive (issue 31): the colocated shard of the archive
		 * its trigger names, found through the policy door as the purge
		 * finds it (an error when it is not on this node: nothing deleted).
		 */
		if (ttl_policy_read(state->container, &piece))
			state->policy.archive = piece.archive;
	}

	/*
	 * One owner per container tree: a leaf another role owns is not
	 * touched as the container's owner (the statement holds the leaf, so
	 * its owner stays as checked).  ON CONFLICT treats it as a conflict.
	 */
	if (!ttl_leaf_owner_fits(state->container, RelationGetRelid(rel)))
	{
		bool		do_update;

		/* DO NOTHING skips the row; DO UPDATE never merges into the item */
		if (ttl_running_covers(state->container, RelationGetRelid(rel),
							   RelationGetRelid(index), &do_update) &&
			!do_update)
			return false;
		report_foreign_leaf(state, rel, index, values, isnull);
	}

	/*
	 * A legal hold (SPEC, "After 1.6") plugs in here: a holder its match
	 * covers raises 55000, also under ON CONFLICT DO NOTHING.
	 */
	return ttl_purge_replaced_item(state->container, RelationGetRelid(rel), tid,
								   &state->policy, state->now_seconds);
}

/*
 * Probe one unique index for the key (values, isnull) and replace an
 * expired holder; self is the UPDATE's old row (never a holder).
 */
void
ttl_probe_index(TtlReplaceState *state, Relation rel, Relation index, ReplaceIndex *u,
			Datum *values, bool *isnull, ItemPointer self)
{
	IndexInfo  *info = u->info;
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	ScanKeyData scankeys[INDEX_MAX_KEYS];
	SnapshotData dirty;
	ItemPointerData tried;
	bool		held;
	int			i;

	ItemPointerSetInvalid(&tried);
	for (i = 0; i < nkeys; i++)
	{
		if (isnull[i] && !info->ii_NullsNotDistinct)
			return;				/* a NULL key conflicts with nothing */
		ScanKeyEntryInitialize(&scankeys[i], isnull[i] ? SK_ISNULL | SK_SEARCHNULL : 0,
							   i + 1, info->ii_UniqueStrats[i], InvalidOid,
							   index->rd_indcollation[i], info->ii_UniqueProcs[i],
							   values[i]);
	}
	InitDirtySnapshot(dirty);
	for (;;)
	{
		IndexScanDesc scan;
		TransactionId xwait = InvalidTransactionId;
		uint32		token = 0;
		bool		found = false;
		bool		expired = false;
		ItemPointerData tid;

		ItemPointerSetInvalid(&tid);
		scan = ttl_index_beginscan(rel, index, &dirty, nkeys, 0);
		index_rescan(scan, scankeys, nkeys, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, state->holder_slot))
		{
			if (self != NULL && ItemPointerEquals(&state->holder_slot->tts_tid, self))
				continue;
			tid = state->holder_slot->tts_tid;
			xwait = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
			token = dirty.speculativeToken;
			if (!TransactionIdIsValid(xwait))
				expired = holder_expired(state, state->holder_slot);
			found = true;
			break;
		}
		ExecClearTuple(state->holder_slot);
		index_endscan(scan);
		if (!found)
			return;				/* no holder: nothing conflicts */
		if (TransactionIdIsValid(xwait))
		{
			/* its writer is busy: wait, then look at its newest version */
			if (token != 0)
				SpeculativeInsertionWait(dirty.xmin, token);
			else
				XactLockTableWait(xwait, rel, &tid, XLTW_InsertIndex);
			continue;
		}
		if (!expired)
			return;				/* a live item: it conflicts, as before */
		if (ItemPointerEquals(&tid, &tried))
		{
			bool		do_update;

			/*
			 * Its delete was refused: it conflicts.  Without ON CONFLICT the
			 * unique check raises 23505, DO NOTHING skips the row; DO UPDATE
			 * would merge into the expired item, which rule 10 never does.
			 */
			if (ttl_running_covers(state->container, RelationGetRelid(rel),
								   RelationGetRelid(index), &do_update) && do_update)
				report_refused(state, rel, index, values, isnull);
			return;
		}
		if (replace_holder(state, rel, index, &tid, values, isnull, &held))
			return;
		if (held)
			return;				/* the guard holds it: ON CONFLICT handles it */
		if (!state->active)
			return;
		tried = tid;			/* changed meanwhile, or refused: look again */
	}
}
