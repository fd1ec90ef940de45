/*
 * test_nfs_gw.c - the NFS gateway's RPC layer against a real loligo-mds,
 * through the real client library, over real sockets: the duplicate reply
 * cache under a pipelining client whose connection is cut; exports that
 * fail closed (every bad value refused before anything listens, by the
 * gateway, `loligo-fuse --check-config` and `loligo config check`), knfsd's
 * defaults on the wire, and a reload that changes what a connected client
 * may do; `nfs clients` with addresses and `nfs client expire`.
 *
 * Harness: test_nfs_wire.h (the MDS per test case in the runner, a gateway
 * per test in the forked test process).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_nfs_wire.h"
#include "tests/test_child.h"

struct mdsproc nfsgw_mds;
static char parent[256];

static void mds_up(void)
{
	if (mdsproc_parent_init(parent, sizeof(parent), "nfsgw") || mdsproc_init(&nfsgw_mds, parent) ||
	    mdsproc_mkfs(&nfsgw_mds) || mdsproc_start(&nfsgw_mds))
		fprintf(stderr, "test_nfs_gw: the MDS did not start (see %s)\n", nfsgw_mds.dir);
}

static void mds_down(void)
{
	mdsproc_cleanup(&nfsgw_mds);
	mdsproc_parent_remove(parent);
}

static struct nfsgw g;

static void setup(void)
{
	ck_assert_msg(nfsgw_mds.port, "no MDS");
	nfsgw_config();
}

static void teardown(void)
{
	nfsgw_stop(&g);
}

static const struct lc_cred rootcr = { 0 };

/* ---- NFSv4.0 compounds ------------------------------------------------------- */

#define NFS4_PROG 100003
enum { V4_CREATE = 6, V4_PUTROOTFH = 24, V4_REMOVE = 28, V4_RENAME = 29, V4_SAVEFH = 32, V4_NF4DIR = 2 };
enum { NFS4ERR_PERM_T = 1, NFS4ERR_ACCESS_T = 13, NFS4ERR_ROFS_T = 30 };

static void v40_begin(struct xdr_enc *e, uint32_t xid, uint32_t nops)
{
	xdr_enc_init(e, 64 * 1024);
	trpc_call_header(e, xid, NFS4_PROG, 4, 1);
	xdr_put_string(e, "t");
	xdr_put_u32(e, 0);          /* minor version 0: through the DRC */
	xdr_put_u32(e, nops);
}

/* PUTROOTFH; CREATE a directory @name */
static void v40_mkdir(struct xdr_enc *e, uint32_t xid, const char *name)
{
	v40_begin(e, xid, 2);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_CREATE);
	xdr_put_u32(e, V4_NF4DIR);
	xdr_put_string(e, name);
	xdr_put_u32(e, 0);          /* empty attribute bitmap */
	xdr_put_u32(e, 0);          /* and no values */
}

/* PUTROOTFH; REMOVE @name */
static void v40_remove(struct xdr_enc *e, uint32_t xid, const char *name)
{
	v40_begin(e, xid, 2);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_REMOVE);
	xdr_put_string(e, name);
}

/* PUTROOTFH; SAVEFH; PUTROOTFH; RENAME @from @to */
static void v40_rename(struct xdr_enc *e, uint32_t xid, const char *from, const char *to)
{
	v40_begin(e, xid, 4);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_SAVEFH);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_RENAME);
	xdr_put_string(e, from);
	xdr_put_string(e, to);
}

/* The COMPOUND status of a reply record, or -1 if it is not an accepted reply. */
static int64_t v4_status(const uint8_t *buf, size_t len, uint32_t *xid)
{
	struct trpc_reply r;
	uint32_t st;

	if (trpc_parse_reply(buf, len, &r) || r.reply_stat != RPC_MSG_ACCEPTED || r.stat != RPC_SUCCESS ||
	    xdr_get_u32(&r.res, &st))
		return -1;
	*xid = r.xid;
	return st;
}

static bool exists(const char *name)
{
	struct lc_inode *in = NULL;
	int r = lc_lookup(g.c, g.root, name, &rootcr, NULL, &in);

	if (!r)
		lc_put(g.c, in);
	return r == 0;
}

static void mkdir_lc(const char *name)
{
	struct lc_inode *in = NULL;

	ck_assert_int_eq(lc_mkdir(g.c, g.root, name, 0755, &rootcr, NULL, &in), 0);
	lc_put(g.c, in);
}

/*
 * Issue 8.2: a client pipelines 16 non-idempotent NFSv4.0 requests
 * (REMOVE, RENAME, CREATE), its connection is cut before it reads a single
 * reply, it reconnects from the same port and retransmits all 16: each is
 * answered from the cache (the original statuses: OK), none runs twice.
 *
 * nfs_max_inflight = 4 makes the gateway stop reading after 4 requests and
 * resume as each reply goes out, so requests 5..16 are parsed after replies
 * were written, although the client sent them all before any reply: an
 * implied ACK by arrival order alone (the code before issue 8.2) evicted 12
 * of the 16 replies, and their retransmissions ran again (REMOVE: NOENT,
 * CREATE: EXIST, RENAME: NOENT).
 */
START_TEST(drc_pipelined_cut_replay)
{
	static const char *const kinds = "CRMCRMCRMCRMCRMC";   /* create, remove, rename (move) */
	struct xdr_enc all, one;
	struct json_object *d;
	uint16_t sport = 0;
	char name[32], to[32];
	int fd, i, hits0, got = 0;

	nfsgw_opt("nfs_max_inflight", "4");
	nfsgw_start(&g);
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "%c%02d", kinds[i], i);
		if (kinds[i] != 'C')
			mkdir_lc(name);
	}
	xdr_enc_init(&all, 1 << 20);
	for (i = 0; i < 16; i++) {
		uint32_t xid = 0x8200 + (uint32_t)i;

		snprintf(name, sizeof(name), "%c%02d", kinds[i], i);
		snprintf(to, sizeof(to), "moved%02d", i);
		if (kinds[i] == 'C')
			v40_mkdir(&one, xid, name);
		else if (kinds[i] == 'R')
			v40_remove(&one, xid, name);
		else
			v40_rename(&one, xid, name, to);
		nfsw_append_record(&all, &one);
		xdr_enc_free(&one);
	}
	ck_assert_int_eq(all.err, 0);

	fd = nfsw_connect(NULL, &sport, g.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(trpc_write_all(fd, all.buf, all.len), 0);    /* all 16 at once */
	ck_assert_msg(NFSW_WAIT(nfsw_peek_records(fd) == 16, 30), "only %u of 16 replies arrived",
		      nfsw_peek_records(fd));
	/* every one ran once */
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "%c%02d", kinds[i], i);
		snprintf(to, sizeof(to), "moved%02d", i);
		ck_assert_msg(exists(name) == (kinds[i] == 'C'), "%s", name);
		if (kinds[i] == 'M')
			ck_assert(exists(to));
	}
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	hits0 = (int)nfsgw_json_int(d, "hits");
	ck_assert_int_eq(nfsgw_json_int(d, "inserts"), 16);
	json_object_put(d);

	nfsw_reset(fd);                             /* cut, nothing read */
	fd = -1;
	ck_assert(NFSW_WAIT((fd = nfsw_connect(NULL, &sport, g.port)) >= 0, 10));
	ck_assert_int_eq(trpc_write_all(fd, all.buf, all.len), 0);
	for (i = 0; i < 16; i++) {
		size_t len;
		uint32_t xid = 0;
		uint8_t *rep = trpc_recv_record(fd, &len, NULL);
		int64_t st;

		ck_assert_msg(rep, "reply %d of the retransmissions missing", i);
		st = v4_status(rep, len, &xid);
		free(rep);
		ck_assert_msg(st == 0, "xid %#x (%c) answered %lld: it ran again", xid, kinds[xid - 0x8200],
			      (long long)st);
		got++;
	}
	ck_assert_int_eq(got, 16);
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	ck_assert_int_eq(nfsgw_json_int(d, "hits") - hits0, 16);
	ck_assert_int_eq(nfsgw_json_int(d, "inserts"), 16);
	json_object_put(d);
	close(fd);
	xdr_enc_free(&all);
}
END_TEST

/*
 * The population stays bounded by what is in doubt: a client that sends
 * one request at a time leaves at most a couple of entries per connection
 * (the last reply, and one whose ACK the gateway has not sampled yet),
 * however many requests it sends.
 */
START_TEST(drc_population_bounded)
{
	struct json_object *d;
	char name[32];
	int fds[4], i, k;

	nfsgw_start(&g);
	for (k = 0; k < 4; k++) {
		fds[k] = nfsw_connect(NULL, NULL, g.port);
		ck_assert_int_ge(fds[k], 0);
	}
	for (i = 0; i < 50; i++) {
		for (k = 0; k < 4; k++) {
			struct xdr_enc e;
			uint8_t *rep;
			size_t len;
			uint32_t xid;

			snprintf(name, sizeof(name), "p%d-%d", k, i);
			v40_mkdir(&e, 0x9000 + (uint32_t)(k * 1000 + i), name);
			ck_assert_int_eq(trpc_send_record(fds[k], e.buf, e.len, 0), 0);
			xdr_enc_free(&e);
			rep = trpc_recv_record(fds[k], &len, NULL);
			ck_assert_ptr_nonnull(rep);
			ck_assert_int_eq(v4_status(rep, len, &xid), 0);
			free(rep);
		}
	}
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	ck_assert_int_eq(nfsgw_json_int(d, "inserts"), 200);
	ck_assert_msg(nfsgw_json_int(d, "population") <= 4 * 2, "population %lld after 200 calls on 4 connections",
		      (long long)nfsgw_json_int(d, "population"));
	ck_assert_int_ge(nfsgw_json_int(json_object_object_get(d, "evictions"), "implied_ack"), 200 - 8);
	json_object_put(d);
	for (k = 0; k < 4; k++)
		close(fds[k]);
}
END_TEST

/* ---- exports ----------------------------------------------------------------- */

/* One call on @fd, its COMPOUND status. */
static int64_t v4_call(int fd, struct xdr_enc *e)
{
	uint8_t *rep;
	size_t len;
	uint32_t xid;
	int64_t st;

	ck_assert_int_eq(trpc_send_record(fd, e->buf, e->len, 0), 0);
	xdr_enc_free(e);
	rep = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(rep);
	st = v4_status(rep, len, &xid);
	free(rep);
	return st;
}

static int64_t v4_mkdir_call(int fd, uint32_t xid, const char *name)
{
	struct xdr_enc e;

	v40_mkdir(&e, xid, name);
	return v4_call(fd, &e);
}

/* Every bad value is refused by gw_start: -EINVAL, nothing listens. */
START_TEST(exports_refused_at_start)
{
	static const char *const bad[] = {
		"id=1,path=/,unknown_thing", "id=1,path=/,clients=10.0.0.0/33", "id=1,path=/,anonuid=abc",
		"id=1,path=/,rw,ro", "id=1,path=/no/such/dir", "path=/", "", "id=1,path=/,sec=krb5p",
	};
	struct gw *gw;
	int r;

	ck_assert_int_eq(lclient_create(&g.c), 0);
	ck_assert_int_eq(lclient_mount(g.c, NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gw = NULL;
		nfsgw_opt("nfs_exports", bad[i]);
		r = gw_start("127.0.0.1:0", g.c, NULL, &gw);
		ck_assert_msg(r == -EINVAL, "'%s': gw_start %d", bad[i], r);
		ck_assert_ptr_null(gw);
	}
	/* a file is not a directory to export */
	{
		struct lc_inode *root = lc_root(g.c), *f = NULL;
		struct lc_fh *fh = NULL;

		ck_assert_int_eq(lc_create(g.c, root, "plainfile", 0644, O_CREAT, &rootcr, NULL, &f, &fh), 0);
		lc_release(g.c, fh);
		lc_put(g.c, f);
		lc_put(g.c, root);
		nfsgw_opt("nfs_exports", "id=1,path=/plainfile");
		ck_assert_int_eq(gw_start("127.0.0.1:0", g.c, NULL, &gw), -EINVAL);
	}
	{
		char err[512];

		nfsgw_opt("nfs_exports", "id=1,path=/;id=2,path=/missing,rw");
		ck_assert_int_eq(gw_check_exports(g.c, err, sizeof(err)), -ENOENT);
		ck_assert_str_eq(err, "nfs_exports: export 2 (id=2, path=/missing): path: no such directory in loligo");
		ck_assert_int_eq(gw_check_exports(NULL, err, sizeof(err)), 0);   /* the syntax is fine */
	}
}
END_TEST

/* Run @cmd (a shell line), its exit status; its stderr+stdout into @out. */
static int run(const char *cmd, char *out, size_t outlen)
{
	FILE *f = popen(cmd, "r");
	size_t n = 0;
	int st;

	ck_assert_ptr_nonnull(f);
	while (n + 1 < outlen && fgets(out + n, (int)(outlen - n), f))
		n += strlen(out + n);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The daemon and the CLI refuse a bad export with its message and a
 * non-zero exit: loligo-fuse serves nothing, `--check-config` and
 * `loligo config check` say what is wrong. */
START_TEST(exports_refused_by_the_programs)
{
	const char *b = getenv("LOLIGO_BUILD_DIR");
	char conf[512], cmd[2048], out[8192];
	FILE *f;
	int st;

	ck_assert_ptr_nonnull(b);
	snprintf(g.dir, sizeof(g.dir), "/tmp/nfsgw-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g.dir));
	snprintf(conf, sizeof(conf), "%s/bad.conf", g.dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[global]\nstore_backend = local\nstore_local_path = %s/store\n[client]\nclient_mds_addr = "
		"127.0.0.1:%u\nclient_mount_timeout = 5\nlog_file =\nclient_keyring = %s/client.keyring\n[nfs]\n"
		"nfs_exports = id=1,path=/,rw;id=2,path=/pub,clients=10.0.0.0/33\n", nfsgw_mds.dir, nfsgw_mds.port,
		nfsgw_mds.dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/tools/cli/loligo -c %s config check 2>&1", b, conf);
	st = run(cmd, out, sizeof(out));
	ck_assert_msg(st == 1, "loligo config check: %d: %s", st, out);
	ck_assert_msg(strstr(out, "nfs_exports: export 2 (id=2, path=/pub): clients: bad prefix length '/33'"), "%s", out);
	snprintf(cmd, sizeof(cmd), "%s/client/fuse/loligo-fuse -c %s --check-config 2>&1", b, conf);
	st = run(cmd, out, sizeof(out));
	ck_assert_msg(st == 1, "--check-config: %d: %s", st, out);
	ck_assert_msg(strstr(out, "export 2 (id=2, path=/pub): clients: bad prefix length"), "%s", out);
	/* the daemon itself: non-zero, the message, nothing served */
	snprintf(cmd, sizeof(cmd), "timeout 60 %s/client/fuse/loligo-fuse -f -c %s --no-mount --nfs 127.0.0.1:0 2>&1",
		 b, conf);
	st = run(cmd, out, sizeof(out));
	ck_assert_msg(st != 0 && st != 124, "loligo-fuse with a bad export: exit %d: %s", st, out);
	ck_assert_msg(strstr(out, "clients: bad prefix length '/33'"), "%s", out);
	ck_assert_msg(!strstr(out, "NFS gateway serving"), "%s", out);
	/* a path that is not there: the offline check cannot know, the
	 * checker with the MDS and the daemon do */
	f = fopen(conf, "w");
	fprintf(f, "[global]\nstore_backend = local\nstore_local_path = %s/store\n[client]\nclient_mds_addr = "
		"127.0.0.1:%u\nclient_mount_timeout = 5\nlog_file =\nclient_keyring = %s/client.keyring\n[nfs]\n"
		"nfs_exports = id=1,path=/;id=2,path=/nope\n", nfsgw_mds.dir, nfsgw_mds.port, nfsgw_mds.dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/tools/cli/loligo -c %s config check 2>&1", b, conf);
	st = run(cmd, out, sizeof(out));
	ck_assert_msg(st == 0 && strstr(out, ": OK"), "%d: %s", st, out);
	snprintf(cmd, sizeof(cmd), "%s/client/fuse/loligo-fuse -c %s --check-config 2>&1", b, conf);
	st = run(cmd, out, sizeof(out));
	ck_assert_msg(st == 1 && strstr(out, "export 2 (id=2, path=/nope): path: no such directory in loligo"), "%d: %s",
		      st, out);
	snprintf(cmd, sizeof(cmd), "timeout 60 %s/client/fuse/loligo-fuse -f -c %s --no-mount --nfs 127.0.0.1:0 2>&1",
		 b, conf);
	st = run(cmd, out, sizeof(out));
	ck_assert_msg(st != 0 && st != 124 && strstr(out, "path=/nope): path: no such directory"), "exit %d: %s", st,
		      out);
	ck_assert_msg(!strstr(out, "NFS gateway serving"), "%s", out);
	unlink(conf);
	rmdir(g.dir);
	g.dir[0] = 0;
}
END_TEST

/* The gateway's client takes client_mds_addr as a list of the filesystem's
 * MDS daemons (issue 19.3): the first has nothing listening, the session
 * opens at the second, and NFS requests are served through it.  The
 * failover itself is the client library's (test_fuse_follow, test_mdsc). */
START_TEST(mds_address_list)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	char v[128];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);                                      /* nothing listens there now */
	snprintf(v, sizeof(v), "127.0.0.1:%u,127.0.0.1:%u", ntohs(a.sin_port), nfsgw_mds.port);
	nfsgw_opt("client_mds_addr", v);
	nfsgw_opt("nfs_exports", "id=1,path=/,rw,no_root_squash,insecure");
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_int_eq(v4_mkdir_call(fd, 1, "via-list"), 0);
	ck_assert(exists("via-list"));
	close(fd);
}
END_TEST

/* knfsd's defaults on the wire: read-only, root squashed, privileged ports only. */
START_TEST(exports_defaults_on_the_wire)
{
	struct lc_inode *in = NULL;
	struct lc_attr a;
	int fd;

	nfsgw_opt("nfs_exports", "id=1,path=/");
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);        /* port >= 1024: not secure */
	ck_assert_int_eq(v4_mkdir_call(fd, 1, "d-secure"), NFS4ERR_PERM_T);
	close(fd);
	nfsgw_stop(&g);
	nfsgw_config();
	nfsgw_opt("nfs_exports", "id=1,path=/,insecure");
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_int_eq(v4_mkdir_call(fd, 2, "d-ro"), NFS4ERR_ROFS_T);
	close(fd);
	nfsgw_stop(&g);
	nfsgw_config();
	nfsgw_opt("nfs_exports", "id=1,path=/,insecure,rw");
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_int_eq(lc_setattr(g.c, g.root, &(struct lc_attr){ .mode = 01777 }, LC_SET_MODE, &rootcr, NULL), 0);
	ck_assert_int_eq(v4_mkdir_call(fd, 3, "d-squashed"), 0);     /* uid 0 on the wire */
	ck_assert_int_eq(lc_lookup(g.c, g.root, "d-squashed", &rootcr, &a, &in), 0);
	ck_assert_uint_eq(a.uid, 65534);
	ck_assert_uint_eq(a.gid, 65534);
	lc_put(g.c, in);
	close(fd);
}
END_TEST

/* A reload changes what a connected client may do, from its next request;
 * a bad new value changes nothing. */
START_TEST(exports_reload)
{
	struct json_object *r, *v;
	char conf[512];
	FILE *f;
	int fd;

	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_int_eq(v4_mkdir_call(fd, 1, "r1"), 0);
	/* from the config file, as an operator edits it */
	snprintf(conf, sizeof(conf), "%s/gw.conf", g.dir);
	f = fopen(conf, "w");
	fprintf(f, "[nfs]\nnfs_exports = id=1,path=/,ro,no_root_squash,insecure\n");
	fclose(f);
	{
		char err[256];

		ck_assert_int_eq(cfg_load_file(conf, err, sizeof(err)), 0);   /* what -c does at start */
	}
	r = nfsgw_cmd(&g, "exports reload", NULL, NULL);
	ck_assert_msg(json_object_object_get_ex(r, "changed", &v) && json_object_get_boolean(v), "%s",
		      json_object_to_json_string(r));
	json_object_put(r);
	ck_assert_int_eq(v4_mkdir_call(fd, 2, "r2"), NFS4ERR_ROFS_T);    /* same connection */
	/* a bad value: refused, the ro export stays */
	f = fopen(conf, "w");
	fprintf(f, "[nfs]\nnfs_exports = id=1,path=/,rw,ro\n");
	fclose(f);
	r = nfsgw_cmd(&g, "exports reload", NULL, NULL);
	ck_assert_msg(json_object_object_get_ex(r, "error", &v) &&
		      strstr(json_object_get_string(v), "conflicting 'rw' and 'ro'"), "%s", json_object_to_json_string(r));
	json_object_put(r);
	ck_assert_int_eq(v4_mkdir_call(fd, 3, "r3"), NFS4ERR_ROFS_T);
	/* `config set` then reload: rw again, but not for this address */
	r = nfsgw_cmd(&g, "config set", "var", "nfs_exports");
	json_object_put(r);
	{
		struct json_object *req = json_object_new_object(), *rep = NULL;

		json_object_object_add(req, "prefix", json_object_new_string("config set"));
		json_object_object_add(req, "var", json_object_new_string("nfs_exports"));
		json_object_object_add(req, "val", json_object_new_string("id=1,path=/,rw,no_root_squash,insecure,"
									   "clients=10.0.0.0/8"));
		ck_assert_int_eq(asok_request(g.asok_path, req, &rep, 10000), 0);
		ck_assert_msg(!json_object_object_get_ex(rep, "error", &v), "%s", json_object_to_json_string(rep));
		json_object_put(rep);
		json_object_put(req);
	}
	r = nfsgw_cmd(&g, "exports reload", NULL, NULL);
	json_object_put(r);
	ck_assert_int_eq(v4_mkdir_call(fd, 4, "r4"), NFS4ERR_ACCESS_T);
	/* the listing shows what is in force */
	r = nfsgw_cmd(&g, "exports", NULL, NULL);
	ck_assert(json_object_object_get_ex(r, "exports", &v));
	v = json_object_array_get_idx(v, 0);
	ck_assert_int_eq(nfsgw_json_int(v, "id"), 1);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(v, "path")), "/");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(v, "pseudo")), "/");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(json_object_object_get(v, "clients"), 0)),
			 "10.0.0.0/8");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(v, "options")),
			 "rw,no_root_squash,no_all_squash,insecure,anonuid=65534,anongid=65534,sec=sys");
	ck_assert_int_eq(nfsgw_json_int(r, "generation"), 3);
	json_object_put(r);
	ck_assert(exists("r1"));
	ck_assert(!exists("r2") && !exists("r3") && !exists("r4"));
	close(fd);
}
END_TEST

/* `nfs clients` shows where each client is; `nfs client expire` drops one. */
START_TEST(clients_addr_and_expire)
{
	struct json_object *r, *a, *c;
	struct xdr_enc e;
	char id[32];
	uint16_t sport = 0;
	int fd;

	nfsgw_start(&g);
	fd = nfsw_connect("127.0.0.7", &sport, g.port);
	ck_assert_int_ge(fd, 0);
	/* SETCLIENTID: a 4.0 client record */
	v40_begin(&e, 77, 1);
	xdr_put_u32(&e, 35);                 /* OP_SETCLIENTID */
	xdr_put_u64(&e, 0x1234);             /* verifier */
	xdr_put_string(&e, "expire-me");     /* id */
	xdr_put_u32(&e, 0x40000000);         /* cb_program */
	xdr_put_string(&e, "tcp");
	xdr_put_string(&e, "127.0.0.7.3.4");
	xdr_put_u32(&e, 1);                  /* callback_ident */
	ck_assert_int_eq(v4_call(fd, &e), 0);
	r = nfsgw_cmd(&g, "nfs clients", NULL, NULL);
	a = json_object_object_get(r, "clients");
	ck_assert_int_eq((int)json_object_array_length(a), 1);
	c = json_object_array_get_idx(a, 0);
	{
		char want[64];

		snprintf(want, sizeof(want), "127.0.0.7:%u", sport);
		ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "addr")), want);
	}
	snprintf(id, sizeof(id), "%lld", (long long)nfsgw_json_int(c, "clientid"));
	json_object_put(r);
	r = nfsgw_cmd(&g, "nfs client expire", "id", id);
	ck_assert_msg(json_object_object_get_ex(r, "expired", &a), "%s", json_object_to_json_string(r));
	json_object_put(r);
	r = nfsgw_cmd(&g, "nfs clients", NULL, NULL);
	ck_assert_int_eq((int)json_object_array_length(json_object_object_get(r, "clients")), 0);
	json_object_put(r);
	r = nfsgw_cmd(&g, "nfs client expire", "id", id);
	ck_assert(json_object_object_get_ex(r, "error", &a));
	json_object_put(r);
	close(fd);
}
END_TEST

/* ---- NFSv3 and MOUNT ------------------------------------------------------------ */

#define MOUNT_PROG 100005
enum { M_MNT = 1, M_DUMP = 2, M_UMNT = 3, M_UMNTALL = 4, M_EXPORT = 5 };
enum { P3_GETATTR = 1, P3_SETATTR, P3_LOOKUP, P3_ACCESS, P3_READLINK, P3_READ, P3_WRITE, P3_CREATE, P3_MKDIR,
       P3_SYMLINK, P3_MKNOD, P3_REMOVE, P3_RMDIR, P3_RENAME, P3_LINK, P3_READDIR, P3_READDIRPLUS, P3_FSSTAT,
       P3_FSINFO, P3_PATHCONF, P3_COMMIT };

struct fh3 {
	uint32_t len;
	uint8_t d[64];
};

/* A call: header, then the caller appends its arguments to *e. */
static void c3_begin(struct xdr_enc *e, uint32_t xid, uint32_t prog, uint32_t proc)
{
	xdr_enc_init(e, 2 << 20);
	trpc_call_header(e, xid, prog, 3, proc);
}

struct r3 {
	uint8_t *buf;
	struct trpc_reply r;
	uint32_t status;                 /* the procedure's first word */
};

/* Send @e on @fd, read the reply into @r (accepted SUCCESS asserted). */
static void c3_call(int fd, struct xdr_enc *e, struct r3 *r)
{
	size_t len;

	ck_assert_int_eq(e->err, 0);
	ck_assert_int_eq(trpc_send_record(fd, e->buf, e->len, 0), 0);
	xdr_enc_free(e);
	r->buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(r->buf);
	ck_assert_int_eq(trpc_parse_reply(r->buf, len, &r->r), 0);
	ck_assert_uint_eq(r->r.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(r->r.stat, RPC_SUCCESS);
	r->status = UINT32_MAX;
	xdr_get_u32(&r->r.res, &r->status);
}

static void skip_post_op_attr(struct xdr_dec *d, uint64_t *size, uint32_t *mode)
{
	bool has;
	uint32_t v;
	uint64_t sz;

	ck_assert_int_eq(xdr_get_bool(d, &has), 0);
	if (!has)
		return;
	xdr_get_u32(d, &v);              /* type */
	xdr_get_u32(d, &v);
	if (mode)
		*mode = v;
	xdr_skip(d, 12);                 /* nlink uid gid */
	xdr_get_u64(d, &sz);
	if (size)
		*size = sz;
	xdr_skip(d, 84 - 28);
	ck_assert_int_eq(d->err, 0);
}

static void skip_wcc(struct xdr_dec *d)
{
	bool has;

	ck_assert_int_eq(xdr_get_bool(d, &has), 0);
	if (has)
		xdr_skip(d, 24);
	skip_post_op_attr(d, NULL, NULL);
}

static void put_name(struct xdr_enc *e, const struct fh3 *dir, const char *name)
{
	xdr_put_opaque(e, dir->d, dir->len);
	xdr_put_string(e, name);
}

static void put_sattr_mode(struct xdr_enc *e, int mode)
{
	xdr_put_bool(e, mode >= 0);
	if (mode >= 0)
		xdr_put_u32(e, (uint32_t)mode);
	xdr_put_bool(e, false);          /* uid */
	xdr_put_bool(e, false);          /* gid */
	xdr_put_bool(e, false);          /* size */
	xdr_put_u32(e, 0);               /* atime: don't change */
	xdr_put_u32(e, 0);               /* mtime */
}

/* MNT @path: the status; the handle into @fh. */
static uint32_t mnt3(int fd, const char *path, struct fh3 *fh)
{
	struct xdr_enc e;
	struct r3 r;
	uint32_t st, n, flav;

	c3_begin(&e, 0x3000, MOUNT_PROG, M_MNT);
	xdr_put_string(&e, path);
	c3_call(fd, &e, &r);
	st = r.status;
	if (!st) {
		ck_assert_int_eq(xdr_get_opaque_copy(&r.r.res, fh->d, &fh->len, 64), 0);
		ck_assert_int_eq(xdr_get_u32(&r.r.res, &n), 0);
		ck_assert_uint_eq(n, 1);
		ck_assert_int_eq(xdr_get_u32(&r.r.res, &flav), 0);
		ck_assert_uint_eq(flav, RPC_AUTH_SYS);
	}
	free(r.buf);
	return st;
}

/* LOOKUP @name in @dir: the status, the handle into @out. */
static uint32_t lookup3(int fd, const struct fh3 *dir, const char *name, struct fh3 *out)
{
	struct xdr_enc e;
	struct r3 r;
	uint32_t st;

	c3_begin(&e, 0x3001, 100003, P3_LOOKUP);
	put_name(&e, dir, name);
	c3_call(fd, &e, &r);
	st = r.status;
	if (!st && out)
		ck_assert_int_eq(xdr_get_opaque_copy(&r.r.res, out->d, &out->len, 64), 0);
	free(r.buf);
	return st;
}

/* CREATE (UNCHECKED, mode 0644) @name in @dir: the status, its handle into @out. */
static uint32_t create3(int fd, uint32_t xid, const struct fh3 *dir, const char *name, struct fh3 *out)
{
	struct xdr_enc e;
	struct r3 r;
	bool has;
	uint32_t st;

	c3_begin(&e, xid, 100003, P3_CREATE);
	put_name(&e, dir, name);
	xdr_put_u32(&e, 0);              /* UNCHECKED */
	put_sattr_mode(&e, 0644);
	c3_call(fd, &e, &r);
	st = r.status;
	if (!st && out) {
		ck_assert_int_eq(xdr_get_bool(&r.r.res, &has), 0);
		ck_assert(has);
		ck_assert_int_eq(xdr_get_opaque_copy(&r.r.res, out->d, &out->len, 64), 0);
	}
	free(r.buf);
	return st;
}

/*
 * A WRITE removes what a write by its caller removes on a local filesystem
 * (file_remove_privs(), as knfsd's writes with the caller's credentials):
 * setuid for a caller other than root, security.capability whoever it is.
 * The v3 handle cache opens files as root, so the library's own kill (by
 * the handle's credentials) kept a setuid bit for every writer, and no
 * kernel removes a capability before the gateway's write.  A chown takes
 * the capability too (in the MDS, for every frontend).
 */
static void v3_write_as(int fd, uint32_t xid, const struct fh3 *f, uint32_t uid)
{
	struct xdr_enc e;
	struct r3 r;

	xdr_enc_init(&e, 2 << 20);
	trpc_call_header_as(&e, xid, 100003, 3, P3_WRITE, uid, uid);
	xdr_put_opaque(&e, f->d, f->len);
	xdr_put_u64(&e, 0);
	xdr_put_u32(&e, 5);
	xdr_put_u32(&e, 2);              /* FILE_SYNC */
	xdr_put_opaque(&e, "hello", 5);
	c3_call(fd, &e, &r);
	ck_assert_msg(r.status == 0, "WRITE as uid %u: status %u", uid, r.status);
	free(r.buf);
}

START_TEST(v3_write_kills_privs)
{
	/* vfs_cap_data revision 2: effective, CAP_NET_BIND_SERVICE permitted */
	static const uint8_t vcap[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x04 };
	struct lc_attr set = { .mode = 04777 }, a;
	struct lc_inode *in = NULL;
	struct fh3 root, f;
	int fd;

	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_uint_eq(mnt3(fd, "/", &root), 0);
	ck_assert_uint_eq(create3(fd, 30, &root, "killpriv", &f), 0);
	ck_assert_int_eq(lc_lookup(g.c, g.root, "killpriv", &rootcr, NULL, &in), 0);
	for (int round = 0; round < 2; round++) {
		uint32_t uid = round ? 0 : 1000;

		ck_assert_int_eq(lc_setattr(g.c, in, &set, LC_SET_MODE, &rootcr, NULL), 0);
		ck_assert_int_eq(lc_setxattr(g.c, in, "security.capability", vcap, sizeof(vcap), 0, &rootcr), 0);
		ck_assert_int_eq(lc_getxattr(g.c, in, "security.capability", NULL, 0, &rootcr), (ssize_t)sizeof(vcap));
		v3_write_as(fd, 31 + (uint32_t)round, &f, uid);
		ck_assert_int_eq(lc_getattr(g.c, in, &rootcr, true, &a), 0);
		if (uid)
			ck_assert_msg((a.mode & 07777) == 0777, "mode %o after uid %u's WRITE, want 0777", a.mode & 07777,
				      uid);
		else
			ck_assert_msg((a.mode & 07777) == 04777, "mode %o after root's WRITE, want 04777",
				      a.mode & 07777);
		ck_assert_msg(lc_getxattr(g.c, in, "security.capability", NULL, 0, &rootcr) == -ENODATA,
			      "security.capability kept after uid %u's WRITE", uid);
	}
	/* and a chown, root's too (chown_common's ATTR_KILL_PRIV) */
	ck_assert_int_eq(lc_setxattr(g.c, in, "security.capability", vcap, sizeof(vcap), 0, &rootcr), 0);
	{
		struct xdr_enc e;
		struct r3 r;

		c3_begin(&e, 40, 100003, P3_SETATTR);
		xdr_put_opaque(&e, f.d, f.len);
		xdr_put_bool(&e, false);         /* mode */
		xdr_put_bool(&e, true);          /* uid */
		xdr_put_u32(&e, 1000);
		xdr_put_bool(&e, false);         /* gid */
		xdr_put_bool(&e, false);         /* size */
		xdr_put_u32(&e, 0);              /* atime: don't change */
		xdr_put_u32(&e, 0);              /* mtime */
		xdr_put_bool(&e, false);         /* no guard */
		c3_call(fd, &e, &r);
		ck_assert_uint_eq(r.status, 0);
		free(r.buf);
	}
	ck_assert_int_eq(lc_getattr(g.c, in, &rootcr, true, &a), 0);
	ck_assert_uint_eq(a.uid, 1000);
	ck_assert_msg(lc_getxattr(g.c, in, "security.capability", NULL, 0, &rootcr) == -ENODATA,
		      "security.capability kept after a chown");
	lc_put(g.c, in);
	close(fd);
}
END_TEST

/* MOUNT over a socket: EXPORT lists the exports, MNT of a path that is not
 * exported (or a subdirectory, or a denied client) is refused, MNT of an
 * export gives its root's handle, DUMP and UMNT keep the list. */
START_TEST(mount_protocol)
{
	struct xdr_enc e;
	struct r3 r;
	struct fh3 root, sub;
	char buf[1100];
	bool more, grp;
	int fd, n = 0;

	nfsgw_opt("nfs_exports", "id=1,path=/,rw,no_root_squash,insecure;id=5,path=/pub,pseudo=/public,insecure,"
		  "clients=127.0.0.0/8;id=6,path=/pub,pseudo=/other,insecure,clients=10.0.0.0/8");
	{
		/* /pub must exist before the gateway checks its exports */
		struct lclient *c;
		struct lc_inode *rt, *in = NULL;

		ck_assert_int_eq(lclient_create(&c), 0);
		ck_assert_int_eq(lclient_mount(c, NULL), 0);
		rt = lc_root(c);
		lc_mkdir(c, rt, "pub", 0755, &rootcr, NULL, &in);
		if (in)
			lc_put(c, in);
		lc_put(c, rt);
		lclient_unmount(c);
		lclient_destroy(c);
	}
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	c3_begin(&e, 1, MOUNT_PROG, M_EXPORT);
	c3_call(fd, &e, &r);
	/* exports: (more, dir, groups: (more, name)*)* */
	for (xdr_dec_init(&r.r.res, r.r.res.p - 4, xdr_dec_left(&r.r.res) + 4);
	     !xdr_get_bool(&r.r.res, &more) && more; n++) {
		ck_assert_int_eq(xdr_get_string(&r.r.res, buf, sizeof(buf), 255), 0);
		ck_assert_str_eq(buf, n == 0 ? "/" : "/pub");
		while (!xdr_get_bool(&r.r.res, &grp) && grp)
			ck_assert_int_eq(xdr_get_string(&r.r.res, buf, sizeof(buf), 255), 0);
	}
	ck_assert_int_eq(n, 3);
	free(r.buf);
	ck_assert_uint_eq(mnt3(fd, "/not-exported", &root), 2);      /* MNT3ERR_NOENT */
	ck_assert_uint_eq(mnt3(fd, "/pub/sub", &root), 2);           /* not a subdirectory */
	ck_assert_uint_eq(mnt3(fd, "/other", &root), 13);            /* MNT3ERR_ACCES: clients= */
	ck_assert_uint_eq(mnt3(fd, "/public", &sub), 0);             /* by pseudo path */
	ck_assert_uint_eq(mnt3(fd, "/", &root), 0);
	ck_assert_uint_eq(root.len, 32);
	/* the root handle is the NFSv4 one: v3 LOOKUP through it works */
	ck_assert_uint_eq(lookup3(fd, &root, "pub", NULL), 0);
	ck_assert_uint_eq(lookup3(fd, &sub, "..", NULL), 0);         /* stays at the export root */
	/* DUMP: this client's mounts */
	c3_begin(&e, 2, MOUNT_PROG, M_DUMP);
	c3_call(fd, &e, &r);
	xdr_dec_init(&r.r.res, r.r.res.p - 4, xdr_dec_left(&r.r.res) + 4);
	for (n = 0; !xdr_get_bool(&r.r.res, &more) && more; n++) {
		ck_assert_int_eq(xdr_get_string(&r.r.res, buf, sizeof(buf), 255), 0);
		ck_assert_str_eq(buf, "127.0.0.1");
		ck_assert_int_eq(xdr_get_string(&r.r.res, buf, sizeof(buf), 1024), 0);
	}
	ck_assert_int_eq(n, 2);
	free(r.buf);
	c3_begin(&e, 3, MOUNT_PROG, M_UMNTALL);
	c3_call(fd, &e, &r);
	free(r.buf);
	c3_begin(&e, 4, MOUNT_PROG, M_DUMP);
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);                              /* "no entry follows" */
	free(r.buf);
	/* garbage args: GARBAGE_ARGS, and the connection lives on */
	c3_begin(&e, 5, MOUNT_PROG, M_MNT);
	xdr_put_u32(&e, 5000);                                       /* a path longer than MNTPATHLEN */
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	xdr_enc_free(&e);
	{
		size_t len;
		uint8_t *b = trpc_recv_record(fd, &len, NULL);

		ck_assert_ptr_nonnull(b);
		ck_assert_int_eq(trpc_parse_reply(b, len, &r.r), 0);
		ck_assert_uint_eq(r.r.stat, RPC_GARBAGE_ARGS);
		free(b);
	}
	ck_assert_uint_eq(mnt3(fd, "/", &root), 0);
	close(fd);
}
END_TEST

/* The procedures a kernel client uses most, on the wire: CREATE, WRITE
 * (unstable), COMMIT (the verifier), READ (eof), GETATTR, READDIRPLUS with
 * "." and "..", RENAME, LINK, REMOVE, with the right statuses; a handle
 * made by v3 is good for v4 and the other way round. */
START_TEST(v3_procedures)
{
	struct xdr_enc e;
	struct r3 r;
	struct fh3 root, f;
	uint8_t verf[8], verf2[8], data[5000];
	uint32_t n, committed, mode = 0;
	uint64_t size = 0, fileid, cookie;
	bool eof, more;
	char name[300];
	int fd, entries = 0;

	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_uint_eq(mnt3(fd, "/", &root), 0);
	ck_assert_uint_eq(create3(fd, 10, &root, "v3file", &f), 0);
	memset(data, 'x', sizeof(data));
	c3_begin(&e, 11, 100003, P3_WRITE);
	xdr_put_opaque(&e, f.d, f.len);
	xdr_put_u64(&e, 100);
	xdr_put_u32(&e, sizeof(data));
	xdr_put_u32(&e, 0);              /* UNSTABLE */
	xdr_put_opaque(&e, data, sizeof(data));
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	skip_wcc(&r.r.res);
	xdr_get_u32(&r.r.res, &n);
	xdr_get_u32(&r.r.res, &committed);
	ck_assert_int_eq(xdr_get_fixed(&r.r.res, verf, 8), 0);
	ck_assert_uint_eq(n, sizeof(data));
	ck_assert_uint_eq(committed, 0);
	free(r.buf);
	c3_begin(&e, 12, 100003, P3_COMMIT);
	xdr_put_opaque(&e, f.d, f.len);
	xdr_put_u64(&e, 0);
	xdr_put_u32(&e, 0);
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	skip_wcc(&r.r.res);
	ck_assert_int_eq(xdr_get_fixed(&r.r.res, verf2, 8), 0);
	ck_assert_int_eq(memcmp(verf, verf2, 8), 0);
	free(r.buf);
	c3_begin(&e, 13, 100003, P3_READ);
	xdr_put_opaque(&e, f.d, f.len);
	xdr_put_u64(&e, 0);
	xdr_put_u32(&e, 65536);
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	skip_post_op_attr(&r.r.res, &size, NULL);
	ck_assert_uint_eq(size, 5100);
	xdr_get_u32(&r.r.res, &n);
	xdr_get_bool(&r.r.res, &eof);
	ck_assert_uint_eq(n, 5100);
	ck_assert(eof);
	{
		const uint8_t *p;
		uint32_t l;

		ck_assert_int_eq(xdr_get_opaque(&r.r.res, &p, &l, 1 << 20), 0);
		ck_assert_uint_eq(l, 5100);
		ck_assert_uint_eq(p[0], 0);          /* the hole before offset 100 */
		ck_assert_uint_eq(p[100], 'x');
		ck_assert_uint_eq(p[5099], 'x');
	}
	free(r.buf);
	/* GETATTR: a regular file of 5100 bytes */
	c3_begin(&e, 14, 100003, P3_GETATTR);
	xdr_put_opaque(&e, f.d, f.len);
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	xdr_get_u32(&r.r.res, &n);
	ck_assert_uint_eq(n, 1);                     /* NF3REG */
	xdr_get_u32(&r.r.res, &mode);
	ck_assert_uint_eq(mode, 0644);
	free(r.buf);
	/* READDIRPLUS of the root: ".", "..", and the file */
	c3_begin(&e, 15, 100003, P3_READDIRPLUS);
	xdr_put_opaque(&e, root.d, root.len);
	xdr_put_u64(&e, 0);
	xdr_put_fixed(&e, "\0\0\0\0\0\0\0\0", 8);
	xdr_put_u32(&e, 8192);
	xdr_put_u32(&e, 65536);
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	skip_post_op_attr(&r.r.res, NULL, NULL);
	xdr_skip(&r.r.res, 8);                       /* cookieverf */
	while (!xdr_get_bool(&r.r.res, &more) && more) {
		bool has;

		xdr_get_u64(&r.r.res, &fileid);
		ck_assert_int_eq(xdr_get_string(&r.r.res, name, sizeof(name), 255), 0);
		xdr_get_u64(&r.r.res, &cookie);
		if (entries == 0)
			ck_assert_str_eq(name, ".");
		if (entries == 1)
			ck_assert_str_eq(name, "..");
		skip_post_op_attr(&r.r.res, NULL, NULL);
		ck_assert_int_eq(xdr_get_bool(&r.r.res, &has), 0);
		ck_assert(has);
		xdr_get_opaque_copy(&r.r.res, name, &n, 64);
		entries++;
	}
	ck_assert_int_eq(xdr_get_bool(&r.r.res, &eof), 0);
	ck_assert(eof);
	ck_assert_int_ge(entries, 3);
	free(r.buf);
	/* RENAME, LINK, REMOVE */
	c3_begin(&e, 16, 100003, P3_RENAME);
	put_name(&e, &root, "v3file");
	put_name(&e, &root, "v3renamed");
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	free(r.buf);
	c3_begin(&e, 17, 100003, P3_LINK);
	xdr_put_opaque(&e, f.d, f.len);
	put_name(&e, &root, "v3link");
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	free(r.buf);
	ck_assert(exists("v3renamed") && exists("v3link") && !exists("v3file"));
	c3_begin(&e, 18, 100003, P3_REMOVE);
	put_name(&e, &root, "v3renamed");
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 0);
	free(r.buf);
	c3_begin(&e, 19, 100003, P3_REMOVE);
	put_name(&e, &root, "v3renamed");
	c3_call(fd, &e, &r);
	ck_assert_uint_eq(r.status, 2);              /* NFS3ERR_NOENT: a new xid runs */
	free(r.buf);
	/* errors: a bad handle, a name too long, a stale handle */
	{
		struct fh3 bad = root;

		bad.d[0] ^= 0xff;
		ck_assert_uint_eq(lookup3(fd, &bad, "x", NULL), 10001);    /* BADHANDLE */
		memset(name, 'n', 256);
		name[256] = 0;
		ck_assert_uint_eq(lookup3(fd, &root, name, NULL), 63);     /* NAMETOOLONG */
		bad = root;
		bad.d[23] ^= 0x55;                                          /* another ino */
		ck_assert_uint_eq(lookup3(fd, &bad, "x", NULL), 70);       /* STALE */
	}
	/* the v3 handle in an NFSv4 PUTFH: GETFH gives it back */
	{
		struct xdr_enc c;
		uint8_t *rep;
		size_t len;
		uint32_t xid;

		v40_begin(&c, 20, 2);
		xdr_put_u32(&c, 22);                 /* PUTFH */
		xdr_put_opaque(&c, f.d, f.len);
		xdr_put_u32(&c, 9);                  /* GETATTR */
		xdr_put_u32(&c, 0);                  /* empty bitmap */
		ck_assert_int_eq(trpc_send_record(fd, c.buf, c.len, 0), 0);
		xdr_enc_free(&c);
		len = 0;
		rep = trpc_recv_record(fd, &len, NULL);
		ck_assert_ptr_nonnull(rep);
		ck_assert_int_eq(v4_status(rep, len, &xid), 0);
		free(rep);
	}
	close(fd);
}
END_TEST

/* GETATTR3 of @fh: the status; type and nlink into @type, @nlink */
static uint32_t getattr3(int fd, const struct fh3 *fh, uint32_t *type, uint32_t *nlink)
{
	struct xdr_enc e;
	struct r3 r;
	uint32_t st, mode;

	c3_begin(&e, 0x3002, 100003, P3_GETATTR);
	xdr_put_opaque(&e, fh->d, fh->len);
	c3_call(fd, &e, &r);
	st = r.status;
	if (!st) {
		xdr_get_u32(&r.r.res, type);
		xdr_get_u32(&r.r.res, &mode);
		xdr_get_u32(&r.r.res, nlink);
		ck_assert_int_eq(r.r.res.err, 0);
	}
	free(r.buf);
	return st;
}

static uint32_t rename3(int fd, uint32_t xid, const struct fh3 *dir, const char *from, const char *to)
{
	struct xdr_enc e;
	struct r3 r;
	uint32_t st;

	c3_begin(&e, xid, 100003, P3_RENAME);
	put_name(&e, dir, from);
	put_name(&e, dir, to);
	c3_call(fd, &e, &r);
	st = r.status;
	free(r.buf);
	return st;
}

/*
 * Issue 25.1 through the gateway: a v3 handle to a file renamed over while
 * it is open here (a local process, an NFSv4 client) stays good, with
 * nlink 0, until the last close (then STALE, as knfsd answers); a handle
 * to a directory renamed over while a process here holds it answers
 * nlink 0 too (as fstat of the open directory does through the mount).
 */
START_TEST(v3_renamed_over_open)
{
	struct fh3 root, a, b, da, db;
	struct lc_inode *in = NULL;
	struct lc_fh *fh = NULL;
	struct lc_attr at;
	uint32_t type = 0, nlink = 0, st;
	int fd;

	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_uint_eq(mnt3(fd, "/", &root), 0);
	ck_assert_uint_eq(create3(fd, 30, &root, "ro_a", &a), 0);
	ck_assert_uint_eq(create3(fd, 31, &root, "ro_b", &b), 0);
	ck_assert_int_eq(lc_lookup(g.c, g.root, "ro_b", &rootcr, &at, &in), 0);
	ck_assert_int_eq(lc_open(g.c, in, O_RDONLY, &rootcr, &fh), 0);
	ck_assert_uint_eq(rename3(fd, 32, &root, "ro_a", "ro_b"), 0);
	ck_assert_uint_eq(getattr3(fd, &b, &type, &nlink), 0);
	ck_assert_uint_eq(type, 1);      /* NF3REG */
	ck_assert_uint_eq(nlink, 0);
	ck_assert_uint_eq(getattr3(fd, &a, &type, &nlink), 0);
	ck_assert_uint_eq(nlink, 1);
	ck_assert_int_eq(lc_release(g.c, fh), 0);
	lc_put(g.c, in);
	/* closed: the replaced file is gone */
	for (int i = 0; i < 1000 && (st = getattr3(fd, &b, &type, &nlink)) == 0; i++)
		usleep(10000);
	ck_assert_uint_eq(st, 70);      /* NFS3ERR_STALE */

	/* directories */
	{
		struct xdr_enc e;
		struct r3 r;
		const char *names[] = { "ro_da", "ro_db" };
		struct fh3 *hs[] = { &da, &db };

		for (int i = 0; i < 2; i++) {
			bool has;

			c3_begin(&e, 33 + (uint32_t)i, 100003, P3_MKDIR);
			put_name(&e, &root, names[i]);
			put_sattr_mode(&e, 0755);
			c3_call(fd, &e, &r);
			ck_assert_uint_eq(r.status, 0);
			ck_assert_int_eq(xdr_get_bool(&r.r.res, &has), 0);
			ck_assert(has);
			ck_assert_int_eq(xdr_get_opaque_copy(&r.r.res, hs[i]->d, &hs[i]->len, 64), 0);
			free(r.buf);
		}
	}
	/* held here (a process of this host has it open through the mount) */
	ck_assert_int_eq(lc_lookup(g.c, g.root, "ro_db", &rootcr, &at, &in), 0);
	ck_assert_uint_eq(getattr3(fd, &db, &type, &nlink), 0);
	ck_assert_uint_eq(type, 2);      /* NF3DIR */
	ck_assert_uint_eq(rename3(fd, 35, &root, "ro_da", "ro_db"), 0);
	ck_assert_uint_eq(getattr3(fd, &db, &type, &nlink), 0);
	ck_assert_uint_eq(type, 2);
	ck_assert_uint_eq(nlink, 0);
	ck_assert_uint_eq(lookup3(fd, &db, "x", NULL), 2);   /* NOENT: nothing in it */
	lc_put(g.c, in);
	close(fd);
}
END_TEST

/* Issue 12.3: a non-idempotent v3 request retransmitted after a reconnect
 * is answered from the cache: a REMOVE whose connection died before its
 * reply was read, sent again on a new connection from the same port, gets
 * the original NFS3_OK, not NOENT. */
START_TEST(v3_retransmit_after_reconnect)
{
	struct xdr_enc e;
	struct r3 r;
	struct fh3 root;
	struct json_object *d;
	uint16_t sport = 0;
	int fd, hits;

	nfsgw_start(&g);
	mkdir_lc("gone-once");
	fd = nfsw_connect(NULL, &sport, g.port);
	ck_assert_uint_eq(mnt3(fd, "/", &root), 0);
	c3_begin(&e, 0x77, 100003, P3_RMDIR);
	put_name(&e, &root, "gone-once");
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	ck_assert(NFSW_WAIT(nfsw_peek_records(fd) == 1, 20));
	ck_assert(!exists("gone-once"));
	nfsw_reset(fd);                              /* the reply never read */
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	hits = (int)nfsgw_json_int(d, "hits");
	json_object_put(d);
	ck_assert(NFSW_WAIT((fd = nfsw_connect(NULL, &sport, g.port)) >= 0, 10));
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	xdr_enc_free(&e);
	{
		size_t len;

		r.buf = trpc_recv_record(fd, &len, NULL);
		ck_assert_ptr_nonnull(r.buf);
		ck_assert_int_eq(trpc_parse_reply(r.buf, len, &r.r), 0);
		ck_assert_uint_eq(r.r.xid, 0x77);
		ck_assert_int_eq(xdr_get_u32(&r.r.res, &r.status), 0);
		ck_assert_msg(r.status == 0, "the retransmitted RMDIR answered %u: it ran again", r.status);
		free(r.buf);
	}
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	ck_assert_int_eq(nfsgw_json_int(d, "hits"), hits + 1);
	json_object_put(d);
	close(fd);
}
END_TEST

/* ---- the subtree check (issue 20.2) ------------------------------------------ */

/* /ea (export 1) and /eb (export 2) with a file each, /ea/sub/deep, /top
 * beside them: made by a client of its own before the gateway starts. */
static void subtree_tree(void)
{
	static const char *dirs[] = { "ea", "eb", "ea/sub" };
	static const char *files[] = { "ea/fa", "ea/fc", "ea/fd", "ea/sub/deep", "eb/fb", "top" };
	struct lclient *c;
	struct lc_inode *rt, *d, *in;
	char path[64], *slash;
	int r;

	ck_assert_int_eq(lclient_create(&c), 0);
	ck_assert_int_eq(lclient_mount(c, NULL), 0);
	rt = lc_root(c);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) + sizeof(files) / sizeof(files[0]); i++) {
		bool isdir = i < sizeof(dirs) / sizeof(dirs[0]);
		const char *name;

		snprintf(path, sizeof(path), "%s", isdir ? dirs[i] : files[i - sizeof(dirs) / sizeof(dirs[0])]);
		d = rt;
		lc_get(d);
		name = path;
		while ((slash = strchr(name, '/'))) {
			*slash = 0;
			ck_assert_int_eq(lc_lookup(c, d, name, &rootcr, NULL, &in), 0);
			lc_put(c, d);
			d = in;
			name = slash + 1;
		}
		in = NULL;
		/* the case before may have made it (one MDS per case) */
		if (isdir)
			r = lc_mkdir(c, d, name, 0755, &rootcr, NULL, &in);
		else
			r = lc_mknod(c, d, name, S_IFREG | 0644, 0, &rootcr, NULL, &in);
		ck_assert_msg(r == 0 || r == -EEXIST, "%s: %d", name, r);
		if (in)
			lc_put(c, in);
		lc_put(c, d);
	}
	lc_put(c, rt);
	lclient_unmount(c);
	lclient_destroy(c);
	nfsgw_opt("nfs_exports", "id=1,path=/ea,rw,no_root_squash,insecure;id=2,path=/eb,rw,no_root_squash,insecure");
}

/* @h as if export @id had given it, inode @ino (0: keep)/@gen: a forgery. */
static struct fh3 forge(const struct fh3 *h, uint16_t id, uint64_t ino, uint64_t gen)
{
	struct fh3 f = *h;

	ck_assert_uint_eq(f.len, 32);
	f.d[4] = (uint8_t)(id >> 8);
	f.d[5] = (uint8_t)id;
	for (int i = 0; i < 8; i++) {
		f.d[8 + i] = (uint8_t)((uint64_t)id >> (56 - 8 * i));
		if (ino) {
			f.d[16 + i] = (uint8_t)(ino >> (56 - 8 * i));
			f.d[24 + i] = (uint8_t)(gen >> (56 - 8 * i));
		}
	}
	return f;
}

static uint32_t read3(int fd, const struct fh3 *fh)
{
	struct xdr_enc e;
	struct r3 r;
	uint32_t st;

	c3_begin(&e, 0x3003, 100003, P3_READ);
	xdr_put_opaque(&e, fh->d, fh->len);
	xdr_put_u64(&e, 0);
	xdr_put_u32(&e, 4096);
	c3_call(fd, &e, &r);
	st = r.status;
	free(r.buf);
	return st;
}

/* The inode of @path (from the root) as the gateway's client sees it. */
static void ino_of(const char *path, uint64_t *ino, uint64_t *gen)
{
	struct lc_inode *d = g.root, *in = NULL;
	struct lc_attr a;
	char p[64], *save = NULL;

	lc_get(d);
	snprintf(p, sizeof(p), "%s", path);
	ck_assert_int_eq(lc_getattr(g.c, d, &rootcr, false, &a), 0);
	for (char *c = strtok_r(p, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		ck_assert_int_eq(lc_lookup(g.c, d, c, &rootcr, &a, &in), 0);
		lc_put(g.c, d);
		d = in;
	}
	lc_put(g.c, d);
	*ino = a.ino;
	*gen = a.generation;
}

static struct lc_inode *dir_lc(const char *name)
{
	struct lc_inode *in = NULL;

	ck_assert_int_eq(lc_lookup(g.c, g.root, name, &rootcr, NULL, &in), 0);
	return in;
}

/*
 * Another client of the MDS in a process of its own (tests/test_child.h:
 * this binary exec'd again; a forked copy of the gateway's process must
 * not mount): renames @sdir/@name to @ddir/@newname ("" is the root) and
 * exits 0, or the step that failed.
 */
static int child_main(int argc, char **argv)
{
	struct lclient *c;
	struct lc_inode *rt, *sd = NULL, *dd = NULL;

	if (argc != 7 || strcmp(argv[0], "renamer"))
		return 2;
	char v[3][512], err[256];
	const char *opts[][2] = { { "store_backend", "local" },  { "store_local_path", v[0] },
				  { "client_mds_addr", v[1] },   { "client_keyring", v[2] },
				  { "client_mount_timeout", "10" } };

	/* nfsgw_config's values, without check's asserts (no test runs here) */
	snprintf(v[0], sizeof(v[0]), "%s/store", argv[1]);
	snprintf(v[1], sizeof(v[1]), "127.0.0.1:%s", argv[2]);
	snprintf(v[2], sizeof(v[2]), "%s/client.keyring", argv[1]);
	log_init("test_nfs_gw-renamer");
	cfg_init("client");
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (cfg_set(cfg_lookup(opts[i][0]), opts[i][1], false, err, sizeof(err))) {
			fprintf(stderr, "renamer: %s: %s\n", opts[i][0], err);
			return 2;
		}
	if (lclient_create(&c) || lclient_mount(c, NULL))
		return 3;
	rt = lc_root(c);
	if ((*argv[3] ? lc_lookup(c, rt, argv[3], &rootcr, NULL, &sd) : (lc_get(rt), sd = rt, 0)) ||
	    (*argv[5] ? lc_lookup(c, rt, argv[5], &rootcr, NULL, &dd) : (lc_get(rt), dd = rt, 0)))
		return 4;
	if (lc_rename(c, sd, argv[4], dd, argv[6], 0, &rootcr))
		return 5;
	lc_put(c, sd);
	lc_put(c, dd);
	lc_put(c, rt);
	lclient_unmount(c);
	lclient_destroy(c);
	return 0;
}

/* Rename @sdir/@name to @ddir/@newname through another client; wait for it. */
static void other_rename(const char *sdir, const char *name, const char *ddir, const char *newname)
{
	char port[16];
	pid_t pid;
	int st = -1;

	snprintf(port, sizeof(port), "%u", nfsgw_mds.port);
	pid = test_child_spawn((const char *const[]){ "renamer", nfsgw_mds.dir, port, sdir, name, ddir, newname,
						      NULL });
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other client failed (status %#x)", st);
}

/*
 * A client of export 1 (/ea) forges handles: export 1's id with an inode of
 * export 2's tree, with the filesystem's root, with a file beside the
 * exports: GETATTR, READ and LOOKUP answer NFS3ERR_STALE (before the
 * subtree check they answered NFS3_OK: any inode of the filesystem).  Its
 * own handles keep working, ".." of its root stays there, and a file
 * renamed out of /ea - by the gateway's own client (as the FUSE mount of
 * the same process would) and by another client of the MDS - is STALE on
 * the next request after the rename.
 */
START_TEST(v3_handles_stay_in_their_export)
{
	struct fh3 ra, rb, fa, fb, sub, deep, fc, fd_, up, forged;
	uint64_t ino, gen;
	uint32_t type = 0, nlink = 0;
	int fd;

	subtree_tree();
	/* only what the gateway's client hears of may end a cached verdict here */
	nfsgw_opt("nfs_subtree_check_ttl", "3600");
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_uint_eq(mnt3(fd, "/ea", &ra), 0);
	ck_assert_uint_eq(mnt3(fd, "/eb", &rb), 0);
	ck_assert_uint_eq(lookup3(fd, &ra, "fa", &fa), 0);
	ck_assert_uint_eq(lookup3(fd, &ra, "sub", &sub), 0);
	ck_assert_uint_eq(lookup3(fd, &sub, "deep", &deep), 0);
	ck_assert_uint_eq(lookup3(fd, &rb, "fb", &fb), 0);
	ck_assert_uint_eq(getattr3(fd, &deep, &type, &nlink), 0);
	ck_assert_uint_eq(read3(fd, &fa), 0);

	/* export 2's file and root under export 1's id */
	forged = forge(&fb, 1, 0, 0);
	ck_assert_uint_eq(getattr3(fd, &forged, &type, &nlink), 70);
	ck_assert_uint_eq(read3(fd, &forged), 70);
	forged = forge(&rb, 1, 0, 0);
	ck_assert_uint_eq(lookup3(fd, &forged, "fb", NULL), 70);
	ck_assert_uint_eq(getattr3(fd, &forged, &type, &nlink), 70);
	/* the filesystem's root, and a file beside the exports */
	ino_of("/", &ino, &gen);
	forged = forge(&ra, 1, ino, gen);
	ck_assert_uint_eq(getattr3(fd, &forged, &type, &nlink), 70);
	ck_assert_uint_eq(lookup3(fd, &forged, "eb", NULL), 70);
	ino_of("top", &ino, &gen);
	forged = forge(&ra, 1, ino, gen);
	ck_assert_uint_eq(getattr3(fd, &forged, &type, &nlink), 70);
	ck_assert_uint_eq(read3(fd, &forged), 70);
	/* asked again (a cached verdict): still STALE; the real handles still work */
	ck_assert_uint_eq(getattr3(fd, &forged, &type, &nlink), 70);
	ck_assert_uint_eq(getattr3(fd, &fb, &type, &nlink), 0);
	ck_assert_uint_eq(getattr3(fd, &fa, &type, &nlink), 0);
	/* ".." of the export's root is the root */
	ck_assert_uint_eq(lookup3(fd, &ra, "..", &up), 0);
	ck_assert_uint_eq(up.len, ra.len);
	ck_assert(!memcmp(up.d, ra.d, ra.len));

	/* hard links: the MDS names no parent for them; a name in the export is enough */
	{
		struct lc_inode *ea = dir_lc("ea"), *eb = dir_lc("eb"), *f = NULL, *t = NULL;
		struct fh3 hl;

		ck_assert_int_eq(lc_lookup(g.c, eb, "fb", &rootcr, NULL, &f), 0);
		ck_assert_int_eq(lc_link(g.c, f, ea, "hl", &rootcr, NULL), 0);
		ck_assert_uint_eq(lookup3(fd, &ra, "hl", &hl), 0);
		ck_assert_uint_eq(getattr3(fd, &hl, &type, &nlink), 0);
		ck_assert_uint_eq(nlink, 2);
		/* a rename elsewhere voids every verdict: proved again through ea/hl */
		ck_assert_int_eq(lc_rename(g.c, g.root, "top", g.root, "top2", 0, &rootcr), 0);
		ck_assert_uint_eq(getattr3(fd, &hl, &type, &nlink), 0);
		ck_assert_uint_eq(read3(fd, &hl), 0);
		/* export 2's own handle of it, found by its name there */
		ck_assert_uint_eq(getattr3(fd, &fb, &type, &nlink), 0);
		/* a hard-linked file with no name in export 1: STALE */
		ck_assert_int_eq(lc_lookup(g.c, g.root, "top2", &rootcr, NULL, &t), 0);
		ck_assert_int_eq(lc_link(g.c, t, g.root, "top-link", &rootcr, NULL), 0);
		ino_of("top2", &ino, &gen);
		forged = forge(&ra, 1, ino, gen);
		ck_assert_uint_eq(getattr3(fd, &forged, &type, &nlink), 70);
		/* its name in export 1 removed: STALE there, still good in export 2 */
		ck_assert_int_eq(lc_unlink(g.c, ea, "hl", &rootcr), 0);
		ck_assert_uint_eq(getattr3(fd, &hl, &type, &nlink), 70);
		ck_assert_uint_eq(getattr3(fd, &fb, &type, &nlink), 0);
		lc_put(g.c, t);
		lc_put(g.c, f);
		lc_put(g.c, ea);
		lc_put(g.c, eb);
	}

	/* renamed out through the gateway's own client (the FUSE mount's) */
	{
		struct lc_inode *ea = dir_lc("ea"), *eb = dir_lc("eb");

		ck_assert_uint_eq(getattr3(fd, &fa, &type, &nlink), 0);
		ck_assert_int_eq(lc_rename(g.c, ea, "fa", eb, "fa-moved", 0, &rootcr), 0);
		ck_assert_uint_eq(getattr3(fd, &fa, &type, &nlink), 70);
		ck_assert_uint_eq(read3(fd, &fa), 70);
		/* and back in: good again */
		ck_assert_int_eq(lc_rename(g.c, eb, "fa-moved", ea, "fa", 0, &rootcr), 0);
		ck_assert_uint_eq(getattr3(fd, &fa, &type, &nlink), 0);
		/* a directory moved out takes what is below it along */
		ck_assert_uint_eq(getattr3(fd, &deep, &type, &nlink), 0);
		ck_assert_int_eq(lc_rename(g.c, ea, "sub", g.root, "sub-moved", 0, &rootcr), 0);
		ck_assert_uint_eq(getattr3(fd, &deep, &type, &nlink), 70);
		ck_assert_uint_eq(getattr3(fd, &sub, &type, &nlink), 70);
		lc_put(g.c, ea);
		lc_put(g.c, eb);
	}
	/* renamed out by another client of the MDS */
	ck_assert_uint_eq(lookup3(fd, &ra, "fc", &fc), 0);
	ck_assert_uint_eq(lookup3(fd, &ra, "fd", &fd_), 0);
	ck_assert_uint_eq(getattr3(fd, &fc, &type, &nlink), 0);
	ck_assert_uint_eq(read3(fd, &fd_), 0);
	other_rename("ea", "fc", "eb", "fc-moved");
	other_rename("ea", "fd", "", "fd-moved");
	ck_assert_uint_eq(getattr3(fd, &fc, &type, &nlink), 70);
	ck_assert_uint_eq(read3(fd, &fd_), 70);
	close(fd);
}
END_TEST

/* NFSv4.0 COMPOUND: PUTFH @fh, then @op (GETATTR type, or LOOKUP @name); the
 * compound's status. */
enum { V4_GETATTR = 9, V4_GETFH = 10, V4_LOOKUP = 15, V4_LOOKUPP = 16, V4_PUTFH = 22 };

static int64_t v4_putfh_then(int fd, const struct fh3 *fh, uint32_t op, const char *name)
{
	struct xdr_enc e;
	uint8_t *b;
	size_t len;
	uint32_t xid;
	int64_t st;

	v40_begin(&e, 0x4000, 2);
	xdr_put_u32(&e, V4_PUTFH);
	xdr_put_opaque(&e, fh->d, fh->len);
	xdr_put_u32(&e, op);
	if (op == V4_GETATTR) {
		xdr_put_u32(&e, 1);
		xdr_put_u32(&e, 1u << 1);        /* type */
	} else if (op == V4_LOOKUP) {
		xdr_put_string(&e, name);
	}
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	xdr_enc_free(&e);
	b = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(b);
	st = v4_status(b, len, &xid);
	free(b);
	return st;
}

/* PUTROOTFH, LOOKUP @path's components, LOOKUPP @ups times, GETFH: the
 * compound's status, the handle into @out. */
static int64_t v4_walk(int fd, const char *path, int ups, struct fh3 *out)
{
	struct xdr_enc e;
	struct trpc_reply r;
	char p[64], *save = NULL, *comp[8];
	uint32_t st, v, n = 0;
	uint8_t *b;
	size_t len;

	snprintf(p, sizeof(p), "%s", path);
	for (char *c = strtok_r(p, "/", &save); c && n < 8; c = strtok_r(NULL, "/", &save))
		comp[n++] = c;
	v40_begin(&e, 0x4001, 2 + n + (uint32_t)ups);
	xdr_put_u32(&e, V4_PUTROOTFH);
	for (uint32_t i = 0; i < n; i++) {
		xdr_put_u32(&e, V4_LOOKUP);
		xdr_put_string(&e, comp[i]);
	}
	for (int i = 0; i < ups; i++)
		xdr_put_u32(&e, V4_LOOKUPP);
	xdr_put_u32(&e, V4_GETFH);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	xdr_enc_free(&e);
	b = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(trpc_parse_reply(b, len, &r), 0);
	ck_assert_int_eq(xdr_get_u32(&r.res, &st), 0);
	if (!st) {
		char tag[16];

		ck_assert_int_eq(xdr_get_string(&r.res, tag, sizeof(tag), 15), 0);
		ck_assert_int_eq(xdr_get_u32(&r.res, &v), 0);             /* results */
		for (uint32_t i = 0; i < 1 + n + (uint32_t)ups; i++) {
			xdr_get_u32(&r.res, &v);                           /* op */
			xdr_get_u32(&r.res, &v);                           /* its status */
		}
		xdr_get_u32(&r.res, &v);                                   /* GETFH */
		xdr_get_u32(&r.res, &v);
		ck_assert_int_eq(xdr_get_opaque_copy(&r.res, out->d, &out->len, 64), 0);
	}
	free(b);
	return st;
}

/*
 * The same over NFSv4: PUTFH of a forged handle (export 1's id, export 2's
 * file; the filesystem's root; a file beside the exports) and the
 * operation after it answer NFS4ERR_STALE; a file renamed out of the
 * export is STALE after the rename; LOOKUPP from an export's root goes to
 * the pseudo filesystem (never to the directory the export lies in), and
 * further up stays in it.
 */
START_TEST(v4_handles_stay_in_their_export)
{
	struct fh3 ra, fa, fb, up, forged;
	uint64_t ino, gen;
	int fd;

	subtree_tree();
	nfsgw_opt("nfs_subtree_check_ttl", "3600");
	nfsgw_start(&g);
	fd = nfsw_connect(NULL, NULL, g.port);
	ck_assert_int_eq(v4_walk(fd, "ea", 0, &ra), 0);
	ck_assert_int_eq(v4_walk(fd, "ea/fa", 0, &fa), 0);
	ck_assert_int_eq(v4_walk(fd, "eb/fb", 0, &fb), 0);
	ck_assert_int_eq(v4_putfh_then(fd, &fa, V4_GETATTR, NULL), 0);
	ck_assert_int_eq(v4_putfh_then(fd, &fb, V4_GETATTR, NULL), 0);

	forged = forge(&fb, 1, 0, 0);
	ck_assert_int_eq(v4_putfh_then(fd, &forged, V4_GETATTR, NULL), 70);     /* NFS4ERR_STALE */
	ino_of("/", &ino, &gen);
	forged = forge(&ra, 1, ino, gen);
	ck_assert_int_eq(v4_putfh_then(fd, &forged, V4_GETATTR, NULL), 70);
	ck_assert_int_eq(v4_putfh_then(fd, &forged, V4_LOOKUP, "eb"), 70);
	ino_of("top", &ino, &gen);
	forged = forge(&ra, 1, ino, gen);
	ck_assert_int_eq(v4_putfh_then(fd, &forged, V4_GETATTR, NULL), 70);

	/* LOOKUPP above the export's root: the pseudo root, whose parent is nothing */
	ck_assert_int_eq(v4_walk(fd, "ea", 1, &up), 0);
	ck_assert_uint_eq(up.d[3], 1);                                  /* NFS4_FH_PSEUDO */
	ck_assert_int_eq(v4_walk(fd, "ea", 2, &up), 2);                 /* NFS4ERR_NOENT */
	ck_assert_int_eq(v4_walk(fd, "ea/sub", 2, &up), 0);
	ck_assert_uint_eq(up.d[3], 1);
	ck_assert_int_eq(v4_walk(fd, "top", 0, &up), 2);                /* not in the pseudo fs */

	/* renamed out through the gateway's own client */
	{
		struct lc_inode *ea = dir_lc("ea"), *eb = dir_lc("eb");

		ck_assert_int_eq(lc_rename(g.c, ea, "fa", eb, "fa-moved", 0, &rootcr), 0);
		ck_assert_int_eq(v4_putfh_then(fd, &fa, V4_GETATTR, NULL), 70);
		lc_put(g.c, ea);
		lc_put(g.c, eb);
	}
	close(fd);
}
END_TEST

int main(int argc, char **argv)
{
	if (test_child_is(argc, argv))
		return child_main(argc - 2, argv + 2);
	Suite *s = suite_create("nfs_gw");
	TCase *tc = tcase_create("drc");
	SRunner *sr;
	int nf;

	tcase_add_unchecked_fixture(tc, mds_up, mds_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, drc_pipelined_cut_replay);
	tcase_add_test(tc, drc_population_bounded);
	suite_add_tcase(s, tc);
	tc = tcase_create("exports");
	tcase_add_unchecked_fixture(tc, mds_up, mds_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, exports_refused_at_start);
	tcase_add_test(tc, exports_refused_by_the_programs);
	tcase_add_test(tc, exports_defaults_on_the_wire);
	tcase_add_test(tc, exports_reload);
	tcase_add_test(tc, mds_address_list);
	tcase_add_test(tc, clients_addr_and_expire);
	suite_add_tcase(s, tc);
	tc = tcase_create("nfs3");
	tcase_add_unchecked_fixture(tc, mds_up, mds_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mount_protocol);
	tcase_add_test(tc, v3_procedures);
	tcase_add_test(tc, v3_write_kills_privs);
	tcase_add_test(tc, v3_retransmit_after_reconnect);
	tcase_add_test(tc, v3_renamed_over_open);
	suite_add_tcase(s, tc);
	tc = tcase_create("subtree");
	tcase_add_unchecked_fixture(tc, mds_up, mds_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, v3_handles_stay_in_their_export);
	suite_add_tcase(s, tc);
	tc = tcase_create("subtree4");       /* an MDS of its own: the tree is made again */
	tcase_add_unchecked_fixture(tc, mds_up, mds_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, v4_handles_stay_in_their_export);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
