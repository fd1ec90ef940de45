/*
 * admin.c - loligo-fuse's own entries on the admin socket, next to the
 * client library's (`dump cache`, `mds_requests`, ...):
 *
 *   perf group "fuse"   requests that reached the daemon, by family (what the
 *                       kernel did not answer from its caches), and the
 *                       invalidations delivered to the kernel
 *   fuse status         mount point, root, the FUSE settings in force
 *   fuse inval_inode    drop the kernel's attributes and pages of an inode
 *   fuse inval_entry    drop the kernel's dentry parent/name
 *
 * The inval commands go through the same queue and thread as the client
 * library's invalidations (inval.c), so they also test that path.
 */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "client/fuse/lfuse.h"
#include "common/admin_sock.h"

#define GROUP "fuse"

static int cmd_status(struct json_object *args, struct json_object **out, void *priv)
{
	struct lfuse *lf = priv;
	struct json_object *o = json_object_new_object();

	(void)args;
	json_object_object_add(o, "mountpoint", json_object_new_string(lf->mountpoint ? lf->mountpoint : ""));
	json_object_object_add(o, "root_ino", json_object_new_uint64(lf->root_ino));
	json_object_object_add(o, "max_write", json_object_new_int64(lf->max_write));
	json_object_object_add(o, "readdirplus", json_object_new_boolean(lf->readdirplus));
	json_object_object_add(o, "cache_readdir", json_object_new_boolean(lf->cache_readdir));
	json_object_object_add(o, "default_permissions", json_object_new_boolean(lf->default_permissions));
	json_object_object_add(o, "no_opendir", json_object_new_boolean(lf->no_opendir));
	json_object_object_add(o, "set_user_groups", json_object_new_boolean(lf->set_user_groups));
	*out = o;
	return 0;
}

static int cmd_inval_inode(struct json_object *args, struct json_object **out, void *priv)
{
	struct lfuse *lf = priv;
	struct json_object *v;

	if (!lf->inval || !json_object_object_get_ex(args, "ino", &v))
		return -EINVAL;
	lfuse_inval_callbacks.inval_inode(lf, (uint64_t)json_object_get_int64(v), 0, 0);
	*out = json_object_new_object();
	return 0;
}

static int cmd_inval_entry(struct json_object *args, struct json_object **out, void *priv)
{
	struct lfuse *lf = priv;
	struct json_object *p, *n;

	if (!lf->inval || !json_object_object_get_ex(args, "parent", &p) ||
	    !json_object_object_get_ex(args, "name", &n))
		return -EINVAL;
	lfuse_inval_callbacks.inval_dentry(lf, (uint64_t)json_object_get_int64(p), json_object_get_string(n));
	*out = json_object_new_object();
	return 0;
}

static const struct asok_cmd fuse_cmds[] = {
	{ "fuse status", "", "the mount point and the FUSE settings in force", cmd_status },
	{ "fuse inval_inode", "ino:int", "make the kernel drop its cached attributes and data of inode INO",
	  cmd_inval_inode },
	{ "fuse inval_entry", "parent:int name:str",
	  "make the kernel drop its cached name NAME in directory inode PARENT", cmd_inval_entry },
};

int lfuse_register_asok(struct lfuse *lf, struct asok *a)
{
#define X(n) perf_register_counter(GROUP, #n, &lf->perf.n);
	LFUSE_COUNTERS(X)
#undef X
#define X(n) perf_register_hist(GROUP, #n "_lat", &lf->perf.n##_lat); \
	perf_register_hist(GROUP, #n "_cpu", &lf->perf.n##_cpu);
	LFUSE_TIMED(X)
#undef X
	if (!a)
		return 0;
	return asok_register(a, fuse_cmds, (int)(sizeof(fuse_cmds) / sizeof(fuse_cmds[0])), lf);
}

void lfuse_perf_unregister(void)
{
	perf_unregister_group(GROUP);
}
