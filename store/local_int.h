/*
 * local_int.h - private to store/local*.c: the state of one open local
 * store and the helpers its files share.
 *
 *   local.c        the worker: batches, the LMDB write transaction, file
 *                  effects through io_uring, checkpoints
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

/* local.c */
void local_fid_name(uint64_t fid, char *buf);
int local_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int local_zero_range_sync(int fd, uint64_t off, uint64_t len);

/**
 * local_intent_header - check an intent value's header.
 * Return: 0 with the owner (0 for version 1), the record count and the
 * offset of the first record, or -EIO.
 */
int local_intent_header(const MDB_val *v, uint64_t *owner, uint32_t *nrec, size_t *pos);
/** local_intent_next - decode the record at *@pos and advance it; 0 or -EIO. */
int local_intent_next(const MDB_val *v, size_t *pos, struct irec *r);

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
