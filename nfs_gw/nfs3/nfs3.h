/*
 * nfs3.h - the NFSv3 and MOUNT v3 server of the gateway (RFC 1813),
 * private to nfs_gw/ (gw.c wires it).
 *
 * Both programs register on the same struct rpc_svc as NFSv4, so they
 * share its transport (one TCP port serves NFS and MOUNT: mount with
 * port=P,mountport=P,mountproto=tcp), its credentials (AUTH_SYS), its
 * duplicate reply cache (the non-idempotent procedures go through it, with
 * the implied-ACK eviction of drc.h) and the gateway's exports and struct
 * lclient (so a v3 client, a v4 client and the FUSE mount see one cache).
 * File handles are the NFSv4 ones (nfs_gw/nfs4/fh.h: export id, fsid, ino,
 * generation): a handle from either version works in the other, and both
 * survive a gateway restart.  NLM (locking) is not served: clients mount
 * with nolock (or local_lock=all).
 *
 * Files (private):
 *   nfs3_xdr.h/.c  decoders of every procedure's arguments, encoders (pure)
 *   nfs3_int.h     the server and a request's context, shared below
 *   nfs3_proc.c    NFS procedures NULL..COMMIT
 *   mount.c        MOUNT: MNT, DUMP, UMNT, UMNTALL, EXPORT
 *   fcache.c       open file handles kept between READ/WRITE/COMMITs
 */
#ifndef LOLIGO_NFS_GW_NFS3_NFS3_H
#define LOLIGO_NFS_GW_NFS3_NFS3_H

#include <stddef.h>
#include <stdint.h>

struct lclient;
struct rpc_svc;
struct nfs_export_set;
struct nfs3_server;

struct nfs3_params {
	struct nfs_export_set *exports;  /* the gateway's (not owned) */
	uint32_t max_io;                 /* largest READ/WRITE (FSINFO rtmax/wtmax) */
	uint64_t fcache_idle_ns;         /* an unused cached open goes after this long */
	unsigned int fcache_max;         /* most cached opens */
};

/** nfs3_params_from_config - the nfs3_* options; @max_record bounds max_io. */
void nfs3_params_from_config(struct nfs3_params *p, size_t max_record, size_t max_reply);

/**
 * nfs3_server_create - an NFSv3/MOUNT server over @lc (NULL in tests: every
 * filesystem procedure answers NFS3ERR_SERVERFAULT).  Starts the thread
 * that closes idle cached opens.  Return: 0 or -errno.
 */
int nfs3_server_create(const struct nfs3_params *p, struct lclient *lc, struct nfs3_server **out);

/** nfs3_register - NFS v3 (100003) and MOUNT v3 (100005) on @svc, before rpc_svc_start(). */
int nfs3_register(struct nfs3_server *s, struct rpc_svc *svc);

/** nfs3_server_destroy - after the RPC service stopped: close the cached opens, free. */
void nfs3_server_destroy(struct nfs3_server *s);

#endif
