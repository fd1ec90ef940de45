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
	int r = gw_start(addr_port, c, asok, &gw);

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
#endif
