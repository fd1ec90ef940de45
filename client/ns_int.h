/*
 * ns_int.h - private to client/: the namespace operations, above the data
 * path (types_int.h has the map): namei.c (lookups, creates, setattr,
 * links, xattrs: client.h), asynchronous creates and unlinks (asyncdir.c,
 * asyncunlink.c), READDIR (readdir.c), file locks (flock.c), SEEK_DATA and
 * SEEK_HOLE (seek.c).  lc_ns_register gives the layers below what they
 * call up to (c->cache_ops, c->data_ops).
 */
#ifndef LOLIGO_CLIENT_NS_INT_H
#define LOLIGO_CLIENT_NS_INT_H

#include "client/data_int.h"

struct json_object;


/* ---- asyncdir.c ---------------------------------------------------------- */
/**
 * lc_async_create - answer a create (@mkdir: a mkdir) of @name in @dir
 * here and send it in the background, when the directory is ours alone
 * (Dc), the name is known not to exist and a delegated ino is left.
 * Return: 0 (as lc_create/lc_mkdir), -EAGAIN: take the synchronous path.
 */
int lc_async_create(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, int flags, bool mkdir,
		    const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh);
/**
 * lc_async_setattr - answer a SETATTR (@mask MDSP_SETATTR_*, the values in
 * @set) of @in ourselves when we made @in under Dc, its directory still
 * holds that Dc and no other link was made: checked by the MDS's rules
 * (mdsp_setattr_check), applied to the cache, sent in the background
 * behind the create and tracked until SAFE (fsync waits for it; a refusal
 * at the MDS is logged, counted in async_failed and reported by the next
 * fsync).  Mode, owner and times only.
 * Return: 0 (answered; the cache holds the result), the MDS's error for a
 * change it would refuse, or -EAGAIN: take the synchronous path.
 * Locking: none held; takes in->lock and the directory's lock in turn.
 */
int lc_async_setattr(struct lclient *c, struct lc_inode *in, uint32_t mask, const struct mdsp_inode *set,
		     const struct lc_cred *cr);
/** lc_async_forget - @ino gets (or may get) another name: its setattrs go to the MDS from now on. */
void lc_async_forget(struct lclient *c, uint64_t ino);

/* ---- asyncunlink.c ------------------------------------------------------- */
/**
 * lc_async_remove - answer an unlink (@rmdir: an rmdir) of @name in @dir
 * here and send it in the background, when this client holds Dc on @dir,
 * knows the name and its target, and the target is a file of one link (or
 * a directory known empty).  Return 0 (answered), -EAGAIN (take the
 * synchronous path) or -errno.  No lock held.
 */
int lc_async_remove(struct lclient *c, struct lc_inode *dir, const char *name, bool rmdir, const struct lc_cred *cr);
/**
 * lc_async_unlink_wait - wait until the asynchronous unlinks of @name in
 * @dir (@name NULL: of every name) have their first reply: an operation
 * the MDS must see after them (a create of the name, an rmdir of @dir, a
 * lookup or listing at the MDS) goes out only then.  Cheap when none is
 * pending.  No lock held.
 */
void lc_async_unlink_wait(struct lclient *c, struct lc_inode *dir, const char *name);
/** lc_async_unlink_wait_ino - lc_async_unlink_wait for every name of directory @ino, if cached. */
void lc_async_unlink_wait_ino(struct lclient *c, uint64_t ino);
/**
 * lc_async_unlink_defer - a revoke of Dc on @dir: if unlinks answered here
 * are still unanswered by the MDS, keep one pending count of @rv (taken by
 * the caller) and give it back (lc_revoke_complete) once they all are.
 * Return false when nothing is pending (the caller gives it back).
 */
bool lc_async_unlink_defer(struct lclient *c, struct lc_inode *dir, struct lc_revoke *rv);
/** lc_async_unlink_drop - @dir is being freed: forget what is pending. */
void lc_async_unlink_drop(struct lc_inode *dir);

/* ---- readdir.c ----------------------------------------------------------- */
void lc_rd_batch_put(struct rd_batch *b);
/** lc_readdir_dump - the READDIR batch directory @dir keeps, into @o as "listing" (`dump inode`). */
void lc_readdir_dump(struct lc_inode *dir, struct json_object *o);

/* ---- flock.c ------------------------------------------------------------- */
int lc_locks_init(struct lclient *c);
void lc_locks_destroy(struct lclient *c);
void lc_locks_register_perf(struct lclient *c, const char *group);
/* mdsc_ops hooks: the locks to re-assert, those the MDS refused */
int lc_reconnect_locks(void *arg, struct mdsp_lock **locks, uint32_t *nlocks);
void lc_locks_refused(void *arg, const struct mdsp_lock *locks, uint32_t n);
/** lc_locks_session_lost - the session is gone: every lock held is lost. */
void lc_locks_session_lost(struct lclient *c);

/* ---- registration ------------------------------------------------------- */
/**
 * lc_ns_register - at create: give the layers below what they call up to:
 * READDIR batches and asynchronous unlinks (c->cache_ops), lc_getattr and
 * lc_fsetattr (c->data_ops).
 */
void lc_ns_register(struct lclient *c);

#endif
