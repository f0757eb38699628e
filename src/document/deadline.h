/*
 * deadline.h
 *		Rule 9, the deadline property (deadline.c): reading an item's
 *		absolute deadline out of a root property named by the container
 *		(an RFC 3339 timestamp with an offset, or Unix seconds), its
 *		validation on write, the key of the deadline index and the expiry
 *		that combines the deadline with the lifetime (expiry.c).
 */
#ifndef TTL_DEADLINE_H
#define TTL_DEADLINE_H

#include "utils/jsonb.h"
#include "utils/relcache.h"

/* What a document's deadline property holds. */
typedef enum TtlDeadlineState
{
	TTL_DEADLINE_NONE,			/* absent or JSON null: no deadline */
	TTL_DEADLINE_VALID,			/* a deadline, in Unix seconds */
	TTL_DEADLINE_BAD_TEXT,		/* a string that is no RFC 3339 timestamp (22007) */
	TTL_DEADLINE_BAD			/* any other value (22023) */
} TtlDeadlineState;

/* The key of a malformed deadline in ttl.doc_deadline_key (below every deadline). */
#define TTL_DEADLINE_MALFORMED_KEY	PG_INT64_MIN

extern int64 ttl_deadline_max_seconds(void);
extern bool ttl_parse_rfc3339(const char *s, int len, int64 *seconds);
extern TtlDeadlineState ttl_deadline_of_value(const JsonbValue *v, int64 *seconds);
extern TtlDeadlineState ttl_deadline_of_numeric(const char *num, int64 *seconds);
extern TtlDeadlineState ttl_doc_deadline(Jsonb *doc, const char *property, int64 *seconds);
extern TtlDeadlineState ttl_datum_deadline(Datum doc, const char *property, int64 *seconds);
extern void ttl_report_bad_deadline(Relation rel, const char *property,
									TtlDeadlineState state, const char *value);
extern void ttl_validate_deadline(Relation rel, const char *property, Jsonb *doc);
extern void ttl_check_deadline_property_name(const char *container, const char *property);
extern bool ttl_datum_expiry_with_deadline(Datum doc, bool default_is_null,
										   int32 default_ttl, const char *property,
										   int64 *expiry);

#endif							/* TTL_DEADLINE_H */
