/*
 * server.h - private to mds/: the POSIX semantics of every op (server.c).
 * Types are in mds.h.
 */
#ifndef LOLIGO_MDS_SERVER_H
#define LOLIGO_MDS_SERVER_H

#include "mds/mds.h"

/*
 * server_dispatch - run @req for session @s.  Fills @rep; a mutation's edits
 * go into @t.  Caller holds mds->lock.
 */
void server_dispatch(struct mds *m, struct session *s, struct mdsp_request *req, struct mdsp_reply *rep,
		     struct txn *t);
/** server_statfs - statfs of the filesystem.  Caller holds mds->lock; no I/O (see server_space_refresh). */
void server_statfs(struct mds *m, struct mdsp_statfs *sf);
/**
 * server_space_refresh - read the data store's capacity and use for
 * statfs (a statvfs on local, a mon call on rados).  The ticker calls it
 * without any lock held, so statfs never waits for the store.
 */
void server_space_refresh(struct mds *m);
bool server_op_journaled(const struct mdsp_request *req);

#endif
