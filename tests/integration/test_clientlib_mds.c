/*
 * test_clientlib_mds.c - libloligo-client (client.h) against a real
 * loligo-mds started from the build tree on a temporary store and an
 * ephemeral port.
 *
 * The MDS is started once per test case by an unchecked fixture (in the
 * runner process, which kills it and removes the directory in its teardown
 * even when tests fail; the MDS also dies with the runner through
 * PR_SET_PDEATHSIG).  Each test runs in its own forked process with its own
 * client, and works in a directory of its own.
 */
#include <check.h>
#include <json-c/json.h>

#include "tests/test_keyring.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include "client/client.h"
#include "client/client_int.h"
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"
#include "tests/lib/daemon.h"

static char dir[PATH_MAX];
static char conf[PATH_MAX + 32];
static struct lt_mds M;         /* M.dir is dir */

static struct lclient *c;
static struct lc_inode *root;
static const struct lc_cred rootcr = { 0 };

/* runner process: a fresh filesystem and its MDS for the test case */
static void fs_setup(void)
{
	lt_fs_make(&M, "/tmp/lc-mds-XXXXXX", NULL, NULL);  /* says why when it fails; the case then fails on M.port */
	snprintf(dir, sizeof(dir), "%s", M.dir);
	snprintf(conf, sizeof(conf), "%s/loligo.conf", M.dir);
}

static void fs_teardown(void)
{
	lt_fs_remove(&M, NULL);
}

static void set_opt(const char *k, const char *v)
{
	char err[256];
	ck_assert_msg(cfg_set(cfg_lookup(k), v, false, err, sizeof(err)) == 0, "%s=%s: %s", k, v, err);
}

static int client_up(struct lclient **out, struct lc_inode **rt)
{
	int r = lclient_create(out);
	if (r < 0)
		return r;
	r = lclient_mount(*out, NULL);
	if (r < 0) {
		lclient_destroy(*out);
		*out = NULL;
		return r;
	}
	*rt = lc_root(*out);
	return 0;
}

static void client_down(struct lclient **cl, struct lc_inode **rt)
{
	if (*rt)
		lc_put(*cl, *rt);
	*rt = NULL;
	lclient_destroy(*cl);
	*cl = NULL;
}

/* test process: configuration and a mounted client */
static void setup(void)
{
	char err[256], addr[64];

	ck_assert_msg(M.port > 0, "no MDS");
	cfg_init("client");
	ck_assert_msg(cfg_load_file(conf, err, sizeof(err)) == 0, "%s", err);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", M.port);
	set_opt("client_mds_addr", addr);
	set_opt("log_file", "");
	if (getenv("LC_DEBUG"))
		set_opt("debug_client", getenv("LC_DEBUG"));
	ck_assert_int_eq(client_up(&c, &root), 0);
}

static void teardown(void)
{
	if (c)
		client_down(&c, &root);
}

static struct lc_inode *mkdir_p(struct lc_inode *parent, const char *name)
{
	struct lc_inode *d = NULL;
	int r = lc_mkdir(c, parent, name, 0755, &rootcr, NULL, &d);
	if (r == -EEXIST)
		r = lc_lookup(c, parent, name, &rootcr, NULL, &d);
	ck_assert_msg(r == 0, "mkdir %s: %s", name, strerror(-r));
	return d;
}

static unsigned char pat(uint64_t seed, uint64_t off)
{
	uint64_t x = (off + 7) * 0x9e3779b97f4a7c15ull ^ seed;
	return (unsigned char)(x >> 56);
}

static void write_file(struct lc_inode *d, const char *name, uint64_t seed, uint64_t size)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	size_t chunk = 1 << 20;
	unsigned char *b = malloc(chunk);

	ck_assert_int_eq(lc_create(c, d, name, 0644, O_RDWR | O_CREAT | O_TRUNC, &rootcr, NULL, &in, &fh), 0);
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		for (size_t i = 0; i < n; i++)
			b[i] = pat(seed, off + i);
		ck_assert_int_eq(lc_write(c, fh, (off_t)off, n, b), (ssize_t)n);
	}
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	ck_assert_int_eq(lc_release(c, fh), 0);
	lc_put(c, in);
	free(b);
}

static void check_file(struct lc_inode *d, const char *name, uint64_t seed, uint64_t size)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	struct lc_attr a;
	size_t chunk = 300000;
	unsigned char *b = malloc(chunk);
	uint64_t off = 0;

	ck_assert_int_eq(lc_lookup(c, d, name, &rootcr, &a, &in), 0);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, true, &a), 0);
	ck_assert_msg(a.size == size, "%s: MDS size %llu, want %llu", name, (unsigned long long)a.size,
		      (unsigned long long)size);
	ck_assert_int_eq(lc_open(c, in, O_RDONLY, &rootcr, &fh), 0);
	for (;;) {
		ssize_t n = lc_read(c, fh, (off_t)off, chunk, b);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (b[i] != pat(seed, off + (uint64_t)i))
				ck_abort_msg("%s: byte %llu differs", name, (unsigned long long)(off + (uint64_t)i));
		off += (uint64_t)n;
	}
	ck_assert_uint_eq(off, size);
	lc_release(c, fh);
	lc_put(c, in);
	free(b);
}

static const uint64_t sizes[] = { 0, 1, (4u << 20) - 1, (4u << 20) + 1, 20u << 20 };

START_TEST(test_sizes_and_remount)
{
	struct lc_inode *d = mkdir_p(root, "sizes");
	char name[32];

	for (size_t i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%zu", i);
		write_file(d, name, i, sizes[i]);
		check_file(d, name, i, sizes[i]);
	}
	lc_put(c, d);
	/* unmount, mount again: everything comes back from the MDS and the store */
	client_down(&c, &root);
	ck_assert_int_eq(client_up(&c, &root), 0);
	ck_assert_int_eq(lc_lookup(c, root, "sizes", &rootcr, NULL, &d), 0);
	for (size_t i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%zu", i);
		check_file(d, name, i, sizes[i]);
	}
	lc_put(c, d);
}
END_TEST

START_TEST(test_sparse)
{
	struct lc_inode *d = mkdir_p(root, "sparse"), *in;
	struct lc_fh *fh;
	struct lc_attr a;
	char b[4096];

	ck_assert_int_eq(lc_create(c, d, "s", 0644, O_RDWR | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	ck_assert_int_eq(lc_write(c, fh, 30 << 20, 4, "tail"), 4);
	ck_assert_int_eq(lc_write(c, fh, 5000, 4, "head"), 4);
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, true, &a), 0);
	ck_assert_uint_eq(a.size, (30u << 20) + 4);
	ck_assert_int_eq(lc_read(c, fh, 4096, sizeof(b), b), (ssize_t)sizeof(b));
	for (int i = 0; i < 904; i++)
		ck_assert_int_eq(b[i], 0);
	ck_assert(memcmp(b + 904, "head", 4) == 0);
	ck_assert_int_eq(lc_read(c, fh, 20 << 20, sizeof(b), b), (ssize_t)sizeof(b));
	for (size_t i = 0; i < sizeof(b); i++)
		ck_assert_int_eq(b[i], 0);
	/* only the two objects written exist in the data pool */
	char oid[64];
	struct store_stat ss;
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 3);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), -ENOENT);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 7);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), 0);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

/*
 * lc_lseek_data (lseek's SEEK_DATA/SEEK_HOLE) on a file this client just
 * wrote, nothing fsync'd: its own writes count at once (it flushes them
 * first), in 4 KiB granules; the end of the file is a hole, past it ENXIO;
 * other whences and a directory are EINVAL.
 */
START_TEST(test_lseek_data)
{
	struct lc_inode *d = mkdir_p(root, "lseek"), *in;
	struct lc_fh *fh;
	off_t pos;

	ck_assert_int_eq(lc_create(c, d, "s", 0644, O_RDWR | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	ck_assert_int_eq(lc_lseek_data(c, in, 0, SEEK_DATA, &pos), -ENXIO);   /* empty */
	ck_assert_int_eq(lc_write(c, fh, 30 << 20, 4, "tail"), 4);
	ck_assert_int_eq(lc_write(c, fh, 5000, 4, "head"), 4);
	ck_assert_int_eq(lc_lseek_data(c, in, 0, SEEK_DATA, &pos), 0);
	ck_assert_int_eq(pos, 4096);
	ck_assert_int_eq(lc_lseek_data(c, in, 0, SEEK_HOLE, &pos), 0);
	ck_assert_int_eq(pos, 0);
	ck_assert_int_eq(lc_lseek_data(c, in, 5000, SEEK_HOLE, &pos), 0);
	ck_assert_int_eq(pos, 8192);
	ck_assert_int_eq(lc_lseek_data(c, in, 8192, SEEK_DATA, &pos), 0);
	ck_assert_int_eq(pos, 30 << 20);
	ck_assert_int_eq(lc_lseek_data(c, in, 30 << 20, SEEK_HOLE, &pos), 0);
	ck_assert_int_eq(pos, (30 << 20) + 4);   /* the implicit hole at the end */
	ck_assert_int_eq(lc_lseek_data(c, in, (30 << 20) + 4, SEEK_DATA, &pos), -ENXIO);
	ck_assert_int_eq(lc_lseek_data(c, in, (30 << 20) + 4, SEEK_HOLE, &pos), -ENXIO);
	ck_assert_int_eq(lc_lseek_data(c, in, -1, SEEK_DATA, &pos), -ENXIO);
	ck_assert_int_eq(lc_lseek_data(c, in, 0, SEEK_END, &pos), -EINVAL);
	ck_assert_int_eq(lc_lseek_data(c, d, 0, SEEK_DATA, &pos), -EINVAL);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

/*
 * The change attribute (what the NFS gateway reports) moves with every data
 * change this client makes, buffered or not, before the MDS hears of it, and
 * never goes back once the MDS's own change counter moves on.
 */
START_TEST(test_change_attr_moves_with_every_write)
{
	struct lc_inode *d = mkdir_p(root, "change"), *in;
	struct lc_fh *fh;
	struct lc_attr a;
	uint64_t prev;

	ck_assert_int_eq(lc_create(c, d, "f", 0644, O_RDWR | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, false, &a), 0);
	prev = a.change;
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(lc_write(c, fh, i * 10, 4, "data"), 4);
		lc_cached_attr(in, &a);
		ck_assert_msg(a.change > prev, "write %d: change %llu after %llu", i,
			      (unsigned long long)a.change, (unsigned long long)prev);
		prev = a.change;
	}
	ck_assert_int_eq(lc_fallocate(c, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 8), 0);
	lc_cached_attr(in, &a);
	ck_assert_msg(a.change > prev, "punch: change %llu after %llu", (unsigned long long)a.change,
		      (unsigned long long)prev);
	prev = a.change;
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, true, &a), 0);
	ck_assert_msg(a.change >= prev, "after fsync: change %llu went back from %llu",
		      (unsigned long long)a.change, (unsigned long long)prev);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

START_TEST(test_truncate)
{
	struct lc_inode *d = mkdir_p(root, "trunc"), *in;
	struct lc_fh *fh;
	struct lc_attr a, set = { 0 };
	char b[16], oid[64];
	struct store_stat ss;

	write_file(d, "t", 9, 9u << 20);
	ck_assert_int_eq(lc_lookup(c, d, "t", &rootcr, NULL, &in), 0);
	set.size = (1u << 20) + 5;
	ck_assert_int_eq(lc_setattr(c, in, &set, LC_SET_SIZE, &rootcr, &a), 0);
	ck_assert_uint_eq(a.size, (1u << 20) + 5);
	/* 4 MiB objects: object 0 is cut, 1 and 2 are gone */
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 0);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), 0);
	ck_assert_uint_eq(ss.size, (1u << 20) + 5);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 1);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), -ENOENT);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 2);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), -ENOENT);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, true, &a), 0);
	ck_assert_uint_eq(a.size, (1u << 20) + 5);
	/* up: zeros after the old end */
	set.size = 6u << 20;
	ck_assert_int_eq(lc_setattr(c, in, &set, LC_SET_SIZE, &rootcr, &a), 0);
	ck_assert_int_eq(lc_open(c, in, O_RDWR, &rootcr, &fh), 0);
	ck_assert_int_eq(lc_read(c, fh, (1 << 20) + 3, 4, b), 4);
	ck_assert_int_eq((unsigned char)b[0], pat(9, (1 << 20) + 3));
	ck_assert_int_eq((unsigned char)b[1], pat(9, (1 << 20) + 4));
	ck_assert(b[2] == 0 && b[3] == 0);
	ck_assert_int_eq(lc_read(c, fh, (6 << 20) - 2, 16, b), 2);
	lc_release(c, fh);
	/* O_TRUNC on open */
	ck_assert_int_eq(lc_open(c, in, O_WRONLY | O_TRUNC, &rootcr, &fh), 0);
	lc_release(c, fh);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, true, &a), 0);
	ck_assert_uint_eq(a.size, 0);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 0);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), -ENOENT);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

/* @oid no longer exists, within 10 s (the purge thread removes it) */
static bool gone(const char *oid)
{
	struct store_stat ss;
	uint64_t end = now_mono_ns() + 10000000000ull;

	while (store_stat(c->data, oid, &ss) == 0 && now_mono_ns() < end)
		usleep(10000);
	return store_stat(c->data, oid, &ss) == -ENOENT;
}

START_TEST(test_unlink_drops_data)
{
	struct lc_inode *d = mkdir_p(root, "purge"), *in;
	struct lc_fh *fh;
	char oid[64], b[8];
	struct store_stat ss;

	/* the purge thread removes them: soon, not in the caller */
	write_file(d, "gone", 3, 9u << 20);
	ck_assert_int_eq(lc_lookup(c, d, "gone", &rootcr, NULL, &in), 0);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 2);
	ck_assert_int_eq(store_stat(c->data, oid, &ss), 0);
	ck_assert_int_eq(lc_unlink(c, d, "gone", &rootcr), 0);
	ck_assert_msg(gone(oid), "%s still exists 10 s after the last link went", oid);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 0);
	ck_assert_msg(gone(oid), "%s still exists 10 s after the last link went", oid);
	lc_put(c, in);

	/* unlinked while open: readable until the last close */
	write_file(d, "open", 4, 100);
	ck_assert_int_eq(lc_lookup(c, d, "open", &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_open(c, in, O_RDONLY, &rootcr, &fh), 0);
	ck_assert_int_eq(lc_unlink(c, d, "open", &rootcr), 0);
	ck_assert_int_eq(lc_read(c, fh, 10, 4, b), 4);
	ck_assert_int_eq((unsigned char)b[0], pat(4, 10));
	lc_release(c, fh);
	/* the MDS purges it once it sees the last close (a tick later) */
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 0);
	ck_assert_msg(gone(oid), "%s still exists 10 s after the last link went", oid);
	lc_put(c, in);

	/* unlinked while open with data not written back yet: its last close
	 * writes none of it back (the data is purged right after), and none
	 * of it reaches the store */
	{
		static char big[1 << 20];
		uint64_t wb0;

		memset(big, 'd', sizeof(big));
		ck_assert_int_eq(lc_create(c, d, "dirty", 0644, O_WRONLY | O_CREAT, &rootcr, NULL, &in, &fh), 0);
		ck_assert_int_eq(lc_write(c, fh, 0, sizeof(big), big), (ssize_t)sizeof(big));
		ck_assert_int_eq(lc_unlink(c, d, "dirty", &rootcr), 0);
		wb0 = perf_get(&c->perf.wb_bytes);
		ck_assert_int_eq(lc_release(c, fh), 0);
		ck_assert_msg(perf_get(&c->perf.wb_bytes) == wb0,
			      "the last close of an unlinked file wrote back %llu bytes of its purged data",
			      (unsigned long long)(perf_get(&c->perf.wb_bytes) - wb0));
		lc_obj_name(oid, sizeof(oid), lc_ino(in), 0);
		ck_assert_msg(gone(oid), "%s still exists 10 s after the last close of an unlinked file", oid);
		lc_put(c, in);
	}

	/* replaced by a rename */
	write_file(d, "old", 5, 100);
	write_file(d, "new", 6, 100);
	ck_assert_int_eq(lc_lookup(c, d, "old", &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_rename(c, d, "new", d, "old", 0, &rootcr), 0);
	lc_obj_name(oid, sizeof(oid), lc_ino(in), 0);
	ck_assert_msg(gone(oid), "%s still exists 10 s after the last link went", oid);
	check_file(d, "old", 6, 100);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST


/*
 * Names made and removed at once in a directory this client holds Dc on:
 * the unlink (rmdir) is answered here before the MDS's reply to the create
 * (mkdir) came back, and that late reply must not bring the name back.
 */
START_TEST(test_async_unlink_right_after_create)
{
	struct lc_inode *d = mkdir_p(root, "quick"), *in, *x;
	uint64_t u0 = perf_get(&c->perf.async_unlinks), r0 = perf_get(&c->perf.async_rmdirs);
	struct lc_fh *fh;
	char name[32];
	int i;

	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lc_create(c, d, name, 0644, O_WRONLY | O_CREAT | O_EXCL, &rootcr, NULL, &in, &fh), 0);
		ck_assert_int_eq(lc_release(c, fh), 0);
		lc_put(c, in);
		ck_assert_int_eq(lc_unlink(c, d, name, &rootcr), 0);
		ck_assert_msg(lc_lookup(c, d, name, &rootcr, NULL, &x) == -ENOENT, "%s is back after its unlink", name);
		snprintf(name, sizeof(name), "d%d", i);
		ck_assert_int_eq(lc_mkdir(c, d, name, 0755, &rootcr, NULL, &in), 0);
		lc_put(c, in);
		ck_assert_int_eq(lc_rmdir(c, d, name, &rootcr), 0);
		ck_assert_msg(lc_lookup(c, d, name, &rootcr, NULL, &x) == -ENOENT, "%s is back after its rmdir", name);
	}
	ck_assert_uint_ge(perf_get(&c->perf.async_unlinks) - u0, 200);
	ck_assert_uint_ge(perf_get(&c->perf.async_rmdirs) - r0, 200);
	ck_assert_int_eq(lc_wait_unsafe(c, d), 0);
	/* and once every reply is in */
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_msg(lc_lookup(c, d, name, &rootcr, NULL, &x) == -ENOENT, "%s is back after the replies", name);
		snprintf(name, sizeof(name), "d%d", i);
		ck_assert_msg(lc_lookup(c, d, name, &rootcr, NULL, &x) == -ENOENT, "%s is back after the replies", name);
	}
	lc_put(c, d);
}
END_TEST

/* size and mtime reach the MDS without a close: on fsync and periodically */
START_TEST(test_size_reports)
{
	struct lc_inode *d = mkdir_p(root, "reports"), *in;
	struct lc_fh *fh;
	struct lc_attr a;
	char buf[4096];

	set_opt("client_flush_interval", "0.2");
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(lc_create(c, d, "f", 0644, O_RDWR | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	ck_assert_int_eq(lc_write(c, fh, 0, sizeof(buf), buf), (ssize_t)sizeof(buf));
	/* the writer sees its own size at once */
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, false, &a), 0);
	ck_assert_uint_eq(a.size, sizeof(buf));
	/* the MDS learns it within a few flush intervals, with no close */
	uint64_t end = now_mono_ns() + 5000000000ull, mds_size = 0;
	while (now_mono_ns() < end) {
		ck_assert_int_eq(lc_getattr(c, in, &rootcr, true, &a), 0);
		pthread_mutex_lock(&in->lock);
		mds_size = in->mi.size;
		pthread_mutex_unlock(&in->lock);
		if (mds_size == sizeof(buf))
			break;
		usleep(50000);
	}
	ck_assert_uint_eq(mds_size, sizeof(buf));
	ck_assert_uint_gt(perf_get(&c->perf.size_reports), 0);
	/* fsync: reported and SAFE before it returns */
	set_opt("client_flush_interval", "60");
	ck_assert_int_eq(lc_write(c, fh, 100000, 10, buf), 10);
	ck_assert_int_eq(lc_fsync(c, fh, false), 0);
	pthread_mutex_lock(&in->lock);
	mds_size = in->mi.size;
	pthread_mutex_unlock(&in->lock);
	ck_assert_uint_eq(mds_size, 100010);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

START_TEST(test_rename_and_links)
{
	struct lc_inode *a = mkdir_p(root, "ra"), *b = mkdir_p(root, "rb"), *in, *x;
	struct lc_attr at;
	char buf[64];

	write_file(a, "f", 1, 1000);
	write_file(b, "other", 2, 10);
	ck_assert_int_eq(lc_rename(c, a, "f", b, "g", 0, &rootcr), 0);
	ck_assert_int_eq(lc_lookup(c, a, "f", &rootcr, NULL, &x), -ENOENT);
	check_file(b, "g", 1, 1000);
	ck_assert_int_eq(lc_rename(c, b, "g", b, "other", MDSP_RENAME_NOREPLACE, &rootcr), -EEXIST);
	ck_assert_int_eq(lc_rename(c, b, "g", b, "other", MDSP_RENAME_EXCHANGE, &rootcr), 0);
	check_file(b, "g", 2, 10);
	check_file(b, "other", 1, 1000);
	/* rename over an existing file */
	ck_assert_int_eq(lc_rename(c, b, "g", a, "f", 0, &rootcr), 0);
	check_file(a, "f", 2, 10);
	ck_assert_int_eq(lc_lookup(c, b, "g", &rootcr, NULL, &x), -ENOENT);

	/* hard link */
	ck_assert_int_eq(lc_lookup(c, b, "other", &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_link(c, in, a, "hard", &rootcr, &at), 0);
	ck_assert_uint_eq(at.nlink, 2);
	check_file(a, "hard", 1, 1000);
	ck_assert_int_eq(lc_unlink(c, b, "other", &rootcr), 0);
	ck_assert_int_eq(lc_getattr(c, in, &rootcr, false, &at), 0);
	ck_assert_uint_eq(at.nlink, 1);
	check_file(a, "hard", 1, 1000);
	lc_put(c, in);

	/* symlink */
	ck_assert_int_eq(lc_symlink(c, a, "sym", "../rb/target", &rootcr, &at, &in), 0);
	ck_assert(S_ISLNK(at.mode));
	ck_assert_int_eq(lc_readlink(c, in, buf, sizeof(buf), &rootcr), 12);
	ck_assert_str_eq(buf, "../rb/target");
	ck_assert_int_eq(lc_readlink(c, in, buf, sizeof(buf), &rootcr), 12); /* cached */
	lc_put(c, in);

	/* rmdir */
	struct lc_inode *e = mkdir_p(b, "empty");
	lc_put(c, e);
	ck_assert_int_eq(lc_rmdir(c, root, "ra", &rootcr), -ENOTEMPTY);
	ck_assert_int_eq(lc_rmdir(c, b, "empty", &rootcr), 0);
	ck_assert_int_eq(lc_lookup(c, b, "empty", &rootcr, NULL, &x), -ENOENT);
	/* lookup_parent, lookup_ino */
	ck_assert_int_eq(lc_lookup_parent(c, a, NULL, &x), 0);
	ck_assert_uint_eq(lc_ino(x), lc_ino(root));
	lc_put(c, x);
	/* the parent's trace names the child: it must not become a dentry to the parent */
	ck_assert_int_eq(lc_lookup(c, root, "ra", &rootcr, NULL, &x), 0);
	ck_assert_ptr_eq(x, a);
	lc_put(c, x);
	struct lc_inode *sub = mkdir_p(a, "deeper");
	ck_assert_int_eq(lc_lookup_parent(c, sub, NULL, &x), 0);
	ck_assert_ptr_eq(x, a);
	lc_put(c, x);
	ck_assert_int_eq(lc_lookup(c, a, "deeper", &rootcr, NULL, &x), 0);
	ck_assert_ptr_eq(x, sub);
	lc_put(c, x);
	lc_put(c, sub);
	ck_assert_int_eq(lc_getattr(c, a, &rootcr, false, &at), 0);
	ck_assert_int_eq(lc_lookup_ino(c, lc_ino(a), at.generation, NULL, &x), 0);
	ck_assert_ptr_eq(x, a);
	lc_put(c, x);
	ck_assert_int_eq(lc_lookup_ino(c, lc_ino(a), at.generation + 1, NULL, &x), -ESTALE);
	lc_put(c, a);
	lc_put(c, b);
}
END_TEST

struct rd_state {
	int n, stop_every, in_call;
	uint64_t last_cookie;
	char **names;
	bool plus;
};

static int rd_cb(void *arg, const char *name, struct lc_inode *in, const struct lc_attr *attr, uint64_t next)
{
	struct rd_state *s = arg;

	if (s->in_call >= s->stop_every)
		return 1;
	if (s->plus) {
		ck_assert_ptr_nonnull(in);
		ck_assert_uint_eq(lc_ino(in), attr->ino);
		lc_put(c, in);
	}
	s->names[s->n++] = strdup(name);
	s->in_call++;
	s->last_cookie = next;
	return 0;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

START_TEST(test_readdir_5000)
{
	struct lc_inode *d = mkdir_p(root, "big"), *in;
	struct lc_fh *fh;
	char name[32];
	const int N = 5000;

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "file%05d", i);
		ck_assert_int_eq(lc_create(c, d, name, 0644, O_WRONLY | O_CREAT | O_EXCL, &rootcr, NULL, &in, &fh), 0);
		lc_release(c, fh);
		lc_put(c, in);
	}
	for (int plus = 0; plus < 2; plus++) {
		struct rd_state s = { .stop_every = plus ? 173 : 1000, .names = calloc(N + 1, sizeof(char *)),
				      .plus = plus };
		bool eof = false;
		uint64_t cookie = 0;
		int calls = 0;
		while (!eof) {
			s.in_call = 0;
			ck_assert_int_eq(lc_readdir(c, d, cookie, plus, &rootcr, rd_cb, &s, &eof), 0);
			cookie = s.last_cookie;
			ck_assert_int_le(s.n, N);
			ck_assert_int_lt(++calls, 1000);
		}
		ck_assert_int_eq(s.n, N);
		qsort(s.names, (size_t)s.n, sizeof(char *), cmpstr);
		for (int i = 0; i < N; i++) {
			snprintf(name, sizeof(name), "file%05d", i);
			ck_assert_str_eq(s.names[i], name);
			free(s.names[i]);
		}
		free(s.names);
	}
	/* readdirplus filled the caches: the lookups that follow are hits */
	uint64_t hits = perf_get(&c->perf.dentry_hit);
	for (int i = 0; i < N; i += 50) {
		snprintf(name, sizeof(name), "file%05d", i);
		ck_assert_int_eq(lc_lookup(c, d, name, &rootcr, NULL, &in), 0);
		lc_put(c, in);
	}
	ck_assert_uint_ge(perf_get(&c->perf.dentry_hit) - hits, 90);
	/* paging through cached batches does not refetch what it has */
	ck_assert_uint_le(perf_get(&c->perf.readdir_fetch), 12);
	/* ... and each batch after the first was asked for while the listing
	 * went through the one before (two listings of 5 batches) */
	ck_assert_uint_ge(perf_get(&c->perf.readdir_prefetched), 8);
	/* a removed name is gone from the next listing */
	ck_assert_int_eq(lc_unlink(c, d, "file00042", &rootcr), 0);
	struct rd_state s = { .stop_every = N, .names = calloc(N + 1, sizeof(char *)) };
	bool eof = false;
	ck_assert_int_eq(lc_readdir(c, d, 0, false, &rootcr, rd_cb, &s, &eof), 0);
	ck_assert(eof);
	ck_assert_int_eq(s.n, N - 1);
	for (int i = 0; i < s.n; i++) {
		ck_assert_str_ne(s.names[i], "file00042");
		free(s.names[i]);
	}
	free(s.names);
	lc_put(c, d);
}
END_TEST

struct cw {
	struct lc_inode *d;
	int i;
};

static void *cwriter(void *p)
{
	struct cw *w = p;
	char name[32];
	snprintf(name, sizeof(name), "w%d", w->i);
	write_file(w->d, name, 100 + (uint64_t)w->i, 6u << 20);
	return NULL;
}

START_TEST(test_concurrent_writers)
{
	struct lc_inode *d = mkdir_p(root, "cw");
	pthread_t t[4];
	struct cw w[4];
	char name[32];

	for (int i = 0; i < 4; i++) {
		w[i].d = d;
		w[i].i = i;
		pthread_create(&t[i], NULL, cwriter, &w[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		check_file(d, name, 100 + (uint64_t)i, 6u << 20);
	}
	lc_put(c, d);
}
END_TEST

START_TEST(test_permissions_and_xattrs)
{
	struct lc_inode *d = mkdir_p(root, "perm"), *in, *x;
	struct lc_fh *fh;
	struct lc_cred user = { .uid = 1000, .gid = 1000 };
	char buf[64];

	/* a user may not create in a root-owned 0755 directory */
	ck_assert_int_eq(lc_create(c, d, "nope", 0644, O_WRONLY | O_CREAT, &user, NULL, &x, &fh), -EACCES);
	write_file(d, "secret", 5, 10);
	ck_assert_int_eq(lc_lookup(c, d, "secret", &rootcr, NULL, &in), 0);
	struct lc_attr set = { .mode = 0600 };
	ck_assert_int_eq(lc_setattr(c, in, &set, LC_SET_MODE, &rootcr, NULL), 0);
	ck_assert_int_eq(lc_open(c, in, O_RDONLY, &user, &fh), -EACCES);
	ck_assert_int_eq(lc_access(c, in, R_OK, &user), -EACCES);
	ck_assert_int_eq(lc_access(c, in, R_OK, &rootcr), 0);
	/* search permission is checked on cached lookups too */
	struct lc_attr dset = { .mode = 0700 };
	ck_assert_int_eq(lc_setattr(c, d, &dset, LC_SET_MODE, &rootcr, NULL), 0);
	ck_assert_int_eq(lc_lookup(c, d, "secret", &user, NULL, &x), -EACCES);

	ck_assert_int_eq(lc_setxattr(c, in, "user.color", "blue", 4, 0, &rootcr), 0);
	ck_assert_int_eq(lc_getxattr(c, in, "user.color", NULL, 0, &rootcr), 4);
	ck_assert_int_eq(lc_getxattr(c, in, "user.color", buf, sizeof(buf), &rootcr), 4);
	ck_assert(memcmp(buf, "blue", 4) == 0);
	ck_assert_int_eq(lc_getxattr(c, in, "user.color", buf, 2, &rootcr), -ERANGE);
	ssize_t n = lc_listxattr(c, in, buf, sizeof(buf), &rootcr);
	ck_assert_int_eq(n, 11);
	ck_assert_str_eq(buf, "user.color");
	ck_assert_int_eq(lc_removexattr(c, in, "user.color", &rootcr), 0);
	ck_assert_int_lt(lc_getxattr(c, in, "user.color", buf, sizeof(buf), &rootcr), 0);

	struct statvfs sv;
	ck_assert_int_eq(lc_statfs(c, root, &sv), 0);
	ck_assert_uint_gt(sv.f_namemax, 0);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

START_TEST(test_mountpoint_and_dead_mds)
{
	struct lc_inode *d = mkdir_p(root, "sub"), *in;
	struct lc_fh *fh;

	ck_assert_int_eq(lc_create(c, d, "inside", 0644, O_WRONLY | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
	/* a second client process cannot share the local data store: a clear error */
	{
		struct lclient *c2 = NULL;
		struct lc_inode *r2 = NULL;
		ck_assert_int_eq(client_up(&c2, &r2), -EBUSY);
	}
	client_down(&c, &root);

	/* client_mountpoint makes /sub the root */
	set_opt("client_mountpoint", "/sub");
	ck_assert_int_eq(client_up(&c, &root), 0);
	ck_assert_int_eq(lc_lookup(c, root, "inside", &rootcr, NULL, &in), 0);
	lc_put(c, in);
	ck_assert_int_eq(lc_lookup_parent(c, root, NULL, &in), 0);
	ck_assert_ptr_eq(in, root);
	lc_put(c, in);
	client_down(&c, &root);
	set_opt("client_mountpoint", "/nonexistent");
	ck_assert_int_eq(client_up(&c, &root), -ENOENT);

	/* nothing listens: a clear error, in bounded time */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
	close(s);
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
	set_opt("client_mountpoint", "/");
	set_opt("client_mds_addr", addr);
	set_opt("client_mount_timeout", "1.5");
	uint64_t t0 = now_mono_ns();
	int r = client_up(&c, &root);
	uint64_t ms = (now_mono_ns() - t0) / 1000000;
	ck_assert_msg(r == -ECONNREFUSED || r == -ETIMEDOUT, "mount against a dead MDS: %d", r);
	ck_assert_msg(ms < 6000, "took %llu ms", (unsigned long long)ms);
}
END_TEST

/* A client keyring at @path for @name, with caps @caps, made on the running MDS (auth get-or-create). */
static void tenant_key(const char *name, const char *caps, const char *path)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	struct mdsp_keyring kr = { 0 };
	uint8_t key[MDSP_KEY_LEN];
	char sock[PATH_MAX + 16], err[512];

	snprintf(sock, sizeof(sock), "%s/mds.asok", dir);
	json_object_object_add(req, "prefix", json_object_new_string("auth get-or-create"));
	json_object_object_add(req, "entity", json_object_new_string(name));
	json_object_object_add(req, "caps", json_object_new_string(caps));
	ck_assert_int_eq(asok_request(sock, req, &rep, 10000), 0);
	json_object_put(req);
	ck_assert_msg(json_object_object_get_ex(rep, "key", &v), "%s", json_object_to_json_string(rep));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);
	ck_assert_int_eq(mdsp_keyring_add(&kr, name, key), 0);
	ck_assert_msg(mdsp_keyring_save(path, &kr, err, sizeof(err)) == 0, "%s", err);
	mdsp_keyring_free(&kr);
}

/* A tenant key limited to /home/alice mounts /home/alice (client_mountpoint)
 * and works there; a mount of / or of /home/bob fails with EACCES, and the
 * client says which cap is missing. */
START_TEST(test_tenant_mount)
{
	struct lc_inode *home = mkdir_p(root, "home"), *alice = mkdir_p(home, "alice"), *bob = mkdir_p(home, "bob");
	struct lc_inode *in;
	struct lc_fh *fh;
	char kr[PATH_MAX + 32], logf[PATH_MAX + 32], line[1024];
	bool said = false;
	FILE *f;

	lc_put(c, alice);
	lc_put(c, bob);
	lc_put(c, home);
	client_down(&c, &root);
	snprintf(kr, sizeof(kr), "%s/alice.keyring", dir);
	tenant_key("client.alice", "allow rw path=/home/alice", kr);
	set_opt("client_auth_name", "client.alice");
	set_opt("client_keyring", kr);
	set_opt("client_mountpoint", "/home/alice");
	ck_assert_int_eq(client_up(&c, &root), 0);
	ck_assert_int_eq(lc_create(c, root, "mine", 0644, O_WRONLY | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	lc_release(c, fh);
	lc_put(c, in);
	ck_assert_int_eq(lc_lookup(c, root, "mine", &rootcr, NULL, &in), 0);
	lc_put(c, in);
	/* ".." of its root is its root, as any mount's */
	ck_assert_int_eq(lc_lookup_parent(c, root, NULL, &in), 0);
	ck_assert_ptr_eq(in, root);
	lc_put(c, in);
	client_down(&c, &root);

	snprintf(logf, sizeof(logf), "%s/tenant.log", dir);
	set_opt("log_file", logf);
	set_opt("client_mountpoint", "/");
	ck_assert_int_eq(client_up(&c, &root), -EACCES);
	set_opt("client_mountpoint", "/home/bob");
	ck_assert_int_eq(client_up(&c, &root), -EACCES);
	set_opt("log_file", "");
	f = fopen(logf, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		said |= strstr(line, "client_mountpoint /home/bob") && strstr(line, "allow r[w] path=/home/bob");
	fclose(f);
	ck_assert_msg(said, "the client did not say which cap /home/bob needs (%s)", logf);
}
END_TEST

/* lc_notify_*: what another frontend changed reaches the registered
 * callbacks; the library's own operations never call them (one client, no
 * cap revokes), so FUSE keeps its caches across its own writes. */
struct notify_rec {
	pthread_mutex_t lock;
	int ninode, nentry;
	uint64_t ino, parent;
	off_t off, len;
	char name[64];
};

static void rec_inode(void *arg, uint64_t ino, off_t off, off_t len)
{
	struct notify_rec *r = arg;

	pthread_mutex_lock(&r->lock);
	r->ninode++;
	r->ino = ino;
	r->off = off;
	r->len = len;
	pthread_mutex_unlock(&r->lock);
}

static void rec_dentry(void *arg, uint64_t parent, const char *name)
{
	struct notify_rec *r = arg;

	pthread_mutex_lock(&r->lock);
	r->nentry++;
	r->parent = parent;
	snprintf(r->name, sizeof(r->name), "%s", name);
	pthread_mutex_unlock(&r->lock);
}

START_TEST(test_notify)
{
	static const struct lc_callbacks cbs = { .inval_inode = rec_inode, .inval_dentry = rec_dentry };
	struct notify_rec rec = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct lc_inode *d, *in;
	struct lc_fh *fh;
	struct lc_attr a = { .size = 3, .mode = 0600 };

	lclient_set_callbacks(c, &cbs, &rec);
	d = mkdir_p(root, "notify");
	ck_assert_int_eq(lc_create(c, d, "f", 0644, O_RDWR | O_CREAT, &rootcr, NULL, &in, &fh), 0);
	ck_assert_int_eq(lc_write(c, fh, 0, 5, "hello"), 5);
	ck_assert_int_eq(lc_wb_flush(c, fh->in), 0);
	ck_assert_int_eq(lc_setattr(c, in, &a, LC_SET_SIZE | LC_SET_MODE, &rootcr, NULL), 0);
	ck_assert_int_eq(lc_rename(c, d, "f", d, "g", 0, &rootcr), 0);
	ck_assert_int_eq(lc_link(c, in, d, "h", &rootcr, NULL), 0);
	ck_assert_int_eq(lc_unlink(c, d, "h", &rootcr), 0);
	ck_assert_msg(rec.ninode == 0 && rec.nentry == 0, "own operations called the callbacks (%d inode, %d entry)",
		      rec.ninode, rec.nentry);

	lc_notify_inode(c, in, 4096, 100);
	ck_assert_int_eq(rec.ninode, 1);
	ck_assert_uint_eq(rec.ino, lc_ino(in));
	ck_assert_int_eq(rec.off, 4096);
	ck_assert_int_eq(rec.len, 100);
	lc_notify_inode(c, d, -1, 0);
	ck_assert_int_eq(rec.ninode, 2);
	ck_assert_uint_eq(rec.ino, lc_ino(d));
	ck_assert_int_eq(rec.off, -1);
	lc_notify_entry(c, d, "g");
	ck_assert_int_eq(rec.nentry, 1);
	ck_assert_uint_eq(rec.parent, lc_ino(d));
	ck_assert_str_eq(rec.name, "g");

	/* no callbacks registered: a no-op */
	lclient_set_callbacks(c, NULL, NULL);
	lc_notify_inode(c, in, 0, 0);
	lc_notify_entry(c, d, "g");
	ck_assert_int_eq(rec.ninode, 2);
	ck_assert_int_eq(rec.nentry, 1);

	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("clientlib_mds");
	TCase *tc = tcase_create("mds");
	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sizes_and_remount);
	tcase_add_test(tc, test_sparse);
	tcase_add_test(tc, test_lseek_data);
	tcase_add_test(tc, test_change_attr_moves_with_every_write);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_rename_and_links);
	tcase_add_test(tc, test_unlink_drops_data);
	tcase_add_test(tc, test_async_unlink_right_after_create);
	tcase_add_test(tc, test_size_reports);
	tcase_add_test(tc, test_readdir_5000);
	tcase_add_test(tc, test_concurrent_writers);
	tcase_add_test(tc, test_permissions_and_xattrs);
	tcase_add_test(tc, test_notify);
	tcase_add_test(tc, test_mountpoint_and_dead_mds);
	tcase_add_test(tc, test_tenant_mount);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	log_init("test_clientlib_mds");
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
