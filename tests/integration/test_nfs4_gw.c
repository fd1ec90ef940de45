/*
 * test_nfs4_gw.c - NFSv4.0 and NFSv4.1 conformance of the gateway, over
 * real sockets, against a real filesystem: a loligo-mds started from the
 * build tree (one per test case, by an unchecked fixture in the runner,
 * which kills it and removes the directory even when a test fails), and in
 * each forked test a real client library mounted on it with the gateway
 * serving it on an ephemeral loopback port (gw_start, as loligo-fuse does).
 * The requests are raw COMPOUNDs (nfs4_client.h), so every answer the RFCs
 * prescribe can be asked for and checked byte by byte.
 *
 * One test per rule (RFC 7530 / RFC 8881 section in its comment); each
 * works in a directory of its own.
 */
#include <pthread.h>
#include <time.h>

#include "nfs_gw/nfs4/ops_int.h"
#include "nfs4gw_fixture.h"

/* The bytes of result @idx (op, status, body) of a reply, for comparing two replies. */
struct rbytes {
	const uint8_t *p;
	size_t len;
};

static struct rbytes result_bytes(const struct nrep *r0, uint32_t idx, uint32_t op)
{
	struct nrep r = *r0;
	struct rbytes b = { 0 };

	/* walk from the start of the results: the test knows each op's body
	 * shape only for the ops used here, so skip by op */
	for (uint32_t i = 0; i <= idx; i++) {
		const uint8_t *start = r.d.p;
		uint32_t rop, st;

		ck_assert_int_eq(xdr_get_u32(&r.d, &rop), 0);
		ck_assert_int_eq(xdr_get_u32(&r.d, &st), 0);
		switch (rop) {
		case OP_PUTFH:
		case OP_PUTROOTFH:
			break;
		case OP_CLOSE:
		case OP_LOCKU:
		case OP_OPEN_DOWNGRADE:
		case OP_OPEN_CONFIRM:
			if (!st)
				xdr_skip(&r.d, 16);
			break;
		default:
			ck_abort_msg("result_bytes: op %u", rop);
		}
		if (i == idx) {
			ck_assert_uint_eq(rop, op);
			b.p = start;
			b.len = (size_t)(r.d.p - start);
		}
	}
	return b;
}

/* ---- 8.3: a retransmitted CLOSE / LOCKU / OPEN_DOWNGRADE gets its saved reply --- */

/*
 * RFC 7530 9.10.1 and 9.1.8: a retransmission of a seqid-bearing request
 * gets the saved reply even when the request freed the stateid it names
 * (CLOSE), or the stateid was freed since (a LOCKU whose lock stateid the
 * following CLOSE released).  The replay information lives until the
 * owner's next seqid-bearing request.  Both paths: the same xid on the same
 * connection (the DRC) and a new xid, or a new connection, with the same
 * seqid (the owner's saved reply).
 */
START_TEST(v40_close_locku_downgrade_replay)
{
	struct nc *n, *n2;
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid, lsid, sid, got;
	struct ncc c, keep_close, keep_locku;
	struct nrep r, r2;
	struct rbytes b1, b2;
	uint32_t oseq = 1;

	gw_up();
	n = nc_connect(port, 0);
	nc_setclientid(n, "replay-client", 1);
	test_dir(n, "replay", &d);
	make_file("f", "0123456789", 0644);
	/* READ, then WRITE by the same owner: one stateid, both modes opened */
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "owner", NC_NOCREATE, &oseq, &osid, &fh), NFS4_OK);
	ck_assert_uint_eq(nc_open(n, &d, "f", 2, 0, "owner", NC_NOCREATE, &oseq, &osid, &fh), NFS4_OK);

	/* OPEN_DOWNGRADE to READ, then its retransmissions */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_open_downgrade(&c, &osid, oseq, 1, 0);
	ncc_send(&c, n->fd, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ncc_send(&c, n->fd, &r2);                          /* same xid: the DRC */
	ck_assert_uint_eq(r.len, r2.len);
	ck_assert(memcmp(r.buf, r2.buf, r.len) == 0);
	rep_free(&r2);
	ncc_free(&c);
	ncc_begin(&c, n);                                  /* new xid, same seqid: the owner */
	enc_putfh(&c, &fh);
	enc_open_downgrade(&c, &osid, oseq, 1, 0);
	ncc_call(&c, &r2);
	b1 = result_bytes(&r, 1, OP_OPEN_DOWNGRADE);
	b2 = result_bytes(&r2, 1, OP_OPEN_DOWNGRADE);
	ck_assert_uint_eq(b1.len, b2.len);
	ck_assert(memcmp(b1.p, b2.p, b1.len) == 0);
	rep_next(&r, OP_PUTFH);
	rep_next(&r, OP_OPEN_DOWNGRADE);
	rep_stateid(&r, &osid);
	rep_free(&r);
	rep_free(&r2);
	oseq++;

	/* a read lock of a new lock-owner, and LOCKU (kept for retransmission) */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_lock_new(&c, NC_READ_LT, 0, 5, oseq++, &osid, 1, "lockowner");
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_LOCK), NFS4_OK);
	rep_stateid(&r, &lsid);
	rep_free(&r);
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_locku(&c, NC_READ_LT, 2, &lsid, 0, 5);
	keep_locku = c;
	ncc_send(&keep_locku, n->fd, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);

	/* CLOSE releases the open and the (now empty) lock stateid */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_close(&c, oseq, &osid);
	keep_close = c;
	ncc_send(&keep_close, n->fd, &r2);
	ck_assert_uint_eq(r2.status, NFS4_OK);

	/* CLOSE again, same xid, same connection: the DRC's copy */
	{
		struct nrep r3;

		ncc_send(&keep_close, n->fd, &r3);
		ck_assert_uint_eq(r3.len, r2.len);
		ck_assert(memcmp(r3.buf, r2.buf, r2.len) == 0);
		rep_free(&r3);
	}
	/* CLOSE again, new xid, same seqid: the owner's saved reply */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_close(&c, oseq, &osid);
	{
		struct nrep r3;

		ncc_call(&c, &r3);
		ck_assert_msg(r3.status == NFS4_OK, "CLOSE retransmitted with a new xid: %u", r3.status);
		b1 = result_bytes(&r2, 1, OP_CLOSE);
		b2 = result_bytes(&r3, 1, OP_CLOSE);
		ck_assert_uint_eq(b1.len, b2.len);
		ck_assert(memcmp(b1.p, b2.p, b1.len) == 0);
		rep_free(&r3);
	}
	/* ... and the same xid on another connection (no DRC entry there) */
	n2 = nc_clone(n);
	{
		struct nrep r3;

		ncc_send(&keep_close, n2->fd, &r3);
		ck_assert_msg(r3.status == NFS4_OK, "CLOSE retransmitted on a new connection: %u", r3.status);
		b1 = result_bytes(&r2, 1, OP_CLOSE);
		b2 = result_bytes(&r3, 1, OP_CLOSE);
		ck_assert(b1.len == b2.len && memcmp(b1.p, b2.p, b1.len) == 0);
		rep_free(&r3);
	}
	rep_free(&r2);                                     /* the CLOSE's reply */
	/* the LOCKU, retransmitted after the CLOSE freed its lock stateid */
	ncc_send(&keep_locku, n2->fd, &r2);
	ck_assert_msg(r2.status == NFS4_OK, "LOCKU retransmitted after CLOSE: %u", r2.status);
	b1 = result_bytes(&r, 1, OP_LOCKU);
	b2 = result_bytes(&r2, 1, OP_LOCKU);
	ck_assert(b1.len == b2.len && memcmp(b1.p, b2.p, b1.len) == 0);
	rep_free(&r2);
	rep_free(&r);
	ncc_free(&keep_locku);

	/* the stateids themselves are gone: a READ with the closed one fails */
	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	sid = osid;
	sid.seqid++;
	enc_read(&c, &sid, 0, 4);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_BAD_STATEID);

	/* the same seqid for another operation is no retransmission (RFC 7530 9.1.9) */
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "owner", NC_NOCREATE, &oseq, &got, &fh), NFS4ERR_BAD_SEQID);
	/* the owner's next seqid request ends the closed stateid's replay
	 * window: a CLOSE of it is no longer a retransmission */
	oseq++;
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "owner", NC_NOCREATE, &oseq, &got, &fh), NFS4_OK);
	{
		struct nrep r3;

		ncc_send(&keep_close, n2->fd, &r3);
		ck_assert_uint_eq(r3.status, NFS4ERR_BAD_STATEID);
		rep_free(&r3);
	}
	ncc_free(&keep_close);
	nc_close(n2);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- 8.4: NFSv4.1 never waits on owner seqids ------------------------------------- */

/*
 * The test hook sees every OPEN, CLOSE, LOCK, LOCKU and OPEN_DOWNGRADE as it
 * passes its owner's seqid gate (4.0), or the point where 4.0 would have
 * one (4.1).  In barrier mode, every one of them waits there until all
 * @barrier_n have arrived: 16 requests of one owner can only all get there
 * if none of them waits for another.
 */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cv = PTHREAD_COND_INITIALIZER;
static unsigned int hook_arrived, barrier_n, hook_max_inside, hook_inside;
static bool barrier_broken;
static struct {
	const void *owner;
	uint32_t seqid;
} hook_log[64];
static unsigned int hook_nlog;

static void seq_hook(const struct nfs4_compound *cs, uint32_t op, const void *owner, uint32_t seqid)
{
	struct timespec dl;

	(void)cs;
	(void)op;
	pthread_mutex_lock(&hook_lock);
	if (hook_nlog < 64) {
		hook_log[hook_nlog].owner = owner;
		hook_log[hook_nlog].seqid = seqid;
		hook_nlog++;
	}
	hook_arrived++;
	hook_inside++;
	if (hook_inside > hook_max_inside)
		hook_max_inside = hook_inside;
	if (barrier_n) {
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 20;
		pthread_cond_broadcast(&hook_cv);
		while (hook_arrived < barrier_n && !barrier_broken)
			if (pthread_cond_timedwait(&hook_cv, &hook_lock, &dl) == ETIMEDOUT)
				barrier_broken = true;
		pthread_cond_broadcast(&hook_cv);
	}
	hook_inside--;
	pthread_mutex_unlock(&hook_lock);
}

static void hook_reset(unsigned int barrier)
{
	pthread_mutex_lock(&hook_lock);
	hook_arrived = hook_inside = hook_max_inside = hook_nlog = 0;
	barrier_n = barrier;
	barrier_broken = false;
	pthread_mutex_unlock(&hook_lock);
}

/* The 16 requests: 4 OPENs, 4 CLOSEs, 3 LOCKs of a new lock-owner, 2 LOCKUs, 3 OPEN_DOWNGRADEs. */
struct owner_ops {
	struct nfs4_fh fh[16];
	struct nfs4_stateid osid[16], lsid[16];
	uint32_t oseq, lseq;                 /* 4.0: next seqids */
};

static void owner_ops_setup(struct nc *n, const struct nfs4_fh *d, struct owner_ops *o, const char *owner,
			    const char *lowner)
{
	char name[16];
	struct ncc c;
	struct nrep r;

	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		make_file(name, "data", 0644);
		if (i < 4) {
			nc_lookup_path(n, tdir, &o->fh[i]);   /* OPEN: the directory */
			continue;
		}
		ck_assert_uint_eq(nc_open(n, d, name, i >= 13 ? 1 : 3, 0, owner, NC_NOCREATE, &o->oseq, &o->osid[i],
					  &o->fh[i]), NFS4_OK);
		if (i >= 13)     /* READ and WRITE opened: a downgrade to READ is legal */
			ck_assert_uint_eq(nc_open(n, d, name, 2, 0, owner, NC_NOCREATE, &o->oseq, &o->osid[i],
						  &o->fh[i]), NFS4_OK);
		if (i == 11 || i == 12) {
			ncc_begin(&c, n);
			enc_putfh(&c, &o->fh[i]);
			/* 4.0: the lock-owner's sequence starts with the first
			 * LOCK; the second one (another file) is its next seqid */
			enc_lock_new(&c, NC_WRITE_LT, 0, 10, o->oseq++, &o->osid[i], o->lseq++, lowner);
			ncc_call(&c, &r);
			ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
			ck_assert_msg(r.status == NFS4_OK, "LOCK setup: %u", r.status);
			rep_next(&r, OP_LOCK);
			rep_stateid(&r, &o->lsid[i]);
			rep_free(&r);
		}
	}
}

/* Encode request @i of the 16 with open-owner seqid @os and lock-owner seqid @ls. */
static void owner_op(struct ncc *c, struct owner_ops *o, int i, const char *owner, const char *lowner, uint32_t os,
		     uint32_t ls)
{
	char name[16];

	snprintf(name, sizeof(name), "f%d", i);
	enc_putfh(c, &o->fh[i]);
	if (i < 4)
		enc_open(c, os, 1, 0, owner, NC_NOCREATE, name);
	else if (i < 8)
		enc_close(c, os, &o->osid[i]);
	else if (i < 11)
		enc_lock_new(c, NC_WRITE_LT, 0, 10, os, &o->osid[i], ls, lowner);
	else if (i < 13)
		enc_locku(c, NC_WRITE_LT, ls, &o->lsid[i], 0, 10);
	else
		enc_open_downgrade(c, &o->osid[i], os, 1, 0);
}

static uint32_t owner_op_num(int i)
{
	return i < 4 ? OP_OPEN : i < 8 ? OP_CLOSE : i < 11 ? OP_LOCK : i < 13 ? OP_LOCKU : OP_OPEN_DOWNGRADE;
}

/* Send the 16 requests back to back on @n (slots 0..15 for 4.1), then read the 16 replies. */
static void owner_ops_fire(struct nc *n, struct owner_ops *o, const char *owner, const char *lowner,
			   const uint32_t os[16], const uint32_t ls[16], uint32_t status[16])
{
	struct ncc c[16];
	uint32_t xids[16];

	for (int i = 0; i < 16; i++) {
		n->slot = (uint32_t)i;
		ncc_begin(&c[i], n);
		owner_op(&c[i], o, i, owner, lowner, os[i], ls[i]);
		xids[i] = c[i].xid;
		ck_assert_int_eq(trpc_send_record(n->fd, c[i].e.buf, c[i].e.len, 0), 0);
	}
	n->slot = 0;
	for (int k = 0; k < 16; k++) {
		struct nrep r;
		int i;

		memset(&r, 0, sizeof(r));
		r.buf = trpc_recv_record(n->fd, &r.len, NULL);
		ck_assert_msg(r.buf != NULL, "reply %d of 16 missing", k);
		rep_parse(&r, n->minor >= 1);
		for (i = 0; i < 16 && xids[i] != r.xid; i++)
			;
		ck_assert_int_lt(i, 16);
		ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
		status[i] = rep_next(&r, owner_op_num(i));
		rep_free(&r);
	}
	for (int i = 0; i < 16; i++)
		ncc_free(&c[i]);
}

/*
 * RFC 8881 8.13, 18.16.3, 18.2.3...: minor version 1 ignores owner seqids.
 * 16 requests of one open-owner and one lock-owner, each on a slot of its
 * own, with seqids that are wrong for 4.0 (descending garbage): all
 * succeed, all 16 are inside the gateway at the same time (none queues
 * behind another), and the gateway's seqid-wait counters in `perf dump`
 * stay 0.  The same 16 over 4.0, with correct seqids sent in reverse
 * order, are run in seqid order: the counters move.
 */
START_TEST(v41_owner_ops_never_wait)
{
	struct nc *n;
	struct nfs4_fh d;
	struct owner_ops o;
	uint32_t os[16], ls[16], status[16];

	gw_up();
	memset(&o, 0, sizeof(o));
	n = nc_connect(port, 1);
	nc_session(n, "concurrent-41", 1);
	test_dir(n, "conc41", &d);
	owner_ops_setup(n, &d, &o, "oowner", "lowner");
	ck_assert_int_eq(perf_counter("nfs4", "seqid_waits"), 0);
	ck_assert_int_eq(perf_counter("nfs4", "seqid_wait_delays"), 0);

	for (int i = 0; i < 16; i++) {
		os[i] = 0xfffffff0u - (uint32_t)i * 7;   /* out of order, and nowhere near */
		ls[i] = 16 - (uint32_t)i;
	}
	nfs4ops_seq_hook = seq_hook;
	hook_reset(16);
	owner_ops_fire(n, &o, "oowner", "lowner", os, ls, status);
	nfs4ops_seq_hook = NULL;
	for (int i = 0; i < 16; i++)
		ck_assert_msg(status[i] == NFS4_OK, "request %d (op %u): %u", i, owner_op_num(i), status[i]);
	ck_assert_msg(!barrier_broken, "only %u of 16 requests were in the gateway at once", hook_max_inside);
	ck_assert_uint_eq(hook_max_inside, 16);
	ck_assert_int_eq(perf_counter("nfs4", "seqid_waits"), 0);
	ck_assert_int_eq(perf_counter("nfs4", "seqid_wait_delays"), 0);
	nc_close(n);
	gw_down();
}
END_TEST

START_TEST(v40_owner_ops_ordered)
{
	struct nc *n;
	struct nfs4_fh d;
	struct owner_ops o;
	uint32_t os[16], ls[16], status[16], base_o, base_l;
	int k;

	gw_up();
	memset(&o, 0, sizeof(o));
	o.oseq = 1;
	o.lseq = 0;
	n = nc_connect(port, 0);
	nc_setclientid(n, "ordered-40", 1);
	test_dir(n, "conc40", &d);
	owner_ops_setup(n, &d, &o, "oowner", "lowner");
	/* Correct seqids, sent highest first: the open-owner's requests
	 * (OPEN, CLOSE, LOCK's open_seqid, OPEN_DOWNGRADE) get consecutive
	 * seqids in reverse index order, and so do the lock-owner's (the
	 * LOCKs' lock_seqid, the LOCKUs) */
	base_o = o.oseq;
	base_l = o.lseq;
	memset(ls, 0, sizeof(ls));
	memset(os, 0, sizeof(os));
	k = 0;
	for (int i = 15; i >= 0; i--)
		if (i != 11 && i != 12)
			os[i] = base_o + (uint32_t)k++;
	k = 0;
	for (int i = 12; i >= 8; i--)
		ls[i] = base_l + (uint32_t)k++;
	nfs4ops_seq_hook = seq_hook;
	hook_reset(0);
	/* the highest seqids first: they wait, or get DELAY when too many wait */
	owner_ops_fire(n, &o, "oowner", "lowner", os, ls, status);
	nfs4ops_seq_hook = NULL;
	/* BAD_SEQID only for a wait that ran out (2 s: a predecessor that
	 * never came, or a machine this loaded), which the gateway counts */
	int64_t timeouts = perf_counter("nfs4", "seqid_wait_timeouts");
	for (int i = 0; i < 16; i++)
		ck_assert_msg(status[i] == NFS4_OK || status[i] == NFS4ERR_DELAY ||
			      (status[i] == NFS4ERR_BAD_SEQID && timeouts > 0), "request %d (op %u): %u", i,
			      owner_op_num(i), status[i]);
	/* whatever ran, ran in its owner's seqid order */
	pthread_mutex_lock(&hook_lock);
	for (unsigned int a = 0; a < hook_nlog; a++)
		for (unsigned int b = a + 1; b < hook_nlog; b++)
			if (hook_log[a].owner == hook_log[b].owner)
				ck_assert_msg((int32_t)(hook_log[b].seqid - hook_log[a].seqid) > 0,
					      "seqid %u ran after %u", hook_log[b].seqid, hook_log[a].seqid);
	pthread_mutex_unlock(&hook_lock);
	ck_assert_int_gt(perf_counter("nfs4", "seqid_waits") + perf_counter("nfs4", "seqid_wait_delays"), 0);
	nc_close(n);
	gw_down();
}
END_TEST

/* ---- the suite --------------------------------------------------------------------- */

/*
 * A byte quota (loligo.quota.max_bytes, issue 22.2) reaches NFS clients as
 * NFS4ERR_DQUOT: a SETATTR of the size past it (refused by the MDS) and a
 * WRITE past it (refused by the client library under the gateway).
 */
START_TEST(v40_quota_dquot)
{
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid;
	struct lc_inode *qd;
	struct ncc c;
	uint32_t oseq = 1;

	gw_up();
	n = nc_connect(port, 0);
	nc_setclientid(n, "quota-client", 1);
	test_dir(n, "quota", &d);
	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &qd), 0);
	ck_assert_int_eq(lc_setxattr(lc, qd, "loligo.quota.max_bytes", "100000", 6, 0, &rootcr), 0);
	lc_put(lc, qd);
	ck_assert_uint_eq(nc_open(n, &d, "f", 2, 0, "owner", NC_CREATE, &oseq, &osid, &fh), NFS4_OK);

	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_setattr_size(&c, &osid, 200000);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_DQUOT);

	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_write(&c, &osid, 150000, 2 /* FILE_SYNC4 */, "past the quota", 14);
	ck_assert_uint_eq(ncc_status(&c), NFS4ERR_DQUOT);

	ncc_begin(&c, n);                                  /* below it: fine */
	enc_putfh(&c, &fh);
	enc_write(&c, &osid, 0, 2 /* FILE_SYNC4 */, "inside", 6);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	nc_close(n);
}
END_TEST

/*
 * A WRITE removes security.capability, whoever writes (root too, as
 * cap_inode_need_killpriv() on a local filesystem; knfsd's write goes
 * through file_remove_privs()); root's keeps the setuid bit.  No kernel
 * removes the capability before the gateway's write, as one does before
 * FUSE's.
 */
START_TEST(v40_write_kills_fcaps)
{
	static const uint8_t vcap[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x04 };
	struct lc_attr set = { .mode = 04755 }, a;
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid;
	struct lc_inode *td, *in;
	struct ncc c;
	uint32_t oseq = 1;

	gw_up();
	n = nc_connect(port, 0);
	nc_setclientid(n, "killpriv-client", 1);
	test_dir(n, "killpriv", &d);
	ck_assert_uint_eq(nc_open(n, &d, "f", 2, 0, "owner", NC_CREATE, &oseq, &osid, &fh), NFS4_OK);
	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &td), 0);
	ck_assert_int_eq(lc_lookup(lc, td, "f", &rootcr, NULL, &in), 0);
	lc_put(lc, td);
	ck_assert_int_eq(lc_setattr(lc, in, &set, LC_SET_MODE, &rootcr, NULL), 0);
	ck_assert_int_eq(lc_setxattr(lc, in, "security.capability", vcap, sizeof(vcap), 0, &rootcr), 0);

	ncc_begin(&c, n);
	enc_putfh(&c, &fh);
	enc_write(&c, &osid, 0, 2 /* FILE_SYNC4 */, "hello", 5);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	ck_assert_msg(lc_getxattr(lc, in, "security.capability", NULL, 0, &rootcr) == -ENODATA,
		      "security.capability kept after root's WRITE");
	ck_assert_int_eq(lc_getattr(lc, in, &rootcr, true, &a), 0);
	ck_assert_uint_eq(a.mode & 07777, 04755);
	lc_put(lc, in);
	nc_close(n);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw");
	TCase *tc = tcase_create("conformance");

	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, v40_close_locku_downgrade_replay);
	tcase_add_test(tc, v41_owner_ops_never_wait);
	tcase_add_test(tc, v40_owner_ops_ordered);
	tcase_add_test(tc, v40_quota_dquot);
	tcase_add_test(tc, v40_write_kills_fcaps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	log_init("test_nfs4_gw");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
