/*
 * nfs_seqid_bench - OPEN/CLOSE load from ONE open-owner over one
 * connection, to show what owner seqids cost.
 *
 *   nfs_seqid_bench --port P --minor 0|1 --inflight K [--seconds S]
 *                   [--owners M] [--tag NAME]
 *
 * K workers each loop OPEN (PUTROOTFH, OPEN name_k, GETFH) then CLOSE
 * (PUTFH, CLOSE) of their own file, all as the same open-owner.
 *
 * Minor version 1 ignores owner seqids: the K workers run in K session
 * slots at once, so throughput grows with K until the server saturates.
 * Minor version 0 orders an owner's OPEN/CLOSE by seqid, and a client
 * cannot send the next seqid before it knows how the previous request
 * ended (some errors do not advance it), so a correct client - this one,
 * like Linux's - has one request per owner on the wire: throughput stays
 * at one request per round trip however large K is.  --owners M spreads
 * the workers over M owners (the NFSv4.0 DRC load uses that).
 * --pipeline (4.0) sends an owner's seqids back to back anyway, as an
 * over-optimistic client would: the gateway must then put them in order
 * itself (a request that overtook its predecessor on the way to the
 * worker threads waits for it), and any misordering shows up as
 * NFS4ERR_BAD_SEQID, which ends the run with an error.
 *
 * Prints one line: minor, inflight, owners, ops (OPEN+CLOSE), seconds,
 * ops/s, mean latency.  Files are made (OPEN4_CREATE) at the export root
 * as "<tag>.<k>" and removed at the end.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/nfs4_wire.h"

enum { OP_CLOSE = 4, OP_GETFH = 10, OP_OPEN = 18, OP_OPEN_CONFIRM = 20, OP_PUTFH = 22, OP_PUTROOTFH = 24,
       OP_REMOVE = 28, OP_SETCLIENTID = 35, OP_SETCLIENTID_CONFIRM = 36, OP_EXCHANGE_ID = 42,
       OP_CREATE_SESSION = 43, OP_DESTROY_SESSION = 44, OP_SEQUENCE = 53, OP_RECLAIM_COMPLETE = 58 };
#define NFS4ERR_GRACE 10013
#define NFS4ERR_DELAY 10008
#define MAXW 256

struct worker {
	int phase;                       /* 0: OPEN next, 1: CLOSE next */
	uint32_t xid;
	bool busy;                       /* a request is on the wire */
	uint8_t sid[16];                 /* open stateid */
	uint8_t fh[128];
	uint32_t fhlen;
	uint32_t slot_seq;               /* 4.1 slot sequence id */
	uint64_t sent_ns;
	int owner;
};

static int fd, minor, inflight = 1, nowners = 1, seconds = 5;
static const char *tag = "seqid-bench";
static uint64_t clientid;
static uint8_t sessionid[16];
static uint32_t owner_seq[MAXW];         /* 4.0: last seqid sent per owner */
static bool pipeline;                    /* 4.0: send an owner's seqids without waiting (--pipeline) */
static bool loading;                     /* past the setup round */
static bool owner_busy[MAXW];
static bool owner_confirmed[MAXW];
static struct worker w[MAXW];
static uint32_t next_xid = 1;
static struct wbuf wb;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Noreturn void die(const char *m, int st)
{
	fprintf(stderr, "nfs_seqid_bench: %s (status %d)\n", m, st);
	exit(1);
}

static void w_sequence(int slot, uint32_t seq)
{
	wop(&wb, OP_SEQUENCE);
	wfixed(&wb, sessionid, 16);
	w32(&wb, seq);
	w32(&wb, (uint32_t)slot);
	w32(&wb, (uint32_t)(inflight > 0 ? inflight - 1 : 0));
	w32(&wb, 0);
}

static void w_owner(int o)
{
	char name[64];

	snprintf(name, sizeof(name), "%s-owner-%d", tag, o);
	w64(&wb, clientid);
	wstr(&wb, name);
}

static void skip_sequence(struct rbuf *r)
{
	rfixed(r, 16);
	r32(r);
	r32(r);
	r32(r);
	r32(r);
	r32(r);
}

/* send the compound in wb, wait for its reply (setup only: nothing else in flight) */
static int call_sync(struct rbuf *r, uint8_t **rec)
{
	size_t len = 0;
	uint32_t xid, nres;
	int as;

	w_finish(&wb);
	if (io_write_all(fd, wb.p, wb.len) || rpc_recv(fd, rec, &len))
		die("connection lost", 0);
	return rpc_reply(*rec, len, &xid, r, &as, &nres);
}

static uint32_t slot0_seq = 1;

/* the op-result header of the next result: returns its status */
static uint32_t res_op(struct rbuf *r, uint32_t want)
{
	uint32_t op = r32(r), st = r32(r);

	if (r->err || op != want)
		die("unexpected result", (int)op);
	return st;
}

static void setup_v41(void)
{
	struct rbuf r;
	uint8_t *rec;
	uint32_t seq, st;
	char owner[64];

	snprintf(owner, sizeof(owner), "%s-%d-%ld", tag, getpid(), (long)time(NULL));
	w_compound(&wb, next_xid++, 1);
	wop(&wb, OP_EXCHANGE_ID);
	wfixed(&wb, "benchver", 8);
	wstr(&wb, owner);
	w32(&wb, 0x00010000);            /* EXCHGID4_FLAG_USE_NON_PNFS */
	w32(&wb, 0);                     /* SP4_NONE */
	w32(&wb, 0);                     /* no impl id */
	st = (uint32_t)call_sync(&r, &rec);
	if (st || res_op(&r, OP_EXCHANGE_ID))
		die("EXCHANGE_ID", (int)st);
	clientid = r64(&r);
	seq = r32(&r);
	free(rec);

	w_compound(&wb, next_xid++, 1);
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
		w32(&wb, ch == 0 ? (uint32_t)(inflight + 1) : 1);
		w32(&wb, 0);
	}
	w32(&wb, 0x40000000);
	w32(&wb, 1);
	w32(&wb, 0);                     /* AUTH_NONE */
	st = (uint32_t)call_sync(&r, &rec);
	if (st || res_op(&r, OP_CREATE_SESSION))
		die("CREATE_SESSION", (int)st);
	memcpy(sessionid, rfixed(&r, 16), 16);
	r32(&r);
	r32(&r);
	{
		uint32_t maxreqs;

		r32(&r); r32(&r); r32(&r); r32(&r); r32(&r);
		maxreqs = r32(&r);
		if ((int)maxreqs < inflight + 1)
			die("the server grants fewer slots than --inflight", (int)maxreqs);
	}
	free(rec);

	w_compound(&wb, next_xid++, 1);
	w_sequence(inflight, slot0_seq++);   /* the spare slot is for setup */
	wop(&wb, OP_RECLAIM_COMPLETE);
	w32(&wb, 0);
	call_sync(&r, &rec);
	free(rec);
}

static void setup_v40(void)
{
	struct rbuf r;
	uint8_t *rec;
	uint8_t verf[8];
	char id[64];
	int st;

	snprintf(id, sizeof(id), "%s-%d-%ld", tag, getpid(), (long)time(NULL));
	w_compound(&wb, next_xid++, 0);
	wop(&wb, OP_SETCLIENTID);
	wfixed(&wb, "benchver", 8);
	wstr(&wb, id);
	w32(&wb, 0x40000000);
	wstr(&wb, "tcp");
	wstr(&wb, "127.0.0.1.0.0");
	w32(&wb, 1);
	st = call_sync(&r, &rec);
	if (st || res_op(&r, OP_SETCLIENTID))
		die("SETCLIENTID", st);
	clientid = r64(&r);
	memcpy(verf, rfixed(&r, 8), 8);
	free(rec);
	w_compound(&wb, next_xid++, 0);
	wop(&wb, OP_SETCLIENTID_CONFIRM);
	w64(&wb, clientid);
	wfixed(&wb, verf, 8);
	st = call_sync(&r, &rec);
	if (st)
		die("SETCLIENTID_CONFIRM", st);
	free(rec);
}

/* Build the next request of worker @k into wb (does not send). */
static void build(int k, bool create)
{
	struct worker *x = &w[k];
	char name[96];

	snprintf(name, sizeof(name), "%s.%d", tag, k);
	x->xid = next_xid++;
	w_compound(&wb, x->xid, (uint32_t)minor);
	if (minor == 1)
		w_sequence(k, x->slot_seq);
	if (x->phase == 0) {
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_OPEN);
		w32(&wb, minor == 0 ? ++owner_seq[x->owner] : 0);
		w32(&wb, 1);                 /* OPEN4_SHARE_ACCESS_READ */
		w32(&wb, 0);
		w_owner(x->owner);
		if (create) {
			w32(&wb, 1);         /* OPEN4_CREATE */
			w32(&wb, 0);         /* UNCHECKED4 */
			w32(&wb, 2);         /* bitmap: mode */
			w32(&wb, 0);
			w32(&wb, 1u << (33 - 32));
			w32(&wb, 4);
			w32(&wb, 0644);
		} else {
			w32(&wb, 0);         /* OPEN4_NOCREATE */
		}
		w32(&wb, 0);                 /* CLAIM_NULL */
		wstr(&wb, name);
		wop(&wb, OP_GETFH);
	} else if (x->phase == 2) {      /* 4.0 OPEN_CONFIRM */
		wop(&wb, OP_PUTFH);
		wopaque(&wb, x->fh, x->fhlen);
		wop(&wb, OP_OPEN_CONFIRM);
		wfixed(&wb, x->sid, 16);
		w32(&wb, ++owner_seq[x->owner]);
	} else {
		wop(&wb, OP_PUTFH);
		wopaque(&wb, x->fh, x->fhlen);
		wop(&wb, OP_CLOSE);
		w32(&wb, minor == 0 ? ++owner_seq[x->owner] : 0);
		wfixed(&wb, x->sid, 16);
	}
	w_finish(&wb);
}

static void send_req(int k, bool create)
{
	build(k, create);
	w[k].busy = true;
	w[k].sent_ns = now_ns();
	if (minor == 0)
		owner_busy[w[k].owner] = true;
	if (io_write_all(fd, wb.p, wb.len))
		die("send failed", 0);
}

/* Handle the reply for worker k. Return: 1 an op completed, 0 retry, dies on errors. */
static int handle(int k, struct rbuf *r, int cst)
{
	struct worker *x = &w[k];
	uint32_t st, n;
	const uint8_t *p;

	x->busy = false;
	if (minor == 1) {
		if (r32(r) != OP_SEQUENCE)
			die("no SEQUENCE result", cst);
		st = r32(r);
		if (st)
			die("SEQUENCE", (int)st);
		skip_sequence(r);
		x->slot_seq++;
	}
	if (cst == NFS4ERR_GRACE || cst == NFS4ERR_DELAY) {
		if (getenv("BENCH_DEBUG"))
			fprintf(stderr, "worker %d phase %d: status %d, retrying\n", k, x->phase, cst);
		usleep(200000);
		return 0;
	}
	if (cst)
		die(x->phase == 0 ? "OPEN" : x->phase == 2 ? "OPEN_CONFIRM" : "CLOSE", cst);
	if (x->phase == 0) {
		res_op(r, OP_PUTROOTFH);
		res_op(r, OP_OPEN);
		memcpy(x->sid, rfixed(r, 16), 16);
		r32(r);
		r64(r);
		r64(r);
		st = r32(r);                 /* rflags */
		rbitmap_skip(r);
		r32(r);                      /* delegation NONE */
		res_op(r, OP_GETFH);
		p = ropaque(r, &n);
		if (r->err || n > sizeof(x->fh))
			die("bad OPEN reply", 0);
		memcpy(x->fh, p, n);
		x->fhlen = n;
		if (minor == 0 && (st & 2) && !owner_confirmed[x->owner]) {
			x->phase = 2;
			return 0;
		}
		x->phase = 1;
		return 1;
	}
	if (x->phase == 2) {
		res_op(r, OP_PUTFH);
		res_op(r, OP_OPEN_CONFIRM);
		memcpy(x->sid, rfixed(r, 16), 16);
		owner_confirmed[x->owner] = true;
		x->phase = 1;
		return 1;
	}
	x->phase = 0;
	return 1;
}

/* 4.0: start whichever idle workers' owners are free; 4.1: every idle worker */
static void kick(bool create, bool *stop)
{
	for (int k = 0; k < inflight; k++) {
		if (w[k].busy || stop[k])
			continue;
		if (minor == 0 && owner_busy[w[k].owner] && !(pipeline && loading))
			continue;
		send_req(k, create);
	}
}

/* Run until every worker did @rounds cycles (setup) or until @until_ns. */
static void run(bool create, int rounds, uint64_t until_ns, uint64_t *ops, uint64_t *lat_ns)
{
	bool stop[MAXW] = { false };
	int done_rounds[MAXW] = { 0 }, active = inflight;

	kick(create, stop);
	while (active > 0) {
		uint8_t *rec;
		size_t len;
		uint32_t xid, nres;
		int as, cst, k;
		struct rbuf r;

		if (rpc_recv(fd, &rec, &len))
			die("connection lost", 0);
		cst = rpc_reply(rec, len, &xid, &r, &as, &nres);
		if (cst < 0 && as != 0)
			die("RPC error", as);
		for (k = 0; k < inflight; k++)
			if (w[k].busy && w[k].xid == xid)
				break;
		if (k == inflight)
			die("reply with an unknown xid", (int)xid);
		if (minor == 0)
			owner_busy[w[k].owner] = false;
		uint64_t lat = now_ns() - w[k].sent_ns;
		if (handle(k, &r, cst)) {
			(*ops)++;
			*lat_ns += lat;
			if (w[k].phase == 0)
				done_rounds[k]++;
		}
		free(rec);
		if ((rounds && done_rounds[k] >= rounds && w[k].phase == 0) || (until_ns && now_ns() >= until_ns &&
										  w[k].phase == 0)) {
			stop[k] = true;
			active--;
		}
		kick(create, stop);
	}
}

static void cleanup_files(void)
{
	struct rbuf r;
	uint8_t *rec;

	for (int k = 0; k < inflight; k++) {
		char name[96];

		snprintf(name, sizeof(name), "%s.%d", tag, k);
		w_compound(&wb, next_xid++, (uint32_t)minor);
		if (minor == 1)
			w_sequence(inflight, slot0_seq++);
		wop(&wb, OP_PUTROOTFH);
		wop(&wb, OP_REMOVE);
		wstr(&wb, name);
		call_sync(&r, &rec);
		free(rec);
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "minor", 1, NULL, 'm' }, { "inflight", 1, NULL, 'k' },
		{ "seconds", 1, NULL, 's' }, { "owners", 1, NULL, 'o' }, { "tag", 1, NULL, 't' },
		{ "pipeline", 0, NULL, 'P' }, { NULL, 0, NULL, 0 },
	};
	int port = 0, c;
	uint64_t ops = 0, lat = 0, t0, t1;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': port = atoi(optarg); break;
		case 'm': minor = atoi(optarg); break;
		case 'k': inflight = atoi(optarg); break;
		case 's': seconds = atoi(optarg); break;
		case 'o': nowners = atoi(optarg); break;
		case 't': tag = optarg; break;
		case 'P': pipeline = true; break;
		default:
			fprintf(stderr, "usage: nfs_seqid_bench --port P --minor 0|1 --inflight K [--seconds S] "
				"[--owners M] [--tag NAME] [--pipeline]\n");
			return 2;
		}
	}
	if (port <= 0 || (minor != 0 && minor != 1) || inflight < 1 || inflight >= MAXW || nowners < 1 ||
	    nowners > inflight) {
		fprintf(stderr, "nfs_seqid_bench: bad arguments (see the header of nfs_seqid_bench.c)\n");
		return 2;
	}
	fd = nfs_connect(port);
	if (fd < 0) {
		fprintf(stderr, "nfs_seqid_bench: cannot connect to 127.0.0.1:%d\n", port);
		return 1;
	}
	for (int k = 0; k < inflight; k++) {
		w[k].owner = k % nowners;
		w[k].slot_seq = 1;
	}
	if (minor == 1)
		setup_v41();
	else
		setup_v40();
	/* make the files: one create round (retried through the grace period) */
	run(true, 1, 0, &ops, &lat);
	ops = lat = 0;
	loading = true;
	t0 = now_ns();
	run(false, 0, t0 + (uint64_t)seconds * 1000000000ull, &ops, &lat);
	t1 = now_ns();
	cleanup_files();
	printf("minor=%d%s inflight=%d owners=%d ops=%" PRIu64 " seconds=%.2f ops_per_s=%.1f mean_latency_ms=%.2f\n",
	       minor, pipeline && minor == 0 ? " (pipelined)" : "", inflight, nowners, ops, (double)(t1 - t0) / 1e9, (double)ops * 1e9 / (double)(t1 - t0),
	       ops ? (double)lat / (double)ops / 1e6 : 0.0);
	close(fd);
	return 0;
}
