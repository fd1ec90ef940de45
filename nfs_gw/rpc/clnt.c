/*
 * clnt.c - RPC calls made by the server: NFSv4 callbacks.
 *
 * Two ways out:
 *
 * - rpc_xprt_call(): on a connection a client opened to us (the NFSv4.1
 *   back channel, RFC 8881 2.10.3.1).  The call record goes out through the
 *   transport's send queue, after the replies already queued, and the
 *   caller sleeps on a struct rpc_pending_call hung on the xprt.  The ring
 *   thread hands every REPLY record it reads on that connection to
 *   rpc_xprt_deliver_reply(), which finds the waiter by xid; a reply nobody
 *   waits for (late, after a timeout) is dropped.  When the connection
 *   closes the transport calls rpc_xprt_fail_calls(): waiters wake with
 *   -ENOTCONN and later calls fail at once, so no caller waits for a
 *   connection that is gone for longer than it takes to notice.
 *
 * - rpc_tcp_call(): on a TCP connection of our own (NFSv4.0, RFC 7530
 *   3.3.3: the client's callback server at the address SETCLIENTID gave).
 *   Blocking socket calls bounded by one deadline (non-blocking connect and
 *   poll), one call at a time per socket; records are reassembled with
 *   record.c under a size limit.
 *
 * Lock: x->call_lock is a leaf; it is taken by the ring thread (deliver,
 * fail) and by callers (register, wait, unregister).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/rpc/rpc.h"

struct rpc_pending_call {
	uint32_t xid;
	pthread_cond_t cond;             /* CLOCK_MONOTONIC */
	bool done;                       /* protected by x->call_lock */
	int err;                         /* protected by x->call_lock */
	uint8_t *reply;                  /* protected by x->call_lock */
	size_t reply_len;
	struct rpc_pending_call *next;   /* x->calls */
};

static _Atomic uint32_t xid_next;
static pthread_once_t xid_once = PTHREAD_ONCE_INIT;

static void xid_seed(void)
{
	uint32_t v = 0;

	/* a random start, so a restarted gateway does not reuse the xids a
	 * client may still remember */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)now_real_ns();
	atomic_store(&xid_next, v);
}

uint32_t rpc_new_xid(void)
{
	pthread_once(&xid_once, xid_seed);
	return atomic_fetch_add_explicit(&xid_next, 1, memory_order_relaxed);
}

static void unlink_call_locked(struct rpc_xprt *x, struct rpc_pending_call *pc)
{
	/* caller holds x->call_lock */
	struct rpc_pending_call **pp;

	for (pp = &x->calls; *pp; pp = &(*pp)->next) {
		if (*pp == pc) {
			*pp = pc->next;
			return;
		}
	}
}

int rpc_xprt_call(struct rpc_xprt *x, uint8_t *rec, size_t len, uint32_t xid, uint64_t timeout_ns, uint8_t **reply,
		  size_t *reply_len)
{
	struct rpc_pending_call pc = { .xid = xid };
	pthread_condattr_t ca;
	struct timespec ts;
	uint64_t deadline = now_mono_ns() + timeout_ns;
	int r;

	*reply = NULL;
	*reply_len = 0;
	if (!x->ops->send_call) {
		free(rec);
		return -ENOTCONN;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pc.cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&x->call_lock);
	if (x->calls_closed) {
		pthread_mutex_unlock(&x->call_lock);
		free(rec);
		r = -ENOTCONN;
		goto out;
	}
	pc.next = x->calls;
	x->calls = &pc;
	pthread_mutex_unlock(&x->call_lock);

	/* registered before it is sent: the reply cannot overtake us */
	r = x->ops->send_call(x, rec, len);

	pthread_mutex_lock(&x->call_lock);
	if (r && !pc.done) {
		pc.done = true;
		pc.err = r;
	}
	while (!pc.done) {
		uint64_t now = now_mono_ns();

		if (now >= deadline) {
			pc.done = true;
			pc.err = -ETIMEDOUT;
			break;
		}
		ts.tv_sec = (time_t)(deadline / 1000000000ull);
		ts.tv_nsec = (long)(deadline % 1000000000ull);
		pthread_cond_timedwait(&pc.cond, &x->call_lock, &ts);
	}
	unlink_call_locked(x, &pc);      /* if deliver/fail did not already */
	r = pc.err;
	if (!r) {
		*reply = pc.reply;
		*reply_len = pc.reply_len;
	} else {
		free(pc.reply);
	}
	pthread_mutex_unlock(&x->call_lock);
out:
	pthread_cond_destroy(&pc.cond);
	return r;
}

void rpc_xprt_deliver_reply(struct rpc_xprt *x, uint8_t *rec, size_t len)
{
	struct rpc_pending_call *pc;
	uint32_t xid = len >= 4 ? xdr_load_u32(rec) : 0;

	pthread_mutex_lock(&x->call_lock);
	for (pc = x->calls; pc; pc = pc->next)
		if (pc->xid == xid && !pc->done)
			break;
	if (pc) {
		unlink_call_locked(x, pc);
		pc->reply = rec;
		pc->reply_len = len;
		pc->err = 0;
		pc->done = true;
		pthread_cond_signal(&pc->cond);
		rec = NULL;
	}
	pthread_mutex_unlock(&x->call_lock);
	if (rec) {
		dout(RPC, 5, "xprt %llu %s: reply xid %#x matches no call of ours (late?): dropped",
		     (unsigned long long)x->id, x->peer_str, xid);
		free(rec);
	}
}

void rpc_xprt_fail_calls(struct rpc_xprt *x, int err)
{
	struct rpc_pending_call *pc;

	pthread_mutex_lock(&x->call_lock);
	x->calls_closed = true;
	while ((pc = x->calls)) {
		x->calls = pc->next;
		pc->done = true;
		pc->err = err;
		pthread_cond_signal(&pc->cond);
	}
	pthread_mutex_unlock(&x->call_lock);
}

/* ---- our own TCP connection (NFSv4.0 callbacks) ----------------------------- */

/* Wait for @events on @fd until @deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t now;
	int n;

	for (;;) {
		now = now_mono_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int tcp_connect(const struct sockaddr *sa, socklen_t sl, uint64_t deadline, int *out)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r, err = 0, one = 1;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, sa, sl) < 0) {
		if (errno != EINPROGRESS) {
			r = -errno;
			goto fail;
		}
		r = wait_fd(fd, POLLOUT, deadline);
		if (r)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
			r = err ? -err : -errno;
			goto fail;
		}
	}
	*out = fd;
	return 0;
fail:
	close(fd);
	return r;
}

static int tcp_send_all(int fd, const uint8_t *p, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(fd, POLLOUT, deadline);
			if (r)
				return r;
		} else if (n < 0 && errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

int rpc_tcp_call(int *fd, const struct sockaddr *sa, socklen_t sl, const uint8_t *rec, size_t len, uint32_t xid,
		 size_t max_reply, uint64_t timeout_ns, uint8_t **reply, size_t *reply_len)
{
	uint64_t deadline = now_mono_ns() + timeout_ns;
	struct rpc_rm rm;
	uint8_t buf[4096], *got;
	size_t off = 0, n = 0, used, glen;
	int r;

	*reply = NULL;
	*reply_len = 0;
	if (*fd < 0) {
		r = tcp_connect(sa, sl, deadline, fd);
		if (r)
			return r;
	}
	r = tcp_send_all(*fd, rec, len, deadline);
	if (r)
		goto fail;
	rpc_rm_init(&rm, max_reply, 64);
	for (;;) {
		if (off == n) {
			ssize_t k = recv(*fd, buf, sizeof(buf), 0);

			if (k == 0) {
				r = -ECONNRESET;
				break;
			}
			if (k < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK) {
					r = -errno;
					break;
				}
				r = wait_fd(*fd, POLLIN, deadline);
				if (r)
					break;
				continue;
			}
			off = 0;
			n = (size_t)k;
		}
		r = rpc_rm_feed(&rm, buf + off, n - off, &used);
		off += used;
		if (r < 0) {
			r = r == -ENOMEM ? r : -EMSGSIZE;
			break;
		}
		if (r == 0)
			continue;
		got = rpc_rm_take(&rm, &glen);
		if (!got) {
			r = -ENOMEM;
			break;
		}
		if (glen >= 8 && xdr_load_u32(got) == xid && xdr_load_u32(got + 4) == RPC_REPLY) {
			*reply = got;
			*reply_len = glen;
			r = 0;
			break;
		}
		free(got);    /* a stray record: not ours */
		if (now_mono_ns() >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
	}
	rpc_rm_free(&rm);
	if (!r)
		return 0;
fail:
	close(*fd);
	*fd = -1;
	return r;
}
