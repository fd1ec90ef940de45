/*
 * transport.c - TCP transports on one io_uring thread.
 *
 * One thread owns the ring and every connection's I/O state: a multishot
 * accept on the listener, one receive armed per connection, at most one
 * send in flight per connection (its queue of replies goes out in order),
 * a read on an eventfd by which workers hand finished replies back, and a
 * one-second timeout that drives DRC pruning.  Workers never touch a
 * socket: conn_complete() puts the reply on a locked list and pokes
 * the eventfd; the ring thread moves it onto the connection's send queue.
 *
 * Flow control: a request counts as in flight from the moment its record
 * is complete until its reply has been fully sent (or it finished with no
 * reply).  A connection with max_inflight requests in flight, or with more
 * than max_queued reply bytes waiting to be sent, is not read from (its
 * receive is not re-armed, unparsed bytes wait in its buffer) until a reply
 * goes out.  So a client that pipelines requests and never reads the
 * answers costs at most max_inflight replies of memory, and once its
 * replies have made no progress for send_timeout its connection is closed.
 *
 * What one peer can hold: at most max_conns_per_host connections from one
 * address (any port; below the global max_conns, so one host cannot take
 * every slot: a connection over either limit is accepted and closed at
 * once, logged once per second at most); per connection, one record being
 * reassembled, which must be whole within record_timeout of its first byte
 * and have at most max_frags fragments (so half-sent records and floods of
 * empty fragments are closed, not kept).
 *
 * Timer: every tick (a second, or a quarter of a short idle/send/record
 * timeout) prunes the DRC, closes connections idle past idle_timeout (no
 * request in flight, nothing received or sent), stuck past send_timeout or
 * with a record begun more than record_timeout ago, and re-arms an accept
 * that ran out of file descriptors (EMFILE/ENFILE): re-arming it at once
 * would fail again at once and spin the ring thread.
 *
 * The implied-ACK clock (rpc.h, drc.h): each connection counts the bytes
 * it has taken from its socket (rx_total; rbuf starts at stream offset
 * rx_base) and publishes the offset just past each record it hands over
 * (x.rx_parsed).  When the last byte of a cached reply has been written,
 * the DRC entry learns its send-stream end (tcpi_bytes_acked must reach
 * it: tx_total, bytes the socket has taken from us, exact since one send
 * is in flight at a time) and how many bytes the kernel had received by
 * then (tcpi_bytes_received, counted in the kernel, so bytes that arrived
 * while the connection was not being read count as received).  The peer's
 * acknowledged bytes (x.tx_acked) are sampled on every receive, send and
 * tick, and at the close, of a connection that has cache entries.
 *
 * Calls of ours (the NFSv4.1 back channel, clnt.c): conn_send_call() queues
 * a CALL record on the same send queue as the replies (it counts as queued
 * bytes, not as a request in flight), and a record the client sends that is
 * a REPLY goes to rpc_xprt_deliver_reply() instead of the service.  When
 * the connection is freed, rpc_xprt_fail_calls() wakes whoever still waits.
 *
 * Closing: shutdown(2) the socket so the armed receive/send complete, and
 * free the connection's I/O state when neither is outstanding.  The struct
 * rpc_xprt itself lives on as long as requests or DRC entries reference it;
 * its closed_at tells the DRC the connection is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netdb.h>
#include <linux/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "common/uring_wait.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

#define RING_ENTRIES 256
#define RBUF_SIZE (64 * 1024)
#define NS_PER_SEC 1000000000ull
/* file descriptors left for the rest of the process (FUSE, the cluster's
 * sockets, stores, logs) when max_conns is clamped to RLIMIT_NOFILE */
#define FD_RESERVE 128

enum op_type { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_WAKE, OP_TIMER, OP_IGNORE };

struct ring_op {
	enum op_type type;
	struct conn *c;
};

struct out {
	struct out *next;
	struct conn *c;                  /* holds the request's xprt reference */
	uint8_t *buf;                    /* NULL: request finished with no reply */
	size_t len;
	struct drc_entry *drc;
	bool call;                       /* a call of ours (back channel), no request of theirs */
};

/* One client address and its open connections (ring thread only). */
struct host {
	struct host *next;               /* t->hosts[] chain */
	uint8_t key[17];                 /* family byte + address (v4-mapped as v4) */
	unsigned int conns;
};
#define HOST_BUCKETS 256

/* Everything but `x` is touched by the ring thread only. */
struct conn {
	struct rpc_xprt x;               /* first: container_of by cast */
	struct rpc_transport *t;
	int fd;
	struct ring_op recv_op, send_op;
	bool recv_armed, send_armed, closing, close_after_send, dead;
	uint8_t *rbuf;
	size_t roff, rlen;               /* unparsed bytes are rbuf[roff, rlen) */
	uint64_t rx_base;                /* receive-stream offset of rbuf[0] */
	uint64_t rx_total;               /* bytes taken from the socket */
	uint64_t tx_total;               /* bytes the socket took from us */
	struct rpc_rm rm;
	unsigned int inflight;           /* records handed over, reply not sent yet */
	struct out *sq_head, *sq_tail;   /* replies to send, in order */
	size_t sq_done;                  /* bytes of sq_head already sent */
	size_t sq_bytes;                 /* bytes of the replies on the queue */
	uint64_t active_ns;              /* mono: accepted, received or sent */
	uint64_t rec_start_ns;           /* mono: first byte of the record being reassembled (0: none) */
	struct host *host;               /* counted there, or NULL */
	uint64_t send_progress_ns;       /* mono: sq_head non-empty and last sent */
	struct conn *prev, *next;        /* t->conns */
};

struct rpc_transport {
	struct rpc_svc *svc;
	struct rpc_svc_params p;
	struct io_uring ring;
	int lfd, efd;
	uint16_t port;
	struct sockaddr_storage listen_addr;
	pthread_t thread;
	bool thread_started;
	struct ring_op accept_op, wake_op, timer_op, ignore_op;
	bool accept_armed, timer_armed;
	uint64_t efd_val;
	struct __kernel_timespec tick;
	uint64_t tick_ns, last_svc_tick;
	bool accept_paused;              /* out of fds: re-arm at the next tick */
	unsigned long accept_fails;      /* in the current burst */
	struct conn *conns;              /* ring thread only */
	struct host *hosts[HOST_BUCKETS];/* ring thread only */
	unsigned long refused;           /* since the last refusal log line (ring thread) */
	uint64_t refused_log_ns;
	_Atomic unsigned int nconns;
	_Atomic size_t queued;           /* sum of every conn's sq_bytes */

	pthread_mutex_t lock;
	struct out *pending, *pending_tail;  /* protected by lock */
	bool stopping;                       /* protected by lock */
};

static _Atomic uint64_t xprt_ids;

uint64_t rpc_xprt_next_id(void)
{
	return atomic_fetch_add_explicit(&xprt_ids, 1, memory_order_relaxed) + 1;
}

void rpc_xprt_init(struct rpc_xprt *x, bool conn_oriented, const struct sockaddr *peer, socklen_t len,
		   const struct rpc_xprt_ops *ops)
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;

	memset(x, 0, sizeof(*x));
	x->id = rpc_xprt_next_id();
	x->conn_oriented = conn_oriented;
	x->ops = ops;
	atomic_init(&x->refs, 1);
	pthread_mutex_init(&x->drc_lock, NULL);
	pthread_mutex_init(&x->call_lock, NULL);
	if (peer && len <= sizeof(x->peer)) {
		memcpy(&x->peer, peer, len);
		x->peer_len = len;
		if (peer->sa_family == AF_INET) {
			inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, host, sizeof(host));
			port = ntohs(((const struct sockaddr_in *)peer)->sin_port);
		} else if (peer->sa_family == AF_INET6) {
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, host, sizeof(host));
			port = ntohs(((const struct sockaddr_in6 *)peer)->sin6_port);
		}
	}
	snprintf(x->peer_str, sizeof(x->peer_str), peer && peer->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
		 host, port);
}

uint16_t rpc_xprt_peer_port(const struct rpc_xprt *x)
{
	if (x->peer.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&x->peer)->sin_port);
	if (x->peer.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&x->peer)->sin6_port);
	return 0;
}

static void conn_release(struct rpc_xprt *x)
{
	struct conn *c = (struct conn *)x;

	rpc_rm_free(&c->rm);
	free(c->rbuf);
	free(c);
}

static void conn_complete(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc);
static void conn_close_req(struct rpc_xprt *x);
static int conn_send_call(struct rpc_xprt *x, uint8_t *buf, size_t len);

static const struct rpc_xprt_ops conn_ops = {
	.release = conn_release,
	.complete = conn_complete,
	.close = conn_close_req,
	.send_call = conn_send_call,
};

/* ---- submission helpers (ring thread) ------------------------------------ */

static struct io_uring_sqe *get_sqe(struct rpc_transport *t)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);

	if (!sqe) {
		io_uring_submit(&t->ring);
		sqe = io_uring_get_sqe(&t->ring);
	}
	return sqe;
}

static void arm_accept(struct rpc_transport *t)
{
	struct io_uring_sqe *sqe = get_sqe(t);

	if (!sqe)
		return;
	io_uring_prep_multishot_accept(sqe, t->lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data(sqe, &t->accept_op);
	t->accept_armed = true;
}

static void arm_wake(struct rpc_transport *t)
{
	struct io_uring_sqe *sqe = get_sqe(t);

	if (!sqe)
		return;
	io_uring_prep_read(sqe, t->efd, &t->efd_val, sizeof(t->efd_val), 0);
	io_uring_sqe_set_data(sqe, &t->wake_op);
}

static void arm_timer(struct rpc_transport *t)
{
	struct io_uring_sqe *sqe = get_sqe(t);

	if (!sqe)
		return;
	t->tick.tv_sec = (long long)(t->tick_ns / NS_PER_SEC);
	t->tick.tv_nsec = (long long)(t->tick_ns % NS_PER_SEC);
	io_uring_prep_timeout(sqe, &t->tick, 0, 0);
	io_uring_sqe_set_data(sqe, &t->timer_op);
	t->timer_armed = true;
}

static void arm_recv(struct conn *c)
{
	struct io_uring_sqe *sqe;

	if (c->recv_armed || c->closing)
		return;
	sqe = get_sqe(c->t);
	if (!sqe)
		return;
	c->roff = c->rlen = 0;
	io_uring_prep_recv(sqe, c->fd, c->rbuf, RBUF_SIZE, 0);
	io_uring_sqe_set_data(sqe, &c->recv_op);
	c->recv_armed = true;
}

static void arm_send(struct conn *c)
{
	struct io_uring_sqe *sqe;
	struct out *o = c->sq_head;

	if (c->send_armed || !o || c->closing)
		return;
	sqe = get_sqe(c->t);
	if (!sqe)
		return;
	io_uring_prep_send(sqe, c->fd, o->buf + c->sq_done, o->len - c->sq_done, MSG_NOSIGNAL);
	io_uring_sqe_set_data(sqe, &c->send_op);
	c->send_armed = true;
}

/* May this connection's next request be read? */
static bool conn_can_read(const struct conn *c)
{
	return c->inflight < c->t->p.max_inflight && c->sq_bytes < c->t->p.max_queued;
}

/* TCP_INFO of @c's socket; false if the kernel would not say. */
static bool conn_tcp_info(const struct conn *c, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	if (c->fd < 0 || getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, ti, &len) < 0)
		return false;
	/* kernels before 4.1 do not have the byte counters: no ACK is ever
	 * seen then, and the DRC keeps entries until the size bound or expiry */
	return len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti->tcpi_bytes_received);
}

/* Publish what the peer's TCP has acknowledged, if anyone cares. */
static void conn_sample_acked(struct conn *c)
{
	struct tcp_info ti;

	if (!atomic_load_explicit(&c->x.drc_count, memory_order_relaxed) || !conn_tcp_info(c, &ti))
		return;
	if (ti.tcpi_bytes_acked > atomic_load_explicit(&c->x.tx_acked, memory_order_relaxed))
		atomic_store_explicit(&c->x.tx_acked, ti.tcpi_bytes_acked, memory_order_release);
}

static void out_free(struct out *o)
{
	drc_entry_put(o->drc);
	free(o->buf);
	rpc_xprt_put(&o->c->x);
	free(o);
}

/* ---- per-host accounting (ring thread) ----------------------------------- */

static void host_key(const struct sockaddr_storage *ss, socklen_t sl, uint8_t key[17])
{
	memset(key, 0, 17);
	if (sl && ss->ss_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (sl && ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = 4;
			memcpy(key + 1, a->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a, 16);
		}
	}
}

static unsigned int host_hash(const uint8_t key[17])
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % HOST_BUCKETS;
}

/* The entry for @key, made if need be (NULL: no memory). */
static struct host *host_get(struct rpc_transport *t, const uint8_t key[17])
{
	struct host **b = &t->hosts[host_hash(key)], *h;

	for (h = *b; h; h = h->next)
		if (!memcmp(h->key, key, 17))
			return h;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	memcpy(h->key, key, 17);
	h->next = *b;
	*b = h;
	return h;
}

/* One connection of @h fewer; the entry goes with its last (or if it never had one). */
static void host_put(struct rpc_transport *t, struct host *h)
{
	struct host **pp;

	if (!h || (h->conns && --h->conns))
		return;
	for (pp = &t->hosts[host_hash(h->key)]; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			free(h);
			return;
		}
	}
}

/* A connection over a limit: close it, and say so at most once a second. */
static void refuse(struct rpc_transport *t, int fd, const struct sockaddr_storage *ss, socklen_t sl,
		   const char *why)
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint64_t now = now_mono_ns();

	close(fd);
	if (sl && ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
	else if (sl && ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof(host));
	t->refused++;
	if (now - t->refused_log_ns < NS_PER_SEC)
		return;
	derr(RPC, "connection from %s refused: %s (%lu refused in the last %.0f s)", host, why, t->refused,
	     t->refused_log_ns ? (double)(now - t->refused_log_ns) / 1e9 : 0.0);
	t->refused_log_ns = now;
	t->refused = 0;
}

/* ---- connection lifetime (ring thread) ----------------------------------- */

static void conn_maybe_free(struct conn *c)
{
	struct rpc_transport *t = c->t;
	struct out *o;

	if (!c->closing || c->recv_armed || c->send_armed || c->dead)
		return;
	c->dead = true;
	while ((o = c->sq_head)) {
		c->sq_head = o->next;
		atomic_fetch_sub(&t->queued, o->len);
		out_free(o);
	}
	c->sq_tail = NULL;
	c->sq_bytes = 0;
	conn_sample_acked(c);    /* the last word on what the client has */
	rpc_xprt_fail_calls(&c->x, -ENOTCONN);   /* no reply to a call of ours comes now */
	close(c->fd);
	c->fd = -1;
	atomic_store_explicit(&c->x.closed_at, now_mono_ns(), memory_order_release);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	host_put(t, c->host);
	c->host = NULL;
	atomic_fetch_sub(&t->nconns, 1);
	dout(RPC, 5, "xprt %llu %s: closed", (unsigned long long)c->x.id, c->x.peer_str);
	rpc_xprt_put(&c->x);   /* the ring's reference */
}

static void conn_close(struct conn *c, const char *why)
{
	if (c->closing)
		return;
	if (why)
		dout(RPC, 1, "xprt %llu %s: closing: %s", (unsigned long long)c->x.id, c->x.peer_str, why);
	c->closing = true;
	shutdown(c->fd, SHUT_RDWR);
	if (c->recv_armed) {
		struct io_uring_sqe *sqe = get_sqe(c->t);
		if (sqe) {
			io_uring_prep_cancel(sqe, &c->recv_op, 0);
			io_uring_sqe_set_data(sqe, &c->t->ignore_op);
		}
	}
	if (c->send_armed) {     /* a send blocked on a full socket buffer */
		struct io_uring_sqe *sqe = get_sqe(c->t);
		if (sqe) {
			io_uring_prep_cancel(sqe, &c->send_op, 0);
			io_uring_sqe_set_data(sqe, &c->t->ignore_op);
		}
	}
	conn_maybe_free(c);
}

/* Parse what is buffered; hand complete records to the service. */
static void conn_input(struct conn *c)
{
	struct rpc_transport *t = c->t;
	uint64_t now;
	size_t used, len;
	uint8_t *rec;
	int r;
	char why[160];

	while (!c->closing && c->roff < c->rlen && conn_can_read(c)) {
		bool idle = rpc_rm_idle(&c->rm);

		r = rpc_rm_feed(&c->rm, c->rbuf + c->roff, c->rlen - c->roff, &used);
		c->roff += used;
		if (r == 0) {
			if (idle && used)    /* a record begun: its deadline runs */
				c->rec_start_ns = now_mono_ns();
			break;
		}
		if (r < 0) {
			if (r == -EMSGSIZE) {
				snprintf(why, sizeof(why), "record fragment of %u bytes over the limit of %zu bytes",
					 c->rm.bad_mark, t->p.max_record);
				derr(RPC, "xprt %llu %s: closing: %s", (unsigned long long)c->x.id, c->x.peer_str,
				     why);
				conn_close(c, NULL);
			} else if (r == -E2BIG) {
				derr(RPC, "xprt %llu %s: closing: a record of more than %u fragments "
				     "(nfs_max_record_fragments)", (unsigned long long)c->x.id, c->x.peer_str,
				     t->p.max_frags);
				conn_close(c, NULL);
			} else {
				conn_close(c, "out of memory");
			}
			return;
		}
		c->rec_start_ns = 0;
		rec = rpc_rm_take(&c->rm, &len);
		if (!rec) {
			conn_close(c, "out of memory");
			return;
		}
		now = now_mono_ns();
		c->active_ns = now;
		if (len >= 8 && xdr_load_u32(rec + 4) == RPC_REPLY) {
			/* the answer to a call of ours (back channel): no request */
			rpc_xprt_deliver_reply(&c->x, rec, len);
			continue;
		}
		atomic_store_explicit(&c->x.rx_parsed, c->rx_base + c->roff, memory_order_release);
		atomic_store_explicit(&c->x.last_recv, now, memory_order_release);
		c->active_ns = now;
		c->inflight++;
		rpc_svc_enqueue(t->svc, rpc_xprt_get(&c->x), rec, len, now);
	}
	/* paused (in-flight or queued-bytes limit): the kernel's socket buffer
	 * holds the rest and TCP pushes back on the client */
	if (c->roff >= c->rlen && !c->closing && conn_can_read(c))
		arm_recv(c);
}

/* The accept failed for want of a file descriptor or memory: stop
 * accepting until the next tick (log once per burst). */
static void accept_pause(struct rpc_transport *t, int err)
{
	struct io_uring_sqe *sqe;

	if (!t->accept_fails++)
		derr(RPC, "accept: %s with %u connections open: accepting again from the next tick "
		     "(further failures are not logged until an accept succeeds)",
		     strerror(err), atomic_load(&t->nconns));
	t->accept_paused = true;
	if (t->accept_armed && (sqe = get_sqe(t))) {   /* multishot still armed */
		io_uring_prep_cancel(sqe, &t->accept_op, 0);
		io_uring_sqe_set_data(sqe, &t->ignore_op);
	}
}

static void on_accept(struct rpc_transport *t, struct io_uring_cqe *cqe)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct conn *c;
	struct host *h;
	uint8_t key[17];
	char why[96];
	int fd = cqe->res, one = 1;
	bool stopping;

	if (!(cqe->flags & IORING_CQE_F_MORE))
		t->accept_armed = false;
	pthread_mutex_lock(&t->lock);
	stopping = t->stopping;
	pthread_mutex_unlock(&t->lock);
	if (fd < 0) {
		if (!stopping && (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS || fd == -ENOMEM)) {
			accept_pause(t, -fd);
			return;
		}
		if (fd != -ECANCELED && !stopping)
			dout(RPC, 1, "accept: %s", strerror(-fd));
		goto rearm;
	}
	if (t->accept_fails) {
		dinfo(RPC, "accepting connections again after %lu failed accepts", t->accept_fails);
		t->accept_fails = 0;
	}
	if (stopping) {
		close(fd);
		return;
	}
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		sl = 0;
	if (atomic_load(&t->nconns) >= t->p.max_conns) {
		snprintf(why, sizeof(why), "nfs_max_conns (%u) reached", t->p.max_conns);
		refuse(t, fd, &ss, sl, why);
		goto rearm;
	}
	host_key(&ss, sl, key);
	h = host_get(t, key);
	if (h && t->p.max_conns_per_host && h->conns >= t->p.max_conns_per_host) {
		snprintf(why, sizeof(why), "nfs_max_conns_per_host (%u) reached for that address",
			 t->p.max_conns_per_host);
		refuse(t, fd, &ss, sl, why);
		goto rearm;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = calloc(1, sizeof(*c));
	if (c)
		c->rbuf = malloc(RBUF_SIZE);
	if (!c || !c->rbuf || !h) {
		if (c)
			free(c->rbuf);
		free(c);
		if (h && !h->conns)
			host_put(t, h);          /* drop the entry just made */
		close(fd);
		goto rearm;
	}
	h->conns++;
	rpc_xprt_init(&c->x, true, sl ? (struct sockaddr *)&ss : NULL, sl, &conn_ops);
	c->t = t;
	c->fd = fd;
	c->host = h;
	c->active_ns = now_mono_ns();
	c->recv_op = (struct ring_op){ OP_RECV, c };
	c->send_op = (struct ring_op){ OP_SEND, c };
	rpc_rm_init(&c->rm, t->p.max_record, t->p.max_frags);
	c->next = t->conns;
	if (t->conns)
		t->conns->prev = c;
	t->conns = c;
	atomic_fetch_add(&t->nconns, 1);
	dout(RPC, 5, "xprt %llu %s: accepted", (unsigned long long)c->x.id, c->x.peer_str);
	arm_recv(c);
rearm:
	if (!t->accept_armed && !stopping && !t->accept_paused)
		arm_accept(t);
}

static void on_recv(struct conn *c, int res)
{
	c->recv_armed = false;
	if (res <= 0 || c->closing) {
		if (!c->closing)
			conn_close(c, res == 0 ? NULL : strerror(-res));
		conn_maybe_free(c);
		return;
	}
	lg_uring_mark_defined(c->rbuf, (size_t)res);
	c->active_ns = now_mono_ns();
	c->roff = 0;
	c->rlen = (size_t)res;
	c->rx_base = c->rx_total;
	c->rx_total += (uint64_t)res;
	conn_sample_acked(c);    /* the ACKs that came with these bytes */
	conn_input(c);
}

static void on_send(struct conn *c, int res)
{
	struct out *o = c->sq_head;

	c->send_armed = false;
	if (res < 0 || c->closing || !o) {
		if (!c->closing)
			conn_close(c, strerror(-res));
		conn_maybe_free(c);
		return;
	}
	c->sq_done += (size_t)res;
	c->tx_total += (uint64_t)res;
	c->send_progress_ns = c->active_ns = now_mono_ns();
	if (c->sq_done >= o->len) {
		if (o->drc) {
			struct tcp_info ti;

			/* one send at a time: tx_total is this reply's end */
			if (conn_tcp_info(c, &ti))
				drc_reply_sent(o->drc, c->tx_total, ti.tcpi_bytes_received);
			else   /* never acknowledged: kept until the close's expiry */
				drc_reply_sent(o->drc, UINT64_MAX, UINT64_MAX);
			if (ti.tcpi_bytes_acked > atomic_load_explicit(&c->x.tx_acked, memory_order_relaxed))
				atomic_store_explicit(&c->x.tx_acked, ti.tcpi_bytes_acked, memory_order_release);
		}
		c->sq_head = o->next;
		if (!c->sq_head)
			c->sq_tail = NULL;
		c->sq_done = 0;
		c->sq_bytes -= o->len;
		atomic_fetch_sub(&c->t->queued, o->len);
		if (c->inflight && !o->call)
			c->inflight--;   /* this request is done */
		out_free(o);
	}
	if (c->sq_head)
		arm_send(c);
	else if (c->close_after_send)
		conn_close(c, NULL);
	if (!c->closing && !c->recv_armed && !c->close_after_send)
		conn_input(c);   /* resume a connection paused at a limit */
}

/* Replies handed back by workers. */
static void on_wake(struct rpc_transport *t)
{
	struct out *list, *o;
	struct conn *c;

	pthread_mutex_lock(&t->lock);
	list = t->pending;
	t->pending = t->pending_tail = NULL;
	pthread_mutex_unlock(&t->lock);
	while ((o = list)) {
		list = o->next;
		o->next = NULL;
		c = o->c;
		rpc_xprt_get(&c->x);             /* out_free() may drop the last other one */
		if (o->len == (size_t)-1) {      /* close request, not a completion */
			c->close_after_send = true;
			if (!c->sq_head)
				conn_close(c, NULL);
			out_free(o);
			rpc_xprt_put(&c->x);
			continue;
		}
		if (!o->buf || c->closing || c->fd < 0) {
			if (c->inflight && !o->call)
				c->inflight--;   /* nothing to send: done */
			out_free(o);         /* a call's waiter hears of the close */
		} else {
			/* in flight until on_send() has sent it all */
			if (c->sq_tail) {
				c->sq_tail->next = o;
			} else {
				c->sq_head = o;
				c->send_progress_ns = now_mono_ns();
			}
			c->sq_tail = o;
			c->sq_bytes += o->len;
			atomic_fetch_add(&t->queued, o->len);
			arm_send(c);
		}
		if (!c->closing && c->fd >= 0 && !c->recv_armed)
			conn_input(c);   /* resume a connection paused at max_inflight */
		rpc_xprt_put(&c->x);
	}
}

/* Timer tick: DRC pruning, idle and stuck connections, paused accepts. */
static void on_tick(struct rpc_transport *t)
{
	uint64_t now = now_mono_ns();
	struct conn *c, *next;
	char why[160];

	if (t->accept_paused) {
		t->accept_paused = false;
		if (!t->accept_armed)
			arm_accept(t);
	}
	for (c = t->conns; c; c = next) {
		next = c->next;          /* conn_close() may free c */
		if (c->closing)
			continue;
		conn_sample_acked(c);    /* ACKs that came without data: the next prune sees them */
		if (c->sq_head && t->p.send_timeout_ns && now - c->send_progress_ns > t->p.send_timeout_ns) {
			snprintf(why, sizeof(why), "%zu reply bytes unsent for %.1f s: the client is not reading",
				 c->sq_bytes, (double)(now - c->send_progress_ns) / 1e9);
			conn_close(c, why);
		} else if (t->p.record_timeout_ns && c->rec_start_ns &&
			   now - c->rec_start_ns > t->p.record_timeout_ns) {
			snprintf(why, sizeof(why), "a record begun %.1f s ago is still not whole (%zu bytes so far; "
				 "nfs_record_timeout)", (double)(now - c->rec_start_ns) / 1e9, c->rm.len);
			conn_close(c, why);
		} else if (t->p.idle_timeout_ns && !c->inflight && !c->sq_head &&
			   now - c->active_ns > t->p.idle_timeout_ns) {
			snprintf(why, sizeof(why), "idle for %.1f s", (double)(now - c->active_ns) / 1e9);
			conn_close(c, why);
		}
	}
	/* after the sampling above, so this prune sees the newest ACKs */
	if (now - t->last_svc_tick >= NS_PER_SEC - NS_PER_SEC / 20) {
		t->last_svc_tick = now;
		rpc_svc_tick(t->svc, now);
	}
}

static void *ring_thread(void *arg)
{
	struct rpc_transport *t = arg;
	struct io_uring_cqe *cqe;
	struct ring_op *op;
	unsigned int head, n;
	bool stopping = false, stop_done = false;
	struct conn *c, *next;

	arm_accept(t);
	arm_wake(t);
	arm_timer(t);
	for (;;) {
		lg_uring_submit_and_wait(&t->ring);   /* valgrind-safe */
		n = 0;
		io_uring_for_each_cqe(&t->ring, head, cqe) {
			n++;
			op = io_uring_cqe_get_data(cqe);
			if (!op)
				continue;
			switch (op->type) {
			case OP_ACCEPT:
				on_accept(t, cqe);
				break;
			case OP_RECV:
				/* the handlers may drop the ring's reference */
				rpc_xprt_get(&op->c->x);
				on_recv(op->c, cqe->res);
				rpc_xprt_put(&op->c->x);
				break;
			case OP_SEND:
				c = op->c;
				rpc_xprt_get(&c->x);
				on_send(c, cqe->res);
				rpc_xprt_put(&c->x);
				break;
			case OP_WAKE:
				on_wake(t);
				pthread_mutex_lock(&t->lock);
				stopping = t->stopping;
				pthread_mutex_unlock(&t->lock);
				if (!stopping)
					arm_wake(t);
				break;
			case OP_TIMER:
				t->timer_armed = false;
				if (!stopping) {
					on_tick(t);
					arm_timer(t);
				}
				break;
			case OP_IGNORE:
				break;
			}
		}
		io_uring_cq_advance(&t->ring, n);
		if (stopping && !stop_done) {
			struct io_uring_sqe *sqe;
			stop_done = true;
			shutdown(t->lfd, SHUT_RDWR);
			if (t->accept_armed && (sqe = get_sqe(t))) {
				io_uring_prep_cancel(sqe, &t->accept_op, 0);
				io_uring_sqe_set_data(sqe, &t->ignore_op);
			}
			if (t->timer_armed && (sqe = get_sqe(t))) {
				io_uring_prep_timeout_remove(sqe, (__u64)(uintptr_t)&t->timer_op, 0);
				io_uring_sqe_set_data(sqe, &t->ignore_op);
			}
			for (c = t->conns; c; c = next) {
				next = c->next;
				conn_close(c, NULL);
			}
		}
		if (stop_done && !t->conns && !t->accept_armed && !t->timer_armed)
			break;
	}
	return NULL;
}

/* ---- API --------------------------------------------------------------- */

static void push_pending(struct rpc_transport *t, struct out *o)
{
	uint64_t one = 1;
	bool was_empty;

	pthread_mutex_lock(&t->lock);
	was_empty = !t->pending;
	if (t->pending_tail)
		t->pending_tail->next = o;
	else
		t->pending = o;
	t->pending_tail = o;
	pthread_mutex_unlock(&t->lock);
	if (was_empty && write(t->efd, &one, sizeof(one)) < 0)
		derr(RPC, "eventfd write: %s", strerror(errno));
}

static void conn_complete(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc)
{
	struct conn *c = (struct conn *)x;
	struct out *o = calloc(1, sizeof(*o));

	if (!o) {
		/* cannot queue the completion: the connection would stay
		 * accounted busy; losing the reply is the lesser harm */
		derr(RPC, "xprt %llu: out of memory queueing a reply", (unsigned long long)x->id);
		free(buf);
		drc_entry_put(drc);
		rpc_xprt_put(x);
		return;
	}
	o->c = c;
	o->buf = buf;
	o->len = buf ? len : 0;
	o->drc = drc;
	push_pending(c->t, o);
}

/* A call of ours on the client's connection: queued behind its replies. */
static int conn_send_call(struct rpc_xprt *x, uint8_t *buf, size_t len)
{
	struct conn *c = (struct conn *)x;
	struct out *o;

	if (atomic_load_explicit(&x->closed_at, memory_order_acquire)) {
		free(buf);
		return -ENOTCONN;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		free(buf);
		return -ENOMEM;
	}
	o->c = c;
	o->buf = buf;
	o->len = len;
	o->call = true;
	rpc_xprt_get(x);         /* the out's, as a request's would be */
	push_pending(c->t, o);
	return 0;
}

static void conn_close_req(struct rpc_xprt *x)
{
	struct conn *c = (struct conn *)x;
	struct out *o = calloc(1, sizeof(*o));

	if (!o)
		return;
	o->c = c;
	o->len = (size_t)-1;
	rpc_xprt_get(x);
	push_pending(c->t, o);
}

static int parse_addr(const char *addr_port, struct addrinfo **res)
{
	char host[256];
	const char *colon, *h;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	size_t hl;
	int r;

	if (!addr_port)
		return -EINVAL;
	colon = strrchr(addr_port, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	h = addr_port;
	hl = (size_t)(colon - addr_port);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	r = getaddrinfo(hl ? host : NULL, colon + 1, &hints, res);
	if (r)
		return -EINVAL;
	return 0;
}

/* Every connection costs a descriptor: make room for max_conns of them
 * (raising the soft RLIMIT_NOFILE up to the hard one if need be), else
 * lower max_conns so that accept() never runs the process out of fds. */
static void fit_fd_limit(struct rpc_transport *t)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)t->p.max_conns + FD_RESERVE;
	unsigned int n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
		rlim_t old = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			dinfo(RPC, "raised the open-file limit from %llu to %llu for nfs_max_conns %u",
			      (unsigned long long)old, (unsigned long long)rl.rlim_cur, t->p.max_conns);
		else if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return;
		if (rl.rlim_cur >= want)
			return;
	}
	n = rl.rlim_cur > 2 * FD_RESERVE ? (unsigned int)(rl.rlim_cur - FD_RESERVE) : (unsigned int)(rl.rlim_cur / 2);
	if (!n)
		n = 1;
	derr(RPC, "nfs_max_conns %u does not fit the open-file limit %llu: serving at most %u connections",
	     t->p.max_conns, (unsigned long long)rl.rlim_cur, n);
	t->p.max_conns = n;
}

int rpc_transport_start(struct rpc_svc *svc, const struct rpc_svc_params *p, const char *addr_port,
			struct rpc_transport **out)
{
	struct rpc_transport *t;
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int r, one = 1;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->svc = svc;
	t->p = *p;
	t->lfd = t->efd = -1;
	t->accept_op.type = OP_ACCEPT;
	t->wake_op.type = OP_WAKE;
	t->timer_op.type = OP_TIMER;
	t->ignore_op.type = OP_IGNORE;
	t->tick_ns = NS_PER_SEC;
	if (t->p.idle_timeout_ns && t->p.idle_timeout_ns < 4 * t->tick_ns)
		t->tick_ns = t->p.idle_timeout_ns / 4;
	if (t->p.send_timeout_ns && t->p.send_timeout_ns < 4 * t->tick_ns)
		t->tick_ns = t->p.send_timeout_ns / 4;
	if (t->p.record_timeout_ns && t->p.record_timeout_ns < 4 * t->tick_ns)
		t->tick_ns = t->p.record_timeout_ns / 4;
	if (t->tick_ns < NS_PER_SEC / 20)
		t->tick_ns = NS_PER_SEC / 20;
	t->last_svc_tick = now_mono_ns();
	fit_fd_limit(t);
	if (t->p.max_conns_per_host >= t->p.max_conns)
		derr(RPC, "nfs_max_conns_per_host (%u) is not below nfs_max_conns (%u): one client address can "
		     "take every connection slot", t->p.max_conns_per_host, t->p.max_conns);
	pthread_mutex_init(&t->lock, NULL);

	r = parse_addr(addr_port, &ai);
	if (r) {
		derr(RPC, "cannot parse listen address '%s' (want ADDR:PORT)", addr_port ? addr_port : "");
		goto out_free;
	}
	t->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->lfd < 0) {
		r = -errno;
		goto out_ai;
	}
	setsockopt(t->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* SOMAXCONN (the kernel caps it at net.core.somaxconn), as nfsd: when
	 * every client reconnects at once (a gateway restart), a short accept
	 * queue drops SYNs and each dropped one costs its client a second or
	 * more of retransmit backoff */
	if (bind(t->lfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(t->lfd, SOMAXCONN) < 0) {
		r = -errno;
		derr(RPC, "cannot listen on %s: %s", addr_port, strerror(-r));
		goto out_ai;
	}
	if (getsockname(t->lfd, (struct sockaddr *)&ss, &sl) == 0) {
		t->listen_addr = ss;
		t->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							  : ((struct sockaddr_in *)&ss)->sin_port);
	}
	t->efd = eventfd(0, EFD_CLOEXEC);
	if (t->efd < 0) {
		r = -errno;
		goto out_ai;
	}
	r = io_uring_queue_init(RING_ENTRIES, &t->ring, 0);
	if (r < 0) {
		derr(RPC, "io_uring_queue_init: %s", strerror(-r));
		goto out_ai;
	}
	r = -pthread_create(&t->thread, NULL, ring_thread, t);
	if (r) {
		io_uring_queue_exit(&t->ring);
		goto out_ai;
	}
	t->thread_started = true;
	freeaddrinfo(ai);
	dinfo(RPC, "listening on %s (port %u)", addr_port, t->port);
	*out = t;
	return 0;

out_ai:
	freeaddrinfo(ai);
out_free:
	if (t->lfd >= 0)
		close(t->lfd);
	if (t->efd >= 0)
		close(t->efd);
	pthread_mutex_destroy(&t->lock);
	free(t);
	return r;
}

uint16_t rpc_transport_port(const struct rpc_transport *t)
{
	return t->port;
}

unsigned int rpc_transport_conns(struct rpc_transport *t)
{
	return atomic_load(&t->nconns);
}

size_t rpc_transport_queued(struct rpc_transport *t)
{
	return atomic_load(&t->queued);
}

unsigned int rpc_transport_max_conns(struct rpc_transport *t)
{
	return t->p.max_conns;
}

void rpc_transport_listen_addr(const struct rpc_transport *t, struct sockaddr_storage *ss)
{
	*ss = t->listen_addr;
}


void rpc_transport_stop(struct rpc_transport *t)
{
	uint64_t one = 1;

	if (!t || !t->thread_started)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_mutex_unlock(&t->lock);
	if (write(t->efd, &one, sizeof(one)) < 0)
		derr(RPC, "eventfd write: %s", strerror(errno));
	pthread_join(t->thread, NULL);
	t->thread_started = false;
}

void rpc_transport_destroy(struct rpc_transport *t)
{
	struct out *o;

	if (!t)
		return;
	rpc_transport_stop(t);
	/* completions that arrived after the ring thread left */
	while ((o = t->pending)) {
		t->pending = o->next;
		out_free(o);
	}
	io_uring_queue_exit(&t->ring);
	close(t->lfd);
	close(t->efd);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
