/*
 * state.c - the NFSv4 server's client and session tables and its leases.
 *
 * Client ids are (incarnation id << 32 | counter), so an id from before a
 * gateway restart, or of another gateway, is recognisably stale
 * (NFS4ERR_STALE_CLIENTID) rather than unknown: the incarnation id
 * (nfs4_boot_id) is random per start.  Session ids carry the client id,
 * the incarnation id and a counter.  The tables are short linked lists under one mutex: a gateway
 * serves a handful of clients, and every lookup is bookkeeping only.
 *
 * The lease reaper (knfsd's "laundromat") wakes every second and looks at
 * clients that have not renewed for a lease period.  One that holds opens
 * or locks becomes a courtesy client (RFC 7530 9.6.3.1, knfsd's courteous
 * server): it keeps its state and its sessions, and its next request
 * renews it as if nothing happened, until another client's request
 * conflicts with that state (nfs4_client_cancel_courtesy: the lease is
 * cancelled then and the request granted) or NFS4_COURTESY_MAX_NS pass.
 * A confirmed client whose lease is cancelled, or that expires holding
 * nothing, leaves a tombstone: its client id and its stateids answer
 * NFS4ERR_EXPIRED (RFC 7530 9.6.3.2) until its client owner establishes
 * itself again.  Expiry unhashes a client's sessions at once; the state
 * hook releases its opens and locks outside the lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/recovery.h"

void nfs4_params_from_config(struct nfs4_params *p, size_t max_record, size_t max_reply)
{
	memset(p, 0, sizeof(*p));
	p->lease_ns = (uint64_t)(cfg_double(CFG_nfs4_lease_time) * 1e9);
	p->max_ops = (uint32_t)cfg_uint(CFG_nfs4_max_ops);
	p->slots = (uint32_t)cfg_uint(CFG_nfs4_session_slots);
	p->max_req = (uint32_t)(max_record > UINT32_MAX ? UINT32_MAX : max_record);
	/* room for the RPC header and record mark in front of COMPOUND4res */
	p->max_resp = (uint32_t)(max_reply > 1024 ? max_reply - 1024 : max_reply);
	p->max_resp_cached = (uint32_t)cfg_uint(CFG_nfs4_max_cached_reply);
	p->cb_timeout_ns = (uint64_t)(cfg_double(CFG_nfs4_cb_timeout) * 1e9);
	p->cb_getattr_ns = (uint64_t)(cfg_double(CFG_nfs4_cb_getattr_timeout) * 1e9);
	p->perf_group = "nfs4";
}

/* ---- clients -------------------------------------------------------------- */

void nfs4_principal_of(const struct rpc_cred *cred, struct nfs4_principal *p)
{
	memset(p, 0, sizeof(*p));
	p->flavor = cred->flavor;
	if (cred->flavor == RPC_AUTH_SYS || cred->flavor == RPCSEC_GSS) {   /* GSS: the mapped principal */
		p->uid = cred->uid;
		p->gid = cred->gid;
		p->gss = cred->gss_princ;
	}
}

void nfs4_new_verifier_locked(struct nfs4_server *srv, uint8_t out[NFS4_VERIFIER_SIZE])
{
	/* caller holds srv->lock; the start time, the incarnation id and a
	 * counter, mixed: never
	 * the same twice in this instance, nor (bar a clock going back) in
	 * another */
	uint64_t v = ++srv->next_verf * 0x9e3779b97f4a7c15ULL;

	v ^= (uint64_t)srv->boot << 32;
	for (int i = 0; i < NFS4_VERIFIER_SIZE; i++)
		out[i] = (uint8_t)(v >> (8 * i)) ^ srv->boot_verifier[i];
}

void nfs4_client_renew(struct nfs4_server *srv, struct nfs4_client *clp)
{
	atomic_store_explicit(&clp->renewed, now_mono_ns(), memory_order_relaxed);
	if (!atomic_load_explicit(&clp->courtesy_hint, memory_order_acquire))
		return;
	/* a courtesy client is back before anyone wanted its state: it is a
	 * client like any other again (RFC 7530 9.6.3.1, last paragraph) */
	pthread_mutex_lock(&srv->lock);
	if (clp->courtesy && !clp->dead) {
		clp->courtesy = false;
		dout(NFS, 5, "client %#llx: back, courtesy state renewed", (unsigned long long)clp->clientid);
	}
	atomic_store_explicit(&clp->courtesy_hint, false, memory_order_release);
	pthread_mutex_unlock(&srv->lock);
}

static void expired_free(struct nfs4_expired *e)
{
	free(e->owner);
	free(e);
}

static void tombstone_locked(struct nfs4_server *srv, const struct nfs4_client *clp)
{
	/* caller holds srv->lock */
	struct nfs4_expired *e = calloc(1, sizeof(*e)), **pp;

	if (!e || !(e->owner = malloc(clp->owner_len ? clp->owner_len : 1))) {
		free(e);
		return;     /* then its client id is just unknown: NFS4ERR_STALE_CLIENTID */
	}
	e->clientid = clp->clientid;
	e->minorversion = clp->minorversion;
	e->owner_len = clp->owner_len;
	memcpy(e->owner, clp->owner, clp->owner_len);
	e->next = srv->expired;
	srv->expired = e;
	if (++srv->nexpired > NFS4_EXPIRED_MAX) {
		/* forget the oldest */
		for (pp = &srv->expired; (*pp)->next; pp = &(*pp)->next)
			;
		expired_free(*pp);
		*pp = NULL;
		srv->nexpired--;
	}
	perf_inc(&srv->perf.cancelled, 1);
}

void nfs4_forget_expired_locked(struct nfs4_server *srv, const uint8_t *owner, uint32_t owner_len, uint32_t minor)
{
	/* caller holds srv->lock */
	for (struct nfs4_expired **pp = &srv->expired; *pp;) {
		struct nfs4_expired *e = *pp;

		if (e->minorversion == minor && e->owner_len == owner_len && !memcmp(e->owner, owner, owner_len)) {
			*pp = e->next;
			expired_free(e);
			srv->nexpired--;
		} else {
			pp = &e->next;
		}
	}
}

static bool expired_find_locked(struct nfs4_server *srv, uint64_t clientid)
{
	for (struct nfs4_expired *e = srv->expired; e; e = e->next)
		if (e->clientid == clientid)
			return true;
	return false;
}

bool nfs4_client_expired32(struct nfs4_server *srv, uint32_t low)
{
	bool found;

	pthread_mutex_lock(&srv->lock);
	found = expired_find_locked(srv, (uint64_t)srv->boot << 32 | low);
	pthread_mutex_unlock(&srv->lock);
	return found;
}

struct nfs4_client *nfs4_client_new_locked(struct nfs4_server *srv, const uint8_t *owner, uint32_t owner_len,
					   const uint8_t *verifier, const struct nfs4_principal *principal,
					   uint32_t minorversion)
{
	/* caller holds srv->lock */
	struct nfs4_client *clp = calloc(1, sizeof(*clp));

	if (!clp || owner_len > sizeof(clp->owner)) {
		free(clp);
		return NULL;
	}
	clp->clientid = (uint64_t)srv->boot << 32 | ++srv->next_clientid;
	memcpy(clp->verifier, verifier, NFS4_VERIFIER_SIZE);
	memcpy(clp->owner, owner, owner_len);
	clp->owner_len = owner_len;
	clp->principal = *principal;
	clp->minorversion = minorversion;
	clp->refs = 2;                   /* the table's and the caller's */
	clp->cb_fd = -1;
	nfs4_new_verifier_locked(srv, clp->confirm_verf);
	atomic_store(&clp->renewed, now_mono_ns());
	clp->next = srv->clients;
	srv->clients = clp;
	dout(NFS, 5, "client %#llx created", (unsigned long long)clp->clientid);
	return clp;
}

static void client_free(struct nfs4_client *clp)
{
	if (clp->cb_fd >= 0)
		close(clp->cb_fd);   /* the callback thread held a reference while it used it */
	free(clp->cs_body);
	free(clp);
}

static void client_put_locked(struct nfs4_client *clp)
{
	/* caller holds srv->lock */
	if (--clp->refs == 0)
		client_free(clp);
}

void nfs4_client_put(struct nfs4_server *srv, struct nfs4_client *clp)
{
	if (!clp)
		return;
	pthread_mutex_lock(&srv->lock);
	client_put_locked(clp);
	pthread_mutex_unlock(&srv->lock);
}

uint32_t nfs4_client_find(struct nfs4_server *srv, uint64_t clientid, struct nfs4_client **out)
{
	struct nfs4_client *clp;
	uint32_t st = NFS4ERR_STALE_CLIENTID;

	*out = NULL;
	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next) {
		if (clp->clientid == clientid && !clp->dead) {
			clp->refs++;
			*out = clp;
			st = NFS4_OK;
			break;
		}
	}
	if (!*out && expired_find_locked(srv, clientid))
		st = NFS4ERR_EXPIRED;
	pthread_mutex_unlock(&srv->lock);
	return st;
}

static void session_unhash_locked(struct nfs4_server *srv, struct nfs4_session *ses)
{
	/* caller holds srv->lock */
	struct nfs4_session **pp;

	if (ses->dead)
		return;
	ses->dead = true;
	for (pp = &srv->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == ses) {
			*pp = ses->next;
			break;
		}
	}
	for (pp = &ses->clp->sessions; *pp; pp = &(*pp)->cl_next) {
		if (*pp == ses) {
			*pp = ses->cl_next;
			break;
		}
	}
}

static void session_put_locked(struct nfs4_server *srv, struct nfs4_session *ses)
{
	/* caller holds srv->lock */
	if (--ses->refs)
		return;
	nfs4_cb_session_free_locked(ses);
	slot_table_destroy(&ses->slots);
	client_put_locked(ses->clp);
	free(ses);
}

bool nfs4_client_expire_locked(struct nfs4_server *srv, struct nfs4_client *clp, bool tombstone)
{
	/* caller holds srv->lock */
	struct nfs4_client **pp;

	if (clp->dead)
		return false;
	clp->dead = true;
	if (clp->courtesy) {
		clp->courtesy = false;
		atomic_store(&clp->courtesy_hint, false);
	}
	if (tombstone && clp->confirmed)
		tombstone_locked(srv, clp);
	while (clp->sessions) {
		struct nfs4_session *ses = clp->sessions;
		session_unhash_locked(srv, ses);
		session_put_locked(srv, ses);     /* the table's reference */
	}
	for (pp = &srv->clients; *pp; pp = &(*pp)->next) {
		if (*pp == clp) {
			*pp = clp->next;
			break;
		}
	}
	clp->next = NULL;
	return true;
}

void nfs4_client_set_addr(struct nfs4_client *clp, const struct nfs4_compound *cs)
{
	if (clp && cs->req && cs->req->xprt)
		snprintf(clp->addr, sizeof(clp->addr), "%s", cs->req->xprt->peer_str);
}

bool nfs4_client_cancel_courtesy(struct nfs4_server *srv, uint64_t clientid)
{
	struct nfs4_client *clp;
	bool cancelled = false;

	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next)
		if (clp->clientid == clientid && !clp->dead)
			break;
	if (clp && clp->courtesy) {
		dinfo(NFS, "client %#llx: lease expired, and another client wants its state: cancelled",
		      (unsigned long long)clp->clientid);
		cancelled = nfs4_client_expire_locked(srv, clp, true);
	}
	pthread_mutex_unlock(&srv->lock);
	if (cancelled)
		nfs4_client_release(srv, clp);
	return cancelled;
}

void nfs4_client_release(struct nfs4_server *srv, struct nfs4_client *clp)
{
	dout(NFS, 5, "client %#llx released", (unsigned long long)clp->clientid);
	if (srv->hooks.client_release)
		srv->hooks.client_release(srv, clp);
	/* its state is gone for good, unless the gateway only stops: then
	 * the client reclaims it from the next incarnation */
	if (!atomic_load(&srv->keep_records))
		nfs4_rec_forget(srv, clp);
	nfs4_client_put(srv, clp);             /* the table's reference */
}

/* ---- sessions ------------------------------------------------------------- */

struct nfs4_session *nfs4_session_find(struct nfs4_server *srv, const uint8_t *id)
{
	struct nfs4_session *ses;

	pthread_mutex_lock(&srv->lock);
	for (ses = srv->sessions; ses; ses = ses->next) {
		if (memcmp(ses->id, id, NFS4_SESSIONID_SIZE) == 0) {
			ses->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&srv->lock);
	return ses;
}

void nfs4_session_put(struct nfs4_server *srv, struct nfs4_session *ses)
{
	if (!ses)
		return;
	pthread_mutex_lock(&srv->lock);
	session_put_locked(srv, ses);
	pthread_mutex_unlock(&srv->lock);
}

void nfs4_session_destroy(struct nfs4_server *srv, struct nfs4_session *ses)
{
	pthread_mutex_lock(&srv->lock);
	if (!ses->dead) {
		session_unhash_locked(srv, ses);
		session_put_locked(srv, ses);     /* the table's reference */
	}
	pthread_mutex_unlock(&srv->lock);
}

void nfs4_session_bind_conn(struct nfs4_server *srv, struct nfs4_session *ses, uint64_t xprt_id)
{
	unsigned int i;

	pthread_mutex_lock(&srv->lock);
	for (i = 0; i < ses->nconns; i++)
		if (ses->conns[i] == xprt_id)
			goto out;
	if (ses->nconns == NFS4_SESSION_MAX_CONNS) {
		/* forget the oldest binding: it is most likely a closed connection */
		memmove(ses->conns, ses->conns + 1, sizeof(ses->conns[0]) * (NFS4_SESSION_MAX_CONNS - 1));
		ses->nconns--;
	}
	ses->conns[ses->nconns++] = xprt_id;
out:
	pthread_mutex_unlock(&srv->lock);
}

/* ---- lease reaper ----------------------------------------------------------- */

/*
 * nfs4_boot_id - this incarnation's id (srv->boot).  Random, so that two
 * gateways started in the same second (they share the server owner and
 * scope that let a client reclaim at either) or one restarted within a
 * second never issue colliding client, session and stateid ids; 0 and all
 * ones are kept out of it (special stateids are all zeros or all ones).
 */
static uint32_t nfs4_boot_id(uint64_t real_ns)
{
	uint32_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = (uint32_t)(real_ns ^ (real_ns >> 32) ^ ((uint64_t)getpid() << 16));
	/* 31 bits: client ids (id << 32 | n) stay below 2^63, so the admin
	 * socket's and JSON's signed 64-bit integers carry them */
	id &= 0x7fffffffu;
	if (id == 0)
		id = 0x4c6f6c69;         /* "Loli" */
	return id;
}

static void *reaper(void *arg)
{
	struct nfs4_server *srv = arg;
	struct nfs4_client *clp, *next, *expired;
	void (*tick)(struct nfs4_server *, uint64_t);
	struct timespec ts;
	uint64_t now;

	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		ts = deadline_ms(1000);
		pthread_cond_timedwait(&srv->reaper_cond, &srv->lock, &ts);
		if (srv->stopping)
			break;
		now = now_mono_ns();
		expired = NULL;
		tick = srv->hooks.tick;
		for (clp = srv->clients; clp; clp = next) {
			next = clp->next;
			if (mono_since(now, atomic_load(&clp->renewed)) <= srv->p.lease_ns)
				continue;
			if (clp->courtesy) {
				if (mono_since(now, clp->courtesy_since) < NFS4_COURTESY_MAX_NS)
					continue;
			} else if (clp->confirmed && srv->hooks.client_has_state &&
				   srv->hooks.client_has_state(srv, clp->clientid)) {
				/* keep its state as long as nobody wants it */
				dinfo(NFS, "client %#llx: lease expired; keeping its state as a courtesy",
				      (unsigned long long)clp->clientid);
				clp->courtesy = true;
				clp->courtesy_since = now;
				atomic_store_explicit(&clp->courtesy_hint, true, memory_order_release);
				perf_inc(&srv->perf.courtesy, 1);
				continue;
			}
			dinfo(NFS, "client %#llx: lease expired, releasing its state",
			      (unsigned long long)clp->clientid);
			nfs4_client_expire_locked(srv, clp, true);
			clp->next = expired;
			expired = clp;
		}
		pthread_mutex_unlock(&srv->lock);
		while ((clp = expired)) {
			expired = clp->next;
			clp->next = NULL;
			nfs4_client_release(srv, clp);
		}
		if (tick)
			tick(srv, now);
		nfs4_rec_tick(srv);      /* the grace period ran out: drop who did not come back */
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

int nfs4_server_create(const struct nfs4_params *p, struct lclient *lc, struct nfs4_server **out)
{
	struct nfs4_server *srv = calloc(1, sizeof(*srv));
	pthread_condattr_t ca;
	uint64_t real = now_real_ns();
	int r;

	if (!srv)
		return -ENOMEM;
	nfs4_op_stats_init();
	srv->p = *p;
	if (!srv->p.max_ops)
		srv->p.max_ops = 1;
	if (!srv->p.slots)
		srv->p.slots = 1;
	srv->lc = lc;
	srv->exports = p->exports;
	if (!srv->exports) {
		/* no gateway around it (tests, fuzzing): our own, from nfs_exports */
		struct nfs_exports *x;
		char err[512], *spec = cfg_strdup(CFG_nfs_exports);

		r = spec ? nfs_exports_parse(spec, &x, err, sizeof(err)) : -ENOMEM;
		free(spec);
		if (r) {
			derr(NFS, "%s", r == -ENOMEM ? "out of memory" : err);
			free(srv);
			return r;
		}
		srv->own_exports = calloc(1, sizeof(*srv->own_exports));
		if (!srv->own_exports) {
			nfs_exports_put(x);
			free(srv);
			return -ENOMEM;
		}
		nfs_export_set_init(srv->own_exports, x);
		srv->exports = srv->own_exports;
	}
	srv->boot = nfs4_boot_id(real);
	srv->boot_sec = (int64_t)(real / 1000000000ull);
	memcpy(srv->boot_verifier, &real, sizeof(srv->boot_verifier));
	pthread_mutex_init(&srv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->reaper_cond, &ca);
	pthread_condattr_destroy(&ca);
	r = nfs4_rec_start(srv, &srv->grace_ns);
	if (r == 0)
		r = nfs4ops_ctx_create(srv);
	if (r == 0)
		r = -pthread_create(&srv->reaper, NULL, reaper, srv);
	if (r) {
		nfs4ops_ctx_destroy(srv);
		nfs4_rec_free(srv);
		pthread_cond_destroy(&srv->reaper_cond);
		pthread_mutex_destroy(&srv->lock);
		if (srv->own_exports) {
			nfs_export_set_fini(srv->own_exports);
			free(srv->own_exports);
		}
		free(srv);
		return r;
	}
	srv->reaper_started = true;
	r = nfs4_cb_start(srv);
	if (r) {
		nfs4_server_destroy(srv);
		return r;
	}
	if (p->perf_group) {
		const char *g = p->perf_group;

		perf_register_counter(g, "seqid_waits", &srv->perf.seq.waits);
		perf_register_counter(g, "seqid_wait_delays", &srv->perf.seq.delays);
		perf_register_counter(g, "seqid_wait_timeouts", &srv->perf.seq.timeouts);
		perf_register_hist(g, "seqid_wait", &srv->perf.seq.wait_ns);
		perf_register_counter(g, "courtesy_clients", &srv->perf.courtesy);
		perf_register_counter(g, "leases_cancelled", &srv->perf.cancelled);
		perf_register_counter(g, "delegations_granted", &srv->perf.delegs_granted);
		perf_register_counter(g, "delegations_recalled", &srv->perf.delegs_recalled);
		perf_register_counter(g, "delegations_returned", &srv->perf.delegs_returned);
		perf_register_counter(g, "delegations_revoked", &srv->perf.delegs_revoked);
		perf_register_counter(g, "write_delegations_granted", &srv->perf.delegs_granted_write);
		perf_register_counter(g, "cb_getattrs", &srv->perf.cb_getattrs);
		perf_register_counter(g, "cb_getattr_failures", &srv->perf.cb_getattr_failures);
		perf_register_counter(g, "idmap_lookups", &srv->perf.idmap.lookups);
		perf_register_counter(g, "idmap_cache_hits", &srv->perf.idmap.hits);
		perf_register_counter(g, "idmap_unknown", &srv->perf.idmap.unknown);
		srv->perf_registered = true;
	}
	*out = srv;
	return 0;
}

/* How a session's callbacks are secured, for `nfs clients`. */
static const char *cb_sec_name(const struct nfs4_cb_sec *sec)
{
	if (!sec->ok)
		return sec->gss_offered ? "unusable RPCSEC_GSS" : "none offered";
	if (sec->flavor == RPCSEC_GSS)
		return sec->gss_service == RPC_GSS_SVC_PRIVACY ? "krb5p"
		       : sec->gss_service == RPC_GSS_SVC_INTEGRITY ? "krb5i" : "krb5";
	return sec->flavor == RPC_AUTH_SYS ? "sys" : "none";
}


/* ---- admin socket: `nfs clients` --------------------------------------------- */

static pthread_mutex_t asok_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nfs4_server *asok_srv;      /* protected by asok_lock */
static struct asok *asok_registered;      /* protected by asok_lock */
/* `nfs takeover`s running without asok_lock (they wait for the store and
 * the MDS) on asok_srv: destroy waits for them; protected by asok_lock */
static unsigned int asok_busy;
static pthread_cond_t asok_idle = PTHREAD_COND_INITIALIZER;

static struct json_object *clients_json(struct nfs4_server *srv)
{
	struct json_object *arr = json_object_new_array();
	struct nfs4_client *clp;
	struct nfs4_session *ses;
	uint64_t now = now_mono_ns();
	char hex[2 * NFS4_SESSIONID_SIZE + 1];
	int i;

	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next) {
		struct json_object *c = json_object_new_object(), *sa = json_object_new_array();
		char owner[64];
		uint32_t n = clp->owner_len < sizeof(owner) - 1 ? clp->owner_len : sizeof(owner) - 1;

		for (i = 0; i < (int)n; i++)
			owner[i] = clp->owner[i] >= 32 && clp->owner[i] < 127 ? (char)clp->owner[i] : '.';
		owner[n] = 0;
		json_object_object_add(c, "clientid", json_object_new_uint64(clp->clientid));
		json_object_object_add(c, "owner", json_object_new_string(owner));
		json_object_object_add(c, "addr", json_object_new_string(clp->addr));
		json_object_object_add(c, "minorversion", json_object_new_int((int)clp->minorversion));
		json_object_object_add(c, "confirmed", json_object_new_boolean(clp->confirmed));
		json_object_object_add(c, "recorded", json_object_new_boolean(atomic_load(&clp->recorded)));
		json_object_object_add(c, "reclaim_complete", json_object_new_boolean(clp->reclaim_complete));
		json_object_object_add(c, "courtesy", json_object_new_boolean(clp->courtesy));
		json_object_object_add(c, "lease_age_s",
				       json_object_new_double((double)mono_since(now, atomic_load(&clp->renewed)) / 1e9));
		if (clp->minorversion == 0) {
			json_object_object_add(c, "callback", json_object_new_string(nfs4_cb_state_name(clp->cb_state)));
			json_object_object_add(c, "callback_addr", json_object_new_string(clp->cb_addr));
			if (clp->cb_why[0])
				json_object_object_add(c, "callback_why", json_object_new_string(clp->cb_why));
		}
		for (ses = clp->sessions; ses; ses = ses->cl_next) {
			struct json_object *s = json_object_new_object();
			for (i = 0; i < NFS4_SESSIONID_SIZE; i++)
				snprintf(hex + 2 * i, 3, "%02x", ses->id[i]);
			json_object_object_add(s, "sessionid", json_object_new_string(hex));
			json_object_object_add(s, "slots", json_object_new_int((int)ses->slots.nslots));
			json_object_object_add(s, "maxops", json_object_new_int((int)ses->fore.maxoperations));
			json_object_object_add(s, "connections", json_object_new_int((int)ses->nconns));
			json_object_object_add(s, "back_channel", json_object_new_string(nfs4_cb_state_name(ses->cb.state)));
			json_object_object_add(s, "back_channel_sec", json_object_new_string(cb_sec_name(&ses->cb.sec)));
			if (ses->cb.xprt)
				json_object_object_add(s, "back_channel_conn",
						       json_object_new_string(ses->cb.xprt->peer_str));
			json_object_object_add(s, "cb_calls", json_object_new_uint64(ses->cb.calls));
			json_object_object_add(s, "cb_failures", json_object_new_uint64(ses->cb.failures));
			json_object_object_add(s, "cb_slot0_seqid", json_object_new_int64(ses->cb.seqid[0]));
			json_object_array_add(sa, s);
		}
		json_object_object_add(c, "sessions", sa);
		json_object_array_add(arr, c);
	}
	pthread_mutex_unlock(&srv->lock);
	return arr;
}

static int asok_nfs_clients(struct json_object *args, struct json_object **out, void *priv)
{
	int r = 0;

	pthread_mutex_lock(&asok_lock);
	*out = json_object_new_object();
	if (asok_srv) {
		json_object_object_add(*out, "clients", clients_json(asok_srv));
	} else {
		json_object_object_add(*out, "error", json_object_new_string("the NFS gateway is not running"));
		r = -ENOENT;
	}
	pthread_mutex_unlock(&asok_lock);
	return r;
}

/* `nfs client expire ID`: drop a client's state now, as if its lease had run out. */
static int asok_nfs_client_expire(struct json_object *args, struct json_object **out, void *priv)
{
	struct nfs4_client *clp = NULL;
	struct json_object *v;
	uint64_t id;
	char msg[96];
	int r = 0;

	json_object_object_get_ex(args, "id", &v);
	id = (uint64_t)json_object_get_int64(v);
	*out = json_object_new_object();
	pthread_mutex_lock(&asok_lock);
	if (!asok_srv) {
		json_object_object_add(*out, "error", json_object_new_string("the NFS gateway is not running"));
		pthread_mutex_unlock(&asok_lock);
		return -ENOENT;
	}
	pthread_mutex_lock(&asok_srv->lock);
	for (clp = asok_srv->clients; clp && clp->clientid != id; clp = clp->next)
		;
	if (clp)
		nfs4_client_expire_locked(asok_srv, clp, true);   /* its client id and stateids: EXPIRED */
	pthread_mutex_unlock(&asok_srv->lock);
	if (clp) {
		dinfo(NFS, "client %#llx (%s): expired by the admin socket", (unsigned long long)id, clp->addr);
		nfs4_client_release(asok_srv, clp);
		json_object_object_add(*out, "expired", json_object_new_uint64(id));
	} else {
		snprintf(msg, sizeof(msg), "no NFSv4 client %llu (see `nfs clients`)", (unsigned long long)id);
		json_object_object_add(*out, "error", json_object_new_string(msg));
		r = -ENOENT;
	}
	pthread_mutex_unlock(&asok_lock);
	return r;
}

/* `nfs client callback ID`: one callback to the client now (4.1: CB_COMPOUND
 * { CB_SEQUENCE } on its back channel; 4.0: CB_NULL), and how it went. */
static int asok_nfs_client_callback(struct json_object *args, struct json_object **out, void *priv)
{
	struct nfs4_server *srv;
	struct nfs4_client *clp;
	struct json_object *v;
	uint64_t id;
	uint32_t status = 0;
	char msg[160];
	int r;

	json_object_object_get_ex(args, "id", &v);
	id = (uint64_t)json_object_get_int64(v);
	*out = json_object_new_object();
	pthread_mutex_lock(&asok_lock);
	srv = asok_srv;
	if (!srv) {
		json_object_object_add(*out, "error", json_object_new_string("the NFS gateway is not running"));
		pthread_mutex_unlock(&asok_lock);
		return -ENOENT;
	}
	if (nfs4_client_find(srv, id, &clp)) {
		snprintf(msg, sizeof(msg), "no NFSv4 client %llu (see `nfs clients`)", (unsigned long long)id);
		json_object_object_add(*out, "error", json_object_new_string(msg));
		pthread_mutex_unlock(&asok_lock);
		return -ENOENT;
	}
	nfs4_client_put(srv, clp);
	r = nfs4_cb_call_sync(srv, id, NFS4_CBJ_SEQUENCE, &status);
	json_object_object_add(*out, "clientid", json_object_new_uint64(id));
	json_object_object_add(*out, "result", json_object_new_int(r));
	if (r) {
		snprintf(msg, sizeof(msg), "callback failed: %s", r == -ENOTCONN ? "no callback path (the client "
			 "has no back channel / callback address, or its connection is gone)" : strerror(-r));
		json_object_object_add(*out, "error", json_object_new_string(msg));
	} else {
		json_object_object_add(*out, "status", json_object_new_int((int)status));
	}
	pthread_mutex_unlock(&asok_lock);
	return 0;
}

/*
 * `nfs takeover ID`: take over the NFSv4 clients of gateway ID (dead, or
 * to be fenced), whose address was or is being moved here by whoever
 * manages the floating address (recovery.c, nfs4_rec_takeover).
 */
static int asok_nfs_takeover(struct json_object *args, struct json_object **out, void *priv)
{
	struct nfs4_server *srv;
	struct json_object *v = NULL;
	const char *id;
	char msg[512] = "";
	int r;

	id = json_object_object_get_ex(args, "id", &v) ? json_object_get_string(v) : NULL;
	*out = json_object_new_object();
	pthread_mutex_lock(&asok_lock);
	if (!asok_srv) {
		json_object_object_add(*out, "error", json_object_new_string("the NFS gateway is not running"));
		pthread_mutex_unlock(&asok_lock);
		return -ENOENT;
	}
	srv = asok_srv;
	asok_busy++;
	pthread_mutex_unlock(&asok_lock);
	r = nfs4_rec_takeover(srv, id ? id : "", msg, sizeof(msg));
	pthread_mutex_lock(&asok_lock);
	if (!--asok_busy)
		pthread_cond_broadcast(&asok_idle);
	pthread_mutex_unlock(&asok_lock);
	json_object_object_add(*out, r ? "error" : "result", json_object_new_string(msg));
	return r;
}

static const struct asok_cmd nfs4_cmds[] = {
	{ "nfs clients", "", "NFSv4 clients of the gateway: address, owner, sessions and lease age", asok_nfs_clients },
	{ "nfs client expire", "id:int", "drop NFSv4 client ID's opens, locks and sessions now (as when its lease "
	  "runs out); the client must establish itself again", asok_nfs_client_expire },
	{ "nfs client callback", "id:int", "call NFSv4 client ID back now (4.1: CB_SEQUENCE on its back channel, "
	  "4.0: CB_NULL to its callback address) and say how it went", asok_nfs_client_callback },
	{ "nfs takeover", "id:str", "take over the NFSv4 clients of dead gateway ID (nfs_gateway_id) whose address "
	  "moves here: fence its MDS session, grace period for its clients' reclaims", asok_nfs_takeover },
};

int nfs4_asok_attach(struct nfs4_server *srv, struct asok *a)
{
	int r = 0;

	pthread_mutex_lock(&asok_lock);
	asok_srv = srv;
	if (a && asok_registered != a) {
		r = asok_register(a, nfs4_cmds, sizeof(nfs4_cmds) / sizeof(nfs4_cmds[0]), NULL);
		if (!r)
			asok_registered = a;
	}
	pthread_mutex_unlock(&asok_lock);
	return r;
}

void nfs4_server_destroy(struct nfs4_server *srv)
{
	struct nfs4_client *clp, *expired = NULL;

	if (!srv)
		return;
	pthread_mutex_lock(&asok_lock);
	if (asok_srv == srv)
		asok_srv = NULL;
	while (asok_busy)               /* a takeover on it (on the one server there is) */
		pthread_cond_wait(&asok_idle, &asok_lock);
	pthread_mutex_unlock(&asok_lock);
	if (srv->reaper_started) {
		pthread_mutex_lock(&srv->lock);
		srv->stopping = true;
		pthread_cond_broadcast(&srv->reaper_cond);
		pthread_mutex_unlock(&srv->lock);
		pthread_join(srv->reaper, NULL);
	}
	nfs4_cb_stop(srv);       /* no call in flight while the clients go */
	atomic_store(&srv->keep_records, true);   /* they reclaim from the next incarnation */
	pthread_mutex_lock(&srv->lock);
	while ((clp = srv->clients)) {
		nfs4_client_expire_locked(srv, clp, false);
		clp->next = expired;
		expired = clp;
	}
	while (srv->expired) {
		struct nfs4_expired *e = srv->expired;

		srv->expired = e->next;
		expired_free(e);
	}
	pthread_mutex_unlock(&srv->lock);
	if (srv->perf_registered)
		perf_unregister_group(srv->p.perf_group);
	while ((clp = expired)) {
		expired = clp->next;
		nfs4_client_release(srv, clp);
	}
	nfs4ops_ctx_destroy(srv);   /* after the clients: their release uses it */
	nfs4_rec_free(srv);
	nfs4_cb_free(srv);
	pthread_cond_destroy(&srv->reaper_cond);
	pthread_mutex_destroy(&srv->lock);
	if (srv->own_exports) {
		nfs_export_set_fini(srv->own_exports);
		free(srv->own_exports);
	}
	free(srv);
}
