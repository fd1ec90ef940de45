/*
 * main.c - `loligo`, the admin CLI (DESIGN.md section 11).
 *
 *   loligo daemon SOCK <command words...>   any daemon, by its admin socket
 *   loligo tell mds.0 <command words...>    the MDS, found from the config
 *   loligo status | fs ls | fs status | mds stat | df
 *
 * Every one of them is an admin-socket command: the cluster-level ones are
 * forwarded to the MDS's socket as the MDS registers them ("status",
 * "fs ls", "fs status", "df"), so the CLI holds no knowledge of the MDS
 * beyond those names.  The MDS socket is --mds-asok PATH, or admin_socket
 * from the [mds] section of the config (-c FILE, $LOLIGO_CONF, ./loligo.conf,
 * ./vstart/loligo.conf, /etc/loligo/loligo.conf, first found).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "tools/cli/cli.h"

struct cli_opts {
	enum cli_format fmt;
	const char *conf;
	const char *mds_asok;
	int timeout_ms;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: loligo [options] <command>\n"
		"\n"
		"commands:\n"
		"  status                        cluster status (MDS 'status')\n"
		"  fs ls                         filesystems (MDS 'fs ls')\n"
		"  fs status                     filesystem status (MDS 'fs status')\n"
		"  mds stat                      MDS state (MDS 'status')\n"
		"  df                            space usage (MDS 'df')\n"
		"  auth get-or-create|get client.NAME [-o FILE] [--keyring MDS_KEYRING]\n"
		"  auth ls | auth rm client.NAME [--keyring MDS_KEYRING]\n"
		"                                client keys (MDS 'auth ...'; with --keyring\n"
		"                                the keyring file itself, MDS running or not)\n"
		"  tell mds.0 <command...>       any MDS admin command, e.g.\n"
		"                                  session ls | client evict id=N | dump cache\n"
		"  daemon SOCK <command...>      any daemon by its admin socket, e.g.\n"
		"                                  help | perf dump | config show |\n"
		"                                  config get VAR | config set VAR VAL\n"
		"  config check                  check the config file (-c) as the daemons read\n"
		"                                  it, nfs_exports included: exit 0 valid, 1 not\n"
		"\n"
		"options:\n"
		"  --format plain|json|json-pretty   output format (default plain)\n"
		"  -f FORMAT                         same as --format\n"
		"  -c, --conf FILE                   config file to find the MDS admin socket in\n"
		"  --mds-asok PATH                   the MDS admin socket (overrides the config)\n"
		"  --timeout SECS                    give up on a daemon after SECS (default 10)\n"
		"  --version, -h/--help\n"
		"\n"
		"Command arguments go in the order 'help' lists them, or as name=value.\n"
		"Exit status: 0 ok, 1 no daemon, 2 bad usage, else the daemon's errno.\n");
}

static int parse_format(const char *s, enum cli_format *fmt)
{
	if (!strcmp(s, "plain"))
		*fmt = FMT_PLAIN;
	else if (!strcmp(s, "json"))
		*fmt = FMT_JSON;
	else if (!strcmp(s, "json-pretty"))
		*fmt = FMT_JSON_PRETTY;
	else
		return -EINVAL;
	return 0;
}

/*
 * Take our options out of argv, wherever they are (before "--"), leaving
 * the command words in order.  Return: 0, or EXIT_USAGE / -1 (exit 0).
 */
static int parse_opts(int *argc, char **argv, struct cli_opts *o)
{
	int i, out = 1;

	for (i = 1; i < *argc; i++) {
		const char *a = argv[i], *val = NULL;
		int which;

		if (!strcmp(a, "--")) {
			for (i++; i < *argc; i++)
				argv[out++] = argv[i];
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return -1;
		}
		if (!strcmp(a, "--version")) {
			printf("loligo %s\n", LOLIGO_VERSION);
			return -1;
		}
		if (!strcmp(a, "--format") || !strcmp(a, "-f"))
			which = 'f';
		else if (!strncmp(a, "--format=", 9))
			which = 'f', val = a + 9;
		else if (!strcmp(a, "-c") || !strcmp(a, "--conf"))
			which = 'c';
		else if (!strncmp(a, "--conf=", 7))
			which = 'c', val = a + 7;
		else if (!strcmp(a, "--mds-asok"))
			which = 'm';
		else if (!strncmp(a, "--mds-asok=", 11))
			which = 'm', val = a + 11;
		else if (!strcmp(a, "--timeout"))
			which = 't';
		else if (!strncmp(a, "--timeout=", 10))
			which = 't', val = a + 10;
		else {
			argv[out++] = argv[i];
			continue;
		}
		if (!val) {
			if (i + 1 >= *argc) {
				fprintf(stderr, "loligo: %s needs a value\n", a);
				return EXIT_USAGE;
			}
			val = argv[++i];
		}
		switch (which) {
		case 'f':
			if (parse_format(val, &o->fmt)) {
				fprintf(stderr, "loligo: unknown format '%s' (plain, json or json-pretty)\n", val);
				return EXIT_USAGE;
			}
			break;
		case 'c':
			o->conf = val;
			break;
		case 'm':
			o->mds_asok = val;
			break;
		case 't': {
			char *end;
			double s = strtod(val, &end);

			if (!*val || *end || !(s > 0) || s > 86400) {
				fprintf(stderr, "loligo: bad --timeout '%s' (seconds, e.g. 5 or 0.5)\n", val);
				return EXIT_USAGE;
			}
			o->timeout_ms = (int)(s * 1000);
			if (!o->timeout_ms)
				o->timeout_ms = 1;
			break;
		}
		}
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

/*
 * The MDS admin socket path into @buf: --mds-asok, or [mds] admin_socket
 * of the config file.  Return: 0 or EXIT_USAGE after saying what to do.
 */
static int find_mds_asok(const struct cli_opts *o, char *buf, size_t len)
{
	static const char *const fallbacks[] = { "./loligo.conf", "./vstart/loligo.conf",
						  "/etc/loligo/loligo.conf" };
	const char *conf = o->conf;
	char err[512];
	size_t i;
	int r;

	if (o->mds_asok) {
		snprintf(buf, len, "%s", o->mds_asok);
		return 0;
	}
	if (!conf)
		conf = getenv("LOLIGO_CONF");
	for (i = 0; !conf && i < sizeof(fallbacks) / sizeof(fallbacks[0]); i++)
		if (access(fallbacks[i], R_OK) == 0)
			conf = fallbacks[i];
	if (!conf) {
		fprintf(stderr, "loligo: where is the MDS? pass --mds-asok PATH, or -c loligo.conf "
				"with admin_socket set in its [mds] section\n");
		return EXIT_USAGE;
	}
	cfg_init("mds");
	r = cfg_load_file(conf, err, sizeof(err));
	if (r) {
		fprintf(stderr, "loligo: %s\n", err);
		return EXIT_USAGE;
	}
	cfg_str(CFG_admin_socket, buf, len);
	if (!*buf) {
		fprintf(stderr, "loligo: %s sets no admin_socket for [mds]; pass --mds-asok PATH\n", conf);
		return EXIT_USAGE;
	}
	return 0;
}

static int find_mds_asok_cb(char *buf, size_t len, void *arg)
{
	return find_mds_asok(arg, buf, len);
}

static int mds_command(const struct cli_opts *o, int nwords, char **words)
{
	char sock[4096];
	int r = find_mds_asok(o, sock, sizeof(sock));

	if (r)
		return r;
	return run_asok_command(sock, "mds.0", nwords, words, o->fmt, o->timeout_ms);
}

int main(int argc, char **argv)
{
	struct cli_opts o = { .fmt = FMT_PLAIN, .timeout_ms = 10000 };
	char *w_status[] = { "status" }, *w_df[] = { "df" };
	char **cmd;
	int r, n;

	log_init("loligo");
	r = parse_opts(&argc, argv, &o);
	if (r)
		return r < 0 ? 0 : r;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv + 1;
	n = argc - 1;

	if (!strcmp(cmd[0], "daemon")) {
		if (n < 2) {
			fprintf(stderr, "usage: loligo daemon SOCK <command words...> (try: help)\n");
			return EXIT_USAGE;
		}
		return run_asok_command(cmd[1], cmd[1], n - 2, cmd + 2, o.fmt, o.timeout_ms);
	}
	if (!strcmp(cmd[0], "tell")) {
		if (n < 2) {
			fprintf(stderr, "usage: loligo tell mds.0 <command words...> (try: help)\n");
			return EXIT_USAGE;
		}
		if (strcmp(cmd[1], "mds.0") && strcmp(cmd[1], "mds")) {
			fprintf(stderr, "loligo: unknown daemon '%s': this cluster has one MDS, mds.0\n",
				cmd[1]);
			return EXIT_USAGE;
		}
		return mds_command(&o, n - 2, cmd + 2);
	}
	if (!strcmp(cmd[0], "config") && n == 2 && !strcmp(cmd[1], "check"))
		return cli_config_check(o.conf);
	if (!strcmp(cmd[0], "auth"))
		return cli_auth(n - 1, cmd + 1, o.fmt, o.timeout_ms, find_mds_asok_cb, &o);
	if (!strcmp(cmd[0], "status") && n == 1)
		return mds_command(&o, 1, w_status);
	if (!strcmp(cmd[0], "df") && n == 1)
		return mds_command(&o, 1, w_df);
	if (!strcmp(cmd[0], "fs") && n == 2 && (!strcmp(cmd[1], "ls") || !strcmp(cmd[1], "status")))
		return mds_command(&o, 2, cmd);
	if (!strcmp(cmd[0], "mds") && n == 2 && !strcmp(cmd[1], "stat"))
		return mds_command(&o, 1, w_status);

	fprintf(stderr, "loligo: unknown command '%s'", cmd[0]);
	for (int i = 1; i < n; i++)
		fprintf(stderr, " %s", cmd[i]);
	fprintf(stderr, "\n\n");
	usage(stderr);
	return EXIT_USAGE;
}
