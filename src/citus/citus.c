/*
 * citus.c
 *		Containers on Citus distributed tables: what ttl does to them (the
 *		policy in the stamp trigger, the refusal of reference tables, the
 *		purge pushed to the nodes, the SQL functions of 1.3 and the fmgr
 *		hook around create_distributed_table).  What ttl reads of Citus
 *		(is it loaded, what kind of table, which placements are here, the
 *		policy a trigger carries) is in citus_meta.c.  Citus is found at run
 *		time and never linked; its SQL functions are called schema-qualified
 *		through SPI.
 *
 * The policy travels with the table's DDL.  On a hash-distributed container
 * the stamp trigger carries the policy in its arguments (the default, the
 * state, the deadline property, the archive's qualified name and the
 * marking of purge deletes (1.9) when there are: registry/trigger_args.h has the format; the archive (1.8) is a
 * distributed table colocated with the container, and
 * each node resolves it to the colocated shard of each of its shards,
 * citus_meta.c; ttl_citus_check_archive keeps the rule); the registry
 * functions on the coordinator keep it in step with CREATE OR REPLACE
 * TRIGGER (ttl_citus_sync_policy), which Citus propagates in its own
 * distributed transaction to every shard and to the table's shell on every
 * node with metadata.  A node that holds a shard thus knows the policy of
 * the logical table (its shell) and of each of its shards
 * (ttl_trigger_policy), committed or rolled back with the change, also on
 * placements that moves and splits create (Citus creates the triggers of
 * a new placement after copying its rows).
 *
 * Purge happens where the shards are: each node's purge lists the shards of
 * containers whose placements are active on this node in Citus's metadata
 * (ttl_citus_local_placements), never the distributed table itself, whose
 * DELETE would go through the coordinator.  ttl.purge() of a distributed
 * container pushes ttl._purge_placements() to every node in parallel
 * (run_command_on_all_nodes: each node commits on its own; with a bound on
 * the rows, one node after the other).
 *
 * Citus refuses triggers on distributed tables unless
 * citus.enable_unsafe_triggers is on; ttl's trigger only rewrites the row it
 * fires for, so ttl turns the setting on for its own DDL and, through the
 * fmgr hook, for the duration of create_distributed_table() and its
 * siblings.  After such a call every registered container that became a
 * reference (or other non-hash) Citus table raises 0A000 (the call rolls
 * back), and every hash-distributed one gets its policy into its trigger.
 *
 * Locking: reads of Citus's catalogs take AccessShareLock; the trigger
 * replacement takes what CREATE TRIGGER takes (ShareRowExclusiveLock on the
 * table and its shards), under the container's purge lock that the caller
 * (a policy change) holds.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "citus/citus.h"
#include "citus/citus_meta.h"
#include "registry/legal_hold.h"
#include "registry/trigger_args.h"

/*
 * Run one statement of ttl's own DDL on a Citus table: citus.enable_unsafe_triggers
 * on (ttl's trigger rewrites only the row it fires for) and a pinned search_path,
 * both only for the statement.
 */
static void
citus_ddl(const char *sql)
{
	int			nestlevel = ttl_pin_search_path();

	(void) set_config_option("citus.enable_unsafe_triggers", "on", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	ttl_spi_connect();
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not run \"%s\"", sql);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/*
 * The archive as the stamp trigger names it: its qualified name, or, when
 * it was dropped (the registry keeps a dangling OID), the name the trigger
 * already carries, so that the nodes go on refusing to purge without it.
 */
static char *
archive_arg(Oid relid, Oid archive)
{
	char	   *name = get_rel_name(archive);
	char	   *carried;

	if (name != NULL)
		return quote_qualified_identifier(get_namespace_name(get_rel_namespace(archive)), name);
	carried = ttl_trigger_archive_name(relid);
	if (carried == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("archive of container %s (OID %u) does not exist",
						ttl_relation_display_name(relid), archive),
				 errdetail("The shards of a distributed container archive into the colocated shards of its archive."),
				 errhint("Set a colocated archive with ttl.set_archive(), or stop archiving with ttl.set_archive(container, NULL).")));
	return carried;
}

/*
 * Put the registry's policy of a hash-distributed container into its stamp
 * trigger, which Citus replaces on every shard and every node's shell in
 * the same distributed transaction.  Nothing for any other table.  The
 * arguments (registry/trigger_args.h): the document column, the policy,
 * the deadline property when set, and the archive (1.8) by its
 * qualified name, which each node resolves to the archive's colocated
 * shard (citus_meta.c).
 */
void
ttl_citus_sync_policy(Oid relid)
{
	TtlContainer c;
	TtlTriggerArgs args;

	if (ttl_citus_kind(relid) != TTL_CITUS_HASH || !ttl_read_container(relid, &c))
		return;
	ttl_trigger_args_init(&args, NameStr(c.doc_column));
	args.has_policy = true;
	args.default_is_null = c.default_is_null;
	args.default_ttl = c.default_ttl;
	args.paused = c.paused;
	strlcpy(args.deadline_property, c.deadline_property, sizeof(args.deadline_property));
	if (OidIsValid(c.archive))
		args.archive = archive_arg(relid, c.archive);
	/* 1.9: each node's purge of a shard marks its deletes by this (purge/mark.c) */
	args.mark = c.mark_purge_deletes;
	citus_ddl(ttl_stamp_trigger_sql(relid, &args, true));
}

/* What Citus makes of a table, for messages. */
static const char *
kind_phrase(char kind)
{
	switch (kind)
	{
		case TTL_CITUS_NONE:
			return "a table of one node only";
		case TTL_CITUS_REFERENCE:
			return "a Citus reference table";
		case TTL_CITUS_OTHER:
			return "a Citus table other than a hash-distributed one";
		default:
			return "a hash-distributed table of another colocation group";
	}
}

/*
 * 0A000 when archive does not fit container's distribution (1.8):
 * the archive of a hash-distributed container is a hash-distributed table
 * colocated with it, so that each shard archives into the shard of the
 * archive that covers the same hash range, on the same node, in the
 * transaction of its delete; a table of one node only (the coordinator's
 * purge) archives into a table of one node only.  ttl.set_archive checks
 * it (through the policy door), and so does every Citus table maker
 * (ttl_citus_check_kind), which is refused when it breaks the rule.
 */
void
ttl_citus_check_archive(Oid container, Oid archive)
{
	char		ckind = ttl_citus_kind(container);
	char		akind;

	if (!OidIsValid(archive) || get_rel_name(archive) == NULL)
		return;
	akind = ttl_citus_kind(archive);
	if (ckind == TTL_CITUS_HASH && !ttl_citus_colocated(container, archive))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive %s of distributed container %s is not colocated with it",
						ttl_relation_display_name(archive),
						ttl_relation_display_name(container)),
				 errdetail("The archive is %s.  Each shard of a distributed container archives into the shard of its archive that covers the same hash range, on the same node, in the transaction of its delete.",
						   kind_phrase(akind)),
				 errhint("Distribute the archive with create_distributed_table(archive, column, colocate_with => '%s').",
						 ttl_relation_display_name(container))));
	if (ckind == TTL_CITUS_NONE && akind != TTL_CITUS_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive %s of container %s is a Citus table",
						ttl_relation_display_name(archive),
						ttl_relation_display_name(container)),
				 errdetail("The container is a table of one node only; its purge archives into a table of that node only."),
				 errhint("Distribute the container first, then set a colocated archive, or use a table of this node as the archive.")));
}

/*
 * The archive of a hash-distributed container as its nodes find it: the
 * registry keeps it by OID, which a Citus table maker that rebuilds the
 * archive (undistribute_table, alter_distributed_table) leaves dangling;
 * then it is the table the container's trigger names.  InvalidOid: gone.
 */
static Oid
current_archive(Oid relid, Oid archive)
{
	char	   *name;

	if (get_rel_name(archive) != NULL)
		return archive;
	name = ttl_trigger_archive_name(relid);
	return name == NULL ? InvalidOid : ttl_citus_relation_by_name(name);
}

/* Does a hash-distributed container have an archive that no longer fits? */
static bool
archive_broken(Oid relid)
{
	TtlContainer c;
	Oid			archive;

	if (ttl_citus_kind(relid) != TTL_CITUS_HASH || !ttl_lookup_container(relid, &c) ||
		!OidIsValid(c.archive))
		return false;
	archive = current_archive(relid, c.archive);
	return !OidIsValid(archive) || !ttl_citus_colocated(relid, archive);
}

/*
 * The containers whose archive was already broken (dropped, say) when the
 * outermost Citus table maker of this transaction started: a maker is
 * refused only for what it breaks, never for another table's old damage
 * (the purge of such a container fails until it is repaired).
 */
static List *broken_before = NIL;
static LocalTransactionId broken_before_lxid = InvalidLocalTransactionId;

static void
note_broken_archives(void)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	ListCell   *lc;

	broken_before = NIL;
	broken_before_lxid = ttl_proc_lxid(MyProc);
	if (OidIsValid(get_extension_oid("ttl", true)))
		foreach(lc, ttl_list_containers(false))
			if (archive_broken(lfirst_oid(lc)))
				broken_before = lappend_oid(broken_before, lfirst_oid(lc));
	MemoryContextSwitchTo(old);
}

/*
 * After a Citus table maker: the archive of a hash-distributed container
 * must fit (ttl_citus_check_archive), as the nodes find it
 * (current_archive), unless it was already broken before the maker.  A
 * table of one node only whose archive was distributed is left alone (the
 * step before the container follows with colocate_with).
 */
static void
check_archive_after_maker(Oid relid, Oid archive)
{
	Oid			current;

	if (!OidIsValid(archive) || ttl_citus_kind(relid) != TTL_CITUS_HASH)
		return;
	if (broken_before_lxid == ttl_proc_lxid(MyProc) && list_member_oid(broken_before, relid))
		return;
	current = current_archive(relid, archive);
	if (!OidIsValid(current))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive of distributed container %s would be gone",
						ttl_relation_display_name(relid)),
				 errdetail("Each shard of a distributed container archives into the colocated shard of its archive.")));
	ttl_citus_check_archive(relid, current);
}

/* 0A000 for a container that Citus holds other than hash-distributed. */
void
ttl_citus_check_kind(Oid relid)
{
	char		kind = ttl_citus_kind(relid);
	TtlContainer c;

	if (kind == TTL_CITUS_REFERENCE || kind == TTL_CITUS_OTHER)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container \"%s\" cannot be a Citus %s",
						get_rel_name(relid),
						kind == TTL_CITUS_REFERENCE ? "reference table" :
						"table other than a hash-distributed one"),
				 errdetail("Each placement would stamp and purge on its own and the copies would drift."),
				 errhint("Use a hash-distributed table: create_distributed_table().")));
	if (kind == TTL_CITUS_HASH && ttl_lookup_container(relid, &c))
	{
		ttl_citus_refuse_index_free(relid, c.index_free);
		ttl_citus_refuse_replace_off(relid, c.replace_expired);
		ttl_citus_refuse_purge_window(relid, c.purge_window[0] != '\0');
		/* legal hold: not on a distributed container (legal_hold.c) */
		ttl_legal_hold_refuse_distributed(relid);
		/* retiring partitions (1.9): not on a distributed container */
		if (c.retire != TTL_RETIRE_OFF)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("container %s retires partitions and cannot be a Citus distributed table",
							ttl_relation_display_name(relid)),
					 errdetail("The nodes purge their shards with the policy their stamp triggers carry, which has no place for a retire mode."),
					 errhint("Turn it off first with ttl.set_retire(container, 'off'), or keep the table local.")));
		/* archive: a distributed table colocated with it, shard by shard */
		check_archive_after_maker(relid, c.archive);
	}
}

/*
 * A distributed container keeps a purge index (ttl._set_append_only and
 * create_distributed_table on a container check): its nodes purge their shards
 * with the policy the stamp trigger carries, which knows no index-free mode
 * (1.6), and a shard without one would be read whole by every batch.
 */
void
ttl_citus_refuse_index_free(Oid relid, bool index_free)
{
	if (index_free && ttl_citus_kind(relid) == TTL_CITUS_HASH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container \"%s\" is a Citus distributed table and cannot be without a purge index",
						get_rel_name(relid)),
				 errdetail("The nodes purge their shards through a purge index."),
				 errhint("Use ttl.set_append_only(container, true, 'brin') for an append-only distributed container.")));
}

/*
 * A distributed container keeps rule 10 on (ttl.set_replace_expired and
 * create_distributed_table on a container check): its shards' stamp
 * triggers carry the policy (ttl_citus_sync_policy), which has no place for
 * the setting, so every shard replaces expired items.
 */
void
ttl_citus_refuse_replace_off(Oid relid, bool replace_expired)
{
	if (!replace_expired && ttl_citus_kind(relid) == TTL_CITUS_HASH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container \"%s\" is a Citus distributed table and cannot turn rule 10 off",
						get_rel_name(relid)),
				 errdetail("Its shards replace expired items by the policy their stamp triggers carry, which has no place for the setting."),
				 errhint("Keep ttl.set_replace_expired(container, true) on a distributed container.")));
}

/*
 * A distributed container has no purge window of its own: the nodes purge
 * its shards by the policy their stamp triggers carry, which has no place
 * for one; each node's ttl.purge_window (postgresql.conf, ALTER DATABASE)
 * is the window there.
 */
void
ttl_citus_refuse_purge_window(Oid relid, bool has_window)
{
	if (has_window && ttl_citus_kind(relid) == TTL_CITUS_HASH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container \"%s\" is a Citus distributed table and cannot have a purge window of its own",
						get_rel_name(relid)),
				 errdetail("Its nodes purge its shards by the policy their stamp triggers carry, which has no place for a window."),
				 errhint("Set ttl.purge_window on each node (postgresql.conf or ALTER DATABASE ... SET), or remove the container's window with ttl.set_purge_window(container, NULL).")));
}

/* The ttl._purge_placements() call for container, bounded by max_rows (< 0: none). */
static char *
purge_placements_command(Oid relid, int64 max_rows)
{
	return psprintf("SELECT ttl._purge_placements(%s::pg_catalog.regclass, %s)",
					quote_literal_cstr(quote_qualified_identifier(
																  get_namespace_name(get_rel_namespace(relid)),
																  get_rel_name(relid))),
					max_rows < 0 ? "NULL" : psprintf(INT64_FORMAT, max_rows));
}

/*
 * The rows deleted by the nodes, from SPI's result of (success, result)
 * rows of Citus's run functions; an error if a node failed.
 */
static int64
nodes_total(Oid relid)
{
	int64		total = 0;
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		bool		ok = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1, &isnull));
		char	   *result = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("purge of container \"%s\" failed on a node: %s",
							get_rel_name(relid), result ? result : "(no message)"),
					 errdetail("The nodes that succeeded have committed their purge.")));
		if (result != NULL && result[0] != '\0')
			total += pg_strtoint64(result);
	}
	return total;
}

/*
 * ttl.purge() of a distributed container on the coordinator: every node
 * purges its own placements (ttl._purge_placements), each in its own
 * transaction; the total deleted.  Unbounded, the nodes run in parallel
 * (run_command_on_all_nodes).  With max_rows, one node after the other
 * (master_run_on_worker, which run_command_on_all_nodes calls), each with
 * what is left of max_rows, so that the total stays within it: the active
 * primary nodes of Citus's metadata, which hold every placement.
 */
int64
ttl_citus_purge(Oid relid, int64 max_rows)
{
	Oid			argtypes[3] = {TEXTOID, INT4OID, TEXTOID};
	Datum		values[3];
	int64		total = 0;
	int			nestlevel;

	nestlevel = ttl_pin_search_path();
	ttl_spi_connect();
	if (max_rows < 0)
	{
		values[0] = CStringGetTextDatum(purge_placements_command(relid, -1));
		if (SPI_execute_with_args("SELECT r.success, r.result"
								  "  FROM pg_catalog.run_command_on_all_nodes($1) r",
								  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not run ttl._purge_placements on the nodes");
		total = nodes_total(relid);
	}
	else
	{
		SPITupleTable *nodes;
		uint64		n;
		uint64		i;

		if (SPI_execute("SELECT n.nodename::pg_catalog.text, n.nodeport"
						"  FROM pg_catalog.pg_dist_node n"
						" WHERE n.isactive"
						"   AND n.noderole OPERATOR(pg_catalog.=) 'primary'"
						"   AND n.nodecluster::pg_catalog.text OPERATOR(pg_catalog.=)"
						"       pg_catalog.current_setting('citus.cluster_name')"
						" ORDER BY n.nodename, n.nodeport", true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read the Citus nodes");
		nodes = SPI_tuptable;
		n = SPI_processed;
		for (i = 0; i < n && total < max_rows; i++)
		{
			bool		isnull;

			values[0] = SPI_getbinval(nodes->vals[i], nodes->tupdesc, 1, &isnull);
			values[1] = SPI_getbinval(nodes->vals[i], nodes->tupdesc, 2, &isnull);
			values[2] = CStringGetTextDatum(purge_placements_command(relid, max_rows - total));
			if (SPI_execute_with_args("SELECT r.success, r.result"
									  "  FROM pg_catalog.master_run_on_worker("
									  "         ARRAY[$1], ARRAY[$2], ARRAY[$3], false) r",
									  3, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not run ttl._purge_placements on a node");
			total += nodes_total(relid);
		}
	}
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	return total;
}

/* ttl._local_placements(container): this node's active placements. */
PG_FUNCTION_INFO_V1(ttl_local_placements);
Datum
ttl_local_placements(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	ttl_check_relation_exists(PG_GETARG_OID(0));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	foreach(lc, ttl_citus_local_placements(PG_GETARG_OID(0), false))
	{
		Datum		value = ObjectIdGetDatum(lfirst_oid(lc));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}

/* ttl._citus_kind(table): 'h', 'r', 'o' or NULL (not a Citus table); 42P01 for no table. */
PG_FUNCTION_INFO_V1(ttl_citus_kind_sql);
Datum
ttl_citus_kind_sql(PG_FUNCTION_ARGS)
{
	char		kind;

	ttl_check_relation_exists(PG_GETARG_OID(0));
	kind = ttl_citus_kind(PG_GETARG_OID(0));
	if (kind == TTL_CITUS_NONE)
		PG_RETURN_NULL();
	PG_RETURN_CHAR(kind);
}

/* ttl._citus_sync_policy(container): see ttl_citus_sync_policy. */
PG_FUNCTION_INFO_V1(ttl_citus_sync_policy_sql);
Datum
ttl_citus_sync_policy_sql(PG_FUNCTION_ARGS)
{
	ttl_check_container_owner(PG_GETARG_OID(0));
	ttl_citus_sync_policy(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}

/* ---- create_distributed_table() and its siblings ---- */

/* Is fn_oid one of Citus's functions that make a table a Citus table? */
static bool
is_citus_table_maker(Oid fn_oid)
{
	static const char *const makers[] = {
		"create_distributed_table", "create_distributed_table_concurrently",
		"create_reference_table", "create_citus_local_table",
		"citus_add_local_table_to_metadata", "alter_distributed_table",
		"undistribute_table", NULL
	};
	HeapTuple	tup;
	bool		result = false;
	int			i;

	if (!ttl_citus_loaded())
		return false;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));
	if (!HeapTupleIsValid(tup))
		return false;
	if (((Form_pg_proc) GETSTRUCT(tup))->pronamespace == PG_CATALOG_NAMESPACE)
		for (i = 0; makers[i] != NULL; i++)
			if (strcmp(NameStr(((Form_pg_proc) GETSTRUCT(tup))->proname), makers[i]) == 0)
				result = true;
	ReleaseSysCache(tup);
	return result;
}

/* needs_fmgr_hook's step (ttl.c) */
bool
ttl_citus_needs_fmgr(Oid fn_oid)
{
	return is_citus_table_maker(fn_oid);
}

/*
 * After a Citus table maker: refuse containers it made reference (or other
 * non-hash) tables, give hash-distributed ones their policy in the trigger.
 */
static void
after_table_maker(void)
{
	List	   *relids;
	ListCell   *lc;

	if (!OidIsValid(get_extension_oid("ttl", true)))
		return;
	/* the registry's rows, read in C (registry.c) */
	relids = ttl_list_containers(false);
	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		TtlContainer policy;

		ttl_citus_check_kind(relid);
		/* the caller's own tables only (Citus distributes only those) */
		if (ttl_citus_kind(relid) == TTL_CITUS_HASH && !ttl_trigger_policy(relid, &policy) &&
			ttl_class_ownercheck(relid, GetUserId()))
			ttl_citus_sync_policy(relid);
	}
}

/* GUC nest levels of the table makers running (they do not nest in practice) */
#define MAX_MAKERS 8
static int	maker_nestlevel[MAX_MAKERS];
static int	makers_running = 0;

/* fmgr_hook's step (ttl.c), after the other libraries' */
void
ttl_citus_fmgr(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	if (!is_citus_table_maker(flinfo->fn_oid))
		return;
	switch (event)
	{
		case FHET_START:
			if (makers_running >= MAX_MAKERS)
				elog(ERROR, "too many nested Citus table makers");
			/* archives already broken: not this maker's to refuse */
			if (makers_running == 0)
				note_broken_archives();
			maker_nestlevel[makers_running++] = NewGUCNestLevel();
			(void) set_config_option("citus.enable_unsafe_triggers", "on", PGC_USERSET,
									 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
			break;
		case FHET_END:
			after_table_maker();
			if (makers_running > 0)
				AtEOXact_GUC(true, maker_nestlevel[--makers_running]);
			break;
		case FHET_ABORT:
			/* the abort unwinds the GUC nest level */
			if (makers_running > 0)
				makers_running--;
			break;
	}
}
