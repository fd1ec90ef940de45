/*
 * cli.h - private to the loligo CLI: rendering and admin-socket commands.
 */
#ifndef LOLIGO_TOOLS_CLI_H
#define LOLIGO_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

enum cli_format { FMT_PLAIN, FMT_JSON, FMT_JSON_PRETTY };

/*
 * Exit codes (the same for every command; README "Administration"):
 *   0 success; 1 the command failed (the daemon refused it: the message
 *   names the errno, and --format json prints the daemon's error object;
 *   `config check`: the config is invalid); 2 bad usage; 3 no daemon
 *   answers (no socket, connection refused); 4 the daemon did not answer
 *   in time; 5 its reply was not valid admin-socket JSON.
 */
#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_NODAEMON 3
#define EXIT_TIMEOUT 4
#define EXIT_PROTO 5

/**
 * render - print a command's reply to @f in @fmt.  @prefix is the command
 * that produced it, so `help` can be shown as usage lines.
 */
void render(FILE *f, struct json_object *reply, enum cli_format fmt, const char *prefix);

/**
 * run_asok_command - send the command spelled by @words to the admin socket
 * at @sock and print the answer.
 * @words: command words and then its arguments ("config", "set",
 *         "debug_mds", "10"); arguments are positional, in the order of the
 *         command's signature, or "name=value".
 * @what:  how to name the daemon in messages ("mds.0" or the socket path).
 * Return: process exit code: 0, EXIT_NODAEMON, EXIT_USAGE, or the daemon's
 * errno for a failed command.
 */
/**
 * cli_config_check - `loligo config check`: read @conf (NULL: LOLIGO_CONF,
 * then the usual places) as loligo-mds and loligo-fuse would and check
 * nfs_exports; print what is wrong.  Return: 0 valid, 1 not, EXIT_USAGE.
 */
int cli_config_check(const char *conf);

/**
 * cli_fs_du - `loligo fs du PATH...`: the recursive statistics (loligo.dir.*
 * xattrs) and quotas of each directory, read through its mount (du.c).
 * Return: 0, 1 if a path could not be read, EXIT_USAGE.
 */
int cli_fs_du(int n, char **paths, enum cli_format fmt);

int run_asok_command(const char *sock, const char *what, int nwords, char **words,
		     enum cli_format fmt, int timeout_ms);

/**
 * asok_fetch - send command @prefix (no arguments) to @sock and return its
 * JSON reply in *@out (caller puts it).  Return: 0, or an exit code after
 * saying what is wrong on stderr (unless @quiet); a daemon error is
 * EXIT_FAIL with the error object in *@out.
 */
int asok_fetch(const char *sock, const char *what, const char *prefix, int timeout_ms, bool quiet,
	       struct json_object **out);

/** cli_io_exit - the exit code for asok_request()'s -errno @r (after printing why unless @quiet). */
int cli_io_exit(const char *sock, const char *what, int r, int timeout_ms, bool quiet);

/* ---- status.c: the cluster-level commands, rendered for people ---------- */

struct cli_ctx {
	enum cli_format fmt;
	int timeout_ms;
	double interval;              /* status: seconds between the two samples of the rates */
	char mds_sock[4096];          /* found by the caller */
};

int cli_status(struct cli_ctx *x);
int cli_health(struct cli_ctx *x, bool detail);
int cli_df(struct cli_ctx *x);
/** cli_pretty - a reply of MDS command @prefix in plain form, if it has a special one; false: none. */
bool cli_pretty(FILE *f, const char *prefix, struct json_object *reply);

/* human units: "1.5 GiB", "12 k", "2h 3m" (into @buf) */
const char *cli_bytes(uint64_t v, char *buf, size_t len);
const char *cli_count(uint64_t v, char *buf, size_t len);
const char *cli_duration(double secs, char *buf, size_t len);

/**
 * cli_auth - `loligo auth VERB ...` (tools/cli/auth.c): @words start at the
 * verb.  @find_sock finds the MDS admin socket when no --keyring is given.
 * Return: process exit code.
 */
int cli_auth(int n, char **words, enum cli_format fmt, int timeout_ms,
	     int (*find_sock)(char *buf, size_t len, void *arg), void *arg);
/* cli_fs_authorize - `loligo fs authorize FSNAME client.NAME PATH r|rw
 * [root_squash]`: auth get-or-create with "allow r|rw path=PATH". */
int cli_fs_authorize(int n, char **words, enum cli_format fmt, int timeout_ms,
		     int (*find_sock)(char *buf, size_t len, void *arg), void *arg);

#endif
