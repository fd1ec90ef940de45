/*
 * local_exec.c - executing a batch: the existence pre-check, each write op applied
 * into the batch's one LMDB write transaction (its records, omap and
 * intent; inline ones in local_inline.c), reads and queries answered from
 * the same transaction, the commit (the sync point of every op of the
 * batch), then the callbacks and the file works queued in order.  A batch
 * that cannot commit fails every request in it with nothing applied.
 * Worker thread only; ls->lock is not taken here (local_file.c takes it
 * to return budget).
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

/* ---- executing requests inside the batch transaction ---------------- */

/*
 * The only ways an op fails by itself are its guards: the omap_cmp ones
 * (store_op_guards_hold, read in this same write transaction, so nothing
 * can change the key between the compare and the commit, in this process
 * or another) and the existence ones (store_op_precheck).  Checking them
 * first, on the object's record and a simulated "exists" flag, lets the op
 * be applied straight into the batch transaction: no LMDB nested
 * transaction (each of which allocates a large dirty list) per op.
 * Anything failing after this point is a resource error (ENOSPC, ENOMEM,
 * EIO) and aborts the whole batch, so an op is still applied entirely or
 * not at all.
 */

/* store_op_guards_hold()'s lookup: a key of one object's omap in the batch transaction */
struct guard_ctx {
	struct local_store *ls;
	MDB_txn *txn;
	uint64_t fid;
};

static int guard_lookup(void *arg, const char *key, const void **val, size_t *len)
{
	struct guard_ctx *g = arg;
	struct oent e;
	int r = local_omap_lookup(g->ls, g->txn, g->fid, key, &e);

	if (r)
		return r;
	*val = e.val;
	*len = e.vlen;
	return 0;
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

	r = local_obj_lookup(ls, txn, lp, req->oid, &rec);
	if (r)
		return r;
	existed = rec.exists;
	if (store_op_has_guards(op)) {
		struct guard_ctx g = { ls, txn, rec.fid };

		r = store_op_guards_hold(op, rec.exists, guard_lookup, &g);
		if (r)
			return r;
	}
	r = store_op_precheck(op, rec.exists);
	if (r)
		return r;
	if (rec.exists ? rec.inl : ls->inline_max > 0 && ls->inline_room) {
		/* a new object may be made inline up to the limit; an inline one
		 * stays so while ops do not grow it: one that grows is a stream
		 * (the MDS's journal segments, a file written in pieces), and every
		 * op on an inline object rewrites all of it in LMDB */
		uint64_t limit = rec.exists ? rec.size : ls->inline_max;

		uint64_t peak = local_op_peak_size(op, rec.exists, rec.size, limit);

		if (peak <= limit) {
			r = local_admit(ls, req, &rec, true);
			return r ? r : local_exec_write_inline(ls, txn, req, &rec, peak, fatal);
		}
	}
	r = local_admit(ls, req, &rec, false);
	if (r)
		return r;
	if (rec.exists && rec.inl) {
		/* it spills: its bytes go to its file first, in the op's intent */
		r = local_inline_take(ls, txn, &rec, &req->spill);
		if (r)
			return r;
		*fatal = true;
		if (rec.size)
			r = local_irecs_add(&rs, FW_WRITE, rec.fid, 0, rec.size, req->spill);
		if (r == 0)
			r = local_inline_del(ls, txn, rec.fid);
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
		case SOP_OMAP_CMP:
			break;   /* checked before anything was written (store_op_guards_hold) */
		case SOP_WRITE:
			/* as in RADOS, a 0-byte write still extends the size to its offset */
			ENSURE_EXISTS();
			mutated = true;
			if (s->len)
				r = local_irecs_add(&rs, FW_WRITE, rec.fid, s->off, s->len, s->data);
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
			r = local_irecs_add(&rs, FW_TRUNC, rec.fid, s->len, 0, NULL);
			if (r == 0 && s->len)
				r = local_irecs_add(&rs, FW_WRITE, rec.fid, 0, s->len, s->data);
			rec.alloc = true;   /* every byte of it written */
			rec.size = s->len;
			break;
		case SOP_APPEND:
			ENSURE_EXISTS();
			mutated = true;
			if (s->len)
				r = local_irecs_add(&rs, FW_WRITE, rec.fid, rec.size, s->len, s->data);
			rec.size += s->len;
			break;
		case SOP_TRUNCATE:
			if (!rec.exists)
				break;   /* RADOS: truncating a missing object does not create it */
			mutated = true;
			r = local_irecs_add(&rs, FW_TRUNC, rec.fid, s->off, 0, NULL);
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
				r = local_irecs_add(&rs, FW_TRUNC, rec.fid, s->off, 0, NULL);
				rec.size = s->off;
			} else {
				r = local_irecs_add(&rs, FW_ZERO, rec.fid, s->off, s->len, NULL);
				rec.alloc = false;   /* a hole now */
			}
			break;
		case SOP_ALLOCATE:
			/* the blocks were reserved before the commit (local_admit); this
			 * reserves them again in order after the effects queued
			 * before it, without anything to redo */
			ENSURE_EXISTS();
			mutated = true;
			r = local_irecs_add(&rs, FW_ALLOC, rec.fid, s->off, s->len, NULL);
			rec.alloc = (rec.alloc && s->off <= rec.size) || (s->off == 0 && s->len >= rec.size);
			if (s->off + s->len > rec.size)
				rec.size = s->off + s->len;
			break;
		case SOP_REMOVE:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			r = local_omap_clear(ls, txn, rec.fid);
			if (r == 0)
				r = local_irecs_add(&rs, FW_UNLINK, rec.fid, 0, 0, NULL);
			rec.exists = false;
			mutated = true;
			break;
		case SOP_OMAP_SET:
			ENSURE_EXISTS();
			mutated = true;
			r = local_omap_put(ls, txn, rec.fid, s->key, s->data, s->len);
			break;
		case SOP_OMAP_RM:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = local_omap_del(ls, txn, rec.fid, s->key);
			break;
		case SOP_OMAP_RM_RANGE:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = local_omap_rm_range(ls, txn, rec.fid, s->key, s->key2);
			break;
		case SOP_OMAP_CLEAR:
			if (!rec.exists) {
				r = -ENOENT;
				break;
			}
			mutated = true;
			r = local_omap_clear(ls, txn, rec.fid);
			break;
		}
	}
#undef ENSURE_EXISTS
	if (r)
		goto out_fail;
	if (mutated) {
		if (rec.exists) {
			rec.mtime_ns = now_real_ns();
			r = local_obj_put(ls, txn, lp, req->oid, &rec);
		} else if (existed) {
			r = local_obj_del(ls, txn, lp, req->oid);
		}
	}
	if (r == 0 && rs.persisted) {
		req->seq = ls->next_seq++;
		r = local_intent_put(ls, txn, req->seq, &rs);
	}
	for (size_t i = 0; i < rs.n && r == 0; i++)
		r = local_plan_work(req, rs.v[i].kind, rs.v[i].fid, rs.v[i].a, rs.v[i].b, (void *)rs.v[i].data);
	if (r)
		goto out_fail;
	free(rs.v);
	*fatal = false;
	return 0;

out_fail:
	free(rs.v);
	local_drop_planned(req);
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
	r = local_obj_lookup(ls, txn, req->pool, req->oid, &rec);
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

		local_inline_key(kb, rec.fid);
		rc = mdb_get(txn, ls->db_inline, &k, &v);
		if (rc || v.mv_size != rec.size) {
			derr(STORE, "local store %s: inline object '%s' (fid %" PRIx64 ") has %zu bytes where its record "
				    "says %" PRIu64, ls->path, req->oid, rec.fid, rc ? (size_t)0 : v.mv_size, rec.size);
			return rc && rc != MDB_NOTFOUND ? mdb_err(rc) : -EIO;
		}
		memcpy(req->buf, (const unsigned char *)v.mv_data + req->off, n);
		return (int)n;
	}
	r = local_plan_work(req, FW_READ, rec.fid, req->off, n, req->buf);
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
			if (local_obj_decode(&val, &rec, &ns, &rnl, &oid, &ol)) {
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

	r = local_obj_lookup(ls, txn, req->pool, req->oid, &rec);
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
		r = local_omap_lookup(ls, txn, rec.fid, req->key, &e);
		if (r)
			return r;
		*req->val = malloc(e.vlen ? e.vlen : 1);
		if (!*req->val)
			return -ENOMEM;
		memcpy(*req->val, e.val, e.vlen);
		*req->vlen = e.vlen;
		return 0;
	case LR_OMAP_LIST:
		return local_omap_list_txn(ls, txn, rec.fid, req->after, req->prefix, req->max, req->kvs, req->nkv, req->more);
	default:
		return -EINVAL;
	}
}

/* Nothing of @batch reached the disk: fail every request in it with @r. */
void local_fail_batch(struct local_store *ls, struct lreq *batch, int r)
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
		local_drop_planned(req);
		req->seq = 0;
		req->r = r;
		local_req_callback(ls, req);
		local_req_free(ls, req);
	}
}

void local_run_batch(struct local_store *ls, struct lreq *batch)
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
		local_batch_room_init(ls);
		/* inline bytes live in LMDB's map (store_local_map_size): past
		 * half of it, new objects get files, so the map is never what
		 * runs out while the disk has room */
		ls->inline_room = mdb_env_info(ls->env, &ei) == 0 && mdb_env_stat(ls->env, &es) == 0 &&
				  ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize < (uint64_t)ei.me_mapsize / 2;
		fenced = local_fence_check(ls, txn);
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
					local_space_refresh(ls);
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
		local_fail_batch(ls, batch, r);
		return;
	}
	/*
	 * Committed, so durable: call back (reads excepted: they wait for their
	 * data), then queue the file effects in order.  A request whose works
	 * all complete synchronously may be freed inside local_req_queue_works().
	 */
	perf_inc(&ls->pc_batches, 1);
	if (ls->test_stall_apply_ns && ls->next_seq != seq0) {
		/* test hook: acknowledged, and the effects not applied yet, for a while */
		struct timespec ts = { (time_t)(ls->test_stall_apply_ns / 1000000000u),
				       (long)(ls->test_stall_apply_ns % 1000000000u) };
		for (req = batch; req; req = req->next)
			if (req->kind == LR_WRITE)
				local_req_callback(ls, req);
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
			local_req_callback(ls, req);
		if (req->seq) {
			req->fnext = NULL;
			if (ls->fifo_tail)
				ls->fifo_tail->fnext = req;
			else
				ls->fifo_head = req;
			ls->fifo_tail = req;
		}
		if (req->pending) {
			local_req_queue_works(ls, req);
			continue;
		}
		local_req_callback(ls, req);
		local_req_free(ls, req);
	}
}
