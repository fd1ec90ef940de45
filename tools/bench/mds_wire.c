/*
 * mds_wire.c - synchronous MDS wire client and loligo-mds process
 * harness (see mds_wire.h).  Part of the benchmark tools: mds_bench speaks the
 * wire with it; the integration suites link it from here (loligo_mds_wire).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "common/crc32c.h"
#include "tools/bench/mds_wire.h"

static uint8_t test_key[MDSP_KEY_LEN];
static pthread_once_t test_key_once = PTHREAD_ONCE_INIT;

static void test_key_init(void)
{
	if (mdsp_random(test_key, sizeof(test_key)))
		abort();
}

const uint8_t *mdsw_test_key(void)
{
	pthread_once(&test_key_once, test_key_init);
	return test_key;
}

static int connect_only(struct mdsw *w, uint16_t port, int rcvbuf)
{
	struct sockaddr_in sin;
	int one = 1;

	memset(w, 0, sizeof(*w));
	w->wait_safe = true;
	w->timeout_ms = 20000;
	w->next_tid = 1;
	w->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (w->fd < 0)
		return -errno;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((rcvbuf && setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))) ||
	    connect(w->fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int e = -errno;

		close(w->fd);
		w->fd = -1;
		return e;
	}
	setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

int mdsw_connect_raw(struct mdsw *w, uint16_t port)
{
	return connect_only(w, port, 0);
}

int mdsw_connect_rcvbuf(struct mdsw *w, uint16_t port, int rcvbuf)
{
	int r = connect_only(w, port, rcvbuf);

	if (!r && (r = mdsw_handshake(w))) {
		mdsw_close(w);
		r = r < 0 ? r : -EACCES;
	}
	return r;
}

int mdsw_connect(struct mdsw *w, uint16_t port)
{
	return mdsw_connect_rcvbuf(w, port, 0);
}

void mdsw_close(struct mdsw *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	mdsp_mac_free(w->tx);
	mdsp_mac_free(w->rx);
	w->tx = w->rx = NULL;
	w->authenticated = false;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

int mdsw_encode(struct mdsw *w, struct mdsp_msg *msg, struct mdsp_buf *out)
{
	uint8_t *nb;
	size_t len;
	int r;

	msg->seq = ++w->out_seq;
	mdsp_buf_init(out);
	r = mdsp_encode(out, msg);
	if (r)
		return r;
	len = out->len;
	if (w->tx) {
		nb = realloc(out->data, len + MDSP_MAC_LEN);
		if (!nb)
			return -ENOMEM;
		out->data = nb;
		out->cap = len + MDSP_MAC_LEN;
		out->len = len + MDSP_MAC_LEN;
	}
	return mdsp_frame_seal(out->data, len, msg->seq, w->tx, out->data + len);
}

void mdsw_fix_frame(struct mdsw *w, struct mdsp_buf *b, bool hdr_crc)
{
	uint32_t plen = (uint32_t)(b->len - MDSP_HDR_LEN - (w->tx ? MDSP_MAC_LEN : 0));

	if (hdr_crc)
		put32(b->data + 28, crc32c(0, b->data, 28));
	if (w->tx)
		mdsp_frame_mac(w->tx, b->data, b->data + MDSP_HDR_LEN, plen, b->data + MDSP_HDR_LEN + plen);
}

static int recv_msg(struct mdsw *w, struct mdsp_msg *msg, const char **why)
{
	return mdsp_recv_auth(w->fd, msg, w->timeout_ms, w->rx, &w->in_seq, why);
}

int mdsw_handshake_as(struct mdsw *w, const char *name, const uint8_t *key, char *reason, size_t rlen)
{
	struct mdsp_msg out, in;
	uint8_t want[MDSP_MAC_LEN];
	bool gmac = false;
	struct mdsp_buf b;
	const char *why;
	int r;

	if (!w->timeout_ms)
		w->timeout_ms = 20000;
	memset(&out, 0, sizeof(out));
	out.type = MDSP_MSG_AUTH;
	out.auth.op = MDSP_AUTH_HELLO;
	out.auth.name = (char *)name;
	out.auth.flags = key ? MDSP_AUTH_HAVE_KEY | (w->hmac_only ? 0 : MDSP_AUTH_GMAC) : 0;
	mdsp_random(w->cnonce, MDSP_NONCE_LEN);
	memcpy(out.auth.nonce, w->cnonce, MDSP_NONCE_LEN);
	r = mdsw_encode(w, &out, &b);
	if (!r)
		r = mdsp_send(w->fd, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (int step = 0; step < 2; step++) {
		r = recv_msg(w, &in, &why);
		if (r)
			return r;
		if (in.type != MDSP_MSG_AUTH) {
			mdsp_msg_free(&in);
			return -EPROTO;
		}
		if (in.auth.op == MDSP_AUTH_REJECT) {
			r = in.auth.result < 0 ? in.auth.result : -EACCES;
			if (reason)
				snprintf(reason, rlen, "%s", in.auth.reason ? in.auth.reason : "");
			mdsp_msg_free(&in);
			return r;
		}
		if (step == 0) {
			if (in.auth.op != MDSP_AUTH_CHALLENGE) {
				mdsp_msg_free(&in);
				return -EPROTO;
			}
			memcpy(w->snonce, in.auth.nonce, MDSP_NONCE_LEN);
			gmac = !w->hmac_only && (in.auth.flags & MDSP_AUTH_GMAC);
			mdsp_msg_free(&in);
			if (!key)
				return 0;
			memset(&out, 0, sizeof(out));
			out.type = MDSP_MSG_AUTH;
			out.auth.op = MDSP_AUTH_PROOF;
			mdsp_auth_derive(key, MDSP_DERIVE_CLIENT_PROOF, name, w->cnonce, w->snonce, out.auth.proof);
			r = mdsw_encode(w, &out, &b);
			if (!r)
				r = mdsp_send(w->fd, &b);
			mdsp_buf_free(&b);
			if (r)
				return r;
			continue;
		}
		if (in.auth.op != MDSP_AUTH_OK) {
			mdsp_msg_free(&in);
			return -EPROTO;
		}
		mdsp_auth_derive(key, MDSP_DERIVE_MDS_PROOF, name, w->cnonce, w->snonce, want);
		r = mdsp_mac_equal(want, in.auth.proof) ? 0 : -EKEYREJECTED;
		mdsp_msg_free(&in);
		if (r)
			return r;
	}
	w->mac_alg = gmac ? MDSP_MAC_GMAC_AES256 : MDSP_MAC_HMAC_SHA256;
	r = mdsp_auth_macs(key, w->mac_alg, name, w->cnonce, w->snonce, &w->tx, &w->rx);
	mdsp_auth_derive(key, MDSP_DERIVE_SESSION, name, w->cnonce, w->snonce, w->secret);
	w->authenticated = !r;
	return r;
}

int mdsw_handshake(struct mdsw *w)
{
	return mdsw_handshake_as(w, "client.admin", mdsw_test_key(), NULL, 0);
}

static int send_msg(struct mdsw *w, struct mdsp_msg *msg)
{
	struct mdsp_buf b;
	int r = mdsw_encode(w, msg, &b);

	if (!r)
		r = mdsp_send(w->fd, &b);
	mdsp_buf_free(&b);
	return r;
}

int mdsw_send_raw(struct mdsw *w, const void *buf, size_t len)
{
	struct mdsp_buf b = { .data = (uint8_t *)buf, .len = len, .cap = len };

	return mdsp_send(w->fd, &b);
}

/* Wait for a SESSION message with one of the ops in @ops (0-terminated). */
int mdsw_send_caps(struct mdsw *w, const struct mdsp_caps *c)
{
	struct mdsp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_CAPS;
	msg.caps = *c;
	return send_msg(w, &msg);
}

/* A CAPS message from the MDS: count it, ack revokes (keeping what it says,
 * with nothing dirty) unless w->no_ack.  Returns true if @in was one. */
static bool caps_in(struct mdsw *w, const struct mdsp_msg *in)
{
	struct mdsp_caps ack;

	if (in->type != MDSP_MSG_CAPS)
		return false;
	memset(&ack, 0, sizeof(ack));
	ack.ino = in->caps.ino;
	ack.seq = in->caps.seq;
	switch (in->caps.op) {
	case MDSP_CAPS_REVOKE:
		w->revokes++;
		ack.op = MDSP_CAPS_ACK;
		ack.caps = in->caps.caps;
		ack.wanted = in->caps.wanted;
		break;
	case MDSP_CAPS_LEASE_REVOKE:
		w->lease_revokes++;
		ack.op = MDSP_CAPS_LEASE_ACK;
		ack.dname = in->caps.dname;
		break;
	case MDSP_CAPS_GRANT:
		w->grants++;
		return true;
	default:
		return true;
	}
	if (!w->no_ack && !(w->no_lease_ack && ack.op == MDSP_CAPS_LEASE_ACK))
		mdsw_send_caps(w, &ack);
	return true;
}

int mdsw_poll_caps(struct mdsw *w, int ms)
{
	struct mdsp_msg in;
	const char *why;
	int r;

	for (;;) {
		r = mdsp_recv_auth(w->fd, &in, ms, w->rx, &w->in_seq, &why);
		if (r == -ETIMEDOUT)
			return 0;
		if (r)
			return r;
		caps_in(w, &in);
		mdsp_msg_free(&in);
	}
}

static int wait_session(struct mdsw *w, const uint32_t *ops, struct mdsp_session *out)
{
	struct mdsp_msg msg;
	const char *why;
	int r, i;

	for (;;) {
		r = recv_msg(w, &msg, &why);
		if (r)
			return r;
		if (msg.type == MDSP_MSG_SESSION) {
			for (i = 0; ops[i]; i++)
				if (msg.session.op == ops[i]) {
					*out = msg.session;
					out->client_name = NULL;
					out->reason = NULL;
					out->caps = NULL;
					mdsp_msg_free(&msg);
					return 0;
				}
		}
		caps_in(w, &msg);
		mdsp_msg_free(&msg);
	}
}

/* Send the SESSION message @q and wait for the answer, one of @ops (0-terminated), into @out. */
static int session_round_trip(struct mdsw *w, const struct mdsp_session *q, const uint32_t *ops,
			      struct mdsp_session *out)
{
	struct mdsp_msg msg;
	int r;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session = *q;
	r = send_msg(w, &msg);
	if (r)
		return r;
	return wait_session(w, ops, out);
}

/* The secrets of the sessions this process opened, so that a test can
 * reconnect a session from a new connection as its owner would. */
#define NSECRETS 1024
static struct { uint64_t sid; uint8_t secret[MDSP_KEY_LEN]; } secrets[NSECRETS];
static pthread_mutex_t secrets_lock = PTHREAD_MUTEX_INITIALIZER;

static void secret_remember(uint64_t sid, const uint8_t *secret)
{
	pthread_mutex_lock(&secrets_lock);
	secrets[sid % NSECRETS].sid = sid;
	memcpy(secrets[sid % NSECRETS].secret, secret, MDSP_KEY_LEN);
	pthread_mutex_unlock(&secrets_lock);
}

static bool secret_recall(uint64_t sid, uint8_t *secret)
{
	bool ok;

	pthread_mutex_lock(&secrets_lock);
	ok = secrets[sid % NSECRETS].sid == sid;
	if (ok)
		memcpy(secret, secrets[sid % NSECRETS].secret, MDSP_KEY_LEN);
	pthread_mutex_unlock(&secrets_lock);
	return ok;
}

/* REQUEST_OPEN (@name) or RECONNECT (@sid): OPEN sets w->sid and w->epoch; REJECT is its result. */
static int open_session(struct mdsw *w, uint32_t op, const char *name, uint64_t sid,
			const struct mdsp_cap_reconnect *caps, uint32_t ncaps)
{
	struct mdsp_session q = { .op = op, .client_name = (char *)name, .session_id = sid,
				  .caps = (struct mdsp_cap_reconnect *)caps, .ncaps = ncaps }, s;
	static const uint32_t ops[] = { MDSP_SESSION_OPEN, MDSP_SESSION_REJECT, 0 };
	int r;

	if (op == MDSP_SESSION_RECONNECT) {
		mdsp_reconnect_proof(w->secret, sid, w->cnonce, w->snonce, q.proof);
		q.deleg_tid = w->deleg_tid;
	}
	memcpy(q.client_uuid, w->uuid, sizeof(q.client_uuid));
	if (op == MDSP_SESSION_REQUEST_OPEN) {
		q.reclaim_sid = w->reclaim_sid;
		memcpy(q.reclaim_uuid, w->reclaim_uuid, sizeof(q.reclaim_uuid));
	}
	r = session_round_trip(w, &q, ops, &s);
	if (r)
		return r;
	if (s.op == MDSP_SESSION_REJECT)
		return s.result ? s.result : -EPERM;
	w->sid = s.session_id;
	w->epoch = s.mds_epoch;
	if (op == MDSP_SESSION_REQUEST_OPEN && !w->authenticated)
		memcpy(w->secret, s.secret, MDSP_KEY_LEN);
	if (op == MDSP_SESSION_REQUEST_OPEN)
		secret_remember(w->sid, w->secret);
	return 0;
}

int mdsw_reconnect_secret(struct mdsw *w, uint64_t sid, const uint8_t *secret)
{
	memcpy(w->secret, secret, MDSP_KEY_LEN);
	return open_session(w, MDSP_SESSION_RECONNECT, NULL, sid, NULL, 0);
}

int mdsw_open(struct mdsw *w, const char *name)
{
	return open_session(w, MDSP_SESSION_REQUEST_OPEN, name, 0, NULL, 0);
}

int mdsw_reconnect(struct mdsw *w, uint64_t sid)
{
	return mdsw_reconnect_caps(w, sid, NULL, 0);
}

int mdsw_reconnect_caps(struct mdsw *w, uint64_t sid, const struct mdsp_cap_reconnect *caps, uint32_t n)
{
	secret_recall(sid, w->secret);
	return open_session(w, MDSP_SESSION_RECONNECT, NULL, sid, caps, n);
}

int mdsw_renew(struct mdsw *w)
{
	struct mdsp_session q = { .op = MDSP_SESSION_REQUEST_RENEW, .session_id = w->sid, .seq = 7 }, s;
	static const uint32_t ops[] = { MDSP_SESSION_RENEW, MDSP_SESSION_REJECT, 0 };
	int r;

	r = session_round_trip(w, &q, ops, &s);
	if (r)
		return r;
	return s.op == MDSP_SESSION_RENEW && s.seq == 7 ? 0 : -EPROTO;
}

int mdsw_session_close(struct mdsw *w)
{
	struct mdsp_session q = { .op = MDSP_SESSION_REQUEST_CLOSE, .session_id = w->sid }, s;
	static const uint32_t ops[] = { MDSP_SESSION_CLOSE, 0 };

	return session_round_trip(w, &q, ops, &s);
}

void mdsw_reply_free(struct mdsp_reply *rep)
{
	struct mdsp_msg m;

	memset(&m, 0, sizeof(m));
	m.type = MDSP_MSG_REPLY;
	m.reply = *rep;
	mdsp_msg_free(&m);
	memset(rep, 0, sizeof(*rep));
}

/* Unless w->keep_caps: give back at once what @rep granted (caps on the
 * target, the directory and the entries; dentry leases), as a client that
 * caches nothing, so that nobody's change ever waits for this one to ack. */
static void release_reply(struct mdsw *w, const struct mdsp_request *req, const struct mdsp_reply *rep)
{
	struct mdsp_caps c;
	uint32_t i;

	if (w->keep_caps)
		return;
	if (rep->has_target && rep->cap_seq) {
		memset(&c, 0, sizeof(c));
		c.op = MDSP_CAPS_RELEASE;
		c.ino = rep->target.ino;
		c.seq = rep->cap_seq;
		mdsw_send_caps(w, &c);
	}
	if (rep->has_dir && rep->dir_cap_seq) {
		memset(&c, 0, sizeof(c));
		c.op = MDSP_CAPS_RELEASE;
		c.ino = rep->dir.ino;
		c.seq = rep->dir_cap_seq;
		mdsw_send_caps(w, &c);
	}
	if (rep->has_dir && rep->dname && (rep->trace_flags & MDSP_TRACE_LEASE)) {
		memset(&c, 0, sizeof(c));
		c.op = MDSP_CAPS_LEASE_RELEASE;
		c.ino = rep->dir.ino;
		c.dname = rep->dname;
		c.seq = rep->lease_seq;
		mdsw_send_caps(w, &c);
	}
	for (i = 0; i < rep->nentries; i++) {
		const struct mdsp_dirent *e = &rep->entries[i];

		if (e->cap_seq) {
			memset(&c, 0, sizeof(c));
			c.op = MDSP_CAPS_RELEASE;
			c.ino = e->inode.ino;
			c.seq = e->cap_seq;
			mdsw_send_caps(w, &c);
		}
		if (e->lease) {
			memset(&c, 0, sizeof(c));
			c.op = MDSP_CAPS_LEASE_RELEASE;
			c.ino = req->ino;
			c.dname = e->name;
			c.seq = e->lease_seq;
			mdsw_send_caps(w, &c);
		}
	}
}

int mdsw_send_request(struct mdsw *w, struct mdsp_request *req)
{
	struct mdsp_msg msg;
	int r;

	if (!req->tid)
		req->tid = w->next_tid++;
	if (!req->attempt)
		req->attempt = 1;
	if (!req->caller.uid && !req->caller.gid && !req->caller.ngroups)
		req->caller = w->caller;
	req->oldest_tid = w->oldest_tid;
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request = *req;
	r = send_msg(w, &msg);
	return r ? -1000 + r : 0;
}

int mdsw_flush_hint(struct mdsw *w)
{
	struct mdsp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session.op = MDSP_SESSION_REQUEST_FLUSH_JOURNAL;
	msg.session.session_id = w->sid;
	return send_msg(w, &msg);
}

int mdsw_recv_reply(struct mdsw *w, struct mdsp_reply *rep)
{
	struct mdsp_msg in;
	const char *why;
	int r;

	memset(rep, 0, sizeof(*rep));
	for (;;) {
		r = recv_msg(w, &in, &why);
		if (r)
			return -1000 + r;
		if (in.type == MDSP_MSG_REPLY && ((in.reply.flags & MDSP_REPLY_SAFE) || !w->wait_safe)) {
			*rep = in.reply;
			return 0;
		}
		/* we wait for its SAFE reply: as the client's fsync, say so */
		if (in.type == MDSP_MSG_REPLY && !w->no_flush_hint && (r = mdsw_flush_hint(w))) {
			mdsp_msg_free(&in);
			return -1000 + r;
		}
		caps_in(w, &in);
		mdsp_msg_free(&in);
	}
}

int mdsw_call(struct mdsw *w, struct mdsp_request *req, struct mdsp_reply *rep)
{
	struct mdsp_msg in;
	const char *why;
	int r;

	memset(rep, 0, sizeof(*rep));
	r = mdsw_send_request(w, req);
	if (r)
		return r;
	w->got_unsafe = false;
	for (;;) {
		r = recv_msg(w, &in, &why);
		if (r)
			return -1000 + r;
		if (in.type == MDSP_MSG_REPLY && in.reply.tid == req->tid) {
			if ((in.reply.flags & MDSP_REPLY_SAFE) || !w->wait_safe) {
				if (!(in.reply.flags & MDSP_REPLY_SAFE))
					w->got_unsafe = true;
				*rep = in.reply;
				release_reply(w, req, rep);
				return rep->result;
			}
			w->got_unsafe = true;
			/* we wait for its SAFE reply: as the client's fsync, say so */
			if (!w->no_flush_hint && (r = mdsw_flush_hint(w))) {
				mdsp_msg_free(&in);
				return -1000 + r;
			}
		}
		caps_in(w, &in);
		mdsp_msg_free(&in);
	}
}

int mdsw_command(struct mdsw *w, const char *json, char **out)
{
	struct mdsp_msg msg, in;
	const char *why;
	int r;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_COMMAND;
	msg.command.tid = 77;
	msg.command.json = (char *)json;
	r = send_msg(w, &msg);
	if (r)
		return -1000 + r;
	for (;;) {
		r = recv_msg(w, &in, &why);
		if (r)
			return -1000 + r;
		if (in.type == MDSP_MSG_COMMAND_REPLY) {
			r = in.command_reply.result;
			*out = in.command_reply.json;
			in.command_reply.json = NULL;
			mdsp_msg_free(&in);
			return r;
		}
		caps_in(w, &in);
		mdsp_msg_free(&in);
	}
}

static int simple(struct mdsw *w, struct mdsp_request *q, struct mdsp_inode *out)
{
	struct mdsp_reply rep;
	int r = mdsw_call(w, q, &rep);

	if (out && rep.has_target)
		*out = rep.target;
	mdsw_reply_free(&rep);
	return r;
}

int mdsw_lookup(struct mdsw *w, uint64_t dir, const char *name, struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_LOOKUP, .ino = dir, .name = (char *)name };

	return simple(w, &q, out);
}

int mdsw_getattr(struct mdsw *w, uint64_t ino, struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_GETATTR, .ino = ino };

	return simple(w, &q, out);
}

int mdsw_create(struct mdsw *w, uint64_t dir, const char *name, uint32_t mode, uint32_t oflags,
		struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_CREATE, .ino = dir, .name = (char *)name, .mode = mode,
				  .oflags = oflags };
	struct mdsp_reply rep;
	int r = mdsw_call(w, &q, &rep);

	if (out && rep.has_target)
		*out = rep.target;
	if (r == 0 && rep.has_target && rep.cap_seq && w->keep_caps) {
		/* the close that follows a create: nothing of it is open here */
		struct mdsp_caps u = { .op = MDSP_CAPS_UPDATE, .ino = rep.target.ino, .seq = rep.cap_seq,
				       .caps = rep.caps & ~(uint32_t)(MDSP_CAP_FILE_RD | MDSP_CAP_FILE_CACHE |
								       MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER) };

		mdsw_send_caps(w, &u);
	}
	mdsw_reply_free(&rep);
	return r;
}

int mdsw_mkdir(struct mdsw *w, uint64_t dir, const char *name, uint32_t mode, struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_MKDIR, .ino = dir, .name = (char *)name, .mode = mode };

	return simple(w, &q, out);
}

int mdsw_symlink(struct mdsw *w, uint64_t dir, const char *name, const char *target, struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_SYMLINK, .ino = dir, .name = (char *)name,
				  .target = (char *)target };

	return simple(w, &q, out);
}

int mdsw_link(struct mdsw *w, uint64_t dir, const char *name, uint64_t ino, struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_LINK, .ino = dir, .name = (char *)name, .ino2 = ino };

	return simple(w, &q, out);
}

int mdsw_unlink(struct mdsw *w, uint64_t dir, const char *name)
{
	struct mdsp_request q = { .op = MDSP_OP_UNLINK, .ino = dir, .name = (char *)name };

	return simple(w, &q, NULL);
}

int mdsw_rmdir(struct mdsw *w, uint64_t dir, const char *name)
{
	struct mdsp_request q = { .op = MDSP_OP_RMDIR, .ino = dir, .name = (char *)name };

	return simple(w, &q, NULL);
}

int mdsw_rename(struct mdsw *w, uint64_t sdir, const char *sname, uint64_t ddir, const char *dname,
		uint32_t flags)
{
	struct mdsp_request q = { .op = MDSP_OP_RENAME, .ino = sdir, .name = (char *)sname, .ino2 = ddir,
				  .name2 = (char *)dname, .oflags = flags };

	return simple(w, &q, NULL);
}

int mdsw_setattr(struct mdsw *w, uint64_t ino, uint32_t mask, const struct mdsp_inode *attr,
		 struct mdsp_inode *out)
{
	struct mdsp_request q = { .op = MDSP_OP_SETATTR, .ino = ino, .mask = mask };

	if (attr)
		q.attr = *attr;
	return simple(w, &q, out);
}

int mdsw_readlink(struct mdsw *w, uint64_t ino, char **out)
{
	struct mdsp_request q = { .op = MDSP_OP_READLINK, .ino = ino };
	struct mdsp_reply rep;
	int r = mdsw_call(w, &q, &rep);

	*out = rep.link;
	rep.link = NULL;
	mdsw_reply_free(&rep);
	return r;
}

int mdsw_readdir(struct mdsw *w, uint64_t dir, uint64_t cookie, uint32_t max, struct mdsp_reply *rep)
{
	struct mdsp_request q = { .op = MDSP_OP_READDIR, .ino = dir, .cookie = cookie, .max_entries = max };

	return mdsw_call(w, &q, rep);
}

/* ---- the daemon ------------------------------------------------------------ */

int mdsproc_init(struct mdsproc *p, const char *parent)
{
	const char *bd = getenv("LOLIGO_BUILD_DIR");

	memset(p, 0, sizeof(*p));
	if (!parent)
		parent = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(p->dir, sizeof(p->dir), "%s/mdsXXXXXX", parent);
	if (!mkdtemp(p->dir))
		return -errno;
	snprintf(p->bin, sizeof(p->bin), "%s/mds/loligo-mds", bd ? bd : ".");
	if (access(p->bin, X_OK))
		return -ENOENT;
	/* the MDS's keyring and a client's, both holding client.admin */
	{
		struct mdsp_keyring kr = { 0 };
		char path[512], err[512];
		int r = mdsp_keyring_add(&kr, "client.admin", mdsw_test_key());

		snprintf(path, sizeof(path), "%s/keyring", p->dir);
		if (!r)
			r = mdsp_keyring_save(path, &kr, err, sizeof(err));
		snprintf(path, sizeof(path), "%s/client.keyring", p->dir);
		if (!r)
			r = mdsp_keyring_save(path, &kr, err, sizeof(err));
		mdsp_keyring_free(&kr);
		if (r)
			return r;
	}
	return 0;
}

/* Whether one of @p's own extra arguments sets the option of @arg (--name=...). */
static bool extra_sets(const struct mdsproc *p, const char *arg)
{
	size_t klen = strcspn(arg, "=");

	for (int k = 0; k < p->nextra; k++)
		if (!strncmp(p->extra[k], arg, klen) && (p->extra[k][klen] == '=' || !p->extra[k][klen]))
			return true;
	return false;
}

/*
 * LOLIGO_TEST_MDS_OPTS: options (--name=value, space-separated, at most 4)
 * given to every loligo-mds a suite starts, unless the test sets the same
 * option itself: ctest runs a suite a second time in another mode with it
 * (tests/integration/mds.cmake: test_mds_badinput_threads).
 */
static void env_args(const struct mdsproc *p, const char **argv, int *i)
{
	static char words[4][128];
	static int nwords = -1;
	const char *e = getenv("LOLIGO_TEST_MDS_OPTS");

	if (nwords < 0) {
		nwords = 0;
		while (e && *e && nwords < 4) {
			size_t len;

			e += strspn(e, " ");
			len = strcspn(e, " ");
			if (!len)
				break;
			snprintf(words[nwords++], sizeof(words[0]), "%.*s", (int)len, e);
			e += len;
		}
	}
	for (int w = 0; w < nwords; w++)
		if (!extra_sets(p, words[w]))
			argv[(*i)++] = words[w];
}

static void build_args(struct mdsproc *p, const char **argv, char bufs[][512], int *n)
{
	int i = 0, k;

	argv[i++] = p->bin;
	snprintf(bufs[0], 512, "--store_local_path=%s/store", p->dir);
	argv[i++] = bufs[0];
	snprintf(bufs[1], 512, "--log_file=%s/mds.log", p->dir);
	argv[i++] = bufs[1];
	argv[i++] = "--mds_addr=127.0.0.1";
	snprintf(bufs[3], 512, "--mds_keyring=%s/keyring", p->dir);
	argv[i++] = bufs[3];
	env_args(p, argv, &i);
	for (k = 0; k < p->nextra; k++)
		argv[i++] = p->extra[k];
	*n = i;
}

static int run_impl(struct mdsproc *p, const char *const *args, char *err, size_t errlen, bool out_too)
{
	const char *argv[40];
	char bufs[4][512];
	int n, pipefd[2], st;
	pid_t pid;

	build_args(p, argv, bufs, &n);
	while (*args && n < 38)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pipefd[1], 2);
		if (out_too)
			dup2(pipefd[1], 1);
		else if (nul >= 0)
			dup2(nul, 1);
		close(pipefd[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	{
		size_t got = 0;
		ssize_t r;
		char tmp[4096];

		while ((r = read(pipefd[0], tmp, sizeof(tmp))) > 0) {
			if (err && got + 1 < errlen) {
				size_t k = (size_t)r < errlen - 1 - got ? (size_t)r : errlen - 1 - got;

				memcpy(err + got, tmp, k);
				got += k;
			}
		}
		if (err && errlen)
			err[got] = 0;
	}
	close(pipefd[0]);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int mdsproc_run(struct mdsproc *p, const char *const *args, char *err, size_t errlen)
{
	return run_impl(p, args, err, errlen, false);
}

int mdsproc_run_output(struct mdsproc *p, const char *const *args, char *out, size_t outlen)
{
	return run_impl(p, args, out, outlen, true);
}

int mdsproc_mkfs(struct mdsproc *p)
{
	static const char *const args[] = { "--mkfs", NULL };

	return mdsproc_run(p, args, NULL, 0);
}

int mdsproc_start(struct mdsproc *p)
{
	const char *argv[40];
	char bufs[4][512], portfile[512], errfile[512];
	int n, i, st;
	pid_t pid;

	build_args(p, argv, bufs, &n);
	snprintf(portfile, sizeof(portfile), "%s/mds.port", p->dir);
	snprintf(errfile, sizeof(errfile), "%s/mds.stderr", p->dir);
	unlink(portfile);
	argv[n++] = "--port-file";
	argv[n++] = portfile;
	snprintf(bufs[2], 512, "--admin_socket=%s/mds.asok", p->dir);
	argv[n++] = bufs[2];
	if (!getenv("LOLIGO_TEST_MDS_PORT_FIXED"))
		argv[n++] = "--mds_port=0";
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_APPEND, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	p->pid = pid;
	for (i = 0; i < 3000; i++) {   /* 30 s: a loaded CI machine */
		FILE *f = fopen(portfile, "r");
		unsigned port = 0;

		if (f) {
			int ok = fscanf(f, "%u", &port) == 1;

			fclose(f);
			if (ok && port) {
				p->port = (uint16_t)port;
				return 0;
			}
		}
		if (waitpid(pid, &st, WNOHANG) == pid) {
			p->pid = 0;
			return -ECHILD;
		}
		usleep(10000);
	}
	return -ETIMEDOUT;
}

int mdsproc_stop(struct mdsproc *p, int sig)
{
	int st, i;

	if (p->pid <= 0)
		return -ECHILD;
	kill(p->pid, sig);
	for (i = 0; i < 3000; i++) {
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			p->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	p->pid = 0;
	return -ETIMEDOUT;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Remove @dir and all below it, unless LOLIGO_TEST_KEEP is set. */
static void rm_tree(const char *dir)
{
	if (dir[0] && !getenv("LOLIGO_TEST_KEEP"))
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int mdsproc_config_set(struct mdsproc *p, const char *var, const char *val)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *e;
	char path[512];
	int r;

	snprintf(path, sizeof(path), "%s/mds.asok", p->dir);
	json_object_object_add(req, "prefix", json_object_new_string("config set"));
	json_object_object_add(req, "var", json_object_new_string(var));
	json_object_object_add(req, "val", json_object_new_string(val));
	r = asok_request(path, req, &rep, 5000);
	json_object_put(req);
	if (!r && json_object_object_get_ex(rep, "error", &e)) {
		fprintf(stderr, "config set %s %s: %s\n", var, val, json_object_get_string(e));
		r = -EINVAL;
	}
	if (rep)
		json_object_put(rep);
	return r;
}

int mdsproc_perf(struct mdsproc *p, const char *group, const char *name, uint64_t *v)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *g, *e;
	char path[512];
	int r;

	snprintf(path, sizeof(path), "%s/mds.asok", p->dir);
	json_object_object_add(req, "prefix", json_object_new_string("perf dump"));
	r = asok_request(path, req, &rep, 5000);
	json_object_put(req);
	if (!r) {
		if (json_object_object_get_ex(rep, group, &g) && json_object_object_get_ex(g, name, &e))
			*v = (uint64_t)json_object_get_int64(e);
		else
			r = -ENOENT;
	}
	if (rep)
		json_object_put(rep);
	return r;
}

void mdsproc_cleanup(struct mdsproc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	rm_tree(p->dir);
}

int mdsproc_parent_init(char *dir, size_t len, const char *prefix)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(dir, len, "%s/%sXXXXXX", tmp, prefix);
	return mkdtemp(dir) ? 0 : -errno;
}

/* Print the last @max bytes (from a line start) of @path to stderr. */
static void print_tail(const char *path, long max)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	long size;
	size_t n;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fprintf(stderr, "---- %s (last %ld of %ld bytes) ----\n", path, size > max ? max : size, size);
	if (size > max) {
		fseek(f, size - max, SEEK_SET);
		if (!fgets(buf, sizeof(buf), f))         /* skip the partial first line */
			goto out;
	} else {
		fseek(f, 0, SEEK_SET);
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
out:
	fprintf(stderr, "---- end of %s ----\n", path);
	fclose(f);
}

/* A case's checked teardown (mdsproc_cleanup) removes its dir when it
 * passes; a case that fails exits its forked child without the teardown,
 * so a dir still here at the end is a failed (or crashed) case: its
 * mds.log is the only record of what the daemon saw, and goes with the
 * parent, so show its tail first. */
static void print_leftover_logs(const char *dir)
{
	char path[1024];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/mds.log", dir, de->d_name);
		if (access(path, R_OK) == 0)
			print_tail(path, 16384);
	}
	closedir(d);
}

void mdsproc_parent_remove(const char *dir)
{
	if (dir[0] && !getenv("LOLIGO_TEST_KEEP"))
		print_leftover_logs(dir);
	rm_tree(dir);
}
