/*
 * mdcache_replay.c - how the namespace gets into memory: mkfs, the tables
 * loaded at start (mds_table, the inode and stray tables, and through
 * mdcache_hooks the purge queue, blocklist and sessions), and the journal's
 * edits applied to memory at replay (mdcache_replay_edit), which is why a
 * directory object may lag its journaled state (mdcache.c's essay).  Runs
 * under mds->lock, at start.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/log.h"
#include "common/siphash.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/mdcache.h"
#include "mds/mdcache_priv.h"

/* ---- replay ----------------------------------------------------------------- */

/* "<ino>.dir" (the head, *frag false) or "<ino>.<bits>-<value>.dir" (a fragment) */
static bool parse_dir_oid(const char *oid, uint64_t *ino, bool *frag)
{
	char *end;
	unsigned long long v;

	if (!*oid)
		return false;
	v = strtoull(oid, &end, 16);
	*frag = false;
	if (*end == '.' && end[1] >= '0' && end[1] <= '9' && strchr(end + 1, '-')) {
		char *e2;

		(void)strtoul(end + 1, &e2, 10);
		if (*e2 != '-')
			return false;
		(void)strtoull(e2 + 1, &end, 16);
		*frag = true;
	}
	if (strcmp(end, ".dir"))
		return false;
	*ino = v;
	return true;
}

/*
 * "data_pools": the data pools after the first, a line "ID=NAME" each
 * (fsset.c writes the whole list at every add and rm).  Handles stay open
 * for the pools that remain.
 */
static int replay_data_pools(struct mds *m, const void *val, uint32_t len)
{
	struct mds_data_pool *v = NULL;
	uint32_t n = 0;
	char *s = malloc(len + 1), *line, *save = NULL;

	if (!s)
		return -ENOMEM;
	memcpy(s, val, len);
	s[len] = '\0';
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '='), *end;
		unsigned long id;
		struct mds_data_pool *nv;

		if (!eq)
			continue;
		*eq = '\0';
		id = strtoul(line, &end, 10);
		if (*end || !id || id > UINT32_MAX || !eq[1])
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n].id = (uint32_t)id;
		v[n].name = strdup(eq + 1);
		v[n].p = NULL;
		for (uint32_t i = 0; i < m->ndata_pools; i++)
			if (m->data_pools[i].id == v[n].id && !strcmp(m->data_pools[i].name, eq + 1)) {
				v[n].p = m->data_pools[i].p;   /* still there: keep the handle */
				m->data_pools[i].p = NULL;
			}
		if (v[n].name)
			n++;
	}
	free(s);
	for (uint32_t i = 0; i < m->ndata_pools; i++) {
		if (m->data_pools[i].p)
			store_pool_close(m->data_pools[i].p);
		free(m->data_pools[i].name);
	}
	free(m->data_pools);
	m->data_pools = v;
	m->ndata_pools = n;
	return 0;
}

static int replay_table(struct mds *m, int op, const char *key, const void *val, uint32_t len)
{
	if (op != EDIT_SET)
		return 0;
	if (!strcmp(key, "root")) {
		int r = inode_blob_decode(val, len, m->root);

		if (!r && (m->root->a.quota_max_bytes || m->root->a.quota_max_files))
			m->quotas_seen = true;
		if (!r)
			mdcache_inode_mem_sync(m->root);
		return r;
	}
	if (!strcmp(key, "data_pools"))
		return replay_data_pools(m, val, len);
	if (len != 8)
		return -EBADMSG;
	if (!strcmp(key, "next_ino")) {
		uint64_t v = le64_get(val);

		if (v > m->ino_reserved)
			m->ino_reserved = v;
	} else if (!strcmp(key, "next_sid")) {
		uint64_t v = le64_get(val);

		if (v > m->next_sid)
			m->next_sid = v;
	} else if (!strcmp(key, "nfiles")) {
		m->nfiles = le64_get(val);
	} else if (!strcmp(key, "max_file_size")) {
		m->max_file_size = le64_get(val);
	} else if (!strcmp(key, "refuse_client_session")) {
		m->refuse_client_session = le64_get(val) != 0;
	} else if (!strcmp(key, "session_timeout_ms")) {
		m->fs_session_timeout_ms = le64_get(val);
	} else if (!strcmp(key, "session_autoclose_ms")) {
		m->fs_session_autoclose_ms = le64_get(val);
	} else if (!strcmp(key, "standby_count_wanted")) {
		m->fs_standby_wanted = le64_get(val);
	} else if (!strcmp(key, "cookie_key0") || !strcmp(key, "cookie_key1")) {
		memcpy(m->cookie_key + (key[10] == '1' ? 8 : 0), val, 8);
		m->have_cookie_key = true;   /* both are written together */
	}
	return 0;
}

/*
 * The readdir cookies' key: made at mkfs, or at the first start of a
 * filesystem made before it (written before the MDS serves, so every
 * cookie from a name is under it).
 */
int mdcache_cookie_key_ensure(struct mds *m)
{
	struct store_op *op;
	uint8_t k[16];
	ssize_t got = 0;

	if (m->have_cookie_key)
		return 0;
	while (got < 16) {
		ssize_t r = getrandom(k + got, sizeof(k) - (size_t)got, 0);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			got += r;
	}
	op = store_op_new();
	if (!op)
		return -ENOMEM;
	store_op_omap_set(op, "cookie_key0", k, 8);
	store_op_omap_set(op, "cookie_key1", k + 8, 8);
	int r = store_op_exec(m->meta, OID_TABLE, op);
	if (r)
		return r;
	memcpy(m->cookie_key, k, 16);
	m->have_cookie_key = true;
	return 0;
}

/* Which inode table an edit is for: the same records, a different flag. */
enum ino_table { INO_TABLE, INO_STRAY };

/*
 * The inode table (hard-linked inodes) and the stray table (orphans, loaded
 * at start and kept in memory): one inode blob per key, the key its ino.
 */
static int replay_ino_table(struct mds *m, enum ino_table which, int op, const char *key, const void *val,
			    uint32_t len)
{
	uint64_t ino = strtoull(key, NULL, 16);
	struct minode *in = xa_load(&m->inodes, ino);
	bool fresh = false;
	int r;

	if (op == EDIT_RM) {
		if (in && (which == INO_STRAY ? in->in_stray : in->in_table))
			minode_free(m, in);
		return 0;
	}
	if (op != EDIT_SET)
		return 0;
	if (!in) {
		in = minode_alloc(m, ino);
		if (!in)
			return -ENOMEM;
		fresh = true;
	}
	r = inode_blob_decode(val, len, in);
	if (!r)
		mdcache_inode_mem_sync(in);
	if (!r && in->a.ino != ino)
		r = -EBADMSG;
	if (!r && (in->a.quota_max_bytes || in->a.quota_max_files))
		m->quotas_seen = true;
	if (r) {
		if (fresh)
			minode_free(m, in);
		return r;
	}
	if (which == INO_STRAY) {
		in->in_stray = true;
		in->in_table = false;
		m->strays_unchecked = true;
	} else {
		in->in_table = true;
	}
	in->primary = NULL;
	return 0;
}

/* a follower's replay removed the primary name of @ino: look at it at the entry's end */
static void note_unlinked(struct mds *m, uint64_t ino)
{
	if (m->nreplay_unlinked == m->replay_unlinked_cap) {
		uint32_t cap = m->replay_unlinked_cap ? m->replay_unlinked_cap * 2 : 64;
		uint64_t *n = realloc(m->replay_unlinked, cap * sizeof(*n));

		if (!n)
			return;          /* kept until the takeover's sweep (mdcache_after_replay) */
		m->replay_unlinked = n;
		m->replay_unlinked_cap = cap;
	}
	m->replay_unlinked[m->nreplay_unlinked++] = ino;
}

void mdcache_replay_sweep(struct mds *m)
{
	for (uint32_t i = 0; i < m->nreplay_unlinked; i++) {
		struct minode *in;

		rcu_read_lock();
		in = xa_load(&m->inodes, m->replay_unlinked[i]);
		rcu_read_unlock();
		/* as mdcache_after_replay: no name left, not linked elsewhere, not an orphan */
		if (in && in->a.ino != MDSP_ROOT_INO && !in->primary && !in->in_table && !in->in_stray)
			minode_free(m, in);
	}
	m->nreplay_unlinked = 0;
	if (m->replay_unlinked_cap > 4096) {
		free(m->replay_unlinked);
		m->replay_unlinked = NULL;
		m->replay_unlinked_cap = 0;
	}
}

int mdcache_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2)
{
	uint64_t ino;
	struct mdir *d;
	struct mdentry *dn;
	bool frag;
	int r;

	if (parse_dir_oid(oid, &ino, &frag)) {
		/*
		 * Memory holds a directory as one set of names, whatever object
		 * each is stored in; replay reads every fragment of a directory
		 * it touches.  Emptying the head (CLEAR) and removing a
		 * fragment's object are a split moving the names (their sets in
		 * the new fragments follow in the same entry); removing the
		 * head is the directory going (its fragments go before it).
		 */
		if (op == EDIT_REMOVE && !frag) {
			rcu_read_lock();
			d = xa_load(&m->dirs, ino);
			rcu_read_unlock();
			if (d)
				mdcache_mdir_free_mem(m, d);
			return 0;
		}
		if (op == EDIT_REMOVE || op == EDIT_CLEAR)
			return 0;
		r = mdir_get(m, ino, &d);
		if (!r)
			r = mdir_load_all(m, d);
		if (r)
			return r;
		if (m->replay_stamp && d->last_jseq != UINT64_MAX)
			d->last_jseq = m->replay_stamp;
		if (op == EDIT_RM) {
			dn = mdir_lookup(d, key);
			if (dn && !dn->remote && m->replay_stamp)
				note_unlinked(m, dn->ino);
			if (dn)
				mdir_del(m, dn, NULL);
			return 0;
		}
		if (op != EDIT_SET)
			return 0;
		if (!strcmp(key, DIR_FRAGS_KEY))
			return mdcache_frags_replay(m, d, val, len);
		if (!strcmp(key, DIR_META_KEY)) {
			uint64_t res;

			r = mdcache_dir_meta_decode(val, len, &res);
			if (!r && res > d->cookie_reserved)
				d->cookie_reserved = res;
			if (!r && res > d->next_cookie)
				d->next_cookie = res;
			return r;
		}
		{
			struct dentry_val v;

			r = mdcache_dentry_value_decode(val, len, &v);
			if (!r)
				r = mdcache_dentry_install(m, d, key, &v);
			return r;
		}
	}
	if (!strcmp(oid, OID_TABLE))
		return replay_table(m, op, key, val, len);
	if (!strcmp(oid, OID_INOTABLE))
		return replay_ino_table(m, INO_TABLE, op, key, val, len);
	if (!strcmp(oid, OID_STRAY))
		return replay_ino_table(m, INO_STRAY, op, key, val, len);
	if (!strncmp(oid, "mds_anchor.", 11))
		return 0;
	if (!strcmp(oid, OID_PURGE))
		return m->cache_hooks->purge_replay_edit(m, op, key, val, len);
	if (!strcmp(oid, OID_BLOCKLIST))
		return m->cache_hooks->blocklist_replay_edit(m, op, key, val, len);
	if (!strcmp(oid, OID_SESSIONS) || !strncmp(oid, "mds_completed.", 14))
		return m->cache_hooks->session_replay_edit(m, op, oid, key, val, len, key2);
	dout(JOURNAL, 1, "replay: edit of unknown object %s ignored", oid);
	return 0;
}

void mdcache_after_replay(struct mds *m)
{
	uint64_t idx;
	struct minode *in;

	/* Inodes whose primary dentry went and that no later edit re-linked are
	 * gone (unlinked, or the loser of a rename over them). */
	rcu_read_lock();
	xa_for_each(&m->inodes, idx, in) {
		if (in->a.ino != MDSP_ROOT_INO && !in->primary && !in->in_table && !in->in_stray)
			minode_free(m, in);
	}
	rcu_read_unlock();
	m->next_ino = m->ino_reserved;
	dinfo(MDS, "replay done: %" PRIu64 " inodes, %" PRIu64 " directories in memory, next ino %" PRIx64,
	      m->ninodes_cached, m->ndirs_cached, m->next_ino);
}

/* ---- start-up and mkfs ---------------------------------------------------- */

static void root_init(struct mds *m, struct minode *root)
{
	uint64_t now = now_real_ns();
	struct mdsp_time t = { .sec = (int64_t)(now / 1000000000ull), .nsec = (uint32_t)(now % 1000000000ull) };

	root->a.ino = MDSP_ROOT_INO;
	root->a.generation = 1;
	root->a.mode = S_IFDIR | 0755;
	root->a.nlink = 2;
	root->a.atime = root->a.mtime = root->a.ctime = root->a.btime = t;
	root->a.change = 1;
	root->a.object_size = m->object_size;
}

int mdcache_mkfs(struct mds *m)
{
	struct store_op *op;
	struct mdsp_buf b;
	struct minode root;
	uint8_t v[8];
	void *val;
	size_t len;
	int r;

	r = store_omap_get(m->meta, OID_TABLE, "root", &val, &len);
	if (r == 0) {
		free(val);
		return -EEXIST;
	}
	memset(&root, 0, sizeof(root));
	root_init(m, &root);
	mdsp_buf_init(&b);
	inode_blob_encode(&b, &root);
	if (b.oom)
		return -ENOMEM;
	op = store_op_new();
	if (!op) {
		mdsp_buf_free(&b);
		return -ENOMEM;
	}
	le64_put(v, INO_FIRST);
	store_op_omap_set(op, "next_ino", v, 8);
	le64_put(v, 1);
	store_op_omap_set(op, "next_sid", v, 8);
	le64_put(v, 1);
	store_op_omap_set(op, "nfiles", v, 8);
	le64_put(v, m->max_file_size);
	store_op_omap_set(op, "max_file_size", v, 8);
	store_op_omap_set(op, "root", b.data, b.len);
	mdsp_buf_free(&b);
	return store_op_exec(m->meta, OID_TABLE, op);
}

/* Load the inode or the stray table; a damaged record costs that inode only. */
static int load_ino_table(struct mds *m, enum ino_table which)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	int r = 0;

	store_omap_iter_init(&it, m->meta, which == INO_STRAY ? OID_STRAY : OID_INOTABLE, NULL, 1024);
	while (!r && (kv = store_omap_iter_next(&it)) != NULL) {
		r = replay_ino_table(m, which, EDIT_SET, kv->key, kv->val, (uint32_t)kv->len);
		if (r == -EBADMSG) {
			derr(MDS, "%s table: damaged inode %s skipped", which == INO_STRAY ? "stray" : "inode",
			     kv->key);
			r = 0;
		}
	}
	return store_omap_iter_end(&it) ? it.err : r;
}


int mdcache_load(struct mds *m)
{
	struct store_kv *kvs = NULL;
	size_t n = 0, i;
	bool more = true;
	int r;
	bool have_root = false;

	m->root = minode_alloc(m, MDSP_ROOT_INO);
	if (!m->root)
		return -ENOMEM;
	r = store_omap_list(m->meta, OID_TABLE, NULL, NULL, 64, &kvs, &n, &more);
	if (r)
		return r == -ENOENT ? -ENODEV : r;
	for (i = 0; i < n && !r; i++) {
		if (!strcmp(kvs[i].key, "root"))
			have_root = true;
		r = replay_table(m, EDIT_SET, kvs[i].key, kvs[i].val, (uint32_t)kvs[i].len);
	}
	store_kv_free(kvs, n);
	if (r)
		return r;
	if (!have_root)
		return -ENODEV;
	m->next_ino = m->ino_reserved;
	/* the inode table: every hard-linked inode */
	r = load_ino_table(m, INO_TABLE);
	if (r)
		return r;
	/* the stray table: orphans, purged once nobody has them open */
	r = load_ino_table(m, INO_STRAY);
	if (r)
		return r;
	r = m->cache_hooks->purge_load(m);
	if (r)
		return r;
	r = m->cache_hooks->blocklist_load(m);
	if (r)
		return r;
	return m->cache_hooks->session_load(m);
}
