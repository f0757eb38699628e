/*
 * replace_state.h
 *		Rule 10's statement state (replace.c builds it): what the look
 *		(replace_look.c) and the probe (replace_probe.c) of one statement
 *		share.  Internal to stamp/.
 */
#ifndef TTL_REPLACE_STATE_H
#define TTL_REPLACE_STATE_H

#include "registry/registry.h"
#include "stamp/due_floor.h"
#include "stamp/replace.h"
#include "stamp/replace_leaf.h"

/* The hashes of the keys of the due items in one unique index (sorted). */
typedef struct DueFilter
{
	bool		usable;			/* false: that index is probed */
	int			n;
	int			size;
	uint32	   *hashes;
} DueFilter;

struct TtlReplaceState
{
	bool		active;			/* false: nothing to do for this statement */
	Oid			container;		/* the registered table, or a Citus shard */
	bool		from_trigger;	/* the policy is the trigger's (a piece of a
								 * distributed container) */
	TtlContainer policy;		/* as the statement found it, then as committed */
	int64		now_seconds;
	AttrNumber	doc_attnum;
	LeafInfo   *leaf;
	TupleTableSlot *new_slot;	/* the row being written */
	TupleTableSlot *holder_slot;	/* a row holding its key */
	int64		rows;			/* rows seen by this statement */
	int64		next_filter;	/* the row at which to try the due filter */
	DueFilter  *filters;		/* one per index of the leaf, or NULL */
	int32		filter_default; /* the default the filter was made with */
	TtlFloor   *floor;			/* the leaf's due floor, or NULL */
	bool		floor_usable;	/* validated for this statement's policy */
	bool		announce;		/* the policy is known: due rows are announced */
	int			look;			/* LOOK_*: what the statement's look holds */
	TtlLookMark mark;			/* when it was taken (due_floor.c) */
	int64		next_look;		/* the row at which to look again */
	bool		policy_fresh;	/* read as committed by a look */
	uint64		epoch_seen;		/* the policy epoch it was read at */
};

/* What the statement's look found (replace_look.c, "the look's guard"). */
#define LOOK_NONE			0	/* none, or it no longer holds: probe */
#define LOOK_NOTHING_DUE	1	/* the shortcut: skip every row */
#define LOOK_FILTER			2	/* the due filter: skip the rows it clears */

#endif							/* TTL_REPLACE_STATE_H */
