/*
 * rpcb.c - register the service's programs with the host's rpcbind
 * (RFC 1833) through libtirpc, so `showmount -e` and a plain
 * `mount -t nfs -o vers=3` find the port, and unregister them at the end.
 *
 * rpcbind is optional: when none runs (no /run/rpcbind.sock and nothing
 * on 127.0.0.1:111), one log line says so and how clients mount without
 * it (port=, mountport=, mountproto=tcp); nothing waits.  The probe bounds
 * the time spent: libtirpc's own calls only start once a server answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "common/log.h"
#include "nfs_gw/rpc/rpcb.h"

#define RPCB_PROBE_MS 500

/* Does an rpcbind answer on this host?  The local socket, else TCP 111. */
static bool rpcbind_runs(void)
{
	static const char *const socks[] = { "/run/rpcbind.sock", "/var/run/rpcbind.sock" };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(111) };
	struct pollfd pf;
	struct stat st;
	socklen_t el = sizeof(int);
	int fd, err = 0, r;

	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		if (stat(socks[i], &st) || !S_ISSOCK(st.st_mode))
			continue;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", socks[i]);
		r = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
		close(fd);
		if (!r)
			return true;
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	r = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (r < 0 && errno == EINPROGRESS) {
		pf.fd = fd;
		pf.events = POLLOUT;
		r = poll(&pf, 1, RPCB_PROBE_MS) == 1 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) && !err ? 0 : -1;
	}
	close(fd);
	return r == 0;
}

/* The universal address of @port on the address the service listens on. */
static void uaddr_of(const struct sockaddr_storage *ss, struct netbuf *nb, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	if (ss->ss_family == AF_INET)
		memcpy(sin, ss, sizeof(*sin));
	sin->sin_family = AF_INET;
	nb->buf = sin;
	nb->len = nb->maxlen = sizeof(*sin);
}

int rpc_rpcb_set(const struct sockaddr_storage *listen, const uint32_t (*pv)[2], int n)
{
	struct netconfig *nc;
	struct sockaddr_in sin;
	struct netbuf nb;
	int i, done = 0;

	if (!rpcbind_runs()) {
		dinfo(RPC, "no rpcbind runs on this host: NFS and MOUNT are not registered; clients mount with "
		      "port=%u,mountport=%u,mountproto=tcp (and nolock)", ntohs(((const struct sockaddr_in *)listen)->sin_port),
		      ntohs(((const struct sockaddr_in *)listen)->sin_port));
		return 0;
	}
	nc = getnetconfigent("tcp");
	if (!nc) {
		derr(RPC, "rpcbind: no 'tcp' in /etc/netconfig: not registering");
		return -ENOENT;
	}
	uaddr_of(listen, &nb, &sin);
	for (i = 0; i < n; i++) {
		rpcb_unset(pv[i][0], pv[i][1], nc);      /* a stale one from a crashed run */
		if (rpcb_set(pv[i][0], pv[i][1], nc, &nb))
			done++;
		else
			derr(RPC, "rpcbind: registering program %u version %u failed", pv[i][0], pv[i][1]);
	}
	freenetconfigent(nc);
	dinfo(RPC, "registered %d program version%s with rpcbind (port %u)", done, done == 1 ? "" : "s",
	      ntohs(sin.sin_port));
	return done;
}

void rpc_rpcb_unset(const uint32_t (*pv)[2], int n)
{
	struct netconfig *nc;

	if (!rpcbind_runs() || !(nc = getnetconfigent("tcp")))
		return;
	for (int i = 0; i < n; i++)
		rpcb_unset(pv[i][0], pv[i][1], nc);
	freenetconfigent(nc);
}
