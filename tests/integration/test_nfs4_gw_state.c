/*
 * test_nfs4_gw_state.c - NFSv4.0/4.1 conformance of the gateway's open and
 * lock state, over real sockets, against a real filesystem (the fixture is
 * nfs4gw_fixture.h): expired clients and courtesy state, special stateids,
 * share reservations, OPEN_DOWNGRADE, lock modes and client ids, object
 * types, the caller's credential on READ/WRITE, READ's eof, attributes,
 * and files removed while open.  One test per rule, with the RFC section
 * in its comment; each test runs its own gateway in a directory of its own.
 */
#include <time.h>

#include "nfs_gw/nfs4/ops_int.h"
#include "nfs4gw_fixture.h"

/* ---- small helpers ------------------------------------------------------------ */

static const struct nfs4_stateid anon_sid;                         /* {0, 0} */
static const struct nfs4_stateid bypass_sid = { UINT32_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
							      0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };

/* PUTFH + LOCK with a new lock-owner; *@lsid on success */
static uint32_t lock_new(struct nc *n, const struct nfs4_fh *fh, uint32_t type, uint64_t off, uint64_t len,
			 uint32_t open_seqid, const struct nfs4_stateid *osid, uint32_t lock_seqid, const char *lo,
			 struct nfs4_stateid *lsid)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_lock_new(&c, type, off, len, open_seqid, osid, lock_seqid, lo);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_LOCK);
	if (!st && lsid)
		rep_stateid(&r, lsid);
	rep_free(&r);
	return st;
}

static uint32_t lockt(struct nc *n, const struct nfs4_fh *fh, uint32_t type, uint64_t off, uint64_t len,
		      const char *lo)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_lockt(&c, type, off, len, lo);
	return ncc_status(&c);
}

static uint32_t locku(struct nc *n, const struct nfs4_fh *fh, uint32_t seqid, const struct nfs4_stateid *lsid,
		      uint64_t off, uint64_t len)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_locku(&c, NC_WRITE_LT, seqid, lsid, off, len);
	return ncc_status(&c);
}

static uint32_t close_sid(struct nc *n, const struct nfs4_fh *fh, uint32_t seqid, const struct nfs4_stateid *sid)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_close(&c, seqid, sid);
	return ncc_status(&c);
}

static uint32_t downgrade(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, uint32_t seqid,
			  uint32_t access, uint32_t deny, struct nfs4_stateid *out)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_open_downgrade(&c, sid, seqid, access, deny);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_OPEN_DOWNGRADE);
	if (!st && out)
		rep_stateid(&r, out);
	rep_free(&r);
	return st;
}

/* READ: status; the data into @buf (NUL-terminated, up to 255 bytes), eof */
static uint32_t do_read(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, uint64_t off,
			uint32_t count, bool *eof, char *buf)
{
	struct ncc c;
	struct nrep r;
	const uint8_t *data;
	uint32_t st, len;
	bool e;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_read(&c, sid, off, count);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_READ);
	if (!st) {
		rep_read(&r, &e, &data, &len);
		if (eof)
			*eof = e;
		if (buf) {
			len = len < 255 ? len : 255;
			memcpy(buf, data, len);
			buf[len] = 0;
		}
	}
	rep_free(&r);
	return st;
}

static uint32_t do_write(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, uint64_t off,
			 const char *data, uint32_t stable)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_write(&c, sid, off, stable, data, (uint32_t)strlen(data));
	return ncc_status(&c);
}

static uint32_t renew(struct nc *n, uint64_t clientid)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_renew(&c, clientid);
	return ncc_status(&c);
}

/* a 4.1 compound of SEQUENCE alone */
static uint32_t sequence_only(struct nc *n)
{
	struct ncc c;

	ncc_begin(&c, n);
	return ncc_status(&c);
}

/* GETATTR @attrs of @fh: the status; *@vals over the values */
static uint32_t getattr(struct nc *n, const struct nfs4_fh *fh, const int *attrs, struct nrep *r,
			struct xdr_bitmap *bm, struct xdr_dec *vals)
{
	struct ncc c;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_getattr(&c, attrs);
	ncc_call(&c, r);
	st = rep_next(r, OP_PUTFH);
	if (st)
		return st;
	st = rep_next(r, OP_GETATTR);
	if (!st)
		rep_fattr(r, bm, vals);
	return st;
}

static uint64_t change_of(struct nc *n, const struct nfs4_fh *fh)
{
	static const int attrs[] = { FATTR4_CHANGE, -1 };
	struct xdr_bitmap bm;
	struct xdr_dec v;
	struct nrep r;
	uint64_t ch = 0;

	ck_assert_uint_eq(getattr(n, fh, attrs, &r, &bm, &v), NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&v, &ch), 0);
	rep_free(&r);
	return ch;
}

/* ---- expired clients and courtesy state ------------------------------------------- */

/*
 * RFC 7530 9.6.3: a client whose lease expired keeps its locks as a
 * courtesy while nobody else wants them (9.6.3.1: its next request renews
 * them); a conflicting request cancels the lease and is granted, and from
 * then on the client id and every stateid of it answer NFS4ERR_EXPIRED
 * (9.6.3.2) - RENEW, LOCKU, CLOSE, a retransmission, OPEN - until the
 * client establishes a new client id.  (Before: STALE_CLIENTID and
 * BAD_STATEID, and no courtesy.)
 */
START_TEST(v40_expired_client)
{
	const char *opts[] = { "nfs4_lease_time=2", NULL };
	struct nc *a, *b, *c;
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid, lsid, bsid;
	uint64_t old_id;
	uint32_t aseq = 1, bseq = 1;

	gw_up_opts(opts);
	a = nc_connect(port, 0);
	test_dir(a, "exp40", &d);      /* (no client id needed; done before a lease runs) */
	make_file("f", "0123456789", 0644);
	nc_setclientid(a, "expired-a", 1);
	ck_assert_uint_eq(nc_open(a, &d, "f", 3, 0, "oa", NC_NOCREATE, &aseq, &osid, &fh), NFS4_OK);
	ck_assert_uint_eq(lock_new(a, &fh, NC_WRITE_LT, 0, 10, aseq++, &osid, 0, "la", &lsid), NFS4_OK);

	/* silence: the lease runs out, the state is kept */
	ck_assert_msg(WAIT_FOR(perf_counter("nfs4", "courtesy_clients") >= 1, 15), "no courtesy client");
	ck_assert_uint_eq(renew(a, a->clientid), NFS4_OK);      /* back: all as it was */
	b = nc_connect(port, 0);
	nc_setclientid(b, "expired-b", 1);
	ck_assert_uint_eq(lockt(b, &fh, NC_WRITE_LT, 0, 10, "lb"), NFS4ERR_DENIED);
	nc_close(b);

	/* silence again; now another client wants the lock */
	ck_assert_msg(WAIT_FOR(perf_counter("nfs4", "courtesy_clients") >= 2, 15), "no courtesy client");
	c = nc_connect(port, 0);
	nc_setclientid(c, "expired-c", 1);
	ck_assert_uint_eq(nc_open(c, &d, "f", 3, 0, "oc", NC_NOCREATE, &bseq, &bsid, NULL), NFS4_OK);
	ck_assert_uint_eq(lock_new(c, &fh, NC_WRITE_LT, 0, 10, bseq++, &bsid, 0, "lc", NULL), NFS4_OK);
	ck_assert_int_ge(perf_counter("nfs4", "leases_cancelled"), 1);

	/* the first client's lease is gone: EXPIRED everywhere */
	ck_assert_uint_eq(renew(a, a->clientid), NFS4ERR_EXPIRED);
	ck_assert_uint_eq(locku(a, &fh, 1, &lsid, 0, 10), NFS4ERR_EXPIRED);
	ck_assert_uint_eq(close_sid(a, &fh, aseq, &osid), NFS4ERR_EXPIRED);
	ck_assert_uint_eq(close_sid(a, &fh, aseq, &osid), NFS4ERR_EXPIRED);   /* a retransmission */
	ck_assert_uint_eq(lockt(a, &fh, NC_WRITE_LT, 0, 10, "la"), NFS4ERR_EXPIRED);
	ck_assert_uint_eq(nc_open(a, &d, "f", 1, 0, "oa", NC_NOCREATE, &aseq, &osid, NULL), NFS4ERR_EXPIRED);

	/* ... until it establishes itself again: then the old ids are just unknown */
	old_id = a->clientid;
	nc_setclientid(a, "expired-a", 2);
	ck_assert_uint_ne(a->clientid, old_id);
	ck_assert_uint_eq(renew(a, old_id), NFS4ERR_STALE_CLIENTID);
	ck_assert_uint_eq(close_sid(a, &fh, aseq, &osid), NFS4ERR_BAD_STATEID);
	nc_close(a);
	nc_close(c);
	gw_down();
}
END_TEST

/*
 * The same for 4.1 (RFC 8881 8.4.3, 8.2.2): SEQUENCE of a courtesy client
 * renews its state; once another client's request cancelled its lease its
 * sessions are gone (NFS4ERR_BADSESSION), its client id is unknown to
 * CREATE_SESSION, and its stateids answer NFS4ERR_EXPIRED to TEST_STATEID.
 */
START_TEST(v41_expired_client)
{
	const char *opts[] = { "nfs4_lease_time=2", NULL };
	struct nc *a, *b;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sids[2], bsid;
	struct ncc c;
	struct nrep r;
	uint32_t st1, st2;
	uint64_t old_id;

	gw_up_opts(opts);
	a = nc_connect(port, 0);       /* 4.0 for the set-up, before a lease runs */
	test_dir(a, "exp41", &d);
	make_file("f", "0123456789", 0644);
	nc_close(a);
	a = nc_connect(port, 1);
	nc_session(a, "expired41-a", 1);
	ck_assert_uint_eq(nc_open(a, &d, "f", 3, 0, "oa", NC_NOCREATE, NULL, &sids[0], &fh), NFS4_OK);
	ck_assert_uint_eq(lock_new(a, &fh, NC_WRITE_LT, 0, 10, 0, &sids[0], 0, "la", &sids[1]), NFS4_OK);

	ck_assert_msg(WAIT_FOR(perf_counter("nfs4", "courtesy_clients") >= 1, 15), "no courtesy client");
	ck_assert_uint_eq(sequence_only(a), NFS4_OK);           /* back: the session and its state are there */
	ck_assert_msg(WAIT_FOR(perf_counter("nfs4", "courtesy_clients") >= 2, 15), "no courtesy client");

	b = nc_connect(port, 1);
	nc_session(b, "expired41-b", 1);
	ck_assert_uint_eq(nc_open(b, &d, "f", 3, 0, "ob", NC_NOCREATE, NULL, &bsid, NULL), NFS4_OK);
	ck_assert_uint_eq(lock_new(b, &fh, NC_WRITE_LT, 0, 10, 0, &bsid, 0, "lb", NULL), NFS4_OK);

	ck_assert_uint_eq(sequence_only(a), NFS4ERR_BADSESSION);
	ncc_begin(&c, b);
	enc_test_stateid(&c, sids, 2);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_TEST_STATEID), NFS4_OK);
	ck_assert_int_eq(xdr_get_u32(&r.d, &st1), 0);
	ck_assert_uint_eq(st1, 2);
	xdr_get_u32(&r.d, &st1);
	xdr_get_u32(&r.d, &st2);
	ck_assert_uint_eq(st1, NFS4ERR_EXPIRED);
	ck_assert_uint_eq(st2, NFS4ERR_EXPIRED);
	rep_free(&r);
	ncc_begin_raw(&c, a, 1, 0);
	enc_create_session(&c, a->clientid, a->cs_seq, 0, &nc_fore, &nc_back);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_STALE_CLIENTID);
	/* a new client id of the same owner: the old stateids are just unknown */
	old_id = a->clientid;
	a->has_session = false;
	nc_session(a, "expired41-a", 1);
	ck_assert_uint_ne(a->clientid, old_id);
	ncc_begin(&c, b);
	enc_test_stateid(&c, sids, 1);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_TEST_STATEID), NFS4_OK);
	xdr_get_u32(&r.d, &st1);
	xdr_get_u32(&r.d, &st1);
	ck_assert_uint_eq(st1, NFS4ERR_BAD_STATEID);
	rep_free(&r);
	nc_close(a);
	nc_close(b);
	gw_down();
}
END_TEST

/* ---- special stateids ---------------------------------------------------------------- */

/*
 * RFC 7530 9.1.4.3-9.1.4.4, RFC 8881 8.2.3: special stateids mean something
 * to READ, WRITE and SETATTR only; where an open or lock stateid is
 * required (CLOSE, OPEN_CONFIRM, OPEN_DOWNGRADE, LOCK, LOCKU, FREE_STATEID,
 * TEST_STATEID) they are NFS4ERR_BAD_STATEID, and so is any other
 * combination of a reserved "other" with a seqid.  (Before: STALE_STATEID,
 * and {5, 0...} read as anonymous.)
 */
START_TEST(special_stateids_where_a_real_one_is_needed)
{
	struct nc *n, *m;
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid, odd = { 5, { 0 } }, ones0 = bypass_sid;
	const struct nfs4_stateid *specials[2] = { &anon_sid, &bypass_sid };
	struct ncc c;
	struct nrep r;
	uint32_t seq = 1, st;

	gw_up();
	n = nc_connect(port, 0);
	nc_setclientid(n, "special-40", 1);
	test_dir(n, "special", &d);
	make_file("f", "0123456789", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, &seq, &osid, &fh), NFS4_OK);
	for (int i = 0; i < 2; i++) {
		const struct nfs4_stateid *sp = specials[i];

		ck_assert_uint_eq(close_sid(n, &fh, seq, sp), NFS4ERR_BAD_STATEID);
		ck_assert_uint_eq(downgrade(n, &fh, sp, seq, 1, 0, NULL), NFS4ERR_BAD_STATEID);
		ck_assert_uint_eq(locku(n, &fh, 1, sp, 0, 1), NFS4ERR_BAD_STATEID);
		ck_assert_uint_eq(lock_new(n, &fh, NC_WRITE_LT, 0, 1, seq, sp, 0, "l", NULL), NFS4ERR_BAD_STATEID);
		ncc_begin(&c, n);
		enc_putfh(&c, &fh);
		enc_lock(&c, NC_WRITE_LT, 0, 1, sp, 1);
		ck_assert_uint_eq(ncc_status(&c), NFS4ERR_BAD_STATEID);
		ncc_begin(&c, n);
		enc_putfh(&c, &fh);
		enc_open_confirm(&c, sp, seq);
		ck_assert_uint_eq(ncc_status(&c), NFS4ERR_BAD_STATEID);
	}
	/* none of that used up a seqid: the owner goes on */
	ck_assert_uint_eq(close_sid(n, &fh, seq++, &osid), NFS4_OK);
	/* reserved "other" with an undefined seqid */
	ck_assert_uint_eq(do_read(n, &fh, &odd, 0, 4, NULL, NULL), NFS4ERR_BAD_STATEID);
	ones0.seqid = 0;
	ck_assert_uint_eq(do_write(n, &fh, &ones0, 0, "x", 2), NFS4ERR_BAD_STATEID);
	ck_assert_uint_eq(do_read(n, &fh, &anon_sid, 0, 4, NULL, NULL), NFS4_OK);

	/* 4.1: FREE_STATEID and TEST_STATEID; the invalid stateid {~0, 0} */
	m = nc_connect(port, 1);
	nc_session(m, "special-41", 1);
	for (int i = 0; i < 2; i++) {
		ncc_begin(&c, m);
		enc_free_stateid(&c, specials[i]);
		ck_assert_uint_eq(ncc_status(&c), NFS4ERR_BAD_STATEID);
	}
	{
		struct nfs4_stateid t[3] = { anon_sid, bypass_sid, { UINT32_MAX, { 0 } } };

		ncc_begin(&c, m);
		enc_test_stateid(&c, t, 3);
		ncc_call(&c, &r);
		ck_assert_uint_eq(rep_next(&r, OP_TEST_STATEID), NFS4_OK);
		xdr_get_u32(&r.d, &st);
		ck_assert_uint_eq(st, 3);
		for (int i = 0; i < 3; i++) {
			xdr_get_u32(&r.d, &st);
			ck_assert_msg(st == NFS4ERR_BAD_STATEID, "TEST_STATEID of special %d: %u", i, st);
		}
		rep_free(&r);
		ck_assert_uint_eq(do_read(m, &fh, &t[2], 0, 4, NULL, NULL), NFS4ERR_BAD_STATEID);
	}
	nc_close(m);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * RFC 7530 9.1.6, 16.23.4, 16.36.4, 16.32.4: share reservations are
 * mandatory: I/O with the anonymous stateid that an open denies is
 * NFS4ERR_LOCKED, the READ bypass stateid may read past a deny but never
 * write, and a SETATTR of the size is a write.  (Before: served.)
 */
START_TEST(special_stateids_respect_deny_modes)
{
	struct nc *n, *m;
	struct nfs4_fh d, fr, fw;
	struct nfs4_stateid s1, s2;
	uint32_t seq = 1;

	gw_up();
	n = nc_connect(port, 0);
	nc_setclientid(n, "deny-40", 1);
	test_dir(n, "deny", &d);
	make_file("noread", "0123456789", 0644);
	make_file("nowrite", "0123456789", 0644);
	/* one open denying reads, one denying writes */
	ck_assert_uint_eq(nc_open(n, &d, "noread", 2, 1, "o", NC_NOCREATE, &seq, &s1, &fr), NFS4_OK);
	ck_assert_uint_eq(nc_open(n, &d, "nowrite", 1, 2, "o", NC_NOCREATE, &seq, &s2, &fw), NFS4_OK);
	for (int minor = 0; minor <= 1; minor++) {
		if (minor) {
			m = nc_connect(port, 1);
			nc_session(m, "deny-41", 1);
		} else {
			m = nc_connect(port, 0);
			nc_setclientid(m, "deny-40-other", 1);
		}
		ck_assert_uint_eq(do_read(m, &fr, &anon_sid, 0, 4, NULL, NULL), NFS4ERR_LOCKED);
		ck_assert_uint_eq(do_read(m, &fr, &bypass_sid, 0, 4, NULL, NULL), NFS4_OK);
		ck_assert_uint_eq(do_write(m, &fr, &anon_sid, 0, "w", 2), NFS4_OK);
		ck_assert_uint_eq(do_write(m, &fw, &anon_sid, 0, "w", 2), NFS4ERR_LOCKED);
		ck_assert_uint_eq(do_write(m, &fw, &bypass_sid, 0, "w", 2), NFS4ERR_LOCKED);
		ck_assert_uint_eq(do_read(m, &fw, &anon_sid, 0, 4, NULL, NULL), NFS4_OK);
		{
			struct ncc c;

			ncc_begin(&c, m);
			enc_putfh(&c, &fw);
			enc_setattr_size(&c, &anon_sid, 1);
			ck_assert_uint_eq(ncc_status(&c), NFS4ERR_LOCKED);
		}
		nc_close(m);
	}
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * During the grace period new opens wait (NFS4ERR_GRACE), but I/O with a
 * special stateid is served, as knfsd serves it (it refuses such I/O in
 * grace only for mandatory locks; the gateway's are advisory), subject to
 * the deny modes of the opens there are.  (posix's maxfilesize test sends
 * its SETATTR of the size with the anonymous stateid right after start.)
 */
START_TEST(special_stateids_in_grace)
{
	const char *opts[] = { "nfs4_grace_time=120", "nfs_gateway_id=grace", NULL };
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	struct ncc c;
	uint32_t seq = 1;
	char buf[256];

	/* a grace period needs a client recorded by the previous incarnation */
	gw_up_opts(opts);
	n = nc_connect(port, 0);
	nc_setclientid(n, "grace-40", 1);
	nc_close(n);
	gw_down();
	gw_up_opts(opts);
	n = nc_connect(port, 0);
	nc_setclientid(n, "grace-40", 1);
	test_dir(n, "grace", &d);
	make_file("g", "0123456789", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "g", 1, 0, "o", NC_NOCREATE, &seq, &sid, &fh), NFS4ERR_GRACE);
	nc_lookup(n, &d, "g", &fh);
	ck_assert_uint_eq(do_read(n, &fh, &anon_sid, 0, 4, NULL, buf), NFS4_OK);
	ck_assert_str_eq(buf, "0123");
	ck_assert_uint_eq(do_read(n, &fh, &bypass_sid, 0, 4, NULL, NULL), NFS4_OK);
	ck_assert_uint_eq(do_write(n, &fh, &anon_sid, 0, "w", 2), NFS4_OK);
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_setattr_size(&c, &anon_sid, 3);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- share reservations and OPEN_DOWNGRADE ------------------------------------------------ */

/*
 * RFC 7530 9.9 and 16.16.5: an OPEN is checked against the file's share
 * reservations "with no exception for an existing OPEN for the same
 * open-owner"; RFC 7530 16.19.4: OPEN_DOWNGRADE goes only to modes that
 * some of the OPENs in effect add up to, else NFS4ERR_INVAL.  (Before: an
 * owner's own deny never stopped it; any subset of the union was taken.)
 */
START_TEST(share_reservations_and_downgrade)
{
	struct nc *n;
	struct nfs4_fh d, fh, gh, kh;
	struct nfs4_stateid s, g, k;
	uint32_t seq = 1;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "shares", 1);
	test_dir(n, "shares", &d);
	make_file("f", "data", 0644);
	make_file("g", "data", 0644);
	make_file("k", "data", 0644);
	/* READ, deny WRITE; then the same owner wants WRITE, or denies READ */
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 2, "o", NC_NOCREATE, NULL, &s, &fh), NFS4_OK);
	ck_assert_uint_eq(nc_open(n, &d, "f", 2, 0, "o", NC_NOCREATE, NULL, &s, &fh), NFS4ERR_SHARE_DENIED);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 1, "o", NC_NOCREATE, NULL, &s, &fh), NFS4ERR_SHARE_DENIED);
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "other", NC_NOCREATE, NULL, &s, &fh), NFS4ERR_SHARE_DENIED);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "other", NC_NOCREATE, NULL, &s, &fh), NFS4_OK);
	/* one OPEN of BOTH: READ alone was never opened */
	ck_assert_uint_eq(nc_open(n, &d, "g", 3, 0, "o", NC_NOCREATE, NULL, &g, &gh), NFS4_OK);
	ck_assert_uint_eq(downgrade(n, &gh, &g, seq, 1, 0, NULL), NFS4ERR_INVAL);
	ck_assert_uint_eq(downgrade(n, &gh, &g, seq, 3, 0, &g), NFS4_OK);
	/* READ, then WRITE: either alone, or both; not after the WRITE was let go */
	ck_assert_uint_eq(nc_open(n, &d, "k", 1, 0, "o", NC_NOCREATE, NULL, &k, &kh), NFS4_OK);
	ck_assert_uint_eq(nc_open(n, &d, "k", 2, 0, "o", NC_NOCREATE, NULL, &k, &kh), NFS4_OK);
	ck_assert_uint_eq(downgrade(n, &kh, &k, seq, 3, 1, NULL), NFS4ERR_INVAL);   /* no deny was opened */
	ck_assert_uint_eq(downgrade(n, &kh, &k, seq, 1, 0, &k), NFS4_OK);
	ck_assert_uint_eq(downgrade(n, &kh, &k, seq, 3, 0, NULL), NFS4ERR_INVAL);
	ck_assert_uint_eq(downgrade(n, &kh, &k, seq, 2, 0, NULL), NFS4ERR_INVAL);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- locks ------------------------------------------------------------------------------ */

/*
 * RFC 7530 16.10.5 / RFC 8881 18.10.4 leave lock modes to the file
 * system's semantics: POSIX, as knfsd, refuses a write lock on a file open
 * only for reading, and a read lock on one open only for writing
 * (NFS4ERR_OPENMODE).  A 4.0 lock-owner of another client id than the
 * open's is NFS4ERR_BAD_STATEID (a stale one NFS4ERR_STALE_CLIENTID); 4.1
 * ignores that client id (18.10.3).  4.0: new_lock_owner for a lock-owner
 * that already has lock state on the file is NFS4ERR_BAD_SEQID (16.10.5),
 * and a known lock-owner's lock_seqid must be its next one.  (Before: all
 * granted.)
 */
START_TEST(lock_modes_and_owners)
{
	struct nc *n, *m, *o;
	struct nfs4_fh d, fh, gh;
	struct nfs4_stateid ro, wo;
	uint32_t seq = 1;
	uint64_t mine;

	gw_up();
	n = nc_connect(port, 0);
	nc_setclientid(n, "locks-40", 1);
	test_dir(n, "locks", &d);
	make_file("f", "0123456789", 0644);
	make_file("g", "0123456789", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "o", NC_NOCREATE, &seq, &ro, &fh), NFS4_OK);
	ck_assert_uint_eq(nc_open(n, &d, "g", 2, 0, "o", NC_NOCREATE, &seq, &wo, &gh), NFS4_OK);
	/* modes: OPENMODE (it advances the open-owner's seqid) */
	ck_assert_uint_eq(lock_new(n, &fh, NC_WRITE_LT, 0, 5, seq++, &ro, 0, "lw", NULL), NFS4ERR_OPENMODE);
	ck_assert_uint_eq(lock_new(n, &gh, NC_READ_LT, 0, 5, seq++, &wo, 0, "lr", NULL), NFS4ERR_OPENMODE);
	ck_assert_uint_eq(lock_new(n, &fh, NC_READ_LT, 0, 5, seq++, &ro, 0, "l1", NULL), NFS4_OK);
	/* new_lock_owner for lock state that exists: BAD_SEQID (no seqid used up) */
	ck_assert_uint_eq(lock_new(n, &fh, NC_READ_LT, 6, 2, seq, &ro, 1, "l1", NULL), NFS4ERR_BAD_SEQID);
	/* the known lock-owner on another file: its next lock_seqid, not its last */
	ck_assert_uint_eq(lock_new(n, &gh, NC_WRITE_LT, 0, 5, seq, &wo, 0, "l1", NULL), NFS4ERR_BAD_SEQID);
	ck_assert_uint_eq(lock_new(n, &gh, NC_WRITE_LT, 0, 5, seq++, &wo, 1, "l1", NULL), NFS4_OK);
	/* a lock-owner of another client id than the open's */
	o = nc_connect(port, 0);
	nc_setclientid(o, "locks-40-other", 1);
	mine = n->clientid;
	n->clientid = o->clientid;
	ck_assert_uint_eq(lock_new(n, &gh, NC_WRITE_LT, 20, 5, seq, &wo, 0, "l2", NULL), NFS4ERR_BAD_STATEID);
	n->clientid = mine ^ 0xffffffff00000000ull;     /* of another server instance */
	ck_assert_uint_eq(lock_new(n, &gh, NC_WRITE_LT, 20, 5, seq, &wo, 0, "l2", NULL), NFS4ERR_STALE_CLIENTID);
	n->clientid = mine;
	ck_assert_uint_eq(lock_new(n, &gh, NC_WRITE_LT, 20, 5, seq++, &wo, 0, "l2", NULL), NFS4_OK);

	/* 4.1: the same modes; the lock-owner's client id is ignored */
	m = nc_connect(port, 1);
	nc_session(m, "locks-41", 1);
	ck_assert_uint_eq(nc_open(m, &d, "f", 1, 0, "o41", NC_NOCREATE, NULL, &ro, NULL), NFS4_OK);
	ck_assert_uint_eq(lock_new(m, &fh, NC_WRITE_LT, 0, 5, 0, &ro, 0, "l41", NULL), NFS4ERR_OPENMODE);
	m->clientid ^= 0xdead;
	ck_assert_uint_eq(lock_new(m, &fh, NC_READ_LT, 0, 5, 0, &ro, 0, "l41", NULL), NFS4_OK);
	nc_close(o);
	nc_close(m);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- object types ------------------------------------------------------------------------ */

/*
 * What operations that need a regular file answer for others: LOCK, LOCKT,
 * LOCKU (RFC 8881 18.10.3-18.12.3: ISDIR, SYMLINK, else WRONG_TYPE; 4.0 has
 * no WRONG_TYPE: INVAL), READ (RFC 7530 16.23.4: ISDIR else INVAL; RFC 8881
 * 18.22.3 as LOCK), OPEN (RFC 7530 16.16.6: ISDIR, else SYMLINK for
 * symlinks and special files alike; RFC 8881 18.16.3: WRONG_TYPE for the
 * latter), as knfsd answers.  (Before: LOCKT tested anything; OPEN of a fifo
 * was INVAL in 4.0 and SYMLINK in 4.1's create path.)
 */
static void object_types(uint32_t minor)
{
	struct nc *n;
	struct nfs4_fh d, fh, dirh, lnkh, fifoh;
	struct nfs4_stateid osid, lsid;
	uint32_t seq = 1, other = minor ? NFS4ERR_WRONG_TYPE : NFS4ERR_INVAL;
	char dname[16];

	n = nc_connect(port, minor);
	if (minor)
		nc_session(n, "types-41", 1);
	else
		nc_setclientid(n, "types-40", 1);
	snprintf(dname, sizeof(dname), "types%u", minor);
	test_dir(n, dname, &d);
	make_file("f", "0123456789", 0644);
	make_node("dir", S_IFDIR);
	make_node("lnk", S_IFLNK);
	make_node("fifo", S_IFIFO);
	nc_lookup(n, &d, "dir", &dirh);
	nc_lookup(n, &d, "lnk", &lnkh);
	nc_lookup(n, &d, "fifo", &fifoh);
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, minor ? NULL : &seq, &osid, &fh), NFS4_OK);
	ck_assert_uint_eq(lock_new(n, &fh, NC_WRITE_LT, 0, 1, seq++, &osid, 0, "l", &lsid), NFS4_OK);

	ck_assert_uint_eq(lockt(n, &dirh, NC_WRITE_LT, 0, 1, "x"), NFS4ERR_ISDIR);
	ck_assert_uint_eq(lockt(n, &lnkh, NC_WRITE_LT, 0, 1, "x"), NFS4ERR_SYMLINK);
	ck_assert_uint_eq(lockt(n, &fifoh, NC_WRITE_LT, 0, 1, "x"), other);
	ck_assert_uint_eq(lock_new(n, &dirh, NC_WRITE_LT, 0, 1, seq, &osid, 0, "l2", NULL), NFS4ERR_ISDIR);
	ck_assert_uint_eq(lock_new(n, &lnkh, NC_WRITE_LT, 0, 1, seq, &osid, 0, "l2", NULL), NFS4ERR_SYMLINK);
	ck_assert_uint_eq(lock_new(n, &fifoh, NC_WRITE_LT, 0, 1, seq, &osid, 0, "l2", NULL), other);
	ck_assert_uint_eq(locku(n, &dirh, 1, &lsid, 0, 1), NFS4ERR_ISDIR);
	ck_assert_uint_eq(locku(n, &lnkh, 1, &lsid, 0, 1), NFS4ERR_SYMLINK);
	ck_assert_uint_eq(do_read(n, &dirh, &anon_sid, 0, 1, NULL, NULL), NFS4ERR_ISDIR);
	ck_assert_uint_eq(do_read(n, &fifoh, &anon_sid, 0, 1, NULL, NULL), other);
	ck_assert_uint_eq(do_read(n, &lnkh, &anon_sid, 0, 1, NULL, NULL), minor ? NFS4ERR_SYMLINK : NFS4ERR_INVAL);
	/* OPEN by name: of a directory, a symlink, a fifo; with and without create */
	for (int how = NC_NOCREATE; how <= NC_CREATE; how++) {
		ck_assert_uint_eq(nc_open(n, &d, "dir", 1, 0, "o", how, minor ? NULL : &seq, &osid, NULL), NFS4ERR_ISDIR);
		ck_assert_uint_eq(nc_open(n, &d, "lnk", 1, 0, "o", how, minor ? NULL : &seq, &osid, NULL),
				  NFS4ERR_SYMLINK);
		ck_assert_uint_eq(nc_open(n, &d, "fifo", 1, 0, "o", how, minor ? NULL : &seq, &osid, NULL),
				  minor ? NFS4ERR_WRONG_TYPE : NFS4ERR_SYMLINK);
	}
	nc_close(n);
}

START_TEST(object_types_v40)
{
	gw_up();
	object_types(0);
	gw_down();
}
END_TEST

START_TEST(object_types_v41)
{
	gw_up();
	object_types(1);
	gw_down();
}
END_TEST

/* ---- credentials ---------------------------------------------------------------------- */

/*
 * RFC 7530 16.16.6: READ and WRITE need not come with the OPEN's
 * credential, so "the server still must do appropriate access checking on
 * the READs and WRITEs themselves": another user's READ or WRITE with
 * someone's open stateid is checked against that user (NFS4ERR_ACCESS);
 * the file's owner may always use its own open (knfsd's owner override).
 * (Before: served with the opener's rights.)
 */
START_TEST(io_checked_against_the_callers_credential)
{
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	char buf[256];

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "creds", 1);
	test_dir(n, "creds", &d);
	make_file("mine", "secret", 0600);
	set_owner_mode("mine", 1000, 1000, 0600);
	n->uid = n->gid = 1000;
	ck_assert_uint_eq(nc_open(n, &d, "mine", 3, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	ck_assert_uint_eq(do_write(n, &fh, &sid, 0, "S", 2), NFS4_OK);
	n->uid = n->gid = 2000;
	ck_assert_uint_eq(do_write(n, &fh, &sid, 0, "X", 2), NFS4ERR_ACCESS);
	ck_assert_uint_eq(do_read(n, &fh, &sid, 0, 6, NULL, buf), NFS4ERR_ACCESS);
	/* the owner, even after a chmod 0 */
	set_owner_mode("mine", 1000, 1000, 0);
	n->uid = 1000;
	n->gid = 1000;
	ck_assert_uint_eq(do_write(n, &fh, &sid, 1, "e", 2), NFS4_OK);
	n->gid = 55;                       /* the owner uid with another group: still the owner */
	ck_assert_uint_eq(do_read(n, &fh, &sid, 0, 6, NULL, buf), NFS4_OK);
	ck_assert_str_eq(buf, "Secret");
	n->uid = n->gid = 0;               /* root */
	ck_assert_uint_eq(do_read(n, &fh, &sid, 0, 6, NULL, buf), NFS4_OK);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- READ eof --------------------------------------------------------------------------- */

/*
 * RFC 7530 16.23.4: "If the READ ended at the end-of-file ... or the READ
 * request extends beyond the size of the file ..., eof is returned as
 * TRUE; otherwise, it is FALSE."  (Before: a read ending exactly at EOF
 * said FALSE, a 0-byte read below EOF TRUE.)
 */
/* byte @off of the layout case's pattern (printable, never NUL: do_write takes a string) */
static char lay_pat(uint64_t off)
{
	return (char)('A' + (off * 7 + off / 4096) % 26);
}

/*
 * A file striped over 4 objects (issue 22.4): its directory's layout
 * (loligo.dir.layout, set through the client library) is the one a file
 * made through the gateway gets; written through NFS in pieces crossing
 * the stripe units, read back through NFS at unit boundaries and whole
 * through the client library, which reads the objects the striping names.
 */
START_TEST(layout_striped_rw)
{
	const char *lay = "object_size=65536 stripe_unit=4096 stripe_count=4";
	const size_t size = 300000, piece = 10000;
	struct lc_inode *d, *in;
	struct lc_fh *lfh;
	struct nc *n;
	struct nfs4_fh dfh, fh;
	struct nfs4_stateid sid;
	char *chunk = malloc(piece + 1), buf[256], *all = malloc(size);
	bool eof;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "layout", 1);
	test_dir(n, "lay", &dfh);
	ck_assert_int_eq(lc_lookup(lc, lroot, "lay", &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_setxattr(lc, d, "loligo.dir.layout", lay, strlen(lay), 0, &rootcr), 0);
	ck_assert_uint_eq(nc_open(n, &dfh, "f", 3, 0, "o", NC_CREATE, NULL, &sid, &fh), NFS4_OK);
	for (size_t off = 0; off < size; off += piece) {
		for (size_t i = 0; i < piece; i++)
			chunk[i] = lay_pat(off + i);
		chunk[piece] = '\0';
		ck_assert_uint_eq(do_write(n, &fh, &sid, off, chunk, off % (3 * piece) ? 0 : 2), NFS4_OK);
	}
	ck_assert_uint_eq(close_sid(n, &fh, 0, &sid), NFS4_OK);
	/* through NFS, around unit and object boundaries */
	ck_assert_uint_eq(nc_open(n, &dfh, "f", 1, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	for (uint64_t off = 4096 - 100; off < size; off += 65536 + 4096) {
		ck_assert_uint_eq(do_read(n, &fh, &sid, off, 200, &eof, buf), NFS4_OK);
		for (size_t i = 0; i < 200 && off + i < size; i++)
			ck_assert_msg(buf[i] == lay_pat(off + i), "NFS READ: byte %llu is '%c', want '%c'",
				      (unsigned long long)(off + i), buf[i], lay_pat(off + i));
	}
	ck_assert_uint_eq(close_sid(n, &fh, 0, &sid), NFS4_OK);
	/* the file has the layout, and the client library reads every byte */
	ck_assert_int_eq(lc_lookup(lc, d, "f", &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_getxattr(lc, in, "loligo.file.layout.stripe_count", buf, sizeof(buf), &rootcr), 1);
	ck_assert_int_eq(buf[0], '4');
	ck_assert_int_eq(lc_open(lc, in, O_RDONLY, &rootcr, &lfh), 0);
	ck_assert_int_eq(lc_read(lc, lfh, 0, size, all), (ssize_t)size);
	for (size_t i = 0; i < size; i++)
		ck_assert_msg(all[i] == lay_pat(i), "byte %zu is '%c', want '%c'", i, all[i], lay_pat(i));
	ck_assert_int_eq(lc_release(lc, lfh), 0);
	lc_put(lc, in);
	lc_put(lc, d);
	free(chunk);
	free(all);
	nc_close(n);
}
END_TEST

START_TEST(read_eof)
{
	static const struct {
		uint64_t off;
		uint32_t count;
		bool eof;
		const char *data;
	} cases[] = {
		{ 0, 10, true, "0123456789" }, { 0, 100, true, "0123456789" }, { 3, 4, false, "3456" },
		{ 6, 4, true, "6789" }, { 0, 0, false, "" }, { 5, 0, false, "" }, { 10, 0, true, "" },
		{ 10, 5, true, "" }, { 100, 5, true, "" },
	};
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	char buf[256];
	bool eof;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "eof", 1);
	test_dir(n, "eof", &d);
	make_file("f", "0123456789", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_uint_eq(do_read(n, &fh, &sid, cases[i].off, cases[i].count, &eof, buf), NFS4_OK);
		ck_assert_msg(eof == cases[i].eof, "READ %llu+%u: eof %d", (unsigned long long)cases[i].off,
			      cases[i].count, eof);
		ck_assert_str_eq(buf, cases[i].data);
	}
	/* and after a buffered write grew the file */
	{
		struct nfs4_stateid w;

		ck_assert_uint_eq(nc_open(n, &d, "f", 2, 0, "o", NC_NOCREATE, NULL, &w, NULL), NFS4_OK);
		ck_assert_uint_eq(do_write(n, &fh, &w, 10, "ab", 0), NFS4_OK);
		ck_assert_uint_eq(do_read(n, &fh, &w, 0, 10, &eof, buf), NFS4_OK);
		ck_assert(!eof);
		ck_assert_uint_eq(do_read(n, &fh, &w, 8, 4, &eof, buf), NFS4_OK);
		ck_assert(eof);
		ck_assert_str_eq(buf, "89ab");
	}
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- attributes ----------------------------------------------------------------------------- */

/*
 * RFC 7530 5.5 / RFC 8881 5.5: the set-only attributes time_access_set and
 * time_modify_set requested by GETATTR or READDIR are NFS4ERR_INVAL;
 * supported_attrs lists only attributes of the client's minor version
 * (suppattr_exclcreat, 75, is 4.1's); a time with nseconds >= 10^9 is
 * well-formed XDR but not a time (NFS4ERR_INVAL, not BADXDR); an empty
 * owner string is NFS4ERR_INVAL (RFC 7530 12.7); and the change attribute
 * moves with every WRITE, also while the data is only buffered.  (Before:
 * set-only bits were dropped silently, 75 offered to 4.0, BADXDR,
 * BADOWNER, and the change stood still while buffered.)
 */
static void attributes(uint32_t minor)
{
	static const int wo1[] = { FATTR4_MODE, FATTR4_TIME_ACCESS_SET, -1 };
	static const int wo2[] = { FATTR4_TIME_MODIFY_SET, -1 };
	static const int sup[] = { FATTR4_SUPPORTED_ATTRS, -1 };
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	struct xdr_bitmap bm, s;
	struct xdr_dec v;
	struct nrep r;
	struct ncc c;
	uint64_t c0, c1, c2;
	uint32_t seq = 1;
	char dname[16];

	n = nc_connect(port, minor);
	if (minor)
		nc_session(n, "attrs-41", 1);
	else
		nc_setclientid(n, "attrs-40", 1);
	snprintf(dname, sizeof(dname), "attrs%u", minor);
	test_dir(n, dname, &d);
	make_file("f", "0123456789", 0644);
	nc_lookup(n, &d, "f", &fh);
	ck_assert_uint_eq(getattr(n, &fh, wo1, &r, &bm, &v), NFS4ERR_INVAL);
	rep_free(&r);
	ck_assert_uint_eq(getattr(n, &fh, wo2, &r, &bm, &v), NFS4ERR_INVAL);
	rep_free(&r);
	ncc_begin(&c, n);
	enc_putfh(&c, &d);
	enc_readdir(&c, wo2);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_INVAL);
	ck_assert_uint_eq(getattr(n, &fh, sup, &r, &bm, &v), NFS4_OK);
	ck_assert_int_eq(xdr_get_bitmap(&v, &s), 0);
	ck_assert_msg(((s.w[2] >> (FATTR4_SUPPATTR_EXCLCREAT - 64)) & 1) == minor,
		      "suppattr_exclcreat offered to minor version %u: %u", minor, (s.w[2] >> 11) & 1);
	rep_free(&r);

	/* SETATTR time_modify_set with nseconds = 10^9; an empty owner or group */
	{
		uint32_t w[3] = { 0, 1u << (FATTR4_TIME_MODIFY_SET - 32), 0 };
		uint8_t vals[16];

		xdr_store_u32(vals, 1);                 /* SET_TO_CLIENT_TIME4 */
		xdr_store_u32(vals + 4, 0);
		xdr_store_u32(vals + 8, 1000);
		xdr_store_u32(vals + 12, 1000000000u);
		ncc_begin(&c, n);
		enc_putfh(&c, &fh);
		enc_setattr_raw(&c, &anon_sid, w, vals, 16);
		ck_assert_uint_eq(ncc_status(&c), NFS4ERR_INVAL);
		for (int a = FATTR4_OWNER; a <= FATTR4_OWNER_GROUP; a++) {
			uint32_t w2[3] = { 0, 1u << (a - 32), 0 };

			memset(vals, 0, 4);                 /* a zero-length string */
			ncc_begin(&c, n);
			enc_putfh(&c, &fh);
			enc_setattr_raw(&c, &anon_sid, w2, vals, 4);
			ck_assert_uint_eq(ncc_status(&c), NFS4ERR_INVAL);
		}
	}
	/* the change attribute and buffered (UNSTABLE4) writes */
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, minor ? NULL : &seq, &sid, NULL), NFS4_OK);
	c0 = change_of(n, &fh);
	ck_assert_uint_eq(do_write(n, &fh, &sid, 0, "a", 0), NFS4_OK);
	c1 = change_of(n, &fh);
	ck_assert_uint_eq(do_write(n, &fh, &sid, 1, "b", 0), NFS4_OK);
	c2 = change_of(n, &fh);
	ck_assert_msg(c0 < c1 && c1 < c2, "change %llu, %llu, %llu", (unsigned long long)c0, (unsigned long long)c1,
		      (unsigned long long)c2);
	/* a COMMIT (the data reaches the MDS) does not take it back */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	ncc_op(&c, OP_COMMIT);
	xdr_put_u64(&c.e, 0);
	xdr_put_u32(&c.e, 0);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	ck_assert_uint_ge(change_of(n, &fh), c2);
	nc_close(n);
}

START_TEST(attributes_v40)
{
	gw_up();
	attributes(0);
	gw_down();
}
END_TEST

START_TEST(attributes_v41)
{
	gw_up();
	attributes(1);
	gw_down();
}
END_TEST

/* ---- owners by name (issue 20, item 4) ------------------------------------------------------- */

#define IDMAP_DOM "loligo.test"

/* a fattr4's values with owner and/or owner_group (NULL: not given) */
static size_t owner_vals(uint32_t w[3], uint8_t *buf, size_t len, const char *owner, const char *group)
{
	struct xdr_enc v;
	size_t n;

	w[0] = w[1] = w[2] = 0;
	xdr_enc_init(&v, 1024);
	if (owner) {
		w[1] |= 1u << (FATTR4_OWNER - 32);
		xdr_put_string(&v, owner);
	}
	if (group) {
		w[1] |= 1u << (FATTR4_OWNER_GROUP - 32);
		xdr_put_string(&v, group);
	}
	ck_assert_uint_le(v.len, len);
	memcpy(buf, v.buf, v.len);
	n = v.len;
	xdr_enc_free(&v);
	return n;
}

static uint32_t set_owners(struct nc *n, const struct nfs4_fh *fh, const char *owner, const char *group)
{
	uint32_t w[3];
	uint8_t vals[512];
	size_t len = owner_vals(w, vals, sizeof(vals), owner, group);
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_setattr_raw(&c, &anon_sid, w, vals, (uint32_t)len);
	return ncc_status(&c);
}

/* GETATTR owner and owner_group of @fh as strings */
static void get_owners(struct nc *n, const struct nfs4_fh *fh, char *owner, char *group)
{
	static const int attrs[] = { FATTR4_OWNER, FATTR4_OWNER_GROUP, -1 };
	struct xdr_bitmap bm;
	struct xdr_dec v;
	struct nrep r;

	ck_assert_uint_eq(getattr(n, fh, attrs, &r, &bm, &v), NFS4_OK);
	ck_assert_int_eq(xdr_get_string(&v, owner, 256, 255), 0);
	ck_assert_int_eq(xdr_get_string(&v, group, 256, 255), 0);
	rep_free(&r);
}

/* uid and gid of @name in the test's directory, through the client library */
static void ids_of(const char *name, uint32_t *uid, uint32_t *gid)
{
	struct lc_inode *d, *in;
	struct lc_attr a;

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_lookup(lc, d, name, &rootcr, NULL, &in), 0);
	ck_assert_int_eq(lc_getattr(lc, in, &rootcr, true, &a), 0);
	*uid = a.uid;
	*gid = a.gid;
	lc_put(lc, in);
	lc_put(lc, d);
}

/* CREATE a directory @name in @d with owner @owner: the status */
static uint32_t mkdir_owned(struct nc *n, const struct nfs4_fh *d, const char *name, const char *owner)
{
	uint32_t w[3];
	uint8_t vals[512];
	size_t len = owner_vals(w, vals, sizeof(vals), owner, NULL);
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, d);
	ncc_op(&c, OP_CREATE);
	xdr_put_u32(&c.e, NF4DIR);
	xdr_put_string(&c.e, name);
	xdr_put_bitmap(&c.e, w, 2);
	xdr_put_opaque(&c.e, vals, (uint32_t)len);
	return ncc_status(&c);
}

/* 4.1 OPEN (UNCHECKED4) creating @name in @d with owner_group @group: the status */
static uint32_t create_owned(struct nc *n, const struct nfs4_fh *d, const char *name, const char *group)
{
	uint32_t w[3];
	uint8_t vals[512];
	size_t len = owner_vals(w, vals, sizeof(vals), NULL, group);
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, d);
	enc_open_head(&c, 0, 3, 0, n->clientid, "idmap-oo");
	xdr_put_u32(&c.e, 1);                    /* OPEN4_CREATE */
	xdr_put_u32(&c.e, 0);                    /* UNCHECKED4 */
	xdr_put_bitmap(&c.e, w, 2);
	xdr_put_opaque(&c.e, vals, (uint32_t)len);
	xdr_put_u32(&c.e, 0);                    /* CLAIM_NULL */
	xdr_put_string(&c.e, name);
	return ncc_status(&c);
}

/* READDIR of @d asking for owner: the owner of entry @name into @owner */
static void readdir_owner(struct nc *n, const struct nfs4_fh *d, const char *name, char *owner)
{
	static const int attrs[] = { FATTR4_OWNER, -1 };
	struct nrep r;
	struct xdr_dec v;

	ck_assert_msg(nc_readdir_entry(n, d, attrs, name, &r, &v), "%s not in READDIR", name);
	ck_assert_int_eq(xdr_get_string(&v, owner, 256, 255), 0);
	rep_free(&r);
}

/*
 * RFC 7530 5.9 / RFC 8881 5.9, as knfsd with nfsidmap: with
 * nfs4_disable_idmapping = false, owners go out as "name@domain" (GETATTR
 * and READDIR; an id without a name as its number) and come in by name,
 * with the domain or without, or as numbers; a name nobody knows, or of
 * another domain, is NFS4ERR_BADOWNER for SETATTR, CREATE and OPEN, and
 * changes nothing.  Repeated GETATTRs are answered from the cache, not
 * NSS.  (Before: owners were numbers only; "daemon@domain" and every other
 * name was BADOWNER, and "root@other" was taken as root.)
 */
START_TEST(owners_by_name_v41)
{
	static const char *const opts[] = { "nfs4_disable_idmapping=false", "nfs4_idmap_domain=" IDMAP_DOM, NULL };
	char o[256], g[256];
	struct nfs4_fh d, fh;
	struct nc *n;
	uint32_t uid, gid;
	long long lookups;

	gw_up_opts(opts);
	n = nc_connect(port, 1);
	nc_session(n, "idmap-41", 1);
	test_dir(n, "idmap41", &d);
	make_file("f", "x", 0644);
	nc_lookup(n, &d, "f", &fh);
	get_owners(n, &fh, o, g);
	ck_assert_str_eq(o, "root@" IDMAP_DOM);
	ck_assert_str_eq(g, "root@" IDMAP_DOM);
	/* the hot path: the second and third GETATTR do not ask NSS */
	get_owners(n, &fh, o, g);
	lookups = perf_counter("nfs4", "idmap_lookups");
	ck_assert_int_gt(lookups, 0);
	get_owners(n, &fh, o, g);
	get_owners(n, &fh, o, g);
	ck_assert_int_eq(perf_counter("nfs4", "idmap_lookups"), lookups);
	ck_assert_int_gt(perf_counter("nfs4", "idmap_cache_hits"), 0);

	/* known names (Debian: user daemon = 1, group nogroup = 65534) */
	ck_assert_uint_eq(set_owners(n, &fh, "daemon@" IDMAP_DOM, "nogroup@" IDMAP_DOM), NFS4_OK);
	ids_of("f", &uid, &gid);
	ck_assert_uint_eq(uid, 1);
	ck_assert_uint_eq(gid, 65534);
	get_owners(n, &fh, o, g);
	ck_assert_str_eq(o, "daemon@" IDMAP_DOM);
	ck_assert_str_eq(g, "nogroup@" IDMAP_DOM);
	/* unknown names and another domain: BADOWNER, and the file keeps its owners */
	ck_assert_uint_eq(set_owners(n, &fh, "no-such-user-loligo@" IDMAP_DOM, NULL), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(set_owners(n, &fh, NULL, "no-such-group-loligo@" IDMAP_DOM), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(set_owners(n, &fh, "root@other.test", NULL), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(set_owners(n, &fh, "root", "no-such-group-loligo"), NFS4ERR_BADOWNER);
	ids_of("f", &uid, &gid);
	ck_assert_uint_eq(uid, 1);
	ck_assert_uint_eq(gid, 65534);
	ck_assert_int_ge(perf_counter("nfs4", "idmap_unknown"), 4);
	/* numeric strings are taken; ids without a name go out as numbers */
	ck_assert_uint_eq(set_owners(n, &fh, "4000123", "4000124@" IDMAP_DOM), NFS4_OK);
	ids_of("f", &uid, &gid);
	ck_assert_uint_eq(uid, 4000123);
	ck_assert_uint_eq(gid, 4000124);
	get_owners(n, &fh, o, g);
	ck_assert_str_eq(o, "4000123");
	ck_assert_str_eq(g, "4000124");
	/* a bare name is ours; READDIR sends names too */
	ck_assert_uint_eq(set_owners(n, &fh, "root", "daemon"), NFS4_OK);
	ids_of("f", &uid, &gid);
	ck_assert_uint_eq(uid, 0);
	ck_assert_uint_eq(gid, 1);
	readdir_owner(n, &d, "f", o);
	ck_assert_str_eq(o, "root@" IDMAP_DOM);

	/* CREATE and OPEN's attributes */
	ck_assert_uint_eq(mkdir_owned(n, &d, "sub", "daemon@" IDMAP_DOM), NFS4_OK);
	ids_of("sub", &uid, &gid);
	ck_assert_uint_eq(uid, 1);
	ck_assert_uint_eq(mkdir_owned(n, &d, "sub2", "no-such-user-loligo@" IDMAP_DOM), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(create_owned(n, &d, "g", "daemon@" IDMAP_DOM), NFS4_OK);
	ids_of("g", &uid, &gid);
	ck_assert_uint_eq(gid, 1);
	ck_assert_uint_eq(create_owned(n, &d, "h", "root@other.test"), NFS4ERR_BADOWNER);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * knfsd's default, nfs4_disable_idmapping = true: an AUTH_SYS client gets
 * numbers (what a Linux client mounting with sec=sys expects) but may
 * still send names.  (Before: numbers out, but names refused.)
 */
START_TEST(owners_numeric_for_auth_sys_by_default_v40)
{
	static const char *const opts[] = { "nfs4_idmap_domain=" IDMAP_DOM, NULL };
	char o[256], g[256];
	struct nfs4_fh d, fh;
	struct nc *n;
	uint32_t uid, gid;

	gw_up_opts(opts);
	n = nc_connect(port, 0);
	nc_setclientid(n, "idmap-40", 1);
	test_dir(n, "idmap40", &d);
	make_file("f", "x", 0644);
	nc_lookup(n, &d, "f", &fh);
	get_owners(n, &fh, o, g);
	ck_assert_str_eq(o, "0");
	ck_assert_str_eq(g, "0");
	ck_assert_uint_eq(set_owners(n, &fh, "daemon@" IDMAP_DOM, "nogroup"), NFS4_OK);
	ids_of("f", &uid, &gid);
	ck_assert_uint_eq(uid, 1);
	ck_assert_uint_eq(gid, 65534);
	get_owners(n, &fh, o, g);
	ck_assert_str_eq(o, "1");
	ck_assert_str_eq(g, "65534");
	ck_assert_uint_eq(set_owners(n, &fh, "no-such-user-loligo@" IDMAP_DOM, NULL), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(set_owners(n, &fh, "1234", "4321"), NFS4_OK);
	ids_of("f", &uid, &gid);
	ck_assert_uint_eq(uid, 1234);
	ck_assert_uint_eq(gid, 4321);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- files removed while open --------------------------------------------------------------- */

/* Does the MDS still answer for inode @ino (unlinked, open here)? */
static bool mds_keeps_orphans(uint64_t ino)
{
	struct lc_inode *in = lc_ino_to_inode(lc, ino);
	struct lc_attr a;
	bool kept;

	ck_assert_ptr_nonnull(in);
	kept = lc_getattr(lc, in, &rootcr, true, &a) == 0;
	lc_put(lc, in);
	return kept;
}

/*
 * RFC 7530 9.10 / POSIX: a file removed (REMOVE, or RENAME over it) while
 * it is open lives on until its last close; the gateway keeps the inode its
 * opens use, so PUTFH of its handle, GETATTR, READ, WRITE and CLOSE keep
 * working (with the MDS's orphan list, 7 section 2, the MDS answers for it
 * too; the gateway does not depend on that).  After the close the handle
 * is stale.
 */
START_TEST(removed_while_open)
{
	static const int attrs[] = { FATTR4_SIZE, FATTR4_NUMLINKS, -1 };
	struct nc *n, *other;
	struct nfs4_fh d, fh, gh;
	struct nfs4_stateid sid, gsid;
	struct xdr_bitmap bm;
	struct xdr_dec v;
	struct nrep r;
	struct ncc c;
	uint64_t size, fileid = 0;
	uint32_t nlink;
	char buf[256];

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "removed", 1);
	test_dir(n, "removed", &d);
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_CREATE, NULL, &sid, &fh), NFS4_OK);
	ck_assert_uint_eq(do_write(n, &fh, &sid, 0, "hello", 2), NFS4_OK);
	{
		static const int fid[] = { FATTR4_FILEID, -1 };

		ck_assert_uint_eq(getattr(n, &fh, fid, &r, &bm, &v), NFS4_OK);
		xdr_get_u64(&v, &fileid);
		rep_free(&r);
	}
	make_file("g", "old g", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "g", 3, 0, "o", NC_NOCREATE, NULL, &gsid, &gh), NFS4_OK);

	/* another client removes f and renames a file over g */
	other = nc_connect(port, 1);
	nc_session(other, "remover", 1);
	make_file("h", "new h", 0644);
	ncc_begin(&c, other);
	enc_putfh(&c, &d);
	enc_remove(&c, "f");
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	ncc_begin(&c, other);
	enc_putfh(&c, &d);
	enc_savefh(&c);
	enc_rename(&c, "h", "g");
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);

	/* the open files are still there for their opener */
	ck_assert_uint_eq(getattr(n, &fh, attrs, &r, &bm, &v), NFS4_OK);
	xdr_get_u64(&v, &size);
	xdr_get_u32(&v, &nlink);
	ck_assert_uint_eq(size, 5);
	ck_assert_uint_eq(nlink, 0);
	rep_free(&r);
	ck_assert_uint_eq(do_read(n, &fh, &sid, 0, 5, NULL, buf), NFS4_OK);
	ck_assert_str_eq(buf, "hello");
	ck_assert_uint_eq(do_write(n, &fh, &sid, 5, " world", 2), NFS4_OK);
	if (mds_keeps_orphans(fileid)) {
		/* the size a write past the old end makes reaches the MDS only if
		 * it keeps the orphan (caps' orphan list); the gateway's part is
		 * the same either way */
		ck_assert_uint_eq(do_read(n, &fh, &sid, 0, 20, NULL, buf), NFS4_OK);
		ck_assert_str_eq(buf, "hello world");
	} else {
		fprintf(stderr, "removed_while_open: the MDS drops unlinked inodes (no orphan list yet): "
				"growing an unlinked file not checked\n");
	}
	ck_assert_uint_eq(do_read(n, &gh, &gsid, 0, 20, NULL, buf), NFS4_OK);
	ck_assert_str_eq(buf, "old g");
	ck_assert_uint_eq(close_sid(n, &fh, 0, &sid), NFS4_OK);
	ck_assert_uint_eq(close_sid(n, &gh, 0, &gsid), NFS4_OK);
	/* closed: gone */
	ck_assert_uint_eq(getattr(n, &fh, attrs, &r, &bm, &v), NFS4ERR_STALE);
	rep_free(&r);
	nc_close(other);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- the suite --------------------------------------------------------------------- */

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw_state");
	TCase *tc = tcase_create("state");

	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, v40_expired_client);
	tcase_add_test(tc, v41_expired_client);
	tcase_add_test(tc, special_stateids_where_a_real_one_is_needed);
	tcase_add_test(tc, special_stateids_respect_deny_modes);
	tcase_add_test(tc, special_stateids_in_grace);
	tcase_add_test(tc, share_reservations_and_downgrade);
	tcase_add_test(tc, lock_modes_and_owners);
	tcase_add_test(tc, object_types_v40);
	tcase_add_test(tc, object_types_v41);
	tcase_add_test(tc, io_checked_against_the_callers_credential);
	tcase_add_test(tc, read_eof);
	tcase_add_test(tc, layout_striped_rw);
	tcase_add_test(tc, attributes_v40);
	tcase_add_test(tc, attributes_v41);
	tcase_add_test(tc, owners_by_name_v41);
	tcase_add_test(tc, owners_numeric_for_auth_sys_by_default_v40);
	tcase_add_test(tc, removed_while_open);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	log_init("test_nfs4_gw_state");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
