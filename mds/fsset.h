/*
 * fsset.h - per-filesystem settings changed online (`loligo fs set`),
 * journaled with the filesystem's metadata.  See fsset.c.
 */
#ifndef LOLIGO_MDS_FSSET_H
#define LOLIGO_MDS_FSSET_H

#include <json-c/json.h>
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

#endif
