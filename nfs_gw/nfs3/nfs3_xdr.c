/*
 * nfs3_xdr.c - decoders of the NFSv3 and MOUNT v3 arguments and encoders
 * of the pieces of their results (nfs3_xdr.h).  Pure functions: no I/O,
 * no allocation, no reads outside the record.
 */
#include <errno.h>
#include <string.h>

#include "client/client.h"
#include "nfs_gw/nfs3/nfs3_xdr.h"

/* names are checked for length by the procedures (NAMETOOLONG is a status,
 * not garbage); this only bounds what a decoder accepts at all */
#define NAME_DECODE_MAX NFS3_MAXPATHLEN

int nfs3_dec_fh(struct xdr_dec *d, struct nfs3_fh *fh)
{
	return xdr_get_opaque_copy(d, fh->data, &fh->len, NFS3_FHSIZE);
}

static int dec_time(struct xdr_dec *d, struct nfs3_time *t)
{
	xdr_get_u32(d, &t->sec);
	return xdr_get_u32(d, &t->nsec);
}

int nfs3_dec_sattr(struct xdr_dec *d, struct nfs3_sattr *sa)
{
	bool set;
	uint32_t how;

	memset(sa, 0, sizeof(*sa));
	if (xdr_get_bool(d, &set))
		return -EBADMSG;
	if (set) {
		sa->mask |= LC_SET_MODE;
		xdr_get_u32(d, &sa->mode);
	}
	if (xdr_get_bool(d, &set))
		return -EBADMSG;
	if (set) {
		sa->mask |= LC_SET_UID;
		xdr_get_u32(d, &sa->uid);
	}
	if (xdr_get_bool(d, &set))
		return -EBADMSG;
	if (set) {
		sa->mask |= LC_SET_GID;
		xdr_get_u32(d, &sa->gid);
	}
	if (xdr_get_bool(d, &set))
		return -EBADMSG;
	if (set) {
		sa->mask |= LC_SET_SIZE;
		xdr_get_u64(d, &sa->size);
	}
	if (xdr_get_u32(d, &how))
		return -EBADMSG;
	if (how == SET_TO_SERVER_TIME) {
		sa->mask |= LC_SET_ATIME | LC_SET_ATIME_NOW;
	} else if (how == SET_TO_CLIENT_TIME) {
		sa->mask |= LC_SET_ATIME;
		dec_time(d, &sa->atime);
	} else if (how != DONT_CHANGE) {
		return -EBADMSG;
	}
	if (xdr_get_u32(d, &how))
		return -EBADMSG;
	if (how == SET_TO_SERVER_TIME) {
		sa->mask |= LC_SET_MTIME | LC_SET_MTIME_NOW;
	} else if (how == SET_TO_CLIENT_TIME) {
		sa->mask |= LC_SET_MTIME;
		dec_time(d, &sa->mtime);
	} else if (how != DONT_CHANGE) {
		return -EBADMSG;
	}
	return d->err;
}

int nfs3_dec_diropargs(struct xdr_dec *d, struct nfs3_diropargs *a)
{
	if (nfs3_dec_fh(d, &a->dir))
		return -EBADMSG;
	return xdr_get_opaque(d, &a->name, &a->name_len, NAME_DECODE_MAX);
}

int nfs3_dec_setattr(struct xdr_dec *d, struct nfs3_setattr_args *a)
{
	memset(a, 0, sizeof(*a));
	if (nfs3_dec_fh(d, &a->fh) || nfs3_dec_sattr(d, &a->sa) || xdr_get_bool(d, &a->guard))
		return -EBADMSG;
	if (a->guard)
		dec_time(d, &a->guard_ctime);
	return d->err;
}

int nfs3_dec_access(struct xdr_dec *d, struct nfs3_access_args *a)
{
	if (nfs3_dec_fh(d, &a->fh))
		return -EBADMSG;
	return xdr_get_u32(d, &a->access);
}

int nfs3_dec_read(struct xdr_dec *d, struct nfs3_read_args *a)
{
	if (nfs3_dec_fh(d, &a->fh) || xdr_get_u64(d, &a->offset))
		return -EBADMSG;
	return xdr_get_u32(d, &a->count);
}

int nfs3_dec_write(struct xdr_dec *d, struct nfs3_write_args *a)
{
	if (nfs3_dec_fh(d, &a->fh) || xdr_get_u64(d, &a->offset) || xdr_get_u32(d, &a->count) ||
	    xdr_get_u32(d, &a->stable))
		return -EBADMSG;
	if (a->stable > NFS3_FILE_SYNC)
		return -EBADMSG;
	/* the data cannot be larger than the record: xdr_get_opaque checks */
	if (xdr_get_opaque(d, &a->data, &a->data_len, UINT32_MAX))
		return -EBADMSG;
	/* RFC 1813 3.3.7: count bytes of data are written; more count than
	 * data is garbage, more data than count is ignored (as knfsd does) */
	if (a->count > a->data_len)
		return -EBADMSG;
	a->data_len = a->count;
	return 0;
}

int nfs3_dec_create(struct xdr_dec *d, struct nfs3_create_args *a)
{
	memset(&a->sa, 0, sizeof(a->sa));
	if (nfs3_dec_diropargs(d, &a->where) || xdr_get_u32(d, &a->mode))
		return -EBADMSG;
	switch (a->mode) {
	case NFS3_UNCHECKED:
	case NFS3_GUARDED:
		return nfs3_dec_sattr(d, &a->sa);
	case NFS3_EXCLUSIVE:
		return xdr_get_fixed(d, a->verf, NFS3_CREATEVERFSIZE);
	default:
		return -EBADMSG;
	}
}

int nfs3_dec_mkdir(struct xdr_dec *d, struct nfs3_mkdir_args *a)
{
	if (nfs3_dec_diropargs(d, &a->where))
		return -EBADMSG;
	return nfs3_dec_sattr(d, &a->sa);
}

int nfs3_dec_symlink(struct xdr_dec *d, struct nfs3_symlink_args *a)
{
	if (nfs3_dec_diropargs(d, &a->where) || nfs3_dec_sattr(d, &a->sa))
		return -EBADMSG;
	return xdr_get_opaque(d, &a->path, &a->path_len, NFS3_MAXPATHLEN);
}

int nfs3_dec_mknod(struct xdr_dec *d, struct nfs3_mknod_args *a)
{
	memset(&a->sa, 0, sizeof(a->sa));
	a->major = a->minor = 0;
	if (nfs3_dec_diropargs(d, &a->where) || xdr_get_u32(d, &a->type))
		return -EBADMSG;
	switch (a->type) {
	case NF3CHR:
	case NF3BLK:
		if (nfs3_dec_sattr(d, &a->sa) || xdr_get_u32(d, &a->major))
			return -EBADMSG;
		return xdr_get_u32(d, &a->minor);
	case NF3SOCK:
	case NF3FIFO:
		return nfs3_dec_sattr(d, &a->sa);
	case NF3REG:
	case NF3DIR:
	case NF3LNK:
		return 0;                /* no arguments: the procedure answers BADTYPE */
	default:
		return -EBADMSG;
	}
}

int nfs3_dec_rename(struct xdr_dec *d, struct nfs3_rename_args *a)
{
	if (nfs3_dec_diropargs(d, &a->from))
		return -EBADMSG;
	return nfs3_dec_diropargs(d, &a->to);
}

int nfs3_dec_link(struct xdr_dec *d, struct nfs3_link_args *a)
{
	if (nfs3_dec_fh(d, &a->fh))
		return -EBADMSG;
	return nfs3_dec_diropargs(d, &a->link);
}

int nfs3_dec_readdir(struct xdr_dec *d, bool plus, struct nfs3_readdir_args *a)
{
	if (nfs3_dec_fh(d, &a->dir) || xdr_get_u64(d, &a->cookie) || xdr_get_fixed(d, a->verf, NFS3_COOKIEVERFSIZE))
		return -EBADMSG;
	a->dircount = 0;
	if (plus && xdr_get_u32(d, &a->dircount))
		return -EBADMSG;
	return xdr_get_u32(d, &a->count);
}

int nfs3_dec_commit(struct xdr_dec *d, struct nfs3_commit_args *a)
{
	if (nfs3_dec_fh(d, &a->fh) || xdr_get_u64(d, &a->offset))
		return -EBADMSG;
	return xdr_get_u32(d, &a->count);
}

int nfs3_dec_dirpath(struct xdr_dec *d, const uint8_t **path, uint32_t *len)
{
	return xdr_get_opaque(d, path, len, MNTPATHLEN);
}

/* ---- encoders ---------------------------------------------------------------- */

void nfs3_put_fh(struct xdr_enc *e, const struct nfs3_fh *fh)
{
	xdr_put_opaque(e, fh->data, fh->len);
}

static void put_time(struct xdr_enc *e, const struct nfs3_time *t)
{
	xdr_put_u32(e, t->sec);
	xdr_put_u32(e, t->nsec);
}

void nfs3_put_fattr(struct xdr_enc *e, const struct nfs3_fattr *a)
{
	xdr_put_u32(e, a->type);
	xdr_put_u32(e, a->mode);
	xdr_put_u32(e, a->nlink);
	xdr_put_u32(e, a->uid);
	xdr_put_u32(e, a->gid);
	xdr_put_u64(e, a->size);
	xdr_put_u64(e, a->used);
	xdr_put_u32(e, a->rdev_major);
	xdr_put_u32(e, a->rdev_minor);
	xdr_put_u64(e, a->fsid);
	xdr_put_u64(e, a->fileid);
	put_time(e, &a->atime);
	put_time(e, &a->mtime);
	put_time(e, &a->ctime);
}

void nfs3_put_post_op_attr(struct xdr_enc *e, const struct nfs3_fattr *a)
{
	xdr_put_bool(e, a != NULL);
	if (a)
		nfs3_put_fattr(e, a);
}

void nfs3_put_wcc(struct xdr_enc *e, const struct nfs3_wcc_attr *pre, const struct nfs3_fattr *post)
{
	xdr_put_bool(e, pre != NULL);
	if (pre) {
		xdr_put_u64(e, pre->size);
		put_time(e, &pre->mtime);
		put_time(e, &pre->ctime);
	}
	nfs3_put_post_op_attr(e, post);
}

void nfs3_put_post_op_fh(struct xdr_enc *e, const struct nfs3_fh *fh)
{
	xdr_put_bool(e, fh != NULL);
	if (fh)
		nfs3_put_fh(e, fh);
}
