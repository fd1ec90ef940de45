/*
 * test_mds_namespace.c - POSIX namespace semantics of loligo-mds over the
 * wire: create/lookup/unlink errors, permissions as a non-root caller, the
 * sticky bit, rename cases, nlink, hard links, symlinks, O_TMPFILE, xattrs, EXTENTS, readdir
 * cookies under concurrent inserts and removes, admin commands, leases.
 */
#include <check.h>
#include <json-c/json.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"

#define ROOT MDSP_ROOT_INO
static char parent_dir[256];
static struct mdsproc P;
static struct mdsw W;

static void setup(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.test"), 0);
}

static void teardown(void)
{
	mdsw_close(&W);
	mdsproc_cleanup(&P);
}

static void as_user(struct mdsw *w, uint32_t uid, uint32_t gid)
{
	memset(&w->caller, 0, sizeof(w->caller));
	w->caller.uid = uid;
	w->caller.gid = gid;
}

static uint64_t mkdir_ok(uint64_t dir, const char *name, uint32_t mode)
{
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_mkdir(&W, dir, name, mode, &in), 0);
	return in.ino;
}

static uint64_t lookup_child(uint64_t dir, const char *name)
{
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_lookup(&W, dir, name, &in), 0);
	return in.ino;
}

static uint64_t create_ok(uint64_t dir, const char *name, uint32_t mode)
{
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_create(&W, dir, name, mode, O_CREAT | O_EXCL | O_RDWR, &in), 0);
	return in.ino;
}

START_TEST(test_session_and_basic_ops)
{
	struct mdsp_inode in, root0, root1, f;
	struct mdsp_request q = { .op = MDSP_OP_STATFS };
	struct mdsp_reply rep;

	ck_assert_uint_gt(W.sid, 0);
	ck_assert_int_eq(mdsw_renew(&W), 0);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &root0), 0);
	ck_assert(S_ISDIR(root0.mode));
	ck_assert_uint_eq(root0.nlink, 2);

	usleep(20000);
	ck_assert_int_eq(mdsw_create(&W, ROOT, "f", 0644, O_CREAT | O_EXCL | O_RDWR, &f), 0);
	ck_assert(W.got_unsafe);   /* a mutation gets UNSAFE, then SAFE */
	ck_assert(S_ISREG(f.mode));
	ck_assert_uint_eq(f.mode & 07777, 0644);
	ck_assert_uint_eq(f.nlink, 1);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &root1), 0);
	ck_assert(root1.mtime.sec > root0.mtime.sec ||
		  (root1.mtime.sec == root0.mtime.sec && root1.mtime.nsec > root0.mtime.nsec));
	ck_assert_uint_eq(root1.files, 1);
	ck_assert_uint_gt(root1.change, root0.change);

	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "f", &in), 0);
	ck_assert_uint_eq(in.ino, f.ino);
	ck_assert_int_eq(mdsw_create(&W, ROOT, "f", 0644, O_CREAT | O_EXCL, &in), -EEXIST);
	ck_assert(!W.got_unsafe);   /* a failed mutation: only the SAFE reply */
	/* without O_EXCL create opens the existing file */
	ck_assert_int_eq(mdsw_create(&W, ROOT, "f", 0644, O_CREAT | O_RDWR, &in), 0);
	ck_assert_uint_eq(in.ino, f.ino);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "nope", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&W, f.ino, "x", &in), -ENOTDIR);
	ck_assert_int_eq(mdsw_getattr(&W, 0x7fffffff, &in), -ESTALE);

	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_gt(rep.statfs.bsize, 0);
	ck_assert_uint_eq(rep.statfs.namemax, 255);
	ck_assert_uint_ge(rep.statfs.files, 2);
	mdsw_reply_free(&rep);

	/* file locks: nobody holds one (test_mds_locks has the rest) */
	{
		struct mdsp_request lq = { .op = MDSP_OP_GETLK, .ino = f.ino, .lock = { .type = F_WRLCK } };

		ck_assert_int_eq(mdsw_call(&W, &lq, &rep), 0);
		ck_assert_uint_eq(rep.lock.type, F_UNLCK);
		mdsw_reply_free(&rep);
	}
}
END_TEST

START_TEST(test_names)
{
	struct mdsp_inode in;
	char longname[300];

	ck_assert_int_eq(mdsw_create(&W, ROOT, "", 0644, O_CREAT, &in), -ENOENT);
	ck_assert_int_eq(mdsw_create(&W, ROOT, "a/b", 0644, O_CREAT, &in), -EINVAL);
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, ".", 0755, &in), -EEXIST);
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "..", 0755, &in), -EEXIST);
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "."), -EISDIR);
	ck_assert_int_eq(mdsw_rmdir(&W, ROOT, "."), -EINVAL);
	ck_assert_int_eq(mdsw_rmdir(&W, ROOT, ".."), -ENOTEMPTY);
	ck_assert_int_eq(mdsw_rename(&W, ROOT, ".", ROOT, "x", 0), -EBUSY);
	memset(longname, 'n', 255);
	longname[255] = 0;
	ck_assert_int_eq(mdsw_create(&W, ROOT, longname, 0644, O_CREAT, &in), 0);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, longname, &in), 0);
	/* "." and ".." resolve in lookup */
	{
		uint64_t d = mkdir_ok(ROOT, "d", 0755);

		ck_assert_int_eq(mdsw_lookup(&W, d, "..", &in), 0);
		ck_assert_uint_eq(in.ino, ROOT);
		ck_assert_int_eq(mdsw_lookup(&W, d, ".", &in), 0);
		ck_assert_uint_eq(in.ino, d);
	}
}
END_TEST

START_TEST(test_mkdir_rmdir_nlink)
{
	struct mdsp_inode in, root;
	uint64_t a, b;

	a = mkdir_ok(ROOT, "a", 0755);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &root), 0);
	ck_assert_uint_eq(root.nlink, 3);
	b = mkdir_ok(a, "b", 0755);
	create_ok(b, "file", 0600);
	ck_assert_int_eq(mdsw_getattr(&W, a, &in), 0);
	ck_assert_uint_eq(in.nlink, 3);
	ck_assert_int_eq(mdsw_rmdir(&W, a, "b"), -ENOTEMPTY);
	ck_assert_int_eq(mdsw_rmdir(&W, b, "file"), -ENOTDIR);
	ck_assert_int_eq(mdsw_unlink(&W, a, "b"), -EISDIR);
	ck_assert_int_eq(mdsw_unlink(&W, b, "file"), 0);
	ck_assert_int_eq(mdsw_unlink(&W, b, "file"), -ENOENT);
	ck_assert_int_eq(mdsw_rmdir(&W, a, "b"), 0);
	ck_assert_int_eq(mdsw_getattr(&W, a, &in), 0);
	ck_assert_uint_eq(in.nlink, 2);
	ck_assert_int_eq(mdsw_getattr(&W, b, &in), -ESTALE);
	ck_assert_int_eq(mdsw_lookup(&W, a, "b", &in), -ENOENT);
	/* a removed dir cannot get new entries */
	ck_assert_int_eq(mdsw_create(&W, b, "x", 0644, O_CREAT, &in), -ESTALE);
}
END_TEST

START_TEST(test_permissions)
{
	struct mdsp_inode in, attr;
	uint64_t pub, priv, tmp, f, g;

	pub = mkdir_ok(ROOT, "pub", 0777);
	priv = mkdir_ok(ROOT, "priv", 0700);
	tmp = mkdir_ok(ROOT, "tmp", 01777);
	f = create_ok(ROOT, "rootfile", 0644);
	g = mkdir_ok(ROOT, "grp", 0770);
	memset(&attr, 0, sizeof(attr));
	attr.gid = 500;
	ck_assert_int_eq(mdsw_setattr(&W, g, MDSP_SETATTR_GID, &attr, &in), 0);

	as_user(&W, 1000, 1000);
	ck_assert_int_eq(mdsw_create(&W, ROOT, "x", 0644, O_CREAT, &in), -EACCES);
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "x", 0755, &in), -EACCES);
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "rootfile"), -EACCES);
	ck_assert_int_eq(mdsw_lookup(&W, priv, "anything", &in), -EACCES);
	ck_assert_int_eq(mdsw_create(&W, pub, "mine", 0600, O_CREAT | O_EXCL, &in), 0);
	ck_assert_uint_eq(in.uid, 1000);
	ck_assert_uint_eq(in.gid, 1000);
	/* open of root's 0644 file for write: denied; for read: fine */
	{
		struct mdsp_request q = { .op = MDSP_OP_OPEN, .ino = f, .oflags = O_WRONLY };
		struct mdsp_reply rep;

		ck_assert_int_eq(mdsw_call(&W, &q, &rep), -EACCES);
		mdsw_reply_free(&rep);
		q.tid = 0;
		q.oflags = O_RDONLY;
		ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
		mdsw_reply_free(&rep);
	}
	/* setattr: chmod/truncate of someone else's file */
	attr.mode = 0777;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_MODE, &attr, &in), -EPERM);
	attr.size = 0;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_SIZE, &attr, &in), -EACCES);
	attr.uid = 1000;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_UID, &attr, &in), -EPERM);
	/* group access through a supplementary group */
	ck_assert_int_eq(mdsw_create(&W, g, "x", 0644, O_CREAT, &in), -EACCES);
	W.caller.ngroups = 1;
	W.caller.groups[0] = 500;
	ck_assert_int_eq(mdsw_create(&W, g, "x", 0644, O_CREAT, &in), 0);
	/* sticky /tmp: 1000 creates, 2000 may not remove or rename it */
	ck_assert_int_eq(mdsw_create(&W, tmp, "t", 0666, O_CREAT, &in), 0);
	as_user(&W, 2000, 2000);
	ck_assert_int_eq(mdsw_unlink(&W, tmp, "t"), -EPERM);
	ck_assert_int_eq(mdsw_rename(&W, tmp, "t", tmp, "u", 0), -EPERM);
	ck_assert_int_eq(mdsw_create(&W, tmp, "other", 0666, O_CREAT, &in), 0);
	as_user(&W, 1000, 1000);
	ck_assert_int_eq(mdsw_unlink(&W, tmp, "t"), 0);
	/* the owner of the file may chmod it */
	ck_assert_int_eq(mdsw_lookup(&W, pub, "mine", &in), 0);
	attr.mode = 0640;
	ck_assert_int_eq(mdsw_setattr(&W, in.ino, MDSP_SETATTR_MODE, &attr, &in), 0);
	ck_assert_uint_eq(in.mode & 07777, 0640);
	/* root may do anything */
	as_user(&W, 0, 0);
	ck_assert_int_eq(mdsw_create(&W, priv, "r", 0600, O_CREAT, &in), 0);
	ck_assert_int_eq(mdsw_unlink(&W, tmp, "other"), 0);
}
END_TEST

START_TEST(test_rename)
{
	struct mdsp_inode in, a_in, b_in;
	uint64_t a, b, sub, f1, f2, e;

	a = mkdir_ok(ROOT, "a", 0755);
	b = mkdir_ok(ROOT, "b", 0755);
	f1 = create_ok(a, "f1", 0644);
	f2 = create_ok(a, "f2", 0644);
	/* file over file: the target goes away */
	ck_assert_int_eq(mdsw_rename(&W, a, "f1", a, "f2", 0), 0);
	ck_assert_int_eq(mdsw_lookup(&W, a, "f1", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&W, a, "f2", &in), 0);
	ck_assert_uint_eq(in.ino, f1);
	ck_assert_int_eq(mdsw_getattr(&W, f2, &in), -ESTALE);
	/* NOREPLACE */
	create_ok(a, "f3", 0644);
	ck_assert_int_eq(mdsw_rename(&W, a, "f3", a, "f2", MDSP_RENAME_NOREPLACE), -EEXIST);
	ck_assert_int_eq(mdsw_rename(&W, a, "f3", a, "f4", MDSP_RENAME_NOREPLACE), 0);
	/* EXCHANGE */
	ck_assert_int_eq(mdsw_rename(&W, a, "f2", a, "f4", MDSP_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(mdsw_lookup(&W, a, "f4", &in), 0);
	ck_assert_uint_eq(in.ino, f1);
	ck_assert_int_eq(mdsw_rename(&W, a, "f2", a, "nonexist", MDSP_RENAME_EXCHANGE), -ENOENT);
	ck_assert_int_eq(mdsw_rename(&W, a, "f2", a, "f4", MDSP_RENAME_EXCHANGE | MDSP_RENAME_NOREPLACE),
			 -EINVAL);
	/* dir moves: nlink of both parents */
	sub = mkdir_ok(a, "sub", 0755);
	ck_assert_int_eq(mdsw_rename(&W, a, "sub", b, "sub", 0), 0);
	ck_assert_int_eq(mdsw_getattr(&W, a, &a_in), 0);
	ck_assert_int_eq(mdsw_getattr(&W, b, &b_in), 0);
	ck_assert_uint_eq(a_in.nlink, 2);
	ck_assert_uint_eq(b_in.nlink, 3);
	ck_assert_int_eq(mdsw_lookup(&W, sub, "..", &in), 0);
	ck_assert_uint_eq(in.ino, b);
	/* a directory into its own subtree */
	mkdir_ok(sub, "deep", 0755);
	ck_assert_int_eq(mdsw_lookup(&W, sub, "deep", &in), 0);
	ck_assert_int_eq(mdsw_rename(&W, b, "sub", in.ino, "x", 0), -EINVAL);
	ck_assert_int_eq(mdsw_rename(&W, ROOT, "b", sub, "x", 0), -EINVAL);
	ck_assert_int_eq(mdsw_rename(&W, b, "sub", sub, "x", 0), -EINVAL);
	/* dir over empty dir, over non-empty dir, type mismatches */
	e = mkdir_ok(a, "empty", 0755);
	ck_assert_int_eq(mdsw_rename(&W, a, "f4", a, "empty", 0), -EISDIR);
	ck_assert_int_eq(mdsw_rename(&W, b, "sub", a, "f4", 0), -ENOTDIR);
	ck_assert_int_eq(mdsw_rename(&W, ROOT, "a", ROOT, "b", 0), -ENOTEMPTY);
	ck_assert_int_eq(mdsw_rename(&W, b, "sub", a, "empty", 0), 0);
	ck_assert_int_eq(mdsw_getattr(&W, e, &in), -ESTALE);
	ck_assert_int_eq(mdsw_getattr(&W, a, &a_in), 0);
	ck_assert_int_eq(mdsw_getattr(&W, b, &b_in), 0);
	ck_assert_uint_eq(a_in.nlink, 3);   /* empty went, sub came */
	ck_assert_uint_eq(b_in.nlink, 2);
	/* rename onto itself / another link of the same inode: no-op */
	ck_assert_int_eq(mdsw_rename(&W, a, "f4", a, "f4", 0), 0);
	ck_assert_int_eq(mdsw_rename(&W, a, "missing", a, "x", 0), -ENOENT);
	ck_assert_int_eq(mdsw_rename(&W, a, "f4", f1, "x", 0), -ENOTDIR);
	(void)f2;
}
END_TEST

START_TEST(test_exchange_and_links_across_dirs)
{
	struct mdsp_inode in, a_in, b_in;
	uint64_t a, b, sub, f, h;

	a = mkdir_ok(ROOT, "a", 0755);
	b = mkdir_ok(ROOT, "b", 0755);
	sub = mkdir_ok(a, "sub", 0755);
	f = create_ok(b, "file", 0644);
	/* a directory and a file trade places across parents: nlink follows */
	ck_assert_int_eq(mdsw_rename(&W, a, "sub", b, "file", MDSP_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(mdsw_getattr(&W, a, &a_in), 0);
	ck_assert_int_eq(mdsw_getattr(&W, b, &b_in), 0);
	ck_assert_uint_eq(a_in.nlink, 2);
	ck_assert_uint_eq(b_in.nlink, 3);
	ck_assert_int_eq(mdsw_lookup(&W, a, "sub", &in), 0);
	ck_assert_uint_eq(in.ino, f);
	ck_assert_int_eq(mdsw_lookup(&W, b, "file", &in), 0);
	ck_assert_uint_eq(in.ino, sub);
	ck_assert_int_eq(mdsw_lookup(&W, sub, "..", &in), 0);
	ck_assert_uint_eq(in.ino, b);
	/* exchanging a directory into its own subtree */
	mkdir_ok(sub, "inner", 0755);
	ck_assert_int_eq(mdsw_rename(&W, b, "file", lookup_child(sub, "inner"), "x", MDSP_RENAME_EXCHANGE),
			 -ENOENT);
	create_ok(lookup_child(sub, "inner"), "x", 0644);
	ck_assert_int_eq(mdsw_rename(&W, b, "file", lookup_child(sub, "inner"), "x", MDSP_RENAME_EXCHANGE),
			 -EINVAL);
	/* a hard link renamed across directories keeps one inode and nlink */
	ck_assert_int_eq(mdsw_link(&W, b, "h1", f, &in), 0);
	h = in.ino;
	ck_assert_int_eq(mdsw_rename(&W, b, "h1", ROOT, "h2", 0), 0);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "h2", &in), 0);
	ck_assert_uint_eq(in.ino, h);
	ck_assert_uint_eq(in.nlink, 2);
	/* renaming the other link over it: same inode, nothing happens */
	ck_assert_int_eq(mdsw_rename(&W, a, "sub", ROOT, "h2", 0), 0);
	ck_assert_int_eq(mdsw_getattr(&W, h, &in), 0);
	ck_assert_uint_eq(in.nlink, 2);
	/* rename a file over a hard link of another inode: that one loses a link */
	create_ok(ROOT, "other", 0644);
	ck_assert_int_eq(mdsw_rename(&W, ROOT, "other", ROOT, "h2", 0), 0);
	ck_assert_int_eq(mdsw_getattr(&W, h, &in), 0);
	ck_assert_uint_eq(in.nlink, 1);
	ck_assert_int_eq(mdsw_lookup(&W, a, "sub", &in), 0);
	ck_assert_uint_eq(in.ino, h);
}
END_TEST

START_TEST(test_links_and_symlinks)
{
	struct mdsp_inode in, l;
	uint64_t d, f;
	char *target = NULL;

	d = mkdir_ok(ROOT, "d", 0755);
	f = create_ok(d, "f", 0644);
	ck_assert_int_eq(mdsw_link(&W, ROOT, "hard", f, &l), 0);
	ck_assert_uint_eq(l.ino, f);
	ck_assert_uint_eq(l.nlink, 2);
	ck_assert_int_eq(mdsw_link(&W, ROOT, "hard", f, &l), -EEXIST);
	ck_assert_int_eq(mdsw_link(&W, ROOT, "dlink", d, &l), -EPERM);
	ck_assert_int_eq(mdsw_link(&W, d, "hard2", f, &l), 0);
	ck_assert_uint_eq(l.nlink, 3);
	ck_assert_int_eq(mdsw_unlink(&W, d, "f"), 0);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "hard", &in), 0);
	ck_assert_uint_eq(in.ino, f);
	ck_assert_uint_eq(in.nlink, 2);
	/* LOOKUPINO finds it by number (NFS file handles) */
	{
		struct mdsp_request q = { .op = MDSP_OP_LOOKUPINO, .ino = f };
		struct mdsp_reply rep;

		ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
		ck_assert_uint_eq(rep.target.ino, f);
		mdsw_reply_free(&rep);
		q.ino = d;
		q.tid = 0;
		q.op = MDSP_OP_LOOKUPPARENT;
		ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
		ck_assert_uint_eq(rep.target.ino, ROOT);
		mdsw_reply_free(&rep);
	}
	/* rename a hard link over another link of the same inode: no-op */
	ck_assert_int_eq(mdsw_rename(&W, ROOT, "hard", d, "hard2", 0), 0);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "hard", &in), 0);
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "hard"), 0);
	ck_assert_int_eq(mdsw_unlink(&W, d, "hard2"), 0);
	ck_assert_int_eq(mdsw_getattr(&W, f, &in), -ESTALE);

	ck_assert_int_eq(mdsw_symlink(&W, d, "sl", "../some/where", &l), 0);
	ck_assert(S_ISLNK(l.mode));
	ck_assert_uint_eq(l.size, strlen("../some/where"));
	ck_assert_int_eq(mdsw_readlink(&W, l.ino, &target), 0);
	ck_assert_str_eq(target, "../some/where");
	free(target);
	target = NULL;
	ck_assert_int_eq(mdsw_readlink(&W, d, &target), -EINVAL);
	ck_assert_int_eq(mdsw_symlink(&W, d, "sl", "x", &l), -EEXIST);
	ck_assert_int_eq(mdsw_symlink(&W, d, "empty", "", &l), -ENOENT);
}
END_TEST

START_TEST(test_setattr_truncate)
{
	struct mdsp_inode in, attr;
	uint64_t f = create_ok(ROOT, "f", 0644);

	memset(&attr, 0, sizeof(attr));
	attr.size = 12345;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_SIZE, &attr, &in), 0);
	ck_assert_uint_eq(in.size, 12345);
	attr.mtime.sec = 1000;
	attr.atime.sec = 2000;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_MTIME | MDSP_SETATTR_ATIME, &attr, &in), 0);
	ck_assert_int_eq(in.mtime.sec, 1000);
	ck_assert_int_eq(in.atime.sec, 2000);
	ck_assert_int_gt(in.ctime.sec, 1000);
	ck_assert_int_eq(mdsw_setattr(&W, ROOT, MDSP_SETATTR_SIZE, &attr, &in), -EISDIR);
	/* O_TRUNC through create on an existing file */
	ck_assert_int_eq(mdsw_create(&W, ROOT, "f", 0644, O_CREAT | O_TRUNC | O_WRONLY, &in), 0);
	ck_assert_uint_eq(in.size, 0);
	ck_assert_int_eq(mdsw_getattr(&W, f, &in), 0);
	ck_assert_uint_eq(in.size, 0);
}
END_TEST

/*
 * EXTENTS (lseek's SEEK_DATA/SEEK_HOLE): a new file holds nothing, also
 * once truncated up (a truncate stores no data); an unknown inode is
 * stale, a directory or symlink has no data extents (EINVAL, what lseek
 * answers for them); what a cap flush adds is the answer, and a flush
 * from a client too old to say what it stored makes it unknown.
 */
START_TEST(test_extents)
{
	struct mdsp_request q = { .op = MDSP_OP_EXTENTS };
	struct mdsp_inode attr, in;
	struct mdsp_reply rep;
	uint64_t f = create_ok(ROOT, "f", 0644), d = mkdir_ok(ROOT, "d", 0755);

	q.ino = f;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert(rep.has_target);
	ck_assert_uint_eq(rep.target.ino, f);
	ck_assert_uint_eq(rep.target.blocks, 0);
	ck_assert_uint_eq(rep.n_ext, 0);
	mdsw_reply_free(&rep);

	memset(&attr, 0, sizeof(attr));
	attr.size = 3u << 20;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_SIZE, &attr, &in), 0);
	q.tid = 0;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.target.size, 3u << 20);
	ck_assert_uint_eq(rep.n_ext, 0);
	mdsw_reply_free(&rep);

	q.tid = 0;
	q.ino = 0x7fffffff0ull;           /* never made */
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -ESTALE);
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.ino = d;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -EINVAL);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_symlink(&W, ROOT, "sl", "f", &in), 0);
	q.tid = 0;
	q.ino = in.ino;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -EINVAL);
	mdsw_reply_free(&rep);
	/* a removed file is stale */
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "f"), 0);
	q.tid = 0;
	q.ino = f;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -ESTALE);
	mdsw_reply_free(&rep);

	/* what a cap flush added is the answer; a flush from a client too
	 * old to say what it stored makes it unknown: no extents, blocks
	 * MDSP_BLOCKS_UNKNOWN (the client then answers "all data") */
	{
		struct mdsp_extent add[2] = { { 0, 8192 }, { 16384, 4096 } };
		struct mdsp_caps fl = { .op = MDSP_CAPS_FLUSH, .caps = MDSP_CAP_ALL, .flush_tid = 1,
					.dirty = MDSP_DIRTY_SIZE | MDSP_DIRTY_BLOCKS, .has_ext = true,
					.n_ext_add = 2, .ext_add = add };

		W.keep_caps = true;             /* a flush needs a cap on the file */
		fl.ino = create_ok(ROOT, "g", 0644);
		fl.attr.size = 20000;
		ck_assert_int_eq(mdsw_send_caps(&W, &fl), 0);
		q.tid = 0;
		q.ino = fl.ino;
		ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
		ck_assert_uint_eq(rep.target.size, 20000);
		ck_assert_uint_eq(rep.target.blocks, 12288);
		ck_assert_uint_eq(rep.n_ext, 2);
		ck_assert_uint_eq(rep.ext[0].off, 0);
		ck_assert_uint_eq(rep.ext[0].len, 8192);
		ck_assert_uint_eq(rep.ext[1].off, 16384);
		ck_assert_uint_eq(rep.ext[1].len, 4096);
		mdsw_reply_free(&rep);

		fl.flush_tid = 2;
		fl.has_ext = false;
		fl.n_ext_add = 0;
		fl.ext_add = NULL;
		fl.dirty = MDSP_DIRTY_SIZE;
		fl.attr.size = 30000;
		ck_assert_int_eq(mdsw_send_caps(&W, &fl), 0);
		q.tid = 0;
		ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
		ck_assert_uint_eq(rep.target.size, 30000);
		ck_assert_uint_eq(rep.target.blocks, MDSP_BLOCKS_UNKNOWN);
		ck_assert_uint_eq(rep.n_ext, 0);
		mdsw_reply_free(&rep);
		W.keep_caps = false;
	}
}
END_TEST

START_TEST(test_xattrs)
{
	struct mdsp_request q;
	struct mdsp_reply rep;
	uint64_t f = create_ok(ROOT, "f", 0644);

	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_SETXATTR;
	q.ino = f;
	q.name = "user.color";
	q.data = (uint8_t *)"blue";
	q.data_len = 4;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.oflags = 1; /* XATTR_CREATE */
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -EEXIST);
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.oflags = 2; /* XATTR_REPLACE */
	q.name = "user.none";
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -ENODATA);
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.oflags = 0;
	q.name = "system.posix_acl_access";
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -EOPNOTSUPP);
	mdsw_reply_free(&rep);

	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_GETXATTR;
	q.ino = f;
	q.name = "user.color";
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.data_len, 4);
	ck_assert(!memcmp(rep.data, "blue", 4));
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.name = "user.other";
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -ENODATA);
	mdsw_reply_free(&rep);

	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_LISTXATTR;
	q.ino = f;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.data_len, strlen("user.color") + 1);
	ck_assert(!memcmp(rep.data, "user.color", 11));
	mdsw_reply_free(&rep);

	/* a user without write permission cannot set user.* */
	as_user(&W, 1000, 1000);
	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_SETXATTR;
	q.ino = f;
	q.name = "user.x";
	q.data = (uint8_t *)"1";
	q.data_len = 1;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -EACCES);
	mdsw_reply_free(&rep);
	as_user(&W, 0, 0);

	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_REMOVEXATTR;
	q.ino = f;
	q.name = "user.color";
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	mdsw_reply_free(&rep);
	q.tid = 0;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -ENODATA);
	mdsw_reply_free(&rep);
}
END_TEST

#define NFILES 120

START_TEST(test_readdir_cookies)
{
	struct mdsp_reply rep;
	uint64_t d = mkdir_ok(ROOT, "d", 0755), cookie = 0;
	int seen[NFILES + 200], i, batches = 0, extra = 0;
	char name[32];
	bool end = false;

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		create_ok(d, name, 0644);
	}
	while (!end) {
		uint32_t k;

		ck_assert_int_eq(mdsw_readdir(&W, d, cookie, 10, &rep), 0);
		ck_assert_uint_le(rep.nentries, 10);
		for (k = 0; k < rep.nentries; k++) {
			int n;

			ck_assert(rep.entries[k].cookie > cookie);
			cookie = rep.entries[k].cookie;
			if (sscanf(rep.entries[k].name, "f%d", &n) == 1) {
				ck_assert_int_lt(n, NFILES);
				seen[n]++;
			} else {
				extra++;
			}
			ck_assert_uint_gt(rep.entries[k].inode.ino, 0);
		}
		end = rep.end;
		mdsw_reply_free(&rep);
		/* between batches: remove entries ahead and behind, insert new ones */
		snprintf(name, sizeof(name), "f%03d", NFILES - 1 - batches);
		if (batches < 5)
			ck_assert_int_eq(mdsw_unlink(&W, d, name), 0);
		snprintf(name, sizeof(name), "new%03d", batches);
		create_ok(d, name, 0644);
		batches++;
		ck_assert_int_lt(batches, 100);
	}
	/* every entry that was never removed appears exactly once */
	for (i = 0; i < NFILES; i++) {
		if (i >= NFILES - 5)
			ck_assert_int_le(seen[i], 1);
		else
			ck_assert_msg(seen[i] == 1, "f%03d seen %d times", i, seen[i]);
	}
	ck_assert_int_gt(extra, 0);    /* inserts after the cursor show up */
	/* a readdir of a file is ENOTDIR; an empty listing ends at once */
	{
		uint64_t e = mkdir_ok(ROOT, "empty", 0755);

		ck_assert_int_eq(mdsw_readdir(&W, e, 0, 10, &rep), 0);
		ck_assert_uint_eq(rep.nentries, 0);
		ck_assert(rep.end);
		mdsw_reply_free(&rep);
	}
}
END_TEST

#define NLONG 300

/* the name of entry @i: unique, 1..255 bytes long */
static void long_name(char *buf, int i)
{
	int len = 1 + (i * 37) % 255, k;

	k = snprintf(buf, 256, "%d_", i);
	if (k > len)
		len = k;
	memset(buf + k, 'a' + i % 26, (size_t)(len - k));
	buf[len] = 0;
}

/* every entry comes back once with its own name and inode, in one listing
 * and in chunks of 7 (the listing's names share one allocation with the
 * entries: a name paired with the wrong inode or cut short would show) */
START_TEST(test_readdir_names_and_attrs)
{
	static uint64_t ino[NLONG];
	static int seen[NLONG];
	struct mdsp_reply rep;
	uint64_t d = mkdir_ok(ROOT, "long", 0755), cookie;
	uint32_t chunk[] = { 4096, 7 }, k;
	char name[256], want[256];
	int i, c, chunks;

	for (i = 0; i < NLONG; i++) {
		long_name(name, i);
		ino[i] = create_ok(d, name, 0600 | (uint32_t)(i % 8) << 3);
	}
	for (c = 0; c < 2; c++) {
		memset(seen, 0, sizeof(seen));
		cookie = 0;
		chunks = 0;
		for (;;) {
			ck_assert_int_eq(mdsw_readdir(&W, d, cookie, chunk[c], &rep), 0);
			ck_assert_uint_le(rep.nentries, chunk[c]);
			chunks++;
			for (k = 0; k < rep.nentries; k++) {
				struct mdsp_dirent *de = &rep.entries[k];

				ck_assert_int_eq(sscanf(de->name, "%d_", &i), 1);
				ck_assert(i >= 0 && i < NLONG);
				long_name(want, i);
				ck_assert_str_eq(de->name, want);
				ck_assert_uint_eq(de->inode.ino, ino[i]);
				ck_assert_uint_eq(de->inode.mode, S_IFREG | 0600 | (uint32_t)(i % 8) << 3);
				ck_assert(de->cookie > cookie);
				cookie = de->cookie;
				seen[i]++;
			}
			/* a full chunk unless it is the last */
			if (!rep.end)
				ck_assert_uint_eq(rep.nentries, chunk[c]);
			if (rep.end) {
				mdsw_reply_free(&rep);
				break;
			}
			mdsw_reply_free(&rep);
			ck_assert_int_lt(chunks, NLONG);
		}
		for (i = 0; i < NLONG; i++)
			ck_assert_msg(seen[i] == 1, "entry %d seen %d times (chunks of %u)", i, seen[i], chunk[c]);
		ck_assert_int_eq(chunks, c ? (NLONG + 6) / 7 : 1);
	}
}
END_TEST

struct worker {
	uint16_t port;
	int id;
	int errors;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct mdsw w;
	struct mdsp_inode in;
	char name[64];
	int i;

	if (mdsw_connect(&w, wk->port) || mdsw_open(&w, "client.worker")) {
		wk->errors++;
		return NULL;
	}
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "w%d_%d", wk->id, i);
		if (mdsw_create(&w, ROOT, name, 0644, O_CREAT | O_EXCL, &in))
			wk->errors++;
		if (mdsw_getattr(&w, in.ino, &in))
			wk->errors++;
		if (i % 2 && mdsw_unlink(&w, ROOT, name))
			wk->errors++;
	}
	mdsw_close(&w);
	return NULL;
}

START_TEST(test_concurrent_sessions)
{
	enum { N = 32 };
	pthread_t th[N];
	struct worker wk[N];
	struct mdsp_inode root;
	char *out = NULL;
	int i;

	for (i = 0; i < N; i++) {
		wk[i].port = P.port;
		wk[i].id = i;
		wk[i].errors = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &wk[i]), 0);
	}
	for (i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(wk[i].errors, 0);
	}
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &root), 0);
	ck_assert_uint_eq(root.files, N * 10);
	ck_assert_int_eq(mdsw_command(&W, "{\"prefix\":\"session ls\"}", &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "client.worker"));
	free(out);
}
END_TEST

struct renamer {
	uint16_t port;
	uint64_t ddir;
	int ret;
	_Atomic bool done;
};

/* another session renames a file of its own over ddir/f (parked while the first holds its lease) */
static void *renamer_main(void *arg)
{
	struct renamer *r = arg;
	struct mdsw w;
	struct mdsp_inode in;

	r->ret = -EIO;
	if (mdsw_connect(&w, r->port) == 0 && mdsw_open(&w, "client.renamer") == 0 &&
	    mdsw_create(&w, ROOT, "g", 0644, O_CREAT | O_EXCL | O_RDWR, &in) == 0)
		r->ret = mdsw_rename(&w, ROOT, "g", r->ddir, "f", 0);
	mdsw_close(&w);
	atomic_store(&r->done, true);
	return NULL;
}

static struct json_object *asok_json(const char *json);

struct opener {
	uint16_t port;
	uint64_t ino;
	int ret;
	uint32_t caps;          /* what its open was granted */
	_Atomic bool done;
};

/* another session opens @ino for reading (it takes Fb from a writer) */
static void *opener_main(void *arg)
{
	struct opener *o = arg;
	struct mdsp_request q = { .op = MDSP_OP_OPEN, .ino = o->ino, .oflags = O_RDONLY };
	struct mdsp_reply rep;
	struct mdsw w;

	o->ret = -EIO;
	memset(&rep, 0, sizeof(rep));
	if (mdsw_connect(&w, o->port) == 0 && mdsw_open(&w, "client.opener") == 0) {
		o->ret = mdsw_call(&w, &q, &rep);
		o->caps = rep.caps;
		mdsw_reply_free(&rep);
	}
	mdsw_close(&w);
	atomic_store(&o->done, true);
	return NULL;
}

/* the MDS's `ops` lists a request @op parked for revokes */
static bool parked(const char *op)
{
	struct json_object *rep = asok_json("{\"prefix\":\"ops\"}"), *arr, *e, *v;
	bool found = false;

	if (json_object_object_get_ex(rep, "ops", &arr))
		for (size_t i = 0; i < json_object_array_length(arr) && !found; i++) {
			e = json_object_array_get_idx(arr, i);
			found = json_object_object_get_ex(e, "op", &v) && !strcmp(json_object_get_string(v), op) &&
				json_object_object_get_ex(e, "state", &v) && strstr(json_object_get_string(v), "parked");
		}
	json_object_put(rep);
	return found;
}

/*
 * A request parked for a dentry lease's revoke runs again when that lease
 * goes with its name: session 1 holds a lease on d/f and does not answer its
 * revoke; session 2's rename over d/f parks for it; session 1 then unlinks
 * d/f itself.  The rename must go on at once (it waited for good: the lease
 * was dropped with the dentry and nobody woke it, and an ack coming later
 * found no lease and woke nobody either: a 30 s stall of test_fuse_stress).
 */
START_TEST(test_parked_on_dropped_lease)
{
	struct renamer r = { .port = P.port };
	struct mdsp_inode in;
	pthread_t th;
	struct timespec t0, t1;

	r.ddir = mkdir_ok(ROOT, "d", 0755);
	create_ok(r.ddir, "f", 0644);
	W.keep_caps = true;   /* hold the lease the lookup grants */
	ck_assert_int_eq(mdsw_lookup(&W, r.ddir, "f", &in), 0);
	W.no_lease_ack = true;
	ck_assert_int_eq(pthread_create(&th, NULL, renamer_main, &r), 0);
	/* answering the caps revokes meanwhile: it waits for the lease alone */
	for (int i = 0; i < 400 && !parked("rename") && !atomic_load(&r.done); i++)
		mdsw_poll_caps(&W, 25);
	ck_assert_msg(!atomic_load(&r.done), "the rename did not wait for the lease (%d)", r.ret);
	ck_assert_msg(parked("rename"), "the rename is not listed as parked");
	ck_assert_int_eq(mdsw_unlink(&W, r.ddir, "f"), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 400 && !atomic_load(&r.done); i++)
		mdsw_poll_caps(&W, 25);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_msg(atomic_load(&r.done), "the rename still waits %.1f s after the name and its lease went",
		      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	pthread_join(th, NULL);
	ck_assert_int_eq(r.ret, 0);
	W.no_lease_ack = false;
	W.keep_caps = false;
	ck_assert_int_eq(mdsw_lookup(&W, r.ddir, "f", &in), 0);
}
END_TEST

/*
 * A client gives bits up on its own (a close: Fr/Fw) while a revoke of
 * another bit (Fb, for a reader's open) is on its way to it: its message
 * carries the older cap sequence.  The MDS granted nothing since, so the
 * drop holds (the bits the revoke takes still go only with its ack, sent
 * once the client's caches are clean).  It ignored the drop as older than
 * the revoke, and an ack that then named Fw (the revoke's "keep") left
 * the client with Fw for good: the reader never got Fs/Fc, and a file
 * unlinked meanwhile stayed an orphan (test_fuse_caps, under load).
 */
START_TEST(test_drop_before_revoke_seen)
{
	struct opener o = { .port = P.port };
	struct mdsp_request q = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "wf", .mode = 0644,
				  .oflags = O_CREAT | O_EXCL | O_RDWR };
	struct mdsp_caps upd = { .op = MDSP_CAPS_UPDATE }, ack = { .op = MDSP_CAPS_ACK };
	const uint32_t file = MDSP_CAP_FILE_RD | MDSP_CAP_FILE_CACHE | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER;
	struct mdsp_reply rep;
	pthread_t th;
	int i;

	W.keep_caps = true;             /* hold Fr/Fw/Fb of the file we make (open, not closed) */
	W.no_ack = true;                /* and answer no revoke ourselves */
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert(rep.has_target);
	ck_assert_uint_eq(rep.caps & MDSP_CAP_FILE_BUFFER, MDSP_CAP_FILE_BUFFER);
	o.ino = upd.ino = ack.ino = rep.target.ino;
	upd.seq = rep.cap_seq;
	upd.caps = rep.caps & ~file;                        /* the close */
	ack.seq = rep.cap_seq + 1;                          /* the revoke's */
	ack.caps = rep.caps & ~(uint32_t)MDSP_CAP_FILE_BUFFER;   /* its "keep" */
	mdsw_reply_free(&rep);
	ck_assert_int_eq(pthread_create(&th, NULL, opener_main, &o), 0);
	for (i = 0; i < 400 && !parked("open") && !atomic_load(&o.done); i++)
		mdsw_poll_caps(&W, 25);
	ck_assert_msg(parked("open"), "the other session's open did not wait for our Fb (%d)", o.ret);
	ck_assert_uint_eq(W.revokes, 1);
	/* the close, as of the create's seq: the revoke not seen yet */
	ck_assert_int_eq(mdsw_send_caps(&W, &upd), 0);
	/* the revoke's ack goes only with the revoke's bits */
	for (i = 0; i < 10 && !atomic_load(&o.done); i++)
		mdsw_poll_caps(&W, 10);
	ck_assert_msg(!atomic_load(&o.done), "the open went on before the revoke of Fb was acked");
	ck_assert_int_eq(mdsw_send_caps(&W, &ack), 0);
	for (i = 0; i < 400 && !atomic_load(&o.done); i++)
		mdsw_poll_caps(&W, 25);
	ck_assert_msg(atomic_load(&o.done), "the open still waits after the revoke's ack");
	pthread_join(th, NULL);
	ck_assert_int_eq(o.ret, 0);
	/* nobody holds Fw now: the reader may cache */
	ck_assert_msg((o.caps & (MDSP_CAP_FILE_SHARED | MDSP_CAP_FILE_CACHE)) ==
		      (MDSP_CAP_FILE_SHARED | MDSP_CAP_FILE_CACHE), "the reader got caps 0x%x: Fw kept for us", o.caps);
	W.no_ack = false;
	W.keep_caps = false;
}
END_TEST

/* Run @json on the admin socket; returns the reply (caller puts it). */
static struct json_object *asok_json(const char *json)
{
	struct json_object *req = json_tokener_parse(json), *rep = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(asok_request(path, req, &rep, 5000), 0);
	json_object_put(req);
	ck_assert_ptr_nonnull(rep);
	return rep;
}

/*
 * Over the MDS port (no authentication) only the read-only commands run;
 * the others are refused with -EPERM and a pointer to the admin socket, and
 * change nothing.  The admin socket runs them all.
 */
START_TEST(test_admin_and_evict)
{
	static const char *const readonly[] = { "status", "mds stat", "fs ls", "fs status", "df", "session ls",
						"journal status" };
	struct mdsw other;
	struct json_object *rep, *v;
	char *out = NULL, cmd[128];
	struct mdsp_inode in;
	size_t i;

	for (i = 0; i < sizeof(readonly) / sizeof(readonly[0]); i++) {
		snprintf(cmd, sizeof(cmd), "{\"prefix\":\"%s\"}", readonly[i]);
		ck_assert_msg(mdsw_command(&W, cmd, &out) == 0, "'%s' over the MDS port", readonly[i]);
		ck_assert_ptr_nonnull(out);
		free(out);
		out = NULL;
	}
	ck_assert_int_eq(mdsw_command(&W, "{\"prefix\":\"status\"}", &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"fs_name\""));
	free(out);
	ck_assert_int_eq(mdsw_command(&W, "{\"prefix\":\"no such command\"}", &out), -ENOSYS);
	free(out);
	ck_assert_int_eq(mdsw_command(&W, "{\"prefix\":\"dump cache\"}", &out), -EPERM);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(strstr(out, "admin socket"));
	ck_assert_ptr_null(strstr(out, "\"ino\""));
	free(out);

	ck_assert_int_eq(mdsw_connect(&other, P.port), 0);
	ck_assert_int_eq(mdsw_open(&other, "client.victim"), 0);
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"client evict\",\"id\":%llu}", (unsigned long long)other.sid);
	/* refused over the port, even from a peer with a session: the victim lives on */
	ck_assert_int_eq(mdsw_command(&W, cmd, &out), -EPERM);
	ck_assert_ptr_nonnull(strstr(out, "admin socket"));
	free(out);
	ck_assert_int_eq(mdsw_command(&other, cmd, &out), -EPERM);
	free(out);
	ck_assert_int_eq(mdsw_getattr(&other, ROOT, &in), 0);

	/* the admin socket runs everything */
	rep = asok_json("{\"prefix\":\"dump cache\"}");
	ck_assert(json_object_object_get_ex(rep, "inodes", &v));
	json_object_put(rep);
	rep = asok_json(cmd);
	ck_assert(json_object_object_get_ex(rep, "evicted", &v));
	ck_assert_uint_eq((uint64_t)json_object_get_int64(v), other.sid);
	json_object_put(rep);
	/* the evicted client's connection is gone; reconnect is refused */
	ck_assert_int_lt(mdsw_getattr(&other, ROOT, &in), -1000);
	mdsw_close(&other);
	ck_assert_int_eq(mdsw_connect(&other, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&other, W.sid + 1000), -ESTALE);
	mdsw_close(&other);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &in), 0);
}
END_TEST

START_TEST(test_session_goes_stale)
{
	struct mdsp_msg msg;
	const char *why;
	bool stale = false;
	int i;

	/* restart the daemon with a 1 s lease */
	mdsw_close(&W);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	snprintf(P.extra[P.nextra++], 256, "--mds_session_timeout=1");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.2");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.lazy"), 0);
	for (i = 0; i < 5 && !stale; i++) {
		if (mdsp_recv_auth(W.fd, &msg, 1000, W.rx, &W.in_seq, &why) == 0) {
			stale = msg.type == MDSP_MSG_SESSION && msg.session.op == MDSP_SESSION_STALE;
			mdsp_msg_free(&msg);
		}
	}
	ck_assert(stale);
	/* a renew brings it back */
	ck_assert_int_eq(mdsw_renew(&W), 0);
}
END_TEST

/*
 * MDSP_OP_TMPFILE (O_TMPFILE): a regular file with no name, nlink 0, open
 * by the session that made it.  A LINK gives it its first name only when
 * it was made without O_EXCL and that session has it open: the MDS's own
 * check, for every client (the kernel refuses O_EXCL ones itself).
 */
/* one TMPFILE request (a fresh tid and W's caller each time): its result, the new ino in *@ino */
static int tmpfile_req(uint64_t dir, uint32_t oflags, uint64_t *ino, uint32_t *nlink)
{
	struct mdsp_request q = { .op = MDSP_OP_TMPFILE, .ino = dir, .mode = S_IFREG | 0600, .oflags = oflags };
	struct mdsp_reply rep;
	int r = mdsw_call(&W, &q, &rep);

	if (r == 0) {
		ck_assert(rep.has_target);
		ck_assert(S_ISREG(rep.target.mode));
		ck_assert_int_eq(rep.target.mode & 07777, 0600);
		*ino = rep.target.ino;
		*nlink = rep.target.nlink;
	}
	mdsw_reply_free(&rep);
	return r;
}

START_TEST(test_tmpfile)
{
	struct mdsp_inode in, root;
	struct mdsw w2;
	uint64_t a, x, d, ino;
	uint32_t nlink = 1;

	W.keep_caps = true;   /* the open lasts: caps are what says so */
	ck_assert_int_eq(tmpfile_req(ROOT, O_RDWR, &a, &nlink), 0);
	ck_assert_uint_eq(nlink, 0);
	ck_assert_int_eq(tmpfile_req(ROOT, O_RDWR | O_EXCL, &x, &nlink), 0);
	ck_assert_uint_ne(x, a);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &root), 0);
	ck_assert_uint_eq(root.files, 0);   /* nothing in the directory */

	ck_assert_int_eq(mdsw_link(&W, ROOT, "x", x, NULL), -ENOENT);
	/* a session that does not have it open */
	ck_assert_int_eq(mdsw_connect(&w2, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w2, "client.other"), 0);
	ck_assert_int_eq(mdsw_link(&w2, ROOT, "a2", a, NULL), -ENOENT);
	mdsw_close(&w2);
	ck_assert_int_eq(mdsw_link(&W, ROOT, "a", a, &in), 0);
	ck_assert_uint_eq(in.ino, a);
	ck_assert_uint_eq(in.nlink, 1);
	ck_assert_uint_eq(lookup_child(ROOT, "a"), a);
	ck_assert_int_eq(mdsw_link(&W, ROOT, "a-too", a, &in), 0);   /* then an ordinary hard link */
	ck_assert_uint_eq(in.nlink, 2);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &root), 0);
	ck_assert_uint_eq(root.files, 2);

	/* open for reading only: the kernel never asks so */
	ck_assert_int_eq(tmpfile_req(ROOT, O_RDONLY, &ino, &nlink), -EINVAL);
	/* the directory's write permission */
	d = mkdir_ok(ROOT, "ro", 0755);
	as_user(&W, 1000, 1000);
	ck_assert_int_eq(tmpfile_req(d, O_RDWR, &ino, &nlink), -EACCES);
	as_user(&W, 0, 0);
	W.keep_caps = false;
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_namespace");
	TCase *tc = tcase_create("ns");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_session_and_basic_ops);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_mkdir_rmdir_nlink);
	tcase_add_test(tc, test_permissions);
	tcase_add_test(tc, test_rename);
	tcase_add_test(tc, test_links_and_symlinks);
	tcase_add_test(tc, test_tmpfile);
	tcase_add_test(tc, test_exchange_and_links_across_dirs);
	tcase_add_test(tc, test_setattr_truncate);
	tcase_add_test(tc, test_extents);
	tcase_add_test(tc, test_xattrs);
	tcase_add_test(tc, test_readdir_cookies);
	tcase_add_test(tc, test_readdir_names_and_attrs);
	tcase_add_test(tc, test_concurrent_sessions);
	tcase_add_test(tc, test_parked_on_dropped_lease);
	tcase_add_test(tc, test_drop_before_revoke_seen);
	tcase_add_test(tc, test_admin_and_evict);
	tcase_add_test(tc, test_session_goes_stale);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_ns", parent_dir, sizeof(parent_dir));
}
