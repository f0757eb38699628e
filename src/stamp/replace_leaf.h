/*
 * replace_leaf.h
 *		Rule 10's leaf cache (replace_leaf.c): per leaf, its unique indexes
 *		ready to probe, kept across statements.  Internal to stamp/.
 */
#ifndef TTL_REPLACE_LEAF_H
#define TTL_REPLACE_LEAF_H

#include "nodes/execnodes.h"
#include "utils/rel.h"

/* One unique index of the leaf, ready to probe. */
typedef struct ReplaceIndex
{
	Oid			indexoid;
	IndexInfo  *info;			/* with the equality operators of its keys */
	ExprState  *predicate;		/* a partial index's, or NULL */
} ReplaceIndex;

/*
 * What the probes of one leaf need, built once and kept across statements
 * and transactions (see "the leaf's cache" below).
 */
typedef struct LeafInfo
{
	struct LeafInfo *next;		/* on the retired list */
	MemoryContext mcxt;			/* holds all of it */
	int			nancestors;		/* the leaf, then the tables it is a */
	Oid		   *ancestors;		/* partition of, nearest first */
	EState	   *estate;			/* for index expressions and predicates */
	TupleDesc	desc;			/* a copy of the row type */
	const TupleTableSlotOps *table_ops;
	int			nindexes;
	ReplaceIndex *indexes;
	ResultRelInfo *generated;	/* its stored generated columns' expressions
								 * (ri_RelationDesc set per use), or NULL */
	struct TtlFloorSlot *floor;	/* its due floor's slot (replace_floor.c): */
	bool		floor_looked;	/* NULL once looked for: none to be had */
} LeafInfo;


extern LeafInfo *ttl_leaf_info(Relation rel);
extern void ttl_leaf_free_retired(void);

#endif							/* TTL_REPLACE_LEAF_H */
