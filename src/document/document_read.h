/*
 * document_read.h
 *		The per-row reading of a document's root "_ts" and "ttl", inline:
 *		the view's filter (live_filter.c) and the purge index's key
 *		(purge_key.c) run it for every row they see, so it is compiled into
 *		them rather than called.  Everything else reads documents through
 *		the exported forms in document.h (document.c), which use the same
 *		code.  Depends on nothing of ttl's but numeric_read.c.
 *
 * Nothing here raises or allocates, except the detoast of a compressed or
 * out-of-line document in ttl_jsonb_root_of.
 */
#ifndef TTL_DOCUMENT_READ_H
#define TTL_DOCUMENT_READ_H

#include "common/int.h"
#include "utils/jsonb.h"

#include "base/numeric_read.h"

typedef enum TtlItemState
{
	TTL_ITEM_ABSENT,			/* no root ttl */
	TTL_ITEM_VALID,				/* -1 or 1..INT32_MAX */
	TTL_ITEM_INVALID			/* present but not a valid ttl */
} TtlItemState;

/* A valid time-to-live, for an item as for a container: -1 or 1..INT32_MAX. */
static inline bool
ttl_is_valid_ttl(int64 ttl)
{
	return ttl == -1 || (ttl >= 1 && ttl <= PG_INT32_MAX);
}

/*
 * A JSON integer as int64.  The fast path is the form nearly every integer
 * of a document takes (a timestamp in seconds, a ttl): a 4-byte varlena
 * header, a short numeric (utils/adt/numeric.c's layout), positive, at
 * most four base-10000 digit groups before the point and none after it, so
 * at most 10^16: no overflow checks, no division.  Anything else goes to
 * ttl_numeric_bytes_to_int64, which reads every form.
 */
static inline bool
ttl_read_int64(const char *num, int64 *result)
{
	uint32		word;
	uint16		hdr;

	memcpy(&word, num, sizeof(uint32));
	if (!VARATT_IS_1B(&word) && VARSIZE_4B(&word) >= VARHDRSZ + sizeof(uint16))
	{
		memcpy(&hdr, num + VARHDRSZ, sizeof(uint16));
		/* short (0x8000) and not special (0x4000), sign (0x2000) and weight sign (0x0040) clear */
		if ((hdr & 0xE040) == 0x8000 && (hdr & 0x003F) <= 3)
		{
			int			weight = hdr & 0x003F;
			int			ndigits = (VARSIZE_4B(&word) - VARHDRSZ - sizeof(uint16)) / sizeof(int16);
			const char *digits = num + VARHDRSZ + sizeof(uint16);
			int64		v = 0;
			int			k;

			if (ndigits <= weight + 1)
			{
				for (k = 0; k <= weight; k++)
				{
					int16		d = 0;

					if (k < ndigits)
						memcpy(&d, digits + k * sizeof(int16), sizeof(int16));
					v = v * 10000 + d;
				}
				*result = v;
				return true;
			}
		}
	}
	return ttl_numeric_bytes_to_int64(num, result);
}

static inline uint32
ttl_root_entry(const char *children, int i)
{
	JEntry		je;

	memcpy(&je, children + i * sizeof(JEntry), sizeof(JEntry));
	return je;
}

#define TTL_ENTRY_END(je, off) \
	(JBE_HAS_OFF(je) ? JBE_OFFLENFLD(je) : (off) + JBE_OFFLENFLD(je))

/* A root value entry's integer, if it is one (numerics start 4-aligned). */
static inline bool
ttl_root_value_int64(uint32 je, const char *base, uint32 off, int64 *n)
{
	return JBE_ISNUMERIC(je) && ttl_read_int64(base + INTALIGN(off), n);
}

/*
 * Read the root "_ts" and "ttl".  jsonb sorts keys by length, then bytes,
 * so the 3-byte keys come right after the few 1- and 2-byte ones: walking
 * the key entries from the start (summing lengths, no binary search, no
 * repeated offset look-ups) reaches both, and summing on over the entries
 * that follow reaches their values.  One loop of a few instructions per
 * entry, nothing stored on the way.
 *
 * root is the JsonbContainer of a root, at any address: every field is read
 * with memcpy, so a short-header document stored inline is read where it
 * lies, without the aligned copy pg_detoast_datum would make.  *has_ts: a
 * root "_ts" holding an integer; *item: whether a root "ttl" is absent,
 * valid (-1 or 1..INT32_MAX, then in *ttl) or anything else.
 */
static inline void
ttl_read_root(const char *root, bool *has_ts, int64 *ts, TtlItemState *item, int32 *ttl)
{
	uint32		header;
	int			count;
	const char *children = root + sizeof(uint32);
	const char *base;
	uint32		off = 0;
	int			i;
	int			ts_key = -1;
	int			ttl_key = -1;
	int64		n;

	*has_ts = false;
	*item = TTL_ITEM_ABSENT;
	memcpy(&header, root, sizeof(uint32));
	if ((header & JB_FOBJECT) == 0 || (header & JB_FSCALAR) != 0)
		return;
	count = header & JB_CMASK;
	base = children + 2 * count * sizeof(JEntry);

	/* the keys: where "_ts" and "ttl" are; off is where entry i starts */
	for (i = 0; i < count; i++)
	{
		uint32		end = TTL_ENTRY_END(ttl_root_entry(children, i), off);

		if (end - off >= 3)
		{
			const char *key = base + off;
			int			cmp;

			if (end - off > 3)
				break;			/* past the 3-byte keys */
			cmp = memcmp(key, "ttl", 3);
			if (cmp > 0)
				break;			/* past "ttl" ("_ts" sorts before it) */
			if (cmp == 0)
			{
				ttl_key = i++;
				off = end;
				break;
			}
			if (memcmp(key, "_ts", 3) == 0)
				ts_key = i;
		}
		off = end;
	}

	/* on to the values (entry count + key), summing lengths */
	if (ts_key >= 0)
	{
		for (; i < count + ts_key; i++)
			off = TTL_ENTRY_END(ttl_root_entry(children, i), off);
		if (ttl_root_value_int64(ttl_root_entry(children, i), base, off, &n))
		{
			*has_ts = true;
			*ts = n;
		}
	}
	if (ttl_key >= 0)
	{
		for (; i < count + ttl_key; i++)
			off = TTL_ENTRY_END(ttl_root_entry(children, i), off);
		if (ttl_root_value_int64(ttl_root_entry(children, i), base, off, &n) &&
			ttl_is_valid_ttl(n))
		{
			*item = TTL_ITEM_VALID;
			*ttl = (int32) n;
		}
		else
			*item = TTL_ITEM_INVALID;
	}
}

/*
 * The root container of a jsonb datum: where it lies when the datum is
 * stored inline uncompressed (also with a short header), else detoasted.
 */
static inline const char *
ttl_jsonb_root_of(Datum datum)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(datum);

	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
		return (const char *) &DatumGetJsonbP(datum)->root;
	if (VARATT_IS_SHORT(v))
		return VARDATA_SHORT(v);
	return VARDATA(v);
}

/*
 * The item's expiry second (_ts + effective ttl) when it expires at all
 * under a container default of default_ttl (rule: an own valid ttl wins, an
 * invalid one counts as absent, -1 never expires).  The view's filter and
 * ttl_root_expiry_second (expiry.c) share it.
 */
static inline bool
ttl_read_expiry_second(const char *root, int32 default_ttl, int64 *expiry)
{
	bool		has_ts;
	int64		ts;
	TtlItemState item;
	int32		item_ttl = 0;
	int32		effective;

	ttl_read_root(root, &has_ts, &ts, &item, &item_ttl);
	if (!has_ts)
		return false;
	effective = (item == TTL_ITEM_VALID) ? item_ttl : default_ttl;
	if (effective <= 0)
		return false;
	return !pg_add_s64_overflow(ts, effective, expiry);
}

#endif							/* TTL_DOCUMENT_READ_H */
