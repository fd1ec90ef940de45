/*
 * test_nfs4_gw_clients.c - NFSv4.0/4.1 conformance of the gateway's client
 * and session establishment and of the COMPOUND rules, over real sockets
 * against a real filesystem (nfs4gw_fixture.h): the SETCLIENTID /
 * SETCLIENTID_CONFIRM case analysis (RFC 7530 16.33.5, 16.34.5), RENEW's
 * principal, EXCHANGE_ID and CREATE_SESSION (RFC 8881 18.35.4, 18.36.4),
 * RECLAIM_COMPLETE before new state (18.51.3), SECINFO_NO_NAME's styles
 * (18.45), delegation wants (18.16.3), DESTROY_SESSION's connection
 * (18.37.3), and result bodies of operations that fail before they run.
 */
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs4gw_fixture.h"

/* SETCLIENTID as @uid: status; client id and confirm verifier on success */
static uint32_t setclientid(struct nc *n, uint32_t uid, const char *id, uint64_t verifier, uint64_t *cid,
			    uint8_t *verf, char *using_addr, size_t using_len)
{
	struct ncc c;
	struct nrep r;
	uint32_t st, save = n->uid;

	n->uid = uid;
	ncc_begin_raw(&c, n, 0, 0);
	enc_setclientid(&c, verifier, id, 0x40000000);
	ncc_call(&c, &r);
	n->uid = save;
	st = rep_next(&r, OP_SETCLIENTID);
	if (!st) {
		xdr_get_u64(&r.d, cid);
		xdr_get_fixed(&r.d, verf, NFS4_VERIFIER_SIZE);
	} else if (st == NFS4ERR_CLID_INUSE && using_addr) {
		char netid[64];

		/* clientaddr4 client_using */
		ck_assert_int_eq(xdr_get_string(&r.d, netid, sizeof(netid), 63), 0);
		ck_assert_int_eq(xdr_get_string(&r.d, using_addr, using_len, (uint32_t)using_len - 1), 0);
	}
	rep_free(&r);
	return st;
}

static uint32_t confirm(struct nc *n, uint32_t uid, uint64_t cid, const uint8_t *verf)
{
	struct ncc c;
	uint32_t st, save = n->uid;

	n->uid = uid;
	ncc_begin_raw(&c, n, 0, 0);
	enc_setclientid_confirm(&c, cid, verf);
	st = ncc_status(&c);
	n->uid = save;
	return st;
}

static uint32_t renew_as(struct nc *n, uint32_t uid, uint64_t cid)
{
	struct ncc c;
	uint32_t st, save = n->uid;

	n->uid = uid;
	ncc_begin_raw(&c, n, 0, 0);
	enc_renew(&c, cid);
	st = ncc_status(&c);
	n->uid = save;
	return st;
}

/*
 * RFC 7530 16.33.5, 16.34.5, 16.28.5:
 * - a confirmed client id string of another principal, with state under a
 *   live lease: SETCLIENTID is NFS4ERR_CLID_INUSE with the address it is
 *   used from; SETCLIENTID_CONFIRM of another principal: CLID_INUSE too;
 * - the same verifier again is a callback update: the same client id, a
 *   new confirm verifier (t != s), confirming it keeps the client's state;
 * - RENEW by another principal: NFS4ERR_ACCESS; of an unconfirmed client
 *   id: NFS4ERR_STALE_CLIENTID.
 * (Before: no principal checked anywhere, and one confirm verifier per
 * client id for ever.)
 */
START_TEST(v40_setclientid_cases)
{
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	uint8_t s[8], t[8];
	uint64_t c, c2;
	char addr[128];
	uint32_t seq = 1;

	gw_up();
	n = nc_connect(port, 0);
	test_dir(n, "setclientid", &d);
	make_file("f", "data", 0644);
	ck_assert_uint_eq(setclientid(n, 0, "scid", 1, &c, s, NULL, 0), NFS4_OK);
	ck_assert_uint_eq(renew_as(n, 0, c), NFS4ERR_STALE_CLIENTID);       /* not confirmed yet */
	ck_assert_uint_eq(confirm(n, 1234, c, s), NFS4ERR_CLID_INUSE);        /* not its principal */
	ck_assert_uint_eq(confirm(n, 0, c, s), NFS4_OK);
	ck_assert_uint_eq(confirm(n, 0, c, s), NFS4_OK);                      /* a retry */
	n->clientid = c;
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, &seq, &sid, &fh), NFS4_OK);
	ck_assert_uint_eq(renew_as(n, 0, c), NFS4_OK);
	ck_assert_uint_eq(renew_as(n, 1234, c), NFS4ERR_ACCESS);

	/* another principal wants the id string while the state is live */
	memset(addr, 0, sizeof(addr));
	ck_assert_uint_eq(setclientid(n, 1234, "scid", 7, &c2, t, addr, sizeof(addr)), NFS4ERR_CLID_INUSE);
	ck_assert_str_eq(addr, "127.0.0.1.3.1");

	/* a callback update: same verifier, same client id, a new confirm verifier */
	ck_assert_uint_eq(setclientid(n, 0, "scid", 1, &c2, t, NULL, 0), NFS4_OK);
	ck_assert_uint_eq(c2, c);
	ck_assert(memcmp(s, t, 8) != 0);
	ck_assert_uint_eq(confirm(n, 1234, c, t), NFS4ERR_CLID_INUSE);
	ck_assert_uint_eq(confirm(n, 0, c, t), NFS4_OK);
	/* the state is still there */
	{
		struct ncc cc;

		ncc_begin(&cc, n);
		enc_putfh(&cc, &fh);
		enc_read(&cc, &sid, 0, 4);
		ck_assert_uint_eq(ncc_status(&cc), NFS4_OK);
	}
	/* a confirm verifier that is no record's: STALE_CLIENTID */
	s[0] ^= 0x5a;
	t[0] ^= 0x5a;
	ck_assert_uint_eq(confirm(n, 0, c, t), NFS4ERR_STALE_CLIENTID);

	/* RFC 7530 9.1.2: without state (or with the lease expired) "rather
	 * than returning NFS4ERR_CLID_INUSE, the server MUST allow the
	 * SETCLIENTID and confirm the new client ID" */
	ck_assert_uint_eq(setclientid(n, 0, "free-id", 1, &c, s, NULL, 0), NFS4_OK);
	ck_assert_uint_eq(confirm(n, 0, c, s), NFS4_OK);
	ck_assert_uint_eq(setclientid(n, 1234, "free-id", 2, &c2, t, NULL, 0), NFS4_OK);
	ck_assert_uint_ne(c2, c);
	ck_assert_uint_eq(confirm(n, 1234, c2, t), NFS4_OK);
	ck_assert_uint_eq(renew_as(n, 1234, c2), NFS4_OK);
	ck_assert_uint_eq(renew_as(n, 0, c), NFS4ERR_STALE_CLIENTID);         /* replaced */
	nc_close(n);
	gw_down();
}
END_TEST

/* EXCHANGE_ID as @uid: status, client id and flags */
static uint32_t exchange_id(struct nc *n, uint32_t uid, const char *owner, uint64_t verifier, uint32_t flags,
			    uint32_t how, uint64_t *cid, uint32_t *seq, uint32_t *rflags)
{
	struct ncc c;
	struct nrep r;
	uint32_t st, save = n->uid;

	n->uid = uid;
	ncc_begin_raw(&c, n, 1, 0);
	enc_exchange_id(&c, owner, verifier, flags, how);
	ncc_call(&c, &r);
	n->uid = save;
	st = rep_next(&r, OP_EXCHANGE_ID);
	if (!st) {
		uint64_t id;
		uint32_t sq, fl;

		xdr_get_u64(&r.d, &id);
		xdr_get_u32(&r.d, &sq);
		xdr_get_u32(&r.d, &fl);
		if (cid)
			*cid = id;
		if (seq)
			*seq = sq;
		if (rflags)
			*rflags = fl;
	}
	rep_free(&r);
	return st;
}

static uint32_t create_session(struct nc *n, uint32_t uid, uint64_t cid, uint32_t seq, uint32_t flags,
			       const struct nfs4_channel_attrs *fore, const struct nfs4_channel_attrs *back,
			       uint8_t *sessionid)
{
	struct ncc c;
	struct nrep r;
	uint32_t st, save = n->uid;

	n->uid = uid;
	ncc_begin_raw(&c, n, 1, 0);
	enc_create_session(&c, cid, seq, flags, fore, back);
	ncc_call(&c, &r);
	n->uid = save;
	st = rep_next(&r, OP_CREATE_SESSION);
	if (!st && sessionid)
		xdr_get_fixed(&r.d, sessionid, NFS4_SESSIONID_SIZE);
	rep_free(&r);
	return st;
}

/*
 * RFC 8881 18.35.3-18.35.4: undefined flag bits (CONFIRMED_R among them) and
 * SP4_MACH_CRED without an RPCSEC_GSS principal are NFS4ERR_INVAL; case 3
 * (another principal) is CLID_INUSE only while the old client id holds
 * state under a live lease - without state the old record goes; an update
 * with the wrong verifier is NOT_SAME (case 8) before the principal is
 * looked at (case 9: PERM); an update of no confirmed record is NOENT
 * (case 7).  (Before: MACH_CRED accepted, any session made case 3
 * CLID_INUSE, PERM before NOT_SAME.)
 */
START_TEST(v41_exchange_id_cases)
{
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	uint64_t a, b;
	uint32_t seq, fl;

	gw_up();
	n = nc_connect(port, 1);
	ck_assert_uint_eq(exchange_id(n, 0, "x", 1, 0x8, SP4_NONE, NULL, NULL, NULL), NFS4ERR_INVAL);
	ck_assert_uint_eq(exchange_id(n, 0, "x", 1, EXCHGID4_FLAG_CONFIRMED_R, SP4_NONE, NULL, NULL, NULL),
			  NFS4ERR_INVAL);
	ck_assert_uint_eq(exchange_id(n, 0, "x", 1, 0, SP4_MACH_CRED, NULL, NULL, NULL), NFS4ERR_INVAL);
	ck_assert_uint_eq(exchange_id(n, 0, "x", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, SP4_NONE, NULL, NULL, NULL),
			  NFS4ERR_NOENT);

	/* a confirmed client with a session but no state: another principal may take the owner */
	nc_session(n, "case3", 1);
	a = n->clientid;
	ck_assert_uint_eq(exchange_id(n, 1234, "case3", 9, 0, SP4_NONE, &b, &seq, &fl), NFS4_OK);
	ck_assert_uint_ne(b, a);
	ck_assert(!(fl & EXCHGID4_FLAG_CONFIRMED_R));
	{
		struct ncc c;

		ncc_begin(&c, n);
		ck_assert_uint_eq(ncc_status(&c), NFS4ERR_BADSESSION);     /* the old record went */
	}
	nc_close(n);

	/* with state under a live lease it may not */
	n = nc_connect(port, 1);
	nc_session(n, "case3b", 1);
	test_dir(n, "exchid", &d);
	make_file("f", "data", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	ck_assert_uint_eq(exchange_id(n, 1234, "case3b", 9, 0, SP4_NONE, &b, NULL, NULL), NFS4ERR_CLID_INUSE);
	/* updates: wrong verifier and wrong principal is NOT_SAME (8 before 9) */
	ck_assert_uint_eq(exchange_id(n, 1234, "case3b", 2, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, SP4_NONE, NULL, NULL,
				      NULL), NFS4ERR_NOT_SAME);
	ck_assert_uint_eq(exchange_id(n, 1234, "case3b", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, SP4_NONE, NULL, NULL,
				      NULL), NFS4ERR_PERM);
	ck_assert_uint_eq(exchange_id(n, 0, "case3b", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, SP4_NONE, &b, NULL, &fl),
			  NFS4_OK);
	ck_assert_uint_eq(b, n->clientid);
	ck_assert(fl & EXCHGID4_FLAG_CONFIRMED_R);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 8881 18.36.4: the sequence comes first (a retry gets the cached
 * result, whatever the principal), every request that used the sequence
 * keeps its result for a retry (errors too: a TOOSMALL is the answer to a
 * retry, and the next sequence may follow it), a principal other than the
 * record's is CLID_INUSE, undefined csa_flags are INVAL, and attributes no
 * request or reply fits in are TOOSMALL on either channel (18.36.3).
 * (Before: an error did not consume the sequence, the back channel was not
 * checked, undefined flags were accepted, the principal was checked first.)
 */
START_TEST(v41_create_session_cases)
{
	struct nfs4_channel_attrs tiny_fore = nc_fore, tiny_back = nc_back, no_ops = nc_fore;
	struct nc *n;
	uint8_t sid1[16], sid2[16];
	uint64_t cid;
	uint32_t seq;

	gw_up();
	n = nc_connect(port, 1);
	ck_assert_uint_eq(exchange_id(n, 0, "cs-cases", 1, 0, SP4_NONE, &cid, &seq, NULL), NFS4_OK);
	tiny_fore.maxresponsesize = 64;
	tiny_back.maxrequestsize = 64;
	no_ops.maxoperations = 0;
	ck_assert_uint_eq(create_session(n, 0, cid, seq, 0, &tiny_fore, &nc_back, NULL), NFS4ERR_TOOSMALL);
	ck_assert_uint_eq(create_session(n, 0, cid, seq, 0, &nc_fore, &nc_back, NULL), NFS4ERR_TOOSMALL); /* retry */
	ck_assert_uint_eq(create_session(n, 0, cid, seq + 1, 0, &nc_fore, &tiny_back, NULL), NFS4ERR_TOOSMALL);
	ck_assert_uint_eq(create_session(n, 0, cid, seq + 2, 0, &no_ops, &nc_back, NULL), NFS4ERR_TOOSMALL);
	ck_assert_uint_eq(create_session(n, 0, cid, seq + 3, 0x10, &nc_fore, &nc_back, NULL), NFS4ERR_INVAL);
	ck_assert_uint_eq(create_session(n, 1234, cid, seq + 4, 0, &nc_fore, &nc_back, NULL), NFS4ERR_CLID_INUSE);
	ck_assert_uint_eq(create_session(n, 0, cid, seq + 6, 0, &nc_fore, &nc_back, NULL), NFS4ERR_SEQ_MISORDERED);
	ck_assert_uint_eq(create_session(n, 0, cid, seq + 5, 0, &nc_fore, &nc_back, sid1), NFS4_OK);
	/* a retry, even by another principal, gets the same session */
	ck_assert_uint_eq(create_session(n, 1234, cid, seq + 5, 0, &nc_fore, &nc_back, sid2), NFS4_OK);
	ck_assert(memcmp(sid1, sid2, 16) == 0);
	/* back channel attributes the server must not change come back as sent */
	{
		struct ncc c;
		struct nrep r;
		struct nfs4_channel_attrs f, b, back = nc_back;

		back.maxoperations = 7;
		back.maxrequests = 3;
		ncc_begin_raw(&c, n, 1, 0);
		enc_create_session(&c, cid, seq + 6, 0, &nc_fore, &back);
		ncc_call(&c, &r);
		ck_assert_uint_eq(rep_next(&r, OP_CREATE_SESSION), NFS4_OK);
		xdr_skip(&r.d, 16 + 8);
		ck_assert_int_eq(nfs4_get_channel_attrs(&r.d, &f), 0);
		ck_assert_int_eq(nfs4_get_channel_attrs(&r.d, &b), 0);
		ck_assert_uint_eq(b.maxoperations, 7);
		ck_assert_uint_eq(b.maxrequests, 3);
		ck_assert_uint_le(f.maxrequests, NC_SLOTS);
		rep_free(&r);
	}
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 8881 18.51.3: "If non-reclaim locking operations are done before the
 * RECLAIM_COMPLETE, an NFS4ERR_GRACE error will be returned" - even with
 * the server's grace period over; and a reclaim after it is NO_GRACE.
 * (Before: OPEN and LOCK went ahead.)
 */
START_TEST(v41_reclaim_complete_before_new_state)
{
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	struct ncc c;

	gw_up();
	n = nc_connect(port, 0);         /* set-up over 4.0: no session needed */
	test_dir(n, "reclaim", &d);
	make_file("f", "data", 0644);
	nc_close(n);
	n = nc_connect(port, 1);
	nc_session_rc(n, "reclaimer", 1, false);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4ERR_GRACE);
	ck_assert_uint_eq(nc_open(n, &d, "new", 3, 0, "o", NC_CREATE, NULL, &sid, &fh), NFS4ERR_GRACE);
	ncc_begin(&c, n);
	ncc_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	/* a reclaim now: CLAIM_PREVIOUS of the file */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_open_head(&c, 0, 1, 0, n->clientid, "o");
	xdr_put_u32(&c.e, 0);           /* NOCREATE */
	xdr_put_u32(&c.e, 1);           /* CLAIM_PREVIOUS */
	xdr_put_u32(&c.e, 0);           /* OPEN_DELEGATE_NONE */
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_NO_GRACE);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 8881 18.45: SECINFO_STYLE4_CURRENT_FH and SECINFO_STYLE4_PARENT (the
 * parent found as LOOKUPP finds it: NOENT at the root, NOTDIR below a
 * file); another style is INVAL; success consumes the current filehandle.
 * (Before: the style was ignored, PARENT at the root succeeded.)
 */
START_TEST(v41_secinfo_no_name)
{
	struct nc *n;
	struct nfs4_fh d, fh;
	struct ncc c;
	struct nrep r;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "secinfo", 1);
	test_dir(n, "secinfo", &d);
	make_file("f", "data", 0644);
	nc_lookup_path(n, "secinfo/f", &fh);
	for (uint32_t style = 0; style <= 2; style++) {
		const struct nfs4_fh *fhs[3] = { NULL, &d, &fh };
		static const uint32_t want[3][3] = {
			/* root           dir       file */
			{ NFS4_OK, NFS4_OK, NFS4_OK },                       /* CURRENT_FH */
			{ NFS4ERR_NOENT, NFS4_OK, NFS4ERR_NOTDIR },          /* PARENT */
			{ NFS4ERR_INVAL, NFS4ERR_INVAL, NFS4ERR_INVAL },     /* no such style */
		};

		for (int i = 0; i < 3; i++) {
			ncc_begin(&c, n);
			if (fhs[i])
				enc_putfh(&c, fhs[i]);
			else
				enc_putrootfh(&c);
			ncc_op(&c, OP_SECINFO_NO_NAME);
			xdr_put_u32(&c.e, style);
			enc_getfh(&c);
			ncc_call(&c, &r);
			rep_next(&r, i ? OP_PUTFH : OP_PUTROOTFH);
			ck_assert_msg(rep_next(&r, OP_SECINFO_NO_NAME) == want[style][i], "style %u object %d: %u", style,
				      i, r.status);
			if (want[style][i] == NFS4_OK) {
				uint32_t nflav;

				xdr_get_u32(&r.d, &nflav);
				ck_assert_uint_ge(nflav, 1);
				xdr_skip(&r.d, nflav * 4);
				ck_assert_uint_eq(rep_next(&r, OP_GETFH), NFS4ERR_NOFILEHANDLE);
			}
			rep_free(&r);
		}
	}
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 8881 18.16.3 / 10.4: a 4.1 OPEN that expresses a delegation want gets
 * OPEN_DELEGATE_NONE_EXT with the reason: WND4_NOT_WANTED for
 * WANT_NO_DELEG, WND4_CANCELLED for WANT_CANCEL, and (we grant none)
 * WND4_RESOURCE for the others; an undefined want is INVAL, and so is any
 * want bit in 4.0 (RFC 7530 16.16.6).  (Before: plain NONE, and 4.0
 * accepted the bits.)
 */
START_TEST(delegation_wants)
{
	static const struct {
		uint32_t want;
		uint32_t status, deleg;
	} cases[] = {
		{ 0x0000, NFS4_OK, 0 },            /* no preference: plain OPEN_DELEGATE_NONE */
		{ 0x0400, NFS4_OK, 3 | 0 << 8 },   /* NO_DELEG: NONE_EXT, WND4_NOT_WANTED */
		{ 0x0100, NFS4_OK, 3 | 2 << 8 },   /* READ_DELEG: NONE_EXT, WND4_RESOURCE */
		{ 0x0300, NFS4_OK, 3 | 2 << 8 },
		{ 0x0500, NFS4_OK, 3 | 7 << 8 },   /* CANCEL: WND4_CANCELLED */
		{ 0x10400, NFS4_OK, 3 | 0 << 8 },  /* with SIGNAL_DELEG_WHEN_RESRC_AVAIL */
		{ 0x0600, NFS4ERR_INVAL, 0 },      /* no such want */
		{ 0x40000, NFS4ERR_INVAL, 0 },     /* no such flag */
	};
	struct nc *n, *o;
	struct nfs4_fh d;
	struct ncc c;
	struct nrep r;
	uint32_t seq = 1;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "wants", 1);
	test_dir(n, "wants", &d);
	make_file("f", "data", 0644);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nfs4_stateid sid;
		uint32_t st, deleg = 99;

		ncc_begin(&c, n);
		enc_putfh(&c, &d);
		enc_open(&c, 0, 1 | cases[i].want, 0, "o", NC_NOCREATE, "f");
		ncc_call(&c, &r);
		rep_next(&r, OP_PUTFH);
		st = rep_next(&r, OP_OPEN);
		ck_assert_msg(st == cases[i].status, "want %#x: %u", cases[i].want, st);
		if (!st) {
			rep_open(&r, &sid, NULL, &deleg);
			ck_assert_msg(deleg == cases[i].deleg, "want %#x: delegation %#x", cases[i].want, deleg);
		}
		rep_free(&r);
	}
	o = nc_connect(port, 0);
	nc_setclientid(o, "wants-40", 1);
	ck_assert_uint_eq(nc_open(o, &d, "f", 1 | 0x0400, 0, "o", NC_NOCREATE, &seq, NULL, NULL), NFS4ERR_INVAL);
	nc_close(o);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 8881 18.37.3: "DESTROY_SESSION MUST be invoked on a connection that
 * is associated with the session being destroyed" (else
 * NFS4ERR_CONN_NOT_BOUND_TO_SESSION).  (Before: from anywhere.)
 */
START_TEST(v41_destroy_session_connection)
{
	struct nc *n, *other;
	struct ncc c;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "destroyer", 1);
	other = nc_connect(port, 1);
	ncc_begin_raw(&c, other, 1, 0);
	ncc_op(&c, OP_DESTROY_SESSION);
	xdr_put_fixed(&c.e, n->sessionid, NFS4_SESSIONID_SIZE);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_CONN_NOT_BOUND_TO_SESSION);
	ncc_begin_raw(&c, n, 1, 0);
	ncc_op(&c, OP_DESTROY_SESSION);
	xdr_put_fixed(&c.e, n->sessionid, NFS4_SESSIONID_SIZE);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	nc_close(other);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 7530 16.32.3: SETATTR4res is { status, attrsset } whatever the
 * status, also when SETATTR fails for lack of a current filehandle (the
 * dispatcher answers before the operation runs): the XDR must still hold
 * the bitmap, and nothing after it.  (Before: the status alone.)
 */
START_TEST(result_shape_without_a_filehandle)
{
	for (uint32_t minor = 0; minor <= 1; minor++) {
		struct nc *n;
		struct ncc c;
		struct nrep r;
		struct xdr_bitmap bm;

		if (minor == 0)
			gw_up();
		n = nc_connect(port, minor);
		if (minor)
			nc_session(n, "shape", 1);
		ncc_begin(&c, n);
		enc_setattr_size(&c, &(struct nfs4_stateid){ 0 }, 0);
		ncc_call(&c, &r);
		ck_assert_uint_eq(r.status, NFS4ERR_NOFILEHANDLE);
		ck_assert_uint_eq(rep_next(&r, OP_SETATTR), NFS4ERR_NOFILEHANDLE);
		ck_assert_int_eq(xdr_get_bitmap(&r.d, &bm), 0);
		ck_assert_uint_eq(bm.nwords, 0);
		ck_assert_uint_eq(xdr_dec_left(&r.d), 0);
		rep_free(&r);
		nc_close(n);
	}
	gw_down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw_clients");
	TCase *tc = tcase_create("clients");

	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, v40_setclientid_cases);
	tcase_add_test(tc, v41_exchange_id_cases);
	tcase_add_test(tc, v41_create_session_cases);
	tcase_add_test(tc, v41_reclaim_complete_before_new_state);
	tcase_add_test(tc, v41_secinfo_no_name);
	tcase_add_test(tc, delegation_wants);
	tcase_add_test(tc, v41_destroy_session_connection);
	tcase_add_test(tc, result_shape_without_a_filehandle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	log_init("test_nfs4_gw_clients");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
