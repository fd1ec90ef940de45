/*
 * admin_sock.c - the admin socket ("asok"): JSON commands over a unix socket.
 *
 * One thread per daemon accepts connections and serves them one at a time,
 * as ceph's AdminSocket does: admin traffic is rare, and serialising it
 * means handlers need no extra locking against each other.  A client that
 * connects and then stalls is bounded by IO_TIMEOUT_MS, and a request is
 * bounded by MAX_REQUEST bytes; anything malformed gets an error reply, and
 * the thread goes on to the next connection.
 *
 * Commands are kept in an append-only list under a->lock; the handler is
 * called without the lock (a handler may take its daemon's own locks).
 * Before a handler runs, its arguments are checked against the signature
 * ("id:int force:bool?") and normalised: a CLI that sends "10" for an int
 * argument gets it converted, a handler never sees a missing or mistyped
 * argument or an unknown one.
 */
#include "common/admin_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/config.h"
#include "common/io.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"

#define MAX_REQUEST (64 * 1024)
#define MAX_REPLY (256u * 1024 * 1024)
#define IO_TIMEOUT_MS 2000
#define MAX_ARGS 16

struct asok_entry {
	struct asok_entry *next;
	struct asok_cmd cmd;	/* strings point into the registrant's table */
	void *priv;
};

struct asok {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	int wake[2];		/* pipe: asok_stop() wakes the thread */
	pthread_t thread;
	dev_t dev;		/* our socket file, so stop unlinks only ours */
	ino_t ino;
	pthread_mutex_t lock;
	struct asok_entry *cmds;	/* protected by lock; append-only */
	struct asok_entry **tail;	/* protected by lock */
};

/* ---- replies ------------------------------------------------------ */

static struct json_object *error_obj(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct json_object *error_obj(int err, const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!o)
		return NULL;
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "errno", json_object_new_int(err));
	return o;
}

static int send_reply(int fd, struct json_object *reply)
{
	const char *s;
	size_t len;
	unsigned char hdr[4];
	uint64_t deadline = now_mono_ns() + IO_TIMEOUT_MS * 1000000ull;
	int r;

	s = reply ? json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN) : "{}";
	len = strlen(s);
	hdr[0] = (unsigned char)(len >> 24);
	hdr[1] = (unsigned char)(len >> 16);
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)len;
	r = io_send_all_deadline(fd, hdr, 4, deadline);
	if (!r)
		r = io_send_all_deadline(fd, s, len, deadline);
	return r;
}

/* ---- signatures --------------------------------------------------- */

enum arg_type { A_STR, A_INT, A_BOOL };

struct arg_spec {
	char name[64];
	enum arg_type type;
	bool optional;
};

/* Parse "id:int force:bool?" into @specs.  Return: count, or -EINVAL. */
static int parse_sig(const char *sig, struct arg_spec *specs, int max)
{
	const char *p = sig ? sig : "";
	int n = 0;

	while (*p) {
		char tok[96], *colon, *type;
		size_t len;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		len = strcspn(p, " ");
		if (len >= sizeof(tok) || n == max)
			return -EINVAL;
		memcpy(tok, p, len);
		tok[len] = '\0';
		p += len;

		colon = strchr(tok, ':');
		if (!colon || colon == tok || (size_t)(colon - tok) >= sizeof(specs[n].name))
			return -EINVAL;
		*colon = '\0';
		type = colon + 1;
		len = strlen(type);
		specs[n].optional = len && type[len - 1] == '?';
		if (specs[n].optional)
			type[len - 1] = '\0';
		if (!strcmp(type, "str"))
			specs[n].type = A_STR;
		else if (!strcmp(type, "int"))
			specs[n].type = A_INT;
		else if (!strcmp(type, "bool"))
			specs[n].type = A_BOOL;
		else
			return -EINVAL;
		memcpy(specs[n].name, tok, (size_t)(colon - tok) + 1);
		n++;
	}
	return n;
}

static const char *const arg_type_names[] = { [A_STR] = "str", [A_INT] = "int", [A_BOOL] = "bool" };

/* Convert @v to @type; NULL if it cannot be.  Returns a new reference. */
static struct json_object *coerce(struct json_object *v, enum arg_type type)
{
	const char *s;
	char *end;

	switch (type) {
	case A_STR:
		if (json_object_is_type(v, json_type_string))
			return json_object_get(v);
		if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double) ||
		    json_object_is_type(v, json_type_boolean))
			return json_object_new_string(json_object_to_json_string(v));
		return NULL;
	case A_INT:
		if (json_object_is_type(v, json_type_int))
			return json_object_get(v);
		if (json_object_is_type(v, json_type_string)) {
			long long x;

			s = json_object_get_string(v);
			errno = 0;
			/* decimal, or 0x hex; a leading zero is not octal */
			x = strtoll(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
			if (*s && !*end && !errno)
				return json_object_new_int64(x);
		}
		return NULL;
	case A_BOOL:
		if (json_object_is_type(v, json_type_boolean))
			return json_object_get(v);
		if (json_object_is_type(v, json_type_int)) {
			int64_t x = json_object_get_int64(v);

			if (x == 0 || x == 1)
				return json_object_new_boolean(x == 1);
			return NULL;
		}
		if (json_object_is_type(v, json_type_string)) {
			s = json_object_get_string(v);
			if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1"))
				return json_object_new_boolean(1);
			if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0"))
				return json_object_new_boolean(0);
		}
		return NULL;
	}
	return NULL;
}

/*
 * Check @req against @sig and build the normalised argument object.
 * Return: new object, or NULL with *@err set to an error reply.
 */
static struct json_object *check_args(const char *prefix, const char *sig, struct json_object *req,
				      struct json_object **err)
{
	struct arg_spec specs[MAX_ARGS];
	struct json_object *args, *v, *c;
	int n, i;

	n = parse_sig(sig, specs, MAX_ARGS);
	if (n < 0) {
		*err = error_obj(EINVAL, "command '%s' has a bad signature '%s'", prefix, sig);
		return NULL;
	}
	args = json_object_new_object();
	if (!args) {
		*err = error_obj(ENOMEM, "out of memory");
		return NULL;
	}
	json_object_object_add(args, "prefix", json_object_new_string(prefix));
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (!strcmp(key, "prefix") || !strcmp(key, "format"))
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(specs[i].name, key))
				break;
		if (i == n) {
			*err = error_obj(EINVAL, "command '%s' has no argument '%s' (usage: %s %s)",
					 prefix, key, prefix, sig);
			goto out_put;
		}
	}
	for (i = 0; i < n; i++) {
		if (!json_object_object_get_ex(req, specs[i].name, &v) || !v) {
			if (specs[i].optional)
				continue;
			*err = error_obj(EINVAL, "command '%s' needs argument '%s' (usage: %s %s)",
					 prefix, specs[i].name, prefix, sig);
			goto out_put;
		}
		c = coerce(v, specs[i].type);
		if (!c) {
			*err = error_obj(EINVAL, "argument '%s' of '%s' must be %s, not '%s'",
					 specs[i].name, prefix, arg_type_names[specs[i].type],
					 json_object_is_type(v, json_type_string)
						 ? json_object_get_string(v)
						 : json_object_to_json_string(v));
			goto out_put;
		}
		json_object_object_add(args, specs[i].name, c);
	}
	return args;
out_put:
	json_object_put(args);
	return NULL;
}

/* ---- built-in commands -------------------------------------------- */

static int cmd_help(struct json_object *args, struct json_object **out, void *priv)
{
	struct asok *a = priv;
	struct json_object *arr = json_object_new_array(), *o;
	struct asok_entry *e;

	if (!arr)
		return -ENOMEM;
	pthread_mutex_lock(&a->lock);
	for (e = a->cmds; e; e = e->next) {
		o = json_object_new_object();
		if (!o)
			continue;
		json_object_object_add(o, "prefix", json_object_new_string(e->cmd.prefix));
		json_object_object_add(o, "args", json_object_new_string(e->cmd.args ? e->cmd.args : ""));
		json_object_object_add(o, "help", json_object_new_string(e->cmd.help ? e->cmd.help : ""));
		json_object_array_add(arr, o);
	}
	pthread_mutex_unlock(&a->lock);
	*out = json_object_new_object();
	if (!*out) {
		json_object_put(arr);
		return -ENOMEM;
	}
	json_object_object_add(*out, "commands", arr);
	return 0;
}

static int cmd_config_show(struct json_object *args, struct json_object **out, void *priv)
{
	*out = cfg_show_json();
	return *out ? 0 : -ENOMEM;
}

static int cmd_config_get(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;
	const char *var;
	int id;

	json_object_object_get_ex(args, "var", &v);
	var = json_object_get_string(v);
	id = cfg_lookup(var);
	if (id < 0) {
		*out = error_obj(ENOENT, "unknown option '%s' (see 'config show')", var);
		return -ENOENT;
	}
	*out = json_object_new_object();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(*out, cfg_options[id].name, cfg_value_json(id));
	return 0;
}

static int cmd_config_set(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;
	const char *var, *val;
	char err[512], buf[4096];
	int id, r;

	json_object_object_get_ex(args, "var", &v);
	var = json_object_get_string(v);
	json_object_object_get_ex(args, "val", &v);
	val = json_object_get_string(v);
	id = cfg_lookup(var);
	if (id < 0) {
		*out = error_obj(ENOENT, "unknown option '%s' (see 'config show')", var);
		return -ENOENT;
	}
	r = cfg_set(id, val, true, err, sizeof(err));
	if (r) {
		*out = error_obj(-r, "%s", err);
		return r;
	}
	dinfo(ASOK, "config set %s = %s", cfg_options[id].name, cfg_get_string(id, buf, sizeof(buf)));
	*out = json_object_new_object();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(*out, cfg_options[id].name, cfg_value_json(id));
	return 0;
}

static int cmd_perf_dump(struct json_object *args, struct json_object **out, void *priv)
{
	*out = perf_dump_json();
	return *out ? 0 : -ENOMEM;
}

static int cmd_perf_reset(struct json_object *args, struct json_object **out, void *priv)
{
	perf_reset_all();
	*out = json_object_new_object();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(*out, "success", json_object_new_string("perf counters reset"));
	return 0;
}

static int cmd_version(struct json_object *args, struct json_object **out, void *priv)
{
	*out = json_object_new_object();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(*out, "version", json_object_new_string(LOLIGO_VERSION));
	json_object_object_add(*out, "pid", json_object_new_int((int)getpid()));
	return 0;
}

static int cmd_perf_schema(struct json_object *args, struct json_object **out, void *priv)
{
	*out = perf_schema_json();
	return *out ? 0 : -ENOMEM;
}

/* `config diff`: the options whose value is not the built-in default, and where it came from. */
static int cmd_config_diff(struct json_object *args, struct json_object **out, void *priv)
{
	static const char *const src[] = { [CFG_SRC_DEFAULT] = "default", [CFG_SRC_FILE] = "file",
					   [CFG_SRC_CMDLINE] = "cmdline", [CFG_SRC_RUNTIME] = "runtime" };
	struct json_object *diff = json_object_new_object();
	char buf[4096];
	int id;

	if (!diff)
		return -ENOMEM;
	for (id = 0; id < CFG_MAX; id++) {
		struct json_object *e;
		enum cfg_source s = cfg_source(id);

		cfg_get_string(id, buf, sizeof(buf));
		if (s == CFG_SRC_DEFAULT || !strcmp(buf, cfg_options[id].def))
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "default", json_object_new_string(cfg_options[id].def));
		json_object_object_add(e, "value", cfg_value_json(id));
		json_object_object_add(e, "source", json_object_new_string(src[s]));
		json_object_object_add(diff, cfg_options[id].name, e);
	}
	*out = json_object_new_object();
	if (!*out) {
		json_object_put(diff);
		return -ENOMEM;
	}
	json_object_object_add(*out, "diff", diff);
	return 0;
}

static int cmd_log_reopen(struct json_object *args, struct json_object **out, void *priv)
{
	int r = log_reopen();

	if (r) {
		*out = error_obj(-r, "cannot reopen the log file: %s", strerror(-r));
		return r;
	}
	*out = json_object_new_object();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(*out, "success", json_object_new_string("log reopened"));
	return 0;
}

static int cmd_log_dump(struct json_object *args, struct json_object **out, void *priv)
{
	unsigned n = log_dump_recent();

	*out = json_object_new_object();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(*out, "dumped", json_object_new_int64(n));
	return 0;
}

static const struct asok_cmd builtin_cmds[] = {
	{ "help", "", "list commands with their arguments", cmd_help },
	{ "config show", "", "every option with its current value", cmd_config_show },
	{ "config get", "var:str", "the value of one option", cmd_config_get },
	{ "config set", "var:str val:str", "change a runtime option", cmd_config_set },
	{ "perf dump", "", "counters and latency histograms", cmd_perf_dump },
	{ "perf reset", "", "zero every counter and histogram", cmd_perf_reset },
	{ "perf schema", "", "every counter and histogram with its type", cmd_perf_schema },
	{ "config diff", "", "options that differ from their default, and where the value came from",
	  cmd_config_diff },
	{ "log reopen", "", "open the log file again by name (after logrotate; SIGHUP does the same)",
	  cmd_log_reopen },
	{ "log dump", "", "write the recent in-memory log entries (debug_* = N/M) to the log", cmd_log_dump },
	{ "version", "", "loligo version of this daemon", cmd_version },
};

/* ---- serving ------------------------------------------------------ */

static struct json_object *dispatch(struct asok *a, struct json_object *req)
{
	struct json_object *pv, *args, *out = NULL, *err = NULL;
	struct asok_entry *e, found;
	const char *prefix;
	int r;

	if (!json_object_is_type(req, json_type_object))
		return error_obj(EINVAL, "request must be a JSON object with a \"prefix\"");
	if (!json_object_object_get_ex(req, "prefix", &pv) || !json_object_is_type(pv, json_type_string))
		return error_obj(EINVAL, "request has no \"prefix\" string (try {\"prefix\": \"help\"})");
	prefix = json_object_get_string(pv);

	pthread_mutex_lock(&a->lock);
	for (e = a->cmds; e; e = e->next)
		if (!strcmp(e->cmd.prefix, prefix))
			break;
	if (e)
		found = *e;
	pthread_mutex_unlock(&a->lock);
	if (!e)
		return error_obj(EOPNOTSUPP, "unknown command '%s' (try 'help')", prefix);

	args = check_args(found.cmd.prefix, found.cmd.args, req, &err);
	if (!args)
		return err;
	dout(ASOK, 5, "command '%s'", prefix);
	r = found.cmd.fn(args, &out, found.priv);
	json_object_put(args);
	if (r < 0 && !out)
		out = error_obj(-r, "%s: %s", prefix, strerror(-r));
	if (r < 0 && !json_object_object_get_ex(out, "errno", NULL))
		json_object_object_add(out, "errno", json_object_new_int(-r));
	if (!out)
		out = json_object_new_object();
	return out;
}

/* Read one request: up to a newline or the peer's shutdown(SHUT_WR). */
static struct json_object *read_request(int fd, struct json_object **err, bool *empty)
{
	char *buf = malloc(MAX_REQUEST + 1);
	size_t len = 0;
	uint64_t deadline = now_mono_ns() + IO_TIMEOUT_MS * 1000000ull;
	struct json_object *req = NULL;
	struct json_tokener *tok;
	char *nl = NULL;
	int r;

	if (!buf) {
		*err = error_obj(ENOMEM, "out of memory");
		return NULL;
	}
	for (;;) {
		ssize_t n = recv(fd, buf + len, MAX_REQUEST + 1 - len, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				*err = NULL;	/* nobody to answer */
				goto out_free;
			}
			r = io_wait_deadline(fd, POLLIN, deadline);
			if (r) {
				*err = error_obj(ETIMEDOUT, "request not complete after %d ms",
						 IO_TIMEOUT_MS);
				goto out_free;
			}
			continue;
		}
		if (n == 0)
			break;
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl)
			break;
		if (len > MAX_REQUEST) {
			*err = error_obj(EMSGSIZE, "request longer than %d bytes", MAX_REQUEST);
			goto out_free;
		}
	}
	if (nl)
		len = (size_t)(nl - buf);
	buf[len] = '\0';
	*empty = len == 0;
	if (len == 0 || strlen(buf) != len) {
		*err = error_obj(EINVAL, "empty or binary request; send one JSON object");
		goto out_free;
	}
	tok = json_tokener_new();
	if (!tok) {
		*err = error_obj(ENOMEM, "out of memory");
		goto out_free;
	}
	req = json_tokener_parse_ex(tok, buf, (int)len);
	if (!req || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		/* trailing blanks after the object are fine, anything else is not */
		bool trailing_ok = req && json_tokener_get_error(tok) == json_tokener_success;

		for (size_t i = trailing_ok ? json_tokener_get_parse_end(tok) : len; i < len; i++)
			if (!strchr(" \t\r", buf[i]))
				trailing_ok = false;
		if (!trailing_ok) {
			json_object_put(req);
			req = NULL;
			*err = error_obj(EINVAL, "request is not valid JSON");
		}
	}
	json_tokener_free(tok);
out_free:
	free(buf);
	return req;
}

static void serve_one(struct asok *a, int fd)
{
	struct json_object *req, *reply, *err = NULL;
	bool empty = false;

	req = read_request(fd, &err, &empty);
	if (!req) {
		if (err && empty) {
			/* a connect-and-close probe (asok_start's liveness check) */
			dout(ASOK, 10, "empty request");
			send_reply(fd, err);
			json_object_put(err);
		} else if (err) {
			dout(ASOK, 1, "bad request: %s",
			     json_object_get_string(json_object_object_get(err, "error")));
			send_reply(fd, err);
			json_object_put(err);
		}
		return;
	}
	reply = dispatch(a, req);
	if (send_reply(fd, reply))
		dout(ASOK, 1, "could not send the reply (client gone?)");
	json_object_put(reply);
	json_object_put(req);
}

static void *asok_thread(void *arg)
{
	struct asok *a = arg;
	struct pollfd p[2] = {
		{ .fd = a->lfd, .events = POLLIN },
		{ .fd = a->wake[0], .events = POLLIN },
	};

	pthread_setname_np(pthread_self(), "admin-socket");
	for (;;) {
		int fd, r = poll(p, 2, -1);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			derr(ASOK, "poll on %s: %s; admin socket stops", a->path, strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				dout(ASOK, 1, "accept on %s: %s", a->path, strerror(errno));
			if (errno == EMFILE || errno == ENFILE)
				poll(NULL, 0, 100);	/* do not spin while out of fds */
			continue;
		}
		serve_one(a, fd);
		close(fd);
	}
	return NULL;
}

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* Is a daemon answering at @path?  1 live, 0 stale or absent, -errno not a socket. */
static int probe_live(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	r = fill_addr(&sa, path);
	if (r)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 1 : 0;
	if (!r && errno != ECONNREFUSED && errno != ENOENT)
		r = -errno;
	close(fd);
	return r;
}

int asok_start(const char *path, struct asok **out)
{
	struct sockaddr_un sa;
	struct asok *a;
	struct stat st;
	int r;

	r = fill_addr(&sa, path);
	if (r)
		return r;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	snprintf(a->path, sizeof(a->path), "%s", path);
	pthread_mutex_init(&a->lock, NULL);
	a->tail = &a->cmds;
	a->lfd = -1;
	a->wake[0] = a->wake[1] = -1;

	r = probe_live(path);
	if (r == 1) {
		derr(ASOK, "admin socket %s is in use by a running daemon", path);
		r = -EADDRINUSE;
		goto out_free;
	}
	if (r < 0) {
		derr(ASOK, "admin socket path %s exists and is not a socket", path);
		goto out_free;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		r = -errno;
		goto out_free;
	}

	a->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->lfd < 0) {
		r = -errno;
		goto out_free;
	}
	if (bind(a->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		derr(ASOK, "cannot bind admin socket %s: %s", path, strerror(-r));
		goto out_close;
	}
	/*
	 * Owner only, whatever the umask: the socket is the access control of
	 * every command behind it (the MDS's `auth get` hands out keys).  Set
	 * before listen(), so nobody connects while the umask's mode holds.
	 */
	if (chmod(path, 0600) < 0 || listen(a->lfd, 16) < 0) {
		r = -errno;
		derr(ASOK, "cannot set up admin socket %s: %s", path, strerror(-r));
		goto out_unlink;
	}
	if (stat(path, &st) == 0) {
		a->dev = st.st_dev;
		a->ino = st.st_ino;
	}
	if (pipe2(a->wake, O_CLOEXEC) < 0) {
		r = -errno;
		goto out_unlink;
	}
	r = asok_register(a, builtin_cmds, (int)(sizeof(builtin_cmds) / sizeof(builtin_cmds[0])), a);
	if (r)
		goto out_pipe;
	r = -pthread_create(&a->thread, NULL, asok_thread, a);
	if (r)
		goto out_pipe;
	dout(ASOK, 1, "admin socket at %s", path);
	*out = a;
	return 0;

out_pipe:
	close(a->wake[0]);
	close(a->wake[1]);
out_unlink:
	unlink(path);
out_close:
	close(a->lfd);
out_free:
	while (a->cmds) {
		struct asok_entry *e = a->cmds;

		a->cmds = e->next;
		free(e);
	}
	pthread_mutex_destroy(&a->lock);
	free(a);
	return r;
}

int asok_register(struct asok *a, const struct asok_cmd *cmds, int n, void *priv)
{
	struct arg_spec specs[MAX_ARGS];
	struct asok_entry *e;
	int i, r = 0;

	for (i = 0; i < n; i++) {
		if (!cmds[i].prefix || !*cmds[i].prefix || !cmds[i].fn ||
		    parse_sig(cmds[i].args, specs, MAX_ARGS) < 0) {
			derr(ASOK, "refusing to register command '%s': bad signature '%s'",
			     cmds[i].prefix ? cmds[i].prefix : "(null)", cmds[i].args ? cmds[i].args : "");
			return -EINVAL;
		}
	}
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < n; i++) {
		for (e = a->cmds; e; e = e->next) {
			if (!strcmp(e->cmd.prefix, cmds[i].prefix)) {
				derr(ASOK, "command '%s' registered twice", cmds[i].prefix);
				r = -EEXIST;
				goto out_unlock;
			}
		}
	}
	for (i = 0; i < n; i++) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			r = -ENOMEM;
			goto out_unlock;
		}
		e->cmd = cmds[i];
		if (!e->cmd.args)
			e->cmd.args = "";
		e->priv = priv;
		*a->tail = e;
		a->tail = &e->next;
	}
out_unlock:
	pthread_mutex_unlock(&a->lock);
	return r;
}

void asok_stop(struct asok *a)
{
	struct stat st;
	char c = 1;

	if (!a)
		return;
	if (write(a->wake[1], &c, 1) < 0)
		derr(ASOK, "cannot wake the admin socket thread: %s", strerror(errno));
	pthread_join(a->thread, NULL);
	/* another daemon may have taken the path over since: leave its socket */
	if (stat(a->path, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino)
		unlink(a->path);
	close(a->lfd);
	close(a->wake[0]);
	close(a->wake[1]);
	while (a->cmds) {
		struct asok_entry *e = a->cmds;

		a->cmds = e->next;
		free(e);
	}
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* ---- client ------------------------------------------------------- */

int asok_request(const char *path, struct json_object *req, struct json_object **reply,
		 int timeout_ms)
{
	struct sockaddr_un sa;
	uint64_t deadline = now_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 10000) * 1000000ull;
	unsigned char hdr[4];
	const char *s;
	char *buf = NULL;
	uint32_t len;
	int fd, r;

	*reply = NULL;
	r = fill_addr(&sa, path);
	if (r)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		goto out_close;
	}
	s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	r = io_send_all_deadline(fd, s, strlen(s), deadline);
	if (!r)
		r = io_send_all_deadline(fd, "\n", 1, deadline);
	if (r)
		goto out_close;
	shutdown(fd, SHUT_WR);

	r = io_recv_all_deadline(fd, hdr, 4, deadline);
	if (r) {
		if (r == -EPIPE)
			r = -EPROTO;
		goto out_close;
	}
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	if (len > MAX_REPLY) {
		r = -EPROTO;
		goto out_close;
	}
	buf = malloc((size_t)len + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out_close;
	}
	r = io_recv_all_deadline(fd, buf, len, deadline);
	if (r) {
		if (r == -EPIPE)
			r = -EPROTO;
		goto out_free;
	}
	buf[len] = '\0';
	*reply = json_tokener_parse(buf);
	if (!*reply)
		r = -EPROTO;
out_free:
	free(buf);
out_close:
	close(fd);
	return r;
}
