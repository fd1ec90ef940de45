/*
 * test_store_multi.c - several processes on one local store
 * (store/local_share.c).
 *
 * Writers are forked children that open the store themselves.  Every op of
 * writer w, number i, goes to the one object "shared": it writes (or
 * zeroes) a pseudo-random range of its first REGION bytes and appends its
 * 8-byte id (w << 32 | i) behind them, in one compound op.  Appends land at
 * the end in commit order, so the tail of the object is the commit order
 * of every op, from both processes; the checker replays the ranges in that
 * order on a model and compares every byte of the region.  An op that is
 * not in the log left no byte; an acknowledged op is in the log.
 *
 *   t_same_object   two writers at once
 *   t_kill_one      one writer is killed -9 while its acknowledged effects
 *                   are committed but not applied (the stall hook holds
 *                   that window open); the other keeps writing over the same
 *                   bytes and must first redo the dead one's effects
 *   t_kill_restart  the same with nobody else running: the next open redoes
 *   t_read_waits    a read in another process sees an acknowledged write
 *                   whose writer has not applied its effects yet
 *   t_second_open   in one process the store opens once; a second process
 *                   opens it too
 *   t_stopped_waiter a process stopped (SIGSTOP) while it waits for the
 *                   effects lock does not stall the writer that holds it
 *   t_failed_apply  a writer's file write fails after its commit (a test
 *                   hook): it reads EIO rather than the missing bytes, and
 *                   another process redoes what it left, so every
 *                   acknowledged byte is there
 *   t_cas_two_procs two processes race guarded ops (store_op_omap_cmp) on
 *                   one key: exactly one winner per step
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "store/store.h"
#include "tests/unit/store_inline_env.h"
#include "tests/test_child.h"

#define REGION (256u << 10)
#define MAXLEN (24u << 10)
#define INFLIGHT 8
#define ID_TAKEOVERS 0xffffffff00000001ull   /* a writer's last report: how many dead owners it took over */

static char dir[64];

static struct store_config make_cfg(bool create)
{
	struct store_config cfg = { 0 };
	cfg.backend = "local";
	cfg.local_path = dir;
	cfg.create = create;
	cfg.local_map_size = 1ull << 30;
	cfg.local_inline_max = test_store_inline_max();
	return cfg;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void setup(void)
{
	struct store_config cfg;
	struct store_pool *p;
	struct store *st;
	struct store_op *op;
	void *zeros = calloc(1, REGION);

	snprintf(dir, sizeof(dir), "/tmp/loligo-store-multi-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	cfg = make_cfg(true);
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_create(st, "data"), 0);
	ck_assert_int_eq(store_pool_open(st, "data", NULL, &p), 0);
	op = store_op_new();
	store_op_write_full(op, zeros, REGION);
	ck_assert_int_eq(store_op_exec(p, "shared", op), 0);
	store_pool_close(p);
	store_close(st);
	free(zeros);
}

static void teardown(void)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- what op (w, i) does -------------------------------------------- */

struct opdesc {
	bool zero;
	uint32_t off, len;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static struct opdesc describe(uint64_t id)
{
	uint64_t h = mix(id + 1);
	struct opdesc d;

	d.zero = h % 7 == 3;
	d.off = (uint32_t)((h >> 8) % (REGION - 1));
	d.len = 1 + (uint32_t)((h >> 32) % MAXLEN);
	if (d.off + d.len > REGION)
		d.len = REGION - d.off;
	return d;
}

static void fill(unsigned char *p, uint32_t len, uint64_t id)
{
	uint64_t x = mix(id ^ 0x5bd1e995u);
	for (uint32_t k = 0; k < len; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[k] = (unsigned char)(x | 1);   /* never 0: a zeroed byte is told from a written one */
	}
}

/* ---- writers (children) --------------------------------------------- */

struct writer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inflight;
	int fd;
};

struct ack {
	struct writer *w;
	uint64_t id;
};

static void ack_cb(int r, void *arg)
{
	struct ack *a = arg;
	struct writer *w = a->w;

	if (r) {
		fprintf(stderr, "writer: op %llx failed: %d\n", (unsigned long long)a->id, r);
		_exit(4);
	}
	if (write(w->fd, &a->id, sizeof(a->id)) != sizeof(a->id))
		_exit(3);
	free(a);
	pthread_mutex_lock(&w->lock);
	w->inflight--;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static uint64_t perf_value(const char *name)
{
	struct json_object *pd = perf_dump_json(), *v;
	uint64_t n = 0;

	json_object_object_foreach(pd, gname, gval) {
		if (strncmp(gname, "store_local", 11) == 0 && json_object_object_get_ex(gval, name, &v))
			n += (uint64_t)json_object_get_int64(v);
	}
	json_object_put(pd);
	return n;
}

static void __attribute__((noreturn)) writer_main(uint32_t wid, uint32_t nops, int fd, const char *stall_ms)
{
	struct store_config cfg = make_cfg(false);
	struct writer w = { .inflight = 0, .fd = fd };
	unsigned char *buf = malloc(MAXLEN);
	struct store_pool *p;
	struct store *st;

	if (stall_ms)
		setenv("LOLIGO_STORE_LOCAL_TEST_STALL_APPLY_MS", stall_ms, 1);
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	if (!buf || store_open(&cfg, &st) || store_pool_open(st, "data", NULL, &p))
		_exit(2);
	for (uint32_t i = 0; i < nops; i++) {
		uint64_t id = (uint64_t)wid << 32 | i;
		struct opdesc d = describe(id);
		struct store_op *op = store_op_new();
		struct ack *a = malloc(sizeof(*a));

		pthread_mutex_lock(&w.lock);
		while (w.inflight >= INFLIGHT)
			pthread_cond_wait(&w.cond, &w.lock);
		w.inflight++;
		pthread_mutex_unlock(&w.lock);
		if (d.zero) {
			store_op_zero(op, d.off, d.len);
		} else {
			fill(buf, d.len, id);
			store_op_write(op, d.off, buf, d.len);
		}
		store_op_append(op, &id, sizeof(id));
		a->w = &w;
		a->id = id;
		if (store_op_submit(p, "shared", op, ack_cb, a))
			_exit(5);
	}
	pthread_mutex_lock(&w.lock);
	while (w.inflight)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	{
		uint64_t rep[2] = { ID_TAKEOVERS, perf_value("owners_taken_over") };
		if (write(fd, rep, sizeof(rep)) != sizeof(rep))
			_exit(3);
	}
	store_pool_close(p);
	store_close(st);
	_exit(0);
}

struct child {
	pid_t pid;
	int fd;              /* read end of its ack pipe */
	uint64_t acked;      /* acknowledged ops */
	uint64_t last;       /* id of the last ack */
	int64_t takeovers;   /* -1 until reported */
	bool eof;
};

static void start_writer(struct child *c, uint32_t wid, uint32_t nops, const char *stall_ms)
{
	int pfd[2];

	memset(c, 0, sizeof(*c));
	c->takeovers = -1;
	ck_assert_int_eq(pipe(pfd), 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive a failed test */
		close(pfd[0]);
		writer_main(wid, nops, pfd[1], stall_ms);
	}
	close(pfd[1]);
	c->fd = pfd[0];
}

/* Read what @c reported so far; with @wait, at least one record (or EOF). */
static void drain(struct child *c, bool wait)
{
	struct pollfd pf = { .fd = c->fd, .events = POLLIN };

	while (!c->eof && poll(&pf, 1, wait ? 20000 : 0) > 0) {
		uint64_t id;
		ssize_t n = read(c->fd, &id, sizeof(id));
		if (n <= 0) {
			c->eof = true;
			break;
		}
		ck_assert_int_eq(n, sizeof(id));
		wait = false;
		if (id == ID_TAKEOVERS) {
			ck_assert_int_eq(read(c->fd, &id, sizeof(id)), sizeof(id));
			c->takeovers = (int64_t)id;
			continue;
		}
		c->acked++;
		c->last = id;
	}
}

static void reap(struct child *c, bool killed)
{
	int status;

	while (!c->eof)
		drain(c, true);
	ck_assert_int_eq(waitpid(c->pid, &status, 0), c->pid);
	if (killed)
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "writer status %d", status);
	else
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer status %d", status);
	close(c->fd);
}

/* ---- the checker ---------------------------------------------------- */

/*
 * @buf holds the object "shared" (@len bytes): every op in its log, in log
 * order, replayed on a model gives the region's bytes; each writer's ops are
 * in its submission order; every acknowledged op (the first @acked[w] of
 * writer w) is in the log.
 */
static void check_bytes(const unsigned char *buf, size_t len, const uint64_t *acked, unsigned nwriters)
{
	unsigned char *model = calloc(1, REGION);
	uint64_t next[4] = { 0 };
	size_t nlog;

	ck_assert_uint_ge(len, REGION);
	ck_assert_uint_eq((len - REGION) % 8, 0);
	nlog = (len - REGION) / 8;
	for (size_t j = 0; j < nlog; j++) {
		uint64_t id;
		memcpy(&id, buf + REGION + 8 * j, 8);
		uint32_t w = (uint32_t)(id >> 32), i = (uint32_t)id;
		ck_assert_msg(w < nwriters, "log entry %zu: bad id %llx", j, (unsigned long long)id);
		ck_assert_msg(i == next[w], "log entry %zu: writer %u op %u, expected op %llu", j, w, i,
			      (unsigned long long)next[w]);
		next[w]++;
		struct opdesc d = describe(id);
		if (d.zero)
			memset(model + d.off, 0, d.len);
		else
			fill(model + d.off, d.len, id);
	}
	for (unsigned w = 0; w < nwriters; w++)
		ck_assert_msg(next[w] >= acked[w], "writer %u: %llu ops acknowledged, %llu in the log", w,
			      (unsigned long long)acked[w], (unsigned long long)next[w]);
	for (uint32_t k = 0; k < REGION; k++)
		if (model[k] != buf[k])
			ck_abort_msg("byte %u is %02x, the commit order says %02x (%zu ops in the log)", k, buf[k],
				     model[k], nlog);
	fprintf(stderr, "checked %zu ops in commit order\n", nlog);
	free(model);
}

/* Read all of "shared" in one read (one snapshot) and check it. */
static void check_shared_in(struct store_pool *p, const uint64_t *acked, unsigned nwriters)
{
	size_t cap = REGION + 8 * 400000;
	unsigned char *buf = malloc(cap);
	ssize_t n = store_read(p, "shared", 0, cap, buf);

	ck_assert_int_gt(n, 0);
	ck_assert_uint_lt((size_t)n, cap);
	check_bytes(buf, (size_t)n, acked, nwriters);
	free(buf);
}

static void check_shared(const uint64_t *acked, unsigned nwriters)
{
	struct store_config cfg = make_cfg(false);
	struct store_pool *p;
	struct store *st;

	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "data", NULL, &p), 0);
	check_shared_in(p, acked, nwriters);
	store_pool_close(p);
	store_close(st);
}

START_TEST(t_same_object)
{
	struct child c[2];
	uint64_t acked[2];

	start_writer(&c[0], 0, 1500, NULL);
	start_writer(&c[1], 1, 1500, NULL);
	for (int k = 0; k < 2; k++) {
		reap(&c[k], false);
		acked[k] = c[k].acked;
		ck_assert_uint_eq(acked[k], 1500);
	}
	check_shared(acked, 2);
}
END_TEST

/* Kill writer 1 right after an ack: it is asleep in the stall, holding the effects lock. */
static void kill_in_stall(struct child *victim, uint64_t after_acks)
{
	while (victim->acked < after_acks) {
		drain(victim, true);
		ck_assert_msg(!victim->eof, "the victim exited early");
	}
	kill(victim->pid, SIGKILL);
}

START_TEST(t_kill_one)
{
	struct child c[2];
	uint64_t acked[2];

	start_writer(&c[0], 0, 3000, NULL);
	start_writer(&c[1], 1, 100000, "150");
	kill_in_stall(&c[1], 8);
	reap(&c[1], true);
	reap(&c[0], false);
	acked[0] = c[0].acked;
	acked[1] = c[1].acked;
	ck_assert_uint_eq(acked[0], 3000);
	/* the survivor found the dead writer's pending effects and redid them */
	ck_assert_int_ge(c[0].takeovers, 1);
	check_shared(acked, 2);
}
END_TEST

START_TEST(t_kill_restart)
{
	struct child c;
	uint64_t acked[2] = { 0, 0 };

	start_writer(&c, 1, 100000, "150");
	kill_in_stall(&c, 5);
	reap(&c, true);
	acked[1] = c.acked;
	check_shared(acked, 2);   /* the open redoes them */
}
END_TEST

START_TEST(t_read_waits)
{
	struct store_config cfg;
	struct store_pool *p;
	struct store *st;
	struct child c;
	uint64_t acked[2] = { 0, 0 };

	/* writer 1 stalls 400 ms after each commit, holding the effects lock */
	start_writer(&c, 1, 100000, "400");
	drain(&c, true);
	ck_assert_uint_ge(c.acked, 1);
	/* its first ops are acknowledged, not yet in the file: a reader must see them all the same */
	acked[1] = c.acked;
	cfg = make_cfg(false);
	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "data", NULL, &p), 0);
	check_shared_in(p, acked, 2);
	store_pool_close(p);
	store_close(st);
	kill(c.pid, SIGKILL);
	reap(&c, true);
	acked[1] = c.acked;
	check_shared(acked, 2);
}
END_TEST

/* The other process of t_second_open: opens the store @path has open and reads it. */
static int second_open_child(const char *path)
{
	struct store_config cfg;
	struct store_pool *p;
	struct store *st;
	char b[8];

	snprintf(dir, sizeof(dir), "%s", path);
	cfg = make_cfg(false);
	if (store_open(&cfg, &st) || store_pool_open(st, "data", NULL, &p) ||
	    store_read(p, "shared", 0, sizeof(b), b) != (ssize_t)sizeof(b))
		return 1;
	store_pool_close(p);
	store_close(st);
	return 0;
}

START_TEST(t_second_open)
{
	struct store_config cfg = make_cfg(false);
	struct store *st, *st2;
	int status;
	pid_t pid;

	ck_assert_int_eq(store_open(&cfg, &st), 0);
	/* twice in one process: refused (LMDB forbids it) */
	ck_assert_int_eq(store_open(&cfg, &st2), -EBUSY);
	/* another process: fine, while this one has it open (this binary
	 * exec'd again: a bare fork would copy the store worker's locks) */
	{
		const char *args[] = { "second-open", dir, NULL };
		pid = test_child_spawn(args);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "second process: status %d", status);
	store_close(st);
}
END_TEST

/* Waits for a byte on @cmd, reads "shared" (8 bytes), reports the result on @out; again. */
static void __attribute__((noreturn)) reader_main(int cmd, int out)
{
	struct store_config cfg = make_cfg(false);
	struct store_pool *p;
	struct store *st;
	char c, b[8];

	if (store_open(&cfg, &st) || store_pool_open(st, "data", NULL, &p))
		_exit(2);
	while (read(cmd, &c, 1) == 1) {
		uint64_t r = (uint64_t)(int64_t)store_read(p, "shared", 0, sizeof(b), b);
		if (write(out, &r, sizeof(r)) != sizeof(r))
			_exit(3);
	}
	_exit(0);
}

/* An OFD lock on byte @at of store.lock: F_WRLCK, F_UNLCK; or with @test, 1 if another holds it. */
static int lockbyte(int fd, short type, off_t at, bool test)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = 1 };

	if (fcntl(fd, test ? F_OFD_GETLK : F_OFD_SETLK, &fl) < 0)
		return -errno;
	return test ? fl.l_type != F_UNLCK : 0;
}

START_TEST(t_stopped_waiter)
{
	struct child w;
	int cmd[2], out[2], status, lfd, i;
	uint64_t acked[2] = { 0, 0 }, r;
	char path[128];
	pid_t rd;

	/* this process holds the effects lock (byte 0 of store.lock), as a writer would */
	snprintf(path, sizeof(path), "%s/store.lock", dir);
	lfd = open(path, O_RDWR);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(lockbyte(lfd, F_WRLCK, 0, false), 0);
	ck_assert_int_eq(pipe(cmd), 0);
	ck_assert_int_eq(pipe(out), 0);
	rd = fork();
	ck_assert_int_ge(rd, 0);
	if (rd == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(lfd);
		close(cmd[1]);
		close(out[0]);
		reader_main(cmd[0], out[1]);
	}
	close(cmd[0]);
	close(out[1]);
	/* the reader's read waits for the lock, announced on byte 1: stop it there */
	ck_assert_int_eq(write(cmd[1], "r", 1), 1);
	for (i = 0; i < 1000 && lockbyte(lfd, F_WRLCK, 1, true) != 1; i++)
		usleep(10000);
	ck_assert_int_eq(lockbyte(lfd, F_WRLCK, 1, true), 1);
	ck_assert_int_eq(kill(rd, SIGSTOP), 0);
	/* stopped for sure before the lock is free (else it might still take it, and a stopped holder does stall) */
	ck_assert_int_eq(waitpid(rd, &status, WUNTRACED), rd);
	ck_assert(WIFSTOPPED(status));
	ck_assert_int_eq(lockbyte(lfd, F_UNLCK, 0, false), 0);
	/* a writer, with the stopped process still announced as waiting, finishes all the same */
	start_writer(&w, 0, 300, NULL);
	uint64_t deadline = now_mono_ns() + 30ull * 1000 * 1000 * 1000;
	while (!w.eof && now_mono_ns() < deadline)
		drain(&w, true);
	ck_assert_msg(w.eof, "the writer stalled behind a stopped waiter (%llu of 300 ops)", (unsigned long long)w.acked);
	reap(&w, false);
	ck_assert_uint_eq(w.acked, 300);
	/* and the reader, continued, reads */
	ck_assert_int_eq(kill(rd, SIGCONT), 0);
	ck_assert_int_eq(read(out[0], &r, sizeof(r)), sizeof(r));
	ck_assert_int_eq((int64_t)r, 8);
	close(cmd[1]);
	ck_assert_int_eq(waitpid(rd, &status, 0), rd);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader status %d", status);
	close(out[0]);
	close(lfd);
	acked[0] = 300;
	check_shared(acked, 2);
}
END_TEST

/* A writer whose 3rd file write fails: acks its ops, then reports its read of "shared" (-EIO expected). */
static void __attribute__((noreturn)) failing_writer(int fd)
{
	struct store_config cfg = make_cfg(false);
	unsigned char *buf = malloc(MAXLEN);
	struct store_pool *p;
	struct store *st;
	uint64_t rep[2];

	setenv("LOLIGO_STORE_LOCAL_TEST_FAIL_APPLY", "3", 1);
	if (!buf || store_open(&cfg, &st) || store_pool_open(st, "data", NULL, &p))
		_exit(2);
	for (uint32_t i = 0; i < 5; i++) {
		uint64_t id = (uint64_t)1 << 32 | i;
		struct opdesc d = describe(id);
		struct store_op *op = store_op_new();
		int r;

		if (d.zero) {
			store_op_zero(op, d.off, d.len);
		} else {
			fill(buf, d.len, id);
			store_op_write(op, d.off, buf, d.len);
		}
		store_op_append(op, &id, sizeof(id));
		r = store_op_exec(p, "shared", op);
		if (r)
			break;   /* the store broke: no more writes */
		if (write(fd, &id, sizeof(id)) != sizeof(id))
			_exit(3);
	}
	rep[0] = ID_TAKEOVERS;   /* (here: the result of a read after the failure) */
	rep[1] = (uint64_t)(int64_t)store_read(p, "shared", 0, 8, buf);
	if (write(fd, rep, sizeof(rep)) != sizeof(rep))
		_exit(3);
	pause();   /* stays alive: others must not need it to die */
	_exit(0);
}

START_TEST(t_failed_apply)
{
	struct child c;
	uint64_t acked[2] = { 0, 0 };
	int pfd[2];

	memset(&c, 0, sizeof(c));
	c.takeovers = -1;
	ck_assert_int_eq(pipe(pfd), 0);
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pfd[0]);
		failing_writer(pfd[1]);
	}
	close(pfd[1]);
	c.fd = pfd[0];
	while (c.takeovers == -1 && !c.eof)
		drain(&c, true);
	ck_assert_msg(!c.eof, "the writer died");
	{
		/* the op holding the 3rd file write (a write op has 2: data and log; a zero op 1) committed */
		uint32_t k = 0, writes = 0;
		for (; writes < 3; k++)
			writes += describe((uint64_t)1 << 32 | k).zero ? 1 : 2;
		ck_assert_uint_ge(c.acked, k);
	}
	ck_assert_int_eq((int64_t)c.takeovers, -EIO);
	/* the writer still runs; another process redoes what it could not apply */
	acked[1] = c.acked;
	check_shared(acked, 2);
	kill(c.pid, SIGKILL);
	reap(&c, true);
}
END_TEST

/* ---- compare-and-swap across processes (store_op_omap_cmp) ----------- */

#define CAS_TARGET 600u
#define CAS_PROC_THREADS 4

struct cas_thr {
	pthread_t th;
	struct store_pool *p;
	int fd;                  /* the report pipe, shared by the process's threads */
	pthread_barrier_t *start;
	int err;
};

/* One thread of a racer: moves "epoch" one step with a guarded op until it reaches CAS_TARGET. */
static void *cas_thr_main(void *arg)
{
	struct cas_thr *t = arg;

	pthread_barrier_wait(t->start);
	for (;;) {
		char cur[16], next[16];
		struct store_op *op;
		unsigned long e;
		size_t len;
		void *v;
		int r = store_omap_get(t->p, "shared", "epoch", &v, &len);

		if (r || len == 0 || len >= sizeof(cur)) {
			t->err = r ? r : -EIO;
			free(v);
			return NULL;
		}
		memcpy(cur, v, len);
		cur[len] = 0;
		free(v);
		e = strtoul(cur, NULL, 10);
		if (e >= CAS_TARGET)
			return NULL;
		snprintf(next, sizeof(next), "%lu", e + 1);
		op = store_op_new();
		store_op_omap_cmp(op, "epoch", cur, len);
		store_op_omap_set(op, "epoch", next, strlen(next));
		r = store_op_exec(t->p, "shared", op);
		if (r == 0) {
			uint32_t won = (uint32_t)(e + 1);   /* one write of 4 bytes: atomic on a pipe */
			if (write(t->fd, &won, sizeof(won)) != sizeof(won)) {
				t->err = -EPIPE;
				return NULL;
			}
		} else if (r != -ECANCELED) {
			t->err = r;
			return NULL;
		}
	}
}

/* A racing process: CAS_PROC_THREADS threads on its own open of the store; each epoch it made to @fd. */
static int cas_child(const char *path, int fd)
{
	struct store_config cfg;
	struct cas_thr t[CAS_PROC_THREADS];
	pthread_barrier_t start;
	struct store_pool *p;
	struct store *st;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	cfg = make_cfg(false);
	if (store_open(&cfg, &st) || store_pool_open(st, "data", NULL, &p))
		return 2;
	pthread_barrier_init(&start, NULL, CAS_PROC_THREADS);
	for (int i = 0; i < CAS_PROC_THREADS; i++) {
		t[i] = (struct cas_thr){ .p = p, .fd = fd, .start = &start };
		if (pthread_create(&t[i].th, NULL, cas_thr_main, &t[i]))
			return 3;
	}
	for (int i = 0; i < CAS_PROC_THREADS; i++) {
		pthread_join(t[i].th, NULL);
		if (t[i].err) {
			fprintf(stderr, "cas child: %s\n", strerror(-t[i].err));
			rc = 4;
		}
	}
	store_pool_close(p);
	store_close(st);
	return rc;
}

/*
 * Two processes, the store open in both, race to move "epoch" one step at
 * a time: every step has exactly one winner, and the wins add up to it.
 */
START_TEST(t_cas_two_procs)
{
	struct store_config cfg = make_cfg(false);
	unsigned char *seen = calloc(CAS_TARGET + 1, 1);
	unsigned wins[2] = { 0 }, total = 0;
	struct store_pool *p;
	struct store *st;
	struct store_op *op;
	struct pollfd pf[2];
	pid_t pid[2];
	int open_fds = 2;

	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "data", NULL, &p), 0);
	op = store_op_new();
	store_op_omap_set(op, "epoch", "0", 1);
	ck_assert_int_eq(store_op_exec(p, "shared", op), 0);
	store_pool_close(p);
	store_close(st);

	for (int i = 0; i < 2; i++) {
		int pfd[2];
		char fdarg[16];

		ck_assert_int_eq(pipe(pfd), 0);
		snprintf(fdarg, sizeof(fdarg), "%d", pfd[1]);
		{
			const char *args[] = { "cas", dir, fdarg, NULL };
			pid[i] = test_child_spawn(args);
		}
		ck_assert_int_gt(pid[i], 0);
		close(pfd[1]);
		pf[i] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
	}
	while (open_fds) {
		ck_assert_int_gt(poll(pf, 2, -1), 0);
		for (int i = 0; i < 2; i++) {
			uint32_t e;
			ssize_t n;

			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			n = read(pf[i].fd, &e, sizeof(e));
			if (n <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
				continue;
			}
			ck_assert_int_eq(n, sizeof(e));
			ck_assert_uint_ge(e, 1);
			ck_assert_uint_le(e, CAS_TARGET);
			ck_assert_msg(!seen[e], "epoch %u won twice", e);
			seen[e] = 1;
			wins[i]++;
		}
	}
	for (int i = 0; i < 2; i++) {
		int status;

		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "racer %d: status %d", i, status);
		total += wins[i];
	}
	ck_assert_uint_eq(total, CAS_TARGET);
	{
		void *v;
		size_t len;
		char want[16];

		snprintf(want, sizeof(want), "%u", CAS_TARGET);
		ck_assert_int_eq(store_open(&cfg, &st), 0);
		ck_assert_int_eq(store_pool_open(st, "data", NULL, &p), 0);
		ck_assert_int_eq(store_omap_get(p, "shared", "epoch", &v, &len), 0);
		ck_assert_uint_eq(len, strlen(want));
		ck_assert_int_eq(memcmp(v, want, len), 0);
		free(v);
		store_pool_close(p);
		store_close(st);
	}
	fprintf(stderr, "two processes: %u and %u of %u steps\n", wins[0], wins[1], CAS_TARGET);
	free(seen);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	log_init("test_store_multi");
	if (test_child_is(argc, argv)) {
		if (!strcmp(argv[2], "cas") && argc == 5)
			return cas_child(argv[3], atoi(argv[4]));
		return !strcmp(argv[2], "second-open") && argc == 4 ? second_open_child(argv[3]) : 2;
	}
	s = suite_create("store_multi");
	tc = tcase_create("processes");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t_second_open);
	tcase_add_test(tc, t_same_object);
	tcase_add_test(tc, t_read_waits);
	tcase_add_test(tc, t_kill_restart);
	tcase_add_test(tc, t_kill_one);
	tcase_add_test(tc, t_failed_apply);
	tcase_add_test(tc, t_stopped_waiter);
	tcase_add_test(tc, t_cas_two_procs);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
