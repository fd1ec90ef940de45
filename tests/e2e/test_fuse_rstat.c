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
 *   quota_two_clients  two mounts writing into one byte quota at once both
 *                   get EDQUOT, together within one object size each of it.
 *   `loligo fs du` is checked in stats.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/fsuid.h>
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

#define P(rel) lfs_at(fs.mnt, (rel))

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

	/* `loligo fs du` prints them */
	{
		char cli[PATH_MAX], out[PATH_MAX + 16], buf[4096];
		char *argv[] = { (char *)lfs_bin("tools/cli/loligo", cli, sizeof(cli)), "--format", "json", "fs", "du",
				 (char *)P("a"), (char *)P("x"), NULL };
		FILE *f;
		size_t len;

		snprintf(out, sizeof(out), "%s/du.out", fs.dir);
		ck_assert_int_eq(lfs_run(argv, 30000, out), 0);
		f = fopen(out, "r");
		ck_assert_ptr_nonnull(f);
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		ck_assert_msg(strstr(buf, "\"rbytes\":3000") && strstr(buf, "\"rbytes\":12000") &&
			      strstr(buf, "\"rfiles\":4"), "loligo fs du said: %s", buf);
	}

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
	/* unmounted while the restarted MDS (our child: it dies with us) serves */
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST


static void setup_other(void)
{
	ck_assert_int_eq(lfs_init(&fs), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
}

static int set_quota(const char *rel, const char *which, long long v)
{
	char name[64], val[32];

	snprintf(name, sizeof(name), "loligo.quota.%s", which);
	snprintf(val, sizeof(val), "%lld", v);
	return setxattr(P(rel), name, val, strlen(val), 0);
}

/* errno of creating @rel (a file), 0 if it worked */
static int create_err(const char *rel)
{
	int fd = open(P(rel), O_CREAT | O_EXCL | O_WRONLY, 0644);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* errno of an op, 0 if it worked */
#define ERR(call) ((call) == 0 ? 0 : errno)

START_TEST(test_quota_files)
{
	int r, err;

	ck_assert_int_eq(mkdir(P("q"), 0777), 0);
	ck_assert_int_eq(mkdir(P("q/in"), 0777), 0);
	ck_assert_int_eq(create_err("outside"), 0);
	ck_assert_int_eq(set_quota("q", "max_files", 5), 0);
	ck_assert_int_eq(set_quota("q/in", "max_files", 2), 0);
	ck_assert_int_eq(vx("q", "quota.max_files"), 5);

	/* the inner quota is the tighter one */
	ck_assert_int_eq(create_err("q/in/f1"), 0);
	ck_assert_int_eq(create_err("q/in/f2"), 0);
	ck_assert_int_eq(create_err("q/in/f3"), EDQUOT);
	ck_assert_int_eq(ERR(mkdir(P("q/in/d"), 0755)), EDQUOT);
	ck_assert_int_eq(ERR(symlink("x", P("q/in/s"))), EDQUOT);
	/* the outer one: in, f1, f2 and two more */
	ck_assert_int_eq(create_err("q/a"), 0);
	ck_assert_int_eq(create_err("q/b"), 0);
	ck_assert_int_eq(create_err("q/c"), EDQUOT);
	ck_assert_int_eq(ERR(mkdir(P("q/d"), 0755)), EDQUOT);
	/* renames and links into a full tree are refused, renames inside it
	 * (where the count does not change) are not */
	ck_assert_int_eq(ERR(rename(P("outside"), P("q/x"))), EDQUOT);
	ck_assert_int_eq(ERR(link(P("outside"), P("q/l"))), EDQUOT);
	ck_assert_int_eq(ERR(rename(P("q/a"), P("q/in/a"))), EDQUOT);
	ck_assert_int_eq(ERR(rename(P("q/a"), P("q/a2"))), 0);
	ck_assert_int_eq(ERR(rename(P("q/in/f1"), P("q/f1"))), 0);    /* out of in: room there... */
	ck_assert_int_eq(create_err("q/in/f3"), EDQUOT);             /* ...but not in q */
	/* a rename over an existing name adds nothing */
	ck_assert_int_eq(create_err("o2"), 0);
	ck_assert_int_eq(ERR(rename(P("o2"), P("q/b"))), 0);
	/* moving a name out makes room */
	ck_assert_int_eq(ERR(rename(P("q/b"), P("b"))), 0);
	ck_assert_int_eq(create_err("q/in/f3"), 0);
	ck_assert_int_eq(create_err("q/c"), EDQUOT);
	ck_assert_int_eq(vx("q", "dir.rentries"), 5);
	ck_assert_int_eq(vx("q/in", "dir.rentries"), 2);

	/* only root sets quotas (the FUSE request carries the fsuid) */
	setfsgid(65534);
	setfsuid(65534);
	errno = 0;
	r = set_quota("q", "max_files", 100);
	err = errno;
	setfsuid(0);
	setfsgid(0);
	ck_assert_msg(r == -1 && err == EPERM, "a non-root caller setting a quota: %d (%s)", r, strerror(err));
	ck_assert_int_eq(vx("q", "quota.max_files"), 5);

	/* kept across a kill -9 of the MDS; removed with 0 */
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(create_err("q/e"), EDQUOT);
	ck_assert_int_eq(vx("q/in", "quota.max_files"), 2);
	ck_assert_int_eq(set_quota("q", "max_files", 0), 0);
	ck_assert_int_eq(create_err("q/e"), 0);
	/* unmounted while the restarted MDS (our child: it dies with us) serves */
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* bytes written to @rel in 64 KiB writes until one fails; its errno in *@err */
static off_t fill(const char *rel, off_t at_most, int *err)
{
	static char buf[65536];
	off_t done = 0;
	int fd = open(P(rel), O_CREAT | O_WRONLY, 0644);

	*err = 0;
	if (fd < 0) {
		*err = errno;
		return 0;
	}
	memset(buf, 'q', sizeof(buf));
	while (done < at_most) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n < 0) {
			*err = errno;
			break;
		}
		done += n;
	}
	if (fsync(fd) && !*err)
		*err = errno;
	close(fd);
	return done;
}

START_TEST(test_quota_bytes)
{
	const off_t max = 1 << 20, osize = 4 << 20;
	struct statvfs sv;
	off_t n;
	int err, fd;

	ck_assert_int_eq(mkdir(P("q"), 0777), 0);
	ck_assert_int_eq(mkdir(P("q/sub"), 0777), 0);
	ck_assert_int_eq(set_quota("q", "max_bytes", max), 0);
	ck_assert_int_eq(set_quota("q", "max_files", 1000), 0);

	/* a truncate past it: the MDS refuses it exactly */
	fd = open(P("q/t"), O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	errno = 0;
	ck_assert_int_eq(ftruncate(fd, max + 1), -1);
	ck_assert_int_eq(errno, EDQUOT);
	ck_assert_int_eq(ftruncate(fd, 1000), 0);
	close(fd);
	ck_assert_int_eq(unlink(P("q/t")), 0);

	/* writes: EDQUOT within one object size of it */
	n = fill("q/sub/f", 64 << 20, &err);
	ck_assert_msg(err == EDQUOT, "writing 64 MiB under a 1 MiB quota: %s after %lld bytes", strerror(err),
		      (long long)n);
	ck_assert_msg(n >= max / 2 && n <= max + osize, "%lld bytes written under a quota of %lld", (long long)n,
		      (long long)max);
	ck_assert_int_le(vx("q", "dir.rbytes"), max + osize);
	ck_assert_int_eq(vx("q", "dir.rbytes"), n);
	/* another file in the full tree gets nothing more */
	n = fill("q/g", 1 << 20, &err);
	ck_assert_int_eq(err, EDQUOT);
	ck_assert_int_le(vx("q", "dir.rbytes"), max + osize);

	/* a mount of the quota'd directory: df shows the quota */
	ck_assert_int_eq(lfs_mount2(&fs, "client_mountpoint=/q"), 0);
	ck_assert_int_eq(statvfs(fs.mnt2, &sv), 0);
	ck_assert_msg((off_t)sv.f_blocks * (off_t)sv.f_frsize == max, "df of the quota'd mount: %llu blocks of %lu",
		      (unsigned long long)sv.f_blocks, (unsigned long)sv.f_frsize);
	ck_assert_int_eq(sv.f_files, 1000);
	ck_assert_int_eq(lfs_umount2(&fs), 0);

	/* raised: writing goes on (the client asks the MDS again) */
	ck_assert_int_eq(set_quota("q", "max_bytes", 8 * max), 0);
	n = fill("q/g", 1 << 20, &err);
	ck_assert_msg(err == 0 && n == 1 << 20, "after the raise: %s after %lld bytes", strerror(err), (long long)n);
}
END_TEST

struct writer {
	char path[PATH_MAX + 64];
	off_t done;
	int err;
};

/* write 64 KiB at a time to @w->path until a write fails (or 64 MiB) */
static void *writer_run(void *arg)
{
	static char buf[65536];
	struct writer *w = arg;
	int fd = open(w->path, O_CREAT | O_WRONLY, 0644);

	memset(buf, 'w', sizeof(buf));
	if (fd < 0) {
		w->err = errno;
		return NULL;
	}
	while (w->done < (64 << 20)) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n < 0) {
			w->err = errno;
			break;
		}
		w->done += n;
	}
	if (fsync(fd) && !w->err)
		w->err = errno;
	close(fd);
	return NULL;
}

START_TEST(test_quota_two_clients)
{
	const off_t max = 2 << 20, osize = 4 << 20;
	struct writer w[2];
	pthread_t th[2];

	ck_assert_int_eq(mkdir(P("q"), 0777), 0);
	ck_assert_int_eq(set_quota("q", "max_bytes", max), 0);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	memset(w, 0, sizeof(w));
	snprintf(w[0].path, sizeof(w[0].path), "%s/q/one", fs.mnt);
	snprintf(w[1].path, sizeof(w[1].path), "%s/q/two", fs.mnt2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_run, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(w[i].err == EDQUOT, "writer %d: %s after %lld bytes", i, strerror(w[i].err),
			      (long long)w[i].done);
	/* both flushed (fsync): the MDS's count is what they wrote, within
	 * one object size per writing client of the quota */
	ck_assert_int_eq(vx("q", "dir.rbytes"), w[0].done + w[1].done);
	ck_assert_msg(w[0].done + w[1].done <= max + 2 * osize, "two writers wrote %lld + %lld under a quota of %lld",
		      (long long)w[0].done, (long long)w[1].done, (long long)max);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_rstat");

	lfs_suite_add(s, "stats", test_stats, setup, teardown, 300);
	lfs_suite_add(s, "quota_files", test_quota_files, setup_other, teardown, 300);
	lfs_suite_add(s, "quota_bytes", test_quota_bytes, setup, teardown, 300);
	lfs_suite_add(s, "quota_two_clients", test_quota_two_clients, setup, teardown, 300);
	return lfs_suite_main(s, "test_fuse_rstat");
}
