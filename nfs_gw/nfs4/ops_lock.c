/*
 * ops_lock.c - byte-range locks held in the gateway: LOCK, LOCKT, LOCKU,
 * RELEASE_LOCKOWNER.
 *
 * Locks are advisory POSIX locks kept per file in open_state.c, with
 * conflict detection between lock-owners; the Linux client maps flock()
 * to a whole-file lock, so flock and fcntl locks from guests both end up
 * here.  Blocking lock types (READW/WRITEW) are answered NFS4ERR_DENIED
 * like the others: the client polls.
 *
 * They are the MDS's locks too (client/flock.c, owner namespace
 * LC_LOCK_NS_NFS, the lock stateid's id as the owner), so processes on
 * other mounts and other gateways see them and the other way round: a
 * LOCK that passes the gateway's own check is asked of the MDS (without
 * waiting) before it is recorded; LOCKT asks the MDS when the gateway
 * knows no conflict; LOCKU and every way a lock stateid ends (CLOSE of
 * its locks, RELEASE_LOCKOWNER, an expired or courtesy client, FREE_STATEID)
 * release them at the MDS once st->lock is dropped (os_putlist_run).  A
 * conflict at the MDS is answered NFS4ERR_DENIED naming the holder as
 * client id 0, owner "loligo-session-S-pid-P".
 *
 * No MDS round trip is made under st->lock, which every OPEN and CLOSE
 * needs (issue 21).  LOCK and LOCKU check and decide under it, pin the
 * lock stateid and take the file's lock-call marker (open_state.h), drop
 * it for the MDS call and take it again to record the result: the lock
 * ranges and the stateid's new seqid together, so a LOCK's seqid moves
 * with its result.  If the lock stateid went meanwhile (a CLOSE of its
 * open, RELEASE_LOCKOWNER, FREE_STATEID, the end of its client), the LOCK
 * gives back what the MDS granted and answers NFS4ERR_BAD_STATEID (or
 * NFS4ERR_EXPIRED for a cancelled lease).  One LOCK/LOCKU per file is at
 * the MDS at a time, so a conflict between two of this gateway's
 * lock-owners is still seen here first and answered with the owner that
 * holds it; others of the file wait for it (bounded, then
 * NFS4ERR_DELAY), nothing else does.  LOCKT asks the MDS with no lock
 * held.
 *
 * The rules the RFCs leave to the server follow POSIX and knfsd: a read
 * lock needs an open for reading and a write lock one for writing
 * (NFS4ERR_OPENMODE); the object must be a regular file (NFS4ERR_ISDIR,
 * NFS4ERR_SYMLINK, else NFS4ERR_WRONG_TYPE / 4.0 NFS4ERR_INVAL); 4.1
 * ignores the client ids and seqids in the arguments (RFC 8881 18.10.3,
 * 18.11.3, 18.12.3), 4.0 checks them: a lock-owner's client must be the
 * open's (NFS4ERR_BAD_STATEID, or NFS4ERR_STALE_CLIENTID for one of an
 * earlier instance), an open_to_lock_owner LOCK of a known lock-owner is
 * in that owner's sequence too, and one for a file the lock-owner already
 * has lock state on is NFS4ERR_BAD_SEQID (RFC 7530 16.10.5).  A conflict
 * with a courtesy client's lock cancels that client's lease and the lock
 * is granted.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lockdep.h"
#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs_gw/nfs4/recovery.h"

enum { READ_LT = 1, WRITE_LT = 2, READW_LT = 3, WRITEW_LT = 4 };
#define SEQ_WAIT_NS (2ull * 1000000000ull)

/* How long a LOCK/LOCKU waits for another one of its file at the MDS. */
#define LK_WAIT_NS (2ull * 1000000000ull)

uint32_t nfs4ops_v40_client(struct nfs4_compound *cs, uint64_t clientid);
typedef uint32_t (*seq_fn)(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
			   struct os_putlist *pl);
uint32_t nfs4ops_seq_stid_op(struct nfs4_compound *cs, const struct nfs4_stateid *sid, uint32_t seqid,
			     unsigned int kinds, seq_fn fn, void *arg, struct xdr_enc *res);

/*
 * Every MDS call of this file starts here: no mutex may be held across it
 * (st->lock above all: lockdep aborts a debug build that does), also when
 * the client library answers without asking the MDS this time.
 */
static void mds_call_begin(struct nfs4_compound *cs, uint64_t ino)
{
	nfs4ops_mds_lock_hook_fn h = atomic_load_explicit(&nfs4ops_mds_lock_hook, memory_order_acquire);

	lockdep_might_wait("a lock request to the MDS");
	if (h)
		h(cs, cs->op, ino);
}

static uint32_t lock_type(uint32_t t)
{
	return (t == READ_LT || t == READW_LT) ? OS_READ_LT : OS_WRITE_LT;
}

static void put_denied(struct nfs4_compound *cs, struct xdr_enc *res, const struct os_lock *l)
{
	cs->body_on_error = true;
	xdr_put_u64(res, l->start);
	xdr_put_u64(res, l->end == UINT64_MAX ? UINT64_MAX : l->end - l->start);
	xdr_put_u32(res, l->type == OS_READ_LT ? READ_LT : WRITE_LT);
	xdr_put_u64(res, l->ls->owner->clientid);
	xdr_put_opaque(res, l->ls->owner->owner, l->ls->owner->len);
}

/* NFS [start, end) (end UINT64_MAX: to EOF) as the client library's lock */
static void mds_lock_of(struct lc_lock *lk, uint32_t type, uint64_t start, uint64_t end, uint64_t owner)
{
	memset(lk, 0, sizeof(*lk));
	lk->type = type == OS_READ_LT ? F_RDLCK : type == OS_WRITE_LT ? F_WRLCK : F_UNLCK;
	lk->start = start;
	lk->len = end == UINT64_MAX ? 0 : end - start;
	lk->owner = owner;
	lk->owner_ns = LC_LOCK_NS_NFS;
}

/* LOCK4denied for a lock the MDS says another client (or mount) holds */
static void put_denied_mds(struct nfs4_compound *cs, struct xdr_enc *res, const struct lc_lock *held)
{
	char owner[64];
	int n = snprintf(owner, sizeof(owner), "loligo-session-%" PRIu64 "-pid-%d", held->holder_session,
			 (int)held->pid);

	cs->body_on_error = true;
	xdr_put_u64(res, held->start);
	xdr_put_u64(res, held->len ? held->len : UINT64_MAX);
	xdr_put_u32(res, held->type == F_RDLCK ? READ_LT : WRITE_LT);
	xdr_put_u64(res, 0);
	xdr_put_opaque(res, (const uint8_t *)owner, (uint32_t)n);
}

/* Who holds what the MDS refused @lk for (-EAGAIN): an F_GETLK, no lock held. */
static void mds_holder(struct nfs4ops_ctx *c, struct lc_inode *in, const struct lc_lock *lk, struct lc_lock *held)
{
	*held = *lk;
	held->type = lk->type == F_UNLCK ? F_WRLCK : lk->type;
	if (lc_getlk(c->lc, in, held) || held->type == F_UNLCK) {
		/* gone meanwhile, or not known: still denied, holder unknown */
		*held = *lk;
		held->holder_session = 0;
	}
}

/* What a lock request the MDS refused with @r answers (-EAGAIN: DENIED with @held, mds_holder()). */
static uint32_t mds_refused(struct nfs4_compound *cs, int r, const struct lc_lock *held, struct xdr_enc *res)
{
	if (r == -EAGAIN) {
		put_denied_mds(cs, res, held);
		return NFS4ERR_DENIED;
	}
	if (r == -ENOLCK)        /* past the MDS's per-session lock limits */
		return cs->minorversion ? NFS4ERR_DELAY : NFS4ERR_RESOURCE;
	return nfs4_errno_to_status(r);
}

/* The current filehandle must be a regular file: its inode number. */
static uint32_t cur_file(struct nfs4_compound *cs, uint64_t *ino)
{
	struct nfs4_obj o;
	uint32_t st = nfs4ops_cur(cs, &o);

	if (st)
		return st;
	st = o.in ? nfs4ops_file_type(cs, o.attr.mode) : NFS4ERR_ISDIR;
	*ino = o.attr.ino;
	nfs4ops_release(cs, &o);
	return st;
}

struct lock_args {
	uint32_t type;
	bool reclaim;
	uint64_t start, end;
	uint64_t ino;                    /* the current filehandle's */
};

/* st->lock held: another owner's lock in the way of @a on @ls's file (DENIED), a
 * courtesy client's (NFS4OPS_RETRY, ops_int.h), or none (NFS4_OK) */
static uint32_t local_conflict(struct nfs4_compound *cs, struct os_stid *ls, const struct lock_args *a,
			       struct xdr_enc *res)
{
	const struct os_lock *l = os_lock_conflict_locked(ls->file, ls->owner, a->type, a->start, a->end);

	if (l && l->ls->clientid != ls->clientid && nfs4ops_courtesy_candidate(cs, l->ls->clientid))
		return NFS4OPS_RETRY;
	if (l) {
		put_denied(cs, res, l);
		return NFS4ERR_DENIED;
	}
	return NFS4_OK;
}

/* st->lock held: the LOCK is granted; its stateid's seqid moves with it */
static uint32_t lock_granted(struct nfs4_compound *cs, struct os_stid *ls, struct xdr_enc *res)
{
	struct nfs4_stateid sid;

	ls->seqid++;
	os_stid_wire(nfs4ops_ctx(cs)->st, ls, &sid);
	nfs4ops_stateid_out(cs, &sid);
	nfs4_put_stateid(res, &sid);
	return NFS4_OK;
}

/*
 * st->lock held; @ls checked and pinned by the caller.  The MDS is asked
 * with st->lock dropped (the top of this file), so @ls may be gone when
 * this returns (os_stid_live); st->lock is held again then.  A conflicting
 * lock of another client may be a courtesy client's: then NFS4OPS_RETRY
 * (ops_int.h).  Inode references to put go into @pl.
 */
static uint32_t do_lock(struct nfs4_compound *cs, struct os_stid *ls, const struct lock_args *a, struct xdr_enc *res,
			struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_file *f = ls->file;
	struct lc_lock lk, held;
	struct lc_inode *in;
	bool undo = false;
	uint32_t st;
	int r;

	st = local_conflict(cs, ls, a, res);
	if (st)
		return st;
	if (!f->in) {
		/* no inode to ask the MDS about: the gateway's own record only */
		if (os_lock_set_locked(f, ls, a->type, a->start, a->end))
			return NFS4ERR_RESOURCE;
		return lock_granted(cs, ls, res);
	}
	st = os_file_lk_begin_locked(c->st, f, LK_WAIT_NS);
	if (st)
		return st;
	/* we may have waited: the state may be gone, another LOCK of the file recorded */
	if (!os_stid_live(ls) || ls->file != f) {
		st = NFS4ERR_BAD_STATEID;
		goto out;
	}
	st = local_conflict(cs, ls, a, res);
	if (st)
		goto out;
	in = f->in;
	if (!in) {
		st = os_lock_set_locked(f, ls, a->type, a->start, a->end) ? NFS4ERR_RESOURCE : lock_granted(cs, ls, res);
		goto out;
	}
	lc_get(in);                       /* a reference count: no client library work under the lock */
	os_putlist_add_inode(pl, in);     /* put once st->lock is dropped for good */
	mds_lock_of(&lk, a->type, a->start, a->end, ls->id);

	/* other mounts' and gateways' locks: the MDS's, asked without st->lock */
	pthread_mutex_unlock(&c->st->lock);
	mds_call_begin(cs, f->ino);
	r = lc_setlk(c->lc, in, &lk, false);
	if (r == -EAGAIN)
		mds_holder(c, in, &lk, &held);
	pthread_mutex_lock(&c->st->lock);

	if (!os_stid_live(ls) || ls->file != f) {
		/* released meanwhile (CLOSE, RELEASE_LOCKOWNER, FREE_STATEID,
		 * the end of its client): nothing of this LOCK may stay */
		st = NFS4ERR_BAD_STATEID;
		undo = !r;
	} else if (r) {
		st = mds_refused(cs, r, &held, res);
	} else if (os_lock_set_locked(f, ls, a->type, a->start, a->end)) {
		st = NFS4ERR_RESOURCE;
		undo = true;
	} else {
		st = lock_granted(cs, ls, res);
	}
	if (undo) {
		/* what the MDS granted goes back, still as the file's one lock call */
		struct lc_lock un;

		mds_lock_of(&un, 0, a->start, a->end, lk.owner);
		pthread_mutex_unlock(&c->st->lock);
		lockdep_might_wait("a lock request to the MDS");
		r = lc_setlk(c->lc, in, &un, false);
		if (r)        /* the MDS drops it with the gateway's session at the latest */
			dout(NFS, 1, "LOCK: the MDS did not take back [%" PRIu64 ", %" PRIu64 ") of lock stateid %"
			     PRIx64 ": %s", a->start, a->end, lk.owner, strerror(-r));
		pthread_mutex_lock(&c->st->lock);
	}
out:
	os_file_lk_end_locked(c->st, f);
	return st;
}

/* POSIX: a read lock on an open for reading, a write lock on one for writing */
static uint32_t check_openmode(const struct os_stid *open, uint32_t type)
{
	uint32_t need = type == OS_READ_LT ? OS_SHARE_ACCESS_READ : OS_SHARE_ACCESS_WRITE;

	if (!open)
		return NFS4ERR_BAD_STATEID;
	return (open->access & need) ? NFS4_OK : NFS4ERR_OPENMODE;
}

static uint32_t lock_existing_fn(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
				 struct os_putlist *pl)
{
	struct lock_args *a = arg;
	uint32_t st;

	if (a->ino != s->file->ino)
		return NFS4ERR_BAD_STATEID;
	st = check_openmode(s->open, a->type);
	if (st)
		return st;
	os_stid_pin(s);
	st = do_lock(cs, s, a, res, pl);
	os_stid_unpin_locked(nfs4ops_ctx(cs)->st, s);
	return st;
}

struct new_owner_args {
	struct lock_args *la;
	uint64_t clientid;
	const uint8_t *owner;
	uint32_t owner_len;
	uint32_t lock_seqid;
};

/*
 * LOCK with open_to_lock_owner4.  In 4.0 the open-owner's sequence is
 * already held (nfs4ops_seq_stid_op); a lock-owner the server knows is
 * sequenced as well: its lock_seqid must be its next one (this may wait
 * for a predecessor, st->lock dropped meanwhile), and the reply is kept
 * for both owners.
 */
static uint32_t lock_new_fn(struct nfs4_compound *cs, struct os_stid *os, void *arg, struct xdr_enc *res,
			    struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct new_owner_args *a = arg;
	struct os_owner *lo;
	struct os_stid *ls;
	struct nfs4_stateid osid;
	bool v40 = cs->minorversion == 0, gated = false;
	uint64_t os_id = os->id;
	size_t body = res->len;
	uint32_t st;

	if (a->la->ino != os->file->ino)
		return NFS4ERR_BAD_STATEID;
	if (v40 && a->clientid != os->clientid)
		return (uint32_t)(a->clientid >> 32) != c->st->boot ? NFS4ERR_STALE_CLIENTID : NFS4ERR_BAD_STATEID;
	st = check_openmode(os, a->la->type);
	if (st)
		return st;
	lo = os_owner_find_locked(c->st, os->clientid, true, a->owner, a->owner_len, true);
	if (!lo)
		return NFS4ERR_RESOURCE;
	lo->v40 = v40;
	if (v40 && lo->nstids == 0 && !lo->busy && !lo->waiters)
		os_owner_forget_locked(c->st, lo);    /* no lock state left: a lock-owner name used anew */
	if (v40 && lo->seq_valid) {
		/* a known lock-owner: in its sequence too */
		os_stid_wire(c->st, os, &osid);
		st = os_seq_begin_locked(c->st, lo, a->lock_seqid, SEQ_WAIT_NS);
		if (st == OS_SEQ_REPLAY)
			st = NFS4ERR_BAD_SEQID;   /* a new open_seqid with an old lock_seqid: not a retransmission */
		if (st)
			return st;
		gated = true;
		/* we may have waited: is the open still there? */
		if (os_stid_check_locked(c->st, &osid, 0, 0, OS_OPEN, &os) || os->id != os_id) {
			st = NFS4ERR_BAD_STATEID;
			goto out;
		}
	}
	ls = os_stid_find_locked(os->file, lo, OS_LOCK);
	if (ls && v40) {
		/* RFC 7530 16.10.5: lock state exists, yet new_lock_owner */
		st = NFS4ERR_BAD_SEQID;
		goto out;
	}
	if (!ls) {
		ls = os_stid_new_locked(c->st, OS_LOCK, lo, os->file);
		if (!ls) {
			st = NFS4ERR_RESOURCE;
			goto out;
		}
		ls->open = os;
	}
	/* the MDS is asked with st->lock dropped: the lock stateid and the
	 * lock-owner stay (a 4.1 or new 4.0 lock-owner is not sequenced:
	 * pinned as a 4.1 OPEN pins its open-owner) */
	os_stid_pin(ls);
	lo->waiters++;
	st = do_lock(cs, ls, a->la, res, pl);
	lo->waiters--;
	if (!os_stid_live(ls)) {
		/* its open went meanwhile: nothing of this LOCK stays, nor a
		 * lock-owner nothing else uses (a sequenced one is kept) */
		if (!gated)
			os_owner_release_locked(c->st, lo);
	} else if (st && ls->seqid == 1 && !os_stid_has_locks_locked(ls)) {
		os_stid_free_locked(c->st, ls, pl);   /* nothing was created after all */
	} else if (v40 && !gated && st != NFS4OPS_RETRY) {
		/* a new lock-owner: its sequence starts at lock_seqid */
		lo->seqid = a->lock_seqid;
		lo->seq_valid = true;
	}
	os_stid_unpin_locked(c->st, ls);
out:
	if (gated && st != NFS4OPS_RETRY) {
		os_seq_end_locked(c->st, lo, a->lock_seqid, OP_LOCK, st, (st && !cs->body_on_error) ? NULL : res->buf + body,
				  (st && !cs->body_on_error) ? 0 : res->len - body, NULL, 0);
	} else if (gated) {
		/* the request runs again: its lock-owner sequence with it */
		lo->busy = false;
		pthread_cond_broadcast(&lo->cv);
	}
	return st;
}

NFS4_OP(lock)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint32_t locktype, new_owner, st;
	uint64_t off, len;
	struct lock_args la;
	bool reclaim, done = false;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (xdr_get_u32(args, &locktype) || xdr_get_bool(args, &reclaim) || xdr_get_u64(args, &off) ||
	    xdr_get_u64(args, &len) || xdr_get_u32(args, &new_owner) || new_owner > 1)
		return NFS4ERR_BADXDR;
	if (locktype < READ_LT || locktype > WRITEW_LT)
		return NFS4ERR_BADXDR;
	la.type = lock_type(locktype);
	la.reclaim = reclaim;
	st = cur_file(cs, &la.ino);
	if (st)
		return st;
	if (!os_lock_range(off, len, &la.start, &la.end))
		return NFS4ERR_INVAL;
	if (cs->minorversion >= 1) {
		pthread_mutex_lock(&cs->srv->lock);
		done = cs->clp->reclaim_complete;
		pthread_mutex_unlock(&cs->srv->lock);
	}
	if (reclaim && (!os_in_grace(c->st) || done))
		return NFS4ERR_NO_GRACE;
	/* 4.1: only a recorded client reclaims; a 4.0 reclaim LOCK stands on
	 * an open its client reclaimed, which OPEN checked */
	if (reclaim && cs->clp && !nfs4_rec_may_reclaim(cs->srv, cs->clp))
		return NFS4ERR_RECLAIM_BAD;
	/* RFC 8881 18.51.3: no new locks before the client's RECLAIM_COMPLETE */
	if (!reclaim && (os_in_grace(c->st) || (cs->minorversion >= 1 && !done)))
		return NFS4ERR_GRACE;
	if (new_owner) {
		struct nfs4_stateid osid;
		struct new_owner_args na = { .la = &la };
		uint32_t open_seqid;

		if (xdr_get_u32(args, &open_seqid) || nfs4_get_stateid(args, &osid) ||
		    xdr_get_u32(args, &na.lock_seqid) || xdr_get_u64(args, &na.clientid) ||
		    xdr_get_opaque(args, &na.owner, &na.owner_len, NFS4_OPAQUE_LIMIT))
			return NFS4ERR_BADXDR;
		st = nfs4ops_seq_stid_op(cs, &osid, open_seqid, OS_OPEN, lock_new_fn, &na, res);
	} else {
		struct nfs4_stateid lsid;
		uint32_t lock_seqid;

		if (nfs4_get_stateid(args, &lsid) || xdr_get_u32(args, &lock_seqid))
			return NFS4ERR_BADXDR;
		st = nfs4ops_seq_stid_op(cs, &lsid, lock_seqid, OS_LOCK, lock_existing_fn, &la, res);
	}
	return st;
}

NFS4_OP(lockt)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint32_t locktype, owner_len, st;
	uint64_t off, len, clientid, start, end, ino = 0, holder;
	const uint8_t *owner_name;
	const struct os_lock *l;
	struct os_owner *lo;
	struct os_file *f;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (xdr_get_u32(args, &locktype) || xdr_get_u64(args, &off) || xdr_get_u64(args, &len) ||
	    xdr_get_u64(args, &clientid) || xdr_get_opaque(args, &owner_name, &owner_len, NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	if (locktype < READ_LT || locktype > WRITEW_LT)
		return NFS4ERR_BADXDR;
	st = cur_file(cs, &ino);
	if (st)
		return st;
	if (!os_lock_range(off, len, &start, &end))
		return NFS4ERR_INVAL;
	if (cs->minorversion >= 1) {
		clientid = cs->clp->clientid;     /* RFC 8881 18.11.3: the argument is ignored */
	} else {
		st = nfs4ops_v40_client(cs, clientid);
		if (st)
			return st;
	}
	for (;;) {
		pthread_mutex_lock(&c->st->lock);
		f = os_file_get_locked(c->st, ino, false);
		l = NULL;
		if (f) {
			lo = os_owner_find_locked(c->st, clientid, true, owner_name, owner_len, false);
			/* an unknown owner holds nothing: any lock conflicts with a writer */
			l = os_lock_conflict_locked(f, lo, lock_type(locktype), start, end);
		}
		holder = l ? l->ls->clientid : 0;
		if (l && holder != clientid && nfs4ops_courtesy_candidate(cs, holder)) {
			pthread_mutex_unlock(&c->st->lock);
			nfs4ops_courtesy_retry(cs);
			continue;
		}
		if (l) {
			put_denied(cs, res, l);
			pthread_mutex_unlock(&c->st->lock);
			return NFS4ERR_DENIED;
		}
		pthread_mutex_unlock(&c->st->lock);
		break;
	}
	/* none here: another mount's or gateway's, at the MDS?  As the
	 * lock-owner's stateid on the file if it has one (its own locks
	 * conflict with nothing), else as nobody */
	{
		struct nfs4_obj o;
		uint64_t owner = 0;
		struct lc_lock lk;
		int r;

		pthread_mutex_lock(&c->st->lock);
		f = os_file_get_locked(c->st, ino, false);
		if (f) {
			struct os_stid *ls;

			lo = os_owner_find_locked(c->st, clientid, true, owner_name, owner_len, false);
			ls = lo ? os_stid_find_locked(f, lo, OS_LOCK) : NULL;
			owner = ls ? ls->id : 0;
		}
		pthread_mutex_unlock(&c->st->lock);
		st = nfs4ops_cur(cs, &o);
		if (st)
			return st;
		mds_lock_of(&lk, lock_type(locktype), start, end, owner);
		mds_call_begin(cs, ino);
		r = o.in ? lc_getlk(c->lc, o.in, &lk) : -EINVAL;
		nfs4ops_release(cs, &o);
		if (r)
			return nfs4_errno_to_status(r);
		if (lk.type == F_UNLCK)
			return NFS4_OK;
		put_denied_mds(cs, res, &lk);
		return NFS4ERR_DENIED;
	}
}

/*
 * st->lock held, @ls checked.  The gateway's record and the stateid's seqid
 * change first (LOCKU cannot fail after that), then the MDS is told with
 * st->lock dropped, holding the file's lock-call marker so that a LOCK of
 * the file that follows reaches the MDS after this unlock.
 */
static uint32_t locku_fn(struct nfs4_compound *cs, struct os_stid *ls, void *arg, struct xdr_enc *res,
			 struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct lock_args *a = arg;
	struct os_file *f = ls->file;
	struct nfs4_stateid sid;
	struct lc_inode *in;
	struct lc_lock un;
	uint32_t st;
	int r;

	if (a->ino != f->ino)
		return NFS4ERR_BAD_STATEID;
	if (!f->in) {
		if (os_lock_unset_locked(f, ls, a->start, a->end))
			return NFS4ERR_RESOURCE;
		goto done;
	}
	os_stid_pin(ls);
	st = os_file_lk_begin_locked(c->st, f, LK_WAIT_NS);
	if (st) {
		os_stid_unpin_locked(c->st, ls);
		return st;
	}
	if (!os_stid_live(ls) || ls->file != f) {
		st = NFS4ERR_BAD_STATEID;         /* went while we waited for the file */
		goto out;
	}
	if (os_lock_unset_locked(f, ls, a->start, a->end)) {
		st = NFS4ERR_RESOURCE;
		goto out;
	}
	ls->seqid++;
	os_stid_wire(c->st, ls, &sid);
	in = f->in;
	if (in) {
		lc_get(in);
		os_putlist_add_inode(pl, in);
		mds_lock_of(&un, 0, a->start, a->end, ls->id);
		pthread_mutex_unlock(&c->st->lock);
		mds_call_begin(cs, f->ino);
		r = lc_setlk(c->lc, in, &un, false);
		if (r)     /* unlocked here; the MDS drops it with the session at the latest */
			dout(NFS, 1, "LOCKU: the MDS did not release [%" PRIu64 ", %" PRIu64 ") of lock stateid %"
			     PRIx64 ": %s", a->start, a->end, un.owner, strerror(-r));
		pthread_mutex_lock(&c->st->lock);
	}
	nfs4ops_stateid_out(cs, &sid);
	nfs4_put_stateid(res, &sid);
	st = NFS4_OK;
out:
	os_file_lk_end_locked(c->st, f);
	os_stid_unpin_locked(c->st, ls);
	return st;
done:
	ls->seqid++;
	os_stid_wire(c->st, ls, &sid);
	nfs4ops_stateid_out(cs, &sid);
	nfs4_put_stateid(res, &sid);
	return NFS4_OK;
}

NFS4_OP(locku)
{
	struct nfs4_stateid sid;
	struct lock_args la = { 0 };
	uint32_t locktype, seqid, st;
	uint64_t off, len;

	if (xdr_get_u32(args, &locktype) || xdr_get_u32(args, &seqid) || nfs4_get_stateid(args, &sid) ||
	    xdr_get_u64(args, &off) || xdr_get_u64(args, &len))
		return NFS4ERR_BADXDR;
	if (locktype < READ_LT || locktype > WRITEW_LT)
		return NFS4ERR_BADXDR;
	st = cur_file(cs, &la.ino);
	if (st)
		return st;
	if (!os_lock_range(off, len, &la.start, &la.end))
		return NFS4ERR_INVAL;
	return nfs4ops_seq_stid_op(cs, &sid, seqid, OS_LOCK, locku_fn, &la, res);
}

NFS4_OP(release_lockowner)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_putlist pl = { 0 };
	const uint8_t *owner;
	uint32_t owner_len, st = NFS4_OK;
	uint64_t clientid;
	struct os_owner *lo;

	(void)res;
	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (xdr_get_u64(args, &clientid) || xdr_get_opaque(args, &owner, &owner_len, NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	st = nfs4ops_v40_client(cs, clientid);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	lo = os_owner_find_locked(c->st, clientid, true, owner, owner_len, false);
	if (lo) {
		/* every lock stateid of the owner, unless one still holds locks */
		for (unsigned int h = 0; h < OS_HASH && !st; h++)
			for (struct os_stid *s = c->st->stids[h]; s; s = s->hnext)
				if (s->owner == lo && !s->closed && os_stid_has_locks_locked(s)) {
					st = NFS4ERR_LOCKS_HELD;
					break;
				}
		for (unsigned int h = 0; h < OS_HASH && !st && (lo->nstids || lo->closed); h++) {
			struct os_stid *s = c->st->stids[h];

			while (s) {
				struct os_stid *next = s->hnext;

				if (s->owner == lo) {
					struct os_file *f = s->file;

					os_stid_free_locked(c->st, s, &pl);
					if (f)
						os_file_put_locked(c->st, f);
				}
				s = next;
			}
		}
		/* RFC 7530 16.37.4: "future client requests will not reference
		 * this lock_owner": its sequence goes with it (the client may
		 * reuse the name for a new lock-owner) */
		if (!st)
			os_owner_release_locked(c->st, lo);
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	return st;
}
