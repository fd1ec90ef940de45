/*
 * request.c - the cache core's side of an MDS request: building one as a
 * caller (lc_req_new), running it and folding its trace into the caches
 * (lc_req_run), the requests an inode depends on until they are SAFE
 * (fsync waits for them), and the inos the MDS delegated to the session
 * (asynchronous creates take them, asyncdir.c).
 *
 * Every MDS reply carries a trace (the directory and the target inode)
 * that lc_req_run folds into the caches, so a create or a lookup leaves
 * the inode cached with fresh attributes and the dentry known.  It sits in
 * the cache core (cache_int.h): the data path and the namespace operations
 * above use it, and it uses nothing above the cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/cache_int.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"

void lc_cred_to_caller(const struct lc_cred *cr, struct mdsp_caller *caller)
{
	memset(caller, 0, sizeof(*caller));
	if (!cr)
		return; /* root */
	caller->uid = cr->uid;
	caller->gid = cr->gid;
	int n = cr->ngroups;
	if (n < 0)
		n = 0;
	if (n > MDSP_MAX_GROUPS)
		n = MDSP_MAX_GROUPS;
	if (n > LC_MAX_GROUPS)
		n = LC_MAX_GROUPS;
	caller->ngroups = (uint32_t)n;
	for (int i = 0; i < n; i++)
		caller->groups[i] = cr->groups[i];
	caller->pid = (uint32_t)cr->pid;
}

struct mds_request *lc_req_new(struct lclient *c, uint32_t op, uint64_t ino, const struct lc_cred *cr)
{
	struct mds_request *req;

	if (!c->mdsc)
		return NULL;
	req = mdsc_request_new(c->mdsc, op);
	if (!req)
		return NULL;
	lc_cred_to_caller(cr, &req->args.caller);
	req->args.ino = ino;
	if (cr && cr->umask_set && (op == MDSP_OP_CREATE || op == MDSP_OP_MKNOD || op == MDSP_OP_MKDIR)) {
		req->args.flags |= MDSP_REQ_UMASK;
		req->args.umask = cr->umask & 0777;
	}
	return req;
}

static bool trace_names_target(uint32_t op)
{
	switch (op) {
	case MDSP_OP_LOOKUP:
	case MDSP_OP_CREATE:
	case MDSP_OP_MKNOD:
	case MDSP_OP_MKDIR:
	case MDSP_OP_SYMLINK:
	case MDSP_OP_LINK:
	case MDSP_OP_RENAME:
		return true;
	default:
		return false;
	}
}

bool lc_unsafe_prune_locked(struct lc_inode *in)
{
	struct lc_unsafe **pp = &in->unsafe, *u;
	int st;

	while ((u = *pp)) {
		st = mdsc_request_safe_state(u->req);
		if (st == 0) {
			pp = &u->next;
			continue;
		}
		if (st < 0 && !in->unsafe_err)
			in->unsafe_err = st;
		*pp = u->next;
		mdsc_request_put(u->req);
		free(u);
	}
	return !in->unsafe;
}

void lc_unsafe_drop(struct lc_inode *in)
{
	struct lc_unsafe *u;

	while ((u = in->unsafe)) {
		in->unsafe = u->next;
		mdsc_request_put(u->req);
		free(u);
	}
}

/* @in depends on @req, answered UNSAFE (or not answered yet), until it is SAFE. */
void lc_track_unsafe(struct lc_inode *in, struct mds_request *req)
{
	struct lc_unsafe *u = malloc(sizeof(*u));

	pthread_mutex_lock(&in->lock);
	lc_unsafe_prune_locked(in);     /* the list stays as short as what is in flight */
	if (u) {
		mdsc_request_get(req);
		u->req = req;
		u->next = in->unsafe;
		in->unsafe = u;
	} else {
		in->unsafe_untracked = true;
	}
	pthread_mutex_unlock(&in->lock);
}

int lc_wait_unsafe(struct lclient *c, struct lc_inode *in)
{
	struct lc_unsafe *list, *u, **tail;
	bool untracked;
	int err, r;

	if (!c->mdsc)
		return 0;
	pthread_mutex_lock(&in->lock);
	list = in->unsafe;
	in->unsafe = NULL;
	err = in->unsafe_err;
	in->unsafe_err = 0;
	untracked = in->unsafe_untracked;
	in->unsafe_untracked = false;
	pthread_mutex_unlock(&in->lock);

	/* newest first: once it is SAFE the older ones mostly are too */
	while ((u = list)) {
		r = mdsc_wait_safe(c->mdsc, u->req);
		if (r == -ETIMEDOUT || r == -EINTR) {
			/* still pending: they stay for the next fsync */
			pthread_mutex_lock(&in->lock);
			for (tail = &list; *tail; tail = &(*tail)->next)
				;
			*tail = in->unsafe;
			in->unsafe = list;
			pthread_mutex_unlock(&in->lock);
			return r;
		}
		if (r && !err)
			err = r;
		list = u->next;
		mdsc_request_put(u->req);
		free(u);
	}
	if (untracked && (r = mdsc_sync(c->mdsc)) && !err)
		err = r;
	if (err)
		derr(CLIENT, "inode %" PRIx64 ": a metadata change it depends on was lost by the mds: %s", in->ino,
		     strerror(-err));
	return err;
}

/* the first reply of @req (result @r) into the cache: lc_req_run's second
 * half; @since: lc_caps_gen() before @req went out, the revokes and
 * evictions its grants crossed are checked against it (lc_caps_seen) */
static int req_apply(struct lclient *c, struct mds_request *req, int r, const struct lc_caps_since *since,
		     struct lc_inode **target)
{
	struct mdsp_reply *rep = req->reply;
	struct lc_inode *din = NULL, *tin = NULL;

	if (target)
		*target = NULL;
	if (req->args.flags & MDSP_REQ_WANT_INOS)
		lc_deleg_reply(c, req);
	if (!rep)
		return r;
	/* first: an ENOENT or a listing of ours still on its way predates it */
	if (r == 0 && mdsp_op_changes_names(req->args.op)) {
		lc_dir_names_changed(c, req->args.ino, req->rx_seq);
		if (req->args.op == MDSP_OP_RENAME && req->args.ino2 != req->args.ino)
			lc_dir_names_changed(c, req->args.ino2, req->rx_seq);
	}
	if (rep->has_dir && rep->dir.ino)
		din = lc_inode_update_seen(c, &rep->dir, rep->dir_caps, rep->dir_cap_seq, since);
	if (rep->has_target && rep->target.ino)
		tin = lc_inode_update_seen(c, &rep->target, rep->caps, rep->cap_seq, since);
	/* the trace's dentry names the target only for these ops (LOOKUPPARENT's
	 * names the child whose parent the target is); cached under its lease */
	if (r == 0 && din && rep->dname && tin && tin != din && trace_names_target(req->args.op)) {
		if (rep->trace_flags & MDSP_TRACE_LEASE)
			lc_dcache_add_lease(c, din, rep->dname, tin->ino, rep->lease_seq);
		else
			lc_dcache_add(c, din, rep->dname, tin->ino);
	}
	/* a change applied but not yet journaled: the inodes of the trace
	 * depend on it until its SAFE reply (fsync waits for it) */
	if (r == 0 && mdsc_request_safe_state(req) == 0) {
		if (tin)
			lc_track_unsafe(tin, req);
		if (din && din != tin)
			lc_track_unsafe(din, req);
	}
	lc_put(c, din);
	if (target && r == 0)
		*target = tin;
	else
		lc_put(c, tin);
	return r;
}

int lc_req_run(struct lclient *c, struct mds_request *req, struct lc_inode **target)
{
	/* the reply is applied here, after the reader handed it over */
	struct lc_caps_since since = lc_caps_gen(c);
	int r;

	lc_async_order(c, req);
	r = mdsc_do_request(c->mdsc, req);

	return req_apply(c, req, r, &since, target);
}

int lc_req_submit(struct lclient *c, struct mds_request *req, struct lc_caps_since *since)
{
	int r;

	/* noted before it goes out, not when its reply is applied (which may
	 * be as long after as a listing takes to get there) */
	*since = lc_caps_gen(c);
	lc_async_order(c, req);
	r = mdsc_submit(c->mdsc, req);

	if (r == 0)
		mdsc_uncork(c->mdsc);   /* the caller waits for it soon: not held for company */
	return r;
}

int lc_req_wait(struct lclient *c, struct mds_request *req, const struct lc_caps_since *since,
		struct lc_inode **target)
{
	uint64_t tmo = lc_secs_ns(CFG_client_request_timeout);

	if (target)
		*target = NULL;
	return req_apply(c, req, mdsc_wait_reply(c->mdsc, req, tmo ? now_mono_ns() + tmo : 0, true), since,
			 target);
}

uint64_t lc_max_file_size(struct lclient *c)
{
	uint64_t v = c->mdsc ? mdsc_max_file_size(c->mdsc) : 0;

	if (v == 0)
		v = LC_MAX_FILE_SIZE_DEFAULT;   /* an older MDS did not say */
	return v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v;
}

bool lc_evicted(struct lclient *c, char *why, size_t len)
{
	return c->mdsc && mdsc_evicted(c->mdsc, why, len);
}

/* ---- delegated inos ------------------------------------------------------- */

void lc_deleg_want(struct lclient *c, struct mds_request *req)
{
	uint64_t n = 0;
	uint32_t i;

	if (!c->async_dirops)
		return;
	pthread_mutex_lock(&c->deleg_lock);
	for (i = 0; i < c->ndeleg; i++)
		n += c->deleg[i].len;
	if (!c->deleg_asked && !c->deleg_frozen && n < (c->deleg_chunk ? c->deleg_chunk / 2 : 1)) {
		c->deleg_asked = true;
		req->args.flags |= MDSP_REQ_WANT_INOS;
		req->deleg_epoch = c->deleg_epoch;
	}
	pthread_mutex_unlock(&c->deleg_lock);
}

void lc_deleg_reply(struct lclient *c, const struct mds_request *req)
{
	const struct mdsp_reply *rep = req->reply;

	pthread_mutex_lock(&c->deleg_lock);
	if (req->deleg_epoch != c->deleg_epoch) {
		/*
		 * Asked before a reconnect (lc_deleg_quiesce): what it brings
		 * is stale at the MDS, and the RECONNECT's deleg_tid does not
		 * cover the requests that would name it, so the MDS may free
		 * it under them.  Whenever it comes: to a caller that ran late,
		 * or as a SAFE reply the MDS sends on the new connection.
		 */
		pthread_mutex_unlock(&c->deleg_lock);
		return;
	}
	c->deleg_asked = false;
	/* a reply from the MDS's table of completed requests (a resend) names
	 * a range delegated before our reconnect: stale now (an older MDS
	 * still sends it) */
	if (rep && rep->deleg_len && rep->deleg_start && !(rep->flags & MDSP_REPLY_REPLAYED) &&
	    !c->deleg_frozen) {
		if (c->ndeleg == LC_DELEG_RANGES) {
			/* the oldest goes (its inos stay unused in the session's pool) */
			memmove(&c->deleg[0], &c->deleg[1], (LC_DELEG_RANGES - 1) * sizeof(c->deleg[0]));
			c->ndeleg--;
		}
		c->deleg[c->ndeleg].start = rep->deleg_start;
		c->deleg[c->ndeleg].len = rep->deleg_len;
		c->deleg[c->ndeleg].gen = mdsc_request_reply_gen(req);
		c->ndeleg++;
		c->deleg_chunk = rep->deleg_len;
		dout(CLIENT, 10, "delegated inos [%" PRIx64 ", +%" PRIu64 ")", rep->deleg_start, rep->deleg_len);
	}
	pthread_mutex_unlock(&c->deleg_lock);
}

void lc_deleg_reset(struct lclient *c)
{
	pthread_mutex_lock(&c->deleg_lock);
	c->ndeleg = 0;
	c->deleg_asked = false;
	c->deleg_frozen = false;
	c->deleg_epoch++;               /* an eviction, a new session: what was asked is gone too */
	pthread_mutex_unlock(&c->deleg_lock);
}

bool lc_deleg_take(struct lclient *c, uint64_t *ino, uint64_t *gen)
{
	bool ok = false;

	pthread_mutex_lock(&c->deleg_lock);
	if (c->ndeleg && !c->deleg_frozen) {
		*gen = c->deleg[0].gen;
		*ino = c->deleg[0].start++;
		if (!--c->deleg[0].len) {
			memmove(&c->deleg[0], &c->deleg[1], (c->ndeleg - 1) * sizeof(c->deleg[0]));
			c->ndeleg--;
		}
		c->deleg_taking++;
		ok = true;
	}
	pthread_mutex_unlock(&c->deleg_lock);
	return ok;
}

void lc_deleg_taken(struct lclient *c, bool *taking)
{
	if (!*taking)
		return;
	*taking = false;
	pthread_mutex_lock(&c->deleg_lock);
	if (!--c->deleg_taking)
		pthread_cond_broadcast(&c->deleg_cond);
	pthread_mutex_unlock(&c->deleg_lock);
}

/*
 * The MDS frees the ranges a reconnect makes stale once the session's
 * oldest_tid passes the RECONNECT's deleg_tid (mds/prealloc.c), so every
 * request naming one of their inos must have a tid up to it: none may be
 * taken from now on, and those taken must be registered first.  A take's
 * request is registered a few steps after it (asyncdir.c), with nothing
 * between that waits for the session.
 */
bool lc_deleg_quiesce(void *arg, uint64_t timeout_ns)
{
	struct lclient *c = arg;
	struct timespec ts = ns_to_timespec(now_mono_ns() + timeout_ns);
	uint32_t owed;

	pthread_mutex_lock(&c->deleg_lock);
	c->deleg_frozen = true;
	c->ndeleg = 0;
	c->deleg_asked = false;
	c->deleg_epoch++;               /* the replies to asks of before bring stale ranges */
	if (c->deleg_taking)
		perf_inc(&c->perf.deleg_quiesce_waits, 1);
	while (c->deleg_taking && pthread_cond_timedwait(&c->deleg_cond, &c->deleg_lock, &ts) != ETIMEDOUT)
		;
	owed = c->deleg_taking;
	pthread_mutex_unlock(&c->deleg_lock);
	if (owed)
		derr(CLIENT, "reconnect: %u asynchronous create(s) took a delegated ino and did not submit it "
		     "within %.1f s: the MDS keeps the session's old delegations", owed, (double)timeout_ns / 1e9);
	return !owed;
}
