/*
 * export.h - the gateway's exports and the NFSv4 pseudo filesystem.
 *
 * The [nfs] option nfs_exports lists the exports, separated by ';', each a
 * comma-separated list of settings:
 *
 *   path=/projects,pseudo=/proj,clients=127.0.0.1|10.0.0.0/8,rw,root_squash,insecure
 *
 *   path=P          directory inside loligo (default /)
 *   pseudo=P        where clients see it in the NFSv4 namespace (default: path)
 *   clients=A|B     addresses or CIDR prefixes allowed ('*' = all, the default)
 *   ro | rw         read-only or read-write (default rw)
 *   root_squash | no_root_squash   uid 0 becomes anonuid/anongid (default no_root_squash)
 *   all_squash      every uid becomes anonuid/anongid
 *   anonuid=N, anongid=N           (default 65534)
 *   secure | insecure              refuse or accept source ports >= 1024
 *                   (default insecure, like ganesha: NAT and userspace clients use them)
 *
 * When no export sits at pseudo path "/", the gateway serves a read-only
 * pseudo root with a directory for every pseudo path component, so a
 * client mounting "/" can walk down to each export.  Export ids are the
 * position in the list (1-based): file handles carry them, so keep the
 * order stable across restarts.
 */
#ifndef LOLIGO_NFS_GW_NFS4_EXPORT_H
#define LOLIGO_NFS_GW_NFS4_EXPORT_H

#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct lclient;

#define NFS4_EXPORTS_MAX 64
#define NFS4_EXPORT_RULES_MAX 16
#define NFS4_PSEUDO_MAX 256
#define NFS4_PSEUDO_ROOT 1u

struct nfs4_client_rule {
	int family;                      /* 0: any address ('*') */
	uint8_t addr[16];
	unsigned int prefix;
};

struct nfs4_export {
	uint16_t id;
	char path[PATH_MAX];
	char pseudo[PATH_MAX];
	bool ro, root_squash, all_squash, insecure;
	uint32_t anon_uid, anon_gid;
	unsigned int nrules;
	struct nfs4_client_rule rules[NFS4_EXPORT_RULES_MAX];
	uint32_t pnode;                  /* pseudo node it is mounted on (0: it is the root) */
	/* resolved lazily; protected by nfs4_exports.lock */
	bool resolved;
	uint64_t root_ino, root_gen;
};

struct nfs4_pnode {
	uint32_t id;                     /* 1 = root */
	uint32_t parent;
	char name[256];
	const struct nfs4_export *exp;   /* export mounted here, or NULL */
};

struct nfs4_exports {
	unsigned int n;
	struct nfs4_export e[NFS4_EXPORTS_MAX];
	const struct nfs4_export *root;  /* export at pseudo "/", or NULL: pseudo root */
	unsigned int npnodes;
	struct nfs4_pnode pn[NFS4_PSEUDO_MAX]; /* pn[i].id == i + 1 */
	pthread_mutex_t lock;
};

/**
 * nfs4_exports_parse - parse an nfs_exports value.
 * Return: 0, or -EINVAL with a message in @err.
 */
int nfs4_exports_parse(const char *spec, struct nfs4_exports **out, char *err, size_t errlen);
void nfs4_exports_free(struct nfs4_exports *x);

const struct nfs4_export *nfs4_export_by_id(const struct nfs4_exports *x, uint16_t id);

/** nfs4_export_allows - @peer matches one of @e's client rules. */
bool nfs4_export_allows(const struct nfs4_export *e, const struct sockaddr_storage *peer);

/**
 * nfs4_export_root - resolve @e's root directory (once) through @lc.
 * Return: 0 and the root's ino/generation, or -errno.
 */
int nfs4_export_root(struct nfs4_exports *x, struct nfs4_export *e, struct lclient *lc, uint64_t *ino,
		     uint64_t *gen);

const struct nfs4_pnode *nfs4_pnode_get(const struct nfs4_exports *x, uint32_t id);
/** nfs4_pnode_child - child @name of pseudo node @id, or NULL. */
const struct nfs4_pnode *nfs4_pnode_child(const struct nfs4_exports *x, uint32_t id, const char *name);

#endif
