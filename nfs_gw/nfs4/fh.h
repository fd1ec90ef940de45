/*
 * fh.h - NFSv4 file handles of the gateway.
 *
 * A handle names an object by what survives a gateway restart: the export
 * id (from the configuration), the export's fsid, the loligo inode number
 * and its generation, resolved again with lc_lookup_ino().  Nothing in it
 * depends on the gateway process, so a client keeps using its handles
 * after the gateway (or the whole loligo-fuse process) restarts.  Pseudo-fs
 * directories (the path down to an export that is not at "/") carry their
 * node number instead of an inode.
 *
 * Wire layout (32 bytes, big endian): "LG" magic, version 1, kind,
 * export id u16, reserved u16, fsid u64, ino u64, generation u64.
 */
#ifndef LOLIGO_NFS_GW_NFS4_FH_H
#define LOLIGO_NFS_GW_NFS4_FH_H

#include <stdint.h>

#include "nfs_gw/nfs4/nfs4_xdr.h"

enum nfs4_fh_kind { NFS4_FH_PSEUDO = 1, NFS4_FH_EXPORT = 2 };

#define NFS4_FH_WIRE_LEN 32

struct nfs4_fhinfo {
	uint8_t kind;
	uint16_t export_id;              /* NFS4_FH_EXPORT */
	uint64_t fsid;
	uint64_t ino;                    /* pseudo: the node number */
	uint64_t gen;
};

/** nfs4_fh_encode - @fi as a handle. */
void nfs4_fh_encode(const struct nfs4_fhinfo *fi, struct nfs4_fh *fh);
/**
 * nfs4_fh_decode - parse a handle a client sent.
 * Return: NFS4_OK or NFS4ERR_BADHANDLE (wrong length, magic, version, kind).
 */
uint32_t nfs4_fh_decode(const struct nfs4_fh *fh, struct nfs4_fhinfo *fi);

#endif
