/*
 * test_fuse.c - end-to-end tests of loligo-fuse on a real FUSE mount.
 *
 * Each TCase gets a fresh filesystem: a temp dir, a loligo-mds on an
 * ephemeral port and (for most) a loligo-fuse mount, set up and torn down by
 * unchecked fixtures in the check parent, so the teardown runs (unmount with
 * fusermount3 -u, then -uz; kill both daemons) even when a forked test case
 * fails or crashes.  What a user would notice is asserted: file contents and
 * sizes, errno values, listings, and that data survives restarts.
 */
#include <check.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

#define MiB (1024 * 1024)

static struct lfs fs;

#define P(rel) lfs_at(fs.mnt, (rel))

static void setup_fs_with(const char *opts, bool mount)
{
	if (lfs_init(&fs) != 0 || lfs_mds_start(&fs) != 0 || (mount && lfs_mount(&fs, opts) != 0)) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1); /* unchecked setup: fail the whole suite loudly */
	}
}

static void setup_mounted(void)
{
	/* allow_other: the permission test runs as uid 65534; no
	 * default_permissions, so the MDS's checks are what is tested */
	setup_fs_with("allow_other", true);
}

/* Test cases that restart daemons start them themselves, so the daemons are
 * their children (waitable, exit statuses known); the parent's teardown
 * still finds them through the pid files. */
static void setup_fs_only(void)
{
	if (lfs_init(&fs) != 0) {
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void start_all(void)
{
	if (lfs_mds_start(&fs) != 0 || lfs_mount(&fs, "allow_other") != 0) {
		lfs_dump_logs(&fs);
		ck_abort_msg("cannot start loligo-mds and mount loligo-fuse");
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

/* ---- data ---------------------------------------------------------------- */

START_TEST(test_file_sizes)
{
	static const off_t sizes[] = {0, 1, 4 * MiB - 1, 4 * MiB + 1, 20 * MiB};
	char name[64];

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "size_%lld", (long long)sizes[i]);
		ck_assert_int_eq(lfs_write_file(P(name), sizes[i], (unsigned)i + 1), 0);
	}
	/* read back through new opens (the page cache is dropped on open) */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "size_%lld", (long long)sizes[i]);
		ck_assert_msg(lfs_check_file(P(name), sizes[i], (unsigned)i + 1) == 0, "%s differs", name);
	}
	/* unaligned read across the 4 MiB object boundary */
	int fd = open(P("size_4194305"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	unsigned char b[100];
	ck_assert_int_eq(pread(fd, b, sizeof(b), 4 * MiB - 50), 51);
	for (int i = 0; i < 51; i++)
		ck_assert_int_eq(b[i], lfs_pat(4, 4 * MiB - 50 + i));
	close(fd);
}
END_TEST

START_TEST(test_sparse)
{
	const off_t far = 9 * MiB + 123;
	unsigned char buf[8192];
	struct stat st;
	int fd = open(P("sparse"), O_RDWR | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	memset(buf, 0xab, sizeof(buf));
	ck_assert_int_eq(pwrite(fd, "head", 4, 0), 4);
	ck_assert_int_eq(pwrite(fd, buf, 4096, far), 4096);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(close(fd), 0);

	ck_assert_int_eq(stat(P("sparse"), &st), 0);
	ck_assert_int_eq(st.st_size, far + 4096);
	fd = open(P("sparse"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	/* the hole (including whole missing objects) reads as zeros */
	for (off_t off = 4; off < far; off += 1 * MiB - 7) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		ck_assert_int_gt(n, 0);
		for (ssize_t i = 0; i < n && off + i < far; i++)
			ck_assert_msg(buf[i] == 0, "byte %lld of the hole is 0x%x", (long long)(off + i), buf[i]);
	}
	ck_assert_int_eq(pread(fd, buf, 8, 0), 8);
	ck_assert(memcmp(buf, "head\0\0\0\0", 8) == 0);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), far), 4096);
	ck_assert_int_eq(buf[0], 0xab);
	ck_assert_int_eq(buf[4095], 0xab);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), far + 4096), 0); /* EOF */
	close(fd);
}
END_TEST

START_TEST(test_truncate)
{
	const char *f = P("trunc");
	unsigned char buf[4096];
	struct stat st;
	int fd;

	ck_assert_int_eq(lfs_write_file(f, 6 * MiB, 9), 0);
	/* down, across an object boundary */
	ck_assert_int_eq(truncate(f, 100), 0);
	ck_assert_int_eq(stat(f, &st), 0);
	ck_assert_int_eq(st.st_size, 100);
	ck_assert_int_eq(lfs_check_file(f, 100, 9), 0);
	/* up again: what was cut must read as zeros, not as the old data */
	fd = open(f, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 5 * MiB), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 5 * MiB);
	for (off_t off = 100; off < 5 * MiB; off += 512 * 1024 + 1) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		ck_assert_int_gt(n, 0);
		for (ssize_t i = 0; i < n; i++)
			ck_assert_msg(buf[i] == 0, "byte %lld after truncate up is 0x%x", (long long)(off + i),
				      buf[i]);
	}
	ck_assert_int_eq(pread(fd, buf, 100, 0), 100);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(buf[i], lfs_pat(9, i));
	/* O_TRUNC */
	close(fd);
	fd = open(f, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(stat(f, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	/* truncate of a file with unflushed writes in an open handle */
	fd = open(f, O_RDWR);
	ck_assert_int_eq(pwrite(fd, "0123456789", 10, 0), 10);
	ck_assert_int_eq(ftruncate(fd, 4), 0);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 4);
	ck_assert(memcmp(buf, "0123", 4) == 0);
	close(fd);
}
END_TEST

struct cw_arg {
	int id;
	int err;
};

static void *cw_main(void *p)
{
	struct cw_arg *a = p;
	char name[64];

	snprintf(name, sizeof(name), "cw/%d", a->id);
	a->err = lfs_write_file(P(name), 3 * MiB + a->id * 4097, 100 + (unsigned)a->id);
	return NULL;
}

START_TEST(test_concurrent_writers)
{
	enum { N = 8 };
	pthread_t th[N];
	struct cw_arg args[N];
	char name[64];

	ck_assert_int_eq(mkdir(P("cw"), 0755), 0);
	for (int i = 0; i < N; i++) {
		args[i].id = i;
		pthread_create(&th[i], NULL, cw_main, &args[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(args[i].err == 0, "writer %d: %s", i, strerror(-args[i].err));
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "cw/%d", i);
		ck_assert_int_eq(lfs_check_file(P(name), 3 * MiB + i * 4097, 100 + (unsigned)i), 0);
	}
}
END_TEST

/* ---- namespace ----------------------------------------------------------- */

START_TEST(test_rename)
{
	struct stat st, st2;

	ck_assert_int_eq(mkdir(P("r1"), 0755), 0);
	ck_assert_int_eq(mkdir(P("r2"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("r1/a"), 5000, 21), 0);
	ck_assert_int_eq(stat(P("r1/a"), &st), 0);
	/* across directories: same inode, same data, gone from the source */
	ck_assert_int_eq(rename(P("r1/a"), P("r2/b")), 0);
	ck_assert_int_eq(stat(P("r1/a"), &st2), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(stat(P("r2/b"), &st2), 0);
	ck_assert_int_eq(st.st_ino, st2.st_ino);
	ck_assert_int_eq(lfs_check_file(P("r2/b"), 5000, 21), 0);
	/* over an existing file */
	ck_assert_int_eq(lfs_write_file(P("r1/c"), 10, 22), 0);
	ck_assert_int_eq(rename(P("r1/c"), P("r2/b")), 0);
	ck_assert_int_eq(lfs_check_file(P("r2/b"), 10, 22), 0);
	/* a directory with content, across directories */
	ck_assert_int_eq(mkdir(P("r1/d"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("r1/d/x"), 3, 23), 0);
	ck_assert_int_eq(rename(P("r1/d"), P("r2/d")), 0);
	ck_assert_int_eq(lfs_check_file(P("r2/d/x"), 3, 23), 0);
	/* never into its own subtree */
	ck_assert_int_eq(rename(P("r2"), P("r2/d/sub")), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* over a non-empty directory */
	ck_assert_int_eq(mkdir(P("r1/e"), 0755), 0);
	ck_assert_int_eq(rename(P("r1/e"), P("r2/d")), -1);
	ck_assert(errno == ENOTEMPTY || errno == EEXIST);
	/* rename flags */
	ck_assert_int_eq(lfs_write_file(P("r1/p"), 7, 24), 0);
	ck_assert_int_eq(lfs_write_file(P("r1/q"), 8, 25), 0);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("r1/p"), AT_FDCWD, P("r1/q"), RENAME_NOREPLACE), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("r1/p"), AT_FDCWD, P("r2/p"), RENAME_NOREPLACE), 0);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("r2/p"), AT_FDCWD, P("r1/q"), RENAME_EXCHANGE), 0);
	ck_assert_int_eq(lfs_check_file(P("r1/q"), 7, 24), 0);
	ck_assert_int_eq(lfs_check_file(P("r2/p"), 8, 25), 0);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("r2/p"), AT_FDCWD, P("r1/q"), RENAME_WHITEOUT | RENAME_EXCHANGE), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* overlayfs's whiteout (test_fuse_admin whiteout has more) */
	ck_assert_int_eq(renameat2(AT_FDCWD, P("r2/p"), AT_FDCWD, P("r1/q"), RENAME_WHITEOUT), 0);
	ck_assert_int_eq(lfs_check_file(P("r1/q"), 8, 25), 0);
	ck_assert_int_eq(lstat(P("r2/p"), &st), 0);
	ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == 0);
}
END_TEST

START_TEST(test_links)
{
	struct stat st;
	char buf[256];
	ssize_t n;

	ck_assert_int_eq(mkdir(P("l"), 0755), 0);
	ck_assert_int_eq(mkdir(P("l/sub"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("l/f"), 70000, 31), 0);
	/* hard link in another directory */
	ck_assert_int_eq(link(P("l/f"), P("l/sub/h")), 0);
	ck_assert_int_eq(stat(P("l/f"), &st), 0);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_int_eq(unlink(P("l/f")), 0);
	ck_assert_int_eq(stat(P("l/sub/h"), &st), 0);
	ck_assert_int_eq(st.st_nlink, 1);
	ck_assert_int_eq(lfs_check_file(P("l/sub/h"), 70000, 31), 0);
	ck_assert_int_eq(link(P("l/sub"), P("l/dirlink")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(link(P("l/sub/h"), P("l/sub")), -1);
	ck_assert_int_eq(errno, EEXIST);
	/* symlinks: relative, absolute, dangling */
	ck_assert_int_eq(symlink("sub/h", P("l/s")), 0);
	ck_assert_int_eq(lstat(P("l/s"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_size, 5);
	n = readlink(P("l/s"), buf, sizeof(buf));
	ck_assert_int_eq(n, 5);
	ck_assert(memcmp(buf, "sub/h", 5) == 0);
	ck_assert_int_eq(lfs_check_file(P("l/s"), 70000, 31), 0);
	ck_assert_int_eq(symlink("/nonexistent/target/of/some/length", P("l/dangling")), 0);
	ck_assert_int_eq(stat(P("l/dangling"), &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(lstat(P("l/dangling"), &st), 0);
	ck_assert_int_eq(symlink("x", P("l/s")), -1);
	ck_assert_int_eq(errno, EEXIST);
}
END_TEST

START_TEST(test_dirs_and_attrs)
{
	struct stat st;
	struct statvfs sv;
	struct timespec ts[2];
	double t0;

	ck_assert_int_eq(mkdir(P("m"), 0750), 0);
	ck_assert_int_eq(stat(P("m"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(mkdir(P("m"), 0750), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(lfs_write_file(P("m/f"), 1, 41), 0);
	ck_assert_int_eq(rmdir(P("m")), -1);
	ck_assert_int_eq(errno, ENOTEMPTY);
	ck_assert_int_eq(rmdir(P("m/f")), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_int_eq(unlink(P("m/nope")), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* chmod, chown, explicit times, UTIME_NOW */
	ck_assert_int_eq(chmod(P("m/f"), 0604), 0);
	ck_assert_int_eq(chown(P("m/f"), 1234, 5678), 0);
	ts[0].tv_sec = 1000000000;
	ts[0].tv_nsec = 5;
	ts[1].tv_sec = 1200000000;
	ts[1].tv_nsec = 7;
	ck_assert_int_eq(utimensat(AT_FDCWD, P("m/f"), ts, 0), 0);
	ck_assert_int_eq(stat(P("m/f"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0604);
	ck_assert_int_eq(st.st_uid, 1234);
	ck_assert_int_eq(st.st_gid, 5678);
	ck_assert_int_eq(st.st_atim.tv_sec, 1000000000);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1200000000);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 7);
	t0 = (double)time(NULL);
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_NOW;
	ck_assert_int_eq(utimensat(AT_FDCWD, P("m/f"), ts, 0), 0);
	ck_assert_int_eq(stat(P("m/f"), &st), 0);
	ck_assert_int_eq(st.st_atim.tv_sec, 1000000000);
	ck_assert_msg(st.st_mtim.tv_sec >= t0 - 2 && st.st_mtim.tv_sec <= t0 + 2, "UTIME_NOW gave %ld",
		      (long)st.st_mtim.tv_sec);
	/* mtime moves on write */
	ts[1].tv_sec = 1200000000;
	ts[1].tv_nsec = 0;
	ck_assert_int_eq(utimensat(AT_FDCWD, P("m/f"), ts, 0), 0);
	int fd = open(P("m/f"), O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "zz", 2), 2);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(stat(P("m/f"), &st), 0);
	ck_assert_int_eq(st.st_size, 2);
	ck_assert_int_gt(st.st_mtim.tv_sec, 1200000000);
	/* special files */
	ck_assert_int_eq(mkfifo(P("m/fifo"), 0644), 0);
	ck_assert_int_eq(stat(P("m/fifo"), &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	/* statfs, access */
	ck_assert_int_eq(statvfs(fs.mnt, &sv), 0);
	ck_assert_int_gt(sv.f_bsize, 0);
	ck_assert_int_eq(access(P("m/f"), R_OK | W_OK), 0);
	/* O_EXCL */
	ck_assert_int_eq(open(P("m/f"), O_CREAT | O_EXCL | O_WRONLY, 0644), -1);
	ck_assert_int_eq(errno, EEXIST);
	/* /proc/mounts shows the type */
	ck_assert(lfs_is_mounted(fs.mnt));
}
END_TEST

START_TEST(test_xattrs)
{
	char buf[256];
	ssize_t n;

	ck_assert_int_eq(lfs_write_file(P("x"), 1, 51), 0);
	ck_assert_int_eq(setxattr(P("x"), "user.color", "blue", 4, 0), 0);
	ck_assert_int_eq(setxattr(P("x"), "user.empty", "", 0, 0), 0);
	n = getxattr(P("x"), "user.color", buf, sizeof(buf));
	ck_assert_int_eq(n, 4);
	ck_assert(memcmp(buf, "blue", 4) == 0);
	ck_assert_int_eq(getxattr(P("x"), "user.color", NULL, 0), 4);
	ck_assert_int_eq(getxattr(P("x"), "user.color", buf, 2), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(setxattr(P("x"), "user.color", "red", 3, XATTR_CREATE), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(setxattr(P("x"), "user.nope", "1", 1, XATTR_REPLACE), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(setxattr(P("x"), "user.color", "red", 3, XATTR_REPLACE), 0);
	n = listxattr(P("x"), buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	bool color = false, empty = false;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		color |= !strcmp(p, "user.color");
		empty |= !strcmp(p, "user.empty");
	}
	ck_assert(color && empty);
	ck_assert_int_eq(removexattr(P("x"), "user.color"), 0);
	ck_assert_int_eq(getxattr(P("x"), "user.color", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(removexattr(P("x"), "user.color"), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

START_TEST(test_readdir_5000)
{
	enum { N = 5000 };
	static unsigned char seen[N];
	char name[64];
	struct dirent *de;
	DIR *d;
	int n = 0, dots = 0;

	ck_assert_int_eq(mkdir(P("big"), 0755), 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "big/entry_%05d", i);
		ck_assert_msg(mknod(P(name), S_IFREG | 0644, 0) == 0, "mknod %s: %s", name, strerror(errno));
	}
	for (int pass = 0; pass < 2; pass++) {
		memset(seen, 0, sizeof(seen));
		n = dots = 0;
		d = opendir(P("big"));
		ck_assert_ptr_nonnull(d);
		while ((de = readdir(d))) {
			int i;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
				dots++;
				continue;
			}
			ck_assert_msg(sscanf(de->d_name, "entry_%05d", &i) == 1 && i >= 0 && i < N,
				      "unexpected entry %s", de->d_name);
			ck_assert_msg(!seen[i], "entry %s listed twice", de->d_name);
			seen[i] = 1;
			n++;
		}
		closedir(d);
		ck_assert_int_eq(dots, 2);
		ck_assert_int_eq(n, N - pass); /* pass 1: after one unlink */
		/* the listing's attributes are usable right away */
		struct stat st;
		ck_assert_int_eq(stat(P("big/entry_04999"), &st), 0);
		ck_assert(S_ISREG(st.st_mode));
		/* a change must show up in the next listing (no stale cache) */
		if (pass == 0)
			ck_assert_int_eq(unlink(P("big/entry_00000")), 0);
	}
	ck_assert(!seen[0]);
}
END_TEST

START_TEST(test_permissions_nonroot)
{
	struct stat st;
	pid_t pid;
	int status;

	ck_assert_int_eq(mkdir(P("perm"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("perm/secret"), 10, 61), 0);
	ck_assert_int_eq(chmod(P("perm/secret"), 0600), 0);
	ck_assert_int_eq(lfs_write_file(P("perm/public"), 10, 62), 0);
	ck_assert_int_eq(chmod(P("perm/public"), 0644), 0);
	ck_assert_int_eq(mkdir(P("perm/open"), 0777), 0);
	ck_assert_int_eq(chmod(P("perm/open"), 0777), 0);
	ck_assert_int_eq(mkdir(P("perm/closed"), 0700), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int bad = 0;
#define EXPECT(cond, what)                                                            \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "as uid 65534: %s (errno %s)\n", what, strerror(errno)); \
			bad++;                                                        \
		}                                                                     \
	} while (0)
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(100);
		errno = 0;
		EXPECT(open(P("perm/secret"), O_RDONLY) < 0 && errno == EACCES, "read of a 0600 root file");
		EXPECT(access(P("perm/secret"), R_OK) < 0 && errno == EACCES, "access(R_OK) of a 0600 file");
		EXPECT(open(P("perm/public"), O_WRONLY) < 0 && errno == EACCES, "write to a 0644 root file");
		int fd = open(P("perm/public"), O_RDONLY);
		EXPECT(fd >= 0, "read of a 0644 file");
		if (fd >= 0)
			close(fd);
		EXPECT(open(P("perm/new"), O_CREAT | O_WRONLY, 0644) < 0 && errno == EACCES,
		       "create in a 0755 root directory");
		EXPECT(mkdir(P("perm/newdir"), 0755) < 0 && errno == EACCES, "mkdir in a 0755 root directory");
		EXPECT(unlink(P("perm/public")) < 0 && errno == EACCES, "unlink in a 0755 root directory");
		EXPECT(chmod(P("perm/public"), 0666) < 0 && errno == EPERM, "chmod of someone else's file");
		EXPECT(opendir(P("perm/closed")) == NULL && errno == EACCES, "opendir of a 0700 root directory");
		EXPECT(stat(P("perm/closed/x"), &st) < 0 && errno == EACCES, "lookup in a 0700 root directory");
		fd = open(P("perm/open/mine"), O_CREAT | O_WRONLY, 0640);
		EXPECT(fd >= 0, "create in a 0777 directory");
		if (fd >= 0) {
			EXPECT(write(fd, "hi", 2) == 2, "write to my file");
			close(fd);
		}
		EXPECT(stat(P("perm/open/mine"), &st) == 0 && st.st_uid == 65534 && st.st_gid == 65534,
		       "a new file belongs to its creator");
		EXPECT(chmod(P("perm/open/mine"), 0600) == 0, "chmod of my own file");
		EXPECT(chown(P("perm/open/mine"), 0, 0) < 0 && errno == EPERM, "giving a file to root");
		_exit(bad);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%d permission checks failed as uid 65534",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/* root still can */
	ck_assert_int_eq(lfs_check_file(P("perm/secret"), 10, 61), 0);
	ck_assert_int_eq(stat(P("perm/open/mine"), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
}
END_TEST


/* ---- lookup counting -------------------------------------------------- */

/* Inodes the client still holds references for (beyond the root): after the
 * kernel forgot everything, this must be 0 (a leak keeps an inode pinned in
 * the client forever; an over-put frees one the kernel still uses). */
static int referenced_inodes(int64_t *min_ref, char *first, size_t len)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *list, *root;
	int n = 0;

	json_object_object_add(req, "prefix", json_object_new_string("dump cache"));
	int r = asok_request(fs.asok, req, &rep, 10000);
	json_object_put(req);
	ck_assert_msg(r == 0, "admin socket %s: %s", fs.asok, strerror(-r));
	ck_assert(json_object_object_get_ex(rep, "inode_list", &list));
	ck_assert(json_object_object_get_ex(rep, "root", &root));
	uint64_t root_ino = json_object_get_uint64(root);
	*min_ref = 0;
	first[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *e = json_object_array_get_idx(list, i), *ino, *ref;
		ck_assert(json_object_object_get_ex(e, "ino", &ino) && json_object_object_get_ex(e, "ref", &ref));
		int64_t rv = json_object_get_int64(ref);
		if (json_object_get_uint64(ino) == root_ino)
			continue;
		if (rv < *min_ref)
			*min_ref = rv;
		if (rv != 0 && n++ == 0)
			snprintf(first, len, "ino 0x%llx ref %lld", (unsigned long long)json_object_get_uint64(ino),
				 (long long)rv);
	}
	json_object_put(rep);
	return n;
}

START_TEST(test_lookup_counts)
{
	char name[64], buf[64];
	struct stat st;
	int64_t min_ref;
	int n = -1;

	ck_assert_int_eq(mkdir(P("rc"), 0755), 0);
	ck_assert_int_eq(mkdir(P("rc/sub"), 0755), 0);
	/* Names only (mknod, no data): what is checked is the frontend's
	 * lookup counting (entries, READDIRPLUS, link), not the data path. */
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "rc/f%03d", i);
		ck_assert_int_eq(mknod(P(name), S_IFREG | 0644, 0), 0);
	}
	ck_assert_int_eq(link(P("rc/f001"), P("rc/sub/hard")), 0);
	ck_assert_int_eq(symlink("../f002", P("rc/sub/sym")), 0);
	ck_assert_int_eq(rename(P("rc/f003"), P("rc/sub/moved")), 0);
	ck_assert_int_eq(unlink(P("rc/f004")), 0);
	ck_assert_int_eq(mknod(P("rc/sub/node"), S_IFREG | 0600, 0), 0);
	for (int pass = 0; pass < 2; pass++) { /* listings (READDIRPLUS) and stats */
		DIR *d = opendir(P("rc"));
		ck_assert_ptr_nonnull(d);
		while (readdir(d))
			;
		closedir(d);
		for (int i = 0; i < 300; i += 7) {
			snprintf(name, sizeof(name), "rc/f%03d", i);
			stat(P(name), &st);
		}
	}
	ck_assert_int_eq(readlink(P("rc/sub/sym"), buf, sizeof(buf)), 7);
	ck_assert_int_eq(stat(P("rc/sub/hard"), &st), 0);
	sync();
	/* make the kernel forget every inode it can (FORGET for each) */
	for (int tries = 0; tries < 50 && n != 0; tries++) {
		int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "2", 1), 1);
		close(fd);
		usleep(100 * 1000);
		n = referenced_inodes(&min_ref, name, sizeof(name));
		ck_assert_msg(min_ref >= 0, "an inode was over-released: %s", name);
	}
	ck_assert_msg(n == 0, "%d inodes still referenced after the kernel forgot them (first: %s)", n, name);
}
END_TEST


/* ---- kernel invalidation ------------------------------------------------ */

static struct json_object *asok_cmd(const char *prefix, const char *k1, struct json_object *v1, const char *k2,
				    struct json_object *v2)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;

	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (k1)
		json_object_object_add(req, k1, v1);
	if (k2)
		json_object_object_add(req, k2, v2);
	int r = asok_request(fs.asok, req, &rep, 10000);
	json_object_put(req);
	ck_assert_msg(r == 0, "admin socket: %s: %s", prefix, strerror(-r));
	return rep;
}

/* perf dump -> @group.@name */
static int64_t perf_counter(const char *group, const char *name)
{
	struct json_object *rep = asok_cmd("perf dump", NULL, NULL, NULL, NULL), *g, *v;
	int64_t n;

	ck_assert_msg(json_object_object_get_ex(rep, group, &g), "no perf group %s", group);
	ck_assert_msg(json_object_object_get_ex(g, name, &v), "no counter %s.%s", group, name);
	n = json_object_get_int64(v);
	json_object_put(rep);
	return n;
}

static int64_t fuse_counter(const char *name)
{
	return perf_counter("fuse", name);
}

static void wait_counter(const char *name, int64_t above)
{
	for (int i = 0; i < 200 && fuse_counter(name) <= above; i++)
		usleep(10000);
	ck_assert_msg(fuse_counter(name) > above, "fuse.%s never went past %lld", name, (long long)above);
}

/* perf dump -> the count of histogram fuse.@name */
static int64_t fuse_hist_count(const char *name)
{
	struct json_object *rep = asok_cmd("perf dump", NULL, NULL, NULL, NULL), *g, *h, *v;
	int64_t n;

	ck_assert_msg(json_object_object_get_ex(rep, "fuse", &g) && json_object_object_get_ex(g, name, &h) &&
			      json_object_object_get_ex(h, "count", &v),
		      "no histogram fuse.%s", name);
	n = json_object_get_int64(v);
	json_object_put(rep);
	return n;
}

static void fuse_config_set(const char *var, const char *val)
{
	json_object_put(asok_cmd("config set", "var", json_object_new_string(var), "val", json_object_new_string(val)));
}

/* fuse_op_cpu: off by default (no CPU clock read per request); set at run
 * time, the handlers' CPU time is counted by family (what
 * tools/bench/run-mdstorm.sh reports as handler-cpu) */
START_TEST(test_op_cpu)
{
	struct stat st;
	int64_t lookups, n;

	ck_assert_int_eq(mkdir(P("cpu"), 0755), 0);
	lookups = fuse_counter("lookup");
	ck_assert_int_eq(stat(P("cpu/none"), &st), -1);   /* negative lookups are not cached: a LOOKUP */
	ck_assert_int_gt(fuse_counter("lookup"), lookups);
	ck_assert_int_eq(fuse_hist_count("lookup_cpu"), 0);

	fuse_config_set("fuse_op_cpu", "true");
	lookups = fuse_counter("lookup");
	ck_assert_int_eq(stat(P("cpu/none"), &st), -1);
	n = fuse_counter("lookup") - lookups;
	ck_assert_int_gt(n, 0);
	/* the sample is added once the handler has replied: stat() may
	 * return first */
	LT_WAIT_UNTIL(fuse_hist_count("lookup_cpu") == n, "fuse.lookup_cpu counted %lld of %lld LOOKUPs",
		      (long long)fuse_hist_count("lookup_cpu"), (long long)n);

	fuse_config_set("fuse_op_cpu", "false");
	ck_assert_int_eq(stat(P("cpu/none"), &st), -1);
	ck_assert_int_eq(fuse_hist_count("lookup_cpu"), n);
	ck_assert_int_eq(rmdir(P("cpu")), 0);
}
END_TEST

START_TEST(test_kernel_invalidation)
{
	struct stat st, dst;
	int64_t lookups, getattrs, n;

	/* Invalidations come from the client library on cap revokes; the MDS
	 * does not revoke yet, so drive the same queue and thread through the
	 * admin socket and watch what reaches the daemon afterwards. */
	ck_assert_int_eq(mkdir(P("inv"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("inv/f"), 10, 501), 0);
	ck_assert_int_eq(stat(P("inv"), &dst), 0);
	ck_assert_int_eq(stat(P("inv/f"), &st), 0);
	lookups = fuse_counter("lookup");
	getattrs = fuse_counter("getattr");
	ck_assert_int_eq(stat(P("inv/f"), &st), 0); /* from the kernel's caches */
	ck_assert_int_eq(fuse_counter("lookup"), lookups);
	ck_assert_int_eq(fuse_counter("getattr"), getattrs);

	n = fuse_counter("inval_entry");
	json_object_put(asok_cmd("fuse inval_entry", "parent", json_object_new_int64((int64_t)dst.st_ino), "name",
				 json_object_new_string("f")));
	wait_counter("inval_entry", n);
	ck_assert_int_eq(stat(P("inv/f"), &st), 0);
	ck_assert_int_eq(fuse_counter("lookup"), lookups + 1); /* the name was asked for again */

	getattrs = fuse_counter("getattr");
	n = fuse_counter("inval_inode");
	json_object_put(asok_cmd("fuse inval_inode", "ino", json_object_new_int64((int64_t)st.st_ino), NULL, NULL));
	wait_counter("inval_inode", n);
	ck_assert_int_eq(stat(P("inv/f"), &st), 0);
	ck_assert_int_gt(fuse_counter("getattr"), getattrs); /* the attributes were asked for again */
	ck_assert_int_eq(fuse_counter("inval_failed"), 0);
	ck_assert_int_eq(lfs_check_file(P("inv/f"), 10, 501), 0);
}
END_TEST


START_TEST(test_writes_need_no_mds)
{
	char buf[4096];
	int64_t before, after;
	int fd;

	/* the kernel's security.capability check before each write() is
	 * answered by the client from what it learnt under As: small writes
	 * cost no MDS round trip */
	fd = open(P("smallwrites"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	memset(buf, 'w', sizeof(buf));
	before = perf_counter("mds_client", "requests_sent");
	for (int i = 0; i < 500; i++)
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	after = perf_counter("mds_client", "requests_sent");
	/* written back now, not by the writeback the close would start and
	 * not wait for: the next case counts the store writes it makes */
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_msg(after - before < 20, "500 write()s sent %lld MDS requests", (long long)(after - before));
	/* file capabilities are stored (a well-formed VFS_CAP_REVISION_2
	 * value, else the kernel says EINVAL itself), and the next write
	 * drops them, as on ext4 (test_fuse_admin file_caps has the rest) */
	uint32_t cap[5] = {htole32(0x02000000), htole32(1u << 10), 0, 0, 0};
	ck_assert_int_eq(getxattr(P("smallwrites"), "security.capability", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(setxattr(P("smallwrites"), "security.capability", cap, sizeof(cap), 0), 0);
	ck_assert_int_eq(getxattr(P("smallwrites"), "security.capability", buf, sizeof(buf)), (ssize_t)sizeof(cap));
	ck_assert_int_eq(memcmp(buf, cap, sizeof(cap)), 0);
	fd = open(P("smallwrites"), O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	/* written back before the close: a close's writeback runs after it
	 * returns and would count in the next case's store writes */
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(getxattr(P("smallwrites"), "security.capability", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENODATA);
	struct stat st;
	ck_assert_int_eq(stat(P("smallwrites"), &st), 0);
	ck_assert_int_eq(st.st_size, 501 * 4096);
}
END_TEST

/*
 * A sequential write through the mount goes to the store as one whole-object
 * write per object (what the OSD sees from ceph-fuse too), with the flusher
 * writing in the background while the writer goes on (48 MiB is past
 * client_oc_target_dirty); before, a background writeback took the object
 * being filled and it went out in pieces.  The data is right on a second
 * mount and on a fresh one.
 */
START_TEST(test_seq_write_whole_objects)
{
	const off_t size = 48 << 20;              /* 12 objects of 4 MiB */
	char p2[PATH_MAX + 32];

	/* nothing of an earlier case still on its way to the store (a close's
	 * writeback ends after the close returned): counted from here */
	json_object_put(asok_cmd("sync", NULL, NULL, NULL, NULL));
	int64_t ops0 = perf_counter("client", "wb_ops"), full0 = perf_counter("client", "wb_full_ops");
	int64_t bytes0 = perf_counter("client", "wb_bytes");

	/* the periodic flush (every 5 s) takes everything, a stream's half-full
	 * object too: not during this write, however slow the machine is */
	json_object_put(asok_cmd("config set", "var", json_object_new_string("client_flush_interval"), "val",
				 json_object_new_string("600")));
	ck_assert_int_eq(lfs_write_file(P("seqw"), size, 77), 0);
	/* a close starts the writeback and may return before it is done */
	for (int i = 0; i < 600 && perf_counter("client", "wb_bytes") - bytes0 < size; i++)
		usleep(50000);
	ck_assert_int_eq(perf_counter("client", "wb_bytes") - bytes0, size);
	ck_assert_msg(perf_counter("client", "wb_ops") - ops0 == 12, "12 objects went to the store in %lld writes",
		      (long long)(perf_counter("client", "wb_ops") - ops0));
	ck_assert_int_eq(perf_counter("client", "wb_full_ops") - full0, 12);
	json_object_put(asok_cmd("config set", "var", json_object_new_string("client_flush_interval"), "val",
				 json_object_new_string("5")));
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	snprintf(p2, sizeof(p2), "%s/seqw", fs.mnt2);
	ck_assert_int_eq(lfs_check_file(p2, size, 77), 0);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(lfs_check_file(P("seqw"), size, 77), 0);
	ck_assert_int_eq(unlink(P("seqw")), 0);
}
END_TEST

/*
 * Files closed with data buffered gather before the flusher writes them
 * back (client_close_wb_delay_us): sixteen closes are one wave, and the
 * wave's writes share the store's commits.  Before, each close woke the
 * flusher, which took the one or two files closed by then, a wave each
 * and each wave its own commits: tar's files cost the store 0.7-1.3
 * commits a file, where they now cost 0.3 (docs/BENCHMARKS.md).  Nothing
 * else waits for a gathering: with the delay at ten minutes, fsync, sync
 * and the unmount write back at once (the case's timeout is 3 minutes),
 * and every byte is there on the next mount.
 */
static void set_client_opt(const char *name, const char *val)
{
	json_object_put(asok_cmd("config set", "var", json_object_new_string(name), "val", json_object_new_string(val)));
}

static int64_t wait_client_counter(const char *name, int64_t at_least)
{
	for (int i = 0; i < 1000 && perf_counter("client", name) < at_least; i++)
		usleep(10000);
	return perf_counter("client", name);
}

START_TEST(test_closes_gather)
{
	char path[PATH_MAX + 64];
	int fd;

	ck_assert_msg(mkdir(P("gather"), 0755) == 0, "mkdir: %s", strerror(errno));
	json_object_put(asok_cmd("sync", NULL, NULL, NULL, NULL));
	set_client_opt("client_close_wb_delay_us", "600000000");
	int64_t waves0 = perf_counter("client", "close_waves"), files0 = perf_counter("client", "close_wb_files");
	int64_t ops0 = perf_counter("client", "wb_ops"), commits0 = perf_counter("store_local", "commits");

	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "%s/gather/a%d", fs.mnt, i);
		ck_assert_int_eq(lfs_write_file(path, 5000 + i, 600 + i), 0);
		/* fifteen closed: they gather, no wave has gone */
		if (i == 14)
			ck_assert_int_eq(perf_counter("client", "close_waves"), waves0);
	}
	/* the sixteenth close fills the wave: out at once, not in ten minutes */
	ck_assert_int_ge(wait_client_counter("wb_ops", ops0 + 16) - ops0, 16);
	for (int i = 0; i < 1000 && perf_counter("client", "close_wb_files") - files0 < 15; i++)
		usleep(10000);
	int64_t waves = perf_counter("client", "close_waves") - waves0;
	int64_t files = perf_counter("client", "close_wb_files") - files0;
	int64_t commits = perf_counter("store_local", "commits") - commits0;
	/* one wave, or two when a member's writeback was another thread's at
	 * that moment (the wave goes on without it, then does it alone) */
	ck_assert_msg(waves >= 1 && waves <= 2 && files >= 15, "16 closes went back in %lld waves of %lld files",
		      (long long)waves, (long long)files);
	/* the wave's object index ops, then its writes, each a commit or two
	 * (3-4 here, where each file was about one before; the store's worker
	 * takes what is queued when it wakes, so the exact split is its timing) */
	ck_assert_msg(commits < 16, "16 closed files cost the store %lld commits", (long long)commits);

	/* gathering, then fsync of one of them: that file at once */
	ops0 = perf_counter("client", "wb_ops");
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/gather/b%d", fs.mnt, i);
		ck_assert_int_eq(lfs_write_file(path, 7000 + i, 700 + i), 0);
	}
	waves0 = perf_counter("client", "close_waves");
	fd = open(P("gather/b1"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(close(fd), 0);
	/* written by the fsync itself, not by a wave (none has run) */
	ck_assert_int_ge(perf_counter("client", "wb_ops") - ops0, 1);
	ck_assert_int_eq(perf_counter("client", "close_waves"), waves0);
	/* sync: all of them, the same way */
	json_object_put(asok_cmd("sync", NULL, NULL, NULL, NULL));
	ck_assert_int_eq(perf_counter("client", "wb_ops") - ops0, 3);
	ck_assert_int_eq(perf_counter("client", "close_waves"), waves0);

	/* the unmount writes back what is still gathering */
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/gather/c%d", fs.mnt, i);
		ck_assert_int_eq(lfs_write_file(path, 9000 + i, 900 + i), 0);
	}
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "%s/gather/a%d", fs.mnt, i);
		ck_assert_int_eq(lfs_check_file(path, 5000 + i, 600 + i), 0);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/gather/b%d", fs.mnt, i);
		ck_assert_int_eq(lfs_check_file(path, 7000 + i, 700 + i), 0);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/gather/c%d", fs.mnt, i);
		ck_assert_int_eq(lfs_check_file(path, 9000 + i, 900 + i), 0);
	}
}
END_TEST

/* ---- signals and default_permissions ------------------------------------ */

START_TEST(test_sigterm_unmounts)
{
	int st;

	start_all();
	ck_assert_int_eq(lfs_write_file(P("before_term"), 123456, 301), 0);
	ck_assert_int_eq(kill(fs.fuse_pid, SIGTERM), 0);
	for (int i = 0; i < 1500 && lfs_is_mounted(fs.mnt); i++)
		usleep(10000);
	ck_assert_msg(!lfs_is_mounted(fs.mnt), "still mounted 15 s after SIGTERM");
	ck_assert_int_eq(waitpid(fs.fuse_pid, &st, 0), fs.fuse_pid);
	fs.fuse_pid = 0;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loligo-fuse status 0x%x after SIGTERM", st);
	/* everything written before the signal is there */
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(lfs_check_file(P("before_term"), 123456, 301), 0);
}
END_TEST

/*
 * A mount only root can reach (no allow_other: FUSE lets in the mounter's
 * uid and gid alone) caches names in directories not everyone may search,
 * like any other: GNU tar extracts into 0700 directories and fixes their
 * modes at the end, and each path walk below them was a LOOKUP per
 * component (six per file of an untar).  With allow_other the same walk
 * asks again every time, so that each caller's search permission is
 * checked (test_permissions_nonroot).
 */
START_TEST(test_private_dir_names_cached)
{
	struct stat st;
	int64_t before;

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P("priv"), 0700), 0);
	ck_assert_int_eq(mkdir(P("priv/a"), 0700), 0);
	ck_assert_int_eq(lfs_write_file(P("priv/a/f"), 10, 71), 0);
	ck_assert_int_eq(stat(P("priv/a/f"), &st), 0);
	before = fuse_counter("lookup");
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(stat(P("priv/a/f"), &st), 0);
	ck_assert_msg(fuse_counter("lookup") == before, "%lld LOOKUPs for 100 stats below 0700 directories",
		      (long long)(fuse_counter("lookup") - before));
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
	ck_assert_int_eq(stat(P("priv/a/f"), &st), 0);
	before = fuse_counter("lookup");
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(stat(P("priv/a/f"), &st), 0);
	ck_assert_msg(fuse_counter("lookup") - before >= 100, "allow_other: %lld LOOKUPs for 100 stats",
		      (long long)(fuse_counter("lookup") - before));
	ck_assert_int_eq(lfs_check_file(P("priv/a/f"), 10, 71), 0);
}
END_TEST

/* whether @list (listxattr's answer of @n bytes) has @name */
static bool xattr_listed(const char *list, ssize_t n, const char *name)
{
	for (ssize_t r = 0; r < n; r += (ssize_t)strlen(list + r) + 1)
		if (!strcmp(list + r, name))
			return true;
	return false;
}

/*
 * ls -l asks for security.selinux (getfilecon) and system.posix_acl_access
 * (file_has_acl) of every file, each a FUSE round trip the kernel never
 * caches.  With fuse_selinux_xattr off the label is refused (EOPNOTSUPP),
 * which coreutils remembers per filesystem (the ACL name too without
 * -o acl: test_acl_names_need_acl).
 * With it on the label is stored as before.  security.capability and
 * user.* work either way.
 */
START_TEST(test_selinux_xattr)
{
	uint32_t cap[5] = {htole32(0x02000000), htole32(1u << 10), 0, 0, 0};
	char buf[256], list[512], name[64];
	int64_t before, per_ls;
	ssize_t n;
	enum { FILES = 200 };

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "fuse_selinux_xattr=on"), 0);
	ck_assert_int_eq(mkdir(P("lbl"), 0755), 0);
	for (int i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "lbl/f%d", i);
		ck_assert_int_eq(lfs_write_file(P(name), 0, 1), 0);
	}
	ck_assert_int_eq(getxattr(P("lbl/f0"), "security.selinux", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(setxattr(P("lbl/f0"), "security.selinux", "ctx", 4, 0), 0);
	ck_assert_int_eq(getxattr(P("lbl/f0"), "security.selinux", buf, sizeof(buf)), 4);
	ck_assert_int_eq(setxattr(P("lbl/f0"), "user.k", "v", 1, 0), 0);
	n = listxattr(P("lbl/f0"), list, sizeof(list));
	ck_assert(n > 0 && xattr_listed(list, n, "security.selinux") && xattr_listed(list, n, "user.k"));
	char lsdir[PATH_MAX];
	snprintf(lsdir, sizeof(lsdir), "%s", P("lbl"));
	char *ls[] = {"/bin/ls", "-l", lsdir, NULL};
	ck_assert_int_eq(lfs_run(ls, 60000, "/dev/null"), 0);
	before = fuse_counter("xattr");
	ck_assert_int_eq(lfs_run(ls, 60000, "/dev/null"), 0);
	per_ls = fuse_counter("xattr") - before;
	/* the label of each file (the ACL name is refused without -o acl) */
	ck_assert_msg(per_ls >= FILES, "on: ls -l of %d files: %lld GETXATTRs", FILES, (long long)per_ls);

	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "fuse_selinux_xattr=off"), 0);
	ck_assert_int_eq(lfs_run(ls, 60000, "/dev/null"), 0);
	before = fuse_counter("xattr");
	ck_assert_int_eq(lfs_run(ls, 60000, "/dev/null"), 0);
	per_ls = fuse_counter("xattr") - before;
	/* the one label and the one ACL question (no -o acl) */
	ck_assert_msg(per_ls <= 4, "off: ls -l of %d files: %lld GETXATTRs", FILES, (long long)per_ls);
	/* refused alike by get, set, remove; not listed; the rest as before */
	ck_assert_int_eq(getxattr(P("lbl/f0"), "security.selinux", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(getxattr(P("lbl/f1"), "security.selinux", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(setxattr(P("lbl/f1"), "security.selinux", "ctx", 4, 0), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(removexattr(P("lbl/f0"), "security.selinux"), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	n = listxattr(P("lbl/f0"), NULL, 0);
	ck_assert_int_eq(n, (ssize_t)sizeof("user.k"));
	ck_assert_int_eq(listxattr(P("lbl/f0"), list, sizeof(list)), n);
	ck_assert_str_eq(list, "user.k");
	ck_assert_int_eq(getxattr(P("lbl/f0"), "user.k", buf, sizeof(buf)), 1);
	ck_assert_int_eq(setxattr(P("lbl/f1"), "security.capability", cap, sizeof(cap), 0), 0);
	ck_assert_int_eq(getxattr(P("lbl/f1"), "security.capability", buf, sizeof(buf)), (ssize_t)sizeof(cap));
	ck_assert_int_eq(memcmp(buf, cap, sizeof(cap)), 0);

	/* the label is still stored: on again, it is there */
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "fuse_selinux_xattr=on"), 0);
	ck_assert_int_eq(getxattr(P("lbl/f0"), "security.selinux", buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "ctx");
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_ne(lfs_mount(&fs, "fuse_selinux_xattr=maybe"), 0);

	/* the default (auto) is off where the host has no SELinux (with it,
	 * the kernel's LSM answers and loligo-fuse is not asked) */
	FILE *f = fopen("/proc/filesystems", "re");
	bool selinux = false;
	char line[128];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		selinux |= strstr(line, "\tselinuxfs\n") != NULL;
	fclose(f);
	if (!selinux) {
		ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
		ck_assert_int_eq(getxattr(P("lbl/f0"), "security.selinux", buf, sizeof(buf)), -1);
		ck_assert_int_eq(errno, EOPNOTSUPP);
	}
}
END_TEST

/* whether loligo-fuse's log (client.log) has @needle, waiting for its writer */
static bool client_log_has(const char *needle)
{
	char p[PATH_MAX + 16], line[1024];

	snprintf(p, sizeof(p), "%s/client.log", fs.dir);
	for (int tries = 0; tries < 500; tries++) {
		FILE *f = fopen(p, "r");
		bool found = false;

		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) != NULL;
		if (f)
			fclose(f);
		if (found)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * Without -o acl the mount refuses the ACL names (EOPNOTSUPP for get, set
 * and remove, not listed), as ext4 mounted noacl does: coreutils remembers
 * that per device, so a cold ls -l asks no ACL question per file (9.1,
 * Debian 12's; since 9.6 it asks listxattr of every file instead).  An ACL
 * set through an -o acl mount stays in the MDS and shows there again.
 */
START_TEST(test_acl_names_need_acl)
{
	/* u::rw-,u:2002:rw-,g::r--,m::rw-,o::r-- in Linux's xattr form */
	static const uint8_t acl[] = {
		2, 0, 0, 0,
		0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		0x02, 0, 6, 0, 0xd2, 0x07, 0, 0,
		0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	};
	static const char *const opts[] = { NULL, "noacl" };
	char buf[256], list[512], name[64], lsdir[PATH_MAX];
	int64_t before, per_ls;
	ssize_t n;
	enum { FILES = 200 };

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "acl"), 0);
	ck_assert_int_eq(mkdir(P("ac"), 0755), 0);
	for (int i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "ac/f%d", i);
		ck_assert_int_eq(lfs_write_file(P(name), 0, 1), 0);
	}
	ck_assert_int_eq(setxattr(P("ac/f0"), "system.posix_acl_access", acl, sizeof(acl), 0), 0);
	ck_assert_int_eq(getxattr(P("ac/f0"), "system.posix_acl_access", buf, sizeof(buf)), (ssize_t)sizeof(acl));
	ck_assert_int_eq(setxattr(P("ac/f0"), "user.k", "v", 1, 0), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);

	snprintf(lsdir, sizeof(lsdir), "%s", P("ac"));
	char *ls[] = {"/bin/ls", "-l", lsdir, NULL};
	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
		ck_assert_int_eq(lfs_mount(&fs, opts[o]), 0);
		ck_assert_int_eq(getxattr(P("ac/f0"), "system.posix_acl_access", buf, sizeof(buf)), -1);
		ck_assert_int_eq(errno, EOPNOTSUPP);
		ck_assert_int_eq(getxattr(P("ac/f1"), "system.posix_acl_access", NULL, 0), -1);
		ck_assert_int_eq(errno, EOPNOTSUPP);
		ck_assert_int_eq(getxattr(P("ac"), "system.posix_acl_default", buf, sizeof(buf)), -1);
		ck_assert_int_eq(errno, EOPNOTSUPP);
		ck_assert_int_eq(setxattr(P("ac/f1"), "system.posix_acl_access", acl, sizeof(acl), 0), -1);
		ck_assert_int_eq(errno, EOPNOTSUPP);
		ck_assert_int_eq(removexattr(P("ac/f0"), "system.posix_acl_access"), -1);
		ck_assert_int_eq(errno, EOPNOTSUPP);
		if (o == 0)     /* the log says what would make setfacl work */
			ck_assert_msg(client_log_has("POSIX ACLs through this mount need -o acl"),
				      "no word in client.log of the refused setfacl");
		n = listxattr(P("ac/f0"), NULL, 0);
		ck_assert_int_eq(n, (ssize_t)sizeof("user.k"));
		ck_assert_int_eq(listxattr(P("ac/f0"), list, sizeof(list)), n);
		ck_assert_str_eq(list, "user.k");
		/* a buffer of the probe's size: the unfiltered list does not fit */
		memset(list, 0, sizeof(list));
		ck_assert_int_eq(listxattr(P("ac/f0"), list, (size_t)n), n);
		ck_assert_str_eq(list, "user.k");
		ck_assert_int_eq(listxattr(P("ac/f0"), list, (size_t)n - 1), -1);
		ck_assert_int_eq(errno, ERANGE);
		ck_assert_int_eq(getxattr(P("ac/f0"), "user.k", buf, sizeof(buf)), 1);

		ck_assert_int_eq(lfs_run(ls, 60000, "/dev/null"), 0);
		before = fuse_counter("xattr");
		ck_assert_int_eq(lfs_run(ls, 60000, "/dev/null"), 0);
		per_ls = fuse_counter("xattr") - before;
		/* one ACL question and (without SELinux) one label question */
		ck_assert_msg(per_ls <= 4, "-o %s: ls -l of %d files: %lld GETXATTRs", opts[o] ? opts[o] : "(none)",
			      FILES, (long long)per_ls);
		ck_assert_int_eq(lfs_umount(&fs), 0);
	}

	/* still stored: -o acl shows it as it was set */
	ck_assert_int_eq(lfs_mount(&fs, "acl"), 0);
	ck_assert_int_eq(getxattr(P("ac/f0"), "system.posix_acl_access", buf, sizeof(buf)), (ssize_t)sizeof(acl));
	ck_assert_int_eq(memcmp(buf, acl, sizeof(acl)), 0);
	n = listxattr(P("ac/f0"), list, sizeof(list));
	ck_assert(n > 0 && xattr_listed(list, n, "system.posix_acl_access") && xattr_listed(list, n, "user.k"));
}
END_TEST

START_TEST(test_default_permissions)
{
	struct stat st;
	pid_t pid;
	int status, n = 0;
	DIR *d;

	/* the kernel checks permissions and opendir is answered with ENOSYS:
	 * listings must still be right and fresh */
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "allow_other,default_permissions"), 0);
	ck_assert_int_eq(mkdir(P("dp"), 0700), 0);
	ck_assert_int_eq(lfs_write_file(P("dp/a"), 1, 401), 0);
	ck_assert_int_eq(lfs_write_file(P("dp/b"), 1, 402), 0);
	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		d = opendir(P("dp"));
		ck_assert_ptr_nonnull(d);
		while (readdir(d))
			n++;
		closedir(d);
		ck_assert_int_eq(n, pass == 0 ? 4 : 3);
		if (pass == 0)
			ck_assert_int_eq(unlink(P("dp/a")), 0);
	}
	ck_assert_int_eq(stat(P("dp/b"), &st), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(100);
		/* a listing cached by root is not served to others */
		_exit(opendir(P("dp")) == NULL && errno == EACCES ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "uid 65534 could open a 0700 directory");
}
END_TEST

/* ---- restarts --------------------------------------------------------- */

static void make_tree(void)
{
	ck_assert_int_eq(mkdir(P("a"), 0755), 0);
	ck_assert_int_eq(mkdir(P("a/b"), 0711), 0);
	ck_assert_int_eq(lfs_write_file(P("a/b/f"), 5 * MiB + 3, 71), 0);
	ck_assert_int_eq(lfs_write_file(P("a/small"), 1000, 72), 0);
	ck_assert_int_eq(symlink("b/f", P("a/l")), 0);
	ck_assert_int_eq(link(P("a/b/f"), P("a/h")), 0);
	ck_assert_int_eq(setxattr(P("a/b/f"), "user.k", "v1", 2, 0), 0);
	ck_assert_int_eq(chmod(P("a/small"), 0640), 0);
	int fd = open(P("a/sparse"), O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "end", 3, 12345), 3);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(mkdir(P("a/gone"), 0755), 0);
	ck_assert_int_eq(rmdir(P("a/gone")), 0);
}

static void check_tree(void)
{
	struct stat st;
	char buf[64];

	ck_assert_int_eq(lfs_check_file(P("a/b/f"), 5 * MiB + 3, 71), 0);
	ck_assert_int_eq(lfs_check_file(P("a/h"), 5 * MiB + 3, 71), 0);
	ck_assert_int_eq(lfs_check_file(P("a/l"), 5 * MiB + 3, 71), 0);
	ck_assert_int_eq(lfs_check_file(P("a/small"), 1000, 72), 0);
	ck_assert_int_eq(stat(P("a/small"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(stat(P("a/b"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0711);
	ck_assert_int_eq(stat(P("a/b/f"), &st), 0);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_int_eq(readlink(P("a/l"), buf, sizeof(buf)), 3);
	ck_assert_int_eq(getxattr(P("a/b/f"), "user.k", buf, sizeof(buf)), 2);
	ck_assert(memcmp(buf, "v1", 2) == 0);
	ck_assert_int_eq(stat(P("a/sparse"), &st), 0);
	ck_assert_int_eq(st.st_size, 12348);
	ck_assert_int_eq(stat(P("a/gone"), &st), -1);
	ck_assert_int_eq(errno, ENOENT);
}

START_TEST(test_survives_remount_and_mds_restart)
{
	start_all();
	make_tree();
	check_tree();
	ck_assert_int_eq(lfs_umount(&fs), 0); /* loligo-fuse exits 0 after an unmount */
	ck_assert(!lfs_is_mounted(fs.mnt));
	lfs_mds_stop(&fs, SIGTERM);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	check_tree();
	/* and once more with a crashed MDS in between (journal replay) */
	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	check_tree();
}
END_TEST

struct writer {
	pthread_t th;
	atomic_bool stop;
	_Atomic long long synced;     /* bytes of /w that fsync() acknowledged */
	atomic_int synced_files;      /* /wf_<i> created and fsync()ed */
	int err;
	const char *err_what;
};

static void *writer_main(void *p)
{
	struct writer *w = p;
	enum { CHUNK = 64 * 1024 };
	unsigned char *buf = malloc(CHUNK);
	int fd = open(P("w"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	long long off = 0;

	if (fd < 0 || !buf) {
		w->err = errno;
		w->err_what = "open";
		free(buf);
		return NULL;
	}
	for (int i = 0; !atomic_load(&w->stop); i++) {
		for (int k = 0; k < CHUNK; k++)
			buf[k] = lfs_pat(81, off + k);
		if (pwrite(fd, buf, CHUNK, off) != CHUNK) {
			w->err = errno;
			w->err_what = "pwrite";
			break;
		}
		if (fsync(fd) != 0) {
			w->err = errno;
			w->err_what = "fsync";
			break;
		}
		off += CHUNK;
		atomic_store(&w->synced, off);
		usleep(2000); /* bound the volume: this checks durability, not speed */
		if (i % 8 == 0) { /* metadata too: a new file, fsync'd */
			char name[32];
			snprintf(name, sizeof(name), "wf_%d", atomic_load(&w->synced_files));
			int f2 = open(P(name), O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (f2 < 0 || write(f2, name, strlen(name)) != (ssize_t)strlen(name) || fsync(f2) != 0) {
				w->err = errno;
				w->err_what = "create+fsync";
				if (f2 >= 0)
					close(f2);
				break;
			}
			close(f2);
			atomic_fetch_add(&w->synced_files, 1);
		}
	}
	close(fd);
	free(buf);
	return NULL;
}

static void check_writer_output(struct writer *w)
{
	long long synced = atomic_load(&w->synced);
	struct stat st;
	int fd;

	ck_assert_int_eq(stat(P("w"), &st), 0);
	ck_assert_msg(st.st_size >= synced, "size %lld < %lld fsync'd bytes", (long long)st.st_size, synced);
	fd = open(P("w"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	unsigned char *buf = malloc(1 << 20);
	long long bad = -1;
	for (long long off = 0; off < synced && bad < 0;) {
		ssize_t n = pread(fd, buf, 1 << 20, off);
		ck_assert_int_gt(n, 0);
		for (ssize_t i = 0; i < n && off + i < synced; i++)
			if (buf[i] != lfs_pat(81, off + i)) {
				bad = off + i;
				break;
			}
		off += n;
	}
	free(buf);
	ck_assert_msg(bad < 0, "fsync'd byte %lld of %lld lost", bad, synced);
	close(fd);
	for (int i = 0; i < atomic_load(&w->synced_files); i++) {
		char name[32];
		snprintf(name, sizeof(name), "wf_%d", i);
		ck_assert_msg(stat(P(name), &st) == 0 && st.st_size == (off_t)strlen(name),
			      "fsync'd file %s lost", name);
	}
}

START_TEST(test_mds_kill9_during_writes)
{
	struct writer w = {0};
	long long before, at_restart;
	pid_t fuse_pid;

	start_all();
	fuse_pid = fs.fuse_pid;
	/* the restarted MDS is forked before the writer opens its files */
	ck_assert_int_eq(lfs_mds_prepare(&fs), 0);
	pthread_create(&w.th, NULL, writer_main, &w);
	usleep(1500 * 1000);
	before = atomic_load(&w.synced);
	lfs_mds_stop(&fs, SIGKILL);
	usleep(500 * 1000);
	ck_assert_int_eq(lfs_mds_start(&fs), 0); /* same store, same port */
	at_restart = atomic_load(&w.synced);
	/* the mount carries on: fsync()s complete again */
	double end = lt_now_s() + 15;
	while (lt_now_s() < end && !w.err && atomic_load(&w.synced) < at_restart + 4 * 64 * 1024)
		usleep(50 * 1000);
	usleep(500 * 1000);
	atomic_store(&w.stop, true);
	pthread_join(w.th, NULL);
	ck_assert_msg(w.err == 0, "writer: %s failed: %s", w.err_what, strerror(w.err));
	ck_assert_msg(before > 0, "nothing was fsync'd before the kill");
	ck_assert_msg(atomic_load(&w.synced) >= at_restart + 4 * 64 * 1024,
		      "no progress after the MDS restart (%lld bytes at restart, %lld now)", at_restart,
		      (long long)atomic_load(&w.synced));
	ck_assert_msg(kill(fuse_pid, 0) == 0 && lfs_is_mounted(fs.mnt), "the mount did not survive");
	check_writer_output(&w);
	/* and from a fresh mount, after another MDS restart */
	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	check_writer_output(&w);
}
END_TEST

/*
 * What fsync/fdatasync/fsync of a directory returned for is durable even if
 * loligo-fuse is killed -9 right after (nothing more of its caches reaches
 * the store or the MDS) and the MDS too (what it journaled is all there
 * is): a fresh mount on the restarted MDS shows every byte and size that was
 * synced.  Shapes that take different paths: a sequential stream whose tail
 * object is still being filled, a file closed first (its writeback started
 * by the close) and fsynced through a new descriptor, fdatasync, a file that
 * grows between two fsyncs, a rename put in place by the directory's fsync.
 */
static int pwrite_pat(int fd, off_t off, size_t len, size_t chunk, unsigned seed)
{
	unsigned char *b = malloc(chunk);
	int r = 0;

	if (!b)
		return -ENOMEM;
	for (size_t done = 0; done < len && !r;) {
		size_t n = len - done < chunk ? len - done : chunk;

		for (size_t i = 0; i < n; i++)
			b[i] = lfs_pat(seed, off + (off_t)(done + i));
		if (pwrite(fd, b, n, off + (off_t)done) != (ssize_t)n)
			r = -errno;
		done += n;
	}
	free(b);
	return r;
}

START_TEST(test_synced_data_survives_fuse_and_mds_kill9)
{
	int fa, fb, fc, fd, fe, dirfd;

	start_all();
	ck_assert_int_ge(mkdir(P("d"), 0755), 0);
	/* e: written and fsynced as d/e.tmp, renamed to d/e, the directory fsynced (first: fsync of a
	 * directory writes back every file, which would cover the cases below) */
	fe = open(P("d/e.tmp"), O_RDWR | O_CREAT, 0644);
	ck_assert_int_ge(fe, 0);
	ck_assert_int_eq(pwrite_pat(fe, 0, 200000, 65536, 95), 0);
	ck_assert_int_eq(fsync(fe), 0);
	ck_assert_int_eq(rename(P("d/e.tmp"), P("d/e")), 0);
	dirfd = open(P("d"), O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(fsync(dirfd), 0);

	/* a: 6.5 MiB of 1 MiB writes, the last object half full, fsync, still open */
	fa = open(P("d/a"), O_RDWR | O_CREAT, 0644);
	ck_assert_int_ge(fa, 0);
	ck_assert_int_eq(pwrite_pat(fa, 0, (13u << 20) / 2, 1 << 20, 91), 0);
	ck_assert_int_eq(fsync(fa), 0);
	/* b: written and closed, then fsynced through a new descriptor */
	ck_assert_int_eq(lfs_write_file(P("d/b"), 10000, 92), 0);
	fb = open(P("d/b"), O_RDWR);
	ck_assert_int_ge(fb, 0);
	ck_assert_int_eq(fsync(fb), 0);
	/* c: 3 MiB of 128 KiB writes, fdatasync */
	fc = open(P("d/c"), O_RDWR | O_CREAT, 0644);
	ck_assert_int_ge(fc, 0);
	ck_assert_int_eq(pwrite_pat(fc, 0, 3u << 20, 128 << 10, 93), 0);
	ck_assert_int_eq(fdatasync(fc), 0);
	/* d: 10 KiB, fsync, 5 KiB more, fsync */
	fd = open(P("d/d"), O_RDWR | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite_pat(fd, 0, 10240, 4096, 94), 0);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(pwrite_pat(fd, 10240, 5120, 4096, 94), 0);
	ck_assert_int_eq(fsync(fd), 0);
	/* the client dies with all of them open, then the MDS */
	ck_assert_int_eq(kill(fs.fuse_pid, SIGKILL), 0);
	waitpid(fs.fuse_pid, NULL, 0);
	fs.fuse_pid = 0;
	close(fa);
	close(fb);
	close(fc);
	close(fd);
	close(fe);
	close(dirfd);
	lfs_umount(&fs);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
	int bad = 0;
	bad |= lfs_check_file(P("d/a"), (13u << 20) / 2, 91) != 0;
	bad |= lfs_check_file(P("d/b"), 10000, 92) != 0;
	bad |= lfs_check_file(P("d/c"), 3u << 20, 93) != 0;
	bad |= lfs_check_file(P("d/d"), 15360, 94) != 0;
	bad |= lfs_check_file(P("d/e"), 200000, 95) != 0;
	ck_assert_msg(!bad, "synced data lost after kill -9 of loligo-fuse and of the MDS (see above)");
}
END_TEST

/* ---- mounting ----------------------------------------------------------- */

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) < 0)
		return -1;
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

static bool file_contains(const char *path, const char *needle)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

START_TEST(test_dead_mds_at_mount)
{
	char fuse[PATH_MAX], addr[64], out[PATH_MAX + 16];
	int port = free_port();
	double t0, el;
	int st;

	ck_assert_int_gt(port, 0);
	snprintf(addr, sizeof(addr), "--client_mds_addr=127.0.0.1:%d", port);
	snprintf(out, sizeof(out), "%s/deadmds.out", fs.dir);
	/* the default (daemonizing) mode: the exit status is the mount's result */
	/* with the default client_mount_timeout (10 s) */
	char *argv[] = {(char *)lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse)), "-c", fs.conf, addr,
			fs.mnt, NULL};
	t0 = lt_now_s();
	st = lfs_run(argv, 30000, out);
	el = lt_now_s() - t0;
	ck_assert_msg(st > 0 && st < 128, "loligo-fuse exit status %d with no MDS", st);
	ck_assert_msg(el < 15, "took %.1f s to fail", el);
	ck_assert(!lfs_is_mounted(fs.mnt));
	ck_assert_msg(file_contains(out, "cannot mount") && file_contains(out, addr + 18),
		      "no clear message in %s", out);
	/* and a bad mount point is reported before anything else */
	char *argv2[] = {fuse, "-c", fs.conf, "/nonexistent/mnt", NULL};
	ck_assert_int_ne(lfs_run(argv2, 10000, out), 0);
	ck_assert(file_contains(out, "/nonexistent/mnt"));
}
END_TEST

static pid_t find_fuse_daemon(const char *mnt)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (d && (de = readdir(d)) && !found) {
		char p[64], cmd[4096];
		pid_t pid = atoi(de->d_name);
		if (pid <= 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		cmd[n] = '\0';
		if (!strstr(cmd, "loligo-fuse"))
			continue;
		for (size_t i = 0; i < n; i += strlen(cmd + i) + 1)
			if (!strcmp(cmd + i, mnt))
				found = pid;
	}
	if (d)
		closedir(d);
	return found;
}


/* mount(8)'s argument convention mapped onto loligo-fuse's (-f: fake, -v: say) */
static void helper_says(const char *source, const char *opts, const char *expect)
{
	char helper[PATH_MAX], out[PATH_MAX + 16], buf[1024] = "";
	char *argv[] = {helper, (char *)source, "/some/mnt", "-f", "-v", "-o", (char *)opts, NULL};
	FILE *f;

	lfs_bin("client/fuse/mount.fuse.loligo", helper, sizeof(helper));
	snprintf(out, sizeof(out), "%s/helper-args.out", fs.dir);
	unlink(out);
	ck_assert_int_eq(lfs_run(argv, 10000, out), 0);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_msg(strstr(buf, expect) != NULL, "source '%s' -o '%s': helper says '%s', expected '%s'", source,
		      opts, buf, expect);
}

START_TEST(test_mount_helper_args)
{
	/* root's mounts get dev and suid unless nodev/nosuid are asked for:
	 * mount(8) keeps dev and suid to itself (test_fuse_admin dev_suid) */
	helper_says("none", "rw,conf=/etc/l.conf,_netdev,noauto,user,nofail,defaults,x-systemd.automount",
		    "loligo-fuse -o rw,conf=/etc/l.conf,dev,suid /some/mnt");
	helper_says("10.1.2.3:6800", "allow_other", "-o allow_other,dev,suid,mds=10.1.2.3:6800 /some/mnt");
	helper_says("10.1.2.3:6800:/home/x", "ro",
		    "-o ro,dev,suid,mds=10.1.2.3:6800,client_mountpoint=/home/x /some/mnt");
	helper_says("loligo:/sub", "defaults", "-o dev,suid,client_mountpoint=/sub /some/mnt");
	helper_says("loligo", "defaults,_netdev", "loligo-fuse -o dev,suid /some/mnt");
	helper_says("loligo", "rw,nodev,nosuid", "loligo-fuse -o rw,nodev,nosuid /some/mnt");
	/* a remount starts no daemon: the flags go to the existing mount
	 * (test_fuse_admin remount) */
	helper_says("loligo", "ro,nosuid,nodev,relatime,remount,user_id=0,group_id=0,conf=/etc/l.conf",
		    "mount -i --options-source disable -o remount,ro,nosuid,nodev,relatime /some/mnt");
}
END_TEST

START_TEST(test_mount_helper)
{
	char helper[PATH_MAX], opts[PATH_MAX + 128], src[64], out[PATH_MAX + 16];
	struct stat st;
	pid_t daemon;

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	snprintf(out, sizeof(out), "%s/helper.out", fs.dir);
	lfs_bin("client/fuse/mount.fuse.loligo", helper, sizeof(helper));
	/* mount(8)'s convention: SOURCE MOUNTPOINT -o OPTIONS, with fstab-only
	 * options mixed in */
	snprintf(opts, sizeof(opts), "rw,conf=%s,allow_other,_netdev,nofail,defaults", fs.conf);
	snprintf(src, sizeof(src), "127.0.0.1:%d:/", fs.mds_port);
	char *argv[] = {helper, src, fs.mnt, "-o", opts, NULL};
	ck_assert_int_eq(lfs_run(argv, 30000, out), 0);
	/* the helper returned: the mount must be live now, not eventually */
	ck_assert(lfs_is_mounted(fs.mnt));
	daemon = find_fuse_daemon(fs.mnt);
	ck_assert_int_gt(daemon, 0);
	ck_assert_int_eq(lfs_write_file(P("via_helper"), 100, 91), 0);
	ck_assert_int_eq(lfs_check_file(P("via_helper"), 100, 91), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	for (int i = 0; i < 500 && kill(daemon, 0) == 0; i++)
		usleep(10000);
	ck_assert_msg(kill(daemon, 0) != 0, "the daemon did not exit after the unmount");

	/* client_mountpoint through the source, read-only */
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P("sub"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("sub/inner"), 10, 92), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	snprintf(opts, sizeof(opts), "ro,conf=%s", fs.conf);
	snprintf(src, sizeof(src), "127.0.0.1:%d:/sub", fs.mds_port);
	char *argv2[] = {helper, src, fs.mnt, "-o", opts, NULL};
	ck_assert_int_eq(lfs_run(argv2, 30000, out), 0);
	ck_assert(lfs_is_mounted(fs.mnt));
	daemon = find_fuse_daemon(fs.mnt);
	ck_assert_int_eq(lfs_check_file(P("inner"), 10, 92), 0);
	ck_assert_int_eq(stat(P("sub"), &st), -1);
	ck_assert_int_eq(open(P("new"), O_CREAT | O_WRONLY, 0644), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	for (int i = 0; i < 500 && daemon > 0 && kill(daemon, 0) == 0; i++)
		usleep(10000);
}
END_TEST

static Suite *fuse_suite(void)
{
	Suite *s = suite_create("fuse_e2e");
	TCase *tc;

	tc = tcase_create("fs");
	tcase_add_unchecked_fixture(tc, setup_mounted, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_file_sizes);
	tcase_add_test(tc, test_sparse);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_concurrent_writers);
	tcase_add_test(tc, test_rename);
	tcase_add_test(tc, test_links);
	tcase_add_test(tc, test_dirs_and_attrs);
	tcase_add_test(tc, test_xattrs);
	tcase_add_test(tc, test_readdir_5000);
	tcase_add_test(tc, test_permissions_nonroot);
	suite_add_tcase(s, tc);

	tc = tcase_create("restart");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_survives_remount_and_mds_restart);
	suite_add_tcase(s, tc);

	tc = tcase_create("mds_crash");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_mds_kill9_during_writes);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuse_crash");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_synced_data_survives_fuse_and_mds_kill9);
	suite_add_tcase(s, tc);

	tc = tcase_create("refs");
	tcase_add_unchecked_fixture(tc, setup_mounted, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_lookup_counts);
	tcase_add_test(tc, test_kernel_invalidation);
	tcase_add_test(tc, test_op_cpu);
	tcase_add_test(tc, test_writes_need_no_mds);
	tcase_add_test(tc, test_seq_write_whole_objects);
	suite_add_tcase(s, tc);

	tc = tcase_create("close_gather");
	tcase_add_unchecked_fixture(tc, setup_mounted, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_closes_gather);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_sigterm_unmounts);
	suite_add_tcase(s, tc);

	tc = tcase_create("default_permissions");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_default_permissions);
	suite_add_tcase(s, tc);

	tc = tcase_create("selinux_xattr");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_selinux_xattr);
	suite_add_tcase(s, tc);

	tc = tcase_create("acl_names");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_acl_names_need_acl);
	suite_add_tcase(s, tc);

	tc = tcase_create("private_dirs");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_private_dir_names_cached);
	suite_add_tcase(s, tc);

	tc = tcase_create("mounting");
	tcase_add_unchecked_fixture(tc, setup_fs_only, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_dead_mds_at_mount);
	tcase_add_test(tc, test_mount_helper_args);
	tcase_add_test(tc, test_mount_helper);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fuse_suite());
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "test_fuse: needs root and /dev/fuse; skipped\n");
		return 77;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
