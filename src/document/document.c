/*
 * document.c
 *		Reading "_ts" and "ttl" out of a jsonb document without raising, the
 *		index accessors ttl.doc_ts() and ttl.doc_ttl(), and the validation of
 *		a document (ttl._validate()) with the same errors as the stamping
 *		trigger (stamp.c), shared by it, ttl.enable() and ttl.state().
 *
 * Locking: none.  Nothing here may raise on document content except the
 * validation, which does so on purpose: the view's filter and the index
 * accessors must accept any document, including rows written before the
 * trigger existed.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "document/document.h"
#include "document/document_read.h"
#include "registry/policy.h"
#include "registry/registry.h"

/* Classify a root "ttl" value: -1 and 1..INT32_MAX are the valid ones. */
TtlItemState
ttl_item_ttl_value(const JsonbValue *v, int32 *ttl)
{
	int64		n;

	if (v->type != jbvNumeric ||
		!ttl_numeric_to_int64(v->val.numeric, &n) ||
		!ttl_is_valid_ttl(n))
		return TTL_ITEM_INVALID;
	*ttl = (int32) n;
	return TTL_ITEM_VALID;
}

/* A JSON value as text for an error message, cut to a readable length. */
char *
ttl_jsonb_value_text(const JsonbValue *v)
{
	char	   *text;

	if (v->type == jbvBinary)
		text = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	else
	{
		Jsonb	   *j = JsonbValueToJsonb((JsonbValue *) v);

		text = JsonbToCString(NULL, &j->root, VARSIZE(j));
	}
	if (strlen(text) > 64)
	{
		/* cut at a character boundary: never inside a multibyte character */
		int			len = pg_mbcliplen(text, strlen(text), 60);

		strcpy(text + len, "...");
	}
	return text;
}

/* The exported form of ttl_read_root (document_read.h). */
void
ttl_root_ts_and_ttl(const char *root, bool *has_ts, int64 *ts, TtlItemState *item, int32 *ttl)
{
	ttl_read_root(root, has_ts, ts, item, ttl);
}

void
ttl_doc_ts_and_ttl(Jsonb *doc, bool *has_ts, int64 *ts, TtlItemState *item, int32 *ttl)
{
	ttl_root_ts_and_ttl((const char *) &doc->root, has_ts, ts, item, ttl);
}

/* The exported form of ttl_jsonb_root_of (document_read.h). */
const char *
ttl_datum_jsonb_root(Datum datum)
{
	return ttl_jsonb_root_of(datum);
}

/* ttl.doc_ts(doc): the integer _ts, or NULL.  Indexable, never raises. */
PG_FUNCTION_INFO_V1(ttl_doc_ts_sql);
Datum
ttl_doc_ts_sql(PG_FUNCTION_ARGS)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		ttl;

	ttl_root_ts_and_ttl(ttl_datum_jsonb_root(PG_GETARG_DATUM(0)), &has_ts, &ts, &item, &ttl);
	if (!has_ts)
		PG_RETURN_NULL();
	PG_RETURN_INT64(ts);
}

/* ttl.doc_ttl(doc): the valid root ttl, or NULL.  Indexable, never raises. */
PG_FUNCTION_INFO_V1(ttl_doc_ttl_sql);
Datum
ttl_doc_ttl_sql(PG_FUNCTION_ARGS)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		ttl;

	ttl_root_ts_and_ttl(ttl_datum_jsonb_root(PG_GETARG_DATUM(0)), &has_ts, &ts, &item, &ttl);
	if (item != TTL_ITEM_VALID)
		PG_RETURN_NULL();
	PG_RETURN_INT32(ttl);
}

char *
ttl_container_name(Relation rel)
{
	/* a shard of a distributed container: the name the user knows */
	char	   *logical = ttl_placement_table_name(rel);

	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  logical ? logical : RelationGetRelationName(rel));
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

void
ttl_report_null_document(Relation rel, const char *doc_column)
{
	ereport(ERROR,
			(errcode(ERRCODE_NOT_NULL_VIOLATION),
			 errmsg("document of container \"%s\" is null", ttl_container_name(rel)),
			 errdetail("Column \"%s\" of a ttl container must hold a JSON object.",
					   doc_column)));
}

void
ttl_report_not_object(Relation rel, const char *doc_column, Jsonb *doc)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("document of container \"%s\" is not a JSON object: %s",
					ttl_container_name(rel), document_text(doc)),
			 errdetail("Column \"%s\" of a ttl container must hold a JSON object.",
					   doc_column)));
}

void
ttl_report_bad_ttl(Relation rel, const JsonbValue *v)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid ttl in container \"%s\": %s",
					ttl_container_name(rel), ttl_jsonb_value_text(v)),
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
		ttl_report_null_document(rel, doc_column);
	jb = DatumGetJsonbP(doc);
	if (!JB_ROOT_IS_OBJECT(jb))
		ttl_report_not_object(rel, doc_column, jb);
	v = getKeyJsonValueFromContainer(&jb->root, "ttl", 3, &buf);
	if (v != NULL && ttl_item_ttl_value(v, &ttl) != TTL_ITEM_VALID)
		ttl_report_bad_ttl(rel, v);
}

/* ttl._validate(container, doc): raise the trigger's error for a bad doc. */
PG_FUNCTION_INFO_V1(ttl_validate_sql);
Datum
ttl_validate_sql(PG_FUNCTION_ARGS)
{
	Relation	rel;
	const char *doc_column = PG_ARGISNULL(2) ? "doc" : NameStr(*PG_GETARG_NAME(2));

	ttl_check_relation_exists(PG_GETARG_OID(0));
	rel = relation_open(PG_GETARG_OID(0), AccessShareLock);
	ttl_validate_document(rel, doc_column, PG_GETARG_DATUM(1), PG_ARGISNULL(1));
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
