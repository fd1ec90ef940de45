/*
 * instance.c - one MDS in a process: its struct with the locks, tables and
 * layers set up, the steps that make, load and replay a filesystem, and
 * the teardown.  main.c runs them for the daemon (between its store,
 * network and signal steps); the MDS core's unit suites
 * (tests/unit/test_mds_core.c) run them in-process over the in-memory
 * store, with no network.  Errors come back as -errno with a message for
 * the user in @err.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/auth.h"
#include "mds/blocklist.h"
#include "mds/flock.h"
#include "mds/instance.h"
#include "mds/journal.h"
#include "mds/net.h"
#include "mds/layers.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/purge.h"
#include "mds/session.h"

/* A struct mds with its locks, tables and layers set up, nothing opened.  NULL: out of memory. */
struct mds *mds_new(void)
{
	struct mds *m = calloc(1, sizeof(*m));
	pthread_condattr_t ca;

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->conns_lock, NULL);
	pthread_mutex_init(&m->tick_lock, NULL);
	pthread_mutex_init(&m->space_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->tick_cond, &ca);
	pthread_cond_init(&m->reconnect_cond, &ca);
	pthread_condattr_destroy(&ca);
	xa_init(&m->inodes);
	xa_init(&m->dirs);
	xa_init(&m->sessions);
	bufpool_init(&m->bigbufs, MDS_BIGBUF_MIN, MDS_BIGBUF_LIMIT);
	mds_layers_wire(m);
	locker_init(m);
	flock_init(m);
	m->listen_fd = -1;
	m->stop_pipe[0] = m->stop_pipe[1] = -1;
	m->epoch = now_real_ns();
	m->start_real_ns = now_real_ns();
	m->next_sid = 1;
	return m;
}

/* Undo mds_new() and mds_configure(). */
void mds_destroy(struct mds *m)
{
	rcu_barrier();
	net_free(m);
	xa_destroy(&m->inodes);
	xa_destroy(&m->dirs);
	xa_destroy(&m->sessions);
	bufpool_destroy(&m->bigbufs);
	free(m->fs_name);
	free(m->meta_pool_name);
	free(m->data_pool_name);
	free(m->store_path);
	if (m->keyring_path)
		auth_free(m);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->conns_lock);
	pthread_mutex_destroy(&m->tick_lock);
	pthread_mutex_destroy(&m->space_lock);
	pthread_cond_destroy(&m->tick_cond);
	pthread_cond_destroy(&m->reconnect_cond);
	free(m);
}

/* Sessions, caps, locks, the purge queue and the blocklist leave memory. */
void mds_free_state(struct mds *m)
{
	purge_free(m);
	pthread_mutex_lock(&m->lock);
	locker_free_locked(m);
	pthread_mutex_unlock(&m->lock);
	session_free_all(m);
	pthread_mutex_lock(&m->lock);
	flock_free_locked(m);
	pthread_mutex_unlock(&m->lock);
	blocklist_free(m);
}

void mds_close_store(struct mds *m)
{
	for (uint32_t i = 0; i < m->ndata_pools; i++) {
		if (m->data_pools[i].p)
			store_pool_close(m->data_pools[i].p);
		free(m->data_pools[i].name);
	}
	free(m->data_pools);
	m->data_pools = NULL;
	m->ndata_pools = 0;
	if (m->data)
		store_pool_close(m->data);
	if (m->meta)
		store_pool_close(m->meta);
	store_close(m->data_st);
	store_close(m->st);
}

int mds_mkfs(struct mds *m, char *err, size_t len)
{
	void *v;
	size_t vl;
	int r;

	if (store_omap_get(m->meta, OID_TABLE, "root", &v, &vl) == 0) {
		free(v);
		snprintf(err, len, "a filesystem already exists in pool %s; refusing to overwrite it",
			 m->meta_pool_name);
		return -EEXIST;
	}
	r = journal_mkfs(m);
	if (!r)
		r = mdcache_mkfs(m);
	/* every file of this filesystem keeps an object index */
	if (!r)
		r = store_file_pool_mark_indexed(m->data);
	if (r)
		snprintf(err, len, "mkfs failed: %s", strerror(-r));
	return r;
}

int mds_load(struct mds *m, char *err, size_t len)
{
	int r = mds_load_readonly(m, err, len);

	return r ? r : mds_load_finish(m, err, len);
}

int mds_load_finish(struct mds *m, char *err, size_t len)
{
	int r = mdcache_cookie_key_ensure(m);

	if (r)
		snprintf(err, len, "cannot write the filesystem's readdir cookie key: %s", strerror(-r));
	return r;
}

int mds_load_readonly(struct mds *m, char *err, size_t len)
{
	int r;

	pthread_mutex_lock(&m->lock);
	r = mdcache_load(m);
	pthread_mutex_unlock(&m->lock);
	if (r == -ENODEV) {
		snprintf(err, len, "no loligo filesystem in pool %s: run loligo-mds --mkfs first", m->meta_pool_name);
		return r;
	}
	if (r) {
		snprintf(err, len, "cannot load the filesystem tables: %s", strerror(-r));
		return r;
	}
	if (m->max_file_size == 0 || m->max_file_size > (uint64_t)INT64_MAX) {
		derr(MDS, "the filesystem's max_file_size %" PRIu64 " is out of range: using 2^63-1", m->max_file_size);
		m->max_file_size = INT64_MAX;
	}
	r = store_file_pool_indexed(m->data);
	if (r < 0) {
		snprintf(err, len, "cannot read the data pool %s: %s", m->data_pool_name, strerror(-r));
		return r;
	}
	m->data_indexed = r == 1;
	if (!m->data_indexed)
		dinfo(MDS, "data pool %s has no object indexes (made before them): purges name every object "
		      "a file's size covers, up to max_file_size", m->data_pool_name);
	return 0;
}

int mds_replay(struct mds *m, char *err, size_t len)
{
	return mds_replay_from(m, 0, err, len);
}

int mds_replay_from(struct mds *m, uint64_t applied, char *err, size_t len)
{
	int r = journal_replay_from(m, applied);

	if (r == -EUCLEAN && journal_damage_msg(m)) {
		snprintf(err, len, "%s", journal_damage_msg(m));
		return r;
	}
	if (r == -ESTALE) {
		snprintf(err, len, "the journal no longer holds what this standby-replay's cache lacks");
		return r;
	}
	if (r) {
		snprintf(err, len, "journal replay failed: %s", strerror(-r));
		return r;
	}
	pthread_mutex_lock(&m->lock);
	mdcache_after_replay(m);
	pthread_mutex_unlock(&m->lock);
	return 0;
}
