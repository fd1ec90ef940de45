/*
 * types_int.h - private to client/: the structures every layer of the
 * client library shares (the client, its inodes, open handles, counters).
 * Types only: each layer declares its functions in a header of its own.
 *
 * The layers, bottom to top; a file includes and calls only its own layer
 * and those below (tools/check-layers.sh checks it, in the suite):
 *
 *   session   mds_client.c (requests), mds_client_session.c (the session
 *             thread, reconnect, replay), mds_client_conn.c (connections),
 *             mds_client_auth.c (the handshake) (mds_client_int.h), intr.c,
 *             opwait.c: the MDS session, its requests, interruptible waits
 *   cache     cache_int.h: inode.c (the inode cache), dentry.c (the dentry
 *             cache), caps.c (caps, GRANT/REVOKE, cap work), blocks.c (what
 *             the objects hold), request.c (requests and their traces,
 *             unsafe tracking, delegated inos), optrack.c (ops in flight),
 *             frontend.c (telling the registered frontend what others changed)
 *   data      data_int.h: objio.c (striping, store I/O), writeback.c (dirty
 *             extents, the flusher), file.c (open handles, read, write,
 *             fsync), purge.c (the purge thread)
 *   ns        ns_int.h: namei.c, asyncdir.c, asyncunlink.c, readdir.c,
 *             flock.c, seek.c: namespace operations mapped to MDS requests
 *   facade    client_int.h: client.c, the lifetime of a client (create,
 *             mount, unmount), config, perf counters, admin commands;
 *             reclaim.c (a restarted client reclaims its dead session);
 *             client.h is the public API of all of it (fuse, nfs_gw)
 *
 * Where a layer needs something from above, the layer above registers it
 * at create: struct lc_cache_ops (a revoke's writeback, a directory's
 * READDIR batches and asynchronous unlinks) and struct lc_data_ops (the
 * attribute requests file.c makes), the way the kernel's page cache calls
 * a filesystem through address_space_operations.  The MDS session layer
 * calls the cache up through struct mdsc_ops (mds_client.h) the same way.
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
 * Lock order (top to bottom; never the other way; docs/LOCKING.md has the
 * whole of it):
 *   in->lock                (one inode; never two inode locks at once)
 *     c->dirty_lock         (the list of inodes with dirty data/metadata)
 *     c->oc_lock            (dirty byte accounting waiters)
 *     c->work_lock          (cap work queue)
 *     c->pools_lock         (the data pools open here; nothing is taken under it)
 *   c->fh_lock              (open handles; nothing is taken under it)
 *   c->rvt_lock             (revokes of inodes not cached; taken with no lock
 *                            held, nothing is taken under it)
 *   c->evt_lock             (evictions that released caps; a leaf, taken under
 *                            c->itrim_lock by the trim, with no lock by a requester)
 *   fh->ra_lock is taken without any inode lock held, and in->lock may be
 *   taken under it; it is never held while waiting for the store.
 * No lock is held across store I/O or an MDS request.
 */
#ifndef LOLIGO_CLIENT_TYPES_INT_H
#define LOLIGO_CLIENT_TYPES_INT_H

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

/* struct lclient.mem: the kinds of what the caches hold */
enum lc_mem_kind {
	LC_MEM_INODE,        /* struct lc_inode in c->inodes */
	LC_MEM_DENTRY,       /* struct lc_dentry in c->dentries */
	LC_MEM_DIRLIST,      /* READDIR batches kept by directories (readdir.c) */
	LC_MEM_NKINDS
};
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

/* What a file's data objects hold, as this client knows it (blocks.c,
 * objio.c): an inode's, under its in->lock, made at the first use
 * (lc_blocks_get); most cached inodes never need one. */
struct lc_blocks {
	/* as this client changed it: since the flush in flight (ext_add/ext_rm,
	 * sent with flush_tid, not acked) and since then (dext_add/dext_rm, not
	 * sent); st_blocks is mi.blocks, the MDS's, with these on top */
	struct mdsp_extset ext_add, ext_rm, dext_add, dext_rm;
	uint64_t ext_base;            /* mi.blocks when ext_* went out: one that moved since counts them */
	/* st_blocks of a file whose blocks the MDS does not know
	 * (MDSP_BLOCKS_UNKNOWN; objio.c lc_obj_allocated): bytes the file's objects hold,
	 * valid while size, mtime and change are still alloc_key's */
	bool alloc_known;
	uint64_t alloc_bytes;
	uint64_t alloc_key[3];
};

struct lc_aunlink;

/*
 * lc_inode.dstate: what only a directory has, under its in->lock; made at
 * the first listing, complete mark or asynchronous unlink
 * (lc_dstate_locked), counted with the listings (LC_MEM_DIRLIST) and freed
 * with the inode.  A file's inode does without these 64 bytes (issue
 * 21.4); NULL reads as all of them zero.
 */
struct lc_dstate {
	struct rd_batch *rd;         /* the last READDIR batch (while Fs is held) */
	struct rd_batch *rd_last;    /* what the last fetch brought, cacheable or not */
	uint64_t rd_busy_cookie, rd_busy_ngen;   /* the fetch in flight (in->rd_busy) */
	uint64_t complete_dgen, complete_ngen;   /* in->dir_complete: valid at these */
	/* the latest reply of ours that changed names here (mds_request.rx_seq,
	 * dentry.c lc_dir_names_changed): an ENOENT or a listing asked for
	 * before it may predate that change, and an older reply of ours
	 * applied after it is not the last word on a name */
	uint64_t names_rx;
	/* asyncunlink.c: unlinks/rmdirs answered here whose first reply has
	 * not come; a Dc revoke waits for them (aunlink_rv) */
	struct lc_aunlink *aunlinks;
	struct lc_revoke *aunlink_rv;
	uint64_t dc_epoch;           /* new each time Dc is gained (lc_caps_set_locked); 0: none noted */
};

/* lc_irare.kc: the file as it was (data_gen, change, size, mtime) when the
 * frontend's kernel last was let cache pages of it (client.c
 * lc_fh_kernel_cache); in->lock */
struct lc_kcache_key {
	uint64_t gen, change, size;
	struct timespec mtime;
};

/*
 * lc_inode.rare: what few cached inodes need (most are only looked up or
 * listed; every byte of struct lc_inode is paid for by each one cached,
 * issue 21.4): made at the first use (lc_rare_locked), counted with the
 * inode (LC_MEM_INODE) while the inode is cached (counted), freed with it;
 * in->lock.  NULL reads as: kernel key not valid, no byte quota,
 * security.capability not known absent, no symlink target cached.
 */
struct lc_irare {
	struct lc_kcache_key kc;     /* valid while in->kc_valid */
	/* regular files: the byte quotas above (mds/rstat.c), as the MDS's
	 * last trace of it said: it may grow to quota_base + quota_room
	 * (quota_room MDSP_QUOTA_NONE: no byte quota); file.c quota_allow */
	uint64_t quota_room, quota_base;
	/* no security.capability xattr, as the MDS answered while we held As
	 * at cap_seq fcaps_seq (namei.c lc_getxattr): true while As is still
	 * held at that sequence (another client's change of the xattr revokes
	 * As first; ours bumps in->fcaps_gen, before and after) */
	uint64_t fcaps_seq;
	bool fcaps_none;
	/* counted in LC_MEM_INODE: from lc_rare_locked to the inode's unhash
	 * or eviction, as the inode's own bytes (inode.c rare_uncount) */
	bool counted;
	char *symlink;               /* symlinks: cached target (immutable; namei.c lc_readlink) */
};

/*
 * lc_inode.dcm (asyncdir.c lc_async_setattr): a file or directory we made
 * under Dc in directory parent while it held Dc with epoch epoch
 * (lc_dstate.dc_epoch, new each time Dc is gained): it qualifies only while
 * its directory kept Dc from its create on and nobody else could see it.
 * in->lock.
 */
struct lc_dcmade {
	uint64_t parent;
	uint64_t epoch;
};

/* An MDS request an inode depends on that was only UNSAFE when it returned
 * (its create, a size report, a rename into place...): fsync waits for it. */
struct lc_unsafe {
	struct lc_unsafe *next;
	struct mds_request *req;     /* holds a reference */
};

/*
 * A cached inode.  Its fields come in parts, each with the lock that
 * protects it (a part is an anonymous struct: the fields keep their names,
 * the grouping says who owns them):
 *   the identity and the cache's bookkeeping   atomics, no lock
 *   the attributes and the directory caches    in->lock
 *   the kernel cache (the frontend's)          atomics and in->lock
 *   the caps (caps.c)                          in->lock; queue links c->work_lock
 *   the writeback (writeback.c, blocks.c)      in->lock; list links their lists' locks
 *   the async operations (request.c, asyncdir.c, asyncunlink.c)   in->lock
 */
#define LC_ATTRS_STALE (1ull << 63)   /* in attr_until (mono ns stay below it) */

struct lc_inode {
	struct cds_lfht_node hnode;  /* c->inodes, key ino */
	struct lclient *c;
	uint64_t ino;
	_Atomic int64_t ref;         /* references handed out; LC_REF_DEAD once evicted */
	_Atomic bool unhashed;       /* removed from c->inodes: last put frees */
	_Atomic bool orphaned;       /* the MDS says nlink 0: evicted as soon as unreferenced, so that
				      * the MDS can let the orphan go (lc_orphan_queue) */
	bool on_lru;                 /* on c->lru (inode.c); c->lru_lock */
	_Atomic bool lru_used;       /* looked up since it went on c->lru: the trim spares it once */
	_Atomic int kreplying;       /* attribute replies to the frontend's kernel in progress (the
				      * kernel cache's part below; here it fills what was padding) */
	_Atomic uint64_t dgen;       /* dirs: bumping it invalidates every cached dentry below */
	_Atomic uint64_t ngen;       /* dirs: bumping it invalidates the negative dentries (Fs lost) */
	_Atomic uint64_t data_gen;   /* bumped on every write/truncate: stale readahead check */
	/* the LRU links share their bytes with the rcu_head that frees it:
	 * call_rcu comes after the last lru_forget, and a dead inode (ref
	 * LC_REF_DEAD) never goes on c->lru again (lru_add), as the kernel's
	 * inode shares i_rcu with i_dentry */
	union {
		struct {
			struct lc_inode *lru_prev, *lru_next;  /* c->lru links; c->lru_lock */
		};
		struct rcu_head rcu;
	};

	pthread_mutex_t lock;        /* protects what the parts below say it does */
	pthread_cond_t cond;         /* flushing done, dirty bytes written, async submissions sent */

	/* ---- the attributes and the directory caches: in->lock ---- */
	struct mdsp_inode mi;        /* attributes as last known (size: see wsize) */
	/* mono ns: cached attrs usable until then (0 without caps); LC_ATTRS_STALE
	 * | t: what mi holds is not the MDS's since t (lc_attrs_forget_locked) */
	uint64_t attr_until;
	struct lc_dstate *dstate;    /* dirs: made at the first use (lc_dstate_locked) */
	struct lc_irare *rare;       /* made at the first use (lc_rare_locked): see there */
	uint32_t fcaps_gen;          /* bumped by our changes of security.capability (lc_irare.fcaps_none) */
	/* regular files: a byte quota above that could not be noted (no memory
	 * for lc_irare): growing writes fail with ENOMEM (file.c quota_allow) */
	bool quota_nomem;
	/* (the bools of this part sit together: every byte of an inode is
	 * paid for by each one cached, issue 21.4) */
	/* dirs: one READDIR in flight per directory; those that come meanwhile
	 * for the same cookie (rd_busy_*) take its batch (readdir.c) */
	bool rd_busy;
	/* dirs, dentry.c (asyncdir.c makes them): every name is in the dentry
	 * cache (we made the directory under Dc and hold it since): a name not
	 * there does not exist.  Valid while dgen/ngen are the ones recorded
	 * (complete_*) and Dc|Fs held. */
	bool dir_complete;
	bool purge_pending;          /* unlinked (nlink 0) while open: drop the data at last close */
	int nwriters;                /* open handles with write access */
	int nopen;                   /* open handles */

	/* ---- the kernel cache: what the frontend's kernel was given.  The
	 * atomics take no lock; kc_* are under in->lock ---- */
	struct {
		_Atomic uint64_t kpromise_ns; /* mono ns the frontend last asked for a kernel cache timeout of
					       * its attributes or of a name in it (lc_kernel_promise_ns) */
		_Atomic int64_t knlookup;    /* the frontend's kernel's lookup count of it (lc_kernel_hand) */
		_Atomic uint64_t kattr_until; /* mono ns: the latest end of an attribute timeout the
					       * frontend's kernel was given (lc_attr_timeout) */
	};

	/* ---- the caps (caps.c): in->lock, but for the cap-update queue's
	 * fields, under c->work_lock ---- */
	struct {
		uint32_t caps;               /* MDSP_CAP_* held (caps.c) */
		uint32_t wanted_sent;        /* file caps we last told the MDS we want */
		uint64_t cap_seq;            /* sequence of the last cap state applied (stale replies below it
					      * change nothing) */
		uint64_t acked_seq;          /* the sequence our cap messages carry: every grant and reply up to
					      * it taken in, and a revoke only once its ack is sent (caps.c
					      * send_ack), so that no update or flush acks a revoke still being
					      * processed */
		struct lc_revoke *rv_deferred; /* a revoke of ours a hook deferred, not finished; c->work_lock */
		struct lc_inode *capupd_next;  /* c->capupd link; c->work_lock */
	};

	/* ---- the writeback (writeback.c; blocks.c the extents): in->lock,
	 * but for the list links (their lists' locks, as said) and objs ---- */
	struct {
		struct lc_extent *dirty;     /* dirty extents, sorted */
		struct lc_extent *flushing;  /* extents being written (read overlay) */
		size_t dirty_bytes;          /* bytes in dirty (capacity, for the bound) */
		/* index of dirty for inserts (writeback.c dirty_start_locked): the last
		 * extent of every object that has some, sorted by object; rebuilt after
		 * a change of the list other than an insert (dtails_valid false) */
		struct lc_dtail *dtails;
		uint32_t ndtails, dtails_cap;   /* (below) objects with dirty data: far from 2^32 */
		/* the end of the last buffered write, and whether it began where
		 * the one before ended (wb_seq, below): a sequential stream, whose
		 * tail object the flusher leaves to fill and whose next objects it
		 * indexes ahead */
		uint64_t wb_last_end;
		struct lc_inode *wbq_next;   /* c->wbq link; c->work_lock */
		uint64_t wsize;              /* size our writes not yet flushed give the file (while
					      * (dirty|flushing)_meta & SIZE); without Fs it does not
					      * include a size we cached, which another client may have cut */
		struct mdsp_time wmtime;     /* mtime of the last local write */
		uint64_t flush_tid;          /* the FLUSH that carries flushing_meta */
		uint64_t flush_acked;        /* highest flush tid the MDS acked */
		uint64_t flush_dropped;      /* flushes up to this tid went with an evicted session:
					      * never acked (lc_session_event); their fsync gets EIO */
		uint64_t flushing_size;      /* what it carries */
		struct mdsp_time flushing_mtime;
		uint64_t wchange_base;       /* mi.change the local write count (wchanges) counts from */
		struct lc_inode *dirty_next; /* c->dirty_list link; protected by c->dirty_lock */
		/* what the data objects hold (blocks.c, objio.c): made at the
		 * first write, punch or count of a file; NULL: nothing known */
		struct lc_blocks *blk;
		/* object numbers whose keys in the file's object index are known to be
		 * set (objio.c): the first write to any other object sets its key first.
		 * Its own (xarray) lock; not under in->lock.  Made at the first
		 * use (lc_obj_index_set): most cached inodes never do I/O. */
		struct xarray *_Atomic objs;
		/* (the part's small fields, together: every byte of an inode is
		 * paid for by each one cached, issue 21.4) */
		uint32_t dirty_meta;         /* MDSP_DIRTY_SIZE|MTIME not yet sent to the MDS */
		uint32_t flushing_meta;      /* sent in a CAPS FLUSH/ACK, not yet acked (FLUSH_ACK) */
		uint32_t wchanges;           /* local writes since mi.change was wchange_base (lc_attr.change) */
		/* writeback errors, errseq_t-like (Linux's mapping->wb_err): every
		 * error a writeback records bumps the sequence (once someone saw the
		 * previous one); each open handle samples it and its fsync/close
		 * report what was recorded since (writeback.c lc_wb_err_check) */
		int wb_err;                  /* the latest error recorded (-errno) */
		uint32_t wb_eseq;            /* its sequence << 1 | seen (0: never an error) */
		bool dtails_valid;           /* dtails is the index of dirty */
		bool flushing_now;           /* one writeback per inode at a time (a flag lock) */
		bool wb_seq;                 /* see wb_last_end */
		bool meta_given_up;          /* Fs/Fw revoked after our flushes: the MDS's size and
					      * mtime have them, ours no longer override (until we write) */
		bool on_dirty_list;          /* holds a reference while set */
		bool wb_dropped;             /* the writeback in flight (flushing_now) went with an
					      * evicted session: it writes and keeps nothing
					      * (writeback.c wb_drop_evicted) */
		/* the two queues of c->work_lock (the caps' part's capupd_queued sits
		 * here, where it fills what would be padding) */
		bool wbq_queued;             /* on c->wbq (holds a reference); protected by c->work_lock */
		bool capupd_queued;          /* on c->capupd (holds a reference); protected by c->work_lock */
		/* the caps' part's (in->lock), where it fills what was padding:
		 * mono ms (mod 2^32) when cap_seq last moved: a grant from a
		 * request sent before never outlives this inode's eviction
		 * (lc_caps_seen; read back with lc_caps_at_ns) */
		uint32_t caps_at_ms;
	};

	/* ---- the async operations: MDS requests answered before the MDS
	 * had them, and what waits for them; in->lock ---- */
	struct {
		/* request.c: requests not yet SAFE that this inode depends on, newest
		 * first; pruned as they become SAFE (the inode is not evicted while
		 * one is pending) */
		struct lc_unsafe *unsafe;
		/* asyncdir.c lc_async_setattr: files and dirs we made under Dc
		 * (NULL: not, or a link/rename since; made at the create, freed
		 * when it ends) */
		struct lc_dcmade *dcm;
		int unsafe_err;              /* one of them will never be SAFE: the next fsync says so */
		bool unsafe_untracked;       /* one could not be tracked (ENOMEM): fsync syncs everything */
		bool async_failed;           /* its asynchronous create failed at the MDS: it never existed */
		/* the kernel cache's part's bools, here where they fill what was padding */
		_Atomic bool kernel_negatives; /* dirs: the frontend's kernel was given negative entries */
		bool kc_valid;               /* rare->kc is valid; in->lock */
		uint16_t async_submitting;   /* dirs: async creates/unlinks between the Dc check and their send
					      * (a flag lock, inode.c lc_async_submit_*; at most one per
					      * thread) */
		bool create_unsent;          /* made by an async create whose request is not submitted yet
					      * (lc_async_order waits on in->cond) */
		int async_setattrs;          /* setattrs answered here whose first reply is not in */
	};
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
	struct perf_counter readdir_prefetched;   /* READDIR batches that had been asked for ahead (readdir.c) */
	struct perf_counter xattr_cached;      /* getxattr/listxattr answered from a trace (namei.c) */
	struct perf_counter quota_refused;     /* writes and fallocates refused or cut short by a byte quota (file.c) */
	struct perf_counter rd_bytes, wr_bytes;
	struct perf_counter ra_hit, ra_wait, ra_miss, ra_bytes, ra_buf_reuse, ra_lent;
	struct perf_counter wb_bytes, wb_ops, wb_throttle, wb_full_ops;
	struct perf_counter close_waves, close_wb_files;   /* the flusher's waves of closed files
							    * and the files in them (run_wbq) */
	struct perf_counter size_reports;
	struct perf_counter caps_grant, caps_revoke, caps_revoke_deferred, lease_revoke, cap_flushes, caps_released;
	struct perf_counter meta_dropped;      /* inodes whose dirty size/mtime an eviction dropped (caps.c) */
	struct perf_counter data_dropped, data_dropped_files;   /* buffered bytes (dirty and in flight)
								 * an eviction dropped, and their files
								 * (writeback.c wb_drop_evicted) */
	struct perf_counter unmount_evicted;   /* unmounts that did not wait for a session: evicted (client.c) */
	struct perf_counter ino_evicted;
	struct perf_counter caps_grant_dropped;  /* a reply's grant not installed: revoked or evicted
						  * while it was out (caps.c lc_caps_seen) */
	struct perf_counter dn_trim_walks, dn_trim_skipped;    /* lc_dcache_trim's, likewise */
	struct perf_counter dn_lease_moved;    /* newer leases on a cached name, moved in place (dentry.c) */
	struct perf_counter ino_trim_walks, ino_trim_skipped;  /* lc_icache_trim: rounds that looked at the
							         * LRU, and rounds past the bound with nothing on it */
	struct perf_counter ino_trim_visited;  /* inodes lc_icache_trim looked at (each round at most
						* client_trim_batch) */
	struct perf_counter index_ops;
	struct perf_counter purge_files, purge_objects, purge_queued;
	struct perf_counter async_creates, async_failed, async_sync, async_setattrs;
	struct perf_counter async_unlinks, async_rmdirs, async_unlink_waits;
	struct perf_counter async_order_waits;   /* requests that waited for an async create's submit */
	struct perf_counter deleg_quiesce_waits; /* reconnects that waited for a delegated ino's request */
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

/*
 * What the cache core needs from the layers above it.  A revoke writes
 * back through the data path, and a directory's cache entries hold the
 * namespace layer's READDIR batches and asynchronous unlinks; the cache
 * core reaches them only through these, set by the layers above at create
 * (lc_data_register, lc_ns_register) before anything runs, read-only after
 * (as the kernel's address_space_operations).  Every member is set.
 */
struct lc_cache_ops {
	/* the data path (writeback.c lc_wb_flush_data): write back @in's dirty data and wait */
	int (*flush_data)(struct lclient *c, struct lc_inode *in);
	/* (writeback.c wb_drop_evicted) the session that buffered @in's data
	 * was evicted: drop its dirty and flushing extents; the bytes dropped */
	uint64_t (*drop_data)(struct lclient *c, struct lc_inode *in);
	/* the namespace layer (readdir.c lc_rd_batch_put): drop a reference to a READDIR batch */
	void (*dir_batch_put)(struct rd_batch *b);
	/* (asyncunlink.c) wait for / defer a revoke behind / forget @dir's asynchronous unlinks */
	void (*async_unlink_wait)(struct lclient *c, struct lc_inode *dir, const char *name);
	bool (*async_unlink_defer)(struct lclient *c, struct lc_inode *dir, struct lc_revoke *rv);
	void (*async_unlink_drop)(struct lc_inode *dir);
};

/*
 * What the data path needs from the namespace layer above it (file.c: a
 * read or an append without Fs asks the MDS for the size, fallocate sets
 * it): lc_getattr and lc_fsetattr, registered by lc_ns_register.
 */
struct lc_data_ops {
	int (*getattr)(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr, bool force,
		       struct lc_attr *attr);
	int (*fsetattr)(struct lclient *c, struct lc_fh *fh, const struct lc_attr *set, int mask,
			const struct lc_cred *cr, struct lc_attr *attr);
	/* (namei.c) the name of the data pool file @ino's layout names (an MDS getxattr) */
	int (*pool_name)(struct lclient *c, uint64_t ino, char *buf, size_t len);
};

#define LC_DELEG_RANGES 4
#define LC_CAP_WORKERS 4
#define LC_UNCACHED_REVOKES 256   /* 4 KiB: recent revokes of inodes not cached (caps.c) */
#define LC_EVICT_SETS 1024        /* evictions that released caps (caps.c): 1024 sets of 8, */
#define LC_EVICT_WAYS 8           /* 136 KiB; a set loses a note after 8 newer ones in it */

struct lclient {
	/* lc_ns_epoch(): moves whenever this client learns that a name may
	 * have moved (its own rename/unlink, a dentry lease or directory cap
	 * revoked); no lock */
	_Atomic uint64_t ns_epoch;
	/* configuration, read at create (timeouts re-read at use) */
	char *mds_addr;
	char *mountpoint;
	char *mounted_at;            /* lclient_set_mount_point(): session metadata */
	/* the lock file of this client's name and mount key (reclaim.c): set by
	 * lclient_claim before the mount, read-only after (the file's text is
	 * rewritten only by the thread that opened a session) */
	bool reclaim_held;
	int reclaim_fd;
	char *reclaim_path, *reclaim_key;
	uint64_t reclaim_sid;        /* the dead predecessor's session named in it, or 0 */
	uint8_t reclaim_uuid[16];
	char *data_pool_name;
	uint32_t default_object_size;

	struct store *store;
	struct store_pool *data;
	bool data_indexed;           /* every file in the data pool keeps an object index (set at mount) */
	/* objio.c: the data pools after the first that layouts named (id ->
	 * handle, opened at first use: lc_layout_resolve); the first is @data */
	pthread_mutex_t pools_lock;
	struct lc_pool { uint32_t id; struct store_pool *p; } *pools;   /* protected by pools_lock */
	size_t npools;               /* protected by pools_lock */
	struct lc_purger *purger;    /* purge.c; NULL until started */
	bool store_borrowed;         /* store/data belong to another lclient (tests) */
	_Atomic uint64_t flush_tid;  /* last CAPS FLUSH tid */
	struct mds_client *mdsc;
	bool mounted;
	struct lc_inode *root;       /* holds a reference */

	/* the layers above the cache core and the data path (set at create, read-only after) */
	struct lc_cache_ops cache_ops;
	struct lc_data_ops data_ops;

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
	/* what the caches hold in bytes (client_cache_memory_limit): each
	 * inode, dentry and directory listing by what malloc gave it
	 * (lc_mem_size), counted as it enters its cache and leaves it */
	_Atomic uint64_t mem[LC_MEM_NKINDS];
	unsigned long inodes_fit, dentries_fit; /* flusher only: lc_lfht_fit's last size */
	bool search_unchecked_ok;    /* lclient_set_search_unchecked_ok; set before serving */
	/* inode.c: the inodes that were unreferenced when their last reference
	 * went, oldest first: what lc_icache_trim looks at, instead of every
	 * inode (those the kernel holds through the names it caches cannot go).
	 * An inode referenced again stays on it until the trim meets it and
	 * takes it off; its next last put puts it back at the tail. */
	pthread_mutex_t lru_lock;    /* protects lru_head/tail, nlru, every inode's lru_* and on_lru; a leaf lock */
	struct lc_inode *lru_head, *lru_tail;
	uint64_t nlru;
	pthread_mutex_t itrim_lock;  /* one lc_icache_trim at a time (the flusher's; tests call it too) */
	uint64_t dtrim_ns, dtrim_left;           /* flusher only: lc_dcache_trim's last walk */

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
	unsigned wbq_n;              /* how many are on wbq */
	uint64_t wbq_since;          /* when the first of them was queued (mono ns) */
	bool stop, kick;
	bool orphan_wake;            /* orphans queued (inode.c orphan_queue): a round without a kick */
	struct lc_revoke *deferred;  /* revokes hooks deferred, not finished (caps.c); work_lock */
	pthread_cond_t deferred_cond;  /* (CLOCK_MONOTONIC) one of them finished */
	_Atomic uint64_t sess_gen;   /* bumped when the session's caps are lost (lc_session_event) */

	/*
	 * Revokes of inodes not cached here, acked as "not cached" (caps.c
	 * uncached_revoke_note): the MDS dropped our cap with that ack, so a
	 * reply granting caps up to that seq, received before the revoke and
	 * applied after it, must install none.  The last LC_UNCACHED_REVOKES
	 * of them, by number (rvt_gen counts them all: slot rvt_gen % N is the
	 * next); a reply applied by a thread other than the session reader
	 * notes rvt_gen before its request goes out (lc_caps_seen).
	 */
	pthread_mutex_t rvt_lock;    /* protects rvt and rvt_cond's waits; a leaf lock */
	pthread_cond_t rvt_cond;     /* (CLOCK_MONOTONIC) a revoke was noted (test hook's wait) */
	struct {
		uint64_t ino, seq;
	} rvt[LC_UNCACHED_REVOKES];
	_Atomic uint64_t rvt_gen;    /* revokes ever noted; written under rvt_lock */
	/*
	 * Inodes evicted with their caps released (caps.c lc_caps_evict_note),
	 * with when their caps last moved (lc_caps_at_ns): the MDS may drop our
	 * cap with the release, so a grant on that inode in a reply whose
	 * request went out before that moment, applied after the eviction (a
	 * READDIR batch kept on its directory or asked for ahead, a reply in
	 * flight), must install none.  Kept by ino in sets of LC_EVICT_WAYS; a
	 * note pushed out of its set leaves only its time (lost_at, the
	 * latest): a grant on any ino of that set from a request sent before
	 * it installs nothing.
	 */
	pthread_mutex_t evt_lock;    /* protects evt; a leaf lock */
	struct lc_evict_set {
		struct {
			uint64_t ino, at;
		} w[LC_EVICT_WAYS];
		uint64_t lost_at;
	} evt[LC_EVICT_SETS];
	_Atomic uint64_t evt_gen;    /* evictions ever noted (a request that saw none skips the lock) */
	/* test hook (tests set it, client_int.h): a requester about to apply a
	 * reply carrying this ino waits (bounded) until a revoke of it was
	 * acked as "not cached" -- the interleaving the table is for */
	_Atomic uint64_t debug_apply_wait_ino;
	_Atomic uint64_t debug_apply_waiting;  /* requesters that entered that wait */
	_Atomic uint64_t debug_apply_waited;   /* not-cached acks of that ino (each ends the wait) */

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
	_Atomic uint32_t async_unsent;   /* inodes with create_unsent set (lc_async_order looks only then) */
	pthread_mutex_t deleg_lock;  /* protects the eight below; a leaf lock */
	pthread_cond_t deleg_cond;   /* deleg_taking fell to 0 */
	struct { uint64_t start, len, gen; } deleg[LC_DELEG_RANGES];   /* gen: the connection's */
	uint32_t ndeleg;
	uint64_t deleg_chunk;        /* length of the last range granted */
	bool deleg_asked;            /* a request with MDSP_REQ_WANT_INOS is in flight */
	bool deleg_frozen;           /* a reconnect is under way: nothing is taken or kept */
	uint32_t deleg_taking;       /* inos taken whose request is not registered yet */
	uint64_t deleg_epoch;        /* lc_deleg_quiesce's count: a reply to an older ask is stale */

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

#endif
