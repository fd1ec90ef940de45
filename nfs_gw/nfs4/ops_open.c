/*
 * ops_open.c - OPEN (CLAIM_NULL, CLAIM_FH, CLAIM_PREVIOUS; UNCHECKED,
 * GUARDED, EXCLUSIVE4 and EXCLUSIVE4_1 creates), OPEN_CONFIRM,
 * OPEN_DOWNGRADE and CLOSE.
 *
 * Minor version 1 never looks at an owner's seqid: two OPENs or CLOSEs of
 * one owner run side by side in two slots.  Minor version 0 runs each of
 * these under its owner's sequencing (open_state.h): one at a time, in
 * seqid order, the last one replayed from the owner's saved reply (also
 * after CLOSE released the stateid: its closed stateid is kept for that).
 *
 * Share reservations are checked against every open of the file, the
 * owner's own included (RFC 7530 9.9); OPEN_DOWNGRADE goes only to modes
 * some of the OPENs in effect add up to.  A conflict with a courtesy
 * client's open cancels that client's lease and the OPEN is granted.
 * Read delegations (ops_deleg.c) are granted to readers when
 * `nfs4_delegations` is on; a writer another client's delegation is in the
 * way of gets NFS4ERR_DELAY while it is recalled.  4.1 wants that get none
 * are answered OPEN_DELEGATE_NONE_EXT with the reason; 4.0 share_access
 * has no want bits at all.  CLAIM_DELEGATE_CUR / CLAIM_DELEG_CUR_FH (the
 * opens a client made under its delegation) are ordinary opens once the
 * delegation is checked.
 *
 * Exclusive creates keep the client's verifier in the new file's atime and
 * mtime (as knfsd does), so a retransmitted create finds its own file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs_gw/nfs4/recovery.h"

#define OPEN4_NOCREATE 0
#define OPEN4_CREATE 1
enum { UNCHECKED4 = 0, GUARDED4 = 1, EXCLUSIVE4 = 2, EXCLUSIVE4_1 = 3 };
enum { CLAIM_NULL = 0, CLAIM_PREVIOUS = 1, CLAIM_DELEGATE_CUR = 2, CLAIM_DELEGATE_PREV = 3, CLAIM_FH = 4,
       CLAIM_DELEG_CUR_FH = 5, CLAIM_DELEG_PREV_FH = 6 };
#define OPEN4_RESULT_CONFIRM 0x2
#define OPEN4_RESULT_LOCKTYPE_POSIX 0x4
#define OPEN_DELEGATE_NONE 0
#define OPEN_DELEGATE_NONE_EXT 3

/* RFC 8881 18.16.1: the want bits of a 4.1 share_access */
#define WANT_DELEG_MASK 0xff00u
#define WANT_NO_PREFERENCE 0x0000u
#define WANT_READ_DELEG 0x0100u
#define WANT_WRITE_DELEG 0x0200u
#define WANT_ANY_DELEG 0x0300u
#define WANT_NO_DELEG 0x0400u
#define WANT_CANCEL 0x0500u
#define WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL 0x10000u
#define WANT_PUSH_DELEG_WHEN_UNCONTENDED 0x20000u

/* How long a 4.0 request waits for its owner's predecessor (if it may wait
 * at all: the waits are capped, open_state.h). */
#define SEQ_WAIT_NS (2ull * 1000000000ull)

struct open_args {
	uint32_t seqid, access, deny;
	uint32_t want;                   /* 4.1: the delegation want (WANT_DELEG_MASK bits) */
	uint64_t clientid;
	const uint8_t *owner;
	uint32_t owner_len;
	uint32_t opentype, createmode;
	struct nfs4_sattr sa;
	uint8_t verf[NFS4_VERIFIER_SIZE];
	uint32_t claim;
	char name[NFS4_MAX_NAME + 1];
	/* CLAIM_DELEGATE_CUR / CLAIM_DELEG_CUR_FH: the delegation the client
	 * opens under (claim is then CLAIM_NULL / CLAIM_FH) */
	bool deleg_claim;
	struct nfs4_stateid dsid;
};

static uint32_t decode_open(struct nfs4_compound *cs, struct xdr_dec *d, struct open_args *a)
{
	uint32_t st, dtype;

	memset(a, 0, sizeof(*a));
	if (xdr_get_u32(d, &a->seqid) || xdr_get_u32(d, &a->access) || xdr_get_u32(d, &a->deny) ||
	    xdr_get_u64(d, &a->clientid) || xdr_get_opaque(d, &a->owner, &a->owner_len, NFS4_OPAQUE_LIMIT) ||
	    xdr_get_u32(d, &a->opentype))
		return NFS4ERR_BADXDR;
	if (a->opentype == OPEN4_CREATE) {
		if (xdr_get_u32(d, &a->createmode))
			return NFS4ERR_BADXDR;
		switch (a->createmode) {
		case UNCHECKED4:
		case GUARDED4:
			st = nfs4_sattr_decode(d, nfs4ops_ctx(cs)->idmap, &a->sa);
			if (st)
				return st;
			break;
		case EXCLUSIVE4:
			if (xdr_get_fixed(d, a->verf, NFS4_VERIFIER_SIZE))
				return NFS4ERR_BADXDR;
			break;
		case EXCLUSIVE4_1:
			if (cs->minorversion < 1)
				return NFS4ERR_BADXDR;    /* not a createmode4 of RFC 7530 */
			if (xdr_get_fixed(d, a->verf, NFS4_VERIFIER_SIZE))
				return NFS4ERR_BADXDR;
			st = nfs4_sattr_decode(d, nfs4ops_ctx(cs)->idmap, &a->sa);
			if (st)
				return st;
			break;
		default:
			return NFS4ERR_BADXDR;
		}
	} else if (a->opentype != OPEN4_NOCREATE) {
		return NFS4ERR_BADXDR;
	}
	if (xdr_get_u32(d, &a->claim))
		return NFS4ERR_BADXDR;
	switch (a->claim) {
	case CLAIM_NULL:
		return nfs4_get_component(d, a->name, sizeof(a->name));
	case CLAIM_PREVIOUS:
		if (xdr_get_u32(d, &dtype))
			return NFS4ERR_BADXDR;
		return NFS4_OK;
	case CLAIM_FH:
		return cs->minorversion >= 1 ? NFS4_OK : NFS4ERR_BADXDR;
	case CLAIM_DELEGATE_CUR:
	case CLAIM_DELEG_CUR_FH: {
		struct nfs4_stateid dsid;

		if ((a->claim == CLAIM_DELEG_CUR_FH && cs->minorversion < 1) || nfs4_get_stateid(d, &dsid))
			return NFS4ERR_BADXDR;
		if (a->claim == CLAIM_DELEGATE_CUR && (st = nfs4_get_component(d, a->name, sizeof(a->name))))
			return st;
		/* an open the client made locally under its delegation, told to
		 * us before it returns it: an ordinary open, checked in do_open */
		a->deleg_claim = true;
		a->dsid = dsid;
		a->claim = a->claim == CLAIM_DELEGATE_CUR ? CLAIM_NULL : CLAIM_FH;
		if (a->opentype != OPEN4_NOCREATE)
			return NFS4ERR_INVAL;
		return NFS4_OK;
	}
	case CLAIM_DELEGATE_PREV:
		if ((st = nfs4_get_component(d, a->name, sizeof(a->name))))
			return st;
		return NFS4ERR_NOTSUPP;        /* RFC 7530 16.16.5: a server MAY support it */
	case CLAIM_DELEG_PREV_FH:
		return cs->minorversion >= 1 ? NFS4ERR_NOTSUPP : NFS4ERR_BADXDR;
	default:
		return NFS4ERR_BADXDR;
	}
}

/*
 * share_access/share_deny (RFC 7530 16.16.6, RFC 8881 18.16.3): one of
 * READ, WRITE, BOTH; one of the four denies; in 4.1 also a delegation
 * want and its two flags, nothing else.  Anything else is NFS4ERR_INVAL.
 */
static uint32_t check_share(const struct nfs4_compound *cs, uint32_t *access, uint32_t deny, uint32_t *want)
{
	uint32_t a = *access;

	*want = 0;
	if (cs->minorversion >= 1) {
		uint32_t w = a & WANT_DELEG_MASK;

		if (a & ~(OS_SHARE_ACCESS_BOTH | WANT_DELEG_MASK | WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL |
			  WANT_PUSH_DELEG_WHEN_UNCONTENDED))
			return NFS4ERR_INVAL;
		if (w > WANT_CANCEL)
			return NFS4ERR_INVAL;
		*want = w;
		a &= OS_SHARE_ACCESS_BOTH;
	}
	if (a == 0 || a > OS_SHARE_ACCESS_BOTH || deny > 3)
		return NFS4ERR_INVAL;
	*access = a;
	return NFS4_OK;
}

/* What OPEN answers for a non-regular file (RFC 7530 16.16.6: SYMLINK
 * for every other type; RFC 8881 18.16.3: WRONG_TYPE), as knfsd does. */
static uint32_t open_type(const struct nfs4_compound *cs, mode_t mode)
{
	if (S_ISREG(mode))
		return NFS4_OK;
	if (S_ISDIR(mode))
		return NFS4ERR_ISDIR;
	if (S_ISLNK(mode) || cs->minorversion == 0)
		return NFS4ERR_SYMLINK;
	return NFS4ERR_WRONG_TYPE;
}

static int open_flags(uint32_t access)
{
	switch (access) {
	case OS_SHARE_ACCESS_READ: return O_RDONLY;
	case OS_SHARE_ACCESS_WRITE: return O_WRONLY;
	default: return O_RDWR;
	}
}

static void verf_to_times(const uint8_t *v, struct lc_attr *a)
{
	a->atime.tv_sec = (time_t)xdr_load_u32(v);
	a->atime.tv_nsec = 0;
	a->mtime.tv_sec = (time_t)xdr_load_u32(v + 4);
	a->mtime.tv_nsec = 0;
}

static bool verf_matches(const uint8_t *v, const struct lc_attr *a)
{
	return a->atime.tv_sec == (time_t)xdr_load_u32(v) && a->mtime.tv_sec == (time_t)xdr_load_u32(v + 4);
}

/* Open the file named by @a: on success *@in, *@attr and *@fh are the
 * file's (references), *@attrset the attributes a create set. */
static uint32_t open_file(struct nfs4_compound *cs, struct open_args *a, struct nfs4_obj *dir,
			  struct lc_inode **in, struct lc_attr *attr, struct lc_fh **fh, uint32_t attrset[3],
			  uint64_t *before, uint64_t *after)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	int flags = open_flags(a->access), r;
	struct lc_attr da;
	mode_t mode;

	*before = *after = dir->attr.change;
	if (a->claim != CLAIM_NULL) {
		/* the current filehandle is the file */
		uint32_t st = dir->in ? open_type(cs, dir->attr.mode) : NFS4ERR_ISDIR;

		if (st)
			return st;
		r = lc_open(c->lc, dir->in, flags, &dir->cr, fh);
		if (r == -EACCES && flags == O_RDWR)
			return NFS4ERR_ACCESS;
		if (r)
			return nfs4_errno_to_status(r);
		lc_get(dir->in);
		*in = dir->in;
		*attr = dir->attr;
		return NFS4_OK;
	}
	if (!dir->in)   /* pseudo fs: only directories live there */
		return a->opentype == OPEN4_CREATE ? NFS4ERR_ROFS : NFS4ERR_NOENT;
	if (!S_ISDIR(dir->attr.mode))
		return S_ISLNK(dir->attr.mode) ? NFS4ERR_SYMLINK : NFS4ERR_NOTDIR;

	if (a->opentype == OPEN4_CREATE) {
		uint32_t st = nfs4ops_writable(dir);

		if (st)
			return st;
		mode = (a->sa.mask & LC_SET_MODE) ? a->sa.a.mode : 0644;
		/* see whether it exists first: UNCHECKED opens it, EXCLUSIVE compares verifiers */
		r = lc_lookup(c->lc, dir->in, a->name, &dir->cr, attr, in);
		if (r == 0) {
			if (a->createmode == GUARDED4)
				goto exists;
			if ((a->createmode == EXCLUSIVE4 || a->createmode == EXCLUSIVE4_1) && !verf_matches(a->verf, attr))
				goto exists;
			if (!S_ISREG(attr->mode)) {
				uint32_t st2 = open_type(cs, attr->mode);

				lc_put(c->lc, *in);
				*in = NULL;
				return st2;
			}
			r = lc_open(c->lc, *in, flags, &dir->cr, fh);
			if (!r && a->createmode == UNCHECKED4 && (a->sa.mask & LC_SET_SIZE) && a->sa.a.size == 0 &&
			    attr->size != 0) {
				struct lc_attr t = { .size = 0 };
				/* not over another client's delegation: recalled first,
				 * truncated on the retry (before: truncated, then DELAY) */
				uint32_t dst = nfs4ops_deleg_conflict(cs, attr->ino, cs->minorversion ? 0 : a->clientid, NULL);

				if (dst) {
					lc_release(c->lc, *fh);
					*fh = NULL;
					lc_put(c->lc, *in);
					*in = NULL;
					return dst;
				}
				r = lc_setattr(c->lc, *in, &t, LC_SET_SIZE, &dir->cr, attr);
				if (r) {
					lc_release(c->lc, *fh);
					*fh = NULL;
				} else {
					attrset[0] |= 1u << FATTR4_SIZE;
				}
			}
			if (r) {
				lc_put(c->lc, *in);
				*in = NULL;
			}
			return nfs4_errno_to_status(r);
		}
		if (r != -ENOENT)
			return nfs4_errno_to_status(r);
		r = lc_create(c->lc, dir->in, a->name, S_IFREG | mode, flags | O_CREAT | O_EXCL, &dir->cr, attr, in, fh);
		if (r == -EEXIST && a->createmode == UNCHECKED4) {
			r = lc_lookup(c->lc, dir->in, a->name, &dir->cr, attr, in);
			if (!r) {
				r = lc_open(c->lc, *in, flags, &dir->cr, fh);
				if (r) {
					lc_put(c->lc, *in);
					*in = NULL;
				}
			}
			return nfs4_errno_to_status(r);
		}
		if (r)
			return nfs4_errno_to_status(r);
		if (a->createmode == EXCLUSIVE4 || a->createmode == EXCLUSIVE4_1) {
			struct lc_attr t = { 0 };

			verf_to_times(a->verf, &t);
			lc_setattr(c->lc, *in, &t, LC_SET_ATIME | LC_SET_MTIME, &dir->cr, attr);
		}
		if (a->createmode != EXCLUSIVE4) {
			int mask = a->sa.mask & (LC_SET_UID | LC_SET_GID | LC_SET_SIZE);

			if (a->createmode == EXCLUSIVE4_1)
				mask &= ~(LC_SET_ATIME | LC_SET_MTIME);
			else
				mask |= a->sa.mask & (LC_SET_ATIME | LC_SET_MTIME | LC_SET_ATIME_NOW | LC_SET_MTIME_NOW);
			if (mask)
				lc_setattr(c->lc, *in, &a->sa.a, mask, &dir->cr, attr);
			/* an acl among the create attributes, as knfsd: set on the
			 * new file, left out of attrset when that fails */
			if (a->sa.has_acl) {
				struct nfs4_obj no = { .in = *in, .attr = *attr, .cr = dir->cr };

				if (nfs4ops_set_acl(cs, &no, &a->sa))
					a->sa.set[0] &= ~(1u << FATTR4_ACL);
				else
					lc_getattr(c->lc, *in, &dir->cr, true, attr);
			}
			for (int i = 0; i < 3; i++)
				attrset[i] |= a->sa.set[i];
		}
		if (!lc_getattr(c->lc, dir->in, &dir->cr, true, &da))
			*after = da.change;
		return NFS4_OK;
exists:
		lc_put(c->lc, *in);
		*in = NULL;
		return NFS4ERR_EXIST;
	}

	r = lc_lookup(c->lc, dir->in, a->name, &dir->cr, attr, in);
	if (r)
		return nfs4_errno_to_status(r);
	if (!S_ISREG(attr->mode)) {
		uint32_t st = open_type(cs, attr->mode);

		lc_put(c->lc, *in);
		*in = NULL;
		return st;
	}
	r = lc_open(c->lc, *in, flags, &dir->cr, fh);
	if (r) {
		lc_put(c->lc, *in);
		*in = NULL;
	}
	return nfs4_errno_to_status(r);
}

/* 4.0: the client named by @clientid must exist and be confirmed; renews it
 * (RFC 7530 9.5).  A cancelled lease is NFS4ERR_EXPIRED. */
uint32_t nfs4ops_v40_client(struct nfs4_compound *cs, uint64_t clientid)
{
	struct nfs4_client *clp;
	uint32_t st = nfs4_client_find(cs->srv, clientid, &clp);
	bool ok;

	if (st)
		return st;
	pthread_mutex_lock(&cs->srv->lock);
	ok = clp->confirmed;
	pthread_mutex_unlock(&cs->srv->lock);
	if (ok)
		nfs4_client_renew(cs->srv, clp);
	nfs4_client_put(cs->srv, clp);
	return ok ? NFS4_OK : NFS4ERR_STALE_CLIENTID;
}

static void seq_hook(struct nfs4_compound *cs, const void *owner, uint32_t seqid)
{
	nfs4ops_seq_hook_fn h = atomic_load_explicit(&nfs4ops_seq_hook, memory_order_acquire);

	if (h)
		h(cs, cs->op, owner, seqid);
}

static uint32_t do_open(struct nfs4_compound *cs, struct open_args *a, struct os_owner *ow, uint64_t clientid,
			struct xdr_enc *res, uint64_t *sid_id)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct nfs4_obj dir;
	struct lc_inode *in = NULL;
	struct lc_fh *lfh = NULL;
	struct lc_attr attr;
	struct os_putlist pl = { 0 };
	struct os_fhref *ref;
	struct os_file *f;
	struct os_stid *s;
	struct nfs4_stateid sid;
	uint32_t attrset[3] = { 0 }, st, rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
	uint64_t before, after;
	bool reclaim = a->claim == CLAIM_PREVIOUS;
	struct nfs4ops_recall rc = { .pending = false };
	struct nfs4_stateid dsid;
	/* the delegation an open gets follows its access (ops_deleg.c) */
	bool wdeleg = a->access & OS_SHARE_ACCESS_WRITE;
	uint32_t need = LC_CAP_CACHE | LC_CAP_ATTRS | (wdeleg ? LC_CAP_BUFFER : 0);
	uint32_t why = WND4_RESOURCE;
	bool cb_up, caps_ok, granted = false;

	(void)clientid;
	*sid_id = 0;
	if (a->want == WANT_NO_DELEG)
		why = WND4_NOT_WANTED;
	else if (a->want == WANT_CANCEL)
		why = WND4_CANCELLED;
	else if (a->want == WANT_READ_DELEG && wdeleg)
		why = WND4_NOT_SUPP_DOWNGRADE;   /* a writer gets a write delegation or none */
	else if (a->want == WANT_WRITE_DELEG && !wdeleg)
		why = WND4_NOT_SUPP_UPGRADE;     /* a reader gets a read delegation or none */
	/* a delegation needs a callback path that answers (srv->lock: before st->lock) */
	cb_up = !reclaim && why == WND4_RESOURCE && nfs4_cb_path_up(cs->srv, ow->clientid);
	st = nfs4ops_cur(cs, &dir);
	if (st)
		return st;
	if ((a->access & OS_SHARE_ACCESS_WRITE) && dir.in && nfs4ops_writable(&dir)) {
		/* RFC 7530 16.16.5: write access to a read-only file system */
		nfs4ops_release(cs, &dir);
		return NFS4ERR_ROFS;
	}
	st = open_file(cs, a, &dir, &in, &attr, &lfh, attrset, &before, &after);
	if (st) {
		nfs4ops_release(cs, &dir);
		return st;
	}
	caps_ok = cb_up && (lc_caps_held(in) & need) == need;
	ref = os_fhref_new(lfh, a->access);
	if (!ref) {
		lc_release(c->lc, lfh);
		lc_put(c->lc, in);
		nfs4ops_release(cs, &dir);
		return NFS4ERR_RESOURCE;
	}

	pthread_mutex_lock(&c->st->lock);
again:
	f = os_file_get_locked(c->st, attr.ino, true);
	if (!f) {
		st = NFS4ERR_RESOURCE;
		os_putlist_add(&pl, ref);
		goto unlock;
	}
	{
		struct os_stid *x = os_share_conflict_locked(f, a->access, a->deny);

		if (x && x->clientid != ow->clientid && nfs4ops_courtesy_candidate(cs, x->clientid)) {
			/* perhaps the open of a courtesy client: cancel it, look again */
			os_file_put_locked(c->st, f);
			pthread_mutex_unlock(&c->st->lock);
			nfs4ops_courtesy_retry(cs);
			pthread_mutex_lock(&c->st->lock);
			goto again;
		}
		if (x) {
			st = NFS4ERR_SHARE_DENIED;
			os_putlist_add(&pl, ref);
			os_file_put_locked(c->st, f);
			goto unlock;
		}
	}
	if (a->deleg_claim) {
		struct os_stid *d;

		st = os_stid_check_locked(c->st, &a->dsid, cs->minorversion, ow->clientid, OS_DELEG, &d);
		if (!st && (d->file != f || d->clientid != ow->clientid))
			st = NFS4ERR_BAD_STATEID;
		if (st) {
			os_putlist_add(&pl, ref);
			os_file_put_locked(c->st, f);
			goto unlock;
		}
	}
	/* another client's delegation stands in the way of a writer: recall it */
	if (nfs4ops_deleg_break_locked(cs, f, ow->clientid, a->access, &rc)) {
		st = NFS4ERR_DELAY;
		os_putlist_add(&pl, ref);
		os_file_put_locked(c->st, f);
		goto unlock;
	}
	s = os_stid_find_locked(f, ow, OS_OPEN);
	if (s) {
		/* the owner opens the file again: upgrade its open */
		os_open_add_locked(s, a->access, a->deny);
		s->seqid++;
		if ((ref->access | s->fh->access) != s->fh->access || ref->access == OS_SHARE_ACCESS_BOTH) {
			os_putlist_add(&pl, s->fh);
			s->fh = ref;
		} else {
			os_putlist_add(&pl, ref);
		}
	} else {
		s = os_stid_new_locked(c->st, OS_OPEN, ow, f);
		if (!s) {
			st = NFS4ERR_RESOURCE;
			os_putlist_add(&pl, ref);
			os_file_put_locked(c->st, f);
			goto unlock;
		}
		os_open_add_locked(s, a->access, a->deny);
		s->uid = dir.cr.uid;
		s->gid = dir.cr.gid;
		s->fh = ref;
	}
	if (!f->in) {
		lc_get(in);          /* the open keeps the inode (removed while open) */
		os_file_set_inode_locked(f, in, &pl);
	}
	*sid_id = s->id;
	os_stid_wire(c->st, s, &sid);
	/* as knfsd: not in the grace period (reclaims first), and in 4.0 not to
	 * an open-owner that must still confirm; and only while this client
	 * holds the caps that promise nobody else changes the file (the MDS
	 * revokes them before another client writes: gw.c recalls then) */
	if (cb_up && (cs->minorversion >= 1 || ow->confirmed) && !os_in_grace(c->st) && caps_ok &&
	    (why = nfs4ops_deleg_may_grant(cs, f, ow->clientid, a->access, a->deny)) == NFS4_DELEG_GRANT) {
		struct nfs4_fhinfo fi = { .kind = NFS4_FH_EXPORT, .export_id = dir.exp->id, .fsid = dir.exp->id,
					  .ino = attr.ino, .gen = attr.generation };
		struct nfs4_fh *dfh = malloc(sizeof(*dfh));
		struct os_stid *d = dfh ? os_deleg_new_locked(c->st, ow, f, os_fhref_get(s->fh), wdeleg) : NULL;

		if (d) {
			nfs4_fh_encode(&fi, dfh);
			d->dfh = dfh;
			d->uid = s->uid;
			d->gid = s->gid;
			os_stid_wire(c->st, d, &dsid);
			granted = true;
		} else {
			free(dfh);
		}
		why = WND4_RESOURCE;
	}
	if (cs->minorversion == 0 && !ow->confirmed && !reclaim)
		rflags |= OPEN4_RESULT_CONFIRM;
	if (reclaim)
		ow->confirmed = true;
unlock:
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);          /* a handle an upgrade replaced is closed before the count below */
	if (granted) {
		/*
		 * Checked again after the delegation was made, so a writer (any
		 * opener, for a write delegation) beside us that opened in
		 * between is either seen here or recalls it (lc_break_for_write
		 * / lc_break_for_read after its open), and a revoke either
		 * cleared the caps before this check or its hook (gw.c) finds
		 * the delegation to recall.  A read delegation: no writer of
		 * FUSE or NFSv3; a write delegation: no handle on the file but
		 * the NFS opens' own.
		 */
		int opens = wdeleg ? lc_inode_opens(in) : 0;
		bool lost = (lc_caps_held(in) & need) != need || (!wdeleg && lc_inode_writers(in) > 0);
		struct os_stid *d;

		pthread_mutex_lock(&c->st->lock);
		if (os_stid_check_locked(c->st, &dsid, cs->minorversion, ow->clientid, OS_DELEG, &d) == NFS4_OK &&
		    !d->recalled &&
		    (lost || (wdeleg && opens > (int)nfs4ops_deleg_nfs_handles_locked(d->file)))) {
			struct os_file *df = d->file;

			os_stid_free_locked(c->st, d, &pl);
			os_file_put_locked(c->st, df);
			granted = false;
			why = lost ? WND4_RESOURCE : WND4_CONTENTION;
		}
		pthread_mutex_unlock(&c->st->lock);
		os_putlist_run(c->lc, &pl);
	}
	nfs4ops_deleg_recall_send(cs, &rc);
	if (!st) {
		nfs4ops_set_cfh(cs, dir.exp, &attr);
		cs->cur_stateid = sid;
		cs->has_cur_stateid = true;
		nfs4_put_stateid(res, &sid);
		nfs4ops_put_cinfo(res, before, after);
		xdr_put_u32(res, rflags);
		xdr_put_bitmap(res, attrset, 3);
		if (granted) {
			perf_inc(&cs->srv->perf.delegs_granted, 1);
			if (wdeleg)
				perf_inc(&cs->srv->perf.delegs_granted_write, 1);
			nfs4ops_deleg_put(res, &dsid, wdeleg);
		} else if (a->want == WANT_NO_PREFERENCE) {
			xdr_put_u32(res, OPEN_DELEGATE_NONE);
		} else {
			/* RFC 8881 18.16.3: a client that asked says why not */
			xdr_put_u32(res, OPEN_DELEGATE_NONE_EXT);
			xdr_put_u32(res, why);
			if (why == WND4_CONTENTION || why == WND4_RESOURCE)
				/* ond_server_will_push_deleg / ond_server_will_signal_avail */
				xdr_put_bool(res, false);
		}
	}
	lc_put(c->lc, in);
	nfs4ops_release(cs, &dir);
	return st;
}

/* st->lock held: free the open stateids of an unconfirmed 4.0 owner */
static void release_unconfirmed_locked(struct nfs4ops_ctx *c, struct os_owner *ow, struct os_putlist *pl)
{
	for (unsigned int h = 0; h < OS_HASH && ow->nstids; h++) {
		struct os_stid *s = c->st->stids[h];

		while (s) {
			struct os_stid *next = s->hnext;

			if (s->owner == ow && !s->closed) {
				struct os_file *f = s->file;

				os_stid_free_locked(c->st, s, pl);
				os_file_put_locked(c->st, f);
			}
			s = next;
		}
	}
}

NFS4_OP(open)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_putlist pl = { 0 };
	struct open_args a;
	struct os_owner *ow;
	uint64_t clientid, sid_id = 0;
	uint32_t st;
	size_t body;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	st = decode_open(cs, args, &a);
	if (st)
		return st;
	st = check_share(cs, &a.access, a.deny, &a.want);
	if (st)
		return st;
	if (cs->minorversion >= 1) {
		clientid = cs->clp->clientid;
	} else {
		clientid = a.clientid;
		st = nfs4ops_v40_client(cs, clientid);
		if (st)
			return st;
	}
	/* grace period: reclaims only during it, and only reclaims; a 4.1
	 * client reclaims until its RECLAIM_COMPLETE, and opens nothing new
	 * before it (RFC 8881 18.51.3) */
	{
		bool done = false;

		if (cs->minorversion >= 1) {
			pthread_mutex_lock(&cs->srv->lock);
			done = cs->clp->reclaim_complete;
			pthread_mutex_unlock(&cs->srv->lock);
		}
		if (a.claim == CLAIM_PREVIOUS) {
			if (!os_in_grace(c->st) || done)
				return NFS4ERR_NO_GRACE;
		} else if (os_in_grace(c->st) || (cs->minorversion >= 1 && !done)) {
			return NFS4ERR_GRACE;
		}
	}
	/* a reclaim only from a client the previous incarnation recorded
	 * (RFC 8881 8.4.2.1, RFC 7530 9.6.3.4), and no open without a record */
	{
		struct nfs4_client *clp = cs->clp;
		uint32_t rst = NFS4_OK;

		if (!clp && nfs4_client_find(cs->srv, clientid, &clp) != NFS4_OK)
			return NFS4ERR_STALE_CLIENTID;
		if (a.claim == CLAIM_PREVIOUS && !nfs4_rec_may_reclaim(cs->srv, clp))
			rst = NFS4ERR_RECLAIM_BAD;
		else if (nfs4_rec_record(cs->srv, clp))
			rst = NFS4ERR_DELAY;
		if (clp != cs->clp)
			nfs4_client_put(cs->srv, clp);
		if (rst)
			return rst;
	}

	pthread_mutex_lock(&c->st->lock);
	ow = os_owner_find_locked(c->st, clientid, false, a.owner, a.owner_len, true);
	if (!ow) {
		pthread_mutex_unlock(&c->st->lock);
		return NFS4ERR_RESOURCE;
	}
	ow->v40 = cs->minorversion == 0;
	if (cs->minorversion >= 1) {
		/* no seqid, no waiting: only pin the owner against a concurrent
		 * release of the client's state (os_client_release skips it) */
		ow->waiters++;
		pthread_mutex_unlock(&c->st->lock);
		seq_hook(cs, ow, a.seqid);
		st = do_open(cs, &a, ow, clientid, res, &sid_id);
		pthread_mutex_lock(&c->st->lock);
		ow->waiters--;
		pthread_mutex_unlock(&c->st->lock);
		return st;
	}
	/* NFSv4.0: in seqid order, one at a time per owner */
	if (!ow->busy && !ow->waiters && (!ow->seq_valid || (a.seqid != ow->seqid && a.seqid != ow->seqid + 1))) {
		if (!ow->confirmed) {
			/* an unconfirmed owner's OPEN out of sequence: the earlier
			 * OPEN was a replay nobody will confirm; its state goes and
			 * the owner starts over with this one (RFC 7530 16.18.5) */
			release_unconfirmed_locked(c, ow, &pl);
			os_owner_forget_locked(c->st, ow);
		} else if (ow->nstids == 0) {
			/* an owner with nothing open: the client let it go and uses
			 * the name again (9.1.10); OPEN_CONFIRM makes it safe (9.1.11) */
			os_owner_forget_locked(c->st, ow);
		}
	}
	st = os_seq_begin_locked(c->st, ow, a.seqid, SEQ_WAIT_NS);
	if (st == OS_SEQ_REPLAY && ow->reply_op && ow->reply_op != OP_OPEN)
		st = NFS4ERR_BAD_SEQID;      /* RFC 7530 9.1.9: not the request that seqid was */
	if (st == OS_SEQ_REPLAY) {
		xdr_put_fixed(res, ow->reply, ow->reply_len);
		if (ow->reply_fh.len)
			cs->cfh = ow->reply_fh;
		st = ow->reply_status;
		cs->body_on_error = st != NFS4_OK;
		pthread_mutex_unlock(&c->st->lock);
		os_putlist_run(c->lc, &pl);
		return st;
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	if (st)
		return st;
	seq_hook(cs, ow, a.seqid);
	body = res->len;
	st = do_open(cs, &a, ow, clientid, res, &sid_id);
	pthread_mutex_lock(&c->st->lock);
	os_seq_end_locked(c->st, ow, a.seqid, OP_OPEN, st, st ? NULL : res->buf + body, st ? 0 : res->len - body,
			  st ? NULL : &cs->cfh, sid_id);
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/*
 * The common shape of OPEN_CONFIRM, OPEN_DOWNGRADE, CLOSE, LOCK and LOCKU:
 * find the stateid (special ones are NFS4ERR_BAD_STATEID here), and for
 * 4.0 run under its owner's sequencing.  @fn runs with st->lock held and
 * the stateid checked; it appends its body.  It may return NFS4OPS_RETRY
 * when a courtesy client's state is in the way (ops_int.h): it runs again
 * once that client is cancelled, or knowing the conflict stands.
 *
 * 4.0 details (RFC 7530): a retransmission of the owner's last request is
 * answered from its saved reply, also when that request's stateid is gone
 * (its closed stateid, 9.10.1), but not for another operation (9.1.9:
 * NFS4ERR_BAD_SEQID); a stateid of an owner whose OPEN is not confirmed
 * yet is NFS4ERR_BAD_STATEID for anything but OPEN_CONFIRM (16.18.5); a
 * successful stateid operation renews the lease (9.5).
 */
typedef uint32_t (*seq_fn)(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
			   struct os_putlist *pl);

uint32_t nfs4ops_seq_stid_op(struct nfs4_compound *cs, const struct nfs4_stateid *sid_in, uint32_t seqid,
			     unsigned int kinds, seq_fn fn, void *arg, struct xdr_enc *res)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_putlist pl = { 0 };
	struct nfs4_stateid sidv = *sid_in, *sid = &sidv;
	struct os_owner *ow;
	struct os_stid *s;
	uint64_t sid_id, clientid;
	uint32_t st;
	size_t body;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	st = nfs4ops_stateid_real(cs, sid);
	if (st)
		return st;
	if (cs->minorversion >= 1) {
		seq_hook(cs, NULL, seqid);
		pthread_mutex_lock(&c->st->lock);
		for (;;) {
			st = os_stid_check_locked(c->st, sid, 1, cs->clp->clientid, kinds, &s);
			if (!st)
				st = fn(cs, s, arg, res, &pl);
			if (st != NFS4OPS_RETRY)
				break;
			pthread_mutex_unlock(&c->st->lock);
			nfs4ops_courtesy_retry(cs);
			pthread_mutex_lock(&c->st->lock);
		}
		pthread_mutex_unlock(&c->st->lock);
		os_putlist_run(c->lc, &pl);
		return nfs4ops_stateid_verdict(cs, sid, st);
	}

	pthread_mutex_lock(&c->st->lock);
	st = os_stid_check_locked(c->st, sid, 0, 0, kinds | OS_CLOSED, &s);
	if (st && st != NFS4ERR_OLD_STATEID) {
		pthread_mutex_unlock(&c->st->lock);
		return nfs4ops_stateid_verdict(cs, sid, st);
	}
	/* 4.0: seqid first (an old or closed stateid may be a replay of the last request) */
	ow = s->owner;
	st = os_seq_begin_locked(c->st, ow, seqid, SEQ_WAIT_NS);
	if (st == OS_SEQ_REPLAY && ow->reply_op && ow->reply_op != cs->op)
		st = NFS4ERR_BAD_SEQID;
	if (st == OS_SEQ_REPLAY) {
		xdr_put_fixed(res, ow->reply, ow->reply_len);
		st = ow->reply_status;
		cs->body_on_error = st != NFS4_OK;
		pthread_mutex_unlock(&c->st->lock);
		return st;
	}
	if (st) {
		pthread_mutex_unlock(&c->st->lock);
		return st;
	}
	if (atomic_load_explicit(&nfs4ops_seq_hook, memory_order_relaxed)) {
		pthread_mutex_unlock(&c->st->lock);
		seq_hook(cs, ow, seqid);
		pthread_mutex_lock(&c->st->lock);
	}
	body = res->len;
	clientid = ow->clientid;
	for (;;) {
		/* we may have waited: look again (a closed stateid is no use now) */
		st = os_stid_check_locked(c->st, sid, 0, 0, kinds, &s);
		if (!st && s->owner != ow)
			st = NFS4ERR_BAD_STATEID;
		if (!st && s->kind == OS_OPEN && !ow->confirmed && cs->op != OP_OPEN_CONFIRM)
			st = NFS4ERR_BAD_STATEID;
		sid_id = st ? 0 : s->id;
		if (!st)
			st = fn(cs, s, arg, res, &pl);
		if (st != NFS4OPS_RETRY)
			break;
		xdr_enc_truncate(res, body);
		pthread_mutex_unlock(&c->st->lock);
		nfs4ops_courtesy_retry(cs);
		pthread_mutex_lock(&c->st->lock);
	}
	os_seq_end_locked(c->st, ow, seqid, cs->op, st, (st && !cs->body_on_error) ? NULL : res->buf + body,
			  (st && !cs->body_on_error) ? 0 : res->len - body, NULL, sid_id);
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	if (!st)
		nfs4ops_v40_client(cs, clientid);     /* RFC 7530 9.5: a stateid op renews the lease */
	return nfs4ops_stateid_verdict(cs, sid, st);
}

static uint32_t confirm_fn(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
			   struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct nfs4_stateid sid;

	(void)arg;
	(void)pl;
	if (s->owner->confirmed)
		return NFS4ERR_BAD_STATEID;
	s->owner->confirmed = true;
	s->seqid++;
	os_stid_wire(c->st, s, &sid);
	nfs4ops_stateid_out(cs, &sid);
	nfs4_put_stateid(res, &sid);
	return NFS4_OK;
}

NFS4_OP(open_confirm)
{
	struct nfs4_stateid sid;
	uint32_t seqid;

	if (nfs4_get_stateid(args, &sid) || xdr_get_u32(args, &seqid))
		return NFS4ERR_BADXDR;
	return nfs4ops_seq_stid_op(cs, &sid, seqid, OS_OPEN, confirm_fn, NULL, res);
}

struct downgrade_args {
	uint32_t access, deny;
};

static uint32_t downgrade_fn(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
			     struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct downgrade_args *a = arg;
	struct nfs4_stateid sid;

	(void)pl;
	if (os_open_downgrade_locked(s, a->access, a->deny))
		return NFS4ERR_INVAL;
	s->seqid++;     /* even when nothing changed (RFC 7530 9.11) */
	os_stid_wire(c->st, s, &sid);
	nfs4ops_stateid_out(cs, &sid);
	nfs4_put_stateid(res, &sid);
	return NFS4_OK;
}

NFS4_OP(open_downgrade)
{
	struct nfs4_stateid sid;
	struct downgrade_args a;
	uint32_t seqid, want, st;

	if (nfs4_get_stateid(args, &sid) || xdr_get_u32(args, &seqid) || xdr_get_u32(args, &a.access) ||
	    xdr_get_u32(args, &a.deny))
		return NFS4ERR_BADXDR;
	/* the same share fields as OPEN's (4.1 want bits are ignored, as knfsd does) */
	st = check_share(cs, &a.access, a.deny, &want);
	if (st)
		return st;
	return nfs4ops_seq_stid_op(cs, &sid, seqid, OS_OPEN, downgrade_fn, &a, res);
}

static uint32_t close_fn(struct nfs4_compound *cs, struct os_stid *s, void *arg, struct xdr_enc *res,
			 struct os_putlist *pl)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_file *f = s->file;
	struct nfs4_stateid sid;

	(void)arg;
	/* locks of this owner's lock stateids on the file must be gone first */
	for (struct os_stid *l = f->stids; l; l = l->fnext)
		if (l->kind == OS_LOCK && l->open == s && os_stid_has_locks_locked(l))
			return NFS4ERR_LOCKS_HELD;
	/* the lock stateids go with the open; a 4.0 lock-owner whose last
	 * request was about one keeps it closed, for a retransmission */
	for (struct os_stid *l = f->stids, *next; l; l = next) {
		next = l->fnext;
		if (l->kind == OS_LOCK && l->open == s)
			os_stid_retire_locked(c->st, l, false, pl);
	}
	os_stid_wire(c->st, s, &sid);
	sid.seqid++;
	if (cs->minorversion >= 1) {
		/* RFC 8881 18.2.4: answer the invalid special stateid */
		memset(&sid, 0, sizeof(sid));
		sid.seqid = UINT32_MAX;
	}
	os_stid_retire_locked(c->st, s, true, pl);
	os_file_put_locked(c->st, f);
	cs->has_cur_stateid = false;
	nfs4_put_stateid(res, &sid);
	return NFS4_OK;
}

NFS4_OP(close)
{
	struct nfs4_stateid sid;
	uint32_t seqid;

	if (xdr_get_u32(args, &seqid) || nfs4_get_stateid(args, &sid))
		return NFS4ERR_BADXDR;
	return nfs4ops_seq_stid_op(cs, &sid, seqid, OS_OPEN, close_fn, NULL, res);
}
