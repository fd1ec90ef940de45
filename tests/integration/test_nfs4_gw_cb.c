/*
 * test_nfs4_gw_cb.c - NFSv4 callbacks over real sockets against a real
 * filesystem (nfs4gw_fixture.h): the NFSv4.1 back channel (RFC 8881
 * 2.10.3.1: CREATE_SESSION with CONN_BACK_CHAN, CB_NULL probes, CB_COMPOUND
 * with CB_SEQUENCE on the back channel's own slots multiplexed with our
 * requests on one TCP connection, BIND_CONN_TO_SESSION after a reconnect,
 * BACKCHANNEL_CTL, SEQ4_STATUS_CB_PATH_DOWN / _SESSION /
 * BACKCHANNEL_FAULT) and NFSv4.0 callbacks (CB_NULL to SETCLIENTID's
 * callback address on 127.0.0.1, and none to another host).  The test's
 * client answers callbacks from a reader thread (nfs4_cb_client.h).
 */
#include "nfs4_cb_client.h"
#include "nfs4gw_fixture.h"
#include "tests/test_child.h"
#include "nfs_gw/nfs4/open_state.h"

#define CB_PROG 0x40000123u

/* an asok command with an "id" argument; the reply (caller puts it) */
static struct json_object *asok_id(const char *prefix, uint64_t id)
{
	struct json_object *req = json_object_new_object(), *reply = NULL;

	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	json_object_object_add(req, "id", json_object_new_int64((int64_t)id));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 30000), 0);
	json_object_put(req);
	ck_assert_ptr_nonnull(reply);
	return reply;
}

/* `nfs client callback ID`: its "result" (0: answered) and the CB_COMPOUND status */
static int cb_now(uint64_t id, int *status)
{
	struct json_object *rep = asok_id("nfs client callback", id), *v;
	int r = -9999;

	if (json_object_object_get_ex(rep, "result", &v))
		r = json_object_get_int(v);
	if (status && json_object_object_get_ex(rep, "status", &v))
		*status = json_object_get_int(v);
	json_object_put(rep);
	return r;
}

/* From `nfs clients`: client @id's first session's field @key (session) or the client's (!session). */
static bool clients_field(uint64_t id, bool session, const char *key, char *out, size_t len)
{
	struct json_object *req = json_object_new_object(), *reply = NULL, *arr, *c, *v, *ss;
	bool found = false;

	json_object_object_add(req, "prefix", json_object_new_string("nfs clients"));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 5000), 0);
	json_object_put(req);
	out[0] = 0;
	if (json_object_object_get_ex(reply, "clients", &arr)) {
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			c = json_object_array_get_idx(arr, i);
			if (!json_object_object_get_ex(c, "clientid", &v) || (uint64_t)json_object_get_int64(v) != id)
				continue;
			if (session) {
				if (!json_object_object_get_ex(c, "sessions", &ss) || !json_object_array_length(ss))
					break;
				c = json_object_array_get_idx(ss, 0);
			}
			if (json_object_object_get_ex(c, key, &v)) {
				snprintf(out, len, "%s", json_object_get_string(v));
				found = true;
			}
			break;
		}
	}
	json_object_put(reply);
	return found;
}

static bool back_channel_is(uint64_t id, const char *state)
{
	char v[32];

	return clients_field(id, true, "back_channel", v, sizeof(v)) && !strcmp(v, state);
}

/* CREATE_SESSION with @flags and our callback program / @flavor; the flags granted. */
static uint32_t create_session(struct nc *n, const char *owner, uint32_t flags, uint32_t flavor)
{
	struct ncc c;
	struct nrep r;
	uint32_t seq, got;

	ncc_begin_raw(&c, n, 1, 0);
	enc_exchange_id(&c, owner, 1, 0, SP4_NONE);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_EXCHANGE_ID), NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.d, &n->clientid), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &seq), 0);
	rep_free(&r);
	ncc_begin_raw(&c, n, 1, 0);
	ncc_op(&c, OP_CREATE_SESSION);
	xdr_put_u64(&c.e, n->clientid);
	xdr_put_u32(&c.e, seq);
	xdr_put_u32(&c.e, flags);
	enc_chan(&c, &nc_fore);
	enc_chan(&c, &nc_back);
	xdr_put_u32(&c.e, CB_PROG);
	xdr_put_u32(&c.e, 1);
	xdr_put_u32(&c.e, flavor);
	if (flavor == RPC_AUTH_SYS) {
		xdr_put_u32(&c.e, 1);            /* stamp */
		xdr_put_string(&c.e, "cbtest");
		xdr_put_u32(&c.e, 0);
		xdr_put_u32(&c.e, 0);
		xdr_put_u32(&c.e, 0);
	} else if (flavor == RPCSEC_GSS) {
		xdr_put_u32(&c.e, 1);            /* service */
		xdr_put_opaque(&c.e, "h", 1);
		xdr_put_opaque(&c.e, "c", 1);
	}
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_CREATE_SESSION), NFS4_OK);
	ck_assert_int_eq(xdr_get_fixed(&r.d, n->sessionid, NFS4_SESSIONID_SIZE), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &seq), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &got), 0);
	rep_free(&r);
	n->has_session = true;
	memset(n->slot_seq, 0, sizeof(n->slot_seq));
	ncc_begin(&c, n);
	ncc_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	return got;
}

/* A SEQUENCE alone: its sr_status_flags. */
static uint32_t seq_flags(struct nc *n)
{
	struct ncc c;
	struct nrep r;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	uint32_t v, flags;

	ncc_begin_raw(&c, n, 1, 0);
	enc_sequence(&c, n->sessionid, ++n->slot_seq[0], 0, false);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_SEQUENCE), NFS4_OK);
	ck_assert_int_eq(xdr_get_fixed(&r.d, sid, sizeof(sid)), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(xdr_get_u32(&r.d, &v), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &flags), 0);
	rep_free(&r);
	return flags;
}

#define PATH_DOWN_BITS (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION | SEQ4_STATUS_BACKCHANNEL_FAULT)

/* BIND_CONN_TO_SESSION (alone) on @n's connection: status; the direction granted in *@got. */
static uint32_t bind_conn(struct nc *n, uint32_t dir, uint32_t *got)
{
	struct ncc c;
	struct nrep r;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	uint32_t st;
	bool rdma;

	ncc_begin_raw(&c, n, 1, 0);
	ncc_op(&c, OP_BIND_CONN_TO_SESSION);
	xdr_put_fixed(&c.e, n->sessionid, NFS4_SESSIONID_SIZE);
	xdr_put_u32(&c.e, dir);
	xdr_put_bool(&c.e, false);
	ncc_call(&c, &r);
	st = rep_next(&r, OP_BIND_CONN_TO_SESSION);
	if (!st) {
		ck_assert_int_eq(xdr_get_fixed(&r.d, sid, sizeof(sid)), 0);
		ck_assert_int_eq(memcmp(sid, n->sessionid, sizeof(sid)), 0);
		ck_assert_int_eq(xdr_get_u32(&r.d, got), 0);
		ck_assert_int_eq(xdr_get_bool(&r.d, &rdma), 0);
	}
	rep_free(&r);
	return st;
}

/*
 * CREATE_SESSION with CONN_BACK_CHAN on a connection: the gateway grants
 * the back channel, probes it with CB_NULL (program and RPC version as the
 * client gave), reports no path problem, and each CB_COMPOUND starts with
 * CB_SEQUENCE for the session on back-channel slot 0 with seqids 1, 2, ...
 * while our own requests keep being answered on the same connection.
 * (Before: CREATE_SESSION granted flags 0 and the gateway never called.)
 */
START_TEST(v41_back_channel_on_the_fore_connection)
{
	struct nc *n;
	struct ncb *b;
	uint32_t got;
	int st = -1;

	gw_up();
	n = nc_connect(port, 1);
	b = ncb_attach(n);
	got = create_session(n, "cb-fore", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, RPC_AUTH_SYS);
	ck_assert_msg(got & CREATE_SESSION4_FLAG_CONN_BACK_CHAN, "back channel not granted (flags %#x)", got);
	ck_assert_msg(WAIT_FOR(NCB_GET(b, cb_null) >= 1, 10), "no CB_NULL probe on the back channel");
	ck_assert_uint_eq(NCB_GET(b, prog), CB_PROG);
	ck_assert_uint_eq(NCB_GET(b, vers), NFS4_CB_VERSION);
	ck_assert(WAIT_FOR(back_channel_is(n->clientid, "up"), 10));
	ck_assert_uint_eq(seq_flags(n) & PATH_DOWN_BITS, 0);

	for (uint32_t i = 1; i <= 3; i++) {
		ck_assert_int_eq(cb_now(n->clientid, &st), 0);
		ck_assert_int_eq(st, NFS4_OK);
		ck_assert_uint_eq(NCB_GET(b, cb_compound), i);
		ck_assert_uint_eq(NCB_GET(b, minor), 1);
		ck_assert_uint_eq(NCB_GET(b, seq_slot), 0);
		ck_assert_uint_eq(NCB_GET(b, seq_seqid), i);
		pthread_mutex_lock(&b->lock);
		ck_assert_int_eq(memcmp(b->seq_sid, n->sessionid, NFS4_SESSIONID_SIZE), 0);
		pthread_mutex_unlock(&b->lock);
		/* and our requests still get their replies in between */
		ck_assert_uint_eq(seq_flags(n) & PATH_DOWN_BITS, 0);
	}
	ck_assert_uint_eq(NCB_GET(b, misordered), 0);
	ncb_detach(b);
	nc_close(n);
	ncb_free(b);
	gw_down();
}
END_TEST

/*
 * The back channel's connection goes away: the client's next SEQUENCE (on
 * a new connection) reports CB_PATH_DOWN and CB_PATH_DOWN_SESSION and a
 * callback finds no path; BIND_CONN_TO_SESSION (BACK_OR_BOTH) binds the new
 * connection to both channels, it is probed, the flags clear and the
 * session's CB_SEQUENCE seqids continue where they were.
 */
START_TEST(v41_back_channel_survives_a_reconnect)
{
	struct nc *n;
	struct ncb *b, *b2;
	uint32_t got, flags = 0;
	int st = -1;

	gw_up();
	n = nc_connect(port, 1);
	b = ncb_attach(n);
	got = create_session(n, "cb-reconnect", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, RPC_AUTH_NONE);
	ck_assert(got & CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	ck_assert(WAIT_FOR(back_channel_is(n->clientid, "up"), 10));
	ck_assert_int_eq(cb_now(n->clientid, &st), 0);
	ck_assert_uint_eq(NCB_GET(b, seq_seqid), 1);

	/* the connection breaks */
	ncb_detach(b);
	nc_reconnect(n);
	ck_assert_msg(WAIT_FOR(((flags = seq_flags(n)) & SEQ4_STATUS_CB_PATH_DOWN), 10),
		      "no CB_PATH_DOWN after the back channel's connection closed (flags %#x)", flags);
	ck_assert(flags & SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	ck_assert_int_ne(cb_now(n->clientid, NULL), 0);

	/* the client binds its new connection */
	b2 = ncb_attach(n);
	memcpy(b2->slot_seq, b->slot_seq, sizeof(b->slot_seq));   /* the client remembers its slots */
	ck_assert_uint_eq(bind_conn(n, CDFC4_BACK_OR_BOTH, &got), NFS4_OK);
	ck_assert_uint_eq(got, CDFS4_BOTH);
	ck_assert_msg(WAIT_FOR(NCB_GET(b2, cb_null) >= 1, 10), "no probe on the rebound connection");
	ck_assert(WAIT_FOR(back_channel_is(n->clientid, "up"), 10));
	ck_assert_uint_eq(seq_flags(n) & PATH_DOWN_BITS, 0);
	ck_assert_int_eq(cb_now(n->clientid, &st), 0);
	ck_assert_int_eq(st, NFS4_OK);
	ck_assert_uint_eq(NCB_GET(b2, seq_seqid), 2);
	ck_assert_uint_eq(NCB_GET(b2, misordered), 0);

	/* FORE only binds no back channel; BACK alone is a back channel */
	ck_assert_uint_eq(bind_conn(n, CDFC4_FORE, &got), NFS4_OK);
	ck_assert_uint_eq(got, CDFS4_FORE);
	ck_assert_uint_eq(bind_conn(n, CDFC4_BACK, &got), NFS4_OK);
	ck_assert_uint_eq(got, CDFS4_BACK);
	ck_assert_uint_eq(bind_conn(n, 5, &got), NFS4ERR_INVAL);
	ncb_detach(b2);
	nc_close(n);
	ncb_free(b);
	ncb_free(b2);
	gw_down();
}
END_TEST

/*
 * A client whose callback service does not answer: the callback times out
 * (nfs4_cb_timeout), the path is "down" and SEQUENCE says CB_PATH_DOWN; a
 * client that answers CB_SEQUENCE with an error is a BACKCHANNEL_FAULT.
 * BACKCHANNEL_CTL re-probes (and refuses a list of only RPCSEC_GSS); once
 * answered, the flags clear.
 */
START_TEST(v41_back_channel_down_and_fault)
{
	const char *opts[] = { "nfs4_cb_timeout=1", NULL };
	struct nc *n;
	struct ncb *b;
	struct ncc c;
	uint32_t flags;
	uint64_t t0;
	int st;

	gw_up_opts(opts);
	n = nc_connect(port, 1);
	b = ncb_attach(n);
	ck_assert(create_session(n, "cb-down", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, RPC_AUTH_SYS) &
		  CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	ck_assert(WAIT_FOR(back_channel_is(n->clientid, "up"), 10));

	pthread_mutex_lock(&b->lock);
	b->mute = true;
	pthread_mutex_unlock(&b->lock);
	t0 = now_mono_ns();
	ck_assert_int_eq(cb_now(n->clientid, NULL), -ETIMEDOUT);
	ck_assert_uint_ge(now_mono_ns() - t0, 900000000ull);
	ck_assert(back_channel_is(n->clientid, "down"));
	flags = seq_flags(n);
	ck_assert_uint_eq(flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION),
			  SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);

	/* BACKCHANNEL_CTL with nothing we can call with */
	ncc_begin(&c, n);
	ncc_op(&c, OP_BACKCHANNEL_CTL);
	xdr_put_u32(&c.e, CB_PROG);
	xdr_put_u32(&c.e, 1);
	xdr_put_u32(&c.e, RPCSEC_GSS);
	xdr_put_u32(&c.e, 1);
	xdr_put_opaque(&c.e, "h", 1);
	xdr_put_opaque(&c.e, "c", 1);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_INVAL);

	/* the client answers again, and says so with BACKCHANNEL_CTL */
	pthread_mutex_lock(&b->lock);
	b->mute = false;
	b->cb_null = 0;
	pthread_mutex_unlock(&b->lock);
	ncc_begin(&c, n);
	ncc_op(&c, OP_BACKCHANNEL_CTL);
	xdr_put_u32(&c.e, CB_PROG);
	xdr_put_u32(&c.e, 1);
	xdr_put_u32(&c.e, RPC_AUTH_NONE);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	ck_assert(WAIT_FOR(NCB_GET(b, cb_null) >= 1, 10));
	ck_assert(WAIT_FOR(back_channel_is(n->clientid, "up"), 10));
	ck_assert_uint_eq(seq_flags(n) & PATH_DOWN_BITS, 0);
	/* the timed-out call's seqid is sent again: the client sees no gap */
	ck_assert_int_eq(cb_now(n->clientid, &st), 0);
	ck_assert_uint_eq(NCB_GET(b, misordered), 0);

	/* a wrong answer to CB_SEQUENCE */
	pthread_mutex_lock(&b->lock);
	b->seq_status = NFS4ERR_BADSESSION;
	pthread_mutex_unlock(&b->lock);
	ck_assert_int_ne(cb_now(n->clientid, NULL), 0);
	ck_assert(back_channel_is(n->clientid, "fault"));
	flags = seq_flags(n);
	ck_assert_msg(flags & SEQ4_STATUS_BACKCHANNEL_FAULT, "flags %#x", flags);
	ck_assert(flags & SEQ4_STATUS_CB_PATH_DOWN);
	ncb_detach(b);
	nc_close(n);
	ncb_free(b);
	gw_down();
}
END_TEST

/*
 * No back channel asked for: none granted, no callback is made, and
 * SEQUENCE reports no path problem (the client expects no callbacks).
 * Asked for with only an RPCSEC_GSS handle we cannot use (here: an
 * AUTH_SYS caller, so no context of its principal): none granted, no
 * callback, and SEQUENCE says CB_PATH_DOWN (RFC 8881 18.46.3: the client
 * has no working back channel and should make one).
 */
START_TEST(v41_no_back_channel)
{
	struct nc *n;
	struct ncb *b;

	gw_up();
	n = nc_connect(port, 1);
	b = ncb_attach(n);
	ck_assert_uint_eq(create_session(n, "cb-none", 0, RPC_AUTH_NONE) & CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 0);
	ck_assert_uint_eq(seq_flags(n) & PATH_DOWN_BITS, 0);
	ck_assert_int_eq(cb_now(n->clientid, NULL), -ENOTCONN);
	ck_assert(back_channel_is(n->clientid, "none"));
	ncb_detach(b);
	nc_close(n);
	ncb_free(b);

	n = nc_connect(port, 1);
	b = ncb_attach(n);
	ck_assert_uint_eq(create_session(n, "cb-gss", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, RPCSEC_GSS) &
			  CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 0);
	ck_assert_uint_eq(seq_flags(n) & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION),
			  SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	ck_assert_uint_eq(NCB_GET(b, cb_null) + NCB_GET(b, cb_compound), 0);
	ncb_detach(b);
	nc_close(n);
	ncb_free(b);
	gw_down();
}
END_TEST

/* SETCLIENTID naming @uaddr as the callback (program CB_PROG, ident 7), confirmed. */
static void setclientid_cb(struct nc *n, const char *id, const char *uaddr)
{
	struct ncc c;
	struct nrep r;

	ncc_begin_raw(&c, n, 0, 0);
	ncc_op(&c, OP_SETCLIENTID);
	xdr_put_u64(&c.e, 42);
	xdr_put_string(&c.e, id);
	xdr_put_u32(&c.e, CB_PROG);
	xdr_put_string(&c.e, "tcp");
	xdr_put_string(&c.e, uaddr);
	xdr_put_u32(&c.e, 7);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_SETCLIENTID), NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.d, &n->clientid), 0);
	ck_assert_int_eq(xdr_get_fixed(&r.d, n->confirm, NFS4_VERIFIER_SIZE), 0);
	rep_free(&r);
	ncc_begin_raw(&c, n, 0, 0);
	enc_setclientid_confirm(&c, n->clientid, n->confirm);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
}

struct srv40 {
	struct ncb *b;
	int lfd, cfd, ret;
};

static void *serve40(void *arg)
{
	struct srv40 *a = arg;

	a->ret = ncb40_serve_one(a->b, a->lfd, a->cfd, 10);
	return NULL;
}

/*
 * NFSv4.0: after SETCLIENTID_CONFIRM the gateway connects to the callback
 * address (the client's host, 127.0.0.1) and probes it with CB_NULL of the
 * client's program; `nfs client callback` calls again on that connection.
 * A callback address on another host (127.0.0.2 while the client is
 * 127.0.0.1) is never connected to: "down", saying why.
 */
START_TEST(v40_callback_probe)
{
	struct nc *n;
	struct ncb *b = calloc(1, sizeof(*b));
	uint16_t cport;
	int lfd, cfd, st = -1;
	char uaddr[64], v[128];
	struct pollfd p;

	pthread_mutex_init(&b->lock, NULL);
	gw_up();
	lfd = ncb40_listen(&cport);
	n = nc_connect(port, 0);
	snprintf(uaddr, sizeof(uaddr), "127.0.0.1.%u.%u", cport >> 8, cport & 0xff);
	setclientid_cb(n, "cb40-client", uaddr);
	cfd = ncb40_serve_one(b, lfd, -1, 10);
	ck_assert_msg(cfd >= 0, "the gateway did not call the 4.0 callback address");
	ck_assert_uint_eq(b->cb_null, 1);
	ck_assert_uint_eq(b->prog, CB_PROG);
	ck_assert(WAIT_FOR(clients_field(n->clientid, false, "callback", v, sizeof(v)) && !strcmp(v, "up"), 10));

	/* another call: on the same connection, answered (4.0: CB_NULL) */
	{
		struct srv40 a = { b, lfd, cfd, -1 };
		pthread_t t;

		ck_assert_int_eq(pthread_create(&t, NULL, serve40, &a), 0);
		ck_assert_int_eq(cb_now(n->clientid, &st), 0);
		pthread_join(t, NULL);
		ck_assert_int_eq(a.ret, cfd);
		ck_assert_uint_eq(b->cb_null, 2);
		/* the client closes the callback connection: the next call makes a new one */
		close(cfd);
		a.cfd = -1;
		a.ret = -1;
		ck_assert_int_eq(pthread_create(&t, NULL, serve40, &a), 0);
		ck_assert_int_eq(cb_now(n->clientid, &st), 0);
		pthread_join(t, NULL);
		ck_assert_int_ge(a.ret, 0);
		ck_assert_uint_eq(b->cb_null, 3);
		cfd = a.ret;
	}
	nc_close(n);

	/* another host's address */
	n = nc_connect(port, 0);
	snprintf(uaddr, sizeof(uaddr), "127.0.0.2.%u.%u", cport >> 8, cport & 0xff);
	setclientid_cb(n, "cb40-other-host", uaddr);
	ck_assert(clients_field(n->clientid, false, "callback", v, sizeof(v)));
	ck_assert_str_eq(v, "down");
	ck_assert(clients_field(n->clientid, false, "callback_why", v, sizeof(v)));
	ck_assert_msg(strstr(v, "not the client's host"), "%s", v);
	ck_assert_int_eq(cb_now(n->clientid, &st), -ENOTCONN);
	p = (struct pollfd){ .fd = lfd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 200), 0);      /* nobody connected */
	nc_close(n);
	close(cfd);
	close(lfd);
	pthread_mutex_destroy(&b->lock);
	free(b);
	gw_down();
}
END_TEST


/* ---- read delegations (nfs4_delegations = true) ----------------------------------- */

#define WANT_READ_DELEG 0x0100u
#define WANT_NO_DELEG 0x0400u

/* OPEN (no create) of @name in @dir: status; *@sid, *@fh, the delegation type in *@dt (0 none, 1 read, 2 write, 3 | why << 8 none_ext) and its stateid */
static uint32_t open_deleg_seq(struct nc *n, const struct nfs4_fh *dir, const char *name, uint32_t access,
			       const char *owner, uint32_t seqid, uint32_t *rflags, struct nfs4_stateid *sid,
			       struct nfs4_fh *fh, uint32_t *dt, struct nfs4_stateid *dsid)
{
	struct ncc c;
	struct nrep r;
	struct xdr_bitmap bm;
	uint32_t st, fl, t;

	ncc_begin(&c, n);
	enc_putfh(&c, dir);
	enc_open(&c, seqid, access, 0, owner, NC_NOCREATE, name);
	enc_getfh(&c);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_OPEN);
	if (st) {
		rep_free(&r);
		return st;
	}
	rep_stateid(&r, sid);
	ck_assert_int_eq(xdr_skip(&r.d, 20), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &fl), 0);
	if (rflags)
		*rflags = fl;
	ck_assert_int_eq(xdr_get_bitmap(&r.d, &bm), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &t), 0);
	*dt = t;
	if (t == 1 || t == 2) {          /* open_read_delegation4 / open_write_delegation4 */
		char who[64];
		bool recall;
		uint32_t v;

		rep_stateid(&r, dsid);
		ck_assert_int_eq(xdr_get_bool(&r.d, &recall), 0);
		ck_assert(!recall);
		if (t == 2) {            /* nfs_space_limit4: NFS_LIMIT_SIZE, no limit */
			uint64_t lim;

			ck_assert_int_eq(xdr_get_u32(&r.d, &v), 0);
			ck_assert_uint_eq(v, 1);
			ck_assert_int_eq(xdr_get_u64(&r.d, &lim), 0);
			ck_assert_uint_eq(lim, UINT64_MAX);
		}
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(xdr_get_u32(&r.d, &v), 0);
		ck_assert_int_eq(xdr_get_string(&r.d, who, sizeof(who), 63), 0);
		ck_assert_str_eq(who, "EVERYONE@");
	} else if (t == 3) {
		uint32_t why, b;

		ck_assert_int_eq(xdr_get_u32(&r.d, &why), 0);
		if (why == 1 || why == 2)
			ck_assert_int_eq(xdr_get_u32(&r.d, &b), 0);
		*dt = 3 | why << 8;
	} else {
		ck_assert_uint_eq(t, 0);
	}
	ck_assert_uint_eq(rep_next(&r, OP_GETFH), NFS4_OK);
	rep_fh(&r, fh);
	rep_free(&r);
	return NFS4_OK;
}

static uint32_t open_deleg(struct nc *n, const struct nfs4_fh *dir, const char *name, uint32_t access,
			   const char *owner, struct nfs4_stateid *sid, struct nfs4_fh *fh, uint32_t *dt,
			   struct nfs4_stateid *dsid)
{
	return open_deleg_seq(n, dir, name, access, owner, 0, NULL, sid, fh, dt, dsid);
}

/* PUTFH @fh + a stateid op (DELEGRETURN, FREE_STATEID, TEST_STATEID (its per-stateid status)) */
static uint32_t sid_op(struct nc *n, const struct nfs4_fh *fh, uint32_t op, const struct nfs4_stateid *sid)
{
	struct ncc c;
	struct nrep r;
	uint32_t st, cnt, one;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	ncc_op(&c, op);
	if (op == OP_TEST_STATEID)
		xdr_put_u32(&c.e, 1);
	enc_stateid(&c, sid);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, op);
	if (!st && op == OP_TEST_STATEID) {
		ck_assert_int_eq(xdr_get_u32(&r.d, &cnt), 0);
		ck_assert_int_eq(xdr_get_u32(&r.d, &one), 0);
		st = one;
	}
	rep_free(&r);
	return st;
}

/* READ of the first bytes of @fh with @sid: status; the data in @buf */
static uint32_t read_with(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, char *buf,
			  size_t len)
{
	struct ncc c;
	struct nrep r;
	const uint8_t *data;
	uint32_t st, dl;
	bool eof;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_read(&c, sid, 0, (uint32_t)len - 1);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_READ);
	if (!st) {
		rep_read(&r, &eof, &data, &dl);
		memcpy(buf, data, dl);
		buf[dl] = 0;
	}
	rep_free(&r);
	return st;
}

/* WRITE (UNSTABLE) of @data at 0 of @fh with @sid: status */
static uint32_t write_with(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, const char *data)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_write(&c, sid, 0, 0, data, (uint32_t)strlen(data));
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_WRITE);
	rep_free(&r);
	return st;
}

/* a 4.1 client with a back channel that answers, probed up */
static struct nc *cb_client(const char *owner, struct ncb **b)
{
	struct nc *n = nc_connect(port, 1);

	*b = ncb_attach(n);
	ck_assert(create_session(n, owner, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, RPC_AUTH_SYS) &
		  CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	ck_assert(WAIT_FOR(back_channel_is(n->clientid, "up"), 10));
	return n;
}

/*
 * A reader gets a read delegation and reads with its stateid; another
 * client's OPEN for writing is NFS4ERR_DELAY while the gateway recalls it
 * (CB_RECALL with the delegation's stateid and the file's handle, once),
 * and goes through once the holder returns it (DELEGRETURN).  No
 * delegation while a writer has the file open, none without a callback
 * path, none for WANT_NO_DELEG (OPEN_DELEGATE_NONE_EXT, WND4_NOT_WANTED).
 * (Before: OPEN never granted one: delegation type 0 / NONE_EXT.)
 */
START_TEST(v41_read_delegation_recalled_by_a_writer)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct nfs4_stateid sa, dsa, sb, dsb, sc, dsc;
	struct nfs4_fh dfh, ffh, fh2;
	struct nc *a, *b, *c3;
	struct ncb *ba;
	uint32_t dt = 99;
	char buf[64];

	gw_up_opts(opts);
	a = cb_client("dg-reader", &ba);
	test_dir(a, "dg1", &dfh);
	make_file("f", "hello delegation", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ | WANT_READ_DELEG, "ownA", &sa, &ffh, &dt,
				     &dsa), NFS4_OK);
	ck_assert_msg(dt == 1, "no read delegation (type %#x)", dt);
	ck_assert_uint_eq(read_with(a, &ffh, &dsa, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "hello delegation");

	/* a writer: DELAY while the delegation is recalled */
	b = nc_connect(port, 1);
	nc_session(b, "dg-writer", 2);
	ck_assert_uint_eq(open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_WRITE, "ownB", &sb, &fh2, &dt, &dsb),
			  NFS4ERR_DELAY);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 10), "no CB_RECALL");
	pthread_mutex_lock(&ba->lock);
	ck_assert_int_eq(memcmp(ba->recall_sid.other, dsa.other, NFS4_OTHER_SIZE), 0);
	ck_assert_uint_eq(ba->recall_fh.len, ffh.len);
	ck_assert_int_eq(memcmp(ba->recall_fh.data, ffh.data, ffh.len), 0);
	pthread_mutex_unlock(&ba->lock);
	ck_assert_uint_eq(open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_WRITE, "ownB", &sb, &fh2, &dt, &dsb),
			  NFS4ERR_DELAY);
	ck_assert_uint_eq(NCB_GET(ba, recalls), 1);         /* recalled once */

	/* returned: the writer goes through */
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4ERR_BAD_STATEID);
	ck_assert_uint_eq(open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_WRITE, "ownB", &sb, &fh2, &dt, &dsb), NFS4_OK);
	ck_assert_uint_eq(dt, 0);

	/* with a writer there, a reader gets none (and says why it wanted one) */
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ | WANT_READ_DELEG, "ownA", &sa, &ffh, &dt,
				     &dsa), NFS4_OK);
	ck_assert_uint_eq(dt & 0xff, 3);
	/* WANT_NO_DELEG, on another file nobody writes */
	make_file("g", "g", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "g", OS_SHARE_ACCESS_READ | WANT_NO_DELEG, "ownA", &sa, &ffh, &dt,
				     &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 3 | 0 << 8);
	/* no callback path: no delegation */
	c3 = nc_connect(port, 1);
	nc_session(c3, "dg-nocb", 3);
	make_file("h", "h", 0666);
	ck_assert_uint_eq(open_deleg(c3, &dfh, "h", OS_SHARE_ACCESS_READ, "ownC", &sc, &ffh, &dt, &dsc), NFS4_OK);
	ck_assert_uint_eq(dt, 0);
	ncb_detach(ba);
	nc_close(a);
	nc_close(b);
	nc_close(c3);
	ncb_free(ba);
	gw_down();
}
END_TEST

/*
 * A holder that answers CB_RECALL but never returns the delegation loses
 * it a lease after the recall: the writer's OPEN then proceeds, the holder
 * sees SEQ4_STATUS_RECALLABLE_STATE_REVOKED, its stateid answers
 * NFS4ERR_DELEG_REVOKED (READ, TEST_STATEID, DELEGRETURN) until
 * FREE_STATEID, which clears the flag.
 */
START_TEST(v41_unreturned_delegation_revoked)
{
	const char *opts[] = { "nfs4_delegations=true", "nfs4_lease_time=3", NULL };
	struct nfs4_stateid sa, dsa, sb, dsb;
	struct nfs4_fh dfh, ffh, fh2;
	struct nc *a, *b;
	struct ncb *ba;
	uint32_t dt = 99, st, flags;
	uint64_t t0, waited;
	char buf[64];

	gw_up_opts(opts);
	a = cb_client("dg-keeper", &ba);
	test_dir(a, "dg2", &dfh);
	make_file("f", "kept", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 1);
	b = nc_connect(port, 1);
	nc_session(b, "dg-impatient", 4);
	t0 = now_mono_ns();
	do {
		st = open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_WRITE, "ownB", &sb, &fh2, &dt, &dsb);
		flags = seq_flags(a);            /* the holder stays alive, and says nothing */
		if (st == NFS4ERR_DELAY)
			usleep(200000);
	} while (st == NFS4ERR_DELAY && now_mono_ns() - t0 < 20000000000ull);
	waited = now_mono_ns() - t0;
	ck_assert_uint_eq(st, NFS4_OK);
	ck_assert_msg(waited >= 2500000000ull, "the delegation went after %.1f s, before its lease", waited / 1e9);
	ck_assert_uint_ge(NCB_GET(ba, recalls), 1);
	flags = seq_flags(a);
	ck_assert_msg(flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, "flags %#x", flags);
	ck_assert_uint_eq(read_with(a, &ffh, &dsa, buf, sizeof(buf)), NFS4ERR_DELEG_REVOKED);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_TEST_STATEID, &dsa), NFS4ERR_DELEG_REVOKED);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4ERR_DELEG_REVOKED);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_FREE_STATEID, &dsa), NFS4_OK);
	ck_assert_uint_eq(seq_flags(a) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_TEST_STATEID, &dsa), NFS4ERR_BAD_STATEID);
	/* the holder's own open is untouched */
	ck_assert_uint_eq(read_with(a, &ffh, &sa, buf, sizeof(buf)), NFS4_OK);
	ncb_detach(ba);
	nc_close(a);
	nc_close(b);
	ncb_free(ba);
	gw_down();
}
END_TEST


struct local_writer {
	struct lc_inode *in;
	const char *data;
	_Atomic bool broke, done;
	int r;
};

/* What the FUSE frontend does for open(O_WRONLY) + write: open, break the delegations, write. */
static void *local_writer_main(void *arg)
{
	struct local_writer *w = arg;
	struct lc_fh *fh = NULL;

	w->r = lc_open(lc, w->in, O_WRONLY, &rootcr, &fh);
	if (!w->r) {
		lc_break_for_write(lc, lc_ino(w->in), true);
		atomic_store(&w->broke, true);
		if (lc_write(lc, fh, 0, strlen(w->data), w->data) != (ssize_t)strlen(w->data))
			w->r = -EIO;
		lc_release(lc, fh);
	}
	atomic_store(&w->done, true);
	return NULL;
}

/*
 * A writer beside the gateway in the same process (what the FUSE mount's
 * open for writing does: lc_break_for_write) recalls the NFS client's read
 * delegation and waits until it is returned before it writes; the NFS
 * client then sees the new data.  While such a writer has the file open,
 * no delegation is granted.
 */
START_TEST(v41_delegation_recalled_by_a_local_writer)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct local_writer w = { .data = "written by the local writer" };
	struct nfs4_stateid sa, dsa;
	struct nfs4_fh dfh, ffh;
	struct lc_inode *d;
	struct nc *a;
	struct ncb *ba;
	struct lc_fh *wfh = NULL;
	uint32_t dt = 99;
	pthread_t t;
	char buf[64];

	gw_up_opts(opts);
	a = cb_client("dg-local", &ba);
	test_dir(a, "dg3", &dfh);
	make_file("f", "old content", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 1);
	ck_assert_int_eq(lc_lookup(lc, lroot, "dg3", &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_lookup(lc, d, "f", &rootcr, NULL, &w.in), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, local_writer_main, &w), 0);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 10), "the local writer recalled nothing");
	ck_assert(!atomic_load(&w.broke));               /* it waits for the delegation */
	ck_assert_uint_eq(read_with(a, &ffh, &dsa, buf, sizeof(buf)), NFS4_OK);   /* still valid meanwhile */
	ck_assert_str_eq(buf, "old content");
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert(WAIT_FOR(atomic_load(&w.done), 10));
	pthread_join(t, NULL);
	ck_assert_int_eq(w.r, 0);
	ck_assert_uint_eq(read_with(a, &ffh, &sa, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "written by the local writer");

	/* a local writer holds the file open: no delegation for a reader */
	ck_assert_int_eq(lc_open(lc, w.in, O_WRONLY, &rootcr, &wfh), 0);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ, "ownA2", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 0);
	lc_release(lc, wfh);
	lc_put(lc, w.in);
	lc_put(lc, d);
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST


/* An NFSv3 call of @proc: v3_begin, its arguments into @e, then v3_call (on
 * a connection of its own): the reply's nfsstat3 */
static void v3_begin(struct xdr_enc *e, uint32_t proc)
{
	static _Atomic uint32_t xid = 777000;

	xdr_enc_init(e, 4096);
	trpc_call_header(e, atomic_fetch_add(&xid, 1), NFS4_PROGRAM, 3, proc);
}

static uint32_t v3_call(struct xdr_enc *e)
{
	struct trpc_reply r;
	uint8_t *buf;
	size_t len;
	uint32_t st = 99999;
	int fd = trpc_connect(port);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(trpc_send_record(fd, e->buf, e->len, 0), 0);
	xdr_enc_free(e);
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	ck_assert_int_eq(xdr_get_u32(&r.res, &st), 0);
	free(buf);
	close(fd);
	return st;
}

/* NFSv3 WRITE (FILE_SYNC) of @data at 0 through handle @fh: the nfsstat3 */
static uint32_t v3_write(const struct nfs4_fh *fh, const char *data)
{
	struct xdr_enc e;

	v3_begin(&e, 7);
	xdr_put_opaque(&e, fh->data, fh->len);
	xdr_put_u64(&e, 0);
	xdr_put_u32(&e, (uint32_t)strlen(data));
	xdr_put_u32(&e, 2);                      /* FILE_SYNC */
	xdr_put_opaque(&e, data, (uint32_t)strlen(data));
	return v3_call(&e);
}

/*
 * An NFSv3 WRITE to a file an NFSv4 client holds a read delegation on is
 * NFS3ERR_JUKEBOX while the delegation is recalled (knfsd's answer), and
 * goes through once it is returned; the NFSv4 client reads what v3 wrote.
 */
START_TEST(v3_write_recalls_a_delegation)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct nfs4_stateid sa, dsa;
	struct nfs4_fh dfh, ffh;
	struct nc *a;
	struct ncb *ba;
	uint32_t dt = 99;
	char buf[64];

	gw_up_opts(opts);
	a = cb_client("dg-v3", &ba);
	test_dir(a, "dg4", &dfh);
	make_file("f", "before v3", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 1);
	ck_assert_uint_eq(v3_write(&ffh, "written over v3"), 10008);    /* NFS3ERR_JUKEBOX */
	ck_assert(WAIT_FOR(NCB_GET(ba, recalls) == 1, 10));
	ck_assert_uint_eq(v3_write(&ffh, "written over v3"), 10008);    /* still out */
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert_uint_eq(v3_write(&ffh, "written over v3"), 0);
	ck_assert_uint_eq(read_with(a, &ffh, &sa, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "written over v3");
	ck_assert_uint_eq(NCB_GET(ba, recalls), 1);
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST


struct cb40_srv {
	struct ncb *b;
	int lfd;
	_Atomic bool stop;
};

/* the 4.0 client's callback service: answer every call until told to stop
 * (the connection is kept open while idle, as a client's callback server does) */
static void *cb40_main(void *arg)
{
	struct cb40_srv *s = arg;
	int cfd = -1;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = { .fd = cfd >= 0 ? cfd : s->lfd, .events = POLLIN };

		if (poll(&p, 1, 100) != 1)
			continue;
		cfd = ncb40_serve_one(s->b, s->lfd, cfd, 5);   /* -1: closed, accept again */
	}
	if (cfd >= 0)
		close(cfd);
	return NULL;
}

/*
 * NFSv4.0: a confirmed open-owner of a client whose callback address
 * answered gets a read delegation (not the OPEN that still needs
 * OPEN_CONFIRM); a 4.1 writer's OPEN recalls it with CB_RECALL over the
 * gateway's own connection to the 4.0 client (minor version 0, the
 * callback_ident SETCLIENTID gave), and DELEGRETURN lets the writer in.
 */
START_TEST(v40_read_delegation_recalled)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct ncb *b = calloc(1, sizeof(*b));
	struct cb40_srv srv = { .b = b };
	struct nfs4_stateid s1, s2, d2, sb, db;
	struct nfs4_fh dfh, f1, f2, fb;
	struct nc *n, *w;
	struct ncc c;
	struct nrep r;
	uint16_t cport;
	uint32_t seq = 0, fl = 0, dt = 99;
	char uaddr[64], v[64];
	pthread_t t;

	pthread_mutex_init(&b->lock, NULL);
	gw_up_opts(opts);
	srv.lfd = ncb40_listen(&cport);
	ck_assert_int_eq(pthread_create(&t, NULL, cb40_main, &srv), 0);
	n = nc_connect(port, 0);
	snprintf(uaddr, sizeof(uaddr), "127.0.0.1.%u.%u", cport >> 8, cport & 0xff);
	setclientid_cb(n, "dg40-client", uaddr);
	ck_assert(WAIT_FOR(clients_field(n->clientid, false, "callback", v, sizeof(v)) && !strcmp(v, "up"), 10));
	test_dir(n, "dg5", &dfh);
	make_file("a", "first", 0666);
	make_file("b", "second file", 0666);
	ck_assert_uint_eq(open_deleg_seq(n, &dfh, "a", OS_SHARE_ACCESS_READ, "o40", seq++, &fl, &s1, &f1, &dt, &d2),
			  NFS4_OK);
	ck_assert(fl & 0x2);                     /* OPEN4_RESULT_CONFIRM */
	ck_assert_uint_eq(dt, 0);                /* not before the owner is confirmed */
	ncc_begin(&c, n);
	enc_putfh(&c, &f1);
	enc_open_confirm(&c, &s1, seq++);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_OPEN_CONFIRM), NFS4_OK);
	rep_free(&r);
	ck_assert_uint_eq(open_deleg_seq(n, &dfh, "b", OS_SHARE_ACCESS_READ, "o40", seq++, &fl, &s2, &f2, &dt, &d2),
			  NFS4_OK);
	ck_assert_msg(dt == 1, "no 4.0 read delegation (type %#x)", dt);

	w = nc_connect(port, 1);
	nc_session(w, "dg40-writer", 5);
	ck_assert_uint_eq(open_deleg(w, &dfh, "b", OS_SHARE_ACCESS_WRITE, "ownW", &sb, &fb, &dt, &db), NFS4ERR_DELAY);
	ck_assert_msg(WAIT_FOR(NCB_GET(b, recalls) == 1, 10), "no CB_RECALL to the 4.0 client");
	ck_assert_uint_eq(NCB_GET(b, minor), 0);
	ck_assert_uint_eq(NCB_GET(b, ident), 7);
	pthread_mutex_lock(&b->lock);
	ck_assert_int_eq(memcmp(b->recall_sid.other, d2.other, NFS4_OTHER_SIZE), 0);
	pthread_mutex_unlock(&b->lock);
	ck_assert_uint_eq(sid_op(n, &f2, OP_DELEGRETURN, &d2), NFS4_OK);
	ck_assert_uint_eq(open_deleg(w, &dfh, "b", OS_SHARE_ACCESS_WRITE, "ownW", &sb, &fb, &dt, &db), NFS4_OK);
	nc_close(w);
	nc_close(n);
	atomic_store(&srv.stop, true);
	pthread_join(t, NULL);
	close(srv.lfd);
	pthread_mutex_destroy(&b->lock);
	free(b);
	gw_down();
}
END_TEST


/*
 * Another process with a client of its own of the same MDS (as another
 * loligo-fuse would be; it opens the store like any client): opens
 * @dir/@name for writing, says 'o' on @fd once the open returned, writes
 * @data, syncs and exits 0 (or the step that failed).
 */
static void other_writer(int fd, const char *dir, const char *name, const char *data)
{
	struct lclient *c;
	struct lc_inode *r, *d, *in;
	struct lc_fh *fh;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (lclient_create(&c) || lclient_mount(c, NULL))
		_exit(2);
	r = lc_root(c);
	if (lc_lookup(c, r, dir, &rootcr, NULL, &d) || lc_lookup(c, d, name, &rootcr, NULL, &in))
		_exit(3);
	if (lc_open(c, in, O_WRONLY, &rootcr, &fh))   /* the MDS revokes the gateway's caps first */
		_exit(4);
	if (write(fd, "o", 1) != 1)
		_exit(5);
	if (lc_write(c, fh, 0, strlen(data), data) != (ssize_t)strlen(data) || lc_fsync(c, fh, false))
		_exit(6);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
	lc_put(c, r);
	lclient_unmount(c);
	lclient_destroy(c);
	_exit(0);
}

static void other_reader(int fd, const char *dir, const char *name);

/*
 * Another client of the same MDS in a process of its own: this binary
 * exec'd again (tests/test_child.h: a forked copy of this process, which
 * runs the gateway's threads, must not mount anything) as the "writer"
 * (other_writer(@fd, @d, @name, @data)) or the "reader" (other_reader).
 */
static pid_t spawn_other(int fd, const char *role, const char *d, const char *name, const char *data)
{
	char addr[64], fds[16], lf[PATH_MAX + 16];
	pid_t pid;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", M.port);
	snprintf(fds, sizeof(fds), "%d", fd);
	snprintf(lf, sizeof(lf), "%s/other.log", dir);
	pid = test_child_spawn((const char *const[]){ role, conf, addr, lf, fds, d, name, data ? data : "", NULL });
	ck_assert_int_gt(pid, 0);
	return pid;
}

/* The child's main: ROLE CONF MDS_ADDR LOG_FILE FD DIR NAME DATA. */
static int child_main(int argc, char **argv)
{
	char err[256];
	int fd;

	if (argc != 8)
		return 2;
	fd = atoi(argv[4]);
	cfg_init("client");
	if (cfg_load_file(argv[1], err, sizeof(err)) ||
	    cfg_set(cfg_lookup("client_mds_addr"), argv[2], false, err, sizeof(err)) ||
	    cfg_set(cfg_lookup("log_file"), argv[3], false, err, sizeof(err))) {
		fprintf(stderr, "test_nfs4_gw_cb child: %s\n", err);
		return 2;
	}
	if (!strcmp(argv[0], "writer"))
		other_writer(fd, argv[5], argv[6], argv[7]);
	else if (!strcmp(argv[0], "reader"))
		other_reader(fd, argv[5], argv[6]);
	return 2;
}

/* Is there a byte to read on @fd within @ms? */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/*
 * The issue's test: a read delegation is granted while the gateway's client
 * holds the file's caps; another process's client of the same MDS opening
 * the file for writing makes the MDS revoke them, the gateway recalls the
 * delegation (CB_RECALL) and the other client's open waits for the
 * DELEGRETURN; the NFS client then reads what the other client wrote.
 */
START_TEST(v41_delegation_recalled_by_another_client)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	const char *data = "the other client wrote this";
	struct nfs4_stateid sa, dsa;
	struct nfs4_fh dfh, ffh;
	struct nc *a;
	struct ncb *ba;
	uint32_t dt = 99;
	uint64_t t0, t_recall, t_ret;
	int p[2], st = -1;
	pid_t child;
	char buf[64], k;

	gw_up_opts(opts);
	a = cb_client("dg-other", &ba);
	test_dir(a, "dg6", &dfh);
	make_file("f", "what the gateway had", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_READ, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_msg(dt == 1, "no read delegation (type %#x): caps not held?", dt);
	ck_assert_int_eq(pipe(p), 0);
	t0 = now_mono_ns();
	child = spawn_other(p[1], "writer", "dg6", "f", data);
	close(p[1]);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 20), "the other client's open recalled nothing");
	t_recall = now_mono_ns();
	ck_assert_msg(!readable(p[0], 200), "the other client's open did not wait for the delegation");
	t_ret = now_mono_ns();
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert_msg(readable(p[0], 30000), "the other client's open still waits after DELEGRETURN");
	ck_assert_int_eq(read(p[0], &k, 1), 1);
	fprintf(stderr, "another client's open: CB_RECALL after %.1f ms, open returned %.1f ms after DELEGRETURN\n",
		(double)(t_recall - t0) / 1e6, (double)(now_mono_ns() - t_ret) / 1e6);
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	close(p[0]);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other client failed (status %#x)", st);
	ck_assert_uint_eq(read_with(a, &ffh, &sa, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, data);
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST

/* Fork another client of the same MDS: other_writer(@dir, @name, @data); *@rfd reads its 'o'. */
static pid_t spawn_writer(const char *dir, const char *name, const char *data, int *rfd)
{
	int p[2];
	pid_t child;

	ck_assert_int_eq(pipe(p), 0);
	child = spawn_other(p[1], "writer", dir, name, data);
	close(p[1]);
	*rfd = p[0];
	return child;
}

static void reap_writer(pid_t child, int rfd)
{
	int st = -1;

	ck_assert_int_eq(waitpid(child, &st, 0), child);
	close(rfd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other client failed (status %#x)", st);
}

/*
 * A recall the NFS client does not answer holds only its own file's cap
 * revoke: the gateway defers that ack (client.h LC_REVOKE_DEFERRED) and
 * the client's flusher goes on, so another file's revoke - another
 * client's open of a second delegated file - is recalled and acked as
 * soon as that delegation comes back, while the first is still out.
 * (Before: the first recall held the client's one flusher thread for
 * min(lease, 20 s), and the second file's revoke, recall and the other
 * client's open waited behind it.)
 */
START_TEST(v41_pending_recall_does_not_hold_other_revokes)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct nfs4_stateid s1, d1, s2, d2;
	struct nfs4_fh dfh, f1, f2;
	struct nc *a;
	struct ncb *ba;
	uint32_t dt = 99;
	uint64_t t0, t_ret2, t_open2;
	pid_t c1, c2;
	int p1, p2;
	char buf[64], k;

	gw_up_opts(opts);
	a = cb_client("dg-two", &ba);
	test_dir(a, "dg7", &dfh);
	make_file("f1", "one", 0666);
	make_file("f2", "two", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f1", OS_SHARE_ACCESS_READ, "ownA", &s1, &f1, &dt, &d1), NFS4_OK);
	ck_assert_msg(dt == 1, "no read delegation on f1 (type %#x)", dt);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f2", OS_SHARE_ACCESS_READ, "ownA", &s2, &f2, &dt, &d2), NFS4_OK);
	ck_assert_msg(dt == 1, "no read delegation on f2 (type %#x)", dt);

	/* f1: recalled, and we do not return it */
	c1 = spawn_writer("dg7", "f1", "first", &p1);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 20), "the first client's open recalled nothing");
	pthread_mutex_lock(&ba->lock);
	ck_assert_int_eq(memcmp(ba->recall_sid.other, d1.other, NFS4_OTHER_SIZE), 0);
	pthread_mutex_unlock(&ba->lock);

	/* f2: its revoke is not stuck behind f1's */
	t0 = now_mono_ns();
	c2 = spawn_writer("dg7", "f2", "second", &p2);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 2, 8),
		      "f2's revoke did not recall f2 within 8 s while f1's recall was out (%u recalls)",
		      NCB_GET(ba, recalls));
	pthread_mutex_lock(&ba->lock);
	ck_assert_int_eq(memcmp(ba->recall_sid.other, d2.other, NFS4_OTHER_SIZE), 0);
	pthread_mutex_unlock(&ba->lock);
	t_ret2 = now_mono_ns();
	ck_assert_uint_eq(sid_op(a, &f2, OP_DELEGRETURN, &d2), NFS4_OK);
	ck_assert_msg(readable(p2, 8000), "the second client's open waits although f2's delegation was returned");
	t_open2 = now_mono_ns();
	ck_assert_int_eq(read(p2, &k, 1), 1);
	ck_assert_msg(!readable(p1, 0), "the first client's open returned while f1's delegation is out");
	fprintf(stderr, "f2 recalled %.1f ms after its writer started, acked (open returned) %.1f ms after "
		"DELEGRETURN, with f1's recall pending\n", (double)(t_ret2 - t0) / 1e6,
		(double)(t_open2 - t_ret2) / 1e6);
	reap_writer(c2, p2);

	/* f1 returned: the first client goes on too */
	ck_assert_uint_eq(sid_op(a, &f1, OP_DELEGRETURN, &d1), NFS4_OK);
	ck_assert_msg(readable(p1, 30000), "the first client's open still waits after DELEGRETURN");
	ck_assert_int_eq(read(p1, &k, 1), 1);
	reap_writer(c1, p1);
	ck_assert_uint_eq(read_with(a, &f1, &s1, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "first");
	ck_assert_uint_eq(read_with(a, &f2, &s2, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "second");
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST

/* ---- this gateway's own conflicting requests recall (RFC 8881 10.4.4) ------------------ */

enum own_op { OWN_REMOVE, OWN_RENAME, OWN_RENAME_OVER, OWN_LINK, OWN_SETSIZE, OWN_CHMOD, OWN_TRUNC_OPEN };

/*
 * One of the gateway's own requests on @name in @dir by @n (@fh: the
 * file's handle for LINK / SETATTR; @to: RENAME's / LINK's new name):
 * the status of that operation (RENAME_OVER: @to is renamed over @name).  SETATTR goes with the anonymous stateid
 * (no open), the truncating OPEN is an UNCHECKED4 create with size 0 of
 * the existing file (read/write, owner "trunc").
 */
static uint32_t own_op(struct nc *n, const struct nfs4_fh *dir, const struct nfs4_fh *fh, enum own_op op,
		       const char *name, const char *to)
{
	static const struct nfs4_stateid anon = { 0 };
	struct ncc c;
	uint32_t last;

	ncc_begin(&c, n);
	switch (op) {
	case OWN_REMOVE:
		enc_putfh(&c, dir);
		enc_remove(&c, name);
		last = OP_REMOVE;
		break;
	case OWN_RENAME:
		enc_putfh(&c, dir);
		enc_savefh(&c);
		enc_putfh(&c, dir);
		enc_rename(&c, name, to);
		last = OP_RENAME;
		break;
	case OWN_RENAME_OVER:                    /* @to replaces @name */
		enc_putfh(&c, dir);
		enc_savefh(&c);
		enc_putfh(&c, dir);
		enc_rename(&c, to, name);
		last = OP_RENAME;
		break;
	case OWN_LINK:
		enc_putfh(&c, fh);
		enc_savefh(&c);
		enc_putfh(&c, dir);
		enc_name(&c, OP_LINK, to);
		last = OP_LINK;
		break;
	case OWN_SETSIZE:
		enc_putfh(&c, fh);
		enc_setattr_size(&c, &anon, 0);
		last = OP_SETATTR;
		break;
	case OWN_CHMOD: {
		uint32_t w[3] = { 0, 1u << (33 - 32), 0 };
		uint8_t v[4];

		xdr_store_u32(v, 0600);
		enc_putfh(&c, fh);
		enc_setattr_raw(&c, &anon, w, v, 4);
		last = OP_SETATTR;
		break;
	}
	case OWN_TRUNC_OPEN:
	default: {
		uint32_t w[2] = { 1u << 4, 0 };  /* FATTR4_SIZE */
		uint8_t v[8] = { 0 };

		enc_putfh(&c, dir);
		enc_open_head(&c, 0, OS_SHARE_ACCESS_BOTH, 0, n->clientid, "trunc");
		xdr_put_u32(&c.e, 1);            /* OPEN4_CREATE */
		xdr_put_u32(&c.e, 0);            /* UNCHECKED4 */
		xdr_put_bitmap(&c.e, w, 1);
		xdr_put_opaque(&c.e, v, 8);
		xdr_put_u32(&c.e, 0);            /* CLAIM_NULL */
		xdr_put_string(&c.e, name);
		last = OP_OPEN;
		break;
	}
	}
	(void)last;
	return ncc_status(&c);   /* PUTFH/SAVEFH succeed: the status is the last op's */
}

/* The size of @name in the test directory as the gateway's client sees it; -1: no such file. */
static long long file_size(const char *name)
{
	struct lc_inode *d, *in;
	struct lc_attr a;
	long long sz = -1;

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	if (!lc_lookup(lc, d, name, &rootcr, &a, &in)) {
		ck_assert_int_eq(lc_getattr(lc, in, &rootcr, true, &a), 0);
		sz = (long long)a.size;
		lc_put(lc, in);
	}
	lc_put(lc, d);
	return sz;
}

/* Client @a holds a read delegation on a new file @name (content @data): its handle and delegation stateid. */
static void delegated_file(struct nc *a, const struct nfs4_fh *dfh, const char *name, const char *data,
			   struct nfs4_fh *ffh, struct nfs4_stateid *dsa)
{
	struct nfs4_stateid sa;
	uint32_t dt = 99;

	make_file(name, data, 0666);
	ck_assert_uint_eq(open_deleg(a, dfh, name, OS_SHARE_ACCESS_READ, "ownA", &sa, ffh, &dt, dsa), NFS4_OK);
	ck_assert_msg(dt == 1, "no read delegation on %s (type %#x)", name, dt);
}

/*
 * Another client's @op on a delegated file, through this gateway (the MDS
 * revokes nothing from the client that asks): NFS4ERR_DELAY and one
 * CB_RECALL while the delegation is out - and the file unchanged - then
 * through after DELEGRETURN.  @recalls: the holder's recalls so far.
 */
static void own_op_recalls(struct nc *a, struct ncb *ba, struct nc *b, const struct nfs4_fh *dfh, enum own_op op,
			   const char *name, const char *to, unsigned int *recalls)
{
	struct nfs4_stateid dsa;
	struct nfs4_fh ffh;
	const char *data = "the holder caches this";
	long long sz;

	delegated_file(a, dfh, name, data, &ffh, &dsa);
	ck_assert_msg(own_op(b, dfh, &ffh, op, name, to) == NFS4ERR_DELAY,
		      "op %d on %s: not NFS4ERR_DELAY over another client's delegation", op, name);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == *recalls + 1, 10), "op %d on %s: no CB_RECALL", op, name);
	pthread_mutex_lock(&ba->lock);
	ck_assert_int_eq(memcmp(ba->recall_sid.other, dsa.other, NFS4_OTHER_SIZE), 0);
	pthread_mutex_unlock(&ba->lock);
	/* nothing changed while the holder may still trust its cache */
	sz = file_size(name);
	ck_assert_msg(sz == (long long)strlen(data), "op %d changed %s (size %lld) before the delegation came back",
		      op, name, sz);
	ck_assert_uint_eq(own_op(b, dfh, &ffh, op, name, to), NFS4ERR_DELAY);   /* still out */
	ck_assert_uint_eq(NCB_GET(ba, recalls), *recalls + 1);                   /* recalled once */
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert_uint_eq(own_op(b, dfh, &ffh, op, name, to), NFS4_OK);
	(*recalls)++;
}

/*
 * REMOVE, RENAME (the file renamed, and a file a rename replaces), LINK,
 * SETATTR of the size and of the mode with the anonymous stateid, and an
 * UNCHECKED4 OPEN that truncates the file to 0, by another 4.1 client of
 * this gateway: each recalls the holder's delegation and answers
 * NFS4ERR_DELAY until DELEGRETURN.  The holder's own REMOVE / SETATTR do
 * not recall.  (Before: each went through over the delegation at once; the
 * truncating OPEN truncated before it looked at the delegation.)
 */
START_TEST(v41_own_requests_recall_other_clients_delegations)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct nfs4_stateid dsa;
	struct nfs4_fh dfh, ffh;
	struct nc *a, *b;
	struct ncb *ba;
	unsigned int recalls = 0;

	gw_up_opts(opts);
	a = cb_client("dg-holder", &ba);
	test_dir(a, "dg8", &dfh);
	b = nc_connect(port, 1);
	nc_session(b, "dg-other-op", 9);

	own_op_recalls(a, ba, b, &dfh, OWN_REMOVE, "rm", NULL, &recalls);
	ck_assert_int_eq(file_size("rm"), -1);
	own_op_recalls(a, ba, b, &dfh, OWN_RENAME, "mv", "mv2", &recalls);
	ck_assert_int_eq(file_size("mv"), -1);
	make_file("src", "src", 0666);
	own_op_recalls(a, ba, b, &dfh, OWN_RENAME_OVER, "dst", "src", &recalls);
	ck_assert_int_eq(file_size("src"), -1);
	ck_assert_int_eq(file_size("dst"), 3);
	own_op_recalls(a, ba, b, &dfh, OWN_LINK, "ln", "ln2", &recalls);
	ck_assert_int_eq(file_size("ln2"), (long long)strlen("the holder caches this"));
	own_op_recalls(a, ba, b, &dfh, OWN_SETSIZE, "sz", NULL, &recalls);
	ck_assert_int_eq(file_size("sz"), 0);
	own_op_recalls(a, ba, b, &dfh, OWN_CHMOD, "ch", NULL, &recalls);
	own_op_recalls(a, ba, b, &dfh, OWN_TRUNC_OPEN, "tr", NULL, &recalls);
	ck_assert_int_eq(file_size("tr"), 0);

	/* the holder's own requests keep its delegation */
	delegated_file(a, &dfh, "mine", "mine", &ffh, &dsa);
	ck_assert_uint_eq(own_op(a, &dfh, &ffh, OWN_CHMOD, "mine", NULL), NFS4_OK);
	ck_assert_uint_eq(own_op(a, &dfh, &ffh, OWN_REMOVE, "mine", NULL), NFS4_OK);
	ck_assert_uint_eq(NCB_GET(ba, recalls), recalls);
	ncb_detach(ba);
	nc_close(a);
	nc_close(b);
	ncb_free(ba);
	gw_down();
}
END_TEST

enum v3_op { V3_REMOVE = 12, V3_RENAME = 14, V3_LINK = 15, V3_SETATTR_MODE = 2 };

/* An NFSv3 @op (REMOVE/RENAME @name -> @to in @dir, LINK @fh as @to, SETATTR mode of @fh): its status. */
static uint32_t v3_op(enum v3_op op, const struct nfs4_fh *dir, const struct nfs4_fh *fh, const char *name,
		      const char *to)
{
	struct xdr_enc e;

	v3_begin(&e, op);
	switch (op) {
	case V3_REMOVE:
		xdr_put_opaque(&e, dir->data, dir->len);
		xdr_put_string(&e, name);
		break;
	case V3_RENAME:
		xdr_put_opaque(&e, dir->data, dir->len);
		xdr_put_string(&e, name);
		xdr_put_opaque(&e, dir->data, dir->len);
		xdr_put_string(&e, to);
		break;
	case V3_LINK:
		xdr_put_opaque(&e, fh->data, fh->len);
		xdr_put_opaque(&e, dir->data, dir->len);
		xdr_put_string(&e, to);
		break;
	case V3_SETATTR_MODE:
		xdr_put_opaque(&e, fh->data, fh->len);
		xdr_put_bool(&e, true);          /* mode */
		xdr_put_u32(&e, 0600);
		xdr_put_bool(&e, false);         /* uid, gid, size */
		xdr_put_bool(&e, false);
		xdr_put_bool(&e, false);
		xdr_put_u32(&e, 0);              /* atime, mtime: DONT_CHANGE */
		xdr_put_u32(&e, 0);
		xdr_put_bool(&e, false);         /* no guard */
		break;
	}
	return v3_call(&e);
}

/*
 * NFSv3 REMOVE, RENAME, LINK and SETATTR of the mode through the same
 * gateway over an NFSv4 read delegation: NFS3ERR_JUKEBOX and one recall
 * while it is out, the file unchanged, through after DELEGRETURN.
 * (Before: each went through at once; only WRITE and a size SETATTR recalled.)
 */
START_TEST(v3_namespace_ops_recall_a_delegation)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	static const struct { enum v3_op op; const char *name, *to; } cases[] = {
		{ V3_REMOVE, "v3rm", NULL }, { V3_RENAME, "v3mv", "v3mv2" }, { V3_LINK, "v3ln", "v3ln2" },
		{ V3_SETATTR_MODE, "v3ch", NULL },
	};
	struct nfs4_stateid dsa;
	struct nfs4_fh dfh, ffh;
	struct nc *a;
	struct ncb *ba;

	gw_up_opts(opts);
	a = cb_client("dg-v3ns", &ba);
	test_dir(a, "dg9", &dfh);
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		delegated_file(a, &dfh, cases[i].name, "cached", &ffh, &dsa);
		ck_assert_msg(v3_op(cases[i].op, &dfh, &ffh, cases[i].name, cases[i].to) == 10008,   /* JUKEBOX */
			      "v3 proc %d on %s went through over a delegation", cases[i].op, cases[i].name);
		ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == i + 1, 10), "v3 proc %d: no CB_RECALL", cases[i].op);
		ck_assert_int_eq(file_size(cases[i].name), 6);
		ck_assert_uint_eq(v3_op(cases[i].op, &dfh, &ffh, cases[i].name, cases[i].to), 10008);
		ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
		ck_assert_uint_eq(v3_op(cases[i].op, &dfh, &ffh, cases[i].name, cases[i].to), 0);
		ck_assert_uint_eq(NCB_GET(ba, recalls), i + 1);
	}
	ck_assert_int_eq(file_size("v3rm"), -1);
	ck_assert_int_eq(file_size("v3mv2"), 6);
	ck_assert_int_eq(file_size("v3ln2"), 6);
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST

/* ---- write delegations --------------------------------------------------------- */

#define WANT_WRITE_DELEG 0x0200u
#define WANT_ANY_DELEG 0x0300u

static const struct nfs4_stateid anon_sid;   /* the anonymous stateid: all zeros */

/*
 * A client that is the file's only opener gets a write delegation for an
 * OPEN with write access, and reads and writes with its stateid; another
 * client's OPEN - for reading too - is NFS4ERR_DELAY while it is recalled,
 * and reads what the holder wrote once it is returned.  No write delegation
 * while another client has the file open (WND4_CONTENTION); the want bits:
 * NO_DELEG -> NOT_WANTED, READ_DELEG with write access -> NOT_SUPP_DOWNGRADE,
 * WRITE_DELEG for reading -> NOT_SUPP_UPGRADE.  An anonymous-stateid READ
 * of a write-delegated file recalls it too.
 * (Before: a write open never got a delegation: type 0.)
 */
START_TEST(v41_write_delegation_for_a_sole_opener)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct nfs4_stateid sa, dsa, sb, dsb, s2, d2;
	struct nfs4_fh dfh, ffh, fh2;
	struct nc *a, *b;
	struct ncb *ba;
	uint32_t dt = 99, st;
	long long granted0 = -1;
	char buf[64];

	gw_up_opts(opts);
	granted0 = perf_counter("nfs4", "write_delegations_granted");
	a = cb_client("wd-holder", &ba);
	test_dir(a, "wd1", &dfh);
	make_file("f", "before", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_BOTH, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_msg(dt == 2, "no write delegation for the only opener (type %#x)", dt);
	ck_assert_int_eq(perf_counter("nfs4", "write_delegations_granted"), granted0 + 1);
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "by the holder"), NFS4_OK);
	ck_assert_uint_eq(read_with(a, &ffh, &dsa, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "by the holder");

	/* another client opens it for reading: recalled */
	b = nc_connect(port, 1);
	nc_session(b, "wd-reader", 12);
	ck_assert_uint_eq(open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_READ, "ownB", &sb, &fh2, &dt, &dsb), NFS4ERR_DELAY);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 10), "a reader's OPEN did not recall the write delegation");
	pthread_mutex_lock(&ba->lock);
	ck_assert_int_eq(memcmp(ba->recall_sid.other, dsa.other, NFS4_OTHER_SIZE), 0);
	pthread_mutex_unlock(&ba->lock);
	/* the holder flushes what it wrote under the delegation, then returns it */
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "flushed before DELEGRETURN"), NFS4_OK);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert_uint_eq(open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_READ, "ownB", &sb, &fh2, &dt, &dsb), NFS4_OK);
	ck_assert_uint_eq(dt, 0);                /* a writer has it open: no read delegation either */
	ck_assert_uint_eq(read_with(b, &fh2, &sb, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "flushed before DELEGRETURN");

	/* another opener there: none, and why */
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_BOTH | WANT_WRITE_DELEG, "ownA", &sa, &ffh, &dt,
				     &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 3 | 1 << 8);       /* NONE_EXT, WND4_CONTENTION */
	make_file("g", "g", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "g", OS_SHARE_ACCESS_WRITE | WANT_NO_DELEG, "ownA", &s2, &fh2, &dt, &d2),
			  NFS4_OK);
	ck_assert_uint_eq(dt, 3 | 0 << 8);       /* WND4_NOT_WANTED */
	make_file("h", "h", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "h", OS_SHARE_ACCESS_BOTH | WANT_READ_DELEG, "ownA", &s2, &fh2, &dt, &d2),
			  NFS4_OK);
	ck_assert_uint_eq(dt, 3 | 6 << 8);       /* WND4_NOT_SUPP_DOWNGRADE */
	make_file("i", "i", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "i", OS_SHARE_ACCESS_READ | WANT_WRITE_DELEG, "ownA", &s2, &fh2, &dt, &d2),
			  NFS4_OK);
	ck_assert_uint_eq(dt, 3 | 5 << 8);       /* WND4_NOT_SUPP_UPGRADE */

	/* an anonymous-stateid READ by another client recalls it */
	make_file("j", "jjj", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "j", OS_SHARE_ACCESS_WRITE | WANT_ANY_DELEG, "ownA", &s2, &fh2, &dt, &d2),
			  NFS4_OK);
	ck_assert_uint_eq(dt, 2);
	ck_assert_uint_eq(write_with(a, &fh2, &d2, "JJJ"), NFS4_OK);
	st = read_with(b, &fh2, &anon_sid, buf, sizeof(buf));
	ck_assert_uint_eq(st, NFS4ERR_DELAY);
	ck_assert(WAIT_FOR(NCB_GET(ba, recalls) == 2, 10));
	ck_assert_uint_eq(sid_op(a, &fh2, OP_DELEGRETURN, &d2), NFS4_OK);
	ck_assert_uint_eq(read_with(b, &fh2, &anon_sid, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "JJJ");
	ncb_detach(ba);
	nc_close(a);
	nc_close(b);
	ncb_free(ba);
	gw_down();
}
END_TEST

struct local_reader {
	struct lc_inode *in;
	_Atomic bool broke;
	char buf[64];
	int r;
};

/* What the FUSE frontend does for open(O_RDONLY) + read: open, break the write delegations, read. */
static void *local_reader_main(void *arg)
{
	struct local_reader *w = arg;
	struct lc_fh *fh = NULL;
	ssize_t n;

	w->r = lc_open(lc, w->in, O_RDONLY, &rootcr, &fh);
	if (!w->r) {
		lc_break_for_read(lc, lc_ino(w->in), true);
		atomic_store(&w->broke, true);
		n = lc_read(lc, fh, 0, sizeof(w->buf) - 1, w->buf);
		if (n < 0)
			w->r = (int)n;
		else
			w->buf[n] = 0;
		lc_release(lc, fh);
	}
	return NULL;
}

/*
 * A reader beside the gateway in the same process (the FUSE mount's open
 * for reading: lc_break_for_read) recalls a write delegation and waits for
 * DELEGRETURN; it reads what the NFS client wrote before returning it.  A
 * read delegation stays (readers do not break it); while the local reader
 * has the file open, no write delegation is granted.
 */
START_TEST(v41_write_delegation_recalled_by_a_local_reader)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct local_reader w = { .r = -1 };
	struct nfs4_stateid sa, dsa;
	struct nfs4_fh dfh, ffh;
	struct lc_inode *d;
	struct lc_fh *rfh = NULL;
	struct nc *a;
	struct ncb *ba;
	uint32_t dt = 99;
	pthread_t t;

	gw_up_opts(opts);
	a = cb_client("wd-local", &ba);
	test_dir(a, "wd4", &dfh);
	make_file("f", "old", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_BOTH, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 2);
	ck_assert_int_eq(lc_lookup(lc, lroot, "wd4", &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_lookup(lc, d, "f", &rootcr, NULL, &w.in), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, local_reader_main, &w), 0);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 10), "the local reader recalled nothing");
	ck_assert(!atomic_load(&w.broke));               /* it waits for the delegation */
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "the NFS client's"), NFS4_OK);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.r, 0);
	ck_assert_str_eq(w.buf, "the NFS client's");

	/* a local reader holds the file open: no write delegation */
	ck_assert_int_eq(lc_open(lc, w.in, O_RDONLY, &rootcr, &rfh), 0);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_WRITE | WANT_WRITE_DELEG, "ownA2", &sa, &ffh, &dt,
				     &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 3 | 1 << 8);               /* WND4_CONTENTION */
	lc_release(lc, rfh);
	lc_put(lc, w.in);
	lc_put(lc, d);
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST

/*
 * A holder that never returns its write delegation loses it a lease after
 * the recall; the other client's OPEN then proceeds (and sees the data the
 * holder wrote through the gateway), the holder's delegation stateid says
 * NFS4ERR_DELEG_REVOKED.
 */
START_TEST(v41_unreturned_write_delegation_revoked)
{
	const char *opts[] = { "nfs4_delegations=true", "nfs4_lease_time=3", NULL };
	struct nfs4_stateid sa, dsa, sb, dsb;
	struct nfs4_fh dfh, ffh, fh2;
	struct nc *a, *b;
	struct ncb *ba;
	uint32_t dt = 99, st;
	uint64_t t0, waited;
	char buf[64];

	gw_up_opts(opts);
	a = cb_client("wd-keeper", &ba);
	test_dir(a, "wd2", &dfh);
	make_file("f", "kept", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_BOTH, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 2);
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "written, never returned"), NFS4_OK);
	b = nc_connect(port, 1);
	nc_session(b, "wd-impatient", 14);
	t0 = now_mono_ns();
	do {
		st = open_deleg(b, &dfh, "f", OS_SHARE_ACCESS_READ, "ownB", &sb, &fh2, &dt, &dsb);
		(void)seq_flags(a);              /* the holder stays alive, and says nothing */
		if (st == NFS4ERR_DELAY)
			usleep(200000);
	} while (st == NFS4ERR_DELAY && now_mono_ns() - t0 < 20000000000ull);
	waited = now_mono_ns() - t0;
	ck_assert_uint_eq(st, NFS4_OK);
	ck_assert_msg(waited >= 2500000000ull, "the delegation went after %.1f s, before its lease", waited / 1e9);
	ck_assert_uint_ge(NCB_GET(ba, recalls), 1);
	ck_assert(seq_flags(a) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "too late"), NFS4ERR_DELEG_REVOKED);
	ck_assert_uint_eq(read_with(b, &fh2, &sb, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "written, never returned");
	ncb_detach(ba);
	nc_close(a);
	nc_close(b);
	ncb_free(ba);
	gw_down();
}
END_TEST

/*
 * Another process's client of the same MDS opens @dir/@name for reading:
 * says 'o' on @fd once its open returned, then the file's first bytes
 * (up to 63) and exits 0 (or the step that failed).
 */
static void other_reader(int fd, const char *dir, const char *name)
{
	struct lclient *c;
	struct lc_inode *r, *d, *in;
	struct lc_fh *fh;
	char buf[64];
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (lclient_create(&c) || lclient_mount(c, NULL))
		_exit(2);
	r = lc_root(c);
	if (lc_lookup(c, r, dir, &rootcr, NULL, &d) || lc_lookup(c, d, name, &rootcr, NULL, &in))
		_exit(3);
	if (lc_open(c, in, O_RDONLY, &rootcr, &fh))   /* the MDS revokes the gateway's Fb first */
		_exit(4);
	if (write(fd, "o", 1) != 1)
		_exit(5);
	n = lc_read(c, fh, 0, sizeof(buf) - 1, buf);
	if (n < 0 || write(fd, buf, (size_t)n) != n)
		_exit(6);
	lc_release(c, fh);
	lc_put(c, in);
	lc_put(c, d);
	lc_put(c, r);
	lclient_unmount(c);
	lclient_destroy(c);
	_exit(0);
}

/*
 * The issue's test: an NFS client's write delegation is recalled by a FUSE
 * open (a client of the same MDS in another process, opening for reading):
 * the MDS revokes the gateway's Fb, the gateway recalls the delegation and
 * the other open waits for DELEGRETURN; what the NFS client wrote before it
 * returned the delegation is what the other client reads (the gateway
 * writes it back before it acks the revoke).
 */
START_TEST(v41_write_delegation_recalled_by_another_client)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct nfs4_stateid sa, dsa;
	struct nfs4_fh dfh, ffh;
	struct nc *a;
	struct ncb *ba;
	uint32_t dt = 99;
	int p[2], st = -1;
	pid_t child;
	char buf[64], k;
	ssize_t n;
	size_t got = 0;

	gw_up_opts(opts);
	a = cb_client("wd-other", &ba);
	test_dir(a, "wd3", &dfh);
	make_file("f", "what the gateway had", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_BOTH, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_msg(dt == 2, "no write delegation (type %#x): caps not held?", dt);
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "written under the delegation"), NFS4_OK);
	ck_assert_int_eq(pipe(p), 0);
	child = spawn_other(p[1], "reader", "wd3", "f", NULL);
	close(p[1]);
	ck_assert_msg(WAIT_FOR(NCB_GET(ba, recalls) == 1, 20), "the other client's open recalled nothing");
	ck_assert_msg(!readable(p[0], 200), "the other client's open did not wait for the delegation");
	/* the client flushes what it cached under the delegation, then returns it */
	ck_assert_uint_eq(write_with(a, &ffh, &dsa, "flushed by the NFS client before DELEGRETURN"), NFS4_OK);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);
	ck_assert_msg(readable(p[0], 30000), "the other client's open still waits after DELEGRETURN");
	ck_assert_int_eq(read(p[0], &k, 1), 1);
	while (got < sizeof(buf) - 1 && readable(p[0], 30000) && (n = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	close(p[0]);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other client failed (status %#x)", st);
	ck_assert_str_eq(buf, "flushed by the NFS client before DELEGRETURN");
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	gw_down();
}
END_TEST

/* GETATTR of the change and size of @fh */
static void getattr_cs(struct nc *n, const struct nfs4_fh *fh, uint64_t *change, uint64_t *size)
{
	static const int attrs[] = { 3, 4, -1 };     /* FATTR4_CHANGE, FATTR4_SIZE */
	struct ncc c;
	struct nrep r;
	struct xdr_bitmap bm;
	struct xdr_dec v;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_getattr(&c, attrs);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_GETATTR), NFS4_OK);
	rep_fattr(&r, &bm, &v);
	ck_assert_uint_eq(bm.w[0], (1u << 3) | (1u << 4));
	ck_assert_int_eq(xdr_get_u64(&v, change), 0);
	ck_assert_int_eq(xdr_get_u64(&v, size), 0);
	rep_free(&r);
}

/*
 * CB_GETATTR (RFC 8881 10.4.3): another client's GETATTR of the size and
 * change of a write-delegated file asks the holder (CB_GETATTR with the
 * file's handle, change and size), and answers with the size it reports
 * and a change that moved on (and moves again only when the holder's
 * does); the holder's own GETATTR asks nobody.  A holder that does not
 * answer: the GETATTR is answered after nfs4_cb_getattr_timeout with what
 * the gateway knows (its own size; the change as far as it had moved).
 * (Before: no CB_GETATTR, the other client saw the gateway's stale size.)
 */
START_TEST(v41_cb_getattr_of_a_write_delegation)
{
	const char *opts[] = { "nfs4_delegations=true", "nfs4_cb_getattr_timeout=2", NULL };
	struct nfs4_stateid sa, dsa;
	struct nfs4_fh dfh, ffh, fb;
	struct nc *a, *b;
	struct ncb *ba;
	uint32_t dt = 99;
	uint64_t ch0, sz0, ch1, sz1, ch2, sz2, ch3, sz3, t0, took;
	long long fails0;

	gw_up_opts(opts);
	a = cb_client("wd-ga", &ba);
	test_dir(a, "wd5", &dfh);
	make_file("f", "0123456789", 0666);
	b = nc_connect(port, 1);
	nc_session(b, "wd-ga-asker", 15);
	nc_lookup_path(b, "wd5/f", &fb);
	getattr_cs(b, &fb, &ch0, &sz0);
	ck_assert_uint_eq(sz0, 10);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f", OS_SHARE_ACCESS_BOTH, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_uint_eq(dt, 2);

	/* the holder wrote 4096 bytes into its cache and moved its change */
	pthread_mutex_lock(&ba->lock);
	ba->getattr_change = ch0 + 7;
	ba->getattr_size = 4096;
	pthread_mutex_unlock(&ba->lock);
	getattr_cs(b, &fb, &ch1, &sz1);
	ck_assert_msg(NCB_GET(ba, getattrs) == 1, "no CB_GETATTR to the holder");
	pthread_mutex_lock(&ba->lock);
	ck_assert_uint_eq(ba->getattr_fh.len, ffh.len);
	ck_assert_int_eq(memcmp(ba->getattr_fh.data, ffh.data, ffh.len), 0);
	ck_assert_uint_eq(ba->getattr_req, (1u << 3) | (1u << 4));
	pthread_mutex_unlock(&ba->lock);
	ck_assert_uint_eq(sz1, 4096);
	ck_assert_msg(ch1 > ch0, "the change did not move (%llu -> %llu)", (unsigned long long)ch0,
		      (unsigned long long)ch1);
	/* asked again, nothing changed at the holder: the same change */
	getattr_cs(b, &fb, &ch2, &sz2);
	ck_assert_uint_eq(NCB_GET(ba, getattrs), 2);
	ck_assert_uint_eq(ch2, ch1);
	ck_assert_uint_eq(sz2, 4096);
	/* the holder's own GETATTR asks nobody */
	getattr_cs(a, &ffh, &ch3, &sz3);
	ck_assert_uint_eq(NCB_GET(ba, getattrs), 2);

	/* the holder changes again, then stops answering */
	pthread_mutex_lock(&ba->lock);
	ba->getattr_change = ch0 + 8;
	pthread_mutex_unlock(&ba->lock);
	getattr_cs(b, &fb, &ch2, &sz2);
	ck_assert_uint_gt(ch2, ch1);
	fails0 = perf_counter("nfs4", "cb_getattr_failures");
	pthread_mutex_lock(&ba->lock);
	ba->mute = true;
	pthread_mutex_unlock(&ba->lock);
	t0 = now_mono_ns();
	getattr_cs(b, &fb, &ch3, &sz3);
	took = now_mono_ns() - t0;
	ck_assert_msg(took >= 1500000000ull && took < 15000000000ull, "answered after %.1f s", took / 1e9);
	ck_assert_uint_eq(ch3, ch2);             /* as far as it had moved: not back */
	ck_assert_uint_eq(sz3, 10);              /* the gateway's own */
	ck_assert_int_eq(perf_counter("nfs4", "cb_getattr_failures"), fails0 + 1);
	ncb_detach(ba);
	nc_close(a);
	nc_close(b);
	ncb_free(ba);
	gw_down();
}
END_TEST

/* ---- a delegation's own stateid in SETATTR (aff1ae0) ------------------------------ */

/* SETATTR of @fh with @sid: the size to 0 (@chmod false) or the mode to 0640; its status */
static uint32_t setattr_with(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, bool chmod)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	if (chmod) {
		uint32_t w[3] = { 0, 1u << (33 - 32), 0 };   /* FATTR4_MODE */
		uint8_t v[4];

		xdr_store_u32(v, 0640);
		enc_setattr_raw(&c, sid, w, v, 4);
	} else {
		enc_setattr_size(&c, sid, 0);
	}
	return ncc_status(&c);   /* PUTFH succeeds: the status is SETATTR's */
}

/*
 * The holder of a write delegation truncates through it: the Linux client
 * sends SETATTR(size=0) with the delegation's stateid for an O_TRUNC open
 * under a write delegation.  NFSv4.1 and 4.0: NFS4_OK, the file is empty,
 * and the holder's own change recalls nothing (nor does its chmod with
 * that stateid); its delegation stays valid.  (Before aff1ae0: 4.1
 * NFS4ERR_BAD_STATEID, which the kernel client retried forever after
 * TEST_STATEID said the stateid was fine; 4.0 the same, and a 4.0 holder's
 * SETATTR of the mode was taken for another client's: NFS4ERR_DELAY and a
 * CB_RECALL of its own delegation.)
 */
START_TEST(v4x_setattr_size_with_the_write_delegation_stateid)
{
	const char *opts[] = { "nfs4_delegations=true", NULL };
	struct ncb *b40 = calloc(1, sizeof(*b40));
	struct cb40_srv srv = { .b = b40 };
	struct nfs4_stateid sa, dsa, s1, d1;
	struct nfs4_fh dfh, ffh, f1;
	struct nc *a, *n;
	struct ncb *ba;
	struct ncc c;
	struct nrep r;
	uint16_t cport;
	uint32_t dt = 99, st, seq = 0, fl = 0;
	char uaddr[64], v[64], buf[64];
	pthread_t t;

	ck_assert_ptr_nonnull(b40);
	pthread_mutex_init(&b40->lock, NULL);
	gw_up_opts(opts);

	/* 4.1 */
	a = cb_client("wd-trunc41", &ba);
	test_dir(a, "wd6", &dfh);
	make_file("f41", "twenty-two bytes long.", 0666);
	ck_assert_uint_eq(open_deleg(a, &dfh, "f41", OS_SHARE_ACCESS_BOTH, "ownA", &sa, &ffh, &dt, &dsa), NFS4_OK);
	ck_assert_msg(dt == 2, "no write delegation (type %#x)", dt);
	st = setattr_with(a, &ffh, &dsa, false);
	ck_assert_msg(st == NFS4_OK, "4.1 SETATTR(size=0) with the write delegation's stateid: status %u", st);
	ck_assert_int_eq(file_size("f41"), 0);
	ck_assert_uint_eq(read_with(a, &ffh, &dsa, buf, sizeof(buf)), NFS4_OK);
	ck_assert_str_eq(buf, "");
	st = setattr_with(a, &ffh, &dsa, true);
	ck_assert_msg(st == NFS4_OK, "4.1 SETATTR(mode) with the write delegation's stateid: status %u", st);
	ck_assert_uint_eq(NCB_GET(ba, recalls), 0);
	ck_assert_uint_eq(sid_op(a, &ffh, OP_DELEGRETURN, &dsa), NFS4_OK);   /* still its own, still valid */

	/* 4.0: a confirmed open-owner whose callback answers */
	srv.lfd = ncb40_listen(&cport);
	ck_assert_int_ge(srv.lfd, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, cb40_main, &srv), 0);
	n = nc_connect(port, 0);
	snprintf(uaddr, sizeof(uaddr), "127.0.0.1.%u.%u", cport >> 8, cport & 0xff);
	setclientid_cb(n, "wd-trunc40", uaddr);
	ck_assert(WAIT_FOR(clients_field(n->clientid, false, "callback", v, sizeof(v)) && !strcmp(v, "up"), 10));
	make_file("c40", "confirm", 0666);
	make_file("f40", "twenty-two bytes long.", 0666);
	ck_assert_uint_eq(open_deleg_seq(n, &dfh, "c40", OS_SHARE_ACCESS_READ, "o40", seq++, &fl, &s1, &f1, &dt, &d1),
			  NFS4_OK);
	ck_assert(fl & 0x2);                     /* OPEN4_RESULT_CONFIRM */
	ncc_begin(&c, n);
	enc_putfh(&c, &f1);
	enc_open_confirm(&c, &s1, seq++);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_OPEN_CONFIRM), NFS4_OK);
	rep_free(&r);
	ck_assert_uint_eq(open_deleg_seq(n, &dfh, "f40", OS_SHARE_ACCESS_BOTH, "o40", seq++, &fl, &s1, &f1, &dt, &d1),
			  NFS4_OK);
	ck_assert_msg(dt == 2, "no 4.0 write delegation (type %#x)", dt);
	st = setattr_with(n, &f1, &d1, false);
	ck_assert_msg(st == NFS4_OK, "4.0 SETATTR(size=0) with the write delegation's stateid: status %u", st);
	ck_assert_int_eq(file_size("f40"), 0);
	st = setattr_with(n, &f1, &d1, true);
	ck_assert_msg(st == NFS4_OK, "4.0 SETATTR(mode) with the write delegation's stateid: status %u", st);
	ck_assert_msg(NCB_GET(b40, recalls) == 0, "the 4.0 holder's own SETATTR recalled its delegation");
	ck_assert_uint_eq(sid_op(n, &f1, OP_DELEGRETURN, &d1), NFS4_OK);

	nc_close(n);
	atomic_store(&srv.stop, true);
	pthread_join(t, NULL);
	close(srv.lfd);
	ncb_detach(ba);
	nc_close(a);
	ncb_free(ba);
	pthread_mutex_destroy(&b40->lock);
	free(b40);
	gw_down();
}
END_TEST

/*
 * One TCase per test, each with its own MDS and store (the unchecked
 * fixture runs in the runner, so it cleans up whatever the test did): a
 * test that fails exits without gw_down(), and the MDS would keep its
 * client session, with the caps and delegations of its files, until
 * mds_session_timeout.  Shared, that made the next test that opens a file
 * through the MDS wait out its 60 s timeout instead of running.
 * CK_RUN_CASE=<test name> runs one.
 */
/* a fresh MDS: nothing of the previous case's (its port, its directory) if this one cannot start */
static void case_setup(void)
{
	M.port = 0;
	dir[0] = 0;
	fs_setup();
}

static Suite *suite(void)
{
	static const TTest *const *tests[] = {
		&v41_back_channel_on_the_fore_connection,
		&v41_back_channel_survives_a_reconnect,
		&v41_back_channel_down_and_fault,
		&v41_no_back_channel,
		&v40_callback_probe,
		&v41_read_delegation_recalled_by_a_writer,
		&v41_unreturned_delegation_revoked,
		&v41_delegation_recalled_by_a_local_writer,
		&v3_write_recalls_a_delegation,
		&v40_read_delegation_recalled,
		&v41_delegation_recalled_by_another_client,
		&v41_pending_recall_does_not_hold_other_revokes,
		&v41_own_requests_recall_other_clients_delegations,
		&v3_namespace_ops_recall_a_delegation,
		&v41_write_delegation_for_a_sole_opener,
		&v41_unreturned_write_delegation_revoked,
		&v41_write_delegation_recalled_by_a_local_reader,
		&v41_write_delegation_recalled_by_another_client,
		&v41_cb_getattr_of_a_write_delegation,
		&v4x_setattr_size_with_the_write_delegation_stateid,
	};
	Suite *s = suite_create("nfs4_gw_cb");

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create((*tests[i])->name);

		tcase_add_unchecked_fixture(tc, case_setup, fs_teardown);
		tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, *tests[i]);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (test_child_is(argc, argv)) {
		log_init("test_nfs4_gw_cb-child");
		return child_main(argc - 2, argv + 2);
	}
	sr = srunner_create(suite());
	log_init("test_nfs4_gw_cb");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
