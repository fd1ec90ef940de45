/*
 * nfs3_int.h - what nfs3_proc.c, mount.c and fcache.c share: the server,
 * one request's context (the exports table it began with), resolving a
 * file handle to an inode under the export's rules, and the cache of open
 * handles.
 *
 * Lock order: s->mounts_lock and fcache->lock are leaves; nothing calls
 * into the client library while holding either.
 */
#ifndef LOLIGO_NFS_GW_NFS3_NFS3_INT_H
#define LOLIGO_NFS_GW_NFS3_NFS3_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs3/nfs3.h"
#include "nfs_gw/nfs3/nfs3_xdr.h"
#include "nfs_gw/rpc/rpc.h"
#include "nfs_gw/status.h"

/* ---- the cache of open handles (fcache.c) ---------------------------------- */

/*
 * A READ or WRITE needs a struct lc_fh, and opening one is an MDS round
 * trip: v3 has no OPEN, so the server keeps one handle per inode (opened
 * read-write as root; each request is checked against the caller's own
 * permissions first) for as long as it is used, as knfsd's file cache
 * does, and closes it after fcache_idle_ns without use, when the inode is
 * removed through the gateway, or when the cache is full.
 */
struct nfs3_fc_entry {
	struct nfs3_fc_entry *next;      /* hash chain; protected by fc->lock */
	uint64_t ino;
	struct lc_fh *fh;
	bool writable;                   /* opened O_RDWR (else O_RDONLY) */
	int refs;                        /* protected by fc->lock: the cache's + users' */
	bool dead;                       /* unhashed: closed when the last user goes */
	uint64_t last_used;              /* mono ns; protected by fc->lock */
};

#define NFS3_FC_BUCKETS 256

struct nfs3_fcache {
	struct lclient *lc;
	pthread_mutex_t lock;
	struct nfs3_fc_entry *b[NFS3_FC_BUCKETS]; /* protected by lock */
	unsigned int n, max;             /* protected by lock */
	uint64_t idle_ns;
};

void nfs3_fcache_init(struct nfs3_fcache *fc, struct lclient *lc, unsigned int max, uint64_t idle_ns);
/** nfs3_fcache_fini - close every handle (no user may be left). */
void nfs3_fcache_fini(struct nfs3_fcache *fc);
/**
 * nfs3_fcache_get - a handle on @in for I/O (@write: one opened O_RDWR).
 * Return: 0 and *@ep (put it with nfs3_fcache_put), or -errno from the open.
 */
int nfs3_fcache_get(struct nfs3_fcache *fc, struct lc_inode *in, bool write, struct nfs3_fc_entry **ep);
void nfs3_fcache_put(struct nfs3_fcache *fc, struct nfs3_fc_entry *e);
/** nfs3_fcache_drop - forget @ino's handle (it was removed); closed once unused. */
void nfs3_fcache_drop(struct nfs3_fcache *fc, uint64_t ino);
/** nfs3_fcache_expire - close what was not used for idle_ns. Return: how many. */
unsigned int nfs3_fcache_expire(struct nfs3_fcache *fc, uint64_t now);

/* ---- the server -------------------------------------------------------------- */

struct nfs3_mount {                      /* a MNT that was not UMNTed: DUMP */
	struct nfs3_mount *next;
	char host[MNTNAMLEN + 1];        /* the client's address (what it says it is, AUTH_SYS machine name, is not trusted) */
	char path[MNTPATHLEN + 1];
};

#define NFS3_MOUNTS_MAX 4096

struct nfs3_server {
	struct nfs3_params p;
	struct lclient *lc;
	struct nfs_export_set *exports;
	uint8_t write_verf[NFS3_WRITEVERFSIZE];  /* new at every start: clients resend unstable data */
	struct nfs3_fcache fc;

	pthread_mutex_t mounts_lock;
	struct nfs3_mount *mounts;       /* protected by mounts_lock */
	unsigned int nmounts;            /* protected by mounts_lock */

	pthread_t reaper;                /* closes idle cached opens */
	bool reaper_started;
	pthread_mutex_t reaper_lock;
	pthread_cond_t reaper_cond;
	bool stopping;                   /* protected by reaper_lock */
};

/* One request's context. */
struct nfs3_req {
	struct nfs3_server *s;
	struct rpc_req *req;
	struct nfs_exports *x;           /* the table in force when it began (a reference) */
};

/* A resolved file handle. */
struct nfs3_obj {
	const struct nfs_export *exp;    /* in r->x */
	struct lc_inode *in;             /* a reference */
	struct lc_attr attr;             /* as resolved (cached attributes) */
	struct lc_cred cr;               /* the caller, squashed for exp */
};

/**
 * nfs3_resolve - decode @fh and find its inode, checking the export's
 * rules for the caller (client address, privileged port).
 * Return: NFS3_OK, NFS3ERR_BADHANDLE, NFS3ERR_STALE, NFS3ERR_ACCES,
 * NFS3ERR_PERM (insecure port on a secure export), NFS3ERR_SERVERFAULT.
 */
uint32_t nfs3_resolve(struct nfs3_req *r, const struct nfs3_fh *fh, struct nfs3_obj *o);
void nfs3_release(struct nfs3_req *r, struct nfs3_obj *o);

/** nfs3_make_fh - the handle of inode @ino/@gen in @exp. */
void nfs3_make_fh(const struct nfs_export *exp, uint64_t ino, uint64_t gen, struct nfs3_fh *fh);

/** nfs3_export_ok - may the caller of @r use @e at all?  NFS3_OK, NFS3ERR_ACCES or NFS3ERR_PERM. */
uint32_t nfs3_export_ok(struct nfs3_req *r, const struct nfs_export *e);

/* mount.c */
int nfs3_mount_dispatch(void *priv, struct rpc_req *req, struct xdr_dec *args, struct xdr_enc *res);
void nfs3_mounts_free(struct nfs3_server *s);

#endif
