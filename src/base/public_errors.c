/*
 * public_errors.c
 *		Runs an internal step of a public PL/pgSQL function with no error
 *		context callbacks: what it raises (not the owner, not a table, a
 *		bad row) reaches the caller as the public function's error, with
 *		no CONTEXT naming ttl's internals.
 *
 * Locking: none.  The callbacks are back after the step; when it raises,
 * the PG_TRY that catches (PL/pgSQL's exception block, or the top level)
 * restores error_context_stack itself.
 */
#include "postgres.h"

#include "base/public_errors.h"

Datum
ttl_call_as_public(PGFunction step, FunctionCallInfo fcinfo)
{
	ErrorContextCallback *outer = error_context_stack;
	Datum		result;

	error_context_stack = NULL;
	result = step(fcinfo);
	error_context_stack = outer;
	return result;
}
