/*
 * purge_window.h
 *		Purge windows (purge_window.c): the times of day outside which the
 *		background worker and ttl.run_purge() leave a container, written
 *		'01:00-05:00', several ranges comma-separated, an optional time zone
 *		name last.  One parser for the setting ttl.purge_window and for
 *		ttl.set_purge_window.
 */
#ifndef TTL_PURGE_WINDOW_H
#define TTL_PURGE_WINDOW_H

#include "datatype/timestamp.h"

/* The most ranges one window holds, and its longest text (bytes). */
#define TTL_WINDOW_MAX_RANGES 24
#define TTL_WINDOW_MAX_TEXT 255
/* The longest time zone name kept (pg_tz's own bound). */
#define TTL_WINDOW_MAX_ZONE 64

/* Minutes from local midnight: start inclusive, end exclusive (24:00 is 1440). */
typedef struct TtlWindowRange
{
	int			start;
	int			end;			/* < start: the range crosses midnight */
} TtlWindowRange;

typedef struct TtlPurgeWindow
{
	int			nranges;		/* 0: always (no window) */
	TtlWindowRange ranges[TTL_WINDOW_MAX_RANGES];
	char		zone[TTL_WINDOW_MAX_ZONE + 1];	/* "": the session's TimeZone */
} TtlPurgeWindow;

/* false with a sentence in *problem (palloc'd) for a bad value; never raises */
extern bool ttl_window_parse(const char *text, TtlPurgeWindow *out, char **problem);
/* ttl_window_parse or 22023 naming what the value is for */
extern void ttl_window_parse_or_error(const char *text, const char *what,
									  TtlPurgeWindow *out);
extern bool ttl_window_contains(const TtlPurgeWindow *w, TimestampTz at);
extern bool ttl_window_next_start(const TtlPurgeWindow *w, TimestampTz at,
								  TimestampTz *start);

/* the window of the setting ttl.purge_window (settings.c), or NULL: always */
extern const TtlPurgeWindow *ttl_setting_window(void);

#endif							/* TTL_PURGE_WINDOW_H */
