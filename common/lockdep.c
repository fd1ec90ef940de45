/*
 * lockdep.c - the lock-order checker of lockdep.h.
 *
 * Data:
 *   classes[]   every class seen; a lock's class pointer lives in the lock
 *               (glibc padding, see class_slot_*), a pseudo-lock's in its key
 *   order       a bitmap "A was held while B was taken", read without a lock
 *               on every acquisition (the common case: an order already
 *               known), plus per class the list of its successors with where
 *               the order was first seen, for the search and the report
 *   held[]      per thread: the locks it holds, with where it took them
 *
 * A new order A -> B takes graph_lock (a plain pthread mutex, unchecked),
 * searches B's successors depth first for A and, finding none, records it.
 * New orders stop appearing once the code's paths have run, so the lock
 * is rarely taken.  Everything here uses the real pthread functions
 * (the wrapping macros are undefined below) and never logs through log.c, whose locks are checked.
 */
#include "common/lockdep.h"

/* the real functions here (the header may have been forced in before this file's first line) */
#undef pthread_mutex_init
#undef pthread_mutex_lock
#undef pthread_mutex_trylock
#undef pthread_mutex_unlock
#undef pthread_rwlock_init
#undef pthread_rwlock_rdlock
#undef pthread_rwlock_wrlock
#undef pthread_rwlock_tryrdlock
#undef pthread_rwlock_trywrlock
#undef pthread_rwlock_unlock
#undef pthread_cond_wait
#undef pthread_cond_timedwait

#ifdef LOLIGO_LOCKDEP

#include <errno.h>
#include <execinfo.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(__GLIBC__) || !defined(__x86_64__)
#error "LOLIGO_LOCKDEP keeps a lock's class in glibc's x86_64 padding: build with -DLOLIGO_LOCKDEP=OFF here"
#endif

#define MAX_CLASSES 2048
#define MAX_HELD 48
#define BT_DEPTH 24

struct ld_succ {
	struct ld_class *to;
	const char *from_file, *to_file;   /* where A was taken, where B was taken */
	int from_line, to_line;
	char *held;                        /* the thread's held locks then (text) */
	void *bt[BT_DEPTH];
	int nbt;
};

struct ld_class {
	uint32_t id;
	const char *name;        /* the lock expression at the init site, or the key's name */
	const char *file;        /* init site, or first lock site for a lock that had none */
	int line;
	struct ld_succ *succ;    /* graph_lock */
	uint32_t nsucc, capsucc;
	uint32_t visit;          /* graph_lock: search generation */
	const char *may_wait;    /* why it may be held across a long wait (lockdep_mutex_may_wait) */
};

struct ld_held {
	const void *lock;
	struct ld_class *cls;
	const char *file;
	int line;
	bool pseudo;             /* a flag-and-condvar lock (lockdep_acquired) */
	bool read;
};

static struct ld_class classes[MAX_CLASSES];
static _Atomic uint32_t nclasses;
static _Atomic uint64_t order[MAX_CLASSES][MAX_CLASSES / 64];
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t visit_gen;
static _Atomic uint64_t nreports;
static bool full_warned;

enum { MODE_ABORT, MODE_WARN, MODE_OFF };
static int mode = MODE_ABORT;

static __thread struct ld_held held[MAX_HELD];
static __thread int nheld;
static __thread bool overflow_warned;
static __thread int reporting;   /* a report in progress: nothing is checked */

__attribute__((constructor)) static void lockdep_setup(void)
{
	const char *e = getenv("LOLIGO_LOCKDEP");

	if (!e)
		return;
	if (!strcmp(e, "off") || !strcmp(e, "0"))
		mode = MODE_OFF;
	else if (!strcmp(e, "warn"))
		mode = MODE_WARN;
}

/* ---- output (straight to fd 2: the daemons' stderr is their log's neighbour) ---- */

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	for (ssize_t w, off = 0; off < n; off += w)
		if ((w = write(2, buf + off, (size_t)(n - off))) <= 0)
			break;
}

static void describe_held(char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < nheld && o + 1 < len; i++) {
		int n = snprintf(buf + o, len - o, "    #%d %s%s (class of %s:%d) taken at %s:%d\n", i,
				 held[i].cls->name, held[i].read ? " (read)" : "", held[i].cls->file, held[i].cls->line,
				 held[i].file, held[i].line);
		if (n < 0)
			break;
		o += (size_t)n;
	}
	if (o >= len && len > 4)
		strcpy(buf + len - 5, "...\n");
}

void lockdep_held_describe(char *buf, size_t len)
{
	if (len)
		describe_held(buf, len);
}

uint64_t lockdep_reports(void)
{
	return atomic_load(&nreports);
}

static void report_begin(const char *what)
{
	char name[32] = "?";

	reporting++;
	atomic_fetch_add(&nreports, 1);
	pthread_getname_np(pthread_self(), name, sizeof(name));
	out("\n======================================================\n"
	    "lockdep: %s\n"
	    "thread %ld (%s), pid %d\n", what, (long)syscall(SYS_gettid), name, (int)getpid());
}

static void report_end(void)
{
	char buf[MAX_HELD * 160];
	void *bt[BT_DEPTH];
	int n;

	describe_held(buf, sizeof(buf));
	out("this thread holds:\n%s", nheld ? buf : "    (nothing)\n");
	out("its call stack:\n");
	n = backtrace(bt, BT_DEPTH);
	backtrace_symbols_fd(bt, n, 2);
	out("======================================================\n");
	reporting--;
	if (mode == MODE_ABORT)
		abort();
}

/* ---- classes ---- */

/* graph_lock held: a new class (NULL when the table is full) */
static struct ld_class *class_new_locked(const char *name, const char *file, int line)
{
	uint32_t id = atomic_load(&nclasses);

	if (id == MAX_CLASSES) {
		if (!full_warned)
			out("lockdep: more than %d lock classes: the ones after are not checked\n", MAX_CLASSES);
		full_warned = true;
		return NULL;
	}
	struct ld_class *c = &classes[id];
	c->id = id;
	c->name = name;
	c->file = file;
	c->line = line;
	atomic_store(&nclasses, id + 1);
	return c;
}

static bool class_valid(const void *p)
{
	const struct ld_class *c = p;

	return c >= classes && c < classes + MAX_CLASSES && ((const char *)c - (const char *)classes) % sizeof(*c) == 0 &&
	       c->id < atomic_load(&nclasses) && c == &classes[c->id];
}

/* The class kept in a mutex: __list is used by robust mutexes only, which loligo never makes. */
static _Atomic(void *) *mutex_slot(pthread_mutex_t *m)
{
	return (_Atomic(void *) *)(void *)&m->__data.__list.__prev;
}

/* ... and in an rwlock: __pad2 is padding in glibc's x86_64 layout. */
static _Atomic(void *) *rwlock_slot(pthread_rwlock_t *l)
{
	_Static_assert(sizeof(l->__data.__pad2) == sizeof(void *), "rwlock padding");
	return (_Atomic(void *) *)(void *)&l->__data.__pad2;
}

/*
 * Classes are found by where a lock was initialised: one per init site, as
 * the kernel's static lock_class_key per mutex_init() call.  A site is
 * known by its file and line (a per-site static would need the init macro
 * to expand to a statement expression; a small table does as well).
 */
struct site_ent {
	const char *file, *name;
	int line;
	struct ld_class *cls;
};
#define SITES 4096
static struct site_ent sites[SITES];

static uint32_t site_hash(const char *file, int line)
{
	uint32_t h = 2166136261u;

	for (const char *p = file; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return (h ^ (uint32_t)line) * 2654435761u;
}

/* The class of init site (@file, @line) of a lock named @name. */
static struct ld_class *class_for_site(const char *name, const char *file, int line)
{
	uint32_t h = site_hash(file, line);
	struct ld_class *c = NULL;

	pthread_mutex_lock(&graph_lock);
	for (uint32_t i = 0; i < SITES; i++) {
		struct site_ent *s = &sites[(h + i) % SITES];

		if (!s->file) {
			s->file = file;
			s->line = line;
			s->name = name;
			s->cls = c = class_new_locked(name, file, line);
			break;
		}
		if (s->line == line && (s->file == file || !strcmp(s->file, file)) &&
		    (s->name == name || !strcmp(s->name, name))) {
			c = s->cls;
			break;
		}
	}
	pthread_mutex_unlock(&graph_lock);
	return c;
}

/* the class in @slot, or one made now for a lock that was not initialised through us (a static initialiser) */
static struct ld_class *class_of(_Atomic(void *) *slot, const char *file, int line)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);

	if (p && class_valid(p))
		return p;
	/* the first site that takes it names it: zeroed locks of one kind are
	 * taken at one place */
	struct ld_class *c = class_for_site("(lock without init)", file, line);
	void *expect = p;

	if (c && !atomic_compare_exchange_strong(slot, &expect, c) && expect && class_valid(expect))
		return expect;
	return c;
}

static struct ld_class *key_class(struct lockdep_class_key *k, const char *file, int line)
{
	struct ld_class *c = __atomic_load_n(&k->cls, __ATOMIC_ACQUIRE);

	if (c)
		return c;
	pthread_mutex_lock(&graph_lock);
	c = k->cls;
	if (!c) {
		c = class_new_locked(k->name, file, line);
		__atomic_store_n(&k->cls, c, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&graph_lock);
	return c;
}

/* ---- the order graph ---- */

static bool order_known(const struct ld_class *a, const struct ld_class *b)
{
	return atomic_load_explicit(&order[a->id][b->id / 64], memory_order_relaxed) & (1ull << (b->id % 64));
}

/* graph_lock held: a path from @from to @to; *@path gets its edges (up to @max), *@n their number */
static bool reaches_locked(struct ld_class *from, struct ld_class *to, struct ld_succ **path, int max, int *n,
			   int depth)
{
	if (from == to)
		return true;
	if (from->visit == visit_gen)
		return false;
	from->visit = visit_gen;
	for (uint32_t i = 0; i < from->nsucc; i++) {
		if (reaches_locked(from->succ[i].to, to, path, max, n, depth + 1)) {
			if (depth < max)
				path[depth] = &from->succ[i];
			if (depth + 1 > *n)
				*n = depth + 1;
			return true;
		}
	}
	return false;
}

static void report_inversion(struct ld_class *a, const struct ld_held *ha, struct ld_class *b, const char *file,
			     int line, struct ld_succ **path, int npath)
{
	report_begin("possible circular locking dependency (ABBA deadlock)");
	out("it takes  %s (class of %s:%d) at %s:%d\n"
	    "holding   %s (class of %s:%d), taken at %s:%d\n"
	    "but the opposite order has run before:\n",
	    b->name, b->file, b->line, file, line, a->name, a->file, a->line, ha->file, ha->line);
	for (int i = 0; i < npath && i < 8; i++) {
		struct ld_succ *s = path[i];

		out("  [%d] %s (taken at %s:%d) was held while taking %s at %s:%d; that thread held:\n%s", i,
		    i == 0 ? b->name : path[i - 1]->to->name, s->from_file, s->from_line, s->to->name, s->to_file,
		    s->to_line, s->held ? s->held : "    ?\n");
		out("      its call stack then:\n");
		backtrace_symbols_fd(s->bt, s->nbt, 2);
	}
	report_end();
}

/* A new order @a -> @b (a held, taken at @ha; b taken at @file:@line): record it, or report the cycle it closes. */
static void order_add(struct ld_class *a, const struct ld_held *ha, struct ld_class *b, const char *file, int line)
{
	struct ld_succ *path[8];
	int npath = 0;

	pthread_mutex_lock(&graph_lock);
	if (order_known(a, b)) {
		pthread_mutex_unlock(&graph_lock);
		return;
	}
	visit_gen++;
	if (reaches_locked(b, a, path, 8, &npath, 0)) {
		/* copy what the report needs; the graph only grows */
		pthread_mutex_unlock(&graph_lock);
		report_inversion(a, ha, b, file, line, path, npath < 8 ? npath : 8);
		return;
	}
	if (a->nsucc == a->capsucc) {
		uint32_t ncap = a->capsucc ? a->capsucc * 2 : 8;
		struct ld_succ *n = realloc(a->succ, ncap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&graph_lock);
			return;
		}
		a->succ = n;
		a->capsucc = ncap;
	}
	struct ld_succ *s = &a->succ[a->nsucc];
	char hb[MAX_HELD * 160];

	memset(s, 0, sizeof(*s));
	s->to = b;
	s->from_file = ha->file;
	s->from_line = ha->line;
	s->to_file = file;
	s->to_line = line;
	describe_held(hb, sizeof(hb));
	s->held = strdup(hb);
	s->nbt = backtrace(s->bt, BT_DEPTH);
	a->nsucc++;
	atomic_fetch_or_explicit(&order[a->id][b->id / 64], 1ull << (b->id % 64), memory_order_relaxed);
	pthread_mutex_unlock(&graph_lock);
}

/* before blocking for @lock of class @c: every lock held must come before it */
static void check_acquire(const void *lock, struct ld_class *c, bool read, const char *file, int line)
{
	if (!c || reporting || mode == MODE_OFF)
		return;
	for (int i = 0; i < nheld; i++) {
		struct ld_held *h = &held[i];

		if (h->cls == c) {
			if (h->lock == lock && h->read && read)
				continue;    /* a second read lock of one rwlock: glibc prefers readers */
			report_begin(h->lock == lock ? "a thread waits for a lock it holds itself (self-deadlock)"
						     : "a thread waits for a second lock of a class it holds (two of a kind "
						       "taken in no fixed order deadlock: ABBA)");
			out("it waits for %s %p (class of %s:%d) at %s:%d\n"
			    "holding      %s %p, taken at %s:%d\n",
			    c->name, lock, c->file, c->line, file, line, h->cls->name, h->lock, h->file, h->line);
			report_end();
			continue;
		}
		if (!order_known(h->cls, c))
			order_add(h->cls, h, c, file, line);
	}
}

static void push(const void *lock, struct ld_class *c, bool pseudo, bool read, const char *file, int line)
{
	if (!c || mode == MODE_OFF)
		return;
	if (nheld == MAX_HELD) {
		if (!overflow_warned)
			out("lockdep: a thread holds more than %d locks; the others are not tracked\n", MAX_HELD);
		overflow_warned = true;
		return;
	}
	held[nheld++] = (struct ld_held){ .lock = lock, .cls = c, .file = file, .line = line, .pseudo = pseudo,
					  .read = read };
}

/* the entry of @lock removed (the most recent one); its copy in *@was if asked */
static bool pop(const void *lock, struct ld_held *was)
{
	for (int i = nheld - 1; i >= 0; i--) {
		if (held[i].lock != lock)
			continue;
		if (was)
			*was = held[i];
		memmove(&held[i], &held[i + 1], (size_t)(nheld - i - 1) * sizeof(held[0]));
		nheld--;
		return true;
	}
	return false;
}

/*
 * LOLIGO_LOCKDEP_DUMP=DIR: at exit, every order this process saw goes to
 * DIR/lockdep.PID ("A -> B\tfile:line -> file:line" per line), which
 * tools/lockdep-graph.sh merges into the graph docs/LOCKING.md is checked
 * against.
 */
__attribute__((destructor)) static void lockdep_dump(void)
{
	const char *dir = getenv("LOLIGO_LOCKDEP_DUMP");
	char path[4096];
	FILE *f;

	if (!dir || !*dir || mode == MODE_OFF)
		return;
	snprintf(path, sizeof(path), "%s/lockdep.%d", dir, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	pthread_mutex_lock(&graph_lock);
	for (uint32_t i = 0; i < atomic_load(&nclasses); i++) {
		struct ld_class *a = &classes[i];

		for (uint32_t k = 0; k < a->nsucc; k++) {
			struct ld_succ *e = &a->succ[k];

			fprintf(f, "%s (%s:%d) -> %s (%s:%d)\t%s:%d -> %s:%d\n", a->name, a->file, a->line, e->to->name,
				e->to->file, e->to->line, e->from_file, e->from_line, e->to_file, e->to_line);
		}
	}
	pthread_mutex_unlock(&graph_lock);
	fclose(f);
}

/* ---- mutexes ---- */

int lockdep_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a, const char *name, const char *file,
		       int line)
{
	int r = pthread_mutex_init(m, a);

	if (r == 0)
		atomic_store_explicit(mutex_slot(m), mode == MODE_OFF ? NULL : class_for_site(name, file, line),
				      memory_order_release);
	return r;
}

int lockdep_mutex_lock(pthread_mutex_t *m, const char *file, int line)
{
	struct ld_class *c = mode == MODE_OFF ? NULL : class_of(mutex_slot(m), file, line);
	int r;

	check_acquire(m, c, false, file, line);
	r = pthread_mutex_lock(m);
	if (r == 0)
		push(m, c, false, false, file, line);
	return r;
}

int lockdep_mutex_trylock(pthread_mutex_t *m, const char *file, int line)
{
	int r = pthread_mutex_trylock(m);

	if (r == 0 && mode != MODE_OFF)
		push(m, class_of(mutex_slot(m), file, line), false, false, file, line);
	return r;
}

int lockdep_mutex_unlock(pthread_mutex_t *m)
{
	if (mode != MODE_OFF)
		pop(m, NULL);
	return pthread_mutex_unlock(m);
}

int lockdep_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m, const char *file, int line)
{
	struct ld_held was;
	bool had = mode != MODE_OFF && pop(m, &was);
	int r = pthread_cond_wait(cv, m);

	if (had)
		push(m, was.cls, false, false, was.file, was.line);
	return r;
}

int lockdep_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *ts, const char *file,
			   int line)
{
	struct ld_held was;
	bool had = mode != MODE_OFF && pop(m, &was);
	int r = pthread_cond_timedwait(cv, m, ts);

	if (had)
		push(m, was.cls, false, false, was.file, was.line);
	return r;
}

/* ---- rwlocks ---- */

int lockdep_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a, const char *name, const char *file,
			int line)
{
	int r = pthread_rwlock_init(l, a);

	if (r == 0)
		atomic_store_explicit(rwlock_slot(l), mode == MODE_OFF ? NULL : class_for_site(name, file, line),
				      memory_order_release);
	return r;
}

static int rw_lock(pthread_rwlock_t *l, bool read, bool try, const char *file, int line)
{
	struct ld_class *c = mode == MODE_OFF ? NULL : class_of(rwlock_slot(l), file, line);
	int r;

	if (!try)
		check_acquire(l, c, read, file, line);
	if (try)
		r = read ? pthread_rwlock_tryrdlock(l) : pthread_rwlock_trywrlock(l);
	else
		r = read ? pthread_rwlock_rdlock(l) : pthread_rwlock_wrlock(l);
	if (r == 0)
		push(l, c, false, read, file, line);
	return r;
}

int lockdep_rwlock_rdlock(pthread_rwlock_t *l, const char *file, int line)
{
	return rw_lock(l, true, false, file, line);
}

int lockdep_rwlock_wrlock(pthread_rwlock_t *l, const char *file, int line)
{
	return rw_lock(l, false, false, file, line);
}

int lockdep_rwlock_tryrdlock(pthread_rwlock_t *l, const char *file, int line)
{
	return rw_lock(l, true, true, file, line);
}

int lockdep_rwlock_trywrlock(pthread_rwlock_t *l, const char *file, int line)
{
	return rw_lock(l, false, true, file, line);
}

int lockdep_rwlock_unlock(pthread_rwlock_t *l)
{
	if (mode != MODE_OFF)
		pop(l, NULL);
	return pthread_rwlock_unlock(l);
}

/* ---- pseudo-locks and assertions ---- */

void lockdep_wait_at(struct lockdep_class_key *k, const void *obj, const char *file, int line)
{
	if (mode != MODE_OFF)
		check_acquire(obj, key_class(k, file, line), false, file, line);
}

void lockdep_wait_cond_at(struct lockdep_class_key *k, const void *obj, const void *mutex, const char *file, int line)
{
	struct ld_held was;
	bool had;

	if (mode == MODE_OFF)
		return;
	had = pop(mutex, &was);
	check_acquire(obj, key_class(k, file, line), false, file, line);
	if (had)
		push(mutex, was.cls, false, false, was.file, was.line);
}

void lockdep_acquired_at(struct lockdep_class_key *k, const void *obj, bool try, const char *file, int line)
{
	if (mode == MODE_OFF)
		return;
	struct ld_class *c = key_class(k, file, line);

	if (!try)
		check_acquire(obj, c, false, file, line);
	push(obj, c, true, false, file, line);
}

void lockdep_released(const void *obj)
{
	if (mode != MODE_OFF)
		pop(obj, NULL);
}

void lockdep_mutex_may_wait(pthread_mutex_t *m, const char *why)
{
	struct ld_class *c = mode == MODE_OFF ? NULL : class_of(mutex_slot(m), "(may_wait)", 0);

	if (c)
		c->may_wait = why;
}

bool lockdep_holds(const void *obj)
{
	if (mode == MODE_OFF)
		return true;
	for (int i = 0; i < nheld; i++)
		if (held[i].lock == obj)
			return true;
	return false;
}

int lockdep_nheld_class(struct lockdep_class_key *k)
{
	int n = 0;

	for (int i = 0; i < nheld; i++)
		if (k->cls && held[i].cls == k->cls)
			n++;
	return n;
}

void lockdep_assert_held_at(const void *lock, const char *what, const char *file, int line)
{
	if (mode == MODE_OFF || reporting || lockdep_holds(lock) || nheld == MAX_HELD)
		return;
	report_begin("a lock that must be held is not");
	out("%s:%d needs %s (%p) held\n", file, line, what, lock);
	report_end();
}

void lockdep_might_wait_at(const char *what, const char *file, int line)
{
	if (mode == MODE_OFF || reporting)
		return;
	for (int i = 0; i < nheld; i++) {
		if (held[i].pseudo || held[i].cls->may_wait)
			continue;
		report_begin("a lock is held across a long wait");
		out("%s:%d may wait for %s while this thread holds %s (class of %s:%d, taken at %s:%d)\n", file, line,
		    what, held[i].cls->name, held[i].cls->file, held[i].cls->line, held[i].file, held[i].line);
		report_end();
		return;
	}
}

#endif /* LOLIGO_LOCKDEP */
