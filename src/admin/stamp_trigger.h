/*
 * stamp_trigger.h
 *		The writer of a container's stamp trigger on one node
 *		(stamp_trigger.c), for admin/'s own SQL functions.
 */
#ifndef TTL_STAMP_TRIGGER_H
#define TTL_STAMP_TRIGGER_H

extern void ttl_stamp_trigger_write(Oid relid, const char *doc_column, const char *deadline,
									bool or_replace);

#endif							/* TTL_STAMP_TRIGGER_H */
