/*
 * public_errors.h
 *		An internal step of a public PL/pgSQL function (ttl.enable calls
 *		ttl._register, ...) raising the caller's mistake as the public
 *		function's own: without the CONTEXT lines that would name the
 *		internal function and the PL/pgSQL line that called it.
 */
#ifndef TTL_PUBLIC_ERRORS_H
#define TTL_PUBLIC_ERRORS_H

#include "fmgr.h"

extern Datum ttl_call_as_public(PGFunction step, FunctionCallInfo fcinfo);

#endif
