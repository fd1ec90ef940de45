/*
 * fsset.h - per-filesystem settings changed online (`loligo fs set`),
 * journaled with the filesystem's metadata.  See fsset.c.
 */
#ifndef LOLIGO_MDS_FSSET_H
#define LOLIGO_MDS_FSSET_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct mds;

/* fsset_set - set @var of filesystem @fs_name to @val: journaled, waited
 * for, then applied (and pushed to the clients where they need it).  0 with
 * *@out a JSON answer, or -errno with what is wrong in @err.  No lock held. */
int fsset_set(struct mds *m, const char *fs_name, const char *var, const char *val, struct json_object **out,
	      char *err, size_t len);
/* fsset_apply_loaded - after load and replay: the settings kept with the
 * filesystem override the config options they stand for.  0 or -EINVAL. */
int fsset_apply_loaded(struct mds *m, char *err, size_t len);
/* fsset_dump - the settings, as members of @fs (fs dump). */
void fsset_dump(struct mds *m, struct json_object *fs);
/*
 * fsset_data_pool - `fs add_data_pool` (@add) or `fs rm_data_pool` of
 * @pool: a pool file layouts may name (loligo.{file,dir}.layout.pool).
 * Add opens it (made if missing; on RADOS an erasure-coded pool is made
 * beforehand with ceph); rm refuses the first pool and a pool in use (a
 * layout the MDS holds names it, or it holds any object).  Journaled and
 * waited for.  0 with *@out, or -errno with @err.  No lock held.
 */
int fsset_data_pool(struct mds *m, const char *fs_name, const char *pool, bool add, struct json_object **out,
		    char *err, size_t len);
/* fsset_dump_pools - the names of the data pools after the first, appended to @arr.  Takes mds->lock. */
void fsset_dump_pools(struct mds *m, struct json_object *arr);

#endif
