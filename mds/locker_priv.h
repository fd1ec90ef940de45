/*
 * locker_priv.h - private to the locker (locker.c: caps; lease.c: dentry
 * leases; park.c: requests parked until revokes are acked): the cap bits'
 * short names, the gather counts and the helpers the three files call in
 * each other.  The rest of mds/ sees locker.h only.  Everything here runs
 * under mds->lock.
 */
#ifndef LOLIGO_MDS_LOCKER_PRIV_H
#define LOLIGO_MDS_LOCKER_PRIV_H

#include "common/perf.h"
#include "mds/locker.h"
#include "mds/mds.h"

#define Fs MDSP_CAP_FILE_SHARED
#define Fc MDSP_CAP_FILE_CACHE
#define Fr MDSP_CAP_FILE_RD
#define Fw MDSP_CAP_FILE_WR
#define Fb MDSP_CAP_FILE_BUFFER
#define Dc MDSP_CAP_DIR_CREATE
#define FILE_BITS (Fs | Fc | Fr | Fw | Fb)
#define OPEN_BITS (Fc | Fr | Fw | Fb)       /* what only an open file wants */
#define BASE_WANT (MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED)
#define NBITS 10

/* Bits some parked request waits to revoke, counted per bit. */
struct mgather {
	uint16_t cnt[NBITS];
};

/* defined and registered in locker.c (mds_caps perf section) */
extern struct perf_counter locker_c_lease_revokes, locker_c_parked, locker_c_resumed, locker_c_ordered;

/* locker.c */
uint32_t locker_gathering(const struct minode *in);
struct mcap *locker_cap_find(struct minode *in, struct session *s);
void locker_send_caps(struct session *s, const struct mdsp_caps *cm);
/* locker_recall_answered - a recall revoke of @s was answered (or went with its cap or lease). */
void locker_recall_answered(struct session *s);
/* locker_revoke_answered - a revoke sent at @sent_ns was acked (latency, late acks). */
void locker_revoke_answered(uint64_t sent_ns);

/* lease.c */
struct mlease *locker_lease_find(struct mdentry *dn, struct session *s);
struct mlease *locker_lease_add(struct mds *m, struct session *s, struct mdentry *dn);
void locker_lease_del(struct mlease *l);
void locker_send_lease_msg(struct mlease *l, uint32_t op);
void locker_lease_revoke(struct mds *m, struct mlease *l);
bool locker_lease_issue(struct mds *m, struct session *s, struct mdentry *dn, uint64_t *seq, bool replay);
void locker_handle_lease(struct mds *m, struct conn *c, struct session *s, struct mdsp_caps *msg);

/* park.c */
struct mdentry *locker_dentry_at(struct mds *m, uint64_t dir, const char *name);
struct minode *locker_inode_at(struct mds *m, uint64_t ino);
void locker_gather_add(struct txn *t, uint64_t ino, uint32_t mask, const char *name);
void locker_wake(struct mds *m, uint64_t ino);

/* locker.c: a caps message parked behind its session's earlier requests
 * (park_caps) runs again, or goes back in line; consumes @w.  No lock held. */
void locker_caps_resume(struct mds *m, struct mwaiter *w);

#endif
