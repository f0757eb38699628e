/*
 * ttl.c
 *		Module load: _PG_init() only, which asks each module to set itself up.
 *		The modules, from the bottom up: settings.c (the settings and the
 *		clock), document.c (a document's _ts and ttl), expiry.c (the rules),
 *		registry.c (the containers), run_as.c (SQL as another role),
 *		stamp.c (where a row is stamped), live_view.c and live_filter.c
 *		(where it is hidden), purge_*.c (where it is purged), launcher.c and
 *		worker.c (where purges are scheduled), stats.c, ddl_events.c.
 *
 * Locking: none.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "live_view.h"
#include "purge.h"
#include "registry.h"
#include "scheduler.h"
#include "settings.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	ttl_define_settings();

	ttl_register_cache_callbacks();
	ttl_install_live_view_hooks();
	ttl_install_purge_hooks();

	if (process_shared_preload_libraries_in_progress)
		ttl_register_launcher();
}