/*
 * nfs4_wire.h - a minimal NFSv4 client-side wire kit for the gateway's
 * benchmark (nfs_seqid_bench) and bad-input test: building COMPOUNDs in
 * ONC RPC records with AUTH_SYS, and reading replies.  Header-only; its
 * users link loligo_common (common/io.h).  Every read is bounded (a short
 * reply sets r->err).
 */
#ifndef LOLIGO_TOOLS_BENCH_NFS4_WIRE_H
#define LOLIGO_TOOLS_BENCH_NFS4_WIRE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/io.h"

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	size_t nops_off;
	uint32_t nops;
};

static inline void w_grow(struct wbuf *w, size_t n)
{
	if (w->len + n > w->cap) {
		w->cap = (w->len + n) * 2 + 256;
		w->p = realloc(w->p, w->cap);
		if (!w->p)
			abort();
	}
}

static inline void w32(struct wbuf *w, uint32_t v)
{
	w_grow(w, 4);
	w->p[w->len++] = (uint8_t)(v >> 24);
	w->p[w->len++] = (uint8_t)(v >> 16);
	w->p[w->len++] = (uint8_t)(v >> 8);
	w->p[w->len++] = (uint8_t)v;
}

static inline void w64(struct wbuf *w, uint64_t v)
{
	w32(w, (uint32_t)(v >> 32));
	w32(w, (uint32_t)v);
}

static inline void wfixed(struct wbuf *w, const void *d, size_t n)
{
	size_t pad = (4 - (n & 3)) & 3;

	w_grow(w, n + pad);
	memcpy(w->p + w->len, d, n);
	w->len += n;
	memset(w->p + w->len, 0, pad);
	w->len += pad;
}

static inline void wopaque(struct wbuf *w, const void *d, uint32_t n)
{
	w32(w, n);
	wfixed(w, d, n);
}

static inline void wstr(struct wbuf *w, const char *s)
{
	wopaque(w, s, (uint32_t)strlen(s));
}

/* Start a record: record mark, RPC call header (AUTH_SYS uid/gid 0),
 * COMPOUND4args header; ops are then added with wop(). */
static inline void w_compound(struct wbuf *w, uint32_t xid, uint32_t minor)
{
	w->len = 0;
	w->nops = 0;
	w32(w, 0);                       /* record mark, set by w_finish */
	w32(w, xid);
	w32(w, 0);                       /* CALL */
	w32(w, 2);                       /* RPC version */
	w32(w, 100003);
	w32(w, 4);
	w32(w, 1);                       /* COMPOUND */
	w32(w, 1);                       /* AUTH_SYS */
	w32(w, 5 * 4 + 8);               /* body length: stamp, machine "bench", uid, gid, gids<> */
	w32(w, 0);
	wstr(w, "bench");
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);                       /* verifier AUTH_NONE */
	w32(w, 0);
	w32(w, 0);                       /* tag "" */
	w32(w, minor);
	w->nops_off = w->len;
	w32(w, 0);
}

static inline void wop(struct wbuf *w, uint32_t op)
{
	w32(w, op);
	w->nops++;
}

static inline void w_finish(struct wbuf *w)
{
	uint32_t n = w->nops, rm = 0x80000000u | (uint32_t)(w->len - 4);

	w->p[w->nops_off] = (uint8_t)(n >> 24);
	w->p[w->nops_off + 1] = (uint8_t)(n >> 16);
	w->p[w->nops_off + 2] = (uint8_t)(n >> 8);
	w->p[w->nops_off + 3] = (uint8_t)n;
	w->p[0] = (uint8_t)(rm >> 24);
	w->p[1] = (uint8_t)(rm >> 16);
	w->p[2] = (uint8_t)(rm >> 8);
	w->p[3] = (uint8_t)rm;
}

struct rbuf {
	const uint8_t *p, *end;
	int err;
};

static inline uint32_t r32(struct rbuf *r)
{
	uint32_t v;

	if (r->err || r->end - r->p < 4) {
		r->err = 1;
		return 0;
	}
	v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	return v;
}

static inline uint64_t r64(struct rbuf *r)
{
	uint64_t hi = r32(r);

	return hi << 32 | r32(r);
}

static inline const uint8_t *rfixed(struct rbuf *r, size_t n)
{
	size_t padded = (n + 3) & ~(size_t)3;
	const uint8_t *p = r->p;

	if (r->err || (size_t)(r->end - r->p) < padded) {
		r->err = 1;
		return NULL;
	}
	r->p += padded;
	return p;
}

static inline const uint8_t *ropaque(struct rbuf *r, uint32_t *n)
{
	*n = r32(r);
	return rfixed(r, *n);
}

static inline void rbitmap_skip(struct rbuf *r)
{
	uint32_t n = r32(r);

	if (n > 64) {
		r->err = 1;
		return;
	}
	while (n--)
		r32(r);
}

static inline int nfs_connect(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* One whole record (all fragments); caller frees *rec. 0 or -1 (EOF/error). */
static inline int rpc_recv(int fd, uint8_t **rec, size_t *len)
{
	uint8_t *buf = NULL;
	size_t have = 0;

	for (;;) {
		uint8_t h[4];
		uint32_t m, n;

		if (io_read_all(fd, h, 4))
			goto bad;
		m = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
		n = m & 0x7fffffffu;
		if (n > (64u << 20))
			goto bad;
		buf = realloc(buf, have + n + 1);
		if (!buf || io_read_all(fd, buf + have, n))
			goto bad;
		have += n;
		if (m & 0x80000000u)
			break;
	}
	*rec = buf;
	*len = have;
	return 0;
bad:
	free(buf);
	return -1;
}

/*
 * Parse an accepted RPC reply up to COMPOUND4res: *xid, and @r positioned
 * at the first result (after status, tag and resarray count).
 * Return: the COMPOUND status, or -1 when the reply is not an accepted
 * SUCCESS (*accept_stat says what it was, -2 for a denied reply).
 */
static inline int rpc_reply(const uint8_t *rec, size_t len, uint32_t *xid, struct rbuf *r, int *accept_stat,
			    uint32_t *nres)
{
	uint32_t vlen, st;

	r->p = rec;
	r->end = rec + len;
	r->err = 0;
	*accept_stat = -1;
	*nres = 0;
	*xid = r32(r);
	if (r32(r) != 1)               /* REPLY */
		return -1;
	if (r32(r) != 0) {             /* MSG_DENIED */
		*accept_stat = -2;
		return -1;
	}
	r32(r);                         /* verifier */
	ropaque(r, &vlen);
	*accept_stat = (int)r32(r);
	if (r->err || *accept_stat != 0)
		return -1;
	st = r32(r);
	ropaque(r, &vlen);               /* tag */
	*nres = r32(r);
	return r->err ? -1 : (int)st;
}

#endif
