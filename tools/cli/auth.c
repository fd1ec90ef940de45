/*
 * auth.c - `loligo auth ...`: the keys clients authenticate to the MDS with.
 *
 *   loligo auth get-or-create client.NAME [-o FILE] [--keyring MDS_KEYRING]
 *   loligo auth get client.NAME [-o FILE] [--keyring MDS_KEYRING]
 *   loligo auth ls [--keyring MDS_KEYRING]
 *   loligo auth rm client.NAME [--keyring MDS_KEYRING]
 *
 * Without --keyring the command goes to the running MDS through its admin
 * socket (the MDS holds the keyring in memory and rewrites its file); with
 * --keyring it edits that keyring file directly, for setting up before the
 * MDS runs (vstart, the tests, a new installation).  -o FILE writes a
 * client keyring holding just that entity's key, mode 0600, for the
 * client's client_keyring; without -o the keyring text goes to stdout.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/admin_sock.h"
#include "mds_proto/proto.h"
#include "tools/cli/cli.h"

static void auth_usage(void)
{
	fprintf(stderr,
		"usage: loligo auth get-or-create client.NAME [-o FILE] [--keyring MDS_KEYRING]\n"
		"       loligo auth get client.NAME [-o FILE] [--keyring MDS_KEYRING]\n"
		"       loligo auth ls [--keyring MDS_KEYRING]\n"
		"       loligo auth rm client.NAME [--keyring MDS_KEYRING]\n"
		"without --keyring the running MDS is asked (its admin socket); -o writes a client keyring (mode 0600)\n");
}

/* Write @name's key to @out (a keyring file) or stdout. */
static int emit_key(const char *name, const uint8_t secret[MDSP_KEY_LEN], const char *out)
{
	struct mdsp_keyring kr = { 0 };
	char err[512], b64[64];
	int r;

	if (!out) {
		mdsp_key_base64(secret, b64, sizeof(b64));
		printf("[%s]\n\tkey = %s\n", name, b64);
		return 0;
	}
	r = mdsp_keyring_add(&kr, name, secret);
	if (!r)
		r = mdsp_keyring_save(out, &kr, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", strerror(-r));
	mdsp_keyring_free(&kr);
	if (r) {
		fprintf(stderr, "loligo: %s\n", err);
		return EXIT_FAIL;
	}
	fprintf(stderr, "loligo: wrote the key of %s to %s (give it to the client as client_keyring)\n", name,
		out);
	return 0;
}

/* The keyring file itself. */
static int offline(const char *verb, const char *name, const char *keyring, const char *out, enum cli_format fmt)
{
	struct mdsp_keyring kr;
	const struct mdsp_key *k;
	char err[1024];
	uint8_t secret[MDSP_KEY_LEN];
	int r;

	r = mdsp_keyring_load(keyring, &kr, err, sizeof(err));
	if (r == -ENOENT && !strcmp(verb, "get-or-create"))
		r = 0;          /* a new keyring */
	if (r) {
		fprintf(stderr, "loligo: %s\n", err);
		return EXIT_FAIL;
	}
	if (!strcmp(verb, "ls")) {
		struct json_object *o = json_object_new_object(), *a = json_object_new_array();

		for (size_t i = 0; i < kr.n; i++)
			json_object_array_add(a, json_object_new_string(kr.keys[i].name));
		json_object_object_add(o, "keyring", json_object_new_string(keyring));
		json_object_object_add(o, "entities", a);
		render(stdout, o, fmt, "auth ls");
		json_object_put(o);
		mdsp_keyring_free(&kr);
		return 0;
	}
	k = mdsp_keyring_find(&kr, name);
	if (!strcmp(verb, "rm")) {
		r = mdsp_keyring_remove(&kr, name);
		if (r)
			fprintf(stderr, "loligo: %s has no key for %s\n", keyring, name);
		else if ((r = mdsp_keyring_save(keyring, &kr, err, sizeof(err))))
			fprintf(stderr, "loligo: %s\n", err);
		mdsp_keyring_free(&kr);
		return r ? EXIT_FAIL : 0;
	}
	if (!k && !strcmp(verb, "get")) {
		fprintf(stderr, "loligo: %s has no key for %s (create one with 'loligo auth get-or-create %s')\n",
			keyring, name, name);
		mdsp_keyring_free(&kr);
		return EXIT_FAIL;
	}
	if (!k) {
		r = mdsp_random(secret, sizeof(secret));
		if (!r)
			r = mdsp_keyring_add(&kr, name, secret);
		if (!r && (r = mdsp_keyring_save(keyring, &kr, err, sizeof(err))))
			fprintf(stderr, "loligo: %s\n", err);
		else if (r)
			fprintf(stderr, "loligo: cannot add %s: %s\n", name, strerror(-r));
		if (r) {
			mdsp_keyring_free(&kr);
			return EXIT_FAIL;
		}
		k = mdsp_keyring_find(&kr, name);
	}
	memcpy(secret, k->secret, sizeof(secret));
	mdsp_keyring_free(&kr);
	r = emit_key(name, secret, out);
	memset(secret, 0, sizeof(secret));
	return r;
}

/* The running MDS, through its admin socket. */
static int online(const char *verb, const char *name, const char *sock, const char *out, enum cli_format fmt,
		  int timeout_ms)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	char prefix[64];
	uint8_t secret[MDSP_KEY_LEN];
	int r;

	snprintf(prefix, sizeof(prefix), "auth %s", verb);
	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (name)
		json_object_object_add(req, "entity", json_object_new_string(name));
	r = asok_request(sock, req, &rep, timeout_ms);
	json_object_put(req);
	if (r) {
		return cli_io_exit(sock, "mds.0", r, timeout_ms, false);
	}
	if (json_object_object_get_ex(rep, "error", &v)) {
		struct json_object *e;
		int err = json_object_object_get_ex(rep, "errno", &e) ? json_object_get_int(e) : EIO;

		fprintf(stderr, "loligo: %s: %s\n", prefix, json_object_get_string(v));
		json_object_put(rep);
		(void)err;
		return EXIT_FAIL;
	}
	if (!strcmp(verb, "ls") || !strcmp(verb, "rm")) {
		render(stdout, rep, fmt, prefix);
		json_object_put(rep);
		return 0;
	}
	if (!json_object_object_get_ex(rep, "key", &v)) {
		fprintf(stderr, "loligo: %s: the reply has no key\n", prefix);
		json_object_put(rep);
		return EXIT_PROTO;
	}
	r = mdsp_key_unbase64(json_object_get_string(v), secret);
	json_object_put(rep);
	if (r) {
		fprintf(stderr, "loligo: %s: the key in the reply is not base64 of %d bytes\n", prefix, MDSP_KEY_LEN);
		return EXIT_PROTO;
	}
	r = emit_key(name, secret, out);
	memset(secret, 0, sizeof(secret));
	return r;
}

int cli_auth(int n, char **words, enum cli_format fmt, int timeout_ms, int (*find_sock)(char *buf, size_t len, void *arg),
	     void *arg)
{
	const char *verb, *name = NULL, *keyring = NULL, *out = NULL;
	char sock[4096];
	int i, r;

	if (n < 1) {
		auth_usage();
		return EXIT_USAGE;
	}
	verb = words[0];
	for (i = 1; i < n; i++) {
		if ((!strcmp(words[i], "-o") || !strcmp(words[i], "--keyring")) && i + 1 < n) {
			if (words[i][1] == 'o')
				out = words[++i];
			else
				keyring = words[++i];
		} else if (!strncmp(words[i], "--keyring=", 10)) {
			keyring = words[i] + 10;
		} else if (!strncmp(words[i], "entity=", 7) && !name) {
			name = words[i] + 7;
		} else if (words[i][0] != '-' && !name) {
			name = words[i];
		} else {
			fprintf(stderr, "loligo: auth %s: unexpected '%s'\n", verb, words[i]);
			auth_usage();
			return EXIT_USAGE;
		}
	}
	if (strcmp(verb, "get-or-create") && strcmp(verb, "get") && strcmp(verb, "ls") && strcmp(verb, "rm")) {
		fprintf(stderr, "loligo: unknown auth command '%s'\n", verb);
		auth_usage();
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "ls") ? name != NULL : !name) {
		auth_usage();
		return EXIT_USAGE;
	}
	if (name && !mdsp_auth_name_valid(name)) {
		fprintf(stderr, "loligo: '%s' is not an entity name: client.NAME with letters, digits, '_', '.', '-'\n",
			name);
		return EXIT_USAGE;
	}
	if (out && (!strcmp(verb, "ls") || !strcmp(verb, "rm"))) {
		fprintf(stderr, "loligo: auth %s writes no key: -o does not apply\n", verb);
		return EXIT_USAGE;
	}
	if (keyring)
		return offline(verb, name, keyring, out, fmt);
	r = find_sock(sock, sizeof(sock), arg);
	if (r)
		return r;
	return online(verb, name, sock, out, fmt, timeout_ms);
}
