/*
 * citus_copy.h
 *		COPY through a Citus coordinator: the SQLSTATE of ttl's write
 *		errors on the shards (citus_copy.c).
 */
#ifndef TTL_CITUS_COPY_H
#define TTL_CITUS_COPY_H

extern void ttl_install_citus_copy_hook(void);

#endif							/* TTL_CITUS_COPY_H */
