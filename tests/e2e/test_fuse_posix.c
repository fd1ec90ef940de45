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
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "store/store.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tools/bench/nfs4_wire.h"
#include "tests/lib/wait.h"

#define MiB (1024ll * 1024)
#define TiB (1ll << 40)

static struct lfs fs;

#define P(rel) lfs_at(fs.mnt, (rel))

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
	start("mds_purge_delay = 0\nnfs_exports = id=1,path=/,rw,no_root_squash,insecure\n", false);
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
	/* a long purge: one object per slice, 0.5 s apart; the MDS, which
	 * purges a closed file's objects at once (mds_purge_delay 0: caps tell
	 * it when the last open went), is kept out of this test of the
	 * client's purge */
	start("client_purge_slice = 1\nclient_debug_purge_slice_delay = 0.5\nmds_purge_delay = 1000\n", false);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

/* ---- admin sockets ------------------------------------------------------ */

static int64_t perf_at(const char *asok, const char *group, const char *name)
{
	return lfs_perf(asok, group, name);
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
	double end = lt_now_s() + secs;

	while (lt_now_s() < end) {
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
	int64_t cfiles, mfiles, cobjs, mobjs;
	struct stat st;
	int fd;

	/* earlier tests' purges first */
	for (int i = 0; i < 1000 && (client_perf("purge_queued") || mds_purged("queued")); i++)
		usleep(10000);
	cfiles = client_perf("purge_files");
	cobjs = client_perf("purge_objects");
	mfiles = mds_purged("files");
	mobjs = mds_purged("objects");
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
		"(removed by the client's purge %lld object, by the MDS's %lld)\n", mds_cpu, fuse_cpu,
		(long long)(client_perf("purge_objects") - cobjs), (long long)(mds_purged("objects") - mobjs));
	ck_assert_msg(mds_cpu < 1.0, "loligo-mds used %.2f s of CPU", mds_cpu);
	ck_assert_msg(fuse_cpu < 1.0, "loligo-fuse used %.2f s of CPU", fuse_cpu);
	/* both purge the shared data store: one of them removed the one object */
	ck_assert_int_eq(client_perf("purge_objects") - cobjs + mds_purged("objects") - mobjs, 1);
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
	ck_assert_int_eq(io_write_all(n->fd, n->wb.p, n->wb.len), 0);
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

/*
 * The NFS gateway in the FUSE process writes to a file the FUSE mount keeps
 * open: the kernel's pages of it, kept under Fc, are dropped (the MDS
 * revokes nothing from its own client: the gateway's lc_notify_inode does
 * it), and the FUSE reader sees the bytes.
 */
START_TEST(test_nfs_write_drops_kernel_pages)
{
	int port = lfs_nfs_port(&fs), fd, st;
	char buf[8192];
	struct nfsc n;
	struct rbuf r;

	ck_assert_msg(port > 0, "no NFS gateway port in the client log");
	memset(buf, 'a', sizeof(buf));
	fd = open(P("kcnfs"), O_RDWR | O_CREAT | O_TRUNC, 0666);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(close(fd), 0);
	fd = open(P("kcnfs"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2; i++) {   /* in the kernel's page cache */
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		ck_assert_int_eq(buf[0], 'a');
	}
	nfs_session(&n, port);
	nfs_at(&n, "kcnfs");
	wop(&n.wb, OP_WRITE);
	put_zero_stateid(&n.wb);
	w64(&n.wb, 0);
	w32(&n.wb, 2);                   /* FILE_SYNC4 */
	wopaque(&n.wb, "bb", 2);
	st = nfs_call(&n, &r);
	ck_assert_int_eq(st, 0);
	/* the invalidation is queued by the write and delivered by the FUSE
	 * process's thread: soon, well within the 10 s the kernel caches the
	 * attributes for */
	for (int i = 0;; i++) {
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		if (buf[0] == 'b' && buf[1] == 'b')
			break;
		ck_assert_msg(i < 200, "the FUSE mount still reads '%c%c' 2 s after the NFS gateway wrote 'bb'", buf[0],
			      buf[1]);
		usleep(10000);
	}
	ck_assert_int_eq(buf[2], 'a');
	ck_assert_int_eq(close(fd), 0);
	free(n.rec);
	free(n.wb.p);
	close(n.fd);
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
	t0 = lt_now_s();
	ck_assert_int_eq(kill(fs.fuse_pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(fs.fuse_pid, &status, 0), fs.fuse_pid);
	took = lt_now_s() - t0;
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


/* ---- POSIX as unprivileged users (§2) --------------------------------------
 *
 * The checks run in forked children as uid 65534 (gid 65534) or 65533 (gid
 * 65533).  With LOLIGO_POSIX_REF=DIR they run against DIR instead of a
 * loligo mount (no daemons, CK_RUN_CASE=posix): a tmpfs or ext4 there
 * shows that every expectation is what Linux itself does.
 */

#define U1 65534
#define U2 65533

static bool ref_mode;
static int bad;   /* failed expectations in a child */

#define EXPECT_OK(call, what)                                                                    \
	do {                                                                                     \
		errno = 0;                                                                       \
		if ((long)(call) < 0) {                                                          \
			fprintf(stderr, "uid %d: %s: %s (expected success)\n", (int)getuid(), what,  \
				strerror(errno));                                                \
			bad++;                                                                   \
		}                                                                                \
	} while (0)
#define EXPECT_ERR(call, err, what)                                                              \
	do {                                                                                     \
		errno = 0;                                                                       \
		long r_ = (long)(call);                                                          \
		if (r_ >= 0 || errno != (err)) {                                                 \
			fprintf(stderr, "uid %d: %s: %s (expected %s)\n", (int)getuid(), what,       \
				r_ >= 0 ? "success" : strerror(errno), strerror(err));           \
			bad++;                                                                   \
		}                                                                                \
	} while (0)
#define EXPECT(cond, ...)                                                                        \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "uid %d: ", (int)getuid());                              \
			fprintf(stderr, __VA_ARGS__);                                            \
			fprintf(stderr, "\n");                                                   \
			bad++;                                                                   \
		}                                                                                \
	} while (0)

/* Run @fn(@arg) as @uid/@gid with @ngroups supplementary @groups, in a
 * child; returns the number of failed expectations. */
static int as_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups, void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups((size_t)ngroups, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(100);
		bad = 0;
		fn(arg);
		_exit(bad > 99 ? 99 : bad);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "child killed by signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

static void run_as(uid_t uid, void (*fn)(void *), void *arg, const char *what)
{
	int n = as_user(uid, uid, NULL, 0, fn, arg);
	ck_assert_msg(n == 0, "%s, as uid %d: %d checks failed (above)", what, (int)uid, n);
}

static void run_as_groups(uid_t uid, gid_t g2, void (*fn)(void *), void *arg, const char *what)
{
	gid_t groups[1] = { g2 };
	int n = as_user(uid, uid, groups, 1, fn, arg);
	ck_assert_msg(n == 0, "%s, as uid %d (+group %d): %d checks failed (above)", what, (int)uid, (int)g2, n);
}

static void setup_posix(void)
{
	const char *ref = getenv("LOLIGO_POSIX_REF");

	if (ref && *ref) {
		ref_mode = true;
		memset(&fs, 0, sizeof(fs));
		snprintf(fs.mnt, sizeof(fs.mnt), "%s", ref);
		snprintf(fs.dir, sizeof(fs.dir), "%s/..", ref);
		return;
	}
	start(NULL, true);
}

static void teardown_posix(void)
{
	if (!ref_mode)
		lfs_cleanup(&fs);
}

static void mkfile(const char *rel, mode_t mode, uid_t uid, gid_t gid)
{
	int fd = open(P(rel), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_msg(fd >= 0, "create %s: %s", rel, strerror(errno));
	ck_assert_int_eq(write(fd, "data", 4), 4);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(chown(P(rel), uid, gid), 0);
	ck_assert_int_eq(chmod(P(rel), mode), 0);
}

static void mkdir_as(const char *rel, mode_t mode, uid_t uid, gid_t gid)
{
	ck_assert_msg(mkdir(P(rel), 0700) == 0, "mkdir %s: %s", rel, strerror(errno));
	ck_assert_int_eq(chown(P(rel), uid, gid), 0);
	ck_assert_int_eq(chmod(P(rel), mode), 0);
}

static struct stat stat_of(const char *rel)
{
	struct stat st;
	ck_assert_msg(stat(P(rel), &st) == 0, "stat %s: %s", rel, strerror(errno));
	return st;
}

static mode_t mode_of(const char *rel)
{
	return stat_of(rel).st_mode & 07777;
}

static bool ts_after(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

static void tick(void)
{
	usleep(20000);   /* so a new ctime differs from the last one */
}

/* -- search permission of every directory on the path -- */

static void walk_ok(void *arg)
{
	char f[128];
	struct stat st;

	snprintf(f, sizeof(f), "%s/file", (const char *)arg);
	EXPECT_OK(stat(P(f), &st), "stat through a searchable directory");
}

/* every way in through a directory the caller may not search: EACCES at once */
static void walk_denied(void *arg)
{
	const char *dir = arg;
	char f[128], sub[128], x[128];
	struct stat st;
	double t0 = lt_now_s(), late;
	int fd;

	snprintf(f, sizeof(f), "%s/file", dir);
	snprintf(sub, sizeof(sub), "%s/sub/x", dir);
	snprintf(x, sizeof(x), "%s/file2", dir);
	/* "at once": the kernel learns it as the chmod/rename returns (a loaded
	 * machine may schedule that a little later), never after the 10 s the
	 * names were cached for */
	while (stat(P(f), &st) == 0 && lt_now_s() - t0 < 1.0)
		usleep(1000);
	late = lt_now_s() - t0;
	EXPECT(late < 1.0, "still let through %.2f s after the directory closed", late);
	if (late > 0.001)
		fprintf(stderr, "uid %d: %s: denied %.4f s after it closed\n", (int)getuid(), dir, late);
	EXPECT_ERR(stat(P(f), &st), EACCES, "stat");
	EXPECT_ERR(fd = open(P(f), O_RDONLY), EACCES, "open");
	if (fd >= 0)
		close(fd);
	EXPECT_ERR(chmod(P(f), 0600), EACCES, "chmod");
	EXPECT_ERR(chown(P(f), (uid_t)-1, (gid_t)-1), EACCES, "chown");
	EXPECT_ERR(truncate(P(f), 0), EACCES, "truncate");
	EXPECT_ERR(link(P(f), P("linked_out")), EACCES, "link out of it");
	EXPECT_ERR(utimes(P(f), NULL), EACCES, "utimes");
	EXPECT_ERR(access(P(f), F_OK), EACCES, "access");
	EXPECT_ERR(mkdir(P(sub), 0755), EACCES, "mkdir below it");
	EXPECT_ERR(rename(P(f), P(x)), EACCES, "rename inside it");
	EXPECT_ERR(unlink(P(f)), EACCES, "unlink inside it");
}

START_TEST(test_search_permission_cached)
{
	struct stat st;

	/* names cached while anyone could search, then the owner closes it */
	mkdir_as("srch", 0755, 0, 0);
	mkfile("srch/file", 0666, 0, 0);
	mkdir_as("srch/sub", 0777, 0, 0);
	run_as(U1, walk_ok, "srch", "walk in an open directory");
	ck_assert_int_eq(chmod(P("srch"), 0700), 0);
	run_as(U1, walk_denied, "srch", "walk in a directory closed by chmod");
	ck_assert_int_eq(chmod(P("srch"), 0755), 0);
	run_as(U1, walk_ok, "srch", "walk after opening it again");
	/* closed to others by chgrp+chmod to another group */
	ck_assert_int_eq(chown(P("srch"), 0, U2), 0);
	ck_assert_int_eq(chmod(P("srch"), 0750), 0);
	run_as(U1, walk_denied, "srch", "walk in a 0750 directory of another group");
	run_as(U2, walk_ok, "srch", "walk as a member of its group");
	ck_assert_int_eq(chmod(P("srch"), 0755), 0);

	/* names root cached in a directory others may never search */
	mkdir_as("priv", 0700, 0, 0);
	mkfile("priv/file", 0666, 0, 0);
	mkdir_as("priv/sub", 0777, 0, 0);
	ck_assert_int_eq(stat(P("priv/file"), &st), 0);
	ck_assert_int_eq(stat(P("priv/sub"), &st), 0);
	run_as(U1, walk_denied, "priv", "walk in a 0700 root directory after root's lookups");

	/* a name moved from an open directory into a closed one */
	mkdir_as("pub2", 0755, 0, 0);
	mkfile("pub2/file", 0666, 0, 0);
	run_as(U1, walk_ok, "pub2", "walk before the rename");
	ck_assert_int_eq(rename(P("pub2"), P("priv/pub2")), 0);
	run_as(U1, walk_denied, "priv/pub2", "walk below a directory moved into a 0700 one");
}
END_TEST

/* -- chown -- */

static void chown_nonowner(void *arg)
{
	struct stat a, b;

	(void)arg;
	EXPECT_ERR(chown(P("own/f"), U2, (gid_t)-1), EPERM, "chown to its current owner by a non-owner");
	EXPECT_ERR(chown(P("own/f"), (uid_t)-1, U2), EPERM, "chgrp to its current group by a non-owner");
	EXPECT_ERR(chown(P("own/f"), U1, (gid_t)-1), EPERM, "chown to myself");
	EXPECT_ERR(chown(P("own/f"), U2, U2), EPERM, "chown to the current owner and group");
	/* chown(-1, -1) asks for nothing: allowed to anyone, and ctime moves */
	EXPECT_OK(stat(P("own/f"), &a), "stat");
	tick();
	EXPECT_OK(chown(P("own/f"), (uid_t)-1, (gid_t)-1), "chown(-1, -1) by a non-owner");
	EXPECT_OK(stat(P("own/f"), &b), "stat");
	EXPECT(ts_after(b.st_ctim, a.st_ctim), "chown(-1, -1) did not change ctime");
}

static void chown_owner(void *arg)
{
	struct stat a, b;

	(void)arg;
	EXPECT_OK(chown(P("own/f"), U2, (gid_t)-1), "chown to myself by the owner");
	EXPECT_OK(chown(P("own/f"), (uid_t)-1, U2), "chgrp to its group by the owner");
	EXPECT_ERR(chown(P("own/f"), 0, (gid_t)-1), EPERM, "giving it away");
	EXPECT_ERR(chown(P("own/f"), (uid_t)-1, U1), EPERM, "chgrp to a group I am not in");
	EXPECT_OK(stat(P("own/f"), &a), "stat");
	tick();
	EXPECT_OK(chown(P("own/f"), (uid_t)-1, (gid_t)-1), "chown(-1, -1) by the owner");
	EXPECT_OK(stat(P("own/f"), &b), "stat");
	EXPECT(ts_after(b.st_ctim, a.st_ctim), "chown(-1, -1) by the owner did not change ctime");
	EXPECT(b.st_uid == U2 && b.st_gid == U2, "chown(-1, -1) changed the owner");
}

static void chgrp_member(void *arg)
{
	(void)arg;
	EXPECT_OK(chown(P("own/f"), (uid_t)-1, U1), "chgrp by the owner to a group it is in");
}

START_TEST(test_chown_rules)
{
	mkdir_as("own", 0777, 0, 0);
	mkfile("own/f", 0644, U2, U2);
	run_as(U1, chown_nonowner, NULL, "chown by a non-owner");
	run_as(U2, chown_owner, NULL, "chown by the owner");
	run_as_groups(U2, U1, chgrp_member, NULL, "chgrp to a supplementary group");
	ck_assert_int_eq(stat_of("own/f").st_gid, U1);
	/* root may do anything */
	ck_assert_int_eq(chown(P("own/f"), 0, 0), 0);
	ck_assert_int_eq(stat_of("own/f").st_uid, 0);
}
END_TEST

/* -- setuid/setgid -- */

static void write_to(void *arg)
{
	int fd;

	EXPECT_OK(fd = open(P(arg), O_WRONLY), "open for writing");
	if (fd < 0)
		return;
	EXPECT(write(fd, "x", 1) == 1, "write to %s: %s", (const char *)arg, strerror(errno));
	close(fd);
}

static void truncate_it(void *arg)
{
	EXPECT_OK(truncate(P(arg), 1), "truncate");
}

static void chown_noop_nonowner(void *arg)
{
	EXPECT_ERR(chown(P(arg), (uid_t)-1, (gid_t)-1), EPERM, "chown(-1, -1) of a setuid file by a non-owner");
}

START_TEST(test_setuid_cleared)
{
	mkdir_as("sid", 0777, 0, 0);
	mkfile("sid/suid", 04777, 0, 0);
	mkfile("sid/sgid_x", 02777, 0, 0);
	mkfile("sid/sgid_nox", 02767, 0, U1);   /* group U1 may not execute */
	mkfile("sid/sgid_nox2", 02767, 0, 0);
	mkfile("sid/trunc", 06777, 0, 0);
	/* a non-owner's write succeeds and clears the bits */
	run_as(U1, write_to, "sid/suid", "write to a setuid file");
	ck_assert_int_eq(mode_of("sid/suid"), 0777);
	run_as(U1, write_to, "sid/sgid_x", "write to a setgid group-executable file");
	ck_assert_int_eq(mode_of("sid/sgid_x"), 0777);
	/* setgid without group execute: kept for a member, cleared for others */
	run_as(U1, write_to, "sid/sgid_nox", "write by a member of the group");
	ck_assert_int_eq(mode_of("sid/sgid_nox"), 02767);
	run_as(U1, write_to, "sid/sgid_nox2", "write by a non-member");
	ck_assert_int_eq(mode_of("sid/sgid_nox2"), 0767);
	/* root keeps them (CAP_FSETID) */
	mkfile("sid/root", 06777, U2, U2);
	{
		int fd = open(P("sid/root"), O_WRONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "y", 1), 1);
		ck_assert_int_eq(close(fd), 0);
	}
	ck_assert_int_eq(mode_of("sid/root"), 06777);
	/* truncate by a non-owner clears them too */
	run_as(U1, truncate_it, "sid/trunc", "truncate of a setuid file");
	ck_assert_int_eq(mode_of("sid/trunc"), 0777);
	/* chown clears them, also root's, also to the same owner */
	mkfile("sid/chown", 06755, 0, 0);
	ck_assert_int_eq(chown(P("sid/chown"), 0, 0), 0);
	ck_assert_int_eq(mode_of("sid/chown"), 0755);
	mkfile("sid/chown2", 04755, 0, 0);
	ck_assert_int_eq(chown(P("sid/chown2"), (uid_t)-1, (gid_t)-1), 0);
	ck_assert_int_eq(mode_of("sid/chown2"), 0755);
	/* but chown(-1, -1) of a setuid file is a chmod: not for a non-owner */
	mkfile("sid/chown3", 04755, 0, 0);
	run_as(U1, chown_noop_nonowner, "sid/chown3", "chown(-1, -1) by a non-owner");
	ck_assert_int_eq(mode_of("sid/chown3"), 04755);
	/* directories keep them on chown */
	mkdir_as("sid/dir", 02755, 0, 0);
	ck_assert_int_eq(chown(P("sid/dir"), U1, U1), 0);
	ck_assert_int_eq(mode_of("sid/dir"), 02755);
}
END_TEST

/* -- ftruncate against how the file was opened -- */

static void ftruncate_mode0(void *arg)
{
	struct stat st;
	int fd;

	(void)arg;
	EXPECT_OK(fd = open(P("ft/new"), O_CREAT | O_RDWR | O_EXCL, 0), "create with mode 0");
	if (fd < 0)
		return;
	EXPECT_OK(ftruncate(fd, 100), "ftruncate of a mode-0 file open for writing");
	EXPECT(pwrite(fd, "ab", 2, 10) == 2, "write: %s", strerror(errno));
	EXPECT_OK(fallocate(fd, 0, 0, 8192), "fallocate through the handle");
	EXPECT_OK(fstat(fd, &st), "fstat");
	EXPECT(st.st_size == 8192, "size %lld after fallocate", (long long)st.st_size);
	EXPECT_OK(ftruncate(fd, 0), "ftruncate to 0");
	close(fd);
	/* by path it is checked against the mode */
	EXPECT_ERR(truncate(P("ft/new"), 10), EACCES, "truncate of a mode-0 file by path");
	EXPECT_ERR(open(P("ft/new"), O_WRONLY), EACCES, "open of a mode-0 file for writing");
	/* O_TRUNC needs write permission, also with O_RDONLY */
	EXPECT_ERR(open(P("ft/ro"), O_RDONLY | O_TRUNC), EACCES, "O_RDONLY|O_TRUNC of a read-only file");
	EXPECT_ERR(open(P("ft/ro"), O_WRONLY | O_TRUNC), EACCES, "O_WRONLY|O_TRUNC of a read-only file");
	EXPECT(stat(P("ft/ro"), &st) == 0 && st.st_size == 4, "a refused O_TRUNC truncated the file");
	/* ftruncate of a read-only handle: EINVAL (the kernel's) */
	EXPECT_OK(fd = open(P("ft/ro"), O_RDONLY), "open read-only");
	if (fd >= 0) {
		EXPECT_ERR(ftruncate(fd, 0), EINVAL, "ftruncate of a read-only handle");
		close(fd);
	}
}

START_TEST(test_ftruncate_checks_the_handle)
{
	mkdir_as("ft", 0777, 0, 0);
	mkfile("ft/ro", 0644, 0, 0);
	run_as(U1, ftruncate_mode0, NULL, "ftruncate");
}
END_TEST

/* -- utimes -- */

static void utimes_rules(void *arg)
{
	struct timespec now2[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	struct timespec now_omit[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	struct timespec omit2[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	struct timespec explicit_[2] = { { 1000, 0 }, { 2000, 0 } };

	(void)arg;
	/* writable, not mine: "now" for both is allowed, anything else is not */
	EXPECT_OK(utimes(P("ut/w"), NULL), "utimes(NULL) with write permission");
	EXPECT_OK(utimensat(AT_FDCWD, P("ut/w"), now2, 0), "UTIME_NOW for both with write permission");
	EXPECT_ERR(utimensat(AT_FDCWD, P("ut/w"), now_omit, 0), EPERM, "UTIME_NOW + UTIME_OMIT, not the owner");
	EXPECT_ERR(utimensat(AT_FDCWD, P("ut/w"), explicit_, 0), EPERM, "explicit times, not the owner");
	EXPECT_OK(utimensat(AT_FDCWD, P("ut/w"), omit2, 0), "UTIME_OMIT for both");
	/* not writable: EACCES for "now", EPERM for explicit */
	EXPECT_ERR(utimes(P("ut/r"), NULL), EACCES, "utimes(NULL) without write permission");
	EXPECT_ERR(utimensat(AT_FDCWD, P("ut/r"), now2, 0), EACCES, "UTIME_NOW without write permission");
	EXPECT_ERR(utimensat(AT_FDCWD, P("ut/r"), explicit_, 0), EPERM, "explicit times without write permission");
	/* mine: everything */
	EXPECT_OK(utimensat(AT_FDCWD, P("ut/mine"), explicit_, 0), "explicit times by the owner");
	EXPECT_OK(utimensat(AT_FDCWD, P("ut/mine"), now_omit, 0), "UTIME_NOW + UTIME_OMIT by the owner");
	EXPECT_OK(utimes(P("ut/mine0"), NULL), "utimes(NULL) of my mode-0 file");
}

START_TEST(test_utimes_rules)
{
	struct stat st;

	mkdir_as("ut", 0777, 0, 0);
	mkfile("ut/w", 0666, 0, 0);
	mkfile("ut/r", 0644, 0, 0);
	mkfile("ut/mine", 0644, U1, U1);
	mkfile("ut/mine0", 0, U1, U1);
	run_as(U1, utimes_rules, NULL, "utimes");
	st = stat_of("ut/mine");
	ck_assert_int_eq(st.st_mtim.tv_sec, 2000);
}
END_TEST

/* -- FIFOs and other special files -- */

static void special_files(void *arg)
{
	(void)arg;
	EXPECT_ERR(access(P("sp/fifo"), R_OK), EACCES, "access(R_OK) of a 0600 FIFO of root");
	EXPECT_ERR(access(P("sp/fifo"), W_OK), EACCES, "access(W_OK) of a 0600 FIFO of root");
	EXPECT_ERR(chmod(P("sp/fifo"), 0666), EPERM, "chmod of root's FIFO");
	EXPECT_ERR(chown(P("sp/fifo"), U1, (gid_t)-1), EPERM, "chown of root's FIFO");
	EXPECT_ERR(truncate(P("sp/fifo"), 0), EINVAL, "truncate of a FIFO");
	EXPECT_ERR(mknod(P("sp/chr"), S_IFCHR | 0600, makedev(1, 3)), EPERM, "mknod of a device");
	EXPECT_ERR(mkfifo(P("sp/ro/fifo"), 0600), EACCES, "mkfifo in a directory I may not write");
	EXPECT_OK(mkfifo(P("sp/myfifo"), 0640), "mkfifo in a writable directory");
	EXPECT_OK(access(P("sp/myfifo"), R_OK | W_OK), "access of my FIFO");
	EXPECT_ERR(setxattr(P("sp/myfifo"), "user.k", "v", 1, 0), EPERM, "user.* xattr on a FIFO");
	EXPECT_OK(unlink(P("sp/myfifo")), "unlink of my FIFO");
}

START_TEST(test_special_files)
{
	struct stat st;

	mkdir_as("sp", 0777, 0, 0);
	mkdir_as("sp/ro", 0755, 0, 0);
	ck_assert_int_eq(mkfifo(P("sp/fifo"), 0600), 0);
	ck_assert_int_eq(mknod(P("sp/null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	ck_assert_int_eq(stat(P("sp/null"), &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_int_eq(st.st_rdev, makedev(1, 3));
	run_as(U1, special_files, NULL, "special files");
	ck_assert(S_ISFIFO(stat_of("sp/fifo").st_mode));
}
END_TEST

/* -- ctime on every metadata change -- */

/* @op changes the ctime of @rel (called @after afterwards, if not NULL) */
static void ctime_moves_to(const char *what, const char *rel, const char *after, int (*op)(void))
{
	struct stat a = stat_of(rel), b;

	tick();
	ck_assert_msg(op() == 0, "%s: %s", what, strerror(errno));
	b = stat_of(after ? after : rel);
	ck_assert_msg(ts_after(b.st_ctim, a.st_ctim), "%s did not change ctime", what);
}

static void ctime_moves(const char *what, const char *rel, int (*op)(void))
{
	ctime_moves_to(what, rel, NULL, op);
}

static int op_chmod(void) { return chmod(P("ct/f"), 0640); }
static int op_chown(void) { return chown(P("ct/f"), U1, U1); }
static int op_chown_same(void) { return chown(P("ct/f"), U1, U1); }
static int op_chown_none(void) { return chown(P("ct/f"), (uid_t)-1, (gid_t)-1); }
static int op_link(void) { return link(P("ct/f"), P("ct/f2")); }
static int op_unlink_link(void) { return unlink(P("ct/f2")); }
static int op_rename(void) { return rename(P("ct/f"), P("ct/g")); }
static int op_rename_back(void) { return rename(P("ct/g"), P("ct/f")); }
static int op_setxattr(void) { return setxattr(P("ct/f"), "user.k", "v", 1, 0); }
static int op_removexattr(void) { return removexattr(P("ct/f"), "user.k"); }
static int op_truncate(void) { return truncate(P("ct/f"), 2); }
static int op_truncate_same(void) { return truncate(P("ct/f"), 2); }
static int op_utimes(void) { return utimes(P("ct/f"), NULL); }
static int op_write(void)
{
	int fd = open(P("ct/f"), O_WRONLY);
	if (fd < 0 || pwrite(fd, "z", 1, 0) != 1)
		return -1;
	return close(fd);
}

START_TEST(test_ctime_changes)
{
	mkdir_as("ct", 0777, 0, 0);
	mkfile("ct/f", 0644, 0, 0);
	ctime_moves("chmod", "ct/f", op_chmod);
	ctime_moves("chown", "ct/f", op_chown);
	ctime_moves("chown to the same owner", "ct/f", op_chown_same);
	ctime_moves("chown(-1, -1)", "ct/f", op_chown_none);
	ctime_moves("link", "ct/f", op_link);
	ctime_moves("unlink of a second link", "ct/f", op_unlink_link);
	ctime_moves_to("rename", "ct/f", "ct/g", op_rename);
	ctime_moves_to("rename back", "ct/g", "ct/f", op_rename_back);
	ctime_moves("setxattr", "ct/f", op_setxattr);
	ctime_moves("removexattr", "ct/f", op_removexattr);
	ctime_moves("truncate", "ct/f", op_truncate);
	ctime_moves("truncate to the same size", "ct/f", op_truncate_same);
	ctime_moves("utimes", "ct/f", op_utimes);
	ctime_moves("write", "ct/f", op_write);
	/* the directory too, when its entries change */
	ctime_moves("link (its directory)", "ct", op_link);
	ctime_moves("unlink (its directory)", "ct", op_unlink_link);
	ctime_moves("rename (its directory)", "ct", op_rename);
}
END_TEST

/* -- sticky and setgid directories, rename and remove rules, names -- */

static void sticky_other(void *arg)
{
	(void)arg;
	EXPECT_ERR(unlink(P("st/u1file")), EPERM, "unlink of another's file in a sticky directory");
	EXPECT_ERR(rename(P("st/u1file"), P("st/x")), EPERM, "rename of another's file in a sticky directory");
	EXPECT_ERR(rename(P("st/mine"), P("st/u1file")), EPERM, "rename over another's file in a sticky directory");
	EXPECT_ERR(rmdir(P("st/u1dir")), EPERM, "rmdir of another's directory in a sticky directory");
	EXPECT_ERR(setxattr(P("st"), "user.k", "v", 1, 0), EPERM, "user.* xattr on another's sticky directory");
	EXPECT_OK(rename(P("st/mine"), P("st/mine2")), "rename of my own file in a sticky directory");
	EXPECT_OK(unlink(P("st/mine2")), "unlink of my own file in a sticky directory");
}

static void sticky_dirowner(void *arg)
{
	(void)arg;
	EXPECT_OK(unlink(P("st2/u1file")), "unlink by the sticky directory's owner");
}

static void make_mine(void *arg)
{
	int fd;

	EXPECT_OK(fd = open(P(arg), O_CREAT | O_WRONLY, 0644), "create");
	if (fd >= 0)
		close(fd);
}

static void setgid_dir(void *arg)
{
	struct stat st;
	int fd;

	(void)arg;
	EXPECT_OK(fd = open(P("sg/f"), O_CREAT | O_WRONLY, 0644), "create in a setgid directory");
	if (fd >= 0)
		close(fd);
	EXPECT(stat(P("sg/f"), &st) == 0 && st.st_gid == U2, "a new file did not take the directory's group");
	EXPECT_OK(mkdir(P("sg/sub"), 0755), "mkdir in a setgid directory");
	EXPECT(stat(P("sg/sub"), &st) == 0 && st.st_gid == U2 && (st.st_mode & S_ISGID),
	       "a new directory did not inherit group and S_ISGID (mode 0%o gid %d)", st.st_mode & 07777,
	       (int)st.st_gid);
	/* not a member of the directory's group: a group-executable S_ISGID goes */
	EXPECT_OK(fd = open(P("sg/x"), O_CREAT | O_WRONLY, 02755), "create setgid file as a non-member");
	if (fd >= 0)
		close(fd);
	EXPECT(stat(P("sg/x"), &st) == 0 && !(st.st_mode & S_ISGID), "a non-member kept S_ISGID (0%o)",
	       st.st_mode & 07777);
	/* and chmod by a non-member of the file's group clears it */
	EXPECT_OK(chmod(P("sg/f"), 02755), "chmod of my file to setgid");
	EXPECT(stat(P("sg/f"), &st) == 0 && (st.st_mode & 07777) == 0755, "chmod by a non-member kept S_ISGID (0%o)",
	       st.st_mode & 07777);
}

static void rename_dir_needs_write(void *arg)
{
	(void)arg;
	EXPECT_ERR(rename(P("rn/a/d"), P("rn/b/d")), EACCES, "moving a directory I may not write to another parent");
	EXPECT_OK(rename(P("rn/a/d"), P("rn/a/d2")), "renaming it in the same parent");
	EXPECT_ERR(rename(P("rn/a/d2"), P("rn/ro/d")), EACCES, "moving into a directory I may not write");
	EXPECT_ERR(link(P("rn/a/f"), P("rn/ro/f")), EACCES, "link into a directory I may not write");
	EXPECT_ERR(open(P("rn/ro/new"), O_CREAT | O_WRONLY, 0644), EACCES, "create in a directory I may not write");
	EXPECT_OK(close(open(P("rn/ro/exists"), O_CREAT | O_RDONLY, 0644)), "O_CREAT of an existing file");
	EXPECT_ERR(open(P("rn/ro/exists"), O_CREAT | O_EXCL | O_RDONLY, 0644), EEXIST, "O_EXCL of an existing file");
	EXPECT_ERR(mkdir(P("rn/ro/exists"), 0755), EEXIST, "mkdir of an existing name without write permission");
	EXPECT_ERR(unlink(P("rn/ro/nothere")), ENOENT, "unlink of nothing without write permission");
	EXPECT_ERR(unlink(P("rn/ro/exists")), EACCES, "unlink without write permission");
}

/* fs.protected_hardlinks = 1 (the default): links to others' files only if
 * regular, not setuid, and readable and writable by the caller */
static void hardlink_rules(void *arg)
{
	(void)arg;
	EXPECT_ERR(link(P("hl/ro"), P("hl/l1")), EPERM, "link to another's read-only file");
	EXPECT_ERR(link(P("hl/suid"), P("hl/l2")), EPERM, "link to another's setuid file");
	EXPECT_OK(link(P("hl/rw"), P("hl/l3")), "link to another's read-write file");
	EXPECT_OK(link(P("hl/mine"), P("hl/l4")), "link to my own read-only file");
}

static void exec_rules(void *arg)
{
	char *argv[] = { "prog", NULL };
	pid_t pid;
	int st;

	(void)arg;
	/* execve needs execute permission: read is not enough */
	pid = fork();
	if (pid == 0) {
		execv(P("ex/readable"), argv);
		_exit(errno == EACCES ? 42 : 43);
	}
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 42,
	       "exec of a 0744 program of root did not fail with EACCES (status 0x%x)", st);
	/* and execute without read is enough for a binary */
	pid = fork();
	if (pid == 0) {
		execv(P("ex/xonly"), argv);
		_exit(errno == EACCES ? 42 : 43);
	}
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "exec of a 0711 binary failed (status 0x%x)", st);
}

START_TEST(test_directories_and_names)
{
	char longname[300];
	struct stat st;

	/* sticky */
	mkdir_as("st", 01777, 0, 0);
	run_as(U1, make_mine, "st/u1file", "create in a sticky directory");
	ck_assert_int_eq(mkdir(P("st/u1dir"), 0755), 0);
	ck_assert_int_eq(chown(P("st/u1dir"), U1, U1), 0);
	run_as(U2, make_mine, "st/mine", "create in a sticky directory");
	run_as(U2, sticky_other, NULL, "sticky directory");
	mkdir_as("st2", 01777, U2, U2);
	run_as(U1, make_mine, "st2/u1file", "create in another's sticky directory");
	run_as(U2, sticky_dirowner, NULL, "sticky directory owner");
	ck_assert_int_eq(unlink(P("st/u1file")), 0);   /* root may */

	/* setgid */
	mkdir_as("sg", 02777, 0, U2);
	run_as(U1, setgid_dir, NULL, "setgid directory");

	/* rename and link need write on both directories, and on a moved directory */
	mkdir_as("rn", 0777, 0, 0);
	mkdir_as("rn/a", 0777, 0, 0);
	mkdir_as("rn/b", 0777, 0, 0);
	mkdir_as("rn/ro", 0755, 0, 0);
	mkdir_as("rn/a/d", 0755, 0, 0);
	mkfile("rn/a/f", 0666, U1, U1);
	mkfile("rn/ro/exists", 0644, U1, U1);
	run_as(U1, rename_dir_needs_write, NULL, "rename and create rules");

	/* protected hardlinks */
	{
		FILE *f = fopen("/proc/sys/fs/protected_hardlinks", "r");
		int v = 0;

		if (f) {
			if (fscanf(f, "%d", &v) != 1)
				v = 0;
			fclose(f);
		}
		mkdir_as("hl", 0777, 0, 0);
		mkfile("hl/ro", 0644, 0, 0);
		mkfile("hl/suid", 04777, 0, 0);
		mkfile("hl/rw", 0666, 0, 0);
		mkfile("hl/mine", 0444, U1, U1);
		if (v == 1)
			run_as(U1, hardlink_rules, NULL, "protected hardlinks");
	}

	/* error cases, as root */
	ck_assert_int_eq(mkdir(P("er"), 0755), 0);
	ck_assert_int_eq(mkdir(P("er/full"), 0755), 0);
	ck_assert_int_eq(mkdir(P("er/full/x"), 0755), 0);
	ck_assert_int_eq(mkdir(P("er/empty"), 0755), 0);
	mkfile("er/file", 0644, 0, 0);
	ck_assert_int_eq(rename(P("er/empty"), P("er/full")), -1);
	ck_assert_int_eq(errno, ENOTEMPTY);
	ck_assert_int_eq(rename(P("er/empty"), P("er/full/x/y")), 0);
	ck_assert_int_eq(rename(P("er/full"), P("er/full/x/y/z")), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rename(P("er/file"), P("er/full")), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(rename(P("er/full"), P("er/file")), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_int_eq(rmdir(P("er/full")), -1);
	ck_assert_int_eq(errno, ENOTEMPTY);
	ck_assert_int_eq(rmdir(P("er/file")), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_int_eq(unlink(P("er/full")), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(rmdir(P("er/full/.")), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(link(P("er/full"), P("er/dirlink")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(open(P("er/file/x"), O_RDONLY), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	{
		char out[PATH_MAX + 16];
		snprintf(out, sizeof(out), "%s/outside", fs.dir);
		ck_assert_int_eq(rename(P("er/file"), out), -1);
		ck_assert_int_eq(errno, EXDEV);
	}
	memcpy(longname, "er/", 3);
	memset(longname + 3, 'n', 256);   /* a 256-byte name */
	longname[259] = '\0';
	ck_assert_int_eq(open(P(longname), O_CREAT | O_WRONLY, 0644), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_int_eq(mkdir(P(longname), 0755), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_int_eq(rename(P("er/file"), P(longname)), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_int_eq(symlink("target", P(longname)), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	longname[258] = '\0';   /* 255: fine */
	ck_assert_int_eq(mkdir(P(longname), 0755), 0);
	ck_assert_int_eq(stat(P(longname), &st), 0);

	/* exec permission */
	mkdir_as("ex", 0755, 0, 0);
	{
		int fd = open(P("ex/readable"), O_CREAT | O_WRONLY, 0744);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
		ck_assert_int_eq(close(fd), 0);
		ck_assert_int_eq(chmod(P("ex/readable"), 0744), 0);
		char *cp[] = { "/bin/cp", "/bin/true", (char *)P("ex/xonly"), NULL };
		ck_assert_int_eq(lfs_run(cp, 10000, NULL), 0);
		ck_assert_int_eq(chmod(P("ex/xonly"), 0711), 0);
	}
	run_as(U1, exec_rules, NULL, "exec permission");
}
END_TEST

/* xattrs as others */
static void xattr_rules(void *arg)
{
	char b[16];

	(void)arg;
	EXPECT_OK(setxattr(P("xa/w"), "user.k", "v", 1, 0), "user.* on a writable file of another");
	EXPECT_OK(getxattr(P("xa/w"), "user.k", b, sizeof(b)), "get user.* of a readable file");
	EXPECT_ERR(setxattr(P("xa/r"), "user.k", "v", 1, 0), EACCES, "user.* on a read-only file");
	EXPECT_ERR(removexattr(P("xa/r"), "user.k"), EACCES, "remove user.* of a read-only file");
	EXPECT_ERR(getxattr(P("xa/secret"), "user.k", b, sizeof(b)), EACCES, "get user.* of an unreadable file");
	EXPECT_ERR(setxattr(P("xa/w"), "trusted.k", "v", 1, 0), EPERM, "trusted.* by a user");
	EXPECT_ERR(getxattr(P("xa/w"), "trusted.k", b, sizeof(b)), ENODATA, "get trusted.* by a user");
}

START_TEST(test_xattr_rules)
{
	mkdir_as("xa", 0755, 0, 0);
	mkfile("xa/w", 0666, 0, 0);
	mkfile("xa/r", 0644, 0, 0);
	mkfile("xa/secret", 0600, 0, 0);
	ck_assert_int_eq(setxattr(P("xa/r"), "user.k", "v", 1, 0), 0);
	ck_assert_int_eq(setxattr(P("xa/secret"), "user.k", "v", 1, 0), 0);
	ck_assert_int_eq(setxattr(P("xa/w"), "trusted.k", "v", 1, 0), 0);
	run_as(U1, xattr_rules, NULL, "xattrs");
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
	tcase_add_test(tc, test_nfs_write_drops_kernel_pages);
	suite_add_tcase(s, tc);

	tc = tcase_create("posix");
	tcase_add_unchecked_fixture(tc, setup_posix, teardown_posix);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_search_permission_cached);
	tcase_add_test(tc, test_chown_rules);
	tcase_add_test(tc, test_setuid_cleared);
	tcase_add_test(tc, test_ftruncate_checks_the_handle);
	tcase_add_test(tc, test_utimes_rules);
	tcase_add_test(tc, test_special_files);
	tcase_add_test(tc, test_ctime_changes);
	tcase_add_test(tc, test_directories_and_names);
	tcase_add_test(tc, test_xattr_rules);
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
