/*
 * archive_admin.c
 *		ttl.set_archive(container, archive) (1.8): where a
 *		container's purge moves its rows before deleting them, kept in
 *		ttl.registry.archive (a regclass: pg_dump writes it by name and a
 *		restore reads it back by name, as it does relid).  The fit of the
 *		archive is purge's to define (archive.c, checked again before every
 *		purge statement); this file adds what only the setting checks: the
 *		caller owns the container, the chain of archives does not lead back
 *		to it, and, for a distributed container, that its archive is a
 *		distributed table colocated with it (0A000, asked through the
 *		policy door); the policy is then pushed to the container's pieces,
 *		which name the archive (each node finds its colocated pieces).
 *
 * Locking: the container's purge and replace locks (ttl_lock_container),
 * held to commit, so no purge batch or rule 10 write runs by the old
 * setting; RowExclusiveLock on the archive (archive.c), so its definition
 * does not change under the check; for a distributed container, what the
 * policy push takes (registry/policy.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "base/run_as.h"
#include "purge/archive.h"
#include "registry/policy.h"
#include "registry/registry.h"

/* The longest chain of archives followed before giving up (a loop check). */
#define ARCHIVE_CHAIN_MAX 1000

/*
 * 0A000 when following the archive's own archive, and so on, leads back
 * to the container: each purge would move rows round in a circle.
 */
static void
check_chain(Oid container, Oid archive)
{
	Oid			next = archive;
	int			steps = 0;
	TtlContainer c;

	while (OidIsValid(next) && steps++ < ARCHIVE_CHAIN_MAX)
	{
		if (next == container)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("archive %s of container %s leads back to the container",
							ttl_relation_display_name(archive),
							ttl_relation_display_name(container)),
					 errdetail("The archive is a container whose chain of archives ends at %s: purged rows would go round in a circle.",
							   ttl_relation_display_name(container))));
		if (!ttl_read_container(next, &c))
			return;
		next = c.archive;
	}
}

/*
 * ttl.set_archive(container, archive): from now on every purge of the
 * container inserts each deleted row into archive in the same statement;
 * NULL stops archiving.  Owner of the container only; a misfit is refused
 * and nothing changes.
 */
PG_FUNCTION_INFO_V1(ttl_set_archive);
Datum
ttl_set_archive(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			archive = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
	TtlContainer c;
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		values[2];

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container must not be null")));
	relid = PG_GETARG_OID(0);
	ttl_check_relation_exists(relid);
	ttl_check_container_owner(relid);
	ttl_get_container(relid, &c);
	if (OidIsValid(archive))
	{
		ttl_check_relation_exists(archive);
		/* Citus: a distributed container's archive is colocated with it (policy.c) */
		ttl_policy_check_archive(relid, archive);
		(void) ttl_archive_check_fit(relid, archive, false);
		check_chain(relid, archive);
	}
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = ObjectIdGetDatum(archive);
	ttl_registry_execute("UPDATE ttl.registry SET archive = $2::pg_catalog.regclass"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, OidIsValid(archive) ? NULL : " n", NULL);
	CacheInvalidateRelcacheByRelid(relid);
	/* a distributed container: its shards' triggers name the archive (the policy door) */
	ttl_policy_push(relid);
	PG_RETURN_VOID();
}
