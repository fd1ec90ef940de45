/*
 * ops_io.c - READ, WRITE and COMMIT.
 *
 * I/O goes through the lc_fh of the open the stateid names (refcounted, so
 * a CLOSE racing with a READ only drops its reference), checked against
 * the caller's own credential when it is not the opener's.  The anonymous
 * and READ-bypass stateids get a handle of their own for the one call,
 * subject to the share reservations of the file's opens.
 * WRITE honours stable_how: UNSTABLE is buffered by the client library,
 * DATA_SYNC and FILE_SYNC are written through (lc_fsync) before the reply.
 * The write verifier is the gateway's start time, so a client learns from
 * COMMIT that unstable data written before a restart must be sent again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

enum { UNSTABLE4 = 0, DATA_SYNC4 = 1, FILE_SYNC4 = 2 };

uint32_t nfs4ops_v40_client(struct nfs4_compound *cs, uint64_t clientid);

/* READ/WRITE on a non-regular file: RFC 7530 16.23.4 and 16.36.5 (ISDIR,
 * else INVAL); RFC 8881 18.22.3 and 18.32.3 name SYMLINK and WRONG_TYPE. */
static uint32_t io_type(const struct nfs4_compound *cs, const struct nfs4_obj *o)
{
	if (!o->in)
		return NFS4ERR_ISDIR;                /* the pseudo fs: directories */
	if (cs->minorversion == 0 && !S_ISREG(o->attr.mode))
		return S_ISDIR(o->attr.mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	return nfs4ops_file_type(cs, o->attr.mode);
}

/*
 * The caller may not be the one who opened: READs and WRITEs need not come
 * with the OPEN's credential (RFC 7530 16.16.6), so they are checked
 * against their own, as knfsd does (nfs4_check_file: the file's owner may
 * always use its own open).
 */
static uint32_t io_cred_check(struct nfs4_compound *cs, struct nfs4_obj *o, uint32_t uid, uint32_t gid, bool write)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	int r;

	if (o->cr.uid == uid && o->cr.gid == gid)
		return NFS4_OK;                      /* the opener itself */
	if (o->cr.uid == o->attr.uid)
		return NFS4_OK;                      /* the owner override */
	r = lc_access(c->lc, o->in, write ? W_OK : R_OK, &o->cr);
	return nfs4_errno_to_status(r);
}

/*
 * The handle for I/O with @sid (of @kind) on @o: a reference on an open's
 * handle (*@ref), or a fresh open for special stateids (*@tmp, release
 * it).  Share reservations are mandatory (RFC 7530 9.1.6): I/O that
 * another open denies is NFS4ERR_LOCKED, also through a special stateid
 * (the READ bypass one may read); a courtesy client's open in the way is
 * cancelled first.
 */
static uint32_t io_handle(struct nfs4_compound *cs, struct nfs4_stateid *sid, enum os_sid_kind kind,
			  struct nfs4_obj *o, bool write, struct os_fhref **ref, struct lc_fh **tmp)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint32_t mode = write ? OS_SHARE_ACCESS_WRITE : OS_SHARE_ACCESS_READ;
	struct os_stid *s, *x;
	struct nfs4ops_recall rc = { .pending = false };
	uint64_t clientid = 0;
	uint32_t st, uid = 0, gid = 0;
	int r;

	*ref = NULL;
	*tmp = NULL;
	if (kind == OS_SID_REGULAR) {
		pthread_mutex_lock(&c->st->lock);
		for (;;) {
			st = os_stid_check_locked(c->st, sid, cs->minorversion, cs->clp ? cs->clp->clientid : 0,
						  OS_KIND_ALL, &s);
			if (!st && s->file->ino != o->attr.ino)
				st = NFS4ERR_BAD_STATEID;
			if (!st && s->kind == OS_DELEG && write && !os_deleg_is_write(s))
				st = NFS4ERR_OPENMODE;       /* a read delegation reads */
			if (!st && s->kind == OS_LOCK)
				s = s->open;
			if (!st && !s)
				st = NFS4ERR_BAD_STATEID;
			if (!st && cs->minorversion == 0 && !s->owner->confirmed)
				st = NFS4ERR_BAD_STATEID;    /* RFC 7530 16.18.5 */
			if (!st && write && !(s->access & OS_SHARE_ACCESS_WRITE))
				st = NFS4ERR_OPENMODE;
			if (!st && !write && !(s->access & OS_SHARE_ACCESS_READ)) {
				/* a READ through a write-only open (the Linux client fills
				 * pages that way) is allowed, if no other open denies reads */
				x = os_deny_conflict_locked(s->file, s, OS_SHARE_ACCESS_READ);
				if (x && x->clientid != s->clientid && nfs4ops_courtesy_candidate(cs, x->clientid)) {
					pthread_mutex_unlock(&c->st->lock);
					nfs4ops_courtesy_retry(cs);
					pthread_mutex_lock(&c->st->lock);
					continue;
				}
				if (x)
					st = NFS4ERR_LOCKED;
			}
			/* another client's write delegation of the file (or its
			 * read delegation, for a write): recalled, retry later */
			if (!st && nfs4ops_deleg_break_locked(cs, s->file, s->clientid, mode, &rc))
				st = NFS4ERR_DELAY;
			break;
		}
		if (!st) {
			if (s->fh)
				*ref = os_fhref_get(s->fh);
			clientid = s->clientid;
			uid = s->uid;
			gid = s->gid;
		}
		pthread_mutex_unlock(&c->st->lock);
		nfs4ops_deleg_recall_send(cs, &rc);
		if (st == NFS4ERR_DELAY)
			return st;
		if (st)
			return nfs4ops_stateid_verdict(cs, sid, st);
		if (cs->minorversion == 0)
			nfs4ops_v40_client(cs, clientid);   /* RFC 7530 9.5 */
		st = io_cred_check(cs, o, uid, gid, write);
		if (st) {
			os_fhref_put(c->lc, *ref);
			*ref = NULL;
			return st;
		}
		if (*ref && ((*ref)->access & mode))
			return NFS4_OK;
		/* read with a handle of our own, the open allows it */
		os_fhref_put(c->lc, *ref);
		*ref = NULL;
	} else {
		/* anonymous or READ bypass: no open state, but the opens' deny
		 * modes apply (RFC 7530 9.1.4.3).  Not refused during the grace
		 * period: the gateway has only advisory locks, and knfsd refuses
		 * such I/O in grace only for mandatory locks (9.6.2 allows it). */
		bool delay;

		/* a delegation of the file (a write one, or any for a write) is
		 * recalled first: an anonymous stateid is nobody's, in 4.1 the
		 * session says whose */
		pthread_mutex_lock(&c->st->lock);
		delay = nfs4ops_deleg_break_locked(cs, os_file_get_locked(c->st, o->attr.ino, false),
						   cs->clp ? cs->clp->clientid : 0, mode, &rc);
		pthread_mutex_unlock(&c->st->lock);
		nfs4ops_deleg_recall_send(cs, &rc);
		if (delay)
			return NFS4ERR_DELAY;
		if (!(kind == OS_SID_BYPASS && !write)) {
			for (;;) {
				pthread_mutex_lock(&c->st->lock);
				x = os_deny_conflict_locked(os_file_get_locked(c->st, o->attr.ino, false), NULL, mode);
				clientid = x ? x->clientid : 0;
				pthread_mutex_unlock(&c->st->lock);
				if (!x)
					break;
				if (!nfs4ops_courtesy_candidate(cs, clientid) || !nfs4ops_courtesy_retry(cs))
					return NFS4ERR_LOCKED;
			}
		}
	}
	r = lc_open(c->lc, o->in, write ? O_WRONLY : O_RDONLY, &o->cr, tmp);
	return nfs4_errno_to_status(r);
}

static struct lc_fh *handle_of(struct os_fhref *ref, struct lc_fh *tmp)
{
	return ref ? ref->fh : tmp;
}

static void handle_done(struct nfs4ops_ctx *c, struct os_fhref *ref, struct lc_fh *tmp)
{
	if (ref)
		os_fhref_put(c->lc, ref);
	if (tmp)
		lc_release(c->lc, tmp);
}

NFS4_OP(read)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	enum os_sid_kind kind;
	struct nfs4_stateid sid;
	struct nfs4_obj o;
	struct os_fhref *ref;
	struct lc_fh *tmp;
	uint64_t off;
	uint32_t count, st;
	long at;
	ssize_t n;

	if (nfs4_get_stateid(args, &sid) || xdr_get_u64(args, &off) || xdr_get_u32(args, &count))
		return NFS4ERR_BADXDR;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	st = io_type(cs, &o);
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	st = nfs4ops_stateid_in(cs, &sid, &kind);
	if (!st)
		st = io_handle(cs, &sid, kind, &o, false, &ref, &tmp);
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	if (count > NFS4_MAXIO)
		count = NFS4_MAXIO;
	if (off > (uint64_t)INT64_MAX)
		count = 0;
	xdr_put_bool(res, false);
	at = xdr_reserve(res, 4 + XDR_PAD(count));
	if (at < 0) {
		st = NFS4ERR_RESOURCE;
		goto out;
	}
	n = count ? lc_read(c->lc, handle_of(ref, tmp), (off_t)off, count, xdr_at(res, (size_t)at + 4)) : 0;
	if (n < 0) {
		st = nfs4_errno_to_status((int)n);
		goto out;
	}
	/* RFC 7530 16.23.4: eof exactly when the read reached the end of the
	 * file: a read ending at EOF too, a 0-byte read below it not */
	{
		struct lc_attr a;

		if (lc_getattr(c->lc, o.in, &o.cr, false, &a))
			lc_cached_attr(o.in, &a);
		xdr_patch_u32(res, (size_t)at - 4, off + (uint64_t)n >= a.size ? 1 : 0);
	}
	xdr_patch_u32(res, (size_t)at, (uint32_t)n);
	xdr_enc_truncate(res, (size_t)at + 4 + XDR_PAD((size_t)n));
	memset(xdr_at(res, (size_t)at + 4 + (size_t)n), 0, XDR_PAD((size_t)n) - (size_t)n);
out:
	handle_done(c, ref, tmp);
	nfs4ops_release(cs, &o);
	return st;
}

NFS4_OP(write)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	enum os_sid_kind kind;
	struct nfs4_stateid sid;
	struct nfs4_obj o;
	struct os_fhref *ref;
	struct lc_fh *tmp, *fh;
	const uint8_t *data;
	uint64_t off;
	uint32_t stable, len, st, committed = UNSTABLE4;
	ssize_t n;
	int r;

	if (nfs4_get_stateid(args, &sid) || xdr_get_u64(args, &off) || xdr_get_u32(args, &stable) ||
	    xdr_get_opaque(args, &data, &len, UINT32_MAX))
		return NFS4ERR_BADXDR;
	if (stable > FILE_SYNC4)
		return NFS4ERR_BADXDR;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	st = io_type(cs, &o);
	if (!st)
		st = nfs4ops_writable(&o);
	/* at or past the filesystem's limit; one crossing it is cut short there
	 * (lc_write returns the short count, as knfsd on ext4 would) */
	if (!st && c->lc && off >= lc_max_file_size(c->lc))
		st = NFS4ERR_FBIG;
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	st = nfs4ops_stateid_in(cs, &sid, &kind);
	if (!st)
		st = io_handle(cs, &sid, kind, &o, true, &ref, &tmp);
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	fh = handle_of(ref, tmp);
	/* setuid and file capabilities go as the caller's write removes them
	 * (the open's handle has the opener's credentials, and no kernel
	 * removes security.capability before us) */
	r = len && c->lc ? lc_kill_privs(c->lc, o.in, &o.cr) : 0;
	if (r < 0) {
		st = nfs4_errno_to_status(r);
		goto out;
	}
	n = len ? lc_write(c->lc, fh, (off_t)off, len, data) : 0;
	if (n < 0) {
		st = nfs4_errno_to_status((int)n);
		goto out;
	}
	if (stable != UNSTABLE4) {
		r = lc_fsync(c->lc, fh, stable == DATA_SYNC4);
		if (r) {
			st = nfs4_errno_to_status(r);
			goto out;
		}
		committed = stable;
	}
	xdr_put_u32(res, (uint32_t)n);
	xdr_put_u32(res, committed);
	xdr_put_fixed(res, c->write_verf, NFS4_VERIFIER_SIZE);
out:
	handle_done(c, ref, tmp);
	nfs4ops_release(cs, &o);
	return st;
}

NFS4_OP(commit)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct nfs4_obj o;
	struct os_fhref *ref = NULL;
	struct os_file *f;
	uint64_t off;
	uint32_t count, st;
	int r;

	if (xdr_get_u64(args, &off) || xdr_get_u32(args, &count))
		return NFS4ERR_BADXDR;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	st = io_type(cs, &o);
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	/* dirty data is per inode in the client library: any open handle flushes it */
	pthread_mutex_lock(&c->st->lock);
	f = os_file_get_locked(c->st, o.attr.ino, false);
	for (struct os_stid *s = f ? f->stids : NULL; s; s = s->fnext)
		if (s->kind == OS_OPEN && s->fh) {
			ref = os_fhref_get(s->fh);
			break;
		}
	pthread_mutex_unlock(&c->st->lock);
	if (ref) {
		r = lc_fsync(c->lc, ref->fh, false);
		os_fhref_put(c->lc, ref);
	} else {
		r = lc_sync_inode(c->lc, o.in);   /* no open state: this file alone */
	}
	nfs4ops_release(cs, &o);
	if (r)
		return nfs4_errno_to_status(r);
	xdr_put_fixed(res, c->write_verf, NFS4_VERIFIER_SIZE);
	return NFS4_OK;
}
