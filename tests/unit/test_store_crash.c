/*
 * test_store_crash.c - kill -9 a writer mid-stream, then check the local
 * store: every acknowledged op is there, and no op is half applied.
 *
 * The writer (a forked child) streams compound ops with up to INFLIGHT of
 * them in flight.  Op i goes to object "c<i % NOBJ>" and does three things
 * at once: writes LEN(i) bytes of a pattern seeded by i at its own region
 * of the object, sets omap key "k<i>", and sets omap key "last" to i.  Each
 * completion is reported to the parent over a pipe.  The parent SIGKILLs
 * the writer at a random moment, reopens the store (which replays the redo
 * log) and checks, per object, with L = its "last":
 *   - every acknowledged op on the object is <= L (durable once acked);
 *   - every op j <= L on it has its key and all of its data (ops on one
 *     object apply in submission order, so they form a prefix);
 *   - no op j > L left a key or a single byte of data (nothing half done).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "store/store.h"
#include "tests/unit/store_inline_env.h"

#define NOBJ 8
#define INFLIGHT 16
#define REGION (512u << 10)
#define MAX_OPS 50000

static size_t op_len(uint32_t i)
{
	if (i % 16 == 5)
		return 300u << 10;             /* a big one now and then: a wide window to die in */
	return 512 + (i * 7919u) % (24u << 10);
}

static void pattern(unsigned char *p, size_t len, uint32_t i)
{
	uint32_t x = i * 2654435761u + 12345;
	for (size_t k = 0; k < len; k++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[k] = (unsigned char)x;
	}
	if (len >= 4)
		memcpy(p, &i, 4);
}

static struct store_config make_cfg(const char *dir, bool create)
{
	struct store_config cfg = { 0 };
	cfg.backend = "local";
	cfg.local_path = dir;
	cfg.create = create;
	cfg.local_map_size = 2ull << 30;
	cfg.local_inline_max = test_store_inline_max();
	return cfg;
}

/* ---- the writer (child) --------------------------------------------- */

struct writer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inflight;
	int fd;
};

struct ack {
	struct writer *w;
	uint32_t i;
};

static void ack_cb(int r, void *arg)
{
	struct ack *a = arg;
	struct writer *w = a->w;

	if (r == 0) {
		/* 4 bytes < PIPE_BUF: atomic */
		if (write(w->fd, &a->i, sizeof(a->i)) != sizeof(a->i))
			_exit(3);
	} else {
		fprintf(stderr, "writer: op %u failed: %d\n", a->i, r);
		_exit(4);
	}
	free(a);
	pthread_mutex_lock(&w->lock);
	w->inflight--;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void __attribute__((noreturn)) writer_main(const char *dir, int fd)
{
	struct store_config cfg = make_cfg(dir, false);
	struct writer w = { .inflight = 0, .fd = fd };
	unsigned char *buf = malloc(REGION);
	struct store_pool *p;
	struct store *st;

	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	if (!buf || store_open(&cfg, &st) || store_pool_open(st, "data", NULL, &p))
		_exit(2);
	for (uint32_t i = 0; i < MAX_OPS; i++) {
		char oid[16], key[16], val[16];
		struct store_op *op = store_op_new();
		struct ack *a = malloc(sizeof(*a));
		size_t len = op_len(i);

		pthread_mutex_lock(&w.lock);
		while (w.inflight >= INFLIGHT)
			pthread_cond_wait(&w.cond, &w.lock);
		w.inflight++;
		pthread_mutex_unlock(&w.lock);

		snprintf(oid, sizeof(oid), "c%u", i % NOBJ);
		snprintf(key, sizeof(key), "k%08u", i);
		snprintf(val, sizeof(val), "v%u", i);
		pattern(buf, len, i);
		store_op_write(op, (uint64_t)(i / NOBJ) * REGION, buf, len);
		store_op_omap_set(op, key, val, strlen(val));
		store_op_omap_set(op, "last", &i, sizeof(i));
		a->w = &w;
		a->i = i;
		if (store_op_submit(p, oid, op, ack_cb, a))
			_exit(5);
	}
	/* not reached in practice: the parent kills us long before */
	pthread_mutex_lock(&w.lock);
	while (w.inflight)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	_exit(0);
}

/* ---- the checker (parent) ------------------------------------------- */

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void check_store(const char *dir, const int64_t *acked_max, uint32_t nacked)
{
	struct store_config cfg = make_cfg(dir, false);
	unsigned char *want = malloc(REGION), *got = malloc(REGION);
	struct store_pool *p;
	struct store *st;
	uint32_t napplied = 0;

	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "data", NULL, &p), 0);
	for (uint32_t o = 0; o < NOBJ; o++) {
		char oid[16];
		int64_t last = -1;
		void *v;
		size_t vlen;
		int r;

		snprintf(oid, sizeof(oid), "c%u", o);
		r = store_omap_get(p, oid, "last", &v, &vlen);
		if (r == 0) {
			uint32_t l;
			ck_assert_uint_eq(vlen, 4);
			memcpy(&l, v, 4);
			free(v);
			last = l;
			ck_assert_int_eq((int64_t)(l % NOBJ), o);
		} else {
			ck_assert_int_eq(r, -ENOENT);
		}
		ck_assert_msg(acked_max[o] <= last, "object %s: op %lld was acknowledged but last is %lld", oid,
			      (long long)acked_max[o], (long long)last);

		/* applied ops: key and every byte present */
		for (int64_t j = o; j <= last; j += NOBJ) {
			char key[16], val[16];
			size_t len = op_len((uint32_t)j);
			snprintf(key, sizeof(key), "k%08u", (uint32_t)j);
			snprintf(val, sizeof(val), "v%u", (uint32_t)j);
			r = store_omap_get(p, oid, key, &v, &vlen);
			ck_assert_msg(r == 0, "object %s: op %lld <= last %lld but key %s is missing (%d)", oid,
				      (long long)j, (long long)last, key, r);
			ck_assert_uint_eq(vlen, strlen(val));
			ck_assert_int_eq(memcmp(v, val, vlen), 0);
			free(v);
			pattern(want, len, (uint32_t)j);
			ssize_t n = store_read(p, oid, (uint64_t)(j / NOBJ) * REGION, len, got);
			ck_assert_msg(n == (ssize_t)len, "object %s: op %lld data short: %zd of %zu", oid, (long long)j, n,
				      len);
			ck_assert_msg(memcmp(got, want, len) == 0, "object %s: op %lld data differs", oid, (long long)j);
			napplied++;
		}
		/* later ops (a window larger than what can be in flight): no trace at all */
		for (int64_t j = last < 0 ? o : last + NOBJ; j <= last + NOBJ * (INFLIGHT + 4); j += NOBJ) {
			char key[16];
			size_t len = op_len((uint32_t)j);
			snprintf(key, sizeof(key), "k%08u", (uint32_t)j);
			r = store_omap_get(p, oid, key, &v, &vlen);
			ck_assert_msg(r == -ENOENT, "object %s: op %lld > last %lld left key %s", oid, (long long)j,
				      (long long)last, key);
			ssize_t n = store_read(p, oid, (uint64_t)(j / NOBJ) * REGION, len, got);
			if (n == -ENOENT)
				continue;
			ck_assert_int_ge(n, 0);
			for (ssize_t k = 0; k < n; k++)
				ck_assert_msg(got[k] == 0, "object %s: op %lld > last %lld left data", oid, (long long)j,
					      (long long)last);
		}
		/* and no other key exists: count the k* keys */
		size_t nkeys = 0;
		char *after = NULL;
		bool more = true;
		while (more) {
			struct store_kv *kv;
			size_t n;
			r = store_omap_list(p, oid, after, "k", 500, &kv, &n, &more);
			if (r == -ENOENT && last < 0)
				break;
			ck_assert_int_eq(r, 0);
			nkeys += n;
			free(after);
			after = n ? strdup(kv[n - 1].key) : NULL;
			store_kv_free(kv, n);
			if (!n)
				break;
		}
		free(after);
		ck_assert_uint_eq(nkeys, last < 0 ? 0 : (size_t)(last / NOBJ + 1));
	}
	store_pool_close(p);
	store_close(st);
	free(want);
	free(got);
	ck_assert_uint_ge(napplied, nacked);
}

static void crash_round(unsigned seed, unsigned kill_after_ms)
{
	char dir[] = "/tmp/loligo-store-crash-XXXXXX";
	struct store_config cfg;
	struct store *st;
	int64_t acked_max[NOBJ];
	uint32_t nacked = 0, i;
	int pfd[2], status;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	cfg = make_cfg(dir, true);
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_create(st, "data"), 0);
	store_close(st);

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* never outlive a parent that failed an assertion before killing us */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(6);
		close(pfd[0]);
		writer_main(dir, pfd[1]);
	}
	close(pfd[1]);
	/* never block past the kill deadline, even if the writer stalls */
	ck_assert_int_eq(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
	for (int o = 0; o < NOBJ; o++)
		acked_max[o] = -1;

	/* read acks until it is time to kill */
	uint64_t deadline = now_mono_ns() + (uint64_t)kill_after_ms * 1000000ull;
	while (now_mono_ns() < deadline) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		ssize_t n;
		while ((n = read(pfd[0], &i, sizeof(i))) == sizeof(i)) {
			acked_max[i % NOBJ] = i > acked_max[i % NOBJ] ? i : acked_max[i % NOBJ];
			nacked++;
			if (now_mono_ns() >= deadline)
				break;
		}
		if (n == 0)
			break;   /* writer died on its own */
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "writer exited on its own: status %d",
		      status);
	/* acks written before the kill are still in the pipe: they count (EOF ends it) */
	while (read(pfd[0], &i, sizeof(i)) == sizeof(i)) {
		acked_max[i % NOBJ] = i > acked_max[i % NOBJ] ? i : acked_max[i % NOBJ];
		nacked++;
	}
	close(pfd[0]);
	fprintf(stderr, "crash round %u: killed after %u ms with %u ops acknowledged\n", seed, kill_after_ms, nacked);
	check_store(dir, acked_max, nacked);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

START_TEST(t_crash)
{
	unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	unsigned rounds[] = { 30, 150, 400, 800, 1500 };

	srand(seed);
	for (unsigned r = 0; r < sizeof(rounds) / sizeof(rounds[0]); r++)
		crash_round(r, rounds[r] / 2 + (unsigned)rand() % rounds[r]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_crash");
	TCase *tc = tcase_create("kill9");
	SRunner *sr;
	int failed;

	log_init("test_store_crash");
	tcase_add_test(tc, t_crash);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
