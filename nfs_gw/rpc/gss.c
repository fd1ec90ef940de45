/*
 * gss.c - RPCSEC_GSS (RFC 2203) contexts, verifiers and wrapped bodies for
 * the RPC service (gss.h).
 *
 * Locking: g->lock protects the context table (chains, count, refs,
 * last_used); each context's ctx->lock serialises the GSS calls on it
 * (an MIT context is not safe for concurrent use: its sequence state moves
 * with every MIC and wrap) and its sequence window.  g->lock is never held
 * while a ctx->lock is taken, nor the other way round, except in
 * ctx_put() which only frees a context nobody else can reach.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/rpc/gss.h"
#include "nfs_gw/rpc/rpc.h"

#define GSS_BUCKETS 256
#define GSS_WIN_MAX 1024
#define NOBODY 65534u

struct gss_sctx {
	uint8_t handle[16];
	gss_ctx_id_t gctx;
	pthread_mutex_t lock;            /* gctx, the window */
	bool complete;
	bool linked;                     /* in the table; protected by g->lock */
	uint64_t expire_ns;              /* mono; UINT64_MAX: no end */
	uint64_t last_used;              /* protected by g->lock */
	uint32_t seq_max;                /* protected by lock */
	bool seq_any;
	uint64_t win[GSS_WIN_MAX / 64];  /* bit (seq % window): seen */
	uint32_t cb_seq;                 /* protected by lock: the last seq_num of our callbacks */
	struct rpc_cred cred;            /* the mapped identity */
	int refs;                        /* protected by g->lock */
	struct gss_sctx *hnext;
};

struct rpc_gss {
	gss_cred_id_t cred;
	char principal[256];
	char realm[256];                 /* the gateway's default realm */
	char realms[512];
	unsigned int max_contexts, window;
	pthread_mutex_t lock;
	struct gss_sctx *bucket[GSS_BUCKETS];  /* protected by lock */
	unsigned int count;                    /* protected by lock */
};

void rpc_gss_params_from_config(struct rpc_gss_params *p)
{
	memset(p, 0, sizeof(*p));
	cfg_str(CFG_nfs_gss_keytab, p->keytab, sizeof(p->keytab));
	cfg_str(CFG_nfs_gss_principal, p->principal, sizeof(p->principal));
	cfg_str(CFG_nfs_gss_realms, p->realms, sizeof(p->realms));
	p->max_contexts = (unsigned int)cfg_uint(CFG_nfs_gss_max_contexts);
	p->window = (unsigned int)cfg_uint(CFG_nfs_gss_seq_window);
}

static void gss_status_str(OM_uint32 major, OM_uint32 minor, char *buf, size_t len)
{
	OM_uint32 m, ctx = 0;
	gss_buffer_desc s;
	size_t off = 0;

	buf[0] = 0;
	do {
		if (gss_display_status(&m, major, GSS_C_GSS_CODE, GSS_C_NO_OID, &ctx, &s) != GSS_S_COMPLETE)
			break;
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%.*s", off ? "; " : "",
					(int)s.length, (char *)s.value);
		gss_release_buffer(&m, &s);
	} while (ctx && off < len);
	ctx = 0;
	if (minor && off < len) {
		do {
			if (gss_display_status(&m, minor, GSS_C_MECH_CODE, GSS_C_NO_OID, &ctx, &s) != GSS_S_COMPLETE)
				break;
			off += (size_t)snprintf(buf + off, off < len ? len - off : 0, ": %.*s", (int)s.length,
						(char *)s.value);
			gss_release_buffer(&m, &s);
		} while (ctx && off < len);
	}
}

/*
 * Whether @keytab (empty: the default one) holds a key of @principal, asked
 * of krb5 directly: MIT's gss_acquire_cred leaks what it copied when the key
 * is missing (a config error that stops the gateway anyway, but a leak all
 * the same), and this says more precisely what is wrong.  0, or -errno with
 * the reason in @why.
 */
static int keytab_has(const char *keytab, const char *principal, char *why, size_t len)
{
	krb5_context kc;
	krb5_keytab kt = NULL;
	krb5_principal pr = NULL;
	krb5_keytab_entry ent;
	krb5_error_code r;

	if (krb5_init_context(&kc))
		return 0;       /* no krb5 here: gss_acquire_cred says what is wrong */
	r = keytab[0] ? krb5_kt_resolve(kc, keytab, &kt) : krb5_kt_default(kc, &kt);
	if (!r)
		r = krb5_parse_name(kc, principal, &pr);
	if (!r) {
		r = krb5_kt_get_entry(kc, kt, pr, 0, 0, &ent);
		if (!r)
			krb5_free_keytab_entry_contents(kc, &ent);
	}
	if (r) {
		const char *m = krb5_get_error_message(kc, r);

		snprintf(why, len, "%s", m);
		krb5_free_error_message(kc, m);
	}
	if (pr)
		krb5_free_principal(kc, pr);
	if (kt)
		krb5_kt_close(kc, kt);
	krb5_free_context(kc);
	return r ? -ENOENT : 0;
}

int rpc_gss_create(const struct rpc_gss_params *p, struct rpc_gss **out, char *err, size_t errlen)
{
	struct rpc_gss *g = calloc(1, sizeof(*g));
	gss_key_value_element_desc kv = { .key = "keytab" };
	gss_key_value_set_desc store = { .count = 1, .elements = &kv };
	gss_buffer_desc nb;
	gss_name_t name = GSS_C_NO_NAME;
	gss_OID_set_desc mechs = { 1, (gss_OID)gss_mech_krb5 };
	OM_uint32 major, minor;
	krb5_context kc;
	char *realm = NULL, host[200], st[512];

	if (!g)
		return -ENOMEM;
	if (p->principal[0]) {
		snprintf(g->principal, sizeof(g->principal), "%s", p->principal);
	} else {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = 0;
		snprintf(g->principal, sizeof(g->principal), "nfs/%s", host);
	}
	snprintf(g->realms, sizeof(g->realms), "%s", p->realms);
	g->max_contexts = p->max_contexts ? p->max_contexts : 1;
	g->window = p->window ? p->window : 128;
	if (g->window > GSS_WIN_MAX)
		g->window = GSS_WIN_MAX;
	pthread_mutex_init(&g->lock, NULL);

	if (krb5_init_context(&kc) == 0) {
		if (krb5_get_default_realm(kc, &realm) == 0) {
			snprintf(g->realm, sizeof(g->realm), "%s", realm);
			krb5_free_default_realm(kc, realm);
		}
		krb5_free_context(kc);
	}
	nb.value = g->principal;
	nb.length = strlen(g->principal);
	major = gss_import_name(&minor, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &name);
	if (GSS_ERROR(major)) {
		gss_status_str(major, minor, st, sizeof(st));
		snprintf(err, errlen, "nfs_gss_principal '%s': %s", g->principal, st);
		goto fail;
	}
	if (p->keytab[0] && access(p->keytab, R_OK)) {
		snprintf(err, errlen, "nfs_gss_keytab '%s': %s", p->keytab, strerror(errno));
		goto fail;
	}
	if (keytab_has(p->keytab, g->principal, st, sizeof(st))) {
		snprintf(err, errlen, "no key for %s in keytab %s: %s", g->principal,
			 p->keytab[0] ? p->keytab : "(default)", st);
		goto fail;
	}
	if (p->keytab[0]) {
		kv.value = p->keytab;
		major = gss_acquire_cred_from(&minor, name, GSS_C_INDEFINITE, &mechs, GSS_C_ACCEPT, &store, &g->cred,
					      NULL, NULL);
	} else {
		major = gss_acquire_cred(&minor, name, GSS_C_INDEFINITE, &mechs, GSS_C_ACCEPT, &g->cred, NULL, NULL);
	}
	if (GSS_ERROR(major)) {
		gss_status_str(major, minor, st, sizeof(st));
		snprintf(err, errlen, "no key for %s in keytab %s: %s", g->principal,
			 p->keytab[0] ? p->keytab : "(default)", st);
		goto fail;
	}
	gss_release_name(&minor, &name);
	dinfo(RPC, "RPCSEC_GSS: accepting krb5 for %s (realm %s)", g->principal, g->realm[0] ? g->realm : "?");
	*out = g;
	return 0;

fail:
	if (name != GSS_C_NO_NAME)
		gss_release_name(&minor, &name);
	pthread_mutex_destroy(&g->lock);
	free(g);
	return -EINVAL;
}

static void ctx_free(struct gss_sctx *c)
{
	OM_uint32 minor;

	if (c->gctx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&minor, &c->gctx, GSS_C_NO_BUFFER);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void rpc_gss_destroy(struct rpc_gss *g)
{
	OM_uint32 minor;
	struct gss_sctx *c;

	if (!g)
		return;
	for (int i = 0; i < GSS_BUCKETS; i++)
		while ((c = g->bucket[i])) {
			g->bucket[i] = c->hnext;
			ctx_free(c);     /* requests are over: the service stopped first */
		}
	gss_release_cred(&minor, &g->cred);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

unsigned int rpc_gss_contexts(struct rpc_gss *g)
{
	unsigned int n;

	pthread_mutex_lock(&g->lock);
	n = g->count;
	pthread_mutex_unlock(&g->lock);
	return n;
}

static unsigned int bucket_of(const uint8_t *h)
{
	return h[0] % GSS_BUCKETS;       /* random bytes */
}

/* caller holds g->lock */
static void unlink_locked(struct rpc_gss *g, struct gss_sctx *c)
{
	struct gss_sctx **pp;

	if (!c->linked)
		return;
	for (pp = &g->bucket[bucket_of(c->handle)]; *pp; pp = &(*pp)->hnext)
		if (*pp == c) {
			*pp = c->hnext;
			break;
		}
	c->linked = false;
	g->count--;
	c->refs--;                       /* the table's */
}

static void ctx_put(struct rpc_gss *g, struct gss_sctx *c)
{
	bool last;

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		ctx_free(c);
}

static void ctx_unlink(struct rpc_gss *g, struct gss_sctx *c)
{
	bool last;

	pthread_mutex_lock(&g->lock);
	unlink_locked(g, c);
	last = c->refs == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		ctx_free(c);
}

static struct gss_sctx *ctx_find(struct rpc_gss *g, const uint8_t *h, uint32_t len)
{
	struct gss_sctx *c;

	if (len != sizeof(c->handle))
		return NULL;
	pthread_mutex_lock(&g->lock);
	for (c = g->bucket[bucket_of(h)]; c; c = c->hnext)
		if (!memcmp(c->handle, h, sizeof(c->handle))) {
			c->refs++;
			c->last_used = now_mono_ns();
			break;
		}
	pthread_mutex_unlock(&g->lock);
	return c;
}

/* Put @c in the table (it holds a caller reference); at the bound the least
 * recently used context nobody is using goes.  Return 0 or -ENOSPC. */
static int ctx_insert(struct rpc_gss *g, struct gss_sctx *c)
{
	struct gss_sctx *victim = NULL, *v;
	unsigned int b;

	pthread_mutex_lock(&g->lock);
	if (g->count >= g->max_contexts) {
		for (int i = 0; i < GSS_BUCKETS; i++)
			for (v = g->bucket[i]; v; v = v->hnext)
				if (v->refs == 1 && (!victim || v->last_used < victim->last_used))
					victim = v;
		if (!victim) {
			pthread_mutex_unlock(&g->lock);
			return -ENOSPC;
		}
		unlink_locked(g, victim);    /* refs now 0: free below */
		dout(RPC, 5, "RPCSEC_GSS: context table full, dropped the least recently used");
	}
	b = bucket_of(c->handle);
	c->hnext = g->bucket[b];
	g->bucket[b] = c;
	c->linked = true;
	c->refs++;
	c->last_used = now_mono_ns();
	g->count++;
	pthread_mutex_unlock(&g->lock);
	if (victim)
		ctx_free(victim);
	return 0;
}

/* Expired contexts go (called from the service's tick). */
void rpc_gss_prune(struct rpc_gss *g)
{
	struct gss_sctx *c, **pp, *dead = NULL;
	uint64_t now = now_mono_ns();

	pthread_mutex_lock(&g->lock);
	for (int i = 0; i < GSS_BUCKETS; i++)
		for (pp = &g->bucket[i]; (c = *pp);) {
			if (c->expire_ns < now) {
				*pp = c->hnext;
				c->linked = false;
				g->count--;
				if (--c->refs == 0) {
					c->hnext = dead;
					dead = c;
				}
				continue;
			}
			pp = &c->hnext;
		}
	pthread_mutex_unlock(&g->lock);
	while ((c = dead)) {
		dead = c->hnext;
		ctx_free(c);
	}
}

/* ---- the credential -------------------------------------------------------- */

int rpc_gss_decode_cred(const uint8_t *body, uint32_t len, struct rpc_gss_cred *gc)
{
	struct xdr_dec d;
	uint32_t vers;

	xdr_dec_init(&d, body, len);
	xdr_get_u32(&d, &vers);
	xdr_get_u32(&d, &gc->proc);
	xdr_get_u32(&d, &gc->seq);
	xdr_get_u32(&d, &gc->service);
	xdr_get_opaque(&d, &gc->handle, &gc->handle_len, RPC_GSS_MAX_HANDLE);
	if (d.err || xdr_dec_left(&d) || vers != RPCSEC_GSS_VERS_1 || gc->proc > RPCSEC_GSS_DESTROY ||
	    gc->service < RPC_GSS_SVC_NONE || gc->service > RPC_GSS_SVC_PRIVACY)
		return -EBADMSG;
	return 0;
}

/* ---- the principal --------------------------------------------------------- */

static bool realm_ok(const char *realm, const char *default_realm, const char *realms)
{
	size_t n = strlen(realm);
	const char *p = realms;

	if (!n)
		return false;
	if (default_realm && !strcmp(realm, default_realm))
		return true;
	while (p && *p) {
		size_t l;

		p += strspn(p, ", ");
		l = strcspn(p, ", ");
		if (l == n && !strncmp(p, realm, n))
			return true;
		p += l;
	}
	return false;
}

void rpc_gss_map_principal(const char *name, const char *default_realm, const char *realms, struct rpc_cred *cr)
{
	char prim[256], buf[4096];
	const char *at = strrchr(name, '@'), *slash;
	struct passwd pw, *pwp = NULL;
	size_t plen;

	cr->uid = cr->gid = NOBODY;
	cr->ngids = 0;
	cr->anon = true;
	snprintf(cr->machine, sizeof(cr->machine), "%s", name);
	if (!at || !realm_ok(at + 1, default_realm, realms))
		return;
	plen = (size_t)(at - name);
	if (!plen || plen >= sizeof(prim))
		return;
	memcpy(prim, name, plen);
	prim[plen] = 0;
	slash = strchr(prim, '/');
	if (slash) {
		/* a machine principal: service/host (knfsd's gssd and gssproxy
		 * map the client machine's credential to root) */
		size_t sl = (size_t)(slash - prim);

		if (slash[1] && !strchr(slash + 1, '/') &&
		    ((sl == 3 && !strncmp(prim, "nfs", 3)) || (sl == 4 && !strncmp(prim, "host", 4)) ||
		     (sl == 4 && !strncmp(prim, "root", 4)))) {
			cr->uid = cr->gid = 0;
			cr->anon = false;
		}
		return;
	}
	if (getpwnam_r(prim, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return;
	cr->uid = pw.pw_uid;
	cr->gid = pw.pw_gid;
	cr->anon = false;
	{
		gid_t gl[RPC_AUTHSYS_MAX_GIDS];
		int n = RPC_AUTHSYS_MAX_GIDS;

		if (getgrouplist(prim, pw.pw_gid, gl, &n) < 0)
			n = RPC_AUTHSYS_MAX_GIDS;   /* the first ones (more are cut, as AUTH_SYS does) */
		for (int i = 0; i < n && i < RPC_AUTHSYS_MAX_GIDS; i++)
			cr->gids[cr->ngids++] = gl[i];
	}
}

/* ---- replies ----------------------------------------------------------------- */

/* The MIC of the 4-byte big-endian @v: a reply verifier. */
static int mic_u32(struct gss_sctx *c, uint32_t v, gss_buffer_desc *mic)
{
	uint8_t b[4];
	gss_buffer_desc in = { 4, b };
	OM_uint32 major, minor;

	xdr_store_u32(b, v);
	pthread_mutex_lock(&c->lock);
	major = gss_get_mic(&minor, c->gctx, GSS_C_QOP_DEFAULT, &in, mic);
	pthread_mutex_unlock(&c->lock);
	return GSS_ERROR(major) ? -EIO : 0;
}

static void put_head_verf(struct xdr_enc *e, uint32_t xid, uint32_t flavor, const void *verf, uint32_t vlen,
			  uint32_t stat)
{
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_REPLY);
	xdr_put_u32(e, RPC_MSG_ACCEPTED);
	xdr_put_u32(e, flavor);
	xdr_put_opaque(e, verf, vlen);
	xdr_put_u32(e, stat);
}

void rpc_gss_reply_accepted(struct rpc_req *req, struct xdr_enc *e, uint32_t stat)
{
	gss_buffer_desc mic = GSS_C_EMPTY_BUFFER;
	OM_uint32 minor;

	if (!req->gss.ctx || mic_u32(req->gss.ctx, req->gss.seq, &mic)) {
		/* no MIC: the client will not believe this reply anyway */
		put_head_verf(e, req->call.xid, RPC_AUTH_NONE, NULL, 0, stat);
		return;
	}
	put_head_verf(e, req->call.xid, RPCSEC_GSS, mic.value, (uint32_t)mic.length, stat);
	gss_release_buffer(&minor, &mic);
}

size_t rpc_gss_body_reserve(const struct rpc_req *req)
{
	return req->gss.ctx && req->gss.service != RPC_GSS_SVC_NONE ? 8 : 0;
}

int rpc_gss_wrap(struct rpc_req *req, struct xdr_enc *e, size_t body_off)
{
	struct gss_sctx *c = req->gss.ctx;
	gss_buffer_desc in, out = GSS_C_EMPTY_BUFFER;
	OM_uint32 major, minor;
	size_t start;
	int conf = 0;

	if (!c || req->gss.service == RPC_GSS_SVC_NONE)
		return 0;
	if (e->err || body_off < 8 || body_off > e->len)
		return -EINVAL;
	start = body_off - 4;            /* seq_num, then the results */
	xdr_store_u32(xdr_at(e, start), req->gss.seq);
	in.value = xdr_at(e, start);
	in.length = e->len - start;
	pthread_mutex_lock(&c->lock);
	if (req->gss.service == RPC_GSS_SVC_INTEGRITY)
		major = gss_get_mic(&minor, c->gctx, GSS_C_QOP_DEFAULT, &in, &out);
	else
		major = gss_wrap(&minor, c->gctx, 1, GSS_C_QOP_DEFAULT, &in, &conf, &out);
	pthread_mutex_unlock(&c->lock);
	if (GSS_ERROR(major))
		return -EIO;
	if (req->gss.service == RPC_GSS_SVC_INTEGRITY) {
		/* databody_integ<> then checksum<> */
		xdr_store_u32(xdr_at(e, body_off - 8), (uint32_t)in.length);   /* whole XDR words */
		xdr_put_opaque(e, out.value, (uint32_t)out.length);
	} else {
		if (!conf) {
			gss_release_buffer(&minor, &out);
			return -EIO;
		}
		xdr_enc_truncate(e, body_off - 8);
		xdr_put_opaque(e, out.value, (uint32_t)out.length);
	}
	gss_release_buffer(&minor, &out);
	return e->err;
}

void rpc_gss_req_done(struct rpc_req *req)
{
	if (req->gss.ctx)
		ctx_put(req->gss.g, req->gss.ctx);
	req->gss.ctx = NULL;
	free(req->gss.plain);
	req->gss.plain = NULL;
}

/* ---- context creation ------------------------------------------------------ */

static enum rpc_gss_verdict gss_init(struct rpc_gss *g, struct rpc_req *req, struct xdr_enc *e, uint32_t *why)
{
	struct rpc_call *call = &req->call;
	struct gss_sctx *c = NULL;
	struct xdr_dec d;
	const uint8_t *tok;
	uint32_t toklen;
	gss_buffer_desc in, out = GSS_C_EMPTY_BUFFER, mic = GSS_C_EMPTY_BUFFER, nb = GSS_C_EMPTY_BUFFER;
	gss_name_t src = GSS_C_NO_NAME;
	OM_uint32 major, minor, m2, time_rec = 0;
	char st[512], name[256];
	bool fresh;

	if (call->proc != 0) {
		*why = RPC_AUTH_BADCRED;
		return RPC_GSS_AUTH_ERROR;
	}
	xdr_dec_init(&d, call->args, call->args_len);
	if (xdr_get_opaque(&d, &tok, &toklen, 64 * 1024)) {
		rpc_reply_accepted(e, call->xid, RPC_GARBAGE_ARGS);
		return RPC_GSS_REPLIED;
	}
	fresh = call->gss.proc == RPCSEC_GSS_INIT;
	if (fresh) {
		c = calloc(1, sizeof(*c));
		if (!c) {
			rpc_reply_accepted(e, call->xid, RPC_SYSTEM_ERR);
			return RPC_GSS_REPLIED;
		}
		c->gctx = GSS_C_NO_CONTEXT;
		c->refs = 1;
		/* a context left half made (CONTINUE_NEEDED) goes within a minute */
		c->expire_ns = now_mono_ns() + 60ull * 1000000000ull;
		pthread_mutex_init(&c->lock, NULL);
		if (getrandom(c->handle, sizeof(c->handle), 0) != (ssize_t)sizeof(c->handle)) {
			ctx_free(c);
			rpc_reply_accepted(e, call->xid, RPC_SYSTEM_ERR);
			return RPC_GSS_REPLIED;
		}
	} else {
		c = ctx_find(g, call->gss.handle, call->gss.handle_len);
		if (!c || c->complete) {
			if (c)
				ctx_put(g, c);
			*why = RPCSEC_GSS_CREDPROBLEM;
			return RPC_GSS_AUTH_ERROR;
		}
	}
	in.value = (void *)tok;
	in.length = toklen;
	pthread_mutex_lock(&c->lock);
	major = gss_accept_sec_context(&minor, &c->gctx, g->cred, &in, GSS_C_NO_CHANNEL_BINDINGS, &src, NULL, &out,
				       NULL, &time_rec, NULL);
	if (major == GSS_S_COMPLETE) {
		uint8_t w[4];
		gss_buffer_desc win = { 4, w };

		xdr_store_u32(w, g->window);
		if (GSS_ERROR(gss_get_mic(&m2, c->gctx, GSS_C_QOP_DEFAULT, &win, &mic)))
			major = GSS_S_FAILURE;
	}
	pthread_mutex_unlock(&c->lock);

	if (major == GSS_S_COMPLETE) {
		name[0] = 0;
		if (gss_display_name(&m2, src, &nb, NULL) == GSS_S_COMPLETE) {
			snprintf(name, sizeof(name), "%.*s", (int)nb.length, (char *)nb.value);
			gss_release_buffer(&m2, &nb);
		}
		rpc_gss_map_principal(name, g->realm, g->realms, &c->cred);
		/* time_rec: until the ticket's end plus MIT's allowed clock skew
		 * (krb5.conf clockskew, 5 min by default), as MIT itself keeps
		 * accepting the context's tokens until then */
		c->cred.flavor = RPCSEC_GSS;
		{
			uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a: who it is, for NFSv4 state protection */

			for (const char *p = name; *p; p++)
				h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
			c->cred.gss_princ = h | 1;
		}
		c->expire_ns = time_rec == GSS_C_INDEFINITE ? UINT64_MAX
							    : now_mono_ns() + (uint64_t)time_rec * 1000000000ull;
		c->complete = true;
		dout(RPC, 5, "xprt %llu %s: RPCSEC_GSS context for %s -> uid %u%s, %u s", (unsigned long long)req->xprt->id,
		     req->xprt->peer_str, name, c->cred.uid, c->cred.anon ? " (anonymous)" : "", time_rec);
	} else if (GSS_ERROR(major)) {
		gss_status_str(major, minor, st, sizeof(st));
		dout(RPC, 1, "xprt %llu %s: RPCSEC_GSS context refused: %s", (unsigned long long)req->xprt->id,
		     req->xprt->peer_str, st);
	}
	if (src != GSS_C_NO_NAME)
		gss_release_name(&m2, &src);

	if (!GSS_ERROR(major) && fresh && ctx_insert(g, c)) {
		major = GSS_S_FAILURE;       /* every context is in use */
		minor = 0;
	}
	if (mic.length)
		put_head_verf(e, call->xid, RPCSEC_GSS, mic.value, (uint32_t)mic.length, RPC_SUCCESS);
	else
		put_head_verf(e, call->xid, RPC_AUTH_NONE, NULL, 0, RPC_SUCCESS);
	/* rpc_gss_init_res */
	if (GSS_ERROR(major))
		xdr_put_opaque(e, NULL, 0);
	else
		xdr_put_opaque(e, c->handle, sizeof(c->handle));
	xdr_put_u32(e, major);
	xdr_put_u32(e, minor);
	xdr_put_u32(e, g->window);
	xdr_put_opaque(e, out.value, (uint32_t)out.length);
	gss_release_buffer(&m2, &out);
	gss_release_buffer(&m2, &mic);
	if (GSS_ERROR(major) && !fresh)
		ctx_unlink(g, c);
	ctx_put(g, c);                   /* the caller's (a failed fresh one: the only one) */
	return RPC_GSS_REPLIED;
}

/* ---- DATA and DESTROY ---------------------------------------------------------- */

/* RFC 2203 5.3.3.1: true if @seq is new and inside the window (and note it). */
static bool window_accept(struct rpc_gss *g, struct gss_sctx *c, uint32_t seq)
{
	uint32_t w = g->window;
	bool ok = true;

	pthread_mutex_lock(&c->lock);
	if (!c->seq_any || seq > c->seq_max) {
		uint32_t from = c->seq_any ? c->seq_max + 1 : seq;

		if (!c->seq_any || seq - from + 1 >= w) {
			memset(c->win, 0, sizeof(c->win));
		} else {
			for (uint32_t s = from; s <= seq; s++)
				c->win[(s % w) / 64] &= ~(1ull << ((s % w) % 64));
		}
		c->seq_max = seq;
		c->seq_any = true;
	} else if (c->seq_max - seq >= w) {
		ok = false;              /* below the window */
	} else if (c->win[(seq % w) / 64] & (1ull << ((seq % w) % 64))) {
		ok = false;              /* seen */
	}
	if (ok)
		c->win[(seq % w) / 64] |= 1ull << ((seq % w) % 64);
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* Unwrap the arguments into req->call.args; false: garbage. */
static bool unwrap_args(struct rpc_req *req, struct gss_sctx *c)
{
	struct rpc_call *call = &req->call;
	struct xdr_dec d;
	const uint8_t *body, *sum;
	uint32_t blen, slen;
	gss_buffer_desc in, tok, out = GSS_C_EMPTY_BUFFER;
	OM_uint32 major, minor;
	int conf = 0;

	xdr_dec_init(&d, call->args, call->args_len);
	if (call->gss.service == RPC_GSS_SVC_INTEGRITY) {
		xdr_get_opaque(&d, &body, &blen, UINT32_MAX);
		xdr_get_opaque(&d, &sum, &slen, RPC_MAX_AUTH_BYTES);
		if (d.err || blen < 4 || xdr_load_u32(body) != call->gss.seq)
			return false;
		in.value = (void *)body;
		in.length = blen;
		tok.value = (void *)sum;
		tok.length = slen;
		pthread_mutex_lock(&c->lock);
		major = gss_verify_mic(&minor, c->gctx, &in, &tok, NULL);
		pthread_mutex_unlock(&c->lock);
		if (major != GSS_S_COMPLETE)
			return false;
		call->args = body + 4;
		call->args_len = blen - 4;
		return true;
	}
	/* privacy */
	xdr_get_opaque(&d, &body, &blen, UINT32_MAX);
	if (d.err)
		return false;
	in.value = (void *)body;
	in.length = blen;
	pthread_mutex_lock(&c->lock);
	major = gss_unwrap(&minor, c->gctx, &in, &out, &conf, NULL);
	pthread_mutex_unlock(&c->lock);
	if (major != GSS_S_COMPLETE || !conf || out.length < 4 || xdr_load_u32(out.value) != call->gss.seq) {
		gss_release_buffer(&minor, &out);
		return false;
	}
	req->gss.plain = malloc(out.length);
	if (!req->gss.plain) {
		gss_release_buffer(&minor, &out);
		return false;
	}
	memcpy(req->gss.plain, out.value, out.length);
	call->args = (uint8_t *)req->gss.plain + 4;
	call->args_len = out.length - 4;
	gss_release_buffer(&minor, &out);
	return true;
}

enum rpc_gss_verdict rpc_gss_accept(struct rpc_gss *g, struct rpc_req *req, struct xdr_enc *e, uint32_t *why)
{
	struct rpc_call *call = &req->call;
	struct gss_sctx *c;
	gss_buffer_desc hdr, verf;
	OM_uint32 major, minor;

	if (call->gss.proc == RPCSEC_GSS_INIT || call->gss.proc == RPCSEC_GSS_CONTINUE_INIT)
		return gss_init(g, req, e, why);

	c = ctx_find(g, call->gss.handle, call->gss.handle_len);
	if (!c || !c->complete) {
		if (c)
			ctx_put(g, c);
		*why = RPCSEC_GSS_CREDPROBLEM;
		return RPC_GSS_AUTH_ERROR;
	}
	if (c->expire_ns < now_mono_ns()) {
		dout(RPC, 5, "xprt %llu %s: RPCSEC_GSS context of %s expired", (unsigned long long)req->xprt->id,
		     req->xprt->peer_str, c->cred.machine);
		ctx_unlink(g, c);
		ctx_put(g, c);
		*why = RPCSEC_GSS_CTXPROBLEM;
		return RPC_GSS_AUTH_ERROR;
	}
	hdr.value = (void *)req->rec;
	hdr.length = call->gss.hdr_len;
	verf.value = (void *)call->gss.verf;
	verf.length = call->gss.verf_len;
	pthread_mutex_lock(&c->lock);
	major = gss_verify_mic(&minor, c->gctx, &hdr, &verf, NULL);
	pthread_mutex_unlock(&c->lock);
	if (major != GSS_S_COMPLETE) {
		dout(RPC, 5, "xprt %llu %s: xid %#x: RPCSEC_GSS header MIC of %s does not verify (%#x)",
		     (unsigned long long)req->xprt->id, req->xprt->peer_str, call->xid, c->cred.machine, major);
		ctx_put(g, c);
		*why = major == GSS_S_CONTEXT_EXPIRED ? RPCSEC_GSS_CTXPROBLEM : RPCSEC_GSS_CREDPROBLEM;
		return RPC_GSS_AUTH_ERROR;
	}
	if (call->gss.seq >= RPCSEC_GSS_MAXSEQ) {
		ctx_unlink(g, c);
		ctx_put(g, c);
		*why = RPCSEC_GSS_CTXPROBLEM;
		return RPC_GSS_AUTH_ERROR;
	}
	if (!window_accept(g, c, call->gss.seq)) {
		dout(RPC, 5, "xprt %llu %s: xid %#x: RPCSEC_GSS seq %u replayed or below the window: dropped",
		     (unsigned long long)req->xprt->id, req->xprt->peer_str, call->xid, call->gss.seq);
		ctx_put(g, c);
		return RPC_GSS_DROP;
	}
	req->gss.g = g;
	req->gss.ctx = c;                /* the reference passes */
	req->gss.seq = call->gss.seq;
	req->gss.service = call->gss.service;

	if (call->gss.proc == RPCSEC_GSS_DESTROY) {
		if (call->proc != 0) {
			*why = RPC_AUTH_BADCRED;
			return RPC_GSS_AUTH_ERROR;
		}
		req->gss.service = RPC_GSS_SVC_NONE;   /* a void result, not wrapped */
		rpc_gss_reply_accepted(req, e, RPC_SUCCESS);
		ctx_unlink(g, c);
		return RPC_GSS_REPLIED;
	}
	if (call->gss.service != RPC_GSS_SVC_NONE && !unwrap_args(req, c))
		return RPC_GSS_GARBAGE;
	/* the identity: the context's mapping (the flavor and service of this call) */
	{
		uint32_t svc = call->gss.service;

		call->cred = c->cred;
		call->cred.flavor = RPCSEC_GSS;
		call->cred.gss_service = svc;
	}
	return RPC_GSS_DISPATCH;
}

/* ---- the NFSv4.1 back channel: calls we make with a client's context ---------- */

struct gss_sctx *rpc_gss_ctx_get(struct rpc_gss *g, const uint8_t *h, uint32_t len, uint64_t princ)
{
	struct gss_sctx *c;

	if (!g || !princ)
		return NULL;
	c = ctx_find(g, h, len);
	if (!c)
		return NULL;
	if (!c->complete || c->cred.gss_princ != princ || c->expire_ns < now_mono_ns()) {
		ctx_put(g, c);
		return NULL;
	}
	return c;
}

void rpc_gss_ctx_hold(struct rpc_gss *g, struct gss_sctx *c)
{
	pthread_mutex_lock(&g->lock);
	c->refs++;
	pthread_mutex_unlock(&g->lock);
}

void rpc_gss_ctx_put(struct rpc_gss *g, struct gss_sctx *c)
{
	ctx_put(g, c);
}

bool rpc_gss_ctx_alive(struct rpc_gss *g, struct gss_sctx *c)
{
	bool alive;

	pthread_mutex_lock(&g->lock);
	alive = c->linked && c->complete && c->expire_ns >= now_mono_ns();
	pthread_mutex_unlock(&g->lock);
	return alive;
}

int rpc_gss_call_encode(struct rpc_gss *g, struct gss_sctx *c, struct xdr_enc *e, uint32_t xid,
			const struct rpc_call_hdr *h, const uint8_t *handle, uint32_t handle_len, uint32_t service,
			const uint8_t *args, size_t args_len, uint32_t *seq)
{
	gss_buffer_desc in, mic = GSS_C_EMPTY_BUFFER, out = GSS_C_EMPTY_BUFFER;
	OM_uint32 major, minor;
	uint8_t *body = NULL;
	size_t start;
	int conf = 0, r = 0;

	if (handle_len > RPC_GSS_MAX_HANDLE || service < RPC_GSS_SVC_NONE || service > RPC_GSS_SVC_PRIVACY)
		return -EINVAL;
	if (!rpc_gss_ctx_alive(g, c))
		return -EKEYEXPIRED;
	pthread_mutex_lock(&c->lock);
	if (c->cb_seq + 1 >= RPCSEC_GSS_MAXSEQ) {
		pthread_mutex_unlock(&c->lock);
		return -EKEYEXPIRED;     /* RFC 2203 5.3.3.1: no more calls on this context */
	}
	*seq = ++c->cb_seq;
	pthread_mutex_unlock(&c->lock);

	xdr_reserve(e, RPC_RM_HDR);
	start = e->len;
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_CALL);
	xdr_put_u32(e, RPC_VERSION);
	xdr_put_u32(e, h->prog);
	xdr_put_u32(e, h->vers);
	xdr_put_u32(e, h->proc);
	xdr_put_u32(e, RPCSEC_GSS);
	xdr_put_u32(e, (uint32_t)(20 + XDR_PAD(handle_len)));
	xdr_put_u32(e, RPCSEC_GSS_VERS_1);
	xdr_put_u32(e, RPCSEC_GSS_DATA);
	xdr_put_u32(e, *seq);
	xdr_put_u32(e, service);
	xdr_put_opaque(e, handle, handle_len);
	if (e->err)
		return e->err;
	/* the verifier: the MIC of the header, xid to the end of the credential */
	in.value = xdr_at(e, start);
	in.length = e->len - start;
	pthread_mutex_lock(&c->lock);
	major = gss_get_mic(&minor, c->gctx, GSS_C_QOP_DEFAULT, &in, &mic);
	pthread_mutex_unlock(&c->lock);
	if (GSS_ERROR(major))
		return major == GSS_S_CONTEXT_EXPIRED ? -EKEYEXPIRED : -EIO;
	xdr_put_u32(e, RPCSEC_GSS);
	xdr_put_opaque(e, mic.value, (uint32_t)mic.length);
	gss_release_buffer(&minor, &mic);
	if (service == RPC_GSS_SVC_NONE) {
		if (args_len)
			xdr_put_fixed(e, args, args_len);
		return e->err;
	}
	/* { seq_num, args } signed (rpc_gss_integ_data) or sealed (rpc_gss_priv_data) */
	body = malloc(args_len + 4);
	if (!body)
		return -ENOMEM;
	xdr_store_u32(body, *seq);
	if (args_len)
		memcpy(body + 4, args, args_len);
	in.value = body;
	in.length = args_len + 4;
	pthread_mutex_lock(&c->lock);
	if (service == RPC_GSS_SVC_INTEGRITY)
		major = gss_get_mic(&minor, c->gctx, GSS_C_QOP_DEFAULT, &in, &out);
	else
		major = gss_wrap(&minor, c->gctx, 1, GSS_C_QOP_DEFAULT, &in, &conf, &out);
	pthread_mutex_unlock(&c->lock);
	if (GSS_ERROR(major)) {
		r = major == GSS_S_CONTEXT_EXPIRED ? -EKEYEXPIRED : -EIO;
	} else if (service == RPC_GSS_SVC_INTEGRITY) {
		xdr_put_opaque(e, body, (uint32_t)in.length);
		xdr_put_opaque(e, out.value, (uint32_t)out.length);
		r = e->err;
	} else if (!conf) {
		r = -EIO;
	} else {
		xdr_put_opaque(e, out.value, (uint32_t)out.length);
		r = e->err;
	}
	gss_release_buffer(&minor, &out);
	free(body);
	return r;
}

int rpc_gss_reply_check(struct rpc_gss *g, struct gss_sctx *c, uint32_t seq, uint32_t service,
			struct rpc_reply *rr, void **plain)
{
	gss_buffer_desc in, tok, out = GSS_C_EMPTY_BUFFER;
	OM_uint32 major, minor;
	struct xdr_dec d;
	const uint8_t *body, *sum;
	uint32_t blen, slen;
	uint8_t sb[4];
	int conf = 0;

	*plain = NULL;
	if (rr->reply_stat != RPC_MSG_ACCEPTED)
		return 0;                /* a denial has no verifier: an error either way */
	if (rr->verf_flavor != RPCSEC_GSS || !rr->verf_len)
		return -EBADMSG;
	xdr_store_u32(sb, seq);
	in.value = sb;
	in.length = 4;
	tok.value = (void *)rr->verf;
	tok.length = rr->verf_len;
	pthread_mutex_lock(&c->lock);
	/* supplementary bits (a gap, out of order) are for the RPC seq to judge:
	 * the MIC is over our own seq_num */
	major = gss_verify_mic(&minor, c->gctx, &in, &tok, NULL);
	pthread_mutex_unlock(&c->lock);
	if (GSS_ERROR(major))
		return major == GSS_S_CONTEXT_EXPIRED ? -EKEYEXPIRED : -EBADMSG;
	if (rr->stat != RPC_SUCCESS || service == RPC_GSS_SVC_NONE)
		return 0;
	xdr_dec_init(&d, rr->res, rr->res_len);
	if (service == RPC_GSS_SVC_INTEGRITY) {
		xdr_get_opaque(&d, &body, &blen, UINT32_MAX);
		xdr_get_opaque(&d, &sum, &slen, RPC_MAX_AUTH_BYTES);
		if (d.err || blen < 4 || xdr_load_u32(body) != seq)
			return -EBADMSG;
		in.value = (void *)body;
		in.length = blen;
		tok.value = (void *)sum;
		tok.length = slen;
		pthread_mutex_lock(&c->lock);
		major = gss_verify_mic(&minor, c->gctx, &in, &tok, NULL);
		pthread_mutex_unlock(&c->lock);
		if (GSS_ERROR(major))
			return -EBADMSG;
		rr->res = body + 4;
		rr->res_len = blen - 4;
		return 0;
	}
	xdr_get_opaque(&d, &body, &blen, UINT32_MAX);
	if (d.err)
		return -EBADMSG;
	in.value = (void *)body;
	in.length = blen;
	pthread_mutex_lock(&c->lock);
	major = gss_unwrap(&minor, c->gctx, &in, &out, &conf, NULL);
	pthread_mutex_unlock(&c->lock);
	if (GSS_ERROR(major) || !conf || out.length < 4 || xdr_load_u32(out.value) != seq) {
		gss_release_buffer(&minor, &out);
		return -EBADMSG;
	}
	*plain = malloc(out.length);
	if (!*plain) {
		gss_release_buffer(&minor, &out);
		return -ENOMEM;
	}
	memcpy(*plain, out.value, out.length);
	rr->res = (const uint8_t *)*plain + 4;
	rr->res_len = out.length - 4;
	gss_release_buffer(&minor, &out);
	return 0;
}
