/*
 * mdsmap.h - private to mds/: who holds rank 0 (mdsmap.c's essay).
 *
 * Several loligo-mds daemons serve one filesystem: one active, the others
 * standby.  The MDS map is an object in the metadata pool, changed only by
 * compare-and-swap on its epoch; the active renews a beacon, a standby
 * takes the rank when the beacon stops, fencing the old holder in the
 * store before it replays.
 *
 * Lock order: struct mdsmap's lock is a leaf (no other lock is taken
 * under it, and no store call is made under it).
 */
#ifndef LOLIGO_MDS_MDSMAP_H
#define LOLIGO_MDS_MDSMAP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "mds/mds.h"

/* the map object in the metadata pool, and its omap keys */
#define MDSMAP_OID "mds_map"

/* Why a takeover happened (the map's history, the logs). */
enum mdsmap_reason {
	MDSMAP_FIRST,           /* no map, or nobody ever held the rank */
	MDSMAP_VACANT,          /* the holder stepped down (SIGTERM, mds fail) */
	MDSMAP_SAME_NAME,       /* a new instance of the holder's own name (a restart) */
	MDSMAP_HOST_LOCK,       /* local store: the holder's host lock is free, so its process is gone */
	MDSMAP_GRACE,           /* the holder's beacon did not move for mds_beacon_grace */
};

/**
 * mdsmap_init - this daemon's identity in the map: its name (mds_name),
 * a random gid, and the store instances a successor must fence (m->st,
 * m->data_st).  Needs the store open.  Return: 0 or -errno (message in @err).
 */
int mdsmap_init(struct mds *m, char *err, size_t len);

/**
 * mdsmap_join - wait as a standby until this daemon holds rank 0: read the
 * map, watch the holder's beacon, take the rank by compare-and-swap when
 * it is vacant or its holder is gone, then fence the old holder in the
 * store.  Only then may the caller replay the journal and serve.  Sleeps
 * in sigtimedwait(@sigs): a signal there stops the wait.
 * Return: 0 (active at m->map's epoch), 1 (stopped by signal *@sig),
 * 2 (this standby-replay's follower asked for a restart: sreplay_restart_wanted();
 * its registration is removed),
 * or -errno with a message in @err (a damaged map is waited out, not an
 * error: the standby says so in the log and takes nothing on a guess).
 */
int mdsmap_join(struct mds *m, const sigset_t *sigs, int *sig, char *err, size_t len);

/**
 * mdsmap_try_takeover - one attempt to take rank 0 now, whatever the
 * beacon says (the decision is the caller's): compare-and-swap the map
 * from the epoch just read, then fence the previous holder.
 * Return: 1 taken, 0 lost the race (the map moved), -errno.
 */
int mdsmap_try_takeover(struct mds *m, enum mdsmap_reason why, char *err, size_t len);

/** mdsmap_set_addr - the address clients reach this active at, for the map (written with the next beacon). */
void mdsmap_set_addr(struct mds *m, const char *addr);

/**
 * mdsmap_start - the beacon thread: renew every mds_beacon_interval by a
 * write that asserts the map's epoch is still ours.  A refused renewal
 * (the epoch moved, or the store fenced us) means another daemon holds
 * the rank: the daemon logs the new epoch and holder and exits at once,
 * writing nothing more.  Return: 0 or -errno.
 */
int mdsmap_start(struct mds *m);

/**
 * mdsmap_stop - stop the beacon thread; with @vacate (a clean shutdown
 * after the journal drained) leave the rank vacant in the map, so that a
 * standby takes it at once instead of after the grace.
 */
void mdsmap_stop(struct mds *m, bool vacate);

/** mdsmap_free - free m->map (after mdsmap_stop). */
void mdsmap_free(struct mds *m);

/**
 * mdsmap_fail - `mds fail 0`: leave the rank vacant and exit, so a standby
 * takes over (this daemon does not take it back for a grace).  The exit
 * comes from the beacon thread after the reply went out.
 * Return: 0 or -errno (message in @err).
 */
int mdsmap_fail(struct mds *m, char *err, size_t len);

/** mdsmap_epoch - the map epoch this daemon holds the rank at (0: not active). */
uint64_t mdsmap_epoch(struct mds *m);

/** mdsmap_name - this daemon's name ("mds.NAME"). */
const char *mdsmap_name(struct mds *m);

/** mdsmap_status_json - the map as `fs status` and `fs dump` show it (ranks, standbys, epoch). */
struct json_object *mdsmap_status_json(struct mds *m);

typedef void (*mdsmap_health_fn)(void *h, const char *code, bool error, const char *summary, const char *msg);
/**
 * mdsmap_health - MDS_INSUFFICIENT_STANDBY (no live standby),
 * MDS_STANDBY_REPLAY_LAGGING (a standby-replay that last caught up with
 * the journal longer than mds_standby_replay_lag_warn ago) and
 * FS_DEGRADED (a failover in progress: the reconnect phase after a
 * takeover) through @add(@h, ...), admin.c's health_add().
 */
void mdsmap_health(struct mds *m, mdsmap_health_fn add, void *h);

#endif
