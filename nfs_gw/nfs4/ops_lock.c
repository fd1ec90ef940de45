/*
 * ops_lock.c - byte-range locks held in the gateway: LOCK, LOCKT, LOCKU,
 * RELEASE_LOCKOWNER.
 *
 * Locks are advisory POSIX locks kept per file in open_state.c, with
 * conflict detection between lock-owners; the Linux client maps flock()
 * to a whole-file lock, so flock and fcntl locks from guests both end up
 * here.  Blocking lock types (READW/WRITEW) are answered NFS4ERR_DENIED
 * like the others: the client polls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

enum { READ_LT = 1, WRITE_LT = 2, READW_LT = 3, WRITEW_LT = 4 };
#define SEQ_WAIT_NS (2ull * 1000000000ull)

uint32_t nfs4ops_v40_client(struct nfs4_compound *cs, uint64_t clientid);
typedef uint32_t (*seq_fn)(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
			   struct os_putlist *pl);
uint32_t nfs4ops_seq_stid_op(struct nfs4_compound *cs, const struct nfs4_stateid *sid, uint32_t seqid,
			     unsigned int kinds, seq_fn fn, void *arg, struct xdr_enc *res);

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

/* the inode number the current filehandle names, without a lookup */
static uint32_t cur_ino(struct nfs4_compound *cs, uint64_t *ino)
{
	struct nfs4_fhinfo fi;
	uint32_t st = nfs4_fh_decode(&cs->cfh, &fi);

	if (st)
		return st;
	if (fi.kind != NFS4_FH_EXPORT)
		return NFS4ERR_ISDIR;
	*ino = fi.ino;
	return NFS4_OK;
}

struct lock_args {
	uint32_t type;
	bool reclaim;
	uint64_t start, end;
};

/* st->lock held; @ls checked */
static uint32_t do_lock(struct nfs4_compound *cs, struct os_stid *ls, const struct lock_args *a, struct xdr_enc *res)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	const struct os_lock *l;
	struct nfs4_stateid sid;

	l = os_lock_conflict_locked(ls->file, ls->owner, a->type, a->start, a->end);
	if (l) {
		put_denied(cs, res, l);
		return NFS4ERR_DENIED;
	}
	if (os_lock_set_locked(ls->file, ls, a->type, a->start, a->end))
		return NFS4ERR_RESOURCE;
	ls->seqid++;
	os_stid_wire(c->st, ls, &sid);
	nfs4ops_stateid_out(cs, &sid);
	nfs4_put_stateid(res, &sid);
	return NFS4_OK;
}

static uint32_t lock_existing_fn(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
				 struct os_putlist *pl)
{
	uint64_t ino = 0;

	(void)pl;
	if (cur_ino(cs, &ino) || ino != s->file->ino)
		return NFS4ERR_BAD_STATEID;
	return do_lock(cs, s, arg, res);
}

struct new_owner_args {
	const struct lock_args *la;
	uint64_t clientid;
	const uint8_t *owner;
	uint32_t owner_len;
	uint32_t lock_seqid;
};

static uint32_t lock_new_fn(struct nfs4_compound *cs, struct os_stid *os, void *arg, struct xdr_enc *res,
			    struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct new_owner_args *a = arg;
	struct os_owner *lo;
	struct os_stid *ls;
	uint64_t ino = 0;
	uint32_t st;

	(void)pl;
	if (cur_ino(cs, &ino) || ino != os->file->ino)
		return NFS4ERR_BAD_STATEID;
	if (cs->minorversion == 0 && a->clientid != os->clientid)
		return NFS4ERR_INVAL;
	lo = os_owner_find_locked(c->st, os->clientid, true, a->owner, a->owner_len, true);
	if (!lo)
		return NFS4ERR_RESOURCE;
	ls = os_stid_find_locked(os->file, lo, OS_LOCK);
	if (!ls) {
		ls = os_stid_new_locked(c->st, OS_LOCK, lo, os->file);
		if (!ls)
			return NFS4ERR_RESOURCE;
		ls->open = os;
	}
	st = do_lock(cs, ls, a->la, res);
	if (cs->minorversion == 0 && !lo->busy) {
		/* the lock-owner's sequence starts at lock_seqid */
		lo->seqid = a->lock_seqid;
		lo->seq_valid = true;
	}
	if (st && ls->seqid == 1 && !os_stid_has_locks_locked(ls))
		os_stid_free_locked(c->st, ls, pl);   /* nothing was created after all */
	return st;
}

NFS4_OP(lock)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint32_t locktype, new_owner, st;
	uint64_t off, len;
	struct lock_args la;
	bool reclaim;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (xdr_get_u32(args, &locktype) || xdr_get_bool(args, &reclaim) || xdr_get_u64(args, &off) ||
	    xdr_get_u64(args, &len) || xdr_get_u32(args, &new_owner) || new_owner > 1)
		return NFS4ERR_BADXDR;
	if (locktype < READ_LT || locktype > WRITEW_LT)
		return NFS4ERR_BADXDR;
	la.type = lock_type(locktype);
	la.reclaim = reclaim;
	if (!os_lock_range(off, len, &la.start, &la.end))
		return NFS4ERR_INVAL;
	if (reclaim && !os_in_grace(c->st))
		return NFS4ERR_NO_GRACE;
	if (!reclaim && os_in_grace(c->st))
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
	uint64_t off, len, clientid, start, end, ino = 0;
	const uint8_t *owner;
	const struct os_lock *l = NULL;
	struct os_owner *lo;
	struct os_file *f;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (xdr_get_u32(args, &locktype) || xdr_get_u64(args, &off) || xdr_get_u64(args, &len) ||
	    xdr_get_u64(args, &clientid) || xdr_get_opaque(args, &owner, &owner_len, NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	if (locktype < READ_LT || locktype > WRITEW_LT)
		return NFS4ERR_BADXDR;
	if (!os_lock_range(off, len, &start, &end))
		return NFS4ERR_INVAL;
	if (cs->minorversion >= 1) {
		clientid = cs->clp->clientid;
	} else {
		st = nfs4ops_v40_client(cs, clientid);
		if (st)
			return st;
	}
	st = cur_ino(cs, &ino);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	f = os_file_get_locked(c->st, ino, false);
	if (f) {
		lo = os_owner_find_locked(c->st, clientid, true, owner, owner_len, false);
		/* an unknown owner holds nothing: any lock conflicts with a writer */
		l = os_lock_conflict_locked(f, lo, lock_type(locktype), start, end);
		if (l)
			put_denied(cs, res, l);
	}
	pthread_mutex_unlock(&c->st->lock);
	return l ? NFS4ERR_DENIED : NFS4_OK;
}

static uint32_t locku_fn(struct nfs4_compound *cs, struct os_stid *ls, void *arg, struct xdr_enc *res,
			 struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct lock_args *a = arg;
	struct nfs4_stateid sid;
	uint64_t ino = 0;

	(void)pl;
	if (cur_ino(cs, &ino) || ino != ls->file->ino)
		return NFS4ERR_BAD_STATEID;
	if (os_lock_unset_locked(ls->file, ls, a->start, a->end))
		return NFS4ERR_RESOURCE;
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
	uint32_t locktype, seqid;
	uint64_t off, len;

	if (xdr_get_u32(args, &locktype) || xdr_get_u32(args, &seqid) || nfs4_get_stateid(args, &sid) ||
	    xdr_get_u64(args, &off) || xdr_get_u64(args, &len))
		return NFS4ERR_BADXDR;
	if (locktype < READ_LT || locktype > WRITEW_LT)
		return NFS4ERR_BADXDR;
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
				if (s->owner == lo && os_stid_has_locks_locked(s)) {
					st = NFS4ERR_LOCKS_HELD;
					break;
				}
		for (unsigned int h = 0; h < OS_HASH && !st && lo->nstids; h++) {
			struct os_stid *s = c->st->stids[h];

			while (s) {
				struct os_stid *next = s->hnext;

				if (s->owner == lo) {
					struct os_file *f = s->file;

					os_stid_free_locked(c->st, s, &pl);
					os_file_put_locked(c->st, f);
				}
				s = next;
			}
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	return st;
}
