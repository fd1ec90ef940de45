/*
 * fuzz_journal.c - libFuzzer target: the MDS journal's decoders and damage
 * checker (mds/journal_fmt.c), which read whatever a disk or an operator
 * left in the segment objects and the header.
 *
 * The first input byte is a mode.  Bit 0 clear: the rest is taken as raw
 * segment bytes.  Set: it is a list of records (u8 type, u8 seq step,
 * u8 payload length, payload) encoded as entries with good checksums, so the
 * structure checks (SEG_START, sequence, SEG_END) are reached, not only the
 * checksum.  Bit 1 picks format 1.  The bytes also go through the header
 * decoder, and the segment through jscan() as segment 0 and, split in two,
 * as segments 0 and 1, with headers built from the next input bytes.  The
 * checker must never read out of bounds, and its verdict must be coherent:
 * the good bytes lie inside the segment, a clean segment is all good bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds/codec.h"
#include "mds/journal_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *seg[2];
	size_t len[2];
	int n;
};

static int mem_read(void *arg, uint64_t no, uint8_t **d, size_t *len)
{
	struct mem *m = arg;

	if (no >= (uint64_t)m->n)
		return -ENOENT;
	*len = m->len[no];
	*d = malloc(*len ? *len : 1);
	if (!*d)
		return -ENOMEM;
	memcpy(*d, m->seg[no], *len);
	return 0;
}

static int on_entry(void *arg, uint64_t segno, size_t off, const struct jentry *e)
{
	const struct mem *m = arg;

	if (segno >= (uint64_t)m->n || off + e->len > m->len[segno] || e->plen > e->len)
		abort();
	return 0;
}

static int on_segment(void *arg, const struct jseg_info *si, uint8_t *d)
{
	(void)arg;
	if (si->valid > si->size || (si->tail == JT_CLEAN && !si->sealed && si->valid != si->size))
		abort();
	free(d);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mdsp_buf b;
	struct jheader h;
	struct jseg_info si;
	struct jscan_result res;
	struct mem m;
	struct jreader rd = { mem_read, &m };
	const char *why;
	uint32_t fmt;
	uint64_t seq = 1;
	size_t i;
	int r;

	if (size < 1)
		return 0;
	fmt = data[0] & 2 ? JFMT_V1 : JFMT_V2;
	jheader_decode(data + 1, size - 1, &h, &why);
	mdsp_buf_init(&b);
	if (data[0] & 1) {
		uint8_t no[8] = { 0 };

		if (fmt == JFMT_V2)
			jent_put(&b, JE_SEG_START, seq, no, 8);
		for (i = 1; i + 3 <= size;) {
			uint8_t type = data[i] % 4, step = data[i + 1] % 3, len = data[i + 2];

			i += 3;
			if (len > size - i)
				len = (uint8_t)(size - i);
			seq += step;
			if (fmt == JFMT_V2)
				jent_put(&b, type, seq, data + i, len);
			else
				jent_put_v1(&b, type, data + i, len);
			i += len;
		}
	} else {
		enc_bytes(&b, data + 1, size - 1);
	}
	if (b.oom) {
		mdsp_buf_free(&b);
		return 0;
	}
	r = jseg_scan(fmt, 0, b.data, b.len, 1, NULL, NULL, &si);
	if (r || si.valid > b.len || (si.tail == JT_CLEAN && !si.sealed && si.valid != b.len))
		abort();

	memset(&h, 0, sizeof(h));
	h.fmt = fmt;
	h.expire_seq = 1;
	m.seg[0] = b.data;
	m.len[0] = b.len;
	m.n = 1;
	r = jscan(&h, &rd, on_entry, on_segment, &m, &res);
	if (r && r != -EUCLEAN)
		abort();
	/* the same bytes as two segments (the split point from the data) */
	m.len[0] = b.len ? data[0] % (b.len + 1) : 0;
	m.seg[1] = b.data + m.len[0];
	m.len[1] = b.len - m.len[0];
	m.n = 2;
	h.head_seg = data[0] >> 7;
	r = jscan(&h, &rd, on_entry, on_segment, &m, &res);
	if (r && r != -EUCLEAN)
		abort();
	mdsp_buf_free(&b);
	return 0;
}
