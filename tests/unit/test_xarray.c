/*
 * test_xarray.c - the RCU radix tree: functional tests over sparse keys up
 * to UINT64_MAX, ordered iteration, find-at-or-after, and a bounded
 * concurrent stress test (RCU readers while writers insert and erase).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rcu.h"
#include "common/time.h"
#include "common/xarray.h"

/*
 * Entries encode their key (a bijection, never dereferenced by the tree) so
 * a reader can tell a wrong or invented one.  No test key equals ENTRY_XOR,
 * the one key whose entry would be NULL.
 */
#define ENTRY_XOR 0xdeadbeefcafef00dull
#define ENTRY(k) ((void *)(uintptr_t)((uint64_t)(k) ^ ENTRY_XOR))
#define KEY_OF(e) ((uint64_t)(uintptr_t)(e) ^ ENTRY_XOR)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

START_TEST(test_empty)
{
	struct xarray xa;
	uint64_t idx = 0;

	xa_init(&xa);
	rcu_read_lock();
	ck_assert_ptr_null(xa_load(&xa, 0));
	ck_assert_ptr_null(xa_load(&xa, UINT64_MAX));
	ck_assert_ptr_null(xa_find(&xa, &idx));
	rcu_read_unlock();
	ck_assert(xa_empty(&xa));
	ck_assert_uint_eq(xa_count(&xa), 0);
	ck_assert_ptr_null(xa_erase(&xa, 5));
	ck_assert_int_eq(xa_store(&xa, 1, NULL), -EINVAL);
	ck_assert_int_eq(xa_insert(&xa, 1, NULL), -EINVAL);
	xa_destroy(&xa);
}
END_TEST

START_TEST(test_sparse_keys)
{
	static const uint64_t keys[] = {
		0, 1, 63, 64, 65, 4095, 4096, 262143, 262144, 1ull << 32, (1ull << 32) + 1,
		1ull << 40, 1ull << 60, (1ull << 60) - 1, 1ull << 63, UINT64_MAX - 64,
		UINT64_MAX - 1, UINT64_MAX,
	};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	uint64_t sorted[sizeof(keys) / sizeof(keys[0])];
	struct xarray xa;
	uint64_t idx;
	void *e;
	size_t i;

	xa_init(&xa);
	/* insert in a scrambled order: growth must keep everything reachable */
	for (i = 0; i < n; i++) {
		uint64_t k = keys[(i * 7) % n];

		ck_assert_int_eq(xa_insert(&xa, k, ENTRY(k)), 0);
	}
	ck_assert_uint_eq(xa_count(&xa), n);
	ck_assert_int_eq(xa_insert(&xa, 4096, ENTRY(1)), -EEXIST);
	ck_assert_int_eq(xa_store(&xa, 4096, ENTRY(4096)), 0);
	ck_assert_uint_eq(xa_count(&xa), n);

	memcpy(sorted, keys, sizeof(keys));
	qsort(sorted, n, sizeof(sorted[0]), cmp_u64);

	rcu_read_lock();
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(xa_load(&xa, keys[i]), ENTRY(keys[i]));
	ck_assert_ptr_null(xa_load(&xa, 2));
	ck_assert_ptr_null(xa_load(&xa, UINT64_MAX - 2));
	ck_assert_ptr_null(xa_load(&xa, 1ull << 50));

	/* ordered iteration sees every key once, in order */
	i = 0;
	xa_for_each(&xa, idx, e) {
		ck_assert_uint_lt(i, n);
		ck_assert_uint_eq(idx, sorted[i]);
		ck_assert_ptr_eq(e, ENTRY(idx));
		i++;
	}
	ck_assert_uint_eq(i, n);

	/* find first at or after */
	for (i = 0; i < n; i++) {
		idx = sorted[i];
		ck_assert_ptr_eq(xa_find(&xa, &idx), ENTRY(sorted[i]));
		ck_assert_uint_eq(idx, sorted[i]);
		if (sorted[i] > 0 && (i == 0 || sorted[i - 1] != sorted[i] - 1)) {
			idx = sorted[i] - 1;
			ck_assert_ptr_eq(xa_find(&xa, &idx), ENTRY(sorted[i]));
			ck_assert_uint_eq(idx, sorted[i]);
		}
	}
	idx = 66;
	ck_assert_ptr_eq(xa_find(&xa, &idx), ENTRY(4095));
	ck_assert_uint_eq(idx, 4095);
	idx = (1ull << 40) + 1;
	ck_assert_ptr_eq(xa_find(&xa, &idx), ENTRY((1ull << 60) - 1));
	rcu_read_unlock();

	/* erase down to nothing, checking the rest stays reachable */
	for (i = 0; i < n; i++) {
		uint64_t k = keys[(i * 5) % n];
		size_t j;

		ck_assert_ptr_eq(xa_erase(&xa, k), ENTRY(k));
		ck_assert_ptr_null(xa_erase(&xa, k));
		rcu_read_lock();
		ck_assert_ptr_null(xa_load(&xa, k));
		for (j = i + 1; j < n; j++) {
			uint64_t k2 = keys[(j * 5) % n];

			ck_assert_ptr_eq(xa_load(&xa, k2), ENTRY(k2));
		}
		rcu_read_unlock();
	}
	ck_assert(xa_empty(&xa));
	ck_assert_uint_eq(xa_count(&xa), 0);
	ck_assert_uint_eq(xa.height, 0);
	xa_destroy(&xa);
}
END_TEST

START_TEST(test_dense_and_shrink)
{
	struct xarray xa;
	uint64_t idx, k;
	void *e;
	int n;

	xa_init(&xa);
	for (k = 0; k < 20000; k++)
		ck_assert_int_eq(xa_store(&xa, k * 3, ENTRY(k * 3)), 0);
	ck_assert_uint_eq(xa_count(&xa), 20000);
	rcu_read_lock();
	n = 0;
	xa_for_each(&xa, idx, e) {
		ck_assert_uint_eq(idx, (uint64_t)n * 3);
		n++;
	}
	ck_assert_int_eq(n, 20000);
	idx = 3001;
	ck_assert_ptr_eq(xa_find(&xa, &idx), ENTRY(3003));
	idx = 59998;
	ck_assert_ptr_null(xa_find(&xa, &idx));
	rcu_read_unlock();

	/* erase all but the first few: the tree must shrink back */
	for (k = 10; k < 20000; k++)
		ck_assert_ptr_eq(xa_erase(&xa, k * 3), ENTRY(k * 3));
	ck_assert_uint_eq(xa_count(&xa), 10);
	ck_assert_uint_eq(xa.height, 1);
	/* a key far away grows it again and iteration still works */
	ck_assert_int_eq(xa_store(&xa, UINT64_MAX, ENTRY(UINT64_MAX)), 0);
	ck_assert_uint_eq(xa.height, 11);
	rcu_read_lock();
	idx = 28;
	ck_assert_ptr_eq(xa_find(&xa, &idx), ENTRY(UINT64_MAX));
	ck_assert_uint_eq(idx, UINT64_MAX);
	n = 0;
	xa_for_each(&xa, idx, e)
		n++;
	ck_assert_int_eq(n, 11);
	rcu_read_unlock();
	xa_destroy(&xa);
}
END_TEST

/* ---- concurrent stress ---------------------------------------------- */

#define NKEYS 4096
#define NWRITERS 2
#define NREADERS 3
#define STRESS_NS (2000ull * 1000 * 1000)

/*
 * Keys are spread over the whole u64 space so the tree grows and shrinks
 * in height while readers walk it.  Each writer owns the keys whose slot
 * number is congruent to its id, so the final state is known exactly.
 */
static struct xarray sxa;
static uint64_t skeys[NKEYS];
static _Atomic bool present[NKEYS];	/* final truth, written by the owner */
static _Atomic bool stop;
static _Atomic uint64_t reader_loads, reader_finds, writer_ops;

static uint64_t key_for(unsigned int i)
{
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;

	/* a mix of small dense keys and huge sparse ones */
	return (i & 1) ? (x ^ (x >> 29)) : (uint64_t)i;
}

static int key_slot(uint64_t k)
{
	int lo = 0, hi = NKEYS - 1;

	/* skeys is sorted */
	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (skeys[mid] == k)
			return mid;
		if (skeys[mid] < k)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Every 16th key (in sorted order) is stable: inserted before the threads
 * start and never erased, so an ordered scan must never step over one. */
static bool stable(unsigned int slot)
{
	return slot % 16 == 15;
}

/* The first stable key at or after @k, or false when none is. */
static bool next_stable(uint64_t k, uint64_t *out)
{
	int lo = 0, hi = NKEYS;

	while (lo < hi) {   /* lower bound of @k in skeys */
		int mid = (lo + hi) / 2;

		if (skeys[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < NKEYS; lo++)
		if (stable((unsigned int)lo)) {
			*out = skeys[lo];
			return true;
		}
	return false;
}

static void *writer(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg, seed = id * 7919 + 1;
	uint64_t ops = 0;

	while (!atomic_load(&stop)) {
		unsigned int slot = ((unsigned int)rand_r(&seed) % (NKEYS / NWRITERS)) * NWRITERS + id;
		uint64_t k = skeys[slot];

		if (stable(slot))
			continue;
		if (atomic_load(&present[slot])) {
			void *old = xa_erase(&sxa, k);

			ck_assert_ptr_eq(old, ENTRY(k));
			atomic_store(&present[slot], false);
		} else {
			ck_assert_int_eq(xa_insert(&sxa, k, ENTRY(k)), 0);
			atomic_store(&present[slot], true);
		}
		ops++;
	}
	atomic_fetch_add(&writer_ops, ops);
	return NULL;
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	uint64_t loads = 0, finds = 0;

	while (!atomic_load(&stop)) {
		uint64_t k, idx, prev;
		void *e;
		int n;

		rcu_read_lock();
		/* point lookups: a hit must be the entry of that very key */
		for (n = 0; n < 64; n++) {
			k = (n & 1) ? skeys[(unsigned int)rand_r(&seed) % NKEYS]
				    : ((uint64_t)rand_r(&seed) << 33) ^ (uint64_t)rand_r(&seed);
			e = xa_load(&sxa, k);
			if (e) {
				ck_assert_uint_eq(KEY_OF(e), k);
				ck_assert_int_ge(key_slot(k), 0);
			}
			loads++;
		}
		/* a short ordered scan from a random point */
		idx = ((uint64_t)rand_r(&seed) << 40);
		prev = idx;
		for (n = 0; n < 32; n++) {
			uint64_t st;
			bool have = next_stable(prev, &st);

			e = xa_find(&sxa, &idx);
			/* nothing stable skipped: found at or before the next stable key */
			ck_assert_msg(!have || (e && idx <= st), "xa_find from %llx skipped the stable key %llx",
				      (unsigned long long)prev, (unsigned long long)st);
			if (!e)
				break;
			ck_assert_uint_ge(idx, prev);
			ck_assert_uint_eq(KEY_OF(e), idx);
			ck_assert_int_ge(key_slot(idx), 0);
			finds++;
			if (idx == UINT64_MAX)
				break;
			prev = ++idx;
		}
		rcu_read_unlock();
	}
	atomic_fetch_add(&reader_loads, loads);
	atomic_fetch_add(&reader_finds, finds);
	return NULL;
}

START_TEST(test_concurrent_stress)
{
	pthread_t w[NWRITERS], r[NREADERS];
	uint64_t idx, start, expect = 0;
	unsigned int i;
	void *e;

	for (i = 0; i < NKEYS; i++)
		skeys[i] = key_for(i);
	qsort(skeys, NKEYS, sizeof(skeys[0]), cmp_u64);
	for (i = 1; i < NKEYS; i++)
		ck_assert_uint_ne(skeys[i], skeys[i - 1]);
	for (i = 0; i < NKEYS; i++)
		ck_assert_uint_ne(skeys[i], ENTRY_XOR);
	xa_init(&sxa);
	for (i = 0; i < NKEYS; i++)
		if (stable(i)) {
			ck_assert_int_eq(xa_insert(&sxa, skeys[i], ENTRY(skeys[i])), 0);
			atomic_store(&present[i], true);
		}

	for (i = 0; i < NWRITERS; i++)
		ck_assert_int_eq(pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)i), 0);
	for (i = 0; i < NREADERS; i++)
		ck_assert_int_eq(pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 100)), 0);
	start = now_mono_ns();
	while (now_mono_ns() - start < STRESS_NS)
		usleep(10000);
	atomic_store(&stop, true);
	for (i = 0; i < NWRITERS; i++)
		pthread_join(w[i], NULL);
	for (i = 0; i < NREADERS; i++)
		pthread_join(r[i], NULL);

	/* final consistency: exactly the keys the writers left present */
	for (i = 0; i < NKEYS; i++)
		if (atomic_load(&present[i]))
			expect++;
	ck_assert_uint_eq(xa_count(&sxa), expect);
	rcu_read_lock();
	for (i = 0; i < NKEYS; i++)
		ck_assert_ptr_eq(xa_load(&sxa, skeys[i]), atomic_load(&present[i]) ? ENTRY(skeys[i]) : NULL);
	i = 0;
	xa_for_each(&sxa, idx, e) {
		while (i < NKEYS && !atomic_load(&present[i]))
			i++;
		ck_assert_uint_lt(i, NKEYS);
		ck_assert_uint_eq(idx, skeys[i]);
		i++;
	}
	rcu_read_unlock();
	ck_assert_msg(atomic_load(&writer_ops) > 1000 && atomic_load(&reader_loads) > 1000,
		      "stress did too little: %llu writes, %llu loads",
		      (unsigned long long)atomic_load(&writer_ops),
		      (unsigned long long)atomic_load(&reader_loads));

	fprintf(stderr, "xarray stress: %llu writer ops, %llu reader loads, %llu reader finds in %.1f s\n",
		(unsigned long long)atomic_load(&writer_ops),
		(unsigned long long)atomic_load(&reader_loads),
		(unsigned long long)atomic_load(&reader_finds), STRESS_NS / 1e9);

	/* erase the rest; the tree must end empty */
	for (i = 0; i < NKEYS; i++)
		if (atomic_load(&present[i]))
			ck_assert_ptr_eq(xa_erase(&sxa, skeys[i]), ENTRY(skeys[i]));
	ck_assert(xa_empty(&sxa));
	synchronize_rcu();
	rcu_barrier();
	xa_destroy(&sxa);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xarray");
	TCase *tc = tcase_create("functional");
	TCase *ts = tcase_create("stress");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_sparse_keys);
	tcase_add_test(tc, test_dense_and_shrink);
	suite_add_tcase(s, tc);
	tcase_set_timeout(ts, 60);
	tcase_add_test(ts, test_concurrent_stress);
	suite_add_tcase(s, ts);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
