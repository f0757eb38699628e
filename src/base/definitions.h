/*
 * definitions.h
 *		The one gate through which ttl looks at a user table's index
 *		definitions (definitions.c): expressions and predicates as stored,
 *		nothing of the owner's evaluated.
 */
#ifndef TTL_DEFINITIONS_H
#define TTL_DEFINITIONS_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern List *ttl_index_expressions_as_stored(Relation index);
extern List *ttl_index_predicate_as_stored(Relation index);

#endif							/* TTL_DEFINITIONS_H */
