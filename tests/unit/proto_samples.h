/*
 * proto_samples.h - sample MDS protocol messages with every field set, and
 * a deep comparison, shared by the proto unit tests and the fuzz seed
 * generator.  Header-only (static functions) so each user compiles its own.
 *
 * Every pointer in a sample is heap-allocated, so mdsp_msg_free() releases a
 * sample exactly as it releases a decoded message.
 */
#ifndef LOLIGO_TESTS_PROTO_SAMPLES_H
#define LOLIGO_TESTS_PROTO_SAMPLES_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds_proto/proto.h"

/* A string of @n bytes cycling through printable and high bytes (never NUL):
 * names on the wire are bytes, not text. */
static __attribute__((unused)) char *sample_str(size_t n, unsigned seed)
{
	char *s = malloc(n + 1);
	size_t i;

	for (i = 0; i < n; i++)
		s[i] = (char)(1 + (seed + i * 7) % 255);
	s[n] = '\0';
	return s;
}

static __attribute__((unused)) uint8_t *sample_blob(size_t n, unsigned seed)
{
	uint8_t *d = malloc(n ? n : 1);
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = (uint8_t)(seed + i * 13);  /* includes NULs */
	return d;
}

static __attribute__((unused)) void sample_inode(struct mdsp_inode *in, uint64_t seed)
{
	in->ino = 0x1000000000ull + seed;
	in->generation = seed * 3 + 1;
	in->mode = 0100644 + (uint32_t)(seed % 8);
	in->uid = 1000 + (uint32_t)seed;
	in->gid = 2000 + (uint32_t)seed;
	in->nlink = 1 + (uint32_t)(seed % 5);
	in->size = 0xfedcba9876543210ull ^ seed;
	in->rdev = 0x0801 + seed;
	in->atime = (struct mdsp_time){ 1700000000 + (int64_t)seed, 111111111 };
	in->mtime = (struct mdsp_time){ -5 - (int64_t)seed, 222222222 };
	in->ctime = (struct mdsp_time){ INT64_MAX - (int64_t)seed, 999999999 };
	in->btime = (struct mdsp_time){ INT64_MIN + (int64_t)seed, 1 };
	in->change = seed << 20 | 7;
	in->object_size = 4u << 20;
	in->max_size = 1ull << 40;
	in->files = seed * 11;
	in->blocks = (seed + 1) * 4096;
	in->flags = seed % 2 ? MDSP_FL_APPEND : MDSP_FL_IMMUTABLE;
	/* v4 */
	in->rbytes = 0x123456789ull * (seed + 1);
	in->rfiles = seed * 13;
	in->rsubdirs = seed * 17;
	in->rctime = (struct mdsp_time){ 1800000000 + (int64_t)seed, 333333333 };
	in->quota_max_bytes = seed % 3 ? 0 : 1ull << 36;
	in->quota_max_files = seed * 1000;
	in->quota_room = seed % 2 ? MDSP_QUOTA_UNSAID : seed;
	in->stripe_unit = 65536;
	in->stripe_count = (uint32_t)seed % 7 + 1;
	in->pool = (uint32_t)seed % 3;
	in->layout_flags = seed % 2 ? MDSP_LAYOUT_DIR_SET : 0;
}

static __attribute__((unused)) void sample_lock(struct mdsp_lock *l, uint64_t seed)
{
	l->type = 1;
	l->flags = 3;
	l->start = seed;
	l->len = UINT64_MAX - seed;
	l->owner = 0xdeadbeefcafef00dull ^ seed;
	l->pid = 4242;
	l->owner_ns = MDSP_LOCK_NS_NFS;
	l->session_id = 0x5e55000000000000ull + seed;
	l->wait_tid = 0x7000000000000000ull ^ seed;
	l->ino = 0x1000000000ull + seed;
}

static __attribute__((unused)) void sample_session(struct mdsp_msg *m, uint32_t op, uint32_t ncaps)
{
	struct mdsp_session *s = &m->session;
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_SESSION;
	m->seq = 17;
	s->op = op;
	s->session_id = 0x123456789abcdefull;
	s->seq = 99;
	s->client_name = sample_str(MDSP_CLIENT_NAME_MAX, op);
	for (i = 0; i < 16; i++)
		s->client_uuid[i] = (uint8_t)(0xa0 + i);
	s->lease_ms = 60000;
	s->result = -13;
	s->reason = strdup("evicted by the admin");
	s->mds_epoch = 0x55aa;
	s->max_file_size = (1ull << 40) + op;
	if (op == MDSP_SESSION_REQUEST_OPEN || op == MDSP_SESSION_RECONNECT) {
		static const char *const keys[] = { "hostname", "mount_point", "version", "entity" };

		s->nmeta = 4;
		s->meta = calloc(s->nmeta, sizeof(*s->meta));
		for (i = 0; i < s->nmeta; i++) {
			s->meta[i].key = strdup(keys[i]);
			s->meta[i].val = i == 1 ? sample_str(MDSP_META_VAL_MAX, op) : strdup("x");
		}
	}
	s->ncaps = ncaps;
	s->caps = ncaps ? calloc(ncaps, sizeof(*s->caps)) : NULL;
	for (i = 0; i < ncaps; i++) {
		s->caps[i].ino = 0x10000 + i;
		s->caps[i].caps = 0x3f & (i + 1);
		s->caps[i].wanted = 0x2a;
		s->caps[i].dname = i % 2 && i < 16 ? sample_str(1 + i * 9, i) : NULL;
		s->caps[i].seq = 0xabc000 + i;
	}
	for (i = 0; i < MDSP_KEY_LEN; i++) {
		s->secret[i] = (uint8_t)(0x11 * i + op);
		s->proof[i] = (uint8_t)(0x29 * i + 3);
	}
	/* v5: a RECONNECT re-asserts as many locks as it has caps */
	s->nlocks = ncaps;
	s->locks = ncaps ? calloc(ncaps, sizeof(*s->locks)) : NULL;
	for (i = 0; i < ncaps; i++)
		sample_lock(&s->locks[i], 100 + i);
	s->store_addr = strdup("v2:127.0.0.1:0/3710147553");
	/* v6: a renewal says what is blocked on the client */
	if (op == MDSP_SESSION_REQUEST_RENEW) {
		s->slow_ops = 3;
		s->slow_op = sample_str(MDSP_SLOW_OP_MAX, op);
	}
	/* v7: an open reclaims its dead predecessor's session */
	if (op == MDSP_SESSION_REQUEST_OPEN) {
		s->reclaim_sid = 0x7ec1a1000000000aull;
		for (i = 0; i < 16; i++)
			s->reclaim_uuid[i] = (uint8_t)(0x30 + 7 * i);
	}
	/* v8: a reconnect bounds the tids naming its old delegations */
	if (op == MDSP_SESSION_RECONNECT)
		s->deleg_tid = 0xde1e6000000000d7ull;
}

static __attribute__((unused)) void sample_auth(struct mdsp_msg *m, uint32_t op)
{
	struct mdsp_auth *a = &m->auth;
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_AUTH;
	m->seq = 3;
	a->op = op;
	a->flags = MDSP_AUTH_HAVE_KEY | MDSP_AUTH_REQUIRED;
	a->name = strdup("client.admin");
	for (i = 0; i < MDSP_NONCE_LEN; i++) {
		a->nonce[i] = (uint8_t)(7 * i + 1);
		a->proof[i] = (uint8_t)(13 * i + 5);
	}
	a->result = -ENOKEY;
	a->reason = op == MDSP_AUTH_REJECT ? strdup("no key for client.admin") : NULL;
}

/* A request with every field set; @namelen sizes name, name2 and target. */
static __attribute__((unused)) void sample_request(struct mdsp_msg *m, uint32_t op, size_t namelen,
			   uint32_t ngroups, uint32_t data_len)
{
	struct mdsp_request *q = &m->request;
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_REQUEST;
	m->seq = 1000 + op;
	q->tid = 0x7000000000000000ull + op;
	q->oldest_tid = 5;
	q->attempt = 2;
	q->flags = MDSP_REQ_REPLAY | MDSP_REQ_RETRY;
	q->op = op;
	q->caller.uid = 1000;
	q->caller.gid = 100;
	q->caller.ngroups = ngroups;
	for (i = 0; i < ngroups; i++)
		q->caller.groups[i] = 5000 + i;
	q->caller.pid = 31337;
	q->ino = MDSP_ROOT_INO;
	q->name = sample_str(namelen, op);
	q->ino2 = 0x1000000001ull;
	q->name2 = sample_str(namelen, op + 1);
	q->target = sample_str(namelen * 4 > MDSP_PATH_MAX ? MDSP_PATH_MAX : namelen * 4, op + 2);
	q->mode = 040755;
	q->oflags = 0101;
	q->rdev = 0x0103;
	q->mask = 0x3ff;
	sample_inode(&q->attr, op);
	q->cookie = 0xc00c1e;
	q->max_entries = 512;
	q->data_len = data_len;
	q->data = data_len ? sample_blob(data_len, op) : NULL;
	sample_lock(&q->lock, op);
	q->want_ino = 0x10000401ull + op;
	q->umask = 022 + op;
}

static __attribute__((unused)) void sample_reply(struct mdsp_msg *m, uint32_t nentries, size_t namelen,
			 uint32_t data_len)
{
	struct mdsp_reply *r = &m->reply;
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_REPLY;
	m->seq = 77;
	r->tid = 0x7000000000000001ull;
	r->result = -39;
	r->flags = MDSP_REPLY_SAFE | MDSP_REPLY_REPLAYED;
	r->has_dir = true;
	sample_inode(&r->dir, 1);
	r->dname = sample_str(namelen, 3);
	r->has_target = true;
	sample_inode(&r->target, 2);
	r->caps = MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED | MDSP_CAP_FILE_RD;
	r->cap_seq = 12;
	r->dir_caps = MDSP_CAP_PIN | MDSP_CAP_FILE_SHARED;
	r->dir_cap_seq = 0x1122334455667788ull;
	r->trace_flags = MDSP_TRACE_LEASE | MDSP_TRACE_ORPHAN;
	r->lease_seq = 0x8877665544332211ull;
	r->deleg_start = 0x10000000100ull;
	r->deleg_len = 1000;
	r->nentries = nentries;
	r->entries = nentries ? calloc(nentries, sizeof(*r->entries)) : NULL;
	for (i = 0; i < nentries; i++) {
		r->entries[i].name = sample_str(1 + (i * 31) % namelen, i);
		r->entries[i].cookie = (uint64_t)i * 1000 + 1;
		sample_inode(&r->entries[i].inode, 100 + i);
		r->entries[i].caps = MDSP_CAP_ALL & (i * 37 + 1);
		r->entries[i].cap_seq = 1000 + i;
		r->entries[i].lease = i % 2;
		r->entries[i].lease_seq = 0xa0000000ull + i;
	}
	r->end = true;
	r->link = sample_str(namelen * 2, 9);
	r->data_len = data_len;
	r->data = data_len ? sample_blob(data_len, 5) : NULL;
	sample_lock(&r->lock, 8);
	r->statfs = (struct mdsp_statfs){ 4096, 1u << 30, 1u << 29, 1u << 28, 1u << 20, 1u << 19, 255 };
	r->n_ext = 2;
	r->ext = calloc(2, sizeof(*r->ext));
	r->ext[0] = (struct mdsp_extent){ 1600u << 10, 52u << 10 };
	r->ext[1] = (struct mdsp_extent){ 3u << 20, 4096 };
}

static __attribute__((unused)) void sample_caps(struct mdsp_msg *m, uint32_t op)
{
	struct mdsp_caps *c = &m->caps;

	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_CAPS;
	m->seq = 3;
	c->op = op;
	c->ino = 0x1000000042ull;
	c->caps = MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER;
	c->wanted = 0x3f;
	c->seq = 9;
	c->flush_tid = 1234;
	c->dirty = MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME;
	sample_inode(&c->attr, 42);
	if (op >= MDSP_CAPS_LEASE_REVOKE)
		c->dname = sample_str(12, op);
	if (op == MDSP_CAPS_FLUSH) {
		/* v3: what the data objects hold, two ranges added and one freed */
		c->has_ext = true;
		c->dirty |= MDSP_DIRTY_BLOCKS;
		c->n_ext_add = 2;
		c->ext_add = calloc(2, sizeof(*c->ext_add));
		c->ext_add[0] = (struct mdsp_extent){ 0, 8192 };
		c->ext_add[1] = (struct mdsp_extent){ 1u << 20, 4096 };
		c->n_ext_rm = 1;
		c->ext_rm = calloc(1, sizeof(*c->ext_rm));
		c->ext_rm[0] = (struct mdsp_extent){ 65536, 4096 };
	}
}

static __attribute__((unused)) void sample_command(struct mdsp_msg *m, size_t jsonlen)
{
	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_COMMAND;
	m->seq = 4;
	m->command.tid = 8;
	m->command.json = jsonlen ? sample_str(jsonlen, 1) : strdup("{\"prefix\": \"session ls\"}");
}

static __attribute__((unused)) void sample_command_reply(struct mdsp_msg *m, size_t jsonlen)
{
	memset(m, 0, sizeof(*m));
	m->type = MDSP_MSG_COMMAND_REPLY;
	m->seq = 5;
	m->command_reply.tid = 8;
	m->command_reply.result = -22;
	m->command_reply.json = jsonlen ? sample_str(jsonlen, 2) : strdup("[{\"id\": 4}]");
}

/*
 * The small samples: one of each message type (several per type where the
 * shape differs), small enough to truncate at every offset and bit-flip.
 * Fills @out (room for at least 40) and returns the count.
 */
static __attribute__((unused)) int sample_all_small(struct mdsp_msg *out)
{
	int n = 0;
	uint32_t op;

	sample_session(&out[n++], MDSP_SESSION_REQUEST_OPEN, 0);
	sample_session(&out[n++], MDSP_SESSION_RECONNECT, 5);
	for (op = MDSP_OP_LOOKUP; op < MDSP_OP_MAX; op++)
		sample_request(&out[n++], op, 12, 3, op == MDSP_OP_SETXATTR ? 40 : 0);
	sample_reply(&out[n++], 0, 10, 0);
	sample_reply(&out[n++], 4, 20, 33);
	sample_caps(&out[n++], MDSP_CAPS_FLUSH);
	sample_caps(&out[n++], MDSP_CAPS_LEASE_REVOKE);
	sample_command(&out[n++], 0);
	sample_command_reply(&out[n++], 0);
	sample_auth(&out[n++], MDSP_AUTH_HELLO);
	sample_auth(&out[n++], MDSP_AUTH_REJECT);
	return n;
}

/* ---- deep comparison --------------------------------------------------- */

static __attribute__((unused)) int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static __attribute__((unused)) int blob_eq(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
	if (alen != blen)
		return 0;
	return alen == 0 || memcmp(a, b, alen) == 0;
}

static __attribute__((unused)) int time_eq(const struct mdsp_time *a, const struct mdsp_time *b)
{
	return a->sec == b->sec && a->nsec == b->nsec;
}

static __attribute__((unused)) int inode_eq(const struct mdsp_inode *a, const struct mdsp_inode *b)
{
	return a->ino == b->ino && a->generation == b->generation && a->mode == b->mode &&
	       a->uid == b->uid && a->gid == b->gid && a->nlink == b->nlink &&
	       a->size == b->size && a->rdev == b->rdev && time_eq(&a->atime, &b->atime) &&
	       time_eq(&a->mtime, &b->mtime) && time_eq(&a->ctime, &b->ctime) &&
	       time_eq(&a->btime, &b->btime) && a->change == b->change &&
	       a->object_size == b->object_size && a->max_size == b->max_size &&
	       a->files == b->files && a->blocks == b->blocks && a->flags == b->flags &&
	       a->rbytes == b->rbytes && a->rfiles == b->rfiles && a->rsubdirs == b->rsubdirs &&
	       time_eq(&a->rctime, &b->rctime) && a->quota_max_bytes == b->quota_max_bytes &&
	       a->quota_max_files == b->quota_max_files && a->quota_room == b->quota_room &&
	       a->stripe_unit == b->stripe_unit && a->stripe_count == b->stripe_count && a->pool == b->pool &&
	       a->layout_flags == b->layout_flags;
}

static __attribute__((unused)) int ext_eq(const struct mdsp_extent *a, uint32_t na, const struct mdsp_extent *b,
					  uint32_t nb)
{
	if (na != nb)
		return 0;
	for (uint32_t i = 0; i < na; i++)
		if (a[i].off != b[i].off || a[i].len != b[i].len)
			return 0;
	return 1;
}

static __attribute__((unused)) int lock_eq(const struct mdsp_lock *a, const struct mdsp_lock *b)
{
	return a->type == b->type && a->flags == b->flags && a->start == b->start &&
	       a->len == b->len && a->owner == b->owner && a->pid == b->pid &&
	       a->owner_ns == b->owner_ns && a->session_id == b->session_id && a->wait_tid == b->wait_tid &&
	       a->ino == b->ino;
}

static __attribute__((unused)) int msg_eq(const struct mdsp_msg *a, const struct mdsp_msg *b)
{
	uint32_t i;

	if (a->type != b->type || a->seq != b->seq)
		return 0;
	switch (a->type) {
	case MDSP_MSG_SESSION: {
		const struct mdsp_session *x = &a->session, *y = &b->session;

		if (x->op != y->op || x->session_id != y->session_id || x->seq != y->seq ||
		    !str_eq(x->client_name, y->client_name) ||
		    memcmp(x->client_uuid, y->client_uuid, 16) || x->lease_ms != y->lease_ms ||
		    x->result != y->result || !str_eq(x->reason, y->reason) ||
		    x->mds_epoch != y->mds_epoch || x->ncaps != y->ncaps ||
		    memcmp(x->secret, y->secret, MDSP_KEY_LEN) || memcmp(x->proof, y->proof, MDSP_MAC_LEN) ||
		    x->max_file_size != y->max_file_size || x->nmeta != y->nmeta || x->nlocks != y->nlocks ||
		    !str_eq(x->store_addr, y->store_addr) || x->slow_ops != y->slow_ops ||
		    !str_eq(x->slow_op, y->slow_op) || x->reclaim_sid != y->reclaim_sid ||
		    memcmp(x->reclaim_uuid, y->reclaim_uuid, 16) || x->deleg_tid != y->deleg_tid)
			return 0;
		for (i = 0; i < x->nmeta; i++)
			if (!str_eq(x->meta[i].key, y->meta[i].key) || !str_eq(x->meta[i].val, y->meta[i].val))
				return 0;
		for (i = 0; i < x->ncaps; i++)
			if (x->caps[i].ino != y->caps[i].ino || x->caps[i].caps != y->caps[i].caps ||
			    x->caps[i].wanted != y->caps[i].wanted || !str_eq(x->caps[i].dname, y->caps[i].dname) ||
			    x->caps[i].seq != y->caps[i].seq)
				return 0;
		for (i = 0; i < x->nlocks; i++)
			if (!lock_eq(&x->locks[i], &y->locks[i]))
				return 0;
		return 1;
	}
	case MDSP_MSG_AUTH: {
		const struct mdsp_auth *x = &a->auth, *y = &b->auth;

		return x->op == y->op && x->flags == y->flags && str_eq(x->name, y->name) &&
		       !memcmp(x->nonce, y->nonce, MDSP_NONCE_LEN) && !memcmp(x->proof, y->proof, MDSP_MAC_LEN) &&
		       x->result == y->result && str_eq(x->reason, y->reason);
	}
	case MDSP_MSG_REQUEST: {
		const struct mdsp_request *x = &a->request, *y = &b->request;

		if (x->tid != y->tid || x->oldest_tid != y->oldest_tid || x->attempt != y->attempt ||
		    x->flags != y->flags || x->op != y->op || x->caller.uid != y->caller.uid ||
		    x->caller.gid != y->caller.gid || x->caller.ngroups != y->caller.ngroups ||
		    x->caller.pid != y->caller.pid)
			return 0;
		for (i = 0; i < x->caller.ngroups; i++)
			if (x->caller.groups[i] != y->caller.groups[i])
				return 0;
		return x->ino == y->ino && str_eq(x->name, y->name) && x->ino2 == y->ino2 &&
		       str_eq(x->name2, y->name2) && str_eq(x->target, y->target) &&
		       x->mode == y->mode && x->oflags == y->oflags && x->rdev == y->rdev &&
		       x->mask == y->mask && inode_eq(&x->attr, &y->attr) &&
		       x->cookie == y->cookie && x->max_entries == y->max_entries &&
		       blob_eq(x->data, x->data_len, y->data, y->data_len) &&
		       lock_eq(&x->lock, &y->lock) && x->want_ino == y->want_ino &&
		       x->umask == y->umask;
	}
	case MDSP_MSG_REPLY: {
		const struct mdsp_reply *x = &a->reply, *y = &b->reply;

		if (x->tid != y->tid || x->result != y->result || x->flags != y->flags ||
		    x->has_dir != y->has_dir || (x->has_dir && !inode_eq(&x->dir, &y->dir)) ||
		    !str_eq(x->dname, y->dname) || x->has_target != y->has_target ||
		    (x->has_target && !inode_eq(&x->target, &y->target)) || x->caps != y->caps ||
		    x->cap_seq != y->cap_seq || x->nentries != y->nentries || x->dir_caps != y->dir_caps ||
		    x->dir_cap_seq != y->dir_cap_seq || x->trace_flags != y->trace_flags ||
		    x->lease_seq != y->lease_seq || x->deleg_start != y->deleg_start ||
		    x->deleg_len != y->deleg_len || !ext_eq(x->ext, x->n_ext, y->ext, y->n_ext))
			return 0;
		for (i = 0; i < x->nentries; i++)
			if (!str_eq(x->entries[i].name, y->entries[i].name) ||
			    x->entries[i].cookie != y->entries[i].cookie ||
			    !inode_eq(&x->entries[i].inode, &y->entries[i].inode) ||
			    x->entries[i].caps != y->entries[i].caps || x->entries[i].cap_seq != y->entries[i].cap_seq ||
			    x->entries[i].lease != y->entries[i].lease ||
			    x->entries[i].lease_seq != y->entries[i].lease_seq)
				return 0;
		return x->end == y->end && str_eq(x->link, y->link) &&
		       blob_eq(x->data, x->data_len, y->data, y->data_len) &&
		       lock_eq(&x->lock, &y->lock) && x->statfs.bsize == y->statfs.bsize &&
		       x->statfs.blocks == y->statfs.blocks && x->statfs.bfree == y->statfs.bfree &&
		       x->statfs.bavail == y->statfs.bavail && x->statfs.files == y->statfs.files &&
		       x->statfs.ffree == y->statfs.ffree && x->statfs.namemax == y->statfs.namemax;
	}
	case MDSP_MSG_CAPS: {
		const struct mdsp_caps *x = &a->caps, *y = &b->caps;

		return x->op == y->op && x->ino == y->ino && x->caps == y->caps &&
		       x->wanted == y->wanted && x->seq == y->seq && x->flush_tid == y->flush_tid &&
		       x->dirty == y->dirty && inode_eq(&x->attr, &y->attr) && str_eq(x->dname, y->dname) &&
		       x->has_ext == y->has_ext && ext_eq(x->ext_add, x->n_ext_add, y->ext_add, y->n_ext_add) &&
		       ext_eq(x->ext_rm, x->n_ext_rm, y->ext_rm, y->n_ext_rm);
	}
	case MDSP_MSG_COMMAND:
		return a->command.tid == b->command.tid && str_eq(a->command.json, b->command.json);
	case MDSP_MSG_COMMAND_REPLY:
		return a->command_reply.tid == b->command_reply.tid &&
		       a->command_reply.result == b->command_reply.result &&
		       str_eq(a->command_reply.json, b->command_reply.json);
	}
	return 0;
}

#endif
