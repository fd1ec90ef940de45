/*
 * store.c - the backend-independent half of the object store: building
 * compound ops, argument checks, completions and the blocking wrappers, and
 * reading the store's options from the config table.
 *
 * Everything that touches data goes through the backend table
 * (store_backend.h) chosen by store_open() from cfg->backend.
 *
 * Fault injection for tests: store_inject_write_error = ERRNO[:N] (EIO,
 * ENOSPC, ETIMEDOUT, ... or a number) makes the next N compound write ops
 * of this process (every one without :N) fail with that error at
 * submission, as a backend would fail them: nothing of the op is applied.
 * Runtime-settable (`config set`), so a test can break and heal a running
 * daemon's store; "" turns it off.  Reads are not affected by it:
 * store_inject_read_error does the same to omap reads (get, list), what
 * an MDS loads on a cache miss while it serves a request.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "store/store_backend.h"

/* ---- config --------------------------------------------------------- */

void store_config_from_cfg(struct store_config *sc)
{
	/*
	 * The strings live in static storage so the config is a plain value
	 * the daemon can keep; it is read once at start-up (the options are
	 * not runtime-changeable), so there is no reader to race with.
	 */
	static char backend[32], path[PATH_MAX], conf[PATH_MAX], id[128];

	memset(sc, 0, sizeof(*sc));
	sc->backend = cfg_str(CFG_store_backend, backend, sizeof(backend));
	sc->local_path = cfg_str(CFG_store_local_path, path, sizeof(path));
	sc->local_map_size = cfg_uint(CFG_store_local_map_size);
	sc->local_inline_max = cfg_uint(CFG_store_local_inline_max);
	if (!sc->local_inline_max)
		sc->local_inline_max = STORE_LOCAL_INLINE_OFF;   /* the option's 0 is "never" */
	sc->local_nearfull_ratio = cfg_double(CFG_store_local_nearfull_ratio);
	sc->local_full_ratio = cfg_double(CFG_store_local_full_ratio);
	sc->local_failsafe_ratio = cfg_double(CFG_store_local_failsafe_full_ratio);
	sc->rados_conf = cfg_str(CFG_rados_conf, conf, sizeof(conf));
	sc->rados_id = cfg_str(CFG_rados_id, id, sizeof(id));
	sc->rados_mon_op_timeout = cfg_double(CFG_rados_mon_op_timeout);
	sc->rados_osd_op_timeout = cfg_double(CFG_rados_osd_op_timeout);
}

void store_config_data_from_cfg(struct store_config *sc)
{
	static char dpath[PATH_MAX];   /* as store_config_from_cfg() */

	store_config_from_cfg(sc);
	if (strcmp(sc->backend, "local") != 0 && *sc->backend)
		return;
	cfg_str(CFG_store_local_data_path, dpath, sizeof(dpath));
	if (!dpath[0] && sc->local_path[0] &&
	    snprintf(dpath, sizeof(dpath), "%s.data", sc->local_path) >= (int)sizeof(dpath))
		dpath[0] = 0;
	sc->local_path = dpath;
	sc->create = true;
}

/* ---- fault injection -------------------------------------------------- */

struct inject {
	int opt;                  /* CFG_store_inject_{write,read}_error */
	const char *name, *what;
	_Atomic int err;          /* positive errno; 0: off */
	_Atomic int64_t left;     /* ops still to fail; < 0: all */
};

static struct inject inject_w = { .opt = CFG_store_inject_write_error, .name = "store_inject_write_error",
				  .what = "write ops" };
static struct inject inject_r = { .opt = CFG_store_inject_read_error, .name = "store_inject_read_error",
				  .what = "omap reads" };
static pthread_once_t inject_once = PTHREAD_ONCE_INIT;

static int errno_by_name(const char *s)
{
	static const struct { const char *name; int e; } tab[] = {
		{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "ETIMEDOUT", ETIMEDOUT }, { "EDQUOT", EDQUOT },
		{ "EROFS", EROFS }, { "ENOMEM", ENOMEM }, { "EAGAIN", EAGAIN }, { "ECONNREFUSED", ECONNREFUSED },
		{ "ENOTCONN", ENOTCONN },
	};
	char *end;
	long v;

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(s, tab[i].name))
			return tab[i].e;
	v = strtol(s, &end, 10);
	return *s && !*end && v > 0 && v < 4096 ? (int)v : 0;
}

static void inject_apply(int id, void *arg)
{
	struct inject *in = arg;
	char v[64], *colon;
	int e = 0;
	int64_t n = -1;

	(void)id;
	cfg_str(in->opt, v, sizeof(v));
	colon = strchr(v, ':');
	if (colon) {
		*colon = 0;
		n = strtoll(colon + 1, NULL, 10);
	}
	if (*v) {
		e = errno_by_name(v);
		if (!e)
			derr(STORE, "%s: '%s' is not an errno (EIO, ENOSPC, ETIMEDOUT, or a "
			     "number, optionally :COUNT): ignored", in->name, v);
		else
			dinfo(STORE, "store: injecting %s into %s %s (%s)", strerror(e), n < 0 ? "every" : colon + 1,
			      in->what, in->name);
	}
	atomic_store(&in->left, n);
	atomic_store(&in->err, e);
}

static void inject_init(void)
{
	cfg_observe(CFG_store_inject_write_error, inject_apply, &inject_w);
	inject_apply(CFG_store_inject_write_error, &inject_w);
	cfg_observe(CFG_store_inject_read_error, inject_apply, &inject_r);
	inject_apply(CFG_store_inject_read_error, &inject_r);
}

/* The injected error for one op of @in's kind, or 0. */
static int inject_take(struct inject *in)
{
	int e = atomic_load_explicit(&in->err, memory_order_relaxed);
	int64_t left;

	if (!e)
		return 0;
	left = atomic_load(&in->left);
	while (left > 0 && !atomic_compare_exchange_weak(&in->left, &left, left - 1))
		;
	if (left == 0)
		return 0;
	if (left == 1)
		atomic_store(&in->err, 0);   /* that was the last one */
	return e;
}

/* ---- open / close --------------------------------------------------- */

static const struct store_backend *backends[] = {
	&store_local_backend,
	&store_mem_backend,
};

#ifdef LOLIGO_HAVE_RADOS
/*
 * The rados backend lives in a module (store_rados.so, linked to librados),
 * loaded the first time a store asks for it and never unloaded: librados
 * keeps threads and exit handlers.  A program in the build tree loads the
 * build tree's module, an installed one the installed module.
 */
static pthread_once_t rados_once = PTHREAD_ONCE_INIT;
static const struct store_backend *rados_backend;
static char rados_error[PATH_MAX + 256];

static void rados_module_path(char *buf, size_t len)
{
	char exe[PATH_MAX], build[PATH_MAX];
	const char *dir = LOLIGO_MODULE_DIR;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0 && realpath(LOLIGO_BUILD_DIR, build)) {
		size_t bl = strlen(build);

		exe[n] = 0;
		if (strncmp(exe, build, bl) == 0 && exe[bl] == '/')
			dir = LOLIGO_BUILD_DIR "/store";
	}
	snprintf(buf, len, "%s/store_rados.so", dir);
}

static void rados_module_load(void)
{
	char path[PATH_MAX];
	void *h;

	rados_module_path(path, sizeof(path));
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(rados_error, sizeof(rados_error), "%s", dlerror());
		return;
	}
	rados_backend = dlsym(h, "store_rados_backend");
	if (!rados_backend)
		snprintf(rados_error, sizeof(rados_error), "%s: no store_rados_backend: %s", path, dlerror());
}

static const struct store_backend *backend_rados(void)
{
	pthread_once(&rados_once, rados_module_load);
	return rados_backend;
}
#endif

/* what the last failed store_open() of this thread said */
static __thread char open_error[768];

void store_open_error_set(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(open_error, sizeof(open_error), fmt, ap);
	va_end(ap);
}

const char *store_open_error(void)
{
	return open_error;
}

static int backend_open(const struct store_backend *be, const struct store_config *cfg, struct store **out)
{
	int r = be->open(cfg, out);

	if (r == 0)
		(*out)->be = be;
	return r;
}

int store_open(const struct store_config *cfg, struct store **out)
{
	const char *name = cfg->backend && *cfg->backend ? cfg->backend : "local";

	pthread_once(&inject_once, inject_init);
	*out = NULL;
	open_error[0] = 0;
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (strcmp(backends[i]->name, name) == 0) {
			if (backends[i]->in_process_only && !cfg->mem_ok)
				break;   /* unknown to configuration: below */
			return backend_open(backends[i], cfg, out);
		}
	}
	if (strcmp(name, "rados") == 0) {
#ifdef LOLIGO_HAVE_RADOS
		const struct store_backend *be = backend_rados();

		if (be)
			return backend_open(be, cfg, out);
		derr(STORE, "store: cannot load the rados backend: %s (is loligo installed whole?)", rados_error);
		store_open_error_set("cannot load the rados backend: %s", rados_error);
#else
		derr(STORE, "store: the rados backend is not built in (configure with -DLOLIGO_RADOS=ON)");
#endif
		return -ENOTSUP;
	}
	derr(STORE, "store: unknown backend '%s' (store_backend = local | rados)", name);
	return -ENOTSUP;
}

void store_close(struct store *st)
{
	if (st)
		st->be->close(st);
}

const char *store_backend_name(const struct store *st)
{
	return st->be->name;
}

int store_space(struct store *st, struct store_space *out)
{
	memset(out, 0, sizeof(*out));
	if (!st || !st->be->space)
		return -ENOTSUP;
	return st->be->space(st, out);
}

int store_pool_stat(struct store_pool *p, struct store_pool_stat *out)
{
	memset(out, 0, sizeof(*out));
	if (!p || !p->st->be->pool_stat)
		return -ENOTSUP;
	return p->st->be->pool_stat(p, out);
}

int store_instance_addr(struct store *st, char *buf, size_t len)
{
	if (len)
		*buf = '\0';
	if (!st || !st->be->instance_addr)
		return -ENOTSUP;
	return st->be->instance_addr(st, buf, len);
}

int store_blocklist_add(struct store *st, const char *addr, double expire_secs)
{
	if (!st || !st->be->blocklist_add)
		return -ENOTSUP;
	if (!addr || !*addr || strlen(addr) >= STORE_ADDR_MAX || expire_secs < 0)
		return -EINVAL;
	return st->be->blocklist_add(st, addr, expire_secs);
}

int store_blocklist_rm(struct store *st, const char *addr)
{
	if (!st || !st->be->blocklist_rm)
		return -ENOTSUP;
	if (!addr || !*addr || strlen(addr) >= STORE_ADDR_MAX)
		return -EINVAL;
	return st->be->blocklist_rm(st, addr);
}

const char *store_space_state_name(enum store_space_state s)
{
	static const char *const names[] = { "ok", "nearfull", "full", "failsafe" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ---- argument checks ------------------------------------------------ */

static int check_oid(const char *oid)
{
	if (!oid || !*oid)
		return -EINVAL;
	if (strlen(oid) > STORE_OID_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int check_key(const char *key)
{
	if (!key)
		return -EINVAL;
	if (strlen(key) > STORE_OMAP_KEY_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int store_keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* ---- pools ---------------------------------------------------------- */

int store_pool_create(struct store *st, const char *name)
{
	if (!name || !*name || strlen(name) > 255)
		return -EINVAL;
	return st->be->pool_create(st, name);
}

int store_pool_open(struct store *st, const char *name, const char *nspace, struct store_pool **out)
{
	int r;

	*out = NULL;
	if (!name || !*name || strlen(name) > 255)
		return -EINVAL;
	if (nspace && strlen(nspace) > 255)
		return -ENAMETOOLONG;
	r = st->be->pool_open(st, name, nspace ? nspace : "", out);
	if (r == 0)
		(*out)->st = st;
	return r;
}

void store_pool_close(struct store_pool *p)
{
	if (p)
		p->st->be->pool_close(p);
}

void store_kv_free(struct store_kv *kvs, size_t n)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].val);
	}
	free(kvs);
}

/* ---- op building ---------------------------------------------------- */

struct store_op *store_op_new(void)
{
	return calloc(1, sizeof(struct store_op));
}

void store_op_free(struct store_op *op)
{
	if (!op)
		return;
	for (size_t i = 0; i < op->n; i++) {
		free(op->v[i].key);
		free(op->v[i].key2);
		if (!op->v[i].borrowed)
			free(op->v[i].data);
	}
	free(op->v);
	free(op);
}

/* Append a sub-op; on failure remember the error in op->err (reported at submit). */
static struct store_subop *add(struct store_op *op, enum store_subop_kind kind)
{
	struct store_subop *s;

	if (!op || op->err)
		return NULL;
	if (op->n == op->cap) {
		size_t cap = op->cap ? op->cap * 2 : 4;
		struct store_subop *v = realloc(op->v, cap * sizeof(*v));
		if (!v) {
			op->err = -ENOMEM;
			return NULL;
		}
		op->v = v;
		op->cap = cap;
	}
	s = &op->v[op->n++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

static bool copy_data(struct store_op *op, struct store_subop *s, const void *buf, size_t len)
{
	s->len = len;
	if (len == 0)
		return true;
	if (!buf) {
		op->err = -EINVAL;
		return false;
	}
	s->data = malloc(len);
	if (!s->data) {
		op->err = -ENOMEM;
		return false;
	}
	memcpy(s->data, buf, len);
	op->bytes += len;
	return true;
}

static bool copy_key(struct store_op *op, char **dst, const char *key)
{
	int r = check_key(key);

	if (r) {
		op->err = r;
		return false;
	}
	*dst = strdup(key);
	if (!*dst) {
		op->err = -ENOMEM;
		return false;
	}
	op->bytes += strlen(key);
	return true;
}

void store_op_create(struct store_op *op, bool exclusive)
{
	struct store_subop *s = add(op, SOP_CREATE);
	if (s)
		s->excl = exclusive;
}

void store_op_assert_exists(struct store_op *op)
{
	add(op, SOP_ASSERT_EXISTS);
}

void store_op_create_first(struct store_op *op)
{
	struct store_subop c;

	if (!add(op, SOP_CREATE))
		return;
	c = op->v[op->n - 1];
	memmove(op->v + 1, op->v, (op->n - 1) * sizeof(*op->v));
	op->v[0] = c;
}

void store_op_write(struct store_op *op, uint64_t off, const void *buf, size_t len)
{
	struct store_subop *s = add(op, SOP_WRITE);
	if (!s)
		return;
	if (off + len < off) {
		op->err = -EINVAL;
		return;
	}
	s->off = off;
	copy_data(op, s, buf, len);
}

void store_op_write_full(struct store_op *op, const void *buf, size_t len)
{
	struct store_subop *s = add(op, SOP_WRITE_FULL);
	if (s)
		copy_data(op, s, buf, len);
}

/* the data of @s is the caller's @buf, not a copy (see store_op_write_nocopy) */
static void borrow_data(struct store_op *op, struct store_subop *s, const void *buf, size_t len)
{
	s->len = len;
	if (len == 0)
		return;
	if (!buf) {
		op->err = -EINVAL;
		return;
	}
	s->data = (void *)buf;
	s->borrowed = true;
	op->bytes += len;
}

void store_op_write_nocopy(struct store_op *op, uint64_t off, const void *buf, size_t len)
{
	struct store_subop *s = add(op, SOP_WRITE);
	if (!s)
		return;
	if (off + len < off) {
		op->err = -EINVAL;
		return;
	}
	s->off = off;
	borrow_data(op, s, buf, len);
}

void store_op_write_full_nocopy(struct store_op *op, const void *buf, size_t len)
{
	struct store_subop *s = add(op, SOP_WRITE_FULL);
	if (s)
		borrow_data(op, s, buf, len);
}

/* The existence guards of @op on an object that @exists (store_backend.h). */
int store_op_precheck(const struct store_op *op, bool exists)
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
		case SOP_OMAP_CMP:   /* store_op_guards_hold(), checked before this */
			break;
		}
	}
	return 0;
}

bool store_op_has_guards(const struct store_op *op)
{
	for (size_t i = 0; i < op->n; i++)
		if (op->v[i].kind == SOP_OMAP_CMP)
			return true;
	return false;
}

int store_op_guards_hold(const struct store_op *op, bool exists, store_omap_lookup_t lookup, void *arg)
{
	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];
		const void *val;
		size_t len;
		int r;

		if (s->kind != SOP_OMAP_CMP)
			continue;
		if (!exists)
			return -ECANCELED;
		r = lookup(arg, s->key, &val, &len);
		if (r == -ENOENT)
			return -ECANCELED;
		if (r)
			return r;
		if (len != s->len || (len && memcmp(val, s->data, len)))
			return -ECANCELED;
	}
	return 0;
}

/* A backend that reads the op's data after op_submit returns gets copies of what is borrowed. */
static int own_borrowed(struct store_op *op)
{
	for (size_t i = 0; i < op->n; i++) {
		struct store_subop *s = &op->v[i];
		void *d;

		if (!s->borrowed)
			continue;
		d = malloc(s->len);
		if (!d)
			return -ENOMEM;
		memcpy(d, s->data, s->len);
		s->data = d;
		s->borrowed = false;
	}
	return 0;
}

void store_op_append(struct store_op *op, const void *buf, size_t len)
{
	struct store_subop *s = add(op, SOP_APPEND);
	if (s)
		copy_data(op, s, buf, len);
}

void store_op_truncate(struct store_op *op, uint64_t size)
{
	struct store_subop *s = add(op, SOP_TRUNCATE);
	if (s)
		s->off = size;
}

void store_op_allocate(struct store_op *op, uint64_t off, uint64_t len)
{
	struct store_subop *s = add(op, SOP_ALLOCATE);
	if (!s)
		return;
	if (!len || off + len < off) {
		op->err = -EINVAL;
		return;
	}
	s->off = off;
	s->len = len;
}

void store_op_zero(struct store_op *op, uint64_t off, uint64_t len)
{
	struct store_subop *s = add(op, SOP_ZERO);
	if (!s)
		return;
	if (off + len < off) {
		op->err = -EINVAL;
		return;
	}
	s->off = off;
	s->len = len;
}

void store_op_remove(struct store_op *op)
{
	add(op, SOP_REMOVE);
}

void store_op_omap_set(struct store_op *op, const char *key, const void *val, size_t len)
{
	struct store_subop *s = add(op, SOP_OMAP_SET);
	if (s && copy_key(op, &s->key, key))
		copy_data(op, s, val, len);
}

void store_op_omap_rm(struct store_op *op, const char *key)
{
	struct store_subop *s = add(op, SOP_OMAP_RM);
	if (s)
		copy_key(op, &s->key, key);
}

void store_op_omap_rm_range(struct store_op *op, const char *start, const char *end)
{
	struct store_subop *s = add(op, SOP_OMAP_RM_RANGE);
	if (!s || !copy_key(op, &s->key, start ? start : ""))
		return;
	if (end)
		copy_key(op, &s->key2, end);
}

void store_op_omap_clear(struct store_op *op)
{
	add(op, SOP_OMAP_CLEAR);
}

void store_op_omap_cmp(struct store_op *op, const char *key, const void *val, size_t len)
{
	struct store_subop *s = add(op, SOP_OMAP_CMP);

	if (!s || !copy_key(op, &s->key, key))
		return;
	/* empty: RADOS' omap_cmp takes a missing key for the empty value (store.h) */
	if (len == 0 || len > STORE_OMAP_CMP_VAL_MAX) {
		op->err = -EINVAL;
		return;
	}
	copy_data(op, s, val, len);
}

void store_op_no_inject(struct store_op *op)
{
	if (op)
		op->no_inject = true;
}

int store_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg)
{
	int r;

	if (!op)
		return -ENOMEM;   /* store_op_new() failed and the caller went on */
	r = op->err ? op->err : check_oid(oid);
	if (r == 0 && (!cb || op->n == 0))   /* RADOS refuses an empty op too */
		r = -EINVAL;
	if (r == 0 && !op->no_inject)
		r = -inject_take(&inject_w);
	if (r == 0 && !p->st->be->can_allocate)
		for (size_t i = 0; i < op->n; i++)
			if (op->v[i].kind == SOP_ALLOCATE)
				r = -EOPNOTSUPP;   /* a promise of space the backend cannot keep */
	if (r == 0 && !p->st->be->data_copied_at_submit)
		r = own_borrowed(op);
	if (r) {
		store_op_free(op);
		return r;
	}
	return p->st->be->op_submit(p, oid, op, cb, arg);
}

/* ---- completions ---------------------------------------------------- */

struct store_completion {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;  /* protected by lock */
	int r;      /* protected by lock */
};

struct store_completion *store_completion_new(void)
{
	struct store_completion *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	return c;
}

void store_completion_cb(int r, void *arg)
{
	struct store_completion *c = arg;

	pthread_mutex_lock(&c->lock);
	c->r = r;
	c->done = true;
	/* signal under the lock: the waiter frees c as soon as it sees done */
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void store_completion_free(struct store_completion *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

int store_completion_wait(struct store_completion *c)
{
	int r;

	pthread_mutex_lock(&c->lock);
	while (!c->done)
		pthread_cond_wait(&c->cond, &c->lock);
	r = c->r;
	pthread_mutex_unlock(&c->lock);
	store_completion_free(c);
	return r;
}

/* ---- blocking wrappers ---------------------------------------------- */

int store_op_exec(struct store_pool *p, const char *oid, struct store_op *op)
{
	struct store_completion *c = store_completion_new();
	int r;

	if (!c) {
		store_op_free(op);
		return -ENOMEM;
	}
	r = store_op_submit(p, oid, op, store_completion_cb, c);
	if (r) {
		store_completion_free(c);
		return r;
	}
	return store_completion_wait(c);
}

int store_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
		      store_cb_t cb, void *arg)
{
	int r = check_oid(oid);

	if (r)
		return r;
	if (!cb || (len && !buf) || off + len < off || len > SSIZE_MAX)
		return -EINVAL;
	return p->st->be->read_submit(p, oid, off, len, buf, cb, arg);
}

/* store_aio_read for backends without aio_read: read_submit and a completion */
struct generic_aio {
	struct store_aio base;
	struct store_completion *c;
};

int store_aio_read(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
		   struct store_aio **out)
{
	struct generic_aio *g;
	int r = check_oid(oid);

	if (r)
		return r;
	if ((len && !buf) || off + len < off || len > SSIZE_MAX)
		return -EINVAL;
	if (len > INT_MAX)   /* results travel as an int */
		len = INT_MAX & ~4095;
	if (p->st->be->aio_read && len)   /* len 0 (does it exist?) keeps read_submit's meaning */
		return p->st->be->aio_read(p, oid, off, len, buf, out);
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->c = store_completion_new();
	if (!g->c) {
		free(g);
		return -ENOMEM;
	}
	r = p->st->be->read_submit(p, oid, off, len, buf, store_completion_cb, g->c);
	if (r) {
		store_completion_free(g->c);
		free(g);
		return r;
	}
	*out = &g->base;
	return 0;
}

ssize_t store_aio_wait(struct store_aio *a)
{
	struct generic_aio *g;
	int r;

	if (a->be)
		return a->be->aio_wait(a);
	g = container_of(a, struct generic_aio, base);
	r = store_completion_wait(g->c);
	free(g);
	return r;
}

/*
 * store_aio_read_lend for backends that cannot lend: store_aio_read into a
 * buffer of malloc's, which the read owns.  Its store_aio's be is the table
 * below, so store_aio_wait_lent and store_aio_put dispatch alike for both.
 */
struct generic_lend {
	struct store_aio base;
	struct store_aio *inner;   /* NULL once waited for */
	char *buf;
};

static ssize_t generic_wait_lent(struct store_aio *a, const char **data)
{
	struct generic_lend *g = container_of(a, struct generic_lend, base);
	ssize_t r = store_aio_wait(g->inner);

	g->inner = NULL;
	*data = r < 0 ? NULL : g->buf;
	return r;
}

static void generic_put(struct store_aio *a)
{
	struct generic_lend *g = container_of(a, struct generic_lend, base);

	if (g->inner)
		(void)store_aio_wait(g->inner);   /* the store still writes into buf */
	free(g->buf);
	free(g);
}

static const struct store_backend generic_lend_be = {
	.name = "lend",
	.aio_wait_lent = generic_wait_lent,
	.aio_put = generic_put,
};

int store_aio_read_lend(struct store_pool *p, const char *oid, uint64_t off, size_t len, struct store_aio **out)
{
	struct generic_lend *g;
	int r = check_oid(oid);

	if (r)
		return r;
	if (!len || off + len < off || len > SSIZE_MAX)
		return -EINVAL;
	if (len > INT_MAX)   /* results travel as an int */
		len = INT_MAX & ~4095;
	if (p->st->be->aio_read_lend)
		return p->st->be->aio_read_lend(p, oid, off, len, out);
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->base.be = &generic_lend_be;
	g->buf = malloc(len);
	if (!g->buf) {
		free(g);
		return -ENOMEM;
	}
	r = store_aio_read(p, oid, off, len, g->buf, &g->inner);
	if (r) {
		free(g->buf);
		free(g);
		return r;
	}
	*out = &g->base;
	return 0;
}

ssize_t store_aio_wait_lent(struct store_aio *a, const char **data)
{
	return a->be->aio_wait_lent(a, data);
}

void store_aio_put(struct store_aio *a)
{
	if (a)
		a->be->aio_put(a);
}

bool store_can_lend(const struct store_pool *p)
{
	return p->st->be->aio_read_lend != NULL;
}

ssize_t store_read(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf)
{
	struct store_completion *c = store_completion_new();
	int r;

	if (!c)
		return -ENOMEM;
	if (len > INT_MAX)   /* the callback carries an int */
		len = INT_MAX & ~4095;
	r = store_read_submit(p, oid, off, len, buf, store_completion_cb, c);
	if (r) {
		store_completion_free(c);
		return r;
	}
	return store_completion_wait(c);
}

int store_stat(struct store_pool *p, const char *oid, struct store_stat *st)
{
	int r = check_oid(oid);
	return r ? r : p->st->be->stat(p, oid, st);
}

int store_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len)
{
	int r = check_oid(oid);

	*val = NULL;
	*len = 0;
	if (r == 0)
		r = check_key(key);
	if (r == 0)
		r = -inject_take(&inject_r);
	return r ? r : p->st->be->omap_get(p, oid, key, val, len);
}

int store_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
		    size_t max, struct store_kv **out, size_t *n, bool *more)
{
	int r = check_oid(oid);

	*out = NULL;
	*n = 0;
	*more = false;
	if (r == 0 && after)
		r = check_key(after);
	if (r == 0 && prefix)
		r = check_key(prefix);
	if (r == 0)
		r = -inject_take(&inject_r);
	return r ? r : p->st->be->omap_list(p, oid, after, prefix, max, out, n, more);
}

void store_omap_iter_init(struct store_omap_iter *it, struct store_pool *p, const char *oid, const char *prefix,
			  size_t page)
{
	memset(it, 0, sizeof(*it));
	it->pool = p;
	it->oid = oid;
	it->prefix = prefix;
	it->page = page;
	it->more = true;
}

const struct store_kv *store_omap_iter_next(struct store_omap_iter *it)
{
	struct store_kv *kvs;
	size_t n;
	int r;

	if (it->err)
		return NULL;
	if (it->i < it->n)
		return &it->kvs[it->i++];
	/* the page is used up: the next one starts after its last key */
	if (!it->more || (it->started && !it->n))
		return NULL;
	r = store_omap_list(it->pool, it->oid, it->n ? it->kvs[it->n - 1].key : NULL, it->prefix, it->page, &kvs,
			    &n, &it->more);
	store_kv_free(it->kvs, it->n);
	it->kvs = NULL;
	it->n = it->i = 0;
	it->started = true;
	if (r) {
		it->more = false;
		if (r != -ENOENT)          /* no object: an empty map */
			it->err = r;
		return NULL;
	}
	it->kvs = kvs;
	it->n = n;
	if (!n)
		return NULL;
	return &it->kvs[it->i++];
}

int store_omap_iter_end(struct store_omap_iter *it)
{
	store_kv_free(it->kvs, it->n);
	it->kvs = NULL;
	it->n = it->i = 0;
	it->more = false;
	return it->err;
}

int store_list_objects(struct store_pool *p, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	return p->st->be->list_objects(p, names, n);
}
