/*
 * test_extents.c - the extent sets behind st_blocks (mds_proto/extents.c),
 * against a model: a bitmap of MDSP_EXT_ALIGN blocks.  Additions round
 * out to whole blocks, punches free only the whole blocks inside them, a
 * truncate keeps the block that holds its last byte; the set stays sorted,
 * disjoint and not touching, and its byte count is the model's.  Past the
 * bound the nearest neighbours merge: more is counted, never less.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mds_proto/proto.h"

#define B MDSP_EXT_ALIGN
#define NBLK 512

static unsigned char model[NBLK];

static void model_set(uint64_t lo, uint64_t hi, unsigned char v)
{
	for (uint64_t b = lo; b < hi && b < NBLK; b++)
		model[b] = v;
}

/* @s is well formed, is exactly the model, and counts its bytes */
static void expect_model(const struct mdsp_extset *s)
{
	unsigned char got[NBLK];
	uint64_t bytes = 0;

	/* plain ifs: check's asserts are too slow for this many */
	if (!mdsp_extset_valid(s->v, s->n))
		ck_abort_msg("not sorted, disjoint and aligned");
	memset(got, 0, sizeof(got));
	for (uint32_t i = 0; i < s->n; i++) {
		if (i && s->v[i].off <= s->v[i - 1].off + s->v[i - 1].len)
			ck_abort_msg("extents %u and %u touch", i - 1, i);
		for (uint64_t b = s->v[i].off / B; b < (s->v[i].off + s->v[i].len) / B; b++) {
			if (b >= NBLK)
				ck_abort_msg("block %llu past the model", (unsigned long long)b);
			got[b] = 1;
		}
	}
	for (int b = 0; b < NBLK; b++) {
		if (got[b] != model[b])
			ck_abort_msg("block %d: set %d, model %d", b, got[b], model[b]);
		bytes += model[b] ? B : 0;
	}
	if (mdsp_extset_bytes(s) != bytes)
		ck_abort_msg("%llu bytes, model %llu", (unsigned long long)mdsp_extset_bytes(s), (unsigned long long)bytes);
}

START_TEST(test_against_model)
{
	struct mdsp_extset s = { 0 };

	memset(model, 0, sizeof(model));
	srand(25);
	for (int i = 0; i < 20000; i++) {
		uint64_t off = (uint64_t)(rand() % (NBLK * B)), len = 1 + (uint64_t)(rand() % (40 * B));
		int what = rand() % 10;

		if (off + len > NBLK * B)
			len = NBLK * B - off;
		if (what < 5) {
			if (mdsp_extset_add(&s, off, len, UINT32_MAX))
				ck_abort_msg("add");
			model_set(off / B, (off + len + B - 1) / B, 1);
		} else if (what < 8) {
			if (mdsp_extset_remove(&s, off, len, UINT32_MAX))
				ck_abort_msg("remove");
			model_set((off + B - 1) / B, (off + len) / B, 0);
		} else if (what < 9) {
			/* what a client sends: aligned removals, taken away as they are */
			uint64_t lo = off / B * B, hi = (off + len) / B * B;

			if (hi > lo) {
				if (mdsp_extset_remove_exact(&s, lo, hi - lo, UINT32_MAX))
					ck_abort_msg("remove_exact");
				model_set(lo / B, hi / B, 0);
			}
		} else if (rand() % 8 == 0) {
			mdsp_extset_truncate(&s, off);
			model_set((off + B - 1) / B, NBLK, 0);
		}
		expect_model(&s);
	}
	mdsp_extset_free(&s);
}
END_TEST

START_TEST(test_edges)
{
	struct mdsp_extset s = { 0 };

	/* 50 KiB at 1.6 MiB: 13 blocks (the write straddles a block at each end) */
	ck_assert_int_eq(mdsp_extset_add(&s, 1600 * 1024, 50 * 1024, 128), 0);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 13 * B);
	/* one byte at the end of 1 GiB: one block */
	ck_assert_int_eq(mdsp_extset_add(&s, (1ull << 30) - 1, 1, 128), 0);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 14 * B);
	/* a punch smaller than a block frees nothing; a truncate inside a block keeps it */
	ck_assert_int_eq(mdsp_extset_remove(&s, 1600 * 1024 + 100, B - 200, 128), 0);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 14 * B);
	mdsp_extset_truncate(&s, 1600 * 1024 + 1);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), B);
	mdsp_extset_truncate(&s, 0);
	ck_assert_uint_eq(s.n, 0);
	/* offsets and lengths at the top of the range do not wrap */
	ck_assert_int_eq(mdsp_extset_add(&s, UINT64_MAX - 10, 100, 128), 0);
	ck_assert(mdsp_extset_valid(s.v, s.n));
	ck_assert_int_eq(mdsp_extset_remove(&s, 0, UINT64_MAX, 128), 0);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 0);
	mdsp_extset_free(&s);
}
END_TEST

START_TEST(test_bound_merges_nearest)
{
	struct mdsp_extset s = { 0 };

	/* three extents, at most two: the two with the smaller gap merge */
	ck_assert_int_eq(mdsp_extset_add(&s, 0, B, 2), 0);
	ck_assert_int_eq(mdsp_extset_add(&s, 100 * B, B, 2), 0);
	ck_assert_int_eq(mdsp_extset_add(&s, 103 * B, B, 2), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_uint_eq(s.v[0].off, 0);
	ck_assert_uint_eq(s.v[1].off, 100 * B);
	ck_assert_uint_eq(s.v[1].len, 4 * B);
	/* an upper bound: the gap counts, nothing stored is lost */
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 5 * B);
	/* a punch that splits past the bound merges again, never counts less than what is left */
	ck_assert_int_eq(mdsp_extset_remove(&s, 101 * B, B, 2), 0);
	ck_assert_uint_le(s.n, 2);
	ck_assert_uint_ge(mdsp_extset_bytes(&s), 4 * B);
	mdsp_extset_free(&s);
}
END_TEST

START_TEST(test_valid_and_set)
{
	struct mdsp_extent ok[] = { { 0, B }, { 2 * B, 3 * B } };
	struct mdsp_extent touching[] = { { 0, B }, { B, B } };
	struct mdsp_extent unsorted[] = { { 4 * B, B }, { 0, B } };
	struct mdsp_extent unaligned[] = { { 100, B } };
	struct mdsp_extent empty[] = { { 0, 0 } };
	struct mdsp_extent wraps[] = { { UINT64_MAX / B * B, 2 * B } };
	struct mdsp_extset s = { 0 };

	ck_assert(mdsp_extset_valid(ok, 2));
	ck_assert(mdsp_extset_valid(NULL, 0));
	ck_assert(!mdsp_extset_valid(touching, 2));
	ck_assert(!mdsp_extset_valid(unsorted, 2));
	ck_assert(!mdsp_extset_valid(unaligned, 1));
	ck_assert(!mdsp_extset_valid(empty, 1));
	ck_assert(!mdsp_extset_valid(wraps, 1));
	ck_assert_int_eq(mdsp_extset_set(&s, ok, 2), 0);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 4 * B);
	mdsp_extset_clear(&s);
	ck_assert_uint_eq(mdsp_extset_bytes(&s), 0);
	mdsp_extset_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("extents");
	TCase *tc = tcase_create("extents");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_against_model);
	tcase_add_test(tc, test_edges);
	tcase_add_test(tc, test_bound_merges_nearest);
	tcase_add_test(tc, test_valid_and_set);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
