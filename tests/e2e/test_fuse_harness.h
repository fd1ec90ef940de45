/*
 * test_fuse_harness.h - start a real loligo-mds and a real loligo-fuse mount
 * for the FUSE end-to-end suites, and always clean up.
 *
 * Everything lives in one mkdtemp directory: the config, the store, the mount
 * point, the logs and pid files.  The pid files let the check parent (whose
 * unchecked teardown runs even when a forked test case failed or crashed)
 * kill daemons that a test case restarted itself.  As a second safety net
 * every daemon gets PR_SET_PDEATHSIG: SIGTERM for loligo-fuse (it unmounts
 * cleanly), SIGKILL for loligo-mds, so a killed test runner leaves nothing.
 */
#ifndef LOLIGO_TESTS_E2E_FUSE_HARNESS_H
#define LOLIGO_TESTS_E2E_FUSE_HARNESS_H

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct lfs {
	char dir[256];          /* the temp dir (short: every path below fits) */
	char mnt[PATH_MAX];     /* DIR/mnt */
	char conf[PATH_MAX];    /* DIR/loligo.conf */
	char asok[PATH_MAX];    /* DIR/client.asok */
	int mds_port;           /* 0 until the first start picked one */
	pid_t mds_pid, fuse_pid;
	char mnt2[PATH_MAX];    /* DIR/mnt2: a second client process (lfs_mount2) */
	pid_t fuse2_pid;
	pid_t mds_gate_pid;     /* lfs_mds_prepare()d, waiting for lfs_mds_start() */
	int mds_gate_fd;
	const char *fuse_args[4]; /* extra loligo-fuse arguments for lfs_mount (e.g. "--nfs", "127.0.0.1:0") */
	/* run lfs_mds_daemon_start's daemon through this command, NULL-terminated
	 * (e.g. "/usr/sbin/ip", "netns", "exec", NS): it must exec, not fork,
	 * so that the pid is the daemon's */
	const char *mds_wrap[6];
};

/** lfs_bin - path of a built program: "mds/loligo-mds" -> $LOLIGO_BUILD_DIR/mds/loligo-mds. */
const char *lfs_bin(const char *rel, char *buf, size_t len);

/**
 * lfs_init - temp dir, config and a freshly made filesystem (mkfs).  0 or -1.
 * On the local store, or on RADOS with LOLIGO_E2E_RADOS_CONF=CEPH_CONF (a
 * filesystem of its own per call; tests/e2e/fuse_suite_rados.sh starts the
 * cluster): every suite built on this harness runs on either.
 */
int lfs_init(struct lfs *fs);
/**
 * lfs_suite_add - one case in a tcase of its own named @name, with unchecked
 * fixtures @setup/@teardown (the check parent's teardown kills what a failed
 * case left) and @timeout seconds.
 */
void lfs_suite_add(Suite *s, const char *name, const TTest *t, void (*setup)(void), void (*teardown)(void),
		   int timeout);
/** lfs_suite_main - run @s as @prog's main: 77 (skipped) without root and /dev/fuse, 1 if a case failed, else 0. */
int lfs_suite_main(Suite *s, const char *prog);
/** lfs_rados - true when the suite runs on RADOS (LOLIGO_E2E_RADOS_CONF). */
bool lfs_rados(void);
/** lfs_init_with - lfs_init with @conf ("key = value" lines) added to [global], before mkfs. */
int lfs_init_with(struct lfs *fs, const char *conf);
/** lfs_nfs_port - the port the embedded NFS gateway of the running mount listens on (from its log), or -1. */
int lfs_nfs_port(const struct lfs *fs);
/**
 * lfs_mds_start - start loligo-mds (same port as before, if any); waits until it listens.
 * The MDS dies with the process that started it (PR_SET_PDEATHSIG): one
 * restarted inside a test (check runs it in a forked child) is gone when
 * the test returns, so unmount before returning (lfs_umount), or the
 * teardown's unmount waits for it until the ctest timeout.
 */
int lfs_mds_start(struct lfs *fs);
/**
 * lfs_mds_prepare - fork the next loligo-mds now (same port), to be started
 * by the next lfs_mds_start().  Needed to restart the MDS while files of
 * the mount are open: the fork must happen before they are opened (see
 * spawn_gated in the .c).
 */
int lfs_mds_prepare(struct lfs *fs);
/** lfs_free_port - a TCP port of 127.0.0.1 that is free now (for daemons that must know it in advance), or -1. */
int lfs_free_port(void);
/**
 * lfs_mds_daemon_start - one more loligo-mds daemon of the filesystem, with
 * mds_name @name (one letter a-d: cleanup kills those), on @port, its own
 * admin socket DIR/mds.NAME.asok, log DIR/mds.NAME.log, output
 * DIR/mds.NAME.out, and port file DIR/mds.NAME.port, which it writes once
 * it holds rank 0 and serves (a standby writes none).  @extra: more
 * arguments, NULL-terminated (may be NULL).  Run through @fs->mds_wrap if
 * set.  Does not wait.  Its pid, or -1.
 */
pid_t lfs_mds_daemon_start(struct lfs *fs, const char *name, int port, const char *const *extra);
/** lfs_mds_daemon_port - the port daemon @name wrote (it serves as rank 0), or 0. */
int lfs_mds_daemon_port(const struct lfs *fs, const char *name);
/** lfs_mds_stop - send @sig (SIGTERM or SIGKILL) and reap it. */
void lfs_mds_stop(struct lfs *fs, int sig);
/** lfs_mount - run loligo-fuse -f with extra -o @opts (may be NULL); waits until mounted. */
int lfs_mount(struct lfs *fs, const char *opts);
/** lfs_umount - fusermount3 -u (then -uz), wait for loligo-fuse to exit; its exit status or -1. */
int lfs_umount(struct lfs *fs);
/**
 * lfs_mount2 - a second loligo-fuse process on DIR/mnt2, a client of the same
 * MDS and filesystem (on the local backend both share the data store), with
 * its own log (DIR/client2.log, client2.out) and admin socket (DIR/client2.asok).
 */
int lfs_mount2(struct lfs *fs, const char *opts);
/** lfs_umount2 - as lfs_umount, for the second mount. */
int lfs_umount2(struct lfs *fs);
/** lfs_is_mounted - @mnt is a fuse.loligo mount point now. */
bool lfs_is_mounted(const char *mnt);
/** lfs_cleanup - unmount, kill everything started from @fs->dir (pid files), remove the dir. */
void lfs_cleanup(struct lfs *fs);
/** lfs_dump_logs - print the tails of the logs to stderr (for failures). */
void lfs_dump_logs(const struct lfs *fs);

/** lfs_path - DIR/mnt/@rel into @buf. */
const char *lfs_path(const struct lfs *fs, const char *rel, char *buf, size_t len);

/**
 * lfs_at - "@root/@rel" in one of LFS_AT_SLOTS per-thread buffers, used in
 * turn: the result stays valid for the next LFS_AT_SLOTS - 1 calls on this
 * thread, enough for every argument of one call.  The suites' P() and P2().
 */
#define LFS_AT_SLOTS 8
const char *lfs_at(const char *root, const char *rel);

struct json_object;
/**
 * lfs_mds_cmd - an admin command to the MDS of @fs (DIR/mds.asok) with string
 * arguments @kv (name, value, ..., NULL; or NULL); its reply (the caller puts
 * it), or NULL if none came within 30 s.  *@err (if @err): the reply's
 * "error" text, or NULL when it succeeded (valid while the reply is held).
 */
/**
 * lfs_perf - counter @group.@name of `perf dump` on the admin socket @asok,
 * or -1 when the socket does not answer or has no such counter.
 */
int64_t lfs_perf(const char *asok, const char *group, const char *name);
struct json_object *lfs_mds_cmd(const struct lfs *fs, const char *prefix, const char *const *kv, const char **err);

/** lfs_run - fork+exec @argv, wait at most @timeout_ms; exit status, or -1 (killed on timeout). */
int lfs_run(char *const argv[], int timeout_ms, const char *out_file);

/* File content helpers: a deterministic pattern per (seed, offset). */
unsigned char lfs_pat(unsigned seed, off_t off);
/** lfs_write_file - create/truncate @path and write @size pattern bytes (1 MiB writes). 0 or -errno. */
int lfs_write_file(const char *path, off_t size, unsigned seed);
/** lfs_check_file - size is @size and every byte matches; 0, or -1 with a message on stderr. */
int lfs_check_file(const char *path, off_t size, unsigned seed);

#endif
