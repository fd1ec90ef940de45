/*
 * store_backend.h - private to store/: the table of backend operations and
 * the in-memory form of a compound op.
 *
 * store.c builds ops and validates arguments, then calls through the table
 * of the backend chosen at store_open() time, the way redis' ae.c picks
 * ae_epoll.c.  A backend embeds struct store / struct store_pool as the first
 * member of its own structs and gets back to them with container_of.
 */
#ifndef LOLIGO_STORE_BACKEND_H
#define LOLIGO_STORE_BACKEND_H

#include <stddef.h>
#include <sys/types.h>

#include "store/store.h"

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

enum store_subop_kind {
	SOP_CREATE,        /* excl */
	SOP_ASSERT_EXISTS,
	SOP_WRITE,         /* off, len, data */
	SOP_WRITE_FULL,    /* len, data */
	SOP_APPEND,        /* len, data */
	SOP_TRUNCATE,      /* off = new size */
	SOP_ZERO,          /* off, len */
	SOP_REMOVE,
	SOP_OMAP_SET,      /* key, data, len */
	SOP_OMAP_RM,       /* key */
	SOP_OMAP_RM_RANGE, /* key = start, key2 = end (NULL: to the end) */
	SOP_OMAP_CLEAR,
	SOP_ALLOCATE,      /* off, len (store_op_allocate) */
	SOP_OMAP_CMP,      /* key, data, len: a guard (store_op_omap_cmp), see store_op_guards_hold() */
};

struct store_subop {
	enum store_subop_kind kind;
	bool excl;
	uint64_t off;
	uint64_t len;
	char *key;
	char *key2;
	void *data;   /* owned (unless borrowed); write data or omap value */
	bool borrowed;   /* data is the caller's (store_op_write_nocopy): valid until submit returns */
};

struct store_op {
	struct store_subop *v;
	size_t n, cap;
	size_t bytes;   /* payload bytes (data, keys, values): for throttling */
	int err;        /* first error while building (-ENOMEM, -ENAMETOOLONG, -EINVAL) */
	bool no_inject; /* store_op_no_inject(): store_inject_write_error leaves it alone */
};

struct store_backend {
	const char *name;
	/* the backend is done with the op's data when op_submit returns (rados:
	 * librados copied it into its own buffers); otherwise store.c copies
	 * borrowed data before op_submit, since the backend reads it later */
	bool data_copied_at_submit;
	/* SOP_ALLOCATE is kept (store_op_allocate); without, store.c fails such ops with -EOPNOTSUPP */
	bool can_allocate;
	/* a store that lives only in this process (mem): store_open() opens it only for
	 * a config that asks for it (store_config.mem_ok), never from the daemons' options */
	bool in_process_only;
	int (*open)(const struct store_config *cfg, struct store **out);
	void (*close)(struct store *st);
	int (*pool_create)(struct store *st, const char *name);
	int (*pool_open)(struct store *st, const char *name, const char *nspace, struct store_pool **out);
	void (*pool_close)(struct store_pool *p);
	/* consumes @op in every case; cb runs only when 0 is returned */
	int (*op_submit)(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg);
	int (*read_submit)(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
			   store_cb_t cb, void *arg);
	int (*stat)(struct store_pool *p, const char *oid, struct store_stat *st);
	int (*omap_get)(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len);
	int (*omap_list)(struct store_pool *p, const char *oid, const char *after, const char *prefix,
			 size_t max, struct store_kv **out, size_t *n, bool *more);
	int (*list_objects)(struct store_pool *p, char ***names, size_t *n);
	int (*space)(struct store *st, struct store_space *out);   /* optional */
	int (*pool_stat)(struct store_pool *p, struct store_pool_stat *out);   /* optional */
	/* optional: a read waited for by the caller (store_aio_read); without
	 * them store.c runs read_submit with a completion */
	int (*aio_read)(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
			struct store_aio **out);
	ssize_t (*aio_wait)(struct store_aio *a);
	/* optional: a read into a buffer the backend lends (store_aio_read_lend);
	 * without, store.c reads into a buffer of malloc's.  aio_wait_lent and
	 * aio_put are also what a lent read's own store_aio->be carries. */
	int (*aio_read_lend)(struct store_pool *p, const char *oid, uint64_t off, size_t len,
			     struct store_aio **out);
	ssize_t (*aio_wait_lent)(struct store_aio *a, const char **data);
	void (*aio_put)(struct store_aio *a);
	/* fencing (optional): see store_blocklist_add() */
	int (*instance_addr)(struct store *st, char *buf, size_t len);
	int (*blocklist_add)(struct store *st, const char *addr, double expire_secs);
	int (*blocklist_rm)(struct store *st, const char *addr);
};

/* Every backend's store_aio starts with one of these (NULL be: store.c's own). */
struct store_aio {
	const struct store_backend *be;
};

/* Every handle starts with one of these. */
struct store {
	const struct store_backend *be;
};

struct store_pool {
	struct store *st;
};

extern const struct store_backend store_local_backend;
extern const struct store_backend store_mem_backend;
#ifdef LOLIGO_HAVE_RADOS
/* the entry of the rados module (store_rados.so), found by dlsym() */
extern const struct store_backend store_rados_backend;
#endif

/* Helpers shared by the backends (store.c). */
/* what store_open_error() returns: set it where open refuses a store, next to the derr() */
void store_open_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* derr() and store_open_error_set() in one */
#define store_open_refuse(fmt, ...)                                   \
	do {                                                          \
		store_open_error_set(fmt, ##__VA_ARGS__);             \
		derr(STORE, fmt, ##__VA_ARGS__);                      \
	} while (0)
void store_completion_free(struct store_completion *c);
/*
 * store_op_precheck - the existence guards every backend applies before an
 * op changes anything: -EEXIST (exclusive create of an object that exists),
 * -ENOENT (assert, omap removal or remove of one that does not, counting
 * what the op's earlier subops made or removed), else 0.
 */
int store_op_precheck(const struct store_op *op, bool exists);
/*
 * store_op_guards_hold - the omap_cmp guards of @op, checked before
 * store_op_precheck() against the object as it is before the op: 0 when
 * every one holds (or there are none), -ECANCELED when one does not (the
 * object is missing, @exists false, or a key or value differs), or the
 * -errno @lookup failed with.  @lookup(@arg, key, &val, &len) finds a key
 * of the object's omap: 0 and the value (borrowed), -ENOENT, or -errno.
 */
typedef int (*store_omap_lookup_t)(void *arg, const char *key, const void **val, size_t *len);
int store_op_guards_hold(const struct store_op *op, bool exists, store_omap_lookup_t lookup, void *arg);
/* does @op have omap_cmp guards? */
bool store_op_has_guards(const struct store_op *op);
/* key comparison as RADOS and LMDB do it: bytewise, a prefix sorts first */
int store_keycmp(const char *a, size_t alen, const char *b, size_t blen);

#endif
