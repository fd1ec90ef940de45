/*
 * test_fuse_locks.c - file locks and eviction through two real FUSE mounts
 * of one filesystem (issue 10 items 3 and 4): the kernel's fcntl() and
 * flock() on mount A and mount B (two loligo-fuse processes, two MDS
 * sessions), served by the MDS.
 *
 * Processes hold and wait in children (POSIX locks belong to processes):
 * a holder on mount A, a waiter on mount B; each check is asserted within
 * COHERENT_MS of the operation that should release the lock (an unlock, a
 * kill -9 of the holder, an eviction).  A signal interrupts a blocked
 * F_SETLKW/flock with EINTR and leaves no waiter at the MDS.  An MDS
 * killed and restarted while A holds and B waits gets A's lock back from
 * A's reconnect and never grants it to B meanwhile.  An evicted mount
 * fails every operation with EIO, cannot write data (its data-store
 * instance is fenced: shown with a mount the eviction cannot reach, its
 * MDS connection frozen behind a stopped proxy), and stays out until
 * `blocklist rm`; its locks went to the waiter at the eviction.
 *
 * On the local store by default; on RADOS with LOLIGO_E2E_RADOS_CONF
 * (tests/e2e/fuse_suite_rados.sh starts a real Ceph cluster).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"

/*
 * A waiter is woken by the MDS when the lock is freed: no client polls or
 * re-sends (client_request_timeout is 0 here: a waiter nobody woke would
 * wait forever).  The bound only tells "woken" from "never"; generous so
 * that a loaded machine does not fail it.  The latencies themselves are
 * printed (grep "lock wake") and are not asserted.
 */
#define COHERENT_MS 5000

static struct lfs fs;
static bool rados;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *PA(const char *rel)
{
	static __thread char buf[4][PATH_MAX];
	static __thread int i;

	i = (i + 1) % 4;
	return lfs_path(&fs, rel, buf[i], sizeof(buf[i]));
}

static const char *PB(const char *rel)
{
	static __thread char buf[4][2 * PATH_MAX];
	static __thread int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", fs.mnt2, rel);
	return buf[i];
}

static void append_conf(const char *text)
{
	FILE *f = fopen(fs.conf, "a");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int init_fs(void)
{
	if (lfs_init(&fs) != 0)
		return -1;
	rados = lfs_rados();
	append_conf("[mds]\nmds_tick_interval = 0.1\nmds_reconnect_timeout = 10\n"
		    "[client]\nclient_reconnect_backoff_max = 0.2\n");
	return 0;
}

static void setup(void)
{
	int fd;

	if (init_fs() != 0 || lfs_mds_prepare(&fs) != 0 || lfs_mds_start(&fs) != 0 || lfs_mount(&fs, NULL) != 0 ||
	    lfs_mount2(&fs, NULL) != 0) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
	fd = open(PA("f"), O_CREAT | O_RDWR, 0644);
	if (fd < 0 || write(fd, "0123456789", 10) != 10 || close(fd)) {
		lfs_cleanup(&fs);
		exit(1);
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

/* ---- the MDS's view ---------------------------------------------------------- */

static struct json_object *mds_cmd(const char *json)
{
	struct json_object *req = json_tokener_parse(json), *rep = NULL;
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/mds.asok", fs.dir);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(asok_request(p, req, &rep, 20000), 0);
	json_object_put(req);
	ck_assert_ptr_nonnull(rep);
	return rep;
}

static int64_t jint(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

static void mds_locks(int64_t *held, int64_t *waiting)
{
	struct json_object *o = mds_cmd("{\"prefix\":\"locks\"}");

	*held = jint(o, "held");
	*waiting = jint(o, "waiting");
	json_object_put(o);
}

/* until the MDS shows @held locks and @waiting waiters (or 20 s) */
static void wait_mds_locks(int64_t held, int64_t waiting, const char *what)
{
	int64_t h = -1, w = -1;
	double t0 = now_ms();

	while (now_ms() - t0 < 20000) {
		mds_locks(&h, &w);
		if (h == held && w == waiting)
			return;
		usleep(10000);
	}
	ck_abort_msg("%s: the mds shows %lld held and %lld waiting, want %lld and %lld", what, (long long)h,
		     (long long)w, (long long)held, (long long)waiting);
}

/* the MDS session of the loligo-fuse process @pid */
static uint64_t session_of(pid_t pid)
{
	struct json_object *a = mds_cmd("{\"prefix\":\"session ls\"}"), *e, *v;
	char suffix[32];
	uint64_t sid = 0;
	size_t i;

	snprintf(suffix, sizeof(suffix), ".%d", (int)pid);
	for (i = 0; i < json_object_array_length(a); i++) {
		const char *name;

		e = json_object_array_get_idx(a, i);
		if (!json_object_object_get_ex(e, "client_name", &v))
			continue;
		name = json_object_get_string(v);
		if (strlen(name) > strlen(suffix) && !strcmp(name + strlen(name) - strlen(suffix), suffix))
			sid = (uint64_t)jint(e, "id");
	}
	json_object_put(a);
	ck_assert_uint_ne(sid, 0);
	return sid;
}

/* ---- lock holders and waiters: child processes ---------------------------------- */

enum kind { FCNTL, FLOCK };

struct proc {
	pid_t pid;
	int cmd, rep;       /* parent's ends: commands to the child, reports from it */
};

struct report {
	int r;              /* 0 or the errno of the lock call */
	double t_ms;        /* when it returned (CLOCK_MONOTONIC) */
	pid_t pid;
};

static void on_alarm(int sig)
{
	(void)sig;
}

static int do_lock(int fd, enum kind k, short type, bool wait, off_t start, off_t len)
{
	if (k == FLOCK) {
		int op = type == F_RDLCK ? LOCK_SH : type == F_WRLCK ? LOCK_EX : LOCK_UN;

		return flock(fd, op | (wait ? 0 : LOCK_NB)) ? errno : 0;
	}
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	return fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl) ? errno : 0;
}

/*
 * A child that opens @path, locks it (@wait: blocking; @alarm_ms: a
 * SIGALRM without SA_RESTART interrupts it), reports, then obeys commands:
 * 'U' unlock and report, 'C' close the file and report, 'X' exit.
 */
static struct proc locker(const char *path, enum kind k, short type, bool wait, int alarm_ms)
{
	int cp[2], rp[2];
	struct proc p;

	ck_assert_int_eq(pipe(cp), 0);
	ck_assert_int_eq(pipe(rp), 0);
	p.pid = fork();
	ck_assert_int_ge(p.pid, 0);
	if (p.pid == 0) {
		struct report rep = { .pid = getpid() };
		struct sigaction sa = { .sa_handler = on_alarm };
		int fd = open(path, O_RDWR);
		char c;

		close(cp[1]);
		close(rp[0]);
		sigaction(SIGALRM, &sa, NULL);    /* no SA_RESTART: the lock call returns EINTR */
		if (alarm_ms)
			ualarm((useconds_t)alarm_ms * 1000, 0);
		rep.r = fd < 0 ? errno : do_lock(fd, k, type, wait, 0, 0);
		rep.t_ms = now_ms();
		if (write(rp[1], &rep, sizeof(rep)) != sizeof(rep))
			_exit(1);
		while (read(cp[0], &c, 1) == 1) {
			if (c == 'U')
				rep.r = do_lock(fd, k, F_UNLCK, false, 0, 0);
			else if (c == 'C')
				rep.r = close(fd) ? errno : 0;
			else
				_exit(0);
			rep.t_ms = now_ms();
			if (write(rp[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(1);
		}
		_exit(0);
	}
	close(cp[0]);
	close(rp[1]);
	p.cmd = cp[1];
	p.rep = rp[0];
	return p;
}

/* the next report, within @ms (r = -1 on timeout) */
static struct report next_report(struct proc *p, int ms)
{
	struct report rep = { .r = -1 };
	double t0 = now_ms();

	while (now_ms() - t0 < ms) {
		struct timeval tv = { 0, 10000 };
		fd_set s;

		FD_ZERO(&s);
		FD_SET(p->rep, &s);
		if (select(p->rep + 1, &s, NULL, NULL, &tv) > 0) {
			if (read(p->rep, &rep, sizeof(rep)) != sizeof(rep))
				rep.r = -2;
			return rep;
		}
	}
	return rep;
}

static void tell(struct proc *p, char c)
{
	ck_assert_int_eq(write(p->cmd, &c, 1), 1);
}

static void reap(struct proc *p)
{
	if (p->pid <= 0)
		return;
	tell(p, 'X');
	waitpid(p->pid, NULL, 0);
	close(p->cmd);
	close(p->rep);
	p->pid = 0;
}

static void kill9(struct proc *p)
{
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	close(p->cmd);
	close(p->rep);
	p->pid = 0;
}

/* the holder takes its lock at once */
static struct proc hold(const char *path, enum kind k, short type)
{
	struct proc p = locker(path, k, type, false, 0);
	struct report r = next_report(&p, 20000);

	ck_assert_msg(r.r == 0, "the holder's lock on %s: %s", path, r.r > 0 ? strerror(r.r) : "no answer");
	return p;
}

/* a waiter that is still blocked a while after it started */
static struct proc blocked(const char *path, enum kind k, short type)
{
	struct proc p = locker(path, k, type, true, 0);
	struct report r = next_report(&p, 300);

	ck_assert_msg(r.r == -1, "the waiter on %s was not blocked: %s", path, r.r >= 0 ? strerror(r.r) : "?");
	return p;
}

/* @w gets its lock within COHERENT_MS of @t0 */
static void granted_soon(struct proc *w, double t0, const char *what)
{
	struct report r = next_report(w, 20000);

	ck_assert_msg(r.r == 0, "%s: the waiter's lock: %s", what, r.r > 0 ? strerror(r.r) : "never granted");
	fprintf(stderr, "lock wake after %s: %.2f ms\n", what, r.t_ms - t0);
	ck_assert_msg(r.t_ms - t0 <= COHERENT_MS, "%s: granted %.1f ms after it was freed (> %d)", what,
		      r.t_ms - t0, COHERENT_MS);
}

static int try_lock(const char *path, enum kind k, short type)
{
	int fd = open(path, O_RDWR), r;

	ck_assert_int_ge(fd, 0);
	r = do_lock(fd, k, type, false, 0, 0);
	close(fd);
	return r;
}

/* ---- fcntl ---------------------------------------------------------------------- */

START_TEST(test_fcntl_across_mounts)
{
	struct proc a = hold(PA("f"), FCNTL, F_WRLCK), b;
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 3, .l_len = 2 };
	double t0;
	int fd;

	/* B's F_SETLK fails at once, F_GETLK names A's lock and A's pid */
	t0 = now_ms();
	ck_assert_int_eq(try_lock(PB("f"), FCNTL, F_RDLCK), EAGAIN);
	ck_assert_double_le(now_ms() - t0, COHERENT_MS);
	fd = open(PB("f"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fcntl(fd, F_GETLK, &fl), 0);
	ck_assert_int_eq(fl.l_type, F_WRLCK);
	ck_assert_int_eq(fl.l_start, 0);
	ck_assert_int_eq(fl.l_len, 0);
	ck_assert_int_eq(fl.l_pid, a.pid);
	close(fd);
	/* B's F_SETLKW waits, and gets it when A unlocks */
	b = blocked(PB("f"), FCNTL, F_WRLCK);
	t0 = now_ms();
	tell(&a, 'U');
	ck_assert_int_eq(next_report(&a, 20000).r, 0);
	granted_soon(&b, t0, "unlock");
	/* and now A is the one refused */
	ck_assert_int_eq(try_lock(PA("f"), FCNTL, F_RDLCK), EAGAIN);
	reap(&b);
	ck_assert_int_eq(try_lock(PA("f"), FCNTL, F_WRLCK), 0);
	reap(&a);
}
END_TEST

START_TEST(test_fcntl_holder_killed)
{
	struct proc a = hold(PA("f"), FCNTL, F_WRLCK), b = blocked(PB("f"), FCNTL, F_RDLCK);
	double t0 = now_ms();

	kill9(&a);      /* the kernel closes its files: FLUSH with its lock owner */
	granted_soon(&b, t0, "kill -9 of the holder");
	reap(&b);
	wait_mds_locks(0, 0, "after both are gone");
}
END_TEST

START_TEST(test_fcntl_interrupted)
{
	struct proc a = hold(PA("f"), FCNTL, F_WRLCK), b = locker(PB("f"), FCNTL, F_WRLCK, true, 300);
	struct report r = next_report(&b, 20000);

	ck_assert_msg(r.r == EINTR, "F_SETLKW interrupted by SIGALRM: %s", r.r > 0 ? strerror(r.r) : "no answer");
	/* nothing of it is left at the MDS: A's unlock grants nobody */
	wait_mds_locks(1, 0, "after the interrupted wait");
	tell(&a, 'U');
	ck_assert_int_eq(next_report(&a, 20000).r, 0);
	wait_mds_locks(0, 0, "after the unlock");
	reap(&b);
	reap(&a);
}
END_TEST

/* ---- flock ---------------------------------------------------------------------- */

START_TEST(test_flock_across_mounts)
{
	struct proc a = hold(PA("f"), FLOCK, F_WRLCK), b, c;
	double t0;

	ck_assert_int_eq(try_lock(PB("f"), FLOCK, F_RDLCK), EWOULDBLOCK);
	/* fcntl locks are another world */
	ck_assert_int_eq(try_lock(PB("f"), FCNTL, F_WRLCK), 0);
	b = blocked(PB("f"), FLOCK, F_RDLCK);
	t0 = now_ms();
	tell(&a, 'U');
	ck_assert_int_eq(next_report(&a, 20000).r, 0);
	granted_soon(&b, t0, "flock unlock");
	/* shared with a second reader on A; an exclusive one waits, and gets it
	 * when the first is killed and the second closes */
	c = hold(PA("f"), FLOCK, F_RDLCK);
	reap(&a);
	a = blocked(PA("f"), FLOCK, F_WRLCK);
	kill9(&b);
	tell(&c, 'C');
	t0 = now_ms();
	ck_assert_int_eq(next_report(&c, 20000).r, 0);
	granted_soon(&a, t0, "flock holders gone");
	reap(&c);
	/* a blocked flock interrupted by a signal */
	b = locker(PB("f"), FLOCK, F_RDLCK, true, 300);
	ck_assert_int_eq(next_report(&b, 20000).r, EINTR);
	wait_mds_locks(1, 0, "after the interrupted flock");
	reap(&b);
	reap(&a);
}
END_TEST

/* ---- stress: many processes on both mounts, a checker ------------------------------ */

#define ST_PROCS 6
#define ST_ITERS 300
#define ST_SLOTS 4                    /* byte ranges of 100 bytes in file "f" */
#define ST_FLOCK ST_SLOTS             /* "slot" of a flock on file "t" */

struct st_rec {
	int lo, hi;                   /* slots [lo, hi) */
	int wr;
	double t_in, t_out;           /* after the lock call returned, before the unlock */
	int proc;
};

/* a writer marks each slot it holds with a directory only one can create */
static int st_mark(const char *root, int lo, int hi, bool add)
{
	char p[PATH_MAX + 32];

	for (int s = lo; s < hi; s++) {
		snprintf(p, sizeof(p), "%s/cs.%d", root, s);
		if (add ? mkdir(p, 0755) : rmdir(p))
			return errno;
	}
	return 0;
}

static void st_child(int id, const char *root, const char *recfile)
{
	char f[PATH_MAX + 8], t[PATH_MAX + 8];
	unsigned seed = (unsigned)id * 7919u + 17u;
	FILE *out = fopen(recfile, "w");
	int fd, ft, i;

	snprintf(f, sizeof(f), "%s/f", root);
	snprintf(t, sizeof(t), "%s/t", root);
	fd = open(f, O_RDWR);
	ft = open(t, O_RDWR);
	if (!out || fd < 0 || ft < 0)
		_exit(2);
	for (i = 0; i < ST_ITERS; i++) {
		struct st_rec r = { .proc = id };
		bool fl = rand_r(&seed) % 5 == 0;
		int e;

		r.wr = rand_r(&seed) % 3 != 0;
		if (fl) {
			r.lo = ST_FLOCK;
			r.hi = ST_FLOCK + 1;
			e = flock(ft, r.wr ? LOCK_EX : LOCK_SH) ? errno : 0;
		} else {
			r.lo = rand_r(&seed) % ST_SLOTS;
			r.hi = r.lo + 1 + rand_r(&seed) % (ST_SLOTS - r.lo);
			e = do_lock(fd, FCNTL, r.wr ? F_WRLCK : F_RDLCK, true, r.lo * 100, (r.hi - r.lo) * 100);
		}
		if (e) {
			fprintf(stderr, "stress %d: lock: %s\n", id, strerror(e));
			_exit(3);
		}
		r.t_in = now_ms();
		if (r.wr && (e = st_mark(root, r.lo, r.hi, true))) {
			fprintf(stderr, "stress %d: a writer found slot marks of another: %s\n", id, strerror(e));
			_exit(4);
		}
		if (rand_r(&seed) % 2)
			usleep(rand_r(&seed) % 300);
		if (r.wr && (e = st_mark(root, r.lo, r.hi, false))) {
			fprintf(stderr, "stress %d: removing its slot marks: %s\n", id, strerror(e));
			_exit(5);
		}
		r.t_out = now_ms();
		if (fl)
			e = flock(ft, LOCK_UN) ? errno : 0;
		else if (rand_r(&seed) % 4 == 0)
			e = do_lock(fd, FCNTL, F_UNLCK, false, 0, 0);          /* all of it */
		else
			e = do_lock(fd, FCNTL, F_UNLCK, false, r.lo * 100, (r.hi - r.lo) * 100);
		if (e) {
			fprintf(stderr, "stress %d: unlock: %s\n", id, strerror(e));
			_exit(6);
		}
		if (fwrite(&r, sizeof(r), 1, out) != 1)
			_exit(7);
	}
	fclose(out);
	_exit(0);
}

START_TEST(test_stress_two_mounts)
{
	static struct st_rec recs[ST_PROCS * ST_ITERS];
	char recfile[ST_PROCS][PATH_MAX + 32];
	pid_t pid[ST_PROCS];
	size_t n = 0, i, j, conflicts = 0;
	double t0 = now_ms();
	int fd = open(PA("t"), O_CREAT | O_RDWR, 0644);

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (i = 0; i < ST_PROCS; i++) {
		snprintf(recfile[i], sizeof(recfile[i]), "%s/stress.%zu", fs.dir, i);
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0)
			st_child((int)i, i % 2 ? fs.mnt2 : fs.mnt, recfile[i]);
	}
	for (i = 0; i < ST_PROCS; i++) {
		int st;

		ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "stress process %zu (mount %s) failed: status %#x",
			      i, i % 2 ? "B" : "A", st);
	}
	fprintf(stderr, "stress: %d lock/unlock cycles by %d processes on two mounts in %.0f ms\n",
		ST_PROCS * ST_ITERS, ST_PROCS, now_ms() - t0);
	for (i = 0; i < ST_PROCS; i++) {
		FILE *f = fopen(recfile[i], "r");

		ck_assert_ptr_nonnull(f);
		while (n < ST_PROCS * ST_ITERS && fread(&recs[n], sizeof(recs[n]), 1, f) == 1)
			n++;
		fclose(f);
	}
	ck_assert_uint_eq(n, ST_PROCS * ST_ITERS);
	/* the checker: no two holds of overlapping slots, one a writer, at once */
	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			const struct st_rec *a = &recs[i], *b = &recs[j];

			if (a->proc == b->proc || (!a->wr && !b->wr) || a->hi <= b->lo || b->hi <= a->lo)
				continue;
			if (a->t_in < b->t_out && b->t_in < a->t_out) {
				if (conflicts++ < 5)
					fprintf(stderr, "stress: process %d %s [%d,%d) held %.3f-%.3f and process %d %s "
						"[%d,%d) held %.3f-%.3f at once\n", a->proc, a->wr ? "W" : "R", a->lo, a->hi,
						a->t_in, a->t_out, b->proc, b->wr ? "W" : "R", b->lo, b->hi, b->t_in, b->t_out);
			}
		}
	}
	ck_assert_msg(conflicts == 0, "%zu conflicting holds at once", conflicts);
	wait_mds_locks(0, 0, "after the stress");
}
END_TEST

/* ---- an MDS restart -------------------------------------------------------------- */

START_TEST(test_mds_restart_keeps_locks)
{
	struct proc a = hold(PA("f"), FCNTL, F_WRLCK), b = blocked(PB("f"), FCNTL, F_WRLCK);
	struct report r;
	double t0;

	wait_mds_locks(1, 1, "before the crash");
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	/* both clients reconnect: A re-asserts its lock, B's wait is sent
	 * again; B must not get what the restarted MDS forgot */
	wait_mds_locks(1, 1, "after the restart");
	r = next_report(&b, 500);
	ck_assert_msg(r.r == -1, "B got the lock A holds across the restart (%d)", r.r);
	ck_assert_int_eq(try_lock(PB("f"), FCNTL, F_RDLCK), EAGAIN);
	t0 = now_ms();
	tell(&a, 'U');
	ck_assert_int_eq(next_report(&a, 20000).r, 0);
	granted_soon(&b, t0, "unlock after the restart");
	reap(&b);
	reap(&a);
}
END_TEST

/* ---- eviction ----------------------------------------------------------------------- */

static void evict(uint64_t sid)
{
	struct json_object *o;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"client evict\",\"id\":%llu}", (unsigned long long)sid);
	o = mds_cmd(cmd);
	ck_assert_int_eq(jint(o, "evicted"), (int64_t)sid);
	json_object_put(o);
}

static bool log_has(const char *file, const char *needle)
{
	char p[PATH_MAX + 32], line[4096];
	bool found = false;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", fs.dir, file);
	f = fopen(p, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* the blocklist entity of session @sid (its uuid) */
static void blocklisted_entity(uint64_t sid, char *out, size_t len)
{
	struct json_object *a = mds_cmd("{\"prefix\":\"blocklist ls\"}"), *e, *v;
	size_t i;

	*out = '\0';
	for (i = 0; i < json_object_array_length(a); i++) {
		e = json_object_array_get_idx(a, i);
		if (jint(e, "session") == (int64_t)sid && json_object_object_get_ex(e, "entity", &v))
			snprintf(out, len, "%s", json_object_get_string(v));
	}
	json_object_put(a);
	ck_assert_msg(*out, "session %llu is not on the blocklist", (unsigned long long)sid);
}

START_TEST(test_evicted_mount_is_fenced_and_stays_out)
{
	struct proc a = hold(PA("f"), FCNTL, F_WRLCK), b = blocked(PB("f"), FCNTL, F_WRLCK);
	uint64_t sid = session_of(fs.fuse_pid);
	char entity[128], cmd[256];
	struct stat st;
	double t0;
	int fd = open(PA("f"), O_RDWR);

	ck_assert_int_ge(fd, 0);
	t0 = now_ms();
	evict(sid);
	/* its lock went to B at the eviction */
	granted_soon(&b, t0, "eviction of the holder's client");
	/* A's mount: EIO for everything, and it says why in its log */
	for (int i = 0; i < 200 && write(fd, "x", 1) == 1; i++)
		usleep(10000);
	errno = 0;
	ck_assert_int_eq(write(fd, "x", 1), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(fsync(fd), -1);
	ck_assert_int_eq(open(PA("g"), O_CREAT | O_RDWR, 0644), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(stat(PA("nope"), &st), -1);
	ck_assert(log_has("client.log", "evicted this client"));
	close(fd);
	kill9(&a);
	/* it stays out: no new session */
	usleep(500000);
	ck_assert_int_eq(open(PA("g"), O_CREAT | O_RDWR, 0644), -1);
	/* the blocklist holds it until removed; a fresh mount is a new client */
	blocklisted_entity(sid, entity, sizeof(entity));
	lfs_umount(&fs);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	fd = open(PA("g"), O_CREAT | O_RDWR, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"blocklist rm\",\"entity\":\"%s\"}", entity);
	json_object_put(mds_cmd(cmd));
	reap(&b);
}
END_TEST

/* client_reconnect_stale: the evicted mount comes back by itself once the
 * operator lifts the blocklist entry, as a new client (its locks lost). */
START_TEST(test_reconnect_stale_comes_back_after_blocklist_rm)
{
	uint64_t sid;
	char entity[128], cmd[256];
	double t0;
	int fd;

	lfs_umount(&fs);
	ck_assert_int_eq(lfs_mount(&fs, "client_reconnect_stale=true"), 0);
	sid = session_of(fs.fuse_pid);
	evict(sid);
	blocklisted_entity(sid, entity, sizeof(entity));
	t0 = now_ms();
	while (now_ms() - t0 < 5000 && (fd = open(PA("f"), O_RDONLY)) >= 0) {
		close(fd);
		usleep(10000);
	}
	ck_assert_int_eq(open(PA("f"), O_RDONLY), -1);
	usleep(600000);         /* it keeps trying, and is refused */
	ck_assert_int_eq(open(PA("f"), O_RDONLY), -1);
	ck_assert(log_has("mds.log", "blocklisted"));
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"blocklist rm\",\"entity\":\"%s\"}", entity);
	json_object_put(mds_cmd(cmd));
	t0 = now_ms();
	fd = -1;
	while (now_ms() - t0 < 10000 && (fd = open(PA("f"), O_RDONLY)) < 0)
		usleep(20000);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_ne(session_of(fs.fuse_pid), sid);
}
END_TEST

/*
 * The data fence: a client that does not hear of its eviction (its MDS
 * connection frozen behind a stopped proxy) still writes to the data
 * store directly; those writes must fail, and nobody else may see them.
 */
START_TEST(test_evicted_client_cannot_write_data)
{
	char proxy[PATH_MAX], portfile[PATH_MAX + 16], target[16], addr[64], buf[16];
	const char *opt[2];
	pid_t px;
	uint64_t sid;
	int fd, pport = 0, i;
	FILE *f;

	/* mount A again, talking to the MDS through a proxy */
	lfs_umount(&fs);
	snprintf(portfile, sizeof(portfile), "%s/proxy.port", fs.dir);
	snprintf(target, sizeof(target), "%d", fs.mds_port);
	px = fork();
	ck_assert_int_ge(px, 0);
	if (px == 0) {
		execl(lfs_bin("tools/proxy/latency_proxy", proxy, sizeof(proxy)), "latency_proxy", "--target", target,
		      "--delay-ms", "0", "--listen", "0", "--port-file", portfile, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 1000 && !pport; i++) {
		if ((f = fopen(portfile, "r"))) {
			if (fscanf(f, "%d", &pport) != 1)
				pport = 0;
			fclose(f);
		}
		usleep(10000);
	}
	ck_assert_int_gt(pport, 0);
	snprintf(addr, sizeof(addr), "--client_mds_addr=127.0.0.1:%d", pport);
	opt[0] = addr;
	opt[1] = NULL;
	fs.fuse_args[0] = opt[0];
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	fs.fuse_args[0] = NULL;
	sid = session_of(fs.fuse_pid);
	fd = open(PA("f"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "AAAA", 4, 0), 4);
	ck_assert_int_eq(fsync(fd), 0);

	/* freeze its MDS connection, evict it: it cannot know */
	kill(px, SIGSTOP);
	evict(sid);
	ck_assert_int_eq(pwrite(fd, "BBBB", 4, 0), 4);  /* buffered: it still believes */
	ck_assert_int_eq(fsync(fd), -1);                 /* the data store refuses it */
	/* B never sees it */
	{
		int fb = open(PB("f"), O_RDONLY);

		ck_assert_int_ge(fb, 0);
		ck_assert_int_eq(pread(fb, buf, 4, 0), 4);
		ck_assert_int_eq(memcmp(buf, "AAAA", 4), 0);
		close(fb);
	}
	kill(px, SIGCONT);
	close(fd);
	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
}
END_TEST

static Suite *suite(void)
{
	const struct {
		const char *name;
		const TTest *fn;
	} tests[] = {
		{ "fcntl", test_fcntl_across_mounts },
		{ "fcntl_killed", test_fcntl_holder_killed },
		{ "fcntl_interrupted", test_fcntl_interrupted },
		{ "flock", test_flock_across_mounts },
		{ "stress", test_stress_two_mounts },
		{ "mds_restart", test_mds_restart_keeps_locks },
		{ "evicted", test_evicted_mount_is_fenced_and_stays_out },
		{ "reconnect_stale", test_reconnect_stale_comes_back_after_blocklist_rm },
		{ "fence", test_evicted_client_cannot_write_data },
	};
	Suite *s = suite_create("fuse_locks");
	size_t i;

	/* one case per test: a fresh filesystem from a fixture in the check
	 * parent, whose teardown cleans up even when the test crashed */
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_add_unchecked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, tests[i].fn);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", W_OK) != 0) {
		fprintf(stderr, "SKIP: needs root and /dev/fuse\n");
		return 77;
	}
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
