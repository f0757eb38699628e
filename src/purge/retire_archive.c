/*
 * retire_archive.c
 *		A retired leaf of a container with an archive (ttl.set_archive) goes
 *		into the archive instead of away: attached to it as a partition when
 *		that costs nothing per row (ttl_retire_attach_misfit says whether),
 *		else its rows copied into it as the row purge's deleters copy them
 *		(archive.c's INSERT, through the executor), then dropped.  The
 *		retire step (purge_retire.c) decides, detaches, and calls one or
 *		the other.
 *
 * When attaching is right: ATTACH PARTITION moves no row, so it is only
 * right where the archive would take the rows unchanged and would run
 * nothing on them.  So the archive is partitioned by the same key as the
 * leaf's parent (the leaf's bound means the same there), has no default
 * partition (ATTACH would scan it for rows of the new range), no
 * INSERT trigger (attached rows would skip it), no CHECK constraint and
 * no foreign key (ATTACH would validate them row by row), and is not a
 * container itself (copied rows get a new _ts from its stamp trigger;
 * attached rows would keep the old one and be due at once); the leaf has
 * exactly the archive's columns (names, types, typmods, collations, NOT
 * NULL where the archive has it), an index matching every index of the
 * archive (else ATTACH builds one, reading every row), and a valid CHECK
 * constraint that implies the archive's partition constraint for the
 * leaf's bound (else ATTACH reads every row to prove it: a detached leaf
 * keeps no partition constraint of its own).  Anything else copies.  An
 * ATTACH that fails all the same (a bound that overlaps one of the
 * archive's partitions) is rolled back and the rows are copied.
 *
 * Ownership: the caller runs as the container's owner, and
 * retire_check.c has refused a leaf (or a partitioned table above it) or
 * an archive (any table of its tree) owned by another role: ATTACH needs
 * to own both tables, the copy inserts with the owner's rights.
 *
 * Locking: the caller holds AccessExclusiveLock on the leaf and its
 * parent, and the archive's locks of ttl_archive_check_fit (RowExclusive,
 * ShareUpdateExclusive on its partitioned tables, which ATTACH takes
 * too).  The checks open the archive's indexes AccessShareLock.
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/dependency.h"
#include "catalog/pg_constraint.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "purge/archive.h"
#include "purge/purge_internal.h"
#include "registry/leaf_owner.h"
#include "registry/registry.h"

/* pg_get_partkeydef(relid): "RANGE (created_at)", opclasses and collations named where not the default */
static char *
partition_key_text(Oid relid)
{
	return TextDatumGetCString(DirectFunctionCall1(pg_get_partkeydef, ObjectIdGetDatum(relid)));
}

/* Whether leaf has exactly the archive's columns, by name. */
static const char *
columns_misfit(Relation leaf, Relation archive)
{
	TupleDesc	ldesc = RelationGetDescr(leaf);
	TupleDesc	adesc = RelationGetDescr(archive);
	int			lcount = 0;
	int			acount = 0;
	int			i;

	for (i = 0; i < ldesc->natts; i++)
		if (!TupleDescAttr(ldesc, i)->attisdropped)
			lcount++;
	for (i = 0; i < adesc->natts; i++)
	{
		Form_pg_attribute aatt = TupleDescAttr(adesc, i);
		AttrNumber	lnum;
		Form_pg_attribute latt;

		if (aatt->attisdropped)
			continue;
		acount++;
		lnum = get_attnum(RelationGetRelid(leaf), NameStr(aatt->attname));
		if (lnum <= 0)
			return psprintf("the archive's column \"%s\" is not one of the partition's",
							NameStr(aatt->attname));
		latt = TupleDescAttr(ldesc, lnum - 1);
		if (latt->atttypid != aatt->atttypid || latt->atttypmod != aatt->atttypmod ||
			latt->attcollation != aatt->attcollation)
			return psprintf("column \"%s\" has another type or collation in the archive",
							NameStr(aatt->attname));
		if (aatt->attnotnull && !latt->attnotnull)
			return psprintf("column \"%s\" is NOT NULL in the archive and not in the partition",
							NameStr(aatt->attname));
	}
	if (lcount != acount)
		return "the partition has columns the archive lacks";
	return NULL;
}

/* Whether every index of the archive has a matching one on the leaf (ATTACH would build it). */
static const char *
indexes_misfit(Relation leaf, Relation archive)
{
	List	   *leaf_indexes = RelationGetIndexList(leaf);
	AttrMap    *attmap = ttl_build_attrmap_by_name(RelationGetDescr(leaf),
												   RelationGetDescr(archive));
	ListCell   *al;
	const char *misfit = NULL;

	foreach(al, RelationGetIndexList(archive))
	{
		Relation	aidx = index_open(lfirst_oid(al), AccessShareLock);
		IndexInfo  *ainfo = BuildIndexInfo(aidx);
		bool		aconstraint = OidIsValid(get_index_constraint(RelationGetRelid(aidx)));
		bool		found = false;
		ListCell   *ll;

		foreach(ll, leaf_indexes)
		{
			Relation	lidx = index_open(lfirst_oid(ll), AccessShareLock);

			found = lidx->rd_index->indisvalid &&
				(!aconstraint || OidIsValid(get_index_constraint(RelationGetRelid(lidx)))) &&
				CompareIndexInfo(BuildIndexInfo(lidx), ainfo,
								 lidx->rd_indcollation, aidx->rd_indcollation,
								 lidx->rd_opfamily, aidx->rd_opfamily, attmap);
			index_close(lidx, AccessShareLock);
			if (found)
				break;
		}
		if (!found)
			misfit = psprintf("the archive's index %s has no match on the partition",
							  quote_identifier(RelationGetRelationName(aidx)));
		index_close(aidx, AccessShareLock);
		if (misfit != NULL)
			break;
	}
	return misfit;
}

/*
 * Whether a valid CHECK constraint of the leaf (or its NOT NULLs) implies
 * the partition constraint that ATTACH would prove for bound (the leaf's
 * own, from pg_class.relpartbound) under the archive, as ATTACH builds it
 * (tablecmds.c, ATExecAttachPartition).
 */
static bool
bound_implied(Relation leaf, Relation archive)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(leaf)));
	Datum		datum;
	bool		isnull;
	PartitionBoundSpec *spec;
	List	   *qual;

	if (!HeapTupleIsValid(tuple))
		return false;
	datum = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
	{
		ReleaseSysCache(tuple);
		return false;
	}
	spec = castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(datum)));
	ReleaseSysCache(tuple);
	if (spec->is_default)
		return false;
	qual = list_concat(get_qual_from_partbound(archive, spec),
					   RelationGetPartitionQual(archive));
	if (qual == NIL)
		return true;
	qual = (List *) eval_const_expressions(NULL, (Node *) qual);
	qual = (List *) canonicalize_qual((Expr *) qual, true);
	qual = list_make1(make_ands_explicit(qual));
	qual = map_partition_varattnos(qual, 1, leaf, archive);
	return PartConstraintImpliedByRelConstraint(leaf, qual);
}

/*
 * NULL when leaf (still a partition of the container's tree) can be
 * attached to archive without ATTACH reading a row of it, else why not:
 * its rows are then copied.  See the file header.
 */
const char *
ttl_retire_attach_misfit(Oid archive, Oid leaf)
{
	Relation	arel;
	Relation	lrel;
	TriggerDesc *trig;
	const char *misfit = NULL;
	Oid			parent = get_partition_parent(leaf, false);

	if (get_rel_relkind(archive) != RELKIND_PARTITIONED_TABLE)
		return "the archive is not partitioned";
	if (ttl_container_ref(archive) != NULL)
		return "the archive is itself a container (a copied row gets a new _ts there)";
	arel = relation_open(archive, NoLock);
	lrel = table_open(leaf, NoLock);
	trig = arel->trigdesc;
	if (trig != NULL &&
		(trig->trig_insert_before_row || trig->trig_insert_after_row ||
		 trig->trig_insert_instead_row || trig->trig_insert_before_statement ||
		 trig->trig_insert_after_statement || trig->trig_insert_new_table))
		misfit = "the archive has INSERT triggers, which attached rows would skip";
	else if (arel->rd_rel->relchecks > 0)
		misfit = "the archive has CHECK constraints, which ATTACH would check row by row";
	else if (RelationGetFKeyList(arel) != NIL)
		misfit = "the archive has foreign keys, which ATTACH would check row by row";
	else if (OidIsValid(get_default_oid_from_partdesc(RelationGetPartitionDesc(arel, true))))
		misfit = "the archive has a default partition, which ATTACH would scan";
	else if (strcmp(partition_key_text(parent), partition_key_text(archive)) != 0)
		misfit = "the archive is not partitioned by the same key as the partition's parent";
	else if ((misfit = columns_misfit(lrel, arel)) != NULL)
		;
	else if ((misfit = indexes_misfit(lrel, arel)) != NULL)
		;
	else if (!bound_implied(lrel, arel))
		misfit = "no CHECK constraint of the partition implies its bound, which ATTACH would check row by row";
	table_close(lrel, NoLock);
	relation_close(arel, NoLock);
	return misfit;
}

/* ALTER TABLE archive ATTACH PARTITION leaf <bound>: leaf is detached already. */
void
ttl_retire_attach(Oid archive, Oid leaf, const char *bound)
{
	char	   *sql = psprintf("ALTER TABLE %s ATTACH PARTITION %s %s",
							   quote_qualified_identifier(get_namespace_name(get_rel_namespace(archive)),
														  get_rel_name(archive)),
							   quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
														  get_rel_name(leaf)),
							   bound);

	ttl_spi_connect();
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not attach a retired partition to its archive");
	SPI_finish();
}

/*
 * The rows of leaf (detached, held AccessExclusiveLock) inserted into
 * container's archive by the purge's own INSERT (archive.c); how many.
 * Every row must arrive (ttl_archive_check_count: an archive's BEFORE
 * INSERT trigger returning NULL would drop one), or the step fails and the
 * leaf stays where it was.
 */
int64
ttl_retire_copy(Oid container, Oid archive, Oid leaf)
{
	char	   *from = ttl_only_name(leaf);
	int64		rows;
	int64		archived;
	bool		isnull;

	ttl_spi_connect();
	if (SPI_execute(psprintf("SELECT pg_catalog.count(*) FROM %s", from), true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the rows of a retired partition");
	rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	(void) ttl_archive_execute(container, archive,
							   ttl_archive_insert_sql(container, archive, from),
							   0, NULL, NULL, NULL, 0);
	archived = (int64) SPI_processed;
	SPI_finish();
	ttl_archive_check_count(container, archive, rows, archived);
	return rows;
}
