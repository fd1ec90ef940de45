/*
 * net.c - the MDS's TCP listener and connections.
 *
 * One reader thread per connection, blocking reads.  Why not an epoll loop:
 * every request runs under the one namespace lock anyway, so a loop would
 * not add parallelism, while a thread per connection lets the decode and
 * encode of different clients (the bulk of the per-request CPU outside the
 * lock) run on different cores, keeps a slow or hostile peer from stalling
 * anyone else, and keeps the code straight-line.  The MDS serves tens to a
 * few hundred client sessions (one per mount or gateway, not per user), so
 * the thread count stays small.  Writes to a connection come from its
 * reader (UNSAFE and read replies), the journal writer (SAFE replies) and
 * the ticker (STALE), serialised by the connection's send lock, and never
 * block: what the socket does not take at once is queued and written by
 * the flusher thread, so a client that stops reading delays nobody else;
 * one that does not drain 64 MiB of replies, or lets a write hang for
 * 10 s, is dropped (it reconnects and replays).
 *
 * A peer that breaks the protocol (bad magic, version, oversized length,
 * bad crc, unknown or unexpected message type, a truncated payload) loses
 * its connection with a log line naming it and the reason; its session
 * stays, for a reconnect.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "mds/codec.h"
#include "mds/mds.h"

#define SEND_TIMEOUT_S 10
#define OUTQ_MAX (64u << 20)   /* queued reply bytes beyond which a peer is dropped */

void conn_get(struct conn *c)
{
	atomic_fetch_add(&c->ref, 1);
}

void conn_put(struct conn *c)
{
	if (atomic_fetch_sub(&c->ref, 1) != 1)
		return;
	close(c->fd);
	mdsp_buf_free(&c->outq);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

void conn_shutdown(struct conn *c)
{
	pthread_mutex_lock(&c->send_lock);
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->send_lock);
}

static void conn_kill_locked(struct conn *c, const char *why, int err)
{
	if (c->dead)
		return;
	dout(MDS, 1, "%s: %s (%s): closing the connection", c->peer, why, strerror(-err));
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
}

/* Hand @c to the flusher.  Caller holds c->send_lock. */
static void flush_enqueue(struct conn *c)
{
	struct mds *m = c->mds;

	pthread_mutex_lock(&m->flush_lock);
	if (!c->on_flush_list && !m->flush_stop) {
		conn_get(c);
		c->on_flush_list = true;
		c->fnext = NULL;
		*m->flush_tail = c;
		m->flush_tail = &c->fnext;
		pthread_cond_signal(&m->flush_cond);
	}
	pthread_mutex_unlock(&m->flush_lock);
}

/*
 * Sends never block the caller (a reader, the journal writer, the ticker):
 * what the socket does not take at once is queued on the connection and
 * written by the flusher thread, so one client that stops reading cannot
 * stall the SAFE replies of everyone else.  Frames keep their order.
 */
int conn_send_frame_locked(struct conn *c, struct mdsp_buf *b)
{
	uint8_t *h = b->data;
	uint32_t len;
	size_t off = 0;
	ssize_t n;

	if (c->dead)
		return -EPIPE;
	if (b->len < MDSP_HDR_LEN)
		return -EINVAL;
	/* frames are encoded ahead of time; the connection's sequence number
	 * is only known now, and the crc covers it */
	len = le32_get(h + 20);
	le64_put(h + 12, ++c->out_seq);
	le32_put(h + 24, crc32c(crc32c(0, h, 24), h + MDSP_HDR_LEN, len));
	if (!c->outq.len && !c->flushing) {
		while (off < b->len) {
			n = send(c->fd, b->data + off, b->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0) {
				off += (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			conn_kill_locked(c, "send failed", n < 0 ? -errno : -EPIPE);
			return -EPIPE;
		}
		if (off == b->len)
			return 0;
	}
	if (c->outq.len + (b->len - off) > OUTQ_MAX) {
		conn_kill_locked(c, "peer does not read its replies", -ENOBUFS);
		return -ENOBUFS;
	}
	enc_bytes(&c->outq, b->data + off, b->len - off);
	if (c->outq.oom) {
		conn_kill_locked(c, "queueing a reply", -ENOMEM);
		return -ENOMEM;
	}
	flush_enqueue(c);
	return 0;
}

static void *flusher_main(void *arg)
{
	struct mds *m = arg;
	struct conn *c;
	struct mdsp_buf b;
	int r;

	pthread_mutex_lock(&m->flush_lock);
	for (;;) {
		while (!m->flush_head && !m->flush_stop)
			pthread_cond_wait(&m->flush_cond, &m->flush_lock);
		if (!m->flush_head)
			break;
		c = m->flush_head;
		m->flush_head = c->fnext;
		if (!m->flush_head)
			m->flush_tail = &m->flush_head;
		c->on_flush_list = false;
		pthread_mutex_unlock(&m->flush_lock);

		for (;;) {
			pthread_mutex_lock(&c->send_lock);
			if (c->dead || !c->outq.len) {
				mdsp_buf_free(&c->outq);
				c->flushing = false;
				pthread_mutex_unlock(&c->send_lock);
				break;
			}
			b = c->outq;
			mdsp_buf_init(&c->outq);
			c->flushing = true;
			pthread_mutex_unlock(&c->send_lock);
			/* blocking, bounded by SO_SNDTIMEO */
			r = mdsp_send(c->fd, &b);
			mdsp_buf_free(&b);
			if (r) {
				pthread_mutex_lock(&c->send_lock);
				conn_kill_locked(c, "send failed", r);
				pthread_mutex_unlock(&c->send_lock);
			}
		}
		conn_put(c);
		pthread_mutex_lock(&m->flush_lock);
	}
	pthread_mutex_unlock(&m->flush_lock);
	return NULL;
}

int conn_send_frame(struct conn *c, struct mdsp_buf *b)
{
	int r;

	pthread_mutex_lock(&c->send_lock);
	r = conn_send_frame_locked(c, b);
	pthread_mutex_unlock(&c->send_lock);
	return r;
}

int conn_send_msg(struct conn *c, struct mdsp_msg *msg)
{
	struct mdsp_buf b;
	int r;

	mdsp_buf_init(&b);
	r = mdsp_encode(&b, msg);
	if (!r)
		r = conn_send_frame(c, &b);
	mdsp_buf_free(&b);
	return r;
}

/* Read exactly @len bytes; *got says how many arrived.  0 on success or a
 * clean EOF (got < len), -errno on an error. */
static int read_full(int fd, void *buf, size_t len, size_t *got)
{
	size_t n = 0;
	ssize_t r;

	while (n < len) {
		r = read(fd, (uint8_t *)buf + n, len - n);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			*got = n;
			return -errno;
		}
		n += (size_t)r;
	}
	*got = n;
	return 0;
}

static void command_handle(struct mds *m, struct conn *c, struct mdsp_command *cmd)
{
	struct mdsp_msg rep;
	char *out = NULL;

	memset(&rep, 0, sizeof(rep));
	rep.type = MDSP_MSG_COMMAND_REPLY;
	rep.command_reply.tid = cmd->tid;
	rep.command_reply.result = admin_command_json(m, cmd->json ? cmd->json : "{}", &out);
	rep.command_reply.json = out;
	if (out && strlen(out) > MDSP_JSON_MAX) {
		free(out);
		rep.command_reply.json = NULL;
		rep.command_reply.result = -E2BIG;
	}
	conn_send_msg(c, &rep);
	free(rep.command_reply.json);
}

static void bad_peer(struct mds *m, struct conn *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void bad_peer(struct mds *m, struct conn *c, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	perf_inc(&m->bad_peers, 1);
	derr(MDS, "peer %s: %s: closing the connection", c->peer, why);
}

static void *reader_main(void *arg)
{
	struct conn *c = arg;
	struct mds *m = c->mds;
	uint8_t hdr[MDSP_HDR_LEN];
	uint8_t *payload = NULL;
	struct mdsp_hdr h;
	struct mdsp_msg msg;
	const char *why;
	size_t got;
	int r;

	dout(MDS, 1, "connection from %s", c->peer);
	for (;;) {
		r = read_full(c->fd, hdr, sizeof(hdr), &got);
		if (atomic_load(&m->stopping))
			break;
		if (r) {
			dout(MDS, 1, "peer %s: read error (%s): closing the connection", c->peer, strerror(-r));
			break;
		}
		if (got == 0) {
			dout(MDS, 1, "peer %s closed the connection", c->peer);
			break;
		}
		if (got < sizeof(hdr)) {
			bad_peer(m, c, "disconnected mid-message (%zu of %d header bytes)", got, MDSP_HDR_LEN);
			break;
		}
		r = mdsp_decode_hdr(hdr, &h, &why);
		if (r) {
			bad_peer(m, c, "bad frame header: %s", why ? why : strerror(-r));
			break;
		}
		payload = malloc(h.len ? h.len : 1);
		if (!payload) {
			derr(MDS, "peer %s: no memory for a %u-byte message: closing the connection", c->peer, h.len);
			break;
		}
		r = read_full(c->fd, payload, h.len, &got);
		if (r || got < h.len) {
			if (!atomic_load(&m->stopping))
				bad_peer(m, c, "disconnected mid-message (%zu of %u payload bytes)", got, h.len);
			break;
		}
		r = mdsp_decode_payload(&h, payload, h.len, &msg, &why);
		free(payload);
		payload = NULL;
		if (r == -EOPNOTSUPP) {
			bad_peer(m, c, "unknown message type %u", h.type);
			break;
		}
		if (r) {
			bad_peer(m, c, "bad %s message: %s", mdsp_msg_type_name(h.type), why ? why : strerror(-r));
			break;
		}
		switch (msg.type) {
		case MDSP_MSG_SESSION:
			session_handle(m, c, &msg.session);
			break;
		case MDSP_MSG_REQUEST:
			request_handle(m, c, &msg);
			break;
		case MDSP_MSG_COMMAND:
			command_handle(m, c, &msg.command);
			break;
		case MDSP_MSG_CAPS:
			dout(MDS, 10, "%s: caps message ignored (caps are not implemented yet)", c->peer);
			break;
		default:
			bad_peer(m, c, "unexpected %s message from a client", mdsp_msg_type_name(msg.type));
			mdsp_msg_free(&msg);
			goto out;
		}
		mdsp_msg_free(&msg);
	}
out:
	free(payload);
	session_conn_closed(m, c);
	conn_shutdown(c);
	pthread_mutex_lock(&m->conns_lock);
	c->exited = true;
	pthread_mutex_unlock(&m->conns_lock);
	return NULL;
}

/* Join and drop connections whose reader has finished. */
static void reap(struct mds *m, bool all)
{
	struct conn **pp, *c, *dead = NULL;

	pthread_mutex_lock(&m->conns_lock);
	pp = &m->conns;
	while ((c = *pp)) {
		if (all || c->exited) {
			*pp = c->next;
			c->next = dead;
			dead = c;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&m->conns_lock);
	while ((c = dead)) {
		dead = c->next;
		if (all)
			conn_shutdown(c);
		pthread_join(c->thread, NULL);
		conn_put(c);
	}
}

static void *acceptor_main(void *arg)
{
	struct mds *m = arg;
	struct pollfd p[2] = { { .fd = m->listen_fd, .events = POLLIN }, { .fd = m->stop_pipe[0], .events = POLLIN } };
	pthread_attr_t attr;

	/* readers need little stack; hundreds of sessions should not reserve
	 * 8 MiB of address space each */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 << 10);

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct conn *c;
		char host[INET6_ADDRSTRLEN];
		int fd, one = 1, r;
		struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };

		r = poll(p, 2, 1000);
		reap(m, false);
		if (atomic_load(&m->stopping) || (r > 0 && (p[1].revents & POLLIN)))
			break;
		if (r <= 0 || !(p[0].revents & POLLIN))
			continue;
		fd = accept4(m->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
				derr(MDS, "accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE)
				usleep(100000);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->mds = m;
		c->fd = fd;
		atomic_init(&c->ref, 1);
		pthread_mutex_init(&c->send_lock, NULL);
		mdsp_buf_init(&c->outq);
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "%s:%u", host, ntohs(sin->sin_port));
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host, ntohs(sin6->sin6_port));
		} else {
			snprintf(c->peer, sizeof(c->peer), "fd%d", fd);
		}
		pthread_mutex_lock(&m->conns_lock);
		if (pthread_create(&c->thread, &attr, reader_main, c)) {
			pthread_mutex_unlock(&m->conns_lock);
			derr(MDS, "cannot start a reader thread for %s", c->peer);
			conn_put(c);
			continue;
		}
		c->next = m->conns;
		m->conns = c;
		pthread_mutex_unlock(&m->conns_lock);
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

int net_listen(struct mds *m, const char *addr, int port)
{
	struct addrinfo hints, *res = NULL, *ai;
	char portstr[16];
	int fd = -1, one = 1, r;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (port < 0 || port > 65535)
		return -EINVAL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%d", port);
	r = getaddrinfo(addr && *addr ? addr : NULL, portstr, &hints, &res);
	if (r)
		return -EADDRNOTAVAIL;
	r = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 512) == 0) {
			r = 0;
			break;
		}
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (r)
		return r;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			m->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			m->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	m->listen_fd = fd;
	return 0;
}

int net_start(struct mds *m)
{
	int r;

	if (pipe2(m->stop_pipe, O_CLOEXEC))
		return -errno;
	pthread_mutex_init(&m->flush_lock, NULL);
	pthread_cond_init(&m->flush_cond, NULL);
	m->flush_tail = &m->flush_head;
	r = pthread_create(&m->flusher, NULL, flusher_main, m);
	if (r)
		return -r;
	m->flusher_started = true;
	r = pthread_create(&m->acceptor, NULL, acceptor_main, m);
	return -r;
}

void net_stop(struct mds *m)
{
	char x = 1;

	atomic_store(&m->stopping, true);
	if (m->stop_pipe[1] > 0) {
		if (write(m->stop_pipe[1], &x, 1) < 0)
			derr(MDS, "stop pipe: %s", strerror(errno));
		pthread_join(m->acceptor, NULL);
		close(m->stop_pipe[0]);
		close(m->stop_pipe[1]);
		m->stop_pipe[0] = m->stop_pipe[1] = -1;
	}
	if (m->listen_fd >= 0) {
		close(m->listen_fd);
		m->listen_fd = -1;
	}
	reap(m, true);
	if (m->flusher_started) {
		struct conn *c;

		pthread_mutex_lock(&m->flush_lock);
		m->flush_stop = true;
		pthread_cond_signal(&m->flush_cond);
		pthread_mutex_unlock(&m->flush_lock);
		pthread_join(m->flusher, NULL);
		m->flusher_started = false;
		while ((c = m->flush_head)) {
			m->flush_head = c->fnext;
			c->on_flush_list = false;
			conn_put(c);
		}
		m->flush_tail = &m->flush_head;
	}
}
