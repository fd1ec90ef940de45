/*
 * recovery.c - the NFSv4 client records on stable storage (recovery.h):
 * who may reclaim after a gateway restart, and how long the grace period
 * after a start lasts.
 *
 * The design is nfs-ganesha's rados_kv: one object per gateway, an omap
 * key per client, the previous incarnation's keys read at start into a
 * list of "old" records that stays in memory until the grace period is
 * over.  The same key is rewritten when a client comes back, so a gateway
 * that dies again during its grace loses nothing: the clients that came
 * back are recorded (again), those that did not still are.  Removing a
 * record is guarded by an omap compare with the exact value written (it
 * carries the client id), so removing an old incarnation never removes the
 * record of the client that replaced it, whichever I/O lands first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs_gw/nfs4/recovery.h"
#include "store/store.h"

/* A record the previous incarnation left; protected by rec->lock. */
struct old_rec {
	struct nfs4_rec r;
	char key[NFS4_REC_KEY_MAX + 1];
	uint8_t val[NFS4_REC_MAX];       /* as stored: removal compares it */
	size_t val_len;
	bool back;                       /* recorded again by this incarnation */
	bool done;                       /* sent RECLAIM_COMPLETE */
	bool theirs;                     /* from the object of the gateway taken over */
	struct old_rec *next;
};

struct nfs4_recovery {
	struct store_pool *pool;         /* the client library's data pool (not owned) */
	char oid[300];
	bool degraded;                   /* the records could not be read: anyone reclaims */
	uint64_t start_ns;               /* mono ns of the start */
	pthread_mutex_t lock;            /* leaf; never across I/O */
	struct old_rec *old;             /* protected by lock */
	unsigned int nold, nold40;       /* protected by lock */
	bool finished;                   /* protected by lock: grace over, old records dropped */
	uint64_t noted_sid;              /* protected by lock: the session named in our object */
	uint64_t noted_err_sid;          /* protected by lock: failed to name it (logged once) */
	/* a takeover (nfs4_rec_takeover), protected by lock; only while not finished */
	bool takeover;
	bool taking;                     /* nfs4_rec_takeover runs (one at a time) */
	char their_id[256];
	char their_oid[300];
	uint8_t their_session[128];      /* its REC_SESSION_KEY value as read */
	size_t their_session_len;
};

/*
 * The omap key naming the gateway's MDS session (id and client uuid), which
 * a gateway taking over evicts and fences.  Not hex: never a client's key.
 */
#define REC_SESSION_KEY "gateway_session"

/* ---- the record format --------------------------------------------------- */

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
	return p + 4;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

size_t nfs4_rec_encode(const struct nfs4_rec *r, uint8_t *buf)
{
	uint8_t *p = buf + 4;
	uint32_t olen = r->owner_len > NFS4_OPAQUE_LIMIT ? NFS4_OPAQUE_LIMIT : r->owner_len;
	size_t body;

	p = put32(p, (uint32_t)(r->clientid >> 32));
	p = put32(p, (uint32_t)r->clientid);
	p = put32(p, r->boot);
	p = put32(p, r->minorversion);
	memcpy(p, r->verifier, NFS4_VERIFIER_SIZE);
	p += NFS4_VERIFIER_SIZE;
	p = put32(p, r->flavor);
	p = put32(p, r->uid);
	p = put32(p, r->gid);
	p = put32(p, olen);
	memcpy(p, r->owner, olen);
	p += olen;
	body = (size_t)(p - buf) - 4;
	buf[0] = NFS4_REC_VERSION;
	buf[1] = NFS4_REC_COMPAT;
	buf[2] = (uint8_t)(body >> 8);
	buf[3] = (uint8_t)body;
	return body + 4;
}

int nfs4_rec_decode(const uint8_t *buf, size_t len, struct nfs4_rec *r)
{
	const uint8_t *p, *end;
	size_t body;

	if (len < 4)
		return -EINVAL;
	if (buf[1] > NFS4_REC_VERSION)   /* compat: the oldest reader that understands it */
		return -EINVAL;
	body = (size_t)buf[2] << 8 | buf[3];
	if (body > len - 4 || body < 40)         /* the fixed fields */
		return -EINVAL;
	p = buf + 4;
	end = p + body;
	memset(r, 0, sizeof(*r));
	r->clientid = (uint64_t)get32(p) << 32 | get32(p + 4);
	r->boot = get32(p + 8);
	r->minorversion = get32(p + 12);
	memcpy(r->verifier, p + 16, NFS4_VERIFIER_SIZE);
	r->flavor = get32(p + 24);
	r->uid = get32(p + 28);
	r->gid = get32(p + 32);
	r->owner_len = get32(p + 36);
	p += 40;
	if (r->owner_len == 0 || r->owner_len > NFS4_OPAQUE_LIMIT || r->owner_len > (size_t)(end - p))
		return -EINVAL;
	memcpy(r->owner, p, r->owner_len);
	return 0;                        /* a newer version's tail after the owner is skipped */
}

void nfs4_rec_key(const uint8_t *owner, uint32_t len, char *key)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t n = len, i;
	char *k = key;

	/* 2 hex digits a byte: the whole owner if it fits, else a prefix and a hash */
	if (2 * (size_t)len > NFS4_REC_KEY_MAX)
		n = (NFS4_REC_KEY_MAX - 18) / 2;
	for (i = 0; i < n; i++) {
		*k++ = hex[owner[i] >> 4];
		*k++ = hex[owner[i] & 15];
	}
	if (n < len) {
		uint64_t h = 14695981039346656037ULL;

		for (i = 0; i < len; i++)
			h = (h ^ owner[i]) * 1099511628211ULL;
		k += sprintf(k, ".%016llx", (unsigned long long)h);
	}
	*k = 0;
}

static void rec_of_client(const struct nfs4_server *srv, const struct nfs4_client *clp, struct nfs4_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->clientid = clp->clientid;
	r->boot = srv->boot;
	r->minorversion = clp->minorversion;
	memcpy(r->verifier, clp->verifier, NFS4_VERIFIER_SIZE);
	r->flavor = clp->principal.flavor;
	r->uid = clp->principal.uid;
	r->gid = clp->principal.gid;
	r->owner_len = clp->owner_len;
	memcpy(r->owner, clp->owner, clp->owner_len);
}

/* ---- the gateway's MDS session ------------------------------------------------- */

/*
 * Name our MDS session (id, client uuid) in our object, so that a gateway
 * taking over our clients evicts and fences it (nfs4_rec_takeover): at
 * start, and again when the session changed (a new one after an
 * eviction): with the next client's record, or from the reaper's tick.
 * @op: add it to that operation (NULL: a write of its own, a failure
 * logged once).  Return: whether it was added to @op.
 */
static bool note_session(struct nfs4_server *srv, struct store_op *op)
{
	struct nfs4_recovery *rec = srv->rec;
	uint8_t uuid[16];
	char val[96];
	uint64_t sid = lclient_session_ident(srv->lc, uuid);
	bool own = !op;
	int n, err;

	pthread_mutex_lock(&rec->lock);
	n = sid && sid != rec->noted_sid;
	pthread_mutex_unlock(&rec->lock);
	if (!n)
		return false;
	n = snprintf(val, sizeof(val), "sid=%llu\nuuid=", (unsigned long long)sid);
	for (int i = 0; i < 16; i++)
		n += snprintf(val + n, sizeof(val) - (size_t)n, "%02x", uuid[i]);
	n += snprintf(val + n, sizeof(val) - (size_t)n, "\n");
	if (own && !(op = store_op_new()))
		return false;
	store_op_omap_set(op, REC_SESSION_KEY, val, (size_t)n);
	if (!own)
		return true;
	err = store_op_exec(rec->pool, rec->oid, op);
	if (err) {
		pthread_mutex_lock(&rec->lock);
		n = rec->noted_err_sid != sid;
		rec->noted_err_sid = sid;
		pthread_mutex_unlock(&rec->lock);
		if (n)
			derr(NFS, "nfs4 recovery: cannot name our MDS session in %s: %s (a takeover of this gateway "
				  "could not fence it; tried again every lease tick)", rec->oid, strerror(-err));
		return false;
	}
	pthread_mutex_lock(&rec->lock);
	rec->noted_sid = sid;
	pthread_mutex_unlock(&rec->lock);
	return false;
}

/* ---- start ------------------------------------------------------------------ */

static void rec_free(struct nfs4_recovery *rec)
{
	while (rec->old) {
		struct old_rec *o = rec->old;

		rec->old = o->next;
		free(o);
	}
	pthread_mutex_destroy(&rec->lock);
	free(rec);
}

void nfs4_rec_free(struct nfs4_server *srv)
{
	if (srv->rec)
		rec_free(srv->rec);
	srv->rec = NULL;
}

/*
 * A client record read back from @oid: its key, and its decoded fields
 * with the raw value.  An unreadable one was somebody: it keeps the grace,
 * nobody may reclaim by it (no owner matches) and it is never dropped.
 * Returns true when it was unreadable.
 */
static bool old_rec_fill(struct old_rec *o, const char *oid, const struct store_kv *kv)
{
	snprintf(o->key, sizeof(o->key), "%s", kv->key);
	if (nfs4_rec_decode(kv->val, kv->len, &o->r) || kv->len > sizeof(o->val)) {
		derr(NFS, "nfs4 recovery: %s: record %.64s unreadable (%zu bytes): kept", oid, kv->key, kv->len);
		o->back = true;
		o->r.owner_len = 0;
		return true;
	}
	memcpy(o->val, kv->val, kv->len);
	o->val_len = kv->len;
	return false;
}

/* nfs_gateway_id, or the host name; only characters safe in an object name. */
static void gateway_id(char *id, size_t len)
{
	cfg_str(CFG_nfs_gateway_id, id, len);
	if (!id[0] && gethostname(id, len - 1) != 0)
		snprintf(id, len, "localhost");
	id[len - 1] = 0;
	for (char *c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '.' || *c == '-' || *c == '_'))
			*c = '_';
}

int nfs4_rec_start(struct nfs4_server *srv, uint64_t *grace_ns)
{
	uint64_t grace = (uint64_t)(cfg_double(CFG_nfs4_grace_time) * 1e9);
	struct nfs4_recovery *rec;
	struct store_omap_iter it;
	const struct store_kv *kv;
	char id[256];
	unsigned int bad = 0;
	int r;

	srv->rec = NULL;
	*grace_ns = grace;
	if (!srv->lc || !lclient_data_pool(srv->lc))
		return 0;                /* no store (unit tests): as before records */
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	pthread_mutex_init(&rec->lock, NULL);
	rec->pool = lclient_data_pool(srv->lc);
	rec->start_ns = now_mono_ns();
	gateway_id(id, sizeof(id));
	snprintf(rec->oid, sizeof(rec->oid), "nfs4_recovery.%s", id);
	store_omap_iter_init(&it, rec->pool, rec->oid, NULL, 256);
	while ((kv = store_omap_iter_next(&it)) != NULL) {
		struct old_rec *o;

		if (!strcmp(kv->key, REC_SESSION_KEY))
			continue;        /* our predecessor's session: not a client */
		o = calloc(1, sizeof(*o));
		if (!o) {
			store_omap_iter_end(&it);
			rec_free(rec);
			return -ENOMEM;
		}
		if (old_rec_fill(o, rec->oid, kv))
			bad++;
		if (o->r.minorversion == 0 && o->r.owner_len)
			rec->nold40++;
		o->next = rec->old;
		rec->old = o;
		rec->nold++;
	}
	r = store_omap_iter_end(&it);
	if (r) {
		derr(NFS, "nfs4 recovery: cannot read the client records %s: %s; full grace period of %.0fs, "
			  "any client may reclaim", rec->oid, strerror(-r), grace / 1e9);
		rec->degraded = true;
		rec->finished = true;
	} else if (!rec->nold) {
		dinfo(NFS, "nfs4 recovery: gateway %s (%s): no clients recorded: no grace period", id, rec->oid);
		*grace_ns = 0;
		rec->finished = true;
	} else if (!grace) {
		dinfo(NFS, "nfs4 recovery: gateway %s (%s): %u clients recorded (%u NFSv4.0), but nfs4_grace_time "
			   "is 0: no grace period", id, rec->oid, rec->nold, rec->nold40);
	} else {
		dinfo(NFS, "nfs4 recovery: gateway %s (%s): %u clients recorded (%u NFSv4.0%s): grace period of "
			   "%.0fs starts",
		      id, rec->oid, rec->nold, rec->nold40, bad ? ", some unreadable" : "", grace / 1e9);
	}
	srv->rec = rec;
	note_session(srv, NULL);
	return 0;
}

/* ---- clients ------------------------------------------------------------------- */

/* The previous incarnation's record of @owner, or NULL.  Caller holds rec->lock. */
static struct old_rec *old_find_locked(struct nfs4_recovery *rec, const uint8_t *owner, uint32_t len)
{
	for (struct old_rec *o = rec->old; o; o = o->next)
		if (o->r.owner_len == len && !memcmp(o->r.owner, owner, len))
			return o;
	return NULL;
}

/*
 * The previous incarnation's record of @clp: its owner, and the principal
 * that established it then (nfsdcld v2 compares a hash of it too: an
 * owner string alone is easy to guess), or NULL.  Caller holds rec->lock.
 */
static struct old_rec *old_of_locked(struct nfs4_recovery *rec, const struct nfs4_client *clp)
{
	struct old_rec *o = old_find_locked(rec, clp->owner, clp->owner_len);

	if (o && o->r.flavor == clp->principal.flavor && o->r.uid == clp->principal.uid &&
	    o->r.gid == clp->principal.gid)
		return o;
	return NULL;
}

int nfs4_rec_record(struct nfs4_server *srv, struct nfs4_client *clp)
{
	struct nfs4_recovery *rec = srv->rec;
	char key[NFS4_REC_KEY_MAX + 1];
	uint8_t val[NFS4_REC_MAX];
	struct nfs4_rec r;
	struct store_op *op;
	struct old_rec *o;
	uint64_t noted;
	uint8_t uuid[16];
	size_t len;
	int err;

	if (!rec || atomic_load(&clp->recorded))
		return 0;
	rec_of_client(srv, clp, &r);
	len = nfs4_rec_encode(&r, val);
	nfs4_rec_key(clp->owner, clp->owner_len, key);
	op = store_op_new();
	if (!op)
		return -ENOMEM;
	store_op_omap_set(op, key, val, len);
	noted = note_session(srv, op) ? lclient_session_ident(srv->lc, uuid) : 0;
	err = store_op_exec(rec->pool, rec->oid, op);
	if (err) {
		derr(NFS, "nfs4 recovery: client %#llx (%s): cannot record it in %s: %s", (unsigned long long)clp->clientid,
		     clp->addr, rec->oid, strerror(-err));
		return err;
	}
	dout(NFS, 5, "nfs4 recovery: client %#llx recorded", (unsigned long long)clp->clientid);
	pthread_mutex_lock(&rec->lock);
	/* two first OPENs may both have written it: the same bytes */
	memcpy(clp->rec_val, val, len);
	clp->rec_len = len;
	atomic_store(&clp->recorded, true);
	if (noted)
		rec->noted_sid = noted;
	o = old_find_locked(rec, clp->owner, clp->owner_len);
	if (o)
		o->back = true;          /* its key now holds our record: never drop it as an old one */
	pthread_mutex_unlock(&rec->lock);
	return 0;
}

/* Remove @key of object @oid if it still holds exactly @val. */
static int remove_if(struct nfs4_recovery *rec, const char *oid, const char *key, const uint8_t *val, size_t len)
{
	struct store_op *op = store_op_new();
	int err;

	if (!op)
		return -ENOMEM;
	store_op_omap_cmp(op, key, val, len);
	store_op_omap_rm(op, key);
	err = store_op_exec(rec->pool, oid, op);
	return err == -ECANCELED ? 0 : err;     /* replaced (or gone) meanwhile: not ours to remove */
}

void nfs4_rec_forget(struct nfs4_server *srv, struct nfs4_client *clp)
{
	struct nfs4_recovery *rec = srv->rec;
	char key[NFS4_REC_KEY_MAX + 1];
	uint8_t val[NFS4_REC_MAX];
	size_t len;
	int err;

	if (!rec)
		return;
	pthread_mutex_lock(&rec->lock);
	len = clp->rec_len;
	memcpy(val, clp->rec_val, len);
	if (!atomic_exchange(&clp->recorded, false))
		len = 0;
	pthread_mutex_unlock(&rec->lock);
	if (!len)
		return;
	nfs4_rec_key(clp->owner, clp->owner_len, key);
	err = remove_if(rec, rec->oid, key, val, len);
	if (err)
		derr(NFS, "nfs4 recovery: client %#llx: cannot remove its record from %s: %s",
		     (unsigned long long)clp->clientid, rec->oid, strerror(-err));
	else
		dout(NFS, 5, "nfs4 recovery: client %#llx: record removed", (unsigned long long)clp->clientid);
}

bool nfs4_rec_may_reclaim(struct nfs4_server *srv, const struct nfs4_client *clp)
{
	struct nfs4_recovery *rec = srv->rec;
	bool ok;

	if (!rec || rec->degraded)
		return true;
	pthread_mutex_lock(&rec->lock);
	ok = old_of_locked(rec, clp) != NULL;
	pthread_mutex_unlock(&rec->lock);
	return ok;
}

void nfs4_rec_reclaim_complete(struct nfs4_server *srv, const struct nfs4_client *clp)
{
	struct nfs4_recovery *rec = srv->rec;
	struct nfs4ops_ctx *c = srv->ops_ctx;
	unsigned int left = 0, n;
	struct old_rec *o;
	bool lift = false;

	if (!rec || !c)
		return;
	pthread_mutex_lock(&rec->lock);
	o = old_of_locked(rec, clp);    /* not an impostor's RECLAIM_COMPLETE */
	if (o)
		o->done = true;
	for (o = rec->old; o; o = o->next)
		left += !o->done;
	n = rec->nold;
	if (!rec->finished && !left && !rec->nold40 && os_in_grace(c->st))
		lift = true;
	pthread_mutex_unlock(&rec->lock);
	if (lift) {
		os_end_grace(c->st);
		dinfo(NFS, "nfs4 recovery: grace period lifted early after %.1fs: all %u recorded clients sent "
			   "RECLAIM_COMPLETE", mono_since(now_mono_ns(), rec->start_ns) / 1e9, n);
		nfs4_rec_tick(srv);
	}
}

void nfs4_rec_tick(struct nfs4_server *srv)
{
	struct nfs4_recovery *rec = srv->rec;
	struct nfs4ops_ctx *c = srv->ops_ctx;
	struct old_rec *o, *gone = NULL, *moved = NULL, **pp;
	unsigned int ndropped = 0, nback = 0, nmoved = 0;
	char their_id[256], their_oid[300];
	uint8_t their_session[128];
	size_t their_session_len;
	bool takeover;

	if (!rec || !c)
		return;
	/* a new MDS session (after an eviction): named for a takeover at once,
	 * not only with the next client's record */
	note_session(srv, NULL);
	if (os_in_grace(c->st))
		return;
	pthread_mutex_lock(&rec->lock);
	if (rec->finished) {
		pthread_mutex_unlock(&rec->lock);
		return;
	}
	rec->finished = true;
	takeover = rec->takeover;
	rec->takeover = false;
	snprintf(their_id, sizeof(their_id), "%s", rec->their_id);
	snprintf(their_oid, sizeof(their_oid), "%s", rec->their_oid);
	their_session_len = rec->their_session_len;
	memcpy(their_session, rec->their_session, their_session_len);
	/* the old list is read by nothing else from here on but
	 * nfs4_rec_may_reclaim, which only matters in grace: take the ones to
	 * drop off it; after a takeover also those that came back (they are
	 * recorded in our object now: theirs is merged into ours) */
	for (pp = &rec->old; (o = *pp);) {
		nback += o->back && o->val_len;
		if (!o->val_len || (o->back && !o->theirs)) {
			pp = &o->next;
			continue;
		}
		*pp = o->next;
		if (o->back) {
			o->next = moved;
			moved = o;
		} else {
			o->next = gone;
			gone = o;
		}
	}
	pthread_mutex_unlock(&rec->lock);
	while ((o = gone)) {
		int err;

		gone = o->next;
		err = remove_if(rec, o->theirs ? their_oid : rec->oid, o->key, o->val, o->val_len);
		if (err)
			derr(NFS, "nfs4 recovery: cannot drop the record of a client that did not come back (%.64s): %s",
			     o->key, strerror(-err));
		else
			ndropped++;
		free(o);
	}
	while ((o = moved)) {
		moved = o->next;
		if (remove_if(rec, their_oid, o->key, o->val, o->val_len) == 0)
			nmoved++;
		free(o);
	}
	if (takeover) {
		struct store_op *op = store_op_new();

		/* its session was evicted: nothing more to fence there (unless
		 * it was restarted meanwhile and named a new one) */
		if (op) {
			store_op_omap_cmp(op, REC_SESSION_KEY, their_session, their_session_len);
			store_op_omap_rm(op, REC_SESSION_KEY);
			(void)store_op_exec(rec->pool, their_oid, op);
		}
		dinfo(NFS, "nfs4 recovery: takeover of gateway %s: grace period over after %.1fs: %u of its clients "
			   "came back (%u records moved to %s), %u records of clients that did not dropped", their_id,
		      mono_since(now_mono_ns(), rec->start_ns) / 1e9, nback, nmoved, rec->oid, ndropped);
		return;
	}
	dinfo(NFS, "nfs4 recovery: grace period over after %.1fs: %u recorded clients came back, %u records of "
		   "clients that did not dropped", mono_since(now_mono_ns(), rec->start_ns) / 1e9, nback, ndropped);
}

/* ---- takeover -------------------------------------------------------------------- */

/* Parse the value of REC_SESSION_KEY ("sid=N\nuuid=32 hex\n"): 0 or -EINVAL. */
static int parse_session(const uint8_t *val, size_t len, uint64_t *sid, uint8_t *uuid)
{
	char buf[128], *u, *end;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, val, len);
	buf[len] = 0;
	if (strncmp(buf, "sid=", 4) || !(u = strstr(buf, "\nuuid=")))
		return -EINVAL;
	*sid = strtoull(buf + 4, &end, 10);
	if (end == buf + 4 || !*sid)
		return -EINVAL;
	u += 6;
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(u + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		uuid[i] = (uint8_t)b;
	}
	return 0;
}

int nfs4_rec_takeover(struct nfs4_server *srv, const char *id, char *msg, size_t msglen)
{
	uint64_t grace = (uint64_t)(cfg_double(CFG_nfs4_grace_time) * 1e9), sid = 0;
	struct nfs4_recovery *rec = srv->rec;
	struct nfs4ops_ctx *c = srv->ops_ctx;
	struct old_rec *list = NULL, *o, *prev;
	unsigned int n = 0, n40 = 0;
	struct store_omap_iter it;
	const struct store_kv *kv;
	char oid[300], mine[256];
	uint8_t uuid[16], sval[128];
	size_t slen = 0;
	uint64_t t0 = now_mono_ns();
	bool append;
	int r;

	if (!rec || !c || rec->degraded) {
		snprintf(msg, msglen, "this gateway has no client records (%s)", !rec || !c ? "no store" :
			 "its own could not be read at start");
		return -EOPNOTSUPP;
	}
	if (!*id || strlen(id) >= sizeof(rec->their_id) || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
								     "WXYZ0123456789.-_") != strlen(id)) {
		snprintf(msg, msglen, "bad gateway id '%.64s'", id);
		return -EINVAL;
	}
	gateway_id(mine, sizeof(mine));
	if (!strcmp(id, mine)) {
		snprintf(msg, msglen, "%s is this gateway's own id", id);
		return -EINVAL;
	}
	/* in the grace period of our own start (we restarted, then they
	 * died): theirs join our records for the one grace; in another
	 * takeover's, or in a grace without records: try later */
	pthread_mutex_lock(&rec->lock);
	append = !rec->finished;
	r = rec->takeover || rec->taking || (rec->finished && os_in_grace(c->st));
	if (!r)
		rec->taking = true;
	pthread_mutex_unlock(&rec->lock);
	if (r) {
		snprintf(msg, msglen, "this gateway is in the grace period of another takeover: try again when it "
			 "is over");
		return -EBUSY;
	}
	snprintf(oid, sizeof(oid), "nfs4_recovery.%s", id);
	store_omap_iter_init(&it, rec->pool, oid, NULL, 256);
	while ((kv = store_omap_iter_next(&it)) != NULL) {
		if (!strcmp(kv->key, REC_SESSION_KEY)) {
			if (parse_session(kv->val, kv->len, &sid, uuid))
				sid = 0;
			else
				memcpy(sval, kv->val, slen = kv->len);   /* < 128: parse_session checked */
			continue;
		}
		o = calloc(1, sizeof(*o));
		if (!o) {
			r = -ENOMEM;
			break;
		}
		o->theirs = true;
		old_rec_fill(o, oid, kv);
		if (o->r.minorversion == 0 && o->r.owner_len)
			n40++;
		o->next = list;
		list = o;
		n++;
	}
	if (r)
		store_omap_iter_end(&it);
	else
		r = store_omap_iter_end(&it);
	if (!r && !sid && n) {
		snprintf(msg, msglen, "%s names no MDS session to fence: not taken over (a gateway of an older "
			 "version? evict its session with `loligo client evict` and stop it first)", oid);
		r = -ESRCH;
	} else if (!r && !sid && !n) {
		snprintf(msg, msglen, "%s is empty or missing: gateway %s has no clients to take over", oid, id);
		r = -ENOENT;
	} else if (r && r != -ESRCH) {
		snprintf(msg, msglen, "cannot read %s: %s", oid, strerror(-r));
	}
	if (r) {
		while ((o = list)) {
			list = o->next;
			free(o);
		}
		derr(NFS, "nfs4 recovery: takeover of gateway %s refused: %s", id, msg);
		pthread_mutex_lock(&rec->lock);
		rec->taking = false;
		pthread_mutex_unlock(&rec->lock);
		return r;
	}
	/*
	 * The grace period first, then the fence: from the moment the dead
	 * gateway's locks are released at the MDS, none of our clients gets a
	 * lock or an open that one of its clients may still reclaim.  The
	 * grace is the whole gateway's (as knfsd's and ganesha's): our own
	 * clients' new opens and locks wait too; their I/O, renewals and
	 * unlocks do not.
	 */
	if (n && grace)
		os_start_grace(c->st, grace);    /* before finished goes false: the reaper's tick */
	pthread_mutex_lock(&rec->lock);
	if (append && rec->finished)
		append = false;          /* the start's grace ran out meanwhile */
	if (append) {
		/* our start's grace runs: its records stay what they are */
		prev = NULL;
		for (o = list; o && o->next; o = o->next)
			;
		if (o) {
			o->next = rec->old;
			rec->old = list;
		}
		rec->nold += n;
		rec->nold40 += n40;
	} else {
		prev = rec->old;         /* the start's: all finished, came back or unreadable */
		rec->old = list;
		rec->nold = n;
		rec->nold40 = n40;
		rec->finished = !n || !grace;
		rec->start_ns = t0;
	}
	rec->takeover = true;
	memcpy(rec->their_session, sval, slen);
	rec->their_session_len = slen;
	snprintf(rec->their_id, sizeof(rec->their_id), "%s", id);
	snprintf(rec->their_oid, sizeof(rec->their_oid), "%s", oid);
	pthread_mutex_unlock(&rec->lock);
	while ((o = prev)) {
		prev = o->next;
		free(o);
	}
	r = lclient_reclaim_session(srv->lc, sid, uuid);
	if (r) {
		/* not fenced: it may be alive and its clients with it; leave them */
		struct old_rec **pp;

		pthread_mutex_lock(&rec->lock);
		list = NULL;
		for (pp = &rec->old; (o = *pp);) {
			if (!o->theirs) {
				pp = &o->next;
				continue;
			}
			*pp = o->next;
			o->next = list;
			list = o;
		}
		rec->nold -= n;
		rec->nold40 -= n40;
		rec->takeover = false;
		rec->taking = false;
		if (!append)
			rec->finished = true;
		pthread_mutex_unlock(&rec->lock);
		if (!append)
			os_end_grace(c->st);     /* ours, for nothing: our start's is left alone */
		while ((o = list)) {
			list = o->next;
			free(o);
		}
		snprintf(msg, msglen, "the MDS did not evict session %llu of gateway %s: %s%s",
			 (unsigned long long)sid, id, strerror(-r),
			 r == -EPERM ? " (it belongs to another client name)" :
			 r == -EOPNOTSUPP ? " (an MDS older than the takeover)" : "");
		derr(NFS, "nfs4 recovery: takeover of gateway %s failed: %s", id, msg);
		return r;
	}
	if (n && grace)
		snprintf(msg, msglen, "took over gateway %s (%s): its MDS session %llu fenced in %.1f ms, %u clients "
			 "recorded (%u NFSv4.0): grace period of %.0fs starts (new opens and locks of every client wait)",
			 id, oid, (unsigned long long)sid, mono_since(now_mono_ns(), t0) / 1e6, n, n40, grace / 1e9);
	else
		snprintf(msg, msglen, "took over gateway %s (%s): its MDS session %llu fenced in %.1f ms, %u clients "
			 "recorded: no grace period", id, oid, (unsigned long long)sid,
			 mono_since(now_mono_ns(), t0) / 1e6, n);
	dinfo(NFS, "nfs4 recovery: %s", msg);
	pthread_mutex_lock(&rec->lock);
	rec->taking = false;
	if (!append && (!n || !grace))
		rec->finished = false;   /* nothing to wait for: merge (drop) at once */
	pthread_mutex_unlock(&rec->lock);
	if (!append && (!n || !grace))
		nfs4_rec_tick(srv);
	return 0;
}
