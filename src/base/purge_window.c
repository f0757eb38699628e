/*
 * purge_window.c
 *		Purge windows: the one parser of the window text, for the setting
 *		ttl.purge_window (its check hook, settings.c) and for
 *		ttl.set_purge_window (container_admin.c), and the two questions the
 *		purge and ttl.stats ask of a parsed window: is this instant inside,
 *		and when does the next window open.
 *
 * A window is written '01:00-05:00': ranges of local times of day (start
 * inclusive, end exclusive, minutes; '24:00' only as an end), several
 * comma-separated, a range whose end is before its start crossing
 * midnight, and an optional time zone name after the last range
 * ('22:00-02:00, 12:00-13:00 Europe/Berlin').  Without a zone the times are
 * in the TimeZone setting of the session that asks (the worker's is the
 * server's or its database's).  Times are wall-clock times of that zone:
 * on the day a daylight-saving change skips an hour, a window inside the
 * skipped hour does not open and one that spans it is an hour shorter; on
 * the day an hour repeats, a window over it is an hour longer.
 *
 * The SQL functions ttl._in_purge_window and ttl._next_purge_window ask
 * the two questions of a window text, for tests.
 *
 * Locking: none; pure functions of their arguments (and the zone database).
 */
#include "postgres.h"

#include <ctype.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "pgtime.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "base/purge_window.h"

#define MINUTES_PER_DAY (24 * 60)

static void
skip_spaces(const char **p)
{
	while (**p != '\0' && isspace((unsigned char) **p))
		(*p)++;
}

/* H:MM or HH:MM, 00:00 to 24:00; minutes from midnight, or -1. */
static int
parse_time(const char **p)
{
	int			hour = 0;
	int			minute = 0;
	int			digits = 0;

	while (isdigit((unsigned char) **p) && digits < 2)
	{
		hour = hour * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	if (digits == 0 || **p != ':')
		return -1;
	(*p)++;
	if (!isdigit((unsigned char) (*p)[0]) || !isdigit((unsigned char) (*p)[1]))
		return -1;
	minute = ((*p)[0] - '0') * 10 + ((*p)[1] - '0');
	(*p) += 2;
	if (isdigit((unsigned char) **p) || minute > 59 || hour > 24 ||
		(hour == 24 && minute != 0))
		return -1;
	return hour * 60 + minute;
}

/*
 * Parse text into *out.  An empty text (or only spaces) is no window
 * (nranges 0).  A bad value gives false and a sentence saying what is wrong;
 * nothing here raises, so a setting's check hook can call it.
 */
bool
ttl_window_parse(const char *text, TtlPurgeWindow *out, char **problem)
{
	const char *p = text;

	memset(out, 0, sizeof(TtlPurgeWindow));
	*problem = NULL;
	if (text == NULL)
		return true;
	if (strlen(text) > TTL_WINDOW_MAX_TEXT)
	{
		*problem = psprintf("A window is at most %d bytes long.", TTL_WINDOW_MAX_TEXT);
		return false;
	}
	skip_spaces(&p);
	if (*p == '\0')
		return true;
	for (;;)
	{
		TtlWindowRange r;

		skip_spaces(&p);
		if (out->nranges == TTL_WINDOW_MAX_RANGES)
		{
			*problem = psprintf("A window has at most %d ranges.", TTL_WINDOW_MAX_RANGES);
			return false;
		}
		r.start = parse_time(&p);
		skip_spaces(&p);
		if (r.start < 0 || *p != '-')
		{
			*problem = pstrdup("Each range is two times of day HH:MM-HH:MM (00:00 to 24:00).");
			return false;
		}
		p++;
		skip_spaces(&p);
		r.end = parse_time(&p);
		if (r.end < 0)
		{
			*problem = pstrdup("Each range is two times of day HH:MM-HH:MM (00:00 to 24:00).");
			return false;
		}
		if (r.start == MINUTES_PER_DAY)
		{
			*problem = pstrdup("24:00 may only end a range.");
			return false;
		}
		if (r.start == r.end)
		{
			*problem = pstrdup("A range must not start where it ends; 00:00-24:00 is the whole day.");
			return false;
		}
		out->ranges[out->nranges++] = r;
		skip_spaces(&p);
		if (*p == ',')
		{
			p++;
			continue;
		}
		break;
	}
	if (*p != '\0')
	{
		/* a time zone name ends the window */
		const char *zone = p;
		size_t		len = strlen(zone);

		while (len > 0 && isspace((unsigned char) zone[len - 1]))
			len--;
		if (len > TTL_WINDOW_MAX_ZONE || memchr(zone, ',', len) != NULL ||
			memchr(zone, ' ', len) != NULL)
		{
			*problem = pstrdup("Only a time zone name may follow the last range.");
			return false;
		}
		memcpy(out->zone, zone, len);
		out->zone[len] = '\0';
		if (pg_tzset(out->zone) == NULL)
		{
			*problem = psprintf("\"%s\" is not a time zone name.", out->zone);
			return false;
		}
	}
	return true;
}

void
ttl_window_parse_or_error(const char *text, const char *what, TtlPurgeWindow *out)
{
	char	   *problem;

	if (!ttl_window_parse(text, out, &problem))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid purge window \"%s\" for %s", text, what),
				 errdetail_internal("%s", problem),
				 errhint("Write ranges of times of day such as '01:00-05:00', comma-separated, optionally followed by a time zone name: '22:00-02:00, 12:00-13:00 Europe/Berlin'.")));
}

static pg_tz *
window_zone(const TtlPurgeWindow *w)
{
	pg_tz	   *tz = NULL;

	if (w->zone[0] != '\0')
		tz = pg_tzset(w->zone);
	return tz != NULL ? tz : session_timezone;
}

/* Whether at falls inside w (always, for no window). */
bool
ttl_window_contains(const TtlPurgeWindow *w, TimestampTz at)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int			minute;
	int			i;

	if (w == NULL || w->nranges == 0)
		return true;
	if (TIMESTAMP_NOT_FINITE(at) ||
		timestamp2tm(at, &tz, &tm, &fsec, NULL, window_zone(w)) != 0)
		return false;
	minute = tm.tm_hour * 60 + tm.tm_min;
	for (i = 0; i < w->nranges; i++)
	{
		const TtlWindowRange *r = &w->ranges[i];

		if (r->start < r->end ? (minute >= r->start && minute < r->end) :
			(minute >= r->start || minute < r->end))
			return true;
	}
	return false;
}

/* at's minute of the day in zone, or -1. */
static int
local_minute(TimestampTz at, pg_tz *zone)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;

	if (timestamp2tm(at, &tz, &tm, &fsec, NULL, zone) != 0)
		return -1;
	return tm.tm_hour * 60 + tm.tm_min;
}

/* The instant of local date julian, minute of day, in zone (a gap's time: see below). */
static bool
local_instant(int julian, int minute, pg_tz *zone, TimestampTz *out)
{
	struct pg_tm tm;
	int			tz;

	memset(&tm, 0, sizeof(tm));
	j2date(julian, &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	tm.tm_hour = minute / 60;
	tm.tm_min = minute % 60;
	tm.tm_sec = 0;
	tz = DetermineTimeZoneOffset(&tm, zone);
	return tm2timestamp(&tm, 0, &tz, out) == 0;
}

/*
 * When w next opens at or after at: at itself when inside, else the
 * earliest later instant inside.  The candidates are each range's start
 * on the local days from at's on.  A start that a daylight-saving change
 * skips (PostgreSQL reads such a time with the offset before the change,
 * so it lands after the change) opens the window at the change: the two
 * hours before such a candidate are searched minute by minute, whether
 * the candidate fell inside the window or not.  False
 * when nothing opens within four days (a window made only of skipped
 * times), or for no window.
 */
bool
ttl_window_next_start(const TtlPurgeWindow *w, TimestampTz at, TimestampTz *start)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int			julian;
	int			day;
	int			i;
	bool		found = false;
	pg_tz	   *zone;

	if (w == NULL || w->nranges == 0 || TIMESTAMP_NOT_FINITE(at))
		return false;
	if (ttl_window_contains(w, at))
	{
		*start = at;
		return true;
	}
	zone = window_zone(w);
	if (timestamp2tm(at, &tz, &tm, &fsec, NULL, zone) != 0)
		return false;
	julian = date2j(tm.tm_year, tm.tm_mon, tm.tm_mday);
	for (day = 0; day < 4; day++)
	{
		for (i = 0; i < w->nranges; i++)
		{
			TimestampTz c;

			if (!local_instant(julian + day, w->ranges[i].start, zone, &c))
				continue;
			if (!ttl_window_contains(w, c))
			{
				/* skipped by a daylight-saving change: find where it opens */
				TimestampTz t = c - 2 * SECS_PER_HOUR * USECS_PER_SEC;
				bool		opens = false;

				for (; t < c; t += SECS_PER_MINUTE * USECS_PER_SEC)
				{
					if (t > at && ttl_window_contains(w, t))
					{
						opens = true;
						break;
					}
				}
				if (!opens)
					continue;
				c = t;
			}
			else
			{
				/*
				 * A start repeated by a change back (PostgreSQL reads it
				 * after the change): its first time is an hour earlier.
				 */
				TimestampTz e = c - SECS_PER_HOUR * USECS_PER_SEC;
				int			back;

				if (e > at && local_minute(e, zone) == w->ranges[i].start)
					c = e;

				/*
				 * A start a change forward skipped, read after the change,
				 * may land inside the window it opens: the window opened
				 * at the change, up to two hours before.
				 */
				for (back = 0; back < 120; back++)
				{
					TimestampTz b = c - SECS_PER_MINUTE * USECS_PER_SEC;

					if (b <= at || !ttl_window_contains(w, b))
						break;
					c = b;
				}
			}
			if (c > at && (!found || c < *start))
			{
				*start = c;
				found = true;
			}
		}
		if (found)
			break;				/* later days open later */
	}
	return found;
}

/*
 * ttl._in_purge_window(purge_window, at) and ttl._next_purge_window(
 * purge_window, at): the two questions as SQL, for tests (the canary lists
 * them); a bad window raises 22023 as ttl.set_purge_window does.
 */
PG_FUNCTION_INFO_V1(ttl_in_purge_window_sql);
Datum
ttl_in_purge_window_sql(PG_FUNCTION_ARGS)
{
	TtlPurgeWindow w;

	ttl_window_parse_or_error(text_to_cstring(PG_GETARG_TEXT_PP(0)), "ttl._in_purge_window", &w);
	PG_RETURN_BOOL(ttl_window_contains(&w, PG_GETARG_TIMESTAMPTZ(1)));
}

PG_FUNCTION_INFO_V1(ttl_next_purge_window_sql);
Datum
ttl_next_purge_window_sql(PG_FUNCTION_ARGS)
{
	TtlPurgeWindow w;
	TimestampTz next;

	ttl_window_parse_or_error(text_to_cstring(PG_GETARG_TEXT_PP(0)), "ttl._next_purge_window", &w);
	if (!ttl_window_next_start(&w, PG_GETARG_TIMESTAMPTZ(1), &next))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}
