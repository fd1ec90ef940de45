/*
 * rd_pack.h - private to client/readdir.c (and its unit test): an entry of a
 * kept READDIR batch, packed.
 *
 * A directory's last READDIR batch is kept while it holds Fs, and every
 * entry brings its whole inode (the readdirplus of DESIGN.md), which the
 * batch keeps so that it can bring an evicted inode back without a round
 * trip.  Every entry of every listed directory pays for it (issue 21.4:
 * 1 KB per cached inode), so the 240 bytes of a struct mdsp_inode and the
 * two sequences are kept packed: the inode as its 8-byte words, each
 * either zero (a file's rstat, quotas and layout), the same as the word two
 * before (a time as the previous time: a file's four times are often one),
 * a varint, or the varint of its complement (the "unknown" values near
 * UINT64_MAX); a 2-bit code per word in a 64-bit mask.  An mds_bench file
 * takes ~60 bytes.  Exact: rd_unpack gives back the bytes rd_pack was
 * given (padding included).
 */
#ifndef LOLIGO_CLIENT_RD_PACK_H
#define LOLIGO_CLIENT_RD_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mds_proto/proto.h"

#define RD_MI_WORDS (sizeof(struct mdsp_inode) / sizeof(uint64_t))
_Static_assert(sizeof(struct mdsp_inode) % sizeof(uint64_t) == 0 && 2 * RD_MI_WORDS <= 64,
	       "rd_pack packs struct mdsp_inode by 8-byte words, 2 bits of a 64-bit mask each");
/* a word's code in the mask */
enum { RD_W_ZERO, RD_W_SAME2, RD_W_LIT, RD_W_NOT };
/* the most rd_pack takes: three varints and a varint per word */
#define RD_PACK_MAX ((3 + RD_MI_WORDS) * 10)

/* @v as a LEB128 varint at @p (NULL: only counted); the bytes it takes */
static inline size_t rd_put_varint(char *p, uint64_t v)
{
	size_t n = 0;

	do {
		uint8_t byte = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			byte |= 0x80;
		if (p)
			p[n] = (char)byte;
		n++;
	} while (v);
	return n;
}

/* the varint at *@p (one rd_put_varint made: never read past it); *@p moves past it */
static inline uint64_t rd_get_varint(const char **p)
{
	const uint8_t *q = (const uint8_t *)*p;
	uint64_t v = 0;
	unsigned int shift = 0;

	for (;;) {
		uint8_t byte = *q++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			break;
		shift += 7;
	}
	*p = (const char *)q;
	return v;
}

/**
 * rd_pack - pack @cap_seq, @lease_seq and @mi at @p.
 * @p: where (NULL: only counted); at most RD_PACK_MAX bytes
 * Return: the bytes it takes.
 */
static inline size_t rd_pack(char *p, uint64_t cap_seq, uint64_t lease_seq, const struct mdsp_inode *mi)
{
	uint64_t w[RD_MI_WORDS], mask = 0;
	size_t n;

	memcpy(w, mi, sizeof(w));
	for (size_t i = 0; i < RD_MI_WORDS; i++) {
		uint64_t code = !w[i] ? RD_W_ZERO : i >= 2 && w[i] == w[i - 2] ? RD_W_SAME2 :
				~w[i] < w[i] ? RD_W_NOT : RD_W_LIT;
		mask |= code << (2 * i);
	}
	n = rd_put_varint(p, cap_seq);
	n += rd_put_varint(p ? p + n : NULL, lease_seq);
	n += rd_put_varint(p ? p + n : NULL, mask);
	for (size_t i = 0; i < RD_MI_WORDS; i++) {
		uint64_t code = (mask >> (2 * i)) & 3;
		if (code == RD_W_LIT || code == RD_W_NOT)
			n += rd_put_varint(p ? p + n : NULL, code == RD_W_NOT ? ~w[i] : w[i]);
	}
	return n;
}

/**
 * rd_unpack - what rd_pack packed at @p.
 * Return: the end of it.
 */
static inline const char *rd_unpack(const char *p, uint64_t *cap_seq, uint64_t *lease_seq, struct mdsp_inode *mi)
{
	uint64_t w[RD_MI_WORDS], mask;

	*cap_seq = rd_get_varint(&p);
	*lease_seq = rd_get_varint(&p);
	mask = rd_get_varint(&p);
	for (size_t i = 0; i < RD_MI_WORDS; i++) {
		switch ((mask >> (2 * i)) & 3) {
		case RD_W_LIT:
			w[i] = rd_get_varint(&p);
			break;
		case RD_W_NOT:
			w[i] = ~rd_get_varint(&p);
			break;
		case RD_W_SAME2:
			w[i] = w[i - 2];
			break;
		default:
			w[i] = 0;
		}
	}
	memcpy(mi, w, sizeof(*mi));
	return p;
}

#endif
