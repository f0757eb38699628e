/*
 * expiry.c
 *		The expiry rules: when a document expires under a container's
 *		default (ttl_doc_expiry, used by purge and the view's filter), the
 *		index accessors ttl.doc_expiry() and ttl.doc_expired(), and
 *		ttl.calculate() with the row it shares with ttl.state()
 *		(item_functions.c); rule 9 (the deadline) enters that row here,
 *		the rest of it is in deadline.c.
 *
 * Locking: none.  Nothing here may raise on document content except
 * ttl.calculate(), which validates its arguments on purpose.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "common/int.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "document/document.h"
#include "document/document_read.h"
#include "document/expiry.h"

/*
 * The item's expiry second (_ts + effective ttl) when it expires at all.
 * Invalid item ttls count as absent: the filter must never raise.
 */
bool
ttl_doc_expiry_second(Jsonb *doc, bool default_is_null, int32 default_ttl,
					  int64 *expiry)
{
	return ttl_root_expiry_second((const char *) &doc->root, default_is_null,
								  default_ttl, expiry);
}

/* The same for a root container at any address (ttl_datum_jsonb_root). */
bool
ttl_root_expiry_second(const char *root, bool default_is_null, int32 default_ttl,
					   int64 *expiry)
{
	if (default_is_null)
		return false;
	return ttl_read_expiry_second(root, default_ttl, expiry);
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

	ttl_doc_ts_and_ttl(doc, &has_ts, ts, &item, &item_ttl);
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

	ttl_root_ts_and_ttl(ttl_datum_jsonb_root(PG_GETARG_DATUM(0)), &has_ts, &ts, &item, &ttl);
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
	if (!ttl_root_expiry_second(ttl_datum_jsonb_root(PG_GETARG_DATUM(0)), PG_ARGISNULL(1),
								PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1), &expiry))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(expiry <= PG_GETARG_INT64(2));
}

/*
 * The row of ttl.calculate() and ttl.state():
 * (is_enabled, expires, effective_ttl, expires_at, remaining).
 */
Datum
ttl_expiry_row(FunctionCallInfo fcinfo,
			   bool default_is_null, int32 default_ttl,
			   bool item_is_null, int32 item_ttl,
			   bool ts_is_null, int64 ts,
			   bool at_is_null, TimestampTz at,
			   bool deadline_is_null, int64 deadline)
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
		/* rule 9: a deadline makes the item expire (ttl -1 pins only the lifetime) */
		if (effective > 0 || !deadline_is_null)
		{
			values[1] = BoolGetDatum(true);
			if ((effective > 0 && !ts_is_null) || !deadline_is_null)
			{
				int64		secs = 0;
				TimestampTz expires_at;

				if (effective > 0 && !ts_is_null &&
					(pg_add_s64_overflow(ts, effective, &secs) ||
					 secs - TTL_UNIX_EPOCH_OFFSET > (END_TIMESTAMP / USECS_PER_SEC) - 1 ||
					 secs - TTL_UNIX_EPOCH_OFFSET < MIN_TIMESTAMP / USECS_PER_SEC + 1))
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("expiry time out of range: _ts %lld plus ttl %d",
									(long long) ts, effective)));
				/* the earliest of the lifetime expiry and the deadline */
				if (!deadline_is_null && (effective <= 0 || ts_is_null || deadline < secs))
					secs = deadline;
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
	PG_RETURN_DATUM(ttl_expiry_row(fcinfo,
								   PG_ARGISNULL(0), PG_ARGISNULL(0) ? 0 : PG_GETARG_INT32(0),
								   PG_ARGISNULL(1), PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1),
								   PG_ARGISNULL(2), PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2),
								   PG_ARGISNULL(3), PG_ARGISNULL(3) ? 0 : PG_GETARG_TIMESTAMPTZ(3),
								   true, 0));
}

/*
 * ttl.calculate(default_ttl, item_ttl, ts, at, deadline) of 1.5: the same
 * row with rule 9 applied when deadline is given (to the whole second
 * below it, as a deadline property's fraction is truncated).  The 1.0
 * signature keeps binding ttl_calculate above.
 */
PG_FUNCTION_INFO_V1(ttl_calculate_deadline);
Datum
ttl_calculate_deadline(PG_FUNCTION_ARGS)
{
	int64		deadline = 0;

	if (!PG_ARGISNULL(4))
	{
		TimestampTz d = PG_GETARG_TIMESTAMPTZ(4);

		if (TIMESTAMP_NOT_FINITE(d))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("deadline must be finite")));
		/* floor division: a deadline before 2000 rounds down too */
		deadline = d / USECS_PER_SEC - ((d % USECS_PER_SEC) < 0 ? 1 : 0) +
			TTL_UNIX_EPOCH_OFFSET;
	}
	PG_RETURN_DATUM(ttl_expiry_row(fcinfo,
								   PG_ARGISNULL(0), PG_ARGISNULL(0) ? 0 : PG_GETARG_INT32(0),
								   PG_ARGISNULL(1), PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1),
								   PG_ARGISNULL(2), PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2),
								   PG_ARGISNULL(3), PG_ARGISNULL(3) ? 0 : PG_GETARG_TIMESTAMPTZ(3),
								   PG_ARGISNULL(4), deadline));
}
