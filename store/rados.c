/*
 * rados.c - the RADOS backend ("rados"): the store API mapped onto librados.
 *
 * The store API was modelled on librados, so this is mostly a translation:
 * a store is a connected rados_t, a pool an ioctx with its namespace set, a
 * compound op a rados_write_op_t submitted with aio (RADOS applies it
 * atomically on the OSD, and completes it once it is durable on every
 * replica), reads go through rados_aio_read, and omap reads through read ops.
 *
 * Fail fast: rados_mon_op_timeout, rados_osd_op_timeout and
 * client_mount_timeout are set from the config before connecting, so a dead
 * or unreachable cluster gives -ETIMEDOUT (or the connect error) instead of
 * hanging the caller forever.
 *
 * Recovering from a dead OSD: librados' Objecter learns of a new osdmap
 * only when something tells it that it is behind.  An OSD that was killed
 * (not stopped: it never told the monitor) and started again is up under a
 * new instance; a long-lived client keeps sending to the old one and every
 * op times out, for good, while a freshly connected client works (issue
 * 9.4: a mount still got ETIMEDOUT 6 minutes after the OSD was back).  So
 * every -ETIMEDOUT (and connection-reset class error) wakes a refresher
 * thread that asks the monitors for the latest osdmap
 * (rados_wait_for_latest_osdmap), at most once per second; the next op
 * then goes to the OSD as it is now.  The refresh runs on its own thread
 * because completions run on librados' finisher, which must not block.
 *
 * Callbacks run on librados' finisher thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>

#include "common/log.h"
#include "common/time.h"
#include "store/rados_lend.h"
#include "store/store_backend.h"

/* An end key that sorts after every key the store accepts: 0xff x (MAX + 1). */
static char omap_end_key[STORE_OMAP_KEY_MAX + 1];

struct rados_store {
	struct store base;
	rados_t cluster;
	/* the osdmap refresher (see the top of the file) */
	pthread_t refresher;
	bool refresher_started;
	pthread_mutex_t lock;         /* protects the fields below */
	pthread_cond_t cond;
	bool refresh_wanted, stop;
	bool refreshing;              /* the refresher is inside librados */
	bool orphaned;                /* closed meanwhile: the refresher shuts down and frees */
	uint64_t refreshes;
};

struct rados_pool {
	struct store_pool base;
	rados_ioctx_t io;
};

static inline struct rados_store *RS(struct store *st)
{
	return container_of(st, struct rados_store, base);
}

static inline struct rados_pool *RP(struct store_pool *p)
{
	return container_of(p, struct rados_pool, base);
}

static bool osd_trouble(int r)
{
	return r == -ETIMEDOUT || r == -ENOTCONN || r == -ECONNRESET || r == -ESHUTDOWN;
}

/* An op failed with @r: if it looks like a dead or moved OSD, refresh the osdmap. */
static void op_failed(struct rados_store *rs, int r)
{
	if (!osd_trouble(r))
		return;
	pthread_mutex_lock(&rs->lock);
	if (!rs->refresh_wanted) {
		rs->refresh_wanted = true;
		pthread_cond_signal(&rs->cond);
	}
	pthread_mutex_unlock(&rs->lock);
}

static void *refresher_main(void *arg)
{
	struct rados_store *rs = arg;
	uint64_t last = 0;

	pthread_setname_np(pthread_self(), "rados-refresh");
	pthread_mutex_lock(&rs->lock);
	while (!rs->stop) {
		uint64_t now;
		int r;

		if (!rs->refresh_wanted) {
			pthread_cond_wait(&rs->cond, &rs->lock);
			continue;
		}
		now = now_mono_ns();
		if (last && now - last < 1000000000ull) {
			/* at most once per second: wait out the rest of it */
			struct timespec ts = ns_to_timespec(last + 1000000000ull);

			pthread_cond_timedwait(&rs->cond, &rs->lock, &ts);
			continue;
		}
		rs->refresh_wanted = false;
		rs->refreshing = true;
		last = now;
		pthread_mutex_unlock(&rs->lock);
		/* waits for the monitors, without a timeout of its own */
		r = rados_wait_for_latest_osdmap(rs->cluster);
		dout(STORE, r < 0 ? 1 : 5, "rados: ops time out; osdmap refreshed from the monitors: %s",
		     r < 0 ? strerror(-r) : "ok");
		pthread_mutex_lock(&rs->lock);
		rs->refreshing = false;
		rs->refreshes++;
		if (rs->orphaned) {
			/* store_close() did not wait for us (the monitors are gone) */
			pthread_mutex_unlock(&rs->lock);
			rados_shutdown(rs->cluster);
			pthread_mutex_destroy(&rs->lock);
			pthread_cond_destroy(&rs->cond);
			free(rs);
			return NULL;
		}
		pthread_cond_broadcast(&rs->cond);
	}
	pthread_mutex_unlock(&rs->lock);
	return NULL;
}

static int set_timeout(rados_t c, const char *opt, double secs)
{
	char buf[32];
	int r;

	if (secs <= 0)
		return 0;
	snprintf(buf, sizeof(buf), "%g", secs);
	r = rados_conf_set(c, opt, buf);
	if (r < 0)
		derr(STORE, "rados: cannot set %s = %s: %s", opt, buf, strerror(-r));
	return r;
}

static int rados_store_open(const struct store_config *cfg, struct store **out)
{
	struct rados_store *rs = calloc(1, sizeof(*rs));
	char name[160];
	int r;

	if (!rs)
		return -ENOMEM;
	memset(omap_end_key, 0xff, STORE_OMAP_KEY_MAX);
	snprintf(name, sizeof(name), "client.%s", cfg->rados_id && *cfg->rados_id ? cfg->rados_id : "admin");
	r = rados_create2(&rs->cluster, "ceph", name, 0);
	if (r < 0) {
		derr(STORE, "rados: rados_create2(%s): %s", name, strerror(-r));
		free(rs);
		return r;
	}
	r = rados_conf_read_file(rs->cluster, cfg->rados_conf && *cfg->rados_conf ? cfg->rados_conf : NULL);
	if (r < 0) {
		derr(STORE, "rados: cannot read ceph config %s: %s",
		     cfg->rados_conf && *cfg->rados_conf ? cfg->rados_conf : "(default search path)", strerror(-r));
		goto out_shutdown;
	}
	/* connecting waits for the monitors for client_mount_timeout: bound it too */
	if ((r = set_timeout(rs->cluster, "rados_mon_op_timeout", cfg->rados_mon_op_timeout)) < 0 ||
	    (r = set_timeout(rs->cluster, "client_mount_timeout", cfg->rados_mon_op_timeout)) < 0 ||
	    (r = set_timeout(rs->cluster, "rados_osd_op_timeout", cfg->rados_osd_op_timeout)) < 0)
		goto out_shutdown;
	r = rados_connect(rs->cluster);
	if (r < 0) {
		derr(STORE, "rados: cannot connect to the cluster (conf %s, id %s): %s",
		     cfg->rados_conf && *cfg->rados_conf ? cfg->rados_conf : "default", name, strerror(-r));
		goto out_shutdown;
	}
	dout(STORE, 2, "rados: connected as %s", name);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&rs->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&rs->lock, NULL);
	r = pthread_create(&rs->refresher, NULL, refresher_main, rs);
	if (r) {
		derr(STORE, "rados: cannot start the osdmap refresher: %s", strerror(r));
		pthread_mutex_destroy(&rs->lock);
		pthread_cond_destroy(&rs->cond);
		r = -r;
		goto out_shutdown;
	}
	rs->refresher_started = true;
	*out = &rs->base;
	return 0;

out_shutdown:
	rados_shutdown(rs->cluster);
	free(rs);
	return r;
}

static void rados_store_close(struct store *st)
{
	struct rados_store *rs = RS(st);

	if (rs->refresher_started) {
		struct timespec ts = ns_to_timespec(now_mono_ns() + 2000000000ull);

		pthread_mutex_lock(&rs->lock);
		rs->stop = true;
		pthread_cond_broadcast(&rs->cond);
		/* a refresh in progress waits for the monitors: give it a moment,
		 * then leave the handle to the refresher (it shuts it down) */
		while (rs->refreshing && pthread_cond_timedwait(&rs->cond, &rs->lock, &ts) == 0)
			;
		if (rs->refreshing) {
			rs->orphaned = true;
			pthread_mutex_unlock(&rs->lock);
			pthread_detach(rs->refresher);
			dout(STORE, 1, "rados: closing while an osdmap refresh waits for the monitors");
			return;
		}
		pthread_mutex_unlock(&rs->lock);
		pthread_join(rs->refresher, NULL);
		pthread_mutex_destroy(&rs->lock);
		pthread_cond_destroy(&rs->cond);
	}
	rados_shutdown(rs->cluster);
	free(rs);
}

static int rados_store_pool_create(struct store *st, const char *name)
{
	int r = rados_pool_create(RS(st)->cluster, name);
	if (r < 0 && r != -EEXIST)
		derr(STORE, "rados: creating pool %s: %s", name, strerror(-r));
	return r;
}

static int rados_store_pool_open(struct store *st, const char *name, const char *nspace, struct store_pool **out)
{
	struct rados_pool *rp = calloc(1, sizeof(*rp));
	int r;

	if (!rp)
		return -ENOMEM;
	r = rados_ioctx_create(RS(st)->cluster, name, &rp->io);
	if (r < 0) {
		free(rp);
		return r;
	}
	rados_ioctx_set_namespace(rp->io, nspace && *nspace ? nspace : NULL);
	*out = &rp->base;
	return 0;
}

static void rados_store_pool_close(struct store_pool *p)
{
	struct rados_pool *rp = RP(p);
	rados_ioctx_destroy(rp->io);
	free(rp);
}

/* One in-flight aio request. */
struct aio {
	struct rados_store *rs;
	store_cb_t cb;
	void *arg;
	rados_write_op_t wop;
	rados_completion_t c;
	/* the omap_cmp guards' own results (translate_guards), librados writes them at completion */
	int *guard_rvals;
	size_t nguards;
	bool stat_only;      /* a 0-byte read: only check that the object exists */
	uint64_t size;
	time_t mtime;
};

/*
 * The result of an op with omap_cmp guards, as the store API has it: every
 * way a guard fails is -ECANCELED.  The guards go first in the librados op
 * (translate_guards), so when one fails nothing after it ran; RADOS says
 * -ECANCELED for a different value but -ENOENT for a missing object, which
 * only the guard's own result tells from an -ENOENT of a later sub-op.
 */
static int guards_result(const struct aio *a, int r)
{
	if (r == -ECANCELED)
		return r;
	if (r == -ENOENT)
		for (size_t i = 0; i < a->nguards; i++)
			if (a->guard_rvals[i] == -ENOENT || a->guard_rvals[i] == -ECANCELED)
				return -ECANCELED;
	return r;
}

static void aio_done(rados_completion_t c, void *arg)
{
	struct aio *a = arg;
	int r = rados_aio_get_return_value(c);
	store_cb_t cb = a->cb;
	void *cbarg = a->arg;

	if (a->wop)
		rados_release_write_op(a->wop);
	if (a->nguards && r < 0)
		r = guards_result(a, r);
	free(a->guard_rvals);
	if (a->stat_only && r > 0)
		r = 0;
	if (r < 0)
		op_failed(a->rs, r);
	/* librados holds its own reference while it calls us: releasing here is safe */
	rados_aio_release(c);
	free(a);
	cb(r, cbarg);
}

/*
 * The omap_cmp guards of @op, first in @w whatever their place in @op: they
 * compare the object as it was before the op (store.h), and a failing one
 * stops the op before anything else ran.  Each result goes to @rvals.
 */
static void translate_guards(rados_write_op_t w, const struct store_op *op, int *rvals)
{
	size_t g = 0;

	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];

		if (s->kind != SOP_OMAP_CMP)
			continue;
		rvals[g] = 0;
		rados_write_op_omap_cmp2(w, s->key, LIBRADOS_CMPXATTR_OP_EQ, s->data ? s->data : "", strlen(s->key),
					 s->len, &rvals[g]);
		g++;
	}
}

static void translate(rados_write_op_t w, const struct store_op *op)
{
	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];
		const char *k;
		size_t kl, vl;

		switch (s->kind) {
		case SOP_CREATE:
			rados_write_op_create(w, s->excl ? LIBRADOS_CREATE_EXCLUSIVE : LIBRADOS_CREATE_IDEMPOTENT, NULL);
			break;
		case SOP_ASSERT_EXISTS:
			rados_write_op_assert_exists(w);
			break;
		case SOP_WRITE:
			rados_write_op_write(w, s->data ? s->data : "", s->len, s->off);
			break;
		case SOP_WRITE_FULL:
			rados_write_op_write_full(w, s->data ? s->data : "", s->len);
			break;
		case SOP_APPEND:
			rados_write_op_append(w, s->data ? s->data : "", s->len);
			break;
		case SOP_TRUNCATE:
			rados_write_op_truncate(w, s->off);
			break;
		case SOP_ZERO:
			rados_write_op_zero(w, s->off, s->len);
			break;
		case SOP_REMOVE:
			rados_write_op_remove(w);
			break;
		case SOP_OMAP_SET:
			k = s->key;
			kl = strlen(s->key);
			vl = s->len;
			{
				const char *v = s->data ? s->data : "";
				rados_write_op_omap_set2(w, &k, &v, &kl, &vl, 1);
			}
			break;
		case SOP_OMAP_RM:
			k = s->key;
			kl = strlen(s->key);
			rados_write_op_omap_rm_keys2(w, &k, &kl, 1);
			break;
		case SOP_OMAP_RM_RANGE:
			if (s->key2)
				rados_write_op_omap_rm_range2(w, s->key, strlen(s->key), s->key2, strlen(s->key2));
			else
				rados_write_op_omap_rm_range2(w, s->key, strlen(s->key), omap_end_key,
							      sizeof(omap_end_key));
			break;
		case SOP_OMAP_CLEAR:
			rados_write_op_omap_clear(w);
			break;
		case SOP_ALLOCATE:
			break;   /* never here: store.c refuses it (can_allocate) */
		case SOP_OMAP_CMP:
			break;   /* translate_guards() put it first */
		}
	}
}

static int rados_store_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb,
				 void *arg)
{
	struct aio *a = calloc(1, sizeof(*a));
	int r;

	if (!a) {
		store_op_free(op);
		return -ENOMEM;
	}
	a->rs = RS(p->st);
	a->cb = cb;
	a->arg = arg;
	a->wop = rados_create_write_op();
	if (!a->wop) {
		r = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < op->n; i++)
		a->nguards += op->v[i].kind == SOP_OMAP_CMP;
	if (a->nguards) {
		a->guard_rvals = calloc(a->nguards, sizeof(*a->guard_rvals));
		if (!a->guard_rvals) {
			r = -ENOMEM;
			goto out_free;
		}
		translate_guards(a->wop, op, a->guard_rvals);
	}
	translate(a->wop, op);   /* librados copies the data into its own buffers */
	store_op_free(op);
	op = NULL;
	r = rados_aio_create_completion2(a, aio_done, &a->c);
	if (r < 0)
		goto out_free;
	r = rados_aio_write_op_operate(a->wop, RP(p)->io, a->c, oid, NULL, 0);
	if (r < 0) {
		rados_aio_release(a->c);
		goto out_free;
	}
	return 0;

out_free:
	if (a->wop)
		rados_release_write_op(a->wop);
	store_op_free(op);
	free(a->guard_rvals);
	free(a);
	return r;
}

static int rados_store_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
				   store_cb_t cb, void *arg)
{
	struct aio *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	a->rs = RS(p->st);
	a->cb = cb;
	a->arg = arg;
	r = rados_aio_create_completion2(a, aio_done, &a->c);
	if (r < 0) {
		free(a);
		return r;
	}
	/* librados reads the whole object for len 0; the store API reads nothing */
	a->stat_only = len == 0;
	if (len == 0)
		r = rados_aio_stat(RP(p)->io, oid, a->c, &a->size, &a->mtime);
	else
		r = rados_aio_read(RP(p)->io, oid, a->c, buf, len, off);
	if (r < 0) {
		rados_aio_release(a->c);
		free(a);
	}
	return r;
}

/*
 * A read the caller waits for: a completion without a callback.  librados
 * wakes a waiter from the thread that finished the op (C_aio_Complete), while
 * a callback is handed on to its finisher strand first: one thread hop (and,
 * on a busy machine, one scheduling delay) less per read.
 */
struct rados_aio {
	struct store_aio base;
	struct rados_store *rs;
	rados_completion_t c;
};

static int rados_store_aio_read(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
				struct store_aio **out)
{
	struct rados_aio *a;
	int r;

	if (len == 0)
		return -EINVAL;   /* librados reads the whole object for len 0 */
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->base.be = p->st->be;
	a->rs = RS(p->st);
	r = rados_aio_create_completion2(NULL, NULL, &a->c);
	if (r < 0) {
		free(a);
		return r;
	}
	r = rados_aio_read(RP(p)->io, oid, a->c, buf, len, off);
	if (r < 0) {
		rados_aio_release(a->c);
		free(a);
		return r;
	}
	*out = &a->base;
	return 0;
}

static ssize_t rados_store_aio_wait(struct store_aio *base)
{
	struct rados_aio *a = container_of(base, struct rados_aio, base);
	int r;

	rados_aio_wait_for_complete(a->c);
	r = rados_aio_get_return_value(a->c);
	rados_aio_release(a->c);
	if (r < 0)
		op_failed(a->rs, r);
	free(a);
	return r;
}

/* A lent read (store_aio_read_lend): the reply's bufferlist, kept by rados_lend.cc. */
static ssize_t rados_store_aio_wait_lent(struct store_aio *base, const char **data);
static void rados_store_aio_put(struct store_aio *base);

static const struct store_backend rados_lent_be = {
	.name = "rados-lent",
	.aio_wait_lent = rados_store_aio_wait_lent,
	.aio_put = rados_store_aio_put,
};

struct rados_lent {
	struct store_aio base;
	struct rados_store *rs;
	struct rados_lend *l;
};

static int rados_store_aio_read_lend(struct store_pool *p, const char *oid, uint64_t off, size_t len,
				     struct store_aio **out)
{
	struct rados_lent *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	a->base.be = &rados_lent_be;
	a->rs = RS(p->st);
	r = rados_lend_read(RP(p)->io, oid, off, len, &a->l);
	if (r < 0) {
		free(a);
		return r;
	}
	*out = &a->base;
	return 0;
}

static ssize_t rados_store_aio_wait_lent(struct store_aio *base, const char **data)
{
	struct rados_lent *a = container_of(base, struct rados_lent, base);
	ssize_t r = rados_lend_wait(a->l, data);

	if (r < 0)
		op_failed(a->rs, (int)r);
	return r;
}

static void rados_store_aio_put(struct store_aio *base)
{
	struct rados_lent *a = container_of(base, struct rados_lent, base);

	rados_lend_put(a->l);
	free(a);
}

static int rados_store_stat(struct store_pool *p, const char *oid, struct store_stat *st)
{
	uint64_t size;
	time_t mtime;
	int r = rados_stat(RP(p)->io, oid, &size, &mtime);   /* pacific has no rados_stat2 */

	if (r < 0) {
		op_failed(RS(p->st), r);
		return r;
	}
	st->size = size;
	st->mtime.tv_sec = mtime;
	st->mtime.tv_nsec = 0;
	return 0;
}

/* Copy an omap iterator into a store_kv array. */
static int iter_collect(rados_omap_iter_t it, struct store_kv **out, size_t *n)
{
	struct store_kv *kv = NULL;
	size_t cnt = 0, cap = 0;
	char *k, *v;
	size_t kl, vl;
	int r;

	while ((r = rados_omap_get_next2(it, &k, &v, &kl, &vl)) == 0 && k) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			struct store_kv *nv = realloc(kv, cap * sizeof(*nv));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			kv = nv;
		}
		kv[cnt].key = strndup(k, kl);
		kv[cnt].val = malloc(vl ? vl : 1);
		kv[cnt].len = vl;
		if (!kv[cnt].key || !kv[cnt].val) {
			free(kv[cnt].key);
			free(kv[cnt].val);
			r = -ENOMEM;
			break;
		}
		if (vl)
			memcpy(kv[cnt].val, v, vl);
		cnt++;
	}
	if (r < 0) {
		store_kv_free(kv, cnt);
		return r;
	}
	*out = kv;
	*n = cnt;
	return 0;
}

static int rados_store_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len)
{
	rados_read_op_t rop = rados_create_read_op();
	rados_omap_iter_t it = NULL;
	size_t kl = strlen(key);
	struct store_kv *kv = NULL;
	size_t n = 0;
	int prval = 0, r;

	if (!rop)
		return -ENOMEM;
	rados_read_op_omap_get_vals_by_keys2(rop, &key, 1, &kl, &it, &prval);
	r = rados_read_op_operate(rop, RP(p)->io, oid, 0);
	if (r == 0)
		r = prval;
	if (r == 0)
		r = iter_collect(it, &kv, &n);
	if (it)
		rados_omap_get_end(it);
	rados_release_read_op(rop);
	if (r < 0) {
		op_failed(RS(p->st), r);
		return r;
	}
	if (n != 1) {
		store_kv_free(kv, n);
		return -ENOENT;
	}
	*val = kv[0].val;
	*len = kv[0].len;
	free(kv[0].key);
	free(kv);
	return 0;
}

static int rados_store_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
				 size_t max, struct store_kv **out, size_t *n, bool *more)
{
	rados_read_op_t rop = rados_create_read_op();
	rados_omap_iter_t it = NULL;
	unsigned char pmore = 0;
	int prval = 0, r;

	if (!rop)
		return -ENOMEM;
	rados_read_op_omap_get_vals2(rop, after ? after : "", prefix ? prefix : "", max, &it, &pmore, &prval);
	r = rados_read_op_operate(rop, RP(p)->io, oid, 0);
	if (r == 0)
		r = prval;
	if (r == 0)
		r = iter_collect(it, out, n);
	if (it)
		rados_omap_get_end(it);
	rados_release_read_op(rop);
	if (r == 0)
		*more = pmore != 0;
	else
		op_failed(RS(p->st), r);
	return r;
}

static int rados_store_list_objects(struct store_pool *p, char ***names, size_t *n)
{
	rados_list_ctx_t ctx;
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	const char *entry;
	size_t elen;
	int r = rados_nobjects_list_open(RP(p)->io, &ctx);

	if (r < 0)
		return r;
	while ((r = rados_nobjects_list_next2(ctx, &entry, NULL, NULL, &elen, NULL, NULL)) == 0) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			char **nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[cnt] = strndup(entry, elen))) {
			r = -ENOMEM;
			break;
		}
		cnt++;
	}
	rados_nobjects_list_close(ctx);
	if (r != -ENOENT) {   /* -ENOENT ends the listing */
		for (size_t i = 0; i < cnt; i++)
			free(v[i]);
		free(v);
		return r < 0 ? r : -EIO;
	}
	*names = v;
	*n = cnt;
	return 0;
}

/* The cluster's raw capacity and use (a mon command, bounded by rados_mon_op_timeout). */
static int rados_store_space(struct store *st, struct store_space *out)
{
	struct rados_cluster_stat_t cs;
	int r = rados_cluster_stat(RS(st)->cluster, &cs);

	if (r < 0)
		return r;
	out->total = cs.kb << 10;
	out->used = cs.kb_used << 10;
	out->avail = cs.kb_avail << 10;
	out->state = STORE_SPACE_OK;	/* Ceph enforces its own full ratios */
	return 0;
}

/* The pool's statistics as the OSDs report them (rados df). */
static int rados_store_pool_stat(struct store_pool *p, struct store_pool_stat *out)
{
	struct rados_pool_stat_t ps;
	int r = rados_ioctx_pool_stat(RP(p)->io, &ps);

	if (r < 0)
		return r;
	out->objects = ps.num_objects;
	out->bytes_stored = ps.num_bytes;
	out->bytes_used = ps.num_kb << 10;
	return 0;
}

/* ---- fencing: the OSD map's blocklist ------------------------------------------ */

static int rados_store_instance_addr(struct store *st, char *buf, size_t len)
{
	char *a = NULL;
	int r = rados_getaddrs(RS(st)->cluster, &a);

	if (r < 0)
		return r;
	r = snprintf(buf, len, "%s", a ? a : "") >= (int)len ? -ENAMETOOLONG : 0;
	free(a);
	return r;
}

/*
 * Run @fn for every address of @addrs: one ("v2:1.2.3.4:0/99"), or an
 * address vector as rados_getaddrs() gives it ("[v2:...,v1:...]").
 */
static int each_addr(const char *addrs, int (*fn)(struct rados_store *, const char *, double), struct rados_store *rs,
		     double expire)
{
	char buf[STORE_ADDR_MAX], *p, *save = NULL, *tok;
	int r = 0, r2;

	snprintf(buf, sizeof(buf), "%s", addrs);
	p = buf;
	if (*p == '[')
		p++;
	if (*p && p[strlen(p) - 1] == ']')
		p[strlen(p) - 1] = '\0';
	for (tok = strtok_r(p, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if ((r2 = fn(rs, tok, expire)) && !r)
			r = r2;
	return r;
}

static int bl_add_one(struct rados_store *rs, const char *addr, double expire)
{
	/* 0 to librados is "the monitor's default" (an hour): ours is "until removed" */
	uint32_t secs = expire <= 0 ? 10u * 365 * 86400 : expire >= 4e9 ? UINT32_MAX : (uint32_t)(expire + 0.999);
	int r = rados_blocklist_add(rs->cluster, (char *)addr, secs);

	if (r < 0)
		derr(STORE, "rados: blocklisting %s failed: %s", addr, strerror(-r));
	else
		dinfo(STORE, "rados: %s blocklisted for %u s", addr, secs);
	return r < 0 ? r : 0;
}

static int bl_rm_one(struct rados_store *rs, const char *addr, double unused)
{
	char cmd[STORE_ADDR_MAX + 96], *outbuf = NULL, *outs = NULL;
	const char *cmds[1] = { cmd };
	size_t outbuflen = 0, outslen = 0;
	int r;

	(void)unused;
	snprintf(cmd, sizeof(cmd), "{\"prefix\": \"osd blocklist\", \"blocklistop\": \"rm\", \"addr\": \"%s\"}", addr);
	r = rados_mon_command(rs->cluster, cmds, 1, "", 0, &outbuf, &outbuflen, &outs, &outslen);
	if (r < 0)
		derr(STORE, "rados: lifting the blocklist entry of %s failed: %s (%.*s)", addr, strerror(-r),
		     (int)outslen, outs ? outs : "");
	rados_buffer_free(outbuf);
	rados_buffer_free(outs);
	return r < 0 ? r : 0;
}

static int rados_store_blocklist_add(struct store *st, const char *addr, double expire_secs)
{
	return each_addr(addr, bl_add_one, RS(st), expire_secs);
}

static int rados_store_blocklist_rm(struct store *st, const char *addr)
{
	return each_addr(addr, bl_rm_one, RS(st), 0);
}

const struct store_backend store_rados_backend = {
	.name = "rados",
	.data_copied_at_submit = true,   /* rados_write_op_write() copies into a bufferlist */
	.open = rados_store_open,
	.close = rados_store_close,
	.pool_create = rados_store_pool_create,
	.pool_open = rados_store_pool_open,
	.pool_close = rados_store_pool_close,
	.op_submit = rados_store_op_submit,
	.read_submit = rados_store_read_submit,
	.stat = rados_store_stat,
	.omap_get = rados_store_omap_get,
	.omap_list = rados_store_omap_list,
	.list_objects = rados_store_list_objects,
	.space = rados_store_space,
	.pool_stat = rados_store_pool_stat,
	.aio_read = rados_store_aio_read,
	.aio_wait = rados_store_aio_wait,
	.aio_read_lend = rados_store_aio_read_lend,
	.aio_wait_lent = rados_store_aio_wait_lent,
	.aio_put = rados_store_aio_put,
	.instance_addr = rados_store_instance_addr,
	.blocklist_add = rados_store_blocklist_add,
	.blocklist_rm = rados_store_blocklist_rm,
};
