/*
 * mds_client_conn.c - one connection to the MDS (part of the session layer,
 * mds_client_session.c has the whole story): the socket and its connect
 * (mdsc_tcp_connect, bounded, with SO_SNDTIMEO/TCP_USER_TIMEOUT set to the
 * stall bound), the bounded out queue and the writer thread that drains it
 * in batched writevs (mdsc_conn_send, mdsc_conn_send_wait), the receive
 * buffer that mdsc_conn_recv decodes frames from (MAC checked), and the
 * connection's death (mdsc_conn_mark_dead: every waiter woken, the socket
 * shut down).  Locks: c->out_lock (the out queue, leaf under the client
 * mutex and in->lock, see types_int.h); the reader and writer threads
 * hold a reference each (mdsc_conn_get/put).
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

struct mds_conn *mdsc_conn_new(struct mds_client *m, int fd)
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
void mdsc_conn_mark_dead(struct mds_conn *c, bool wake, int err, const char *why)
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
		mdsc_kick(c->mdsc);
}

/*
 * How long a stalled socket may hold things up: the send timeout
 * (SO_SNDTIMEO: no byte accepted for this long fails the writer's write),
 * the longest the session thread waits for room in a full out queue, and
 * what its watchdog allows a queue that makes no progress.
 * client_session_timeout, or STALL_DEFAULT_NS when that is 0.
 */
#define STALL_DEFAULT_NS 30000000000ull

uint64_t mdsc_send_stall_ns(void)
{
	uint64_t tmo = mdsc_secs_to_ns(CFG_client_session_timeout);

	return tmo ? tmo : STALL_DEFAULT_NS;
}

/* Set on the session thread: its sends never wait for room unbounded. */
__thread bool mdsc_on_session_thread;

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
/*
 * send_queue_locked - one sendmsg of the frames at the head of @c's queue
 * (up to WRITE_BATCH), and what went out taken off it onto *@done (to be
 * freed without the lock).  Caller holds out_lock, with c->writing false;
 * the lock is dropped across the system call, c->writing set meanwhile.
 * The cork is lifted: these frames are going.  Return: the bytes sent, 0
 * when the socket took nothing, or -errno (-EAGAIN with MSG_DONTWAIT).
 */
static ssize_t send_queue_locked(struct mds_conn *c, int flags, struct out_frame **done)
{
	struct mds_client *m = c->mdsc;
	struct iovec iov[WRITE_BATCH];
	struct msghdr mh = { .msg_iov = iov };
	struct out_frame *f, **dtail = done;
	size_t left;
	ssize_t n;
	int k = 0, err;

	for (f = c->out_head; f && k < WRITE_BATCH; f = f->next, k++) {
		iov[k].iov_base = f->b.data + (k ? 0 : c->out_off);
		iov[k].iov_len = f->b.len - (k ? 0 : c->out_off);
	}
	c->writing = true;
	c->cork_until = 0;
	pthread_mutex_unlock(&c->out_lock);
	mh.msg_iovlen = (size_t)k;
	n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | flags);
	err = errno;
	pthread_mutex_lock(&c->out_lock);
	c->writing = false;
	if (n <= 0)
		return n < 0 ? -err : 0;
	hist_add(&m->frames_per_write, (uint64_t)k);
	atomic_store_explicit(&c->last_tx_ns, now_mono_ns(), memory_order_relaxed);
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
		c->out_nframes--;
		frame_dequeued(m, f);
		f->next = NULL;
		*dtail = f;
		dtail = &f->next;
	}
	pthread_cond_broadcast(&c->room_cond);
	return n;
}

/*
 * Corks armed within the last CORK_WARM_NAPS naps keep the writer napping
 * (client_mds_cork_us at a time) rather than sleeping until signalled: a
 * nap costs one timer wake-up per client_mds_cork_us however many corks it
 * serves, where waking the writer for each cork's timer cost one per cork,
 * i.e. per file of an untar or a create loop.
 */
#define CORK_WARM_NAPS 16

/* How long the idle writer naps at @now: 0, sleep until signalled (no cork lately).  out_lock held. */
static uint64_t cork_nap_ns(struct mds_conn *c, uint64_t now)
{
	uint64_t cork_ns = cfg_uint(CFG_client_mds_cork_us) * 1000ull;

	if (!cork_ns || !c->last_cork_ns || now - c->last_cork_ns >= CORK_WARM_NAPS * cork_ns)
		return 0;
	return cork_ns;
}

/* The writer sleeps on out_cond until signalled or @until (UINT64_MAX: no
 * bound), saying so in writer_wakes_by meanwhile.  out_lock held. */
static void writer_sleep_until(struct mds_conn *c, uint64_t until)
{
	c->writer_wakes_by = until;
	if (until == UINT64_MAX) {
		pthread_cond_wait(&c->out_cond, &c->out_lock);
	} else {
		struct timespec ts = ns_to_timespec(until);

		pthread_cond_timedwait(&c->out_cond, &c->out_lock, &ts);
	}
	c->writer_wakes_by = 0;
}

static void *writer_main(void *arg)
{
	struct mds_conn *c = arg;
	struct mds_client *m = c->mdsc;
	struct out_frame *f, *done;
	const char *why = NULL;
	ssize_t n;
	int err = 0;

	pthread_setname_np(pthread_self(), "mdsc-writer");
	pthread_mutex_lock(&c->out_lock);
	for (;;) {
		/* a submitter may be sending straight to an idle socket: after
		 * it; corked frames (nobody waits for them) when the cork ends */
		while (!atomic_load(&c->dead)) {
			uint64_t now = now_mono_ns(), nap;

			if (c->out_head && !c->writing && !(c->cork_until && now < c->cork_until))
				break;
			if (c->out_head && !c->writing) {
				writer_sleep_until(c, c->cork_until);
			} else if ((nap = cork_nap_ns(c, now))) {
				/* corks lately: nap, so that the next one
				 * needs no wake-up (writer_wakes_by) */
				writer_sleep_until(c, now + nap);
			} else {
				writer_sleep_until(c, UINT64_MAX);
			}
		}
		if (atomic_load(&c->dead))
			break;
		done = NULL;
		n = send_queue_locked(c, 0, &done);
		if (n == -EINTR)
			continue;
		if (n <= 0) {
			err = n == 0 ? -EIO : (n == -EAGAIN || n == -EWOULDBLOCK) ? -ETIMEDOUT : (int)n;
			why = err == -ETIMEDOUT ? "send stalled: the mds stopped reading" : "send failed";
			break;
		}
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
	c->out_nframes = 0;
	c->out_off = 0;
	c->cork_until = 0;
	pthread_cond_broadcast(&c->room_cond);
	pthread_mutex_unlock(&c->out_lock);
	frames_free(f);
	/* a connection we shut down ourselves ends quietly */
	if (err)
		mdsc_conn_mark_dead(c, true, atomic_load(&c->dead) ? 0 : err, why);
	return NULL;
}


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
 * @cork_ns (mdsc_conn_send_corked): not 0 for a frame nobody waits for,
 * which may wait that long in the queue for others to share its send.
 * Return: 0, -ENOTCONN (dead), -ETIMEDOUT (no room within the bound), -ENOMEM.
 * A send of our own that the socket refuses (EPIPE, ECONNRESET: the MDS
 * went away and the reader has not noticed yet) kills the connection and is
 * -ENOTCONN too, never the socket's errno: callers wait out -ENOTCONN for
 * the session to come back (lc_cap_flush_sync) and would hand anything
 * else to the application (an fsync() failing with ECONNRESET across an
 * MDS restart).
 */
static int conn_send(struct mds_conn *c, struct mdsp_buf *b, uint64_t wait_ns, uint64_t cork_ns)
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
			mdsc_conn_mark_dead(c, true, r, "send stalled: the out queue stayed full");
		return r;
	}
	/* the sequence number follows the order frames go out: it is set here,
	 * under out_lock, and the crcs and the MAC that cover it with it */
	r = mdsp_frame_seal(f->b.data, f->b.len, ++c->out_seq, c->tx_mac, f->b.data + f->b.len);
	if (r) {
		pthread_mutex_unlock(&c->out_lock);
		mdsp_buf_free(&f->b);
		free(f);
		mdsc_conn_mark_dead(c, true, r, "cannot seal a frame (MAC)");
		return r;
	}
	if (c->tx_mac)
		f->b.len += MDSP_MAC_LEN;
	if (cork_ns && !c->writing && (!c->out_head || c->cork_until)) {
		/*
		 * Nobody waits for this one's reply: hold it, so that the
		 * frames after it (an untar's create and setattrs, file after
		 * file) go out in one send and the MDS answers them in one.
		 * The writer sends the queue when the cork ends, or at once
		 * with a full batch; an uncorked frame sends it sooner.
		 */
		uint64_t now = now_mono_ns();
		bool first = !c->out_head;

		*c->out_tail = f;
		c->out_tail = &f->next;
		c->out_bytes += f->b.len;
		c->out_nframes++;
		atomic_fetch_add_explicit(&m->out_bytes, f->b.len, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->out_frames, 1, memory_order_relaxed);
		perf_inc(&m->c_corked, 1);
		if (first) {
			c->cork_until = now + cork_ns;
			c->last_cork_ns = now;
			atomic_store_explicit(&c->last_tx_ns, now, memory_order_relaxed);
		}
		if (c->out_nframes >= WRITE_BATCH / 2)
			c->cork_until = now;    /* a batch is full: the writer sends it now */
		/*
		 * The writer must be awake by cork_until.  It is if it is not
		 * asleep (it looks at the queue before sleeping) or naps no
		 * longer than that (writer_wakes_by); only a writer asleep for
		 * longer is woken, for its timer.
		 */
		if ((first || c->cork_until == now) && c->writer_wakes_by > c->cork_until) {
			if (c->cork_until != now)
				perf_inc(&m->c_cork_wakes, 1);
			pthread_cond_signal(&c->out_cond);
		}
		pthread_mutex_unlock(&c->out_lock);
		if (t0)
			hist_add(&m->send_wait, now_mono_ns() - t0);
		return 0;
	}
	if (c->cork_until && !c->writing) {
		/*
		 * Corked frames wait in the queue and this one must not: send
		 * them and it now, ourselves (MSG_DONTWAIT, as an idle socket's
		 * direct send), instead of waking the writer; it takes over
		 * only what the socket does not take at once.
		 */
		struct out_frame *done = NULL;
		ssize_t n;

		*c->out_tail = f;
		c->out_tail = &f->next;
		c->out_bytes += f->b.len;
		c->out_nframes++;
		atomic_fetch_add_explicit(&m->out_bytes, f->b.len, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->out_frames, 1, memory_order_relaxed);
		do {
			n = send_queue_locked(c, MSG_DONTWAIT, &done);
		} while (n == -EINTR);
		r = n < 0 && n != -EAGAIN && n != -EWOULDBLOCK ? (int)n : 0;
		if (c->out_head)
			pthread_cond_signal(&c->out_cond);      /* the rest, if the socket took less */
		pthread_mutex_unlock(&c->out_lock);
		frames_free(done);
		if (t0)
			hist_add(&m->send_wait, now_mono_ns() - t0);
		if (!r)
			perf_inc(&m->c_direct_sends, 1);
		if (r) {
			mdsc_conn_mark_dead(c, true, r, "send failed");
			r = -ENOTCONN;  /* the frame went with the connection: as if dead already */
		}
		return r;
	}
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
			if (r) {
				mdsc_conn_mark_dead(c, true, r, "send failed");
				r = -ENOTCONN;
			}
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
	c->out_nframes++;
	atomic_fetch_add_explicit(&m->out_bytes, f->b.len, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->out_frames, 1, memory_order_relaxed);
	pthread_cond_signal(&c->out_cond);
	pthread_mutex_unlock(&c->out_lock);
	if (t0)
		hist_add(&m->send_wait, now_mono_ns() - t0);
	return 0;
}

int mdsc_conn_send_wait(struct mds_conn *c, struct mdsp_buf *b, uint64_t wait_ns)
{
	return conn_send(c, b, wait_ns, 0);
}

void mdsc_conn_uncork(struct mds_conn *c)
{
	struct out_frame *done = NULL;
	ssize_t n;

	pthread_mutex_lock(&c->out_lock);
	if (c->cork_until && c->out_head && !c->writing && !atomic_load(&c->dead)) {
		do {
			n = send_queue_locked(c, MSG_DONTWAIT, &done);
		} while (n == -EINTR);
		/* what the socket did not take, or an error to meet: the writer's */
		if (c->out_head)
			pthread_cond_signal(&c->out_cond);
	}
	pthread_mutex_unlock(&c->out_lock);
	frames_free(done);
}

int mdsc_conn_send(struct mds_conn *c, struct mdsp_buf *b)
{
	/* the session thread (replay, wait-list kick) waits for room only so long */
	return conn_send(c, b, mdsc_on_session_thread ? mdsc_send_stall_ns() : SEND_WAIT, 0);
}

int mdsc_conn_send_corked(struct mds_conn *c, struct mdsp_buf *b)
{
	uint64_t cork_ns = cfg_uint(CFG_client_mds_cork_us) * 1000ull;

	return conn_send(c, b, mdsc_on_session_thread ? mdsc_send_stall_ns() : SEND_WAIT, cork_ns);
}

int mdsc_conn_send_corked_nowait(struct mds_conn *c, struct mdsp_buf *b)
{
	return conn_send(c, b, SEND_NOWAIT, cfg_uint(CFG_client_mds_cork_us) * 1000ull);
}

/* Bytes queued on @c and how long since the queue last moved (0: empty). */
uint64_t mdsc_conn_stalled_ns(struct mds_conn *c, uint64_t now)
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
int mdsc_conn_recv(struct mds_conn *c, struct mdsp_msg *msg, int timeout_ms, const char **why)
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
int mdsc_tcp_connect(const char *addr, int timeout_ms, unsigned int stall_ms, int *out, const char **why)
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

