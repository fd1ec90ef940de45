/*
 * mds_client_auth.c - the session handshake (part of the session layer,
 * mds_client_session.c has the whole story): the client's key
 * (mdsc_auth_init), the AUTH exchange (HELLO/CHALLENGE, with a key
 * PROOF/OK, after which frames carry MACs; mds_proto/auth.c), and
 * SESSION REQUEST_OPEN or RECONNECT with what the MDS grants
 * (mdsc_handshake), read on the session thread before the connection has
 * a reader.  Refusals are final and logged with what to do.  No lock is
 * held: the connection is not published yet.
 */
#include "client/mds_client_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/lockdep.h"
#include "common/config.h"
#include "common/crc32c.h"
#include "common/log.h"

/* ---- handshake ------------------------------------------------------------------ */


/*
 * Read @name's key from the keyring @path (client_keyring).  Return: 0 with
 * the key in @key, 1 when there is no keyring (connect without a key), or
 * -errno with @err saying what is wrong and what to do: the keyring is
 * unreadable, malformed or accessible by group or others (-EPERM: a key
 * anyone on the host may read is refused, as ssh refuses such a private
 * key), or it holds no key for @name (-ENOKEY).
 */
static int load_key(const char *name, const char *path, uint8_t key[MDSP_KEY_LEN], char *err, size_t errlen)
{
	struct mdsp_keyring kr;
	const struct mdsp_key *k;
	char why[1024];
	int r;

	if (!*path)
		return 1;
	r = mdsp_keyring_load_flags(path, MDSP_KEYRING_PRIVATE, &kr, why, sizeof(why));
	if (r == -ENOENT)
		return 1;
	if (r == -EPERM) {
		snprintf(err, errlen, "%s (client_keyring)", why);
		return r;
	}
	if (r) {
		snprintf(err, errlen, "%s (client_keyring): fix the file or point client_keyring at another", why);
		return r;
	}
	k = mdsp_keyring_find(&kr, name);
	if (!k) {
		snprintf(err, errlen, "keyring %s (client_keyring) has no key for %s (client_auth_name): write it "
			 "with 'loligo auth get-or-create %s -o %s' on the mds host, or set client_auth_name to a "
			 "name it holds", path, name, name, path);
		mdsp_keyring_free(&kr);
		return -ENOKEY;
	}
	memcpy(key, k->secret, MDSP_KEY_LEN);
	mdsp_keyring_free(&kr);
	return 0;
}

int mdsc_keyring_check(char *err, size_t errlen)
{
	char *name = cfg_strdup(CFG_client_auth_name), *path = cfg_strdup(CFG_client_keyring);
	uint8_t key[MDSP_KEY_LEN];
	int r = -ENOMEM;

	*err = '\0';
	if (!name || !path)
		goto out;
	if (!mdsp_auth_name_valid(name)) {
		snprintf(err, errlen, "client_auth_name '%s' is not a name of the form client.NAME", name);
		r = -EINVAL;
		goto out;
	}
	r = load_key(name, path, key, err, errlen);
	if (r > 0)
		r = 0;
	memset(key, 0, sizeof(key));
out:
	free(name);
	free(path);
	return r;
}

int mdsc_auth_init(struct mds_client *m)
{
	char err[1536];
	int r;

	m->auth_name = cfg_strdup(CFG_client_auth_name);
	m->keyring_path = cfg_strdup(CFG_client_keyring);
	if (!m->auth_name || !m->keyring_path)
		return -ENOMEM;
	if (!mdsp_auth_name_valid(m->auth_name)) {
		derr(CLIENT, "client_auth_name '%s' is not a name of the form client.NAME", m->auth_name);
		return -EINVAL;
	}
	r = load_key(m->auth_name, m->keyring_path, m->key, err, sizeof(err));
	if (r < 0) {
		derr(CLIENT, "%s", err);
		return r;
	}
	if (r > 0) {
		m->keyring_missing = true;
		if (*m->keyring_path)
			dout(CLIENT, 1, "no keyring at %s (client_keyring): connecting without a key",
			     m->keyring_path);
		return 0;
	}
	m->have_key = true;
	return 0;
}

/* Read the next frame of the handshake before @deadline. */
static int handshake_recv(struct mds_client *m, struct mds_conn *c, uint64_t deadline, struct mdsp_msg *in)
{
	const char *why = NULL;
	uint64_t now;
	int r;

	for (;;) {
		now = now_mono_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		r = mdsc_conn_recv(c, in, (int)((deadline - now) / 1000000ull) + 1, &why);
		if (r == -EOPNOTSUPP)
			continue;
		if (r)
			dout(CLIENT, 1, "mds %s: no handshake answer: %s", m->addr, why ? why : strerror(-r));
		return r;
	}
}

/* Say what an AUTH REJECT (or our own refusal of the mds, op 0) means for
 * us and what to do about it; keep it for mdsc_open_session's last word. */
static void log_auth_reject(struct mds_client *m, const struct mdsp_auth *a)
{
	int err = a->result < 0 ? a->result : -EACCES;
	const char *reason = a->reason ? a->reason : "no reason given";
	char msg[sizeof(m->session.auth_error)];
	uint64_t t0;

	if (a->op != MDSP_AUTH_REJECT)          /* our own verdict on the mds */
		snprintf(msg, sizeof(msg), "%s", reason);
	else if (err == -EACCES && m->keyring_missing)
		snprintf(msg, sizeof(msg), "the mds requires a key for %s (auth_required, or the name has a key in "
			 "its keyring), but the keyring %s (client_keyring) does not exist: create it on the mds host "
			 "with 'loligo auth get-or-create %s -o %s' and copy it here (mode 0600)", m->auth_name,
			 *m->keyring_path ? m->keyring_path : "(none)", m->auth_name,
			 *m->keyring_path ? m->keyring_path : "FILE");
	else if (err == -EKEYREJECTED)
		snprintf(msg, sizeof(msg), "the mds rejected the key of %s in %s: %s", m->auth_name, m->keyring_path,
			 reason);
	else
		snprintf(msg, sizeof(msg), "the mds refused %s: %s (%s)", m->auth_name, reason, strerror(-err));
	derr(CLIENT, "mds %s: %s", m->addr, msg);
	t0 = mdsc_lock(m);
	memcpy(m->session.auth_error, msg, sizeof(msg));
	mdsc_unlock(m, SEC_SESSION, t0);
}

/*
 * AUTH on @c: HELLO, CHALLENGE, and with a key PROOF, OK.  Return: 0 (the
 * connection's nonces set; with a key, MACs on from the next frame), -EACCES
 * when the MDS refused (@result gets its errno, the reason is logged), or a
 * connection error.
 */
static int auth_exchange(struct mds_client *m, struct mds_conn *c, uint64_t deadline, int *result)
{
	struct mdsp_msg out = { .type = MDSP_MSG_AUTH }, in;
	uint8_t want[MDSP_MAC_LEN];
	struct mdsp_mac *rx = NULL, *tx = NULL;
	enum mdsp_mac_alg alg = MDSP_MAC_HMAC_SHA256;
	bool offer_gmac = m->have_key && cfg_bool(CFG_auth_frame_gmac);
	struct mdsp_buf b;
	int r;

	if (mdsp_random(c->cnonce, MDSP_NONCE_LEN))
		return -EIO;
	out.auth.op = MDSP_AUTH_HELLO;
	out.auth.flags = (m->have_key ? MDSP_AUTH_HAVE_KEY : 0) | (offer_gmac ? MDSP_AUTH_GMAC : 0);
	out.auth.name = m->auth_name;
	memcpy(out.auth.nonce, c->cnonce, MDSP_NONCE_LEN);
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &out);
	if (!r)
		r = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (;;) {
		r = handshake_recv(m, c, deadline, &in);
		if (r)
			return r;
		if (in.type == MDSP_MSG_AUTH)
			break;
		mdsp_msg_free(&in);
	}
	if (in.auth.op == MDSP_AUTH_REJECT) {
		log_auth_reject(m, &in.auth);
		*result = in.auth.result < 0 ? in.auth.result : -EACCES;
		mdsp_msg_free(&in);
		return -EACCES;
	}
	if (in.auth.op != MDSP_AUTH_CHALLENGE) {
		mdsp_msg_free(&in);
		return -EPROTO;
	}
	memcpy(c->snonce, in.auth.nonce, MDSP_NONCE_LEN);
	/* GMAC only if we offered it: an MDS that says so unasked is not followed */
	if (offer_gmac && (in.auth.flags & MDSP_AUTH_GMAC))
		alg = MDSP_MAC_GMAC_AES256;
	mdsp_msg_free(&in);
	if (!m->have_key)
		return 0;

	memset(&out, 0, sizeof(out));
	out.type = MDSP_MSG_AUTH;
	out.auth.op = MDSP_AUTH_PROOF;
	if (mdsp_auth_derive(m->key, MDSP_DERIVE_CLIENT_PROOF, m->auth_name, c->cnonce, c->snonce, out.auth.proof))
		return -EIO;
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &out);
	if (!r)
		r = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	r = handshake_recv(m, c, deadline, &in);
	if (r)
		return r;
	if (in.type == MDSP_MSG_AUTH && in.auth.op == MDSP_AUTH_REJECT) {
		log_auth_reject(m, &in.auth);
		*result = in.auth.result < 0 ? in.auth.result : -EACCES;
		mdsp_msg_free(&in);
		return -EACCES;
	}
	if (in.type != MDSP_MSG_AUTH || in.auth.op != MDSP_AUTH_OK) {
		mdsp_msg_free(&in);
		return -EPROTO;
	}
	r = mdsp_auth_derive(m->key, MDSP_DERIVE_MDS_PROOF, m->auth_name, c->cnonce, c->snonce, want);
	if (!r && !mdsp_mac_equal(want, in.auth.proof)) {
		/* whoever answered does not hold our key: not our mds */
		struct mdsp_auth fake = { .result = -EKEYREJECTED };
		char why[sizeof(m->session.auth_error)];

		snprintf(why, sizeof(why), "the mds could not prove that it holds the key of %s: refusing it (is "
			 "client_mds_addr the right mds, and its keyring the one %s came from?)", m->auth_name,
			 m->keyring_path);
		fake.reason = why;
		log_auth_reject(m, &fake);
		*result = -EKEYREJECTED;
		r = -EACCES;
	}
	mdsp_msg_free(&in);
	if (r)
		return r;
	if (mdsp_auth_derive(m->key, MDSP_DERIVE_SESSION, m->auth_name, c->cnonce, c->snonce, c->session_secret) ||
	    mdsp_auth_macs(m->key, alg, m->auth_name, c->cnonce, c->snonce, &tx, &rx))
		return -EIO;
	c->rx_mac = rx;
	pthread_mutex_lock(&c->out_lock);
	c->tx_mac = tx;
	pthread_mutex_unlock(&c->out_lock);
	c->authenticated = true;
	c->mac_alg = alg;
	return 0;
}

/*
 * Authenticate on @c, then send REQUEST_OPEN (or RECONNECT of @resume_id
 * with the proof of @secret and @deleg_tid) and read the answer.
 * Return: 0 with @g filled; -ESTALE when the MDS refused the session
 * (reason logged, @result gets its errno); -EACCES when it refused our
 * authentication (@result: ENOKEY, EKEYREJECTED, EACCES); -ETIMEDOUT or a
 * connection error.
 */
int mdsc_handshake(struct mds_client *m, struct mds_conn *c, uint64_t resume_id, const uint8_t *secret,
		   uint64_t deleg_tid, int timeout_ms, struct mdsc_granted *g, int *result)
{
	struct mdsp_msg out = { .type = MDSP_MSG_SESSION }, in;
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct mdsp_cap_reconnect *caps = NULL;
	struct mdsp_lock *locks = NULL;
	uint32_t ncaps = 0, nlocks = 0;
	struct mdsp_buf b;
	int r;

	r = auth_exchange(m, c, deadline, result);
	if (r)
		return r;
	out.session.op = resume_id ? MDSP_SESSION_RECONNECT : MDSP_SESSION_REQUEST_OPEN;
	out.session.session_id = resume_id;
	out.session.deleg_tid = deleg_tid;     /* 0 unless resuming (connect_session) */
	out.session.client_name = m->name;
	out.session.meta = m->meta;
	out.session.nmeta = m->nmeta;
	memcpy(out.session.client_uuid, m->uuid, sizeof(m->uuid));
	if (resume_id && mdsp_reconnect_proof(secret, resume_id, c->cnonce, c->snonce, out.session.proof))
		return -EIO;
	if (resume_id && m->ops.reconnect_caps && m->ops.reconnect_caps(m->ops_arg, &caps, &ncaps) == 0) {
		out.session.caps = caps;
		out.session.ncaps = ncaps;
	}
	/* our file locks: a restarted MDS learns them from us (mds/flock.c) */
	if (resume_id && m->ops.reconnect_locks && m->ops.reconnect_locks(m->ops_arg, &locks, &nlocks) == 0) {
		out.session.locks = locks;
		out.session.nlocks = nlocks;
	}
	out.session.store_addr = m->store_addr;
	if (!resume_id && m->reclaim_sid) {
		/* our dead predecessor's session: the MDS evicts it first */
		out.session.reclaim_sid = m->reclaim_sid;
		memcpy(out.session.reclaim_uuid, m->reclaim_uuid, sizeof(m->reclaim_uuid));
	}
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &out);
	for (uint32_t i = 0; caps && i < ncaps; i++)
		free(caps[i].dname);    /* dentry leases name their dentry */
	free(caps);
	free(locks);
	if (!r)
		r = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (;;) {
		r = handshake_recv(m, c, deadline, &in);
		if (r)
			return r;
		if (in.type == MDSP_MSG_REPLY) {
			/* a SAFE reply journaled while we were away may follow the
			 * session onto this connection ahead of the OPEN */
			struct mdsp_msg *heap = malloc(sizeof(*heap));

			if (heap) {
				*heap = in;
				mdsc_handle_reply(m, heap);
			} else {
				mdsp_msg_free(&in);
			}
			continue;
		}
		if (in.type != MDSP_MSG_SESSION) {
			dout(CLIENT, 1, "mds %s: %s before the session opened: ignored", m->addr,
			     mdsp_msg_type_name(in.type));
			mdsp_msg_free(&in);
			continue;
		}
		switch (in.session.op) {
		case MDSP_SESSION_OPEN:
			g->id = in.session.session_id;
			g->seq = in.session.seq;
			g->epoch = in.session.mds_epoch;
			g->lease_ms = in.session.lease_ms;
			if (resume_id && g->id == resume_id)
				memcpy(g->secret, secret, MDSP_KEY_LEN);
			else if (c->authenticated)
				memcpy(g->secret, c->session_secret, MDSP_KEY_LEN);
			else
				memcpy(g->secret, in.session.secret, MDSP_KEY_LEN);
			memset(in.session.secret, 0, MDSP_KEY_LEN);
			g->max_file_size = in.session.max_file_size;
			g->refused = in.session.locks;
			g->nrefused = in.session.nlocks;
			in.session.locks = NULL;
			in.session.nlocks = 0;
			mdsp_msg_free(&in);
			m->reclaim_sid = 0;     /* reclaimed (or gone): once is enough */
			return 0;
		case MDSP_SESSION_REJECT:
		case MDSP_SESSION_CLOSE:
		case MDSP_SESSION_EVICTED:
			*result = in.session.result < 0 ? in.session.result : -EPERM;
			snprintf(g->reason, sizeof(g->reason), "%s", in.session.reason ? in.session.reason : "refused");
			derr(CLIENT, "mds %s refused to %s: %s (%s)", m->addr,
			     resume_id ? "resume the session" : "open a session",
			     in.session.reason ? in.session.reason : "no reason given", strerror(-*result));
			mdsp_msg_free(&in);
			return -ESTALE;
		default:
			mdsp_msg_free(&in);
			continue;
		}
	}
}

/*
 * Does an MDS answer at @addr?  A connect, an AUTH HELLO (a fresh nonce;
 * the connection is dropped before anything is proven), and any byte back
 * before @timeout_ms runs out.  A deposed MDS that is stopped still
 * accepts connects (the kernel fills its listen backlog) but never answers;
 * standbys do not listen.  0, or -errno (-ETIMEDOUT: accepted, silent).
 */
int mdsc_probe_answers(struct mds_client *m, const char *addr, int timeout_ms)
{
	struct mdsp_msg out = { .type = MDSP_MSG_AUTH };
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * 1000000ull, now;
	struct pollfd pfd;
	struct mdsp_buf b;
	const char *why;
	char byte;
	ssize_t n;
	int fd, r;

	r = mdsc_tcp_connect(addr, timeout_ms, 0, &fd, &why);
	if (r)
		return r;
	out.auth.op = MDSP_AUTH_HELLO;
	out.auth.flags = m->have_key ? MDSP_AUTH_HAVE_KEY : 0;
	out.auth.name = m->auth_name;
	mdsp_buf_init(&b);
	if (mdsp_random(out.auth.nonce, MDSP_NONCE_LEN) || mdsp_encode(&b, &out) ||
	    mdsp_frame_seal(b.data, b.len, 1, NULL, NULL)) {
		r = -EIO;
		goto out;
	}
	do {
		n = send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)b.len) {
		r = n < 0 ? -errno : -EIO;
		goto out;
	}
	r = -ETIMEDOUT;
	pfd.fd = fd;
	pfd.events = POLLIN;
	while ((now = now_mono_ns()) < deadline) {
		int p = poll(&pfd, 1, (int)((deadline - now) / 1000000ull) + 1);

		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0)
			break;
		n = recv(fd, &byte, 1, MSG_DONTWAIT);
		r = n > 0 ? 0 : n == 0 ? -ECONNRESET : -errno;
		break;
	}
out:
	mdsp_buf_free(&b);
	close(fd);
	return r;
}
