/*
 * test_mds_core.c - the MDS core in-process: the namespace (mdcache), the
 * POSIX semantics of the ops (server), caps (locker) and the journal,
 * driven through server_dispatch() as the request pipeline drives it, over
 * the in-memory store (store/mem.h).  No daemon, no socket, no clock:
 * every case is a sequence of requests and what they answer, and a
 * restart is a second MDS opened over the same store in the same process.
 *
 *   namespace       mkdir, create, lookup, readdir, rename, unlink, rmdir:
 *                   results and the errors POSIX names (EEXIST, ENOENT,
 *                   ENOTEMPTY, ENOTDIR, EISDIR), names that are not one
 *                   path component refused
 *   permissions     a caller without write permission on the directory
 *                   gets EACCES and changes nothing; the sticky bit keeps
 *                   another user's file; setgid directories pass on their
 *                   group
 *   caps            a create grants the creating session caps on the new
 *                   file; a second session's open for writing of a file
 *                   the first holds Fw|Fb of is parked (LOCKER_WAIT), not
 *                   answered
 *   restart         what was journaled is there after the MDS stops
 *                   (journal drained and expired) and another opens the
 *                   same store: names, modes, sizes, inode numbers, and
 *                   new inode numbers never reuse old ones
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/instance.h"
#include "mds/journal.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/mds.h"
#include "mds/server.h"
#include "mds/session.h"
#include "store/mem.h"

#define ROOT_INO 1

struct core {
	struct mds *m;
	struct session *s, *s2;
	uint64_t tid;
};

static char store_name[64];
static struct store *keep;        /* holds the named store across restarts */
static int ncase;

static int open_pools(struct mds *m, bool mkfs)
{
	int r;

	if (mkfs) {
		r = store_pool_create(m->st, m->meta_pool_name);
		if (!r)
			r = store_pool_create(m->st, m->data_pool_name);
		if (r)
			return r;
	}
	r = store_pool_open(m->st, m->meta_pool_name, NULL, &m->meta);
	return r ? r : store_pool_open(m->st, m->data_pool_name, NULL, &m->data);
}

/* An MDS over the in-memory store @store_name, made anew with @mkfs; two open sessions. */
static void core_start(struct core *c, bool mkfs)
{
	char err[MDS_ERR_LEN] = "";
	struct mds *m;

	memset(c, 0, sizeof(*c));
	m = c->m = mds_new();
	ck_assert_ptr_nonnull(m);
	m->object_size = 4u << 20;
	m->max_file_size = 1ull << 40;
	m->fs_name = strdup("core");
	m->meta_pool_name = strdup("core_metadata");
	m->data_pool_name = strdup("core_data");
	ck_assert_int_eq(store_open_mem(store_name, &m->st), 0);
	ck_assert_int_eq(open_pools(m, mkfs), 0);
	if (mkfs)
		ck_assert_msg(mds_mkfs(m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(mds_load(m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(mds_replay(m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(journal_start(m), 0);
	pthread_mutex_lock(&m->lock);
	c->s = session_new_locked(m, m->next_sid++);
	c->s2 = session_new_locked(m, m->next_sid++);
	ck_assert(c->s && c->s2);
	c->s->state = c->s2->state = SESSION_OPEN;
	pthread_mutex_unlock(&m->lock);
}

/* Stop as the daemon does: the journal written and expired into the objects, everything freed. */
static void core_stop(struct core *c)
{
	struct mds *m = c->m;

	journal_drain(m, now_mono_ns() + 60ull * 1000000000);
	journal_stop(m);
	mds_free_state(m);
	pthread_mutex_lock(&m->lock);
	mdcache_free(m);
	pthread_mutex_unlock(&m->lock);
	journal_free(m);
	mds_close_store(m);
	mds_destroy(m);
	c->m = NULL;
}

static void setup(void)
{
	snprintf(store_name, sizeof(store_name), "core-%d-%d", (int)getpid(), ncase++);
	ck_assert_int_eq(store_open_mem(store_name, &keep), 0);
}

static void teardown(void)
{
	store_close(keep);
	keep = NULL;
}

struct res {
	int result;
	uint64_t ino;            /* the target's, when there is one */
	uint32_t mode, uid, gid, caps;
	uint64_t size;
	uint32_t nentries;
	char names[512];         /* readdir: the names, space-separated */
};

/*
 * Run @req for session @s as the pipeline does (under mds->lock, the
 * mutation's edits journaled with it) and keep what its reply says.
 */
static struct res run(struct core *c, struct session *s, struct mdsp_request *req)
{
	struct mdsp_msg msg;
	struct mdsp_reply *rep = &msg.reply;
	struct res out;
	struct txn t;

	memset(&msg, 0, sizeof(msg));
	memset(&out, 0, sizeof(out));
	msg.type = MDSP_MSG_REPLY;
	req->tid = ++c->tid;
	req->attempt = 1;
	pthread_mutex_lock(&c->m->lock);
	txn_init(&t);
	server_dispatch(c->m, s, req, rep, &t);
	if (rep->result != LOCKER_WAIT) {
		txn_finish(c->m, &t);
		if (server_op_journaled(req))
			journal_submit_locked(c->m, &t, NULL);
	} else {
		locker_gather_release(c->m, &t);
	}
	pthread_mutex_unlock(&c->m->lock);
	txn_free(&t);
	out.result = rep->result;
	if (rep->has_target) {
		out.ino = rep->target.ino;
		out.mode = rep->target.mode;
		out.uid = rep->target.uid;
		out.gid = rep->target.gid;
		out.size = rep->target.size;
		out.caps = rep->caps;
	}
	out.nentries = rep->nentries;
	for (uint32_t i = 0; i < rep->nentries; i++) {
		size_t l = strlen(out.names);

		snprintf(out.names + l, sizeof(out.names) - l, "%s%s", l ? " " : "", rep->entries[i].name);
	}
	if (rep->result == LOCKER_WAIT)
		memset(rep, 0, sizeof(*rep));   /* a parked request answers nothing */
	mdsp_msg_free(&msg);
	return out;
}

static struct mdsp_request rq(uint32_t op, uint64_t ino, const char *name, uint32_t uid, uint32_t gid)
{
	struct mdsp_request r;

	memset(&r, 0, sizeof(r));
	r.op = op;
	r.ino = ino;
	r.name = (char *)name;
	r.caller.uid = uid;
	r.caller.gid = gid;
	return r;
}

static struct res mk(struct core *c, uint32_t op, uint64_t dir, const char *name, uint32_t mode, uint32_t uid)
{
	struct mdsp_request r = rq(op, dir, name, uid, uid);

	r.mode = mode;
	if (op == MDSP_OP_CREATE)
		r.oflags = O_RDWR | O_CREAT | O_EXCL;
	return run(c, c->s, &r);
}

static struct res lookup(struct core *c, uint64_t dir, const char *name)
{
	struct mdsp_request r = rq(MDSP_OP_LOOKUP, dir, name, 0, 0);

	return run(c, c->s, &r);
}

static struct res simple(struct core *c, uint32_t op, uint64_t dir, const char *name, uint32_t uid)
{
	struct mdsp_request r = rq(op, dir, name, uid, uid);

	return run(c, c->s, &r);
}

static struct res do_rename(struct core *c, uint64_t d1, const char *n1, uint64_t d2, const char *n2)
{
	struct mdsp_request r = rq(MDSP_OP_RENAME, d1, n1, 0, 0);

	r.ino2 = d2;
	r.name2 = (char *)n2;
	return run(c, c->s, &r);
}

static struct res list(struct core *c, uint64_t dir)
{
	struct mdsp_request r = rq(MDSP_OP_READDIR, dir, NULL, 0, 0);

	r.max_entries = 100;
	return run(c, c->s, &r);
}

START_TEST(t_namespace)
{
	struct core c;
	struct res d, f, r;

	core_start(&c, true);
	d = mk(&c, MDSP_OP_MKDIR, ROOT_INO, "d", S_IFDIR | 0755, 0);
	ck_assert_int_eq(d.result, 0);
	ck_assert(S_ISDIR(d.mode));
	f = mk(&c, MDSP_OP_CREATE, d.ino, "f", S_IFREG | 0644, 0);
	ck_assert_int_eq(f.result, 0);
	ck_assert(S_ISREG(f.mode));
	ck_assert_uint_ne(f.ino, d.ino);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, d.ino, "f", S_IFREG | 0644, 0).result, -EEXIST);
	ck_assert_int_eq(mk(&c, MDSP_OP_MKDIR, d.ino, "f", S_IFDIR | 0755, 0).result, -EEXIST);
	r = lookup(&c, d.ino, "f");
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.ino, f.ino);
	ck_assert_int_eq(lookup(&c, d.ino, "nope").result, -ENOENT);
	ck_assert_int_eq(lookup(&c, f.ino, "x").result, -ENOTDIR);
	r = list(&c, d.ino);
	ck_assert_int_eq(r.result, 0);
	ck_assert_str_eq(r.names, "f");

	/* rename within and across directories, over an existing file */
	ck_assert_int_eq(do_rename(&c, d.ino, "f", d.ino, "g").result, 0);
	ck_assert_int_eq(lookup(&c, d.ino, "f").result, -ENOENT);
	ck_assert_uint_eq(lookup(&c, d.ino, "g").ino, f.ino);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, ROOT_INO, "h", S_IFREG | 0600, 0).result, 0);
	ck_assert_int_eq(do_rename(&c, d.ino, "g", ROOT_INO, "h").result, 0);
	ck_assert_uint_eq(lookup(&c, ROOT_INO, "h").ino, f.ino);
	ck_assert_int_eq(lookup(&c, d.ino, "g").result, -ENOENT);
	/* a directory over a file, a file over a directory */
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, d.ino, "x", S_IFREG | 0644, 0).result, 0);
	ck_assert_int_eq(do_rename(&c, ROOT_INO, "d", ROOT_INO, "h").result, -ENOTDIR);
	ck_assert_int_eq(do_rename(&c, ROOT_INO, "h", ROOT_INO, "d").result, -EISDIR);

	/* rmdir of a directory with a name in it; unlink of a directory */
	ck_assert_int_eq(simple(&c, MDSP_OP_RMDIR, ROOT_INO, "d", 0).result, -ENOTEMPTY);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, ROOT_INO, "d", 0).result, -EISDIR);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, d.ino, "x", 0).result, 0);
	ck_assert_int_eq(simple(&c, MDSP_OP_RMDIR, ROOT_INO, "d", 0).result, 0);
	ck_assert_int_eq(lookup(&c, ROOT_INO, "d").result, -ENOENT);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, ROOT_INO, "d", 0).result, -ENOENT);

	/* not one path component */
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, ROOT_INO, "a/b", S_IFREG | 0644, 0).result, -EINVAL);
	ck_assert_int_lt(mk(&c, MDSP_OP_CREATE, ROOT_INO, "", S_IFREG | 0644, 0).result, 0);
	ck_assert_int_lt(mk(&c, MDSP_OP_MKDIR, ROOT_INO, "..", S_IFDIR | 0755, 0).result, 0);
	r = list(&c, ROOT_INO);
	ck_assert_str_eq(r.names, "h");
	core_stop(&c);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The readdir cookie index (mdcache.c, a treap through the dentries):
 * after random adds and removes, a walk by mdir_cookie_find gives every
 * cookie left once, in order, and a search from any point finds the first
 * cookie at or after it; both hashed cookies and sequence numbers.
 */
START_TEST(t_cookie_index)
{
	enum { N = 20000 };
	static struct mdentry *dns[N];
	static uint64_t cookies[N], left[N];
	struct core c;
	struct mdir *d;
	struct res dr;
	char name[32];
	unsigned int seed = 42;
	size_t nleft = 0;

	core_start(&c, true);
	dr = mk(&c, MDSP_OP_MKDIR, ROOT_INO, "idx", S_IFDIR | 0755, 0);
	ck_assert_int_eq(dr.result, 0);
	pthread_mutex_lock(&c.m->lock);
	ck_assert_int_eq(mdir_get(c.m, dr.ino, &d), 0);
	for (int i = 0; i < N; i++) {
		/* half sequence numbers, half spread as the hashed ones are */
		cookies[i] = i % 2 ? 100 + (uint64_t)i : (1ull << 61) | ((uint64_t)rand_r(&seed) << 30) | (uint64_t)i;
		snprintf(name, sizeof(name), "n%d", i);
		dns[i] = mdir_add(c.m, d, name, 1000000 + (uint64_t)i, S_IFREG, true, cookies[i], NULL);
		ck_assert_ptr_nonnull(dns[i]);
	}
	/* a cookie taken is refused */
	ck_assert_ptr_null(mdir_add(c.m, d, "dup", 2000000, S_IFREG, true, cookies[7], NULL));
	for (int i = 0; i < N; i++) {
		if (rand_r(&seed) % 3 == 0)
			mdir_del(c.m, dns[i], NULL);
		else
			left[nleft++] = cookies[i];
	}
	qsort(left, nleft, sizeof(left[0]), cmp_u64);
	uint64_t idx = 0;
	struct mdentry *dn;
	size_t k = 0;
	while ((dn = mdir_cookie_find(d, &idx))) {
		ck_assert_uint_lt(k, nleft);
		ck_assert_uint_eq(idx, left[k]);
		ck_assert_uint_eq(dn->cookie, left[k]);
		k++;
		idx++;
	}
	ck_assert_uint_eq(k, nleft);
	for (int i = 0; i < 2000; i++) {
		uint64_t q = i % 2 ? (uint64_t)rand_r(&seed) % (N + 200) : (1ull << 61) | ((uint64_t)rand_r(&seed) << 31);
		size_t lo = 0, hi = nleft;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (left[mid] < q)
				lo = mid + 1;
			else
				hi = mid;
		}
		idx = q;
		dn = mdir_cookie_find(d, &idx);
		if (lo == nleft) {
			ck_assert_ptr_null(dn);
		} else {
			ck_assert_ptr_nonnull(dn);
			ck_assert_uint_eq(idx, left[lo]);
		}
	}
	/* the in-order walk (mdir_iter): from anywhere, the cookies left in
	 * order, to the end; also in its fallback (descents from the root) */
	for (int i = 0; i < 400; i++) {
		uint64_t q = i == 0 ? 0 : i % 2 ? (uint64_t)rand_r(&seed) % (N + 200)
						: (1ull << 61) | ((uint64_t)rand_r(&seed) << 31);
		size_t lo = 0, hi = nleft, steps = i < 2 ? nleft + 1 : 300;
		struct mdir_iter it;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (left[mid] < q)
				lo = mid + 1;
			else
				hi = mid;
		}
		mdir_iter_init(&it, d, q);
		if (i % 4 == 1)
			it.fallback = true;
		for (size_t j = 0; j < steps; j++, lo++) {
			dn = mdir_iter_next(&it);
			if (lo >= nleft) {
				ck_assert_ptr_null(dn);
				ck_assert_ptr_null(mdir_iter_next(&it));
				break;
			}
			ck_assert_ptr_nonnull(dn);
			ck_assert_uint_eq(dn->cookie, left[lo]);
		}
	}
	pthread_mutex_unlock(&c.m->lock);
	core_stop(&c);
}
END_TEST

START_TEST(t_permissions)
{
	struct core c;
	struct res pub, mine, sg, r;
	struct mdsp_request req;

	core_start(&c, true);
	/* root's 0755 root directory: another user may not create in it */
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, ROOT_INO, "u", S_IFREG | 0644, 1000).result, -EACCES);
	ck_assert_int_eq(mk(&c, MDSP_OP_MKDIR, ROOT_INO, "u", S_IFDIR | 0755, 1000).result, -EACCES);
	ck_assert_int_eq(lookup(&c, ROOT_INO, "u").result, -ENOENT);

	/* a sticky world-writable directory: 1001 may not remove 1000's file */
	pub = mk(&c, MDSP_OP_MKDIR, ROOT_INO, "pub", S_IFDIR | S_ISVTX | 0777, 0);
	ck_assert_int_eq(pub.result, 0);
	mine = mk(&c, MDSP_OP_CREATE, pub.ino, "mine", S_IFREG | 0644, 1000);
	ck_assert_int_eq(mine.result, 0);
	ck_assert_uint_eq(mine.uid, 1000);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, pub.ino, "mine", 1001).result, -EPERM);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, pub.ino, "mine", 1000).result, 0);

	/* a setgid directory passes its group on, and setgid on to directories */
	sg = mk(&c, MDSP_OP_MKDIR, ROOT_INO, "sg", S_IFDIR | 0777, 0);
	ck_assert_int_eq(sg.result, 0);
	req = rq(MDSP_OP_SETATTR, sg.ino, NULL, 0, 0);
	req.mask = MDSP_SETATTR_GID | MDSP_SETATTR_MODE;
	req.attr.gid = 500;
	req.attr.mode = S_IFDIR | S_ISGID | 0777;
	ck_assert_int_eq(run(&c, c.s, &req).result, 0);
	r = mk(&c, MDSP_OP_MKDIR, sg.ino, "sub", S_IFDIR | 0755, 1000);
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.gid, 500);
	ck_assert(r.mode & S_ISGID);
	r = mk(&c, MDSP_OP_CREATE, sg.ino, "file", S_IFREG | 0644, 1000);
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.gid, 500);
	core_stop(&c);
}
END_TEST

START_TEST(t_caps)
{
	struct core c;
	struct res f, r;
	struct mdsp_request req;

	core_start(&c, true);
	f = mk(&c, MDSP_OP_CREATE, ROOT_INO, "f", S_IFREG | 0644, 0);
	ck_assert_int_eq(f.result, 0);
	ck_assert_msg(f.caps & MDSP_CAP_FILE_WR, "a create grants Fw to its session (caps %#x)", f.caps);

	/* the other session's open for writing waits for the first one's caps */
	req = rq(MDSP_OP_OPEN, f.ino, NULL, 0, 0);
	req.oflags = O_RDWR;
	r = run(&c, c.s2, &req);
	ck_assert_msg(r.result == LOCKER_WAIT, "an open for writing while another session holds Fw|Fb: %d",
		      r.result);
	core_stop(&c);
}
END_TEST

START_TEST(t_restart)
{
	struct core c;
	struct res d, f, r, n;

	core_start(&c, true);
	d = mk(&c, MDSP_OP_MKDIR, ROOT_INO, "dir", S_IFDIR | 0750, 0);
	f = mk(&c, MDSP_OP_CREATE, d.ino, "file", S_IFREG | 0640, 0);
	ck_assert(d.result == 0 && f.result == 0);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, d.ino, "gone", S_IFREG | 0640, 0).result, 0);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, d.ino, "gone", 0).result, 0);
	ck_assert_int_eq(do_rename(&c, d.ino, "file", d.ino, "kept").result, 0);
	core_stop(&c);

	core_start(&c, false);
	r = lookup(&c, ROOT_INO, "dir");
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.ino, d.ino);
	ck_assert_uint_eq(r.mode, S_IFDIR | 0750);
	r = lookup(&c, d.ino, "kept");
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.ino, f.ino);
	ck_assert_uint_eq(r.mode, S_IFREG | 0640);
	ck_assert_int_eq(lookup(&c, d.ino, "file").result, -ENOENT);
	ck_assert_int_eq(lookup(&c, d.ino, "gone").result, -ENOENT);
	ck_assert_str_eq(list(&c, d.ino).names, "kept");
	/* a new inode never takes a number handed out before the restart */
	n = mk(&c, MDSP_OP_CREATE, d.ino, "new", S_IFREG | 0644, 0);
	ck_assert_int_eq(n.result, 0);
	ck_assert_uint_gt(n.ino, f.ino);
	core_stop(&c);
}
END_TEST

/* Give @name (session @s's auth name) the caps @caps (NULL: none), as auth caps does. */
static void set_caps(struct core *c, struct session *s, const char *name, const char *caps)
{
	uint8_t secret[MDSP_KEY_LEN] = { 1 };
	char err[512];

	pthread_mutex_lock(&c->m->keys_lock);
	ck_assert_int_eq(mdsp_keyring_add(&c->m->keys, name, secret), 0);
	ck_assert_msg(mdsp_keyring_set_caps(&c->m->keys, name, caps, err, sizeof(err)) == 0, "%s", err);
	atomic_fetch_add(&c->m->keys_gen, 1);
	pthread_mutex_unlock(&c->m->keys_lock);
	snprintf(s->auth_name, sizeof(s->auth_name), "%s", name);
}

/*
 * The escape matrix: a key limited to /home/alice, whatever it names and
 * however it names it, reaches nothing outside; "allow r" writes nothing;
 * root_squash and uid/gids; a key without caps keeps today's behaviour.
 */
START_TEST(t_authcaps)
{
	struct core c;
	struct res home, alice, bob, secret, f, sub, r;
	struct mdsp_request req;

	core_start(&c, true);
	pthread_mutex_init(&c.m->keys_lock, NULL);
	home = mk(&c, MDSP_OP_MKDIR, ROOT_INO, "home", S_IFDIR | 0755, 0);
	alice = mk(&c, MDSP_OP_MKDIR, home.ino, "alice", S_IFDIR | 0777, 0);
	bob = mk(&c, MDSP_OP_MKDIR, home.ino, "bob", S_IFDIR | 0777, 0);
	secret = mk(&c, MDSP_OP_CREATE, bob.ino, "secret", S_IFREG | 0644, 0);
	f = mk(&c, MDSP_OP_CREATE, alice.ino, "f", S_IFREG | 0644, 0);
	sub = mk(&c, MDSP_OP_MKDIR, alice.ino, "sub", S_IFDIR | 0777, 0);
	ck_assert(!home.result && !alice.result && !bob.result && !secret.result && !f.result && !sub.result);

	set_caps(&c, c.s, "client.alice", "allow rw path=/home/alice");
	/* inside: everything as before */
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, sub.ino, "g", S_IFREG | 0644, 0).result, 0);
	ck_assert_int_eq(lookup(&c, alice.ino, "f").result, 0);
	ck_assert_int_eq(simple(&c, MDSP_OP_GETATTR, sub.ino, NULL, 0).result, 0);
	ck_assert_int_eq(lookup(&c, sub.ino, "..").result, 0);
	/* the way down to its root, name by name (a mount), and nothing else */
	r = lookup(&c, ROOT_INO, "home");
	ck_assert_int_eq(r.result, 0);
	ck_assert_int_eq(lookup(&c, home.ino, "alice").result, 0);
	ck_assert_int_eq(lookup(&c, home.ino, "bob").result, -EACCES);
	ck_assert_int_eq(list(&c, home.ino).result, -EACCES);
	/* a mount of / (the client GETATTRs the root), and a listing of it */
	ck_assert_int_eq(simple(&c, MDSP_OP_GETATTR, ROOT_INO, NULL, 0).result, -EACCES);
	ck_assert_int_eq(list(&c, ROOT_INO).result, -EACCES);
	ck_assert_int_eq(simple(&c, MDSP_OP_GETATTR, bob.ino, NULL, 0).result, -EACCES);
	/* ".." from its root, and LOOKUPPARENT */
	ck_assert_int_eq(lookup(&c, alice.ino, "..").result, -EACCES);
	ck_assert_int_eq(simple(&c, MDSP_OP_LOOKUPPARENT, alice.ino, NULL, 0).result, -EACCES);
	/* an inode outside by number: LOOKUPINO (an NFS handle), GETATTR, OPEN */
	ck_assert_int_eq(simple(&c, MDSP_OP_LOOKUPINO, secret.ino, NULL, 0).result, -EACCES);
	ck_assert_int_eq(simple(&c, MDSP_OP_GETATTR, secret.ino, NULL, 0).result, -EACCES);
	req = rq(MDSP_OP_OPEN, secret.ino, NULL, 0, 0);
	req.oflags = O_RDONLY;
	ck_assert_int_eq(run(&c, c.s, &req).result, -EACCES);
	/* a create in a directory outside, and its replay after a restart */
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, bob.ino, "x", S_IFREG | 0644, 0).result, -EACCES);
	req = rq(MDSP_OP_CREATE, bob.ino, "y", 0, 0);
	req.mode = S_IFREG | 0644;
	req.oflags = O_RDWR | O_CREAT;
	req.flags = MDSP_REQ_REPLAY;
	req.want_ino = secret.ino + 100;
	ck_assert_int_eq(run(&c, c.s, &req).result, -EACCES);
	/* a hard link and renames across the boundary: EPERM */
	req = rq(MDSP_OP_LINK, alice.ino, "stolen", 0, 0);
	req.ino2 = secret.ino;
	ck_assert_int_eq(run(&c, c.s, &req).result, -EPERM);
	ck_assert_int_eq(do_rename(&c, alice.ino, "f", bob.ino, "f").result, -EPERM);
	ck_assert_int_eq(do_rename(&c, bob.ino, "secret", alice.ino, "mine").result, -EACCES);
	ck_assert_int_eq(lookup(&c, alice.ino, "stolen").result, -ENOENT);
	ck_assert_int_eq(lookup(&c, alice.ino, "mine").result, -ENOENT);

	/* allow r: reads pass, writes are EACCES */
	set_caps(&c, c.s, "client.alice", "allow r path=/home/alice");
	ck_assert_int_eq(lookup(&c, alice.ino, "f").result, 0);
	ck_assert_int_eq(list(&c, alice.ino).result, 0);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, alice.ino, "w", S_IFREG | 0644, 0).result, -EACCES);
	ck_assert_int_eq(simple(&c, MDSP_OP_UNLINK, alice.ino, "f", 0).result, -EACCES);
	req = rq(MDSP_OP_OPEN, f.ino, NULL, 0, 0);
	req.oflags = O_WRONLY;
	ck_assert_int_eq(run(&c, c.s, &req).result, -EACCES);
	req = rq(MDSP_OP_SETATTR, f.ino, NULL, 0, 0);
	req.mask = MDSP_SETATTR_MODE;
	req.attr.mode = S_IFREG | 0666;
	ck_assert_int_eq(run(&c, c.s, &req).result, -EACCES);

	/* root_squash: uid 0's creates are owned by 65534 */
	set_caps(&c, c.s, "client.alice", "allow rw path=/home/alice root_squash");
	r = mk(&c, MDSP_OP_CREATE, alice.ino, "squashed", S_IFREG | 0644, 0);
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.uid, 65534);
	ck_assert_uint_eq(r.gid, 65534);

	/* uid/gids: other ids are refused */
	set_caps(&c, c.s, "client.alice", "allow rw path=/home/alice uid=1000 gids=1000,1001");
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, alice.ino, "u1", S_IFREG | 0644, 1000).result, 0);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, alice.ino, "u2", S_IFREG | 0644, 0).result, -EACCES);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, alice.ino, "u3", S_IFREG | 0644, 1001).result, -EACCES);

	/* two clauses: rw on its own directory, r on bob's */
	set_caps(&c, c.s, "client.alice", "allow rw path=/home/alice, allow r path=/home/bob");
	ck_assert_int_eq(simple(&c, MDSP_OP_GETATTR, secret.ino, NULL, 0).result, 0);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, bob.ino, "z", S_IFREG | 0644, 0).result, -EACCES);
	ck_assert_int_eq(do_rename(&c, alice.ino, "f", bob.ino, "f").result, -EACCES);

	/* a key without caps: everything, as before caps existed */
	set_caps(&c, c.s, "client.alice", NULL);
	ck_assert_int_eq(simple(&c, MDSP_OP_GETATTR, ROOT_INO, NULL, 0).result, 0);
	ck_assert_int_eq(mk(&c, MDSP_OP_CREATE, bob.ino, "ok", S_IFREG | 0644, 0).result, 0);
	ck_assert_int_eq(lookup(&c, alice.ino, "..").result, 0);
	/* the keys set_caps() made: no keyring file, so mds_destroy() leaves them (LeakSanitizer) */
	mdsp_keyring_free(&c.m->keys);
	pthread_mutex_destroy(&c.m->keys_lock);
	core_stop(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mds_core");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	log_init("test_mds_core");
	cfg_init("mds");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t_namespace);
	tcase_add_test(tc, t_cookie_index);
	tcase_add_test(tc, t_permissions);
	tcase_add_test(tc, t_caps);
	tcase_add_test(tc, t_restart);
	tcase_add_test(tc, t_authcaps);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
