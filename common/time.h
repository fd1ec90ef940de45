/* time.h - clocks used everywhere: monotonic for intervals, realtime for stamps. */
#ifndef LOLIGO_COMMON_TIME_H
#define LOLIGO_COMMON_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time (a system call: no vDSO for this clock). */
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The time from @then to @now, 0 if @then is the later one.  Every age
 * taken of a stamp another thread may write (a revoke sent, a renew, a
 * byte received) goes through this: @now was read first, so the stamp can
 * be newer, and a plain now - then would wrap to ~584 years and expire at
 * once what was just refreshed (the MDS evicted a client that way for a
 * revoke it had sent after its tick read the clock).
 */
static inline uint64_t mono_since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static inline uint64_t now_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline struct timespec ns_to_timespec(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull) };
	return ts;
}

/* absolute CLOCK_MONOTONIC deadline @ms from now, for pthread_cond_timedwait
 * on a condvar created with pthread_condattr_setclock(CLOCK_MONOTONIC). */
static inline struct timespec deadline_ms(uint64_t ms)
{
	return ns_to_timespec(now_mono_ns() + ms * 1000000ull);
}

#endif
