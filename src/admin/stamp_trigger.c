/*
 * stamp_trigger.c
 *		The one writer of the stamp trigger of a container of one node:
 *		ttl._stamp_trigger(), which ttl.enable() calls to create it, and
 *		ttl_stamp_trigger_write(), which ttl._set_deadline_property()
 *		calls to replace it.  The arguments come from the codec
 *		(registry/trigger_args.c), in the format of the installed SQL
 *		version; a distributed container's trigger, which also carries the
 *		policy, is written by the Citus half of the policy door.
 *
 * Rights and locking: the statement runs as the caller, who must own the
 * table (CREATE TRIGGER checks it too), with search_path pinned to
 * pg_catalog, pg_temp for the statement only; CREATE [OR REPLACE] TRIGGER
 * takes ShareRowExclusiveLock on the table and clones the trigger onto
 * its partitions.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "admin/stamp_trigger.h"
#include "base/run_as.h"
#include "registry/registry.h"
#include "registry/trigger_args.h"

/* Create (or replace) relid's stamp trigger for doc_column and deadline. */
void
ttl_stamp_trigger_write(Oid relid, const char *doc_column, const char *deadline,
						bool or_replace)
{
	TtlTriggerArgs args;
	int			nestlevel = ttl_pin_search_path();
	char	   *sql;

	ttl_trigger_args_init(&args, doc_column);
	if (deadline != NULL)
		strlcpy(args.deadline_property, deadline, sizeof(args.deadline_property));
	sql = ttl_stamp_trigger_sql(relid, &args, or_replace);
	ttl_spi_connect();
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create the stamp trigger of \"%s\"", get_rel_name(relid));
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/*
 * ttl._stamp_trigger(container, doc_column): ttl.enable()'s trigger,
 * (document column) only; the deadline property and, on Citus, the
 * policy come later in the same call of ttl.enable().
 */
PG_FUNCTION_INFO_V1(ttl_stamp_trigger);
Datum
ttl_stamp_trigger(PG_FUNCTION_ARGS)
{
	Oid			relid;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container and doc_column must not be null")));
	relid = PG_GETARG_OID(0);
	ttl_check_container_owner(relid);
	ttl_stamp_trigger_write(relid, NameStr(*PG_GETARG_NAME(1)), NULL, false);
	PG_RETURN_VOID();
}
