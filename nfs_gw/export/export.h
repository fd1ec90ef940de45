/*
 * export.h - the gateway's exports, shared by NFSv4 (with its pseudo
 * filesystem) and NFSv3/MOUNT: parsed from the [nfs] option nfs_exports,
 * checked before anything is served, and replaced as a whole on reload.
 *
 * nfs_exports lists the exports, separated by ';', each a comma-separated
 * list of settings (the defaults are knfsd's: read-only, root squashed,
 * privileged ports only):
 *
 *   id=1,path=/projects,pseudo=/proj,clients=127.0.0.1|10.0.0.0/8,rw,no_root_squash,insecure
 *
 *   id=N            required, 1-65535, unique: file handles carry it, so it
 *                   must stay the same across restarts and reloads
 *   path=P          required: the directory inside loligo
 *   pseudo=P        where NFSv4 clients see it (default: the path)
 *   clients=A|B     addresses or CIDR prefixes allowed ('*' = all, the default)
 *   ro | rw                          (default ro)
 *   root_squash | no_root_squash     uid 0 becomes anonuid/anongid (default root_squash)
 *   all_squash | no_all_squash       every uid does (default no_all_squash)
 *   anonuid=N, anongid=N             (default 65534)
 *   secure | insecure                refuse or accept source ports >= 1024 (default secure)
 *   sec=F:F...      the flavours a client may use, most preferred first
 *                   (default sys): sys (AUTH_SYS; AUTH_NONE callers are the
 *                   anonymous user), krb5, krb5i, krb5p (RPCSEC_GSS with
 *                   Kerberos v5: authentication, integrity, privacy; the
 *                   gateway then needs its keytab, nfs_gss_keytab).  A call
 *                   in another flavour is refused (NFSv4 NFS4ERR_WRONGSEC,
 *                   NFSv3 AUTH_TOOWEAK); MOUNT and SECINFO list them in order.
 *
 * Fail closed: an unknown setting, a bad value, a setting given twice,
 * conflicting flags, a duplicate id or pseudo path, no export at all, and
 * (nfs_exports_check_paths) a path that is not a directory in loligo are
 * errors naming the export and the field; the caller then serves nothing.
 * Nothing ever falls back to exporting "/".
 *
 * When no export sits at pseudo path "/", NFSv4 clients mounting "/" see a
 * read-only pseudo root with a directory for every pseudo path component.
 *
 * Lifetime: a parsed table (struct nfs_exports) never changes except for
 * the export roots it resolves and caches (under its lock).  It is
 * refcounted: a request takes a reference on the current table of the
 * gateway's struct nfs_export_set for as long as it uses it, and a reload
 * swaps in a new table, so a request sees one table from start to end and
 * the old one goes with its last request.
 */
#ifndef LOLIGO_NFS_GW_EXPORT_EXPORT_H
#define LOLIGO_NFS_GW_EXPORT_EXPORT_H

#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct lclient;
struct lc_cred;
struct rpc_cred;
struct json_object;

#define NFS_EXPORTS_MAX 64
#define NFS_EXPORT_RULES_MAX 16
#define NFS_PSEUDO_MAX 256
#define NFS_PSEUDO_ROOT 1u
#define NFS_EXPORT_SEC_MAX 4

struct nfs_client_rule {
	int family;                      /* 0: any address ('*') */
	uint8_t addr[16];
	unsigned int prefix;
};

struct nfs_export {
	uint16_t id;                     /* id=: stable, in file handles */
	char path[PATH_MAX];
	char pseudo[PATH_MAX];
	bool ro, root_squash, all_squash, insecure;
	uint32_t anon_uid, anon_gid;
	unsigned int nsec;
	uint32_t sec[NFS_EXPORT_SEC_MAX];  /* RPC_AUTH_SYS or RPC_FLAVOR_KRB5* (gss.h), in preference order */
	unsigned int nrules;
	struct nfs_client_rule rules[NFS_EXPORT_RULES_MAX];
	uint32_t pnode;                  /* pseudo node it is mounted on (0: it is the root) */
	/* resolved once; protected by nfs_exports.lock */
	bool resolved;
	uint64_t root_ino, root_gen;
};

struct nfs_pnode {
	uint32_t id;                     /* 1 = root */
	uint32_t parent;
	char name[256];
	const struct nfs_export *exp;    /* export mounted here, or NULL */
};

/*
 * One cached subtree-check verdict (subtree.c): inode @ino lies (@inside)
 * or does not lie below export @export_id's root, as found while the
 * client library's lc_ns_epoch() read @epoch; used until @until (mono ns)
 * and while the epoch still reads @epoch.
 */
struct nfs_subtree_slot {
	uint64_t ino;                    /* 0: empty */
	uint64_t epoch;
	uint64_t until;
	uint16_t export_id;
	bool inside;
	/* a name it was found by in the export (nfs_export_note_inside), kept
	 * across verdicts: a hard-linked inode has no parent the MDS can name,
	 * so it is proved again through this link ("" : none, or too long) */
	uint64_t link_dir;
	char link_name[48];
};

#define NFS_SUBTREE_SLOTS 8192       /* direct-mapped: a collision replaces */

struct nfs_exports {
	_Atomic int refs;
	unsigned int n;
	struct nfs_export *e;            /* n of them, in the order given */
	const struct nfs_export *root;   /* export at pseudo "/", or NULL: pseudo root */
	unsigned int npnodes;
	struct nfs_pnode *pn;            /* pn[i].id == i + 1; NFS_PSEUDO_MAX of room */
	pthread_mutex_t lock;            /* the e[].resolved caches, stc */
	struct nfs_subtree_slot *stc;    /* NFS_SUBTREE_SLOTS, made at first use; protected by lock */
};

/**
 * nfs_exports_parse - parse and check an nfs_exports value.
 * @out: a new table with one reference.
 * Return: 0, -EINVAL with one line in @err naming the export (position,
 * id and path as far as known) and the field, or -ENOMEM.
 */
int nfs_exports_parse(const char *spec, struct nfs_exports **out, char *err, size_t errlen);

/** nfs_exports_get - a new reference on @x. */
static inline struct nfs_exports *nfs_exports_get(struct nfs_exports *x)
{
	if (x)
		atomic_fetch_add_explicit(&x->refs, 1, memory_order_relaxed);
	return x;
}

/** nfs_exports_put - drop a reference; the last one frees.  NULL is fine. */
void nfs_exports_put(struct nfs_exports *x);

const struct nfs_export *nfs_export_by_id(const struct nfs_exports *x, uint16_t id);

/**
 * nfs_export_by_path - the export whose path (or else pseudo path) is
 * exactly @path after normalising ("/a//b/" is "/a/b"), or NULL (MOUNT's
 * MNT: a path that is not an export is refused, never a subdirectory).
 */
const struct nfs_export *nfs_export_by_path(const struct nfs_exports *x, const char *path);

/**
 * nfs_export_sec_ok - @rc's flavour (krb5 pseudo-flavour for RPCSEC_GSS;
 * AUTH_NONE counts as sys) is one of @e's sec= list.
 */
bool nfs_export_sec_ok(const struct nfs_export *e, const struct rpc_cred *rc);

/** nfs_exports_want_gss - some export of @x lists a krb5 flavour. */
bool nfs_exports_want_gss(const struct nfs_exports *x);

/** nfs_export_allows - @peer matches one of @e's client rules. */
bool nfs_export_allows(const struct nfs_export *e, const struct sockaddr_storage *peer);

/**
 * nfs_export_root - resolve @e's root directory (once) through @lc.
 * Return: 0 and the root's ino/generation, or -errno.
 */
int nfs_export_root(struct nfs_exports *x, const struct nfs_export *e, struct lclient *lc, uint64_t *ino,
		    uint64_t *gen);

/**
 * nfs_exports_check_paths - resolve every export's root now: each must be
 * an existing directory.  Return: 0, or -errno with a line in @err naming
 * the export and its path.
 */
int nfs_exports_check_paths(struct nfs_exports *x, struct lclient *lc, char *err, size_t errlen);

struct lc_inode;

/**
 * nfs_export_contains - the subtree check (knfsd's subtree_check): does
 * inode @in (number @ino, a reference the caller holds) lie below @e's root?
 * Climbs primary parents (lc_lookup_parent, one MDS LOOKUPPARENT per level)
 * up to @e's root (inside) or the filesystem's (outside), and caches the
 * verdict of @in and of every directory passed in @x (subtree.c: valid
 * while lc_ns_epoch() has not moved, at most nfs_subtree_check_ttl).  An
 * export of "/" and nfs_subtree_check=false: always inside, no MDS call.
 * An inode with no primary parent (hard-linked: the MDS keeps no parent
 * for it) is inside if the link a LOOKUP in the export found it by
 * (nfs_export_note_inside) still names it and its directory is inside,
 * else outside.
 * Locking: takes @x->lock for bookkeeping only, never across the walk.
 * Return: 0 inside, -ESTALE outside, another -errno if the walk failed.
 */
int nfs_export_contains(struct nfs_exports *x, const struct nfs_export *e, struct lclient *lc,
			struct lc_inode *in, uint64_t ino);

/**
 * nfs_export_note_inside - inode @ino was just found as @name in directory
 * @dir, which passed nfs_export_contains() for @e (LOOKUP): it is inside,
 * through that link, as of @epoch (lc_ns_epoch() read BEFORE the lookup,
 * so a rename that raced it voids the verdict).  The link is remembered:
 * once the verdict is void, an inode the MDS names no parent for (hard
 * links) is checked again through it (the name still names it, and @dir
 * is still inside).
 */
void nfs_export_note_inside(struct nfs_exports *x, const struct nfs_export *e, uint64_t ino, uint64_t epoch,
			    uint64_t dir, const char *name);

/**
 * nfs_export_cred - the caller's identity for @e: @rc's uid, gid and
 * groups, with uid 0 (root_squash) or everyone (all_squash) mapped to
 * anonuid/anongid and no groups.  @e NULL: no squashing.
 */
void nfs_export_cred(const struct nfs_export *e, const struct rpc_cred *rc, struct lc_cred *cr);

const struct nfs_pnode *nfs_pnode_get(const struct nfs_exports *x, uint32_t id);
/** nfs_pnode_child - child @name of pseudo node @id, or NULL. */
const struct nfs_pnode *nfs_pnode_child(const struct nfs_exports *x, uint32_t id, const char *name);

/** nfs_export_rule_str - one client rule as written ("*", "10.0.0.0/8", "127.0.0.1"). */
void nfs_export_rule_str(const struct nfs_client_rule *r, char *buf, size_t len);

/** nfs_export_options - @e's settings as a canonical option string ("rw,root_squash,..."). */
void nfs_export_options(const struct nfs_export *e, char *buf, size_t len);

/** nfs_exports_json - the `exports` listing: [{id, path, pseudo, clients, options}]. */
struct json_object *nfs_exports_json(const struct nfs_exports *x);

/* ---- the gateway's current table ------------------------------------------ */

/*
 * struct nfs_export_set - the table in force.  Lock order: set->lock is a
 * leaf (held for a pointer swap or a reference only).
 */
struct nfs_export_set {
	pthread_mutex_t lock;
	struct nfs_exports *cur;         /* protected by lock; one reference */
	uint64_t generation;             /* protected by lock: 1 at start, +1 per reload */
};

/** nfs_export_set_init - @x (its reference passes) is the table in force. */
void nfs_export_set_init(struct nfs_export_set *s, struct nfs_exports *x);
/** nfs_export_set_fini - drop the table in force (requests may still hold it). */
void nfs_export_set_fini(struct nfs_export_set *s);
/** nfs_export_set_get - a reference on the table in force (put it when done). */
struct nfs_exports *nfs_export_set_get(struct nfs_export_set *s);
/** nfs_export_set_replace - @x (its reference passes) is in force from now on. */
void nfs_export_set_replace(struct nfs_export_set *s, struct nfs_exports *x);

#endif
