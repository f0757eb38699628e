/*
 * expiry.c
 *		The expiry rules: reading _ts and ttl out of a document, the view's
 *		filter ttl.live(), the index accessors ttl.doc_ts/doc_ttl/doc_expiry,
 *		and the item functions ttl.calculate() and ttl.state().
 *
 * Locking: none.  Nothing here may raise on document content except the
 * item functions, which validate on purpose: the view's filter and the index
 * accessors must accept any document, including rows written before the
 * trigger existed.
 */
#include "ttl.h"

#include "mb/pg_wchar.h"

#include "access/htup_details.h"
#include "common/int.h"
#include "funcapi.h"
#include "access/relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

/*
 * Numeric storage, as laid out by utils/adt/numeric.c.  Reading it directly
 * turns a JSON integer into an int64 without allocation or error paths,
 * which is what a per-row filter needs.  Only integral values are accepted.
 */
#define NUM_BASE				10000
#define NUM_SIGN_MASK			0xC000
#define NUM_NEG					0x4000
#define NUM_SHORT				0x8000
#define NUM_SPECIAL				0xC000
#define NUM_SHORT_SIGN_MASK		0x2000
#define NUM_SHORT_WEIGHT_SIGN	0x0040
#define NUM_SHORT_WEIGHT_MASK	0x003F

bool
ttl_numeric_to_int64(Numeric num, int64 *result)
{
	const char *data = VARDATA_ANY(num);
	int			len = VARSIZE_ANY_EXHDR(num);
	uint16		header;
	bool		negative;
	int			weight;
	const char *digits;
	int			ndigits;
	uint64		acc = 0;
	int			i;

	if (len < (int) sizeof(uint16))
		return false;
	memcpy(&header, data, sizeof(uint16));
	if ((header & NUM_SIGN_MASK) == NUM_SPECIAL)
		return false;			/* NaN, +-Infinity */
	if (header & NUM_SHORT)
	{
		negative = (header & NUM_SHORT_SIGN_MASK) != 0;
		weight = (header & NUM_SHORT_WEIGHT_SIGN) ?
			(int) (~NUM_SHORT_WEIGHT_MASK | (header & NUM_SHORT_WEIGHT_MASK)) :
			(int) (header & NUM_SHORT_WEIGHT_MASK);
		digits = data + sizeof(uint16);
		ndigits = (len - sizeof(uint16)) / sizeof(int16);
	}
	else
	{
		int16		w;

		if (len < (int) (2 * sizeof(uint16)))
			return false;
		negative = (header & NUM_SIGN_MASK) == NUM_NEG;
		memcpy(&w, data + sizeof(uint16), sizeof(int16));
		weight = w;
		digits = data + 2 * sizeof(uint16);
		ndigits = (len - 2 * sizeof(uint16)) / sizeof(int16);
	}

	for (i = 0; i < ndigits; i++)
	{
		int16		d;

		memcpy(&d, digits + i * sizeof(int16), sizeof(int16));
		if (i > weight)
		{
			if (d != 0)
				return false;	/* a fractional part */
			continue;
		}
		if (acc > (PG_UINT64_MAX - d) / NUM_BASE)
			return false;
		acc = acc * NUM_BASE + d;
	}
	/* digit groups omitted at the end stand for zeros up to the weight */
	for (i = Max(ndigits, 0); i <= weight; i++)
	{
		if (acc > PG_UINT64_MAX / NUM_BASE)
			return false;
		acc *= NUM_BASE;
	}

	if (negative)
	{
		if (acc > (uint64) PG_INT64_MAX + 1)
			return false;
		*result = (acc == (uint64) PG_INT64_MAX + 1) ? PG_INT64_MIN : -(int64) acc;
	}
	else
	{
		if (acc > (uint64) PG_INT64_MAX)
			return false;
		*result = (int64) acc;
	}
	return true;
}

/* Classify a root "ttl" value: -1 and 1..INT32_MAX are the valid ones. */
TtlItemState
ttl_item_ttl_value(const JsonbValue *v, int32 *ttl)
{
	int64		n;

	if (v->type != jbvNumeric ||
		!ttl_numeric_to_int64(v->val.numeric, &n) ||
		!ttl_is_valid_ttl(n))
		return TTL_ITEM_INVALID;
	*ttl = (int32) n;
	return TTL_ITEM_VALID;
}

/* A valid time-to-live, for an item as for a container: -1 or 1..INT32_MAX. */
bool
ttl_is_valid_ttl(int64 ttl)
{
	return ttl == -1 || (ttl >= 1 && ttl <= PG_INT32_MAX);
}

/* A JSON value as text for an error message, cut to a readable length. */
char *
ttl_jsonb_value_text(const JsonbValue *v)
{
	char	   *text;

	if (v->type == jbvBinary)
		text = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	else
	{
		Jsonb	   *j = JsonbValueToJsonb((JsonbValue *) v);

		text = JsonbToCString(NULL, &j->root, VARSIZE(j));
	}
	if (strlen(text) > 64)
	{
		/* cut at a character boundary: never inside a multibyte character */
		int			len = pg_mbcliplen(text, strlen(text), 60);

		strcpy(text + len, "...");
	}
	return text;
}

/*
 * Read the root "_ts" and "ttl" in one short pass.  jsonb sorts keys by
 * length, then bytes, so the 3-byte keys come right after the few 1- and
 * 2-byte ones: walking the key entries from the start (summing lengths, no
 * binary search, no repeated offset look-ups) reaches both at once.  This
 * is the per-row work of the view's filter.
 */
static void
doc_ts_and_ttl(Jsonb *doc, bool *has_ts, int64 *ts, TtlItemState *item, int32 *ttl)
{
	JsonbContainer *c = &doc->root;
	int			count;
	const char *base;
	uint32		off = 0;
	int			i;

	*has_ts = false;
	*item = TTL_ITEM_ABSENT;
	if (!JB_ROOT_IS_OBJECT(doc))
		return;
	count = JsonContainerSize(c);
	base = (const char *) &c->children[2 * count];

	for (i = 0; i < count; i++)
	{
		JEntry		je = c->children[i];
		uint32		end = JBE_HAS_OFF(je) ? JBE_OFFLENFLD(je) : off + JBE_OFFLENFLD(je);
		const char *key = base + off;
		int			vindex;
		int64		n;

		if (end - off > 3)
			break;				/* past the 3-byte keys */
		off = end;
		if (end - (key - base) != 3 ||
			(memcmp(key, "_ts", 3) != 0 && memcmp(key, "ttl", 3) != 0))
			continue;
		vindex = i + count;
		if (!JBE_ISNUMERIC(c->children[vindex]))
		{
			if (key[0] == 't')
				*item = TTL_ITEM_INVALID;
			continue;
		}
		if (!ttl_numeric_to_int64((Numeric) (base + INTALIGN(getJsonbOffset(c, vindex))), &n))
		{
			if (key[0] == 't')
				*item = TTL_ITEM_INVALID;
			continue;
		}
		if (key[0] == '_')
		{
			*has_ts = true;
			*ts = n;
		}
		else if (ttl_is_valid_ttl(n))
		{
			*item = TTL_ITEM_VALID;
			*ttl = (int32) n;
		}
		else
			*item = TTL_ITEM_INVALID;
	}
}

/*
 * The item's expiry second (_ts + effective ttl) when it expires at all.
 * Invalid item ttls count as absent: the filter must never raise.
 */
static bool
doc_expiry_second(Jsonb *doc, bool default_is_null, int32 default_ttl,
				  int64 *expiry)
{
	int64		ts;

	if (default_is_null)
		return false;
	return ttl_doc_expiry(doc, default_ttl, &ts, expiry);
}

/*
 * For purge: the document's _ts (*ts, PG_INT64_MIN when it has none) and,
 * when it expires at all under this (non-NULL) default, its expiry second.
 * Never raises.
 */
bool
ttl_doc_expiry(Jsonb *doc, int32 default_ttl, int64 *ts, int64 *expiry)
{
	bool		has_ts;
	TtlItemState item;
	int32		item_ttl = 0;
	int32		effective;

	doc_ts_and_ttl(doc, &has_ts, ts, &item, &item_ttl);
	if (!has_ts)
	{
		*ts = PG_INT64_MIN;
		return false;
	}
	effective = (item == TTL_ITEM_VALID) ? item_ttl : default_ttl;
	if (effective <= 0)
		return false;
	return !pg_add_s64_overflow(*ts, effective, expiry);
}

/*
 * ttl.live(doc, container): the filter of <table>_live.  The container's
 * default and the clock are read once per query and kept in fn_extra, so a
 * row costs two key look-ups in the document.
 */
typedef struct LiveFilterState
{
	bool		default_is_null;
	int32		default_ttl;
	int64		now_seconds;
} LiveFilterState;

PG_FUNCTION_INFO_V1(ttl_live);
Datum
ttl_live(PG_FUNCTION_ARGS)
{
	LiveFilterState *state = (LiveFilterState *) fcinfo->flinfo->fn_extra;
	int64		expiry;

	if (state == NULL)
	{
		TtlContainer c;

		state = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(LiveFilterState));
		state->default_is_null = true;
		state->default_ttl = 0;
		if (!PG_ARGISNULL(1) && ttl_lookup_container(PG_GETARG_OID(1), &c))
		{
			state->default_is_null = c.default_is_null;
			state->default_ttl = c.default_ttl;
		}
		state->now_seconds = ttl_current_unix_seconds();
		fcinfo->flinfo->fn_extra = state;
	}

	if (state->default_is_null || PG_ARGISNULL(0))
		PG_RETURN_BOOL(true);
	if (!doc_expiry_second(PG_GETARG_JSONB_P(0), false, state->default_ttl, &expiry))
		PG_RETURN_BOOL(true);
	PG_RETURN_BOOL(state->now_seconds < expiry);
}

/* ttl.doc_ts(doc): the integer _ts, or NULL.  Indexable, never raises. */
PG_FUNCTION_INFO_V1(ttl_doc_ts_sql);
Datum
ttl_doc_ts_sql(PG_FUNCTION_ARGS)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		ttl;

	doc_ts_and_ttl(PG_GETARG_JSONB_P(0), &has_ts, &ts, &item, &ttl);
	if (!has_ts)
		PG_RETURN_NULL();
	PG_RETURN_INT64(ts);
}

/* ttl.doc_ttl(doc): the valid root ttl, or NULL.  Indexable, never raises. */
PG_FUNCTION_INFO_V1(ttl_doc_ttl_sql);
Datum
ttl_doc_ttl_sql(PG_FUNCTION_ARGS)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		ttl;

	doc_ts_and_ttl(PG_GETARG_JSONB_P(0), &has_ts, &ts, &item, &ttl);
	if (item != TTL_ITEM_VALID)
		PG_RETURN_NULL();
	PG_RETURN_INT32(ttl);
}

/*
 * ttl.doc_expiry(doc): _ts + ttl for items with their own positive ttl,
 * else NULL.  The key of the purge index for such items.
 */
PG_FUNCTION_INFO_V1(ttl_doc_expiry_sql);
Datum
ttl_doc_expiry_sql(PG_FUNCTION_ARGS)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		ttl;
	int64		expiry;

	doc_ts_and_ttl(PG_GETARG_JSONB_P(0), &has_ts, &ts, &item, &ttl);
	if (!has_ts || item != TTL_ITEM_VALID || ttl <= 0 ||
		pg_add_s64_overflow(ts, ttl, &expiry))
		PG_RETURN_NULL();
	PG_RETURN_INT64(expiry);
}

/*
 * ttl.doc_expired(doc, default_ttl, now_seconds): rule 5 for one document,
 * never raising.  Purge repeats it in its DELETE on the very row version it
 * removes.  It matches no index on purpose, so that DELETE goes by TID.
 */
PG_FUNCTION_INFO_V1(ttl_doc_expired_sql);
Datum
ttl_doc_expired_sql(PG_FUNCTION_ARGS)
{
	int64		expiry;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		PG_RETURN_BOOL(false);
	if (!doc_expiry_second(PG_GETARG_JSONB_P(0), PG_ARGISNULL(1),
						   PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1), &expiry))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(expiry <= PG_GETARG_INT64(2));
}

/*
 * The row of ttl.calculate() and ttl.state():
 * (is_enabled, expires, effective_ttl, expires_at, remaining).
 */
static Datum
expiry_row(FunctionCallInfo fcinfo,
		   bool default_is_null, int32 default_ttl,
		   bool item_is_null, int32 item_ttl,
		   bool ts_is_null, int64 ts,
		   bool at_is_null, TimestampTz at)
{
	TupleDesc	tupdesc;
	Datum		values[5] = {0};
	bool		nulls[5] = {false, false, true, true, true};
	int32		effective;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	values[0] = BoolGetDatum(!default_is_null);
	values[1] = BoolGetDatum(false);
	if (!default_is_null)
	{
		effective = item_is_null ? default_ttl : item_ttl;
		if (effective != -1 && effective <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid effective time-to-live: %d", effective),
					 errdetail("A time-to-live must be -1 (never expire) or between 1 and 2147483647 seconds.")));
		nulls[2] = false;
		values[2] = Int32GetDatum(effective);
		if (effective > 0)
		{
			values[1] = BoolGetDatum(true);
			if (!ts_is_null)
			{
				int64		secs;
				TimestampTz expires_at;

				if (pg_add_s64_overflow(ts, effective, &secs) ||
					secs - TTL_UNIX_EPOCH_OFFSET > (END_TIMESTAMP / USECS_PER_SEC) - 1 ||
					secs - TTL_UNIX_EPOCH_OFFSET < MIN_TIMESTAMP / USECS_PER_SEC + 1)
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("expiry time out of range: _ts %lld plus ttl %d",
									(long long) ts, effective)));
				expires_at = (secs - TTL_UNIX_EPOCH_OFFSET) * USECS_PER_SEC;
				nulls[3] = false;
				values[3] = TimestampTzGetDatum(expires_at);
				if (!at_is_null)
				{
					nulls[4] = false;
					if (expires_at <= at)
					{
						Interval   *zero = palloc0(sizeof(Interval));

						values[4] = IntervalPGetDatum(zero);
					}
					else
						values[4] = DirectFunctionCall2(timestamp_mi,
														TimestampTzGetDatum(expires_at),
														TimestampTzGetDatum(at));
				}
			}
		}
	}
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/* ttl.calculate(default_ttl, item_ttl, ts, at) */
PG_FUNCTION_INFO_V1(ttl_calculate);
Datum
ttl_calculate(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(expiry_row(fcinfo,
							   PG_ARGISNULL(0), PG_ARGISNULL(0) ? 0 : PG_GETARG_INT32(0),
							   PG_ARGISNULL(1), PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1),
							   PG_ARGISNULL(2), PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2),
							   PG_ARGISNULL(3), PG_ARGISNULL(3) ? 0 : PG_GETARG_TIMESTAMPTZ(3)));
}

/*
 * ttl.state(container, doc): the row for a document of a container at
 * ttl.now().  Unlike the filter it validates: a bad document raises the same
 * error the trigger would.
 */
PG_FUNCTION_INFO_V1(ttl_state);
Datum
ttl_state(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TtlContainer c;
	Jsonb	   *doc;
	int64		ts = 0;
	bool		has_ts;
	int32		item_ttl = 0;
	TtlItemState item;
	Relation	rel;

	ttl_get_container(relid, &c);

	rel = relation_open(relid, AccessShareLock);
	ttl_validate_document(rel, NameStr(c.doc_column),
						  PG_GETARG_DATUM(1), PG_ARGISNULL(1));
	relation_close(rel, AccessShareLock);

	doc = PG_GETARG_JSONB_P(1);
	doc_ts_and_ttl(doc, &has_ts, &ts, &item, &item_ttl);
	PG_RETURN_DATUM(expiry_row(fcinfo,
							   c.default_is_null, c.default_ttl,
							   item != TTL_ITEM_VALID, item_ttl,
							   !has_ts, ts,
							   false, ttl_current_time()));
}
