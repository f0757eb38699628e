/*
 * leaf_owner.h
 *		One owner per container tree (leaf_owner.c): whether a leaf of a
 *		container, or of a container's archive, has the owner of the table
 *		it belongs to, the text that names a leaf that does not, the
 *		WARNING of the DDL and ttl.enable that leave such a leaf behind, and
 *		the leaves a statement of the owner's may name (ONLY each).
 */
#ifndef TTL_LEAF_OWNER_H
#define TTL_LEAF_OWNER_H

#include "nodes/pg_list.h"

extern bool ttl_leaf_owner_fits(Oid root, Oid leaf);
extern Oid	ttl_leaf_foreign_owner(Oid root, Oid leaf);
extern char *ttl_foreign_leaf_text(Oid container, Oid leaf);
extern void ttl_warn_foreign_leaves(Oid relid);
extern List *ttl_owned_leaves(Oid root);
extern char *ttl_only_name(Oid leaf);

#endif							/* TTL_LEAF_OWNER_H */
