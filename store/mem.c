/*
 * mem.c - the in-memory backend (store/mem.h): objects, their bytes and
 * their omaps in sorted arrays under one mutex per named store, and one
 * completion thread per handle that runs callbacks in submission order.
 *
 * What it keeps of the other backends' contract (store.h, checked by
 * tests/unit/test_store_conformance.c with LOLIGO_STORE_BACKEND=mem):
 * an op is applied entirely or not at all (its existence guards are
 * checked before anything is applied, and nothing after them fails but
 * memory, see apply_op), completions never run in the submitter's thread
 * (a caller may hold the lock its callback takes), the callbacks of one
 * handle run in the order their ops were submitted, omap keys sort
 * bytewise with a prefix first (store_keycmp), and a zero that reaches the
 * end of an object cuts it, as RADOS does.  What it does not keep:
 * anything across the process, space accounting, fencing.
 *
 * Locks: mem_data.lock (the objects of one named store) is a leaf; the
 * handle's qlock (its completion queue) is never held with it or across a
 * callback.  The registry of named stores has its own leaf mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "store/mem.h"
#include "store/store_backend.h"

struct mem_kv {
	char *key;
	size_t klen;
	void *val;
	size_t len;
};

struct mem_obj {
	char *name;
	unsigned char *data;
	size_t size, cap;
	struct timespec mtime;
	struct mem_kv *omap;   /* sorted by store_keycmp */
	size_t nomap, capomap;
};

/* the objects of one pool and namespace, sorted by name */
struct mem_ns {
	char *pool, *nspace;
	struct mem_obj **objs;
	size_t n, cap;
};

struct mem_data {
	char *name;
	int refs;                  /* handles open; under mem_registry_lock */
	pthread_mutex_t lock;      /* everything below */
	char **pools;
	size_t npools;
	struct mem_ns **nss;
	size_t nns;
	struct mem_data *next;     /* the registry; under mem_registry_lock */
};

struct mem_done {
	store_cb_t cb;
	void *arg;
	int r;
	struct mem_done *next;
};

struct mem_store {
	struct store base;
	struct mem_data *d;
	pthread_t thread;
	pthread_mutex_t qlock;     /* the completion queue below */
	pthread_cond_t qcond;
	struct mem_done *head, **tail;
	bool stop;
};

struct mem_pool {
	struct store_pool base;
	struct mem_ns *ns;
};

static pthread_mutex_t mem_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_data *mem_registry;

/* ---- objects and omaps ---------------------------------------------------- */

static size_t obj_pos(const struct mem_ns *ns, const char *name, bool *found)
{
	size_t lo = 0, hi = ns->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ns->objs[mid]->name, name);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static struct mem_obj *obj_find(const struct mem_ns *ns, const char *name)
{
	bool found;
	size_t i = obj_pos(ns, name, &found);

	return found ? ns->objs[i] : NULL;
}

static struct mem_obj *obj_make(struct mem_ns *ns, const char *name)
{
	bool found;
	size_t i = obj_pos(ns, name, &found);
	struct mem_obj *o;

	if (found)
		return ns->objs[i];
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 16;
		struct mem_obj **v = realloc(ns->objs, cap * sizeof(*v));

		if (!v)
			return NULL;
		ns->objs = v;
		ns->cap = cap;
	}
	o = calloc(1, sizeof(*o));
	if (!o || !(o->name = strdup(name))) {
		free(o);
		return NULL;
	}
	memmove(&ns->objs[i + 1], &ns->objs[i], (ns->n - i) * sizeof(*ns->objs));
	ns->objs[i] = o;
	ns->n++;
	return o;
}

static void omap_free(struct mem_obj *o)
{
	for (size_t i = 0; i < o->nomap; i++) {
		free(o->omap[i].key);
		free(o->omap[i].val);
	}
	free(o->omap);
	o->omap = NULL;
	o->nomap = o->capomap = 0;
}

static void obj_free(struct mem_obj *o)
{
	omap_free(o);
	free(o->data);
	free(o->name);
	free(o);
}

static void obj_remove(struct mem_ns *ns, const char *name)
{
	bool found;
	size_t i = obj_pos(ns, name, &found);

	if (!found)
		return;
	obj_free(ns->objs[i]);
	memmove(&ns->objs[i], &ns->objs[i + 1], (ns->n - i - 1) * sizeof(*ns->objs));
	ns->n--;
}

/* the index of the first key >= @key (and whether it is @key) */
static size_t kv_pos(const struct mem_obj *o, const char *key, size_t klen, bool *found)
{
	size_t lo = 0, hi = o->nomap;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = store_keycmp(o->omap[mid].key, o->omap[mid].klen, key, klen);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int kv_set(struct mem_obj *o, const char *key, const void *val, size_t len)
{
	size_t klen = strlen(key);
	bool found;
	size_t i = kv_pos(o, key, klen, &found);
	void *v = malloc(len ? len : 1);

	if (!v)
		return -ENOMEM;
	if (len)
		memcpy(v, val, len);    /* an empty value may come as NULL */
	if (found) {
		free(o->omap[i].val);
		o->omap[i].val = v;
		o->omap[i].len = len;
		return 0;
	}
	if (o->nomap == o->capomap) {
		size_t cap = o->capomap ? 2 * o->capomap : 8;
		struct mem_kv *nv = realloc(o->omap, cap * sizeof(*nv));

		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		o->omap = nv;
		o->capomap = cap;
	}
	memmove(&o->omap[i + 1], &o->omap[i], (o->nomap - i) * sizeof(*o->omap));
	o->omap[i] = (struct mem_kv){ .key = strdup(key), .klen = klen, .val = v, .len = len };
	if (!o->omap[i].key) {
		memmove(&o->omap[i], &o->omap[i + 1], (o->nomap - i) * sizeof(*o->omap));
		free(v);
		return -ENOMEM;
	}
	o->nomap++;
	return 0;
}

/* remove the keys in [@start, @end) (@end NULL: to the end) */
static void kv_rm_range(struct mem_obj *o, const char *start, const char *end)
{
	bool found;
	size_t a = kv_pos(o, start, strlen(start), &found);
	size_t b = end ? kv_pos(o, end, strlen(end), &found) : o->nomap;

	if (b <= a)
		return;
	for (size_t i = a; i < b; i++) {
		free(o->omap[i].key);
		free(o->omap[i].val);
	}
	memmove(&o->omap[a], &o->omap[b], (o->nomap - b) * sizeof(*o->omap));
	o->nomap -= b - a;
}

static void kv_rm(struct mem_obj *o, const char *key)
{
	bool found;
	size_t i = kv_pos(o, key, strlen(key), &found);

	if (!found)
		return;
	free(o->omap[i].key);
	free(o->omap[i].val);
	memmove(&o->omap[i], &o->omap[i + 1], (o->nomap - i - 1) * sizeof(*o->omap));
	o->nomap--;
}

static int data_reserve(struct mem_obj *o, uint64_t end)
{
	unsigned char *d;
	size_t cap;

	if (end > SIZE_MAX / 2)
		return -EFBIG;
	if (end <= o->cap)
		return 0;
	cap = o->cap ? o->cap : 4096;
	while (cap < end)
		cap *= 2;
	d = realloc(o->data, cap);
	if (!d)
		return -ENOMEM;
	o->data = d;
	o->cap = cap;
	return 0;
}

/* the object's size becomes @size: bytes past the old end read as zeros */
static int data_resize(struct mem_obj *o, uint64_t size)
{
	int r = data_reserve(o, size);

	if (r)
		return r;
	if (size > o->size)
		memset(o->data + o->size, 0, size - o->size);
	o->size = size;
	return 0;
}

static int data_write(struct mem_obj *o, uint64_t off, const void *buf, uint64_t len)
{
	int r;

	if (off + len > o->size && (r = data_resize(o, off + len)))
		return r;
	if (len)
		memcpy(o->data + off, buf, len);
	return 0;
}

/* ---- ops ------------------------------------------------------------------ */

/* store_op_guards_hold()'s lookup: a key of @arg's omap (a struct mem_obj), under the store's lock */
static int guard_lookup(void *arg, const char *key, const void **val, size_t *len)
{
	const struct mem_obj *o = arg;
	bool found;
	size_t i = kv_pos(o, key, strlen(key), &found);

	if (!found)
		return -ENOENT;
	*val = o->omap[i].val;
	*len = o->omap[i].len;
	return 0;
}

/*
 * Apply @op to object @oid of @ns, under the store's lock.  After
 * store_op_precheck() only memory can fail an op; an op that runs out of memory
 * halfway is left half applied (this store is for tests: it says so in
 * the log).
 */
static int apply_op(struct mem_ns *ns, const char *oid, const struct store_op *op)
{
	struct mem_obj *o = obj_find(ns, oid);
	int r = store_op_guards_hold(op, o != NULL, guard_lookup, o);

	if (r == 0)
		r = store_op_precheck(op, o != NULL);

	for (size_t i = 0; i < op->n && !r; i++) {
		const struct store_subop *s = &op->v[i];

		if (!o && s->kind != SOP_TRUNCATE && s->kind != SOP_ZERO && s->kind != SOP_REMOVE &&
		    s->kind != SOP_ASSERT_EXISTS && s->kind != SOP_OMAP_CMP && !(o = obj_make(ns, oid))) {
			r = -ENOMEM;
			break;
		}
		switch (s->kind) {
		case SOP_CREATE:
		case SOP_ASSERT_EXISTS:
		case SOP_OMAP_CMP:   /* store_op_guards_hold(), above */
			break;
		case SOP_WRITE:
			r = data_write(o, s->off, s->data, s->len);
			break;
		case SOP_WRITE_FULL:
			o->size = 0;
			r = data_write(o, 0, s->data, s->len);
			break;
		case SOP_APPEND:
			r = data_write(o, o->size, s->data, s->len);
			break;
		case SOP_ALLOCATE:
			if (s->off + s->len > o->size)
				r = data_resize(o, s->off + s->len);
			break;
		case SOP_TRUNCATE:
			if (o)
				r = data_resize(o, s->off);
			break;
		case SOP_ZERO:
			if (!o || s->off >= o->size || !s->len)
				break;
			if (s->len >= o->size - s->off)
				o->size = s->off;           /* a zero to the end cuts, as RADOS */
			else
				memset(o->data + s->off, 0, s->len);
			break;
		case SOP_REMOVE:
			obj_remove(ns, oid);
			o = NULL;
			break;
		case SOP_OMAP_SET:
			r = kv_set(o, s->key, s->data, s->len);
			break;
		case SOP_OMAP_RM:
			kv_rm(o, s->key);
			break;
		case SOP_OMAP_RM_RANGE:
			kv_rm_range(o, s->key, s->key2);
			break;
		case SOP_OMAP_CLEAR:
			omap_free(o);
			break;
		}
	}
	if (o && !r)
		clock_gettime(CLOCK_REALTIME, &o->mtime);
	if (r == -ENOMEM)
		derr(STORE, "mem store: out of memory applying an op to %s: it may be half applied", oid);
	return r;
}

/* ---- completions ---------------------------------------------------------- */

static void *mem_completer(void *arg)
{
	struct mem_store *ms = arg;

	pthread_setname_np(pthread_self(), "store-mem");
	pthread_mutex_lock(&ms->qlock);
	for (;;) {
		struct mem_done *d = ms->head;

		if (!d) {
			if (ms->stop)
				break;
			pthread_cond_wait(&ms->qcond, &ms->qlock);
			continue;
		}
		ms->head = d->next;
		if (!ms->head)
			ms->tail = &ms->head;
		pthread_mutex_unlock(&ms->qlock);
		d->cb(d->r, d->arg);
		free(d);
		pthread_mutex_lock(&ms->qlock);
	}
	pthread_mutex_unlock(&ms->qlock);
	return NULL;
}

/* Queue @cb(@r) for the completion thread; -ENOMEM when it cannot (nothing queued). */
static int mem_complete(struct mem_store *ms, store_cb_t cb, void *arg, int r)
{
	struct mem_done *d;

	if (!cb)
		return 0;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	*d = (struct mem_done){ .cb = cb, .arg = arg, .r = r };
	pthread_mutex_lock(&ms->qlock);
	*ms->tail = d;
	ms->tail = &d->next;
	pthread_cond_signal(&ms->qcond);
	pthread_mutex_unlock(&ms->qlock);
	return 0;
}

/* ---- the named stores ----------------------------------------------------- */

static void data_free(struct mem_data *d)
{
	for (size_t i = 0; i < d->nns; i++) {
		struct mem_ns *ns = d->nss[i];

		for (size_t j = 0; j < ns->n; j++)
			obj_free(ns->objs[j]);
		free(ns->objs);
		free(ns->pool);
		free(ns->nspace);
		free(ns);
	}
	for (size_t i = 0; i < d->npools; i++)
		free(d->pools[i]);
	free(d->pools);
	free(d->nss);
	pthread_mutex_destroy(&d->lock);
	free(d->name);
	free(d);
}

static struct mem_data *data_get(const char *name)
{
	struct mem_data *d;

	pthread_mutex_lock(&mem_registry_lock);
	for (d = mem_registry; d; d = d->next)
		if (!strcmp(d->name, name))
			break;
	if (!d && (d = calloc(1, sizeof(*d)))) {
		if (!(d->name = strdup(name))) {
			free(d);
			d = NULL;
		} else {
			pthread_mutex_init(&d->lock, NULL);
			d->next = mem_registry;
			mem_registry = d;
		}
	}
	if (d)
		d->refs++;
	pthread_mutex_unlock(&mem_registry_lock);
	return d;
}

static void data_put(struct mem_data *d)
{
	struct mem_data **pp;
	bool last;

	pthread_mutex_lock(&mem_registry_lock);
	last = --d->refs == 0;
	if (last)
		for (pp = &mem_registry; *pp; pp = &(*pp)->next)
			if (*pp == d) {
				*pp = d->next;
				break;
			}
	pthread_mutex_unlock(&mem_registry_lock);
	if (last)
		data_free(d);
}

/* ---- the backend ---------------------------------------------------------- */

static int mem_open(const struct store_config *cfg, struct store **out)
{
	return store_open_mem(cfg->local_path, out);
}

int store_open_mem(const char *name, struct store **out)
{
	struct mem_store *ms;

	if (!name || !*name)
		return -EINVAL;
	ms = calloc(1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	ms->base.be = &store_mem_backend;
	ms->tail = &ms->head;
	pthread_mutex_init(&ms->qlock, NULL);
	pthread_cond_init(&ms->qcond, NULL);
	if (!(ms->d = data_get(name)) || pthread_create(&ms->thread, NULL, mem_completer, ms)) {
		if (ms->d)
			data_put(ms->d);
		free(ms);
		return -ENOMEM;
	}
	*out = &ms->base;
	return 0;
}

static void mem_close(struct store *st)
{
	struct mem_store *ms = container_of(st, struct mem_store, base);

	pthread_mutex_lock(&ms->qlock);
	ms->stop = true;                /* the thread runs what is queued, then ends */
	pthread_cond_signal(&ms->qcond);
	pthread_mutex_unlock(&ms->qlock);
	pthread_join(ms->thread, NULL);
	data_put(ms->d);
	pthread_mutex_destroy(&ms->qlock);
	pthread_cond_destroy(&ms->qcond);
	free(ms);
}

static bool pool_exists_locked(const struct mem_data *d, const char *name)
{
	for (size_t i = 0; i < d->npools; i++)
		if (!strcmp(d->pools[i], name))
			return true;
	return false;
}

static int mem_pool_create(struct store *st, const char *name)
{
	struct mem_data *d = container_of(st, struct mem_store, base)->d;
	char **v, *n;
	int r = 0;

	pthread_mutex_lock(&d->lock);
	if (pool_exists_locked(d, name))
		r = -EEXIST;
	else if (!(n = strdup(name)) || !(v = realloc(d->pools, (d->npools + 1) * sizeof(*v))))
		r = -ENOMEM;
	else {
		v[d->npools++] = n;
		d->pools = v;
	}
	if (r == -ENOMEM)
		free(n);
	pthread_mutex_unlock(&d->lock);
	return r;
}

static int mem_pool_open(struct store *st, const char *name, const char *nspace, struct store_pool **out)
{
	struct mem_data *d = container_of(st, struct mem_store, base)->d;
	struct mem_ns *ns = NULL;
	struct mem_pool *mp;
	int r = 0;

	if (!nspace)
		nspace = "";
	mp = calloc(1, sizeof(*mp));
	if (!mp)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	if (!pool_exists_locked(d, name)) {
		r = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < d->nns; i++)
		if (!strcmp(d->nss[i]->pool, name) && !strcmp(d->nss[i]->nspace, nspace))
			ns = d->nss[i];
	if (!ns) {
		struct mem_ns **v = realloc(d->nss, (d->nns + 1) * sizeof(*v));

		if (v)
			d->nss = v;
		if (!v || !(ns = calloc(1, sizeof(*ns))) || !(ns->pool = strdup(name)) ||
		    !(ns->nspace = strdup(nspace))) {
			if (ns) {
				free(ns->pool);
				free(ns);
			}
			r = -ENOMEM;
			goto out;
		}
		d->nss[d->nns++] = ns;
	}
	mp->base.st = st;
	mp->ns = ns;
out:
	pthread_mutex_unlock(&d->lock);
	if (r)
		free(mp);
	else
		*out = &mp->base;
	return r;
}

static void mem_pool_close(struct store_pool *p)
{
	free(container_of(p, struct mem_pool, base));
}

#define MEM_OF(p) (container_of((p)->st, struct mem_store, base))

static int mem_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg)
{
	struct mem_store *ms = MEM_OF(p);
	int r;

	pthread_mutex_lock(&ms->d->lock);
	r = apply_op(container_of(p, struct mem_pool, base)->ns, oid, op);
	pthread_mutex_unlock(&ms->d->lock);
	store_op_free(op);
	return mem_complete(ms, cb, arg, r);
}

static int mem_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
			   store_cb_t cb, void *arg)
{
	struct mem_store *ms = MEM_OF(p);
	struct mem_obj *o;
	int r;

	pthread_mutex_lock(&ms->d->lock);
	o = obj_find(container_of(p, struct mem_pool, base)->ns, oid);
	if (!o)
		r = -ENOENT;
	else if (off >= o->size)
		r = 0;
	else {
		r = (int)(len < o->size - off ? len : o->size - off);
		memcpy(buf, o->data + off, r);
	}
	pthread_mutex_unlock(&ms->d->lock);
	return mem_complete(ms, cb, arg, r);
}

static int mem_stat(struct store_pool *p, const char *oid, struct store_stat *st)
{
	struct mem_store *ms = MEM_OF(p);
	struct mem_obj *o;

	pthread_mutex_lock(&ms->d->lock);
	o = obj_find(container_of(p, struct mem_pool, base)->ns, oid);
	if (o) {
		st->size = o->size;
		st->mtime = o->mtime;
	}
	pthread_mutex_unlock(&ms->d->lock);
	return o ? 0 : -ENOENT;
}

static int mem_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len)
{
	struct mem_store *ms = MEM_OF(p);
	struct mem_obj *o;
	int r = -ENOENT;

	pthread_mutex_lock(&ms->d->lock);
	o = obj_find(container_of(p, struct mem_pool, base)->ns, oid);
	if (o) {
		bool found;
		size_t i = kv_pos(o, key, strlen(key), &found);

		if (found) {
			*len = o->omap[i].len;
			*val = malloc(*len ? *len : 1);
			r = *val ? 0 : -ENOMEM;
			if (*val)
				memcpy(*val, o->omap[i].val, *len);
		}
	}
	pthread_mutex_unlock(&ms->d->lock);
	return r;
}

static int mem_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
			 size_t max, struct store_kv **out, size_t *n, bool *more)
{
	struct mem_store *ms = MEM_OF(p);
	size_t plen = prefix ? strlen(prefix) : 0, i = 0, cnt = 0;
	struct store_kv *kv = NULL;
	struct mem_obj *o;
	int r = 0;

	*out = NULL;
	*n = 0;
	*more = false;
	pthread_mutex_lock(&ms->d->lock);
	o = obj_find(container_of(p, struct mem_pool, base)->ns, oid);
	if (!o) {
		r = -ENOENT;
		goto out;
	}
	if (after && *after) {
		bool found;

		i = kv_pos(o, after, strlen(after), &found);
		if (found)
			i++;
	}
	if (plen) {
		bool found;
		size_t j = kv_pos(o, prefix, plen, &found);

		if (j > i)
			i = j;
	}
	kv = calloc(max ? max : 1, sizeof(*kv));
	if (!kv) {
		r = -ENOMEM;
		goto out;
	}
	for (; i < o->nomap; i++) {
		const struct mem_kv *e = &o->omap[i];

		if (plen && (e->klen < plen || memcmp(e->key, prefix, plen)))
			break;                  /* sorted: past the prefix */
		if (cnt == max) {
			*more = true;
			break;
		}
		kv[cnt].key = strdup(e->key);
		kv[cnt].val = malloc(e->len ? e->len : 1);
		kv[cnt].len = e->len;
		if (!kv[cnt].key || !kv[cnt].val) {
			cnt++;
			r = -ENOMEM;
			break;
		}
		memcpy(kv[cnt].val, e->val, e->len);
		cnt++;
	}
out:
	pthread_mutex_unlock(&ms->d->lock);
	if (r) {
		store_kv_free(kv, cnt);
		return r;
	}
	*out = kv;
	*n = cnt;
	return 0;
}

static int mem_list_objects(struct store_pool *p, char ***names, size_t *n)
{
	struct mem_store *ms = MEM_OF(p);
	struct mem_ns *ns = container_of(p, struct mem_pool, base)->ns;
	char **v;
	size_t i = 0;

	pthread_mutex_lock(&ms->d->lock);
	v = calloc(ns->n ? ns->n : 1, sizeof(*v));
	for (; v && i < ns->n; i++)
		if (!(v[i] = strdup(ns->objs[i]->name)))
			break;
	pthread_mutex_unlock(&ms->d->lock);
	if (!v || i < ns->n) {
		while (v && i--)
			free(v[i]);
		free(v);
		return -ENOMEM;
	}
	*names = v;
	*n = i;
	return 0;
}

static int mem_pool_stat(struct store_pool *p, struct store_pool_stat *out)
{
	struct mem_store *ms = MEM_OF(p);
	struct mem_ns *ns = container_of(p, struct mem_pool, base)->ns;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ms->d->lock);
	out->objects = ns->n;
	for (size_t i = 0; i < ns->n; i++) {
		out->bytes_stored += ns->objs[i]->size;
		out->bytes_used += ns->objs[i]->cap;
	}
	pthread_mutex_unlock(&ms->d->lock);
	return 0;
}

const struct store_backend store_mem_backend = {
	.name = "mem",
	.in_process_only = true,
	.data_copied_at_submit = true,   /* applied inside op_submit */
	.can_allocate = true,
	.open = mem_open,
	.close = mem_close,
	.pool_create = mem_pool_create,
	.pool_open = mem_pool_open,
	.pool_close = mem_pool_close,
	.op_submit = mem_op_submit,
	.read_submit = mem_read_submit,
	.stat = mem_stat,
	.omap_get = mem_omap_get,
	.omap_list = mem_omap_list,
	.list_objects = mem_list_objects,
	.pool_stat = mem_pool_stat,
};
