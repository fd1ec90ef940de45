/*
 * store.h - the object store API (librados-shaped).
 *
 * A store holds pools; a pool holds objects named by strings (an optional
 * namespace in front, as RADOS namespaces); an object has byte data and an
 * omap, a sorted map of string keys to byte values.  Writes are built as a
 * compound op (struct store_op) that applies atomically to one object, like
 * rados_write_op_t: all of it or none of it, even across a crash.  Every
 * operation is asynchronous with a completion callback; the blocking
 * wrappers wait on a completion.  A write's completion means the change is
 * durable (on stable storage), as with RADOS.
 *
 * Backends (local, rados) sit behind the table in store_backend.h and pass
 * the same conformance suite (tests/unit/test_store_conformance.c).
 *
 * Lock order: none visible to callers.  Callbacks run on a backend thread:
 * they must not block for long and must not call blocking store functions.
 */
#ifndef LOLIGO_STORE_STORE_H
#define LOLIGO_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct store;
struct store_pool;
struct store_op;
struct store_read_op;
struct store_aio;

/* Object names are at most this long (RADOS' default limit is 2048). */
#define STORE_OID_MAX 1024
#define STORE_OMAP_KEY_MAX 1024

struct store_config {
	const char *backend;      /* "local" or "rados" (tests: "mem", with mem_ok) */
	const char *local_path;   /* local: the store directory (must exist unless create) */
	bool create;              /* local: mkdir -p the directory and initialise it */
	const char *rados_conf;   /* rados: ceph.conf */
	const char *rados_id;     /* rados: client id, e.g. "admin" */
	double rados_mon_op_timeout;  /* seconds; 0 = default */
	double rados_osd_op_timeout;  /* seconds; 0 = default */
	uint64_t local_map_size;  /* local: LMDB map size (bytes, upper bound of metadata + redo log); 0 = 64 GiB */
	/* local: objects up to this size keep their bytes in LMDB, not in a file of their own
	 * (0: STORE_LOCAL_INLINE_DEFAULT; STORE_LOCAL_INLINE_OFF: never) */
	uint64_t local_inline_max;
	/* local: share of the filesystem in use at which the store is nearfull / full / past its failsafe
	 * (0: the defaults 0.85 / 0.95 / 0.97) */
	double local_nearfull_ratio, local_full_ratio, local_failsafe_ratio;
	/* local: writes pass up to the failsafe ratio, not the full ratio (the MDS's metadata: the
	 * journal entries that free space must get through when clients cannot write) */
	bool local_full_try;
	/* tests: backend "mem" (store/mem.h, local_path its name) may be opened; the daemons'
	 * options never set this, so no daemon runs on a store that forgets everything */
	bool mem_ok;
};

#define STORE_LOCAL_INLINE_DEFAULT (64u << 10)
#define STORE_LOCAL_INLINE_OFF UINT64_MAX

/**
 * store_config_from_cfg - fill @sc from the daemon's config options (CFG_store_*, CFG_rados_*).
 * The strings point to static storage, valid until the next call; @sc->create is false.
 */
void store_config_from_cfg(struct store_config *sc);
/**
 * store_config_data_from_cfg - the store that holds the data pool.  On
 * rados, the same cluster as store_config_from_cfg().  On the local backend
 * a store of its own, store_local_data_path (default <store_local_path>.data),
 * which the MDS and every client process on the machine open at once; @sc->create
 * is set (the first to open it makes it).  local_path is "" when neither
 * path is set.  Same lifetime rules as store_config_from_cfg().
 */
void store_config_data_from_cfg(struct store_config *sc);

/**
 * store_open - connect to a backend.
 * Return: 0 or -errno: -ENOENT (no such local store, create not set),
 * -EUCLEAN (a local store that is damaged or of another format: the
 * message says which file and what to do), -EBUSY (already open in this
 * process), -EACCES, -ENOTSUP (unknown backend or not built), -ETIMEDOUT /
 * -ECONNREFUSED (rados cluster unreachable).  A message for the user is
 * logged.  A local store may be open in several processes at once.
 */
int store_open(const struct store_config *cfg, struct store **out);
/**
 * store_open_error - the reason the last failed store_open() of this
 * thread gave, for a message on the terminal (it is also logged): why a
 * store was refused and what to do.  "" if it gave none.
 */
const char *store_open_error(void);
void store_close(struct store *st);
/** store_backend_name - "local" or "rados". */
const char *store_backend_name(const struct store *st);

/** store_pool_create - create pool @name; -EEXIST if it exists. */
int store_pool_create(struct store *st, const char *name);
/** store_pool_open - open pool @name in namespace @nspace ("" or NULL: default); -ENOENT. */
int store_pool_open(struct store *st, const char *name, const char *nspace, struct store_pool **out);
void store_pool_close(struct store_pool *p);

struct store_stat {
	uint64_t size;
	struct timespec mtime;
};

struct store_kv {
	char *key;
	void *val;
	size_t len;
};
void store_kv_free(struct store_kv *kvs, size_t n);

typedef void (*store_cb_t)(int r, void *arg);

/* ---- compound write ops: everything in one op applies atomically ----- */

struct store_op *store_op_new(void);
void store_op_free(struct store_op *op);
/* Fail the whole op with -EEXIST if the object exists (exclusive) or just create it. */
void store_op_create(struct store_op *op, bool exclusive);
/* Fail with -ENOENT unless the object exists (guard, like rados assert_exists). */
void store_op_assert_exists(struct store_op *op);
/*
 * A non-exclusive create moved before every sub-op queued so far: the ones
 * that need the object (omap rm/rm_range/clear, remove) then do nothing on a
 * missing object instead of failing the whole op with -ENOENT.  For an op
 * that leaves the object existing anyway (an omap set follows them).
 */
void store_op_create_first(struct store_op *op);
/* The op copies @buf: the caller may free it as soon as this returns. */
void store_op_write(struct store_op *op, uint64_t off, const void *buf, size_t len);
void store_op_write_full(struct store_op *op, const void *buf, size_t len);
/**
 * store_op_write_nocopy - store_op_write() without the copy: the op refers
 * to @buf, which must stay valid and unchanged until store_op_submit() (or
 * store_op_exec()) of the op has returned, or the op is freed unsubmitted.
 * On rados that saves a copy of every byte written (librados copies at
 * submit anyway); backends that read the data later get a copy at submit.
 */
void store_op_write_nocopy(struct store_op *op, uint64_t off, const void *buf, size_t len);
/** store_op_write_full_nocopy - store_op_write_full() under store_op_write_nocopy()'s rule. */
void store_op_write_full_nocopy(struct store_op *op, const void *buf, size_t len);
void store_op_append(struct store_op *op, const void *buf, size_t len);
void store_op_truncate(struct store_op *op, uint64_t size);
void store_op_zero(struct store_op *op, uint64_t off, uint64_t len);
/**
 * store_op_allocate - reserve the space of [@off, @off+@len) of the object,
 * as fallocate(2) reserves blocks of a file: the object is created if it
 * is missing and grows to @off+@len if it is shorter (the new bytes read as
 * zeros), its data stays as it was, and a later write inside the object
 * needs no new space from the store, also once it is full.  The whole op
 * fails with -ENOSPC when the store cannot hold the range, and with
 * -EOPNOTSUPP on a backend that cannot make that promise:
 *   local: the object's file gets the blocks (fallocate) before the op
 *          commits; writes into an object whose every byte has its blocks
 *          are admitted up to the failsafe ratio (their bytes still pass
 *          the redo log, which the checkpoints recycle), not the full one;
 *   rados: -EOPNOTSUPP.  RADOS reserves nothing per object: a full OSD
 *          refuses overwrites of allocated extents as it refuses any write
 *          (and BlueStore may skip writing zeros), so nothing written ahead
 *          could keep the promise.
 */
void store_op_allocate(struct store_op *op, uint64_t off, uint64_t len);
void store_op_remove(struct store_op *op);
void store_op_omap_set(struct store_op *op, const char *key, const void *val, size_t len);
void store_op_omap_rm(struct store_op *op, const char *key);
/* Remove every key in [start, end) (end NULL: to the end). */
void store_op_omap_rm_range(struct store_op *op, const char *start, const char *end);
void store_op_omap_clear(struct store_op *op);
/* The longest value store_op_omap_cmp() compares (longer, or empty: the op fails with -EINVAL at submit). */
#define STORE_OMAP_CMP_VAL_MAX (64u << 10)
/**
 * store_op_omap_cmp - guard the whole op: it applies only if the object
 * exists and its omap holds @key with exactly the @len bytes at @val;
 * otherwise nothing of it applies and it fails with -ECANCELED (a missing
 * object or key fails the same way).  Several guards may be queued; all
 * must hold.  Checked atomically with the op's other sub-ops, like rados'
 * omap_cmp (LIBRADOS_CMPXATTR_OP_EQ): the compare-and-swap under the MDS
 * map (an epoch key compared and rewritten in one op).  The op copies
 * @key and @val.
 *
 * Guards compare the object as it was before the op, wherever they are
 * queued in it, and are checked before its other guards (a missing object
 * is -ECANCELED, not assert_exists' -ENOENT).  @key longer than
 * STORE_OMAP_KEY_MAX fails the op at submit with -ENAMETOOLONG; @len 0 or
 * above STORE_OMAP_CMP_VAL_MAX with -EINVAL: RADOS compares a missing key
 * as the empty value, so "holds the empty value" cannot be checked there.
 */
void store_op_omap_cmp(struct store_op *op, const char *key, const void *val, size_t len);

/**
 * store_op_no_inject - testing: the fault injection (store_inject_write_error)
 * passes @op through.  For the MDS map's small writes: a test of a failing
 * store is about the journal and the objects, and an MDS that cannot write
 * its map cannot hold rank 0 at all.
 */
void store_op_no_inject(struct store_op *op);

/**
 * store_op_submit - apply @op to object @oid asynchronously; @cb(r, arg) runs
 * when it is durable (r = 0) or failed (-errno; nothing of it was applied).
 * Writing to a missing object creates it, as in RADOS.  The op is consumed
 * (freed by the store) whether or not submission succeeds.
 * Return: 0 if submitted, -errno if not (cb will not run).
 */
int store_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg);
/** store_op_exec - blocking store_op_submit; consumes @op. */
int store_op_exec(struct store_pool *p, const char *oid, struct store_op *op);

/* ---- reads ----------------------------------------------------------- */

/**
 * store_read_submit - read up to @len bytes at @off into @buf.  @cb gets the
 * byte count (short at end of object; holes read as zeros) or -ENOENT.
 */
int store_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
		      store_cb_t cb, void *arg);
/**
 * store_aio_read - start a read of up to @len bytes at @off into @buf that
 * the caller (or another thread) will wait for with store_aio_wait(): the
 * same result as store_read_submit's callback.  Where the backend can, the
 * waiter is woken by the thread that received the reply, with no callback
 * thread in between (rados: a completion without a callback, so librados'
 * finisher is not one more hop: a 4 KiB read costs one wakeup less).
 * @buf must stay valid until store_aio_wait() returns.  Every started read
 * must be waited for exactly once.
 * Return: 0 and *@out, or -errno (nothing started).
 */
int store_aio_read(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
		   struct store_aio **out);
/** store_aio_wait - wait for @a; bytes read (short at end of object) or -errno (-ENOENT: no object).  Frees @a. */
ssize_t store_aio_wait(struct store_aio *a);
/**
 * store_aio_read_lend - store_aio_read() into a buffer the store lends: on
 * rados the reply's own, so the bytes are never copied out of it (librados'
 * C API copies them into the caller's buffer, in the one messenger thread
 * that receives every OSD reply).  store_aio_wait_lent() gives the bytes;
 * they stay valid, and must not be written, until store_aio_put().  A store
 * that cannot lend (store_can_lend() false) reads into a buffer of malloc's.
 * Every started read must be put exactly once (waited for or not).
 * Return: 0 and *@out, or -errno (nothing started; @len 0 is -EINVAL).
 */
int store_aio_read_lend(struct store_pool *p, const char *oid, uint64_t off, size_t len, struct store_aio **out);
/**
 * store_aio_wait_lent - wait for a store_aio_read_lend(): bytes read (short at
 * the object's end; *@data points at them) or -errno (-ENOENT: no object;
 * *@data NULL).  Once per read; @a stays the caller's until store_aio_put().
 */
ssize_t store_aio_wait_lent(struct store_aio *a, const char **data);
/** store_aio_put - drop a store_aio_read_lend() and its buffer (waiting for it if nobody did). */
void store_aio_put(struct store_aio *a);
/** store_can_lend - whether store_aio_read_lend() lends the backend's own buffer (rados). */
bool store_can_lend(const struct store_pool *p);
/** store_read - blocking read; returns bytes read or -errno. */
ssize_t store_read(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf);
int store_stat(struct store_pool *p, const char *oid, struct store_stat *st);

/** store_omap_get - value of @key; -ENOENT if the object or key is missing. Caller frees *val. */
int store_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len);

/**
 * store_omap_list - up to @max pairs with keys > @after (NULL: from the
 * start) and starting with @prefix (NULL: any), in key order.  *@more is set
 * when more keys follow.  Caller frees with store_kv_free().
 * Return: 0 or -ENOENT (no object).
 */
int store_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
		    size_t max, struct store_kv **out, size_t *n, bool *more);

/**
 * struct store_omap_iter - every pair of an object's omap, in key order,
 * paged out with store_omap_list() @page pairs at a time.
 *
 *	struct store_omap_iter it;
 *	const struct store_kv *kv;
 *
 *	store_omap_iter_init(&it, pool, oid, NULL, 1024);
 *	while ((kv = store_omap_iter_next(&it)) != NULL)
 *		use(kv);
 *	r = store_omap_iter_end(&it);
 *
 * A missing object is an empty map, not an error.  A caller may stop early
 * (break) and must call store_omap_iter_end() in every case.  Not
 * thread-safe: one iterator per thread.
 */
struct store_omap_iter {
	struct store_pool *pool;
	const char *oid, *prefix;     /* borrowed: valid until store_omap_iter_end() */
	size_t page;
	struct store_kv *kvs;         /* the current page */
	size_t n, i;
	bool more;                    /* store_omap_list said more keys follow */
	bool started;
	int err;
};

/** store_omap_iter_init - an iterator over @oid's pairs starting with @prefix (NULL: all), @page at a time. */
void store_omap_iter_init(struct store_omap_iter *it, struct store_pool *p, const char *oid, const char *prefix,
			  size_t page);
/**
 * store_omap_iter_next - the next pair, or NULL at the end or on an error
 * (store_omap_iter_end() tells which).  The pair belongs to the iterator
 * and is valid until the next call.
 */
const struct store_kv *store_omap_iter_next(struct store_omap_iter *it);
/** store_omap_iter_end - free the iterator's page.  Return: 0, or the -errno that ended the listing. */
int store_omap_iter_end(struct store_omap_iter *it);

/** store_list_objects - names of objects in the pool (for tools and tests); free each and the array. */
int store_list_objects(struct store_pool *p, char ***names, size_t *n);

/* ---- space ------------------------------------------------------------ */

enum store_space_state {
	STORE_SPACE_OK,
	STORE_SPACE_NEARFULL,   /* past the nearfull ratio: a warning */
	STORE_SPACE_FULL,       /* past the full ratio: writes that need space fail with ENOSPC */
	STORE_SPACE_FAILSAFE,   /* past the failsafe ratio: only ops that free space pass */
};

struct store_space {
	uint64_t total, used, avail;   /* bytes of the filesystem the store lives on */
	enum store_space_state state;
	double nearfull_ratio, full_ratio, failsafe_ratio;
	uint64_t enospc;               /* write ops refused with ENOSPC since open */
};

/**
 * store_space - how full the store is.  Cheap (at most one statvfs per
 * 100 ms), any thread.  On rados: the cluster's raw capacity and use
 * (rados_cluster_stat; the state is always ok, the cluster's own full
 * flags are Ceph's to enforce).  Return: 0 or -errno.
 */
int store_space(struct store *st, struct store_space *out);
/* What one pool holds (`loligo df`). */
struct store_pool_stat {
	uint64_t objects;
	uint64_t bytes_stored;   /* logical bytes of its objects (sizes; holes count) */
	uint64_t bytes_used;     /* bytes the backend allocated for them (sparse files: what is written) */
	bool partial;            /* too many objects to count them all: a lower bound */
};

/**
 * store_pool_stat - objects and bytes of pool @p.  On rados the pool's own
 * statistics (the cluster's, with its replication in bytes_used); on local
 * a scan of the pool's objects, cut short (partial) past a million.  Any
 * thread, blocking.  Return: 0 or -errno (-ENOTSUP: the backend cannot tell).
 */
int store_pool_stat(struct store_pool *p, struct store_pool_stat *out);
/*
 * Fencing (what an MDS eviction does to the client's data path, Ceph's
 * `osd blocklist`).  Every open store handle is an instance with an
 * address; an address on the store's blocklist can no longer write: its
 * write ops fail with -ESHUTDOWN (librados' EBLOCKLISTED) from the moment
 * store_blocklist_add() returns, until the entry expires or is removed.
 *   rados: the librados instance (rados_getaddrs(), "v2:IP:PORT/NONCE"),
 *          blocklisted in the OSD map (rados_blocklist_add): every OSD then
 *          refuses its ops, reads included.
 *   local: "local.<hex>", random per open; the fence is a record in the
 *          store's LMDB that every write batch of that instance reads in
 *          the transaction that would commit it, so once the fence's own
 *          transaction has committed no later write of the instance
 *          commits (writes that committed before stay: they happened
 *          before the eviction).  Reads still work.
 */
#define STORE_ADDR_MAX 256
/** store_instance_addr - this handle's address (NUL-terminated).  Return: 0 or -ENOTSUP/-errno. */
int store_instance_addr(struct store *st, char *buf, size_t len);
/**
 * store_blocklist_add - fence @addr for @expire_secs (0: until removed).
 * Blocks until the fence holds (rados: the monitor command returned).
 * Return: 0 or -errno (-EINVAL: not an address of this backend).
 */
int store_blocklist_add(struct store *st, const char *addr, double expire_secs);
/** store_blocklist_rm - lift the fence of @addr.  Return: 0 (also when there was none) or -errno. */
int store_blocklist_rm(struct store *st, const char *addr);

/** store_space_state_name - "ok", "nearfull", "full", "failsafe". */
const char *store_space_state_name(enum store_space_state s);

/* ---- async wrappers for blocking callers ----------------------------- */

/* A completion to wait on: pass store_completion_cb and the completion. */
struct store_completion;
struct store_completion *store_completion_new(void);
void store_completion_cb(int r, void *arg);
/** store_completion_wait - wait and return r; frees the completion. */
int store_completion_wait(struct store_completion *c);

/* ---- file data in a data pool (DESIGN.md 4; store/file_data.c) ----------
 * A file's data objects "<ino hex>.<objno %08x>" and its object index
 * "<ino hex>.objs" (omap: a key per data object that may exist), so that
 * truncating and purging cost what exists, never what the size says.  See
 * the top of file_data.c for the invariant writers and trimmers keep.
 */

/*
 * A file's layout: which object, and where in it, holds byte B of the file
 * (Ceph's file_layout_t and Striper::file_to_extents).  The file is cut in
 * stripe units; units go round-robin over stripe_count objects (one object
 * set), object_size / stripe_unit units per object, then the next object
 * set.  stripe_count 1 and stripe_unit = object_size is the plain layout:
 * byte B in object B / object_size at B % object_size.  Everything that
 * turns an offset into an object (reads, writes, truncate, punch, seek,
 * purge, the object index) goes through these.
 */
struct store_file_layout {
	uint32_t object_size;   /* bytes per object */
	uint32_t stripe_unit;   /* bytes in one object before the next; divides object_size */
	uint32_t stripe_count;  /* objects in one object set */
	/* where the data objects are, for the caller (the mapping does not look):
	 * loligo's data pool id (0: the filesystem's first data pool, which also
	 * holds every file's object index) and, once opened, its handle */
	uint32_t pool_id;
	struct store_pool *pool;
};

/**
 * store_file_layout_init - @ly from an inode's fields: 0 in @stripe_unit or
 * @stripe_count is the plain layout (older inodes); a layout that does not
 * hold together (unit not dividing the object size) also falls back to it,
 * so a bad field can never put bytes at two places.  @object_size 0: 4 MiB.
 * The pool fields are cleared.
 */
void store_file_layout_init(struct store_file_layout *ly, uint32_t object_size, uint32_t stripe_unit,
			    uint32_t stripe_count);
/** store_file_layout_plain - is @ly the one-object-after-another layout? */
bool store_file_layout_plain(const struct store_file_layout *ly);
/**
 * store_file_map - byte @off of the file is at *@objoff of object *@objno.
 * Return: how many bytes from @off on lie contiguously there (to the end of
 * the stripe unit), at least 1.
 */
uint64_t store_file_map(const struct store_file_layout *ly, uint64_t off, uint64_t *objno, uint64_t *objoff);
/** store_file_unmap - the file offset of byte @objoff of object @objno (the inverse of store_file_map). */
uint64_t store_file_unmap(const struct store_file_layout *ly, uint64_t objno, uint64_t objoff);
/**
 * store_file_obj_keep - how many leading bytes of object @objno hold file
 * bytes below @size (what a truncate to @size keeps of it: 0 removes it).
 */
uint64_t store_file_obj_keep(const struct store_file_layout *ly, uint64_t objno, uint64_t size);
/** store_file_obj_first - the lowest object number a truncate to @size may touch. */
uint64_t store_file_obj_first(const struct store_file_layout *ly, uint64_t size);
/** store_file_obj_end - one past the highest object number that may hold bytes below @size. */
uint64_t store_file_obj_end(const struct store_file_layout *ly, uint64_t size);

/** store_file_oid - data object @objno of file @ino into @buf (>= 32 bytes). */
void store_file_oid(char *buf, size_t len, uint64_t ino, uint64_t objno);
/** store_file_index_oid - the object index of file @ino into @buf (>= 32 bytes). */
void store_file_index_oid(char *buf, size_t len, uint64_t ino);
/** store_file_index_key - the index key of @objno ("%016x") into @buf (>= 17 bytes). */
void store_file_index_key(char *buf, size_t len, uint64_t objno);
/** store_file_index_note - add "object @objno may exist" to an op on the index object. */
void store_file_index_note(struct store_op *op, uint64_t objno);
/**
 * store_file_pool_indexed - does every file in @p keep an object index (the
 * pool carries the marker)?  Return: 1, 0 (a pool from before the index:
 * trims fall back to the size), or -errno.  Blocking.
 */
int store_file_pool_indexed(struct store_pool *p);
/** store_file_pool_mark_indexed - mark a pool made for a new filesystem.  Blocking. */
int store_file_pool_mark_indexed(struct store_pool *p);

/*
 * A trim of one file's data to @size (0: a purge, which also removes the
 * index), done in bounded steps.  Fields are the cursor: read-only for the
 * caller but for the counters.
 */
struct store_file_trim {
	uint64_t ino;
	struct store_file_layout ly;
	struct store_pool *data;   /* the data objects' pool (NULL: the index's, store_file_trim_step's @p) */
	uint64_t size;      /* objects past it go; the one holding it is cut */
	bool indexed;       /* trust the index (marked pool) */
	uint64_t next;      /* next object number to consider */
	uint64_t end;       /* without an index: one past the last object number */
	uint64_t removed;   /* objects removed so far */
	uint64_t ops;       /* store ops submitted so far */
	bool done;
};

/**
 * store_file_trim_init - a trim of file @ino (layout @ly) to
 * @new_size.  @old_size bounds the fallback for pools without an index
 * (the caller clamps it, e.g. to max_file_size); an indexed trim ignores it.
 */
void store_file_trim_init(struct store_file_trim *t, uint64_t ino, const struct store_file_layout *ly,
			  uint64_t new_size, uint64_t old_size, bool indexed);
/**
 * store_file_trim_step - one bounded slice of @t, the index in @p (the data
 * objects in t->data when set): at most @max objects removed
 * (or cut), at most @inflight ops in flight.  Blocking; no lock held.
 * Return: 1 when more is left, 0 when the trim is complete, -errno (the
 * step may be retried: everything is idempotent).
 */
int store_file_trim_step(struct store_pool *p, struct store_file_trim *t, unsigned int max, unsigned int inflight);

#endif
