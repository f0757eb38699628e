/*
 * retire_admin.c
 *		ttl.set_retire(container, mode) (1.9): whether the purge retires a
 *		leaf of a partitioned container whose every item has expired
 *		whole ('drop': detached, then dropped; 'detach': detached and
 *		recorded in ttl.retired) instead of deleting its rows ('off', the
 *		default).  When a leaf qualifies is purge/retire_check.c's, how it
 *		is retired purge/purge_retire.c's.
 *
 * Locking: the caller must own the container; the change is made under
 * the container's purge and replace locks (ttl_lock_container, held until
 * commit), so no purge batch or retire step runs by the old mode while it
 * is changed.  The registry row is written as the extension's owner
 * (ttl_registry_execute): users have no write privilege on ttl.registry.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "base/run_as.h"
#include "base/sql_version.h"
#include "registry/policy.h"
#include "registry/registry.h"

PG_FUNCTION_INFO_V1(ttl_set_retire);
Datum
ttl_set_retire(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	TtlContainer c;
	TtlRetireMode mode;
	char	   *word;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container must not be null")));
	relid = PG_GETARG_OID(0);
	ttl_check_relation_exists(relid);
	ttl_check_container_owner(relid);
	ttl_get_container(relid, &c);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("retire mode of container %s must not be null",
						ttl_relation_display_name(relid)),
				 errhint("Pass 'off' (the default), 'drop' or 'detach'.")));
	word = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!ttl_retire_mode_parse(word, &mode))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid retire mode \"%s\" for container %s",
						word, ttl_relation_display_name(relid)),
				 errdetail("The mode is 'off' (rows are deleted one by one), 'drop' (a fully expired leaf is detached and dropped) or 'detach' (it is detached and recorded in ttl.retired)."),
				 errhint("Pass 'off', 'drop' or 'detach'.")));
	/* 'off' is always accepted: it turns nothing on */
	if (mode != TTL_RETIRE_OFF)
	{
		if (ttl_distribution_of(relid) != TTL_DIST_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("container %s is a Citus distributed table: retiring partitions is not supported there",
							ttl_relation_display_name(relid)),
					 errdetail("The nodes purge their shards with the policy their stamp triggers carry, which has no place for a retire mode."),
					 errhint("Keep ttl.set_retire(container, 'off') on a distributed container.")));
		if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("container %s is not partitioned: it has no leaves to retire",
							ttl_relation_display_name(relid)),
					 errdetail("Only a leaf partition of a partitioned container is retired whole; a plain table's items are deleted row by row."),
					 errhint("Partition the container by a write-time column such as created_at (docs/retire.md).")));
	}
	if (!ttl_sql_at_least(1, 9))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("retiring partitions needs version 1.9 of extension \"ttl\""),
				 errhint("Run ALTER EXTENSION ttl UPDATE.")));
	/* never in the middle of a purge batch or of a retire step */
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = CStringGetTextDatum(ttl_retire_mode_name(mode));
	ttl_registry_execute("UPDATE ttl.registry SET retire = $2"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, NULL, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	PG_RETURN_VOID();
}
