/*
 * test_fuse_admin.c - the Linux file semantics programs and administrators
 * rely on (issue 25, items 4-7 and 10), through real FUSE mounts, each case
 * asserting what a program would notice, as ext4 or the ceph kernel client
 * shows it:
 *
 *   remount        `mount -o remount,ro MNT` (mount(8) runs our helper for
 *                  it): writes fail with EROFS, `remount,rw` makes them work
 *                  again, the same loligo-fuse serves the mount throughout
 *                  (the helper used to start a second one, which refused
 *                  "remount")
 *   dev_suid       a mount through the helper as mount(8) passes `-o
 *                  dev,suid`: a device node opens and writes, a setuid-root
 *                  program elevates; `-o nodev,nosuid` still refuses both
 *                  (mount(8) keeps dev and suid to itself, so they never
 *                  reached loligo-fuse)
 *   file_caps      setxattr/getxattr of security.capability (setcap/getcap)
 *                  work; a write, truncate or fallocate by a non-owner who
 *                  may write the file succeeds and removes the capability
 *                  (the kernel's kill-priv), also when the capability was
 *                  set through another mount (they were refused, and with
 *                  them on the write failed with EIO)
 *   hardlinks      fs.protected_hardlinks as it is at the time of the link,
 *                  not at mount time: 0 lets a user link another's file, 1
 *                  refuses it (EPERM); the original value is restored by the
 *                  fixture, also when the case fails
 *   whiteout       renameat2(RENAME_WHITEOUT): the target has the file, the
 *                  source is a character device 0/0 (overlayfs's whiteout),
 *                  on both mounts and after the MDS replays its journal
 *                  (EINVAL before)
 *
 * Not here: O_TMPFILE (item 10a), in test_fuse_tmpfile.c.
 *
 * mount(8) itself is not run: it finds helpers only in /sbin, which a test
 * does not install into.  The helper is run the way mount(8) runs it, with
 * the arguments mount(8) 2.38 was seen to pass (strace, and a logging
 * helper in /sbin):
 *   mount -t fuse.loligo SRC MNT -o dev,suid,allow_other,conf=C
 *       -> mount.fuse.loligo SRC MNT -o rw,allow_other,conf=C
 *   mount -o remount,ro MNT
 *       -> mount.fuse.loligo loligo MNT -o ro,<MNT's flags>,remount,<its fs options>
 *   mount -t fuse.loligo -o remount,ro loligo MNT
 *       -> mount.fuse.loligo loligo MNT -o ro,remount
 *
 * Every case gets a fresh filesystem from an unchecked fixture (whose
 * teardown runs in the check parent, also when the case failed).
 */
#include <check.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

#define NOBODY 65534
#define FCAPS "security.capability"

static struct lfs fs;
static int saved_hardlinks = -1;   /* fs.protected_hardlinks before the case; the teardown restores it */

#define P(rel) lfs_at(fs.mnt, (rel))

#define P2(rel) lfs_at(fs.mnt2, (rel))

/* ---- helpers ------------------------------------------------------------ */

/* Run @fn(@arg) as uid/gid 65534 in a child; its return value (0, or an
 * errno the child saw), or -1 if it died. */
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

/* the loligo-fuse process serving @mnt, and how many there are */
static pid_t fuse_daemon(const char *mnt, int *count)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	*count = 0;
	while (d && (de = readdir(d))) {
		char p[64], cmd[4096];
		pid_t pid = atoi(de->d_name);
		size_t n;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
		f = fopen(p, "r");
		if (!f)
			continue;
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		cmd[n] = '\0';
		if (!strstr(cmd, "loligo-fuse"))
			continue;
		for (size_t i = 0; i < n; i += strlen(cmd + i) + 1)
			if (!strcmp(cmd + i, mnt)) {
				found = pid;
				++*count;
				break;
			}
	}
	if (d)
		closedir(d);
	return found;
}

/* The per-mount flags ("rw,nosuid,nodev,relatime") and the superblock's
 * options ("rw,user_id=0,group_id=0,allow_other") of @mnt in mountinfo. */
static bool mount_flags(const char *mnt, char *vfs, size_t vlen, char *super, size_t slen)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], opts[1024], *sep = strstr(line, " - ");
		char type[64], src[256], sopts[1024];

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s %1023s", mp, opts) != 2 || strcmp(mp, mnt))
			continue;
		if (sscanf(sep + 3, "%63s %255s %1023s", type, src, sopts) != 3)
			continue;
		snprintf(vfs, vlen, "%s", opts);
		snprintf(super, slen, "%s", sopts);
		found = true;
	}
	if (f)
		fclose(f);
	return found;
}

static bool has_flag(const char *list, const char *flag)
{
	char buf[1024], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, flag))
			return true;
	return false;
}

/* Run the helper as mount(8) does: SOURCE MOUNTPOINT -o OPTS; its exit status. */
static int helper(const char *source, const char *opts)
{
	char bin[PATH_MAX], fuse[PATH_MAX], out[PATH_MAX + 32], o[2048];
	char *argv[] = {bin, (char *)source, fs.mnt, "-o", o, NULL};
	int r;

	lfs_bin("client/fuse/mount.fuse.loligo", bin, sizeof(bin));
	/* this build's daemon, not one a package put on the PATH */
	setenv("LOLIGO_FUSE", lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse)), 1);
	snprintf(o, sizeof(o), "%s", opts);
	snprintf(out, sizeof(out), "%s/helper.out", fs.dir);
	r = lfs_run(argv, 60000, out);
	if (r != 0) {
		char msg[1024] = "";
		FILE *f = fopen(out, "r");

		if (f) {
			msg[fread(msg, 1, sizeof(msg) - 1, f)] = '\0';
			fclose(f);
		}
		fprintf(stderr, "mount.fuse.loligo %s %s -o %s: exit %d: %s\n", source, fs.mnt, opts, r, msg);
	}
	return r;
}

/* A new mount of the filesystem through the helper with mount(8)'s @opts
 * (conf= added); the daemon is recorded for lfs_umount/lfs_cleanup. */
static void helper_mount(const char *opts)
{
	char src[64], o[PATH_MAX + 256], pidf[PATH_MAX];
	int n;
	FILE *f;

	snprintf(src, sizeof(src), "127.0.0.1:%d:/", fs.mds_port);
	snprintf(o, sizeof(o), "%s,conf=%s", opts, fs.conf);
	ck_assert_int_eq(helper(src, o), 0);
	/* the helper returned: the mount is live now */
	ck_assert(lfs_is_mounted(fs.mnt));
	fs.fuse_pid = fuse_daemon(fs.mnt, &n);
	ck_assert_int_gt(fs.fuse_pid, 0);
	ck_assert_int_eq(n, 1);
	snprintf(pidf, sizeof(pidf), "%s/fuse.pid", fs.dir);
	f = fopen(pidf, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%d\n", (int)fs.fuse_pid);
	fclose(f);
}

/* `mount -o remount,MODE MNT` as mount(8) hands it to the helper: the
 * mount's flags from mountinfo with MODE first, remount, its fs options. */
static int remount_as_mount8(const char *mode)
{
	char vfs[1024], super[1024], o[2200] = "", buf[1024], *save = NULL;

	ck_assert(mount_flags(fs.mnt, vfs, sizeof(vfs), super, sizeof(super)));
	snprintf(o, sizeof(o), "%s", mode);
	snprintf(buf, sizeof(buf), "%s", vfs);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, "rw") && strcmp(t, "ro"))
			snprintf(o + strlen(o), sizeof(o) - strlen(o), ",%s", t);
	snprintf(o + strlen(o), sizeof(o) - strlen(o), ",remount");
	snprintf(buf, sizeof(buf), "%s", super);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, "rw") && strcmp(t, "ro"))
			snprintf(o + strlen(o), sizeof(o) - strlen(o), ",%s", t);
	return helper("loligo", o);
}

/* what a program notices of a read-only mount */
static void check_read_only(const char *when)
{
	char vfs[1024], super[1024];
	int fd;

	ck_assert(mount_flags(fs.mnt, vfs, sizeof(vfs), super, sizeof(super)));
	ck_assert_msg(has_flag(vfs, "ro"), "%s: mount flags %s", when, vfs);
	fd = open(P("new"), O_CREAT | O_WRONLY, 0644);
	ck_assert_msg(fd < 0 && errno == EROFS, "%s: create gave fd %d (%s)", when, fd, strerror(errno));
	ck_assert_int_eq(open(P("before"), O_WRONLY), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(mkdir(P("dir"), 0755), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(lfs_check_file(P("before"), 3000, 1), 0);   /* reads go on */
}

static void check_writable(const char *name, unsigned seed)
{
	char vfs[1024], super[1024];

	ck_assert(mount_flags(fs.mnt, vfs, sizeof(vfs), super, sizeof(super)));
	ck_assert_msg(has_flag(vfs, "rw"), "mount flags %s", vfs);
	ck_assert_int_eq(lfs_write_file(P(name), 5000, seed), 0);
	ck_assert_int_eq(lfs_check_file(P(name), 5000, seed), 0);
}

static void same_daemon(pid_t daemon, const char *when)
{
	int n;
	pid_t now = fuse_daemon(fs.mnt, &n);

	ck_assert_msg(now == daemon && n == 1, "%s: %d loligo-fuse on the mount (pid %d, was %d)", when, n,
		      (int)now, (int)daemon);
}

/* ---- 4: remount --------------------------------------------------------- */

START_TEST(test_remount)
{
	pid_t daemon;

	helper_mount("rw,allow_other");
	daemon = fs.fuse_pid;
	ck_assert_int_eq(lfs_write_file(P("before"), 3000, 1), 0);

	/* mount -o remount,ro MNT */
	ck_assert_int_eq(remount_as_mount8("ro"), 0);
	same_daemon(daemon, "remount,ro");
	check_read_only("after remount,ro");
	/* mount -o remount,rw MNT */
	ck_assert_int_eq(remount_as_mount8("rw"), 0);
	same_daemon(daemon, "remount,rw");
	check_writable("after", 2);

	/* mount -t fuse.loligo -o remount,ro loligo MNT, and back */
	ck_assert_int_eq(helper("loligo", "ro,remount"), 0);
	check_read_only("after -t fuse.loligo -o remount,ro");
	ck_assert_int_eq(helper("loligo", "rw,remount"), 0);
	check_writable("after2", 3);
	same_daemon(daemon, "the -t form");

	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- 5: dev and suid ------------------------------------------------------ */

static int open_null(void *arg)
{
	int fd = open(arg, O_RDWR);
	char c;

	if (fd < 0)
		return errno;
	if (write(fd, "x", 1) != 1 || read(fd, &c, 1) != 0)   /* /dev/null: takes all, gives nothing */
		return EIO;
	close(fd);
	return 0;
}

/* the effective uid a copy of id(1) on the mount reports, run as nobody */
static int euid_of(void *arg)
{
	char *argv[] = {arg, "-u", NULL}, buf[32] = "";
	int p[2], st;
	pid_t pid;
	ssize_t n;

	if (pipe(p) < 0)
		return EIO;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	waitpid(pid, &st, 0);
	if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return EIO;
	/* 0: elevated; 1: ran as nobody */
	return atoi(buf) == 0 ? 0 : (atoi(buf) == NOBODY ? 1 : EIO);
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	ssize_t n;

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	ck_assert_int_eq(n, 0);
	close(in);
	ck_assert_int_eq(close(out), 0);
	ck_assert_int_eq(chmod(to, mode), 0);
}

START_TEST(test_dev_suid)
{
	char vfs[1024], super[1024];
	int r;

	/* mount -t fuse.loligo SRC MNT -o dev,suid,allow_other: mount(8) keeps
	 * dev and suid and passes the rest */
	helper_mount("rw,allow_other");
	ck_assert(mount_flags(fs.mnt, vfs, sizeof(vfs), super, sizeof(super)));
	ck_assert_int_eq(mknod(P("null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	ck_assert_int_eq(chmod(P("null"), 0666), 0);
	copy_file("/usr/bin/id", P("id"), 04755);
	r = as_nobody(open_null, (void *)P("null"));
	ck_assert_msg(r == 0, "a device node on a mount asked for with dev: %s (mount flags %s)", strerror(r), vfs);
	r = as_nobody(euid_of, (void *)P("id"));
	ck_assert_msg(r == 0, "a setuid-root id(1) on a mount asked for with suid runs with %s (mount flags %s)",
		      r == 1 ? "euid 65534" : "an error", vfs);
	ck_assert_int_eq(lfs_umount(&fs), 0);

	/* -o nodev,nosuid (or `user`, which implies them): still refused */
	helper_mount("rw,nosuid,nodev,allow_other");
	ck_assert_int_eq(as_nobody(open_null, (void *)P("null")), EACCES);
	ck_assert_int_eq(as_nobody(euid_of, (void *)P("id")), 1);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- 6: file capabilities ------------------------------------------------- */

/* cap_net_raw+ep as setcap(8) writes it (VFS_CAP_REVISION_2, little-endian) */
static void cap_value(uint32_t v[5])
{
	v[0] = htole32(0x02000000 | 0x1);   /* revision 2, effective */
	v[1] = htole32(1u << 13);           /* permitted: CAP_NET_RAW */
	v[2] = v[3] = v[4] = 0;
}

static void set_cap(const char *path)
{
	uint32_t v[5], got[5];

	cap_value(v);
	ck_assert_msg(setxattr(path, FCAPS, v, sizeof(v), 0) == 0, "setcap %s: %s", path, strerror(errno));
	ck_assert_int_eq(getxattr(path, FCAPS, got, sizeof(got)), (ssize_t)sizeof(got));
	ck_assert_int_eq(memcmp(v, got, sizeof(v)), 0);
}

static void has_no_cap(const char *path, const char *after)
{
	uint32_t got[5];
	ssize_t n = getxattr(path, FCAPS, got, sizeof(got));

	ck_assert_msg(n == -1 && errno == ENODATA, "%s: %s still has its capability (getxattr %zd, %s)", after, path,
		      n, n < 0 ? strerror(errno) : "");
}

static int write_as(void *arg)
{
	int fd = open(arg, O_WRONLY);

	if (fd < 0)
		return errno;
	if (pwrite(fd, "w", 1, 1) != 1)
		return errno ? errno : EIO;
	return close(fd) ? errno : 0;
}

static int truncate_as(void *arg)
{
	return truncate(arg, 100) ? errno : 0;
}

static int fallocate_as(void *arg)
{
	int fd = open(arg, O_WRONLY), r = 0;

	if (fd < 0)
		return errno;
	/* RADOS cannot reserve (mode 0 is EOPNOTSUPP there): a ZERO_RANGE
	 * growing the file is a modification the kernel kills privileges for
	 * too (fuse_file_fallocate without KEEP_SIZE) */
	if (lfs_rados() ? fallocate(fd, FALLOC_FL_ZERO_RANGE, 1 << 20, 1 << 20) : fallocate(fd, 0, 0, 1 << 20))
		r = errno;
	close(fd);
	return r;
}

/* getcap(8)'s view, when libcap2-bin is installed */
static void getcap_says(const char *path, const char *expect)
{
	char *argv[] = {"/usr/sbin/getcap", (char *)path, NULL}, out[PATH_MAX + 32], buf[1024] = "";
	FILE *f;

	if (access(argv[0], X_OK) != 0)
		return;
	snprintf(out, sizeof(out), "%s/getcap.out", fs.dir);
	unlink(out);
	ck_assert_int_eq(lfs_run(argv, 10000, out), 0);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	ck_assert_msg(strstr(buf, expect), "getcap %s: '%s', expected '%s'", path, buf, expect);
}

START_TEST(test_file_caps)
{
	struct {
		const char *what;
		int (*fn)(void *);
	} ops[] = {{"a write", write_as}, {"a truncate", truncate_as}, {"a fallocate", fallocate_as}};
	char buf[8];
	int r;

	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);
	ck_assert_int_eq(lfs_write_file(P("ping"), 3000, 5), 0);
	ck_assert_int_eq(chmod(P("ping"), 0666), 0);     /* root's; others may write it */
	set_cap(P("ping"));
	getcap_says(P("ping"), "cap_net_raw=ep");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		set_cap(P("ping"));
		r = as_nobody(ops[i].fn, (void *)P("ping"));
		ck_assert_msg(r == 0, "%s by a user who may write the file: %s", ops[i].what, strerror(r));
		has_no_cap(P("ping"), ops[i].what);
	}
	/* the write landed */
	int fd = open(P("ping"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, 1, 1), 1);
	ck_assert_int_eq(buf[0], 'w');
	close(fd);
	/* root's writes drop it too, as on ext4 */
	set_cap(P("ping"));
	ck_assert_int_eq(write_as((void *)P("ping")), 0);
	has_no_cap(P("ping"), "root's write");

	/* across clients: the second mount's writer has asked (and been told
	 * "none") before the capability is set through the first */
	ck_assert_int_eq(lfs_mount2(&fs, "allow_other"), 0);
	ck_assert_int_eq(as_nobody(write_as, (void *)P2("ping")), 0);
	ck_assert_int_eq(as_nobody(write_as, (void *)P2("ping")), 0);
	set_cap(P("ping"));
	ck_assert_int_eq(getxattr(P2("ping"), FCAPS, buf, 0), 20);   /* the other mount sees it */
	ck_assert_int_eq(as_nobody(write_as, (void *)P2("ping")), 0);
	has_no_cap(P("ping"), "a write through the other mount");
	has_no_cap(P2("ping"), "a write through the other mount");
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- 7: fs.protected_hardlinks -------------------------------------------- */

static int read_hardlinks(void)
{
	FILE *f = fopen("/proc/sys/fs/protected_hardlinks", "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void set_hardlinks(int v)
{
	FILE *f = fopen("/proc/sys/fs/protected_hardlinks", "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fprintf(f, "%d\n", v), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(read_hardlinks(), v);
}

struct link_args {
	const char *from, *to;
};

static int link_as(void *arg)
{
	struct link_args *a = arg;

	return link(a->from, a->to) ? errno : 0;
}

START_TEST(test_hardlinks)
{
	struct link_args a;

	ck_assert_int_ge(saved_hardlinks, 0);
	set_hardlinks(1);
	ck_assert_int_eq(lfs_mount(&fs, "allow_other"), 0);          /* mounted while it is 1 */
	ck_assert_int_eq(mkdir(P("hl"), 0777), 0);
	ck_assert_int_eq(chmod(P("hl"), 0777), 0);
	ck_assert_int_eq(lfs_write_file(P("hl/roots"), 10, 7), 0);   /* 0644 root: not writable by nobody */
	ck_assert_int_eq(lfs_write_file(P("hl/shared"), 10, 8), 0);
	ck_assert_int_eq(chmod(P("hl/shared"), 0666), 0);

	set_hardlinks(0);
	a = (struct link_args){P("hl/roots"), P("hl/l0")};
	ck_assert_msg(as_nobody(link_as, &a) == 0, "link to another's file with fs.protected_hardlinks=0: %s",
		      strerror(as_nobody(link_as, &a)));
	set_hardlinks(1);
	a = (struct link_args){P("hl/roots"), P("hl/l1")};
	ck_assert_int_eq(as_nobody(link_as, &a), EPERM);
	a = (struct link_args){P("hl/shared"), P("hl/l2")};   /* readable and writable: allowed */
	ck_assert_int_eq(as_nobody(link_as, &a), 0);

	/* the other way round: a mount made while it was 0 */
	set_hardlinks(0);
	ck_assert_int_eq(lfs_mount2(&fs, "allow_other"), 0);
	set_hardlinks(1);
	a = (struct link_args){P2("hl/roots"), P2("hl/l3")};
	ck_assert_int_eq(as_nobody(link_as, &a), EPERM);
	ck_assert_int_eq(access(P("hl/l3"), F_OK), -1);
	ck_assert_int_eq(access(P("hl/l0"), F_OK), 0);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- 10: RENAME_WHITEOUT ------------------------------------------------ */

#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

static void is_whiteout(const char *path)
{
	struct stat st;

	ck_assert_msg(lstat(path, &st) == 0, "lstat %s: %s", path, strerror(errno));
	ck_assert_msg(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0) && (st.st_mode & 07777) == 0,
		      "%s: mode 0%o rdev %u:%u, not a whiteout (c--------- 0:0)", path, st.st_mode,
		      major(st.st_rdev), minor(st.st_rdev));
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

START_TEST(test_whiteout)
{
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P("up"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("up/a"), 1000, 11), 0);
	ck_assert_int_eq(lstat(P2("up/a"), &(struct stat){0}), 0);   /* the other mount caches the name */

	ck_assert_msg(renameat2(AT_FDCWD, P("up/a"), AT_FDCWD, P("up/b"), RENAME_WHITEOUT) == 0,
		      "renameat2(RENAME_WHITEOUT): %s", strerror(errno));
	ck_assert_int_eq(lfs_check_file(P("up/b"), 1000, 11), 0);
	is_whiteout(P("up/a"));
	ck_assert_int_eq(names_in(P("up")), 2);
	ck_assert_int_eq(lfs_check_file(P2("up/b"), 1000, 11), 0);
	is_whiteout(P2("up/a"));

	/* over an existing target, into another directory; NOREPLACE still refuses */
	ck_assert_int_eq(mkdir(P("up2"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("up2/c"), 10, 12), 0);
	ck_assert_int_eq(lfs_write_file(P("up/old"), 10, 13), 0);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("up2/c"), AT_FDCWD, P("up/old"), RENAME_WHITEOUT | RENAME_NOREPLACE),
			 -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("up2/c"), AT_FDCWD, P("up/old"), RENAME_WHITEOUT), 0);
	ck_assert_int_eq(lfs_check_file(P("up/old"), 10, 12), 0);
	is_whiteout(P("up2/c"));
	is_whiteout(P2("up2/c"));
	/* a directory too (overlayfs whites out directories) */
	ck_assert_int_eq(mkdir(P("up/d"), 0755), 0);
	ck_assert_int_eq(renameat2(AT_FDCWD, P("up/d"), AT_FDCWD, P("up2/d"), RENAME_WHITEOUT | RENAME_NOREPLACE), 0);
	is_whiteout(P("up/d"));
	struct stat st;
	ck_assert_int_eq(stat(P2("up2/d"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	/* EXCHANGE combines with nothing */
	ck_assert_int_eq(renameat2(AT_FDCWD, P("up/b"), AT_FDCWD, P("up/old"), RENAME_WHITEOUT | RENAME_EXCHANGE), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* a whiteout is a name like any other: it can be removed; the other
	 * mount's kernel forgets the name when its invalidation, queued before
	 * the lease ack, is delivered (client/caps.c wait_kernel: names are not
	 * waited for), so that is waited for, not assumed at once */
	ck_assert_int_eq(unlink(P("up/a")), 0);
	ck_assert_msg(LT_WAITED(lstat(P2("up/a"), &st) == -1 && errno == ENOENT),
		      "the other mount still finds up/a after its unlink");
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);

	/* journaled with the rename: an MDS killed now replays it */
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	is_whiteout(P("up2/c"));
	is_whiteout(P("up/d"));
	ck_assert_int_eq(lfs_check_file(P("up/old"), 10, 12), 0);
	ck_assert_int_eq(names_in(P("up")), 3);   /* b, old, d */
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- fixture -------------------------------------------------------------- */

static void setup(void)
{
	saved_hardlinks = read_hardlinks();
	if (lfs_init(&fs) != 0 || lfs_mds_start(&fs) != 0) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
	if (saved_hardlinks >= 0 && read_hardlinks() != saved_hardlinks) {
		FILE *f = fopen("/proc/sys/fs/protected_hardlinks", "w");

		if (!f || fprintf(f, "%d\n", saved_hardlinks) < 0 || fclose(f) != 0)
			fprintf(stderr, "test_fuse_admin: could not restore fs.protected_hardlinks=%d\n",
				saved_hardlinks);
	}
}

static void add(Suite *s, const char *name, const TTest *t)
{
	lfs_suite_add(s, name, t, setup, teardown, 120);
}

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_admin");

	add(s, "remount", test_remount);
	add(s, "dev_suid", test_dev_suid);
	add(s, "file_caps", test_file_caps);
	add(s, "hardlinks", test_hardlinks);
	add(s, "whiteout", test_whiteout);
	return s;
}

int main(void)
{
	return lfs_suite_main(suite(), "test_fuse_admin");
}
