/*
 * accessors.c
 *		Leak-free document accessors: ttl.field(), ttl.field_bigint(),
 *		ttl.field_float(),
 *		ttl.path() and ttl.contains() (operator ttl.@>).  They are marked
 *		LEAKPROOF, so a caller's WHERE clause built from them is pushed below
 *		the security barrier of <table>_live and can use an expression or
 *		GIN index, which core's ->> and @> (not leakproof) cannot.
 *
 * LEAKPROOF is a promise: nothing here raises on document content or
 * arguments (missing keys, wrong types and odd paths give NULL or false),
 * and nothing reveals a value except through the result.  Keep it so.
 *
 * Locking: none.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "document/document.h"

/* The value of a key of an object, or NULL. */
static JsonbValue *
object_field(JsonbContainer *container, text *key, JsonbValue *buf)
{
	if (!JsonContainerIsObject(container))
		return NULL;
	return getKeyJsonValueFromContainer(container, VARDATA_ANY(key),
										VARSIZE_ANY_EXHDR(key), buf);
}

/* A JSON value as ->> renders it; false for JSON null. */
static bool
value_as_text(JsonbValue *v, text **result)
{
	switch (v->type)
	{
		case jbvNull:
			return false;
		case jbvString:
			*result = cstring_to_text_with_len(v->val.string.val, v->val.string.len);
			return true;
		case jbvNumeric:
			*result = cstring_to_text(DatumGetCString(DirectFunctionCall1(numeric_out,
																		  NumericGetDatum(v->val.numeric))));
			return true;
		case jbvBool:
			*result = cstring_to_text(v->val.boolean ? "true" : "false");
			return true;
		case jbvBinary:
			*result = cstring_to_text(JsonbToCString(NULL, v->val.binary.data,
													 v->val.binary.len));
			return true;
		default:
			return false;
	}
}

/* The value at key (argument 1) of the document (argument 0), or NULL. */
static JsonbValue *
field_arg(FunctionCallInfo fcinfo, JsonbValue *buf)
{
	return object_field(&PG_GETARG_JSONB_P(0)->root, PG_GETARG_TEXT_PP(1), buf);
}

/* ttl.field(doc, key): doc ->> key, leak-free. */
PG_FUNCTION_INFO_V1(ttl_field);
Datum
ttl_field(PG_FUNCTION_ARGS)
{
	JsonbValue	buf;
	JsonbValue *v = field_arg(fcinfo, &buf);
	text	   *result;

	if (v == NULL || !value_as_text(v, &result))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(result);
}

/*
 * Numbers come out as bigint or double precision rather than numeric:
 * numeric's comparison operators are not leakproof, int8's and float8's are.
 */

/* ttl.field_bigint(doc, key): the integer at key, or NULL. */
PG_FUNCTION_INFO_V1(ttl_field_bigint);
Datum
ttl_field_bigint(PG_FUNCTION_ARGS)
{
	JsonbValue	buf;
	JsonbValue *v = field_arg(fcinfo, &buf);
	int64		result;

	if (v == NULL || v->type != jbvNumeric ||
		!ttl_numeric_to_int64(v->val.numeric, &result))
		PG_RETURN_NULL();
	PG_RETURN_INT64(result);
}

/*
 * ttl.field_float(doc, key): the number at key as float8, or NULL, also
 * for a number past float8's range (1e400), where the cast raises 22003:
 * a leakproof function cannot raise on content, and JSON has no Infinity
 * to give back (a tiny one, 1e-400, comes out as 0 as from the cast).
 */
PG_FUNCTION_INFO_V1(ttl_field_float);
Datum
ttl_field_float(PG_FUNCTION_ARGS)
{
	JsonbValue	buf;
	JsonbValue *v = field_arg(fcinfo, &buf);
	float8		result;

	if (v == NULL || v->type != jbvNumeric)
		PG_RETURN_NULL();
	/* saturates to +-Infinity instead of raising on overflow */
	result = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
												NumericGetDatum(v->val.numeric)));
	if (isinf(result))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(result);
}

/*
 * ttl.path(doc, VARIADIC path): doc #>> path, leak-free.  Array elements
 * are addressed by their index as text; a step that does not fit gives NULL.
 */
PG_FUNCTION_INFO_V1(ttl_path);
Datum
ttl_path(PG_FUNCTION_ARGS)
{
	Jsonb	   *doc = PG_GETARG_JSONB_P(0);
	ArrayType  *path = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *steps;
	bool	   *nulls;
	int			nsteps;
	JsonbContainer *container = &doc->root;
	JsonbValue	buf;
	JsonbValue *v = NULL;
	text	   *result;
	int			i;

	if (ARR_NDIM(path) > 1)
		PG_RETURN_NULL();
	deconstruct_array(path, TEXTOID, -1, false, TYPALIGN_INT, &steps, &nulls, &nsteps);
	if (nsteps == 0)
		PG_RETURN_NULL();
	for (i = 0; i < nsteps; i++)
	{
		if (nulls[i] || container == NULL)
			PG_RETURN_NULL();
		if (JsonContainerIsObject(container))
			v = object_field(container, DatumGetTextPP(steps[i]), &buf);
		else if (JsonContainerIsArray(container) && !JsonContainerIsScalar(container))
		{
			char	   *s = text_to_cstring(DatumGetTextPP(steps[i]));
			char	   *end;
			long		index = strtol(s, &end, 10);

			if (*s == '\0' || *end != '\0' || index < 0 || index > PG_INT32_MAX)
				PG_RETURN_NULL();
			v = getIthJsonbValueFromContainer(container, (uint32) index);
		}
		else
			PG_RETURN_NULL();
		if (v == NULL)
			PG_RETURN_NULL();
		container = (v->type == jbvBinary) ? v->val.binary.data : NULL;
	}
	if (!value_as_text(v, &result))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(result);
}

/* ttl.contains(doc, query): doc @> query, leak-free; operator ttl.@>. */
PG_FUNCTION_INFO_V1(ttl_contains);
Datum
ttl_contains(PG_FUNCTION_ARGS)
{
	Jsonb	   *doc = PG_GETARG_JSONB_P(0);
	Jsonb	   *query = PG_GETARG_JSONB_P(1);
	JsonbIterator *it1;
	JsonbIterator *it2;

	if (JB_ROOT_IS_OBJECT(doc) != JB_ROOT_IS_OBJECT(query))
		PG_RETURN_BOOL(false);
	it1 = JsonbIteratorInit(&doc->root);
	it2 = JsonbIteratorInit(&query->root);
	PG_RETURN_BOOL(JsonbDeepContains(&it1, &it2));
}
