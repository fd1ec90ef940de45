/*
 * net.c - the MDS's TCP listener and connections.
 *
 * Event loops (mds_net_loops epoll threads, 2 by default): the acceptor
 * hands each connection to a loop (round robin), and the loop reads what
 * its ready sockets hold into each connection's buffer, serves the whole
 * frames with the connection's replies corked, and keeps a partial frame
 * for later.  Every request runs under the one namespace lock anyway, so
 * two loops give the decode and encode of different clients (the bulk of
 * the per-request CPU outside the lock) two cores; what a loop saves over
 * a thread per connection is the sleep and wake-up around each
 * synchronous request (the storm's context switches per request: 1.3 ->
 * 0.5).  A loop never waits: a request that must wait for the journal's
 * space is held with its connection unread (loop_hold) until the
 * journal's space_freed hook wakes the loop; a connection is served at
 * most LOOP_READS recvs per turn, so a peer that keeps its socket full
 * does not keep the loop from the others.  mds_net_loops=0 keeps the
 * older model, a reader thread per connection with blocking reads
 * (reader_main; the same frame checks and handlers).  mds_max_conns caps
 * the connections: those beyond it are closed at accept.  Writes to a
 * connection come from its loop or reader (UNSAFE and read replies), the
 * journal writer (SAFE replies) and
 * the ticker (STALE), serialised by the connection's send lock, and never
 * block: what the socket does not take at once is queued and written by
 * the flusher thread, which polls every connection with queued bytes and
 * only ever sends what a socket takes without blocking (a partial write
 * keeps its offset in the connection), so a client that stops reading, or
 * reads a byte now and then, delays nobody else.  A peer whose queue holds
 * more than 64 MiB, or does not empty within mds_send_drain_timeout of
 * its first queued byte, is dropped (its session stays: it reconnects and
 * replays).
 *
 * Reads have deadlines too: a peer that starts a message must finish it
 * within mds_frame_timeout; a connection must open (or reconnect) a session
 * within mds_conn_open_timeout; a session connection with no message for
 * 3 x mds_session_timeout (clients renew far more often) is closed.
 *
 * A peer that breaks the protocol (bad magic, version, oversized length,
 * bad crc, unknown or unexpected message type, a truncated payload, a bad
 * or missing MAC, a replayed or reordered frame) loses its connection with
 * a log line naming it and the reason; its session stays, for a reconnect.
 *
 * What a peer that has proven nothing can cost: every connection starts
 * with AUTH (auth.c), and until it has authenticated (or, without
 * auth_required, opened a session) its frames may carry at most
 * mds_unauth_max_payload bytes; the header's own crc is checked before the
 * payload's memory is reserved, and the payload buffer grows with what
 * actually arrives, so a peer that announces 16 MiB and stalls holds what
 * it sent, never what it announced, and only until mds_frame_timeout.  One
 * address may hold mds_max_conns_per_peer connections, below mds_max_conns,
 * so a host that opens connections in a loop locks out only itself.
 *
 * Shutdown (main.c): net_quiesce() closes the listener and stops requests
 * from running (m->draining) while the journal writes what it holds and
 * sends the SAFE replies; net_flush() waits, bounded, until every peer has
 * acknowledged what was sent; only then does net_stop() close them.
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
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/net.h"

#define OUTQ_MAX (64u << 20)   /* queued reply bytes beyond which a peer is dropped */
#define OUTQ_COMPACT (1u << 20) /* sent bytes at the front of outq worth a memmove */
#define RBUF_SIZE (256u << 10)  /* the reader's receive buffer: one recv takes many frames */
#define LOOP_READS 4            /* recvs of one connection per turn of its loop */
#define CORK_MAX (64u << 10)    /* corked replies beyond which they go out at once */

/* the connection whose reader this thread is (corking applies to its own replies) */
static __thread struct conn *reading_conn;

static int cork_out_locked(struct conn *c);
#define NS_PER_S 1000000000ull

static uint64_t secs_ns(enum cfg_opt_id opt)
{
	double v = cfg_double(opt);

	return v > 0 ? (uint64_t)(v * 1e9) : 0;
}

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
	mdsp_buf_free(&c->cork);
	mdsp_mac_free(c->tx_mac);
	mdsp_mac_free(c->rx_mac);
	memset(c->session_secret, 0, sizeof(c->session_secret));
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

/* Caller holds c->send_lock. */
static void conn_kill_locked(struct conn *c, const char *why, int err)
{
	lockdep_assert_held(&c->send_lock);
	if (c->dead)
		return;
	dout(MDS, 1, "peer %s: %s (%s): closing the connection", c->peer, why, strerror(-err));
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
}

/* Drop a peer that does not read: discard what is queued, and make the
 * final close() a reset, so the kernel does not keep the unsent bytes (and
 * the socket) around for a peer that may never read them.
 * Caller holds c->send_lock.
 */
static void conn_abort_locked(struct conn *c, const char *why, int err)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	lockdep_assert_held(&c->send_lock);
	if (c->dead)
		return;
	perf_inc(&c->mds->bad_peers, 1);
	derr(MDS, "peer %s: %s (%s): closing the connection", c->peer, why, strerror(-err));
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
	mdsp_buf_free(&c->outq);
	c->outq_off = 0;
}

/* Hand @c to the flusher.  Caller holds c->send_lock. */
static void flush_enqueue(struct conn *c)
{
	struct mds *m = c->mds;
	bool wake = false;
	char x = 1;

	pthread_mutex_lock(&m->flush_lock);
	if (!c->on_flush_list && !m->flush_stop) {
		conn_get(c);
		c->on_flush_list = true;
		c->fnext = NULL;
		*m->flush_tail = c;
		m->flush_tail = &c->fnext;
		wake = true;
	}
	pthread_mutex_unlock(&m->flush_lock);
	/* a full pipe already holds a wake-up */
	if (wake && write(m->flush_pipe[1], &x, 1) < 0 && errno != EAGAIN)
		derr(MDS, "flusher wake-up: %s", strerror(errno));
}

/* Send what the socket takes of @c's queue without blocking.  Returns 0
 * (the queue may still hold bytes) or -errno with @c killed.  Caller holds
 * c->send_lock. */
static int outq_push_locked(struct conn *c)
{
	ssize_t n;

	lockdep_assert_held(&c->send_lock);
	while (c->outq_off < c->outq.len) {
		n = send(c->fd, c->outq.data + c->outq_off, c->outq.len - c->outq_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->outq_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		n = n < 0 ? -errno : -EPIPE;
		conn_kill_locked(c, "send failed", (int)n);
		return (int)n;
	}
	if (c->outq_off == c->outq.len) {
		mdsp_buf_free(&c->outq);   /* it may have grown big: give it back */
		c->outq_off = 0;
		c->drain_deadline_ns = 0;
	} else if (c->outq_off >= OUTQ_COMPACT && c->outq_off * 2 >= c->outq.len) {
		memmove(c->outq.data, c->outq.data + c->outq_off, c->outq.len - c->outq_off);
		c->outq.len -= c->outq_off;
		c->outq_off = 0;
	}
	return 0;
}

/*
 * Sends never block the caller (a reader, the journal writer, the ticker):
 * what the socket does not take at once is queued on the connection and
 * written by the flusher thread, so one client that stops reading cannot
 * stall the SAFE replies of everyone else.  Frames keep their order.
 */
int conn_send_frame_locked(struct conn *c, struct mdsp_buf *b)
{
	uint8_t tag[MDSP_MAC_LEN];
	size_t tlen = c->tx_mac ? MDSP_MAC_LEN : 0, total, off = 0;
	ssize_t n;

	if (c->dead)
		return -EPIPE;
	if (b->len < MDSP_HDR_LEN)
		return -EINVAL;
	/* frames are encoded ahead of time; the connection's sequence number
	 * is only known now, and the header crc and the MAC cover it (every
	 * frame the MDS sends comes from mdsp_encode, unchanged since: its
	 * payload crc stands) */
	if (mdsp_frame_seal_encoded(b->data, b->len, ++c->out_seq, c->tx_mac, tag)) {
		conn_abort_locked(c, "cannot seal a frame (MAC)", -EIO);
		return -EIO;
	}
	total = b->len + tlen;
	/* corked (the reader has more requests in hand): gather it, the reader
	 * sends the batch with one syscall when it runs out of input */
	if (c->corked && reading_conn == c && c->cork.len + total <= CORK_MAX) {
		enc_bytes(&c->cork, b->data, b->len);
		if (tlen)
			enc_bytes(&c->cork, tag, tlen);
		if (c->cork.oom) {
			conn_abort_locked(c, "gathering a reply", -ENOMEM);
			return -ENOMEM;
		}
		return 0;
	}
	/* anything gathered goes first: an UNSAFE reply must precede its SAFE one */
	if (c->cork.len && cork_out_locked(c))
		return -EPIPE;
	if (c->outq_off == c->outq.len) {
		while (off < total) {
			struct iovec iov[2];
			struct msghdr mh = { .msg_iov = iov };

			if (off < b->len) {
				iov[0].iov_base = b->data + off;
				iov[0].iov_len = b->len - off;
				iov[1].iov_base = tag;
				iov[1].iov_len = tlen;
				mh.msg_iovlen = tlen ? 2 : 1;
			} else {
				iov[0].iov_base = tag + (off - b->len);
				iov[0].iov_len = total - off;
				mh.msg_iovlen = 1;
			}
			n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
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
		if (off == total)
			return 0;
	}
	if (c->outq.len - c->outq_off + (total - off) > OUTQ_MAX) {
		conn_abort_locked(c, "does not read its replies (64 MiB queued)", -ENOBUFS);
		return -ENOBUFS;
	}
	if (c->outq_off == c->outq.len) {
		uint64_t t = secs_ns(CFG_mds_send_drain_timeout);

		c->drain_deadline_ns = t ? now_mono_ns() + t : 0;
	}
	if (off < b->len) {
		enc_bytes(&c->outq, b->data + off, b->len - off);
		off = b->len;
	}
	if (off < total)
		enc_bytes(&c->outq, tag + (off - b->len), total - off);
	if (c->outq.oom) {
		conn_abort_locked(c, "queueing a reply", -ENOMEM);
		return -ENOMEM;
	}
	flush_enqueue(c);
	return 0;
}

/*
 * Send the gathered replies (c->cork) the way a frame is sent: straight to
 * the socket if nothing is queued before them, what it does not take (or
 * all of it, behind a queue) into outq for the flusher.  Return 0, or
 * -EPIPE with @c killed.  Caller holds c->send_lock.
 */
static int cork_out_locked(struct conn *c)
{
	size_t off = 0, len = c->cork.len;
	ssize_t n;

	lockdep_assert_held(&c->send_lock);
	if (c->dead) {
		c->cork.len = 0;
		return -EPIPE;
	}
	if (c->outq_off == c->outq.len) {
		while (off < len) {
			n = send(c->fd, c->cork.data + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0) {
				off += (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			c->cork.len = 0;
			conn_kill_locked(c, "send failed", n < 0 ? -errno : -EPIPE);
			return -EPIPE;
		}
	}
	if (off < len) {
		if (c->outq.len - c->outq_off + (len - off) > OUTQ_MAX) {
			c->cork.len = 0;
			conn_abort_locked(c, "does not read its replies (64 MiB queued)", -ENOBUFS);
			return -EPIPE;
		}
		if (c->outq_off == c->outq.len) {
			uint64_t t = secs_ns(CFG_mds_send_drain_timeout);

			c->drain_deadline_ns = t ? now_mono_ns() + t : 0;
		}
		enc_bytes(&c->outq, c->cork.data + off, len - off);
		if (c->outq.oom) {
			c->cork.len = 0;
			conn_abort_locked(c, "queueing a reply", -ENOMEM);
			return -EPIPE;
		}
		flush_enqueue(c);
	}
	c->cork.len = 0;                /* keep the buffer: the next batch reuses it */
	return 0;
}

/*
 * The reader is about to wait for input (or leaves): the replies it
 * gathered go out now, in one send; what the socket does not take goes to
 * the flusher as usual.
 */
void conn_uncork(struct conn *c)
{
	pthread_mutex_lock(&c->send_lock);
	c->corked = false;
	if (c->cork.len)
		cork_out_locked(c);
	pthread_mutex_unlock(&c->send_lock);
}

static void conn_cork(struct conn *c)
{
	pthread_mutex_lock(&c->send_lock);
	c->corked = true;
	pthread_mutex_unlock(&c->send_lock);
}

/*
 * The flusher: one poll() over every connection with queued bytes (and the
 * wake-up pipe).  A connection stays in its set until its queue is empty
 * (checked under its send lock, which is also where on_flush_list drops, so
 * a sender that queues more right after sees it off the list and queues it
 * again) or it is dead.  Nothing here blocks on a socket.
 */
static void *flusher_main(void *arg)
{
	struct mds *m = arg;
	struct conn **set = NULL, *c;
	struct pollfd *pfd = NULL;
	size_t n = 0, cap = 0, i, k;
	bool stop = false;
	char drain[64];

	for (;;) {
		uint64_t now, next = 0;
		int timeout, r;

		/* take the newly queued connections */
		pthread_mutex_lock(&m->flush_lock);
		stop = m->flush_stop;
		while ((c = m->flush_head)) {
			m->flush_head = c->fnext;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct conn **ns = realloc(set, ncap * sizeof(*ns));
				struct pollfd *np = ns ? realloc(pfd, (ncap + 1) * sizeof(*np)) : NULL;

				if (ns)
					set = ns;
				if (np)
					pfd = np;
				if (!ns || !np) {
					/* keep it queued; try again after a pause */
					m->flush_head = c;
					break;
				}
				cap = ncap;
			}
			set[n++] = c;
		}
		if (!m->flush_head)
			m->flush_tail = &m->flush_head;
		pthread_mutex_unlock(&m->flush_lock);
		if (stop)
			break;

		/* write what each socket takes; drop the done, the dead and the late */
		now = now_mono_ns();
		for (i = 0, k = 0; i < n; i++) {
			bool keep;

			c = set[i];
			pthread_mutex_lock(&c->send_lock);
			if (!c->dead && c->outq_off < c->outq.len)
				outq_push_locked(c);
			if (!c->dead && c->outq_off < c->outq.len && c->drain_deadline_ns && now >= c->drain_deadline_ns)
				conn_abort_locked(c, "reads its replies too slowly (queue not drained within "
						     "mds_send_drain_timeout)", -ETIMEDOUT);
			keep = !c->dead && c->outq_off < c->outq.len;
			if (keep) {
				if (c->drain_deadline_ns && (!next || c->drain_deadline_ns < next))
					next = c->drain_deadline_ns;
				pfd[k + 1].fd = c->fd;
				pfd[k + 1].events = POLLOUT;
				pfd[k + 1].revents = 0;
				set[k++] = c;
			} else {
				if (c->dead) {
					mdsp_buf_free(&c->outq);
					c->outq_off = 0;
				}
				pthread_mutex_lock(&m->flush_lock);
				c->on_flush_list = false;
				pthread_mutex_unlock(&m->flush_lock);
			}
			pthread_mutex_unlock(&c->send_lock);
			if (!keep)
				conn_put(c);
		}
		n = k;

		timeout = -1;
		if (next) {
			now = now_mono_ns();
			timeout = next <= now ? 0 : next - now > 3600 * NS_PER_S ? 3600 * 1000
										    : (int)((next - now) / 1000000 + 1);
		}
		if (!n && !pfd) {
			/* nothing to poll but the pipe */
			struct pollfd p = { .fd = m->flush_pipe[0], .events = POLLIN };

			r = poll(&p, 1, -1);
		} else if (pfd) {
			pfd[0].fd = m->flush_pipe[0];
			pfd[0].events = POLLIN;
			pfd[0].revents = 0;
			r = poll(pfd, n + 1, timeout);
		} else {
			r = 0;
			usleep(10000);
		}
		if (r < 0 && errno != EINTR) {
			derr(MDS, "flusher poll: %s", strerror(errno));
			usleep(10000);
		}
		while (read(m->flush_pipe[0], drain, sizeof(drain)) > 0)
			;
	}
	for (i = 0; i < n; i++) {
		c = set[i];
		pthread_mutex_lock(&c->send_lock);
		pthread_mutex_lock(&m->flush_lock);
		c->on_flush_list = false;
		pthread_mutex_unlock(&m->flush_lock);
		pthread_mutex_unlock(&c->send_lock);
		conn_put(c);
	}
	free(set);
	free(pfd);
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

/*
 * Whether a connection with no frame in progress has been quiet too long:
 * without a session, mds_conn_open_timeout after it was accepted; with one,
 * 3 x mds_session_timeout after its last message.  Otherwise *@until is when
 * to look again (0: never).  The namespace lock (for c->session_id) is only
 * taken when a deadline has passed, not on every wait.
 */
static bool idle_expired(struct conn *c, struct rdstate *st, uint64_t now, uint64_t *until, const char **why)
{
	struct mds *m = c->mds;
	uint64_t open_t = secs_ns(CFG_mds_conn_open_timeout), idle_t = 3 * secs_ns(CFG_mds_session_timeout);
	uint64_t open_until = open_t && !st->had_session ? c->accepted_ns + open_t : 0;
	uint64_t idle_until = idle_t ? st->last_msg_ns + idle_t : 0;
	uint64_t first = open_until && (!idle_until || open_until < idle_until) ? open_until : idle_until;
	uint64_t sid;

	*until = first;
	if (!first || now < first)
		return false;
	pthread_mutex_lock(&m->lock);
	sid = c->session_id;
	pthread_mutex_unlock(&m->lock);
	if (sid)
		st->had_session = true;
	if (!sid && open_until && now >= open_until) {
		*why = "opened no session within mds_conn_open_timeout";
		return true;
	}
	if (sid && idle_until && now >= idle_until) {
		*why = "sent nothing for 3 x mds_session_timeout";
		return true;
	}
	/* a session opened since (look at the idle limit from now on), or the
	 * idle limit passed on a connection still in its open grace period */
	*until = sid ? idle_until : open_until;
	return false;
}

/*
 * Read exactly @len bytes into @buf, the part of a frame that starts at
 * frame offset @done.  *got says how many arrived.  Returns 0 on success or
 * a clean EOF (got < len), -ETIMEDOUT when the peer went quiet: mid-frame
 * (@done + got > 0) past st->frame_until (set here when the frame's first
 * byte arrives: mds_frame_timeout for the whole frame), or, before a frame,
 * past the idle limits (see idle_expired()), -errno on an error.
 */
static int read_frame_part(struct conn *c, void *buf, size_t len, size_t done, struct rdstate *st, size_t *got,
			   const char **why)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint64_t frame_t = secs_ns(CFG_mds_frame_timeout), until, now;
	size_t n = 0, k;
	ssize_t r;

	while (n < len) {
		/* first what an earlier recv brought along */
		if (c->rstart < c->rend) {
			k = c->rend - c->rstart < len - n ? c->rend - c->rstart : len - n;
			memcpy((uint8_t *)buf + n, c->rbuf + c->rstart, k);
			c->rstart += k;
			if (!done && !n && frame_t)
				st->frame_until = now_mono_ns() + frame_t;   /* the frame started */
			n += k;
			continue;
		}
		/* then the socket: big parts straight into @buf, the rest through
		 * the buffer, so one recv takes every frame that has arrived */
		if (len - n >= c->rcap || !c->rbuf) {
			r = recv(c->fd, (uint8_t *)buf + n, len - n, MSG_DONTWAIT);
		} else {
			if (c->rdrained) {
				/* the last recv took all the socket held: a recv
				 * now would most likely find nothing (a syscall per
				 * request of a client that waits for each reply), so
				 * send the replies and wait for input first */
				c->rdrained = false;
				goto wait;
			}
			c->rstart = c->rend = 0;
			r = recv(c->fd, c->rbuf, c->rcap, MSG_DONTWAIT);
			if (r > 0) {
				c->rend = (size_t)r;
				c->rdrained = (size_t)r < c->rcap;
				r = 0;
				conn_cork(c);
				continue;
			}
			if (r == 0)
				break;
		}
		if (r == 0)
			break;
		if (r > 0) {
			n += (size_t)r;
			if (!done && n == (size_t)r && frame_t)
				st->frame_until = now_mono_ns() + frame_t;   /* the frame started */
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			*got = n;
			return -errno;
		}
wait:
		for (;;) {
			int timeout = -1;

			now = now_mono_ns();
			until = 0;
			if (done + n) {
				if (st->frame_until && now >= st->frame_until) {
					*why = "stalled mid-message for longer than mds_frame_timeout";
					*got = n;
					return -ETIMEDOUT;
				}
				until = st->frame_until;
			} else if (idle_expired(c, st, now, &until, why)) {
				*got = n;
				return -ETIMEDOUT;
			}
			if (until)
				timeout = until - now > 3600 * NS_PER_S ? 3600 * 1000 : (int)((until - now) / 1000000 + 1);
			conn_uncork(c);         /* out of input: the replies go out before we wait */
			r = poll(&p, 1, timeout);
			if (r > 0 || (r < 0 && errno != EINTR))
				break;
		}
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
	if (c->auth != CONN_AUTH_DONE) {
		derr(MDS, "peer %s: refused an admin command over the MDS port: the connection is not "
			  "authenticated", c->peer);
		rep.command_reply.result = -EACCES;
		rep.command_reply.json = (char *)"{\"error\":\"admin commands over the MDS port need an "
						 "authenticated connection (a client key: client_keyring)\"}";
		conn_send_msg(c, &rep);
		return;
	}
	rep.command_reply.result = m->net_ops->command(m, cmd->json ? cmd->json : "{}", &out);
	if (rep.command_reply.result == -EPERM)
		derr(MDS, "peer %s: refused an admin command over the MDS port (only read-only ones run here): %s",
		     c->peer, out ? out : "");
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

/*
 * Read the @len-byte payload of a frame into *@buf, which grows with what
 * arrives (from 64 KiB, doubling), never straight to what the header
 * announced: a peer that stalls holds the memory it filled, not more.
 */
static int read_payload(struct conn *c, uint8_t **buf, uint32_t len, struct rdstate *st, size_t *got,
			const char **why)
{
	size_t have = 0, cap = 0, part;
	uint8_t *p = NULL;
	int r = 0;

	*got = 0;
	*buf = NULL;
	if (!len) {
		*buf = malloc(1);
		return *buf ? 0 : -ENOMEM;
	}
	while (have < len) {
		if (have == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			uint8_t *np;

			if (ncap > len)
				ncap = len;
			np = realloc(p, ncap);
			if (!np) {
				r = -ENOMEM;
				break;
			}
			p = np;
			cap = ncap;
		}
		r = read_frame_part(c, p + have, cap - have, MDSP_HDR_LEN + have, st, &part, why);
		have += part;
		if (r || have < cap)
			break;
	}
	*got = have;
	*buf = p;
	return r;
}

/* A connection is trusted with full-size frames once it has proven its key,
 * or, where auth_required is off, once it has a session, and for the
 * SESSION frame that opens or resumes it (a RECONNECT re-asserts every cap
 * the client holds: it can be big). */
static bool conn_trusted(struct conn *c, const struct rdstate *st, const struct mdsp_hdr *h)
{
	if (c->auth == CONN_AUTH_DONE)
		return true;
	return c->auth == CONN_AUTH_UNAUTHENTICATED && (st->had_session || h->type == MDSP_MSG_SESSION);
}

/*
 * A frame's header, decoded from @hdr into @h and checked against what the
 * connection may send (its length bound before it authenticated, the MAC
 * flag).  0, or -1 with the peer told off (the caller closes).
 */
static int frame_hdr_check(struct conn *c, const struct rdstate *st, const uint8_t *hdr, struct mdsp_hdr *h)
{
	struct mds *m = c->mds;
	const char *why = NULL;
	uint64_t limit;
	int r;

	/* the header's own crc: its length can be trusted from here on */
	r = mdsp_decode_hdr(hdr, h, &why);
	if (r) {
		bad_peer(m, c, "bad frame header: %s", why ? why : strerror(-r));
		return -1;
	}
	limit = conn_trusted(c, st, h) ? MDSP_MAX_PAYLOAD : cfg_uint(CFG_mds_unauth_max_payload);
	if (h->len > limit) {
		bad_peer(m, c, "a %u-byte %s frame before the connection authenticated (mds_unauth_max_payload "
			 "is %" PRIu64 ")", h->len, mdsp_msg_type_name(h->type), limit);
		return -1;
	}
	if (!c->rx_mac != !(h->flags & MDSP_FRAME_MAC)) {
		bad_peer(m, c, c->rx_mac ? "a frame without a MAC on an authenticated connection"
					 : "a frame with a MAC before the connection authenticated");
		return -1;
	}
	return 0;
}

/*
 * A whole frame arrived (its header checked by frame_hdr_check): verify its
 * MAC, decode it and hand it to the layers.  0, -1: close the connection
 * (the reason is logged), or 1 (an event loop's connection only): a request
 * that would wait for the journal is in c->held, not run.
 */
static int frame_handle(struct conn *c, struct rdstate *st, const struct mdsp_hdr *h, const uint8_t *hdr,
			const uint8_t *payload, const uint8_t *tag)
{
	struct mds *m = c->mds;
	struct mdsp_msg msg;
	const char *why = NULL;
	int r;

	st->last_msg_ns = now_mono_ns();
	if (c->rx_mac) {
		r = mdsp_frame_verify(c->rx_mac, h, hdr, payload, tag, &c->in_seq, &why);
		if (r) {
			bad_peer(m, c, "%s (seq %" PRIu64 ", expected %" PRIu64 ")", why, h->seq, c->in_seq + 1);
			return -1;
		}
	} else {
		c->in_seq = h->seq;
	}
	r = mdsp_decode_payload(h, payload, h->len, &msg, &why);
	if (r == -EOPNOTSUPP) {
		bad_peer(m, c, "unknown message type %u", h->type);
		return -1;
	}
	if (r) {
		bad_peer(m, c, "bad %s message: %s", mdsp_msg_type_name(h->type), why ? why : strerror(-r));
		return -1;
	}
	if (msg.type == MDSP_MSG_AUTH) {
		r = m->net_ops->auth(m, c, &msg.auth);
		mdsp_msg_free(&msg);
		return r ? -1 : 0;
	}
	if (c->auth == CONN_AUTH_NONE || c->auth == CONN_AUTH_CHALLENGED) {
		bad_peer(m, c, "a %s message before authentication (%s)", mdsp_msg_type_name(msg.type),
			 c->auth == CONN_AUTH_NONE ? "AUTH HELLO comes first: a loligo client older than this mds?"
						   : "AUTH PROOF expected");
		mdsp_msg_free(&msg);
		return -1;
	}
	switch (msg.type) {
	case MDSP_MSG_SESSION:
		m->net_ops->session(m, c, &msg.session);
		if (!st->had_session) {
			pthread_mutex_lock(&m->lock);
			st->had_session = c->session_id != 0;
			pthread_mutex_unlock(&m->lock);
		}
		break;
	case MDSP_MSG_REQUEST:
		if (c->loop && m->net_ops->request_must_wait(m, &msg)) {
			/* an event loop does not wait: it holds the request, and
			 * the connection, until the journal has room */
			c->held = malloc(sizeof(*c->held));
			if (!c->held) {
				mdsp_msg_free(&msg);
				derr(MDS, "peer %s: no memory to hold a request: closing the connection", c->peer);
				return -1;
			}
			*c->held = msg;
			c->held_w = m->net_ops->request_hold(m, c, c->held);
			return 1;
		}
		m->net_ops->request(m, c, &msg);
		break;
	case MDSP_MSG_COMMAND:
		command_handle(m, c, &msg.command);
		break;
	case MDSP_MSG_CAPS:
		m->net_ops->caps(m, c, &msg.caps);
		break;
	default:
		bad_peer(m, c, "unexpected %s message from a client", mdsp_msg_type_name(msg.type));
		mdsp_msg_free(&msg);
		return -1;
	}
	mdsp_msg_free(&msg);
	return 0;
}

/* Whether @c was killed on the send side (a peer that does not read). */
static bool conn_dead(struct conn *c)
{
	bool r;

	pthread_mutex_lock(&c->send_lock);
	r = c->dead;
	pthread_mutex_unlock(&c->send_lock);
	return r;
}

/* Give @c the receive buffer @buf of @cap bytes (NULL, 0: none), keeping
 * the sum over connections (perf mds_net.rbuf_bytes) true. */
static void conn_rbuf_set(struct conn *c, uint8_t *buf, size_t cap)
{
	atomic_fetch_add_explicit(&c->mds->net_rbuf_bytes, (uint64_t)cap - (uint64_t)c->rcap, memory_order_relaxed);
	c->rbuf = buf;
	c->rcap = cap;
}

/* A connection's first receive buffer: false when there is no memory. */
static bool conn_rbuf_alloc(struct conn *c)
{
	uint8_t *b = malloc(RBUF_SIZE);

	conn_rbuf_set(c, b, b ? RBUF_SIZE : 0);
	return b;
}

/* The end of a connection's reading: the layers forget it, and the reaper
 * drops it (it must not be touched after this). */
static void conn_finish(struct conn *c)
{
	struct mds *m = c->mds;

	conn_uncork(c);
	free(c->rbuf);
	conn_rbuf_set(c, NULL, 0);
	c->rstart = c->rend = 0;
	m->net_ops->conn_closed(m, c);
	conn_shutdown(c);
	pthread_mutex_lock(&m->conns_lock);
	c->exited = true;
	m->nconns--;
	pthread_mutex_unlock(&m->conns_lock);
}

static void *reader_main(void *arg)
{
	struct conn *c = arg;
	struct mds *m = c->mds;
	uint8_t hdr[MDSP_HDR_LEN], tag[MDSP_MAC_LEN];
	uint8_t *payload = NULL;
	struct mdsp_hdr h;
	const char *why = NULL;
	struct rdstate *st = &c->rd;
	size_t got;
	int r;

	dout(MDS, 1, "connection from %s", c->peer);
	reading_conn = c;
	conn_rbuf_alloc(c);
	for (;;) {
		/* a connection killed on the send side (a peer that does not
		 * read) is done: after shutdown(SHUT_RD) the socket still
		 * delivers what the peer keeps sending, so without this its
		 * requests would run on with nowhere to send the replies */
		if (conn_dead(c)) {
			dout(MDS, 1, "peer %s: connection closed on the send side: stopping its reader", c->peer);
			break;
		}
		why = NULL;
		st->frame_until = 0;
		r = read_frame_part(c, hdr, sizeof(hdr), 0, st, &got, &why);
		if (atomic_load(&m->stopping))
			break;
		if (r == -ETIMEDOUT) {
			perf_inc(&m->bad_peers, 1);
			if (got)
				derr(MDS, "peer %s: %s (%zu of %d header bytes): closing the connection", c->peer, why,
				     got, MDSP_HDR_LEN);
			else
				derr(MDS, "peer %s: %s: closing the connection", c->peer, why);
			break;
		}
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
		if (frame_hdr_check(c, st, hdr, &h))
			break;
		r = read_payload(c, &payload, h.len, st, &got, &why);
		if (!r && got == h.len && c->rx_mac) {
			size_t tgot = 0;

			r = read_frame_part(c, tag, sizeof(tag), MDSP_HDR_LEN + h.len, st, &tgot, &why);
			if (!r && tgot < sizeof(tag))
				got = 0;        /* short: reported as a disconnect below */
		}
		if (r == -ENOMEM) {
			derr(MDS, "peer %s: no memory for a %u-byte message: closing the connection", c->peer, h.len);
			break;
		}
		if (r || got < h.len) {
			if (atomic_load(&m->stopping))
				break;
			if (r == -ETIMEDOUT)
				bad_peer(m, c, "%s (%zu of %u payload bytes)", why, got, h.len);
			else
				bad_peer(m, c, "disconnected mid-message (%zu of %u payload bytes)", got, h.len);
			break;
		}
		r = frame_handle(c, st, &h, hdr, payload, tag);
		free(payload);
		payload = NULL;
		if (r)
			break;
	}
	free(payload);
	conn_finish(c);
	return NULL;
}

/*
 * Event loops (mds_net_loops > 0): each of a few threads serves many
 * connections through one epoll set, instead of a thread per connection
 * that sleeps in poll() after each request of a synchronous client and is
 * woken for the next.  A loop reads what each ready socket holds, runs the
 * whole frames it finds (the same checks and handlers as a reader thread:
 * frame_hdr_check, frame_handle) with the connection's replies corked, and
 * keeps a partial frame in the connection's buffer, which grows with what
 * arrives up to the frame's checked length.  Deadlines are the reader's:
 * a frame in progress must complete within mds_frame_timeout, an idle
 * connection is closed by idle_expired(); the loop looks at them when it
 * wakes, and sleeps no longer than the nearest.
 *
 * What a request does on a loop's time, it does for the loop's other
 * connections too.  So nothing waits there: a request that would wait for
 * the journal's space is held (loop_hold; its expiry is the ticker's), and
 * what still blocks is a store read of cold metadata (which holds the
 * namespace lock anyway) and a reclaim's blocklist write.
 */
struct netloop {
	struct mds *m;
	pthread_t th;
	int epfd, evfd;
	pthread_mutex_t lock;         /* a leaf: incoming */
	struct conn *incoming;        /* accepted, not yet taken by the loop (lock) */
	struct conn *conns;           /* the loop thread's own, through lnext */
	struct conn *held;            /* the loop thread's own, through hnext: holding a request */
	_Atomic unsigned nheld;       /* how many: the journal's space hook wakes the loop */
	bool started;
};

static int loop_serve(struct conn *c);

/* Wake @l: it takes what the acceptor handed over and looks at what it holds. */
static void loop_wake(struct netloop *l)
{
	uint64_t one = 1;

	if (write(l->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		derr(MDS, "event loop wake-up: %s", strerror(errno));
}

/* Stop reading @c while it holds a request; the journal's space wakes us.
 * A peer that goes away meanwhile is still noticed (RDHUP, HUP, ERR). */
static void loop_hold(struct netloop *l, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = c };

	epoll_ctl(l->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->hnext = l->held;
	l->held = c;
	atomic_fetch_add(&l->nheld, 1);
}

static void held_drop(struct netloop *l, struct conn *c)
{
	struct conn **pp;

	for (pp = &l->held; *pp; pp = &(*pp)->hnext)
		if (*pp == c) {
			*pp = c->hnext;
			atomic_fetch_sub(&l->nheld, 1);
			break;
		}
	if (c->held) {
		mdsp_msg_free(c->held);
		free(c->held);
		c->held = NULL;
	}
	if (c->held_w) {
		l->m->net_ops->request_unhold(l->m, c->held_w);
		c->held_w = NULL;
	}
}

static void loop_close(struct netloop *l, struct conn *c)
{
	struct conn **pp;

	epoll_ctl(l->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	held_drop(l, c);
	for (pp = &l->conns; *pp; pp = &(*pp)->lnext)
		if (*pp == c) {
			*pp = c->lnext;
			break;
		}
	conn_finish(c);
}

/* A buffer grown for a big frame goes back to RBUF_SIZE once that frame
 * is served (empty): not kept at its peak for the connection's life. */
static void loop_shrink(struct conn *c)
{
	uint8_t *nb;

	if (c->rcap <= RBUF_SIZE)
		return;
	nb = realloc(c->rbuf, RBUF_SIZE);
	if (nb)
		conn_rbuf_set(c, nb, RBUF_SIZE);
}

/* Make room in @c's buffer for what is due: the rest of a frame whose
 * length is known, or at least a header.  0 or -ENOMEM. */
static int loop_room(struct conn *c)
{
	size_t want = c->rd_need ? c->rd_need : MDSP_HDR_LEN, ncap;
	uint8_t *nb;

	if (c->rstart && (c->rstart == c->rend || c->rcap - c->rend < want)) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->rend < c->rcap)
		return 0;
	/* full, and a frame bigger than the buffer is in progress: grow by
	 * what arrived (doubling), never straight to what was announced */
	ncap = c->rcap * 2 < want ? c->rcap * 2 : want;
	if (ncap <= c->rcap)
		return 0;
	nb = realloc(c->rbuf, ncap);
	if (!nb)
		return -ENOMEM;
	conn_rbuf_set(c, nb, ncap);
	return 0;
}

/*
 * Serve @c: what its socket holds, and every whole frame in it.  0, or -1
 * when it is to be closed (why is logged).
 */
static int loop_serve(struct conn *c)
{
	struct mds *m = c->mds;
	struct mdsp_hdr h;
	uint64_t frame_t = secs_ns(CFG_mds_frame_timeout);
	unsigned reads = 0;
	ssize_t n;
	int r = 0;

	reading_conn = c;
	for (;;) {
		if (conn_dead(c)) {
			dout(MDS, 1, "peer %s: connection closed on the send side: stopping its reader", c->peer);
			r = -1;
			break;
		}
		/* the whole frames that have arrived */
		while (c->rend - c->rstart >= MDSP_HDR_LEN) {
			const uint8_t *f = c->rbuf + c->rstart;
			size_t total;

			if (frame_hdr_check(c, &c->rd, f, &h)) {
				r = -1;
				goto out;
			}
			total = MDSP_HDR_LEN + (size_t)h.len + (c->rx_mac ? MDSP_MAC_LEN : 0);
			if (c->rend - c->rstart < total) {
				c->rd_need = (uint32_t)total;
				break;
			}
			conn_cork(c);
			r = frame_handle(c, &c->rd, &h, f, f + MDSP_HDR_LEN, f + MDSP_HDR_LEN + h.len);
			c->rstart += total;
			c->rd_need = 0;
			c->rd.frame_until = 0;
			if (r == 1) {
				/* held: the frames after it wait in the buffer */
				loop_hold(c->loop, c);
				/* space freed between "it must wait" and the hold
				 * woke no loop (nheld was 0): look again now that
				 * the next freeing will */
				if (!m->net_ops->request_must_wait(m, c->held))
					loop_wake(c->loop);
				r = 0;
				goto out;
			}
			if (r || atomic_load(&m->stopping)) {
				r = -1;
				goto out;
			}
		}
		if (c->rstart == c->rend) {
			c->rstart = c->rend = 0;
			loop_shrink(c);
		} else if (!c->rd.frame_until && frame_t) {
			c->rd.frame_until = now_mono_ns() + frame_t;   /* what is left began a frame */
		}
		/* a peer that keeps its socket full does not keep the loop:
		 * its whole frames are served, the rest waits for the next
		 * turn (epoll is level-triggered: it says again) */
		if (reads++ == LOOP_READS)
			break;
		if (loop_room(c)) {
			derr(MDS, "peer %s: no memory for a %u-byte message: closing the connection", c->peer,
			     c->rd_need);
			r = -1;
			break;
		}
		n = recv(c->fd, c->rbuf + c->rend, c->rcap - c->rend, MSG_DONTWAIT);
		if (n > 0) {
			if (c->rstart == c->rend && frame_t)
				c->rd.frame_until = now_mono_ns() + frame_t;   /* a frame started */
			c->rend += (size_t)n;
			continue;
		}
		if (n == 0) {
			if (c->rend > c->rstart)
				bad_peer(m, c, "disconnected mid-message (%zu bytes of a frame)", c->rend - c->rstart);
			else
				dout(MDS, 1, "peer %s closed the connection", c->peer);
			r = -1;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			dout(MDS, 1, "peer %s: read error (%s): closing the connection", c->peer, strerror(errno));
			r = -1;
		}
		break;
	}
out:
	conn_uncork(c);
	reading_conn = NULL;
	return r;
}

/* Close the loop's connections whose deadline passed; the nearest other
 * deadline in *@next (0: none). */
static void loop_deadlines(struct netloop *l, uint64_t now, uint64_t *next)
{
	struct conn *c, *nc;

	*next = 0;
	for (c = l->conns; c; c = nc) {
		const char *why = NULL;
		uint64_t until = 0;
		bool late;

		nc = c->lnext;
		if (c->held)
			continue;       /* the MDS holds it, not the peer: no deadline runs */
		if (c->rend > c->rstart) {
			until = c->rd.frame_until;
			late = until && now >= until;
			if (late) {
				bad_peer(l->m, c, "stalled mid-message for longer than mds_frame_timeout (%zu bytes "
					 "of a frame)", c->rend - c->rstart);
			}
		} else {
			late = idle_expired(c, &c->rd, now, &until, &why);
			if (late) {
				perf_inc(&l->m->bad_peers, 1);
				derr(MDS, "peer %s: %s: closing the connection", c->peer, why);
			}
		}
		if (late) {
			loop_close(l, c);
			continue;
		}
		if (until && (!*next || until < *next))
			*next = until;
	}
}

/* Run the requests held for the journal's space, where there is room now. */
static void loop_release(struct netloop *l)
{
	struct mds *m = l->m;
	struct conn *c, *next;

	for (c = l->held; c; c = next) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
		struct mdsp_msg *msg = c->held;

		next = c->hnext;
		if (m->net_ops->request_must_wait(m, msg))
			continue;
		c->held = NULL;
		held_drop(l, c);
		c->rd.last_msg_ns = now_mono_ns();      /* the hold was ours: its idle clock starts again */
		reading_conn = c;
		conn_cork(c);
		m->net_ops->request(m, c, msg);
		mdsp_msg_free(msg);
		free(msg);
		conn_uncork(c);
		reading_conn = NULL;
		/* then what arrived behind it, and the socket again */
		if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, c->fd, &ev) || loop_serve(c))
			loop_close(l, c);
	}
}

/* Take what the acceptor handed over. */
static void loop_take(struct netloop *l)
{
	struct conn *c, *in;
	uint64_t v;

	if (read(l->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		derr(MDS, "event loop wake-up: %s", strerror(errno));
	pthread_mutex_lock(&l->lock);
	in = l->incoming;
	l->incoming = NULL;
	pthread_mutex_unlock(&l->lock);
	while ((c = in)) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };

		in = c->lnext;
		dout(MDS, 1, "connection from %s", c->peer);
		conn_rbuf_alloc(c);
		c->lnext = l->conns;
		l->conns = c;
		if (!c->rbuf || epoll_ctl(l->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
			derr(MDS, "peer %s: cannot serve it (%s): closing the connection", c->peer,
			     c->rbuf ? strerror(errno) : "out of memory");
			loop_close(l, c);
		}
	}
}

static void *loop_main(void *arg)
{
	struct netloop *l = arg;
	struct mds *m = l->m;
	struct epoll_event ev[64];
	uint64_t next_check = 0;

	for (;;) {
		uint64_t now = now_mono_ns(), next = 0;
		int timeout = -1, n, i;
		bool woke = false;

		if (atomic_load(&m->stopping))
			break;
		/* deadlines: at most every 100 ms, or when one is due */
		if (!next_check || now >= next_check) {
			loop_deadlines(l, now, &next);
			next_check = next && next < now + 100000000ull ? next : now + 100000000ull;
		}
		timeout = next_check <= now ? 0 : (int)((next_check - now) / 1000000 + 1);
		n = epoll_wait(l->epfd, ev, 64, timeout);
		if (n < 0 && errno != EINTR) {
			derr(MDS, "event loop: epoll_wait: %s", strerror(errno));
			usleep(10000);
			continue;
		}
		for (i = 0; i < n; i++) {
			struct conn *c = ev[i].data.ptr;

			if (!c) {
				woke = true;    /* after the others: it may close connections of ev[] */
				continue;
			}
			if (c->held) {
				/* not read while it holds a request (its frames keep
				 * their order); a peer gone meanwhile is closed (its
				 * request never ran: it sends it again, if it comes
				 * back) */
				if (ev[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
					loop_close(l, c);
				continue;
			}
			if (loop_serve(c))
				loop_close(l, c);
		}
		if (woke) {
			loop_take(l);
			if (l->held)
				loop_release(l);
		}
	}
	while (l->conns)
		loop_close(l, l->conns);
	return NULL;
}

static void loops_stop(struct mds *m)
{
	unsigned i;

	for (i = 0; i < m->nloops; i++) {
		struct netloop *l = &m->loops[i];

		if (l->started) {
			loop_wake(l);   /* it sees m->stopping */
			pthread_join(l->th, NULL);
			l->started = false;
		}
		if (l->epfd >= 0)
			close(l->epfd);
		l->epfd = -1;
		/* the journal's writer may call net_space_freed() until
		 * journal_stop(): it finds no eventfd (l->lock), and the array
		 * stays until net_free() */
		pthread_mutex_lock(&l->lock);
		if (l->evfd >= 0)
			close(l->evfd);
		l->evfd = -1;
		pthread_mutex_unlock(&l->lock);
	}
}

void net_free(struct mds *m)
{
	unsigned i;

	for (i = 0; i < m->nloops; i++)
		pthread_mutex_destroy(&m->loops[i].lock);
	free(m->loops);
	m->loops = NULL;
	m->nloops = 0;
}

static int loops_start(struct mds *m)
{
	unsigned n = (unsigned)cfg_uint(CFG_mds_net_loops), i;

	if (!n)
		return 0;
	m->loops = calloc(n, sizeof(*m->loops));
	if (!m->loops)
		return -ENOMEM;
	m->nloops = n;
	for (i = 0; i < n; i++) {
		m->loops[i].m = m;
		m->loops[i].epfd = m->loops[i].evfd = -1;
		pthread_mutex_init(&m->loops[i].lock, NULL);
	}
	for (i = 0; i < n; i++) {
		struct netloop *l = &m->loops[i];
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

		l->epfd = epoll_create1(EPOLL_CLOEXEC);
		l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev))
			return -errno;
		if (pthread_create(&l->th, NULL, loop_main, l))
			return -EAGAIN;
		l->started = true;
	}
	return 0;
}

void net_space_freed(struct mds *m)
{
	unsigned i;

	for (i = 0; i < m->nloops; i++) {
		struct netloop *l = &m->loops[i];

		if (!atomic_load(&l->nheld))
			continue;
		pthread_mutex_lock(&l->lock);
		if (l->evfd >= 0)
			loop_wake(l);
		pthread_mutex_unlock(&l->lock);
	}
}

/* Hand an accepted @c to a loop (round robin). */
static void loop_give(struct mds *m, struct conn *c)
{
	static unsigned rr;
	struct netloop *l = &m->loops[rr++ % m->nloops];

	c->loop = l;
	pthread_mutex_lock(&l->lock);
	c->lnext = l->incoming;
	l->incoming = c;
	pthread_mutex_unlock(&l->lock);
	loop_wake(l);
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
		if (!c->loop)
			pthread_join(c->thread, NULL);
		conn_put(c);
	}
}

/* "addr" and "addr:port" of an accepted peer. */
static void peer_name(const struct sockaddr_storage *ss, int fd, char *addr, size_t alen, char *peer, size_t plen)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(addr, alen, "%s", host);
		snprintf(peer, plen, "%s:%u", host, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(addr, alen, "%s", host);
		snprintf(peer, plen, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else {
		snprintf(addr, alen, "fd%d", fd);
		snprintf(peer, plen, "fd%d", fd);
	}
}

static void *acceptor_main(void *arg)
{
	struct mds *m = arg;
	struct pollfd p[2] = { { .fd = m->listen_fd, .events = POLLIN }, { .fd = m->stop_pipe[0], .events = POLLIN } };
	pthread_attr_t attr;
	uint64_t last_emfile_log = 0, last_full_log = 0, nrefused = 0, last_peer_log = 0, nrefused_peer = 0;

	/* readers need little stack; hundreds of sessions should not reserve
	 * 8 MiB of address space each */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 << 10);

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct conn *c;
		char addr[48], peer[64];
		int fd, one = 1, r;
		uint64_t max, per_peer, now;

		r = poll(p, 2, 1000);
		reap(m, false);
		if (atomic_load(&m->stopping) || (r > 0 && (p[1].revents & POLLIN)))
			break;
		if (r <= 0 || !(p[0].revents & POLLIN))
			continue;
		fd = accept4(m->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
				/* the connection stays in the backlog and poll() says
				 * so at once: back off instead of spinning, log now and
				 * then */
				now = now_mono_ns();
				if (!last_emfile_log || now - last_emfile_log >= 10 * NS_PER_S) {
					derr(MDS, "accept: %s: out of descriptors or memory; new connections wait "
						  "(lower mds_max_conns or raise the fd limit)", strerror(e));
					last_emfile_log = now;
				}
				usleep(100000);
			} else if (e != EINTR && e != EAGAIN && e != ECONNABORTED) {
				derr(MDS, "accept: %s", strerror(e));
			}
			continue;
		}
		peer_name(&ss, fd, addr, sizeof(addr), peer, sizeof(peer));
		max = cfg_uint(CFG_mds_max_conns);
		per_peer = cfg_uint(CFG_mds_max_conns_per_peer);
		pthread_mutex_lock(&m->conns_lock);
		r = max && m->nconns >= max;
		if (!r && per_peer) {
			uint64_t same = 0;

			for (c = m->conns; c; c = c->next)
				same += !c->exited && !strcmp(c->peer_addr, addr);
			r = same >= per_peer ? 2 : 0;
		}
		pthread_mutex_unlock(&m->conns_lock);
		if (r == 2) {
			now = now_mono_ns();
			nrefused_peer++;
			if (!last_peer_log || now - last_peer_log >= NS_PER_S) {
				derr(MDS, "peer %s: refused: mds_max_conns_per_peer (%" PRIu64 ") connections from %s are "
					  "open (%" PRIu64 " refused so far)", peer, per_peer, addr, nrefused_peer);
				last_peer_log = now;
			}
			perf_inc(&m->bad_peers, 1);
			close(fd);
			continue;
		}
		if (r) {
			now = now_mono_ns();
			nrefused++;
			if (!last_full_log || now - last_full_log >= NS_PER_S) {
				derr(MDS, "peer %s: refused: mds_max_conns (%" PRIu64 ") connections are open "
					  "(%" PRIu64 " refused so far)", peer, max, nrefused);
				last_full_log = now;
			}
			perf_inc(&m->bad_peers, 1);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->mds = m;
		c->fd = fd;
		c->accepted_ns = now_mono_ns();
		c->rd.last_msg_ns = c->accepted_ns;
		atomic_init(&c->ref, 1);
		pthread_mutex_init(&c->send_lock, NULL);
		mdsp_buf_init(&c->outq);
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
		snprintf(c->peer_addr, sizeof(c->peer_addr), "%s", addr);
		pthread_mutex_lock(&m->conns_lock);
		if (m->nloops) {
			c->next = m->conns;
			m->conns = c;
			m->nconns++;
			pthread_mutex_unlock(&m->conns_lock);
			loop_give(m, c);
			continue;
		}
		if (pthread_create(&c->thread, &attr, reader_main, c)) {
			pthread_mutex_unlock(&m->conns_lock);
			derr(MDS, "cannot start a reader thread for %s", c->peer);
			conn_put(c);
			continue;
		}
		c->next = m->conns;
		m->conns = c;
		m->nconns++;
		pthread_mutex_unlock(&m->conns_lock);
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

int net_bind(struct mds *m, const char *addr, int port)
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
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
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

int net_listen_now(struct mds *m)
{
	if (m->listen_fd < 0)
		return -EBADF;
	return listen(m->listen_fd, SOMAXCONN) ? -errno : 0;
}

int net_listen(struct mds *m, const char *addr, int port)
{
	int r = net_bind(m, addr, port);

	if (!r && (r = net_listen_now(m))) {
		close(m->listen_fd);
		m->listen_fd = -1;
	}
	return r;
}

void net_set_ops(struct mds *m, const struct net_ops *ops)
{
	m->net_ops = ops;
}

int net_start(struct mds *m)
{
	int r;

	if (pipe2(m->stop_pipe, O_CLOEXEC))
		return -errno;
	if (pipe2(m->flush_pipe, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	pthread_mutex_init(&m->flush_lock, NULL);
	m->flush_tail = &m->flush_head;
	r = pthread_create(&m->flusher, NULL, flusher_main, m);
	if (r)
		return -r;
	m->flusher_started = true;
	r = loops_start(m);
	if (!r && m->nloops)
		dinfo(MDS, "client connections served by %u event loop(s) (mds_net_loops)", m->nloops);
	else if (!r)
		dinfo(MDS, "client connections served by a reader thread each (mds_net_loops=0)");
	if (!r)
		r = -pthread_create(&m->acceptor, NULL, acceptor_main, m);
	if (r)
		loops_stop(m);  /* the ones that started */
	return r;
}

/* Stop the acceptor and close the listening socket (idempotent). */
static void listener_stop(struct mds *m)
{
	char x = 1;

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
}

void net_quiesce(struct mds *m)
{
	/* new connections are refused (a reconnecting client tries again,
	 * and finds the next MDS) */
	listener_stop(m);
	pthread_mutex_lock(&m->lock);
	atomic_store(&m->draining, true);
	pthread_mutex_unlock(&m->lock);
}

/* Whether @c has nothing left to send: its queues are empty and the
 * peer has acknowledged every byte (SIOCOUTQ), so closing it now loses
 * nothing even when the close becomes a reset (unread input). */
static bool conn_flushed(struct conn *c)
{
	bool done;
	int unacked = 0;

	pthread_mutex_lock(&c->send_lock);
	done = c->dead || (c->outq_off == c->outq.len && !c->cork.len &&
			   (ioctl(c->fd, SIOCOUTQ, &unacked) || !unacked));
	pthread_mutex_unlock(&c->send_lock);
	return done;
}

unsigned net_flush(struct mds *m, uint64_t deadline_ns)
{
	struct conn **v = NULL, *c;
	size_t n = 0, i, cap = 0;
	unsigned left;

	/* take references (conns_lock is taken alone: the send locks are
	 * looked at outside it); no connection is added any more */
	pthread_mutex_lock(&m->conns_lock);
	for (c = m->conns; c; c = c->next)
		cap++;
	v = cap ? calloc(cap, sizeof(*v)) : NULL;
	for (c = m->conns; v && c; c = c->next)
		if (!c->exited) {
			conn_get(c);
			v[n++] = c;
		}
	pthread_mutex_unlock(&m->conns_lock);
	for (;;) {
		left = 0;
		for (i = 0; i < n; i++)
			if (v[i] && conn_flushed(v[i])) {
				conn_put(v[i]);
				v[i] = NULL;
			} else if (v[i]) {
				left++;
			}
		if (!left || now_mono_ns() >= deadline_ns)
			break;
		/* the flusher (or the kernel) is writing them: look again soon;
		 * shutdown only, so a short poll beats a wake-up per send */
		usleep(2000);
	}
	for (i = 0; i < n; i++)
		if (v[i])
			conn_put(v[i]);
	free(v);
	return left;
}

/*
 * Before the stop closes anything: mark the connections it is about to
 * close, as opposed to those whose peer closed them already (an end of file
 * waiting to be read).  The sessions of the first are not marked
 * disconnected: their clients come back to the next MDS.
 */
static void mark_closed_by_stop(struct mds *m)
{
	struct conn *c;
	char b;

	pthread_mutex_lock(&m->conns_lock);
	for (c = m->conns; c; c = c->next) {
		ssize_t n;

		if (c->exited)
			continue;
		n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		/* open with nothing or data waiting: ours to close; an end of
		 * file or a reset: the peer's */
		if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
			atomic_store(&c->closed_by_stop, true);
	}
	pthread_mutex_unlock(&m->conns_lock);
}

void net_stop(struct mds *m)
{
	mark_closed_by_stop(m);
	atomic_store(&m->stopping, true);
	listener_stop(m);
	loops_stop(m);
	reap(m, true);
	if (m->flusher_started) {
		struct conn *c;

		pthread_mutex_lock(&m->flush_lock);
		m->flush_stop = true;
		pthread_mutex_unlock(&m->flush_lock);
		if (write(m->flush_pipe[1], "x", 1) < 0 && errno != EAGAIN)
			derr(MDS, "flusher wake-up: %s", strerror(errno));
		pthread_join(m->flusher, NULL);
		m->flusher_started = false;
		while ((c = m->flush_head)) {
			m->flush_head = c->fnext;
			c->on_flush_list = false;
			conn_put(c);
		}
		m->flush_tail = &m->flush_head;
		close(m->flush_pipe[0]);
		close(m->flush_pipe[1]);
		m->flush_pipe[0] = m->flush_pipe[1] = -1;
	}
}
