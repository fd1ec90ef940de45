/*
 * test_clientlib_data.c - the client library without an MDS: the data path
 * (striping, holes, buffered writes bounded in memory, readahead, truncate)
 * against the embedded local store, and the inode and dentry caches.
 *
 * A client made with lclient_create_local() has no session; inodes are put
 * in its cache as an MDS reply would (lc_inode_update) and files opened
 * with lc_fh_new().  Size reports to the MDS are skipped without a session.
 */
#include <check.h>
#include <json-c/json.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client_int.h"
#include "client/rd_pack.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

static char tmpdir[256];
static struct store *st;
static struct store_pool *pool;
static struct lclient *c;

static void rm_rf(const char *p)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", p);
}

/* runner process: one directory for the whole case, removed even when tests fail */
static char topdir[128];

static void top_setup(void)
{
	snprintf(topdir, sizeof(topdir), "/tmp/lc-data-XXXXXX");
	if (!mkdtemp(topdir))
		topdir[0] = 0;
}

static void top_teardown(void)
{
	if (topdir[0])
		rm_rf(topdir);
}

static void client_setup(void)
{
	char err[256];

	ck_assert_int_eq(cfg_set(cfg_lookup("client_flush_interval"), "60", false, err, sizeof(err)), 0);
	ck_assert_int_eq(lclient_create_local(pool, &c), 0);
}

static void setup(void)
{
	struct store_config sc = { 0 };

	cfg_init("client");
	ck_assert_msg(topdir[0], "no temp dir");
	snprintf(tmpdir, sizeof(tmpdir), "%s/t-XXXXXX", topdir);
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	sc.backend = "local";
	sc.local_path = tmpdir;
	sc.create = true;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_create(st, "t_data"), 0);
	ck_assert_int_eq(store_pool_open(st, "t_data", NULL, &pool), 0);
	client_setup();
}

/*
 * The "rados" case: a real Ceph cluster (tests/integration/store_rados.sh
 * gives its conf and pool), a namespace of its own per test, so the data
 * path's reads take the store's own buffers (store_aio_read_lend).
 */
static void setup_rados(void)
{
	struct store_config sc = { 0 };
	char ns[64];

	cfg_init("client");
	sc.backend = "rados";
	sc.rados_conf = getenv("LOLIGO_STORE_RADOS_CONF");
	sc.rados_id = "admin";
	sc.rados_mon_op_timeout = 20;
	sc.rados_osd_op_timeout = 20;
	ck_assert_msg(sc.rados_conf, "LOLIGO_STORE_RADOS_CONF not set");
	const char *pname = getenv("LOLIGO_STORE_RADOS_POOL");
	ck_assert_msg(pname, "LOLIGO_STORE_RADOS_POOL not set");
	tmpdir[0] = 0;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	snprintf(ns, sizeof(ns), "lc-data-%d-%llu", (int)getpid(), (unsigned long long)now_mono_ns());
	ck_assert_int_eq(store_pool_open(st, pname, ns, &pool), 0);
	client_setup();
}

static void teardown(void)
{
	lclient_destroy(c);
	c = NULL;
	store_pool_close(pool);
	store_close(st);
	if (tmpdir[0])
		rm_rf(tmpdir);
}

static void set_opt(const char *k, const char *v)
{
	char err[256];
	ck_assert_msg(cfg_set(cfg_lookup(k), v, false, err, sizeof(err)) == 0, "%s=%s: %s", k, v, err);
}

static struct lc_inode *mkfile(uint64_t ino, uint32_t osize)
{
	struct mdsp_inode mi = { .ino = ino, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1,
				 .object_size = osize };
	struct lc_inode *in = lc_inode_update(c, &mi, 0, 0);
	ck_assert_ptr_nonnull(in);
	return in;
}

static unsigned char pat(uint64_t ino, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull ^ ino;
	return (unsigned char)(x >> 56);
}

static void fill_pat(uint64_t ino, uint64_t off, size_t len, unsigned char *buf)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(ino, off + i);
}

static void write_file(struct lc_fh *fh, uint64_t ino, uint64_t size, size_t chunk)
{
	unsigned char *b = malloc(chunk);
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		fill_pat(ino, off, n, b);
		ck_assert_int_eq(lc_write(c, fh, (off_t)off, n, b), (ssize_t)n);
	}
	free(b);
}

static void check_file(struct lc_fh *fh, uint64_t ino, uint64_t size, size_t chunk)
{
	unsigned char *b = malloc(chunk), *want = malloc(chunk);
	uint64_t off = 0;
	for (;;) {
		ssize_t n = lc_read(c, fh, (off_t)off, chunk, b);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		fill_pat(ino, off, (size_t)n, want);
		ck_assert_msg(memcmp(b, want, (size_t)n) == 0, "ino %llx: data differs in [%llu, +%zd)",
			      (unsigned long long)ino, (unsigned long long)off, n);
		off += (uint64_t)n;
	}
	ck_assert_uint_eq(off, size);
	free(b);
	free(want);
}

static bool obj_exists(uint64_t ino, uint64_t objno)
{
	char oid[64];
	struct store_stat ss;
	lc_obj_name(oid, sizeof(oid), ino, objno);
	return store_stat(pool, oid, &ss) == 0;
}

START_TEST(test_obj_name)
{
	char oid[64];
	lc_obj_name(oid, sizeof(oid), 0x10000000abcull, 5);
	ck_assert_str_eq(oid, "10000000abc.00000005");
}
END_TEST

/* files of 0, 1, 4 MiB-1, 4 MiB+1 and 20 MiB: before and after writeback */
START_TEST(test_sizes)
{
	static const uint64_t sizes[] = { 0, 1, (4u << 20) - 1, (4u << 20) + 1, 20u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t ino = 0x100 + i;
		struct lc_inode *in = mkfile(ino, 0);
		struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
		write_file(fh, ino, sizes[i], 128 << 10);
		ck_assert_uint_eq(lc_inode_size(in), sizes[i]);
		check_file(fh, ino, sizes[i], 100000);       /* from the buffers */
		ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
		check_file(fh, ino, sizes[i], 1 << 20);      /* from the store */
		ck_assert_int_eq(lc_release(c, fh), 0);
		/* layout: objects of 4 MiB, named <ino hex>.<objno %08x> */
		uint64_t nobj = (sizes[i] + (4u << 20) - 1) / (4u << 20);
		for (uint64_t o = 0; o < nobj; o++)
			ck_assert_msg(obj_exists(ino, o), "object %llu of %llx missing", (unsigned long long)o,
				      (unsigned long long)ino);
		ck_assert(!obj_exists(ino, nobj));
		/* a fresh handle reads it back from the store (no buffers left) */
		fh = lc_fh_new(c, in, O_RDONLY, NULL);
		check_file(fh, ino, sizes[i], 65536);
		lc_release(c, fh);
		lc_put(c, in);
	}
	ck_assert_uint_eq(atomic_load(&c->oc_dirty), 0);
}
END_TEST

START_TEST(test_sparse_and_holes)
{
	struct lc_inode *in = mkfile(0x200, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	char b[4096];

	ck_assert_int_eq(lc_write(c, fh, 10 << 20, 3, "xyz"), 3);
	ck_assert_uint_eq(lc_inode_size(in), (10u << 20) + 3);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	/* only the last object exists */
	ck_assert(obj_exists(0x200, 10));
	ck_assert(!obj_exists(0x200, 0));
	ck_assert(!obj_exists(0x200, 9));
	char *big = malloc(10 << 20);
	memset(big, 1, 10 << 20);
	ck_assert_int_eq(lc_read(c, fh, 0, 10 << 20, big), 10 << 20);
	for (size_t i = 0; i < (10u << 20); i++)
		if (big[i]) {
			ck_abort_msg("hole at %zu reads %d", i, big[i]);
			break;
		}
	free(big);
	ck_assert_int_eq(lc_read(c, fh, (10 << 20) - 2, sizeof(b), b), 5);
	ck_assert(b[0] == 0 && b[1] == 0 && memcmp(b + 2, "xyz", 3) == 0);
	/* past EOF */
	ck_assert_int_eq(lc_read(c, fh, (10 << 20) + 3, sizeof(b), b), 0);
	lc_release(c, fh);
	lc_put(c, in);
}
END_TEST

START_TEST(test_truncate)
{
	struct lc_inode *in = mkfile(0x300, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	char b[16];

	write_file(fh, 0x300, 5u << 20, 1 << 20);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	ck_assert(obj_exists(0x300, 4));
	/* down into the middle of object 1 */
	ck_assert_int_eq(lc_truncate_data(c, in, 5u << 20, (1u << 20) + 10), 0);
	ck_assert_uint_eq(lc_inode_size(in), (1u << 20) + 10);
	ck_assert(obj_exists(0x300, 1));
	ck_assert(!obj_exists(0x300, 2));
	ck_assert(!obj_exists(0x300, 4));
	struct store_stat ss;
	char oid[64];
	lc_obj_name(oid, sizeof(oid), 0x300, 1);
	ck_assert_int_eq(store_stat(pool, oid, &ss), 0);
	ck_assert_uint_eq(ss.size, 10);
	/* up again: the cut part reads as zeros */
	ck_assert_int_eq(lc_truncate_data(c, in, (1u << 20) + 10, 3u << 20), 0);
	ck_assert_int_eq(lc_read(c, fh, (1 << 20) + 8, 4, b), 4);
	ck_assert_int_eq((unsigned char)b[0], pat(0x300, (1 << 20) + 8));
	ck_assert_int_eq((unsigned char)b[1], pat(0x300, (1 << 20) + 9));
	ck_assert(b[2] == 0 && b[3] == 0);
	/* buffered data past a truncate is dropped */
	ck_assert_int_eq(lc_write(c, fh, 100, 5, "hello"), 5);
	ck_assert_int_eq(lc_truncate_data(c, in, 3u << 20, 102), 0);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	ck_assert_uint_eq(lc_inode_size(in), 102);
	ck_assert_int_eq(lc_read(c, fh, 99, 8, b), 3);
	ck_assert_int_eq((unsigned char)b[0], pat(0x300, 99));
	ck_assert(b[1] == 'h' && b[2] == 'e');
	lc_release(c, fh);
	lc_put(c, in);
}
END_TEST

/* overlapping, unaligned writes against a reference copy */
START_TEST(test_overlapping_writes)
{
	const size_t size = 3u << 20;
	unsigned char *ref = calloc(1, size), *got = malloc(size), *buf = malloc(300000);
	struct lc_inode *in = mkfile(0x400, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	unsigned int seed = 42;
	uint64_t maxend = 0;

	for (int i = 0; i < 400; i++) {
		size_t off = (size_t)rand_r(&seed) % size;
		size_t len = 1 + (size_t)rand_r(&seed) % (i % 10 == 0 ? 300000 : 5000);
		if (off + len > size)
			len = size - off;
		for (size_t j = 0; j < len; j++)
			buf[j] = (unsigned char)rand_r(&seed);
		ck_assert_int_eq(lc_write(c, fh, (off_t)off, len, buf), (ssize_t)len);
		memcpy(ref + off, buf, len);
		if (off + len > maxend)
			maxend = off + len;
		if (i == 200)
			ck_assert_int_eq(lc_wb_flush(c, fh->in), 0); /* half in the store, half buffered */
	}
	ck_assert_uint_eq(lc_inode_size(in), maxend);
	ck_assert_int_eq(lc_read(c, fh, 0, size, got), (ssize_t)maxend);
	ck_assert(memcmp(got, ref, maxend) == 0);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	memset(got, 0, size);
	ck_assert_int_eq(lc_read(c, fh, 0, size, got), (ssize_t)maxend);
	ck_assert(memcmp(got, ref, maxend) == 0);
	lc_release(c, fh);
	lc_put(c, in);
	free(ref);
	free(got);
	free(buf);
}
END_TEST

/* the dirty list's index (writeback.c dtails) names the last extent of every object that has some */
static void check_dtails(struct lc_inode *in, uint32_t osize, int step)
{
	size_t k = 0;

	pthread_mutex_lock(&in->lock);
	if (in->dtails_valid) {
		for (struct lc_extent *e = in->dirty; e; e = e->next) {
			if (e->next && e->next->off / osize == e->off / osize) {
				ck_assert_msg(e->next->off > e->off + e->len, "step %d: extents not sorted/disjoint", step);
				continue;
			}
			ck_assert_msg(k < in->ndtails, "step %d: object %llu has no index entry", step,
				      (unsigned long long)(e->off / osize));
			ck_assert_msg(in->dtails[k].obj == e->off / osize && in->dtails[k].tail == e,
				      "step %d: index entry %zu is object %llu, the list's is %llu (tail %s)", step, k,
				      (unsigned long long)in->dtails[k].obj, (unsigned long long)(e->off / osize),
				      in->dtails[k].tail == e ? "same" : "differs");
			k++;
		}
		ck_assert_msg(k == in->ndtails, "step %d: %zu index entries for %zu objects", step, (size_t)in->ndtails, k);
	}
	pthread_mutex_unlock(&in->lock);
}

/*
 * Many small random writes (some adjacent, overlapping, straddling objects),
 * with writebacks and truncates among them, against a reference copy: what
 * the index of the dirty list lets an insert skip must not change where it
 * lands, and the index stays the list's.
 */
START_TEST(test_dirty_index_random_writes)
{
	const uint32_t osize = 64 << 10;
	const size_t size = 1 << 20;
	unsigned char *ref = calloc(1, size), *got = malloc(size), *buf = malloc(70000);
	struct lc_inode *in = mkfile(0x420, osize);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	unsigned int seed = 7;
	uint64_t fsize = 0;

	for (int i = 0; i < 6000; i++) {
		int kind = (int)((unsigned)rand_r(&seed) % 100);
		size_t off = (size_t)rand_r(&seed) % size;
		size_t len = 1 + (size_t)rand_r(&seed) % (kind < 3 ? 70000 : kind < 60 ? 4096 : 300);

		if (kind >= 97 && kind < 99 && i % 7 == 0) {
			ck_assert_int_eq(lc_wb_flush_data(c, in), 0);
		} else if (kind == 99 && i % 5 == 0) {
			uint64_t ns = (uint64_t)rand_r(&seed) % size;

			ck_assert_int_eq(lc_truncate_data(c, in, fsize, ns), 0);
			if (ns < fsize)
				memset(ref + ns, 0, size - ns);
			fsize = ns;
		} else {
			if (kind >= 60 && kind < 80 && fsize > 0)
				off = (size_t)(fsize - 1 - (uint64_t)rand_r(&seed) % (fsize < 9000 ? fsize : 9000));
			if (off + len > size)
				len = size - off;
			for (size_t j = 0; j < len; j++)
				buf[j] = (unsigned char)rand_r(&seed);
			ck_assert_int_eq(lc_write(c, fh, (off_t)off, len, buf), (ssize_t)len);
			memcpy(ref + off, buf, len);
			if (off + len > fsize)
				fsize = off + len;
		}
		check_dtails(in, osize, i);
		if (i % 1000 == 999) {
			ck_assert_int_eq(lc_read(c, fh, 0, size, got), (ssize_t)fsize);
			if (memcmp(got, ref, fsize) != 0) {
				size_t j = 0;

				while (got[j] == ref[j])
					j++;
				ck_abort_msg("step %d: byte %zu reads %d, not %d", i, j, got[j], ref[j]);
			}
		}
	}
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	memset(got, 0, size);
	ck_assert_int_eq(lc_read(c, fh, 0, size, got), (ssize_t)fsize);
	ck_assert(memcmp(got, ref, fsize) == 0);
	lc_release(c, fh);
	lc_put(c, in);
	free(ref);
	free(got);
	free(buf);
}
END_TEST

START_TEST(test_append)
{
	struct lc_inode *in = mkfile(0x450, 0);
	struct lc_fh *fh = lc_fh_new(c, in, O_WRONLY | O_APPEND, NULL);
	struct lc_fh *rfh = lc_fh_new(c, in, O_RDONLY, NULL);
	char b[16];

	ck_assert_int_eq(lc_write(c, fh, 0, 3, "abc"), 3);
	ck_assert_int_eq(lc_write(c, fh, 0, 3, "def"), 3);
	ck_assert_int_eq(lc_read(c, rfh, 0, sizeof(b), b), 6);
	ck_assert(memcmp(b, "abcdef", 6) == 0);
	ck_assert_int_eq(lc_read(c, fh, 0, sizeof(b), b), -EBADF);
	ck_assert_int_eq(lc_write(c, rfh, 0, 1, "x"), -EBADF);
	lc_release(c, fh);
	lc_release(c, rfh);
	lc_put(c, in);
}
END_TEST

/* writers block at client_oc_size instead of buffering without end */
START_TEST(test_oc_bound)
{
	set_opt("client_oc_size", "2M");
	set_opt("client_oc_target_dirty", "1M");
	struct lc_inode *in = mkfile(0x500, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	unsigned char *b = malloc(256 << 10);
	uint64_t peak = 0;

	for (uint64_t off = 0; off < (24u << 20); off += 256 << 10) {
		fill_pat(0x500, off, 256 << 10, b);
		ck_assert_int_eq(lc_write(c, fh, (off_t)off, 256 << 10, b), 256 << 10);
		uint64_t d = atomic_load(&c->oc_dirty);
		if (d > peak)
			peak = d;
	}
	/* a writer may overshoot by at most one object's buffer before it blocks */
	ck_assert_msg(peak <= (3u << 20), "dirty peaked at %llu", (unsigned long long)peak);
	ck_assert_uint_gt(perf_get(&c->perf.wb_throttle), 0);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	check_file(fh, 0x500, 24u << 20, 1 << 20);
	lc_release(c, fh);
	lc_put(c, in);
	free(b);
}
END_TEST

START_TEST(test_readahead)
{
	set_opt("client_readahead_max", "4M");
	struct lc_inode *in = mkfile(0x600, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);

	write_file(fh, 0x600, 20u << 20, 1 << 20);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	lc_release(c, fh);
	fh = lc_fh_new(c, in, O_RDONLY, NULL);
	uint64_t hits0 = perf_get(&c->perf.ra_hit) + perf_get(&c->perf.ra_wait);
	uint64_t miss0 = perf_get(&c->perf.ra_miss);
	check_file(fh, 0x600, 20u << 20, 128 << 10);
	uint64_t hits = perf_get(&c->perf.ra_hit) + perf_get(&c->perf.ra_wait) - hits0;
	/* 160 reads of 128 KiB: every one served from readahead (the first too:
	 * a read at 0 starts a stream) */
	ck_assert_msg(hits == 160, "only %llu readahead hits", (unsigned long long)hits);
	ck_assert_uint_eq(perf_get(&c->perf.ra_miss) - miss0, 0);
	/* a write invalidates what was read ahead */
	char b[4];
	ck_assert_int_eq(lc_read(c, fh, 0, 4, b), 4);
	struct lc_fh *wfh = lc_fh_new(c, in, O_WRONLY, NULL);
	ck_assert_int_eq(lc_write(c, wfh, 1, 2, "QQ"), 2);
	ck_assert_int_eq(lc_read(c, fh, 0, 4, b), 4);
	ck_assert(b[1] == 'Q' && b[2] == 'Q');
	lc_release(c, wfh);
	lc_release(c, fh);
	lc_put(c, in);
}
END_TEST

/*
 * Past the bound the flusher writes an inode back a quarter of
 * client_oc_size at a time while the writer goes on: rewrites of ranges
 * that are in flight, or still dirty behind one, all land, newest last.
 */
START_TEST(test_oc_bound_partial_writebacks)
{
	set_opt("client_oc_size", "4M");
	set_opt("client_oc_target_dirty", "1M");
	struct lc_inode *in = mkfile(0x520, 256 << 10);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	const size_t w = 96 << 10;   /* writes straddle the 256 KiB objects */
	unsigned char *b = malloc(w);
	uint64_t ops0 = perf_get(&c->perf.wb_ops), thr0 = perf_get(&c->perf.wb_throttle);

	/* pass 1: 0xaa over 16 MiB; pass 2: the pattern, back to front */
	memset(b, 0xaa, w);
	for (uint64_t off = 0; off < (16u << 20); off += w) {
		size_t n = off + w > (16u << 20) ? (16u << 20) - off : w;

		ck_assert_int_eq(lc_write(c, fh, (off_t)off, n, b), (ssize_t)n);
	}
	for (uint64_t off = ((16u << 20) / w) * w;; off -= w) {
		size_t n = off + w > (16u << 20) ? (16u << 20) - off : w;

		fill_pat(0x520, off, n, b);
		ck_assert_int_eq(lc_write(c, fh, (off_t)off, n, b), (ssize_t)n);
		if (off == 0)
			break;
	}
	ck_assert_uint_gt(perf_get(&c->perf.wb_throttle) - thr0, 0);
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	/* nothing left buffered; the flusher's last writeback may still be
	 * giving back its bytes (after its waiters were woken): wait for that */
	for (int i = 0; i < 1000 && atomic_load(&c->oc_dirty); i++)
		usleep(10000);
	ck_assert_uint_eq(atomic_load(&c->oc_dirty), 0);
	ck_assert_uint_ge(perf_get(&c->perf.wb_ops) - ops0, 64);   /* every object written, some twice */
	lc_release(c, fh);
	/* from the store, not from buffers */
	fh = lc_fh_new(c, in, O_RDONLY, NULL);
	check_file(fh, 0x520, 16u << 20, 1 << 20);
	lc_release(c, fh);
	lc_put(c, in);
	free(b);
}
END_TEST

/*
 * A sequential stream goes to the store one write per object, each the
 * whole object (write_full), however the flusher's background writebacks
 * fall between the writes: before, a writeback that came while the writer
 * was half-way through an object took that half, and the object went to
 * the store in two or three writes (1 MiB + 3 MiB on RADOS, 23% more ops
 * than ceph-fuse for 1 GiB).  The stream's objects are indexed ahead, a
 * few index ops for 16 objects, not one per writeback.  Checked from the
 * store, not from buffers.
 */
START_TEST(test_seq_stream_whole_objects)
{
	set_opt("client_oc_size", "16M");        /* writebacks of up to 4 MiB: the tail too, before */
	set_opt("client_oc_target_dirty", "1M"); /* the flusher writes while the stream goes on */
	const uint32_t osize = 1u << 20;
	const uint64_t size = 16u * osize;
	const size_t w = 96 << 10;                /* writes straddle the objects */
	struct lc_inode *in = mkfile(0x560, osize);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	unsigned char *b = malloc(w), *r = malloc(osize), *want = malloc(osize);
	uint64_t ops0 = perf_get(&c->perf.wb_ops), full0 = perf_get(&c->perf.wb_full_ops);
	uint64_t idx0 = perf_get(&c->perf.index_ops), bytes0 = perf_get(&c->perf.wb_bytes);
	uint64_t deadline;

	for (uint64_t off = 0; off < size; off += w) {
		size_t n = off + w > size ? (size_t)(size - off) : w;

		fill_pat(0x560, off, n, b);
		ck_assert_int_eq(lc_write(c, fh, (off_t)off, n, b), (ssize_t)n);
		if (off < 2 * osize + osize / 2 && off + n >= 2 * osize + osize / 2) {
			/* half-way through object 2: let the flusher write what it will */
			deadline = now_mono_ns() + 20000000000ull;
			while (perf_get(&c->perf.wb_bytes) - bytes0 < 2 * osize && now_mono_ns() < deadline)
				usleep(2000);
			ck_assert_uint_ge(perf_get(&c->perf.wb_bytes) - bytes0, 2 * osize);
		}
	}
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	ck_assert_uint_eq(perf_get(&c->perf.wb_bytes) - bytes0, size);
	ck_assert_msg(perf_get(&c->perf.wb_ops) - ops0 == 16, "16 objects went to the store in %llu writes",
		      (unsigned long long)(perf_get(&c->perf.wb_ops) - ops0));
	ck_assert_uint_eq(perf_get(&c->perf.wb_full_ops) - full0, 16);
	ck_assert_msg(perf_get(&c->perf.index_ops) - idx0 <= 4, "%llu index ops for 16 objects",
		      (unsigned long long)(perf_get(&c->perf.index_ops) - idx0));
	for (uint64_t o = 0; o < 16; o++) {
		char oid[64];

		lc_obj_name(oid, sizeof(oid), 0x560, o);
		ck_assert_int_eq(store_read(pool, oid, 0, osize, r), (ssize_t)osize);
		fill_pat(0x560, o * osize, osize, want);
		ck_assert_msg(memcmp(r, want, osize) == 0, "object %llu differs", (unsigned long long)o);
	}
	lc_release(c, fh);
	lc_put(c, in);
	free(b);
	free(r);
	free(want);
}
END_TEST

/*
 * Small files (an untar) buffer what they hold, not an object each: the
 * first write of a file does not make it a stream.  (187d91e reserved the
 * whole object's room for any write that began where the last ended, a
 * new file's first write at 0 too: 64 files of 4 KiB counted 256 MiB
 * against client_oc_size, and writers blocked at the bound.)
 */
START_TEST(test_small_files_buffer_what_they_hold)
{
	set_opt("client_oc_target_dirty", "1G");   /* the flusher leaves the buffers alone */
	set_opt("client_oc_size", "1G");
	struct lc_inode *in[64];
	struct lc_fh *fh[64];
	char b[4096];

	memset(b, 's', sizeof(b));
	for (int i = 0; i < 64; i++) {
		in[i] = mkfile(0x700 + (uint64_t)i, 0);
		fh[i] = lc_fh_new(c, in[i], O_RDWR, NULL);
		ck_assert_int_eq(lc_write(c, fh[i], 0, sizeof(b), b), (ssize_t)sizeof(b));
	}
	ck_assert_msg(atomic_load(&c->oc_dirty) <= 64u * 65536u, "64 files of 4 KiB count %llu bytes buffered",
		      (unsigned long long)atomic_load(&c->oc_dirty));
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(lc_fsync(c, fh[i], false), 0);
		lc_release(c, fh[i]);
		lc_put(c, in[i]);
	}
}
END_TEST

/*
 * Appenders that fsync (logs, a database's journal) are not streams that
 * will fill an object either: the write after an fsync continues the last
 * one, but it must count about its bytes against client_oc_size, not the
 * room to the end of the object (27557c1 counted 4 MiB each: 32 such
 * files filled the default 128 MiB bound and every 4 KiB write blocked).
 */
START_TEST(test_appends_after_fsync_count_their_bytes)
{
	enum { NFILES = 40, W = 4096 };
	struct lc_inode *in[NFILES];
	struct lc_fh *fh[NFILES];
	unsigned char b[W];
	uint64_t peak = 0, throttle0 = perf_get(&c->perf.wb_throttle);

	for (int i = 0; i < NFILES; i++) {
		in[i] = mkfile(0x5a0 + (uint64_t)i, 4u << 20);
		fh[i] = lc_fh_new(c, in[i], O_RDWR, NULL);
		fill_pat(0x5a0 + (uint64_t)i, 0, W, b);
		ck_assert_int_eq(lc_write(c, fh[i], 0, W, b), W);
		ck_assert_int_eq(lc_fsync(c, fh[i], false), 0);
		fill_pat(0x5a0 + (uint64_t)i, W, W, b);
		ck_assert_int_eq(lc_write(c, fh[i], W, W, b), W);
		uint64_t d = atomic_load(&c->oc_dirty);
		if (d > peak)
			peak = d;
	}
	/* a little room per file is fine (64 KiB), the rest of an object is not */
	ck_assert_msg(peak <= (uint64_t)NFILES * (64u << 10), "%d appends of %d bytes count %llu bytes buffered",
		      NFILES, W, (unsigned long long)peak);
	ck_assert_uint_eq(perf_get(&c->perf.wb_throttle) - throttle0, 0);
	for (int i = 0; i < NFILES; i++) {
		ck_assert_int_eq(lc_fsync(c, fh[i], false), 0);
		check_file(fh[i], 0x5a0 + (uint64_t)i, 2 * W, 2 * W);
		lc_release(c, fh[i]);
		lc_put(c, in[i]);
	}
}
END_TEST

/*
 * Sparse file of 64 KiB objects: objects 0, 2, 3 (half), 7 and the last
 * written, 1, 4, 5, 6 never; EOF in the middle of an object.  What a byte
 * should read as.
 */
#define RA_OSIZE (64u << 10)
#define RA_SIZE ((12u * RA_OSIZE) + 1234)

static unsigned char ra_want(uint64_t ino, uint64_t off)
{
	uint64_t o = off / RA_OSIZE, in_obj = off % RA_OSIZE;

	if (o == 0 || o == 2 || o == 7 || o == 12)
		return pat(ino, off);
	if (o == 3 && in_obj < RA_OSIZE / 2)
		return pat(ino, off);
	return 0;
}

static struct lc_inode *ra_sparse_file(uint64_t ino)
{
	struct lc_inode *in = mkfile(ino, RA_OSIZE);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	unsigned char *b = malloc(RA_OSIZE);
	static const struct { uint64_t off, len; } w[] = {
		{ 0, RA_OSIZE }, { 2 * RA_OSIZE, RA_OSIZE }, { 3 * RA_OSIZE, RA_OSIZE / 2 },
		{ 7 * RA_OSIZE, RA_OSIZE }, { 12 * RA_OSIZE, 1234 },
	};

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill_pat(ino, w[i].off, w[i].len, b);
		ck_assert_int_eq(lc_write(c, fh, (off_t)w[i].off, w[i].len, b), (ssize_t)w[i].len);
	}
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	ck_assert_int_eq(lc_release(c, fh), 0);
	ck_assert_uint_eq(lc_inode_size(in), RA_SIZE);
	ck_assert(!obj_exists(ino, 1) && !obj_exists(ino, 5));
	free(b);
	return in;
}

/* read all of it through @fh in reads of @chunk (lc_read_iov when @iov) and check every byte */
static void ra_check_all(struct lc_fh *fh, uint64_t ino, size_t chunk, bool iov)
{
	unsigned char *b = malloc(chunk);
	uint64_t off = 0;

	for (;;) {
		struct lc_rdbuf rb;
		ssize_t n;

		if (iov) {
			n = lc_read_iov(c, fh, (off_t)off, chunk, &rb);
			size_t at = 0;
			for (int i = 0; n > 0 && i < rb.niov; i++) {
				memcpy(b + at, rb.iov[i].iov_base, rb.iov[i].iov_len);
				at += rb.iov[i].iov_len;
			}
			if (n > 0)
				ck_assert_uint_eq(at, (size_t)n);
			lc_rdbuf_release(c, &rb);
		} else {
			n = lc_read(c, fh, (off_t)off, chunk, b);
		}
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (b[i] != ra_want(ino, off + (uint64_t)i))
				ck_abort_msg("chunk %zu: byte %llu reads %u, not %u", chunk,
					     (unsigned long long)(off + (uint64_t)i), b[i], ra_want(ino, off + (uint64_t)i));
		off += (uint64_t)n;
	}
	ck_assert_uint_eq(off, RA_SIZE);
	ck_assert_int_eq(lc_read(c, fh, RA_SIZE, 10, b), 0);   /* at EOF */
	free(b);
}

/*
 * Readahead in the store's own buffers (client_read_lend): on rados every
 * whole chunk is lent (client.ra_lent), with the bytes right, and nothing is
 * lent with the option off or from a store that cannot lend (local).
 */
/*
 * A window that is more than a third of client_oc_size: a stream keeps
 * what it read for READs that come late, and that must give way to what
 * it reads ahead, or every other READ found the bound reached and went to
 * the store (client_readahead_max 64M with the default 128M halved
 * sequential reads).
 */
START_TEST(test_readahead_window_near_bound)
{
	set_opt("client_readahead_max", "4M");
	set_opt("client_oc_size", "8M");
	struct lc_inode *in = mkfile(0x630, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);

	write_file(fh, 0x630, 32u << 20, 1 << 20);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	lc_release(c, fh);
	fh = lc_fh_new(c, in, O_RDONLY, NULL);
	uint64_t hits0 = perf_get(&c->perf.ra_hit) + perf_get(&c->perf.ra_wait);
	uint64_t miss0 = perf_get(&c->perf.ra_miss);
	check_file(fh, 0x630, 32u << 20, 1 << 20);
	uint64_t hits = perf_get(&c->perf.ra_hit) + perf_get(&c->perf.ra_wait) - hits0;
	ck_assert_msg(hits == 32, "%llu of 32 reads served from readahead, %llu went to the store",
		      (unsigned long long)hits, (unsigned long long)(perf_get(&c->perf.ra_miss) - miss0));
	ck_assert_uint_le(atomic_load(&c->ra_total), 8u << 20);
	lc_release(c, fh);
	ck_assert_uint_eq(atomic_load(&c->ra_total), 0);
	lc_put(c, in);
}
END_TEST

START_TEST(test_readahead_lent)
{
	bool rados = store_can_lend(pool);

	set_opt("client_readahead_max", "4M");
	struct lc_inode *in = mkfile(0x620, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);

	write_file(fh, 0x620, 8u << 20, 1 << 20);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	lc_release(c, fh);
	for (int on = 1; on >= 0; on--) {
		set_opt("client_read_lend", on ? "true" : "false");
		uint64_t lent0 = perf_get(&c->perf.ra_lent), ra0 = perf_get(&c->perf.ra_bytes);
		fh = lc_fh_new(c, in, O_RDONLY, NULL);
		check_file(fh, 0x620, 8u << 20, 128 << 10);
		lc_release(c, fh);
		uint64_t lent = perf_get(&c->perf.ra_lent) - lent0;
		ck_assert_uint_eq(perf_get(&c->perf.ra_bytes) - ra0, 8u << 20);
		if (rados && on)   /* one chunk per 1 MiB object at least */
			ck_assert_msg(lent >= 8, "only %llu chunks lent", (unsigned long long)lent);
		else
			ck_assert_uint_eq(lent, 0);
	}
	ck_assert_uint_eq(atomic_load(&c->ra_total), 0);   /* every chunk, lent or not, freed with its handle */
	lc_put(c, in);
}
END_TEST

/* readahead across object boundaries, over holes and missing objects, to an EOF inside an object */
START_TEST(test_readahead_holes_eof)
{
	static const size_t chunks[] = { 4096, 100000, 128 << 10, 1 << 20 };
	struct lc_inode *in = ra_sparse_file(0x610);

	set_opt("client_readahead_max", "256K");   /* a window of several objects, not the whole file */
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		for (int iov = 0; iov < 2; iov++) {
			struct lc_fh *fh = lc_fh_new(c, in, O_RDONLY, NULL);
			uint64_t served0 = perf_get(&c->perf.ra_hit) + perf_get(&c->perf.ra_wait);

			ra_check_all(fh, 0x610, chunks[i], iov);
			uint64_t served = perf_get(&c->perf.ra_hit) + perf_get(&c->perf.ra_wait) - served0;
			ck_assert_msg(served > 0, "chunk %zu: nothing served from readahead", chunks[i]);
			lc_release(c, fh);
		}
	}
	/* the readahead bound (client_oc_size) reached: reads still right, from the store */
	set_opt("client_oc_size", "64K");
	struct lc_fh *fh = lc_fh_new(c, in, O_RDONLY, NULL);
	ra_check_all(fh, 0x610, 100000, true);
	lc_release(c, fh);
	ck_assert_uint_eq(atomic_load(&c->ra_total), 0);   /* every chunk freed with its handle */
	lc_put(c, in);
}
END_TEST

/*
 * Readahead buffers are reused (the pool of file.c): a buffer that held one
 * file's bytes and then a read of a hole, of a missing object or of an
 * object shorter than the chunk must read as zeros there, never as what it
 * held before.
 */
START_TEST(test_readahead_buffer_reuse)
{
	const uint32_t os = 1u << 20;
	struct lc_inode *a = mkfile(0x640, os), *b = mkfile(0x641, os);
	struct lc_fh *fh = lc_fh_new(c, a, O_RDWR, NULL);
	unsigned char *buf = malloc(os);

	set_opt("client_readahead_max", "4M");
	write_file(fh, 0x640, 8u * os, os);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	lc_release(c, fh);
	/* b: object 0 whole, 1 never written, 2 half, 3 a hole before 4 KiB
	 * at its end, EOF inside object 4 (1000 bytes) */
	fh = lc_fh_new(c, b, O_RDWR, NULL);
	fill_pat(0x641, 0, os, buf);
	ck_assert_int_eq(lc_write(c, fh, 0, os, buf), (ssize_t)os);
	fill_pat(0x641, 2u * os, os / 2, buf);
	ck_assert_int_eq(lc_write(c, fh, 2 * (off_t)os, os / 2, buf), (ssize_t)os / 2);
	fill_pat(0x641, 4u * os - 4096, 4096, buf);
	ck_assert_int_eq(lc_write(c, fh, 4 * (off_t)os - 4096, 4096, buf), 4096);
	fill_pat(0x641, 4u * os, 1000, buf);
	ck_assert_int_eq(lc_write(c, fh, 4 * (off_t)os, 1000, buf), 1000);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	lc_release(c, fh);
	ck_assert(!obj_exists(0x641, 1));

	for (int round = 0; round < 2; round++) {
		fh = lc_fh_new(c, a, O_RDONLY, NULL);
		check_file(fh, 0x640, 8u * os, 256 << 10);   /* fills the pool with a's bytes */
		lc_release(c, fh);
		uint64_t reuse0 = perf_get(&c->perf.ra_buf_reuse);
		fh = lc_fh_new(c, b, O_RDONLY, NULL);
		uint64_t off = 0;
		for (;;) {
			struct lc_rdbuf rb;
			ssize_t n = lc_read_iov(c, fh, (off_t)off, 256 << 10, &rb);

			ck_assert_int_ge(n, 0);
			if (n == 0) {
				lc_rdbuf_release(c, &rb);
				break;
			}
			uint64_t at = off;
			for (int i = 0; i < rb.niov; i++) {
				const unsigned char *p = rb.iov[i].iov_base;
				for (size_t j = 0; j < rb.iov[i].iov_len; j++, at++) {
					uint64_t o = at / os, in_obj = at % os;
					bool data = o == 0 || (o == 2 && in_obj < os / 2) || (o == 3 && in_obj >= os - 4096) ||
						    o == 4;
					unsigned char want = data ? pat(0x641, at) : 0;
					if (p[j] != want)
						ck_abort_msg("round %d: byte %llu of b reads %u, not %u", round,
							     (unsigned long long)at, p[j], want);
				}
			}
			ck_assert_uint_eq(at, off + (uint64_t)n);
			lc_rdbuf_release(c, &rb);
			off += (uint64_t)n;
		}
		ck_assert_uint_eq(off, 4u * os + 1000);
		lc_release(c, fh);
		/* b's chunks were a's buffers */
		ck_assert_uint_gt(perf_get(&c->perf.ra_buf_reuse) - reuse0, 0);
	}
	pthread_mutex_lock(&c->ra_pool_lock);
	ck_assert_uint_le(c->ra_pool_bytes, 12u << 20);   /* kept: at most 3 x client_readahead_max */
	ck_assert_uint_gt(c->ra_pool_bytes, 0);
	pthread_mutex_unlock(&c->ra_pool_lock);
	lc_ra_pool_trim(c, false);   /* just used: kept */
	ck_assert_uint_gt(c->ra_pool_bytes, 0);
	lc_ra_pool_trim(c, true);
	ck_assert_uint_eq(c->ra_pool_bytes, 0);
	ck_assert_uint_eq(atomic_load(&c->ra_total), 0);
	free(buf);
	lc_put(c, a);
	lc_put(c, b);
}
END_TEST

/* several readers of one handle at once, out of order, as FUSE's async reads come */
struct ra_thr {
	struct lc_fh *fh;
	int idx, n;
	size_t chunk;
	int bad;
};

static void *ra_reader(void *arg)
{
	struct ra_thr *t = arg;
	unsigned char *b = malloc(t->chunk);

	for (int round = 0; round < 3; round++) {
		for (uint64_t k = (uint64_t)t->idx;; k += (uint64_t)t->n) {
			uint64_t off = k * t->chunk;
			struct lc_rdbuf rb;
			ssize_t n = lc_read_iov(c, t->fh, (off_t)off, t->chunk, &rb);
			size_t at = 0;

			for (int i = 0; n > 0 && i < rb.niov; i++) {
				memcpy(b + at, rb.iov[i].iov_base, rb.iov[i].iov_len);
				at += rb.iov[i].iov_len;
			}
			lc_rdbuf_release(c, &rb);
			if (n <= 0) {
				if (n < 0 || off < RA_SIZE)
					t->bad++;
				break;
			}
			for (ssize_t i = 0; i < n; i++)
				if (b[i] != ra_want(0x611, off + (uint64_t)i))
					t->bad++;
		}
	}
	free(b);
	return NULL;
}

START_TEST(test_readahead_parallel_readers)
{
	struct lc_inode *in = ra_sparse_file(0x611);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDONLY, NULL);
	struct ra_thr t[4];
	pthread_t th[4];

	set_opt("client_readahead_max", "256K");
	for (int i = 0; i < 4; i++) {
		t[i] = (struct ra_thr){ .fh = fh, .idx = i, .n = 4, .chunk = 16 << 10 };
		pthread_create(&th[i], NULL, ra_reader, &t[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(t[i].bad == 0, "reader %d saw %d wrong bytes", i, t[i].bad);
	}
	lc_release(c, fh);
	lc_put(c, in);
}
END_TEST

/*
 * Reads racing truncates and rewrites through another handle: a read may
 * see the old bytes, zeros or the new bytes while they race, but once a
 * rewrite is done every read sees it (no readahead chunk from before the
 * truncate is served).  Each round writes byte value v over [0, size).
 */
struct trunc_arg {
	struct lc_inode *in;
	atomic_int round;     /* value being written; the reader checks against it */
	atomic_bool stop;
	int bad;
};

static void *trunc_reader(void *arg)
{
	struct trunc_arg *a = arg;
	struct lc_fh *fh = lc_fh_new(c, a->in, O_RDONLY, NULL);
	unsigned char *b = malloc(256 << 10);

	while (!atomic_load(&a->stop)) {
		for (uint64_t off = 0;; off += 256 << 10) {
			int lo = atomic_load(&a->round) - 1;   /* the previous value may still be there */
			ssize_t n = lc_read(c, fh, (off_t)off, 256 << 10, b);
			int hi = atomic_load(&a->round);

			if (n <= 0) {
				if (n < 0)
					a->bad++;
				break;
			}
			for (ssize_t i = 0; i < n; i++)
				if (b[i] != 0 && (b[i] < (lo & 0xff) || b[i] > (hi & 0xff)) && lo >= 0 && hi < 255)
					a->bad++;
		}
	}
	free(b);
	lc_release(c, fh);
	return NULL;
}

START_TEST(test_read_races_truncate)
{
	const size_t size = 3u << 20;
	struct lc_inode *in = mkfile(0x620, 1 << 20);
	struct lc_fh *wfh = lc_fh_new(c, in, O_RDWR, NULL);
	struct lc_fh *rfh = lc_fh_new(c, in, O_RDONLY, NULL);
	struct trunc_arg a = { .in = in };
	unsigned char *b = malloc(size), *r = malloc(size);
	pthread_t th;

	set_opt("client_readahead_max", "1M");
	atomic_init(&a.round, 1);
	memset(b, 1, size);
	ck_assert_int_eq(lc_write(c, wfh, 0, size, b), (ssize_t)size);
	ck_assert_int_eq(lc_wb_flush(c, wfh->in), 0);
	pthread_create(&th, NULL, trunc_reader, &a);
	for (int v = 2; v < 40; v++) {
		/* rfh streams through the file first, so it holds readahead of value v - 1 */
		ck_assert_int_eq(lc_read(c, rfh, 0, 512 << 10, r), 512 << 10);
		ck_assert_int_eq(lc_read(c, rfh, 512 << 10, 512 << 10, r), 512 << 10);
		atomic_store(&a.round, v);
		ck_assert_int_eq(lc_truncate_data(c, in, size, 0), 0);   /* what a SETATTR size 0 does here */
		memset(b, v, size);
		ck_assert_int_eq(lc_write(c, wfh, 0, size, b), (ssize_t)size);
		ck_assert_int_eq(lc_wb_flush(c, wfh->in), 0);
		/* the rewrite is done: rfh reads v everywhere, nothing it read ahead before */
		for (uint64_t off = 0; off < size; off += 512 << 10) {
			ck_assert_int_eq(lc_read(c, rfh, (off_t)off, 512 << 10, r), 512 << 10);
			for (size_t i = 0; i < 512 << 10; i++)
				if (r[i] != v)
					ck_abort_msg("round %d: byte %llu reads %u after the rewrite", v,
						     (unsigned long long)(off + i), r[i]);
		}
	}
	atomic_store(&a.stop, true);
	pthread_join(th, NULL);
	ck_assert_msg(a.bad == 0, "the racing reader saw %d bytes of no round", a.bad);
	lc_release(c, rfh);
	lc_release(c, wfh);
	lc_put(c, in);
	free(b);
	free(r);
}
END_TEST

/* fsync of one file writes that file only, however much another file has buffered */
START_TEST(test_fsync_one_file)
{
	set_opt("client_oc_target_dirty", "1G");   /* the flusher leaves the buffers alone */
	set_opt("client_oc_size", "1G");
	/* A's objects are 32 MiB: its 24 MiB stay under the 2 objects that kick the flusher */
	struct lc_inode *a = mkfile(0x630, 32u << 20), *b = mkfile(0x631, 0);
	struct lc_fh *fa = lc_fh_new(c, a, O_RDWR, NULL), *fb = lc_fh_new(c, b, O_RDWR, NULL);

	write_file(fa, 0x630, 24u << 20, 1 << 20);   /* A: 24 MiB buffered */
	write_file(fb, 0x631, 12345, 4096);
	uint64_t wb0 = perf_get(&c->perf.wb_bytes);
	ck_assert_int_eq(lc_fsync(c, fb, false), 0);
	ck_assert_uint_eq(perf_get(&c->perf.wb_bytes) - wb0, 12345);   /* B's bytes, none of A's */
	pthread_mutex_lock(&a->lock);
	ck_assert_uint_eq(a->dirty_bytes >= (24u << 20) ? 1 : 0, 1);
	pthread_mutex_unlock(&a->lock);
	ck_assert(obj_exists(0x631, 0) && !obj_exists(0x630, 0));
	ck_assert_int_eq(lc_fsync(c, fa, false), 0);
	check_file(fa, 0x630, 24u << 20, 1 << 20);
	check_file(fb, 0x631, 12345, 4096);
	lc_release(c, fa);
	lc_release(c, fb);
	lc_put(c, a);
	lc_put(c, b);
}
END_TEST

/*
 * Many small writes to one object go to the store as one compound op, so a
 * crash (kill -9) in the middle of a writeback leaves all of them or none;
 * what an fsync returned for is all there.  The writer is this binary again
 * (LC_CRASH_CHILD=DIR: no threads of a parent around the fork): it writes
 * round 1 (512 scattered 512-byte writes into object 0), fsyncs, says so on
 * stdout, writes round 2 over the same spots, closes (the writeback starts
 * and close returns) and fsyncs a new handle, said just before;
 * the test kills it at once, then opens the store and checks.
 */
#define CRASH_INO 0x640
#define CRASH_N 512

static uint64_t crash_off(int i)
{
	return (uint64_t)((i * 2654435761u) % 8192u) * 512u;   /* distinct 512-byte slots of 4 MiB */
}

static int crash_child(const char *dir)
{
	struct store_config sc = { .backend = "local", .local_path = dir };
	struct store *cst;
	struct store_pool *cp;
	struct lclient *cc;
	char b[512];

	cfg_init("client");
	if (store_open(&sc, &cst) || store_pool_open(cst, "t_data", NULL, &cp) || lclient_create_local(cp, &cc))
		return 2;
	struct mdsp_inode mi = { .ino = CRASH_INO, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };
	struct lc_inode *in = lc_inode_update(cc, &mi, 0, 0);
	struct lc_fh *fh = lc_fh_new(cc, in, O_RDWR, NULL);
	for (int round = 1; round <= 2; round++) {
		memset(b, round, sizeof(b));
		for (int i = 0; i < CRASH_N; i++)
			if (lc_write(cc, fh, (off_t)crash_off(i), sizeof(b), b) != (ssize_t)sizeof(b))
				return 3;
		if (round == 2) {
			printf("flushing\n");
			fflush(stdout);
			/* close, which starts the writeback and returns; then an
			 * fsync through another handle: it covers what the close
			 * left in flight */
			if (lc_flush(cc, fh) || lc_release(cc, fh))
				return 5;
			fh = lc_fh_new(cc, in, O_RDWR, NULL);
		}
		if (lc_fsync(cc, fh, false))
			return 4;
		if (round == 1) {
			printf("synced\n");
			fflush(stdout);
		}
	}
	printf("done\n");
	fflush(stdout);
	pause();   /* the parent kills us */
	return 0;
}

START_TEST(test_batched_writes_crash)
{
	char dir[300], line[64];
	int pfd[2], kills_before_done = 0;

	for (int attempt = 0; attempt < 4; attempt++) {
		snprintf(dir, sizeof(dir), "%s/crash%d", topdir, attempt);
		struct store_config sc = { .backend = "local", .local_path = dir, .create = true };
		struct store *cst;
		ck_assert_int_eq(store_open(&sc, &cst), 0);
		ck_assert_int_eq(store_pool_create(cst, "t_data"), 0);
		store_close(cst);

		ck_assert_int_eq(pipe(pfd), 0);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			char self[256];
			ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
			dup2(pfd[1], 1);
			close(pfd[0]);
			if (n > 0) {
				self[n] = 0;
				setenv("LC_CRASH_CHILD", dir, 1);
				execl(self, self, (char *)NULL);
			}
			_exit(127);
		}
		close(pfd[1]);
		FILE *f = fdopen(pfd[0], "r");
		bool synced = false, flushing = false;
		while (fgets(line, sizeof(line), f)) {
			if (!strcmp(line, "synced\n"))
				synced = true;
			if (!strcmp(line, "flushing\n")) {
				flushing = true;
				/* attempts 0-2 kill in the middle of the writeback, the last one after it */
				if (attempt < 3)
					break;
			}
			if (!strcmp(line, "done\n"))
				break;
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fclose(f);
		ck_assert_msg(synced && flushing, "the writer did not get to its second round");

		/* what is in the store now: round 1 everywhere, or round 2 everywhere */
		struct store_pool *cp;
		ck_assert_int_eq(store_open(&(struct store_config){ .backend = "local", .local_path = dir }, &cst), 0);
		ck_assert_int_eq(store_pool_open(cst, "t_data", NULL, &cp), 0);
		char oid[64], b[512];
		int n1 = 0, n2 = 0;
		lc_obj_name(oid, sizeof(oid), CRASH_INO, 0);
		for (int i = 0; i < CRASH_N; i++) {
			ck_assert_int_eq(store_read(cp, oid, crash_off(i), sizeof(b), b), (ssize_t)sizeof(b));
			for (size_t k = 0; k < sizeof(b); k++)
				ck_assert_msg(b[k] == b[0], "slot %d is torn", i);
			if (b[0] == 1)
				n1++;
			else if (b[0] == 2)
				n2++;
			else
				ck_abort_msg("slot %d reads %d: an fsync'd write is missing", i, b[0]);
		}
		ck_assert_msg(n1 == CRASH_N || n2 == CRASH_N, "attempt %d: %d slots of round 1, %d of round 2: "
			      "the writeback of one object was not atomic", attempt, n1, n2);
		if (attempt == 3)
			ck_assert_int_eq(n2, CRASH_N);   /* fsync returned: all of round 2 */
		else if (n1 == CRASH_N)
			kills_before_done++;
		store_pool_close(cp);
		store_close(cst);
	}
	(void)kills_before_done;   /* how many kills beat the commit is up to the scheduler */
}
END_TEST

/*
 * Writeback errors are per open handle (errseq_t-like): every handle open
 * when a writeback failed hears it once at its fsync or close, whichever
 * writeback met it: its own, another handle's fsync, the flusher's round.
 * Before, the first fsync took the error and the other handle's fsync
 * said its data was safe.
 */
static void inject(const char *v)
{
	set_opt("store_inject_write_error", v);
}

START_TEST(test_wb_err_per_handle)
{
	struct lc_inode *in = mkfile(0x650, 0);
	struct lc_fh *fa = lc_fh_new(c, in, O_RDWR, NULL), *fb = lc_fh_new(c, in, O_RDWR, NULL);
	char b[4096];

	memset(b, 'a', sizeof(b));
	/* 1. a's fsync meets the error: a and b hear it, once each */
	ck_assert_int_eq(lc_write(c, fa, 0, sizeof(b), b), (ssize_t)sizeof(b));
	inject("EIO");
	ck_assert_int_eq(lc_fsync(c, fa, false), -EIO);
	inject("");
	ck_assert_msg(lc_fsync(c, fb, false) == -EIO, "the second handle's fsync did not report the "
		      "writeback error the first handle's fsync met");
	ck_assert_int_eq(lc_fsync(c, fa, false), 0);
	ck_assert_int_eq(lc_fsync(c, fb, false), 0);

	/* 2. a global flush (the flusher's periodic round, syncfs) meets it:
	 * it consumes nothing, both handles hear it */
	ck_assert_int_eq(lc_write(c, fb, 0, sizeof(b), b), (ssize_t)sizeof(b));
	inject("EIO");
	ck_assert_int_eq(lc_flush_all(c, true), -EIO);
	inject("");
	ck_assert_int_eq(lc_sync_fs(c), 0);
	ck_assert_msg(lc_fsync(c, fa, false) == -EIO, "a global flush took the handle's error");
	ck_assert_int_eq(lc_fsync(c, fa, false), 0);
	/* close reports an error already recorded, once */
	ck_assert_int_eq(lc_flush(c, fb), -EIO);
	ck_assert_int_eq(lc_flush(c, fb), 0);

	/* 3. a handle opened after everyone saw the errors starts clean */
	struct lc_fh *fc = lc_fh_new(c, in, O_RDWR, NULL);
	ck_assert_int_eq(lc_fsync(c, fc, false), 0);
	ck_assert_int_eq(lc_write(c, fc, 0, sizeof(b), b), (ssize_t)sizeof(b));
	ck_assert_int_eq(lc_fsync(c, fc, false), 0);
	char rb[sizeof(b)];
	ck_assert_int_eq(lc_read(c, fc, 0, sizeof(rb), rb), (ssize_t)sizeof(rb));
	ck_assert(memcmp(rb, b, sizeof(b)) == 0);
	ck_assert_int_eq(lc_release(c, fc), 0);
	ck_assert_int_eq(lc_release(c, fa), 0);
	ck_assert_int_eq(lc_release(c, fb), 0);
	lc_put(c, in);
}
END_TEST

static bool wb_idle(struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	bool idle = !lc_data_pending_locked(in);
	pthread_mutex_unlock(&in->lock);
	return idle;
}

/*
 * close() of a file buffered under Fb starts its writeback and returns
 * (ceph-fuse's semantics): a store that fails for now does not fail the
 * close, the data stays buffered and the next fsync gets it there; an
 * error that the writeback recorded before the close is reported by it.
 */
START_TEST(test_close_starts_writeback)
{
	struct lc_inode *in = mkfile(0x651, 0);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	uint64_t end;

	/* 1. the writeback happens after close returned, without a flusher round */
	write_file(fh, 0x651, 12345, 4096);
	ck_assert_int_eq(lc_flush(c, fh), 0);
	ck_assert_int_eq(lc_release(c, fh), 0);
	for (end = now_mono_ns() + 30000000000ull; !(wb_idle(in) && obj_exists(0x651, 0)) && now_mono_ns() < end;)
		usleep(1000);
	ck_assert_msg(obj_exists(0x651, 0), "the closed file's data did not reach the store within 30 s");

	/* 2. a transient store error: close returns 0, nothing is lost */
	fh = lc_fh_new(c, in, O_RDWR, NULL);
	write_file(fh, 0x651, 3u << 20, 1 << 20);
	inject("ETIMEDOUT");
	ck_assert_msg(lc_flush(c, fh) == 0, "close waited for the writeback (and failed with it)");
	ck_assert_int_eq(lc_release(c, fh), 0);
	for (end = now_mono_ns() + 30000000000ull; !atomic_load(&c->wb_failing) && now_mono_ns() < end;)
		usleep(1000);
	ck_assert_msg(atomic_load(&c->wb_failing) == -ETIMEDOUT, "the writeback after close did not run");
	inject("");
	fh = lc_fh_new(c, in, O_RDWR, NULL);
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	check_file(fh, 0x651, 3u << 20, 1 << 20);

	/* 3. a lasting error recorded before the close: the close reports it */
	write_file(fh, 0x651, 3u << 20, 1 << 20);
	inject("EIO");
	int r1 = lc_flush(c, fh);   /* -EIO if the flusher was done already */
	for (end = now_mono_ns() + 30000000000ull; !wb_idle(in) && now_mono_ns() < end;)
		usleep(1000);
	inject("");
	ck_assert(wb_idle(in));
	int r2 = lc_release(c, fh);
	ck_assert_msg((r1 == 0 && r2 == -EIO) || (r1 == -EIO && r2 == 0), "close: %d, release: %d: the "
		      "writeback error was not reported exactly once", r1, r2);
	lc_put(c, in);
}
END_TEST

struct wr_arg {
	uint64_t ino;
};

static void *writer(void *p)
{
	struct wr_arg *a = p;
	struct lc_inode *in = mkfile(a->ino, 1 << 20);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR, NULL);
	write_file(fh, a->ino, 6u << 20, 64 << 10);
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	lc_release(c, fh);
	lc_put(c, in);
	return NULL;
}

START_TEST(test_concurrent_writers)
{
	set_opt("client_oc_size", "8M");
	pthread_t t[6];
	struct wr_arg a[6];
	for (int i = 0; i < 6; i++) {
		a[i].ino = 0x700 + (uint64_t)i;
		pthread_create(&t[i], NULL, writer, &a[i]);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 6; i++) {
		struct lc_inode *in = lc_ino_to_inode(c, a[i].ino);
		ck_assert_ptr_nonnull(in);
		struct lc_fh *fh = lc_fh_new(c, in, O_RDONLY, NULL);
		check_file(fh, a[i].ino, 6u << 20, 1 << 20);
		lc_release(c, fh);
		lc_put(c, in);
	}
}
END_TEST

struct sf_arg {
	struct lc_inode *in;
	int part;
};

/* two writers and a reader on one file: disjoint halves, object-crossing chunks */
static void *same_file_writer(void *p)
{
	struct sf_arg *a = p;
	struct lc_fh *fh = lc_fh_new(c, a->in, O_RDWR, NULL);
	unsigned char b[100000];
	uint64_t base = (uint64_t)a->part * (3u << 20);
	for (uint64_t off = 0; off < (3u << 20); off += sizeof(b)) {
		size_t n = (3u << 20) - off < sizeof(b) ? (size_t)((3u << 20) - off) : sizeof(b);
		fill_pat(0xe00, base + off, n, b);
		ck_assert_int_eq(lc_write(c, fh, (off_t)(base + off), n, b), (ssize_t)n);
		if (off % (1u << 20) < sizeof(b))
			ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	}
	lc_release(c, fh);
	return NULL;
}

START_TEST(test_same_file_concurrent)
{
	set_opt("client_oc_size", "1M");
	struct lc_inode *in = mkfile(0xe00, 1 << 20);
	pthread_t t[2];
	struct sf_arg a[2] = { { in, 0 }, { in, 1 } };
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, same_file_writer, &a[i]);
	/* a reader meanwhile sees only the pattern or zeros (a hole not yet written) */
	struct lc_fh *rfh = lc_fh_new(c, in, O_RDONLY, NULL);
	unsigned char *b = malloc(1 << 20);
	for (int k = 0; k < 20; k++) {
		uint64_t off = (uint64_t)(k % 6) << 20;
		ssize_t n = lc_read(c, rfh, (off_t)off, 1 << 20, b);
		ck_assert_int_ge(n, 0);
		for (ssize_t i = 0; i < n; i++)
			if (b[i] != 0 && b[i] != pat(0xe00, off + (uint64_t)i))
				ck_abort_msg("byte %llu is neither data nor a hole", (unsigned long long)(off + (uint64_t)i));
	}
	free(b);
	lc_release(c, rfh);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDONLY, NULL);
	check_file(fh, 0xe00, 6u << 20, 1 << 20);
	lc_release(c, fh);
	lc_put(c, in);
}
END_TEST

START_TEST(test_write_through)
{
	struct lc_inode *in = mkfile(0x800, 0);
	struct lc_fh *fh = lc_fh_new(c, in, O_RDWR | O_SYNC, NULL);
	ck_assert_int_eq(lc_write(c, fh, 5, 4, "sync"), 4);
	ck_assert(obj_exists(0x800, 0));
	ck_assert_uint_eq(atomic_load(&c->oc_dirty), 0);
	char b[9];
	ck_assert_int_eq(lc_read(c, fh, 0, 9, b), 9);
	ck_assert(memcmp(b, "\0\0\0\0\0sync", 9) == 0);
	lc_release(c, fh);
	lc_put(c, in);
}
END_TEST

/* ---- caches ------------------------------------------------------------- */

START_TEST(test_inode_refs_and_trim)
{
	set_opt("client_cache_size", "10");
	struct lc_inode *keep = mkfile(0x900, 0);
	for (uint64_t i = 1; i <= 50; i++)
		lc_put(c, mkfile(0x900 + i, 0));
	ck_assert_uint_eq(atomic_load(&c->ninodes), 51);
	/* an unreferenced inode still serves lookups until trimmed */
	struct lc_inode *x = lc_ino_to_inode(c, 0x905);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(lc_ino(x), 0x905);
	lc_get(x);
	lc_forget(c, x, 2);
	lc_icache_trim(c);
	ck_assert_uint_le(atomic_load(&c->ninodes), 10);
	/* the referenced one survives */
	struct lc_inode *k2 = lc_ino_to_inode(c, 0x900);
	ck_assert_ptr_eq(k2, keep);
	lc_put(c, k2);
	/* an update of a cached inode returns the same object with new attrs */
	struct mdsp_inode mi = { .ino = 0x900, .generation = 1, .mode = S_IFREG | 0600, .size = 77, .change = 5 };
	struct lc_inode *k3 = lc_inode_update(c, &mi, 0, 0);
	ck_assert_ptr_eq(k3, keep);
	struct lc_attr a;
	lc_inode_fill_attr(k3, &a);
	ck_assert_uint_eq(a.size, 77);
	ck_assert_uint_eq(a.mode, S_IFREG | 0600);
	/* an older reply (smaller change) does not go back in time */
	mi.size = 5;
	mi.change = 4;
	lc_put(c, lc_inode_update(c, &mi, 0, 0));
	lc_inode_fill_attr(k3, &a);
	ck_assert_uint_eq(a.size, 77);
	/* a new generation of the ino replaces the inode */
	mi.generation = 2;
	mi.change = 1;
	struct lc_inode *k4 = lc_inode_update(c, &mi, 0, 0);
	ck_assert_ptr_ne(k4, keep);
	lc_put(c, k4);
	lc_put(c, k3);
	lc_put(c, keep); /* unhashed and unreferenced: freed (ASan checks) */
}
END_TEST

START_TEST(test_attr_timeout_and_caps)
{
	set_opt("client_caps_timeout", "30");
	struct lc_inode *in = mkfile(0xa00, 0);
	pthread_mutex_lock(&in->lock);
	/* no caps: nothing cached, the frontend gets no timeout */
	ck_assert(!lc_inode_attr_valid_locked(in, now_mono_ns()));
	pthread_mutex_unlock(&in->lock);
	ck_assert(lc_attr_timeout(c, in) == 0);
	pthread_mutex_lock(&in->lock);
	/* every attribute covered: valid for long */
	lc_caps_apply_locked(in, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 3);
	ck_assert(lc_inode_attr_valid_locked(in, now_mono_ns() + 1000000000ull));
	/* a reply older than the caps we hold cannot change them */
	lc_caps_apply_locked(in, MDSP_CAP_FILE_WR, 2);
	ck_assert_uint_eq(in->caps, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED);
	pthread_mutex_unlock(&in->lock);
	ck_assert(lc_attr_timeout(c, in) > 10);
	/* a newer state replaces it: without Fs the size is not cached */
	pthread_mutex_lock(&in->lock);
	lc_caps_apply_locked(in, MDSP_CAP_PIN | MDSP_CAP_AUTH_SHARED | MDSP_CAP_LINK_SHARED, 4);
	ck_assert(!lc_inode_attr_valid_locked(in, now_mono_ns()));
	lc_caps_apply_locked(in, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED | MDSP_CAP_FILE_CACHE, 5);
	pthread_mutex_unlock(&in->lock);
	ck_assert(lc_attr_timeout(c, in) > 10);
	/* a revoke (run as the flusher would) drops the caps and the attrs */
	struct cap_work w = { .caps = { .op = MDSP_CAPS_REVOKE, .ino = 0xa00, .caps = MDSP_CAP_PIN, .seq = 6 } };
	lc_caps_process(c, &w);
	pthread_mutex_lock(&in->lock);
	ck_assert_uint_eq(in->caps, MDSP_CAP_PIN);
	ck_assert_uint_eq(in->cap_seq, 6);
	ck_assert(!lc_inode_attr_valid_locked(in, now_mono_ns()));
	/* a reply sent before the revoke cannot bring them back */
	lc_caps_apply_locked(in, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 5);
	ck_assert_uint_eq(in->caps, MDSP_CAP_PIN);
	pthread_mutex_unlock(&in->lock);
	ck_assert(lc_attr_timeout(c, in) == 0);
	pthread_mutex_lock(&in->lock);
	/* a grant, then bits given up here (a close: lc_caps_update), then the
	 * same grant again (the request's safe reply): they stay given up */
	uint32_t all = MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED | MDSP_CAP_FILE_RD | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER;
	lc_caps_apply_locked(in, all, 7);
	ck_assert_uint_eq(in->caps, all);
	in->caps &= ~(uint32_t)(MDSP_CAP_FILE_RD | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER);
	lc_caps_apply_locked(in, all, 7);
	ck_assert_uint_eq(in->caps, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED);
	/* a newer grant brings what it grants */
	lc_caps_apply_locked(in, all, 8);
	ck_assert_uint_eq(in->caps, all);
	pthread_mutex_unlock(&in->lock);
	lc_put(c, in);
}
END_TEST

START_TEST(test_dentries)
{
	set_opt("client_caps_timeout", "0.1");
	set_opt("client_negative_timeout", "1");
	struct mdsp_inode dmi = { .ino = 0xb00, .generation = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	struct lc_inode *dir = lc_inode_update(c, &dmi, 0, 0);
	uint64_t ino = 0;

	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 0);
	/* without a lease or Fs on the directory nothing is cached */
	lc_dcache_add(c, dir, "a", 0xb01);
	lc_dcache_add(c, dir, "gone", 0);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 0);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "gone", &ino), 0);
	ck_assert(!lc_dcache_leased(c, dir, "a"));
	/* a lease caches the name, for as long as it is held */
	lc_dcache_add_lease(c, dir, "a", 0xb01, 7);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 1);
	ck_assert_uint_eq(ino, 0xb01);
	ck_assert(lc_dcache_leased(c, dir, "a"));
	/* an unleased add saying the same keeps it; one saying otherwise drops it */
	lc_dcache_add(c, dir, "a", 0xb01);
	ck_assert(lc_dcache_leased(c, dir, "a"));
	lc_dcache_add(c, dir, "a", 0xb02);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 0);
	lc_dcache_add_lease(c, dir, "a", 0xb02, 8);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 1);
	ck_assert_uint_eq(ino, 0xb02);
	/* negative names under Fs on the directory, until it goes */
	pthread_mutex_lock(&dir->lock);
	lc_caps_apply_locked(dir, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 1);
	pthread_mutex_unlock(&dir->lock);
	lc_dcache_add(c, dir, "gone", 0);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "gone", &ino), 1);
	ck_assert_uint_eq(ino, 0);
	lc_dcache_negatives_gone(c, dir);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "gone", &ino), 0);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 1);
	/* a revoked lease leaves a tombstone: the reply that was on its way
	 * with that lease cannot bring the name back, a newer lease can */
	lc_dcache_revoke_lease(c, 0xb00, "a");
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 0);
	lc_dcache_add_lease(c, dir, "a", 0xb02, 8);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 0);
	lc_dcache_add_lease(c, dir, "a", 0xb03, 9);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 1);
	ck_assert_uint_eq(ino, 0xb03);
	/* leases outlive the caps timeout: they end when revoked */
	usleep(150000);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 1);
	/* losing the session drops them all at once */
	lc_dcache_invalidate_dir(dir);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "a", &ino), 0);
	lc_dcache_remove(c, 0xb00, "a");
	lc_dcache_remove(c, 0xb00, "gone");
	ck_assert_uint_eq(atomic_load(&c->ndentries), 0);
	lc_put(c, dir);
}
END_TEST

static int n_inval_inode, n_inval_dentry;
static char inval_names[8][16];

static void t_inval_inode(void *arg, uint64_t ino, off_t off, off_t len)
{
	n_inval_inode++;
}

static void t_inval_dentry(void *arg, uint64_t parent, const char *name)
{
	if (n_inval_dentry < 8)
		snprintf(inval_names[n_inval_dentry], sizeof(inval_names[0]), "%s", name);
	n_inval_dentry++;
}

/* Past its bound (2 x client_cache_size) the dentry trim drops what the
 * kernel does not hold and keeps what it does: dropping those expired them
 * in the kernel, and a `ls -l` of a big directory looked up again what its
 * readdirplus had just handed over (issue 21.3). */
START_TEST(test_dcache_trim_keeps_kernel_names)
{
	static const struct lc_callbacks cb = { .inval_inode = t_inval_inode, .inval_dentry = t_inval_dentry };
	struct mdsp_inode dmi = { .ino = 0xe00, .generation = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	struct lc_inode *dir = lc_inode_update(c, &dmi, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 1);
	char name[16];
	uint64_t ino;

	set_opt("client_cache_size", "10");
	set_opt("client_caps_timeout", "30");
	lclient_set_callbacks(c, &cb, NULL);
	n_inval_dentry = 0;
	for (int i = 0; i < 60; i++) {
		struct mdsp_inode mi = { .ino = 0xe01 + (uint64_t)i, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };
		struct lc_inode *in = lc_inode_update(c, &mi, 0, 0);

		snprintf(name, sizeof(name), "f%d", i);
		lc_dcache_add_lease(c, dir, name, in->ino, 1 + (uint64_t)i);
		if (i < 30)     /* handed to the kernel, as readdirplus does */
			ck_assert(lc_dentry_timeout(c, dir, name, in) >= 30);
		lc_put(c, in);
	}
	ck_assert_uint_eq(atomic_load(&c->ndentries), 60);
	lc_dcache_trim(c);
	ck_assert_uint_le(atomic_load(&c->ndentries), 30);
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_msg(lc_dcache_lookup(c, dir, name, &ino) == 1, "%s, held by the kernel, was trimmed", name);
	}
	/* what went is released (lease and kernel): only names not handed over */
	ck_assert_int_eq(n_inval_dentry, 30);
	for (int i = 0; i < 8; i++) {
		int k = atoi(inval_names[i] + 1);

		ck_assert_msg(k >= 30, "%s, held by the kernel, was expired there", inval_names[i]);
	}
	lclient_set_callbacks(c, NULL, NULL);
	lc_put(c, dir);
}
END_TEST

/*
 * The inode trim looks only at the inodes nobody holds (the LRU), at most
 * client_trim_batch of them a round: during a listing the kernel holds
 * every inode, and walking them freed nothing (issue 21.3).  It evicts
 * every unreferenced inode over the bound, and none that is referenced,
 * also one referenced again after it went on the LRU.  (The client's
 * flusher trims too: the bound is checked per round, whoever made it.)
 */
START_TEST(test_icache_trim_lru)
{
	struct lc_inode *held[40], *again[4];
	uint64_t n0 = atomic_load(&c->ninodes);

	set_opt("client_cache_size", "10");
	set_opt("client_trim_batch", "8");
	for (int i = 0; i < 40; i++) {
		struct mdsp_inode mi = { .ino = 0xf01 + (uint64_t)i, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };

		held[i] = lc_inode_update(c, &mi, 0, 0);
	}
	/* all held: nothing looked at */
	uint64_t v0 = perf_get(&c->perf.ino_trim_visited), s0 = perf_get(&c->perf.ino_trim_skipped);
	lc_icache_trim(c);
	ck_assert_uint_eq(perf_get(&c->perf.ino_trim_visited), v0);
	ck_assert_uint_gt(perf_get(&c->perf.ino_trim_skipped), s0);
	ck_assert_uint_eq(atomic_load(&c->ninodes), n0 + 40);
	/* 60 nobody holds, 4 of which are referenced again afterwards */
	for (int i = 0; i < 60; i++) {
		struct mdsp_inode mi = { .ino = 0x1001 + (uint64_t)i, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };

		lc_put(c, lc_inode_update(c, &mi, 0, 0));
	}
	for (int i = 0; i < 4; i++) {
		again[i] = lc_ino_to_inode(c, 0x1001 + 10 * (uint64_t)i);
		ck_assert_ptr_nonnull(again[i]);
	}
	uint64_t w0 = perf_get(&c->perf.ino_trim_walks), e0 = perf_get(&c->perf.ino_evicted);
	v0 = perf_get(&c->perf.ino_trim_visited);
	for (int round = 0; round < 1000 && atomic_load(&c->ninodes) > n0 + 44; round++)
		lc_icache_trim(c);
	uint64_t walks = perf_get(&c->perf.ino_trim_walks) - w0, visited = perf_get(&c->perf.ino_trim_visited) - v0;
	ck_assert_uint_eq(atomic_load(&c->ninodes), n0 + 44);
	ck_assert_uint_ge(perf_get(&c->perf.ino_evicted) - e0, 56);
	ck_assert_msg(visited <= 8 * walks, "%" PRIu64 " inodes looked at in %" PRIu64 " rounds of 8 at most", visited, walks);
	ck_assert_uint_ge(walks, 56 / 8);
	/* nothing in use went: the same objects, alive */
	for (int i = 0; i < 40; i++) {
		struct lc_inode *x = lc_ino_to_inode(c, 0xf01 + (uint64_t)i);

		ck_assert_ptr_eq(x, held[i]);
		lc_put(c, x);
	}
	for (int i = 0; i < 4; i++) {
		struct lc_inode *x = lc_ino_to_inode(c, 0x1001 + 10 * (uint64_t)i);

		ck_assert_ptr_eq(x, again[i]);
		lc_put(c, x);
	}
	/* once let go, they go too, down to the bound */
	for (int i = 0; i < 40; i++)
		lc_put(c, held[i]);
	for (int i = 0; i < 4; i++)
		lc_put(c, again[i]);
	for (int round = 0; round < 1000 && atomic_load(&c->ninodes) > 10; round++)
		lc_icache_trim(c);
	ck_assert_uint_le(atomic_load(&c->ninodes), 10);
}
END_TEST

/*
 * An evicted inode's lc_irare leaves the byte count (LC_MEM_INODE) when the
 * inode does, not when call_rcu frees it: otherwise a trim's evictions
 * leave their lc_irare counted against the inodes still cached until a
 * grace period ends (test_fuse_memlim's bytes per cached inode read 1,132
 * under ASan).  This thread's read section holds every grace period back.
 */
START_TEST(test_irare_uncounted_with_its_inode)
{
	enum { N = 30 };
	uint64_t n0 = atomic_load(&c->ninodes), m0 = atomic_load(&c->mem[LC_MEM_INODE]), each = 0;

	set_opt("client_cache_size", "10");
	for (int i = 0; i < N; i++) {
		struct mdsp_inode mi = { .ino = 0x7701 + (uint64_t)i, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };
		struct lc_inode *in = lc_inode_update(c, &mi, 0, 0);

		ck_assert_ptr_nonnull(in);
		pthread_mutex_lock(&in->lock);
		ck_assert_ptr_nonnull(lc_rare_locked(in));   /* as an open's kernel cache key makes it */
		each = lc_mem_size(in) + lc_mem_size(in->rare);
		pthread_mutex_unlock(&in->lock);
		lc_put(c, in);
	}
	ck_assert_uint_eq(atomic_load(&c->mem[LC_MEM_INODE]) - m0, N * each);
	rcu_read_lock();
	uint64_t e0 = perf_get(&c->perf.ino_evicted);
	for (int round = 0; round < 1000 && atomic_load(&c->ninodes) > 10; round++)
		lc_icache_trim(c);
	uint64_t left = atomic_load(&c->ninodes) - n0, mem = atomic_load(&c->mem[LC_MEM_INODE]) - m0;
	rcu_read_unlock();
	ck_assert_uint_ge(perf_get(&c->perf.ino_evicted) - e0, N - 10);
	ck_assert_msg(mem == left * each, "%" PRIu64 " bytes counted for %" PRIu64 " inodes of %" PRIu64 " (%" PRIu64
		      " of them evicted)", mem, left, each, (uint64_t)N - left);
}
END_TEST

/* the lease @name of @dir is cached under (the dump's word), 0 if none */
static uint64_t dump_lease_seq(struct lc_inode *dir, const char *name)
{
	struct json_object *arr = lc_dcache_dump_dir(c, dir), *o, *v;
	uint64_t seq = 0;

	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		o = json_object_array_get_idx(arr, i);
		if (json_object_object_get_ex(o, "name", &v) && strcmp(json_object_get_string(v), name) == 0 &&
		    json_object_object_get_ex(o, "lease_seq", &v))
			seq = json_object_get_uint64(v);
	}
	json_object_put(arr);
	return seq;
}

/* a newer lease on a cached name (every listing brings each name under a
 * new one) moves the entry's lease in place: no new entry, nothing
 * allocated; an older one changes nothing; a revoke still keeps the
 * revoked lease's replies out, and the trimmer's drop lets the next grant in */
START_TEST(test_dcache_lease_moves_in_place)
{
	struct mdsp_inode dmi = { .ino = 0xb00, .generation = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	struct mdsp_inode mi = { .ino = 0xb01, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };
	struct lc_inode *dir = lc_inode_update(c, &dmi, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 1);
	struct lc_inode *in = lc_inode_update(c, &mi, 0, 0);
	uint64_t n0, mem0, moved0, ino;

	lc_dcache_add_lease(c, dir, "m", in->ino, 5);
	n0 = atomic_load(&c->ndentries);
	mem0 = atomic_load(&c->mem[LC_MEM_DENTRY]);
	moved0 = perf_get(&c->perf.dn_lease_moved);
	lc_dcache_add_lease(c, dir, "m", in->ino, 9);
	ck_assert_uint_eq(perf_get(&c->perf.dn_lease_moved), moved0 + 1);
	ck_assert_uint_eq(atomic_load(&c->ndentries), n0);
	ck_assert_uint_eq(atomic_load(&c->mem[LC_MEM_DENTRY]), mem0);
	ck_assert_uint_eq(dump_lease_seq(dir, "m"), 9);
	lc_dcache_add_lease(c, dir, "m", in->ino, 7);     /* an older reply applied late */
	ck_assert_uint_eq(dump_lease_seq(dir, "m"), 9);
	ck_assert(lc_dcache_lookup(c, dir, "m", &ino) && ino == in->ino);

	lc_dcache_revoke_lease(c, dir->ino, "m");        /* revokes 9 */
	ck_assert(!lc_dcache_lookup(c, dir, "m", &ino));
	lc_dcache_add_lease(c, dir, "m", in->ino, 9);     /* the revoked lease's reply */
	ck_assert(!lc_dcache_lookup(c, dir, "m", &ino));
	moved0 = perf_get(&c->perf.dn_lease_moved);
	lc_dcache_add_lease(c, dir, "m", in->ino, 10);
	ck_assert(lc_dcache_lookup(c, dir, "m", &ino) && ino == in->ino);
	ck_assert_uint_eq(perf_get(&c->perf.dn_lease_moved), moved0);   /* a new entry, not a move */

	/* another inode under the name: a new entry, not a move */
	mi.ino = 0xb02;
	lc_put(c, in);
	in = lc_inode_update(c, &mi, 0, 0);
	lc_dcache_add_lease(c, dir, "m", in->ino, 11);
	ck_assert_uint_eq(perf_get(&c->perf.dn_lease_moved), moved0);
	ck_assert(lc_dcache_lookup(c, dir, "m", &ino) && ino == 0xb02);
	ck_assert_uint_eq(dump_lease_seq(dir, "m"), 11);
	lc_put(c, in);
	lc_put(c, dir);
}
END_TEST

/* the dentry trim does not walk again and again a table it cannot shrink
 * (every name held by the kernel): not until it grew by an eighth */
START_TEST(test_dcache_trim_waits_for_growth)
{
	static const struct lc_callbacks cb = { .inval_inode = t_inval_inode, .inval_dentry = t_inval_dentry };
	struct mdsp_inode dmi = { .ino = 0xa00, .generation = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	struct lc_inode *dir = lc_inode_update(c, &dmi, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 1);
	uint64_t walks0 = perf_get(&c->perf.dn_trim_walks), w1 = 0;
	char name[16];

	/* (the client's flusher trims too: every count is the same whichever
	 * of the two made the walk) */
	set_opt("client_cache_size", "10");
	set_opt("client_caps_timeout", "30");
	lclient_set_callbacks(c, &cb, NULL);
	for (int i = 0; i < 45; i++) {
		struct mdsp_inode mi = { .ino = 0xa01 + (uint64_t)i, .generation = 1, .mode = S_IFREG | 0644, .nlink = 1 };
		struct lc_inode *in = lc_inode_update(c, &mi, 0, 0);

		snprintf(name, sizeof(name), "k%d", i);
		lc_dcache_add_lease(c, dir, name, in->ino, 1 + (uint64_t)i);
		ck_assert(lc_dentry_timeout(c, dir, name, in) >= 30);   /* the kernel has it */
		lc_put(c, in);
		if (i == 39) {
			lc_dcache_trim(c);            /* walks, frees nothing */
			w1 = perf_get(&c->perf.dn_trim_walks);
			ck_assert_uint_gt(w1, walks0);
			ck_assert_uint_eq(atomic_load(&c->ndentries), 40);
			c->dtrim_ns -= 2000000000ull;  /* past the one-a-second limit */
			lc_dcache_trim(c);            /* 40 < 40 + 40/8: no walk */
			ck_assert_uint_eq(perf_get(&c->perf.dn_trim_walks), w1);
		}
	}
	c->dtrim_ns -= 2000000000ull;
	lc_dcache_trim(c);                            /* 45: grown by an eighth */
	ck_assert_uint_gt(perf_get(&c->perf.dn_trim_walks), w1);
	lclient_set_callbacks(c, NULL, NULL);
	lc_put(c, dir);
}
END_TEST

/* a revoke of a directory's caps (another client's chmod) drops its names
 * here and in the kernel, its negative names and its listing */
START_TEST(test_dir_revoke)
{
	static const struct lc_callbacks cb = { .inval_inode = t_inval_inode, .inval_dentry = t_inval_dentry };
	struct mdsp_inode dmi = { .ino = 0xc00, .generation = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	struct lc_inode *dir = lc_inode_update(c, &dmi, MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED, 1);
	struct mdsp_inode omi = { .ino = 0xd00, .generation = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	struct lc_inode *other = lc_inode_update(c, &omi, 0, 0);
	uint64_t ino;

	lclient_set_callbacks(c, &cb, NULL);
	lc_dcache_add_lease(c, dir, "x", 0xc01, 1);
	lc_dcache_add_lease(c, dir, "y", 0xc02, 2);
	lc_dcache_add(c, dir, "neg", 0);
	lc_dcache_add_lease(c, other, "z", 0xd01, 3);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "neg", &ino), 1);
	struct cap_work w = { .caps = { .op = MDSP_CAPS_REVOKE, .ino = 0xc00, .caps = MDSP_CAP_PIN, .seq = 2 } };
	lc_caps_process(c, &w);
	ck_assert_int_eq(n_inval_inode, 1);
	ck_assert_int_eq(n_inval_dentry, 2);
	ck_assert(strcmp(inval_names[0], "x") == 0 || strcmp(inval_names[1], "x") == 0);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "x", &ino), 0);
	ck_assert_int_eq(lc_dcache_lookup(c, dir, "neg", &ino), 0);
	/* other directories keep theirs */
	ck_assert_int_eq(lc_dcache_lookup(c, other, "z", &ino), 1);
	ck_assert_uint_eq(atomic_load(&c->ndentries), 1);
	lc_put(c, other);
	lc_put(c, dir);
}
END_TEST

START_TEST(test_perm_check)
{
	struct lc_attr a = { .mode = S_IFREG | 0640, .uid = 100, .gid = 200 };
	struct lc_cred owner = { .uid = 100, .gid = 1 }, grp = { .uid = 5, .gid = 7, .ngroups = 1, .groups = { 200 } };
	struct lc_cred other = { .uid = 6, .gid = 6 }, root = { 0 };
	ck_assert_int_eq(lc_perm_check(&a, 6, &owner), 0);
	ck_assert_int_eq(lc_perm_check(&a, 4, &grp), 0);
	ck_assert_int_eq(lc_perm_check(&a, 2, &grp), -EACCES);
	ck_assert_int_eq(lc_perm_check(&a, 4, &other), -EACCES);
	ck_assert_int_eq(lc_perm_check(&a, 6, &root), 0);
	ck_assert_int_eq(lc_perm_check(&a, 1, &root), -EACCES);
}
END_TEST

/* a kept READDIR entry's inode and sequences come back exactly as they were
 * packed (client/rd_pack.h): random words, zeros, equal times, values near
 * UINT64_MAX; and a plain file's entry is the size issue 21.4 counts on */
START_TEST(test_rd_pack_roundtrip)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char buf[RD_PACK_MAX + 16];

	for (int k = 0; k < 20000; k++) {
		struct mdsp_inode mi, back;
		uint64_t w[sizeof(mi) / 8], cs, ls, cs2, ls2;

		for (size_t i = 0; i < sizeof(mi) / 8; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			switch (x % 6) {
			case 0: w[i] = 0; break;
			case 1: w[i] = i >= 2 ? w[i - 2] : 1; break;
			case 2: w[i] = UINT64_MAX - (x >> 60); break;
			case 3: w[i] = x >> (x % 64); break;
			default: w[i] = x;
			}
		}
		memcpy(&mi, w, sizeof(mi));
		cs = k % 3 ? x >> (k % 64) : 0;
		ls = k % 5 ? ~x : 0;
		memset(buf, 0x5a, sizeof(buf));
		size_t n = rd_pack(NULL, cs, ls, &mi);
		ck_assert_uint_le(n, RD_PACK_MAX);
		ck_assert_uint_eq(rd_pack(buf, cs, ls, &mi), n);
		ck_assert_ptr_eq(rd_unpack(buf, &cs2, &ls2, &back), buf + n);
		ck_assert_msg(memcmp(&mi, &back, sizeof(mi)) == 0, "round %d: the inode came back changed", k);
		ck_assert_uint_eq(cs2, cs);
		ck_assert_uint_eq(ls2, ls);
	}

	/* a file as mds_bench --fill makes them: ~60 bytes, not 240 */
	struct mdsp_inode f = {
		.ino = 0x10000012345ull, .generation = 1, .mode = 0100644, .nlink = 1,
		.atime = { 1764900000, 123456789 }, .object_size = 4u << 20,
		.change = 3, .blocks = MDSP_BLOCKS_UNKNOWN, .quota_room = MDSP_QUOTA_UNSAID,
	};
	f.mtime = f.ctime = f.btime = f.atime;
	struct mdsp_inode back;
	uint64_t cs, ls;
	size_t n = rd_pack(buf, 12345, 678, &f);
	ck_assert_msg(n <= 64, "a plain file's entry packs to %zu bytes", n);
	rd_unpack(buf, &cs, &ls, &back);
	ck_assert(memcmp(&f, &back, sizeof(f)) == 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("clientlib_data");
	TCase *tc = tcase_create("data");
	tcase_add_unchecked_fixture(tc, top_setup, top_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_obj_name);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_sparse_and_holes);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_overlapping_writes);
	tcase_add_test(tc, test_dirty_index_random_writes);
	tcase_add_test(tc, test_append);
	tcase_add_test(tc, test_oc_bound);
	tcase_add_test(tc, test_oc_bound_partial_writebacks);
	tcase_add_test(tc, test_seq_stream_whole_objects);
	tcase_add_test(tc, test_small_files_buffer_what_they_hold);
	tcase_add_test(tc, test_appends_after_fsync_count_their_bytes);
	tcase_add_test(tc, test_readahead);
	tcase_add_test(tc, test_readahead_holes_eof);
	tcase_add_test(tc, test_readahead_lent);
	tcase_add_test(tc, test_readahead_window_near_bound);
	tcase_add_test(tc, test_readahead_buffer_reuse);
	tcase_add_test(tc, test_readahead_parallel_readers);
	tcase_add_test(tc, test_read_races_truncate);
	tcase_add_test(tc, test_fsync_one_file);
	tcase_add_test(tc, test_wb_err_per_handle);
	tcase_add_test(tc, test_close_starts_writeback);
	tcase_add_test(tc, test_batched_writes_crash);
	tcase_add_test(tc, test_concurrent_writers);
	tcase_add_test(tc, test_write_through);
	tcase_add_test(tc, test_same_file_concurrent);
	suite_add_tcase(s, tc);
	TCase *tc2 = tcase_create("cache");
	tcase_add_unchecked_fixture(tc2, top_setup, top_teardown);
	tcase_add_checked_fixture(tc2, setup, teardown);
	tcase_add_test(tc2, test_inode_refs_and_trim);
	tcase_add_test(tc2, test_attr_timeout_and_caps);
	tcase_add_test(tc2, test_dentries);
	tcase_add_test(tc2, test_perm_check);
	tcase_add_test(tc2, test_dir_revoke);
	tcase_add_test(tc2, test_dcache_trim_keeps_kernel_names);
	tcase_add_test(tc2, test_icache_trim_lru);
	tcase_add_test(tc2, test_irare_uncounted_with_its_inode);
	tcase_add_test(tc2, test_dcache_trim_waits_for_growth);
	tcase_add_test(tc2, test_dcache_lease_moves_in_place);
	tcase_add_test(tc2, test_rd_pack_roundtrip);
	suite_add_tcase(s, tc2);
	/* the data path's reads against a real cluster (store_rados.sh runs it
	 * with CK_RUN_CASE=rados): lent readahead chunks, over holes, missing
	 * objects and short objects, with readers in parallel and a truncate */
	if (getenv("LOLIGO_STORE_RADOS_CONF")) {
		TCase *tc3 = tcase_create("rados");
		tcase_add_checked_fixture(tc3, setup_rados, teardown);
		tcase_set_timeout(tc3, 120);
		tcase_add_test(tc3, test_readahead);
		tcase_add_test(tc3, test_readahead_lent);
		tcase_add_test(tc3, test_readahead_window_near_bound);
		tcase_add_test(tc3, test_readahead_holes_eof);
		tcase_add_test(tc3, test_readahead_parallel_readers);
		tcase_add_test(tc3, test_read_races_truncate);
		tcase_add_test(tc3, test_sparse_and_holes);
		suite_add_tcase(s, tc3);
	}
	return s;
}

int main(void)
{
	const char *crash_dir = getenv("LC_CRASH_CHILD");

	if (crash_dir) {
		log_init("test_clientlib_data-crash");
		return crash_child(crash_dir);
	}
	log_init("test_clientlib_data");
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
