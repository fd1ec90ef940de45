/*
 * acl.h - the NFSv4 acl attribute (FATTR4_ACL) over POSIX ACLs, mapped as
 * knfsd maps them (fs/nfsd/nfs4acl.c): private to nfs_gw/nfs4.
 */
#ifndef LOLIGO_NFS_GW_NFS4_ACL_H
#define LOLIGO_NFS_GW_NFS4_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs_gw/nfs4/idmap.h"
#include "nfs_gw/rpc/xdr.h"

/* ACL4_SUPPORT_ALLOW_ACL | ACL4_SUPPORT_DENY_ACL, as knfsd answers aclsupport */
#define NFS4_ACLSUPPORT 0x3

/*
 * nfs4_acl_encode - fattr4_acl (nfsace4<>) for an inode of @mode from its
 * POSIX access ACL @acl (@len bytes, the xattr form; NULL or 0: none, the
 * mode's three entries stand for it) and, for a directory, its default
 * ACL @dacl (NULL: none), as inheritable ACEs.  Who strings through @map
 * (NULL: numeric).  No lock may be held (NSS).  Return: 0 or the encoder's error.
 */
int nfs4_acl_encode(struct xdr_enc *e, uint32_t mode, const void *acl, size_t len, const void *dacl, size_t dlen,
		    struct idmap *map);

/*
 * nfs4_acl_decode - an fattr4_acl value from @d, for an inode that is a
 * directory when @isdir, into POSIX ACLs in the xattr form: the access ACL
 * into @acl (*@len bytes; always one), the default ACL into @dacl (*@dlen
 * bytes; 0: none, remove it).  @acl and @dacl hold NFS4_ACL_XATTR_MAX bytes.
 * Return: NFS4_OK, NFS4ERR_BADXDR, NFS4ERR_ATTRNOTSUPP (an ACE POSIX cannot
 * say: audit or alarm types, unknown flags, inheritance on a file, as
 * knfsd), NFS4ERR_BADOWNER, NFS4ERR_DELAY, NFS4ERR_INVAL (too many ACEs).
 */
#define NFS4_ACL_MAX_ACES 1024
#define NFS4_ACL_XATTR_MAX (4 + 8 * (NFS4_ACL_MAX_ACES + 4))
uint32_t nfs4_acl_decode(struct xdr_dec *d, bool isdir, struct idmap *map, uint8_t *acl, size_t *len,
			 uint8_t *dacl, size_t *dlen);

#endif
