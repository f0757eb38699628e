/*
 * mark.c
 *		TTL deletes marked in the change stream.  With ttl.mark_purge_deletes
 *		on (off by default) and wal_level = logical, a logical decoding
 *		consumer can tell a purge's deletes from an application's:
 *
 *		path                        message per batch   replication origin
 *		background worker           yes                 ttl_purge_<n>
 *		CALL ttl.run_purge()        yes                 ttl_purge_<n>
 *		ttl.purge()                 yes                 none (caller's xact)
 *		ttl._purge_placements()     yes                 none (caller's xact)
 *		(Citus: ttl.purge of a distributed container on each node)
 *
 * One rule for every purge delete: whoever deletes an item because it
 * expired announces it with the message, per batch, through
 * ttl_mark_batch() (the only call a deleter makes; see mark.h), on every
 * path and in every purge index mode (purge_batch.c calls it after both
 * the direct and the statement path).  The origin is not the deleter's to
 * choose: it covers exactly the transactions ttl runs itself, and covers
 * them whole, so everything the owner's triggers, cascading foreign keys
 * and rules do inside a worker's or run_purge's batch carries it too (a
 * consumer that drops changes with an origin drops an audit row such a
 * trigger wrote along with the purge); nothing that runs in a caller's
 * transaction ever gets one.
 *
 * The message is transactional, prefix "ttl", content a small JSON object
 * {"container": "<schema>.<table>", "rows": <n>, "by": "worker" |
 * "run_purge" | "purge"}, written in the batch's (sub)transaction after its
 * deletes, so it is decoded with them, and vanishes with them if the batch
 * rolls back.  A batch that deleted nothing writes none.
 *
 * The origin marks whole transactions (their commit record and every
 * record in them), so only transactions ttl owns get one: the worker's (all
 * of them, for the life of the worker) and those ttl.run_purge() commits
 * itself (not the caller's part before its first commit, nor what runs in
 * the transaction after it returns: it commits once more, then lets the
 * origin go).  ttl.purge() runs in the caller's transaction, which an origin
 * would mark as a whole, application changes included: messages only.
 *
 * The origins are a pool, ttl_purge_0, ttl_purge_1, ...: a replication
 * origin can be active in one session at a time (on 15; 16's shared use is
 * for parallel apply), so each purger takes the first one no other session
 * has, creating it when missing.  pg_replication_origin is a shared catalog:
 * the pool serves every database of the cluster, and a purger that creates
 * one commits before using it (a concurrent creator of the same name fails
 * on the unique name and looks again after its own commit).  Each origin
 * ever used keeps one replication state slot (max_replication_slots before
 * 18, max_active_replication_origins from 18) until it is dropped; the pool
 * grows only to the number of purgers that ran at once.
 *
 * Marking fails closed: when it is on and no origin can be had (no slot
 * free, none configured), the worker's visit and ttl.run_purge() end with
 * the error rather than purge unmarked.  A session that set up an origin of
 * its own (pg_replication_origin_session_setup) keeps it: its transactions
 * carry that origin anyway; ttl adds the messages only.
 *
 * The setting is read once per round (worker, ttl.run_purge) and per batch
 * for ttl.purge().  Nothing is marked when wal_level is below logical: no
 * change stream exists to mark.
 *
 * Per container (1.9, ttl.set_mark_purge_deletes): a container's mode
 * 'on' or 'off' overrides the setting for its deletes; 'default' follows
 * it.  The mode is read through the policy door (registry/policy.c), so a
 * shard on a Citus node follows the mode its stamp trigger carries.  The
 * message follows the container's mode on every path.  The origin does
 * too, on the paths that have one: the round calls ttl_mark_container()
 * at the start of each batch's transaction (a round's transaction holds
 * one batch of one container), which puts the held origin on that
 * transaction or takes it off; an origin is taken from the pool the first
 * time a container of the round marks (at the round's start when the
 * setting is on, as before 1.9).  Rounds' other transactions (resume
 * points, the backlog) carry the origin while the setting is on, as
 * before.  So 'off' takes a container's purge out of both marks, even
 * with the setting on; 'on' gives it both marks where the path has them
 * (ttl.purge() and rule 10's replacements run in the caller's
 * transaction: messages only, never an origin, whatever the mode).  A
 * session's own origin stays on its transactions whatever the mode.
 *
 * Locking: none of its own.  Creating an origin takes what
 * replorigin_create() takes (ExclusiveLock on pg_replication_origin, for a
 * moment); taking one takes ReplicationOriginLock, inside a subtransaction
 * so a busy origin is an error caught and passed over.  An origin is let go
 * at the end of ttl.run_purge(), at the abort of its transaction on error,
 * or when the worker exits.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "replication/message.h"
#include "replication/origin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "base/compat.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "purge/mark.h"
#include "registry/policy.h"

/* The origins of the pool are named TTL_ORIGIN_PREFIX <n>, n < this. */
#define TTL_ORIGIN_PREFIX	"ttl_purge_"
#define TTL_ORIGIN_POOL		128

/* The path purging now; TTL_MARK_BY_PURGE outside a round. */
static TtlMarkBy mark_by = TTL_MARK_BY_PURGE;
/* Inside a round: whether a stream exists to mark (read once, at its start). */
static bool round_stream = false;
/* Inside a round: the setting, read once at its start ('default' follows it). */
static bool round_default = false;
/* Inside a round: the session had an origin of its own at its start. */
static bool round_own_origin = false;
/* Inside a round: commits and starts the purger's next transaction. */
static TtlMarkRestart round_restart = NULL;
/* The pool origin this session holds (set up), or InvalidRepOriginId. */
static RepOriginId held_origin = InvalidRepOriginId;
/* Let held_origin go when the current transaction aborts. */
static bool release_at_abort = false;

/* relid's mode (TTL_MARK_*): its container's, or the one a piece carries. */
static char
container_mode(Oid relid)
{
	TtlContainer buf;
	const TtlContainer *c = ttl_policy_ref(relid, &buf);

	return c == NULL ? TTL_MARK_DEFAULT : c->mark_purge_deletes;
}

/* Whether relid's purge deletes are marked now, on the current path. */
static bool
container_marks(Oid relid)
{
	char		mode;

	if (mark_by == TTL_MARK_BY_PURGE ? !XLogLogicalInfoActive() : !round_stream)
		return false;
	mode = container_mode(relid);
	if (mode != TTL_MARK_DEFAULT)
		return mode == TTL_MARK_ON;
	return mark_by == TTL_MARK_BY_PURGE ? ttl_mark_purge_deletes : round_default;
}

static void
release_origin(void)
{
	if (held_origin == InvalidRepOriginId)
		return;
	replorigin_session_origin = InvalidRepOriginId;
	replorigin_session_reset();
	held_origin = InvalidRepOriginId;
}

/* An error ended ttl.run_purge(): the abort lets the origin go (ttl.c installs this). */
void
ttl_mark_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_ABORT || !release_at_abort)
		return;
	release_at_abort = false;
	release_origin();
}

/*
 * Run fn(arg) in a subtransaction; true when it succeeded.  An error with
 * the SQLSTATE expected is swallowed (false); any other is thrown again.
 */
static bool
try_in_subtransaction(void (*fn) (void *arg), void *arg, int expected)
{
	ErrorData  *edata = ttl_subxact_run(fn, arg, CurrentMemoryContext, false);

	if (edata == NULL)
		return true;
	if (edata->sqlerrcode != expected)
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

static void
create_origin(void *arg)
{
	(void) replorigin_create((const char *) arg);
}

static void
setup_origin(void *arg)
{
	ttl_replorigin_session_setup(*(RepOriginId *) arg);
}

/*
 * Take the first origin of the pool no other session holds, creating it
 * when missing (committed through restart before use).
 */
static void
acquire_pool_origin(TtlMarkRestart restart)
{
	int			n;

	if (ttl_origin_capacity() <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ttl.mark_purge_deletes needs a replication origin, but the server has no room for any"),
				 errdetail("%s is 0.", ttl_origin_capacity_name),
				 errhint("Set %s above 0, or turn ttl.mark_purge_deletes off.",
						 ttl_origin_capacity_name)));
	for (n = 0; n < TTL_ORIGIN_POOL; n++)
	{
		char		name[NAMEDATALEN];
		RepOriginId id;

		snprintf(name, sizeof(name), TTL_ORIGIN_PREFIX "%d", n);
		id = replorigin_by_name(name, true);
		if (id == InvalidRepOriginId)
		{
			/*
			 * Created here, or by a concurrent purger (whose commit our
			 * unique check waited for): either way it is there once a new
			 * transaction looks.
			 */
			(void) try_in_subtransaction(create_origin, name, ERRCODE_UNIQUE_VIOLATION);
			restart();
			id = replorigin_by_name(name, true);
			if (id == InvalidRepOriginId)
				continue;		/* dropped meanwhile: the next one */
		}
		if (try_in_subtransaction(setup_origin, &id, ERRCODE_OBJECT_IN_USE))
		{
			held_origin = id;
			return;
		}
	}
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("all %d replication origins of ttl are in use", TTL_ORIGIN_POOL),
			 errdetail("Each purge marked by ttl.mark_purge_deletes holds one of the origins \"%s0\" to \"%s%d\" while it runs.",
					   TTL_ORIGIN_PREFIX, TTL_ORIGIN_PREFIX, TTL_ORIGIN_POOL - 1)));
}

/*
 * A round of the worker or ttl.run_purge() starts, in a transaction of its
 * own (nothing of anyone else's in it): decide whether it marks and, if so,
 * take an origin for this session's transactions from now on.  restart
 * commits and starts a new transaction (the purger's).
 */
void
ttl_mark_begin(TtlMarkBy by, TtlMarkRestart restart)
{
	mark_by = by;
	round_stream = XLogLogicalInfoActive();
	round_default = ttl_mark_purge_deletes;
	round_restart = restart;
	/* the session's own origin, if any, marks it already */
	round_own_origin = held_origin == InvalidRepOriginId &&
		replorigin_session_origin != InvalidRepOriginId;
	if (!round_stream || by == TTL_MARK_BY_PURGE)
		return;
	release_at_abort = true;
	/* with the setting off, an origin only once a container marks */
	if (!round_default || round_own_origin)
		return;
	if (held_origin == InvalidRepOriginId)
		acquire_pool_origin(restart);
	replorigin_session_origin = held_origin;
}

/*
 * A round's batch of relid starts, first in its transaction (which the
 * round started; nothing written in it yet): put the held origin on the
 * transaction or take it off, as relid's mode says, taking an origin from
 * the pool the first time one is wanted.  Nothing outside a worker's or
 * run_purge's round, or under a session's own origin.
 */
void
ttl_mark_container(Oid relid)
{
	bool		marks;

	if (mark_by == TTL_MARK_BY_PURGE || !round_stream || round_own_origin)
		return;
	marks = container_marks(relid);
	if (marks && held_origin == InvalidRepOriginId)
		acquire_pool_origin(round_restart);
	if (held_origin != InvalidRepOriginId)
		replorigin_session_origin = marks ? held_origin : InvalidRepOriginId;
}

/*
 * The round is over: commit its last transaction under the origin
 * (restart), then let the origin go, so what the caller runs afterwards in
 * the new transaction is not marked.
 */
void
ttl_mark_end(TtlMarkRestart restart)
{
	if (held_origin != InvalidRepOriginId)
	{
		restart();
		release_origin();
	}
	release_at_abort = false;
	mark_by = TTL_MARK_BY_PURGE;
	round_stream = false;
	round_restart = NULL;
}

/*
 * The round ends with an error: from now on nothing is marked (the abort
 * record does not matter to decoding), and the abort lets the origin go.
 */
void
ttl_mark_abandon(void)
{
	if (held_origin != InvalidRepOriginId)
		replorigin_session_origin = InvalidRepOriginId;
	mark_by = TTL_MARK_BY_PURGE;
	round_stream = false;
	round_restart = NULL;
}

/*
 * A purge batch deleted rows of relid in the current (sub)transaction:
 * say so in the change stream, if marking applies.  The contract is in
 * mark.h.
 */
void
ttl_mark_batch(Oid relid, int64 rows)
{
	StringInfoData msg;
	char	   *relname;
	const char *by;

	if (rows <= 0)
		return;
	if (!container_marks(relid))
		return;
	relname = get_rel_name(relid);
	if (relname == NULL)
		return;					/* can't happen: the batch holds a lock */
	by = mark_by == TTL_MARK_BY_WORKER ? "worker" :
		mark_by == TTL_MARK_BY_RUN_PURGE ? "run_purge" : "purge";
	initStringInfo(&msg);
	appendStringInfoString(&msg, "{\"container\": ");
	escape_json(&msg, quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												 relname));
	appendStringInfo(&msg, ", \"rows\": " INT64_FORMAT ", \"by\": \"%s\"}", rows, by);
	(void) ttl_log_logical_message("ttl", msg.data, msg.len, true);
	pfree(msg.data);
}

/*
 * Whether relid's purge deletes are marked now, on the current path: the
 * retire step (retire_check.c) keeps a published leaf unless they are.
 */
bool
ttl_mark_applies(Oid relid)
{
	return container_marks(relid);
}

/*
 * The retire step (purge_retire.c) retired leaf (its qualified name) of
 * relid, with its partition bound and rows rows, in the current
 * (sub)transaction, after the DETACH (and DROP): say so once, instead of
 * one delete per row, when marking applies as for a batch.  The contract
 * is in mark.h.
 */
void
ttl_mark_retired(Oid relid, const char *leaf, const char *bound, const char *mode,
				 int64 rows)
{
	StringInfoData msg;
	char	   *relname;
	const char *by;

	if (!container_marks(relid))
		return;
	relname = get_rel_name(relid);
	if (relname == NULL)
		return;					/* can't happen: the step holds a lock */
	by = mark_by == TTL_MARK_BY_WORKER ? "worker" :
		mark_by == TTL_MARK_BY_RUN_PURGE ? "run_purge" : "purge";
	initStringInfo(&msg);
	appendStringInfoString(&msg, "{\"container\": ");
	escape_json(&msg, quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												 relname));
	appendStringInfoString(&msg, ", \"retired\": ");
	escape_json(&msg, leaf);
	appendStringInfoString(&msg, ", \"bound\": ");
	escape_json(&msg, bound);
	appendStringInfo(&msg, ", \"mode\": \"%s\", \"rows\": " INT64_FORMAT ", \"by\": \"%s\"}",
					 mode, rows, by);
	(void) ttl_log_logical_message("ttl", msg.data, msg.len, true);
	pfree(msg.data);
}
