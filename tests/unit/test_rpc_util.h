/*
 * test_rpc_util.h - a tiny blocking ONC RPC client for the gateway's tests:
 * connect to 127.0.0.1:port, send records (optionally split into
 * fragments), read replies back.  Every receive has a timeout so a server
 * bug fails a test instead of hanging it.
 */
#ifndef LOLIGO_TEST_RPC_UTIL_H
#define LOLIGO_TEST_RPC_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/io.h"
#include "nfs_gw/rpc/rpc.h"
#include "nfs_gw/rpc/xdr.h"

static inline int trpc_connect(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* trpc_connect from local address @src (e.g. "127.0.0.2": another peer
 * as far as the gateway can tell), any port. */
static inline int trpc_connect_from(const char *src, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in me = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (inet_pton(AF_INET, src, &me.sin_addr) != 1 || bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* the tests' names for common/io.h's helpers (a closed peer is -EPIPE, never SIGPIPE) */
static inline int trpc_write_all(int fd, const void *buf, size_t len)
{
	return io_send_all(fd, buf, len);
}

/* Send @body as one record in fragments of at most @frag bytes (0: one). */
static inline int trpc_send_record(int fd, const void *body, size_t len, size_t frag)
{
	const uint8_t *p = body;
	uint8_t mark[4];
	size_t n;
	int r;

	if (!frag)
		frag = len ? len : 1;
	do {
		n = len < frag ? len : frag;
		xdr_store_u32(mark, (uint32_t)n | (n == len ? RPC_RM_LAST : 0));
		r = trpc_write_all(fd, mark, 4);
		if (!r && n)
			r = trpc_write_all(fd, p, n);
		if (r)
			return r;
		p += n;
		len -= n;
	} while (len);
	return 0;
}

/* -ECONNRESET when the server closed the connection before @len bytes */
static inline int trpc_read_full(int fd, void *buf, size_t len)
{
	int r = io_read_all(fd, buf, len);

	return r == -EPIPE ? -ECONNRESET : r;
}

/* Read one record (all fragments).  Returns malloc'd body or NULL on
 * EOF/timeout/error; *err gets -ECONNRESET for a closed connection. */
static inline uint8_t *trpc_recv_record(int fd, size_t *len, int *err)
{
	uint8_t mark[4], *buf = NULL, *nb;
	size_t have = 0;
	uint32_t m, n;
	int r;

	for (;;) {
		r = trpc_read_full(fd, mark, 4);
		if (r)
			goto fail;
		m = xdr_load_u32(mark);
		n = m & ~RPC_RM_LAST;
		if (n > 16u << 20) {
			r = -EMSGSIZE;
			goto fail;
		}
		nb = realloc(buf, have + n + 1);
		if (!nb) {
			r = -ENOMEM;
			goto fail;
		}
		buf = nb;
		r = trpc_read_full(fd, buf + have, n);
		if (r)
			goto fail;
		have += n;
		if (m & RPC_RM_LAST)
			break;
	}
	*len = have;
	if (err)
		*err = 0;
	return buf;
fail:
	free(buf);
	if (err)
		*err = r;
	return NULL;
}

/* true when the server closed @fd (EOF within the socket timeout). */
static inline bool trpc_closed(int fd)
{
	uint8_t b[256];

	for (;;) {
		ssize_t n = recv(fd, b, sizeof(b), 0);
		if (n == 0)
			return true;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ECONNRESET;
	}
}

/* Start a call header: xid, CALL, 2, prog, vers, proc, AUTH_SYS @uid/@gid (no groups), verf NONE. */
static inline void trpc_call_header_as(struct xdr_enc *e, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
				       uint32_t uid, uint32_t gid)
{
	struct xdr_enc cred;

	xdr_enc_init(&cred, 512);
	xdr_put_u32(&cred, 0);
	xdr_put_string(&cred, "testhost");
	xdr_put_u32(&cred, uid);
	xdr_put_u32(&cred, gid);
	xdr_put_u32(&cred, 0);
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_CALL);
	xdr_put_u32(e, RPC_VERSION);
	xdr_put_u32(e, prog);
	xdr_put_u32(e, vers);
	xdr_put_u32(e, proc);
	xdr_put_u32(e, RPC_AUTH_SYS);
	xdr_put_opaque(e, cred.buf, (uint32_t)cred.len);
	xdr_put_u32(e, RPC_AUTH_NONE);
	xdr_put_opaque(e, NULL, 0);
	xdr_enc_free(&cred);
}

/* the same as root (uid 0, gid 0) */
static inline void trpc_call_header(struct xdr_enc *e, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	trpc_call_header_as(e, xid, prog, vers, proc, 0, 0);
}

struct trpc_reply {
	uint32_t xid, reply_stat, stat;      /* stat: accept_stat or reject_stat */
	uint32_t a, b;                       /* mismatch low/high, or auth_stat */
	struct xdr_dec res;                  /* results after an accepted SUCCESS */
};

/* Parse a reply record into @r.  0 or -EBADMSG. */
static inline int trpc_parse_reply(const uint8_t *buf, size_t len, struct trpc_reply *r)
{
	struct xdr_dec d;
	uint32_t mtype, vf, vl;

	memset(r, 0, sizeof(*r));
	xdr_dec_init(&d, buf, len);
	xdr_get_u32(&d, &r->xid);
	xdr_get_u32(&d, &mtype);
	xdr_get_u32(&d, &r->reply_stat);
	if (d.err || mtype != RPC_REPLY)
		return -EBADMSG;
	if (r->reply_stat == RPC_MSG_ACCEPTED) {
		xdr_get_u32(&d, &vf);
		xdr_get_u32(&d, &vl);
		xdr_skip(&d, vl);
		xdr_get_u32(&d, &r->stat);
		if (r->stat == RPC_PROG_MISMATCH) {
			xdr_get_u32(&d, &r->a);
			xdr_get_u32(&d, &r->b);
		}
	} else {
		xdr_get_u32(&d, &r->stat);
		xdr_get_u32(&d, &r->a);
		if (r->stat == RPC_MISMATCH)
			xdr_get_u32(&d, &r->b);
	}
	r->res = d;
	return d.err;
}

#endif
