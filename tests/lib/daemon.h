/*
 * tests/lib/daemon.h - starting and stopping the real daemons of a test.
 *
 * One copy of what the integration suites did each on their own: fork/exec a
 * program of the build tree with its output in a file and PR_SET_PDEATHSIG
 * (a crashing test leaves no daemon behind), wait for the port it writes to
 * its --port-file (an event, bounded only by the hang bound of wait.h),
 * stop it with a signal and reap it, and the main() of a check suite whose
 * cases keep their directories under one parent.  loligo-mds started this
 * way: lt_mds_mkfs / lt_mds_start on a directory holding loligo.conf.
 *
 * Not for use inside a check fixture's forked child only: every call reaps
 * its own children and touches nothing but the paths it is given.
 */
#ifndef LOLIGO_TESTS_LIB_DAEMON_H
#define LOLIGO_TESTS_LIB_DAEMON_H

#include <check.h>
#include <stddef.h>
#include <sys/types.h>

/**
 * lt_build_path - @rel ("mds/loligo-mds") in the build tree
 * ($LOLIGO_BUILD_DIR, else the current directory), into @buf.  Returns @buf.
 */
const char *lt_build_path(const char *rel, char *buf, size_t len);

/**
 * lt_spawn - fork/exec @argv (argv[0] a path) with stdout and stderr
 * appended to @out; the child gets SIGKILL when the test process dies.
 * Returns the child's pid, or -errno.
 */
pid_t lt_spawn(char *const argv[], const char *out);

/** lt_run - lt_spawn and wait: the wait status, or -1 if it could not run. */
int lt_run(char *const argv[], const char *out);

/**
 * lt_wait_port_file - until @pid has written a port number into @pf: that
 * port.  0 if @pid exited first (it is reaped) or on a hang.
 */
int lt_wait_port_file(pid_t pid, const char *pf);

/**
 * lt_stop - send @sig to child @pid and reap it; if it has not exited by
 * the hang bound, SIGKILL it.  Returns the wait status (-1: no such child).
 */
int lt_stop(pid_t pid, int sig);

/* A loligo-mds of the build tree on @dir/loligo.conf, which the caller wrote. */
struct lt_mds {
	char dir[4096 - 64];        /* mds.port, mds.out, mkfs.out go here */
	pid_t pid;                  /* 0: not running */
	int port;                   /* what it listens on (after lt_mds_start) */
};

/** lt_mds_mkfs - loligo-mds --mkfs; 0, or -1 (see @dir/mkfs.out). */
int lt_mds_mkfs(struct lt_mds *m);

/**
 * lt_mds_start - start loligo-mds on port @port (0: an ephemeral one; the
 * same one again after a restart: pass m->port) with @extra arguments (NULL
 * terminated, may be NULL), and wait for its port file.  0 with m->port set,
 * or -1 (it exited: see @dir/mds.out).
 */
int lt_mds_start(struct lt_mds *m, int port, const char *const *extra);

/** lt_mds_stop - lt_stop(m->pid, @sig) if it runs; its wait status. */
int lt_mds_stop(struct lt_mds *m, int sig);

/**
 * lt_fs_make - a filesystem of its own for a test: @tmpl (ending in XXXXXX)
 * made into m->dir, with loligo.conf there (local store in @dir/store, MDS on
 * 127.0.0.1 logging to mds.log, admin socket mds.asok, client logging to
 * client.log, keyrings for
 * client.admin, client_mount_timeout 10), plus @mds_extra and @client_extra
 * (lines ending in newline, may be NULL) in its [mds] and [client] sections;
 * then mkfs and lt_mds_start on an ephemeral port.  0, or -1 with the reason
 * on stderr (m->port stays 0).
 */
int lt_fs_make(struct lt_mds *m, const char *tmpl, const char *mds_extra, const char *client_extra);

/**
 * lt_fs_remove - stop the MDS (SIGTERM) and remove m->dir, unless the
 * environment variable @keep_env (may be NULL) is set: then say it is kept.
 */
void lt_fs_remove(struct lt_mds *m, const char *keep_env);

/**
 * lt_suite_main - the main() of a check suite whose cases put their
 * directories under one parent: makes $TMPDIR/@prefixXXXXXX into @parent,
 * runs @s, removes the parent.  Returns main's exit status.
 */
int lt_suite_main(Suite *s, const char *prefix, char *parent, size_t len);

#endif
