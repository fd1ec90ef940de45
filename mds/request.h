/*
 * request.h - private to mds/: the request pipeline: decode, admit, run,
 * answer, park (request.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_REQUEST_H
#define LOLIGO_MDS_REQUEST_H

#include "mds/mds.h"

struct jwaiter;

/* request_must_wait - whether @msg (a REQUEST) would wait for the journal's space now */
bool request_must_wait(struct mds *m, const struct mdsp_msg *msg);
/* request_hold / request_unhold - a request held for the journal's space, listed as throttled meanwhile */
struct jwaiter *request_hold(struct mds *m, struct conn *c, const struct mdsp_msg *msg);
void request_unhold(struct mds *m, struct jwaiter *w);
/* request_handle - run a request; a request that must wait for revokes is
 * parked and @msg is left empty (the waiter owns its contents). */
void request_handle(struct mds *m, struct conn *c, struct mdsp_msg *msg);
/* request_resume - run a parked request again (locker.c); consumes @w.  No lock held. */
void request_resume(struct mds *m, struct mwaiter *w);

#endif
