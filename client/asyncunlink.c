/*
 * asyncunlink.c - unlinks and rmdirs answered by the client itself, sent to
 * the MDS in the background (the Linux ceph client's async unlink; issue
 * 13.3).  The other half of asyncdir.c: an rm -rf waited for one MDS round
 * trip per name.
 *
 * An unlink of @name in directory D is answered at once when
 *  - we hold Dc on D (and As|Fs: its mode and entries are cached): nobody
 *    else caches anything of D, and anyone who wants to look at D or change
 *    it revokes Dc first;
 *  - the name is known: a leased positive dentry, its inode cached;
 *  - the target is a regular file whose link count is known to be 1 (we
 *    hold As|Ls on it: its owner and nlink are the MDS's), or, for rmdir, a
 *    directory we hold Dc|Fs|As|Ls on with no entries (its entry count is
 *    cached under Fs, and nobody else may add one while we hold Dc);
 *  - the caller passes the MDS's own permission and sticky-bit checks
 *    (mds_proto/perm.c: one function for both), applied to the cached
 *    attributes.  A caller who fails them takes the synchronous path and
 *    hears the refusal in the MDS's words.
 * D's mtime/ctime/change/entry count (and nlink, for rmdir) and the
 * target's nlink/ctime/change move as the MDS will move them, the name
 * becomes a negative dentry (D holds Fs), and the request is submitted
 * without waiting.  Everything else takes the synchronous path (-EAGAIN).
 *
 * Ordering.  Requests go out in order and the MDS runs a session's
 * requests in arrival order, but unlike a create an unlink can park in the
 * MDS's locker: another client may hold caps on the victim (it opened the
 * file before we got Dc), and the unlink waits for their revoke while our
 * later requests run.  So until its first reply, an unlink answered here is
 * on D's list (dir->dstate->aunlinks), and what the MDS must see after it waits for
 * that reply (lc_async_unlink_wait): a create, link or rename onto the same
 * name, an rmdir of D, a lookup or a listing of D sent to the MDS.  A
 * revoke of Dc (caps.c process_revoke) first waits for the unlinks between
 * their Dc check and their send (dir->async_submitting, as for creates),
 * then defers its ack until every one of them has its first reply
 * (lc_async_unlink_defer: the revoke is deferred like a hook's, so the
 * flusher thread never blocks on the MDS); the other client's request that
 * caused the revoke therefore finds every name gone.
 *
 * Durability: the request is tracked on D like an UNSAFE one (fsync of D
 * waits for SAFE) and stays in the request map until SAFE: after an MDS
 * restart it is replayed or resent, and the MDS's completed-request table
 * makes it run once.
 *
 * Data: the file's objects are purged when the reply says it is not open
 * in another session (no MDSP_TRACE_ORPHAN: otherwise the MDS purges them
 * after the last close there), and after our own last close
 * (lc_purge_data).
 *
 * A failure at the MDS (EROFS, ENOSPC of the journal, ...) cannot reach
 * the caller, who was answered already: it is logged, counted
 * (async_failed), D's and the target's cached attributes and the name are
 * dropped (the next lookup asks the MDS: the name comes back), and the next
 * fsync of D returns the error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/ns_int.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "perm/perm.h"

#define Dc MDSP_CAP_DIR_CREATE
#define As MDSP_CAP_AUTH_SHARED
#define Ls MDSP_CAP_LINK_SHARED
#define Fs MDSP_CAP_FILE_SHARED

/* an unlink answered here, waiting for its first reply; on dir->dstate->aunlinks */
struct lc_aunlink {
	struct lc_aunlink *next;
	struct mds_request *req;     /* holds a reference */
	uint64_t victim;             /* the target's ino */
	char name[];
};

static struct mdsp_time now_time(void)
{
	uint64_t ns = now_real_ns();

	return (struct mdsp_time){ .sec = (int64_t)(ns / 1000000000ull), .nsec = (uint32_t)(ns % 1000000000ull) };
}

/*
 * dir->lock held: take @req's entry off @dir's list (NULL if it is gone).
 * *@rv: the deferred Dc revoke to give back, once the list is empty.
 */
static struct lc_aunlink *take_locked(struct lc_inode *dir, struct mds_request *req, struct lc_revoke **rv)
{
	struct lc_aunlink **pp, *e = NULL;
	struct lc_dstate *ds = dir->dstate;

	lockdep_assert_held(&dir->lock);
	*rv = NULL;
	if (!ds)
		goto out;
	for (pp = &ds->aunlinks; *pp; pp = &(*pp)->next)
		if ((*pp)->req == req) {
			e = *pp;
			*pp = e->next;
			break;
		}
	if (!ds->aunlinks && ds->aunlink_rv) {
		*rv = ds->aunlink_rv;
		ds->aunlink_rv = NULL;
	}
out:
	pthread_cond_broadcast(&dir->cond);
	return e;
}

static void entry_free(struct lc_aunlink *e)
{
	if (!e)
		return;
	mdsc_request_put(e->req);
	free(e);
}

/* The first reply, on the session reader thread (must not block on the MDS). */
static void aunlink_done(struct mds_request *req, void *arg)
{
	struct lclient *c = arg;
	const struct mdsp_reply *rep = req->reply;
	const char *name = req->args.name;
	bool rmdir = req->args.op == MDSP_OP_RMDIR, orphan;
	struct lc_inode *dir = lc_ino_to_inode(c, req->args.ino), *din = NULL, *t = NULL;
	struct lc_aunlink *e = NULL;
	struct lc_revoke *rv = NULL;
	uint64_t victim = 0;

	if (dir) {
		pthread_mutex_lock(&dir->lock);
		e = take_locked(dir, req, &rv);
		pthread_mutex_unlock(&dir->lock);
	}
	if (e)
		victim = e->victim;
	if (!rep)
		goto out;
	if (rep->has_dir && rep->dir.ino)
		din = lc_inode_update(c, &rep->dir, rep->dir_caps, rep->dir_cap_seq);
	if (rep->result == 0) {
		if (rep->has_target && rep->target.ino && rep->target.ino == victim)
			t = lc_inode_update(c, &rep->target, rep->caps, rep->cap_seq);
		orphan = rep->trace_flags & MDSP_TRACE_ORPHAN;
		if (t && !rmdir && !orphan) {
			pthread_mutex_lock(&t->lock);
			bool gone = S_ISREG(t->mi.mode) && t->mi.nlink == 0;
			pthread_mutex_unlock(&t->lock);
			/* nobody else has it open: its data goes (at our last
			 * close if it is open here) */
			if (gone)
				lc_purge_data(c, t);
		}
		goto out;
	}
	perf_inc(&c->perf.async_failed, 1);
	derr(CLIENT, "asynchronous %s of '%s' in directory %" PRIx64 " (ino %" PRIx64 ") failed at the MDS: %s; "
	     "the name comes back, the next fsync of the directory reports it", mdsp_op_name(req->args.op),
	     name ? name : "", req->args.ino, victim, strerror(-rep->result));
	/* what we cached of the name, the directory and the target was our
	 * guess of the MDS's state: ask it again */
	lc_dcache_remove(c, req->args.ino, name);
	if (c->cb.inval_dentry)
		c->cb.inval_dentry(c->cb_arg, req->args.ino, name);
	lc_dir_not_complete(c, req->args.ino);
	if (!din && dir) {
		din = dir;
		lc_get(din);
	}
	if (din) {
		pthread_mutex_lock(&din->lock);
		if (!din->unsafe_err)
			din->unsafe_err = rep->result;
		lc_attrs_forget_locked(din);
		din->mi.change = 0;     /* the MDS's next attributes win */
		pthread_mutex_unlock(&din->lock);
	}
	if (victim && (t = lc_ino_to_inode(c, victim))) {
		pthread_mutex_lock(&t->lock);
		t->mi.change = 0;
		pthread_mutex_unlock(&t->lock);
		lc_inode_invalidate(t);
	}
out:
	if (rv)
		lc_revoke_complete(c, rv);
	entry_free(e);
	lc_put(c, t);
	lc_put(c, din);
	lc_put(c, dir);
}

void lc_async_unlink_wait(struct lclient *c, struct lc_inode *dir, const char *name)
{
	struct lc_aunlink *e;
	struct lc_revoke *rv;
	struct mds_request *req;

	for (;;) {
		pthread_mutex_lock(&dir->lock);
		for (e = dir->dstate ? dir->dstate->aunlinks : NULL; e; e = e->next)
			if (!name || !strcmp(e->name, name))
				break;
		if (!e) {
			pthread_mutex_unlock(&dir->lock);
			return;
		}
		req = e->req;
		mdsc_request_get(req);
		pthread_mutex_unlock(&dir->lock);
		perf_inc(&c->perf.async_unlink_waits, 1);
		/* the reply runs aunlink_done before it wakes us */
		mdsc_wait_reply(c->mdsc, req, 0, false);
		/* given up without a reply (an evicted session): not on the list any more */
		pthread_mutex_lock(&dir->lock);
		e = take_locked(dir, req, &rv);
		pthread_mutex_unlock(&dir->lock);
		if (rv)
			lc_revoke_complete(c, rv);
		entry_free(e);
		mdsc_request_put(req);
	}
}

/*
 * @t was created here asynchronously and its create has no reply yet: wait
 * for it, since that reply puts the name (under the MDS's lease) and the
 * inode's attributes into the caches, which must not land after the
 * unlink made the name negative.  One round trip, only for a name removed
 * right after it was made.
 */
static void wait_created(struct lclient *c, struct lc_inode *t)
{
	struct mds_request *req = NULL;

	pthread_mutex_lock(&t->lock);
	for (struct lc_unsafe *u = t->unsafe; u; u = u->next) {
		uint32_t op = u->req->args.op;

		if ((op == MDSP_OP_CREATE || op == MDSP_OP_MKDIR) && u->req->args.want_ino == t->ino) {
			req = u->req;
			mdsc_request_get(req);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (req) {
		mdsc_wait_reply(c->mdsc, req, 0, false);
		mdsc_request_put(req);
	}
}

void lc_async_unlink_wait_ino(struct lclient *c, uint64_t ino)
{
	struct lc_inode *in = lc_ino_to_inode(c, ino);

	if (!in)
		return;
	lc_async_unlink_wait(c, in, NULL);
	lc_put(c, in);
}

bool lc_async_unlink_defer(struct lclient *c, struct lc_inode *dir, struct lc_revoke *rv)
{
	bool deferred = false;

	(void)c;
	pthread_mutex_lock(&dir->lock);
	struct lc_dstate *ds = dir->dstate;
	if (ds && ds->aunlinks && !ds->aunlink_rv) {
		ds->aunlink_rv = rv;
		deferred = true;
	}
	pthread_mutex_unlock(&dir->lock);
	if (deferred)
		dout(CLIENT, 10, "Dc revoke on %" PRIx64 ": acked after the unlinks answered here", dir->ino);
	return deferred;
}

void lc_async_unlink_drop(struct lc_inode *dir)
{
	struct lc_aunlink *e;

	if (!dir->dstate)
		return;
	while ((e = dir->dstate->aunlinks)) {
		dir->dstate->aunlinks = e->next;
		entry_free(e);
	}
}

int lc_async_remove(struct lclient *c, struct lc_inode *dir, const char *name, bool rmdir, const struct lc_cred *cr)
{
	uint32_t need = Dc | As | Fs, vneed = rmdir ? (Dc | As | Ls | Fs) : (As | Ls);
	struct mds_request *req = NULL;
	struct lc_inode *t = NULL;
	struct lc_aunlink *e = NULL;
	struct mdsp_inode dmi, vmi;
	struct mdsp_time now;
	uint64_t ino = 0;
	bool submitting = false, ok;
	size_t n;
	int r = -EAGAIN;

	if (!c->async_dirops || !c->mdsc || lc_evicted(c, NULL, 0) || !mdsc_is_open(c->mdsc))
		return -EAGAIN;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return -EAGAIN;
	if (!lc_dcache_lookup(c, dir, name, &ino) || !ino)
		return -EAGAIN;
	t = lc_ino_to_inode(c, ino);
	if (!t)
		return -EAGAIN;
	if (rmdir)
		lc_async_unlink_wait(c, t, NULL);   /* its names are gone at the MDS first */
	wait_created(c, t);
	if (!rmdir) {
		/*
		 * Data still being written back after the file's last close
		 * here (a close under Fb only starts the writeback) keeps Fw
		 * wanted, and the MDS would see the file open here and keep
		 * it as an orphan until that writeback ends.  Write it back
		 * now and give Fw/Fb up before the unlink goes (the cap update
		 * is ahead of it on the connection).
		 */
		pthread_mutex_lock(&t->lock);
		bool pending = t->nopen == 0 && lc_data_pending_locked(t);
		pthread_mutex_unlock(&t->lock);
		if (pending && lc_wb_flush(c, t) == 0)
			lc_caps_update(c, t);
	}

	pthread_mutex_lock(&dir->lock);
	/* (the list of unlinks answered here is the directory's lc_dstate: made
	 * now, where no memory means the synchronous path) */
	ok = (dir->caps & need) == need && S_ISDIR(dir->mi.mode) && dir->mi.nlink > 0 && dir->mi.files > 0 &&
	     lc_dstate_locked(dir);
	dmi = dir->mi;
	if (ok) {
		/* a revoke of Dc from here on waits until this unlink is sent */
		lc_async_submit_begin_locked(dir);
		submitting = true;
	}
	pthread_mutex_unlock(&dir->lock);
	if (!ok)
		goto out;

	pthread_mutex_lock(&t->lock);
	if (rmdir)
		ok = S_ISDIR(t->mi.mode) && (t->caps & vneed) == vneed && t->mi.files == 0 && t->mi.nlink > 0 &&
		     !(t->dstate && t->dstate->aunlinks) && !t->async_submitting;
	else
		/* open here: the synchronous path marks it for a purge at the
		 * last close before it returns, so that close writes nothing back.
		 * Data still pending (its writeback above failed): synchronous */
		ok = S_ISREG(t->mi.mode) && (t->caps & vneed) == vneed && t->mi.nlink == 1 && !t->async_failed &&
		     t->nopen == 0 && !lc_data_pending_locked(t);
	vmi = t->mi;
	pthread_mutex_unlock(&t->lock);
	if (!ok)
		goto out;

	req = lc_req_new(c, rmdir ? MDSP_OP_RMDIR : MDSP_OP_UNLINK, dir->ino, cr);
	if (!req) {
		r = -ENOMEM;
		goto out;
	}
	/* the MDS's checks, in its order, on what it would see (op_unlink/op_rmdir);
	 * a directory held under Dc has no ACL (mds/locker.c allowed_for): its
	 * mode decides */
	if (mdsp_may_access(&dmi, &req->args.caller, MDSP_MAY_WRITE | MDSP_MAY_EXEC) ||
	    mdsp_sticky_ok(&dmi, &vmi, &req->args.caller))
		goto out;               /* refused: the MDS says so, in its words */
	req->args.name = strdup(name);
	n = strlen(name);
	e = malloc(sizeof(*e) + n + 1);
	if (!req->args.name || !e) {
		free(e);
		e = NULL;
		r = -ENOMEM;
		goto out;
	}
	memcpy(e->name, name, n + 1);
	e->victim = ino;
	e->req = req;
	mdsc_request_get(req);
	req->on_reply = aunlink_done;
	req->on_reply_arg = c;
	/* a cap update we owe the MDS for the file (the wants of its last
	 * close) goes first: the MDS must not think it is still open here */
	if (!rmdir)
		lc_caps_update_pending(c, ino);

	/* as the MDS will have them */
	now = now_time();
	pthread_mutex_lock(&dir->lock);
	dir->mi.mtime = dir->mi.ctime = now;
	dir->mi.change++;
	if (dir->mi.files)
		dir->mi.files--;
	if (rmdir && dir->mi.nlink > 2)
		dir->mi.nlink--;
	lc_dir_rd_drop_locked(dir);
	/* dstate: made above, with the Dc check, and kept until the inode goes */
	e->next = dir->dstate->aunlinks;
	dir->dstate->aunlinks = e;
	pthread_mutex_unlock(&dir->lock);
	pthread_mutex_lock(&t->lock);
	t->mi.nlink = 0;
	t->mi.ctime = now;
	t->mi.change++;
	if (rmdir)
		t->dir_complete = false;
	pthread_mutex_unlock(&t->lock);
	lc_dcache_add(c, dir, name, 0);

	/* a create of the name answered here goes first (the cache says
	 * nothing of the name any more: the target by its ino) */
	lc_async_order_ino(c, t->ino);
	r = mdsc_submit(c->mdsc, req);
	if (r < 0) {
		struct lc_revoke *rv;

		derr(CLIENT, "asynchronous %s of '%s': cannot submit: %s", rmdir ? "rmdir" : "unlink", name,
		     strerror(-r));
		pthread_mutex_lock(&dir->lock);
		e = take_locked(dir, req, &rv);
		lc_attrs_forget_locked(dir);
		dir->mi.change = 0;
		pthread_mutex_unlock(&dir->lock);
		if (rv)
			lc_revoke_complete(c, rv);
		lc_dcache_remove(c, dir->ino, name);
		pthread_mutex_lock(&t->lock);
		t->mi.change = 0;
		pthread_mutex_unlock(&t->lock);
		lc_inode_invalidate(t);
		goto out;
	}
	e = NULL;                       /* on the list: aunlink_done frees it */
	lc_track_unsafe(dir, req);
	perf_inc(rmdir ? &c->perf.async_rmdirs : &c->perf.async_unlinks, 1);
	dout(CLIENT, 15, "async %s %" PRIx64 "/%s (ino %" PRIx64 ") tid %" PRIu64, rmdir ? "rmdir" : "unlink",
	     dir->ino, name, ino, req->args.tid);
	r = 0;
out:
	if (submitting) {
		lc_async_submit_end(dir);
	}
	entry_free(e);
	if (req)
		mdsc_request_put(req);
	lc_put(c, t);
	if (r == -EAGAIN)
		perf_inc(&c->perf.async_sync, 1);
	return r;
}
