/*
 * mdcache_priv.h - private to the namespace: what mdcache.c (inodes,
 * directories, transactions, trimming), mdcache_codec.c (the on-disk
 * encodings of inodes, dentries, directory meta and anchors) and
 * mdcache_replay.c (mkfs, loading the tables at start, journal replay)
 * share.  The rest of mds/ sees mdcache.h only.  Everything here runs
 * under mds->lock.
 */
#ifndef LOLIGO_MDS_MDCACHE_PRIV_H
#define LOLIGO_MDS_MDCACHE_PRIV_H

#include "mds/mdcache.h"
#include "mds/mds.h"

#define V_INODE_BLOB 4        /* 2: flags; 3: the data extents (minode.ext); 4: rparent */
#define BLOB_LINKABLE 0x1     /* minode.linkable */
#define V_DENTRY     1
#define V_DIRMETA    1
#define V_DIRFRAGS   1
#define V_ANCHOR     1
#define INO_FIRST    0x1000ull
#define COOKIE_PREALLOC 1024
#define ANCHOR_SHARDS 64
#define ANCHOR_DEPTH_MAX 4096

/* A dentry record as decoded from a directory object (@blob: the embedded inode, primary links). */
struct dentry_val {
	uint64_t cookie, ino;
	uint32_t dtype;
	bool remote;
	const void *blob;
	uint32_t bloblen;
};

/* mdcache.c */
void mdcache_xattrs_free(struct minode *in);
/* mdcache_inode_mem_sync - count @in's symlink, extents and xattrs again (mds_mem_bytes). */
void mdcache_inode_mem_sync(struct minode *in);
/* mdcache_mdir_free_mem - drop @d and its dentries from memory (nothing journaled). */
void mdcache_mdir_free_mem(struct mds *m, struct mdir *d);
/* mdcache_dentry_install - put a dentry loaded or replayed from the store into @d. */
int mdcache_dentry_install(struct mds *m, struct mdir *d, const char *name, const struct dentry_val *v);

/* mdcache_codec.c (inode_blob_encode/decode are in mds.h) */
void mdcache_dentry_value_encode(struct mdsp_buf *b, const struct mdentry *dn, const struct minode *in);
int mdcache_dentry_value_decode(const void *p, size_t len, struct dentry_val *v);
int mdcache_dir_meta_decode(const void *p, size_t len, uint64_t *reserved);
/* a directory's leaf fragments ("/frags"): decode checks they cover the keys whole, in order */
void mdcache_dir_frags_encode(struct mdsp_buf *b, const struct mfrag *f, uint32_t n);
int mdcache_dir_frags_decode(const void *p, size_t len, struct mfrag **out, uint32_t *n);
/* mdcache_frags_replay - a replayed "/frags" of @d (every fragment of it is in memory) */
int mdcache_frags_replay(struct mds *m, struct mdir *d, const void *val, uint32_t len);
int mdcache_anchor_decode(const void *p, size_t len, uint64_t *parent, char **name);

#endif
