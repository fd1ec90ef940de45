/*
 * test_nfs_gss.c - RPCSEC_GSS with Kerberos v5 against a real MIT KDC: the
 * suite makes a realm of its own (nfs_gss_kdc.sh: krb5.conf, kdc.conf,
 * principals, keytabs in a temp dir), runs krb5kdc on 127.0.0.1 on a free
 * port, and a gateway whose keytab holds nfs/localhost.  The client is the
 * test's own, over a socket, with libgssapi_krb5 as initiator: NULL/INIT,
 * then NFSv3 CREATE/WRITE/READ/GETATTR/REMOVE under krb5, krb5i and krb5p,
 * the files checked through the client library (another path); refusals:
 * AUTH_SYS and a weaker GSS service on a krb5p export, a ticket for another
 * service, a corrupted header MIC and integrity checksum, a replayed
 * sequence number, an unknown handle and a destroyed context, a context
 * whose ticket ended; the principal -> uid mapping (a user, a principal
 * with no local user, a machine principal under root_squash); and a
 * retransmission (new seq_num) answered from the duplicate reply cache.
 *
 * Skipped (exit 77) only when krb5kdc is not installed: install-deps.sh
 * installs it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>

#include "test_nfs_wire.h"

#define KDC_BIN "/usr/sbin/krb5kdc"
#define REALM "LOLIGO.TEST"
#define NFS_PROG 100003
#define MOUNT_PROG_T 100005

enum { P3_GETATTR = 1, P3_LOOKUP = 3, P3_READ = 6, P3_WRITE = 7, P3_CREATE = 8, P3_REMOVE = 12 };

struct mdsproc nfsgw_mds;
static char parent[256];
static char kdir[300];                   /* the realm's files */
static pid_t kdc_pid;
static struct nfsgw g;
static const struct lc_cred rootcr = { 0 };

/* ---- the realm ------------------------------------------------------------------ */

static uint16_t free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t p = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == 0)
		p = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return p;
}

static bool port_open(uint16_t port)
{
	int fd = trpc_connect(port);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void realm_up(void)
{
	char cmd[1024], v[400];
	uint16_t port = free_port();

	snprintf(kdir, sizeof(kdir), "%s/realm", parent);
	mkdir(kdir, 0700);
	snprintf(cmd, sizeof(cmd), "%s/nfs_gss_kdc.sh %s %u", SRCDIR, kdir, port);
	if (system(cmd) != 0) {
		fprintf(stderr, "test_nfs_gss: making the realm failed (see %s/setup.log)\n", kdir);
		return;
	}
	snprintf(v, sizeof(v), "%s/krb5.conf", kdir);
	setenv("KRB5_CONFIG", v, 1);
	snprintf(v, sizeof(v), "%s/kdc.conf", kdir);
	setenv("KRB5_KDC_PROFILE", v, 1);
	kdc_pid = fork();
	if (kdc_pid == 0) {
		execl(KDC_BIN, "krb5kdc", "-n", "-r", REALM, (char *)NULL);
		_exit(127);
	}
	if (!NFSW_WAIT(port_open(port), 20))
		fprintf(stderr, "test_nfs_gss: krb5kdc did not listen on %u (see %s/kdc.log)\n", port, kdir);
}

static void realm_down(void)
{
	if (kdc_pid > 0) {
		kill(kdc_pid, SIGTERM);
		waitpid(kdc_pid, NULL, 0);
		kdc_pid = 0;
	}
}

static void suite_up(void)
{
	if (mdsproc_parent_init(parent, sizeof(parent), "nfsgss") || mdsproc_init(&nfsgw_mds, parent) ||
	    mdsproc_mkfs(&nfsgw_mds) || mdsproc_start(&nfsgw_mds))
		fprintf(stderr, "test_nfs_gss: the MDS did not start (see %s)\n", nfsgw_mds.dir);
	realm_up();
}

static void suite_down(void)
{
	realm_down();
	mdsproc_cleanup(&nfsgw_mds);
	mdsproc_parent_remove(parent);
}

/* kinit @princ from @keytab into the ccache file @cc (lifetime @life, e.g. "1h") */
static void kinit(const char *keytab, const char *princ, const char *cc, const char *life)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "kinit -l %s -k -t %s/%s -c FILE:%s/%s %s@%s >>%s/kinit.log 2>&1", life, kdir,
		 keytab, kdir, cc, princ, REALM, kdir);
	ck_assert_msg(system(cmd) == 0, "%s failed (see %s/kinit.log)", cmd, kdir);
}

static void gw_up_opt(const char *exports, const char *k, const char *val);

static void gw_up(const char *exports)
{
	gw_up_opt(exports, NULL, NULL);
}

static void gw_up_opt(const char *exports, const char *k, const char *val)
{
	char v[400];

	ck_assert_msg(nfsgw_mds.port, "no MDS");
	ck_assert_msg(kdc_pid > 0, "no KDC");
	nfsgw_config();
	nfsgw_opt("nfs_exports", exports);
	snprintf(v, sizeof(v), "%s/nfs.keytab", kdir);
	nfsgw_opt("nfs_gss_keytab", v);
	nfsgw_opt("nfs_gss_principal", "nfs/localhost");
	if (getenv("GSS_DEBUG"))
		nfsgw_opt("debug_rpc", getenv("GSS_DEBUG"));
	if (k)
		nfsgw_opt(k, val);
	nfsgw_start(&g);
}

static void teardown(void)
{
	nfsgw_stop(&g);
}

/* ---- the client's RPCSEC_GSS ------------------------------------------------------ */

struct gcl {
	int fd;
	gss_ctx_id_t ctx;
	uint8_t handle[32];
	uint32_t hlen;
	uint32_t seq, window;
	uint32_t service;                /* 1 none, 2 integrity, 3 privacy */
	uint32_t xid;
	uint32_t vers;                   /* of the NFS program: 3 unless set (4) */
};

static gss_cred_id_t initiator(const char *cc)
{
	char path[400];
	gss_key_value_element_desc kv = { .key = "ccache", .value = path };
	gss_key_value_set_desc store = { 1, &kv };
	gss_OID_set_desc mechs = { 1, (gss_OID)gss_mech_krb5 };
	gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
	OM_uint32 major, minor;

	snprintf(path, sizeof(path), "FILE:%s/%s", kdir, cc);
	major = gss_acquire_cred_from(&minor, GSS_C_NO_NAME, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE, &store, &cred,
				      NULL, NULL);
	ck_assert_msg(major == GSS_S_COMPLETE, "no initiator credential in %s (%#x/%u)", path, major, minor);
	return cred;
}

static void put_gss_cred(struct xdr_enc *e, uint32_t proc, uint32_t seq, uint32_t svc, const uint8_t *h, uint32_t hl)
{
	xdr_put_u32(e, RPCSEC_GSS);
	xdr_put_u32(e, 5 * 4 + XDR_PAD(hl));
	xdr_put_u32(e, 1);
	xdr_put_u32(e, proc);
	xdr_put_u32(e, seq);
	xdr_put_u32(e, svc);
	xdr_put_opaque(e, h, hl);
}

static void cb_answer(int fd, const uint8_t *rec, size_t len);

/* One record out, one back (NULL: nothing within the socket timeout).  A
 * callback the gateway sends on the connection meanwhile (a CALL: the 4.1
 * back channel) is answered by cb_answer() and the wait goes on. */
static uint8_t *roundtrip(int fd, struct xdr_enc *e, size_t *len)
{
	uint8_t *rec;

	ck_assert_int_eq(e->err, 0);
	ck_assert_int_eq(trpc_send_record(fd, e->buf, e->len, 0), 0);
	xdr_enc_free(e);
	for (;;) {
		rec = trpc_recv_record(fd, len, NULL);
		if (!rec || *len < 8 || xdr_load_u32(rec + 4) != RPC_CALL)
			return rec;
		cb_answer(fd, rec, *len);
		free(rec);
	}
}

/*
 * INIT a context as the principal in ccache @cc for @target
 * ("nfs/localhost"): the gss major status the gateway answered.
 */
static uint32_t gcl_init(struct gcl *c, int fd, const char *cc, const char *target)
{
	char tn[256];
	gss_buffer_desc nb, out = GSS_C_EMPTY_BUFFER, in = GSS_C_EMPTY_BUFFER;
	gss_name_t name;
	gss_cred_id_t cred = initiator(cc);
	OM_uint32 major, minor, smajor = 0, sminor, vf, vl;
	struct xdr_enc e;
	struct xdr_dec d;
	const uint8_t *verf, *tok, *h;
	uint32_t toklen;
	uint8_t *rep;
	size_t len;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->ctx = GSS_C_NO_CONTEXT;
	c->service = RPC_GSS_SVC_NONE;
	c->xid = 0x6000;
	snprintf(tn, sizeof(tn), "%s@%s", target, REALM);
	nb.value = tn;
	nb.length = strlen(tn);
	ck_assert_int_eq(gss_import_name(&minor, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &name), GSS_S_COMPLETE);
	for (int round = 0; round < 4; round++) {
		major = gss_init_sec_context(&minor, cred, &c->ctx, name, (gss_OID)gss_mech_krb5,
					     GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG, 0,
					     GSS_C_NO_CHANNEL_BINDINGS, round ? &in : GSS_C_NO_BUFFER, NULL, &out, NULL,
					     NULL);
		ck_assert_msg(!GSS_ERROR(major), "gss_init_sec_context: %#x/%u", major, minor);
		if (round && major == GSS_S_COMPLETE && !out.length)
			break;
		xdr_enc_init(&e, 1 << 16);
		xdr_put_u32(&e, ++c->xid);
		xdr_put_u32(&e, RPC_CALL);
		xdr_put_u32(&e, RPC_VERSION);
		xdr_put_u32(&e, NFS_PROG);
		xdr_put_u32(&e, 3);
		xdr_put_u32(&e, 0);
		put_gss_cred(&e, round ? RPCSEC_GSS_CONTINUE_INIT : RPCSEC_GSS_INIT, 0, RPC_GSS_SVC_NONE, c->handle,
			     c->hlen);
		xdr_put_u32(&e, RPC_AUTH_NONE);
		xdr_put_u32(&e, 0);
		xdr_put_opaque(&e, out.value, (uint32_t)out.length);
		gss_release_buffer(&minor, &out);
		rep = roundtrip(fd, &e, &len);
		ck_assert_ptr_nonnull(rep);
		xdr_dec_init(&d, rep + 8, len - 8);
		{
			uint32_t rs, st;

			xdr_get_u32(&d, &rs);
			ck_assert_uint_eq(rs, RPC_MSG_ACCEPTED);
			xdr_get_u32(&d, &vf);
			xdr_get_opaque(&d, &verf, &vl, 400);
			xdr_get_u32(&d, &st);
			ck_assert_uint_eq(st, RPC_SUCCESS);
		}
		xdr_get_opaque(&d, &h, &c->hlen, 32);
		memcpy(c->handle, h, c->hlen);
		xdr_get_u32(&d, &smajor);
		xdr_get_u32(&d, &sminor);
		xdr_get_u32(&d, &c->window);
		xdr_get_opaque(&d, &tok, &toklen, 1 << 16);
		ck_assert_int_eq(d.err, 0);
		if (GSS_ERROR(smajor)) {
			free(rep);
			break;
		}
		if (smajor == GSS_S_COMPLETE) {
			uint8_t w[4];
			gss_buffer_desc wb = { 4, w }, vb = { vl, (void *)verf };
			OM_uint32 m2;

			ck_assert_uint_eq(vf, RPCSEC_GSS);
			if (toklen) {   /* the AP-REP: finish the mutual authentication first */
				in.value = (void *)tok;
				in.length = toklen;
				major = gss_init_sec_context(&minor, cred, &c->ctx, name, (gss_OID)gss_mech_krb5,
							     GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG, 0,
							     GSS_C_NO_CHANNEL_BINDINGS, &in, NULL, &out, NULL, NULL);
				ck_assert_msg(major == GSS_S_COMPLETE, "mutual auth: %#x/%u", major, minor);
				gss_release_buffer(&minor, &out);
			}
			xdr_store_u32(w, c->window);
			ck_assert_msg(gss_verify_mic(&m2, c->ctx, &wb, &vb, NULL) == GSS_S_COMPLETE,
				      "the INIT verifier is not the MIC of the window");
			free(rep);
			break;
		}
		in.value = malloc(toklen);
		memcpy(in.value, tok, toklen);
		in.length = toklen;
		free(rep);
	}
	gss_release_name(&minor, &name);
	gss_release_cred(&minor, &cred);
	return smajor;
}

static void gcl_free(struct gcl *c)
{
	OM_uint32 minor;

	if (c->ctx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&minor, &c->ctx, GSS_C_NO_BUFFER);
}

enum { CORRUPT_NONE = 0, CORRUPT_HDR_MIC, CORRUPT_BODY };

/*
 * A DATA call with @args (@alen bytes, XDR) and sequence number @seq,
 * under c->service; @corrupt flips a bit of the header MIC or of the
 * wrapped body.
 */
static void gcl_encode(struct gcl *c, struct xdr_enc *e, uint32_t xid, uint32_t prog, uint32_t proc,
		       uint32_t gproc, uint32_t seq, const uint8_t *args, size_t alen, int corrupt)
{
	gss_buffer_desc in, mic = GSS_C_EMPTY_BUFFER;
	OM_uint32 minor;
	uint8_t *body;
	int conf;

	xdr_enc_init(e, 4 << 20);
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_CALL);
	xdr_put_u32(e, RPC_VERSION);
	xdr_put_u32(e, prog);
	xdr_put_u32(e, c->vers ? c->vers : 3);
	xdr_put_u32(e, proc);
	put_gss_cred(e, gproc, seq, c->service, c->handle, c->hlen);
	in.value = e->buf;
	in.length = e->len;
	ck_assert_int_eq(gss_get_mic(&minor, c->ctx, 0, &in, &mic), GSS_S_COMPLETE);
	if (corrupt == CORRUPT_HDR_MIC)
		((uint8_t *)mic.value)[mic.length - 1] ^= 1;
	xdr_put_u32(e, RPCSEC_GSS);
	xdr_put_opaque(e, mic.value, (uint32_t)mic.length);
	gss_release_buffer(&minor, &mic);
	if (c->service == RPC_GSS_SVC_NONE || gproc != RPCSEC_GSS_DATA) {
		xdr_put_fixed(e, args, alen);
		return;
	}
	body = malloc(alen + 4);
	xdr_store_u32(body, seq);
	if (alen)
		memcpy(body + 4, args, alen);
	in.value = body;
	in.length = alen + 4;
	if (c->service == RPC_GSS_SVC_INTEGRITY) {
		ck_assert_int_eq(gss_get_mic(&minor, c->ctx, 0, &in, &mic), GSS_S_COMPLETE);
		if (corrupt == CORRUPT_BODY)
			body[alen + 3] ^= 1;
		xdr_put_opaque(e, body, (uint32_t)alen + 4);
		xdr_put_opaque(e, mic.value, (uint32_t)mic.length);
	} else {
		ck_assert_int_eq(gss_wrap(&minor, c->ctx, 1, 0, &in, &conf, &mic), GSS_S_COMPLETE);
		if (corrupt == CORRUPT_BODY)
			((uint8_t *)mic.value)[mic.length / 2] ^= 1;
		xdr_put_opaque(e, mic.value, (uint32_t)mic.length);
	}
	gss_release_buffer(&minor, &mic);
	free(body);
}

struct gres {
	uint8_t *rec;
	uint32_t xid, reply_stat, stat, auth_stat;
	uint8_t *plain;                  /* the unwrapped results (malloc'd) */
	struct xdr_dec res;
};

/* Decode a reply to a call with @seq: the verifier must be the MIC of
 * @seq, the results are unwrapped into r->res. */
static void gcl_decode(struct gcl *c, uint8_t *rec, size_t len, uint32_t seq, struct gres *r)
{
	struct xdr_dec d;
	uint32_t mt, vf, vl, bl, ml;
	const uint8_t *verf, *b, *m;
	uint8_t sb[4];
	gss_buffer_desc sbuf = { 4, sb }, vb, in, out = GSS_C_EMPTY_BUFFER;
	OM_uint32 minor;
	int conf;

	memset(r, 0, sizeof(*r));
	r->rec = rec;
	ck_assert_ptr_nonnull(rec);
	xdr_dec_init(&d, rec, len);
	xdr_get_u32(&d, &r->xid);
	xdr_get_u32(&d, &mt);
	xdr_get_u32(&d, &r->reply_stat);
	if (r->reply_stat == RPC_MSG_DENIED) {
		xdr_get_u32(&d, &r->stat);
		xdr_get_u32(&d, &r->auth_stat);
		ck_assert_int_eq(d.err, 0);
		return;
	}
	xdr_get_u32(&d, &vf);
	xdr_get_opaque(&d, &verf, &vl, 400);
	xdr_get_u32(&d, &r->stat);
	ck_assert_int_eq(d.err, 0);
	ck_assert_uint_eq(vf, RPCSEC_GSS);
	xdr_store_u32(sb, seq);
	vb.value = (void *)verf;
	vb.length = vl;
	ck_assert_msg(gss_verify_mic(&minor, c->ctx, &sbuf, &vb, NULL) == GSS_S_COMPLETE,
		      "reply verifier is not the MIC of seq %u", seq);
	if (r->stat != RPC_SUCCESS || c->service == RPC_GSS_SVC_NONE) {
		r->res = d;
		return;
	}
	if (c->service == RPC_GSS_SVC_INTEGRITY) {
		xdr_get_opaque(&d, &b, &bl, UINT32_MAX);
		xdr_get_opaque(&d, &m, &ml, 400);
		ck_assert_int_eq(d.err, 0);
		in.value = (void *)b;
		in.length = bl;
		vb.value = (void *)m;
		vb.length = ml;
		ck_assert_int_eq(gss_verify_mic(&minor, c->ctx, &in, &vb, NULL), GSS_S_COMPLETE);
		ck_assert_uint_eq(xdr_load_u32(b), seq);
		r->plain = malloc(bl);
		memcpy(r->plain, b, bl);
		xdr_dec_init(&r->res, r->plain + 4, bl - 4);
		return;
	}
	xdr_get_opaque(&d, &b, &bl, UINT32_MAX);
	ck_assert_int_eq(d.err, 0);
	in.value = (void *)b;
	in.length = bl;
	ck_assert_int_eq(gss_unwrap(&minor, c->ctx, &in, &out, &conf, NULL), GSS_S_COMPLETE);
	ck_assert(conf);
	ck_assert_uint_eq(xdr_load_u32(out.value), seq);
	r->plain = malloc(out.length);
	memcpy(r->plain, out.value, out.length);
	xdr_dec_init(&r->res, r->plain + 4, out.length - 4);
	gss_release_buffer(&minor, &out);
}

static void gres_free(struct gres *r)
{
	free(r->rec);
	free(r->plain);
}

/* An NFSv3 call with @a's arguments under the context: reply in @r. */
static void gcall(struct gcl *c, uint32_t proc, struct xdr_enc *a, struct gres *r)
{
	struct xdr_enc e;
	uint32_t seq = ++c->seq;
	size_t len = 0;
	uint8_t *rep;

	if (c->ctx == GSS_C_NO_CONTEXT) {   /* AUTH_SYS (root), for the comparison in throughput */
		struct trpc_reply tr;

		memset(r, 0, sizeof(*r));
		xdr_enc_init(&e, 4 << 20);
		trpc_call_header(&e, ++c->xid, NFS_PROG, c->vers ? c->vers : 3, proc);
		xdr_put_fixed(&e, a->buf, a->len);
		xdr_enc_free(a);
		r->rec = roundtrip(c->fd, &e, &len);
		ck_assert_int_eq(trpc_parse_reply(r->rec, len, &tr), 0);
		r->xid = tr.xid;
		r->reply_stat = tr.reply_stat;
		r->stat = tr.stat;
		r->res = tr.res;
		ck_assert_uint_eq(r->xid, c->xid);
		return;
	}
	gcl_encode(c, &e, ++c->xid, NFS_PROG, proc, RPCSEC_GSS_DATA, seq, a->buf, a->len, CORRUPT_NONE);
	xdr_enc_free(a);
	rep = roundtrip(c->fd, &e, &len);
	gcl_decode(c, rep, len, seq, r);
	ck_assert_uint_eq(r->xid, c->xid);
}

/* ---- NFSv3 over it --------------------------------------------------------------- */

struct fh3 {
	uint32_t len;
	uint8_t d[64];
};

static void skip_post_op_attr(struct xdr_dec *d, uint32_t *uid, uint64_t *size)
{
	bool has = false;
	uint32_t v;
	uint64_t s;

	xdr_get_bool(d, &has);
	if (!has)
		return;
	xdr_skip(d, 12);                 /* type mode nlink */
	xdr_get_u32(d, &v);
	if (uid)
		*uid = v;
	xdr_skip(d, 4);                  /* gid */
	xdr_get_u64(d, &s);
	if (size)
		*size = s;
	xdr_skip(d, 84 - 28);
}

/* MNT @path with AUTH_SYS (as mount.nfs does): its handle and the flavors listed. */
static void mnt(uint16_t port, const char *path, struct fh3 *fh, uint32_t *flav, uint32_t *nflav)
{
	struct xdr_enc e;
	struct trpc_reply r;
	uint8_t *rep;
	size_t len;
	uint32_t st;
	int fd = trpc_connect(port);

	ck_assert_int_ge(fd, 0);
	xdr_enc_init(&e, 4096);
	trpc_call_header(&e, 0x77, MOUNT_PROG_T, 3, 1);
	xdr_put_string(&e, path);
	rep = roundtrip(fd, &e, &len);
	ck_assert_int_eq(trpc_parse_reply(rep, len, &r), 0);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &st);
	ck_assert_uint_eq(st, 0);
	xdr_get_opaque_copy(&r.res, fh->d, &fh->len, 64);
	xdr_get_u32(&r.res, nflav);
	ck_assert_uint_le(*nflav, 4);
	for (uint32_t i = 0; i < *nflav; i++)
		xdr_get_u32(&r.res, &flav[i]);
	ck_assert_int_eq(r.res.err, 0);
	free(rep);
	close(fd);
}

static uint32_t g_lookup(struct gcl *c, const struct fh3 *dir, const char *name, struct fh3 *out)
{
	struct xdr_enc a;
	struct gres r;
	uint32_t st = 99;

	xdr_enc_init(&a, 4096);
	xdr_put_opaque(&a, dir->d, dir->len);
	xdr_put_string(&a, name);
	gcall(c, P3_LOOKUP, &a, &r);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &st);
	if (!st)
		xdr_get_opaque_copy(&r.res, out->d, &out->len, 64);
	gres_free(&r);
	return st;
}

/* CREATE (GUARDED, 0644): status; the handle and the owner's uid. */
static uint32_t g_create(struct gcl *c, const struct fh3 *dir, const char *name, struct fh3 *out, uint32_t *uid)
{
	struct xdr_enc a;
	struct gres r;
	uint32_t st = 99;
	bool has = false;

	xdr_enc_init(&a, 4096);
	xdr_put_opaque(&a, dir->d, dir->len);
	xdr_put_string(&a, name);
	xdr_put_u32(&a, 1);              /* GUARDED */
	xdr_put_bool(&a, true);
	xdr_put_u32(&a, 0644);
	for (int i = 0; i < 5; i++)      /* uid gid size atime mtime: not set */
		xdr_put_u32(&a, 0);
	gcall(c, P3_CREATE, &a, &r);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &st);
	if (!st) {
		xdr_get_bool(&r.res, &has);
		ck_assert(has);
		xdr_get_opaque_copy(&r.res, out->d, &out->len, 64);
		skip_post_op_attr(&r.res, uid, NULL);
		ck_assert_int_eq(r.res.err, 0);
	}
	gres_free(&r);
	return st;
}

static uint32_t g_write_at(struct gcl *c, const struct fh3 *fh, uint64_t off, const void *data, uint32_t n)
{
	struct xdr_enc a;
	struct gres r;
	uint32_t st = 99;

	xdr_enc_init(&a, 2 << 20);
	xdr_put_opaque(&a, fh->d, fh->len);
	xdr_put_u64(&a, off);
	xdr_put_u32(&a, n);
	xdr_put_u32(&a, off ? 0 : 2);    /* FILE_SYNC (the first), then UNSTABLE */
	xdr_put_opaque(&a, data, n);
	gcall(c, P3_WRITE, &a, &r);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &st);
	gres_free(&r);
	return st;
}

static uint32_t g_write(struct gcl *c, const struct fh3 *fh, const void *data, uint32_t n)
{
	return g_write_at(c, fh, 0, data, n);
}

/* READ @n bytes at 0 into @buf: the status; *got the count. */
static uint32_t g_read_at(struct gcl *c, const struct fh3 *fh, uint64_t off, void *buf, uint32_t n, uint32_t *got)
{
	struct xdr_enc a;
	struct gres r;
	uint32_t st = 99, cnt = 0, dl = 0;
	bool eof;

	xdr_enc_init(&a, 4096);
	xdr_put_opaque(&a, fh->d, fh->len);
	xdr_put_u64(&a, off);
	xdr_put_u32(&a, n);
	gcall(c, P3_READ, &a, &r);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &st);
	if (!st) {
		skip_post_op_attr(&r.res, NULL, NULL);
		xdr_get_u32(&r.res, &cnt);
		xdr_get_bool(&r.res, &eof);
		xdr_get_opaque_copy(&r.res, buf, &dl, n);
		ck_assert_int_eq(r.res.err, 0);
		*got = dl;
	}
	gres_free(&r);
	return st;
}

static uint32_t g_read(struct gcl *c, const struct fh3 *fh, void *buf, uint32_t n, uint32_t *got)
{
	return g_read_at(c, fh, 0, buf, n, got);
}

/* The file @dir/@name as the client library sees it: its owner and size. */
static void lc_stat(const char *dir, const char *name, uint32_t *uid, uint64_t *size)
{
	struct lc_inode *d = NULL, *f = NULL;
	struct lc_attr a;

	ck_assert_int_eq(lc_lookup(g.c, g.root, dir, &rootcr, &a, &d), 0);
	ck_assert_int_eq(lc_lookup(g.c, d, name, &rootcr, &a, &f), 0);
	ck_assert_int_eq(lc_getattr(g.c, f, &rootcr, true, &a), 0);
	*uid = a.uid;
	*size = a.size;
	lc_put(g.c, f);
	lc_put(g.c, d);
}

static void mkdir_lc(const char *name)
{
	struct lc_inode *in = NULL;
	struct lc_attr a = { .mode = 0777 };

	ck_assert_int_eq(lc_mkdir(g.c, g.root, name, 0777, &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_setattr(g.c, in, &a, LC_SET_MODE, &rootcr, NULL), 0);
	lc_put(g.c, in);
}

static uid_t daemon_uid(void)
{
	struct passwd *pw = getpwnam("daemon");

	ck_assert_ptr_nonnull(pw);
	return pw->pw_uid;
}

/* ---- the tests ------------------------------------------------------------------- */

/*
 * krb5, krb5i and krb5p: a context as daemon@REALM, then CREATE, WRITE and
 * READ in a directory of an export that takes all three; the files are
 * there through the client library, owned by daemon's uid (the mapping).
 * MOUNT lists the export's flavors in its order.
 */
START_TEST(krb5_krb5i_krb5p)
{
	static const uint32_t svcs[] = { RPC_GSS_SVC_NONE, RPC_GSS_SVC_INTEGRITY, RPC_GSS_SVC_PRIVACY };
	static const char *names[] = { "f-krb5", "f-krb5i", "f-krb5p" };
	struct fh3 root, dir, f;
	uint32_t flav[4], nflav, uid, got;
	uint64_t size;
	char data[5000], back[5000];
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=krb5p:krb5i:krb5");
	kinit("user.keytab", "daemon", "cc.daemon", "1h");
	mkdir_lc("gss");
	mnt(g.port, "/", &root, flav, &nflav);
	ck_assert_uint_eq(nflav, 3);
	ck_assert_uint_eq(flav[0], RPC_FLAVOR_KRB5P);
	ck_assert_uint_eq(flav[1], RPC_FLAVOR_KRB5I);
	ck_assert_uint_eq(flav[2], RPC_FLAVOR_KRB5);

	for (int i = 0; i < 3; i++) {
		struct gcl c;

		fd = trpc_connect(g.port);
		ck_assert_int_ge(fd, 0);
		ck_assert_uint_eq(gcl_init(&c, fd, "cc.daemon", "nfs/localhost"), GSS_S_COMPLETE);
		c.service = svcs[i];
		ck_assert_uint_eq(g_lookup(&c, &root, "gss", &dir), 0);
		ck_assert_uint_eq(g_create(&c, &dir, names[i], &f, &uid), 0);
		ck_assert_uint_eq(uid, daemon_uid());
		for (size_t k = 0; k < sizeof(data); k++)
			data[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
		ck_assert_uint_eq(g_write(&c, &f, data, sizeof(data)), 0);
		memset(back, 0, sizeof(back));
		ck_assert_uint_eq(g_read(&c, &f, back, sizeof(back), &got), 0);
		ck_assert_uint_eq(got, sizeof(data));
		ck_assert(memcmp(back, data, sizeof(data)) == 0);
		gcl_free(&c);
		close(fd);

		lc_stat("gss", names[i], &uid, &size);
		ck_assert_uint_eq(uid, daemon_uid());
		ck_assert_uint_eq(size, sizeof(data));
	}
}
END_TEST

/* Send a DATA call (NULL procedure unless @proc) built by gcl_encode; the reply record, or NULL. */
static uint8_t *raw_call(struct gcl *c, uint32_t xid, uint32_t proc, uint32_t gproc, uint32_t seq,
			 const uint8_t *args, size_t alen, int corrupt, size_t *len)
{
	struct xdr_enc e;

	gcl_encode(c, &e, xid, NFS_PROG, proc, gproc, seq, args, alen, corrupt);
	return roundtrip(c->fd, &e, len);
}

static uint32_t denied_why(const uint8_t *rec, size_t len)
{
	struct trpc_reply r;

	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(trpc_parse_reply(rec, len, &r), 0);
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_DENIED);
	ck_assert_uint_eq(r.stat, RPC_AUTH_ERROR);
	return r.a;
}

/*
 * What must be refused: on an export that takes krb5p only, AUTH_SYS and
 * krb5i calls (AUTH_TOOWEAK); a ticket for another service principal
 * (the INIT answers a GSS error, no handle); a corrupted header MIC
 * (CREDPROBLEM) and a corrupted integrity checksum (GARBAGE_ARGS); a
 * replayed sequence number (dropped: the next reply is the next call's);
 * an unknown handle and a destroyed context (CREDPROBLEM).
 */
START_TEST(refusals)
{
	struct fh3 root, out;
	uint32_t flav[4], nflav, fl;
	struct gcl c, o;
	struct xdr_enc e, a;
	struct trpc_reply tr;
	struct gres r;
	uint8_t *rep, fharg[80];
	size_t len, fal;
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=krb5p");
	kinit("user.keytab", "daemon", "cc.daemon", "1h");
	kinit("other.keytab", "other/localhost", "cc.other", "1h");
	mnt(g.port, "/", &root, flav, &nflav);
	ck_assert_uint_eq(nflav, 1);
	ck_assert_uint_eq(flav[0], RPC_FLAVOR_KRB5P);
	xdr_enc_init(&a, 128);
	xdr_put_opaque(&a, root.d, root.len);
	fal = a.len;
	memcpy(fharg, a.buf, fal);
	xdr_enc_free(&a);

	/* AUTH_SYS GETATTR: too weak */
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);
	xdr_enc_init(&e, 4096);
	trpc_call_header(&e, 0x10, NFS_PROG, 3, P3_GETATTR);
	xdr_put_fixed(&e, fharg, fal);
	rep = roundtrip(fd, &e, &len);
	ck_assert_uint_eq(denied_why(rep, len), RPC_AUTH_TOOWEAK);
	free(rep);

	/* krb5i GETATTR: too weak as well; krb5p: fine */
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.daemon", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_INTEGRITY;
	rep = raw_call(&c, 0x20, P3_GETATTR, RPCSEC_GSS_DATA, ++c.seq, fharg, fal, CORRUPT_NONE, &len);
	ck_assert_uint_eq(denied_why(rep, len), RPC_AUTH_TOOWEAK);
	free(rep);
	c.service = RPC_GSS_SVC_PRIVACY;
	xdr_enc_init(&a, 128);
	xdr_put_fixed(&a, fharg, fal);
	gcall(&c, P3_GETATTR, &a, &r);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &fl);
	ck_assert_uint_eq(fl, 0);
	gres_free(&r);

	/* a corrupted header MIC: CREDPROBLEM */
	rep = raw_call(&c, 0x30, 0, RPCSEC_GSS_DATA, ++c.seq, NULL, 0, CORRUPT_HDR_MIC, &len);
	ck_assert_uint_eq(denied_why(rep, len), RPCSEC_GSS_CREDPROBLEM);
	free(rep);

	/* a corrupted integrity checksum: GARBAGE_ARGS (under integrity on a
	 * krb5i export it would run: here the body check comes first) */
	c.service = RPC_GSS_SVC_INTEGRITY;
	rep = raw_call(&c, 0x31, P3_GETATTR, RPCSEC_GSS_DATA, ++c.seq, fharg, fal, CORRUPT_BODY, &len);
	ck_assert_int_eq(trpc_parse_reply(rep, len, &tr), 0);
	ck_assert_uint_eq(tr.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(tr.stat, RPC_GARBAGE_ARGS);
	free(rep);
	c.service = RPC_GSS_SVC_PRIVACY;

	/* a replayed sequence number is dropped: the reply that comes is the next call's */
	{
		uint32_t s = ++c.seq;
		struct xdr_enc e2;

		rep = raw_call(&c, 0x40, 0, RPCSEC_GSS_DATA, s, NULL, 0, CORRUPT_NONE, &len);
		gcl_decode(&c, rep, len, s, &r);
		ck_assert_uint_eq(r.xid, 0x40);
		gres_free(&r);
		gcl_encode(&c, &e, 0x41, NFS_PROG, 0, RPCSEC_GSS_DATA, s, NULL, 0, CORRUPT_NONE);   /* replay */
		ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
		xdr_enc_free(&e);
		gcl_encode(&c, &e2, 0x42, NFS_PROG, 0, RPCSEC_GSS_DATA, ++c.seq, NULL, 0, CORRUPT_NONE);
		rep = roundtrip(fd, &e2, &len);
		gcl_decode(&c, rep, len, c.seq, &r);
		ck_assert_uint_eq(r.xid, 0x42);
		gres_free(&r);
	}

	/* an unknown handle: CREDPROBLEM */
	{
		uint8_t h = c.handle[0];

		c.handle[0] ^= 0xff;
		rep = raw_call(&c, 0x50, 0, RPCSEC_GSS_DATA, ++c.seq, NULL, 0, CORRUPT_NONE, &len);
		ck_assert_uint_eq(denied_why(rep, len), RPCSEC_GSS_CREDPROBLEM);
		free(rep);
		c.handle[0] = h;
	}

	/* DESTROY, then the context is gone */
	rep = raw_call(&c, 0x60, 0, RPCSEC_GSS_DESTROY, ++c.seq, NULL, 0, CORRUPT_NONE, &len);
	{
		uint32_t svc = c.service;

		c.service = RPC_GSS_SVC_NONE;
		gcl_decode(&c, rep, len, c.seq, &r);
		c.service = svc;
	}
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	gres_free(&r);
	rep = raw_call(&c, 0x61, 0, RPCSEC_GSS_DATA, ++c.seq, NULL, 0, CORRUPT_NONE, &len);
	ck_assert_uint_eq(denied_why(rep, len), RPCSEC_GSS_CREDPROBLEM);
	free(rep);
	gcl_free(&c);

	/* a ticket for other/localhost, presented to the gateway (nfs/localhost) */
	ck_assert(GSS_ERROR(gcl_init(&o, fd, "cc.other", "other/localhost")));
	ck_assert_uint_eq(o.hlen, 0);
	gcl_free(&o);
	close(fd);
	(void)out;
}
END_TEST

/*
 * The principal -> uid mapping: daemon@REALM is the local user daemon
 * (checked in krb5_krb5i_krb5p), ghost@REALM (no local user) is the
 * export's anonymous user, and the machine principal nfs/localhost is root,
 * which root_squash makes the anonymous user too, while a no_root_squash
 * export keeps it root.
 */
START_TEST(principal_mapping)
{
	struct fh3 root, dir, f;
	uint32_t flav[4], nflav, uid;
	uint64_t size;
	struct gcl c;
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=krb5");
	mkdir_lc("gssm");                /* export 2's path must exist when the gateway starts */
	nfsgw_stop(&g);
	gw_up("id=1,path=/,rw,insecure,anonuid=4242,anongid=4242,sec=krb5;"
	      "id=2,path=/gssm,pseudo=/m,rw,insecure,no_root_squash,sec=krb5");
	kinit("user.keytab", "ghost", "cc.ghost", "1h");
	kinit("nfs.keytab", "nfs/localhost", "cc.machine", "1h");
	mnt(g.port, "/", &root, flav, &nflav);
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);

	ck_assert_uint_eq(gcl_init(&c, fd, "cc.ghost", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_NONE;
	ck_assert_uint_eq(g_lookup(&c, &root, "gssm", &dir), 0);
	ck_assert_uint_eq(g_create(&c, &dir, "by-ghost", &f, &uid), 0);
	ck_assert_uint_eq(uid, 4242);
	gcl_free(&c);

	ck_assert_uint_eq(gcl_init(&c, fd, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	ck_assert_uint_eq(g_create(&c, &dir, "by-machine-squashed", &f, &uid), 0);
	ck_assert_uint_eq(uid, 4242);   /* export 1 (the handle's): root_squash */
	gcl_free(&c);

	mnt(g.port, "/gssm", &dir, flav, &nflav);
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	ck_assert_uint_eq(g_create(&c, &dir, "by-machine", &f, &uid), 0);
	ck_assert_uint_eq(uid, 0);      /* export 2: no_root_squash */
	gcl_free(&c);
	close(fd);

	lc_stat("gssm", "by-ghost", &uid, &size);
	ck_assert_uint_eq(uid, 4242);
	lc_stat("gssm", "by-machine", &uid, &size);
	ck_assert_uint_eq(uid, 0);
}
END_TEST

/*
 * A context ends with its ticket: a ticket of a few seconds, a call that
 * works, then (polling NULL calls, each with a new sequence number) the
 * gateway answers CTXPROBLEM once the ticket's end has passed.
 */
START_TEST(expired_ticket)
{
	struct gcl c;
	struct gres r;
	uint8_t *rep;
	size_t len;
	uint32_t why = 0;
	uint64_t deadline;
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=krb5");
	kinit("user.keytab", "daemon", "cc.short", "4s");
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.short", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_NONE;
	rep = raw_call(&c, 0x70, 0, RPCSEC_GSS_DATA, ++c.seq, NULL, 0, CORRUPT_NONE, &len);
	gcl_decode(&c, rep, len, c.seq, &r);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	gres_free(&r);
	deadline = now_mono_ns() + 30ull * 1000000000ull;
	while (now_mono_ns() < deadline) {
		struct trpc_reply tr;

		rep = raw_call(&c, 0x71, 0, RPCSEC_GSS_DATA, ++c.seq, NULL, 0, CORRUPT_NONE, &len);
		ck_assert_ptr_nonnull(rep);
		ck_assert_int_eq(trpc_parse_reply(rep, len, &tr), 0);
		free(rep);
		if (tr.reply_stat == RPC_MSG_DENIED) {
			why = tr.a;
			break;
		}
		usleep(200000);
	}
	ck_assert_uint_eq(why, RPCSEC_GSS_CTXPROBLEM);
	gcl_free(&c);
	close(fd);
}
END_TEST

/*
 * The duplicate reply cache across sequence numbers: a REMOVE whose
 * connection is cut before the reply is read is retransmitted (same xid,
 * new seq_num, as RFC 2203 5.3.3.1 has clients do) from the same port: the
 * cached result (OK, not NOENT) comes back, under a fresh verifier and
 * wrapping for the new seq_num.
 */
START_TEST(drc_across_seq)
{
	struct fh3 root, dir, f;
	uint32_t flav[4], nflav, uid, st;
	uint16_t sport = 0;
	struct xdr_enc a, e;
	struct gres r;
	struct gcl c;
	uint8_t *rep;
	size_t len;
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=krb5i");
	kinit("user.keytab", "daemon", "cc.daemon", "1h");
	mkdir_lc("gssd");
	mnt(g.port, "/", &root, flav, &nflav);
	fd = nfsw_connect(NULL, &sport, g.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.daemon", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_INTEGRITY;
	ck_assert_uint_eq(g_lookup(&c, &root, "gssd", &dir), 0);
	ck_assert_uint_eq(g_create(&c, &dir, "victim", &f, &uid), 0);

	xdr_enc_init(&a, 4096);
	xdr_put_opaque(&a, dir.d, dir.len);
	xdr_put_string(&a, "victim");
	gcl_encode(&c, &e, 0x9000, NFS_PROG, P3_REMOVE, RPCSEC_GSS_DATA, ++c.seq, a.buf, a.len, CORRUPT_NONE);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	xdr_enc_free(&e);
	/* the reply is there (so the REMOVE ran) but is never read */
	ck_assert(NFSW_WAIT(nfsw_peek_records(fd) == 1, 10));
	nfsw_reset(fd);
	fd = -1;
	ck_assert(NFSW_WAIT((fd = nfsw_connect(NULL, &sport, g.port)) >= 0, 10));
	c.fd = fd;
	gcl_encode(&c, &e, 0x9000, NFS_PROG, P3_REMOVE, RPCSEC_GSS_DATA, ++c.seq, a.buf, a.len, CORRUPT_NONE);
	xdr_enc_free(&a);
	rep = roundtrip(fd, &e, &len);
	gcl_decode(&c, rep, len, c.seq, &r);
	ck_assert_uint_eq(r.xid, 0x9000);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	xdr_get_u32(&r.res, &st);
	ck_assert_uint_eq(st, 0);        /* the cached OK, not NOENT */
	gres_free(&r);
	gcl_free(&c);
	close(fd);
	(void)f;
}
END_TEST

/* An NFSv4.0 COMPOUND of @ops (already encoded, @nops of them) under @c
 * (AUTH_SYS when it has no context): the reply in @r, positioned at the
 * first op result; the compound status in *@st. */
static void v4_compound_mv(struct gcl *c, const struct xdr_enc *ops, uint32_t nops, struct gres *r, uint32_t *st,
			   uint32_t minor)
{
	struct xdr_enc a;
	uint32_t taglen;

	xdr_enc_init(&a, 8192);
	xdr_put_opaque(&a, NULL, 0);     /* tag */
	xdr_put_u32(&a, minor);
	xdr_put_u32(&a, nops);
	xdr_put_fixed(&a, ops->buf, ops->len);
	c->vers = 4;
	gcall(c, 1, &a, r);
	ck_assert_uint_eq(r->reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(r->stat, RPC_SUCCESS);
	xdr_get_u32(&r->res, st);
	xdr_get_u32(&r->res, &taglen);
	xdr_skip(&r->res, taglen);
	xdr_get_u32(&r->res, &nops);     /* results */
	ck_assert_int_eq(r->res.err, 0);
}

static void v4_compound(struct gcl *c, const struct xdr_enc *ops, uint32_t nops, struct gres *r, uint32_t *st)
{
	v4_compound_mv(c, ops, nops, r, st, 0);
}

static uint32_t v4_op_status(struct gres *r, uint32_t op)
{
	uint32_t o = 0, st = 99;

	xdr_get_u32(&r->res, &o);
	xdr_get_u32(&r->res, &st);
	ck_assert_int_eq(r->res.err, 0);
	ck_assert_uint_eq(o, op);
	return st;
}

enum { V4_GETATTR = 9, V4_LOOKUP = 15, V4_PUTROOTFH = 24, V4_SECINFO = 33, V4_WRONGSEC = 10016 };

static void v4_getattr_ops(struct xdr_enc *ops)
{
	xdr_enc_truncate(ops, 0);
	xdr_put_u32(ops, V4_PUTROOTFH);
	xdr_put_u32(ops, V4_LOOKUP);
	xdr_put_string(ops, "k");
	xdr_put_u32(ops, V4_GETATTR);
	xdr_put_u32(ops, 1);
	xdr_put_u32(ops, 1u << 1);       /* type */
}

/*
 * NFSv4 and sec=: the pseudo root serves every flavour; an export of
 * krb5p and krb5 answers an AUTH_SYS GETATTR of its root NFS4ERR_WRONGSEC
 * (PUTROOTFH and LOOKUP into it do not: RFC 8881 2.6.3.1), SECINFO lists
 * its flavours in order with the krb5 OID, and the same GETATTR under
 * krb5p works.
 */
START_TEST(v4_wrongsec_and_secinfo)
{
	static const uint8_t krb5_oid[] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02 };
	struct gcl c = { .ctx = GSS_C_NO_CONTEXT, .xid = 0x400 };
	struct xdr_enc ops;
	struct gres r;
	uint32_t st, n, fl, qop, svc, oidlen;
	uint8_t oid[32];
	int fd;

	gw_up("id=1,path=/,pseudo=/k,rw,insecure,sec=krb5p:krb5");
	kinit("user.keytab", "daemon", "cc.daemon", "1h");
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);
	c.fd = fd;

	/* AUTH_SYS: PUTROOTFH, LOOKUP k, GETATTR -> WRONGSEC at the GETATTR */
	xdr_enc_init(&ops, 1024);
	v4_getattr_ops(&ops);
	v4_compound(&c, &ops, 3, &r, &st);
	ck_assert_uint_eq(st, V4_WRONGSEC);
	ck_assert_uint_eq(v4_op_status(&r, V4_PUTROOTFH), 0);
	ck_assert_uint_eq(v4_op_status(&r, V4_LOOKUP), 0);
	ck_assert_uint_eq(v4_op_status(&r, V4_GETATTR), V4_WRONGSEC);
	gres_free(&r);

	/* AUTH_SYS: PUTROOTFH, SECINFO k -> krb5p, krb5 */
	xdr_enc_truncate(&ops, 0);
	xdr_put_u32(&ops, V4_PUTROOTFH);
	xdr_put_u32(&ops, V4_SECINFO);
	xdr_put_string(&ops, "k");
	v4_compound(&c, &ops, 2, &r, &st);
	ck_assert_uint_eq(st, 0);
	ck_assert_uint_eq(v4_op_status(&r, V4_PUTROOTFH), 0);
	ck_assert_uint_eq(v4_op_status(&r, V4_SECINFO), 0);
	xdr_get_u32(&r.res, &n);
	ck_assert_uint_eq(n, 2);
	for (uint32_t i = 0; i < n; i++) {
		xdr_get_u32(&r.res, &fl);
		ck_assert_uint_eq(fl, RPCSEC_GSS);
		xdr_get_opaque_copy(&r.res, oid, &oidlen, sizeof(oid));
		ck_assert_uint_eq(oidlen, sizeof(krb5_oid));
		ck_assert(memcmp(oid, krb5_oid, oidlen) == 0);
		xdr_get_u32(&r.res, &qop);
		xdr_get_u32(&r.res, &svc);
		ck_assert_uint_eq(qop, 0);
		ck_assert_uint_eq(svc, i == 0 ? RPC_GSS_SVC_PRIVACY : RPC_GSS_SVC_NONE);
	}
	ck_assert_int_eq(r.res.err, 0);
	gres_free(&r);

	/* krb5p: the GETATTR works */
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.daemon", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_PRIVACY;
	v4_getattr_ops(&ops);
	v4_compound(&c, &ops, 3, &r, &st);
	ck_assert_uint_eq(st, 0);
	gres_free(&r);
	xdr_enc_free(&ops);
	gcl_free(&c);
	close(fd);
}
END_TEST

enum { V4_EXCHANGE_ID = 42, V4_DESTROY_CLIENTID = 57, V4_SP4_MACH_CRED = 1, V4_INVAL = 22, V4_CLID_INUSE = 10017 };

/* EXCHANGE_ID (4.1) with SP4_MACH_CRED asking enforcement of the client
 * record's ops: the status; the clientid and the enforced bitmap's word 1. */
static uint32_t v41_exchange_id_mach(struct gcl *c, uint64_t *clientid, uint32_t *enforce1)
{
	struct xdr_enc ops;
	struct gres r;
	uint32_t st, op, how, seq, flags, nw, w[4] = { 0 };

	xdr_enc_init(&ops, 1024);
	xdr_put_u32(&ops, V4_EXCHANGE_ID);
	xdr_put_fixed(&ops, "verf0001", 8);
	xdr_put_string(&ops, "gss-mach-cred-client");
	xdr_put_u32(&ops, 0);            /* flags */
	xdr_put_u32(&ops, V4_SP4_MACH_CRED);
	xdr_put_u32(&ops, 2);            /* must_enforce: BIND_CONN(41) EXCHANGE_ID CREATE_SESSION DESTROY_SESSION, DESTROY_CLIENTID */
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, (1u << 9) | (1u << 10) | (1u << 11) | (1u << 12) | (1u << 25));
	xdr_put_u32(&ops, 0);            /* must_allow: none */
	xdr_put_u32(&ops, 0);            /* no impl id */
	v4_compound_mv(c, &ops, 1, &r, &st, 1);
	xdr_enc_free(&ops);
	xdr_get_u32(&r.res, &op);
	ck_assert_uint_eq(op, V4_EXCHANGE_ID);
	xdr_get_u32(&r.res, &st);
	if (!st) {
		xdr_get_u64(&r.res, clientid);
		xdr_get_u32(&r.res, &seq);
		xdr_get_u32(&r.res, &flags);
		xdr_get_u32(&r.res, &how);
		ck_assert_uint_eq(how, V4_SP4_MACH_CRED);
		xdr_get_u32(&r.res, &nw);
		ck_assert_uint_le(nw, 4);
		for (uint32_t i = 0; i < nw; i++)
			xdr_get_u32(&r.res, &w[i]);
		*enforce1 = w[1];
		ck_assert_int_eq(r.res.err, 0);
	}
	gres_free(&r);
	return st;
}

static uint32_t v41_destroy_clientid(struct gcl *c, uint64_t clientid)
{
	struct xdr_enc ops;
	struct gres r;
	uint32_t st;

	xdr_enc_init(&ops, 64);
	xdr_put_u32(&ops, V4_DESTROY_CLIENTID);
	xdr_put_u64(&ops, clientid);
	v4_compound_mv(c, &ops, 1, &r, &st, 1);
	xdr_enc_free(&ops);
	gres_free(&r);
	return st;
}

/*
 * SP4_MACH_CRED (RFC 8881 18.35): refused (NFS4ERR_INVAL) over AUTH_SYS
 * and over krb5 without integrity; granted over krb5i to the machine
 * principal nfs/localhost with the client record's ops enforced; then
 * host/localhost, another principal that maps to the same uid 0, may not
 * destroy that client (CLID_INUSE), nfs/localhost may.
 */
START_TEST(v41_sp4_mach_cred)
{
	struct gcl c = { .ctx = GSS_C_NO_CONTEXT, .xid = 0x500 }, h;
	uint64_t clientid = 0;
	uint32_t enf = 0;
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=sys:krb5:krb5i");
	kinit("nfs.keytab", "nfs/localhost", "cc.machine", "1h");
	kinit("nfs.keytab", "host/localhost", "cc.host", "1h");
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);
	c.fd = fd;
	ck_assert_uint_eq(v41_exchange_id_mach(&c, &clientid, &enf), V4_INVAL);        /* AUTH_SYS */
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	ck_assert_uint_eq(v41_exchange_id_mach(&c, &clientid, &enf), V4_INVAL);        /* krb5 */
	c.service = RPC_GSS_SVC_INTEGRITY;
	ck_assert_uint_eq(v41_exchange_id_mach(&c, &clientid, &enf), 0);               /* krb5i */
	ck_assert_uint_eq(enf, (1u << 9) | (1u << 10) | (1u << 11) | (1u << 12) | (1u << 25));

	ck_assert_uint_eq(gcl_init(&h, fd, "cc.host", "nfs/localhost"), GSS_S_COMPLETE);
	h.service = RPC_GSS_SVC_INTEGRITY;
	h.xid = 0x600;
	ck_assert_uint_eq(v41_destroy_clientid(&h, clientid), V4_CLID_INUSE);
	ck_assert_uint_eq(v41_destroy_clientid(&c, clientid), 0);
	gcl_free(&h);
	gcl_free(&c);
	close(fd);
}
END_TEST

/* ---- RPCSEC_GSS on the 4.1 back channel (RFC 8881 2.10.8.3, 18.33, 18.36) ---- */

#define CB_PROG_T 0x40000123u
enum { V4_BACKCHANNEL_CTL = 40, V4_CREATE_SESSION = 43, V4_SEQUENCE = 53, V4_RECLAIM_COMPLETE = 58 };
#define T_CONN_BACK_CHAN 0x2u
#define T_CB_PATH_DOWN 0x1u
#define T_CB_PATH_DOWN_SESSION 0x200u

/* What the test's callback service saw (cb_answer), and how it answers. */
static struct {
	gss_ctx_id_t ctx;                /* the client's context the callbacks must be made with */
	bool corrupt_reply;              /* answer with a verifier that does not verify */
	unsigned int calls;
	uint32_t prog, proc, flavor, gproc, seq, service;
	uint8_t handle[64];
	uint32_t hlen;
	bool mic_ok, body_ok;
	unsigned int recalls;            /* CB_COMPOUNDs with CB_SEQUENCE + CB_RECALL answered */
	uint8_t recall_sid[16];
} cbs;

/* The results of a CB_COMPOUND of CB_SEQUENCE + CB_RECALL whose unwrapped
 * arguments are @a (@alen bytes) into @res; false if it is something else. */
static bool cb_compound_res(const uint8_t *a, size_t alen, struct xdr_enc *res)
{
	struct xdr_dec d;
	uint32_t tl, mv, ident, nops, op, seqid, slot, high, cachethis, nref, trunc, fhl;
	const uint8_t *sid, *fh;

	xdr_dec_init(&d, a, alen);
	xdr_get_u32(&d, &tl);
	xdr_skip(&d, XDR_PAD(tl));
	xdr_get_u32(&d, &mv);
	xdr_get_u32(&d, &ident);
	xdr_get_u32(&d, &nops);
	xdr_get_u32(&d, &op);
	if (d.err || nops != 2 || op != 11)  /* CB_SEQUENCE */
		return false;
	xdr_get_fixed_ptr(&d, &sid, 16);
	xdr_get_u32(&d, &seqid);
	xdr_get_u32(&d, &slot);
	xdr_get_u32(&d, &high);
	xdr_get_u32(&d, &cachethis);
	xdr_get_u32(&d, &nref);
	xdr_get_u32(&d, &op);
	if (d.err || nref || op != 4)        /* CB_RECALL */
		return false;
	xdr_put_u32(res, 0);             /* NFS4_OK */
	xdr_put_opaque(res, NULL, 0);
	xdr_put_u32(res, 2);
	xdr_put_u32(res, 11);
	xdr_put_u32(res, 0);
	xdr_put_fixed(res, sid, 16);
	xdr_put_u32(res, seqid);
	xdr_put_u32(res, slot);
	xdr_put_u32(res, high);
	xdr_put_u32(res, high);
	xdr_put_u32(res, 4);
	xdr_put_u32(res, 0);
	{
		const uint8_t *rs;

		xdr_get_fixed_ptr(&d, &rs, 16);
		xdr_get_u32(&d, &trunc);
		xdr_get_opaque(&d, &fh, &fhl, 128);
		if (d.err)
			return false;
		memcpy(cbs.recall_sid, rs, 16);
	}
	cbs.recalls++;
	return true;
}

/*
 * A callback on the back channel: check its credential and verifier with
 * our own context (cbs.ctx), unwrap its body per service, and answer it as
 * an RPCSEC_GSS server does (the MIC of its seq_num as verifier; a NULL
 * procedure's void result, or a CB_SEQUENCE + CB_RECALL's results, wrapped
 * per service).  Anything else gets no answer (it times out).
 */
static void cb_answer(int fd, const uint8_t *rec, size_t len)
{
	struct xdr_dec d;
	uint32_t xid, mt, rv, clen, vflavor, vlen, cv, blen, slen;
	const uint8_t *h, *verf, *body, *sum;
	size_t hdr_len;
	gss_buffer_desc in, tok, out = GSS_C_EMPTY_BUFFER, mic = GSS_C_EMPTY_BUFFER;
	OM_uint32 minor;
	struct xdr_enc e, res;
	uint8_t sb[4], *args = NULL;
	size_t alen = 0;
	int conf = 0;

	cbs.calls++;
	cbs.mic_ok = cbs.body_ok = false;
	xdr_dec_init(&d, rec, len);
	xdr_get_u32(&d, &xid);
	xdr_get_u32(&d, &mt);
	xdr_get_u32(&d, &rv);
	xdr_get_u32(&d, &cbs.prog);
	xdr_get_u32(&d, &rv);            /* version */
	xdr_get_u32(&d, &cbs.proc);
	xdr_get_u32(&d, &cbs.flavor);
	xdr_get_u32(&d, &clen);
	if (d.err || cbs.flavor != RPCSEC_GSS)
		return;                  /* not GSS: the test's asserts say so */
	xdr_get_u32(&d, &cv);
	xdr_get_u32(&d, &cbs.gproc);
	xdr_get_u32(&d, &cbs.seq);
	xdr_get_u32(&d, &cbs.service);
	xdr_get_opaque(&d, &h, &cbs.hlen, sizeof(cbs.handle));
	if (d.err)
		return;
	memcpy(cbs.handle, h, cbs.hlen);
	hdr_len = len - xdr_dec_left(&d);
	xdr_get_u32(&d, &vflavor);
	xdr_get_opaque(&d, &verf, &vlen, 400);
	if (d.err || vflavor != RPCSEC_GSS)
		return;
	in.value = (void *)rec;
	in.length = hdr_len;
	tok.value = (void *)verf;
	tok.length = vlen;
	cbs.mic_ok = !GSS_ERROR(gss_verify_mic(&minor, cbs.ctx, &in, &tok, NULL));
	if (cbs.service == RPC_GSS_SVC_NONE) {
		cbs.body_ok = true;
		alen = xdr_dec_left(&d);
		args = malloc(alen + 1);
		memcpy(args, d.p, alen);
	} else if (cbs.service == RPC_GSS_SVC_INTEGRITY) {
		xdr_get_opaque(&d, &body, &blen, UINT32_MAX);
		xdr_get_opaque(&d, &sum, &slen, 400);
		if (!d.err && blen >= 4 && xdr_load_u32(body) == cbs.seq) {
			in.value = (void *)body;
			in.length = blen;
			tok.value = (void *)sum;
			tok.length = slen;
			cbs.body_ok = !GSS_ERROR(gss_verify_mic(&minor, cbs.ctx, &in, &tok, NULL));
			alen = blen - 4;
			args = malloc(alen + 1);
			memcpy(args, body + 4, alen);
		}
	} else {
		xdr_get_opaque(&d, &body, &blen, UINT32_MAX);
		if (!d.err) {
			in.value = (void *)body;
			in.length = blen;
			cbs.body_ok = !GSS_ERROR(gss_unwrap(&minor, cbs.ctx, &in, &out, &conf, NULL)) && conf &&
				      out.length >= 4 && xdr_load_u32(out.value) == cbs.seq;
			if (cbs.body_ok) {
				alen = out.length - 4;
				args = malloc(alen + 1);
				memcpy(args, (uint8_t *)out.value + 4, alen);
			}
			gss_release_buffer(&minor, &out);
		}
	}
	xdr_enc_init(&res, 8192);
	xdr_store_u32(sb, cbs.seq);
	xdr_put_fixed(&res, sb, 4);      /* seq_num, then the results */
	if (!cbs.mic_ok || !cbs.body_ok || (cbs.proc != 0 && !cb_compound_res(args, alen, &res))) {
		free(args);
		xdr_enc_free(&res);
		return;                  /* unanswered: it times out */
	}
	free(args);
	/* the reply: verifier = MIC(seq_num), the results wrapped */
	in.value = sb;
	in.length = 4;
	ck_assert_int_eq(gss_get_mic(&minor, cbs.ctx, 0, &in, &mic), GSS_S_COMPLETE);
	if (cbs.corrupt_reply)
		((uint8_t *)mic.value)[mic.length - 1] ^= 1;
	xdr_enc_init(&e, 16384);
	xdr_put_u32(&e, xid);
	xdr_put_u32(&e, RPC_REPLY);
	xdr_put_u32(&e, RPC_MSG_ACCEPTED);
	xdr_put_u32(&e, RPCSEC_GSS);
	xdr_put_opaque(&e, mic.value, (uint32_t)mic.length);
	xdr_put_u32(&e, RPC_SUCCESS);
	gss_release_buffer(&minor, &mic);
	in.value = res.buf;
	in.length = res.len;
	if (cbs.service == RPC_GSS_SVC_NONE) {
		xdr_put_fixed(&e, res.buf + 4, res.len - 4);
	} else if (cbs.service == RPC_GSS_SVC_INTEGRITY) {
		ck_assert_int_eq(gss_get_mic(&minor, cbs.ctx, 0, &in, &mic), GSS_S_COMPLETE);
		xdr_put_opaque(&e, res.buf, (uint32_t)res.len);
		xdr_put_opaque(&e, mic.value, (uint32_t)mic.length);
		gss_release_buffer(&minor, &mic);
	} else {
		ck_assert_int_eq(gss_wrap(&minor, cbs.ctx, 1, 0, &in, &conf, &mic), GSS_S_COMPLETE);
		xdr_put_opaque(&e, mic.value, (uint32_t)mic.length);
		gss_release_buffer(&minor, &mic);
	}
	xdr_enc_free(&res);
	ck_assert_int_eq(e.err, 0);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	xdr_enc_free(&e);
}

struct v41s {
	uint64_t clientid;
	uint8_t sid[16];
	uint32_t slot_seq;
};

/* EXCHANGE_ID (SP4_NONE) for @owner: clientid and the CREATE_SESSION seq. */
static void v41_exchange_id(struct gcl *c, const char *owner, struct v41s *s, uint32_t *csseq)
{
	struct xdr_enc ops;
	struct gres r;
	uint32_t st;

	xdr_enc_init(&ops, 1024);
	xdr_put_u32(&ops, V4_EXCHANGE_ID);
	xdr_put_fixed(&ops, "verf0002", 8);
	xdr_put_string(&ops, owner);
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, 0);            /* SP4_NONE */
	xdr_put_u32(&ops, 0);
	v4_compound_mv(c, &ops, 1, &r, &st, 1);
	xdr_enc_free(&ops);
	ck_assert_uint_eq(st, 0);
	ck_assert_uint_eq(v4_op_status(&r, V4_EXCHANGE_ID), 0);
	xdr_get_u64(&r.res, &s->clientid);
	xdr_get_u32(&r.res, csseq);
	ck_assert_int_eq(r.res.err, 0);
	gres_free(&r);
}

static void put_chan(struct xdr_enc *e, uint32_t reqs)
{
	xdr_put_u32(e, 0);               /* headerpadsize */
	xdr_put_u32(e, 1 << 20);
	xdr_put_u32(e, 1 << 20);
	xdr_put_u32(e, 8192);
	xdr_put_u32(e, 16);
	xdr_put_u32(e, reqs);
	xdr_put_u32(e, 0);               /* rdma_ird<> */
}

/* callback_sec_parms4 with one RPCSEC_GSS entry: gss_cb_handles4 */
static void put_gss_cb_sec(struct xdr_enc *e, uint32_t service, const uint8_t *from_server, uint32_t fslen,
			   const char *from_client)
{
	xdr_put_u32(e, 1);
	xdr_put_u32(e, RPCSEC_GSS);
	xdr_put_u32(e, service);
	xdr_put_opaque(e, from_server, fslen);
	xdr_put_opaque(e, from_client, (uint32_t)strlen(from_client));
}

static uint32_t v41_create_session_f(struct gcl *c, struct v41s *s, uint32_t csseq, uint32_t csflags,
				     uint32_t service, const uint8_t *hs, uint32_t hslen, const char *hc);

/* CREATE_SESSION asking for the back channel on this connection with one
 * RPCSEC_GSS callback entry; the session's flags (csr_flags). */
static uint32_t v41_create_session(struct gcl *c, struct v41s *s, uint32_t csseq, uint32_t service,
				   const uint8_t *hs, uint32_t hslen, const char *hc)
{
	return v41_create_session_f(c, s, csseq, T_CONN_BACK_CHAN, service, hs, hslen, hc);
}

static uint32_t v41_create_session_f(struct gcl *c, struct v41s *s, uint32_t csseq, uint32_t csflags,
				     uint32_t service, const uint8_t *hs, uint32_t hslen, const char *hc)
{
	struct xdr_enc ops;
	struct gres r;
	uint32_t st, seq, flags;

	xdr_enc_init(&ops, 1024);
	xdr_put_u32(&ops, V4_CREATE_SESSION);
	xdr_put_u64(&ops, s->clientid);
	xdr_put_u32(&ops, csseq);
	xdr_put_u32(&ops, csflags);
	put_chan(&ops, 8);
	put_chan(&ops, 2);
	xdr_put_u32(&ops, CB_PROG_T);
	put_gss_cb_sec(&ops, service, hs, hslen, hc);
	v4_compound_mv(c, &ops, 1, &r, &st, 1);
	xdr_enc_free(&ops);
	ck_assert_uint_eq(st, 0);
	ck_assert_uint_eq(v4_op_status(&r, V4_CREATE_SESSION), 0);
	xdr_get_fixed(&r.res, s->sid, 16);
	xdr_get_u32(&r.res, &seq);
	xdr_get_u32(&r.res, &flags);
	ck_assert_int_eq(r.res.err, 0);
	gres_free(&r);
	s->slot_seq = 0;
	return flags;
}

/* SEQUENCE (slot 0), then @more (ops already encoded, @nmore of them):
 * SEQUENCE's sr_status_flags; the status of the op after it in *@st2. */
static uint32_t v41_sequence(struct gcl *c, struct v41s *s, const struct xdr_enc *more, uint32_t nmore,
			     uint32_t op2, uint32_t *st2)
{
	struct xdr_enc ops;
	struct gres r;
	uint32_t st, v, flags;
	uint8_t sid[16];

	xdr_enc_init(&ops, 2048);
	xdr_put_u32(&ops, V4_SEQUENCE);
	xdr_put_fixed(&ops, s->sid, 16);
	xdr_put_u32(&ops, ++s->slot_seq);
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, 0);            /* cachethis */
	if (more)
		xdr_put_fixed(&ops, more->buf, more->len);
	v4_compound_mv(c, &ops, 1 + nmore, &r, &st, 1);
	xdr_enc_free(&ops);
	ck_assert_uint_eq(v4_op_status(&r, V4_SEQUENCE), 0);
	xdr_get_fixed(&r.res, sid, 16);
	for (int i = 0; i < 4; i++)
		xdr_get_u32(&r.res, &v);  /* seqid, slotid, highest, target highest */
	xdr_get_u32(&r.res, &flags);
	ck_assert_int_eq(r.res.err, 0);
	if (more && st2)
		*st2 = v4_op_status(&r, op2);
	gres_free(&r);
	return flags;
}

/* BACKCHANNEL_CTL after SEQUENCE with one RPCSEC_GSS entry: its status. */
static uint32_t v41_backchannel_ctl(struct gcl *c, struct v41s *s, uint32_t service, const uint8_t *hs,
				    uint32_t hslen, const char *hc)
{
	struct xdr_enc op;
	uint32_t st = 99;

	xdr_enc_init(&op, 512);
	xdr_put_u32(&op, V4_BACKCHANNEL_CTL);
	xdr_put_u32(&op, CB_PROG_T);
	put_gss_cb_sec(&op, service, hs, hslen, hc);
	v41_sequence(c, s, &op, 1, V4_BACKCHANNEL_CTL, &st);
	xdr_enc_free(&op);
	return st;
}

/* SEQUENCEs until @calls callbacks were answered and the path flags are
 * @want (bounded: 500 rounds of 10 ms). */
static uint32_t wait_cb(struct gcl *c, struct v41s *s, unsigned int calls, uint32_t want)
{
	uint32_t f = 0;

	for (int i = 0; i < 500; i++) {
		f = v41_sequence(c, s, NULL, 0, 0, NULL) & (T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION);
		if (cbs.calls >= calls && f == want)
			break;
		usleep(10000);
	}
	return f;
}

/* `nfs clients`: the back_channel_sec of @clientid's first session ("" if none). */
static void back_channel_sec(uint64_t clientid, char *out, size_t len)
{
	struct json_object *reply = nfsgw_cmd(&g, "nfs clients", NULL, NULL), *arr, *c, *v, *ss;

	out[0] = 0;
	if (json_object_object_get_ex(reply, "clients", &arr))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			c = json_object_array_get_idx(arr, i);
			if (!json_object_object_get_ex(c, "clientid", &v) ||
			    (uint64_t)json_object_get_int64(v) != clientid)
				continue;
			if (json_object_object_get_ex(c, "sessions", &ss) && json_object_array_length(ss) &&
			    json_object_object_get_ex(json_object_array_get_idx(ss, 0), "back_channel_sec", &v))
				snprintf(out, len, "%s", json_object_get_string(v));
			break;
		}
	json_object_put(reply);
}

static void assert_cb(uint32_t service, const char *handle)
{
	ck_assert_uint_eq(cbs.prog, CB_PROG_T);
	ck_assert_uint_eq(cbs.proc, 0);  /* the CB_NULL probe */
	ck_assert_msg(cbs.flavor == RPCSEC_GSS, "callback credential flavor %u, not RPCSEC_GSS", cbs.flavor);
	ck_assert_uint_eq(cbs.gproc, RPCSEC_GSS_DATA);
	ck_assert_uint_eq(cbs.service, service);
	ck_assert_uint_eq(cbs.hlen, strlen(handle));
	ck_assert_msg(!memcmp(cbs.handle, handle, cbs.hlen), "callback credential handle is not gcbp_handle_from_client");
	ck_assert_msg(cbs.mic_ok, "the callback's verifier is not the MIC of its header with our context");
	ck_assert_msg(cbs.body_ok, "the callback's body does not unwrap (service %u)", service);
}

/*
 * A 4.1 client whose CREATE_SESSION offers only RPCSEC_GSS for callbacks,
 * naming its own krb5i context (gcbp_handle_from_server) and a handle of
 * its own for the callbacks' credential (gcbp_handle_from_client): the
 * back channel is granted and the CB_NULL probe comes with an RPCSEC_GSS
 * credential carrying that handle and service, a verifier that is the MIC
 * of the header under the client's context, and an integrity-wrapped
 * body.  BACKCHANNEL_CTL switches to krb5p (a new probe, sealed).  A
 * reply whose verifier does not verify is not believed: the path goes
 * down (CB_PATH_DOWN); a good answer brings it back.  Destroying the
 * context leaves the back channel down.
 */
START_TEST(v41_gss_callback)
{
	struct gcl c = { .ctx = GSS_C_NO_CONTEXT }, c2 = { .ctx = GSS_C_NO_CONTEXT };
	struct v41s s = { 0 };
	uint32_t csseq, flags;
	uint8_t *rep;
	size_t len;
	int fd;

	gw_up("id=1,path=/,rw,insecure,sec=sys:krb5:krb5i:krb5p");
	kinit("nfs.keytab", "nfs/localhost", "cc.machine", "1h");
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_INTEGRITY;
	memset(&cbs, 0, sizeof(cbs));
	cbs.ctx = c.ctx;

	v41_exchange_id(&c, "gss-cb-client", &s, &csseq);
	flags = v41_create_session(&c, &s, csseq, RPC_GSS_SVC_INTEGRITY, c.handle, c.hlen, "cb-krb5i");
	ck_assert_msg(flags & T_CONN_BACK_CHAN, "no back channel granted for our RPCSEC_GSS handles (flags %#x)", flags);
	ck_assert_uint_eq(wait_cb(&c, &s, 1, 0), 0);
	ck_assert_uint_eq(cbs.calls, 1);
	assert_cb(RPC_GSS_SVC_INTEGRITY, "cb-krb5i");

	/* krb5p from now on */
	ck_assert_uint_eq(v41_backchannel_ctl(&c, &s, RPC_GSS_SVC_PRIVACY, c.handle, c.hlen, "cb-krb5p"), 0);
	ck_assert_uint_eq(wait_cb(&c, &s, 2, 0), 0);
	assert_cb(RPC_GSS_SVC_PRIVACY, "cb-krb5p");
	ck_assert_uint_gt(cbs.seq, 1);   /* sequence numbers of its own, moving */

	/* an answer whose verifier does not verify: the path is down */
	cbs.corrupt_reply = true;
	ck_assert_uint_eq(v41_backchannel_ctl(&c, &s, RPC_GSS_SVC_INTEGRITY, c.handle, c.hlen, "cb-krb5i"), 0);
	ck_assert_uint_eq(wait_cb(&c, &s, 3, T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION),
			  T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION);
	cbs.corrupt_reply = false;
	ck_assert_uint_eq(v41_backchannel_ctl(&c, &s, RPC_GSS_SVC_INTEGRITY, c.handle, c.hlen, "cb-krb5i"), 0);
	ck_assert_uint_eq(wait_cb(&c, &s, 4, 0), 0);

	/* the context destroyed (the fore channel goes on under a second one
	 * of the same principal): the back channel is down */
	ck_assert_uint_eq(gcl_init(&c2, fd, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	c2.service = RPC_GSS_SVC_INTEGRITY;
	c2.xid = 0x9000;
	rep = raw_call(&c, 0x8800, 0, RPCSEC_GSS_DESTROY, ++c.seq, NULL, 0, CORRUPT_NONE, &len);
	ck_assert_ptr_nonnull(rep);
	free(rep);
	flags = v41_sequence(&c2, &s, NULL, 0, 0, NULL);
	ck_assert_msg((flags & (T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION)) == (T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION),
		      "back channel still up after its RPCSEC_GSS context was destroyed (flags %#x)", flags);
	gcl_free(&c2);
	gcl_free(&c);
	close(fd);
}
END_TEST


#define T_WANT_READ_DELEG 0x0100u
enum { V4_OPEN = 18, V4_DELAY = 10008 };

/* A file in the export's root with @content, made through the client library. */
static void make_root_file(const char *name, const char *content)
{
	struct lc_inode *in = NULL;
	struct lc_fh *fh = NULL;
	size_t len = strlen(content);

	ck_assert_int_eq(lc_create(g.c, g.root, name, S_IFREG | 0666, O_RDWR | O_CREAT | O_EXCL, &rootcr, NULL, &in,
				   &fh), 0);
	ck_assert_int_eq(lc_write(g.c, fh, 0, len, content), (ssize_t)len);
	ck_assert_int_eq(lc_release(g.c, fh), 0);
	lc_put(g.c, in);
}

/* RECLAIM_COMPLETE (after SEQUENCE): a 4.1 client's OPENs are GRACE before it. */
static void v41_reclaim_complete(struct gcl *c, struct v41s *s)
{
	struct xdr_enc op;
	uint32_t st = 99;

	xdr_enc_init(&op, 64);
	xdr_put_u32(&op, V4_RECLAIM_COMPLETE);
	xdr_put_u32(&op, 0);             /* rca_one_fs */
	v41_sequence(c, s, &op, 1, V4_RECLAIM_COMPLETE, &st);
	xdr_enc_free(&op);
	ck_assert_uint_eq(st, 0);
}

/* SEQUENCE, PUTROOTFH, OPEN (no create) of @name: OPEN's status; the
 * delegation type in *@dt (0 none, 1 read, 2 write, 3 none_ext) and its
 * stateid in @dsid. */
static uint32_t v41_open(struct gcl *c, struct v41s *s, const char *name, const char *owner, uint32_t access,
			 uint32_t *dt, uint8_t dsid[16])
{
	struct xdr_enc ops;
	struct gres r;
	uint32_t st, v, nw;
	uint8_t sid[16];

	*dt = 99;
	xdr_enc_init(&ops, 2048);
	xdr_put_u32(&ops, V4_SEQUENCE);
	xdr_put_fixed(&ops, s->sid, 16);
	xdr_put_u32(&ops, ++s->slot_seq);
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, 0);
	xdr_put_u32(&ops, V4_PUTROOTFH);
	xdr_put_u32(&ops, V4_OPEN);
	xdr_put_u32(&ops, 0);            /* seqid */
	xdr_put_u32(&ops, access);
	xdr_put_u32(&ops, 0);            /* deny */
	xdr_put_u64(&ops, s->clientid);
	xdr_put_string(&ops, owner);
	xdr_put_u32(&ops, 0);            /* OPEN4_NOCREATE */
	xdr_put_u32(&ops, 0);            /* CLAIM_NULL */
	xdr_put_string(&ops, name);
	v4_compound_mv(c, &ops, 3, &r, &st, 1);
	xdr_enc_free(&ops);
	ck_assert_uint_eq(v4_op_status(&r, V4_SEQUENCE), 0);
	xdr_get_fixed(&r.res, sid, 16);
	for (int i = 0; i < 5; i++)
		xdr_get_u32(&r.res, &v);
	ck_assert_uint_eq(v4_op_status(&r, V4_PUTROOTFH), 0);
	st = v4_op_status(&r, V4_OPEN);
	if (st == 0) {
		xdr_skip(&r.res, 16 + 20);   /* stateid, change_info4 */
		xdr_get_u32(&r.res, &v);     /* rflags */
		xdr_get_u32(&r.res, &nw);    /* attrset */
		xdr_skip(&r.res, (size_t)nw * 4);
		xdr_get_u32(&r.res, dt);
		if (*dt == 1 || *dt == 2)
			xdr_get_fixed(&r.res, dsid, 16);
		ck_assert_int_eq(r.res.err, 0);
	}
	gres_free(&r);
	return st;
}

/*
 * A read delegation held by a client whose back channel is RPCSEC_GSS
 * (krb5p): another client's OPEN for writing is NFS4ERR_DELAY while the
 * gateway recalls it, and the CB_RECALL (after CB_SEQUENCE) comes with
 * the RPCSEC_GSS credential, a header MIC of the holder's context and a
 * sealed body naming the delegation's stateid; the answer (wrapped the
 * same way) is believed: the path stays up.
 */
START_TEST(v41_gss_recall)
{
	struct gcl a = { .ctx = GSS_C_NO_CONTEXT }, b = { .ctx = GSS_C_NO_CONTEXT };
	struct v41s sa = { 0 }, sb = { 0 };
	uint32_t csseq, dt;
	uint8_t dsid[16] = { 0 };
	char secname[32];
	int fa, fb;

	gw_up_opt("id=1,path=/,rw,insecure,no_root_squash,sec=sys:krb5:krb5i:krb5p", "nfs4_delegations", "true");
	kinit("nfs.keytab", "nfs/localhost", "cc.machine", "1h");
	make_root_file("deleg-gss", "hello kerberos delegation");
	fa = trpc_connect(g.port);
	fb = trpc_connect(g.port);
	ck_assert_int_ge(fa, 0);
	ck_assert_int_ge(fb, 0);
	ck_assert_uint_eq(gcl_init(&a, fa, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	ck_assert_uint_eq(gcl_init(&b, fb, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	a.service = b.service = RPC_GSS_SVC_INTEGRITY;
	b.xid = 0xb000;
	memset(&cbs, 0, sizeof(cbs));
	cbs.ctx = a.ctx;

	v41_exchange_id(&a, "gss-deleg-reader", &sa, &csseq);
	ck_assert(v41_create_session(&a, &sa, csseq, RPC_GSS_SVC_PRIVACY, a.handle, a.hlen, "cb-recall") &
		  T_CONN_BACK_CHAN);
	ck_assert_uint_eq(wait_cb(&a, &sa, 1, 0), 0);
	assert_cb(RPC_GSS_SVC_PRIVACY, "cb-recall");
	back_channel_sec(sa.clientid, secname, sizeof(secname));
	ck_assert_str_eq(secname, "krb5p");
	v41_reclaim_complete(&a, &sa);
	ck_assert_uint_eq(v41_open(&a, &sa, "deleg-gss", "ownA", 1 | T_WANT_READ_DELEG, &dt, dsid), 0);
	ck_assert_msg(dt == 1, "no read delegation over an RPCSEC_GSS back channel (type %#x)", dt);

	v41_exchange_id(&b, "gss-deleg-writer", &sb, &csseq);
	v41_create_session_f(&b, &sb, csseq, 0, RPC_GSS_SVC_INTEGRITY, b.handle, b.hlen, "cb-unused");
	v41_reclaim_complete(&b, &sb);
	ck_assert_uint_eq(v41_open(&b, &sb, "deleg-gss", "ownB", 2, &dt, dsid + 0), V4_DELAY);
	/* the recall comes on a's connection: a's next call reads and answers it */
	for (int i = 0; i < 500 && !cbs.recalls; i++) {
		v41_sequence(&a, &sa, NULL, 0, 0, NULL);
		if (!cbs.recalls)
			usleep(10000);
	}
	ck_assert_msg(cbs.recalls == 1, "no CB_RECALL answered (callbacks seen %u, proc %u, mic %d, body %d)",
		      cbs.calls, cbs.proc, cbs.mic_ok, cbs.body_ok);
	ck_assert_uint_eq(cbs.proc, 1);  /* CB_COMPOUND */
	ck_assert_uint_eq(cbs.flavor, RPCSEC_GSS);
	ck_assert_uint_eq(cbs.service, RPC_GSS_SVC_PRIVACY);
	ck_assert(cbs.hlen == strlen("cb-recall") && !memcmp(cbs.handle, "cb-recall", cbs.hlen));
	ck_assert(cbs.mic_ok && cbs.body_ok);
	ck_assert_uint_eq(wait_cb(&a, &sa, 2, 0), 0);   /* our answer was believed: still up */
	gcl_free(&b);
	gcl_free(&a);
	close(fb);
	close(fa);
}
END_TEST

/*
 * RPCSEC_GSS callback handles that name no context of the caller's
 * principal: a forged handle, and the context of another principal
 * (daemon's, on the same connection).  No back channel is granted
 * (csr_flags without CONN_BACK_CHAN), SEQUENCE says CB_PATH_DOWN, an OPEN
 * that wants a read delegation gets none, and no callback is made.
 */
START_TEST(v41_gss_callback_bad_handle)
{
	static const uint8_t forged[16] = "forged-handle-16";
	struct gcl c = { .ctx = GSS_C_NO_CONTEXT }, u = { .ctx = GSS_C_NO_CONTEXT };
	struct v41s s = { 0 }, s2 = { 0 };
	uint32_t csseq, flags;
	int fd;

	uint32_t dt;
	uint8_t dsid[16];
	char secname[32];

	gw_up_opt("id=1,path=/,rw,insecure,sec=sys:krb5:krb5i:krb5p", "nfs4_delegations", "true");
	kinit("nfs.keytab", "nfs/localhost", "cc.machine", "1h");
	kinit("user.keytab", "daemon", "cc.daemon", "1h");
	make_root_file("deleg-forged", "no delegation here");
	fd = trpc_connect(g.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(gcl_init(&c, fd, "cc.machine", "nfs/localhost"), GSS_S_COMPLETE);
	ck_assert_uint_eq(gcl_init(&u, fd, "cc.daemon", "nfs/localhost"), GSS_S_COMPLETE);
	c.service = RPC_GSS_SVC_INTEGRITY;
	c.xid = 0x7000;
	memset(&cbs, 0, sizeof(cbs));
	cbs.ctx = c.ctx;

	v41_exchange_id(&c, "gss-cb-forged", &s, &csseq);
	flags = v41_create_session(&c, &s, csseq, RPC_GSS_SVC_INTEGRITY, forged, sizeof(forged), "cb-x");
	ck_assert_uint_eq(flags & T_CONN_BACK_CHAN, 0);
	flags = v41_sequence(&c, &s, NULL, 0, 0, NULL);
	ck_assert_msg((flags & (T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION)) == (T_CB_PATH_DOWN | T_CB_PATH_DOWN_SESSION),
		      "a forged callback handle: flags %#x, not CB_PATH_DOWN", flags);
	v41_reclaim_complete(&c, &s);
	ck_assert_uint_eq(v41_open(&c, &s, "deleg-forged", "ownF", 1 | T_WANT_READ_DELEG, &dt, dsid), 0);
	ck_assert_msg(dt != 1 && dt != 2, "a delegation (type %u) without a back channel", dt);
	back_channel_sec(s.clientid, secname, sizeof(secname));
	ck_assert_str_eq(secname, "unusable RPCSEC_GSS");

	v41_exchange_id(&c, "gss-cb-other", &s2, &csseq);
	flags = v41_create_session(&c, &s2, csseq, RPC_GSS_SVC_INTEGRITY, u.handle, u.hlen, "cb-y");
	ck_assert_uint_eq(flags & T_CONN_BACK_CHAN, 0);
	flags = v41_sequence(&c, &s2, NULL, 0, 0, NULL);
	ck_assert_msg(flags & T_CB_PATH_DOWN, "another principal's context: flags %#x, not CB_PATH_DOWN", flags);
	ck_assert_uint_eq(cbs.calls, 0);
	gcl_free(&u);
	gcl_free(&c);
	close(fd);
}
END_TEST

/* A bad keytab stops the gateway at start, saying so. */
START_TEST(bad_keytab_refused)
{
	struct gw *gw = NULL;
	struct lclient *lc;

	nfsgw_config();
	nfsgw_opt("nfs_exports", "id=1,path=/,rw,sec=krb5p");
	nfsgw_opt("nfs_gss_keytab", "/nonexistent/nfs.keytab");
	ck_assert_int_eq(lclient_create(&lc), 0);
	ck_assert_int_eq(lclient_mount(lc, NULL), 0);
	ck_assert_int_eq(gw_start("127.0.0.1:0", lc, NULL, &gw), -EINVAL);
	ck_assert_ptr_null(gw);
	lclient_unmount(lc);
	lclient_destroy(lc);
}
END_TEST

/*
 * A keytab without the principal's key: refused with MIT's reason.  In a
 * child that _exit()s, because MIT's gss_acquire_cred_from leaks a copy
 * of the principal (96 bytes) on that error path, which LeakSanitizer
 * builds would otherwise report.
 */
START_TEST(keytab_without_the_key_refused)
{
	struct rpc_gss_params p;
	struct rpc_gss *gss = NULL;
	char err[768];
	int status = -1;
	pid_t pid;

	memset(&p, 0, sizeof(p));
	snprintf(p.keytab, sizeof(p.keytab), "%s/other.keytab", kdir);
	snprintf(p.principal, sizeof(p.principal), "nfs/localhost");
	p.max_contexts = 16;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int r = rpc_gss_create(&p, &gss, err, sizeof(err));

		fprintf(stderr, "rpc_gss_create: %d: %s\n", r, r ? err : "");
		_exit(r == -EINVAL && strstr(err, "no key for nfs/localhost in keytab") ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

/*
 * Not a check: throughput of sys, krb5, krb5i and krb5p on one connection
 * (one 1 MiB WRITE or READ in flight at a time, over 64 MiB of a file),
 * GSS_BENCH seconds each way.  docs/BENCHMARKS.md has the numbers.
 */
START_TEST(throughput)
{
	static const char *modes[] = { "sys", "krb5", "krb5i", "krb5p" };
	static const uint32_t svcs[] = { 0, RPC_GSS_SVC_NONE, RPC_GSS_SVC_INTEGRITY, RPC_GSS_SVC_PRIVACY };
	const uint32_t io = 1 << 20;
	double secs = atof(getenv("GSS_BENCH"));
	struct fh3 root, dir, f;
	uint32_t flav[4], nflav, uid, got;
	char *data = malloc(io), *back = malloc(io), name[32];

	gw_up("id=1,path=/,rw,insecure,no_root_squash,sec=sys:krb5:krb5i:krb5p");
	kinit("user.keytab", "daemon", "cc.daemon", "1h");
	mkdir_lc("bench");
	mnt(g.port, "/", &root, flav, &nflav);
	memset(data, 0x5a, io);
	for (int m = 0; m < 4; m++) {
		struct gcl c = { .ctx = GSS_C_NO_CONTEXT, .xid = 0x100 };
		uint64_t t0, t1, n = 0, rn = 0;
		int fd = trpc_connect(g.port);

		ck_assert_int_ge(fd, 0);
		c.fd = fd;
		if (m) {
			ck_assert_uint_eq(gcl_init(&c, fd, "cc.daemon", "nfs/localhost"), GSS_S_COMPLETE);
			c.service = svcs[m];
		}
		ck_assert_uint_eq(g_lookup(&c, &root, "bench", &dir), 0);
		snprintf(name, sizeof(name), "w-%s", modes[m]);
		ck_assert_uint_eq(g_create(&c, &dir, name, &f, &uid), 0);
		t0 = now_mono_ns();
		do {
			ck_assert_uint_eq(g_write_at(&c, &f, (n % 64) * io, data, io), 0);
			n++;
			t1 = now_mono_ns();
		} while (t1 - t0 < (uint64_t)(secs * 1e9));
		{
			uint64_t r0 = now_mono_ns(), r1;

			do {
				ck_assert_uint_eq(g_read_at(&c, &f, (rn % (n < 64 ? n : 64)) * io, back, io, &got), 0);
				ck_assert_uint_eq(got, io);
				rn++;
				r1 = now_mono_ns();
			} while (r1 - r0 < (uint64_t)(secs * 1e9));
			printf("GSSBENCH mode=%s write_MiBps=%.1f read_MiBps=%.1f (1 MiB ops, 1 in flight, %.0f s each)\n",
			       modes[m], (double)n / ((double)(t1 - t0) / 1e9), (double)rn / ((double)(r1 - r0) / 1e9), secs);
			fflush(stdout);
		}
		if (m)
			gcl_free(&c);
		close(fd);
	}
	free(data);
	free(back);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("nfs_gss");
	TCase *tc;
	SRunner *sr;
	int nf;

	(void)argc;
	(void)argv;
	if (access(KDC_BIN, X_OK)) {
		printf("test_nfs_gss: SKIP: %s is not installed (apt-get install krb5-kdc krb5-admin-server "
		       "krb5-user; ./install-deps.sh does)\n", KDC_BIN);
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	tc = tcase_create("gss");
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, krb5_krb5i_krb5p);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, principal_mapping);
	tcase_add_test(tc, expired_ticket);
	tcase_add_test(tc, drc_across_seq);
	tcase_add_test(tc, bad_keytab_refused);
	tcase_add_test(tc, keytab_without_the_key_refused);
	tcase_add_test(tc, v4_wrongsec_and_secinfo);
	tcase_add_test(tc, v41_sp4_mach_cred);
	tcase_add_test(tc, v41_gss_callback);
	tcase_add_test(tc, v41_gss_callback_bad_handle);
	tcase_add_test(tc, v41_gss_recall);
	suite_add_tcase(s, tc);
	if (getenv("GSS_BENCH")) {
		tc = tcase_create("bench");
		tcase_set_timeout(tc, 600);
		tcase_add_unchecked_fixture(tc, suite_up, suite_down);
		tcase_add_checked_fixture(tc, NULL, teardown);
		tcase_add_test(tc, throughput);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
