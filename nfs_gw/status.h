/*
 * status.h - the client library's -errno as an NFS status, for NFSv3 and
 * NFSv4 from one table (status.c), so the two versions cannot drift apart
 * by accident: where they differ, the table says so and why.
 */
#ifndef LOLIGO_NFS_GW_STATUS_H
#define LOLIGO_NFS_GW_STATUS_H

#include <stdint.h>

/**
 * nfs3_errno - nfsstat3 for @err (0 or -errno; a positive errno is taken
 * as its negative).  Errnos the table does not know are NFS3ERR_IO.
 */
uint32_t nfs3_errno(int err);

/**
 * nfs4_errno_to_status - nfsstat4 for @err (0 or -errno; a positive errno
 * is taken as its negative).  Errnos the table does not know are NFS4ERR_IO.
 */
uint32_t nfs4_errno_to_status(int err);

#endif
