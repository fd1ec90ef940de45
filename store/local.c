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
 * comment.  This file is one process' half: its worker, batches and
 * checkpoints.  local_check.c refuses damaged directories before LMDB maps
 * them.  The on-disk format is in local_int.h.
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

#define OMAP_INLINE 480               /* longer omap keys: first 480 bytes + hash */
#define OBJ_INLINE 480                /* longer ns+oid: hash */
#define HASH_LEN 8
#define BATCH_MAX_REQS 512
#define BATCH_MAX_BYTES (32u << 20)
#define INFLIGHT_BUDGET (64ull << 20)
#define CKPT_INTERVAL_NS (100ull * 1000 * 1000)
#define CKPT_BYTES (16ull << 20)
#define RING_ENTRIES 256
#define EFFECTS_SLICE_NS (4ull * 1000 * 1000)   /* the effects lock is kept this long before a waiter gets it */
#define DEFAULT_MAP_SIZE (64ull << 30)

/* ---- small helpers -------------------------------------------------- */

static uint64_t fnv64(uint64_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

/* ---- structures ----------------------------------------------------- */

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
 * list.  file_maybe_release() frees it and closes the fd once all of those
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

/* ---- object table --------------------------------------------------- */

struct objrec {
	bool exists;
	bool inl;                    /* OBJ_F_INLINE: the bytes are in ls->db_inline */
	bool alloc;                  /* OBJ_F_ALLOC: the file has blocks for every byte up to size */
	uint64_t fid;
	uint64_t size;
	uint64_t mtime_ns;
};

#define OBJ_EKEY_MAX (4 + 2 + OBJ_INLINE)
#define OBJREC_HDR 36

static size_t obj_ekey(const struct local_pool *lp, const char *oid, unsigned char *out)
{
	size_t nl = strlen(lp->ns), ol = strlen(oid);

	put_be32(out, lp->id);
	if (nl + 1 + ol <= OBJ_INLINE) {
		out[4] = 0;
		memcpy(out + 5, lp->ns, nl);
		out[5 + nl] = 0;
		memcpy(out + 6 + nl, oid, ol);
		return 6 + nl + ol;
	}
	uint64_t h = fnv64(FNV_INIT, lp->ns, nl + 1);
	h = fnv64(h, oid, ol);
	out[4] = 1;
	put_be64(out + 5, h);
	return 13;
}

/* Record value: u8 version, u8 flags (OBJ_F_*), 2 pad, u32 nslen, u64 fid, u64 size, u64 mtime,
 * u32 oidlen, ns, oid. */
static int obj_decode(const MDB_val *v, struct objrec *rec, const char **ns, size_t *nslen,
		      const char **oid, size_t *oidlen)
{
	const unsigned char *p = v->mv_data;
	size_t nl, ol;

	if (v->mv_size < OBJREC_HDR || p[0] != 1)
		return -EIO;
	nl = get_le32(p + 4);
	ol = get_le32(p + 32);
	if (v->mv_size != OBJREC_HDR + nl + ol)
		return -EIO;
	rec->exists = true;
	rec->inl = p[1] & OBJ_F_INLINE;
	rec->alloc = (p[1] & OBJ_F_ALLOC) && !rec->inl;
	rec->fid = get_le64(p + 8);
	rec->size = get_le64(p + 16);
	rec->mtime_ns = get_le64(p + 24);
	*ns = (const char *)p + OBJREC_HDR;
	*nslen = nl;
	*oid = (const char *)p + OBJREC_HDR + nl;
	*oidlen = ol;
	return 0;
}

static int obj_lookup(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid,
		      struct objrec *rec)
{
	unsigned char k[OBJ_EKEY_MAX];
	MDB_val key = { obj_ekey(lp, oid, k), k }, val;
	const char *ns, *o;
	size_t nl, ol;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rc = mdb_get(txn, ls->db_objs, &key, &val);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return mdb_err(rc);
	if (obj_decode(&val, rec, &ns, &nl, &o, &ol)) {
		derr(STORE, "local store %s: corrupt object record for '%s'", ls->path, oid);
		return -EIO;
	}
	if (nl != strlen(lp->ns) || memcmp(ns, lp->ns, nl) || ol != strlen(oid) || memcmp(o, oid, ol)) {
		derr(STORE, "local store %s: object key hash collision for '%s'", ls->path, oid);
		return -EIO;
	}
	return 0;
}

static int obj_put(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid,
		   const struct objrec *rec)
{
	unsigned char k[OBJ_EKEY_MAX];
	size_t nl = strlen(lp->ns), ol = strlen(oid);
	MDB_val key = { obj_ekey(lp, oid, k), k }, val = { OBJREC_HDR + nl + ol, NULL };
	unsigned char *p;
	int rc = mdb_put(txn, ls->db_objs, &key, &val, MDB_RESERVE);

	if (rc)
		return mdb_err(rc);
	p = val.mv_data;
	memset(p, 0, OBJREC_HDR);
	p[0] = 1;
	p[1] = rec->inl ? OBJ_F_INLINE : (rec->alloc ? OBJ_F_ALLOC : 0);
	put_le32(p + 4, (uint32_t)nl);
	put_le64(p + 8, rec->fid);
	put_le64(p + 16, rec->size);
	put_le64(p + 24, rec->mtime_ns);
	put_le32(p + 32, (uint32_t)ol);
	memcpy(p + OBJREC_HDR, lp->ns, nl);
	memcpy(p + OBJREC_HDR + nl, oid, ol);
	return 0;
}

static int obj_del(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid)
{
	unsigned char k[OBJ_EKEY_MAX];
	MDB_val key = { obj_ekey(lp, oid, k), k };
	int rc = mdb_del(txn, ls->db_objs, &key, NULL);
	return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

/* ---- omap ----------------------------------------------------------- */

#define OMAP_EKEY_MAX (8 + OMAP_INLINE + HASH_LEN)

static size_t omap_ekey(uint64_t fid, const char *k, size_t klen, unsigned char *out)
{
	put_be64(out, fid);
	if (klen <= OMAP_INLINE) {
		memcpy(out + 8, k, klen);
		return 8 + klen;
	}
	memcpy(out + 8, k, OMAP_INLINE);
	put_be64(out + 8 + OMAP_INLINE, fnv64(FNV_INIT, k, klen));
	return OMAP_EKEY_MAX;
}

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

static int oent_decode(const MDB_val *k, const MDB_val *v, struct oent *e)
{
	e->ek = *k;
	e->ep = (const char *)k->mv_data + 8;
	if (k->mv_size != OMAP_EKEY_MAX) {
		e->eplen = k->mv_size - 8;
		e->key = e->ep;
		e->klen = e->eplen;
		e->val = v->mv_data;
		e->vlen = v->mv_size;
		return 0;
	}
	e->eplen = OMAP_INLINE;
	if (v->mv_size < 4)
		return -EIO;
	e->klen = get_le32(v->mv_data);
	if (e->klen > v->mv_size - 4 || e->klen <= OMAP_INLINE)
		return -EIO;
	e->key = (const char *)v->mv_data + 4;
	e->val = (const char *)v->mv_data + 4 + e->klen;
	e->vlen = v->mv_size - 4 - e->klen;
	return 0;
}

static int oent_cmp(const void *a, const void *b)
{
	const struct oent *x = a, *y = b;
	return store_keycmp(x->key, x->klen, y->key, y->klen);
}

/* Iterates one object's omap in full-key order from a seek position. */
struct omap_it {
	MDB_cursor *cur;
	uint64_t fid;
	bool valid;                  /* cur is on an entry not consumed yet */
	MDB_val ck, cv;
	struct oent *run;
	size_t nrun, irun, caprun;
};

static bool it_in_obj(const struct omap_it *it)
{
	return it->ck.mv_size >= 8 && get_be64(it->ck.mv_data) == it->fid;
}

static int it_step(struct omap_it *it, MDB_cursor_op op)
{
	int rc = mdb_cursor_get(it->cur, &it->ck, &it->cv, op);

	if (rc == MDB_NOTFOUND) {
		it->valid = false;
		return 0;
	}
	if (rc)
		return mdb_err(rc);
	it->valid = it_in_obj(it);
	return 0;
}

static int it_open(struct omap_it *it, MDB_txn *txn, MDB_dbi dbi, uint64_t fid, const char *seek)
{
	unsigned char k[OMAP_EKEY_MAX];
	size_t sl = seek ? strlen(seek) : 0;
	int rc;

	memset(it, 0, sizeof(*it));
	it->fid = fid;
	rc = mdb_cursor_open(txn, dbi, &it->cur);
	if (rc)
		return mdb_err(rc);
	/* seek to fid + the first OMAP_INLINE bytes: every entry before it sorts before @seek */
	put_be64(k, fid);
	if (sl > OMAP_INLINE)
		sl = OMAP_INLINE;
	memcpy(k + 8, seek ? seek : "", sl);
	it->ck.mv_data = k;
	it->ck.mv_size = 8 + sl;
	return it_step(it, MDB_SET_RANGE);
}

static void it_close(struct omap_it *it)
{
	if (it->cur)
		mdb_cursor_close(it->cur);
	free(it->run);
	it->cur = NULL;
	it->run = NULL;
}

/* Return 1 with the next entry in *e, 0 at the end, -errno. */
static int it_next(struct omap_it *it, struct oent *e)
{
	int r;

	if (it->irun < it->nrun) {
		*e = it->run[it->irun++];
		return 1;
	}
	if (!it->valid)
		return 0;
	if ((r = oent_decode(&it->ck, &it->cv, e)))
		return r;
	if (it->ck.mv_size != OMAP_EKEY_MAX) {
		if ((r = it_step(it, MDB_NEXT)))
			return r;
		return 1;
	}
	/* a run of long keys sharing their first OMAP_INLINE bytes: sort it by full key */
	it->nrun = it->irun = 0;
	for (;;) {
		if (it->nrun == it->caprun) {
			size_t cap = it->caprun ? it->caprun * 2 : 8;
			struct oent *v = realloc(it->run, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			it->run = v;
			it->caprun = cap;
		}
		if ((r = oent_decode(&it->ck, &it->cv, &it->run[it->nrun])))
			return r;
		it->nrun++;
		if ((r = it_step(it, MDB_NEXT)))
			return r;
		if (!it->valid || it->ck.mv_size != OMAP_EKEY_MAX ||
		    memcmp((char *)it->ck.mv_data + 8, it->run[0].ep, OMAP_INLINE) != 0)
			break;
	}
	qsort(it->run, it->nrun, sizeof(*it->run), oent_cmp);
	*e = it->run[it->irun++];
	return 1;
}

static int omap_put(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key, const void *val,
		    size_t vlen)
{
	unsigned char k[OMAP_EKEY_MAX];
	size_t klen = strlen(key);
	MDB_val ek = { omap_ekey(fid, key, klen, k), k }, v;
	int rc;

	if (klen <= OMAP_INLINE) {
		v.mv_size = vlen;
		v.mv_data = (void *)(vlen ? val : "");
		return mdb_err(mdb_put(txn, ls->db_omap, &ek, &v, 0));
	}
	v.mv_size = 4 + klen + vlen;
	rc = mdb_put(txn, ls->db_omap, &ek, &v, MDB_RESERVE);
	if (rc)
		return mdb_err(rc);
	put_le32(v.mv_data, (uint32_t)klen);
	memcpy((char *)v.mv_data + 4, key, klen);
	if (vlen)
		memcpy((char *)v.mv_data + 4 + klen, val, vlen);
	return 0;
}

static int omap_lookup(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key, struct oent *e)
{
	unsigned char k[OMAP_EKEY_MAX];
	size_t klen = strlen(key);
	MDB_val ek = { omap_ekey(fid, key, klen, k), k }, v;
	int rc = mdb_get(txn, ls->db_omap, &ek, &v);

	if (rc)
		return mdb_err(rc);
	ek.mv_data = k;   /* oent_decode only reads the size and the ep pointer: stack is fine here */
	if (oent_decode(&ek, &v, e))
		return -EIO;
	if (store_keycmp(e->key, e->klen, key, klen) != 0)
		return -ENOENT;   /* another long key with the same hash: ours is not there */
	return 0;
}

static int omap_del(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key)
{
	unsigned char k[OMAP_EKEY_MAX];
	size_t klen = strlen(key);
	MDB_val ek = { omap_ekey(fid, key, klen, k), k };
	struct oent e;
	int r = omap_lookup(ls, txn, fid, key, &e);

	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	return mdb_err(mdb_del(txn, ls->db_omap, &ek, NULL));
}

static int omap_clear(struct local_store *ls, MDB_txn *txn, uint64_t fid)
{
	unsigned char k[8];
	MDB_cursor *cur;
	MDB_val key = { 8, k }, val;
	int rc;

	put_be64(k, fid);
	rc = mdb_cursor_open(txn, ls->db_omap, &cur);
	if (rc)
		return mdb_err(rc);
	rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
	while (rc == 0 && key.mv_size >= 8 && get_be64(key.mv_data) == fid) {
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
		rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

/* Delete keys in [start, end); end NULL: to the end. */
static int omap_rm_range(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *start, const char *end)
{
	struct omap_it it;
	struct oent e;
	MDB_val *del = NULL;
	size_t ndel = 0, cap = 0, sl = strlen(start), el = end ? strlen(end) : 0;
	int r;

	r = it_open(&it, txn, ls->db_omap, fid, start);
	while (r == 0 && (r = it_next(&it, &e)) == 1) {
		r = 0;
		if (end && store_keycmp(e.ep, e.eplen, end, el) >= 0)
			break;   /* every later entry sorts after end too */
		if (store_keycmp(e.key, e.klen, start, sl) < 0)
			continue;
		if (end && store_keycmp(e.key, e.klen, end, el) >= 0)
			continue;
		if (ndel == cap) {
			cap = cap ? cap * 2 : 16;
			MDB_val *v = realloc(del, cap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			del = v;
		}
		del[ndel].mv_size = e.ek.mv_size;
		del[ndel].mv_data = malloc(e.ek.mv_size);
		if (!del[ndel].mv_data) {
			r = -ENOMEM;
			break;
		}
		memcpy(del[ndel].mv_data, e.ek.mv_data, e.ek.mv_size);
		ndel++;
	}
	it_close(&it);
	for (size_t i = 0; i < ndel; i++) {
		if (r == 0)
			r = mdb_err(mdb_del(txn, ls->db_omap, &del[i], NULL));
		free(del[i].mv_data);
	}
	free(del);
	return r;
}

static bool has_prefix(const char *k, size_t klen, const char *p, size_t plen)
{
	return klen >= plen && memcmp(k, p, plen) == 0;
}

static int omap_list(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *after, const char *prefix,
		     size_t max, struct store_kv **out, size_t *n, bool *more)
{
	size_t al = after ? strlen(after) : 0, pl = prefix ? strlen(prefix) : 0;
	size_t ppl = pl > OMAP_INLINE ? OMAP_INLINE : pl;   /* the part of the prefix an ep can show */
	const char *seek = "";
	struct store_kv *kv = NULL;
	size_t cnt = 0, cap = 0;
	struct omap_it it;
	struct oent e;
	int r;

	if (after && (!prefix || store_keycmp(after, al, prefix, pl) > 0))
		seek = after;
	else if (prefix)
		seek = prefix;
	r = it_open(&it, txn, ls->db_omap, fid, seek);
	while (r == 0 && (r = it_next(&it, &e)) == 1) {
		r = 0;
		if (prefix && !has_prefix(e.ep, e.eplen, prefix, ppl)) {
			if (store_keycmp(e.ep, e.eplen, prefix, ppl) > 0)
				break;   /* past every key that can carry the prefix */
			continue;
		}
		if (after && store_keycmp(e.key, e.klen, after, al) <= 0)
			continue;
		if (prefix && !has_prefix(e.key, e.klen, prefix, pl))
			continue;
		if (cnt == max) {
			*more = true;
			break;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			struct store_kv *v = realloc(kv, cap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			kv = v;
		}
		kv[cnt].key = strndup(e.key, e.klen);
		kv[cnt].val = malloc(e.vlen ? e.vlen : 1);
		kv[cnt].len = e.vlen;
		if (!kv[cnt].key || !kv[cnt].val) {
			free(kv[cnt].key);
			free(kv[cnt].val);
			r = -ENOMEM;
			break;
		}
		memcpy(kv[cnt].val, e.val, e.vlen);
		cnt++;
	}
	it_close(&it);
	if (r < 0) {
		store_kv_free(kv, cnt);
		*more = false;
		return r;
	}
	*out = kv;
	*n = cnt;
	return 0;
}

/* ---- intents (the redo log) ----------------------------------------- */

/* The format of an intent is in local_int.h. */

struct irecs {
	struct irec *v;
	size_t n, cap;
	size_t bytes;
	size_t persisted;            /* records that go into the intent (all but FW_ALLOC) */
};

static int irecs_add(struct irecs *rs, enum fw_kind kind, uint64_t fid, uint64_t a, uint64_t b, const void *data)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 4;
		struct irec *v = realloc(rs->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = (struct irec){ kind, fid, a, b, data };
	if (kind != FW_ALLOC) {
		rs->bytes += IREC_HDR + (kind == FW_WRITE ? b : 0);
		rs->persisted++;
	}
	return 0;
}

static int intent_put(struct local_store *ls, MDB_txn *txn, uint64_t seq, const struct irecs *rs)
{
	unsigned char k[8], *p;
	MDB_val key = { 8, k }, val = { INTENT_HDR + rs->bytes, NULL };
	int rc;

	put_be64(k, seq);
	rc = mdb_put(txn, ls->db_intents, &key, &val, MDB_RESERVE | MDB_APPEND);
	if (rc)
		return mdb_err(rc);
	p = val.mv_data;
	memset(p, 0, INTENT_HDR);
	p[0] = 2;
	put_le32(p + 4, (uint32_t)rs->persisted);
	put_le64(p + 8, ls->owner);
	p += INTENT_HDR;
	for (size_t i = 0; i < rs->n; i++) {
		const struct irec *r = &rs->v[i];
		if (r->kind == FW_ALLOC)
			continue;
		memset(p, 0, 8);
		p[0] = (unsigned char)r->kind;
		put_le64(p + 8, r->fid);
		put_le64(p + 16, r->a);
		put_le64(p + 24, r->b);
		p += IREC_HDR;
		if (r->kind == FW_WRITE) {
			memcpy(p, r->data, r->b);
			p += r->b;
		}
	}
	return 0;
}

int local_intent_header(const MDB_val *v, uint64_t *owner, uint32_t *nrec, size_t *pos)
{
	const unsigned char *p = v->mv_data;

	if (v->mv_size < INTENT_HDR_V1 || (p[0] != 1 && p[0] != 2))
		return -EIO;
	*nrec = get_le32(p + 4);
	*owner = 0;
	*pos = INTENT_HDR_V1;
	if (p[0] == 2) {
		if (v->mv_size < INTENT_HDR)
			return -EIO;
		*owner = get_le64(p + 8);
		*pos = INTENT_HDR;
	}
	return 0;
}

int local_intent_next(const MDB_val *v, size_t *pos, struct irec *r)
{
	const unsigned char *p = (const unsigned char *)v->mv_data + *pos;

	if (v->mv_size - *pos < IREC_HDR)
		return -EIO;
	r->kind = p[0];
	r->fid = get_le64(p + 8);
	r->a = get_le64(p + 16);
	r->b = get_le64(p + 24);
	r->data = p + IREC_HDR;
	*pos += IREC_HDR;
	if (r->kind > FW_UNLINK)
		return -EIO;
	if (r->kind == FW_WRITE) {
		if (r->b > v->mv_size - *pos)
			return -EIO;
		*pos += r->b;
	}
	return 0;
}

/* ---- files ---------------------------------------------------------- */

void local_fid_name(uint64_t fid, char *buf)
{
	snprintf(buf, 17, "%016" PRIx64, fid);
}

int local_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Zero [off, off+len) keeping the size: punch a hole, or write zeros where that is not supported. */
int local_zero_range_sync(int fd, uint64_t off, uint64_t len)
{
	static const char zeros[65536];

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		int r = local_pwrite_all(fd, zeros, n, off);
		if (r)
			return r;
		off += n;
		len -= n;
	}
	return 0;
}

static struct lfile *file_get(struct local_store *ls, uint64_t fid)
{
	size_t h = (size_t)(fid * 0x9e3779b97f4a7c15ull) & ls->ftab_mask;
	struct lfile *f;

	for (f = ls->ftab[h]; f; f = f->hnext)
		if (f->fid == fid)
			return f;
	if (ls->nfiles >= ls->ftab_mask + 1) {
		/* grow the table (x2) */
		size_t nsize = (ls->ftab_mask + 1) * 2;
		struct lfile **nt = calloc(nsize, sizeof(*nt));
		if (nt) {
			for (size_t i = 0; i <= ls->ftab_mask; i++) {
				while ((f = ls->ftab[i])) {
					ls->ftab[i] = f->hnext;
					size_t nh = (size_t)(f->fid * 0x9e3779b97f4a7c15ull) & (nsize - 1);
					f->hnext = nt[nh];
					nt[nh] = f;
				}
			}
			free(ls->ftab);
			ls->ftab = nt;
			ls->ftab_mask = nsize - 1;
			h = (size_t)(fid * 0x9e3779b97f4a7c15ull) & ls->ftab_mask;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fid = fid;
	f->fd = -1;
	f->hnext = ls->ftab[h];
	ls->ftab[h] = f;
	ls->nfiles++;
	return f;
}

/* Close and forget @f when nothing refers to it any more. */
static void file_maybe_release(struct local_store *ls, struct lfile *f)
{
	struct lfile **pp;

	if (f->head || f->busy || f->dirty || f->fsyncing || f->blocked)
		return;
	pp = &ls->ftab[(size_t)(f->fid * 0x9e3779b97f4a7c15ull) & ls->ftab_mask];
	while (*pp != f)
		pp = &(*pp)->hnext;
	*pp = f->hnext;
	ls->nfiles--;
	if (f->fd >= 0) {
		close(f->fd);
		ls->open_fds--;
	}
	free(f);
}

/* Close @f's fd now if no SQE on it is in flight; else file_maybe_release() closes it later. */
static void file_close_fd(struct local_store *ls, struct lfile *f)
{
	if (f->fd < 0 || f->busy || f->fsyncing)
		return;
	close(f->fd);
	f->fd = -1;
	ls->open_fds--;
}

static int file_open(struct local_store *ls, struct lfile *f, bool create)
{
	char name[17];
	int fd;

	if (f->unlinked)
		return -ENOENT;   /* fids are never reused: only a read can get here (zeros) */
	if (f->fd >= 0 && (f->rw || !create))
		return 0;
	if (f->fd < 0 && ls->open_fds >= ls->max_fds)
		return -EMFILE;   /* our own cap: wait for a checkpoint to close files */
	local_fid_name(f->fid, name);
	if (create) {
		fd = openat(ls->objfd, name, O_RDWR | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			fd = openat(ls->objfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
			ls->dir_dirty = true;   /* a new directory entry: the checkpoint syncs objects/ */
		}
	} else {
		fd = openat(ls->objfd, name, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (f->fd >= 0) {
		/* read-only -> read-write, at the head of the FIFO (not busy); only a
		 * written, so read-write, file is ever fsynced */
		assert(!f->busy && !f->fsyncing);
		close(f->fd);
	} else {
		ls->open_fds++;
	}
	f->fd = fd;
	f->rw = create;
	return 0;
}

static void file_mark_dirty(struct local_store *ls, struct lfile *f)
{
	if (!f->dirty) {
		f->dirty = true;
		f->dnext = ls->dirty;
		ls->dirty = f;
	}
}

static struct io_uring_sqe *get_sqe(struct local_store *ls)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&ls->ring)))
		io_uring_submit(&ls->ring);
	return sqe;
}

/* ---- request completion --------------------------------------------- */

static void budget_return(struct local_store *ls, size_t charge)
{
	pthread_mutex_lock(&ls->lock);
	ls->budget -= charge;
	pthread_cond_broadcast(&ls->space);
	pthread_mutex_unlock(&ls->lock);
}

static void req_free(struct local_store *ls, struct lreq *req)
{
	struct fwork *w, *n;

	for (w = req->fw_head; w; w = n) {   /* planned but never queued (failed batch) */
		n = w->next;
		free(w);
	}
	budget_return(ls, req->charge);
	store_op_free(req->op);
	free(req->spill);
	free(req->oid);
	free(req);
	ls->busy_reqs--;
}

static void req_callback(struct local_store *ls, struct lreq *req)
{
	if (!req->cb_done) {
		if (req->kind == LR_WRITE && req->r == 0)
			hist_add(&ls->h_write, now_mono_ns() - req->t0);
		req->cb_done = true;
		req->cb(req->r, req->arg);
	}
}

/* Pop finished write requests off the FIFO head: their intents are applied. */
static void fifo_advance(struct local_store *ls)
{
	struct lreq *req;

	while ((req = ls->fifo_head) && req->finished && req->cb_done) {
		ls->fifo_head = req->fnext;
		if (!ls->fifo_head)
			ls->fifo_tail = NULL;
		ls->applied_upto = req->seq;
		if (ls->ckpt_landed_first == UINT64_MAX)
			ls->ckpt_landed_first = req->seq;   /* the running checkpoint does not cover it */
		req_free(ls, req);
	}
}

/* Every file work of @req is done. */
static void req_works_done(struct local_store *ls, struct lreq *req)
{
	req->finished = true;
	ls->works_reqs--;
	if (req->kind == LR_READ) {
		req_callback(ls, req);
		req_free(ls, req);
	} else if (req->seq) {
		fifo_advance(ls);
	} else if (req->cb_done) {
		req_free(ls, req);
	}
}

static void fwork_done(struct local_store *ls, struct fwork *w, int r)
{
	struct lfile *f = w->f;
	struct lreq *req = w->req;

	assert(f->head == w);
	f->head = w->next;
	if (!f->head)
		f->tail = NULL;
	if (w->kind == FW_WRITE)
		ls->unlanded -= w->len;
	if (r < 0) {
		if (w->kind == FW_READ) {
			req->r = r;
		} else if (w->kind == FW_ALLOC) {
			/* the data is whole; only the promise of space is weaker
			 * (the next write's admission reserves again, or says ENOSPC) */
			derr(STORE, "local store %s: reserving space in objects/%016" PRIx64 " again after the "
			     "effects before it: %s", ls->path, w->fid, strerror(-r));
		} else {
			int expected = 0;
			derr(STORE, "local store %s: applying a committed write to objects/%016" PRIx64
			     " failed: %s; the store is now read-only, reopen it to replay",
			     ls->path, w->fid, strerror(-r));
			atomic_compare_exchange_strong(&ls->broken, &expected, -EIO);
		}
	}
	free(w);
	if (--req->pending == 0)
		req_works_done(ls, req);
}

/*
 * Out of file descriptors (our cap or the process'): park @f, its work stays
 * queued, and have a checkpoint run so synced files can be closed.
 */
static bool fd_starved(struct local_store *ls, struct lfile *f, int r)
{
	if (r != -EMFILE && r != -ENFILE)
		return false;
	if (!f->blocked) {
		f->blocked = true;
		f->bnext = ls->blocked;
		ls->blocked = f;
	}
	return true;
}

/* Start the work at the head of @f (synchronous ones run right here). */
static void file_kick(struct local_store *ls, struct lfile *f)
{
	struct io_uring_sqe *sqe;
	struct fwork *w;
	int r;

	while ((w = f->head) && !f->busy && !f->blocked) {
		switch (w->kind) {
		case FW_TRUNC:
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r == 0 && ftruncate(f->fd, (off_t)w->off) < 0)
				r = -errno;
			file_mark_dirty(ls, f);
			fwork_done(ls, w, r);
			continue;
		case FW_UNLINK: {
			char name[17];
			/* a checkpoint fsync may still be in flight on the fd: it stays open until that
			 * completes (file_maybe_release); the data is gone, later checkpoints skip it */
			f->unlinked = true;
			file_close_fd(ls, f);
			local_fid_name(f->fid, name);
			r = unlinkat(ls->objfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
			ls->dir_dirty = true;
			fwork_done(ls, w, r);
			continue;
		}
		case FW_READ:
			if (atomic_load(&ls->broken)) {
				/* a committed effect failed: this file may lack it (a failed write
				 * precedes this read in its FIFO); reads of object data fail now */
				fwork_done(ls, w, -EIO);
				continue;
			}
			r = file_open(ls, f, false);
			if (fd_starved(ls, f, r))
				return;
			if (r == -ENOENT) {   /* no data written yet: all zeros */
				memset(w->data, 0, w->len);
				fwork_done(ls, w, 0);
				continue;
			}
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			sqe = get_sqe(ls);
			io_uring_prep_read(sqe, f->fd, w->data + w->done, (unsigned)(w->len - w->done), w->off + w->done);
			break;
		case FW_WRITE:
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r == 0 && ls->test_fail_apply && --ls->test_fail_apply == 0)
				r = -EIO;   /* test hook: as if the disk failed this write */
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			file_mark_dirty(ls, f);
			sqe = get_sqe(ls);
			io_uring_prep_write(sqe, f->fd, w->data + w->done, (unsigned)(w->len - w->done), w->off + w->done);
			break;
		case FW_ZERO:
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			file_mark_dirty(ls, f);
			sqe = get_sqe(ls);
			io_uring_prep_fallocate(sqe, f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						(off_t)w->off, (off_t)w->len);
			break;
		case FW_ALLOC:
			/* in order after the effects before it (a punch or truncate
			 * queued earlier would free what admit() reserved) */
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			file_mark_dirty(ls, f);
			sqe = get_sqe(ls);
			io_uring_prep_fallocate(sqe, f->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->off, (off_t)w->len);
			break;
		default:
			abort();
		}
		io_uring_sqe_set_data(sqe, &w->u);
		f->busy = true;
	}
	file_maybe_release(ls, f);
}

static void fwork_cqe(struct local_store *ls, struct fwork *w, int res)
{
	struct lfile *f = w->f;

	f->busy = false;
	if (res == -EINTR || res == -EAGAIN) {
		file_kick(ls, f);   /* retry as is */
		return;
	}
	switch (w->kind) {
	case FW_READ:
		if (res < 0)
			break;
		if (res == 0) {   /* the file is shorter than the object: the rest is a hole */
			memset(w->data + w->done, 0, w->len - w->done);
			w->done = w->len;
		} else {
			lg_uring_mark_defined(w->data + w->done, (size_t)res);
			w->done += (uint64_t)res;
		}
		if (w->done < w->len) {
			file_kick(ls, f);
			return;
		}
		res = 0;
		break;
	case FW_WRITE:
		if (res < 0)
			break;
		w->done += (uint64_t)res;
		if (res > 0 && w->done < w->len) {
			file_kick(ls, f);
			return;
		}
		res = w->done < w->len ? -EIO : 0;
		break;
	case FW_ZERO:
		if (res == -EOPNOTSUPP)
			res = local_zero_range_sync(f->fd, w->off, w->len);
		break;
	case FW_ALLOC:
		if (res == -EOPNOTSUPP)
			res = 0;   /* a filesystem without fallocate: nothing could be reserved before either */
		break;
	default:
		break;
	}
	fwork_done(ls, w, res);
	file_kick(ls, f);
}

/* Queue the planned works of @req on their files (after the commit). */
static void req_queue_works(struct local_store *ls, struct lreq *req)
{
	struct fwork *w = req->fw_head, *n;

	/* @req may be freed by the last work completing synchronously: do not touch it after */
	req->fw_head = req->fw_tail = NULL;
	ls->works_reqs++;   /* LOCK_EFFECTS is held until it is done */
	for (; w; w = n) {
		n = w->next;
		w->next = NULL;
		w->f = file_get(ls, w->fid);
		if (!w->f) {
			/* cannot even track the file: treat as a failed effect */
			derr(STORE, "local store %s: out of memory applying a write", ls->path);
			atomic_store(&ls->broken, -EIO);
			free(w);
			if (--req->pending == 0)
				req_works_done(ls, req);
			continue;
		}
		if (w->f->tail)
			w->f->tail->next = w;
		else
			w->f->head = w;
		w->f->tail = w;
		if (w->kind == FW_WRITE) {
			ls->bytes_since_ckpt += w->len;
			ls->unlanded += w->len;
		}
		file_kick(ls, w->f);
	}
}

static int plan_work(struct lreq *req, enum fw_kind kind, uint64_t fid, uint64_t off, uint64_t len, void *data)
{
	struct fwork *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->u.kind = U_FWORK;
	w->kind = kind;
	w->fid = fid;
	w->req = req;
	w->off = off;
	w->len = len;
	w->data = data;
	if (req->fw_tail)
		req->fw_tail->next = w;
	else
		req->fw_head = w;
	req->fw_tail = w;
	req->pending++;
	return 0;
}

static void drop_planned(struct lreq *req)
{
	struct fwork *w, *n;

	for (w = req->fw_head; w; w = n) {
		n = w->next;
		free(w);
	}
	req->fw_head = req->fw_tail = NULL;
	req->pending = 0;
}

/* ---- checkpoints ---------------------------------------------------- */

/* Retry every parked file (after a checkpoint closed files, or a timer). */
static void unblock_all(struct local_store *ls)
{
	struct lfile *f, *list = ls->blocked;

	ls->blocked = NULL;
	ls->blocked_retry_ns = now_mono_ns();
	while ((f = list)) {
		list = f->bnext;
		f->blocked = false;
		file_kick(ls, f);   /* may park it again */
	}
}

/* A checkpoint finished: every intent of ours that landed before it began is synced. */
static void ckpt_covered(struct local_store *ls)
{
	uint64_t low = ls->ckpt_landed_first;

	if (low == UINT64_MAX && ls->fifo_head)
		low = ls->fifo_head->seq;
	ls->my_lowest = low;   /* the next write txn writes it to our owners record */
}

static void ckpt_start(struct local_store *ls)
{
	struct io_uring_sqe *sqe;
	struct lfile *f, *retry = NULL;
	struct fsync_ctx *c;

	ls->ckpt_landed_first = UINT64_MAX;
	ls->ckpt_err = 0;
	ls->ckpt_incomplete = false;
	ls->ckpt_last_ns = now_mono_ns();
	ls->bytes_since_ckpt = 0;
	ls->st_ckpts++;
	perf_inc(&ls->pc_ckpts, 1);
	while ((f = ls->dirty)) {
		ls->dirty = f->dnext;
		f->dirty = false;
		if (f->unlinked || f->fd < 0) {
			/*
			 * Unlinked after it was written: its data is gone and the unlink is committed
			 * (an intent not cleared before a later directory sync covers it), so
			 * nothing of it needs syncing.
			 */
			file_maybe_release(ls, f);
			continue;
		}
		c = malloc(sizeof(*c));
		if (!c) {
			/* not synced: it stays dirty for the next checkpoint, this one clears nothing */
			ls->ckpt_incomplete = true;
			f->dnext = retry;
			retry = f;
			continue;
		}
		c->u.kind = U_FSYNC;
		c->f = f;
		c->fd = f->fd;
		f->fsyncing++;   /* holds the fd open until the CQE */
		sqe = get_sqe(ls);
		io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data(sqe, &c->u);
		ls->ckpt_pending++;
	}
	while ((f = retry)) {
		retry = f->dnext;
		file_mark_dirty(ls, f);
	}
	if (ls->dir_dirty) {
		ls->dir_dirty = false;
		c = malloc(sizeof(*c));
		if (c) {
			c->u.kind = U_FSYNC;
			c->f = NULL;
			c->fd = ls->objfd;
			sqe = get_sqe(ls);
			io_uring_prep_fsync(sqe, ls->objfd, 0);
			io_uring_sqe_set_data(sqe, &c->u);
			ls->ckpt_pending++;
		} else {
			ls->ckpt_incomplete = true;
			ls->dir_dirty = true;
		}
	}
	DTRACE_PROBE2(loligo_store, checkpoint_start, ls->applied_upto, ls->ckpt_pending);
	if (ls->ckpt_pending == 0 && !ls->ckpt_incomplete)
		ckpt_covered(ls);
}

/*
 * A checkpoint fdatasync completed.  A failure of the device (EIO, ENOSPC,
 * ...) stops the store: the kernel may have dropped the dirty pages and
 * marked them clean, so retrying the sync would "succeed" over lost data
 * (PostgreSQL's fsync lesson); the intents stay in LMDB for the next open
 * to replay.  EBADF, though, says the fd was not ours any more - a bug
 * here, not a disk error: it must not poison the store.  If the file was
 * unlinked meanwhile nothing of it matters; otherwise it is not known to
 * be synced, so it stays dirty and this checkpoint clears nothing.
 */
static void fsync_cqe(struct local_store *ls, struct fsync_ctx *c, int res)
{
	struct lfile *f = c->f;

	if (f) {
		assert(f->fsyncing > 0 && f->fd == c->fd);
		f->fsyncing--;
	}
	if (res == -EBADF && f) {
		derr(STORE, "local store %s: checkpoint fsync of objects/%016" PRIx64 "%s: bad file descriptor %d (a bug)",
		     ls->path, f->fid, f->unlinked ? " (unlinked meanwhile, ignored)" : "", c->fd);
		if (!f->unlinked) {
			ls->ckpt_incomplete = true;
			file_mark_dirty(ls, f);
		}
	} else if (res < 0) {
		derr(STORE, "local store %s: checkpoint fsync of %s%016" PRIx64 " failed: %s", ls->path,
		     f ? "objects/" : "the objects directory ", f ? f->fid : 0, strerror(-res));
		if (ls->ckpt_err == 0)
			ls->ckpt_err = res;
	}
	if (f)
		file_maybe_release(ls, f);
	free(c);
	if (--ls->ckpt_pending)
		return;
	if (ls->ckpt_err) {
		/* the intents stay in LMDB and are replayed by the next open */
		derr(STORE, "local store %s: checkpoint fsync failed: %s; the store is now read-only, reopen it to replay",
		     ls->path, strerror(-ls->ckpt_err));
		atomic_store(&ls->broken, -EIO);
		return;
	}
	if (ls->ckpt_incomplete)
		return;   /* what was not synced is dirty again: the next checkpoint covers it */
	DTRACE_PROBE1(loligo_store, checkpoint_done, ls->my_lowest);
	ckpt_covered(ls);
	if (ls->blocked)
		unblock_all(ls);
}

/* Start a checkpoint when there are unsynced writes and it is time (or @force). */
static void maybe_checkpoint(struct local_store *ls, bool force)
{
	if (ls->ckpt_pending || atomic_load(&ls->broken))
		return;
	if (!ls->dirty && !ls->dir_dirty) {
		/* every applied effect was covered by an earlier, finished checkpoint */
		ls->ckpt_landed_first = UINT64_MAX;
		ckpt_covered(ls);
		return;
	}
	if (force || ls->blocked || ls->bytes_since_ckpt >= CKPT_BYTES ||
	    now_mono_ns() - ls->ckpt_last_ns >= ls->ckpt_interval_ns)
		ckpt_start(ls);
}

/* ---- space ---------------------------------------------------------- */

#define SPACE_REFRESH_NS (100ull * 1000 * 1000)
#define OP_OVERHEAD 4096              /* LMDB pages an op may dirty, beyond its payload */
#define FULL_HEADROOM (1u << 20)      /* closer than this to the full ratio is full */

/*
 * statvfs of the store's filesystem, and the state it puts the store in.
 * Any thread; a transition is logged once (nearfull: a warning; full and
 * failsafe: an error, with what to do).
 */
static void space_refresh(struct local_store *ls)
{
	struct statvfs v;
	uint64_t f, total, avail, used;
	double ratio;
	int state = STORE_SPACE_OK, was;

	if (fstatvfs(ls->dirfd, &v) < 0)
		return;
	f = v.f_frsize ? v.f_frsize : v.f_bsize;
	total = (uint64_t)v.f_blocks * f;
	avail = (uint64_t)v.f_bavail * f;
	used = total > avail ? total - avail : 0;
	ratio = total ? (double)used / (double)total : 0;
	/* less than FULL_HEADROOM short of a ratio counts as past it: no write of any size fits there */
	if (used + FULL_HEADROOM >= (uint64_t)((double)total * ls->failsafe_ratio))
		state = STORE_SPACE_FAILSAFE;
	else if (used + FULL_HEADROOM >= (uint64_t)((double)total * ls->full_ratio))
		state = STORE_SPACE_FULL;
	else if (ratio >= ls->nearfull_ratio)
		state = STORE_SPACE_NEARFULL;
	atomic_store(&ls->sp_total, total);
	atomic_store(&ls->sp_avail, avail);
	atomic_store(&ls->sp_state, state);
	atomic_store(&ls->sp_ns, now_mono_ns());
	was = atomic_exchange(&ls->sp_logged, state);
	if (was == state)
		return;
	if (state == STORE_SPACE_OK)
		dinfo(STORE, "local store %s: %.0f%% of its filesystem in use: no longer nearfull", ls->path, ratio * 100);
	else if (state == STORE_SPACE_NEARFULL)
		dinfo(STORE, "local store %s: warning: nearfull: %.0f%% of its filesystem in use (%" PRIu64 " MiB free); writes "
		      "fail with ENOSPC past %.0f%%", ls->path, ratio * 100, avail >> 20, ls->full_ratio * 100);
	else
		derr(STORE, "local store %s: %s: %.0f%% of its filesystem in use (%" PRIu64 " MiB free): writes that "
		     "need space fail with ENOSPC%s; delete files or add space", ls->path,
		     state == STORE_SPACE_FULL ? "full" : "past its failsafe ratio", ratio * 100, avail >> 20,
		     state == STORE_SPACE_FULL ? " (removes and the MDS's metadata still pass)" : "");
}

static int local_space(struct store *st, struct store_space *out)
{
	struct local_store *ls = LS(st);

	if (now_mono_ns() - atomic_load(&ls->sp_ns) >= SPACE_REFRESH_NS)
		space_refresh(ls);
	out->total = atomic_load(&ls->sp_total);
	out->avail = atomic_load(&ls->sp_avail);
	out->used = out->total > out->avail ? out->total - out->avail : 0;
	out->state = (enum store_space_state)atomic_load(&ls->sp_state);
	out->nearfull_ratio = ls->nearfull_ratio;
	out->full_ratio = ls->full_ratio;
	out->failsafe_ratio = ls->failsafe_ratio;
	out->enospc = perf_get(&ls->pc_enospc);
	return 0;
}

/* What an op may add to the filesystem: its data twice (intent, file), its omap, some pages. */
static uint64_t op_growth(const struct store_op *op)
{
	uint64_t g = 0;
	bool grows = false;

	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];
		switch (s->kind) {
		case SOP_WRITE:
		case SOP_WRITE_FULL:
		case SOP_APPEND:
			g += 2 * s->len;
			grows = true;
			break;
		case SOP_OMAP_SET:
			g += strlen(s->key) + s->len;
			grows = true;
			break;
		case SOP_CREATE:
			grows = true;
			break;
		case SOP_ALLOCATE:
			g += s->len;   /* file blocks; nothing in the redo log */
			grows = true;
			break;
		default:
			break;   /* removes, truncates, zeroes and omap removals free space or keep it */
		}
	}
	return grows ? g + OP_OVERHEAD : 0;
}

/* The room a write batch has: up to the full ratio (failsafe for full_try stores). */
static void batch_room_init(struct local_store *ls)
{
	double ratio = ls->full_try ? ls->failsafe_ratio : ls->full_ratio;
	uint64_t total, used;

	space_refresh(ls);
	total = atomic_load(&ls->sp_total);
	used = total - atomic_load(&ls->sp_avail);
	ls->batch_room = (int64_t)((double)total * ratio) - (int64_t)used - (int64_t)ls->unlanded;
	ls->batch_room_resv = (int64_t)((double)total * ls->failsafe_ratio) - (int64_t)used - (int64_t)ls->unlanded;
}

/*
 * Reserve file space before the op commits: the range of each write once
 * nearfull, and what store_op_allocate asks for always (@sync: made durable
 * now, as the op's completion promises).
 */
static int prealloc_one(struct local_store *ls, uint64_t fid, uint64_t off, uint64_t len, bool sync)
{
	char name[17];
	int fd, r = 0;

	local_fid_name(fid, name);
	fd = openat(ls->objfd, name, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		fd = openat(ls->objfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		ls->dir_dirty = true;
	}
	if (fd < 0)
		return -errno;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0 && errno != EOPNOTSUPP)
		r = -errno;
	else if (sync && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int prealloc_op(struct local_store *ls, const struct store_op *op, const struct objrec *rec, bool writes)
{
	bool exists = rec->exists;
	uint64_t fid = rec->fid, size = rec->size, nf = ls->next_fid;
	int r = 0;

#define MAKE()                           \
	do {                             \
		if (!exists) {           \
			exists = true;   \
			fid = nf++;      \
			size = 0;        \
		}                        \
	} while (0)

	for (size_t i = 0; i < op->n && r == 0; i++) {
		const struct store_subop *s = &op->v[i];
		switch (s->kind) {
		case SOP_CREATE:
		case SOP_OMAP_SET:
			MAKE();
			break;
		case SOP_WRITE:
			MAKE();
			if (s->len && writes)
				r = prealloc_one(ls, fid, s->off, s->len, false);
			if (s->off + s->len > size)
				size = s->off + s->len;
			break;
		case SOP_WRITE_FULL:
			MAKE();
			if (s->len && writes)
				r = prealloc_one(ls, fid, 0, s->len, false);
			size = s->len;
			break;
		case SOP_APPEND:
			MAKE();
			if (s->len && writes)
				r = prealloc_one(ls, fid, size, s->len, false);
			size += s->len;
			break;
		case SOP_ALLOCATE:
			MAKE();
			r = prealloc_one(ls, fid, s->off, s->len, true);
			if (s->off + s->len > size)
				size = s->off + s->len;
			break;
		case SOP_TRUNCATE:
			if (exists)
				size = s->off;
			break;
		case SOP_REMOVE:
			exists = false;
			break;
		default:
			break;
		}
	}
#undef MAKE
	return r;
}

/*
 * Does @op only write inside @rec, an object whose every byte has its
 * blocks (OBJ_F_ALLOC)?  Then its file needs no new space: what it needs
 * is its bytes in the redo log until the next checkpoint (*@log).
 */
static bool writes_in_allocated(const struct store_op *op, const struct objrec *rec, uint64_t *log)
{
	*log = 0;
	if (!rec->exists || rec->inl || !rec->alloc)
		return false;
	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];

		switch (s->kind) {
		case SOP_WRITE:
			if (s->off > rec->size || s->len > rec->size - s->off)
				return false;
			*log += s->len;
			break;
		case SOP_WRITE_FULL:   /* cut to its length, then written: see exec_write */
			if (s->len > rec->size)
				return false;
			*log += s->len;
			break;
		case SOP_ASSERT_EXISTS:
			break;
		case SOP_CREATE:
			if (s->excl)
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

/*
 * May @req take the space it needs?  Ops that free or keep space always
 * may.  Past nearfull the file space of its writes is reserved now, so
 * applying them after the commit cannot run out of space.  -ENOSPC, with
 * nothing of the op written, when not.
 */
static int admit(struct local_store *ls, const struct lreq *req, const struct objrec *rec, bool inl)
{
	/* an inline object that spills writes its bytes to its file too */
	uint64_t spill = !inl && rec->exists && rec->inl ? rec->size : 0;
	uint64_t grow = req->grow + 2 * spill, log;
	bool nearfull = atomic_load(&ls->sp_state) >= STORE_SPACE_NEARFULL, allocates = false;
	int r;

	if (!grow)
		return 0;
	/*
	 * Counted as new space, though an intent may reuse pages LMDB freed
	 * after the last checkpoint: whether a page is free to reuse depends on
	 * the readers of every process, so only what statvfs shows is trusted.
	 * A write into space allocated for it (store_op_allocate, or written
	 * before) needs only its redo log bytes, and may use the room up to
	 * the failsafe ratio: that is what fallocate(2) promised the writer.
	 */
	if (!inl && (int64_t)grow > ls->batch_room && writes_in_allocated(req->op, rec, &log)) {
		grow = log + OP_OVERHEAD;
		if ((int64_t)grow > ls->batch_room_resv) {
			perf_inc(&ls->pc_enospc, 1);
			return -ENOSPC;
		}
	} else if ((int64_t)grow > ls->batch_room) {
		perf_inc(&ls->pc_enospc, 1);
		return -ENOSPC;
	}
	ls->batch_room -= (int64_t)grow;
	ls->batch_room_resv -= (int64_t)grow;
	for (size_t i = 0; i < req->op->n; i++)
		allocates |= req->op->v[i].kind == SOP_ALLOCATE;
	/* an op applied inline writes no file: nothing to reserve (and no file to make) */
	if (!inl && (nearfull || allocates) &&
	    ((spill && nearfull && (r = prealloc_one(ls, rec->fid, 0, spill, false))) ||
	     (r = prealloc_op(ls, req->op, rec, nearfull)))) {
		if (r == -ENOSPC || r == -EDQUOT)
			perf_inc(&ls->pc_enospc, 1);
		return r == -EDQUOT ? -ENOSPC : r;
	}
	return 0;
}

/* ---- executing requests inside the batch transaction ---------------- */

/*
 * The only ways an op fails by itself are its existence guards.  Checking
 * them first, on a simulated "exists" flag, lets the op be applied straight
 * into the batch transaction: no LMDB nested transaction (each of which
 * allocates a large dirty list) per op.  Anything failing after this point
 * is a resource error (ENOSPC, ENOMEM, EIO) and aborts the whole batch, so
 * an op is still applied entirely or not at all.
 */
static int precheck(const struct store_op *op, bool exists)
{
	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];

		switch (s->kind) {
		case SOP_CREATE:
			if (exists && s->excl)
				return -EEXIST;
			exists = true;
			break;
		case SOP_ASSERT_EXISTS:
		case SOP_OMAP_RM:
		case SOP_OMAP_RM_RANGE:
		case SOP_OMAP_CLEAR:
			if (!exists)
				return -ENOENT;
			break;
		case SOP_REMOVE:
			if (!exists)
				return -ENOENT;
			exists = false;
			break;
		case SOP_WRITE:
		case SOP_WRITE_FULL:
		case SOP_APPEND:
		case SOP_OMAP_SET:
			exists = true;
			break;
		case SOP_ALLOCATE:
			exists = true;
			break;
		case SOP_TRUNCATE:
		case SOP_ZERO:
			break;
		}
	}
	return 0;
}

/* ---- inline objects ----------------------------------------------------- */

/*
 * Small objects keep their bytes in LMDB (ls->db_inline, the record flagged
 * OBJ_F_INLINE): an op on one is applied to a copy of the bytes inside the
 * batch transaction, so it commits with the record and needs no intent, no
 * file to create, write and sync, and nothing to redo after a crash.  Every
 * small file of an untar was a file of its own under objects/, created,
 * written through io_uring and fdatasync'd at the checkpoint; on an ext4
 * that had just deleted thousands of them, the create alone took 80% of the
 * store thread (the inode allocator skipping recently deleted inodes).
 *
 * An op makes a new object inline when its size stays within the limit
 * all through the op (op_peak_size), and keeps an inline object so when it
 * does not grow it (a growing object is a stream, the MDS's journal
 * segments or a file written in pieces, and every op on an inline object
 * rewrites all of it in LMDB); otherwise the object spills: its bytes become a write at offset 0 of its file, the first record
 * of the op's intent, and it is a file object from then on (objects never
 * go back).  Reads of an inline object copy from the batch's snapshot.  Any
 * process reads, overwrites and spills inline objects whatever its limit.
 */

/*
 * The largest size @op gives an object that @exists with @size, or
 * UINT64_MAX as soon as it would pass @limit (so that no sum overflows).
 */
static uint64_t op_peak_size(const struct store_op *op, bool exists, uint64_t size, uint64_t limit)
{
	uint64_t peak = exists ? size : 0;

	if (!exists)
		size = 0;
	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];

		switch (s->kind) {
		case SOP_CREATE:
		case SOP_OMAP_SET:
			if (!exists) {
				exists = true;
				size = 0;
			}
			break;
		case SOP_WRITE:
			if (!exists) {
				exists = true;
				size = 0;
			}
			if (s->off > limit || s->len > limit - s->off)
				return UINT64_MAX;
			if (s->off + s->len > size)
				size = s->off + s->len;
			break;
		case SOP_WRITE_FULL:
			exists = true;
			if (s->len > limit)
				return UINT64_MAX;
			size = s->len;
			break;
		case SOP_APPEND:
			if (!exists) {
				exists = true;
				size = 0;
			}
			if (s->len > limit - size)
				return UINT64_MAX;
			size += s->len;
			break;
		case SOP_TRUNCATE:
			if (!exists)
				break;
			if (s->off > limit)
				return UINT64_MAX;
			size = s->off;
			break;
		case SOP_ZERO:
			if (exists && s->off < size && s->len && s->len >= size - s->off)
				size = s->off;
			break;
		case SOP_REMOVE:
			exists = false;
			size = 0;
			break;
		case SOP_ALLOCATE:
			return UINT64_MAX;   /* the blocks are a file's: never inline */
		default:
			break;
		}
		if (size > peak)
			peak = size;
	}
	return peak;
}

static void inline_key(unsigned char *k, uint64_t fid)
{
	put_be64(k, fid);
}

/* The bytes of inline object @rec, in a new buffer of @rec->size (NULL for 0). */
static int inline_take(struct local_store *ls, MDB_txn *txn, const struct objrec *rec, void **out)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	*out = NULL;
	if (!rec->size)
		return 0;
	inline_key(kb, rec->fid);
	rc = mdb_get(txn, ls->db_inline, &k, &v);
	if (rc || v.mv_size != rec->size) {
		derr(STORE, "local store %s: inline object of fid %" PRIx64 " has %zu bytes where its record says %" PRIu64
			    "%s", ls->path, rec->fid, rc ? (size_t)0 : v.mv_size, rec->size, rc ? " (none)" : "");
		return rc && rc != MDB_NOTFOUND ? mdb_err(rc) : -EIO;
	}
	*out = malloc(rec->size);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, v.mv_data, rec->size);
	return 0;
}

static int inline_del(struct local_store *ls, MDB_txn *txn, uint64_t fid)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb };
	int rc;

	inline_key(kb, fid);
	rc = mdb_del(txn, ls->db_inline, &k, NULL);
	return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

static int inline_put(struct local_store *ls, MDB_txn *txn, uint64_t fid, const void *data, uint64_t len)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v = { len, (void *)data };

	if (!len)
		return inline_del(ls, txn, fid);
	inline_key(kb, fid);
	return mdb_err(mdb_put(txn, ls->db_inline, &k, &v, 0));
}

/*
 * exec_write for an op that keeps its object inline (@peak: the largest
 * size it gives it, op_peak_size): the bytes are changed in a buffer and
 * put back with the record.  Same contract as exec_write.
 */
static int exec_write_inline(struct local_store *ls, MDB_txn *txn, struct lreq *req, struct objrec *rec,
			     uint64_t peak, bool *fatal)
{
	struct local_pool *lp = req->pool;
	struct store_op *op = req->op;
	bool existed = rec->exists, mutated = false;
	uint64_t old_fid = existed ? rec->fid : 0;
	unsigned char *buf;
	void *cur = NULL;
	int r;

	/* the bytes past the size are zero: writes past the end leave zeros between */
	buf = calloc(1, (size_t)(peak ? peak : 1));
	if (!buf)
		return -ENOMEM;
	if (existed) {
		r = inline_take(ls, txn, rec, &cur);
		if (r) {
			free(buf);
			return r;
		}
		if (rec->size)
			memcpy(buf, cur, rec->size);
		free(cur);
	}
	*fatal = true;   /* from here on, any failure has written part of the op */

#define ENSURE_EXISTS()                              \
	do {                                         \
		if (!rec->exists) {                  \
			rec->exists = true;          \
			rec->inl = true;             \
			rec->fid = ls->next_fid++;   \
			rec->size = 0;               \
		}                                    \
	} while (0)

	r = 0;
	for (size_t i = 0; i < op->n && r == 0; i++) {
		struct store_subop *s = &op->v[i];

		switch (s->kind) {
		case SOP_CREATE:
			if (rec->exists && s->excl) {
				r = -EEXIST;
				break;
			}
			ENSURE_EXISTS();
			mutated = true;
			break;
		case SOP_ASSERT_EXISTS:
			if (!rec->exists)
				r = -ENOENT;
			break;
		case SOP_WRITE:
			ENSURE_EXISTS();
			mutated = true;
			if (s->len)
				memcpy(buf + s->off, s->data, s->len);
			if (s->off + s->len > rec->size)
				rec->size = s->off + s->len;
			break;
		case SOP_WRITE_FULL:
			ENSURE_EXISTS();
			mutated = true;
			if (rec->size > s->len)
				memset(buf + s->len, 0, rec->size - s->len);
			if (s->len)
				memcpy(buf, s->data, s->len);
			rec->size = s->len;
			break;
		case SOP_APPEND:
			ENSURE_EXISTS();
			mutated = true;
			if (s->len)
				memcpy(buf + rec->size, s->data, s->len);
			rec->size += s->len;
			break;
		case SOP_TRUNCATE:
			if (!rec->exists)
				break;
			mutated = true;
			if (s->off < rec->size)
				memset(buf + s->off, 0, rec->size - s->off);
			rec->size = s->off;
			break;
		case SOP_ZERO:
			if (!rec->exists || s->off >= rec->size || !s->len)
				break;
			mutated = true;
			if (s->len >= rec->size - s->off) {
				memset(buf + s->off, 0, rec->size - s->off);
				rec->size = s->off;
			} else {
				memset(buf + s->off, 0, s->len);
			}
			break;
		case SOP_REMOVE:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			r = omap_clear(ls, txn, rec->fid);
			memset(buf, 0, rec->size);
			rec->exists = false;
			rec->size = 0;
			mutated = true;
			break;
		case SOP_OMAP_SET:
			ENSURE_EXISTS();
			mutated = true;
			r = omap_put(ls, txn, rec->fid, s->key, s->data, s->len);
			break;
		case SOP_OMAP_RM:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = omap_del(ls, txn, rec->fid, s->key);
			break;
		case SOP_OMAP_RM_RANGE:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = omap_rm_range(ls, txn, rec->fid, s->key, s->key2);
			break;
		case SOP_OMAP_CLEAR:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = omap_clear(ls, txn, rec->fid);
			break;
		case SOP_ALLOCATE:
			r = -EINVAL;   /* never inline (op_peak_size) */
			break;
		}
	}
#undef ENSURE_EXISTS
	if (r == 0 && mutated) {
		/* the old incarnation's bytes go if it was removed (a new one has another fid) */
		if (existed && (!rec->exists || rec->fid != old_fid))
			r = inline_del(ls, txn, old_fid);
		if (r == 0 && rec->exists) {
			rec->mtime_ns = now_real_ns();
			r = obj_put(ls, txn, lp, req->oid, rec);
			if (r == 0)
				r = inline_put(ls, txn, rec->fid, buf, rec->size);
		} else if (r == 0 && existed) {
			r = obj_del(ls, txn, lp, req->oid);
		}
	}
	free(buf);
	if (r == 0)
		*fatal = false;
	return r;
}

/*
 * Apply one compound op inside the batch transaction @txn.
 * Return: 0, a -errno the op fails with alone (nothing of it written), or,
 * with *@fatal set, an error that leaves @txn half-written: the caller
 * aborts the whole batch.
 */
static int exec_write(struct local_store *ls, MDB_txn *txn, struct lreq *req, bool *fatal)
{
	struct local_pool *lp = req->pool;
	struct store_op *op = req->op;
	struct irecs rs = { 0 };
	struct objrec rec;
	bool existed, mutated = false;
	int r;

	r = obj_lookup(ls, txn, lp, req->oid, &rec);
	if (r)
		return r;
	existed = rec.exists;
	r = precheck(op, rec.exists);
	if (r)
		return r;
	if (rec.exists ? rec.inl : ls->inline_max > 0 && ls->inline_room) {
		/* a new object may be made inline up to the limit; an inline one
		 * stays so while ops do not grow it: one that grows is a stream
		 * (the MDS's journal segments, a file written in pieces), and every
		 * op on an inline object rewrites all of it in LMDB */
		uint64_t limit = rec.exists ? rec.size : ls->inline_max;

		uint64_t peak = op_peak_size(op, rec.exists, rec.size, limit);

		if (peak <= limit) {
			r = admit(ls, req, &rec, true);
			return r ? r : exec_write_inline(ls, txn, req, &rec, peak, fatal);
		}
	}
	r = admit(ls, req, &rec, false);
	if (r)
		return r;
	if (rec.exists && rec.inl) {
		/* it spills: its bytes go to its file first, in the op's intent */
		r = inline_take(ls, txn, &rec, &req->spill);
		if (r)
			return r;
		*fatal = true;
		if (rec.size)
			r = irecs_add(&rs, FW_WRITE, rec.fid, 0, rec.size, req->spill);
		if (r == 0)
			r = inline_del(ls, txn, rec.fid);
		rec.inl = false;
		rec.alloc = true;   /* its bytes are written from 0 */
		mutated = true;
		if (r)
			goto out_fail;
	}
	*fatal = true;   /* from here on, any failure has written part of the op */

#define ENSURE_EXISTS()                              \
	do {                                         \
		if (!rec.exists) {                   \
			rec.exists = true;           \
			rec.fid = ls->next_fid++;    \
			rec.size = 0;                \
			rec.alloc = true;            \
		}                                    \
	} while (0)

	/*
	 * rec.alloc (OBJ_F_ALLOC) follows the op: a write or truncate that
	 * leaves a hole before its start clears it, a punch too; writing
	 * the whole object sets it, an allocation that covers everything
	 * from 0 (or continues an object that had it) sets it.
	 */
	for (size_t i = 0; i < op->n && r == 0; i++) {
		struct store_subop *s = &op->v[i];

		switch (s->kind) {
		case SOP_CREATE:
			if (rec.exists && s->excl) {
				r = -EEXIST;
				break;
			}
			ENSURE_EXISTS();
			mutated = true;
			break;
		case SOP_ASSERT_EXISTS:
			if (!rec.exists)
				r = -ENOENT;
			break;
		case SOP_WRITE:
			/* as in RADOS, a 0-byte write still extends the size to its offset */
			ENSURE_EXISTS();
			mutated = true;
			if (s->len)
				r = irecs_add(&rs, FW_WRITE, rec.fid, s->off, s->len, s->data);
			if (s->off > rec.size)
				rec.alloc = false;
			if (s->off + s->len > rec.size)
				rec.size = s->off + s->len;
			break;
		case SOP_WRITE_FULL:
			ENSURE_EXISTS();
			mutated = true;
			/* cut to the new length, not to 0: the write covers all of
			 * it, and the blocks it overwrites stay (freed and taken
			 * again they would need space, on a full disk too) */
			r = irecs_add(&rs, FW_TRUNC, rec.fid, s->len, 0, NULL);
			if (r == 0 && s->len)
				r = irecs_add(&rs, FW_WRITE, rec.fid, 0, s->len, s->data);
			rec.alloc = true;   /* every byte of it written */
			rec.size = s->len;
			break;
		case SOP_APPEND:
			ENSURE_EXISTS();
			mutated = true;
			if (s->len)
				r = irecs_add(&rs, FW_WRITE, rec.fid, rec.size, s->len, s->data);
			rec.size += s->len;
			break;
		case SOP_TRUNCATE:
			if (!rec.exists)
				break;   /* RADOS: truncating a missing object does not create it */
			mutated = true;
			r = irecs_add(&rs, FW_TRUNC, rec.fid, s->off, 0, NULL);
			if (s->off > rec.size)
				rec.alloc = false;
			rec.size = s->off;
			break;
		case SOP_ZERO:
			/*
			 * As in RADOS: nothing on a missing object or past the end;
			 * a range reaching the end truncates the object to its start.
			 */
			if (!rec.exists || s->off >= rec.size || !s->len)
				break;
			mutated = true;
			if (s->off + s->len >= rec.size) {
				r = irecs_add(&rs, FW_TRUNC, rec.fid, s->off, 0, NULL);
				rec.size = s->off;
			} else {
				r = irecs_add(&rs, FW_ZERO, rec.fid, s->off, s->len, NULL);
				rec.alloc = false;   /* a hole now */
			}
			break;
		case SOP_ALLOCATE:
			/* the blocks were reserved before the commit (admit); this
			 * reserves them again in order after the effects queued
			 * before it, without anything to redo */
			ENSURE_EXISTS();
			mutated = true;
			r = irecs_add(&rs, FW_ALLOC, rec.fid, s->off, s->len, NULL);
			rec.alloc = (rec.alloc && s->off <= rec.size) || (s->off == 0 && s->len >= rec.size);
			if (s->off + s->len > rec.size)
				rec.size = s->off + s->len;
			break;
		case SOP_REMOVE:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			r = omap_clear(ls, txn, rec.fid);
			if (r == 0)
				r = irecs_add(&rs, FW_UNLINK, rec.fid, 0, 0, NULL);
			rec.exists = false;
			mutated = true;
			break;
		case SOP_OMAP_SET:
			ENSURE_EXISTS();
			mutated = true;
			r = omap_put(ls, txn, rec.fid, s->key, s->data, s->len);
			break;
		case SOP_OMAP_RM:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = omap_del(ls, txn, rec.fid, s->key);
			break;
		case SOP_OMAP_RM_RANGE:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = omap_rm_range(ls, txn, rec.fid, s->key, s->key2);
			break;
		case SOP_OMAP_CLEAR:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = omap_clear(ls, txn, rec.fid);
			break;
		}
	}
#undef ENSURE_EXISTS
	if (r)
		goto out_fail;
	if (mutated) {
		if (rec.exists) {
			rec.mtime_ns = now_real_ns();
			r = obj_put(ls, txn, lp, req->oid, &rec);
		} else if (existed) {
			r = obj_del(ls, txn, lp, req->oid);
		}
	}
	if (r == 0 && rs.persisted) {
		req->seq = ls->next_seq++;
		r = intent_put(ls, txn, req->seq, &rs);
	}
	for (size_t i = 0; i < rs.n && r == 0; i++)
		r = plan_work(req, rs.v[i].kind, rs.v[i].fid, rs.v[i].a, rs.v[i].b, (void *)rs.v[i].data);
	if (r)
		goto out_fail;
	free(rs.v);
	*fatal = false;
	return 0;

out_fail:
	free(rs.v);
	drop_planned(req);
	req->seq = 0;
	return r;
}

static int exec_read(struct local_store *ls, MDB_txn *txn, struct lreq *req)
{
	struct objrec rec;
	size_t n;
	int r;

	if (atomic_load(&ls->broken))
		return -EIO;   /* committed effects of ours may be missing from the files */
	r = obj_lookup(ls, txn, req->pool, req->oid, &rec);
	if (r)
		return r;
	if (!rec.exists)
		return -ENOENT;
	n = req->off >= rec.size ? 0 : (rec.size - req->off < req->len ? (size_t)(rec.size - req->off) : req->len);
	if (n == 0)
		return 0;
	if (rec.inl) {
		/* from the snapshot: no file (the batch took the effects lock all the
	 * same: whether an object is inline is known only in here) */
		unsigned char kb[8];
		MDB_val k = { 8, kb }, v;
		int rc;

		inline_key(kb, rec.fid);
		rc = mdb_get(txn, ls->db_inline, &k, &v);
		if (rc || v.mv_size != rec.size) {
			derr(STORE, "local store %s: inline object '%s' (fid %" PRIx64 ") has %zu bytes where its record "
				    "says %" PRIu64, ls->path, req->oid, rec.fid, rc ? (size_t)0 : v.mv_size, rec.size);
			return rc && rc != MDB_NOTFOUND ? mdb_err(rc) : -EIO;
		}
		memcpy(req->buf, (const unsigned char *)v.mv_data + req->off, n);
		return (int)n;
	}
	r = plan_work(req, FW_READ, rec.fid, req->off, n, req->buf);
	return r ? r : (int)n;
}

static int exec_query(struct local_store *ls, MDB_txn *txn, struct lreq *req)
{
	struct objrec rec;
	struct oent e;
	int r;

	if (req->kind == LR_LIST) {
		struct local_pool *lp = req->pool;
		size_t nl = strlen(lp->ns), cnt = 0, cap = 0;
		unsigned char k[4];
		MDB_cursor *cur;
		MDB_val key = { 4, k }, val;
		char **names = NULL;
		int rc;

		put_be32(k, lp->id);
		rc = mdb_cursor_open(txn, ls->db_objs, &cur);
		if (rc)
			return mdb_err(rc);
		r = 0;
		for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
		     rc == 0 && key.mv_size >= 4 && memcmp(key.mv_data, k, 4) == 0;
		     rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
			const char *ns, *oid;
			size_t rnl, ol;
			if (obj_decode(&val, &rec, &ns, &rnl, &oid, &ol)) {
				r = -EIO;
				break;
			}
			if (rnl != nl || memcmp(ns, lp->ns, nl))
				continue;
			if (cnt == cap) {
				cap = cap ? cap * 2 : 64;
				char **v = realloc(names, cap * sizeof(*v));
				if (!v) {
					r = -ENOMEM;
					break;
				}
				names = v;
			}
			if (!(names[cnt] = strndup(oid, ol))) {
				r = -ENOMEM;
				break;
			}
			cnt++;
		}
		mdb_cursor_close(cur);
		if (r == 0 && rc && rc != MDB_NOTFOUND)
			r = mdb_err(rc);
		if (r) {
			for (size_t i = 0; i < cnt; i++)
				free(names[i]);
			free(names);
			return r;
		}
		*req->names = names;
		*req->nkv = cnt;
		return 0;
	}

	r = obj_lookup(ls, txn, req->pool, req->oid, &rec);
	if (r)
		return r;
	if (!rec.exists)
		return -ENOENT;
	switch (req->kind) {
	case LR_STAT:
		req->st_out->size = rec.size;
		req->st_out->mtime = ns_to_timespec(rec.mtime_ns);
		return 0;
	case LR_OMAP_GET:
		r = omap_lookup(ls, txn, rec.fid, req->key, &e);
		if (r)
			return r;
		*req->val = malloc(e.vlen ? e.vlen : 1);
		if (!*req->val)
			return -ENOMEM;
		memcpy(*req->val, e.val, e.vlen);
		*req->vlen = e.vlen;
		return 0;
	case LR_OMAP_LIST:
		return omap_list(ls, txn, rec.fid, req->after, req->prefix, req->max, req->kvs, req->nkv, req->more);
	default:
		return -EINVAL;
	}
}

/* Nothing of @batch reached the disk: fail every request in it with @r. */
static void fail_batch(struct local_store *ls, struct lreq *batch, int r)
{
	struct lreq *req, *next;

	for (req = batch; req; req = next) {
		next = req->next;
		/* a query that ran returned results the caller will not see */
		if (req->ran && req->kind == LR_OMAP_LIST && req->r == 0) {
			store_kv_free(*req->kvs, *req->nkv);
			*req->kvs = NULL;
			*req->nkv = 0;
		}
		if (req->ran && req->kind == LR_OMAP_GET && req->r == 0) {
			free(*req->val);
			*req->val = NULL;
		}
		if (req->ran && req->kind == LR_LIST && req->r == 0) {
			for (size_t i = 0; i < *req->nkv; i++)
				free((*req->names)[i]);
			free(*req->names);
			*req->names = NULL;
			*req->nkv = 0;
		}
		drop_planned(req);
		req->seq = 0;
		req->r = r;
		req_callback(ls, req);
		req_free(ls, req);
	}
}

#define FENCE_PREFIX "fence."

/* Is this instance fenced?  Read in the batch's write txn.  0 or -ESHUTDOWN. */
static int fence_check(struct local_store *ls, MDB_txn *txn)
{
	char key[sizeof(FENCE_PREFIX) + sizeof(ls->addr)];
	MDB_val k, v;
	uint64_t until;
	struct timespec now;

	snprintf(key, sizeof(key), FENCE_PREFIX "%s", ls->addr);
	k.mv_data = key;
	k.mv_size = strlen(key);
	if (mdb_get(txn, ls->db_meta, &k, &v) || v.mv_size != 8)
		return 0;
	memcpy(&until, v.mv_data, 8);
	clock_gettime(CLOCK_REALTIME, &now);
	if (until && (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec >= until)
		return 0;               /* expired */
	return -ESHUTDOWN;
}

static void run_batch(struct local_store *ls, struct lreq *batch)
{
	bool writes = ls->my_lowest != ls->my_lowest_db;   /* our owners record is behind */
	struct lreq *req, *next;
	MDB_txn *txn;
	uint64_t seq0 = 0, lowest = 0;
	unsigned nreq = 0;
	int rc, r, fenced = 0;

	for (req = batch; req; req = req->next) {
		writes |= req->kind == LR_WRITE;
		nreq++;
	}
	rc = mdb_txn_begin(ls->env, NULL, writes ? 0 : MDB_RDONLY, &txn);
	r = mdb_err(rc);

	if (r == 0 && writes) {
		MDB_envinfo ei;
		MDB_stat es;

		r = local_txn_begin_shared(ls, txn);
		seq0 = ls->next_seq;
		batch_room_init(ls);
		/* inline bytes live in LMDB's map (store_local_map_size): past
		 * half of it, new objects get files, so the map is never what
		 * runs out while the disk has room */
		ls->inline_room = mdb_env_info(ls->env, &ei) == 0 && mdb_env_stat(ls->env, &es) == 0 &&
				  ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize < (uint64_t)ei.me_mapsize / 2;
		fenced = fence_check(ls, txn);
	}
	if (r == 0) {
		for (req = batch; req && r == 0; req = req->next) {
			int broken = atomic_load(&ls->broken);
			bool fatal = false;
			if (req->kind == LR_WRITE && fenced) {
				req->r = fenced;
				perf_inc(&ls->pc_fenced, 1);
			} else if (req->kind == LR_WRITE)
				req->r = broken ? broken : exec_write(ls, txn, req, &fatal);
			else if (req->kind == LR_READ)
				req->r = exec_read(ls, txn, req);
			else
				req->r = exec_query(ls, txn, req);
			req->ran = true;
			if (fatal)
				r = req->r;
		}
		if (r) {
			mdb_txn_abort(txn);
		} else if (writes) {
			r = local_txn_end_shared(ls, txn, ls->next_seq != seq0 ? seq0 : 0, &lowest);
			if (r == 0) {
				uint64_t t0 = now_mono_ns();
				r = mdb_err(mdb_txn_commit(txn));
				/* group commit: how many requests one sync carried, and how long it took */
				DTRACE_PROBE3(loligo_store, commit, nreq, now_mono_ns() - t0, r);
				hist_add(&ls->h_commit, now_mono_ns() - t0);
				perf_inc(&ls->pc_commits, 1);
				if (r == 0) {
					local_txn_committed_shared(ls, lowest);
				} else if (r == -EIO || r == -ENOSPC) {
					/* LMDB says EIO for a short write: a full disk is ENOSPC */
					space_refresh(ls);
					if (atomic_load(&ls->sp_state) >= STORE_SPACE_FULL ||
					    atomic_load(&ls->sp_avail) < BATCH_MAX_BYTES)
						r = -ENOSPC;
				}
			} else {
				mdb_txn_abort(txn);
			}
		} else {
			mdb_txn_abort(txn);
		}
	} else if (rc == 0) {
		mdb_txn_abort(txn);
	}
	ls->st_batches++;
	if (r) {
		derr(STORE, "local store %s: commit failed: %s", ls->path, strerror(-r));
		fail_batch(ls, batch, r);
		return;
	}
	/*
	 * Committed, so durable: call back (reads excepted: they wait for their
	 * data), then queue the file effects in order.  A request whose works
	 * all complete synchronously may be freed inside req_queue_works().
	 */
	perf_inc(&ls->pc_batches, 1);
	if (ls->test_stall_apply_ns && ls->next_seq != seq0) {
		/* test hook: acknowledged, and the effects not applied yet, for a while */
		struct timespec ts = { (time_t)(ls->test_stall_apply_ns / 1000000000u),
				       (long)(ls->test_stall_apply_ns % 1000000000u) };
		for (req = batch; req; req = req->next)
			if (req->kind == LR_WRITE)
				req_callback(ls, req);
		nanosleep(&ts, NULL);
	}
	for (req = batch; req; req = next) {
		next = req->next;
		ls->st_ops++;
		if (req->kind == LR_WRITE) {
			perf_inc(&ls->pc_writes, 1);
			perf_inc(&ls->pc_write_bytes, req->op->bytes);
		} else {
			perf_inc(req->kind == LR_READ ? &ls->pc_reads : &ls->pc_queries, 1);
		}
		if (req->kind != LR_READ)
			req_callback(ls, req);
		if (req->seq) {
			req->fnext = NULL;
			if (ls->fifo_tail)
				ls->fifo_tail->fnext = req;
			else
				ls->fifo_head = req;
			ls->fifo_tail = req;
		}
		if (req->pending) {
			req_queue_works(ls, req);
			continue;
		}
		req_callback(ls, req);
		req_free(ls, req);
	}
}

/* ---- the worker ----------------------------------------------------- */

static void arm_event(struct local_store *ls)
{
	struct io_uring_sqe *sqe = get_sqe(ls);
	io_uring_prep_read(sqe, ls->evfd, &ls->evbuf, sizeof(ls->evbuf), 0);
	io_uring_sqe_set_data(sqe, &ls->ev_ctx);
}

static void reap(struct local_store *ls)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&ls->ring, &cqe) == 0) {
		struct uctx *u = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&ls->ring, cqe);
		switch (u->kind) {
		case U_EVENT:
			lg_uring_mark_defined(&ls->evbuf, sizeof(ls->evbuf));
			arm_event(ls);
			break;
		case U_FWORK:
			fwork_cqe(ls, container_of(u, struct fwork, u), res);
			break;
		case U_FSYNC:
			fsync_cqe(ls, container_of(u, struct fsync_ctx, u), res);
			break;
		}
	}
}

static struct lreq *take_batch_locked(struct local_store *ls)
{
	struct lreq *head = ls->q_head, *last = NULL, *req;
	size_t n = 0, bytes = 0;

	for (req = head; req && n < BATCH_MAX_REQS && (n == 0 || bytes + req->charge <= BATCH_MAX_BYTES);
	     req = req->next) {
		n++;
		bytes += req->charge;
		last = req;
	}
	if (!last)
		return NULL;
	ls->q_head = last->next;
	if (!ls->q_head)
		ls->q_tail = &ls->q_head;
	last->next = NULL;
	ls->busy_reqs += (unsigned)n;
	return head;
}

/* The final flush at close: sync what is dirty and clear every applied intent. */
/* A write txn of no ops: our owners record up to date, and what every owner synced deleted. */
static int publish_txn(struct local_store *ls)
{
	uint64_t lowest;
	MDB_txn *txn;
	int r;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	r = local_txn_begin_shared(ls, txn);
	if (r == 0)
		r = local_txn_end_shared(ls, txn, 0, &lowest);
	if (r) {
		mdb_txn_abort(txn);
		return r;
	}
	r = mdb_err(mdb_txn_commit(txn));
	if (r == 0)
		local_txn_committed_shared(ls, lowest);
	return r;
}

/* The final flush at close: sync what is dirty; then none of our intents is pending. */
static void final_sync(struct local_store *ls)
{
	struct lfile *f;
	int err = 0;

	while ((f = ls->dirty)) {
		ls->dirty = f->dnext;
		f->dirty = false;
		if (f->fd >= 0 && !f->unlinked && fdatasync(f->fd) < 0)
			err = -errno;
		file_maybe_release(ls, f);
	}
	if (ls->dir_dirty && fsync(ls->objfd) < 0)
		err = -errno;
	if (err || atomic_load(&ls->broken) || ls->fifo_head)
		return;   /* our owners record stays: the next to take the effects lock redoes our intents */
	ls->my_lowest = UINT64_MAX;
	if (ls->my_lowest != ls->my_lowest_db)
		publish_txn(ls);
}

/* Does @batch touch object files (and so need LOCK_EFFECTS)? */
static bool batch_needs_effects(const struct lreq *batch)
{
	for (const struct lreq *req = batch; req; req = req->next)
		if (req->effects)
			return true;
	return false;
}

static void *worker_main(void *arg)
{
	struct local_store *ls = arg;

	arm_event(ls);
	io_uring_submit(&ls->ring);
	for (;;) {
		struct lreq *batch;
		bool stopping, idle, queued;

		reap(ls);
		pthread_mutex_lock(&ls->lock);
		/* draining for another process that waits for LOCK_EFFECTS: no new batch meanwhile */
		batch = ls->effects_yield ? NULL : take_batch_locked(ls);
		stopping = ls->stopping;
		queued = ls->q_head != NULL;
		pthread_mutex_unlock(&ls->lock);
		if (batch) {
			int r = 0;
			/* broken: its reads and writes of object data fail without touching the files */
			if (!ls->effects_held && !atomic_load(&ls->broken) && batch_needs_effects(batch))
				r = local_effects_acquire(ls);
			if (r)
				fail_batch(ls, batch, r);
			else
				run_batch(ls, batch);
			maybe_checkpoint(ls, false);
			io_uring_submit(&ls->ring);
			/* another process waits: let it in once our slice is used (then drain first) */
			if (ls->effects_held && now_mono_ns() - ls->effects_since_ns >= EFFECTS_SLICE_NS &&
			    local_effects_contended(ls))
				ls->effects_yield = true;
			continue;
		}
		/* a committed effect failed: once nothing of ours is in flight, let others redo ours */
		if (atomic_load(&ls->broken) && !ls->retired && ls->works_reqs == 0) {
			local_share_retire(ls);
			continue;
		}
		/* our file work drained: let LOCK_EFFECTS go when idle, or at once when someone waits */
		if (ls->effects_held && ls->works_reqs == 0 && (ls->effects_yield || !queued)) {
			local_effects_release(ls);
			continue;
		}
		idle = ls->busy_reqs == 0;
		maybe_checkpoint(ls, stopping && idle);
		/* parked files with nothing to checkpoint: the fds are held elsewhere, retry now and then */
		if (ls->blocked && !ls->ckpt_pending && now_mono_ns() - ls->blocked_retry_ns >= 10 * 1000 * 1000)
			unblock_all(ls);
		if (stopping && idle && !ls->ckpt_pending)
			break;
		if (idle && !ls->ckpt_pending && ls->my_lowest != ls->my_lowest_db)
			publish_txn(ls);   /* idle with synced intents: say so, delete them (one small commit) */

		/* nothing to take: wait for a completion, a submitter's poke or the checkpoint timer
		 * (when stopping or yielding, for the I/O still in flight) */
		bool sleep = false;
		pthread_mutex_lock(&ls->lock);
		if (!ls->q_head || ls->effects_yield)
			sleep = ls->sleeping = true;
		pthread_mutex_unlock(&ls->lock);
		io_uring_submit(&ls->ring);
		if (sleep) {
			if (ls->dirty || ls->dir_dirty || ls->blocked) {
				struct __kernel_timespec ts = { 0, (long long)(ls->blocked ? 10 * 1000 * 1000 : CKPT_INTERVAL_NS) };
				lg_uring_wait(&ls->ring, &ts);
			} else {
				lg_uring_wait(&ls->ring, NULL);
			}
			pthread_mutex_lock(&ls->lock);
			ls->sleeping = false;
			pthread_mutex_unlock(&ls->lock);
		}
	}
	if (ls->effects_held)
		local_effects_release(ls);
	final_sync(ls);
	dout(STORE, 5, "local store %s: %" PRIu64 " ops in %" PRIu64 " batches (%.1f per commit), %" PRIu64
	     " checkpoints", ls->path, ls->st_ops, ls->st_batches,
	     ls->st_batches ? (double)ls->st_ops / (double)ls->st_batches : 0.0, ls->st_ckpts);
	return NULL;
}

static int enqueue(struct local_store *ls, struct lreq *req)
{
	bool wake;
	int broken = atomic_load(&ls->broken);

	if (broken && req->kind == LR_WRITE)
		return broken;
	pthread_mutex_lock(&ls->lock);
	if (ls->stopping) {
		pthread_mutex_unlock(&ls->lock);
		return -ESHUTDOWN;
	}
	/* throttle, except the worker itself (callbacks): it would wait for itself */
	if (!pthread_equal(pthread_self(), ls->worker))
		while (ls->budget && ls->budget + req->charge > INFLIGHT_BUDGET)
			pthread_cond_wait(&ls->space, &ls->lock);
	ls->budget += req->charge;
	req->t0 = now_mono_ns();
	req->next = NULL;
	*ls->q_tail = req;
	ls->q_tail = &req->next;
	wake = ls->sleeping;
	ls->sleeping = false;
	pthread_mutex_unlock(&ls->lock);
	if (wake) {
		uint64_t one = 1;
		if (write(ls->evfd, &one, sizeof(one)) < 0)
			derr(STORE, "local store: eventfd write: %s", strerror(errno));
	}
	return 0;
}

static struct lreq *req_new(struct local_pool *lp, enum lreq_kind kind, const char *oid)
{
	struct lreq *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	req->kind = kind;
	req->pool = lp;
	if (oid && !(req->oid = strdup(oid))) {
		free(req);
		return NULL;
	}
	req->charge = sizeof(*req) + (oid ? strlen(oid) : 0);
	return req;
}

/* ---- backend operations --------------------------------------------- */

static int local_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_WRITE, oid);
	int r;

	if (!req) {
		store_op_free(op);
		return -ENOMEM;
	}
	req->op = op;
	req->cb = cb;
	req->arg = arg;
	req->charge += op->bytes + op->n * sizeof(struct store_subop);
	for (size_t i = 0; i < op->n && !req->effects; i++) {
		enum store_subop_kind k = op->v[i].kind;
		req->effects = k == SOP_WRITE || k == SOP_WRITE_FULL || k == SOP_APPEND || k == SOP_TRUNCATE ||
			       k == SOP_ZERO || k == SOP_REMOVE || k == SOP_ALLOCATE;
	}
	req->grow = op_growth(op);
	r = enqueue(lp->ls, req);
	if (r) {
		store_op_free(op);
		free(req->oid);
		free(req);
	}
	return r;
}

static int local_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
			     store_cb_t cb, void *arg)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_READ, oid);
	int r;

	if (!req)
		return -ENOMEM;
	if (len > INT_MAX)
		len = INT_MAX;
	req->effects = true;
	req->off = off;
	req->len = len;
	req->buf = buf;
	req->cb = cb;
	req->arg = arg;
	r = enqueue(lp->ls, req);
	if (r) {
		free(req->oid);
		free(req);
	}
	return r;
}

/* Run a query request in the worker (ordered after earlier writes) and wait. */
static int query_wait(struct local_pool *lp, struct lreq *req)
{
	struct store_completion *c = store_completion_new();
	int r;

	if (!c) {
		free(req->oid);
		free(req);
		return -ENOMEM;
	}
	req->cb = store_completion_cb;
	req->arg = c;
	r = enqueue(lp->ls, req);
	if (r) {
		free(req->oid);
		free(req);
		store_completion_free(c);
		return r;
	}
	return store_completion_wait(c);
}

static int local_stat(struct store_pool *p, const char *oid, struct store_stat *st)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_STAT, oid);

	if (!req)
		return -ENOMEM;
	req->st_out = st;
	return query_wait(lp, req);
}

static int local_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_OMAP_GET, oid);

	if (!req)
		return -ENOMEM;
	req->key = key;
	req->val = val;
	req->vlen = len;
	return query_wait(lp, req);
}

static int local_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
			   size_t max, struct store_kv **out, size_t *n, bool *more)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_OMAP_LIST, oid);

	if (!req)
		return -ENOMEM;
	req->after = after;
	req->prefix = prefix;
	req->max = max;
	req->kvs = out;
	req->nkv = n;
	req->more = more;
	return query_wait(lp, req);
}

static int local_list_objects(struct store_pool *p, char ***names, size_t *n)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_LIST, NULL);

	if (!req)
		return -ENOMEM;
	req->names = names;
	req->nkv = n;
	return query_wait(lp, req);
}

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
		if (obj_decode(&v, &rec, &ns, &nl, &oid, &ol))
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
	space_refresh(ls);
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
	r = -pthread_create(&ls->worker, NULL, worker_main, ls);
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

/* ---- fencing (store_blocklist_add) ------------------------------------------- */

static int local_instance_addr(struct store *st, char *buf, size_t len)
{
	struct local_store *ls = container_of(st, struct local_store, base);

	if (snprintf(buf, len, "%s", ls->addr) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int fence_key(const char *addr, char *key, size_t len)
{
	if (strncmp(addr, "local.", 6) || strlen(addr) > 6 + 32)
		return -EINVAL;
	snprintf(key, len, FENCE_PREFIX "%s", addr);
	return 0;
}

/* Set (@expire_secs >= 0; 0: until removed) or, @rm, remove a fence record, in a txn of its own. */
static int fence_put(struct store *st, const char *addr, double expire_secs, bool rm)
{
	struct local_store *ls = container_of(st, struct local_store, base);
	char key[64];
	uint64_t until = 0;
	MDB_val k, v;
	MDB_txn *txn;
	int r;

	if ((r = fence_key(addr, key, sizeof(key))))
		return r;
	if (!rm && expire_secs > 0) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		until = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec + (uint64_t)(expire_secs * 1e9);
	}
	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	k.mv_data = key;
	k.mv_size = strlen(key);
	if (rm) {
		r = mdb_del(txn, ls->db_meta, &k, NULL);
		r = r == MDB_NOTFOUND ? 0 : mdb_err(r);
	} else {
		v.mv_data = &until;
		v.mv_size = 8;
		r = mdb_err(mdb_put(txn, ls->db_meta, &k, &v, 0));
	}
	if (r) {
		mdb_txn_abort(txn);
		return r;
	}
	r = mdb_err(mdb_txn_commit(txn));
	if (!r)
		dinfo(STORE, "local store %s: %s %s", ls->path, rm ? "fence lifted for" : "fenced", addr);
	return r;
}

static int local_blocklist_add(struct store *st, const char *addr, double expire_secs)
{
	return fence_put(st, addr, expire_secs, false);
}

static int local_blocklist_rm(struct store *st, const char *addr)
{
	return fence_put(st, addr, 0, true);
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
