/*
 * local_int.h - private to store/local*.c: the state of one open local
 * store and the helpers its files share.
 *
 *   local.c         the design essay; open, close, pools, the backend table
 *   local_records.c LMDB records: the object table and every omap
 *   local_intent.c  the redo log: encoding and decoding intents
 *   local_file.c    the file table, each file's FIFO of works through
 *                   io_uring, request completion
 *   local_ckpt.c    checkpoints (fdatasync of written files, then the
 *                   intents they cover)
 *   local_space.c   space state and admission of writes
 *   local_inline.c  inline objects (bytes in LMDB)
 *   local_exec.c    a batch: its ops in one write transaction, the commit
 *   local_fence.c   fence records (store_blocklist_add)
 *   local_worker.c  the worker thread, the submission queue, the budget
 *   local_share.c  several processes on one store: the effects lock,
 *                  owners and their liveness, taking over a dead owner's
 *                  pending effects (redo), the shared counters
 *   local_check.c  checking a store directory before LMDB maps it
 *
 * The on-disk format (LMDB keys and values, the intent records) is
 * described here, once; the files that read and write it include this.
 *
 * Lock order (a process): ls->lock is a leaf.  Between processes: the
 * effects lock is taken before any LMDB write transaction begins, never
 * while one is open, so it and LMDB's writer mutex cannot deadlock.
 */
#ifndef LOLIGO_STORE_LOCAL_INT_H
#define LOLIGO_STORE_LOCAL_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <liburing.h>
#include <lmdb.h>

#include "common/perf.h"
#include "store/store_backend.h"

/*
 * Format 3 (formats 1 and 2 are upgraded at open: their intents are redone
 * and dropped first; format 1 was written by single-process builds, format
 * 2 had no inline objects).
 *
 *   meta    "format" u32 = 3; "next_fid", "next_owner" u64 LE
 *   pools   name -> u32 id
 *   objects pool id BE32 + key (see obj_ekey) -> object record; its flag
 *           OBJ_F_INLINE says the bytes are in "inline", not in a file
 *   omap    fid BE64 + key -> value
 *   inline  fid BE64 -> the whole content of an inline object (exactly its
 *           size; absent when the size is 0)
 *   intents seq BE64 -> intent (below)
 *   owners  owner id BE64 -> u64 LE: the lowest intent seq of that owner
 *           not yet covered by its checkpoint (absent: none)
 */
#define FORMAT_VERSION 3
#define FORMAT_OLDEST 1
#define OBJ_F_INLINE 0x01
/*
 * OBJ_F_ALLOC: every byte of the object, up to its size, has its blocks in
 * the object's file (it was written from 0 without a hole, or fallocated:
 * store_op_allocate), so a write inside it needs no new file space.
 * Builds that do not know the flag ignore it and clear it when they write
 * the record: that only ever makes a store promise less.
 */
#define OBJ_F_ALLOC 0x02

/*
 * Intent value: u8 version (2), 3 pad, u32 nrec, u64 owner, then per record:
 * u8 kind, 7 pad, u64 fid, u64 a, u64 b, and for FW_WRITE b bytes of data.
 *   FW_WRITE a=off b=len, FW_ZERO a=off b=len, FW_TRUNC a=size, FW_UNLINK.
 * Version 1 (format 1) has no owner: an 8-byte header.
 */
#define INTENT_HDR 16
#define INTENT_HDR_V1 8
#define IREC_HDR 32

/* FW_READ and FW_ALLOC are file works only, never intent records (nothing to redo:
 * a lost FW_ALLOC is a reservation lost, which the next write's admission finds) */
enum fw_kind { FW_WRITE, FW_ZERO, FW_TRUNC, FW_UNLINK, FW_READ, FW_ALLOC };

struct irec {
	enum fw_kind kind;
	uint64_t fid, a, b;
	const void *data;
};

/*
 * store.lock: flock(LOCK_SH) by every process that has the store open (a
 * single-process build takes LOCK_EX, so neither can open it while the
 * other has it), and open-file-description locks on single bytes:
 */
#define LOCK_EFFECTS 0                /* exclusive: whoever applies or reads file data */
#define LOCK_WAITING 1                /* shared: held while waiting for LOCK_EFFECTS */
#define LOCK_LIVE_BASE (1ll << 32)    /* + owner id: exclusive for the owner's lifetime */

struct lreq;
struct lfile;

enum uctx_kind { U_EVENT, U_FWORK, U_FSYNC };

struct uctx {
	enum uctx_kind kind;
};

struct local_store {
	struct store base;
	char *path;
	int dirfd, objfd, lockfd;
	MDB_env *env;
	MDB_dbi db_meta, db_pools, db_objs, db_omap, db_intents, db_owners, db_inline;
	uint64_t inline_max;         /* writes keep objects up to this size inline (0: none) */
	bool inline_room;            /* worker: LMDB's map is less than half used (new objects may go inline) */
	uint32_t format;             /* as found at open (upgraded to FORMAT_VERSION by the first recovery) */
	dev_t dev;                   /* of the store directory: one open per process */
	ino_t ino;

	pthread_t worker;
	bool worker_started;
	struct io_uring ring;
	bool ring_ok;
	int evfd;
	uint64_t evbuf;
	struct uctx ev_ctx;

	pthread_mutex_t lock;        /* protects the fields below up to the blank line */
	pthread_cond_t space;        /* signalled when budget is returned */
	struct lreq *q_head, **q_tail;
	uint64_t budget;             /* bytes charged by unfinished requests */
	bool sleeping;               /* the worker waits for the eventfd */
	bool stopping;

	_Atomic int broken;          /* sticky -errno after a failed file effect */

	/* worker thread only (and open/close before/after it runs) */
	uint64_t owner;              /* this process' owner id (LOCK_LIVE_BASE + owner is held) */
	uint64_t next_fid, saved_fid;  /* read from meta at the start of each write txn */
	uint64_t next_seq;           /* ... and after the last intent in the table */
	uint64_t my_lowest;          /* lowest seq of ours not covered by a checkpoint; UINT64_MAX: none */
	uint64_t my_lowest_db;       /* ... as our owners record says (UINT64_MAX: no record) */
	bool effects_held;           /* we hold LOCK_EFFECTS */
	uint64_t effects_since_ns;   /* ... since then */
	bool effects_yield;          /* another process waits for it: drain, then let go */
	bool effects_yielded;        /* we let go for a waiter: let it in before taking it again */
	unsigned works_reqs;         /* requests with file works not yet done (what LOCK_EFFECTS covers) */
	struct lfile **ftab;
	size_t ftab_mask, nfiles;
	struct lreq *fifo_head, *fifo_tail;
	uint64_t applied_upto;       /* the effects of every intent of ours <= this are in the files */
	uint64_t ckpt_landed_first;  /* seq of the first intent landed since the running checkpoint began */
	struct lfile *dirty;
	bool dir_dirty;
	struct lfile *blocked;       /* files whose head work could not get an fd */
	unsigned open_fds, max_fds;  /* object files open; the cap (RLIMIT_NOFILE / 4) */
	uint64_t blocked_retry_ns;
	unsigned ckpt_pending;
	int ckpt_err;                /* a sync failed: the store fails stop */
	bool ckpt_incomplete;        /* something was not synced (ENOMEM, our bug): retry, don't clear */
	uint64_t ckpt_last_ns;
	uint64_t ckpt_interval_ns;   /* CKPT_INTERVAL_NS; tests shorten it (LOLIGO_STORE_LOCAL_CKPT_INTERVAL_US) */
	uint64_t test_stall_apply_ns;  /* test hook: sleep between a commit and its effects (..._TEST_STALL_APPLY_MS) */
	unsigned test_fail_apply;    /* test hook: the Nth file write fails (..._TEST_FAIL_APPLY) */
	bool retired;                /* broken: our liveness lock is given up, others redo our intents */

	/* space: the ratios are set at open; the sp_ fields are written by whoever refreshes them */
	double nearfull_ratio, full_ratio, failsafe_ratio;
	bool full_try;               /* writes pass up to failsafe_ratio (store_config.local_full_try) */
	_Atomic uint64_t sp_total, sp_avail, sp_ns;
	_Atomic int sp_state, sp_logged;
	int64_t batch_room;          /* worker: bytes the running batch may still take */
	int64_t batch_room_resv;     /* ... up to the failsafe ratio: writes into allocated space (OBJ_F_ALLOC) */
	uint64_t unlanded;           /* worker: bytes of committed writes not yet in the files */
	uint64_t bytes_since_ckpt;
	unsigned busy_reqs;          /* requests taken off the queue, not yet freed */
	uint64_t st_ops, st_batches, st_ckpts;

	/* fencing: this open's instance address, and the key of its fence record */
	char addr[40];               /* "local.<16 hex>", random per open; read-only */
	struct perf_counter pc_fenced; /* write ops refused by the fence */

	/* perf dump group "store_local" (".N" for more stores in one process) */
	char perf_group[32];
	struct perf_counter pc_writes, pc_reads, pc_queries, pc_batches, pc_commits, pc_ckpts, pc_write_bytes;
	struct perf_counter pc_effects_waits, pc_effects_yields, pc_takeovers, pc_enospc;
	struct hist h_commit;        /* LMDB commit (the sync) */
	struct hist h_write;         /* submit to durable completion of a write op */
	struct hist h_effects_wait;  /* waiting for another process' LOCK_EFFECTS */
};

/* ---- limits shared by the worker's files ---------------------------- */

#define BATCH_MAX_REQS 512
#define BATCH_MAX_BYTES (32u << 20)
#define CKPT_INTERVAL_NS (100ull * 1000 * 1000)

/* ---- requests, file works, files, pools (local.c and its parts) ----- */

enum lreq_kind { LR_WRITE, LR_READ, LR_STAT, LR_OMAP_GET, LR_OMAP_LIST, LR_LIST };

struct local_pool;
struct fwork;

struct lreq {
	struct lreq *next;           /* submission queue, then batch list */
	enum lreq_kind kind;
	struct local_pool *pool;
	char *oid;
	store_cb_t cb;
	void *arg;
	int r;
	uint64_t t0;                 /* submission time (perf) */
	size_t charge;               /* bytes charged to the budget */
	struct store_op *op;         /* LR_WRITE: kept until the file effects are applied */
	uint64_t seq;                /* intent sequence, 0: none */
	unsigned pending;            /* file works not yet done */
	bool cb_done;
	bool finished;               /* all file works done */
	bool effects;                /* touches object files: needs LOCK_EFFECTS */
	uint64_t grow;               /* LR_WRITE: bytes it may add to the filesystem (0: frees or keeps space) */
	bool ran;                    /* executed in a batch txn (its outputs may be set) */
	struct fwork *fw_head, *fw_tail;  /* planned file works, queued after the commit */
	void *spill;                 /* LR_WRITE: an inline object's bytes, written to its new file */
	struct lreq *fnext;          /* the worker's FIFO of write requests by seq */
	/* LR_READ */
	uint64_t off;
	size_t len;
	void *buf;
	/* blocking queries: results go straight to the caller's variables */
	struct store_stat *st_out;
	const char *key, *after, *prefix;
	size_t max;
	void **val;
	size_t *vlen;
	struct store_kv **kvs;
	size_t *nkv;
	bool *more;
	char ***names;
};

struct lfile;

struct fwork {
	struct uctx u;
	struct fwork *next;
	enum fw_kind kind;
	uint64_t fid;
	struct lfile *f;
	struct lreq *req;
	uint64_t off, len;
	char *data;                  /* FW_WRITE source (in req->op) / FW_READ destination */
	uint64_t done;
};

/*
 * An open object file.  The entry, and its fd, live as long as anything
 * refers to them: queued work (head), an SQE in flight on the fd (busy: the
 * head work; fsyncing: checkpoint fdatasyncs), the dirty list or the blocked
 * list.  local_file_maybe_release() frees it and closes the fd once all of those
 * are gone; nothing else may close the fd while an SQE that names it is in
 * flight, as the kernel may look the fd number up only when it runs the
 * request (an fsync is always punted to an io-wq worker): a closed fd
 * would fail it with EBADF, a reused one would sync or write another file.
 */
struct lfile {
	uint64_t fid;
	int fd;                      /* -1: not open */
	bool rw;
	bool busy;                   /* the head work has an SQE in flight */
	bool dirty;                  /* on ls->dirty: written since the last checkpoint began */
	bool blocked;                /* on ls->blocked: waits for a file descriptor */
	bool unlinked;               /* the unlink was applied: no name, nothing to sync, fd kept only for I/O in flight */
	unsigned fsyncing;           /* checkpoint fsyncs in flight on fd */
	struct lfile *hnext;         /* file table chain */
	struct lfile *dnext;         /* dirty list */
	struct lfile *bnext;         /* blocked list */
	struct fwork *head, *tail;   /* FIFO of work, the head is the one running */
};

struct fsync_ctx {
	struct uctx u;
	struct lfile *f;             /* NULL: the objects directory */
	int fd;                      /* the fd the fsync was issued on */
};

struct local_pool {
	struct store_pool base;
	struct local_store *ls;
	uint32_t id;
	char *ns;
};

static inline struct local_store *LS(struct store *st)
{
	return container_of(st, struct local_store, base);
}

static inline struct local_pool *LP(struct store_pool *p)
{
	return container_of(p, struct local_pool, base);
}

/* An object's record in the object table (local_records.c). */
struct objrec {
	bool exists;
	bool inl;                    /* OBJ_F_INLINE: the bytes are in ls->db_inline */
	bool alloc;                  /* OBJ_F_ALLOC: the file has blocks for every byte up to size */
	uint64_t fid;
	uint64_t size;
	uint64_t mtime_ns;
};

/* One omap entry as stored: pointers into LMDB pages (valid until the txn writes). */
struct oent {
	const char *key;             /* full key */
	size_t klen;
	const char *ep;              /* encoded key part without fid and hash */
	size_t eplen;
	const void *val;
	size_t vlen;
	MDB_val ek;                  /* the LMDB key */
};

/* The file effects of one op, while it is executed (local_intent.c). */
struct irecs {
	struct irec *v;
	size_t n, cap;
	size_t bytes;
	size_t persisted;            /* records that go into the intent (all but FW_ALLOC) */
};


/* ---- small encoding helpers ----------------------------------------- */

static inline void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static inline void put_be32(unsigned char *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static inline uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static inline uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static inline uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* LMDB's return codes as -errno. */
static inline int mdb_err(int rc)
{
	if (rc == 0)
		return 0;
	if (rc > 0 && rc < MDB_KEYEXIST)   /* a plain errno */
		return -rc;
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		return -ENOSPC;
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	return -EIO;
}

/* ---- shared by the files of the backend ------------------------------ */

/* local_records.c: inside an LMDB txn the caller holds (see its top comment) */

/** local_obj_decode - an object record's fields, and pointers to its namespace and name in @v.  0 or -EIO. */
int local_obj_decode(const MDB_val *v, struct objrec *rec, const char **ns, size_t *nslen,
		     const char **oid, size_t *oidlen);
/** local_obj_lookup - the record of @oid in @lp (rec->exists false: none).  0 or -errno. */
int local_obj_lookup(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid,
		     struct objrec *rec);
/** local_obj_put - write the record of @oid.  0 or -errno. */
int local_obj_put(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid,
		  const struct objrec *rec);
/** local_obj_del - delete the record of @oid (absent: 0).  0 or -errno. */
int local_obj_del(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid);
/** local_omap_put - set @key of object @fid's omap.  0 or -errno. */
int local_omap_put(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key, const void *val,
		   size_t vlen);
/** local_omap_lookup - @key of @fid's omap in *@e (pointers into the txn's pages).  0, -ENOENT or -errno. */
int local_omap_lookup(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key, struct oent *e);
/** local_omap_del - remove @key (absent: 0).  0 or -errno. */
int local_omap_del(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key);
/** local_omap_clear - remove every key of @fid's omap.  0 or -errno. */
int local_omap_clear(struct local_store *ls, MDB_txn *txn, uint64_t fid);
/** local_omap_rm_range - remove the keys in [@start, @end) (@end NULL: to the end).  0 or -errno. */
int local_omap_rm_range(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *start, const char *end);
/**
 * local_omap_list_txn - up to @max entries after @after with @prefix, in
 * bytewise key order, in a new array *@out (the caller frees it with
 * store_kv_free); *@more when entries were left.  0 or -errno.
 */
int local_omap_list_txn(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *after, const char *prefix,
			size_t max, struct store_kv **out, size_t *n, bool *more);

/* local_intent.c */

/** local_irecs_add - append a file effect to @rs (@data: FW_WRITE's bytes, not copied).  0 or -ENOMEM. */
int local_irecs_add(struct irecs *rs, enum fw_kind kind, uint64_t fid, uint64_t a, uint64_t b, const void *data);
/** local_intent_put - write @rs as intent @seq of this owner, in the worker's write txn.  0 or -errno. */
int local_intent_put(struct local_store *ls, MDB_txn *txn, uint64_t seq, const struct irecs *rs);
/**
 * local_intent_header - check an intent value's header.
 * Return: 0 with the owner (0 for version 1), the record count and the
 * offset of the first record, or -EIO.
 */
int local_intent_header(const MDB_val *v, uint64_t *owner, uint32_t *nrec, size_t *pos);
/** local_intent_next - decode the record at *@pos and advance it; 0 or -EIO. */
int local_intent_next(const MDB_val *v, size_t *pos, struct irec *r);

/* local_file.c: the worker thread only */

/** local_fid_name - the 16 hex digits (and NUL) naming object file @fid in @buf[17]. */
void local_fid_name(uint64_t fid, char *buf);
/** local_zero_range_sync - zero [@off, @off+@len) keeping the size (punch, or write zeros).  0 or -errno. */
int local_zero_range_sync(int fd, uint64_t off, uint64_t len);
/** local_file_maybe_release - close and forget @f once nothing refers to it. */
void local_file_maybe_release(struct local_store *ls, struct lfile *f);
/** local_file_mark_dirty - put @f on ls->dirty (the next checkpoint syncs it). */
void local_file_mark_dirty(struct local_store *ls, struct lfile *f);
/** local_file_kick - start the works at the head of @f's FIFO. */
void local_file_kick(struct local_store *ls, struct lfile *f);
/** local_get_sqe - an SQE of the worker's ring (submitting to make room). */
struct io_uring_sqe *local_get_sqe(struct local_store *ls);
/** local_req_free - free @req and return its budget (takes ls->lock briefly). */
void local_req_free(struct local_store *ls, struct lreq *req);
/** local_req_callback - run @req's callback with req->r, once. */
void local_req_callback(struct local_store *ls, struct lreq *req);
/** local_req_queue_works - after the commit: queue @req's planned works on their files (@req may be freed). */
void local_req_queue_works(struct local_store *ls, struct lreq *req);
/** local_plan_work - plan a file work of @req, queued after the commit.  0 or -ENOMEM. */
int local_plan_work(struct lreq *req, enum fw_kind kind, uint64_t fid, uint64_t off, uint64_t len, void *data);
/** local_drop_planned - forget @req's planned works (its batch failed). */
void local_drop_planned(struct lreq *req);
/** local_fwork_cqe - a file work's SQE completed with @res. */
void local_fwork_cqe(struct local_store *ls, struct fwork *w, int res);

/* local_ckpt.c: the worker thread only */

/** local_maybe_checkpoint - start a checkpoint when there are unsynced writes and it is time (or @force). */
void local_maybe_checkpoint(struct local_store *ls, bool force);
/** local_unblock_all - retry every file parked for want of a file descriptor. */
void local_unblock_all(struct local_store *ls);
/** local_fsync_cqe - a checkpoint fdatasync completed with @res. */
void local_fsync_cqe(struct local_store *ls, struct fsync_ctx *c, int res);

/* local_space.c */

/** local_space_refresh - statvfs the store's filesystem, update and log its space state.  Any thread. */
void local_space_refresh(struct local_store *ls);
/** local_space - the store_backend space op.  Any thread. */
int local_space(struct store *st, struct store_space *out);
/** local_op_growth - what @op may add to the filesystem (0: it frees or keeps space). */
uint64_t local_op_growth(const struct store_op *op);
/** local_batch_room_init - worker, at a write batch's start: the room it has up to the full ratio. */
void local_batch_room_init(struct local_store *ls);
/**
 * local_admit - worker: may @req take the space it needs (@inl: applied
 * inline)?  Reserves file space past nearfull.  0, -ENOSPC (nothing of the
 * op written) or -errno.
 */
int local_admit(struct local_store *ls, const struct lreq *req, const struct objrec *rec, bool inl);

/* local_inline.c: the worker thread, inside its write txn */

/** local_op_peak_size - the largest size @op gives the object, UINT64_MAX once past @limit. */
uint64_t local_op_peak_size(const struct store_op *op, bool exists, uint64_t size, uint64_t limit);
/** local_inline_key - the key of inline object @fid's bytes in @k[8]. */
void local_inline_key(unsigned char *k, uint64_t fid);
/** local_inline_take - a copy of inline object @rec's bytes in *@out (NULL for 0 bytes).  0 or -errno. */
int local_inline_take(struct local_store *ls, MDB_txn *txn, const struct objrec *rec, void **out);
/** local_inline_del - delete inline object @fid's bytes (absent: 0).  0 or -errno. */
int local_inline_del(struct local_store *ls, MDB_txn *txn, uint64_t fid);
/** local_exec_write_inline - apply @req's op to inline object @rec (@peak: local_op_peak_size); as exec_write. */
int local_exec_write_inline(struct local_store *ls, MDB_txn *txn, struct lreq *req, struct objrec *rec,
			    uint64_t peak, bool *fatal);

/* local_exec.c: the worker thread only */

/** local_run_batch - run @batch in one write (or read) txn, commit, call back, queue the file works. */
void local_run_batch(struct local_store *ls, struct lreq *batch);
/** local_fail_batch - nothing of @batch reached the disk: fail and free every request in it with @r. */
void local_fail_batch(struct local_store *ls, struct lreq *batch, int r);

/* local_fence.c */

/** local_fence_check - in a batch's write txn: is this instance fenced?  0 or -ESHUTDOWN. */
int local_fence_check(struct local_store *ls, MDB_txn *txn);
/* the store_backend fencing ops */
int local_instance_addr(struct store *st, char *buf, size_t len);
int local_blocklist_add(struct store *st, const char *addr, double expire_secs);
int local_blocklist_rm(struct store *st, const char *addr);

/* local_worker.c */

/** local_worker_main - the worker thread (pthread_create'd by local_open, stopped by local_close). */
void *local_worker_main(void *arg);
/* the store_backend request ops: any thread but the blocking ones never from a callback */
int local_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg);
int local_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
		      store_cb_t cb, void *arg);
int local_stat(struct store_pool *p, const char *oid, struct store_stat *st);
int local_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len);
int local_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
		    size_t max, struct store_kv **out, size_t *n, bool *more);
int local_list_objects(struct store_pool *p, char ***names, size_t *n);

/* local_share.c: every function runs in the worker thread, or in open/close around it */

/** local_share_open - store.lock, the owner id and its liveness lock.  0 or -errno (logged). */
int local_share_open(struct local_store *ls);
/**
 * local_share_owner - give this process an owner id (a counter in LMDB) and
 * hold its liveness lock.  Needs the LMDB environment.  0 or -errno (logged).
 */
int local_share_owner(struct local_store *ls);
/** local_share_close - drop this process' locks (closes store.lock). */
void local_share_close(struct local_store *ls);
/**
 * local_effects_acquire - take LOCK_EFFECTS (waiting for the process that
 * holds it), then redo what owners that died left unapplied.  Needed before
 * a batch with file effects or file reads.  0 or -errno (logged).
 */
int local_effects_acquire(struct local_store *ls);
/** local_effects_release - let LOCK_EFFECTS go; nothing of ours may be in flight on the files. */
void local_effects_release(struct local_store *ls);
/**
 * local_share_retire - after a file effect failed: stop being a live owner
 * (drop the liveness lock, and LOCK_EFFECTS if held), so the next process to
 * take the effects lock redoes our intents.  Nothing of ours may be in flight.
 */
void local_share_retire(struct local_store *ls);
/** local_effects_contended - another process waits for LOCK_EFFECTS (we hold it). */
bool local_effects_contended(struct local_store *ls);
/**
 * local_txn_begin_shared - in a write txn, before its ops: read the shared
 * counters and delete the intents every owner has synced.  0 or -errno.
 */
int local_txn_begin_shared(struct local_store *ls, MDB_txn *txn);
/**
 * local_txn_end_shared - in the same txn, before its commit: our owners
 * record (lowered to @first_seq when the txn wrote intents, 0: none) and
 * the counters.  *@lowest gets what ls->my_lowest becomes once it commits.
 */
int local_txn_end_shared(struct local_store *ls, MDB_txn *txn, uint64_t first_seq, uint64_t *lowest);
/** local_txn_committed_shared - the txn of local_txn_end_shared() committed with @lowest. */
void local_txn_committed_shared(struct local_store *ls, uint64_t lowest);
/**
 * local_redo_all - redo every intent in the store (format 1, single
 * process) and drop them, with LOCK_EFFECTS held.  0 or -errno.
 */
int local_redo_all(struct local_store *ls);
/**
 * local_upgrade_v2 - move a format-2 store to format 3 (inline objects),
 * only while no other process has it open (a running format-2 build would
 * read an inline object as zeros and lose it at its first write).  Nothing
 * else changes on disk.  Waits up to 5 s for processes opening it at the
 * same time; -EBUSY, with a message, if others keep it open.
 */
int local_upgrade_v2(struct local_store *ls);

/* local_check.c */

/**
 * local_check_dir - before LMDB maps anything: refuse a store directory
 * whose files are damaged or of another format (one message naming the
 * file and what to do), tell a fresh directory from an existing store.
 * Return: 0 (*@fresh set when there is no store yet), -EUCLEAN (damaged),
 * -ENOENT (not a store and !@create), other -errno.
 */
int local_check_dir(struct local_store *ls, bool create, bool *fresh);

#endif
