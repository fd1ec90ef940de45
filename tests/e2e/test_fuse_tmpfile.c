/*
 * test_fuse_tmpfile.c - open(dir, O_TMPFILE) through real FUSE mounts
 * (issue 25 item 10a), each case asserting what a program notices, as on
 * ext4:
 *
 *   basic       a file with no name: it reads back what was written, fstat
 *               says nlink 0, no listing shows it (either mount), `df -i`
 *               counts it; linkat through /proc/self/fd gives it a name the
 *               other mount sees with the data, which stays after the
 *               close and after the MDS replays its journal (killed)
 *   close       closed without a name it is gone: `df -i` counts what it
 *               did before, and its data objects are purged
 *   restart     open across an MDS killed -9: one is linked afterwards and
 *               keeps its data, the other goes at its close
 *   excl        O_TMPFILE|O_EXCL is never linkable (ENOENT, both through
 *               /proc/self/fd and AT_EMPTY_PATH); without O_EXCL
 *               AT_EMPTY_PATH links it
 *   perm        a user without write permission on the directory gets
 *               EACCES; with it, the file is the user's
 *
 * It was EOPNOTSUPP: the kernel sends FUSE_TMPFILE, which Debian 12's
 * libfuse 3.14 answers ENOSYS (tmpfile_hook.c in loligo-fuse now passes
 * it on as a CREATE).
 *
 * Every case gets a fresh filesystem from an unchecked fixture (whose
 * teardown runs in the check parent, also when the case failed).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

#define NOBODY 65534
#define SIZE (3 * 1024 * 1024 + 77)   /* several objects, a partial last one */

static struct lfs fs;

#define P(rel) lfs_at(fs.mnt, (rel))

#define P2(rel) lfs_at(fs.mnt2, (rel))

/* ---- helpers ------------------------------------------------------------ */

/* inodes in use, as `df -i` shows them */
static long long files_used(const char *mnt)
{
	struct statvfs sv;

	ck_assert_int_eq(statvfs(mnt, &sv), 0);
	return (long long)(sv.f_files - sv.f_ffree);
}

static int64_t client_perf(const char *name)
{
	return lfs_perf(fs.asok, "client", name);
}

static int names_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int tmpfile_in(const char *dir, int flags)
{
	int fd = open(dir, O_TMPFILE | flags, 0640);

	ck_assert_msg(fd >= 0, "open(%s, O_TMPFILE): %s", dir, strerror(errno));
	return fd;
}

static void write_pattern(int fd, off_t size, unsigned seed)
{
	static unsigned char buf[1 << 20];

	for (off_t off = 0; off < size;) {
		size_t n = (size_t)(size - off < (off_t)sizeof(buf) ? size - off : (off_t)sizeof(buf));

		for (size_t i = 0; i < n; i++)
			buf[i] = lfs_pat(seed, off + (off_t)i);
		ck_assert_int_eq(pwrite(fd, buf, n, off), (ssize_t)n);
		off += (off_t)n;
	}
}

static void check_pattern(int fd, off_t size, unsigned seed)
{
	static unsigned char buf[1 << 20];

	for (off_t off = 0; off < size;) {
		size_t n = (size_t)(size - off < (off_t)sizeof(buf) ? size - off : (off_t)sizeof(buf));

		ck_assert_int_eq(pread(fd, buf, n, off), (ssize_t)n);
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(buf[i] == lfs_pat(seed, off + (off_t)i), "byte %lld differs",
				      (long long)(off + (off_t)i));
		off += (off_t)n;
	}
}

static int link_fd(int fd, const char *to, bool empty_path)
{
	char proc[64];

	if (empty_path)
		return linkat(fd, "", AT_FDCWD, to, AT_EMPTY_PATH) ? errno : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, to, AT_SYMLINK_FOLLOW) ? errno : 0;
}

/* ---- cases ---------------------------------------------------------------- */

START_TEST(test_basic)
{
	struct stat st;
	long long used;
	int fd, r;

	umask(022);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P("d"), 0755), 0);
	used = files_used(fs.mnt);

	fd = tmpfile_in(P("d"), O_RDWR);
	write_pattern(fd, SIZE, 1);
	check_pattern(fd, SIZE, 1);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0640);   /* umask 022 */
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(st.st_size, SIZE);
	ck_assert_int_eq(names_in(P("d")), 0);
	ck_assert_int_eq(names_in(P2("d")), 0);
	ck_assert_int_eq(files_used(fs.mnt), used + 1);   /* it exists, nameless */

	r = link_fd(fd, P("d/named"), false);
	ck_assert_msg(r == 0, "linkat(/proc/self/fd): %s", strerror(r));
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(lfs_check_file(P2("d/named"), SIZE, 1), 0);
	ck_assert_int_eq(names_in(P2("d")), 1);
	ck_assert_int_eq(lfs_check_file(P("d/named"), SIZE, 1), 0);   /* the close purged nothing */
	ck_assert_int_eq(stat(P2("d/named"), &st), 0);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_int_eq(files_used(fs.mnt), used + 1);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);

	/* the name came in one journal entry with leaving the stray table:
	 * an MDS killed now replays both */
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(lfs_check_file(P("d/named"), SIZE, 1), 0);
	ck_assert_int_eq(names_in(P("d")), 1);
	ck_assert_int_eq(files_used(fs.mnt), used + 1);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

START_TEST(test_close)
{
	long long used;
	int64_t purged;
	double end;
	int fd;

	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	used = files_used(fs.mnt);
	purged = client_perf("purge_files");
	ck_assert_int_ge(purged, 0);

	fd = tmpfile_in(fs.mnt, O_WRONLY);
	write_pattern(fd, SIZE, 2);
	ck_assert_int_eq(fsync(fd), 0);   /* the objects exist in the store */
	ck_assert_int_eq(files_used(fs.mnt), used + 1);
	ck_assert_int_eq(close(fd), 0);

	/* the MDS drops the orphan when it hears of the last close */
	end = lt_now_s() + 30;
	while (files_used(fs.mnt) != used && lt_now_s() < end)
		usleep(20000);
	ck_assert_int_eq(files_used(fs.mnt), used);
	end = lt_now_s() + 30;
	while (client_perf("purge_files") <= purged && lt_now_s() < end)
		usleep(20000);
	ck_assert_msg(client_perf("purge_files") > purged, "the data of the closed tmpfile was not purged");
	ck_assert_int_eq(names_in(fs.mnt), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

START_TEST(test_excl)
{
	struct stat st;
	int fd;

	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	fd = tmpfile_in(fs.mnt, O_RDWR | O_EXCL);
	write_pattern(fd, 100, 3);
	ck_assert_int_eq(link_fd(fd, P("x1"), false), ENOENT);
	ck_assert_int_eq(link_fd(fd, P("x2"), true), ENOENT);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(names_in(fs.mnt), 0);

	/* without O_EXCL, AT_EMPTY_PATH (root: CAP_DAC_READ_SEARCH) links it */
	fd = tmpfile_in(fs.mnt, O_RDWR);
	write_pattern(fd, 100, 4);
	ck_assert_int_eq(link_fd(fd, P("y"), true), 0);
	/* a second name is an ordinary hard link */
	ck_assert_int_eq(link_fd(fd, P("y2"), true), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(lfs_check_file(P("y"), 100, 4), 0);
	ck_assert_int_eq(lfs_check_file(P("y2"), 100, 4), 0);
	ck_assert_int_eq(names_in(fs.mnt), 2);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* open across an MDS killed -9: the restarted MDS has them from its
 * journal (stray table, linkable or not), the mount re-asserts the opens */
START_TEST(test_restart)
{
	long long used;
	double end;
	int a, b, r;

	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	used = files_used(fs.mnt);
	/* the next MDS is forked before the files are open (it must not inherit them) */
	ck_assert_int_eq(lfs_mds_prepare(&fs), 0);
	a = tmpfile_in(fs.mnt, O_RDWR);
	b = tmpfile_in(fs.mnt, O_RDWR);
	write_pattern(a, SIZE, 5);
	write_pattern(b, 1000, 6);
	ck_assert_int_eq(fsync(a), 0);
	ck_assert_int_eq(fsync(b), 0);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);

	r = link_fd(a, P("kept"), false);
	ck_assert_msg(r == 0, "linkat after the MDS restart: %s", strerror(r));
	check_pattern(a, SIZE, 5);
	check_pattern(b, 1000, 6);
	ck_assert_int_eq(files_used(fs.mnt), used + 2);
	ck_assert_int_eq(close(a), 0);
	ck_assert_int_eq(close(b), 0);
	end = lt_now_s() + 30;
	while (files_used(fs.mnt) != used + 1 && lt_now_s() < end)
		usleep(20000);
	ck_assert_int_eq(files_used(fs.mnt), used + 1);   /* b went at its close */
	ck_assert_int_eq(names_in(fs.mnt), 1);
	ck_assert_int_eq(lfs_check_file(P("kept"), SIZE, 5), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* O_TMPFILE in @arg as uid/gid 65534: 0 (and the file is theirs) or the errno */
static int tmpfile_as(void *arg)
{
	struct stat st;
	int fd = open(arg, O_TMPFILE | O_RDWR, 0600);

	if (fd < 0)
		return errno;
	if (fstat(fd, &st) || st.st_uid != NOBODY || st.st_gid != NOBODY || st.st_nlink != 0)
		return EBADE;
	if (pwrite(fd, "abc", 3, 0) != 3)
		return errno;
	close(fd);
	return 0;
}

static int as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(125);
		_exit(fn(arg) & 0x7f);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_perm)
{
	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
	ck_assert_int_eq(mkdir(P("ro"), 0755), 0);
	ck_assert_int_eq(mkdir(P("rw"), 0777), 0);
	ck_assert_int_eq(chmod(P("rw"), 0777), 0);
	ck_assert_int_eq(as_nobody(tmpfile_as, (void *)P("ro")), EACCES);
	ck_assert_int_eq(as_nobody(tmpfile_as, (void *)P("rw")), 0);
	ck_assert_int_eq(names_in(P("ro")), 0);
	ck_assert_int_eq(names_in(P("rw")), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- fixture -------------------------------------------------------------- */

static void setup(void)
{
	/* the MDS purges a closed orphan's objects at once */
	if (lfs_init_with(&fs, "mds_purge_delay = 0\n") != 0 || lfs_mds_start(&fs) != 0) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

static void add(Suite *s, const char *name, const TTest *t)
{
	lfs_suite_add(s, name, t, setup, teardown, 120);
}

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_tmpfile");

	add(s, "basic", test_basic);
	add(s, "close", test_close);
	add(s, "restart", test_restart);
	add(s, "excl", test_excl);
	add(s, "perm", test_perm);
	return s;
}

int main(void)
{
	return lfs_suite_main(suite(), "test_fuse_tmpfile");
}
