/*
 * container_window.c
 *		The purge window that applies to a container or a piece of a
 *		distributed one: the container's own (the registry's purge_window,
 *		ttl.set_purge_window), else the setting ttl.purge_window; and the
 *		clock windows are asked at.  The worker and ttl.run_purge() ask it
 *		before each batch (purge_round.c), ttl.stats for next_window_at
 *		(insight/behind.c).  A piece has no window of its own (a
 *		distributed container refuses one, through the policy door): the
 *		node's setting applies.
 *
 * Locking: none; the registry is read through the policy door's cache.
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "base/purge_window.h"
#include "base/settings.h"
#include "registry/container_window.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * The window of relid into *out, false for none (always).  A stored window
 * that no longer parses (it was checked when written; a time zone removed
 * from the system since) is none, rather than a purge that never runs.
 */
bool
ttl_container_window(Oid relid, TtlPurgeWindow *out)
{
	TtlContainer c;
	char	   *problem;

	if (ttl_policy_lookup(relid, &c) && c.purge_window[0] != '\0')
		return ttl_window_parse(c.purge_window, out, &problem) && out->nranges > 0;
	if (ttl_setting_window() == NULL)
		return false;
	*out = *ttl_setting_window();
	return true;
}

/*
 * The instant windows are asked at: ttl.now_override for tests, else the
 * real clock (not the statement's: a CALL ttl.run_purge() is one long
 * statement).
 */
TimestampTz
ttl_window_clock(void)
{
	return ttl_clock_overridden() ? ttl_current_time() : GetCurrentTimestamp();
}

/* Whether relid may be purged now by the worker or ttl.run_purge(). */
bool
ttl_container_window_open(Oid relid)
{
	TtlPurgeWindow w;

	return !ttl_container_window(relid, &w) ||
		ttl_window_contains(&w, ttl_window_clock());
}
