/*
 * journal_fmt.c - the journal's on-disk format: header and entry codecs and
 * the checker that walks a journal and tells a torn tail from damage (the
 * rules are in journal_int.h).  Pure functions over memory and a segment
 * reader, so the MDS, the offline tool, the unit tests and the fuzzer all
 * run the same code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "mds/codec.h"
#include "mds/journal_int.h"

#define OID_JOURNAL_PREFIX "mds_journal"

void journal_oid_seg(char *buf, size_t len, uint64_t no)
{
	snprintf(buf, len, OID_JOURNAL_PREFIX ".%016" PRIx64, no);
}

/* ---- header ---------------------------------------------------------------- */

void jheader_encode(struct mdsp_buf *b, const struct jheader *h)
{
	size_t start = b->len, off;
	uint8_t crc[4];

	if (h->fmt == JFMT_V1) {
		off = enc_begin(b, 1, 1);
		enc_u64(b, h->expire_seg);
		enc_u64(b, h->removed_upto);
		enc_end(b, off);
		return;
	}
	/* compat 2: a loligo-mds that knows only format 1 refuses it */
	off = enc_begin(b, JFMT_V2, JFMT_V2);
	enc_u64(b, h->expire_seg);
	enc_u64(b, h->expire_seq);
	enc_u64(b, h->removed_upto);
	enc_u64(b, h->head_seg);
	enc_end(b, off);
	if (b->oom)
		return;
	le32_put(crc, crc32c(0, b->data + start, b->len - start));
	enc_bytes(b, crc, 4);
}

int jheader_decode(const void *p, size_t len, struct jheader *h, const char **why)
{
	struct dec c, s;
	uint8_t v;
	size_t used;

	memset(h, 0, sizeof(*h));
	dec_init(&c, p, len);
	if (len >= 2 && ((const uint8_t *)p)[1] > JFMT_V2) {
		*why = "written by a newer loligo-mds (journal format unknown to this one)";
		return -EBADMSG;
	}
	v = dec_enter(&c, JFMT_V2, &s);
	if (!v) {
		*why = "not a journal header (truncated or overwritten)";
		return -EBADMSG;
	}
	if (v == JFMT_V1) {
		h->fmt = JFMT_V1;
		h->expire_seg = dec_u64(&s);
		h->removed_upto = dec_u64(&s);
		if (s.bad) {
			*why = "format-1 header too short";
			return -EBADMSG;
		}
		return 0;
	}
	h->fmt = JFMT_V2;
	h->expire_seg = dec_u64(&s);
	h->expire_seq = dec_u64(&s);
	h->removed_upto = dec_u64(&s);
	h->head_seg = dec_u64(&s);
	used = (size_t)(c.p - (const uint8_t *)p);
	if (s.bad || len - used < 4) {
		*why = "header too short";
		return -EBADMSG;
	}
	if (crc32c(0, p, used) != le32_get(c.p)) {
		*why = "header checksum mismatch";
		return -EBADMSG;
	}
	if (h->expire_seg > h->head_seg + 1 || h->removed_upto > h->expire_seg || !h->expire_seq) {
		*why = "header fields contradict each other (expire segment past the head, or removed past expire)";
		return -EBADMSG;
	}
	return 0;
}

/* ---- entries ----------------------------------------------------------------- */

void jent_put(struct mdsp_buf *b, uint32_t type, uint64_t seq, const void *payload, size_t len)
{
	uint8_t h[JE2_HDR_LEN];

	le32_put(h, JE2_MAGIC);
	le32_put(h + 4, type);
	le64_put(h + 8, seq);
	le32_put(h + 16, (uint32_t)len);
	le32_put(h + 20, crc32c(crc32c(0, h, 20), payload, len));
	enc_bytes(b, h, JE2_HDR_LEN);
	enc_bytes(b, payload, len);
}

void jent_put_v1(struct mdsp_buf *b, uint32_t type, const void *payload, size_t len)
{
	uint8_t h[JE1_HDR_LEN];

	le32_put(h, JE1_MAGIC);
	le32_put(h + 4, type);
	le32_put(h + 8, (uint32_t)len);
	le32_put(h + 12, crc32c(crc32c(0, h, 12), payload, len));
	enc_bytes(b, h, JE1_HDR_LEN);
	enc_bytes(b, payload, len);
}

int jent_parse(uint32_t fmt, const uint8_t *p, size_t avail, struct jentry *e)
{
	uint32_t magic = fmt == JFMT_V1 ? JE1_MAGIC : JE2_MAGIC, len, crc;
	size_t hl = fmt == JFMT_V1 ? JE1_HDR_LEN : JE2_HDR_LEN;
	uint8_t m[4];

	le32_put(m, magic);
	if (avail < 4)
		return memcmp(p, m, avail) ? JP_BAD : JP_SHORT;
	if (le32_get(p) != magic)
		return JP_BAD;
	if (avail < hl)
		return JP_SHORT;
	if (fmt == JFMT_V1) {
		len = le32_get(p + 8);
		crc = le32_get(p + 12);
	} else {
		len = le32_get(p + 16);
		crc = le32_get(p + 20);
	}
	if (len > avail - hl)
		return JP_SHORT;
	if (crc32c(crc32c(0, p, hl - 4), p + hl, len) != crc)
		return JP_BAD;
	e->type = le32_get(p + 4);
	e->seq = fmt == JFMT_V1 ? 0 : le64_get(p + 8);
	e->payload = p + hl;
	e->plen = len;
	e->len = hl + len;
	return JP_OK;
}

/* Is there a good entry anywhere in (@from, @len)?  Sets *@at to the first. */
static bool good_entry_after(uint32_t fmt, const uint8_t *data, size_t len, size_t from, size_t *at)
{
	uint32_t magic = fmt == JFMT_V1 ? JE1_MAGIC : JE2_MAGIC;
	size_t hl = fmt == JFMT_V1 ? JE1_HDR_LEN : JE2_HDR_LEN, o;
	struct jentry e;

	for (o = from + 1; o + hl <= len; o++) {
		if (le32_get(data + o) != magic)
			continue;
		if (jent_parse(fmt, data + o, len - o, &e) == JP_OK) {
			*at = o;
			return true;
		}
	}
	return false;
}

static const char *type_name(uint32_t t)
{
	switch (t) {
	case JE_EDITS: return "EDITS";
	case JE_SEG_END: return "SEG_END";
	case JE_SEG_START: return "SEG_START";
	}
	return "unknown";
}

#define DAMAGE(...) do { si->tail = JT_DAMAGED; si->bad_off = off; \
		snprintf(si->why, sizeof(si->why), __VA_ARGS__); goto out; } while (0)

int jseg_scan(uint32_t fmt, uint64_t no, const uint8_t *data, size_t len, uint64_t expect_seq,
	      jent_fn fn, void *arg, struct jseg_info *si)
{
	size_t off = 0, at;
	struct jentry e;
	int k, r = 0;

	memset(si, 0, sizeof(*si));
	si->no = no;
	si->size = len;
	while (off < len) {
		k = jent_parse(fmt, data + off, len - off, &e);
		if (k != JP_OK) {
			if (good_entry_after(fmt, data, len, off, &at))
				DAMAGE("%s entry, but a good entry follows at offset %zu: not a torn write",
				       k == JP_SHORT ? "truncated" : "bad (magic or checksum)", at);
			si->tail = JT_TORN;
			si->bad_off = off;
			snprintf(si->why, sizeof(si->why), "%s entry and nothing valid after it (%zu bytes)",
				 k == JP_SHORT ? "truncated" : "bad", len - off);
			break;
		}
		if (fmt == JFMT_V2) {
			if (!si->nentries) {
				if (e.type != JE_SEG_START)
					DAMAGE("the segment does not begin with SEG_START (found %s)", type_name(e.type));
				if (e.plen != 8)
					DAMAGE("SEG_START payload of %u bytes", e.plen);
				if (le64_get(e.payload) != no)
					DAMAGE("the object holds segment %" PRIx64 ", not %" PRIx64
					       " (segment objects moved or copied?)", le64_get(e.payload), no);
				if (expect_seq && e.seq != expect_seq)
					DAMAGE("sequence gap: expected entry %" PRIu64 ", found %" PRIu64
					       " (entries missing between segments)", expect_seq, e.seq);
			} else {
				if (e.seq != si->last_seq + 1)
					DAMAGE("sequence gap: entry %" PRIu64 " follows %" PRIu64, e.seq, si->last_seq);
				if (e.type == JE_SEG_START)
					DAMAGE("a second SEG_START inside the segment");
			}
		}
		if (e.type != JE_EDITS && e.type != JE_SEG_END && !(fmt == JFMT_V2 && e.type == JE_SEG_START))
			DAMAGE("unknown entry type %u", e.type);
		if (fn) {
			r = fn(arg, no, off, &e);
			if (r)
				goto out;
		}
		if (!si->nentries)
			si->first_seq = e.seq;
		si->last_seq = e.seq;
		si->nentries++;
		if (e.type == JE_EDITS)
			si->nedits++;
		off += e.len;
		si->valid = off;
		if (e.type == JE_SEG_END) {
			si->sealed = true;
			if (off < len)
				DAMAGE("%zu bytes after the segment's SEG_END", len - off);
			break;
		}
	}
out:
	return r;
}

/* ---- the whole journal --------------------------------------------------------- */

static int damage(struct jscan_result *res, uint64_t seg, size_t off, uint64_t seq, const char *why)
{
	journal_oid_seg(res->bad_oid, sizeof(res->bad_oid), seg);
	res->bad_seg = seg;
	res->bad_off = off;
	res->bad_seq = seq;
	snprintf(res->why, sizeof(res->why), "%s", why);
	return -EUCLEAN;
}

int jscan(const struct jheader *h, const struct jreader *rd, jent_fn efn, jseg_fn sfn, void *arg,
	  struct jscan_result *res)
{
	bool v2 = h->fmt == JFMT_V2;
	uint64_t s = h->expire_seg, expect = v2 ? h->expire_seq : 0;
	struct jseg_info si;
	uint8_t *data, *nd;
	size_t len, nlen;
	char why[320];
	int r;

	memset(res, 0, sizeof(*res));
	if (v2 && h->expire_seg > h->head_seg + 1)
		return damage(res, h->expire_seg, 0, expect, "the header's expire segment is past its head segment");
	for (;; s++) {
		r = rd->read(rd->arg, s, &data, &len);
		if (r == -ENOENT) {
			if (v2 && s <= h->head_seg) {
				snprintf(why, sizeof(why),
					 "segment missing: the header says the journal runs from segment %" PRIx64
					 " to %" PRIx64 " (deleted or lost object?)", h->expire_seg, h->head_seg);
				return damage(res, s, 0, expect, why);
			}
			res->next_seg = s;
			res->next_seq = expect;
			return 0;
		}
		if (r)
			return r;
		if (v2 && s > h->head_seg + 1) {
			free(data);
			return damage(res, s, 0, expect, "segment beyond the header's head segment + 1");
		}
		r = jseg_scan(h->fmt, s, data, len, expect, efn, arg, &si);
		if (r) {
			free(data);
			return r;
		}
		if (si.tail == JT_DAMAGED) {
			free(data);
			return damage(res, s, si.bad_off, si.nentries ? si.last_seq + 1 : expect, si.why);
		}
		res->nsegs++;
		res->nentries += si.nentries;
		res->nedits += si.nedits;
		if (!si.sealed) {
			/* a segment that is not sealed must be the newest one */
			r = rd->read(rd->arg, s + 1, &nd, &nlen);
			if (r == 0) {
				free(nd);
				free(data);
				snprintf(why, sizeof(why), "%s, but segment %" PRIx64 " follows it",
					 si.tail == JT_TORN ? si.why : "the segment is not sealed", s + 1);
				return damage(res, s, si.tail == JT_TORN ? si.bad_off : si.valid,
					      si.nentries ? si.last_seq + 1 : expect, why);
			}
			if (r != -ENOENT) {
				free(data);
				return r;
			}
			if (v2 && s < h->head_seg) {
				free(data);
				snprintf(why, sizeof(why), "segment %" PRIx64 " missing (the header's head segment is %"
					 PRIx64 ")", s + 1, h->head_seg);
				return damage(res, s + 1, 0, si.nentries ? si.last_seq + 1 : expect, why);
			}
			res->have_newest = true;
			res->newest_seg = s;
			res->newest_sealed = false;
			res->newest_valid = si.valid;
			res->torn_bytes = si.tail == JT_TORN ? len - si.valid : 0;
			res->next_seg = s;
			res->next_seq = si.nentries ? si.last_seq + 1 : expect;
			if (sfn)
				return sfn(arg, &si, data);
			free(data);
			return 0;
		}
		res->have_newest = true;
		res->newest_seg = s;
		res->newest_sealed = true;
		res->newest_valid = si.valid;
		expect = v2 ? si.last_seq + 1 : 0;
		if (sfn) {
			r = sfn(arg, &si, data);
			if (r)
				return r;
		} else {
			free(data);
		}
	}
}
