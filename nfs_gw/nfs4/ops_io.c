/*
 * ops_io.c - READ, WRITE and COMMIT.
 *
 * I/O goes through the lc_fh of the open the stateid names (refcounted, so
 * a CLOSE racing with a READ only drops its reference).  The anonymous and
 * READ-bypass stateids get a handle of their own for the one call.
 * WRITE honours stable_how: UNSTABLE is buffered by the client library,
 * DATA_SYNC and FILE_SYNC are written through (lc_fsync) before the reply.
 * The write verifier is the gateway's start time, so a client learns from
 * COMMIT that unstable data written before a restart must be sent again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

enum { UNSTABLE4 = 0, DATA_SYNC4 = 1, FILE_SYNC4 = 2 };

uint32_t nfs4ops_v40_client(struct nfs4_compound *cs, uint64_t clientid);

/* The handle for I/O with @sid on @o: a reference on an open's handle
 * (*@ref), or a fresh open for special stateids (*@tmp, release it). */
static uint32_t io_handle(struct nfs4_compound *cs, struct nfs4_stateid *sid, struct nfs4_obj *o, bool write,
			  struct os_fhref **ref, struct lc_fh **tmp)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_stid *s;
	uint64_t clientid = 0;
	uint32_t st;
	int r;

	*ref = NULL;
	*tmp = NULL;
	if (!os_is_special(sid)) {
		pthread_mutex_lock(&c->st->lock);
		st = os_stid_check_locked(c->st, sid, cs->minorversion, cs->clp ? cs->clp->clientid : 0, OS_KIND_ANY,
					  &s);
		if (!st && s->file->ino != o->attr.ino)
			st = NFS4ERR_BAD_STATEID;
		if (!st && s->kind == OS_LOCK)
			s = s->open;
		if (!st && s && write && !(s->access & OS_SHARE_ACCESS_WRITE))
			st = NFS4ERR_OPENMODE;
		if (!st && s && s->fh) {
			*ref = os_fhref_get(s->fh);
			clientid = s->clientid;
		}
		pthread_mutex_unlock(&c->st->lock);
		if (st)
			return st;
		if (cs->minorversion == 0 && clientid)
			nfs4ops_v40_client(cs, clientid);
		if (*ref && ((*ref)->access & (write ? OS_SHARE_ACCESS_WRITE : OS_SHARE_ACCESS_READ)))
			return NFS4_OK;
		/* a READ through a write-only open (the Linux client fills pages
		 * that way): read with a handle of our own, the open allows it */
		os_fhref_put(c->lc, *ref);
		*ref = NULL;
	}
	if (!S_ISREG(o->attr.mode))
		return S_ISDIR(o->attr.mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
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
	if (!o.in || !S_ISREG(o.attr.mode)) {
		st = (!o.in || S_ISDIR(o.attr.mode)) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
		nfs4ops_release(cs, &o);
		return st;
	}
	st = nfs4ops_stateid_in(cs, &sid);
	if (!st)
		st = io_handle(cs, &sid, &o, false, &ref, &tmp);
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
	xdr_patch_u32(res, (size_t)at - 4, n < (ssize_t)count || count == 0 ? 1 : 0);
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
	st = nfs4ops_writable(&o);
	if (!st && !S_ISREG(o.attr.mode))
		st = S_ISDIR(o.attr.mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	/* at or past the filesystem's limit; one crossing it is cut short there
	 * (lc_write returns the short count, as knfsd on ext4 would) */
	if (!st && c->lc && off >= lc_max_file_size(c->lc))
		st = NFS4ERR_FBIG;
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	st = nfs4ops_stateid_in(cs, &sid);
	if (!st)
		st = io_handle(cs, &sid, &o, true, &ref, &tmp);
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	fh = handle_of(ref, tmp);
	n = len ? lc_write(c->lc, fh, (off_t)off, len, data) : 0;
	if (n < 0) {
		st = nfs4_errno_to_status((int)n);
		goto out;
	}
	if (n > 0)   /* FUSE beside us: drop its pages and attributes of the range */
		lc_notify_inode(c->lc, o.in, (off_t)off, (off_t)n);
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
	if (!o.in || !S_ISREG(o.attr.mode)) {
		st = (!o.in || S_ISDIR(o.attr.mode)) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
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
		r = lc_sync_fs(c->lc);
	}
	nfs4ops_release(cs, &o);
	if (r)
		return nfs4_errno_to_status(r);
	xdr_put_fixed(res, c->write_verf, NFS4_VERIFIER_SIZE);
	return NFS4_OK;
}
