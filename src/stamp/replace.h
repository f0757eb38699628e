/*
 * replace.h
 *		Rule 10 (replace.c): the stamp trigger replaces an expired item that
 *		holds the new row's key in a unique index.
 */
#ifndef TTL_REPLACE_H
#define TTL_REPLACE_H

#include "access/htup.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/execdesc.h"

typedef struct TtlReplaceState TtlReplaceState;

/* ttl.c's hooks: ExecutorStart, ExecutorEnd, xact, subxact, relcache */
extern void ttl_replace_executor_started(QueryDesc *queryDesc, int eflags);
extern void ttl_replace_executor_ending(QueryDesc *queryDesc);
extern void ttl_replace_xact_callback(XactEvent event, void *arg);
extern void ttl_replace_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
										 SubTransactionId parentSubid, void *arg);
extern void ttl_replace_invalidate(Datum arg, Oid relid);
extern void ttl_replace_expired(TtlReplaceState **statep, MemoryContext mcxt,
								TriggerData *trigdata, int doc_attnum, HeapTuple newtuple);

#endif							/* TTL_REPLACE_H */
