/*
 * test_journal_fmt.c - the MDS journal's on-disk format (mds/journal_fmt.c):
 * header and entry round trips, every truncation and every flipped byte
 * refused, and the checker's verdict on whole journals built in memory: a
 * torn tail at the end of the newest segment is cut, anything else
 * (a flipped byte mid-journal, a missing, moved or extra segment, a gap in
 * sequence numbers, a header past what exists, bytes after SEG_END) is
 * damage with the right segment, offset and sequence number.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/mds.h"
#include "store/store.h"

/* ---- an in-memory journal ----------------------------------------------------- */

#define MAXSEG 8
struct mj {
	struct jheader h;
	struct mdsp_buf seg[MAXSEG];
	bool exists[MAXSEG];
	uint64_t seq;                 /* last seq used */
	size_t entry_off[MAXSEG][64]; /* offsets of entries, per segment */
	uint64_t entry_seq[MAXSEG][64];
	int nent[MAXSEG];
};

static int mj_read(void *arg, uint64_t no, uint8_t **data, size_t *len)
{
	struct mj *j = arg;

	if (no >= MAXSEG || !j->exists[no])
		return -ENOENT;
	*len = j->seg[no].len;
	*data = malloc(*len ? *len : 1);
	memcpy(*data, j->seg[no].data, *len);
	return 0;
}

static void mj_entry(struct mj *j, int s, uint32_t type, const void *p, size_t len)
{
	j->entry_off[s][j->nent[s]] = j->seg[s].len;
	j->entry_seq[s][j->nent[s]] = ++j->seq;
	j->nent[s]++;
	jent_put(&j->seg[s], type, j->seq, p, len);
}

/* @nseg segments of @per EDITS each; all sealed but the last unless @seal_last. */
static void mj_build(struct mj *j, int nseg, int per, bool seal_last)
{
	int s, i;
	uint8_t no[8];
	char payload[64];

	memset(j, 0, sizeof(*j));
	j->h.fmt = JFMT_V2;
	j->h.expire_seg = 0;
	j->h.expire_seq = 1;
	j->h.head_seg = (uint64_t)nseg - 1;
	for (s = 0; s < nseg; s++) {
		mdsp_buf_init(&j->seg[s]);
		j->exists[s] = true;
		le64_put(no, (uint64_t)s);
		mj_entry(j, s, JE_SEG_START, no, 8);
		for (i = 0; i < per; i++) {
			int n = snprintf(payload, sizeof(payload), "edits of segment %d entry %d", s, i);

			mj_entry(j, s, JE_EDITS, payload, (size_t)n);
		}
		if (s < nseg - 1 || seal_last)
			mj_entry(j, s, JE_SEG_END, NULL, 0);
	}
}

static void mj_free(struct mj *j)
{
	for (int s = 0; s < MAXSEG; s++)
		mdsp_buf_free(&j->seg[s]);
}

static int mj_scan(struct mj *j, struct jscan_result *res)
{
	struct jreader rd = { mj_read, j };

	return jscan(&j->h, &rd, NULL, NULL, NULL, res);
}

/* ---- header -------------------------------------------------------------------- */

START_TEST(test_header_round_trip_and_damage)
{
	struct jheader h = { .fmt = JFMT_V2, .expire_seg = 7, .expire_seq = 12345, .removed_upto = 5, .head_seg = 9 };
	struct jheader o;
	struct mdsp_buf b;
	const char *why;
	size_t i;

	mdsp_buf_init(&b);
	jheader_encode(&b, &h);
	ck_assert_int_eq(jheader_decode(b.data, b.len, &o, &why), 0);
	ck_assert_uint_eq(o.fmt, JFMT_V2);
	ck_assert_uint_eq(o.expire_seg, 7);
	ck_assert_uint_eq(o.expire_seq, 12345);
	ck_assert_uint_eq(o.removed_upto, 5);
	ck_assert_uint_eq(o.head_seg, 9);
	for (i = 0; i < b.len; i++)
		ck_assert_int_eq(jheader_decode(b.data, i, &o, &why), -EBADMSG);
	for (i = 0; i < b.len; i++) {
		b.data[i] ^= 0x10;
		ck_assert_msg(jheader_decode(b.data, b.len, &o, &why) == -EBADMSG, "flip at %zu accepted", i);
		b.data[i] ^= 0x10;
	}
	mdsp_buf_free(&b);

	/* format 1 is still read */
	h.fmt = JFMT_V1;
	mdsp_buf_init(&b);
	jheader_encode(&b, &h);
	ck_assert_int_eq(jheader_decode(b.data, b.len, &o, &why), 0);
	ck_assert_uint_eq(o.fmt, JFMT_V1);
	ck_assert_uint_eq(o.expire_seg, 7);
	ck_assert_uint_eq(o.removed_upto, 5);
	mdsp_buf_free(&b);

	/* fields that contradict each other */
	h.fmt = JFMT_V2;
	h.expire_seg = 11;   /* past head + 1 */
	mdsp_buf_init(&b);
	jheader_encode(&b, &h);
	ck_assert_int_eq(jheader_decode(b.data, b.len, &o, &why), -EBADMSG);
	mdsp_buf_free(&b);
}
END_TEST

/* ---- entries -------------------------------------------------------------------- */

START_TEST(test_entry_round_trip_truncation_flips)
{
	struct mdsp_buf b;
	struct jentry e;
	size_t i;
	int k;

	mdsp_buf_init(&b);
	jent_put(&b, JE_EDITS, 0x1122334455667788ull, "payload!", 8);
	ck_assert_int_eq(b.len, JE2_HDR_LEN + 8);
	ck_assert_int_eq(jent_parse(JFMT_V2, b.data, b.len, &e), JP_OK);
	ck_assert_uint_eq(e.type, JE_EDITS);
	ck_assert_uint_eq(e.seq, 0x1122334455667788ull);
	ck_assert_uint_eq(e.plen, 8);
	ck_assert(!memcmp(e.payload, "payload!", 8));
	ck_assert_uint_eq(e.len, b.len);
	for (i = 0; i < b.len; i++)
		ck_assert_int_eq(jent_parse(JFMT_V2, b.data, i, &e), JP_SHORT);
	for (i = 0; i < b.len; i++) {
		int bit;

		for (bit = 0; bit < 8; bit++) {
			b.data[i] ^= (uint8_t)(1u << bit);
			k = jent_parse(JFMT_V2, b.data, b.len, &e);
			ck_assert_msg(k != JP_OK, "flip of bit %d at %zu accepted", bit, i);
			b.data[i] ^= (uint8_t)(1u << bit);
		}
	}
	/* a format-1 entry is not a format-2 one, and the other way round */
	mdsp_buf_free(&b);
	mdsp_buf_init(&b);
	jent_put_v1(&b, JE_EDITS, "x", 1);
	ck_assert_int_eq(jent_parse(JFMT_V1, b.data, b.len, &e), JP_OK);
	ck_assert_uint_eq(e.seq, 0);
	ck_assert_int_eq(jent_parse(JFMT_V2, b.data, b.len, &e), JP_BAD);
	mdsp_buf_free(&b);
}
END_TEST

/* ---- whole journals ------------------------------------------------------------- */

START_TEST(test_clean_journal)
{
	struct mj j;
	struct jscan_result res;

	mj_build(&j, 3, 5, false);
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_eq(res.nsegs, 3);
	ck_assert_uint_eq(res.nedits, 15);
	ck_assert_uint_eq(res.nentries, 3 + 15 + 2);
	ck_assert(res.have_newest && !res.newest_sealed);
	ck_assert_uint_eq(res.newest_seg, 2);
	ck_assert_uint_eq(res.next_seg, 2);
	ck_assert_uint_eq(res.next_seq, j.seq + 1);
	ck_assert_uint_eq(res.torn_bytes, 0);
	mj_free(&j);

	/* the newest sealed: the journal goes on in the next segment */
	mj_build(&j, 2, 2, true);
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert(res.newest_sealed);
	ck_assert_uint_eq(res.next_seg, 2);
	ck_assert_uint_eq(res.next_seq, j.seq + 1);
	mj_free(&j);
}
END_TEST

START_TEST(test_torn_tails_are_cut)
{
	struct mj j;
	struct jscan_result res;
	uint8_t junk[100];
	size_t cut;

	/* a short last entry */
	mj_build(&j, 2, 4, false);
	cut = j.seg[1].len - 5;
	j.seg[1].len = cut;
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_eq(res.newest_valid, j.entry_off[1][j.nent[1] - 1]);
	ck_assert_uint_eq(res.torn_bytes, cut - res.newest_valid);
	ck_assert_uint_eq(res.next_seq, j.entry_seq[1][j.nent[1] - 1]);
	mj_free(&j);

	/* garbage after the last entry */
	mj_build(&j, 2, 4, false);
	memset(junk, 0xa5, sizeof(junk));
	enc_bytes(&j.seg[1], junk, sizeof(junk));
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_eq(res.torn_bytes, sizeof(junk));
	mj_free(&j);

	/* a flipped byte in the very last entry: the same as a torn write */
	mj_build(&j, 2, 4, false);
	j.seg[1].data[j.entry_off[1][j.nent[1] - 1] + JE2_HDR_LEN + 2] ^= 1;
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_gt(res.torn_bytes, 0);
	mj_free(&j);
}
END_TEST

static void expect_damage(struct mj *j, uint64_t seg, size_t off, uint64_t seq, const char *what)
{
	struct jscan_result res;
	int r = mj_scan(j, &res);

	ck_assert_msg(r == -EUCLEAN, "%s: accepted (r=%d)", what, r);
	ck_assert_msg(res.bad_seg == seg, "%s: damage in segment %llu, expected %llu (%s)", what,
		      (unsigned long long)res.bad_seg, (unsigned long long)seg, res.why);
	if (off != (size_t)-1)
		ck_assert_msg(res.bad_off == off, "%s: damage at %zu, expected %zu (%s)", what, res.bad_off, off,
			      res.why);
	if (seq)
		ck_assert_msg(res.bad_seq == seq, "%s: entry %llu, expected %llu", what,
			      (unsigned long long)res.bad_seq, (unsigned long long)seq);
	ck_assert(res.why[0]);
	ck_assert(!strncmp(res.bad_oid, "mds_journal.", 12));
}

START_TEST(test_damage_is_refused)
{
	struct mj j;
	struct mdsp_buf t;

	/* a flipped byte in the middle of a sealed segment */
	mj_build(&j, 3, 5, false);
	j.seg[1].data[j.entry_off[1][3] + JE2_HDR_LEN + 1] ^= 0x40;
	expect_damage(&j, 1, j.entry_off[1][3], j.entry_seq[1][3], "flip in a sealed segment");
	mj_free(&j);

	/* ... and in the middle of the newest one (good entries follow it) */
	mj_build(&j, 3, 5, false);
	j.seg[2].data[j.entry_off[2][2] + 3] ^= 0x01;   /* the magic */
	expect_damage(&j, 2, j.entry_off[2][2], j.entry_seq[2][2], "flip mid newest segment");
	mj_free(&j);

	/* a missing middle segment */
	mj_build(&j, 4, 2, false);
	j.exists[1] = false;
	expect_damage(&j, 1, 0, j.entry_seq[1][0], "deleted middle segment");
	mj_free(&j);

	/* the newest segment deleted (the header says it exists) */
	mj_build(&j, 3, 2, false);
	j.exists[2] = false;
	expect_damage(&j, 2, 0, 0, "deleted newest segment");
	mj_free(&j);

	/* segments swapped */
	mj_build(&j, 3, 2, false);
	t = j.seg[0];
	j.seg[0] = j.seg[1];
	j.seg[1] = t;
	expect_damage(&j, 0, 0, 0, "swapped segments");
	mj_free(&j);

	/* a sequence gap between segments: the first segment lost its SEG_END
	 * and one entry, rewritten whole (checksums fine) */
	mj_build(&j, 2, 3, false);
	j.seg[0].len = j.entry_off[0][j.nent[0] - 2];   /* drop the last EDITS and SEG_END */
	jent_put(&j.seg[0], JE_SEG_END, j.entry_seq[0][j.nent[0] - 1], NULL, 0);
	expect_damage(&j, 0, j.entry_off[0][j.nent[0] - 2], 0, "sequence gap inside a segment");
	mj_free(&j);

	/* the header's head past what exists */
	mj_build(&j, 2, 2, false);
	j.h.head_seg = 4;
	expect_damage(&j, 2, 0, 0, "header past the end");
	mj_free(&j);

	/* the header's expire segment points at a missing segment */
	mj_build(&j, 2, 2, false);
	j.h.expire_seg = 1;
	j.h.expire_seq = j.entry_seq[1][0];
	j.exists[1] = false;
	expect_damage(&j, 1, 0, 0, "expire segment missing");
	mj_free(&j);

	/* expire_seq does not match the first segment's SEG_START */
	mj_build(&j, 2, 2, false);
	j.h.expire_seq = 77;
	expect_damage(&j, 0, 0, 77, "wrong expire_seq");
	mj_free(&j);

	/* an unsealed segment followed by another one */
	mj_build(&j, 3, 2, false);
	j.seg[0].len = j.entry_off[0][j.nent[0] - 1];   /* drop SEG_END */
	expect_damage(&j, 0, -1, 0, "unsealed segment followed by another");
	mj_free(&j);

	/* bytes after SEG_END */
	mj_build(&j, 2, 2, false);
	enc_bytes(&j.seg[0], "xxxx", 4);
	expect_damage(&j, 0, j.seg[0].len - 4, 0, "bytes after SEG_END");
	mj_free(&j);

	/* a torn-looking tail in a segment that is not the newest */
	mj_build(&j, 2, 3, false);
	j.seg[0].len -= 3;   /* its SEG_END is cut short */
	expect_damage(&j, 0, j.entry_off[0][j.nent[0] - 1], 0, "short entry in an older segment");
	mj_free(&j);
}
END_TEST

START_TEST(test_crash_windows_are_accepted)
{
	struct mj j;
	struct jscan_result res;
	uint8_t no[8];

	/* the writer created head + 1 but did not yet write the header */
	mj_build(&j, 3, 2, false);
	j.h.head_seg = 1;
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_eq(res.newest_seg, 2);
	mj_free(&j);

	/* expiry moved past the head segment before the next was created */
	mj_build(&j, 2, 2, true);
	j.exists[0] = j.exists[1] = false;
	j.h.expire_seg = 2;
	j.h.expire_seq = j.seq + 1;
	j.h.head_seg = 1;
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert(!res.have_newest);
	ck_assert_uint_eq(res.next_seg, 2);
	ck_assert_uint_eq(res.next_seq, j.seq + 1);
	mj_free(&j);

	/* the new segment's SEG_START itself torn */
	mj_build(&j, 2, 2, true);
	mdsp_buf_init(&j.seg[2]);
	le64_put(no, 2);
	jent_put(&j.seg[2], JE_SEG_START, j.seq + 1, no, 8);
	j.seg[2].len -= 6;
	j.exists[2] = true;
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_eq(res.newest_seg, 2);
	ck_assert_uint_eq(res.newest_valid, 0);
	ck_assert_uint_eq(res.next_seq, j.seq + 1);
	mj_free(&j);
}
END_TEST

START_TEST(test_format1_rules)
{
	struct jheader h = { .fmt = JFMT_V1 };
	struct mdsp_buf s0, s1;
	struct jseg_info si;
	struct jscan_result res;
	struct mj j;

	memset(&j, 0, sizeof(j));
	mdsp_buf_init(&s0);
	mdsp_buf_init(&s1);
	jent_put_v1(&s0, JE_EDITS, "a", 1);
	jent_put_v1(&s0, JE_EDITS, "b", 1);
	jent_put_v1(&s0, JE_SEG_END, NULL, 0);
	jent_put_v1(&s1, JE_EDITS, "c", 1);
	enc_bytes(&s1, "junkjunk", 8);
	ck_assert_int_eq(jseg_scan(JFMT_V1, 0, s0.data, s0.len, 0, NULL, NULL, &si), 0);
	ck_assert(si.sealed);
	ck_assert_uint_eq(si.nedits, 2);
	j.h = h;
	j.seg[0] = s0;
	j.seg[1] = s1;
	j.exists[0] = j.exists[1] = true;
	ck_assert_int_eq(mj_scan(&j, &res), 0);
	ck_assert_uint_eq(res.nedits, 3);
	ck_assert_uint_eq(res.torn_bytes, 8);
	/* a bad entry with a segment after it is damage even in format 1 */
	j.seg[0].data[3] ^= 0xff;
	ck_assert_int_eq(mj_scan(&j, &res), -EUCLEAN);
	ck_assert_uint_eq(res.bad_seg, 0);
	mj_free(&j);
}
END_TEST

/* ---- applying a segment's edits to the store (japply, at expiry) ----------------- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

/* unchecked: made and removed in the runner, also when the test fails */
static char apply_dir[64];

static void apply_setup(void)
{
	snprintf(apply_dir, sizeof(apply_dir), "/tmp/loligo-japply-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(apply_dir));
}

static void apply_teardown(void)
{
	nftw(apply_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool has_key(struct store_pool *p, const char *oid, const char *key)
{
	void *v = NULL;
	size_t len = 0;
	int r = store_omap_get(p, oid, key, &v, &len);

	free(v);
	ck_assert_msg(r == 0 || r == -ENOENT, "omap_get %s %s: %s", oid, key, strerror(-r));
	return r == 0;
}

static void edit(struct japply *x, int op, const char *oid, const char *key, const char *key2)
{
	ck_assert_int_eq(japply_edit(x, op, oid, key ? key : "", op == EDIT_SET ? "v" : NULL, op == EDIT_SET ? 1 : 0,
				     key2 ? key2 : ""), 0);
}

/*
 * One segment's edits of an object apply as one compound op, and a removal
 * (rm_range, rm, remove) on an object that does not exist fails the op with
 * ENOENT, which the expiry ignores: the sets queued after it in the same op
 * were lost with it, silently (the completed table's trim-before-set lost a
 * session's first results that way).  They apply now; an op of removals
 * alone on a missing object still does nothing, and makes no object.
 */
START_TEST(test_apply_removal_before_set_on_missing_object)
{
	struct store_config cfg = { .backend = "local", .create = true, .local_map_size = 1ull << 30 };
	struct store_pool *p;
	struct store_stat sst;
	struct store *st;
	struct japply *x;
	struct store_op *op;

	cfg.local_path = apply_dir;
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_create(st, "meta"), 0);
	ck_assert_int_eq(store_pool_open(st, "meta", NULL, &p), 0);
	/* "old" exists before the segment, with a key */
	op = store_op_new();
	store_op_omap_set(op, "k0", "v", 1);
	ck_assert_int_eq(store_op_exec(p, "old", op), 0);

	x = japply_new();
	ck_assert_ptr_nonnull(x);
	edit(x, EDIT_RMRANGE, "trim", "", "t5");        /* a trim before the set that makes the object */
	edit(x, EDIT_SET, "trim", "t7", NULL);
	edit(x, EDIT_SET, "again", "a", NULL);          /* made, removed and made again in one segment */
	edit(x, EDIT_REMOVE, "again", NULL, NULL);
	edit(x, EDIT_SET, "again", "b", NULL);
	edit(x, EDIT_RM, "gone", "x", NULL);            /* removals alone on a missing object */
	edit(x, EDIT_REMOVE, "gone2", NULL, NULL);
	edit(x, EDIT_RM, "old", "k0", NULL);            /* an object that exists: as before */
	edit(x, EDIT_SET, "old", "k1", NULL);
	ck_assert_int_eq(japply_run(x, p, NULL), 0);

	ck_assert_msg(has_key(p, "trim", "t7"), "a set after a trim of a missing object was lost");
	ck_assert_msg(has_key(p, "again", "b"), "a set after the remove of a missing object was lost");
	ck_assert(!has_key(p, "again", "a"));
	ck_assert_int_eq(store_stat(p, "gone", &sst), -ENOENT);
	ck_assert_int_eq(store_stat(p, "gone2", &sst), -ENOENT);
	ck_assert(!has_key(p, "old", "k0"));
	ck_assert(has_key(p, "old", "k1"));

	store_pool_close(p);
	store_close(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("journal_fmt");
	TCase *tc = tcase_create("fmt");

	tcase_add_test(tc, test_header_round_trip_and_damage);
	tcase_add_test(tc, test_entry_round_trip_truncation_flips);
	tcase_add_test(tc, test_clean_journal);
	tcase_add_test(tc, test_torn_tails_are_cut);
	tcase_add_test(tc, test_damage_is_refused);
	tcase_add_test(tc, test_crash_windows_are_accepted);
	tcase_add_test(tc, test_format1_rules);
	suite_add_tcase(s, tc);
	tc = tcase_create("apply");
	tcase_add_unchecked_fixture(tc, apply_setup, apply_teardown);
	tcase_add_test(tc, test_apply_removal_before_set_on_missing_object);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
