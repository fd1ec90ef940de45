/*
 * client.h - libloligo-client: the filesystem client library.
 *
 * One struct lclient is one mounted client: an MDS session (mds_client.c),
 * the inode and dentry caches, and direct access to the data pool of the
 * object store.  The FUSE frontend (client/fuse/) and the NFS gateway
 * (nfs_gw/) are both built on this API alone and share one lclient when they
 * run in the same process, so they see one cache and one session.
 *
 * The API is shaped like libcephfs' ll_* calls: operations take inode
 * references (struct lc_inode *) rather than paths.  Every function that
 * hands out an inode hands out a new reference; drop it with lc_put()
 * (lc_forget() drops n at once, for FUSE's forget nlookup).  Every operation
 * takes the caller's credentials and the MDS checks permissions with them.
 *
 * Returns: 0 (or a byte count) on success, -errno on failure.
 * Threading: every call may be made from any thread concurrently.
 */
#ifndef LOLIGO_CLIENT_CLIENT_H
#define LOLIGO_CLIENT_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/types.h>
#include <time.h>

struct lclient;
struct lc_inode;
struct lc_fh;
struct asok;
struct store_pool;

#define LC_MAX_GROUPS 64

struct lc_cred {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[LC_MAX_GROUPS];
	pid_t pid;
	/* creates: the mode is unmasked, the MDS applies @umask unless the
	 * parent has a default ACL (a FUSE mount with POSIX ACLs) */
	bool umask_set;
	mode_t umask;
};

struct lc_attr {
	uint64_t ino;
	uint64_t generation;       /* with ino: stable identity for NFS file handles */
	uint64_t change;           /* NFS change attribute: bumps on every change */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint32_t nlink;
	uint64_t size;
	uint64_t blocks;           /* 512-byte units */
	uint32_t blksize;
	dev_t rdev;
	struct timespec atime, mtime, ctime, btime;
	bool may_acl;              /* may carry a POSIX ACL: has xattrs, or not known */
};

/* lc_setattr mask */
#define LC_SET_MODE   0x01
#define LC_SET_UID    0x02
#define LC_SET_GID    0x04
#define LC_SET_SIZE   0x08
#define LC_SET_ATIME  0x10
#define LC_SET_MTIME  0x20
#define LC_SET_ATIME_NOW 0x40
#define LC_SET_MTIME_NOW 0x80
#define LC_SET_CHOWN  0x100   /* a chown (with LC_SET_UID/GID, or alone: chown(-1, -1)): setuid/setgid go as chown(2) clears them */

/* Invalidation callbacks: the client calls them when a cap revoke or a
 * change seen from the MDS makes the frontend's kernel caches stale, and
 * when another frontend of this client (the NFS gateway beside FUSE)
 * changed something through the library: every request a thread serves
 * between lc_op_begin and lc_op_end with a @who other than @who here. */
struct lc_callbacks {
	/* the registering frontend, as it names itself to lc_op_begin ("fuse");
	 * NULL: every frontend's request is another's */
	const char *who;
	void (*inval_inode)(void *arg, uint64_t ino, off_t off, off_t len);
	void (*inval_dentry)(void *arg, uint64_t parent_ino, const char *name);
	/* optional: wait (at most @timeout_ms) until the invalidations passed
	 * so far have reached the kernel, of names too if @names (else of
	 * inodes only); a revoke is acked after it */
	void (*inval_wait)(void *arg, int timeout_ms, bool names);
};

/*
 * Interrupting a wait for the MDS (FUSE_INTERRUPT: a signal to the process
 * that made the call).  Waits for the MDS are hard, as on ceph-fuse or a
 * hard NFS mount: a request waits until the MDS is back.  A frontend that
 * can tell when the caller gave up wraps the lc_* call:
 *
 *	lc_intr_begin(&it, arm, disarm, req);    on the calling thread
 *	r = lc_lookup(...);
 *	lc_intr_end(&it);                         before replying
 *
 * When a wait for the MDS inside the call lasts longer than a moment, the
 * library calls @arm once, on that thread, and the frontend registers a
 * callback that calls lc_intr_fire(&it) (fuse_req_interrupt_func).  From
 * then on (or at once, if it fired already) the wait ends with -EINTR: an
 * unanswered request is given up (it may still be carried out by the MDS,
 * as with NFS intr), a wait for SAFE just stops waiting.  lc_intr_end()
 * calls @disarm first if @arm was called, so the frontend takes its
 * callback back before the token goes away.  Waits for the object store
 * are bounded by the store's own timeouts and are not interrupted.
 */
struct lc_intr {
	void (*arm)(struct lc_intr *it);
	void (*disarm)(struct lc_intr *it);
	void *arg;                    /* the frontend's (FUSE: its fuse_req_t) */
	/* private to the client library */
	pthread_mutex_t lock;         /* protects wait_lock/wait_cond */
	_Atomic bool fired;
	bool armed;                   /* only the calling thread reads and writes it */
	pthread_mutex_t *wait_lock;   /* the wait in progress, to wake it */
	pthread_cond_t *wait_cond;
};

/** lc_intr_begin - make @it the calling thread's interrupt for the next lc_* call. */
void lc_intr_begin(struct lc_intr *it, void (*arm)(struct lc_intr *), void (*disarm)(struct lc_intr *), void *arg);
/** lc_intr_end - the call is over: disarm (if armed) and forget @it. */
void lc_intr_end(struct lc_intr *it);
/** lc_intr_fire - the caller was interrupted: end the wait with -EINTR.  Any thread, while armed. */
void lc_intr_fire(struct lc_intr *it);

/* ---- lifetime --------------------------------------------------------- */

/**
 * lclient_check_mds_addr - check client_mds_addr (one host:port, or a
 * comma-separated list of the filesystem's MDS daemons) before anything
 * starts.  Return: 0, or -EINVAL with @err naming the bad entry.
 */
int lclient_check_mds_addr(char *err, size_t errlen);
/**
 * lclient_create - build a client from the process configuration ([client]
 * options: mds address, client_mountpoint, cache sizes, timeouts; [global]
 * store options for the data pool).  Does no I/O.
 */
int lclient_create(struct lclient **out);

/**
 * lclient_check_keyring - the client's keyring (client_keyring, for
 * client_auth_name) as the mount will read it, so a daemon refuses a bad
 * one at start: 0 (its key is there, or no keyring: no key), or -errno
 * with @err saying what is wrong and what to do (-EPERM: group or others
 * may access the file).  Reads the file only.
 */
int lclient_check_keyring(char *err, size_t errlen);

/**
 * lclient_mount - open the object store, open an MDS session (bounded by
 * client_mount_timeout: a dead MDS gives -ETIMEDOUT or -ECONNREFUSED, never
 * a hang) and resolve @root_path ("/" or client_mountpoint) as the root.
 */
int lclient_mount(struct lclient *c, const char *root_path);

/**
 * lclient_set_mount_point - where this client is mounted (the FUSE mount
 * point, or "nfs ADDR:PORT" for a gateway alone), for the MDS's `session ls`.
 * Call before lclient_mount().  Return: 0 or -ENOMEM.
 */
int lclient_set_mount_point(struct lclient *c, const char *where);

/**
 * lclient_claim - become the one live client of this client_auth_name and
 * mount @key (the realpath of the FUSE mount point, or "nfs ADDR:PORT" for
 * a gateway alone) on this host: take its lock file in client_reclaim_dir
 * (client/reclaim.c) for the life of the process.  If a dead predecessor's
 * session is named there, lclient_mount() has the MDS evict it before our
 * session opens (reclaim), so nothing waits for it.  Call before anything
 * with effects outside the process (admin socket, mount).
 * Return: 0 (also when client_reclaim_dir is "" or cannot be made: no
 * reclaim, logged), -EBUSY when another live process holds the lock (@err
 * says which and where), or another -errno with @err.
 */
int lclient_claim(struct lclient *c, const char *key, char *err, size_t errlen);

/**
 * lclient_shutdown_begin - the frontend is stopping (SIGTERM, an unmount from
 * outside): from now, every wait of this client for the MDS (a request, a
 * size flush, a wait for SAFE, a file lock) ends within one
 * client_unmount_timeout, counted from the first call, with EIO for a
 * request never answered, and lclient_unmount() counts its own bound from
 * the same moment.  Call it before waiting for frontend threads that may
 * be in such a wait (libfuse joins its workers before its loop returns).
 * Any thread, never blocks; later calls do nothing.
 */
void lclient_shutdown_begin(struct lclient *c);
/**
 * lclient_unmount - flush dirty data, wait for SAFE replies, close the
 * session, all within client_unmount_timeout (from lclient_shutdown_begin()
 * if that was called).
 */
void lclient_unmount(struct lclient *c);
void lclient_destroy(struct lclient *c);

void lclient_set_callbacks(struct lclient *c, const struct lc_callbacks *cb, void *arg);
/**
 * lclient_set_search_unchecked_ok - every caller that can reach the
 * frontend's kernel cache passes every directory search check (or the
 * kernel checks search permission itself): lc_dentry_timeout and
 * lc_negative_timeout may then hand out names in directories not everyone
 * may search (GNU tar extracts into 0700 directories and fixes their modes
 * at the end: without this, every path walk below them was a FUSE LOOKUP,
 * six per file of an untar).  Call before the frontend serves.
 */
void lclient_set_search_unchecked_ok(struct lclient *c, bool ok);

/**
 * lclient_set_break_hook - @fn(@arg, ino, write, wait) is called by
 * lc_break_for_write() (write true) before a frontend changes a file's
 * data and by lc_break_for_read() (write false) after one opened it for
 * reading (the NFS gateway recalls its delegations on it there: every one
 * for a writer, write delegations for a reader).  NULL unsets it, after
 * the calls in flight have returned.
 */
void lclient_set_break_hook(struct lclient *c, int (*fn)(void *arg, uint64_t ino, bool write, bool wait),
			    void *arg);
/**
 * lc_break_for_write - the calling frontend is about to write @ino (FUSE:
 * opened it for writing, truncates it; NFSv3: WRITE, SETATTR of the size):
 * the hook's owner gives up what promises nobody writes (NFS read
 * delegations).  @wait: block until they are gone (bounded by the NFS
 * lease); otherwise only start it.  No client lock held.
 * Return: 0, or -EAGAIN (!@wait and some are still out: retry later).
 */
int lc_break_for_write(struct lclient *c, uint64_t ino, bool wait);
/**
 * lc_break_for_read - the calling frontend opened @ino for reading (FUSE)
 * or reads it (NFSv3 READ): the hook's owner gives up what promises nobody
 * else opens it (NFS write delegations), writing back what its clients
 * buffered there.  @wait and the return value as lc_break_for_write.
 */
int lc_break_for_read(struct lclient *c, uint64_t ino, bool wait);
/** lc_inode_writers - open handles of @in with write access, every frontend's. */
int lc_inode_writers(struct lc_inode *in);
/** lc_inode_opens - open handles of @in, every frontend's. */
int lc_inode_opens(struct lc_inode *in);

/*
 * lc_notify_inode, lc_notify_entry - @in's data in [@off, @off+@len) (@len
 * 0: to the end; @off -1: attributes only) or its attributes, or the entry
 * @name in directory @dir, changed in a way the library did not see: pass
 * it on to the registered callbacks, so the registering frontend's kernel
 * caches drop it.  A frontend does not call these for changes it makes
 * through the library (lc_write, lc_setattr, lc_create, lc_mknod, lc_mkdir,
 * lc_symlink, lc_link, lc_unlink, lc_rmdir, lc_rename): the library tells
 * the registering frontend of those itself when another frontend made them
 * (struct lc_callbacks, lc_op_begin).  Cheap and non-blocking as long as
 * the callbacks are (FUSE's only queue); no client lock is held.  No-ops
 * without callbacks.
 */
void lc_notify_inode(struct lclient *c, struct lc_inode *in, off_t off, off_t len);
void lc_notify_entry(struct lclient *c, struct lc_inode *dir, const char *name);

/** lclient_register_asok - add the client's commands (mds_requests, mds_sessions, dump cache) to @a. */
int lclient_register_asok(struct lclient *c, struct asok *a);

/* ---- inodes ------------------------------------------------------------ */

/** lc_root - the mount's root inode (a new reference). */
struct lc_inode *lc_root(struct lclient *c);
/**
 * lclient_data_pool - the data pool this client has open (after
 * lclient_mount), for a frontend's own small objects (the NFS gateway's
 * client records).  Owned by the client: valid until lclient_destroy.
 */
struct store_pool *lclient_data_pool(struct lclient *c);
/**
 * lclient_session_ident - our MDS session's id (0 while none is open) and
 * its client uuid in @uuid (16 bytes), which lclient_reclaim_session() of
 * another client names it by.
 */
uint64_t lclient_session_ident(struct lclient *c, uint8_t *uuid);
/**
 * lclient_reclaim_session - have the MDS evict session @sid (client uuid
 * @uuid, of our authenticated name), blocklisted and fenced in the data
 * store first, as `client evict` does: another process whose clients we
 * take over and which may still be alive (the NFS gateway's takeover).
 * Return: 0 (evicted, or gone already), -EPERM (another name), -EOPNOTSUPP
 * (an MDS older than this), -errno.  Blocks; no lock held.
 */
int lclient_reclaim_session(struct lclient *c, uint64_t sid, const uint8_t *uuid);
void lc_get(struct lc_inode *in);
void lc_put(struct lclient *c, struct lc_inode *in);
/** lc_forget - drop @n references at once (FUSE forget). */
void lc_forget(struct lclient *c, struct lc_inode *in, uint64_t n);
uint64_t lc_ino(const struct lc_inode *in);
/** lc_ino_to_inode - the cached inode for @ino with a new reference, or NULL. */
struct lc_inode *lc_ino_to_inode(struct lclient *c, uint64_t ino);
/**
 * lc_ino_peek - the cached inode for @ino without a reference, or NULL: only
 * for a caller that knows a reference is held meanwhile (a frontend's node
 * id, which its kernel holds a lookup of).
 */
struct lc_inode *lc_ino_peek(struct lclient *c, uint64_t ino);
/**
 * lc_cached_attr - @in's attributes as this client last knew them (with its
 * own buffered size and mtime), whether or not they are still valid; no
 * MDS round trip.  For an inode the MDS may no longer find (an open file
 * that was removed), where lc_getattr() would fail.
 */
void lc_cached_attr(struct lc_inode *in, struct lc_attr *attr);

int lc_lookup(struct lclient *c, struct lc_inode *dir, const char *name, const struct lc_cred *cr,
	      struct lc_attr *attr, struct lc_inode **out);
/** lc_lookup_ino - inode by number (NFS file handles); -ESTALE if gone or generation differs (gen 0: any). */
int lc_lookup_ino(struct lclient *c, uint64_t ino, uint64_t generation, struct lc_attr *attr,
		  struct lc_inode **out);
/**
 * lc_lookup_parent - parent directory of @dir (root's parent is root).  Any
 * inode with a primary link works (a file too); one with none (hard-linked,
 * or removed) is -ESTALE.
 */
int lc_lookup_parent(struct lclient *c, struct lc_inode *dir, struct lc_attr *attr, struct lc_inode **out);
/**
 * lc_ns_epoch - a counter that moves whenever this client learns that a
 * name may have moved or gone: its own RENAME/UNLINK/RMDIR succeeded, the
 * MDS revoked one of its dentry leases or a directory's caps.  What was
 * found out about the namespace (e.g. "inode X lies below directory D",
 * the NFS gateway's subtree check) while it read E holds while it still
 * reads E - for the names this client caches; a change nobody told it
 * about needs a bound of its own.  No lock; never goes back.
 */
uint64_t lc_ns_epoch(struct lclient *c);

/** lc_getattr - @force: ask the MDS even if the cache is valid. */
int lc_getattr(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr, bool force,
	       struct lc_attr *attr);
/**
 * lc_setattr - change @in's attributes in @mask (LC_SET_*) to those of @set,
 * as @cr, with the checks of chown(2), chmod(2), truncate(2) and
 * utimensat(2) (the MDS makes them): LC_SET_ATIME_NOW|LC_SET_MTIME_NOW
 * together are "touch" (owner or write permission), any other time change
 * needs ownership.  A truncate by anyone but root clears setuid/setgid.
 * lc_fsetattr - the same through an open handle: a size change through a
 * handle open for writing needs no write permission now (ftruncate on a
 * file created with mode 0).
 */
int lc_setattr(struct lclient *c, struct lc_inode *in, const struct lc_attr *set, int mask,
	       const struct lc_cred *cr, struct lc_attr *attr);
int lc_fsetattr(struct lclient *c, struct lc_fh *fh, const struct lc_attr *set, int mask,
		const struct lc_cred *cr, struct lc_attr *attr);
int lc_access(struct lclient *c, struct lc_inode *in, int mask, const struct lc_cred *cr);

int lc_mknod(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, dev_t rdev,
	     const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out);
int lc_mkdir(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode,
	     const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out);
int lc_symlink(struct lclient *c, struct lc_inode *dir, const char *name, const char *target,
	       const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out);
int lc_link(struct lclient *c, struct lc_inode *in, struct lc_inode *newdir, const char *name,
	    const struct lc_cred *cr, struct lc_attr *attr);
int lc_unlink(struct lclient *c, struct lc_inode *dir, const char *name, const struct lc_cred *cr);
int lc_rmdir(struct lclient *c, struct lc_inode *dir, const char *name, const struct lc_cred *cr);
/**
 * lc_rename - @flags: 0, RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT
 * (the old name becomes a whiteout, a char device 0/0, made by the MDS with
 * the rename), or RENAME_NOREPLACE|RENAME_WHITEOUT (Linux values).
 */
int lc_rename(struct lclient *c, struct lc_inode *olddir, const char *oldname, struct lc_inode *newdir,
	      const char *newname, unsigned int flags, const struct lc_cred *cr);
/** lc_readlink - copy the target into @buf (NUL-terminated if it fits); returns its length. */
ssize_t lc_readlink(struct lclient *c, struct lc_inode *in, char *buf, size_t size, const struct lc_cred *cr);

/*
 * lc_readdir - entries of @dir after @cookie (0: from the start), in cookie
 * order, with attributes.  For each entry @cb is called with a new inode
 * reference when @plus (else @in is NULL).  @cb returns 0 to continue, or
 * non-zero when the entry did not fit: that entry is not consumed (its
 * reference, if any, is dropped by lc_readdir) and it stops.  @next_cookie
 * resumes after the entry.  Cookies stay valid across concurrent inserts
 * and removes.  "." and ".." are not listed.  *@eof is set at the end.
 */
typedef int (*lc_readdir_cb)(void *arg, const char *name, struct lc_inode *in,
			     const struct lc_attr *attr, uint64_t next_cookie);
int lc_readdir(struct lclient *c, struct lc_inode *dir, uint64_t cookie, bool plus,
	       const struct lc_cred *cr, lc_readdir_cb cb, void *arg, bool *eof);

int lc_statfs(struct lclient *c, struct lc_inode *in, struct statvfs *st);

ssize_t lc_getxattr(struct lclient *c, struct lc_inode *in, const char *name, void *buf, size_t size,
		    const struct lc_cred *cr);
int lc_setxattr(struct lclient *c, struct lc_inode *in, const char *name, const void *val, size_t size,
		int flags, const struct lc_cred *cr);
ssize_t lc_listxattr(struct lclient *c, struct lc_inode *in, char *buf, size_t size, const struct lc_cred *cr);
int lc_removexattr(struct lclient *c, struct lc_inode *in, const char *name, const struct lc_cred *cr);

/* ---- files -------------------------------------------------------------- */

/**
 * lc_create - create and open @name in @dir (O_CREAT semantics from @flags:
 * O_EXCL gives -EEXIST if it exists).  Returns the inode and an open handle.
 */
int lc_create(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, int flags,
	      const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh);
/**
 * lc_tmpfile - make and open a regular file with no name (O_TMPFILE) with
 * @dir as its permission context.  @flags: the open flags; O_EXCL makes it
 * never linkable.  Returns the inode (nlink 0) and an open handle; its data
 * goes at the last close unless lc_link() gives it a name first.
 * Return: 0 or -errno (-EOPNOTSUPP from an MDS without the op).
 */
int lc_tmpfile(struct lclient *c, struct lc_inode *dir, mode_t mode, int flags, const struct lc_cred *cr,
	       struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh);
int lc_open(struct lclient *c, struct lc_inode *in, int flags, const struct lc_cred *cr, struct lc_fh **fh);
/** lc_read - returns bytes read (0 at EOF); holes read as zeros. */
ssize_t lc_read(struct lclient *c, struct lc_fh *fh, off_t off, size_t len, void *buf);

#define LC_RDBUF_IOV 16
/*
 * What lc_read_iov() read: @iov points into the client's own buffers (the
 * readahead chunks, or one buffer of its own), which stay valid until
 * lc_rdbuf_release().  A frontend hands iov to the kernel as it is (FUSE:
 * fuse_reply_iov), so sequential reads are not copied once more in between.
 */
struct lc_rdbuf {
	struct iovec iov[LC_RDBUF_IOV];
	int niov;
	void *hold[LC_RDBUF_IOV];   /* references on readahead chunks */
	int nhold;
	void *own;                  /* or a buffer of its own */
};
/**
 * lc_read_iov - read like lc_read() without copying out of the client's
 * buffers: @rb gets the bytes as an iovec.  Return: bytes (0 at EOF) or
 * -errno; release @rb with lc_rdbuf_release() in every case.
 */
ssize_t lc_read_iov(struct lclient *c, struct lc_fh *fh, off_t off, size_t len, struct lc_rdbuf *rb);
void lc_rdbuf_release(struct lclient *c, struct lc_rdbuf *rb);
/** lc_write - buffered (bounded in memory) unless the handle is O_SYNC/O_DIRECT; returns bytes written. */
ssize_t lc_write(struct lclient *c, struct lc_fh *fh, off_t off, size_t len, const void *buf);
/**
 * lc_kill_privs - what a write by @cr removes before it lands, as the
 * kernel's file_remove_privs(): setuid (and setgid where it means
 * something) unless @cr is root, and security.capability whoever writes.
 * For a frontend whose handles are not the writer's or whose kernel does
 * not do it (the NFS gateway: knfsd writes with the caller's credentials);
 * lc_write does the setuid part with the handle's own credentials.
 * Costs nothing for a file with none of them (their absence is cached).
 */
int lc_kill_privs(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr);
/** lc_flush - write back dirty data and report size/mtime to the MDS (close-to-open). */
int lc_flush(struct lclient *c, struct lc_fh *fh);
/** lc_fsync - data on stable storage, size/mtime reported, and (unless @datasync) the MDS reply SAFE. */
int lc_fsync(struct lclient *c, struct lc_fh *fh, bool datasync);
int lc_release(struct lclient *c, struct lc_fh *fh);

/**
 * lc_fallocate - fallocate(2) on an open handle, with vfs_fallocate()'s
 * checks in its order:
 *  - 0 and FALLOC_FL_KEEP_SIZE: the range's space is reserved in the store
 *    (store_op_allocate, from the start of each object it touches), so
 *    that writes into it do not fail for lack of space later, also once
 *    the store is full; -ENOSPC, and nothing changed, when the store
 *    cannot hold it; without KEEP_SIZE the size grows to @off+@len.  On a
 *    store that cannot reserve (RADOS): -EOPNOTSUPP;
 *  - FALLOC_FL_PUNCH_HOLE|KEEP_SIZE: the range reads as zeros, its blocks freed;
 *  - FALLOC_FL_ZERO_RANGE (and |KEEP_SIZE): zeros, the blocks kept
 *    reserved (RADOS: freed); the size grows to @off+@len without KEEP_SIZE;
 * Other modes (COLLAPSE_RANGE, INSERT_RANGE, which FUSE does not pass on
 * anyway): -EOPNOTSUPP.
 * st_blocks follows (flushed to the MDS before it returns).  Immutable
 * files: -EPERM; append-only ones: -EPERM but for 0 and KEEP_SIZE.
 * @off+@len past lc_max_file_size() is -EFBIG, as for every mode on Linux.
 */
int lc_fallocate(struct lclient *c, struct lc_fh *fh, int mode, off_t off, off_t len);
/**
 * lc_get_flags - chattr's flags of @in (MDSP_FL_*: FS_IMMUTABLE_FL,
 * FS_APPEND_FL) as the MDS has them (cached under As, else asked).
 * Return: 0 or -errno.
 */
int lc_get_flags(struct lclient *c, struct lc_inode *in, uint32_t *flags);
/**
 * lc_set_flags - FS_IOC_SETFLAGS: make @in's flags @flags (the owner or
 * root; immutable and append-only root only; other bits -EOPNOTSUPP).  The
 * MDS takes every other client's attribute and buffer caps first, so each
 * checks the new flags before it writes again.  -EOPNOTSUPP from an MDS
 * that keeps no flags.
 */
int lc_set_flags(struct lclient *c, struct lc_inode *in, uint32_t flags, const struct lc_cred *cr);

/**
 * lc_lseek_data - lseek(2)'s SEEK_DATA or SEEK_HOLE (@whence) from @off in
 * regular file @in, from the extents the MDS knows its objects hold, after
 * this client's buffered data and extent changes of @in reached it (a
 * writeback and a waited cap flush).  Holes are reported conservatively
 * (MDSP_EXT_ALIGN granules; possibly as data, never data as a hole); a file
 * whose extents are unknown, or an MDS without the op, is all data.
 * Return: 0 with *@out the offset (SEEK_HOLE: the file's size when no hole
 * comes before it); -ENXIO for @off at or past the size, negative, or
 * (SEEK_DATA) with no data from it on; -EINVAL for another @whence or not a
 * regular file; else -errno.  Blocks on the MDS; takes no lock of the
 * caller's.
 */
int lc_lseek_data(struct lclient *c, struct lc_inode *in, off_t off, int whence, off_t *out);
/**
 * lc_sync_inode - @in's buffered data written, its size and times and every
 * metadata change it depends on journaled: an fsync without an open handle
 * (NFS COMMIT of a file the client has no open state for).  Writeback
 * errors are not sampled (no handle): a later fsync reports them.
 */
int lc_sync_inode(struct lclient *c, struct lc_inode *in);
/**
 * lc_fsync_dir - fsync(2) of directory @dir: every change of its entries
 * (creates, unlinks, renames, links) and of its attributes made so far is
 * journaled.  Other files' buffered data is not written (their own fsync,
 * syncfs and sync do that).  Return: 0 or -errno (EIO: a change it
 * depended on was lost).
 */
int lc_fsync_dir(struct lclient *c, struct lc_inode *dir);
/** lc_sync_fs - every dirty byte written and every MDS reply SAFE (syncfs / NFS COMMIT). */
int lc_sync_fs(struct lclient *c);

/* ---- file locks (served by the MDS, shared with every client) --------------- */

#define LC_LOCK_NS_FUSE 0        /* owner ids: FUSE lock_owner values */
#define LC_LOCK_NS_NFS  1        /* owner ids: the NFS gateway's lock-owners */

/* One lock, or a request for one.  @start/@len as fcntl's (len 0: to EOF),
 * but unsigned: NFS ranges reach 2^64-1. */
struct lc_lock {
	int type;                /* F_RDLCK, F_WRLCK, F_UNLCK */
	uint64_t start, len;
	uint64_t owner;          /* FUSE lock_owner, an NFS lock-owner id */
	uint32_t owner_ns;       /* LC_LOCK_NS_* */
	pid_t pid;               /* the locking process */
	bool flock;              /* flock(2) (whole file), not fcntl */
	/* lc_getlk: who holds the conflicting lock */
	uint64_t holder_session; /* the MDS session of its client (ours or another's) */
	uint32_t holder_ns;
};

/**
 * lc_getlk - F_GETLK: the first lock of another owner (on any client) that
 * conflicts with @lk, written back into @lk (type, start, len, pid,
 * holder_*), or @lk->type = F_UNLCK.  Return: 0, -EINVAL, -EIO (evicted).
 */
int lc_getlk(struct lclient *c, struct lc_inode *in, struct lc_lock *lk);
/**
 * lc_setlk - F_SETLK / F_SETLKW / flock(2) on @in, as the MDS grants it to
 * this client and its other clients: -EAGAIN when another owner's lock
 * conflicts (unless @wait: then it waits until granted, -EDEADLK if that
 * would close a cycle of waits; -EINTR when the calling thread's lc_intr
 * fired: the wait is cancelled at the MDS, unless it granted the lock
 * first, then 0), -ENOLCK past the MDS's per-session limits, -EIO when the file's
 * locks were lost (an eviction, a restart we came back too late from)
 * until they are unlocked, or when evicted.  An unlock of nothing held
 * costs no MDS round trip.
 */
int lc_setlk(struct lclient *c, struct lc_inode *in, const struct lc_lock *lk, bool wait);
/**
 * lc_lock_release_owner - the owner closed the file: drop every fcntl
 * (@flock false) or flock lock it holds on @in (FUSE flush/release, the
 * NFS gateway's lock-owner going away).  No MDS round trip if it holds
 * none.  Return: 0 or -errno.
 */
int lc_lock_release_owner(struct lclient *c, struct lc_inode *in, uint32_t owner_ns, uint64_t owner, bool flock);
/**
 * lc_fh_note_lock_owner - a fcntl lock of @owner was set through open file
 * description @fh.  FUSE cannot tell an OFD lock (owned by the description)
 * from a process's POSIX lock (owned by its file table): both are an
 * opaque owner id, and the kernel sends no unlock for an OFD lock when
 * the description's last reference goes (it keeps no copy of locks it
 * hands to the filesystem).  So the description remembers whom it locked
 * for, and its release (lc_fh_release_lock_owners) drops what they still
 * hold: a process's POSIX locks on the file went at its FLUSH already (any
 * close of the file drops them), so what is left is the description's own.
 */
void lc_fh_note_lock_owner(struct lc_fh *fh, uint32_t owner_ns, uint64_t owner);
/** lc_fh_inode - the inode @fh is open on (the handle holds a reference). */
struct lc_inode *lc_fh_inode(const struct lc_fh *fh);
/** lc_fh_release_lock_owners - @fh's last reference goes (FUSE RELEASE): its owners' fcntl locks go. */
void lc_fh_release_lock_owners(struct lclient *c, struct lc_fh *fh);

/**
 * lc_evicted - the MDS evicted this client: every operation fails with
 * -EIO (lc_* check it) until a remount, or with client_reconnect_stale
 * until a new session opened.  @why (may be NULL) gets the MDS's reason.
 */
bool lc_evicted(struct lclient *c, char *why, size_t len);

/**
 * lc_max_file_size - the largest file size the filesystem allows: the MDS's
 * max_file_size (sent when the session opens), LC_MAX_FILE_SIZE_DEFAULT if
 * the MDS did not say.  lc_write, lc_setattr and lc_fallocate refuse to go
 * past it with -EFBIG before touching the store (a write that crosses it is
 * cut short at it, as on ext4); never more than INT64_MAX.  Lock-free.
 * The NFS gateway's maxfilesize.
 */
uint64_t lc_max_file_size(struct lclient *c);
#define LC_MAX_FILE_SIZE_DEFAULT (1ull << 40)

/**
 * lc_dentry_timeout - seconds the frontend may let its kernel cache the
 * entry @name of @dir (-> @in), remembered until then, so that a later
 * change of @dir's permissions can take it back (the client invalidates it
 * through lc_callbacks.inval_dentry): client_caps_timeout while we hold a
 * lease on the name (the MDS revokes it before anyone changes the name),
 * else 0.  0 also when @dir is not searchable by everyone: a kernel without
 * default_permissions checks nothing itself and would walk any user through
 * a cached name, so it must ask again (FUSE LOOKUP) with each caller's
 * credentials.
 * lc_negative_timeout - the same for a negative entry the frontend would
 * cache for @secs: only while we hold @dir's Fs (0 in such directories too).
 */
double lc_dentry_timeout(struct lclient *c, struct lc_inode *dir, const char *name, struct lc_inode *in);
double lc_negative_timeout(struct lclient *c, struct lc_inode *dir, const char *name, double secs);

/**
 * lc_entry_timeout, lc_attr_timeout - seconds the frontend may cache @in's
 * attributes: client_caps_timeout while the MDS's caps cover all of them,
 * else 0 (lc_entry_timeout is the same; use lc_dentry_timeout for a name).
 */
double lc_entry_timeout(struct lclient *c, struct lc_inode *in);
double lc_attr_timeout(struct lclient *c, struct lc_inode *in);
/**
 * lc_kernel_promise_ns - when the frontend last asked for a kernel cache
 * timeout of @in's attributes (lc_attr_timeout, lc_entry_timeout) or of a
 * name in directory @in (lc_dentry_timeout, lc_negative_timeout); stamped
 * before the caps are looked at.  A reply carrying such a timeout can reach
 * the kernel after an invalidation that a revoke sent meanwhile and that the
 * kernel refused (-ENOENT: it did not know the inode or the name yet); the
 * frontend tries an invalidation refused so soon after this stamp again
 * (client/fuse/inval.c).  Lock-free.
 */
uint64_t lc_kernel_promise_ns(struct lc_inode *in);
/**
 * lc_kernel_reply_begin / _end - a frontend request that will answer the
 * kernel with @in's attributes (GETATTR, SETATTR) is between its start and
 * its reply.  The kernel drops such a reply if an invalidation of the inode
 * overtakes it (its attr_version), so the frontend holds attribute-only
 * invalidations of @in back meanwhile (lc_kernel_replying).
 */
void lc_kernel_reply_begin(struct lc_inode *in);
void lc_kernel_reply_end(struct lc_inode *in);
/**
 * lc_kernel_hand - the frontend hands @in to its kernel @n more times (a
 * reply carrying its node: an entry, a create, a readdirplus entry; -@n
 * when that reply failed); lc_forget takes them back.  While the count is
 * above zero the kernel knows the node, or will as soon as it takes our
 * reply: an invalidation it refuses for a node it does not hold is then
 * worth trying again (client/fuse/inval.c), and not otherwise.
 */
void lc_kernel_hand(struct lc_inode *in, int64_t n);
/** lc_kernel_knows - the frontend's kernel holds @in (or is being handed it). */
bool lc_kernel_knows(struct lc_inode *in);
/** lc_kernel_replying - such a reply for @in is in progress. */
bool lc_kernel_replying(struct lc_inode *in);
/**
 * lc_kernel_attrs_cached - the frontend's kernel may still hold attributes
 * of @in it was told to keep (lc_attr_timeout gave a timeout that has not
 * run out): false means an invalidation of its attributes alone is moot.
 */
bool lc_kernel_attrs_cached(struct lc_inode *in);
/**
 * lc_fh_cacheable - the file's data may be cached (we hold Fc: nobody else
 * writes it).  A frontend opens without it uncached (FUSE direct_io).
 */
bool lc_fh_cacheable(struct lc_fh *fh);

enum lc_kcache {
	LC_KCACHE_NONE,   /* no Fc, or opened O_DIRECT: uncached I/O (FUSE direct_io) */
	LC_KCACHE_DROP,   /* may cache, but what the kernel holds may be stale: drop it */
	LC_KCACHE_KEEP,   /* the pages the kernel cached under an earlier open are the file's */
};

/**
 * lc_fh_kernel_cache - how the frontend's kernel (one page cache per inode,
 * kept across opens) may cache the data of @fh, a handle just opened.
 *
 * KEEP when this client holds Fc and the file is what it was when an open
 * with Fc last let the kernel cache it: no Fc revoke, no session loss, no
 * write or truncate through this client, and the change counter, size and
 * mtime the MDS gave this open are the same.  A revoke of Fc invalidates the
 * kernel's pages before the ack (caps.c), so pages cached while Fc was held
 * are the file's as long as none of that moved.  DROP otherwise, NONE without
 * Fc, and for a handle opened O_DIRECT (its writes bypass the kernel's page
 * cache: see lc_fh_kernel_direct).  Records the current state for the next open.  Writes through this
 * client count as changes even when they went through the kernel's page
 * cache: a file written here is read from the client again after its next
 * open.  (The NFS gateway's writes and size changes drop the kernel's pages
 * through the library: struct lc_callbacks.)
 */
enum lc_kcache lc_fh_kernel_cache(struct lc_fh *fh);
/**
 * lc_fh_kernel_direct - lc_fh_kernel_cache() said NONE for @fh: the kernel
 * sends its writes straight here, around the page cache that other handles
 * of the inode on the same mount may hold.  The frontend drops the written
 * range from that cache before it answers such a write.  Any thread.
 */
bool lc_fh_kernel_direct(const struct lc_fh *fh);

/*
 * What this client may cache about an inode, as the MDS's caps say
 * (mds/locker.c has the rules), in the terms a frontend that hands out its
 * own cache promises (an NFS gateway's delegations) needs:
 */
#define LC_CAP_ATTRS  0x1u /* mode, owner, nlink, size, times (As|Ls|Fs): nobody changes them */
#define LC_CAP_CACHE  0x2u /* file data may be cached (Fc): nobody else writes the file */
#define LC_CAP_BUFFER 0x4u /* writes may be buffered (Fb): nobody else has the file open */

/**
 * lc_caps_held - the LC_CAP_* bits this client holds on @in now.  A
 * frontend that promises its own clients more than a single answer (a read
 * delegation: LC_CAP_CACHE|LC_CAP_ATTRS; a write delegation: also
 * LC_CAP_BUFFER) keeps a handle open on the file (that is what makes the
 * MDS issue data caps, lc_open) and checks this before it promises, then
 * registers a revoke hook to take the promise back.  Lock-free snapshot.
 */
uint32_t lc_caps_held(struct lc_inode *in);

/*
 * A revoke hook: called when the MDS takes caps away from this client,
 * before the client writes back what the revoke needs, invalidates its
 * frontends' caches and acks.  So a frontend may recall what it promised on
 * the strength of those caps (an NFS CB_RECALL, waiting for DELEGRETURN and
 * the writes that come with it: without LC_CAP_BUFFER they go straight to
 * the objects) and the other client's change waits for it.  @had and @keep
 * are LC_CAP_* (only called when @keep lacks some of @had).
 *
 * Revokes run one at a time on the client's flusher thread, so a hook must
 * not block for long: every other revoke and the writeback of this client
 * wait behind it.  A hook that has to wait for its own clients returns
 * LC_REVOKE_DEFERRED instead and keeps @rv: the flusher goes on with other
 * inodes, and once the hook calls lc_revoke_complete(@rv) (from any thread,
 * even before the hook returns) the flusher writes that inode back,
 * invalidates and acks.  Later revokes of the same inode wait behind a
 * deferred one (the MDS's ack covers every earlier revoke).  A deferred
 * revoke is bounded: the hook must complete it well under
 * mds_session_timeout (the MDS evicts a client that does not ack by then);
 * past client_revoke_defer_max the client acks anyway, and a lost session
 * or an unmount (which waits for them first, up to that bound) completes
 * them at once - lc_revoke_complete stays valid on @rv until the hook calls
 * it, exactly once per LC_REVOKE_DEFERRED.  @rv is NULL when the revoke
 * cannot be deferred (@lost, or no memory): return 0 then.
 *
 * A hook must not wait for MDS requests of its own (lc_* calls that reach
 * the MDS), and gets @in without a lock held (it may lc_get/lc_put).
 * @lost: the session ended (evicted, closed, a new one): the caps are
 * already gone, @keep is 0, and the hook must not block (session thread).
 */
#define LC_REVOKE_DEFERRED 1

struct lc_revoke;

struct lc_revoke_hook {
	/* 0: done; LC_REVOKE_DEFERRED: lc_revoke_complete(@rv) follows */
	int (*revoke)(void *arg, struct lc_inode *in, uint32_t had, uint32_t keep, bool lost, struct lc_revoke *rv);
	void *arg;
	struct lc_revoke_hook *next;  /* the client's list */
};

/**
 * lc_revoke_complete - a hook that deferred @rv is done with it: the flusher
 * finishes the revoke (writeback, invalidation, ack) once every hook that
 * deferred it has completed it.  Never blocks; any thread.
 */
void lc_revoke_complete(struct lclient *c, struct lc_revoke *rv);

/**
 * lclient_add_revoke_hook - call @h on every revoke from now on (@h stays
 * the caller's and must live until lclient_del_revoke_hook returns).
 */
void lclient_add_revoke_hook(struct lclient *c, struct lc_revoke_hook *h);
/** lclient_del_revoke_hook - no call of @h runs or starts once it returns. */
void lclient_del_revoke_hook(struct lclient *c, struct lc_revoke_hook *h);

/* ---- operations in flight (optrack.c) ----------------------------------------- */

/* What a frontend's operation is blocked on (the admin socket's `ops`). */
enum lc_wait {
	LC_WAIT_NONE = 0,
	LC_WAIT_MDS,         /* arg: the request's tid */
	LC_WAIT_SESSION,     /* a session with the MDS (none, or reconnecting) */
	LC_WAIT_FLUSH_ACK,   /* arg: ino; the MDS journaling a cap flush */
	LC_WAIT_WRITEBACK,   /* arg: ino; another thread's writeback of it */
	LC_WAIT_CACHE_ROOM,  /* arg: dirty bytes; client_oc_size reached */
	LC_WAIT_STORE,       /* arg: ino; object reads or writes */
	LC_WAIT_LOCK,        /* arg: ino; a file lock held by someone else */
	LC_WAIT_KERNEL,      /* arg: ino; the kernel's cache invalidations */
	LC_WAIT_ASYNC,       /* arg: dir ino; creates/unlinks answered here, still being sent */
};

struct lc_op_slot;

/**
 * lc_op_begin - a frontend request starts on this thread: @who ("fuse",
 * "nfs4"...), @op (a static string: "write", "COMPOUND OPEN"...), the inode
 * it is about (0: none).  Return: the token for lc_op_end (NULL when not
 * tracked: no memory, or inside another client's operation).  Costs a few
 * atomic stores; never blocks but on the first request of a thread.
 * Changes the request makes through the library reach the frontend that
 * registered lc_callbacks when @who is not that frontend's (nor "client",
 * the library's own threads).  Every call is paired with one lc_op_end.
 */
struct lc_op_slot *lc_op_begin(struct lclient *c, const char *who, const char *op, uint64_t ino);
/** lc_op_end - the request of @s (may be NULL) has replied. */
void lc_op_end(struct lc_op_slot *s);
/** lc_op_wait_set - this thread's operation (if any) now waits for @w (@arg: see enum lc_wait). */
void lc_op_wait_set(enum lc_wait w, uint64_t arg);
/** lc_op_wait_clear - ... and no longer does. */
void lc_op_wait_clear(void);

#endif
