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
 * A name that has a key is taken only with it, whatever auth_required
 * says: with auth_required off a peer without a key may use any other
 * name, never one in the keyring.
 *
 * The keyring (mds_keyring) is read at start-up, refused if group or others
 * may access it, and changed only by the admin commands here, which write
 * it back atomically (temp file, rename, mode 0600) before they answer, so
 * a restart sees what the admin was told.  The write happens on a copy
 * under keys_admin_lock, never under keys_lock, which every handshake
 * takes; the copy replaces the keys in memory once it is on disk.
 *
 * A key removed (or created for a name anonymous peers were using) cuts
 * that name off at once (cut_name): every connection whose HELLO claimed it
 * is closed and every session authenticated as it is evicted, so nothing
 * derived from the old key (MAC keys, a session secret for RECONNECT)
 * serves any more.  No connection escapes: a connection publishes the name
 * it claims (conn->claimed_name, under conns_lock) before it looks the key
 * up (under keys_lock), and the admin changes the key before it looks for
 * the connections; whichever comes first, the connection either sees the
 * new keyring or is found.
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
#include "mds/session.h"

int auth_load(struct mds *m, char *err, size_t errlen)
{
	int r;

	pthread_mutex_init(&m->keys_lock, NULL);
	pthread_mutex_init(&m->keys_admin_lock, NULL);
	m->auth_required = cfg_bool(CFG_auth_required);
	m->keyring_path = cfg_strdup(CFG_mds_keyring);
	if (!m->keyring_path)
		return -ENOMEM;
	memset(&m->keys, 0, sizeof(m->keys));
	atomic_store(&m->keys_gen, 1);
	if (!*m->keyring_path) {
		if (!m->auth_required)
			return 0;
		snprintf(err, errlen, "auth_required is on but mds_keyring is empty: set mds_keyring to a keyring "
				      "file (loligo auth get-or-create client.NAME --keyring FILE makes one)");
		return -EINVAL;
	}
	/* one that group or others may access is refused whatever
	 * auth_required says: its keys are as good as public */
	r = mdsp_keyring_load_flags(m->keyring_path, MDSP_KEYRING_PRIVATE, &m->keys, err, errlen);
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
	if (r == -EPERM || r == -EINVAL) {
		char why[1024];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s (mds_keyring)", why);
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
	pthread_mutex_destroy(&m->keys_admin_lock);
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
	/* published before the key is looked up (see the top of the file) */
	pthread_mutex_lock(&m->conns_lock);
	snprintf(c->claimed_name, sizeof(c->claimed_name), "%s", a->name);
	c->claimed_keyless = !(a->flags & MDSP_AUTH_HAVE_KEY);
	pthread_mutex_unlock(&m->conns_lock);
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
	} else if (key_lookup(m, c->auth_name, secret)) {
		memset(secret, 0, sizeof(secret));
		snprintf(reason, sizeof(reason),
			 "%s has a key in the mds keyring, and a name with a key is taken only with its key "
			 "(whatever auth_required says): give the client its keyring (client_keyring; 'loligo auth "
			 "get %s -o FILE' on the mds host), or connect without a key under a name that has none "
			 "(client_auth_name)", c->auth_name, c->auth_name);
		snprintf(line, sizeof(line), "%s offered no key, but the name has one in %s", c->auth_name,
			 m->keyring_path);
		return reject(m, c, -EACCES, reason, line);
	} else {
		c->auth = CONN_AUTH_UNAUTHENTICATED;
		dout(MDS, 5, "peer %s: %s connects without a key (auth_required is off)", c->peer, c->auth_name);
	}
	ch.flags = m->auth_required ? MDSP_AUTH_REQUIRED : 0;
	/* the frame MACs: GMAC if the client offers it and we take it */
	c->mac_alg = MDSP_MAC_HMAC_SHA256;
	if (c->auth == CONN_AUTH_CHALLENGED && (a->flags & MDSP_AUTH_GMAC) && cfg_bool(CFG_auth_frame_gmac)) {
		c->mac_alg = MDSP_MAC_GMAC_AES256;
		ch.flags |= MDSP_AUTH_GMAC;
	}
	memcpy(ch.nonce, c->snonce, MDSP_NONCE_LEN);
	send_auth(c, &ch);
	return 0;
}

static int handle_proof(struct mds *m, struct conn *c, const struct mdsp_auth *a)
{
	struct mdsp_auth ok = { .op = MDSP_AUTH_OK };
	uint8_t secret[MDSP_KEY_LEN], want[MDSP_MAC_LEN];
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
	    mdsp_auth_derive(secret, MDSP_DERIVE_SESSION, c->auth_name, c->cnonce, c->snonce, c->session_secret) ||
	    mdsp_auth_macs(secret, c->mac_alg, c->auth_name, c->cnonce, c->snonce, &rx, &tx))
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
	if (c->mac_alg == MDSP_MAC_GMAC_AES256)
		perf_inc(&m->auth_gmac, 1);
	dout(MDS, 1, "peer %s: authenticated as %s (frame MACs %s)", c->peer, c->auth_name,
	     mdsp_mac_alg_name(c->mac_alg));
	r = 0;
	goto out;
crypto:
	r = reject(m, c, -EIO, "the mds could not compute the handshake (libcrypto error)", "libcrypto error");
out:
	mdsp_mac_free(rx);
	mdsp_mac_free(tx);
	memset(secret, 0, sizeof(secret));
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

/*
 * Cut @name off: its key was removed (close every connection whose HELLO
 * claimed it, evict every session authenticated as it), or a name peers
 * used without a key got one (@keyless_only: close the connections that
 * claimed it without a key).  Log what was cut.  Bounded by the connections
 * and sessions there are (mds_max_conns, mds_max_sessions).  No lock held:
 * conns_lock and mds->lock are each taken alone, for bookkeeping only;
 * the evictions (which may fence the client in the data store) and the
 * shutdowns run outside them.
 */
static void cut_name(struct mds *m, const char *name, bool keyless_only, const char *why, int *nconns,
		     int *nsessions)
{
	struct conn **v = NULL, *c;
	size_t n = 0, cap = 0, i;
	char reason[256];
	int evicted;

	snprintf(reason, sizeof(reason), "%s %s", name, why);
	/* the connections are gathered first, the sessions evicted next (their
	 * clients are told why, EVICTED, before their connection goes), the
	 * rest shut down last */
	pthread_mutex_lock(&m->conns_lock);
	for (c = m->conns; c; c = c->next)
		cap++;
	v = cap ? calloc(cap, sizeof(*v)) : NULL;
	for (c = m->conns; v && c; c = c->next)
		if (!c->exited && !strcmp(c->claimed_name, name) && (!keyless_only || c->claimed_keyless)) {
			conn_get(c);
			v[n++] = c;
		}
	pthread_mutex_unlock(&m->conns_lock);
	evicted = keyless_only ? 0 : session_evict_auth_name(m, name, reason);
	for (i = 0; i < n; i++) {
		conn_shutdown(v[i]);
		conn_put(v[i]);
	}
	free(v);
	if (evicted < 0 || (cap && !v))
		derr(MDS, "auth: %s: out of memory while cutting it off: some of its connections or sessions may "
			  "remain (`loligo tell mds.0 client evict` them)", reason);
	if (!keyless_only || n)
		dinfo(MDS, "auth: %s: closed %zu connection(s) and evicted %d session(s) of %s", reason, n,
		      evicted > 0 ? evicted : 0, name);
	if (nconns)
		*nconns = (int)n;
	if (nsessions)
		*nsessions = evicted > 0 ? evicted : 0;
}

/* A copy of the keys in memory, to change and write out.  Caller holds keys_lock. */
static int keys_copy_locked(struct mds *m, struct mdsp_keyring *out)
{
	size_t i;
	int r = 0;

	lockdep_assert_held(&m->keys_lock);
	memset(out, 0, sizeof(*out));
	for (i = 0; !r && i < m->keys.n; i++) {
		char err[256];

		r = mdsp_keyring_add(out, m->keys.keys[i].name, m->keys.keys[i].secret);
		if (!r && m->keys.keys[i].caps)
			r = mdsp_keyring_set_caps(out, m->keys.keys[i].name, m->keys.keys[i].caps, err, sizeof(err));
	}
	if (r)
		mdsp_keyring_free(out);
	return r;
}

/*
 * Write @kr to the keyring file and make it the keys in memory; @kr gets
 * the old ones (the caller frees them).  Caller holds keys_admin_lock
 * (which serialises the writers); keys_lock is taken only for the swap, so
 * handshakes never wait for the disk.
 */
static int keys_commit_admin_locked(struct mds *m, struct mdsp_keyring *kr, char *err, size_t errlen)
{
	struct mdsp_keyring old;
	int r;

	lockdep_assert_held(&m->keys_admin_lock);
	if (!*m->keyring_path) {
		snprintf(err, errlen, "mds_keyring is not set: the key cannot be kept");
		return -EINVAL;
	}
	r = mdsp_keyring_save(m->keyring_path, kr, err, errlen);
	if (r)
		return r;
	pthread_mutex_lock(&m->keys_lock);
	old = m->keys;
	m->keys = *kr;
	*kr = old;
	atomic_fetch_add_explicit(&m->keys_gen, 1, memory_order_release);
	pthread_mutex_unlock(&m->keys_lock);
	return 0;
}

/* @name's caps string into @out ("" when it has none), under keys_lock. */
static void caps_of(struct mds *m, const char *name, char *out, size_t len)
{
	const struct mdsp_key *k;

	pthread_mutex_lock(&m->keys_lock);
	k = mdsp_keyring_find(&m->keys, name);
	snprintf(out, len, "%s", k && k->caps ? k->caps : "");
	pthread_mutex_unlock(&m->keys_lock);
}

static void add_caps_json(struct json_object *out, const char *caps)
{
	struct json_object *c = json_object_new_object();

	/* no caps: what the key may do is everything, say so as cephx would */
	json_object_object_add(c, "mds", json_object_new_string(*caps ? caps : "allow rw"));
	json_object_object_add(out, "caps", c);
}

int auth_admin_get_or_create(struct mds *m, const char *name, const char *caps, bool create,
			     struct json_object *out, char *err, size_t errlen)
{
	struct mdsp_keyring kr = { 0 };
	uint8_t secret[MDSP_KEY_LEN];
	char b64[64], have[MDSP_MDSCAPS_STR_MAX];
	bool found, created = false;
	int r = 0;

	if (!mdsp_auth_name_valid(name)) {
		snprintf(err, errlen, "'%s' is not an entity name: client.NAME with letters, digits, '_', '.', '-'",
			 name);
		return -EINVAL;
	}
	if (caps) {
		struct mdsp_mdscaps *p = malloc(sizeof(*p));

		r = p ? mdsp_mdscaps_parse(caps, p, err, errlen) : -ENOMEM;
		free(p);
		if (r)
			return r;
	}
	pthread_mutex_lock(&m->keys_admin_lock);
	found = key_lookup(m, name, secret);
	if (found && caps) {
		caps_of(m, name, have, sizeof(have));
		if (strcmp(have, caps)) {
			snprintf(err, errlen, "key for %s exists but its caps mds are '%s', not '%s': change them with "
				 "'loligo auth caps %s mds \"%s\"'", name, *have ? have : "allow rw", caps, name, caps);
			r = -EINVAL;
			goto out;
		}
	}
	if (!found && !create) {
		snprintf(err, errlen, "no key for %s", name);
		r = -ENOENT;
		goto out;
	}
	if (!found) {
		pthread_mutex_lock(&m->keys_lock);
		r = keys_copy_locked(m, &kr);
		pthread_mutex_unlock(&m->keys_lock);
		if (!r)
			r = mdsp_random(secret, sizeof(secret));
		if (!r)
			r = mdsp_keyring_add(&kr, name, secret);
		if (r) {
			snprintf(err, errlen, "cannot add the key: %s", strerror(-r));
			goto out;
		}
		if (caps && (r = mdsp_keyring_set_caps(&kr, name, caps, err, errlen)))
			goto out;
		r = keys_commit_admin_locked(m, &kr, err, errlen);
		if (r)
			goto out;
		created = true;
	}
	mdsp_key_base64(secret, b64, sizeof(b64));
	json_object_object_add(out, "entity", json_object_new_string(name));
	json_object_object_add(out, "key", json_object_new_string(b64));
	json_object_object_add(out, "created", json_object_new_boolean(created));
	caps_of(m, name, have, sizeof(have));
	add_caps_json(out, have);
	memset(b64, 0, sizeof(b64));
out:
	pthread_mutex_unlock(&m->keys_admin_lock);
	mdsp_keyring_free(&kr);
	memset(secret, 0, sizeof(secret));
	if (created) {
		dinfo(MDS, "auth: created a key for %s in %s", name, m->keyring_path);
		/* peers that used the name without a key until now lose it */
		cut_name(m, name, true, "got a key (auth get-or-create)", NULL, NULL);
	}
	return r;
}

int auth_admin_caps(struct mds *m, const char *name, const char *caps, struct json_object *out, char *err,
		    size_t errlen)
{
	struct mdsp_keyring kr = { 0 };
	int r;

	pthread_mutex_lock(&m->keys_admin_lock);
	pthread_mutex_lock(&m->keys_lock);
	r = keys_copy_locked(m, &kr);
	pthread_mutex_unlock(&m->keys_lock);
	if (r)
		snprintf(err, errlen, "cannot copy the keyring: %s", strerror(-r));
	if (!r)
		r = mdsp_keyring_set_caps(&kr, name, caps && *caps ? caps : NULL, err, errlen);
	if (!r)
		r = keys_commit_admin_locked(m, &kr, err, errlen);
	pthread_mutex_unlock(&m->keys_admin_lock);
	mdsp_keyring_free(&kr);
	if (r)
		return r;
	dinfo(MDS, "auth: caps mds of %s are now '%s' (%s): they apply to its next request", name,
	      caps && *caps ? caps : "allow rw", m->keyring_path);
	json_object_object_add(out, "entity", json_object_new_string(name));
	add_caps_json(out, caps ? caps : "");
	return 0;
}

int auth_admin_rm(struct mds *m, const char *name, int *nconns, int *nsessions, char *err, size_t errlen)
{
	struct mdsp_keyring kr = { 0 };
	int r;

	pthread_mutex_lock(&m->keys_admin_lock);
	pthread_mutex_lock(&m->keys_lock);
	if (!mdsp_keyring_find(&m->keys, name)) {
		pthread_mutex_unlock(&m->keys_lock);
		pthread_mutex_unlock(&m->keys_admin_lock);
		snprintf(err, errlen, "no key for %s", name);
		return -ENOENT;
	}
	r = keys_copy_locked(m, &kr);
	pthread_mutex_unlock(&m->keys_lock);
	if (r)
		snprintf(err, errlen, "cannot copy the keyring: %s", strerror(-r));
	if (!r)
		r = mdsp_keyring_remove(&kr, name);
	if (!r)
		r = keys_commit_admin_locked(m, &kr, err, errlen);
	pthread_mutex_unlock(&m->keys_admin_lock);
	mdsp_keyring_free(&kr);
	if (r)
		return r;
	dinfo(MDS, "auth: removed the key of %s from %s", name, m->keyring_path);
	/* what the old key derived (MAC keys, session secrets) serves no more */
	cut_name(m, name, false, "lost its key (auth rm)", nconns, nsessions);
	return 0;
}

struct json_object *auth_admin_ls(struct mds *m)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	struct json_object *caps = json_object_new_object();
	size_t i;

	pthread_mutex_lock(&m->keys_lock);
	for (i = 0; i < m->keys.n; i++) {
		json_object_array_add(a, json_object_new_string(m->keys.keys[i].name));
		json_object_object_add(caps, m->keys.keys[i].name,
				       json_object_new_string(m->keys.keys[i].caps ? m->keys.keys[i].caps : "allow rw"));
	}
	pthread_mutex_unlock(&m->keys_lock);
	json_object_object_add(o, "caps_mds", caps);
	json_object_object_add(o, "keyring", json_object_new_string(m->keyring_path));
	json_object_object_add(o, "auth_required", json_object_new_boolean(m->auth_required));
	json_object_object_add(o, "entities", a);
	return o;
}
