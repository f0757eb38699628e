/*
 * expiry.h
 *		The expiry rules (expiry.c): when a document expires, and the row of
 *		ttl.calculate() / ttl.state() (item_functions.c).
 */
#ifndef TTL_EXPIRY_H
#define TTL_EXPIRY_H

#include "fmgr.h"
#include "datatype/timestamp.h"
#include "utils/jsonb.h"

extern bool ttl_doc_expiry(Jsonb *doc, int32 default_ttl, int64 *ts, int64 *expiry);
extern bool ttl_doc_expiry_second(Jsonb *doc, bool default_is_null,
								  int32 default_ttl, int64 *expiry);
extern bool ttl_root_expiry_second(const char *root, bool default_is_null,
								   int32 default_ttl, int64 *expiry);
extern Datum ttl_expiry_row(FunctionCallInfo fcinfo,
							bool default_is_null, int32 default_ttl,
							bool item_is_null, int32 item_ttl,
							bool ts_is_null, int64 ts,
							bool at_is_null, TimestampTz at,
							bool deadline_is_null, int64 deadline);

#endif							/* TTL_EXPIRY_H */
