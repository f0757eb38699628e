/*
 * index_owner.c
 *		Which indexes ttl made: the table ttl.indexes (1.8), one row per
 *		purge or deadline index that ttl.enable, ttl.set_append_only,
 *		ttl.set_deadline_property made, or that a statement of
 *		ttl.upgrade_purge_index_sql / ttl.deadline_index_sql adopted
 *		(ttl._own_index, admin/index_admin.c).  ttl.disable and the
 *		functions that replace an index drop exactly these, never a user's
 *		index of the same shape; using an index for purge needs no record
 *		(purge_key.c recognises the shape).
 *
 * The key: (relid, index_name).  An index OID cannot be kept: a
 * restore gives new OIDs, and restores the extension's configuration
 * tables (pg_extension_config_dump) in the data section, before it
 * creates any index, so a regclass of an index would not even load.  The
 * container is a regclass like ttl.registry.relid (the table exists when
 * the data is loaded; renames of it and of its schema follow by
 * themselves), and an index always lives in its table's schema, so its
 * name identifies it.  Only the index on the container itself is recorded:
 * on a partitioned container the partitions' indexes belong to it (DROP of
 * the partitioned index drops them; ATTACH/DETACH PARTITION attach and
 * detach them), and the purge recognises them by shape.  What keeps the
 * record right: a rename of the index (ttl._ddl_start, at
 * ddl_command_start: the old name is still there to match), a DROP INDEX
 * or DROP TABLE (ttl._on_sql_drop), ttl.disable (ttl._unregister forgets
 * the container's rows).  The comments ttl still writes on its indexes are
 * informative only: pg_dump --no-comments drops them.
 *
 * Rights: every write goes through ttl_registry_execute (as the
 * extension's owner); the callers check ownership of the table first.
 *
 * Locking: none of its own; the row changes in the caller's transaction.
 */
#include "postgres.h"

#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "base/run_as.h"
#include "base/sql_version.h"
#include "registry/index_owner.h"
#include "registry/registry.h"

/* Record that ttl made the index index_name on container relid, for purpose. */
void
ttl_record_index_owner(Oid relid, const char *index_name, const char *purpose)
{
	Oid			argtypes[3] = {OIDOID, NAMEOID, TEXTOID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(relid);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(index_name));
	values[2] = CStringGetTextDatum(purpose);
	ttl_registry_execute("INSERT INTO ttl.indexes (relid, index_name, purpose)"
						 " VALUES ($1, $2, $3) ON CONFLICT (relid, index_name)"
						 " DO UPDATE SET purpose = excluded.purpose",
						 3, argtypes, values, NULL, NULL);
}

/* Forget every index recorded for the container (it is no container any more). */
void
ttl_forget_index_owners(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	if (!ttl_sql_at_least(1, 8))	/* ttl.indexes */
		return;
	values[0] = ObjectIdGetDatum(relid);
	ttl_registry_execute("DELETE FROM ttl.indexes WHERE relid OPERATOR(pg_catalog.=) $1",
						 1, argtypes, values, NULL, NULL);
}

/*
 * An index is about to be renamed (ddl_command_start, where its old name
 * is still in the catalog): its record, if ttl made it, takes the new
 * name.  A rename that fails rolls this back with it.
 */
void
ttl_follow_index_rename(Oid indexid, const char *newname)
{
	Oid			argtypes[3] = {OIDOID, NAMEOID, NAMEOID};
	Datum		values[3];
	Oid			relid;
	char	   *oldname;

	if (!ttl_sql_at_least(1, 8))
		return;
	relid = IndexGetRelation(indexid, true);
	oldname = get_rel_name(indexid);
	if (!OidIsValid(relid) || oldname == NULL || ttl_container_ref(relid) == NULL)
		return;
	values[0] = ObjectIdGetDatum(relid);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(oldname));
	values[2] = DirectFunctionCall1(namein, CStringGetDatum(newname));
	ttl_registry_execute("UPDATE ttl.indexes SET index_name = $3"
						 " WHERE relid OPERATOR(pg_catalog.=) $1"
						 " AND index_name OPERATOR(pg_catalog.=) $2",
						 3, argtypes, values, NULL, NULL);
}
