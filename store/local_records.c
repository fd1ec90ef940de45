/*
 * local_records.c - the LMDB records of the local store: the object table (an object's
 * record: fid, size, mtime, flags, keyed by pool + namespace + name or a
 * hash of them) and every object's omap (long keys stored as a prefix and
 * a hash, listed in full-key order).  Pure functions over an LMDB
 * transaction given by the caller; no lock of their own (the worker's
 * write transaction, or a read transaction, serialises them).  The
 * on-disk format is in local_int.h.
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

/* ---- object table --------------------------------------------------- */

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
int local_obj_decode(const MDB_val *v, struct objrec *rec, const char **ns, size_t *nslen,
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

int local_obj_lookup(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid,
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
	if (local_obj_decode(&val, rec, &ns, &nl, &o, &ol)) {
		derr(STORE, "local store %s: corrupt object record for '%s'", ls->path, oid);
		return -EIO;
	}
	if (nl != strlen(lp->ns) || memcmp(ns, lp->ns, nl) || ol != strlen(oid) || memcmp(o, oid, ol)) {
		derr(STORE, "local store %s: object key hash collision for '%s'", ls->path, oid);
		return -EIO;
	}
	return 0;
}

int local_obj_put(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid,
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

int local_obj_del(struct local_store *ls, MDB_txn *txn, const struct local_pool *lp, const char *oid)
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

int local_omap_put(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key, const void *val,
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

int local_omap_lookup(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key, struct oent *e)
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

int local_omap_del(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *key)
{
	unsigned char k[OMAP_EKEY_MAX];
	size_t klen = strlen(key);
	MDB_val ek = { omap_ekey(fid, key, klen, k), k };
	struct oent e;
	int r = local_omap_lookup(ls, txn, fid, key, &e);

	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	return mdb_err(mdb_del(txn, ls->db_omap, &ek, NULL));
}

int local_omap_clear(struct local_store *ls, MDB_txn *txn, uint64_t fid)
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
int local_omap_rm_range(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *start, const char *end)
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

int local_omap_list_txn(struct local_store *ls, MDB_txn *txn, uint64_t fid, const char *after, const char *prefix,
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
