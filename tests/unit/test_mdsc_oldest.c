/*
 * test_mdsc_oldest.c - oldest_tid never passes a live request
 * (client/mds_client.c, the argument at the top of the file).
 *
 * Many threads register requests in the real request map and complete them
 * out of order (mdsc_register_request / mdsc_unregister, the two halves of
 * a request's life in the map, without an MDS: nothing is ever sent).  A
 * test hook (MDSC_TEST_HOOKS, this build only) runs a checker after every
 * publication of oldest_tid: no request that is still live may have a tid
 * below the published value, or the MDS would trim its completed result
 * and a replay after a reconnect would execute it twice.
 *
 * A scan of the map under RCU is not a snapshot: it may pass the slots past
 * the last key, be preempted there, and find a key inserted later behind
 * them.  The window is a few instructions wide, so this build puts a yield
 * into it: every xa_find() of the session layer (mdsc_test_find.c builds
 * mds_client.c with it for this suite only) that finds nothing past its
 * start yields and then resumes at the newest tid handed out meanwhile,
 * exactly as a real scan preempted at that point would.  That is an execution the real
 * code can have, made frequent.
 *
 * What the checker calls live is a subset of what is live: a thread marks a
 * slot after mdsc_register_request() returned and clears it before it calls
 * mdsc_unregister().  The checker loads oldest_tid first and the marks
 * after, so a marked tid below the value it loaded was live at a moment when
 * oldest_tid was already past it: a real violation, never a false alarm.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/mds_client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "common/xarray.h"

#undef xa_find

#define NTHREADS 16
#define SLOTS 4
#define OPS_PER_THREAD 50000    /* requests per thread at least... */
#define MIN_WINDOWS 4000         /* ...and until this many scans were preempted... */
#define MAX_SECS 30              /* ...but never longer (a loaded machine: fewer of both) */
#define MIN_OPS_PER_THREAD 2000  /* what a run cut short by MAX_SECS must still have done */

struct worker {
	pthread_t th;
	unsigned int seed;
	struct mdsc_req *req[SLOTS];            /* owned by the worker */
	_Atomic uint64_t live[SLOTS];           /* tid of req[i] while marked live, else 0 */
};

static struct worker W[NTHREADS];
static struct mds_client *M;
static _Atomic uint64_t violations, checks, first_tid, first_oldest, windows;

/* after every publication: every marked request is at or above oldest_tid */
static void check_published(struct mds_client *m, uint64_t candidate)
{
	uint64_t oldest = mdsc_oldest_tid(m), t, zero = 0;
	int i, k;

	(void)candidate;
	for (i = 0; i < NTHREADS; i++) {
		for (k = 0; k < SLOTS; k++) {
			t = atomic_load_explicit(&W[i].live[k], memory_order_acquire);
			if (t && t < oldest) {
				if (atomic_compare_exchange_strong(&first_tid, &zero, t))
					atomic_store(&first_oldest, oldest);
				atomic_fetch_add(&violations, 1);
			}
		}
	}
	atomic_fetch_add_explicit(&checks, 1, memory_order_relaxed);
}

/* xa_find as a scan preempted past the end of the map (see the top) */
void *mdsc_test_xa_find(struct xarray *xa, uint64_t *index)
{
	uint64_t idx = *index, resume;
	void *e = xa_find(xa, &idx);

	if (e || !M) {
		if (e)
			*index = idx;
		return e;
	}
	/*
	 * Every slot from *index on was empty when this scan passed it, so it
	 * may be preempted anywhere past the last tid handed out: here, and it
	 * resumes at the newest tid handed out meanwhile (the slots in between
	 * were empty when it went by them).
	 */
	resume = mdsc_last_tid(M) + 1;
	atomic_fetch_add_explicit(&windows, 1, memory_order_relaxed);
	sched_yield();
	if (mdsc_last_tid(M) > resume)
		resume = mdsc_last_tid(M);
	if (resume < *index)
		return NULL;
	idx = resume;
	e = xa_find(xa, &idx);
	if (e)
		*index = idx;
	return e;
}

static void complete(struct worker *w, int k)
{
	struct mdsc_req *r = w->req[k];

	atomic_store_explicit(&w->live[k], 0, memory_order_release);
	mdsc_unregister(M, r);
	mdsc_req_put(r);
	w->req[k] = NULL;
}

/*
 * One round: register 1..SLOTS requests, complete them in a random order,
 * then idle a little with nothing registered (spinning, or now and then
 * asleep, off the CPU), so that the map is often almost empty: the state in
 * which a scan runs past the last key.
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mds_request *pub;
	struct mdsc_req *r;
	int n = 0, k, want, left;
	volatile unsigned int spin;
	uint64_t deadline = now_mono_ns() + MAX_SECS * 1000000000ull;

	while ((n < OPS_PER_THREAD || atomic_load_explicit(&windows, memory_order_relaxed) < MIN_WINDOWS) &&
	       (n < MIN_OPS_PER_THREAD || now_mono_ns() < deadline)) {
		want = 1 + (int)(rand_r(&w->seed) % SLOTS);
		for (k = 0; k < want; k++, n++) {
			pub = mdsc_request_new(M, MDSP_OP_GETATTR);
			if (!pub)
				continue;
			r = pub->priv;
			if (mdsc_register_request(M, r)) {
				mdsc_request_put(pub);
				continue;
			}
			w->req[k] = r;
			atomic_store_explicit(&w->live[k], r->tid, memory_order_release);
		}
		for (left = want; left; left--) {
			k = (int)(rand_r(&w->seed) % SLOTS);
			while (!w->req[k])
				k = (k + 1) % SLOTS;
			complete(w, k);
		}
		if (rand_r(&w->seed) % 4 == 0) {
			struct timespec ts = { 0, 1000 + (long)(rand_r(&w->seed) % 20000) };

			nanosleep(&ts, NULL);   /* off the CPU with nothing registered */
		} else {
			for (spin = rand_r(&w->seed) % 2048; spin; spin--)
				;
		}
	}
	return NULL;
}

START_TEST(test_oldest_never_passes_a_live_request)
{
	char err[256];
	int i;

	cfg_init("client");
	log_init("test_mdsc_oldest");
	/* nothing listens there, and nothing is sent: the session is never wanted */
	ck_assert_int_eq(cfg_set(cfg_lookup("client_mds_addr"), "127.0.0.1:1", false, err, sizeof(err)), 0);
	ck_assert_int_eq(mdsc_create(NULL, "client.oldest", NULL, NULL, &M), 0);
	mdsc_test_published = check_published;
	for (i = 0; i < NTHREADS; i++) {
		W[i].seed = 0x9e3779b9u * (unsigned int)(i + 1);
		ck_assert_int_eq(pthread_create(&W[i].th, NULL, worker_main, &W[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(W[i].th, NULL);
	mdsc_test_published = NULL;
	fprintf(stderr, "test_mdsc_oldest: %llu publications checked (%llu scans preempted), %llu violations; "
		"last tid %llu, oldest %llu\n", (unsigned long long)atomic_load(&checks),
		(unsigned long long)atomic_load(&windows), (unsigned long long)atomic_load(&violations),
		(unsigned long long)mdsc_last_tid(M), (unsigned long long)mdsc_oldest_tid(M));
	ck_assert_msg(atomic_load(&violations) == 0,
		      "oldest_tid passed a live request %llu times (first: tid %llu live while oldest_tid was %llu)",
		      (unsigned long long)atomic_load(&violations), (unsigned long long)atomic_load(&first_tid),
		      (unsigned long long)atomic_load(&first_oldest));
	/*
	 * Every request completed.  oldest_tid never passes the next tid; it
	 * may lag (the last completions may each have seen another still in
	 * the map, or have loaded registered_tid before a long preemption),
	 * and one more request completed alone brings it to one past it.
	 */
	ck_assert_uint_le(mdsc_oldest_tid(M), mdsc_last_tid(M) + 1);
	{
		struct mds_request *pub = mdsc_request_new(M, MDSP_OP_GETATTR);
		struct mdsc_req *r = pub->priv;

		ck_assert_int_eq(mdsc_register_request(M, r), 0);
		mdsc_unregister(M, r);
		mdsc_request_put(pub);
	}
	ck_assert_uint_eq(mdsc_oldest_tid(M), mdsc_last_tid(M) + 1);
	ck_assert_uint_gt(atomic_load(&checks), (uint64_t)NTHREADS * MIN_OPS_PER_THREAD / 2);
	/* the window was really exercised (the code before the fix failed
	 * ~30 times per preempted scan; a loaded machine makes fewer of them) */
	ck_assert_uint_ge(atomic_load(&windows), MIN_WINDOWS / 40);
	mdsc_destroy(M);
	M = NULL;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mdsc_oldest");
	TCase *tc = tcase_create("oldest_tid");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_oldest_never_passes_a_live_request);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
