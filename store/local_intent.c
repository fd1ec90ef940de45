/*
 * local_intent.c - the redo log: encoding one op's file effects as an intent record
 * (local_intent_put, in the batch's write transaction) and decoding
 * intents (for redo, local_share.c).  The format is in local_int.h.  No
 * lock: the worker thread builds intents inside its write transaction.
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

/* ---- intents (the redo log) ----------------------------------------- */

/* The format of an intent is in local_int.h. */

int local_irecs_add(struct irecs *rs, enum fw_kind kind, uint64_t fid, uint64_t a, uint64_t b, const void *data)
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

int local_intent_put(struct local_store *ls, MDB_txn *txn, uint64_t seq, const struct irecs *rs)
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
