/*
 * config.h - ceph-style INI configuration driven by the option table.
 *
 * A daemon calls cfg_init() with its section name ("mds", "client", "nfs"),
 * then cfg_parse_args() for -c/--conf FILE and --key=value overrides (which
 * also accepts --key value and key names with '-' for '_').  Values are
 * looked up by enum id (CFG_<name>) so a typo is a compile error.  Reads are
 * lock-free for numbers (atomics) and take a short lock for strings, which are
 * returned as copies.  Precedence: built-in default < [global] < [<section>]
 * < command line < `config set` at runtime.
 */
#ifndef LOLIGO_COMMON_CONFIG_H
#define LOLIGO_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/options.h"

struct json_object;

/*
 * CFG_T_LOGLEVEL: Ceph's "N" or "N/M" (log level / memory level, 0..30);
 * cfg_int() gives N, cfg_loglevel() both.  "N" alone means N/N.
 */
enum cfg_type { CFG_T_STR, CFG_T_INT, CFG_T_UINT, CFG_T_BOOL, CFG_T_DOUBLE, CFG_T_SIZE, CFG_T_SECS,
		CFG_T_LOGLEVEL };

struct cfg_option {
	const char *name;
	enum cfg_type type;
	const char *def;
	bool runtime;
	const char *desc;
};

extern const struct cfg_option cfg_options[CFG_MAX];

/**
 * cfg_init - reset every option to its default; @section is this daemon's
 * INI section.  Also makes log.c follow debug_* and log_file (see
 * log_cfg_attach()).  Call from main() before starting threads.  Values are
 * valid (the defaults) even before cfg_init(); observers run for options
 * whose value the reset changes.
 */
void cfg_init(const char *section);

/**
 * cfg_load_file - read an INI file: [global] first, then [<section>].
 * Return: 0, -ENOENT / -EACCES if it cannot be opened, -EINVAL on a syntax
 * error or an unknown option or bad value (@err gets "file:line: reason").
 */
int cfg_load_file(const char *path, char *err, size_t errlen);

/**
 * cfg_parse_args - consume -c/--conf FILE and --<option>=VALUE arguments.
 * Arguments it does not know are left in argv (compacted; *argc updated) for
 * the program's own parser.  A --conf file is loaded before any override.
 * Return: 0 or -errno with a message in @err.
 */
int cfg_parse_args(int *argc, char **argv, char *err, size_t errlen);

/** cfg_lookup - option id by name ("mds_port" or "mds-port"), or -1. */
int cfg_lookup(const char *name);

/**
 * cfg_set - set option @id from a string, validating its type.
 * @at_runtime: refuse (-EPERM) options that are not runtime-changeable.
 * Return: 0, -EINVAL (bad value, message in @err), -EPERM.
 */
int cfg_set(int id, const char *value, bool at_runtime, char *err, size_t errlen);

/* Where an option's value came from. */
enum cfg_source {
	CFG_SRC_DEFAULT = 0,
	CFG_SRC_FILE,        /* cfg_load_file() */
	CFG_SRC_CMDLINE,     /* cfg_parse_args() overrides, or cfg_set() by the program */
	CFG_SRC_RUNTIME,     /* cfg_set(..., at_runtime = true): `config set` */
};

/** cfg_source - where option @id's current value came from. */
enum cfg_source cfg_source(enum cfg_opt_id id);

/* Decide on a value before it is applied: 0 to go on, -errno (message in @err) to refuse. */
typedef int (*cfg_check_fn)(const char *value, void *arg, char *err, size_t errlen);

/**
 * cfg_reload_option - read option @id again from the config file loaded
 * last (the daemon's -c file), for a reload: the file's value (its
 * [<section>] over [global]), or the default if the file no longer sets
 * it.  A value from the command line or `config set` is kept (and @check
 * not called), as it won over the file at start.  The whole file is
 * checked again, and @check (may be NULL) sees the new value first: a file
 * that no longer parses, or a value @check refuses, changes nothing.
 * Return: 1 changed, 0 unchanged (or nothing re-read), -errno with a
 * message in @err.
 */
int cfg_reload_option(enum cfg_opt_id id, cfg_check_fn check, void *arg, char *err, size_t errlen);

int64_t cfg_int(enum cfg_opt_id id);
/** cfg_loglevel - a LOGLEVEL option's log level into *@log and memory level into *@mem. */
void cfg_loglevel(enum cfg_opt_id id, int *log, int *mem);
uint64_t cfg_uint(enum cfg_opt_id id);   /* also SIZE */
bool cfg_bool(enum cfg_opt_id id);
double cfg_double(enum cfg_opt_id id);   /* also SECS */
/** cfg_str - copy of a string option into @buf (always NUL-terminated). */
const char *cfg_str(enum cfg_opt_id id, char *buf, size_t len);
/** cfg_strdup - malloc'd copy of a string option. */
char *cfg_strdup(enum cfg_opt_id id);
/** cfg_get_string - any option rendered as text into @buf. */
const char *cfg_get_string(int id, char *buf, size_t len);

/**
 * cfg_observe - call @fn(id, arg) after option @id changes at runtime
 * (used to apply debug_* levels).  Callbacks run in the setter's thread.
 * They also run for changes from the config file and the command line, so
 * an observer registered before cfg_parse_args() sees start-up values too.
 * At most 8 observers per option; they cannot be removed.
 */
void cfg_observe(enum cfg_opt_id id, void (*fn)(int id, void *arg), void *arg);

/** cfg_value_json - option @id's current value as a typed JSON value (new ref). */
struct json_object *cfg_value_json(int id);

/** cfg_show_json - every option with its current value, for `config show`. */
struct json_object *cfg_show_json(void);

/**
 * cfg_set_identity - who this process is, for the metavariables of
 * cfg_expand(): @type "mds" or "client", @name "mds.0" or "client.admin".
 * Call from main() before reading admin_socket or log_file.
 */
void cfg_set_identity(const char *type, const char *name);
/** cfg_identity_known - has cfg_set_identity() named this process yet? */
bool cfg_identity_known(void);

/**
 * cfg_expand - @in with Ceph's metavariables replaced into @out: $cluster
 * (fs_name), $type, $name, $id (what follows the dot of $name), $pid, $host.
 * Unknown $words are kept as they are.  Return: @out (truncated to @len).
 */
char *cfg_expand(const char *in, char *out, size_t len);

/** cfg_print_help - option table as --help text. */
void cfg_print_help(FILE *f, const char *prefix_filter);

#endif
