/*
 * numeric_read.c
 *		A JSON integer as int64, read straight from its numeric bytes: every
 *		form a numeric can take (document_read.h holds the inline fast path
 *		for the common one and falls back to this).
 *
 * Locking: none; pure memory.  Never raises: anything that is not an
 * integer in range is "not an integer" (false).
 */
#include "postgres.h"

#include "common/int.h"

#include "base/compat.h"
#include "base/numeric_read.h"

/*
 * Numeric storage, as laid out by utils/adt/numeric.c.  Reading it directly
 * turns a JSON integer into an int64 without allocation or error paths,
 * which is what a per-row filter needs.  Only integral values are accepted.
 */
#define NUM_BASE				10000
#define NUM_SIGN_MASK			0xC000
#define NUM_NEG					0x4000
#define NUM_SHORT				0x8000
#define NUM_SPECIAL				0xC000
#define NUM_SHORT_SIGN_MASK		0x2000
#define NUM_SHORT_WEIGHT_SIGN	0x0040
#define NUM_SHORT_WEIGHT_MASK	0x003F

bool
ttl_numeric_to_int64(Numeric num, int64 *result)
{
	return ttl_numeric_bytes_to_int64((const char *) num, result);
}

/*
 * The same for a numeric at any address (inside a jsonb that was not copied
 * to align it): every field is read with memcpy.  No division on the way:
 * this runs for every row the view's filter sees.
 */
bool
ttl_numeric_bytes_to_int64(const char *num, int64 *result)
{
	const char *data;
	int			len;
	uint16		header;
	bool		negative;
	int			weight;
	const char *digits;
	int			ndigits;
	uint64		acc = 0;
	int			i;

	if (VARATT_IS_1B(num))
	{
		data = num + VARHDRSZ_SHORT;
		len = VARSIZE_1B(num) - VARHDRSZ_SHORT;
	}
	else
	{
		uint32		word;

		memcpy(&word, num, sizeof(uint32));
		data = num + VARHDRSZ;
		len = (int) VARSIZE_4B(&word) - VARHDRSZ;
	}
	if (len < (int) sizeof(uint16))
		return false;
	memcpy(&header, data, sizeof(uint16));
	if ((header & NUM_SIGN_MASK) == NUM_SPECIAL)
		return false;			/* NaN, +-Infinity */
	if (header & NUM_SHORT)
	{
		negative = (header & NUM_SHORT_SIGN_MASK) != 0;
		weight = (header & NUM_SHORT_WEIGHT_SIGN) ?
			(int) (~NUM_SHORT_WEIGHT_MASK | (header & NUM_SHORT_WEIGHT_MASK)) :
			(int) (header & NUM_SHORT_WEIGHT_MASK);
		digits = data + sizeof(uint16);
		ndigits = (len - sizeof(uint16)) / sizeof(int16);
	}
	else
	{
		int16		w;

		if (len < (int) (2 * sizeof(uint16)))
			return false;
		negative = (header & NUM_SIGN_MASK) == NUM_NEG;
		memcpy(&w, data + sizeof(uint16), sizeof(int16));
		weight = w;
		digits = data + 2 * sizeof(uint16);
		ndigits = (len - 2 * sizeof(uint16)) / sizeof(int16);
	}

	for (i = 0; i < ndigits; i++)
	{
		int16		d;

		memcpy(&d, digits + i * sizeof(int16), sizeof(int16));
		if (i > weight)
		{
			if (d != 0)
				return false;	/* a fractional part */
			continue;
		}
		if (pg_mul_u64_overflow(acc, NUM_BASE, &acc) ||
			pg_add_u64_overflow(acc, (uint64) d, &acc))
			return false;
	}
	/* digit groups omitted at the end stand for zeros up to the weight */
	for (i = Max(ndigits, 0); i <= weight; i++)
	{
		if (pg_mul_u64_overflow(acc, NUM_BASE, &acc))
			return false;
	}

	if (negative)
	{
		if (acc > (uint64) PG_INT64_MAX + 1)
			return false;
		*result = (acc == (uint64) PG_INT64_MAX + 1) ? PG_INT64_MIN : -(int64) acc;
	}
	else
	{
		if (acc > (uint64) PG_INT64_MAX)
			return false;
		*result = (int64) acc;
	}
	return true;
}

