/*
 * runas.c - run a command as UID:GID (no supplementary groups) in the NFS
 * e2e guest, whose busybox has no su: checks that the gateway applies the
 * caller's AUTH_SYS credentials.  Built static, shipped with KCLIENT_FILES.
 *
 *   runas UID GID PROG ARGS...
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: runas UID GID PROG ARGS...\n");
		return 2;
	}
	if (setgroups(0, NULL) || setgid((gid_t)atoi(argv[2])) || setuid((uid_t)atoi(argv[1]))) {
		perror("runas");
		return 2;
	}
	execv(argv[3], argv + 3);
	perror("runas: exec");
	return 127;
}
