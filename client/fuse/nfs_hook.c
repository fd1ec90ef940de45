/*
 * nfs_hook.c - the embedded NFS gateway, started by `loligo-fuse --nfs
 * ADDR:PORT` (next to the FUSE mount) or `--no-mount --nfs ADDR:PORT` (the
 * gateway alone).  Both share the process's one struct lclient.
 *
 * The gateway lives in nfs_gw/ and is linked in when its library target
 * exists (client/fuse/CMakeLists.txt defines LOLIGO_HAVE_NFS_GW then).
 * Without it these options fail with a clear message: nothing is faked.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client/fuse/lfuse.h"

#ifdef LOLIGO_HAVE_NFS_GW
#include "nfs_gw/gw.h"

int lfuse_nfs_start(const char *addr_port, struct lclient *c, struct asok *asok, void **out)
{
	struct gw *gw = NULL;
	char err[1024];
	int r;

	/* the same check gw_start() makes, for a message on stderr too */
	r = gw_check_exports(c, err, sizeof(err));
	if (r) {
		fprintf(stderr, "loligo-fuse: %s: not serving NFS\n", err);
		return r;
	}
	r = gw_start(addr_port, c, asok, &gw);
	if (r < 0) {
		fprintf(stderr, "loligo-fuse: cannot start the NFS gateway on %s: %s\n", addr_port,
			strerror(-r));
		return r;
	}
	*out = gw;
	return 0;
}

void lfuse_nfs_stop(void *gw)
{
	gw_stop(gw);
}

int lfuse_nfs_reload(void *gw)
{
	char err[1024];
	int r;

	if (!gw)
		return 0;
	r = gw_exports_reload(gw, err, sizeof(err));
	return r < 0 ? r : 0;
}

int lfuse_nfs_check_syntax(void)
{
	char err[1024];

	if (gw_check_exports(NULL, err, sizeof(err))) {
		fprintf(stderr, "loligo-fuse: %s: not serving NFS\n", err);
		return -EINVAL;
	}
	return 0;
}

int lfuse_check_config(void)
{
	struct lclient *c = NULL;
	char err[1024];
	int r;

	r = gw_check_exports(NULL, err, sizeof(err));
	if (r) {
		fprintf(stderr, "loligo-fuse: %s\n", err);
		return 1;
	}
	/* the paths live in the filesystem: check them if the MDS answers */
	r = lclient_create(&c);
	if (!r)
		r = lclient_mount(c, NULL);
	if (r) {
		fprintf(stderr, "loligo-fuse: export paths not checked: cannot mount from the MDS (%s)\n",
			strerror(-r));
	} else {
		r = gw_check_exports(c, err, sizeof(err));
		lclient_unmount(c);
		if (r) {
			fprintf(stderr, "loligo-fuse: %s\n", err);
			lclient_destroy(c);
			return 1;
		}
	}
	if (c)
		lclient_destroy(c);
	printf("config OK\n");
	return 0;
}
#else
int lfuse_nfs_start(const char *addr_port, struct lclient *c, struct asok *asok, void **out)
{
	(void)c;
	(void)asok;
	*out = NULL;
	fprintf(stderr, "loligo-fuse: --nfs %s: NFS gateway not built into this loligo-fuse\n", addr_port);
	return -ENOSYS;
}

void lfuse_nfs_stop(void *gw)
{
	(void)gw;
}

int lfuse_nfs_reload(void *gw)
{
	(void)gw;
	return 0;
}

int lfuse_check_config(void)
{
	printf("config OK (this loligo-fuse has no NFS gateway: nfs_exports not checked)\n");
	return 0;
}

int lfuse_nfs_check_syntax(void)
{
	return 0;
}
#endif
