/*
 * replace_floor.c
 *		Rule 10's due floor, the only shared structure of rule 10 (with the
 *		preload): per leaf of one database, a time T such that no item of
 *		the leaf that is indexed, or being written by a transaction in
 *		flight, can be expired at a statement time before T; replace.c
 *		reads it at every row and a row before T skips the probe.  0 is
 *		unknown.  src/stamp/README.md has the states, who lowers, raises
 *		and resets it, and why each is safe.
 *
 * Lowered by every writer to its row's expiry before the row can be
 * indexed; its transaction counts in flight from its statement's first
 * row (before the policy is read) to its end.  Raised only by a recompute
 * (ttl_floor_raise: the first row of each range of the purge and deadline
 * indexes, dirty snapshot; none where a subscription writes) published with a compare-and-swap of the word
 * read before the in-flight count was found to be the recomputing
 * transaction alone; the word packs the floor with a generation that
 * every entry and every reset bumps.  Reset by a relcache invalidation of
 * the leaf and by a policy change of its container, in this database.
 *
 * Slots are claimed for a (database, leaf) within a window of FLOOR_WINDOW
 * from its hash and never given back until a restart: a slot never
 * changes owner, and a leaf that finds its window full never gets one (it
 * probes every row).  Locking: none, atomics only; a recompute runs under
 * the container's replace lock (replace.c) and opens the leaf's indexes
 * with AccessShareLock.
 */
#include "postgres.h"

#include <time.h>

#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/catcache.h"

#include "base/compat.h"
#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/purge_key.h"
#include "stamp/replace_floor.h"

#define FLOOR_SLOTS		16384	/* a power of two: 40 bytes each, 640 kB */
#define FLOOR_WINDOW	32
#define GEN_BITS		30
#define GEN_MASK		((UINT64CONST(1) << GEN_BITS) - 1)
#define FLOOR_MAX		((INT64CONST(1) << (64 - GEN_BITS)) - 1)
#define RAISE_EVERY_S	1

struct TtlFloorSlot
{
	pg_atomic_uint64 id;		/* database << 32 | leaf; 0: free */
	pg_atomic_uint64 word;		/* floor << GEN_BITS | generation */
	pg_atomic_uint32 in_flight; /* transactions writing the leaf */
	pg_atomic_uint32 next_try;	/* no recompute before (Unix seconds) */
	pg_atomic_uint64 probes;	/* rows that probed, rows that skipped */
	pg_atomic_uint64 skips;
};

static TtlFloorSlot *slots = NULL;

/* The slots this backend's transaction counts itself in flight in. */
static List *held = NIL;		/* in TopMemoryContext */

#define WORD_FLOOR(w)	((int64) ((w) >> GEN_BITS))

/* shmem_request_hook's step (ttl.c) */
void
ttl_floor_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(TtlFloorSlot) * FLOOR_SLOTS));
}

/* shmem_startup_hook's step (ttl.c) */
void
ttl_floor_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("ttl rule 10 floors", sizeof(TtlFloorSlot) * FLOOR_SLOTS, &found);
	if (!found)
	{
		for (int i = 0; i < FLOOR_SLOTS; i++)
		{
			pg_atomic_init_u64(&slots[i].id, 0);
			pg_atomic_init_u64(&slots[i].word, 0);
			pg_atomic_init_u32(&slots[i].in_flight, 0);
			pg_atomic_init_u32(&slots[i].next_try, 0);
			pg_atomic_init_u64(&slots[i].probes, 0);
			pg_atomic_init_u64(&slots[i].skips, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The slot of (this database, relid), claimed if create; NULL: none. */
TtlFloorSlot *
ttl_floor_slot(Oid relid, bool create)
{
	uint64		id = ((uint64) MyDatabaseId << 32) | (uint64) relid;
	uint32		start;

	if (slots == NULL || !OidIsValid(relid) || !OidIsValid(MyDatabaseId))
		return NULL;
	start = murmurhash32(relid ^ murmurhash32(MyDatabaseId));
	for (int i = 0; i < FLOOR_WINDOW; i++)
	{
		TtlFloorSlot *s = &slots[(start + i) & (FLOOR_SLOTS - 1)];
		uint64		cur = pg_atomic_read_u64(&s->id);

		if (cur == id)
			return s;
		if (cur == 0 && create)
		{
			/* claimed for good; a slot claimed now by another may be ours */
			if (pg_atomic_compare_exchange_u64(&s->id, &cur, id) || cur == id)
				return s;
		}
	}
	return NULL;
}

/* The word with the generation bumped and the floor set to floor. */
static inline uint64
next_word(uint64 word, int64 floor)
{
	return ((uint64) floor << GEN_BITS) | ((word + 1) & GEN_MASK);
}

/*
 * Count this transaction in flight in slot (once per transaction) and bump
 * the generation.  True when this entry was the transaction's first into
 * slot: every row of the leaf this transaction wrote before is in its
 * indexes (a recompute may then be tried: ttl_floor_may_raise).
 */
bool
ttl_floor_enter(TtlFloorSlot *slot)
{
	uint64		word;
	MemoryContext old;

	if (list_member_ptr(held, slot))
		return false;
	old = MemoryContextSwitchTo(TopMemoryContext);
	held = lappend(held, slot);
	MemoryContextSwitchTo(old);
	/* in flight first, then the generation (see ttl_floor_may_raise) */
	pg_atomic_fetch_add_u32(&slot->in_flight, 1);
	word = pg_atomic_read_u64(&slot->word);
	while (!pg_atomic_compare_exchange_u64(&slot->word, &word,
										   next_word(word, WORD_FLOOR(word))))
		;
	return true;
}

/*
 * Whether a statement whose transaction just entered slot first should
 * recompute the floor now, and the word to publish against (*word): the
 * floor is unknown or passed, nobody else is in flight, and nobody tried
 * in the last second (claimed here).  The word is read before the count:
 * a writer that enters after the word was read bumps the generation (the
 * publication fails); one that entered before it is counted here.
 */
bool
ttl_floor_may_raise(TtlFloorSlot *slot, int64 now_seconds, uint64 *word)
{
	uint32		now_real = (uint32) time(NULL);
	uint32		next;

	*word = pg_atomic_read_u64(&slot->word);
	if (WORD_FLOOR(*word) != 0 && now_seconds < WORD_FLOOR(*word))
		return false;			/* nothing due: high enough */
	pg_memory_barrier();
	if (pg_atomic_read_u32(&slot->in_flight) != 1)
		return false;			/* another writer's rows may not be indexed */
	next = pg_atomic_read_u32(&slot->next_try);
	if (now_real < next)
		return false;
	return pg_atomic_compare_exchange_u32(&slot->next_try, &next,
										  now_real + RAISE_EVERY_S);
}

/* A row expiring at expiry is about to be written in the slot's leaf. */
void
ttl_floor_lower(TtlFloorSlot *slot, int64 expiry)
{
	uint64		word = pg_atomic_read_u64(&slot->word);

	expiry = Max(expiry, 0);	/* at or before 1970: unknown */
	while (expiry < WORD_FLOOR(word))
	{
		uint64		lowered = ((uint64) expiry << GEN_BITS) | (word & GEN_MASK);

		if (pg_atomic_compare_exchange_u64(&slot->word, &word, lowered))
			break;
	}
}

/* Whether a row of a statement at now_seconds skips the probe (counted). */
bool
ttl_floor_skips(TtlFloorSlot *slot, int64 now_seconds)
{
	if (now_seconds < WORD_FLOOR(pg_atomic_read_u64(&slot->word)))
	{
		pg_atomic_fetch_add_u64(&slot->skips, 1);
		return true;
	}
	pg_atomic_fetch_add_u64(&slot->probes, 1);
	return false;
}

/* The floor of (this database, relid) unknown (a relcache invalidation). */
void
ttl_floor_reset(Oid relid)
{
	TtlFloorSlot *slot = ttl_floor_slot(relid, false);
	uint64		word;

	if (slot == NULL)
		return;
	word = pg_atomic_read_u64(&slot->word);
	while (!pg_atomic_compare_exchange_u64(&slot->word, &word, next_word(word, 0)))
		;
	pg_atomic_write_u32(&slot->next_try, 0);	/* the next writer may recompute */
}

/*
 * A policy change of container (registry.c's ttl_lock_container, through
 * ttl.c): the floors of its leaves unknown, before the change commits.
 */
void
ttl_floor_reset_container(Oid container)
{
	List	   *leaves;
	ListCell   *lc;

	if (slots == NULL)
		return;
	leaves = find_all_inheritors(container, NoLock, NULL);
	foreach(lc, leaves)
		ttl_floor_reset(lfirst_oid(lc));
	list_free(leaves);
}

/* The end of this backend's top-level transaction (the xact callback). */
void
ttl_floor_xact_end(void)
{
	ListCell   *lc;

	foreach(lc, held)
		pg_atomic_fetch_sub_u32(&((TtlFloorSlot *) lfirst(lc))->in_flight, 1);
	list_free(held);
	held = NIL;
}

/*
 * Whether a subscription writes into this database: its apply worker
 * writes with session_replication_role = replica, where the stamp trigger
 * does not fire, so its rows would lower no floor.
 */
static bool
subscribed(void)
{
	CatCList   *list = SearchSysCacheList1(SUBSCRIPTIONNAME, ObjectIdGetDatum(MyDatabaseId));
	bool		found = list->n_members > 0;

	ReleaseSysCacheList(list);
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
 * The expiry bound of the first row of [low, high] of the index (kind: a
 * TTL_KEY_* range of the purge index, or -1: the deadline index), lowered
 * into *floor.
 */
static void
lower_from(Relation rel, Relation index, int kind, int64 low, int64 high,
		   const TtlContainer *policy, AttrNumber doc_attnum, TupleTableSlot *slot,
		   int64 *floor)
{
	bool		isnull;
	Datum		doc;
	int64		key;
	int64		seconds;

	if (!first_row(rel, index, low, high, slot))
		return;
	doc = slot_getattr(slot, doc_attnum, &isnull);
	/* the row's key is the entry's: no HOT update changes an indexed expression */
	if (isnull)
		seconds = 0;			/* cannot happen: unknown then */
	else if (kind < 0)
		seconds = ttl_datum_deadline(doc, policy->deadline_property, &seconds) ==
			TTL_DEADLINE_VALID ? seconds : 0;
	else if (!ttl_doc_purge_key(ttl_datum_jsonb_root(doc), &key))
		seconds = 0;
	else
		seconds = ttl_purge_key_decode(kind, key) +
			(kind == TTL_KEY_INHERITED ? policy->default_ttl : 0);
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
	uint64		expected = word;

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

		for (int kind = TTL_KEY_INHERITED; kind <= TTL_KEY_OWN; kind++)
			lower_from(rel, purge, kind, ttl_purge_key_low(kind),
					   ttl_purge_key_encode(kind, PG_INT64_MAX), policy, doc_attnum, tslot, &floor);
		if (deadline != NULL)
			lower_from(rel, deadline, -1, TTL_DEADLINE_MALFORMED_KEY + 1, PG_INT64_MAX,
					   policy, doc_attnum, tslot, &floor);
		ExecDropSingleTupleTableSlot(tslot);
	}
	if (purge != NULL)
		index_close(purge, AccessShareLock);
	if (deadline != NULL)
		index_close(deadline, AccessShareLock);
	if (!known)
		return false;
	/* published only if the word did not move since it was read (header) */
	floor = Min(Max(floor, 0), FLOOR_MAX);
#ifdef TTL_FLOOR_NO_GENERATION_CHECK
	expected = pg_atomic_read_u64(&slot->word);	/* a test build (see the raise spec) */
#endif
	return pg_atomic_compare_exchange_u64(&slot->word, &expected,
										  ((uint64) floor << GEN_BITS) | (word & GEN_MASK));
}

/*
 * ttl._rule10_counts(): the rows of this database's containers that
 * probed and that skipped the probe since the server started (with the
 * preload; zeros without it).  Reads every slot, no lock.
 */
PG_FUNCTION_INFO_V1(ttl_rule10_counts);
Datum
ttl_rule10_counts(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	uint64		probes = 0;
	uint64		skips = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	for (int i = 0; slots != NULL && i < FLOOR_SLOTS; i++)
	{
		if ((pg_atomic_read_u64(&slots[i].id) >> 32) != MyDatabaseId)
			continue;
		probes += pg_atomic_read_u64(&slots[i].probes);
		skips += pg_atomic_read_u64(&slots[i].skips);
	}
	values[0] = Int64GetDatum((int64) probes);
	values[1] = Int64GetDatum((int64) skips);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
