/*
 * test_mdsc_mds.c - the client's MDS session layer against the real
 * loligo-mds (started from the build tree on a temporary store and an
 * ephemeral loopback port; it dies with the test process through
 * PR_SET_PDEATHSIG, and the temp dir is removed by an unchecked fixture that
 * runs in the parent even when a test fails).
 *
 *  - 32 threads creating, looking up and unlinking through one session: no
 *    error, the namespace has exactly what was left, oldest_tid catches up;
 *  - UNSAFE before SAFE: with the journal delayed, mdsc_do_request returns
 *    on the UNSAFE reply and mdsc_sync waits for the SAFE ones;
 *  - kill -9 of the MDS during a create workload and a restart on the same
 *    port: every create succeeds (a replayed or retried create must not fail
 *    with EEXIST) and the directory holds exactly the files created, once;
 *  - a dead MDS at open time gives an error within the bound;
 *  - SIGSTOP of the MDS while big setxattrs fill the socket: noticed within
 *    client_session_timeout, resumed after SIGCONT, nothing hangs;
 *  - shutdown: SIGTERM sends the SAFE replies before closing (the journal
 *    delayed or held, bounded by mds_shutdown_timeout), kill -9 during that
 *    drain loses nothing, an unmount waits (bounded) for a restarted MDS to
 *    make its UNSAFE requests durable and names what it gives up on.
 *
 * The hold-time quantiles of every client-mutex section are printed (to
 * stderr) after the concurrent test, for the record.
 */
#include <check.h>

#include "tests/test_keyring.h"
#include "tests/lib/wait.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/mds_client.h"
#include "client/mds_client_int.h"     /* the session's id and secret, to move it away */
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "tools/bench/mds_wire.h"

/* ---- the daemon ----------------------------------------------------------- */

static char tmpdir[256];     /* per test case (parent) */
static char wdir[320];       /* per test: wdir/t<pid> */

struct mds_daemon {
	pid_t pid;
	uint16_t port;
};

static struct mds_daemon D;

static void mds_bin(char *buf, size_t len)
{
	const char *b = getenv("LOLIGO_BUILD_DIR");

	snprintf(buf, len, "%s/mds/loligo-mds", b ? b : ".");
}

/* Run loligo-mds with the common arguments plus @extra; @wait: to completion. */
static pid_t mds_exec(const char *const *extra, bool wait_exit, int *status)
{
	char bin[512], a_store[512], a_log[512], a_asok[512], a_keyring[512];
	const char *argv[24];
	int n = 0, st;
	pid_t pid;

	mds_bin(bin, sizeof(bin));
	snprintf(a_store, sizeof(a_store), "--store_local_path=%s/store", wdir);
	snprintf(a_log, sizeof(a_log), "--log_file=%s/mds.log", wdir);
	snprintf(a_asok, sizeof(a_asok), "--admin_socket=%s/mds.asok", wdir);
	argv[n++] = bin;
	argv[n++] = a_store;
	argv[n++] = a_log;
	argv[n++] = a_asok;
	argv[n++] = "--mds_addr=127.0.0.1";
	snprintf(a_keyring, sizeof(a_keyring), "--mds_keyring=%s/keyring", wdir);
	argv[n++] = a_keyring;
	while (*extra && n < 22)
		argv[n++] = *extra++;
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char errf[512];
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(errf, sizeof(errf), "%s/mds.stderr", wdir);
		fd = open(errf, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (wait_exit) {
		waitpid(pid, &st, 0);
		*status = st;
	}
	return pid;
}

/* Start the MDS on @port (0: ephemeral) with the --key=value options
 * @opts (NULL-terminated, may be NULL) and wait for its port file. */
static void mds_start_opts(uint16_t port, const char *const *opts)
{
	char a_port[64], a_pf[512], pf[512];
	const char *extra[12];
	int n = 0;

	snprintf(pf, sizeof(pf), "%s/mds.port", wdir);
	unlink(pf);
	snprintf(a_port, sizeof(a_port), "--mds_port=%u", port);
	extra[n++] = a_port;
	extra[n++] = "--port-file";
	snprintf(a_pf, sizeof(a_pf), "%s", pf);
	extra[n++] = a_pf;
	while (opts && *opts && n < 11)
		extra[n++] = *opts++;
	extra[n] = NULL;
	D.pid = mds_exec(extra, false, NULL);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(pf, "r");
		unsigned p = 0;
		int st;

		if (f) {
			int ok = fscanf(f, "%u", &p) == 1;

			fclose(f);
			if (ok && p) {
				D.port = (uint16_t)p;
				return;
			}
		}
		ck_assert_msg(waitpid(D.pid, &st, WNOHANG) != D.pid, "loligo-mds exited at start (see %s)",
			      wdir);
		usleep(10000);
	}
	ck_abort_msg("loligo-mds did not write its port file");
}

static void mds_start(uint16_t port, const char *extra_opt)
{
	const char *opts[2] = { extra_opt, NULL };

	mds_start_opts(port, opts);
}

static void mds_kill(int sig)
{
	if (D.pid > 0) {
		kill(D.pid, sig);
		waitpid(D.pid, NULL, 0);
		D.pid = 0;
	}
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* unchecked: runs in the parent, so the dir goes even when a test fails */
static void dir_setup(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/loligo-mdsc-XXXXXX", t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void dir_teardown(void)
{
	if (tmpdir[0] && !getenv("LOLIGO_TEST_KEEP"))
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void set_opt(const char *name, const char *val)
{
	char err[256];

	ck_assert_int_eq(cfg_set(cfg_lookup(name), val, false, err, sizeof(err)), 0);
}

/* checked: in the test's own process */
static void mds_setup(void)
{
	static const char *const mkfs[] = { "--mkfs", NULL };
	char store[512];
	int st = 0;

	snprintf(wdir, sizeof(wdir), "%s/t%d", tmpdir, (int)getpid());
	ck_assert_int_eq(mkdir(wdir, 0755), 0);
	ck_assert_int_eq(test_write_keyrings(wdir), 0);
	log_init("test_mdsc_mds");
	cfg_init("client");
	snprintf(store, sizeof(store), "%s/client.keyring", wdir);
	set_opt("client_keyring", store);
	set_opt("client_reconnect_backoff_min", "0.05");
	set_opt("client_reconnect_backoff_max", "0.2");
	snprintf(store, sizeof(store), "%s/store", wdir);
	mkdir(store, 0755);
	mds_exec(mkfs, true, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loligo-mds --mkfs failed (see %s)", wdir);
	memset(&D, 0, sizeof(D));
}

static void mds_teardown(void)
{
	mds_kill(SIGKILL);
}

static struct mds_client *client(void)
{
	struct mds_client *m;
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", D.port);
	ck_assert_int_eq(mdsc_create(addr, NULL, NULL, NULL, &m), 0);
	ck_assert_int_eq(mdsc_open_session(m, 5000), 0);
	return m;
}

/* ---- requests -------------------------------------------------------------- */

static struct mds_request *req_new(struct mds_client *m, uint32_t op, uint64_t ino, const char *name)
{
	struct mds_request *r = mdsc_request_new(m, op);

	ck_assert_ptr_nonnull(r);
	r->args.ino = ino;
	r->args.name = name ? strdup(name) : NULL;
	return r;
}

static int do_op(struct mds_client *m, uint32_t op, uint64_t ino, const char *name, uint64_t *out_ino)
{
	struct mds_request *r = req_new(m, op, ino, name);
	int ret;

	if (op == MDSP_OP_CREATE) {
		r->args.mode = S_IFREG | 0644;
		r->args.oflags = O_CREAT | O_EXCL | O_RDWR;
	} else if (op == MDSP_OP_MKDIR) {
		r->args.mode = S_IFDIR | 0755;
	}
	ret = mdsc_do_request(m, r);
	if (!ret && out_ino && r->reply && r->reply->has_target)
		*out_ino = r->reply->target.ino;
	mdsc_request_put(r);
	return ret;
}

/* Entries in directory @dir, by READDIR batches. */
static int count_entries(struct mds_client *m, uint64_t dir)
{
	uint64_t cookie = 0;
	int n = 0;
	bool end = false;

	while (!end) {
		struct mds_request *r = req_new(m, MDSP_OP_READDIR, dir, NULL);

		r->args.cookie = cookie;
		r->args.max_entries = 512;
		ck_assert_int_eq(mdsc_do_request(m, r), 0);
		n += (int)r->reply->nentries;
		end = r->reply->end || r->reply->nentries == 0;
		if (r->reply->nentries)
			cookie = r->reply->entries[r->reply->nentries - 1].cookie;
		mdsc_request_put(r);
	}
	return n;
}

static void print_holds(const char *what)
{
	static const char *const names[] = { "hold_submit_request", "hold_do_request", "hold_handle_reply",
					     "hold_replay", "hold_session", "hold_other", "lat_first_reply",
					     "lat_safe" };
	struct json_object *d = perf_dump_json(), *g, *h, *v;

	if (!json_object_object_get_ex(d, "mds_client", &g)) {
		json_object_put(d);
		return;
	}
	fprintf(stderr, "[%s] mds_client mutex hold times / latencies (ns):\n", what);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		long long c = 0, p50 = 0, p99 = 0, mx = 0;

		if (!json_object_object_get_ex(g, names[i], &h))
			continue;
		if (json_object_object_get_ex(h, "count", &v))
			c = json_object_get_int64(v);
		if (json_object_object_get_ex(h, "p50_ns", &v))
			p50 = json_object_get_int64(v);
		if (json_object_object_get_ex(h, "p99_ns", &v))
			p99 = json_object_get_int64(v);
		if (json_object_object_get_ex(h, "max_ns", &v))
			mx = json_object_get_int64(v);
		fprintf(stderr, "  %-22s count %8lld  p50 %8lld  p99 %8lld  max %9lld\n", names[i], c, p50, p99, mx);
	}
	json_object_put(d);
}

static uint64_t perf_value(const char *name)
{
	struct json_object *d = perf_dump_json(), *g, *v;
	uint64_t x = 0;

	if (json_object_object_get_ex(d, "mds_client", &g) && json_object_object_get_ex(g, name, &v))
		x = (uint64_t)json_object_get_int64(v);
	json_object_put(d);
	return x;
}

/* One session of `session ls` on the MDS admin socket: @key of the first. */
static int64_t mds_session_field(const char *key)
{
	struct json_object *req = json_tokener_parse("{\"prefix\": \"session ls\"}"), *rep = NULL, *o, *v;
	char path[512];
	int64_t x = -1;

	snprintf(path, sizeof(path), "%s/mds.asok", wdir);
	ck_assert_int_eq(asok_request(path, req, &rep, 5000), 0);
	json_object_put(req);
	if (json_object_is_type(rep, json_type_array) && json_object_array_length(rep) > 0) {
		o = json_object_array_get_idx(rep, 0);
		if (json_object_object_get_ex(o, key, &v))
			x = json_object_get_int64(v);
	}
	json_object_put(rep);
	return x;
}

/* ---- tests ------------------------------------------------------------------- */

#define NTHREADS 32
#define PER_THREAD 40

struct worker {
	struct mds_client *m;
	uint64_t dir;
	int id, n, errors, first_err;
	pthread_t t;
};

static void note_err(struct worker *w, int r)
{
	if (r && !w->errors++)
		w->first_err = r;
}

static void *churn(void *arg)
{
	struct worker *w = arg;
	char name[64];
	uint64_t ino;

	for (int j = 0; j < w->n; j++) {
		snprintf(name, sizeof(name), "t%02d_%04d", w->id, j);
		note_err(w, do_op(w->m, MDSP_OP_CREATE, w->dir, name, &ino));
		note_err(w, do_op(w->m, MDSP_OP_LOOKUP, w->dir, name, NULL));
		note_err(w, do_op(w->m, MDSP_OP_GETATTR, ino, NULL, NULL));
		if (j % 2)
			note_err(w, do_op(w->m, MDSP_OP_UNLINK, w->dir, name, NULL));
	}
	return NULL;
}

START_TEST(test_concurrent_threads)
{
	struct worker w[NTHREADS];
	struct mds_client *m;
	uint64_t dir = 0;

	mds_start(0, NULL);
	m = client();
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "churn", &dir), 0);
	ck_assert_uint_gt(dir, MDSP_ROOT_INO);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .m = m, .dir = dir, .id = i, .n = PER_THREAD };
		pthread_create(&w[i].t, NULL, churn, &w[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_msg(w[i].errors == 0, "thread %d: %d errors, first %d", i, w[i].errors, w[i].first_err);
	}
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_int_eq(count_entries(m, dir), NTHREADS * PER_THREAD / 2);
	/* everything is SAFE: oldest_tid is past the last tid */
	ck_assert_uint_eq(mdsc_oldest_tid(m), mdsc_last_tid(m) + 1);
	ck_assert_uint_eq(perf_value("inflight"), 0);
	/* and the MDS trimmed its completed table with it (one more request carries it) */
	ck_assert_int_eq(do_op(m, MDSP_OP_GETATTR, dir, NULL, NULL), 0);
	ck_assert_int_eq(mds_session_field("oldest_tid"), (int64_t)mdsc_last_tid(m));
	ck_assert_int_lt(mds_session_field("completed_requests"), 4);
	print_holds("32 threads create/lookup/getattr/unlink");
	mdsc_destroy(m);
}
END_TEST

/*
 * An asynchronous create names an ino its session was delegated (mds/prealloc.c)
 * and may go out only after the MDS restarted (queued while there was no
 * session, or taken between the reconnect and the client dropping its
 * delegations): the restarted MDS no longer knows the delegation, which it
 * keeps in memory only, and refused such a create as fresh (EINVAL), an
 * acknowledged create lost (test_fuse_crash saw it once in CI).  Sent on a
 * later connection than the delegation's, it goes as a resend and gets
 * exactly its ino.  Seen failing without want_ino_gen: EINVAL.
 */
START_TEST(test_delegated_ino_after_restart)
{
	struct mds_client *m;
	struct mds_request *r;
	uint64_t dir = 0, ino, gen;
	uint16_t port;

	char name[16];

	/* pools of 4 inos: the session's own pool is refilled above the
	 * delegated range after a few creates */
	mds_start(0, "--mds_client_prealloc_inos=4");
	port = D.port;
	m = client();
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "deleg", &dir), 0);
	r = req_new(m, MDSP_OP_CREATE, dir, "a");
	r->args.mode = S_IFREG | 0644;
	r->args.oflags = O_CREAT | O_EXCL | O_RDWR;
	r->args.flags |= MDSP_REQ_WANT_INOS;
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	ck_assert_msg(r->reply->deleg_len > 0 && r->reply->deleg_start, "no inos delegated");
	ino = r->reply->deleg_start;
	gen = mdsc_request_reply_gen(r);
	ck_assert_uint_gt(gen, 0);
	mdsc_request_put(r);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "own%d", i);
		ck_assert_int_eq(do_op(m, MDSP_OP_CREATE, dir, name, NULL), 0);
	}
	ck_assert_int_eq(mdsc_sync(m), 0);     /* the delegation's grant is durable */

	mds_kill(SIGKILL);
	LT_WAIT_UNTIL(!mdsc_is_open(m), "the client did not notice its MDS was killed");
	mds_start(port, "--mds_client_prealloc_inos=4");

	/* a fresh create after the restart must not be given the delegated
	 * ino (the MDS forgot the delegation: the create below then failed
	 * with EEXIST) */
	r = req_new(m, MDSP_OP_CREATE, dir, "fresh");
	r->args.mode = S_IFREG | 0644;
	r->args.oflags = O_CREAT | O_EXCL | O_RDWR;
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	ck_assert_uint_ne(r->reply->target.ino, ino);
	mdsc_request_put(r);

	r = req_new(m, MDSP_OP_CREATE, dir, "b");
	r->args.mode = S_IFREG | 0644;
	r->args.oflags = O_CREAT | O_EXCL | O_RDWR;
	r->args.want_ino = ino;
	r->want_ino_gen = gen;
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	ck_assert_uint_eq(r->reply->target.ino, ino);
	mdsc_request_put(r);
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_int_eq(count_entries(m, dir), 7);
	mdsc_destroy(m);
}
END_TEST


#define K_THREADS 8
#define K_PER 60

static void *creator(void *arg)
{
	struct worker *w = arg;
	char name[64];

	for (int j = 0; j < w->n; j++) {
		snprintf(name, sizeof(name), "k%02d_%04d", w->id, j);
		note_err(w, do_op(w->m, MDSP_OP_CREATE, w->dir, name, NULL));
	}
	return NULL;
}

START_TEST(test_kill9_during_workload)
{
	struct worker w[K_THREADS];
	struct mds_client *m;
	uint64_t dir = 0, before;
	uint16_t port;

	mds_start(0, NULL);
	port = D.port;
	m = client();
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "k", &dir), 0);
	for (int i = 0; i < K_THREADS; i++) {
		w[i] = (struct worker){ .m = m, .dir = dir, .id = i, .n = K_PER };
		pthread_create(&w[i].t, NULL, creator, &w[i]);
	}
	/* let a third of the work through, then kill the MDS in the middle of it */
	LT_WAIT_UNTIL(mdsc_last_tid(m) >= K_THREADS * K_PER / 3, "the workload does not progress");
	before = mdsc_last_tid(m);
	mds_kill(SIGKILL);
	LT_WAIT_UNTIL(!mdsc_is_open(m), "the client did not notice its MDS was killed");
	mds_start(port, NULL);
	for (int i = 0; i < K_THREADS; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_msg(w[i].errors == 0, "thread %d: %d errors, first %d", i, w[i].errors, w[i].first_err);
	}
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_int_eq(count_entries(m, dir), K_THREADS * K_PER);
	ck_assert_uint_ge(perf_value("reconnects"), 1);
	fprintf(stderr, "[kill -9] killed after tid %llu; replays %llu, retries %llu, reconnects %llu\n",
		(unsigned long long)before, (unsigned long long)perf_value("replays"),
		(unsigned long long)perf_value("retries"), (unsigned long long)perf_value("reconnects"));
	mdsc_destroy(m);

	/* and it is all still there after another restart */
	mds_kill(SIGTERM);
	mds_start(port, NULL);
	m = client();
	ck_assert_int_eq(count_entries(m, dir), K_THREADS * K_PER);
	mdsc_destroy(m);
}
END_TEST

static struct json_object *asok_cmd(const char *cmd)
{
	struct json_object *req, *rep = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/mds.asok", wdir);
	req = json_tokener_parse(cmd);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(asok_request(path, req, &rep, 5000), 0);
	json_object_put(req);
	ck_assert_ptr_nonnull(rep);
	return rep;
}

/* @group.@name of the MDS's `perf dump` (0 when absent). */
static uint64_t mds_perf(const char *group, const char *name)
{
	struct json_object *d = asok_cmd("{\"prefix\": \"perf dump\"}"), *g, *v;
	uint64_t x = 0;

	if (json_object_object_get_ex(d, group, &g) && json_object_object_get_ex(g, name, &v))
		x = (uint64_t)json_object_get_int64(v);
	json_object_put(d);
	return x;
}

/*
 * The journal may hold a write for more entries (mds_journal_max_delay,
 * here 600 s: SAFE lags UNSAFE for as long as the test runs), but only
 * while nobody waits for it: a wait for SAFE sends REQUEST_FLUSH_JOURNAL,
 * and a failed request, whose only reply is the SAFE one, is written at
 * once.  On an MDS that held every write for the delay, the sync and the
 * failed create below ran into their bounds.
 */
START_TEST(test_safe_waits_flush_the_journal)
{
	struct mds_client *m;
	struct mds_request *r[5], *g, *dup;
	uint64_t tid_last, hints;
	char name[32];

	mds_start(0, "--mds_journal_max_delay=600");
	m = client();
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		r[i] = req_new(m, MDSP_OP_CREATE, MDSP_ROOT_INO, name);
		r[i]->args.mode = S_IFREG | 0644;
		r[i]->args.oflags = O_CREAT | O_EXCL | O_RDWR;
		ck_assert_int_eq(mdsc_do_request(m, r[i]), 0);
		ck_assert(r[i]->reply->flags & MDSP_REPLY_UNSAFE);
	}
	tid_last = r[4]->args.tid;
	/* answered, not written: the journal waits for more */
	ck_assert_uint_le(mdsc_oldest_tid(m), r[0]->args.tid);
	ck_assert_int_eq(mdsc_request_safe_state(r[4]), 0);
	/* a sync asks for the write instead of waiting out the delay */
	ck_assert_int_eq(mdsc_sync_until(m, now_mono_ns() + lt_hang_ns()), 0);
	ck_assert_uint_gt(mdsc_oldest_tid(m), tid_last);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(mdsc_wait_safe(m, r[i]), 0);
		mdsc_request_put(r[i]);
	}
	hints = mds_perf("mds_journal", "flush_hints");
	ck_assert_uint_ge(hints, 1);

	/* a create answered UNSAFE waits again; a failed one after it is
	 * written at once, and takes it along (nobody sent a hint) */
	g = req_new(m, MDSP_OP_CREATE, MDSP_ROOT_INO, "g");
	g->args.mode = S_IFREG | 0644;
	g->args.oflags = O_CREAT | O_EXCL | O_RDWR;
	ck_assert_int_eq(mdsc_do_request(m, g), 0);
	ck_assert(g->reply->flags & MDSP_REPLY_UNSAFE);
	ck_assert_int_eq(mdsc_request_safe_state(g), 0);
	dup = req_new(m, MDSP_OP_CREATE, MDSP_ROOT_INO, "f0");
	dup->args.mode = S_IFREG | 0644;
	dup->args.oflags = O_CREAT | O_EXCL | O_RDWR;
	dup->timeout_ns = lt_hang_ns();
	ck_assert_int_eq(mdsc_do_request(m, dup), -EEXIST);
	mdsc_request_put(dup);
	LT_WAIT_UNTIL(mdsc_request_safe_state(g) == 1, "the create before a failed one is not SAFE");
	ck_assert_uint_eq(mds_perf("mds_journal", "flush_hints"), hints);
	mdsc_request_put(g);
	mdsc_destroy(m);
}
END_TEST

static void evict(int64_t sid)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "{\"prefix\": \"client evict\", \"id\": %lld}", (long long)sid);
	json_object_put(asok_cmd(cmd));
}

START_TEST(test_evicted_real)
{
	/* the admin evicts the session: the client stays out (EIO) */
	struct mds_client *m;
	char why[512];
	int64_t sid;

	mds_start(0, NULL);
	m = client();
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "before", NULL), 0);
	ck_assert_int_eq(mdsc_sync(m), 0);
	sid = mds_session_field("id");
	ck_assert_int_gt(sid, 0);
	evict(sid);
	LT_WAIT_UNTIL(mdsc_evicted(m, NULL, 0), "the client never learnt it was evicted");
	ck_assert(mdsc_evicted(m, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "blocklist rm"));
	ck_assert_int_eq(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, "before", NULL), -EIO);
	usleep(500000);         /* deliberate: time for a wrong reconnect (backoff is shorter) */
	ck_assert_uint_eq(perf_value("sessions_opened"), 1);
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "after", NULL), -EIO);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_evicted_reconnect_stale)
{
	/* with client_reconnect_stale the client keeps trying: refused while it
	 * is blocklisted, a new session once the operator lifts the entry */
	struct json_object *a, *e, *v;
	struct mds_client *m;
	char entity[64] = "", cmd[160];
	int64_t sid;
	uint64_t refused;
	size_t i;

	set_opt("client_reconnect_stale", "true");
	mds_start(0, NULL);
	m = client();
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "before", NULL), 0);
	ck_assert_int_eq(mdsc_sync(m), 0);
	sid = mds_session_field("id");
	evict(sid);
	LT_WAIT_UNTIL(mdsc_evicted(m, NULL, 0), "the client never learnt it was evicted");
	ck_assert_int_eq(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, "before", NULL), -EIO);
	/* attempts, refused: still blocklisted (two refusals seen by the MDS) */
	refused = mds_perf("mds_blocklist", "sessions_refused");
	LT_WAIT_UNTIL(mds_perf("mds_blocklist", "sessions_refused") >= refused + 2, "the client stopped trying");
	ck_assert_uint_eq(perf_value("sessions_opened"), 1);
	ck_assert(mdsc_evicted(m, NULL, 0));
	a = asok_cmd("{\"prefix\": \"blocklist ls\"}");
	for (i = 0; i < json_object_array_length(a); i++) {
		e = json_object_array_get_idx(a, i);
		if (json_object_object_get_ex(e, "session", &v) && json_object_get_int64(v) == sid &&
		    json_object_object_get_ex(e, "entity", &v))
			snprintf(entity, sizeof(entity), "%s", json_object_get_string(v));
	}
	json_object_put(a);
	ck_assert_str_ne(entity, "");
	snprintf(cmd, sizeof(cmd), "{\"prefix\": \"blocklist rm\", \"entity\": \"%s\"}", entity);
	json_object_put(asok_cmd(cmd));
	LT_WAIT_UNTIL(perf_value("sessions_opened") >= 2, "no new session once the entry was lifted");
	ck_assert_uint_eq(perf_value("sessions_opened"), 2);
	LT_WAIT_UNTIL(!mdsc_evicted(m, NULL, 0), "the client still thinks it is evicted");
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "after", NULL), 0);
	ck_assert_int_eq(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, "before", NULL), 0);
	ck_assert_int_ne(mds_session_field("id"), sid);
	mdsc_destroy(m);
}
END_TEST

/*
 * Our session bound to another connection (a wire client that proves its
 * secret: a RECONNECT there moves it), ours left open without one: the
 * MDS answers "no session on this connection" (a request: ENOTCONN; a caps
 * message: REJECT).  The client resumes its session and sends the request
 * again: the program never sees ENOTCONN (it used to), and a caps message
 * is not dropped silently.
 */
static void move_session_away(struct mds_client *m)
{
	struct mdsp_keyring kr;
	const struct mdsp_key *k;
	char path[600], err[256];
	uint8_t secret[MDSP_KEY_LEN];
	uint64_t sid, t0;
	struct mdsw w;

	t0 = mdsc_lock(m);
	sid = m->session.id;
	memcpy(secret, m->session.secret, sizeof(secret));
	mdsc_unlock(m, SEC_SESSION, t0);
	ck_assert_uint_ne(sid, 0);
	snprintf(path, sizeof(path), "%s/keyring", wdir);
	ck_assert_msg(mdsp_keyring_load(path, &kr, err, sizeof(err)) == 0, "%s", err);
	k = mdsp_keyring_find(&kr, "client.admin");
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(mdsw_connect_raw(&w, D.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.admin", k->secret, NULL, 0), 0);
	ck_assert_int_eq(mdsw_reconnect_secret(&w, sid, secret), 0);
	mdsp_keyring_free(&kr);
	mdsw_close(&w);         /* the session waits for a reconnect, ours has none */
}

START_TEST(test_no_session_on_connection)
{
	struct mdsp_caps c = { .op = MDSP_CAPS_UPDATE, .ino = MDSP_ROOT_INO };
	struct mds_client *m;
	uint64_t rec;

	/* no RENEW during the test: its REJECT would bring the client back too */
	set_opt("client_session_renew_interval", "3600");
	mds_start(0, "--mds_session_timeout=3600");
	m = client();
	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, "d", NULL), 0);
	ck_assert_int_eq(mdsc_sync(m), 0);
	rec = perf_value("reconnects");
	move_session_away(m);
	ck_assert_int_eq(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, "d", NULL), 0);
	ck_assert_uint_eq(perf_value("no_session_answers"), 1);
	ck_assert_uint_eq(perf_value("reconnects"), rec + 1);
	/* a caps message: answered, and the client comes back the same way */
	move_session_away(m);
	ck_assert_int_eq(mdsc_send_caps(m, &c), 0);
	LT_WAIT_UNTIL(perf_value("reconnects") == rec + 2, "the client did not hear that its caps found no session");
	ck_assert_uint_eq(perf_value("no_session_answers"), 2);
	ck_assert(!mdsc_evicted(m, NULL, 0));
	ck_assert_int_eq(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, "d", NULL), 0);
	ck_assert_uint_eq(perf_value("sessions_opened"), 1);
	mdsc_destroy(m);
}
END_TEST

struct xworker {
	struct mds_client *m;
	uint64_t ino;
	int id, ret;
	pthread_t t;
};

static void *big_setxattr(void *arg)
{
	struct xworker *w = arg;
	struct mds_request *r;
	char name[32];

	snprintf(name, sizeof(name), "user.t%02d", w->id);
	r = req_new(w->m, MDSP_OP_SETXATTR, w->ino, name);
	r->args.data_len = MDSP_XATTR_SIZE_MAX;
	r->args.data = malloc(MDSP_XATTR_SIZE_MAX);
	ck_assert_ptr_nonnull(r->args.data);
	memset(r->args.data, 'a' + w->id % 26, MDSP_XATTR_SIZE_MAX);
	w->ret = mdsc_do_request(w->m, r);
	mdsc_request_put(r);
	return NULL;
}

#define X_THREADS 64

START_TEST(test_sigstop_during_big_sends)
{
	/* The MDS is stopped (SIGSTOP) while 64 threads send 64 KiB setxattrs:
	 * the socket buffers fill and a sender blocks in send().  The session
	 * layer must notice within client_session_timeout (plus slack) instead
	 * of hanging behind that sender, and after SIGCONT resume the session;
	 * every request then completes or fails cleanly (EIO), none hangs. */
	struct xworker w[X_THREADS];
	struct mds_client *m;
	struct mds_request *r;
	uint64_t t0, took;
	int ok = 0;

	set_opt("client_session_renew_interval", "0.2");
	set_opt("client_session_timeout", "1");
	mds_start(0, NULL);
	m = client();
	for (int i = 0; i < X_THREADS; i++) {     /* one file each: xattr space is per inode */
		char name[32];

		snprintf(name, sizeof(name), "x%02d", i);
		w[i] = (struct xworker){ .m = m, .id = i };
		ck_assert_int_eq(do_op(m, MDSP_OP_CREATE, MDSP_ROOT_INO, name, &w[i].ino), 0);
	}
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_int_eq(kill(D.pid, SIGSTOP), 0);
	t0 = now_mono_ns();
	for (int i = 0; i < X_THREADS; i++)
		pthread_create(&w[i].t, NULL, big_setxattr, &w[i]);
	/* the MDS stays stopped until noticed: unnoticed is a hang */
	(void)LT_WAITED(!mdsc_is_open(m));
	took = now_mono_ns() - t0;
	ck_assert(kill(D.pid, SIGCONT) == 0);
	ck_assert_msg(!mdsc_is_open(m), "a stopped MDS went unnoticed for %.1f s", (double)took / 1e9);
	fprintf(stderr, "[sigstop] connection declared dead after %.0f ms (client_session_timeout 1 s)\n",
		(double)took / 1e6);
	for (int i = 0; i < X_THREADS; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_msg(w[i].ret == 0 || w[i].ret == -EIO, "thread %d: %d", i, w[i].ret);
		ok += w[i].ret == 0;
	}
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert(mdsc_is_open(m));
	ck_assert_uint_ge(perf_value("reconnects"), 1);
	fprintf(stderr, "[sigstop] %d of %d setxattrs succeeded, retries %llu, sent_lost %llu\n", ok, X_THREADS,
		(unsigned long long)perf_value("retries"), (unsigned long long)perf_value("sent_lost"));
	/* the mount goes on: a value set before the stop reads back */
	for (int i = 0; i < X_THREADS; i++) {
		char name[32];

		if (w[i].ret)
			continue;
		snprintf(name, sizeof(name), "user.t%02d", i);
		r = req_new(m, MDSP_OP_GETXATTR, w[i].ino, name);
		ck_assert_int_eq(mdsc_do_request(m, r), 0);
		ck_assert_uint_eq(r->reply->data_len, MDSP_XATTR_SIZE_MAX);
		ck_assert_uint_eq(r->reply->data[0], (uint8_t)('a' + i % 26));
		mdsc_request_put(r);
		break;
	}
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_dead_mds_at_open)
{
	struct mds_client *m;
	char addr[64];
	uint64_t t0;
	int r;

	mds_start(0, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", D.port);
	mds_kill(SIGKILL);
	ck_assert_int_eq(mdsc_create(addr, NULL, NULL, NULL, &m), 0);
	t0 = now_mono_ns();
	r = mdsc_open_session(m, 1000);
	ck_assert(r == -ECONNREFUSED || r == -ETIMEDOUT);
	ck_assert_uint_lt(now_mono_ns() - t0, lt_hang_ns());        /* bounded: retrying for ever is the bug */
	mdsc_destroy(m);
}
END_TEST


/* ---- authentication: what a client is told ------------------------------------ */

/* stderr (where the client logs without a log_file) into @path from now on. */
static void stderr_to(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	dup2(fd, 2);
	close(fd);
}

static bool file_has(const char *path, const char *a, const char *b)
{
	char line[2048];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, a) && (!b || strstr(line, b));
	fclose(f);
	return found;
}

/* Open a session with @keyring as client_keyring and @name as client_auth_name. */
static int open_with(const char *keyring, const char *name, int *create_err)
{
	struct mds_client *m;
	char addr[64];
	uint64_t t0;
	int r;

	set_opt("client_keyring", keyring);
	set_opt("client_auth_name", name);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", D.port);
	*create_err = mdsc_create(addr, NULL, NULL, NULL, &m);
	if (*create_err)
		return *create_err;
	t0 = now_mono_ns();
	/* a refused key is a final answer, not something to retry until the
	 * timeout: an hour, so that retrying is a hang */
	r = mdsc_open_session(m, 3600 * 1000);
	ck_assert_msg(r == 0 || now_mono_ns() - t0 < lt_hang_ns(), "refusal took %.1f s",
		      (double)(now_mono_ns() - t0) / 1e9);
	mdsc_destroy(m);
	return r;
}

START_TEST(test_auth_errors_say_what_to_do)
{
	char log[512], path[512], wrong[512], err[256];
	struct mdsp_keyring kr = { 0 };
	uint8_t key[MDSP_KEY_LEN];
	int cerr;

	mds_start(0, NULL);
	snprintf(log, sizeof(log), "%s/client.stderr", wdir);
	stderr_to(log);

	/* the right key: a session */
	snprintf(path, sizeof(path), "%s/client.keyring", wdir);
	ck_assert_int_eq(open_with(path, "client.admin", &cerr), 0);

	/* a wrong key: EKEYREJECTED, and the log says "wrong key" and how to fetch the right one */
	memset(key, 0x77, sizeof(key));
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.admin", key), 0);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.other", key), 0);
	snprintf(wrong, sizeof(wrong), "%s/wrong.keyring", wdir);
	ck_assert_int_eq(mdsp_keyring_save(wrong, &kr, err, sizeof(err)), 0);
	mdsp_keyring_free(&kr);
	ck_assert_int_eq(open_with(wrong, "client.admin", &cerr), -EKEYREJECTED);
	ck_assert(file_has(log, "wrong key for client.admin", "loligo auth get client.admin"));

	/* a name the MDS holds no key for: ENOKEY, and how to create one */
	ck_assert_int_eq(open_with(wrong, "client.other", &cerr), -ENOKEY);
	ck_assert(file_has(log, "no key for client.other", "loligo auth get-or-create client.other"));

	/* no key for the name in our own keyring: refused before connecting */
	ck_assert_int_eq(open_with(path, "client.other", &cerr), -ENOKEY);
	ck_assert(file_has(log, "has no key for client.other", "client_keyring"));

	/* no keyring at all where the MDS requires one: EACCES, naming the file to create */
	snprintf(path, sizeof(path), "%s/missing.keyring", wdir);
	ck_assert_int_eq(open_with(path, "client.admin", &cerr), -EACCES);
	ck_assert(file_has(log, "missing.keyring (client_keyring) does not exist", "get-or-create client.admin"));
	/* and the last word of the failed open carries the reason, not just an errno */
	ck_assert(file_has(log, "authentication as client.admin failed", "missing.keyring (client_keyring) does not exist"));

	/* a malformed keyring: refused at create, with the line */
	snprintf(path, sizeof(path), "%s/bad.keyring", wdir);
	{
		FILE *f = fopen(path, "w");

		fputs("[client.admin]\n\tkey = nonsense\n", f);
		fclose(f);
		ck_assert_int_eq(chmod(path, 0600), 0);
	}
	ck_assert_int_eq(open_with(path, "client.admin", &cerr), -EINVAL);
	ck_assert(file_has(log, "bad.keyring line 2", NULL));

	/* a good key in a keyring group or others may read: refused at create,
	 * naming the file, its mode and the chmod that fixes it */
	snprintf(path, sizeof(path), "%s/client.keyring", wdir);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(open_with(path, "client.admin", &cerr), -EPERM);
	ck_assert_int_eq(cerr, -EPERM);
	{
		char want[600];

		snprintf(want, sizeof(want), "Permissions 0644 for '%s' are too open", path);
		ck_assert(file_has(log, want, "client_keyring"));
		snprintf(want, sizeof(want), "chmod 600 %s", path);
		ck_assert(file_has(log, want, NULL));
	}
	ck_assert_int_eq(chmod(path, 0620), 0);     /* others may not write it either */
	ck_assert_int_eq(open_with(path, "client.admin", &cerr), -EPERM);
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(open_with(path, "client.admin", &cerr), 0);

	/* and the MDS logged each refusal with the peer and the reason */
	snprintf(path, sizeof(path), "%s/mds.log", wdir);
	ck_assert(file_has(path, "peer 127.0.0.1:", "wrong key for client.admin"));
	ck_assert(file_has(path, "peer 127.0.0.1:", "no key for client.other"));
	ck_assert(file_has(path, "peer 127.0.0.1:", "offered no key"));
}
END_TEST

/* ---- shutdown: SIGTERM, kill -9 and the unmount -------------------------------- */

#define SEC 1000000000ull

/* `config set @var @val` on the running MDS (its admin socket). */
static void mds_config(const char *var, const char *val)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *e;
	char path[512];

	snprintf(path, sizeof(path), "%s/mds.asok", wdir);
	json_object_object_add(req, "prefix", json_object_new_string("config set"));
	json_object_object_add(req, "var", json_object_new_string(var));
	json_object_object_add(req, "val", json_object_new_string(val));
	ck_assert_int_eq(asok_request(path, req, &rep, 5000), 0);
	json_object_put(req);
	ck_assert_msg(!json_object_object_get_ex(rep, "error", &e), "config set %s %s: %s", var, val,
		      json_object_get_string(e));
	json_object_put(rep);
}

/* Create @n files @prefix0.. in the root, each answered UNSAFE; the requests in @r. */
static void create_unsafe(struct mds_client *m, const char *prefix, int n, struct mds_request **r)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		r[i] = req_new(m, MDSP_OP_CREATE, MDSP_ROOT_INO, name);
		r[i]->args.mode = S_IFREG | 0644;
		r[i]->args.oflags = O_CREAT | O_EXCL | O_RDWR;
		ck_assert_int_eq(mdsc_do_request(m, r[i]), 0);
		ck_assert_msg(r[i]->reply->flags & MDSP_REPLY_UNSAFE, "%s: SAFE at once, the journal was not held",
			      name);
	}
}

/* Wait for the MDS to exit (it was signalled); its wait status, and *@ns since @t0. */
static int mds_reap(uint64_t t0, uint64_t *ns)
{
	int st = 0;

	ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
	*ns = now_mono_ns() - t0;
	D.pid = 0;
	return st;
}

/* Poll @path for a line with @a (and @b) for up to @secs. */
static bool wait_file_has(const char *path, const char *a, const char *b, int secs)
{
	uint64_t until = now_mono_ns() + (uint64_t)secs * SEC;

	while (now_mono_ns() < until) {
		if (file_has(path, a, b))
			return true;
		usleep(10000);
	}
	return false;
}

/* The root holds exactly the @n files @prefix0.., each once (a fresh session). */
static void assert_files(const char *prefix, int n)
{
	struct mds_client *m = client();
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		ck_assert_msg(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, name, NULL) == 0, "%s is lost", name);
	}
	ck_assert_int_eq(count_entries(m, MDSP_ROOT_INO), n);
	mdsc_destroy(m);
}

/*
 * SIGTERM while requests are answered UNSAFE (the journal waits an hour for
 * more, and the shutdown may take as long): the MDS writes them and sends
 * their SAFE replies before it closes the connections, without waiting out
 * the delay, so the client's sync (what an unmount or syncfs does) is done
 * and nothing is left to replay.  Waiting out the delay would be a hang:
 * the sync fails at client_request_timeout (the hang bound).
 */
START_TEST(test_sigterm_sends_safe_before_closing)
{
	struct mds_request *r[3];
	struct mds_client *m;
	static const char *const opts[] = { "--mds_shutdown_timeout=3600", NULL };
	uint64_t t0, t_exit, t_sync;
	uint16_t port;
	char tmo[32];
	int st, ret;

	snprintf(tmo, sizeof(tmo), "%llu", (unsigned long long)(lt_hang_ns() / SEC));
	set_opt("client_request_timeout", tmo);   /* bounds mdsc_sync below */
	mds_start_opts(0, opts);
	port = D.port;
	m = client();   /* (a session open waits for the journal too) */
	mds_config("mds_journal_max_delay", "3600");
	create_unsafe(m, "s", 3, r);
	t0 = now_mono_ns();
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	ret = mdsc_sync(m);
	t_sync = now_mono_ns() - t0;
	st = mds_reap(t0, &t_exit);
	fprintf(stderr, "[sigterm] sync %.3f s, MDS exit %.3f s after SIGTERM\n", (double)t_sync / 1e9,
		(double)t_exit / 1e9);
	ck_assert_msg(ret == 0, "after SIGTERM the requests answered UNSAFE never got their SAFE reply (sync: %s "
		      "after %.1f s)", strerror(-ret), (double)t_sync / 1e9);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(mdsc_wait_safe(m, r[i]), 0);
		mdsc_request_put(r[i]);
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loligo-mds: wait status %#x", st);
	ck_assert_msg(t_exit < lt_hang_ns(), "the MDS took %.1f s to stop (waited out mds_journal_max_delay?)",
		      (double)t_exit / 1e9);
	mdsc_destroy(m);        /* nothing left to wait for: check's timeout catches a hang */
	mds_start(port, NULL);
	assert_files("s", 3);
}
END_TEST

/*
 * SIGTERM while the journal cannot write (the hold hook): the drain is
 * bounded by mds_shutdown_timeout, and what was answered UNSAFE is not lost:
 * the client replays it to the next MDS, each file made once.
 */
START_TEST(test_sigterm_drain_is_bounded)
{
	static const char *const opts[] = { "--mds_shutdown_timeout=1", NULL };
	struct mds_request *r[3];
	struct mds_client *m;
	uint64_t t0, t_exit;
	uint16_t port;
	int st;

	set_opt("client_request_timeout", "20");
	mds_start_opts(0, opts);
	port = D.port;
	m = client();
	mds_config("mds_journal_hold", "true");
	create_unsafe(m, "b", 3, r);
	t0 = now_mono_ns();
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	st = mds_reap(t0, &t_exit);
	fprintf(stderr, "[sigterm, journal held] MDS exit %.3f s after SIGTERM\n", (double)t_exit / 1e9);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loligo-mds: wait status %#x", st);
	ck_assert_msg(t_exit >= SEC * 9 / 10, "the MDS stopped after %.2f s, before mds_shutdown_timeout: "
		      "did it drain at all?", (double)t_exit / 1e9);
	/* the journal is held for good: not bounded by mds_shutdown_timeout
	 * would be a hang (mds_reap would not return) */
	ck_assert_msg(t_exit < lt_hang_ns(), "the MDS took %.1f s to stop with mds_shutdown_timeout 1",
		      (double)t_exit / 1e9);
	mds_start(port, NULL);
	ck_assert_int_eq(mdsc_sync(m), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(mdsc_wait_safe(m, r[i]), 0);
		ck_assert_int_eq(r[i]->reply->result, 0);
		mdsc_request_put(r[i]);
	}
	mdsc_destroy(m);
	assert_files("b", 3);
}
END_TEST

/*
 * kill -9 in the middle of the drain (SIGTERM with the journal held, then
 * SIGKILL once the MDS says it drains): nothing acknowledged is lost, the
 * client replays what was UNSAFE to the restarted MDS.
 */
START_TEST(test_kill9_during_drain)
{
	static const char *const opts[] = { "--mds_shutdown_timeout=30", NULL };
	struct mds_request *r[4];
	struct mds_client *m;
	char log[512];
	uint16_t port;

	set_opt("client_request_timeout", "20");
	mds_start_opts(0, opts);
	port = D.port;
	m = client();
	mds_config("mds_journal_hold", "true");
	create_unsafe(m, "d", 4, r);
	snprintf(log, sizeof(log), "%s/mds.log", wdir);
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	ck_assert_msg(wait_file_has(log, "draining", NULL, 10), "no 'draining' line in %s after SIGTERM", log);
	mds_kill(SIGKILL);
	mds_start(port, NULL);
	ck_assert_int_eq(mdsc_sync(m), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(mdsc_wait_safe(m, r[i]), 0);
		ck_assert_int_eq(r[i]->reply->result, 0);
		mdsc_request_put(r[i]);
	}
	mdsc_destroy(m);
	assert_files("d", 4);
}
END_TEST

/*
 * The frame MACs both sides take: AES-256-GMAC between a client and an MDS
 * that both have auth_frame_gmac (the default), HMAC-SHA256 as soon as
 * either side does not (a peer of before GMAC offers or takes nothing),
 * and requests run under either.
 */
/* a session, a mutation and a lookup under the frame MACs it got, closed
 * again (this suite's clients do not answer revokes: one at a time) */
static void mac_round(const char *name)
{
	struct mds_client *m = client();
	uint64_t ino;

	ck_assert_int_eq(do_op(m, MDSP_OP_MKDIR, MDSP_ROOT_INO, name, &ino), 0);
	ck_assert_int_eq(do_op(m, MDSP_OP_LOOKUP, MDSP_ROOT_INO, name, NULL), 0);
	mdsc_destroy(m);
}

START_TEST(test_frame_mac_negotiated)
{
	mds_start(0, NULL);
	/* both: GMAC */
	mac_round("mac0");
	ck_assert_uint_eq(mds_perf("mds", "auth_ok"), 1);
	ck_assert_uint_eq(mds_perf("mds", "auth_gmac"), 1);
	/* the client does not offer it: HMAC */
	set_opt("auth_frame_gmac", "false");
	mac_round("mac1");
	set_opt("auth_frame_gmac", "true");
	ck_assert_uint_eq(mds_perf("mds", "auth_ok"), 2);
	ck_assert_uint_eq(mds_perf("mds", "auth_gmac"), 1);
	/* the MDS does not take it: HMAC */
	mds_config("auth_frame_gmac", "false");
	mac_round("mac2");
	ck_assert_uint_eq(mds_perf("mds", "auth_ok"), 3);
	ck_assert_uint_eq(mds_perf("mds", "auth_gmac"), 1);
}
END_TEST

struct destroyer {
	struct mds_client *m;
	pthread_t t;
	_Atomic bool done;
};

static void *destroy_main(void *arg)
{
	struct destroyer *d = arg;

	mdsc_destroy(d->m);
	atomic_store(&d->done, true);
	return NULL;
}

/*
 * The unmount (mdsc_destroy) after kill -9 of the MDS with requests only
 * UNSAFE (never journaled): it waits, bounded by client_unmount_timeout, for
 * an MDS to come back, replays them there and returns once they are SAFE, so
 * a restart within the bound loses nothing.
 */
START_TEST(test_unmount_waits_for_replay)
{
	struct destroyer d = { 0 };
	struct mds_request *r[3];
	char log[512];
	uint16_t port;

	snprintf(log, sizeof(log), "%s/client.log", wdir);
	set_opt("client_unmount_timeout", "30");
	mds_start(0, NULL);
	port = D.port;
	d.m = client();
	mds_config("mds_journal_hold", "true");
	create_unsafe(d.m, "w", 3, r);
	for (int i = 0; i < 3; i++)
		mdsc_request_put(r[i]);
	mds_kill(SIGKILL);
	LT_WAIT_UNTIL(!mdsc_is_open(d.m), "the client did not notice its MDS was killed");
	stderr_to(log);
	ck_assert_int_eq(pthread_create(&d.t, NULL, destroy_main, &d), 0);
	ck_assert_msg(wait_file_has(log, "unmount", "waiting", 10), "the unmount did not wait for the MDS (%s)",
		      log);
	ck_assert(!atomic_load(&d.done));
	mds_start(port, NULL);
	pthread_join(d.t, NULL);
	assert_files("w", 3);
}
END_TEST

/*
 * The same with no MDS coming back: the unmount returns after
 * client_unmount_timeout and names, request by request, what may be lost.
 */
START_TEST(test_unmount_bounded_says_what_is_lost)
{
	struct mds_request *r[2];
	struct mds_client *m;
	char log[512];
	uint64_t t0, t;

	snprintf(log, sizeof(log), "%s/client.log", wdir);
	set_opt("client_unmount_timeout", "1");
	mds_start(0, NULL);
	m = client();
	mds_config("mds_journal_hold", "true");
	create_unsafe(m, "lost_", 2, r);
	for (int i = 0; i < 2; i++)
		mdsc_request_put(r[i]);
	mds_kill(SIGKILL);
	stderr_to(log);
	t0 = now_mono_ns();
	mdsc_destroy(m);
	t = now_mono_ns() - t0;
	fprintf(stderr, "[unmount, MDS gone] %.3f s\n", (double)t / 1e9);
	ck_assert_msg(t < 4 * SEC, "the unmount took %.1f s with client_unmount_timeout 1", (double)t / 1e9);
	ck_assert_msg(file_has(log, "create", "lost_0") && file_has(log, "create", "lost_1"),
		      "the unmount did not name the creates it gave up on (%s)", log);
	ck_assert_msg(file_has(log, "UNSAFE", NULL), "the unmount did not say the requests were only UNSAFE (%s)",
		      log);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mdsc_mds");
	TCase *tc = tcase_create("real_mds");

	tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
	tcase_add_checked_fixture(tc, mds_setup, mds_teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_concurrent_threads);
	tcase_add_test(tc, test_safe_waits_flush_the_journal);
	tcase_add_test(tc, test_kill9_during_workload);
	tcase_add_test(tc, test_delegated_ino_after_restart);
	tcase_add_test(tc, test_evicted_real);
	tcase_add_test(tc, test_evicted_reconnect_stale);
	tcase_add_test(tc, test_no_session_on_connection);
	tcase_add_test(tc, test_dead_mds_at_open);
	tcase_add_test(tc, test_auth_errors_say_what_to_do);
	tcase_add_test(tc, test_sigstop_during_big_sends);
	suite_add_tcase(s, tc);

	tc = tcase_create("frame_mac");
	tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
	tcase_add_checked_fixture(tc, mds_setup, mds_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_frame_mac_negotiated);
	suite_add_tcase(s, tc);

	tc = tcase_create("shutdown");
	tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
	tcase_add_checked_fixture(tc, mds_setup, mds_teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_sigterm_sends_safe_before_closing);
	tcase_add_test(tc, test_sigterm_drain_is_bounded);
	tcase_add_test(tc, test_kill9_during_drain);
	tcase_add_test(tc, test_unmount_waits_for_replay);
	tcase_add_test(tc, test_unmount_bounded_says_what_is_lost);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
