/*
 * citus.c
 *		Containers on Citus distributed tables.  Citus is found at run time
 *		and never linked: its library is loaded when one of its settings is
 *		defined (not a placeholder), its catalogs (pg_dist_partition,
 *		pg_dist_shard, pg_dist_placement, pg_dist_local_group) are read by
 *		name, its SQL functions called schema-qualified through SPI.  Without
 *		Citus every function here answers "not a Citus table" at once.
 *
 * The policy travels with the table's DDL.  On a hash-distributed container
 * the stamp trigger carries the policy as two more arguments,
 * ttl.stamp(doc_column, default_ttl, 'active' | 'paused'); the registry
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
 * (run_command_on_all_nodes: each node commits on its own).
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
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "citus.h"
#include "compat.h"
#include "purge_internal.h"
#include "run_as.h"

#define STAMP_TRIGGER "zzz_ttl_stamp"

static needs_fmgr_hook_type prev_needs_fmgr_hook = NULL;
static fmgr_hook_type prev_fmgr_hook = NULL;

/* Is Citus's library loaded in this backend (a real setting, no placeholder)? */
bool
ttl_citus_loaded(void)
{
	static bool loaded = false;
	int			flags;

	if (loaded)
		return true;
	flags = GetConfigOptionFlags("citus.enable_unsafe_triggers", true);
	loaded = flags != 0 && (flags & GUC_CUSTOM_PLACEHOLDER) == 0;
	return loaded;
}

static AttrNumber
attnum_by_name(TupleDesc desc, const char *name)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i + 1;
	elog(ERROR, "column \"%s\" of a Citus catalog not found", name);
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/*
 * What Citus makes of relid: TTL_CITUS_NONE, _HASH, _REFERENCE or _OTHER,
 * from pg_dist_partition (an index scan; no SQL runs).
 */
char
ttl_citus_kind(Oid relid)
{
	Oid			catalog;
	Oid			index;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char		kind = TTL_CITUS_NONE;

	if (!ttl_citus_loaded())
		return TTL_CITUS_NONE;
	catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	index = get_relname_relid("pg_dist_partition_logical_relid_index",
							  PG_CATALOG_NAMESPACE);
	if (!OidIsValid(catalog) || !OidIsValid(index))
		return TTL_CITUS_NONE;	/* no CREATE EXTENSION citus here */

	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, index, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;
		char		method = DatumGetChar(heap_getattr(tup, attnum_by_name(desc, "partmethod"),
													   desc, &isnull));
		char		repmodel = DatumGetChar(heap_getattr(tup, attnum_by_name(desc, "repmodel"),
														 desc, &isnull));

		if (method == 'h')
			kind = TTL_CITUS_HASH;
		else if (repmodel == 't')
			kind = TTL_CITUS_REFERENCE;
		else
			kind = TTL_CITUS_OTHER;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return kind;
}

/* Is funcid ttl.stamp()? */
static bool
is_stamp_function(Oid funcid)
{
	static Oid	stamp_oid = InvalidOid;
	char	   *name;

	if (funcid == stamp_oid)
		return true;
	name = get_func_name(funcid);
	if (name == NULL || strcmp(name, "stamp") != 0 ||
		get_func_namespace(funcid) != get_namespace_oid("ttl", true))
		return false;
	stamp_oid = funcid;
	return true;
}

/*
 * The policy a table's stamp trigger carries (a distributed container's
 * table, its shell on a node, or one of its shards): false when it has no
 * such trigger.
 */
bool
ttl_trigger_policy(Oid relid, TtlContainer *out)
{
	Relation	rel;
	bool		found = false;
	int			i;

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (t->tgnargs != 3 || !is_stamp_function(t->tgfoid))
			continue;
		memset(out, 0, sizeof(*out));
		out->relid = relid;
		namestrcpy(&out->doc_column, t->tgargs[0]);
		out->default_is_null = t->tgargs[1][0] == '\0';
		out->default_ttl = out->default_is_null ? 0 : pg_strtoint32(t->tgargs[1]);
		out->paused = strcmp(t->tgargs[2], "paused") == 0;
		found = true;
		break;
	}
	relation_close(rel, AccessShareLock);
	return found;
}

/*
 * For messages: the name of the distributed table whose shard rel is
 * (<table>_<shardid>, with the policy trigger), or NULL.
 */
char *
ttl_citus_shard_table_name(Relation rel)
{
	const char *name = RelationGetRelationName(rel);
	const char *us = strrchr(name, '_');
	char	   *logical;
	TtlContainer policy;

	if (!ttl_citus_loaded() || us == NULL || us[1] == '\0' ||
		strspn(us + 1, "0123456789") != strlen(us + 1) ||
		!ttl_trigger_policy(RelationGetRelid(rel), &policy))
		return NULL;
	logical = pnstrdup(name, us - name);
	if (ttl_citus_kind(get_relname_relid(logical, RelationGetNamespace(rel))) == TTL_CITUS_NONE)
		return NULL;
	return logical;
}

/* ttl_trigger_policy, only where Citus is loaded (else false at once) */
bool
ttl_trigger_policy_if_citus(Oid relid, TtlContainer *out)
{
	return ttl_citus_loaded() && ttl_trigger_policy(relid, out);
}

/*
 * The shards of container (InvalidOid: of every distributed container)
 * whose placement on this node is active in Citus's metadata, as local
 * relation OIDs.  A placement that a move is still filling, or one left
 * behind for deferred cleanup, is not active here: purging it could race
 * with the logical replication that copies it.  With due_only, only those
 * whose policy has a default and is not paused.
 */
List *
ttl_citus_local_placements(Oid container, bool due_only)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(container)};
	uint64		i;

	if (!ttl_citus_loaded() ||
		!OidIsValid(get_relname_relid("pg_dist_placement", PG_CATALOG_NAMESPACE)) ||
		!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
		return NIL;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(
							  "SELECT s.logicalrelid::pg_catalog.oid, s.shardid"
							  "  FROM pg_catalog.pg_dist_shard s"
							  "  JOIN pg_catalog.pg_dist_placement p"
							  "    ON p.shardid OPERATOR(pg_catalog.=) s.shardid"
							  " WHERE p.groupid OPERATOR(pg_catalog.=)"
							  "       (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l)"
							  "   AND p.shardstate OPERATOR(pg_catalog.=) 1"
							  "   AND ($1 OPERATOR(pg_catalog.=) 0::pg_catalog.oid"
							  "        OR s.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1)"
							  " ORDER BY s.shardid",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the Citus placements");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			logical = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
															 SPI_tuptable->tupdesc, 1, &isnull));
		int64		shardid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 2, &isnull));
		char	   *relname = get_rel_name(logical);
		char		shardname[NAMEDATALEN * 2];
		Oid			shard;
		TtlContainer policy;

		if (relname == NULL)
			continue;
		/* Citus names a shard <table>_<shardid> (longer names are hashed: not handled) */
		snprintf(shardname, sizeof(shardname), "%s_" INT64_FORMAT, relname, shardid);
		if (strlen(shardname) >= NAMEDATALEN)
			continue;
		shard = get_relname_relid(shardname, get_rel_namespace(logical));
		if (!OidIsValid(shard) || !ttl_trigger_policy(shard, &policy))
			continue;
		if (due_only && (policy.default_is_null || policy.paused))
			continue;
		{
			MemoryContext spi = MemoryContextSwitchTo(caller);

			result = lappend_oid(result, shard);
			MemoryContextSwitchTo(spi);
		}
	}
	SPI_finish();
	return result;
}

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
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not run \"%s\"", sql);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/*
 * Put the registry's policy of a hash-distributed container into its stamp
 * trigger, which Citus replaces on every shard and every node's shell in
 * the same distributed transaction.  Nothing for any other table.
 */
void
ttl_citus_sync_policy(Oid relid)
{
	TtlContainer c;
	char	   *def;

	if (ttl_citus_kind(relid) != TTL_CITUS_HASH || !ttl_read_container(relid, &c))
		return;
	def = c.default_is_null ? "" : psprintf("%d", c.default_ttl);
	citus_ddl(psprintf("CREATE OR REPLACE TRIGGER " STAMP_TRIGGER
					   " BEFORE INSERT OR UPDATE ON %s FOR EACH ROW"
					   " EXECUTE FUNCTION ttl.stamp(%s, %s, %s)",
					   quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												  get_rel_name(relid)),
					   quote_literal_cstr(NameStr(c.doc_column)),
					   quote_literal_cstr(def),
					   quote_literal_cstr(c.paused ? "paused" : "active")));
}

/* 0A000 for a container that Citus holds other than hash-distributed. */
void
ttl_citus_check_kind(Oid relid)
{
	char		kind = ttl_citus_kind(relid);

	if (kind == TTL_CITUS_REFERENCE || kind == TTL_CITUS_OTHER)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container \"%s\" cannot be a Citus %s",
						get_rel_name(relid),
						kind == TTL_CITUS_REFERENCE ? "reference table" :
						"table other than a hash-distributed one"),
				 errdetail("Each placement would stamp and purge on its own and the copies would drift."),
				 errhint("Use a hash-distributed table: create_distributed_table().")));
}

/*
 * ttl.purge() of a distributed container on the coordinator: every node
 * purges its own placements (ttl._purge_placements), in parallel, each in
 * its own transaction; the total deleted.
 */
int64
ttl_citus_purge(Oid relid, int64 max_rows)
{
	char	   *command;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int64		total = 0;
	uint64		i;
	int			nestlevel;

	command = psprintf("SELECT ttl._purge_placements(%s::pg_catalog.regclass, %s)",
					   quote_literal_cstr(quote_qualified_identifier(
																	 get_namespace_name(get_rel_namespace(relid)),
																	 get_rel_name(relid))),
					   max_rows < 0 ? "NULL" : psprintf(INT64_FORMAT, max_rows));
	values[0] = CStringGetTextDatum(command);
	nestlevel = ttl_pin_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT r.success, r.result"
							  "  FROM pg_catalog.run_command_on_all_nodes($1) r",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not run ttl._purge_placements on the nodes");
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
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	return total;
}

/*
 * ttl._purge_placements(container, max_rows): purge this node's active
 * placements of a distributed container now, as its owner; how many rows.
 */
PG_FUNCTION_INFO_V1(ttl_purge_placements);
Datum
ttl_purge_placements(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		max_rows = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	int64		total = 0;
	ListCell   *lc;

	PreventCommandIfReadOnly("ttl._purge_placements()");
	ttl_check_container_owner(relid);
	foreach(lc, ttl_citus_local_placements(relid, false))
	{
		bool		skipped;

		if (max_rows >= 0 && total >= max_rows)
			break;
		total += ttl_purge_container(lfirst_oid(lc),
									 max_rows < 0 ? -1 : max_rows - total, &skipped);
	}
	PG_RETURN_INT64(total);
}

/* ttl._local_placements(container): this node's active placements. */
PG_FUNCTION_INFO_V1(ttl_local_placements);
Datum
ttl_local_placements(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	foreach(lc, ttl_citus_local_placements(PG_GETARG_OID(0), false))
	{
		Datum		value = ObjectIdGetDatum(lfirst_oid(lc));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}

/* ttl._citus_kind(table): 'h', 'r', 'o' or NULL (not a Citus table). */
PG_FUNCTION_INFO_V1(ttl_citus_kind_sql);
Datum
ttl_citus_kind_sql(PG_FUNCTION_ARGS)
{
	char		kind = ttl_citus_kind(PG_GETARG_OID(0));

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

static bool
ttl_needs_fmgr_hook(Oid fn_oid)
{
	if (prev_needs_fmgr_hook && prev_needs_fmgr_hook(fn_oid))
		return true;
	return is_citus_table_maker(fn_oid);
}

/*
 * After a Citus table maker: refuse containers it made reference (or other
 * non-hash) tables, give hash-distributed ones their policy in the trigger.
 */
static void
after_table_maker(void)
{
	uint64		i;
	List	   *relids = NIL;
	ListCell   *lc;
	MemoryContext caller = CurrentMemoryContext;

	if (!OidIsValid(get_extension_oid("ttl", true)))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT r.relid::pg_catalog.oid FROM ttl.registry r", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read ttl.registry");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext spi = MemoryContextSwitchTo(caller);

		relids = lappend_oid(relids, relid);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
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

static void
ttl_fmgr_hook(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	if (prev_fmgr_hook)
		(*prev_fmgr_hook) (event, flinfo, private);
	if (!is_citus_table_maker(flinfo->fn_oid))
		return;
	switch (event)
	{
		case FHET_START:
			if (makers_running >= MAX_MAKERS)
				elog(ERROR, "too many nested Citus table makers");
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

/* From _PG_init. */
void
ttl_install_citus_hooks(void)
{
	prev_needs_fmgr_hook = needs_fmgr_hook;
	needs_fmgr_hook = ttl_needs_fmgr_hook;
	prev_fmgr_hook = fmgr_hook;
	fmgr_hook = ttl_fmgr_hook;
}
