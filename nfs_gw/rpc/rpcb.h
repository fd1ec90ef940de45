/*
 * rpcb.h - registration with the host's rpcbind (rpcb.c, through
 * libtirpc).  A header of its own because libtirpc's <rpc/rpc.h> defines
 * names (RPC_SUCCESS, AUTH_*, ...) that nfs_gw/rpc/rpc.h defines too: only
 * rpcb.c sees libtirpc.
 */
#ifndef LOLIGO_NFS_GW_RPC_RPCB_H
#define LOLIGO_NFS_GW_RPC_RPCB_H

#include <stdint.h>
#include <sys/socket.h>

/**
 * rpc_rpcb_set - register each (program, version) of @pv on TCP at
 * @listen with the host's rpcbind.  When no rpcbind runs, log how clients
 * mount without it and return 0 (nothing waits: the probe is bounded).
 * Return: versions registered, or -errno.
 */
int rpc_rpcb_set(const struct sockaddr_storage *listen, const uint32_t (*pv)[2], int n);

/** rpc_rpcb_unset - unregister them again (nothing if no rpcbind runs). */
void rpc_rpcb_unset(const uint32_t (*pv)[2], int n);

#endif
