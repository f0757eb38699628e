/*
 * owner_error.h
 *		An error raised while ttl acted as a table's owner on behalf of
 *		another role, thrown on to that role (owner_error.c).
 */
#ifndef TTL_OWNER_ERROR_H
#define TTL_OWNER_ERROR_H

#include "utils/elog.h"

extern bool ttl_owner_error_visible(Oid relid);
/* never returns: it throws edata on, or ttl's message in its place */
extern void ttl_owner_error_rethrow(ErrorData *edata, Oid relid, const char *what);

#endif							/* TTL_OWNER_ERROR_H */
