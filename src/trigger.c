/*
 * trigger.c
 *		ttl.stamp(): the BEFORE INSERT OR UPDATE row trigger of a container.
 *		In one pass over the root of the document it validates "ttl" and
 *		builds the new document with "_ts" set to ttl.now() in Unix seconds.
 *		Also the validation of a single document used by ttl.enable() and
 *		the item functions, with the same errors.
 *
 * Locking: none beyond the row being written.  The trigger reads nothing
 * but its argument (the document column's name) and the row: it never looks
 * at the registry, so writes cost the same whatever the container's policy.
 */
#include "ttl.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
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

static inline bool
key_is(const JsonbValue *key, const char *name, int len)
{
	return key->val.string.len == len &&
		memcmp(key->val.string.val, name, len) == 0;
}

/*
 * Copy the root object, dropping any client-sent "_ts", checking "ttl" on
 * the way, and append "_ts" = now.  Keys are re-sorted by pushJsonbValue.
 */
static Jsonb *
stamp_document(Relation rel, Jsonb *doc, int64 now_seconds)
{
	JsonbParseState *state = NULL;
	JsonbIterator *it = JsonbIteratorInit(&doc->root);
	JsonbIteratorToken tok;
	JsonbValue	v;
	JsonbValue	key;
	JsonbValue *result;
	bool		skip_value = false;
	bool		is_ttl = false;
	int32		ttl;

	tok = JsonbIteratorNext(&it, &v, true);
	Assert(tok == WJB_BEGIN_OBJECT);
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			skip_value = key_is(&v, "_ts", 3);
			is_ttl = key_is(&v, "ttl", 3);
			if (!skip_value)
				pushJsonbValue(&state, WJB_KEY, &v);
		}
		else if (tok == WJB_VALUE)
		{
			if (is_ttl && ttl_item_ttl_value(&v, &ttl) != TTL_ITEM_VALID)
				report_bad_ttl(rel, &v);
			if (!skip_value)
				pushJsonbValue(&state, WJB_VALUE, &v);
		}
		else if (tok == WJB_END_OBJECT)
			break;
	}

	key.type = jbvString;
	key.val.string.val = "_ts";
	key.val.string.len = 3;
	pushJsonbValue(&state, WJB_KEY, &key);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(now_seconds);
	pushJsonbValue(&state, WJB_VALUE, &v);
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(result);
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
				 errhint("A renamed document column needs ttl.disable() and ttl.enable() again.")));
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
