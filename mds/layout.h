/*
 * layout.h - the loligo.{file,dir}.layout virtual xattrs (Ceph's
 * ceph.file.layout and ceph.dir.layout): names, text format, checks.
 * Pure functions over an inode's fields; server.c decides who may set
 * them and when (an empty file, a directory) and journals the inode.
 */
#ifndef LOLIGO_MDS_LAYOUT_H
#define LOLIGO_MDS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_proto/proto.h"

struct mds;

/* a layout with every field spelled out (none of the inode's 0 defaults) */
struct mlayout {
	uint32_t object_size, stripe_unit, stripe_count, pool;
};

/* what a name names */
enum layout_field {
	LAYOUT_ALL,           /* loligo.{file,dir}.layout: "stripe_unit=... pool=..." */
	LAYOUT_OBJECT_SIZE,
	LAYOUT_STRIPE_UNIT,
	LAYOUT_STRIPE_COUNT,
	LAYOUT_POOL,
};

/**
 * layout_xattr - is @name one of the layout xattrs?  *@dir: a
 * loligo.dir.layout name; *@field: which part.  Return: 1 a layout name,
 * 0 not one, -EINVAL a loligo.{file,dir}.layout.<unknown>.
 */
int layout_xattr(const char *name, bool *dir, enum layout_field *field);
/** layout_of - @a's layout with the defaults spelled out (@default_osize for an object size of 0). */
void layout_of(const struct mdsp_inode *a, uint32_t default_osize, struct mlayout *ly);
/** layout_store - @ly into @a's fields (the layout flags are the caller's). */
void layout_store(struct mdsp_inode *a, const struct mlayout *ly);
/**
 * layout_format - @field of @ly as text into @buf (NUL-terminated when it
 * fits); the pool by name (@m's data pools).  Caller holds mds->lock.
 * Return: its length without the NUL.
 */
size_t layout_format(const struct mds *m, const struct mlayout *ly, enum layout_field field, char *buf,
		     size_t len);
/**
 * layout_parse - apply the text @val (@len bytes, not NUL-terminated) for
 * @field to @ly: a number, or for LAYOUT_ALL "key=value" pairs separated
 * by spaces (any of object_size, stripe_unit, stripe_count, pool); a pool
 * by name or id, one of @m's data pools.  Then checks the result holds
 * together (layout_valid).  Caller holds mds->lock.  Return: 0 or -EINVAL.
 */
int layout_parse(const struct mds *m, struct mlayout *ly, enum layout_field field, const char *val, size_t len);
/** layout_pool_name - the name of data pool @id, or NULL (no such pool).  Caller holds mds->lock. */
const char *layout_pool_name(const struct mds *m, uint32_t id);
/** layout_pool_id - the id of data pool @name (a name, or an id as text).  Caller holds mds->lock.  0 or -ENOENT. */
int layout_pool_id(const struct mds *m, const char *name, uint32_t *id);
/**
 * layout_valid - Ceph's file_layout_t::is_valid with loligo's bounds: the
 * stripe unit a multiple of MDSP_LAYOUT_UNIT_MIN dividing the object size,
 * the object size at most MDSP_LAYOUT_OBJ_MAX, 1..MDSP_LAYOUT_COUNT_MAX
 * objects in a stripe.
 */
bool layout_valid(const struct mlayout *ly);

#endif
