/*
 * cli.h - private to the loligo CLI: rendering and admin-socket commands.
 */
#ifndef LOLIGO_TOOLS_CLI_H
#define LOLIGO_TOOLS_CLI_H

#include <stdio.h>

struct json_object;

enum cli_format { FMT_PLAIN, FMT_JSON, FMT_JSON_PRETTY };

/* exit codes besides a daemon's errno */
#define EXIT_USAGE 2		/* bad command line */
#define EXIT_NODAEMON 1		/* socket missing, refused, timed out */

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

int run_asok_command(const char *sock, const char *what, int nwords, char **words,
		     enum cli_format fmt, int timeout_ms);

/**
 * cli_auth - `loligo auth VERB ...` (tools/cli/auth.c): @words start at the
 * verb.  @find_sock finds the MDS admin socket when no --keyring is given.
 * Return: process exit code.
 */
int cli_auth(int n, char **words, enum cli_format fmt, int timeout_ms,
	     int (*find_sock)(char *buf, size_t len, void *arg), void *arg);

#endif
