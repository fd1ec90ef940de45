/*
 * tests/lib/wait.h - wait for an event, never for the clock.
 *
 * A test that needs something to have happened (a counter moved, a waiter
 * parked, a session closed) polls the condition that says so.  The bound is
 * not a timing claim: it is generous (LT_HANG_S, 20 s unless the environment
 * says LOLIGO_TEST_HANG_S) and only turns a real hang into a failure with a
 * message instead of check's bare timeout.  Latency claims belong in
 * tools/bench/ (CONVENTIONS.md, "Tests and benchmarks").
 *
 * A test that deliberately lets time pass to show that something does NOT
 * happen says so in a comment next to its sleep; that is not synchronisation.
 */
#ifndef LOLIGO_TESTS_LIB_WAIT_H
#define LOLIGO_TESTS_LIB_WAIT_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define LT_HANG_S 20

static inline uint64_t lt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Monotonic seconds, for tests that report or bound durations. */
static inline double lt_now_s(void)
{
	return (double)lt_mono_ns() / 1e9;
}

/* A 20 ms pause between the polls of a hand-written wait loop. */
static inline void lt_nap(void)
{
	struct timespec ts = { 0, 20 * 1000000L };

	nanosleep(&ts, NULL);
}

/* The hang bound in seconds: LOLIGO_TEST_HANG_S, else @dflt (suites whose
 * waits include a failover use a longer default than LT_HANG_S). */
static inline double lt_hang_s_or(double dflt)
{
	const char *e = getenv("LOLIGO_TEST_HANG_S");

	return e && atof(e) > 0 ? atof(e) : dflt;
}

/* The hang bound in ns (LOLIGO_TEST_HANG_S overrides LT_HANG_S). */
static inline uint64_t lt_hang_ns(void)
{
	const char *e = getenv("LOLIGO_TEST_HANG_S");
	long s = e ? atol(e) : 0;

	return (uint64_t)(s > 0 ? s : LT_HANG_S) * 1000000000ull;
}

/* Sleep between polls: 1 ms, growing to 20 ms, so a quick event is seen at
 * once and a slow one does not spin. */
static inline void lt_poll_pause(unsigned *us)
{
	usleep(*us);
	if (*us < 20000)
		*us *= 2;
}

/*
 * LT_WAIT_UNTIL(cond, fmt, ...) - poll @cond until it holds; fail the test
 * with the message if it still does not after the hang bound.
 */
#define LT_WAIT_UNTIL(cond, ...)                                                   \
	do {                                                                       \
		uint64_t lt_end_ = lt_mono_ns() + lt_hang_ns();                    \
		unsigned lt_us_ = 1000;                                            \
		while (!(cond)) {                                                  \
			ck_assert_msg(lt_mono_ns() < lt_end_, __VA_ARGS__);        \
			lt_poll_pause(&lt_us_);                                    \
		}                                                                  \
	} while (0)

/* The same, as a value: true when @cond came to hold, false on a hang
 * (for callers that must clean up before failing). */
#define LT_WAITED(cond)                                                            \
	({                                                                         \
		uint64_t lt_end_ = lt_mono_ns() + lt_hang_ns();                    \
		unsigned lt_us_ = 1000;                                            \
		bool lt_ok_;                                                       \
		while (!(lt_ok_ = (cond)) && lt_mono_ns() < lt_end_)               \
			lt_poll_pause(&lt_us_);                                    \
		lt_ok_;                                                            \
	})

#endif
