/*
 * test_clientlib_crash.c - libloligo-client against a loligo-mds killed -9
 * between UNSAFE and SAFE: nothing the client was told is lost, nothing
 * runs twice.
 *
 * Each case starts a fresh filesystem, mounts a client, makes one change
 * SAFE (so the MDS's ino allocator has a durable reservation, as in any
 * filesystem in use), and then holds the MDS journal (the mds_journal_hold test hook, set over the admin socket):
 * the operations of the case are applied and answered UNSAFE, and none is
 * written.  The MDS is killed -9 in that window and restarted on the same
 * port; the client reconnects and replays.  The case then goes on writing
 * through the file handle it opened before the crash and fsyncs it.  To
 * check that fsync promised only what is durable, the journal is held again
 * the moment fsync returns and the MDS is killed -9 a second time; the
 * client is torn down while it is down (so it cannot replay anything more),
 * and a fresh client on the restarted MDS checks what a user would see:
 * the same inode numbers, the data written before and after the crash, the
 * names, link counts and modes, and no change applied twice.
 *
 * The MDS dies with the test process (PR_SET_PDEATHSIG); each case has its
 * own temp dir below the suite's, removed at the end.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "client/client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"

static char parent_dir[256];
static struct mdsproc P;
static struct lclient *C;
static struct lc_inode *R;
static const struct lc_cred CR = { 0 };

/* ---- the daemon and the client ------------------------------------------- */

static void set_opt(const char *k, const char *v)
{
	char err[256];

	ck_assert_msg(cfg_set(cfg_lookup(k), v, false, err, sizeof(err)) == 0, "%s=%s: %s", k, v, err);
}

static void client_up(void)
{
	char addr[64], path[600];

	cfg_init("client");
	snprintf(path, sizeof(path), "%s/store", P.dir);
	set_opt("store_backend", "local");
	set_opt("store_local_path", path);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", P.port);
	set_opt("client_mds_addr", addr);
	snprintf(path, sizeof(path), "%s/client.keyring", P.dir);      /* written by mdsproc_init */
	set_opt("client_keyring", path);
	snprintf(path, sizeof(path), "%s/client.log", P.dir);
	set_opt("log_file", path);
	set_opt("client_mount_timeout", "20");
	set_opt("client_reconnect_backoff_max", "0.2");
	if (getenv("LC_DEBUG"))
		set_opt("debug_client", getenv("LC_DEBUG"));
	ck_assert_int_eq(lclient_create(&C), 0);
	ck_assert_int_eq(lclient_mount(C, NULL), 0);
	R = lc_root(C);
}

static void client_down(void)
{
	if (R)
		lc_put(C, R);
	R = NULL;
	lclient_destroy(C);
	C = NULL;
}

/* a fresh filesystem; @extra: another --key=value for the MDS, or NULL */
static void fs_up(const char *extra)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	/* a restored session that never comes back must not stall the checks long */
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=3");
	if (extra)
		snprintf(P.extra[P.nextra++], 256, "%s", extra);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	client_up();
}

static void teardown(void)
{
	if (C)
		client_down();
	mdsproc_cleanup(&P);
}

/* the mds_journal_hold test hook: nothing is journaled while it is on */
static void hold(bool on)
{
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_journal_hold", on ? "true" : "false"), 0);
}

/* start the MDS again on the port it had (the client knows only that one) */
static void restart(void)
{
	int i, port = P.port;

	for (i = 0; i < P.nextra; i++)
		if (!strncmp(P.extra[i], "--mds_port=", 11))
			break;
	if (i == P.nextra)
		P.nextra++;
	snprintf(P.extra[i], 256, "--mds_port=%d", port);
	setenv("LOLIGO_TEST_MDS_PORT_FIXED", "1", 1);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	unsetenv("LOLIGO_TEST_MDS_PORT_FIXED");
	ck_assert_int_eq(P.port, port);
}

static void kill9(void)
{
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
}

static uint64_t window_tid;

/*
 * Open the UNSAFE window: one SAFE change first (a directory "pre"), so the
 * MDS has made its ino allocations durable once, as any filesystem in use
 * has; then hold the journal.
 */
static void window_open(void)
{
	struct lc_inode *pre;

	ck_assert_int_eq(lc_mkdir(C, R, "pre", 0755, &CR, NULL, &pre), 0);
	lc_put(C, pre);
	ck_assert_int_eq(lc_sync_fs(C), 0);
	hold(true);
	window_tid = mdsc_last_tid(C->mdsc) + 1;
}

/* kill -9 the MDS inside the window and restart it */
static void crash(void)
{
	/* the window held: the first change made in it is still not SAFE */
	ck_assert_uint_le(mdsc_oldest_tid(C->mdsc), window_tid);
	kill9();
	restart();
}

/*
 * fsync returned: hold the journal at once (nothing more becomes durable),
 * kill -9, take the client down while the MDS is down (it cannot replay
 * anything more), restart, mount a fresh client.
 */
static void crash_after_fsync_and_remount(void)
{
	uint64_t end;

	hold(true);
	kill9();
	/* let the client see the connection go, so teardown does not wait on it */
	for (end = now_mono_ns() + 5000000000ull; mdsc_is_open(C->mdsc) && now_mono_ns() < end;)
		usleep(10000);
	client_down();
	restart();
	client_up();
}

/* ---- file helpers ------------------------------------------------------------ */

static unsigned char pat(uint64_t seed, uint64_t off)
{
	uint64_t x = (off + 7) * 0x9e3779b97f4a7c15ull ^ seed;

	return (unsigned char)(x >> 56);
}

static void put_pat(struct lc_fh *fh, uint64_t seed, uint64_t off, size_t n)
{
	unsigned char *b = malloc(n);
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = pat(seed, off + i);
	ck_assert_int_eq(lc_write(C, fh, (off_t)off, n, b), (ssize_t)n);
	free(b);
}

static uint64_t ino_of(struct lc_inode *dir, const char *name, struct lc_attr *a)
{
	struct lc_inode *in;
	struct lc_attr tmp;
	uint64_t ino;
	int r = lc_lookup(C, dir, name, &CR, a ? a : &tmp, &in);

	ck_assert_msg(r == 0, "lookup %s: %s", name, strerror(-r));
	ino = lc_ino(in);
	lc_put(C, in);
	return ino;
}

static struct lc_inode *get(struct lc_inode *dir, const char *name)
{
	struct lc_inode *in;
	int r = lc_lookup(C, dir, name, &CR, NULL, &in);

	ck_assert_msg(r == 0, "lookup %s: %s", name, strerror(-r));
	return in;
}

/* what the fresh client sees of a file: its size and every byte */
static void check_content(struct lc_inode *dir, const char *name, uint64_t seed, uint64_t size)
{
	struct lc_inode *in = get(dir, name);
	unsigned char *b = malloc(size + 1);
	struct lc_attr a;
	struct lc_fh *fh;
	uint64_t off = 0, i;
	ssize_t n;

	ck_assert_int_eq(lc_getattr(C, in, &CR, true, &a), 0);
	ck_assert_msg(a.size == size, "%s: size %llu, want %llu", name, (unsigned long long)a.size,
		      (unsigned long long)size);
	ck_assert_int_eq(lc_open(C, in, O_RDONLY, &CR, &fh), 0);
	while ((n = lc_read(C, fh, (off_t)off, size + 1 - off, b + off)) > 0)
		off += (uint64_t)n;
	ck_assert_int_eq(n, 0);
	ck_assert_uint_eq(off, size);
	for (i = 0; i < size; i++)
		if (b[i] != pat(seed, i))
			ck_abort_msg("%s: byte %llu is not what was written (data lost)", name, (unsigned long long)i);
	lc_release(C, fh);
	lc_put(C, in);
	free(b);
}

static int count_cb(void *arg, const char *name, struct lc_inode *in, const struct lc_attr *attr,
		    uint64_t next_cookie)
{
	(*(int *)arg)++;
	return 0;
}

static int entries(struct lc_inode *dir)
{
	bool eof = false;
	uint64_t cookie = 0;
	int n = 0;

	ck_assert_int_eq(lc_readdir(C, dir, cookie, false, &CR, count_cb, &n, &eof), 0);
	ck_assert(eof);
	return n;
}

static void absent(struct lc_inode *dir, const char *name)
{
	struct lc_inode *in = NULL;
	int r = lc_lookup(C, dir, name, &CR, NULL, &in);

	if (in)
		lc_put(C, in);
	ck_assert_msg(r == -ENOENT, "%s: lookup gave %d, want ENOENT", name, r);
}

#define K1 (64u << 10)

/* ---- cases ---------------------------------------------------------------------- */

/* create + write, crash, write more + fsync: same ino, every byte */
START_TEST(test_create)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	uint64_t ino;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "A", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	ino = lc_ino(in);
	put_pat(fh, 1, 0, K1);
	ck_assert_int_eq(lc_wb_flush(C, fh->in), 0);           /* data in the store, size report UNSAFE */
	crash();
	put_pat(fh, 1, K1, K1);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, in);
	crash_after_fsync_and_remount();
	ck_assert_msg(ino_of(R, "A", NULL) == ino, "A has ino %llx after the replay, was created as %llx",
		      (unsigned long long)ino_of(R, "A", NULL), (unsigned long long)ino);
	check_content(R, "A", 1, 2 * K1);
	ck_assert_int_eq(entries(R), 2);
}
END_TEST

/* mkdir D, mkdir D/E, create D/E/f: the children's replays find their parents */
START_TEST(test_mkdir_tree)
{
	struct lc_inode *d, *e, *in;
	struct lc_fh *fh;
	uint64_t dino, eino, fino;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_mkdir(C, R, "D", 0755, &CR, NULL, &d), 0);
	ck_assert_int_eq(lc_mkdir(C, d, "E", 0700, &CR, NULL, &e), 0);
	ck_assert_int_eq(lc_create(C, e, "f", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	dino = lc_ino(d);
	eino = lc_ino(e);
	fino = lc_ino(in);
	put_pat(fh, 2, 0, K1);
	ck_assert_int_eq(lc_wb_flush(C, fh->in), 0);
	crash();
	put_pat(fh, 2, K1, 3);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, in);
	lc_put(C, e);
	lc_put(C, d);
	crash_after_fsync_and_remount();
	ck_assert_uint_eq(ino_of(R, "D", NULL), dino);
	d = get(R, "D");
	ck_assert_uint_eq(ino_of(d, "E", NULL), eino);
	e = get(d, "E");
	ck_assert_uint_eq(ino_of(e, "f", NULL), fino);
	check_content(e, "f", 2, K1 + 3);
	ck_assert_int_eq(entries(R), 2);
	ck_assert_int_eq(entries(d), 1);
	ck_assert_int_eq(entries(e), 1);
	lc_put(C, e);
	lc_put(C, d);
}
END_TEST

/* create tmp, write, rename tmp -> final (the rename into place), crash */
START_TEST(test_rename)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	uint64_t ino;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "tmp", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	ino = lc_ino(in);
	put_pat(fh, 3, 0, K1);
	ck_assert_int_eq(lc_wb_flush(C, fh->in), 0);
	ck_assert_int_eq(lc_rename(C, R, "tmp", R, "final", 0, &CR), 0);
	crash();
	put_pat(fh, 3, K1, 100);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, in);
	crash_after_fsync_and_remount();
	ck_assert_uint_eq(ino_of(R, "final", NULL), ino);
	absent(R, "tmp");
	check_content(R, "final", 3, K1 + 100);
	ck_assert_int_eq(entries(R), 2);
}
END_TEST

/* create f, link f -> g: the link keeps its target; applied once (nlink 2) */
START_TEST(test_link)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	struct lc_attr a;
	uint64_t ino;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "f", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	ino = lc_ino(in);
	put_pat(fh, 4, 0, 5000);
	ck_assert_int_eq(lc_wb_flush(C, fh->in), 0);
	ck_assert_int_eq(lc_link(C, in, R, "g", &CR, NULL), 0);
	crash();
	put_pat(fh, 4, 5000, 5000);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, in);
	crash_after_fsync_and_remount();
	ck_assert_uint_eq(ino_of(R, "f", &a), ino);
	ck_assert_uint_eq(ino_of(R, "g", &a), ino);
	ck_assert_uint_eq(a.nlink, 2);
	check_content(R, "g", 4, 10000);
	ck_assert_int_eq(entries(R), 3);
}
END_TEST

/* create f, link f -> g, unlink g: applied once each (f stays, nlink 1) */
START_TEST(test_unlink)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	struct lc_attr a;
	uint64_t ino;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "f", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	ino = lc_ino(in);
	ck_assert_int_eq(lc_link(C, in, R, "g", &CR, NULL), 0);
	ck_assert_int_eq(lc_unlink(C, R, "g", &CR), 0);
	crash();
	put_pat(fh, 5, 0, K1);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, in);
	crash_after_fsync_and_remount();
	ck_assert_uint_eq(ino_of(R, "f", &a), ino);
	ck_assert_uint_eq(a.nlink, 1);
	absent(R, "g");
	check_content(R, "f", 5, K1);
	ck_assert_int_eq(entries(R), 2);
}
END_TEST

/* create f, write, chmod + truncate: the setattrs land on the same inode */
START_TEST(test_setattr)
{
	struct lc_attr set = { .mode = 0600, .size = 1000 }, a;
	struct lc_inode *in;
	struct lc_fh *fh;
	uint64_t ino;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "f", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	ino = lc_ino(in);
	put_pat(fh, 6, 0, K1);
	ck_assert_int_eq(lc_setattr(C, in, &set, LC_SET_MODE | LC_SET_SIZE, &CR, NULL), 0);
	crash();
	put_pat(fh, 6, 1000, 24);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, in);
	crash_after_fsync_and_remount();
	ck_assert_uint_eq(ino_of(R, "f", &a), ino);
	ck_assert_uint_eq(a.mode & 07777, 0600);
	check_content(R, "f", 6, 1024);
}
END_TEST

/*
 * More creates in the window than the session's pool holds
 * (mds_client_prealloc_inos=4): the grant that tops the pool up rides in an
 * entry the crash loses too, and the replays still get their inos.
 */
START_TEST(test_lost_grant)
{
	struct lc_inode *in[8];
	struct lc_fh *fh[8];
	uint64_t ino[8];
	char name[16];
	int i;

	fs_up("--mds_client_prealloc_inos=4");
	window_open();
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lc_create(C, R, name, 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in[i], &fh[i]),
				 0);
		ino[i] = lc_ino(in[i]);
		put_pat(fh[i], 10 + (uint64_t)i, 0, 3000);
		ck_assert_int_eq(lc_wb_flush(C, fh[i]->in), 0);
	}
	crash();
	for (i = 0; i < 8; i++) {
		put_pat(fh[i], 10 + (uint64_t)i, 3000, 1000);
		ck_assert_int_eq(lc_fsync(C, fh[i], false), 0);
		lc_release(C, fh[i]);
		lc_put(C, in[i]);
	}
	crash_after_fsync_and_remount();
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_uint_eq(ino_of(R, name, NULL), ino[i]);
		check_content(R, name, 10 + (uint64_t)i, 4000);
	}
	ck_assert_int_eq(entries(R), 9);
}
END_TEST

/*
 * Asynchronous creates (client/asyncdir.c): a directory made here is this
 * client's alone (Dc), so creates and mkdirs in it (and in the directories
 * made in it) are answered at once with delegated inos and sent in the
 * background.  kill -9 the MDS with them UNSAFE, or not even answered (the
 * kill follows the last create at once): after the replay and a second
 * crash, every name that was answered exists once, with the ino it was
 * answered with, and the data written to it is there.
 */
START_TEST(test_async_creates)
{
	enum { NF = 120, ND = 8, NW = 4 };
	struct lc_inode *d, *in, *sub;
	struct lc_fh *fh, *wfh[NW];
	struct lc_inode *win[NW];
	uint64_t ino[NF], dino[ND], xino[ND], before;
	char name[32];
	int i;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_mkdir(C, R, "D", 0755, &CR, NULL, &d), 0);
	before = perf_get(&C->perf.async_creates);
	for (i = 0; i < NF; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lc_create(C, d, name, 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
		ino[i] = lc_ino(in);
		if (i < NW) {
			win[i] = in;
			wfh[i] = fh;
			put_pat(fh, 20 + (uint64_t)i, 0, 5000);
			continue;
		}
		lc_release(C, fh);
		lc_put(C, in);
	}
	for (i = 0; i < ND; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ck_assert_int_eq(lc_mkdir(C, d, name, 0755, &CR, NULL, &sub), 0);
		dino[i] = lc_ino(sub);
		ck_assert_int_eq(lc_create(C, sub, "x", 0600, O_WRONLY | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
		xino[i] = lc_ino(in);
		lc_release(C, fh);
		lc_put(C, in);
		lc_put(C, sub);
	}
	/* every one of them was answered here, none waited for the MDS */
	ck_assert_uint_eq(perf_get(&C->perf.async_creates) - before, NF + 2 * ND);
	crash();
	for (i = 0; i < NW; i++) {
		put_pat(wfh[i], 20 + (uint64_t)i, 5000, 100);
		ck_assert_int_eq(lc_fsync(C, wfh[i], false), 0);
		lc_release(C, wfh[i]);
		lc_put(C, win[i]);
	}
	ck_assert_int_eq(lc_sync_fs(C), 0);
	lc_put(C, d);
	crash_after_fsync_and_remount();
	d = get(R, "D");
	for (i = 0; i < NF; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_msg(ino_of(d, name, NULL) == ino[i], "%s: ino %llx after the replay, answered %llx", name,
			      (unsigned long long)ino_of(d, name, NULL), (unsigned long long)ino[i]);
	}
	for (i = 0; i < NW; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		check_content(d, name, 20 + (uint64_t)i, 5100);
	}
	for (i = 0; i < ND; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ck_assert_uint_eq(ino_of(d, name, NULL), dino[i]);
		sub = get(d, name);
		ck_assert_uint_eq(ino_of(sub, "x", NULL), xino[i]);
		ck_assert_int_eq(entries(sub), 1);
		lc_put(C, sub);
	}
	ck_assert_int_eq(entries(d), NF + ND);
	lc_put(C, d);
}
END_TEST

/*
 * An asynchronous create the MDS refuses (here: the client names an ino
 * that was never delegated to it, as a corrupted delegation would): the caller was answered
 * already, so the next fsync of the file says so, the name is gone from the
 * client's caches and from the directory, and the failure is counted.
 */
START_TEST(test_async_create_refused)
{
	struct lc_inode *d, *in, *y;
	struct lc_fh *fh;
	uint64_t before;

	fs_up(NULL);
	ck_assert_int_eq(lc_mkdir(C, R, "D", 0755, &CR, NULL, &d), 0);
	pthread_mutex_lock(&C->deleg_lock);
	ck_assert_uint_gt(C->ndeleg, 0);
	/* never delegated to the session: the MDS refuses it (EINVAL), never another ino */
	C->deleg[0].start = C->deleg[C->ndeleg - 1].start + C->deleg[C->ndeleg - 1].len + 1000000;
	C->deleg[0].len = 1;
	pthread_mutex_unlock(&C->deleg_lock);
	before = perf_get(&C->perf.async_failed);
	ck_assert_int_eq(lc_create(C, d, "x", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	ck_assert_int_eq(lc_fsync(C, fh, false), -EINVAL);
	ck_assert_uint_eq(perf_get(&C->perf.async_failed) - before, 1);
	lc_release(C, fh);
	lc_put(C, in);
	absent(d, "x");
	ck_assert_int_eq(entries(d), 0);
	/* the directory goes on working */
	ck_assert_int_eq(lc_create(C, d, "y", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &y, &fh), 0);
	ck_assert_int_eq(lc_fsync(C, fh, false), 0);
	lc_release(C, fh);
	lc_put(C, y);
	ck_assert_int_eq(entries(d), 1);
	lc_put(C, d);
	client_down();
	client_up();
	d = get(R, "D");
	absent(d, "x");
	ck_assert_int_eq(entries(d), 1);
	lc_put(C, d);
}
END_TEST

/*
 * A replay the MDS must refuse (another session took the name while the
 * client was away): the client is told, fsync fails with EIO instead of
 * reporting data that is attached to nothing as safe.
 */
START_TEST(test_failed_replay_is_eio)
{
	struct mdsp_inode theirs;
	struct lc_inode *in;
	struct lc_fh *fh;
	struct mdsw t;
	uint16_t port;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "A", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	put_pat(fh, 7, 0, K1);
	ck_assert_int_eq(lc_wb_flush(C, fh->in), 0);
	ck_assert_uint_le(mdsc_oldest_tid(C->mdsc), window_tid);
	kill9();
	/* the MDS comes back where the client does not look, with no reconnect
	 * phase, and another session creates "A" there first */
	port = P.port;
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=0");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&t, P.port), 0);
	ck_assert_int_eq(mdsw_open(&t, "client.other"), 0);
	ck_assert_int_eq(mdsw_create(&t, MDSP_ROOT_INO, "A", 0644, O_CREAT | O_EXCL, &theirs), 0);
	ck_assert_int_eq(mdsw_session_close(&t), 0);
	mdsw_close(&t);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	P.nextra--;             /* the reconnect phase is back */
	P.port = port;
	restart();
	/* the client replays its create; the MDS refuses it */
	ck_assert_int_eq(lc_fsync(C, fh, false), -EIO);
	lc_release(C, fh);
	lc_put(C, in);
	client_down();
	client_up();
	ck_assert_uint_eq(ino_of(R, "A", NULL), theirs.ino);
	check_content(R, "A", 7, 0);    /* theirs, empty: not the client's data under their name */
}
END_TEST

/* An unmount with a change still UNSAFE and the MDS gone returns (bounded), it does not wait forever. */
START_TEST(test_unmount_with_the_mds_gone)
{
	struct lc_inode *in;
	struct lc_fh *fh;
	uint64_t t0, end;

	fs_up(NULL);
	window_open();
	ck_assert_int_eq(lc_create(C, R, "A", 0644, O_RDWR | O_CREAT | O_EXCL, &CR, NULL, &in, &fh), 0);
	lc_release(C, fh);
	lc_put(C, in);
	ck_assert_uint_le(mdsc_oldest_tid(C->mdsc), window_tid);
	kill9();
	for (end = now_mono_ns() + 5000000000ull; mdsc_is_open(C->mdsc) && now_mono_ns() < end;)
		usleep(10000);
	t0 = now_mono_ns();
	client_down();
	ck_assert_msg(now_mono_ns() - t0 < 15000000000ull, "unmount took %.1f s with the MDS gone",
		      (double)(now_mono_ns() - t0) / 1e9);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("clientlib_crash");
	TCase *tc = tcase_create("unsafe_window");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_create);
	tcase_add_test(tc, test_mkdir_tree);
	tcase_add_test(tc, test_rename);
	tcase_add_test(tc, test_link);
	tcase_add_test(tc, test_unlink);
	tcase_add_test(tc, test_setattr);
	tcase_add_test(tc, test_lost_grant);
	tcase_add_test(tc, test_async_creates);
	tcase_add_test(tc, test_async_create_refused);
	tcase_add_test(tc, test_failed_replay_is_eio);
	tcase_add_test(tc, test_unmount_with_the_mds_gone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_lc_crash", parent_dir, sizeof(parent_dir));
}
