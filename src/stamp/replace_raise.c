/*
 * replace_raise.c
 *		Rule 10's floor recomputed from a leaf's indexes and published
 *		(replace_floor.c has the floor, its guarantee and who may raise
 *		it): the earliest expiry any row of the leaf can have under the
 *		policy, from the first row of each range of the purge index
 *		(ttl.doc_purge_key: items inheriting the default by _ts, items with
 *		their own ttl by expiry) and of the deadline index (rule 9), read
 *		with a dirty snapshot (rows being written count, rows whose delete
 *		committed do not).  A leaf without a btree purge index (append-only:
 *		BRIN or none; the two indexes of 1.0-1.2), or with a deadline
 *		property and no deadline index, gets a floor only while it is empty
 *		(no page): otherwise nothing is published and its rows probe.
 *
 * Not in a database that a logical replication subscription writes into:
 * its apply worker writes with session_replication_role = replica, where
 * the stamp trigger does not fire, so its rows would lower no floor (a
 * session that sets the role by hand is the documented limit:
 * docs/rules.md).
 *
 * Locking: the caller (replace.c) holds the container's replace lock,
 * taken without waiting, and read the policy after it, so no policy
 * change is in progress and the one read is committed; the leaf is the
 * statement's (RowExclusiveLock); its indexes are opened with
 * AccessShareLock.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_subscription.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/purge_key.h"
#include "stamp/replace_floor.h"
#include "stamp/replace_raise.h"

/* Whether a subscription writes into this database (see the header). */
static bool
subscribed(void)
{
	Relation	catalog = table_open(SubscriptionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key, Anum_pg_subscription_subdbid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(MyDatabaseId));
	scan = systable_beginscan(catalog, InvalidOid, false, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
	return found;
}

/*
 * The first row of [low, high] of the index that is there for a dirty
 * snapshot, into slot; false when none.
 */
static bool
first_row(Relation rel, Relation index, int64 low, int64 high, TupleTableSlot *slot)
{
	ScanKeyData keys[2];
	SnapshotData dirty;
	IndexScanDesc scan;
	bool		found;

	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(low));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(high));
	InitDirtySnapshot(dirty);
	scan = ttl_index_beginscan(rel, index, &dirty, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	return found;
}

/*
 * The earliest expiry of the rows of one range of the purge index
 * (kind: TTL_KEY_*), lowered into *floor.
 */
static void
lower_from_purge_index(Relation rel, Relation index, int kind, const TtlContainer *policy,
					   AttrNumber doc_attnum, TupleTableSlot *slot, int64 *floor)
{
	bool		isnull;
	Datum		doc;
	int64		key;
	int64		seconds;

	if (!first_row(rel, index, ttl_purge_key_low(kind),
				   ttl_purge_key_encode(kind, PG_INT64_MAX), slot))
		return;
	doc = slot_getattr(slot, doc_attnum, &isnull);
	/* the row's key is the entry's (no HOT update changes an indexed expression) */
	if (isnull || !ttl_doc_purge_key(ttl_datum_jsonb_root(doc), &key))
	{
		*floor = 0;				/* cannot happen; unknown then */
		return;
	}
	seconds = ttl_purge_key_decode(kind, key);
	if (kind == TTL_KEY_INHERITED)
		seconds += policy->default_ttl;
	*floor = Min(*floor, seconds);
}

/* The earliest well-formed deadline of the leaf's rows, lowered into *floor. */
static void
lower_from_deadline_index(Relation rel, Relation index, const TtlContainer *policy,
						  AttrNumber doc_attnum, TupleTableSlot *slot, int64 *floor)
{
	bool		isnull;
	Datum		doc;
	int64		seconds;

	if (!first_row(rel, index, TTL_DEADLINE_MALFORMED_KEY + 1, PG_INT64_MAX, slot))
		return;
	doc = slot_getattr(slot, doc_attnum, &isnull);
	if (isnull ||
		ttl_datum_deadline(doc, policy->deadline_property, &seconds) != TTL_DEADLINE_VALID)
	{
		*floor = 0;
		return;
	}
	*floor = Min(*floor, seconds);
}

/* The test gate (ttl.test_floor_gate): wait while a test holds the lock. */
static void
test_gate(void)
{
	if (ttl_test_floor_gate == 0)
		return;
	DirectFunctionCall1(pg_advisory_lock_shared_int8, Int64GetDatum(ttl_test_floor_gate));
	DirectFunctionCall1(pg_advisory_unlock_shared_int8, Int64GetDatum(ttl_test_floor_gate));
}

/*
 * Recompute the floor of the leaf rel under policy and publish it against
 * word (ttl_floor_may_raise's); false when nothing was published.
 */
bool
ttl_floor_raise(TtlFloorSlot *slot, uint64 word, Relation rel, const TtlContainer *policy,
				AttrNumber doc_attnum)
{
	List	   *indexes;
	ListCell   *lc;
	Relation	purge = NULL;
	Relation	deadline = NULL;
	int64		floor = PG_INT64_MAX;
	bool		known = true;

	test_gate();
	if (subscribed())
		return false;
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (purge == NULL && ttl_purge_index_kind(index, doc_attnum) == TTL_INDEX_KEY)
			purge = index;
		else if (deadline == NULL && TTL_HAS_DEADLINE(policy) &&
				 ttl_is_deadline_index(index, doc_attnum, policy->deadline_property))
			deadline = index;
		else
			index_close(index, AccessShareLock);
	}
	list_free(indexes);
	if (purge == NULL || (TTL_HAS_DEADLINE(policy) && deadline == NULL))
		known = RelationGetNumberOfBlocks(rel) == 0;	/* no row at all */
	else
	{
		TupleTableSlot *tslot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
														 table_slot_callbacks(rel));

		lower_from_purge_index(rel, purge, TTL_KEY_INHERITED, policy, doc_attnum, tslot, &floor);
		lower_from_purge_index(rel, purge, TTL_KEY_OWN, policy, doc_attnum, tslot, &floor);
		if (deadline != NULL)
			lower_from_deadline_index(rel, deadline, policy, doc_attnum, tslot, &floor);
		ExecDropSingleTupleTableSlot(tslot);
	}
	if (purge != NULL)
		index_close(purge, AccessShareLock);
	if (deadline != NULL)
		index_close(deadline, AccessShareLock);
	return known && ttl_floor_publish(slot, word, floor);
}
