/*
 * stamp.c
 *		Where a row is stamped: ttl.stamp(), the BEFORE INSERT OR UPDATE row
 *		trigger of a container.  In one pass over the root of the document it
 *		validates "ttl" and builds the new document with "_ts" set to
 *		ttl.now() in Unix seconds.
 *
 * Locking: none beyond the row being written (rule 10's are replace.c's).
 * Stamping reads nothing but its arguments (the document column's name,
 * the deadline property; on a Citus table also the policy, registry/policy.c:
 * the format is registry/trigger_args.h's, decoded once per statement) and
 * the row: it never looks at the registry.  A container with a deadline
 * property (rule 9, deadline.c) names it in its arguments, and the trigger
 * validates that root property on the same pass
 * (ttl.set_deadline_property replaces the trigger).
 * A renamed document column rewrites the argument (ddl_events.c).
 * Rule 10 (replace.c) then looks for an expired item that holds one of the
 * stamped row's unique keys; that part reads the registry, once per
 * statement.
 * The document is spliced here; the row around it is rebuilt in
 * stamp_row.c.
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
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "registry/trigger_args.h"
#include "stamp/replace.h"
#include "stamp/stamp_row.h"

/*
 * Build the stamped document by splicing the binary form: copy every root
 * key and value of the input as raw bytes, drop a client-sent "_ts", insert
 * "_ts" = now at its sorted place, and rewrite only the root's JEntry array.
 * Nested containers are never decoded (pushJsonbValue would unpack and
 * re-encode all of them), which makes stamping cost O(root keys + bytes).
 * The output is byte for byte what the pushJsonbValue path makes (test
 * sql/stamp_bytes.sql compares them over a generated corpus).
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

#define ENTRY_END(je, off) \
	(JBE_HAS_OFF(je) ? JBE_OFFLENFLD(je) : (off) + JBE_OFFLENFLD(je))

/* A value's bytes, without the padding that aligned it. */
typedef struct SpliceValue
{
	const char *data;
	uint32		len;
	uint32		type;			/* JENTRY_IS* */
} SpliceValue;

static void
report_bad_root_ttl(Relation rel, Jsonb *doc)
{
	JsonbValue	buf;
	JsonbValue *v = getKeyJsonValueFromContainer(&doc->root, "ttl", 3, &buf);

	ttl_report_bad_ttl(rel, v);
}

/* Rule 9: the raw value of the deadline property, checked in place. */
static void
check_deadline_entry(Relation rel, Jsonb *doc, const char *property,
					 const SpliceValue *value)
{
	TtlDeadlineState state;
	int64		seconds;

	if (value->type == JENTRY_ISNULL)
		return;
	if (value->type == JENTRY_ISSTRING)
		state = ttl_parse_rfc3339(value->data, value->len, &seconds) ?
			TTL_DEADLINE_VALID : TTL_DEADLINE_BAD_TEXT;
	else if (value->type == JENTRY_ISNUMERIC)
		state = ttl_deadline_of_numeric(value->data, &seconds);
	else
		state = TTL_DEADLINE_BAD;
	if (state != TTL_DEADLINE_VALID)
		ttl_validate_deadline(rel, property, doc);	/* raises, with the value */
}

/*
 * One splice: the input root's entries, where "_ts" goes, what to check,
 * and the output as it is written.  Offsets are relative to the start of
 * each side's data (after its JEntries), which is 4-aligned in its varlena,
 * so alignment can be judged on them.
 */
typedef struct Splice
{
	const JEntry *in;			/* the input root's 2n entries */
	const char *in_base;		/* its data */
	int			n;				/* input pairs */
	int			m;				/* output pairs */
	int			ts_old;			/* input key index of a client-sent "_ts", or -1 */
	int			ins;			/* output key index of "_ts" */
	int			ttl_key;		/* input key index of "ttl", or -1 */
	int			deadline_key;	/* input key index of the deadline property, or -1 */
	uint32		split;			/* input key bytes before "_ts"'s place */
	uint32		keys_end;		/* input key bytes */
	uint32		off;			/* input: where the next entry starts */
	JEntry	   *out;			/* the output's 2m entries */
	char	   *out_base;		/* its data */
	uint32		total;			/* output bytes written */
} Splice;

/* The keys: where "_ts" goes (replacing a client-sent one), what to check. */
static void
splice_scan_keys(Splice *sp, const char *deadline)
{
	uint32		deadline_len = deadline ? strlen(deadline) : 0;
	uint32		off = 0;
	int			i;

	sp->ts_old = sp->ins = sp->ttl_key = sp->deadline_key = -1;
	for (i = 0; i < sp->n; i++)
	{
		uint32		end = ENTRY_END(sp->in[i], off);
		const char *key = sp->in_base + off;
		uint32		len = end - off;
		int			cmp = ts_key_compare(key, len);

		if (sp->ins < 0 && cmp >= 0)
		{
			sp->ins = i;
			sp->split = off;
			if (cmp == 0)
				sp->ts_old = i;
		}
		if (cmp != 0)
		{
			if (len == 3 && memcmp(key, "ttl", 3) == 0)
				sp->ttl_key = i;
			if (deadline && len == deadline_len && memcmp(key, deadline, len) == 0)
				sp->deadline_key = i;
		}
		off = end;
	}
	sp->keys_end = off;
	if (sp->ins < 0)
	{
		sp->ins = sp->n;
		sp->split = sp->keys_end;
	}
	sp->m = (sp->ts_old >= 0) ? sp->n : sp->n + 1;
}

/* The key bytes (those before "_ts", "_ts", the rest) and the key entries. */
static void
splice_write_keys(Splice *sp)
{
	uint32		rest = (sp->ts_old >= 0) ? sp->split + 3 : sp->split;
	int			i;
	int			k;

	memcpy(sp->out_base, sp->in_base, sp->split);
	memcpy(sp->out_base + sp->split, "_ts", 3);
	memcpy(sp->out_base + sp->split + 3, sp->in_base + rest, sp->keys_end - rest);

	sp->off = 0;
	sp->total = 0;
	for (k = 0, i = 0; k < sp->m; k++)
	{
		uint32		len = 3;

		if (k != sp->ins || sp->ts_old >= 0)
		{
			/* an input key, or the client's "_ts" that ours replaces */
			uint32		end = ENTRY_END(sp->in[i], sp->off);

			if (k != sp->ins)
				len = end - sp->off;
			sp->off = end;
			i++;
		}
		sp->total += len;
		sp->out[k] = JENTRY_ISSTRING |
			((k % JB_OFFSET_STRIDE == 0) ? (JENTRY_HAS_OFF | sp->total) : len);
	}
}

/*
 * The values, in the same order, each 4-aligned where its type wants it;
 * the root "ttl" and the deadline property are validated on the way.  true
 * when the client's "_ts" already was ts_value byte for byte.
 */
static bool
splice_write_values(Splice *sp, Relation rel, Jsonb *doc, Numeric ts_value,
					const char *deadline)
{
	uint32		ts_len = VARSIZE(ts_value);
	bool		same = false;
	int			i;
	int			k;

	for (k = 0, i = 0; k < sp->m; k++)
	{
		SpliceValue v;
		uint32		start = sp->total;

		if (k == sp->ins)
		{
			if (sp->ts_old >= 0)
			{
				JEntry		je = sp->in[sp->n + i];
				uint32		end = ENTRY_END(je, sp->off);
				uint32		from = JBE_ISNUMERIC(je) ? INTALIGN(sp->off) : sp->off;

				same = JBE_ISNUMERIC(je) && end - from == ts_len &&
					memcmp(sp->in_base + from, ts_value, ts_len) == 0;
				sp->off = end;
				i++;
			}
			v.data = (const char *) ts_value;
			v.len = ts_len;
			v.type = JENTRY_ISNUMERIC;
		}
		else
		{
			JEntry		je = sp->in[sp->n + i];
			uint32		end = ENTRY_END(je, sp->off);
			uint32		from = sp->off;

			v.type = je & JENTRY_TYPEMASK;
			if (v.type == JENTRY_ISNUMERIC || v.type == JENTRY_ISCONTAINER)
				from = INTALIGN(from);	/* skip the padding that aligned it */
			v.data = sp->in_base + from;
			v.len = end - from;
			sp->off = end;
			if (i == sp->ttl_key)
			{
				int64		ttl;

				if (v.type != JENTRY_ISNUMERIC ||
					!ttl_numeric_to_int64((Numeric) v.data, &ttl) ||
					!ttl_is_valid_ttl(ttl))
					report_bad_root_ttl(rel, doc);
			}
			if (i == sp->deadline_key)
				check_deadline_entry(rel, doc, deadline, &v);
			i++;
		}
		if (v.type == JENTRY_ISNUMERIC || v.type == JENTRY_ISCONTAINER)
		{
			while (sp->total % sizeof(int32) != 0)
				sp->out_base[sp->total++] = '\0';
		}
		memcpy(sp->out_base + sp->total, v.data, v.len);
		sp->total += v.len;
		if (sp->total > JENTRY_OFFLENMASK)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("stamped document of container \"%s\" exceeds the maximum jsonb size",
							ttl_container_name(rel))));
		sp->out[sp->m + k] = v.type |
			(((sp->m + k) % JB_OFFSET_STRIDE == 0) ? (JENTRY_HAS_OFF | sp->total) :
			 sp->total - start);
	}
	return same;
}

/*
 * The stamped document, or NULL when doc already is it: its "_ts" holds
 * ts_value byte for byte (a second write in the same second), so the row
 * keeps its document as it is (an unchanged TOASTed value is not written
 * again).  Validates the root "ttl" (and the deadline property) either way.
 *
 * Two passes over the root's entries, nothing stored per entry: the keys
 * (where "_ts" goes, which keys need checking), then the key bytes in three
 * copies and the values one by one, each re-padded for its new place.
 */
static Jsonb *
stamp_document(Relation rel, Jsonb *doc, Numeric ts_value, const char *deadline)
{
	Splice		sp;
	Jsonb	   *result;

	sp.n = JsonContainerSize(&doc->root);
	sp.in = doc->root.children;
	sp.in_base = (const char *) &sp.in[2 * sp.n];
	splice_scan_keys(&sp, deadline);

	/* upper bound: two more JEntries, the key, the value, 3 bytes of padding a value */
	result = palloc(VARSIZE(doc) + 2 * sizeof(JEntry) + 3 + VARSIZE(ts_value) + 3 * (sp.m + 1));
	sp.out = result->root.children;
	sp.out_base = (char *) &sp.out[2 * sp.m];
	splice_write_keys(&sp);
	if (splice_write_values(&sp, rel, doc, ts_value, deadline))
	{
		pfree(result);
		return NULL;
	}
	result->root.header = JB_FOBJECT | sp.m;
	SET_VARSIZE(result, sp.out_base + sp.total - (char *) result);
	return result;
}

/*
 * The numeric of the current second, made once per second (ttl.now() is
 * the statement's timestamp: a bulk INSERT makes it once).
 */
static Numeric
current_ts_value(void)
{
	static int64 cached_second = PG_INT64_MIN;
	static Numeric cached_value = NULL;
	int64		now_seconds = ttl_current_unix_seconds();

	if (cached_value == NULL || cached_second != now_seconds)
	{
		Numeric		value = int64_to_numeric(now_seconds);
		Numeric		copy = MemoryContextAlloc(TopMemoryContext, VARSIZE(value));

		memcpy(copy, value, VARSIZE(value));
		pfree(value);
		if (cached_value)
			pfree(cached_value);
		cached_value = copy;
		cached_second = now_seconds;
	}
	return cached_value;
}

/*
 * The trigger's arguments decoded (registry/trigger_args.c) and the
 * document column's number, checked once per statement and trigger: the
 * trigger's FmgrInfo lives as long as the statement's result relation (one
 * per trigger and table), whose row type and triggers cannot change
 * meanwhile.
 */
typedef struct StampColumn
{
	Oid			tgoid;
	Oid			relid;
	int			attnum;
	TtlTriggerArgs args;
	TtlReplaceState *replace;	/* rule 10's state for the statement (replace.c) */
} StampColumn;

static StampColumn *
stamp_column(FmgrInfo *flinfo, TriggerData *trigdata)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	tupdesc = RelationGetDescr(rel);
	StampColumn *known = (StampColumn *) flinfo->fn_extra;
	TtlTriggerArgs args;
	const char *doc_column;
	int			attnum;
	MemoryContext old;

	if (known != NULL && known->tgoid == trigdata->tg_trigger->tgoid &&
		known->relid == RelationGetRelid(rel))
		return known;

	old = MemoryContextSwitchTo(flinfo->fn_mcxt);
	ttl_trigger_args_read(rel, trigdata->tg_trigger, &args);
	MemoryContextSwitchTo(old);
	doc_column = NameStr(args.doc_column);
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
	if (known == NULL)
		known = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(StampColumn));
	known->tgoid = trigdata->tg_trigger->tgoid;
	known->relid = RelationGetRelid(rel);
	known->attnum = attnum;
	known->args = args;
	known->replace = NULL;
	flinfo->fn_extra = known;
	return known;
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
	Jsonb	   *jb;
	Jsonb	   *stamped;
	const char *deadline;
	StampColumn *column;
	HeapTuple	result;

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
	rel = trigdata->tg_relation;
	tupdesc = RelationGetDescr(rel);
	column = stamp_column(fcinfo->flinfo, trigdata);
	doc_column = NameStr(column->args.doc_column);
	deadline = column->args.deadline_property[0] != '\0' ?
		column->args.deadline_property : NULL;
	attnum = column->attnum;
	doc = heap_getattr(tuple, attnum, tupdesc, &isnull);
	if (isnull)
		ttl_report_null_document(rel, doc_column);
	jb = DatumGetJsonbP(doc);	/* detoasted once */
	if (!JB_ROOT_IS_OBJECT(jb))
		ttl_report_not_object(rel, doc_column, jb);

	stamped = stamp_document(rel, jb, current_ts_value(), deadline);
	/* NULL: already stamped this second, the row is written as it is */
	result = stamped == NULL ? tuple : ttl_stamp_row(tuple, tupdesc, attnum, stamped);
	/* rule 10: an expired item holding one of its unique keys goes first */
	ttl_replace_expired(&column->replace, fcinfo->flinfo->fn_mcxt, trigdata, attnum, result);
	return PointerGetDatum(result);
}
