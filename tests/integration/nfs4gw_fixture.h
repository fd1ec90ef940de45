/*
 * nfs4gw_fixture.h - the fixture of the gateway conformance suites
 * (test_nfs4_gw*.c): a loligo-mds from the build tree on a temporary
 * store (one per test case, started by an unchecked fixture in the runner,
 * which kills it and removes the directory even when a test fails), and in
 * each forked test a real client library mounted on it with the gateway
 * serving it on an ephemeral loopback port, as loligo-fuse runs it.
 */
#ifndef LOLIGO_TESTS_NFS4GW_FIXTURE_H
#define LOLIGO_TESTS_NFS4GW_FIXTURE_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.h"
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/gw.h"
#include "nfs4_client.h"
#include "tests/lib/daemon.h"
#include "tests/test_keyring.h"

/* ---- the MDS (runner process) ------------------------------------------------ */

static char dir[PATH_MAX];
static char conf[PATH_MAX + 32];
static struct lt_mds M;         /* M.dir is dir */

static void fs_setup(void)
{
	lt_fs_make(&M, "/tmp/nfs4gw-XXXXXX", NULL, NULL);  /* says why when it fails; the case then fails on M.port */
	snprintf(dir, sizeof(dir), "%s", M.dir);
	snprintf(conf, sizeof(conf), "%s/loligo.conf", M.dir);
}

static void fs_teardown(void)
{
	lt_fs_remove(&M, "NFS4GW_KEEP");
}

/* ---- the gateway (test process) ---------------------------------------------- */

static struct lclient *lc;
static struct lc_inode *lroot;
static struct gw *gw;
static struct asok *asok;
static char asok_path[PATH_MAX + 16];
static uint16_t port;
static const struct lc_cred rootcr = { 0 };
static char tdir[64];                  /* this test's directory, below the root */

static void set_opt(const char *k, const char *v)
{
	char err[256];

	ck_assert_msg(cfg_set(cfg_lookup(k), v, false, err, sizeof(err)) == 0, "%s=%s: %s", k, v, err);
}

/* one admin command to the MDS; its reply (json_object_put it) */
static inline struct json_object *fixture_mds_cmd(const char *prefix, const char *key, int64_t val)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;
	char path[PATH_MAX + 16];

	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (key)
		json_object_object_add(req, key, json_object_new_int64(val));
	snprintf(path, sizeof(path), "%s/mds.asok", dir);
	ck_assert_msg(asok_request(path, req, &rep, 10000) == 0 && rep, "MDS admin socket: %s", prefix);
	json_object_put(req);
	return rep;
}

/*
 * The checked setup of each test: sessions left by an earlier test of the
 * case that failed.  Its forked process exited at the failed check without
 * unmounting, and its caps would hold this test's requests until the MDS
 * timed the session out (mds_session_timeout): one failure made the next
 * test wait, and maybe fail too.  Only sessions whose process is gone are
 * evicted (a suite's own long-lived clients stay).
 */
static inline void evict_leftover_sessions(void)
{
	struct json_object *ls = fixture_mds_cmd("session ls", NULL, 0), *v;

	for (size_t i = 0; json_object_is_type(ls, json_type_array) && i < json_object_array_length(ls); i++) {
		struct json_object *o = json_object_array_get_idx(ls, i);

		struct json_object *p;
		long pid;

		if (!json_object_object_get_ex(o, "id", &v) || !json_object_object_get_ex(o, "pid", &p) ||
		    (pid = strtol(json_object_get_string(p), NULL, 10)) <= 0 || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		fprintf(stderr, "evicting session %lld of pid %ld, gone: left by an earlier test of this case\n",
			(long long)json_object_get_int64(v), pid);
		json_object_put(fixture_mds_cmd("client evict", "id", json_object_get_int64(v)));
	}
	json_object_put(ls);
}

/* Start the client library and the gateway; @opts: "key=value" pairs, NULL-terminated. */
static void gw_up_opts(const char *const *opts)
{
	char err[256], addr[64];

	ck_assert_msg(M.port > 0, "no MDS");
	cfg_init("client,nfs");
	ck_assert_msg(cfg_load_file(conf, err, sizeof(err)) == 0, "%s", err);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", M.port);
	set_opt("client_mds_addr", addr);
	{
		char lf[PATH_MAX + 16];

		snprintf(lf, sizeof(lf), "%s/gw.log", dir);
		set_opt("log_file", lf);
	}
	set_opt("nfs4_grace_time", "0");
	set_opt("nfs_exports", "id=1,path=/,rw,no_root_squash,insecure");
	set_opt("nfs_workers", "24");
	set_opt("nfs_rpcbind", "false");              /* never the host's rpcbind */
	if (getenv("NFS4GW_DEBUG"))
		set_opt("debug_nfs", getenv("NFS4GW_DEBUG"));
	for (; opts && *opts; opts++) {
		char k[128];
		const char *eq = strchr(*opts, '=');

		ck_assert_ptr_nonnull(eq);
		snprintf(k, sizeof(k), "%.*s", (int)(eq - *opts), *opts);
		set_opt(k, eq + 1);
	}
	ck_assert_int_eq(lclient_create(&lc), 0);
	ck_assert_int_eq(lclient_mount(lc, NULL), 0);
	lroot = lc_root(lc);
	snprintf(asok_path, sizeof(asok_path), "%s/gw-%d.asok", dir, (int)getpid());
	ck_assert_int_eq(asok_start(asok_path, &asok), 0);
	ck_assert_int_eq(gw_start("127.0.0.1:0", lc, asok, &gw), 0);
	port = gw_port(gw);
	ck_assert_uint_ne(port, 0);
}

static void gw_up(void)
{
	gw_up_opts(NULL);
}

static void gw_down(void)
{
	gw_stop(gw);
	gw = NULL;
	if (asok)
		asok_stop(asok);
	asok = NULL;
	if (lroot)
		lc_put(lc, lroot);
	lroot = NULL;
	if (lc) {
		lclient_unmount(lc);
		lclient_destroy(lc);
	}
	lc = NULL;
}

static void teardown(void)
{
	if (gw || lc)
		gw_down();
}

/* A directory of the test's own (mode 0777), its handle in @fh. */
static inline void test_dir(struct nc *n, const char *name, struct nfs4_fh *fh)
{
	struct lc_inode *d = NULL;
	struct lc_attr a = { .mode = 0777 };
	int r;

	snprintf(tdir, sizeof(tdir), "%s", name);
	r = lc_mkdir(lc, lroot, name, 0777, &rootcr, NULL, &d);
	ck_assert_msg(r == 0, "mkdir %s: %s", name, strerror(-r));
	ck_assert_int_eq(lc_setattr(lc, d, &a, LC_SET_MODE, &rootcr, NULL), 0);
	lc_put(lc, d);
	nc_lookup_path(n, name, fh);
}

/* A file in the test's directory with @content, created through the client library. */
static inline void make_file(const char *name, const char *content, mode_t mode)
{
	struct lc_inode *d, *in;
	struct lc_fh *fh;
	size_t len = content ? strlen(content) : 0;

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_create(lc, d, name, S_IFREG | mode, O_RDWR | O_CREAT | O_EXCL, &rootcr, NULL, &in, &fh), 0);
	if (len)
		ck_assert_int_eq(lc_write(lc, fh, 0, len, content), (ssize_t)len);
	ck_assert_int_eq(lc_release(lc, fh), 0);
	lc_put(lc, in);
	lc_put(lc, d);
}

/* `perf dump` on the admin socket: counter @name of group @group (-1: absent). */
static inline long long perf_counter(const char *group, const char *name)
{
	struct json_object *req = json_object_new_object(), *reply = NULL, *g, *v;
	long long val = -1;

	json_object_object_add(req, "prefix", json_object_new_string("perf dump"));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 5000), 0);
	if (json_object_object_get_ex(reply, group, &g) && json_object_object_get_ex(g, name, &v))
		val = json_object_get_int64(v);
	json_object_put(reply);
	json_object_put(req);
	return val;
}

/* A directory (S_IFDIR), symlink (S_IFLNK, to "target") or fifo in the test's directory. */
static inline void make_node(const char *name, mode_t type)
{
	struct lc_inode *d, *in = NULL;
	int r;

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	if (type == S_IFDIR)
		r = lc_mkdir(lc, d, name, 0755, &rootcr, NULL, &in);
	else if (type == S_IFLNK)
		r = lc_symlink(lc, d, name, "target", &rootcr, NULL, &in);
	else
		r = lc_mknod(lc, d, name, type | 0644, 0, &rootcr, NULL, &in);
	ck_assert_msg(r == 0, "make %s: %s", name, strerror(-r));
	lc_put(lc, in);
	lc_put(lc, d);
}

/* chown/chmod a file of the test's directory through the client library */
static inline void set_owner_mode(const char *name, uid_t uid, gid_t gid, mode_t mode)
{
	struct lc_inode *d, *in;
	struct lc_attr a = { .uid = uid, .gid = gid, .mode = mode };

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_lookup(lc, d, name, &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_setattr(lc, in, &a, LC_SET_UID | LC_SET_GID | LC_SET_MODE, &rootcr, NULL), 0);
	lc_put(lc, in);
	lc_put(lc, d);
}

/* Poll @cond (up to @secs seconds, every 20 ms); the condition's last value. */
#define WAIT_FOR(cond, secs)                                                         \
	({                                                                           \
		uint64_t _end = now_mono_ns() + (uint64_t)(secs) * 1000000000ull;    \
		bool _ok;                                                            \
		while (!(_ok = (cond)) && now_mono_ns() < _end)                      \
			usleep(20000);                                               \
		_ok;                                                                 \
	})

#endif
