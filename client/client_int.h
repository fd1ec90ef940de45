/*
 * client_int.h - private to client/: the facade (client.c), the top layer
 * of the client library (types_int.h has the map): what client.c offers
 * beside client.h, for the tests.  Including it brings every layer below.
 */
#ifndef LOLIGO_CLIENT_CLIENT_INT_H
#define LOLIGO_CLIENT_CLIENT_INT_H

#include "client/ns_int.h"


/* ---- client.c ------------------------------------------------------------ */
/** lclient_create_local - a client on an open data pool, no MDS session. */
int lclient_create_local(struct store_pool *data, struct lclient **out);
/**
 * lclient_mount_shared - mount @c like lclient_mount, with the object store
 * of the mounted @with instead of one of its own (two clients of one
 * filesystem in one test process: the local store admits one opener).
 * @with must stay mounted until @c is unmounted.
 */
int lclient_mount_shared(struct lclient *c, struct lclient *with, const char *root_path);

/* ---- reclaim.c ----------------------------------------------------------- */
/**
 * lc_reclaim_opened - a session opened: write its id and our uuid into the
 * lock file, for a successor to reclaim if we die.  No lock held (the
 * client mutex is taken briefly); writes a small local file.
 */
void lc_reclaim_opened(struct lclient *c);
/**
 * lc_reclaim_release - let the lock file go (unmount): removed first when
 * @unlink_file (the session was closed: nothing to reclaim).
 */
void lc_reclaim_release(struct lclient *c, bool unlink_file);

#endif
