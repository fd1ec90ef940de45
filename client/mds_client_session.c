/*
 * mds_client_session.c - the client's session with the MDS: connections,
 * the session handshake, a reader thread per connection, renewals, dead-MDS
 * detection, reconnect with backoff and the replay that follows.
 *
 * One session thread owns the session's life.  It connects (bounded by
 * client_connect_timeout), runs the AUTH exchange (HELLO/CHALLENGE, and
 * with a key PROOF/OK, after which every frame both ways carries a MAC; see
 * mds_proto/auth.c), sends SESSION REQUEST_OPEN -- or, when a session
 * existed, SESSION RECONNECT with the old session id and the proof that we
 * hold its secret -- and reads the answers itself before any reader thread
 * exists, so nothing else can consume the handshake.  An MDS that refuses
 * the key (none for our name, a wrong one, none offered where one is
 * required) is a final answer: mdsc_open_session fails with the reason,
 * which the log line spells out with what to do.  Then it starts the
 * connection's reader thread and replays:
 *
 *   1. requests that got only an UNSAFE reply are resent in tid order with
 *      MDSP_REQ_REPLAY: the MDS applied them in memory but may have lost
 *      them in a crash; it answers the ones it journaled from its
 *      completed-request table and re-executes the rest;
 *   2. requests that were sent but never answered are re-driven in tid
 *      order with MDSP_REQ_RETRY; a tid the MDS already executed is again
 *      answered from the completed table, so nothing runs twice;
 *   3. the session becomes OPEN and the wait list (requests submitted while
 *      there was no session) is kicked.
 *
 * The client mutex is held for the setup (publish the connection, bump the
 * generation; the session is not OPEN yet, so new requests park on the
 * wait list) and the teardown (mark it OPEN), never while replaying.
 * A request bound to an older connection generation is exactly the set
 * step 2 re-drives; its original sender's write fails on the dead socket.
 *
 * If the MDS refuses to resume the session (it was evicted or forgotten),
 * a new session is opened.  Nothing sent on the lost session can be
 * replayed into one that never saw it without risking a second execution
 * (the new session's completed table is empty), so requests that had only
 * an UNSAFE reply fail (mdsc_wait_safe/mdsc_sync return -EIO, as the Linux
 * client does), and so do unanswered requests that were sent and change
 * something (every mdsp_op_is_write op, OPEN with O_CREAT/O_TRUNC/O_EXCL):
 * mdsc_do_request returns -EIO.  Only unanswered reads (and requests never
 * sent) are re-driven.  All of it is logged.
 *
 * Sending: submitters encode outside any lock and hand the frame to the
 * connection's out queue (mdsc_conn_send: the sequence number, crcs and MAC
 * are set there, in send order).  A submitter that finds the socket idle
 * (nothing queued, no send in progress) sends its frame itself with
 * MSG_DONTWAIT -- one system call, no thread hand-off -- and leaves to the
 * writer thread whatever the socket does not take at once; otherwise the
 * frame is queued and the writer takes everything queued into one writev
 * (up to 64 frames), so a burst of requests from many threads costs a few
 * system calls, and a slow socket holds up only the writer.  The queue is bounded
 * (client_mds_send_queue): past it submitters wait for room, which is the
 * backpressure; caps messages and renewals never wait (they may pass the
 * bound: mdsc_send_caps is documented never to block), and the session
 * thread waits only up to the stall bound on replay and the wait-list kick.
 *
 * The connection is declared dead on EOF/reset from the reader, on a write
 * error, or when nothing arrived for client_session_timeout while a renew
 * is outstanding (an MDS that hangs without closing the socket).  A peer
 * that stops reading cannot hang anything: the socket has SO_SNDTIMEO and
 * TCP_USER_TIMEOUT of client_session_timeout, so the writer's stuck write
 * fails and marks the connection dead (its shutdown and the queue's wake-up
 * free every waiting submitter); the session thread's watchdog also kills
 * a connection whose queue has not moved for that long (30 s when the
 * timeout is 0), and a renew that could not go out still counts as
 * outstanding, so the silence is judged as before.
 */
#include "client/mds_client_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/lockdep.h"
#include "common/config.h"
#include "common/crc32c.h"
#include "common/log.h"

#define RX_INITIAL  (64u << 10)
#define RX_SHRINK   (1u << 20)
#define CLOSE_WAIT_MS 2000

static const char *state_name(enum sess_state st)
{
	switch (st) {
	case SESS_NEW: return "new";
	case SESS_OPENING: return "opening";
	case SESS_RECONNECTING: return "reconnecting";
	case SESS_EVICTED: return "evicted";
	case SESS_OPEN: return "open";
	case SESS_CLOSING: return "closing";
	case SESS_CLOSED: return "closed";
	}
	return "?";
}

void mdsc_kick_locked(struct mds_client *m)
{
	m->kick = true;
	pthread_cond_signal(&m->tick_cond);
}

static void kick(struct mds_client *m)
{
	uint64_t t0 = mdsc_lock(m);

	mdsc_kick_locked(m);
	mdsc_unlock(m, SEC_SESSION, t0);
}

/* ---- connections ---------------------------------------------------------- */

static void *writer_main(void *arg);

/* @f left a connection's queue: the client-wide gauges follow (under out_lock,
 * with the connection's own count, so they never show more than is queued). */
static void frame_dequeued(struct mds_client *m, const struct out_frame *f)
{
	atomic_fetch_sub_explicit(&m->out_bytes, f->b.len, memory_order_relaxed);
	atomic_fetch_sub_explicit(&m->out_frames, 1, memory_order_relaxed);
}

static void frames_free(struct out_frame *f)
{
	struct out_frame *n;

	for (; f; f = n) {
		n = f->next;
		mdsp_buf_free(&f->b);
		free(f);
	}
}

static struct mds_conn *conn_new(struct mds_client *m, int fd)
{
	struct mds_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rx = malloc(RX_INITIAL);
	if (!c->rx) {
		free(c);
		return NULL;
	}
	c->rx_cap = RX_INITIAL;
	atomic_init(&c->ref, 1);
	c->fd = fd;
	c->mdsc = m;
	pthread_mutex_init(&c->out_lock, NULL);
	mdsc_cond_init(&c->out_cond);
	mdsc_cond_init(&c->room_cond);
	c->out_tail = &c->out_head;
	c->out_limit = cfg_uint(CFG_client_mds_send_queue);
	atomic_init(&c->last_rx_ns, now_mono_ns());
	atomic_init(&c->last_tx_ns, now_mono_ns());
	if (pthread_create(&c->writer, NULL, writer_main, c)) {
		pthread_cond_destroy(&c->room_cond);
		pthread_cond_destroy(&c->out_cond);
		pthread_mutex_destroy(&c->out_lock);
		free(c->rx);
		free(c);
		return NULL;
	}
	return c;
}

void mdsc_conn_get(struct mds_conn *c)
{
	atomic_fetch_add_explicit(&c->ref, 1, memory_order_relaxed);
}

/* The last reference: the reader and the writer are joined (conn_reap). */
void mdsc_conn_put(struct mds_conn *c)
{
	if (atomic_fetch_sub_explicit(&c->ref, 1, memory_order_acq_rel) != 1)
		return;
	close(c->fd);
	frames_free(c->out_head);       /* none: the writer drops the queue when it ends */
	pthread_cond_destroy(&c->room_cond);
	pthread_cond_destroy(&c->out_cond);
	pthread_mutex_destroy(&c->out_lock);
	mdsp_mac_free(c->tx_mac);
	mdsp_mac_free(c->rx_mac);
	memset(c->session_secret, 0, sizeof(c->session_secret));
	free(c->rx);
	free(c);
}

/*
 * Mark @c dead (once): shut the socket down so the reader and the writer
 * fail at once, wake whoever waits on the out queue, and wake the session
 * thread unless the caller is it.  Never called with out_lock held.
 */
static void conn_mark_dead(struct mds_conn *c, bool wake, int err, const char *why)
{
	if (atomic_exchange(&c->dead, true))
		return;
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_lock(&c->out_lock);
	pthread_cond_broadcast(&c->out_cond);
	pthread_cond_broadcast(&c->room_cond);
	pthread_mutex_unlock(&c->out_lock);
	if (err)
		derr(CLIENT, "mds %s: connection (generation %llu) lost: %s (%s)", c->mdsc->addr,
		     (unsigned long long)c->gen, why ? why : "error", strerror(-err));
	if (wake)
		kick(c->mdsc);
}

/*
 * How long a stalled socket may hold things up: the send timeout
 * (SO_SNDTIMEO: no byte accepted for this long fails the writer's write),
 * the longest the session thread waits for room in a full out queue, and
 * what its watchdog allows a queue that makes no progress.
 * client_session_timeout, or STALL_DEFAULT_NS when that is 0.
 */
#define STALL_DEFAULT_NS 30000000000ull

static uint64_t send_stall_ns(void)
{
	uint64_t tmo = mdsc_secs_to_ns(CFG_client_session_timeout);

	return tmo ? tmo : STALL_DEFAULT_NS;
}

/* Set on the session thread: its sends never wait for room unbounded. */
static __thread bool on_session_thread;

#define WRITE_BATCH 64          /* frames per writev */

/*
 * The connection's one writer: takes every frame queued so far (up to
 * WRITE_BATCH) into one writev, so that a burst of submitters costs one
 * system call, not one each.  Frames stay on the queue until written (the
 * first one perhaps partly: out_off).  A write that fails, or that the
 * socket's SO_SNDTIMEO turns into EAGAIN because the MDS stopped reading,
 * kills the connection; the queue is then dropped (the session thread
 * re-drives every unanswered request on the next connection).
 */
static void *writer_main(void *arg)
{
	struct mds_conn *c = arg;
	struct mds_client *m = c->mdsc;
	struct iovec iov[WRITE_BATCH];
	struct msghdr mh = { .msg_iov = iov };
	struct out_frame *f, *done, **dtail;
	const char *why = NULL;
	size_t left;
	ssize_t n;
	int k, err = 0;

	pthread_mutex_lock(&c->out_lock);
	for (;;) {
		/* a submitter may be sending straight to an idle socket: after it */
		while ((!c->out_head || c->writing) && !atomic_load(&c->dead))
			pthread_cond_wait(&c->out_cond, &c->out_lock);
		if (atomic_load(&c->dead))
			break;
		c->writing = true;
		k = 0;
		for (f = c->out_head; f && k < WRITE_BATCH; f = f->next, k++) {
			iov[k].iov_base = f->b.data + (k ? 0 : c->out_off);
			iov[k].iov_len = f->b.len - (k ? 0 : c->out_off);
		}
		pthread_mutex_unlock(&c->out_lock);
		mh.msg_iovlen = (size_t)k;
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			pthread_mutex_lock(&c->out_lock);
			c->writing = false;
			continue;
		}
		if (n <= 0) {
			err = n == 0 ? -EIO : (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT : -errno;
			why = err == -ETIMEDOUT ? "send stalled: the mds stopped reading" : "send failed";
			pthread_mutex_lock(&c->out_lock);
			c->writing = false;
			break;
		}
		hist_add(&m->frames_per_write, (uint64_t)k);
		atomic_store_explicit(&c->last_tx_ns, now_mono_ns(), memory_order_relaxed);
		/* take what went out off the queue */
		pthread_mutex_lock(&c->out_lock);
		c->writing = false;
		done = NULL;
		dtail = &done;
		left = (size_t)n;
		while (left && (f = c->out_head)) {
			size_t rest = f->b.len - c->out_off;

			if (left < rest) {
				c->out_off += left;
				break;
			}
			left -= rest;
			c->out_off = 0;
			c->out_head = f->next;
			if (!c->out_head)
				c->out_tail = &c->out_head;
			c->out_bytes -= f->b.len;
			frame_dequeued(m, f);
			f->next = NULL;
			*dtail = f;
			dtail = &f->next;
		}
		pthread_cond_broadcast(&c->room_cond);
		pthread_mutex_unlock(&c->out_lock);
		frames_free(done);
		pthread_mutex_lock(&c->out_lock);
	}
	/* dead: nothing more goes out on this connection */
	for (f = c->out_head; f; f = f->next)
		frame_dequeued(m, f);
	f = c->out_head;
	c->out_head = NULL;
	c->out_tail = &c->out_head;
	c->out_bytes = 0;
	c->out_off = 0;
	pthread_cond_broadcast(&c->room_cond);
	pthread_mutex_unlock(&c->out_lock);
	frames_free(f);
	/* a connection we shut down ourselves ends quietly */
	if (err)
		conn_mark_dead(c, true, atomic_load(&c->dead) ? 0 : err, why);
	return NULL;
}

/* conn_send_wait's @wait_ns: never wait (may pass the limit), or wait for room as long as it takes */
#define SEND_NOWAIT  UINT64_MAX
#define SEND_WAIT    0

/*
 * Queue one encoded frame for @c's writer: its data moves to the queue (@b
 * is left empty).  The sequence number must follow the order frames go out,
 * so it is set here, under out_lock, and the crcs and (authenticated) the
 * MAC with it (mdsp_frame_seal).
 *
 * Backpressure: while out_limit bytes are queued, a submitter waits for room
 * (@wait_ns: SEND_WAIT as long as it takes -- the writer's send timeout or
 * the session thread's watchdog kills a connection that stops moving; a
 * bound, after which the connection is declared dead; SEND_NOWAIT never
 * waits and may pass the limit, for the small messages that must never
 * block: caps, renewals).  One frame always fits an empty queue.
 * Return: 0, -ENOTCONN (dead), -ETIMEDOUT (no room within the bound), -ENOMEM.
 */
static int conn_send_wait(struct mds_conn *c, struct mdsp_buf *b, uint64_t wait_ns)
{
	struct mds_client *m = c->mdsc;
	struct out_frame *f;
	uint64_t t0 = 0;
	int r = 0;

	if (b->oom || b->len < MDSP_HDR_LEN)
		return -ENOMEM;
	if (atomic_load(&c->dead))
		return -ENOTCONN;
	f = malloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	/* room for the MAC, taken before the lock (whether it is needed is
	 * only known under it) */
	if (b->cap < b->len + MDSP_MAC_LEN) {
		uint8_t *nb = realloc(b->data, b->len + MDSP_MAC_LEN);

		if (!nb) {
			free(f);
			return -ENOMEM;
		}
		b->data = nb;
		b->cap = b->len + MDSP_MAC_LEN;
	}
	f->b = *b;
	f->next = NULL;
	mdsp_buf_init(b);
	pthread_mutex_lock(&c->out_lock);
	if (wait_ns != SEND_NOWAIT) {
		struct timespec ts = ns_to_timespec(now_mono_ns() + wait_ns);

		while (c->out_bytes && c->out_bytes + f->b.len > c->out_limit && !atomic_load(&c->dead)) {
			if (!t0) {
				t0 = now_mono_ns();
				atomic_fetch_add_explicit(&m->send_waiters, 1, memory_order_relaxed);
			}
			if (wait_ns == SEND_WAIT) {
				pthread_cond_wait(&c->room_cond, &c->out_lock);
			} else if (pthread_cond_timedwait(&c->room_cond, &c->out_lock, &ts) == ETIMEDOUT) {
				r = -ETIMEDOUT;
				break;
			}
		}
		if (t0)
			atomic_fetch_sub_explicit(&m->send_waiters, 1, memory_order_relaxed);
	}
	if (!r && atomic_load(&c->dead))
		r = -ENOTCONN;
	if (r) {
		pthread_mutex_unlock(&c->out_lock);
		if (t0)
			hist_add(&m->send_wait, now_mono_ns() - t0);
		mdsp_buf_free(&f->b);
		free(f);
		if (r == -ETIMEDOUT)
			conn_mark_dead(c, true, r, "send stalled: the out queue stayed full");
		return r;
	}
	/* the sequence number follows the order frames go out: it is set here,
	 * under out_lock, and the crcs and the MAC that cover it with it */
	r = mdsp_frame_seal(f->b.data, f->b.len, ++c->out_seq, c->tx_mac, f->b.data + f->b.len);
	if (r) {
		pthread_mutex_unlock(&c->out_lock);
		mdsp_buf_free(&f->b);
		free(f);
		conn_mark_dead(c, true, r, "cannot seal a frame (MAC)");
		return r;
	}
	if (c->tx_mac)
		f->b.len += MDSP_MAC_LEN;
	if (!c->out_head && !c->writing) {
		/*
		 * The socket is idle: send it ourselves, without waiting
		 * (MSG_DONTWAIT), and leave the writer asleep -- one system call
		 * and no thread hand-off for a request of a quiet connection.
		 * The writer takes over only what the socket does not take at
		 * once; frames queued meanwhile go after it (their sequence
		 * numbers are higher: sealed under out_lock after ours).
		 */
		ssize_t n;

		c->writing = true;
		pthread_mutex_unlock(&c->out_lock);
		do {
			n = send(c->fd, f->b.data, f->b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		} while (n < 0 && errno == EINTR);
		r = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK ? -errno : 0;
		pthread_mutex_lock(&c->out_lock);
		c->writing = false;
		if (n > 0)
			atomic_store_explicit(&c->last_tx_ns, now_mono_ns(), memory_order_relaxed);
		if (r || n == (ssize_t)f->b.len) {
			if (c->out_head)
				pthread_cond_signal(&c->out_cond);      /* what queued behind us */
			pthread_mutex_unlock(&c->out_lock);
			if (t0)
				hist_add(&m->send_wait, now_mono_ns() - t0);
			if (!r)
				perf_inc(&m->c_direct_sends, 1);
			mdsp_buf_free(&f->b);
			free(f);
			if (r)
				conn_mark_dead(c, true, r, "send failed");
			return r;
		}
		/* the rest goes first in the queue */
		f->next = c->out_head;
		c->out_head = f;
		if (!f->next)
			c->out_tail = &f->next;
		c->out_off = n > 0 ? (size_t)n : 0;
	} else {
		if (!c->out_head)
			atomic_store_explicit(&c->last_tx_ns, now_mono_ns(), memory_order_relaxed);
		*c->out_tail = f;
		c->out_tail = &f->next;
	}
	c->out_bytes += f->b.len;
	atomic_fetch_add_explicit(&m->out_bytes, f->b.len, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->out_frames, 1, memory_order_relaxed);
	pthread_cond_signal(&c->out_cond);
	pthread_mutex_unlock(&c->out_lock);
	if (t0)
		hist_add(&m->send_wait, now_mono_ns() - t0);
	return 0;
}

int mdsc_conn_send(struct mds_conn *c, struct mdsp_buf *b)
{
	/* the session thread (replay, wait-list kick) waits for room only so long */
	return conn_send_wait(c, b, on_session_thread ? send_stall_ns() : SEND_WAIT);
}

/* Bytes queued on @c and how long since the queue last moved (0: empty). */
static uint64_t conn_stalled_ns(struct mds_conn *c, uint64_t now)
{
	uint64_t last;
	bool busy;

	pthread_mutex_lock(&c->out_lock);
	busy = c->out_head != NULL;
	pthread_mutex_unlock(&c->out_lock);
	last = atomic_load_explicit(&c->last_tx_ns, memory_order_relaxed);
	return busy && now > last ? now - last : 0;
}

/*
 * Read one frame from @c's buffered stream.  @timeout_ms < 0 waits forever.
 * Return: 0, -EOPNOTSUPP (unknown message type: the frame was skipped),
 * -ECONNRESET (closed), -ETIMEDOUT, -ECONNABORTED (stalled mid-frame) or a
 * decode error; @why says which.
 */
static int conn_recv(struct mds_conn *c, struct mdsp_msg *msg, int timeout_ms, const char **why)
{
	uint64_t deadline = timeout_ms >= 0 ? now_mono_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
	struct mdsp_hdr h;
	size_t have, need;
	ssize_t n;
	int r;

	for (;;) {
		have = c->rx_end - c->rx_start;
		need = MDSP_HDR_LEN;
		if (have >= MDSP_HDR_LEN) {
			const uint8_t *f = c->rx + c->rx_start;

			r = mdsp_decode_hdr(f, &h, why);
			if (r)
				return r;
			if (!c->rx_mac != !(h.flags & MDSP_FRAME_MAC)) {
				*why = c->rx_mac ? "a frame without a MAC on an authenticated connection"
						 : "a frame with a MAC before authentication";
				return -EBADMSG;
			}
			need = MDSP_HDR_LEN + (size_t)h.len + (c->rx_mac ? MDSP_MAC_LEN : 0);
			if (have >= need) {
				if (c->rx_mac)
					r = mdsp_frame_verify(c->rx_mac, &h, f, f + MDSP_HDR_LEN,
							      f + MDSP_HDR_LEN + h.len, &c->in_seq, why);
				else
					c->in_seq = h.seq;
				if (r)
					return r;
				r = mdsp_decode_payload(&h, f + MDSP_HDR_LEN, h.len, msg, why);
				c->rx_start += need;
				if (c->rx_start == c->rx_end)
					c->rx_start = c->rx_end = 0;
				if (!c->rx_end && c->rx_cap > RX_SHRINK) {
					/* a huge frame (readdir) passed: give the memory back */
					uint8_t *nb = realloc(c->rx, RX_INITIAL);

					if (nb) {
						c->rx = nb;
						c->rx_cap = RX_INITIAL;
					}
				}
				if (!r)
					msg->seq = h.seq;
				return r;
			}
		}
		if (c->rx_start + need > c->rx_cap) {
			memmove(c->rx, c->rx + c->rx_start, have);
			c->rx_start = 0;
			c->rx_end = have;
			if (need > c->rx_cap) {
				size_t cap = c->rx_cap * 2 > need ? c->rx_cap * 2 : need;
				uint8_t *nb = realloc(c->rx, cap);

				if (!nb) {
					*why = "out of memory";
					return -ENOMEM;
				}
				c->rx = nb;
				c->rx_cap = cap;
			}
		}
		if (deadline) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
			uint64_t now = now_mono_ns();
			int left = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);

			r = poll(&pfd, 1, left);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				*why = "poll failed";
				return -errno;
			}
			if (r == 0) {
				*why = have ? "mds stalled in the middle of a frame" : "timed out";
				return have ? -ECONNABORTED : -ETIMEDOUT;
			}
		}
		n = read(c->fd, c->rx + c->rx_end, c->rx_cap - c->rx_end);
		if (n > 0) {
			c->rx_end += (size_t)n;
			continue;
		}
		if (n == 0) {
			*why = "mds closed the connection";
			return -ECONNRESET;
		}
		if (errno == EINTR)
			continue;
		*why = "receive error";
		return -errno;
	}
}

/*
 * Parse "host:port" ("[v6]:port" too) and connect within @timeout_ms.
 * @stall_ms (0: none): SO_SNDTIMEO and TCP_USER_TIMEOUT of the socket.
 */
static int tcp_connect(const char *addr, int timeout_ms, unsigned int stall_ms, int *out, const char **why)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	const char *colon = strrchr(addr, ':');
	char host[256], port[16];
	size_t hl;
	int fd, r, ret = -ECONNREFUSED, one = 1, err;
	socklen_t elen;

	if (!colon || colon == addr || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof(port) ||
	    (size_t)(colon - addr) >= sizeof(host)) {
		*why = "address is not host:port";
		return -EINVAL;
	}
	hl = (size_t)(colon - addr);
	memcpy(host, addr, hl);
	host[hl] = '\0';
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	strcpy(port, colon + 1);
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		*why = gai_strerror(r);
		return -EHOSTUNREACH;
	}
	*why = NULL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (errno != EINPROGRESS) {
				ret = -errno;
				close(fd);
				continue;
			}
			do {
				r = poll(&pfd, 1, timeout_ms);
			} while (r < 0 && errno == EINTR);
			if (r <= 0) {
				ret = r == 0 ? -ETIMEDOUT : -errno;
				close(fd);
				continue;
			}
			elen = sizeof(err);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
				err = errno;
			if (err) {
				ret = -err;
				close(fd);
				continue;
			}
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (stall_ms) {
			/* a peer that stops reading (SIGSTOP, a partition without RST)
			 * fails the send instead of blocking it forever */
			struct timeval tv = { .tv_sec = stall_ms / 1000, .tv_usec = (stall_ms % 1000) * 1000 };
			unsigned int ut = stall_ms;

			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
		}
		freeaddrinfo(res);
		*out = fd;
		return 0;
	}
	freeaddrinfo(res);
	*why = ret == -ETIMEDOUT ? "connect timed out" : strerror(-ret);
	return ret;
}

/* ---- eviction ------------------------------------------------------------------ */

/*
 * m->mutex (mdsc->mutex) held; evicted_report() after the unlock.
 * The MDS ended our session (evicted us, or refused to resume it: it is
 * gone).  Unless client_reconnect_stale, that is final: no new session is
 * opened (the MDS keeps an evicted client blocklisted anyway) and every
 * request fails with EIO from now on; with it, the session thread keeps
 * trying to open a new session and requests fail until one opens.
 */
static void evicted_locked(struct mds_client *m)
{
	struct mds_session *s = &m->session;

	lockdep_assert_held(&m->mutex);
	atomic_store_explicit(&m->evicted, true, memory_order_release);
	if (!m->reconnect_stale) {
		s->state = SESS_EVICTED;
		m->want_session = false;
		s->next_attempt_ns = UINT64_MAX;
	} else {
		/* a blocklisted client is refused for a while: try every so often */
		s->next_attempt_ns = now_mono_ns() + mdsc_secs_to_ns(CFG_client_reconnect_backoff_max);
	}
	pthread_cond_broadcast(&m->session_cond);
}

/* Fail every request in flight with EIO.  No lock held. */
static unsigned int abort_inflight(struct mds_client *m)
{
	struct mdsc_req *r;
	uint64_t idx = 0;
	unsigned int n = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		n += mdsc_abort_request(m, r, -EIO, false);
		mdsc_req_put(r);
	}
	mdsc_kick_wait_list(m);         /* requests parked for a session: they fail now */
	return n;
}

/*
 * After evicted_locked: say so, and without client_reconnect_stale fail
 * everything in flight.  With it, what was sent is handled by the next
 * open as after any lost session (reads sent again, changes failed), unless
 * that open is refused as blocklisted (then it fails at once: the entry may
 * last an hour).  No lock held.
 */
static void evicted_report(struct mds_client *m, uint64_t sid)
{
	char why[sizeof(m->session.evict_reason)];
	unsigned int n = 0;
	uint64_t t0;

	t0 = mdsc_lock(m);
	snprintf(why, sizeof(why), "%s", m->session.evict_reason);
	mdsc_unlock(m, SEC_SESSION, t0);
	if (!m->reconnect_stale)
		n = abort_inflight(m);
	else
		mdsc_kick_wait_list(m);
	if (m->reconnect_stale)
		derr(CLIENT, "mds %s evicted this client (session %llu: %s): client_reconnect_stale is set: "
		     "opening a new session once the mds lets us in (file locks and unsafe changes are lost); "
		     "until then operations fail with EIO", m->addr, (unsigned long long)sid, why);
	else
		derr(CLIENT, "mds %s evicted this client (session %llu: %s): every operation fails with EIO from "
		     "now on (%u request(s) failed); remount to come back as a new client (or set "
		     "client_reconnect_stale = true)", m->addr, (unsigned long long)sid, why, n);
}

/* ---- messages from the MDS --------------------------------------------------- */

static void handle_session(struct mds_client *m, struct mds_conn *c, const struct mdsp_session *ss)
{
	struct mds_session *s = &m->session;
	uint32_t event = 0;
	uint64_t t0, id;

	t0 = mdsc_lock(m);
	if (s->conn != c) {
		mdsc_unlock(m, SEC_SESSION, t0);
		return;
	}
	id = s->id;
	switch (ss->op) {
	case MDSP_SESSION_RENEW:
		s->last_renew_ack_ns = now_mono_ns();
		if (ss->lease_ms)
			s->lease_ms = ss->lease_ms;
		break;
	case MDSP_SESSION_STALE:
		s->stale_count++;
		s->last_renew_sent_ns = 0;      /* renew right away */
		mdsc_kick_locked(m);
		event = ss->op;
		break;
	case MDSP_SESSION_CLOSE:
		if (s->state == SESS_CLOSING) {
			s->state = SESS_CLOSED;
			pthread_cond_broadcast(&m->session_cond);
			break;
		}
		/* an unsolicited close is an eviction */
		__attribute__((fallthrough));
	case MDSP_SESSION_EVICTED:
	case MDSP_SESSION_REJECT:
		s->id = 0;
		s->lost = true;
		event = MDSP_SESSION_EVICTED;
		snprintf(s->evict_reason, sizeof(s->evict_reason), "%s",
			 ss->reason ? ss->reason : ss->op == MDSP_SESSION_CLOSE ? "closed by the mds" : "no reason given");
		evicted_locked(m);
		conn_mark_dead(c, false, 0, NULL);
		mdsc_kick_locked(m);
		break;
	default:
		break;
	}
	mdsc_unlock(m, SEC_SESSION, t0);
	if (event == MDSP_SESSION_EVICTED)
		evicted_report(m, id);
	/* log after the unlock: no I/O under the client mutex */
	if (event == MDSP_SESSION_STALE)
		derr(CLIENT, "mds %s: session %llu went stale (%s): renewing", m->addr, (unsigned long long)id,
		     ss->reason ? ss->reason : "lease ran out");
	else if (!event && ss->op != MDSP_SESSION_RENEW && ss->op != MDSP_SESSION_CLOSE)
		dout(CLIENT, 1, "mds %s: unexpected session message %s ignored", m->addr,
		     mdsp_session_op_name(ss->op));
	if (event && m->ops.session_event)
		m->ops.session_event(m->ops_arg, event);
}

/* Takes ownership of @msg. */
static void dispatch(struct mds_client *m, struct mds_conn *c, struct mdsp_msg *msg)
{
	switch (msg->type) {
	case MDSP_MSG_REPLY:
		mdsc_handle_reply(m, msg);
		return;
	case MDSP_MSG_SESSION:
		handle_session(m, c, &msg->session);
		break;
	case MDSP_MSG_CAPS:
		if (m->ops.handle_caps)
			m->ops.handle_caps(m->ops_arg, &msg->caps);
		break;
	default:
		dout(CLIENT, 1, "mds %s: %s message ignored", m->addr, mdsp_msg_type_name(msg->type));
		break;
	}
	mdsp_msg_free(msg);
	free(msg);
}

static void *reader_main(void *arg)
{
	struct mds_conn *c = arg;
	struct mds_client *m = c->mdsc;
	const char *why = NULL;
	struct mdsp_msg *msg;
	int r;

	for (;;) {
		msg = malloc(sizeof(*msg));
		if (!msg) {
			r = -ENOMEM;
			why = "out of memory";
			break;
		}
		r = conn_recv(c, msg, -1, &why);
		if (r == -EOPNOTSUPP) {
			dout(CLIENT, 1, "mds %s: message of unknown type skipped", m->addr);
			free(msg);
			continue;
		}
		if (r) {
			free(msg);
			break;
		}
		atomic_store_explicit(&c->last_rx_ns, now_mono_ns(), memory_order_relaxed);
		dispatch(m, c, msg);
	}
	/* a connection we shut down ourselves ends quietly */
	conn_mark_dead(c, true, atomic_load(&c->dead) ? 0 : r, why);
	return NULL;
}

/* Stop and release a connection the session no longer uses.  No lock held. */
static void conn_reap(struct mds_conn *c)
{
	conn_mark_dead(c, false, 0, NULL);
	if (c->has_reader)
		pthread_join(c->reader, NULL);
	c->has_reader = false;
	pthread_join(c->writer, NULL);
	mdsc_conn_put(c);
}

/* ---- handshake ------------------------------------------------------------------ */

struct granted {
	uint64_t id, seq, epoch;
	uint32_t lease_ms;
	uint8_t secret[MDSP_KEY_LEN];
	uint64_t max_file_size;
	struct mdsp_lock *refused;    /* RECONNECT: locks the MDS did not grant back (malloc'd) */
	uint32_t nrefused;
	char reason[512];             /* a refusal's reason */
};

int mdsc_auth_init(struct mds_client *m)
{
	struct mdsp_keyring kr;
	const struct mdsp_key *k;
	char err[1024];
	int r;

	m->auth_name = cfg_strdup(CFG_client_auth_name);
	m->keyring_path = cfg_strdup(CFG_client_keyring);
	if (!m->auth_name || !m->keyring_path)
		return -ENOMEM;
	if (!mdsp_auth_name_valid(m->auth_name)) {
		derr(CLIENT, "client_auth_name '%s' is not a name of the form client.NAME", m->auth_name);
		return -EINVAL;
	}
	if (!*m->keyring_path) {
		m->keyring_missing = true;
		return 0;
	}
	r = mdsp_keyring_load(m->keyring_path, &kr, err, sizeof(err));
	if (r == -ENOENT) {
		m->keyring_missing = true;
		dout(CLIENT, 1, "no keyring at %s (client_keyring): connecting without a key", m->keyring_path);
		return 0;
	}
	if (r) {
		derr(CLIENT, "%s (client_keyring): fix the file or point client_keyring at another", err);
		return r;
	}
	k = mdsp_keyring_find(&kr, m->auth_name);
	if (!k) {
		derr(CLIENT, "keyring %s (client_keyring) has no key for %s (client_auth_name): write it with "
		     "'loligo auth get-or-create %s -o %s' on the mds host, or set client_auth_name to a name it holds",
		     m->keyring_path, m->auth_name, m->auth_name, m->keyring_path);
		mdsp_keyring_free(&kr);
		return -ENOKEY;
	}
	memcpy(m->key, k->secret, MDSP_KEY_LEN);
	m->have_key = true;
	mdsp_keyring_free(&kr);
	return 0;
}

/* Read the next frame of the handshake before @deadline. */
static int handshake_recv(struct mds_client *m, struct mds_conn *c, uint64_t deadline, struct mdsp_msg *in)
{
	const char *why = NULL;
	uint64_t now;
	int r;

	for (;;) {
		now = now_mono_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		r = conn_recv(c, in, (int)((deadline - now) / 1000000ull) + 1, &why);
		if (r == -EOPNOTSUPP)
			continue;
		if (r)
			dout(CLIENT, 1, "mds %s: no handshake answer: %s", m->addr, why ? why : strerror(-r));
		return r;
	}
}

/* Say what an AUTH REJECT (or our own refusal of the mds, op 0) means for
 * us and what to do about it; keep it for mdsc_open_session's last word. */
static void log_auth_reject(struct mds_client *m, const struct mdsp_auth *a)
{
	int err = a->result < 0 ? a->result : -EACCES;
	const char *reason = a->reason ? a->reason : "no reason given";
	char msg[sizeof(m->session.auth_error)];
	uint64_t t0;

	if (a->op != MDSP_AUTH_REJECT)          /* our own verdict on the mds */
		snprintf(msg, sizeof(msg), "%s", reason);
	else if (err == -EACCES && m->keyring_missing)
		snprintf(msg, sizeof(msg), "the mds requires authentication, but the keyring %s (client_keyring) does "
			 "not exist: create it on the mds host with 'loligo auth get-or-create %s -o %s' and copy it here",
			 *m->keyring_path ? m->keyring_path : "(none)", m->auth_name,
			 *m->keyring_path ? m->keyring_path : "FILE");
	else if (err == -EKEYREJECTED)
		snprintf(msg, sizeof(msg), "the mds rejected the key of %s in %s: %s", m->auth_name, m->keyring_path,
			 reason);
	else
		snprintf(msg, sizeof(msg), "the mds refused %s: %s (%s)", m->auth_name, reason, strerror(-err));
	derr(CLIENT, "mds %s: %s", m->addr, msg);
	t0 = mdsc_lock(m);
	memcpy(m->session.auth_error, msg, sizeof(msg));
	mdsc_unlock(m, SEC_SESSION, t0);
}

/*
 * AUTH on @c: HELLO, CHALLENGE, and with a key PROOF, OK.  Return: 0 (the
 * connection's nonces set; with a key, MACs on from the next frame), -EACCES
 * when the MDS refused (@result gets its errno, the reason is logged), or a
 * connection error.
 */
static int auth_exchange(struct mds_client *m, struct mds_conn *c, uint64_t deadline, int *result)
{
	struct mdsp_msg out = { .type = MDSP_MSG_AUTH }, in;
	uint8_t want[MDSP_MAC_LEN], k_c2m[MDSP_MAC_LEN], k_m2c[MDSP_MAC_LEN];
	struct mdsp_mac *rx = NULL, *tx = NULL;
	struct mdsp_buf b;
	int r;

	if (mdsp_random(c->cnonce, MDSP_NONCE_LEN))
		return -EIO;
	out.auth.op = MDSP_AUTH_HELLO;
	out.auth.flags = m->have_key ? MDSP_AUTH_HAVE_KEY : 0;
	out.auth.name = m->auth_name;
	memcpy(out.auth.nonce, c->cnonce, MDSP_NONCE_LEN);
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &out);
	if (!r)
		r = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (;;) {
		r = handshake_recv(m, c, deadline, &in);
		if (r)
			return r;
		if (in.type == MDSP_MSG_AUTH)
			break;
		mdsp_msg_free(&in);
	}
	if (in.auth.op == MDSP_AUTH_REJECT) {
		log_auth_reject(m, &in.auth);
		*result = in.auth.result < 0 ? in.auth.result : -EACCES;
		mdsp_msg_free(&in);
		return -EACCES;
	}
	if (in.auth.op != MDSP_AUTH_CHALLENGE) {
		mdsp_msg_free(&in);
		return -EPROTO;
	}
	memcpy(c->snonce, in.auth.nonce, MDSP_NONCE_LEN);
	mdsp_msg_free(&in);
	if (!m->have_key)
		return 0;

	memset(&out, 0, sizeof(out));
	out.type = MDSP_MSG_AUTH;
	out.auth.op = MDSP_AUTH_PROOF;
	if (mdsp_auth_derive(m->key, MDSP_DERIVE_CLIENT_PROOF, m->auth_name, c->cnonce, c->snonce, out.auth.proof))
		return -EIO;
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &out);
	if (!r)
		r = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	r = handshake_recv(m, c, deadline, &in);
	if (r)
		return r;
	if (in.type == MDSP_MSG_AUTH && in.auth.op == MDSP_AUTH_REJECT) {
		log_auth_reject(m, &in.auth);
		*result = in.auth.result < 0 ? in.auth.result : -EACCES;
		mdsp_msg_free(&in);
		return -EACCES;
	}
	if (in.type != MDSP_MSG_AUTH || in.auth.op != MDSP_AUTH_OK) {
		mdsp_msg_free(&in);
		return -EPROTO;
	}
	r = mdsp_auth_derive(m->key, MDSP_DERIVE_MDS_PROOF, m->auth_name, c->cnonce, c->snonce, want);
	if (!r && !mdsp_mac_equal(want, in.auth.proof)) {
		/* whoever answered does not hold our key: not our mds */
		struct mdsp_auth fake = { .result = -EKEYREJECTED };
		char why[sizeof(m->session.auth_error)];

		snprintf(why, sizeof(why), "the mds could not prove that it holds the key of %s: refusing it (is "
			 "client_mds_addr the right mds, and its keyring the one %s came from?)", m->auth_name,
			 m->keyring_path);
		fake.reason = why;
		log_auth_reject(m, &fake);
		*result = -EKEYREJECTED;
		r = -EACCES;
	}
	mdsp_msg_free(&in);
	if (r)
		return r;
	if (mdsp_auth_derive(m->key, MDSP_DERIVE_KEY_C2M, m->auth_name, c->cnonce, c->snonce, k_c2m) ||
	    mdsp_auth_derive(m->key, MDSP_DERIVE_KEY_M2C, m->auth_name, c->cnonce, c->snonce, k_m2c) ||
	    mdsp_auth_derive(m->key, MDSP_DERIVE_SESSION, m->auth_name, c->cnonce, c->snonce, c->session_secret) ||
	    mdsp_mac_new(&rx, k_m2c) || mdsp_mac_new(&tx, k_c2m)) {
		mdsp_mac_free(rx);
		r = -EIO;
		goto out;
	}
	c->rx_mac = rx;
	pthread_mutex_lock(&c->out_lock);
	c->tx_mac = tx;
	pthread_mutex_unlock(&c->out_lock);
	c->authenticated = true;
out:
	memset(k_c2m, 0, sizeof(k_c2m));
	memset(k_m2c, 0, sizeof(k_m2c));
	return r;
}

/*
 * Authenticate on @c, then send REQUEST_OPEN (or RECONNECT of @resume_id
 * with the proof of @secret) and read the answer.
 * Return: 0 with @g filled; -ESTALE when the MDS refused the session
 * (reason logged, @result gets its errno); -EACCES when it refused our
 * authentication (@result: ENOKEY, EKEYREJECTED, EACCES); -ETIMEDOUT or a
 * connection error.
 */
static int handshake(struct mds_client *m, struct mds_conn *c, uint64_t resume_id, const uint8_t *secret,
		     int timeout_ms, struct granted *g, int *result)
{
	struct mdsp_msg out = { .type = MDSP_MSG_SESSION }, in;
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct mdsp_cap_reconnect *caps = NULL;
	struct mdsp_lock *locks = NULL;
	uint32_t ncaps = 0, nlocks = 0;
	struct mdsp_buf b;
	int r;

	r = auth_exchange(m, c, deadline, result);
	if (r)
		return r;
	out.session.op = resume_id ? MDSP_SESSION_RECONNECT : MDSP_SESSION_REQUEST_OPEN;
	out.session.session_id = resume_id;
	out.session.client_name = m->name;
	out.session.meta = m->meta;
	out.session.nmeta = m->nmeta;
	memcpy(out.session.client_uuid, m->uuid, sizeof(m->uuid));
	if (resume_id && mdsp_reconnect_proof(secret, resume_id, c->cnonce, c->snonce, out.session.proof))
		return -EIO;
	if (resume_id && m->ops.reconnect_caps && m->ops.reconnect_caps(m->ops_arg, &caps, &ncaps) == 0) {
		out.session.caps = caps;
		out.session.ncaps = ncaps;
	}
	/* our file locks: a restarted MDS learns them from us (mds/flock.c) */
	if (resume_id && m->ops.reconnect_locks && m->ops.reconnect_locks(m->ops_arg, &locks, &nlocks) == 0) {
		out.session.locks = locks;
		out.session.nlocks = nlocks;
	}
	out.session.store_addr = m->store_addr;
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &out);
	for (uint32_t i = 0; caps && i < ncaps; i++)
		free(caps[i].dname);    /* dentry leases name their dentry */
	free(caps);
	free(locks);
	if (!r)
		r = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (;;) {
		r = handshake_recv(m, c, deadline, &in);
		if (r)
			return r;
		if (in.type == MDSP_MSG_REPLY) {
			/* a SAFE reply journaled while we were away may follow the
			 * session onto this connection ahead of the OPEN */
			struct mdsp_msg *heap = malloc(sizeof(*heap));

			if (heap) {
				*heap = in;
				mdsc_handle_reply(m, heap);
			} else {
				mdsp_msg_free(&in);
			}
			continue;
		}
		if (in.type != MDSP_MSG_SESSION) {
			dout(CLIENT, 1, "mds %s: %s before the session opened: ignored", m->addr,
			     mdsp_msg_type_name(in.type));
			mdsp_msg_free(&in);
			continue;
		}
		switch (in.session.op) {
		case MDSP_SESSION_OPEN:
			g->id = in.session.session_id;
			g->seq = in.session.seq;
			g->epoch = in.session.mds_epoch;
			g->lease_ms = in.session.lease_ms;
			if (resume_id && g->id == resume_id)
				memcpy(g->secret, secret, MDSP_KEY_LEN);
			else if (c->authenticated)
				memcpy(g->secret, c->session_secret, MDSP_KEY_LEN);
			else
				memcpy(g->secret, in.session.secret, MDSP_KEY_LEN);
			memset(in.session.secret, 0, MDSP_KEY_LEN);
			g->max_file_size = in.session.max_file_size;
			g->refused = in.session.locks;
			g->nrefused = in.session.nlocks;
			in.session.locks = NULL;
			in.session.nlocks = 0;
			mdsp_msg_free(&in);
			return 0;
		case MDSP_SESSION_REJECT:
		case MDSP_SESSION_CLOSE:
		case MDSP_SESSION_EVICTED:
			*result = in.session.result < 0 ? in.session.result : -EPERM;
			snprintf(g->reason, sizeof(g->reason), "%s", in.session.reason ? in.session.reason : "refused");
			derr(CLIENT, "mds %s refused to %s: %s (%s)", m->addr,
			     resume_id ? "resume the session" : "open a session",
			     in.session.reason ? in.session.reason : "no reason given", strerror(-*result));
			mdsp_msg_free(&in);
			return -ESTALE;
		default:
			mdsp_msg_free(&in);
			continue;
		}
	}
}

/* ---- replay ---------------------------------------------------------------------- */

/* Requests that got only an UNSAFE reply, when the MDS lost the session. */
static unsigned int fail_unsafe(struct mds_client *m)
{
	struct mdsc_req *r;
	uint64_t idx = 0;
	unsigned int n = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		if ((atomic_load(&r->state) & (RS_GOT_UNSAFE | RS_GOT_SAFE)) == RS_GOT_UNSAFE &&
		    mdsc_abort_request(m, r, -EIO, false)) {
			derr(CLIENT, "mds request tid %llu (%s) had only an UNSAFE reply and the mds lost the "
			     "session: it may not be durable (EIO to fsync)",
			     (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op));
			n++;
		}
		mdsc_req_put(r);
	}
	perf_inc(&m->c_unsafe_lost, n);
	return n;
}

/*
 * May @a run again in a session that never saw it?  Reads may; so may an
 * OPEN without O_CREAT/O_TRUNC and a file lock (setting a lock state twice
 * is setting it once, and the lost session's locks are gone anyway).  Every
 * namespace or attribute change may not: the new session's completed table
 * is empty, so a second execution is not recognised.
 */
static bool retry_safe_in_new_session(const struct mdsp_request *a)
{
	if (mdsp_op_is_write(a->op))
		return false;
	if (a->op == MDSP_OP_OPEN || a->op == MDSP_OP_CREATE)
		return !(a->oflags & (O_CREAT | O_TRUNC | O_EXCL));
	return true;
}

/*
 * A new session replaced a lost one: requests sent on the old session and
 * never answered may have been executed there; those that change something
 * fail with EIO instead of being re-driven (never executed twice).
 */
static unsigned int fail_sent_writes(struct mds_client *m)
{
	struct mdsc_req *r;
	uint64_t idx = 0;
	unsigned int n = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		if (!(atomic_load(&r->state) & (RS_GOT_REPLY | RS_ABORTED | RS_WAITING)) &&
		    atomic_load(&r->sent_gen) && !retry_safe_in_new_session(&r->pub.args) &&
		    mdsc_abort_request(m, r, -EIO, true)) {
			derr(CLIENT, "mds request tid %llu (%s) was sent on a session the mds lost and never "
			     "answered: it may have been executed, so it is not sent again (EIO)",
			     (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op));
			n++;
		}
		mdsc_req_put(r);
	}
	perf_inc(&m->c_sent_lost, n);
	return n;
}

/*
 * Resend in tid order on @c: @replay_pass: requests with only an UNSAFE
 * reply (MDSP_REQ_REPLAY); otherwise requests sent on an older connection
 * and never answered (MDSP_REQ_RETRY).  No lock held.
 */
static unsigned int resend(struct mds_client *m, struct mds_conn *c, bool replay_pass)
{
	struct mdsc_req *r;
	uint64_t idx = 0, g;
	unsigned int n = 0;
	uint32_t st;
	bool want;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		st = atomic_load(&r->state);
		g = atomic_load(&r->sent_gen);
		if (replay_pass)
			want = (st & (RS_GOT_UNSAFE | RS_GOT_SAFE | RS_ABORTED)) == RS_GOT_UNSAFE;
		else
			want = !(st & (RS_GOT_REPLY | RS_ABORTED | RS_WAITING)) && g && g < c->gen;
		if (want) {
			atomic_store(&r->sent_gen, c->gen);
			if (mdsc_send_request(m, c, r, replay_pass ? MDSP_REQ_REPLAY : MDSP_REQ_RETRY)) {
				mdsc_req_put(r);
				break;          /* connection gone again: the next reconnect redoes it */
			}
			n++;
		}
		mdsc_req_put(r);
	}
	perf_inc(replay_pass ? &m->c_replays : &m->c_retries, n);
	return n;
}

/* m->mutex held: a session attempt failed with @err: when the next may start */
static void backoff_locked(struct mds_client *m, int err)
{
	struct mds_session *s = &m->session;
	uint64_t lo = mdsc_secs_to_ns(CFG_client_reconnect_backoff_min);
	uint64_t hi = mdsc_secs_to_ns(CFG_client_reconnect_backoff_max);

	lockdep_assert_held(&m->mutex);
	if (hi < lo)
		hi = lo;
	s->backoff_ns = s->backoff_ns ? s->backoff_ns * 2 : lo;
	if (s->backoff_ns > hi)
		s->backoff_ns = hi;
	s->next_attempt_ns = now_mono_ns() + s->backoff_ns;
	s->last_error = err;
}

/*
 * One attempt to bring the session up: connect, open or resume, replay,
 * open the gate.  Runs on the session thread with no lock held.
 */
static void connect_session(struct mds_client *m)
{
	struct mds_session *s = &m->session;
	int tmo = (int)(mdsc_secs_to_ns(CFG_client_connect_timeout) / 1000000ull);
	uint64_t t0, resume_id, old_epoch, backoff, tmo_ns;
	uint8_t secret[MDSP_KEY_LEN];
	struct granted g = { 0 };
	const char *why = NULL;
	struct mds_conn *c = NULL;
	unsigned int nreplay = 0, nretry = 0, nlost = 0;
	bool resumed, was_open_before, lost;
	int r, fd = -1, refused = 0;

	if (tmo <= 0)
		tmo = 5000;
	t0 = mdsc_lock(m);
	lost = s->lost;
	s->lost = false;
	resume_id = s->id;
	memcpy(secret, s->secret, MDSP_KEY_LEN);
	old_epoch = s->mds_epoch;
	was_open_before = s->opened_ns != 0;
	s->state = resume_id ? SESS_RECONNECTING : SESS_OPENING;
	mdsc_unlock(m, SEC_SESSION, t0);

	if (lost) {
		nlost = fail_unsafe(m);
		if (nlost)
			derr(CLIENT, "mds %s: session was evicted: %u request(s) with only an UNSAFE reply "
			     "failed", m->addr, nlost);
	}
	tmo_ns = mdsc_secs_to_ns(CFG_client_session_timeout);
	r = tcp_connect(m->addr, tmo, (unsigned int)(tmo_ns / 1000000ull), &fd, &why);
	if (r)
		goto fail;
	c = conn_new(m, fd);
	if (!c) {
		close(fd);
		r = -ENOMEM;
		why = "out of memory";
		goto fail;
	}
	t0 = mdsc_lock(m);
	if (m->stopping)
		conn_mark_dead(c, false, 0, NULL);
	s->handshaking = c;
	mdsc_unlock(m, SEC_SESSION, t0);
	r = handshake(m, c, resume_id, secret, tmo, &g, &refused);
	memset(secret, 0, sizeof(secret));
	t0 = mdsc_lock(m);
	s->handshaking = NULL;
	mdsc_unlock(m, SEC_SESSION, t0);
	if (r == -EACCES) {
		/* the MDS refused our key (or we refused it): final, like a
		 * refused open; the reason and what to do are logged */
		perf_inc(&m->c_rejects, 1);
		r = refused ? refused : -EACCES;
		why = "authentication refused (see above; a mount waiting for it gives up)";
		t0 = mdsc_lock(m);
		s->rejected = true;
		mdsc_unlock(m, SEC_SESSION, t0);
		goto fail_conn;
	}
	if (r == -ESTALE && resume_id) {
		/* the session is gone (evicted, closed, forgotten): an eviction */
		perf_inc(&m->c_rejects, 1);
		nlost = fail_unsafe(m);
		conn_reap(c);
		t0 = mdsc_lock(m);
		s->id = 0;
		s->lost = false;                /* fail_unsafe just ran */
		snprintf(s->evict_reason, sizeof(s->evict_reason), "%s", g.reason);
		if (m->reconnect_stale) {
			s->next_attempt_ns = 0;         /* open the new session right away */
			m->want_session = true;
		}
		evicted_locked(m);
		mdsc_unlock(m, SEC_SESSION, t0);
		derr(CLIENT, "mds %s: session %llu is gone; %u request(s) with only an UNSAFE reply failed",
		     m->addr, (unsigned long long)resume_id, nlost);
		evicted_report(m, resume_id);
		if (m->ops.session_event)
			m->ops.session_event(m->ops_arg, MDSP_SESSION_EVICTED);
		return;
	}
	if (r == -ESTALE && refused == -ESHUTDOWN && m->reconnect_stale && atomic_load(&m->evicted)) {
		/* still blocklisted: try again later; what was in flight fails now */
		unsigned int n = abort_inflight(m);

		if (n)
			derr(CLIENT, "mds %s keeps this client blocklisted: %u request(s) in flight failed with "
			     "EIO", m->addr, n);
		r = refused;
		why = "still blocklisted by the mds";
		goto fail_conn;
	}
	if (r == -ESTALE) {
		/* a fresh open refused: transient while the MDS starts (EAGAIN, EBUSY) */
		r = refused;
		why = "refused by the mds";
		if (refused != -EAGAIN && refused != -EBUSY) {
			t0 = mdsc_lock(m);
			s->rejected = true;
			mdsc_unlock(m, SEC_SESSION, t0);
		}
		goto fail_conn;
	}
	if (r) {
		why = why ? why : strerror(-r);
		goto fail_conn;
	}

	/* replay, setup: publish the connection, not yet OPEN (new requests park) */
	t0 = mdsc_lock(m);
	s->gen++;
	c->gen = s->gen;
	mdsc_conn_get(c);
	s->conn = c;
	s->id = g.id;
	memcpy(s->secret, g.secret, MDSP_KEY_LEN);
	memset(g.secret, 0, sizeof(g.secret));
	s->lease_ms = g.lease_ms;
	s->mds_epoch = g.epoch;
	atomic_store(&m->max_file_size, g.max_file_size);
	s->renew_seq = g.seq;
	s->last_renew_sent_ns = s->last_renew_ack_ns = now_mono_ns();
	s->rejected = false;
	resumed = resume_id && g.id == resume_id;
	if (atomic_load(&m->evicted)) {
		/* client_reconnect_stale: back, as a new client */
		atomic_store_explicit(&m->evicted, false, memory_order_release);
		dinfo(CLIENT, "mds %s: a new session %llu after the eviction: operations work again "
		      "(locks and unsafe changes of before are lost)", m->addr, (unsigned long long)g.id);
	}
	mdsc_unlock(m, SEC_REPLAY, t0);
	if (g.nrefused && m->ops.locks_refused)
		m->ops.locks_refused(m->ops_arg, g.refused, g.nrefused);
	free(g.refused);
	g.refused = NULL;

	if (pthread_create(&c->reader, NULL, reader_main, c) == 0) {
		c->has_reader = true;
	} else {
		derr(CLIENT, "mds %s: cannot start the reader thread", m->addr);
		conn_mark_dead(c, false, 0, NULL);
	}
	if (resume_id && !resumed) {
		nlost = fail_unsafe(m);
		derr(CLIENT, "mds %s: asked to resume session %llu, got a new session %llu: %u request(s) with "
		     "only an UNSAFE reply failed", m->addr, (unsigned long long)resume_id,
		     (unsigned long long)g.id, nlost);
	}
	if (!resumed) {
		/* a new session: nothing sent before may run again unless it is harmless */
		nlost = fail_sent_writes(m);
		if (nlost)
			derr(CLIENT, "mds %s: new session %llu: %u unanswered request(s) sent on the lost session "
			     "failed with EIO; unanswered reads are sent again", m->addr,
			     (unsigned long long)g.id, nlost);
	}
	if (resumed)
		nreplay = resend(m, c, true);
	nretry = resend(m, c, false);

	/* replay, teardown: open the gate */
	t0 = mdsc_lock(m);
	if (s->conn == c && !atomic_load(&c->dead)) {
		s->state = SESS_OPEN;
		s->backoff_ns = 0;
		s->last_error = 0;
		s->opened_ns = now_mono_ns();
		if (resume_id)
			s->reconnects++;
		m->want_session = true;         /* from now on the session is kept up */
	}
	pthread_cond_broadcast(&m->session_cond);
	mdsc_unlock(m, SEC_REPLAY, t0);

	if (resume_id)
		perf_inc(&m->c_reconnects, 1);
	else
		perf_inc(&m->c_opens, 1);
	if (resume_id || was_open_before)
		dinfo(CLIENT, "mds %s: session %llu %s (mds epoch %llu%s): %u replayed, %u re-sent", m->addr,
		      (unsigned long long)g.id, resumed ? "resumed" : "opened anew",
		      (unsigned long long)g.epoch, g.epoch != old_epoch ? ", mds restarted" : "", nreplay,
		      nretry);
	else
		dout(CLIENT, 1, "mds %s: session %llu open (lease %u ms)", m->addr, (unsigned long long)g.id,
		     g.lease_ms);
	/* tell the client first: caps held in a lost session are gone */
	if (m->ops.session_event && resume_id && !resumed)
		m->ops.session_event(m->ops_arg, MDSP_SESSION_EVICTED);
	else if (m->ops.session_event && (resumed || was_open_before))
		m->ops.session_event(m->ops_arg, resumed ? MDSP_SESSION_RECONNECT : MDSP_SESSION_OPEN);
	mdsc_kick_wait_list(m);
	mdsc_conn_put(c);
	return;

fail_conn:
	conn_reap(c);
fail:
	t0 = mdsc_lock(m);
	backoff_locked(m, r);
	s->state = resume_id ? SESS_RECONNECTING : SESS_NEW;
	pthread_cond_broadcast(&m->session_cond);
	backoff = s->backoff_ns;
	mdsc_unlock(m, SEC_SESSION, t0);
	dout(CLIENT, 1, "mds %s: %s failed: %s; next attempt in %.2f s", m->addr,
	     resume_id ? "reconnect" : "session open", why ? why : strerror(-r), (double)backoff / 1e9);
}

/* ---- the session thread -------------------------------------------------------------- */

/* @wait_ns: as for conn_send_wait() (SEND_NOWAIT: never wait for room). */
static int send_session_msg_slow(struct mds_client *m, struct mds_conn *c, uint32_t op, uint64_t id, uint64_t seq,
				 uint64_t wait_ns, uint32_t slow_ops, char *slow_op)
{
	struct mdsp_msg msg = { .type = MDSP_MSG_SESSION };
	struct mdsp_buf b;
	int r;

	msg.session.slow_ops = slow_ops;
	msg.session.slow_op = slow_op;
	msg.session.op = op;
	msg.session.session_id = id;
	msg.session.seq = seq;
	msg.session.client_name = m->name;
	memcpy(msg.session.client_uuid, m->uuid, sizeof(m->uuid));
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &msg);
	if (!r)
		r = conn_send_wait(c, &b, wait_ns);
	mdsp_buf_free(&b);
	return r;
}

static int send_session_msg(struct mds_client *m, struct mds_conn *c, uint32_t op, uint64_t id, uint64_t seq,
			    uint64_t wait_ns)
{
	return send_session_msg_slow(m, c, op, id, seq, wait_ns, 0, NULL);
}

/* m->mutex held: how often the open session is renewed */
static uint64_t renew_interval_locked(struct mds_client *m)
{
	uint64_t iv = mdsc_secs_to_ns(CFG_client_session_renew_interval);
	uint64_t lease = (uint64_t)m->session.lease_ms * 1000000ull;

	lockdep_assert_held(&m->mutex);
	if (!iv)
		iv = 5000000000ull;
	if (lease && iv > lease / 3)
		iv = lease / 3;
	if (iv < 10000000ull)
		iv = 10000000ull;
	return iv;
}

/*
 * m->mutex held.  Requests waiting for the MDS longer than
 * client_wait_log_interval: say so once per interval, with what they wait
 * for and why (a mount that hangs on a dead MDS must not be silent).
 * *@next is pulled in to the next time a line may be due.
 */
static void wait_log_locked(struct mds_client *m, uint64_t now, uint64_t *next)
{
	struct mds_session *s = &m->session;
	uint64_t iv = mdsc_secs_to_ns(CFG_client_wait_log_interval), idx = 0, age, n;
	struct mdsc_req *r;
	uint32_t op, st;
	char why[160];

	lockdep_assert_held(&m->mutex);
	if (!iv)
		return;
	r = mdsc_req_next(m, &idx, UINT64_MAX);   /* the oldest request still in the map */
	if (!r) {
		if (s->wait_logged_ns)
			dinfo(CLIENT, "mds %s: no request waits any more", m->addr);
		s->wait_logged_ns = 0;
		return;
	}
	age = now > r->submit_ns ? now - r->submit_ns : 0;
	op = r->pub.args.op;
	st = atomic_load(&r->state);
	mdsc_req_put(r);
	if (age < iv) {
		if (r->submit_ns + iv < *next)
			*next = r->submit_ns + iv;
		return;
	}
	if (s->wait_logged_ns && now - s->wait_logged_ns < iv) {
		if (s->wait_logged_ns + iv < *next)
			*next = s->wait_logged_ns + iv;
		return;
	}
	n = xa_count(&m->requests);
	if (s->state == SESS_OPEN && s->conn)
		snprintf(why, sizeof(why), "the session is open: the MDS has not %s it yet",
			 (st & RS_GOT_REPLY) ? "made it durable (SAFE)" : "answered");
	else
		snprintf(why, sizeof(why), "no session (%s%s%s)", state_name(s->state),
			 s->last_error ? ": " : "", s->last_error ? strerror(-s->last_error) : "");
	dinfo(CLIENT, "mds %s: waiting for the MDS: %" PRIu64 " request%s outstanding, the oldest (tid %" PRIu64
	      ", %s) for %.0f s; %s", m->addr, n, n == 1 ? "" : "s", idx, mdsp_op_name(op), (double)age / 1e9, why);
	s->wait_logged_ns = now;
	if (now + iv < *next)
		*next = now + iv;
}

static void *session_main(void *arg)
{
	struct mds_client *m = arg;
	struct mds_session *s = &m->session;
	uint64_t t0, now, next, iv, tmo, id, seq;
	struct mds_conn *c;

	on_session_thread = true;
	t0 = mdsc_lock(m);
	while (!m->stopping) {
		m->kick = false;
		now = now_mono_ns();
		next = now + 1000000000ull;
		c = s->conn;
		if (c && atomic_load(&c->dead)) {
			s->conn = NULL;
			if (s->state != SESS_CLOSING && s->state != SESS_CLOSED && s->state != SESS_EVICTED)
				s->state = s->id ? SESS_RECONNECTING : SESS_NEW;
			s->next_attempt_ns = now;       /* first attempt at once, then back off */
			pthread_cond_broadcast(&m->session_cond);
			mdsc_unlock(m, SEC_SESSION, t0);
			conn_reap(c);
			t0 = mdsc_lock(m);
			continue;
		}
		if (!c && (m->want_session || s->id) && s->state != SESS_CLOSING && s->state != SESS_CLOSED) {
			if (now >= s->next_attempt_ns) {
				mdsc_unlock(m, SEC_SESSION, t0);
				connect_session(m);
				t0 = mdsc_lock(m);
				continue;
			}
			if (s->next_attempt_ns < next)
				next = s->next_attempt_ns;
		}
		if (c && s->state == SESS_OPEN) {
			iv = renew_interval_locked(m);
			tmo = mdsc_secs_to_ns(CFG_client_session_timeout);
			if (conn_stalled_ns(c, now) > send_stall_ns()) {
				/* the writer made no progress: with client_session_timeout 0
				 * nothing else would end a socket the MDS stopped reading */
				conn_mark_dead(c, false, 0, NULL);
				mdsc_unlock(m, SEC_SESSION, t0);
				derr(CLIENT, "mds %s: nothing could be sent for %.1f s: declaring the connection dead",
				     m->addr, (double)send_stall_ns() / 1e9);
				t0 = mdsc_lock(m);
				continue;
			}
			if (tmo && s->last_renew_sent_ns > s->last_renew_ack_ns &&
			    mono_since(now, atomic_load(&c->last_rx_ns)) > tmo) {
				conn_mark_dead(c, false, 0, NULL);
				mdsc_unlock(m, SEC_SESSION, t0);
				derr(CLIENT, "mds %s: nothing heard for %.1f s with a renew outstanding: "
				     "declaring the connection dead", m->addr, (double)tmo / 1e9);
				t0 = mdsc_lock(m);
				continue;
			}
			if (now >= s->last_renew_sent_ns + iv) {
				uint32_t slow = m->slow_ops;
				char *slow_op = m->slow_op ? strdup(m->slow_op) : NULL;

				s->last_renew_sent_ns = now;
				seq = ++s->renew_seq;
				id = s->id;
				mdsc_conn_get(c);
				mdsc_unlock(m, SEC_SESSION, t0);
				/*
				 * Never wait for room here: this thread must stay
				 * free to run the watchdogs above.  A renew is queued
				 * even past the limit; one that does not go out still
				 * counts as outstanding, so the watchdog judges the
				 * silence.
				 */
				send_session_msg_slow(m, c, MDSP_SESSION_REQUEST_RENEW, id, seq, SEND_NOWAIT, slow, slow_op);
				free(slow_op);
				mdsc_conn_put(c);
				t0 = mdsc_lock(m);
				continue;
			}
			if (s->last_renew_sent_ns + iv < next)
				next = s->last_renew_sent_ns + iv;
			if (tmo && s->last_renew_sent_ns > s->last_renew_ack_ns &&
			    atomic_load(&c->last_rx_ns) + tmo < next)
				next = atomic_load(&c->last_rx_ns) + tmo + 1;
		}
		wait_log_locked(m, now, &next);
		if (!m->kick)
			mdsc_cond_wait(m, &m->tick_cond, next, SEC_SESSION, &t0);
	}
	mdsc_unlock(m, SEC_SESSION, t0);
	return NULL;
}

/*
 * mdsc_session_init - the session table's own state: its condition
 * variables, the client's uuid, state NEW.  No thread runs yet.
 */
void mdsc_session_init(struct mds_client *m)
{
	mdsc_cond_init(&m->session_cond);
	mdsc_cond_init(&m->tick_cond);
	if (getrandom(m->uuid, sizeof(m->uuid), 0) != (ssize_t)sizeof(m->uuid)) {
		uint64_t x = now_real_ns() ^ ((uint64_t)getpid() << 32);

		memcpy(m->uuid, &x, sizeof(x));
		memcpy(m->uuid + 8, &m, sizeof(void *) < 8 ? sizeof(void *) : 8);
	}
	m->session.state = SESS_NEW;
}

/*
 * mdsc_session_fini - undo mdsc_session_init.  The session thread is joined
 * and every connection reaped (mdsc_session_close), or none ever ran.
 */
void mdsc_session_fini(struct mds_client *m)
{
	assert(!m->session.conn && !m->session.handshaking);
	pthread_cond_destroy(&m->session_cond);
	pthread_cond_destroy(&m->tick_cond);
	memset(m->session.secret, 0, sizeof(m->session.secret));
	memset(m->key, 0, sizeof(m->key));
	free(m->auth_name);
	free(m->keyring_path);
	m->auth_name = m->keyring_path = NULL;
}

int mdsc_session_thread_start(struct mds_client *m)
{
	int r = pthread_create(&m->session_thread, NULL, session_main, m);

	return r ? -r : 0;
}

int mdsc_open_session(struct mds_client *m, int timeout_ms)
{
	struct mds_session *s = &m->session;
	uint64_t deadline = now_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	uint64_t t0;
	bool ok, rejected;
	int err;

	t0 = mdsc_lock(m);
	s->rejected = false;
	m->want_session = true;
	if (!s->conn)
		s->next_attempt_ns = 0;
	mdsc_kick_locked(m);
	while (s->state != SESS_OPEN && !s->rejected && !m->stopping) {
		if (mdsc_cond_wait(m, &m->session_cond, deadline, SEC_SESSION, &t0) == -ETIMEDOUT)
			break;
	}
	ok = s->state == SESS_OPEN;
	err = s->last_error;
	rejected = s->rejected;
	if (!ok && !s->id && !atomic_load(&m->nr_waiting))
		m->want_session = false;        /* nobody waits for it: stop trying */
	mdsc_unlock(m, SEC_SESSION, t0);
	if (ok)
		return 0;
	if (!rejected && err != -ECONNREFUSED && err != -EINVAL && err != -EHOSTUNREACH)
		err = -ETIMEDOUT;
	if (rejected && (err == -ENOKEY || err == -EKEYREJECTED || err == -EACCES)) {
		char msg[sizeof(s->auth_error)];

		t0 = mdsc_lock(m);
		memcpy(msg, s->auth_error, sizeof(msg));
		mdsc_unlock(m, SEC_SESSION, t0);
		derr(CLIENT, "no session with the mds at %s: authentication as %s failed: %s", m->addr, m->auth_name,
		     *msg ? msg : strerror(-err));
		return err;
	}
	derr(CLIENT, "no session with the mds at %s within %d ms: %s%s", m->addr, timeout_ms, strerror(-err),
	     err == -ECONNREFUSED ? " (is loligo-mds running there? see client_mds_addr)" : "");
	return err;
}

/* Log, one line each (the first UNMOUNT_LIST_MAX), the requests not SAFE
 * that an unmount gives up on, and what each may have cost.  No lock held. */
#define UNMOUNT_LIST_MAX 32
static void unmount_report(struct mds_client *m)
{
	double bound = (double)mdsc_secs_to_ns(CFG_client_unmount_timeout) / 1e9;
	uint64_t idx = 0, nunsafe = 0, nsent = 0, nunsent = 0, n = 0;
	struct mdsc_req *r;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		uint32_t st = atomic_load(&r->state);
		const struct mdsp_request *a = &r->pub.args;
		const char *what;

		if (st & (RS_GOT_SAFE | RS_ABORTED)) {
			mdsc_req_put(r);
			continue;
		}
		if (st & RS_GOT_UNSAFE) {
			what = "answered UNSAFE: applied by the MDS, not known to be durable (lost if the MDS "
			       "crashed before writing its journal)";
			nunsafe++;
		} else if (atomic_load(&r->sent_gen)) {
			what = "sent, never answered: the MDS may or may not have run it";
			nsent++;
		} else {
			what = "never sent: not applied";
			nunsent++;
		}
		if (n++ < UNMOUNT_LIST_MAX)
			derr(CLIENT, "mds %s: unmount: giving up on tid %llu %s %s%s(ino %llu): %s", m->addr,
			     (unsigned long long)r->tid, mdsp_op_name(a->op), a->name ? a->name : "",
			     a->name ? " " : "", (unsigned long long)a->ino, what);
		mdsc_req_put(r);
	}
	if (n)
		derr(CLIENT, "mds %s: unmount: %llu request(s) not safe within client_unmount_timeout (%.1f s): "
		     "%llu answered UNSAFE, %llu unanswered, %llu never sent%s", m->addr, (unsigned long long)n, bound,
		     (unsigned long long)nunsafe, (unsigned long long)nsent, (unsigned long long)nunsent,
		     n > UNMOUNT_LIST_MAX ? " (the first ones listed above)" : "");
}

/*
 * What an unmount waits for: every request SAFE, until @deadline_ns
 * (client_unmount_timeout from the start of the unmount), also while the
 * session is away: an MDS that comes back within the bound gets the UNSAFE
 * requests replayed, which makes them durable.  What is not SAFE by then is
 * logged, request by request, and the caller gives up on it.  No lock held.
 */
static void unmount_sync(struct mds_client *m, uint64_t deadline_ns)
{
	uint64_t t0 = now_mono_ns(), idx = 0, n = 0, lt;
	uint64_t tmo = deadline_ns > t0 ? deadline_ns - t0 : 0;
	struct mds_session *s = &m->session;
	struct mdsc_req *r;
	bool open;
	int ret;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		if (!(atomic_load(&r->state) & (RS_GOT_SAFE | RS_ABORTED)))
			n++;
		mdsc_req_put(r);
	}
	if (!n)
		return;
	lt = mdsc_lock(m);
	open = s->state == SESS_OPEN && s->conn;
	mdsc_unlock(m, SEC_SESSION, lt);
	if (!open && tmo)
		dinfo(CLIENT, "mds %s: unmount: waiting up to %.1f s more (client_unmount_timeout) for the MDS to "
		      "come back: %llu request(s) not safe yet", m->addr, (double)tmo / 1e9, (unsigned long long)n);
	ret = tmo ? mdsc_sync_until(m, deadline_ns) : -ETIMEDOUT;
	if (ret == -ETIMEDOUT)
		unmount_report(m);
}

void mdsc_session_close(struct mds_client *m, uint64_t unmount_deadline_ns)
{
	struct mds_session *s = &m->session;
	uint64_t t0, deadline, id;
	struct mds_conn *c = NULL;

	/* bounded: teardown must not hang on a dead MDS */
	unmount_sync(m, unmount_deadline_ns);
	t0 = mdsc_lock(m);
	if (s->state == SESS_OPEN && s->conn) {
		s->state = SESS_CLOSING;
		c = s->conn;
		mdsc_conn_get(c);
		id = s->id;
		mdsc_unlock(m, SEC_SESSION, t0);
		/* bounded: a sender stuck on a stalled socket must not hang the unmount */
		send_session_msg(m, c, MDSP_SESSION_REQUEST_CLOSE, id, 0, CLOSE_WAIT_MS * 1000000ull);
		mdsc_conn_put(c);
		deadline = now_mono_ns() + CLOSE_WAIT_MS * 1000000ull;
		t0 = mdsc_lock(m);
		while (s->state == SESS_CLOSING && s->conn && !atomic_load(&s->conn->dead))
			if (mdsc_cond_wait(m, &m->session_cond, deadline, SEC_SESSION, &t0) == -ETIMEDOUT)
				break;
		if (s->state == SESS_CLOSED) {
			mdsc_unlock(m, SEC_SESSION, t0);
			dout(CLIENT, 1, "mds %s: session %llu closed", m->addr, (unsigned long long)id);
			t0 = mdsc_lock(m);
		}
	}
	m->stopping = true;
	if (s->handshaking)             /* an MDS that accepted but does not answer */
		conn_mark_dead(s->handshaking, false, 0, NULL);
	mdsc_kick_locked(m);
	mdsc_unlock(m, SEC_SESSION, t0);
	pthread_join(m->session_thread, NULL);

	t0 = mdsc_lock(m);
	c = s->conn;
	s->conn = NULL;
	s->state = SESS_CLOSED;
	pthread_cond_broadcast(&m->session_cond);
	mdsc_unlock(m, SEC_SESSION, t0);
	if (c)
		conn_reap(c);
}

/* ---- caps, state, admin ------------------------------------------------------------------ */

int mdsc_send_caps(struct mds_client *m, const struct mdsp_caps *caps)
{
	struct mdsp_msg msg = { .type = MDSP_MSG_CAPS };
	struct mds_conn *c = NULL;
	struct mdsp_buf b;
	uint64_t t0;
	int r;

	t0 = mdsc_lock(m);
	if (m->session.state == SESS_OPEN && m->session.conn) {
		c = m->session.conn;
		mdsc_conn_get(c);
	}
	mdsc_unlock(m, SEC_OTHER, t0);
	if (!c)
		return -ENOTCONN;
	msg.caps = *caps;
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &msg);
	if (!r)
		r = conn_send_wait(c, &b, SEND_NOWAIT);         /* documented never to block */
	mdsp_buf_free(&b);
	mdsc_conn_put(c);
	return r;
}

uint64_t mdsc_max_file_size(struct mds_client *m)
{
	return atomic_load(&m->max_file_size);
}

bool mdsc_is_open(struct mds_client *m)
{
	uint64_t t0 = mdsc_lock(m);
	bool open = m->session.state == SESS_OPEN;

	mdsc_unlock(m, SEC_OTHER, t0);
	return open;
}

struct json_object *mdsc_session_json(struct mds_client *m)
{
	struct mds_session *s = &m->session;
	struct json_object *o = json_object_new_object();
	uint64_t now = now_mono_ns(), t0;

	if (!o)
		return NULL;
	t0 = mdsc_lock(m);
	json_object_object_add(o, "mds", json_object_new_string(m->addr));
	json_object_object_add(o, "client", json_object_new_string(m->name));
	json_object_object_add(o, "state", json_object_new_string(state_name(s->state)));
	json_object_object_add(o, "session_id", json_object_new_uint64(s->id));
	json_object_object_add(o, "conn_gen", json_object_new_uint64(s->gen));
	json_object_object_add(o, "seq", json_object_new_uint64(s->renew_seq));
	json_object_object_add(o, "lease_ms", json_object_new_int64(s->lease_ms));
	json_object_object_add(o, "mds_epoch", json_object_new_uint64(s->mds_epoch));
	json_object_object_add(o, "last_renew_ack_age_ms",
			       json_object_new_double(s->last_renew_ack_ns ?
						      (double)(now - s->last_renew_ack_ns) / 1e6 : -1));
	json_object_object_add(o, "reconnects", json_object_new_int64(s->reconnects));
	json_object_object_add(o, "stale", json_object_new_int64(s->stale_count));
	if (s->last_error)
		json_object_object_add(o, "last_error", json_object_new_string(strerror(-s->last_error)));
	mdsc_unlock(m, SEC_OTHER, t0);
	return o;
}
