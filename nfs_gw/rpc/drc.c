/*
 * drc.c - the duplicate reply cache with implied-ACK eviction (see drc.h).
 *
 * Layout: a power-of-two array of buckets, each a mutex and one list that
 * is both the hash chain and the bucket's age order (oldest first; a hit
 * moves an entry to the tail).  Each entry is also on its transport's list
 * (xprt->drc_entries), so a lookup first evicts every entry of its own
 * transport that the new request acknowledges, wherever it hashes
 * (ack_transport); then it walks its chain once, finding the match and
 * evicting whatever else may go (knfsd prunes the bucket it looks in the
 * same way).  A cache kept small by implied ACKs is a cache with short
 * chains.  A one-second tick from the ring thread (drc_prune) catches
 * expiries in buckets nobody looks in, and replies whose TCP ACK came in
 * after the newer request.
 *
 * Why both halves of the implied ACK (drc.h): the transport stops reading
 * a connection at its in-flight limit and resumes after a reply goes out,
 * so requests a pipelining client sent long before it had that reply are
 * parsed after it was sent.  Comparing receive-stream offsets against the
 * kernel's byte count at the moment the reply was written (rx_mark) makes
 * "newer" mean "arrived later", whatever the gateway's own buffering; the
 * TCP ACK (tx_end against tx_acked) makes sure the reply at least reached
 * the client's kernel.
 *
 * Lock order: bucket lock, then xprt->drc_lock (to link and unlink).
 *
 * The match is taken before pruning decisions on it: a retransmission on
 * the *same* connection is itself a newer request, which would otherwise
 * make its own entry look acknowledged just before we find it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/crc32c.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

enum entry_state { ST_INPROGRESS, ST_DONE };

struct drc_entry {
	struct drc_entry *prev, *next;   /* bucket list; protected by bucket lock */
	struct drc_entry *xprev, *xnext; /* xprt->drc_entries; protected by xprt->drc_lock */
	struct drc_key key;
	struct rpc_xprt *xprt;           /* reference */
	unsigned int bucket;
	enum entry_state state;          /* protected by bucket lock */
	bool linked;                     /* protected by bucket lock */
	uint64_t created;
	uint64_t done_at;                /* protected by bucket lock */
	/* drc_reply_sent(): rx_mark is stored before tx_end (release), read
	 * after it (acquire); tx_end 0: not (re)sent yet */
	_Atomic uint64_t tx_end;
	_Atomic uint64_t rx_mark;
	uint8_t *reply;                  /* protected by bucket lock (immutable once DONE) */
	size_t reply_len;
	_Atomic int refs;
};

struct bucket {
	pthread_mutex_t lock;
	struct drc_entry *head, *tail;   /* protected by lock */
	unsigned int len;                /* protected by lock */
};

struct drc {
	struct drc_params p;
	unsigned int mask;
	struct bucket *b;
	_Atomic uint64_t population;
	_Atomic unsigned int cursor;     /* size eviction: next bucket to try */
	struct perf_counter hits, misses, inserts, inprogress, uncached;
	struct perf_counter ev[DRC_EV_MAX];
	struct perf_counter size_skipped_pinned;
	struct perf_counter longest_chain;
	struct hist lookup_ns;
	char *perf_group;
};

static const char *const reason_names[DRC_EV_MAX] = {
	[DRC_EV_IMPLIED_ACK] = "implied_ack",
	[DRC_EV_EXPIRED] = "expired",
	[DRC_EV_CLOSED] = "closed",
	[DRC_EV_SIZE] = "size",
};

void drc_params_from_config(struct drc_params *p)
{
	char mode[32];

	memset(p, 0, sizeof(*p));
	p->buckets = (unsigned int)cfg_uint(CFG_nfs_drc_buckets);
	p->max_entries = (unsigned int)cfg_uint(CFG_nfs_drc_max_entries);
	p->expiry_ns = (uint64_t)(cfg_double(CFG_nfs_drc_expiry) * 1e9);
	p->csum_len = cfg_uint(CFG_nfs_drc_csum_len);
	p->max_reply = cfg_uint(CFG_nfs_drc_max_reply);
	cfg_str(CFG_nfs_drc_mode, mode, sizeof(mode));
	p->mode = strcmp(mode, "expiry") == 0 ? DRC_MODE_EXPIRY : DRC_MODE_IMPLIED_ACK;
	if (strcmp(mode, "expiry") && strcmp(mode, "implied_ack"))
		derr(RPC, "nfs_drc_mode '%s' unknown (implied_ack or expiry): using implied_ack", mode);
	p->perf_group = "drc";
}

static uint64_t now(const struct drc *d)
{
	return d->p.clock ? d->p.clock() : now_mono_ns();
}

int drc_create(const struct drc_params *p, struct drc **out)
{
	struct drc *d;
	unsigned int n = 1, i;

	if (!p->max_entries)
		return -EINVAL;
	while (n < p->buckets && n < (1u << 24))
		n <<= 1;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->p = *p;
	d->mask = n - 1;
	d->b = calloc(n, sizeof(*d->b));
	if (!d->b) {
		free(d);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		pthread_mutex_init(&d->b[i].lock, NULL);
	if (p->perf_group) {
		const char *g = p->perf_group;
		d->perf_group = strdup(g);
		d->p.perf_group = d->perf_group;
		perf_register_counter(g, "hits", &d->hits);
		perf_register_counter(g, "misses", &d->misses);
		perf_register_counter(g, "inserts", &d->inserts);
		perf_register_counter(g, "inprogress_drops", &d->inprogress);
		perf_register_counter(g, "uncached", &d->uncached);
		perf_register_counter(g, "evict_implied_ack", &d->ev[DRC_EV_IMPLIED_ACK]);
		perf_register_counter(g, "evict_expired", &d->ev[DRC_EV_EXPIRED]);
		perf_register_counter(g, "evict_closed", &d->ev[DRC_EV_CLOSED]);
		perf_register_counter(g, "evict_size", &d->ev[DRC_EV_SIZE]);
		perf_register_counter(g, "size_skipped_pinned", &d->size_skipped_pinned);
		perf_register_counter(g, "longest_chain", &d->longest_chain);
		perf_register_hist(g, "lookup", &d->lookup_ns);
	}
	*out = d;
	return 0;
}

static void entry_free(struct drc_entry *e)
{
	rpc_xprt_put(e->xprt);
	free(e->reply);
	free(e);
}

void drc_entry_put(struct drc_entry *e)
{
	if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
		entry_free(e);
}

static void unlink_locked(struct drc *d, struct bucket *b, struct drc_entry *e)
{
	/* caller holds b->lock */
	struct rpc_xprt *x = e->xprt;

	pthread_mutex_lock(&x->drc_lock);
	if (e->xprev)
		e->xprev->xnext = e->xnext;
	else
		x->drc_entries = e->xnext;
	if (e->xnext)
		e->xnext->xprev = e->xprev;
	e->xprev = e->xnext = NULL;
	atomic_fetch_sub_explicit(&x->drc_count, 1, memory_order_relaxed);
	pthread_mutex_unlock(&x->drc_lock);
	if (e->prev)
		e->prev->next = e->next;
	else
		b->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		b->tail = e->prev;
	e->prev = e->next = NULL;
	e->linked = false;
	b->len--;
	atomic_fetch_sub_explicit(&d->population, 1, memory_order_relaxed);
}

static void append_locked(struct drc *d, struct bucket *b, struct drc_entry *e)
{
	/* caller holds b->lock */
	e->next = NULL;
	e->prev = b->tail;
	if (b->tail)
		b->tail->next = e;
	else
		b->head = e;
	b->tail = e;
	e->linked = true;
	b->len++;
	pthread_mutex_lock(&e->xprt->drc_lock);
	e->xprev = NULL;
	e->xnext = e->xprt->drc_entries;
	if (e->xnext)
		e->xnext->xprev = e;
	e->xprt->drc_entries = e;
	atomic_fetch_add_explicit(&e->xprt->drc_count, 1, memory_order_relaxed);
	pthread_mutex_unlock(&e->xprt->drc_lock);
	atomic_fetch_add_explicit(&d->population, 1, memory_order_relaxed);
}

static void evict_locked(struct drc *d, struct bucket *b, struct drc_entry *e, enum drc_evict_reason why,
			 uint64_t t)
{
	/* caller holds b->lock */
	DTRACE_PROBE4(loligo, drc_evict, e->key.xid, (int)why, e->xprt->id, t - e->done_at);
	dout(RPC, 20, "drc: evict xid %#x (%s) xprt %llu", e->key.xid, reason_names[why],
	     (unsigned long long)e->xprt->id);
	unlink_locked(d, b, e);
	perf_inc(&d->ev[why], 1);
	drc_entry_put(e);
}

/* Has the peer's TCP acknowledged @e's reply (as far as the transport last
 * looked)?  Datagram transports have no such notion: always true. */
static bool reply_acked(struct drc_entry *e)
{
	uint64_t end = atomic_load_explicit(&e->tx_end, memory_order_acquire);

	if (!e->xprt->conn_oriented)
		return true;
	return end && atomic_load_explicit(&e->xprt->tx_acked, memory_order_acquire) >= end;
}

/* The implied ACK proper (drc.h): a record that arrived after the reply was
 * written has been handed to the service, and the peer acknowledged the
 * reply's last byte. */
static bool implied_ack(struct drc_entry *e)
{
	uint64_t end = atomic_load_explicit(&e->tx_end, memory_order_acquire);
	uint64_t mark = atomic_load_explicit(&e->rx_mark, memory_order_relaxed);

	return end && atomic_load_explicit(&e->xprt->rx_parsed, memory_order_acquire) > mark &&
	       atomic_load_explicit(&e->xprt->tx_acked, memory_order_acquire) >= end;
}

/* Size eviction may not take it: in progress, or the client may not have
 * the reply.  Caller holds the bucket lock. */
static bool pinned_locked(struct drc_entry *e)
{
	return e->state != ST_DONE || !reply_acked(e);
}

/* May @e go now?  Return the reason, or -1.  Caller holds the bucket lock. */
static int prunable_locked(const struct drc *d, struct drc_entry *e, uint64_t t)
{
	struct rpc_xprt *x = e->xprt;
	uint64_t closed, since;

	if (e->state != ST_DONE)
		return -1;
	/* @t may be older than done_at: a lookup's clock was read before
	 * another worker finished this entry */
	if (d->p.mode == DRC_MODE_EXPIRY || !x->conn_oriented)
		return t >= e->done_at && t - e->done_at >= d->p.expiry_ns ? DRC_EV_EXPIRED : -1;
	closed = atomic_load_explicit(&x->closed_at, memory_order_acquire);
	if (closed) {
		/* the retransmission can only come after the close */
		since = closed > e->done_at ? closed : e->done_at;
		return t >= since && t - since >= d->p.expiry_ns ? DRC_EV_CLOSED : -1;
	}
	return implied_ack(e) ? DRC_EV_IMPLIED_ACK : -1;
}

static bool key_eq(const struct drc_key *a, const struct drc_key *b)
{
	return a->xid == b->xid && a->csum == b->csum && a->proc == b->proc && a->prog == b->prog &&
	       a->flavor == b->flavor &&
	       a->vers == b->vers && a->args_len == b->args_len && a->family == b->family &&
	       a->port == b->port && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static unsigned int key_hash(const struct drc_key *k)
{
	/* xids are sequential per client: mix so neighbours spread out */
	uint32_t h = k->xid * 0x9e3779b1u;

	h ^= k->csum;
	h ^= (uint32_t)k->port << 16;
	h *= 0x85ebca6bu;
	h ^= h >> 15;
	return h;
}

void drc_make_key(const struct drc *d, const struct rpc_call *c, const struct rpc_xprt *x, struct drc_key *k)
{
	size_t n = c->args_len < d->p.csum_len ? c->args_len : d->p.csum_len;

	memset(k, 0, sizeof(*k));
	k->xid = c->xid;
	k->prog = c->prog;
	k->vers = c->vers;
	k->proc = c->proc;
	/* for RPCSEC_GSS, c->args are the unwrapped arguments (without the
	 * seq_num): a retransmission, which carries a new seq_num, matches */
	k->flavor = c->cred.flavor;
	k->args_len = (uint32_t)c->args_len;
	k->csum = n ? crc32c(0, c->args, n) : 0;
	if (c->cred.flavor == RPCSEC_GSS)  /* another principal's call is not a retransmission */
		k->csum ^= (c->cred.uid + 1) * 0x9e3779b1u;
	k->family = x->peer.ss_family;
	if (x->peer.ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)&x->peer;
		memcpy(k->addr, &s->sin_addr, 4);
		k->port = ntohs(s->sin_port);
	} else if (x->peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&x->peer;
		memcpy(k->addr, &s->sin6_addr, 16);
		k->port = ntohs(s->sin6_port);
	}
}

/*
 * @x just received a request: evict every entry of @x it acknowledges
 * (implied_ack), whatever bucket it is in.  Walks only @x's own entries
 * (the replies still in doubt on this connection).  The entry being looked
 * up (@k) is spared: a retransmission on the same connection is itself a
 * newer request.  Called with no lock held; takes x->drc_lock, then each
 * bucket lock alone.
 */
#define ACK_BATCH 32
#define ACK_ROUNDS 8
static void ack_transport(struct drc *d, struct rpc_xprt *x, const struct drc_key *k, uint64_t t)
{
	struct drc_entry *cand[ACK_BATCH], *e;
	int n, i, round;

	if (d->p.mode != DRC_MODE_IMPLIED_ACK || !x->conn_oriented)
		return;
	for (round = 0; round < ACK_ROUNDS; round++) {
		n = 0;
		pthread_mutex_lock(&x->drc_lock);
		for (e = x->drc_entries; e && n < ACK_BATCH; e = e->xnext) {
			if (implied_ack(e) && !key_eq(&e->key, k)) {
				atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
				cand[n++] = e;
			}
		}
		pthread_mutex_unlock(&x->drc_lock);
		for (i = 0; i < n; i++) {
			struct bucket *b = &d->b[cand[i]->bucket];

			pthread_mutex_lock(&b->lock);
			if (cand[i]->linked && prunable_locked(d, cand[i], t) == DRC_EV_IMPLIED_ACK)
				evict_locked(d, b, cand[i], DRC_EV_IMPLIED_ACK, t);
			pthread_mutex_unlock(&b->lock);
			drc_entry_put(cand[i]);
		}
		if (n < ACK_BATCH)
			break;
	}
}

/* Evict the oldest entry of @b that is not pinned; caller holds b->lock. */
static bool evict_oldest_locked(struct drc *d, struct bucket *b, uint64_t t)
{
	struct drc_entry *e;

	for (e = b->head; e; e = e->next) {
		if (!pinned_locked(e)) {
			evict_locked(d, b, e, DRC_EV_SIZE, t);
			return true;
		}
		perf_inc(&d->size_skipped_pinned, 1);
	}
	return false;
}

/* Make room for one insert into bucket @mine (whose lock the caller holds). */
static bool make_room_locked(struct drc *d, struct bucket *mine, uint64_t t)
{
	unsigned int tries, i;
	struct bucket *b;

	if (atomic_load_explicit(&d->population, memory_order_relaxed) < d->p.max_entries)
		return true;
	if (evict_oldest_locked(d, mine, t))
		return true;
	/* Other buckets: trylock only (we hold a bucket lock; no ordering
	 * between buckets), round-robin so the load of evicting spreads. */
	for (tries = 0; tries <= d->mask; tries++) {
		i = atomic_fetch_add_explicit(&d->cursor, 1, memory_order_relaxed) & d->mask;
		b = &d->b[i];
		if (b == mine || pthread_mutex_trylock(&b->lock))
			continue;
		bool ok = evict_oldest_locked(d, b, t);
		pthread_mutex_unlock(&b->lock);
		if (ok)
			return true;
	}
	return atomic_load_explicit(&d->population, memory_order_relaxed) < d->p.max_entries;
}

enum drc_verdict drc_lookup(struct drc *d, struct rpc_xprt *x, const struct drc_key *k,
			    struct drc_entry **ep, uint8_t **reply, size_t *reply_len)
{
	unsigned int h = key_hash(k) & d->mask, chain = 0;
	struct bucket *b = &d->b[h];
	struct drc_entry *e, *next, *found = NULL;
	enum drc_verdict v;
	uint64_t start = now_mono_ns(), t0 = d->p.clock ? d->p.clock() : start, ns;
	int why;

	*ep = NULL;
	*reply = NULL;
	*reply_len = 0;
	ack_transport(d, x, k, t0);
	pthread_mutex_lock(&b->lock);
	for (e = b->head; e; e = next) {
		next = e->next;
		chain++;
		if (!found && key_eq(&e->key, k)) {
			found = e;
			continue;
		}
		why = prunable_locked(d, e, t0);
		if (why >= 0)
			evict_locked(d, b, e, why, t0);
	}
	if (found) {
		if (found->state == ST_INPROGRESS) {
			v = DRC_INPROGRESS;
			perf_inc(&d->inprogress, 1);
		} else {
			v = DRC_HIT;
			*reply = malloc(found->reply_len ? found->reply_len : 1);
			if (*reply) {
				memcpy(*reply, found->reply, found->reply_len);
				*reply_len = found->reply_len;
				/* most recently used goes last, and on the connection the
				 * reply is sent again on: that one's ACKs release it */
				unlink_locked(d, b, found);
				if (found->xprt != x) {
					rpc_xprt_put(found->xprt);
					found->xprt = rpc_xprt_get(x);
				}
				atomic_store_explicit(&found->tx_end, 0, memory_order_relaxed);
				atomic_store_explicit(&found->rx_mark, 0, memory_order_relaxed);
				append_locked(d, b, found);
				atomic_fetch_add_explicit(&found->refs, 1, memory_order_relaxed);
				*ep = found;
				perf_inc(&d->hits, 1);
			} else {
				v = DRC_INPROGRESS;      /* no memory: drop, the client retries */
			}
		}
	} else {
		v = DRC_MISS;
		perf_inc(&d->misses, 1);
		if (!make_room_locked(d, b, t0)) {
			perf_inc(&d->uncached, 1);
		} else if ((e = calloc(1, sizeof(*e)))) {
			e->key = *k;
			e->xprt = rpc_xprt_get(x);
			e->bucket = h;
			e->state = ST_INPROGRESS;
			e->created = t0;
			atomic_init(&e->refs, 2);        /* the cache's and the caller's */
			append_locked(d, b, e);
			perf_inc(&d->inserts, 1);
			*ep = e;
		} else {
			perf_inc(&d->uncached, 1);
		}
	}
	pthread_mutex_unlock(&b->lock);
	if (chain > perf_get(&d->longest_chain))
		perf_set(&d->longest_chain, chain);   /* racy max: a statistic */
	ns = now_mono_ns() - start;
	hist_add(&d->lookup_ns, ns);
	DTRACE_PROBE5(loligo, drc_lookup, k->xid, (int)v, chain,
		      atomic_load_explicit(&d->population, memory_order_relaxed), ns);
	return v;
}

int drc_finish(struct drc *d, struct drc_entry *e, const uint8_t *reply, size_t len)
{
	struct bucket *b = &d->b[e->bucket];
	uint8_t *copy = NULL;
	bool was_linked = false;
	int r = 0;

	if (d->p.max_reply && len > d->p.max_reply)
		r = -EMSGSIZE;
	else if (!(copy = malloc(len ? len : 1)))
		r = -ENOMEM;
	if (r) {
		/* not kept: forget the entry, the caller's reference stays */
		perf_inc(&d->uncached, 1);
		pthread_mutex_lock(&b->lock);
		was_linked = e->linked;
		if (was_linked)
			unlink_locked(d, b, e);
		pthread_mutex_unlock(&b->lock);
		if (was_linked)
			drc_entry_put(e);
		return r;
	}
	memcpy(copy, reply, len);
	pthread_mutex_lock(&b->lock);
	e->reply = copy;
	e->reply_len = len;
	e->done_at = now(d);
	e->state = ST_DONE;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

void drc_abort(struct drc *d, struct drc_entry *e)
{
	struct bucket *b = &d->b[e->bucket];
	bool was_linked;

	pthread_mutex_lock(&b->lock);
	was_linked = e->linked;
	if (was_linked)
		unlink_locked(d, b, e);
	pthread_mutex_unlock(&b->lock);
	if (was_linked)
		drc_entry_put(e);        /* the cache's reference */
	drc_entry_put(e);                /* the caller's */
}

void drc_reply_sent(struct drc_entry *e, uint64_t tx_end, uint64_t rx_mark)
{
	if (!e)
		return;
	atomic_store_explicit(&e->rx_mark, rx_mark, memory_order_relaxed);
	atomic_store_explicit(&e->tx_end, tx_end ? tx_end : 1, memory_order_release);
}

unsigned int drc_prune(struct drc *d)
{
	unsigned int i, n = 0;
	uint64_t t = now(d);
	struct drc_entry *e, *next;
	int why;

	for (i = 0; i <= d->mask; i++) {
		struct bucket *b = &d->b[i];

		pthread_mutex_lock(&b->lock);
		for (e = b->head; e; e = next) {
			next = e->next;
			why = prunable_locked(d, e, t);
			if (why >= 0) {
				evict_locked(d, b, e, why, t);
				n++;
			}
		}
		pthread_mutex_unlock(&b->lock);
	}
	return n;
}

void drc_get_stats(struct drc *d, struct drc_stats *s)
{
	struct drc_entry *e;
	unsigned int b;
	int i;

	memset(s, 0, sizeof(*s));
	for (b = 0; b <= d->mask; b++) {
		pthread_mutex_lock(&d->b[b].lock);
		for (e = d->b[b].head; e; e = e->next)
			s->pinned += pinned_locked(e);
		pthread_mutex_unlock(&d->b[b].lock);
	}
	s->size_skipped_pinned = perf_get(&d->size_skipped_pinned);
	s->hits = perf_get(&d->hits);
	s->misses = perf_get(&d->misses);
	s->inserts = perf_get(&d->inserts);
	s->inprogress = perf_get(&d->inprogress);
	s->uncached = perf_get(&d->uncached);
	for (i = 0; i < DRC_EV_MAX; i++)
		s->evictions[i] = perf_get(&d->ev[i]);
	s->population = atomic_load_explicit(&d->population, memory_order_relaxed);
	s->longest_chain = perf_get(&d->longest_chain);
}

struct json_object *drc_dump_json(struct drc *d)
{
	struct json_object *o = json_object_new_object(), *ev = json_object_new_object();
	struct drc_stats s;
	int i;

	drc_get_stats(d, &s);
	json_object_object_add(o, "mode", json_object_new_string(d->p.mode == DRC_MODE_EXPIRY ? "expiry"
											   : "implied_ack"));
	json_object_object_add(o, "expiry_s", json_object_new_double((double)d->p.expiry_ns / 1e9));
	json_object_object_add(o, "max_entries", json_object_new_uint64(d->p.max_entries));
	json_object_object_add(o, "buckets", json_object_new_uint64(d->mask + 1ull));
	json_object_object_add(o, "csum_len", json_object_new_uint64(d->p.csum_len));
	json_object_object_add(o, "max_reply", json_object_new_uint64(d->p.max_reply));
	json_object_object_add(o, "population", json_object_new_uint64(s.population));
	json_object_object_add(o, "pinned", json_object_new_uint64(s.pinned));
	json_object_object_add(o, "size_skipped_pinned", json_object_new_uint64(s.size_skipped_pinned));
	json_object_object_add(o, "longest_chain", json_object_new_uint64(s.longest_chain));
	json_object_object_add(o, "hits", json_object_new_uint64(s.hits));
	json_object_object_add(o, "misses", json_object_new_uint64(s.misses));
	json_object_object_add(o, "inserts", json_object_new_uint64(s.inserts));
	json_object_object_add(o, "inprogress_drops", json_object_new_uint64(s.inprogress));
	json_object_object_add(o, "uncached", json_object_new_uint64(s.uncached));
	for (i = 0; i < DRC_EV_MAX; i++)
		json_object_object_add(ev, reason_names[i], json_object_new_uint64(s.evictions[i]));
	json_object_object_add(o, "evictions", ev);
	json_object_object_add(o, "lookup_ns", hist_json(&d->lookup_ns));
	return o;
}

/* ---- admin socket ----------------------------------------------------- */

/* The admin socket cannot unregister commands, so the handler goes through
 * this pointer, which drc_destroy() clears. */
static pthread_mutex_t asok_lock = PTHREAD_MUTEX_INITIALIZER;
static struct drc *asok_drc;        /* protected by asok_lock */
static struct asok *asok_registered; /* protected by asok_lock */

static int asok_drc_dump(struct json_object *args, struct json_object **out, void *priv)
{
	int r = 0;

	pthread_mutex_lock(&asok_lock);
	if (asok_drc) {
		*out = drc_dump_json(asok_drc);
	} else {
		*out = json_object_new_object();
		json_object_object_add(*out, "error", json_object_new_string("the NFS gateway is not running"));
		r = -ENOENT;
	}
	pthread_mutex_unlock(&asok_lock);
	return r;
}

static const struct asok_cmd drc_cmds[] = {
	{ "drc dump", "", "duplicate reply cache: counters, evictions by reason, population", asok_drc_dump },
};

int drc_asok_attach(struct drc *d, struct asok *a)
{
	int r = 0;

	pthread_mutex_lock(&asok_lock);
	asok_drc = d;
	if (a && asok_registered != a) {
		r = asok_register(a, drc_cmds, 1, NULL);
		if (!r)
			asok_registered = a;
	}
	pthread_mutex_unlock(&asok_lock);
	return r;
}

void drc_destroy(struct drc *d)
{
	unsigned int i;
	struct drc_entry *e, *next;

	if (!d)
		return;
	pthread_mutex_lock(&asok_lock);
	if (asok_drc == d)
		asok_drc = NULL;
	pthread_mutex_unlock(&asok_lock);
	if (d->perf_group)
		perf_unregister_group(d->perf_group);
	for (i = 0; i <= d->mask; i++) {
		for (e = d->b[i].head; e; e = next) {
			next = e->next;
			unlink_locked(d, &d->b[i], e);
			drc_entry_put(e);
		}
		pthread_mutex_destroy(&d->b[i].lock);
	}
	free(d->b);
	free(d->perf_group);
	free(d);
}
