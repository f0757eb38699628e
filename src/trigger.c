/*
 * trigger.c
 *		ttl.stamp(): the BEFORE INSERT OR UPDATE row trigger of a container.
 *		In one pass over the root of the document it validates "ttl" and
 *		builds the new document with "_ts" set to ttl.now() in Unix seconds.
 *		Also the validation of a single document used by ttl.enable() and
 *		the item functions, with the same errors, and ttl._existing_rows(),
 *		ttl.enable()'s work on the rows already in the table (as its owner).
 *
 * Locking: none beyond the row being written.  The trigger reads nothing
 * but its argument (the document column's name) and the row: it never looks
 * at the registry, so writes cost the same whatever the container's policy.
 * A renamed document column rewrites the argument (ddl_events.c).
 */
#include "ttl.h"

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
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"

static char *
container_name(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

static char *
document_text(Jsonb *doc)
{
	JsonbValue	whole;

	whole.type = jbvBinary;
	whole.val.binary.data = &doc->root;
	whole.val.binary.len = VARSIZE(doc) - VARHDRSZ;
	return ttl_jsonb_value_text(&whole);
}

static void
report_null_document(Relation rel, const char *doc_column)
{
	ereport(ERROR,
			(errcode(ERRCODE_NOT_NULL_VIOLATION),
			 errmsg("document of container \"%s\" is null", container_name(rel)),
			 errdetail("Column \"%s\" of a ttl container must hold a JSON object.",
					   doc_column)));
}

static void
report_not_object(Relation rel, const char *doc_column, Jsonb *doc)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("document of container \"%s\" is not a JSON object: %s",
					container_name(rel), document_text(doc)),
			 errdetail("Column \"%s\" of a ttl container must hold a JSON object.",
					   doc_column)));
}

static void
report_bad_ttl(Relation rel, const JsonbValue *v)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid ttl in container \"%s\": %s",
					container_name(rel), ttl_jsonb_value_text(v)),
			 errdetail("The root property \"ttl\" must be an integer: -1 (never expire) or between 1 and 2147483647 seconds."),
			 errhint("Remove \"ttl\" to inherit the container's default.")));
}

/*
 * Raise the trigger's error if a document could not be written to the
 * container; return quietly otherwise.
 */
void
ttl_validate_document(Relation rel, const char *doc_column, Datum doc, bool isnull)
{
	Jsonb	   *jb;
	JsonbValue	buf;
	JsonbValue *v;
	int32		ttl;

	if (isnull)
		report_null_document(rel, doc_column);
	jb = DatumGetJsonbP(doc);
	if (!JB_ROOT_IS_OBJECT(jb))
		report_not_object(rel, doc_column, jb);
	v = getKeyJsonValueFromContainer(&jb->root, "ttl", 3, &buf);
	if (v != NULL && ttl_item_ttl_value(v, &ttl) != TTL_ITEM_VALID)
		report_bad_ttl(rel, v);
}

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

	report_bad_ttl(rel, v);
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
							container_name(rel))));
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
	if (trigdata->tg_trigger->tgnargs != 1)
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
						doc_column, container_name(rel)),
				 errhint("Run ttl.disable() and ttl.enable() again, naming the document column.")));
	if (TupleDescAttr(tupdesc, attnum - 1)->atttypid != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("document column \"%s\" of container \"%s\" is not of type jsonb",
						doc_column, container_name(rel))));

	doc = heap_getattr(tuple, attnum, tupdesc, &isnull);
	if (isnull)
		report_null_document(rel, doc_column);
	if (!JB_ROOT_IS_OBJECT(DatumGetJsonbP(doc)))
		report_not_object(rel, doc_column, DatumGetJsonbP(doc));

	stamped = stamp_document(rel, DatumGetJsonbP(doc), ttl_current_unix_seconds());
	newdoc = JsonbPGetDatum(stamped);
	isnull = false;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, tupdesc, 1, &attnum,
													 &newdoc, &isnull));
}

/* ttl._validate(container, doc): raise the trigger's error for a bad doc. */
PG_FUNCTION_INFO_V1(ttl_validate_sql);
Datum
ttl_validate_sql(PG_FUNCTION_ARGS)
{
	Relation	rel = relation_open(PG_GETARG_OID(0), AccessShareLock);
	const char *doc_column = PG_ARGISNULL(2) ? "doc" : NameStr(*PG_GETARG_NAME(2));

	ttl_validate_document(rel, doc_column, PG_GETARG_DATUM(1), PG_ARGISNULL(1));
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/*
 * Deferred trigger events queued by the stamping UPDATE would fire at
 * commit, outside the owner's restricted operation, with the rights of
 * whoever commits (PostgreSQL refuses to queue them inside the restricted
 * operation anyway): when that is not the owner, a table (or partition)
 * with deferrable triggers of its own (not the internal ones of foreign
 * keys, which run as the owner) is refused with a clear message.
 */
static void
refuse_deferred_triggers(Oid relid, const char *table)
{
	List	   *rels = find_all_inheritors(relid, AccessShareLock, NULL);
	Relation	trigrel = table_open(TriggerRelationId, AccessShareLock);
	ListCell   *lc;

	foreach(lc, rels)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(lfirst_oid(lc)));
		scan = systable_beginscan(trigrel, TriggerRelidNameIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_trigger trig = (Form_pg_trigger) GETSTRUCT(tup);

			if (trig->tgdeferrable && !trig->tgisinternal)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("ttl.enable() on \"%s\" must be run by the table's owner",
								table),
						 errdetail("Deferrable trigger \"%s\" would fire at commit with the rights of the current user.",
								   NameStr(trig->tgname)),
						 errhint("Run it as role \"%s\" (SET ROLE).",
								 GetUserNameFromId(ttl_table_owner(relid), false))));
		}
		systable_endscan(scan);
	}
	table_close(trigrel, AccessShareLock);
}

/*
 * ttl._existing_rows(container, doc_column, stamp): the work ttl.enable()
 * does on the rows already in the table.  Without stamp: raise the
 * trigger's error for the first document it would refuse.  With stamp:
 * give every document without "_ts" one (an UPDATE that fires the stamping
 * trigger and the owner's other triggers).  Both run as the table's owner
 * inside a security-restricted operation with a pinned search_path, so a
 * superuser enabling someone else's table never runs their code (triggers,
 * functions in index expressions the planner folds) with its own rights.
 */
PG_FUNCTION_INFO_V1(ttl_existing_rows);
Datum
ttl_existing_rows(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	const char *doc_column = NameStr(*PG_GETARG_NAME(1));
	bool		stamp = PG_GETARG_BOOL(2);
	Relation	rel;
	char	   *table;
	const char *col = quote_identifier(doc_column);
	Oid			owner;
	bool		elevated;
	TtlUserContext ctx;
	int			nestlevel = 0;

	ttl_check_container_owner(relid);
	rel = relation_open(relid, AccessShareLock);
	table = container_name(rel);
	owner = ttl_table_owner(relid);

	/*
	 * The owner runs its own triggers as itself (as in 1.0); anyone else
	 * (a superuser, a member of the owning role) has the work done as the
	 * owner in a security-restricted operation.
	 */
	elevated = (GetUserId() != owner);
	if (elevated)
	{
		if (stamp)
			refuse_deferred_triggers(relid, table);
		ttl_become_user(owner, &ctx);
	}
	else
	{
		nestlevel = NewGUCNestLevel();
		(void) set_config_option("search_path", "pg_catalog, pg_temp",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (!stamp)
	{
		char	   *sql = psprintf("SELECT %1$s FROM %2$s WHERE %1$s IS NULL"
								   " OR pg_catalog.jsonb_typeof(%1$s) OPERATOR(pg_catalog.<>) 'object'"
								   " OR (%1$s OPERATOR(pg_catalog.?) 'ttl' AND ttl.doc_ttl(%1$s) IS NULL)"
								   " LIMIT 1", col, table);

		if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "ttl validation scan failed");
		if (SPI_processed == 1)
		{
			bool		isnull;
			Datum		doc = SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull);

			ttl_validate_document(rel, doc_column, doc, isnull);
		}
	}
	else if (SPI_execute(psprintf("UPDATE %2$s SET %1$s = %1$s WHERE ttl.doc_ts(%1$s) IS NULL",
								  col, table), false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ttl stamping update failed");
	SPI_finish();
	if (elevated)
		ttl_restore_user(&ctx);
	else
		AtEOXact_GUC(true, nestlevel);
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
