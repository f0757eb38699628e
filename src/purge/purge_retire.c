/*
 * purge_retire.c
 *		The retire step: a leaf of a partitioned container whose every item
 *		has expired (retire_check.c) leaves whole, detached from its parent
 *		and dropped (ttl.set_retire 'drop') or left detached and recorded
 *		('detach'), instead of being deleted row by row.  Each retirement is
 *		recorded in ttl.retired and counted in ttl.stats (leaves_retired,
 *		rows_retired).  The round (purge_round.c: the worker and CALL
 *		ttl.run_purge()) runs the step once per container per round, in a
 *		transaction of its own before the container's row batches; ttl.purge()
 *		runs it before its rows, in the caller's transaction.
 *
 * Locking, step by step (docs/retire.md says the same for operators):
 *	1. the container's purge lock, without waiting (another purger or a
 *	   policy change: not this round), and the policy read under it;
 *	2. AccessShareLock on the container and on each leaf, without waiting
 *	   (a leaf held by DDL is passed over), for the look: the obstacles and
 *	   the exactness probes with a fresh snapshot, and the rows of a due leaf
 *	   (its reltuples, or a count(*) when it was never counted);
 *	3. for each leaf the look found due: AccessExclusiveLock on its parent
 *	   (in a round, first asked for without queueing, for up to
 *	   RETIRE_LOCK_TRY_MS: a queued request stalls every query of the
 *	   container), then on the leaf, then on the parent's default
 *	   partition if it has one, which is what ALTER TABLE ... DETACH
 *	   PARTITION takes, each waiting at most RETIRE_LOCK_TIMEOUT_MS
 *	   (lock_timeout) in the queue: a busy
 *	   container ends the step, and its rows wait for the next round.  Once
 *	   held, no writer of the leaf is left: the obstacles and the probes are
 *	   checked again with a fresh snapshot, which sees every write committed
 *	   before the lock, so an item written or refreshed meanwhile keeps the
 *	   leaf;
 *	4. DETACH PARTITION, then DROP TABLE (drop mode), as the container's
 *	   owner, in a subtransaction per leaf: a leaf that fails (a view on it,
 *	   say) stays attached and is purged by rows, with a WARNING and the
 *	   container's last_error.  A container with an archive locks and
 *	   checks the archive as a row purge does (ttl_archive_check_fit, in
 *	   step 3, under the same lock_timeout) and, whatever the mode, puts
 *	   the detached leaf into it (retire_archive.c): ATTACH PARTITION when
 *	   that reads no row (ShareUpdateExclusiveLock on the archive, already
 *	   held), else its rows copied by the purge's INSERT and the leaf
 *	   dropped; ttl.retired says which ('attach', 'copy').
 *	5. in the round (the worker, CALL ttl.run_purge()), drop mode drops
 *	   the detached leaf in the container's next turn, a transaction of its
 *	   own (ttl_retire_drop_pending): a DROP's commit truncates and unlinks
 *	   the leaf's files, and the step's transaction holds the container.
 * The locks of step 3 are held until the transaction ends: the round
 * commits right after the step (its row batches come in the next turns),
 * ttl.purge() holds them until its caller commits, and drops in it.  The
 * step never uses DETACH ... CONCURRENTLY, which cannot run in a function
 * or a transaction block, nor on a parent with a default partition
 * (docs/retire.md says why not, in full).
 *
 * Runs as the container's owner (the caller became it), inside a
 * security-restricted operation with a pinned search_path; the records
 * are written as the extension's owner (ttl_registry_execute).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "base/sql_version.h"
#include "base/subxact.h"
#include "insight/stats.h"
#include "purge/archive.h"
#include "purge/mark.h"
#include "purge/progress.h"
#include "purge/purge_internal.h"
#include "registry/leaf_owner.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * How long the round's step waits for the AccessExclusiveLock of a leaf's
 * parent: every query of the container queues behind a waiting request,
 * so the wait is short; a busy container is retired in a later round.
 * ttl.purge() waits as long as its caller's lock_timeout says, this long
 * when that is 0 (no limit): the caller chose to hold the lock.
 */
#define RETIRE_LOCK_TIMEOUT_MS 100

/*
 * The round's step first asks for the parent's AccessExclusiveLock without
 * joining its queue, every RETIRE_LOCK_RETRY_MS for up to
 * RETIRE_LOCK_TRY_MS: a request that waits in the queue makes every new
 * query of the container wait behind it, one that never waits stalls
 * nobody.  Under writers that never leave the container idle for a moment
 * it then waits in the queue, at most RETIRE_LOCK_TIMEOUT_MS.
 */
#define RETIRE_LOCK_TRY_MS 200
#define RETIRE_LOCK_RETRY_MS 2

static uint32 retire_lock_wait_event = 0;

/*
 * The leaves whose rows the row batches leave to retirement (see
 * ttl_retire_defers), as (container, leaf) pairs, kept in
 * TopMemoryContext from one look at a container to the next.
 */
static List *deferred_containers = NIL;
static List *deferred_leaves = NIL;

static void
forget_deferred(Oid container)
{
	List	   *containers = NIL;
	List	   *leaves = NIL;
	ListCell   *c;
	ListCell   *l;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	forboth(c, deferred_containers, l, deferred_leaves)
	{
		if (lfirst_oid(c) == container)
			continue;
		containers = lappend_oid(containers, lfirst_oid(c));
		leaves = lappend_oid(leaves, lfirst_oid(l));
	}
	list_free(deferred_containers);
	list_free(deferred_leaves);
	deferred_containers = containers;
	deferred_leaves = leaves;
	MemoryContextSwitchTo(old);
}

/* Append (container, leaf) to two parallel lists kept in TopMemoryContext. */
static void
remember_pair(List **containers, List **leaves, Oid container, Oid leaf)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	*containers = lappend_oid(*containers, container);
	*leaves = lappend_oid(*leaves, leaf);
	MemoryContextSwitchTo(old);
}

static void
note_deferred(Oid container, Oid leaf)
{
	remember_pair(&deferred_containers, &deferred_leaves, container, leaf);
}

/*
 * Whether the row batches leave leaf of container alone: the last look
 * (this round's retire step, or this ttl.purge()'s) found that it will
 * retire within one default lifetime (every item expired by then, nothing
 * keeps it), so its expired rows, hidden meanwhile, leave with it instead
 * of one by one.  A leaf that never comes fully due (an item that never
 * expires, one with a longer own ttl, a hold, any obstacle) is purged by
 * rows as before.
 */
bool
ttl_retire_defers(Oid container, Oid leaf)
{
	ListCell   *c;
	ListCell   *l;

	forboth(c, deferred_containers, l, deferred_leaves)
		if (lfirst_oid(c) == container && lfirst_oid(l) == leaf)
			return true;
	return false;
}

/* Nothing of container is deferred (its step did not run). */
void
ttl_retire_forget(Oid container)
{
	forget_deferred(container);
}

/*
 * Leaves the round's step detached in drop mode, whose DROP waits for the
 * container's next turn (ttl_retire_drop_pending), as (container, leaf)
 * pairs in TopMemoryContext.  Why not in the step's transaction: a DROP's
 * commit truncates and unlinks the leaf's files, the filesystem's work
 * (hundreds of milliseconds for a large leaf on slow storage), and the
 * step's transaction holds the container's AccessExclusiveLock to its
 * end; the DETACH commits first, the DROP then locks only the detached
 * leaf, which no query of the container reaches any more.
 */
static List *drop_containers = NIL;
static List *drop_leaves = NIL;

static void run_ddl(const char *sql);
static char *qualified_name(Oid relid);

static void
note_pending_drop(Oid container, Oid leaf)
{
	remember_pair(&drop_containers, &drop_leaves, container, leaf);
}

/* One deferred DROP, as a subtransaction's step. */
typedef struct DropOne
{
	Oid			container;
	Oid			leaf;
	bool		dropped;		/* out */
} DropOne;

static void
drop_one(void *arg)
{
	DropOne    *d = (DropOne *) arg;
	char	   *name;
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	static SPIPlanPtr plan = NULL;
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("lock_timeout", psprintf("%d", RETIRE_LOCK_TIMEOUT_MS),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	LockRelationOid(d->leaf, AccessExclusiveLock);
	AtEOXact_GUC(true, nestlevel);
	/* still the table the step detached (not dropped or attached meanwhile) */
	if (get_rel_relkind(d->leaf) != RELKIND_RELATION || get_rel_relispartition(d->leaf))
		return;
	name = qualified_name(d->leaf);
	run_ddl(psprintf("DROP TABLE %s", name));
	values[0] = ObjectIdGetDatum(d->container);
	values[1] = CStringGetTextDatum(name);
	ttl_registry_execute("UPDATE ttl.retired_leaf SET mode = 'drop'"
						 " WHERE container OPERATOR(pg_catalog.=) $1::pg_catalog.regclass"
						 " AND leaf OPERATOR(pg_catalog.=) $2 AND mode OPERATOR(pg_catalog.=) 'detach'",
						 2, argtypes, values, NULL, &plan);
	d->dropped = true;
}

/*
 * The deferred DROPs of cur's container (see note_pending_drop), run by the
 * round's next turn of the container as its owner, each in a
 * subtransaction under the step's short lock_timeout; ttl.retired then
 * says 'drop'.  A leaf that cannot be dropped (a view of yours on it, a
 * session reading it) stays, recorded as detached, with a WARNING and the
 * container's last_error.  How many it tried: when any, this is the turn's
 * whole transaction.
 */
int
ttl_retire_drop_pending(PurgeCursor *cur)
{
	Oid			container = cur->relid;
	List	   *containers = NIL;
	List	   *leaves = NIL;
	ListCell   *c;
	ListCell   *l;
	int			tried = 0;
	MemoryContext old;
	TtlPhase	phase;

	if (drop_leaves == NIL)
		return 0;
	forboth(c, drop_containers, l, drop_leaves)
	{
		DropOne		d = {container, lfirst_oid(l), false};
		ErrorData  *edata;

		if (lfirst_oid(c) != container)
		{
			containers = lappend_oid(containers, lfirst_oid(c));
			leaves = lappend_oid(leaves, lfirst_oid(l));
			continue;
		}
		if (tried++ == 0)
			ttl_cursor_show_progress(cur);
		phase = ttl_progress_current_phase();
		ttl_progress_phase(TTL_PHASE_RETIRING);
		edata = ttl_subxact_run(drop_one, &d, CurrentMemoryContext, false);
		ttl_progress_phase(phase);
		if (edata != NULL)
		{
			char	   *note = psprintf("could not drop retired partition %s of container %s: %s",
										get_rel_name(d.leaf) ? ttl_relation_display_name(d.leaf) : "?",
										ttl_relation_display_name(container), edata->message);

			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("%s", note),
					 errdetail("The partition was detached; it stays, recorded in ttl.retired as detached.")));
			ttl_record_purge(container, 0, note);
		}
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	list_free(drop_containers);
	list_free(drop_leaves);
	drop_containers = list_copy(containers);
	drop_leaves = list_copy(leaves);
	MemoryContextSwitchTo(old);
	return tried;
}

/*
 * ttl_retire_leaf_due, its time told at DEBUG1 (the exactness test reads
 * the leaf's purge index, not the leaf: bench row 17d reads this line).
 */
static const char *
timed_leaf_due(Oid leaf, const TtlContainer *policy, int64 now_seconds, const char *when)
{
	instr_time	start;
	instr_time	took;
	const char *why;

	INSTR_TIME_SET_CURRENT(start);
	why = ttl_retire_leaf_due(leaf, policy, now_seconds);
	INSTR_TIME_SET_CURRENT(took);
	INSTR_TIME_SUBTRACT(took, start);
	ereport(DEBUG1,
			(errmsg_internal("ttl retire exactness test of partition %s (%s): %.3f ms, %s",
							 get_rel_name(leaf), when, INSTR_TIME_GET_MILLISEC(took),
							 why ? why : "every item has expired")));
	return why;
}

/* A leaf the look found due. */
typedef struct Candidate
{
	Oid			leaf;
	int64		items;			/* its rows, counted by the look */
} Candidate;

/* One leaf's retirement, as a subtransaction's step. */
typedef struct RetireOne
{
	Oid			container;
	const TtlContainer *policy;
	int64		now_seconds;
	Candidate  *candidate;
	int			lock_timeout_ms;
	bool		in_round;		/* the worker's or CALL ttl.run_purge()'s: the lock
								 * asked for without queueing first, and in drop
								 * mode DETACH only, DROP in a later transaction */
	bool		retired;		/* out */
	bool		to_drop;		/* out: detached, its DROP deferred */
	const char *kept;			/* out: why the check under the lock kept it */
} RetireOne;

/*
 * The rows of leaf for ttl.retired and the stats: as its statistics last
 * counted them (pg_class.reltuples, which VACUUM, ANALYZE and autovacuum
 * keep), or, for a leaf never counted, by a count(*) as the owner.  Not a
 * count(*) always: on a leaf of a million rows it costs a good part of
 * what deleting them would, and retiring is meant to cost nothing per row.
 */
static int64
count_rows(Oid leaf)
{
	int64		n = 0;
	bool		isnull;
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(leaf));

	if (HeapTupleIsValid(tuple))
	{
		float4		reltuples = ((Form_pg_class) GETSTRUCT(tuple))->reltuples;

		ReleaseSysCache(tuple);
		if (reltuples >= 0)
			return (int64) reltuples;
	}
	ttl_spi_connect();
	if (SPI_execute(psprintf("SELECT pg_catalog.count(*) FROM %s", ttl_only_name(leaf)),
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count the rows of a leaf");
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return n;
}

static void
run_ddl(const char *sql)
{
	ttl_spi_connect();
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not run \"%s\"", sql);
	SPI_finish();
}

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* The partition bound of leaf as pg_get_expr() prints it ("FOR VALUES ..."). */
static char *
partition_bound_text(Oid leaf)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(leaf));
	Datum		bound;
	bool		isnull;
	char	   *printed;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", leaf);
	bound = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound, &isnull);
	printed = isnull ? pstrdup("") :
		TextDatumGetCString(DirectFunctionCall2(pg_get_expr, bound, ObjectIdGetDatum(leaf)));
	ReleaseSysCache(tuple);
	return printed;
}

static void
record_retired(Oid container, const char *leaf, const char *mode, int64 items)
{
	Oid			argtypes[4] = {OIDOID, TEXTOID, TEXTOID, INT8OID};
	Datum		values[4];
	static SPIPlanPtr plan = NULL;

	values[0] = ObjectIdGetDatum(container);
	values[1] = CStringGetTextDatum(leaf);
	values[2] = CStringGetTextDatum(mode);
	values[3] = Int64GetDatum(items);
	ttl_registry_execute("INSERT INTO ttl.retired_leaf (container, leaf, mode, retired_at, items)"
						 " VALUES ($1::pg_catalog.regclass, $2, $3, ttl.now(), $4)",
						 4, argtypes, values, NULL, &plan);
}

/* An ATTACH of a retired leaf to the archive, as a subtransaction's step. */
typedef struct AttachOne
{
	Oid			archive;
	Oid			leaf;
	const char *bound;
} AttachOne;

static void
attach_one(void *arg)
{
	AttachOne  *a = (AttachOne *) arg;

	ttl_retire_attach(a->archive, a->leaf, a->bound);
}

/*
 * Step 4 with an archive, the leaf detached: attached to the archive when
 * that reads no row (retire_archive.c), else its rows copied there and the
 * leaf dropped; the mode recorded ("attach", "copy").  An ATTACH that
 * fails all the same is rolled back and the rows copied (a busy archive
 * ends the step instead).
 */
static const char *
archive_leaf(RetireOne *one, const char *bound)
{
	Oid			archive = one->policy->archive;
	Oid			leaf = one->candidate->leaf;
	const char *misfit = ttl_retire_attach_misfit(archive, leaf);

	run_ddl(psprintf("ALTER TABLE %s DETACH PARTITION %s",
					 qualified_name(get_partition_parent(leaf, false)), qualified_name(leaf)));
	if (misfit == NULL)
	{
		AttachOne	a = {archive, leaf, bound};
		ErrorData  *edata = ttl_subxact_run(attach_one, &a, CurrentMemoryContext, false);

		if (edata == NULL)
			return "attach";
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		misfit = edata->message;
	}
	ereport(DEBUG1,
			(errmsg("ttl copies partition %s of container %s into archive %s: %s",
					ttl_relation_display_name(leaf),
					ttl_relation_display_name(one->container),
					ttl_relation_display_name(archive), misfit)));
	one->candidate->items = ttl_retire_copy(one->container, archive, leaf);
	run_ddl(psprintf("DROP TABLE %s", qualified_name(leaf)));
	return "copy";
}

/*
 * The parent's AccessExclusiveLock for the round's step (see
 * RETIRE_LOCK_TRY_MS): without queueing while that succeeds, then queued
 * under the step's lock_timeout (already set).
 */
static void
lock_parent_for_round(Oid parent)
{
	instr_time	start;
	instr_time	now;

	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		if (ConditionalLockRelationOid(parent, AccessExclusiveLock))
			return;
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (INSTR_TIME_GET_MILLISEC(now) >= RETIRE_LOCK_TRY_MS)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 RETIRE_LOCK_RETRY_MS,
						 ttl_wait_event(&retire_lock_wait_event, "TtlRetireLock"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	LockRelationOid(parent, AccessExclusiveLock);
}

/*
 * Steps 3 and 4 for one leaf: its parent's and its own lock (and the
 * archive's, checked: ttl_archive_check_fit), waiting at most the step's
 * lock_timeout, the check again, DETACH, DROP (or into the archive).
 */
static void
retire_one(void *arg)
{
	RetireOne  *one = (RetireOne *) arg;
	Oid			leaf = one->candidate->leaf;
	Oid			parent;
	char	   *leaf_name;
	char	   *bound;
	const char *mode;
	Oid			default_part;
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("lock_timeout", psprintf("%d", one->lock_timeout_ms),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	parent = get_partition_parent(leaf, false);
	if (one->in_round)
		lock_parent_for_round(parent);	/* the worker, CALL ttl.run_purge() */
	else
		LockRelationOid(parent, AccessExclusiveLock);	/* ttl.purge(): the caller's wait */
	LockRelationOid(leaf, AccessExclusiveLock);
	/*
	 * DETACH locks the parent's default partition too (its constraint
	 * changes); a reader of that partition alone holds no lock on the
	 * parent, so without this the DETACH would wait for it with no bound,
	 * the container's AccessExclusiveLock held
	 */
	default_part = get_default_partition_oid(parent);
	if (OidIsValid(default_part))
		LockRelationOid(default_part, AccessExclusiveLock);
	/* the archive's tree, locked and checked as a row purge's (42501, 0A000, ...) */
	if (OidIsValid(one->policy->archive))
		(void) ttl_archive_check_fit(one->container, one->policy->archive, false);
	AtEOXact_GUC(true, nestlevel);
	/* still a partition of parent, with everything checked again */
	if (!get_rel_relispartition(leaf) || get_partition_parent(leaf, true) != parent)
	{
		one->kept = "it was detached meanwhile";
		return;
	}
	one->kept = ttl_retire_obstacle(one->container, leaf, one->policy);
	if (one->kept == NULL)
		one->kept = timed_leaf_due(leaf, one->policy, one->now_seconds, "check under the lock");
	if (one->kept != NULL)
		return;
	leaf_name = qualified_name(leaf);
	bound = partition_bound_text(leaf);
	if (OidIsValid(one->policy->archive))
		mode = archive_leaf(one, bound);
	else
	{
		run_ddl(psprintf("ALTER TABLE %s DETACH PARTITION %s", qualified_name(parent), leaf_name));
		mode = ttl_retire_mode_name(one->policy->retire);
		if (one->policy->retire == TTL_RETIRE_DROP && one->in_round)
		{
			/* recorded as detached until ttl_retire_drop_pending drops it */
			one->to_drop = true;
			record_retired(one->container, leaf_name, "detach", one->candidate->items);
		}
		else if (one->policy->retire == TTL_RETIRE_DROP)
			run_ddl(psprintf("DROP TABLE %s", leaf_name));
	}
	if (!one->to_drop)
		record_retired(one->container, leaf_name, mode, one->candidate->items);
	/* one message in the change stream for the whole leaf (mark.c) */
	ttl_mark_retired(one->container, leaf_name, bound, mode, one->candidate->items);
	one->retired = true;
}

/*
 * Steps 1 and 2: the leaves of the container that look due now, in OID
 * order; *busy when the container is held by another purger or DDL.
 */
static List *
look_for_candidates(PurgeCursor *cur, TtlContainer *policy, bool *busy)
{
	List	   *candidates = NIL;
	ListCell   *lc;

	if (!ttl_try_lock_container(cur->relid) ||
		!ConditionalLockRelationOid(cur->relid, AccessShareLock))
	{
		*busy = true;
		return NIL;
	}
	if (!ttl_policy_read(cur->relid, policy) || policy->retire == TTL_RETIRE_OFF ||
		(cur->honour_pause && policy->paused) || policy->default_is_null ||
		get_rel_relkind(cur->relid) != RELKIND_PARTITIONED_TABLE)
		return NIL;
	foreach(lc, find_all_inheritors(cur->relid, NoLock, NULL))
	{
		Oid			leaf = lfirst_oid(lc);
		Candidate  *c;

		if (leaf == cur->relid || get_rel_relkind(leaf) == RELKIND_PARTITIONED_TABLE)
			continue;
		if (!ConditionalLockRelationOid(leaf, AccessShareLock))
			continue;
		/* a partition detached since the list was read is not ours */
		if (!get_rel_relispartition(leaf))
			continue;
		if (ttl_retire_obstacle(cur->relid, leaf, policy) != NULL)
			continue;
		if (timed_leaf_due(leaf, policy, cur->now_seconds, "look") != NULL)
		{
			/* due within one default lifetime: its rows wait for it */
			if (policy->default_ttl > 0 &&
				ttl_retire_leaf_due(leaf, policy,
									cur->now_seconds + policy->default_ttl) == NULL)
				note_deferred(cur->relid, leaf);
			continue;
		}
		c = palloc(sizeof(Candidate));
		c->leaf = leaf;
		c->items = count_rows(leaf);
		candidates = lappend(candidates, c);
	}
	return candidates;
}

/*
 * The retire step of cur's container, as its owner: how many leaves it
 * retired; *busy when a lock was not to be had (the container is left for
 * the next round).  A failure other than a busy lock is a WARNING and the
 * container's last_error, and the leaf is purged by rows.  Nothing for a
 * container whose mode is off, or before 1.9's SQL.
 */
int
ttl_retire_step(PurgeCursor *cur, bool *busy)
{
	const TtlContainer *cached;
	TtlContainer policy;
	List	   *candidates;
	ListCell   *lc;
	int			retired = 0;
	int64		rows = 0;
	TtlPhase	phase = TTL_PHASE_WALKING;

	*busy = false;
	forget_deferred(cur->relid);
	if (!ttl_sql_at_least(1, 9))
		return 0;
	/* the cache first: most containers never retire */
	cached = ttl_container_ref(cur->relid);
	if (cached == NULL || cached->retire == TTL_RETIRE_OFF)
		return 0;
	candidates = look_for_candidates(cur, &policy, busy);
	if (candidates != NIL)
	{
		ttl_cursor_show_progress(cur);
		phase = ttl_progress_current_phase();
	}
	foreach(lc, candidates)
	{
		RetireOne	one = {cur->relid, &policy, cur->now_seconds, lfirst(lc),
			RETIRE_LOCK_TIMEOUT_MS, cur->honour_pause, false, false, NULL};
		ErrorData  *edata;

		/* ttl.purge(), which does not honour a pause: the caller's wait */
		if (!cur->honour_pause && LockTimeout > 0)
			one.lock_timeout_ms = LockTimeout;
		ttl_progress_phase(TTL_PHASE_RETIRING);
		edata = ttl_subxact_run(retire_one, &one, CurrentMemoryContext, false);
		ttl_progress_phase(phase);
		if (edata != NULL && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			/* busy: every query of the container would queue behind us */
			*busy = true;
			break;
		}
		if (edata != NULL)
		{
			char	   *note = psprintf("could not retire partition %s of container %s: %s",
										get_rel_name(one.candidate->leaf) ?
										ttl_relation_display_name(one.candidate->leaf) : "?",
										ttl_relation_display_name(cur->relid),
										edata->message);

			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("%s", note),
					 errdetail("The partition stays attached; its rows are purged one by one.")));
			ttl_record_purge(cur->relid, 0, note);
			continue;
		}
		if (one.retired)
		{
			retired++;
			rows += one.candidate->items;
			if (one.to_drop)
				note_pending_drop(cur->relid, one.candidate->leaf);
		}
		else
			ereport(DEBUG1,
					(errmsg("ttl kept partition %s of container %s: %s",
							ttl_relation_display_name(one.candidate->leaf),
							ttl_relation_display_name(cur->relid), one.kept)));
	}
	if (retired > 0)
	{
		ttl_record_retire(cur->relid, retired, rows);
		/* the keyset walk may have stopped in a leaf that is gone */
		cur->leaf = InvalidOid;
		cur->lower_key = PG_INT64_MIN;
	}
	cur->retired_leaves += retired;
	return retired;
}
