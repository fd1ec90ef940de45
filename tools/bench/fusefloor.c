/*
 * fusefloor - a FUSE filesystem that does nothing: what any FUSE client,
 * loligo-fuse or ceph-fuse, cannot go below on this machine.
 *
 *   fusefloor [-s] MOUNTPOINT        (foreground; fusermount3 -u to stop)
 *
 * LOOKUP says "no such name", CREATE, MKDIR, SYMLINK and LINK hand out a
 * new inode (long entry and attribute timeouts), WRITE takes every byte,
 * SETATTR answers the attributes, GETXATTR ENODATA, FLUSH and RELEASE
 * nothing; nothing is stored.  So `tools/bench/creates DIR N` and a
 * `tar -x` into it measure the kernel's FUSE round trips alone, with the
 * same multi-threaded libfuse loop loligo-fuse runs (-s: one thread).
 * docs/BENCHMARKS.md compares loligo's small-file rows with it: issue 13's
 * targets (20k creates/s, untar within 2x of ext4) sit below this floor here.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_ulong next_ino = 2;

static void attr_of(fuse_ino_t ino, mode_t mode, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = mode;
	st->st_nlink = S_ISDIR(mode) ? 2 : 1;
}

static void reply_new(fuse_req_t req, mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = atomic_fetch_add(&next_ino, 1);
	attr_of(e.ino, mode, &e.attr);
	e.attr_timeout = e.entry_timeout = 3600;
	if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, ENOENT);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	attr_of(ino, ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	(void)attr;
	(void)to_set;
	ff_getattr(req, ino, fi);
}

static void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	fi->fh = 0;
	reply_new(req, S_IFREG | (mode & 07777), fi);
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent;
	(void)name;
	reply_new(req, S_IFDIR | (mode & 07777), NULL);
}

static void ff_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	reply_new(req, S_IFLNK | 0777, NULL);
}

static void ff_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	(void)parent;
	(void)name;
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	attr_of(ino, S_IFREG | 0644, &e.attr);
	e.attr_timeout = e.entry_timeout = 3600;
	fuse_reply_entry(req, &e);
}

static void ff_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	fuse_reply_write(req, size);
}

static void ff_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void ff_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void ff_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = ff_lookup, .getattr = ff_getattr, .setattr = ff_setattr, .create = ff_create,
	.mkdir = ff_mkdir, .symlink = ff_symlink, .link = ff_link, .write = ff_write,
	.getxattr = ff_getxattr, .flush = ff_ok, .release = ff_ok, .forget = ff_forget,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 16 };
	struct fuse_cmdline_opts o;
	struct fuse_session *se;
	int r = 1;

	if (fuse_parse_cmdline(&args, &o) != 0 || !o.mountpoint) {
		fprintf(stderr, "usage: %s [-s] MOUNTPOINT\n", argv[0]);
		return 2;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out_handlers;
	r = o.singlethread ? fuse_session_loop(se) : fuse_session_loop_mt(se, &cfg);
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	free(o.mountpoint);
	fuse_opt_free_args(&args);
	return r ? 1 : 0;
}
