/*
 * numeric_read.h
 *		A JSON integer as int64, from a numeric at any address
 *		(numeric_read.c).
 */
#ifndef TTL_NUMERIC_READ_H
#define TTL_NUMERIC_READ_H

#include "utils/numeric.h"

extern bool ttl_numeric_to_int64(Numeric num, int64 *result);
extern bool ttl_numeric_bytes_to_int64(const char *num, int64 *result);

#endif							/* TTL_NUMERIC_READ_H */
