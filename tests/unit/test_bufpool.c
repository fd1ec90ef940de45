/*
 * test_bufpool.c - common/bufpool.c: a put buffer is the next one handed
 * out for a size it holds, the smallest that fits first; sizes outside the
 * pool's range are neither kept nor handed out; a full pool keeps the
 * biggest buffers and frees the rest (what it keeps stays bounded); the
 * counters follow; many threads at once never get one buffer twice.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/bufpool.h"

#define MIN (64u << 10)
#define LIMIT (1u << 20)

START_TEST(test_reuse_smallest_that_fits)
{
	struct bufpool bp;
	size_t cap;
	char *a = malloc(100 << 10), *b = malloc(300 << 10), *p;

	bufpool_init(&bp, MIN, LIMIT);
	ck_assert_ptr_null(bufpool_get(&bp, 200 << 10, &cap));       /* empty */
	ck_assert_uint_eq(cap, 0);
	ck_assert_uint_eq(perf_get(&bp.misses), 1);
	bufpool_put(&bp, b, 300 << 10);
	bufpool_put(&bp, a, 100 << 10);
	p = bufpool_get(&bp, 80 << 10, &cap);        /* a fits and is smaller */
	ck_assert_ptr_eq(p, a);
	ck_assert_uint_eq(cap, 100 << 10);
	memset(p, 0x5a, cap);                         /* all of it is the caller's */
	ck_assert_ptr_null(bufpool_get(&bp, 400 << 10, &cap));       /* b is too small */
	p = bufpool_get(&bp, 200 << 10, &cap);
	ck_assert_ptr_eq(p, b);
	ck_assert_uint_eq(cap, 300 << 10);
	ck_assert_uint_eq(perf_get(&bp.hits), 2);
	ck_assert_uint_eq(perf_get(&bp.misses), 2);
	ck_assert_uint_eq(bp.n, 0);
	bufpool_put(&bp, a, 100 << 10);
	bufpool_put(&bp, b, 300 << 10);
	bufpool_destroy(&bp);                         /* frees both (ASan/valgrind: no leak) */
}
END_TEST

START_TEST(test_out_of_range)
{
	struct bufpool bp;
	size_t cap = 7;

	bufpool_init(&bp, MIN, LIMIT);
	bufpool_put(&bp, malloc(MIN - 1), MIN - 1);   /* too small: freed */
	bufpool_put(&bp, malloc(LIMIT + 1), LIMIT + 1);  /* too big: freed */
	bufpool_put(&bp, NULL, MIN);                  /* nothing */
	ck_assert_uint_eq(bp.n, 0);
	/* a small want is not the pool's business: not counted */
	ck_assert_ptr_null(bufpool_get(&bp, 100, &cap));
	ck_assert_uint_eq(cap, 0);
	ck_assert_uint_eq(perf_get(&bp.misses), 0);
	/* a too big one is a miss even with buffers kept */
	bufpool_put(&bp, malloc(LIMIT), LIMIT);
	ck_assert_ptr_null(bufpool_get(&bp, LIMIT + 1, &cap));
	ck_assert_uint_eq(perf_get(&bp.misses), 1);
	bufpool_destroy(&bp);
}
END_TEST

START_TEST(test_full_keeps_the_biggest)
{
	struct bufpool bp;
	void *v[BUFPOOL_SLOTS], *big;
	size_t cap;
	unsigned i;

	bufpool_init(&bp, MIN, LIMIT);
	for (i = 0; i < BUFPOOL_SLOTS; i++) {
		v[i] = malloc(MIN + i * 4096);
		bufpool_put(&bp, v[i], MIN + i * 4096);
	}
	ck_assert_uint_eq(bp.n, BUFPOOL_SLOTS);
	/* a smaller one than all kept is freed; a bigger one replaces the smallest */
	bufpool_put(&bp, malloc(MIN), MIN);
	ck_assert_uint_eq(bp.n, BUFPOOL_SLOTS);
	bufpool_put(&bp, malloc(LIMIT), LIMIT);
	ck_assert_uint_eq(bp.n, BUFPOOL_SLOTS);
	for (i = 0; i < bp.n; i++)
		ck_assert_ptr_ne(bp.slot[i].p, v[0]);
	big = bufpool_get(&bp, LIMIT, &cap);
	ck_assert_ptr_nonnull(big);
	ck_assert_uint_eq(cap, LIMIT);
	bufpool_put(&bp, big, cap);
	bufpool_destroy(&bp);
}
END_TEST

#define NTH 4
#define ROUNDS 20000

static struct bufpool shared;

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg, bad = 0;

	for (int r = 0; r < ROUNDS; r++) {
		size_t want = MIN + (size_t)((r * 7919 + id) % 64) * 4096, cap;
		uint64_t *p = bufpool_get(&shared, want, &cap), tag = id << 32 | (uint64_t)r;

		if (!p) {
			p = malloc(want);
			cap = want;
		}
		if (!p || cap < want)
			return (void *)(uintptr_t)1;
		p[0] = p[cap / 8 - 1] = tag;
		if (r % 3 == 0)
			sched_yield();
		if (p[0] != tag || p[cap / 8 - 1] != tag)
			bad++;          /* someone else was handed it too */
		bufpool_put(&shared, p, cap);
	}
	return (void *)bad;
}

START_TEST(test_threads_never_share)
{
	pthread_t th[NTH];
	void *bad;

	bufpool_init(&shared, MIN, LIMIT);
	for (uintptr_t t = 0; t < NTH; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, churn, (void *)(t + 1)), 0);
	for (int t = 0; t < NTH; t++) {
		pthread_join(th[t], &bad);
		ck_assert_uint_eq((uintptr_t)bad, 0);
	}
	ck_assert_uint_gt(perf_get(&shared.hits), 0);
	ck_assert_uint_eq(perf_get(&shared.hits) + perf_get(&shared.misses), (uint64_t)NTH * ROUNDS);
	ck_assert_uint_le(shared.n, BUFPOOL_SLOTS);
	bufpool_destroy(&shared);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bufpool");
	TCase *tc = tcase_create("bufpool");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_reuse_smallest_that_fits);
	tcase_add_test(tc, test_out_of_range);
	tcase_add_test(tc, test_full_keeps_the_biggest);
	tcase_add_test(tc, test_threads_never_share);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
