/*
 * test_lockdep.c - the lock-order checker (common/lockdep.h) catches what it
 * promises to catch, and only that.
 *
 * Each case runs in a child of its own (check's CK_FORK), so a case that
 * must abort is one whose child dies of SIGABRT; the report's text is read
 * from a child whose stderr goes to a pipe.  No case deadlocks for real:
 * the two orders run one after the other, which is the point of lockdep
 * (an inversion is caught the first time both orders have run, not when
 * two threads collide).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/lockdep.h"

static pthread_mutex_t a, b, c;

static void init_abc(void)
{
	/* three init sites: three classes */
	pthread_mutex_init(&a, NULL);
	pthread_mutex_init(&b, NULL);
	pthread_mutex_init(&c, NULL);
}

static void take2(pthread_mutex_t *x, pthread_mutex_t *y)
{
	pthread_mutex_lock(x);
	pthread_mutex_lock(y);
	pthread_mutex_unlock(y);
	pthread_mutex_unlock(x);
}

static void *thread_ab(void *arg)
{
	(void)arg;
	take2(&a, &b);
	return NULL;
}

/* A then B in one thread, B then A later in another: caught, though they never met */
START_TEST(test_abba_aborts)
{
	pthread_t t;

	init_abc();
	pthread_create(&t, NULL, thread_ab, NULL);
	pthread_join(t, NULL);
	take2(&b, &a);
}
END_TEST

/* A -> B, B -> C, then C -> A: the cycle through a third lock is found */
START_TEST(test_chain_aborts)
{
	init_abc();
	take2(&a, &b);
	take2(&b, &c);
	take2(&c, &a);
}
END_TEST

/* one order, many times, each lock alone too, and a condition wait: nothing to report */
START_TEST(test_consistent_order_passes)
{
	pthread_cond_t cv;
	struct timespec ts;

	init_abc();
	pthread_cond_init(&cv, NULL);
	for (int i = 0; i < 100; i++) {
		take2(&a, &b);
		take2(&b, &c);
		take2(&a, &c);
	}
	pthread_mutex_lock(&c);
	pthread_mutex_unlock(&c);
	/* a wait releases and takes again the mutex: no order with itself */
	pthread_mutex_lock(&a);
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_cond_timedwait(&cv, &a, &ts);
	lockdep_assert_held(&a);
	pthread_mutex_unlock(&a);
	/* a trylock never waits: B then trylock A adds no order B -> A */
	pthread_mutex_lock(&b);
	ck_assert_int_eq(pthread_mutex_trylock(&a), 0);
	pthread_mutex_unlock(&a);
	pthread_mutex_unlock(&b);
	ck_assert_uint_eq(lockdep_reports(), 0);
}
END_TEST

static LOCKDEP_CLASS(wb_test_class, "test writeback");

/*
 * The shape of issue 24's hang: a pseudo-lock (a flag and a condvar) held
 * for one object while waiting for another of its kind.
 */
START_TEST(test_pseudo_same_class_wait_aborts)
{
	int x = 0, y = 0;

	lockdep_acquired(&wb_test_class, &x, true);
	lockdep_wait(&wb_test_class, &y);
}
END_TEST

/* ... whereas taking one, releasing it, then waiting for another is the rule kept */
START_TEST(test_pseudo_one_at_a_time_passes)
{
	int x = 0, y = 0;

	for (int i = 0; i < 10; i++) {
		lockdep_acquired(&wb_test_class, &x, true);
		lockdep_released(&x);
		lockdep_wait(&wb_test_class, &y);
		lockdep_acquired(&wb_test_class, &y, false);
		lockdep_released(&y);
	}
	ck_assert_uint_eq(lockdep_reports(), 0);
}
END_TEST

/* A mutex taken while a pseudo-lock is held, and the opposite order: an inversion like any other */
START_TEST(test_pseudo_mutex_inversion_aborts)
{
	int x = 0;

	init_abc();
	lockdep_acquired(&wb_test_class, &x, false);
	pthread_mutex_lock(&a);
	pthread_mutex_unlock(&a);
	lockdep_released(&x);
	pthread_mutex_lock(&a);
	lockdep_wait(&wb_test_class, &x);
}
END_TEST

START_TEST(test_assert_held_aborts)
{
	init_abc();
	lockdep_assert_held(&a);
}
END_TEST

/* holding a mutex where the code may wait for the MDS or the store */
START_TEST(test_might_wait_with_lock_aborts)
{
	int x = 0;

	init_abc();
	lockdep_acquired(&wb_test_class, &x, true);
	lockdep_might_wait("a pseudo-lock is allowed");
	pthread_mutex_lock(&a);
	lockdep_might_wait("the test");
}
END_TEST

/* the report names both orders with where they were taken */
START_TEST(test_report_names_both_sites)
{
	char buf[65536];
	size_t n = 0;
	int p[2], st;
	ssize_t r;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		init_abc();
		take2(&a, &b);
		take2(&b, &a);
		_exit(0);
	}
	close(p[1]);
	while (n < sizeof(buf) - 1 && (r = read(p[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "the child was not aborted: %s", buf);
	ck_assert_msg(strstr(buf, "circular locking dependency"), "%s", buf);
	ck_assert_msg(strstr(buf, "&a") && strstr(buf, "&b"), "the classes are not named: %s", buf);
	ck_assert_msg(strstr(buf, "test_lockdep.c:"), "no source sites: %s", buf);
	ck_assert_msg(strstr(buf, "the opposite order has run before"), "%s", buf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lockdep");
	TCase *tc = tcase_create("order");

	tcase_add_test_raise_signal(tc, test_abba_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_chain_aborts, SIGABRT);
	tcase_add_test(tc, test_consistent_order_passes);
	tcase_add_test_raise_signal(tc, test_pseudo_same_class_wait_aborts, SIGABRT);
	tcase_add_test(tc, test_pseudo_one_at_a_time_passes);
	tcase_add_test_raise_signal(tc, test_pseudo_mutex_inversion_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_assert_held_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_might_wait_with_lock_aborts, SIGABRT);
	tcase_add_test(tc, test_report_names_both_sites);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	/* every case forks: an abort must end one case, not the suite */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
