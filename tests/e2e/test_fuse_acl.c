/*
 * test_fuse_acl.c - POSIX ACLs through a loligo-fuse mount with -o acl
 * (FUSE_POSIX_ACL: the kernel checks with the ACLs, the MDS stores, checks
 * and inherits them), step for step against the same operations on a local
 * filesystem with ACLs (ext4 where the test's temp dir lives, else a tmpfs
 * the test mounts), as unprivileged users in forked children:
 *
 *   named user and named group allowed (open, truncate, times to now),
 *   the owning group's entry, other;
 *   the mask limiting them and chmod rewriting it; an access ACL the mode
 *   can say alone kept as the mode only; malformed ACLs refused (EINVAL);
 *   default ACLs inherited by create and mkdir (instead of the umask, and
 *   the umask where there is none); only the owner sets an ACL; a default
 *   ACL only on directories; removing the access ACL.
 *
 * Besides: what a create inherited survives a kill -9 of the MDS (the
 * journal replay), an ACL with named entries out of order is refused
 * (EINVAL: stricter than ext4, see docs/ARCHITECTURE.md), and setfacl and
 * getfacl work through the mount.
 *
 * Every step's outcome (errno, mode, the ACL's bytes as getxattr returns
 * them) is recorded on both and the two records must be equal; a few are
 * also asserted outright, so that both being wrong alike cannot pass.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/e2e/test_fuse_harness.h"

#define OWNER 2001u
#define ALICE 2002u
#define BOB   2003u       /* in group STAFF */
#define OTHER 2004u
#define STAFF 3000u

#define ACC "system.posix_acl_access"
#define DEF "system.posix_acl_default"

static struct lfs fs;

enum op { MKDIR, CHOWN, CREATE, OPEN_R, OPEN_W, CHMOD, STAT, SETACL, SETDEF, SETRAW, GETACL, GETDEF, RMACL, TRUNC,
	  TOUCH };

struct step {
	uid_t uid;
	gid_t sup;              /* a supplementary group, or 0 */
	enum op op;
	const char *path;
	unsigned mode;          /* MKDIR, CREATE, CHMOD; SETRAW: which bad ACL */
	const char *acl;        /* SETACL/SETDEF: "u::rw-,u:2002:rw-,g::r--,m::rw-,o::---" */
};

static const struct step steps[] = {
	{ 0, 0, MKDIR, "t", 0755, NULL },
	{ 0, 0, CHOWN, "t", 0, NULL },
	/* a named user and a named group on a file */
	{ OWNER, 0, CREATE, "t/f", 0640, NULL },
	{ OWNER, 0, SETACL, "t/f", 0, "u::rw-,u:2002:rw-,g::r--,g:3000:r--,m::rw-,o::---" },
	{ OWNER, 0, STAT, "t/f", 0, NULL },
	{ OWNER, 0, GETACL, "t/f", 0, NULL },
	{ ALICE, 0, OPEN_W, "t/f", 0, NULL },
	{ ALICE, 0, OPEN_R, "t/f", 0, NULL },
	{ ALICE, 0, TRUNC, "t/f", 0, NULL },            /* write permission by the ACL: truncate(2), */
	{ ALICE, 0, TOUCH, "t/f", 0, NULL },            /* utimensat(NULL) */
	{ OTHER, 0, TRUNC, "t/f", 0, NULL },
	{ OTHER, 0, TOUCH, "t/f", 0, NULL },
	{ BOB, STAFF, OPEN_R, "t/f", 0, NULL },
	{ BOB, STAFF, OPEN_W, "t/f", 0, NULL },
	{ OTHER, 0, OPEN_R, "t/f", 0, NULL },
	{ OTHER, OWNER, OPEN_R, "t/f", 0, NULL },       /* the owning group's entry */
	{ OTHER, OWNER, OPEN_W, "t/f", 0, NULL },
	/* chmod rewrites the mask, which then limits the named user */
	{ OWNER, 0, CHMOD, "t/f", 0640, NULL },
	{ OWNER, 0, STAT, "t/f", 0, NULL },
	{ OWNER, 0, GETACL, "t/f", 0, NULL },
	{ ALICE, 0, OPEN_W, "t/f", 0, NULL },
	{ ALICE, 0, OPEN_R, "t/f", 0, NULL },
	{ OWNER, 0, CHMOD, "t/f", 0670, NULL },
	{ ALICE, 0, OPEN_W, "t/f", 0, NULL },
	{ OWNER, 0, GETACL, "t/f", 0, NULL },
	/* only the owner */
	{ ALICE, 0, SETACL, "t/f", 0, "u::rwx,g::rwx,o::rwx" },
	/* malformed ACLs: nothing changes */
	{ OWNER, 0, SETRAW, "t/f", 1, NULL },
	{ OWNER, 0, SETRAW, "t/f", 2, NULL },
	{ OWNER, 0, SETRAW, "t/f", 3, NULL },
	{ OWNER, 0, SETRAW, "t/f", 4, NULL },
	{ OWNER, 0, GETACL, "t/f", 0, NULL },
	/* an ACL the mode says alone is the mode */
	{ OWNER, 0, CREATE, "t/g", 0600, NULL },
	{ OWNER, 0, SETACL, "t/g", 0, "u::rw-,g::r--,o::r--" },
	{ OWNER, 0, STAT, "t/g", 0, NULL },
	{ OWNER, 0, GETACL, "t/g", 0, NULL },
	/* a default ACL: on directories only */
	{ OWNER, 0, SETDEF, "t/f", 0, "u::rwx,g::r-x,o::---" },
	{ OWNER, 0, MKDIR, "t/d", 0755, NULL },
	{ OWNER, 0, SETACL, "t/d", 0, "u::rwx,u:2002:rwx,g::r-x,m::rwx,o::r-x" },
	{ OWNER, 0, SETDEF, "t/d", 0, "u::rwx,u:2002:rwx,g::r-x,g:3000:rwx,m::rwx,o::---" },
	{ OWNER, 0, STAT, "t/d", 0, NULL },
	{ OWNER, 0, GETDEF, "t/d", 0, NULL },
	/* inherited by create (the umask 022 does not apply) and mkdir */
	{ ALICE, 0, CREATE, "t/d/af", 0666, NULL },
	{ ALICE, 0, STAT, "t/d/af", 0, NULL },
	{ ALICE, 0, GETACL, "t/d/af", 0, NULL },
	{ ALICE, 0, GETDEF, "t/d/af", 0, NULL },
	{ BOB, STAFF, OPEN_W, "t/d/af", 0, NULL },
	{ OTHER, 0, OPEN_R, "t/d/af", 0, NULL },
	{ OWNER, 0, MKDIR, "t/d/sub", 0777, NULL },
	{ OWNER, 0, STAT, "t/d/sub", 0, NULL },
	{ OWNER, 0, GETACL, "t/d/sub", 0, NULL },
	{ OWNER, 0, GETDEF, "t/d/sub", 0, NULL },
	{ ALICE, 0, CREATE, "t/d/sub/deep", 0640, NULL },
	{ ALICE, 0, STAT, "t/d/sub/deep", 0, NULL },
	{ ALICE, 0, GETACL, "t/d/sub/deep", 0, NULL },
	{ BOB, STAFF, OPEN_R, "t/d/sub/deep", 0, NULL },
	/* chmod of an inherited ACL */
	{ ALICE, 0, CHMOD, "t/d/af", 0600, NULL },
	{ ALICE, 0, GETACL, "t/d/af", 0, NULL },
	{ BOB, STAFF, OPEN_R, "t/d/af", 0, NULL },
	/* no default ACL: the umask */
	{ OWNER, 0, CREATE, "t/u", 0666, NULL },
	{ OWNER, 0, STAT, "t/u", 0, NULL },
	{ OWNER, 0, MKDIR, "t/ud", 0777, NULL },
	{ OWNER, 0, STAT, "t/ud", 0, NULL },
	/* removing the access ACL leaves the mode */
	{ OWNER, 0, RMACL, "t/f", 0, NULL },
	{ OWNER, 0, STAT, "t/f", 0, NULL },
	{ OWNER, 0, GETACL, "t/f", 0, NULL },
	{ ALICE, 0, OPEN_R, "t/f", 0, NULL },
	{ BOB, STAFF, OPEN_R, "t/f", 0, NULL },
};
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))

static const char *opname[] = { "mkdir", "chown", "create", "open_r", "open_w", "chmod", "stat", "setacl",
				"setdef", "setraw", "getacl", "getdef", "rmacl", "trunc", "touch" };

static void put_ent(uint8_t *p, unsigned tag, unsigned perm, uint32_t id)
{
	p[0] = (uint8_t)tag, p[1] = 0, p[2] = (uint8_t)perm, p[3] = 0;
	p[4] = (uint8_t)id, p[5] = (uint8_t)(id >> 8), p[6] = (uint8_t)(id >> 16), p[7] = (uint8_t)(id >> 24);
}

/* "u::rw-,u:2002:rw-,g::r--,m::rw-,o::---" in the xattr form; its length */
static size_t acl_bytes(const char *text, uint8_t *b)
{
	size_t n = 4;
	const char *p = text;

	b[0] = 2, b[1] = b[2] = b[3] = 0;
	while (*p) {
		char kind = *p;
		uint32_t id = 0xffffffffu;
		unsigned tag = 0, perm = 0;

		p += 2;
		if (*p != ':')
			id = (uint32_t)strtoul(p, (char **)&p, 10);
		p++;
		for (int i = 0; i < 3 && *p && *p != ','; i++, p++)
			perm |= *p == 'r' ? 4 : *p == 'w' ? 2 : *p == 'x' ? 1 : 0;
		switch (kind) {
		case 'u': tag = id == 0xffffffffu ? 0x01 : 0x02; break;
		case 'g': tag = id == 0xffffffffu ? 0x04 : 0x08; break;
		case 'm': tag = 0x10; break;
		case 'o': tag = 0x20; break;
		}
		put_ent(b + n, tag, perm, id);
		n += 8;
		if (*p == ',')
			p++;
	}
	return n;
}

/* a malformed ACL (SETRAW @which) */
static size_t bad_acl(unsigned which, uint8_t *b)
{
	switch (which) {
	case 1:         /* a named group and no mask */
		return acl_bytes("u::rw-,g::r--,g:3000:r--,o::---", b);
	case 5:         /* named users out of order (ext4 takes it as it is; loligo: EINVAL) */
		return acl_bytes("u::rw-,u:2003:r--,u:2002:r--,g::r--,m::rw-,o::---", b);
	case 2:         /* a named user and no mask */
		return acl_bytes("u::rw-,u:2002:r--,g::r--,o::---", b);
	case 3:         /* half an entry */
		return acl_bytes("u::rw-,g::r--,o::---", b) - 3;
	default:        /* no OTHER */
		return acl_bytes("u::rw-,g::r--", b);
	}
}

/* one step, as its user, in a child; its outcome as a line into @fd */
static void run_step(const char *base, const struct step *s, int fd)
{
	char path[PATH_MAX + 64], out[512] = "";
	uint8_t b[1024];
	struct stat st;
	size_t n;
	ssize_t got;
	int r = 0, f;

	snprintf(path, sizeof(path), "%s/%s", base, s->path);
	umask(022);
	if (s->uid) {
		gid_t g[1] = { s->sup };

		if (setgroups(s->sup ? 1 : 0, g) < 0 || setresgid(s->uid, s->uid, s->uid) < 0 ||
		    setresuid(s->uid, s->uid, s->uid) < 0)
			_exit(100);
	}
	errno = 0;
	switch (s->op) {
	case MKDIR:
		r = mkdir(path, s->mode);
		break;
	case CHOWN:
		r = chown(path, OWNER, OWNER);
		break;
	case CREATE:
		r = f = open(path, O_CREAT | O_EXCL | O_WRONLY, s->mode);
		if (f >= 0)
			close(f);
		break;
	case OPEN_R:
	case OPEN_W:
		r = f = open(path, s->op == OPEN_R ? O_RDONLY : O_WRONLY);
		if (f >= 0)
			close(f);
		break;
	case CHMOD:
		r = chmod(path, s->mode);
		break;
	case STAT:
		r = stat(path, &st);
		if (!r)
			snprintf(out, sizeof(out), " mode %o uid %u gid %u", st.st_mode, st.st_uid, st.st_gid);
		break;
	case SETACL:
	case SETDEF:
		n = acl_bytes(s->acl, b);
		r = setxattr(path, s->op == SETACL ? ACC : DEF, b, n, 0);
		break;
	case SETRAW:
		n = bad_acl(s->mode, b);
		r = setxattr(path, ACC, b, n, 0);
		break;
	case GETACL:
	case GETDEF:
		got = getxattr(path, s->op == GETACL ? ACC : DEF, b, sizeof(b));
		r = got < 0 ? -1 : 0;
		for (ssize_t i = 0; i < got && strlen(out) + 3 < sizeof(out); i++)
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%02x", i % 8 == 4 ? " " : "", b[i]);
		break;
	case RMACL:
		r = removexattr(path, ACC);
		break;
	case TRUNC:
		r = truncate(path, 0);
		break;
	case TOUCH:
		r = utimensat(AT_FDCWD, path, NULL, 0);
		break;
	}
	dprintf(fd, "%-7s %-14s as %u: %s%s\n", opname[s->op], s->path, (unsigned)s->uid,
		r < 0 ? strerror(errno) : "ok", out);
	_exit(0);
}

/* run every step under @base; the outcomes, one line each, into @rec */
static void run_all(const char *base, char rec[][600])
{
	for (size_t i = 0; i < NSTEPS; i++) {
		int p[2], status;
		ssize_t n;
		pid_t pid;

		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(p[0]);
			run_step(base, &steps[i], p[1]);
		}
		close(p[1]);
		n = read(p[0], rec[i], 599);
		close(p[0]);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "step %zu child status 0x%x", i, status);
		rec[i][n > 0 ? n : 0] = 0;
	}
}

static char ref_dir[PATH_MAX], tmpfs_dir[PATH_MAX];

/* a local directory with POSIX ACLs: ext4 beside the test, else a tmpfs */
static void ref_setup(void)
{
	uint8_t b[64];
	size_t n = acl_bytes("u::rwx,u:2002:r-x,g::r-x,m::r-x,o::r-x", b);

	snprintf(ref_dir, sizeof(ref_dir), "%s/ref", fs.dir);
	ck_assert_int_eq(mkdir(ref_dir, 0755), 0);
	if (setxattr(ref_dir, ACC, b, n, 0) == 0) {
		ck_assert_int_eq(removexattr(ref_dir, ACC), 0);
		return;
	}
	snprintf(tmpfs_dir, sizeof(tmpfs_dir), "%s", ref_dir);
	ck_assert_msg(mount("tmpfs", ref_dir, "tmpfs", 0, "size=4m,mode=0755") == 0, "mount tmpfs: %s",
		      strerror(errno));
}

static void setup(void)
{
	if (lfs_init(&fs) != 0 || lfs_mds_start(&fs) != 0 || lfs_mount(&fs, "allow_other,acl") != 0) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
	tmpfs_dir[0] = 0;
}

static void teardown(void)
{
	if (tmpfs_dir[0])
		umount2(tmpfs_dir, MNT_DETACH);
	lfs_cleanup(&fs);
}

static char ref_rec[NSTEPS][600], our_rec[NSTEPS][600];

static const char *rec_of(char rec[][600], const char *prefix, unsigned nth)
{
	for (size_t i = 0; i < NSTEPS; i++)
		if (!strncmp(rec[i], prefix, strlen(prefix)) && nth-- == 0)
			return rec[i];
	return "";
}

START_TEST(test_acl_like_local)
{
	int diff = 0;

	ref_setup();
	fprintf(stderr, "reference: %s (%s)\n", ref_dir, tmpfs_dir[0] ? "tmpfs" : "the temp dir's filesystem");
	run_all(ref_dir, ref_rec);
	run_all(fs.mnt, our_rec);
	for (size_t i = 0; i < NSTEPS; i++) {
		if (strcmp(ref_rec[i], our_rec[i])) {
			fprintf(stderr, "step %zu differs:\n  local:  %s  loligo: %s", i, ref_rec[i], our_rec[i]);
			diff++;
		}
	}
	if (diff)
		lfs_dump_logs(&fs);
	ck_assert_msg(diff == 0, "%d of %zu steps differ from the local filesystem (above)", diff, NSTEPS);
	/* and what the local filesystem said is what POSIX ACLs mean */
	ck_assert_str_eq(rec_of(ref_rec, "open_w  t/f            as 2002", 0), "open_w  t/f            as 2002: ok\n");
	ck_assert_str_eq(rec_of(ref_rec, "open_w  t/f            as 2002", 1),
			 "open_w  t/f            as 2002: Permission denied\n");
	ck_assert_ptr_nonnull(strstr(rec_of(ref_rec, "stat    t/d/af", 0), "mode 100660"));
	ck_assert_ptr_nonnull(strstr(rec_of(ref_rec, "stat    t/u ", 0), "mode 100644"));
	ck_assert_ptr_nonnull(strstr(rec_of(ref_rec, "getacl  t/g", 0), "No data available"));
	ck_assert_ptr_nonnull(strstr(rec_of(ref_rec, "setraw", 0), "Invalid argument"));
}
END_TEST

/*
 * Where loligo is stricter than ext4: entries out of order or a named id
 * twice are refused (EINVAL), as POSIX.1e's canonical form, Ceph and Linux
 * before 4.x have it; current Linux keeps them as they come.  setfacl
 * never sends them.  The kernel passes such an ACL on to the MDS.
 */
START_TEST(test_unsorted_refused)
{
	char f[PATH_MAX + 16];
	uint8_t b[256];
	size_t n = bad_acl(5, b);
	int fd;

	snprintf(f, sizeof(f), "%s/unsorted", fs.mnt);
	fd = open(f, O_CREAT | O_WRONLY, 0640);
	ck_assert_int_ge(fd, 0);
	close(fd);
	errno = 0;
	ck_assert_int_eq(setxattr(f, ACC, b, n, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(getxattr(f, ACC, b, sizeof(b)), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

/* What a create inherited is journaled with it: the same after a kill -9
 * of the MDS and its journal replay, on a fresh mount. */
struct kept {
	struct stat f, s;
	uint8_t facl[256], sacl[256], sdef[256];
	ssize_t nfacl, nsacl, nsdef;
};

static void read_kept(const char *d, struct kept *k)
{
	char f[PATH_MAX + 32], sub[PATH_MAX + 32];

	snprintf(f, sizeof(f), "%s/f", d);
	snprintf(sub, sizeof(sub), "%s/s", d);
	memset(k, 0, sizeof(*k));
	ck_assert_int_eq(stat(f, &k->f), 0);
	ck_assert_int_eq(stat(sub, &k->s), 0);
	k->nfacl = getxattr(f, ACC, k->facl, sizeof(k->facl));
	k->nsacl = getxattr(sub, ACC, k->sacl, sizeof(k->sacl));
	k->nsdef = getxattr(sub, DEF, k->sdef, sizeof(k->sdef));
}

START_TEST(test_inherited_kept_after_mds_kill)
{
	char d[PATH_MAX + 16], p[PATH_MAX + 32];
	struct kept before, after;
	uint8_t b[256];
	size_t n = acl_bytes("u::rwx,u:2002:rwx,g::r-x,m::rwx,o::---", b);
	int fd;

	umask(022);
	snprintf(d, sizeof(d), "%s/k", fs.mnt);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	ck_assert_int_eq(setxattr(d, DEF, b, n, 0), 0);
	snprintf(p, sizeof(p), "%s/f", d);
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0666);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/s", d);
	ck_assert_int_eq(mkdir(p, 0777), 0);
	read_kept(d, &before);
	ck_assert_uint_eq(before.f.st_mode & 07777, 0660);
	ck_assert_uint_eq(before.s.st_mode & 07777, 0770);
	ck_assert_int_gt(before.nfacl, 0);
	ck_assert_int_eq(before.nsdef, (ssize_t)n);

	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, "allow_other,acl"), 0);
	read_kept(d, &after);
	ck_assert_uint_eq(after.f.st_mode, before.f.st_mode);
	ck_assert_uint_eq(after.s.st_mode, before.s.st_mode);
	ck_assert_int_eq(after.nfacl, before.nfacl);
	ck_assert_int_eq(memcmp(after.facl, before.facl, (size_t)before.nfacl), 0);
	ck_assert_int_eq(after.nsacl, before.nsacl);
	ck_assert_int_eq(after.nsdef, before.nsdef);
	ck_assert_int_eq(memcmp(after.sdef, before.sdef, n), 0);
}
END_TEST

/* setfacl and getfacl (the acl package) through the mount */
START_TEST(test_setfacl_getfacl)
{
	char f[PATH_MAX + 16], out[PATH_MAX + 16], buf[4096];
	char *set[] = { "/usr/bin/setfacl", "-m", "u:2002:rw,g:3000:r", f, NULL };
	char *get[] = { "/usr/bin/getfacl", "-c", "-n", "-p", f, NULL };
	FILE *o;
	size_t n;
	int fd;

	if (access("/usr/bin/setfacl", X_OK) != 0) {
		fprintf(stderr, "no setfacl (Debian package acl): skipped\n");
		return;
	}
	snprintf(f, sizeof(f), "%s/sf", fs.mnt);
	snprintf(out, sizeof(out), "%s/getfacl.out", fs.dir);
	fd = open(f, O_CREAT | O_WRONLY, 0640);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(lfs_run(set, 10000, NULL), 0);
	ck_assert_int_eq(lfs_run(get, 10000, out), 0);
	o = fopen(out, "r");
	ck_assert_ptr_nonnull(o);
	n = fread(buf, 1, sizeof(buf) - 1, o);
	buf[n] = 0;
	fclose(o);
	ck_assert_str_eq(buf, "user::rw-\nuser:2002:rw-\ngroup::r--\ngroup:3000:r--\nmask::rw-\nother::---\n\n");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_acl");

	lfs_suite_add(s, "acl_like_local", test_acl_like_local, setup, teardown, 300);
	lfs_suite_add(s, "inherited_kept_after_mds_kill", test_inherited_kept_after_mds_kill, setup, teardown, 300);
	lfs_suite_add(s, "unsorted_refused", test_unsorted_refused, setup, teardown, 120);
	lfs_suite_add(s, "setfacl_getfacl", test_setfacl_getfacl, setup, teardown, 120);
	return lfs_suite_main(s, "test_fuse_acl");
}
