/*
 * asyncdir.c - creates, mkdirs and the setattrs that follow them answered by
 * the client itself, sent to the MDS in the background (asynchronous
 * directory operations: the Linux ceph client's async create, with Ceph's
 * delegated inos; issue 13.3).
 *
 * An untar is a chain of create, write, setattr and close, and each create
 * waited for an MDS round trip (and the kernel's LOOKUP before it for
 * another).  Here a create or mkdir of a name in directory D is answered at
 * once when
 *  - we hold Dc on D (MDSP_CAP_DIR_CREATE, mds/locker.c): nobody else
 *    caches anything of D, and anyone who wants to look at D or change it
 *    revokes Dc first;
 *  - the name is known not to exist: a negative dentry under Fs, or D is
 *    "complete" (we made it under Dc and every name in it is in our dentry
 *    cache; lc_lookup then answers ENOENT itself, so the kernel's LOOKUP
 *    before a create costs no round trip either);
 *  - the caller may write in D by the cached mode (As), and
 *  - an ino delegated to our session is left (mds/prealloc.c: a create
 *    flagged MDSP_REQ_WANT_INOS brings a fresh range in its reply; we ask
 *    when less than half of the last one is left), and
 *  - the store is not near full (the MDS refuses creates once its store is
 *    full, and the caller must hear ENOSPC from the create itself).
 * The new inode is made in the cache with the attributes the MDS will give
 * it (owner from the caller, group and setgid from a setgid parent, the
 * parent's layout) and the caps it will grant the creator (everything; Dc
 * on a new directory), D's times, link count and entry count move as the
 * MDS will move them, the name goes into the dentry cache, and the request
 * (want_ino = that ino) is submitted without waiting.  Everything else
 * takes the synchronous path (-EAGAIN).
 *
 * Ordering: requests go out in order on the one MDS connection and the MDS
 * runs a session's requests in arrival order; an async create cannot park
 * in the locker (nobody else holds caps on D to revoke), so a setattr or a
 * create in the new directory that follows it finds it done.  "Follows"
 * means submitted after it: the new name is in the caches a moment before
 * the create is submitted, so a request naming the new inode waits for
 * that (in->create_unsent, lc_async_order).  A resent create that parks at
 * the MDS after a restart keeps its place too: the session's later
 * requests, and flushes of the inode, wait behind it (mds/park.c).  A revoke of
 * Dc (process_revoke, caps.c) waits until every create that saw Dc has been
 * sent (dir->async_submitting) and acks after them, so the other client's
 * request that caused the revoke runs after all of them.
 *
 * Durability: the request is tracked on the new inode and on D like an
 * UNSAFE one from the start (lc_track_unsafe), so fsync of either waits
 * for SAFE.  It stays in the request map until SAFE: after an MDS restart
 * it is replayed (UNSAFE) or resent (unanswered) with its want_ino, and the
 * MDS gives it exactly that ino (prealloc.c), or fails it loudly.  A create
 * whose ino was delegated on an earlier connection than the one it is first
 * sent on (it took the ino before a reconnect) goes as a resend too
 * (req->want_ino_gen, mdsc_send_request): the restarted MDS has forgotten
 * the delegation and would refuse it as a fresh request.
 *
 * A failure at the MDS (ENOSPC, EDQUOT, EROFS, a refused ino...) cannot
 * reach the caller, who was answered already: it is logged, counted
 * (async_failed), the name leaves the caches, the file's data is purged at
 * its last close, and the next fsync of the file or of D returns the error
 * (as Ceph does).  close() does not report it.  After an ENOSPC, EDQUOT or
 * EROFS, and while the store is past its nearfull ratio, creates are synchronous (the
 * caller hears the error from the create itself).
 *
 * Setattrs (lc_async_setattr, at the end): the chmod, chown and utimensat
 * an untar does to each file it made are answered here too while nobody
 * else can know the inode (made here under its directory's Dc, that Dc
 * held since, no other name): decided by the MDS's own rules
 * (mds_proto/perm.c), sent behind the create, kept like the creates.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/ns_int.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "perm/perm.h"

#define Dc MDSP_CAP_DIR_CREATE
#define NLINK_MAX 65000u        /* the MDS's (mds/server.c) */
/* the provisional lease of a name created here: above any tombstone's */
#define ASYNC_LEASE_SEQ (UINT64_MAX - 1)
/* after a create failed with ENOSPC/EDQUOT/EROFS, creates wait for the MDS this long */
#define ASYNC_OFF_NS (10 * 1000000000ull)

/* ---- the create ---------------------------------------------------------------- */

static bool cred_in_group(const struct lc_cred *cr, uint32_t gid)
{
	if (!cr || cr->gid == gid)
		return true;    /* root is in every group as far as mode_strip_sgid goes */
	for (int i = 0; i < cr->ngroups && i < LC_MAX_GROUPS; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

static struct mdsp_time now_time(void)
{
	uint64_t ns = now_real_ns();

	return (struct mdsp_time){ .sec = (int64_t)(ns / 1000000000ull), .nsec = (uint32_t)(ns % 1000000000ull) };
}

/* The first reply, on the session reader thread (mds_client.c on_reply). */
static void async_done(struct mds_request *req, void *arg)
{
	struct lclient *c = arg;
	const struct mdsp_reply *rep = req->reply;
	const char *name = req->args.name;
	struct lc_inode *din = NULL, *tin;

	if (req->args.flags & MDSP_REQ_WANT_INOS)
		lc_deleg_reply(c, req);
	if (!rep)
		return;
	/* the MDS's attributes: ours moved ahead by the creates after this
	 * one (change counts them), so only the last one's reply lands */
	if (rep->has_dir && rep->dir.ino)
		din = lc_inode_update(c, &rep->dir, rep->dir_caps, rep->dir_cap_seq);
	if (rep->result == 0 && rep->has_target && rep->target.ino == req->args.want_ino) {
		tin = lc_inode_update(c, &rep->target, rep->caps, rep->cap_seq);
		/* the grant is the first the inode gets from the MDS: a close
		 * made before it gave up Fw/Fb with no grant seen, which the MDS
		 * ignores (older than its grant), and the grant brought them
		 * back; say again what we want, now at its seq */
		if (tin)
			lc_caps_update(c, tin);
		lc_put(c, tin);
		if (din && rep->dname && (rep->trace_flags & MDSP_TRACE_LEASE))
			lc_dcache_add_lease(c, din, rep->dname, rep->target.ino, rep->lease_seq);
		else if (din) {
			/* no lease after all: the name is not ours to cache */
			lc_dcache_remove(c, din->ino, name);
			lc_dir_not_complete(c, din->ino);
		}
		lc_put(c, din);
		return;
	}
	perf_inc(&c->perf.async_failed, 1);
	if (rep->result == -ENOSPC || rep->result == -EDQUOT || rep->result == -EROFS)
		/* the next creates hear it themselves, synchronously, for a while */
		atomic_store(&c->async_off_until, now_mono_ns() + ASYNC_OFF_NS);
	derr(CLIENT, "asynchronous %s of '%s' in directory %" PRIx64 " (ino %" PRIx64 ") failed at the MDS: %s%s; "
	     "the name is gone, the next fsync of the file or the directory reports it", mdsp_op_name(req->args.op),
	     name ? name : "", req->args.ino, req->args.want_ino, strerror(rep->result ? -rep->result : EIO),
	     rep->result ? "" : " (another ino)");
	lc_dcache_remove(c, req->args.ino, name);
	if (c->cb.inval_dentry)
		c->cb.inval_dentry(c->cb_arg, req->args.ino, name);
	tin = lc_ino_to_inode(c, req->args.want_ino);
	if (tin) {
		pthread_mutex_lock(&tin->lock);
		tin->mi.nlink = 0;
		tin->async_failed = true;
		if (!tin->unsafe_err)
			tin->unsafe_err = rep->result ? rep->result : -EIO;
		lc_attrs_forget_locked(tin);
		pthread_mutex_unlock(&tin->lock);
		/* what was written to it belongs to no file: gone at its last close */
		if (req->args.op == MDSP_OP_CREATE)
			lc_purge_data(c, tin);
		lc_put(c, tin);
	}
	if (!din)
		din = lc_ino_to_inode(c, req->args.ino);
	if (din) {
		pthread_mutex_lock(&din->lock);
		if (!din->unsafe_err)
			din->unsafe_err = rep->result ? rep->result : -EIO;
		lc_attrs_forget_locked(din);    /* our count of its entries was wrong: the MDS's next one wins */
		din->mi.change = 0;
		pthread_mutex_unlock(&din->lock);
		lc_put(c, din);
	}
}

/* client_debug_async_mkdir_delay: hold the window open, until the option says otherwise */
static void debug_submit_delay(struct lc_inode *in)
{
	uint64_t t0 = now_mono_ns(), d;

	if (!(d = lc_secs_ns(CFG_client_debug_async_mkdir_delay)))
		return;
	lc_op_wait_set(LC_WAIT_ASYNC, in->ino);
	while ((d = lc_secs_ns(CFG_client_debug_async_mkdir_delay)) && now_mono_ns() - t0 < d)
		usleep(20000);
	lc_op_wait_clear();
}

/* The request of the async create that made @in is submitted (or never
 * will be): what waits to go behind it goes.  *@unsent: not done yet. */
static void submitted(struct lclient *c, struct lc_inode *in, bool *unsent)
{
	if (!*unsent || !in)
		return;
	*unsent = false;
	lc_create_unsent_end(c, in);
}

int lc_async_create(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, int flags, bool mkdir,
		    const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh)
{
	uint32_t need = Dc | MDSP_CAP_ATTR_SHARED, caps, type = mkdir ? S_IFDIR : S_IFREG;
	struct mds_request *req = NULL;
	struct lc_inode *in = NULL;
	struct mdsp_inode mi;
	struct lc_attr da;
	uint64_t ino, ino_gen = 0, known, epoch;
	bool complete, write = (flags & O_ACCMODE) != O_RDONLY, unsent = false, taking = false;
	int r = -EAGAIN;

	/* a request queued while the session is away would go out fresh
	 * after a reconnect that may have lost the grant of its ino */
	if (!c->async_dirops || !c->mdsc || lc_evicted(c, NULL, 0) || !mdsc_is_open(c->mdsc))
		return -EAGAIN;
	/* a store near full: the MDS may refuse creates (ENOSPC), and the
	 * caller must hear it from the create */
	if (lc_data_nearfull(c) || now_mono_ns() < atomic_load(&c->async_off_until))
		return -EAGAIN;
	/* an unlink of the name answered here (asyncunlink.c) runs at the MDS first */
	lc_async_unlink_wait(c, dir, name);
	pthread_mutex_lock(&dir->lock);
	if ((dir->caps & need) != need || !S_ISDIR(dir->mi.mode) || dir->mi.nlink == 0 ||
	    (mkdir && dir->mi.nlink >= NLINK_MAX)) {
		pthread_mutex_unlock(&dir->lock);
		return -EAGAIN;
	}
	complete = lc_dir_complete_locked(dir);
	lc_inode_fill_attr_locked(dir, &da);
	da.mode = dir->mi.mode;
	da.may_acl = false;             /* held under Dc: it has no ACL (mds/locker.c allowed_for) */
	/* a revoke of Dc from here on waits until this create is sent */
	lc_async_submit_begin_locked(dir);
	pthread_mutex_unlock(&dir->lock);

	/* the name must be known not to exist */
	if (lc_dcache_lookup(c, dir, name, &known) ? known != 0 : !complete)
		goto out;
	if (lc_perm_check(&da, 3, cr) < 0)
		goto out;               /* the MDS says EACCES, in its words */
	/* a directory with a default ACL is never ours under Dc (the MDS
	 * inherits it, mds/locker.c allowed_for), so only the umask is left,
	 * where the kernel left it to us (-o acl) */
	if (cr && cr->umask_set)
		mode &= ~cr->umask;
	/* from here until its request is registered, a reconnect waits for
	 * us (lc_deleg_quiesce): its RECONNECT bounds the tids naming the ino */
	if (!lc_deleg_take(c, &ino, &ino_gen))
		goto out;
	taking = true;

	memset(&mi, 0, sizeof(mi));
	mi.ino = ino;
	mi.generation = 1;
	mi.uid = cr ? cr->uid : 0;
	mi.gid = cr ? cr->gid : 0;
	mode &= 07777;
	if (da.mode & S_ISGID) {
		mi.gid = da.gid;
		if (mkdir)
			mode |= S_ISGID;
	}
	/* mode_strip_sgid, as mds/server.c new_inode */
	if (!mkdir && (mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && (da.mode & S_ISGID) && cr &&
	    cr->uid != 0 && !cred_in_group(cr, da.gid))
		mode &= ~(mode_t)S_ISGID;
	mi.mode = type | mode;
	mi.nlink = mkdir ? 2 : 1;
	mi.ctime = now_time();
	mi.atime = mi.mtime = mi.btime = mi.ctime;
	mi.change = 1;
	/* a new inode has no xattrs (the MDS gives it none), and nobody but
	 * us knows it: getxattr (the kernel's security.capability before
	 * every write) is answered here under As, not by a round trip that
	 * would also send the create at once (issue 21.2) */
	mi.xattrs = MDSP_XATTRS_NONE;
	/* Dc is never held under a quota (mds/locker.c allowed_for) */
	mi.quota_room = MDSP_QUOTA_NONE;
	pthread_mutex_lock(&dir->lock);
	/* the layout new files get is the directory's (mds/server.c new_inode) */
	mi.object_size = dir->mi.object_size;
	mi.stripe_unit = dir->mi.stripe_unit;
	mi.stripe_count = dir->mi.stripe_count;
	mi.pool = dir->mi.pool;
	pthread_mutex_unlock(&dir->lock);
	if (!mkdir)
		mi.max_size = UINT64_MAX;

	req = lc_req_new(c, mkdir ? MDSP_OP_MKDIR : MDSP_OP_CREATE, dir->ino, cr);
	if (!req) {
		r = -ENOMEM;
		goto out;
	}
	req->args.mode = mi.mode;
	if (!mkdir)
		req->args.oflags = (uint32_t)((flags | O_CREAT | O_EXCL) & ~O_TRUNC);
	req->args.want_ino = ino;
	req->want_ino_gen = ino_gen;
	lc_deleg_want(c, req);
	req->on_reply = async_done;
	req->on_reply_arg = c;
	req->args.name = strdup(name);
	if (!req->args.name) {
		r = -ENOMEM;
		goto out;
	}

	/* behind the create of the directory, if it is an async one not sent
	 * yet; before ours is published, so no thread waits for two */
	lc_async_order(c, req);

	/* what the MDS grants the creator of a file nobody else knows */
	caps = MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED;
	if (mkdir)
		caps |= Dc;
	else
		caps |= MDSP_CAP_FILE_RD | MDSP_CAP_FILE_CACHE |
			(write ? MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER : 0);
	in = lc_inode_update(c, &mi, caps, 0);
	if (!in) {
		r = -ENOMEM;
		goto out;
	}
	/* from the name's publication below until the request is submitted,
	 * whatever names the inode waits (lc_async_order): a create in the new
	 * directory, or a chmod of the file, must not reach the MDS first */
	lc_create_unsent_begin(c, in);
	unsent = true;
	/* its setattrs are ours to answer while D keeps this Dc (lc_async_setattr) */
	pthread_mutex_lock(&dir->lock);
	epoch = dir->dstate ? dir->dstate->dc_epoch : 0;
	pthread_mutex_unlock(&dir->lock);
	pthread_mutex_lock(&in->lock);
	/* (no epoch, or no memory: its setattrs go to the MDS) */
	if (epoch && (in->dcm || (in->dcm = malloc(sizeof(*in->dcm))))) {
		in->dcm->parent = dir->ino;
		in->dcm->epoch = epoch;
	}
	if (mkdir)
		lc_dir_set_complete_locked(in);
	pthread_mutex_unlock(&in->lock);
	if (!mkdir) {
		*fh = lc_fh_new(c, in, flags & ~(O_CREAT | O_EXCL | O_TRUNC), cr);
		if (!*fh) {
			r = -ENOMEM;
			goto out;
		}
		pthread_mutex_lock(&in->lock);
		in->wanted_sent |= lc_caps_wanted_locked(in);   /* the create carries the open's wants */
		pthread_mutex_unlock(&in->lock);
	}

	/* the directory as the MDS will have it */
	pthread_mutex_lock(&dir->lock);
	dir->mi.mtime = dir->mi.ctime = mi.ctime;
	dir->mi.change++;
	dir->mi.files++;
	if (mkdir)
		dir->mi.nlink++;
	lc_dir_rd_drop_locked(dir);
	pthread_mutex_unlock(&dir->lock);
	/* a lease of our own until the reply brings the MDS's (nobody else
	 * may look at the name before it: Dc) */
	lc_dcache_add_lease(c, dir, name, ino, ASYNC_LEASE_SEQ);
	if (mkdir)
		debug_submit_delay(in);

	r = mdsc_submit(c->mdsc, req);
	lc_deleg_taken(c, &taking);
	submitted(c, in, &unsent);
	if (r < 0) {
		derr(CLIENT, "asynchronous %s of '%s': cannot submit: %s", mkdir ? "mkdir" : "create", name,
		     strerror(-r));
		lc_dcache_remove(c, dir->ino, name);
		if (fh && *fh) {
			lc_fh_free(c, *fh);
			*fh = NULL;
		}
		goto out;
	}
	lc_track_unsafe(in, req);
	lc_track_unsafe(dir, req);
	perf_inc(&c->perf.async_creates, 1);
	dout(CLIENT, 15, "async %s %" PRIx64 "/%s -> ino %" PRIx64 " tid %" PRIu64, mkdir ? "mkdir" : "create",
	     dir->ino, name, ino, req->args.tid);
	if (attr)
		lc_inode_fill_attr(in, attr);
	if (out) {
		*out = in;
		in = NULL;
	}
out:
	/* an ask whose reply will never come (not submitted): ask again later */
	if (r && req && (req->args.flags & MDSP_REQ_WANT_INOS))
		lc_deleg_reply(c, req);
	lc_deleg_taken(c, &taking);
	submitted(c, in ? in : (out ? *out : NULL), &unsent);
	lc_async_submit_end(dir);
	if (req)
		mdsc_request_put(req);
	if (in)
		lc_put(c, in);
	if (r == -EAGAIN)
		perf_inc(&c->perf.async_sync, 1);
	return r;
}

/* ---- setattrs ------------------------------------------------------------------ */

void lc_async_forget(struct lclient *c, uint64_t ino)
{
	struct lc_inode *in = ino ? lc_ino_to_inode(c, ino) : NULL;

	if (!in)
		return;
	pthread_mutex_lock(&in->lock);
	free(in->dcm);
	in->dcm = NULL;
	pthread_mutex_unlock(&in->lock);
	lc_put(c, in);
}

/* The first reply of a setattr answered here (session reader thread). */
static void async_setattr_done(struct mds_request *req, void *arg)
{
	struct lclient *c = arg;
	const struct mdsp_reply *rep = req->reply;
	struct lc_inode *in = lc_ino_to_inode(c, req->args.ino), *t;
	bool last;
	int err;

	if (!in)
		return;
	pthread_mutex_lock(&in->lock);
	last = --in->async_setattrs == 0;
	pthread_mutex_unlock(&in->lock);
	if (rep && rep->result == 0) {
		/* the MDS's attributes are ours (same rules, same clock); only
		 * the last reply lands, the earlier ones lack the later changes
		 * (the change count cannot tell: cap flushes move the MDS's) */
		if (last && rep->has_target && rep->target.ino == in->ino) {
			t = lc_inode_update(c, &rep->target, rep->caps, rep->cap_seq);
			if (t)
				lc_caps_update(c, t);   /* as for the create: nothing unwanted kept */
			lc_put(c, t);
		}
		lc_put(c, in);
		return;
	}
	err = rep && rep->result ? rep->result : -EIO;
	perf_inc(&c->perf.async_failed, 1);
	derr(CLIENT, "asynchronous setattr (mask 0x%x) of ino %" PRIx64 " failed at the MDS: %s; "
	     "its attributes are the MDS's again, the next fsync of the file reports it", req->args.mask,
	     req->args.ino, strerror(-err));
	pthread_mutex_lock(&in->lock);
	if (!in->unsafe_err)
		in->unsafe_err = err;
	free(in->dcm);
	in->dcm = NULL; /* the MDS decides its next ones */
	lc_attrs_forget_locked(in);
	in->mi.change = 0;              /* the MDS's next attributes win */
	pthread_mutex_unlock(&in->lock);
	lc_put(c, in);
}

/*
 * Ordering and revokes work as for the creates: the request is submitted
 * while the directory's async_submitting holds off a revoke of its Dc, so
 * it leaves on the one MDS connection before the revoke's ack, behind the
 * create of the inode; the MDS runs it before the request of the other
 * client that caused the revoke, which sees its result.  Its time is ours
 * (MDSP_SETATTR_CLIENT_TIME): the MDS ends with what we showed.
 *
 * Times and buffered writes: a write before the setattr set MDSP_DIRTY_MTIME
 * (the write's time, sent with the next cap flush); an mtime set here
 * supersedes it, so the flag goes and wmtime takes the new mtime (a flush
 * sent earlier arrives before this request; one sent again carries the new
 * mtime).  The size the writes made stays dirty: a later flush of it does
 * not touch mtime (locker.c apply_flush).  So no data is flushed first.
 */
int lc_async_setattr(struct lclient *c, struct lc_inode *in, uint32_t mask, const struct mdsp_inode *set,
		     const struct lc_cred *cr)
{
	const uint32_t local = MDSP_SETATTR_MODE | MDSP_SETATTR_UID | MDSP_SETATTR_GID | MDSP_SETATTR_ATIME |
			       MDSP_SETATTR_MTIME | MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW |
			       MDSP_SETATTR_CHOWN;
	struct mds_request *req = NULL;
	struct lc_inode *dir;
	struct mdsp_inode a = *set;
	uint64_t parent, epoch;
	uint32_t kill = 0;
	bool ok;
	int r = -EAGAIN;

	if (!c->async_dirops || !c->mdsc || !mask || (mask & ~local) || lc_evicted(c, NULL, 0) ||
	    !mdsc_is_open(c->mdsc))
		return -EAGAIN;
	pthread_mutex_lock(&in->lock);
	parent = in->dcm ? in->dcm->parent : 0;
	epoch = in->dcm ? in->dcm->epoch : 0;
	ok = parent && !in->async_failed && in->mi.nlink && lc_attrs_cached_locked(in);
	pthread_mutex_unlock(&in->lock);
	if (!ok || !(dir = lc_ino_to_inode(c, parent)))
		return -EAGAIN;
	pthread_mutex_lock(&dir->lock);
	if (!(dir->caps & Dc) || !dir->dstate || dir->dstate->dc_epoch != epoch || !dir->mi.nlink) {
		pthread_mutex_unlock(&dir->lock);
		lc_put(c, dir);
		return -EAGAIN;
	}
	/* a revoke of Dc from here on waits until this setattr is sent */
	lc_async_submit_begin_locked(dir);
	pthread_mutex_unlock(&dir->lock);

	req = lc_req_new(c, MDSP_OP_SETATTR, in->ino, cr);
	if (!req) {
		r = -ENOMEM;
		goto out;
	}
	a.ino = in->ino;
	a.ctime = now_time();
	pthread_mutex_lock(&in->lock);
	/* in->dcm again: a link or rename may have started meanwhile */
	r = in->dcm && in->dcm->parent == parent ?
		    mdsp_setattr_check(&in->mi, &req->args.caller, mask, &a, lc_max_file_size(c), &kill) : -EAGAIN;
	if (r == 0) {
		mdsp_setattr_apply(&in->mi, &req->args.caller, mask, &a, kill, a.ctime);
		if (mask & (MDSP_SETATTR_MTIME | MDSP_SETATTR_MTIME_NOW)) {
			in->dirty_meta &= ~(uint32_t)MDSP_DIRTY_MTIME;
			in->wmtime = in->mi.mtime;
		}
		in->async_setattrs++;
	}
	pthread_mutex_unlock(&in->lock);
	if (r < 0)
		goto out;               /* what the MDS would answer, in its words */
	req->args.mask = mask | MDSP_SETATTR_CLIENT_TIME;
	req->args.attr = a;
	req->on_reply = async_setattr_done;
	req->on_reply_arg = c;
	lc_async_order(c, req);
	r = mdsc_submit(c->mdsc, req);
	if (r < 0) {
		derr(CLIENT, "asynchronous setattr of ino %" PRIx64 ": cannot submit: %s", in->ino, strerror(-r));
		pthread_mutex_lock(&in->lock);
		in->async_setattrs--;
		free(in->dcm);
		in->dcm = NULL;
		lc_attrs_forget_locked(in);
		in->mi.change = 0;      /* what we applied is not the MDS's: its next attributes win */
		pthread_mutex_unlock(&in->lock);
		goto out;
	}
	lc_track_unsafe(in, req);
	perf_inc(&c->perf.async_setattrs, 1);
	dout(CLIENT, 15, "async setattr %" PRIx64 " mask 0x%x tid %" PRIu64, in->ino, mask, req->args.tid);
out:
	lc_async_submit_end(dir);
	lc_put(c, dir);
	if (req)
		mdsc_request_put(req);
	return r;
}
