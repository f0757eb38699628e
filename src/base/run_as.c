/*
 * run_as.c
 *		Running SQL on behalf of another role: the owner of a table, a
 *		security-restricted operation with search_path pg_catalog, pg_temp
 *		(ttl_become_user / ttl_restore_user), kept plans, and statements on
 *		the extension's own tables as their owner (ttl_registry_execute).
 *
 * Locking: none of its own.  Every statement run through
 * ttl_registry_execute pins search_path to pg_catalog, pg_temp and names
 * its operators OPERATOR(pg_catalog.x).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/run_as.h"

void
ttl_spi_connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
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
 * Pin search_path to pg_catalog, pg_temp until AtEOXact_GUC() of the
 * returned nest level, so that the SQL we run resolves no name through a
 * schema users can create in.
 */
int
ttl_pin_search_path(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return nestlevel;
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
	ctx->save_nestlevel = ttl_pin_search_path();
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
	(void) ttl_registry_execute_count(sql, nargs, argtypes, values, nulls, saved);
}

/* ttl_registry_execute, and how many rows the statement processed. */
uint64
ttl_registry_execute_count(const char *sql, int nargs, Oid *argtypes,
						   Datum *values, const char *nulls, SPIPlanPtr *saved)
{
	TtlUserContext ctx;
	int			rc;
	uint64		processed;

	ttl_become_user(extension_owner(), &ctx);
	ttl_spi_connect();
	if (saved != NULL)
		rc = SPI_execute_plan(ttl_kept_plan(saved, sql, nargs, argtypes),
							  values, nulls, false, 0);
	else
		rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "ttl registry statement failed: %s", SPI_result_code_string(rc));
	processed = SPI_processed;
	SPI_finish();
	ttl_restore_user(&ctx);
	return processed;
}

/*
 * Work on a user table's rows for its owner (ttl.enable's validation and
 * stamping, set_deadline_property's check): a caller who is the owner runs
 * as itself under a pinned search_path (its own triggers run as it anyway);
 * anyone else (a superuser, a member of the owning role) becomes the owner
 * in a security-restricted operation, so the owner's code never runs with
 * the caller's rights.  Returns whether it became the owner;
 * ttl_end_owner_work() undoes either.
 */
bool
ttl_begin_owner_work(Oid owner, TtlUserContext *ctx)
{
	ctx->elevated = (GetUserId() != owner);
	if (ctx->elevated)
		ttl_become_user(owner, ctx);
	else
		ctx->save_nestlevel = ttl_pin_search_path();
	return ctx->elevated;
}

void
ttl_end_owner_work(TtlUserContext *ctx)
{
	if (ctx->elevated)
		ttl_restore_user(ctx);
	else
		AtEOXact_GUC(true, ctx->save_nestlevel);
}
