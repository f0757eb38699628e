/*
 * index_owner.h
 *		Which indexes ttl made (index_owner.c): the table ttl.indexes, part
 *		of the registry and dumped with it.
 */
#ifndef TTL_INDEX_OWNER_H
#define TTL_INDEX_OWNER_H

extern void ttl_record_index_owner(Oid relid, const char *index_name, const char *purpose);
extern void ttl_forget_index_owners(Oid relid);
extern void ttl_follow_index_rename(Oid indexid, const char *newname);

#endif							/* TTL_INDEX_OWNER_H */
