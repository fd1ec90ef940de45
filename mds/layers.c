/*
 * layers.c - the MDS's layers, and the calls that go up between them.
 *
 * mds/ is built as layers, each with a header of its own; a file includes
 * only the headers of its own layer and of the layers below it
 * (tools/check-layers-mds.sh checks it: ctest layers_mds).  Lowest first:
 *
 *   codec, journal_fmt      encoders, the journal's on-disk format
 *   net                     connections, readers, send queues
 *   mdcache                 the namespace in memory and its transactions
 *   journal, journal_tool   writer, expiry, replay; the offline tools
 *   purge, blocklist        journaled tables of their own
 *   locker                  caps and dentry leases, parked requests
 *   flock                   file locks
 *   session, prealloc       sessions, reconnect, inode preallocation
 *   server, authcaps        the POSIX semantics of every op; the caps mds of a key
 *   request                 the request pipeline (decode, admit, run, reply)
 *   auth, admin             the AUTH handshake; admin commands
 *   layers, main            this wiring; start-up and shutdown
 *
 * Where a lower layer must reach a higher one (a reader hands a decoded
 * message up, the namespace tells the caps that an inode leaves memory,
 * caps resume a parked request), it calls through an ops table it declares
 * and the layer above fills; this file fills them all, once, before
 * anything runs, so that no lower file names a higher one.
 */
#include "mds/mds.h"
#include "mds/admin.h"
#include "mds/auth.h"
#include "mds/authcaps.h"
#include "mds/blocklist.h"
#include "mds/flock.h"
#include "mds/journal.h"
#include "mds/layers.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/net.h"
#include "mds/purge.h"
#include "mds/request.h"
#include "mds/session.h"

static const struct net_ops net_ops = {
	.auth = auth_handle,
	.session = session_handle,
	.request = request_handle,
	.request_must_wait = request_must_wait,
	.request_hold = request_hold,
	.request_unhold = request_unhold,
	.caps = session_handle_caps,
	.conn_closed = session_conn_closed,
	.command = admin_command_json,
};

static const struct mdcache_hooks cache_hooks = {
	.inode_drop = locker_inode_drop,
	.dentry_drop = locker_dentry_drop,
	.keeps_orphan = locker_keeps_orphan,
	.note_orphan = locker_note_orphan,
	.stray_notify = locker_stray_notify,
	.dir_pinned = locker_dir_pinned,
	.recall = locker_recall,
	.purge_inode = purge_queue_inode,
	.purge_load = purge_load,
	.purge_replay_edit = purge_replay_edit,
	.blocklist_load = blocklist_load,
	.blocklist_replay_edit = blocklist_replay_edit,
	.session_load = session_load,
	.session_replay_edit = session_replay_edit,
};

static const struct journal_hooks journal_hooks = {
	.waiters_json = locker_waiters_json,
	.space_freed = net_space_freed,
};

static const struct locker_ops locker_ops = {
	.request_resume = request_resume,
	.session_evict = session_evict,
	.may_write_locked = authcaps_may_write_locked,
	.replay_left_locked = session_replay_left_locked,
};

static const struct flock_ops flock_ops = {
	.reconnect_hold_locked = session_reconnect_hold_locked,
};

void mds_layers_wire(struct mds *m)
{
	net_set_ops(m, &net_ops);
	mdcache_set_hooks(m, &cache_hooks);
	journal_set_hooks(m, &journal_hooks);
	locker_set_ops(m, &locker_ops);
	flock_set_ops(m, &flock_ops);
}
