/*
 * uring_wait.h - wait for io_uring completions in a way valgrind can run.
 *
 * valgrind (3.19 and older) runs one guest thread at a time and does not
 * treat io_uring_enter(IORING_ENTER_GETEVENTS) as a blocking syscall: a
 * thread asleep in io_uring_wait_cqe() keeps valgrind's lock, and the
 * thread that would wake it (an eventfd write, a submission) never runs, so
 * every daemon hangs at its first store or RPC wait.  Under valgrind these
 * helpers submit, then sleep in poll(2) on the ring fd (POLLIN once a CQE is
 * posted), which valgrind does treat as blocking; the wait is bounded (100 ms
 * slices) so completions that need task work to post never strand a caller.
 * Outside valgrind they are the plain liburing calls.
 *
 * Callers must tolerate returning with no CQE ready (they peek or iterate).
 * lg_uring_mark_defined() tells memcheck what a read completion filled in.
 */
#ifndef LOLIGO_COMMON_URING_WAIT_H
#define LOLIGO_COMMON_URING_WAIT_H

#include <poll.h>
#include <stdbool.h>
#include <liburing.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define LOLIGO_HAVE_VALGRIND_H 1
#endif
#endif

/* The kernel fills read/recv buffers of io_uring behind memcheck's back:
 * call this on a completion with the bytes it delivered, or memcheck
 * reports every use of received data as uninitialised.  A few instructions,
 * and nothing at all without valgrind's headers. */
#ifdef LOLIGO_HAVE_VALGRIND_H
#define lg_uring_mark_defined(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define lg_uring_mark_defined(p, n) ((void)(p), (void)(n))
#endif

static inline bool lg_on_valgrind(void)
{
#ifdef LOLIGO_HAVE_VALGRIND_H
	return RUNNING_ON_VALGRIND != 0;
#else
	return false;
#endif
}

/* valgrind only: submit what is queued, then wait up to timeout_ms (<0: one
 * 100 ms slice) for a CQE by polling the ring fd */
static inline void lg_uring_poll_wait(struct io_uring *ring, int timeout_ms)
{
	struct pollfd pfd = { .fd = ring->ring_fd, .events = POLLIN };

	io_uring_submit(ring);
	if (io_uring_cq_ready(ring))
		return;
	poll(&pfd, 1, timeout_ms < 0 || timeout_ms > 100 ? 100 : timeout_ms);
}

/* io_uring_submit_and_wait(ring, 1), valgrind-safe; may return with no CQE */
static inline void lg_uring_submit_and_wait(struct io_uring *ring)
{
	if (lg_on_valgrind())
		lg_uring_poll_wait(ring, -1);
	else
		io_uring_submit_and_wait(ring, 1);
}

/* io_uring_wait_cqe(_timeout) without taking the CQE, valgrind-safe;
 * ts NULL: no timeout.  May return with no CQE ready. */
static inline void lg_uring_wait(struct io_uring *ring, struct __kernel_timespec *ts)
{
	struct io_uring_cqe *cqe;

	if (lg_on_valgrind()) {
		long long ms = ts ? (long long)ts->tv_sec * 1000 + ts->tv_nsec / 1000000 : -1;
		lg_uring_poll_wait(ring, ms < 0 ? -1 : ms > 100 ? 100 : (int)ms);
	} else if (ts) {
		io_uring_wait_cqe_timeout(ring, &cqe, ts);
	} else {
		io_uring_wait_cqe(ring, &cqe);
	}
}

#endif
