/*
 * test_fuse_posix.c - loligo-fuse against what ext4 does, on a real FUSE
 * mount (default mount with allow_other, no default_permissions: the
 * permission checks are loligo's own), as root and as the unprivileged
 * users 65534 and 65533.
 *
 *   size     max_file_size (EFBIG), sizes past 2^63-1, and a 1 TiB sparse
 *            file whose truncate, write and unlink cost well under a second
 *            of CPU in both daemons (utime+stime from /proc, not wall time);
 *            the same limits over NFS (NFS4ERR_FBIG, maxfilesize) through
 *            the embedded gateway on a socket
 *   purge    SIGTERM during a long client purge exits within 2 s, and the
 *            rest of the purge is done by the next mount (no object leaks)
 *
 * Each TCase gets a fresh filesystem (unchecked fixtures in the check
 * parent, so the teardown runs even when a forked test fails).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "store/store.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tools/bench/nfs4_wire.h"

#define MiB (1024ll * 1024)
#define TiB (1ll << 40)

static struct lfs fs;

static const char *P(const char *rel)
{
	static __thread char buf[8][PATH_MAX];
	static __thread int i;
	i = (i + 1) % 8;
	return lfs_path(&fs, rel, buf[i], sizeof(buf[i]));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void start(const char *conf, bool mount)
{
	if (lfs_init_with(&fs, conf) != 0 || lfs_mds_start(&fs) != 0 ||
	    (mount && lfs_mount(&fs, "allow_other") != 0)) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void setup_size(void)
{
	start("mds_purge_delay = 0\n", true);
}

static void setup_nfs(void)
{
	start("mds_purge_delay = 0\n", false);
	fs.fuse_args[0] = "--nfs";
	fs.fuse_args[1] = "127.0.0.1:0";
	if (lfs_mount(&fs, "allow_other") != 0) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		exit(1);
	}
}

static void setup_purge(void)
{
	/* a long purge: one object per slice, 0.5 s apart */
	start("client_purge_slice = 1\nclient_debug_purge_slice_delay = 0.5\n", false);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

/* ---- admin sockets ------------------------------------------------------ */

static int64_t perf_at(const char *asok, const char *group, const char *name)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *g, *v;
	int64_t n = -1;

	json_object_object_add(req, "prefix", json_object_new_string("perf dump"));
	if (asok_request(asok, req, &rep, 10000) == 0 && json_object_object_get_ex(rep, group, &g) &&
	    json_object_object_get_ex(g, name, &v))
		n = json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return n;
}

static int64_t client_perf(const char *name)
{
	return perf_at(fs.asok, "client", name);
}

static int64_t mds_perf(const char *group, const char *name)
{
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/mds.asok", fs.dir);
	return perf_at(p, group, name);
}

static bool wait_for(int64_t (*get)(const char *), const char *name, int64_t want, double secs)
{
	double end = now_s() + secs;

	while (now_s() < end) {
		if (get(name) >= want)
			return true;
		usleep(10000);
	}
	return get(name) >= want;
}

static int64_t mds_purged(const char *name)
{
	return mds_perf("mds_purge", name);
}

/* utime + stime of @pid in seconds: CPU, not wall time */
static double cpu_of(pid_t pid)
{
	char p[64], buf[1024], *q;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	q = strrchr(buf, ')');
	ck_assert_ptr_nonnull(q);
	/* after ") ": state(3) ... utime is field 14, stime 15 */
	ck_assert_int_eq(sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- size ---------------------------------------------------------------- */

START_TEST(test_size_limits)
{
	const char *f = P("limits");
	struct stat st;
	int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	/* truncate past max_file_size (1 TiB), to ftruncate's 999999999999999 */
	ck_assert_int_eq(truncate(f, TiB + 1), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(ftruncate(fd, 999999999999999ll), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(ftruncate(fd, INT64_MAX), -1);
	ck_assert_int_eq(errno, EFBIG);
	/* 2^64-1 is -1 as an off_t: the kernel says EINVAL, like ext4 */
	ck_assert_int_eq(truncate(f, (off_t)UINT64_MAX), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	/* exactly the limit is fine */
	ck_assert_int_eq(ftruncate(fd, TiB), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, TiB);
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	/* a write crossing the limit is cut at it; one at it is EFBIG */
	ck_assert_int_eq(pwrite(fd, "ab", 2, TiB - 1), 1);
	ck_assert_int_eq(pwrite(fd, "c", 1, TiB), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, TiB);
	{
		char b = 0;
		ck_assert_int_eq(pread(fd, &b, 1, TiB - 1), 1);
		ck_assert_int_eq(b, 'a');
	}
	/* fallocate: past the limit EFBIG, inside it the size grows */
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(fallocate(fd, 0, TiB - 1, 2), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(fallocate(fd, FALLOC_FL_KEEP_SIZE, TiB, 1), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(fallocate(fd, 0, 4096, 8192), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 12288);
	ck_assert_int_eq(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 12288);
	/* a punched hole reads as zeros */
	ck_assert_int_eq(pwrite(fd, "xxxxxxxx", 8, 100), 8);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 102, 4), 0);
	{
		char b[8];
		ck_assert_int_eq(pread(fd, b, 8, 100), 8);
		ck_assert(memcmp(b, "xx\0\0\0\0xx", 8) == 0);
	}
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(unlink(f), 0);
}
END_TEST

/* truncate to 1 TiB - 1, one byte at the end, unlink: well under a second of
 * CPU in both daemons (before: ~262,144 object removals in each, and
 * 4.4e12 for a 2^64-1 size) */
START_TEST(test_huge_sparse_file_is_cheap)
{
	const char *f = P("huge");
	double mds0, fuse0, mds_cpu, fuse_cpu;
	int64_t cfiles, mfiles, cobjs;
	struct stat st;
	int fd;

	/* earlier tests' purges first */
	for (int i = 0; i < 1000 && (client_perf("purge_queued") || mds_purged("queued")); i++)
		usleep(10000);
	cfiles = client_perf("purge_files");
	cobjs = client_perf("purge_objects");
	mfiles = mds_purged("files");
	mds0 = cpu_of(fs.mds_pid);
	fuse0 = cpu_of(fs.fuse_pid);
	fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, TiB - 1), 0);
	ck_assert_int_eq(pwrite(fd, "z", 1, TiB - 2), 1);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(stat(f, &st), 0);
	ck_assert_int_eq(st.st_size, TiB - 1);
	ck_assert_int_eq(unlink(f), 0);
	/* both purges done */
	ck_assert_msg(wait_for(client_perf, "purge_files", cfiles + 1, 30), "the client's purge did not finish");
	ck_assert_msg(wait_for(mds_purged, "files", mfiles + 1, 30), "the MDS's purge did not finish");
	mds_cpu = cpu_of(fs.mds_pid) - mds0;
	fuse_cpu = cpu_of(fs.fuse_pid) - fuse0;
	fprintf(stderr, "test_huge_sparse_file_is_cheap: CPU loligo-mds %.3f s, loligo-fuse %.3f s "
		"(the client's purge removed %lld object)\n", mds_cpu, fuse_cpu,
		(long long)(client_perf("purge_objects") - cobjs));
	ck_assert_msg(mds_cpu < 1.0, "loligo-mds used %.2f s of CPU", mds_cpu);
	ck_assert_msg(fuse_cpu < 1.0, "loligo-fuse used %.2f s of CPU", fuse_cpu);
	ck_assert_int_eq(client_perf("purge_objects") - cobjs, 1);
}
END_TEST

/* ---- NFS on a socket -------------------------------------------------------- */

enum { OP_GETATTR = 9, OP_LOOKUP = 15, OP_PUTROOTFH = 24, OP_SETATTR = 34, OP_WRITE = 38,
       OP_EXCHANGE_ID = 42, OP_CREATE_SESSION = 43, OP_SEQUENCE = 53, OP_RECLAIM_COMPLETE = 58 };
enum { NFS4ERR_FBIG = 27 };

struct nfsc {
	int fd;
	struct wbuf wb;
	uint32_t xid, slot_seq;
	uint8_t sessionid[16];
	uint8_t *rec;
};

static int nfs_call(struct nfsc *n, struct rbuf *r)
{
	size_t len = 0;
	uint32_t rx, nres;
	int as, st;

	w_finish(&n->wb);
	free(n->rec);
	n->rec = NULL;
	ck_assert_int_eq(write_all(n->fd, n->wb.p, n->wb.len), 0);
	ck_assert_int_eq(rpc_recv(n->fd, &n->rec, &len), 0);
	st = rpc_reply(n->rec, len, &rx, r, &as, &nres);
	ck_assert_msg(st >= 0, "RPC-level error %d", as);
	return st;
}

static void nfs_begin(struct nfsc *n)
{
	w_compound(&n->wb, n->xid++, 1);
	wop(&n->wb, OP_SEQUENCE);
	wfixed(&n->wb, n->sessionid, 16);
	w32(&n->wb, n->slot_seq++);
	w32(&n->wb, 0);
	w32(&n->wb, 0);
	w32(&n->wb, 0);
}

static void nfs_skip_seq(struct rbuf *r)
{
	ck_assert_uint_eq(r32(r), OP_SEQUENCE);
	ck_assert_uint_eq(r32(r), 0);
	rfixed(r, 16 + 20);
}

static void nfs_session(struct nfsc *n, int port)
{
	struct rbuf r;
	uint64_t clientid;
	uint32_t seq;
	char owner[64];

	memset(n, 0, sizeof(*n));
	n->xid = 1;
	n->slot_seq = 1;
	n->fd = nfs_connect(port);
	ck_assert_int_ge(n->fd, 0);
	snprintf(owner, sizeof(owner), "posix-%d", getpid());
	w_compound(&n->wb, n->xid++, 1);
	wop(&n->wb, OP_EXCHANGE_ID);
	wfixed(&n->wb, "posixtst", 8);
	wstr(&n->wb, owner);
	w32(&n->wb, 0x00010000);
	w32(&n->wb, 0);
	w32(&n->wb, 0);
	ck_assert_int_eq(nfs_call(n, &r), 0);
	ck_assert_uint_eq(r32(&r), OP_EXCHANGE_ID);
	ck_assert_uint_eq(r32(&r), 0);
	clientid = r64(&r);
	seq = r32(&r);
	w_compound(&n->wb, n->xid++, 1);
	wop(&n->wb, OP_CREATE_SESSION);
	w64(&n->wb, clientid);
	w32(&n->wb, seq);
	w32(&n->wb, 0);
	for (int ch = 0; ch < 2; ch++) {
		w32(&n->wb, 0);
		w32(&n->wb, 1 << 20);
		w32(&n->wb, 1 << 20);
		w32(&n->wb, 64 << 10);
		w32(&n->wb, 16);
		w32(&n->wb, 4);
		w32(&n->wb, 0);
	}
	w32(&n->wb, 0x40000000);
	w32(&n->wb, 1);
	w32(&n->wb, 0);
	ck_assert_int_eq(nfs_call(n, &r), 0);
	ck_assert_uint_eq(r32(&r), OP_CREATE_SESSION);
	ck_assert_uint_eq(r32(&r), 0);
	memcpy(n->sessionid, rfixed(&r, 16), 16);
	nfs_begin(n);
	wop(&n->wb, OP_RECLAIM_COMPLETE);
	w32(&n->wb, 0);
	ck_assert_int_eq(nfs_call(n, &r), 0);
}

/* SEQUENCE, PUTROOTFH, LOOKUP @name: the compound continues with the caller's ops */
static void nfs_at(struct nfsc *n, const char *name)
{
	nfs_begin(n);
	wop(&n->wb, OP_PUTROOTFH);
	wop(&n->wb, OP_LOOKUP);
	wstr(&n->wb, name);
}

/* r after PUTROOTFH and LOOKUP results */
static void nfs_skip_at(struct rbuf *r)
{
	nfs_skip_seq(r);
	ck_assert_uint_eq(r32(r), OP_PUTROOTFH);
	ck_assert_uint_eq(r32(r), 0);
	ck_assert_uint_eq(r32(r), OP_LOOKUP);
	ck_assert_uint_eq(r32(r), 0);
}

static void put_zero_stateid(struct wbuf *w)
{
	static const uint8_t z[16];
	wfixed(w, z, 16);
}

/* SETATTR size @size on @name: the compound's status */
static int nfs_setattr_size(struct nfsc *n, const char *name, uint64_t size)
{
	struct rbuf r;

	nfs_at(n, name);
	wop(&n->wb, OP_SETATTR);
	put_zero_stateid(&n->wb);
	w32(&n->wb, 1);                  /* bitmap: word 0 */
	w32(&n->wb, 1u << 4);            /* FATTR4_SIZE */
	w32(&n->wb, 8);
	w64(&n->wb, size);
	return nfs_call(n, &r);
}

START_TEST(test_nfs_size_limits)
{
	int port = lfs_nfs_port(&fs), fd, st;
	struct nfsc n;
	struct rbuf r;
	struct stat sb;

	ck_assert_msg(port > 0, "no NFS gateway port in the client log");
	fd = open(P("nfsfile"), O_RDWR | O_CREAT | O_TRUNC, 0666);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(close(fd), 0);
	nfs_session(&n, port);

	/* maxfilesize says the limit */
	nfs_at(&n, "nfsfile");
	wop(&n.wb, OP_GETATTR);
	w32(&n.wb, 1);
	w32(&n.wb, 1u << 27);            /* FATTR4_MAXFILESIZE */
	ck_assert_int_eq(nfs_call(&n, &r), 0);
	nfs_skip_at(&r);
	ck_assert_uint_eq(r32(&r), OP_GETATTR);
	ck_assert_uint_eq(r32(&r), 0);
	rbitmap_skip(&r);
	ck_assert_uint_eq(r32(&r), 8);
	ck_assert_uint_eq(r64(&r), (uint64_t)TiB);

	/* SETATTR size 2^64-1, 2^63 and max+1: NFS4ERR_FBIG; the limit itself: fine */
	ck_assert_int_eq(nfs_setattr_size(&n, "nfsfile", UINT64_MAX), NFS4ERR_FBIG);
	ck_assert_int_eq(nfs_setattr_size(&n, "nfsfile", 1ull << 63), NFS4ERR_FBIG);
	ck_assert_int_eq(nfs_setattr_size(&n, "nfsfile", (uint64_t)TiB + 1), NFS4ERR_FBIG);
	ck_assert_int_eq(stat(P("nfsfile"), &sb), 0);
	ck_assert_int_eq(sb.st_size, 0);
	ck_assert_int_eq(nfs_setattr_size(&n, "nfsfile", (uint64_t)TiB), 0);
	ck_assert_int_eq(nfs_setattr_size(&n, "nfsfile", 0), 0);

	/* WRITE at the limit: NFS4ERR_FBIG; across it: cut short at it */
	for (int k = 0; k < 2; k++) {
		nfs_at(&n, "nfsfile");
		wop(&n.wb, OP_WRITE);
		put_zero_stateid(&n.wb);
		w64(&n.wb, k == 0 ? (uint64_t)TiB : (uint64_t)TiB - 1);
		w32(&n.wb, 2);                   /* FILE_SYNC4 */
		wopaque(&n.wb, "ab", 2);
		st = nfs_call(&n, &r);
		if (k == 0) {
			ck_assert_int_eq(st, NFS4ERR_FBIG);
			continue;
		}
		ck_assert_int_eq(st, 0);
		nfs_skip_at(&r);
		ck_assert_uint_eq(r32(&r), OP_WRITE);
		ck_assert_uint_eq(r32(&r), 0);
		ck_assert_uint_eq(r32(&r), 1);   /* count */
	}
	ck_assert_int_eq(stat(P("nfsfile"), &sb), 0);
	ck_assert_int_eq(sb.st_size, TiB);
	free(n.rec);
	free(n.wb.p);
	close(n.fd);
	ck_assert_int_eq(unlink(P("nfsfile")), 0);
}
END_TEST

/* ---- purge ------------------------------------------------------------------ */

/* names of @ino's objects left in the client's data store (not running) */
static int objects_left(uint64_t ino)
{
	struct store_config sc = { .backend = "local" };
	struct store *st;
	struct store_pool *pool;
	char path[PATH_MAX + 16], prefix[32], **names = NULL;
	size_t n = 0;
	int left = 0;

	snprintf(path, sizeof(path), "%s/store.data", fs.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "loligo_data", NULL, &pool), 0);
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	snprintf(prefix, sizeof(prefix), "%" PRIx64 ".", ino);
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(names[i], prefix, strlen(prefix))) {
			fprintf(stderr, "left: %s\n", names[i]);
			left++;
		}
		free(names[i]);
	}
	free(names);
	store_pool_close(pool);
	store_close(st);
	return left;
}

START_TEST(test_sigterm_during_client_purge)
{
	struct stat sb;
	double t0, took;
	int fd, status;
	uint64_t ino;

	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
	/* six objects: six slices, 0.5 s apart */
	fd = open(P("many"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	for (int k = 0; k < 6; k++)
		ck_assert_int_eq(pwrite(fd, "o", 1, k * 4 * MiB), 1);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	ino = sb.st_ino;
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(unlink(P("many")), 0);
	ck_assert_msg(wait_for(client_perf, "purge_objects", 1, 10), "the purge did not start");
	t0 = now_s();
	ck_assert_int_eq(kill(fs.fuse_pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(fs.fuse_pid, &status, 0), fs.fuse_pid);
	took = now_s() - t0;
	fs.fuse_pid = 0;
	fprintf(stderr, "test_sigterm_during_client_purge: exit %.3f s after SIGTERM\n", took);
	ck_assert_msg(took < 2.0, "loligo-fuse took %.2f s to exit on SIGTERM during a purge", took);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "loligo-fuse status 0x%x", status);
	ck_assert_int_gt(objects_left(ino), 0);   /* it was cut short */
	/* the next mount finishes it */
	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
	ck_assert_msg(wait_for(client_perf, "purge_files", 1, 20), "the purge was not resumed");
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(objects_left(ino), 0);
}
END_TEST

static Suite *posix_suite(void)
{
	Suite *s = suite_create("fuse_posix");
	TCase *tc;

	tc = tcase_create("size");
	tcase_add_unchecked_fixture(tc, setup_size, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_size_limits);
	tcase_add_test(tc, test_huge_sparse_file_is_cheap);
	suite_add_tcase(s, tc);

	tc = tcase_create("nfs");
	tcase_add_unchecked_fixture(tc, setup_nfs, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_nfs_size_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("purge");
	tcase_add_unchecked_fixture(tc, setup_purge, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sigterm_during_client_purge);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(posix_suite());
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "test_fuse_posix: needs root and /dev/fuse; skipped\n");
		return 77;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
