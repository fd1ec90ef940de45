/*
 * mountnfs.c - mount(2) an NFS export with the kernel's text options, for
 * the qemu guest (static, shipped in KCLIENT_FILES): busybox's `mount -t
 * nfs` speaks the MOUNT protocol itself through a portmapper, where the
 * kernel, given mountport= and mountproto=tcp, needs none.
 *
 *   mountnfs SERVER:/PATH MOUNTPOINT OPTIONS
 */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/mount.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mountnfs SERVER:/PATH MOUNTPOINT OPTIONS\n");
		return 2;
	}
	if (mount(argv[1], argv[2], "nfs", 0, argv[3]) < 0) {
		fprintf(stderr, "mountnfs: mount -t nfs %s %s -o %s: %s\n", argv[1], argv[2], argv[3], strerror(errno));
		return 1;
	}
	return 0;
}
