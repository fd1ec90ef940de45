/*
 * asok_cmd.c - turn command words into an admin-socket request.
 *
 * `loligo daemon SOCK config set debug_mds 10` has no idea, by itself,
 * where the command ends and its arguments begin.  The daemon knows: we
 * ask it for `help` first, take the longest registered prefix that matches
 * the leading words, and map the remaining words onto that command's
 * signature ("var:str val:str"), in order, or by name for "name=value"
 * words (`client evict id=4`).  The server checks the types, so we send
 * the words as strings and let it say what is wrong with them.
 *
 * If the daemon does not know the words at all, we still send them, as one
 * prefix: its "unknown command" answer is what we report.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/admin_sock.h"
#include "tools/cli/cli.h"

#define MAX_SIG_ARGS 16

/* Report a transport failure in the words a user can act on. */
int cli_io_exit(const char *sock, const char *what, int r, int timeout_ms, bool quiet)
{
	switch (-r) {
	case ENOENT:
	case ECONNREFUSED:
		if (!quiet)
			fprintf(stderr, "no daemon at %s: is it running?\n", sock);
		return EXIT_NODAEMON;
	case ETIMEDOUT:
		if (!quiet)
			fprintf(stderr, "%s (%s) did not answer within %d ms\n", what, sock, timeout_ms);
		return EXIT_TIMEOUT;
	case EPROTO:
		if (!quiet)
			fprintf(stderr, "%s (%s) sent a reply that is not valid admin-socket JSON\n", what, sock);
		return EXIT_PROTO;
	case ENAMETOOLONG:
		if (!quiet)
			fprintf(stderr, "socket path too long: %s\n", sock);
		return EXIT_USAGE;
	default:
		if (!quiet)
			fprintf(stderr, "cannot talk to %s (%s): %s\n", what, sock, strerror(-r));
	}
	return EXIT_NODAEMON;
}

static int report_io_error(const char *sock, const char *what, int r, int timeout_ms)
{
	return cli_io_exit(sock, what, r, timeout_ms, false);
}

int asok_fetch(const char *sock, const char *what, const char *prefix, int timeout_ms, bool quiet,
	       struct json_object **out)
{
	struct json_object *req = json_object_new_object(), *v;
	int r;

	*out = NULL;
	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	r = asok_request(sock, req, out, timeout_ms);
	json_object_put(req);
	if (r)
		return cli_io_exit(sock, what, r, timeout_ms, quiet);
	if (json_object_is_type(*out, json_type_object) && json_object_object_get_ex(*out, "errno", &v) &&
	    json_object_object_get_ex(*out, "error", NULL)) {
		if (!quiet)
			fprintf(stderr, "%s: %s: %s\n", what, prefix,
				json_object_get_string(json_object_object_get(*out, "error")));
		return EXIT_FAIL;
	}
	return 0;
}

/* "ENOENT"-style name for the errors users see most */
static const char *errno_name(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENOSYS: return "ENOSYS";
	case ENOTEMPTY: return "ENOTEMPTY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EMSGSIZE: return "EMSGSIZE";
	}
	return "error";
}

/*
 * The longest command prefix in @help matching the first words of @words.
 * Return: number of words it spans (0: none) and its signature in *@sig.
 */
static int match_prefix(struct json_object *help, int nwords, char **words, const char **sig)
{
	struct json_object *cmds, *c, *p, *a;
	size_t i, n;
	int best = 0;

	if (!json_object_object_get_ex(help, "commands", &cmds) ||
	    !json_object_is_type(cmds, json_type_array))
		return 0;
	n = json_object_array_length(cmds);
	for (i = 0; i < n; i++) {
		const char *pre, *s;
		int w = 0;

		c = json_object_array_get_idx(cmds, i);
		if (!json_object_object_get_ex(c, "prefix", &p) || !json_object_is_type(p, json_type_string))
			continue;
		pre = json_object_get_string(p);
		/* does "a b c" equal words[0..w) joined by single spaces? */
		s = pre;
		while (w < nwords) {
			size_t len = strlen(words[w]);

			if (strncmp(s, words[w], len) || (s[len] != ' ' && s[len] != '\0'))
				break;
			w++;
			s += len;
			if (!*s)
				break;
			s++;
		}
		if (*s || w <= best)
			continue;
		best = w;
		*sig = json_object_object_get_ex(c, "args", &a) ? json_object_get_string(a) : "";
	}
	return best;
}

/* Split a signature into argument names (without type). */
static int sig_names(const char *sig, char names[][64], int max)
{
	int n = 0;

	while (sig && *sig && n < max) {
		size_t t, colon;

		while (*sig == ' ')
			sig++;
		t = strcspn(sig, " ");
		if (!t)
			break;
		colon = strcspn(sig, ":");
		if (colon > t)
			colon = t;
		snprintf(names[n], sizeof(names[n]), "%.*s", (int)colon, sig);
		n++;
		sig += t;
	}
	return n;
}

/*
 * Build the request for @words given the matched prefix length and signature.
 * Return: 0 or EXIT_USAGE after printing why.
 */
static int build_request(struct json_object *req, int plen, const char *sig, int nwords, char **words)
{
	char names[MAX_SIG_ARGS][64];
	bool used[MAX_SIG_ARGS] = { false };
	int nnames = sig_names(sig, names, MAX_SIG_ARGS), i, j;
	char prefix[512] = "";

	for (i = 0; i < plen; i++) {
		size_t l = strlen(prefix);

		snprintf(prefix + l, sizeof(prefix) - l, "%s%s", i ? " " : "", words[i]);
	}
	json_object_object_add(req, "prefix", json_object_new_string(prefix));

	/* name=value words first, so positional ones fill the remaining slots */
	for (i = plen; i < nwords; i++) {
		char *eq = strchr(words[i], '=');

		if (!eq)
			continue;
		for (j = 0; j < nnames; j++) {
			if (strlen(names[j]) == (size_t)(eq - words[i]) &&
			    !strncmp(names[j], words[i], (size_t)(eq - words[i])))
				break;
		}
		if (j == nnames)
			continue;	/* not a known name: a positional value with '=' */
		if (used[j]) {
			fprintf(stderr, "argument '%s' given twice\n", names[j]);
			return EXIT_USAGE;
		}
		used[j] = true;
		json_object_object_add(req, names[j], json_object_new_string(eq + 1));
		words[i] = NULL;
	}
	for (i = plen, j = 0; i < nwords; i++) {
		if (!words[i])
			continue;
		while (j < nnames && used[j])
			j++;
		if (j == nnames) {
			fprintf(stderr, "too many arguments for '%s' (usage: %s %s)\n", prefix, prefix,
				*sig ? sig : "(no arguments)");
			return EXIT_USAGE;
		}
		used[j] = true;
		json_object_object_add(req, names[j], json_object_new_string(words[i]));
	}
	return 0;
}

int run_asok_command(const char *sock, const char *what, int nwords, char **words,
		     enum cli_format fmt, int timeout_ms)
{
	struct json_object *help_req, *help = NULL, *req, *reply = NULL, *v;
	const char *sig = "";
	char *help_words[] = { "help" };
	int plen, r, code;

	if (nwords == 0) {
		words = help_words;
		nwords = 1;
	}

	help_req = json_object_new_object();
	json_object_object_add(help_req, "prefix", json_object_new_string("help"));
	r = asok_request(sock, help_req, &help, timeout_ms);
	json_object_put(help_req);
	if (r)
		return report_io_error(sock, what, r, timeout_ms);

	req = json_object_new_object();
	plen = match_prefix(help, nwords, words, &sig);
	if (plen == 0) {
		/* unknown here: send it whole and let the daemon say so */
		plen = nwords;
		sig = "";
	}
	if (build_request(req, plen, sig, nwords, words))
		goto out_usage;
	json_object_put(help);
	help = NULL;

	r = asok_request(sock, req, &reply, timeout_ms);
	if (r) {
		code = report_io_error(sock, what, r, timeout_ms);
		goto out_put;
	}
	if (json_object_is_type(reply, json_type_object) &&
	    json_object_object_get_ex(reply, "errno", &v) && json_object_object_get_ex(reply, "error", NULL)) {
		int e = json_object_get_int(v);
		const char *msg = json_object_get_string(json_object_object_get(reply, "error"));

		if (e == EOPNOTSUPP && strstr(msg, "unknown command"))
			fprintf(stderr, "%s does not know the command '%s' (see 'loligo daemon %s help')\n",
				what, json_object_get_string(json_object_object_get(req, "prefix")), sock);
		else
			fprintf(stderr, "Error %s: %s\n", errno_name(e), msg);
		if (fmt != FMT_PLAIN)
			render(stdout, reply, fmt, NULL);
		code = EXIT_FAIL;
		goto out_put;
	}
	if (fmt != FMT_PLAIN ||
	    !cli_pretty(stdout, json_object_get_string(json_object_object_get(req, "prefix")), reply))
		render(stdout, reply, fmt, json_object_get_string(json_object_object_get(req, "prefix")));
	code = 0;
out_put:
	json_object_put(reply);
	json_object_put(req);
	return code;
out_usage:
	json_object_put(help);
	json_object_put(req);
	return EXIT_USAGE;
}
