/*
 * mount.c - the MOUNT v3 program (RFC 1813 appendix I): MNT hands out an
 * export's root handle, DUMP lists who mounted what, UMNT/UMNTALL forget
 * that, EXPORT lists the exports.
 *
 * MNT takes an export's path (or its NFSv4 pseudo path) exactly: a path
 * that is not an export, or a subdirectory of one, is MNT3ERR_NOENT, and
 * the export's client rules and privileged-port setting apply as to NFS.
 * The mount list is informational (knfsd's rmtab): kept in memory, keyed by
 * the client's address (not the machine name it claims), bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs3/nfs3_int.h"

static void client_host(const struct rpc_req *req, char *buf, size_t len)
{
	const char *p = req->xprt->peer_str, *colon = strrchr(p, ':');
	size_t n = colon ? (size_t)(colon - p) : strlen(p);

	if (n && p[0] == '[' && p[n - 1] == ']') {   /* "[v6]:port" */
		p++;
		n -= 2;
	}
	snprintf(buf, len, "%.*s", (int)n, p);
}

static void mount_add(struct nfs3_server *s, const char *host, const char *path)
{
	struct nfs3_mount *m, **pp, *drop = NULL;

	pthread_mutex_lock(&s->mounts_lock);
	for (m = s->mounts; m; m = m->next)
		if (!strcmp(m->host, host) && !strcmp(m->path, path))
			break;
	if (!m && (m = calloc(1, sizeof(*m)))) {
		snprintf(m->host, sizeof(m->host), "%s", host);
		snprintf(m->path, sizeof(m->path), "%s", path);
		m->next = s->mounts;
		s->mounts = m;
		if (++s->nmounts > NFS3_MOUNTS_MAX) {
			/* the oldest goes: the list is a hint, never a cost a client controls */
			for (pp = &s->mounts; (*pp)->next; pp = &(*pp)->next)
				;
			drop = *pp;
			*pp = NULL;
			s->nmounts--;
		}
	}
	pthread_mutex_unlock(&s->mounts_lock);
	free(drop);
}

/* Forget @host's mount of @path (NULL: all of @host's). */
static void mount_del(struct nfs3_server *s, const char *host, const char *path)
{
	struct nfs3_mount **pp, *m;

	pthread_mutex_lock(&s->mounts_lock);
	for (pp = &s->mounts; (m = *pp);) {
		if (!strcmp(m->host, host) && (!path || !strcmp(m->path, path))) {
			*pp = m->next;
			s->nmounts--;
			free(m);
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&s->mounts_lock);
}

void nfs3_mounts_free(struct nfs3_server *s)
{
	struct nfs3_mount *m;

	while ((m = s->mounts)) {
		s->mounts = m->next;
		free(m);
	}
	s->nmounts = 0;
}

static uint32_t mnt(struct nfs3_req *r, const char *path, struct nfs3_fh *fh)
{
	const struct nfs_export *e = nfs_export_by_path(r->x, path);
	uint64_t ino, gen;
	uint32_t st;
	int err;

	if (!e) {
		dout(NFS, 1, "%s: MNT %s: not exported", r->req->xprt->peer_str, path);
		return MNT3ERR_NOENT;
	}
	st = nfs3_export_ok(r, e);
	if (st)
		return st == NFS3ERR_PERM ? MNT3ERR_PERM : MNT3ERR_ACCES;
	if (!r->s->lc)
		return MNT3ERR_SERVERFAULT;
	err = nfs_export_root(r->x, e, r->s->lc, &ino, &gen);
	if (err)
		return err == -ENOENT ? MNT3ERR_NOENT : err == -ENOTDIR ? MNT3ERR_NOTDIR : MNT3ERR_IO;
	nfs3_make_fh(e, ino, gen, fh);
	return MNT3_OK;
}

int nfs3_mount_dispatch(void *priv, struct rpc_req *req, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_server *s = priv;
	struct nfs3_req r = { .s = s, .req = req };
	char path[MNTPATHLEN + 1], host[MNTNAMLEN + 1];
	const uint8_t *p;
	struct nfs3_fh fh;
	struct nfs3_mount *m;
	uint32_t len, st;
	int ret = RPC_SUCCESS;

	client_host(req, host, sizeof(host));
	r.x = nfs_export_set_get(s->exports);
	switch (req->call.proc) {
	case MOUNTPROC3_MNT:
	case MOUNTPROC3_UMNT:
		if (nfs3_dec_dirpath(args, &p, &len) || memchr(p, 0, len)) {
			ret = RPC_GARBAGE_ARGS;
			break;
		}
		memcpy(path, p, len);
		path[len] = 0;
		if (req->call.proc == MOUNTPROC3_UMNT) {
			mount_del(s, host, path);
			break;
		}
		st = mnt(&r, path, &fh);
		xdr_put_u32(res, st);
		if (!st) {
			const struct nfs_export *e = nfs_export_by_path(r.x, path);

			xdr_put_opaque(res, fh.data, fh.len);
			/* auth_flavors<>: the export's sec= list, in its order */
			xdr_put_u32(res, e ? e->nsec : 1);
			for (unsigned int i = 0; e && i < e->nsec; i++)
				xdr_put_u32(res, e->sec[i]);
			if (!e)
				xdr_put_u32(res, RPC_AUTH_SYS);
			mount_add(s, host, path);
			dinfo(NFS, "%s: MNT %s", req->xprt->peer_str, path);
		}
		break;
	case MOUNTPROC3_DUMP:
		pthread_mutex_lock(&s->mounts_lock);
		/* (a list longer than the reply allows is cut: it is a hint) */
		for (m = s->mounts; m && res->len + 2 * 4 + 4 + MNTNAMLEN + 4 + MNTPATHLEN + 8 < res->max; m = m->next) {
			xdr_put_bool(res, true);
			xdr_put_string(res, m->host);
			xdr_put_string(res, m->path);
		}
		pthread_mutex_unlock(&s->mounts_lock);
		xdr_put_bool(res, false);
		break;
	case MOUNTPROC3_UMNTALL:
		mount_del(s, host, NULL);
		break;
	case MOUNTPROC3_EXPORT:
		/* every export (showmount -e), with its client rules as groups */
		for (unsigned int i = 0; i < r.x->n; i++) {
			const struct nfs_export *e = &r.x->e[i];

			xdr_put_bool(res, true);
			xdr_put_string(res, e->path);
			for (unsigned int k = 0; k < e->nrules; k++) {
				char buf[64];

				nfs_export_rule_str(&e->rules[k], buf, sizeof(buf));
				xdr_put_bool(res, true);
				xdr_put_string(res, buf);
			}
			xdr_put_bool(res, false);
		}
		xdr_put_bool(res, false);
		break;
	default:
		ret = RPC_PROC_UNAVAIL;
		break;
	}
	nfs_exports_put(r.x);
	return ret;
}
