/*
 * test_drc.c - the duplicate reply cache: hit, miss, in-progress drops,
 * checksum mismatch, and every eviction path (implied ACK, closed
 * connection, datagram expiry, plain-expiry mode, size bound), on a fake
 * clock and fake transports.
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

/* Run one call through the cache to completion: miss, finish, sent at @sent. */
static void complete_call(struct drc *d, struct rpc_xprt *x, uint32_t xid, const char *args, uint64_t sent)
{
	struct drc_entry *e = miss(d, x, xid, args);
	char reply[32];

	ck_assert_ptr_nonnull(e);
	snprintf(reply, sizeof(reply), "reply-%u", xid);
	drc_finish(d, e, (const uint8_t *)reply, strlen(reply));
	if (sent)
		drc_reply_sent(e, sent);
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
	atomic_store(&x->last_recv, 50);
	complete_call(d, x, 1, "a", 100);       /* reply sent at 100 */
	complete_call(d, x, 2, "b", 0);         /* reply not sent yet */
	/* no newer request on x: both stay */
	ck_assert_int_eq(lookup(d, other, 99, "z", NULL), DRC_MISS);
	ck_assert_uint_eq(population(d), 2);
	/* x received a request after reply 1 went out: 1 is acknowledged,
	 * 2 (never sent) is not */
	atomic_store(&x->last_recv, 150);
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
	atomic_store(&y->last_recv, 500);       /* y is busy, x is silent */
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
	atomic_store(&x->last_recv, 1000);
	ck_assert_int_eq(lookup(d, x, 5000, "new", NULL), DRC_MISS);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_IMPLIED_ACK], 50);
	ck_assert_uint_eq(s.population, 50);         /* y's entries are all still there */
	ck_assert_int_eq(lookup(d, y, 1010, "op", NULL), DRC_HIT);
	/* a request received between two replies acknowledges only the older */
	atomic_store(&y->last_recv, 125);            /* after sends 100..124 */
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
	atomic_store(&x->last_recv, 200);
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
	fake_now += 2 * SEC;                   /* 121 s after the close */
	ck_assert_uint_eq(drc_prune(d), 1);
	drc_get_stats(d, &s);
	ck_assert_uint_eq(s.evictions[DRC_EV_CLOSED], 1);
	ck_assert_uint_eq(s.population, 0);
	ck_assert_int_eq(xprts_freed, 1);      /* the entry dropped the last reference */
	drc_destroy(d);
	rpc_xprt_put(y);
}
END_TEST

START_TEST(datagram_expiry)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 100);
	struct rpc_xprt *u = mk_xprt(false, 900);
	struct drc_stats s;

	fake_now = 10 * SEC;
	complete_call(d, u, 1, "a", fake_now);
	atomic_store(&u->last_recv, fake_now + 1);   /* no implied ACK on datagrams */
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
	atomic_store(&x->last_recv, fake_now + 1);
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

START_TEST(size_bound)
{
	struct drc *d = mk_drc(DRC_MODE_IMPLIED_ACK, 4, 4);
	struct rpc_xprt *x = mk_xprt(true, 900);
	struct drc_stats s;
	uint32_t i;

	fake_now = SEC;
	for (i = 1; i <= 6; i++) {
		fake_now += SEC;
		complete_call(d, x, i, "a", 0);
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
	complete_call(d, x, 1, "a", 0);
	complete_call(d, x, 2, "a", 0);
	complete_call(d, x, 3, "a", 0);
	complete_call(d, x, 4, "a", 0);
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
	drc_reply_sent(e, 5);                  /* the caller's reference is still good */
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
	tcase_add_test(tc, size_bound);
	tcase_add_test(tc, size_bound_oldest_in_bucket);
	tcase_add_test(tc, size_bound_all_inprogress);
	tcase_add_test(tc, reply_too_big);
	tcase_add_test(tc, dump_json);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
