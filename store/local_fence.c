/*
 * local_fence.c - fencing (store_blocklist_add): each open of the store is an instance
 * "local.<random hex>"; a fence record "fence.<addr>" in the meta table,
 * with its expiry, makes every later write batch of that instance fail
 * with ESHUTDOWN.  The batch reads the record in its own write
 * transaction (local_fence_check), so no write commits after the fence
 * did.  Setting and lifting a fence use their own transactions from the
 * caller's thread; LMDB serialises writers, no lock of ours.
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

#define FENCE_PREFIX "fence."

/* Is this instance fenced?  Read in the batch's write txn.  0 or -ESHUTDOWN. */
int local_fence_check(struct local_store *ls, MDB_txn *txn)
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

/* ---- fencing (store_blocklist_add) ------------------------------------------- */

int local_instance_addr(struct store *st, char *buf, size_t len)
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

int local_blocklist_add(struct store *st, const char *addr, double expire_secs)
{
	return fence_put(st, addr, expire_secs, false);
}

int local_blocklist_rm(struct store *st, const char *addr)
{
	return fence_put(st, addr, 0, true);
}
