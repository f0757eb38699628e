/*
 * catalog.c
 *		The registry of containers (table ttl.registry): a backend-local cache
 *		read by the view's filter and purge, the functions that change it
 *		(ttl._register, ttl._set_objects, ttl._unregister,
 *		ttl.set_default_ttl, ttl.pause, ttl.resume), ownership checks, and
 *		the helper that runs SQL as another role.
 *
 * Locking: users have no write privilege on ttl.registry; every change goes
 * through these functions, which check that the caller owns the table and
 * then write as the extension's owner with a fixed search_path.  Each change
 * sends a relcache invalidation for the container, which is how other
 * backends learn that their cached entry is stale.  A policy change holds
 * the container's purge lock (see container_lock_tag: a lock tag of the
 * extension's own, which no SQL function can take), so it never
 * interleaves with a purge batch that computed its cutoff from the old
 * default.  Purge reads the registry in C (ttl_read_container,
 * ttl_list_containers): no SQL runs to find or read a container, so
 * nothing a user plants in a schema can run there.  Every statement that
 * does run (ttl_registry_execute) pins search_path to pg_catalog, pg_temp
 * and names its operators OPERATOR(pg_catalog.x).
 */
#include "ttl.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#define REGISTRY_NATTS 4		/* relid, doc_column, default_ttl, paused */

static HTAB *container_cache = NULL;
static Oid	registry_relid = InvalidOid;
static Oid	registry_index = InvalidOid;

/*
 * Relcache invalidation: a container changed (or everything did).  Also
 * forget where the registry lives, in case the extension was recreated.
 */
static void
container_cache_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == registry_relid)
	{
		registry_relid = InvalidOid;
		registry_index = InvalidOid;
	}
	if (container_cache == NULL)
		return;
	if (relid == InvalidOid)
	{
		HASH_SEQ_STATUS status;
		TtlContainer *entry;

		hash_seq_init(&status, container_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
			hash_search(container_cache, &entry->relid, HASH_REMOVE, NULL);
	}
	else
		hash_search(container_cache, &relid, HASH_REMOVE, NULL);
}

void
ttl_register_cache_callbacks(void)
{
	CacheRegisterRelcacheCallback(container_cache_invalidate, (Datum) 0);
}

static bool
find_registry(void)
{
	Oid			nsp;

	if (OidIsValid(registry_relid) && OidIsValid(registry_index))
		return true;
	nsp = get_namespace_oid("ttl", true);
	if (!OidIsValid(nsp))
		return false;
	registry_relid = get_relname_relid("registry", nsp);
	registry_index = get_relname_relid("registry_pkey", nsp);
	return OidIsValid(registry_relid) && OidIsValid(registry_index);
}

/* One registry row into *out (the first REGISTRY_NATTS columns). */
static void
deform_container(Relation rel, HeapTuple tup, TtlContainer *out)
{
	Datum	   *values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	bool	   *nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);

	heap_deform_tuple(tup, RelationGetDescr(rel), values, nulls);
	out->relid = DatumGetObjectId(values[0]);
	namestrcpy(&out->doc_column, NameStr(*DatumGetName(values[1])));
	out->default_is_null = nulls[2];
	out->default_ttl = nulls[2] ? 0 : DatumGetInt32(values[2]);
	out->paused = !nulls[3] && DatumGetBool(values[3]);
	pfree(values);
	pfree(nulls);
}

/*
 * The registry row of relid.  The scan takes a new snapshot (for a table
 * that is not a system catalog, GetCatalogSnapshot takes a fresh one each
 * time), so it sees what is committed now, whatever the isolation level of
 * the caller's transaction: purge reads the policy this way, under the
 * container's lock, which a policy change holds until it commits.
 */
static bool
read_container(Oid relid, TtlContainer *out)
{
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		found = false;

	if (!find_registry())
		return false;
	rel = table_open(registry_relid, AccessShareLock);
	if (RelationGetDescr(rel)->natts < REGISTRY_NATTS)
		elog(ERROR, "ttl.registry has an unexpected layout");
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, registry_index, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		deform_container(rel, tup, out);
		out->relid = relid;
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* The registry row as committed now (see read_container); no cache. */
bool
ttl_read_container(Oid relid, TtlContainer *out)
{
	return read_container(relid, out);
}

/*
 * The containers of the database in relid order, as a list of OIDs in the
 * caller's memory context: with due_only, those with a default and not
 * paused.  Rows whose table is gone (a temporary table whose session
 * ended) are skipped.  A systable scan, not SQL: see the file header.
 */
List *
ttl_list_containers(bool due_only)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;

	if (!find_registry())
		return NIL;
	rel = table_open(registry_relid, AccessShareLock);
	if (RelationGetDescr(rel)->natts < REGISTRY_NATTS)
		elog(ERROR, "ttl.registry has an unexpected layout");
	scan = systable_beginscan(rel, registry_index, true, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		TtlContainer c;

		deform_container(rel, tup, &c);
		if (due_only && (c.default_is_null || c.paused))
			continue;
		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(c.relid)))
			continue;
		/* another session's temp table (registered under 1.0): unreachable */
		if (isOtherTempNamespace(get_rel_namespace(c.relid)))
			continue;
		result = lappend_oid(result, c.relid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * The registry entry of a table, from the cache when it is fresh.  Only
 * registered tables are cached: a table registered by a restore (COPY into
 * ttl.registry sends no invalidation) is then seen at once.
 */
bool
ttl_lookup_container(Oid relid, TtlContainer *out)
{
	TtlContainer *entry;
	bool		found;

	if (container_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TtlContainer);
		ctl.hcxt = CacheMemoryContext;
		container_cache = hash_create("ttl containers", 64, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(container_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL)
	{
		*out = *entry;
		return true;
	}
	if (!read_container(relid, out))
		return false;
	entry = hash_search(container_cache, &relid, HASH_ENTER, &found);
	*entry = *out;
	return true;
}

static char *
relation_display_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	Oid			nsp = get_rel_namespace(relid);

	if (name == NULL)
		return psprintf("%u", relid);
	return quote_qualified_identifier(get_namespace_name(nsp), name);
}

/* 42501 unless the current user owns the table (or is a member of its owner). */
void
ttl_check_container_owner(Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(relkind),
					   get_rel_name(relid));
}

/* The registry entry of a table, or 42704 when it is not a container. */
void
ttl_get_container(Oid relid, TtlContainer *c)
{
	if (!ttl_lookup_container(relid, c))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" is not a ttl container",
						relation_display_name(relid)),
				 errhint("Register it with ttl.enable().")));
}

static TtlContainer
require_container(Oid relid)
{
	TtlContainer c;

	ttl_check_container_owner(relid);
	ttl_get_container(relid, &c);
	return c;
}

static void
check_default_ttl(Oid relid, int64 value)
{
	if (!ttl_is_valid_ttl(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid default_ttl for container \"%s\": %lld",
						relation_display_name(relid), (long long) value),
				 errdetail("The default must be NULL (time-to-live off), -1 (on, items expire only with their own ttl) or between 1 and 2147483647 seconds.")));
}

/*
 * The owner of the extension's tables (the role that installed it): they
 * are written as that role.  Syscache look-ups only; the purge writes its
 * statistics once per batch.
 */
static Oid
extension_owner(void)
{
	Oid			registry = get_relname_relid("registry", get_namespace_oid("ttl", false));

	if (!OidIsValid(registry))
		elog(ERROR, "table ttl.registry is missing");
	return ttl_table_owner(registry);
}

Oid
ttl_table_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Switch to another role for SQL on its behalf: a security-restricted
 * operation (no SET ROLE, no temp objects, no deferred surprises) with a
 * search_path that user objects cannot shadow.  Undone by
 * ttl_restore_user(), or by transaction abort.
 */
void
ttl_become_user(Oid userid, TtlUserContext *ctx)
{
	GetUserIdAndSecContext(&ctx->save_userid, &ctx->save_sec_context);
	SetUserIdAndSecContext(userid,
						   ctx->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	ctx->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
}

void
ttl_restore_user(TtlUserContext *ctx)
{
	AtEOXact_GUC(false, ctx->save_nestlevel);
	SetUserIdAndSecContext(ctx->save_userid, ctx->save_sec_context);
}

/*
 * The plan of sql, prepared on first use and kept for the backend's life in
 * *saved (the plan cache re-plans it after DDL).  Needs SPI connected.
 */
SPIPlanPtr
ttl_kept_plan(SPIPlanPtr *saved, const char *sql, int nargs, Oid *argtypes)
{
	if (*saved == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare ttl statement: %s",
				 SPI_result_code_string(SPI_result));
		*saved = plan;
	}
	return *saved;
}

/*
 * Run one statement on the extension's own tables, as their owner; with
 * saved, through a kept plan (ttl_kept_plan).
 */
void
ttl_registry_execute(const char *sql, int nargs, Oid *argtypes,
					 Datum *values, const char *nulls, SPIPlanPtr *saved)
{
	TtlUserContext ctx;
	int			rc;

	ttl_become_user(extension_owner(), &ctx);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (saved != NULL)
		rc = SPI_execute_plan(ttl_kept_plan(saved, sql, nargs, argtypes),
							  values, nulls, false, 0);
	else
		rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "ttl registry statement failed: %s", SPI_result_code_string(rc));
	SPI_finish();
	ttl_restore_user(&ctx);
}

/*
 * The purge/policy lock of a container: an object lock whose class is
 * ttl.registry itself.  Core takes object locks only for system catalogs'
 * objects and no SQL function takes an arbitrary one, so unlike an
 * advisory lock no role can take it to stall purges or policy changes.
 * pg_locks shows it as locktype "object", classid ttl.registry, objid the
 * table.
 */
static void
container_lock_tag(LOCKTAG *tag, Oid relid)
{
	if (!find_registry())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"ttl\" is not installed in this database")));
	SET_LOCKTAG_OBJECT(*tag, MyDatabaseId, registry_relid, relid, 0);
}

/* Wait for, and hold until commit, the container's purge/policy lock. */
static void
lock_container(Oid relid)
{
	LOCKTAG		tag;

	container_lock_tag(&tag, relid);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* Take the container's lock until commit if nobody holds it. */
bool
ttl_try_lock_container(Oid relid)
{
	LOCKTAG		tag;

	container_lock_tag(&tag, relid);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* The container argument of a registry function; NULL is an error. */
static Oid
container_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container must not be null")));
	return PG_GETARG_OID(0);
}

/*
 * ttl._register(container, default_ttl, doc_column): the checks of
 * ttl.enable() and the registry row.  ttl.enable() creates the objects.
 */
PG_FUNCTION_INFO_V1(ttl_register);
Datum
ttl_register(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char		relkind;
	const char *doc_column;
	AttrNumber	attnum;
	Oid			atttype;
	TtlContainer existing;
	Oid			argtypes[3] = {OIDOID, NAMEOID, INT4OID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	relid = container_arg(fcinfo);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("doc_column must not be null")));
	doc_column = NameStr(*PG_GETARG_NAME(2));

	relkind = get_rel_relkind(relid);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", relation_display_name(relid)),
				 errdetail("Only tables can be ttl containers.")));
	ttl_check_container_owner(relid);
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("temporary table \"%s\" cannot be a ttl container",
						get_rel_name(relid)),
				 errdetail("A temporary table disappears at the end of its session without notice to the registry."),
				 errhint("Use an ordinary or unlogged table.")));

	attnum = get_attnum(relid, doc_column);
	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						doc_column, relation_display_name(relid)),
				 errhint("Pass the name of the jsonb document column as doc_column.")));
	atttype = get_atttype(relid, attnum);
	if (atttype != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s, not jsonb",
						doc_column, relation_display_name(relid),
						format_type_be(atttype))));
	if (read_container(relid, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already a ttl container",
						relation_display_name(relid)),
				 errhint("Use ttl.set_default_ttl() to change its default.")));
	if (!PG_ARGISNULL(1))
		check_default_ttl(relid, PG_GETARG_INT32(1));

	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_GETARG_DATUM(2);
	values[2] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	if (PG_ARGISNULL(1))
		nulls[2] = 'n';
	ttl_registry_execute("INSERT INTO ttl.registry (relid, doc_column, default_ttl) "
						 "VALUES ($1, $2, $3)", 3, argtypes, values, nulls, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/* ttl._set_objects(container, live_view) */
PG_FUNCTION_INFO_V1(ttl_set_objects);
Datum
ttl_set_objects(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	int			i;

	(void) require_container(relid);
	for (i = 0; i < 2; i++)
	{
		values[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		if (PG_ARGISNULL(i))
			nulls[i] = 'n';
		else if (i > 0 && !pg_class_ownercheck(DatumGetObjectId(values[i]), GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE,
						   get_rel_name(DatumGetObjectId(values[i])));
	}
	ttl_registry_execute("UPDATE ttl.registry SET live_view = $2 WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	PG_RETURN_VOID();
}

/* ttl._unregister(container): forget a container and its statistics. */
PG_FUNCTION_INFO_V1(ttl_unregister);
Datum
ttl_unregister(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	(void) require_container(relid);
	lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	ttl_registry_execute("DELETE FROM ttl.registry WHERE relid OPERATOR(pg_catalog.=) $1",
						 1, argtypes, values, NULL, NULL);
	ttl_registry_execute("DELETE FROM ttl.purge_stats WHERE relid OPERATOR(pg_catalog.=) $1",
						 1, argtypes, values, NULL, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/* ttl.set_default_ttl(container, default_ttl) */
PG_FUNCTION_INFO_V1(ttl_set_default_ttl);
Datum
ttl_set_default_ttl(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	relid = container_arg(fcinfo);
	(void) require_container(relid);
	if (!PG_ARGISNULL(1))
		check_default_ttl(relid, PG_GETARG_INT32(1));

	/* never in the middle of a purge batch that used the old default */
	lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	if (PG_ARGISNULL(1))
		nulls[1] = 'n';
	ttl_registry_execute("UPDATE ttl.registry SET default_ttl = $2 WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

static void
set_paused(FunctionCallInfo fcinfo, bool paused)
{
	Oid			relid;
	Oid			argtypes[2] = {OIDOID, BOOLOID};
	Datum		values[2];

	relid = container_arg(fcinfo);
	(void) require_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = BoolGetDatum(paused);
	ttl_registry_execute("UPDATE ttl.registry SET paused = $2 WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, NULL, NULL);
	CacheInvalidateRelcacheByRelid(relid);
}

PG_FUNCTION_INFO_V1(ttl_pause);
Datum
ttl_pause(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(ttl_resume);
Datum
ttl_resume(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, false);
	PG_RETURN_VOID();
}
