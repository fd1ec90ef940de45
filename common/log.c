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
 * A line is formatted into one buffer and written with a single write(2) so
 * lines from different threads never interleave.  The output fd is swapped
 * by log_set_file() under a rwlock that writers take shared, so a writer
 * never writes to a closed (or worse, reused) descriptor.
 */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"

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

static char progname[64] = "loligo";
static pthread_rwlock_t out_lock = PTHREAD_RWLOCK_INITIALIZER;
static int out_fd = STDERR_FILENO;	/* protected by out_lock */

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
	for (i = 0; i < LOG_SS_MAX; i++)
		atomic_store_explicit(&log_levels[i], clamp_level(cfg_int(ss_opts[i])),
				      memory_order_relaxed);
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
	pthread_rwlock_unlock(&out_lock);
	if (old != STDERR_FILENO)
		close(old);
	return 0;
}

void log_set_level(enum log_subsys ss, int level)
{
	if ((unsigned)ss >= LOG_SS_MAX)
		return;
	atomic_store_explicit(&log_levels[ss], clamp_level(level), memory_order_relaxed);
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

	pthread_rwlock_rdlock(&out_lock);
	{
		size_t off = 0;

		while (off < len) {
			ssize_t n = write(out_fd, buf + off, len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	pthread_rwlock_unlock(&out_lock);
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

	log_set_level(ss, (int)cfg_int(id));
}

/* config observer: log_file changed */
static void file_changed(int id, void *arg)
{
	char path[4096];
	int r;

	cfg_str(id, path, sizeof(path));
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
	for (i = 0; i < LOG_SS_MAX; i++)
		log_set_level(i, (int)cfg_int(ss_opts[i]));
}
