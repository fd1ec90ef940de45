/*
 * purge.h - private to mds/: the purge queue of unlinked files' data objects
 * (purge.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_PURGE_H
#define LOLIGO_MDS_PURGE_H

#include "mds/mds.h"

/* purge_queue_inode - @in lost its last link: journal and queue the purge
 * of its data objects.  Caller holds mds->lock. */
void purge_queue_inode(struct mds *m, struct txn *t, const struct minode *in);
int purge_replay_edit(struct mds *m, int op, const char *key, const void *val, uint32_t len);
int purge_load(struct mds *m);
/* purge_start - start the purge thread (after journal replay).  No locks held. */
int purge_start(struct mds *m);
/* purge_stop - stop it within one slice and join it; what is left stays
 * queued (journaled) for the next start.  No locks held. */
void purge_stop(struct mds *m);
void purge_register_perf(struct mds *m);
void purge_free(struct mds *m);

#endif
