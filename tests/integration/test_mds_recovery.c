/*
 * test_mds_recovery.c - durability and exactly-once of loligo-mds across
 * kill -9 and clean restarts: every change acknowledged SAFE survives, and a
 * request resent after the restart (same session via RECONNECT) is answered
 * from the completed table instead of running twice.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "store/store.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"
#include "tests/lib/wait.h"

#define ROOT MDSP_ROOT_INO
static char parent_dir[256];
static struct mdsproc P;
static struct mdsw W;
static struct mdsw W2 = { .fd = -1 };     /* a second client, for the tests that need one */

static void setup(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
}

static uint64_t perf_value(const char *group, const char *name);

/* @group.@name of the MDS's perf dump is there and >= @want */
static bool perf_at_least(const char *group, const char *name, uint64_t want)
{
	uint64_t v = perf_value(group, name);

	return v != UINT64_MAX && v >= want;
}

static void start_and_open(void)
{
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.recovery"), 0);
}

/* restart with @sig; the reconnect re-asserts @claims (@n of them) */
static void restart_claiming(int sig, const struct mdsp_cap_reconnect *claims, uint32_t n)
{
	uint64_t sid = W.sid, tid = W.next_tid;
	int st;

	/* a crash kills the MDS with the connection open: closing first
	 * would let it journal the session's disconnect before it dies */
	if (sig != SIGKILL)
		mdsw_close(&W);
	st = mdsproc_stop(&P, sig);
	mdsw_close(&W);
	if (sig == SIGKILL)
		ck_assert_int_eq(st, 128 + SIGKILL);
	else
		ck_assert_int_eq(st, 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect_caps(&W, sid, claims, n), 0);
	W.next_tid = tid;
}

static void restart(int sig)
{
	restart_claiming(sig, NULL, 0);
}

static void teardown(void)
{
	mdsw_close(&W2);
	mdsw_close(&W);
	mdsproc_cleanup(&P);
}

static uint64_t lookup_ino(uint64_t dir, const char *name)
{
	struct mdsp_inode in;

	ck_assert_msg(mdsw_lookup(&W, dir, name, &in) == 0, "lookup %s", name);
	return in.ino;
}

/* Build a namespace with every kind of change, each acknowledged SAFE. */
static void build(const char *tag)
{
	struct mdsp_inode in, attr;
	struct mdsp_request q;
	struct mdsp_reply rep;
	uint64_t top, a, b, f, g;
	char name[64];
	int i;

	top = ({ ck_assert_int_eq(mdsw_mkdir(&W, ROOT, tag, 0755, &in), 0); in.ino; });
	ck_assert_int_eq(mdsw_mkdir(&W, top, "a", 0750, &in), 0);
	a = in.ino;
	ck_assert_int_eq(mdsw_mkdir(&W, a, "b", 0700, &in), 0);
	b = in.ino;
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "file%02d", i);
		ck_assert_int_eq(mdsw_create(&W, b, name, 0600, O_CREAT | O_EXCL, &in), 0);
	}
	for (i = 0; i < 40; i += 2) {
		snprintf(name, sizeof(name), "file%02d", i);
		ck_assert_int_eq(mdsw_unlink(&W, b, name), 0);
	}
	ck_assert_int_eq(mdsw_create(&W, a, "f", 0644, O_CREAT, &in), 0);
	f = in.ino;
	memset(&attr, 0, sizeof(attr));
	attr.size = 777777;
	attr.mode = 0604;
	ck_assert_int_eq(mdsw_setattr(&W, f, MDSP_SETATTR_SIZE | MDSP_SETATTR_MODE, &attr, &in), 0);
	ck_assert_int_eq(mdsw_link(&W, top, "hardlink", f, &in), 0);
	ck_assert_int_eq(mdsw_symlink(&W, top, "sym", "a/f", &in), 0);
	ck_assert_int_eq(mdsw_rename(&W, a, "b", top, "b_moved", 0), 0);
	ck_assert_int_eq(mdsw_create(&W, top, "victim", 0644, O_CREAT, &in), 0);
	ck_assert_int_eq(mdsw_create(&W, top, "winner", 0644, O_CREAT, &in), 0);
	g = in.ino;
	ck_assert_int_eq(mdsw_rename(&W, top, "winner", top, "victim", 0), 0);
	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_SETXATTR;
	q.ino = f;
	q.name = "user.k";
	q.data = (uint8_t *)"value";
	q.data_len = 5;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_mkdir(&W, top, "gone", 0755, &in), 0);
	ck_assert_int_eq(mdsw_rmdir(&W, top, "gone"), 0);
	(void)g;
}

static void verify(const char *tag)
{
	struct mdsp_inode in;
	struct mdsp_request q;
	struct mdsp_reply rep;
	uint64_t top, a, b, f, cookie = 0;
	char name[64], *target = NULL;
	int i, n = 0;
	bool end = false;

	top = lookup_ino(ROOT, tag);
	a = lookup_ino(top, "a");
	ck_assert_int_eq(mdsw_getattr(&W, a, &in), 0);
	ck_assert_uint_eq(in.mode & 07777, 0750);
	ck_assert_uint_eq(in.nlink, 2);           /* b moved out */
	ck_assert_int_eq(mdsw_lookup(&W, a, "b", &in), -ENOENT);
	b = lookup_ino(top, "b_moved");
	ck_assert_int_eq(mdsw_lookup(&W, b, "..", &in), 0);
	ck_assert_uint_eq(in.ino, top);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "file%02d", i);
		ck_assert_int_eq(mdsw_lookup(&W, b, name, &in), i % 2 ? 0 : -ENOENT);
	}
	while (!end) {
		ck_assert_int_eq(mdsw_readdir(&W, b, cookie, 7, &rep), 0);
		n += (int)rep.nentries;
		if (rep.nentries)
			cookie = rep.entries[rep.nentries - 1].cookie;
		end = rep.end;
		mdsw_reply_free(&rep);
	}
	ck_assert_int_eq(n, 20);
	f = lookup_ino(a, "f");
	ck_assert_int_eq(mdsw_getattr(&W, f, &in), 0);
	ck_assert_uint_eq(in.size, 777777);
	ck_assert_uint_eq(in.mode & 07777, 0604);
	ck_assert_uint_eq(in.nlink, 2);
	ck_assert_uint_eq(lookup_ino(top, "hardlink"), f);
	ck_assert_int_eq(mdsw_readlink(&W, lookup_ino(top, "sym"), &target), 0);
	ck_assert_str_eq(target, "a/f");
	free(target);
	ck_assert_int_eq(mdsw_lookup(&W, top, "winner", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&W, top, "victim", &in), 0);
	ck_assert_int_eq(mdsw_lookup(&W, top, "gone", &in), -ENOENT);
	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_GETXATTR;
	q.ino = f;
	q.name = "user.k";
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.data_len, 5);
	ck_assert(!memcmp(rep.data, "value", 5));
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_getattr(&W, top, &in), 0);
	ck_assert_uint_eq(in.nlink, 4);           /* a, b_moved */
}

START_TEST(test_kill9_safe_changes_survive)
{
	start_and_open();
	build("one");
	restart(SIGKILL);
	verify("one");
	/* more changes on top of a replayed journal, and again */
	build("two");
	restart(SIGKILL);
	verify("one");
	verify("two");
}
END_TEST

START_TEST(test_kill9_with_expiring_segments)
{
	/* tiny segments that expire within the test: replay then starts from
	 * a mix of flushed directory objects and journal */
	snprintf(P.extra[P.nextra++], 256, "--mds_journal_segment_size=4096");
	snprintf(P.extra[P.nextra++], 256, "--mds_journal_expire_age=0.1");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.05");
	start_and_open();
	build("one");
	/* some of one's segments expired: its directories were flushed */
	LT_WAIT_UNTIL(perf_at_least("mds_journal", "expired_segments", 1), "no journal segment expired");
	build("two");
	restart(SIGKILL);
	verify("one");
	verify("two");
	build("three");
	restart(SIGKILL);
	verify("one");
	verify("two");
	verify("three");
}
END_TEST

START_TEST(test_clean_shutdown_and_cold_lookups)
{
	struct mdsp_inode in;
	struct mdsp_request q;
	struct mdsp_reply rep;
	uint64_t f, top, moved;
	char *out = NULL;

	start_and_open();
	build("one");
	top = lookup_ino(ROOT, "one");
	f = lookup_ino(lookup_ino(top, "a"), "f");
	moved = lookup_ino(lookup_ino(top, "b_moved"), "file01");
	restart(SIGTERM);     /* flushes the journal into the objects */
	ck_assert_int_eq(mdsw_command(&W, "{\"prefix\":\"journal status\"}", &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"write_offset\":0"));
	free(out);
	/* nothing is in memory: LOOKUPINO must find inodes through anchors */
	memset(&q, 0, sizeof(q));
	q.op = MDSP_OP_LOOKUPINO;
	q.ino = lookup_ino(top, "sym");
	restart(SIGTERM);
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert(S_ISLNK(rep.target.mode));
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.ino = f;   /* hard-linked: from the inode table */
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.target.nlink, 2);
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.ino = moved;   /* its directory was renamed: the anchors follow */
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, moved);
	mdsw_reply_free(&rep);
	q.tid = 0;
	q.op = MDSP_OP_LOOKUPPARENT;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, lookup_ino(top, "b_moved"));
	mdsw_reply_free(&rep);
	q.op = MDSP_OP_LOOKUPINO;
	q.tid = 0;
	q.ino = 0x123456789;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), -ESTALE);
	mdsw_reply_free(&rep);
	verify("one");
	ck_assert_int_eq(mdsw_getattr(&W, top, &in), 0);
}
END_TEST

static int call_tid(uint64_t tid, uint32_t flags, struct mdsp_request *q, struct mdsp_reply *rep)
{
	q->tid = tid;
	q->flags = flags;
	q->attempt = flags ? 2 : 1;
	return mdsw_call(&W, q, rep);
}

START_TEST(test_exactly_once_across_restart)
{
	struct mdsp_request cx = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "x", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request cy = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "y", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request uy = { .op = MDSP_OP_UNLINK, .ino = ROOT, .name = "y" };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t xino, yino2;

	start_and_open();
	ck_assert_int_eq(call_tid(100, 0, &cx, &rep), 0);
	xino = rep.target.ino;
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_tid(101, 0, &cy, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_tid(102, 0, &uy, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_tid(103, 0, &cy, &rep), 0);   /* y again, a new inode */
	yino2 = rep.target.ino;
	mdsw_reply_free(&rep);
	/* a retry on the same MDS is answered from the table too */
	ck_assert_int_eq(call_tid(100, MDSP_REQ_RETRY, &cx, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	mdsw_reply_free(&rep);

	restart(SIGKILL);
	/* the replayed CREATE returns its stored result, not EEXIST */
	ck_assert_int_eq(call_tid(100, MDSP_REQ_REPLAY, &cx, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	ck_assert(rep.flags & MDSP_REPLY_SAFE);
	ck_assert_uint_eq(rep.target.ino, xino);
	mdsw_reply_free(&rep);
	/* the replayed UNLINK does not remove the since re-created y */
	ck_assert_int_eq(call_tid(102, MDSP_REQ_RETRY, &uy, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "y", &in), 0);
	ck_assert_uint_eq(in.ino, yino2);

	/* once the client's oldest tid passes them, the entries are trimmed:
	 * the same tid is then a new request (and CREATE EXCL fails) */
	W.oldest_tid = 104;
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &in), 0);
	ck_assert_int_eq(call_tid(105, 0, &cy, &rep), -EEXIST);   /* journaled: persists the trim */
	mdsw_reply_free(&rep);
	restart(SIGKILL);
	W.oldest_tid = 104;
	ck_assert_int_eq(call_tid(100, MDSP_REQ_RETRY, &cx, &rep), -EEXIST);
	ck_assert(!(rep.flags & MDSP_REPLY_REPLAYED));
	mdsw_reply_free(&rep);
	/* tid 105 (a failed request) is still remembered */
	ck_assert_int_eq(call_tid(105, MDSP_REQ_RETRY, &cy, &rep), -EEXIST);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	mdsw_reply_free(&rep);
}
END_TEST

/*
 * The same after a clean restart, where the completed table comes back
 * from its object (the journal is expired at SIGTERM), not from journal
 * replay: the results of a session's first requests are there too (the
 * range trim riding with the first mutation failed with ENOENT on the
 * not yet existing object and took the segment's results down with it).
 */
START_TEST(test_exactly_once_across_clean_restart)
{
	struct mdsp_request cx = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "x", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request cy = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "y", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_reply rep;
	uint64_t xino;

	start_and_open();
	W.oldest_tid = 1;
	ck_assert_int_eq(call_tid(1, 0, &cx, &rep), 0);
	xino = rep.target.ino;
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_tid(2, 0, &cy, &rep), 0);
	mdsw_reply_free(&rep);
	restart(SIGTERM);
	W.oldest_tid = 1;
	ck_assert_int_eq(call_tid(1, MDSP_REQ_REPLAY, &cx, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	ck_assert_uint_eq(rep.target.ino, xino);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_tid(2, MDSP_REQ_RETRY, &cy, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	mdsw_reply_free(&rep);
}
END_TEST

START_TEST(test_reconnect_same_mds)
{
	struct mdsp_request c = { .op = MDSP_OP_MKDIR, .ino = ROOT, .name = "d", .mode = 0755 };
	struct mdsp_reply rep;
	uint64_t sid, ino;

	start_and_open();
	sid = W.sid;
	ck_assert_int_eq(call_tid(5, 0, &c, &rep), 0);
	ino = rep.target.ino;
	mdsw_reply_free(&rep);
	mdsw_close(&W);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	ck_assert_uint_eq(W.sid, sid);
	ck_assert_int_eq(call_tid(5, MDSP_REQ_RETRY, &c, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	ck_assert_uint_eq(rep.target.ino, ino);
	mdsw_reply_free(&rep);
	/* a closed session is gone for good */
	ck_assert_int_eq(mdsw_session_close(&W), 0);
	mdsw_close(&W);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), -ESTALE);
}
END_TEST

static uint64_t perf_value(const char *group, const char *name)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *g, *v;
	char path[512];
	uint64_t val = UINT64_MAX;

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	json_object_object_add(req, "prefix", json_object_new_string("perf dump"));
	if (asok_request(path, req, &rep, 5000) == 0 && json_object_object_get_ex(rep, group, &g) &&
	    json_object_object_get_ex(g, name, &v))
		val = (uint64_t)json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return val;
}

START_TEST(test_purge_queue_survives_and_drains)
{
	struct mdsp_inode in, attr;

	/* a long delay first: the queued purge must survive kill -9 */
	snprintf(P.extra[P.nextra++], 256, "--mds_purge_delay=1000");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.05");
	start_and_open();
	ck_assert_int_eq(mdsw_create(&W, ROOT, "big", 0644, O_CREAT, &in), 0);
	memset(&attr, 0, sizeof(attr));
	attr.size = 9ull << 20;      /* three 4 MiB objects */
	ck_assert_int_eq(mdsw_setattr(&W, in.ino, MDSP_SETATTR_SIZE, &attr, &in), 0);
	ck_assert_int_eq(mdsw_create(&W, ROOT, "empty", 0644, O_CREAT, &in), 0);
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "big"), 0);
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "empty"), 0);   /* nothing to purge */
	ck_assert_uint_eq(perf_value("mds_purge", "queued"), 1);
	restart(SIGKILL);
	ck_assert_uint_eq(perf_value("mds_purge", "queued"), 1);
	/* now with no delay: it drains, and stays drained after a restart */
	mdsw_close(&W);
	mdsproc_stop(&P, SIGTERM);
	snprintf(P.extra[0], 256, "--mds_purge_delay=0");
	start_and_open();
	LT_WAIT_UNTIL(perf_at_least("mds_purge", "files", 1), "the purge queue did not drain");
	ck_assert_uint_eq(perf_value("mds_purge", "files"), 1);
	/* no data was ever written: its object index lists nothing, and no
	 * object is named for the size (a purge costs what exists) */
	ck_assert_uint_eq(perf_value("mds_purge", "objects"), 0);
	ck_assert_uint_eq(perf_value("mds_purge", "slices"), 1);
	ck_assert_uint_eq(perf_value("mds_purge", "queued"), 0);
	/* the queue entry's removal may not be durable yet: after a crash the
	 * purge may run again (it is idempotent), but the queue drains */
	restart(SIGKILL);
	LT_WAIT_UNTIL(perf_value("mds_purge", "queued") == 0, "the purge queue did not drain after the crash");
}
END_TEST

/*
 * On the local backend the data of a deleted file is in the data store the
 * clients write (DIR/store.data), which the MDS has open too: its purge
 * queue removes the objects there, while another process (this one, as a
 * client) has the store open.
 */
START_TEST(test_purge_local_data_store)
{
	struct store_config sc = { .backend = "local", .create = true, .local_map_size = 1ull << 30 };
	struct mdsp_inode in, attr;
	struct store_pool *pool;
	struct store_stat ss;
	struct store *st;
	char path[300], oid[64];
	int i;

	snprintf(P.extra[P.nextra++], 256, "--mds_purge_delay=0");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.05");
	start_and_open();
	ck_assert_int_eq(mdsw_create(&W, ROOT, "big", 0644, O_CREAT, &in), 0);
	memset(&attr, 0, sizeof(attr));
	attr.size = 9ull << 20;      /* three 4 MiB objects */
	ck_assert_int_eq(mdsw_setattr(&W, in.ino, MDSP_SETATTR_SIZE, &attr, &in), 0);
	/* its data, as a client process writes it: into the shared data store,
	 * each object listed in the file's object index before it is written */
	snprintf(path, sizeof(path), "%s/store.data", P.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	if (store_pool_open(st, "loligo_data", NULL, &pool) == -ENOENT) {   /* as a client finds it */
		ck_assert_int_eq(store_pool_create(st, "loligo_data"), 0);
		ck_assert_int_eq(store_pool_open(st, "loligo_data", NULL, &pool), 0);
	}
	for (i = 0; i < 3; i++) {
		struct store_op *op = store_op_new();
		store_file_index_note(op, (uint64_t)i);
		store_file_index_oid(oid, sizeof(oid), in.ino);
		ck_assert_int_eq(store_op_exec(pool, oid, op), 0);
		op = store_op_new();
		snprintf(oid, sizeof(oid), "%" PRIx64 ".%08x", in.ino, i);
		store_op_write(op, 4095, "x", 1);
		ck_assert_int_eq(store_op_exec(pool, oid, op), 0);
	}
	ck_assert_int_eq(mdsw_unlink(&W, ROOT, "big"), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_purge", "files", 1), "the file was not purged");
	ck_assert_uint_eq(perf_value("mds_purge", "files"), 1);
	for (i = 0; i < 3; i++) {
		snprintf(oid, sizeof(oid), "%" PRIx64 ".%08x", in.ino, i);
		ck_assert_msg(store_stat(pool, oid, &ss) == -ENOENT, "object %s survived the purge", oid);
	}
	store_pool_close(pool);
	store_close(st);
}
END_TEST

/* Append @len bytes of junk to the newest journal segment, as a write torn
 * by a crash would leave them (the MDS must not be running). */
static void tear_journal_tail(size_t len)
{
	struct store_config sc = { .backend = "local" };
	struct store *st;
	struct store_pool *pool;
	struct store_op *op;
	char path[512], **names = NULL, best[256] = "";
	uint8_t junk[512];
	size_t n = 0, i;

	snprintf(path, sizeof(path), "%s/store", P.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "loligo_metadata", NULL, &pool), 0);
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	for (i = 0; i < n; i++) {
		if (!strncmp(names[i], "mds_journal.", 12) && strcmp(names[i], best) > 0)
			snprintf(best, sizeof(best), "%s", names[i]);
		free(names[i]);
	}
	free(names);
	ck_assert_msg(best[0], "no journal segment");
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	junk[0] = 0x4c;  /* starts like an entry header: magic "LJE1" */
	junk[1] = 0x4a;
	junk[2] = 0x45;
	junk[3] = 0x31;
	op = store_op_new();
	store_op_append(op, junk, len < sizeof(junk) ? len : sizeof(junk));
	ck_assert_int_eq(store_op_exec(pool, best, op), 0);
	store_pool_close(pool);
	store_close(st);
}

/* Journal segment objects in the store (the MDS must not be running). */
static int count_segments(void)
{
	struct store_config sc = { .backend = "local" };
	struct store *st;
	struct store_pool *pool;
	char path[512], **names = NULL;
	size_t n = 0, i;
	int count = 0;

	snprintf(path, sizeof(path), "%s/store", P.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "loligo_metadata", NULL, &pool), 0);
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	for (i = 0; i < n; i++) {
		count += !strncmp(names[i], "mds_journal.", 12);
		free(names[i]);
	}
	free(names);
	store_pool_close(pool);
	store_close(st);
	return count;
}

START_TEST(test_expired_segments_are_removed)
{
	snprintf(P.extra[P.nextra++], 256, "--mds_journal_segment_size=4096");
	start_and_open();
	build("one");
	restart(SIGTERM);   /* expires everything and removes the expired segments */
	build("two");
	mdsw_close(&W);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	ck_assert_int_le(count_segments(), 1);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	ck_assert_int_le(count_segments(), 1);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.again"), 0);
	verify("one");
	verify("two");
}
END_TEST

START_TEST(test_torn_journal_tail)
{
	uint64_t sid;

	start_and_open();
	build("one");
	sid = W.sid;
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&W);
	tear_journal_tail(300);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	W.next_tid = 1000;
	verify("one");
	/* what is written after the torn tail was cut survives too */
	build("two");
	restart(SIGKILL);
	verify("one");
	verify("two");
}
END_TEST

struct racer {
	uint16_t port;
	int result;
	double secs;
	_Atomic bool done;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct mdsw w;
	struct mdsp_inode in;
	double t0 = mono_s();

	r->result = -9999;
	if (mdsw_connect(&w, r->port) || mdsw_open(&w, "client.racer"))
		return NULL;
	r->result = mdsw_create(&w, ROOT, "contested", 0644, O_CREAT | O_EXCL, &in);
	r->secs = mono_s() - t0;
	mdsw_close(&w);
	atomic_store(&r->done, true);
	return NULL;
}

START_TEST(test_replay_goes_before_other_clients)
{
	struct mdsp_request q = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "contested", .mode = 0644,
				  .oflags = O_CREAT | O_EXCL };
	struct mdsp_reply rep;
	struct racer rc;
	pthread_t th;
	uint64_t sid;

	/* journal writes held back for 5 s: a create is applied (UNSAFE) but
	 * not journaled when the MDS dies */
	snprintf(P.extra[P.nextra++], 256, "--mds_journal_max_delay=5");
	start_and_open();
	W.wait_safe = false;
	ck_assert_int_eq(call_tid(7, 0, &q, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_UNSAFE);
	mdsw_reply_free(&rep);
	W.wait_safe = true;
	sid = W.sid;
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&W);
	/* an hour: released by the timeout instead of the replay is a hang */
	snprintf(P.extra[0], 256, "--mds_reconnect_timeout=3600");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	/* another client tries to take the name first: it must wait (the MDS
	 * parks its create until the reconnect phase is over) */
	rc.port = P.port;
	ck_assert_int_eq(pthread_create(&th, NULL, racer_main, &rc), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_parked", 1), "the racer's create was not parked");
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	ck_assert_int_eq(call_tid(7, MDSP_REQ_REPLAY, &q, &rep), 0);   /* redone, not EEXIST */
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_getattr(&W, ROOT, &(struct mdsp_inode){ 0 }), 0);  /* replay finished */
	pthread_join(th, NULL);
	ck_assert_int_eq(rc.result, -EEXIST);
	ck_assert(rc.secs < lt_hang_ns() / 1e9);    /* released by the replay, not by the timeout */
}
END_TEST

/*
 * A clean stop (SIGTERM) with a client connected: the client did not go,
 * it comes back to the next MDS with what it has not sent yet (here a
 * create resent with MDSP_REQ_RETRY, as an asynchronous create queued
 * across the stop is), so the next MDS waits for it as after a crash.  The
 * stop marked the session disconnected before, and another client's create
 * of the same name ran first.
 */
START_TEST(test_clean_stop_waits_for_connected_sessions)
{
	struct mdsp_request q = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "contested", .mode = 0644,
				  .oflags = O_CREAT | O_EXCL };
	struct mdsp_reply rep;
	struct racer rc = { 0 };
	pthread_t th;
	uint64_t sid, tid;

	start_and_open();
	sid = W.sid;
	tid = W.next_tid++;
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);   /* W still connected */
	mdsw_close(&W);
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=3600");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	rc.port = P.port;
	ck_assert_int_eq(pthread_create(&th, NULL, racer_main, &rc), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_parked", 1) || atomic_load(&rc.done),
		      "the other client's create neither ran nor was held");
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	ck_assert_int_eq(call_tid(tid, MDSP_REQ_RETRY, &q, &rep), 0);
	mdsw_reply_free(&rep);
	pthread_join(th, NULL);
	ck_assert_int_eq(rc.result, -EEXIST);
}
END_TEST

/* @key of the first session in `session ls` on the admin socket (-1: none) */
static int64_t session_ls_value(const char *key)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	char path[512];
	int64_t val = -1;

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	json_object_object_add(req, "prefix", json_object_new_string("session ls"));
	if (asok_request(path, req, &rep, 5000) == 0 && json_object_is_type(rep, json_type_array) &&
	    json_object_array_length(rep) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(rep, 0), key, &v))
		val = json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return val;
}

/* hold the journal: changes are applied and answered UNSAFE, never written */
static void hold(bool on)
{
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_journal_hold", on ? "true" : "false"), 0);
}

/* send @q as tid @tid and return its first reply (UNSAFE for a change) */
static int call_unsafe(uint64_t tid, struct mdsp_request *q, struct mdsp_reply *rep)
{
	int r;

	W.wait_safe = false;
	r = call_tid(tid, 0, q, rep);
	W.wait_safe = true;
	ck_assert_msg(r != 0 || (rep->flags & MDSP_REPLY_UNSAFE), "tid %llu: SAFE at once, journal not held",
		      (unsigned long long)tid);
	return r;
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * The stage of the tests below: "x" and "f" exist; the session unlinks "x"
 * and then sends @second (a create of "x" again: *@second_ino is the new
 * ino; or a change of "f"), both answered UNSAFE only, and the MDS is
 * killed.  After the restart another client (W2) comes back holding a
 * lease on "x" that it does not give up until told, the session comes back
 * holding its caps on "f" (@f_caps) and replays the unlink, which parks for
 * that lease, then @second (not waited for).
 */
static void stage_parked_unlink(struct mdsp_request *ux, struct mdsp_request *second, uint32_t f_caps,
				uint64_t *old_ino, uint64_t *f_ino, uint64_t *second_ino)
{
	struct mdsp_cap_reconnect claim = { .ino = ROOT, .dname = "x", .seq = 1 };
	struct mdsp_cap_reconnect fcap = { .caps = f_caps, .wanted = f_caps, .seq = 1 };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t sid, sid2, parked0;

	start_and_open();
	ck_assert_int_eq(mdsw_connect(&W2, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W2, "client.other"), 0);
	sid2 = W2.sid;
	ck_assert_int_eq(mdsw_create(&W, ROOT, "x", 0644, O_CREAT | O_EXCL, &in), 0);
	*old_ino = in.ino;
	ck_assert_int_eq(mdsw_create(&W, ROOT, "f", 0644, O_CREAT | O_EXCL, &in), 0);
	*f_ino = fcap.ino = in.ino;
	if (second->op == MDSP_OP_SETATTR)
		second->ino = in.ino;
	hold(true);
	ck_assert_int_eq(call_unsafe(10, ux, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_unsafe(11, second, &rep), 0);
	*second_ino = rep.target.ino;
	mdsw_reply_free(&rep);
	sid = W.sid;
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&W);
	mdsw_close(&W2);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W2, P.port), 0);
	W2.keep_caps = true;
	W2.no_lease_ack = true;
	ck_assert_int_eq(mdsw_reconnect_caps(&W2, sid2, &claim, 1), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect_caps(&W, sid, &fcap, f_caps ? 1 : 0), 0);
	ck_assert_int_eq(mdsproc_perf(&P, "mds_caps", "requests_parked", &parked0), 0);
	ux->tid = 10, ux->flags = MDSP_REQ_REPLAY, ux->attempt = 2;
	ck_assert_int_eq(mdsw_send_request(&W, ux), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_parked", parked0 + 1), "the replayed unlink was not parked");
	second->tid = 11, second->flags = MDSP_REQ_REPLAY, second->attempt = 2;
	if (second->op == MDSP_OP_CREATE)
		second->want_ino = *second_ino;
	ck_assert_int_eq(mdsw_send_request(&W, second), 0);
}

/* W2 gives the lease up: the parked unlink runs */
static void release_lease(void)
{
	W2.no_lease_ack = false;
	LT_WAIT_UNTIL(mdsw_poll_caps(&W2, 10) == 0 && W2.lease_revokes >= 1, "no lease revoke reached the other client");
}

/*
 * A session's replays keep their order when one of them must wait: the
 * replayed unlink of "x" parks for another client's lease on the name, and
 * the replayed create of "x" behind it, then a fresh lookup, wait for it.
 * They ran at once before (the create failed with EEXIST, an acknowledged
 * create lost, and the lookup found the unlinked file).
 */
START_TEST(test_replays_wait_behind_a_parked_one)
{
	struct mdsp_request ux = { .op = MDSP_OP_UNLINK, .ino = ROOT, .name = "x" };
	struct mdsp_request cx = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "x", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request lx = { .op = MDSP_OP_LOOKUP, .ino = ROOT, .name = "x" };
	struct mdsp_reply rep;
	uint64_t old_ino, f_ino, new_ino, tids[3];
	int results[3], i, j;

	stage_parked_unlink(&ux, &cx, 0, &old_ino, &f_ino, &new_ino);
	lx.tid = 12;
	ck_assert_int_eq(mdsw_send_request(&W, &lx), 0);
	/* the create and the lookup behind the unlink now (the counts of an
	 * MDS that just started), or (the bug) answered already */
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_ordered", 3) || readable(W.fd),
		      "the create and the lookup were neither answered nor held");
	release_lease();
	/* the order they ran in is the order of their first replies (a
	 * change's UNSAFE one, the lookup's only one) */
	W.wait_safe = false;
	for (i = 0; i < 3;) {
		ck_assert_int_eq(mdsw_recv_reply(&W, &rep), 0);
		for (j = 0; j < i && tids[j] != rep.tid; j++)
			;
		if (j < i) {
			mdsw_reply_free(&rep);   /* the SAFE one after an UNSAFE */
			continue;
		}
		tids[i] = rep.tid;
		results[i] = rep.result;
		if (rep.tid == 12 && !rep.result)
			ck_assert_msg(rep.target.ino == new_ino, "the lookup found ino %llx, not the created %llx",
				      (unsigned long long)rep.target.ino, (unsigned long long)new_ino);
		mdsw_reply_free(&rep);
		i++;
	}
	W.wait_safe = true;
	ck_assert_msg(tids[0] == 10 && tids[1] == 11 && tids[2] == 12,
		      "answered in the order %llu (%d), %llu (%d), %llu (%d)", (unsigned long long)tids[0], results[0],
		      (unsigned long long)tids[1], results[1], (unsigned long long)tids[2], results[2]);
	ck_assert_int_eq(results[0], 0);
	ck_assert_int_eq(results[1], 0);
	ck_assert_int_eq(results[2], 0);
	W.next_tid = 13;
	ck_assert_uint_eq(lookup_ino(ROOT, "x"), new_ino);
	ck_assert_uint_ne(new_ino, old_ino);
}
END_TEST

/*
 * Send @fl, a flush of size 4242 for @ino, behind the stage's parked unlink
 * and its second request: it is held (or, the bug, answered at once); once
 * the lease goes and both replays ran, @ino has the flushed size.
 */
static void flush_held_then_applied(struct mdsp_caps *fl, uint64_t ino)
{
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t fparked0 = 0;
	int got;

	mdsproc_perf(&P, "mds_caps", "flushes_parked", &fparked0);
	fl->ino = fl->attr.ino = ino;
	fl->attr.size = 4242;
	ck_assert_int_eq(mdsw_send_caps(&W, fl), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "flushes_parked", fparked0 + 1) || readable(W.fd),
		      "the flush was neither acked nor held");
	release_lease();
	for (got = 0; got < 2; got++) {    /* the SAFE replies of the two replays */
		ck_assert_int_eq(mdsw_recv_reply(&W, &rep), 0);
		ck_assert_int_eq(rep.result, 0);
		mdsw_reply_free(&rep);
	}
	W.next_tid = 12;
	ck_assert_int_eq(mdsw_getattr(&W, ino, &in), 0);
	ck_assert_uint_eq(in.size, 4242);
}

/*
 * A size flushed for a file whose replayed create waits behind a parked
 * replay (the client wrote to it after the create's UNSAFE reply) is
 * applied once the create ran; it was acked at once without being applied
 * (the MDS had no such inode yet), and the size lost.
 */
START_TEST(test_flush_waits_behind_a_parked_create)
{
	struct mdsp_request ux = { .op = MDSP_OP_UNLINK, .ino = ROOT, .name = "x" };
	struct mdsp_request cx = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "x", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_caps fl = { .op = MDSP_CAPS_FLUSH, .dirty = MDSP_DIRTY_SIZE, .flush_tid = 1,
				.caps = MDSP_CAP_PIN | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER };
	uint64_t old_ino, f_ino, new_ino;

	stage_parked_unlink(&ux, &cx, 0, &old_ino, &f_ino, &new_ino);
	flush_held_then_applied(&fl, new_ino);
	ck_assert_uint_ne(new_ino, old_ino);
}
END_TEST

/*
 * A size flushed for a file the session holds caps on, written after a
 * truncate whose replay waits behind a parked replay: the flush waits too,
 * and the size survives the truncate's replay.  Run at once, it was undone
 * by it (the size the client wrote after the truncate, lost).
 */
START_TEST(test_flush_waits_behind_a_parked_truncate)
{
	struct mdsp_request ux = { .op = MDSP_OP_UNLINK, .ino = ROOT, .name = "x" };
	struct mdsp_request tr = { .op = MDSP_OP_SETATTR, .mask = MDSP_SETATTR_SIZE };
	uint32_t fcaps = MDSP_CAP_PIN | MDSP_CAP_FILE_RD | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER;
	struct mdsp_caps fl = { .op = MDSP_CAPS_FLUSH, .dirty = MDSP_DIRTY_SIZE, .flush_tid = 1, .caps = fcaps,
				.seq = 1 };
	uint64_t old_ino, f_ino, tino;

	tr.attr.size = 0;
	stage_parked_unlink(&ux, &tr, fcaps, &old_ino, &f_ino, &tino);
	flush_held_then_applied(&fl, f_ino);
	(void)old_ino;
	(void)tino;
}
END_TEST

struct getattr_bg {
	uint64_t ino;
	int r;
	uint64_t size;
	_Atomic bool done;
};

/* W2 opens @ino for writing: the caps that takes revoke W's buffering */
static void *getattr_bg_main(void *arg)
{
	struct getattr_bg *g = arg;
	struct mdsp_request q = { .op = MDSP_OP_OPEN, .oflags = O_RDWR };
	struct mdsp_reply rep;

	q.ino = g->ino;
	g->r = mdsw_call(&W2, &q, &rep);
	g->size = rep.target.size;
	mdsw_reply_free(&rep);
	atomic_store(&g->done, true);
	return NULL;
}

/*
 * A revoke's ack goes after the flush the client sent before it, even when
 * that flush is held behind a parked replay: another client's open for
 * writing, which revoked the writer's caps, sees the flushed size, not the
 * one of before (the ack completed the revoke while the flush still waited).
 */
START_TEST(test_ack_after_a_held_flush)
{
	struct mdsp_request ux = { .op = MDSP_OP_UNLINK, .ino = ROOT, .name = "x" };
	struct mdsp_request cy = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "y", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	uint32_t fcaps = MDSP_CAP_PIN | MDSP_CAP_FILE_RD | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER |
			 MDSP_CAP_FILE_CACHE | MDSP_CAP_ATTR_SHARED;
	struct mdsp_caps fl = { .op = MDSP_CAPS_FLUSH, .dirty = MDSP_DIRTY_SIZE, .flush_tid = 1, .caps = fcaps,
				.seq = 1 };
	struct getattr_bg g = { 0 };
	uint64_t old_ino, f_ino, yino, fparked0 = 0, parked0 = 0;
	pthread_t th;

	stage_parked_unlink(&ux, &cy, fcaps, &old_ino, &f_ino, &yino);
	mdsproc_perf(&P, "mds_caps", "flushes_parked", &fparked0);
	fl.ino = fl.attr.ino = f_ino;
	fl.attr.size = 4242;
	ck_assert_int_eq(mdsw_send_caps(&W, &fl), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "flushes_parked", fparked0 + 1) || readable(W.fd),
		      "the flush was neither acked nor held");
	ck_assert_int_eq(mdsproc_perf(&P, "mds_caps", "requests_parked", &parked0), 0);
	g.ino = f_ino;
	ck_assert_int_eq(pthread_create(&th, NULL, getattr_bg_main, &g), 0);
	/* W answers the revoke the open makes (mdsw acks what it reads) */
	LT_WAIT_UNTIL(mdsw_poll_caps(&W, 10) == 0 && (atomic_load(&g.done) || W.revokes >= 1),
		      "the open neither revoked W's caps nor returned");
	LT_WAIT_UNTIL((mdsw_poll_caps(&W, 10), atomic_load(&g.done)), "the open never returned");
	pthread_join(th, NULL);
	ck_assert_int_eq(g.r, 0);
	ck_assert_msg(W.revokes >= 1, "the open revoked nothing of W's: the test tests nothing");
	ck_assert_uint_eq(g.size, 4242);
	release_lease();
	(void)old_ino;
	(void)yino;
	(void)parked0;
}
END_TEST


/* the SAFE reply of @tid on W (others read and dropped): its result */
static int wait_tid(uint64_t tid)
{
	struct mdsp_reply rep;
	uint64_t got;
	int r;

	for (;;) {
		ck_assert_int_eq(mdsw_recv_reply(&W, &rep), 0);
		r = rep.result;
		got = rep.tid;
		mdsw_reply_free(&rep);
		if (got == tid)
			return r;
	}
}

/*
 * The reconnect phase lasts until a session's held replays ran: a fresh
 * request of the session, held behind a parked replay, does not end the
 * session's replay, or the phase's end would let another client's create
 * run before the session's replayed create of the same name (EEXIST, an
 * acknowledged create lost).
 */
START_TEST(test_phase_waits_for_held_replays)
{
	struct mdsp_request ux = { .op = MDSP_OP_UNLINK, .ino = ROOT, .name = "x" };
	struct mdsp_request cc = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "contested", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request gx = { .op = MDSP_OP_GETATTR, .ino = ROOT };
	struct mdsp_request lk = { .op = MDSP_OP_LOOKUP, .ino = ROOT, .name = "contested" };
	struct mdsp_request gl = { .op = MDSP_OP_GETLK };
	struct mdsp_cap_reconnect claim = { .ino = ROOT, .dname = "x", .seq = 1 };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	struct racer rc = { 0 };
	pthread_t th;
	uint64_t sid, sid2, cino;

	start_and_open();
	ck_assert_int_eq(mdsw_connect(&W2, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W2, "client.other"), 0);
	sid2 = W2.sid;
	ck_assert_int_eq(mdsw_create(&W, ROOT, "x", 0644, O_CREAT | O_EXCL, &in), 0);
	gl.ino = in.ino;
	gl.lock.type = F_WRLCK;
	gl.lock.len = 1;
	gl.lock.owner = 1;
	hold(true);
	ck_assert_int_eq(call_unsafe(10, &ux, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_unsafe(11, &cc, &rep), 0);
	cino = rep.target.ino;
	mdsw_reply_free(&rep);
	sid = W.sid;
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&W);
	mdsw_close(&W2);
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=3600");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	/* the other client is back with its lease on "x", and done replaying */
	ck_assert_int_eq(mdsw_connect(&W2, P.port), 0);
	W2.keep_caps = true;
	W2.no_lease_ack = true;
	ck_assert_int_eq(mdsw_reconnect_caps(&W2, sid2, &claim, 1), 0);
	ck_assert_int_eq(mdsw_call(&W2, &gx, &rep), 0);
	mdsw_reply_free(&rep);
	/* a third client's create of the name waits for the phase */
	rc.port = P.port;
	ck_assert_int_eq(pthread_create(&th, NULL, racer_main, &rc), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_parked", 1) || atomic_load(&rc.done),
		      "the other client's create neither ran nor was held");
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	ux.tid = 10, ux.flags = MDSP_REQ_REPLAY, ux.attempt = 2;
	ck_assert_int_eq(mdsw_send_request(&W, &ux), 0);
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_parked", 2) || atomic_load(&rc.done),
		      "the replayed unlink was not parked");
	cc.tid = 11, cc.flags = MDSP_REQ_REPLAY, cc.attempt = 2, cc.want_ino = cino;
	ck_assert_int_eq(mdsw_send_request(&W, &cc), 0);
	/* a lock request is no REPLAY either: it does not end the replay */
	gl.tid = 12;
	ck_assert_int_eq(mdsw_send_request(&W, &gl), 0);
	lk.tid = 13;
	ck_assert_int_eq(mdsw_send_request(&W, &lk), 0);
	/* the create and the lookup are held behind the unlink (or the bug
	 * ended the phase at the lookup, and the third client's create ran) */
	LT_WAIT_UNTIL(perf_at_least("mds_caps", "requests_ordered", 3) || atomic_load(&rc.done),
		      "the create and the lookup were not held");
	release_lease();
	ck_assert_int_eq(wait_tid(11), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(rc.result, -EEXIST);
	W.next_tid = 14;
	ck_assert_uint_eq(lookup_ino(ROOT, "contested"), cino);
}
END_TEST



/*
 * Creates answered UNSAFE and lost in a crash: replayed with the ino of that
 * reply (want_ino), they get exactly it, and a child's replay finds its
 * parent; a second replay is answered from the completed table.
 */
START_TEST(test_replay_keeps_ino)
{
	struct mdsp_request md = { .op = MDSP_OP_MKDIR, .ino = ROOT, .name = "dir", .mode = 040755 };
	struct mdsp_request cf = { .op = MDSP_OP_CREATE, .name = "f", .mode = 0644, .oflags = O_CREAT | O_EXCL };
	struct mdsp_request sl = { .op = MDSP_OP_SYMLINK, .name = "l", .target = "f" };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t dino, fino, lino;

	start_and_open();
	ck_assert_int_eq(session_ls_value("prealloc_inos"), 1024);     /* granted with the open */
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "pre", 0755, &in), 0);     /* allocations durable once */
	ck_assert_int_eq(session_ls_value("prealloc_inos"), 1023);
	hold(true);
	ck_assert_int_eq(call_unsafe(10, &md, &rep), 0);
	dino = rep.target.ino;
	mdsw_reply_free(&rep);
	cf.ino = sl.ino = dino;
	ck_assert_int_eq(call_unsafe(11, &cf, &rep), 0);
	fino = rep.target.ino;
	mdsw_reply_free(&rep);
	ck_assert_int_eq(call_unsafe(12, &sl, &rep), 0);
	lino = rep.target.ino;
	mdsw_reply_free(&rep);
	restart(SIGKILL);
	md.want_ino = dino;
	ck_assert_int_eq(call_tid(10, MDSP_REQ_REPLAY, &md, &rep), 0);
	ck_assert(!(rep.flags & MDSP_REPLY_REPLAYED));          /* run again, not from the table */
	ck_assert_uint_eq(rep.target.ino, dino);
	mdsw_reply_free(&rep);
	cf.want_ino = fino;
	ck_assert_int_eq(call_tid(11, MDSP_REQ_REPLAY, &cf, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, fino);
	mdsw_reply_free(&rep);
	sl.want_ino = lino;
	ck_assert_int_eq(call_tid(12, MDSP_REQ_REPLAY, &sl, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, lino);
	mdsw_reply_free(&rep);
	/* once more: the completed table answers, with the same ino */
	ck_assert_int_eq(call_tid(11, MDSP_REQ_REPLAY, &cf, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	ck_assert_uint_eq(rep.target.ino, fino);
	mdsw_reply_free(&rep);
	/* and it is all durable */
	restart(SIGKILL);
	ck_assert_uint_eq(lookup_ino(ROOT, "dir"), dino);
	ck_assert_uint_eq(lookup_ino(dino, "f"), fino);
	ck_assert_uint_eq(lookup_ino(dino, "l"), lino);
	/* a new create never reuses them */
	ck_assert_int_eq(mdsw_create(&W, dino, "g", 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert(in.ino != dino && in.ino != fino && in.ino != lino);
}
END_TEST

/* "dirs_cached" of the MDS's status */
static int64_t dirs_cached(void)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	char path[512];
	int64_t val = -1;

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	json_object_object_add(req, "prefix", json_object_new_string("status"));
	if (asok_request(path, req, &rep, 5000) == 0 && json_object_object_get_ex(rep, "dirs_cached", &v))
		val = json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return val;
}

/*
 * A reconnect claims leases in directories the restarted MDS does not have
 * (yet): one the client made UNSAFE and replays after its reconnect, as
 * loligo-fuse does, a file, a number never made.  None of them may become a
 * directory in the cache: the MDS once cached an empty one for each (and
 * the replayed mkdir then replaced, and leaked, it).
 */
START_TEST(test_reconnect_claims_in_unmade_dirs)
{
	struct mdsp_request md = { .op = MDSP_OP_MKDIR, .ino = ROOT, .name = "dir", .mode = 040755 };
	struct mdsp_request cf = { .op = MDSP_OP_CREATE, .name = "f", .mode = 0644, .oflags = O_CREAT | O_EXCL };
	struct mdsp_cap_reconnect claims[3] = { { .dname = "f", .seq = 1 }, { .dname = "x", .seq = 1 },
						{ .ino = 0x7ffff00000ull, .dname = "x", .seq = 1 } };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t dino, fino;

	start_and_open();
	ck_assert_int_eq(mdsw_create(&W, ROOT, "plain", 0644, O_CREAT | O_EXCL, &in), 0);
	claims[1].ino = in.ino;
	hold(true);
	ck_assert_int_eq(call_unsafe(10, &md, &rep), 0);
	dino = rep.target.ino;
	mdsw_reply_free(&rep);
	cf.ino = dino;
	ck_assert_int_eq(call_unsafe(11, &cf, &rep), 0);
	fino = rep.target.ino;
	mdsw_reply_free(&rep);
	claims[0].ino = dino;
	restart_claiming(SIGKILL, claims, 3);
	/* the root only: none of the three is a directory here */
	ck_assert_int_eq(dirs_cached(), 1);
	md.want_ino = dino;
	ck_assert_int_eq(call_tid(10, MDSP_REQ_REPLAY, &md, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, dino);
	mdsw_reply_free(&rep);
	cf.want_ino = fino;
	ck_assert_int_eq(call_tid(11, MDSP_REQ_REPLAY, &cf, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, fino);
	mdsw_reply_free(&rep);
	ck_assert_uint_eq(lookup_ino(dino, "f"), fino);
	ck_assert_int_eq(dirs_cached(), 2);
	ck_assert_int_eq(mdsw_lookup(&W, claims[1].ino, "x", &in), -ENOTDIR);
	ck_assert_int_eq(dirs_cached(), 2);
}
END_TEST

/*
 * A reconnect claiming a lease with a sequence no MDS hands out (the
 * client's own marker for a name it made, UINT64_MAX - 1) must not move the
 * session's count there: two leases later it wrapped to 0, a lease whose
 * revoke is never seen as pending.
 */
START_TEST(test_reconnect_claim_absurd_lease_seq)
{
	struct mdsp_request lk = { .op = MDSP_OP_LOOKUP, .ino = ROOT, .name = "b" };
	struct mdsp_cap_reconnect claim = { .ino = ROOT, .dname = "a", .seq = UINT64_MAX - 1 };
	struct mdsp_reply rep;
	struct mdsp_inode in;

	start_and_open();
	ck_assert_int_eq(mdsw_create(&W, ROOT, "a", 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert_int_eq(mdsw_create(&W, ROOT, "b", 0644, O_CREAT | O_EXCL, &in), 0);
	restart_claiming(SIGKILL, &claim, 1);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(call_tid(W.next_tid++, 0, &lk, &rep), 0);
		ck_assert_msg(rep.trace_flags & MDSP_TRACE_LEASE, "no lease on the looked-up name");
		ck_assert_msg(rep.lease_seq > 0 && rep.lease_seq <= MDSP_LEASE_SEQ_MAX, "lease seq %llu",
			      (unsigned long long)rep.lease_seq);
		mdsw_reply_free(&rep);
	}
}
END_TEST

/*
 * A replay may only take an ino of its own session: one another session
 * holds or uses fails with EEXIST (never another ino), and so does a
 * replayed create whose name another session took meanwhile.  want_ino on a
 * request that is not a replay is refused.
 */
START_TEST(test_replay_refuses_what_is_not_its_own)
{
	struct mdsp_request ca = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "a", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request mb = { .op = MDSP_OP_MKDIR, .ino = ROOT, .name = "b", .mode = 040755 };
	struct mdsp_reply rep;
	struct mdsp_inode in, theirs;
	struct mdsw t;
	uint64_t aino, sid, tid;

	start_and_open();
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "pre", 0755, &in), 0);
	/* not a replay: want_ino is refused */
	mb.want_ino = in.ino + 1;
	ck_assert_int_eq(call_tid(5, 0, &mb, &rep), -EINVAL);
	mdsw_reply_free(&rep);
	mb.want_ino = 0;
	hold(true);
	ck_assert_int_eq(call_unsafe(6, &ca, &rep), 0);
	aino = rep.target.ino;
	mdsw_reply_free(&rep);
	/* restart without a reconnect phase: another session goes first */
	sid = W.sid;
	tid = W.next_tid;
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&W);
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=0");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&t, P.port), 0);
	ck_assert_int_eq(mdsw_open(&t, "client.other"), 0);
	ck_assert_int_eq(mdsw_create(&t, ROOT, "a", 0644, O_CREAT | O_EXCL, &theirs), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	W.next_tid = tid;
	/* the name is theirs now: the replay fails, it does not open their file */
	ca.want_ino = aino;
	ck_assert_int_eq(call_tid(6, MDSP_REQ_REPLAY, &ca, &rep), -EEXIST);
	ck_assert(!rep.has_target);
	mdsw_reply_free(&rep);
	/* an ino in use by the other session */
	mb.want_ino = theirs.ino;
	ck_assert_int_eq(call_tid(7, MDSP_REQ_REPLAY, &mb, &rep), -EEXIST);
	mdsw_reply_free(&rep);
	/* an ino of the other session's pool, not used yet */
	mb.want_ino = theirs.ino + 1;
	ck_assert_int_eq(call_tid(8, MDSP_REQ_REPLAY, &mb, &rep), -EEXIST);
	mdsw_reply_free(&rep);
	/* far above anything ever granted */
	mb.want_ino = UINT64_MAX / 2;
	ck_assert_int_eq(call_tid(9, MDSP_REQ_REPLAY, &mb, &rep), -EEXIST);
	mdsw_reply_free(&rep);
	/* its own ino, still in its pool, is still its own */
	mb.want_ino = aino;
	ck_assert_int_eq(call_tid(10, MDSP_REQ_REPLAY, &mb, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, aino);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "a", &in), 0);
	ck_assert_uint_eq(in.ino, theirs.ino);
	mdsw_close(&t);
}
END_TEST

/*
 * Delegated inos (asynchronous creates): a create flagged WANT_INOS brings a
 * range the client may name in want_ino on fresh requests; the MDS never
 * hands those out itself; an ino not delegated, or used already, is refused
 * with EINVAL (never another ino); a create answered UNSAFE with a
 * delegated ino and lost in a kill -9 is replayed to that very ino, and a
 * create sent but never answered (RETRY) too.
 */
START_TEST(test_delegated_inos)
{
	struct mdsp_request cx = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "x", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request cy = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "y", .mode = 0644,
				   .oflags = O_CREAT | O_EXCL };
	struct mdsp_request md = { .op = MDSP_OP_MKDIR, .ino = ROOT, .name = "d", .mode = 040755 };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t start, len, xino;

	start_and_open();
	ck_assert_int_eq(call_tid(1, MDSP_REQ_WANT_INOS, &cx, &rep), 0);
	start = rep.deleg_start;
	len = rep.deleg_len;
	xino = rep.target.ino;
	mdsw_reply_free(&rep);
	ck_assert_uint_gt(len, 0);
	ck_assert_msg(xino < start || xino >= start + len, "the MDS picked delegated ino %llx itself",
		      (unsigned long long)xino);
	/* a delegated ino, fresh: exactly it */
	cy.want_ino = start + 5;
	ck_assert_int_eq(call_tid(2, 0, &cy, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, start + 5);
	mdsw_reply_free(&rep);
	/* used already, or never delegated (the MDS's own next ino): refused */
	md.want_ino = start + 5;
	ck_assert_int_eq(call_tid(3, 0, &md, &rep), -EINVAL);
	mdsw_reply_free(&rep);
	md.want_ino = xino + 1;
	ck_assert_int_eq(call_tid(4, 0, &md, &rep), -EINVAL);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "d", &in), -ENOENT);
	/* the MDS's own picks stay out of the delegated range */
	md.want_ino = 0;
	ck_assert_int_eq(call_tid(5, 0, &md, &rep), 0);
	ck_assert(rep.target.ino < start || rep.target.ino >= start + len);
	mdsw_reply_free(&rep);
	/* UNSAFE with a delegated ino, lost in a crash: the replay gets it */
	hold(true);
	cx.name = "u";
	cx.want_ino = start + 7;
	ck_assert_int_eq(call_unsafe(6, &cx, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, start + 7);
	mdsw_reply_free(&rep);
	restart(SIGKILL);
	ck_assert_int_eq(call_tid(6, MDSP_REQ_REPLAY, &cx, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, start + 7);
	mdsw_reply_free(&rep);
	/* sent before the crash, never answered: resent (RETRY) with its ino */
	cx.name = "r";
	cx.want_ino = start + 9;
	ck_assert_int_eq(call_tid(7, MDSP_REQ_RETRY, &cx, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, start + 9);
	mdsw_reply_free(&rep);
	/* after the restart (a reconnect) the old delegation is stale: no
	 * fresh request may name it */
	cx.name = "f";
	cx.want_ino = start + 11;
	ck_assert_int_eq(call_tid(8, 0, &cx, &rep), -EINVAL);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "u", &in), 0);
	ck_assert_uint_eq(in.ino, start + 7);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "r", &in), 0);
	ck_assert_uint_eq(in.ino, start + 9);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "y", &in), 0);
	ck_assert_uint_eq(in.ino, start + 5);
	/* the first create resent: answered from the completed table, without
	 * the delegation it brought (stale since the reconnect: a client that
	 * took it as new would name it on fresh requests, which are refused) */
	cx.name = "x";
	cx.want_ino = 0;
	ck_assert_int_eq(call_tid(1, MDSP_REQ_RETRY | MDSP_REQ_WANT_INOS, &cx, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_REPLAYED);
	ck_assert_uint_eq(rep.target.ino, xino);
	ck_assert_uint_eq(rep.deleg_len, 0);
	mdsw_reply_free(&rep);
}
END_TEST

/* close the connection and resume the session on a new one, telling the
 * MDS that no request above @deleg_tid names an ino delegated before */
static void reconnect_bounded(uint64_t deleg_tid)
{
	uint64_t sid = W.sid;

	mdsw_close(&W);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	W.deleg_tid = deleg_tid;
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	W.deleg_tid = 0;
}

/*
 * Audit item (d): stale delegated ranges are freed once every request that
 * could name them is answered safely (the RECONNECT's deleg_tid, passed by
 * the session's oldest_tid), so that many reconnects do not fill the
 * session's 16 range slots with them; those are what a pool that needs room
 * dropped, and a resend naming an ino of a dropped range got EEXIST.
 */
START_TEST(test_stale_delegations_freed)
{
	struct mdsp_request c = { .op = MDSP_OP_CREATE, .ino = ROOT, .mode = 0644, .oflags = O_CREAT | O_EXCL };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	uint64_t tid = 1, start, len, pending_tid, pending_ino, freed0;
	char name[32];
	int k;

	snprintf(P.extra[P.nextra++], 256, "--mds_client_prealloc_inos=8");
	start_and_open();
	freed0 = perf_value("mds", "deleg_stale_freed");
	/* reconnects with nothing in flight: what each one makes stale is freed
	 * with the next request (its oldest_tid is past the bound) */
	for (k = 0; k < 24; k++, tid++) {
		snprintf(name, sizeof(name), "a%d", k);
		c.name = name;
		W.oldest_tid = tid;
		ck_assert_int_eq(call_tid(tid, MDSP_REQ_WANT_INOS, &c, &rep), 0);
		ck_assert_uint_gt(rep.deleg_len, 0);
		mdsw_reply_free(&rep);
		reconnect_bounded(tid);
	}
	/* a delegation mostly used, the last but one ino taken by a create
	 * that is registered (pending_tid) but sent only after the next
	 * reconnect; the last one is left (so the range outlives the create) */
	c.name = "b";
	W.oldest_tid = tid;
	ck_assert_int_eq(call_tid(tid++, MDSP_REQ_WANT_INOS, &c, &rep), 0);
	start = rep.deleg_start;
	len = rep.deleg_len;
	mdsw_reply_free(&rep);
	ck_assert_uint_ge(len, 3);
	for (k = 0; k + 2 < (int)len; k++, tid++) {
		snprintf(name, sizeof(name), "b%d", k);
		c.name = name;
		c.want_ino = start + (uint64_t)k;
		W.oldest_tid = tid;
		ck_assert_int_eq(call_tid(tid, 0, &c, &rep), 0);
		mdsw_reply_free(&rep);
	}
	pending_tid = tid++;
	pending_ino = start + len - 2;
	reconnect_bounded(pending_tid);
	/* more delegations while it is outstanding (oldest_tid stays at it) */
	for (k = 0; k < 4; k++, tid++) {
		snprintf(name, sizeof(name), "c%d", k);
		c.name = name;
		c.want_ino = 0;
		W.oldest_tid = pending_tid;
		ck_assert_int_eq(call_tid(tid, MDSP_REQ_WANT_INOS, &c, &rep), 0);
		mdsw_reply_free(&rep);
	}
	/* the old stale ranges are gone, the pending one's is kept */
	ck_assert_uint_ge(perf_value("mds", "deleg_stale_freed"), freed0 + 24);
	ck_assert_int_le(session_ls_value("ino_ranges"), 8);
	ck_assert_int_eq(session_ls_value("stale_ino_ranges"), 1);
	/* the pending create goes now, as a resend on the new connection: it
	 * gets its ino (EEXIST when its range had been dropped for room) */
	c.name = "p";
	c.want_ino = pending_ino;
	W.oldest_tid = pending_tid;
	ck_assert_int_eq(call_tid(pending_tid, MDSP_REQ_RETRY, &c, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, pending_ino);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "p", &in), 0);
	ck_assert_uint_eq(in.ino, pending_ino);
	/* answered: its range goes with the next request's oldest_tid */
	c.name = "q";
	c.want_ino = 0;
	W.oldest_tid = tid;
	ck_assert_int_eq(call_tid(tid++, 0, &c, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(session_ls_value("stale_ino_ranges"), 0);
}
END_TEST

static int64_t status_value(const char *key)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	char path[512];
	int64_t val = -1;

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	json_object_object_add(req, "prefix", json_object_new_string("status"));
	if (asok_request(path, req, &rep, 5000) == 0 && json_object_object_get_ex(rep, key, &v))
		val = json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return val;
}

static void check_trimmed_tree(uint64_t cold_file, uint64_t hard)
{
	struct mdsp_request q = { .op = MDSP_OP_LOOKUPINO, .ino = cold_file };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	char name[32];
	int d, k;

	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert_uint_eq(rep.target.ino, cold_file);
	mdsw_reply_free(&rep);
	for (d = 0; d < 10; d++) {
		uint64_t dino, cookie = 0;
		int n = 0;
		bool end = false;

		snprintf(name, sizeof(name), "d%d", d);
		dino = lookup_ino(ROOT, name);
		while (!end) {
			ck_assert_int_eq(mdsw_readdir(&W, dino, cookie, 8, &rep), 0);
			n += (int)rep.nentries;
			if (rep.nentries)
				cookie = rep.entries[rep.nentries - 1].cookie;
			end = rep.end;
			mdsw_reply_free(&rep);
		}
		ck_assert_int_eq(n, d == 1 ? 19 : d == 9 ? 21 : d == 6 ? 21 : d == 2 ? 21 : 20);
		for (k = 2; k < 20; k++) {
			snprintf(name, sizeof(name), "f%d", k);
			ck_assert_int_eq(mdsw_lookup(&W, dino, name, &in), 0);
		}
	}
	ck_assert_int_eq(mdsw_getattr(&W, hard, &in), 0);
	ck_assert_uint_eq(in.nlink, 2);
	ck_assert_int_eq(mdsw_lookup(&W, lookup_ino(ROOT, "d9"), "moved", &in), 0);
}

START_TEST(test_cache_trim)
{
	struct mdsp_inode in;
	char name[32];
	uint64_t dirs[10], cold = 0, hard = 0;
	int d, k;

	snprintf(P.extra[P.nextra++], 256, "--mds_cache_size=60");
	/* nothing expires (so nothing is clean enough to evict) until the
	 * tree is made: on a loaded machine the first directories were idle
	 * for a second, and trimmed, before the count below */
	snprintf(P.extra[P.nextra++], 256, "--mds_journal_expire_age=3600");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.1");
	start_and_open();
	for (d = 0; d < 10; d++) {
		snprintf(name, sizeof(name), "d%d", d);
		ck_assert_int_eq(mdsw_mkdir(&W, ROOT, name, 0755, &in), 0);
		dirs[d] = in.ino;
		for (k = 0; k < 20; k++) {
			snprintf(name, sizeof(name), "f%d", k);
			ck_assert_int_eq(mdsw_create(&W, dirs[d], name, 0644, O_CREAT | O_EXCL, &in), 0);
			if (d == 3 && k == 7)
				cold = in.ino;
			if (d == 5 && k == 1)
				hard = in.ino;
		}
	}
	ck_assert_int_eq(mdsw_link(&W, dirs[6], "hard", hard, &in), 0);
	ck_assert_int_gt(status_value("inodes_cached"), 200);
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_journal_expire_age", "0.2"), 0);
	LT_WAIT_UNTIL(status_value("inodes_cached") <= 60, "the cache was not trimmed");
	/* evicted directories come back on use, with everything in them */
	ck_assert_int_eq(mdsw_rename(&W, dirs[1], "f0", dirs[9], "moved", 0), 0);
	ck_assert_int_eq(mdsw_create(&W, dirs[2], "new", 0644, O_CREAT | O_EXCL, &in), 0);
	check_trimmed_tree(cold, hard);
	/* evict again, then crash: the journal and the objects agree */
	LT_WAIT_UNTIL(status_value("inodes_cached") <= 60, "the cache was not trimmed again");
	restart(SIGKILL);
	check_trimmed_tree(cold, hard);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_recovery");
	TCase *tc = tcase_create("recovery");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_kill9_safe_changes_survive);
	tcase_add_test(tc, test_kill9_with_expiring_segments);
	tcase_add_test(tc, test_clean_shutdown_and_cold_lookups);
	tcase_add_test(tc, test_exactly_once_across_restart);
	tcase_add_test(tc, test_exactly_once_across_clean_restart);
	tcase_add_test(tc, test_reconnect_same_mds);
	tcase_add_test(tc, test_purge_queue_survives_and_drains);
	tcase_add_test(tc, test_purge_local_data_store);
	tcase_add_test(tc, test_torn_journal_tail);
	tcase_add_test(tc, test_expired_segments_are_removed);
	tcase_add_test(tc, test_replay_goes_before_other_clients);
	tcase_add_test(tc, test_clean_stop_waits_for_connected_sessions);
	tcase_add_test(tc, test_replay_keeps_ino);
	tcase_add_test(tc, test_replays_wait_behind_a_parked_one);
	tcase_add_test(tc, test_flush_waits_behind_a_parked_create);
	tcase_add_test(tc, test_flush_waits_behind_a_parked_truncate);
	tcase_add_test(tc, test_ack_after_a_held_flush);
	tcase_add_test(tc, test_phase_waits_for_held_replays);
	tcase_add_test(tc, test_reconnect_claims_in_unmade_dirs);
	tcase_add_test(tc, test_reconnect_claim_absurd_lease_seq);
	tcase_add_test(tc, test_replay_refuses_what_is_not_its_own);
	tcase_add_test(tc, test_delegated_inos);
	tcase_add_test(tc, test_stale_delegations_freed);
	tcase_add_test(tc, test_cache_trim);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_rec", parent_dir, sizeof(parent_dir));
}
