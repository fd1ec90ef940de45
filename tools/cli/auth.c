/*
 * auth.c - `loligo auth ...`: the keys clients authenticate to the MDS with.
 *
 *   loligo auth get-or-create client.NAME [mds CAPS] [-o FILE] [--keyring MDS_KEYRING]
 *   loligo auth get client.NAME [-o FILE] [--keyring MDS_KEYRING]
 *   loligo auth caps client.NAME [mds CAPS] [--keyring MDS_KEYRING]
 *   loligo fs authorize FSNAME client.NAME PATH r|rw [root_squash] [-o FILE] [--keyring MDS_KEYRING]
 *   loligo auth ls [--keyring MDS_KEYRING]
 *   loligo auth rm client.NAME [--keyring MDS_KEYRING]
 *
 * Without --keyring the command goes to the running MDS through its admin
 * socket (the MDS holds the keyring in memory and rewrites its file); with
 * --keyring it edits that keyring file directly, for setting up before the
 * MDS runs (vstart, the tests, a new installation).  -o FILE writes a
 * client keyring holding just that entity's key, mode 0600, for the
 * client's client_keyring; without -o the keyring text goes to stdout.
 *
 * CAPS is cephx's caps mds string ("allow rw path=/home/alice, allow r"),
 * checked here (mdsp_mdscaps_parse) before anything is asked or written;
 * `fs authorize` is the short form of get-or-create with
 * "allow rw path=PATH".
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
		"usage: loligo auth get-or-create client.NAME [mds CAPS] [-o FILE] [--keyring MDS_KEYRING]\n"
		"       loligo auth get client.NAME [-o FILE] [--keyring MDS_KEYRING]\n"
		"       loligo auth caps client.NAME [mds CAPS] [--keyring MDS_KEYRING]\n"
		"       loligo fs authorize FSNAME client.NAME PATH r|rw [root_squash] [-o FILE] [--keyring MDS_KEYRING]\n"
		"CAPS: 'allow r|rw [path=/DIR] [root_squash] [uid=N] [gids=A,B]', clauses separated by ','\n"
		"       loligo auth ls [--keyring MDS_KEYRING]\n"
		"       loligo auth rm client.NAME [--keyring MDS_KEYRING]\n"
		"without --keyring the running MDS is asked (its admin socket); -o writes a client keyring (mode 0600)\n");
}

/* Write @name's key to @out (a keyring file: the key only, a client needs
 * no caps) or, with its caps mds, to stdout. */
static int emit_key(const char *name, const uint8_t secret[MDSP_KEY_LEN], const char *caps, const char *out)
{
	struct mdsp_keyring kr = { 0 };
	char err[512], b64[64];
	int r;

	if (!out) {
		mdsp_key_base64(secret, b64, sizeof(b64));
		printf("[%s]\n\tkey = %s\n\tcaps mds = \"%s\"\n", name, b64, caps && *caps ? caps : "allow rw");
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
static int offline(const char *verb, const char *name, const char *caps, const char *keyring, const char *out,
		   enum cli_format fmt)
{
	struct mdsp_keyring kr;
	const struct mdsp_key *k;
	char err[MDSP_MDSCAPS_STR_MAX + 512], kcaps[MDSP_MDSCAPS_STR_MAX] = "";
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

		struct json_object *c = json_object_new_object();

		for (size_t i = 0; i < kr.n; i++) {
			json_object_array_add(a, json_object_new_string(kr.keys[i].name));
			json_object_object_add(c, kr.keys[i].name,
					       json_object_new_string(kr.keys[i].caps ? kr.keys[i].caps : "allow rw"));
		}
		json_object_object_add(o, "keyring", json_object_new_string(keyring));
		json_object_object_add(o, "entities", a);
		json_object_object_add(o, "caps_mds", c);
		render(stdout, o, fmt, "auth ls");
		json_object_put(o);
		mdsp_keyring_free(&kr);
		return 0;
	}
	k = mdsp_keyring_find(&kr, name);
	if (!strcmp(verb, "caps")) {
		r = mdsp_keyring_set_caps(&kr, name, caps && *caps ? caps : NULL, err, sizeof(err));
		if (!r)
			r = mdsp_keyring_save(keyring, &kr, err, sizeof(err));
		if (r)
			fprintf(stderr, "loligo: %s\n", err);
		else
			printf("caps mds of %s: %s\n", name, caps && *caps ? caps : "allow rw");
		mdsp_keyring_free(&kr);
		return r ? EXIT_FAIL : 0;
	}
	if (k && caps && strcmp(k->caps ? k->caps : "", caps)) {
		fprintf(stderr, "loligo: key for %s exists but its caps mds are '%s', not '%s': change them with "
				"'loligo auth caps %s mds \"%s\"'\n", name, k->caps ? k->caps : "allow rw", caps, name, caps);
		mdsp_keyring_free(&kr);
		return EXIT_FAIL;
	}
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
		if (!r && caps && (r = mdsp_keyring_set_caps(&kr, name, caps, err, sizeof(err)))) {
			fprintf(stderr, "loligo: %s\n", err);
			mdsp_keyring_free(&kr);
			return EXIT_FAIL;
		}
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
	snprintf(kcaps, sizeof(kcaps), "%s", k->caps ? k->caps : "");
	mdsp_keyring_free(&kr);
	r = emit_key(name, secret, kcaps, out);
	memset(secret, 0, sizeof(secret));
	return r;
}

/* The running MDS, through its admin socket. */
static int online(const char *verb, const char *name, const char *caps, const char *sock, const char *out,
		  enum cli_format fmt, int timeout_ms)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	char prefix[64];
	uint8_t secret[MDSP_KEY_LEN];
	int r;

	snprintf(prefix, sizeof(prefix), "auth %s", verb);
	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (name)
		json_object_object_add(req, "entity", json_object_new_string(name));
	if (caps)
		json_object_object_add(req, "caps", json_object_new_string(caps));
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
	if (!strcmp(verb, "ls") || !strcmp(verb, "rm") || !strcmp(verb, "caps")) {
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
	{
		struct json_object *c, *mv;
		char kcaps[MDSP_MDSCAPS_STR_MAX] = "";

		if (json_object_object_get_ex(rep, "caps", &c) && json_object_object_get_ex(c, "mds", &mv))
			snprintf(kcaps, sizeof(kcaps), "%s", json_object_get_string(mv));
		json_object_put(rep);
		if (!r)
			r = emit_key(name, secret, kcaps, out);
		else
			r = -EINVAL;
	}
	memset(secret, 0, sizeof(secret));
	if (r == -EINVAL) {
		fprintf(stderr, "loligo: %s: the key in the reply is not base64 of %d bytes\n", prefix, MDSP_KEY_LEN);
		return EXIT_PROTO;
	}
	return r;
}

int cli_auth(int n, char **words, enum cli_format fmt, int timeout_ms, int (*find_sock)(char *buf, size_t len, void *arg),
	     void *arg)
{
	const char *verb, *name = NULL, *keyring = NULL, *out = NULL, *caps = NULL;
	bool have_caps = false;
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
		} else if (name && i + 1 < n && !strcmp(words[i], "mds")) {
			caps = words[++i];
			have_caps = true;
		} else if (name && i + 1 < n && (!strcmp(words[i], "mon") || !strcmp(words[i], "osd"))) {
			fprintf(stderr, "loligo: auth %s: loligo has only mds caps ('%s %s' does not apply): the "
					"data store's own keys guard its objects\n", verb, words[i], words[i + 1]);
			return EXIT_USAGE;
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
	if (strcmp(verb, "get-or-create") && strcmp(verb, "get") && strcmp(verb, "ls") && strcmp(verb, "rm") &&
	    strcmp(verb, "caps")) {
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
	if (have_caps && strcmp(verb, "get-or-create") && strcmp(verb, "caps")) {
		fprintf(stderr, "loligo: auth %s takes no caps (get-or-create and caps do)\n", verb);
		return EXIT_USAGE;
	}
	if (caps && *caps) {
		struct mdsp_mdscaps *p = malloc(sizeof(*p));
		char err[MDSP_MDSCAPS_STR_MAX + 256];

		r = p ? mdsp_mdscaps_parse(caps, p, err, sizeof(err)) : -ENOMEM;
		free(p);
		if (r) {
			fprintf(stderr, "loligo: auth %s: %s\n", verb, r == -ENOMEM ? "out of memory" : err);
			return EXIT_USAGE;
		}
	}
	if (out && (!strcmp(verb, "ls") || !strcmp(verb, "rm") || !strcmp(verb, "caps"))) {
		fprintf(stderr, "loligo: auth %s writes no key: -o does not apply\n", verb);
		return EXIT_USAGE;
	}
	if (keyring)
		return offline(verb, name, caps, keyring, out, fmt);
	r = find_sock(sock, sizeof(sock), arg);
	if (r)
		return r;
	return online(verb, name, caps, sock, out, fmt, timeout_ms);
}

int cli_fs_authorize(int n, char **words, enum cli_format fmt, int timeout_ms,
		     int (*find_sock)(char *buf, size_t len, void *arg), void *arg)
{
	char caps[MDSP_MDSCAPS_STR_MAX], *w[16];
	int i, k = 0, pos = 0;
	const char *fsname = NULL, *name = NULL, *path = NULL, *perm = NULL;
	bool squash = false;

	w[k++] = "get-or-create";
	for (i = 0; i < n; i++) {
		if ((!strcmp(words[i], "-o") || !strcmp(words[i], "--keyring")) && i + 1 < n && k < 13) {
			w[k++] = words[i];
			w[k++] = words[++i];
		} else if (!strncmp(words[i], "--keyring=", 10) && k < 14) {
			w[k++] = words[i];
		} else if (!strcmp(words[i], "root_squash")) {
			squash = true;
		} else if (pos == 0) {
			fsname = words[i], pos++;
		} else if (pos == 1) {
			name = words[i], pos++;
		} else if (pos == 2) {
			path = words[i], pos++;
		} else if (pos == 3) {
			perm = words[i], pos++;
		} else {
			pos = 99;
		}
	}
	if (pos != 4 || (strcmp(perm, "r") && strcmp(perm, "rw"))) {
		fprintf(stderr, "usage: loligo fs authorize FSNAME client.NAME PATH r|rw [root_squash] [-o FILE] "
				"[--keyring MDS_KEYRING]\n");
		return EXIT_USAGE;
	}
	(void)fsname;   /* one filesystem per MDS: any name is it */
	if (snprintf(caps, sizeof(caps), "allow %s path=%s%s", perm, path, squash ? " root_squash" : "") >=
	    (int)sizeof(caps)) {
		fprintf(stderr, "loligo: fs authorize: the path is too long\n");
		return EXIT_USAGE;
	}
	w[k++] = (char *)name;
	w[k++] = "mds";
	w[k++] = caps;
	return cli_auth(k, w, fmt, timeout_ms, find_sock, arg);
}
