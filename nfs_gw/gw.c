/*
 * gw.c - start and stop the embedded NFS gateway (gw.h), and its exports.
 *
 * Wiring: the exports (parsed and checked first: an error serves nothing),
 * the duplicate reply cache, the RPC service with its transport and
 * workers, and the NFSv4 and NFSv3/MOUNT servers registered on it (one
 * port for all three programs), all sized from the [nfs] options, and the
 * registration with rpcbind when one runs.  Teardown runs in the reverse
 * order: rpcbind, the RPC service (no request runs after it returns), then
 * the NFSv3 and NFSv4 state, then the DRC (whose entries hold the last
 * transport references), then the exports.
 *
 * Reload (`exports reload`, SIGHUP through gw_exports_reload()): the new
 * nfs_exports value is parsed and every path resolved before anything
 * changes; then the table is swapped.  A request in flight finishes with
 * the table it began with; the next one sees the new rules.  A bad new
 * value changes nothing and says why.  Resolving the paths asks the MDS,
 * so no mutex is held meanwhile: reloads take turns on a flag lock
 * (gw->reloading), and `exports reload` keeps the gateway alive with a
 * count gw_stop waits for, not with asok_lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client/client.h"
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/gw.h"
#include "nfs_gw/nfs3/nfs3.h"
#include "nfs_gw/nfs3/nfs3_xdr.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"
#include "nfs_gw/rpc/rpcb.h"

struct gw {
	struct lclient *lc;
	struct nfs_export_set exports;
	/* one reload at a time: a flag lock (reload_lock, reload_cond) held
	 * across the reload's MDS lookups */
	pthread_mutex_t reload_lock;     /* protects reloading */
	pthread_cond_t reload_cond;
	bool reloading;
	struct drc *drc;
	struct rpc_gss *gss;             /* RPCSEC_GSS (some export asks for krb5*), or NULL */
	struct rpc_svc *svc;
	struct nfs4_server *nfs4;
	struct lc_revoke_hook revoke_hook;   /* registered with the client library (caps.c) */
	/* cap revokes held while their delegations are recalled (gw_revoke_hook):
	 * the waiter thread completes each once its file has no delegation
	 * left, or revokes them at its deadline */
	pthread_mutex_t rv_lock;         /* protects the four below; before srv->lock and st->lock */
	pthread_cond_t rv_cond;          /* an entry was added, or rv_stop (the waiter sleeps on it when idle) */
	struct gw_revoke *rv_list;       /* oldest first */
	bool rv_stop;
	bool rv_running;
	pthread_t rv_thread;
	struct nfs3_server *nfs3;
	bool rpcb;                       /* registered with rpcbind */
	uint16_t port;
};

/* what gw_start registers with rpcbind */
static const uint32_t rpcb_progs[][2] = {
	{ NFS3_PROGRAM, 3 }, { NFS3_PROGRAM, 4 }, { MOUNT_PROGRAM, 3 },
};

static bool port_check(void *arg, const struct rpc_req *req)
{
	/* nfs_require_privileged_port: calls from ports >= 1024 are refused */
	return false;
}

/* Parse @spec and resolve its paths through @lc (if any): a table to serve. */
static int exports_load(const char *spec, struct lclient *lc, struct nfs_exports **out, char *err, size_t errlen)
{
	struct nfs_exports *x;
	int r;

	r = nfs_exports_parse(spec, &x, err, errlen);
	if (r)
		return r;
	if (lc) {
		r = nfs_exports_check_paths(x, lc, err, errlen);
		if (r) {
			nfs_exports_put(x);
			return r;
		}
	}
	*out = x;
	return 0;
}

/*
 * RPCSEC_GSS when an export of @x asks for krb5, krb5i or krb5p (or a
 * keytab is configured): the keytab is read now, so a bad one stops the
 * gateway before anything listens.  @out NULL: only check.
 */
static int gss_load(const struct nfs_exports *x, struct rpc_gss **out, char *err, size_t errlen)
{
	struct rpc_gss_params gp;
	struct rpc_gss *g = NULL;
	char why[768];
	int r;

	rpc_gss_params_from_config(&gp);
	if (out)
		*out = NULL;
	if (!nfs_exports_want_gss(x) && !gp.keytab[0])
		return 0;
	r = rpc_gss_create(&gp, &g, why, sizeof(why));
	if (r) {
		snprintf(err, errlen, "RPCSEC_GSS (sec=krb5*): %s", why);
		return r;
	}
	if (out)
		*out = g;
	else
		rpc_gss_destroy(g);
	return 0;
}

int gw_check_exports(struct lclient *c, char *err, size_t errlen)
{
	struct nfs_exports *x;
	char *spec = cfg_strdup(CFG_nfs_exports);
	int r;

	if (!spec) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = exports_load(spec, c, &x, err, errlen);
	free(spec);
	if (!r) {
		r = gss_load(x, NULL, err, errlen);
		nfs_exports_put(x);
	}
	return r;
}

/* ---- admin socket: `exports`, `exports reload` -------------------------------- */

static pthread_mutex_t asok_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t asok_cond = PTHREAD_COND_INITIALIZER;  /* asok_users fell */
static struct gw *asok_gw;               /* protected by asok_lock */
static struct asok *asok_registered;     /* protected by asok_lock */
static unsigned int asok_users;          /* protected by asok_lock: commands using asok_gw without it */

static struct json_object *exports_json(struct gw *gw)
{
	struct json_object *o = json_object_new_object();
	struct nfs_exports *x = nfs_export_set_get(&gw->exports);
	uint64_t gen;

	pthread_mutex_lock(&gw->exports.lock);
	gen = gw->exports.generation;
	pthread_mutex_unlock(&gw->exports.lock);
	json_object_object_add(o, "generation", json_object_new_uint64(gen));
	json_object_object_add(o, "exports", nfs_exports_json(x));
	nfs_exports_put(x);
	return o;
}

static int not_running(struct json_object **out)
{
	*out = json_object_new_object();
	json_object_object_add(*out, "error", json_object_new_string("the NFS gateway is not running"));
	return -ENOENT;
}

static int asok_exports(struct json_object *args, struct json_object **out, void *priv)
{
	int r = 0;

	pthread_mutex_lock(&asok_lock);
	if (asok_gw)
		*out = exports_json(asok_gw);
	else
		r = not_running(out);
	pthread_mutex_unlock(&asok_lock);
	return r;
}

static int asok_exports_reload(struct json_object *args, struct json_object **out, void *priv)
{
	char err[1024];
	struct gw *gw;
	int r;

	/* the reload asks the MDS: asok_lock is not held across it, a use
	 * count keeps the gateway (gw_stop waits for it) */
	pthread_mutex_lock(&asok_lock);
	gw = asok_gw;
	if (gw)
		asok_users++;
	pthread_mutex_unlock(&asok_lock);
	if (!gw)
		return not_running(out);
	r = gw_exports_reload(gw, err, sizeof(err));
	if (r < 0) {
		*out = json_object_new_object();
		json_object_object_add(*out, "error", json_object_new_string(err));
	} else {
		*out = exports_json(gw);
		json_object_object_add(*out, "changed", json_object_new_boolean(r > 0));
		r = 0;
	}
	pthread_mutex_lock(&asok_lock);
	asok_users--;
	pthread_cond_broadcast(&asok_cond);
	pthread_mutex_unlock(&asok_lock);
	return r;
}

static const struct asok_cmd gw_cmds[] = {
	{ "exports", "", "the NFS exports in force: id, path, pseudo path, clients, options", asok_exports },
	{ "exports reload", "",
	  "read nfs_exports again (from the config file, or as `config set` left it) and serve it if every "
	  "export checks out; otherwise nothing changes", asok_exports_reload },
};

/* ---- the gateway ------------------------------------------------------------- */

/* What a reload re-read from the file, checked (cfg_reload_option's check). */
struct reload_ctx {
	struct gw *gw;
	struct nfs_exports *x;
};

static int reload_check(const char *value, void *arg, char *err, size_t errlen)
{
	struct reload_ctx *rc = arg;

	return exports_load(value, rc->gw->lc, &rc->x, err, errlen);
}

/* gw->reloading: held across a reload's MDS lookups; its waiters hold nothing else */
static LOCKDEP_CLASS(reload_class, "NFS exports reload (gw->reloading)");

static void reload_begin(struct gw *gw)
{
	pthread_mutex_lock(&gw->reload_lock);
	if (gw->reloading) {
		lockdep_wait_cond(&reload_class, &gw->reloading, &gw->reload_lock);
		while (gw->reloading)
			pthread_cond_wait(&gw->reload_cond, &gw->reload_lock);
	}
	gw->reloading = true;
	lockdep_acquired(&reload_class, &gw->reloading, true);
	pthread_mutex_unlock(&gw->reload_lock);
}

static void reload_end(struct gw *gw)
{
	pthread_mutex_lock(&gw->reload_lock);
	lockdep_released(&gw->reloading);
	gw->reloading = false;
	pthread_cond_broadcast(&gw->reload_cond);
	pthread_mutex_unlock(&gw->reload_lock);
}

int gw_exports_reload(struct gw *gw, char *err, size_t errlen)
{
	struct reload_ctx rc = { .gw = gw };
	struct nfs_exports *old;
	char *spec = NULL;
	bool changed;
	int r;

	reload_begin(gw);
	r = cfg_reload_option(CFG_nfs_exports, reload_check, &rc, err, errlen);
	if (r < 0)
		goto fail;
	if (!rc.x) {
		/* not from the file (no file, or the command line or `config
		 * set` gave it): the value in force now */
		spec = cfg_strdup(CFG_nfs_exports);
		r = spec ? exports_load(spec, gw->lc, &rc.x, err, errlen) : -ENOMEM;
		free(spec);
		if (r)
			goto fail;
	}
	if (!gw->gss && nfs_exports_want_gss(rc.x)) {
		snprintf(err, errlen, "an export asks for sec=krb5* but the gateway started without RPCSEC_GSS "
			 "(no export had it and nfs_gss_keytab was empty): restart it");
		nfs_exports_put(rc.x);
		r = -EINVAL;
		goto fail;
	}
	old = nfs_export_set_get(&gw->exports);
	{
		struct json_object *a = nfs_exports_json(old), *b = nfs_exports_json(rc.x);

		changed = strcmp(json_object_to_json_string(a), json_object_to_json_string(b)) != 0;
		json_object_put(a);
		json_object_put(b);
	}
	nfs_exports_put(old);
	nfs_export_set_replace(&gw->exports, rc.x);
	reload_end(gw);
	dinfo(NFS, "exports reloaded (%u export%s%s)", rc.x->n, rc.x->n == 1 ? "" : "s",
	      changed ? "" : ", unchanged");
	return changed ? 1 : 0;
fail:
	reload_end(gw);
	if (r == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	derr(NFS, "exports reload failed, the exports in force stay: %s", err);
	return r;
}

static int gw_break_hook(void *arg, uint64_t ino, bool write, bool wait)
{
	return nfs4_deleg_break_ino(arg, ino, write, wait);
}

/*
 * The MDS takes caps back from this client (another client writes the file,
 * or opens one an NFS client holds a write delegation of): NFS read
 * delegations stand on LC_CAP_CACHE|LC_CAP_ATTRS, write delegations also on
 * LC_CAP_BUFFER (Fb alone going recalls only those), so they are recalled,
 * and the revoke's ack waits for DELEGRETURN (caps.c then writes back what
 * the NFS client flushed before it) - but not on the client's flusher
 * thread, which every other revoke and writeback of this client needs: the
 * hook defers the revoke (client.h LC_REVOKE_DEFERRED) and the waiter
 * thread below completes it once no such delegation is left on the file,
 * or at min(nfs4_lease_time, 20 s) - well under mds_session_timeout and
 * client_revoke_defer_max - revoking what is still out
 * (SEQ4_STATUS_RECALLABLE_STATE_REVOKED).
 */
#define GW_REVOKE_WAIT_NS (20ull * 1000000000ull)
#define GW_REVOKE_POLL_NS (100ull * 1000000ull)   /* the waiter's longest sleep: a return it missed */

struct gw_revoke {
	struct gw_revoke *next;
	struct lc_revoke *rv;
	uint64_t ino, deadline;
	uint32_t lost;                   /* LC_CAP_* the revoke takes */
};

static int gw_revoke_hook(void *arg, struct lc_inode *in, uint32_t had, uint32_t keep, bool lost,
			  struct lc_revoke *rv)
{
	struct gw *gw = arg;
	struct nfs4_server *srv = gw->nfs4;
	uint64_t wait = srv->p.lease_ns < GW_REVOKE_WAIT_NS ? srv->p.lease_ns : GW_REVOKE_WAIT_NS;
	struct gw_revoke *e, **pp;
	int r = 0;

	if (!((had & ~keep) & (LC_CAP_CACHE | LC_CAP_ATTRS | LC_CAP_BUFFER)))
		return 0;
	if (lost || !rv || !(e = calloc(1, sizeof(*e)))) {
		nfs4_deleg_caps_revoked(srv, lc_ino(in), had & ~keep, 0);   /* what is out goes now */
		return 0;
	}
	e->rv = rv;
	e->ino = lc_ino(in);
	e->lost = had & ~keep;
	e->deadline = now_mono_ns() + wait;
	pthread_mutex_lock(&gw->rv_lock);
	/* recall; under rv_lock, so a return the waiter sees finds the entry */
	if (!gw->rv_stop && gw->rv_running && nfs4_deleg_break_caps(srv, e->ino, e->lost, 0) == -EAGAIN) {
		for (pp = &gw->rv_list; *pp; pp = &(*pp)->next)
			;
		*pp = e;
		e = NULL;
		r = LC_REVOKE_DEFERRED;
		pthread_cond_signal(&gw->rv_cond);
	}
	pthread_mutex_unlock(&gw->rv_lock);
	if (e) {
		/* none left (a no-op), or the gateway stops: revoke what is out */
		nfs4_deleg_caps_revoked(srv, lc_ino(in), e->lost, 0);
		free(e);
	}
	return r;
}

/* Complete the deferred revokes whose files have no delegation left (all of them once @all). */
static uint64_t gw_revoke_scan(struct gw *gw, bool all)
{
	struct gw_revoke *done = NULL, **pp, *e;
	uint64_t now = now_mono_ns(), next = now + GW_REVOKE_POLL_NS;

	pthread_mutex_lock(&gw->rv_lock);
	for (pp = &gw->rv_list; (e = *pp);) {
		bool out = !all && nfs4_deleg_break_caps(gw->nfs4, e->ino, e->lost, 0) == -EAGAIN;

		if (out && now < e->deadline) {
			if (e->deadline < next)
				next = e->deadline;
			pp = &e->next;
			continue;
		}
		if (out || all)
			dinfo(NFS, "delegations of %#llx not returned %s: revoked, the cap revoke is acked",
			      (unsigned long long)e->ino, all ? "before the gateway stopped" : "in time");
		/* a no-op once they were returned (a stopping server answers
		 * "none out" above: revoke them all the same) */
		nfs4_deleg_caps_revoked(gw->nfs4, e->ino, e->lost, 0);
		*pp = e->next;
		e->next = done;
		done = e;
	}
	pthread_mutex_unlock(&gw->rv_lock);
	/* in the order they came (done is reversed): one inode has one at a time anyway */
	while ((e = done)) {
		done = e->next;
		lc_revoke_complete(gw->lc, e->rv);
		free(e);
	}
	return next;
}

static void *gw_revoke_main(void *arg)
{
	struct gw *gw = arg;

	pthread_mutex_lock(&gw->rv_lock);
	while (!gw->rv_stop) {
		if (!gw->rv_list) {
			/* idle: no wakeups until a revoke is deferred */
			pthread_cond_wait(&gw->rv_cond, &gw->rv_lock);
			continue;
		}
		pthread_mutex_unlock(&gw->rv_lock);
		/* sleeps until a delegation is returned or revoked, or the next deadline */
		nfs4_deleg_wait(gw->nfs4, gw_revoke_scan(gw, false));
		pthread_mutex_lock(&gw->rv_lock);
	}
	pthread_mutex_unlock(&gw->rv_lock);
	return NULL;
}

/* No FUSE writer waits for a delegation any more: the waits in flight see
 * the server stopping and return, then the hook is gone. */
static void gw_unhook(struct gw *gw)
{
	if (!gw->nfs4)
		return;
	pthread_mutex_lock(&gw->nfs4->lock);
	gw->nfs4->stopping = true;
	pthread_cond_broadcast(&gw->nfs4->reaper_cond);
	pthread_mutex_unlock(&gw->nfs4->lock);
	if (gw->lc) {
		lclient_set_break_hook(gw->lc, NULL, NULL);
		if (gw->revoke_hook.revoke)
			lclient_del_revoke_hook(gw->lc, &gw->revoke_hook);
	}
	/* no new deferred revoke now: the ones held go back revoked */
	pthread_mutex_lock(&gw->rv_lock);
	gw->rv_stop = true;
	pthread_cond_signal(&gw->rv_cond);
	pthread_mutex_unlock(&gw->rv_lock);
	if (gw->rv_running) {
		pthread_join(gw->rv_thread, NULL);
		gw->rv_running = false;
	}
	gw_revoke_scan(gw, true);
}

int gw_start(const char *addr_port, struct lclient *c, struct asok *asok, struct gw **out)
{
	struct rpc_svc_params sp;
	struct drc_params dp;
	struct nfs4_params np;
	struct nfs3_params n3;
	struct nfs_exports *x;
	struct gw *gw;
	char err[1024], *spec;
	int r;

	/* exports first: fail closed, before anything listens */
	spec = cfg_strdup(CFG_nfs_exports);
	if (!spec)
		return -ENOMEM;
	r = exports_load(spec, c, &x, err, sizeof(err));
	free(spec);
	if (r) {
		derr(NFS, "%s: not serving NFS", err);
		return r == -ENOMEM ? r : -EINVAL;
	}
	gw = calloc(1, sizeof(*gw));
	if (!gw) {
		nfs_exports_put(x);
		return -ENOMEM;
	}
	gw->lc = c;
	nfs_export_set_init(&gw->exports, x);
	pthread_mutex_init(&gw->reload_lock, NULL);
	pthread_cond_init(&gw->reload_cond, NULL);
	pthread_mutex_init(&gw->rv_lock, NULL);
	pthread_cond_init(&gw->rv_cond, NULL);
	rpc_svc_params_from_config(&sp);
	drc_params_from_config(&dp);
	nfs4_params_from_config(&np, sp.max_record, sp.max_reply);
	np.exports = &gw->exports;
	nfs3_params_from_config(&n3, sp.max_record, sp.max_reply);
	n3.exports = &gw->exports;

	r = gss_load(x, &gw->gss, err, sizeof(err));
	if (r) {
		derr(NFS, "%s: not serving NFS", err);
		goto out_free;
	}
	r = drc_create(&dp, &gw->drc);
	if (r)
		goto out_free;
	r = rpc_svc_create(&sp, gw->drc, &gw->svc);
	if (r)
		goto out_drc;
	if (gw->gss)
		rpc_svc_set_gss(gw->svc, gw->gss);
	r = nfs4_server_create(&np, c, &gw->nfs4);
	if (r)
		goto out_svc;
	r = nfs4_register(gw->nfs4, gw->svc);
	if (r)
		goto out_nfs4;
	if (c) {
		lclient_set_break_hook(c, gw_break_hook, gw->nfs4);   /* FUSE writers recall NFS delegations */
		if (pthread_create(&gw->rv_thread, NULL, gw_revoke_main, gw) == 0)
			gw->rv_running = true;   /* else revokes revoke delegations at once */
		else
			derr(NFS, "no thread for cap revokes: a revoke revokes NFS delegations without a recall");
		gw->revoke_hook = (struct lc_revoke_hook){ .revoke = gw_revoke_hook, .arg = gw };
		lclient_add_revoke_hook(c, &gw->revoke_hook);          /* and other clients, through the MDS */
	}
	r = nfs3_server_create(&n3, c, &gw->nfs3);
	if (r)
		goto out_nfs4;
	r = nfs3_register(gw->nfs3, gw->svc);
	if (r)
		goto out_nfs3;
	if (cfg_bool(CFG_nfs_require_privileged_port))
		rpc_svc_set_port_check(gw->svc, port_check, gw);
	r = rpc_svc_start(gw->svc, addr_port);
	if (r)
		goto out_nfs3;
	gw->port = rpc_svc_port(gw->svc);
	if (cfg_bool(CFG_nfs_rpcbind)) {
		struct sockaddr_storage ss;

		rpc_svc_listen_addr(gw->svc, &ss);
		gw->rpcb = rpc_rpcb_set(&ss, rpcb_progs, 3) > 0;
	}
	if (asok) {
		drc_asok_attach(gw->drc, asok);
		nfs4_asok_attach(gw->nfs4, asok);
		pthread_mutex_lock(&asok_lock);
		asok_gw = gw;
		if (asok_registered != asok && !asok_register(asok, gw_cmds, 2, NULL))
			asok_registered = asok;
		pthread_mutex_unlock(&asok_lock);
	}
	dinfo(NFS, "NFS gateway serving NFSv4.1, NFSv4.0, NFSv3 and MOUNT v3 on %s (port %u), %u export%s", addr_port,
	      gw->port, x->n, x->n == 1 ? "" : "s");
	*out = gw;
	return 0;

out_nfs3:
	gw_unhook(gw);
	nfs4_cb_stop(gw->nfs4);          /* before the connections it calls on go */
	rpc_svc_destroy(gw->svc);
	gw->svc = NULL;
	nfs3_server_destroy(gw->nfs3);
out_nfs4:
	gw_unhook(gw);
	nfs4_cb_stop(gw->nfs4);
	rpc_svc_destroy(gw->svc);
	gw->svc = NULL;
	nfs4_server_destroy(gw->nfs4);
out_svc:
	rpc_svc_destroy(gw->svc);
out_drc:
	drc_destroy(gw->drc);
out_free:
	rpc_gss_destroy(gw->gss);
	pthread_mutex_destroy(&gw->reload_lock);
	pthread_cond_destroy(&gw->reload_cond);
	pthread_mutex_destroy(&gw->rv_lock);
	pthread_cond_destroy(&gw->rv_cond);
	nfs_export_set_fini(&gw->exports);
	free(gw);
	return r;
}

uint16_t gw_port(const struct gw *gw)
{
	return gw ? gw->port : 0;
}

void gw_stop(struct gw *gw)
{
	if (!gw)
		return;
	pthread_mutex_lock(&asok_lock);
	if (asok_gw == gw)
		asok_gw = NULL;
	while (asok_users)               /* an `exports reload` still uses it */
		pthread_cond_wait(&asok_cond, &asok_lock);
	pthread_mutex_unlock(&asok_lock);
	if (gw->rpcb)
		rpc_rpcb_unset(rpcb_progs, 3);
	gw_unhook(gw);
	nfs4_cb_stop(gw->nfs4);          /* callbacks use the service's connections */
	rpc_svc_destroy(gw->svc);
	nfs3_server_destroy(gw->nfs3);
	nfs4_server_destroy(gw->nfs4);
	drc_destroy(gw->drc);
	rpc_gss_destroy(gw->gss);        /* after the service: no call uses a context any more */
	pthread_mutex_destroy(&gw->reload_lock);
	pthread_cond_destroy(&gw->reload_cond);
	pthread_mutex_destroy(&gw->rv_lock);
	pthread_cond_destroy(&gw->rv_cond);
	nfs_export_set_fini(&gw->exports);
	dinfo(NFS, "NFS gateway stopped");
	free(gw);
}
