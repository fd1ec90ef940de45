/*
 * admin_sock.h - the admin socket every daemon serves (ceph's "asok").
 *
 * A unix stream socket.  A request is one JSON object, terminated by a
 * newline or by the client shutting down its write side:
 *     {"prefix": "config get", "var": "debug_mds"}
 * The reply is a 4-byte big-endian length followed by that many bytes of
 * JSON.  A failing command answers {"error": "...", "errno": N}.
 *
 * Commands have typed signatures in one table per registrant; `help` is
 * generated from all of them.  Argument spec is a space-separated list of
 * "name:type" with type str, int, bool, or "name:type?" for optional ones;
 * the server checks presence and types before calling the handler, so a
 * handler never sees a missing or mistyped required argument.  Positional
 * CLI words (`loligo daemon SOCK config set debug_mds 10`) are mapped to the
 * arguments in order by the CLI using the signatures from `help`.
 *
 * Built in: help, config show, config get var:str, config set var:str val:str,
 * config diff, perf dump, perf reset, perf schema, log reopen, log dump,
 * version.
 */
#ifndef LOLIGO_COMMON_ADMIN_SOCK_H
#define LOLIGO_COMMON_ADMIN_SOCK_H

struct json_object;
struct asok;

/* version reported by `version` on every admin socket and by `loligo --version` */
#define LOLIGO_VERSION "0.1.0"

/**
 * asok_handler_t - run one command.
 * @args: the request object (owned by the caller; read only).
 * @out:  set to a new JSON object (ownership passes to the server).
 * Return: 0, or -errno; on error *out may hold {"error": "..."} or be NULL.
 */
typedef int (*asok_handler_t)(struct json_object *args, struct json_object **out, void *priv);

struct asok_cmd {
	const char *prefix;  /* "session ls" */
	const char *args;    /* "id:int force:bool?" or "" */
	const char *help;
	asok_handler_t fn;
};

/**
 * asok_start - bind @path (an existing stale socket is replaced; a live one
 * owned by another running daemon is refused with -EADDRINUSE) and serve it
 * from a thread of its own.
 * Return: 0 or -errno.
 */
int asok_start(const char *path, struct asok **out);

/** asok_register - add @n commands; @priv is passed to their handlers. */
int asok_register(struct asok *a, const struct asok_cmd *cmds, int n, void *priv);

/** asok_stop - stop serving, unlink the socket, free everything. */
void asok_stop(struct asok *a);

/**
 * asok_request - client side: send @req to the socket at @path and return
 * the parsed reply in @reply.  @timeout_ms bounds the whole exchange.
 * Return: 0 or -errno (-ECONNREFUSED: no daemon, -ETIMEDOUT, -EPROTO).
 * -ENOENT means no socket file at all.  A daemon-side failure is still a
 * return of 0: the reply then holds "error" and "errno" (EOPNOTSUPP for a
 * command the daemon does not know, EINVAL for bad or missing arguments).
 */
int asok_request(const char *path, struct json_object *req, struct json_object **reply, int timeout_ms);

#endif
