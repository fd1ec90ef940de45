/*
 * gw.h - the embedded NFS gateway: the one public header of nfs_gw/.
 *
 * loligo-fuse runs the gateway in its own process when given
 * `--nfs ADDR:PORT`: the gateway serves NFSv4.1 and NFSv4.0 (and later
 * NFSv3) over ONC RPC on TCP, and answers every request through the same
 * struct lclient as the FUSE mount, so both share one MDS session and one
 * cache.  Everything else in nfs_gw/ (rpc/, nfs4/, nfs3/) is private.
 *
 * Threads: gw_start() starts one io_uring thread (accept, receive, send),
 * a pool of worker threads that run requests, and a lease reaper; gw_stop()
 * stops and joins all of them.  The configuration comes from the [nfs]
 * options (common/options/nfs.def), read once in gw_start().
 */
#ifndef LOLIGO_NFS_GW_GW_H
#define LOLIGO_NFS_GW_GW_H

#include <stdint.h>

struct lclient;
struct asok;
struct gw;

/**
 * gw_start - start serving NFS.
 * @addr_port: "ADDR:PORT" to listen on ("127.0.0.1:2049", "[::1]:2049",
 *             ":2049" or "0.0.0.0:2049" for every address; port 0 picks an
 *             ephemeral port, read it back with gw_port()).
 * @c:         the mounted client every request is served through; the
 *             caller keeps ownership and must keep it alive until gw_stop().
 *             May be NULL in tests: then only the RPC/session layer works and
 *             filesystem operations answer NFS4ERR_SERVERFAULT.
 * @asok:      the process's admin socket, or NULL.  The gateway registers
 *             its commands on it (`drc dump`, `nfs clients`); they stay
 *             registered until the admin socket is stopped, so stop the
 *             admin socket after gw_stop() or not at all.
 * @out:       the new gateway.
 *
 * Return: 0, -EINVAL (bad @addr_port), -EADDRINUSE, or another -errno.
 * On error nothing is left running.
 */
int gw_start(const char *addr_port, struct lclient *c, struct asok *asok, struct gw **out);

/** gw_port - the TCP port @gw listens on (useful after asking for port 0). */
uint16_t gw_port(const struct gw *gw);

/**
 * gw_stop - stop accepting, close every connection, let the requests that
 * are running finish, join every thread and free everything.  @gw may be
 * NULL.  Does not touch the struct lclient.
 */
void gw_stop(struct gw *gw);

#endif
