/*
 * lfuse.h - private to client/fuse/: the state shared by the FUSE frontend's
 * files.
 *
 *   main.c     command line, -o options, daemonizing, mount and teardown
 *   ops.c      the libfuse lowlevel operations, each mapped onto one lc_* call
 *   inval.c    the invalidation thread: lc_callbacks -> fuse_lowlevel_notify_*
 *   nfs_hook.c starting the embedded NFS gateway (--nfs / --no-mount)
 *   tmpfile_hook.c  FUSE_TMPFILE passed to ll_create (libfuse 3.14 has no op for it)
 *   admin.c    the "fuse" perf counters and admin socket commands
 *
 * Node ids: the kernel's node id of an inode is the address of its struct
 * lc_inode, except the mount root, which is FUSE_ROOT_ID.  Every node id the
 * kernel holds carries one client reference per lookup the kernel counts
 * (lookup, create, mknod, mkdir, symlink, link, readdirplus entries), and
 * FORGET drops them with lc_forget().  So a node id is a valid pointer for as
 * long as the kernel may send it, and no hash lookup is needed per request.
 * The root's reference is held by struct lfuse for the mount's lifetime;
 * lookups that return the root drop their extra reference at once.
 */
#ifndef LOLIGO_CLIENT_FUSE_LFUSE_H
#define LOLIGO_CLIENT_FUSE_LFUSE_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "common/config.h"
#include "common/perf.h"
#include "common/time.h"

struct lfuse_inval;

/* Requests that reached loligo-fuse (the ones the kernel did not answer from
 * its caches), by family, and invalidations delivered: perf group "fuse". */
#define LFUSE_COUNTERS(X) \
	X(lookup) X(forget) X(getattr) X(setattr) X(namespace) X(open) X(read) X(write) \
	X(flush) X(release) X(fsync) X(opendir) X(readdir) X(readdirplus) X(xattr) X(lock) X(other) \
	X(inval_inode) X(inval_entry) X(inval_failed) X(inval_retried) X(inval_skipped) X(keep_cache) \
	X(size_pushed)

/* FUSE requests timed from their handler's start to its end (the reply): <family>_lat */
#define LFUSE_TIMED(X) \
	X(lookup) X(getattr) X(setattr) X(namespace) X(open) X(read) X(write) \
	X(opendir) X(readdir) X(readdirplus) X(xattr) X(other)

struct lfuse_perf {
#define X(n) struct perf_counter n;
	LFUSE_COUNTERS(X)
#undef X
#define X(n) struct hist n##_lat, n##_cpu;
	LFUSE_TIMED(X)
#undef X
};

/* Count a request of family @n and time it until the end of the enclosing
 * block: wall time into @h, and with fuse_op_cpu the thread's CPU time into
 * @cpu (NULL: off). */
struct lfuse_timer {
	struct hist *h;
	uint64_t t0;
	struct hist *cpu;
	uint64_t c0;
};

static inline void lfuse_timer_done(struct lfuse_timer *t)
{
	hist_add(t->h, now_mono_ns() - t->t0);
	if (t->cpu)
		hist_add(t->cpu, thread_cpu_ns() - t->c0);
}

static inline struct lfuse_timer lfuse_timer_start(struct hist *lat, struct hist *cpu)
{
	struct lfuse_timer t = { lat, now_mono_ns(), NULL, 0 };

	if (cfg_bool(CFG_fuse_op_cpu)) {
		t.cpu = cpu;
		t.c0 = thread_cpu_ns();
	}
	return t;
}

/* The request is in the client's operations in flight (client.h lc_op_begin) until the handler returns. */
static inline void lfuse_op_done(struct lc_op_slot **s)
{
	lc_op_end(*s);
}

#define LFUSE_TRACK(req, name, nodeid)                                                                     \
	struct lc_op_slot *lfuse_op_ __attribute__((cleanup(lfuse_op_done), unused)) = lc_op_begin(          \
		((struct lfuse *)fuse_req_userdata(req))->c, "fuse", (name),                                  \
		lfuse_ino_of((struct lfuse *)fuse_req_userdata(req), (nodeid)))

#define LFUSE_OP(lf, n)                                                                       \
	perf_inc(&(lf)->perf.n, 1);                                                           \
	struct lfuse_timer lfuse_timer_ __attribute__((cleanup(lfuse_timer_done), unused)) = \
		lfuse_timer_start(&(lf)->perf.n##_lat, &(lf)->perf.n##_cpu)

struct lfuse {
	struct lclient *c;
	const char *mountpoint;
	struct lc_inode *root;      /* FUSE_ROOT_ID; one reference held until teardown */
	uint64_t root_ino;
	struct fuse_session *se;
	struct lfuse_inval *inval;

	/* read once at start-up from the fuse_* options */
	bool set_user_groups;       /* fetch supplementary groups for non-root callers */
	bool cache_readdir;         /* let the kernel cache directory listings */
	bool readdirplus;
	double negative_timeout;    /* kernel negative dentry caching (0: none) */
	unsigned max_write;
	unsigned max_readahead;
	atomic_bool ra_set;         /* the mount's bdi read_ahead_kb was raised to max_readahead (ops.c) */
	bool default_permissions;   /* the kernel checks permissions (-o default_permissions) */
	bool no_selinux_xattr;      /* fuse_selinux_xattr off: security.selinux refused */
	bool acl;                   /* POSIX ACLs (-o acl): FUSE_CAP_POSIX_ACL, umask sent to the MDS */
	atomic_bool acl_refusal_said; /* a set or remove of an ACL name was refused (logged once) */
	bool no_opendir;            /* set in init: the kernel takes ENOSYS from opendir as "no state" */
	struct lfuse_perf perf;
};

/* admin.c */
struct asok;
/** lfuse_register_asok - register the "fuse" perf group, and the "fuse ..." commands on @a (may be NULL). */
int lfuse_register_asok(struct lfuse *lf, struct asok *a);
void lfuse_perf_unregister(void);

/* ops.c */
extern const struct fuse_lowlevel_ops lfuse_ops;

/* node ids are inode numbers, the root's FUSE_ROOT_ID (ops.c, IN()) */
static inline fuse_ino_t lfuse_nodeid(const struct lfuse *lf, struct lc_inode *in)
{
	return in == lf->root ? FUSE_ROOT_ID : (fuse_ino_t)lc_ino(in);
}

/* the inode number behind a node id */
static inline uint64_t lfuse_ino_of(const struct lfuse *lf, fuse_ino_t nodeid)
{
	return nodeid == FUSE_ROOT_ID ? lf->root_ino : (uint64_t)nodeid;
}

/* inval.c: lc_callbacks are queued and delivered from a thread of their own,
 * never from the thread that reported them (which may hold client locks, or be
 * a FUSE worker the kernel is waiting on). */
int lfuse_inval_start(struct lfuse *lf);
/** lfuse_inval_stop - deliver nothing more, join the thread.  Callbacks after it are dropped. */
void lfuse_inval_stop(struct lfuse *lf);
/**
 * lfuse_inval_drain - deliver what is queued now, in the caller's thread.
 * Only after the reply to the request being handled: a notification blocks
 * on the inode locks the kernel holds until that reply, so this makes the
 * kernel drop what a request of ours made stale (a chmod closing a
 * directory, a rename into one) right as the syscall finishes, not when the
 * invalidation thread next runs.
 */
void lfuse_inval_drain(struct lfuse *lf);
/**
 * lfuse_inval_written - drop [@off, @off+@len) of @nodeid from the kernel's
 * page cache now, in the caller's thread: a FUSE worker answering a write
 * of a handle the kernel caches nothing through (lc_fh_kernel_direct),
 * before it replies.  Only there: such a write holds no page lock and no
 * inode lock the notification needs (a buffered write holds its pages
 * locked until the reply, so this would wait for itself).
 */
void lfuse_inval_written(struct lfuse *lf, fuse_ino_t nodeid, off_t off, off_t len);
/** lfuse_inval_free - free the stopped queue; after the client can no longer call back. */
void lfuse_inval_free(struct lfuse *lf);
extern const struct lc_callbacks lfuse_inval_callbacks;

/* tmpfile_hook.c */
/**
 * lfuse_tmpfile_hook - after fuse_session_mount: FUSE_TMPFILE requests reach
 * the create op as a CREATE of the name LFUSE_TMPFILE_NAME (libfuse 3.14
 * has no tmpfile op).  Return: 0 or -errno.
 */
int lfuse_tmpfile_hook(struct fuse_session *se);
#define LFUSE_TMPFILE_NAME "/"

/* nfs_hook.c */
struct asok;
/**
 * lfuse_nfs_start - start the embedded NFS gateway on @addr_port for @c.
 * Return: 0, or -ENOSYS when this binary was built without nfs_gw (a message
 * has been printed), or another -errno.
 */
int lfuse_nfs_start(const char *addr_port, struct lclient *c, struct asok *asok, void **gw);
void lfuse_nfs_stop(void *gw);
/**
 * lfuse_nfs_reload - read nfs_exports again and serve it if it checks out
 * (for a SIGHUP handler; `exports reload` on the admin socket does the
 * same).  Logs the outcome.  Return: 0 or -errno.  NULL @gw: nothing.
 */
int lfuse_nfs_reload(void *gw);
/**
 * lfuse_check_config - `loligo-fuse --check-config`: check what the
 * configuration gives the NFS gateway (nfs_exports) and, when the MDS
 * answers within client_mount_timeout, that every export path is a
 * directory.  Prints one line per finding on stderr, "config OK" on stdout.
 * Return: 0 valid, 1 not (the caller's exit status).
 */
int lfuse_check_config(void);
/** lfuse_nfs_check_syntax - nfs_exports parses (message on stderr if not): 0, or -EINVAL. */
int lfuse_nfs_check_syntax(void);

#endif
