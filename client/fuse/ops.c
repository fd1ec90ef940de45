/*
 * ops.c - the FUSE lowlevel operations of loligo-fuse.
 *
 * Each handler is a thin edge: it turns the kernel's node ids into inode
 * references (see lfuse.h), the request context into a struct lc_cred, calls
 * one lc_* function of libloligo-client and maps its -errno to
 * fuse_reply_err(req, -r).  No handler holds a lock of its own; the client
 * library does its own locking, and the kernel's caches are invalidated from
 * inval.c's thread, never from here.
 *
 * Lookup counting: every reply that hands the kernel a node id (entry,
 * create, readdirplus entries) hands over exactly one client reference.  When
 * the kernel refuses such a reply (the request was interrupted: the reply
 * functions return -ENOENT) the reference is dropped here, so nothing leaks;
 * readdirplus entries that did not fit are dropped by lc_readdir itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/fuse/lfuse.h"
#include "common/config.h"
#include "common/log.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

/* readdir offsets: 0 start, 1 after ".", 2 after ".." == client cookie 0;
 * an entry whose client cookie is k resumes at offset k + DOT_OFFSETS. */
#define DOT_OFFSETS 2

static inline struct lfuse *LF(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * Node ids are inode numbers (the root's is FUSE_ROOT_ID): the MDS never
 * reuses one, so a node id with its generation names one inode for the
 * life of the filesystem, as export support wants (file handles are the
 * node id and the generation: they outlive this process).  The inode
 * behind a node id the kernel holds is in the cache for as long as the
 * kernel holds it (its lookups are references), so no reference is taken
 * here.  The kernel sends no other node ids, but for the "." and ".." of a
 * file handle (ll_lookup); one we do not know answers ESTALE, never a
 * guess.
 */
static inline struct lc_inode *IN(struct lfuse *lf, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? lf->root : lc_ino_peek(lf->c, ino);
}

/* The inode of node id @nodeid, or NULL after replying ESTALE to @req. */
static struct lc_inode *node(struct lfuse *lf, fuse_req_t req, fuse_ino_t nodeid)
{
	struct lc_inode *in = IN(lf, nodeid);

	if (!in) {
		dout(FUSE, 1, "node id 0x%llx: no such inode here", (unsigned long long)nodeid);
		fuse_reply_err(req, ESTALE);
	}
	return in;
}

static inline struct lc_fh *FH(const struct fuse_file_info *fi)
{
	return (struct lc_fh *)(uintptr_t)fi->fh;
}

/*
 * Waits for the MDS are hard (it may come back), but the caller may give
 * up: a signal to it makes the kernel send FUSE_INTERRUPT, and that ends
 * such a wait with EINTR (client.h, struct lc_intr).  Every lc_* call that
 * may wait for the MDS runs inside INTR(): once a wait lasts, the library
 * arms it, registering the interrupt callback with libfuse; lc_intr_end()
 * takes the callback back (fuse_req_interrupt_func(req, NULL, NULL) waits
 * for one that is running) before the handler replies, so it never runs
 * after the request is gone.  A FLUSH the kernel sends for a close() of an
 * inherited fd is interruptible the same way: the kernel waits for our
 * answer even after the signal, and that answer now comes.
 */
static void intr_cb(fuse_req_t req, void *data)
{
	(void)req;
	lc_intr_fire(data);
}

static void intr_arm(struct lc_intr *it)
{
	fuse_req_interrupt_func(it->arg, intr_cb, it);
}

static void intr_disarm(struct lc_intr *it)
{
	fuse_req_interrupt_func(it->arg, NULL, NULL);
}

#define INTR(req, call) ({                                             \
	struct lc_intr intr__;                                          \
	lc_intr_begin(&intr__, intr_arm, intr_disarm, (req));           \
	__typeof__(call) ret__ = (call);                                \
	lc_intr_end(&intr__);                                           \
	ret__;                                                          \
})

/* The edge: -errno from the client library becomes the kernel's errno.
 * Failures other than the everyday ones are logged (debug_fuse 5). */
#define REPLY_ERR(req, r) reply_err((req), (r), __func__)
static void reply_err(fuse_req_t req, int r, const char *fn)
{
	if (r < 0 && r != -ENOENT && r != -EEXIST && r != -ENODATA && r != -ENOTEMPTY &&
	    r != -ERANGE && r != -ENOSYS && r != -EAGAIN && r != -ENXIO)
		dout(FUSE, 5, "%s: %s", fn, strerror(-r));
	fuse_reply_err(req, -r);
}

static void get_cred_groups(struct lfuse *lf, fuse_req_t req, struct lc_cred *cr, bool groups)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	cr->uid = ctx->uid;
	cr->gid = ctx->gid;
	cr->pid = ctx->pid;
	cr->ngroups = 0;
	/* with FUSE_POSIX_ACL the kernel leaves the umask of creates to us */
	cr->umask_set = lf->acl;
	cr->umask = lf->acl ? ctx->umask : 0;
	/* fuse_req_getgroups() reads /proc/PID/task/TID/status: a file open per
	 * request.  root needs no supplementary groups (it passes every check
	 * they could grant), and the hot stat path mostly runs as root in
	 * benchmarks, so only other callers pay for it. */
	if (groups && lf->set_user_groups && ctx->uid != 0) {
		int n = fuse_req_getgroups(req, LC_MAX_GROUPS, cr->groups);
		if (n > LC_MAX_GROUPS)
			n = LC_MAX_GROUPS;
		cr->ngroups = n > 0 ? n : 0;
	}
}

static void get_cred(struct lfuse *lf, fuse_req_t req, struct lc_cred *cr)
{
	get_cred_groups(lf, req, cr, true);
}

static void attr_to_stat(const struct lc_attr *a, struct stat *st)
{
	if (!(a->mode & S_IFMT))
		dout(FUSE, 1, "attributes of ino 0x%llx have no file type (mode 0%o): the kernel will answer EIO", (unsigned long long)a->ino, a->mode);
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = a->blksize ? (blksize_t)a->blksize : 4096;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

/* Fill @e for @in, found as @name in @dir, whose reference the caller
 * passes to the kernel.  A reference to the root is dropped at once (the
 * root's node id is FUSE_ROOT_ID, covered by the reference lfuse holds).
 * The kernel caches the name as long as we hold a lease on it and the
 * attributes as long as our caps cover them; 0 otherwise (caps.c).
 *
 * The entry timeout comes from lc_dentry_timeout(): also 0 for names in a
 * directory not everyone may search.  Without default_permissions the
 * kernel checks no search permission itself and a cached name skips LOOKUP,
 * so such a name must be looked up again with each caller's credentials.
 * When the lookup fails (EACCES), fuse_dentry_revalidate() drops the
 * dentry and the fresh lookup answers the caller at once.
 */
static void fill_entry(struct lfuse *lf, struct lc_inode *dir, const char *name, struct lc_inode *in,
		       const struct lc_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = lfuse_nodeid(lf, in);
	e->generation = e->ino == FUSE_ROOT_ID ? 0 : a->generation; /* the kernel wants 0 for the root */
	attr_to_stat(a, &e->attr);
	e->attr_timeout = lc_attr_timeout(lf->c, in);
	e->entry_timeout = dir ? lc_dentry_timeout(lf->c, dir, name, in) : 0;
}

/* fuse_debug_reply_delay: the test hook between a promise and its reply */
static void debug_reply_delay(void)
{
	double delay = cfg_double(CFG_fuse_debug_reply_delay);

	if (delay > 0) {
		struct timespec ts = { .tv_sec = (time_t)delay, .tv_nsec = (long)((delay - (double)(time_t)delay) * 1e9) };

		nanosleep(&ts, NULL);
	}
}

/* Reply with a new entry @name of @dir for @in (one reference, handed to the kernel). */
static void reply_entry(struct lfuse *lf, fuse_req_t req, struct lc_inode *dir, const char *name,
			struct lc_inode *in, const struct lc_attr *a)
{
	struct fuse_entry_param e;

	fill_entry(lf, dir, name, in, a, &e);
	debug_reply_delay();
	if (in == lf->root)
		lc_put(lf->c, in);
	else
		lc_kernel_hand(in, 1);
	if (fuse_reply_entry(req, &e) != 0 && in != lf->root) {
		lc_kernel_hand(in, -1);
		lc_put(lf->c, in); /* interrupted: the kernel did not take it */
	}
}

static void reply_attr(struct lfuse *lf, fuse_req_t req, struct lc_inode *in, const struct lc_attr *a)
{
	struct stat st;

	attr_to_stat(a, &st);
	double t = lc_attr_timeout(lf->c, in);
	debug_reply_delay();
	fuse_reply_attr(req, &st, t);
}

/* ---- lifetime ------------------------------------------------------------ */

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct lfuse *lf = userdata;

	/* Big writes: one WRITE carries up to max_write bytes (libfuse negotiates
	 * max_pages from it; its buffer caps it at 1 MiB). */
	conn->max_write = lf->max_write;
	if (lf->max_readahead && lf->max_readahead < conn->max_readahead)
		conn->max_readahead = lf->max_readahead;

	/* Reads of one file run in parallel (the client library serialises what
	 * it must). */
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* Lookups and readdirs of one directory in parallel: the MDS orders
	 * them, not the directory's i_rwsem. */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* A listing fills the dentry and attribute caches: the following
	 * stat()s need no LOOKUP.  AUTO lets the kernel fall back to plain
	 * READDIR when nobody looks at the attributes. */
	if (lf->readdirplus && (conn->capable & FUSE_CAP_READDIRPLUS)) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
			conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
	} else {
		conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	}
	/* Drop cached pages when the size or mtime the MDS reports changed:
	 * close-to-open consistency between clients. */
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* chattr/lsattr of directories come as FUSE_IOCTL too (ll_ioctl) */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* Let the kernel keep symlink targets; inval_inode drops them. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* O_TRUNC comes as a separate SETATTR(size 0), which the MDS journals
	 * like any truncate. */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	/* setuid/setgid clearing on write, truncate and chown is ours: the
	 * kernel would do it as a chmod by the writer, which the MDS must
	 * refuse to anyone but the owner (EPERM, and nothing written). */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
	else
		conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* Write-through page cache: the client library buffers (bounded) and
	 * writes back; a kernel writeback cache would defeat the bound and the
	 * size reporting on close. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* fcntl and flock locks are the MDS's (every client sees them): the
	 * kernel sends them here instead of keeping them to this mount */
	if (conn->capable & FUSE_CAP_POSIX_LOCKS)
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/*
	 * POSIX ACLs (-o acl): the kernel checks permissions itself
	 * (default_permissions, which FUSE_POSIX_ACL turns on) with the ACLs
	 * it reads as system.posix_acl_* xattrs and caches until an attribute
	 * invalidation, and sends creates with the mode unmasked and the umask
	 * beside it (ll_create, ll_mkdir, ll_mknod pass it on: the MDS applies
	 * either the umask or the parent's default ACL).  Without it the kernel
	 * checks nothing with ACLs (the MDS still does) and refuses
	 * setfacl/getfacl with EOPNOTSUPP.
	 */
	if (lf->acl) {
		if (conn->capable & FUSE_CAP_POSIX_ACL)
			conn->want |= FUSE_CAP_POSIX_ACL;
		/* the VFS leaves the umask to a filesystem with ACLs, and FUSE
		 * only passes it on unapplied with DONT_MASK */
		if ((conn->capable & (FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK)) ==
		    (FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK))
			conn->want |= FUSE_CAP_DONT_MASK;
		if (!(conn->capable & FUSE_CAP_POSIX_ACL))
			dout(FUSE, 0, "init: the kernel has no FUSE_POSIX_ACL: it checks no ACL");
	}
	/* With the kernel checking permissions, opendir has nothing to do:
	 * answering ENOSYS makes the kernel stop sending OPENDIR/RELEASEDIR and
	 * cache listings (FOPEN_KEEP_CACHE|FOPEN_CACHE_DIR) on its own. */
	lf->no_opendir = lf->default_permissions && lf->cache_readdir &&
			 (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
	/* File handles (name_to_handle_at, a kernel NFS server re-exporting the
	 * mount): node ids are inode numbers, and "." and ".." of any of them
	 * are looked up (ll_lookup) */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* requests are read into memory, where the O_TMPFILE hook sees them
	 * (tmpfile_hook.c): no splice reads */
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	conn->time_gran = 1;
	dout(FUSE, 1, "init: proto %u.%u max_write %u max_readahead %u want 0x%x",
	     conn->proto_major, conn->proto_minor, conn->max_write, conn->max_readahead, conn->want);
}

static void ll_destroy(void *userdata)
{
	(void)userdata;
}

/* ---- names --------------------------------------------------------------- */

/*
 * With export support the kernel decodes a file handle (node id,
 * generation) it has no inode for as a LOOKUP of "." in that node id, and
 * reconnects a directory's dentry with a LOOKUP of "..": both may name a
 * node id this process never handed out (a handle from before a remount,
 * from another mount, or forged), so the inode is found or fetched by its
 * number; one that does not exist answers ESTALE.  The kernel checks the
 * generation and the node id of our answer against the handle's.
 */
static int lookup_dot(struct lfuse *lf, fuse_ino_t nodeid, const char *name, const struct lc_cred *cr,
		      struct lc_attr *a, struct lc_inode **out)
{
	struct lc_inode *in = IN(lf, nodeid);
	int r;

	if (in) {
		lc_get(in);
	} else {
		r = lc_lookup_ino(lf->c, lfuse_ino_of(lf, nodeid), 0, a, &in);
		if (r < 0)
			return r;
	}
	r = lc_lookup(lf->c, in, name, cr, a, out);
	lc_put(lf->c, in);
	return r;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	LFUSE_TRACK(req, "lookup", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, lookup);
	struct lc_cred cr;
	struct lc_attr a;
	struct lc_inode *in = NULL, *dir;
	int r;

	get_cred(lf, req, &cr);
	if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) {
		struct fuse_entry_param e;

		r = INTR(req, lookup_dot(lf, parent, name, &cr, &a, &in));
		if (r < 0) {
			REPLY_ERR(req, r == -ENOENT ? -ESTALE : r);
			return;
		}
		fill_entry(lf, NULL, name, in, &a, &e);
		e.entry_timeout = 0;   /* no dentry is made of it */
		if (in == lf->root)
			lc_put(lf->c, in);
		else
			lc_kernel_hand(in, 1);
		if (fuse_reply_entry(req, &e) != 0 && in != lf->root) {
			lc_kernel_hand(in, -1);
			lc_put(lf->c, in);
		}
		return;
	}
	if (!(dir = node(lf, req, parent)))
		return;
	r = INTR(req, lc_lookup(lf->c, dir, name, &cr, &a, &in));
	if (r == -ENOENT && lf->negative_timeout > 0) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = lc_negative_timeout(lf->c, dir, name, lf->negative_timeout);
		fuse_reply_entry(req, &e);
		return;
	}
	if (r < 0) {
		REPLY_ERR(req, r);
		return;
	}
	reply_entry(lf, req, dir, name, in, &a);
}

static void forget_one(struct lfuse *lf, fuse_ino_t nodeid, uint64_t nlookup)
{
	struct lc_inode *in;

	if (nodeid == FUSE_ROOT_ID)
		return;
	in = IN(lf, nodeid);
	if (in)
		lc_forget(lf->c, in, nlookup);
	else
		dout(FUSE, 0, "forget of node id 0x%llx (%llu lookups), which is not here",
		     (unsigned long long)nodeid, (unsigned long long)nlookup);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct lfuse *lf = LF(req);

	perf_inc(&lf->perf.forget, 1);
	forget_one(lf, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct lfuse *lf = LF(req);

	perf_inc(&lf->perf.forget, count);
	for (size_t i = 0; i < count; i++)
		forget_one(lf, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "getattr", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, getattr);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;
	struct lc_attr a;
	int r;

	(void)fi;
	get_cred(lf, req, &cr);
	lc_kernel_reply_begin(in);
	r = INTR(req, lc_getattr(lf->c, in, &cr, false, &a));
	if (r < 0)
		REPLY_ERR(req, r);
	else
		reply_attr(lf, req, in, &a);
	lc_kernel_reply_end(in);
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set,
		       struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "setattr", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, setattr);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_attr set, a;
	struct lc_cred cr;
	struct timespec now;
	int mask = 0, r;

	get_cred(lf, req, &cr);
	memset(&set, 0, sizeof(set));
	clock_gettime(CLOCK_REALTIME, &now);
	if (to_set & FUSE_SET_ATTR_MODE) {
		set.mode = st->st_mode;
		mask |= LC_SET_MODE;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		set.uid = st->st_uid;
		mask |= LC_SET_UID | LC_SET_CHOWN;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		set.gid = st->st_gid;
		mask |= LC_SET_GID | LC_SET_CHOWN;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (st->st_size < 0) {   /* the kernel refuses these itself: never trust it */
			fuse_reply_err(req, EINVAL);
			return;
		}
		set.size = (uint64_t)st->st_size;
		mask |= LC_SET_SIZE;
		/* a truncate: NFS clients holding delegations on it give them back first */
		lc_break_for_write(lf->c, lc_ino(in), true);
	}
	/* UTIME_NOW arrives as ATIME|ATIME_NOW (the kernel turns both UTIME_NOW
	 * into utimes(NULL)): "now" only, so the MDS can tell a touch (owner or
	 * write permission) from explicit times or one "now" (owner only), as
	 * notify_change()'s ATTR_TOUCH does. */
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		set.atime = now;
		mask |= LC_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		set.atime = st->st_atim;
		mask |= LC_SET_ATIME;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		set.mtime = now;
		mask |= LC_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		set.mtime = st->st_mtim;
		mask |= LC_SET_MTIME;
	}
	/* Nothing (or ctime alone) is chown(-1, -1) -- or the kernel's
	 * file_remove_privs() before a write of a setuid file, which
	 * HANDLE_KILLPRIV leaves to us and which looks the same: ctime moves,
	 * setuid/setgid go as a chown clears them (the MDS: for the owner or a
	 * writer). */
	if (!mask)
		mask |= LC_SET_CHOWN;
	dout(FUSE, 20, "setattr ino 0x%llx to_set 0x%x -> mask 0x%x%s", (unsigned long long)ino, (unsigned)to_set,
	     (unsigned)mask, fi ? " (handle)" : "");
	lc_kernel_reply_begin(in);
	if (mask && fi)   /* ftruncate, or O_TRUNC: checked against the handle */
		r = INTR(req, lc_fsetattr(lf->c, FH(fi), &set, mask, &cr, &a));
	else
		r = INTR(req, lc_setattr(lf->c, in, &set, mask, &cr, &a));
	if (r < 0) {
		lc_kernel_reply_end(in);
		REPLY_ERR(req, r);
		return;
	}
	reply_attr(lf, req, in, &a);
	lc_kernel_reply_end(in);
	/* a directory closed to others: the names the kernel holds go now */
	if (S_ISDIR(a.mode) && (mask & (LC_SET_MODE | LC_SET_UID | LC_SET_GID)))
		lfuse_inval_drain(lf);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	LFUSE_TRACK(req, "readlink", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, other);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;
	char buf[PATH_MAX + 1];
	ssize_t n;

	get_cred(lf, req, &cr);
	n = INTR(req, lc_readlink(lf->c, in, buf, sizeof(buf), &cr));
	if (n < 0) {
		REPLY_ERR(req, (int)n);
		return;
	}
	if ((size_t)n >= sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	LFUSE_TRACK(req, "mknod", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;
	struct lc_attr a;
	struct lc_inode *in = NULL;
	int r;

	get_cred(lf, req, &cr);
	r = INTR(req, lc_mknod(lf->c, dir, name, mode, rdev, &cr, &a, &in));
	if (r < 0)
		REPLY_ERR(req, r);
	else
		reply_entry(lf, req, dir, name, in, &a);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	LFUSE_TRACK(req, "mkdir", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;
	struct lc_attr a;
	struct lc_inode *in = NULL;
	int r;

	get_cred(lf, req, &cr);
	r = INTR(req, lc_mkdir(lf->c, dir, name, mode & 07777, &cr, &a, &in));
	if (r < 0)
		REPLY_ERR(req, r);
	else
		reply_entry(lf, req, dir, name, in, &a);
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	LFUSE_TRACK(req, "symlink", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;
	struct lc_attr a;
	struct lc_inode *in = NULL;
	int r;

	get_cred(lf, req, &cr);
	r = INTR(req, lc_symlink(lf->c, dir, name, link, &cr, &a, &in));
	if (r < 0)
		REPLY_ERR(req, r);
	else
		reply_entry(lf, req, dir, name, in, &a);
}

/*
 * fs.protected_hardlinks, as it is now: the sysctl is read at every link by
 * someone other than root (a few microseconds; a link is no hot path), as
 * the kernel reads it in may_linkat(), never once at mount -- an
 * administrator's `sysctl fs.protected_hardlinks=0` takes effect at once.
 * Not readable (no /proc): 1, the kernel's default.
 */
static bool protected_hardlinks_now(void)
{
	char buf[16] = "";
	int fd = open("/proc/sys/fs/protected_hardlinks", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n <= 0 || atoi(buf) != 0;
}

/*
 * fs.protected_hardlinks: the kernel's may_linkat() lets anyone but the
 * owner (and root) link only to a regular file that is not setuid (nor
 * setgid and group-executable) and that the caller may read and write --
 * and applies all of it itself, with the sysctl's value at the time of the
 * link, but for the last part it asks inode_permission(), which FUSE
 * without default_permissions answers "yes".  So the whole rule is checked
 * again here, on the MDS's attributes rather than the kernel's cached ones
 * (with default_permissions the kernel's own check is complete).
 */
static int may_link(struct lfuse *lf, struct lc_inode *in, const struct lc_cred *cr)
{
	struct lc_attr a;
	int r;

	if (cr->uid == 0 || lf->default_permissions || !protected_hardlinks_now())
		return 0;
	r = lc_getattr(lf->c, in, cr, false, &a);
	if (r < 0)
		return r;
	if (a.uid == cr->uid)
		return 0;
	if (!S_ISREG(a.mode) || (a.mode & S_ISUID) || (a.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ||
	    lc_access(lf->c, in, R_OK | W_OK, cr) < 0)
		return -EPERM;
	return 0;
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	LFUSE_TRACK(req, "link", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *ndir = node(lf, req, newparent);
	if (!ndir)
		return;
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;
	struct lc_attr a;
	int r;

	get_cred(lf, req, &cr);
	r = INTR(req, may_link(lf, in, &cr));
	if (r == 0)
		r = INTR(req, lc_link(lf->c, in, ndir, newname, &cr, &a));
	if (r < 0) {
		REPLY_ERR(req, r);
		return;
	}
	lc_get(in); /* the entry reply counts one more lookup of @in */
	reply_entry(lf, req, ndir, newname, in, &a);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	LFUSE_TRACK(req, "unlink", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;

	get_cred(lf, req, &cr);
	REPLY_ERR(req, INTR(req, lc_unlink(lf->c, dir, name, &cr)));
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	LFUSE_TRACK(req, "rmdir", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;

	get_cred(lf, req, &cr);
	REPLY_ERR(req, INTR(req, lc_rmdir(lf->c, dir, name, &cr)));
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	LFUSE_TRACK(req, "rename", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *ndir = node(lf, req, newparent);
	if (!ndir)
		return;
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;

	/* RENAME_WHITEOUT (overlayfs's, the kernel checked CAP_MKNOD) is the
	 * MDS's, atomic with the rename; EXCHANGE combines with nothing. */
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) ||
	    ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	get_cred(lf, req, &cr);
	REPLY_ERR(req, INTR(req, lc_rename(lf->c, dir, name, ndir, newname, flags, &cr)));
	/* a name moved into a directory not everyone may search: taken back now */
	lfuse_inval_drain(lf);
}

/* ---- files --------------------------------------------------------------- */

/*
 * The kernel's page cache of a file outlives its opens.  It is kept
 * (FOPEN_KEEP_CACHE) while this client holds Fc and nothing changed the
 * file since an open with Fc let the kernel cache it (lc_fh_kernel_cache):
 * another client's write needs Fc revoked first, and the revoke drops the
 * kernel's pages (inval_inode, delivered before the ack: caps.c, inval.c).
 * Else the kernel drops what it has at open (close-to-open); without Fc
 * another client writes the file too: no page cache at all (direct_io,
 * Ceph's sync I/O).  Nothing is sent to the kernel from here: no notify
 * from a request handler.
 */
static void set_cache_mode(struct lfuse *lf, struct lc_fh *fh, struct fuse_file_info *fi)
{
	enum lc_kcache k = lc_fh_kernel_cache(fh);

	fi->direct_io = k == LC_KCACHE_NONE;
	fi->keep_cache = k == LC_KCACHE_KEEP;
	if (fi->keep_cache)
		perf_inc(&lf->perf.keep_cache, 1);
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "create", parent);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, namespace);
	struct lc_inode *dir = node(lf, req, parent);
	if (!dir)
		return;
	struct lc_cred cr;
	struct lc_attr a;
	struct lc_inode *in = NULL;
	struct lc_fh *fh = NULL;
	struct fuse_entry_param e;
	int r;

	get_cred(lf, req, &cr);
	/* FUSE_TMPFILE, renamed by tmpfile_hook.c: the same reply, no name */
	bool tmpfile = strcmp(name, LFUSE_TMPFILE_NAME) == 0;
	if (tmpfile)
		r = INTR(req, lc_tmpfile(lf->c, dir, mode, fi->flags, &cr, &a, &in, &fh));
	else
		r = INTR(req, lc_create(lf->c, dir, name, mode, fi->flags, &cr, &a, &in, &fh));
	if (r < 0) {
		REPLY_ERR(req, r);
		return;
	}
	/* no entry timeout for a tmpfile: the kernel keeps no dentry of it by name */
	fill_entry(lf, tmpfile ? NULL : dir, name, in, &a, &e);
	fi->fh = (uint64_t)(uintptr_t)fh;
	set_cache_mode(lf, fh, fi);
	lc_kernel_hand(in, 1);
	if (fuse_reply_create(req, &e, fi) != 0) {
		/* interrupted: no release will come for this handle, no forget for the entry */
		lc_kernel_hand(in, -1);
		lc_release(lf->c, fh);
		lc_put(lf->c, in);
	}
}

/*
 * The kernel caps a FUSE mount's readahead at its bdi's read_ahead_kb
 * (128 KiB by default), whatever max_readahead INIT agreed on: so READs of
 * a sequential reader are 128-256 KiB, four or more round trips per MiB.
 * Make fuse_max_readahead what the kernel really uses by raising the bdi's
 * read_ahead_kb to it, once, at the first open: INIT is done by then (the
 * kernel applies min(bdi, INIT) when it takes the INIT reply).  The bdi is
 * found by the mount's device number in /proc/self/mountinfo: no access to
 * the mount itself, which this thread serves.  Root only; else it stays.
 */
static void raise_readahead(struct lfuse *lf)
{
	char line[4096], path[128];
	unsigned maj = 0, min = 0, kb = lf->max_readahead >> 10;
	bool found = false;
	FILE *f;

	if (!lf->mountpoint || kb <= 128 || atomic_exchange(&lf->ra_set, true))
		return;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	while (!found && fgets(line, sizeof(line), f)) {
		char mnt[2048];

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... (no escapes in ours but \040 & co) */
		if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &min, mnt) == 3 &&
		    strcmp(mnt, lf->mountpoint) == 0 && strstr(line, " - fuse"))
			found = true;
	}
	fclose(f);
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	f = fopen(path, "we");
	if (!f || fprintf(f, "%u\n", kb) < 0 || fclose(f) != 0) {
		dout(FUSE, 1, "cannot raise the kernel's readahead to %u KiB (%s): %s", kb, path, strerror(errno));
		return;
	}
	dout(FUSE, 2, "kernel readahead of the mount raised to %u KiB (%s)", kb, path);
}

/*
 * Close-to-open for the kernel's i_size.  The kernel learned the file's size
 * at LOOKUP, before this OPEN made another client's writer flush (a
 * reader's open takes Fb), so it may hold a size smaller than the one the
 * open brought.  It asks again at the first read (AUTO_INVAL_DATA: the
 * attributes from the lookup carried no timeout without Fs), but drops
 * that GETATTR's answer if any invalidation of the inode lands while it is
 * out (fuse_change_attributes: attr_version moved), and then reads with
 * the old size: end of file at 0 (test_fuse_caps
 * test_async_unlink_open_elsewhere: the other mount's unlink revoked Ls
 * just then).  No FUSE message sets a size; a NOTIFY_STORE does extend it,
 * so the file's last byte is stored, and the kernel's size is right
 * before open(2) returns, whatever it drops later.
 *
 * A notify from a request handler: the kernel's open holds no inode lock
 * here (O_TRUNC opens are left out, they hold it) and the store takes only
 * the lock of the last page, which no request of ours waits on.  Only when
 * the size grew: a smaller one corrects itself at the first short read.
 */
static void kernel_size_catch_up(struct lfuse *lf, fuse_ino_t ino, struct lc_fh *fh, uint64_t before)
{
	struct lc_attr a;
	char last;

	lc_cached_attr(lc_fh_inode(fh), &a);
	if (a.size <= before || !S_ISREG(a.mode)) {
		dout(FUSE, 10, "open of ino 0x%llx: size %llu, %llu before: nothing to push", (unsigned long long)ino,
		     (unsigned long long)a.size, (unsigned long long)before);
		return;
	}
	if (lc_read(lf->c, fh, (off_t)(a.size - 1), 1, &last) != 1)
		return;    /* the first read asks (and reports) again */
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(1);
	bv.buf[0].mem = &last;
	int r = fuse_lowlevel_notify_store(lf->se, ino, (off_t)(a.size - 1), &bv, 0);
	if (r == 0)
		perf_inc(&lf->perf.size_pushed, 1);
	else
		dout(FUSE, 5, "open of ino 0x%llx: size %llu not stored in the kernel: %s", (unsigned long long)ino,
		     (unsigned long long)a.size, strerror(-r));
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "open", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, open);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;
	struct lc_fh *fh = NULL;
	struct lc_attr before;
	int r;

	raise_readahead(lf);
	get_cred(lf, req, &cr);
	lc_cached_attr(in, &before);
	r = INTR(req, lc_open(lf->c, in, fi->flags, &cr, &fh));
	if (r < 0) {
		REPLY_ERR(req, r);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	/* a writer: NFS clients holding delegations on the file give them back
	 * first (after lc_open: a delegation granted meanwhile sees the writer) */
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		lc_break_for_write(lf->c, lc_ino(in), true);
	else   /* a reader: write delegations go back (with what they buffered) */
		lc_break_for_read(lf->c, lc_ino(in), true);
	set_cache_mode(lf, fh, fi);
	if (!fi->direct_io && !(fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_WRONLY)
		kernel_size_catch_up(lf, ino, fh, before.size);
	if (fuse_reply_open(req, fi) != 0)
		lc_release(lf->c, fh);
}

/*
 * The reply goes out from the client's own buffers (readahead chunks, or the
 * buffer a direct read landed in) as an iovec: one copy, the kernel's, into
 * the page cache.
 */
static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "read", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, read);
	struct lc_rdbuf rb;
	ssize_t n;

	(void)ino;
	n = lc_read_iov(lf->c, FH(fi), off, size, &rb);
	if (n < 0)
		REPLY_ERR(req, (int)n);
	else if (rb.niov)
		fuse_reply_iov(req, rb.iov, rb.niov);
	else
		fuse_reply_buf(req, NULL, 0);
	lc_rdbuf_release(lf->c, &rb);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "write", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, write);
	ssize_t n;

	n = lc_write(lf->c, FH(fi), off, size, buf);
	if (n < 0) {
		REPLY_ERR(req, (int)n);
		return;
	}
	/* around the page cache: what other handles cached of the range goes
	 * before the write is answered (lfuse_inval_written); an append's
	 * offset is the client's, not @off: everything from the start */
	if (n > 0 && lc_fh_kernel_direct(FH(fi)))
		lfuse_inval_written(lf, ino, (fi->flags & O_APPEND) ? 0 : off, (fi->flags & O_APPEND) ? 0 : (off_t)n);
	fuse_reply_write(req, (size_t)n);
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "fallocate", ino);
	(void)ino;
	perf_inc(&LF(req)->perf.write, 1);
	REPLY_ERR(req, INTR(req, lc_fallocate(LF(req)->c, FH(fi), mode, off, len)));
}

/*
 * The kernel answers SEEK_SET, SEEK_CUR and SEEK_END itself and asks only
 * for SEEK_DATA and SEEK_HOLE; without this op it would take the whole
 * file for data (generic_file_llseek), and cp --sparse, tar -S and
 * qemu-img would copy every hole as zeros.  SEEK_SET is answered anyway;
 * the position SEEK_CUR needs is the kernel's, so that is EINVAL.
 */
static void ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "lseek", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, other);
	off_t pos = 0;
	int r;

	if (whence == SEEK_SET) {
		pos = off;
		r = off < 0 ? -EINVAL : 0;
	} else if (whence == SEEK_DATA || whence == SEEK_HOLE) {
		r = INTR(req, lc_lseek_data(lf->c, lc_fh_inode(FH(fi)), off, whence, &pos));
	} else {
		r = -EINVAL;
	}
	if (r < 0)
		REPLY_ERR(req, r);
	else
		fuse_reply_lseek(req, pos);
}

/*
 * Every close(2) flushes, with the closing process's lock_owner: POSIX
 * says its fcntl locks on the file go with any of its descriptors (the
 * kernel leaves that to a filesystem that serves locks itself).  A
 * process that dies closes its files too, so its locks go then.
 */
static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "flush", ino);
	struct lfuse *lf = LF(req);
	int r;

	perf_inc(&lf->perf.flush, 1);
	/* not interruptible: a dying process' locks must go (bounded by
	 * client_request_timeout; no round trip if the owner holds none) */
	r = lc_lock_release_owner(lf->c, lc_fh_inode(FH(fi)), LC_LOCK_NS_FUSE, fi->lock_owner, false);
	if (r < 0)
		dout(FUSE, 1, "flush: releasing the fcntl locks of owner %llx: %s",
		     (unsigned long long)fi->lock_owner, strerror(-r));
	REPLY_ERR(req, INTR(req, lc_flush(lf->c, FH(fi))));
}

/* The last close of an open file description: its flock goes (owner = the description). */
static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "release", ino);
	struct lfuse *lf = LF(req);

	perf_inc(&lf->perf.release, 1);
	/* the description's last reference: its OFD locks go with it */
	lc_fh_release_lock_owners(lf->c, FH(fi));
	if (fi->flock_release) {
		int r = lc_lock_release_owner(lf->c, lc_fh_inode(FH(fi)), LC_LOCK_NS_FUSE, fi->lock_owner, true);

		if (r < 0)
			dout(FUSE, 1, "release: dropping the flock of %llx: %s", (unsigned long long)fi->lock_owner,
			     strerror(-r));
	}
	REPLY_ERR(req, lc_release(lf->c, FH(fi)));
}

/* ---- file locks (the MDS's, shared with every client) ------------------------ */

/*
 * Lock requests run inside INTR() like every other wait for the MDS: a
 * signal to a process blocked in F_SETLKW or flock() (FUSE_INTERRUPT)
 * makes lc_setlk cancel its wait at the MDS and answer EINTR, or 0 if the
 * MDS granted the lock first (then the process holds it).
 */
static void ll_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	LFUSE_TRACK(req, "getlk", ino);
	struct lfuse *lf = LF(req);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_lock lk = { .type = lock->l_type, .owner = fi->lock_owner, .owner_ns = LC_LOCK_NS_FUSE,
			      .pid = lock->l_pid };
	int r;

	perf_inc(&lf->perf.lock, 1);
	if (lock->l_start < 0 || lock->l_len < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	lk.start = (uint64_t)lock->l_start;
	lk.len = (uint64_t)lock->l_len;
	r = INTR(req, lc_getlk(lf->c, in, &lk));
	if (r < 0) {
		REPLY_ERR(req, r);
		return;
	}
	lock->l_type = (short)lk.type;
	lock->l_whence = SEEK_SET;
	if (lk.type != F_UNLCK) {
		/* NFS locks reach 2^64-1: past off_t they read "to EOF" here */
		lock->l_start = lk.start > (uint64_t)INT64_MAX ? INT64_MAX : (off_t)lk.start;
		lock->l_len = lk.len > (uint64_t)INT64_MAX - (uint64_t)lock->l_start ? 0 : (off_t)lk.len;
		/* the holder's pid, as Linux reports it for FUSE: the kernel
		 * maps it into the caller's pid namespace (0 if none there) */
		lock->l_pid = lk.pid;
	}
	fuse_reply_lock(req, lock);
}

static void ll_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock, int sleep)
{
	LFUSE_TRACK(req, "setlk", ino);
	struct lfuse *lf = LF(req);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_lock lk = { .type = lock->l_type, .owner = fi->lock_owner, .owner_ns = LC_LOCK_NS_FUSE,
			      .pid = lock->l_pid };

	perf_inc(&lf->perf.lock, 1);
	if (lock->l_start < 0 || lock->l_len < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	lk.start = (uint64_t)lock->l_start;
	lk.len = (uint64_t)lock->l_len;
	/* an OFD lock's owner is the description: its RELEASE drops it */
	if (lock->l_type != F_UNLCK && fi->fh)
		lc_fh_note_lock_owner(FH(fi), LC_LOCK_NS_FUSE, fi->lock_owner);
	REPLY_ERR(req, INTR(req, lc_setlk(lf->c, in, &lk, sleep != 0)));
}

static void ll_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	LFUSE_TRACK(req, "flock", ino);
	struct lfuse *lf = LF(req);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_lock lk = { .owner = fi->lock_owner, .owner_ns = LC_LOCK_NS_FUSE, .flock = true,
			      .pid = fuse_req_ctx(req)->pid };

	perf_inc(&lf->perf.lock, 1);
	switch (op & (LOCK_SH | LOCK_EX | LOCK_UN)) {
	case LOCK_SH:
		lk.type = F_RDLCK;
		break;
	case LOCK_EX:
		lk.type = F_WRLCK;
		break;
	case LOCK_UN:
		lk.type = F_UNLCK;
		break;
	default:
		fuse_reply_err(req, EINVAL);
		return;
	}
	REPLY_ERR(req, INTR(req, lc_setlk(lf->c, in, &lk, !(op & LOCK_NB) && lk.type != F_UNLCK)));
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "fsync", ino);
	(void)ino;
	perf_inc(&LF(req)->perf.fsync, 1);
	REPLY_ERR(req, INTR(req, lc_fsync(LF(req)->c, FH(fi), datasync != 0)));
}

/* ---- directories --------------------------------------------------------- */

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "opendir", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, opendir);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;

	if (lf->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* A cached listing is served by the kernel without asking us, so read
	 * permission is checked here, at open, as the kernel would with
	 * default_permissions. */
	if (!lf->default_permissions) {
		struct lc_cred cr;
		int r;

		get_cred(lf, req, &cr);
		r = INTR(req, lc_access(lf->c, in, R_OK, &cr));
		if (r < 0) {
			REPLY_ERR(req, r);
			return;
		}
	}
	/* No per-open state: offsets are client cookies, valid across opens.
	 * With cache_readdir the kernel keeps the listing in the directory's
	 * page cache and serves later opendir/readdir from it; it drops it when
	 * the directory's mtime changes (AUTO_INVAL_DATA checks it against the
	 * attributes, refreshed after attr_timeout) or on inval_inode. */
	fi->fh = 0;
	if (lf->cache_readdir) {
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
	}
	fuse_reply_open(req, fi);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "releasedir", ino);
	(void)ino;
	(void)fi;
	perf_inc(&LF(req)->perf.other, 1);
	fuse_reply_err(req, 0);
}

static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "fsyncdir", ino);
	struct lfuse *lf = LF(req);
	struct lc_inode *dir = node(lf, req, ino);
	if (!dir)
		return;

	(void)datasync;
	(void)fi;
	/* This directory's changes are journaled; other files' data is theirs
	 * to fsync (libfuse 3.14 has no SYNCFS, and the kernel sends it to
	 * virtiofs only: `sync` cannot reach us; the admin socket's `sync`
	 * writes everything back) */
	perf_inc(&lf->perf.fsync, 1);
	REPLY_ERR(req, INTR(req, lc_fsync_dir(lf->c, dir)));
}

struct rd_ctx {
	struct lfuse *lf;
	fuse_req_t req;
	struct lc_inode *dir;
	bool plus;
	char *buf;
	size_t size, pos;
	/* readdirplus: references handed over in this buffer, dropped again if
	 * the reply does not reach the kernel */
	struct lc_inode **ins;
	size_t nins, cap;
};

static int rd_fill(void *arg, const char *name, struct lc_inode *in, const struct lc_attr *a,
		   uint64_t next_cookie)
{
	struct rd_ctx *rc = arg;
	off_t off = (off_t)(next_cookie + DOT_OFFSETS);
	size_t n, room = rc->size - rc->pos;

	if (!rc->plus) {
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = a->ino;
		st.st_mode = a->mode & S_IFMT;
		n = fuse_add_direntry(rc->req, rc->buf + rc->pos, room, name, &st, off);
		if (n > room)
			return 1;
		rc->pos += n;
		return 0;
	}
	if (rc->nins == rc->cap)
		return 1; /* cannot happen (cap covers the smallest entry), but never leak */
	struct fuse_entry_param e;
	fill_entry(rc->lf, rc->dir, name, in, a, &e);
	n = fuse_add_direntry_plus(rc->req, rc->buf + rc->pos, room, name, &e, off);
	if (n > room)
		return 1; /* lc_readdir drops the reference */
	rc->pos += n;
	if (in == rc->lf->root) {
		lc_put(rc->lf->c, in);
	} else {
		lc_kernel_hand(in, 1);
		rc->ins[rc->nins++] = in;
	}
	return 0;
}

static int add_dot(struct rd_ctx *rc, const char *name, uint64_t ino, off_t off)
{
	struct stat st;
	size_t n, room = rc->size - rc->pos;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = S_IFDIR;
	if (rc->plus) {
		/* node id 0: the kernel creates no dentry, counts no lookup */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.attr = st;
		n = fuse_add_direntry_plus(rc->req, rc->buf + rc->pos, room, name, &e, off);
	} else {
		n = fuse_add_direntry(rc->req, rc->buf + rc->pos, room, name, &st, off);
	}
	if (n > room)
		return 1;
	rc->pos += n;
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct lfuse *lf = LF(req);
	struct lc_inode *dir = node(lf, req, ino);
	if (!dir)
		return;
	struct rd_ctx rc = {.lf = lf, .req = req, .dir = dir, .plus = plus, .size = size};
	struct lc_cred cr;
	bool eof = false;
	int r = 0;

	struct lfuse_timer lfuse_timer_ __attribute__((cleanup(lfuse_timer_done), unused)) =
		lfuse_timer_start(plus ? &lf->perf.readdirplus_lat : &lf->perf.readdir_lat,
				  plus ? &lf->perf.readdirplus_cpu : &lf->perf.readdir_cpu);

	if (plus)
		perf_inc(&lf->perf.readdirplus, 1);
	else
		perf_inc(&lf->perf.readdir, 1);
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc.buf = malloc(size ? size : 1);
	if (plus) {
		/* a direntplus is at least 128 bytes of fuse_entry_out plus a dirent */
		rc.cap = size / 128 + 1;
		rc.ins = malloc(rc.cap * sizeof(*rc.ins));
	}
	if (!rc.buf || (plus && !rc.ins)) {
		free(rc.buf);
		free(rc.ins);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	get_cred(lf, req, &cr);
	if (off == 0 && add_dot(&rc, ".", lc_ino(dir), 1))
		goto reply;
	if (off <= 1) {
		/* glibc hides entries with inode number 0, so ".." needs a number:
		 * the root's own, else FUSE_UNKNOWN_INO, as libfuse does.  Asking
		 * the MDS (lc_lookup_parent) would cost a round trip per listing
		 * for a number nothing uses. */
		uint64_t pino = dir == lf->root ? lf->root_ino : 0xffffffffu;

		if (add_dot(&rc, "..", pino, DOT_OFFSETS))
			goto reply;
	}
	r = INTR(req, lc_readdir(lf->c, dir, off >= DOT_OFFSETS ? (uint64_t)off - DOT_OFFSETS : 0, plus, &cr,
		       rd_fill, &rc, &eof));
	if (r < 0 && rc.pos == 0) {
		free(rc.buf);
		free(rc.ins);
		REPLY_ERR(req, r);
		return;
	}
reply:
	if (fuse_reply_buf(req, rc.buf, rc.pos) != 0)
		for (size_t i = 0; i < rc.nins; i++) {
			lc_kernel_hand(rc.ins[i], -1);
			lc_put(lf->c, rc.ins[i]);
		}
	free(rc.buf);
	free(rc.ins);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "readdir", ino);
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	LFUSE_TRACK(req, "readdirplus", ino);
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

/* ---- filesystem, xattrs, access --------------------------------------- */

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	LFUSE_TRACK(req, "statfs", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, other);
	struct statvfs st;
	int r;

	memset(&st, 0, sizeof(st));
	r = INTR(req, lc_statfs(lf->c, ino && IN(lf, ino) ? IN(lf, ino) : lf->root, &st));
	if (r < 0)
		REPLY_ERR(req, r);
	else
		fuse_reply_statfs(req, &st);
}

/*
 * security.capability (file capabilities, setcap) is stored like any xattr.
 * Before every write, truncate and fallocate the kernel asks whether the
 * file carries one (file_remove_privs; FUSE caches no answer), and removes
 * it on the writer's behalf with a REMOVEXATTR as the writer (kill-priv),
 * which the MDS grants to anyone who may write the file.  The question is
 * answered by the client library from what it knows under As, so small
 * writes cost no MDS round trip (lc_getxattr).
 */
/*
 * chattr and lsattr: the kernel sends FS_IOC_GETFLAGS/SETFLAGS (and the
 * FSGETXATTR/FSSETXATTR pair, xfs_io's) as FUSE_IOCTL through its fileattr
 * operations, with a 4-byte flags word (or a struct fsxattr) in and out.
 * Immutable and append-only are kept by the MDS for every client
 * (lc_set_flags); other flags are not supported, other ioctls are ENOTTY.
 */
#define XFLAGS_OURS (FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND)

static uint32_t xflags_of(uint32_t flags)
{
	return ((flags & FS_IMMUTABLE_FL) ? FS_XFLAG_IMMUTABLE : 0) | ((flags & FS_APPEND_FL) ? FS_XFLAG_APPEND : 0);
}

static void ll_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg, struct fuse_file_info *fi, unsigned flags,
		     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	LFUSE_TRACK(req, "ioctl", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, other);
	struct lc_inode *in = IN(lf, ino);
	struct lc_cred cr;
	struct fsxattr x;
	uint32_t f = 0;
	int r;

	(void)arg;
	(void)fi;
	(void)flags;
	get_cred(lf, req, &cr);
	switch (cmd) {
	case FS_IOC_GETFLAGS:
		if (out_bufsz < sizeof(f)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		r = INTR(req, lc_get_flags(lf->c, in, &f));
		if (r < 0)
			REPLY_ERR(req, r);
		else
			fuse_reply_ioctl(req, 0, &f, sizeof(f));
		return;
	case FS_IOC_SETFLAGS:
		if (in_bufsz < sizeof(f)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(&f, in_buf, sizeof(f));
		r = INTR(req, lc_set_flags(lf->c, in, f, &cr));
		if (r < 0)
			REPLY_ERR(req, r);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	case FS_IOC_FSGETXATTR:
		if (out_bufsz < sizeof(x)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		r = INTR(req, lc_get_flags(lf->c, in, &f));
		if (r < 0) {
			REPLY_ERR(req, r);
			return;
		}
		memset(&x, 0, sizeof(x));
		x.fsx_xflags = xflags_of(f);
		fuse_reply_ioctl(req, 0, &x, sizeof(x));
		return;
	case FS_IOC_FSSETXATTR:
		if (in_bufsz < sizeof(x)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(&x, in_buf, sizeof(x));
		if ((x.fsx_xflags & ~(uint32_t)XFLAGS_OURS) || x.fsx_extsize || x.fsx_projid || x.fsx_cowextsize) {
			fuse_reply_err(req, EOPNOTSUPP);
			return;
		}
		f = ((x.fsx_xflags & FS_XFLAG_IMMUTABLE) ? FS_IMMUTABLE_FL : 0) |
		    ((x.fsx_xflags & FS_XFLAG_APPEND) ? FS_APPEND_FL : 0);
		r = INTR(req, lc_set_flags(lf->c, in, f, &cr));
		if (r < 0)
			REPLY_ERR(req, r);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	default:
		fuse_reply_err(req, ENOTTY);
		return;
	}
}

/*
 * Names a mount refuses (EOPNOTSUPP for get, set and remove; left out of
 * listxattr, so that every answer agrees), as a filesystem without that
 * feature does.  Each ls -l asks both of every file it lists (getfilecon,
 * file_has_acl), a FUSE round trip the kernel never caches for a cold
 * inode; coreutils remembers an EOPNOTSUPP per device and asks no more.
 *
 * - security.selinux with fuse_selinux_xattr off (main.c), as NFS without
 *   labeled NFS.  Other security.* names (security.capability) go on.
 * - system.posix_acl_access and system.posix_acl_default without -o acl,
 *   as ext4 mounted noacl and ceph-fuse without client_acl_type: ACLs
 *   through the mount are what -o acl turns on.  The kernel passes them on
 *   to a FUSE filesystem without FUSE_POSIX_ACL for a mount in the initial
 *   user namespace (it refuses them itself in others), which made them
 *   half there (readable and settable, never cached).  ACLs set through an
 *   -o acl mount or the gateway stay in the MDS, which still enforces them.
 *   (coreutils since 9.6 asks listxattr of every file instead, which this
 *   does not save; 9.1, Debian 12's, asks getxattr.)
 */
#define SELINUX_XATTR "security.selinux"
#define ACL_ACCESS_XATTR "system.posix_acl_access"
#define ACL_DEFAULT_XATTR "system.posix_acl_default"

static bool xattr_refused_n(const struct lfuse *lf, const char *name, size_t len)
{
#define IS(lit) (len == sizeof(lit) - 1 && !memcmp(name, lit, len))
	if (lf->no_selinux_xattr && IS(SELINUX_XATTR))
		return true;
	return !lf->acl && (IS(ACL_ACCESS_XATTR) || IS(ACL_DEFAULT_XATTR));
#undef IS
}

static bool xattr_refused(const struct lfuse *lf, const char *name)
{
	return name && xattr_refused_n(lf, name, strlen(name));
}

/* A set or remove refused: an ACL name without -o acl is someone's
 * setfacl, and says once in the log what would make it work. */
static void xattr_refused_change(struct lfuse *lf, const char *name)
{
	if (!lf->acl && strncmp(name, "system.posix_acl_", 17) == 0 &&
	    !atomic_exchange_explicit(&lf->acl_refusal_said, true, memory_order_relaxed))
		dout(FUSE, 0, "%s refused (EOPNOTSUPP): POSIX ACLs through this mount need -o acl (fuse_acl = true); "
			      "the MDS still enforces ACLs set through other mounts or the gateway", name);
}

/* whether listxattr has names to leave out */
static bool xattr_refuses_any(const struct lfuse *lf)
{
	return lf->no_selinux_xattr || !lf->acl;
}

static bool read_needs_no_groups(const char *name)
{
	return !strncmp(name, "security.", 9) || !strncmp(name, "trusted.", 8) || !strcmp(name, ACL_ACCESS_XATTR) ||
	       !strcmp(name, ACL_DEFAULT_XATTR);
}

static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	LFUSE_TRACK(req, "setxattr", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, xattr);
	if (xattr_refused(lf, name)) {
		xattr_refused_change(lf, name);
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;

	get_cred(lf, req, &cr);
	REPLY_ERR(req, INTR(req, lc_setxattr(lf->c, in, name, value, size, flags, &cr)));
}

static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	LFUSE_TRACK(req, "getxattr", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, xattr);
	if (xattr_refused(lf, name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;
	char *buf = NULL;
	ssize_t n;

	/* ls -l as a user asks two names of every file: the groups, a file
	 * read of /proc per request, decide only reads of user.* (the MDS's
	 * xattr_perm; the others check the uid or nothing) */
	get_cred_groups(lf, req, &cr, !read_needs_no_groups(name));
	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	n = INTR(req, lc_getxattr(lf->c, in, name, buf, size, &cr));
	if (n < 0)
		REPLY_ERR(req, (int)n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else if ((size_t)n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* drop the refused names from the list @b of @n bytes, in place; the new length */
static size_t filter_refused(const struct lfuse *lf, char *b, size_t n)
{
	size_t w = 0;

	for (size_t r = 0; r < n;) {
		size_t len = strnlen(b + r, n - r);
		size_t l = len < n - r ? len + 1 : len;

		if (!xattr_refused_n(lf, b + r, len)) {
			memmove(b + w, b + r, l);
			w += l;
		}
		r += l;
	}
	return w;
}

/*
 * The names of @in's xattrs but the refused ones, in *@out (malloc'ed).
 * A size probe (@size 0) gets the length a read will return, so it reads
 * the whole list; a read tries one fetch into @size bytes first, and reads
 * the whole list only when the unfiltered one does not fit (ERANGE).
 */
static ssize_t list_without_refused(fuse_req_t req, struct lfuse *lf, struct lc_inode *in, const struct lc_cred *cr,
				    size_t size, char **out)
{
	if (size) {
		char *b = malloc(size);
		ssize_t m;

		if (!b)
			return -ENOMEM;
		m = INTR(req, lc_listxattr(lf->c, in, b, size, cr));
		if (m >= 0 && (size_t)m <= size) {
			*out = b;
			return (ssize_t)filter_refused(lf, b, (size_t)m);
		}
		free(b);
		if (m != -ERANGE)
			return m < 0 ? m : -EIO;
	}
	for (int tries = 0; tries < 8; tries++) {
		ssize_t n = INTR(req, lc_listxattr(lf->c, in, NULL, 0, cr)), m;
		char *b;

		if (n <= 0)
			return n;
		b = malloc((size_t)n);
		if (!b)
			return -ENOMEM;
		m = INTR(req, lc_listxattr(lf->c, in, b, (size_t)n, cr));
		if (m == -ERANGE || m > n) { /* grew in between */
			free(b);
			continue;
		}
		if (m < 0) {
			free(b);
			return m;
		}
		*out = b;
		return (ssize_t)filter_refused(lf, b, (size_t)m);
	}
	return -EAGAIN;
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	LFUSE_TRACK(req, "listxattr", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, xattr);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;
	char *buf = NULL;
	ssize_t n;

	get_cred(lf, req, &cr);
	if (xattr_refuses_any(lf)) {
		n = list_without_refused(req, lf, in, &cr, size, &buf);
	} else {
		if (size) {
			buf = malloc(size);
			if (!buf) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
		}
		n = INTR(req, lc_listxattr(lf->c, in, buf, size, &cr));
	}
	if (n < 0)
		REPLY_ERR(req, (int)n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else if ((size_t)n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	LFUSE_TRACK(req, "removexattr", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, xattr);
	if (xattr_refused(lf, name)) {
		xattr_refused_change(lf, name);
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;

	get_cred(lf, req, &cr);
	REPLY_ERR(req, INTR(req, lc_removexattr(lf->c, in, name, &cr)));
}

static void ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	LFUSE_TRACK(req, "access", ino);
	struct lfuse *lf = LF(req);
	LFUSE_OP(lf, other);
	struct lc_inode *in = node(lf, req, ino);
	if (!in)
		return;
	struct lc_cred cr;

	get_cred(lf, req, &cr);
	REPLY_ERR(req, INTR(req, lc_access(lf->c, in, mask, &cr)));
}

const struct fuse_lowlevel_ops lfuse_ops = {
	.init = ll_init,
	.destroy = ll_destroy,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.getlk = ll_getlk,
	.setlk = ll_setlk,
	.flock = ll_flock,
	.fallocate = ll_fallocate,
	.lseek = ll_lseek,
	.ioctl = ll_ioctl,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.readdirplus = ll_readdirplus,
	.releasedir = ll_releasedir,
	.fsyncdir = ll_fsyncdir,
	.statfs = ll_statfs,
	.setxattr = ll_setxattr,
	.getxattr = ll_getxattr,
	.listxattr = ll_listxattr,
	.removexattr = ll_removexattr,
	.access = ll_access,
	.create = ll_create,
};
