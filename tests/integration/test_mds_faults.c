/*
 * test_mds_faults.c - loligo-mds under storage faults (issue 9 items 1, 2).
 *
 * A damaged journal is refused, never taken for a torn tail: a flipped byte
 * in the middle, a deleted segment; --journal-inspect names the entry; a
 * real torn tail is still cut; export/import round-trips; reset gives a
 * consistent, older filesystem; a format-1 journal is converted.  Journal
 * write errors (injected into the real local store through
 * store_inject_write_error, set at runtime with `config set`) make the MDS
 * read-only instead of killing it: it stays up, answers reads, refuses
 * mutations with the store's errno, keeps what was answered UNSAFE until it
 * is durable, and heals by itself once writes succeed again, also when it
 * was started on a failing store; `loligo -s` (the real CLI) shows
 * HEALTH_ERR MDS_READ_ONLY with the cause, and HEALTH_OK after.
 *
 * The journal is damaged offline, with the MDS stopped, through the store
 * API, the way a bad disk or a careless operator would.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/mds.h"
#include "store/store.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"

#define ROOT MDSP_ROOT_INO
static char parent_dir[256];
static struct mdsproc P;
static struct mdsw W;

static void setup(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	memset(&W, 0, sizeof(W));
	W.fd = -1;
}

static void teardown(void)
{
	mdsw_close(&W);
	mdsproc_cleanup(&P);
}

static void extra(const char *arg)
{
	snprintf(P.extra[P.nextra++], 256, "%s", arg);
}

/* no expiry while the test runs (tick 1000 s), small segments */
static void keep_journal(void)
{
	extra("--mds_tick_interval=1000");
	extra("--mds_journal_segment_size=4096");
}

static void start_and_open(void)
{
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.faults"), 0);
}

/*
 * kill -9 the MDS with the client still connected, then drop the client's
 * end.  Not the other way round: an MDS that sees the connection close
 * journals the session's DISCONNECTED record, and whether that entry or
 * the last create ends the journal then depends on who runs first (CI's
 * ASan run: the torn-tail case cut the session record, not b/f019).
 */
static void crash(void)
{
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&W);
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
}

/* The MDS refuses to start; its stderr goes to @err. */
static void start_refused(char *err, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/mds.stderr", P.dir);
	unlink(path);
	ck_assert_int_eq(mdsproc_start(&P), -ECHILD);
	read_file(path, err, len);
}

static int tool(char *out, size_t len, const char *a1, const char *a2, const char *a3)
{
	const char *args[] = { a1, a2, a3, NULL };

	return mdsproc_run_output(&P, args, out, len);
}

/* ---- the store, offline ----------------------------------------------------- */

struct offline {
	struct store *st;
	struct store_pool *meta;
};

static void off_open(struct offline *o)
{
	struct store_config sc = { .backend = "local" };
	char path[512];

	snprintf(path, sizeof(path), "%s/store", P.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &o->st), 0);
	ck_assert_int_eq(store_pool_open(o->st, "loligo_metadata", NULL, &o->meta), 0);
}

static void off_close(struct offline *o)
{
	store_pool_close(o->meta);
	store_close(o->st);
}

static int seg_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Segment numbers that exist, sorted. */
static size_t off_segments(struct offline *o, uint64_t *nos, size_t max)
{
	char **names = NULL;
	size_t n = 0, i, k = 0;

	ck_assert_int_eq(store_list_objects(o->meta, &names, &n), 0);
	for (i = 0; i < n; i++) {
		if (!strncmp(names[i], "mds_journal.", 12) && k < max)
			nos[k++] = strtoull(names[i] + 12, NULL, 16);
		free(names[i]);
	}
	free(names);
	qsort(nos, k, sizeof(*nos), seg_cmp);
	return k;
}

static uint8_t *off_read(struct offline *o, uint64_t no, size_t *len)
{
	struct jreader rd;
	uint8_t *d;

	journal_store_reader(o->meta, &rd);
	ck_assert_int_eq(rd.read(rd.arg, no, &d, len), 0);
	return d;
}

static void off_write(struct offline *o, const char *oid, const void *d, size_t len)
{
	struct store_op *op = store_op_new();

	store_op_write_full(op, d, len);
	ck_assert_int_eq(store_op_exec(o->meta, oid, op), 0);
}

static void off_remove(struct offline *o, const char *oid)
{
	struct store_op *op = store_op_new();

	store_op_remove(op);
	ck_assert_int_eq(store_op_exec(o->meta, oid, op), 0);
}

/* ---- finding the entry of a change -------------------------------------------- */

struct find_key {
	const char *key;
	bool found;
};

static int find_key_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
			 const char *key2)
{
	struct find_key *f = arg;

	(void)oid; (void)val; (void)len; (void)key2;
	if (op == EDIT_SET && !strcmp(key, f->key))
		f->found = true;
	return 0;
}

struct located {
	uint64_t seg;
	size_t off;                   /* entry offset in the segment */
	uint64_t seq;
	size_t plen;
	bool sealed_seg;              /* not the newest segment */
};

/* The journal entry that set dentry @name (the MDS stopped). */
static bool locate(struct offline *o, const char *name, struct located *loc)
{
	uint64_t nos[64];
	size_t n = off_segments(o, nos, 64), i;

	for (i = 0; i < n; i++) {
		size_t len, off = 0;
		uint8_t *d = off_read(o, nos[i], &len);
		struct jentry e;
		/* format 1 too, so that the test also runs against an older loligo-mds */
		uint32_t fmt = len >= 4 && le32_get(d) == JE1_MAGIC ? JFMT_V1 : JFMT_V2;

		while (off < len && jent_parse(fmt, d + off, len - off, &e) == JP_OK) {
			if (e.type == JE_EDITS) {
				struct find_key f = { name, false };

				jedits_for_each(e.payload, e.plen, find_key_edit, &f);
				if (f.found) {
					loc->seg = nos[i];
					loc->off = off;
					loc->seq = e.seq;
					loc->plen = e.plen;
					loc->sealed_seg = i + 1 < n;
					free(d);
					return true;
				}
			}
			off += e.len;
		}
		free(d);
	}
	return false;
}

/* Flip one byte in the middle of the payload of the entry that created @name. */
static void flip_entry_of(const char *name, struct located *loc)
{
	struct offline o;
	char oid[64];
	uint8_t *d;
	size_t len;

	off_open(&o);
	ck_assert_msg(locate(&o, name, loc), "no journal entry creates %s", name);
	d = off_read(&o, loc->seg, &len);
	d[loc->off + (le32_get(d) == JE1_MAGIC ? JE1_HDR_LEN : JE2_HDR_LEN) + loc->plen / 2] ^= 0x04;
	journal_oid_seg(oid, sizeof(oid), loc->seg);
	off_write(&o, oid, d, len);
	free(d);
	off_close(&o);
}

/* ---- a namespace to damage ----------------------------------------------------- */

static uint64_t mkdir_ino(uint64_t dir, const char *name)
{
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_mkdir(&W, dir, name, 0755, &in), 0);
	return in.ino;
}

/* @n files tag/f000.. , each acknowledged SAFE */
static uint64_t make_files(const char *tag, int n)
{
	struct mdsp_inode in;
	uint64_t d = mkdir_ino(ROOT, tag);
	char name[32];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		ck_assert_int_eq(mdsw_create(&W, d, name, 0644, O_CREAT | O_EXCL, &in), 0);
	}
	return d;
}

static uint64_t lookup_ino(uint64_t dir, const char *name)
{
	struct mdsp_inode in;

	ck_assert_msg(mdsw_lookup(&W, dir, name, &in) == 0, "lookup %s", name);
	return in.ino;
}

static int count_dir(uint64_t dir)
{
	struct mdsp_reply rep;
	uint64_t cookie = 0;
	int n = 0;
	bool end = false;

	while (!end) {
		ck_assert_int_eq(mdsw_readdir(&W, dir, cookie, 64, &rep), 0);
		n += (int)rep.nentries;
		if (rep.nentries)
			cookie = rep.entries[rep.nentries - 1].cookie;
		end = rep.end;
		mdsw_reply_free(&rep);
	}
	return n;
}

/* exactly files [0, upto) of f000..f<n-1> exist in tag, which holds @count entries */
static void check_files_n(const char *tag, int upto, int n, int count)
{
	struct mdsp_inode in;
	uint64_t d = lookup_ino(ROOT, tag);
	char name[32];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		ck_assert_msg(mdsw_lookup(&W, d, name, &in) == (i < upto ? 0 : -ENOENT), "%s/%s %s", tag, name,
			      i < upto ? "missing" : "should be gone");
	}
	ck_assert_int_eq(count_dir(d), count);
}

static void check_files(const char *tag, int upto, int n)
{
	check_files_n(tag, upto, n, upto);
}

static char *asok_path(void)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	return path;
}

/* What `loligo -s` (the real CLI, from the build tree) prints for this MDS. */
static void cli_status(char *out, size_t len)
{
	const char *b = getenv("LOLIGO_BUILD_DIR");
	char cmd[1536];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/tools/cli/loligo --mds-asok %s -s --interval 0.1 2>&1", b ? b : ".",
		 asok_path());
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (n + 1 < len && fgets(out + n, (int)(len - n), f))
		n += strlen(out + n);
	out[n] = 0;
	pclose(f);
}

static int config_set(const char *var, const char *val)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;
	int r;

	json_object_object_add(req, "prefix", json_object_new_string("config set"));
	json_object_object_add(req, "var", json_object_new_string(var));
	json_object_object_add(req, "val", json_object_new_string(val));
	r = asok_request(asok_path(), req, &rep, 5000);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return r;
}

/* `status` over the admin socket (caller puts it). */
static struct json_object *status(void)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;

	json_object_object_add(req, "prefix", json_object_new_string("status"));
	ck_assert_int_eq(asok_request(asok_path(), req, &rep, 5000), 0);
	json_object_put(req);
	return rep;
}

static bool read_only(char *health, size_t len)
{
	struct json_object *s = status(), *v, *h, *st;
	bool ro = json_object_object_get_ex(s, "read_only", &v) && json_object_get_boolean(v);

	if (health) {
		health[0] = 0;
		if (json_object_object_get_ex(s, "health", &h) && json_object_object_get_ex(h, "status", &st))
			snprintf(health, len, "%s %s", json_object_get_string(st), json_object_to_json_string(h));
	}
	json_object_put(s);
	return ro;
}

static bool wait_read_only(bool want)
{
	int i;

	for (i = 0; i < 1000; i++) {   /* 20 s: a loaded machine */
		if (read_only(NULL, 0) == want)
			return true;
		usleep(20000);
	}
	return false;
}

/* Read frames on @w until the SAFE reply of @tid (other frames are dropped). */
static int wait_safe_reply(struct mdsw *w, uint64_t tid, int timeout_ms, struct mdsp_reply *rep)
{
	struct mdsp_msg in;
	const char *why;
	int r;

	for (;;) {
		r = mdsp_recv_auth(w->fd, &in, timeout_ms, w->rx, &w->in_seq, &why);
		if (r)
			return -1000 + r;
		if (in.type == MDSP_MSG_REPLY && in.reply.tid == tid && (in.reply.flags & MDSP_REPLY_SAFE)) {
			*rep = in.reply;
			return rep->result;
		}
		mdsp_msg_free(&in);
	}
}

/* ---- item 1: damage is refused ------------------------------------------------ */

START_TEST(test_flipped_byte_refused_and_inspected)
{
	static char err[8192], out[1 << 16];
	struct located loc;
	char oid[64], want[160];

	keep_journal();
	start_and_open();
	make_files("d", 200);
	crash();
	flip_entry_of("f100", &loc);
	ck_assert_msg(loc.sealed_seg, "the entry should sit in an older segment");
	journal_oid_seg(oid, sizeof(oid), loc.seg);

	/* refused at start, with the segment, the offset and what to do */
	start_refused(err, sizeof(err));
	snprintf(want, sizeof(want), "segment object %s, offset %zu (entry %" PRIu64 ")", oid, loc.off, loc.seq);
	ck_assert_msg(strstr(err, want), "start message lacks '%s':\n%s", want, err);
	ck_assert_msg(strstr(err, "--journal-inspect") && strstr(err, "journal reset"), "no advice:\n%s", err);

	/* --journal-inspect names the entry and says DAMAGED */
	ck_assert_int_eq(tool(out, sizeof(out), "--journal-inspect", NULL, NULL), 1);
	snprintf(want, sizeof(want), "first bad: segment object %s, offset %zu, entry %" PRIu64, oid, loc.off, loc.seq);
	ck_assert_msg(strstr(out, want), "inspect lacks '%s':\n%s", want, out);
	ck_assert_ptr_nonnull(strstr(out, "journal integrity: DAMAGED"));
	/* the good entries before it are listed */
	snprintf(want, sizeof(want), "seq %-10" PRIu64 " EDITS", loc.seq - 1);
	ck_assert_msg(strstr(out, want), "inspect does not list entry %" PRIu64 ":\n%.2000s", loc.seq - 1, out);

	/* a flip in the newest segment, with good entries after it, is damage
	 * too (one big segment: everything is in the newest) */
	mdsproc_cleanup(&P);
	setup();
	extra("--mds_tick_interval=1000");
	start_and_open();
	make_files("d", 200);
	crash();
	flip_entry_of("f100", &loc);
	ck_assert(!loc.sealed_seg);
	start_refused(err, sizeof(err));
	ck_assert_msg(strstr(err, "the journal is damaged"), "%s", err);
}
END_TEST

START_TEST(test_deleted_segment_refused)
{
	static char err[8192], out[1 << 16];
	struct offline o;
	uint64_t nos[64];
	size_t n;
	char oid[64], want[128];

	keep_journal();
	start_and_open();
	make_files("d", 200);
	crash();
	off_open(&o);
	n = off_segments(&o, nos, 64);
	ck_assert_uint_ge(n, 3);
	journal_oid_seg(oid, sizeof(oid), nos[n / 2]);
	off_remove(&o, oid);
	off_close(&o);

	start_refused(err, sizeof(err));
	snprintf(want, sizeof(want), "segment object %s, offset 0", oid);
	ck_assert_msg(strstr(err, want) && strstr(err, "segment missing"), "lacks '%s':\n%s", want, err);
	ck_assert_int_eq(tool(out, sizeof(out), "--journal-inspect", "--summary", NULL), 1);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_msg(strstr(out, "not reached by the walk"), "inspect does not show the segments after it:\n%s", out);

	/* the newest segment deleted */
	journal_oid_seg(oid, sizeof(oid), nos[n - 1]);
	off_open(&o);
	off_remove(&o, oid);
	off_close(&o);
	start_refused(err, sizeof(err));
	ck_assert_msg(strstr(err, "the journal is damaged"), "%s", err);
}
END_TEST

START_TEST(test_torn_tail_is_cut)
{
	struct offline o;
	uint64_t nos[64], sid;
	size_t n, len;
	struct mdsp_buf b;
	uint8_t *d, no[8];
	struct jseg_info si;
	char oid[64];

	extra("--mds_tick_interval=1000");   /* one segment, never sealed by age */
	start_and_open();
	make_files("a", 50);
	sid = W.sid;
	crash();
	/* the write in flight at the crash: the first 30 bytes of an entry
	 * with the next sequence number, appended to the newest segment */
	off_open(&o);
	n = off_segments(&o, nos, 64);
	d = off_read(&o, nos[n - 1], &len);
	ck_assert_int_eq(jseg_scan(JFMT_V2, nos[n - 1], d, len, 0, NULL, NULL, &si), 0);
	ck_assert(!si.sealed && si.tail == JT_CLEAN);
	mdsp_buf_init(&b);
	enc_bytes(&b, d, len);
	le64_put(no, 12345);
	{
		struct mdsp_buf e;

		mdsp_buf_init(&e);
		jent_put(&e, JE_EDITS, si.last_seq + 1, "0123456789abcdefghijklmnopqrstuvwxyz", 36);
		enc_bytes(&b, e.data, 30);
		mdsp_buf_free(&e);
	}
	journal_oid_seg(oid, sizeof(oid), nos[n - 1]);
	off_write(&o, oid, b.data, b.len);
	mdsp_buf_free(&b);
	free(d);
	off_close(&o);

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	W.next_tid = 10000;
	check_files("a", 50, 50);
	make_files("b", 20);
	crash();
	/* a truncated last entry: cut as well (what it said is lost, as it
	 * would be after a torn write) */
	off_open(&o);
	n = off_segments(&o, nos, 64);
	d = off_read(&o, nos[n - 1], &len);
	journal_oid_seg(oid, sizeof(oid), nos[n - 1]);
	off_write(&o, oid, d, len - 5);
	free(d);
	off_close(&o);
	start_and_open();
	check_files("a", 50, 50);
	check_files("b", 19, 20);
	make_files("c", 5);
	crash();
	start_and_open();
	check_files("a", 50, 50);
	check_files("b", 19, 20);
	check_files("c", 5, 5);
}
END_TEST

/* The journal commands refuse to run under a serving MDS (the local store
 * takes several processes now).  A second MDS of the same name is a
 * restart of it (mds/mdsmap.c): it takes rank 0 and fences the first, which
 * exits deposed; what the first acknowledged is all there. */
START_TEST(test_one_mds_per_store)
{
	static char out[8192];
	uint64_t sid;
	int st = -1;

	start_and_open();
	make_files("a", 3);
	sid = W.sid;
	ck_assert_int_eq(tool(out, sizeof(out), "journal", "reset", "--yes-i-really-mean-it"), 1);
	ck_assert_msg(strstr(out, "need every MDS daemon stopped"), "%s", out);
	{
		struct mdsproc q = P;

		ck_assert_int_eq(mdsproc_start(&q), 0);
		for (int i = 0; i < 3000 && waitpid(P.pid, &st, WNOHANG) != P.pid; i++)
			usleep(10000);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "the replaced MDS did not exit deposed (%#x)", st);
		P = q;
	}
	mdsw_close(&W);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	check_files("a", 3, 3);
	crash();
	ck_assert_int_eq(tool(out, sizeof(out), "--journal-inspect", NULL, NULL), 0);
}
END_TEST

START_TEST(test_export_import_round_trip)
{
	static char out[1 << 16], err[8192];
	struct located loc;
	char file[512];
	struct stat st;

	keep_journal();
	start_and_open();
	make_files("x", 120);
	crash();
	snprintf(file, sizeof(file), "%s/journal.export", P.dir);
	ck_assert_int_eq(tool(out, sizeof(out), "journal", "export", file), 0);
	ck_assert_msg(strstr(out, "exported the journal header"), "%s", out);
	ck_assert_int_eq(stat(file, &st), 0);
	/* damage it; the MDS refuses; the import brings the saved one back */
	flip_entry_of("f060", &loc);
	start_refused(err, sizeof(err));
	ck_assert_int_eq(tool(out, sizeof(out), "journal", "import", file), 2);   /* no confirmation */
	ck_assert_msg(strstr(out, "Nothing changed"), "%s", out);
	start_refused(err, sizeof(err));
	{
		const char *args[] = { "journal", "import", file, "--yes-i-really-mean-it", NULL };

		ck_assert_int_eq(mdsproc_run_output(&P, args, out, sizeof(out)), 0);
	}
	ck_assert_msg(strstr(out, "journal integrity: OK"), "%s", out);
	start_and_open();
	check_files("x", 120, 120);
	/* a damaged export file is refused */
	{
		FILE *f = fopen(file, "r+");
		int c;

		ck_assert_ptr_nonnull(f);
		fseek(f, st.st_size / 2, SEEK_SET);
		c = fgetc(f);
		fseek(f, st.st_size / 2, SEEK_SET);
		fputc(c ^ 1, f);
		fclose(f);
	}
	crash();
	{
		const char *args[] = { "journal", "import", file, "--yes-i-really-mean-it", NULL };

		ck_assert_int_eq(mdsproc_run_output(&P, args, out, sizeof(out)), 1);
	}
	ck_assert_msg(strstr(out, "checksum mismatch"), "%s", out);
	start_and_open();
	check_files("x", 120, 120);
}
END_TEST

START_TEST(test_reset_gives_consistent_older_fs)
{
	static char out[1 << 16], err[8192];
	struct mdsp_inode in;
	struct located loc;
	uint64_t two, inos[100], fresh, old_sid;
	char name[32];
	int i, cut;

	keep_journal();
	start_and_open();
	make_files("one", 30);
	/* "one" goes into the directory objects at a clean stop */
	mdsw_close(&W);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	start_and_open();
	make_files("two", 200);
	old_sid = W.sid;
	crash();
	flip_entry_of("f120", &loc);
	start_refused(err, sizeof(err));

	/* without confirmation nothing changes */
	ck_assert_int_eq(tool(out, sizeof(out), "journal", "reset", NULL), 2);
	ck_assert_msg(strstr(out, "DROPPED") && strstr(out, "Nothing changed"), "%s", out);
	start_refused(err, sizeof(err));
	ck_assert_int_eq(tool(out, sizeof(out), "journal", "reset", "--yes-i-really-mean-it"), 0);
	ck_assert_msg(strstr(out, "done:"), "%s", out);
	ck_assert_int_eq(tool(out, sizeof(out), "--journal-inspect", NULL, NULL), 0);

	/* sessions are forgotten (their ino pools may have fed dropped creates) */
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, old_sid), -ESTALE);
	mdsw_close(&W);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.after_reset"), 0);
	check_files("one", 30, 30);
	/* everything before the damaged entry, nothing from it on */
	cut = 120;
	check_files("two", cut, 200);
	two = lookup_ino(ROOT, "two");
	ck_assert_int_eq(mdsw_getattr(&W, two, &in), 0);
	ck_assert_uint_eq(in.nlink, 2);
	for (i = 0; i < cut && i < 100; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		inos[i] = lookup_ino(two, name);
	}
	/* it takes changes again, with inode numbers never handed out before */
	ck_assert_int_eq(mdsw_create(&W, two, "after_reset", 0644, O_CREAT | O_EXCL, &in), 0);
	fresh = in.ino;
	for (i = 0; i < 100; i++)
		ck_assert_uint_ne(inos[i], fresh);
	ck_assert_uint_gt(fresh, inos[99] + 1000);
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "three", 0755, &in), 0);
	crash();
	start_and_open();
	check_files("one", 30, 30);
	check_files_n("two", cut, 200, cut + 1);   /* and after_reset */
	ck_assert_int_eq(mdsw_lookup(&W, two, "after_reset", &in), 0);
	ck_assert_uint_eq(in.ino, fresh);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "three", &in), 0);
}
END_TEST

/* A crash between creating a segment and naming it in the header leaves
 * the header one segment behind; the next run must catch up before it goes
 * further (or the journal after it looks damaged). */
START_TEST(test_header_one_behind)
{
	struct offline o;
	struct jheader h;
	struct mdsp_buf hb;
	const char *why;
	uint64_t nos[64];
	size_t n;
	int i;

	keep_journal();
	start_and_open();
	make_files("a", 60);
	crash();
	off_open(&o);
	ck_assert_int_eq(journal_header_read(o.meta, &h, &why), 0);
	n = off_segments(&o, nos, 64);
	ck_assert_uint_gt(nos[n - 1], h.expire_seg);
	h.head_seg = nos[n - 1] - 1;   /* the newest segment is not named yet */
	mdsp_buf_init(&hb);
	jheader_encode(&hb, &h);
	off_write(&o, OID_JOURNAL, hb.data, hb.len);
	mdsp_buf_free(&hb);
	off_close(&o);
	for (i = 0; i < 3; i++) {
		char tag[16];

		start_and_open();
		snprintf(tag, sizeof(tag), "b%d", i);
		make_files(tag, 40);   /* across several new segments */
		crash();
	}
	start_and_open();
	check_files("a", 60, 60);
	check_files("b2", 40, 40);
}
END_TEST

/* A format-1 journal (entries without sequence numbers) from an older
 * loligo-mds: built here from the edits of a real one, then replayed,
 * applied and replaced by a format-2 journal at start. */
START_TEST(test_format1_journal_is_converted)
{
	struct offline o;
	uint64_t nos[64];
	size_t n, i;
	struct jheader h = { .fmt = JFMT_V1 };
	struct mdsp_buf hb;
	struct json_object *s, *jo, *f;

	keep_journal();
	start_and_open();
	make_files("old", 80);
	crash();
	off_open(&o);
	n = off_segments(&o, nos, 64);
	for (i = 0; i < n; i++) {
		size_t len, off = 0;
		uint8_t *d = off_read(&o, nos[i], &len);
		struct mdsp_buf v1;
		struct jentry e;
		char oid[64];

		mdsp_buf_init(&v1);
		while (off < len && jent_parse(JFMT_V2, d + off, len - off, &e) == JP_OK) {
			if (e.type != JE_SEG_START)
				jent_put_v1(&v1, e.type, e.payload, e.plen);
			off += e.len;
		}
		journal_oid_seg(oid, sizeof(oid), nos[i]);
		off_write(&o, oid, v1.data, v1.len);
		mdsp_buf_free(&v1);
		free(d);
	}
	h.expire_seg = h.removed_upto = nos[0];
	mdsp_buf_init(&hb);
	jheader_encode(&hb, &h);
	off_write(&o, OID_JOURNAL, hb.data, hb.len);
	mdsp_buf_free(&hb);
	off_close(&o);

	start_and_open();
	check_files("old", 80, 80);
	s = status();
	ck_assert(json_object_object_get_ex(s, "journal", &jo) && json_object_object_get_ex(jo, "format", &f));
	ck_assert_int_eq(json_object_get_int(f), 2);
	json_object_put(s);
	make_files("new", 10);
	crash();
	start_and_open();
	check_files("old", 80, 80);
	check_files("new", 10, 10);
}
END_TEST

/* ---- item 2: write errors make the MDS read-only, not dead -------------------- */

START_TEST(test_write_errors_make_it_read_only)
{
	struct mdsp_request q = { .op = MDSP_OP_CREATE, .ino = ROOT, .name = "inflight", .mode = 0644,
				  .oflags = O_CREAT | O_EXCL };
	struct mdsp_reply rep;
	struct mdsp_inode in;
	struct mdsw w2, w3;
	char health[2048];
	uint64_t d, tid;

	extra("--mds_journal_retry_interval=0.1");
	start_and_open();
	d = make_files("d", 10);
	/* a second client, with its own session */
	ck_assert_int_eq(mdsw_connect(&w2, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w2, "client.second"), 0);

	/* the store starts failing every write with EIO */
	ck_assert_int_eq(config_set("store_inject_write_error", "EIO"), 0);
	/* a create in flight: applied and answered UNSAFE, its journal write fails */
	W.wait_safe = false;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_UNSAFE);
	tid = rep.tid;
	mdsw_reply_free(&rep);
	W.wait_safe = true;
	ck_assert_msg(wait_read_only(true), "the MDS did not become read-only");
	ck_assert_int_eq(kill(P.pid, 0), 0);   /* still running */

	/* a new session needs the journal: refused with the error */
	ck_assert_int_eq(mdsw_connect(&w3, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w3, "client.third"), -EIO);
	mdsw_close(&w3);
	/* the other client: reads go on, mutations fail with EIO at once */
	ck_assert_int_eq(mdsw_lookup(&w2, d, "f003", &in), 0);
	ck_assert_int_eq(mdsw_getattr(&w2, d, &in), 0);
	{
		struct mdsp_request sq = { .op = MDSP_OP_STATFS, .ino = ROOT };

		ck_assert_int_eq(mdsw_call(&w2, &sq, &rep), 0);
		mdsw_reply_free(&rep);
	}
	ck_assert_int_eq(mdsw_create(&w2, d, "refused", 0644, O_CREAT, &in), -EIO);
	ck_assert_int_eq(mdsw_mkdir(&w2, d, "refused_dir", 0755, &in), -EIO);
	ck_assert_int_eq(mdsw_unlink(&w2, d, "f001"), -EIO);   /* EIO: unlinks free nothing */
	ck_assert_int_eq(mdsw_lookup(&w2, d, "refused", &in), -ENOENT);
	/* what was answered UNSAFE is visible (it is applied) but not SAFE */
	ck_assert_int_eq(mdsw_lookup(&w2, ROOT, "inflight", &in), 0);
	ck_assert(read_only(health, sizeof(health)));
	ck_assert_msg(strstr(health, "HEALTH_ERR") && strstr(health, "MDS_READ_ONLY") &&
		      strstr(health, "output error"), "health: %s", health);
	/* and what an operator sees: loligo -s says it, with the cause */
	{
		char out[8192];

		cli_status(out, sizeof(out));
		ck_assert_msg(strstr(out, "HEALTH_ERR") && strstr(out, "MDS_READ_ONLY") &&
			      strstr(out, "output error") && strstr(out, "(read-only)"), "loligo -s:\n%s", out);
	}

	/* writes work again: the MDS heals by itself, the UNSAFE create becomes SAFE */
	ck_assert_int_eq(config_set("store_inject_write_error", ""), 0);
	ck_assert_int_eq(wait_safe_reply(&W, tid, 20000, &rep), 0);
	mdsw_reply_free(&rep);
	ck_assert(wait_read_only(false));
	ck_assert(!read_only(health, sizeof(health)));
	ck_assert_msg(strstr(health, "HEALTH_OK"), "%s", health);
	{
		char out[8192];

		cli_status(out, sizeof(out));
		ck_assert_msg(strstr(out, "HEALTH_OK") && !strstr(out, "MDS_READ_ONLY") && !strstr(out, "(read-only)"),
			      "loligo -s after the heal:\n%s", out);
	}
	ck_assert_int_eq(mdsw_create(&w2, d, "after", 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert_int_eq(mdsw_unlink(&w2, d, "f001"), 0);
	mdsw_close(&w2);
	/* all of it durable */
	crash();
	start_and_open();
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "inflight", &in), 0);
	ck_assert_int_eq(mdsw_lookup(&W, d, "after", &in), 0);
	ck_assert_int_eq(mdsw_lookup(&W, d, "f001", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&W, d, "refused", &in), -ENOENT);
	ck_assert_int_eq(count_dir(d), 10);
}
END_TEST

START_TEST(test_enospc_lets_unlinks_through)
{
	struct mdsp_inode in;
	struct mdsp_request q = { .op = MDSP_OP_UNLINK, .name = "f002" };
	struct mdsp_reply rep;
	uint64_t d;

	extra("--mds_journal_retry_interval=0.1");
	start_and_open();
	d = make_files("d", 5);
	ck_assert_int_eq(config_set("store_inject_write_error", "ENOSPC"), 0);
	/* the first write fails: the MDS goes read-only (the create stays UNSAFE) */
	W.wait_safe = false;
	ck_assert_int_eq(mdsw_create(&W, d, "trigger", 0644, O_CREAT, &in), 0);
	ck_assert(W.got_unsafe);
	W.wait_safe = true;
	ck_assert(wait_read_only(true));
	ck_assert_int_eq(mdsw_create(&W, d, "refused", 0644, O_CREAT, &in), -ENOSPC);
	/* an unlink is taken (UNSAFE: it waits for space like the rest) */
	q.ino = d;
	W.wait_safe = false;
	ck_assert_int_eq(mdsw_call(&W, &q, &rep), 0);
	ck_assert(rep.flags & MDSP_REPLY_UNSAFE);
	mdsw_reply_free(&rep);
	W.wait_safe = true;
	ck_assert_int_eq(mdsw_lookup(&W, d, "f002", &in), -ENOENT);
	ck_assert_int_eq(config_set("store_inject_write_error", ""), 0);
	ck_assert(wait_read_only(false));
	ck_assert_int_eq(mdsw_create(&W, d, "later", 0644, O_CREAT | O_EXCL, &in), 0);
	crash();
	start_and_open();
	ck_assert_int_eq(mdsw_lookup(&W, d, "f002", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&W, d, "trigger", &in), 0);
	ck_assert_int_eq(mdsw_lookup(&W, d, "later", &in), 0);
}
END_TEST

/*
 * A request that fails on the store with ENOTCONN (RADOS's, a lost
 * cluster) is answered EIO.  In a reply ENOTCONN means "no session on this
 * connection": the client resumes its session and sends the request again,
 * and a journaled op is answered again from the completed table: it went
 * round forever (client_request_timeout 0), the program never answered.
 */
START_TEST(test_store_enotconn_answered_eio)
{
	struct mdsp_request q = { .op = MDSP_OP_UNLINK, .name = "f001" };
	struct mdsp_reply rep;
	uint64_t d;
	int r;

	start_and_open();
	d = make_files("d", 3);
	/* a clean stop expires the journal: after the start, nothing of d is
	 * cached and the unlink reads the store */
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	mdsw_close(&W);
	start_and_open();
	ck_assert_int_eq(config_set("store_inject_read_error", "ENOTCONN"), 0);
	q.ino = d;
	r = mdsw_call(&W, &q, &rep);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(config_set("store_inject_read_error", ""), 0);
	ck_assert_msg(r == -EIO, "an unlink the store failed with ENOTCONN was answered %d (%s), not EIO", r,
		      strerror(-r));
	/* the same tid again, as a client sends it after a resume: the
	 * recorded answer, EIO */
	q.flags = MDSP_REQ_RETRY;
	q.attempt = 2;
	r = mdsw_call(&W, &q, &rep);
	mdsw_reply_free(&rep);
	ck_assert_msg(r == -EIO, "the unlink sent again was answered %d (%s), not EIO", r, strerror(-r));
	/* the store is back: a new unlink goes through */
	ck_assert_int_eq(mdsw_unlink(&W, d, "f001"), 0);
}
END_TEST

/* Restarted on a store that fails every write: it starts, serves reads,
 * refuses writes, and heals once the store does (it used to die at every
 * start). */
START_TEST(test_starts_read_only_on_failing_store)
{
	struct mdsp_inode in;
	uint64_t d, sid;
	int i;

	extra("--mds_journal_retry_interval=0.1");
	start_and_open();
	d = make_files("d", 20);
	sid = W.sid;
	crash();    /* the journal holds all of it: the start must seal and expire */
	extra("--store_inject_write_error=EIO");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);   /* resuming needs no journal write */
	W.next_tid = 1000;
	ck_assert(wait_read_only(true));
	ck_assert_int_eq(mdsw_lookup(&W, d, "f019", &in), 0);
	ck_assert_int_eq(count_dir(d), 20);
	ck_assert_int_eq(mdsw_create(&W, d, "no", 0644, O_CREAT, &in), -EIO);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(mdsw_getattr(&W, d, &in), 0);
	ck_assert_int_eq(kill(P.pid, 0), 0);
	ck_assert_int_eq(config_set("store_inject_write_error", ""), 0);
	ck_assert(wait_read_only(false));
	ck_assert_int_eq(mdsw_create(&W, d, "yes", 0644, O_CREAT | O_EXCL, &in), 0);
	crash();
	P.nextra--;
	start_and_open();
	ck_assert_int_eq(count_dir(d), 21);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_faults");
	TCase *tc = tcase_create("journal");
	TCase *ro = tcase_create("read_only");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_flipped_byte_refused_and_inspected);
	tcase_add_test(tc, test_deleted_segment_refused);
	tcase_add_test(tc, test_torn_tail_is_cut);
	tcase_add_test(tc, test_one_mds_per_store);
	tcase_add_test(tc, test_export_import_round_trip);
	tcase_add_test(tc, test_reset_gives_consistent_older_fs);
	tcase_add_test(tc, test_format1_journal_is_converted);
	tcase_add_test(tc, test_header_one_behind);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(ro, setup, teardown);
	tcase_set_timeout(ro, 120);
	tcase_add_test(ro, test_write_errors_make_it_read_only);
	tcase_add_test(ro, test_enospc_lets_unlinks_through);
	tcase_add_test(ro, test_starts_read_only_on_failing_store);
	tcase_add_test(ro, test_store_enotconn_answered_eio);
	suite_add_tcase(s, ro);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_faults", parent_dir, sizeof(parent_dir));
}
