/*
 * test_child.h - a child of a multi-threaded test that runs library code.
 *
 * After fork() in a process with threads, the child may only call
 * async-signal-safe functions until it execs: a lock that another thread
 * held at the fork (the allocator's under ASan, a log or RCU mutex) stays
 * held forever in the child, and its first malloc or mount hangs there
 * (test_caps's stopped client did, once in a few runs under ASan).  So a
 * child that mounts a client of its own is this same test binary exec'd
 * again, told by its arguments which part to play:
 *
 *	int main(int argc, char **argv)
 *	{
 *		if (test_child_is(argc, argv))
 *			return child_main(argc - 2, argv + 2);   // role, args...
 *		...the check runner...
 *	}
 *
 * Descriptors the child needs (a pipe's end) go by number among the
 * arguments; they must not be close-on-exec.
 */
#ifndef LOLIGO_TEST_CHILD_H
#define LOLIGO_TEST_CHILD_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#define TEST_CHILD_FLAG "--test-child"

static inline bool test_child_is(int argc, char **argv)
{
	return argc >= 3 && !strcmp(argv[1], TEST_CHILD_FLAG);
}

/*
 * test_child_spawn - fork and exec this binary as "SELF --test-child ARGS...".
 * @args: the role and its arguments, NULL-terminated (at most 30).
 *
 * The child dies with the thread that spawned it (PR_SET_PDEATHSIG), so a
 * failed test never leaves it behind.  Everything the child runs before
 * exec is async-signal-safe.  Returns its pid, or -errno.
 */
static inline pid_t test_child_spawn(const char *const *args)
{
	static char self[PATH_MAX];
	char *argv[33];
	ssize_t n;
	pid_t pid;
	int i = 0;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -ENOENT;
	self[n] = 0;
	argv[i++] = self;
	argv[i++] = (char *)TEST_CHILD_FLAG;
	for (; *args && i < 32; args++)
		argv[i++] = (char *)*args;
	if (*args)
		return -E2BIG;
	argv[i] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(self, argv);
		_exit(127);
	}
	return pid;
}

#endif
