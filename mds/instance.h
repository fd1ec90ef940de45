/*
 * instance.h - private to mds/: one MDS in a process (instance.c).
 *
 * The daemon's order (main.c): mds_new, its config, the store and pools,
 * mds_mkfs (with --mkfs, then exit) or auth and listen, mds_load,
 * mds_replay, journal_start and the threads; at the end the threads stop,
 * journal_stop, mds_free_state, mdcache_free + journal_free,
 * mds_close_store, mds_destroy.
 */
#ifndef LOLIGO_MDS_INSTANCE_H
#define LOLIGO_MDS_INSTANCE_H

#include <stddef.h>

#include "mds/mds.h"

/* room for any message the steps below write in @err (a damaged journal's is the longest) */
#define MDS_ERR_LEN 2048

/* A struct mds with its locks, tables and layers set up, nothing opened.  NULL: out of memory. */
struct mds *mds_new(void);
/* Undo mds_new() and the config strings (fs_name, pool names, store_path, keyring). */
void mds_destroy(struct mds *m);
/* An empty filesystem (root, tables, empty journal) in m->meta and m->data: 0 or -errno (-EEXIST: one is there). */
int mds_mkfs(struct mds *m, char *err, size_t len);
/* The filesystem's tables into memory, before the journal replays: 0 or -errno (-ENODEV: no filesystem). */
int mds_load(struct mds *m, char *err, size_t len);
/* Replay the journal into memory (not started yet): 0 or -errno (-EUCLEAN: damage, said in @err). */
int mds_replay(struct mds *m, char *err, size_t len);
/*
 * mds_load_readonly - mds_load() without its one write (a new readdir
 * cookie key): a standby-replay loads this way; mds_load_finish() writes
 * it once the rank is held.
 */
int mds_load_readonly(struct mds *m, char *err, size_t len);
int mds_load_finish(struct mds *m, char *err, size_t len);
/* mds_replay_from - mds_replay() over a cache that holds every entry up to @applied (-ESTALE: it cannot be used) */
int mds_replay_from(struct mds *m, uint64_t applied, char *err, size_t len);
/* Sessions, caps, locks, the purge queue and the blocklist leave memory. */
void mds_free_state(struct mds *m);
/* Close the pools and the stores. */
void mds_close_store(struct mds *m);

#endif
