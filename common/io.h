/*
 * io.h - whole reads and writes on file descriptors.
 *
 * read(2), write(2), send(2) and recv(2) may move fewer bytes than asked
 * (a pipe, a socket, a signal); every caller that means "all of it" loops,
 * retries EINTR and tells an early end of file from an error.  These are
 * that loop, once.  All return 0 or a negative errno, never a count.
 *
 * Plain ones block (on a blocking fd).  The _deadline ones work on any
 * socket: they send and receive with MSG_DONTWAIT and poll(2) until
 * @deadline (a now_mono_ns() value), so a peer that stops reading or
 * writing cannot hold the caller past it.
 *
 * io_write_all() calls nothing but write(2): it is async-signal-safe.
 */
#ifndef LOLIGO_COMMON_IO_H
#define LOLIGO_COMMON_IO_H

#include <stddef.h>
#include <stdint.h>

/**
 * io_write_all - write all @len bytes of @buf to @fd with write(2).
 * Return: 0, -EIO if write(2) wrote nothing, or -errno.  Async-signal-safe.
 */
int io_write_all(int fd, const void *buf, size_t len);

/**
 * io_read_all - read exactly @len bytes into @buf from @fd with read(2).
 * Return: 0, -EPIPE at end of file before @len bytes, or -errno.
 */
int io_read_all(int fd, void *buf, size_t len);

/**
 * io_pwrite_all - pwrite(2) all @len bytes of @buf at @off.
 * Return: 0, -EIO if pwrite(2) wrote nothing, or -errno.
 */
int io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/**
 * io_send_all - send all @len bytes of @buf on socket @fd, with
 * MSG_NOSIGNAL (a closed peer is -EPIPE, not SIGPIPE).
 * Return: 0, -EIO if send(2) sent nothing, or -errno.
 */
int io_send_all(int fd, const void *buf, size_t len);

/**
 * io_send_all_deadline - io_send_all() that gives up at @deadline
 * (CLOCK_MONOTONIC ns, as now_mono_ns()).
 * Return: 0, -ETIMEDOUT, or -errno.
 */
int io_send_all_deadline(int fd, const void *buf, size_t len, uint64_t deadline);

/**
 * io_wait_deadline - poll(2) @fd for @events until @deadline (CLOCK_MONOTONIC ns).
 * Return: 0 when ready (or interrupted by a signal: try the I/O again),
 * -ETIMEDOUT, or -errno.
 */
int io_wait_deadline(int fd, short events, uint64_t deadline);

/**
 * io_recv_all_deadline - receive exactly @len bytes on socket @fd, giving
 * up at @deadline (CLOCK_MONOTONIC ns).
 * Return: 0, -EPIPE at end of stream before @len bytes, -ETIMEDOUT, or -errno.
 */
int io_recv_all_deadline(int fd, void *buf, size_t len, uint64_t deadline);

#endif
