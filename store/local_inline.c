/*
 * local_inline.c - inline objects: small objects whose bytes live in LMDB's "inline"
 * table, applied inside the batch's write transaction with no intent and
 * no file.  When an op makes or keeps an object inline, and running such
 * an op.  Worker thread only (inside its write transaction): no lock.
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
 * all through the op (local_op_peak_size), and keeps an inline object so when it
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
uint64_t local_op_peak_size(const struct store_op *op, bool exists, uint64_t size, uint64_t limit)
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

void local_inline_key(unsigned char *k, uint64_t fid)
{
	put_be64(k, fid);
}

/* The bytes of inline object @rec, in a new buffer of @rec->size (NULL for 0). */
int local_inline_take(struct local_store *ls, MDB_txn *txn, const struct objrec *rec, void **out)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	*out = NULL;
	if (!rec->size)
		return 0;
	local_inline_key(kb, rec->fid);
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

int local_inline_del(struct local_store *ls, MDB_txn *txn, uint64_t fid)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb };
	int rc;

	local_inline_key(kb, fid);
	rc = mdb_del(txn, ls->db_inline, &k, NULL);
	return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

static int inline_put(struct local_store *ls, MDB_txn *txn, uint64_t fid, const void *data, uint64_t len)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v = { len, (void *)data };

	if (!len)
		return local_inline_del(ls, txn, fid);
	local_inline_key(kb, fid);
	return mdb_err(mdb_put(txn, ls->db_inline, &k, &v, 0));
}

/*
 * exec_write for an op that keeps its object inline (@peak: the largest
 * size it gives it, local_op_peak_size): the bytes are changed in a buffer and
 * put back with the record.  Same contract as exec_write.
 */
int local_exec_write_inline(struct local_store *ls, MDB_txn *txn, struct lreq *req, struct objrec *rec,
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
		r = local_inline_take(ls, txn, rec, &cur);
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
		case SOP_OMAP_CMP:
			break;   /* checked by exec_write before anything was written */
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
			r = local_omap_clear(ls, txn, rec->fid);
			memset(buf, 0, rec->size);
			rec->exists = false;
			rec->size = 0;
			mutated = true;
			break;
		case SOP_OMAP_SET:
			ENSURE_EXISTS();
			mutated = true;
			r = local_omap_put(ls, txn, rec->fid, s->key, s->data, s->len);
			break;
		case SOP_OMAP_RM:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = local_omap_del(ls, txn, rec->fid, s->key);
			break;
		case SOP_OMAP_RM_RANGE:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = local_omap_rm_range(ls, txn, rec->fid, s->key, s->key2);
			break;
		case SOP_OMAP_CLEAR:
			if (!rec->exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = local_omap_clear(ls, txn, rec->fid);
			break;
		case SOP_ALLOCATE:
			r = -EINVAL;   /* never inline (local_op_peak_size) */
			break;
		}
	}
#undef ENSURE_EXISTS
	if (r == 0 && mutated) {
		/* the old incarnation's bytes go if it was removed (a new one has another fid) */
		if (existed && (!rec->exists || rec->fid != old_fid))
			r = local_inline_del(ls, txn, old_fid);
		if (r == 0 && rec->exists) {
			rec->mtime_ns = now_real_ns();
			r = local_obj_put(ls, txn, lp, req->oid, rec);
			if (r == 0)
				r = inline_put(ls, txn, rec->fid, buf, rec->size);
		} else if (r == 0 && existed) {
			r = local_obj_del(ls, txn, lp, req->oid);
		}
	}
	free(buf);
	if (r == 0)
		*fatal = false;
	return r;
}
