/*
 * client.c - libloligo-client's facade, the top layer of the library
 * (types_int.h has the map of the layers): the lifetime of a client, its
 * configuration, perf counters and admin commands, and the parts of
 * client.h that concern every frontend at once (callbacks, break hooks).
 *
 * lclient_create reads the [client] options and wires the layers together
 * (lc_data_register, lc_ns_register: what the lower layers call up to);
 * lclient_mount opens the object store (for file data, read and written
 * directly, DESIGN.md section 8), opens the MDS session through
 * mds_client.c within client_mount_timeout, resolves client_mountpoint and
 * starts the flusher thread.  Running an MDS request and folding its
 * trace into the caches is the cache core's (request.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "client/client_int.h"
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

/* perf groups: "client" for the first live client of the process (the usual
 * one), "client.N" for any other alive at the same time */
static _Atomic unsigned int client_seq, clients_live;

/* ---- perf counters ------------------------------------------------------- */

static uint64_t gauge_inodes(void *arg)
{
	return atomic_load(&((struct lclient *)arg)->ninodes);
}

static uint64_t gauge_mem_inodes(void *arg)
{
	return atomic_load(&((struct lclient *)arg)->mem[LC_MEM_INODE]);
}

static uint64_t gauge_mem_dentries(void *arg)
{
	return atomic_load(&((struct lclient *)arg)->mem[LC_MEM_DENTRY]);
}

static uint64_t gauge_mem_dirlists(void *arg)
{
	return atomic_load(&((struct lclient *)arg)->mem[LC_MEM_DIRLIST]);
}

static uint64_t gauge_mem_total(void *arg)
{
	return lc_mem_total(arg);
}

static uint64_t gauge_mem_limit(void *arg)
{
	(void)arg;
	return cfg_uint(CFG_client_cache_memory_limit);
}

static uint64_t gauge_dentries(void *arg)
{
	return atomic_load(&((struct lclient *)arg)->ndentries);
}

static uint64_t gauge_dirty(void *arg)
{
	return atomic_load(&((struct lclient *)arg)->oc_dirty);
}

static void perf_register(struct lclient *c)
{
	struct lc_perf *p = &c->perf;
	const char *g = c->perf_group;
	unsigned int seq = atomic_fetch_add(&client_seq, 1);

	if (atomic_fetch_add(&clients_live, 1) == 0)
		snprintf(c->perf_group, sizeof(c->perf_group), "client");
	else
		snprintf(c->perf_group, sizeof(c->perf_group), "client.%u", seq);
#define C(name) perf_register_counter(g, #name, &p->name)
	C(attr_hit);
	C(attr_miss);
	C(dentry_hit);
	C(dentry_miss);
	C(dentry_neg_hit);
	C(readdir_cached);
	C(readdir_fetch);
	C(readdir_shared);
	C(readdir_prefetched);
	C(xattr_cached);
	C(quota_refused);
	C(rd_bytes);
	C(wr_bytes);
	C(ra_hit);
	C(ra_wait);
	C(ra_miss);
	C(ra_bytes);
	C(ra_buf_reuse);
	C(ra_lent);
	C(wb_bytes);
	C(wb_ops);
	C(wb_throttle);
	C(wb_full_ops);
	C(close_waves);
	C(close_wb_files);
	C(size_reports);
	C(caps_grant);
	C(caps_revoke);
	C(caps_revoke_deferred);
	C(lease_revoke);
	C(cap_flushes);
	C(caps_released);
	C(meta_dropped);
	C(data_dropped);
	C(data_dropped_files);
	C(unmount_evicted);
	C(caps_grant_dropped);
	C(ino_evicted);
	C(ino_trim_walks);
	C(ino_trim_skipped);
	C(ino_trim_visited);
	C(dn_trim_walks);
	C(dn_trim_skipped);
	C(dn_lease_moved);
	C(index_ops);
	C(purge_files);
	C(purge_objects);
	C(purge_queued);
	C(async_creates);
	C(async_failed);
	C(async_sync);
	C(async_setattrs);
	C(async_unlinks);
	C(async_rmdirs);
	C(async_unlink_waits);
	C(async_order_waits);
	C(deleg_quiesce_waits);
	C(slow_ops);
#undef C
	perf_register_hist(g, "read_lat", &p->read_lat);
	perf_register_hist(g, "write_lat", &p->write_lat);
	perf_register_hist(g, "flush_lat", &p->flush_lat);
	perf_register_fn(g, "inodes", gauge_inodes, c);
	perf_register_fn(g, "dentries", gauge_dentries, c);
	/* what the caches hold in bytes, counted as allocated (client_cache_memory_limit) */
	perf_register_fn(g, "cache_bytes", gauge_mem_total, c);
	perf_register_fn(g, "cache_bytes_inodes", gauge_mem_inodes, c);
	perf_register_fn(g, "cache_bytes_dentries", gauge_mem_dentries, c);
	perf_register_fn(g, "cache_bytes_dirlists", gauge_mem_dirlists, c);
	perf_register_fn(g, "cache_memory_limit", gauge_mem_limit, c);
	perf_register_fn(g, "dirty_bytes", gauge_dirty, c);
	lc_locks_register_perf(c, g);
}

/* ---- lifetime --------------------------------------------------------------- */

static int client_alloc(struct lclient **out)
{
	struct lclient *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	int r;

	if (!c)
		return -ENOMEM;
	/* the layers above the cache core and the data path, before anything runs */
	lc_data_register(c);
	lc_ns_register(c);
	uint64_t os = cfg_uint(CFG_client_object_size);
	c->default_object_size = os && os <= (1u << 30) ? (uint32_t)os : LC_DEFAULT_OBJECT_SIZE;
	pthread_mutex_init(&c->dirty_lock, NULL);
	pthread_rwlock_init(&c->break_lock, NULL);
	pthread_mutex_init(&c->oc_lock, NULL);
	pthread_mutex_init(&c->work_lock, NULL);
	pthread_mutex_init(&c->fh_lock, NULL);
	pthread_mutex_init(&c->pools_lock, NULL);
	pthread_rwlock_init(&c->hooks_lock, NULL);
	pthread_mutex_init(&c->statfs_lock, NULL);
	pthread_mutex_init(&c->ra_pool_lock, NULL);
	pthread_mutex_init(&c->deleg_lock, NULL);
	pthread_mutex_init(&c->orphan_lock, NULL);
	pthread_mutex_init(&c->lru_lock, NULL);
	pthread_mutex_init(&c->itrim_lock, NULL);
	pthread_mutex_init(&c->rvt_lock, NULL);
	pthread_mutex_init(&c->evt_lock, NULL);
	c->async_dirops = cfg_bool(CFG_client_async_dirops);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->oc_cond, &ca);
	pthread_cond_init(&c->work_cond, &ca);
	for (int i = 0; i < LC_CAP_WORKERS; i++) {
		c->capq[i].c = c;
		c->capq[i].tail = &c->capq[i].head;
		pthread_cond_init(&c->capq[i].cond, &ca);
	}
	pthread_cond_init(&c->deferred_cond, &ca);
	pthread_cond_init(&c->rvt_cond, &ca);
	pthread_cond_init(&c->deleg_cond, &ca);
	pthread_condattr_destroy(&ca);
	lc_optrack_init(c);
	r = lc_icache_init(c);
	if (r == 0)
		r = lc_dcache_init(c);
	if (r == 0)
		r = lc_locks_init(c);
	if (r < 0) {
		lclient_destroy(c);
		return r;
	}
	perf_register(c);
	*out = c;
	return 0;
}

/* the data pool is open: do its files keep object indexes? */
static int data_pool_check(struct lclient *c)
{
	int r = store_file_pool_indexed(c->data);

	if (r < 0) {
		derr(CLIENT, "mount: cannot read data pool %s: %s", c->data_pool_name, strerror(-r));
		return r;
	}
	c->data_indexed = r == 1;
	if (!c->data_indexed)
		dinfo(CLIENT, "data pool %s has no object indexes (made before them): truncates and purges name "
		      "every object a file's size covers, up to max_file_size", c->data_pool_name);
	return 0;
}

int lclient_check_mds_addr(char *err, size_t errlen)
{
	char *list = cfg_strdup(CFG_client_mds_addr);
	int r;

	if (!list)
		return -ENOMEM;
	r = mdsc_addrs_parse(list, NULL, NULL, err, errlen);
	free(list);
	return r;
}

int lclient_check_keyring(char *err, size_t errlen)
{
	return mdsc_keyring_check(err, errlen);
}

int lclient_create(struct lclient **out)
{
	struct lclient *c;
	int r = client_alloc(&c);

	if (r < 0)
		return r;
	c->mds_addr = cfg_strdup(CFG_client_mds_addr);
	c->mountpoint = cfg_strdup(CFG_client_mountpoint);
	c->data_pool_name = cfg_strdup(CFG_store_data_pool);
	if (!c->data_pool_name || !c->data_pool_name[0]) {
		char fs[256];
		free(c->data_pool_name);
		cfg_str(CFG_fs_name, fs, sizeof(fs));
		if (asprintf(&c->data_pool_name, "%s_data", fs) < 0)
			c->data_pool_name = NULL;
	}
	if (!c->mds_addr || !c->mountpoint || !c->data_pool_name) {
		lclient_destroy(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

int lclient_create_local(struct store_pool *data, struct lclient **out)
{
	struct lclient *c;
	int r = client_alloc(&c);

	if (r < 0)
		return r;
	c->data = data;
	r = data_pool_check(c);
	if (r == 0)
		r = lc_purge_start(c);
	if (r == 0)
		r = lc_flusher_start(c);
	if (r == 0)
		r = lc_optrack_start(c);
	if (r < 0) {
		lc_flusher_stop(c);
		lc_purge_stop(c);
		c->data = NULL;
		lclient_destroy(c);
		return r;
	}
	*out = c;
	return 0;
}

void lclient_set_callbacks(struct lclient *c, const struct lc_callbacks *cb, void *arg)
{
	if (cb)
		c->cb = *cb;
	else
		memset(&c->cb, 0, sizeof(c->cb));
	c->cb_arg = arg;
}

void lclient_set_search_unchecked_ok(struct lclient *c, bool ok)
{
	c->search_unchecked_ok = ok;
}

void lclient_set_break_hook(struct lclient *c, int (*fn)(void *arg, uint64_t ino, bool write, bool wait),
			    void *arg)
{
	pthread_rwlock_wrlock(&c->break_lock);     /* waits for the calls in flight */
	c->break_fn = fn;
	c->break_arg = arg;
	pthread_rwlock_unlock(&c->break_lock);
}

static int break_for(struct lclient *c, uint64_t ino, bool write, bool wait)
{
	int r = 0;

	pthread_rwlock_rdlock(&c->break_lock);
	if (c->break_fn)
		r = c->break_fn(c->break_arg, ino, write, wait);
	pthread_rwlock_unlock(&c->break_lock);
	return r;
}

int lc_break_for_write(struct lclient *c, uint64_t ino, bool wait)
{
	return break_for(c, ino, true, wait);
}

int lc_break_for_read(struct lclient *c, uint64_t ino, bool wait)
{
	return break_for(c, ino, false, wait);
}

int lc_inode_opens(struct lc_inode *in)
{
	int n;

	pthread_mutex_lock(&in->lock);
	n = in->nopen;
	pthread_mutex_unlock(&in->lock);
	return n;
}

int lc_inode_writers(struct lc_inode *in)
{
	int n;

	pthread_mutex_lock(&in->lock);
	n = in->nwriters;
	pthread_mutex_unlock(&in->lock);
	return n;
}

void lc_notify_inode(struct lclient *c, struct lc_inode *in, off_t off, off_t len)
{
	if (in && c->cb.inval_inode)
		c->cb.inval_inode(c->cb_arg, in->ino, off, len);
}

void lc_notify_entry(struct lclient *c, struct lc_inode *dir, const char *name)
{
	if (dir && name && c->cb.inval_dentry)
		c->cb.inval_dentry(c->cb_arg, dir->ino, name);
}

/* caps (caps.c) and file locks (flock.c) both hear of a lost session */
static void client_session_event(void *arg, uint32_t op)
{
	/* a new session after a lost one (EVICTED also when a refused resume
	 * opened a new one at once): the lock file names it from now on */
	if (op == MDSP_SESSION_OPEN || op == MDSP_SESSION_EVICTED)
		lc_reclaim_opened(arg);
	lc_session_event(arg, op);
	if (op == MDSP_SESSION_EVICTED)
		lc_locks_session_lost(arg);
}

static const struct mdsc_ops client_mdsc_ops = {
	.handle_caps = lc_handle_caps,
	.session_event = client_session_event,
	.reconnect_caps = lc_reconnect_caps,
	.reconnect_locks = lc_reconnect_locks,
	.deleg_quiesce = lc_deleg_quiesce,
	.locks_refused = lc_locks_refused,
};

static void refused_log(const char *path, const char *at)
{
	derr(CLIENT, "mount: the MDS refused client_mountpoint %s at \"%s\" (EACCES): the key's caps mds do "
	     "not grant that path (it needs 'allow r[w] path=%s' or a path above it; 'loligo auth get NAME' "
	     "on the MDS host shows them): mount a directory they grant", path, at, path);
}

/*
 * Walk @path from the filesystem root with LOOKUPs.  A mount below the
 * root never asks for the root itself: the first LOOKUP names it by
 * number, so a key whose caps mds grant only that directory (and the names
 * on the way to it) can mount it.
 */
static int resolve_root(struct lclient *c, const char *path, struct lc_inode **out)
{
	struct mds_request *req;
	struct lc_inode *cur = NULL, *next;
	char *dup = strdup(path ? path : "/"), *save = NULL, *first;
	int r;

	if (!dup)
		return -ENOMEM;
	first = strtok_r(dup, "/", &save);
	while (first && !strcmp(first, "."))
		first = strtok_r(NULL, "/", &save);
	req = lc_req_new(c, first ? MDSP_OP_LOOKUP : MDSP_OP_GETATTR, MDSP_ROOT_INO, NULL);
	if (!req) {
		free(dup);
		return -ENOMEM;
	}
	if (first && !(req->args.name = strdup(first))) {
		mdsc_request_put(req);
		free(dup);
		return -ENOMEM;
	}
	r = lc_req_run(c, req, &cur);
	mdsc_request_put(req);
	if (r == -EACCES)
		refused_log(path ? path : "/", first ? first : "/");
	else if (r < 0 && first)
		derr(CLIENT, "mount: cannot resolve client_mountpoint %s at \"%s\": %s", path, first, strerror(-r));
	if (r < 0 || !cur) {
		free(dup);
		return r < 0 ? r : -EIO;
	}
	for (char *comp = strtok_r(NULL, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (strcmp(comp, ".") == 0)
			continue;
		r = lc_lookup(c, cur, comp, NULL, NULL, &next);
		if (r < 0) {
			if (r == -EACCES)
				refused_log(path, comp);
			else
				derr(CLIENT, "mount: cannot resolve client_mountpoint %s at \"%s\": %s", path, comp,
				     strerror(-r));
			lc_put(c, cur);
			free(dup);
			return r;
		}
		lc_put(c, cur);
		cur = next;
	}
	free(dup);
	if (!S_ISDIR(cur->mi.mode)) {
		derr(CLIENT, "mount: %s is not a directory", path);
		lc_put(c, cur);
		return -ENOTDIR;
	}
	*out = cur;
	return 0;
}

int lclient_set_mount_point(struct lclient *c, const char *where)
{
	char *d = strdup(where ? where : "");

	if (!d)
		return -ENOMEM;
	free(c->mounted_at);
	c->mounted_at = d;
	return 0;
}

/* Who we are, for the MDS's `session ls` (SESSION v4 metadata, as Ceph's client_metadata). */
static void set_session_meta(struct lclient *c, const char *host, const char *root_path)
{
	char pid[16], entity[128];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	cfg_str(CFG_client_auth_name, entity, sizeof(entity));
	mdsc_set_meta(c->mdsc, "hostname", host);
	mdsc_set_meta(c->mdsc, "pid", pid);
	mdsc_set_meta(c->mdsc, "version", LOLIGO_VERSION);
	mdsc_set_meta(c->mdsc, "entity", entity);
	mdsc_set_meta(c->mdsc, "root", root_path && *root_path ? root_path : "/");
	if (c->mounted_at && *c->mounted_at)
		mdsc_set_meta(c->mdsc, "mount_point", c->mounted_at);
}

static int mount_mds(struct lclient *c, const char *root_path);

int lclient_mount_shared(struct lclient *c, struct lclient *with, const char *root_path)
{
	int r;

	if (c->mounted || !with->mounted)
		return -EINVAL;
	c->store = with->store;
	c->data = with->data;
	c->store_borrowed = true;
	c->data_indexed = with->data_indexed;
	r = mount_mds(c, root_path);
	if (r < 0) {
		c->store = NULL;
		c->data = NULL;
		c->store_borrowed = false;
	}
	return r;
}

int lclient_mount(struct lclient *c, const char *root_path)
{
	struct store_config sc;
	bool local;
	int r;

	if (c->mounted)
		return -EBUSY;
	/* on the local backend, the data store the MDS and every other client open too */
	store_config_data_from_cfg(&sc);
	local = !*sc.backend || strcmp(sc.backend, "local") == 0;
	if (local && !*sc.local_path) {
		derr(CLIENT, "mount: no store for file data (set store_local_path or store_local_data_path)");
		return -EINVAL;
	}
	r = store_open(&sc, &c->store);
	if (r < 0) {
		derr(CLIENT, "mount: cannot open the %s object store%s%s: %s", local ? "local" : sc.backend,
		     local ? " at " : "", local ? sc.local_path : "", strerror(-r));
		return r;
	}
	r = store_pool_open(c->store, c->data_pool_name, NULL, &c->data);
	if (r == -ENOENT) {
		/* the MDS creates the pools at mkfs; a client may be first on a
		 * fresh store (the local backend: its own data store) */
		bool made = false;

		r = store_pool_create(c->store, c->data_pool_name);
		made = r == 0;
		if (r == 0 || r == -EEXIST)
			r = store_pool_open(c->store, c->data_pool_name, NULL, &c->data);
		if (r == 0 && made)
			r = store_file_pool_mark_indexed(c->data);
	}
	if (r < 0) {
		derr(CLIENT, "mount: cannot open data pool %s: %s", c->data_pool_name, strerror(-r));
		goto out_store;
	}
	r = data_pool_check(c);
	if (r < 0)
		goto out_pool;
	r = mount_mds(c, root_path);
	if (r == 0)
		return 0;
out_pool:
	store_pool_close(c->data);
	c->data = NULL;
out_store:
	store_close(c->store);
	c->store = NULL;
	return r;
}

/* The MDS half of a mount: session, root, flusher, purger. */
static int mount_mds(struct lclient *c, const char *root_path)
{
	char name[128], host[64];
	int r;

	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(name, sizeof(name), "client.%s.%d", host, (int)getpid());
	r = mdsc_create(c->mds_addr, name, &client_mdsc_ops, c, &c->mdsc);
	if (r < 0) {
		derr(CLIENT, "mount: no MDS client for %s: %s (the line above says why)", c->mds_addr,
		     strerror(-r));
		return r;
	}
	set_session_meta(c, host, root_path);
	if (c->reclaim_held && c->reclaim_sid)
		mdsc_set_reclaim(c->mdsc, c->reclaim_sid, c->reclaim_uuid);
	{
		/* what an eviction fences: this process' data-store instance */
		char addr[STORE_ADDR_MAX];

		if (store_instance_addr(c->store, addr, sizeof(addr)) == 0)
			mdsc_set_store_addr(c->mdsc, addr);
		else
			dinfo(CLIENT, "mount: the data store has no instance address: an eviction cannot fence "
			      "this client's data writes");
	}
	double tmo = lc_secs(CFG_client_mount_timeout);
	int tmo_ms = tmo <= 0 ? 10000 : (int)(tmo * 1000);
	r = mdsc_open_session(c->mdsc, tmo_ms);
	if (r < 0) {
		derr(CLIENT, "mount: no session with the MDS at %s within %d ms: %s", c->mds_addr, tmo_ms,
		     strerror(-r));
		if (r == -EPERM && c->reclaim_held && c->reclaim_sid)
			derr(CLIENT, "mount: %s names session %" PRIu64 " to reclaim, which the MDS refused (see the "
				     "reason above); remove the file to mount without reclaiming it", c->reclaim_path,
			     c->reclaim_sid);
		goto out_mdsc;
	}
	lc_reclaim_opened(c);
	r = resolve_root(c, root_path ? root_path : c->mountpoint, &c->root);
	if (r < 0)
		goto out_mdsc;
	r = lc_flusher_start(c);
	if (r < 0)
		goto out_root;
	r = lc_optrack_start(c);
	if (r < 0) {
		lc_flusher_stop(c);
		goto out_root;
	}
	/* resume the purges an earlier mount left unfinished (a mount sharing
	 * another's store, in tests, leaves that to the other's purger) */
	r = c->store_borrowed ? 0 : lc_purge_start(c);
	if (r < 0) {
		lc_optrack_stop(c);
		lc_flusher_stop(c);
		goto out_root;
	}
	if (c->asok)
		mdsc_register_asok(c->mdsc, c->asok);
	{
		/* the first statfs answer, for when the MDS cannot give one */
		struct statvfs sv;

		lc_statfs(c, c->root, &sv);
	}
	c->mounted = true;
	dinfo(CLIENT, "mounted %s (root ino %" PRIx64 ") from MDS %s, data pool %s",
	      root_path ? root_path : c->mountpoint, c->root->ino, mdsc_addr(c->mdsc), c->data_pool_name);
	return 0;

out_root:
	lc_put(c, c->root);
	c->root = NULL;
out_mdsc:
	mdsc_destroy(c->mdsc);
	c->mdsc = NULL;
	return r;
}

/*
 * An unmount just after an MDS restart, before the session is back, with
 * sizes and mtimes not sent yet (a close sends them in a CAPS FLUSH without
 * waiting, and without a session they stay dirty): wait for the session
 * (until @end: the unmount's client_unmount_timeout), so that the flush below
 * sends them.  The requests not SAFE yet are mdsc_destroy_by's: it waits for
 * them itself, through a reconnect too, until the same @end.  Nothing dirty:
 * no wait for an MDS that is gone.  Evicted: what is dirty is not ours to
 * send any more (dropped by lc_session_event; an fsync of it gets EIO): no
 * wait either (perf unmount_evicted).
 */
static void unmount_wait_session(struct lclient *c, uint64_t end)
{
	bool logged = false;

	if (!mdsc_is_open(c->mdsc) && lc_evicted(c, NULL, 0)) {
		/* counted: what tests see instead of how long the unmount took */
		perf_inc(&c->perf.unmount_evicted, 1);
		dinfo(CLIENT, "unmount: evicted: no wait for a session to send sizes and mtimes (dropped)");
		return;
	}
	while (!mdsc_is_open(c->mdsc) && !lc_evicted(c, NULL, 0) && now_mono_ns() < end) {
		struct cds_lfht_iter it;
		struct lc_inode *in;
		bool dirty = false;

		rcu_read_lock();
		LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
			pthread_mutex_lock(&in->lock);
			dirty = in->dirty_meta != 0;
			pthread_mutex_unlock(&in->lock);
			if (dirty)
				break;
		}
		rcu_read_unlock();
		if (!dirty)
			return;
		if (!logged) {
			dinfo(CLIENT, "unmount: waiting up to client_unmount_timeout for the MDS session, to send sizes and "
				      "mtimes not sent yet");
			logged = true;
		}
		usleep(10000);
	}
}

void lclient_shutdown_begin(struct lclient *c)
{
	uint64_t end = now_mono_ns() + lc_secs_ns(CFG_client_unmount_timeout), zero = 0;

	if (!c || !atomic_compare_exchange_strong(&c->unmount_by, &zero, end))
		return;
	dinfo(CLIENT, "shutting down: waits for the MDS end within client_unmount_timeout (%.1f s)",
	      (double)lc_secs_ns(CFG_client_unmount_timeout) / 1e9);
	if (c->mdsc)
		mdsc_shutdown_begin(c->mdsc, end);
}

void lclient_unmount(struct lclient *c)
{
	/* one bound for every wait below on the MDS (session, flush acks, SAFE
	 * replies): client_unmount_timeout in all, not per wait, counted from
	 * the shutdown's start (a SIGTERM that found requests waiting) */
	uint64_t end, now;
	bool had_session;

	if (!c)
		return;
	had_session = c->mdsc != NULL;
	lclient_shutdown_begin(c);
	end = atomic_load(&c->unmount_by);
	if (c->mdsc)
		unmount_wait_session(c, end);
	/* handles the frontend never released (FUSE: RELEASEs still queued
	 * when the session ended; the kernel has dropped them): flush and free */
	for (;;) {
		pthread_mutex_lock(&c->fh_lock);
		struct lc_fh *fh = c->open_fhs;
		pthread_mutex_unlock(&c->fh_lock);
		if (!fh)
			break;
		dout(CLIENT, 1, "unmount: releasing a handle of ino %" PRIu64 " still open", lc_ino(fh->in));
		lc_release(c, fh);
	}
	lc_flusher_stop(c);
	if (c->data) {
		int r = lc_flush_all(c, true);
		if (r < 0)
			derr(CLIENT, "unmount: writeback failed: %s", strerror(-r));
	}
	/* within one slice; the rest is resumed by the next mount */
	lc_purge_stop(c);
	if (c->mdsc) {
		/* sizes and mtimes in CAPS FLUSHes must be journaled first
		 * (without a session they cannot be) */
		now = now_mono_ns();
		if (lc_wait_flushes(c, mdsc_is_open(c->mdsc) && end > now ? end - now : 0) < 0)
			derr(CLIENT, "unmount: the MDS did not acknowledge every size/mtime flush within "
				     "client_unmount_timeout");
		/* waits for SAFE replies itself, until the same end: an unmount
		 * must not hang on an MDS that is gone (a plain mdsc_sync would,
		 * with client_request_timeout 0, forever) */
		lc_optrack_stop(c);   /* it reports to c->mdsc */
		mdsc_destroy_by(c->mdsc, end);
		c->mdsc = NULL;
	}
	/* the session is closed (or, with the MDS gone, left to its timeout); a
	 * mount that never opened one keeps the predecessor named in the file */
	lc_reclaim_release(c, had_session);
	lc_put(c, c->root);
	c->root = NULL;
	c->mounted = false;
}

void lclient_destroy(struct lclient *c)
{
	if (!c)
		return;
	lclient_unmount(c);
	if (c->perf_group[0]) {
		perf_unregister_group(c->perf_group);
		atomic_fetch_sub(&clients_live, 1);
	}
	lc_optrack_destroy(c);
	lc_dcache_destroy(c);
	lc_icache_destroy(c);
	lc_locks_destroy(c);
	/* ours also on a borrowed store (tests), which its owner closes after */
	for (size_t i = 0; i < c->npools; i++)
		store_pool_close(c->pools[i].p);
	if (c->store && !c->store_borrowed) {
		if (c->data)
			store_pool_close(c->data);
		store_close(c->store);
	}
	free(c->pools);
	pthread_mutex_destroy(&c->pools_lock);
	pthread_mutex_destroy(&c->dirty_lock);
	pthread_rwlock_destroy(&c->break_lock);
	pthread_mutex_destroy(&c->oc_lock);
	pthread_mutex_destroy(&c->work_lock);
	pthread_mutex_destroy(&c->fh_lock);
	pthread_rwlock_destroy(&c->hooks_lock);
	pthread_mutex_destroy(&c->statfs_lock);
	lc_ra_pool_trim(c, true);
	pthread_mutex_destroy(&c->ra_pool_lock);
	pthread_mutex_destroy(&c->deleg_lock);
	pthread_cond_destroy(&c->deleg_cond);
	pthread_mutex_destroy(&c->orphan_lock);
	pthread_mutex_destroy(&c->lru_lock);
	pthread_mutex_destroy(&c->itrim_lock);
	pthread_mutex_destroy(&c->rvt_lock);
	pthread_mutex_destroy(&c->evt_lock);
	free(c->orphan_q);
	pthread_cond_destroy(&c->oc_cond);
	pthread_cond_destroy(&c->work_cond);
	for (int i = 0; i < LC_CAP_WORKERS; i++)
		pthread_cond_destroy(&c->capq[i].cond);
	pthread_cond_destroy(&c->deferred_cond);
	pthread_cond_destroy(&c->rvt_cond);
	free(c->mds_addr);
	free(c->mounted_at);
	free(c->mountpoint);
	free(c->data_pool_name);
	free(c);
}

struct store_pool *lclient_data_pool(struct lclient *c)
{
	return c->data;
}

struct lc_inode *lc_root(struct lclient *c)
{
	if (!c->root)
		return NULL;
	lc_get(c->root);
	return c->root;
}

/*
 * The frontend's kernel caches follow the caps: long (client_caps_timeout)
 * while what they cache is covered, zero otherwise, so that nothing the
 * MDS could not revoke from us is cached anywhere.
 */
double lc_entry_timeout(struct lclient *c, struct lc_inode *in)
{
	bool cached = false;

	if (in) {
		lc_kernel_promise(in);
		pthread_mutex_lock(&in->lock);
		cached = lc_attrs_cached_locked(in);
		pthread_mutex_unlock(&in->lock);
	}
	return cached ? lc_secs(CFG_client_caps_timeout) : 0;
}

double lc_attr_timeout(struct lclient *c, struct lc_inode *in)
{
	bool cached = false;
	double t;

	if (in) {
		lc_kernel_promise(in);
		pthread_mutex_lock(&in->lock);
		/* not while st_blocks is an estimate (lc_blocks_in_flight_locked):
		 * the kernel asks again, and the flush's ack makes it exact */
		cached = lc_attrs_cached_locked(in) && !lc_blocks_in_flight_locked(in);
		pthread_mutex_unlock(&in->lock);
	}
	t = cached ? lc_secs(CFG_client_caps_timeout) : 0;
	if (in && t > 0) {
		uint64_t until = now_mono_ns() + (uint64_t)(t * 1e9), cur = atomic_load(&in->kattr_until);

		while (cur < until && !atomic_compare_exchange_weak(&in->kattr_until, &cur, until))
			;
	}
	return t;
}

bool lc_kernel_attrs_cached(struct lc_inode *in)
{
	return now_mono_ns() < atomic_load(&in->kattr_until);
}

uint64_t lc_kernel_promise_ns(struct lc_inode *in)
{
	return atomic_load(&in->kpromise_ns);
}

void lc_kernel_reply_begin(struct lc_inode *in)
{
	atomic_fetch_add(&in->kreplying, 1);
}

void lc_kernel_reply_end(struct lc_inode *in)
{
	atomic_fetch_sub(&in->kreplying, 1);
}

void lc_kernel_hand(struct lc_inode *in, int64_t n)
{
	atomic_fetch_add(&in->knlookup, n);
}

bool lc_kernel_knows(struct lc_inode *in)
{
	return atomic_load(&in->knlookup) > 0;
}

bool lc_kernel_replying(struct lc_inode *in)
{
	return atomic_load(&in->kreplying) > 0;
}

bool lc_fh_cacheable(struct lc_fh *fh)
{
	struct lc_inode *in = fh->in;
	bool ok;

	pthread_mutex_lock(&in->lock);
	ok = !in->c->mdsc || (in->caps & MDSP_CAP_FILE_CACHE);
	pthread_mutex_unlock(&in->lock);
	return ok;
}

enum lc_kcache lc_fh_kernel_cache(struct lc_fh *fh)
{
	struct lc_inode *in = fh->in;
	enum lc_kcache k = LC_KCACHE_NONE;
	struct lc_attr a;

	/* O_DIRECT: the kernel's cache stays out of this handle's way (an
	 * asynchronous direct write is not followed by an invalidation in the
	 * kernel, and buffered readers refill the pages meanwhile: the writer's
	 * replies drop the range themselves, lfuse's ll_write) */
	if (fh->flags & O_DIRECT) {
		fh->kdirect = true;
		return LC_KCACHE_NONE;
	}
	pthread_mutex_lock(&in->lock);
	if (in->c->mdsc && !(in->caps & MDSP_CAP_FILE_CACHE)) {
		/* another client may write it: the kernel caches nothing of
		 * it through this handle, and what other handles let it cache
		 * meanwhile is not covered by a cap */
		in->kc_valid = false;
		fh->kdirect = true;
		goto out;
	}
	/* the data generation first: a write racing with the attributes
	 * below makes the next open drop, never keep, what it cached */
	uint64_t gen = atomic_load(&in->data_gen);
	lc_inode_fill_attr_locked(in, &a);
	struct lc_kcache_key *kc = in->rare ? &in->rare->kc : NULL;
	if (in->kc_valid && kc->gen == gen && kc->change == a.change && kc->size == a.size &&
	    kc->mtime.tv_sec == a.mtime.tv_sec && kc->mtime.tv_nsec == a.mtime.tv_nsec) {
		k = LC_KCACHE_KEEP;
	} else {
		k = LC_KCACHE_DROP;
		struct lc_irare *r = lc_rare_locked(in);
		kc = r ? &r->kc : NULL;
		/* out of memory: the kernel drops what it has at every open */
		in->kc_valid = kc != NULL;
		if (kc) {
			kc->gen = gen;
			kc->change = a.change;
			kc->size = a.size;
			kc->mtime = a.mtime;
		}
	}
out:
	pthread_mutex_unlock(&in->lock);
	return k;
}

bool lc_fh_kernel_direct(const struct lc_fh *fh)
{
	return fh->kdirect;
}

/* ---- admin socket ------------------------------------------------------------ */

static int cmd_dump_cache(struct json_object *args, struct json_object **out, void *priv)
{
	struct lclient *c = priv;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "inodes", json_object_new_uint64(atomic_load(&c->ninodes)));
	json_object_object_add(o, "dentries", json_object_new_uint64(atomic_load(&c->ndentries)));
	json_object_object_add(o, "dirty_bytes", json_object_new_uint64(atomic_load(&c->oc_dirty)));
	json_object_object_add(o, "root", json_object_new_uint64(c->root ? c->root->ino : 0));
	json_object_object_add(o, "inode_list", lc_icache_dump(c));
	*out = o;
	return 0;
}

/* an error reply: {"error": @msg} */
static struct json_object *dump_err(const char *msg)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static int cmd_dump_inode(struct json_object *args, struct json_object **out, void *priv)
{
	struct lclient *c = priv;
	struct json_object *v;
	struct lc_inode *in;
	const char *s;
	char *end;
	uint64_t ino;

	if (!json_object_object_get_ex(args, "ino", &v) || !(s = json_object_get_string(v)) || !*s) {
		*out = dump_err("dump inode: give the inode number (ino=N, hex with 0x)");
		return -EINVAL;
	}
	errno = 0;
	ino = strtoull(s, &end, 0);
	if (errno || *end) {
		*out = dump_err("dump inode: the inode number is not a number");
		return -EINVAL;
	}
	if (!(in = lc_ino_to_inode(c, ino))) {
		*out = dump_err("dump inode: not in this client's cache");
		return -ENOENT;
	}
	*out = lc_inode_dump(c, in);
	if (S_ISDIR(in->mi.mode))
		lc_readdir_dump(in, *out);
	lc_put(c, in);
	return 0;
}

static int cmd_ops(struct json_object *args, struct json_object **out, void *priv)
{
	*out = lc_ops_json(priv);
	return 0;
}

static int cmd_sync(struct json_object *args, struct json_object **out, void *priv)
{
	int r = lc_sync_fs(priv);

	*out = json_object_new_object();
	json_object_object_add(*out, "result", json_object_new_int(r));
	return r;
}

static const struct asok_cmd client_cmds[] = {
	{ "dump cache", "", "the client's cached inodes (refs, caps, sizes, dirty state)", cmd_dump_cache },
	{ "dump inode", "ino:str", "one cached inode: its caps, attributes, and for a directory what answers lookups and "
				 "listings without the MDS (complete, generations, the kept listing, its cached names)",
	  cmd_dump_inode },
	{ "ops", "", "FUSE and NFS requests in flight: op, inode, age and what each waits for (an MDS reply, "
		     "a cap flush, another thread's writeback, room in the buffer, the store, a file lock...)", cmd_ops },
	{ "sync", "", "write back every dirty file and wait until every metadata change is journaled "
		      "(what syncfs(2) would do: FUSE cannot carry it)", cmd_sync },
};

int lclient_register_asok(struct lclient *c, struct asok *a)
{
	int r = asok_register(a, client_cmds, (int)(sizeof(client_cmds) / sizeof(client_cmds[0])), c);
	if (r < 0)
		return r;
	c->asok = a;
	if (c->mdsc)
		r = mdsc_register_asok(c->mdsc, a);
	return r;
}
