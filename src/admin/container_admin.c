/*
 * container_admin.c
 *		The SQL functions that change the registry (ttl._register,
 *		ttl._set_objects, ttl._unregister, ttl.set_default_ttl,
 *		ttl._set_append_only, ttl.pause,
 *		ttl.resume, which also releases a restore guard hold) and ttl._existing_rows(), ttl.enable()'s work on the rows
 *		already in the table (as its owner).
 *
 * Locking: users have no write privilege on ttl.registry; every change goes
 * through these functions, which check that the caller owns the table and
 * then write as the extension's owner with a fixed search_path
 * (ttl_registry_execute).  A policy change holds the container's purge lock
 * (ttl_lock_container) until commit; on a Citus distributed container it
 * also replaces the stamp trigger that carries the policy to the nodes
 * (ttl_policy_push, registry/policy.c).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "admin/row_key.h"
#include "base/compat.h"
#include "base/public_errors.h"
#include "base/run_as.h"
#include "base/sql_version.h"
#include "document/document.h"
#include "guard/guard.h"
#include "registry/index_owner.h"
#include "registry/legal_hold.h"
#include "registry/leaf_owner.h"
#include "registry/policy.h"
#include "registry/registry.h"

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
						ttl_relation_display_name(relid), (long long) value),
				 errdetail("The default must be NULL (time-to-live off), -1 (on, items expire only with their own ttl) or between 1 and 2147483647 seconds.")));
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
 * 42710 when a partition at any depth above or below relid is a container:
 * a container's stamp trigger is cloned onto every partition of it, so
 * the rows of a partition are already items of the container above (its
 * purge, its view), and a table above a container cannot get a trigger
 * of the same name.
 */
static void
check_not_in_container_tree(Oid relid)
{
	TtlContainer other;
	ListCell   *lc;

	if (get_rel_relispartition(relid))
		foreach(lc, get_partition_ancestors(relid))
		{
			if (ttl_read_container(lfirst_oid(lc), &other))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("table %s is a partition of ttl container %s",
								ttl_relation_display_name(relid),
								ttl_relation_display_name(lfirst_oid(lc))),
						 errdetail("The rows of a partition are items of the container it belongs to: its stamp trigger, purge and live view cover every partition."),
						 errhint("Change the policy of %s, or detach the partition before enabling it on its own.",
								 ttl_relation_display_name(lfirst_oid(lc)))));
		}
	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return;
	foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
	{
		if (lfirst_oid(lc) != relid && ttl_read_container(lfirst_oid(lc), &other))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("partition %s of table %s is a ttl container",
							ttl_relation_display_name(lfirst_oid(lc)),
							ttl_relation_display_name(relid)),
					 errdetail("A container's stamp trigger is cloned onto every partition, and its purge and live view cover them: a partition cannot be a container of its own inside it."),
					 errhint("Run ttl.disable(%s) first, or enable the partitions one by one instead.",
							 quote_literal_cstr(ttl_relation_display_name(lfirst_oid(lc))))));
	}
}

/*
 * ttl._register(container, default_ttl, doc_column): the checks of
 * ttl.enable() and the registry row.  ttl.enable() creates the objects.
 */
static Datum
register_container(PG_FUNCTION_ARGS)
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
	ttl_check_relation_exists(relid);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("doc_column must not be null")));
	doc_column = NameStr(*PG_GETARG_NAME(2));

	relkind = get_rel_relkind(relid);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", ttl_relation_display_name(relid)),
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
						doc_column, ttl_relation_display_name(relid)),
				 errhint("Pass the name of the jsonb document column as doc_column.")));
	atttype = get_atttype(relid, attnum);
	if (atttype != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s, not jsonb",
						doc_column, ttl_relation_display_name(relid),
						format_type_be(atttype))));
	/* a Citus reference (or other non-hash) table: 0A000 */
	ttl_policy_check_distribution(relid);
	if (ttl_read_container(relid, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already a ttl container",
						ttl_relation_display_name(relid)),
				 errhint("Use ttl.set_default_ttl() to change its default.")));
	check_not_in_container_tree(relid);
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

/* ttl.enable's step: its errors are ttl.enable's (base/public_errors.c) */
PG_FUNCTION_INFO_V1(ttl_register);
Datum
ttl_register(PG_FUNCTION_ARGS)
{
	return ttl_call_as_public(register_container, fcinfo);
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
		else if (i > 0)
		{
			Oid			view = DatumGetObjectId(values[i]);

			/* a superuser passes the owner check even for no relation */
			ttl_check_relation_exists(view);
			if (!ttl_class_ownercheck(view, GetUserId()))
				aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(view));
		}
	}
	ttl_registry_execute("UPDATE ttl.registry SET live_view = $2 WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	/* the last step of ttl.enable(): a distributed container's trigger gets its policy */
	CommandCounterIncrement();
	ttl_policy_push(relid);
	/* the restore guard: at home here; held if mostly due already (guard.c) */
	ttl_guard_after_enable(relid);
	/* a partition another role owns: the purge will skip it, say so now */
	ttl_warn_foreign_leaves(relid);
	PG_RETURN_VOID();
}

/* ttl._unregister(container): forget a container and its statistics. */
static Datum
unregister_container(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	(void) require_container(relid);
	ttl_lock_container(relid);
	/* legal hold: refused while holds stand, 55000 (legal_hold.c) */
	ttl_legal_hold_refuse_disable(relid);
	values[0] = ObjectIdGetDatum(relid);
	ttl_registry_execute("DELETE FROM ttl.registry WHERE relid OPERATOR(pg_catalog.=) $1",
						 1, argtypes, values, NULL, NULL);
	ttl_registry_execute("DELETE FROM ttl.purge_stats WHERE relid OPERATOR(pg_catalog.=) $1",
						 1, argtypes, values, NULL, NULL);
	if (ttl_sql_at_least(1, 7))	/* ttl.purge_stats_pending */
		ttl_registry_execute("DELETE FROM ttl.purge_stats_pending WHERE relid OPERATOR(pg_catalog.=) $1",
							 1, argtypes, values, NULL, NULL);
	/* 1.9: the rows its purge isolated as failing (insight/purge_failures.c) */
	if (ttl_sql_at_least(1, 9))
		ttl_registry_execute("DELETE FROM ttl.purge_failure WHERE relid OPERATOR(pg_catalog.=) $1",
							 1, argtypes, values, NULL, NULL);
	/* ttl.disable reads the record of its indexes first, then drops them */
	ttl_forget_index_owners(relid);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/* ttl.disable's step: its errors are ttl.disable's (base/public_errors.c) */
PG_FUNCTION_INFO_V1(ttl_unregister);
Datum
ttl_unregister(PG_FUNCTION_ARGS)
{
	return ttl_call_as_public(unregister_container, fcinfo);
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
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	if (PG_ARGISNULL(1))
		nulls[1] = 'n';
	ttl_registry_execute("UPDATE ttl.registry SET default_ttl = $2 WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	/* a distributed container: its shards and nodes learn it in this transaction */
	CommandCounterIncrement();
	ttl_policy_push(relid);
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
	CommandCounterIncrement();
	ttl_policy_push(relid);
}

/*
 * ttl._set_append_only(container, append_only [, purge_index]): the
 * registry's mode, under the purge lock (never in the middle of a batch);
 * the indexes are swapped by ttl.set_append_only around it.  purge_index
 * (1.6) is 'btree' for the default mode, 'brin' or 'none' for an
 * append-only one; the two-argument form of 1.3 means 'brin' / 'btree'.
 */
static Datum
set_append_only(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			argtypes[3] = {OIDOID, BOOLOID, BOOLOID};
	Datum		values[3];
	bool		append_only;
	bool		index_free = false;

	relid = container_arg(fcinfo);
	(void) require_container(relid);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("append_only of container %s must not be null",
						ttl_relation_display_name(relid)),
				 errhint("Pass true for the append-only mode, false for the default one.")));
	append_only = PG_GETARG_BOOL(1);
	if (PG_NARGS() > 2)
	{
		char	   *kind;

		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("purge_index of container %s must not be null",
							ttl_relation_display_name(relid)),
					 errhint("Pass 'btree', 'brin' or 'none'.")));
		kind = text_to_cstring(PG_GETARG_TEXT_PP(2));
		if (append_only ? (strcmp(kind, "brin") != 0 && strcmp(kind, "none") != 0) :
			strcmp(kind, "btree") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid purge_index \"%s\" for container %s in %s mode",
							kind, ttl_relation_display_name(relid),
							append_only ? "append-only" : "the default"),
					 errdetail("An append-only container takes 'brin' or 'none'; the default mode takes 'btree'.")));
		index_free = strcmp(kind, "none") == 0;
	}
	ttl_policy_refuse_index_free(relid, index_free);
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = BoolGetDatum(append_only);
	values[2] = BoolGetDatum(index_free);
	ttl_registry_execute(PG_NARGS() > 2 ?
						 "UPDATE ttl.registry SET append_only = $2, index_free = $3"
						 " WHERE relid OPERATOR(pg_catalog.=) $1" :
						 "UPDATE ttl.registry SET append_only = $2"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 PG_NARGS() > 2 ? 3 : 2, argtypes, values, NULL, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/* ttl.set_append_only's step: its errors are ttl.set_append_only's (base/public_errors.c) */
PG_FUNCTION_INFO_V1(ttl_set_append_only);
Datum
ttl_set_append_only(PG_FUNCTION_ARGS)
{
	return ttl_call_as_public(set_append_only, fcinfo);
}

/*
 * ttl.set_replace_expired(container, on) (1.7): whether a write replaces an
 * expired item that holds its unique key (rule 10, replace.c), under the
 * container's purge and replace locks (ttl_lock_container: never while a
 * writer replaces by the old setting).  Owner only; not on a Citus
 * distributed container (registry/policy.c).
 */
PG_FUNCTION_INFO_V1(ttl_set_replace_expired);
Datum
ttl_set_replace_expired(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			argtypes[2] = {OIDOID, BOOLOID};
	Datum		values[2];
	bool		on;

	relid = container_arg(fcinfo);
	(void) require_container(relid);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("replace_expired of container %s must not be null",
						ttl_relation_display_name(relid)),
				 errhint("Pass true for rule 10 (the default), false to leave expired items conflicting until purged.")));
	on = PG_GETARG_BOOL(1);
	ttl_policy_refuse_replace_off(relid, on);
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = BoolGetDatum(on);
	ttl_registry_execute("UPDATE ttl.registry SET replace_expired = $2"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, NULL, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}

/*
 * ttl.set_purge_window(container, purge_window) (1.9): the times of day
 * outside which the worker and ttl.run_purge() leave the container
 * (base/purge_window.c parses it; a bad value writes nothing); NULL
 * removes it, and the setting ttl.purge_window applies again.  Owner only;
 * not on a Citus distributed container (registry/policy.c).  Not a policy
 * change: no purge lock, a batch in progress finishes.
 */
PG_FUNCTION_INFO_V1(ttl_set_purge_window);
Datum
ttl_set_purge_window(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	TtlPurgeWindow w;

	relid = container_arg(fcinfo);
	(void) require_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = (Datum) 0;
	if (PG_ARGISNULL(1))
		nulls[1] = 'n';
	else
	{
		char	   *value = text_to_cstring(PG_GETARG_TEXT_PP(1));

		ttl_window_parse_or_error(value, psprintf("container %s", ttl_relation_display_name(relid)),
								  &w);
		if (w.nranges == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid purge window \"%s\" for container %s", value,
							ttl_relation_display_name(relid)),
					 errdetail("A container's window has at least one range."),
					 errhint("Pass NULL to remove the container's window, or '00:00-24:00' to purge it at any time whatever ttl.purge_window says.")));
		values[1] = PG_GETARG_DATUM(1);
	}
	ttl_policy_refuse_purge_window(relid, nulls[1] != 'n');
	ttl_registry_execute("UPDATE ttl.registry SET purge_window = $2"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
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

/*
 * ttl.resume from 1.5: also releases the restore guard's hold and records
 * the current cluster and database as the container's home (guard.c).
 */
PG_FUNCTION_INFO_V1(ttl_resume_guard);
Datum
ttl_resume_guard(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, false);
	ttl_guard_release(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}

/*
 * Deferred trigger events queued by the stamping UPDATE would fire at
 * commit, outside the owner's restricted operation, with the rights of
 * whoever commits (PostgreSQL refuses to queue them inside the restricted
 * operation anyway): when that is not the owner, a table (or partition)
 * with deferrable triggers of its own (not the internal ones of foreign
 * keys, which run as the owner) is refused with a clear message.
 */
static void
refuse_deferred_triggers(Oid relid, const char *table)
{
	List	   *rels = find_all_inheritors(relid, AccessShareLock, NULL);
	Relation	trigrel = table_open(TriggerRelationId, AccessShareLock);
	ListCell   *lc;

	foreach(lc, rels)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(lfirst_oid(lc)));
		scan = systable_beginscan(trigrel, TriggerRelidNameIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_trigger trig = (Form_pg_trigger) GETSTRUCT(tup);

			if (trig->tgdeferrable && !trig->tgisinternal)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("ttl.enable() on \"%s\" must be run by the table's owner",
								table),
						 errdetail("Deferrable trigger \"%s\" would fire at commit with the rights of the current user.",
								   NameStr(trig->tgname)),
						 errhint("Run it as role \"%s\" (SET ROLE).",
								 GetUserNameFromId(ttl_table_owner(relid), false))));
		}
		systable_endscan(scan);
	}
	table_close(trigrel, AccessShareLock);
}

/*
 * The trigger's error for a document already in the table, with the row
 * named by its key (row_key.c): the rest of the error as the trigger
 * gives it.
 */
static void
validate_existing_row(Relation rel, const char *doc_column, Datum doc, bool isnull,
					  const char *key)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		ttl_validate_document(rel, doc_column, doc, isnull);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg_internal("%s", edata->message),
				 errdetail("%s%sThe first such row in the table has key %s; nothing was changed.",
						   edata->detail ? edata->detail : "",
						   edata->detail ? " " : "", key),
				 edata->hint ? errhint("%s", edata->hint) : 0));
	}
	PG_END_TRY();
}

/*
 * ttl._existing_rows(container, doc_column, stamp): the work ttl.enable()
 * does on the rows already in the table.  Without stamp: raise the
 * trigger's error for the first document it would refuse.  With stamp:
 * give every document without "_ts" one (an UPDATE that fires the stamping
 * trigger and the owner's other triggers).  Both run as the table's owner
 * inside a security-restricted operation with a pinned search_path, so a
 * superuser enabling someone else's table never runs their code (triggers,
 * functions in index expressions the planner folds) with its own rights.
 */
static Datum
existing_rows(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	const char *doc_column = NameStr(*PG_GETARG_NAME(1));
	bool		stamp = PG_GETARG_BOOL(2);
	Relation	rel;
	char	   *table;
	const char *col = quote_identifier(doc_column);
	Oid			owner;
	TtlUserContext ctx;
	ListCell   *lc;

	ttl_check_container_owner(relid);
	rel = relation_open(relid, AccessShareLock);
	table = ttl_container_name(rel);
	owner = ttl_table_owner(relid);

	/*
	 * The owner runs its own triggers as itself (as in 1.0); anyone else
	 * (a superuser, a member of the owning role) has the work done as the
	 * owner in a security-restricted operation.
	 */
	if (stamp && GetUserId() != owner)
		refuse_deferred_triggers(relid, table);
	ttl_begin_owner_work(owner, &ctx);
	ttl_spi_connect();

	/*
	 * On ONLY each leaf with the table's owner (a plain table is its own,
	 * with its inheritance children): a statement on the parent would be
	 * planned over every partition, another role's among them, whose index
	 * expressions would be folded as the owner (registry/leaf_owner.c).
	 * Such a partition is left as it is: ttl.enable warns of it, and the
	 * purge never touches it.
	 */
	foreach(lc, ttl_owned_leaves(relid))
	{
		char	   *only = ttl_only_name(lfirst_oid(lc));

		if (!stamp)
		{
			TtlRowKey	rowkey;
			StringInfoData cols;
			StringInfoData order;
			char	   *sql;

			/* the first bad row by primary key, named in the error */
			initStringInfo(&cols);
			initStringInfo(&order);
			ttl_row_key_sql(rel, &rowkey, &cols, &order);
			sql = psprintf("SELECT t.%1$s%3$s FROM %2$s t WHERE t.%1$s IS NULL"
						   " OR pg_catalog.jsonb_typeof(t.%1$s) OPERATOR(pg_catalog.<>) 'object'"
						   " OR (t.%1$s OPERATOR(pg_catalog.?) 'ttl' AND ttl.doc_ttl(t.%1$s) IS NULL)"
						   "%4$s LIMIT 1", col, only, cols.data, order.data);
			if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "ttl validation scan failed");
			if (SPI_processed == 1)
			{
				bool		isnull;
				Datum		doc = SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 1, &isnull);

				validate_existing_row(rel, doc_column, doc, isnull,
									  ttl_row_key_text(&rowkey, 2));
			}
		}
		else
		{
			int			rc = SPI_execute(psprintf("UPDATE %2$s SET %1$s = %1$s WHERE ttl.doc_ts(%1$s) IS NULL",
												  col, only), false, 0);

			/* a DO INSTEAD rule on UPDATE would leave the rows unstamped */
			if (rc == SPI_OK_REWRITTEN)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("table %s has a DO INSTEAD rule on UPDATE", table),
						 errdetail("ttl.enable stamps the rows already in the table with an UPDATE, which the rule replaces."),
						 errhint("Drop the rule (DROP RULE ... ON %s), enable the table, then create the rule again.",
								 table)));
			if (rc != SPI_OK_UPDATE)
				elog(ERROR, "ttl stamping update failed: %s", SPI_result_code_string(rc));
		}
	}
	SPI_finish();
	ttl_end_owner_work(&ctx);
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/* ttl.enable's step: its errors are ttl.enable's (base/public_errors.c) */
PG_FUNCTION_INFO_V1(ttl_existing_rows);
Datum
ttl_existing_rows(PG_FUNCTION_ARGS)
{
	return ttl_call_as_public(existing_rows, fcinfo);
}
