/*
 * nfs3_write_bench - NFSv3 4 KiB random writes, the workload the duplicate
 * reply cache's implied-ACK eviction was first measured on (every v3 WRITE
 * goes through the DRC, as in knfsd).
 *
 *   nfs3_write_bench --port P [--conns C] [--inflight K] [--seconds S]
 *                    [--file-mb M] [--stable] [--tag NAME]
 *                    [--export PATH] [--op write|read|getattr]
 *
 * C connections (one client each, its own source port), each with a file
 * of its own (CREATE "<tag>.<c>" in the export root, found with MNT "/"),
 * each keeping K WRITEs of 4 KiB at random 4 KiB-aligned offsets below M
 * MiB in flight (K = 1: a client that waits for each reply; K > 1: a
 * pipelining one), UNSTABLE unless --stable (FILE_SYNC), for S seconds.
 * Then COMMIT.  --export mounts PATH instead of "/" (the subtree check
 * runs for exports other than "/"); --op read or getattr sends 4 KiB READs
 * (of the empty file: no data, the request's own cost) or GETATTRs
 * instead of WRITEs (a READ/GETATTR storm, each naming the file's handle).
 * --mkdirs: make --export's directories (MKDIR from MNT "/", an existing
 * one is fine) and exit, so that a gateway may then export it.  Prints one line:
 *   RESULT conns=C inflight=K ops=N seconds=S ops_per_s=X mean_latency_us=Y p99_latency_us=Z
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"

#define MAXC 64
#define MAXK 256
#define WSIZE 4096

struct buf {
	uint8_t *p;
	size_t len, cap;
};

struct conn {
	int fd;
	uint8_t fh[64];
	uint32_t fhlen;
	struct buf in;                   /* received, not parsed */
	uint64_t sent_ns[MAXK];          /* per slot: 0 = free */
	uint32_t slot_xid[MAXK];
	int busy;
};

static int port, nconns = 1, inflight = 1, seconds = 10, file_mb = 64;
static bool stable;
static const char *tag = "nfs3-write-bench";
static const char *export_path = "/";
static bool mkdirs;
static int op = 7;                       /* NFSv3 procedure: WRITE, READ (6), GETATTR (1) */
static struct conn cs[MAXC];
static uint32_t next_xid = 1;
static uint64_t *lat;                    /* every latency, ns */
static size_t nlat, caplat;
static uint8_t data[WSIZE];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Noreturn void die(const char *m, long v)
{
	fprintf(stderr, "nfs3_write_bench: %s (%ld)\n", m, v);
	exit(1);
}

/* ---- encoding ---------------------------------------------------------------- */

static void b_grow(struct buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 1024;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("out of memory", 0);
	}
}

static void p32(struct buf *b, uint32_t v)
{
	b_grow(b, 4);
	v = htonl(v);
	memcpy(b->p + b->len, &v, 4);
	b->len += 4;
}

static void p64(struct buf *b, uint64_t v)
{
	p32(b, (uint32_t)(v >> 32));
	p32(b, (uint32_t)v);
}

static void popaque(struct buf *b, const void *d, uint32_t n)
{
	size_t pad = (4 - (n & 3)) & 3;

	p32(b, n);
	b_grow(b, n + pad);
	memcpy(b->p + b->len, d, n);
	memset(b->p + b->len + n, 0, pad);
	b->len += n + pad;
}

/* A call record: mark (patched by finish), header with AUTH_SYS uid 0. */
static void begin(struct buf *b, uint32_t xid, uint32_t prog, uint32_t proc)
{
	static const char host[] = "bench";

	b->len = 0;
	p32(b, 0);                       /* record mark */
	p32(b, xid);
	p32(b, 0);                       /* CALL */
	p32(b, 2);
	p32(b, prog);
	p32(b, 3);
	p32(b, proc);
	p32(b, 1);                       /* AUTH_SYS */
	p32(b, 20 + 8);
	p32(b, 0);                       /* stamp */
	popaque(b, host, 5);
	p32(b, 0);                       /* uid */
	p32(b, 0);                       /* gid */
	p32(b, 0);                       /* gids */
	p32(b, 0);                       /* verifier: AUTH_NONE */
	p32(b, 0);
}

static void finish(struct buf *b)
{
	uint32_t m = htonl(0x80000000u | (uint32_t)(b->len - 4));

	memcpy(b->p, &m, 4);
}

static void send_all(int fd, const struct buf *b)
{
	int r = io_send_all(fd, b->p, b->len);

	if (r)
		die("send", -r);
}

/* ---- decoding ------------------------------------------------------------------ */

struct rd {
	const uint8_t *p, *end;
	bool err;
};

static uint32_t g32(struct rd *r)
{
	uint32_t v;

	if (r->end - r->p < 4) {
		r->err = true;
		return 0;
	}
	memcpy(&v, r->p, 4);
	r->p += 4;
	return ntohl(v);
}

/* A complete record at the start of c->in: its body (and length), or NULL. */
static const uint8_t *record(struct conn *c, size_t *len, size_t *total)
{
	uint32_t m;

	if (c->in.len < 4)
		return NULL;
	memcpy(&m, c->in.p, 4);
	m = ntohl(m);
	if (!(m & 0x80000000u))
		die("multi-fragment replies are not expected", 0);
	m &= 0x7fffffffu;
	if (c->in.len < 4 + (size_t)m)
		return NULL;
	*len = m;
	*total = 4 + (size_t)m;
	return c->in.p + 4;
}

static void consume(struct conn *c, size_t n)
{
	memmove(c->in.p, c->in.p + n, c->in.len - n);
	c->in.len -= n;
}

static void recv_some(struct conn *c)
{
	ssize_t n;

	b_grow(&c->in, 65536);
	n = recv(c->fd, c->in.p + c->in.len, 65536, 0);
	if (n <= 0)
		die("connection lost", n < 0 ? errno : 0);
	c->in.len += (size_t)n;
}

/* Parse the reply header: accepted SUCCESS; returns the first result word. */
static uint32_t reply_status(const uint8_t *p, size_t len, uint32_t *xid, struct rd *r)
{
	r->p = p;
	r->end = p + len;
	r->err = false;
	*xid = g32(r);
	if (g32(r) != 1 || g32(r) != 0)  /* REPLY, MSG_ACCEPTED */
		die("reply not accepted", *xid);
	g32(r);                          /* verifier flavour */
	r->p += (g32(r) + 3) & ~3u;
	if (g32(r) != 0)
		die("call not successful", *xid);
	return g32(r);
}

/* Send @b on @c and wait for its reply (setup only). */
static uint32_t call_sync(struct conn *c, struct buf *b, struct rd *r, uint8_t **keep)
{
	const uint8_t *p;
	size_t len, total;
	uint32_t xid;

	finish(b);
	send_all(c->fd, b);
	while (!(p = record(c, &len, &total)))
		recv_some(c);
	*keep = malloc(len);
	memcpy(*keep, p, len);
	consume(c, total);
	return reply_status(*keep, len, &xid, r);
}

/* ---- the run ---------------------------------------------------------------------- */

static int tcp_connect(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("connect", errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void setup(struct conn *c, int i)
{
	struct buf b = { 0 };
	struct rd r;
	uint8_t root[64], *keep;
	uint32_t rootlen, st, n;
	char name[128];

	c->fd = tcp_connect();
	begin(&b, next_xid++, 100005, 1);    /* MNT --export */
	popaque(&b, export_path, (uint32_t)strlen(export_path));
	st = call_sync(c, &b, &r, &keep);
	if (st)
		die("MNT (is the export rw,no_root_squash,insecure?)", st);
	rootlen = g32(&r);
	if (rootlen > 64)
		die("root handle", rootlen);
	memcpy(root, r.p, rootlen);
	free(keep);
	snprintf(name, sizeof(name), "%s.%d", tag, i);
	begin(&b, next_xid++, 100003, 8);    /* CREATE UNCHECKED mode 0644 */
	popaque(&b, root, rootlen);
	popaque(&b, name, (uint32_t)strlen(name));
	p32(&b, 0);
	p32(&b, 1);
	p32(&b, 0644);
	p32(&b, 0);
	p32(&b, 0);
	p32(&b, 0);
	p32(&b, 0);
	p32(&b, 0);
	st = call_sync(c, &b, &r, &keep);
	if (st)
		die("CREATE", st);
	if (g32(&r) != 1)
		die("CREATE gave no handle", 0);
	n = g32(&r);
	if (n > 64 || r.err)
		die("file handle", n);
	memcpy(c->fh, r.p, n);
	c->fhlen = n;
	free(keep);
	free(b.p);
	c->in.len = 0;
}

/* --mkdirs: every component of export_path, from MNT "/". */
static void make_dirs(void)
{
	struct conn c0 = { 0 };
	struct buf b = { 0 };
	struct rd r;
	uint8_t dir[64], *keep;
	uint32_t dirlen, st;
	char path[1024], *save = NULL;

	c0.fd = tcp_connect();
	begin(&b, next_xid++, 100005, 1);
	popaque(&b, "/", 1);
	if ((st = call_sync(&c0, &b, &r, &keep)))
		die("MNT /", st);
	dirlen = g32(&r);
	if (dirlen > 64)
		die("root handle", dirlen);
	memcpy(dir, r.p, dirlen);
	free(keep);
	snprintf(path, sizeof(path), "%s", export_path);
	for (char *n = strtok_r(path, "/", &save); n; n = strtok_r(NULL, "/", &save)) {
		begin(&b, next_xid++, 100003, 3);    /* LOOKUP */
		popaque(&b, dir, dirlen);
		popaque(&b, n, (uint32_t)strlen(n));
		st = call_sync(&c0, &b, &r, &keep);
		if (st == 2) {                       /* NOENT: MKDIR mode 0755 */
			free(keep);
			begin(&b, next_xid++, 100003, 9);
			popaque(&b, dir, dirlen);
			popaque(&b, n, (uint32_t)strlen(n));
			p32(&b, 1);
			p32(&b, 0755);
			for (int i = 0; i < 5; i++)
				p32(&b, 0);
			if ((st = call_sync(&c0, &b, &r, &keep)))
				die("MKDIR", st);
			if (g32(&r) != 1)
				die("MKDIR gave no handle", 0);
		} else if (st) {
			die("LOOKUP", st);
		}
		dirlen = g32(&r);
		if (dirlen > 64 || r.err)
			die("directory handle", dirlen);
		memcpy(dir, r.p, dirlen);
		free(keep);
	}
	close(c0.fd);
	free(b.p);
	free(c0.in.p);
}

static void send_write(struct conn *c, int slot, struct buf *b)
{
	uint64_t off = ((uint64_t)rand() % ((uint64_t)file_mb * 256)) * WSIZE;

	c->slot_xid[slot] = next_xid;
	begin(b, next_xid++, 100003, (uint32_t)op);
	popaque(b, c->fh, c->fhlen);
	if (op != 1)
		p64(b, off);
	if (op == 7) {
		p32(b, WSIZE);
		p32(b, stable ? 2 : 0);
		popaque(b, data, WSIZE);
	} else if (op == 6) {
		p32(b, WSIZE);
	}
	finish(b);
	c->sent_ns[slot] = now_ns();
	send_all(c->fd, b);
	c->busy++;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void cleanup(struct conn *c, int i)
{
	struct buf b = { 0 };
	struct rd r;
	uint8_t *keep;
	uint32_t st;

	begin(&b, next_xid++, 100003, 21);   /* COMMIT */
	popaque(&b, c->fh, c->fhlen);
	p64(&b, 0);
	p32(&b, 0);
	st = call_sync(c, &b, &r, &keep);
	free(keep);
	if (st)
		die("COMMIT", st);
	(void)i;
	free(b.p);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "conns", 1, NULL, 'c' }, { "inflight", 1, NULL, 'k' },
		{ "seconds", 1, NULL, 's' }, { "file-mb", 1, NULL, 'm' }, { "stable", 0, NULL, 'S' },
		{ "tag", 1, NULL, 't' }, { "export", 1, NULL, 'e' }, { "op", 1, NULL, 'o' },
		{ "mkdirs", 0, NULL, 'M' }, { NULL, 0, NULL, 0 },
	};
	struct pollfd pf[MAXC];
	struct buf b = { 0 };
	uint64_t start, end, ops = 0, sum = 0;
	int o, i, k;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'p': port = atoi(optarg); break;
		case 'c': nconns = atoi(optarg); break;
		case 'k': inflight = atoi(optarg); break;
		case 's': seconds = atoi(optarg); break;
		case 'm': file_mb = atoi(optarg); break;
		case 'S': stable = true; break;
		case 't': tag = optarg; break;
		case 'e': export_path = optarg; break;
		case 'M': mkdirs = true; break;
		case 'o':
			op = !strcmp(optarg, "write") ? 7 : !strcmp(optarg, "read") ? 6 : !strcmp(optarg, "getattr") ? 1 : -1;
			if (op < 0)
				die("--op: write, read or getattr", 0);
			break;
		default:
			fprintf(stderr, "usage: nfs3_write_bench --port P [--conns C] [--inflight K] [--seconds S] "
					"[--file-mb M] [--stable] [--tag NAME] [--export PATH] [--op write|read|getattr] [--mkdirs]\n");
			return 2;
		}
	}
	if (port <= 0 || nconns < 1 || nconns > MAXC || inflight < 1 || inflight > MAXK || seconds < 1 || file_mb < 1)
		die("bad arguments", 0);
	if (mkdirs) {
		make_dirs();
		return 0;
	}
	memset(data, 0x5a, sizeof(data));
	srand(42);
	for (i = 0; i < nconns; i++)
		setup(&cs[i], i);
	start = now_ns();
	end = start + (uint64_t)seconds * 1000000000ull;
	for (i = 0; i < nconns; i++)
		for (k = 0; k < inflight; k++)
			send_write(&cs[i], k, &b);
	while (1) {
		bool running = now_ns() < end, any = false;

		for (i = 0; i < nconns; i++) {
			pf[i].fd = cs[i].busy ? cs[i].fd : -1;
			pf[i].events = POLLIN;
			any |= cs[i].busy > 0;
		}
		if (!any)
			break;
		if (poll(pf, (nfds_t)nconns, 10000) <= 0)
			die("no reply for 10 s", 0);
		for (i = 0; i < nconns; i++) {
			struct conn *c = &cs[i];
			const uint8_t *p;
			size_t len, total;

			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			recv_some(c);
			while ((p = record(c, &len, &total))) {
				struct rd r;
				uint32_t xid, st = reply_status(p, len, &xid, &r);

				consume(c, total);
				if (st)
					die(op == 7 ? "WRITE failed" : op == 6 ? "READ failed" : "GETATTR failed", st);
				for (k = 0; k < inflight && c->slot_xid[k] != xid; k++)
					;
				if (k == inflight || !c->sent_ns[k])
					die("reply to an unknown xid", xid);
				if (nlat == caplat) {
					caplat = caplat ? caplat * 2 : 65536;
					lat = realloc(lat, caplat * sizeof(*lat));
				}
				lat[nlat] = now_ns() - c->sent_ns[k];
				sum += lat[nlat++];
				ops++;
				c->sent_ns[k] = 0;
				c->busy--;
				if (running)
					send_write(c, k, &b);
			}
		}
	}
	end = now_ns();
	for (i = 0; i < nconns; i++)
		cleanup(&cs[i], i);
	qsort(lat, nlat, sizeof(*lat), cmp64);
	printf("RESULT op=%s export=%s conns=%d inflight=%d ops=%llu seconds=%.2f ops_per_s=%.1f mean_latency_us=%.1f "
	       "p99_latency_us=%.1f\n", op == 7 ? "write" : op == 6 ? "read" : "getattr", export_path, nconns, inflight, (unsigned long long)ops, (double)(end - start) / 1e9,
	       (double)ops * 1e9 / (double)(end - start), nlat ? (double)sum / (double)nlat / 1e3 : 0.0,
	       nlat ? (double)lat[nlat * 99 / 100] / 1e3 : 0.0);
	free(b.p);
	free(lat);
	return 0;
}
