/*
 * replace.h
 *		Rule 10 (replace.c): the stamp trigger replaces an expired item that
 *		holds the new row's key in a unique index.
 */
#ifndef TTL_REPLACE_H
#define TTL_REPLACE_H

#include "access/htup.h"
#include "commands/trigger.h"

typedef struct TtlReplaceState TtlReplaceState;

extern void ttl_install_replace_hooks(void);
extern void ttl_replace_expired(TtlReplaceState **statep, MemoryContext mcxt,
								TriggerData *trigdata, int doc_attnum, HeapTuple newtuple);

#endif							/* TTL_REPLACE_H */
