/*
 * local.c - the embedded object store ("local" backend).
 *
 * One directory holds everything:
 *
 *   data.mdb, lock.mdb   LMDB: pools, the object table, every omap, the
 *                        redo log ("intents"), the owners table, counters
 *   objects/<fid hex>    the bytes of one object incarnation (sparse file)
 *   store.lock           locks of the processes that have the store open
 *
 * Several processes may have one store open at once (the MDS, every
 * loligo-fuse, a benchmark): how they share it is local_share.c's top
 * comment.  This essay, and the files listed in local_int.h, are one
 * process' half: its worker (local_worker.c), batches (local_exec.c), file
 * effects (local_file.c) and checkpoints (local_ckpt.c); this file opens
 * and closes the store and its pools.  local_check.c refuses damaged
 * directories before LMDB maps them.  The on-disk format is in
 * local_int.h.
 *
 * An object's record in LMDB names its file id (fid), its logical size and
 * mtime.  A fid is never reused: removing an object and creating it again
 * gives a new file, so nothing of the old incarnation can leak into the new
 * one.  Objects that only ever have omap (directories) never get a file.
 *
 * Atomicity and durability: write-ahead redo records in LMDB.
 *
 *   All changes of one compound op go into the batch's LMDB transaction:
 *   the object record (new size, mtime), the omap changes, and - when the
 *   op touches file data - one "intent" record keyed by a sequence number
 *   that describes every file effect of the op (write off/len + the data,
 *   punch a range, truncate, unlink) and names its owner (the process).
 *   An op's own failures (its existence guards) are found by a pre-check
 *   before anything is written, so a failed op leaves nothing behind; a
 *   resource error (ENOSPC, EIO) halfway through an op aborts the whole
 *   batch, all of whose ops then fail with nothing applied.  The commit of
 *   the LMDB transaction is the commit point: it is synchronous (LMDB fsyncs
 *   its data and then its meta page), and only after it returns is the
 *   op's callback run.  Then the file effects are applied to the files
 *   through io_uring.  A later checkpoint fdatasync()s every file written
 *   since the previous one (and the objects/ directory when files were
 *   created or unlinked), and only then does the owners table say so, so
 *   that the intents it covers can be deleted, in a later transaction (by
 *   any process, once every owner has synced them: local_share.c).  A file
 *   unlinked before the checkpoint is not synced (its data is gone; the
 *   unlink intent stays until a directory sync covers it).  An fd is closed
 *   only once no SQE naming it (a write, a read, a checkpoint fdatasync) is
 *   in flight, so no sync or write can ever reach a closed fd or a later
 *   file that reused its number (struct lfile).  A failed sync stops the
 *   store (every later write fails with EIO until a reopen redoes the
 *   intents): after a writeback error the kernel may have dropped the dirty
 *   pages, so a retried sync would lie.
 *
 *   After a crash, the next process to take the effects lock (at the
 *   latest, the next store_open()) redoes the intents of owners that died,
 *   in sequence order, before anything else touches the files (see
 *   local_share.c).  Redoing is idempotent: every effect is a write of known
 *   bytes at an absolute offset, a punch, an absolute truncate or an unlink
 *   of a fid that is never reused, so applying a suffix of the history
 *   again over files that already have some of it gives the same bytes.
 *   Intents are only ever deleted as a prefix, so redo always starts from a
 *   durable state.  An op is therefore either wholly in LMDB (and its data
 *   is redone) or not at all.  The cost is that data is written twice (log
 *   + file), like a database WAL; the gain is a single sync point per batch.
 *
 * Group commit: one worker thread per process owns its LMDB write
 * transactions and its io_uring ring.  Submitters queue requests and poke
 * an eventfd; the worker takes everything queued (bounded: BATCH_MAX_*),
 * runs all of it in one write transaction and commits once, so ops that
 * complete in the same batch share one sync.  The sync is never skipped.
 * A batch that touches object files first takes the effects lock (shared
 * with other processes); the worker lets it go when idle or when another
 * process waits for it, once its own file work has drained.
 *
 * Ordering: the worker handles requests in submission order, so metadata
 * (and omap) changes of one object apply in order.  File effects go on a
 * per-file FIFO with at most one I/O in flight per file, so they apply in
 * order too, and a read is queued behind the writes submitted before it.
 * Reads, stats and omap reads that share a batch with writes see those
 * writes and complete after the batch's commit.  Across processes, the
 * effects lock orders file effects by commit (local_share.c).
 *
 * Memory is bounded: each queued or unfinished request is charged its
 * payload bytes against INFLIGHT_BUDGET; submitters (other than the worker
 * itself, i.e. callbacks) wait for room.  Open files are only those with
 * queued work or unsynced writes.
 *
 * LMDB keys are limited to 511 bytes, but object names and omap keys may be
 * 1024.  Long object names are keyed by a hash (the full name is in the
 * record and checked).  Long omap keys are stored as their first
 * OMAP_INLINE bytes plus a hash, with the full key in front of the value; a
 * run of such keys sharing the same first OMAP_INLINE bytes is contiguous
 * in LMDB and is sorted by full key when listed, so iteration order is
 * exactly bytewise key order, as in RADOS.
 *
 * Fencing: each open is an instance "local.<random hex>"; an MDS that
 * evicts the client writes a fence record for it ("fence.<addr>" in the
 * meta table, with its expiry) and every write batch of the instance reads
 * it inside the transaction that would commit the batch: while it holds,
 * the batch's write ops fail with ESHUTDOWN and nothing of them is
 * committed.  LMDB serialises write transactions, so no write of the
 * instance commits after the fence's transaction did.
 *
 * Locking: ls->lock protects the request queue, the budget and the flags
 * next to them.  Everything else (LMDB writes, the ring, the file table,
 * the effects lock) belongs to the worker thread.  pool_create/pool_open use
 * their own LMDB transactions from the caller's thread; LMDB serialises
 * writers itself.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <lmdb.h>
#include <sys/sdt.h>

#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "common/uring_wait.h"
#include "store/local_int.h"

#define RING_ENTRIES 256
#define DEFAULT_MAP_SIZE (64ull << 30)

/*
 * `loligo df`: the pool's objects in one read transaction (a snapshot; no
 * lock, the worker is not involved), their sizes, and the blocks of their
 * files (sparse: only what was written).
 */
#define POOL_STAT_MAX 1000000

static int local_pool_stat(struct store_pool *p, struct store_pool_stat *out)
{
	struct local_pool *lp = LP(p);
	struct local_store *ls = LS(p->st);
	unsigned char pfx[4];
	MDB_val k, v;
	MDB_cursor *cur;
	MDB_txn *txn;
	int r, rc;

	put_be32(pfx, lp->id);
	r = mdb_err(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
	if (r)
		return r;
	r = mdb_err(mdb_cursor_open(txn, ls->db_objs, &cur));
	if (r)
		goto out_abort;
	k.mv_size = sizeof(pfx);
	k.mv_data = pfx;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct objrec rec;
		const char *ns, *oid;
		size_t nl, ol;
		char name[17];
		struct stat st;

		if (k.mv_size < 4 || memcmp(k.mv_data, pfx, 4))
			break;
		if (local_obj_decode(&v, &rec, &ns, &nl, &oid, &ol))
			continue;
		if (nl != strlen(lp->ns) || memcmp(ns, lp->ns, nl))
			continue;	/* another namespace of the pool */
		if (out->objects == POOL_STAT_MAX) {
			out->partial = true;
			break;
		}
		out->objects++;
		out->bytes_stored += rec.size;
		if (rec.inl) {
			out->bytes_used += rec.size;   /* in LMDB's pages */
			continue;
		}
		local_fid_name(rec.fid, name);
		if (rec.fid && fstatat(ls->objfd, name, &st, 0) == 0)
			out->bytes_used += (uint64_t)st.st_blocks * 512;
	}
	if (rc && rc != MDB_NOTFOUND)
		r = mdb_err(rc);
	mdb_cursor_close(cur);
out_abort:
	mdb_txn_abort(txn);
	return r;
}

static int local_pool_create(struct store *st, const char *name)
{
	struct local_store *ls = LS(st);
	MDB_val k = { strlen(name), (void *)name }, v, mk = { 9, "next_pool" };
	unsigned char b[4];
	uint32_t id = 1;
	MDB_txn *txn;
	int r;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	r = mdb_get(txn, ls->db_pools, &k, &v);
	if (r == 0) {
		r = -EEXIST;
		goto out_abort;
	}
	if (r != MDB_NOTFOUND) {
		r = mdb_err(r);
		goto out_abort;
	}
	if (mdb_get(txn, ls->db_meta, &mk, &v) == 0 && v.mv_size == 4)
		id = get_le32(v.mv_data);
	put_le32(b, id);
	v.mv_size = 4;
	v.mv_data = b;
	r = mdb_err(mdb_put(txn, ls->db_pools, &k, &v, 0));
	if (r)
		goto out_abort;
	put_le32(b, id + 1);
	r = mdb_err(mdb_put(txn, ls->db_meta, &mk, &v, 0));
	if (r)
		goto out_abort;
	r = mdb_err(mdb_txn_commit(txn));
	if (r == 0)
		dout(STORE, 5, "local store %s: created pool %s (id %u)", ls->path, name, id);
	return r;
out_abort:
	mdb_txn_abort(txn);
	return r;
}

static int local_pool_open(struct store *st, const char *name, const char *nspace, struct store_pool **out)
{
	struct local_store *ls = LS(st);
	MDB_val k = { strlen(name), (void *)name }, v;
	struct local_pool *lp;
	MDB_txn *txn;
	uint32_t id;
	int r;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
	if (r)
		return r;
	r = mdb_get(txn, ls->db_pools, &k, &v);
	if (r == 0 && v.mv_size != 4)
		r = EIO;
	if (r == 0)
		id = get_le32(v.mv_data);
	mdb_txn_abort(txn);
	if (r)
		return mdb_err(r);
	lp = calloc(1, sizeof(*lp));
	if (!lp || !(lp->ns = strdup(nspace))) {
		free(lp);
		return -ENOMEM;
	}
	lp->ls = ls;
	lp->id = id;
	*out = &lp->base;
	return 0;
}

static void local_pool_close(struct store_pool *p)
{
	struct local_pool *lp = LP(p);
	free(lp->ns);
	free(lp);
}

/* ---- open, replay, close -------------------------------------------- */

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * Open the named databases; in a @fresh store write the format.  An
 * existing store must carry a format this build reads, and its objects/
 * directory (which only a fresh store, or one that never held an object,
 * may lack: then it is made).
 */
static int open_dbs(struct local_store *ls, bool fresh, bool create)
{
	MDB_val k = { 6, "format" }, v;
	unsigned char b[8];
	MDB_stat ost;
	MDB_txn *txn;
	int r;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	if ((r = mdb_err(mdb_dbi_open(txn, "meta", MDB_CREATE, &ls->db_meta))) ||
	    (r = mdb_err(mdb_dbi_open(txn, "pools", MDB_CREATE, &ls->db_pools))) ||
	    (r = mdb_err(mdb_dbi_open(txn, "objects", MDB_CREATE, &ls->db_objs))) ||
	    (r = mdb_err(mdb_dbi_open(txn, "omap", MDB_CREATE, &ls->db_omap))) ||
	    (r = mdb_err(mdb_dbi_open(txn, "intents", MDB_CREATE, &ls->db_intents))) ||
	    (r = mdb_err(mdb_dbi_open(txn, "owners", MDB_CREATE, &ls->db_owners))) ||
	    (r = mdb_err(mdb_dbi_open(txn, "inline", MDB_CREATE, &ls->db_inline))) ||
	    (r = mdb_err(mdb_stat(txn, ls->db_objs, &ost))))
		goto out_abort;
	r = mdb_get(txn, ls->db_meta, &k, &v);
	if (r == MDB_NOTFOUND && ost.ms_entries == 0 && (fresh || create)) {
		/* new, or left by a crash during its creation: nothing was ever stored */
		put_le32(b, FORMAT_VERSION);
		v.mv_size = 4;
		v.mv_data = b;
		if ((r = mdb_err(mdb_put(txn, ls->db_meta, &k, &v, 0))))
			goto out_abort;
		ls->format = FORMAT_VERSION;
	} else if (r == MDB_NOTFOUND && ost.ms_entries == 0) {
		store_open_refuse("local store %s: not initialised (create it first)", ls->path);
		r = -ENOENT;
		goto out_abort;
	} else if (r == MDB_NOTFOUND) {
		store_open_refuse("local store: %s/data.mdb holds objects but no store format: it is damaged; restore "
		     "the store directory from a backup (do not create a new filesystem over it)", ls->path);
		r = -EUCLEAN;
		goto out_abort;
	} else if (r) {
		r = mdb_err(r);
		goto out_abort;
	} else if (v.mv_size != 4 || get_le32(v.mv_data) < FORMAT_OLDEST || get_le32(v.mv_data) > FORMAT_VERSION) {
		store_open_refuse("local store: %s/data.mdb is in store format %u, this build reads formats %u to %u: it "
		     "was written by another loligo version; open it with that version (do not create a new "
		     "filesystem over it)", ls->path, v.mv_size == 4 ? get_le32(v.mv_data) : 0, FORMAT_OLDEST,
		     FORMAT_VERSION);
		r = -EUCLEAN;
		goto out_abort;
	} else {
		ls->format = get_le32(v.mv_data);
	}
	if (ls->objfd < 0) {
		if (ost.ms_entries && !fresh) {
			store_open_refuse("local store: %s/objects/ is missing, but data.mdb records %zu objects: their data "
			     "is gone (moved or deleted?); put objects/ back or restore the directory from a backup", ls->path, (size_t)ost.ms_entries);
			r = -EUCLEAN;
			goto out_abort;
		}
		if (mkdirat(ls->dirfd, "objects", 0755) < 0 && errno != EEXIST) {
			r = -errno;
			store_open_refuse("local store: %s/objects: %s", ls->path, strerror(errno));
			goto out_abort;
		}
		ls->objfd = openat(ls->dirfd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (ls->objfd < 0 || fsync(ls->dirfd) < 0) {
			r = -errno;
			store_open_refuse("local store: %s/objects: %s", ls->path, strerror(errno));
			goto out_abort;
		}
	}
	return mdb_err(mdb_txn_commit(txn));
out_abort:
	mdb_txn_abort(txn);
	return r;
}

static _Atomic unsigned perf_instances;

static void perf_register_local(struct local_store *ls)
{
	unsigned n = atomic_fetch_add(&perf_instances, 1);
	const char *g = ls->perf_group;

	if (n == 0)
		snprintf(ls->perf_group, sizeof(ls->perf_group), "store_local");
	else
		snprintf(ls->perf_group, sizeof(ls->perf_group), "store_local.%u", n + 1);
	perf_register_counter(g, "write_ops", &ls->pc_writes);
	perf_register_counter(g, "write_bytes", &ls->pc_write_bytes);
	perf_register_counter(g, "read_ops", &ls->pc_reads);
	perf_register_counter(g, "query_ops", &ls->pc_queries);
	perf_register_counter(g, "batches", &ls->pc_batches);
	perf_register_counter(g, "commits", &ls->pc_commits);
	perf_register_counter(g, "checkpoints", &ls->pc_ckpts);
	perf_register_hist(g, "commit_lat", &ls->h_commit);
	perf_register_hist(g, "write_lat", &ls->h_write);
	/* several processes on the store (local_share.c) */
	perf_register_counter(g, "effects_lock_waits", &ls->pc_effects_waits);
	perf_register_counter(g, "effects_lock_yields", &ls->pc_effects_yields);
	perf_register_counter(g, "owners_taken_over", &ls->pc_takeovers);
	perf_register_counter(g, "enospc", &ls->pc_enospc);
	perf_register_counter(g, "fenced_writes", &ls->pc_fenced);
	perf_register_hist(g, "effects_lock_wait_lat", &ls->h_effects_wait);
}

static void local_close(struct store *st);

static int local_open(const struct store_config *cfg, struct store **out)
{
	struct local_store *ls;
	bool fresh = false;
	int r;

	if (!cfg->local_path || !*cfg->local_path) {
		store_open_refuse("local store: no directory configured (store_local_path)");
		return -EINVAL;
	}
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return -ENOMEM;
	ls->dirfd = ls->objfd = ls->lockfd = ls->evfd = -1;
	ls->q_tail = &ls->q_head;
	ls->next_seq = 1;
	ls->my_lowest = ls->my_lowest_db = UINT64_MAX;
	ls->ckpt_landed_first = UINT64_MAX;
	ls->ev_ctx.kind = U_EVENT;
	pthread_mutex_init(&ls->lock, NULL);
	pthread_cond_init(&ls->space, NULL);
	ls->path = strdup(cfg->local_path);
	ls->nearfull_ratio = cfg->local_nearfull_ratio > 0 ? cfg->local_nearfull_ratio : 0.85;
	ls->full_ratio = cfg->local_full_ratio > 0 ? cfg->local_full_ratio : 0.95;
	ls->failsafe_ratio = cfg->local_failsafe_ratio > 0 ? cfg->local_failsafe_ratio : 0.97;
	if (ls->full_ratio < ls->nearfull_ratio)
		ls->full_ratio = ls->nearfull_ratio;
	if (ls->failsafe_ratio < ls->full_ratio)
		ls->failsafe_ratio = ls->full_ratio;
	ls->full_try = cfg->local_full_try;
	ls->inline_max = cfg->local_inline_max == STORE_LOCAL_INLINE_OFF ? 0 :
			 cfg->local_inline_max ? cfg->local_inline_max : STORE_LOCAL_INLINE_DEFAULT;
	{
		uint64_t nonce = 0;

		/* this open's instance address (what an eviction fences) */
		if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
			nonce = now_mono_ns() ^ ((uint64_t)getpid() << 32);
		snprintf(ls->addr, sizeof(ls->addr), "local.%016" PRIx64, nonce);
	}
	ls->ftab_mask = 63;
	ls->ftab = calloc(ls->ftab_mask + 1, sizeof(*ls->ftab));
	if (!ls->path || !ls->ftab) {
		r = -ENOMEM;
		goto out_fail;
	}

	if (cfg->create && (r = mkdir_p(ls->path))) {
		store_open_refuse("local store: cannot create %s: %s", ls->path, strerror(-r));
		goto out_fail;
	}
	ls->dirfd = open(ls->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ls->dirfd < 0) {
		r = -errno;
		store_open_refuse("local store: cannot open %s: %s", ls->path, strerror(errno));
		goto out_fail;
	}
	if ((r = local_share_open(ls)) || (r = local_check_dir(ls, cfg->create, &fresh)))
		goto out_fail;
	ls->objfd = openat(ls->dirfd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ls->objfd < 0 && errno != ENOENT) {
		r = -errno;
		derr(STORE, "local store: %s/objects: %s", ls->path, strerror(errno));
		goto out_fail;
	}
	if ((r = mdb_err(mdb_env_create(&ls->env))) ||
	    (r = mdb_err(mdb_env_set_maxdbs(ls->env, 8))) ||
	    (r = mdb_err(mdb_env_set_mapsize(ls->env, cfg->local_map_size ? cfg->local_map_size : DEFAULT_MAP_SIZE))) ||
	    (r = mdb_err(mdb_env_open(ls->env, ls->path, MDB_NOTLS, 0644)))) {
		store_open_refuse("local store %s: cannot open LMDB: %s", ls->path, strerror(-r));
		goto out_fail;
	}
	if ((r = open_dbs(ls, fresh, cfg->create)))
		goto out_fail;
	{
		/* reader slots of processes that died holding a read txn pin pages that could be reused */
		int stale = 0;
		mdb_reader_check(ls->env, &stale);
	}
	if (fresh && fsync(ls->dirfd) < 0) {
		r = -errno;
		goto out_fail;
	}
	if (ls->format == 2 && (r = local_upgrade_v2(ls)))
		goto out_fail;
	/* our owner id; then, holding the effects lock, redo what owners that died left pending */
	if ((r = local_share_owner(ls)) || (r = local_effects_acquire(ls)))
		goto out_fail;
	if (ls->format < FORMAT_VERSION)
		r = local_redo_all(ls);
	local_effects_release(ls);
	ls->effects_yielded = false;
	if (r)
		goto out_fail;

	ls->evfd = eventfd(0, EFD_CLOEXEC);
	if (ls->evfd < 0) {
		r = -errno;
		goto out_fail;
	}
	r = io_uring_queue_init(RING_ENTRIES, &ls->ring, 0);
	if (r) {
		derr(STORE, "local store %s: io_uring_queue_init: %s", ls->path, strerror(-r));
		goto out_fail;
	}
	ls->ring_ok = true;
	local_space_refresh(ls);
	ls->ckpt_last_ns = now_mono_ns();
	ls->ckpt_interval_ns = CKPT_INTERVAL_NS;
	{
		/* test hook: checkpoint more often (0: after every batch, if the last one is done) */
		const char *e = getenv("LOLIGO_STORE_LOCAL_CKPT_INTERVAL_US");
		if (e && *e)
			ls->ckpt_interval_ns = strtoull(e, NULL, 10) * 1000;
		/* test hook: hold the window between a commit (acknowledged) and its file effects open */
		e = getenv("LOLIGO_STORE_LOCAL_TEST_STALL_APPLY_MS");
		if (e && *e)
			ls->test_stall_apply_ns = strtoull(e, NULL, 10) * 1000000;
		/* test hook: the Nth file write after a commit fails (EIO) */
		e = getenv("LOLIGO_STORE_LOCAL_TEST_FAIL_APPLY");
		if (e && *e)
			ls->test_fail_apply = strtoul(e, NULL, 10);
	}
	{
		struct rlimit rl;
		rlim_t cap = 256;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			cap = rl.rlim_cur / 4;
		ls->max_fds = (unsigned)(cap < 16 ? 16 : cap > 4096 ? 4096 : cap);
	}
	r = -pthread_create(&ls->worker, NULL, local_worker_main, ls);
	if (r)
		goto out_fail;
	ls->worker_started = true;
	perf_register_local(ls);
	dout(STORE, 2, "local store %s opened", ls->path);
	*out = &ls->base;
	return 0;

out_fail:
	local_close(&ls->base);
	return r;
}

static void local_close(struct store *st)
{
	struct local_store *ls = LS(st);

	if (ls->perf_group[0])
		perf_unregister_group(ls->perf_group);
	if (ls->worker_started) {
		uint64_t one = 1;
		pthread_mutex_lock(&ls->lock);
		ls->stopping = true;
		pthread_mutex_unlock(&ls->lock);
		if (write(ls->evfd, &one, sizeof(one)) < 0)
			derr(STORE, "local store: eventfd write: %s", strerror(errno));
		pthread_join(ls->worker, NULL);
	}
	if (ls->ring_ok)
		io_uring_queue_exit(&ls->ring);
	if (ls->env)
		mdb_env_close(ls->env);
	for (size_t i = 0; ls->ftab && i <= ls->ftab_mask; i++) {
		struct lfile *f, *n;
		for (f = ls->ftab[i]; f; f = n) {
			n = f->hnext;
			if (f->fd >= 0)
				close(f->fd);
			free(f);
		}
	}
	free(ls->ftab);
	if (ls->evfd >= 0)
		close(ls->evfd);
	if (ls->objfd >= 0)
		close(ls->objfd);
	local_share_close(ls);   /* after LMDB: our liveness ends once nothing of ours can write */
	if (ls->dirfd >= 0)
		close(ls->dirfd);
	pthread_mutex_destroy(&ls->lock);
	pthread_cond_destroy(&ls->space);
	free(ls->path);
	free(ls);
}

const struct store_backend store_local_backend = {
	.name = "local",
	.can_allocate = true,
	.open = local_open,
	.close = local_close,
	.pool_create = local_pool_create,
	.pool_open = local_pool_open,
	.pool_close = local_pool_close,
	.op_submit = local_op_submit,
	.read_submit = local_read_submit,
	.stat = local_stat,
	.omap_get = local_omap_get,
	.omap_list = local_omap_list,
	.list_objects = local_list_objects,
	.space = local_space,
	.pool_stat = local_pool_stat,
	.instance_addr = local_instance_addr,
	.blocklist_add = local_blocklist_add,
	.blocklist_rm = local_blocklist_rm,
};
