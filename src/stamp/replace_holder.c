/*
 * replace_holder.c
 *		Rule 10's judgement of one expired holder that a row's probe
 *		(replace.c) found: replaced (purge_replace.c's delete) after the
 *		container's replace lock is taken and the policy read as committed;
 *		the restore guard's hold, and a leaf another role owns
 *		(registry/leaf_owner.c), raise 23505 instead.  A holder whose
 *		replacement is refused (a restricting foreign key, an owner's BEFORE
 *		DELETE trigger returning NULL, a DELETE policy) conflicts: 23505, DO
 *		NOTHING skips the row, and DO UPDATE, which would merge into the
 *		expired item, raises 23505 here.
 *
 * Locking: the index is the statement's; the replace lock (registry.c,
 * RowExclusiveLock until commit, which only a policy change conflicts
 * with) means a writer never replaces by a stale policy.  The delete waits
 * for whoever holds the row (purge_replace.c).
 */
#include "postgres.h"

#include "access/genam.h"
#include "utils/rel.h"

#include "purge/purge.h"
#include "registry/leaf_owner.h"
#include "registry/policy.h"
#include "stamp/replace_holder.h"
#include "stamp/replace_running.h"

/* 23505 for a conflict with an expired item the restore guard holds. */
static void
report_held(Oid container, Relation rel, Relation index, Datum *values, bool *isnull)
{
	char	   *key = BuildIndexValueDescription(index, values, isnull);
	char	   *name = ttl_relation_display_name(container);

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
 * A holder whose replacement was refused: it conflicts.  Without ON
 * CONFLICT the unique check raises 23505, DO NOTHING skips the row; DO
 * UPDATE would merge into the expired item, which rule 10 never does: 23505
 * here.
 */
void
ttl_holder_refused(Oid container, Relation rel, Relation index, Datum *values, bool *isnull)
{
	bool		do_update;

	if (ttl_running_covers(container, RelationGetRelid(rel), RelationGetRelid(index),
						   &do_update) && do_update)
		report_not_replaced(rel, index, values, isnull,
							psprintf("of container %s whose replacement was refused: ON CONFLICT DO UPDATE never merges into an expired item",
									 ttl_relation_display_name(container)),
							"A restricting foreign key, a BEFORE DELETE trigger or a row security policy of the table's owner refuses the delete.");
}

/*
 * The container's policy as committed now into *policy (the probes of the
 * statement go on with it): false when the container was disabled, or its
 * default or setting turned rule 10 off, meanwhile.
 */
static bool
read_committed_policy(Oid container, TtlContainer *policy)
{
	TtlContainer fresh;

	if (!ttl_read_container(container, &fresh))
		return false;
	*policy = fresh;
	return !fresh.default_is_null && fresh.replace_expired;
}

/*
 * The holder at tid is expired by the statement's policy (*policy, which
 * is read again as committed here): replace it.  Takes the replace lock
 * first (a shard's policy is its trigger's, which a change cannot replace
 * while the statement holds the shard).  See TtlHolderFate.
 */
TtlHolderFate
ttl_replace_holder(Oid container, bool from_trigger, TtlContainer *policy, int64 now_seconds,
				   Relation rel, Relation index, ItemPointer tid, Datum *values, bool *isnull)
{
	bool		do_update;

	if (!from_trigger)
	{
		ttl_lock_container_for_replace(container);
		if (!read_committed_policy(container, policy))
			return TTL_HOLDER_STOP;
		if (policy->held)
		{
			/*
			 * ON CONFLICT handles it as a conflict (DO UPDATE too: the
			 * guard's hold is documented so; a refused replacement is not,
			 * see ttl_holder_refused)
			 */
			if (ttl_running_covers(container, RelationGetRelid(rel),
								   RelationGetRelid(index), &do_update))
				return TTL_HOLDER_CONFLICTS;
			report_held(container, rel, index, values, isnull);
		}
	}
	else
	{
		TtlContainer piece;

		/*
		 * A shard's archive: the colocated shard of the archive its trigger
		 * names, found through the policy door as the purge finds it (an
		 * error when it is not on this node: nothing deleted).
		 */
		if (ttl_policy_read(container, &piece))
			policy->archive = piece.archive;
	}

	/*
	 * One owner per container tree: a leaf another role owns is not
	 * touched as the container's owner (the statement holds the leaf, so
	 * its owner stays as checked).  ON CONFLICT treats it as a conflict:
	 * DO NOTHING skips the row, DO UPDATE never merges into the item.
	 */
	if (!ttl_leaf_owner_fits(container, RelationGetRelid(rel)))
	{
		if (ttl_running_covers(container, RelationGetRelid(rel),
							   RelationGetRelid(index), &do_update) && !do_update)
			return TTL_HOLDER_CONFLICTS;
		report_not_replaced(rel, index, values, isnull,
							psprintf("that rule 10 does not replace: %s",
									 ttl_foreign_leaf_text(container, RelationGetRelid(rel))),
							"Give the partition to the container's owner (ALTER TABLE ... OWNER TO), or wait for its owner to delete the item.");
	}

	/*
	 * A legal hold plugs in here (purge_replace.c): a holder its match
	 * covers raises 55000, also under ON CONFLICT DO NOTHING.
	 */
	return ttl_purge_replaced_item(container, RelationGetRelid(rel), tid, policy,
								   now_seconds) ? TTL_HOLDER_GONE : TTL_HOLDER_LOOK_AGAIN;
}
