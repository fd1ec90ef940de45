/*
 * test_fuse_stress.c - many processes on two mounts of one filesystem doing
 * everything at once, with a watchdog and a checker (issue 24).
 *
 *   mix   16 processes on one mount and 4 on a second mount of the same
 *         filesystem, for LOLIGO_STRESS_SECONDS (default 60) each: create,
 *         buffered write, O_DIRECT write, mmap write, truncate, fallocate,
 *         fsync, fdatasync, fsync of a directory, syncfs, rename, link,
 *         unlink, mkdir, rmdir, chmod, utimes, read, stat, readdir, on a
 *         small shared namespace (so they meet on the same files and
 *         directories, and the two clients revoke each other's caps in
 *         the middle of writebacks), with a client_oc_size small enough
 *         that writers wait for room.
 *
 * The watchdog: every worker bumps its counter in shared memory after each
 * operation; when one has not moved for LOLIGO_STRESS_STALL (default 30 s)
 * the test prints what `ops` on both clients' admin sockets says, every
 * thread's stack of both loligo-fuse processes and of loligo-mds (gdb), and
 * fails.  On main e7542eb this case hung in the first seconds (the
 * writeback waves of issue 24).
 *
 * The checker, afterwards: no operation failed with an error the operation
 * cannot give on a local filesystem in this namespace (EIO, ENOTCONN,
 * ESTALE, EBADF...); each worker's private file, written and fsync'd on its
 * mount and read back on the other, had the bytes written; and once the
 * dust settles both mounts list the same names with the same sizes and
 * link counts, and every file's link count is the number of its names.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/test_fuse_harness.h"

#define NW1 16          /* workers on the first mount */
#define NW2 4           /* ... and on the second */
#define NW (NW1 + NW2)
#define NDIRS 4
#define NFILES 8
#define FILE_MAX (3 * 1024 * 1024)   /* writes land below this */
#define BAD_MAX 64
#ifndef STRESS_OPTS
#define STRESS_OPTS ""
#endif

static struct lfs fs;

struct worker_stat {
	_Atomic uint64_t ops;
	_Atomic uint64_t last_ns;      /* when its last operation returned */
	_Atomic int cur_op;            /* what it is doing now (index into op_names) */
	_Atomic uint64_t bad;          /* unexpected errors */
	_Atomic uint64_t priv_checked, priv_bad;
	_Atomic int done;
	/* the private file: the last version whose fsync returned 0 (acknowledged),
	 * and the one being written (either may be there after a crash) */
	_Atomic uint64_t acked_len, try_len;
	_Atomic unsigned acked_seed, try_seed;
	_Atomic bool acked, trying;
};

struct shared {
	struct worker_stat w[NW];
	_Atomic uint64_t kernel_estale;
	_Atomic int nbad_lines;
	char bad_lines[BAD_MAX][200];
};

static struct shared *sh;
static bool kill_mode;        /* LOLIGO_STRESS_KILLS: daemons are killed -9 during the run */
static _Atomic bool *mount2_down;   /* in kill mode: mount 2 is being killed and remounted */

enum op {
	OP_CREATE, OP_WRITE, OP_DIRECT, OP_MMAP, OP_TRUNCATE, OP_FALLOCATE, OP_FSYNC, OP_FDATASYNC, OP_FSYNCDIR,
	OP_SYNCFS, OP_RENAME, OP_LINK, OP_UNLINK, OP_MKDIR, OP_RMDIR, OP_CHMOD, OP_UTIMES, OP_READ, OP_STAT,
	OP_READDIR, OP_PRIVATE, OP_MAX
};
static const char *const op_names[OP_MAX] = {
	"create", "write", "O_DIRECT write", "mmap write", "truncate", "fallocate", "fsync", "fdatasync",
	"fsync(dir)", "syncfs", "rename", "link", "unlink", "mkdir", "rmdir", "chmod", "utimes", "read", "stat",
	"readdir", "private file",
};
/* how often each runs, out of the sum */
static const int op_weight[OP_MAX] = {
	8, 14, 4, 3, 5, 3, 5, 3, 6, 1, 8, 4, 6, 3, 3, 3, 2, 8, 4, 2, 1,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double env_secs(const char *name, double dflt)
{
	const char *e = getenv(name);
	double v = e ? atof(e) : 0;

	return v > 0 ? v : dflt;
}

/* ---- the workers ----------------------------------------------------------- */

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffffff;
}

static void bad(int id, enum op op, const char *path, int err)
{
	int n = atomic_fetch_add(&sh->nbad_lines, 1);
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	atomic_fetch_add(&sh->w[id].bad, 1);
	if (n < BAD_MAX)
		snprintf(sh->bad_lines[n], sizeof(sh->bad_lines[n]), "%ld.%06ld worker %d: %s %.100s: %s",
			 (long)ts.tv_sec, ts.tv_nsec / 1000, id, op_names[op], path, strerror(err));
}

/* errors the namespace's races give on any filesystem */
static bool expected(int id, enum op op, int err)
{
	/* a worker of a mount whose loligo-fuse was killed -9 (kill mode) */
	if (kill_mode && (err == ENOTCONN || err == ECONNABORTED || err == EIO || err == ENODEV) &&
	    (id >= NW1 || op == OP_PRIVATE))
		return true;
	switch (err) {
	case ENOENT: case EEXIST: case ENOTEMPTY: case EISDIR: case ENOTDIR:
		return true;
	case EINVAL:   /* rename of a directory into itself, O_DIRECT on a directory */
		return op == OP_RENAME || op == OP_DIRECT;
	case EBUSY:
		return op == OP_RENAME || op == OP_RMDIR;
	case EMLINK:
		return op == OP_LINK || op == OP_MKDIR;
	case ESTALE:
	case ELOOP:
		/*
		 * A network filesystem's, as NFS's and the ceph kernel client's:
		 * the VFS retries a syscall once when it meets ESTALE, and a
		 * second race in a row reaches the caller.  Two sources here:
		 * loligo-fuse answers ESTALE for a request by inode about a file
		 * that lost its last link (no longer open anywhere) after the
		 * kernel looked its name up, so that the kernel looks the name up
		 * again (ENOENT would fail an open of a name renamed over: the
		 * new file is there); and the kernel's dcache, when a directory
		 * the other mount renamed is found under its new name while this
		 * kernel still has its old dentry: d_splice_alias() ->
		 * __d_unalias() answers ESTALE when it cannot take the
		 * superblock's rename mutex (this mount's own renames hold it),
		 * ELOOP when the move would put it under itself.  Directories
		 * held open are another matter: test_fuse_semantics.
		 */
		atomic_fetch_add(&sh->kernel_estale, 1);
		return true;
	case EPERM:    /* link to a directory */
		return op == OP_LINK;
	case ENODEV:   /* mmap of a directory */
		return op == OP_MMAP;
	default:
		return false;
	}
}

static void pick_file(unsigned *s, const char *root, char *buf, size_t len)
{
	unsigned d = rnd(s) % (NDIRS + 1), f = rnd(s) % NFILES;

	if (d == NDIRS)
		snprintf(buf, len, "%s/f%u", root, f);
	else
		snprintf(buf, len, "%s/d%u/f%u", root, d, f);
}

static void pick_dir(unsigned *s, const char *root, char *buf, size_t len)
{
	unsigned d = rnd(s) % (NDIRS + 1);

	if (d == NDIRS)
		snprintf(buf, len, "%s", root);
	else
		snprintf(buf, len, "%s/d%u", root, d);
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static int do_write(const char *p, int flags, unsigned *s, int id)
{
	static char buf[256 * 1024];
	size_t n = 1 + rnd(s) % sizeof(buf);
	off_t off = (off_t)(rnd(s) % FILE_MAX);
	int fd = open(p, O_WRONLY | flags), r = 0;

	if (fd < 0)
		return -errno;
	memset(buf, 'a' + id % 26, n);
	if (pwrite(fd, buf, n, off) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	return r;
}

static int do_direct(const char *p, unsigned *s)
{
	void *buf = NULL;
	size_t n = 4096 * (1 + rnd(s) % 32);
	off_t off = (off_t)(rnd(s) % (FILE_MAX / 4096)) * 4096;
	int fd, r = 0;

	if (posix_memalign(&buf, 4096, n))
		return -ENOMEM;
	memset(buf, 'D', n);
	fd = open(p, O_WRONLY | O_DIRECT);
	if (fd < 0) {
		r = -errno;
		free(buf);
		return r;
	}
	if (pwrite(fd, buf, n, off) < 0)
		r = -errno;
	if (rnd(s) % 2 && pread(fd, buf, n, off) < 0 && errno != EBADF)   /* O_WRONLY: EBADF is right */
		r = r ? r : -errno;
	close(fd);
	free(buf);
	return r;
}

static int do_mmap(const char *p, unsigned *s)
{
	size_t len = 4096 * (1 + rnd(s) % 16);
	int fd = open(p, O_RDWR), r = 0;
	char *m;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {   /* grow or shrink it to the mapping */
		r = -errno;
		close(fd);
		return r;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
		close(fd);
		return r;
	}
	/* another worker may cut the file under the mapping: SIGBUS is POSIX's answer */
	if (!sigsetjmp(bus_jmp, 1)) {
		memset(m, 'M', len);
		if (msync(m, len, MS_SYNC) < 0)
			r = -errno;
	}
	munmap(m, len);
	close(fd);
	return r;
}

static int do_fsync(const char *p, bool data)
{
	int fd = open(p, O_RDWR), r = 0;

	if (fd < 0)
		return -errno;
	if ((data ? fdatasync(fd) : fsync(fd)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int do_fsyncdir(const char *p)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY), r = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int do_read(const char *p, unsigned *s)
{
	static char buf[512 * 1024];
	int fd = open(p, O_RDONLY), r = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, buf, 1 + rnd(s) % sizeof(buf), (off_t)(rnd(s) % FILE_MAX)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int do_readdir(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *de;
	struct stat st;
	char q[PATH_MAX + 300];

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		snprintf(q, sizeof(q), "%s/%s", p, de->d_name);
		if (lstat(q, &st) < 0 && errno != ENOENT) {
			int r = -errno;
			closedir(d);
			return r;
		}
	}
	closedir(d);
	return 0;
}

/*
 * Write the worker's own file on this mount, fsync, close; read it on the
 * other mount: every byte as written (close-to-open between two clients).
 */
static int do_private(int id, const char *root, const char *other, unsigned *s)
{
	static unsigned char buf[300000], got[300000];
	char p[PATH_MAX], q[PATH_MAX];
	size_t n = 1 + rnd(s) % sizeof(buf);
	unsigned seed = rnd(s);
	int fd, r = 0;
	ssize_t g;

	snprintf(p, sizeof(p), "%s/priv%d", root, id);
	snprintf(q, sizeof(q), "%s/priv%d", other, id);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(seed + i * 7);
	atomic_store(&sh->w[id].try_len, n);
	atomic_store(&sh->w[id].try_seed, seed);
	atomic_store(&sh->w[id].trying, true);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != (ssize_t)n || fsync(fd) < 0)
		r = -errno;
	if (!r) {
		/* acknowledged: it must survive any crash from here on */
		atomic_store(&sh->w[id].acked_len, n);
		atomic_store(&sh->w[id].acked_seed, seed);
		atomic_store(&sh->w[id].acked, true);
		atomic_store(&sh->w[id].trying, false);
	}
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r)
		return r;
	fd = open(q, O_RDONLY);
	if (fd < 0)
		return -errno;
	g = read(fd, got, sizeof(got));
	close(fd);
	if (kill_mode && (g < 0 || atomic_load(mount2_down)))
		return g < 0 ? -errno : 0;   /* the other mount went down meanwhile */
	atomic_fetch_add(&sh->w[id].priv_checked, 1);
	if (g != (ssize_t)n || memcmp(buf, got, n)) {
		atomic_fetch_add(&sh->w[id].priv_bad, 1);
		int k = atomic_fetch_add(&sh->nbad_lines, 1);
		if (k < BAD_MAX)
			snprintf(sh->bad_lines[k], sizeof(sh->bad_lines[k]),
				 "worker %d: private file read on the other mount: %zd bytes, %zu written%s", id, g, n,
				 g == (ssize_t)n ? ", contents differ" : "");
	}
	return 0;
}

static void worker(int id, const char *root, const char *other, uint64_t until)
{
	unsigned s = 0x9e3779b9u * (unsigned)(id + 1), total = 0;
	char p[PATH_MAX], q[PATH_MAX];
	struct sigaction sa = { .sa_handler = on_sigbus };

	sigaction(SIGBUS, &sa, NULL);
	for (int i = 0; i < OP_MAX; i++)
		total += (unsigned)op_weight[i];
	while (now_ns() < until) {
		unsigned x = rnd(&s) % total;
		enum op op = 0;
		int r = 0;

		while (x >= (unsigned)op_weight[op])
			x -= (unsigned)op_weight[op++];
		atomic_store(&sh->w[id].cur_op, op);
		pick_file(&s, root, p, sizeof(p));
		switch (op) {
		case OP_CREATE: {
			int fd = open(p, O_CREAT | O_WRONLY | (rnd(&s) % 4 ? 0 : O_TRUNC), 0644);
			if (fd < 0)
				r = -errno;
			else
				close(fd);
			break;
		}
		case OP_WRITE:
			r = do_write(p, rnd(&s) % 8 ? 0 : O_APPEND, &s, id);
			break;
		case OP_DIRECT:
			r = do_direct(p, &s);
			break;
		case OP_MMAP:
			r = do_mmap(p, &s);
			break;
		case OP_TRUNCATE:
			r = truncate(p, (off_t)(rnd(&s) % FILE_MAX)) < 0 ? -errno : 0;
			break;
		case OP_FALLOCATE: {
			int fd = open(p, O_WRONLY);
			if (fd < 0) {
				r = -errno;
				break;
			}
			r = posix_fallocate(fd, (off_t)(rnd(&s) % FILE_MAX), 1 + rnd(&s) % 65536);
			r = -r;
			close(fd);
			break;
		}
		case OP_FSYNC:
		case OP_FDATASYNC:
			r = do_fsync(p, op == OP_FDATASYNC);
			break;
		case OP_FSYNCDIR:
			pick_dir(&s, root, q, sizeof(q));
			r = do_fsyncdir(q);
			break;
		case OP_SYNCFS: {
			int fd = open(root, O_RDONLY | O_DIRECTORY);
			if (fd < 0) {
				r = -errno;
				break;
			}
			r = syncfs(fd) < 0 ? -errno : 0;
			close(fd);
			break;
		}
		case OP_RENAME:
			if (rnd(&s) % 4 == 0)
				pick_dir(&s, root, q, sizeof(q)), snprintf(p, sizeof(p), "%s/d%u", root, rnd(&s) % NDIRS),
					strncat(q, "/dmv", sizeof(q) - strlen(q) - 1);
			else
				pick_file(&s, root, q, sizeof(q));
			r = rename(p, q) < 0 ? -errno : 0;
			if (r == -ENOENT && strstr(q, "/dmv")) {
				/* put a moved directory back */
				r = rename(q, p) < 0 ? -errno : 0;
			}
			break;
		case OP_LINK:
			pick_file(&s, root, q, sizeof(q));
			r = link(p, q) < 0 ? -errno : 0;
			break;
		case OP_UNLINK:
			r = unlink(p) < 0 ? -errno : 0;
			break;
		case OP_MKDIR:
			snprintf(q, sizeof(q), "%s/d%u", root, rnd(&s) % NDIRS);
			r = mkdir(q, 0755) < 0 ? -errno : 0;
			if (r == 0 || r == -EEXIST) {
				strncat(q, "/sub", sizeof(q) - strlen(q) - 1);
				r = mkdir(q, 0755) < 0 ? -errno : 0;
			}
			break;
		case OP_RMDIR:
			snprintf(q, sizeof(q), "%s/d%u/sub", root, rnd(&s) % NDIRS);
			r = rmdir(q) < 0 ? -errno : 0;
			break;
		case OP_CHMOD:
			r = chmod(p, 0600 | (rnd(&s) % 2 ? 044 : 0)) < 0 ? -errno : 0;
			break;
		case OP_UTIMES:
			r = utimes(p, NULL) < 0 ? -errno : 0;
			break;
		case OP_READ:
			r = do_read(p, &s);
			break;
		case OP_STAT: {
			struct stat st;
			r = stat(p, &st) < 0 ? -errno : 0;
			break;
		}
		case OP_READDIR:
			pick_dir(&s, root, q, sizeof(q));
			r = do_readdir(q);
			break;
		case OP_PRIVATE:
			r = do_private(id, root, other, &s);
			break;
		case OP_MAX:
			break;
		}
		if (r < 0 && !expected(id, op, -r))
			bad(id, op, op == OP_FSYNCDIR || op == OP_READDIR || op == OP_MKDIR || op == OP_RMDIR ? q : p, -r);
		atomic_fetch_add(&sh->w[id].ops, 1);
		atomic_store(&sh->w[id].last_ns, now_ns());
	}
	atomic_store(&sh->w[id].done, 1);
}

/* ---- the watchdog and the checker -------------------------------------------- */

static void run_show(const char *what, char *const argv[])
{
	fprintf(stderr, "==== %s\n", what);
	fflush(stderr);
	lfs_run(argv, 20000, NULL);
}

/* every thread's kernel stack of @pid (readable even for a thread gdb cannot stop: in D state) */
static void kernel_stacks(const char *what, pid_t pid)
{
	char p[400], line[512];
	struct dirent *de;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	if (!(d = opendir(p)))
		return;
	fprintf(stderr, "==== kernel stacks of %s (pid %d)\n", what, (int)pid);
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/comm", (int)pid, de->d_name);
		if ((f = fopen(p, "r"))) {
			if (fgets(line, sizeof(line), f))
				fprintf(stderr, "-- task %s %s", de->d_name, line);
			fclose(f);
		}
		snprintf(p, sizeof(p), "/proc/%d/task/%s/stack", (int)pid, de->d_name);
		if ((f = fopen(p, "r"))) {
			while (fgets(line, sizeof(line), f))
				fprintf(stderr, "   %s", line);
			fclose(f);
		}
	}
	closedir(d);
}

/* the FUSE connection's count of requests waiting for an answer (fusectl) */
static void fuse_waiting(const char *mnt)
{
	FILE *mi = fopen("/proc/self/mountinfo", "r"), *f;
	char line[4096], mp[PATH_MAX], p[128];
	unsigned maj, min;

	while (mi && fgets(line, sizeof(line), mi)) {
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) != 3 || strcmp(mp, mnt))
			continue;
		snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%u/waiting", min);
		if ((f = fopen(p, "r"))) {
			if (fgets(line, sizeof(line), f))
				fprintf(stderr, "==== %s: %s requests waiting for an answer (fusectl)\n", mnt, strtok(line, "\n"));
			fclose(f);
		}
	}
	if (mi)
		fclose(mi);
}

/* Everything a person needs to see why nothing moves. */
static void dump_stall(const pid_t *workers)
{
	struct statfs sfs;

	if (statfs("/sys/fs/fuse/connections", &sfs) < 0 || sfs.f_type != 0x65735543)
		mount("none", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	fuse_waiting(fs.mnt);
	fuse_waiting(fs.mnt2);
	for (int i = 0; i < NW; i++) {
		char w[32];

		snprintf(w, sizeof(w), "worker %d", i);
		if (!atomic_load(&sh->w[i].done))
			kernel_stacks(w, workers[i]);
	}
	kernel_stacks("loligo-fuse (mount 1)", fs.fuse_pid);
	kernel_stacks("loligo-fuse (mount 2)", fs.fuse2_pid);
	kernel_stacks("loligo-mds", fs.mds_pid);
	char bin[PATH_MAX], asok[PATH_MAX], pid[32];
	pid_t pids[3] = { fs.fuse_pid, fs.fuse2_pid, fs.mds_pid };
	const char *names[3] = { "loligo-fuse (mount 1)", "loligo-fuse (mount 2)", "loligo-mds" };

	lfs_bin("tools/cli/loligo", bin, sizeof(bin));
	for (int i = 0; i < 2; i++) {
		snprintf(asok, sizeof(asok), "%s/%s", fs.dir, i ? "client2.asok" : "client.asok");
		char *argv[] = { bin, "--format", "json-pretty", "daemon", asok, "ops", NULL };
		run_show(i ? "ops of mount 2" : "ops of mount 1", argv);
	}
	{
		char mdsock[PATH_MAX + 16];
		snprintf(mdsock, sizeof(mdsock), "%s/mds.asok", fs.dir);
		char *a1[] = { bin, "daemon", mdsock, "health", "detail", NULL };
		char *a2[] = { bin, "--format", "json-pretty", "daemon", mdsock, "ops", NULL };
		run_show("MDS health", a1);
		run_show("MDS ops", a2);
	}
	for (int i = 0; i < 3; i++) {
		if (pids[i] <= 0)
			continue;
		snprintf(pid, sizeof(pid), "%d", (int)pids[i]);
		char *argv[] = { "/usr/bin/gdb", "-p", pid, "-batch", "-nx", "-ex", "set pagination off", "-ex",
				 "thread apply all bt", NULL };
		run_show(names[i], argv);   /* bounded: gdb cannot stop a thread in D state */
	}
	lfs_dump_logs(&fs);
}

/* /sys/fs/fuse/connections/<minor of the mount's st_dev>/abort, for @a and @b (may be NULL) */
static void abort_fuse_connections2(const char *a, const char *b)
{
	const char *mnts[2] = { a, b };
	struct statfs sfs;

	if (statfs("/sys/fs/fuse/connections", &sfs) < 0 || sfs.f_type != 0x65735543 /* FUSE_CTL_SUPER_MAGIC */)
		mount("none", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	for (int i = 0; i < 2; i++) {
		if (!mnts[i])
			continue;
		char p[128];
		struct stat st;
		FILE *f;
		/* the mount point's device, from /proc (a stat of it would hang) */
		FILE *mi = fopen("/proc/self/mountinfo", "r");
		char line[4096];
		unsigned maj, min;
		bool found = false;

		while (mi && fgets(line, sizeof(line), mi)) {
			char mp[PATH_MAX];
			if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) == 3 && !strcmp(mp, mnts[i])) {
				found = true;
				break;
			}
		}
		if (mi)
			fclose(mi);
		(void)st;
		if (!found)
			continue;
		snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%u/abort", min);
		if ((f = fopen(p, "w"))) {
			fputs("1", f);
			fclose(f);
			fprintf(stderr, "stress: aborted the FUSE connection of %s\n", mnts[i]);
		}
	}
}

static void abort_fuse_connections(void)
{
	abort_fuse_connections2(fs.mnt, fs.mnt2);
}

static void abort_fuse_connections_of(const char *mnt)
{
	abort_fuse_connections2(mnt, NULL);
}

/* names and their stat in @dir of @mnt, recursively, sorted: "path size nlink\n" lines */
static void listing(const char *mnt, const char *rel, char **out, size_t *len, size_t *cap);

/* does @mnt's listing of directory @rel hold @name (a fresh opendir/readdir)? */
static bool lists_name(const char *mnt, const char *rel, const char *name)
{
	char p[PATH_MAX * 2];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(p, sizeof(p), "%s/%s", mnt, rel);
	if (!(d = opendir(p)))
		return false;
	while (!found && (de = readdir(d)))
		found = !strcmp(de->d_name, name);
	closedir(d);
	return found;
}

/*
 * The mounts disagree: which cache is stale?  For the first line that
 * differs, on each mount: does a lookup of the path find it, does a fresh
 * listing of its directory name it, and again once the kernel dropped its
 * caches (the kernel's listing cache, cache_readdir, or loligo-fuse's).
 */
static void disagree_probe(const char *a, const char *b)
{
	const char *mnt[2] = { fs.mnt, fs.mnt2 };
	char path[PATH_MAX], dir[PATH_MAX], *slash, *sp;
	size_t i = 0;

	while (a[i] && a[i] == b[i])
		i++;
	while (i > 0 && a[i - 1] != '\n')
		i--;
	snprintf(path, sizeof(path), "%s", strlen(a + i) > strlen(b + i) ? a + i : b + i);
	if ((sp = strchr(path, ' ')))
		*sp = 0;
	snprintf(dir, sizeof(dir), "%s", path);
	if (!(slash = strrchr(dir, '/')))
		return;
	*slash = 0;
	/* what each client holds of the directory (and of the name's inode), to
	 * tell whose cache answered: theirs, or the kernel's */
	for (int m = 0; m < 2; m++) {
		char p[PATH_MAX * 2], bin[PATH_MAX], asok[PATH_MAX], ino[32];
		struct stat st;

		lfs_bin("tools/cli/loligo", bin, sizeof(bin));
		snprintf(asok, sizeof(asok), "%s/%s", fs.dir, m ? "client2.asok" : "client.asok");
		for (int which = 0; which < 2; which++) {
			snprintf(p, sizeof(p), "%s/%s", mnt[which ? 1 : m], which ? path : dir);
			if (lstat(p, &st) < 0)
				continue;
			snprintf(ino, sizeof(ino), "0x%llx", (unsigned long long)st.st_ino);
			char *argv[] = { bin, "--format", "json-pretty", "daemon", asok, "dump", "inode", ino, NULL };
			run_show(m ? "mount 2's cache" : "mount 1's cache", argv);
		}
	}
	for (int round = 0; round < 2; round++) {
		if (round == 1) {
			int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

			sync();
			if (fd >= 0) {
				if (write(fd, "2", 1) != 1)
					fprintf(stderr, "checker: drop_caches: %s\n", strerror(errno));
				close(fd);
			}
		}
		for (int m = 0; m < 2; m++) {
			char p[PATH_MAX * 2];
			struct stat st;

			snprintf(p, sizeof(p), "%s/%s", mnt[m], path);
			fprintf(stderr, "checker: %s: mount %d: lookup %s, listed %s\n", round ? "after drop_caches" : "now",
				m + 1, lstat(p, &st) == 0 ? "finds it" : strerror(errno),
				lists_name(mnt[m], dir, slash + 1) ? "yes" : "no");
		}
	}
}

static void listing(const char *mnt, const char *rel, char **out, size_t *len, size_t *cap)
{
	char p[PATH_MAX * 2];
	struct dirent **ents;
	int n;

	snprintf(p, sizeof(p), "%s/%s", mnt, rel);
	n = scandir(p, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		char r[PATH_MAX], line[PATH_MAX + 64];
		struct stat st;

		if (strcmp(nm, ".") && strcmp(nm, "..")) {
			snprintf(r, sizeof(r), "%s/%s", rel, nm);
			snprintf(p, sizeof(p), "%s/%s", mnt, r);
			if (lstat(p, &st) == 0) {
				int k = snprintf(line, sizeof(line), "%s %c size %lld nlink %lu\n", r,
						 S_ISDIR(st.st_mode) ? 'd' : 'f',
						 S_ISDIR(st.st_mode) ? 0LL : (long long)st.st_size, (unsigned long)st.st_nlink);
				if (*len + (size_t)k + 1 > *cap) {
					*cap = (*cap + (size_t)k + 1) * 2;
					*out = realloc(*out, *cap);
				}
				memcpy(*out + *len, line, (size_t)k + 1);
				*len += (size_t)k;
				if (S_ISDIR(st.st_mode))
					listing(mnt, r, out, len, cap);
			}
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
}

/* every regular file's link count is the number of its names (in the whole tree) */
struct ino_names {
	ino_t ino;
	nlink_t nlink;
	int names;
};

static void count_names(const char *dir, struct ino_names *seen, int *nseen, int max)
{
	char p[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%.3000s/%.255s", dir, de->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			count_names(p, seen, nseen, max);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		int k;
		for (k = 0; k < *nseen && seen[k].ino != st.st_ino; k++)
			;
		if (k == *nseen && *nseen < max) {
			seen[k] = (struct ino_names){ st.st_ino, st.st_nlink, 0 };
			(*nseen)++;
		}
		if (k < *nseen)
			seen[k].names++;
	}
	closedir(d);
}

static int check_links(const char *root)
{
	static struct ino_names seen[4096];
	int nseen = 0, bad_links = 0;

	count_names(root, seen, &nseen, 4096);
	for (int k = 0; k < nseen; k++)
		if ((nlink_t)seen[k].names != seen[k].nlink) {
			fprintf(stderr, "checker: inode %llu has %d names in the namespace but st_nlink %lu\n",
				(unsigned long long)seen[k].ino, seen[k].names, (unsigned long)seen[k].nlink);
			bad_links++;
		}
	return bad_links;
}

/* the private file @i left, read through @root: the acknowledged version or the one being written */
static bool private_ok(int i, const char *root)
{
	static unsigned char got[300001];
	char p[PATH_MAX + 32];
	int fd;
	ssize_t g;

	snprintf(p, sizeof(p), "%s/priv%d", root, i);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return !atomic_load(&sh->w[i].acked);   /* never acknowledged: may not exist */
	g = read(fd, got, sizeof(got));
	close(fd);
	for (int v = 0; v < 2; v++) {
		bool have = v ? atomic_load(&sh->w[i].trying) : atomic_load(&sh->w[i].acked);
		uint64_t n = v ? atomic_load(&sh->w[i].try_len) : atomic_load(&sh->w[i].acked_len);
		unsigned seed = v ? atomic_load(&sh->w[i].try_seed) : atomic_load(&sh->w[i].acked_seed);
		size_t k;

		if (!have || g != (ssize_t)n)
			continue;
		for (k = 0; k < n && got[k] == (unsigned char)(seed + k * 7); k++)
			;
		if (k == n)
			return true;
	}
	/* a version being written may also be there in part (a crash mid-write) */
	if (atomic_load(&sh->w[i].trying) && g >= 0 && (uint64_t)g <= atomic_load(&sh->w[i].try_len)) {
		unsigned seed = atomic_load(&sh->w[i].try_seed);
		ssize_t k;

		for (k = 0; k < g && (got[k] == (unsigned char)(seed + (size_t)k * 7) || got[k] == 0); k++)
			;
		if (k == g)
			return true;
	}
	fprintf(stderr, "checker: private file %d: %zd bytes, acknowledged %" PRIu64 "%s\n", i, g,
		atomic_load(&sh->w[i].acked_len), atomic_load(&sh->w[i].trying) ? " (a newer one was being written)" : "");
	return false;
}

/* kill -9 mount 2's loligo-fuse, abort its connection, unmount and mount it again */
static void kill_mount2(void)
{
	char *argv[] = { "/bin/umount", "-l", fs.mnt2, NULL };

	atomic_store(mount2_down, true);
	kill(fs.fuse2_pid, SIGKILL);
	abort_fuse_connections_of(fs.mnt2);
	waitpid(fs.fuse2_pid, NULL, 0);
	fs.fuse2_pid = 0;
	lfs_run(argv, 30000, NULL);
	ck_assert_int_eq(lfs_mount2(&fs, "allow_other,debug_fuse=5,client_oc_size=8M,client_oc_target_dirty=2M" STRESS_OPTS),
			 0);
	atomic_store(mount2_down, false);
}

static void run_mix(bool kills)
{
	double secs = env_secs("LOLIGO_STRESS_SECONDS", 60), stall = env_secs("LOLIGO_STRESS_STALL", 30);
	int nkills = kills ? (int)env_secs("LOLIGO_STRESS_KILLS", 4) : 0, killed = 0;
	bool kill_client = kills && getenv("LOLIGO_STRESS_KILL_CLIENT");
	char root1[PATH_MAX], root2[PATH_MAX];
	pid_t pids[NW];
	uint64_t until, start = now_ns(), total = 0;
	bool stalled = false;
	int st;

	/* small enough that writers wait for room in the buffer */
	ck_assert_int_eq(lfs_mount(&fs, "allow_other,debug_fuse=5,client_oc_size=8M,client_oc_target_dirty=2M" STRESS_OPTS), 0);
	ck_assert_int_eq(lfs_mount2(&fs, "allow_other,debug_fuse=5,client_oc_size=8M,client_oc_target_dirty=2M" STRESS_OPTS), 0);
	snprintf(root1, sizeof(root1), "%.400s/stress", fs.mnt);
	snprintf(root2, sizeof(root2), "%.400s/stress", fs.mnt2);
	ck_assert_int_eq(mkdir(root1, 0777), 0);
	for (int d = 0; d < NDIRS; d++) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s/d%d", root1, d);
		ck_assert_int_eq(mkdir(p, 0777), 0);
	}
	sh = mmap(NULL, sizeof(*sh) + sizeof(*mount2_down), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh) + sizeof(*mount2_down));
	mount2_down = (_Atomic bool *)(sh + 1);
	kill_mode = kills;
	until = now_ns() + (uint64_t)(secs * 1e9);
	for (int i = 0; i < NW; i++) {
		atomic_store(&sh->w[i].last_ns, now_ns());
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			signal(SIGTERM, SIG_DFL);
			if (i < NW1)
				worker(i, root1, root2, until);
			else
				worker(i, root2, root1, until);
			_exit(0);
		}
	}
	/* the watchdog */
	for (;;) {
		int running = 0;
		uint64_t now = now_ns();

		for (int i = 0; i < NW; i++) {
			if (atomic_load(&sh->w[i].done))
				continue;
			running++;
			/* a worker may have moved on since `now` was read: its
			 * time is then later, not 2^64 ns ago (a false stall) */
			uint64_t last = atomic_load(&sh->w[i].last_ns);

			if (now > last && now - last > (uint64_t)(stall * 1e9)) {
				fprintf(stderr, "watchdog: worker %d (%s) has made no progress for %.0f s (%" PRIu64
					" operations done); dumping the daemons' threads\n", i,
					op_names[atomic_load(&sh->w[i].cur_op)], stall, atomic_load(&sh->w[i].ops));
				stalled = true;
			}
		}
		if (stalled || !running)
			break;
		/* kill mode: the next kill -9 when its time comes (evenly over the run) */
		if (killed < nkills && now >= start + (uint64_t)(secs * 1e9) * (uint64_t)(killed + 1) /
						     (uint64_t)(nkills + 1)) {
			if (kill_client && killed % 2) {
				fprintf(stderr, "stress: kill -9 of mount 2's loligo-fuse (%d of %d)\n", killed + 1, nkills);
				kill_mount2();
			} else {
				fprintf(stderr, "stress: kill -9 of the MDS (%d of %d)\n", killed + 1, nkills);
				lfs_mds_stop(&fs, SIGKILL);
				ck_assert_int_eq(lfs_mds_start(&fs), 0);
			}
			killed++;
			/* a restart is not a stall: progress is counted from here */
			for (int i = 0; i < NW; i++)
				atomic_store(&sh->w[i].last_ns, now_ns());
		}
		usleep(200000);
	}
	if (stalled) {
		dump_stall(pids);
		/* the workers sit in the kernel waiting for the mounts: abort the
		 * FUSE connections (a daemon thread stuck in the kernel, as in a
		 * notify that waits for a directory lock a waiting worker holds,
		 * would keep a killed daemon's device open), then kill */
		abort_fuse_connections();
		for (int i = 0; i < NW; i++)
			kill(pids[i], SIGKILL);
		if (fs.fuse_pid > 0)
			kill(fs.fuse_pid, SIGKILL);
		if (fs.fuse2_pid > 0)
			kill(fs.fuse2_pid, SIGKILL);
		for (int i = 0; i < NW; i++)
			waitpid(pids[i], NULL, 0);
		ck_abort_msg("a stress worker made no progress for %.0f s: deadlock or stall (stacks above)", stall);
	}
	for (int i = 0; i < NW; i++) {
		ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %d ended with status 0x%x", i, st);
		total += atomic_load(&sh->w[i].ops);
	}
	fprintf(stderr, "stress: %d processes, %" PRIu64 " operations in %.1f s (%.0f/s)\n", NW, total,
		(double)(now_ns() - start) / 1e9, (double)total / ((double)(now_ns() - start) / 1e9));

	/* the checker */
	uint64_t nbad = 0, priv = 0, priv_bad = 0;
	for (int i = 0; i < NW; i++) {
		nbad += atomic_load(&sh->w[i].bad);
		priv += atomic_load(&sh->w[i].priv_checked);
		priv_bad += atomic_load(&sh->w[i].priv_bad);
	}
	for (int k = 0; k < atomic_load(&sh->nbad_lines) && k < BAD_MAX; k++)
		fprintf(stderr, "checker: %s\n", sh->bad_lines[k]);
	if (nbad || priv_bad)
		lfs_dump_logs(&fs);
	ck_assert_msg(nbad == 0, "%" PRIu64 " operations failed with errors no local filesystem gives here", nbad);
	ck_assert_msg(priv_bad == 0, "%" PRIu64 " of %" PRIu64 " private files read back wrong on the other mount",
		      priv_bad, priv);
	ck_assert_msg(priv > 0, "no private file was checked");
	fprintf(stderr, "stress: %" PRIu64 " ESTALE (a name another process or the other mount moved or "
		"removed between the kernel's lookup and its request, twice in a row)\n",
		atomic_load(&sh->kernel_estale));

	/* both mounts agree once the writers are gone */
	{
		char *a = NULL, *b = NULL;
		size_t alen = 0, acap = 0, blen = 0, bcap = 0;

		/* close-to-open: everything was closed; a stat from either sees the sizes the MDS has */
		listing(fs.mnt, "stress", &a, &alen, &acap);
		listing(fs.mnt2, "stress", &b, &blen, &bcap);
		ck_assert_msg(a && b, "a listing failed");
		if (strcmp(a, b)) {
			fprintf(stderr, "checker: mount 1 lists:\n%s\nmount 2 lists:\n%s\n", a, b);
			disagree_probe(a, b);
		}
		ck_assert_msg(!strcmp(a, b), "the two mounts disagree on names, sizes or link counts");
		free(a);
		free(b);
	}
	ck_assert_int_eq(check_links(root1), 0);
	/* every acknowledged private file is there, through either mount */
	for (int i = 0; i < NW; i++)
		ck_assert_msg(private_ok(i, root1) && private_ok(i, root2), "private file %d lost what fsync acknowledged", i);
	if (kills)
		fprintf(stderr, "stress: %d kills -9 survived, every acknowledged private file intact\n", killed);
	munmap(sh, sizeof(*sh) + sizeof(*mount2_down));
}

START_TEST(test_mix)
{
	run_mix(false);
}
END_TEST

/* the soak's: the same with the MDS (and, with LOLIGO_STRESS_KILL_CLIENT, a
 * client) killed -9 LOLIGO_STRESS_KILLS times (tools/soak/run-soak.sh) */
START_TEST(test_mix_kills)
{
	if (!getenv("LOLIGO_STRESS_KILLS")) {
		fprintf(stderr, "mix_kills: LOLIGO_STRESS_KILLS not set (tools/soak/run-soak.sh sets it); nothing to do\n");
		return;
	}
	run_mix(true);
}
END_TEST

static void setup(void)
{
	if (lfs_init(&fs) != 0 || lfs_mds_start(&fs) != 0) {
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_stress");
	TCase *tc = tcase_create("stress");

	/* the soak (LOLIGO_STRESS_KILLS) runs the case with kills alone */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, getenv("LOLIGO_STRESS_KILLS") ? 7200 : 600);
	tcase_add_test(tc, getenv("LOLIGO_STRESS_KILLS") ? test_mix_kills : test_mix);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "test_fuse_stress: needs root and /dev/fuse; skipped\n");
		return 77;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
