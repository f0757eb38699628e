/*
 * live_filter.c
 *		ttl.live(doc, container): the filter of <table>_live, the qual that
 *		hides expired items (live_view.c puts it in place as a security qual).
 *
 * Locking: none.  The container's default is read once per query
 * execution (pending invalidations processed first) from the registry's cache (registry.c: the entry of the last
 * container asked for is one comparison away, so a prepared read through
 * the view pays no hash probe); the clock is read once per execution too.
 * The filter never raises on document content.  A
 * container with a deadline property (rule 9) hides an item from its
 * deadline on too (deadline.c).
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/document_read.h"
#include "document/expiry.h"
#include "registry/policy.h"
#include "registry/registry.h"

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
	char	   *deadline;		/* rule 9: the deadline property, or NULL */
} LiveFilterState;

PG_FUNCTION_INFO_V1(ttl_live);
Datum
ttl_live(PG_FUNCTION_ARGS)
{
	LiveFilterState *state = (LiveFilterState *) fcinfo->flinfo->fn_extra;
	int64		expiry;

	if (state == NULL)
	{
		const TtlContainer *c = NULL;
		TtlContainer shard_policy;

		state = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(LiveFilterState));
		state->default_is_null = true;
		state->default_ttl = 0;
		state->deadline = NULL;
		if (!PG_ARGISNULL(1))
		{
			/*
			 * The policy as committed when the statement starts (rule 7):
			 * a prepared statement run again in a transaction holding its
			 * locks processes no invalidations on its way here.
			 */
			AcceptInvalidationMessages();
			/* the cache's entry: copied below before any other catalog access */
			c = ttl_policy_ref(PG_GETARG_OID(1), &shard_policy);
			/* not a container: a table, or (42P01) no relation at all */
			if (c == NULL)
				ttl_check_relation_exists(PG_GETARG_OID(1));
		}
		if (c != NULL)
		{
			state->default_is_null = c->default_is_null;
			state->default_ttl = c->default_ttl;
			if (TTL_HAS_DEADLINE(c))
				state->deadline = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt,
													  c->deadline_property);
		}
		state->now_seconds = ttl_current_unix_seconds();
		fcinfo->flinfo->fn_extra = state;
	}

	if (state->default_is_null || PG_ARGISNULL(0))
		PG_RETURN_BOOL(true);
	/* rule 9: the earlier of the lifetime expiry and the deadline */
	if (state->deadline != NULL)
	{
		if (!ttl_datum_expiry_with_deadline(PG_GETARG_DATUM(0), false, state->default_ttl,
											state->deadline, &expiry))
			PG_RETURN_BOOL(true);
		PG_RETURN_BOOL(state->now_seconds < expiry);
	}
	/* an inline document is read where it lies, without a copy */
	if (!ttl_read_expiry_second(ttl_jsonb_root_of(PG_GETARG_DATUM(0)),
								state->default_ttl, &expiry))
		PG_RETURN_BOOL(true);
	PG_RETURN_BOOL(state->now_seconds < expiry);
}
