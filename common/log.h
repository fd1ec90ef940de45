/*
 * log.h - logging with per-subsystem debug levels, ceph style.
 *
 * Each subsystem has a level (0..30) set by the config option "debug_<name>"
 * (debug_mds = 10).  A message at level L is written when L <= the level of
 * its subsystem; level 0 and negative levels (errors) are always written.
 * The check is one relaxed atomic load, so dout()s on hot paths are cheap
 * when disabled.  Output goes to stderr or to the file set by log_set_file();
 * each line carries a timestamp, the thread id, the subsystem and the level.
 *
 * As in Ceph, a level may be "N/M": N is written to the log, up to M is
 * kept in a ring of the last log_max_recent entries in memory, which a
 * crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, once
 * log_install_crash_dump() ran) and `log dump` write to the log.
 * log_reopen() (SIGHUP, `log reopen`) opens the log file again by name,
 * for logrotate.
 */
#ifndef LOLIGO_COMMON_LOG_H
#define LOLIGO_COMMON_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* X(enum suffix, name used in debug_<name>, default level) */
#define LOG_SUBSYSTEMS(X)        \
	X(COMMON, common, 1)     \
	X(ASOK, asok, 1)         \
	X(STORE, store, 1)       \
	X(PROTO, proto, 1)       \
	X(MDS, mds, 1)           \
	X(JOURNAL, journal, 1)   \
	X(CLIENT, client, 1)     \
	X(FUSE, fuse, 1)         \
	X(RPC, rpc, 1)           \
	X(NFS, nfs, 1)           \
	X(TOOLS, tools, 1)

enum log_subsys {
#define X(e, n, d) LOG_SS_##e,
	LOG_SUBSYSTEMS(X)
#undef X
	LOG_SS_MAX
};

/* the level dout() checks: the higher of the log and the memory level */
extern _Atomic int log_levels[LOG_SS_MAX];

/**
 * log_init - name the program in log lines and reset levels to defaults.
 * Call once from main() before starting threads.
 */
void log_init(const char *progname);

/**
 * log_set_file - send log output to @path (appending); NULL means stderr.
 * Return: 0 or -errno.
 */
int log_set_file(const char *path);

/**
 * log_reopen - open the log file again by its name (after logrotate moved
 * it away) and write to the new one; lines never go to a closed fd.
 * Nothing to do when logging to stderr.  Return: 0 or -errno (the old file
 * is kept then).
 */
int log_reopen(void);
/** log_to_file - whether log lines go to a file (log_file), not to stderr. */
bool log_to_file(void);

/**
 * log_ignore_file_option - keep logging to stderr whatever log_file says:
 * for tools that read a daemon's config (the CLI) and must not write into,
 * or create, the daemon's log file.
 */
void log_ignore_file_option(void);

/** log_set_level - set the level of subsystem @ss (log and memory level both). */
void log_set_level(enum log_subsys ss, int level);
/** log_set_levels - set the log level and the memory level of @ss. */
void log_set_levels(enum log_subsys ss, int level, int mem_level);
/** log_get_levels - the log level and memory level of @ss. */
void log_get_levels(enum log_subsys ss, int *level, int *mem_level);

/**
 * log_dump_recent - write the in-memory ring (oldest first) to the log,
 * between "begin dump of recent events" and "end dump" lines, as Ceph's
 * `log dump`.  Return: the number of entries written.
 */
unsigned log_dump_recent(void);
/* log_recent_bytes - the memory the ring of recent lines takes once full
 * (log_max_recent lines, capped by log_max_recent_bytes). */
size_t log_recent_bytes(void);

/**
 * log_install_crash_dump - on SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT,
 * write the signal and the recent entries to the log, then let the
 * signal's previous handler (the default, or a sanitizer's) run.
 * Daemons call it once from main().
 */
void log_install_crash_dump(void);

/** log_subsys_by_name - "mds" -> LOG_SS_MDS, or -1. */
int log_subsys_by_name(const char *name);
const char *log_subsys_name(enum log_subsys ss);

/** log_default_level - built-in level of @ss (the table above). */
int log_default_level(enum log_subsys ss);

/**
 * log_cfg_attach - follow the debug_<subsys> and log_file options: apply
 * their current values now and again whenever one changes (file, command
 * line or runtime `config set`).  cfg_init() calls it; idempotent.
 */
void log_cfg_attach(void);

static inline int log_enabled(enum log_subsys ss, int level)
{
	return level <= atomic_load_explicit(&log_levels[ss], memory_order_relaxed);
}

void log_write(enum log_subsys ss, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vwrite(enum log_subsys ss, int level, const char *fmt, va_list ap);

/* dout(ss, level, fmt, ...): debug output at @level for subsystem LOG_SS_<ss>. */
#define dout(ss, level, ...)                                      \
	do {                                                      \
		if (log_enabled(LOG_SS_##ss, (level)))            \
			log_write(LOG_SS_##ss, (level), __VA_ARGS__); \
	} while (0)
/* derr: always written (level -1). */
#define derr(ss, ...) log_write(LOG_SS_##ss, -1, __VA_ARGS__)
/* dinfo: level 0, always written, not an error (start-up, shutdown). */
#define dinfo(ss, ...) log_write(LOG_SS_##ss, 0, __VA_ARGS__)

#endif
