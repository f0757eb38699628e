/*
 * mark_admin.c
 *		ttl.set_mark_purge_deletes(container, mode) (1.9): whether the purge
 *		deletes of one container are marked in the change stream ('on',
 *		'off'), or follow the setting ttl.mark_purge_deletes ('default').
 *		Kept in ttl.registry.mark_purge_deletes (NULL: default), which is
 *		dumped with the registry; honoured by purge/mark.c on every purge
 *		path.  A hash-distributed container carries it to its shards on
 *		every node in its stamp trigger's arguments (the key mark=,
 *		registry/trigger_args.h), pushed like the rest of its policy.
 *
 * Superuser only, like the setting it overrides: consumers of the change
 * stream rely on the marking (a subscriber with origin = none leaves the
 * marked deletes out), which the table's owner must not switch for them.
 *
 * Locking: the container's purge lock (ttl_lock_container) until commit,
 * so no batch of the container runs while the mode changes; on a
 * distributed container, what CREATE OR REPLACE TRIGGER takes on it and
 * its shards (through the policy door, registry/policy.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"

#include "base/run_as.h"
#include "registry/policy.h"
#include "registry/registry.h"

PG_FUNCTION_INFO_V1(ttl_set_mark_purge_deletes);
Datum
ttl_set_mark_purge_deletes(PG_FUNCTION_ARGS)
{
	Oid			relid;
	TtlContainer c;
	char	   *mode;
	Oid			argtypes[2] = {OIDOID, BOOLOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container must not be null")));
	relid = PG_GETARG_OID(0);
	ttl_check_relation_exists(relid);
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to set the marking of purge deletes of container %s",
						ttl_relation_display_name(relid)),
				 errdetail("Only superusers may change it, as only they may set ttl.mark_purge_deletes, which it overrides."),
				 errhint("Consumers of the change stream rely on the marking: ask a superuser.")));
	ttl_get_container(relid, &c);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("mode of the marking of purge deletes of container %s must not be null",
						ttl_relation_display_name(relid)),
				 errhint("Pass 'on', 'off' or 'default' (follow ttl.mark_purge_deletes).")));
	mode = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(mode, "on") == 0)
		values[1] = BoolGetDatum(true);
	else if (strcmp(mode, "off") == 0)
		values[1] = BoolGetDatum(false);
	else if (strcmp(mode, "default") == 0)
	{
		values[1] = (Datum) 0;
		nulls[1] = 'n';
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid mode \"%s\" for the marking of purge deletes of container %s",
						mode, ttl_relation_display_name(relid)),
				 errdetail("The modes are 'on', 'off' and 'default' (follow ttl.mark_purge_deletes).")));

	/* never in the middle of a purge batch that marks by the old mode */
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	ttl_registry_execute("UPDATE ttl.registry SET mark_purge_deletes = $2"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	/* a distributed container: its shards and nodes learn it in this transaction */
	CommandCounterIncrement();
	ttl_policy_push(relid);
	PG_RETURN_VOID();
}
