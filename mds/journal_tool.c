/*
 * journal_tool.c - the offline journal tool, in the spirit of
 * cephfs-journal-tool: `loligo-mds [-c conf] --journal-inspect` and
 * `loligo-mds journal inspect|export FILE|import FILE|reset`.  They run with
 * the MDS stopped (the local store is locked by a running MDS; on RADOS
 * nothing stops two writers, so stop the MDS first).
 *
 *   inspect   the header, every segment, every entry (--summary: segments
 *             only), a torn tail, and the first damage with its segment
 *             object, offset and sequence number; also segment objects the
 *             walk did not reach.  Exit status 0 if the MDS would start on
 *             it, 1 if it is damaged.
 *   export    copy the header and every segment object, damaged or not, to
 *             a file (checksummed), to keep before a repair or to look at.
 *   import    replace the journal by an exported file: every segment object
 *             and the header.  The MDS replays it at its next start; what
 *             the journal held before is gone.  Import only a journal
 *             exported from this filesystem after its last expiry (an older
 *             one would replay old changes over newer objects).
 *   reset     apply every good entry before the first damage to the
 *             directory objects (in order: each entry is one whole mutation,
 *             so a prefix of the journal is a consistent, older state),
 *             drop everything from the damage on, move the inode and
 *             session number allocators past anything the dropped entries
 *             may have handed out, forget every client session (their
 *             preallocated inode numbers and completed requests may refer
 *             to dropped changes; clients see an eviction), and start an
 *             empty journal.  The changes from the damage on are lost.
 * import and reset change the store and want --yes-i-really-mean-it;
 * without it they say what they would do and change nothing.
 *
 * Export file: "LLJEXP01", u32 version 1, u32 header length, the header
 * object's bytes, u64 segment count, then per segment u64 number, u64
 * length and its bytes, and a u32 crc32c of everything before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/mds.h"

#define EXPORT_MAGIC "LLJEXP01"
#define EXPORT_VERSION 1
#define INO_SKIP (1ull << 24)    /* reset: inode numbers jump this far */
#define SID_SKIP (1ull << 16)    /* reset: session ids jump this far */

static const char *type_name(uint32_t t)
{
	switch (t) {
	case JE_EDITS: return "EDITS";
	case JE_SEG_END: return "SEG_END";
	case JE_SEG_START: return "SEG_START";
	}
	return "?";
}

/* Segment numbers of every "mds_journal.<hex>" object, sorted. */
static int list_segments(struct store_pool *meta, uint64_t **out, size_t *n)
{
	char **names = NULL;
	size_t cnt = 0, i, k = 0;
	uint64_t *v;
	int r = store_list_objects(meta, &names, &cnt);

	if (r)
		return r;
	v = calloc(cnt ? cnt : 1, sizeof(*v));
	for (i = 0; i < cnt; i++) {
		const char *p = names[i];
		char *end;

		if (v && !strncmp(p, OID_JOURNAL ".", strlen(OID_JOURNAL) + 1)) {
			unsigned long long no = strtoull(p + strlen(OID_JOURNAL) + 1, &end, 16);

			if (!*end && end != p + strlen(OID_JOURNAL) + 1)
				v[k++] = no;
		}
		free(names[i]);
	}
	free(names);
	if (!v)
		return -ENOMEM;
	for (i = 1; i < k; i++) {   /* insertion sort: a handful of segments */
		uint64_t x = v[i];
		size_t j = i;

		while (j && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
	*out = v;
	*n = k;
	return 0;
}

/* ---- inspect ------------------------------------------------------------------ */

struct inspect {
	bool entries;
	bool any_seg;
	uint64_t seg;                 /* segment whose entries are being printed */
	uint64_t last_visited;
	bool visited;
};

static int count_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		      const char *key2)
{
	static const char *const names[] = { "?", "set", "rm", "rmrange", "clear", "remove" };
	uint32_t *n = arg;

	(void)val;
	(void)key2;
	if (!n[0]++)
		printf(" (first: %s %s%s%s, %u bytes)", names[op >= 1 && op <= 5 ? op : 0], oid, *key ? "/" : "",
		       key, len);
	return 0;
}

static int inspect_entry(void *arg, uint64_t segno, size_t off, const struct jentry *e)
{
	struct inspect *x = arg;
	char oid[64];

	if (!x->any_seg || x->seg != segno) {
		journal_oid_seg(oid, sizeof(oid), segno);
		printf("segment %s\n", oid);
		x->any_seg = true;
		x->seg = segno;
	}
	if (!x->entries)
		return 0;
	printf("  offset %-10zu seq %-10" PRIu64 " %-9s %u bytes", off, e->seq, type_name(e->type), e->plen);
	if (e->type == JE_EDITS) {
		uint32_t n = 0;
		int r = jedits_for_each(e->payload, e->plen, count_edit, &n);

		printf("; %u edits%s", n, r ? " (DOES NOT DECODE)" : "");
	}
	printf("\n");
	return 0;
}

static int inspect_segment(void *arg, const struct jseg_info *si, uint8_t *data)
{
	struct inspect *x = arg;
	char oid[64];

	free(data);
	if (!x->any_seg || x->seg != si->no) {
		journal_oid_seg(oid, sizeof(oid), si->no);
		printf("segment %s\n", oid);
		x->any_seg = true;
		x->seg = si->no;
	}
	printf("  = %zu bytes, %" PRIu64 " entries (%" PRIu64 " EDITS)", si->size, si->nentries, si->nedits);
	if (si->nentries)
		printf(", seq %" PRIu64 "..%" PRIu64, si->first_seq, si->last_seq);
	printf(", %s\n", si->sealed ? "sealed" : "not sealed (the newest)");
	if (si->tail == JT_TORN)
		printf("  = torn tail: %s at offset %zu (the write in flight at a crash, never acknowledged: the MDS "
		       "cuts it at its next start)\n", si->why, si->bad_off);
	x->last_visited = si->no;
	x->visited = true;
	return 0;
}

static int do_inspect(struct mds *m, bool entries)
{
	struct jheader h;
	struct jscan_result res;
	struct jreader rd;
	struct inspect x = { .entries = entries };
	uint64_t *segs = NULL;
	size_t nsegs = 0, i;
	const char *why;
	int r, rc = 0;

	r = journal_header_read(m->meta, &h, &why);
	if (r == -ENOENT || r == -EBADMSG) {
		printf("journal header %s: DAMAGED (%s)\n", OID_JOURNAL, r == -ENOENT ? "missing" : why);
		printf("journal integrity: DAMAGED (header); `loligo-mds journal reset --yes-i-really-mean-it` "
		       "rebuilds it from the segments that exist\n");
		return 1;
	}
	if (r) {
		fprintf(stderr, "loligo-mds: cannot read the journal header: %s\n", strerror(-r));
		return 1;
	}
	if (h.fmt == JFMT_V1)
		printf("journal format 1 (no sequence numbers: damage and a torn tail look alike; the next start "
		       "converts it to format 2): expire segment %" PRIx64 ", removed below %" PRIx64 "\n",
		       h.expire_seg, h.removed_upto);
	else
		printf("journal format 2: expire segment %" PRIx64 " (first entry %" PRIu64 "), head segment %" PRIx64
		       ", removed below %" PRIx64 "\n", h.expire_seg, h.expire_seq, h.head_seg, h.removed_upto);
	journal_store_reader(m->meta, &rd);
	r = jscan(&h, &rd, inspect_entry, inspect_segment, &x, &res);
	if (r && r != -EUCLEAN) {
		fprintf(stderr, "loligo-mds: reading the journal failed: %s\n", strerror(-r));
		return 1;
	}
	printf("%" PRIu64 " segments, %" PRIu64 " entries (%" PRIu64 " EDITS)\n", res.nsegs, res.nentries, res.nedits);
	if (r == -EUCLEAN) {
		printf("first bad: segment object %s, offset %zu", res.bad_oid, res.bad_off);
		if (res.bad_seq)
			printf(", entry %" PRIu64, res.bad_seq);
		printf(": %s\n", res.why);
		rc = 1;
	}
	if (!list_segments(m->meta, &segs, &nsegs)) {
		for (i = 0; i < nsegs; i++) {
			char oid[64];

			if (segs[i] < h.removed_upto || (x.visited && segs[i] >= h.expire_seg && segs[i] <= x.last_visited))
				continue;
			journal_oid_seg(oid, sizeof(oid), segs[i]);
			printf("also present: %s (%s)\n", oid,
			       segs[i] < h.expire_seg ? "expired, not yet removed" : "not reached by the walk");
		}
		free(segs);
	}
	if (rc)
		printf("journal integrity: DAMAGED: the MDS will not start.  Keep a copy (`loligo-mds journal export "
		       "FILE`), then repair or restore %s, or `loligo-mds journal reset --yes-i-really-mean-it` "
		       "(keeps everything before the damage, loses the rest)\n", res.bad_oid);
	else if (res.torn_bytes)
		printf("journal integrity: OK (a torn tail of %zu bytes is cut at the next start)\n", res.torn_bytes);
	else
		printf("journal integrity: OK\n");
	return rc;
}

/* ---- export / import ----------------------------------------------------------- */

struct xfile {
	FILE *f;
	uint32_t crc;
	int err;
};

static void xwrite(struct xfile *x, const void *p, size_t n)
{
	if (x->err || !n)
		return;
	x->crc = crc32c(x->crc, p, n);
	if (fwrite(p, 1, n, x->f) != n)
		x->err = errno ? -errno : -EIO;
}

static void xwrite_u32(struct xfile *x, uint32_t v)
{
	uint8_t b[4];

	le32_put(b, v);
	xwrite(x, b, 4);
}

static void xwrite_u64(struct xfile *x, uint64_t v)
{
	uint8_t b[8];

	le64_put(b, v);
	xwrite(x, b, 8);
}

static int do_export(struct mds *m, const char *path)
{
	struct xfile x = { 0 };
	uint8_t hdr[4096], *data;
	uint64_t *segs = NULL, total = 0;
	size_t nsegs = 0, i, len;
	ssize_t hl;
	char tmp[4096];
	int r;

	hl = store_read(m->meta, OID_JOURNAL, 0, sizeof(hdr), hdr);
	if (hl == -ENOENT)
		hl = 0;   /* a missing header is exported as empty */
	if (hl < 0) {
		fprintf(stderr, "loligo-mds: cannot read the journal header: %s\n", strerror((int)-hl));
		return 1;
	}
	r = list_segments(m->meta, &segs, &nsegs);
	if (r) {
		fprintf(stderr, "loligo-mds: cannot list the journal segments: %s\n", strerror(-r));
		return 1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	x.f = fopen(tmp, "wx");
	if (!x.f) {
		fprintf(stderr, "loligo-mds: cannot create %s: %s\n", tmp, strerror(errno));
		free(segs);
		return 1;
	}
	xwrite(&x, EXPORT_MAGIC, 8);
	xwrite_u32(&x, EXPORT_VERSION);
	xwrite_u32(&x, (uint32_t)hl);
	xwrite(&x, hdr, (size_t)hl);
	xwrite_u64(&x, nsegs);
	for (i = 0; i < nsegs && !x.err; i++) {
		struct jreader rd;

		journal_store_reader(m->meta, &rd);
		r = rd.read(rd.arg, segs[i], &data, &len);
		if (r) {
			x.err = r;
			break;
		}
		xwrite_u64(&x, segs[i]);
		xwrite_u64(&x, len);
		xwrite(&x, data, len);
		total += len;
		free(data);
	}
	{
		uint32_t crc = x.crc;

		xwrite_u32(&x, crc);
	}
	if (fflush(x.f) || fsync(fileno(x.f)))
		x.err = x.err ? x.err : -errno;
	if (fclose(x.f) && !x.err)
		x.err = -errno;
	if (!x.err && rename(tmp, path))
		x.err = -errno;
	if (x.err) {
		unlink(tmp);
		fprintf(stderr, "loligo-mds: exporting the journal to %s failed: %s\n", path, strerror(-x.err));
		free(segs);
		return 1;
	}
	printf("exported the journal header (%zd bytes) and %zu segment objects (%" PRIu64 " bytes) to %s\n", hl,
	       nsegs, total, path);
	free(segs);
	return 0;
}

struct imported {
	uint8_t *buf;                 /* the whole file */
	size_t len;
	const uint8_t *hdr;
	uint32_t hdr_len;
	uint64_t nsegs;
	const uint8_t *segs;          /* the segment records */
};

static int read_export(const char *path, struct imported *im, const char **why)
{
	struct stat st;
	const uint8_t *p, *end;
	uint64_t i;
	int fd = open(path, O_RDONLY);
	ssize_t got;

	memset(im, 0, sizeof(*im));
	if (fd < 0) {
		*why = strerror(errno);
		return -errno;
	}
	if (fstat(fd, &st) || st.st_size < 28) {
		close(fd);
		*why = "too short to be a journal export";
		return -EINVAL;
	}
	im->len = (size_t)st.st_size;
	im->buf = malloc(im->len);
	if (!im->buf) {
		close(fd);
		*why = "out of memory";
		return -ENOMEM;
	}
	got = read(fd, im->buf, im->len);
	close(fd);
	if (got != (ssize_t)im->len) {
		*why = "short read";
		return -EIO;
	}
	p = im->buf;
	end = im->buf + im->len - 4;
	if (memcmp(p, EXPORT_MAGIC, 8) || le32_get(p + 8) != EXPORT_VERSION) {
		*why = "not a loligo journal export (or a newer version)";
		return -EINVAL;
	}
	if (crc32c(0, im->buf, im->len - 4) != le32_get(end)) {
		*why = "checksum mismatch: the file is damaged";
		return -EINVAL;
	}
	im->hdr_len = le32_get(p + 12);
	p += 16;
	if ((size_t)(end - p) < (size_t)im->hdr_len + 8) {
		*why = "truncated";
		return -EINVAL;
	}
	im->hdr = p;
	p += im->hdr_len;
	im->nsegs = le64_get(p);
	p += 8;
	im->segs = p;
	for (i = 0; i < im->nsegs; i++) {
		uint64_t l;

		if (end - p < 16) {
			*why = "truncated segment record";
			return -EINVAL;
		}
		l = le64_get(p + 8);
		p += 16;
		if ((uint64_t)(end - p) < l) {
			*why = "truncated segment";
			return -EINVAL;
		}
		p += l;
	}
	if (p != end) {
		*why = "trailing bytes";
		return -EINVAL;
	}
	return 0;
}

static int write_object(struct store_pool *meta, const char *oid, const void *data, size_t len)
{
	struct store_op *op = store_op_new();

	if (!op)
		return -ENOMEM;
	store_op_write_full(op, data, len);
	return store_op_exec(meta, oid, op);
}

static int remove_object(struct store_pool *meta, const char *oid)
{
	struct store_op *op = store_op_new();
	int r;

	if (!op)
		return -ENOMEM;
	store_op_remove(op);
	r = store_op_exec(meta, oid, op);
	return r == -ENOENT ? 0 : r;
}

static int do_import(struct mds *m, const char *path, bool confirmed)
{
	struct imported im;
	const uint8_t *p;
	uint64_t *old = NULL, i;
	size_t nold = 0, k;
	const char *why = NULL;
	char oid[64];
	int r;

	r = read_export(path, &im, &why);
	if (r) {
		fprintf(stderr, "loligo-mds: cannot import %s: %s\n", path, why);
		free(im.buf);
		return 1;
	}
	printf("%s: a journal header of %u bytes and %" PRIu64 " segment objects\n", path, im.hdr_len, im.nsegs);
	if (!confirmed) {
		printf("journal import replaces the journal (header and every segment object) by this file; what "
		       "the journal holds now is lost.  Nothing changed: add --yes-i-really-mean-it to do it\n");
		free(im.buf);
		return 2;
	}
	r = list_segments(m->meta, &old, &nold);
	if (r) {
		fprintf(stderr, "loligo-mds: cannot list the journal segments: %s\n", strerror(-r));
		free(im.buf);
		return 1;
	}
	/* segments first, the header that names them last */
	for (k = 0; k < nold && !r; k++) {
		journal_oid_seg(oid, sizeof(oid), old[k]);
		r = remove_object(m->meta, oid);
	}
	for (i = 0, p = im.segs; i < im.nsegs && !r; i++) {
		uint64_t no = le64_get(p), l = le64_get(p + 8);

		journal_oid_seg(oid, sizeof(oid), no);
		r = write_object(m->meta, oid, p + 16, (size_t)l);
		p += 16 + l;
	}
	if (!r)
		r = im.hdr_len ? write_object(m->meta, OID_JOURNAL, im.hdr, im.hdr_len) : remove_object(m->meta, OID_JOURNAL);
	free(old);
	free(im.buf);
	if (r) {
		fprintf(stderr, "loligo-mds: import failed: %s (the journal is now partly imported: run the "
			"import again)\n", strerror(-r));
		return 1;
	}
	printf("imported; the MDS replays this journal at its next start.  Check it:\n");
	return do_inspect(m, false);
}

/* ---- reset ----------------------------------------------------------------------- */

struct resetx {
	struct japply *apply;
	uint64_t applied;
	int err;
};

static int reset_entry(void *arg, uint64_t segno, size_t off, const struct jentry *e)
{
	struct resetx *x = arg;
	int r;

	(void)segno;
	(void)off;
	if (e->type != JE_EDITS)
		return 0;
	r = jedits_for_each(e->payload, e->plen, japply_edit, x->apply);
	if (r == -EBADMSG)
		return 0;   /* checksummed but does not decode: nothing to apply (inspect shows it) */
	if (!r)
		x->applied++;
	return r;
}

static int reset_segment(void *arg, const struct jseg_info *si, uint8_t *data)
{
	(void)arg;
	(void)si;
	free(data);
	return 0;
}

/* Move OID_TABLE's @key (u64 high-water mark) up by @skip. */
static int bump_table(struct mds *m, const char *key, uint64_t skip, uint64_t *now)
{
	struct store_op *op;
	void *v = NULL;
	size_t vl = 0;
	uint8_t b[8];
	uint64_t cur = 0;
	int r = store_omap_get(m->meta, OID_TABLE, key, &v, &vl);

	if (r && r != -ENOENT)
		return r;
	if (!r && vl == 8)
		cur = le64_get(v);
	free(v);
	if (r == -ENOENT)
		return 0;   /* not kept there (yet): nothing to move */
	*now = cur + skip;
	le64_put(b, *now);
	op = store_op_new();
	if (!op)
		return -ENOMEM;
	store_op_omap_set(op, key, b, 8);
	return store_op_exec(m->meta, OID_TABLE, op);
}

/*
 * Forget every client session: their records (with the inode numbers
 * preallocated to them, which the dropped part may have used) and their
 * completed-request tables, which may name requests whose changes were
 * dropped.  Their clients find their sessions gone, as after an eviction.
 */
static int drop_sessions(struct mds *m, size_t *n)
{
	struct store_op *op = store_op_new();
	char **names = NULL;
	size_t cnt = 0, i;
	int r;

	*n = 0;
	if (!op)
		return -ENOMEM;
	store_op_omap_clear(op);
	r = store_op_exec(m->meta, OID_SESSIONS, op);
	if (r && r != -ENOENT)
		return r;
	r = store_list_objects(m->meta, &names, &cnt);
	if (r)
		return r;
	for (i = 0; i < cnt; i++) {
		if (!r && !strncmp(names[i], "mds_completed.", 14)) {
			r = remove_object(m->meta, names[i]);
			(*n)++;
		}
		free(names[i]);
	}
	free(names);
	return r;
}

static int do_reset(struct mds *m, bool confirmed)
{
	struct jheader h, nh;
	struct jscan_result res;
	struct jreader rd;
	struct resetx x = { 0 };
	uint64_t *segs = NULL, newseg, ino = 0, sid = 0;
	size_t nsegs = 0, nobj = 0, nsess = 0, k;
	const char *why = NULL;
	bool hdr_bad = false, lost;
	struct mdsp_buf b;
	uint8_t no[8];
	char oid[64];
	int r;

	r = list_segments(m->meta, &segs, &nsegs);
	if (r) {
		fprintf(stderr, "loligo-mds: cannot list the journal segments: %s\n", strerror(-r));
		return 1;
	}
	r = journal_header_read(m->meta, &h, &why);
	if (r == -ENOENT || r == -EBADMSG) {
		/* rebuild from what exists: from the lowest segment, sequence unknown */
		hdr_bad = true;
		memset(&h, 0, sizeof(h));
		h.fmt = JFMT_V2;
		if (nsegs) {
			uint8_t *d;
			size_t l;

			journal_store_reader(m->meta, &rd);
			if (!rd.read(rd.arg, segs[0], &d, &l)) {
				if (l >= 4 && le32_get(d) == JE1_MAGIC)
					h.fmt = JFMT_V1;
				free(d);
			}
			h.expire_seg = h.removed_upto = segs[0];
			h.head_seg = segs[nsegs - 1];
		}
		printf("the journal header is %s: walking the segments from %" PRIx64 "\n",
		       r == -ENOENT ? "missing" : why, h.expire_seg);
	} else if (r) {
		fprintf(stderr, "loligo-mds: cannot read the journal header: %s\n", strerror(-r));
		free(segs);
		return 1;
	}
	x.apply = japply_new();
	if (!x.apply) {
		free(segs);
		return 1;
	}
	journal_store_reader(m->meta, &rd);
	r = jscan(&h, &rd, reset_entry, reset_segment, &x, &res);
	if (r && r != -EUCLEAN) {
		fprintf(stderr, "loligo-mds: reading the journal failed: %s; nothing changed\n", strerror(-r));
		japply_free(x.apply);
		free(segs);
		return 1;
	}
	lost = r == -EUCLEAN || hdr_bad;
	if (r == -EUCLEAN)
		printf("damage at segment object %s, offset %zu%s: %s\n", res.bad_oid, res.bad_off,
		       res.bad_seq ? " (and every entry from there on)" : "", res.why);
	printf("journal reset: %" PRIu64 " entries before the damage are applied to the directory objects; %s\n",
	       x.applied, r == -EUCLEAN ? "everything from the damage on is DROPPED (those changes are lost)"
				       : "nothing is dropped");
	if (!confirmed) {
		printf("Nothing changed: add --yes-i-really-mean-it to do it\n");
		japply_free(x.apply);
		free(segs);
		return 2;
	}
	r = japply_run(x.apply, m->meta, &nobj);
	if (r) {
		fprintf(stderr, "loligo-mds: applying the journal failed: %s; the journal is unchanged, run the reset "
			"again\n", strerror(-r));
		free(segs);
		return 1;
	}
	/* numbers the dropped entries may have handed out are never reused,
	 * and no session keeps a pool of them */
	if (lost && (r = bump_table(m, "next_ino", INO_SKIP, &ino)) == 0 &&
	    (r = bump_table(m, "next_sid", SID_SKIP, &sid)) == 0)
		r = drop_sessions(m, &nsess);
	if (r) {
		fprintf(stderr, "loligo-mds: moving the allocators failed: %s; run the reset again\n", strerror(-r));
		free(segs);
		return 1;
	}
	/* an empty journal in a new segment past everything that exists */
	newseg = h.head_seg + 1;
	if (nsegs && segs[nsegs - 1] >= newseg)
		newseg = segs[nsegs - 1] + 1;
	if (res.next_seg >= newseg)
		newseg = res.next_seg + 1;
	nh.fmt = JFMT_V2;
	nh.expire_seg = newseg;
	nh.expire_seq = res.next_seq ? res.next_seq : 1;
	nh.removed_upto = h.removed_upto <= newseg ? h.removed_upto : newseg;
	nh.head_seg = newseg;
	mdsp_buf_init(&b);
	le64_put(no, newseg);
	jent_put(&b, JE_SEG_START, nh.expire_seq, no, 8);
	journal_oid_seg(oid, sizeof(oid), newseg);
	r = b.oom ? -ENOMEM : write_object(m->meta, oid, b.data, b.len);
	mdsp_buf_free(&b);
	if (!r)
		r = journal_header_write(m->meta, &nh);
	if (r) {
		fprintf(stderr, "loligo-mds: writing the new journal failed: %s; run the reset again\n", strerror(-r));
		free(segs);
		return 1;
	}
	/* the old segments go (a failure here is finished by the next start) */
	for (k = 0; k < nsegs; k++) {
		journal_oid_seg(oid, sizeof(oid), segs[k]);
		if (segs[k] < newseg && remove_object(m->meta, oid) == 0)
			continue;
	}
	nh.removed_upto = newseg;
	journal_header_write(m->meta, &nh);
	free(segs);
	printf("done: %zu objects updated; the journal starts empty at segment %" PRIx64 " (entry %" PRIu64 ")\n",
	       nobj, newseg, nh.expire_seq);
	if (lost)
		printf("inode numbers now start at %" PRIu64 " and session ids at %" PRIu64 ", past anything the "
		       "dropped entries handed out; every client session is forgotten (%zu completed tables): "
		       "clients find their sessions gone, as after an eviction, and open new ones.  Files created in "
		       "the dropped part are gone (their data objects stay in the data pool, unreferenced)\n", ino,
		       sid, nsess);
	return 0;
}

int journal_tool_main(struct mds *m, const char *cmd, const char *file, bool confirmed, bool entries)
{
	if (!strcmp(cmd, "inspect"))
		return do_inspect(m, entries);
	if (!strcmp(cmd, "export"))
		return do_export(m, file);
	if (!strcmp(cmd, "import"))
		return do_import(m, file, confirmed);
	if (!strcmp(cmd, "reset"))
		return do_reset(m, confirmed);
	fprintf(stderr, "loligo-mds: unknown journal command '%s'\n", cmd);
	return 2;
}
