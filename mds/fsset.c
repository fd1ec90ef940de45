/*
 * fsset.c - `loligo fs set NAME VAR VALUE`: the settings an operator changes
 * on a running filesystem, kept with the filesystem.
 *
 * Ceph keeps them in its FSMap.  Here they are keys of mds_table, changed
 * by a journaled edit like any other metadata, so a restart's replay, a
 * standby that takes the rank and a standby-replay that follows the
 * journal all see them; the command answers once the edit is durable, and
 * only then is the new value applied and pushed:
 *
 *   max_file_size          bytes (1 .. 2^63-1; K, M, G, T, P suffixes):
 *                          truncates, writes and fallocates past it fail with
 *                          EFBIG, through FUSE and the NFS gateway.  Files
 *                          already larger keep their bytes.  Connected
 *                          clients are told at once (MDSP_SESSION_CONFIG);
 *                          one cut off meanwhile learns it from the OPEN of
 *                          its reconnect, and the MDS checks truncates itself.
 *   refuse_client_session  true|false: new sessions are refused with EPERM
 *                          and a reason; sessions that exist may reconnect.
 *   session_timeout        seconds: mds_session_timeout, kept with the fs
 *   session_autoclose      seconds: mds_session_autoclose, kept with the fs
 *   standby_count_wanted   count: mds_standby_count_wanted, kept with the fs
 *
 * The last three are config options as well: a value set here wins over the
 * config file's, now and at every later start (Ceph's rule for its fs
 * settings); a later `config set` of the option lasts until the next start.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/codec.h"
#include "mds/fsset.h"
#include "mds/journal.h"
#include "mds/layout.h"
#include "mds/mdcache.h"
#include "mds/session.h"

#define FSSET_WAIT_NS (30ull * 1000000000ull)   /* for the journal write */

enum fsset_kind { K_SIZE, K_BOOL, K_SECS, K_COUNT };

static const struct fsset_var {
	const char *name;
	enum fsset_kind kind;
	const char *key;        /* mds_table key */
	int opt;                /* the config option it stands for, or -1 */
} vars[] = {
	{ "max_file_size", K_SIZE, "max_file_size", -1 },
	{ "refuse_client_session", K_BOOL, "refuse_client_session", -1 },
	{ "session_timeout", K_SECS, "session_timeout_ms", CFG_mds_session_timeout },
	{ "session_autoclose", K_SECS, "session_autoclose_ms", CFG_mds_session_autoclose },
	{ "standby_count_wanted", K_COUNT, "standby_count_wanted", CFG_mds_standby_count_wanted },
};

#define NVARS ((int)(sizeof(vars) / sizeof(vars[0])))

static int parse_u64(const char *s, uint64_t *out, bool suffix)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (suffix && *end) {
		const char *u = "KMGTP", *p = strchr(u, *end == 'k' ? 'K' : *end);

		if (!p)
			return -EINVAL;
		shift = 10 * (int)(p - u + 1);
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* @val as the table's 8-byte value of @v; a message in @err when it is not one */
static int parse_value(const struct fsset_var *v, const char *val, uint64_t *out, char *err, size_t len)
{
	double secs;
	char *end;

	switch (v->kind) {
	case K_SIZE:
		if (parse_u64(val, out, true) || *out == 0 || *out > (uint64_t)INT64_MAX) {
			snprintf(err, len, "%s: '%s' is not a size between 1 and 2^63-1 bytes (say 1T, 512G, "
				 "1099511627776)", v->name, val);
			return -EINVAL;
		}
		return 0;
	case K_BOOL:
		if (!strcasecmp(val, "true") || !strcmp(val, "1") || !strcasecmp(val, "yes")) {
			*out = 1;
		} else if (!strcasecmp(val, "false") || !strcmp(val, "0") || !strcasecmp(val, "no")) {
			*out = 0;
		} else {
			snprintf(err, len, "%s: '%s' is not true or false", v->name, val);
			return -EINVAL;
		}
		return 0;
	case K_SECS:
		errno = 0;
		secs = strtod(val, &end);
		if (errno || end == val || *end || !(secs >= 1 && secs <= 86400.0 * 365)) {
			snprintf(err, len, "%s: '%s' is not a number of seconds between 1 and a year", v->name, val);
			return -EINVAL;
		}
		*out = (uint64_t)(secs * 1000.0);
		return 0;
	case K_COUNT:
		if (parse_u64(val, out, false) || *out > 1024) {
			snprintf(err, len, "%s: '%s' is not a count between 0 and 1024", v->name, val);
			return -EINVAL;
		}
		*out += 1;      /* 0 in the table: never set */
		return 0;
	}
	return -EINVAL;
}

/* The option value of a table value (K_SECS, K_COUNT) for cfg_set. */
static void opt_string(const struct fsset_var *v, uint64_t tv, char *buf, size_t len)
{
	if (v->kind == K_SECS)
		snprintf(buf, len, "%.3f", (double)tv / 1000.0);
	else
		snprintf(buf, len, "%" PRIu64, tv - 1);
}

static uint64_t *table_field(struct mds *m, const struct fsset_var *v)
{
	if (v->opt == CFG_mds_session_timeout)
		return &m->fs_session_timeout_ms;
	if (v->opt == CFG_mds_session_autoclose)
		return &m->fs_session_autoclose_ms;
	if (v->opt == CFG_mds_standby_count_wanted)
		return &m->fs_standby_wanted;
	return NULL;
}

static int apply_option(struct mds *m, const struct fsset_var *v, char *err, size_t len)
{
	uint64_t *f = table_field(m, v), tv;
	char buf[64], why[256];

	tv = f ? *f : 0;
	if (!tv)
		return 0;       /* never set: the config file's value counts */
	opt_string(v, tv, buf, sizeof(buf));
	if (cfg_set(v->opt, buf, false, why, sizeof(why))) {
		snprintf(err, len, "fs setting %s = %s cannot be applied: %s", v->name, buf, why);
		return -EINVAL;
	}
	return 0;
}

int fsset_apply_loaded(struct mds *m, char *err, size_t len)
{
	int i, r;

	for (i = 0; i < NVARS; i++)
		if (vars[i].opt >= 0 && (r = apply_option(m, &vars[i], err, len)))
			return r;
	return 0;
}

void fsset_dump(struct mds *m, struct json_object *fs)
{
	uint64_t v;

	json_object_object_add(fs, "max_file_size", json_object_new_int64((int64_t)m->max_file_size));
	json_object_object_add(fs, "refuse_client_session",
			       json_object_new_boolean(atomic_load(&m->refuse_client_session)));
	json_object_object_add(fs, "session_timeout", json_object_new_double(cfg_double(CFG_mds_session_timeout)));
	json_object_object_add(fs, "session_autoclose",
			       json_object_new_double(cfg_double(CFG_mds_session_autoclose)));
	v = cfg_uint(CFG_mds_standby_count_wanted);
	json_object_object_add(fs, "standby_count_wanted", json_object_new_int64((int64_t)v));
}

int fsset_set(struct mds *m, const char *fs_name, const char *var, const char *val, struct json_object **out,
	      char *err, size_t len)
{
	const struct fsset_var *v = NULL;
	uint64_t tv, seq, old = 0;
	unsigned told = 0;
	uint8_t enc[8];
	struct txn t;
	int i, r;

	if (strcmp(fs_name, m->fs_name)) {
		snprintf(err, len, "no filesystem '%s' here (this MDS serves '%s')", fs_name, m->fs_name);
		return -ENOENT;
	}
	for (i = 0; i < NVARS; i++)
		if (!strcmp(var, vars[i].name))
			v = &vars[i];
	if (!v) {
		int o = snprintf(err, len, "unknown setting '%s': one of", var);

		for (i = 0; i < NVARS && o > 0 && (size_t)o < len; i++)
			o += snprintf(err + o, len - (size_t)o, "%s %s", i ? "," : "", vars[i].name);
		return -EINVAL;
	}
	if ((r = parse_value(v, val, &tv, err, len)))
		return r;
	if ((r = journal_read_only(m))) {
		snprintf(err, len, "the MDS is read-only (its journal cannot be written: %s); try again once it is "
			 "read-write", strerror(-r));
		return r;
	}

	pthread_mutex_lock(&m->lock);
	txn_init(&t);
	le64_put(enc, tv);
	txn_edit(&t, EDIT_SET, OID_TABLE, v->key, enc, 8, NULL);
	seq = journal_submit_locked(m, &t, NULL);
	txn_free(&t);
	pthread_mutex_unlock(&m->lock);
	r = journal_wait_written(m, seq, now_mono_ns() + FSSET_WAIT_NS);
	if (r) {
		snprintf(err, len, "%s = %s was not made durable (%s): the setting is unchanged unless a retried "
			 "journal write lands it; check with `loligo fs dump`", v->name, val, strerror(-r));
		return r;
	}

	/* durable: apply it (a replay from here on brings the same value back) */
	pthread_mutex_lock(&m->lock);
	switch (v->kind) {
	case K_SIZE:
		old = m->max_file_size;
		m->max_file_size = tv;
		told = session_push_config_locked(m);
		break;
	case K_BOOL:
		old = atomic_load(&m->refuse_client_session);
		atomic_store(&m->refuse_client_session, tv != 0);
		break;
	case K_SECS:
	case K_COUNT:
		old = *table_field(m, v);
		*table_field(m, v) = tv;
		break;
	}
	pthread_mutex_unlock(&m->lock);
	if (v->opt >= 0 && (r = apply_option(m, v, err, len)))
		return r;
	dinfo(MDS, "fs set %s %s %s (was %" PRIu64 ")%s", m->fs_name, v->name, val, old,
	      v->kind == K_SIZE ? " - connected clients told" : "");

	*out = json_object_new_object();
	json_object_object_add(*out, "fs_name", json_object_new_string(m->fs_name));
	json_object_object_add(*out, "var", json_object_new_string(v->name));
	json_object_object_add(*out, "value", json_object_new_string(val));
	if (v->kind == K_SIZE)
		json_object_object_add(*out, "sessions_told", json_object_new_int((int)told));
	return 0;
}

/* ---- data pools: fs add_data_pool / rm_data_pool --------------------------- */

/*
 * The table's text ("ID=NAME" lines) with @drop left out and @add_id=@add
 * put in (0 / NULL: none).  Caller holds mds->lock.  NULL without memory.
 */
static char *pools_text_locked(struct mds *m, uint32_t drop, uint32_t add_id, const char *add)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (uint32_t i = 0; i < m->ndata_pools; i++)
		if (m->data_pools[i].id != drop)
			fprintf(f, "%" PRIu32 "=%s\n", m->data_pools[i].id, m->data_pools[i].name);
	if (add)
		fprintf(f, "%" PRIu32 "=%s\n", add_id, add);
	if (fclose(f))
		return NULL;
	return s;
}

/* the pool's store: the data store the clients share (local), else the one store */
static struct store *pools_store(struct mds *m)
{
	return m->data_st ? m->data_st : m->st;
}

/* journal "data_pools" = @text and wait; then the in-memory table follows */
static int pools_commit(struct mds *m, const char *text, char *err, size_t len)
{
	struct txn t;
	uint64_t seq;
	int r;

	if ((r = journal_read_only(m))) {
		snprintf(err, len, "the MDS is read-only (its journal cannot be written: %s); try again once it is "
			 "read-write", strerror(-r));
		return r;
	}
	pthread_mutex_lock(&m->lock);
	txn_init(&t);
	txn_edit(&t, EDIT_SET, OID_TABLE, "data_pools", text, (uint32_t)strlen(text), NULL);
	seq = journal_submit_locked(m, &t, NULL);
	txn_free(&t);
	pthread_mutex_unlock(&m->lock);
	r = journal_wait_written(m, seq, now_mono_ns() + FSSET_WAIT_NS);
	if (r)
		snprintf(err, len, "the data pool change was not made durable (%s); check with `loligo fs dump`",
			 strerror(-r));
	return r;
}

/* an inode the MDS holds whose layout names pool @id (files, directories' layouts) */
static struct minode *pool_user_locked(struct mds *m, uint32_t id)
{
	struct minode *in;
	uint64_t idx;

	xa_for_each(&m->inodes, idx, in) {
		if (in->a.pool == id && (S_ISREG(in->a.mode) || S_ISDIR(in->a.mode)))
			return in;
	}
	return NULL;
}

int fsset_data_pool(struct mds *m, const char *fs_name, const char *pool, bool add, struct json_object **out,
		    char *err, size_t len)
{
	struct store_pool *p = NULL;
	struct minode *user;
	uint32_t id = 0, i;
	char *text = NULL, **names = NULL;
	size_t n = 0, nobj = 0;
	int r;

	if (strcmp(fs_name, m->fs_name)) {
		snprintf(err, len, "no filesystem '%s' here (this MDS serves '%s')", fs_name, m->fs_name);
		return -ENOENT;
	}
	if (!*pool || strchr(pool, '\n') || strchr(pool, '=') || strlen(pool) > 200) {
		snprintf(err, len, "'%s' is not a pool name", pool);
		return -EINVAL;
	}
	if (add) {
		bool ours;

		pthread_mutex_lock(&m->lock);
		r = layout_pool_id(m, pool, &id);
		ours = r == 0 && layout_pool_name(m, id) && !strcmp(pool, layout_pool_name(m, id));
		pthread_mutex_unlock(&m->lock);
		if (ours) {
			*out = json_object_new_object();   /* as Ceph: already one of ours is not an error */
			json_object_object_add(*out, "pool", json_object_new_string(pool));
			json_object_object_add(*out, "id", json_object_new_int64(id));
			json_object_object_add(*out, "already", json_object_new_boolean(true));
			return 0;
		}
		/* on RADOS an erasure-coded pool is made beforehand (ceph osd pool create NAME erasure);
		 * a missing one is made here, replicated, as a new data pool always was */
		r = store_pool_create(pools_store(m), pool);
		if (r && r != -EEXIST) {
			snprintf(err, len, "cannot create pool %s: %s", pool, strerror(-r));
			return r;
		}
		r = store_pool_open(pools_store(m), pool, NULL, &p);
		if (r) {
			snprintf(err, len, "cannot open pool %s: %s", pool, strerror(-r));
			return r;
		}
		pthread_mutex_lock(&m->lock);
		for (i = 0, id = 0; i < m->ndata_pools; i++)
			if (m->data_pools[i].id > id)
				id = m->data_pools[i].id;
		id++;
		text = pools_text_locked(m, 0, id, pool);
		pthread_mutex_unlock(&m->lock);
	} else {
		pthread_mutex_lock(&m->lock);
		r = layout_pool_id(m, pool, &id);
		user = r == 0 && id ? pool_user_locked(m, id) : NULL;
		pthread_mutex_unlock(&m->lock);
		if (r) {
			snprintf(err, len, "%s is not a data pool of %s", pool, m->fs_name);
			return -ENOENT;
		}
		if (id == 0) {
			snprintf(err, len, "%s is the first data pool of %s (it holds every file's object index): it "
				 "cannot be removed", pool, m->fs_name);
			return -EINVAL;
		}
		if (user) {
			snprintf(err, len, "pool %s is in use: inode %" PRIx64 "'s layout names it (set another "
				 "layout, or remove the files, first)", pool, user->a.ino);
			return -EBUSY;
		}
		/* the data of any file in it: its objects (the MDS does not hold every inode) */
		r = store_pool_open(pools_store(m), pool, NULL, &p);
		if (r == 0)
			r = store_list_objects(p, &names, &n);
		if (r == 0) {
			for (size_t k = 0; k < n; k++) {
				if (strcmp(names[k], "loligo.data_format"))
					nobj++;
				if (nobj == 1 && strcmp(names[k], "loligo.data_format"))
					snprintf(err, len, "pool %s holds data of files (object %s): files use it; remove "
						 "them (and let the purge finish) first", pool, names[k]);
			}
			for (size_t k = 0; k < n; k++)
				free(names[k]);
			free(names);
		}
		if (p)
			store_pool_close(p);
		p = NULL;
		if (r) {
			snprintf(err, len, "cannot list pool %s: %s", pool, strerror(-r));
			return r;
		}
		if (nobj)
			return -EBUSY;
		pthread_mutex_lock(&m->lock);
		text = pools_text_locked(m, id, 0, NULL);
		pthread_mutex_unlock(&m->lock);
	}
	if (!text) {
		if (p)
			store_pool_close(p);
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	r = pools_commit(m, text, err, len);
	if (r == 0) {
		pthread_mutex_lock(&m->lock);
		if (add) {
			struct mds_data_pool *v = realloc(m->data_pools, (m->ndata_pools + 1) * sizeof(*v));

			if (v) {
				m->data_pools = v;
				v[m->ndata_pools].id = id;
				v[m->ndata_pools].name = strdup(pool);
				v[m->ndata_pools].p = p;
				if (v[m->ndata_pools].name) {
					m->ndata_pools++;
					p = NULL;
				}
			}
		} else {
			for (i = 0; i < m->ndata_pools; i++)
				if (m->data_pools[i].id == id) {
					p = m->data_pools[i].p;
					free(m->data_pools[i].name);
					m->data_pools[i] = m->data_pools[--m->ndata_pools];
					break;
				}
		}
		pthread_mutex_unlock(&m->lock);
		dinfo(MDS, "fs %s %s: %s (id %" PRIu32 ")", add ? "add_data_pool" : "rm_data_pool", m->fs_name, pool,
		      id);
		*out = json_object_new_object();
		json_object_object_add(*out, "pool", json_object_new_string(pool));
		json_object_object_add(*out, "id", json_object_new_int64(id));
	}
	if (p)
		store_pool_close(p);
	free(text);
	return r;
}

void fsset_dump_pools(struct mds *m, struct json_object *arr)
{
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < m->ndata_pools; i++)
		json_object_array_add(arr, json_object_new_string(m->data_pools[i].name));
	pthread_mutex_unlock(&m->lock);
}
