/*
 * stamp_row.c
 *		The stamped row: the trigger's row with its document replaced by the
 *		stamped one (stamp.c makes the document).
 *
 * Locking: none; pure memory.  The common shape (document last, nothing
 * out of line) is rebuilt by copying the bytes that precede the document,
 * any other through heap_deform_tuple / heap_form_tuple; both give the row
 * heap_modify_tuple would (regress stamping compares stored rows of every
 * shape with the same values stored without a trigger).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "utils/jsonb.h"

#include "stamp/stamp_row.h"

/* Rows up to this many columns are rebuilt without palloc. */
#define STAMP_STACK_COLUMNS 64

/*
 * The row with its document replaced: heap_modify_tuple_by_cols, less its
 * two allocations per row.
 */
static HeapTuple
replace_document(HeapTuple tuple, TupleDesc tupdesc, int attnum, Datum newdoc)
{
	Datum		stack_values[STAMP_STACK_COLUMNS];
	bool		stack_nulls[STAMP_STACK_COLUMNS];
	Datum	   *values = stack_values;
	bool	   *nulls = stack_nulls;
	HeapTuple	result;

	if (tupdesc->natts > STAMP_STACK_COLUMNS)
	{
		values = palloc(sizeof(Datum) * tupdesc->natts);
		nulls = palloc(sizeof(bool) * tupdesc->natts);
	}
	heap_deform_tuple(tuple, tupdesc, values, nulls);
	values[attnum - 1] = newdoc;
	nulls[attnum - 1] = false;
	result = heap_form_tuple(tupdesc, values, nulls);
	/* what heap_modify_tuple keeps of the old row */
	result->t_data->t_ctid = tuple->t_data->t_ctid;
	result->t_self = tuple->t_self;
	result->t_tableOid = tuple->t_tableOid;
	if (values != stack_values)
	{
		pfree(values);
		pfree(nulls);
	}
	return result;
}

/*
 * The common row shape, rebuilt without deforming and forming it: the
 * document is the row's last column and the row holds no out-of-line
 * value.  Everything before the document (header, null bitmap, the other
 * columns with their padding) is copied as it lies, and the new document
 * goes where heap_form_tuple would put it: with a short header when it
 * fits and the column may be packed, else aligned.  The header is left as
 * heap_modify_tuple leaves it.  false: any other shape (the general path).
 */
static bool
replace_last_document(HeapTuple tuple, TupleDesc tupdesc, int attnum, Jsonb *newdoc,
					  HeapTuple *result)
{
	Form_pg_attribute att = TupleDescAttr(tupdesc, attnum - 1);
	HeapTupleHeader old = tuple->t_data;
	char	   *old_data = (char *) old + old->t_hoff;
	char	   *doc;
	bool		isnull;
	Size		old_off;
	Size		new_off;
	Size		doc_size;
	Size		len;
	bool		pack;
	HeapTuple	t;
	HeapTupleHeader td;
	char	   *dest;

	if (attnum != tupdesc->natts || HeapTupleHasExternal(tuple) ||
		HeapTupleHeaderGetNatts(old) != tupdesc->natts)
		return false;
	doc = DatumGetPointer(heap_getattr(tuple, attnum, tupdesc, &isnull));
	if (isnull || VARATT_IS_EXTERNAL(doc) || VARATT_IS_COMPRESSED(doc))
		return false;
	/* heap_fill_tuple's rule for a varlena column */
	pack = att->attstorage != TYPSTORAGE_PLAIN && VARATT_CAN_MAKE_SHORT(newdoc);
	old_off = doc - old_data;
	if (VARATT_IS_SHORT(doc))
		/* unaligned: the previous column ends right where it starts */
		new_off = pack ? old_off : att_align_nominal(old_off, att->attalign);
	else if (!pack)
		new_off = old_off;		/* aligned before, aligned again */
	else
		return false;			/* where the previous column ends is not known */

	doc_size = pack ? VARATT_CONVERTED_SHORT_SIZE(newdoc) : VARSIZE(newdoc);
	len = old->t_hoff + new_off + doc_size;
	t = (HeapTuple) palloc0(HEAPTUPLESIZE + len);
	t->t_len = len;
	t->t_self = tuple->t_self;
	t->t_tableOid = tuple->t_tableOid;
	td = t->t_data = (HeapTupleHeader) ((char *) t + HEAPTUPLESIZE);
	memcpy(td, old, old->t_hoff + old_off);
	/* a formed row's header: heap_form_tuple's fields, the old row's ctid */
	HeapTupleHeaderSetDatumLength(td, len);
	HeapTupleHeaderSetTypeId(td, tupdesc->tdtypeid);
	HeapTupleHeaderSetTypMod(td, tupdesc->tdtypmod);
	td->t_infomask &= HEAP_HASNULL;
	td->t_infomask |= HEAP_HASVARWIDTH;
	td->t_infomask2 = 0;
	HeapTupleHeaderSetNatts(td, tupdesc->natts);
	dest = (char *) td + old->t_hoff + new_off;
	if (pack)
	{
		SET_VARSIZE_SHORT(dest, doc_size);
		memcpy(dest + 1, VARDATA(newdoc), doc_size - 1);
	}
	else
		memcpy(dest, newdoc, doc_size);
	*result = t;
	return true;
}

/* The row with its document replaced by newdoc. */
HeapTuple
ttl_stamp_row(HeapTuple tuple, TupleDesc tupdesc, int attnum, Jsonb *newdoc)
{
	HeapTuple	result;

	if (replace_last_document(tuple, tupdesc, attnum, newdoc, &result))
		return result;
	return replace_document(tuple, tupdesc, attnum, JsonbPGetDatum(newdoc));
}
