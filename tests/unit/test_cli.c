/*
 * test_cli.c - the loligo CLI against a test admin socket served from this
 * process: word-to-argument mapping, the three output formats, the MDS
 * subcommands, and the errors a user sees (no daemon, unknown command,
 * mistyped or extra arguments).
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"

static char sock[300], cli[4096];
static struct asok *as;
static int evicted = -1;

static int cmd_status(struct json_object *args, struct json_object **out, void *priv)
{
	*out = json_tokener_parse("{\"fs_name\": \"testfs\", \"mds\": {\"state\": \"active\", "
				  "\"sessions\": 2}, \"pools\": [\"testfs_metadata\", \"testfs_data\"]}");
	return 0;
}

static int cmd_fs_ls(struct json_object *args, struct json_object **out, void *priv)
{
	*out = json_tokener_parse("{\"filesystems\": [{\"name\": \"testfs\", \"metadata_pool\": "
				  "\"testfs_metadata\", \"data_pool\": \"testfs_data\"}]}");
	return 0;
}

static int cmd_session_ls(struct json_object *args, struct json_object **out, void *priv)
{
	*out = json_tokener_parse("[{\"id\": 4, \"addr\": \"127.0.0.1:40000\", \"state\": \"open\"},"
				  " {\"id\": 17, \"addr\": \"127.0.0.1:40001\", \"state\": \"stale\"}]");
	return 0;
}

static int cmd_evict(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;

	json_object_object_get_ex(args, "id", &v);
	if (json_object_get_int(v) == 999) {
		*out = json_tokener_parse("{\"error\": \"no session 999\"}");
		return -ENOENT;
	}
	evicted = json_object_get_int(v);
	*out = json_object_new_object();
	json_object_object_add(*out, "evicted", json_object_new_int(evicted));
	return 0;
}

static char bl_entity[64];
static int64_t bl_expire = -1;

static int cmd_blocklist_add(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;

	json_object_object_get_ex(args, "entity", &v);
	snprintf(bl_entity, sizeof(bl_entity), "%s", json_object_get_string(v));
	bl_expire = json_object_object_get_ex(args, "expire", &v) ? json_object_get_int64(v) : -1;
	*out = json_object_new_object();
	return 0;
}

static int cmd_blocklist_ls(struct json_object *args, struct json_object **out, void *priv)
{
	*out = json_tokener_parse("[{\"entity\": \"deadbeef-0102-0304-0506-0708090a0b0c\", \"expires\": \"never\"}]");
	return 0;
}

static const struct asok_cmd mds_cmds[] = {
	{ "blocklist ls", "", "blocklisted clients", cmd_blocklist_ls },
	{ "blocklist add", "entity:str expire:int?", "blocklist a client", cmd_blocklist_add },
	{ "status", "", "cluster status", cmd_status },
	{ "fs ls", "", "filesystems", cmd_fs_ls },
	{ "session ls", "", "client sessions", cmd_session_ls },
	{ "client evict", "id:int", "evict a client session", cmd_evict },
};

#define SUITE "cli"
#include "test_tmpdir.h"

static void setup(void)
{
	const char *env = getenv("LOLIGO_CLI"), *bdir = getenv("LOLIGO_BUILD_DIR");

	if (env)
		snprintf(cli, sizeof(cli), "%s", env);
	else
		snprintf(cli, sizeof(cli), "%s/tools/cli/loligo", bdir ? bdir : ".");
	ck_assert_msg(access(cli, X_OK) == 0, "no CLI at %s", cli);
	snprintf(sock, sizeof(sock), "%s/mds.asok", dir);
	cfg_init("mds");
	log_init("test_cli");
	ck_assert_int_eq(asok_start(sock, &as), 0);
	ck_assert_int_eq(asok_register(as, mds_cmds, (int)(sizeof(mds_cmds) / sizeof(mds_cmds[0])), NULL), 0);
}

static void teardown(void)
{
	asok_stop(as);
	as = NULL;
}

struct run {
	int code;
	char out[65536];
	char err[8192];
};

static void slurp(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

/* run the CLI with NULL-terminated arguments; stdout and stderr captured */
static struct run *run_cli(const char *first, ...)
{
	static struct run r;
	char *argv[32];
	int po[2], pe[2], st, argc = 0;
	const char *a;
	va_list ap;
	pid_t pid;

	argv[argc++] = cli;
	va_start(ap, first);
	for (a = first; a && argc < 31; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;

	ck_assert_int_eq(pipe(po), 0);
	ck_assert_int_eq(pipe(pe), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		/* no config fallback from the test's working directory */
		unsetenv("LOLIGO_CONF");
		if (chdir(dir) < 0)
			_exit(126);
		execv(cli, argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* outputs are small: stderr fits in the pipe while we read stdout */
	slurp(po[0], r.out, sizeof(r.out));
	slurp(pe[0], r.err, sizeof(r.err));
	close(po[0]);
	close(pe[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	r.code = WEXITSTATUS(st);
	return &r;
}

#define has(s, sub) ck_assert_msg(strstr((s), (sub)), "expected '%s' in: %s", (sub), (s))

/* Caps mds with the offline keyring (--keyring): get-or-create with caps,
 * fs authorize, auth caps, ls and get show them; a bad caps string is a
 * usage error that names what is wrong and writes nothing. */
START_TEST(test_auth_caps_offline)
{
	char kr[512];
	struct run *r;

	snprintf(kr, sizeof(kr), "%s/caps.keyring", dir);
	r = run_cli("auth", "get-or-create", "client.alice", "mds", "allow rw path=/home/alice", "--keyring", kr, NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "caps mds = \"allow rw path=/home/alice\"");
	r = run_cli("fs", "authorize", "loligo", "client.bob", "/home/bob", "r", "root_squash", "--keyring", kr, NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "caps mds = \"allow r path=/home/bob root_squash\"");
	r = run_cli("auth", "get-or-create", "client.admin", "--keyring", kr, NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "caps mds = \"allow rw\"");
	/* the same name with other caps: refused, pointing at auth caps */
	r = run_cli("auth", "get-or-create", "client.alice", "mds", "allow r", "--keyring", kr, NULL);
	ck_assert_int_ne(r->code, 0);
	has(r->err, "auth caps");
	r = run_cli("auth", "caps", "client.alice", "mds", "allow r path=/home/alice, allow rw path=/tmp", "--keyring",
		    kr, NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	r = run_cli("-f", "json", "auth", "ls", "--keyring", kr, NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "\"client.alice\":\"allow r path=\\/home\\/alice, allow rw path=\\/tmp\"");
	has(r->out, "\"client.admin\":\"allow rw\"");
	r = run_cli("auth", "get", "client.bob", "--keyring", kr, NULL);
	has(r->out, "root_squash");
	/* garbage */
	r = run_cli("auth", "get-or-create", "client.eve", "mds", "allow rw path=etc", "--keyring", kr, NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "absolute path");
	r = run_cli("auth", "get", "client.eve", "--keyring", kr, NULL);
	ck_assert_int_ne(r->code, 0);
	r = run_cli("fs", "authorize", "loligo", "client.eve", "/x", "rwx", "--keyring", kr, NULL);
	ck_assert_int_eq(r->code, 2);
	r = run_cli("auth", "get-or-create", "client.eve", "mon", "allow r", "--keyring", kr, NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "only mds caps");
}
END_TEST

START_TEST(test_daemon_builtins)
{
	struct run *r;
	struct json_object *o, *v;

	r = run_cli("daemon", sock, "help", NULL);
	ck_assert_int_eq(r->code, 0);
	has(r->out, "config set <var:str> <val:str>");
	has(r->out, "client evict <id:int>");

	r = run_cli("daemon", sock, "config", "set", "debug_mds", "10", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 10);

	r = run_cli("daemon", sock, "config", "get", "debug_mds", NULL);
	ck_assert_int_eq(r->code, 0);
	ck_assert_str_eq(r->out, "debug_mds: 10\n");

	r = run_cli("--format", "json", "daemon", sock, "config", "get", "debug-mds", NULL);
	ck_assert_int_eq(r->code, 0);
	ck_assert_str_eq(r->out, "{\"debug_mds\":10}\n");

	r = run_cli("daemon", sock, "config", "show", "--format=json-pretty", NULL);
	ck_assert_int_eq(r->code, 0);
	o = json_tokener_parse(r->out);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "fs_name", &v));
	json_object_put(o);
	ck_assert_ptr_nonnull(strchr(r->out, '\n'));

	r = run_cli("daemon", sock, "config", "show", NULL);
	has(r->out, "fs_name: loligo\n");

	r = run_cli("-f", "json", "daemon", sock, "perf", "dump", NULL);
	ck_assert_int_eq(r->code, 0);
	o = json_tokener_parse(r->out);
	ck_assert_ptr_nonnull(o);
	json_object_put(o);

	r = run_cli("daemon", sock, "version", NULL);
	has(r->out, "version: " LOLIGO_VERSION);
}
END_TEST

START_TEST(test_daemon_errors)
{
	struct run *r;
	char missing[400];

	snprintf(missing, sizeof(missing), "%s/nobody.asok", dir);
	r = run_cli("daemon", missing, "help", NULL);
	ck_assert_int_eq(r->code, 3);	/* no daemon */
	has(r->err, "no daemon at ");
	has(r->err, "nobody.asok: is it running?");

	r = run_cli("daemon", sock, "frobnicate", "now", NULL);
	ck_assert_int_eq(r->code, 1);	/* the command failed */
	has(r->err, "does not know the command 'frobnicate now'");

	r = run_cli("daemon", sock, "config", "set", "fs_name", "x", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "Error EPERM");
	has(r->err, "runtime");

	r = run_cli("daemon", sock, "config", "set", "debug_mds", "loud", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "invalid value 'loud'");

	r = run_cli("daemon", sock, "config", "get", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "needs argument 'var'");

	r = run_cli("daemon", sock, "config", "get", "a", "b", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "too many arguments");

	r = run_cli("--format", "yaml", "daemon", sock, "help", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "unknown format 'yaml'");

	r = run_cli("frob", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "unknown command 'frob'");
	has(r->err, "usage:");

	r = run_cli("--version", NULL);
	ck_assert_int_eq(r->code, 0);
	has(r->out, LOLIGO_VERSION);
}
END_TEST

START_TEST(test_mds_commands)
{
	struct run *r;
	char conf[400], line[600];
	FILE *f;

	r = run_cli("--mds-asok", sock, "--interval", "0", "status", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "fs:      testfs (");
	has(r->out, "health:  HEALTH_OK");
	has(r->out, "clients: 2 sessions (1 stale)");
	r = run_cli("--mds-asok", sock, "-s", "--interval", "0.1", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, " op/s");

	r = run_cli("--mds-asok", sock, "mds", "stat", NULL);
	ck_assert_int_eq(r->code, 0);
	has(r->out, "state: active");

	r = run_cli("--mds-asok", sock, "fs", "ls", NULL);
	ck_assert_int_eq(r->code, 0);
	/* arrays of flat objects are a table */
	has(r->out, "name    metadata_pool    data_pool\n");
	has(r->out, "testfs  testfs_metadata  testfs_data\n");

	r = run_cli("--mds-asok", sock, "tell", "mds.0", "session", "ls", NULL);
	ck_assert_int_eq(r->code, 0);
	has(r->out, "id  addr             state\n");
	has(r->out, "17  127.0.0.1:40001  stale\n");

	r = run_cli("--mds-asok", sock, "tell", "mds.0", "client", "evict", "id=4", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	ck_assert_int_eq(evicted, 4);
	r = run_cli("--mds-asok", sock, "tell", "mds.0", "client", "evict", "5", NULL);
	ck_assert_int_eq(r->code, 0);
	ck_assert_int_eq(evicted, 5);
	r = run_cli("--mds-asok", sock, "tell", "mds.0", "client", "evict", "five", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "argument 'id' of 'client evict' must be int, not 'five'");
	r = run_cli("--mds-asok", sock, "tell", "mds.0", "client", "evict", "999", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "Error ENOENT: no session 999");

	/* `loligo blocklist ...` is the MDS's blocklist, as `ceph osd blocklist` */
	r = run_cli("--mds-asok", sock, "blocklist", "ls", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "deadbeef-0102-0304-0506-0708090a0b0c");
	r = run_cli("--mds-asok", sock, "blocklist", "add", "local.00000000000000aa", "60", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	ck_assert_str_eq(bl_entity, "local.00000000000000aa");
	ck_assert_int_eq(bl_expire, 60);
	r = run_cli("--mds-asok", sock, "blocklist", "rm", "x", NULL);
	ck_assert_int_eq(r->code, 1);	/* the command failed: not registered here */

	/* commands this MDS does not register: said plainly */
	r = run_cli("--mds-asok", sock, "df", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "unknown command 'df'");
	r = run_cli("--mds-asok", sock, "fs", "status", NULL);
	ck_assert_int_eq(r->code, 1);
	has(r->err, "does not know the command 'fs status'");

	/* tell talks to MDS daemons: mds.0 (rank 0's holder) or mds.NAME */
	r = run_cli("--mds-asok", sock, "tell", "osd.3", "session", "ls", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "unknown daemon 'osd.3'");

	/* the socket from the config file's [mds] section */
	snprintf(conf, sizeof(conf), "%s/loligo.conf", dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	snprintf(line, sizeof(line), "[global]\nfs_name = testfs\n[mds]\nadmin_socket = %s\n", sock);
	fputs(line, f);
	fclose(f);
	r = run_cli("-c", conf, "--format", "json", "--interval", "0", "status", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);
	has(r->out, "\"state\":\"active\"");
	/* ./loligo.conf is found without -c (the CLI runs in the test dir) */
	r = run_cli("tell", "mds.0", "session", "ls", NULL);
	ck_assert_msg(r->code == 0, "%s", r->err);

	/* a config without the socket, and no config at all */
	f = fopen(conf, "w");
	fputs("[global]\nfs_name = testfs\n", f);
	fclose(f);
	r = run_cli("-c", conf, "status", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "sets no admin_socket");
	unlink(conf);
	r = run_cli("status", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "--mds-asok");
	r = run_cli("-c", conf, "status", NULL);
	ck_assert_int_eq(r->code, 2);
	has(r->err, "loligo.conf");

	/* the MDS gone */
	asok_stop(as);
	as = NULL;
	r = run_cli("--mds-asok", sock, "status", NULL);
	ck_assert_int_eq(r->code, 3);	/* no daemon: still a status, HEALTH_ERR */
	has(r->out, "HEALTH_ERR");
	has(r->out, "MDS_DOWN: 1 MDS is down");
	r = run_cli("--mds-asok", sock, "tell", "mds.0", "session", "ls", NULL);
	ck_assert_int_eq(r->code, 3);
	has(r->err, "is it running?");
	ck_assert_int_eq(asok_start(sock, &as), 0);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_daemon_builtins);
	tcase_add_test(tc, test_daemon_errors);
	tcase_add_test(tc, test_mds_commands);
	tcase_add_test(tc, test_auth_caps_offline);
	return tmpdir_run("cli", tc);
}
