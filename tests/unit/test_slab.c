/*
 * test_slab.c - common/slab.c: objects come zeroed, of their class's size,
 * a freed one is the next one of its class handed out (whatever thread
 * frees or asks), classes do not mix, big objects go to malloc, and the
 * counts follow; many threads at once hand out no object twice.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/slab.h"

/* under ASan every object is malloc's (slab.c): the class checks do not apply */
#if defined(__SANITIZE_ADDRESS__)
#define PASSTHROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PASSTHROUGH 1
#endif
#endif
#ifndef PASSTHROUGH
#define PASSTHROUGH 0
#endif

START_TEST(test_zeroed_and_sized)
{
	unsigned char *p = slab_zalloc(100);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(slab_size(p, 100), 112);
	for (int i = 0; i < 112; i++)
		ck_assert_uint_eq(p[i], 0);
	memset(p, 0xa5, 112);
	slab_free(p, 100);
	/* the same class gets it back, zeroed again */
	unsigned char *q = slab_zalloc(97);

	ck_assert_ptr_eq(q, p);
	for (int i = 0; i < 112; i++)
		ck_assert_uint_eq(q[i], 0);
	slab_free(q, 97);
	ck_assert_uint_eq(slab_size(NULL, 100), 0);
}
END_TEST

START_TEST(test_classes_do_not_mix)
{
	void *a = slab_zalloc(248), *b;

	slab_free(a, 248);
	b = slab_zalloc(88);       /* another class: not a's memory */
	ck_assert_ptr_ne(a, b);
	ck_assert_ptr_eq(slab_zalloc(250), a);   /* 250 and 248 share the 256 class */
	slab_free(a, 250);
	slab_free(b, 88);
}
END_TEST

START_TEST(test_big_goes_to_malloc)
{
	char *p = slab_zalloc(SLAB_MAX + 1);
	uint64_t chunks0, used0, chunks1, used1;

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_ge(slab_size(p, SLAB_MAX + 1), SLAB_MAX + 1);
	slab_stats(&chunks0, &used0);
	slab_free(p, SLAB_MAX + 1);
	slab_stats(&chunks1, &used1);
	ck_assert_uint_eq(used0, used1);          /* never counted as a slab object */
	p = slab_zalloc(64);
	slab_stats(&chunks1, &used1);
	ck_assert_uint_eq(used1, used0 + 64);
	ck_assert_uint_ge(chunks1, used1);
	slab_free(p, 64);
}
END_TEST

#define NTH 4
#define NOBJ 20000

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t **v = malloc(NOBJ * sizeof(*v));
	int bad = 0;

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < NOBJ; i++) {
			v[i] = slab_zalloc(48);
			if (!v[i] || v[i][0] || v[i][5])
				bad++;
			else
				v[i][0] = v[i][5] = id << 32 | (uint64_t)i;
		}
		for (int i = 0; i < NOBJ; i++) {
			if (v[i][0] != (id << 32 | (uint64_t)i) || v[i][5] != v[i][0])
				bad++;       /* someone else was handed it too */
			slab_free(v[i], 48);
		}
	}
	free(v);
	return (void *)(uintptr_t)bad;
}

START_TEST(test_threads_never_share)
{
	pthread_t th[NTH];
	void *bad;

	for (uintptr_t t = 0; t < NTH; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, churn, (void *)(t + 1)), 0);
	for (int t = 0; t < NTH; t++) {
		pthread_join(th[t], &bad);
		ck_assert_uint_eq((uintptr_t)bad, 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slab");
	TCase *tc = tcase_create("slab");
	SRunner *sr;
	int nf;

	if (!PASSTHROUGH) {
		tcase_add_test(tc, test_zeroed_and_sized);
		tcase_add_test(tc, test_classes_do_not_mix);
		tcase_add_test(tc, test_big_goes_to_malloc);
	}
	tcase_add_test(tc, test_threads_never_share);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
