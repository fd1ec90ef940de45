/*
 * authcaps.h - private to mds/: the caps mds of a session's client name,
 * enforced on every request (authcaps.c).  Layer: server.
 */
#ifndef LOLIGO_MDS_AUTHCAPS_H
#define LOLIGO_MDS_AUTHCAPS_H

#include "mds/mds.h"

/**
 * authcaps_check_locked - may session @s run @req?  Caller holds mds->lock.
 * Squashes @req->caller (root_squash) when the clause that covers it says
 * so.  Return: 0, -EACCES (outside the caps, a write under "allow r",
 * other uid/gids), -EPERM (a rename or link across the caps' boundary).
 */
int authcaps_check_locked(struct mds *m, struct session *s, struct mdsp_request *req);
/**
 * authcaps_check_target_locked - after a read op that went up the tree
 * (LOOKUP "..", LOOKUPPARENT): may @s see the inode it reached?  Caller
 * holds mds->lock.  Return: 0 or -EACCES.
 */
/**
 * authcaps_may_write_locked - may session @s change @in (a cap flush: no
 * caller ids, so path and access only)?  Caller holds mds->lock.
 */
bool authcaps_may_write_locked(struct mds *m, struct session *s, struct minode *in);
int authcaps_check_target_locked(struct mds *m, struct session *s, const struct mdsp_request *req,
				 uint64_t ino);

#endif
