/*
 * client_int.h - private to client/: the structures behind client.h.
 *
 * Pieces and the files that own them:
 *   client.c     lifetime (create/mount/unmount), config, perf counters,
 *                the admin socket, MDS request helpers
 *   inode.c      the inode cache: a cds_lfht keyed by ino, refcounts, attrs
 *   dentry.c     the dentry cache: one cds_lfht keyed by (parent ino, name)
 *   caps.c       caps granted by the MDS, GRANT/REVOKE handling, cap work
 *   namei.c      namespace operations mapped to MDS requests
 *   readdir.c    READDIR paging and the per-directory batch cache
 *   objio.c      striping: file ranges -> data objects, parallel store I/O
 *   file.c       open handles, read with readahead, write, flush, fsync
 *   writeback.c  dirty extents, the client_oc_size bound, the flusher thread
 *   purge.c      the purge thread: data of files whose last link went,
 *                removed in slices off every other thread, resumed at mount
 *   intr.c       interruptible waits for the MDS (struct lc_intr, intr.h)
 *   flock.c      file locks: requests to the MDS, the locks held (re-asserted
 *                after an MDS restart), lost locks
 *
 * Lifetime of an inode: every pointer handed out carries a reference
 * (in->ref).  The cache itself holds none: an unreferenced inode stays
 * hashed (it still serves lookups) until the trimmer evicts it, which it
 * does with a CAS ref 0 -> LC_REF_DEAD so a concurrent lookup either gets
 * its reference first or sees the inode dead.  An inode unhashed while
 * referenced (stale generation, unmount) is freed by the lc_put that drops
 * the last reference.  Freeing always goes through call_rcu, so hash
 * lookups under rcu_read_lock() never touch freed memory.
 *
 * Lock order (top to bottom; never the other way):
 *   in->lock                (one inode; never two inode locks at once)
 *     c->dirty_lock         (the list of inodes with dirty data/metadata)
 *     c->oc_lock            (dirty byte accounting waiters)
 *     c->work_lock          (cap work queue)
 *   c->fh_lock              (open handles; nothing is taken under it)
 *   fh->ra_lock is taken without any inode lock held, and in->lock may be
 *   taken under it; it is never held while waiting for the store.
 * No lock is held across store I/O or an MDS request.
 */
#ifndef LOLIGO_CLIENT_CLIENT_INT_H
#define LOLIGO_CLIENT_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "client/mds_client.h"
#include "common/perf.h"
#include "common/xarray.h"
#include "common/time.h"
#include "common/rcu.h"
#include "mds_proto/proto.h"

struct store;
struct store_pool;
struct store_op;
struct store_aio;

/*
 * cds_lfht_for_each_entry() computes container_of(NULL) at the end of the
 * table, which UBSan rightly flags; this one tests the node first.
 * Context: rcu_read_lock() held.
 */
#define LC_LFHT_FOR_EACH(ht, iter, pos, member)                                          \
	for (cds_lfht_first(ht, iter);                                                   \
	     cds_lfht_iter_get_node(iter) &&                                              \
	     ((pos = caa_container_of(cds_lfht_iter_get_node(iter), __typeof__(*(pos)), member)), 1); \
	     cds_lfht_next(ht, iter))

#define LC_REF_DEAD (INT64_MIN / 2)
#define LC_DEFAULT_OBJECT_SIZE (4u << 20)

/* A range of dirty file data, inside one object.  Owned by its inode. */
struct lc_extent {
	struct lc_extent *next;    /* sorted by off, disjoint, not adjacent */
	uint64_t off;              /* file offset */
	size_t len, cap;
	char *buf;
};

/* writeback.c: the last dirty extent of an object (an index of lc_inode.dirty) */
struct lc_dtail {
	uint64_t obj;
	struct lc_extent *tail;
};

struct rd_batch;

/* An MDS request an inode depends on that was only UNSAFE when it returned
 * (its create, a size report, a rename into place...): fsync waits for it. */
struct lc_aunlink;

struct lc_unsafe {
	struct lc_unsafe *next;
	struct mds_request *req;     /* holds a reference */
};

struct lc_inode {
	struct cds_lfht_node hnode;  /* c->inodes, key ino */
	struct rcu_head rcu;
	struct lclient *c;
	uint64_t ino;
	_Atomic int64_t ref;         /* references handed out; LC_REF_DEAD once evicted */
	_Atomic uint64_t last_used;  /* mono ns of the last lookup: trimming order */
	_Atomic bool unhashed;       /* removed from c->inodes: last put frees */
	_Atomic uint64_t dgen;       /* dirs: bumping it invalidates every cached dentry below */
	_Atomic uint64_t ngen;       /* dirs: bumping it invalidates the negative dentries (Fs lost) */
	_Atomic bool kernel_negatives; /* dirs: the frontend's kernel was given negative entries */
	_Atomic uint64_t kpromise_ns; /* mono ns the frontend last asked for a kernel cache timeout of
				       * its attributes or of a name in it (lc_kernel_promise_ns) */
	_Atomic uint64_t data_gen;   /* bumped on every write/truncate: stale readahead check */
	_Atomic int kreplying;       /* attribute replies to the frontend's kernel in progress */
	_Atomic int64_t knlookup;    /* the frontend's kernel's lookup count of it (lc_kernel_hand) */
	_Atomic uint64_t kattr_until; /* mono ns: the latest end of an attribute timeout the
				       * frontend's kernel was given (lc_attr_timeout) */
	_Atomic bool orphaned;       /* the MDS says nlink 0: evicted as soon as unreferenced, so that
				      * the MDS can let the orphan go (lc_orphan_queue) */

	pthread_mutex_t lock;        /* protects everything below */
	pthread_cond_t cond;         /* flushing done, dirty bytes written */
	struct mdsp_inode mi;        /* attributes as last known (size: see wsize) */
	uint64_t attr_until;         /* mono ns: cached attrs usable until then (0 without caps) */
	uint32_t caps;               /* MDSP_CAP_* held (caps.c) */
	uint64_t cap_seq;            /* sequence of the last cap state applied (stale replies below it change nothing) */
	uint64_t acked_seq;          /* the sequence our cap messages carry: every grant and reply up to it taken
				      * in, and a revoke only once its ack is sent (caps.c send_ack), so that no
				      * update or flush acks a revoke still being processed */
	uint32_t wanted_sent;        /* file caps we last told the MDS we want */
	char *symlink;               /* symlinks: cached target (immutable) */
	/* no security.capability xattr, as the MDS answered while we held As
	 * at cap_seq fcaps_seq (namei.c lc_getxattr): true while As is still
	 * held at that sequence (another client's change of the xattr revokes
	 * As first; ours bumps fcaps_gen, before and after) */
	bool fcaps_none;
	uint64_t fcaps_seq;
	uint32_t fcaps_gen;
	struct rd_batch *rd;         /* dirs: last READDIR batch (while Fs is held) */
	/* dirs: one READDIR in flight per directory; those that come meanwhile
	 * for the same cookie take its batch (readdir.c) */
	bool rd_busy;
	uint64_t rd_busy_cookie, rd_busy_ngen;
	struct rd_batch *rd_last;    /* what the last fetch brought, cacheable or not */

	/* buffered writes (writeback.c) */
	struct lc_extent *dirty;     /* dirty extents, sorted */
	struct lc_extent *flushing;  /* extents being written (read overlay) */
	size_t dirty_bytes;          /* bytes in dirty (capacity, for the bound) */
	/* index of dirty for inserts (writeback.c dirty_start_locked): the last
	 * extent of every object that has some, sorted by object; rebuilt after
	 * a change of the list other than an insert (dtails_valid false) */
	struct lc_dtail *dtails;
	size_t ndtails, dtails_cap;
	bool dtails_valid;
	bool flushing_now;           /* one writeback per inode at a time */
	/* the end of the last buffered write, and whether it began where the
	 * one before ended: a sequential stream, whose tail object the
	 * flusher leaves to fill and whose next objects it indexes ahead */
	uint64_t wb_last_end;
	bool wb_seq;
	/* writeback errors, errseq_t-like (Linux's mapping->wb_err): every
	 * error a writeback records bumps the sequence (once someone saw the
	 * previous one); each open handle samples it and its fsync/close
	 * report what was recorded since (writeback.c lc_wb_err_check) */
	int wb_err;                  /* the latest error recorded (-errno) */
	uint32_t wb_eseq;            /* its sequence << 1 | seen (0: never an error) */
	bool wbq_queued;             /* on c->wbq (holds a reference); protected by c->work_lock */
	struct lc_inode *wbq_next;   /* c->wbq link; c->work_lock */
	uint64_t wsize;              /* size our writes not yet flushed give the file (while
				      * (dirty|flushing)_meta & SIZE); without Fs it does not
				      * include a size we cached, which another client may have cut */
	struct mdsp_time wmtime;     /* mtime of the last local write */
	uint32_t dirty_meta;         /* MDSP_DIRTY_SIZE|MTIME not yet sent to the MDS */
	uint32_t flushing_meta;      /* sent in a CAPS FLUSH/ACK, not yet acked (FLUSH_ACK) */
	uint64_t flush_tid;          /* the FLUSH that carries flushing_meta */
	uint64_t flush_acked;        /* highest flush tid the MDS acked */
	uint64_t flushing_size;      /* what it carries */
	bool meta_given_up;          /* Fs/Fw revoked after our flushes: the MDS's size and
				      * mtime have them, ours no longer override (until we write) */
	struct mdsp_time flushing_mtime;
	uint64_t wchange_base;       /* mi.change the local write count below counts from */
	uint32_t wchanges;           /* local writes since mi.change was wchange_base (lc_attr.change) */
	bool on_dirty_list;          /* holds a reference while set */
	struct lc_inode *dirty_next; /* c->dirty_list link; protected by c->dirty_lock */
	struct lc_cred wcred;        /* credentials of the last writer (size reports) */
	int nwriters;                /* open handles with write access */
	int nopen;                   /* open handles */
	bool purge_pending;          /* unlinked (nlink 0) while open: drop the data at last close */
	/* what the data objects hold, as this client changed it (blocks.c):
	 * since the flush in flight (ext_add/ext_rm, sent with flush_tid, not
	 * acked) and since then (dext_add/dext_rm, not sent); st_blocks is
	 * mi.blocks, the MDS's, with these on top */
	struct mdsp_extset ext_add, ext_rm, dext_add, dext_rm;
	uint64_t ext_base;            /* mi.blocks when ext_* went out: one that moved since counts them */
	/* st_blocks of a file whose blocks the MDS does not know
	 * (MDSP_BLOCKS_UNKNOWN; objio.c lc_obj_allocated): bytes the file's objects hold,
	 * valid while size, mtime and change are still alloc_key's */
	bool alloc_known;
	uint64_t alloc_bytes;
	uint64_t alloc_key[3];

	/* client.c: requests not yet SAFE that this inode depends on, newest
	 * first; pruned as they become SAFE (the inode is not evicted while
	 * one is pending) */
	struct lc_unsafe *unsafe;
	int unsafe_err;              /* one of them will never be SAFE: the next fsync says so */
	bool unsafe_untracked;       /* one could not be tracked (ENOMEM): fsync syncs everything */
	/* object numbers whose keys in the file's object index are known to be
	 * set (objio.c): the first write to any other object sets its key first.
	 * Its own (xarray) lock; not under in->lock. */
	struct xarray objs;
	/* the frontend's kernel page cache (lc_fh_kernel_cache): the file as it
	 * was (data_gen, change, size, mtime) when an open with Fc last let the
	 * kernel cache pages of it; kc_valid false: it may hold nothing of use */
	bool kc_valid;
	uint64_t kc_gen, kc_change, kc_size;
	struct timespec kc_mtime;
	bool capupd_queued;          /* on c->capupd (holds a reference); protected by c->work_lock */
	struct lc_revoke *rv_deferred; /* a revoke of ours a hook deferred, not finished; c->work_lock */
	struct lc_inode *capupd_next;
	/* dirs, asyncdir.c: every name is in the dentry cache (we made the
	 * directory under Dc and hold it since): a name not there does not
	 * exist.  Valid while dgen/ngen are the ones recorded and Dc|Fs held. */
	bool dir_complete;
	uint64_t complete_dgen, complete_ngen;
	int async_submitting;        /* dirs: async creates/unlinks between the Dc check and their send */
	/* dirs, asyncunlink.c: unlinks/rmdirs answered here whose first reply
	 * has not come (under in->lock); a Dc revoke waits for them (aunlink_rv) */
	struct lc_aunlink *aunlinks;
	struct lc_revoke *aunlink_rv;
	bool async_failed;           /* its asynchronous create failed at the MDS: it never existed */
	/* asyncdir.c lc_async_setattr: files and dirs we made under Dc in
	 * directory dc_parent (0: not, or a link/rename since), while it held
	 * Dc with epoch dc_epoch; dirs: dc_epoch is new each time Dc is
	 * gained (lc_caps_set_locked), so a file qualifies only while its
	 * directory kept Dc from its create on and nobody else could see it */
	uint64_t dc_parent;
	uint64_t dc_epoch;
	int async_setattrs;          /* setattrs answered here whose first reply is not in */
};

/* readahead buffer size classes: 128 KiB (LC_RA_POOL_MIN) to 4 MiB, powers of two */
#define LC_RA_POOL_MIN_SHIFT 17
#define LC_RA_POOL_CLASSES 6

struct lc_fh {
	struct lc_inode *in;         /* holds a reference */
	int flags;                   /* open flags */
	struct lc_cred cred;
	bool wrote;                  /* something written through this handle */
	bool kdirect;                /* the frontend's kernel caches nothing through it (lc_fh_kernel_cache NONE) */
	uint32_t wb_since;           /* in->wb_eseq as this handle last reported it; in->lock */
	/* readahead (file.c), protected by ra_lock */
	pthread_mutex_t ra_lock;
	pthread_cond_t ra_cond;      /* a chunk's read finished */
	uint64_t ra_last_end;        /* end of the previous read: sequential detection */
	uint64_t ra_next;            /* end of what was read ahead: the next chunk starts here */
	size_t ra_win;               /* window, grown by the sequential stream (0: random) */
	struct ra_chunk *ra_chunks;  /* in flight or read, sorted by offset, disjoint */
	struct lc_fh *open_prev, *open_next;   /* c->open_fhs, under c->fh_lock */
	/* flock.c: fcntl lock owners that set locks through this description
	 * (lc_fh_note_lock_owner); under fh->ra_lock (a leaf here) */
	struct { uint32_t ns; uint64_t owner; } *lock_owners;
	uint32_t nlock_owners, lock_owners_cap;
};

struct lc_perf {
	struct perf_counter attr_hit, attr_miss;
	struct perf_counter dentry_hit, dentry_miss, dentry_neg_hit;
	struct perf_counter readdir_cached, readdir_fetch, readdir_shared;
	struct perf_counter rd_bytes, wr_bytes;
	struct perf_counter ra_hit, ra_wait, ra_miss, ra_bytes, ra_buf_reuse;
	struct perf_counter wb_bytes, wb_ops, wb_throttle, wb_full_ops;
	struct perf_counter size_reports;
	struct perf_counter caps_grant, caps_revoke, caps_revoke_deferred, lease_revoke, cap_flushes, caps_released;
	struct perf_counter ino_evicted;
	struct perf_counter index_ops;
	struct perf_counter purge_files, purge_objects, purge_queued;
	struct perf_counter async_creates, async_failed, async_sync, async_setattrs;
	struct perf_counter async_unlinks, async_rmdirs, async_unlink_waits;
	struct perf_counter slow_ops;   /* operations blocked past client_op_warn_s now (a gauge) */
	struct hist read_lat, write_lat, flush_lat;
};

/* queued cap work for the flusher thread (revokes need store I/O) */
struct cap_work {
	struct cap_work *next;
	struct mdsp_caps caps;       /* caps.dname is owned */
	struct lc_revoke *rv;        /* set: the rest of a deferred revoke (caps.c), caps unused */
};

/*
 * A revoke a hook deferred (caps.c, client.h LC_REVOKE_DEFERRED): on
 * c->deferred until its tail - writeback, invalidation, ack - has run on the
 * flusher.  Fields under c->work_lock except in and m (immutable).
 */
struct lc_revoke {
	struct lc_revoke *next;      /* c->deferred */
	struct lc_inode *in;         /* holds a reference */
	struct mdsp_caps m;          /* the revoke (dname NULL) */
	uint64_t sess_gen;           /* c->sess_gen when it came: a lost session since means no ack */
	uint64_t since, deadline;    /* mono ns: deferred at; the client acks anyway at deadline */
	int pending;                 /* deferring hooks that have not completed (+1 while the hooks run) */
	int refs;                    /* 1 until the tail ran, +1 per deferring hook not completed */
	struct cap_work *tail;       /* queued to the flusher once pending is 0 (or it is forced); NULL then */
	struct cap_work *waiting;    /* later revokes of the same inode, queued again after the tail */
};

#define LC_DELEG_RANGES 4
#define LC_CAP_WORKERS 4

struct lclient {
	/* configuration, read at create (timeouts re-read at use) */
	char *mds_addr;
	char *mountpoint;
	char *mounted_at;            /* lclient_set_mount_point(): session metadata */
	char *data_pool_name;
	uint32_t default_object_size;

	struct store *store;
	struct store_pool *data;
	bool data_indexed;           /* every file in the data pool keeps an object index (set at mount) */
	struct lc_purger *purger;    /* purge.c; NULL until started */
	bool store_borrowed;         /* store/data belong to another lclient (tests) */
	_Atomic uint64_t flush_tid;  /* last CAPS FLUSH tid */
	struct mds_client *mdsc;
	bool mounted;
	struct lc_inode *root;       /* holds a reference */

	struct lc_callbacks cb;
	void *cb_arg;
	pthread_rwlock_t hooks_lock; /* protects hooks; held (read) while one runs */
	struct lc_revoke_hook *hooks;
	/* lc_break_for_write's hook (the NFS gateway's delegations); break_lock
	 * is held for reading around each call, for writing to change it */
	pthread_rwlock_t break_lock;
	int (*break_fn)(void *arg, uint64_t ino, bool write, bool wait);
	void *break_arg;
	struct asok *asok;           /* registered before mount: mdsc commands follow at mount */

	/* caches */
	struct cds_lfht *inodes;
	_Atomic uint64_t ninodes;
	struct cds_lfht *dentries;
	_Atomic uint64_t ndentries;
	unsigned long inodes_fit, dentries_fit; /* flusher only: lc_lfht_fit's last size */
	bool search_unchecked_ok;    /* lclient_set_search_unchecked_ok; set before serving */
	uint64_t itrim_ns, itrim_left;           /* flusher only: lc_icache_trim's last walk */

	/* writeback */
	pthread_mutex_t dirty_lock;  /* protects dirty_list */
	struct lc_inode *dirty_list;
	pthread_mutex_t oc_lock;     /* with oc_cond: writers waiting for the bound */
	pthread_cond_t oc_cond;
	_Atomic uint64_t oc_dirty;   /* buffered dirty bytes, all inodes */
	_Atomic uint64_t ra_total;   /* bytes in readahead chunks, all handles (bounded by client_oc_size too) */
	/* readahead buffers kept for the next chunks (file.c): a fresh 4 MiB
	 * buffer is 1024 page faults for the thread the store reads into it
	 * from (rados: the messenger's) */
	pthread_mutex_t ra_pool_lock;  /* protects the three below; a leaf lock */
	void *ra_pool[LC_RA_POOL_CLASSES];   /* free lists by size class, linked through each buffer's first word */
	size_t ra_pool_bytes;          /* held in ra_pool; at most 3 x client_readahead_max */
	uint64_t ra_pool_used;         /* mono ns of the last buffer taken or given back */
	_Atomic uint64_t full_checked; /* lc_data_full: mono ns of the last store_space() */
	atomic_bool full;            /* its answer */
	atomic_bool nearfull;        /* ... and whether it is past the nearfull ratio */
	_Atomic int wb_failing;      /* the transient error of the last writeback that failed; 0 once one succeeds */

	_Atomic uint64_t unmount_by; /* lclient_shutdown_begin: the unmount and every wait for the
				      * MDS end by then (mono ns; 0: not yet) */

	/* the flusher thread: periodic writeback, cap work, cache trimming */
	pthread_t flusher;
	bool flusher_running;
	pthread_mutex_t work_lock;   /* protects stop, kick, wbq, capupd, deferred, capq's lists */
	pthread_cond_t work_cond;    /* the flusher's */
	/* caps.c: cap messages (revokes, lease revokes, deferred revokes' tails)
	 * on LC_CAP_WORKERS threads of their own, an inode always on the same
	 * one (its revokes in order), so that a revoke waiting for the store or
	 * the kernel holds up neither other inodes' revokes nor the flusher's
	 * writeback, and the writeback never holds up a revoke another client
	 * waits for */
	struct lc_capq {
		struct lclient *c;
		pthread_t thread;
		pthread_cond_t cond;          /* with work_lock: work queued, or stop */
		struct cap_work *head, **tail;
	} capq[LC_CAP_WORKERS];
	bool capq_running, capq_stop;
	struct lc_inode *capupd;     /* inodes whose wanted caps changed (lc_caps_update_later) */
	struct lc_inode *wbq;        /* closed files to write back now, then their caps (lc_wb_start) */
	bool stop, kick;
	bool orphan_wake;            /* orphans queued (inode.c orphan_queue): a round without a kick */
	struct lc_revoke *deferred;  /* revokes hooks deferred, not finished (caps.c); work_lock */
	pthread_cond_t deferred_cond;  /* (CLOCK_MONOTONIC) one of them finished */
	_Atomic uint64_t sess_gen;   /* bumped when the session's caps are lost (lc_session_event) */

	/* the last statfs the MDS answered: lc_statfs answers from it while the
	 * MDS cannot (no session, or no answer within client_statfs_timeout) */
	pthread_mutex_t statfs_lock;  /* protects the two below; a leaf lock */
	struct statvfs statfs_last;
	bool statfs_valid;

	/* open handles, so an unmount can release those the frontend never
	 * released (FUSE: a RELEASE still queued when the session ends) */
	pthread_mutex_t fh_lock;     /* protects open_fhs; a leaf lock */
	struct lc_fh *open_fhs;

	struct lc_locks *locks;      /* flock.c: the file locks this client holds */

	/* asyncdir.c: inos the MDS delegated to the session (async creates) */
	bool async_dirops;           /* client_async_dirops, read at create */
	_Atomic uint64_t async_off_until; /* mono ns: a create failed for lack of space or a read-only MDS */
	pthread_mutex_t deleg_lock;  /* protects the four below; a leaf lock */
	struct { uint64_t start, len; } deleg[LC_DELEG_RANGES];
	uint32_t ndeleg;
	uint64_t deleg_chunk;        /* length of the last range granted */
	bool deleg_asked;            /* a request with MDSP_REQ_WANT_INOS is in flight */

	/* inode.c: orphans (nlink 0) whose last reference went, to evict and release
	 * at the flusher's next round (lc_orphan_queue) */
	pthread_mutex_t orphan_lock; /* protects the three below; a leaf lock */
	uint64_t *orphan_q;
	size_t norphan, orphan_cap;

	/* optrack.c: operations in flight and the watchdog that reports stalls */
	uint64_t op_cid;             /* this client's id among those of the process (set at create) */
	pthread_t wd_thread;
	bool wd_running;
	pthread_mutex_t wd_lock;     /* protects wd_stop; a leaf lock */
	pthread_cond_t wd_cond;      /* (CLOCK_MONOTONIC) */
	bool wd_stop;
	uint32_t slow_reported;      /* watchdog only: the slow count last sent to the MDS */
	uint64_t slow_reported_ns;

	struct lc_perf perf;
	char perf_group[64];
};

/** lc_cap_work_queue_locked - c->work_lock held: @w goes to its inode's cap worker. */
void lc_cap_work_queue_locked(struct lclient *c, struct cap_work *w);
/** lc_cap_workers_start / _stop - the cap worker threads (stop: joins; queued work stays). */
int lc_cap_workers_start(struct lclient *c);
void lc_cap_workers_stop(struct lclient *c);
/** lc_cap_work_run_queued - run what is queued in the caller (after the workers stopped).  Return: any. */
bool lc_cap_work_run_queued(struct lclient *c);
/** lc_orphans_evict - the flusher: evict the queued orphans nobody uses (their caps go back to the MDS). */
void lc_orphans_evict(struct lclient *c);

/* ---- optrack.c ------------------------------------------------------------ */
/** lc_optrack_init - at create, before anything runs. */
int lc_optrack_init(struct lclient *c);
/** lc_optrack_start - start the watchdog thread. */
int lc_optrack_start(struct lclient *c);
/** lc_optrack_stop - stop it (idempotent). */
void lc_optrack_stop(struct lclient *c);
/** lc_optrack_destroy - at destroy: stop, and free this client's slots for others. */
void lc_optrack_destroy(struct lclient *c);
/** lc_ops_json - `ops`: every operation in flight with its age and wait. */
struct json_object *lc_ops_json(struct lclient *c);

/* ---- asyncdir.c -------------------------------------------------------- */
/**
 * lc_async_create - answer a create (@mkdir: a mkdir) of @name in @dir
 * here and send it in the background, when the directory is ours alone
 * (Dc), the name is known not to exist and a delegated ino is left.
 * Return: 0 (as lc_create/lc_mkdir), -EAGAIN: take the synchronous path.
 */
int lc_async_create(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, int flags, bool mkdir,
		    const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh);
/** lc_deleg_want_flag - MDSP_REQ_WANT_INOS when a create should ask for more inos (then it is asked). */
uint32_t lc_deleg_want_flag(struct lclient *c);
/** lc_deleg_reply - the reply of a create that carried MDSP_REQ_WANT_INOS: keep what it delegated. */
void lc_deleg_reply(struct lclient *c, const struct mds_request *req);
/** lc_deleg_reset - forget the delegated inos (a reconnect: the MDS may have lost their grant). */
void lc_deleg_reset(struct lclient *c);
/**
 * lc_async_setattr - answer a SETATTR (@mask MDSP_SETATTR_*, the values in
 * @set) of @in ourselves when we made @in under Dc, its directory still
 * holds that Dc and no other link was made: checked by the MDS's rules
 * (mdsp_setattr_check), applied to the cache, sent in the background
 * behind the create and tracked until SAFE (fsync waits for it; a refusal
 * at the MDS is logged, counted in async_failed and reported by the next
 * fsync).  Mode, owner and times only.
 * Return: 0 (answered; the cache holds the result), the MDS's error for a
 * change it would refuse, or -EAGAIN: take the synchronous path.
 * Locking: none held; takes in->lock and the directory's lock in turn.
 */
int lc_async_setattr(struct lclient *c, struct lc_inode *in, uint32_t mask, const struct mdsp_inode *set,
		     const struct lc_cred *cr);
/** lc_async_forget - @ino gets (or may get) another name: its setattrs go to the MDS from now on. */
void lc_async_forget(struct lclient *c, uint64_t ino);
/**
 * lc_caps_set_locked - in->lock held: @in's caps become @caps; a directory
 * that gains Dc starts a new Dc epoch (lc_async_setattr).
 */
void lc_caps_set_locked(struct lc_inode *in, uint32_t caps);

/** lc_async_submit_begin_locked - dir->lock held: an async operation of @dir passed its Dc check. */
void lc_async_submit_begin_locked(struct lc_inode *dir);
/** lc_async_submit_end - ... and has been sent (takes dir->lock). */
void lc_async_submit_end(struct lc_inode *dir);
/** lc_async_submit_wait_locked - dir->lock held (released while waiting): every one that passed it is sent. */
void lc_async_submit_wait_locked(struct lc_inode *dir);
/** lc_dir_complete_locked - dir->lock held: every name of @dir is in the dentry cache. */
bool lc_dir_complete_locked(struct lc_inode *dir);
/** lc_dir_set_complete_locked - dir->lock held: @dir is empty and ours (mkdir under Dc). */
void lc_dir_set_complete_locked(struct lc_inode *dir);
/** lc_dir_not_complete - a name of directory @dir_ino left the dentry cache while it exists. */
void lc_dir_not_complete(struct lclient *c, uint64_t dir_ino);
/* ---- asyncunlink.c ------------------------------------------------------ */
/**
 * lc_async_remove - answer an unlink (@rmdir: an rmdir) of @name in @dir
 * here and send it in the background, when this client holds Dc on @dir,
 * knows the name and its target, and the target is a file of one link (or
 * a directory known empty).  Return 0 (answered), -EAGAIN (take the
 * synchronous path) or -errno.  No lock held.
 */
int lc_async_remove(struct lclient *c, struct lc_inode *dir, const char *name, bool rmdir, const struct lc_cred *cr);
/**
 * lc_async_unlink_wait - wait until the asynchronous unlinks of @name in
 * @dir (@name NULL: of every name) have their first reply: an operation
 * the MDS must see after them (a create of the name, an rmdir of @dir, a
 * lookup or listing at the MDS) goes out only then.  Cheap when none is
 * pending.  No lock held.
 */
void lc_async_unlink_wait(struct lclient *c, struct lc_inode *dir, const char *name);
/** lc_async_unlink_wait_ino - lc_async_unlink_wait for every name of directory @ino, if cached. */
void lc_async_unlink_wait_ino(struct lclient *c, uint64_t ino);
/**
 * lc_async_unlink_defer - a revoke of Dc on @dir: if unlinks answered here
 * are still unanswered by the MDS, keep one pending count of @rv (taken by
 * the caller) and give it back (lc_revoke_complete) once they all are.
 * Return false when nothing is pending (the caller gives it back).
 */
bool lc_async_unlink_defer(struct lclient *c, struct lc_inode *dir, struct lc_revoke *rv);
/** lc_async_unlink_drop - @dir is being freed: forget what is pending. */
void lc_async_unlink_drop(struct lc_inode *dir);

/** lc_track_unsafe - @in depends on @req until it is SAFE (fsync waits for it). */
void lc_track_unsafe(struct lc_inode *in, struct mds_request *req);

/* ---- client.c ---------------------------------------------------------- */
void lc_cred_to_caller(const struct lc_cred *cr, struct mdsp_caller *caller);
/** lc_req_new - a request for @op on @ino as @cr (NULL cred: root). */
struct mds_request *lc_req_new(struct lclient *c, uint32_t op, uint64_t ino, const struct lc_cred *cr);
/**
 * lc_req_run - send @req, wait for its first reply, apply its trace (dir and
 * target inodes, caps) to the cache.  If @target is non-NULL and the reply
 * has a target, *@target gets a new reference to its inode.
 */
int lc_req_run(struct lclient *c, struct mds_request *req, struct lc_inode **target);
/**
 * lc_wait_unsafe - wait until every MDS request @in depends on is SAFE
 * (fsync, O_SYNC writes).  Return: 0, -EIO if the MDS lost one of them
 * (reported once), -ETIMEDOUT (client_request_timeout; they stay tracked).
 * No lock held.
 */
int lc_wait_unsafe(struct lclient *c, struct lc_inode *in);
/** lc_unsafe_prune_locked - in->lock held: drop what is SAFE; true if nothing is pending. */
bool lc_unsafe_prune_locked(struct lc_inode *in);
/** lc_unsafe_drop - free @in's list (the inode is being freed). */
void lc_unsafe_drop(struct lc_inode *in);
double lc_secs(int id);
uint64_t lc_secs_ns(int id);

/* ---- inode.c ------------------------------------------------------------- */
int lc_icache_init(struct lclient *c);
/** lc_icache_destroy - free every inode (no concurrent users left). */
void lc_icache_destroy(struct lclient *c);
/**
 * lc_inode_update - insert or refresh the inode described by @mi (an MDS
 * reply), grant @caps with @cap_seq (0: none).  Returns a new reference,
 * or NULL on allocation failure.
 */
struct lc_inode *lc_inode_update(struct lclient *c, const struct mdsp_inode *mi, uint32_t caps,
				 uint64_t cap_seq);
/** lc_inode_refresh - apply @mi (from the MDS) to a cached inode. */
void lc_inode_refresh(struct lc_inode *in, const struct mdsp_inode *mi);
/**
 * lc_inode_note_write_locked - in->lock held: a write (buffered or not)
 * changed the data, so lc_attr.change must move now, before the MDS hears
 * of it.  lc_attr.change is mi.change << LC_CHANGE_SHIFT plus the writes
 * since mi.change last moved: it grows with every write, and never goes
 * back when the MDS's change moves on (by at least one) and the local
 * count starts over.
 */
#define LC_CHANGE_SHIFT 20
void lc_inode_note_write_locked(struct lc_inode *in);
/** lc_inode_fill_attr_locked - in->lock held: @attr from the inode. */
void lc_inode_fill_attr_locked(const struct lc_inode *in, struct lc_attr *attr);
void lc_inode_fill_attr(struct lc_inode *in, struct lc_attr *attr);
/** lc_inode_attr_valid_locked - in->lock held: cached attributes may be used. */
bool lc_inode_attr_valid_locked(const struct lc_inode *in, uint64_t now);
void lc_inode_invalidate(struct lc_inode *in);
/** lc_inode_unhash - drop @in from the cache; it is freed with its last reference. */
void lc_inode_unhash(struct lclient *c, struct lc_inode *in);
uint32_t lc_inode_object_size(struct lc_inode *in);
uint64_t lc_inode_size(struct lc_inode *in);
/** lc_icache_trim - evict unreferenced clean inodes past client_cache_size. */
void lc_icache_trim(struct lclient *c);
/** lc_lfht_fit - the flusher: size @ht (one of ours) to @count entries; *@fit is its size as we set it last. */
void lc_lfht_fit(struct cds_lfht *ht, unsigned long *fit, uint64_t count);
int lc_perm_check(const struct lc_attr *a, int mask, const struct lc_cred *cr);
struct json_object *lc_icache_dump(struct lclient *c);
void lc_attr_from_mdsp(const struct mdsp_inode *mi, struct lc_attr *a);

/* ---- dentry.c ------------------------------------------------------------ */
int lc_dcache_init(struct lclient *c);
void lc_dcache_destroy(struct lclient *c);
/**
 * lc_dcache_lookup - cached dentry @name in @dir: 1 with *@ino (0 = known
 * not to exist), or 0 if not cached / expired.
 */
int lc_dcache_lookup(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t *ino);
/**
 * lc_dcache_add - @name in @dir is @ino (0: it does not exist).  A name is
 * only cached under a lease (lc_dcache_add_lease); this one keeps a leased
 * entry that says the same, drops any other, and caches a negative entry
 * while @dir holds Fs (which covers names known not to exist).
 */
void lc_dcache_add(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino);
/** lc_dcache_add_lease - cache @name -> @ino under the lease with sequence @seq. */
void lc_dcache_add_lease(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, uint64_t seq);
/** lc_dcache_leased - @name in @dir is cached under a lease (a long kernel entry timeout is safe). */
bool lc_dcache_leased(struct lclient *c, struct lc_inode *dir, const char *name);
/** lc_dcache_revoke_lease - the MDS revokes the lease on @name in @dir_ino: forget it (and tell the frontend). */
void lc_dcache_revoke_lease(struct lclient *c, uint64_t dir_ino, const char *name);
/** lc_dcache_drop_all - the session's leases are gone: forget every name (and tell the frontend). */
void lc_dcache_drop_all(struct lclient *c);
/** lc_dcache_negatives_gone - @dir lost Fs: its negative entries are not valid any more (ours and the kernel's). */
void lc_dcache_negatives_gone(struct lclient *c, struct lc_inode *dir);
/**
 * lc_dcache_reconnect_leases - append the leases we hold to the RECONNECT
 * array *@v (*@n used of @cap); may grow it.  Return 0 or -ENOMEM (then
 * what was collected stays).
 */
int lc_dcache_reconnect_leases(struct lclient *c, struct mdsp_cap_reconnect **v, uint32_t *n, size_t cap);
void lc_dcache_remove(struct lclient *c, uint64_t dir_ino, const char *name);
/** lc_dcache_invalidate_dir - forget every cached dentry of @dir (O(1)). */
void lc_dcache_invalidate_dir(struct lc_inode *dir);
void lc_dcache_trim(struct lclient *c);
/** lc_dcache_revoke_dir - drop @dir's names and report each through lc_callbacks.inval_dentry. */
void lc_dcache_revoke_dir(struct lclient *c, struct lc_inode *dir);

/* ---- caps.c -------------------------------------------------------------- */
/**
 * lc_caps_apply_locked - in->lock held: the caps of a reply or grant with
 * sequence @seq are the inode's caps now, unless a newer state was applied.
 * Attributes stay cached (attr_until) only while they are all covered.
 */
void lc_caps_apply_locked(struct lc_inode *in, uint32_t caps, uint64_t seq);
/** lc_attrs_cached_locked - in->lock held: the caps cover every attribute. */
bool lc_attrs_cached_locked(const struct lc_inode *in);
void lc_handle_caps(void *arg, const struct mdsp_caps *caps);
void lc_session_event(void *arg, uint32_t op);
int lc_reconnect_caps(void *arg, struct mdsp_cap_reconnect **caps, uint32_t *ncaps);
/** lc_caps_process - the flusher thread runs queued revokes. */
void lc_caps_process(struct lclient *c, struct cap_work *w);
/** lc_revoke_expire - the flusher's tick: deferred revokes past their deadline are acked anyway. */
void lc_revoke_expire(struct lclient *c);
/**
 * lc_revoke_drain - unmount: wait for the deferred revokes to finish (up to
 * their deadlines; the flusher must still run), then complete the rest.
 */
void lc_revoke_drain(struct lclient *c);
/** lc_caps_wanted_locked - in->lock held: the file caps the open handles want. */
uint32_t lc_caps_wanted_locked(const struct lc_inode *in);
/**
 * lc_caps_update - tell the MDS what @in's open handles want now and give
 * up what nothing needs (Fw/Fb once the last writer closed); carries dirty
 * size/mtime as a FLUSH if there are any.  No lock held.
 */
void lc_caps_update(struct lclient *c, struct lc_inode *in);
/**
 * lc_caps_update_later - lc_caps_update from the flusher thread, soon (its
 * next round, within 250 ms): a close with nothing dirty, so that a storm
 * of create/close does not cost the MDS a message per close right away.
 */
void lc_caps_update_later(struct lclient *c, struct lc_inode *in);
/**
 * lc_caps_update_pending - send @ino's queued cap update now: before we
 * remove a name, the MDS must know we closed its file (or it keeps it as an
 * orphan for us).
 */
void lc_caps_update_pending(struct lclient *c, uint64_t ino);
/**
 * lc_cap_flush - send @in's dirty size/mtime to the MDS in a CAPS FLUSH
 * (never blocks on the MDS).  *@tid gets the flush to wait for (0: none).
 * Return: 0, or -ENOTCONN when no session is open (they stay dirty).
 */
int lc_cap_flush(struct lclient *c, struct lc_inode *in, uint64_t *tid);
/**
 * lc_cap_flush_sync - flush @in's size/mtime and wait until journaled
 * (waiting for the session if need be).  -ETIMEDOUT after
 * client_request_timeout (if set), -EINTR when the caller's lc_intr fires;
 * what is not acked stays dirty and is sent again.
 */
int lc_cap_flush_sync(struct lclient *c, struct lc_inode *in);
/** lc_cap_flush_wait - wait until the flush @tid of @in is journaled at the MDS (bounded as lc_cap_flush_sync). */
int lc_cap_flush_wait(struct lclient *c, struct lc_inode *in, uint64_t tid);
/** lc_release_caps - @in leaves the cache: drop its caps at the MDS. */
void lc_release_caps(struct lclient *c, struct lc_inode *in, uint32_t caps, uint64_t seq);

/* ---- readdir.c ----------------------------------------------------------- */
void lc_rd_batch_put(struct rd_batch *b);

/* ---- objio.c ------------------------------------------------------------- */
/* a group of store operations in flight; the caller waits for all of them */
struct lc_io_batch {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned int pending;  /* protected by m */
	int err;               /* first error; protected by m */
	unsigned int maxq;     /* client_max_io_inflight */
};
void lc_io_batch_init(struct lc_io_batch *b);
/** lc_io_batch_submit_op - submit @op (consumed) on @oid; may wait for room in the batch. */
void lc_io_batch_submit_op(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op);
/**
 * lc_obj_read_start - start reading [@off, @off+@len) of file @ino, inside
 * one object, into @buf; finish with lc_obj_read_end() (exactly once).
 */
int lc_obj_read_start(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t off, size_t len, char *buf,
		      struct store_aio **out);
/** lc_obj_read_end - wait for @a; a hole or the part past the object's end reads as zeros.  0 or -errno. */
int lc_obj_read_end(struct store_aio *a, char *buf, size_t len);
/** lc_io_batch_wait - wait for every op; return the first error.  The batch is done after. */
int lc_io_batch_wait(struct lc_io_batch *b);
/** lc_obj_name - "<ino hex>.<objno %08x>" into @buf (>= 32 bytes). */
void lc_obj_name(char *buf, size_t len, uint64_t ino, uint64_t objno);
/**
 * lc_obj_read - read [@off, @off+@len) of the file's objects into @buf,
 * objects in parallel; holes and missing objects read as zeros.  Does not
 * clamp to the file size.  Return: 0 or -errno.
 */
int lc_obj_read(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t off, size_t len, char *buf);
/** lc_obj_write - write through, objects in parallel, durable on return. */
int lc_obj_write(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t off, size_t len, const char *buf);
/** lc_data_full - the data store is full (store_space: full or past its failsafe): writes get ENOSPC. */
bool lc_data_full(struct lclient *c);
/** lc_data_nearfull - the data store is full or past its nearfull ratio (asynchronous creates stop). */
bool lc_data_nearfull(struct lclient *c);
/**
 * lc_obj_index - @in's objects @objs[0..@n) are about to be written: make
 * sure the file's object index lists them (store/file_data.c), with one
 * store op, waited for, for those not known to be listed yet.  Call before
 * submitting the writes.  No lock held.  Return: 0 or -errno (then write
 * nothing: an object the index does not list would never be purged).
 */
int lc_obj_index(struct lclient *c, struct lc_inode *in, const uint64_t *objs, size_t n);
/**
 * lc_obj_index_submit - lc_obj_index without waiting: the op goes into @b
 * (the caller waits for @b, and only then submits the writes and calls
 * lc_obj_index_known).  Return: 1 submitted, 0 nothing to list, -ENOMEM.
 */
int lc_obj_index_submit(struct lclient *c, struct lc_io_batch *b, struct lc_inode *in, const uint64_t *objs,
			size_t n);
/**
 * lc_obj_index_present - a full store refused @objs' keys (-ENOSPC): are
 * they all set already (fallocated objects, keys set before a remount)?
 * Then writes into those objects may still land.  Return: 0 or -ENOSPC.
 * Blocking, no lock held.
 */
int lc_obj_index_present(struct lclient *c, struct lc_inode *in, const uint64_t *objs, size_t n);
/** lc_obj_index_known - remember that @objs are listed (after lc_obj_index_submit's batch succeeded). */
void lc_obj_index_known(struct lc_inode *in, const uint64_t *objs, size_t n);
/**
 * lc_obj_allocated - make @in's st_blocks count what its objects hold, not
 * its size (a sparse file): lists the object index and stats the objects
 * (bounded: past LC_ALLOC_STAT_MAX objects each counts whole, past
 * LC_ALLOC_LIST_MAX the size is used), and remembers it for this size,
 * mtime and change, so lc_inode_fill_attr_locked() reports it without I/O.
 * Call without in->lock.  Nothing to do for non-files, empty files, dirty
 * inodes or pools without an index.
 */
void lc_obj_allocated(struct lclient *c, struct lc_inode *in);

/*
 * blocks.c: what a file's data objects hold, as this client changed it.
 * Every function takes in->lock held by the caller.
 */
/** lc_blocks_added_locked - [@off, @off+@len) of @in is in the store now (written back, fallocated). */
void lc_blocks_added_locked(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len);
/** lc_blocks_removed_locked - [@off, @off+@len) of @in was punched (its whole blocks are free). */
void lc_blocks_removed_locked(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len);
/**
 * lc_blocks_in_flight_locked - a cap flush carrying extents is not acked
 * yet: st_blocks is an estimate the MDS's count may already include (not
 * for the kernel to cache).
 */
bool lc_blocks_in_flight_locked(const struct lc_inode *in);
/** lc_blocks_truncated_locked - a truncate to @size: nothing past it is ours to report (the MDS cuts its own). */
void lc_blocks_truncated_locked(struct lc_inode *in, uint64_t size);
/**
 * lc_blocks_fill_locked - put into @m (a CAPS FLUSH or ACK) the changes
 * since the last acked flush, built in @send (the caller's, empty; @m
 * points into it until it is sent).  lc_blocks_sent_locked() after a
 * successful send makes them the ones in flight, else the caller frees
 * @send with lc_blocks_send_free().
 */
void lc_blocks_fill_locked(struct lc_inode *in, struct mdsp_caps *m, struct mdsp_extset send[2]);
void lc_blocks_sent_locked(struct lc_inode *in, struct mdsp_extset send[2]);
void lc_blocks_send_free(struct mdsp_extset send[2]);
/** lc_blocks_resend_locked - @m carries the changes in flight again (a flush resent after a reconnect). */
void lc_blocks_resend_locked(const struct lc_inode *in, struct mdsp_caps *m);
/** lc_blocks_acked_locked - the flush in flight is journaled: its changes are in mi.blocks. */
void lc_blocks_acked_locked(struct lc_inode *in);
/** lc_blocks_lost_locked - the session went: what was in flight is to be sent again, with what followed. */
void lc_blocks_lost_locked(struct lc_inode *in);
/**
 * lc_blocks_estimate_locked - st_blocks of @in (bytes) as this client sees
 * it: the MDS's, with what this client added and took away since on top
 * (added bytes may overlap stored ones: never past max(the MDS's, @size)).
 * MDSP_BLOCKS_UNKNOWN when the MDS does not know.
 */
uint64_t lc_blocks_estimate_locked(const struct lc_inode *in, uint64_t size);
void lc_blocks_free(struct lc_inode *in);
/** lc_obj_alloc_stale_locked - would lc_obj_allocated() count anything?  Caller holds in->lock. */
bool lc_obj_alloc_stale_locked(struct lclient *c, const struct lc_inode *in);
/** lc_obj_indexed - has this client set the index key of @in's object @objno (so far as it remembers)?  Any thread, no lock. */
bool lc_obj_indexed(struct lc_inode *in, uint64_t objno);
/** lc_obj_index_range - lc_obj_index for every object of [@off, @off+@len). */
int lc_obj_index_range(struct lclient *c, struct lc_inode *in, uint32_t osize, uint64_t off, size_t len);
/** lc_obj_index_forget - @in's objects at or past @objno are being removed: forget they are listed. */
void lc_obj_index_forget(struct lc_inode *in, uint64_t objno);
/**
 * lc_obj_truncate - drop data past @new_size: through the object index, a
 * cost proportional to the objects that exist; in a pool without indexes,
 * the objects @old_size covers (clamped to lc_max_file_size()).  In the
 * caller's thread, in bounded slices.
 */
int lc_obj_truncate(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t old_size, uint64_t new_size);

/* ---- writeback.c --------------------------------------------------------- */
/**
 * lc_wb_write - buffer a write; may block on the client_oc_size bound.
 * *@off is set to the end of file for @append; a write at or past @limit is
 * -EFBIG, one crossing it is cut to end there (*@len shrinks).
 */
int lc_wb_write(struct lclient *c, struct lc_inode *in, uint64_t *off, size_t *len, const char *buf,
		const struct lc_cred *cr, bool append, uint64_t limit);
/** lc_io_batch_submit_maybe - like lc_io_batch_submit_op, for an op on an object that may not exist (-ENOENT is success). */
void lc_io_batch_submit_maybe(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op);
/** lc_wb_overlay_snapshot - copy dirty data overlapping a read (see file.c). */
struct lc_extent *lc_wb_snapshot(struct lc_inode *in, uint64_t off, size_t len);
void lc_wb_apply_snapshot(struct lc_extent *snap, uint64_t off, size_t len, char *buf);
/** lc_wb_flush_data - write back @in's dirty extents and wait.  Return: 0 or the writeback error. */
int lc_wb_flush_data(struct lclient *c, struct lc_inode *in);
/** lc_wb_report - send dirty size/mtime to the MDS (a CAPS FLUSH; does not wait). */
int lc_wb_report(struct lclient *c, struct lc_inode *in);
/** lc_wb_note_write_locked - in->lock held: a write ended at @end (wsize). */
void lc_wb_note_write_locked(struct lc_inode *in, uint64_t end);
/** lc_wait_flushes - wait (at most @timeout_ns) until every CAPS FLUSH is acked. */
int lc_wait_flushes(struct lclient *c, uint64_t timeout_ns);
/**
 * lc_wb_flush - data then metadata for one inode.  Return: 0, this call's
 * own writeback error (a lasting one is also recorded in the inode's error
 * sequence, where the handles' fsync/close find it) or the size report's.
 * Consumes nothing: another handle's error stays for that handle.
 */
int lc_wb_flush(struct lclient *c, struct lc_inode *in);
/**
 * lc_wb_start - write @in's buffered data back soon, without waiting (a
 * close under Fb, as ceph-fuse's Client::_flush): the flusher writes it
 * all, then reports size/mtime and updates the caps (Fw/Fb kept until
 * then: lc_data_pending_locked).  Return: false when there is no flusher
 * (the caller writes back itself).
 */
bool lc_wb_start(struct lclient *c, struct lc_inode *in);
/** lc_data_pending_locked - in->lock held: buffered data not yet in the store (dirty or being written). */
static inline bool lc_data_pending_locked(const struct lc_inode *in)
{
	return in->dirty || in->flushing_now;
}
/** lc_wb_err_sample_locked - in->lock held: the error sequence a new handle starts from (an error nobody saw yet is reported to it too). */
uint32_t lc_wb_err_sample_locked(const struct lc_inode *in);
/**
 * lc_wb_err_check - a writeback error recorded for @in since *@since (a
 * handle's sample), or 0; advances *@since and marks the error seen.
 * Takes in->lock.
 */
int lc_wb_err_check(struct lc_inode *in, uint32_t *since);
/** lc_wb_discard_past - drop buffered data at or past @size (truncate). */
void lc_wb_discard_past(struct lclient *c, struct lc_inode *in, uint64_t size);
/** lc_mark_dirty_locked - in->lock held: put @in on the dirty list. */
void lc_mark_dirty_locked(struct lclient *c, struct lc_inode *in);
/** lc_flush_all - write back every dirty inode (@report: and send sizes/mtimes). */
int lc_flush_all(struct lclient *c, bool report);
int lc_flusher_start(struct lclient *c);
void lc_flusher_stop(struct lclient *c);
void lc_flusher_kick(struct lclient *c);
void lc_queue_cap_work(struct lclient *c, const struct mdsp_caps *caps);

/* ---- file.c -------------------------------------------------------------- */
/** lc_fh_new - an open handle on @in (takes its own reference). */
struct lc_fh *lc_fh_new(struct lclient *c, struct lc_inode *in, int flags, const struct lc_cred *cr);
void lc_fh_free(struct lclient *c, struct lc_fh *fh);
/**
 * lc_ra_pool_trim - free the readahead buffers kept for reuse: all of them
 * with @all, else only when none was taken or given back for 10 s (the
 * flusher's tick: an idle mount holds no readahead memory).
 */
void lc_ra_pool_trim(struct lclient *c, bool all);
/**
 * lc_buf_get - a buffer of at least @len bytes from the client's pool of
 * power-of-two buffers (128 KiB to 4 MiB; what readahead chunks and
 * whole-object write buffers use, so that a fresh buffer does not cost
 * page faults); *@cap gets its size.  Smaller sizes are plain malloc.
 * Return: the buffer or NULL.  Any thread; takes c->ra_pool_lock.
 */
char *lc_buf_get(struct lclient *c, size_t len, size_t *cap);
/** lc_buf_put - give back a buffer of @cap bytes (from lc_buf_get or malloc); frees what the pool does not keep. */
void lc_buf_put(struct lclient *c, char *b, size_t cap);
/**
 * lc_purge_data - @in lost its last link: drop its buffers and data objects
 * now, or at its last close if it is open here.
 */
void lc_purge_data(struct lclient *c, struct lc_inode *in);
/** lc_truncate_data - flush/discard buffers and trim objects for a size change. */
int lc_truncate_data(struct lclient *c, struct lc_inode *in, uint64_t old_size, uint64_t new_size);

/* ---- purge.c ------------------------------------------------------------- */
/**
 * lc_purge_start - load the persisted purge queue (a previous run's
 * unfinished purges) and start the purge thread.  After the data pool is open.
 */
int lc_purge_start(struct lclient *c);
/**
 * lc_purge_stop - stop the thread within one slice; what is left (and what
 * was queued but not yet recorded) is in the persisted queue for the next
 * mount.  No lock held.
 */
void lc_purge_stop(struct lclient *c);
/**
 * lc_purge_enqueue - remove the data of file @ino (object size @osize, at
 * most @size bytes for pools without indexes) on the purge thread.  Cheap,
 * never blocks on the store.  Without a purge thread (not started): done
 * in the caller.
 */
void lc_purge_enqueue(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t size);

/* ---- flock.c ------------------------------------------------------------- */
int lc_locks_init(struct lclient *c);
void lc_locks_destroy(struct lclient *c);
void lc_locks_register_perf(struct lclient *c, const char *group);
/* mdsc_ops hooks: the locks to re-assert, those the MDS refused */
int lc_reconnect_locks(void *arg, struct mdsp_lock **locks, uint32_t *nlocks);
void lc_locks_refused(void *arg, const struct mdsp_lock *locks, uint32_t n);
/** lc_locks_session_lost - the session is gone: every lock held is lost. */
void lc_locks_session_lost(struct lclient *c);

/* ---- internal construction for tests (no MDS) ----------------------------- */
/** lclient_create_local - a client on an open data pool, no MDS session. */
int lclient_create_local(struct store_pool *data, struct lclient **out);
/**
 * lclient_mount_shared - mount @c like lclient_mount, with the object store
 * of the mounted @with instead of one of its own (two clients of one
 * filesystem in one test process: the local store admits one opener).
 * @with must stay mounted until @c is unmounted.
 */
int lclient_mount_shared(struct lclient *c, struct lclient *with, const char *root_path);

/*
 * in->lock held: our own writes define the size and mtime (wsize, wmtime)
 * over what the MDS last said: while they are not all acked and we hold
 * Fs or Fw.  Without either, another client may have changed them since
 * (a revoke of Fs comes after our flush, so the MDS's answer has ours).
 */
static inline bool lc_meta_ours_locked(const struct lc_inode *in)
{
	return ((in->dirty_meta | in->flushing_meta) & MDSP_DIRTY_SIZE) && !in->meta_given_up &&
	       (!in->c->mdsc || (in->caps & (MDSP_CAP_FILE_SHARED | MDSP_CAP_FILE_WR)));
}

/* before a kernel cache timeout of @in (or of a name in it) is computed
 * from the caps: lc_kernel_promise_ns() */
static inline void lc_kernel_promise(struct lc_inode *in)
{
	atomic_store(&in->kpromise_ns, now_mono_ns());
}

static inline struct mdsp_time lc_now_mdsp(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (struct mdsp_time){ .sec = ts.tv_sec, .nsec = (uint32_t)ts.tv_nsec };
}

#endif
