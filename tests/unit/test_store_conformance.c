/*
 * test_store_conformance.c - the behaviour every object store backend must
 * have (store/store.h).  The same binary runs against each backend:
 *
 *   LOLIGO_STORE_BACKEND=local  (default) a fresh store in a temp dir per test
 *   LOLIGO_STORE_BACKEND=mem    the in-memory store (store/mem.h), one per test
 *   LOLIGO_STORE_BACKEND=rados  LOLIGO_STORE_RADOS_CONF=ceph.conf
 *                               [LOLIGO_STORE_RADOS_POOL=rbdtest]: a fresh
 *                               namespace of that pool per test
 *
 * Only behaviour RADOS itself has is asserted here, so the local backend can
 * be checked against the real thing (tests/integration/store_rados.cmake).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/perf.h"
#include <lmdb.h>
#include <sys/file.h>
#include <fcntl.h>
#include <json-c/json.h>
#include "store/store.h"
#include "tests/unit/store_inline_env.h"

static char basedir[PATH_MAX];   /* unchecked fixture: removed after the suite */
static char storedir[PATH_MAX + 16];
static struct store *st;
static struct store_pool *pool;
static char pool_name[64];
static char nspace[64];

static bool is_local(void)
{
	const char *b = getenv("LOLIGO_STORE_BACKEND");
	return !b || !*b || strcmp(b, "local") == 0;
}

static bool is_mem(void)
{
	const char *b = getenv("LOLIGO_STORE_BACKEND");
	return b && strcmp(b, "mem") == 0;
}

static const char *backend_name(void)
{
	return is_local() ? "local" : is_mem() ? "mem" : "rados";
}

static void fill_config(struct store_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	if (is_mem()) {
		cfg->backend = "mem";
		cfg->local_path = storedir;      /* the store's name: one per test */
		cfg->mem_ok = true;
	} else if (is_local()) {
		cfg->backend = "local";
		cfg->local_path = storedir;
		cfg->create = true;
		cfg->local_map_size = 1ull << 30;
		cfg->local_inline_max = test_store_inline_max();
	} else {
		cfg->backend = "rados";
		cfg->rados_conf = getenv("LOLIGO_STORE_RADOS_CONF");
		cfg->rados_id = "admin";
		cfg->rados_mon_op_timeout = 20;
		cfg->rados_osd_op_timeout = 20;
	}
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void suite_setup(void)
{
	snprintf(basedir, sizeof(basedir), "/tmp/loligo-store-test-XXXXXX");
	if (!mkdtemp(basedir))
		abort();
}

static void suite_teardown(void)
{
	nftw(basedir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void open_store_inline(uint64_t inline_max)
{
	struct store_config cfg;
	fill_config(&cfg);
	if (inline_max)
		cfg.local_inline_max = inline_max;
	ck_assert_int_eq(store_open(&cfg, &st), 0);
}

static void open_store(void)
{
	open_store_inline(0);
}

static void open_pool(const char *ns)
{
	ck_assert_int_eq(store_pool_open(st, pool_name, ns, &pool), 0);
}

static void setup(void)
{
	snprintf(storedir, sizeof(storedir), "%s/XXXXXX", basedir);
	ck_assert_ptr_nonnull(mkdtemp(storedir));
	open_store();
	if (is_local() || is_mem()) {
		snprintf(pool_name, sizeof(pool_name), "data");
		ck_assert_int_eq(store_pool_create(st, pool_name), 0);
		nspace[0] = 0;
	} else {
		const char *p = getenv("LOLIGO_STORE_RADOS_POOL");
		struct timespec ts;
		snprintf(pool_name, sizeof(pool_name), "%s", p && *p ? p : "rbdtest");
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(nspace, sizeof(nspace), "t%d-%ld%09ld", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec);
	}
	open_pool(nspace);
}

static void teardown(void)
{
	store_pool_close(pool);
	store_close(st);
	pool = NULL;
	st = NULL;
}

/* ---- helpers -------------------------------------------------------- */

static int exec(struct store_op *op, const char *oid)
{
	return store_op_exec(pool, oid, op);
}

static void put_full(const char *oid, const void *buf, size_t len)
{
	struct store_op *op = store_op_new();
	store_op_write_full(op, buf, len);
	ck_assert_int_eq(exec(op, oid), 0);
}

static void omap_put1(const char *oid, const char *key, const char *val)
{
	struct store_op *op = store_op_new();
	store_op_omap_set(op, key, val, strlen(val));
	ck_assert_int_eq(exec(op, oid), 0);
}

/* store_read and store_aio_read (started, then waited for) must agree */
static void expect_read(const char *oid, uint64_t off, size_t len, const void *want, ssize_t wantlen)
{
	char *buf = malloc(len + 1);
	ssize_t n = store_read(pool, oid, off, len, buf);
	ck_assert_int_eq(n, wantlen);
	if (wantlen > 0)
		ck_assert_int_eq(memcmp(buf, want, (size_t)wantlen), 0);
	struct store_aio *a;
	memset(buf, 0x5a, len + 1);
	ck_assert_int_eq(store_aio_read(pool, oid, off, len, buf, &a), 0);
	ck_assert_int_eq(store_aio_wait(a), wantlen);
	if (wantlen > 0)
		ck_assert_int_eq(memcmp(buf, want, (size_t)wantlen), 0);
	free(buf);
	/* and a lent read (store_aio_read_lend): the same bytes, in the store's buffer */
	if (len > 0) {
		const char *data;

		ck_assert_int_eq(store_aio_read_lend(pool, oid, off, len, &a), 0);
		ck_assert_int_eq(store_aio_wait_lent(a, &data), wantlen);
		if (wantlen > 0)
			ck_assert_int_eq(memcmp(data, want, (size_t)wantlen), 0);
		else if (wantlen < 0)
			ck_assert_ptr_null(data);
		store_aio_put(a);
	}
}

static void expect_omap(const char *oid, const char *key, const char *val)
{
	void *v;
	size_t len;
	int r = store_omap_get(pool, oid, key, &v, &len);
	if (!val) {
		ck_assert_int_eq(r, -ENOENT);
		return;
	}
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(len, strlen(val));
	ck_assert_int_eq(memcmp(v, val, len), 0);
	free(v);
}

static uint64_t obj_size(const char *oid)
{
	struct store_stat s;
	ck_assert_int_eq(store_stat(pool, oid, &s), 0);
	return s.size;
}

/* A counter of outstanding async ops. */
struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding;
	int errors;
	int first_err;
};

static void waiter_init(struct waiter *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->outstanding = w->errors = w->first_err = 0;
}

static void waiter_add(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	w->outstanding++;
	pthread_mutex_unlock(&w->lock);
}

static void waiter_done(struct waiter *w, int r)
{
	pthread_mutex_lock(&w->lock);
	if (r < 0 && !w->errors++)
		w->first_err = r;
	if (--w->outstanding == 0)
		pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void waiter_wait(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->outstanding)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void op_cb(int r, void *arg)
{
	waiter_done(arg, r);
}

/* ---- pools ---------------------------------------------------------- */

START_TEST(t_pools)
{
	char name[80], name2[96];
	struct store_pool *p, *p2;

	snprintf(name, sizeof(name), "lolt%s", nspace);
	snprintf(name2, sizeof(name2), "%s-none", name);
	ck_assert_int_eq(store_pool_create(st, name), 0);
	ck_assert_int_eq(store_pool_create(st, name), -EEXIST);
	ck_assert_int_eq(store_pool_open(st, name2, NULL, &p), -ENOENT);
	ck_assert_int_eq(store_pool_open(st, name, NULL, &p), 0);
	ck_assert_int_eq(store_pool_open(st, name, "other", &p2), 0);

	/* the same name in two pools (and two namespaces) are different objects */
	put_full("obj", "in-test-pool", 12);
	struct store_op *op = store_op_new();
	store_op_write_full(op, "in-new", 6);
	ck_assert_int_eq(store_op_exec(p, "obj", op), 0);
	expect_read("obj", 0, 100, "in-test-pool", 12);
	char buf[32];
	ck_assert_int_eq(store_read(p, "obj", 0, sizeof(buf), buf), 6);
	ck_assert_int_eq(memcmp(buf, "in-new", 6), 0);
	ck_assert_int_eq(store_read(p2, "obj", 0, sizeof(buf), buf), -ENOENT);
	store_pool_close(p);
	store_pool_close(p2);
	ck_assert_str_eq(store_backend_name(st), backend_name());
	if (is_mem()) {
		/* never through the daemons' options: "mem" is unknown without mem_ok */
		struct store_config cfg;
		struct store *st2;

		fill_config(&cfg);
		cfg.mem_ok = false;
		ck_assert_int_eq(store_open(&cfg, &st2), -ENOTSUP);
	}
}
END_TEST

START_TEST(t_namespaces)
{
	struct store_pool *a, *b;
	char **names;
	size_t n;
	char nsa[80], nsb[80];

	snprintf(nsa, sizeof(nsa), "%s-a", nspace);
	snprintf(nsb, sizeof(nsb), "%s-b", nspace);
	ck_assert_int_eq(store_pool_open(st, pool_name, nsa, &a), 0);
	ck_assert_int_eq(store_pool_open(st, pool_name, nsb, &b), 0);
	struct store_op *op = store_op_new();
	store_op_write_full(op, "AAA", 3);
	ck_assert_int_eq(store_op_exec(a, "x", op), 0);
	op = store_op_new();
	store_op_write_full(op, "BB", 2);
	store_op_omap_set(op, "k", "b", 1);
	ck_assert_int_eq(store_op_exec(b, "x", op), 0);
	op = store_op_new();
	store_op_write_full(op, "B2", 2);
	ck_assert_int_eq(store_op_exec(b, "y", op), 0);

	char buf[8];
	ck_assert_int_eq(store_read(a, "x", 0, 8, buf), 3);
	ck_assert_int_eq(store_read(b, "x", 0, 8, buf), 2);
	void *v;
	size_t len;
	ck_assert_int_eq(store_omap_get(a, "x", "k", &v, &len), -ENOENT);

	ck_assert_int_eq(store_list_objects(a, &names, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(names[0], "x");
	free(names[0]);
	free(names);
	ck_assert_int_eq(store_list_objects(b, &names, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(strcmp(names[0], names[1]) != 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert(strcmp(names[i], "x") == 0 || strcmp(names[i], "y") == 0);
		free(names[i]);
	}
	free(names);
	store_pool_close(a);
	store_pool_close(b);
}
END_TEST

START_TEST(t_list_objects)
{
	char **names;
	size_t n;
	int seen = 0;
	char longname[STORE_OID_MAX + 1];

	memset(longname, 'L', STORE_OID_MAX);
	longname[STORE_OID_MAX] = 0;
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(names);
	for (int i = 0; i < 5; i++) {
		char oid[16];
		snprintf(oid, sizeof(oid), "o%d", i);
		put_full(oid, "x", 1);
	}
	put_full(longname, "long", 4);   /* the longest name allowed works */
	expect_read(longname, 0, 10, "long", 4);
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	ck_assert_uint_eq(n, 6);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], longname) == 0)
			seen |= 1 << 5;
		else if (names[i][0] == 'o')
			seen |= 1 << (names[i][1] - '0');
		free(names[i]);
	}
	free(names);
	ck_assert_int_eq(seen, 0x3f);
}
END_TEST

/* ---- objects -------------------------------------------------------- */

START_TEST(t_create_exclusive)
{
	struct store_op *op = store_op_new();
	store_op_create(op, true);
	ck_assert_int_eq(exec(op, "a"), 0);
	ck_assert_uint_eq(obj_size("a"), 0);

	op = store_op_new();
	store_op_create(op, true);
	ck_assert_int_eq(exec(op, "a"), -EEXIST);

	op = store_op_new();
	store_op_create(op, false);
	ck_assert_int_eq(exec(op, "a"), 0);

	op = store_op_new();
	store_op_assert_exists(op);
	ck_assert_int_eq(exec(op, "a"), 0);

	op = store_op_new();
	store_op_assert_exists(op);
	ck_assert_int_eq(exec(op, "nope"), -ENOENT);
	struct store_stat s;
	ck_assert_int_eq(store_stat(pool, "nope", &s), -ENOENT);

	/* omap only objects exist too */
	omap_put1("dir", "k", "v");
	op = store_op_new();
	store_op_create(op, true);
	ck_assert_int_eq(exec(op, "dir"), -EEXIST);
	ck_assert_uint_eq(obj_size("dir"), 0);
}
END_TEST

START_TEST(t_write_read)
{
	struct store_op *op = store_op_new();
	store_op_write(op, 0, "hello", 5);
	store_op_write(op, 10, "world", 5);
	ck_assert_int_eq(exec(op, "o"), 0);
	ck_assert_uint_eq(obj_size("o"), 15);
	expect_read("o", 0, 15, "hello\0\0\0\0\0world", 15);
	expect_read("o", 3, 4, "lo\0\0", 4);
	expect_read("o", 12, 100, "rld", 3);      /* short read at EOF */
	expect_read("o", 15, 10, "", 0);          /* at EOF */
	expect_read("o", 1000, 10, "", 0);        /* past EOF */
	expect_read("missing", 0, 10, "", -ENOENT);

	op = store_op_new();
	store_op_write(op, 2, "XY", 2);
	ck_assert_int_eq(exec(op, "o"), 0);
	expect_read("o", 0, 15, "heXYo\0\0\0\0\0world", 15);
	ck_assert_uint_eq(obj_size("o"), 15);

	/* a zero-length read is fine */
	expect_read("o", 0, 0, "", 0);
}
END_TEST

START_TEST(t_holes)
{
	size_t len = (1 << 20) + 1;
	char *buf = malloc(len), *want = calloc(1, len);
	struct store_op *op = store_op_new();

	store_op_write(op, 1 << 20, "z", 1);
	ck_assert_int_eq(exec(op, "sparse"), 0);
	ck_assert_uint_eq(obj_size("sparse"), len);
	want[len - 1] = 'z';
	ck_assert_int_eq(store_read(pool, "sparse", 0, len, buf), (ssize_t)len);
	ck_assert_int_eq(memcmp(buf, want, len), 0);
	expect_read("sparse", 4096, 10, want, 10);

	/* a hole between two writes in separate ops */
	op = store_op_new();
	store_op_write(op, 0, "a", 1);
	ck_assert_int_eq(exec(op, "h2"), 0);
	op = store_op_new();
	store_op_write(op, 100, "b", 1);
	ck_assert_int_eq(exec(op, "h2"), 0);
	memset(want, 0, 101);
	want[0] = 'a';
	want[100] = 'b';
	expect_read("h2", 0, 200, want, 101);
	free(buf);
	free(want);
}
END_TEST

/* many waited-for reads in flight at once, waited for out of order */
START_TEST(t_aio_read_many)
{
	enum { N = 48 };
	struct store_aio *a[N];
	char bufs[N][16], oid[32];

	for (int i = 0; i < N; i += 2) {   /* odd objects never exist */
		struct store_op *op = store_op_new();
		char v[16];
		memset(v, 'a' + i % 26, sizeof(v));
		store_op_write(op, 0, v, sizeof(v));
		snprintf(oid, sizeof(oid), "aio.%d", i);
		ck_assert_int_eq(exec(op, oid), 0);
	}
	for (int i = 0; i < N; i++) {
		snprintf(oid, sizeof(oid), "aio.%d", i);
		ck_assert_int_eq(store_aio_read(pool, oid, 0, sizeof(bufs[i]), bufs[i], &a[i]), 0);
	}
	for (int k = 0; k < N; k++) {
		int i = (k * 7) % N;   /* 7 is prime to 48: every i once */
		ssize_t r = store_aio_wait(a[i]);
		if (i % 2) {
			ck_assert_int_eq(r, -ENOENT);
			continue;
		}
		ck_assert_int_eq(r, 16);
		for (int j = 0; j < 16; j++)
			ck_assert_int_eq(bufs[i][j], 'a' + i % 26);
	}
	struct store_aio *x;
	ck_assert_int_eq(store_aio_read(pool, "", 0, 4, bufs[0], &x), -EINVAL);
}
END_TEST

/*
 * Lent reads (store_aio_read_lend): many in flight, waited for out of order,
 * some dropped without a wait (the store must not write into a freed
 * buffer: ASan sees it), a missing object; rados lends, the others do not.
 */
START_TEST(t_aio_read_lend)
{
	enum { N = 48, SZ = 100000 };
	struct store_aio *a[N];
	char *v = malloc(SZ), oid[32];
	bool rados = strcmp(backend_name(), "rados") == 0;

	ck_assert_int_eq(store_can_lend(pool), rados);
	for (int i = 0; i < N; i += 2) {   /* odd objects never exist */
		struct store_op *op = store_op_new();
		memset(v, 'a' + i % 26, SZ);
		store_op_write(op, 0, v, SZ);
		snprintf(oid, sizeof(oid), "lend.%d", i);
		ck_assert_int_eq(exec(op, oid), 0);
	}
	for (int i = 0; i < N; i++) {
		snprintf(oid, sizeof(oid), "lend.%d", i);
		ck_assert_int_eq(store_aio_read_lend(pool, oid, i % 4 == 2 ? SZ - 10 : 0, SZ, &a[i]), 0);
	}
	for (int k = 0; k < N; k++) {
		int i = (k * 7) % N;   /* 7 is prime to 48: every i once */
		const char *data;
		ssize_t r;

		if (i % 8 == 4) {   /* dropped unwaited */
			store_aio_put(a[i]);
			continue;
		}
		r = store_aio_wait_lent(a[i], &data);
		if (i % 2) {
			ck_assert_int_eq(r, -ENOENT);
			ck_assert_ptr_null(data);
		} else {
			ssize_t want = i % 4 == 2 ? 10 : SZ;   /* short at the object's end */
			ck_assert_int_eq(r, want);
			for (ssize_t j = 0; j < want; j++)
				ck_assert_int_eq(data[j], 'a' + i % 26);
		}
		store_aio_put(a[i]);
	}
	struct store_aio *x;
	ck_assert_int_eq(store_aio_read_lend(pool, "", 0, 4, &x), -EINVAL);
	ck_assert_int_eq(store_aio_read_lend(pool, "lend.0", 0, 0, &x), -EINVAL);
	free(v);
}
END_TEST

START_TEST(t_truncate_append_zero)
{
	char data[100], want[200];

	for (int i = 0; i < 100; i++)
		data[i] = (char)('A' + i % 26);
	put_full("t", data, 100);
	struct store_op *op = store_op_new();
	store_op_truncate(op, 50);
	ck_assert_int_eq(exec(op, "t"), 0);
	ck_assert_uint_eq(obj_size("t"), 50);
	expect_read("t", 0, 100, data, 50);

	op = store_op_new();
	store_op_truncate(op, 200);
	ck_assert_int_eq(exec(op, "t"), 0);
	ck_assert_uint_eq(obj_size("t"), 200);
	memset(want, 0, sizeof(want));
	memcpy(want, data, 50);
	expect_read("t", 0, 300, want, 200);   /* what was cut off does not come back */

	put_full("t", "abc", 3);
	ck_assert_uint_eq(obj_size("t"), 3);
	op = store_op_new();
	store_op_append(op, "de", 2);
	store_op_append(op, "fg", 2);
	ck_assert_int_eq(exec(op, "t"), 0);
	expect_read("t", 0, 10, "abcdefg", 7);

	op = store_op_new();
	store_op_zero(op, 1, 2);
	ck_assert_int_eq(exec(op, "t"), 0);
	expect_read("t", 0, 10, "a\0\0defg", 7);
	ck_assert_uint_eq(obj_size("t"), 7);

	/* truncate to 0 then write in one op */
	op = store_op_new();
	store_op_truncate(op, 0);
	store_op_write(op, 2, "Q", 1);
	ck_assert_int_eq(exec(op, "t"), 0);
	expect_read("t", 0, 10, "\0\0Q", 3);

	/* a big zero inside a big object */
	char *big = malloc(256 << 10);
	memset(big, 0x5a, 256 << 10);
	put_full("z", big, 256 << 10);
	op = store_op_new();
	store_op_zero(op, 4096, 128 << 10);
	ck_assert_int_eq(exec(op, "z"), 0);
	memset(big + 4096, 0, 128 << 10);
	expect_read("z", 0, 256 << 10, big, 256 << 10);
	free(big);
}
END_TEST

START_TEST(t_remove)
{
	struct store_op *op = store_op_new();
	store_op_write_full(op, "data", 4);
	store_op_omap_set(op, "k", "v", 1);
	ck_assert_int_eq(exec(op, "r"), 0);

	op = store_op_new();
	store_op_remove(op);
	ck_assert_int_eq(exec(op, "r"), 0);

	struct store_stat s;
	struct store_kv *kv;
	size_t n;
	bool more;
	ck_assert_int_eq(store_stat(pool, "r", &s), -ENOENT);
	expect_read("r", 0, 10, "", -ENOENT);
	expect_omap("r", "k", NULL);
	ck_assert_int_eq(store_omap_list(pool, "r", NULL, NULL, 10, &kv, &n, &more), -ENOENT);

	op = store_op_new();
	store_op_remove(op);
	ck_assert_int_eq(exec(op, "r"), -ENOENT);

	/* a new incarnation starts empty */
	op = store_op_new();
	store_op_write(op, 0, "x", 1);
	ck_assert_int_eq(exec(op, "r"), 0);
	expect_read("r", 0, 10, "x", 1);
	ck_assert_int_eq(store_omap_list(pool, "r", NULL, NULL, 10, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);
	store_kv_free(kv, n);

	/* remove and recreate in one op */
	op = store_op_new();
	store_op_remove(op);
	store_op_write_full(op, "new", 3);
	ck_assert_int_eq(exec(op, "r"), 0);
	expect_read("r", 0, 10, "new", 3);

	char **names;
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	ck_assert_uint_eq(n, 1);
	free(names[0]);
	free(names);
}
END_TEST

START_TEST(t_stat)
{
	struct store_stat s;
	time_t before = time(NULL);

	put_full("s", "12345", 5);
	ck_assert_int_eq(store_stat(pool, "s", &s), 0);
	ck_assert_uint_eq(s.size, 5);
	ck_assert(s.mtime.tv_sec >= before - 2 && s.mtime.tv_sec <= time(NULL) + 2);
}
END_TEST

START_TEST(t_bad_args)
{
	char longname[STORE_OID_MAX + 2];
	char longkey[STORE_OMAP_KEY_MAX + 2];
	struct store_op *op;
	void *v;
	size_t len;

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = 0;
	op = store_op_new();
	store_op_write(op, 0, "x", 1);
	ck_assert_int_eq(exec(op, ""), -EINVAL);
	op = store_op_new();
	store_op_write(op, 0, "x", 1);
	ck_assert_int_eq(exec(op, longname), -ENAMETOOLONG);
	op = store_op_new();
	store_op_omap_set(op, longkey, "v", 1);
	ck_assert_int_eq(exec(op, "o"), -ENAMETOOLONG);
	ck_assert_int_eq(store_omap_get(pool, "o", longkey, &v, &len), -ENAMETOOLONG);
	struct store_stat s;
	ck_assert_int_eq(store_stat(pool, "o", &s), -ENOENT);   /* nothing was applied */
}
END_TEST

/* Corner cases where the local backend follows what RADOS does. */
START_TEST(t_edge_semantics)
{
	struct store_op *op;
	struct store_stat s;

	/* omap removal on a missing object fails and does not create it */
	op = store_op_new();
	store_op_omap_rm(op, "k");
	ck_assert_int_eq(exec(op, "e1"), -ENOENT);
	op = store_op_new();
	store_op_omap_rm_range(op, "a", "b");
	ck_assert_int_eq(exec(op, "e1"), -ENOENT);
	op = store_op_new();
	store_op_omap_clear(op);
	ck_assert_int_eq(exec(op, "e1"), -ENOENT);
	/* zero and truncate on a missing object do nothing */
	op = store_op_new();
	store_op_zero(op, 0, 10);
	ck_assert_int_eq(exec(op, "e1"), 0);
	op = store_op_new();
	store_op_truncate(op, 10);
	ck_assert_int_eq(exec(op, "e1"), 0);
	ck_assert_int_eq(store_stat(pool, "e1", &s), -ENOENT);
	/* an empty op is refused */
	ck_assert_int_eq(exec(store_op_new(), "e1"), -EINVAL);

	/* a 0-byte write creates the object and extends it to its offset */
	op = store_op_new();
	store_op_write(op, 100, "", 0);
	ck_assert_int_eq(exec(op, "e2"), 0);
	ck_assert_uint_eq(obj_size("e2"), 100);
	char zeros[100] = { 0 };
	expect_read("e2", 0, 200, zeros, 100);
	op = store_op_new();
	store_op_append(op, "x", 1);
	ck_assert_int_eq(exec(op, "e2"), 0);
	ck_assert_uint_eq(obj_size("e2"), 101);
	expect_read("e2", 99, 10, "\0x", 2);

	/* zeroing through the end truncates to the start of the range */
	put_full("z", "0123456789", 10);
	op = store_op_new();
	store_op_zero(op, 50, 10);   /* past the end: nothing */
	ck_assert_int_eq(exec(op, "z"), 0);
	ck_assert_uint_eq(obj_size("z"), 10);
	op = store_op_new();
	store_op_zero(op, 5, 100);
	ck_assert_int_eq(exec(op, "z"), 0);
	ck_assert_uint_eq(obj_size("z"), 5);
	expect_read("z", 0, 20, "01234", 5);

	/* a write and a remove in one op: gone */
	op = store_op_new();
	store_op_write(op, 0, "a", 1);
	store_op_omap_set(op, "k", "v", 1);
	store_op_remove(op);
	ck_assert_int_eq(exec(op, "e3"), 0);
	ck_assert_int_eq(store_stat(pool, "e3", &s), -ENOENT);
}
END_TEST

/* ---- omap ----------------------------------------------------------- */

START_TEST(t_omap_basic)
{
	struct store_op *op = store_op_new();
	const char bin[] = { 'a', 0, 'b', 0, 0, 'c' };
	void *v;
	size_t len;

	store_op_omap_set(op, "k1", "v1", 2);
	store_op_omap_set(op, "k2", "", 0);
	store_op_omap_set(op, "k3", bin, sizeof(bin));
	ck_assert_int_eq(exec(op, "m"), 0);
	expect_omap("m", "k1", "v1");
	expect_omap("m", "k2", "");
	ck_assert_int_eq(store_omap_get(pool, "m", "k3", &v, &len), 0);
	ck_assert_uint_eq(len, sizeof(bin));
	ck_assert_int_eq(memcmp(v, bin, len), 0);
	free(v);
	expect_omap("m", "nokey", NULL);
	ck_assert_int_eq(store_omap_get(pool, "noobj", "k1", &v, &len), -ENOENT);
	ck_assert_uint_eq(obj_size("m"), 0);   /* omap does not count in the size */

	omap_put1("m", "k1", "overwritten");
	expect_omap("m", "k1", "overwritten");

	op = store_op_new();
	store_op_omap_rm(op, "k1");
	store_op_omap_rm(op, "never-there");
	ck_assert_int_eq(exec(op, "m"), 0);
	expect_omap("m", "k1", NULL);
	expect_omap("m", "k2", "");

	/* set then rm of the same key in one op: applied in order */
	op = store_op_new();
	store_op_omap_set(op, "tmp", "1", 1);
	store_op_omap_rm(op, "tmp");
	store_op_omap_set(op, "k2", "late", 4);
	ck_assert_int_eq(exec(op, "m"), 0);
	expect_omap("m", "tmp", NULL);
	expect_omap("m", "k2", "late");

	op = store_op_new();
	store_op_omap_clear(op);
	ck_assert_int_eq(exec(op, "m"), 0);
	struct store_kv *kv;
	size_t n;
	bool more;
	ck_assert_int_eq(store_omap_list(pool, "m", NULL, NULL, 100, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);
	store_kv_free(kv, n);
	ck_assert_uint_eq(obj_size("m"), 0);   /* the object itself is still there */

	/* data and omap are independent */
	put_full("m", "bytes", 5);
	omap_put1("m", "a", "b");
	expect_read("m", 0, 10, "bytes", 5);
	expect_omap("m", "a", "b");
}
END_TEST

/* List everything with paging of @max, check it matches @want (sorted). */
static void list_all_paged(const char *oid, const char *start_after, const char *prefix, size_t max,
			   char **want, size_t nwant)
{
	char *after = start_after ? strdup(start_after) : NULL;
	size_t got = 0;
	bool more = true;

	while (more) {
		struct store_kv *kv;
		size_t n;
		ck_assert_int_eq(store_omap_list(pool, oid, after, prefix, max, &kv, &n, &more), 0);
		ck_assert_uint_le(n, max);
		if (more)
			ck_assert_uint_eq(n, max);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_lt(got, nwant);
			ck_assert_str_eq(kv[i].key, want[got]);
			ck_assert_uint_eq(kv[i].len, strlen(want[got]) + 2);
			ck_assert_int_eq(memcmp(kv[i].val, "v:", 2), 0);
			got++;
		}
		free(after);
		after = n ? strdup(kv[n - 1].key) : NULL;
		store_kv_free(kv, n);
		if (!n)
			break;
	}
	free(after);
	ck_assert_uint_eq(got, nwant);
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void omap_set_keys(const char *oid, char **keys, size_t n)
{
	/* a few ops, several keys each */
	for (size_t i = 0; i < n; i += 16) {
		struct store_op *op = store_op_new();
		for (size_t j = i; j < n && j < i + 16; j++) {
			char val[STORE_OMAP_KEY_MAX + 8];
			snprintf(val, sizeof(val), "v:%s", keys[j]);
			store_op_omap_set(op, keys[j], val, strlen(val));
		}
		ck_assert_int_eq(exec(op, oid), 0);
	}
}

START_TEST(t_omap_list)
{
	char *keys[120], *sel[120];
	size_t nk = 0, ns;
	struct store_kv *kv;
	size_t n;
	bool more;

	for (int i = 99; i >= 0; i--) {
		keys[nk] = malloc(24);
		snprintf(keys[nk++], 24, "key%03d", i);
	}
	for (int i = 0; i < 10; i++) {
		keys[nk] = malloc(24);
		snprintf(keys[nk++], 24, "other%d", i);
	}
	keys[nk++] = strdup("k");
	keys[nk++] = strdup("key");   /* the prefix itself is a key */
	omap_set_keys("l", keys, nk);
	qsort(keys, nk, sizeof(keys[0]), strp_cmp);

	/* everything, in pages of 7 and in one go */
	list_all_paged("l", NULL, NULL, 7, keys, nk);
	list_all_paged("l", NULL, NULL, 1000, keys, nk);
	ck_assert_int_eq(store_omap_list(pool, "l", NULL, NULL, nk, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, nk);
	ck_assert(!more);
	store_kv_free(kv, n);
	ck_assert_int_eq(store_omap_list(pool, "l", NULL, NULL, nk - 1, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, nk - 1);
	ck_assert(more);
	store_kv_free(kv, n);

	/* prefix */
	ns = 0;
	for (size_t i = 0; i < nk; i++)
		if (strncmp(keys[i], "key", 3) == 0)
			sel[ns++] = keys[i];
	ck_assert_uint_eq(ns, 101);
	list_all_paged("l", NULL, "key", 10, sel, ns);
	ns = 0;
	for (size_t i = 0; i < nk; i++)
		if (strncmp(keys[i], "key05", 5) == 0)
			sel[ns++] = keys[i];
	ck_assert_uint_eq(ns, 10);
	list_all_paged("l", NULL, "key05", 3, sel, ns);

	/* after + prefix */
	ns = 0;
	for (size_t i = 0; i < nk; i++)
		if (strncmp(keys[i], "key0", 4) == 0 && strcmp(keys[i], "key050") > 0)
			sel[ns++] = keys[i];
	ck_assert_uint_eq(ns, 49);
	list_all_paged("l", "key050", "key0", 5, sel, ns);

	/* after alone, after past the end, prefix matching nothing */
	ns = 0;
	for (size_t i = 0; i < nk; i++)
		if (strcmp(keys[i], "other5") > 0)
			sel[ns++] = keys[i];
	ck_assert_uint_eq(ns, 4);
	list_all_paged("l", "other5", NULL, 2, sel, ns);
	ck_assert_int_eq(store_omap_list(pool, "l", "zzz", NULL, 10, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);
	store_kv_free(kv, n);
	ck_assert_int_eq(store_omap_list(pool, "l", NULL, "nope", 10, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);
	store_kv_free(kv, n);
	/* after sorting beyond every key with the prefix */
	ck_assert_int_eq(store_omap_list(pool, "l", "kez", "key", 10, &kv, &n, &more), 0);
	ck_assert_uint_eq(n, 0);
	store_kv_free(kv, n);

	ck_assert_int_eq(store_omap_list(pool, "nolist", NULL, NULL, 10, &kv, &n, &more), -ENOENT);
	for (size_t i = 0; i < nk; i++)
		free(keys[i]);
}
END_TEST

START_TEST(t_omap_rm_range)
{
	char *keys[26];
	char *left[26];
	size_t nl = 0;

	for (int i = 0; i < 26; i++) {
		keys[i] = malloc(4);
		snprintf(keys[i], 4, "%c", 'a' + i);
	}
	omap_set_keys("rr", keys, 26);
	struct store_op *op = store_op_new();
	store_op_omap_rm_range(op, "c", "f");    /* c d e */
	store_op_omap_rm_range(op, "x", NULL);   /* x y z */
	store_op_omap_rm_range(op, "j", "j");    /* empty range */
	ck_assert_int_eq(exec(op, "rr"), 0);
	for (int i = 0; i < 26; i++) {
		char c = (char)('a' + i);
		if ((c >= 'c' && c < 'f') || c >= 'x')
			continue;
		left[nl++] = keys[i];
	}
	list_all_paged("rr", NULL, NULL, 100, left, nl);
	expect_omap("rr", "f", "v:f");
	expect_omap("rr", "c", NULL);
	for (int i = 0; i < 26; i++)
		free(keys[i]);
}
END_TEST

/* Keys up to STORE_OMAP_KEY_MAX, many sharing long prefixes: order, get, rm, paging. */
START_TEST(t_omap_long_keys)
{
	enum { N = 60 };
	char *keys[N], *sel[N];
	size_t ns = 0;
	char base[STORE_OMAP_KEY_MAX + 1];
	unsigned seed = 12345;

	memset(base, 'p', sizeof(base));
	for (int i = 0; i < N; i++) {
		size_t len;
		if (i < 10)
			len = 470 + (size_t)i * 3;          /* around the 480 byte boundary */
		else if (i < 50)
			len = 490 + rand_r(&seed) % (STORE_OMAP_KEY_MAX - 490 + 1);
		else
			len = STORE_OMAP_KEY_MAX - (size_t)(i - 50);
		keys[i] = malloc(len + 1);
		memcpy(keys[i], base, len);
		keys[i][len] = 0;
		/* vary a byte before and after the 480 mark so runs form and split */
		if (i % 3 == 1 && len > 500)
			keys[i][len - 1] = (char)('a' + i % 26);
		if (i % 5 == 2 && len > 20)
			keys[i][10] = 'q';
		if (i % 7 == 3 && len > 485)
			keys[i][482] = (char)('A' + i % 20);
	}
	/* de-duplicate */
	qsort(keys, N, sizeof(keys[0]), strp_cmp);
	size_t nk = 0;
	for (int i = 0; i < N; i++) {
		if (nk && strcmp(keys[nk - 1], keys[i]) == 0) {
			free(keys[i]);
			continue;
		}
		keys[nk++] = keys[i];
	}
	/* insert in a scrambled order */
	char *scr[N];
	memcpy(scr, keys, nk * sizeof(*scr));
	for (size_t i = nk - 1; i > 0; i--) {
		size_t j = rand_r(&seed) % (i + 1);
		char *t = scr[i];
		scr[i] = scr[j];
		scr[j] = t;
	}
	omap_set_keys("lk", scr, nk);
	list_all_paged("lk", NULL, NULL, 4, keys, nk);
	for (size_t i = 0; i < nk; i += 7) {
		char val[STORE_OMAP_KEY_MAX + 8];
		snprintf(val, sizeof(val), "v:%s", keys[i]);
		expect_omap("lk", keys[i], val);
	}
	/* prefix longer than 480 bytes */
	char pfx[520];
	memset(pfx, 'p', 500);
	pfx[500] = 0;
	for (size_t i = 0; i < nk; i++)
		if (strncmp(keys[i], pfx, 500) == 0)
			sel[ns++] = keys[i];
	ck_assert_uint_gt(ns, 5);
	list_all_paged("lk", NULL, pfx, 3, sel, ns);
	/* after = a long key in the middle */
	list_all_paged("lk", keys[nk / 2], NULL, 5, keys + nk / 2 + 1, nk - nk / 2 - 1);

	/* remove a few long keys and a range in the long region */
	struct store_op *op = store_op_new();
	store_op_omap_rm(op, keys[20]);
	store_op_omap_rm_range(op, keys[30], keys[35]);
	ck_assert_int_eq(exec(op, "lk"), 0);
	ns = 0;
	for (size_t i = 0; i < nk; i++)
		if (i != 20 && !(i >= 30 && i < 35))
			sel[ns++] = keys[i];
	list_all_paged("lk", NULL, NULL, 6, sel, ns);
	expect_omap("lk", keys[20], NULL);
	for (size_t i = 0; i < nk; i++)
		free(keys[i]);
}
END_TEST

/* ---- atomicity ------------------------------------------------------ */

static void check_untouched(const char *oid)
{
	expect_read(oid, 0, 100, "original", 8);
	ck_assert_uint_eq(obj_size(oid), 8);
	expect_omap(oid, "k", "v");
	expect_omap(oid, "k2", NULL);
}

START_TEST(t_atomic)
{
	struct store_op *op = store_op_new();
	store_op_write_full(op, "original", 8);
	store_op_omap_set(op, "k", "v", 1);
	ck_assert_int_eq(exec(op, "at"), 0);

	/* writes, omap changes, then a create exclusive that fails: nothing applies */
	op = store_op_new();
	store_op_write(op, 0, "CHANGED!!!!", 11);
	store_op_append(op, "more", 4);
	store_op_omap_set(op, "k", "changed", 7);
	store_op_omap_set(op, "k2", "new", 3);
	store_op_omap_rm(op, "k");
	store_op_truncate(op, 2);
	store_op_create(op, true);
	ck_assert_int_eq(exec(op, "at"), -EEXIST);
	check_untouched("at");

	/* a remove and a rewrite in the failing op */
	op = store_op_new();
	store_op_omap_clear(op);
	store_op_write_full(op, "zzz", 3);
	store_op_create(op, true);
	ck_assert_int_eq(exec(op, "at"), -EEXIST);
	check_untouched("at");

	/* a guard at the front: the object does not exist, nothing is created */
	op = store_op_new();
	store_op_assert_exists(op);
	store_op_write(op, 0, "data", 4);
	store_op_omap_set(op, "k", "v", 1);
	ck_assert_int_eq(exec(op, "ghost"), -ENOENT);
	struct store_stat s;
	ck_assert_int_eq(store_stat(pool, "ghost", &s), -ENOENT);
	expect_omap("ghost", "k", NULL);

	/* and a successful compound op applies all of it */
	op = store_op_new();
	store_op_assert_exists(op);
	store_op_write(op, 8, "+tail", 5);
	store_op_omap_set(op, "k2", "new", 3);
	store_op_omap_rm(op, "k");
	ck_assert_int_eq(exec(op, "at"), 0);
	expect_read("at", 0, 100, "original+tail", 13);
	expect_omap("at", "k", NULL);
	expect_omap("at", "k2", "new");
}
END_TEST

/* ---- compare-and-swap guards (store_op_omap_cmp) --------------------- */

/* An op guarded by @key == @val that changes everything it can: on failure none of it may land. */
static struct store_op *guarded_change(const char *key, const char *val)
{
	struct store_op *op = store_op_new();

	store_op_omap_cmp(op, key, val, strlen(val));
	store_op_write(op, 0, "CHANGED!!!!", 11);
	store_op_omap_set(op, "k", "changed", 7);
	store_op_omap_set(op, "k2", "new", 3);
	return op;
}

START_TEST(t_omap_cmp)
{
	struct store_op *op = store_op_new();
	struct store_stat s;

	store_op_write_full(op, "original", 8);
	store_op_omap_set(op, "k", "v", 1);
	store_op_omap_set(op, "epoch", "5", 1);
	store_op_omap_set(op, "bin", "a\0b", 3);
	store_op_omap_set(op, "empty", "", 0);
	ck_assert_int_eq(exec(op, "at"), 0);

	/* a different value, a longer one, a prefix, a missing key: -ECANCELED, nothing applied */
	ck_assert_int_eq(exec(guarded_change("epoch", "6"), "at"), -ECANCELED);
	ck_assert_int_eq(exec(guarded_change("epoch", "55"), "at"), -ECANCELED);
	ck_assert_int_eq(exec(guarded_change("nokey", "5"), "at"), -ECANCELED);
	op = guarded_change("epoch", "5");
	store_op_omap_cmp(op, "bin", "a\0c", 3);   /* the bytes after a NUL count */
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);
	expect_omap("at", "epoch", "5");
	expect_omap("at", "k", "v");
	expect_omap("at", "k2", NULL);
	expect_read("at", 0, 100, "original", 8);

	/* a missing object: -ECANCELED, not created; also with assert_exists (guards come first) */
	ck_assert_int_eq(exec(guarded_change("epoch", "5"), "ghost"), -ECANCELED);
	op = guarded_change("epoch", "5");
	store_op_assert_exists(op);
	ck_assert_int_eq(exec(op, "ghost"), -ECANCELED);
	ck_assert_int_eq(store_stat(pool, "ghost", &s), -ENOENT);
	expect_omap("ghost", "k", NULL);

	/* two guards: each one that fails cancels the op, in either place */
	op = guarded_change("epoch", "5");
	store_op_omap_cmp(op, "k", "x", 1);
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);
	op = store_op_new();
	store_op_omap_cmp(op, "k", "x", 1);
	store_op_omap_cmp(op, "epoch", "5", 1);
	store_op_omap_set(op, "epoch", "9", 1);
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);
	expect_omap("at", "epoch", "5");
	expect_omap("at", "k2", NULL);

	/* equal values (binary, several guards): the whole op applies */
	op = guarded_change("epoch", "5");
	store_op_omap_cmp(op, "bin", "a\0b", 3);
	store_op_omap_cmp(op, "k", "v", 1);
	store_op_omap_set(op, "epoch", "6", 1);
	ck_assert_int_eq(exec(op, "at"), 0);
	expect_omap("at", "epoch", "6");
	expect_omap("at", "k", "changed");
	expect_omap("at", "k2", "new");
	expect_read("at", 0, 100, "CHANGED!!!!", 11);

	/* a guard compares the object as it was before the op, wherever it is queued */
	op = store_op_new();
	store_op_omap_set(op, "epoch", "7", 1);
	store_op_omap_cmp(op, "epoch", "7", 1);
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);
	op = store_op_new();
	store_op_omap_set(op, "epoch", "7", 1);
	store_op_omap_cmp(op, "epoch", "6", 1);
	ck_assert_int_eq(exec(op, "at"), 0);
	expect_omap("at", "epoch", "7");

	/* a guard alone changes nothing and passes or fails all the same */
	op = store_op_new();
	store_op_omap_cmp(op, "epoch", "7", 1);
	ck_assert_int_eq(exec(op, "at"), 0);
	op = store_op_new();
	store_op_omap_cmp(op, "epoch", "8", 1);
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);

	/* a key holding the empty value is not a match for a non-empty one */
	op = store_op_new();
	store_op_omap_cmp(op, "empty", "x", 1);
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);
}
END_TEST

START_TEST(t_omap_cmp_bad_args)
{
	char *key = malloc(STORE_OMAP_KEY_MAX + 2), *val = calloc(1, STORE_OMAP_CMP_VAL_MAX + 1);
	struct store_op *op;

	omap_put1("at", "epoch", "1");
	memset(key, 'k', STORE_OMAP_KEY_MAX + 1);
	key[STORE_OMAP_KEY_MAX + 1] = 0;
	op = store_op_new();
	store_op_omap_cmp(op, key, "1", 1);
	store_op_omap_set(op, "epoch", "2", 1);
	ck_assert_int_eq(exec(op, "at"), -ENAMETOOLONG);
	op = store_op_new();
	store_op_omap_cmp(op, NULL, "1", 1);
	ck_assert_int_eq(exec(op, "at"), -EINVAL);
	op = store_op_new();
	store_op_omap_cmp(op, "epoch", val, STORE_OMAP_CMP_VAL_MAX + 1);
	store_op_omap_set(op, "epoch", "2", 1);
	ck_assert_int_eq(exec(op, "at"), -EINVAL);
	/* the empty value: refused, as RADOS cannot tell it from a missing key (store.h) */
	omap_put1("at", "empty", "");
	op = store_op_new();
	store_op_omap_cmp(op, "empty", "", 0);
	store_op_omap_set(op, "epoch", "2", 1);
	ck_assert_int_eq(exec(op, "at"), -EINVAL);
	op = store_op_new();
	store_op_omap_cmp(op, "nokey", NULL, 0);
	store_op_omap_set(op, "epoch", "2", 1);
	ck_assert_int_eq(exec(op, "at"), -EINVAL);
	expect_omap("at", "epoch", "1");

	/* the longest key and value allowed work */
	key[STORE_OMAP_KEY_MAX] = 0;
	memset(val, 'v', STORE_OMAP_CMP_VAL_MAX);
	op = store_op_new();
	store_op_omap_set(op, key, val, STORE_OMAP_CMP_VAL_MAX);
	ck_assert_int_eq(exec(op, "at"), 0);
	op = store_op_new();
	store_op_omap_cmp(op, key, val, STORE_OMAP_CMP_VAL_MAX);
	store_op_omap_set(op, "epoch", "2", 1);
	ck_assert_int_eq(exec(op, "at"), 0);
	expect_omap("at", "epoch", "2");
	val[STORE_OMAP_CMP_VAL_MAX - 1] = 'w';
	op = store_op_new();
	store_op_omap_cmp(op, key, val, STORE_OMAP_CMP_VAL_MAX);
	ck_assert_int_eq(exec(op, "at"), -ECANCELED);
	free(key);
	free(val);
}
END_TEST

/*
 * Guarded ops in flight together (the local store commits them in one
 * batch): each one that fails its guard fails alone, the others land.
 */
struct cas_res {
	struct waiter *w;
	int r;
};

static void cas_res_cb(int r, void *arg)
{
	struct cas_res *c = arg;

	c->r = r;
	waiter_done(c->w, r == -ECANCELED ? 0 : r);
}

START_TEST(t_omap_cmp_batch)
{
	enum { N = 64 };
	struct cas_res res[N];
	struct waiter w;

	waiter_init(&w);
	omap_put1("b", "epoch", "0");
	for (int i = 0; i < N; i++) {
		struct store_op *op = store_op_new();
		char oid[16], v[16];

		/* even: guarded on the value the op before it leaves; odd: guarded on a stale one */
		snprintf(v, sizeof(v), "%d", i % 2 ? 0 : i / 2);
		store_op_omap_cmp(op, "epoch", v, strlen(v));
		snprintf(v, sizeof(v), "%d", i / 2 + 1);
		if (i % 2 == 0)
			store_op_omap_set(op, "epoch", v, strlen(v));
		else
			store_op_omap_set(op, "never", "x", 1);
		snprintf(oid, sizeof(oid), "side%d", i);
		res[i].w = &w;
		res[i].r = 1;
		waiter_add(&w);
		ck_assert_int_eq(store_op_submit(pool, "b", op, cas_res_cb, &res[i]), 0);
		/* and an unguarded op on another object in between */
		op = store_op_new();
		store_op_omap_set(op, "k", "v", 1);
		waiter_add(&w);
		ck_assert_int_eq(store_op_submit(pool, oid, op, op_cb, &w), 0);
	}
	waiter_wait(&w);
	ck_assert_int_eq(w.errors, 0);
	for (int i = 0; i < N; i++) {
		char oid[16];

		ck_assert_int_eq(res[i].r, i % 2 == 0 ? 0 : -ECANCELED);
		snprintf(oid, sizeof(oid), "side%d", i);
		expect_omap(oid, "k", "v");
	}
	{
		char v[16];
		snprintf(v, sizeof(v), "%d", N / 2);
		expect_omap("b", "epoch", v);
		expect_omap("b", "never", NULL);
	}
}
END_TEST

/*
 * The race the MDS map's epoch runs: threads move "epoch" from the value
 * they read to the next with one guarded op.  Exactly one wins each step.
 */
enum { CAS_THREADS = 8 };

struct cas_thr {
	pthread_t th;
	int id;
	unsigned target;
	unsigned won, lost;
	unsigned *wins;   /* the epochs this thread made, in order */
	int err;          /* first unexpected result */
	pthread_barrier_t *start;
};

static void *cas_thr_main(void *arg)
{
	struct cas_thr *t = arg;

	pthread_barrier_wait(t->start);   /* all at once: the race is the point */
	for (;;) {
		void *v;
		size_t len;
		char cur[16], next[16], key[32], who[16];
		unsigned e;
		int r = store_omap_get(pool, "cas", "epoch", &v, &len);

		if (r || len == 0 || len >= sizeof(cur)) {
			t->err = r ? r : -EIO;
			free(v);
			return NULL;
		}
		memcpy(cur, v, len);
		cur[len] = 0;
		free(v);
		e = (unsigned)strtoul(cur, NULL, 10);
		if (e >= t->target)
			return NULL;
		snprintf(next, sizeof(next), "%u", e + 1);
		snprintf(key, sizeof(key), "win.%08u", e + 1);
		snprintf(who, sizeof(who), "%d", t->id);
		struct store_op *op = store_op_new();
		store_op_omap_cmp(op, "epoch", cur, len);
		store_op_omap_set(op, "epoch", next, strlen(next));
		store_op_omap_set(op, key, who, strlen(who));
		r = store_op_exec(pool, "cas", op);
		if (r == 0) {
			t->wins[t->won++] = e + 1;
		} else if (r == -ECANCELED) {
			t->lost++;
		} else {
			t->err = r;
			return NULL;
		}
	}
}

START_TEST(t_omap_cmp_race)
{
	/* every op is a round trip to an OSD on rados */
	unsigned target = is_local() || is_mem() ? 800 : 200, total = 0, lost = 0;
	struct cas_thr t[CAS_THREADS];
	unsigned char *seen = calloc(target + 1, 1);
	pthread_barrier_t start;

	omap_put1("cas", "epoch", "0");
	pthread_barrier_init(&start, NULL, CAS_THREADS);
	for (int i = 0; i < CAS_THREADS; i++) {
		t[i] = (struct cas_thr){ .id = i, .target = target, .wins = calloc(target, sizeof(unsigned)),
					 .start = &start };
		ck_assert_int_eq(pthread_create(&t[i].th, NULL, cas_thr_main, &t[i]), 0);
	}
	for (int i = 0; i < CAS_THREADS; i++) {
		pthread_join(t[i].th, NULL);
		ck_assert_msg(t[i].err == 0, "thread %d: %s", i, strerror(-t[i].err));
		total += t[i].won;
		lost += t[i].lost;
		for (unsigned j = 0; j < t[i].won; j++) {
			unsigned e = t[i].wins[j];
			char key[32], who[16];

			ck_assert_uint_le(e, target);
			ck_assert_msg(!seen[e], "epoch %u won twice", e);
			seen[e] = 1;
			ck_assert(j == 0 || e > t[i].wins[j - 1]);
			/* the winner's record landed with its epoch, in the same op */
			snprintf(key, sizeof(key), "win.%08u", e);
			snprintf(who, sizeof(who), "%d", i);
			expect_omap("cas", key, who);
		}
		free(t[i].wins);
	}
	/* as many successes as steps: the final epoch */
	ck_assert_uint_eq(total, target);
	{
		char v[16];
		snprintf(v, sizeof(v), "%u", target);
		expect_omap("cas", "epoch", v);
	}
	fprintf(stderr, "omap_cmp race (%s): %u steps, %u ops lost a race\n", backend_name(), total, lost);
	pthread_barrier_destroy(&start);
	free(seen);
}
END_TEST

/* ---- async, ordering, size ------------------------------------------ */

START_TEST(t_async_many)
{
	enum { NOPS = 256, NOBJ = 32, BLK = 4096 };
	struct waiter w;
	char *buf = malloc(BLK);

	waiter_init(&w);
	for (int i = 0; i < NOPS; i++) {
		char oid[16], key[16], val[16];
		struct store_op *op = store_op_new();
		snprintf(oid, sizeof(oid), "a%d", i % NOBJ);
		snprintf(key, sizeof(key), "op%04d", i);
		snprintf(val, sizeof(val), "%d", i);
		memset(buf, 'a' + i % 26, BLK);
		memcpy(buf, &i, sizeof(i));
		store_op_write(op, (uint64_t)(i / NOBJ) * BLK, buf, BLK);
		store_op_omap_set(op, key, val, strlen(val));
		waiter_add(&w);
		ck_assert_int_eq(store_op_submit(pool, oid, op, op_cb, &w), 0);
	}
	waiter_wait(&w);
	ck_assert_int_eq(w.errors, 0);

	/* async reads of everything, all in flight at once */
	char *rbuf = malloc((size_t)NOPS * BLK);
	waiter_init(&w);
	for (int i = 0; i < NOPS; i++) {
		char oid[16];
		snprintf(oid, sizeof(oid), "a%d", i % NOBJ);
		waiter_add(&w);
		ck_assert_int_eq(store_read_submit(pool, oid, (uint64_t)(i / NOBJ) * BLK, BLK, rbuf + (size_t)i * BLK,
						   op_cb, &w), 0);
	}
	waiter_wait(&w);
	ck_assert_int_eq(w.errors, 0);
	for (int i = 0; i < NOPS; i++) {
		int v;
		char oid[16], key[16], val[16];
		memcpy(&v, rbuf + (size_t)i * BLK, sizeof(v));
		ck_assert_int_eq(v, i);
		ck_assert_int_eq(rbuf[(size_t)i * BLK + BLK - 1], 'a' + i % 26);
		snprintf(oid, sizeof(oid), "a%d", i % NOBJ);
		snprintf(key, sizeof(key), "op%04d", i);
		snprintf(val, sizeof(val), "%d", i);
		if (i % 17 == 0)
			expect_omap(oid, key, val);
	}
	for (int o = 0; o < NOBJ; o++) {
		char oid[16];
		snprintf(oid, sizeof(oid), "a%d", o);
		ck_assert_uint_eq(obj_size(oid), (uint64_t)(NOPS / NOBJ) * BLK);
	}
	free(rbuf);
	free(buf);
}
END_TEST

struct read_check {
	struct waiter *w;
	char buf[8];
	int expect;
	_Atomic int *bad;
};

static void read_check_cb(int r, void *arg)
{
	struct read_check *rc = arg;
	int v = -1;
	if (r == 4)
		memcpy(&v, rc->buf, 4);
	if (v != rc->expect)
		atomic_fetch_add(rc->bad, 1);
	waiter_done(rc->w, r < 0 ? r : 0);
}

START_TEST(t_ordering)
{
	enum { N = 200 };
	struct waiter w;
	struct read_check *rc = calloc(N, sizeof(*rc));
	_Atomic int bad = 0;

	waiter_init(&w);
	for (int i = 0; i < N; i++) {
		char val[16];
		struct store_op *op = store_op_new();
		snprintf(val, sizeof(val), "%d", i);
		store_op_append(op, &i, sizeof(i));
		store_op_omap_set(op, "last", val, strlen(val));
		waiter_add(&w);
		ck_assert_int_eq(store_op_submit(pool, "ord", op, op_cb, &w), 0);
		/* the same bytes of another object rewritten by each op... */
		op = store_op_new();
		store_op_write(op, 4096, &i, sizeof(i));
		waiter_add(&w);
		ck_assert_int_eq(store_op_submit(pool, "ord2", op, op_cb, &w), 0);
		/* ...and a read submitted right behind the write sees it */
		rc[i].w = &w;
		rc[i].expect = i;
		rc[i].bad = &bad;
		waiter_add(&w);
		ck_assert_int_eq(store_read_submit(pool, "ord2", 4096, 4, rc[i].buf, read_check_cb, &rc[i]), 0);
	}
	waiter_wait(&w);
	ck_assert_int_eq(w.errors, 0);
	ck_assert_int_eq(atomic_load(&bad), 0);
	int *data = malloc(N * sizeof(int));
	ck_assert_int_eq(store_read(pool, "ord", 0, N * sizeof(int), data), (ssize_t)(N * sizeof(int)));
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(data[i], i);
	char last[16];
	snprintf(last, sizeof(last), "%d", N - 1);
	expect_omap("ord", "last", last);
	free(data);
	free(rc);
}
END_TEST

/* Several threads using one pool at once, blocking calls: each sees its own writes. */
struct thr_arg {
	int id;
	int errors;
};

static void *thr_main(void *arg)
{
	struct thr_arg *ta = arg;
	char oid[32], key[32], val[32], buf[64];

	snprintf(oid, sizeof(oid), "thr%d", ta->id);
	for (int i = 0; i < 40; i++) {
		struct store_op *op = store_op_new();
		snprintf(key, sizeof(key), "k%03d", i);
		snprintf(val, sizeof(val), "%d-%d", ta->id, i);
		char rec[8] = { 0 };
		memcpy(rec, val, strlen(val) < 8 ? strlen(val) : 8);
		store_op_write(op, (uint64_t)i * 8, rec, 8);
		store_op_omap_set(op, key, val, strlen(val));
		if (store_op_exec(pool, oid, op) != 0)
			ta->errors++;
		/* a shared object everybody appends to */
		op = store_op_new();
		store_op_append(op, &ta->id, 1);
		if (store_op_exec(pool, "shared", op) != 0)
			ta->errors++;
		void *v;
		size_t len;
		if (store_omap_get(pool, oid, key, &v, &len) != 0 || len != strlen(val) || memcmp(v, val, len))
			ta->errors++;
		else
			free(v);
		if (store_read(pool, oid, (uint64_t)i * 8, 8, buf) != 8 || strncmp(buf, val, 8) != 0)
			ta->errors++;
		struct store_kv *kv;
		size_t n;
		bool more;
		if (store_omap_list(pool, oid, NULL, "k", 1000, &kv, &n, &more) != 0 || n != (size_t)i + 1 || more)
			ta->errors++;
		else
			store_kv_free(kv, n);
	}
	return NULL;
}

START_TEST(t_threads)
{
	enum { NT = 4 };
	pthread_t th[NT];
	struct thr_arg ta[NT];

	for (int i = 0; i < NT; i++) {
		ta[i].id = i;
		ta[i].errors = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_main, &ta[i]), 0);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(ta[i].errors, 0);
	}
	unsigned char *all = malloc(NT * 40);
	int count[NT] = { 0 };
	ck_assert_int_eq(store_read(pool, "shared", 0, NT * 40, all), NT * 40);
	for (int i = 0; i < NT * 40; i++) {
		ck_assert_uint_lt(all[i], NT);
		count[all[i]]++;
	}
	for (int i = 0; i < NT; i++)
		ck_assert_int_eq(count[i], 40);
	free(all);
}
END_TEST

static void fill_pattern(unsigned char *p, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
}

START_TEST(t_large)
{
	size_t four = 4u << 20, two = 2u << 20;
	unsigned char *a = malloc(four), *b = malloc(6u << 20), *r = malloc(6u << 20);

	fill_pattern(a, four, 1);
	put_full("big", a, four);
	ck_assert_uint_eq(obj_size("big"), four);
	ck_assert_int_eq(store_read(pool, "big", 0, four, r), (ssize_t)four);
	ck_assert_int_eq(memcmp(r, a, four), 0);
	ck_assert_int_eq(store_read(pool, "big", 12345, 1 << 20, r), 1 << 20);
	ck_assert_int_eq(memcmp(r, a + 12345, 1 << 20), 0);

	/* three 2 MiB writes in one op make a 6 MiB object */
	fill_pattern(b, 6u << 20, 2);
	struct store_op *op = store_op_new();
	for (int i = 0; i < 3; i++)
		store_op_write(op, (uint64_t)i * two, b + (size_t)i * two, two);
	ck_assert_int_eq(exec(op, "big6"), 0);
	ck_assert_int_eq(store_read(pool, "big6", 0, 6u << 20, r), (ssize_t)(6u << 20));
	ck_assert_int_eq(memcmp(r, b, 6u << 20), 0);
	free(a);
	free(b);
	free(r);
}
END_TEST

/*
 * store_op_write_nocopy: the op refers to the caller's buffer only until
 * submit returns; what lands is what the buffer held then, whatever the
 * caller does with it afterwards (reuses it, frees it), on every backend.
 */
START_TEST(t_write_nocopy)
{
	size_t four = 4u << 20;
	unsigned char *a = malloc(four), *want = malloc(four), *r = malloc(four);
	struct store_completion *c1 = store_completion_new(), *c2 = store_completion_new();
	struct store_op *op;

	fill_pattern(a, four, 3);
	memcpy(want, a, four);
	op = store_op_new();
	store_op_write_full_nocopy(op, a, four);
	ck_assert_int_eq(store_op_submit(pool, "nc", op, store_completion_cb, c1), 0);
	memset(a, 0xee, four);   /* the caller's buffer is its own again */
	op = store_op_new();
	store_op_write_nocopy(op, 4, "NOCOPY", 6);
	store_op_write_nocopy(op, 100, a, 10);
	ck_assert_int_eq(store_op_submit(pool, "nc2", op, store_completion_cb, c2), 0);
	free(a);
	ck_assert_int_eq(store_completion_wait(c1), 0);
	ck_assert_int_eq(store_completion_wait(c2), 0);
	ck_assert_int_eq(store_read(pool, "nc", 0, four, r), (ssize_t)four);
	ck_assert_int_eq(memcmp(r, want, four), 0);
	expect_read("nc2", 0, 10, "\0\0\0\0NOCOPY", 10);
	memset(want, 0xee, 10);
	expect_read("nc2", 100, 10, (const char *)want, 10);
	/* an op freed unsubmitted leaves the caller's buffer alone (no double free) */
	op = store_op_new();
	store_op_write_nocopy(op, 0, r, 16);
	store_op_free(op);
	r[0] = 1;
	free(want);
	free(r);
}
END_TEST

/* ---- local backend only --------------------------------------------- */

START_TEST(t_local_persist)
{
	char *big = malloc(1 << 20);

	fill_pattern((unsigned char *)big, 1 << 20, 7);
	struct store_op *op = store_op_new();
	store_op_write_full(op, big, 1 << 20);
	store_op_omap_set(op, "k", "v", 1);
	ck_assert_int_eq(exec(op, "p"), 0);
	op = store_op_new();
	store_op_remove(op);
	put_full("gone", "x", 1);
	ck_assert_int_eq(exec(op, "gone"), 0);
	store_pool_close(pool);
	store_close(st);
	open_store();
	open_pool(nspace);
	ck_assert_int_eq(store_pool_create(st, pool_name), -EEXIST);
	expect_read("p", 0, 1 << 20, big, 1 << 20);
	expect_omap("p", "k", "v");
	struct store_stat s;
	ck_assert_int_eq(store_stat(pool, "gone", &s), -ENOENT);
	free(big);
}
END_TEST

START_TEST(t_local_open_errors)
{
	struct store_config cfg;
	struct store *st2;
	char path[PATH_MAX + 64];

	/* perf dump shows the store's counters */
	for (int i = 0; i < 3; i++)
		put_full("perf", "x", 1);
	struct json_object *pd = perf_dump_json(), *g = NULL, *v;
	/* "store_local", or "store_local.N" when earlier stores lived in this process (CK_FORK=no) */
	json_object_object_foreach(pd, gname, gval) {
		if (strncmp(gname, "store_local", 11) == 0)
			g = gval;
	}
	ck_assert_ptr_nonnull(g);
	ck_assert(json_object_object_get_ex(g, "write_ops", &v));
	ck_assert_int_eq(json_object_get_int64(v), 3);
	ck_assert(json_object_object_get_ex(g, "commits", &v));
	ck_assert_int_ge(json_object_get_int64(v), 1);
	ck_assert(json_object_object_get_ex(g, "commit_lat", &v));
	json_object_put(pd);

	fill_config(&cfg);
	/* the store is open: a second open is refused */
	ck_assert_int_eq(store_open(&cfg, &st2), -EBUSY);
	snprintf(path, sizeof(path), "%s/does-not-exist", storedir);
	cfg.local_path = path;
	cfg.create = false;
	ck_assert_int_eq(store_open(&cfg, &st2), -ENOENT);
	/* an existing directory that is not a store */
	cfg.local_path = basedir;
	ck_assert_int_eq(store_open(&cfg, &st2), -ENOENT);
	cfg.backend = "nosuch";
	ck_assert_int_eq(store_open(&cfg, &st2), -ENOTSUP);
	cfg.backend = "local";
	cfg.local_path = "";
	ck_assert_int_eq(store_open(&cfg, &st2), -EINVAL);
}
END_TEST

/* The redo log and omap share the LMDB map: when it is full, ops fail whole. */
START_TEST(t_local_map_full)
{
	struct store_config cfg;
	char *buf = malloc(256 << 10);
	int r = 0, i;

	store_pool_close(pool);
	store_close(st);
	fill_config(&cfg);
	cfg.create = false;
	cfg.local_map_size = 4u << 20;
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	open_pool(nspace);
	for (i = 0; i < 64; i++) {
		char key[16];
		struct store_op *op = store_op_new();
		memset(buf, 'a' + i % 26, 256 << 10);
		snprintf(key, sizeof(key), "k%d", i);
		store_op_write(op, (uint64_t)i << 18, buf, 256 << 10);
		store_op_omap_set(op, key, "v", 1);
		r = exec(op, "full");
		if (r)
			break;
	}
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_gt(i, 0);
	/* what was acknowledged is intact; the failed op left nothing */
	char key[16];
	snprintf(key, sizeof(key), "k%d", i);
	expect_omap("full", key, NULL);
	expect_omap("full", "k0", "v");
	ck_assert_uint_eq(obj_size("full"), (uint64_t)i << 18);
	memset(buf, 'a' + (i - 1) % 26, 256 << 10);
	expect_read("full", (uint64_t)(i - 1) << 18, 256 << 10, buf, 256 << 10);
	/* once the checkpoint has synced the files and dropped the redo log, there is room again */
	for (int tries = 0; tries < 50; tries++) {
		struct store_op *op = store_op_new();
		usleep(100 * 1000);
		store_op_omap_set(op, "again", "1", 1);
		store_op_write(op, 0, "x", 1);
		if ((r = exec(op, "full2")) == 0)
			break;
		ck_assert_int_eq(r, -ENOSPC);
	}
	ck_assert_int_eq(r, 0);
	/* and after a reopen with room again, it all still is */
	store_pool_close(pool);
	store_close(st);
	cfg.local_map_size = 64u << 20;
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	open_pool(nspace);
	ck_assert_uint_eq(obj_size("full"), (uint64_t)i << 18);
	expect_read("full", (uint64_t)(i - 1) << 18, 256 << 10, buf, 256 << 10);
	put_full("after", "ok", 2);
	free(buf);
}
END_TEST

START_TEST(t_config_from_cfg)
{
	struct store_config sc;
	char err[256];

	cfg_init("mds");
	store_config_from_cfg(&sc);
	ck_assert_str_eq(sc.backend, "local");
	ck_assert_str_eq(sc.rados_id, "admin");
	ck_assert(sc.rados_mon_op_timeout == 10 && sc.rados_osd_op_timeout == 10);
	ck_assert_uint_eq(sc.local_map_size, 64ull << 30);
	ck_assert(!sc.create);
	ck_assert_int_eq(cfg_set(cfg_lookup("store_local_path"), "/srv/store", false, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(cfg_lookup("rados_osd_op_timeout"), "2.5", false, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(cfg_lookup("store_backend"), "rados", false, err, sizeof(err)), 0);
	store_config_from_cfg(&sc);
	ck_assert_str_eq(sc.local_path, "/srv/store");
	ck_assert_str_eq(sc.backend, "rados");
	ck_assert(sc.rados_osd_op_timeout == 2.5);
}
END_TEST

/* Many more objects in flight than the store may keep files open: no EMFILE. */
START_TEST(t_local_many_files)
{
	enum { NOBJ = 600 };
	struct rlimit rl = { 96, 96 };
	struct waiter w;
	char buf[1024];

	store_pool_close(pool);
	store_close(st);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);   /* the store then keeps <= 24 files open */
	open_store_inline(STORE_LOCAL_INLINE_OFF);          /* objects of 2 KiB: files, not inline */
	open_pool(nspace);
	waiter_init(&w);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < NOBJ; i++) {
			char oid[16];
			struct store_op *op = store_op_new();
			snprintf(oid, sizeof(oid), "f%d", i);
			memset(buf, 'a' + (i + round) % 26, sizeof(buf));
			store_op_write(op, (uint64_t)round * sizeof(buf), buf, sizeof(buf));
			waiter_add(&w);
			ck_assert_int_eq(store_op_submit(pool, oid, op, op_cb, &w), 0);
		}
	}
	waiter_wait(&w);
	ck_assert_int_eq(w.errors, 0);
	for (int i = 0; i < NOBJ; i += 37) {
		char oid[16], want[2 * sizeof(buf)];
		snprintf(oid, sizeof(oid), "f%d", i);
		memset(want, 'a' + i % 26, sizeof(buf));
		memset(want + sizeof(buf), 'a' + (i + 1) % 26, sizeof(buf));
		expect_read(oid, 0, sizeof(want), want, sizeof(want));
	}
	put_full("still-writable", "y", 1);
}
END_TEST

/* object files under the store's objects/: an acknowledged write's file
 * is made after its callback, so read each object counted on first */
static int object_files(void)
{
	char path[PATH_MAX + 32];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/objects", storedir);
	d = opendir(path);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * Small objects keep their bytes in LMDB (store_local_inline_max): no file
 * is made for them, whatever they go through; one that grows past the limit
 * spills to a file with every byte it had; a process with a lower limit
 * (here: none) reads them, keeps them inline while they do not grow, and
 * spills them when they do; pool stats count them.
 */
START_TEST(t_local_inline)
{
	enum { SMALL = 3000, BIG = 100 << 10 };
	unsigned char *a = malloc(BIG), *want = calloc(1, 2 * BIG);
	struct store_pool_stat ps = { 0 };
	struct store_op *op;
	int files0;

	if (test_store_inline_max()) {
		free(a);
		free(want);
		return;    /* this run sets its own limit: the generic cases cover it */
	}
	files0 = object_files();
	fill_pattern(a, BIG, 3);
	/* small: created inline, rewritten, zeroed, truncated, omap'd, none of it growing it */
	put_full("s", a, SMALL);
	op = store_op_new();
	store_op_write(op, 1000, a + 50000, 500);
	store_op_zero(op, 10, 20);
	store_op_omap_set(op, "k", "v", 1);
	ck_assert_int_eq(exec(op, "s"), 0);
	memcpy(want, a, SMALL);
	memcpy(want + 1000, a + 50000, 500);
	memset(want + 10, 0, 20);
	expect_read("s", 0, SMALL + 200, want, SMALL);
	op = store_op_new();
	store_op_truncate(op, 200);
	ck_assert_int_eq(exec(op, "s"), 0);
	expect_read("s", 0, 6000, want, 200);
	expect_omap("s", "k", "v");
	/* removed and made again in one op: the old bytes do not come back */
	op = store_op_new();
	store_op_remove(op);
	store_op_write(op, 100, "new", 3);
	ck_assert_int_eq(exec(op, "s"), 0);
	memset(want, 0, 2 * BIG);
	memcpy(want + 100, "new", 3);
	expect_read("s", 0, 200, want, 103);
	expect_omap("s", "k", NULL);
	ck_assert_int_eq(object_files(), files0);
	/* an inline object that grows is a stream: to its file, with every byte it had */
	put_full("a", a, 100);
	op = store_op_new();
	store_op_append(op, "+", 1);
	ck_assert_int_eq(exec(op, "a"), 0);
	memcpy(want, a, 100);
	want[100] = '+';
	expect_read("a", 0, 200, want, 101);
	ck_assert_int_eq(object_files(), files0 + 1);
	files0++;
	/* spilled: grows past the limit in one write; every byte it had is there */
	put_full("g", a, SMALL);
	op = store_op_new();
	store_op_write(op, BIG, a, 1000);
	ck_assert_int_eq(exec(op, "g"), 0);
	memset(want, 0, 2 * BIG);
	memcpy(want, a, SMALL);
	memcpy(want + BIG, a, 1000);
	expect_read("g", 0, 2 * BIG, want, BIG + 1000);
	ck_assert_int_eq(object_files(), files0 + 1);
	/* big from the start: a file (made by the effects that follow the
	 * acknowledgement: a read of it queues behind them, then count) */
	put_full("b", a, BIG);
	expect_read("b", 0, 16, a, 16);
	ck_assert_int_eq(object_files(), files0 + 2);
	ck_assert_int_eq(store_pool_stat(pool, &ps), 0);
	ck_assert_uint_eq(ps.objects, 4);
	ck_assert_uint_eq(ps.bytes_stored, 103 + 101 + BIG + 1000 + BIG);
	ck_assert_uint_ge(ps.bytes_used, 103);
	/* another process' limit (none): reads, keeps "s" inline while it does not grow, spills it when it does */
	put_full("t", a, SMALL);
	store_pool_close(pool);
	store_close(st);
	open_store_inline(STORE_LOCAL_INLINE_OFF);
	open_pool(nspace);
	memset(want, 0, 2 * BIG);
	memcpy(want, a, SMALL);
	expect_read("t", 0, SMALL, want, SMALL);
	op = store_op_new();
	store_op_write(op, 0, "xy", 2);
	ck_assert_int_eq(exec(op, "t"), 0);
	memcpy(want, "xy", 2);
	expect_read("t", 0, SMALL, want, SMALL);
	ck_assert_int_eq(object_files(), files0 + 2);
	op = store_op_new();
	store_op_append(op, "z", 1);
	ck_assert_int_eq(exec(op, "t"), 0);
	want[SMALL] = 'z';
	expect_read("t", 0, SMALL + 10, want, SMALL + 1);
	ck_assert_int_eq(object_files(), files0 + 3);
	/* and it all survives a reopen */
	store_pool_close(pool);
	store_close(st);
	open_store();
	open_pool(nspace);
	expect_read("t", 0, SMALL + 10, want, SMALL + 1);
	memset(want, 0, 2 * BIG);
	memcpy(want + 100, "new", 3);
	expect_read("s", 0, 200, want, 103);
	free(a);
	free(want);
}
END_TEST

/* Set the store's format number (the store closed), as an older build left it. */
static void set_format(uint32_t fmt)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	unsigned char b[4] = { (unsigned char)fmt, (unsigned char)(fmt >> 8), (unsigned char)(fmt >> 16),
			       (unsigned char)(fmt >> 24) };
	MDB_val k = { 6, "format" }, v = { 4, b };

	ck_assert_int_eq(mdb_env_create(&env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(env, 8), 0);
	ck_assert_int_eq(mdb_env_set_mapsize(env, 1ull << 30), 0);
	ck_assert_int_eq(mdb_env_open(env, storedir, MDB_NOTLS, 0644), 0);
	ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	ck_assert_int_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/*
 * A format-2 store (before inline objects) moves to format 3 only while no
 * other process has it open: a running format-2 build would read inline
 * objects as zeros and lose them at its first write.  With another holder
 * of the store's shared lock (what every open holds) the open is refused
 * with EBUSY after a wait, and the store is left as it was; alone, it is
 * upgraded and keeps its objects.
 */
START_TEST(t_local_upgrade_v2)
{
	char lock[PATH_MAX + 32];
	struct store_config cfg;
	struct store *st2 = NULL;
	int fd;

	put_full("old", "format two", 10);
	store_pool_close(pool);
	store_close(st);
	pool = NULL;
	st = NULL;
	set_format(2);
	snprintf(lock, sizeof(lock), "%s/store.lock", storedir);
	fd = open(lock, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_SH), 0);      /* "an older build has it open" */
	fill_config(&cfg);
	ck_assert_int_eq(store_open(&cfg, &st2), -EBUSY);
	close(fd);                                     /* it went away */
	open_store();
	open_pool(nspace);
	expect_read("old", 0, 64, "format two", 10);
	put_full("new", "three", 5);
	expect_read("new", 0, 64, "three", 5);
	/* and it is format 3 now: no wait, nothing refused */
	store_pool_close(pool);
	store_close(st);
	fd = open(lock, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_SH), 0);
	open_store();
	close(fd);
	open_pool(nspace);
	expect_read("new", 0, 64, "three", 5);
}
END_TEST

/*
 * Objects written and removed in tight loops while checkpoints run after
 * every batch: a remove must not close a file whose checkpoint fdatasync is
 * still in flight (that fsync then failed with EBADF - or synced whatever
 * file reused the fd number - and the store turned every later op into EIO).
 */
START_TEST(t_local_remove_during_checkpoint)
{
	enum { NOBJ = 64, BLK = 4096, MAX_OUTSTANDING = 256 };
	struct waiter w;
	char buf[BLK];
	uint64_t t_end;
	struct timespec ts;
	int rounds = 0;

	store_pool_close(pool);
	store_close(st);
	ck_assert_int_eq(setenv("LOLIGO_STORE_LOCAL_CKPT_INTERVAL_US", "0", 1), 0);
	open_store_inline(STORE_LOCAL_INLINE_OFF);   /* files, for their checkpoint fsyncs */
	open_pool(nspace);
	waiter_init(&w);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t_end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 1500000000ull;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= t_end && rounds >= 20)
			break;
		for (int i = 0; i < NOBJ; i++) {
			char oid[32];
			struct store_op *op;

			snprintf(oid, sizeof(oid), "rm%d.%d", rounds % 4, i);
			memset(buf, 'a' + (rounds + i) % 26, sizeof(buf));
			op = store_op_new();
			store_op_write_full(op, buf, sizeof(buf));
			waiter_add(&w);
			ck_assert_int_eq(store_op_submit(pool, oid, op, op_cb, &w), 0);
			op = store_op_new();
			if (i % 3 == 0) {
				store_op_truncate(op, 100);   /* truncate, then remove in a later op */
				waiter_add(&w);
				ck_assert_int_eq(store_op_submit(pool, oid, op, op_cb, &w), 0);
				op = store_op_new();
			}
			store_op_remove(op);
			waiter_add(&w);
			ck_assert_int_eq(store_op_submit(pool, oid, op, op_cb, &w), 0);
		}
		/* keep a window of ops in flight, so writes, removes and fsyncs overlap */
		for (;;) {
			int n;
			pthread_mutex_lock(&w.lock);
			n = w.outstanding;
			pthread_mutex_unlock(&w.lock);
			if (n <= MAX_OUTSTANDING)
				break;
			usleep(200);
		}
		rounds++;
		if (w.errors)
			break;
	}
	waiter_wait(&w);
	ck_assert_msg(w.errors == 0, "%d ops failed after %d rounds, the first with %d", w.errors, rounds, w.first_err);
	/* the store still works, and removed objects are gone */
	put_full("still-writable", "y", 1);
	expect_read("still-writable", 0, 1, "y", 1);
	expect_read("rm0.0", 0, 1, NULL, -ENOENT);
	/* and all of it survives a reopen (replay of whatever the last checkpoint left) */
	store_pool_close(pool);
	store_close(st);
	open_store();
	open_pool(nspace);
	expect_read("still-writable", 0, 1, "y", 1);
	expect_read("rm1.5", 0, 1, NULL, -ENOENT);
	unsetenv("LOLIGO_STORE_LOCAL_CKPT_INTERVAL_US");
}
END_TEST

/*
 * A full store: with the full ratio below what the filesystem already uses,
 * every op that needs space fails with ENOSPC (nothing of it applied), ops
 * that free space pass, a full_try store writes up to its failsafe ratio,
 * and store_space() says so.
 */
START_TEST(t_local_full)
{
	struct store_config cfg;
	struct store_space sp;
	struct store_op *op;
	struct statvfs v;
	double used;

	put_full("keep", "kept", 4);
	put_full("gone", "x", 1);
	store_pool_close(pool);
	store_close(st);
	ck_assert_int_eq(statvfs(storedir, &v), 0);
	used = 1.0 - (double)v.f_bavail / (double)v.f_blocks;
	ck_assert_msg(used > 0.02, "the test filesystem is too empty (%.3f used)", used);
	fill_config(&cfg);
	cfg.local_nearfull_ratio = used / 2;
	cfg.local_full_ratio = used / 2;
	cfg.local_failsafe_ratio = 0.9999;
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	open_pool(nspace);
	ck_assert_int_eq(store_space(st, &sp), 0);
	ck_assert_int_eq(sp.state, STORE_SPACE_FULL);
	ck_assert_uint_gt(sp.total, sp.avail);
	ck_assert_str_eq(store_space_state_name(sp.state), "full");
	/* needs space: refused whole */
	op = store_op_new();
	store_op_write(op, 0, "yy", 2);
	store_op_omap_set(op, "k", "v", 1);
	ck_assert_int_eq(exec(op, "keep"), -ENOSPC);
	expect_read("keep", 0, 4, "kept", 4);
	expect_omap("keep", "k", NULL);
	op = store_op_new();
	store_op_create(op, true);
	ck_assert_int_eq(exec(op, "new"), -ENOSPC);
	/* frees space: passes */
	op = store_op_new();
	store_op_truncate(op, 2);
	ck_assert_int_eq(exec(op, "keep"), 0);
	op = store_op_new();
	store_op_remove(op);
	ck_assert_int_eq(exec(op, "gone"), 0);
	expect_read("gone", 0, 1, NULL, -ENOENT);
	ck_assert_int_eq(store_space(st, &sp), 0);
	ck_assert_uint_ge(sp.enospc, 2);
	store_pool_close(pool);
	store_close(st);
	/* the MDS's metadata: up to the failsafe ratio */
	cfg.local_full_try = true;
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	open_pool(nspace);
	put_full("meta", "journal entry", 13);
	expect_read("meta", 0, 13, "journal entry", 13);
}
END_TEST

/* ---- file data: the object index (store/file_data.c) --------------- */

static bool exists(const char *oid)
{
	struct store_stat ss;
	return store_stat(pool, oid, &ss) == 0;
}

/* write one byte into object @objno of file @ino, indexed or not */
static void file_obj(uint64_t ino, uint64_t objno, bool index)
{
	char oid[64];
	struct store_op *op;

	if (index) {
		store_file_index_oid(oid, sizeof(oid), ino);
		op = store_op_new();
		store_file_index_note(op, objno);
		ck_assert_int_eq(exec(op, oid), 0);
	}
	store_file_oid(oid, sizeof(oid), ino, objno);
	op = store_op_new();
	store_op_write(op, 100, "x", 1);
	ck_assert_int_eq(exec(op, oid), 0);
}

static bool file_obj_exists(uint64_t ino, uint64_t objno)
{
	char oid[64];
	store_file_oid(oid, sizeof(oid), ino, objno);
	return exists(oid);
}

/* A 1 TiB file with four objects, two of them at the very end: trimming
 * it costs what exists, in bounded steps, and stops anywhere. */
START_TEST(t_file_trim_indexed)
{
	const uint32_t os = 4u << 20;
	const uint64_t tib = 1ull << 40, last = tib / os - 1;
	struct store_file_layout ly;
	struct store_file_trim t;
	char ioid[64];
	int r, steps = 0;

	store_file_layout_init(&ly, os, 0, 0);

	ck_assert_int_eq(store_file_pool_indexed(pool), 0);
	ck_assert_int_eq(store_file_pool_mark_indexed(pool), 0);
	ck_assert_int_eq(store_file_pool_indexed(pool), 1);
	file_obj(0x77, 0, true);
	file_obj(0x77, 5, true);
	file_obj(0x77, last - 1, true);
	file_obj(0x77, last, true);
	/* truncate to 5 objects + 10 bytes: object 5 is cut, the two at the end go */
	store_file_trim_init(&t, 0x77, &ly, 5ull * os + 10, tib, true);
	do
		r = store_file_trim_step(pool, &t, 1, 4);
	while (r == 1 && ++steps < 100);
	ck_assert_int_eq(r, 0);
	ck_assert(t.done);
	ck_assert_uint_eq(t.removed, 2);
	ck_assert_uint_le(t.ops, 8);     /* not 262,144 */
	ck_assert(file_obj_exists(0x77, 0));
	ck_assert(file_obj_exists(0x77, 5));
	ck_assert(!file_obj_exists(0x77, last));
	ck_assert(!file_obj_exists(0x77, last - 1));
	{
		struct store_stat ss;
		char oid[64];
		store_file_oid(oid, sizeof(oid), 0x77, 5);
		ck_assert_int_eq(store_stat(pool, oid, &ss), 0);
		ck_assert_uint_eq(ss.size, 10);
	}
	/* purge, stopped after one step and resumed by a new cursor (a restart) */
	file_obj(0x77, 9, true);
	store_file_trim_init(&t, 0x77, &ly, 0, tib, true);
	ck_assert_int_eq(store_file_trim_step(pool, &t, 1, 1), 1);
	ck_assert_uint_eq(t.removed, 1);
	store_file_trim_init(&t, 0x77, &ly, 0, tib, true);
	while ((r = store_file_trim_step(pool, &t, 1, 1)) == 1)
		;
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(t.removed, 2);
	ck_assert(!file_obj_exists(0x77, 0));
	ck_assert(!file_obj_exists(0x77, 5));
	ck_assert(!file_obj_exists(0x77, 9));
	store_file_index_oid(ioid, sizeof(ioid), 0x77);
	ck_assert(!exists(ioid));
	/* a file that never had data: nothing to list, nothing named */
	store_file_trim_init(&t, 0x78, &ly, 0, tib, true);
	ck_assert_int_eq(store_file_trim_step(pool, &t, 256, 32), 0);
	ck_assert_uint_le(t.ops, 1);
}
END_TEST

/* A pool from before the index: the size bounds the work, and it is done */
START_TEST(t_file_trim_fallback)
{
	const uint32_t os = 64u << 10;
	struct store_file_layout ly;
	struct store_file_trim t;
	int r;

	store_file_layout_init(&ly, os, 0, 0);
	file_obj(0x99, 0, false);
	file_obj(0x99, 3, false);
	file_obj(0x99, 7, true);   /* written by a newer client: indexed */
	/* size 8 objects: 0..8 named (one past, for unreported data), no more */
	store_file_trim_init(&t, 0x99, &ly, 0, 8ull * os, false);
	while ((r = store_file_trim_step(pool, &t, 4, 2)) == 1)
		;
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(t.removed, 3);
	ck_assert_uint_le(t.ops, 12);
	ck_assert(!file_obj_exists(0x99, 0));
	ck_assert(!file_obj_exists(0x99, 3));
	ck_assert(!file_obj_exists(0x99, 7));
	{
		char ioid[64];
		store_file_index_oid(ioid, sizeof(ioid), 0x99);
		ck_assert(!exists(ioid));
	}
}
END_TEST

/*
 * store_file_map against Ceph's Striper::file_to_extents, written out the
 * long way; its inverse; and truncation's per-object keep adding up to
 * the size, for the plain layout and striped ones.
 */
START_TEST(t_file_map)
{
	static const uint32_t L[][3] = {
		{ 4u << 20, 4u << 20, 1 }, { 65536, 4096, 4 }, { 65536, 65536, 4 }, { 1u << 20, 65536, 3 },
		{ 8192, 4096, 1 },
	};

	for (size_t i = 0; i < sizeof(L) / sizeof(L[0]); i++) {
		struct store_file_layout ly;
		uint64_t os = L[i][0], su = L[i][1], sc = L[i][2];
		uint64_t span = os * sc * 3 + 12345;

		store_file_layout_init(&ly, L[i][0], L[i][1], L[i][2]);
		ck_assert_uint_eq(ly.stripe_unit, su);
		for (uint64_t off = 0; off < span; off += 997) {
			uint64_t objno, ooff, n = store_file_map(&ly, off, &objno, &ooff);
			/* file_to_extents */
			uint64_t blockno = off / su, stripeno = blockno / sc, stripepos = blockno % sc;
			uint64_t objsetno = stripeno / (os / su);

			ck_assert_uint_eq(objno, objsetno * sc + stripepos);
			ck_assert_uint_eq(ooff, (stripeno % (os / su)) * su + off % su);
			ck_assert_uint_eq(n, su - off % su);
			ck_assert_uint_eq(store_file_unmap(&ly, objno, ooff), off);
		}
		for (uint64_t size = 0; size < span; size += 4099) {
			uint64_t sum = 0, end = store_file_obj_end(&ly, size);

			for (uint64_t o = 0; o < end + sc; o++) {
				uint64_t k = store_file_obj_keep(&ly, o, size);

				if (o >= end)
					ck_assert_uint_eq(k, 0);
				if (o < store_file_obj_first(&ly, size))
					ck_assert_uint_eq(k, os);
				sum += k;
			}
			ck_assert_uint_eq(sum, size);
		}
	}
	/* a layout that does not hold together is the plain one, never two places for a byte */
	{
		struct store_file_layout ly;

		store_file_layout_init(&ly, 65536, 5000, 4);
		ck_assert(store_file_layout_plain(&ly));
		store_file_layout_init(&ly, 0, 0, 0);
		ck_assert_uint_eq(ly.object_size, 4u << 20);
	}
}
END_TEST

/*
 * A striped file (64 KiB objects, 4 KiB units, 4 objects a stripe): a
 * truncate inside the second object set cuts each of its four objects
 * where its own bytes end, removes what lies past, keeps the first set
 * whole; a purge then takes every object and the index.
 */
START_TEST(t_file_trim_striped)
{
	const uint32_t os = 64u << 10, su = 4096;
	struct store_file_layout ly;
	struct store_file_trim t;
	/* objset 1 starts at file offset 256 KiB; 5 units and 100 bytes into it */
	const uint64_t size = 4ull * os + 5 * su + 100;
	const uint64_t want[8] = { os, os, os, os, 2 * su, su + 100, su, su };
	char *full = calloc(1, os);
	int r;

	store_file_layout_init(&ly, os, su, 4);
	ck_assert(!store_file_layout_plain(&ly));
	for (uint64_t o = 0; o < 12; o++) {
		char oid[64];
		struct store_op *op;

		file_obj(0x55, o, true);
		store_file_oid(oid, sizeof(oid), 0x55, o);
		op = store_op_new();
		store_op_write(op, 0, full, os);
		ck_assert_int_eq(exec(op, oid), 0);
	}
	store_file_trim_init(&t, 0x55, &ly, size, 3ull * 4 * os, true);
	while ((r = store_file_trim_step(pool, &t, 3, 2)) == 1)
		;
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(t.removed, 4);    /* objects 8..11: the third set */
	for (uint64_t o = 0; o < 8; o++) {
		struct store_stat ss;
		char oid[64];

		store_file_oid(oid, sizeof(oid), 0x55, o);
		ck_assert_int_eq(store_stat(pool, oid, &ss), 0);
		ck_assert_uint_eq(ss.size, want[o]);
		ck_assert_uint_eq(store_file_obj_keep(&ly, o, size), want[o]);
	}
	for (uint64_t o = 8; o < 12; o++)
		ck_assert(!file_obj_exists(0x55, o));
	store_file_trim_init(&t, 0x55, &ly, 0, size, true);
	while ((r = store_file_trim_step(pool, &t, 3, 2)) == 1)
		;
	ck_assert_int_eq(r, 0);
	for (uint64_t o = 0; o < 12; o++)
		ck_assert(!file_obj_exists(0x55, o));
	free(full);
}
END_TEST

static Suite *store_suite(void)
{
	static char name[64];   /* check keeps the pointer */
	Suite *s;

	snprintf(name, sizeof(name), "store_conformance_%s", backend_name());
	s = suite_create(name);
	TCase *tc = tcase_create("conformance");

	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t_pools);
	tcase_add_test(tc, t_namespaces);
	tcase_add_test(tc, t_list_objects);
	tcase_add_test(tc, t_create_exclusive);
	tcase_add_test(tc, t_write_read);
	tcase_add_test(tc, t_holes);
	tcase_add_test(tc, t_aio_read_many);
	tcase_add_test(tc, t_aio_read_lend);
	tcase_add_test(tc, t_truncate_append_zero);
	tcase_add_test(tc, t_remove);
	tcase_add_test(tc, t_stat);
	tcase_add_test(tc, t_bad_args);
	tcase_add_test(tc, t_edge_semantics);
	tcase_add_test(tc, t_omap_basic);
	tcase_add_test(tc, t_omap_list);
	tcase_add_test(tc, t_omap_rm_range);
	tcase_add_test(tc, t_omap_long_keys);
	tcase_add_test(tc, t_atomic);
	tcase_add_test(tc, t_omap_cmp);
	tcase_add_test(tc, t_omap_cmp_bad_args);
	tcase_add_test(tc, t_omap_cmp_batch);
	tcase_add_test(tc, t_omap_cmp_race);
	tcase_add_test(tc, t_async_many);
	tcase_add_test(tc, t_ordering);
	tcase_add_test(tc, t_threads);
	tcase_add_test(tc, t_large);
	tcase_add_test(tc, t_write_nocopy);
	tcase_add_test(tc, t_file_trim_indexed);
	tcase_add_test(tc, t_file_trim_fallback);
	tcase_add_test(tc, t_file_trim_striped);
	tcase_add_test(tc, t_file_map);
	if (is_local()) {
		tcase_add_test(tc, t_local_persist);
		tcase_add_test(tc, t_local_open_errors);
		tcase_add_test(tc, t_local_map_full);
		tcase_add_test(tc, t_local_full);
		tcase_add_test(tc, t_local_many_files);
		tcase_add_test(tc, t_local_inline);
		tcase_add_test(tc, t_local_upgrade_v2);
		tcase_add_test(tc, t_local_remove_during_checkpoint);
		tcase_add_test(tc, t_config_from_cfg);
	}
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(store_suite());
	int failed;

	log_init("test_store_conformance");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
