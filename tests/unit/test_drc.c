/*
 * test_drc.c - the duplicate reply cache: hit, miss, in-progress drops,
 * checksum mismatch, and every eviction path (implied ACK, closed
 * connection, datagram expiry, plain-expiry mode, size bound), on a fake
 * clock and fake transports.
 *
 * The implied-ACK clock of a fake transport is set by hand (stream(): the
 * receive-stream offset of the newest record handed over, and the send
 * bytes the peer's TCP acknowledged); a reply is "sent" with its
 * send-stream end and the receive-stream bytes the kernel had by then.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

#define SEC 1000000000ull

static uint64_t fake_now;
static int xprts_freed;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static void xprt_release(struct rpc_xprt *x)
{
	xprts_freed++;
	free(x);
}

static const struct rpc_xprt_ops fake_ops = { .release = xprt_release };

static struct rpc_xprt *mk_xprt(bool conn, uint16_t port)
{
	struct rpc_xprt *x = malloc(sizeof(*x));
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	sin.sin_addr.s_addr = htonl(0x7f000001);
	rpc_xprt_init(x, conn, (struct sockaddr *)&sin, sizeof(sin), &fake_ops);
	return x;
}

static struct drc *mk_drc(enum drc_mode mode, unsigned int buckets, unsigned int max)
{
	struct drc_params p = {
		.buckets = buckets, .max_entries = max, .expiry_ns = 120 * SEC,
		.csum_len = 256, .mode = mode, .clock = fake_clock,
	};
	struct drc *d;

	ck_assert_int_eq(drc_create(&p, &d), 0);
	return d;
}

static void key_for(struct drc *d, struct rpc_xprt *x, uint32_t xid, const char *args, struct drc_key *k)
{
	struct rpc_call c = { .xid = xid, .prog = 100003, .vers = 4, .proc = 1 };

	c.args = (const uint8_t *)args;
	c.args_len = strlen(args);
	drc_make_key(d, &c, x, k);
}

/* A new call: the lookup must miss; returns its entry (NULL: run uncached). */
static struct drc_entry *miss(struct drc *d, struct rpc_xprt *x, uint32_t xid, const char *args)
{
	struct drc_key k;
	struct drc_entry *e;
	uint8_t *r;
	size_t rl;

	key_for(d, x, xid, args, &k);
	ck_assert_int_eq(drc_lookup(d, x, &k, &e, &r, &rl), DRC_MISS);
	return e;
}

/* The population now. */
static uint64_t population(struct drc *d)
{
	struct drc_stats s;

	drc_get_stats(d, &s);
	return s.population;
}

/* @x's implied-ACK clock: records up to @rx handed over, @acked sent bytes acknowledged. */
static void stream(struct rpc_xprt *x, uint64_t rx, uint64_t acked)
{
	atomic_store(&x->rx_parsed, rx);
	atomic_store(&x->tx_acked, acked);
}

/* Run one call through the cache to completion: miss, finish, and (if
 * @sent) its reply written ending at send offset @sent, when the kernel
 * had received @sent bytes too (one number for both keeps tests short). */
static void complete_call(struct drc *d, struct rpc_xprt *x, uint32_t xid, const char *args, uint64_t sent)
{
	struct drc_entry *e = miss(d, x, xid, args);
	char reply[32];

	ck_assert_ptr_nonnull(e);
	snprintf(reply, sizeof(reply), "reply-%u", xid);
	drc_finish(d, e, (const uint8_t *)reply, strlen(reply));
	if (sent)
		drc_reply_sent(e, sent, sent);
	drc_entry_put(e);
}

static enum drc_verdict lookup(struct drc *d, struct rpc_xprt *x, uint32_t xid, const char *args, char *out)
{
	struct drc_key k;
	struct drc_entry *e;
	uint8_t *r;
	size_t rl;
	enum drc_verdict v;

	key_for(d, x, xid, args, &k);
	v = drc_lookup(d, x, &k, &e, &r, &rl);
	if (v == DRC_HIT && out) {
		memcpy(out, r, rl);
		out[rl] = 0;
	}
	free(r);
	if (v == DRC_MISS && e)
		drc_abort(d, e);      /* leave the cache as it was */
	else
		drc_entry_put(e);
	return v;
}

START_TEST(hit_miss_inprogress)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 16, 100);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_key k;
	struct drc_entry *e, *e2;
	uint8_t *r;
	size_t rl;
	char out[64];
	struct drc_stats s;

	fake_now = 10 * SEC;
	key_for(d, x, 1, "args-one", &k);
	ck_assert_int_eq(drc_lookup(d, x, &k, &e, &r, &rl), DRC_MISS);
	ck_assert_ptr_nonnull(e);
	/* the retransmission arrives while the original runs: dropped */
	ck_assert_int_eq(drc_lookup(d, x, &k, &e2, &r, &rl), DRC_INPROGRESS);
	ck_assert_ptr_null(e2);
	drc_finish(d, e, (const uint8_t *)"the-reply", 9);
	drc_entry_put(e);
	/* completed: the same reply comes back */
	ck_assert_int_eq(lookup(d, x, 1, "args-one", out), DRC_HIT);
	ck_assert_str_eq(out, "the-reply");
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_eq(s.misses, 1);
	ck_assert_uint_eq(s.inserts, 1);
	ck_assert_uint_eq(s.inprogress, 1);
	ck_assert_uint_eq(s.population, 1);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

START_TEST(checksum_mismatch)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 16, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *y = mk_xprt(true, 901);

	fake_now = SEC;
	complete_call(d, x, 7, "create a", 0);
	/* same xid, different arguments: a new call, not a retransmission */
	ck_assert_int_eq(lookup(d, x, 7, "create b", NULL), DRC_MISS);
	/* same xid and arguments from another port: another client */
	ck_assert_int_eq(lookup(d, y, 7, "create a", NULL), DRC_MISS);
	ck_assert_int_eq(lookup(d, x, 7, "create a", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
	rpc_xprt_put(y);
}
END_TEST

START_TEST(implied_ack)
{
	/* one bucket so every lookup walks (and prunes) every entry */
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *other = mk_xprt(true, 901);
	struct drc_stats s;

	fake_now = 100;
	stream(x, 50, 0);
	complete_call(d, x, 1, "a", 100);       /* reply written up to 100 */
	complete_call(d, x, 2, "b", 0);         /* reply not sent yet */
	/* no newer request on x: both stay */
	ck_assert_int_eq(lookup(d, other, 99, "z", NULL), DRC_MISS);
	ck_assert_uint_eq(population(d), 2);
	/* x received a request after reply 1 went out, and the peer ACKed
	 * reply 1: it is acknowledged, 2 (never sent) is not */
	stream(x, 150, 100);
	ck_assert_int_eq(lookup(d, other, 99, "z", NULL), DRC_MISS);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.population, 1);
	ck_assert_uint_eq(s.evictions[DRC_EV_IMPLIED_ACK], 1);
	ck_assert_int_eq(lookup(d, x, 1, "a", NULL), DRC_MISS);
	ck_assert_int_eq(lookup(d, x, 2, "b", NULL), DRC_HIT);
	/* another connection's traffic acknowledges nothing on x */
	drc_destroy(d);
	rpc_xprt_put(x);
	rpc_xprt_put(other);
}
END_TEST

START_TEST(implied_ack_other_conn)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *y = mk_xprt(true, 901);

	fake_now = 100;
	complete_call(d, x, 1, "a", 100);
	stream(x, 50, 100);                     /* x is silent (its reply is ACKed) */
	stream(y, 500, 500);                    /* y is busy */
	complete_call(d, y, 2, "b", 600);
	ck_assert_uint_eq(drc_prune(d), 0);
	ck_assert_uint_eq(population(d), 2);
	drc_destroy(d);
	rpc_xprt_put(x);
	rpc_xprt_put(y);
}
END_TEST

/* The implied ACK reaches a transport's entries in every bucket, not just
 * the bucket the new request hashes to. */
START_TEST(implied_ack_all_buckets)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 256, 1000);
	struct rpc_xprt *x = mk_xprt(true, 900), *y = mk_xprt(true, 901);
	struct drc_stats s;
	uint32_t i;

	fake_now = 100;
	for (i = 0; i < 50; i++) {
		complete_call(d, x, 1000 + i, "op", 100 + i);
		complete_call(d, y, 1000 + i, "op", 100 + i);
	}
	ck_assert_uint_eq(population(d), 100);
	/* x receives a new request after every reply went out */
	stream(x, 1000, 1000);
	ck_assert_int_eq(lookup(d, x, 5000, "new", NULL), DRC_MISS);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_IMPLIED_ACK], 50);
	ck_assert_uint_eq(s.population, 50);         /* y's entries are all still there */
	ck_assert_int_eq(lookup(d, y, 1040, "op", NULL), DRC_HIT);
	/* a request received between two replies acknowledges only the older */
	stream(y, 125, 1000);                        /* after sends 100..124 */
	ck_assert_int_eq(lookup(d, y, 6000, "new", NULL), DRC_MISS);
	ck_assert_uint_eq(population(d), 25);
	ck_assert_int_eq(lookup(d, y, 1030, "op", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
	rpc_xprt_put(y);
}
END_TEST

/* A retransmission on the same connection bumps last_recv before its own
 * lookup: it must still find its entry. */
START_TEST(retransmit_same_conn_hits)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900);
	char out[64];

	fake_now = 100;
	complete_call(d, x, 5, "rename", 100);
	stream(x, 200, 100);
	ck_assert_int_eq(lookup(d, x, 5, "rename", out), DRC_HIT);
	ck_assert_str_eq(out, "reply-5");
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

START_TEST(closed_connection)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *y;
	struct drc_stats s;
	char out[64];

	xprts_freed = 0;
	fake_now = 1000 * SEC;
	complete_call(d, x, 1, "a", fake_now);
	/* the connection closes without a newer request: the client may
	 * retransmit on a new connection from the same address and port */
	fake_now += 30 * SEC;
	atomic_store(&x->closed_at, fake_now);
	rpc_xprt_put(x);                       /* the ring's reference: the entry keeps x alive */
	ck_assert_int_eq(xprts_freed, 0);
	fake_now += 119 * SEC;
	ck_assert_uint_eq(drc_prune(d), 0);
	y = mk_xprt(true, 900);
	ck_assert_int_eq(lookup(d, y, 1, "a", out), DRC_HIT);
	ck_assert_str_eq(out, "reply-1");
	ck_assert_int_eq(xprts_freed, 1);      /* the entry moved to y and let x go */
	/* the client goes away again before it has the reply */
	atomic_store(&y->closed_at, fake_now);
	rpc_xprt_put(y);
	fake_now += 119 * SEC;
	ck_assert_uint_eq(drc_prune(d), 0);
	fake_now += 2 * SEC;                   /* 121 s after the close */
	ck_assert_uint_eq(drc_prune(d), 1);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_CLOSED], 1);
	ck_assert_uint_eq(s.population, 0);
	ck_assert_int_eq(xprts_freed, 2);      /* the entry dropped the last reference */
	drc_destroy(d);
}
END_TEST

START_TEST(datagram_expiry)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 100);
	struct rpc_xprt *u = mk_xprt(false, 900);
	struct drc_stats s;

	fake_now = 10 * SEC;
	complete_call(d, u, 1, "a", fake_now);
	stream(u, UINT64_MAX, UINT64_MAX);           /* no implied ACK on datagrams */
	fake_now += 60 * SEC;
	ck_assert_uint_eq(drc_prune(d), 0);
	fake_now += 61 * SEC;
	ck_assert_uint_eq(drc_prune(d), 1);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_EXPIRED], 1);
	drc_destroy(d);
	rpc_xprt_put(u);
}
END_TEST

START_TEST(expiry_mode)
{
	struct drc *d = mk_drc(DRC_MODE_EXPIRY, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_stats s;

	fake_now = 10 * SEC;
	complete_call(d, x, 1, "a", fake_now);
	stream(x, UINT64_MAX, UINT64_MAX);
	ck_assert_uint_eq(drc_prune(d), 0);    /* implied ACK is ignored */
	ck_assert_int_eq(lookup(d, x, 1, "a", NULL), DRC_HIT);
	fake_now += 120 * SEC;
	ck_assert_uint_eq(drc_prune(d), 1);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_EXPIRED], 1);
	ck_assert_uint_eq(s.evictions[DRC_EV_IMPLIED_ACK], 0);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

/* A lookup reads its clock before it takes the bucket lock; a worker may
 * finish an entry of that bucket in between, with a later clock: the entry
 * is new, not 2^64 ns old (before: evicted as expired at once). */
START_TEST(expiry_clock_behind_finish)
{
	struct drc *d = mk_drc(DRC_MODE_EXPIRY, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *u = mk_xprt(false, 901);
	struct drc_stats s;

	fake_now = 100 * SEC;
	complete_call(d, x, 1, "a", 10);
	complete_call(d, u, 2, "b", 10);
	fake_now -= 1;                         /* the pruner's clock, read earlier */
	ck_assert_uint_eq(drc_prune(d), 0);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_EXPIRED], 0);
	fake_now += 1;
	ck_assert_int_eq(lookup(d, x, 1, "a", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
	rpc_xprt_put(u);
}
END_TEST

START_TEST(size_bound)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 4);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_stats s;
	uint32_t i;

	fake_now = SEC;
	stream(x, 0, 1000);     /* every reply ACKed by the peer, no newer request */
	for (i = 1; i <= 6; i++) {
		fake_now += SEC;
		complete_call(d, x, i, "a", 10 * i);
	}
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.population, 4);
	ck_assert_uint_eq(s.evictions[DRC_EV_SIZE], 2);
	/* the newest survives (with several buckets "oldest" is per bucket
	 * first; size_bound_oldest_in_bucket checks the exact order) */
	ck_assert_int_eq(lookup(d, x, 6, "a", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

START_TEST(size_bound_oldest_in_bucket)
{
	/* one bucket: eviction order is exactly oldest first */
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 3);
	struct rpc_xprt *x = mk_xprt(true, 900);

	fake_now = SEC;
	stream(x, 0, 1000);
	complete_call(d, x, 1, "a", 10);
	complete_call(d, x, 2, "a", 20);
	complete_call(d, x, 3, "a", 30);
	complete_call(d, x, 4, "a", 40);
	ck_assert_int_eq(lookup(d, x, 2, "a", NULL), DRC_HIT);
	ck_assert_int_eq(lookup(d, x, 3, "a", NULL), DRC_HIT);
	ck_assert_int_eq(lookup(d, x, 4, "a", NULL), DRC_HIT);
	/* (the miss on 1 needs a slot: it evicts the oldest, 2, then aborts) */
	ck_assert_int_eq(lookup(d, x, 1, "a", NULL), DRC_MISS);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

START_TEST(size_bound_all_inprogress)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 2, 2);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_entry *e[3];
	struct drc_stats s;
	int i;

	for (i = 0; i < 3; i++)
		e[i] = miss(d, x, 10 + i, "a");
	ck_assert_ptr_nonnull(e[0]);
	ck_assert_ptr_nonnull(e[1]);
	ck_assert_ptr_null(e[2]);              /* run uncached rather than exceed the bound */
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.uncached, 1);
	ck_assert_uint_eq(s.population, 2);
	drc_abort(d, e[0]);
	drc_abort(d, e[1]);
	ck_assert_uint_eq(population(d), 0);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

/* A newer request alone is not an implied ACK: the reply may still sit in
 * our socket buffer or on the wire (a pipelining client sends on without
 * waiting).  It goes once the peer's TCP has ACKed its last byte too. */
START_TEST(implied_ack_needs_tcp_ack)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *other = mk_xprt(true, 901);
	struct drc_stats s;

	fake_now = 100;
	complete_call(d, x, 1, "a", 100);
	stream(x, 200, 99);                     /* newer request, reply not ACKed */
	ck_assert_int_eq(lookup(d, x, 2, "new", NULL), DRC_MISS);
	ck_assert_uint_eq(drc_prune(d), 0);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.population, 1);
	ck_assert_uint_eq(s.pinned, 1);         /* the client may not have it */
	stream(x, 200, 100);                    /* the ACK came in (seen at a tick) */
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.pinned, 0);
	ck_assert_uint_eq(drc_prune(d), 1);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_IMPLIED_ACK], 1);
	ck_assert_int_eq(lookup(d, x, 1, "a", NULL), DRC_MISS);
	drc_destroy(d);
	rpc_xprt_put(x);
	rpc_xprt_put(other);
}
END_TEST

/* A request parsed after the reply went out but received before it (it
 * waited in a buffer while the connection was at its in-flight limit) was
 * sent by a client that had not seen the reply: no implied ACK, even with
 * the reply ACKed by TCP. */
START_TEST(implied_ack_needs_later_arrival)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 100);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_entry *e;
	uint32_t i;

	fake_now = 100;
	/* 16 pipelined requests, all received (1600 bytes) before reply 1 */
	for (i = 1; i <= 16; i++) {
		stream(x, 100 * i, 0);
		e = miss(d, x, i, "remove");
		drc_finish(d, e, (const uint8_t *)"ok", 2);
		drc_reply_sent(e, 10 * i, 1600);
		drc_entry_put(e);
	}
	stream(x, 1600, 160);                   /* every reply ACKed by the client's TCP */
	ck_assert_uint_eq(drc_prune(d), 0);
	ck_assert_uint_eq(population(d), 16);
	/* the cut connection's retransmissions all hit */
	atomic_store(&x->closed_at, fake_now);
	for (i = 1; i <= 16; i++)
		ck_assert_int_eq(lookup(d, x, i, "remove", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

/* Size eviction takes acknowledged entries only; with every entry pinned
 * the new call runs uncached. */
START_TEST(size_bound_pinned)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 1, 3);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_entry *e;
	struct drc_stats s;

	fake_now = SEC;
	stream(x, 0, 15);
	complete_call(d, x, 1, "a", 10);        /* ACKed */
	complete_call(d, x, 2, "a", 20);        /* not ACKed */
	complete_call(d, x, 3, "a", 0);         /* not sent */
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.pinned, 2);
	/* a fourth: the bound evicts 1, the oldest that may go */
	complete_call(d, x, 4, "a", 0);
	ck_assert_int_eq(lookup(d, x, 2, "a", NULL), DRC_HIT);
	ck_assert_int_eq(lookup(d, x, 3, "a", NULL), DRC_HIT);
	/* a fifth: everything is pinned (the hits above reset 2 and 3 to
	 * "not sent again yet"): uncached, nothing lost */
	e = miss(d, x, 5, "a");
	ck_assert_ptr_null(e);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_SIZE], 1);
	ck_assert_uint_eq(s.population, 3);
	ck_assert_uint_eq(s.pinned, 3);
	ck_assert_uint_eq(s.uncached, 1);
	ck_assert_uint_ge(s.size_skipped_pinned, 3);
	ck_assert_int_eq(lookup(d, x, 4, "a", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

/* A hit moves the entry to the connection it came on: that connection's
 * implied ACK releases it, the closed one's clock no longer matters. */
START_TEST(hit_moves_to_new_connection)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 100);
	struct rpc_xprt *x = mk_xprt(true, 900), *y;
	struct drc_key k;
	struct drc_entry *e;
	struct drc_stats s;
	uint8_t *r;
	size_t rl;

	fake_now = 10 * SEC;
	complete_call(d, x, 1, "a", 100);
	atomic_store(&x->closed_at, fake_now);
	rpc_xprt_put(x);                        /* the entry holds x now */
	y = mk_xprt(true, 900);                 /* the reconnect, same port */
	key_for(d, y, 1, "a", &k);
	ck_assert_int_eq(drc_lookup(d, y, &k, &e, &r, &rl), DRC_HIT);
	free(r);
	drc_reply_sent(e, 50, 40);              /* resent on y */
	drc_entry_put(e);
	ck_assert_uint_eq(drc_prune(d), 0);
	stream(y, 60, 50);                      /* y: a newer request, the resend ACKed */
	ck_assert_int_eq(lookup(d, y, 2, "b", NULL), DRC_MISS);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_IMPLIED_ACK], 1);
	ck_assert_uint_eq(s.population, 0);
	drc_destroy(d);
	rpc_xprt_put(y);
}
END_TEST

START_TEST(reply_too_big)
{
	struct drc_params p = { .buckets = 4, .max_entries = 10, .expiry_ns = 120 * SEC, .csum_len = 256,
				.max_reply = 8, .clock = fake_clock };
	struct drc *d;
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_entry *e;
	struct drc_stats s;

	ck_assert_int_eq(drc_create(&p, &d), 0);
	e = miss(d, x, 1, "a");
	ck_assert_int_eq(drc_finish(d, e, (const uint8_t *)"0123456789", 10), -EMSGSIZE);
	drc_reply_sent(e, 5, 5);               /* the caller's reference is still good */
	drc_entry_put(e);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.population, 0);
	ck_assert_uint_eq(s.uncached, 1);
	ck_assert_int_eq(lookup(d, x, 1, "a", NULL), DRC_MISS);
	e = miss(d, x, 2, "a");
	ck_assert_int_eq(drc_finish(d, e, (const uint8_t *)"01234567", 8), 0);
	drc_entry_put(e);
	ck_assert_int_eq(lookup(d, x, 2, "a", NULL), DRC_HIT);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

START_TEST(dump_json)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 100);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct json_object *o, *v, *ev;

	complete_call(d, x, 1, "a", 0);
	o = drc_dump_json(d);
	ck_assert(json_object_object_get_ex(o, "population", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert(json_object_object_get_ex(o, "evictions", &ev));
	ck_assert(json_object_object_get_ex(ev, "implied_ack", &v));
	ck_assert(json_object_object_get_ex(ev, "size", &v));
	ck_assert(json_object_object_get_ex(o, "longest_chain", &v));
	ck_assert(json_object_object_get_ex(o, "pinned", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);     /* never sent */
	ck_assert(json_object_object_get_ex(o, "mode", &v));
	ck_assert_str_eq(json_object_get_string(v), "implied_ack");
	json_object_put(o);
	drc_destroy(d);
	rpc_xprt_put(x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("drc");
	TCase *tc = tcase_create("drc");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, hit_miss_inprogress);
	tcase_add_test(tc, checksum_mismatch);
	tcase_add_test(tc, implied_ack);
	tcase_add_test(tc, implied_ack_other_conn);
	tcase_add_test(tc, implied_ack_all_buckets);
	tcase_add_test(tc, retransmit_same_conn_hits);
	tcase_add_test(tc, closed_connection);
	tcase_add_test(tc, datagram_expiry);
	tcase_add_test(tc, expiry_mode);
	tcase_add_test(tc, expiry_clock_behind_finish);
	tcase_add_test(tc, size_bound);
	tcase_add_test(tc, size_bound_oldest_in_bucket);
	tcase_add_test(tc, size_bound_all_inprogress);
	tcase_add_test(tc, implied_ack_needs_tcp_ack);
	tcase_add_test(tc, implied_ack_needs_later_arrival);
	tcase_add_test(tc, size_bound_pinned);
	tcase_add_test(tc, hit_moves_to_new_connection);
	tcase_add_test(tc, reply_too_big);
	tcase_add_test(tc, dump_json);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
