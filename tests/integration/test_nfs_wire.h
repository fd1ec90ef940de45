/*
 * test_nfs_wire.h - what the NFS gateway's integration tests share: a
 * gateway served through a real client library against a real loligo-mds
 * (nfsgw_*), and raw ONC RPC connections from a chosen source address and
 * port (so a test can be "another peer", or reconnect from the same port as
 * a kernel client does), on top of tests/unit/test_rpc_util.h.
 *
 * The MDS runs once per test case in the runner process (mdsproc, killed
 * with the runner); each test runs forked with its own client library, admin
 * socket and gateway, configured by the test before nfsgw_start().
 */
#ifndef LOLIGO_TESTS_NFS_WIRE_H
#define LOLIGO_TESTS_NFS_WIRE_H

#include <check.h>
#include <json-c/json.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <sys/ioctl.h>

#include "client/client.h"
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/gw.h"
#include "tools/bench/mds_wire.h"
#include "../unit/test_rpc_util.h"

struct nfsgw {
	struct lclient *c;
	struct lc_inode *root;
	struct asok *asok;
	struct gw *gw;
	uint16_t port;
	char dir[256];          /* temp dir: the admin socket */
	char asok_path[300];
};

/* runner: the suite's MDS (see nfsgw_mds_up/down) */
extern struct mdsproc nfsgw_mds;

static inline void nfsgw_opt(const char *k, const char *v)
{
	char err[256];

	ck_assert_msg(cfg_set(cfg_lookup(k), v, false, err, sizeof(err)) == 0, "%s=%s: %s", k, v, err);
}

/* test process: the configuration every test starts from (override after) */
static inline void nfsgw_config(void)
{
	char v[512];

	log_init("test_nfs_gw");
	cfg_init("client,nfs");
	nfsgw_opt("store_backend", "local");
	snprintf(v, sizeof(v), "%s/store", nfsgw_mds.dir);
	nfsgw_opt("store_local_path", v);
	snprintf(v, sizeof(v), "127.0.0.1:%u", nfsgw_mds.port);
	nfsgw_opt("client_mds_addr", v);
	snprintf(v, sizeof(v), "%s/client.keyring", nfsgw_mds.dir);  /* written by mdsproc_init */
	nfsgw_opt("client_keyring", v);
	nfsgw_opt("client_mount_timeout", "10");
	nfsgw_opt("log_file", "");
	nfsgw_opt("nfs4_grace_time", "0");
	nfsgw_opt("nfs_rpcbind", "false");     /* never the host's rpcbind */
	nfsgw_opt("nfs_exports", "id=1,path=/,rw,no_root_squash,insecure");
	if (getenv("NFSGW_DEBUG"))
		nfsgw_opt("debug_nfs", getenv("NFSGW_DEBUG"));
}

/* test process: client library, admin socket, gateway on 127.0.0.1:0 */
static inline void nfsgw_start(struct nfsgw *g)
{
	int r;

	memset(g, 0, sizeof(*g));
	snprintf(g->dir, sizeof(g->dir), "/tmp/nfsgw-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g->dir));
	snprintf(g->asok_path, sizeof(g->asok_path), "%s/client.asok", g->dir);
	ck_assert_int_eq(asok_start(g->asok_path, &g->asok), 0);
	ck_assert_int_eq(lclient_create(&g->c), 0);
	r = lclient_mount(g->c, NULL);
	ck_assert_msg(r == 0, "mount: %s", strerror(-r));
	g->root = lc_root(g->c);
	r = gw_start("127.0.0.1:0", g->c, g->asok, &g->gw);
	ck_assert_msg(r == 0, "gw_start: %s", strerror(-r));
	g->port = gw_port(g->gw);
}

static inline void nfsgw_stop(struct nfsgw *g)
{
	gw_stop(g->gw);
	g->gw = NULL;
	if (g->root)
		lc_put(g->c, g->root);
	g->root = NULL;
	if (g->c) {
		lclient_unmount(g->c);
		lclient_destroy(g->c);
	}
	g->c = NULL;
	if (g->asok)
		asok_stop(g->asok);
	g->asok = NULL;
	if (g->dir[0]) {
		unlink(g->asok_path);
		rmdir(g->dir);
	}
}

/* An admin socket command (JSON args optional); the reply, to json_object_put. */
static inline struct json_object *nfsgw_cmd(struct nfsgw *g, const char *prefix, const char *key, const char *val)
{
	struct json_object *req = json_object_new_object(), *reply = NULL;

	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (key)
		json_object_object_add(req, key, json_object_new_string(val));
	ck_assert_int_eq(asok_request(g->asok_path, req, &reply, 10000), 0);
	json_object_put(req);
	return reply;
}

static inline int64_t nfsgw_json_int(struct json_object *o, const char *k)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s in %s", k, json_object_to_json_string(o));
	return json_object_get_int64(v);
}

/* ---- raw connections ------------------------------------------------------ */

/*
 * nfsw_connect - TCP to 127.0.0.1:@port from @src (NULL: 127.0.0.1) port
 * *@sport (0: any; set to the port bound).  SO_REUSEADDR, so a test can
 * reconnect from the port a reset connection used.  -1 on failure.
 */
static inline int nfsw_connect(const char *src, uint16_t *sport, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(sport ? *sport : 0) };
	struct timeval tv = { .tv_sec = 10 };
	socklen_t ml = sizeof(me);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	inet_pton(AF_INET, src ? src : "127.0.0.1", &me.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sport && getsockname(fd, (struct sockaddr *)&me, &ml) == 0)
		*sport = ntohs(me.sin_port);
	return fd;
}

/* Close @fd with a reset (SO_LINGER 0), as a cut connection looks to the server. */
static inline void nfsw_reset(int fd)
{
	struct linger lg = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* Records completely received in @fd's buffer, not consumed (MSG_PEEK). */
static inline unsigned int nfsw_peek_records(int fd)
{
	static uint8_t buf[1 << 20];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	size_t off = 0;
	unsigned int recs = 0;

	while (n > 0 && off + 4 <= (size_t)n) {
		uint32_t m = xdr_load_u32(buf + off), len = m & ~RPC_RM_LAST;

		if (off + 4 + len > (size_t)n)
			break;
		off += 4 + len;
		if (m & RPC_RM_LAST)
			recs++;
	}
	return recs;
}

/* Append @e's bytes to @out as one record (mark + body). */
static inline void nfsw_append_record(struct xdr_enc *out, const struct xdr_enc *e)
{
	xdr_put_u32(out, (uint32_t)e->len | RPC_RM_LAST);
	xdr_put_fixed(out, e->buf, e->len);
}

/* Poll @cond (an expression) every 10 ms for up to @secs seconds. */
#define NFSW_WAIT(cond, secs)                                                    \
	({                                                                       \
		uint64_t _end = now_mono_ns() + (uint64_t)(secs) * 1000000000ull; \
		bool _ok;                                                        \
		while (!(_ok = (cond)) && now_mono_ns() < _end)                  \
			usleep(10000);                                           \
		_ok;                                                             \
	})

#endif
