/*
 * auth.c - who may talk to the MDS: the keyring, the AUTH exchange every
 * connection starts with, and the auth admin commands.
 *
 * A connection's reader thread runs the exchange (see mds_proto/auth.c for
 * the construction):
 *
 *   HELLO {name, Nc, HAVE_KEY?}  ->  CHALLENGE {Ns, REQUIRED?}
 *   PROOF {HMAC(K, ...)}         ->  OK {the MDS's proof}, MACs from now on
 *
 * A client without a key skips PROOF; with auth_required the MDS refuses it
 * at HELLO.  Each refusal is an AUTH REJECT whose errno and reason say what
 * is wrong and what to do (ENOKEY: the MDS holds no key for the name;
 * EKEYREJECTED: the proof is wrong, i.e. the client has another key; EACCES:
 * no key offered where one is required), a log line naming the peer, and
 * the connection closed.  Nothing about the connection is trusted before
 * CHALLENGE: the reader takes only small frames (mds_unauth_max_payload)
 * until the connection is authenticated.
 *
 * The keyring (mds_keyring) is read at start-up and changed only by the
 * admin commands here, which write it back atomically (temp file, rename,
 * mode 0600) before they answer, so a restart sees what the admin was told.
 * A key removed or replaced takes effect for new connections; connections
 * already authenticated keep their derived keys until they close (the
 * admin evicts a session to cut it off at once).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "mds/mds.h"
#include "mds/auth.h"
#include "mds/net.h"

int auth_load(struct mds *m, char *err, size_t errlen)
{
	int r;

	pthread_mutex_init(&m->keys_lock, NULL);
	m->auth_required = cfg_bool(CFG_auth_required);
	m->keyring_path = cfg_strdup(CFG_mds_keyring);
	if (!m->keyring_path)
		return -ENOMEM;
	memset(&m->keys, 0, sizeof(m->keys));
	if (!*m->keyring_path) {
		if (!m->auth_required)
			return 0;
		snprintf(err, errlen, "auth_required is on but mds_keyring is empty: set mds_keyring to a keyring "
				      "file (loligo auth get-or-create client.NAME --keyring FILE makes one)");
		return -EINVAL;
	}
	r = mdsp_keyring_load(m->keyring_path, &m->keys, err, errlen);
	if (r == -ENOENT && !m->auth_required) {
		dinfo(MDS, "no keyring at %s (mds_keyring): only clients without a key are served", m->keyring_path);
		return 0;
	}
	if (r == -ENOENT) {
		snprintf(err, errlen, "keyring %s (mds_keyring) does not exist and auth_required is on: create it "
				      "with 'loligo auth get-or-create client.admin --keyring %s -o CLIENT_KEYRING'",
			 m->keyring_path, m->keyring_path);
		return r;
	}
	if (r)
		return r;
	dinfo(MDS, "keyring %s: %zu key(s); auth_required=%s", m->keyring_path, m->keys.n,
	      m->auth_required ? "true" : "false");
	return 0;
}

void auth_free(struct mds *m)
{
	mdsp_keyring_free(&m->keys);
	free(m->keyring_path);
	m->keyring_path = NULL;
	pthread_mutex_destroy(&m->keys_lock);
}

/* Copy @name's secret out of the keyring.  Return: true if it has one. */
static bool key_lookup(struct mds *m, const char *name, uint8_t secret[MDSP_KEY_LEN])
{
	const struct mdsp_key *k;
	bool found;

	pthread_mutex_lock(&m->keys_lock);
	k = mdsp_keyring_find(&m->keys, name);
	found = k != NULL;
	if (k)
		memcpy(secret, k->secret, MDSP_KEY_LEN);
	pthread_mutex_unlock(&m->keys_lock);
	return found;
}

static int send_auth(struct conn *c, const struct mdsp_auth *a)
{
	struct mdsp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_AUTH;
	msg.auth = *a;
	return conn_send_msg(c, &msg);
}

/* Refuse @c: REJECT with @err and @reason to the peer, @logline to the log. */
static int reject(struct mds *m, struct conn *c, int err, const char *reason, const char *logline)
{
	struct mdsp_auth a = { .op = MDSP_AUTH_REJECT, .result = err, .reason = (char *)reason };

	perf_inc(&m->auth_failed, 1);
	derr(MDS, "peer %s: authentication failed: %s: closing the connection", c->peer, logline);
	send_auth(c, &a);
	return -EACCES;
}

static int handle_hello(struct mds *m, struct conn *c, const struct mdsp_auth *a)
{
	struct mdsp_auth ch = { .op = MDSP_AUTH_CHALLENGE };
	char reason[1024], line[512];
	uint8_t secret[MDSP_KEY_LEN];

	if (!mdsp_auth_name_valid(a->name)) {
		snprintf(line, sizeof(line), "'%.64s' is not an entity name", a->name ? a->name : "");
		return reject(m, c, -EINVAL, "the name is not of the form client.NAME (client_auth_name)", line);
	}
	snprintf(c->auth_name, sizeof(c->auth_name), "%s", a->name);
	memcpy(c->cnonce, a->nonce, MDSP_NONCE_LEN);
	if (mdsp_random(c->snonce, MDSP_NONCE_LEN))
		return reject(m, c, -EIO, "the mds could not draw a nonce", "no random bytes");
	if (a->flags & MDSP_AUTH_HAVE_KEY) {
		if (!key_lookup(m, c->auth_name, secret)) {
			snprintf(reason, sizeof(reason),
				 "the mds keyring has no key for %s: create one on the mds host with "
				 "'loligo auth get-or-create %s -o FILE' and give FILE to the client (client_keyring)",
				 c->auth_name, c->auth_name);
			snprintf(line, sizeof(line), "no key for %s in %s", c->auth_name, m->keyring_path);
			return reject(m, c, -ENOKEY, reason, line);
		}
		memset(secret, 0, sizeof(secret));
		c->auth = CONN_AUTH_CHALLENGED;
	} else if (m->auth_required) {
		snprintf(reason, sizeof(reason),
			 "the mds requires authentication (auth_required) and %s offered no key: give the client "
			 "a keyring with the key of %s (client_keyring; 'loligo auth get-or-create %s -o FILE')",
			 c->auth_name, c->auth_name, c->auth_name);
		snprintf(line, sizeof(line), "%s offered no key and auth_required is on", c->auth_name);
		return reject(m, c, -EACCES, reason, line);
	} else {
		c->auth = CONN_AUTH_UNAUTHENTICATED;
		dout(MDS, 5, "peer %s: %s connects without a key (auth_required is off)", c->peer, c->auth_name);
	}
	ch.flags = m->auth_required ? MDSP_AUTH_REQUIRED : 0;
	memcpy(ch.nonce, c->snonce, MDSP_NONCE_LEN);
	send_auth(c, &ch);
	return 0;
}

static int handle_proof(struct mds *m, struct conn *c, const struct mdsp_auth *a)
{
	struct mdsp_auth ok = { .op = MDSP_AUTH_OK };
	uint8_t secret[MDSP_KEY_LEN], want[MDSP_MAC_LEN], k_c2m[MDSP_MAC_LEN], k_m2c[MDSP_MAC_LEN];
	struct mdsp_mac *rx = NULL, *tx = NULL;
	struct mdsp_msg msg;
	struct mdsp_buf b;
	char reason[1024], line[512];
	int r = -EACCES;

	if (!key_lookup(m, c->auth_name, secret)) {
		snprintf(reason, sizeof(reason), "the key of %s was removed from the mds keyring", c->auth_name);
		snprintf(line, sizeof(line), "no key for %s any more", c->auth_name);
		return reject(m, c, -ENOKEY, reason, line);
	}
	if (mdsp_auth_derive(secret, MDSP_DERIVE_CLIENT_PROOF, c->auth_name, c->cnonce, c->snonce, want))
		goto crypto;
	if (!mdsp_mac_equal(want, a->proof)) {
		snprintf(reason, sizeof(reason),
			 "wrong key for %s: the client's keyring holds another key than the mds; fetch the current "
			 "one with 'loligo auth get %s -o FILE' (client_keyring)", c->auth_name, c->auth_name);
		snprintf(line, sizeof(line), "wrong key for %s", c->auth_name);
		r = reject(m, c, -EKEYREJECTED, reason, line);
		goto out;
	}
	if (mdsp_auth_derive(secret, MDSP_DERIVE_MDS_PROOF, c->auth_name, c->cnonce, c->snonce, ok.proof) ||
	    mdsp_auth_derive(secret, MDSP_DERIVE_KEY_C2M, c->auth_name, c->cnonce, c->snonce, k_c2m) ||
	    mdsp_auth_derive(secret, MDSP_DERIVE_KEY_M2C, c->auth_name, c->cnonce, c->snonce, k_m2c) ||
	    mdsp_auth_derive(secret, MDSP_DERIVE_SESSION, c->auth_name, c->cnonce, c->snonce, c->session_secret) ||
	    mdsp_mac_new(&rx, k_c2m) || mdsp_mac_new(&tx, k_m2c))
		goto crypto;
	/* OK is the last frame without a MAC: send it and switch under the
	 * send lock, so that no frame slips in between */
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_AUTH;
	msg.auth = ok;
	mdsp_buf_init(&b);
	if (mdsp_encode(&b, &msg)) {
		mdsp_buf_free(&b);
		goto crypto;
	}
	pthread_mutex_lock(&c->send_lock);
	conn_send_frame_locked(c, &b);
	c->tx_mac = tx;
	pthread_mutex_unlock(&c->send_lock);
	mdsp_buf_free(&b);
	tx = NULL;
	c->rx_mac = rx;
	rx = NULL;
	c->auth = CONN_AUTH_DONE;
	perf_inc(&m->auth_ok, 1);
	dout(MDS, 1, "peer %s: authenticated as %s", c->peer, c->auth_name);
	r = 0;
	goto out;
crypto:
	r = reject(m, c, -EIO, "the mds could not compute the handshake (libcrypto error)", "libcrypto error");
out:
	mdsp_mac_free(rx);
	mdsp_mac_free(tx);
	memset(secret, 0, sizeof(secret));
	memset(k_c2m, 0, sizeof(k_c2m));
	memset(k_m2c, 0, sizeof(k_m2c));
	return r;
}

int auth_handle(struct mds *m, struct conn *c, struct mdsp_auth *a)
{
	char line[256];

	if (a->op == MDSP_AUTH_HELLO && c->auth == CONN_AUTH_NONE)
		return handle_hello(m, c, a);
	if (a->op == MDSP_AUTH_PROOF && c->auth == CONN_AUTH_CHALLENGED)
		return handle_proof(m, c, a);
	snprintf(line, sizeof(line), "unexpected AUTH %s", mdsp_auth_op_name(a->op));
	return reject(m, c, -EPROTO, "unexpected AUTH message at this point of the exchange", line);
}

/* ---- admin commands ------------------------------------------------------- */

/* Caller holds keys_lock. */
static int save_locked(struct mds *m, char *err, size_t errlen)
{
	lockdep_assert_held(&m->keys_lock);
	if (!*m->keyring_path) {
		snprintf(err, errlen, "mds_keyring is not set: the key cannot be kept");
		return -EINVAL;
	}
	return mdsp_keyring_save(m->keyring_path, &m->keys, err, errlen);
}

int auth_admin_get_or_create(struct mds *m, const char *name, bool create, struct json_object *out, char *err,
			     size_t errlen)
{
	const struct mdsp_key *k;
	uint8_t secret[MDSP_KEY_LEN];
	char b64[64];
	bool created = false;
	int r = 0;

	if (!mdsp_auth_name_valid(name)) {
		snprintf(err, errlen, "'%s' is not an entity name: client.NAME with letters, digits, '_', '.', '-'",
			 name);
		return -EINVAL;
	}
	pthread_mutex_lock(&m->keys_lock);
	k = mdsp_keyring_find(&m->keys, name);
	if (!k && !create) {
		snprintf(err, errlen, "no key for %s", name);
		r = -ENOENT;
		goto out;
	}
	if (!k) {
		r = mdsp_random(secret, sizeof(secret));
		if (!r)
			r = mdsp_keyring_add(&m->keys, name, secret);
		if (!r) {
			r = save_locked(m, err, errlen);
			if (r)
				mdsp_keyring_remove(&m->keys, name);
		} else {
			snprintf(err, errlen, "cannot add the key: %s", strerror(-r));
		}
		if (r)
			goto out;
		k = mdsp_keyring_find(&m->keys, name);
		created = true;
	}
	mdsp_key_base64(k->secret, b64, sizeof(b64));
	json_object_object_add(out, "entity", json_object_new_string(name));
	json_object_object_add(out, "key", json_object_new_string(b64));
	json_object_object_add(out, "created", json_object_new_boolean(created));
	memset(b64, 0, sizeof(b64));
out:
	pthread_mutex_unlock(&m->keys_lock);
	memset(secret, 0, sizeof(secret));
	if (created)
		dinfo(MDS, "auth: created a key for %s in %s", name, m->keyring_path);
	return r;
}

int auth_admin_rm(struct mds *m, const char *name, char *err, size_t errlen)
{
	struct mdsp_key saved;
	const struct mdsp_key *k;
	int r;

	pthread_mutex_lock(&m->keys_lock);
	k = mdsp_keyring_find(&m->keys, name);
	if (!k) {
		pthread_mutex_unlock(&m->keys_lock);
		snprintf(err, errlen, "no key for %s", name);
		return -ENOENT;
	}
	saved = *k;
	mdsp_keyring_remove(&m->keys, name);
	r = save_locked(m, err, errlen);
	if (r)
		mdsp_keyring_add(&m->keys, saved.name, saved.secret);
	pthread_mutex_unlock(&m->keys_lock);
	memset(&saved, 0, sizeof(saved));
	if (!r)
		dinfo(MDS, "auth: removed the key of %s from %s", name, m->keyring_path);
	return r;
}

struct json_object *auth_admin_ls(struct mds *m)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	size_t i;

	pthread_mutex_lock(&m->keys_lock);
	for (i = 0; i < m->keys.n; i++)
		json_object_array_add(a, json_object_new_string(m->keys.keys[i].name));
	pthread_mutex_unlock(&m->keys_lock);
	json_object_object_add(o, "keyring", json_object_new_string(m->keyring_path));
	json_object_object_add(o, "auth_required", json_object_new_boolean(m->auth_required));
	json_object_object_add(o, "entities", a);
	return o;
}
