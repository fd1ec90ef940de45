/*
 * idmap.h - NFSv4 owner strings: uid/gid <-> "name@domain" (RFC 7530
 * 5.9, RFC 8881 5.9), as knfsd with nfsidmap and nfs-ganesha do.
 *
 * Out (GETATTR, READDIR): a caller whose flavour is below RPCSEC_GSS
 * (AUTH_SYS, AUTH_NONE) gets numeric strings ("1000") while
 * nfs4_disable_idmapping is true, knfsd's default; otherwise
 * "name@domain" from NSS (getpwuid_r/getgrgid_r), or the number when the
 * id has no name.
 *
 * In (SETATTR, CREATE and OPEN attributes): a numeric string is always
 * accepted ("1000", or "1000@<our domain>"), "nobody" is the anonymous id,
 * and "name" or "name@<our domain>" is looked up with getpwnam_r/
 * getgrnam_r.  A name NSS does not know, or of another domain, is
 * "unknown": a strict caller (every setter: NFS4ERR_BADOWNER) gets
 * -ENOENT, anybody else the anonymous id; either way one log line, at
 * most one a second (the rest are counted in it).
 *
 * NSS may be slow (LDAP, sssd), so results, names that do not exist
 * included, are kept in a small cache: at most cache_max entries, each for
 * ttl_ns, the least recently used dropped first.  NSS is only ever called
 * with no lock held (lockdep_might_wait() checks it); two threads missing
 * on the same key may both ask NSS, and the later answer wins.  NSS
 * failures other than "no such entry" (a directory server down) are not
 * cached: the id goes out as a number, a name in is -EAGAIN
 * (NFS4ERR_DELAY: the client asks again).
 *
 * Locking: m->lock protects the cache (table, LRU list, count), and is
 * held for bookkeeping only.  It is a leaf: nothing else is taken under it.
 */
#ifndef LOLIGO_NFS_GW_NFS4_IDMAP_H
#define LOLIGO_NFS_GW_NFS4_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/perf.h"

#define IDMAP_NAME_MAX 256              /* longer NSS names are treated as absent */
#define IDMAP_DOMAIN_MAX 255
#define IDMAP_OWNER_MAX (IDMAP_NAME_MAX + 1 + IDMAP_DOMAIN_MAX + 1)

enum idmap_kind { IDMAP_USER = 0, IDMAP_GROUP = 1 };

/*
 * Where names come from: NSS unless a test says otherwise.  Both return 0,
 * -ENOENT when there is no such entry, another negative errno when the
 * lookup failed (not cached).  Called with no lock held.
 */
struct idmap_backend {
	/* the name of @id into @buf (@len bytes, NUL-terminated); -ERANGE: longer */
	int (*id_to_name)(void *arg, enum idmap_kind k, uint32_t id, char *buf, size_t len);
	int (*name_to_id)(void *arg, enum idmap_kind k, const char *name, uint32_t *id);
	void *arg;
};

/* Counters for `perf dump` (group nfs4: idmap_*). */
struct idmap_stats {
	struct perf_counter lookups;     /* backend (NSS) calls */
	struct perf_counter hits;        /* answered from the cache */
	struct perf_counter unknown;     /* names in that were unknown or of another domain */
};

struct idmap_params {
	const char *domain;              /* NULL or "": idmap_host_domain() */
	bool numeric_sys;                /* nfs4_disable_idmapping */
	uint32_t anon_uid, anon_gid;
	uint64_t ttl_ns;                 /* 0: no cache */
	unsigned int cache_max;          /* 0: no cache */
	const struct idmap_backend *backend; /* NULL: NSS; copied */
	uint64_t (*now)(void);           /* NULL: now_mono_ns (tests move the clock) */
	struct idmap_stats *stats;       /* NULL: the map's own (not registered) */
};

struct idmap;

/**
 * idmap_params_from_config - the nfs4_idmap_* and nfs4_disable_idmapping
 * options; p->domain points into a buffer of the calling thread, valid
 * until its next call (idmap_create() copies it).
 */
void idmap_params_from_config(struct idmap_params *p);

/**
 * idmap_create - a map with @p (its domain copied; resolved now when not
 * given, which may ask DNS: call it at start-up, with no lock held).
 * Return: 0 and *@out, or -ENOMEM / -EINVAL (a domain longer than 255).
 */
int idmap_create(const struct idmap_params *p, struct idmap **out);
/** idmap_destroy - free @m (NULL: nothing); no other thread may use it. */
void idmap_destroy(struct idmap *m);

/** idmap_domain - the domain @m maps in (never NULL or empty). */
const char *idmap_domain(const struct idmap *m);

/**
 * idmap_numeric_for - does a caller of RPC @flavor get numeric strings?
 * True for AUTH_SYS and AUTH_NONE while nfs4_disable_idmapping is set.
 */
bool idmap_numeric_for(const struct idmap *m, uint32_t flavor);

/**
 * idmap_id_to_owner - the owner string of @id: "name@domain", or the
 * number when @numeric, when @id has no name or when NSS fails.  @m may
 * be NULL (numeric).  No lock may be held (NSS on a cache miss).
 * Return: the string's length (< @len, NUL-terminated; @len >= 16 always
 * fits the number).
 */
size_t idmap_id_to_owner(struct idmap *m, enum idmap_kind k, uint32_t id, bool numeric, char *buf, size_t len);

/**
 * idmap_owner_to_id - the id of owner string @s (NUL-terminated, as
 * decoded: non-empty).  @m may be NULL: numbers and "nobody" only, with
 * 65534 as the anonymous id.  No lock may be held.
 * Return: 0 and *@id; for an unknown name or another domain, -ENOENT when
 * @strict, else 0 with the anonymous id; -EAGAIN when NSS failed;
 * -EINVAL for an empty string.
 */
int idmap_owner_to_id(struct idmap *m, enum idmap_kind k, const char *s, bool strict, uint32_t *id);

/**
 * idmap_host_domain - the default domain as nfsidmap finds it: what
 * follows the first dot of the host's name, or of its canonical name
 * (getaddrinfo AI_CANONNAME, which may ask DNS); "localdomain" when
 * neither has one.  Return: @buf.
 */
const char *idmap_host_domain(char *buf, size_t len);

#endif
