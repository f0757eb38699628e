/*
 * item_functions.c
 *		ttl.state(): the expiry row of a document of a container at ttl.now().
 *		Unlike the view's filter it validates the document (and its
 *		deadline property, rule 9).
 *
 * Locking: AccessShareLock on the container while the document is checked.
 */
#include "postgres.h"

#include "access/relation.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/expiry.h"
#include "registry/registry.h"

/*
 * ttl.state(container, doc): the row for a document of a container at
 * ttl.now().  Unlike the filter it validates: a bad document raises the same
 * error the trigger would.
 */
PG_FUNCTION_INFO_V1(ttl_state);
Datum
ttl_state(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TtlContainer c;
	Jsonb	   *doc;
	int64		ts = 0;
	bool		has_ts;
	int32		item_ttl = 0;
	TtlItemState item;
	Relation	rel;
	bool		has_deadline = false;
	int64		deadline = 0;

	ttl_check_relation_exists(relid);
	ttl_get_container(relid, &c);

	rel = relation_open(relid, AccessShareLock);
	ttl_validate_document(rel, NameStr(c.doc_column),
						  PG_GETARG_DATUM(1), PG_ARGISNULL(1));
	relation_close(rel, AccessShareLock);

	doc = PG_GETARG_JSONB_P(1);
	/* rule 9: the deadline property, validated like the trigger does */
	if (TTL_HAS_DEADLINE(&c))
	{
		rel = relation_open(relid, AccessShareLock);
		ttl_validate_deadline(rel, c.deadline_property, doc);
		relation_close(rel, AccessShareLock);
		has_deadline = ttl_doc_deadline(doc, c.deadline_property, &deadline) ==
			TTL_DEADLINE_VALID;
	}
	ttl_doc_ts_and_ttl(doc, &has_ts, &ts, &item, &item_ttl);
	PG_RETURN_DATUM(ttl_expiry_row(fcinfo,
								   c.default_is_null, c.default_ttl,
								   item != TTL_ITEM_VALID, item_ttl,
								   !has_ts, ts,
								   false, ttl_current_time(),
								   !has_deadline, deadline));
}
