/*
 * lockdep.h - run-time lock-order checking for debug and test builds.
 *
 * A small cousin of the kernel's lockdep (Documentation/locking/lockdep-
 * design.rst).  Every lock belongs to a class: the place in the source
 * that initialised it (all inode locks are one class, whichever inode),
 * or, for a lock with a static initialiser, the lock itself.  Each thread
 * keeps the stack of locks it holds.  Taking lock B while holding A records
 * the order A -> B the first time it is seen, with where it happened; if
 * the graph of recorded orders already leads from B back to A, the two
 * orders can deadlock, and lockdep prints both (this thread's held locks
 * and call stack, and where the opposite order was first taken) and aborts.
 * So an inversion is caught the first time both orders have run, in any
 * two threads at any two moments, not only when they collide.
 *
 * Besides mutexes and rwlocks, a lock made of a flag and a condition
 * variable (a "pseudo-lock": the client's per-inode writeback, held from
 * wb_take() to wb_end()) takes part through lockdep_wait(),
 * lockdep_acquired() and lockdep_released() on a class of its own
 * (LOCKDEP_CLASS()).  Waiting for a lock of a class while holding another
 * lock of the same class is reported too: that is how two waves of
 * writebacks taken in opposite order deadlock.  A try-acquire never waits,
 * so it adds no order; locks taken under it do.
 *
 * lockdep_assert_held() is the kernel's lockdep_assert_held(): the first
 * line of a _locked helper.  lockdep_might_wait() says "this thread may
 * now block for a long time (an MDS round trip, store I/O)": holding any
 * mutex or rwlock there is reported (CONVENTIONS.md: no lock across I/O),
 * except a class the code declares as held across waits on purpose, with
 * the reason (lockdep_mutex_may_wait(): known debt, listed in
 * docs/LOCKING.md).
 *
 * Building: with LOLIGO_LOCKDEP defined (CMake option LOLIGO_LOCKDEP, on
 * for the Debug and RelWithDebInfo builds the suite runs), every file that
 * links loligo_common is compiled with this header forced in
 * (-include), and pthread_mutex_lock() and friends become the checked
 * versions below; without it, everything here compiles to nothing.  The
 * class of a mutex or rwlock is kept in padding glibc does not use for
 * the lock types we create (x86_64 glibc only: elsewhere the option is
 * refused at configure time).  LOLIGO_LOCKDEP=off in the environment
 * turns the checks off at run time; LOLIGO_LOCKDEP=warn reports without
 * aborting.
 *
 * The order the code is meant to follow is written in docs/LOCKING.md and
 * in the lock-order block of each header; lockdep checks what the code
 * actually does against itself, so a new inversion anywhere fails the
 * suite's runs.
 */
#ifndef LOLIGO_COMMON_LOCKDEP_H
#define LOLIGO_COMMON_LOCKDEP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A class for pseudo-locks: define one per kind with LOCKDEP_CLASS(). */
struct lockdep_class_key {
	const char *name;
	void *cls;                  /* set on first use */
};

#define LOCKDEP_CLASS(var, nm) struct lockdep_class_key var = { .name = (nm), .cls = 0 }

#ifdef LOLIGO_LOCKDEP

#define LOCKDEP_ENABLED 1

int lockdep_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a, const char *name, const char *file,
		       int line);
int lockdep_mutex_lock(pthread_mutex_t *m, const char *file, int line);
int lockdep_mutex_trylock(pthread_mutex_t *m, const char *file, int line);
int lockdep_mutex_unlock(pthread_mutex_t *m);
int lockdep_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a, const char *name, const char *file,
			int line);
int lockdep_rwlock_rdlock(pthread_rwlock_t *l, const char *file, int line);
int lockdep_rwlock_wrlock(pthread_rwlock_t *l, const char *file, int line);
int lockdep_rwlock_tryrdlock(pthread_rwlock_t *l, const char *file, int line);
int lockdep_rwlock_trywrlock(pthread_rwlock_t *l, const char *file, int line);
int lockdep_rwlock_unlock(pthread_rwlock_t *l);
int lockdep_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const char *file, int line);
int lockdep_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts, const char *file,
			   int line);

/* pseudo-locks (see the top) */
void lockdep_wait_at(struct lockdep_class_key *k, const void *obj, const char *file, int line);
void lockdep_wait_cond_at(struct lockdep_class_key *k, const void *obj, const void *mutex, const char *file, int line);
void lockdep_acquired_at(struct lockdep_class_key *k, const void *obj, bool try, const char *file, int line);
void lockdep_released(const void *obj);
bool lockdep_holds(const void *obj);
int lockdep_nheld_class(struct lockdep_class_key *k);
void lockdep_assert_held_at(const void *lock, const char *what, const char *file, int line);
void lockdep_might_wait_at(const char *what, const char *file, int line);
void lockdep_mutex_may_wait(pthread_mutex_t *m, const char *why);

/** lockdep_held_describe - this thread's held locks as text (for a stall report); @buf NUL-terminated. */
void lockdep_held_describe(char *buf, size_t len);
/** lockdep_reports - inversions reported so far (LOLIGO_LOCKDEP=warn keeps going after one). */
uint64_t lockdep_reports(void);

#define lockdep_wait(k, obj) lockdep_wait_at((k), (obj), __FILE__, __LINE__)
/* the wait is a pthread_cond_wait on @mutex (held now, released while it waits) */
#define lockdep_wait_cond(k, obj, mutex) lockdep_wait_cond_at((k), (obj), (mutex), __FILE__, __LINE__)
#define lockdep_acquired(k, obj, try) lockdep_acquired_at((k), (obj), (try), __FILE__, __LINE__)
#define lockdep_assert_held(l) lockdep_assert_held_at((l), #l, __FILE__, __LINE__)
#define lockdep_might_wait(what) lockdep_might_wait_at((what), __FILE__, __LINE__)

#ifndef LOCKDEP_NO_WRAP
#define pthread_mutex_init(m, a) lockdep_mutex_init((m), (a), #m, __FILE__, __LINE__)
#define pthread_mutex_lock(m) lockdep_mutex_lock((m), __FILE__, __LINE__)
#define pthread_mutex_trylock(m) lockdep_mutex_trylock((m), __FILE__, __LINE__)
#define pthread_mutex_unlock(m) lockdep_mutex_unlock(m)
#define pthread_rwlock_init(l, a) lockdep_rwlock_init((l), (a), #l, __FILE__, __LINE__)
#define pthread_rwlock_rdlock(l) lockdep_rwlock_rdlock((l), __FILE__, __LINE__)
#define pthread_rwlock_wrlock(l) lockdep_rwlock_wrlock((l), __FILE__, __LINE__)
#define pthread_rwlock_tryrdlock(l) lockdep_rwlock_tryrdlock((l), __FILE__, __LINE__)
#define pthread_rwlock_trywrlock(l) lockdep_rwlock_trywrlock((l), __FILE__, __LINE__)
#define pthread_rwlock_unlock(l) lockdep_rwlock_unlock(l)
#define pthread_cond_wait(c, m) lockdep_cond_wait((c), (m), __FILE__, __LINE__)
#define pthread_cond_timedwait(c, m, t) lockdep_cond_timedwait((c), (m), (t), __FILE__, __LINE__)
#endif

#else /* !LOLIGO_LOCKDEP */

#define LOCKDEP_ENABLED 0

#define lockdep_wait(k, obj) ((void)(k), (void)(obj))
#define lockdep_wait_cond(k, obj, mutex) ((void)(k), (void)(obj), (void)(mutex))
#define lockdep_acquired(k, obj, try) ((void)(k), (void)(obj), (void)(try))
#define lockdep_released(obj) ((void)(obj))
#define lockdep_holds(obj) ((void)(obj), true)
#define lockdep_nheld_class(k) ((void)(k), 0)
#define lockdep_assert_held(l) ((void)(l))
#define lockdep_might_wait(what) ((void)(what))
#define lockdep_mutex_may_wait(m, why) ((void)(m), (void)(why))
#define lockdep_reports() ((uint64_t)0)
static inline void lockdep_held_describe(char *buf, unsigned long len)
{
	if (len)
		buf[0] = 0;
}

#endif /* LOLIGO_LOCKDEP */

#endif /* LOLIGO_COMMON_LOCKDEP_H */
