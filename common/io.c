/*
 * io.c - whole reads and writes on file descriptors (io.h says why).
 *
 * No locks, no allocation, no logging: these run in any thread, and
 * io_write_all() in a signal handler (log.c's crash dump).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/io.h"
#include "common/time.h"

enum xfer { X_WRITE, X_READ, X_PWRITE, X_SEND };

static ssize_t xfer_once(int fd, char *p, size_t len, uint64_t off, enum xfer k)
{
	switch (k) {
	case X_WRITE:
		return write(fd, p, len);
	case X_READ:
		return read(fd, p, len);
	case X_PWRITE:
		return pwrite(fd, p, len, (off_t)off);
	case X_SEND:
		return send(fd, p, len, MSG_NOSIGNAL);
	}
	return -1;
}

/* The loop of every blocking helper: short transfers continue, EINTR retries. */
static int xfer_all(int fd, char *p, size_t len, uint64_t off, enum xfer k)
{
	while (len) {
		ssize_t n = xfer_once(fd, p, len, off, k);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return k == X_READ ? -EPIPE : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int io_write_all(int fd, const void *buf, size_t len)
{
	return xfer_all(fd, (char *)buf, len, 0, X_WRITE);
}

int io_read_all(int fd, void *buf, size_t len)
{
	return xfer_all(fd, buf, len, 0, X_READ);
}

int io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return xfer_all(fd, (char *)buf, len, off, X_PWRITE);
}

int io_send_all(int fd, const void *buf, size_t len)
{
	return xfer_all(fd, (char *)buf, len, 0, X_SEND);
}

int io_wait_deadline(int fd, short ev, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	uint64_t now = now_mono_ns();
	int r;

	if (now >= deadline)
		return -ETIMEDOUT;
	r = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return 0;
}

/* The loop of the deadline helpers: non-blocking sends or receives, poll between. */
static int xfer_all_deadline(int fd, char *p, size_t len, uint64_t deadline, bool in)
{
	int r;

	while (len) {
		ssize_t n = in ? recv(fd, p, len, MSG_DONTWAIT) : send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n == 0 && in)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			r = io_wait_deadline(fd, in ? POLLIN : POLLOUT, deadline);
			if (r)
				return r;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_send_all_deadline(int fd, const void *buf, size_t len, uint64_t deadline)
{
	return xfer_all_deadline(fd, (char *)buf, len, deadline, false);
}

int io_recv_all_deadline(int fd, void *buf, size_t len, uint64_t deadline)
{
	return xfer_all_deadline(fd, buf, len, deadline, true);
}
