/*
 * trigger_args.c
 *		Owns the wire format of the stamp trigger's arguments (the formats
 *		are described in trigger_args.h): decoding a list (the trigger at
 *		each statement, the Citus half of the policy door (registry/policy.c),
 *		ddl_follow.c's rename), encoding one as the installed SQL version
 *		wants it (as SQL text for CREATE TRIGGER, or as pg_trigger.tgargs),
 *		and the two internal SQL functions over the codec,
 *		ttl._trigger_args() and ttl._trigger_args_decode().
 *
 * Locking: none; the codec works on strings only (the format to write is
 * the installed SQL version's, base/sql_version.c).
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "base/compat.h"
#include "base/sql_version.h"
#include "registry/trigger_args.h"

#define FORMAT_KEY "format="
#define KEY_CHARS "abcdefghijklmnopqrstuvwxyz_"

/* A list without any field set: a container of one node, no deadline. */
void
ttl_trigger_args_init(TtlTriggerArgs *args, const char *doc_column)
{
	memset(args, 0, sizeof(*args));
	args->format = TTL_TRIGGER_ARGS_KEYED;
	args->default_is_null = true;
	if (doc_column != NULL)
		namestrcpy(&args->doc_column, doc_column);
}

/* ---- decoding ---- */

/* The length of arg's key ("doc" of "doc=x"), 0 when arg is no key=value. */
static size_t
key_length(const char *arg)
{
	size_t		n = strspn(arg, KEY_CHARS);

	return n > 0 && arg[n] == '=' ? n : 0;
}

/* Is argv a format 2 list (see trigger_args.h)? */
static bool
is_keyed(int nargs, char *const *argv)
{
	bool		doc = false;
	int			i;

	if (nargs < 2 || strncmp(argv[0], FORMAT_KEY, strlen(FORMAT_KEY)) != 0)
		return false;
	for (i = 1; i < nargs; i++)
	{
		size_t		n = key_length(argv[i]);

		if (n == 0)
			return false;
		if (n == 3 && strncmp(argv[i], "doc", 3) == 0)
			doc = true;
	}
	return doc;
}

/* A whole decimal int32, or false. */
static bool
parse_int32(const char *s, int32 *out)
{
	char	   *end;
	long		v;

	if (*s == '\0')
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < PG_INT32_MIN || v > PG_INT32_MAX)
		return false;
	*out = (int32) v;
	return true;
}

static char *
set_doc(TtlTriggerArgs *out, const char *value)
{
	if (value[0] == '\0' || strlen(value) >= NAMEDATALEN)
		return psprintf("The document column \"%s\" is not a column name of 1 to %d bytes.",
						value, NAMEDATALEN - 1);
	namestrcpy(&out->doc_column, value);
	return NULL;
}

static char *
set_default(TtlTriggerArgs *out, const char *value)
{
	out->has_policy = true;
	out->default_is_null = value[0] == '\0';
	if (!out->default_is_null && !parse_int32(value, &out->default_ttl))
		return psprintf("The default lifetime \"%s\" is neither an integer number of seconds nor empty (no default).",
						value);
	return NULL;
}

static char *
set_state(TtlTriggerArgs *out, const char *value)
{
	if (strcmp(value, "active") != 0 && strcmp(value, "paused") != 0)
		return psprintf("The state \"%s\" is neither \"active\" nor \"paused\".", value);
	out->paused = strcmp(value, "paused") == 0;
	return NULL;
}

static char *
set_deadline(TtlTriggerArgs *out, const char *value)
{
	if (strlen(value) > TTL_DEADLINE_PROPERTY_MAX)
		return psprintf("The deadline property is longer than %d bytes.",
						TTL_DEADLINE_PROPERTY_MAX);
	strlcpy(out->deadline_property, value, sizeof(out->deadline_property));
	return NULL;
}

static char *
set_mark(TtlTriggerArgs *out, const char *value)
{
	if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
		return psprintf("The marking \"%s\" is neither \"on\" nor \"off\".", value);
	out->mark = strcmp(value, "on") == 0 ? TTL_MARK_ON : TTL_MARK_OFF;
	return NULL;
}

static void
set_archive(TtlTriggerArgs *out, const char *value)
{
	out->archive = value[0] == '\0' ? NULL : pstrdup(value);
}

/* Format 1: (doc[, deadline]) or (doc, default, state[, deadline[, archive]]). */
static char *
parse_positional(int nargs, char *const *argv, TtlTriggerArgs *out)
{
	char	   *why;

	out->format = TTL_TRIGGER_ARGS_POSITIONAL;
	if (nargs < 1 || nargs > 5)
		return psprintf("ttl.stamp() takes 'format=2' and key=value arguments (ttl 1.9), or the document column and up to four more positional arguments (ttl 1.0 to 1.8); it was given %d argument%s.",
						nargs, nargs == 1 ? "" : "s");
	if ((why = set_doc(out, argv[0])) != NULL)
		return why;
	if (nargs == 2)
		return set_deadline(out, argv[1]);
	if (nargs == 1)
		return NULL;
	if ((why = set_default(out, argv[1])) != NULL ||
		(why = set_state(out, argv[2])) != NULL)
		return why;
	if (nargs >= 4 && (why = set_deadline(out, argv[3])) != NULL)
		return why;
	if (nargs == 5)
		set_archive(out, argv[4]);
	return NULL;
}

/* Format 2: 'format=2', then key=value arguments (unknown keys skipped). */
static char *
parse_keyed(int nargs, char *const *argv, TtlTriggerArgs *out)
{
	static const char *const keys[] = {"doc", "default", "state", "deadline", "archive", "mark"};
	bool		seen[lengthof(keys)] = {0};
	const char *version = argv[0] + strlen(FORMAT_KEY);
	int32		format;
	int			i;

	if (!parse_int32(version, &format) || format < 1)
		return psprintf("The format \"%s\" is not a positive integer.", version);
	if (format != TTL_TRIGGER_ARGS_KEYED)
		return psprintf("The arguments are in format %d, which this version of the ttl library does not read (it reads formats 1 and 2).",
						format);
	out->format = TTL_TRIGGER_ARGS_KEYED;
	for (i = 1; i < nargs; i++)
	{
		size_t		n = key_length(argv[i]);
		const char *value = argv[i] + n + 1;
		char	   *why = NULL;
		int			k;

		for (k = 0; k < lengthof(keys); k++)
			if (strlen(keys[k]) == n && strncmp(argv[i], keys[k], n) == 0)
				break;
		if (k == lengthof(keys))
			continue;			/* a key of a later round */
		if (seen[k])
			return psprintf("The key \"%s\" appears more than once.", keys[k]);
		seen[k] = true;
		switch (k)
		{
			case 0:
				why = set_doc(out, value);
				break;
			case 1:
				why = set_default(out, value);
				break;
			case 2:
				why = set_state(out, value);
				break;
			case 3:
				why = set_deadline(out, value);
				break;
			case 4:
				set_archive(out, value);
				break;
			case 5:
				why = set_mark(out, value);
				break;
		}
		if (why != NULL)
			return why;
	}
	if (seen[1] != seen[2])
		return pstrdup("The keys \"default\" and \"state\" (a distributed container's policy) come together or not at all.");
	return NULL;
}

/*
 * Decode a list into *out: NULL when it is well-formed, else why not (a
 * sentence, palloc'd), for the caller's error.
 */
char *
ttl_trigger_args_parse(int nargs, char *const *argv, TtlTriggerArgs *out)
{
	ttl_trigger_args_init(out, NULL);
	if (is_keyed(nargs, argv))
		return parse_keyed(nargs, argv, out);
	return parse_positional(nargs, argv, out);
}

/* Decode a stamp trigger's arguments, or raise 39P01 naming it. */
void
ttl_trigger_args_read(Relation rel, const Trigger *trigger, TtlTriggerArgs *out)
{
	char	   *why = ttl_trigger_args_parse(trigger->tgnargs, trigger->tgargs, out);

	if (why != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" of table %s has invalid arguments for ttl.stamp()",
						trigger->tgname,
						ttl_relation_display_name(RelationGetRelid(rel))),
				 errdetail_internal("%s", why),
				 errhint("Let ttl.enable() create the trigger instead of creating it by hand.")));
}

/* pg_trigger.tgargs (nargs strings, each ending in a zero byte) as strings. */
char **
ttl_trigger_args_split(bytea *tgargs, int nargs)
{
	char	  **argv = palloc0(sizeof(char *) * Max(nargs, 1));
	const char *p = VARDATA_ANY(tgargs);
	const char *end = p + VARSIZE_ANY_EXHDR(tgargs);
	int			i;

	for (i = 0; i < nargs; i++)
	{
		const char *z = memchr(p, '\0', end - p);

		if (z == NULL)
			elog(ERROR, "pg_trigger.tgargs holds fewer than %d arguments", nargs);
		argv[i] = pstrdup(p);
		p = z + 1;
	}
	return argv;
}

/* ---- encoding ---- */

/* The format to write: 2 once the database's SQL is 1.9 or later. */
int
ttl_trigger_args_format(void)
{
	return ttl_sql_at_least(1, 9) ? TTL_TRIGGER_ARGS_KEYED : TTL_TRIGGER_ARGS_POSITIONAL;
}

/* The list of args in format (TTL_TRIGGER_ARGS_*), as palloc'd strings. */
List *
ttl_trigger_args_encode(const TtlTriggerArgs *args, int format)
{
	const char *doc = NameStr(args->doc_column);
	bool		deadline = args->deadline_property[0] != '\0';
	char	   *def = args->default_is_null ? "" : psprintf("%d", args->default_ttl);
	const char *state = args->paused ? "paused" : "active";
	List	   *out = NIL;

	if (doc[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the document column of a stamp trigger must not be empty")));
	if (format == TTL_TRIGGER_ARGS_KEYED)
	{
		out = lappend(out, psprintf(FORMAT_KEY "%d", TTL_TRIGGER_ARGS_KEYED));
		out = lappend(out, psprintf("doc=%s", doc));
		if (args->has_policy)
		{
			out = lappend(out, psprintf("default=%s", def));
			out = lappend(out, psprintf("state=%s", state));
		}
		if (deadline)
			out = lappend(out, psprintf("deadline=%s", args->deadline_property));
		if (args->archive != NULL)
			out = lappend(out, psprintf("archive=%s", args->archive));
		if (args->mark != TTL_MARK_DEFAULT)
			out = lappend(out, psprintf("mark=%s", args->mark == TTL_MARK_ON ? "on" : "off"));
		return out;
	}
	if (format != TTL_TRIGGER_ARGS_POSITIONAL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("stamp trigger argument format %d does not exist", format),
				 errdetail("The formats are 1 (ttl 1.0 to 1.8) and 2 (ttl 1.9).")));
	if (args->mark != TTL_MARK_DEFAULT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the marking of purge deletes cannot be written in stamp trigger argument format 1"),
				 errdetail("Format 1 (ttl 1.0 to 1.8) has no place for it; ttl 1.9 writes format 2.")));
	out = lappend(out, pstrdup(doc));
	if (!args->has_policy)
	{
		if (args->archive != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("archive \"%s\" cannot be written in stamp trigger argument format 1 without a policy",
							args->archive),
					 errdetail("Format 1 carries an archive only in a distributed container's list.")));
		if (deadline)
			out = lappend(out, pstrdup(args->deadline_property));
		return out;
	}
	out = lappend(out, def);
	out = lappend(out, pstrdup(state));
	if (deadline || args->archive != NULL)
		out = lappend(out, pstrdup(args->deadline_property));
	if (args->archive != NULL)
		out = lappend(out, pstrdup(args->archive));
	return out;
}

/* The arguments as quoted literals for CREATE TRIGGER ('a', 'b'). */
char *
ttl_trigger_args_sql(const TtlTriggerArgs *args)
{
	List	   *list = ttl_trigger_args_encode(args, ttl_trigger_args_format());
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, list)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, quote_literal_cstr((char *) lfirst(lc)));
	}
	return buf.data;
}

/* The arguments as pg_trigger.tgargs, their count in *nargs. */
bytea *
ttl_trigger_args_bytea(const TtlTriggerArgs *args, int16 *nargs)
{
	List	   *list = ttl_trigger_args_encode(args, ttl_trigger_args_format());
	StringInfoData buf;
	ListCell   *lc;
	bytea	   *result;

	initStringInfo(&buf);
	foreach(lc, list)
		appendBinaryStringInfo(&buf, lfirst(lc), strlen(lfirst(lc)) + 1);
	result = palloc(VARHDRSZ + buf.len);
	SET_VARSIZE(result, VARHDRSZ + buf.len);
	memcpy(VARDATA(result), buf.data, buf.len);
	*nargs = (int16) list_length(list);
	return result;
}

/* CREATE [OR REPLACE] TRIGGER of relid's stamp trigger with args. */
char *
ttl_stamp_trigger_sql(Oid relid, const TtlTriggerArgs *args, bool or_replace)
{
	return psprintf("CREATE %sTRIGGER " TTL_STAMP_TRIGGER
					" BEFORE INSERT OR UPDATE ON %s FOR EACH ROW"
					" EXECUTE FUNCTION ttl.stamp(%s)",
					or_replace ? "OR REPLACE " : "",
					ttl_relation_display_name(relid),
					ttl_trigger_args_sql(args));
}

/* ---- the SQL functions (internal, for tests: not granted to PUBLIC) ---- */

/*
 * ttl._trigger_args(doc_column, deadline_property, has_policy,
 * default_ttl, paused, archive, format) RETURNS text[]: the list the C
 * writers write for these fields; format NULL: the installed version's.
 */
PG_FUNCTION_INFO_V1(ttl_trigger_args_encode_sql);
Datum
ttl_trigger_args_encode_sql(PG_FUNCTION_ARGS)
{
	TtlTriggerArgs args;
	List	   *list;
	Datum	   *elems;
	ListCell   *lc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("doc_column must not be null")));
	ttl_trigger_args_init(&args, NameStr(*PG_GETARG_NAME(0)));
	if (!PG_ARGISNULL(1))
	{
		char	   *why = set_deadline(&args, text_to_cstring(PG_GETARG_TEXT_PP(1)));

		if (why != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid deadline property for a stamp trigger"),
					 errdetail_internal("%s", why)));
	}
	args.has_policy = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
	args.default_is_null = PG_ARGISNULL(3);
	args.default_ttl = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	args.paused = !PG_ARGISNULL(4) && PG_GETARG_BOOL(4);
	if (!PG_ARGISNULL(5))
		set_archive(&args, text_to_cstring(PG_GETARG_TEXT_PP(5)));
	list = ttl_trigger_args_encode(&args, PG_ARGISNULL(6) ? ttl_trigger_args_format() :
								   PG_GETARG_INT32(6));
	elems = palloc(sizeof(Datum) * Max(list_length(list), 1));
	foreach(lc, list)
		elems[foreach_current_index(lc)] = CStringGetTextDatum((char *) lfirst(lc));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, list_length(list), TEXTOID, -1, false,
										  TYPALIGN_INT));
}

/*
 * ttl._trigger_args_decode(args text[]) RETURNS record (format, doc_column,
 * deadline_property, has_policy, default_ttl, paused, archive): what the
 * C readers read from the list; 22023 for a list they refuse.
 */
PG_FUNCTION_INFO_V1(ttl_trigger_args_decode_sql);
Datum
ttl_trigger_args_decode_sql(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **argv;
	TtlTriggerArgs args;
	char	   *why;
	TupleDesc	desc;
	Datum		values[7];
	bool		isnull[7] = {0};
	int			i;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "ttl._trigger_args_decode must return a record");
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	argv = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("element %d of a stamp trigger's argument list must not be null",
							i + 1),
					 errdetail("A trigger's arguments are strings.")));
		argv[i] = TextDatumGetCString(elems[i]);
	}
	why = ttl_trigger_args_parse(n, argv, &args);
	if (why != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid argument list for ttl.stamp(): %s",
						OidOutputFunctionCall(F_ARRAY_OUT, PointerGetDatum(array))),
				 errdetail_internal("%s", why)));
	values[0] = Int32GetDatum(args.format);
	values[1] = NameGetDatum(&args.doc_column);
	values[2] = CStringGetTextDatum(args.deadline_property);
	isnull[2] = args.deadline_property[0] == '\0';
	values[3] = BoolGetDatum(args.has_policy);
	values[4] = Int32GetDatum(args.default_ttl);
	isnull[4] = !args.has_policy || args.default_is_null;
	values[5] = BoolGetDatum(args.paused);
	isnull[5] = !args.has_policy;
	values[6] = args.archive ? CStringGetTextDatum(args.archive) : (Datum) 0;
	isnull[6] = args.archive == NULL;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, isnull)));
}
