/*
 * replace_floor.c
 *		Rule 10's due floor: per leaf (a container's table or partition) of
 *		one database, in shared memory, a time T such that no item of the
 *		leaf that is in its indexes, or being written by a transaction
 *		still in flight, can be expired (rules 5 and 9) at a statement time
 *		before T.  A row whose statement time ttl.now() is before the floor
 *		skips the probe (replace.c reads it at every row); any other row
 *		probes.  0 is "unknown": every row probes.  The only shared
 *		structure of rule 10 (ttl.c requests it, with the preload only;
 *		without it every row probes).
 *
 * Lowering: a writer lowers the floor to a row's expiry (atomic min)
 * before the row can reach an index (replace.c, in the stamp trigger),
 * and its transaction is counted in flight in the leaf's slot from its
 * statement's first row (before the statement reads the policy) until
 * its top-level transaction ends (ttl_floor_xact_end, the xact callback).
 * An expiry already past (an old _ts, a deadline past) lowers it the same.
 *
 * Raising (the only way up, ttl_floor_publish): the floor is recomputed
 * from the leaf's purge and deadline indexes (replace_raise.c) by a
 * writer's statement at its first row when it is alone (nobody else in
 * flight, this transaction's first statement on the leaf) and the floor
 * is unknown or passed (at most once a second per leaf: next_try).  The
 * word packs the floor with a generation that every entry into flight and
 * every reset bumps; the recompute publishes with a compare-and-swap of
 * the word it read before it checked that nobody was in flight, so a
 * writer that began meanwhile (its row perhaps not indexed yet) or a
 * reset makes the publication fail: a lowering is never erased.
 *
 * Resets (to unknown, generation bumped): every relcache invalidation of
 * the leaf, in every backend that processes it (a trigger enabled or
 * disabled, an index made or dropped, ATTACH / DETACH, the relation made
 * with a reused OID, VACUUM), and every policy change of its container
 * (ttl_floor_reset_container, from registry.c's ttl_lock_container, so
 * before the change commits, under its ExclusiveLock; a recompute holds
 * the replace lock, which conflicts).  In this database only: another
 * database's floors, probes and skips are never touched.
 *
 * Slots: FLOOR_SLOTS, claimed for a (database, leaf) with a
 * compare-and-swap within a window of FLOOR_WINDOW slots from its hash,
 * and never given back until a restart: a slot never changes owner, so
 * a backend keeps its address (replace_leaf.c) and a leaf that finds no
 * free slot in its window never gets one (it probes every row), which is
 * what makes a writer without a slot safe.  No lock: every field is an
 * atomic, no loop over slots is made on the write path beyond the window.
 */
#include "postgres.h"

#include <time.h>

#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

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
static TtlFloorSlot **held = NULL;
static int	nheld = 0;
static int	held_size = 0;

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
	int			i;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("ttl rule 10 floors", sizeof(TtlFloorSlot) * FLOOR_SLOTS, &found);
	if (!found)
	{
		for (i = 0; i < FLOOR_SLOTS; i++)
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

static inline uint64
slot_id(Oid relid)
{
	return ((uint64) MyDatabaseId << 32) | (uint64) relid;
}

/* The slot of (this database, relid), claimed if create; NULL: none. */
static TtlFloorSlot *
find_slot(Oid relid, bool create)
{
	uint64		id = slot_id(relid);
	uint32		start;
	int			i;

	if (slots == NULL || !OidIsValid(relid) || !OidIsValid(MyDatabaseId))
		return NULL;
	start = murmurhash32(relid ^ murmurhash32(MyDatabaseId));
	for (i = 0; i < FLOOR_WINDOW; i++)
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

/* The leaf's slot in this database, claimed at first use; NULL: none. */
TtlFloorSlot *
ttl_floor_slot(Oid relid)
{
	return find_slot(relid, true);
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
	int			i;

	for (i = 0; i < nheld; i++)
	{
		if (held[i] == slot)
			return false;
	}
	if (nheld == held_size)
	{
		held_size = held_size == 0 ? 8 : held_size * 2;
		held = held == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(TtlFloorSlot *) * held_size) :
			repalloc(held, sizeof(TtlFloorSlot *) * held_size);
	}
	held[nheld++] = slot;
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

/*
 * Publish a recomputed floor: only if the word is still the one read
 * when the recompute began (no writer began, no reset, nothing lowered
 * since).  Without shared memory nothing is published.
 */
bool
ttl_floor_publish(TtlFloorSlot *slot, uint64 word, int64 floor)
{
	uint64		expected = word;

	floor = Max(floor, 0);
	floor = Min(floor, FLOOR_MAX);
#ifdef TTL_FLOOR_NO_GENERATION_CHECK
	/* a test build: the raise race's spec must fail with it */
	expected = pg_atomic_read_u64(&slot->word);
#endif
	return pg_atomic_compare_exchange_u64(&slot->word, &expected,
										  ((uint64) floor << GEN_BITS) | (word & GEN_MASK));
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
	TtlFloorSlot *slot = find_slot(relid, false);
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
	int			i;

	for (i = 0; i < nheld; i++)
		pg_atomic_fetch_sub_u32(&held[i]->in_flight, 1);
	nheld = 0;
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
	int			i;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	for (i = 0; slots != NULL && i < FLOOR_SLOTS; i++)
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
