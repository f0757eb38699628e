/*
 * legal_hold.h
 *		Legal holds (1.8, SPEC "After 1.6"): the holds of a container
 *		as committed now, whether a document is held, the floor past the
 *		held rows that purge keeps per container and key range, and the
 *		refusals of ttl.disable (legal_hold.c).  Not the restore guard's
 *		hold (guard/), which is a different thing.
 */
#ifndef TTL_LEGAL_HOLD_H
#define TTL_LEGAL_HOLD_H

#include "utils/jsonb.h"

struct TtlHoldPairs;

typedef struct TtlLegalHolds
{
	int			n;
	char	  **names;
	Jsonb	  **matches;
	/* per hold: its root pairs when every value is a scalar, else NULL */
	struct TtlHoldPairs **pairs;
	/* the distinct keys of those pairs, each looked up once per document */
	int			nkeys;
	JsonbValue *keys;
	JsonbValue *found;			/* scratch: a document's value of each key */
	char	   *state;			/* scratch: 0 not looked up, 1 found, 2 absent */
} TtlLegalHolds;

/* The key ranges a floor is kept for (PurgeKind of purge_internal.h). */
#define TTL_HOLD_FLOOR_KINDS 3

extern TtlLegalHolds *ttl_legal_holds_read(Oid relid);
extern const char *ttl_legal_hold_covering(const TtlLegalHolds *holds, Jsonb *doc);
extern Datum ttl_legal_holds_array(const TtlLegalHolds *holds);
extern void ttl_legal_hold_refuse_disable(Oid relid);
extern void ttl_legal_hold_refuse_distributed(Oid relid);
/*
 * A floor is trusted for a day from when it was first kept: then the purge
 * walks the held rows once more, which finds rows that came below it by
 * ways the stamp trigger does not see (legal_hold.c).
 */
#define TTL_HOLD_FLOOR_MAX_AGE_SECS 86400

/* ttl_legal_hold_floor_get's answer */
#define TTL_FLOOR_NONE	0
#define TTL_FLOOR_FRESH 1
#define TTL_FLOOR_STALE 2

extern int	ttl_legal_hold_floor_get(Oid relid, int kind, int64 *key);
extern void ttl_legal_hold_floor_set(Oid relid, int kind, int64 key);
extern void ttl_legal_hold_floor_reset(Oid relid);

#endif							/* TTL_LEGAL_HOLD_H */
