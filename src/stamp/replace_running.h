/*
 * replace_running.h
 *		The INSERT and UPDATE statements running (replace_running.c): their
 *		ON CONFLICT clause, for rule 10.  Internal to stamp/.
 */
#ifndef TTL_REPLACE_RUNNING_H
#define TTL_REPLACE_RUNNING_H

extern void ttl_running_pop_all(void);
extern void ttl_running_pop_level(int level);
extern bool ttl_running_covers(Oid container, Oid leaf, Oid index, bool *do_update);

#endif							/* TTL_REPLACE_RUNNING_H */
