/*
 * extents.c - sets of byte ranges of a file's data: what its objects hold.
 *
 * The MDS keeps one per regular file (mds/server.c, mds/locker.c), so that
 * st_blocks says what is stored: du, cp --sparse and tar -S see the real
 * usage of a sparse file, not whole objects from their start.  A client
 * keeps two per inode it writes (client/blocks.c): the ranges its
 * writebacks and fallocates added and the ones its punches took away since
 * its last cap flush, which carries them (CAPS v3).
 *
 * A set is an array of extents sorted by offset, disjoint and not touching
 * (adjacent ones are one), every boundary a multiple of MDSP_EXT_ALIGN:
 * a write allocates whole blocks of the filesystem under the store, a punch
 * frees only the whole blocks inside it, so added ranges are rounded out
 * and removed ones in.  A set is bounded: past @max extents the two nearest
 * ones merge (the gap between them counts as stored), so a file written in
 * a million scattered pieces costs the MDS a bounded record and reports an
 * upper bound.  Pure functions, no lock: the caller owns the set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds_proto/proto.h"

#define ALIGN_DOWN(x) ((x) / MDSP_EXT_ALIGN * MDSP_EXT_ALIGN)
#define OFF_MAX (1ull << 63)   /* no file offset goes past it (max_file_size) */

static uint64_t align_up(uint64_t x)
{
	if (x > OFF_MAX)
		return OFF_MAX;
	return (x + MDSP_EXT_ALIGN - 1) / MDSP_EXT_ALIGN * MDSP_EXT_ALIGN;
}

static uint64_t end_of(uint64_t off, uint64_t len)
{
	return len > OFF_MAX - (off > OFF_MAX ? OFF_MAX : off) ? OFF_MAX : off + len;
}

static int reserve(struct mdsp_extset *s, uint32_t n)
{
	struct mdsp_extent *v;
	uint32_t cap;

	if (n <= s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 4;
	while (cap < n)
		cap *= 2;
	v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

/* past @max: merge the two neighbours with the smallest gap until it fits */
static void bound(struct mdsp_extset *s, uint32_t max)
{
	if (!max)
		max = 1;
	while (s->n > max) {
		uint32_t best = 0;
		uint64_t gap = UINT64_MAX;

		for (uint32_t i = 0; i + 1 < s->n; i++) {
			uint64_t g = s->v[i + 1].off - (s->v[i].off + s->v[i].len);

			if (g < gap) {
				gap = g;
				best = i;
			}
		}
		s->v[best].len = s->v[best + 1].off + s->v[best + 1].len - s->v[best].off;
		memmove(&s->v[best + 1], &s->v[best + 2], (s->n - best - 2) * sizeof(s->v[0]));
		s->n--;
	}
}

/* add [lo, hi), both aligned */
static int add_aligned(struct mdsp_extset *s, uint64_t lo, uint64_t hi, uint32_t max)
{
	uint32_t i = 0, j;

	if (lo >= hi)
		return 0;
	/* the first extent that ends at or after lo (touching merges) */
	while (i < s->n && s->v[i].off + s->v[i].len < lo)
		i++;
	/* every extent from i that starts at or before hi merges */
	j = i;
	while (j < s->n && s->v[j].off <= hi) {
		if (s->v[j].off < lo)
			lo = s->v[j].off;
		if (s->v[j].off + s->v[j].len > hi)
			hi = s->v[j].off + s->v[j].len;
		j++;
	}
	if (j == i) {
		/* nothing to merge with: insert at i */
		if (reserve(s, s->n + 1))
			return -ENOMEM;
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(s->v[0]));
		s->n++;
	} else if (j > i + 1) {
		memmove(&s->v[i + 1], &s->v[j], (s->n - j) * sizeof(s->v[0]));
		s->n -= j - i - 1;
	}
	s->v[i].off = lo;
	s->v[i].len = hi - lo;
	bound(s, max);
	return 0;
}

int mdsp_extset_add(struct mdsp_extset *s, uint64_t off, uint64_t len, uint32_t max)
{
	if (!len)
		return 0;
	return add_aligned(s, ALIGN_DOWN(off > OFF_MAX ? OFF_MAX : off), align_up(end_of(off, len)), max);
}

/* take [lo, hi) away exactly */
static int remove_range(struct mdsp_extset *s, uint64_t lo, uint64_t hi, uint32_t max)
{
	if (lo >= hi)
		return 0;
	for (uint32_t i = 0; i < s->n;) {
		uint64_t a = s->v[i].off, b = a + s->v[i].len;

		if (b <= lo) {
			i++;
			continue;
		}
		if (a >= hi)
			break;
		if (a < lo && b > hi) {
			/* a hole in the middle: split */
			if (reserve(s, s->n + 1))
				return -ENOMEM;
			memmove(&s->v[i + 2], &s->v[i + 1], (s->n - i - 1) * sizeof(s->v[0]));
			s->n++;
			s->v[i].len = lo - a;
			s->v[i + 1].off = hi;
			s->v[i + 1].len = b - hi;
			bound(s, max);
			return 0;
		}
		if (a < lo) {
			s->v[i].len = lo - a;
			i++;
		} else if (b > hi) {
			s->v[i].off = hi;
			s->v[i].len = b - hi;
			i++;
		} else {
			memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(s->v[0]));
			s->n--;
		}
	}
	return 0;
}

int mdsp_extset_remove(struct mdsp_extset *s, uint64_t off, uint64_t len, uint32_t max)
{
	uint64_t lo, hi;

	if (!len)
		return 0;
	lo = align_up(off);
	hi = ALIGN_DOWN(end_of(off, len));
	return remove_range(s, lo, hi, max);
}

int mdsp_extset_remove_exact(struct mdsp_extset *s, uint64_t off, uint64_t len, uint32_t max)
{
	return remove_range(s, off, end_of(off, len), max);
}

void mdsp_extset_truncate(struct mdsp_extset *s, uint64_t size)
{
	uint64_t cut = align_up(size);

	while (s->n && s->v[s->n - 1].off >= cut)
		s->n--;
	if (s->n && s->v[s->n - 1].off + s->v[s->n - 1].len > cut)
		s->v[s->n - 1].len = cut - s->v[s->n - 1].off;
}

uint64_t mdsp_extset_bytes(const struct mdsp_extset *s)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < s->n; i++)
		t += s->v[i].len;
	return t;
}

bool mdsp_extset_valid(const struct mdsp_extent *v, uint32_t n)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!v[i].len || v[i].off % MDSP_EXT_ALIGN || v[i].len % MDSP_EXT_ALIGN || v[i].off > OFF_MAX ||
		    v[i].len > OFF_MAX - v[i].off || (i && v[i].off <= at))
			return false;
		at = v[i].off + v[i].len;
	}
	return true;
}

int mdsp_extset_set(struct mdsp_extset *s, const struct mdsp_extent *v, uint32_t n)
{
	if (reserve(s, n))
		return -ENOMEM;
	if (n)
		memcpy(s->v, v, n * sizeof(*v));
	s->n = n;
	return 0;
}

void mdsp_extset_clear(struct mdsp_extset *s)
{
	s->n = 0;
}

void mdsp_extset_free(struct mdsp_extset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
