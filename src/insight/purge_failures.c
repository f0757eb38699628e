/*
 * purge_failures.c
 *		The record of the rows a purge isolated as failing (table
 *		ttl.purge_failure, shown by the view ttl.purge_failures) and the
 *		quarantine read from it: a batch leaves out each recorded row until
 *		its retry_after (the direct deleter asks ttl_failures_covers for
 *		each row, the statements filter on ttl_failures_filter_sql), and
 *		rule 10 does not replace such a row (the write conflicts, 23505).
 *		purge_split.c finds the failing rows and records them here.
 *
 * A row is named by its place, the leaf and the ctid of the version that
 * failed, and that version's xmin: the place is what a batch sees of a row
 * before it reads it, a changed row is a new version (stamped again by the
 * trigger, no longer expired, or tried afresh), and the xmin tells the row
 * from another one put at the same place later (after a TRUNCATE, or a
 * VACUUM of the deleted row).  The record also keeps the row's key for the
 * reader (the primary key as text, or the place where the container has
 * none), its SQLSTATE and message, when it first failed, how often, and
 * until when it is left out: now + ttl.naptime x 2^attempts, capped at an
 * hour (the container back-off's rule, backoff.c).  A record whose row
 * version is gone (purged on a retry, deleted, updated) is dropped by the
 * next batch of its container (ttl_failures_begin).
 *
 * The record is runtime state, not configuration: it names rows by their
 * physical place, which a dump and restore changes, so it is not dumped
 * (no pg_extension_config_dump) and starts empty after a restore.
 *
 * Locking: the record is written as the extension's owner
 * (ttl_registry_execute) in the batch's transaction, so a batch that rolls
 * back records nothing; it is read in C (a catalog-style scan, no SQL)
 * under the batch's locks, which hold the container's leaves.  A leaf
 * another session locks (DDL) keeps its records until a later batch.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/run_as.h"
#include "base/settings.h"
#include "insight/purge_failures.h"

/* The longest quarantine, in seconds (unless ttl.naptime is longer). */
#define FAILURE_BACKOFF_CAP_S 3600

/* ttl.purge_failure's columns, as the upgrade script makes them */
#define ANUM_RELID 1
#define ANUM_LEAF 2
#define ANUM_TID 3
#define ANUM_ROW_XMIN 4
#define ANUM_RETRY_AFTER 10

typedef struct FailurePlace
{
	Oid			leaf;
	ItemPointerData tid;
} FailurePlace;

/* One record as read (read_records). */
typedef struct FailureRecord
{
	FailurePlace place;
	TransactionId xmin;			/* of the row version that failed */
	bool		active;			/* its retry_after is ahead */
} FailureRecord;

/* The current batch's quarantine (ttl_failures_begin), sorted. */
static struct
{
	Oid			relid;
	int			n;
	FailurePlace *places;
} quarantine;

/* ttl.purge_failure and its primary key, or InvalidOid before 1.9. */
static Oid
failure_table(Oid *index)
{
	Oid			nsp = get_namespace_oid("ttl", true);
	Oid			table;

	*index = InvalidOid;
	if (!OidIsValid(nsp))
		return InvalidOid;
	table = get_relname_relid("purge_failure", nsp);
	if (OidIsValid(table))
		*index = get_relname_relid("purge_failure_pkey", nsp);
	return table;
}

/* Whether the database's extension has the record (1.9 and later). */
bool
ttl_failures_available(void)
{
	Oid			index;

	return OidIsValid(failure_table(&index));
}

static int
place_cmp(const void *a, const void *b)
{
	const FailurePlace *x = a;
	const FailurePlace *y = b;

	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	return ItemPointerCompare((ItemPointer) &x->tid, (ItemPointer) &y->tid);
}

/*
 * The xmin of the row version at tid of leaf, as a fresh snapshot sees it;
 * false when there is none there (the leaf is gone, the version deleted or
 * updated).  *busy: the leaf is locked by another session and was not
 * looked at.
 */
static bool
row_version_xmin(Oid leaf, ItemPointer tid, TransactionId *xmin, bool *busy)
{
	Relation	rel;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	bool		found;
	bool		isnull;

	*busy = false;
	*xmin = InvalidTransactionId;
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(leaf)))
		return false;
	if (!ConditionalLockRelationOid(leaf, AccessShareLock))
	{
		*busy = true;
		return false;
	}
	rel = try_table_open(leaf, NoLock);
	if (rel == NULL)
		return false;
	if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind) ||
		ItemPointerGetBlockNumber(tid) >= RelationGetNumberOfBlocks(rel))
	{
		table_close(rel, NoLock);
		return false;
	}
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	slot = table_slot_create(rel, NULL);
	found = table_tuple_fetch_row_version(rel, tid, snapshot, slot);
	if (found)
		*xmin = DatumGetTransactionId(slot_getsysattr(slot, MinTransactionIdAttributeNumber,
													  &isnull));
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	return found;
}

/*
 * Whether the record's row version is still there: at its place, with the
 * xmin it had when it failed (a TRUNCATE, or a VACUUM after a delete, puts
 * another row at the same place).  A leaf another session locks keeps its
 * records.
 */
static bool
record_still_holds(const FailureRecord *rec)
{
	TransactionId xmin;
	bool		busy;

	if (!OidIsValid(rec->place.leaf))
		return false;
	if (!row_version_xmin(rec->place.leaf, (ItemPointer) &rec->place.tid, &xmin, &busy))
		return busy;
	return TransactionIdEquals(xmin, rec->xmin);
}

static void
forget_record(Oid relid, Oid leaf, ItemPointer tid)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[3] = {OIDOID, OIDOID, TIDOID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(relid);
	values[1] = ObjectIdGetDatum(leaf);
	values[2] = PointerGetDatum(tid);
	ttl_registry_execute("DELETE FROM ttl.purge_failure"
						 " WHERE relid OPERATOR(pg_catalog.=) $1"
						 " AND leaf OPERATOR(pg_catalog.=) $2"
						 " AND tid OPERATOR(pg_catalog.=) $3",
						 3, argtypes, values, NULL, &plan);
}

/* Scan relid's records, as of now_seconds, in the current memory context. */
static int
read_records(Oid relid, int64 now_seconds, FailureRecord **records)
{
	Oid			index;
	Oid			table = failure_table(&index);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	TimestampTz now_ts = time_t_to_timestamptz((pg_time_t) now_seconds);
	Snapshot	snapshot;
	int			n = 0;
	int			max = 8;

	*records = NULL;
	if (!OidIsValid(table))
		return 0;
	rel = table_open(table, AccessShareLock);
	ScanKeyInit(&key, ANUM_RELID, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	/* a fresh snapshot: the records this transaction wrote are read too */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, index, OidIsValid(index), snapshot, 1, &key);
	*records = palloc(sizeof(FailureRecord) * max);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		FailureRecord *rec;
		bool		isnull;
		Datum		d;

		if (n == max)
		{
			max *= 2;
			*records = repalloc(*records, sizeof(FailureRecord) * max);
		}
		rec = &(*records)[n];
		d = heap_getattr(tup, ANUM_LEAF, desc, &isnull);
		rec->place.leaf = isnull ? InvalidOid : DatumGetObjectId(d);
		d = heap_getattr(tup, ANUM_TID, desc, &isnull);
		if (isnull)
			continue;
		ItemPointerCopy((ItemPointer) DatumGetPointer(d), &rec->place.tid);
		d = heap_getattr(tup, ANUM_ROW_XMIN, desc, &isnull);
		rec->xmin = isnull ? InvalidTransactionId : DatumGetTransactionId(d);
		d = heap_getattr(tup, ANUM_RETRY_AFTER, desc, &isnull);
		rec->active = !isnull && DatumGetTimestampTz(d) > now_ts;
		n++;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return n;
}

/*
 * A batch of relid starts at now_seconds: read its quarantine (the rows
 * recorded with a retry_after still ahead) and drop the records whose row
 * version is gone.
 */
void
ttl_failures_begin(Oid relid, int64 now_seconds)
{
	FailureRecord *records;
	int			n;
	int			i;
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	quarantine.relid = relid;
	quarantine.n = 0;
	quarantine.places = NULL;
	n = read_records(relid, now_seconds, &records);
	if (n > 0)
		quarantine.places = palloc(sizeof(FailurePlace) * n);
	MemoryContextSwitchTo(old);
	for (i = 0; i < n; i++)
	{
		if (!record_still_holds(&records[i]))
		{
			forget_record(relid, records[i].place.leaf, &records[i].place.tid);
			continue;
		}
		if (records[i].active)
			quarantine.places[quarantine.n++] = records[i].place;
	}
	if (quarantine.n > 0)
		qsort(quarantine.places, quarantine.n, sizeof(FailurePlace), place_cmp);
}

/*
 * Whether leaf of relid has any row recorded as failing, quarantined or
 * due for a retry alike: such a leaf is never retired whole (its failing
 * row would go without the error that kept it being resolved).  A record
 * whose row is gone does not count.
 */
bool
ttl_failures_in_leaf(Oid relid, Oid leaf)
{
	FailureRecord *records;
	int			n;
	int			i;

	n = read_records(relid, 0, &records);
	for (i = 0; i < n; i++)
		if (records[i].place.leaf == leaf && record_still_holds(&records[i]))
			return true;
	return false;
}

/* Whether the current batch leaves rows out. */
bool
ttl_failures_active(void)
{
	return quarantine.n > 0;
}

/* Whether the current batch leaves the row version at tid of leaf out. */
bool
ttl_failures_covers(Oid leaf, ItemPointer tid)
{
	FailurePlace probe;

	if (quarantine.n == 0)
		return false;
	probe.leaf = leaf;
	probe.tid = *tid;
	return bsearch(&probe, quarantine.places, quarantine.n, sizeof(FailurePlace),
				   place_cmp) != NULL;
}

/*
 * The statements' filter on the target t (followed by AND): not one of
 * the quarantined places, given as $oid_param (oid[]) and $tid_param
 * (tid[]) from ttl_failures_arrays.
 */
const char *
ttl_failures_filter_sql(int oid_param, int tid_param)
{
	return psprintf("NOT EXISTS (SELECT FROM ROWS FROM (pg_catalog.unnest($%d::pg_catalog.oid[]),"
					" pg_catalog.unnest($%d::pg_catalog.tid[])) q(o, c)"
					" WHERE q.o OPERATOR(pg_catalog.=) t.tableoid"
					" AND q.c OPERATOR(pg_catalog.=) t.ctid) AND ",
					oid_param, tid_param);
}

/* The quarantined places as the filter's two arrays. */
void
ttl_failures_arrays(Datum *oids, Datum *tids)
{
	Datum	   *o = palloc(sizeof(Datum) * Max(quarantine.n, 1));
	Datum	   *t = palloc(sizeof(Datum) * Max(quarantine.n, 1));
	int			i;

	for (i = 0; i < quarantine.n; i++)
	{
		o[i] = ObjectIdGetDatum(quarantine.places[i].leaf);
		t[i] = PointerGetDatum(&quarantine.places[i].tid);
	}
	*oids = PointerGetDatum(construct_array(o, quarantine.n, OIDOID, sizeof(Oid), true,
											TYPALIGN_INT));
	*tids = PointerGetDatum(construct_array(t, quarantine.n, TIDOID,
											sizeof(ItemPointerData), false, TYPALIGN_SHORT));
}

/*
 * Every place recorded for relid, whatever its retry_after, as the two
 * arrays of ttl_failures_filter_sql (for the backlog: rows known to fail
 * are not what a purge can delete); read only, nothing forgotten here.
 */
int
ttl_failures_places(Oid relid, Datum *oids, Datum *tids)
{
	FailureRecord *records;
	Datum	   *o;
	Datum	   *t;
	int			n = read_records(relid, 0, &records);
	int			i;

	if (n == 0)
		return 0;
	o = palloc(sizeof(Datum) * n);
	t = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
	{
		o[i] = ObjectIdGetDatum(records[i].place.leaf);
		t[i] = PointerGetDatum(&records[i].place.tid);
	}
	*oids = PointerGetDatum(construct_array(o, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	*tids = PointerGetDatum(construct_array(t, n, TIDOID, sizeof(ItemPointerData), false,
											TYPALIGN_SHORT));
	return n;
}

/*
 * Record that the row version at tid of leaf (a leaf of container relid)
 * failed its purge with sqlerrcode and message: a first failure, or one
 * more attempt; either way it is left out until the back-off has passed.
 * key: the row's key as the reader sees it (purge_split.c).  A database
 * still at 1.8 has no record: nothing is kept (the next batch isolates
 * the row again).
 */
void
ttl_failure_record(Oid relid, Oid leaf, ItemPointer tid, const char *key,
				   int sqlerrcode, const char *message, int64 now_seconds)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[10] = {OIDOID, OIDOID, TIDOID, TEXTOID, TEXTOID, TEXTOID,
	FLOAT8OID, FLOAT8OID, FLOAT8OID, XIDOID};
	Datum		values[10];
	char		nulls[11] = "          ";
	TransactionId xmin;
	bool		busy;

	if (!ttl_failures_available())
		return;
	/* the version that failed: still there, locked by the batch */
	if (!row_version_xmin(leaf, tid, &xmin, &busy))
		return;
	values[9] = TransactionIdGetDatum(xmin);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = ObjectIdGetDatum(leaf);
	values[2] = PointerGetDatum(tid);
	values[3] = key ? CStringGetTextDatum(key) : (Datum) 0;
	nulls[3] = key ? ' ' : 'n';
	values[4] = CStringGetTextDatum(unpack_sql_state(sqlerrcode));
	values[5] = CStringGetTextDatum(message ? message : "");
	values[6] = Float8GetDatum((double) now_seconds);
	/* the first failure leaves the row out for two naptimes, each next twice that */
	values[7] = Float8GetDatum(2.0 * ttl_naptime);
	values[8] = Float8GetDatum((double) Max(FAILURE_BACKOFF_CAP_S, ttl_naptime));
	ttl_registry_execute(
		"INSERT INTO ttl.purge_failure AS f"
		" (relid, leaf, tid, row_xmin, key, sqlstate, message, first_failed_at, attempts,"
		"  retry_after)"
		" VALUES ($1, $2, $3, $10, $4, $5, $6, pg_catalog.to_timestamp($7), 1,"
		"  pg_catalog.to_timestamp($7) OPERATOR(pg_catalog.+)"
		"  pg_catalog.make_interval(secs => LEAST($9, $8)))"
		" ON CONFLICT (relid, leaf, tid) DO UPDATE SET"
		"  key = $4, sqlstate = $5, message = $6,"
		"  attempts = CASE WHEN f.row_xmin OPERATOR(pg_catalog.=) $10"
		"   THEN f.attempts OPERATOR(pg_catalog.+) 1 ELSE 1 END,"
		"  first_failed_at = CASE WHEN f.row_xmin OPERATOR(pg_catalog.=) $10"
		"   THEN f.first_failed_at ELSE pg_catalog.to_timestamp($7) END,"
		"  row_xmin = $10,"
		"  retry_after = pg_catalog.to_timestamp($7) OPERATOR(pg_catalog.+)"
		"   pg_catalog.make_interval(secs => LEAST($9, $8 OPERATOR(pg_catalog.*)"
		"    pg_catalog.power(2::pg_catalog.float8, LEAST(f.attempts, 30)::pg_catalog.float8)))",
		10, argtypes, values, nulls, &plan);
}

/*
 * Rule 10: whether the expired row version at tid of leaf, which a write
 * would replace, is quarantined at now_seconds (its purge failed and its
 * retry_after is ahead): then the write conflicts, as it would without
 * rule 10, rather than run the failing delete again in the writer's
 * statement.
 */
bool
ttl_failure_quarantined(Oid relid, Oid leaf, ItemPointer tid, int64 now_seconds)
{
	FailureRecord *records;
	int			n = read_records(relid, now_seconds, &records);
	int			i;

	for (i = 0; i < n; i++)
		if (records[i].active && records[i].place.leaf == leaf &&
			ItemPointerEquals(&records[i].place.tid, tid))
			return record_still_holds(&records[i]);
	return false;
}
