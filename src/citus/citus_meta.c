/*
 * citus_meta.c
 *		What ttl reads of Citus, found at run time and never linked: whether
 *		its library is loaded in this backend (one of its settings is
 *		defined, not as a placeholder), what it makes of a table
 *		(pg_dist_partition, read by name: kind and colocation group), the
 *		policy a distributed container's stamp trigger carries (citus.c
 *		writes it) with its archive resolved on this node (a shard's is the
 *		archive's colocated shard, 1.8), this node's active placements
 *		(pg_dist_shard, pg_dist_placement, pg_dist_local_group).  Reached from outside src/citus/ only through
 *		the policy door (registry/policy.c), to which ttl.c installs
 *		ttl_citus_ops.  Without Citus every function here answers "not a
 *		Citus table" at once.
 *
 * Locking: AccessShareLock on Citus's catalogs while they are read, and on
 * a table while its triggers are read.
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
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/regproc.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "citus/citus.h"
#include "citus/citus_meta.h"
#include "registry/trigger_args.h"

/*
 * Is Citus's library loaded in this backend (a real setting, no placeholder)?
 * Asked on every read through a live view, so both answers are kept: Citus
 * loads only from shared_preload_libraries, so once those are loaded a
 * "no" is final (before that, for example from another library's _PG_init,
 * it is asked again).
 */
bool
ttl_citus_loaded(void)
{
	static bool known = false;
	static bool loaded = false;
	int			flags;

	if (known)
		return loaded;
	flags = GetConfigOptionFlags("citus.enable_unsafe_triggers", true);
	loaded = flags != 0 && (flags & GUC_CUSTOM_PLACEHOLDER) == 0;
	known = loaded || process_shared_preload_libraries_done;
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
 * Citus's pg_dist_partition row of relid (an index scan; no SQL runs):
 * false when it has none.  *kind is TTL_CITUS_HASH, _REFERENCE or _OTHER,
 * *colocation its colocation group.
 */
static bool
dist_partition_row(Oid relid, char *kind, uint32 *colocation)
{
	Oid			catalog;
	Oid			index;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	if (!ttl_citus_loaded())
		return false;
	catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	index = get_relname_relid("pg_dist_partition_logical_relid_index",
							  PG_CATALOG_NAMESPACE);
	if (!OidIsValid(catalog) || !OidIsValid(index))
		return false;			/* no CREATE EXTENSION citus here */

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
		Datum		group = heap_getattr(tup, attnum_by_name(desc, "colocationid"),
										 desc, &isnull);

		if (method == 'h')
			*kind = TTL_CITUS_HASH;
		else if (repmodel == 't')
			*kind = TTL_CITUS_REFERENCE;
		else
			*kind = TTL_CITUS_OTHER;
		*colocation = isnull ? 0 : DatumGetUInt32(group);
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* What Citus makes of relid: TTL_CITUS_NONE, _HASH, _REFERENCE or _OTHER. */
char
ttl_citus_kind(Oid relid)
{
	char		kind;
	uint32		colocation;

	return dist_partition_row(relid, &kind, &colocation) ? kind : TTL_CITUS_NONE;
}

/*
 * Are two hash-distributed tables colocated (the same colocation group:
 * the same shard count and hash ranges, each range's shards on one node)?
 */
bool
ttl_citus_colocated(Oid a, Oid b)
{
	char		kind_a;
	char		kind_b;
	uint32		group_a;
	uint32		group_b;

	return dist_partition_row(a, &kind_a, &group_a) &&
		dist_partition_row(b, &kind_b, &group_b) &&
		kind_a == TTL_CITUS_HASH && kind_b == TTL_CITUS_HASH &&
		group_a == group_b && group_a != 0;
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
 * such trigger, or one whose arguments carry no policy or do not decode
 * (registry/trigger_args.c; the stamp trigger itself refuses those).  The
 * archive's qualified name (1.8) is returned in *archive_name
 * (palloc'd; NULL for none) and out->archive is left InvalidOid: which
 * relation it is on this node is ttl_piece_archive's to say.
 */
static bool
parse_trigger_policy(Oid relid, TtlContainer *out, char **archive_name)
{
	Relation	rel;
	bool		found = false;
	int			i;

	*archive_name = NULL;
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];
		TtlTriggerArgs args;

		/* a policy takes 3 arguments (format 1) or 4 (format 2) at least */
		if (t->tgnargs < 3 || !is_stamp_function(t->tgfoid) ||
			ttl_trigger_args_parse(t->tgnargs, t->tgargs, &args) != NULL ||
			!args.has_policy)
			continue;
		memset(out, 0, sizeof(*out));
		out->relid = relid;
		out->archive = InvalidOid;
		out->doc_column = args.doc_column;
		out->default_is_null = args.default_is_null;
		out->default_ttl = args.default_ttl;
		out->paused = args.paused;
		strlcpy(out->deadline_property, args.deadline_property, sizeof(out->deadline_property));
		out->mark_purge_deletes = args.mark;
		*archive_name = args.archive;
		found = true;
		break;
	}
	relation_close(rel, AccessShareLock);
	return found;
}

/* The policy a table's stamp trigger carries, without its archive (see above). */
bool
ttl_trigger_policy(Oid relid, TtlContainer *out)
{
	char	   *archive_name;

	return parse_trigger_policy(relid, out, &archive_name);
}

/* The archive a table's stamp trigger names (qualified, as written), or NULL. */
char *
ttl_trigger_archive_name(Oid relid)
{
	TtlContainer policy;
	char	   *archive_name;

	return parse_trigger_policy(relid, &policy, &archive_name) ? archive_name : NULL;
}

/*
 * The distributed table shard shardid belongs to, from pg_dist_shard (an
 * index scan; no SQL runs), or InvalidOid.
 */
static Oid
shard_logical_table(int64 shardid)
{
	Oid			catalog;
	Oid			index;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			logical = InvalidOid;

	catalog = get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE);
	index = get_relname_relid("pg_dist_shard_shardid_index", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(catalog) || !OidIsValid(index))
		return InvalidOid;
	rel = table_open(catalog, AccessShareLock);
	/* a heap attribute number: systable_beginscan maps it to the index's */
	ScanKeyInit(&key, attnum_by_name(RelationGetDescr(rel), "shardid"),
				BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(shardid));
	scan = systable_beginscan(rel, index, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;

		logical = DatumGetObjectId(heap_getattr(tup, attnum_by_name(desc, "logicalrelid"),
												desc, &isnull));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return logical;
}

/*
 * The shard id of rel and the distributed table it belongs to, or 0 when
 * rel is no shard.  Citus names a shard <table>_<shardid>, and when that is
 * too long for NAMEDATALEN, <table cut>_<hash of table>_<shardid>: the shard
 * id at the end leads to the table through pg_dist_shard either way.
 */
static int64
shard_id_of(Relation rel, Oid *logical)
{
	const char *name = RelationGetRelationName(rel);
	const char *us = strrchr(name, '_');
	int64		shardid;

	*logical = InvalidOid;
	if (!ttl_citus_loaded() || us == NULL || us[1] == '\0' ||
		strspn(us + 1, "0123456789") != strlen(us + 1) || strlen(us + 1) > 18)
		return 0;
	shardid = pg_strtoint64(us + 1);
	*logical = shard_logical_table(shardid);
	if (!OidIsValid(*logical) || *logical == RelationGetRelid(rel) ||
		get_rel_namespace(*logical) != RelationGetNamespace(rel))
	{
		*logical = InvalidOid;
		return 0;
	}
	return shardid;
}

/* For messages: the name of the distributed table whose shard rel is, or NULL. */
char *
ttl_citus_shard_table_name(Relation rel)
{
	Oid			logical;
	TtlContainer policy;

	if (!ttl_trigger_policy(RelationGetRelid(rel), &policy) ||
		shard_id_of(rel, &logical) == 0)
		return NULL;
	return get_rel_name(logical);
}

/* The table a qualified name (as the trigger carries it) names here, or InvalidOid. */
Oid
ttl_citus_relation_by_name(const char *qualified)
{
	return RangeVarGetRelid(makeRangeVarFromNameList(ttl_string_to_qualified_name_list(qualified)),
							NoLock, true);
}

/*
 * The name (no schema) of the shard of archive that covers the hash range
 * of shard shardid (pg_dist_shard; shard_name() derives it as Citus does),
 * or NULL.
 */
static char *
colocated_shard_name(int64 shardid, Oid archive)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[2] = {INT8OID, OIDOID};
	Datum		values[2] = {Int64GetDatum(shardid), ObjectIdGetDatum(archive)};
	char	   *result = NULL;

	ttl_spi_connect();
	if (SPI_execute_with_args("SELECT (SELECT n[pg_catalog.array_upper(n, 1)]"
							  "          FROM pg_catalog.parse_ident(pg_catalog.shard_name("
							  "                 a.logicalrelid, a.shardid)) n)"
							  "  FROM pg_catalog.pg_dist_shard c"
							  "  JOIN pg_catalog.pg_dist_shard a"
							  "    ON a.logicalrelid OPERATOR(pg_catalog.=) $2::pg_catalog.regclass"
							  "   AND a.shardminvalue OPERATOR(pg_catalog.=) c.shardminvalue"
							  "   AND a.shardmaxvalue OPERATOR(pg_catalog.=) c.shardmaxvalue"
							  " WHERE c.shardid OPERATOR(pg_catalog.=) $1",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the Citus shards");
	if (SPI_processed == 1)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (name != NULL)
			result = MemoryContextStrdup(caller, name);
	}
	SPI_finish();
	return result;
}

/*
 * The archive of a piece of a distributed container on this node (issue
 * 31): for a shard, the shard of the archive that covers the same hash
 * range, which colocation puts on this node; for the distributed table or
 * its shell, the archive itself.  archive_name is what the stamp trigger
 * carries.  When that is not there (dropped, undistributed, no longer
 * colocated, its shard not on this node): with strict, an error naming
 * both (42P01, 0A000), so that the purge deletes nothing; without it,
 * InvalidOid (for readers: stats, the live view).
 */
static Oid
piece_archive(Relation rel, const char *archive_name, bool strict)
{
	Oid			archive = ttl_citus_relation_by_name(archive_name);
	Oid			logical;
	int64		shardid;
	char	   *shard;
	Oid			result;

	if (!OidIsValid(archive))
	{
		if (!strict)
			return InvalidOid;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("archive %s of distributed container %s does not exist on this node",
						archive_name, RelationGetRelationName(rel)),
				 errdetail("The shards of the container archive into the colocated shards of the archive; nothing is purged while it is missing."),
				 errhint("On the coordinator, set a colocated archive with ttl.set_archive(), or stop archiving with ttl.set_archive(container, NULL).")));
	}
	if (ttl_citus_kind(RelationGetRelid(rel)) == TTL_CITUS_HASH)
		return archive;			/* the table itself, or its shell */
	shardid = shard_id_of(rel, &logical);
	if (shardid == 0 || !ttl_citus_colocated(logical, archive))
	{
		if (!strict)
			return InvalidOid;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive %s of distributed container %s is not colocated with it",
						archive_name,
						OidIsValid(logical) ? get_rel_name(logical) : RelationGetRelationName(rel)),
				 errdetail("Shard %s archives into the shard of the archive that covers the same hash range, on the same node; nothing is purged while there is none.",
						   RelationGetRelationName(rel)),
				 errhint("On the coordinator, distribute the archive with colocate_with => the container, or stop archiving with ttl.set_archive(container, NULL).")));
	}
	shard = colocated_shard_name(shardid, archive);
	result = shard == NULL ? InvalidOid : get_relname_relid(shard, get_rel_namespace(archive));
	if (!OidIsValid(result) && strict)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("shard %s of archive %s is not on this node",
						shard ? shard : "(none)", archive_name),
				 errdetail("Shard %s archives into the shard of the archive that covers the same hash range, on the same node; nothing is purged while it is not here.",
						   RelationGetRelationName(rel))));
	return result;
}

/*
 * The policy of a piece of a distributed container on this node, as the
 * policy door (registry/policy.c) gives it: the stamp trigger's, with the
 * archive resolved on this node (piece_archive: strict for the purge).
 */
static bool
ttl_piece_policy(Oid relid, TtlContainer *out, bool strict)
{
	char	   *archive_name;
	Relation	rel;

	if (!parse_trigger_policy(relid, out, &archive_name))
		return false;
	if (archive_name == NULL)
		return true;
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	out->archive = piece_archive(rel, archive_name, strict);
	relation_close(rel, AccessShareLock);
	return true;
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
	ttl_spi_connect();
	if (SPI_execute_with_args(
							  "SELECT s.logicalrelid::pg_catalog.oid,"
							  "       (SELECT n[pg_catalog.array_upper(n, 1)]"
							  "          FROM pg_catalog.parse_ident(pg_catalog.shard_name("
							  "                 s.logicalrelid, s.shardid)) n)"
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
		char	   *shardname = SPI_getvalue(SPI_tuptable->vals[i],
												 SPI_tuptable->tupdesc, 2);
		Oid			shard;
		TtlContainer policy;

		if (get_rel_name(logical) == NULL || shardname == NULL)
			continue;

		/*
		 * shardname: the shard's name as Citus derives it (shard_name(),
		 * AppendShardIdToName: <table>_<shardid>, and a cut name with a hash
		 * when that is too long), in the table's schema.
		 */
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
 * The Citus half of the policy door (registry/policy.c), installed by ttl.c
 * at load: nothing outside src/citus/ calls Citus code but through it.
 */
const TtlDistributedOps ttl_citus_ops = {
	.loaded = ttl_citus_loaded,
	.kind = ttl_citus_kind,
	.trigger_policy = ttl_piece_policy,
	.piece_table_name = ttl_citus_shard_table_name,
	.local_placements = ttl_citus_local_placements,
	.push_policy = ttl_citus_sync_policy,
	.check_kind = ttl_citus_check_kind,
	.refuse_index_free = ttl_citus_refuse_index_free,
	.refuse_replace_off = ttl_citus_refuse_replace_off,
	.refuse_purge_window = ttl_citus_refuse_purge_window,
	.check_archive = ttl_citus_check_archive,
	.purge = ttl_citus_purge,
};
