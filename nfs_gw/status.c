/*
 * status.c - one errno -> NFS status table for both protocol versions.
 *
 * Each row maps one errno to its NFSv3 status (RFC 1813) and its NFSv4
 * status (RFC 8881); a row whose two columns are not the same error is a
 * per-version exception and carries a comment.  What the MDS or the store
 * cannot answer right now (busy, no session, out of memory, a timeout) is
 * the "try again later" status of each version - NFS3ERR_JUKEBOX and
 * NFS4ERR_DELAY - as knfsd maps ETIMEDOUT, EAGAIN and ENOMEM: a client then
 * retries the request instead of failing it to the application.
 *
 * No state, no lock: a lookup in a constant table.
 */
#include <errno.h>
#include <stddef.h>

#include "nfs_gw/nfs3/nfs3_xdr.h"
#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "nfs_gw/status.h"

struct nfs_status_row {
	int err;                 /* positive errno */
	uint32_t v3, v4;
};

static const struct nfs_status_row rows[] = {
	{ EPERM, NFS3ERR_PERM, NFS4ERR_PERM },
	{ ENOENT, NFS3ERR_NOENT, NFS4ERR_NOENT },
	{ EIO, NFS3ERR_IO, NFS4ERR_IO },
	{ ENXIO, NFS3ERR_NXIO, NFS4ERR_NXIO },
	{ EACCES, NFS3ERR_ACCES, NFS4ERR_ACCESS },
	{ EEXIST, NFS3ERR_EXIST, NFS4ERR_EXIST },
	{ EXDEV, NFS3ERR_XDEV, NFS4ERR_XDEV },
	/* NFSv4 has no NODEV status */
	{ ENODEV, NFS3ERR_NODEV, NFS4ERR_IO },
	{ ENOTDIR, NFS3ERR_NOTDIR, NFS4ERR_NOTDIR },
	{ EISDIR, NFS3ERR_ISDIR, NFS4ERR_ISDIR },
	{ EINVAL, NFS3ERR_INVAL, NFS4ERR_INVAL },
	{ ERANGE, NFS3ERR_INVAL, NFS4ERR_INVAL },
	{ EFBIG, NFS3ERR_FBIG, NFS4ERR_FBIG },
	{ ENOSPC, NFS3ERR_NOSPC, NFS4ERR_NOSPC },
	{ EROFS, NFS3ERR_ROFS, NFS4ERR_ROFS },
	{ EMLINK, NFS3ERR_MLINK, NFS4ERR_MLINK },
	{ ENAMETOOLONG, NFS3ERR_NAMETOOLONG, NFS4ERR_NAMETOOLONG },
	{ ENOTEMPTY, NFS3ERR_NOTEMPTY, NFS4ERR_NOTEMPTY },
	{ EDQUOT, NFS3ERR_DQUOT, NFS4ERR_DQUOT },
	{ ESTALE, NFS3ERR_STALE, NFS4ERR_STALE },
	/* NFSv3 has no SYMLINK status (a symlink where a directory was expected) */
	{ ELOOP, NFS3ERR_IO, NFS4ERR_SYMLINK },
	{ ENOTSUP, NFS3ERR_NOTSUPP, NFS4ERR_NOTSUPP },
	{ ENOSYS, NFS3ERR_NOTSUPP, NFS4ERR_NOTSUPP },
	/* the MDS is away or busy: the client retries later */
	{ EAGAIN, NFS3ERR_JUKEBOX, NFS4ERR_DELAY },
	{ EBUSY, NFS3ERR_JUKEBOX, NFS4ERR_DELAY },
	{ ETIMEDOUT, NFS3ERR_JUKEBOX, NFS4ERR_DELAY },
	{ EINTR, NFS3ERR_JUKEBOX, NFS4ERR_DELAY },
	{ ENOMEM, NFS3ERR_JUKEBOX, NFS4ERR_DELAY },
	/* no MDS session (the client library reconnects): transient too; NFSv4
	 * answered NFS4ERR_IO before the tables were one, failing the
	 * application's call where NFSv3 retried it */
	{ ENOTCONN, NFS3ERR_JUKEBOX, NFS4ERR_DELAY },
};

static const struct nfs_status_row *lookup(int err)
{
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].err == err)
			return &rows[i];
	return NULL;
}

uint32_t nfs3_errno(int err)
{
	const struct nfs_status_row *r;

	if (err == 0)
		return NFS3_OK;
	r = lookup(err);
	return r ? r->v3 : NFS3ERR_IO;
}

uint32_t nfs4_errno_to_status(int err)
{
	const struct nfs_status_row *r;

	if (err == 0)
		return NFS4_OK;
	r = lookup(err);
	return r ? r->v4 : NFS4ERR_IO;
}
