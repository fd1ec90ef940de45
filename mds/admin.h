/*
 * admin.h - private to mds/: the admin commands (admin socket and COMMAND)
 * (admin.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_ADMIN_H
#define LOLIGO_MDS_ADMIN_H

#include "mds/mds.h"

int admin_start(struct mds *m, const char *path);
void admin_stop(struct mds *m);
/*
 * admin_command_json - run an admin command given as JSON (COMMAND over the
 * MDS port, from an authenticated connection: net.c refuses it otherwise).
 * Only the read-only commands run there; the others return -EPERM and a
 * message pointing at the admin socket (a unix socket only its owner can
 * use), which runs all.
 */
int admin_command_json(struct mds *m, const char *json, char **out);

#endif
