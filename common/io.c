/*
 * io.c - whole reads and writes on file descriptors (io.h says why).
 *
 * No locks, no allocation, no logging: these run in any thread, and
 * io_write_all() in a signal handler (log.c's crash dump).
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/io.h"
#include "common/time.h"

int io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int io_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
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

int io_send_all_deadline(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const char *p = buf;
	int r;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			r = io_wait_deadline(fd, POLLOUT, deadline);
			if (r)
				return r;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_recv_all_deadline(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;
	int r;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			r = io_wait_deadline(fd, POLLIN, deadline);
			if (r)
				return r;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
