/*
 * document.h
 *		Reading "_ts" and "ttl" out of a jsonb document, and the validation
 *		the stamping trigger, ttl.enable() and the item functions share
 *		(document.c).  accessors.c and stamp.c belong to this family.
 */
#ifndef TTL_DOCUMENT_H
#define TTL_DOCUMENT_H

#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/relcache.h"

#include "document/document_read.h"


extern TtlItemState ttl_item_ttl_value(const JsonbValue *v, int32 *ttl);
extern char *ttl_jsonb_value_text(const JsonbValue *v);
extern void ttl_doc_ts_and_ttl(Jsonb *doc, bool *has_ts, int64 *ts,
							   TtlItemState *item, int32 *ttl);
extern void ttl_root_ts_and_ttl(const char *root, bool *has_ts, int64 *ts,
								TtlItemState *item, int32 *ttl);
extern const char *ttl_datum_jsonb_root(Datum datum);

/* Validation, with the trigger's errors. */
extern char *ttl_container_name(Relation rel);
extern void ttl_report_null_document(Relation rel, const char *doc_column);
extern void ttl_report_not_object(Relation rel, const char *doc_column, Jsonb *doc);
extern void ttl_report_bad_ttl(Relation rel, const JsonbValue *v);
extern void ttl_validate_document(Relation rel, const char *doc_column,
								  Datum doc, bool isnull);

#endif							/* TTL_DOCUMENT_H */
