/*
 * legal_hold.c
 *		Legal holds (1.8): the table ttl.legal_hold read in C, as
 *		committed now; whether a document is held (doc @> match, the same
 *		containment as jsonb's @> operator); the refusal of ttl.disable
 *		while holds stand; and ttl.legal_hold_floor, the key per container
 *		and purge key range below which every due row is held or gone, so
 *		that purge walks start past the held rows instead of paying for
 *		them at every round.  The SQL functions that set and release holds
 *		are in admin/legal_hold_admin.c; purge's use is purge_hold.c.
 *
 * Locking: holds are read with a fresh snapshot (a systable scan of a
 * table that is not a catalog takes a new one each time), as the registry
 * is (registry.c).  A hold is set, replaced or released under the
 * container's purge and replace locks (ttl_lock_container), which a purge
 * batch and a rule 10 writer also hold while they read the holds: either
 * a batch committed before the hold, or it reads the hold and keeps its
 * items.  Floors are written only under the container's purge lock (by a
 * batch, or by a hold change that resets them), so they have one writer
 * at a time; they are not dumped (the table is not a configuration
 * table): after a restore every walk starts at the bottom once.  A floor
 * is trusted for TTL_HOLD_FLOOR_MAX_AGE_SECS from when it was first kept
 * (its "since", which moving it up keeps): rows can come below a floor
 * only by ways the stamp trigger does not see (a deadline property written
 * in the past, rows loaded with the trigger disabled or by a replica, a
 * clock stepped back), and then the purge finds them within a day.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/rel.h"

#include "base/run_as.h"
#include "base/sql_version.h"
#include "registry/legal_hold.h"
#include "registry/registry.h"

/*
 * A match whose root values are all scalars (the usual {"case": "X"}) is
 * checked by looking each key up in the document's root (a binary search,
 * no iterator): the same answer as JsonbDeepContains, which purge would
 * otherwise run per hold on every due row.
 */
typedef struct TtlHoldPairs
{
	int			n;
	JsonbValue *keys;
	JsonbValue *values;
	int		   *keyidx;			/* each key's place in TtlLegalHolds.keys */
} TtlHoldPairs;

static TtlHoldPairs *
scalar_pairs(Jsonb *match)
{
	JsonbIterator *it = JsonbIteratorInit(&match->root);
	JsonbIteratorToken tok;
	JsonbValue	v;
	TtlHoldPairs *p = palloc0(sizeof(TtlHoldPairs));
	int			room = JB_ROOT_COUNT(match) + 1;

	p->keys = palloc(sizeof(JsonbValue) * room);
	p->values = palloc(sizeof(JsonbValue) * room);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			p->keys[p->n] = v;
		else if (tok == WJB_VALUE)
		{
			if (v.type == jbvBinary || p->n >= room)
				return NULL;	/* a nested value: the general check */
			p->values[p->n++] = v;
		}
	}
	return p;
}

static bool
scalar_equal(const JsonbValue *a, const JsonbValue *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type)
	{
		case jbvNull:
			return true;
		case jbvString:
			return a->val.string.len == b->val.string.len &&
				memcmp(a->val.string.val, b->val.string.val, a->val.string.len) == 0;
		case jbvNumeric:
			return DatumGetBool(DirectFunctionCall2(numeric_eq,
													PointerGetDatum(a->val.numeric),
													PointerGetDatum(b->val.numeric)));
		case jbvBool:
			return a->val.boolean == b->val.boolean;
		default:
			return false;
	}
}

/*
 * Number the distinct keys of the holds' scalar pairs, so that a document
 * is searched once per key however many holds name it (ten holds on
 * "case" cost one look-up per row).
 */
static void
index_keys(TtlLegalHolds *holds)
{
	int			room = 8;
	int			h;
	int			i;
	int			k;

	holds->nkeys = 0;
	holds->keys = palloc(sizeof(JsonbValue) * room);
	for (h = 0; h < holds->n; h++)
	{
		TtlHoldPairs *p = holds->pairs[h];

		if (p == NULL)
			continue;
		p->keyidx = palloc(sizeof(int) * Max(p->n, 1));
		for (i = 0; i < p->n; i++)
		{
			for (k = 0; k < holds->nkeys; k++)
				if (holds->keys[k].val.string.len == p->keys[i].val.string.len &&
					memcmp(holds->keys[k].val.string.val, p->keys[i].val.string.val,
						   p->keys[i].val.string.len) == 0)
					break;
			if (k == holds->nkeys)
			{
				if (holds->nkeys == room)
				{
					room *= 2;
					holds->keys = repalloc(holds->keys, sizeof(JsonbValue) * room);
				}
				holds->keys[holds->nkeys++] = p->keys[i];
			}
			p->keyidx[i] = k;
		}
	}
	holds->found = palloc(sizeof(JsonbValue) * Max(holds->nkeys, 1));
	holds->state = palloc0(Max(holds->nkeys, 1));
}

/* doc @> match for a match of scalar root pairs (holds->state reset per doc). */
static bool
contains_pairs(const TtlLegalHolds *holds, Jsonb *doc, const TtlHoldPairs *p)
{
	int			i;

	for (i = 0; i < p->n; i++)
	{
		int			k = p->keyidx[i];

		if (holds->state[k] == 0)
			holds->state[k] =
				getKeyJsonValueFromContainer(&doc->root, holds->keys[k].val.string.val,
											 holds->keys[k].val.string.len,
											 &holds->found[k]) != NULL ? 1 : 2;
		if (holds->state[k] == 2 || !scalar_equal(&holds->found[k], &p->values[i]))
			return false;
	}
	return true;
}

/* The relation "ttl.<name>" of 1.8's legal holds, or InvalidOid before 1.8. */
static Oid
ttl_relation(const char *name)
{
	Oid			nsp;

	if (!ttl_sql_at_least(1, 8))
		return InvalidOid;
	nsp = get_namespace_oid("ttl", true);
	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

/*
 * The holds of relid as committed now, in the caller's memory context, or
 * NULL when it has none (or the extension is older than 1.8).
 */
TtlLegalHolds *
ttl_legal_holds_read(Oid relid)
{
	Oid			table = ttl_relation("legal_hold");
	Oid			index = ttl_relation("legal_hold_pkey");
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	TtlLegalHolds *holds = NULL;
	int			room = 0;

	if (!OidIsValid(table) || !OidIsValid(index))
		return NULL;
	rel = table_open(table, AccessShareLock);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, index, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		name = heap_getattr(tup, 2, RelationGetDescr(rel), &isnull);
		Datum		match;

		if (isnull)
			continue;
		match = heap_getattr(tup, 3, RelationGetDescr(rel), &isnull);
		if (isnull)
			continue;
		if (holds == NULL)
		{
			holds = palloc0(sizeof(TtlLegalHolds));
			room = 4;
			holds->names = palloc(sizeof(char *) * room);
			holds->matches = palloc(sizeof(Jsonb *) * room);
			holds->pairs = palloc(sizeof(TtlHoldPairs *) * room);
		}
		else if (holds->n == room)
		{
			room *= 2;
			holds->names = repalloc(holds->names, sizeof(char *) * room);
			holds->matches = repalloc(holds->matches, sizeof(Jsonb *) * room);
			holds->pairs = repalloc(holds->pairs, sizeof(TtlHoldPairs *) * room);
		}
		holds->names[holds->n] = TextDatumGetCString(name);
		/* a copy: the tuple goes with the scan */
		holds->matches[holds->n] = DatumGetJsonbPCopy(match);
		holds->pairs[holds->n] = JB_ROOT_IS_OBJECT(holds->matches[holds->n]) ?
			scalar_pairs(holds->matches[holds->n]) : NULL;
		holds->n++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (holds != NULL)
		index_keys(holds);
	return holds;
}

/* The name of the first hold whose match doc contains, or NULL. */
const char *
ttl_legal_hold_covering(const TtlLegalHolds *holds, Jsonb *doc)
{
	int			i;

	if (holds == NULL || !JB_ROOT_IS_OBJECT(doc) || JB_ROOT_IS_SCALAR(doc))
		return NULL;			/* a match is an object: contains no non-object */
	if (holds->nkeys > 0)
		memset(holds->state, 0, holds->nkeys);
	for (i = 0; i < holds->n; i++)
	{
		JsonbIterator *it1;
		JsonbIterator *it2;

		if (holds->pairs[i] != NULL)
		{
			if (contains_pairs(holds, doc, holds->pairs[i]))
				return holds->names[i];
			continue;
		}
		it1 = JsonbIteratorInit(&doc->root);
		it2 = JsonbIteratorInit(&holds->matches[i]->root);
		if (JsonbDeepContains(&it1, &it2))
			return holds->names[i];
	}
	return NULL;
}

/* The matches as a jsonb[] (the $n of a statement's "doc @> ANY ($n)"). */
Datum
ttl_legal_holds_array(const TtlLegalHolds *holds)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(holds == NULL ? 0 : holds->n, 1));
	int			n = holds == NULL ? 0 : holds->n;
	int			i;

	for (i = 0; i < n; i++)
		elems[i] = JsonbPGetDatum(holds->matches[i]);
	return PointerGetDatum(construct_array(elems, n, JSONBOID, -1, false, TYPALIGN_INT));
}

/*
 * ttl.disable is refused while legal holds stand: unregistering would end
 * the hold's protection silently (55000, naming them).  The caller holds
 * the container's lock, so no hold is set meanwhile.
 */
void
ttl_legal_hold_refuse_disable(Oid relid)
{
	TtlLegalHolds *holds = ttl_legal_holds_read(relid);
	StringInfoData names;
	int			i;

	if (holds == NULL)
		return;
	initStringInfo(&names);
	for (i = 0; i < holds->n; i++)
		appendStringInfo(&names, "%s%s", i > 0 ? ", " : "",
						 quote_literal_cstr(holds->names[i]));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("container %s has legal holds: %s",
					ttl_relation_display_name(relid), names.data),
			 errdetail("A container cannot be disabled while legal holds stand: its held items would be left without protection."),
			 errhint("Release them with ttl.release_legal_hold() first.")));
}

/*
 * A container with legal holds does not become a Citus distributed table
 * (0A000): its nodes would purge the shards with the policy the stamp
 * trigger carries, which has no place for holds.
 */
void
ttl_legal_hold_refuse_distributed(Oid relid)
{
	if (ttl_legal_holds_read(relid) == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("container %s has legal holds and cannot be a Citus distributed table",
					ttl_relation_display_name(relid)),
			 errdetail("The nodes purge their shards with the policy their stamp triggers carry, which has no place for legal holds."),
			 errhint("Release its legal holds first, or keep the table local.")));
}

/*
 * The floor of relid's key range kind: every due row of that range with a
 * smaller key is held or gone.  TTL_FLOOR_NONE: none kept, TTL_FLOOR_STALE:
 * kept for too long (both: walk from the bottom).
 */
int
ttl_legal_hold_floor_get(Oid relid, int kind, int64 *key)
{
	Oid			table = ttl_relation("legal_hold_floor");
	Oid			index = ttl_relation("legal_hold_floor_pkey");
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData keys[2];
	HeapTuple	tup;
	int			found = TTL_FLOOR_NONE;

	if (!OidIsValid(table) || !OidIsValid(index))
		return TTL_FLOOR_NONE;
	rel = table_open(table, AccessShareLock);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT2EQ, Int16GetDatum((int16) kind));
	scan = systable_beginscan(rel, index, true, NULL, 2, keys);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		bool		since_null;
		Datum		d = heap_getattr(tup, 3, RelationGetDescr(rel), &isnull);
		Datum		since = heap_getattr(tup, 4, RelationGetDescr(rel), &since_null);

		if (!isnull)
		{
			*key = DatumGetInt64(d);
			found = TTL_FLOOR_FRESH;
			if (since_null ||
				TimestampDifferenceExceeds(DatumGetTimestampTz(since), GetCurrentTimestamp(),
										   TTL_HOLD_FLOOR_MAX_AGE_SECS * 1000))
				found = TTL_FLOOR_STALE;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Keep key as the floor of relid's range kind (under the purge lock). */
void
ttl_legal_hold_floor_set(Oid relid, int kind, int64 key)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[3] = {OIDOID, INT2OID, INT8OID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int16GetDatum((int16) kind);
	values[2] = Int64GetDatum(key);
	/* moving a floor up keeps its "since" */
	ttl_registry_execute("INSERT INTO ttl.legal_hold_floor AS f (container, kind, key, since)"
						 " VALUES ($1, $2, $3, pg_catalog.now()) ON CONFLICT (container, kind)"
						 " DO UPDATE SET key = excluded.key",
						 3, argtypes, values, NULL, &plan);
}

/*
 * Forget relid's floors: a hold released or replaced may free rows below
 * them (a new hold only keeps more, but is treated alike: it is rare).
 */
void
ttl_legal_hold_floor_reset(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	if (!OidIsValid(ttl_relation("legal_hold_floor")))
		return;
	values[0] = ObjectIdGetDatum(relid);
	ttl_registry_execute("DELETE FROM ttl.legal_hold_floor"
						 " WHERE container OPERATOR(pg_catalog.=) $1",
						 1, argtypes, values, NULL, NULL);
}
