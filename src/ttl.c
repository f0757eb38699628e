/*
 * ttl.c
 *		Module load: _PG_init() only, which asks each module to set itself up.
 *
 * The modules, from the bottom up (each family with its header; includes
 * and calls only run down this list, never back up):
 *   settings.c         the ttl.* settings and the clock (ttl.now)
 *   document.c         a document's _ts and ttl, validation; accessors.c
 *   expiry.c           the rules, ttl.calculate; item_functions.c (ttl.state)
 *   registry.c         the containers: cache, reads, list, purge/policy lock;
 *                      container_admin.c (the SQL functions that change it)
 *   run_as.c           SQL as another role with a pinned search_path
 *   stamp.c            where a row is stamped (the trigger); replace.c:
 *                      rule 10, an expired item that holds the new row's
 *                      unique key is replaced (purge_replace.c deletes it)
 *   live_view.c        where it is hidden (<table>_live); live_filter.c
 *   mark.c             purge deletes marked in the change stream
 *   purge_*.c          where it is purged: purge_batch.c, purge_statement.c,
 *                      purge_direct.c, purge_walk.c, purge_rows.c,
 *                      purge_replace.c (rule 10's delete of one item),
 *                      purge_leaves.c, purge_round.c, purge_functions.c
 *   launcher.c         where purges are scheduled: worker_slots.c, worker.c,
 *                      db_states.c (the databases in shared memory)
 *   stats.c            ttl.purge_stats and the backlog
 *   guard.c            the restore guard (guard_events.c: its events,
 *                      guard_estimate.c: its estimate)
 *   ddl_*.c            containers follow ALTER TABLE
 *   citus.c            containers on Citus distributed tables; citus_copy.c
 *                      (the SQLSTATE of a shard's error in a COPY)
 *
 * Locking: none.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "citus.h"
#include "citus_copy.h"
#include "guard.h"
#include "live_view.h"
#include "purge.h"
#include "registry.h"
#include "replace.h"
#include "scheduler.h"
#include "settings.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/* before ttl_define_settings(), which reserves the prefix */
	ttl_guard_define_settings();
	ttl_define_settings();

	ttl_register_cache_callbacks();
	ttl_install_live_view_hooks();
	ttl_install_purge_hooks();
	ttl_install_replace_hooks();
	ttl_install_citus_hooks();
	ttl_install_citus_copy_hook();

	if (process_shared_preload_libraries_in_progress)
	{
		ttl_register_launcher();
		ttl_install_guard_hooks();
	}
}
