/*
 * stamp.c
 *		Where a row is stamped: ttl.stamp(), the BEFORE INSERT OR UPDATE row
 *		trigger of a container.  In one pass over the root of the document it
 *		validates "ttl" and builds the new document with "_ts" set to
 *		ttl.now() in Unix seconds.
 *
 * Locking: none beyond the row being written.  The trigger reads nothing
 * but its first argument (the document column's name) and the row (on a
 * Citus table it carries the policy in two more arguments, citus.c): it never looks
 * at the registry, so writes cost the same whatever the container's policy.
 * A renamed document column rewrites the argument (ddl_events.c).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "document.h"
#include "settings.h"

/*
 * Build the stamped document by splicing the binary form: copy every root
 * key and value of the input as raw bytes, drop a client-sent "_ts", insert
 * "_ts" = now at its sorted place, and rewrite only the root's JEntry array.
 * Nested containers are never decoded (pushJsonbValue would unpack and
 * re-encode all of them), which makes stamping cost O(root keys + bytes).
 *
 * The layout (utils/jsonb.h): header, 2n JEntries (n keys in sorted order,
 * then their n values), then key bytes, then value bytes.  Numerics and
 * containers start INTALIGN'ed and their padding counts in the length of
 * the entry; every JB_OFFSET_STRIDE'th JEntry holds an end offset instead
 * of a length.  The root "ttl" is validated on the way.
 */
static int
ts_key_compare(const char *key, uint32 len)
{
	/* jsonb key order: shorter first, then bytewise */
	if (len != 3)
		return (len < 3) ? -1 : 1;
	return memcmp(key, "_ts", 3);
}

typedef struct SpliceEntry
{
	const char *data;			/* raw bytes, without alignment padding */
	uint32		len;
	uint32		type;			/* JENTRY_IS* */
} SpliceEntry;

static SpliceEntry
source_entry(JsonbContainer *root, int index, const char *base)
{
	SpliceEntry e;
	uint32		off = getJsonbOffset(root, index);
	uint32		len = getJsonbLength(root, index);
	uint32		type = root->children[index] & JENTRY_TYPEMASK;

	if (type == JENTRY_ISNUMERIC || type == JENTRY_ISCONTAINER)
	{
		/* skip the padding that aligned it in the source */
		len -= INTALIGN(off) - off;
		off = INTALIGN(off);
	}
	e.data = base + off;
	e.len = len;
	e.type = type;
	return e;
}

static void
add_ts_entry(SpliceEntry *keys, SpliceEntry *values, int *m, Numeric ts_value)
{
	keys[*m].data = "_ts";
	keys[*m].len = 3;
	keys[*m].type = JENTRY_ISSTRING;
	values[*m].data = (const char *) ts_value;
	values[*m].len = VARSIZE(ts_value);
	values[*m].type = JENTRY_ISNUMERIC;
	(*m)++;
}

static void
report_bad_root_ttl(Relation rel, Jsonb *doc)
{
	JsonbValue	buf;
	JsonbValue *v = getKeyJsonValueFromContainer(&doc->root, "ttl", 3, &buf);

	ttl_report_bad_ttl(rel, v);
}

static Jsonb *
stamp_document(Relation rel, Jsonb *doc, int64 now_seconds)
{
	JsonbContainer *root = &doc->root;
	int			n = JsonContainerSize(root);
	const char *base = (const char *) &root->children[2 * n];
	Numeric		ts_value = int64_to_numeric(now_seconds);
	SpliceEntry *keys;
	SpliceEntry *values;
	int			m = 0;
	int			i;
	int			j;
	bool		ts_placed = false;
	Size		size;
	Jsonb	   *result;
	JEntry	   *entries;
	char	   *out;
	char	   *data;
	uint32		total;

	keys = palloc(sizeof(SpliceEntry) * (n + 1));
	values = palloc(sizeof(SpliceEntry) * (n + 1));
	for (i = 0; i < n; i++)
	{
		SpliceEntry key = source_entry(root, i, base);
		SpliceEntry value = source_entry(root, i + n, base);
		int			cmp = ts_key_compare(key.data, key.len);

		if (cmp == 0)
			continue;			/* a client-sent _ts never survives */
		if (key.len == 3 && memcmp(key.data, "ttl", 3) == 0)
		{
			int64		ttl;

			if (value.type != JENTRY_ISNUMERIC ||
				!ttl_numeric_to_int64((Numeric) value.data, &ttl) ||
				!ttl_is_valid_ttl(ttl))
				report_bad_root_ttl(rel, doc);
		}
		if (!ts_placed && cmp > 0)
		{
			add_ts_entry(keys, values, &m, ts_value);
			ts_placed = true;
		}
		keys[m] = key;
		values[m] = value;
		m++;
	}
	if (!ts_placed)
		add_ts_entry(keys, values, &m, ts_value);

	/* upper bound: every value may need up to 3 bytes of padding */
	size = VARHDRSZ + sizeof(uint32) + 2 * m * sizeof(JEntry);
	for (i = 0; i < m; i++)
		size += keys[i].len + values[i].len + 3;
	result = palloc(size);
	result->root.header = JB_FOBJECT | m;
	entries = result->root.children;
	data = (char *) &entries[2 * m];
	out = data;
	total = 0;
	for (j = 0; j < 2 * m; j++)
	{
		SpliceEntry *e = (j < m) ? &keys[j] : &values[j - m];
		uint32		start = total;

		if (e->type == JENTRY_ISNUMERIC || e->type == JENTRY_ISCONTAINER)
		{
			/* data starts 4-aligned within the palloc'd varlena */
			while ((out - (char *) result) % sizeof(int32) != 0)
			{
				*out++ = '\0';
				total++;
			}
		}
		memcpy(out, e->data, e->len);
		out += e->len;
		total += e->len;
		if (total > JENTRY_OFFLENMASK)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("stamped document of container \"%s\" exceeds the maximum jsonb size",
							ttl_container_name(rel))));
		if (j % JB_OFFSET_STRIDE == 0)
			entries[j] = e->type | JENTRY_HAS_OFF | total;
		else
			entries[j] = e->type | (total - start);
	}
	SET_VARSIZE(result, out - (char *) result);
	pfree(keys);
	pfree(values);
	return result;
}

PG_FUNCTION_INFO_V1(ttl_stamp);
Datum
ttl_stamp(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	tupdesc;
	HeapTuple	tuple;
	const char *doc_column;
	int			attnum;
	Datum		doc;
	bool		isnull;
	Jsonb	   *stamped;
	Datum		newdoc;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("ttl.stamp() must be called as a trigger")));
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("ttl.stamp() must be fired BEFORE INSERT OR UPDATE FOR EACH ROW")));
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		tuple = trigdata->tg_trigtuple;
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		tuple = trigdata->tg_newtuple;
	else
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("ttl.stamp() must be fired for INSERT or UPDATE")));
	/* a container on Citus: (doc column, default_ttl, paused), see citus.c */
	if (trigdata->tg_trigger->tgnargs != 1 && trigdata->tg_trigger->tgnargs != 3)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("ttl.stamp() takes one argument, the document column")));

	rel = trigdata->tg_relation;
	tupdesc = RelationGetDescr(rel);
	doc_column = trigdata->tg_trigger->tgargs[0];
	attnum = SPI_fnumber(tupdesc, doc_column);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("document column \"%s\" of container \"%s\" does not exist",
						doc_column, ttl_container_name(rel)),
				 errhint("Run ttl.disable() and ttl.enable() again, naming the document column.")));
	if (TupleDescAttr(tupdesc, attnum - 1)->atttypid != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("document column \"%s\" of container \"%s\" is not of type jsonb",
						doc_column, ttl_container_name(rel))));

	doc = heap_getattr(tuple, attnum, tupdesc, &isnull);
	if (isnull)
		ttl_report_null_document(rel, doc_column);
	if (!JB_ROOT_IS_OBJECT(DatumGetJsonbP(doc)))
		ttl_report_not_object(rel, doc_column, DatumGetJsonbP(doc));

	stamped = stamp_document(rel, DatumGetJsonbP(doc), ttl_current_unix_seconds());
	newdoc = JsonbPGetDatum(stamped);
	isnull = false;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, tupdesc, 1, &attnum,
													 &newdoc, &isnull));
}
