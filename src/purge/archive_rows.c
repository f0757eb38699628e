/*
 * archive_rows.c
 *		Archive before purge (1.8) on the direct deleter: the copies of
 *		the rows a direct batch deletes (purge_rows.c, ttl_direct_delete_row),
 *		each as the container's row type (a partition whose columns are in
 *		another order, or that has dropped columns, converted by name), and
 *		their INSERT into the archive through the executor, in chunks of at
 *		most TTL_ARCHIVE_CHUNK_BYTES, in the transaction of their deletes:
 *		INSERT INTO archive (cols) SELECT cols FROM pg_catalog.unnest($1)
 *		with $1 an array of the container's row type (archive.c writes it).
 *		The archive's triggers, constraints and, when it is a container,
 *		ttl's stamp trigger run there; an error (named by archive.c's
 *		ttl_archive_execute: the container, the archive, the constraint's
 *		key or the trigger's message) fails the batch, whose deletes roll
 *		back with it: a row is in the container or in the archive, never
 *		both, never neither.
 *
 * Locking: the caller's (purge_direct.c): RowExclusiveLock on the container
 * and its leaves, and on the archive (taken by begin_batch when it checked
 * the fit), as the container's owner, SPI connected.  The copies are made
 * while the deleted row version is still pinned in the row source's slot.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tupconvert.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "purge/archive.h"
#include "purge/progress.h"

/* the copies held before they are inserted: about 8 MB */
#define TTL_ARCHIVE_CHUNK_BYTES (8 * 1024 * 1024)

/* One leaf's conversion to the container's row type (NULL: the same layout). */
typedef struct LeafMap
{
	Oid			leaf;
	TupleConversionMap *map;
} LeafMap;

struct TtlArchiveRows
{
	Oid			container;
	Oid			archive;
	Oid			rowtype;		/* the container's row type, */
	Oid			arraytype;		/* and its array type ($1) */
	int16		typlen;
	bool		typbyval;
	char		typalign;
	TupleDesc	desc;			/* the container's columns */
	char	   *sql;			/* the INSERT (archive.c) */
	MemoryContext cxt;			/* this, the maps, the statement */
	MemoryContext chunk_cxt;	/* the copies of one chunk */
	LeafMap    *maps;
	int			nmaps;
	Datum	   *rows;			/* the copies, in chunk_cxt */
	int			nrows;
	int			maxrows;
	Size		bytes;
};

/*
 * Begin archiving the rows of one direct batch of container into archive
 * (the caller checked its fit under the batch's locks).
 */
TtlArchiveRows *
ttl_archive_rows_begin(Oid container, Oid archive)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl archive rows",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	TtlArchiveRows *rows = palloc0(sizeof(TtlArchiveRows));
	Relation	rel;

	rows->cxt = cxt;
	rows->container = container;
	rows->archive = archive;
	rows->rowtype = get_rel_type_id(container);
	rows->arraytype = get_array_type(rows->rowtype);
	if (!OidIsValid(rows->rowtype) || !OidIsValid(rows->arraytype))
		elog(ERROR, "container %u has no row type or array type", container);
	get_typlenbyvalalign(rows->rowtype, &rows->typlen, &rows->typbyval, &rows->typalign);
	rel = table_open(container, NoLock);	/* locked by the batch */
	rows->desc = CreateTupleDescCopy(RelationGetDescr(rel));
	rows->desc->tdtypeid = rows->rowtype;
	rows->desc->tdtypmod = -1;
	table_close(rel, NoLock);
	rows->sql = ttl_archive_insert_sql(container, archive, "pg_catalog.unnest($1) r");
	rows->chunk_cxt = AllocSetContextCreate(cxt, "ttl archive chunk", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(old);
	return rows;
}

/* leaf's conversion to the container's row type, made once per batch */
static TupleConversionMap *
leaf_map(TtlArchiveRows *rows, Relation leaf)
{
	Oid			leafid = RelationGetRelid(leaf);
	MemoryContext old;
	int			i;

	if (leafid == rows->container)
		return NULL;
	for (i = 0; i < rows->nmaps; i++)
		if (rows->maps[i].leaf == leafid)
			return rows->maps[i].map;
	old = MemoryContextSwitchTo(rows->cxt);
	rows->maps = rows->nmaps == 0 ? palloc(sizeof(LeafMap)) :
		repalloc(rows->maps, sizeof(LeafMap) * (rows->nmaps + 1));
	rows->maps[rows->nmaps].leaf = leafid;
	rows->maps[rows->nmaps].map = convert_tuples_by_name(RelationGetDescr(leaf), rows->desc);
	MemoryContextSwitchTo(old);
	return rows->maps[rows->nmaps++].map;
}

/*
 * Keep a copy of the row version in slot (of leaf, just deleted) as the
 * container's row type; insert the chunk when it is full.
 */
void
ttl_archive_rows_add(TtlArchiveRows *rows, Relation leaf, TupleTableSlot *slot)
{
	TupleConversionMap *map = leaf_map(rows, leaf);
	int			natts = rows->desc->natts;
	Datum	   *values;
	bool	   *nulls;
	HeapTuple	tuple;
	Datum		value;
	MemoryContext old;
	int			i;

	slot_getallattrs(slot);
	old = MemoryContextSwitchTo(rows->chunk_cxt);
	if (map == NULL)
	{
		values = slot->tts_values;
		nulls = slot->tts_isnull;
	}
	else
	{
		/* by name: a column the leaf lacks (dropped in the container) is NULL */
		values = palloc(sizeof(Datum) * natts);
		nulls = palloc(sizeof(bool) * natts);
		for (i = 0; i < natts; i++)
		{
			AttrNumber	from = map->attrMap->attnums[i];

			values[i] = from > 0 ? slot->tts_values[from - 1] : (Datum) 0;
			nulls[i] = from > 0 ? slot->tts_isnull[from - 1] : true;
		}
	}
	tuple = heap_form_tuple(rows->desc, values, nulls);
	if (rows->nrows == rows->maxrows)
	{
		rows->maxrows = rows->maxrows == 0 ? 256 : rows->maxrows * 2;
		rows->rows = rows->nrows == 0 ? palloc(sizeof(Datum) * rows->maxrows) :
			repalloc(rows->rows, sizeof(Datum) * rows->maxrows);
	}
	/* a composite value holds no TOAST pointer: HeapTupleGetDatum flattens */
	value = HeapTupleGetDatum(tuple);
	if (DatumGetPointer(value) != (Pointer) tuple->t_data)
		heap_freetuple(tuple);	/* flattened: a copy */
	rows->rows[rows->nrows++] = value;
	rows->bytes += VARSIZE(DatumGetPointer(value));
	MemoryContextSwitchTo(old);
	if (rows->bytes >= TTL_ARCHIVE_CHUNK_BYTES)
		ttl_archive_rows_flush(rows);
}

/*
 * Insert the copies kept so far into the archive, through the executor, in
 * the caller's transaction (SPI connected); an error names the container
 * and the archive (archive.c) and fails the batch.
 */
void
ttl_archive_rows_flush(TtlArchiveRows *rows)
{
	ArrayType  *array;
	Datum		arg;
	MemoryContext old;

	if (rows->nrows == 0)
		return;
	old = MemoryContextSwitchTo(rows->chunk_cxt);
	array = construct_array(rows->rows, rows->nrows, rows->rowtype, rows->typlen,
							rows->typbyval, rows->typalign);
	arg = PointerGetDatum(array);
	MemoryContextSwitchTo(old);
	/* every copy into the archive, or the batch fails (archive.c) */
	ttl_progress_phase(TTL_PHASE_ARCHIVING);
	if (ttl_archive_execute(rows->container, rows->archive, rows->sql, 1, &rows->arraytype,
							&arg, NULL, 0) != SPI_OK_INSERT)
		ttl_archive_check_count(rows->container, rows->archive, rows->nrows, 0);
	ttl_progress_phase(TTL_PHASE_DELETING);
	ttl_archive_check_count(rows->container, rows->archive, rows->nrows,
							(int64) SPI_processed);
	MemoryContextReset(rows->chunk_cxt);
	rows->rows = NULL;
	rows->nrows = 0;
	rows->maxrows = 0;
	rows->bytes = 0;
}

/* Insert what is left and free the batch's copies. */
void
ttl_archive_rows_end(TtlArchiveRows *rows)
{
	ttl_archive_rows_flush(rows);
	MemoryContextDelete(rows->cxt);
}
