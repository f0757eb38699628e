/*
 * due_floor.c
 *		Rule 10's due floor: per leaf (a container's table, or one of its
 *		partitions), in shared memory, a lower bound of the purge keys
 *		(purge_key.c) of every row the leaf can hold, one per key range
 *		(items inheriting the default, items with their own ttl).  While
 *		both bounds lie above the due keys of now, no item of the leaf is
 *		due, and a write cannot meet an expired holder of its key: it skips
 *		the probe of the unique indexes (replace.c).  The floor is what lets
 *		a single-row statement and an append-only container (whose BRIN
 *		index, or none, cannot say cheaply whether anything is due) write
 *		without a probe.
 *
 * How it stays a lower bound: every row the stamp trigger writes in a
 * leaf that has a floor lowers it to the row's key (ttl_floor_lower,
 * before the row is inserted), whatever the policy, the setting or the
 * statement; a floor is only ever lowered between validations, never
 * raised, so it may say "maybe due" long after the due items are gone
 * (the probe then runs as without a floor, until the next validation).
 *
 * Validation (ttl_floor_validate) sets the bounds from the rows present:
 * the first key of each range in the leaf's btree purge index, or, without
 * one (append-only: BRIN, none; 1.0-1.2's indexes), every row's key read
 * from the heap, which is done only while the leaf has at most
 * FLOOR_SCAN_PAGES pages.  It runs only while no other transaction can
 * write the leaf: it takes the leaf's ShareLock conditionally (a writer
 * holds RowExclusiveLock until its transaction ends; so does a prepared
 * transaction) and releases it at once.  Every writer that comes later
 * finds the floor when its statement starts (after its own lock) and
 * lowers it; every row written before is in the leaf when it is read.
 * The index is read with SnapshotAny (entries not yet killed: dead rows
 * count too, lower bounds only); the heap with a dirty snapshot (rows
 * whose delete committed hold no key).
 *
 * What makes a floor invalid: a relcache invalidation of the leaf (ttl.c
 * calls ttl_floor_invalidate from rule 10's callback): a trigger disabled
 * or dropped (ttl.disable), ttl.enable, ATTACH / DETACH PARTITION, DROP,
 * TRUNCATE, a policy change, and VACUUM / ANALYZE, which update pg_class;
 * and a server restart (shared memory is new).  Rows written while ttl's
 * trigger does not fire (session_replication_role = replica) are not seen
 * by it: no floor is validated in a database that a logical replication
 * subscription writes into (its apply worker runs so); a subscription
 * created later, or a session setting the role by hand, is seen at the
 * floor's next invalidation only: docs (rules.md) say so.  A generation counter makes an invalidation that
 * arrives during a validation win.
 *
 * Slots: FLOOR_SLOTS of them, cluster-wide, assigned under the spinlock;
 * when all are taken a clock sweep gives a new leaf the slot of one not
 * looked up since the hand last passed (partitions made and dropped every
 * day never use them up; the leaf that lost its slot probes until it gets
 * one again and validates it).  A backend caches its slots' addresses, so
 * a slot may change owner under it: a new owner bumps the generation
 * before it writes the slot's identity, and a reader takes the state, then
 * checks the identity, then the bounds, then that the state did not move
 * (ttl_floor_nothing_due): it never judges its leaf by another leaf's
 * floor.  A lowering that lands in a slot that changed owner only lowers
 * the new owner's floor (harmless); the row's own leaf has lost its slot,
 * and its next slot is invalid until validated under the ShareLock, which
 * waits for that writer's transaction.
 *
 * Due writes (the look's guard, replace.c): a multi-row statement looks
 * once whether its leaf holds anything due and trusts that look for its
 * later rows; a row another transaction writes after the look that is due
 * the moment it is written (past deadline, old _ts) would be missed.  Such
 * a writer announces the row before it is inserted
 * (ttl_floor_announce_due): its transaction counts itself in flight in the
 * slot once (until it ends: ttl_floor_xact_end, from the xact callback, so
 * a row that waits long between the trigger and its index insertion is
 * covered), and bumps due_writes.  A look is begun (ttl_floor_look_begin)
 * only when no other transaction is in flight there, and holds
 * (ttl_floor_look_holds) while neither due_writes nor the policy epoch
 * moved.  A slot with a transaction in flight is never given to another
 * leaf (clock_victim), and a change of owner bumps due_writes; a writer
 * that finds no slot at all is an orphan, counted cluster-wide, which
 * stops every look while it lasts and bumps the epoch.  The epoch is also
 * bumped by every committed policy change (ttl_floor_policy_changed: the
 * xact callback, after the commit is visible).
 *
 * Locking: the spinlock guards the slots' identities, the clock and a
 * validation's commit (the bounds read into local variables are written
 * and the floor made valid only if its state and identity did not move);
 * the bounds and the state are atomics (lowering is a compare-and-swap
 * loop that writes only when the key is lower); the in-flight counts are
 * read and written under the spinlock, due_writes and the epoch are
 * atomics (a fetch-add: a full barrier before the row is inserted).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_subscription.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "document/document.h"
#include "document/purge_key.h"
#include "stamp/due_floor.h"

#ifndef TTL_FLOOR_SLOTS
#define FLOOR_SLOTS			4096
#else
#define FLOOR_SLOTS			TTL_FLOOR_SLOTS	/* a build to try the clock */
#endif
#define FLOOR_SCAN_PAGES	128
#define FLOOR_RETRY_MS		100

/* state: generation << 1 | valid */
struct TtlFloor
{
	Oid			dboid;			/* InvalidOid: free */
	Oid			relid;
	bool		referenced;		/* looked up since the clock passed */
	pg_atomic_uint64 state;
	pg_atomic_uint64 low[2];	/* per TTL_KEY_* range, order-preserving images */
	/* the look's guard (see "Due writes" in the file header) */
	uint32		in_flight;		/* transactions that wrote a due row (spinlock) */
	pg_atomic_uint64 due_writes;	/* due rows announced, owner changes */
};

typedef struct FloorShared
{
	slock_t		mutex;
	int			nused;
	int			hand;			/* the clock, once every slot is used */
	uint32		orphans_in_flight;	/* due writers that found no slot (spinlock) */
	pg_atomic_uint64 epoch;		/* policy changes committed, orphan due writes */
	TtlFloor	slots[FLOOR_SLOTS];
} FloorShared;

static FloorShared *floor_shared = NULL;

/* This backend's slots (they never move nor change owner). */
typedef struct FloorEntry
{
	Oid			relid;
	TtlFloor   *floor;
	TimestampTz next_try;		/* no validation before (may_try) */
} FloorEntry;

static HTAB *floor_cache = NULL;

/*
 * The slots this backend's transaction counts itself in flight in (NULL:
 * an orphan, counted in orphans_in_flight), released at its end.
 */
static TtlFloor **held = NULL;
static int	nheld = 0;
static int	held_size = 0;

/* An int64 key as a uint64 of the same order. */
static inline uint64
key_image(int64 key)
{
	return ((uint64) key) ^ (UINT64CONST(1) << 63);
}

static inline int
key_kind(int64 key)
{
	/* the own range lies below zero, the inherited one above (purge_key.c) */
	return key < 0 ? TTL_KEY_OWN : TTL_KEY_INHERITED;
}

/* shmem_request_hook's step (ttl.c) */
void
ttl_floor_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(FloorShared)));
}

/* shmem_startup_hook's step (ttl.c) */
void
ttl_floor_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	floor_shared = ShmemInitStruct("ttl rule 10 due floors", sizeof(FloorShared), &found);
	if (!found)
	{
		int			i;

		SpinLockInit(&floor_shared->mutex);
		floor_shared->nused = 0;
		floor_shared->hand = 0;
		floor_shared->orphans_in_flight = 0;
		pg_atomic_init_u64(&floor_shared->epoch, 0);
		for (i = 0; i < FLOOR_SLOTS; i++)
		{
			floor_shared->slots[i].dboid = InvalidOid;
			floor_shared->slots[i].relid = InvalidOid;
			floor_shared->slots[i].referenced = false;
			pg_atomic_init_u64(&floor_shared->slots[i].state, 0);
			pg_atomic_init_u64(&floor_shared->slots[i].low[0], 0);
			pg_atomic_init_u64(&floor_shared->slots[i].low[1], 0);
			floor_shared->slots[i].in_flight = 0;
			pg_atomic_init_u64(&floor_shared->slots[i].due_writes, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* A new generation of the floor, not valid: a validation under way loses. */
static void
new_generation(TtlFloor *f)
{
	uint64		s = pg_atomic_read_u64(&f->state);

	while (!pg_atomic_compare_exchange_u64(&f->state, &s, ((s >> 1) + 1) << 1))
		;
}

/*
 * Every slot is used: the first the hand finds not looked up since it last
 * passed (it clears the marks it passes) and with no due writer in flight
 * (its leaf must keep it: the look's guard); NULL after two turns.  Under
 * the spinlock.
 */
static TtlFloor *
clock_victim(void)
{
	int			i;

	for (i = 0; i < 2 * FLOOR_SLOTS; i++)
	{
		TtlFloor   *f = &floor_shared->slots[floor_shared->hand];

		floor_shared->hand = (floor_shared->hand + 1) % FLOOR_SLOTS;
		if (!f->referenced && f->in_flight == 0)
			return f;
		f->referenced = false;
	}
	return NULL;
}

/* The slot of relid in this database, or NULL (created when asked). */
static TtlFloor *
find_shared(Oid relid, bool create)
{
	TtlFloor   *found = NULL;
	int			i;

	SpinLockAcquire(&floor_shared->mutex);
	for (i = 0; i < floor_shared->nused; i++)
	{
		TtlFloor   *f = &floor_shared->slots[i];

		if (f->dboid == MyDatabaseId && f->relid == relid)
		{
			found = f;
			break;
		}
	}
	if (found != NULL)
		found->referenced = true;
	else if (create)
	{
		found = floor_shared->nused < FLOOR_SLOTS ?
			&floor_shared->slots[floor_shared->nused++] : clock_victim();
		if (found != NULL)
		{
			/* a new generation, invalid, before the new identity (file header) */
			new_generation(found);
			/* a look of the old owner taken before does not hold any more */
			pg_atomic_fetch_add_u64(&found->due_writes, 1);
			found->dboid = MyDatabaseId;
			found->relid = relid;
			found->referenced = true;
			/* invalid until validated; the bounds are set then */
		}
	}
	SpinLockRelease(&floor_shared->mutex);
	return found;
}

/*
 * The leaf's floor, or NULL when it has none (not created unless asked;
 * none without the preload, or when all slots are taken).
 */
TtlFloor *
ttl_floor_find(Oid relid, bool create)
{
	FloorEntry *entry;
	TtlFloor   *f;
	bool		found;

	if (floor_shared == NULL)
		return NULL;
	if (floor_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(FloorEntry);
		floor_cache = hash_create("ttl rule 10 due floors", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(floor_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL)
	{
		/* still ours (a racy look; ttl_floor_nothing_due checks for real) */
		if (entry->floor->dboid == MyDatabaseId && entry->floor->relid == relid)
			return entry->floor;
		hash_search(floor_cache, &relid, HASH_REMOVE, NULL);
	}
	f = find_shared(relid, create);
	if (f == NULL)
		return NULL;			/* a miss is not kept: it may be made later */
	entry = hash_search(floor_cache, &relid, HASH_ENTER, &found);
	entry->floor = f;
	entry->next_try = 0;
	return f;
}

/* A relcache invalidation (ttl.c, through replace.c): the floor of relid, or all. */
void
ttl_floor_invalidate(Oid relid)
{
	int			i, n;

	if (floor_shared == NULL)
		return;
	SpinLockAcquire(&floor_shared->mutex);
	n = floor_shared->nused;
	SpinLockRelease(&floor_shared->mutex);
	for (i = 0; i < n; i++)
	{
		TtlFloor   *f = &floor_shared->slots[i];

		if (f->dboid == MyDatabaseId && (relid == InvalidOid || f->relid == relid))
			new_generation(f);
	}
}

/* The row with this purge key is about to be written in the floor's leaf. */
void
ttl_floor_lower(TtlFloor *floor, int64 key)
{
	pg_atomic_uint64 *low = &floor->low[key_kind(key)];
	uint64		image = key_image(key);
	uint64		cur = pg_atomic_read_u64(low);

	while (image < cur)
	{
		if (pg_atomic_compare_exchange_u64(low, &cur, image))
			break;
	}
}

/* key into the bounds being computed (a validation's, local) */
static inline void
lower_local(uint64 *low, int64 key)
{
	uint64		image = key_image(key);

	if (image < low[key_kind(key)])
		low[key_kind(key)] = image;
}

/* The lowest key of a kind's range in the btree purge index, into low. */
static void
lower_from_index(uint64 *low, Relation rel, Relation index, int kind)
{
	ScanKeyData keys[2];
	IndexScanDesc scan;

	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(ttl_purge_key_low(kind)));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(ttl_purge_key_encode(kind, PG_INT64_MAX)));
	scan = ttl_index_beginscan(rel, index, SnapshotAny, 2, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, keys, 2, NULL, 0);
	if (index_getnext_tid(scan, ForwardScanDirection) != NULL)
	{
		bool		isnull;
		Datum		d = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);

		if (!isnull)
			lower_local(low, DatumGetInt64(d));
	}
	index_endscan(scan);
}

/* Every row's key, read from the table (a small leaf), into low. */
static void
lower_from_heap(uint64 *low, Relation rel, AttrNumber doc_attnum)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
													 table_slot_callbacks(rel));
	SnapshotData dirty;
	TableScanDesc scan;

	/*
	 * Not SnapshotAny: a dead row's TOASTed document may be gone already
	 * (its TOAST table vacuumed first); a dirty snapshot skips rows whose
	 * delete has committed, which can hold no key.
	 */
	InitDirtySnapshot(dirty);
	scan = table_beginscan(rel, &dirty, 0, NULL);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		doc = slot_getattr(slot, doc_attnum, &isnull);
		int64		key;

		CHECK_FOR_INTERRUPTS();
		if (!isnull && ttl_doc_purge_key(ttl_datum_jsonb_root(doc), &key))
			lower_local(low, key);
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * Whether this backend may try to validate the floor now: a failed try
 * (the leaf busy, or a subscription) costs a lock attempt or a catalog
 * scan, so a backend tries a floor at most every FLOOR_RETRY_MS; the
 * writes probe meanwhile, as without a floor.
 */
static bool
may_try(TtlFloor *floor)
{
	FloorEntry *entry = hash_search(floor_cache, &floor->relid, HASH_FIND, NULL);
	TimestampTz now = GetCurrentStatementStartTimestamp();

	if (entry == NULL)
		return true;
	if (now < entry->next_try)
		return false;
	entry->next_try = TimestampTzPlusMilliseconds(now, FLOOR_RETRY_MS);
	return true;
}

/*
 * Whether a logical replication subscription writes into this database:
 * its apply worker runs with session_replication_role = replica, where
 * ttl's trigger does not fire, so its rows would not lower a floor.
 */
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
 * Make the floor valid if it is not (see the file header); true when it
 * is valid on return.  purge_index: the leaf's btree purge index, or
 * InvalidOid (the heap is read if the leaf is small enough).
 */
bool
ttl_floor_validate(TtlFloor *floor, Relation rel, Oid purge_index, AttrNumber doc_attnum)
{
	Oid			relid = RelationGetRelid(rel);
	uint64		s = pg_atomic_read_u64(&floor->state);
	uint64		low[2] = {PG_UINT64_MAX, PG_UINT64_MAX};
	bool		valid;

	if (s & 1)
		return true;
	if (!OidIsValid(purge_index) &&
		(rel->rd_rel->relkind != RELKIND_RELATION ||
		 RelationGetNumberOfBlocks(rel) > FLOOR_SCAN_PAGES))
		return false;
	if (!may_try(floor))
		return false;
	if (!ConditionalLockRelationOid(relid, ShareLock))
		return false;			/* another transaction writes it: later */
	if (subscribed())
	{
		UnlockRelationOid(relid, ShareLock);
		return false;			/* its apply worker's rows lower nothing */
	}
	if (OidIsValid(purge_index))
	{
		Relation	index = index_open(purge_index, AccessShareLock);

		lower_from_index(low, rel, index, TTL_KEY_INHERITED);
		lower_from_index(low, rel, index, TTL_KEY_OWN);
		index_close(index, AccessShareLock);
	}
	else
		lower_from_heap(low, rel, doc_attnum);

	/*
	 * Valid unless invalidated, or given to another leaf, meanwhile: the
	 * bounds are written only then, under the spinlock that a change of
	 * owner takes, so no validation writes into another leaf's floor.
	 */
	SpinLockAcquire(&floor_shared->mutex);
	valid = pg_atomic_read_u64(&floor->state) == s &&
		floor->dboid == MyDatabaseId && floor->relid == relid;
	if (valid)
	{
		pg_atomic_write_u64(&floor->low[0], low[0]);
		pg_atomic_write_u64(&floor->low[1], low[1]);
		pg_write_barrier();
		valid = pg_atomic_compare_exchange_u64(&floor->state, &s, s | 1);
	}
	SpinLockRelease(&floor_shared->mutex);
	UnlockRelationOid(relid, ShareLock);
	return valid;
}

/*
 * Whether the floor is valid and lies above the due keys of now under
 * this default (the purge index's due ranges, replace.c's due_ranges).
 */
bool
ttl_floor_nothing_due(TtlFloor *floor, Oid relid, int32 default_ttl, int64 now_seconds)
{
	uint64		s = pg_atomic_read_u64(&floor->state);
	bool		above;

	if ((s & 1) == 0)
		return false;
	pg_read_barrier();
	/* the slot may have gone to another leaf (file header) */
	if (floor->dboid != MyDatabaseId || floor->relid != relid)
		return false;
	above = pg_atomic_read_u64(&floor->low[TTL_KEY_OWN]) >
		key_image(ttl_purge_key_encode(TTL_KEY_OWN, now_seconds)) &&
		(default_ttl <= 0 ||
		 pg_atomic_read_u64(&floor->low[TTL_KEY_INHERITED]) >
		 key_image(ttl_purge_key_encode(TTL_KEY_INHERITED, now_seconds - default_ttl)));
	pg_read_barrier();
	return above && pg_atomic_read_u64(&floor->state) == s;
}

/* ---- due writes: the look's guard ---- */

/* Whether this transaction counts itself in flight in floor (NULL: orphan). */
static bool
holds(TtlFloor *floor)
{
	int			i;

	for (i = 0; i < nheld; i++)
	{
		if (held[i] == floor)
			return true;
	}
	return false;
}

/* Room for one more held slot (before the spinlock: no allocation under it). */
static void
reserve_held(void)
{
	if (nheld < held_size)
		return;
	held = held == NULL ?
		MemoryContextAlloc(TopMemoryContext, sizeof(TtlFloor *) * 8) :
		repalloc(held, sizeof(TtlFloor *) * held_size * 2);
	held_size = held_size == 0 ? 8 : held_size * 2;
}

/* Under the spinlock, after reserve_held. */
static void
remember_held(TtlFloor *floor)
{
	held[nheld++] = floor;
}

/*
 * A row of relid that is due, or about to be, is about to be written (see
 * "Due writes" in the file header): count this transaction in flight in
 * the leaf's slot (once per transaction; until its end) and bump the
 * slot's due writes, before the row is inserted.  *floorp is the caller's
 * slot for the leaf; it is replaced when the slot went to another leaf.
 */
void
ttl_floor_announce_due(TtlFloor **floorp, Oid relid)
{
	TtlFloor   *f = *floorp;

	if (floor_shared == NULL)
		return;
	reserve_held();
	for (;;)
	{
		bool		ours;

		SpinLockAcquire(&floor_shared->mutex);
		ours = f != NULL && f->dboid == MyDatabaseId && f->relid == relid;
		if (ours && !holds(f))
		{
			/* under the spinlock: the clock gives away no slot in flight */
			f->in_flight++;
			remember_held(f);
		}
		SpinLockRelease(&floor_shared->mutex);
		if (ours)
			break;
		/* the slot went to another leaf (or none): the leaf's own, or a new one */
		f = ttl_floor_find(relid, true);
		*floorp = f;
		if (f == NULL)
		{
			/* no slot to be had: an orphan, seen by every look */
			SpinLockAcquire(&floor_shared->mutex);
			if (!holds(NULL))
			{
				floor_shared->orphans_in_flight++;
				remember_held(NULL);
			}
			SpinLockRelease(&floor_shared->mutex);
			pg_atomic_fetch_add_u64(&floor_shared->epoch, 1);
			return;
		}
	}
	/* a full barrier: the count is up before the row is inserted */
	pg_atomic_fetch_add_u64(&f->due_writes, 1);
}

/* The end of this backend's transaction (ttl.c's xact callback, through replace.c). */
void
ttl_floor_xact_end(void)
{
	int			i;

	if (nheld == 0)
		return;
	SpinLockAcquire(&floor_shared->mutex);
	for (i = 0; i < nheld; i++)
	{
		if (held[i] == NULL)
			floor_shared->orphans_in_flight--;
		else
			held[i]->in_flight--;
	}
	SpinLockRelease(&floor_shared->mutex);
	nheld = 0;
}

/* A policy change committed (ttl.c's xact callback, through replace.c). */
void
ttl_floor_policy_changed(void)
{
	if (floor_shared != NULL)
		pg_atomic_fetch_add_u64(&floor_shared->epoch, 1);
}

/* The policy epoch now (0 without the preload). */
uint64
ttl_floor_epoch(void)
{
	if (floor_shared == NULL)
		return 0;
	return pg_atomic_read_u64(&floor_shared->epoch);
}

/*
 * Begin a statement's look at the leaf relid (the shortcut, the due
 * filter): true when it may be trusted, with *mark set for
 * ttl_floor_look_holds; false when a due writer other than this
 * transaction is in flight (its row may not be in the indexes yet), or the
 * slot is not the leaf's.  epoch: the policy epoch the caller read before
 * it read the policy the look uses.
 */
bool
ttl_floor_look_begin(TtlFloor *floor, Oid relid, uint64 epoch, TtlLookMark *mark)
{
	uint32		others;
	bool		ours;

	if (floor_shared == NULL || floor == NULL)
		return false;
	mark->epoch = epoch;
	mark->slot = floor - floor_shared->slots;
	mark->due_writes = pg_atomic_read_u64(&floor->due_writes);
	SpinLockAcquire(&floor_shared->mutex);
	mark->generation = pg_atomic_read_u64(&floor->state) >> 1;
	ours = floor->dboid == MyDatabaseId && floor->relid == relid;
	others = floor->in_flight - (holds(floor) ? 1 : 0) +
		floor_shared->orphans_in_flight - (holds(NULL) ? 1 : 0);
	SpinLockRelease(&floor_shared->mutex);
	/* the spinlock is a barrier: the look's reads come after these */
	return ours && others == 0;
}

/* Whether nothing was announced, and no policy changed, since the look. */
bool
ttl_floor_look_holds(TtlFloor *floor, const TtlLookMark *mark)
{
	return pg_atomic_read_u64(&floor->due_writes) == mark->due_writes &&
		pg_atomic_read_u64(&floor_shared->epoch) == mark->epoch;
}
