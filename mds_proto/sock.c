/*
 * sock.c - blocking helpers to send and receive whole frames on a socket:
 * the client's reader thread, tests and tools use them; the MDS has its own
 * event loop and calls the pure decoders directly.
 *
 * Both are EINTR-safe and also work on non-blocking descriptors (they poll
 * when the socket would block).  Sends use MSG_NOSIGNAL so a peer that went
 * away is an -EPIPE, not a SIGPIPE.
 */
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mds_proto/proto_int.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until @fd is ready for @events, for at most @timeout_ms (< 0: forever).
 * Return 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? 0 : now_ms() + timeout_ms;
	struct pollfd pfd = { .fd = fd, .events = events };
	int r, t = timeout_ms;

	for (;;) {
		r = poll(&pfd, 1, t);
		if (r > 0)
			return 0;       /* ready, or an error/hangup the next call reports */
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
		if (timeout_ms >= 0) {
			int64_t left = deadline - now_ms();

			t = left > 0 ? (int)left : 0;
		}
	}
}

int mdsp_send(int fd, const struct mdsp_buf *b)
{
	const uint8_t *p = b->data;
	size_t left = b->len;
	bool sock = true;
	ssize_t n;
	int r;

	if (b->oom)
		return -ENOMEM;
	while (left) {
		n = sock ? send(fd, p, left, MSG_NOSIGNAL) : write(fd, p, left);
		if (n > 0) {
			p += n;
			left -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -EIO;
		if (errno == EINTR)
			continue;
		if (errno == ENOTSOCK && sock) {
			sock = false;   /* a pipe, in tests */
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			r = wait_fd(fd, POLLOUT, -1);
			if (r)
				return r;
			continue;
		}
		return -errno;
	}
	return 0;
}

/*
 * Read exactly @n bytes.  @timeout_ms bounds each wait for more data.
 * *@got counts what arrived of the current frame, so the caller can tell a
 * quiet connection (nothing yet) from a peer that stalled mid-frame.
 *
 * Data that is already there is taken with one non-blocking recv() and no
 * poll(): the usual case for a payload right behind its header.  Only when
 * nothing is there do we poll, which is also what makes the timeout work on
 * a blocking socket.  Non-sockets (pipes, in tests) always poll, then read.
 */
static int read_full(int fd, uint8_t *buf, size_t n, int timeout_ms, size_t *got)
{
	bool sock = true, wait = false;
	size_t done = 0;
	ssize_t k;
	int r;

	while (done < n) {
		if (wait || !sock) {
			r = wait_fd(fd, POLLIN, timeout_ms);
			if (r)
				return r;
			wait = false;
		}
		if (sock)
			k = recv(fd, buf + done, n - done, MSG_DONTWAIT);
		else
			k = read(fd, buf + done, n - done);
		if (k > 0) {
			done += (size_t)k;
			*got += (size_t)k;
			continue;
		}
		if (k == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			wait = true;
			continue;
		}
		if (errno == ENOTSOCK && sock) {
			sock = false;
			continue;
		}
		return -errno;
	}
	return 0;
}

int mdsp_recv(int fd, struct mdsp_msg *msg, int timeout_ms, const char **why)
{
	uint64_t seq = 0;

	return mdsp_recv_auth(fd, msg, timeout_ms, NULL, &seq, why);
}

int mdsp_recv_auth(int fd, struct mdsp_msg *msg, int timeout_ms, struct mdsp_mac *mac, uint64_t *last_seq,
		   const char **why)
{
	uint8_t hdr[MDSP_HDR_LEN], tag[MDSP_MAC_LEN];
	uint8_t *payload = NULL;
	struct mdsp_hdr h;
	const char *dummy;
	size_t got = 0;
	int r;

	if (!why)
		why = &dummy;
	*why = NULL;
	memset(msg, 0, sizeof(*msg));
	r = read_full(fd, hdr, sizeof(hdr), timeout_ms, &got);
	if (r)
		goto io_err;
	r = mdsp_decode_hdr(hdr, &h, why);
	if (r)
		return r;
	/* the length is bounded by MDSP_MAX_PAYLOAD now */
	payload = malloc(h.len ? h.len : 1);
	if (!payload) {
		*why = "out of memory";
		return -ENOMEM;
	}
	r = read_full(fd, payload, h.len, timeout_ms, &got);
	if (!r && (h.flags & MDSP_FRAME_MAC))
		r = read_full(fd, tag, sizeof(tag), timeout_ms, &got);
	if (r)
		goto io_err;
	if (mac) {
		r = mdsp_frame_verify(mac, &h, hdr, payload, (h.flags & MDSP_FRAME_MAC) ? tag : NULL, last_seq, why);
	} else if (h.flags & MDSP_FRAME_MAC) {
		*why = "frame with a MAC on a connection without keys";
		r = -EBADMSG;
	} else {
		*last_seq = h.seq;
	}
	if (!r)
		r = mdsp_decode_payload(&h, payload, h.len, msg, why);
	free(payload);
	if (!r)
		msg->seq = h.seq;
	return r;

io_err:
	free(payload);
	if (r == -ETIMEDOUT && got) {
		/* the stream is out of sync now: the caller must close it */
		*why = "peer stalled in the middle of a frame";
		return -ECONNABORTED;
	}
	if (r == -ETIMEDOUT)
		*why = "timed out";
	else if (r == -ECONNRESET)
		*why = got ? "peer closed the connection mid-frame" : "peer closed the connection";
	else
		*why = "receive error";
	return r;
}
