/*
 * net.h - private to mds/: connections: the listener, reader threads, the
 * send queues (net.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_NET_H
#define LOLIGO_MDS_NET_H

#include "mds/mds.h"

struct jwaiter;

/*
 * struct net_ops - where a reader thread hands what it decoded: the layers
 * above the connections (auth, sessions, the request pipeline, caps,
 * admin).  Called on the connection's reader thread, no lock held.
 */
struct net_ops {
	int (*auth)(struct mds *m, struct conn *c, struct mdsp_auth *a);
	void (*session)(struct mds *m, struct conn *c, struct mdsp_session *msg);
	void (*request)(struct mds *m, struct conn *c, struct mdsp_msg *msg);
	/* an event loop asks before it runs a request: would it wait for the
	 * journal's space (journal_throttle)?  Then the loop holds it and the
	 * connection's later frames, and runs it when space frees (net_space_freed) */
	bool (*request_must_wait)(struct mds *m, const struct mdsp_msg *msg);
	/* ... and while it holds one, it is listed as throttled (`ops`) */
	struct jwaiter *(*request_hold)(struct mds *m, struct conn *c, const struct mdsp_msg *msg);
	void (*request_unhold)(struct mds *m, struct jwaiter *w);
	void (*caps)(struct mds *m, struct conn *c, struct mdsp_caps *msg);
	/* the reader ends: the sessions and parked requests of @c let go of it */
	void (*conn_closed)(struct mds *m, struct conn *c);
	int (*command)(struct mds *m, const char *json, char **out);
};

/* net_space_freed - the journal freed space: the loops look at the requests they hold. */
void net_space_freed(struct mds *m);

/* net_set_ops - register @ops (static storage) before net_start(). */
void net_set_ops(struct mds *m, const struct net_ops *ops);

/*
 * net_bind - bind the MDS's socket to @addr:@port (0: ephemeral; m->port
 * says which) without listening: a standby keeps its port but refuses
 * connections, so clients go on to the active.  net_listen_now() starts
 * listening once this daemon holds the rank; net_listen() does both.
 */
int net_bind(struct mds *m, const char *addr, int port);
int net_listen_now(struct mds *m);
int net_listen(struct mds *m, const char *addr, int port);
int net_start(struct mds *m);
/* net_quiesce - stop accepting connections and running requests (m->draining);
 * the connections stay open for the replies still to come.  No locks held. */
void net_quiesce(struct mds *m);
/*
 * net_flush - wait until every connection's queued replies are written and
 * acknowledged by the peer (nothing in the socket's send queue), or it is
 * dead, until @deadline_ns.  Return: the connections not flushed.
 * No locks held.
 */
unsigned net_flush(struct mds *m, uint64_t deadline_ns);
void net_stop(struct mds *m);
/* net_free - what net_start() left after net_stop() (the loops' array, which
 * the journal's hook may look at until journal_stop()). */
void net_free(struct mds *m);
void conn_get(struct conn *c);
void conn_put(struct conn *c);
/* conn_send_frame - patch seq and crc of the frame in @b and send it. */
int conn_send_frame(struct conn *c, struct mdsp_buf *b);
/* conn_send_frame_locked - the same; caller holds c->send_lock. */
int conn_send_frame_locked(struct conn *c, struct mdsp_buf *b);
int conn_send_msg(struct conn *c, struct mdsp_msg *msg);
void conn_shutdown(struct conn *c);
/* conn_uncork - on @c's reader thread: send the replies it queued while working
 * through a batch of requests (before anything that may wait). */
void conn_uncork(struct conn *c);

#endif
