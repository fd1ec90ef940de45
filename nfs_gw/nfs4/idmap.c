/*
 * idmap.c - NFSv4 owner strings through NSS, with a small cache (idmap.h).
 *
 * The cache is one hash table keyed by (kind, direction, id or name) with
 * SipHash under a key drawn at creation, since names come from peers.
 * Entries also sit on an LRU list: a hit moves its entry to the front, and
 * an insert past cache_max drops the back.  An expired entry is a miss
 * and is replaced by the fresh answer.  Lookups copy what they need out
 * under m->lock and call NSS after dropping it: the GETATTR of every
 * other client may be waiting for that lock, NSS for an LDAP server.
 */
#include <errno.h>
#include <netdb.h>
#include <pwd.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/siphash.h"
#include "common/time.h"
#include "nfs_gw/nfs4/idmap.h"
#include "nfs_gw/rpc/rpc.h"

#define ANON_DEFAULT 65534u
#define NSS_BUF_MAX (1u << 20)          /* a group with many members needs a big buffer */
#define LOG_INTERVAL_NS 1000000000ull   /* at most one "unknown owner" line a second */

struct link {
	struct link *prev, *next;
};

struct ent {
	struct link lru;                 /* first: LRU list, most recent first */
	struct ent *hnext;               /* hash chain */
	uint64_t hash;
	uint64_t expires;
	uint8_t kind;                    /* enum idmap_kind */
	bool by_name;                    /* key: name (else id) */
	bool found;                      /* NSS knew it (else a negative entry) */
	uint32_t id;                     /* key, or the answer */
	char name[];                     /* key, or the answer ("" when !found) */
};

struct idmap {
	char domain[IDMAP_DOMAIN_MAX + 1];
	bool numeric_sys;
	uint32_t anon[2];                /* by enum idmap_kind */
	uint64_t ttl_ns;
	unsigned int cache_max;
	struct idmap_backend be;
	uint64_t (*now)(void);
	struct idmap_stats own_stats, *stats;
	uint8_t key[16];

	pthread_mutex_t lock;            /* a leaf; protects what follows */
	struct ent **tab;                /* protected by lock */
	size_t nbuckets;                 /* power of two; fixed */
	struct link lru;                 /* protected by lock: list head */
	unsigned int count;              /* protected by lock */

	_Atomic uint64_t last_log;       /* the last "unknown owner" line (ns) */
	_Atomic uint64_t suppressed;     /* lines not written since */
};

/* ---- NSS ------------------------------------------------------------------------- */

/* Not found, as getpw*_r(3) documents it (0 and no result, or these). */
static bool nss_absent(int r)
{
	return r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM;
}

static int nss_id_to_name(void *arg, enum idmap_kind k, uint32_t id, char *buf, size_t len)
{
	size_t bsz = 1024;
	char *b = NULL;
	const char *name = NULL;
	int r;

	(void)arg;
	for (;;) {
		struct passwd pw, *pres = NULL;
		struct group gr, *gres = NULL;
		char *nb = realloc(b, bsz);

		if (!nb) {
			r = -ENOMEM;
			goto out;
		}
		b = nb;
		if (k == IDMAP_USER) {
			r = getpwuid_r((uid_t)id, &pw, b, bsz, &pres);
			name = pres ? pres->pw_name : NULL;
		} else {
			r = getgrgid_r((gid_t)id, &gr, b, bsz, &gres);
			name = gres ? gres->gr_name : NULL;
		}
		if (r == ERANGE && bsz < NSS_BUF_MAX) {
			bsz *= 2;
			continue;
		}
		break;
	}
	if (name) {
		r = strlen(name) < len ? 0 : -ERANGE;
		if (!r)
			strcpy(buf, name);
	} else {
		r = nss_absent(r) ? -ENOENT : -(r ? r : EIO);
	}
out:
	free(b);
	return r;
}

static int nss_name_to_id(void *arg, enum idmap_kind k, const char *name, uint32_t *id)
{
	size_t bsz = 1024;
	char *b = NULL;
	bool found = false;
	int r;

	(void)arg;
	for (;;) {
		struct passwd pw, *pres = NULL;
		struct group gr, *gres = NULL;
		char *nb = realloc(b, bsz);

		if (!nb) {
			r = -ENOMEM;
			goto out;
		}
		b = nb;
		if (k == IDMAP_USER) {
			r = getpwnam_r(name, &pw, b, bsz, &pres);
			if (pres) {
				*id = (uint32_t)pres->pw_uid;
				found = true;
			}
		} else {
			r = getgrnam_r(name, &gr, b, bsz, &gres);
			if (gres) {
				*id = (uint32_t)gres->gr_gid;
				found = true;
			}
		}
		if (r == ERANGE && bsz < NSS_BUF_MAX) {
			bsz *= 2;
			continue;
		}
		break;
	}
	if (found)
		r = 0;
	else
		r = nss_absent(r) ? -ENOENT : -(r ? r : EIO);
out:
	free(b);
	return r;
}

static const struct idmap_backend nss_backend = { nss_id_to_name, nss_name_to_id, NULL };

/* ---- the domain ---------------------------------------------------------------------- */

const char *idmap_host_domain(char *buf, size_t len)
{
	char host[256];
	const char *dot = NULL;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_flags = AI_CANONNAME }, *ai = NULL;

	snprintf(buf, len, "localdomain");
	if (gethostname(host, sizeof(host)) < 0)
		return buf;
	host[sizeof(host) - 1] = 0;
	/* nfsidmap: the part after the first dot of the canonical name */
	if (!getaddrinfo(host, NULL, &hints, &ai) && ai && ai->ai_canonname) {
		dot = strchr(ai->ai_canonname, '.');
		if (dot && dot[1] && strlen(dot + 1) <= IDMAP_DOMAIN_MAX)
			snprintf(buf, len, "%s", dot + 1);
		else
			dot = NULL;
	}
	if (ai)
		freeaddrinfo(ai);
	if (!dot) {
		dot = strchr(host, '.');
		if (dot && dot[1] && strlen(dot + 1) <= IDMAP_DOMAIN_MAX)
			snprintf(buf, len, "%s", dot + 1);
	}
	return buf;
}

/* ---- options --------------------------------------------------------------------- */

void idmap_params_from_config(struct idmap_params *p)
{
	static _Thread_local char dom[IDMAP_DOMAIN_MAX + 2];

	memset(p, 0, sizeof(*p));
	cfg_str(CFG_nfs4_idmap_domain, dom, sizeof(dom));
	p->domain = dom;
	p->numeric_sys = cfg_bool(CFG_nfs4_disable_idmapping);
	p->anon_uid = cfg_uint(CFG_nfs4_idmap_anonuid) < UINT32_MAX ? (uint32_t)cfg_uint(CFG_nfs4_idmap_anonuid) : ANON_DEFAULT;
	p->anon_gid = cfg_uint(CFG_nfs4_idmap_anongid) < UINT32_MAX ? (uint32_t)cfg_uint(CFG_nfs4_idmap_anongid) : ANON_DEFAULT;
	p->ttl_ns = (uint64_t)(cfg_double(CFG_nfs4_idmap_cache_ttl) * 1e9);
	p->cache_max = (unsigned int)cfg_uint(CFG_nfs4_idmap_cache_size);
}

/* ---- the cache -------------------------------------------------------------------- */

static uint64_t key_hash(const struct idmap *m, enum idmap_kind k, bool by_name, uint32_t id, const char *name)
{
	uint8_t buf[2 + IDMAP_NAME_MAX + 4];
	size_t n = 2;

	buf[0] = (uint8_t)k;
	buf[1] = (uint8_t)by_name;
	if (by_name) {
		size_t l = strlen(name);

		memcpy(buf + 2, name, l);
		n += l;
	} else {
		memcpy(buf + 2, &id, 4);
		n += 4;
	}
	return siphash24(m->key, buf, n);
}

static struct ent *lru_ent(struct link *l)
{
	return (struct ent *)l;          /* the link is an entry's first member */
}

static void lru_unlink(struct ent *e)
{
	e->lru.prev->next = e->lru.next;
	e->lru.next->prev = e->lru.prev;
}

static void lru_push(struct idmap *m, struct ent *e)
{
	e->lru.next = m->lru.next;
	e->lru.prev = &m->lru;
	m->lru.next->prev = &e->lru;
	m->lru.next = &e->lru;
}

static struct ent **find_slot_locked(struct idmap *m, uint64_t h, enum idmap_kind k, bool by_name, uint32_t id,
				     const char *name)
{
	struct ent **pp;

	lockdep_assert_held(&m->lock);
	for (pp = &m->tab[h & (m->nbuckets - 1)]; *pp; pp = &(*pp)->hnext) {
		struct ent *e = *pp;

		if (e->hash == h && e->kind == k && e->by_name == by_name &&
		    (by_name ? !strcmp(e->name, name) : e->id == id))
			return pp;
	}
	return pp;
}

static void remove_locked(struct idmap *m, struct ent **pp)
{
	struct ent *e = *pp;

	lockdep_assert_held(&m->lock);
	*pp = e->hnext;
	lru_unlink(e);
	m->count--;
	free(e);
}

/*
 * The cached answer for a key: 1 (hit; *found, and *id or @name filled),
 * 0 (miss or expired).  For an id key, @name gets the name (IDMAP_NAME_MAX + 1).
 */
static int cache_get(struct idmap *m, enum idmap_kind k, bool by_name, uint32_t *id, char *name, bool *found)
{
	uint64_t h, now;
	struct ent **pp;
	int hit = 0;

	if (!m->tab)
		return 0;
	h = key_hash(m, k, by_name, by_name ? 0 : *id, name);   /* *id is only an output for a name */
	now = m->now();
	pthread_mutex_lock(&m->lock);
	pp = find_slot_locked(m, h, k, by_name, by_name ? 0 : *id, name);
	if (*pp && (*pp)->expires <= now) {
		remove_locked(m, pp);
	} else if (*pp) {
		struct ent *e = *pp;

		*found = e->found;
		if (by_name)
			*id = e->id;
		else
			strcpy(name, e->name);
		lru_unlink(e);
		lru_push(m, e);
		hit = 1;
	}
	pthread_mutex_unlock(&m->lock);
	if (hit)
		perf_inc(&m->stats->hits, 1);
	return hit;
}

/* Remember an answer (@name: the key or the found name; "" for a negative id entry). */
static void cache_put(struct idmap *m, enum idmap_kind k, bool by_name, uint32_t id, const char *name, bool found)
{
	size_t nl = strlen(name);
	struct ent *e, **pp;

	if (!m->tab)
		return;
	e = malloc(sizeof(*e) + nl + 1);
	if (!e)
		return;
	e->kind = (uint8_t)k;
	e->by_name = by_name;
	e->found = found;
	e->id = id;
	memcpy(e->name, name, nl + 1);
	e->hash = key_hash(m, k, by_name, id, name);
	e->expires = m->now() + m->ttl_ns;
	pthread_mutex_lock(&m->lock);
	pp = find_slot_locked(m, e->hash, k, by_name, id, name);
	if (*pp)
		remove_locked(m, pp);        /* another thread's answer for the same key: the newer wins */
	while (m->count >= m->cache_max && m->lru.prev != &m->lru) {
		struct ent *old = lru_ent(m->lru.prev);

		remove_locked(m, find_slot_locked(m, old->hash, old->kind, old->by_name, old->id, old->name));
	}
	pp = find_slot_locked(m, e->hash, k, by_name, id, name);
	e->hnext = NULL;
	*pp = e;
	lru_push(m, e);
	m->count++;
	pthread_mutex_unlock(&m->lock);
}

/* ---- create / destroy --------------------------------------------------------------- */

static uint64_t mono(void)
{
	return now_mono_ns();
}

int idmap_create(const struct idmap_params *p, struct idmap **out)
{
	struct idmap *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	if (p->domain && *p->domain) {
		if (strlen(p->domain) > IDMAP_DOMAIN_MAX) {
			free(m);
			return -EINVAL;
		}
		snprintf(m->domain, sizeof(m->domain), "%s", p->domain);
	} else {
		idmap_host_domain(m->domain, sizeof(m->domain));
	}
	m->numeric_sys = p->numeric_sys;
	m->anon[IDMAP_USER] = p->anon_uid;
	m->anon[IDMAP_GROUP] = p->anon_gid;
	m->ttl_ns = p->ttl_ns;
	m->cache_max = p->cache_max;
	m->be = p->backend ? *p->backend : nss_backend;
	m->now = p->now ? p->now : mono;
	m->stats = p->stats ? p->stats : &m->own_stats;
	m->lru.next = m->lru.prev = &m->lru;
	if (getrandom(m->key, sizeof(m->key), 0) != (ssize_t)sizeof(m->key)) {
		uint64_t t = now_real_ns() ^ (uint64_t)(uintptr_t)m;

		memcpy(m->key, &t, 8);
	}
	if (m->ttl_ns && m->cache_max) {
		m->nbuckets = 16;
		while (m->nbuckets < m->cache_max && m->nbuckets < (1u << 20))
			m->nbuckets <<= 1;
		m->tab = calloc(m->nbuckets, sizeof(*m->tab));
		if (!m->tab) {
			free(m);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

void idmap_destroy(struct idmap *m)
{
	if (!m)
		return;
	while (m->lru.next != &m->lru) {
		struct ent *e = lru_ent(m->lru.next);

		lru_unlink(e);
		free(e);
	}
	free(m->tab);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

const char *idmap_domain(const struct idmap *m)
{
	return m->domain;
}

bool idmap_numeric_for(const struct idmap *m, uint32_t flavor)
{
	return m->numeric_sys && flavor < RPCSEC_GSS;
}

/* ---- bounded logging ------------------------------------------------------------------ */

/*
 * May a line about owners be written now?  At most one a second (by the
 * map's clock), whatever the peers send; *@more: how many were not since.
 */
static bool log_slot(struct idmap *m, uint64_t *more)
{
	uint64_t now = m->now(), last = atomic_load(&m->last_log);

	if ((last && now - last < LOG_INTERVAL_NS) ||
	    !atomic_compare_exchange_strong(&m->last_log, &last, now ? now : 1)) {
		atomic_fetch_add(&m->suppressed, 1);
		return false;
	}
	*more = atomic_exchange(&m->suppressed, 0);
	return true;
}

static void log_unknown(struct idmap *m, enum idmap_kind k, const char *s, const char *why, bool strict)
{
	uint64_t more;

	perf_inc(&m->stats->unknown, 1);
	if (!log_slot(m, &more))
		return;
	if (strict)
		dinfo(NFS, "nfs4 idmap: %s '%.300s' %s (domain %s): NFS4ERR_BADOWNER (%llu more not logged)",
		      k == IDMAP_USER ? "owner" : "owner_group", s, why, m->domain, (unsigned long long)more);
	else
		dinfo(NFS, "nfs4 idmap: %s '%.300s' %s (domain %s): mapped to %u (%llu more not logged)",
		      k == IDMAP_USER ? "owner" : "owner_group", s, why, m->domain, m->anon[k],
		      (unsigned long long)more);
}

/* ---- id -> owner ---------------------------------------------------------------------- */

size_t idmap_id_to_owner(struct idmap *m, enum idmap_kind k, uint32_t id, bool numeric, char *buf, size_t len)
{
	char name[IDMAP_NAME_MAX + 1];
	bool found = false;
	uint64_t more;
	int n, r;

	if (!m || numeric)
		goto number;
	name[0] = 0;
	if (!cache_get(m, k, false, &id, name, &found)) {
		lockdep_might_wait("NSS (an id's name)");
		perf_inc(&m->stats->lookups, 1);
		r = m->be.id_to_name(m->be.arg, k, id, name, sizeof(name));
		found = r == 0 && name[0];
		if (!r || r == -ENOENT || r == -ERANGE)
			cache_put(m, k, false, id, found ? name : "", found);
		else if (log_slot(m, &more))
			dinfo(NFS, "nfs4 idmap: %s %u: NSS: %s; sent as a number (%llu more not logged)",
			      k == IDMAP_USER ? "uid" : "gid", id, strerror(-r), (unsigned long long)more);
	}
	if (found) {
		n = snprintf(buf, len, "%s@%s", name, m->domain);
		if (n > 0 && (size_t)n < len)
			return (size_t)n;
	}
number:
	n = snprintf(buf, len, "%u", id);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

/* ---- owner -> id ---------------------------------------------------------------------- */

/* "0", or 1-10 digits without a leading zero below 2^32 - 1 (knfsd's numeric_name_to_id) */
static bool parse_number(const char *s, size_t n, uint32_t *id)
{
	uint64_t v = 0;

	if (n == 0 || n > 10 || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= UINT32_MAX)             /* (uid_t)-1 is "no change", never an owner */
		return false;
	*id = (uint32_t)v;
	return true;
}

int idmap_owner_to_id(struct idmap *m, enum idmap_kind k, const char *s, bool strict, uint32_t *id)
{
	const char *at = strrchr(s, '@');
	size_t ulen = at ? (size_t)(at - s) : strlen(s);
	uint32_t anon = m ? m->anon[k] : ANON_DEFAULT;
	char name[IDMAP_NAME_MAX + 1];
	bool found = false, ours;
	const char *why;
	int r;

	if (!*s)
		return -EINVAL;
	/* no domain, or ours (DNS names: case does not matter) */
	ours = !at || (m ? !strcasecmp(at + 1, m->domain) : true);
	if (ours && parse_number(s, ulen, id))
		return 0;
	if (ours && ulen == 6 && !memcmp(s, "nobody", 6)) {
		*id = anon;
		return 0;
	}
	if (!m) {
		why = "is not a number";
		goto unknown;
	}
	if (!ours) {
		why = "is of another domain";
		goto unknown;
	}
	if (ulen == 0 || ulen > IDMAP_NAME_MAX) {
		why = "is no name";
		goto unknown;
	}
	memcpy(name, s, ulen);
	name[ulen] = 0;
	if (!cache_get(m, k, true, id, name, &found)) {
		lockdep_might_wait("NSS (a name's id)");
		perf_inc(&m->stats->lookups, 1);
		r = m->be.name_to_id(m->be.arg, k, name, id);
		if (r && r != -ENOENT) {
			uint64_t more;

			if (log_slot(m, &more))
				dinfo(NFS, "nfs4 idmap: %s '%.300s': NSS: %s: NFS4ERR_DELAY (%llu more not logged)",
				      k == IDMAP_USER ? "owner" : "owner_group", s, strerror(-r),
				      (unsigned long long)more);
			return -EAGAIN;
		}
		found = !r;
		cache_put(m, k, true, found ? *id : 0, name, found);
	}
	if (found)
		return 0;
	why = "is unknown";
unknown:
	if (m)
		log_unknown(m, k, s, why, strict);
	if (strict)
		return -ENOENT;
	*id = anon;
	return 0;
}
