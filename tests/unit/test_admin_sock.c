/*
 * test_admin_sock.c - the admin socket end to end: every built-in command,
 * a registered command with typed arguments, bad and oversized requests,
 * mistyped arguments, stale and live socket files.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
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
#include "common/perf.h"

static char path[300];
static struct asok *as;
static struct perf_counter test_ops;

static int cmd_echo(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;

	ck_assert_ptr_eq(priv, (void *)&test_ops);
	/* the server checked and converted the types before calling us */
	ck_assert(json_object_object_get_ex(args, "id", &v));
	ck_assert(json_object_is_type(v, json_type_int));
	if (json_object_object_get_ex(args, "force", &v))
		ck_assert(json_object_is_type(v, json_type_boolean));
	*out = json_object_get(args);
	return 0;
}

static int cmd_fail(struct json_object *args, struct json_object **out, void *priv)
{
	return -ENOSPC;
}

static const struct asok_cmd test_cmds[] = {
	{ "test echo", "id:int name:str? force:bool?", "echo the arguments", cmd_echo },
	{ "test fail", "", "always fails", cmd_fail },
};

#define SUITE "asok"
#include "test_tmpdir.h"

static void setup(void)
{
	snprintf(path, sizeof(path), "%s/test.asok", dir);
	cfg_init("mds");
	log_init("test_admin_sock");
	ck_assert_int_eq(asok_start(path, &as), 0);
	ck_assert_int_eq(asok_register(as, test_cmds, 2, &test_ops), 0);
}

static void teardown(void)
{
	asok_stop(as);
	as = NULL;
	unlink(path);
}

/* send @json (a string) and return the reply */
static struct json_object *req(const char *json)
{
	struct json_object *r = json_tokener_parse(json), *reply = NULL;

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(asok_request(path, r, &reply, 5000), 0);
	json_object_put(r);
	ck_assert_ptr_nonnull(reply);
	return reply;
}

static int reply_errno(struct json_object *reply)
{
	struct json_object *v;

	if (!json_object_object_get_ex(reply, "errno", &v))
		return 0;
	ck_assert(json_object_object_get_ex(reply, "error", NULL));
	return json_object_get_int(v);
}

static const char *reply_error(struct json_object *reply)
{
	struct json_object *v;

	if (!json_object_object_get_ex(reply, "error", &v))
		return "";
	return json_object_get_string(v);
}

START_TEST(test_help)
{
	struct json_object *r = req("{\"prefix\": \"help\"}"), *cmds, *c, *v;
	static const char *const want[] = { "help", "config show", "config get", "config set",
					    "perf dump", "perf reset", "version", "test echo" };
	size_t i, j;

	ck_assert_int_eq(reply_errno(r), 0);
	ck_assert(json_object_object_get_ex(r, "commands", &cmds));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool found = false;

		for (j = 0; j < json_object_array_length(cmds); j++) {
			c = json_object_array_get_idx(cmds, j);
			json_object_object_get_ex(c, "prefix", &v);
			if (!strcmp(json_object_get_string(v), want[i])) {
				found = true;
				if (!strcmp(want[i], "config set")) {
					json_object_object_get_ex(c, "args", &v);
					ck_assert_str_eq(json_object_get_string(v), "var:str val:str");
				}
				ck_assert(json_object_object_get_ex(c, "help", NULL));
			}
		}
		ck_assert_msg(found, "help lacks '%s'", want[i]);
	}
	json_object_put(r);
}
END_TEST

START_TEST(test_config_commands)
{
	struct json_object *r, *v;

	r = req("{\"prefix\": \"config show\"}");
	ck_assert(json_object_object_get_ex(r, "debug_mds", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert_int_eq(json_object_object_length(r), CFG_MAX);
	json_object_put(r);

	r = req("{\"prefix\": \"config get\", \"var\": \"debug_mds\"}");
	ck_assert(json_object_object_get_ex(r, "debug_mds", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	json_object_put(r);

	r = req("{\"prefix\": \"config set\", \"var\": \"debug-mds\", \"val\": \"10\"}");
	ck_assert_int_eq(reply_errno(r), 0);
	json_object_put(r);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 10);
	ck_assert(log_enabled(LOG_SS_MDS, 10));

	/* a JSON number for a str argument is accepted as its text */
	r = req("{\"prefix\": \"config set\", \"var\": \"debug_mds\", \"val\": 3}");
	ck_assert_int_eq(reply_errno(r), 0);
	json_object_put(r);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 3);

	r = req("{\"prefix\": \"config set\", \"var\": \"fs_name\", \"val\": \"x\"}");
	ck_assert_int_eq(reply_errno(r), EPERM);
	ck_assert_ptr_nonnull(strstr(reply_error(r), "runtime"));
	json_object_put(r);

	r = req("{\"prefix\": \"config set\", \"var\": \"debug_mds\", \"val\": \"lots\"}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	ck_assert_ptr_nonnull(strstr(reply_error(r), "invalid value 'lots'"));
	json_object_put(r);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 3);

	r = req("{\"prefix\": \"config get\", \"var\": \"no_such_option\"}");
	ck_assert_int_eq(reply_errno(r), ENOENT);
	ck_assert_ptr_nonnull(strstr(reply_error(r), "no_such_option"));
	json_object_put(r);
}
END_TEST

START_TEST(test_perf_and_version)
{
	struct json_object *r, *v;

	perf_register_counter("test", "ops", &test_ops);
	perf_inc(&test_ops, 7);
	r = req("{\"prefix\": \"perf dump\"}");
	ck_assert(json_object_object_get_ex(r, "test", &v));
	ck_assert(json_object_object_get_ex(v, "ops", &v));
	ck_assert_int_eq(json_object_get_int(v), 7);
	json_object_put(r);

	r = req("{\"prefix\": \"perf reset\"}");
	ck_assert_int_eq(reply_errno(r), 0);
	json_object_put(r);
	ck_assert_uint_eq(perf_get(&test_ops), 0);
	perf_unregister_group("test");

	r = req("{\"prefix\": \"version\"}");
	ck_assert(json_object_object_get_ex(r, "version", &v));
	ck_assert_str_eq(json_object_get_string(v), LOLIGO_VERSION);
	json_object_put(r);
}
END_TEST

START_TEST(test_typed_arguments)
{
	struct json_object *r, *v;

	r = req("{\"prefix\": \"test echo\", \"id\": \"42\", \"force\": \"true\"}");
	ck_assert_int_eq(reply_errno(r), 0);
	ck_assert(json_object_object_get_ex(r, "id", &v));
	ck_assert_int_eq(json_object_get_int(v), 42);
	ck_assert(json_object_object_get_ex(r, "force", &v));
	ck_assert(json_object_get_boolean(v));
	json_object_put(r);

	r = req("{\"prefix\": \"test echo\", \"id\": \"forty-two\"}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	ck_assert_msg(strstr(reply_error(r), "argument 'id'") && strstr(reply_error(r), "int"),
		      "%s", reply_error(r));
	json_object_put(r);

	r = req("{\"prefix\": \"test echo\", \"id\": 1, \"force\": \"perhaps\"}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	json_object_put(r);

	r = req("{\"prefix\": \"test echo\", \"name\": \"x\"}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	ck_assert_msg(strstr(reply_error(r), "needs argument 'id'"), "%s", reply_error(r));
	json_object_put(r);

	r = req("{\"prefix\": \"test echo\", \"id\": 1, \"bogus\": 2}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	ck_assert_msg(strstr(reply_error(r), "no argument 'bogus'"), "%s", reply_error(r));
	json_object_put(r);

	r = req("{\"prefix\": \"test echo\", \"id\": [1]}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	json_object_put(r);

	r = req("{\"prefix\": \"test fail\"}");
	ck_assert_int_eq(reply_errno(r), ENOSPC);
	json_object_put(r);

	r = req("{\"prefix\": \"no such command\"}");
	ck_assert_int_eq(reply_errno(r), EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(reply_error(r), "unknown command 'no such command'"));
	json_object_put(r);

	r = req("{\"var\": \"x\"}");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	json_object_put(r);

	r = req("[1, 2]");
	ck_assert_int_eq(reply_errno(r), EINVAL);
	json_object_put(r);

	/* duplicate registration is refused, bad signatures too */
	ck_assert_int_eq(asok_register(as, test_cmds, 1, NULL), -EEXIST);
	{
		static const struct asok_cmd bad[] = { { "bad sig", "x:float", "", cmd_fail } };

		ck_assert_int_eq(asok_register(as, bad, 1, NULL), -EINVAL);
	}
}
END_TEST

/* send raw bytes; return the raw reply body (malloc'd) or NULL if none */
static char *raw(const void *data, size_t len, bool newline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	unsigned char hdr[4];
	uint32_t n;
	char *body;
	int fd;
	size_t off = 0;

	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	while (off < len) {
		ssize_t w = send(fd, (const char *)data + off, len - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;	/* the server may stop reading an oversized request */
		off += (size_t)w;
	}
	if (newline)
		send(fd, "\n", 1, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	if (recv(fd, hdr, 4, MSG_WAITALL) != 4) {
		close(fd);
		return NULL;
	}
	n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	ck_assert_uint_lt(n, 1 << 20);
	body = calloc(1, n + 1);
	ck_assert_int_eq(recv(fd, body, n, MSG_WAITALL), (ssize_t)n);
	close(fd);
	return body;
}

START_TEST(test_garbage_requests)
{
	static const unsigned char binary[] = { 0x00, 0xff, 0x7b, 0x00, 0x22, 0x0a };
	char *big, *s;
	struct json_object *r;

	s = raw("this is not json", 16, true);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(strstr(s, "not valid JSON"), "%s", s);
	free(s);

	s = raw("{\"prefix\": \"help\"", 17, true);
	ck_assert_msg(s && strstr(s, "\"errno\""), "%s", s);
	free(s);

	s = raw(binary, sizeof(binary), false);
	ck_assert_msg(s && strstr(s, "\"errno\""), "%s", s);
	free(s);

	s = raw("", 0, false);
	ck_assert_msg(s && strstr(s, "\"errno\""), "%s", s);
	free(s);

	/* no newline, just the shutdown: still a request */
	s = raw("{\"prefix\": \"version\"}", 21, false);
	ck_assert_msg(s && strstr(s, LOLIGO_VERSION), "%s", s);
	free(s);

	/* 1 MiB without a newline */
	big = malloc(1 << 20);
	memset(big, '[', 1 << 20);
	s = raw(big, 1 << 20, false);
	ck_assert_msg(s && strstr(s, "longer than"), "%s", s ? s : "(no reply)");
	free(s);
	free(big);

	/* deeply nested JSON must not crash the parser */
	big = malloc(60000);
	memset(big, '[', 60000);
	s = raw(big, 60000, true);
	ck_assert_msg(s && strstr(s, "\"errno\""), "%s", s ? s : "(no reply)");
	free(s);
	free(big);

	/* and the server still answers afterwards */
	r = req("{\"prefix\": \"version\"}");
	ck_assert_int_eq(reply_errno(r), 0);
	json_object_put(r);
}
END_TEST

START_TEST(test_socket_files)
{
	struct asok *other = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char stale[320], plain[320];
	struct json_object *q, *reply = NULL;
	int fd;

	/* a live socket is refused */
	ck_assert_int_eq(asok_start(path, &other), -EADDRINUSE);

	/* a stale one (bound, nobody listening) is replaced */
	snprintf(stale, sizeof(stale), "%s/stale.asok", dir);
	strcpy(sa.sun_path, stale);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_int_eq(asok_start(stale, &other), 0);
	q = json_tokener_parse("{\"prefix\": \"version\"}");
	ck_assert_int_eq(asok_request(stale, q, &reply, 2000), 0);
	json_object_put(reply);
	asok_stop(other);
	{
		struct stat st;

		ck_assert_int_eq(stat(stale, &st), -1);	/* stop unlinks it */
	}

	/* owner only, whatever the umask (the MDS's socket hands out keys) */
	{
		mode_t old = umask(0);
		struct stat st;

		ck_assert_int_eq(asok_start(stale, &other), 0);
		umask(old);
		ck_assert_int_eq(stat(stale, &st), 0);
		ck_assert_msg((st.st_mode & 07777) == 0600, "admin socket mode %o under umask 000",
			      (unsigned)(st.st_mode & 07777));
		asok_stop(other);
	}

	/* a regular file is not ours to delete */
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	fd = open(plain, O_CREAT | O_WRONLY, 0600);
	close(fd);
	ck_assert_int_eq(asok_start(plain, &other), -EEXIST);
	unlink(plain);

	/* the client side names a missing daemon */
	ck_assert_int_eq(asok_request(stale, q, &reply, 2000), -ENOENT);
	ck_assert_ptr_null(reply);
	json_object_put(q);

	{
		char longpath[200];

		memset(longpath, 'a', sizeof(longpath) - 1);
		longpath[sizeof(longpath) - 1] = '\0';
		ck_assert_int_eq(asok_start(longpath, &other), -ENAMETOOLONG);
	}
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("admin_sock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_config_commands);
	tcase_add_test(tc, test_perf_and_version);
	tcase_add_test(tc, test_typed_arguments);
	tcase_add_test(tc, test_garbage_requests);
	tcase_add_test(tc, test_socket_files);
	return tmpdir_run("admin_sock", tc);
}
