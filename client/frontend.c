/*
 * frontend.c - every frontend hears of the changes the others make.
 *
 * One client can serve several frontends at once: loligo-fuse's kernel
 * mount and the NFS gateway embedded beside it (client/fuse/nfs_hook.c)
 * share one lclient.  The frontend that registered lc_callbacks (FUSE)
 * keeps kernel caches of what the library tells it; a change made through
 * it is already known to its kernel, a change made through another
 * frontend is not.  So the namespace and data operations (namei.c,
 * file.c) call lc_frontends_*_changed() after each change they made, and
 * these pass it on to the registered callbacks when the thread is serving
 * a request of a frontend other than the registering one (lc_op_begin's
 * @who against lc_callbacks.who).  The library's own threads ("client")
 * and callers that began no request (the tests, the library itself) are
 * no frontend: nothing is passed on for them, as before.
 *
 * Cheap when nothing is to be told (one thread-local read); the callbacks
 * only queue (FUSE's inval thread), so no client lock matters here, and
 * none is held by the callers.
 */
#include <string.h>

#include "client/cache_int.h"

/* this thread serves a request of a frontend that did not register the callbacks */
static bool other_frontend(struct lclient *c)
{
	const char *who = lc_op_frontend(c);

	if (!who || !strcmp(who, "client"))
		return false;
	return !c->cb.who || strcmp(who, c->cb.who) != 0;
}

bool lc_frontends_to_tell(struct lclient *c)
{
	return (c->cb.inval_inode || c->cb.inval_dentry) && other_frontend(c);
}

void lc_frontends_inode_changed(struct lclient *c, uint64_t ino, off_t off, off_t len)
{
	if (ino && c->cb.inval_inode && other_frontend(c))
		c->cb.inval_inode(c->cb_arg, ino, off, len);
}

void lc_frontends_entry_changed(struct lclient *c, struct lc_inode *dir, const char *name)
{
	if (!other_frontend(c))
		return;
	if (c->cb.inval_dentry)
		c->cb.inval_dentry(c->cb_arg, dir->ino, name);
	if (c->cb.inval_inode)
		c->cb.inval_inode(c->cb_arg, dir->ino, -1, 0);
}
