/*
 * registry.c
 *		The registry of containers (table ttl.registry): a backend-local cache
 *		read by the view's filter and purge, reads of it in C, the list of
 *		containers, and the purge/policy lock of a container.  The SQL
 *		functions that change it are in container_admin.c.
 *
 * Locking: each change to the registry sends a relcache invalidation for
 * the container, which is how other backends learn that their cached entry
 * is stale.  A policy change holds the container's purge lock (see
 * container_lock_tag: a lock tag of the extension's own, which no SQL
 * function can take), so it never interleaves with a purge batch that
 * computed its cutoff from the old default; it also holds the container's
 * replace lock, which writers replacing an expired item (rule 10) hold in
 * a mode that conflicts only with it (ttl_lock_container_for_replace).  Purge reads the registry in C
 * (ttl_read_container, ttl_list_containers): no SQL runs to find or read a
 * container, so nothing a user plants in a schema can run there.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
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

#include "base/compat.h"
#include "registry/registry.h"

#define REGISTRY_NATTS 4		/* relid, doc_column, default_ttl, paused */

static HTAB *container_cache = NULL;
static Oid	registry_relid = InvalidOid;

/*
 * The entry the last look-up found (ttl_container_ref): a read through a
 * live view asks for the same container at every execution, and this makes
 * that one comparison instead of a hash probe.  Forgotten at every
 * invalidation, before any entry is removed; dynahash never moves an entry
 * it keeps.
 */
static const TtlContainer *last_entry = NULL;
static Oid	registry_index = InvalidOid;

/*
 * Relcache invalidation: a container changed (or everything did).  Also
 * forget where the registry lives, in case the extension was recreated.
 */
/* A relcache callback (ttl.c registers it): the cached policies go stale. */
void
ttl_registry_invalidate(Datum arg, Oid relid)
{
	last_entry = NULL;
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

/*
 * The extension's tables are locked in one order: ttl.registry first.
 * Every update script's first statement takes it in ACCESS EXCLUSIVE mode
 * (then alters the other tables of ttl), and every purge transaction holds
 * it in ACCESS SHARE mode before it touches any other: the round (the
 * worker's, CALL ttl.run_purge()'s) takes it here at the start of each of
 * its transactions, and a batch, ttl.purge()'s too, reads its policy from
 * it first (begin_batch, the retire step's look).  An upgrade and a purge
 * then wait for each other at that one lock, never each holding what the
 * other waits for.  Without wait, false at once when someone
 * holds it against us (an ALTER EXTENSION ttl UPDATE, a DROP EXTENSION):
 * the worker leaves the database for its next visit rather than queue.
 * True when there is no registry (no extension): nothing to order.
 */
bool
ttl_registry_lock_first(bool wait)
{
	if (!find_registry())
		return true;
	if (wait)
	{
		LockRelationOid(registry_relid, AccessShareLock);
		return true;
	}
	return ConditionalLockRelationOid(registry_relid, AccessShareLock);
}

/* One registry row into *out (the first REGISTRY_NATTS columns). */
static void
deform_container(Relation rel, HeapTuple tup, TtlContainer *out)
{
	Datum	   *values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	bool	   *nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);
	int			home_parts = 0;
	int			i;

	heap_deform_tuple(tup, RelationGetDescr(rel), values, nulls);
	out->relid = DatumGetObjectId(values[0]);
	namestrcpy(&out->doc_column, NameStr(*DatumGetName(values[1])));
	out->default_is_null = nulls[2];
	out->default_ttl = nulls[2] ? 0 : DatumGetInt32(values[2]);
	out->paused = !nulls[3] && DatumGetBool(values[3]);
	out->append_only = false;
	out->index_free = false;
	out->deadline_property[0] = '\0';
	out->held = false;
	out->replace_expired = true;
	out->has_home = false;
	out->home_system = 0;
	out->home_database = InvalidOid;
	out->hold_fraction = 0;
	out->archive = InvalidOid;
	out->purge_window[0] = '\0';
	out->retire = TTL_RETIRE_OFF;
	out->mark_purge_deletes = TTL_MARK_DEFAULT;
	for (i = 0; i < RelationGetDescr(rel)->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

		/* by name: the column arrived in 1.3, after others */
		if (!att->attisdropped && strcmp(NameStr(att->attname), "append_only") == 0)
			out->append_only = !nulls[i] && DatumGetBool(values[i]);
		/* 1.6 */
		if (!att->attisdropped && strcmp(NameStr(att->attname), "index_free") == 0)
			out->index_free = !nulls[i] && DatumGetBool(values[i]);
		/* 1.5: the restore guard's hold (rule 10 replaces nothing then) */
		if (!att->attisdropped && strcmp(NameStr(att->attname), "held_since") == 0)
			out->held = !nulls[i];
		/* 1.7: ttl.set_replace_expired */
		if (!att->attisdropped && strcmp(NameStr(att->attname), "replace_expired") == 0)
			out->replace_expired = nulls[i] || DatumGetBool(values[i]);
		/* 1.5: the restore guard's home (known when both are set) */
		if (!att->attisdropped && !nulls[i] &&
			strcmp(NameStr(att->attname), "home_system_identifier") == 0)
		{
			out->home_system = DatumGetInt64(values[i]);
			home_parts++;
		}
		if (!att->attisdropped && !nulls[i] &&
			strcmp(NameStr(att->attname), "home_database") == 0)
		{
			out->home_database = DatumGetObjectId(values[i]);
			home_parts++;
		}
		if (!att->attisdropped && !nulls[i] &&
			strcmp(NameStr(att->attname), "hold_fraction") == 0)
			out->hold_fraction = DatumGetFloat4(values[i]);
		/* 1.8: ttl.set_archive (archive.c) */
		if (!att->attisdropped && !nulls[i] && strcmp(NameStr(att->attname), "archive") == 0)
			out->archive = DatumGetObjectId(values[i]);
		/* 1.9: ttl.set_purge_window (ttl_window_parse checked it) */
		if (!att->attisdropped && !nulls[i] && strcmp(NameStr(att->attname), "purge_window") == 0)
			strlcpy(out->purge_window, TextDatumGetCString(values[i]),
					sizeof(out->purge_window));
		/* 1.9: ttl.set_retire (an unknown word reads as off) */
		if (!att->attisdropped && !nulls[i] && strcmp(NameStr(att->attname), "retire") == 0)
			(void) ttl_retire_mode_parse(TextDatumGetCString(values[i]), &out->retire);
		/* 1.9: ttl.set_mark_purge_deletes (NULL: follow the setting) */
		if (!att->attisdropped && !nulls[i] &&
			strcmp(NameStr(att->attname), "mark_purge_deletes") == 0)
			out->mark_purge_deletes = DatumGetBool(values[i]) ? TTL_MARK_ON : TTL_MARK_OFF;
		/* 1.5 */
		if (!att->attisdropped && !nulls[i] &&
			strcmp(NameStr(att->attname), "deadline_property") == 0)
			strlcpy(out->deadline_property, TextDatumGetCString(values[i]),
					sizeof(out->deadline_property));
	}
	out->has_home = home_parts == 2;
	pfree(values);
	pfree(nulls);
}

/* The word of ttl.set_retire and ttl.containers.retire for a mode. */
const char *
ttl_retire_mode_name(TtlRetireMode mode)
{
	switch (mode)
	{
		case TTL_RETIRE_DROP:
			return "drop";
		case TTL_RETIRE_DETACH:
			return "detach";
		case TTL_RETIRE_OFF:
			break;
	}
	return "off";
}

/* The mode a word names; false (and off) for any other word. */
bool
ttl_retire_mode_parse(const char *name, TtlRetireMode *mode)
{
	*mode = TTL_RETIRE_OFF;
	if (strcmp(name, "off") == 0)
		return true;
	if (strcmp(name, "drop") == 0)
		*mode = TTL_RETIRE_DROP;
	else if (strcmp(name, "detach") == 0)
		*mode = TTL_RETIRE_DETACH;
	else
		return false;
	return true;
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
 * The registry entry of a table, from the cache when it is fresh, or NULL
 * when the table is not a container.  Only registered tables are cached: a
 * table registered by a restore (COPY into ttl.registry sends no
 * invalidation) is then seen at once.  The entry is the cache's own: it is
 * valid until the next invalidation is processed (any catalog access or
 * lock may process one), so a caller copies what it needs at once.
 */
const TtlContainer *
ttl_container_ref(Oid relid)
{
	TtlContainer *entry;
	TtlContainer c;
	bool		found;

	if (last_entry != NULL && last_entry->relid == relid)
		return last_entry;
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
	if (entry == NULL)
	{
		/* reading the registry may process invalidations: no entry yet */
		if (!read_container(relid, &c))
			return NULL;
		entry = hash_search(container_cache, &relid, HASH_ENTER, &found);
		*entry = c;
	}
	last_entry = entry;
	return entry;
}

/* The registry entry of a table, copied (see ttl_container_ref). */
bool
ttl_lookup_container(Oid relid, TtlContainer *out)
{
	const TtlContainer *entry = ttl_container_ref(relid);

	if (entry == NULL)
		return false;
	*out = *entry;
	return true;
}

char *
ttl_relation_display_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	Oid			nsp = get_rel_namespace(relid);

	if (name == NULL)
		return psprintf("%u", relid);
	return quote_qualified_identifier(get_namespace_name(nsp), name);
}

/*
 * 42P01 for a regclass argument that names no relation (an OID typed or
 * cast, or a table dropped since), before anything opens it.
 */
void
ttl_check_relation_exists(Oid relid)
{
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
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
	if (!ttl_class_ownercheck(relid, GetUserId()))
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		char	   *owner = NULL;

		if (HeapTupleIsValid(tup))
		{
			owner = GetUserNameFromId(((Form_pg_class) GETSTRUCT(tup))->relowner, true);
			ReleaseSysCache(tup);
		}
		/* core's wording, with the name qualified and the rule said */
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of %s %s",
						relkind == RELKIND_RELATION || relkind == RELKIND_PARTITIONED_TABLE ?
						"table" : "relation",
						ttl_relation_display_name(relid)),
				 errhint("Only the owner of %s (role %s) or a member of that role may change its ttl settings or purge it by name.",
						 ttl_relation_display_name(relid),
						 owner != NULL ? quote_identifier(owner) : "?")));
	}
}

/* The registry entry of a table, or 42704 when it is not a container. */
void
ttl_get_container(Oid relid, TtlContainer *c)
{
	if (!ttl_lookup_container(relid, c))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" is not a ttl container",
						ttl_relation_display_name(relid)),
				 errhint("Register it with ttl.enable().")));
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

/*
 * The replace lock of a container (rule 10, replace.c): the same object
 * with objsubid 1.  A writer that replaces an expired item holds it in
 * RowExclusiveLock (writers never block each other) and a policy change in
 * ExclusiveLock, so the two are ordered: a writer judges an item expired
 * under the policy committed when it holds the lock.  Purge never takes it:
 * replacing writers cannot starve the background purge, and a purge batch
 * (which holds the purge lock until its commit) never blocks a writer.
 */
#define CONTAINER_REPLACE_SUBID 1

/*
 * Wait for, and hold until commit, the container's purge/policy lock and
 * its replace lock (a policy change: never in the middle of a purge batch
 * nor of a writer replacing an item by the old policy).
 */
void
ttl_lock_container(Oid relid)
{
	LOCKTAG		tag;

	container_lock_tag(&tag, relid);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	tag.locktag_field4 = CONTAINER_REPLACE_SUBID;
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	/*
	 * Rule 10's floors of its leaves are unknown from now on (before the
	 * change commits; a recompute holds the replace lock, which waits).
	 */
	if (ttl_policy_change_hook != NULL)
		ttl_policy_change_hook(relid);
}

/* ttl.c sets it: rule 10's floors reset (stamp/replace_floor.c). */
void		(*ttl_policy_change_hook) (Oid relid) = NULL;

/*
 * Wait for, and hold until commit, the container's replace lock as a
 * writer replacing an expired item (rule 10): waits only for a policy
 * change in progress.  Taking it processes pending invalidations, so the
 * policy read after it is the one committed now.
 */
void
ttl_lock_container_for_replace(Oid relid)
{
	LOCKTAG		tag;

	container_lock_tag(&tag, relid);
	tag.locktag_field4 = CONTAINER_REPLACE_SUBID;
	if (LockAcquire(&tag, RowExclusiveLock, false, false) != LOCKACQUIRE_ALREADY_CLEAR)
		AcceptInvalidationMessages();
}

/*
 * The container's replace lock as a writer if no policy change holds it:
 * for a recompute of rule 10's floor, which must read the policy committed
 * now (invalidations processed when the lock is new); *was_held: this
 * transaction held it already.  ttl_unlock_container_for_replace gives it
 * back (unless it was held): a recompute does not make a policy change
 * wait for the rest of its transaction.
 */
bool
ttl_try_lock_container_for_replace(Oid relid, bool *was_held)
{
	LOCKTAG		tag;
	LockAcquireResult r;

	container_lock_tag(&tag, relid);
	tag.locktag_field4 = CONTAINER_REPLACE_SUBID;
	r = LockAcquire(&tag, RowExclusiveLock, false, true);
	*was_held = r == LOCKACQUIRE_ALREADY_HELD || r == LOCKACQUIRE_ALREADY_CLEAR;
	if (r == LOCKACQUIRE_NOT_AVAIL)
		return false;
	if (!*was_held)
		AcceptInvalidationMessages();
	return true;
}

void
ttl_unlock_container_for_replace(Oid relid)
{
	LOCKTAG		tag;

	container_lock_tag(&tag, relid);
	tag.locktag_field4 = CONTAINER_REPLACE_SUBID;
	LockRelease(&tag, RowExclusiveLock, false);
}

/* Take the container's lock until commit if nobody holds it. */
bool
ttl_try_lock_container(Oid relid)
{
	LOCKTAG		tag;

	container_lock_tag(&tag, relid);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}
