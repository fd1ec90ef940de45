/* test_perf.c - histogram buckets and quantiles, the registry and its JSON. */
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/perf.h"

static struct hist h;

/* within the ~6% bucket resolution (plus one for tiny values) */
static void near(uint64_t got, uint64_t want)
{
	double tol = (double)want / 16.0 + 1.0;

	ck_assert_msg(fabs((double)got - (double)want) <= tol, "got %llu, want ~%llu",
		      (unsigned long long)got, (unsigned long long)want);
}

START_TEST(test_empty)
{
	hist_reset(&h);
	ck_assert_uint_eq(hist_quantile(&h, 0.5), 0);
	ck_assert_uint_eq(hist_quantile(&h, 0.99), 0);
}
END_TEST

START_TEST(test_small_values_exact)
{
	hist_reset(&h);
	for (uint64_t v = 0; v < 10; v++)
		hist_add(&h, v);
	ck_assert_uint_eq(hist_quantile(&h, 0.0), 0);
	ck_assert_uint_eq(hist_quantile(&h, 0.5), 4);
	ck_assert_uint_eq(hist_quantile(&h, 1.0), 9);
}
END_TEST

START_TEST(test_uniform_quantiles)
{
	hist_reset(&h);
	/* 1..100000 ns, uniform */
	for (uint64_t v = 1; v <= 100000; v++)
		hist_add(&h, v);
	near(hist_quantile(&h, 0.50), 50000);
	near(hist_quantile(&h, 0.90), 90000);
	near(hist_quantile(&h, 0.99), 99000);
	near(hist_quantile(&h, 1.0), 100000);
	ck_assert_uint_le(hist_quantile(&h, 1.0), 100000);
	ck_assert_uint_eq(atomic_load(&h.count), 100000);
	ck_assert_uint_eq(atomic_load(&h.sum), 100000ull * 100001 / 2);
	ck_assert_uint_eq(atomic_load(&h.max), 100000);
}
END_TEST

START_TEST(test_bimodal_and_tail)
{
	hist_reset(&h);
	/* 98 fast ops at 1us, 1 at 1ms, 1 at 1s */
	for (int i = 0; i < 98; i++)
		hist_add(&h, 1000);
	hist_add(&h, 1000000);
	hist_add(&h, 1000000000);
	near(hist_quantile(&h, 0.5), 1000);
	near(hist_quantile(&h, 0.98), 1000);
	near(hist_quantile(&h, 0.99), 1000000);
	near(hist_quantile(&h, 1.0), 1000000000);
	/* extremes of the key space */
	hist_add(&h, UINT64_MAX);
	near(hist_quantile(&h, 1.0), UINT64_MAX);
}
END_TEST

static void *adder(void *arg)
{
	for (int i = 0; i < 100000; i++)
		hist_add(&h, (uint64_t)i);
	return arg;
}

START_TEST(test_concurrent_adds)
{
	pthread_t t[4];

	hist_reset(&h);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, adder, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(atomic_load(&h.count), 400000);
	ck_assert_uint_eq(atomic_load(&h.max), 99999);
	near(hist_quantile(&h, 0.5), 50000);
}
END_TEST

static uint64_t gauge(void *arg)
{
	return (uint64_t)(uintptr_t)arg * 2;
}

static uint64_t jget(struct json_object *o, const char *a, const char *b, const char *c)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, a, &v), "no %s", a);
	if (b)
		ck_assert_msg(json_object_object_get_ex(v, b, &v), "no %s.%s", a, b);
	if (c)
		ck_assert_msg(json_object_object_get_ex(v, c, &v), "no %s.%s.%s", a, b, c);
	return json_object_get_uint64(v);
}

START_TEST(test_registry_dump_reset)
{
	static struct perf_counter ops, errs;
	static struct hist lat;
	struct json_object *d;

	perf_register_counter("grp", "ops", &ops);
	perf_register_counter("grp", "errs", &errs);
	perf_register_hist("grp", "lat", &lat);
	perf_register_fn("other", "gauge", gauge, (void *)21);
	perf_inc(&ops, 5);
	perf_inc(&errs, 1);
	hist_add(&lat, 100);
	hist_add(&lat, 300);

	d = perf_dump_json();
	ck_assert_uint_eq(jget(d, "grp", "ops", NULL), 5);
	ck_assert_uint_eq(jget(d, "grp", "errs", NULL), 1);
	ck_assert_uint_eq(jget(d, "grp", "lat", "count"), 2);
	ck_assert_uint_eq(jget(d, "grp", "lat", "sum_ns"), 400);
	ck_assert_uint_eq(jget(d, "grp", "lat", "avg_ns"), 200);
	ck_assert_uint_eq(jget(d, "grp", "lat", "max_ns"), 300);
	near(jget(d, "grp", "lat", "p50_ns"), 100);
	near(jget(d, "grp", "lat", "p99_ns"), 300);
	jget(d, "grp", "lat", "p90_ns");
	ck_assert_uint_eq(jget(d, "other", "gauge", NULL), 42);
	json_object_put(d);

	perf_reset_all();
	d = perf_dump_json();
	ck_assert_uint_eq(jget(d, "grp", "ops", NULL), 0);
	ck_assert_uint_eq(jget(d, "grp", "lat", "count"), 0);
	ck_assert_uint_eq(jget(d, "grp", "lat", "p99_ns"), 0);
	ck_assert_uint_eq(jget(d, "other", "gauge", NULL), 42);
	json_object_put(d);

	/* registering a name again replaces it, no duplicate */
	perf_register_counter("grp", "ops", &errs);
	perf_unregister_group("other");
	d = perf_dump_json();
	ck_assert(!json_object_object_get_ex(d, "other", NULL));
	ck_assert_int_eq(json_object_object_length(json_object_object_get(d, "grp")), 3);
	json_object_put(d);
	perf_unregister_group("grp");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("perf");
	TCase *tc = tcase_create("perf");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_small_values_exact);
	tcase_add_test(tc, test_uniform_quantiles);
	tcase_add_test(tc, test_bimodal_and_tail);
	tcase_add_test(tc, test_concurrent_adds);
	tcase_add_test(tc, test_registry_dump_reset);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
