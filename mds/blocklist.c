/*
 * blocklist.c - clients kept out after an eviction, and fenced from the
 * data store (Ceph's `osd blocklist`, which its MDS adds evicted clients to).
 *
 * An entry names a client instance: its uuid (struct mdsp_session
 * client_uuid, new for every client process) or a data-store address (what
 * store_instance_addr() of the client's store gave: its librados instance
 * on RADOS, "local.<hex>" on the local store).  While an entry lives, a
 * SESSION REQUEST_OPEN or RECONNECT with that uuid or store address is
 * refused with ESHUTDOWN and a reason that says how to lift it, and the
 * data store refuses the address' writes (store_blocklist_add(): the OSD
 * map on RADOS, a fence record in the local store), so writes the client
 * still has in flight fail too.  A fresh mount is a new instance and is
 * let in, as in Ceph; a client that must come back by itself does so with
 * client_reconnect_stale once the entry is gone.
 *
 * Entries are journaled (omap "mds_blocklist", entity -> record) so a
 * restart keeps them, and expire at a wall-clock time (mds_blocklist_expire
 * after an eviction, or what `blocklist add` says); the ticker drops expired
 * ones.  `blocklist add|rm|ls` on the admin socket, `loligo blocklist ...`.
 *
 * The in-memory list is protected by mds->lock; store fences are set and
 * lifted without it (they block on the monitors or on LMDB).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/perf.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/blocklist.h"
#include "mds/journal.h"
#include "mds/mdcache.h"

#define V_BLOCKLIST_REC 1

struct bl_entry {
	struct bl_entry *next;
	char *entity;                 /* uuid or data-store address */
	char *store_addr;             /* the address fenced with it (may be NULL) */
	char *client_name;            /* for the operator */
	char *reason;
	uint64_t sid;                 /* the session evicted (0: added by hand) */
	uint64_t added_ns, expire_ns; /* CLOCK_REALTIME; expire 0: never */
};

static struct bl_entry *entries;      /* protected by mds->lock */
static uint64_t nentries;
static struct perf_counter pc_added, pc_refused;

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void blocklist_uuid_str(const uint8_t *u, char *buf, size_t len)
{
	snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static bool uuid_is_zero(const uint8_t *u)
{
	int i;

	for (i = 0; i < 16; i++)
		if (u[i])
			return false;
	return true;
}

/* The store whose data the clients write: where fences go. */
static struct store *fence_store(struct mds *m)
{
	return m->data_st ? m->data_st : m->st;
}

/* An entity an operator may name: printable, no spaces, bounded. */
static bool entity_ok(const char *e)
{
	size_t n = e ? strlen(e) : 0, i;

	if (!n || n > MDSP_STORE_ADDR_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!isgraph((unsigned char)e[i]))
			return false;
	return true;
}

/* A uuid in its 8-4-4-4-12 form (what session ls shows)? */
static bool is_uuid(const char *e)
{
	size_t i;

	if (strlen(e) != 36)
		return false;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (e[i] != '-')
				return false;
		} else if (!isxdigit((unsigned char)e[i])) {
			return false;
		}
	}
	return true;
}

static bool expired(const struct bl_entry *e, uint64_t now)
{
	return e->expire_ns && now >= e->expire_ns;
}

static void entry_free(struct bl_entry *e)
{
	free(e->entity);
	free(e->store_addr);
	free(e->client_name);
	free(e->reason);
	free(e);
}

/* Caller holds mds->lock. */
static struct bl_entry **find_locked(struct mds *m, const char *entity)
{
	struct bl_entry **pp;

	lockdep_assert_held(&m->lock);
	for (pp = &entries; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->entity, entity))
			return pp;
	return NULL;
}

static void rec_encode(struct mdsp_buf *b, const struct bl_entry *e)
{
	size_t off = enc_begin(b, V_BLOCKLIST_REC, 1);

	enc_str(b, e->entity);
	enc_str(b, e->store_addr ? e->store_addr : "");
	enc_str(b, e->client_name ? e->client_name : "");
	enc_str(b, e->reason ? e->reason : "");
	enc_u64(b, e->sid);
	enc_u64(b, e->added_ns);
	enc_u64(b, e->expire_ns);
	enc_end(b, off);
}

static char *nonempty(char *s)
{
	if (s && !*s) {
		free(s);
		return NULL;
	}
	return s;
}

static int rec_decode(const void *p, size_t len, struct bl_entry **out)
{
	struct bl_entry *e = calloc(1, sizeof(*e));
	struct dec c, d;

	if (!e)
		return -ENOMEM;
	dec_init(&c, p, len);
	if (!dec_enter(&c, V_BLOCKLIST_REC, &d)) {
		free(e);
		return -EBADMSG;
	}
	e->entity = dec_str(&d, MDSP_STORE_ADDR_MAX);
	e->store_addr = nonempty(dec_str(&d, MDSP_STORE_ADDR_MAX));
	e->client_name = nonempty(dec_str(&d, MDSP_CLIENT_NAME_MAX));
	e->reason = nonempty(dec_str(&d, 4096));
	e->sid = dec_u64(&d);
	e->added_ns = dec_u64(&d);
	e->expire_ns = dec_u64(&d);
	if (d.bad || !e->entity || !entity_ok(e->entity)) {
		entry_free(e);
		return -EBADMSG;
	}
	*out = e;
	return 0;
}

/* Put @e in the list (replacing one for the same entity).  mds->lock held. */
static void install_locked(struct mds *m, struct bl_entry *e)
{
	struct bl_entry **pp = find_locked(m, e->entity);

	lockdep_assert_held(&m->lock);
	if (pp) {
		struct bl_entry *old = *pp;

		e->next = old->next;
		*pp = e;
		entry_free(old);
		return;
	}
	e->next = entries;
	entries = e;
	nentries++;
}

/* Caller holds mds->lock. */
static void journal_locked(struct mds *m, const struct bl_entry *e, bool rm)
{
	struct mdsp_buf rec;
	struct txn t;

	lockdep_assert_held(&m->lock);
	txn_init(&t);
	mdsp_buf_init(&rec);
	if (rm) {
		txn_edit(&t, EDIT_RM, OID_BLOCKLIST, e->entity, NULL, 0, NULL);
	} else {
		rec_encode(&rec, e);
		txn_edit(&t, EDIT_SET, OID_BLOCKLIST, e->entity, rec.data, rec.len, NULL);
	}
	journal_submit_locked(m, &t, NULL);
	mdsp_buf_free(&rec);
	txn_free(&t);
}

/* The store address an entry fences: its own, or the entity when it is one. */
static const char *fence_addr(const struct bl_entry *e)
{
	if (e->store_addr)
		return e->store_addr;
	return is_uuid(e->entity) ? NULL : e->entity;
}

int blocklist_add(struct mds *m, const char *entity, const char *store_addr, double expire_secs, const char *why,
		  const char *client_name, uint64_t sid, char *err, size_t errlen)
{
	struct bl_entry *e;
	char addr[MDSP_STORE_ADDR_MAX + 1] = "";
	int r;

	if (!entity_ok(entity) || (store_addr && *store_addr && !entity_ok(store_addr))) {
		if (err)
			snprintf(err, errlen, "'%s' is not a client: name a client uuid or a data-store address "
					      "as `session ls` shows them (uuid, store_addr)", entity ? entity : "");
		return -EINVAL;
	}
	if (expire_secs < 0 || expire_secs > 100.0 * 365 * 86400) {
		if (err)
			snprintf(err, errlen, "expire must be 0 (never) to 100 years, in seconds");
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->entity = strdup(entity);
	e->store_addr = store_addr && *store_addr ? strdup(store_addr) : NULL;
	e->client_name = client_name && *client_name ? strdup(client_name) : NULL;
	e->reason = why ? strdup(why) : NULL;
	e->sid = sid;
	e->added_ns = real_ns();
	e->expire_ns = expire_secs > 0 ? e->added_ns + (uint64_t)(expire_secs * 1e9) : 0;
	if (!e->entity) {
		entry_free(e);
		return -ENOMEM;
	}
	if (fence_addr(e))
		snprintf(addr, sizeof(addr), "%s", fence_addr(e));
	/* in the list (new sessions refused) before the store fence, so the
	 * client cannot slip a new session in between */
	pthread_mutex_lock(&m->lock);
	journal_locked(m, e, false);
	install_locked(m, e);
	pthread_mutex_unlock(&m->lock);
	perf_inc(&pc_added, 1);
	{
		char for_[48];

		if (expire_secs > 0)
			snprintf(for_, sizeof(for_), "for %.0f s", expire_secs);
		else
			snprintf(for_, sizeof(for_), "until removed");
		dinfo(MDS, "blocklisted %s%s%s (%s) %s: %s", entity, *addr ? ", data-store instance " : "", addr,
		      client_name && *client_name ? client_name : "no name", for_, why ? why : "by the operator");
	}
	if (!*addr)
		return 0;
	r = store_blocklist_add(fence_store(m), addr, expire_secs);
	if (r) {
		derr(MDS, "blocklist: the data store did not fence %s (%s): its writes in flight may still land",
		     addr, strerror(-r));
		if (err)
			snprintf(err, errlen, "blocklisted, but the data store did not fence %s: %s", addr, strerror(-r));
	}
	return r;
}

int blocklist_rm(struct mds *m, const char *entity, char *err, size_t errlen)
{
	struct bl_entry **pp, *e;
	char addr[MDSP_STORE_ADDR_MAX + 1] = "";
	int r = 0;

	pthread_mutex_lock(&m->lock);
	pp = entity ? find_locked(m, entity) : NULL;
	if (!pp) {
		pthread_mutex_unlock(&m->lock);
		if (err)
			snprintf(err, errlen, "'%s' is not on the blocklist (see `loligo blocklist ls`)",
				 entity ? entity : "");
		return -ENOENT;
	}
	e = *pp;
	*pp = e->next;
	nentries--;
	if (fence_addr(e))
		snprintf(addr, sizeof(addr), "%s", fence_addr(e));
	journal_locked(m, e, true);
	pthread_mutex_unlock(&m->lock);
	dinfo(MDS, "blocklist: %s removed: it may open a session and write again", e->entity);
	entry_free(e);
	if (*addr && (r = store_blocklist_rm(fence_store(m), addr)) && err)
		snprintf(err, errlen, "removed, but the data store kept the fence of %s: %s", addr, strerror(-r));
	return r;
}

int blocklist_check_locked(struct mds *m, const uint8_t *uuid, const char *store_addr, char *reason, size_t len)
{
	uint64_t now = real_ns();
	struct bl_entry *e;
	char u[40];

	(void)m;
	if (!entries)
		return 0;
	blocklist_uuid_str(uuid, u, sizeof(u));
	if (uuid_is_zero(uuid))
		*u = '\0';             /* a peer that sent none: only its store address can match */
	for (e = entries; e; e = e->next) {
		if (expired(e, now))
			continue;
		if ((!*u || strcmp(e->entity, u)) && !(store_addr && *store_addr && (!strcmp(e->entity, store_addr) ||
									  (e->store_addr &&
									   !strcmp(e->store_addr, store_addr)))))
			continue;
		perf_inc(&pc_refused, 1);
		if (e->expire_ns)
			snprintf(reason, len, "this client (%s) is blocklisted (%s) for %.0f s more: `loligo blocklist rm %s` "
					      "lifts it; a fresh mount is a new client", u, e->reason ? e->reason : "by the operator",
				 (double)(e->expire_ns - now) / 1e9, e->entity);
		else
			snprintf(reason, len, "this client (%s) is blocklisted (%s): `loligo blocklist rm %s` lifts it; "
					      "a fresh mount is a new client", u, e->reason ? e->reason : "by the operator",
				 e->entity);
		return -ESHUTDOWN;
	}
	return 0;
}

void blocklist_tick(struct mds *m)
{
	uint64_t now = real_ns();
	struct bl_entry **pp, *e;

	pthread_mutex_lock(&m->lock);
	for (pp = &entries; (e = *pp);) {
		if (!expired(e, now)) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		nentries--;
		journal_locked(m, e, true);
		dinfo(MDS, "blocklist: %s expired", e->entity);
		entry_free(e);     /* the store fence expires by itself */
	}
	pthread_mutex_unlock(&m->lock);
}

uint64_t blocklist_count_locked(struct mds *m)
{
	(void)m;
	return nentries;
}

struct json_object *blocklist_ls_json(struct mds *m)
{
	struct json_object *a = json_object_new_array();
	uint64_t now = real_ns();
	struct bl_entry *e;

	pthread_mutex_lock(&m->lock);
	for (e = entries; e; e = e->next) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "entity", json_object_new_string(e->entity));
		json_object_object_add(o, "store_addr", json_object_new_string(fence_addr(e) ? fence_addr(e) : ""));
		json_object_object_add(o, "client_name", json_object_new_string(e->client_name ? e->client_name : ""));
		json_object_object_add(o, "session", json_object_new_uint64(e->sid));
		json_object_object_add(o, "reason", json_object_new_string(e->reason ? e->reason : ""));
		json_object_object_add(o, "added", json_object_new_double((double)e->added_ns / 1e9));
		json_object_object_add(o, "expires", e->expire_ns ? json_object_new_double((double)e->expire_ns / 1e9)
								 : json_object_new_string("never"));
		json_object_object_add(o, "expires_in_s",
				       json_object_new_double(e->expire_ns ? (double)(e->expire_ns > now ?
										     e->expire_ns - now : 0) / 1e9
									   : -1.0));
		json_object_array_add(a, o);
	}
	pthread_mutex_unlock(&m->lock);
	return a;
}

int blocklist_replay_edit(struct mds *m, int op, const char *key, const void *val, uint32_t len)
{
	struct bl_entry **pp, *e;
	int r;

	(void)m;
	if (op == EDIT_RM) {
		pp = find_locked(m, key);
		if (pp) {
			e = *pp;
			*pp = e->next;
			nentries--;
			entry_free(e);
		}
		return 0;
	}
	if (op != EDIT_SET)
		return 0;
	r = rec_decode(val, len, &e);
	if (r == -EBADMSG) {
		derr(MDS, "blocklist: damaged entry %s in the journal skipped", key);
		return 0;
	}
	if (r)
		return r;
	install_locked(m, e);
	return 0;
}

int blocklist_load(struct mds *m)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	int r = 0;

	store_omap_iter_init(&it, m->meta, OID_BLOCKLIST, NULL, 256);
	while (!r && (kv = store_omap_iter_next(&it)) != NULL)
		r = blocklist_replay_edit(m, EDIT_SET, kv->key, kv->val, (uint32_t)kv->len);
	if (store_omap_iter_end(&it))
		r = it.err;
	if (nentries)
		dinfo(MDS, "blocklist: %" PRIu64 " client(s) kept out (loligo blocklist ls)", nentries);
	return r;
}

void blocklist_register_perf(struct mds *m)
{
	(void)m;
	perf_register_counter("mds_blocklist", "added", &pc_added);
	perf_register_counter("mds_blocklist", "sessions_refused", &pc_refused);
}

void blocklist_free(struct mds *m)
{
	struct bl_entry *e, *n;

	(void)m;
	perf_unregister_group("mds_blocklist");
	for (e = entries; e; e = n) {
		n = e->next;
		entry_free(e);
	}
	entries = NULL;
	nentries = 0;
}
