/*
 * export_root.c - resolve export roots through the client library
 * (export.h): once per table and export, cached under the table's lock; a
 * reload's new table resolves again, so a path that moved is seen.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/rpc/rpc.h"

void nfs_export_cred(const struct nfs_export *e, const struct rpc_cred *rc, struct lc_cred *cr)
{
	memset(cr, 0, sizeof(*cr));
	cr->uid = rc->uid;
	cr->gid = rc->gid;
	cr->ngroups = (int)(rc->ngids > LC_MAX_GROUPS ? LC_MAX_GROUPS : rc->ngids);
	for (int i = 0; i < cr->ngroups; i++)
		cr->groups[i] = rc->gids[i];
	/* an RPCSEC_GSS principal nothing maps is the anonymous user, as knfsd
	 * makes it (gssd hands it down as -1: the export's anonuid) */
	if (rc->anon || (e && (e->all_squash || (e->root_squash && rc->uid == 0)))) {
		cr->uid = e ? e->anon_uid : 65534;
		cr->gid = e ? e->anon_gid : 65534;
		cr->ngroups = 0;
	}
}

int nfs_export_root(struct nfs_exports *x, const struct nfs_export *ce, struct lclient *lc, uint64_t *ino,
		    uint64_t *gen)
{
	struct nfs_export *e = (struct nfs_export *)ce;   /* only its cache changes, under x->lock */
	struct lc_cred root = { 0 };
	struct lc_inode *cur, *next;
	struct lc_attr a;
	char path[PATH_MAX], *save = NULL, *c;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if (e->resolved) {
		*ino = e->root_ino;
		*gen = e->root_gen;
		pthread_mutex_unlock(&x->lock);
		return 0;
	}
	pthread_mutex_unlock(&x->lock);

	if (!lc)
		return -ESTALE;
	cur = lc_root(lc);
	if (!cur)
		return -ESTALE;
	r = lc_getattr(lc, cur, &root, false, &a);
	strcpy(path, e->path);
	for (c = strtok_r(path, "/", &save); c && !r; c = strtok_r(NULL, "/", &save)) {
		r = lc_lookup(lc, cur, c, &root, &a, &next);
		lc_put(lc, cur);
		cur = r ? NULL : next;
	}
	if (cur)
		lc_put(lc, cur);
	if (r)
		return r;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	pthread_mutex_lock(&x->lock);
	e->root_ino = a.ino;
	e->root_gen = a.generation;
	e->resolved = true;
	pthread_mutex_unlock(&x->lock);
	*ino = a.ino;
	*gen = a.generation;
	return 0;
}

int nfs_exports_check_paths(struct nfs_exports *x, struct lclient *lc, char *err, size_t errlen)
{
	uint64_t ino, gen;
	int r;

	for (unsigned int i = 0; i < x->n; i++) {
		r = nfs_export_root(x, &x->e[i], lc, &ino, &gen);
		if (r) {
			snprintf(err, errlen, "nfs_exports: export %u (id=%u, path=%s): path: %s", i + 1, x->e[i].id,
				 x->e[i].path,
				 r == -ENOENT ? "no such directory in loligo" :
				 r == -ENOTDIR ? "not a directory" : strerror(-r));
			return r;
		}
	}
	return 0;
}
