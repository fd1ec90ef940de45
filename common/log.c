/*
 * log.c - ceph-style logging with per-subsystem levels.
 *
 * Every subsystem has an atomic level (log_levels[]) that dout() checks with
 * one relaxed load before doing any formatting, so disabled debug output on
 * a hot path costs a load and a branch.  Levels follow the config options
 * debug_<subsys>: log_cfg_attach() (called by cfg_init()) registers
 * observers so that a value from the INI file, the command line or a
 * runtime `config set debug_mds 20` takes effect at once.  The log_file
 * option is followed the same way.
 *
 * A level is Ceph's "N/M": lines up to N are written, lines up to M are
 * kept in a ring of the last log_max_recent lines in memory (log_levels[]
 * is the higher of the two, so dout() still costs one load).  The ring is
 * lock-free: a writer claims a slot with one fetch-add and publishes it
 * with its sequence number, so the crash handler (a signal handler: no
 * locks, no malloc) can read it; `log dump` and a crash write it to the log.
 *
 * A line is formatted into one buffer and written with a single write(2) so
 * lines from different threads never interleave.  The output fd is swapped
 * by log_set_file() and log_reopen() under a rwlock that writers take
 * shared, so a writer never writes to a closed (or worse, reused)
 * descriptor.  log_reopen() is what SIGHUP and `log reopen` do for
 * logrotate: the file is opened again by name and the old one closed.
 */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/io.h"

_Atomic int log_levels[LOG_SS_MAX] = {
#define X(e, n, d) [LOG_SS_##e] = d,
	LOG_SUBSYSTEMS(X)
#undef X
};

static const char *const ss_names[LOG_SS_MAX] = {
#define X(e, n, d) [LOG_SS_##e] = #n,
	LOG_SUBSYSTEMS(X)
#undef X
};

static const int ss_defaults[LOG_SS_MAX] = {
#define X(e, n, d) [LOG_SS_##e] = d,
	LOG_SUBSYSTEMS(X)
#undef X
};

/* the config option that drives each subsystem's level */
static const int ss_opts[LOG_SS_MAX] = {
#define X(e, n, d) [LOG_SS_##e] = CFG_debug_##n,
	LOG_SUBSYSTEMS(X)
#undef X
};

/* what is written, and what is kept in memory (log_levels[] is the max) */
static _Atomic int file_levels[LOG_SS_MAX] = {
#define X(e, n, d) [LOG_SS_##e] = d,
	LOG_SUBSYSTEMS(X)
#undef X
};
static _Atomic int mem_levels[LOG_SS_MAX] = {
#define X(e, n, d) [LOG_SS_##e] = d,
	LOG_SUBSYSTEMS(X)
#undef X
};

static char progname[64] = "loligo";
static pthread_rwlock_t out_lock = PTHREAD_RWLOCK_INITIALIZER;
/* written under out_lock (wr); read under it (rd), or bare by the crash handler */
static _Atomic int out_fd = STDERR_FILENO;
static char out_path[4096];	/* protected by out_lock; "" for stderr */

/* ---- the ring of recent lines ------------------------------------- */

#define RING_LINE 512

struct ring_slot {
	_Atomic uint64_t seq;	/* index + 1 once written; 0 while being written */
	uint32_t len;
	char text[RING_LINE];
};

static struct ring_slot *ring;	/* set once (ring_once), then read-only */
static size_t ring_n;
static _Atomic uint64_t ring_head;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void ring_alloc(void)
{
	uint64_t n = cfg_uint(CFG_log_max_recent), cap = cfg_uint(CFG_log_max_recent_bytes);

	if (n > 1000000)
		n = 1000000;
	/* every slot gets touched once the ring has wrapped: it costs its
	 * whole size (10,000 lines were 5.3 MB), which a daemon bounded in
	 * bytes (the MDS's memory limit) counts */
	if (cap && n > cap / sizeof(*ring))
		n = cap / sizeof(*ring);
	if (!n)
		return;
	/* calloc of a large block maps zero pages: only used slots cost memory */
	ring = calloc(n, sizeof(*ring));
	if (ring)
		ring_n = n;
}

static void ring_push(const char *buf, size_t len)
{
	struct ring_slot *sl;
	uint64_t idx;

	pthread_once(&ring_once, ring_alloc);
	if (!ring_n)
		return;
	idx = atomic_fetch_add_explicit(&ring_head, 1, memory_order_relaxed);
	sl = &ring[idx % ring_n];
	atomic_store_explicit(&sl->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	if (len > RING_LINE)
		len = RING_LINE;
	memcpy(sl->text, buf, len);
	sl->len = (uint32_t)len;
	atomic_store_explicit(&sl->seq, idx + 1, memory_order_release);
}

size_t log_recent_bytes(void)
{
	uint64_t n = cfg_uint(CFG_log_max_recent), cap = cfg_uint(CFG_log_max_recent_bytes);

	/* what ring_alloc takes (or will take: it runs at the first line) */
	if (n > 1000000)
		n = 1000000;
	if (cap && n > cap / sizeof(struct ring_slot))
		n = cap / sizeof(struct ring_slot);
	return n * sizeof(struct ring_slot);
}

/*
 * Write the ring, oldest first, to @fd.  Async-signal-safe: no locks, no
 * allocation; a slot overwritten while we copy it is skipped.
 */
static unsigned ring_dump_fd(int fd)
{
	uint64_t head = atomic_load_explicit(&ring_head, memory_order_acquire), i;
	char line[RING_LINE + 1];
	unsigned n = 0;

	if (!ring_n)
		return 0;
	for (i = head > ring_n ? head - ring_n : 0; i < head; i++) {
		struct ring_slot *sl = &ring[i % ring_n];
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
		uint32_t len;

		if (seq != i + 1)
			continue;
		len = sl->len;
		if (len > RING_LINE)
			continue;
		memcpy(line, sl->text, len);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&sl->seq, memory_order_relaxed) != seq)
			continue;
		if (!len || line[len - 1] != '\n')
			line[len++] = '\n';
		(void)io_write_all(fd, line, len);
		n++;
	}
	return n;
}

static __thread pid_t cached_tid;

static pid_t my_tid(void)
{
	if (!cached_tid)
		cached_tid = (pid_t)syscall(SYS_gettid);
	return cached_tid;
}

static int clamp_level(int64_t v)
{
	if (v < 0)
		return 0;
	if (v > 30)
		return 30;
	return (int)v;
}

void log_init(const char *name)
{
	int i;

	if (name) {
		const char *slash = strrchr(name, '/');

		snprintf(progname, sizeof(progname), "%s", slash ? slash + 1 : name);
	}
	/*
	 * "Defaults" are the config values, which are the table defaults
	 * unless a config was loaded already: a daemon that parses its
	 * arguments before log_init() keeps its debug_* settings.
	 */
	for (i = 0; i < LOG_SS_MAX; i++) {
		int l, m;

		cfg_loglevel(ss_opts[i], &l, &m);
		log_set_levels(i, l, m);
	}
}

int log_set_file(const char *path)
{
	int fd = STDERR_FILENO, old;

	if (path && *path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
	}
	pthread_rwlock_wrlock(&out_lock);
	old = out_fd;
	out_fd = fd;
	snprintf(out_path, sizeof(out_path), "%s", path && *path ? path : "");
	pthread_rwlock_unlock(&out_lock);
	if (old != STDERR_FILENO)
		close(old);
	return 0;
}

bool log_to_file(void)
{
	bool file;

	pthread_rwlock_rdlock(&out_lock);
	file = out_fd != STDERR_FILENO;
	pthread_rwlock_unlock(&out_lock);
	return file;
}

int log_reopen(void)
{
	char path[sizeof(out_path)];
	int fd, old;

	pthread_rwlock_rdlock(&out_lock);
	snprintf(path, sizeof(path), "%s", out_path);
	pthread_rwlock_unlock(&out_lock);
	if (!*path)
		return 0;	/* stderr: nothing to reopen */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = -errno;

		derr(COMMON, "cannot reopen log file '%s': %s; still writing to the old one", path,
		     strerror(-e));
		return e;
	}
	pthread_rwlock_wrlock(&out_lock);
	if (strcmp(path, out_path)) {
		/* log_file changed meanwhile: the new file wins */
		pthread_rwlock_unlock(&out_lock);
		close(fd);
		return 0;
	}
	old = out_fd;
	out_fd = fd;
	pthread_rwlock_unlock(&out_lock);
	if (old != STDERR_FILENO)
		close(old);
	dinfo(COMMON, "log file %s reopened", path);
	return 0;
}

void log_set_levels(enum log_subsys ss, int level, int mem_level)
{
	int l, m;

	if ((unsigned)ss >= LOG_SS_MAX)
		return;
	l = clamp_level(level);
	m = clamp_level(mem_level);
	atomic_store_explicit(&file_levels[ss], l, memory_order_relaxed);
	atomic_store_explicit(&mem_levels[ss], m, memory_order_relaxed);
	atomic_store_explicit(&log_levels[ss], l > m ? l : m, memory_order_relaxed);
}

void log_set_level(enum log_subsys ss, int level)
{
	log_set_levels(ss, level, level);
}

void log_get_levels(enum log_subsys ss, int *level, int *mem_level)
{
	if ((unsigned)ss >= LOG_SS_MAX) {
		*level = *mem_level = 0;
		return;
	}
	*level = atomic_load_explicit(&file_levels[ss], memory_order_relaxed);
	*mem_level = atomic_load_explicit(&mem_levels[ss], memory_order_relaxed);
}

unsigned log_dump_recent(void)
{
	static const char begin[] = "--- begin dump of recent events ---\n";
	static const char end[] = "--- end dump of recent events ---\n";
	unsigned n;

	pthread_rwlock_rdlock(&out_lock);
	(void)io_write_all(out_fd, begin, sizeof(begin) - 1);
	n = ring_dump_fd(out_fd);
	(void)io_write_all(out_fd, end, sizeof(end) - 1);
	pthread_rwlock_unlock(&out_lock);
	return n;
}

/* ---- crash dump ----------------------------------------------------- */

static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
static struct sigaction crash_old[sizeof(crash_sigs) / sizeof(crash_sigs[0])];

static void crash_handler(int sig, siginfo_t *si, void *uc)
{
	static const char *const names[] = { "Segmentation fault", "Bus error", "Illegal instruction",
					     "Floating point exception", "Aborted" };
	static const char begin[] = "--- begin dump of recent events ---\n";
	static const char end[] = "--- end dump of recent events ---\n";
	char msg[160];
	size_t i, len;
	int fd = atomic_load_explicit(&out_fd, memory_order_relaxed);

	(void)si;
	(void)uc;
	for (i = 0; i < sizeof(crash_sigs) / sizeof(crash_sigs[0]); i++)
		if (crash_sigs[i] == sig)
			break;
	if (i == sizeof(crash_sigs) / sizeof(crash_sigs[0]))
		return;
	/* no snprintf in a signal handler: build "*** Caught signal (NAME) ***" by hand */
	len = 0;
	for (const char *p = "*** Caught signal ("; *p; p++)
		msg[len++] = *p;
	for (const char *p = names[i]; *p && len < sizeof(msg) - 8; p++)
		msg[len++] = *p;
	for (const char *p = ") ***\n"; *p; p++)
		msg[len++] = *p;
	(void)io_write_all(fd, msg, len);
	(void)io_write_all(fd, begin, sizeof(begin) - 1);
	ring_dump_fd(fd);
	(void)io_write_all(fd, end, sizeof(end) - 1);
	/* the previous handler (default: die with the signal; a sanitizer's) */
	sigaction(sig, &crash_old[i], NULL);
	raise(sig);
}

void log_install_crash_dump(void)
{
	struct sigaction sa;
	size_t i;

	pthread_once(&ring_once, ring_alloc);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = crash_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(crash_sigs) / sizeof(crash_sigs[0]); i++)
		sigaction(crash_sigs[i], &sa, &crash_old[i]);
}

int log_subsys_by_name(const char *name)
{
	int i;

	if (!name)
		return -1;
	for (i = 0; i < LOG_SS_MAX; i++)
		if (!strcmp(ss_names[i], name))
			return i;
	return -1;
}

const char *log_subsys_name(enum log_subsys ss)
{
	if ((unsigned)ss >= LOG_SS_MAX)
		return "?";
	return ss_names[ss];
}

int log_default_level(enum log_subsys ss)
{
	if ((unsigned)ss >= LOG_SS_MAX)
		return 0;
	return ss_defaults[ss];
}

void log_vwrite(enum log_subsys ss, int level, const char *fmt, va_list ap)
{
	char stackbuf[1024], *buf = stackbuf, *heap = NULL;
	struct timespec ts;
	struct tm tm;
	int hlen, mlen;
	size_t len;
	va_list ap2;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	hlen = snprintf(stackbuf, sizeof(stackbuf),
			"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %s[%d] %d %s %d: ",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			tm.tm_sec, ts.tv_nsec / 1000, progname, (int)getpid(), (int)my_tid(),
			log_subsys_name(ss), level);
	if (hlen < 0 || (size_t)hlen >= sizeof(stackbuf))
		return;

	va_copy(ap2, ap);
	mlen = vsnprintf(stackbuf + hlen, sizeof(stackbuf) - hlen, fmt, ap2);
	va_end(ap2);
	if (mlen < 0)
		return;
	len = (size_t)hlen + (size_t)mlen;
	if (len + 2 > sizeof(stackbuf)) {
		/* a long line: format it again into a buffer of the right size */
		heap = malloc(len + 2);
		if (heap) {
			memcpy(heap, stackbuf, hlen);
			vsnprintf(heap + hlen, (size_t)mlen + 1, fmt, ap);
			buf = heap;
		} else {
			len = sizeof(stackbuf) - 2;
		}
	}
	/* one line per message, even when the format ends in a newline */
	if (len > (size_t)hlen && buf[len - 1] == '\n')
		len--;
	buf[len++] = '\n';

	if (level <= atomic_load_explicit(&mem_levels[ss], memory_order_relaxed))
		ring_push(buf, len);
	if (level <= atomic_load_explicit(&file_levels[ss], memory_order_relaxed)) {
		pthread_rwlock_rdlock(&out_lock);
		(void)io_write_all(out_fd, buf, len);
		pthread_rwlock_unlock(&out_lock);
	}
	free(heap);
}

void log_write(enum log_subsys ss, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(ss, level, fmt, ap);
	va_end(ap);
}

/* config observer: debug_<ss> changed */
static void level_changed(int id, void *arg)
{
	enum log_subsys ss = (enum log_subsys)(long)arg;
	int l, m;

	cfg_loglevel(id, &l, &m);
	log_set_levels(ss, l, m);
}

static _Atomic bool ignore_file_option;

void log_ignore_file_option(void)
{
	atomic_store(&ignore_file_option, true);
}

/* config observer: log_file changed */
static void file_changed(int id, void *arg)
{
	char raw[4096], path[4096];
	int r;

	if (atomic_load(&ignore_file_option))
		return;
	cfg_str(id, raw, sizeof(raw));
	/* "$name" before we know it (the config is read before the client knows
	 * its name): wait for cfg_set_identity(), which applies it again */
	if (!cfg_identity_known() && (strstr(raw, "$name") || strstr(raw, "$id") || strstr(raw, "$type")))
		return;
	cfg_expand(raw, path, sizeof(path));
	r = log_set_file(path);
	if (r < 0)
		derr(COMMON, "cannot open log file '%s': %s; keeping the old one", path,
		     strerror(-r));
}

static void register_observers(void)
{
	int i;

	for (i = 0; i < LOG_SS_MAX; i++)
		cfg_observe(ss_opts[i], level_changed, (void *)(long)i);
	cfg_observe(CFG_log_file, file_changed, NULL);
}

void log_cfg_attach(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int i;

	pthread_once(&once, register_observers);
	for (i = 0; i < LOG_SS_MAX; i++) {
		int l, m;

		cfg_loglevel(ss_opts[i], &l, &m);
		log_set_levels(i, l, m);
	}
}
