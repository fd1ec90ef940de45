/*
 * main.c - `loligo`, the admin CLI (DESIGN.md section 11).
 *
 *   loligo -s | status | health [detail] | df | fs ls|status|dump|du PATH | mds stat
 *   loligo tell mds.0 <command words...>     the MDS, found from the config
 *   loligo daemon NAME|SOCK <command words...>  any daemon: mds.0, client.NAME, or a socket path
 *   loligo auth ... | config check | completion
 *
 * Every command is one line of cmds[] below: its words, its arguments, its
 * help and its handler; `--help` and the bash completion script
 * (`loligo completion`, installed by the packages) are generated from it.
 * The cluster-level ones are admin-socket commands of the MDS ("status",
 * "df", "fs dump", "health"...), rendered for people by status.c.
 *
 * Daemons are found by name as Ceph's `ceph daemon mds.a` does: the
 * admin_socket option of the daemon's config section ([mds] for mds.0,
 * [client] for client.NAME), with Ceph's metavariables expanded ($cluster,
 * $name, $id, $type; $pid matches any pid, so `$cluster-$name.$pid.asok`
 * keeps two mounts from one config apart and `daemon client.admin` finds
 * the one that runs, or says which ones do).  The config is -c FILE,
 * $LOLIGO_CONF, ./loligo.conf, ./vstart/loligo.conf or
 * /etc/loligo/loligo.conf, the first found.
 *
 * Exit codes: cli.h (0 ok, 1 the command failed, 2 usage, 3 no daemon,
 * 4 timeout, 5 bad reply).
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
	double interval;
};

static struct cli_opts g_opts = { .fmt = FMT_PLAIN, .timeout_ms = 10000, .interval = 1.0 };

/* ---- finding daemons ---------------------------------------------------------- */

static const char *const fallbacks[] = { "./loligo.conf", "./vstart/loligo.conf", "/etc/loligo/loligo.conf" };

static const char *find_conf(void)
{
	const char *conf = g_opts.conf;
	size_t i;

	if (!conf)
		conf = getenv("LOLIGO_CONF");
	for (i = 0; !conf && i < sizeof(fallbacks) / sizeof(fallbacks[0]); i++)
		if (access(fallbacks[i], R_OK) == 0)
			conf = fallbacks[i];
	return conf;
}

/* Is a daemon listening at @path? */
static bool sock_live(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ok;

	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/*
 * The admin socket of daemon @name ("mds.0", "client.NAME") into @buf:
 * the config's admin_socket for its section, metavariables expanded, $pid
 * matched against the sockets that exist.  Return: 0 or an exit code after
 * saying what to do.
 */
static int daemon_sock(const char *name, char *buf, size_t len)
{
	const char *conf = find_conf(), *type;
	char err[512], raw[4096], pat[4096], *p;
	glob_t g;
	size_t i, nlive = 0;
	int r;

	type = !strncmp(name, "mds", 3) ? "mds" : "client";
	if (!strcmp(type, "mds") && g_opts.mds_asok) {
		snprintf(buf, len, "%s", g_opts.mds_asok);
		return 0;
	}
	if (!conf) {
		fprintf(stderr, "loligo: where is %s? pass -c loligo.conf (admin_socket in its [%s] section)%s, "
				"or the socket path\n", name, type, !strcmp(type, "mds") ? ", --mds-asok PATH" : "");
		return EXIT_USAGE;
	}
	cfg_init(type);
	r = cfg_load_file(conf, err, sizeof(err));
	if (r) {
		fprintf(stderr, "loligo: %s\n", err);
		return EXIT_USAGE;
	}
	cfg_str(CFG_admin_socket, raw, sizeof(raw));
	if (!*raw) {
		fprintf(stderr, "loligo: %s sets no admin_socket for [%s]; pass %s\n", conf, type,
			!strcmp(type, "mds") ? "--mds-asok PATH" : "the socket path");
		return EXIT_USAGE;
	}
	/* "$pid" matches any pid: mark it, expand the rest, then glob */
	while ((p = strstr(raw, "$pid")))
		memmove(p + 1, p + 4, strlen(p + 4) + 1), *p = '\x01';
	if (!strcmp(name, "client")) {
		char n[128];

		cfg_str(CFG_client_auth_name, n, sizeof(n));
		cfg_set_identity(type, n);
	} else {
		cfg_set_identity(type, !strcmp(name, "mds") ? "mds.0" : name);
	}
	cfg_expand(raw, pat, sizeof(pat));
	cfg_set_identity("", "");
	if (!strchr(pat, '\x01')) {
		snprintf(buf, len, "%s", pat);
		return 0;
	}
	for (p = pat; (p = strchr(p, '\x01'));)
		*p = '*';
	if (glob(pat, 0, NULL, &g)) {
		fprintf(stderr, "loligo: no daemon %s: no socket matches %s (is it running?)\n", name, pat);
		return EXIT_NODAEMON;
	}
	for (i = 0; i < g.gl_pathc; i++) {
		if (!sock_live(g.gl_pathv[i]))
			continue;
		if (!nlive++)
			snprintf(buf, len, "%s", g.gl_pathv[i]);
	}
	if (nlive > 1) {
		fprintf(stderr, "loligo: %zu daemons are %s; name one by its socket:\n", nlive, name);
		for (i = 0; i < g.gl_pathc; i++)
			if (sock_live(g.gl_pathv[i]))
				fprintf(stderr, "  %s\n", g.gl_pathv[i]);
		globfree(&g);
		return EXIT_USAGE;
	}
	globfree(&g);
	if (!nlive) {
		fprintf(stderr, "loligo: no daemon %s answers (sockets matching %s are stale)\n", name, pat);
		return EXIT_NODAEMON;
	}
	return 0;
}

/* A daemon name ("mds.0", "client.admin") rather than a socket path? */
static bool is_daemon_name(const char *s)
{
	struct stat st;

	if (strchr(s, '/') || !stat(s, &st))
		return false;
	return !strcmp(s, "mds") || !strcmp(s, "client") || !strncmp(s, "mds.", 4) || !strncmp(s, "client.", 7);
}

/*
 * The admin socket of rank 0's holder: mds.0's (the name of a lone MDS),
 * else whichever mds.NAME answers (with standbys, rank 0 moves between
 * names; standbys open their admin socket only once they hold the rank).
 */
static int mds_sock(char *buf, size_t len)
{
	int r;

	if (g_opts.mds_asok)
		return daemon_sock("mds.0", buf, len);
	r = daemon_sock("mds.0", buf, len);
	if (r == 0 && sock_live(buf))
		return 0;
	if (daemon_sock("mds.\x01", buf, len) == 0)
		return 0;
	return r ? r : daemon_sock("mds.0", buf, len);
}

static int find_mds_asok_cb(char *buf, size_t len, void *arg)
{
	(void)arg;
	return mds_sock(buf, len);
}

/* ---- the commands --------------------------------------------------------------- */

struct cli_cmd {
	const char *words;	/* "health detail" */
	const char *args;	/* for --help and completion: "<command...>" */
	const char *help;
	int (*fn)(const struct cli_cmd *c, int n, char **w);	/* @w: the words after ours */
	int nargs;		/* -1: any number */
};

static int mds_forward(const char *prefix, int n, char **w)
{
	char sock[4096], *words[16];
	char buf[256], *save, *t;
	int k = 0, r = mds_sock(sock, sizeof(sock));

	if (r)
		return r;
	snprintf(buf, sizeof(buf), "%s", prefix);
	for (t = strtok_r(buf, " ", &save); t && k < 15; t = strtok_r(NULL, " ", &save))
		words[k++] = t;
	for (int i = 0; i < n && k < 15; i++)
		words[k++] = w[i];
	return run_asok_command(sock, "mds.0", k, words, g_opts.fmt, g_opts.timeout_ms);
}

static int ctx_init(struct cli_ctx *x)
{
	x->fmt = g_opts.fmt;
	x->timeout_ms = g_opts.timeout_ms;
	x->interval = g_opts.interval;
	return mds_sock(x->mds_sock, sizeof(x->mds_sock));
}

static int c_status(const struct cli_cmd *c, int n, char **w)
{
	struct cli_ctx x;
	int r = ctx_init(&x);

	return r ? r : cli_status(&x);
}

static int c_health(const struct cli_cmd *c, int n, char **w)
{
	struct cli_ctx x;
	int r = ctx_init(&x);

	return r ? r : cli_health(&x, strstr(c->words, "detail") != NULL);
}

static int c_df(const struct cli_cmd *c, int n, char **w)
{
	struct cli_ctx x;
	int r = ctx_init(&x);

	return r ? r : cli_df(&x);
}

static int c_forward(const struct cli_cmd *c, int n, char **w)
{
	/* "mds stat" is the MDS's "status" unchanged */
	return mds_forward(!strcmp(c->words, "mds stat") ? "status" : c->words, n, w);
}

static int c_tell(const struct cli_cmd *c, int n, char **w)
{
	char sock[4096];
	int r;

	if (n < 1) {
		fprintf(stderr, "usage: loligo tell mds.0 <command words...> (try: help)\n");
		return EXIT_USAGE;
	}
	if (strncmp(w[0], "mds.", 4) && strcmp(w[0], "mds")) {
		fprintf(stderr, "loligo: unknown daemon '%s': tell talks to MDS daemons, mds.0 (rank 0's holder) or "
				"mds.NAME (clients: loligo daemon client.NAME ...)\n", w[0]);
		return EXIT_USAGE;
	}
	r = !strcmp(w[0], "mds.0") || !strcmp(w[0], "mds") ? mds_sock(sock, sizeof(sock))
							    : daemon_sock(w[0], sock, sizeof(sock));
	if (r)
		return r;
	return run_asok_command(sock, "mds.0", n - 1, w + 1, g_opts.fmt, g_opts.timeout_ms);
}

static int c_daemon(const struct cli_cmd *c, int n, char **w)
{
	char sock[4096];
	int r;

	if (n < 1) {
		fprintf(stderr, "usage: loligo daemon mds.0|client.NAME|SOCKET <command words...> (try: help)\n");
		return EXIT_USAGE;
	}
	if (is_daemon_name(w[0])) {
		r = daemon_sock(w[0], sock, sizeof(sock));
		if (r)
			return r;
	} else {
		snprintf(sock, sizeof(sock), "%s", w[0]);
	}
	return run_asok_command(sock, is_daemon_name(w[0]) ? w[0] : sock, n - 1, w + 1, g_opts.fmt, g_opts.timeout_ms);
}

static int c_config_check(const struct cli_cmd *c, int n, char **w)
{
	return cli_config_check(g_opts.conf);
}

static int c_auth(const struct cli_cmd *c, int n, char **w)
{
	return cli_auth(n, w, g_opts.fmt, g_opts.timeout_ms, find_mds_asok_cb, NULL);
}

static int c_fs_du(const struct cli_cmd *c, int n, char **w)
{
	return cli_fs_du(n, w, g_opts.fmt);
}

static int c_completion(const struct cli_cmd *c, int n, char **w);
static int c_help(const struct cli_cmd *c, int n, char **w);

static const struct cli_cmd cmds[] = {
	{ "status", "", "cluster status: health, the MDS, clients, usage, op/s (also -s)", c_status, 0 },
	{ "health", "", "HEALTH_OK, HEALTH_WARN or HEALTH_ERR and the checks behind it", c_health, 0 },
	{ "health detail", "", "the health checks with a line per affected item", c_health, 0 },
	{ "df", "", "raw capacity, and per pool stored bytes, objects and used bytes", c_df, 0 },
	{ "fs ls", "", "filesystems and their pools", c_forward, 0 },
	{ "fs status", "", "filesystem status: rank 0's holder, standbys, map epoch, pools, usage", c_forward, 0 },
	{ "fs dump", "", "the filesystem map: pools, flags, MDS ranks and addresses, standbys, map epoch", c_forward, 0 },
	{ "fs set", "NAME VAR VAL", "change a setting kept with the filesystem: max_file_size BYTES, "
	  "refuse_client_session true|false, session_timeout SECS, session_autoclose SECS, standby_count_wanted N",
	  c_forward, 3 },
	{ "fs du", "PATH...", "recursive size, files and subdirectories of directories on a mount, "
	  "without walking them (the loligo.dir.* xattrs), and their quotas", c_fs_du, -1 },
	{ "fs add_data_pool", "NAME POOL", "a data pool file layouts may name (loligo.dir.layout.pool); made if missing",
	  c_forward, 2 },
	{ "fs rm_data_pool", "NAME POOL", "remove a data pool no file uses", c_forward, 2 },
	{ "mds stat", "", "the MDS's status, as it reports it", c_forward, 0 },
	{ "mds fail", "0", "fail rank 0's holder: it leaves the MDS map and exits, a standby fences it and takes over",
	  c_forward, -1 },
	/* as `ceph osd blocklist ...`: the MDS keeps the list and fences the data store */
	{ "blocklist ls", "", "evicted clients kept out, with their expiry", c_forward, 0 },
	{ "blocklist add", "ENTITY [EXPIRE_SECS]",
	  "keep a client out (ENTITY: its uuid or data-store address, as session ls shows them)", c_forward, -1 },
	{ "blocklist rm", "ENTITY", "let a blocklisted client in again", c_forward, 1 },
	{ "tell", "mds.0 <command...>",
	  "an MDS command: session ls | ops | client evict id=N | locks | dump cache | cache status | help",
	  c_tell, -1 },
	{ "daemon", "mds.0|client.NAME|SOCKET <command...>",
	  "any daemon by name or socket: help | perf dump | perf schema | config show | config diff | "
	  "config get VAR | config set VAR VAL | log reopen | log dump", c_daemon, -1 },
	{ "auth get-or-create", "client.NAME [-o FILE] [--keyring MDS_KEYRING]", "the key of a client, made if missing",
	  c_auth, -1 },
	{ "auth get", "client.NAME [-o FILE] [--keyring MDS_KEYRING]", "the key of a client", c_auth, -1 },
	{ "auth ls", "[--keyring MDS_KEYRING]", "clients with a key", c_auth, -1 },
	{ "auth rm", "client.NAME [--keyring MDS_KEYRING]", "remove a client's key", c_auth, -1 },
	{ "config check", "", "check the config file (-c) as the daemons read it, nfs_exports included", c_config_check,
	  0 },
	{ "completion", "", "print the bash completion script (generated from this table)", c_completion, 0 },
	{ "help", "", "this list", c_help, 0 },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	size_t i, w = 0;
	char line[256];

	fprintf(f, "usage: loligo [options] <command>\n\ncommands:\n");
	for (i = 0; i < NCMDS; i++) {
		size_t l = (size_t)snprintf(line, sizeof(line), "%s%s%s", cmds[i].words, *cmds[i].args ? " " : "",
					   cmds[i].args);
		if (l > w)
			w = l;
	}
	if (w > 44)
		w = 44;
	for (i = 0; i < NCMDS; i++) {
		snprintf(line, sizeof(line), "%s%s%s", cmds[i].words, *cmds[i].args ? " " : "", cmds[i].args);
		if (strlen(line) > w)
			fprintf(f, "  %s\n  %-*s  %s\n", line, (int)w, "", cmds[i].help);
		else
			fprintf(f, "  %-*s  %s\n", (int)w, line, cmds[i].help);
	}
	fprintf(f,
		"\noptions:\n"
		"  -s                                same as status\n"
		"  --format plain|json|json-pretty   output format (default plain); -f FORMAT\n"
		"  -c, --conf FILE                   config file the daemons' admin sockets are found in\n"
		"  --mds-asok PATH                   the MDS admin socket (overrides the config)\n"
		"  --timeout SECS                    give up on a daemon after SECS (default 10)\n"
		"  --interval SECS                   status: seconds between the samples of op/s (default 1, 0: none)\n"
		"  --version, -h/--help\n"
		"\n"
		"Command arguments go in the order 'help' lists them, or as name=value.\n"
		"Exit status: 0 ok, 1 the command failed, 2 bad usage, 3 no daemon answers,\n"
		"4 the daemon did not answer in time, 5 its reply was not valid.\n");
}

static int c_help(const struct cli_cmd *c, int n, char **w)
{
	usage(stdout);
	return 0;
}

/*
 * The bash completion script: the first words of every command, the words
 * that may follow each of them, daemon names after `daemon` and `tell`,
 * then the daemon's own commands (asked from its `help`, as JSON).
 */
static int c_completion(const struct cli_cmd *c, int n, char **w)
{
	char firsts[1024] = "", seconds[4096] = "";
	size_t i, j;

	for (i = 0; i < NCMDS; i++) {
		char first[64];
		const char *sp = strchr(cmds[i].words, ' ');
		size_t fl = sp ? (size_t)(sp - cmds[i].words) : strlen(cmds[i].words), l;
		bool seen_first = false, seen_second = false;

		snprintf(first, sizeof(first), "%.*s", (int)fl, cmds[i].words);
		for (j = 0; j < i; j++) {
			if (strncmp(cmds[j].words, first, fl) || (cmds[j].words[fl] != ' ' && cmds[j].words[fl]))
				continue;
			seen_first = true;
			if (cmds[j].words[fl] == ' ')
				seen_second = true;
		}
		if (!seen_first) {
			l = strlen(firsts);
			snprintf(firsts + l, sizeof(firsts) - l, "%s%s", l ? " " : "", first);
		}
		if (!sp || seen_second)
			continue;
		/* one case arm per first word, with every word that may follow it */
		l = strlen(seconds);
		l += (size_t)snprintf(seconds + l, sizeof(seconds) - l, "\t\t%s) words=\"", first);
		for (j = i; j < NCMDS && l < sizeof(seconds); j++)
			if (!strncmp(cmds[j].words, first, fl) && cmds[j].words[fl] == ' ')
				l += (size_t)snprintf(seconds + l, sizeof(seconds) - l, "%s%s", j == i ? "" : " ",
						      cmds[j].words + fl + 1);
		if (l < sizeof(seconds))
			snprintf(seconds + l, sizeof(seconds) - l, "\" ;;\n");
	}
	printf("# bash completion for loligo (generated by `loligo completion` from its command table)\n"
	       "_loligo_daemon_cmds()\n"
	       "{\n"
	       "\tloligo \"${_loligo_opts[@]}\" --timeout 2 --format json daemon \"$1\" help 2>/dev/null |\n"
	       "\t\tsed -n 's/\"prefix\":\"\\([^\"]*\\)\"/\\n\\1\\n/gp' | grep -v '[{}:,]' | sed 's/ .*//' | sort -u\n"
	       "}\n"
	       "_loligo()\n"
	       "{\n"
	       "\tlocal cur=${COMP_WORDS[COMP_CWORD]} words= i first= nw=0\n"
	       "\tlocal -a _loligo_opts=()\n"
	       "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	       "\t\tcase ${COMP_WORDS[i]} in\n"
	       "\t\t-c|--conf|--mds-asok) _loligo_opts+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i+1]}\"); i=$((i + 1)) ;;\n"
	       "\t\t-f|--format|--timeout|--interval) i=$((i + 1)) ;;\n"
	       "\t\t-*) ;;\n"
	       "\t\t*) [ -z \"$first\" ] && first=${COMP_WORDS[i]}; nw=$((nw + 1)) ;;\n"
	       "\t\tesac\n"
	       "\tdone\n"
	       "\tcase ${COMP_WORDS[COMP_CWORD-1]} in\n"
	       "\t-c|--conf|--mds-asok) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
	       "\t-f|--format) COMPREPLY=($(compgen -W \"plain json json-pretty\" -- \"$cur\")); return ;;\n"
	       "\tesac\n"
	       "\tif [[ $cur == -* ]]; then\n"
	       "\t\tCOMPREPLY=($(compgen -W \"-s -c --conf -f --format --mds-asok --timeout --interval --version --help\" -- \"$cur\"))\n"
	       "\t\treturn\n"
	       "\tfi\n"
	       "\tif [ $nw = 0 ]; then\n"
	       "\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n"
	       "\t\treturn\n"
	       "\tfi\n"
	       "\tcase $first in\n"
	       "\tdaemon|tell)\n"
	       "\t\tif [ $nw = 1 ]; then\n"
	       "\t\t\tif [ $first = tell ]; then words=mds.0; else words=\"mds.0 client.admin\"; fi\n"
	       "\t\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\") $(compgen -f -X '!*.asok' -- \"$cur\"))\n"
	       "\t\telif [ $nw = 2 ]; then\n"
	       "\t\t\tlocal d\n"
	       "\t\t\tfor ((i = 1; i < COMP_CWORD; i++)); do [ \"${COMP_WORDS[i]}\" = $first ] && d=${COMP_WORDS[i+1]}; done\n"
	       "\t\t\t[ $first = tell ] && d=mds.0\n"
	       "\t\t\tCOMPREPLY=($(compgen -W \"$(_loligo_daemon_cmds \"$d\")\" -- \"$cur\"))\n"
	       "\t\tfi\n"
	       "\t\treturn ;;\n"
	       "\tesac\n"
	       "\tif [ $nw = 1 ]; then\n"
	       "\t\tcase $first in\n"
	       "%s"
	       "\t\tesac\n"
	       "\t\t[ -n \"$words\" ] && COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
	       "\tfi\n"
	       "}\n"
	       "complete -F _loligo loligo\n",
	       firsts, seconds);
	return 0;
}

/* ---- options and dispatch ------------------------------------------------------------ */

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
 * the command words in order ("-s" becomes "status").  Return: 0, or
 * EXIT_USAGE / -1 (exit 0).
 */
static int parse_opts(int *argc, char **argv, struct cli_opts *o)
{
	static char status_word[] = "status";
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
		if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("loligo %s\n", LOLIGO_VERSION);
			return -1;
		}
		if (!strcmp(a, "-s")) {
			argv[out++] = status_word;
			continue;
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
		else if (!strcmp(a, "--interval"))
			which = 'i';
		else if (!strncmp(a, "--interval=", 11))
			which = 'i', val = a + 11;
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
		case 't':
		case 'i': {
			char *end;
			double s = strtod(val, &end);

			if (!*val || *end || !(s >= 0) || s > 86400 || (which == 't' && s == 0)) {
				fprintf(stderr, "loligo: bad %s '%s' (seconds, e.g. 5 or 0.5)\n",
					which == 't' ? "--timeout" : "--interval", val);
				return EXIT_USAGE;
			}
			if (which == 'i') {
				o->interval = s;
				break;
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

/* How many of @w's first words spell @words? (0: not this command) */
static int match(const char *words, int n, char **w)
{
	int k = 0;
	const char *s = words;

	while (*s) {
		size_t l = strcspn(s, " ");

		if (k >= n || strlen(w[k]) != l || strncmp(w[k], s, l))
			return 0;
		k++;
		s += l;
		while (*s == ' ')
			s++;
	}
	return k;
}

int main(int argc, char **argv)
{
	const struct cli_cmd *best = NULL;
	size_t i;
	int r, n, blen = 0;
	char **cmd;

	log_init("loligo");
	log_ignore_file_option();	/* the daemons' configs name their log files, not ours */
	r = parse_opts(&argc, argv, &g_opts);
	if (r)
		return r < 0 ? 0 : r;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv + 1;
	n = argc - 1;
	if (!strcmp(cmd[0], "auth"))	/* auth.c reads the verb (and says its usage) itself */
		return c_auth(NULL, n - 1, cmd + 1);
	if (n >= 2 && !strcmp(cmd[0], "fs") && !strcmp(cmd[1], "authorize"))
		return cli_fs_authorize(n - 2, cmd + 2, g_opts.fmt, g_opts.timeout_ms, find_mds_asok_cb, NULL);
	for (i = 0; i < NCMDS; i++) {
		int k = match(cmds[i].words, n, cmd);

		if (k > blen) {
			blen = k;
			best = &cmds[i];
		}
	}
	if (best && (best->nargs < 0 || n - blen == best->nargs))
		return best->fn(best, n - blen, cmd + blen);
	if (best)
		fprintf(stderr, "loligo: '%s' takes %s (usage: loligo %s%s%s)\n", best->words,
			best->nargs == 0 ? "no arguments" : best->nargs == 1 ? "one argument" : "other arguments",
			best->words, *best->args ? " " : "", best->args);
	else {
		fprintf(stderr, "loligo: unknown command '%s'", cmd[0]);
		for (int k = 1; k < n; k++)
			fprintf(stderr, " %s", cmd[k]);
		fprintf(stderr, "\n\n");
		usage(stderr);
	}
	return EXIT_USAGE;
}
