/*
 * deadline.c
 *		Rule 9, the deadline property: a container may name a root property
 *		of its documents that holds an absolute deadline, either an RFC 3339
 *		timestamp string with an offset (fractional seconds truncated) or a
 *		JSON integer of Unix seconds (0 to the last second a timestamptz
 *		holds, ttl_deadline_max_seconds); JSON null or an absent
 *		property means no deadline.  This file owns reading it (without
 *		raising, for the view's filter, purge and the deadline index), its
 *		validation with the trigger's errors (22007 for a bad timestamp
 *		text, 22023 for any other bad value), the index key function
 *		ttl.doc_deadline_key(doc, property), the re-check of purge's DELETE
 *		ttl.doc_expired(doc, default, now, property), and the expiry that is
 *		the earliest of the lifetime expiry (expiry.c) and the deadline.
 *
 * While the container default is NULL nothing expires (the deadline is
 * still validated on write); ttl -1 pins only the lifetime.
 *
 * Locking: none.  Nothing here raises on document content except the
 * validation, which does so on purpose.
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/rel.h"

#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/expiry.h"
#include "registry/registry.h"

/* The last Unix second a timestamptz can hold. */
#define MAX_DEADLINE_SECONDS \
	((END_TIMESTAMP / USECS_PER_SEC) - 1 + TTL_UNIX_EPOCH_OFFSET)

static bool
read_digits(const char *s, int len, int *pos, int n, int *value)
{
	int			v = 0;
	int			i;

	if (*pos + n > len)
		return false;
	for (i = 0; i < n; i++)
	{
		char		c = s[*pos + i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*pos += n;
	*value = v;
	return true;
}

static bool
expect_char(const char *s, int len, int *pos, const char *allowed)
{
	if (*pos >= len || strchr(allowed, s[*pos]) == NULL || s[*pos] == '\0')
		return false;
	(*pos)++;
	return true;
}

/* Days from 1970-01-01 to a date of the proleptic Gregorian calendar. */
static int64
days_from_civil(int y, int m, int d)
{
	int64		era;
	int64		yoe;
	int64		doy;
	int64		doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/*
 * An RFC 3339 date-time (section 5.6): YYYY-MM-DD, "T" (or "t" or a space),
 * HH:MM:SS, optional fraction (truncated), then "Z" or an offset +HH:MM /
 * -HH:MM, nothing else.  A leap second (:60) counts as the next second, as
 * PostgreSQL reads it.  Never raises.
 */
bool
ttl_parse_rfc3339(const char *s, int len, int64 *seconds)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			pos = 0;
	int			year,
				month,
				day,
				hour,
				minute,
				second,
				oh = 0,
				om = 0;
	int			sign = 0;
	int			dim;

	if (!read_digits(s, len, &pos, 4, &year) || !expect_char(s, len, &pos, "-") ||
		!read_digits(s, len, &pos, 2, &month) || !expect_char(s, len, &pos, "-") ||
		!read_digits(s, len, &pos, 2, &day) || !expect_char(s, len, &pos, "Tt ") ||
		!read_digits(s, len, &pos, 2, &hour) || !expect_char(s, len, &pos, ":") ||
		!read_digits(s, len, &pos, 2, &minute) || !expect_char(s, len, &pos, ":") ||
		!read_digits(s, len, &pos, 2, &second))
		return false;
	if (pos < len && s[pos] == '.')
	{
		int			start = ++pos;

		while (pos < len && s[pos] >= '0' && s[pos] <= '9')
			pos++;
		if (pos == start)
			return false;		/* a dot needs digits */
	}
	if (pos < len && (s[pos] == 'Z' || s[pos] == 'z'))
		pos++;
	else if (pos < len && (s[pos] == '+' || s[pos] == '-'))
	{
		sign = s[pos] == '+' ? 1 : -1;
		pos++;
		if (!read_digits(s, len, &pos, 2, &oh) || !expect_char(s, len, &pos, ":") ||
			!read_digits(s, len, &pos, 2, &om) || oh > 23 || om > 59)
			return false;
	}
	else
		return false;			/* no offset: a local time names no instant */
	if (pos != len)
		return false;
	if (month < 1 || month > 12 || day < 1)
		return false;
	dim = mdays[month - 1] + (month == 2 && is_leap(year) ? 1 : 0);
	if (day > dim || hour > 23 || minute > 59 || second > 60)
		return false;
	*seconds = days_from_civil(year, month, day) * SECS_PER_DAY +
		hour * 3600 + minute * 60 + second - sign * (oh * 3600 + om * 60);
	return true;
}

/* The largest deadline in Unix seconds, for the messages that give the range. */
int64
ttl_deadline_max_seconds(void)
{
	return (int64) MAX_DEADLINE_SECONDS;
}

/* A numeric (its bytes, at any address) as a deadline: an integer 0..max. */
TtlDeadlineState
ttl_deadline_of_numeric(const char *num, int64 *seconds)
{
	int64		n;

	if (!ttl_numeric_bytes_to_int64(num, &n) || n < 0 || n > MAX_DEADLINE_SECONDS)
		return TTL_DEADLINE_BAD;
	*seconds = n;
	return TTL_DEADLINE_VALID;
}

/* What a JSON value is as a deadline. */
TtlDeadlineState
ttl_deadline_of_value(const JsonbValue *v, int64 *seconds)
{
	switch (v->type)
	{
		case jbvNull:
			return TTL_DEADLINE_NONE;
		case jbvString:
			return ttl_parse_rfc3339(v->val.string.val, v->val.string.len, seconds) ?
				TTL_DEADLINE_VALID : TTL_DEADLINE_BAD_TEXT;
		case jbvNumeric:
			return ttl_deadline_of_numeric((const char *) v->val.numeric, seconds);
		default:
			return TTL_DEADLINE_BAD;
	}
}

/* The deadline of a document (not an object, or no property: none). */
TtlDeadlineState
ttl_doc_deadline(Jsonb *doc, const char *property, int64 *seconds)
{
	JsonbValue	buf;
	JsonbValue *v;

	if (!JB_ROOT_IS_OBJECT(doc))
		return TTL_DEADLINE_NONE;
	v = getKeyJsonValueFromContainer(&doc->root, property, strlen(property), &buf);
	if (v == NULL)
		return TTL_DEADLINE_NONE;
	return ttl_deadline_of_value(v, seconds);
}

TtlDeadlineState
ttl_datum_deadline(Datum doc, const char *property, int64 *seconds)
{
	return ttl_doc_deadline(DatumGetJsonbP(doc), property, seconds);
}

void
ttl_report_bad_deadline(Relation rel, const char *property, TtlDeadlineState state,
						const char *value)
{
	ereport(ERROR,
			(errcode(state == TTL_DEADLINE_BAD_TEXT ?
					 ERRCODE_INVALID_DATETIME_FORMAT : ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid deadline \"%s\" in container \"%s\": %s",
					property, ttl_container_name(rel), value),
			 errdetail("The deadline property must be an RFC 3339 timestamp with an offset (such as \"2030-01-31T12:00:00Z\"), a JSON integer of Unix seconds between 0 and " INT64_FORMAT " (the last second a timestamptz holds), or null.",
					   (int64) MAX_DEADLINE_SECONDS),
			 errhint("Set \"%s\" to null or remove it for no deadline.", property)));
}

/* Raise the trigger's error when the document's deadline is malformed. */
void
ttl_validate_deadline(Relation rel, const char *property, Jsonb *doc)
{
	JsonbValue	buf;
	JsonbValue *v;
	int64		seconds;
	TtlDeadlineState state;

	if (property == NULL || !JB_ROOT_IS_OBJECT(doc))
		return;
	v = getKeyJsonValueFromContainer(&doc->root, property, strlen(property), &buf);
	if (v == NULL)
		return;
	state = ttl_deadline_of_value(v, &seconds);
	if (state == TTL_DEADLINE_BAD || state == TTL_DEADLINE_BAD_TEXT)
		ttl_report_bad_deadline(rel, property, state, ttl_jsonb_value_text(v));
}

/* 22023 for a name that cannot be a deadline property. */
void
ttl_check_deadline_property_name(const char *container, const char *property)
{
	if (property[0] == '\0' || strlen(property) > TTL_DEADLINE_PROPERTY_MAX ||
		strcmp(property, "_ts") == 0 || strcmp(property, "ttl") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid deadline property for container \"%s\": \"%s\"",
						container, property),
				 errdetail("The deadline property is a root property of 1 to %d bytes other than \"_ts\" and \"ttl\".",
						   TTL_DEADLINE_PROPERTY_MAX)));
}

/*
 * Rule 9 on top of rule 5: the second at which the item expires, the
 * earliest of its lifetime expiry and its deadline; false when it never
 * does (default NULL, or neither applies).  A malformed deadline, which
 * only a row written around the trigger can hold, counts as absent.
 * Never raises.
 */
bool
ttl_datum_expiry_with_deadline(Datum doc, bool default_is_null, int32 default_ttl,
							   const char *property, int64 *expiry)
{
	int64		lifetime;
	int64		deadline;
	bool		has_lifetime;
	bool		has_deadline;

	if (default_is_null)
		return false;
	has_lifetime = ttl_root_expiry_second(ttl_datum_jsonb_root(doc), false,
										  default_ttl, &lifetime);
	has_deadline = property != NULL &&
		ttl_datum_deadline(doc, property, &deadline) == TTL_DEADLINE_VALID;
	if (has_lifetime && has_deadline)
		*expiry = Min(lifetime, deadline);
	else if (has_lifetime)
		*expiry = lifetime;
	else if (has_deadline)
		*expiry = deadline;
	return has_lifetime || has_deadline;
}

/*
 * ttl.doc_deadline_key(doc, property): the key of a container's deadline
 * index: the deadline in Unix seconds, TTL_DEADLINE_MALFORMED_KEY for a
 * malformed one (so that ttl.set_deadline_property finds them through the
 * index), NULL for none.  Never raises.
 */
PG_FUNCTION_INFO_V1(ttl_doc_deadline_key_sql);
Datum
ttl_doc_deadline_key_sql(PG_FUNCTION_ARGS)
{
	char	   *property = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int64		seconds = 0;

	switch (ttl_datum_deadline(PG_GETARG_DATUM(0), property, &seconds))
	{
		case TTL_DEADLINE_VALID:
			PG_RETURN_INT64(seconds);
		case TTL_DEADLINE_NONE:
			PG_RETURN_NULL();
		default:
			PG_RETURN_INT64(TTL_DEADLINE_MALFORMED_KEY);
	}
}

/*
 * ttl.doc_expired(doc, default_ttl, now_seconds, property): rules 5 and 9
 * for one document, never raising; purge's DELETE re-checks it on the row
 * version it removes, for containers with a deadline property.
 */
PG_FUNCTION_INFO_V1(ttl_doc_expired_deadline_sql);
Datum
ttl_doc_expired_deadline_sql(PG_FUNCTION_ARGS)
{
	int64		expiry;
	char	   *property;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		PG_RETURN_BOOL(false);
	property = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (!ttl_datum_expiry_with_deadline(PG_GETARG_DATUM(0), PG_ARGISNULL(1),
										PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1),
										property, &expiry))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(expiry <= PG_GETARG_INT64(2));
}
