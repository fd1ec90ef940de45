/*
 * fh.c - encode and decode the gateway's file handles (fh.h).  Pure
 * functions: resolving a handle to an inode is nfs4ops_resolve() in
 * ops_fh.c.
 */
#include <string.h>

#include "nfs_gw/nfs4/fh.h"

#define FH_MAGIC0 'L'
#define FH_MAGIC1 'G'
#define FH_VERSION 1

static void put64(uint8_t *p, uint64_t v)
{
	xdr_store_u32(p, (uint32_t)(v >> 32));
	xdr_store_u32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)xdr_load_u32(p) << 32 | xdr_load_u32(p + 4);
}

void nfs4_fh_encode(const struct nfs4_fhinfo *fi, struct nfs4_fh *fh)
{
	uint8_t *p = fh->data;

	memset(fh->data, 0, NFS4_FH_WIRE_LEN);
	p[0] = FH_MAGIC0;
	p[1] = FH_MAGIC1;
	p[2] = FH_VERSION;
	p[3] = fi->kind;
	p[4] = (uint8_t)(fi->export_id >> 8);
	p[5] = (uint8_t)fi->export_id;
	put64(p + 8, fi->fsid);
	put64(p + 16, fi->ino);
	put64(p + 24, fi->gen);
	fh->len = NFS4_FH_WIRE_LEN;
}

uint32_t nfs4_fh_decode(const struct nfs4_fh *fh, struct nfs4_fhinfo *fi)
{
	const uint8_t *p = fh->data;

	if (fh->len != NFS4_FH_WIRE_LEN || p[0] != FH_MAGIC0 || p[1] != FH_MAGIC1 || p[2] != FH_VERSION)
		return NFS4ERR_BADHANDLE;
	if (p[3] != NFS4_FH_PSEUDO && p[3] != NFS4_FH_EXPORT)
		return NFS4ERR_BADHANDLE;
	if (p[6] || p[7])
		return NFS4ERR_BADHANDLE;
	fi->kind = p[3];
	fi->export_id = (uint16_t)(p[4] << 8 | p[5]);
	fi->fsid = get64(p + 8);
	fi->ino = get64(p + 16);
	fi->gen = get64(p + 24);
	return NFS4_OK;
}
