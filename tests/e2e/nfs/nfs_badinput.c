/*
 * nfs_badinput.c - bad input to a running NFS gateway over real sockets:
 *
 *   nfs_badinput PORT
 *
 * a malformed file handle (NFS4ERR_BADHANDLE), a well-formed handle of
 * nothing (NFS4ERR_STALE), stateids from another server instance
 * (NFS4ERR_STALE_STATEID) and unknown to this one (NFS4ERR_BAD_STATEID),
 * an unknown operation (NFS4ERR_OP_ILLEGAL, result op OP_ILLEGAL) in 4.0
 * and in 4.1, garbage bytes on another connection; after each, the
 * gateway must keep serving (the same and new connections).  Then NFSv4.0
 * owner sequencing: a retransmitted OPEN (same xid) gets the same answer
 * (from the duplicate reply cache, or the owner's saved reply once the
 * implied ACK evicted the DRC entry), the same seqid under a new xid is
 * answered from the owner's saved reply (same stateid), a seqid from the
 * future is NFS4ERR_BAD_SEQID once the owner is confirmed.
 * Exit 0 when every answer is the RFC's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/nfs4_wire.h"

enum { OP_ACCESS = 3, OP_CLOSE = 4, OP_GETFH = 10, OP_LOOKUP = 15, OP_OPEN = 18, OP_PUTFH = 22, OP_PUTROOTFH = 24,
       OP_READ = 25, OP_REMOVE = 28, OP_EXCHANGE_ID = 42, OP_CREATE_SESSION = 43, OP_SEQUENCE = 53,
       OP_RECLAIM_COMPLETE = 58, OP_ILLEGAL = 10044 };
enum { OP_OPEN_CONFIRM = 20, OP_SETCLIENTID = 35, OP_SETCLIENTID_CONFIRM = 36 };
enum { NFS4ERR_BAD_SEQID = 10026 };
enum { NFS4ERR_STALE = 70, NFS4ERR_BADHANDLE = 10001, NFS4ERR_STALE_STATEID = 10023,
       NFS4ERR_BAD_STATEID = 10025, NFS4ERR_OP_ILLEGAL = 10044, NFS4ERR_GRACE = 10013 };

static int port, fd, failures;
static struct wbuf wb;
static uint32_t xid = 100;
static uint8_t sessionid[16];
static uint32_t slot_seq = 1;
static uint64_t clientid;

#define EXPECT(c, ...)                                              \
	do {                                                        \
		if (!(c)) {                                         \
			fprintf(stderr, "FAIL %d: ", __LINE__);     \
			fprintf(stderr, __VA_ARGS__);               \
			fprintf(stderr, "\n");                      \
			failures++;                                 \
		}                                                   \
	} while (0)

static uint8_t *last_rec;

/* send wb on @sock, parse the reply header; r at the first result */
static int call(int sock, struct rbuf *r, uint32_t *nres)
{
	size_t len = 0;
	uint32_t rx;
	int as, st;

	w_finish(&wb);
	free(last_rec);
	last_rec = NULL;
	if (io_write_all(sock, wb.p, wb.len) || rpc_recv(sock, &last_rec, &len)) {
		fprintf(stderr, "FAIL: connection lost\n");
		exit(1);
	}
	st = rpc_reply(last_rec, len, &rx, r, &as, nres);
	if (st < 0) {
		fprintf(stderr, "FAIL: RPC-level error %d\n", as);
		exit(1);
	}
	return st;
}

static void sequence(void)
{
	wop(&wb, OP_SEQUENCE);
	wfixed(&wb, sessionid, 16);
	w32(&wb, slot_seq++);
	w32(&wb, 0);
	w32(&wb, 0);
	w32(&wb, 0);
}

static void skip_seq_res(struct rbuf *r)
{
	uint32_t op = r32(r), st = r32(r);

	if (op != OP_SEQUENCE || st) {
		fprintf(stderr, "FAIL: SEQUENCE answered %u/%u\n", op, st);
		exit(1);
	}
	rfixed(r, 16 + 20);
}

static void session(void)
{
	struct rbuf r;
	uint32_t n, seq;
	char owner[64];

	snprintf(owner, sizeof(owner), "badinput-%d-%ld", getpid(), (long)time(NULL));
	w_compound(&wb, xid++, 1);
	wop(&wb, OP_EXCHANGE_ID);
	wfixed(&wb, "badinput", 8);
	wstr(&wb, owner);
	w32(&wb, 0x00010000);
	w32(&wb, 0);
	w32(&wb, 0);
	if (call(fd, &r, &n) || r32(&r) != OP_EXCHANGE_ID || r32(&r)) {
		fprintf(stderr, "FAIL: EXCHANGE_ID\n");
		exit(1);
	}
	clientid = r64(&r);
	seq = r32(&r);
	w_compound(&wb, xid++, 1);
	wop(&wb, OP_CREATE_SESSION);
	w64(&wb, clientid);
	w32(&wb, seq);
	w32(&wb, 0);
	for (int ch = 0; ch < 2; ch++) {
		w32(&wb, 0);
		w32(&wb, 1 << 20);
		w32(&wb, 1 << 20);
		w32(&wb, 64 << 10);
		w32(&wb, 16);
		w32(&wb, 4);
		w32(&wb, 0);
	}
	w32(&wb, 0x40000000);
	w32(&wb, 1);
	w32(&wb, 0);
	if (call(fd, &r, &n) || r32(&r) != OP_CREATE_SESSION || r32(&r)) {
		fprintf(stderr, "FAIL: CREATE_SESSION\n");
		exit(1);
	}
	memcpy(sessionid, rfixed(&r, 16), 16);
	w_compound(&wb, xid++, 1);
	sequence();
	wop(&wb, OP_RECLAIM_COMPLETE);
	w32(&wb, 0);
	call(fd, &r, &n);
}

/* PUTROOTFH + ACCESS works: the gateway still serves @sock */
static void still_serving(int sock, int minor, const char *after)
{
	struct rbuf r;
	uint32_t n;
	int st;

	w_compound(&wb, xid++, (uint32_t)minor);
	if (minor)
		sequence();
	wop(&wb, OP_PUTROOTFH);
	wop(&wb, OP_ACCESS);
	w32(&wb, 1);
	st = call(sock, &r, &n);
	EXPECT(st == 0, "after %s: PUTROOTFH+ACCESS answered %d", after, st);
}

int main(int argc, char **argv)
{
	struct rbuf r;
	uint32_t n, op, st;
	uint8_t sid[16], fh[128];
	uint32_t fhlen;
	const uint8_t *p;

	if (argc != 2) {
		fprintf(stderr, "usage: nfs_badinput PORT\n");
		return 2;
	}
	port = atoi(argv[1]);
	fd = nfs_connect(port);
	if (fd < 0) {
		fprintf(stderr, "cannot connect to 127.0.0.1:%d\n", port);
		return 1;
	}

	/* 1. a malformed file handle */
	w_compound(&wb, xid++, 0);
	wop(&wb, OP_PUTFH);
	wopaque(&wb, "garbage!!", 9);
	wop(&wb, OP_ACCESS);
	w32(&wb, 1);
	st = (uint32_t)call(fd, &r, &n);
	op = r32(&r);
	EXPECT(st == NFS4ERR_BADHANDLE && n == 1 && op == OP_PUTFH, "garbage PUTFH: status %u, %u results", st, n);
	still_serving(fd, 0, "a malformed handle");

	/* 2. a well-formed handle of nothing: STALE */
	{
		uint8_t h[32] = { 'L', 'G', 1, 2, 0, 1, 0, 0 };

		h[15] = 1;                   /* fsid 1 (export 1) */
		memset(h + 16, 0x7e, 8);     /* an inode that never existed */
		h[31] = 1;
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_PUTFH);
		wopaque(&wb, h, 32);
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == NFS4ERR_STALE, "PUTFH of a missing inode: %u (want NFS4ERR_STALE)", st);
	}

	/* 3. an unknown operation, 4.0 */
	w_compound(&wb, xid++, 0);
	wop(&wb, OP_PUTROOTFH);
	wop(&wb, 9999);
	st = (uint32_t)call(fd, &r, &n);
	r32(&r);
	r32(&r);
	op = r32(&r);
	EXPECT(st == NFS4ERR_OP_ILLEGAL && n == 2 && op == OP_ILLEGAL, "unknown op (4.0): %u, %u results, op %u", st,
	       n, op);
	still_serving(fd, 0, "an unknown op");

	/* 4.1 from here on */
	session();
	w_compound(&wb, xid++, 1);
	sequence();
	wop(&wb, 77);
	st = (uint32_t)call(fd, &r, &n);
	skip_seq_res(&r);
	op = r32(&r);
	EXPECT(st == NFS4ERR_OP_ILLEGAL && op == OP_ILLEGAL, "unknown op (4.1): %u, op %u", st, op);

	/* 5. stale and unknown stateids on a real open file */
	for (int tries = 0;; tries++) {
		w_compound(&wb, xid++, 1);
		sequence();
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_OPEN);
		w32(&wb, 0);
		w32(&wb, 3);
		w32(&wb, 0);
		w64(&wb, clientid);
		wstr(&wb, "badinput-owner");
		w32(&wb, 1);             /* CREATE */
		w32(&wb, 0);             /* UNCHECKED */
		w32(&wb, 0);             /* empty bitmap */
		w32(&wb, 0);             /* no values */
		w32(&wb, 0);             /* CLAIM_NULL */
		wstr(&wb, "badinput.file");
		wop(&wb, OP_GETFH);
		st = (uint32_t)call(fd, &r, &n);
		if (st != NFS4ERR_GRACE || tries > 40)
			break;
		usleep(500000);
	}
	EXPECT(st == 0, "OPEN badinput.file: %u", st);
	if (st == 0) {
		skip_seq_res(&r);
		r32(&r);
		r32(&r);                     /* PUTROOTFH */
		r32(&r);
		r32(&r);                     /* OPEN */
		memcpy(sid, rfixed(&r, 16), 16);
		r32(&r);
		r64(&r);
		r64(&r);
		r32(&r);
		rbitmap_skip(&r);
		r32(&r);
		r32(&r);
		r32(&r);                     /* GETFH */
		p = ropaque(&r, &fhlen);
		EXPECT(!r.err && fhlen <= sizeof(fh), "GETFH reply");
		if (r.err || fhlen > sizeof(fh))
			goto out;
		memcpy(fh, p, fhlen);

		for (int k = 0; k < 2; k++) {
			uint8_t bad[16];

			memcpy(bad, sid, 16);
			if (k == 0)
				bad[4] ^= 0xff;      /* boot epoch: another server instance */
			else
				bad[15] ^= 0x5a;     /* an id this instance never gave out */
			w_compound(&wb, xid++, 1);
			sequence();
			wop(&wb, OP_PUTFH);
			wopaque(&wb, fh, fhlen);
			wop(&wb, OP_READ);
			wfixed(&wb, bad, 16);
			w64(&wb, 0);
			w32(&wb, 100);
			st = (uint32_t)call(fd, &r, &n);
			EXPECT(st == (k == 0 ? NFS4ERR_STALE_STATEID : NFS4ERR_BAD_STATEID), "READ with a %s stateid: %u",
			       k == 0 ? "stale" : "unknown", st);
		}
		/* the real one still works */
		w_compound(&wb, xid++, 1);
		sequence();
		wop(&wb, OP_PUTFH);
		wopaque(&wb, fh, fhlen);
		wop(&wb, OP_CLOSE);
		w32(&wb, 0);
		wfixed(&wb, sid, 16);
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == 0, "CLOSE with the good stateid: %u", st);
		w_compound(&wb, xid++, 1);
		sequence();
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_REMOVE);
		wstr(&wb, "badinput.file");
		call(fd, &r, &n);
	}

	/* 6. garbage on another connection; this one and a new one keep working */
	{
		int g = nfs_connect(port);
		uint8_t junk[4096];

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 131 + 7);
		junk[0] = 0x80;              /* a plausible record mark of junk */
		junk[1] = 0;
		junk[2] = 0x0f;
		junk[3] = 0xfc;
		if (g >= 0) {
			io_write_all(g, junk, sizeof(junk));
			usleep(100000);
			close(g);
		}
		still_serving(fd, 1, "garbage on another connection");
		g = nfs_connect(port);
		EXPECT(g >= 0, "a new connection after the garbage");
		if (g >= 0) {
			still_serving(g, 0, "garbage (new connection)");
			close(g);
		}
	}
	/* 7. NFSv4.0 owner sequencing and replays */
	{
		uint8_t verf[8], sid1[16], sid2[16], req[1024];
		size_t reqlen;
		uint64_t cid;
		uint32_t oseq = 10, sx;
		uint8_t *rec1 = NULL, *rec2 = NULL;
		size_t l1 = 0, l2 = 0;
		int as;
		char id[64];

		snprintf(id, sizeof(id), "badinput40-%d-%ld", getpid(), (long)time(NULL));
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_SETCLIENTID);
		wfixed(&wb, "badin40v", 8);
		wstr(&wb, id);
		w32(&wb, 0x40000000);
		wstr(&wb, "tcp");
		wstr(&wb, "127.0.0.1.0.0");
		w32(&wb, 1);
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == 0, "SETCLIENTID: %u", st);
		r32(&r);
		r32(&r);
		cid = r64(&r);
		memcpy(verf, rfixed(&r, 8), 8);
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_SETCLIENTID_CONFIRM);
		w64(&wb, cid);
		wfixed(&wb, verf, 8);
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == 0, "SETCLIENTID_CONFIRM: %u", st);

		/* OPEN seqid 10, then the very same record again (same xid) */
		for (int tries = 0;; tries++) {
			w_compound(&wb, xid++, 0);
			wop(&wb, OP_PUTROOTFH);
			wop(&wb, OP_OPEN);
			w32(&wb, oseq);
			w32(&wb, 3);
			w32(&wb, 0);
			w64(&wb, cid);
			wstr(&wb, "badinput40-owner");
			w32(&wb, 1);
			w32(&wb, 0);
			w32(&wb, 0);
			w32(&wb, 0);
			w32(&wb, 0);
			wstr(&wb, "badinput40.file");
			st = (uint32_t)call(fd, &r, &n);
			if (st != NFS4ERR_GRACE || tries > 40)
				break;
			oseq++;                  /* GRACE advances the owner's seqid */
			usleep(500000);
		}
		EXPECT(st == 0, "4.0 OPEN: %u", st);
		r32(&r);
		r32(&r);
		r32(&r);
		r32(&r);
		memcpy(sid1, rfixed(&r, 16), 16);
		reqlen = wb.len < sizeof(req) ? wb.len : sizeof(req);
		memcpy(req, wb.p, reqlen);
		io_write_all(fd, req, reqlen);      /* a retransmission: same xid, same bytes (DRC or saved reply) */
		rpc_recv(fd, &rec1, &l1);
		EXPECT(l1 >= 4 && !memcmp(rec1, req + 4, 4), "the retransmission's reply has its xid");
		if (l1 && rpc_reply(rec1, l1, &sx, &r, &as, &n) == 0) {
			r32(&r);
			r32(&r);
			r32(&r);
			r32(&r);
			EXPECT(!memcmp(rfixed(&r, 16), sid1, 16), "retransmitted OPEN: a different stateid");
		} else {
			EXPECT(0, "retransmitted OPEN failed");
		}
		/* the same seqid under a new xid: the owner's saved reply */
		memcpy(req + 4, &(uint32_t){ htonl(xid++) }, 4);
		io_write_all(fd, req, reqlen);
		rpc_recv(fd, &rec2, &l2);
		if (l2 && rpc_reply(rec2, l2, &sx, &r, &as, &n) == 0) {
			r32(&r);
			r32(&r);
			r32(&r);
			r32(&r);
			memcpy(sid2, rfixed(&r, 16), 16);
			EXPECT(!memcmp(sid2, sid1, 16), "OPEN replayed by seqid: a different stateid");
		} else {
			EXPECT(0, "OPEN replayed by seqid failed");
		}
		free(rec1);
		free(rec2);
		/* confirm the owner (RFC 7530 16.18: an unconfirmed owner's OPEN out
		 * of sequence would restart it instead) */
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_LOOKUP);
		wstr(&wb, "badinput40.file");
		wop(&wb, OP_OPEN_CONFIRM);
		wfixed(&wb, sid1, 16);
		w32(&wb, ++oseq);
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == 0, "OPEN_CONFIRM: %u", st);
		/* a seqid from the future (nobody sends the ones in between): BAD_SEQID */
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_OPEN);
		w32(&wb, oseq + 5);
		w32(&wb, 1);
		w32(&wb, 0);
		w64(&wb, cid);
		wstr(&wb, "badinput40-owner");
		w32(&wb, 0);
		w32(&wb, 0);
		wstr(&wb, "badinput40.file");
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == NFS4ERR_BAD_SEQID, "OPEN with a seqid from the future: %u", st);
		/* and the next one in order still works: confirm, close, remove */
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_OPEN);
		w32(&wb, ++oseq);
		w32(&wb, 1);
		w32(&wb, 0);
		w64(&wb, cid);
		wstr(&wb, "badinput40-owner");
		w32(&wb, 0);
		w32(&wb, 0);
		wstr(&wb, "badinput40.file");
		st = (uint32_t)call(fd, &r, &n);
		EXPECT(st == 0, "OPEN with the next seqid after the bad one: %u", st);
		still_serving(fd, 0, "the 4.0 sequencing checks");
		w_compound(&wb, xid++, 0);
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_REMOVE);
		wstr(&wb, "badinput40.file");
		call(fd, &r, &n);
	}
out:
	close(fd);
	free(last_rec);
	if (failures) {
		fprintf(stderr, "nfs_badinput: %d failures\n", failures);
		return 1;
	}
	printf("nfs_badinput: ok\n");
	return 0;
}
