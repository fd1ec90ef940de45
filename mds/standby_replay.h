/*
 * standby_replay.h - private to mds/: a standby that follows rank 0's
 * journal (standby_replay.c's essay).
 *
 * Lock order: struct sreplay's lock is a leaf; the follower thread takes
 * mds->lock (to apply entries) with no other lock held.
 */
#ifndef LOLIGO_MDS_STANDBY_REPLAY_H
#define LOLIGO_MDS_STANDBY_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "mds/mds.h"

/* What the follower asks of the process (sreplay_restart_wanted). */
enum sreplay_restart {
	SREPLAY_RUNNING = 0,
	SREPLAY_RELOAD,               /* the journal was trimmed past its position: load again */
	SREPLAY_COLD,                 /* it cannot follow this journal: start again as a cold standby */
};

/**
 * sreplay_begin - before the tables are loaded: read the journal header
 * (where following starts; the tables loaded after it hold everything
 * before it).  Return: 0, -EOPNOTSUPP (a format-1 journal: stay a cold
 * standby), -errno (message in @err).
 */
int sreplay_begin(struct mds *m, char *err, size_t len);

/**
 * sreplay_start - after the tables are loaded (without writing): the
 * follower thread catches up with the journal and tails it.
 * Return: 0 or -errno.
 */
int sreplay_start(struct mds *m);

/**
 * sreplay_stop - stop the follower thread (once the rank is taken and the
 * old holder fenced).  *@applied: the sequence number of the last journal
 * entry it applied to the cache (every one up to it).  Return: 0, or -1
 * when it was not following (its cache cannot be used).
 */
int sreplay_stop(struct mds *m, uint64_t *applied);

/** sreplay_following - this daemon is a standby-replay whose cache follows the journal (lock-free). */
bool sreplay_following(struct mds *m);

/** sreplay_restart_wanted - what the follower asks for (enum sreplay_restart; lock-free). */
int sreplay_restart_wanted(struct mds *m);

/** sreplay_why - why it asked for a restart ("" if it did not). */
const char *sreplay_why(struct mds *m);

/** sreplay_status_add - its position and lag into @o (a standby registration). */
void sreplay_status_add(struct mds *m, struct json_object *o);

/** sreplay_free - free m->sreplay (after sreplay_stop). */
void sreplay_free(struct mds *m);

#endif
