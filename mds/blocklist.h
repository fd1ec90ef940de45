/*
 * blocklist.h - private to mds/: evicted clients kept out, journaled, with
 * expiry (blocklist.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_BLOCKLIST_H
#define LOLIGO_MDS_BLOCKLIST_H

#include "mds/mds.h"

/* blocklist_uuid_str - a client uuid as 8-4-4-4-12 hex (what the blocklist names). */
void blocklist_uuid_str(const uint8_t *uuid, char *buf, size_t len);
/*
 * blocklist_add - keep @entity (a client uuid or data-store address) out for
 * @expire_secs (0: until removed), journaled; then fence @store_addr (or the
 * entity itself when it is an address) in the data store.  No lock held;
 * blocks on the store.  Return: 0, -EINVAL (@err says why), or the store's
 * error (the entry stands; @err says the fence failed).
 */
int blocklist_add(struct mds *m, const char *entity, const char *store_addr, double expire_secs, const char *why,
		  const char *client_name, uint64_t sid, char *err, size_t errlen);
/* blocklist_rm - lift @entity (and its store fence).  No lock held.  0, -ENOENT or the store's error. */
int blocklist_rm(struct mds *m, const char *entity, char *err, size_t errlen);
/* blocklist_check_locked - 0, or -ESHUTDOWN with @reason when the client @uuid / @store_addr
 * (may be NULL) is blocklisted.  mds->lock held. */
int blocklist_check_locked(struct mds *m, const uint8_t *uuid, const char *store_addr, char *reason, size_t len);
void blocklist_tick(struct mds *m);
uint64_t blocklist_count_locked(struct mds *m);
struct json_object *blocklist_ls_json(struct mds *m);
int blocklist_replay_edit(struct mds *m, int op, const char *key, const void *val, uint32_t len);
int blocklist_load(struct mds *m);
void blocklist_register_perf(struct mds *m);
void blocklist_free(struct mds *m);

#endif
