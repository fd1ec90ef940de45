/*
 * gw.h - the embedded NFS gateway: the one public header of nfs_gw/.
 *
 * loligo-fuse runs the gateway in its own process when given
 * `--nfs ADDR:PORT`: the gateway serves NFSv4.1, NFSv4.0, NFSv3 and MOUNT
 * v3 over ONC RPC on TCP, on one port, and answers every request through
 * the same struct lclient as the FUSE mount, so both share one MDS session
 * and one cache.  Everything else in nfs_gw/ (rpc/, export/, nfs4/, nfs3/)
 * is private.
 *
 * Threads: gw_start() starts one io_uring thread (accept, receive, send),
 * a pool of worker threads that run requests, a lease reaper and the
 * NFSv3 open-file reaper; gw_stop() stops and joins all of them.  The configuration comes from the [nfs]
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
 *             its commands on it (`drc dump`, `nfs clients`, `exports`,
 *             `exports reload`, `nfs client expire`); they stay
 *             registered until the admin socket is stopped, so stop the
 *             admin socket after gw_stop() or not at all.
 * @out:       the new gateway.
 *
 * The exports (nfs_exports) are parsed and every path resolved through @c
 * first: any error is logged naming the export and the field, and
 * gw_start() fails with -EINVAL without listening (never a fallback).
 *
 * Return: 0, -EINVAL (bad @addr_port or exports), -EADDRINUSE, or another
 * -errno.  On error nothing is left running.
 */
int gw_start(const char *addr_port, struct lclient *c, struct asok *asok, struct gw **out);

/**
 * gw_check_exports - parse and check nfs_exports as gw_start() would, and
 * (with @c, a mounted client) that every export path is a directory.
 * For `loligo-fuse --check-config`.  Return: 0, or -errno with one line in
 * @err naming the export and the field.
 */
int gw_check_exports(struct lclient *c, char *err, size_t errlen);

/**
 * gw_exports_reload - read nfs_exports again (cfg_reload_option: from the
 * config file unless the command line or `config set` gave it) and, if
 * every export checks out, serve it from the next request on; otherwise
 * nothing changes.  Any thread (the admin socket's, a SIGHUP handler's).
 * Return: 1 changed, 0 the same exports, -errno with the reason in @err.
 */
int gw_exports_reload(struct gw *gw, char *err, size_t errlen);

/** gw_port - the TCP port @gw listens on (useful after asking for port 0). */
uint16_t gw_port(const struct gw *gw);

/**
 * gw_stop - stop accepting, close every connection, let the requests that
 * are running finish, join every thread and free everything.  @gw may be
 * NULL.  Does not touch the struct lclient.
 */
void gw_stop(struct gw *gw);

#endif
