/*
 * locker.c - capabilities and dentry leases: the MDS's half of cache
 * coherency between clients (DESIGN.md section 7).  This file has the caps
 * and the rules below; lease.c the dentry leases; park.c the requests
 * parked until revokes are acked; locker_priv.h what the three share.
 *
 * A client may cache a part of an inode only while the MDS says so, with a
 * cap bit per part (proto.h): As (mode, owner), Ls (nlink), Fs (size and
 * times; a directory's entries), Fc (file data), and Fr/Fw/Fb (read, write,
 * buffer writes).  A client may cache that a name maps to an inode only
 * while it holds a lease on that dentry.  Before anything a client caches
 * changes, the MDS revokes it from every other client, waits for the acks
 * and only then makes the change; the client that asked gets the new state
 * in its reply.  So two clients never see each other's data or names stale
 * once a conflicting change has returned.
 *
 * What we keep from Ceph's Locker and what we leave out, and why:
 *  - Ceph runs a lock state machine per part (SimpleLock, ScatterLock,
 *    FileLock: SYNC, LOCK, MIX, EXCL and a dozen transitions) so that
 *    several MDS ranks can share an inode and clients may change some
 *    metadata locally (Ax, Xx, async dirops).  loligo has one MDS and every
 *    metadata change is an MDS request, so the only client-side changes are
 *    file writes, and the directory operations a client holding Dc on the
 *    directory answers itself and sends after (creates, mkdirs, unlinks,
 *    rmdirs, and setattrs of files in it: client/asyncdir.c,
 *    asyncunlink.c; below).  A
 *    part's "state" is therefore what the caps issued say, and the only
 *    transient state is "gathering": a request waits for
 *    others to give bits up, and while it waits nobody is given them (so a
 *    stream of readers cannot starve a chmod).  `dump cache` names the file
 *    states as Ceph would: sync (readers cache), excl (one client has
 *    everything and buffers), mix (several clients with Fw, or a writer and
 *    readers: no caching, no buffering, synchronous I/O).
 *  - Issue rules: Fw and Fr to anyone that opens the file for it; Fs and Fc
 *    only while no other client holds Fw (a size that changes under a
 *    reader is not cacheable); Fb only to a client that is alone on the
 *    file's data.  An open for writing takes Fs/Fc/Fb from the others, an
 *    open for reading takes Fb (close-to-open: what a writer buffered is
 *    flushed before the open returns), a truncate or setattr of times takes
 *    Fs/Fc/Fb, chmod/chown take As, link/unlink take Ls, and a namespace
 *    change in a directory takes the others' Fs on it and their leases on
 *    the names it changes.  A getattr takes nothing: a reader without Fs
 *    asks the MDS each time and sees the size the writer last flushed
 *    (monotonic: flushed sizes only grow), so a stat loop against a writer
 *    does not ping-pong caps the way Ceph's filelock would.
 *  - No bit is added to a cap while a revoke on it is in flight, so an ack
 *    of the revoke's sequence number (or later) proves the client holds no
 *    more than what it was asked to keep.  Replies carry the cap's sequence;
 *    the client applies only sequences newer than what it has.
 *  - Requests wait without blocking anything: an op that finds bits to
 *    revoke returns LOCKER_WAIT before it changes anything, the request is
 *    parked here (struct mwaiter) and the reader thread goes on reading, so
 *    the acks of its own client (and everyone else's) keep flowing (park.c).  An
 *    ack, release or session loss marks the waiters of that inode ready and
 *    they run again from the start on the thread that delivered it (Ceph's
 *    C_MDS_RetryRequest).  A client that does not ack within
 *    mds_session_timeout loses its session, and with it its caps.
 *  - Dc (MDSP_CAP_DIR_CREATE, issue 13.3: Ceph's CEPH_CAP_DIR_CREATE): one
 *    session may create in a directory and answer the creates itself
 *    (client/asyncdir.c, with inos delegated to it, prealloc.c).  It is
 *    issued only while nobody else holds more than the pin on the
 *    directory, and while it is held nobody else gets more; any other
 *    session's request that names the directory (or looks it up) revokes
 *    it first (locker_want_dir) and waits: the holder acks after the
 *    creates it sent, on the same connection, and those never park here
 *    (nobody else holds caps on the directory), so they run first.
 *  - Caps are not journaled.  After a restart, clients re-assert what they
 *    hold in RECONNECT (caps and leases), and until the reconnect phase is
 *    over no new bits are issued, so nothing granted can conflict with a
 *    cap not yet re-asserted (Ceph's reconnect phase).
 *  - Orphans (Ceph's stray directory): a regular file whose last link goes
 *    while some session has it open (wants file caps) moves to the
 *    journaled "mds_stray" table instead of being purged.  It is purged when
 *    nobody has it open any more, also after a restart: strays load at
 *    start and are checked once the reconnect phase is over.
 *
 * Everything here runs under mds->lock.  Messages to clients are sent
 * under it too (conn_send_msg never blocks: lock order mds->lock ->
 * conn->send_lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/locker.h"
#include "mds/locker_priv.h"
#include "mds/mdcache.h"
#include "mds/rstat.h"
#include "perm/perm.h"
#include "mds/net.h"
#include "mds/purge.h"

struct perf_counter locker_c_lease_revokes, locker_c_parked, locker_c_resumed, locker_c_ordered;   /* lease.c, park.c */
static struct perf_counter c_revokes, c_grants, c_acks_late, c_flushes, c_caps_parked,
	c_orphans, c_orphans_purged, c_reconnect_caps, c_recalls, c_recalls_answered, c_recall_evictions;
static struct hist h_revoke_lat;

void locker_set_ops(struct mds *m, const struct locker_ops *ops)
{
	m->locker_ops = ops;
}

void locker_init(struct mds *m)
{
	CDS_INIT_LIST_HEAD(&m->revoking);
	CDS_INIT_LIST_HEAD(&m->revoking_leases);
	m->waiters = NULL;
	m->waiters_tail = &m->waiters;
}

static uint64_t timeout_ns(void)
{
	double v = cfg_double(CFG_mds_session_timeout);

	return v > 0 ? (uint64_t)(v * 1e9) : 0;
}

/* An ack later than this is late (MDS_CLIENT_LATE_RELEASE, acks_late). */
static uint64_t late_ns(void)
{
	double v = cfg_double(CFG_mds_revoke_cap_timeout);

	return v > 0 ? (uint64_t)(v * 1e9) : UINT64_MAX;
}

/* A revoke sent at @sent_ns was answered (ack or release): its latency. */
void locker_revoke_answered(uint64_t sent_ns)
{
	uint64_t took = now_mono_ns() - sent_ns;

	hist_add(&h_revoke_lat, took);
	if (took >= late_ns())
		perf_inc(&c_acks_late, 1);
}

uint32_t locker_gathering(const struct minode *in)
{
	uint32_t mask = 0;
	int i;

	if (!in->gather)
		return 0;
	for (i = 0; i < NBITS; i++)
		if (in->gather->cnt[i])
			mask |= 1u << i;
	return mask;
}

/* ---- caps ------------------------------------------------------------------ */

/*
 * @s's cap on @in: looked up in the session's index, not by walking
 * in->caps (a file every client lists has a cap per session, and a
 * listing asks once per entry).
 */
struct mcap *locker_cap_find(struct minode *in, struct session *s)
{
	struct mcap *cap;

	rcu_read_lock();
	cap = xa_load(&s->cap_index, in->a.ino);
	rcu_read_unlock();
	return cap && cap->in == in ? cap : NULL;
}

static struct mcap *cap_add(struct minode *in, struct session *s)
{
	struct mcap *cap = mds_obj_alloc(MDS_MEM_CAP, sizeof(*cap));

	if (!cap)
		return NULL;
	/* one cap per session and inode; without an index entry there is
	 * no cap (issuing nothing is always safe) */
	if (xa_insert(&s->cap_index, in->a.ino, cap)) {
		mds_obj_free(MDS_MEM_CAP, cap, sizeof(*cap));
		return NULL;
	}
	cap->in = in;
	cap->s = s;
	CDS_INIT_LIST_HEAD(&cap->revoke_item);
	cds_list_add_tail(&cap->in_item, &in->caps);
	cds_list_add_tail(&cap->s_item, &s->caps);
	s->ncaps++;
	return cap;
}

static void cap_del(struct mcap *cap)
{
	xa_erase(&cap->s->cap_index, cap->in->a.ino);
	cds_list_del(&cap->in_item);
	cds_list_del(&cap->s_item);
	if (cap->revoke_seq)
		cds_list_del(&cap->revoke_item);
	if (cap->revoke_seq && cap->recall)
		locker_recall_answered(cap->s);
	cap->s->ncaps--;
	mds_obj_free(MDS_MEM_CAP, cap, sizeof(*cap));
}

void locker_send_caps(struct session *s, const struct mdsp_caps *cm)
{
	struct mdsp_msg msg;

	if (!s->conn)
		return;      /* disconnected: revokes are sent again at reconnect */
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_CAPS;
	msg.caps = *cm;
	conn_send_msg(s->conn, &msg);
}

static void send_cap_msg(struct mcap *cap, uint32_t op)
{
	struct mdsp_caps cm;

	memset(&cm, 0, sizeof(cm));
	cm.op = op;
	cm.ino = cap->in->a.ino;
	cm.caps = cap->pending;
	cm.wanted = cap->wanted;
	cm.seq = cap->seq;
	cm.attr = cap->in->a;
	locker_send_caps(cap->s, &cm);
}

/* Take @drop away from @cap: the client is to keep cap->pending & ~drop. */
static void cap_revoke(struct mds *m, struct mcap *cap, uint32_t drop)
{
	char was[24], keep[24];

	drop &= cap->pending;
	if (!drop)
		return;
	cap->pending &= ~drop;
	if (cap->pending & ~(uint32_t)MDSP_CAP_PIN)
		cap->pending |= MDSP_CAP_PIN;   /* anything cached keeps the pin */
	cap->seq++;
	if (!cap->revoke_seq) {
		cap->revoke_ns = now_mono_ns();
		cds_list_add_tail(&cap->revoke_item, &m->revoking);
	}
	cap->revoke_seq = cap->seq;
	perf_inc(&c_revokes, 1);
	dout(MDS, 10, "revoke %s of inode %" PRIx64 " from session %" PRIu64 ": keeps %s (seq %" PRIu64 ")",
	     mdsp_caps_str(drop, was, sizeof(was)), cap->in->a.ino, cap->s->id,
	     mdsp_caps_str(cap->pending, keep, sizeof(keep)), cap->seq);
	send_cap_msg(cap, MDSP_CAPS_REVOKE);
}

/* The client has acked everything up to revoke_seq: it holds only pending. */
static void cap_revoke_done(struct mcap *cap)
{
	if (!cap->revoke_seq)
		return;
	locker_revoke_answered(cap->revoke_ns);
	if (cap->recall)
		locker_recall_answered(cap->s);
	cap->recall = false;
	cap->issued = cap->pending;
	cap->revoke_seq = 0;
	cds_list_del(&cap->revoke_item);
	CDS_INIT_LIST_HEAD(&cap->revoke_item);
}

/*
 * What @mine (the session's cap, may be NULL) may be given on @in now.
 * During the reconnect phase nothing new is given (a cap not re-asserted
 * yet may conflict), except to the replay of a request the session saw
 * applied before the restart (@replay): it held those caps then.
 */
static uint32_t allowed_for(struct mds *m, struct minode *in, struct mcap *mine, bool replay)
{
	uint32_t allowed = MDSP_CAP_ALL & ~(uint32_t)MDSP_CAP_XATTR_SHARED, others = 0;
	struct mcap *cap;

	if ((m->reconnecting && !replay) || (mine && mine->revoke_seq))
		return 0;
	if (!S_ISREG(in->a.mode))
		allowed &= ~(uint32_t)OPEN_BITS;
	/* a directory with an ACL: its creates inherit the default one, which
	 * the MDS does (server.c inherit_acl), and who may create or remove
	 * names in it is the access one's to say, which clients do not keep;
	 * so nobody answers them itself (a Dc holder knows it has no ACL) */
	if (!S_ISDIR(in->a.mode) || xattr_find(in, MDSP_XATTR_ACL_DEFAULT) || xattr_find(in, MDSP_XATTR_ACL_ACCESS))
		allowed &= ~(uint32_t)Dc;
	/* under a quota every create must reach the MDS to be counted and
	 * to learn its room (rstat_quota_above) */
	else if (rstat_quota_above(m, in))
		allowed &= ~(uint32_t)Dc;
	cds_list_for_each_entry(cap, &in->caps, in_item)
		if (cap != mine)
			others |= cap->issued | cap->pending;
	/* Dc: the directory is one client's alone (it answers creates in it
	 * itself), so nobody else caches anything of it but the pin */
	if (others & Dc)
		allowed &= MDSP_CAP_PIN;
	if (others & ~(uint32_t)MDSP_CAP_PIN)
		allowed &= ~(uint32_t)Dc;
	if (others & Fw)
		allowed &= ~(uint32_t)(Fs | Fc | Fb);
	if (others & FILE_BITS)
		allowed &= ~(uint32_t)Fb;
	return allowed & ~locker_gathering(in);
}

/*
 * Give @s the bits of @want that may be had on @in now (plus what its open
 * files want).  Returns the caps the client is to hold (0: none, then *seq
 * is 0 too).
 */
static uint32_t issue(struct mds *m, struct session *s, struct minode *in, uint32_t want, uint64_t *seq,
		      bool replay)
{
	struct mcap *cap = locker_cap_find(in, s);
	uint32_t allowed, add;

	/* it holds all of it already (the common case of a client that keeps
	 * its caps): nothing to add, whatever may be had now.  The grant in
	 * the reply still gets a seq of its own, as issue_seq (Ceph's
	 * encode_inodestat: issue_norevoke, set_last_issue): a release the
	 * client sent before it saw this reply is older and ignored
	 * (handle_inode_caps), so the grant in flight holds on both sides and
	 * is not installed over a cap we deleted (client/caps.c lc_caps_seen) */
	if (cap && !((want | cap->wanted | MDSP_CAP_PIN) & ~cap->pending)) {
		cap->issue_seq = ++cap->seq;
		*seq = cap->seq;
		/* s->caps in the order of last use: recall takes the coldest */
		cds_list_del(&cap->s_item);
		cds_list_add_tail(&cap->s_item, &s->caps);
		return cap->pending;
	}
	allowed = allowed_for(m, in, cap, replay);
	*seq = 0;
	add = (want | (cap ? cap->wanted : 0)) & allowed;
	if (!cap) {
		if (!add)
			return 0;
		cap = cap_add(in, s);
		if (!cap)
			return 0;
	}
	add |= MDSP_CAP_PIN;
	if ((cap->pending | add) != cap->pending) {
		cap->pending |= add;
		cap->issued |= add;
		perf_inc(&c_grants, 1);
	}
	cap->issue_seq = ++cap->seq;     /* also with nothing added: see above */
	*seq = cap->seq;
	cds_list_del(&cap->s_item);
	cds_list_add_tail(&cap->s_item, &s->caps);
	return cap->pending;
}

/* After @in's caps shrank: give others what they want and may have now. */
static void eval_grants(struct mds *m, struct minode *in)
{
	struct mcap *cap;

	cds_list_for_each_entry(cap, &in->caps, in_item) {
		uint32_t add = cap->wanted & allowed_for(m, in, cap, false) & ~cap->pending;
		char cs[24];

		if (!add)
			continue;
		cap->pending |= add;
		cap->issued |= add;
		cap->issue_seq = ++cap->seq;
		perf_inc(&c_grants, 1);
		dout(MDS, 10, "grant inode %" PRIx64 " to session %" PRIu64 ": %s (seq %" PRIu64 ")", in->a.ino,
		     cap->s->id, mdsp_caps_str(cap->pending, cs, sizeof(cs)), cap->seq);
		send_cap_msg(cap, MDSP_CAPS_GRANT);
	}
}

bool locker_in_use(const struct minode *in)
{
	struct mcap *cap;

	if (!in->caps.next)
		return false;
	cds_list_for_each_entry(cap, &in->caps, in_item)
		if ((cap->wanted | cap->issued) & (Fr | Fw))
			return true;
	return false;
}

bool locker_open_by(const struct minode *in, const struct session *s)
{
	struct mcap *cap = s ? locker_cap_find((struct minode *)in, (struct session *)s) : NULL;

	return cap && ((cap->wanted | cap->issued) & (Fr | Fw));
}

bool locker_referenced(const struct minode *in)
{
	return in->caps.next && in->caps.next != &in->caps;
}

bool locker_keeps_orphan(const struct minode *in)
{
	return S_ISREG(in->a.mode) ? locker_in_use(in) : locker_referenced(in);
}

void locker_stray_notify(struct mds *m, struct minode *in)
{
	struct mcap *cap;

	if (!in->caps.next)
		return;
	cds_list_for_each_entry(cap, &in->caps, in_item) {
		if ((cap->wanted | cap->issued) & (Fr | Fw))
			continue;    /* open there: it keeps what it has */
		if (cap->pending & ~(uint32_t)MDSP_CAP_PIN)
			cap_revoke(m, cap, cap->pending & ~(uint32_t)MDSP_CAP_PIN);
		else
			send_cap_msg(cap, MDSP_CAPS_GRANT);   /* the pin alone: the attributes say nlink 0 */
	}
}

/* Some session other than @s has @in open. */
static bool in_use_by_others(const struct minode *in, const struct session *s)
{
	struct mcap *cap;

	if (!in->caps.next)
		return false;
	cds_list_for_each_entry(cap, &in->caps, in_item)
		if (cap->s != s && ((cap->wanted | cap->issued) & (Fr | Fw)))
			return true;
	return false;
}

/* ---- what ops want -------------------------------------------------------------- */

void locker_want_caps(struct mds *m, struct txn *t, struct minode *in, uint32_t mask)
{
	struct mcap *cap;
	bool blocked = false;

	if (!in->caps.next)
		return;
	cds_list_for_each_entry(cap, &in->caps, in_item) {
		if (cap->s == t->s || !(cap->issued & mask))
			continue;
		cap_revoke(m, cap, mask);
		blocked = true;
	}
	if (blocked)
		locker_gather_add(t, in->a.ino, mask, NULL);
}

void locker_want_no_dir_create(struct mds *m, struct txn *t, struct minode *in)
{
	struct mcap *cap;

	locker_want_caps(m, t, in, Dc);
	if (!in->caps.next)
		return;
	cds_list_for_each_entry(cap, &in->caps, in_item)
		if (cap->s == t->s && (cap->pending & Dc))
			cap_revoke(m, cap, Dc);
}

void locker_want_dentry(struct mds *m, struct txn *t, struct mdentry *dn)
{
	struct mlease *l;
	bool blocked = false;

	for (l = dn->leases; l; l = l->next) {
		if (l->s == t->s)
			continue;
		locker_lease_revoke(m, l);
		blocked = true;
	}
	if (blocked)
		locker_gather_add(t, dn->dir->ino, 0, dn->name);
}

void locker_want_dir(struct mds *m, struct txn *t, struct minode *in)
{
	struct mcap *cap;

	if (!in->caps.next || !S_ISDIR(in->a.mode))
		return;
	cds_list_for_each_entry(cap, &in->caps, in_item)
		if (cap->s != t->s && ((cap->issued | cap->pending) & Dc)) {
			locker_want_caps(m, t, in, Dc);
			return;
		}
}

void locker_want_open(struct mds *m, struct txn *t, struct minode *in, uint32_t oflags)
{
	bool write = (oflags & O_ACCMODE) != O_RDONLY || (oflags & O_TRUNC);

	if (!S_ISREG(in->a.mode))
		return;
	/* a writer takes the others' caches; a reader what they buffered */
	locker_want_caps(m, t, in, write ? (Fs | Fc | Fb) : Fb);
}

static uint32_t open_want(const struct mdsp_request *req)
{
	uint32_t acc;

	/* an O_TMPFILE file is open from birth: without the wants, it
	 * would be an orphan nobody keeps, purged at the next tick */
	if (req->op != MDSP_OP_OPEN && req->op != MDSP_OP_CREATE && req->op != MDSP_OP_TMPFILE)
		return 0;
	acc = req->oflags & O_ACCMODE;
	return (Fr | Fc) | (acc != O_RDONLY ? (Fw | Fb) : 0);
}

/* Ops after which the session may want to create in the trace directory
 * itself (Dc): it just created or removed a name there. */
static bool op_wants_dir_create(uint32_t op)
{
	switch (op) {
	case MDSP_OP_CREATE:
	case MDSP_OP_MKNOD:
	case MDSP_OP_MKDIR:
	case MDSP_OP_SYMLINK:
	case MDSP_OP_UNLINK:
	case MDSP_OP_RMDIR:
		return true;
	default:
		return false;
	}
}

static bool op_leases_trace(uint32_t op)
{
	switch (op) {
	case MDSP_OP_LOOKUP:
	case MDSP_OP_CREATE:
	case MDSP_OP_MKNOD:
	case MDSP_OP_MKDIR:
	case MDSP_OP_SYMLINK:
	case MDSP_OP_LINK:
	case MDSP_OP_RENAME:
		return true;
	default:
		return false;
	}
}

void locker_fill_reply(struct mds *m, struct session *s, const struct mdsp_request *req,
		       struct mdsp_reply *rep, struct txn *t)
{
	struct minode *tin = NULL, *din = NULL;
	bool replay = req->flags & MDSP_REQ_REPLAY;
	uint32_t i;

	if (!s)
		return;
	if (rep->has_dir && rep->dir.ino)
		din = locker_inode_at(m, rep->dir.ino);
	if (din)
		rep->dir_caps = issue(m, s, din, BASE_WANT | (!rep->result && op_wants_dir_create(req->op) ? Dc : 0),
				      &rep->dir_cap_seq, replay);
	if (rep->result)
		return;
	if (rep->has_target && rep->target.ino)
		tin = locker_inode_at(m, rep->target.ino);
	if (tin) {
		uint32_t ow = S_ISREG(tin->a.mode) ? open_want(req) : 0;
		/* the victim of an unlink becomes an orphan at txn_finish, after
		 * this: the same test it will make */
		bool orphan = tin->in_stray || (tin->a.nlink == 0 && locker_keeps_orphan(tin));

		/* the flag tells the client that others have it open: it must
		 * not purge the data (the MDS does, at the last close); open
		 * only here, the client purges at its own last close */
		if (orphan && in_use_by_others(tin, s))
			rep->trace_flags |= MDSP_TRACE_ORPHAN;
		if (tin->a.nlink == 0 && !orphan) {
			rep->caps = 0;          /* gone: nothing to cache */
			rep->cap_seq = 0;
		} else {
			/* the directory it just made is its alone: it may fill it itself */
			uint32_t dc = req->op == MDSP_OP_MKDIR && S_ISDIR(tin->a.mode) ? Dc : 0;

			rep->caps = issue(m, s, tin, (tin->a.nlink ? BASE_WANT : MDSP_CAP_PIN) | ow | dc,
					  &rep->cap_seq, replay);
			if (ow) {
				struct mcap *cap = locker_cap_find(tin, s);

				if (cap)
					cap->wanted |= ow;
			}
		}
	}
	if (op_leases_trace(req->op) && rep->has_dir && rep->dname && tin && tin != din) {
		struct mdentry *dn = locker_dentry_at(m, rep->dir.ino, rep->dname);

		if (dn && dn->ino == tin->a.ino && locker_lease_issue(m, s, dn, &rep->lease_seq, replay))
			rep->trace_flags |= MDSP_TRACE_LEASE;
	}
	if (req->op == MDSP_OP_READDIR && rep->nentries && rep->has_dir) {
		struct mdir *d;

		rcu_read_lock();
		d = xa_load(&m->dirs, rep->dir.ino);
		rcu_read_unlock();
		/* the session's cap and lease of each entry, looked up in one
		 * pass and prefetched: each is a miss in indexes of every inode
		 * and name the session holds, and the loop below, which needs
		 * them one after the other, then finds them in the cache */
		if (t && t->listed) {
			for (i = 0; i < rep->nentries; i++) {
				struct mlease *l = locker_lease_find(t->listed[i].dn, s);

				__builtin_prefetch(locker_cap_find(t->listed[i].in, s));
				__builtin_prefetch(l);
			}
		}
		for (i = 0; i < rep->nentries; i++) {
			struct mdsp_dirent *de = &rep->entries[i];
			struct minode *in;
			struct mdentry *dn;

			if (t && t->listed) {
				/* what op_readdir listed them from, under this lock */
				dn = t->listed[i].dn;
				in = t->listed[i].in;
			} else {
				in = locker_inode_at(m, de->inode.ino);
				dn = d ? mdir_lookup(d, de->name) : NULL;
			}

			if (in)
				de->caps = issue(m, s, in, BASE_WANT, &de->cap_seq, replay);
			if (dn && in && dn->ino == in->a.ino)
				de->lease = locker_lease_issue(m, s, dn, &de->lease_seq, replay);
		}
	}
}

/* ---- dropping state ------------------------------------------------------------- */

void locker_inode_drop(struct mds *m, struct minode *in)
{
	struct mcap *cap, *tmp;

	if (in->caps.next) {
		bool any = !cds_list_empty(&in->caps);

		cds_list_for_each_entry_safe(cap, tmp, &in->caps, in_item)
			cap_del(cap);
		if (any)
			locker_wake(m, in->a.ino);
	}
	free(in->gather);
	in->gather = NULL;
}

void locker_session_drop(struct mds *m, struct session *s)
{
	struct mcap *cap, *ctmp;
	struct mlease *l, *ltmp;

	if (!s->caps.next)
		return;
	cds_list_for_each_entry_safe(cap, ctmp, &s->caps, s_item) {
		struct minode *in = cap->in;

		cap_del(cap);
		if (in->in_stray)
			m->strays_unchecked = true;
		eval_grants(m, in);
	}
	cds_list_for_each_entry_safe(l, ltmp, &s->leases, s_item)
		locker_lease_del(l);
	locker_wake(m, 0);
}

bool locker_dir_pinned(struct mds *m, struct mdir *d, uint64_t lo, uint64_t hi)
{
	struct minode *in = locker_inode_at(m, d->ino);
	struct mdentry *dn;
	uint64_t idx = lo;

	if (!lo && hi == UINT64_MAX && in && in->caps.next && !cds_list_empty(&in->caps))
		return true;
	while ((dn = mdir_cookie_find(d, &idx)) && idx < hi) {
		if (dn->leases || dn->gather)
			return true;
		if (!dn->remote) {
			in = locker_inode_at(m, dn->ino);
			if (in && in->caps.next && !cds_list_empty(&in->caps))
				return true;
		}
		if (idx == UINT64_MAX)
			break;
		idx++;
	}
	return false;
}

/* ---- recall for cache pressure ----------------------------------------------------- */

/*
 * Past mds_cache_memory_limit (or mds_cache_size) with clean unused
 * directories all evicted, what keeps the cache big is what clients
 * cache: mdcache_trim asks for @want caps and leases back, and this shares
 * the request among the sessions (Ceph's Server::recall_client_state),
 * pacing itself instead of leaving it to mds_recall_* tuning:
 *  - each session is asked for its part of @want by its part of all the
 *    caps and leases held (the client holding most gives most back), at
 *    least one;
 *  - at most mds_recall_max_caps less what it was asked lately, a count
 *    that decays with half-life mds_recall_max_decay_rate: a client that
 *    gives back at once can be asked again at the next tick, but never for
 *    more than it could have answered meanwhile;
 *  - never below mds_min_caps_per_client (100) caps and leases;
 *  - nothing while an earlier recall of it is unanswered: a recall it is
 *    still working through (a writeback, its kernel's FORGETs) is not
 *    piled on, and a client that never answers is asked once.
 * @want itself follows how far over the limit the cache is, each tick
 * (mdcache_trim): the recall stops by itself as the cache comes under it.
 * A recall is a revoke of everything the cap has (or of the lease) on
 * the coldest of the session's caps (s->caps is kept in the order of last
 * use), none an open file wants.  A session that leaves it unanswered is
 * named by health MDS_CLIENT_RECALL after mds_recall_warning_timeout and
 * evicted after mds_recall_evict_timeout (0: never, the default, as Ceph:
 * nothing waits on a recall; a request that comes to need the bits
 * being recalled makes it an ordinary revoke, and the client is evicted at
 * mds_session_timeout as for any revoke).
 */
void locker_recall_answered(struct session *s)
{
	if (s->recall_inflight)
		s->recall_inflight--;
	s->recall_answered++;
	perf_inc(&c_recalls_answered, 1);
}

static void recall_decay(struct session *s, uint64_t now)
{
	double hl = cfg_double(CFG_mds_recall_max_decay_rate);

	if (hl <= 0)
		s->recall_decayed = 0;
	else if (s->recall_decayed_ns)
		s->recall_decayed *= exp2(-((double)mono_since(now, s->recall_decayed_ns) / 1e9) / hl);
	s->recall_decayed_ns = now;
}

/* Recall up to @n of @s's coldest caps and leases; returns how many went out. */
static uint64_t recall_session(struct mds *m, struct session *s, uint64_t n)
{
	uint64_t held = s->ncaps + s->nleases, ncap = held ? n * s->ncaps / held : 0, sent = 0;
	struct mcap *cap, *ctmp;
	struct mlease *l, *ltmp;

	if (s->ncaps && !ncap)
		ncap = 1;
	cds_list_for_each_entry_safe(cap, ctmp, &s->caps, s_item) {
		if (sent >= ncap)
			break;
		if (cap->wanted || cap->revoke_seq || !cap->pending || cap->in == m->root)
			continue;
		cap_revoke(m, cap, cap->pending);
		if (!cap->revoke_seq)
			continue;
		cap->recall = true;
		s->recall_inflight++;
		sent++;
	}
	cds_list_for_each_entry_safe(l, ltmp, &s->leases, s_item) {
		if (sent >= n)
			break;
		if (l->revoke_seq || l->dn->gather)
			continue;
		locker_lease_revoke(m, l);
		l->recall = true;
		s->recall_inflight++;
		sent++;
	}
	return sent;
}

void locker_recall(struct mds *m, uint64_t want)
{
	uint64_t now = now_mono_ns(), total = 0, idx, maxc = cfg_uint(CFG_mds_recall_max_caps);
	uint64_t minc = cfg_uint(CFG_mds_min_caps_per_client);
	struct session *s;

	lockdep_assert_held(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		recall_decay(s, now);
		if (s->state == SESSION_OPEN && s->conn)
			total += s->ncaps + s->nleases;
	}
	if (!want || !total) {
		rcu_read_unlock();
		return;
	}
	xa_for_each(&m->sessions, idx, s) {
		uint64_t held = s->ncaps + s->nleases, ask, budget, n;

		if (s->state != SESSION_OPEN || !s->conn || held <= minc || s->recall_inflight)
			continue;
		ask = (uint64_t)ceil((double)want * (double)held / (double)total);
		if (ask > held - minc)
			ask = held - minc;
		budget = (double)maxc > s->recall_decayed ? maxc - (uint64_t)s->recall_decayed : 0;
		if (ask > budget)
			ask = budget;
		if (!ask)
			continue;
		n = recall_session(m, s, ask);
		s->recall_decayed += (double)n;
		s->recalled += n;
		perf_inc(&c_recalls, n);
		if (n)
			dout(MDS, 5, "cache pressure: recalled %" PRIu64 " of %" PRIu64 " caps and leases of session %"
				     PRIu64 " (%s; asked %" PRIu64 " of %" PRIu64 " wanted)",
			     n, held, s->id, s->client_name ? s->client_name : "?", ask, want);
	}
	rcu_read_unlock();
}

void locker_recall_laggards_locked(struct mds *m, uint64_t age_ns,
				   void (*fn)(void *arg, const struct session *s, double secs), void *arg)
{
	uint64_t now = now_mono_ns(), seen[64];
	unsigned nseen = 0, i;
	struct mcap *cap;
	struct mlease *l;
	const struct session *who;
	uint64_t since;

	lockdep_assert_held(&m->lock);
	/* in the order the revokes began: a session's first is its oldest */
	for (int pass = 0; pass < 2; pass++) {
		struct cds_list_head *head = pass ? &m->revoking_leases : &m->revoking, *pos;

		cds_list_for_each(pos, head) {
			if (pass) {
				l = cds_list_entry(pos, struct mlease, revoke_item);
				if (!l->recall)
					continue;
				who = l->s;
				since = l->revoke_ns;
			} else {
				cap = cds_list_entry(pos, struct mcap, revoke_item);
				if (!cap->recall)
					continue;
				who = cap->s;
				since = cap->revoke_ns;
			}
			if (mono_since(now, since) < age_ns)
				break;
			for (i = 0; i < nseen && seen[i] != who->id; i++)
				;
			if (i < nseen)
				continue;
			if (nseen == sizeof(seen) / sizeof(seen[0]))
				return;
			seen[nseen++] = who->id;
			fn(arg, who, (double)mono_since(now, since) / 1e9);
		}
	}
}

/* ---- orphans -------------------------------------------------------------------- */

/* Purge the strays nobody has open.  Caller holds mds->lock; the journal runs. */
static void purge_unused_strays(struct mds *m)
{
	struct minode *in;
	uint64_t idx, dead[64];
	int n = 0, i;

	m->strays_unchecked = false;
	rcu_read_lock();
	xa_for_each(&m->inodes, idx, in) {
		if (!in->in_stray || locker_keeps_orphan(in))
			continue;
		if (n == 64) {
			m->strays_unchecked = true;   /* the rest next tick */
			break;
		}
		dead[n++] = in->a.ino;
	}
	rcu_read_unlock();
	for (i = 0; i < n; i++) {
		struct txn t;
		char key[32];

		in = locker_inode_at(m, dead[i]);
		if (!in)
			continue;
		txn_init(&t);
		snprintf(key, sizeof(key), "%016" PRIx64, in->a.ino);
		txn_edit(&t, EDIT_RM, OID_STRAY, key, NULL, 0, NULL);
		purge_queue_inode(m, &t, in);
		if (m->nfiles)
			m->nfiles--;
		{
			uint8_t v[8];

			le64_put(v, m->nfiles);
			txn_edit(&t, EDIT_SET, OID_TABLE, "nfiles", v, 8, NULL);
		}
		dinfo(MDS, "orphan inode %" PRIx64 " closed everywhere: purged", in->a.ino);
		perf_inc(&c_orphans_purged, 1);
		minode_free(m, in);
		journal_submit_locked(m, &t, NULL);
		txn_free(&t);
	}
}

/* ---- messages from clients ------------------------------------------------------- */

static struct mdsp_buf flush_ack_frame(struct mcap *cap, uint64_t ino, uint64_t flush_tid)
{
	struct mdsp_msg msg;
	struct mdsp_buf b;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_CAPS;
	msg.caps.op = MDSP_CAPS_FLUSH_ACK;
	msg.caps.ino = ino;
	msg.caps.flush_tid = flush_tid;
	if (cap) {
		msg.caps.caps = cap->pending;
		msg.caps.seq = cap->seq;
		msg.caps.attr = cap->in->a;
	}
	mdsp_buf_init(&b);
	mdsp_encode(&b, &msg);
	return b;
}

/*
 * What the file's objects hold, as a flush says it changed: its removals
 * (punches), then its additions (writebacks, fallocates).  A flush of size
 * or mtime from a client too old to say (no has_ext) wrote bytes we cannot
 * place: the blocks become unknown (the client counts them then, objio.c)
 * until a truncate to 0.  Return: whether the inode changed.
 */
static bool apply_extents(struct minode *in, const struct mdsp_caps *msg)
{
	uint64_t before = in->a.blocks;
	int r = 0;

	if (!S_ISREG(in->a.mode) || in->a.blocks == MDSP_BLOCKS_UNKNOWN)
		return false;
	if (!msg->has_ext) {
		if (!(msg->dirty & (MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME)))
			return false;
		in->a.blocks = MDSP_BLOCKS_UNKNOWN;
		mdsp_extset_clear(&in->ext);
		return true;
	}
	for (uint32_t i = 0; i < msg->n_ext_rm && !r; i++)
		r = mdsp_extset_remove_exact(&in->ext, msg->ext_rm[i].off, msg->ext_rm[i].len, MDSP_INODE_EXT_MAX);
	for (uint32_t i = 0; i < msg->n_ext_add && !r; i++)
		r = mdsp_extset_add(&in->ext, msg->ext_add[i].off, msg->ext_add[i].len, MDSP_INODE_EXT_MAX);
	if (r) {
		in->a.blocks = MDSP_BLOCKS_UNKNOWN;   /* out of memory: unknown, never wrong */
		mdsp_extset_clear(&in->ext);
		return true;
	}
	inode_blocks_sync(in);
	return in->a.blocks != before || msg->n_ext_rm || msg->n_ext_add;
}

/*
 * Apply the dirty size/mtime an ACK or FLUSH carries.  The size is the end
 * of what the client wrote: the file grows to it, never shrinks (a truncate
 * by someone else in between stays).  A session that has caps on the inode
 * may: it held Fw when it wrote (a flush sent again after a restart may
 * come when it gave Fw up already, at close); a session without any (an
 * evicted one, whose caps went) may not.
 */
static bool apply_flush(struct mds *m, struct mcap *cap, const struct mdsp_caps *msg, struct txn *t)
{
	struct minode *in = cap->in;
	uint64_t old_size = in->a.size;
	bool changed = false;

	if (!msg->dirty)
		return false;
	/* a key whose caps do not let it write here (allow r, or the file
	 * moved out of its paths) changes nothing by a flush either; the
	 * flush is still acked, so the client does not wait for it */
	if (m->locker_ops && m->locker_ops->may_write_locked && !m->locker_ops->may_write_locked(m, cap->s, in)) {
		dout(MDS, 1, "session %" PRIu64 " (%s): cap flush of ino %" PRIx64 " ignored: its caps mds "
		     "do not allow writes there", cap->s->id, cap->s->auth_name, in->a.ino);
		return false;
	}
	if (apply_extents(in, msg))
		changed = true;
	if ((msg->dirty & MDSP_DIRTY_SIZE) && msg->attr.size > in->a.size) {
		in->a.size = msg->attr.size;
		changed = true;
	}
	if (msg->dirty & MDSP_DIRTY_MTIME) {
		in->a.mtime = msg->attr.mtime;
		if (msg->attr.mtime.sec > in->a.ctime.sec ||
		    (msg->attr.mtime.sec == in->a.ctime.sec && msg->attr.mtime.nsec > in->a.ctime.nsec))
			in->a.ctime = msg->attr.mtime;
		changed = true;
	}
	if (changed) {
		in->a.change++;
		txn_dirty(t, in);
		/* the size counts in the tree's rbytes from now on (rstat.c) */
		rstat_inode_changed(m, t, in, old_size);
	}
	perf_inc(&c_flushes, 1);
	(void)m;
	return changed;
}

/*
 * The client keeps only @caps (it gave the rest up on its own), as of our
 * message @seq.  Bits we granted after @seq it may not have seen yet: its
 * message says nothing of them, so it changes nothing.  A revoke after
 * @seq only takes bits away, so a drop sent before the client saw it
 * still holds for the bits the revoke lets it keep (a close's Fr/Fw while
 * the revoke of Fb is on its way: once ignored, the MDS kept Fw for the
 * client for good, gave nobody Fs/Fc on the file again and never purged
 * it as an orphan).  The bits the revoke takes go only with its ack: the
 * client sends that once its kernel dropped what it cached under them and
 * its buffered data is written, which its message before says nothing of.
 */
static void cap_client_drops(struct mcap *cap, uint32_t caps, uint64_t seq)
{
	uint32_t keep = caps ? caps | MDSP_CAP_PIN : 0;

	if (seq < cap->issue_seq)
		return;       /* it has not seen our latest grant yet */
	if (cap->revoke_seq && seq < cap->revoke_seq)
		keep |= cap->issued & ~cap->pending;    /* being revoked: gone with the ack */
	cap->pending &= keep;
	cap->issued &= keep;
	if (cap->revoke_seq && cap->issued == cap->pending)
		cap_revoke_done(cap);
}

/*
 * A flush (or an ack carrying dirty metadata of an inode the session holds
 * no cap on) while an earlier request of the session waits in its ordered
 * list (park.c): a replayed or resent create of that very inode, say, that
 * parked for a revoke, or waits for the end of the reconnect phase, or a
 * replayed truncate the client wrote after.  It waits behind it: handled
 * now, it would be acked without being applied (no inode yet), or undone.
 * Takes @msg's contents.
 */
static void park_caps(struct mds *m, struct conn *c, struct session *s, struct mdsp_caps *msg)
{
	struct mdsp_msg mm = { .type = MDSP_MSG_CAPS };
	struct mwaiter *w;
	struct txn t;

	mm.caps = *msg;
	memset(msg, 0, sizeof(*msg));
	txn_init(&t);
	t.s = s;
	w = locker_park(m, c, &mm, now_mono_ns(), &t);
	txn_free(&t);
	if (!w) {
		/* not acked: the client sends it again after the reconnect
		 * that closing the connection makes it do */
		derr(MDS, "session %" PRIu64 ": no memory to hold a cap flush of ino %" PRIx64 ": closing its connection",
		     s->id, mm.caps.ino);
		mdsp_msg_free(&mm);
		conn_shutdown(c);
		return;
	}
	w->seq = ++s->req_seq;
	locker_order_add(s, w);
	perf_inc(&c_caps_parked, 1);
	dout(MDS, 10, "session %" PRIu64 ": caps %s of ino %" PRIx64 " (flush tid %" PRIu64 ") waits behind its earlier requests",
	     s->id, mdsp_caps_op_name(w->msg.caps.op), w->msg.caps.ino, w->msg.caps.flush_tid);
}

static void handle_inode_caps(struct mds *m, struct conn *c, struct session *s, struct mdsp_caps *msg,
			      bool may_park);

/* Whether a request of @s held in its ordered list before @seq names @ino. */
static bool held_request_names(const struct session *s, uint64_t seq, uint64_t ino)
{
	const struct mwaiter *w;

	for (w = s->ordered; w && w->seq < seq; w = w->order_next) {
		const struct mdsp_request *q = &w->msg.request;

		if (w->msg.type == MDSP_MSG_REQUEST && w->conn == s->conn &&
		    (q->ino == ino || q->ino2 == ino || q->want_ino == ino))
			return true;
	}
	return false;
}

/*
 * An ack of a revoke of @ino's caps: the flushes of @ino the session sent
 * before it, held in its ordered list (park_caps), are applied first, as
 * the client expects (its ack carries no size: the flush did).  Else the
 * revoke would complete, another client change the file, and the held
 * flush later put back the size and mtime of before.  Not one that a held
 * request of the session before it changes the inode in (a replayed
 * truncate, a create): that must run first, and the ack does not wait.
 */
static void flushes_before_ack(struct mds *m, struct session *s, uint64_t ino)
{
	struct mwaiter *w;

	for (w = s->ordered; w; w = w->order_next) {
		if (w->msg.type != MDSP_MSG_CAPS || w->caps_done || w->conn != s->conn || w->msg.caps.ino != ino)
			continue;
		if (held_request_names(s, w->seq, ino))
			return;
		handle_inode_caps(m, w->conn, s, &w->msg.caps, false);
		w->caps_done = true;
	}
}

/* @may_park: not run again from the waiter list (locker_caps_resume) */
static void handle_inode_caps(struct mds *m, struct conn *c, struct session *s, struct mdsp_caps *msg,
			      bool may_park)
{
	struct minode *in;
	struct mcap *cap;
	struct txn t;
	bool journal = false;

	if (may_park && msg->op == MDSP_CAPS_ACK && s->ordered)
		flushes_before_ack(m, s, msg->ino);
	in = locker_inode_at(m, msg->ino);
	cap = in ? locker_cap_find(in, s) : NULL;
	/* a flush waits behind the session's held requests whatever the inode:
	 * one of them may make it (a create) or change what it reports (a
	 * replayed truncate after which the flushed size was written).  Not
	 * an ack of a revoke: another session's request may wait for it. */
	if (may_park && s->ordered && locker_order_blocked(s, UINT64_MAX) &&
	    (msg->op == MDSP_CAPS_FLUSH || (msg->op == MDSP_CAPS_ACK && msg->dirty && !cap))) {
		park_caps(m, c, s, msg);
		return;
	}
	if (!cap) {
		/* nothing of its own here (released, or the inode is gone); a
		 * flush must still be answered, or the client waits for it */
		if ((msg->op == MDSP_CAPS_FLUSH || msg->op == MDSP_CAPS_ACK) && msg->flush_tid) {
			struct mdsp_buf b = flush_ack_frame(NULL, msg->ino, msg->flush_tid);

			conn_send_frame(c, &b);
			mdsp_buf_free(&b);
		}
		return;
	}
	txn_init(&t);
	switch (msg->op) {
	case MDSP_CAPS_ACK:
		journal = apply_flush(m, cap, msg, &t);
		if (cap->revoke_seq && msg->seq >= cap->revoke_seq)
			cap_revoke_done(cap);
		cap_client_drops(cap, msg->caps, msg->seq);
		cap->wanted = msg->wanted;
		break;
	case MDSP_CAPS_FLUSH:
		journal = apply_flush(m, cap, msg, &t);
		cap_client_drops(cap, msg->caps, msg->seq);
		cap->wanted = msg->wanted;
		break;
	case MDSP_CAPS_UPDATE:
		cap_client_drops(cap, msg->caps, msg->seq);
		cap->wanted = msg->wanted;
		break;
	case MDSP_CAPS_RELEASE:
		/* it gives back what it had been given as of msg->seq: all of
		 * it unless bits were added since (revokes since only took
		 * some away, so it answers them too) */
		if (msg->seq >= cap->issue_seq) {
			if (cap->revoke_seq)
				locker_revoke_answered(cap->revoke_ns);
			cap_del(cap);
			cap = NULL;
		}
		break;
	default:
		dout(MDS, 1, "%s: unexpected caps op %s ignored", c->peer, mdsp_caps_op_name(msg->op));
		txn_free(&t);
		return;
	}
	if (cap && !cap->issued && !cap->wanted && !cap->revoke_seq) {
		cap_del(cap);
		cap = NULL;
	}
	if (msg->flush_tid && (msg->op == MDSP_CAPS_FLUSH || msg->op == MDSP_CAPS_ACK)) {
		/* the ack goes out once the change is durable (with nothing to
		 * journal, once everything before it is) */
		struct jitem *it = calloc(1, sizeof(*it));

		if (it) {
			conn_get(c);
			it->conn = c;
			it->sid = s->id;
			it->frame = flush_ack_frame(cap, msg->ino, msg->flush_tid);
			it->start_ns = now_mono_ns();
		}
		if (journal)
			txn_finish(m, &t);
		journal_submit_locked(m, journal ? &t : NULL, it);
	} else if (journal) {
		txn_finish(m, &t);
		journal_submit_locked(m, &t, NULL);
	}
	txn_free(&t);
	bool stray_free = in->in_stray && !locker_keeps_orphan(in);
	eval_grants(m, in);
	locker_wake(m, in->a.ino);
	if (stray_free) {
		/* its last close: purged at once, so its handles (NFS file
		 * handles, LOOKUPINO) go stale now, not at the next tick */
		m->strays_unchecked = true;
		if (!m->reconnecting)
			purge_unused_strays(m);
	}
}

int locker_handle_caps(struct mds *m, struct conn *c, struct mdsp_caps *msg)
{
	struct session *s;

	pthread_mutex_lock(&m->lock);
	s = c->session_id ? xa_load(&m->sessions, c->session_id) : NULL;
	if (!s) {
		pthread_mutex_unlock(&m->lock);
		dout(MDS, 1, "%s: caps %s of ino %" PRIx64 " without a session: not applied", c->peer,
		     mdsp_caps_op_name(msg->op), msg->ino);
		return -ENOTCONN;
	}
	dout(MDS, 15, "session %" PRIu64 ": caps %s ino %" PRIx64 " seq %" PRIu64 " caps 0x%x wanted 0x%x dirty 0x%x",
	     s->id, mdsp_caps_op_name(msg->op), msg->ino, msg->seq, msg->caps, msg->wanted, msg->dirty);
	if (msg->op == MDSP_CAPS_LEASE_ACK || msg->op == MDSP_CAPS_LEASE_RELEASE)
		locker_handle_lease(m, c, s, msg);
	else
		handle_inode_caps(m, c, s, msg, true);
	pthread_mutex_unlock(&m->lock);
	locker_run_waiters(m);
	return 0;
}

void locker_caps_resume(struct mds *m, struct mwaiter *w)
{
	struct session *s;
	struct txn t;

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	s = xa_load(&m->sessions, w->sid);
	rcu_read_unlock();
	if (s && s->conn == w->conn && !w->caps_done && locker_order_blocked(s, w->seq)) {
		/* what it waits behind is still there: back in line */
		txn_init(&t);
		t.s = s;
		t.g.w = w;
		locker_park(m, w->conn, &w->msg, w->t0, &t);
		txn_free(&t);
		pthread_mutex_unlock(&m->lock);
		return;
	}
	/* (its session gone or on another connection: the client sends its
	 * flushes again after the reconnect; applied already: before an ack) */
	if (s && s->conn == w->conn && !w->caps_done)
		handle_inode_caps(m, w->conn, s, &w->msg.caps, false);
	locker_waiter_free(m, w);
	pthread_mutex_unlock(&m->lock);
}

/* ---- reconnect --------------------------------------------------------------------- */

void locker_session_reconnect(struct mds *m, struct session *s, const struct mdsp_cap_reconnect *caps, uint32_t n)
{
	struct mcap *cap;
	struct mlease *l;
	uint32_t i, restored = 0, taken = 0;
	/* after the reconnect phase (it ended, or none was needed: the session
	 * was not connected when the MDS stopped) others may have been given
	 * what this one claims: keep only what does not conflict, and revoke
	 * the rest at once (the client flushes and acks as for any revoke) */
	bool late = !m->reconnecting;

	if (!s->caps.next)
		return;
	s->reconnected = true;
	if (!cds_list_empty(&s->caps) || !cds_list_empty(&s->leases)) {
		/* the MDS did not restart: what it has is the truth; send the
		 * revokes the lost connection may have swallowed again */
		cds_list_for_each_entry(cap, &s->caps, s_item)
			if (cap->revoke_seq)
				send_cap_msg(cap, MDSP_CAPS_REVOKE);
		cds_list_for_each_entry(l, &s->leases, s_item)
			if (l->revoke_seq)
				locker_send_lease_msg(l, MDSP_CAPS_LEASE_REVOKE);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct mdsp_cap_reconnect *r = &caps[i];
		struct minode *in;

		if (r->dname) {
			struct mdir *d;
			struct mdentry *dn;
			uint64_t seq;

			/* a claim above anything an MDS hands out would wrap the
			 * session's count (seq 0: a lease never seen revoked);
			 * refused before anything is looked up for it */
			if (r->seq > MDSP_LEASE_SEQ_MAX) {
				dout(MDS, 1, "session %" PRIu64 ": reconnect claims a lease on '%s' in %" PRIx64
				     " with seq %" PRIu64 ", above any an MDS gives: ignored", s->id, r->dname, r->ino,
				     r->seq);
				continue;
			}
			if (mdir_get_dir(m, r->ino, &d) || mdir_lookup_load(m, d, r->dname, &dn))
				continue;
			if (!dn)
				continue;
			/* not through lease_issue: that waits for the phase to end */
			l = locker_lease_find(dn, s);
			if (!l && !(l = locker_lease_add(m, s, dn)))
				continue;
			/* the client applies only leases newer than what it has */
			seq = r->seq > s->lease_seq ? r->seq : s->lease_seq;
			s->lease_seq = seq;
			l->seq = seq;
			restored++;
			if (late && !l->revoke_seq) {
				/* the name may have changed meanwhile: let it go */
				locker_lease_revoke(m, l);
				taken++;
			}
			continue;
		}
		if (inode_get(m, r->ino, &in))
			continue;
		cap = locker_cap_find(in, s);
		if (!cap)
			cap = cap_add(in, s);
		if (!cap)
			continue;
		cap->issued |= (r->caps & MDSP_CAP_ALL) | MDSP_CAP_PIN;
		cap->pending = cap->issued;
		cap->wanted = r->wanted & MDSP_CAP_ALL;
		if (r->seq > cap->seq)
			cap->seq = r->seq;   /* the client applies only newer states */
		cap->issue_seq = cap->seq;
		restored++;
		if (late && !cap->revoke_seq) {
			uint32_t drop = cap->issued & ~allowed_for(m, in, cap, false) & ~(uint32_t)MDSP_CAP_PIN;

			if (drop) {
				cap_revoke(m, cap, drop);
				taken++;
			}
		}
	}
	if (n) {
		perf_inc(&c_reconnect_caps, restored);
		dinfo(MDS, "session %" PRIu64 " re-asserted %u caps and leases (%u claimed)%s", s->id, restored, n,
		      late ? ", after the reconnect phase" : "");
		if (taken)
			dinfo(MDS, "session %" PRIu64 ": %u of them revoked at once (others may hold conflicting ones by now)",
			      s->id, taken);
	}
}

/* ---- housekeeping --------------------------------------------------------------------- */

void locker_tick(struct mds *m)
{
	uint64_t now, tmo = timeout_ns(), evict[16], rtmo, first;
	double rv = cfg_double(CFG_mds_recall_evict_timeout);
	int nevict = 0, i;
	bool recall_evict[16];

	pthread_mutex_lock(&m->lock);
	/* read under the lock: a revoke stamped while we waited for it must
	 * not look 584 years old (it evicted a client that had just been sent
	 * the revoke) */
	now = now_mono_ns();
	/* a recall (cache pressure) that nothing waits on counts against
	 * mds_recall_evict_timeout (0: never), any other revoke against
	 * mds_session_timeout */
	rtmo = rv > 0 ? (uint64_t)(rv * 1e9) : 0;
	first = tmo && rtmo ? (tmo < rtmo ? tmo : rtmo) : (tmo ? tmo : rtmo);
	if (first) {
		struct mcap *cap;
		struct mlease *l;

		cds_list_for_each_entry(cap, &m->revoking, revoke_item) {
			uint64_t age = mono_since(now, cap->revoke_ns);
			bool recall = cap->recall && !cap->in->gather;

			if (age < first)
				break;
			if (recall ? !rtmo || age < rtmo : !tmo || age < tmo)
				continue;
			for (i = 0; i < nevict && evict[i] != cap->s->id; i++)
				;
			if (i == nevict && nevict < 16) {
				recall_evict[nevict] = recall;
				evict[nevict++] = cap->s->id;
				derr(MDS, "session %" PRIu64 " (%s) did not answer the %s of inode %" PRIx64
					  " caps within %s (%.0f s): evicting it",
				     cap->s->id, cap->s->client_name, recall ? "recall" : "revoke", cap->in->a.ino,
				     recall ? "mds_recall_evict_timeout" : "mds_session_timeout",
				     (double)(recall ? rtmo : tmo) / 1e9);
			}
		}
		cds_list_for_each_entry(l, &m->revoking_leases, revoke_item) {
			uint64_t age = mono_since(now, l->revoke_ns);
			bool recall = l->recall && !l->dn->gather;

			if (age < first)
				break;
			if (recall ? !rtmo || age < rtmo : !tmo || age < tmo)
				continue;
			for (i = 0; i < nevict && evict[i] != l->s->id; i++)
				;
			if (i == nevict && nevict < 16) {
				recall_evict[nevict] = recall;
				evict[nevict++] = l->s->id;
				derr(MDS, "session %" PRIu64 " (%s) did not answer the %s of its lease on %" PRIx64
					  "/%s within %s (%.0f s): evicting it",
				     l->s->id, l->s->client_name, recall ? "recall" : "revoke", l->dn->dir->ino,
				     l->dn->name, recall ? "mds_recall_evict_timeout" : "mds_session_timeout",
				     (double)(recall ? rtmo : tmo) / 1e9);
			}
		}
	}
	if (!m->reconnecting && m->strays_unchecked)
		purge_unused_strays(m);
	pthread_mutex_unlock(&m->lock);
	for (i = 0; i < nevict; i++) {
		perf_inc(recall_evict[i] ? &c_recall_evictions : &c_acks_late, 1);
		m->locker_ops->session_evict(m, evict[i], recall_evict[i] ?
					     "did not answer a cache-pressure recall within mds_recall_evict_timeout" :
					     "did not answer a cap revoke within mds_session_timeout");
	}
	locker_run_waiters(m);
}

void locker_register_perf(struct mds *m)
{
	(void)m;
	perf_register_counter("mds_caps", "revokes", &c_revokes);
	perf_register_counter("mds_caps", "lease_revokes", &locker_c_lease_revokes);
	perf_register_counter("mds_caps", "grants", &c_grants);
	perf_register_counter("mds_caps", "acks_late", &c_acks_late);
	perf_register_counter("mds_caps", "flushes", &c_flushes);
	/* flushes of inodes an earlier request of the session has yet to make (park_caps) */
	perf_register_counter("mds_caps", "flushes_parked", &c_caps_parked);
	perf_register_counter("mds_caps", "requests_parked", &locker_c_parked);
	perf_register_counter("mds_caps", "requests_resumed", &locker_c_resumed);
	/* parked to keep a session's resent requests in order (park.c) */
	perf_register_counter("mds_caps", "requests_ordered", &locker_c_ordered);
	perf_register_counter("mds_caps", "orphans", &c_orphans);
	perf_register_counter("mds_caps", "orphans_purged", &c_orphans_purged);
	perf_register_counter("mds_caps", "reconnect_caps", &c_reconnect_caps);
	perf_register_counter("mds_caps", "recalls", &c_recalls);
	perf_register_counter("mds_caps", "recalls_answered", &c_recalls_answered);
	perf_register_counter("mds_caps", "recall_evictions", &c_recall_evictions);
	perf_register_hist("mds_caps", "revoke_lat", &h_revoke_lat);
}

void locker_note_orphan(void)
{
	perf_inc(&c_orphans, 1);
}

/* ---- admin output ----------------------------------------------------------------------- */

void locker_late_releases_locked(struct mds *m, uint64_t age_ns,
				 void (*fn)(void *arg, const struct session *s, uint64_t ino, const char *dname,
					    double secs),
				 void *arg)
{
	uint64_t now = now_mono_ns(), seen[64];
	unsigned nseen = 0, i;
	struct mcap *cap;
	struct mlease *l;

	/* both lists are in the order the revokes began: the first entry of a
	 * session is its oldest, and the walk stops at the first young one */
	cds_list_for_each_entry(cap, &m->revoking, revoke_item) {
		if (mono_since(now, cap->revoke_ns) < age_ns)
			break;
		if (cap->recall && !cap->in->gather)
			continue;   /* MDS_CLIENT_RECALL's */
		for (i = 0; i < nseen && seen[i] != cap->s->id; i++)
			;
		if (i < nseen)
			continue;
		if (nseen == sizeof(seen) / sizeof(seen[0]))
			return;
		seen[nseen++] = cap->s->id;
		fn(arg, cap->s, cap->in->a.ino, NULL, (double)mono_since(now, cap->revoke_ns) / 1e9);
	}
	cds_list_for_each_entry(l, &m->revoking_leases, revoke_item) {
		if (mono_since(now, l->revoke_ns) < age_ns)
			break;
		if (l->recall && !l->dn->gather)
			continue;
		for (i = 0; i < nseen && seen[i] != l->s->id; i++)
			;
		if (i < nseen)
			continue;
		if (nseen == sizeof(seen) / sizeof(seen[0]))
			return;
		seen[nseen++] = l->s->id;
		fn(arg, l->s, l->dn->dir->ino, l->dn->name, (double)mono_since(now, l->revoke_ns) / 1e9);
	}
}

/*
 * The requests parked for revokes, for `ops`: what each waits for, and who
 * has not answered (each session still holding bits being revoked from a
 * gathered inode, with how long ago the revoke went out).  A stall shows
 * which client it waits on.  Caller holds mds->lock.
 */
void locker_waiters_json(struct mds *m, struct json_object *a)
{
	uint64_t now = now_mono_ns();
	char cs[24], why[512];

	lockdep_assert_held(&m->lock);
	for (struct mwaiter *w = m->waiters; w; w = w->next) {
		struct json_object *o = json_object_new_object(), *wait = json_object_new_array();
		size_t off = 0;

		for (int i = 0; i < w->g.n; i++) {
			struct json_object *e = json_object_new_object(), *holders = json_object_new_array();
			struct minode *in = w->g.e[i].name ? NULL : locker_inode_at(m, w->g.e[i].ino);

			json_object_object_add(e, "ino", json_object_new_int64((int64_t)w->g.e[i].ino));
			if (w->g.e[i].name) {
				json_object_object_add(e, "dentry", json_object_new_string(w->g.e[i].name));
			} else {
				mdsp_caps_str(w->g.e[i].mask, cs, sizeof(cs));
				json_object_object_add(e, "caps", json_object_new_string(cs));
			}
			if (in) {
				struct mcap *cap;

				cds_list_for_each_entry(cap, &in->caps, in_item) {
					struct json_object *h;

					if (!(cap->issued & w->g.e[i].mask) || !cap->s)
						continue;
					h = json_object_new_object();
					json_object_object_add(h, "session", json_object_new_int64((int64_t)cap->s->id));
					mdsp_caps_str(cap->issued, cs, sizeof(cs));
					json_object_object_add(h, "issued", json_object_new_string(cs));
					json_object_object_add(h, "revoke_seq", json_object_new_int64((int64_t)cap->revoke_seq));
					if (cap->revoke_seq)
						json_object_object_add(h, "revoke_sent_ms_ago",
								       json_object_new_double((double)mono_since(now, cap->revoke_ns) / 1e6));
					json_object_array_add(holders, h);
				}
			}
			json_object_object_add(e, "held_by", holders);
			json_object_array_add(wait, e);
			if (off < sizeof(why))
				off += (size_t)snprintf(why + off, sizeof(why) - off, "%s%" PRIx64 "%s%s", i ? ", " : "",
							w->g.e[i].ino, w->g.e[i].name ? "/" : " ",
							w->g.e[i].name ? w->g.e[i].name : cs);
		}
		json_object_object_add(o, "session", json_object_new_int64((int64_t)w->sid));
		if (w->msg.type == MDSP_MSG_CAPS) {
			json_object_object_add(o, "flush_tid", json_object_new_int64((int64_t)w->msg.caps.flush_tid));
			json_object_object_add(o, "op", json_object_new_string(mdsp_caps_op_name(w->msg.caps.op)));
			json_object_object_add(o, "ino", json_object_new_int64((int64_t)w->msg.caps.ino));
		} else {
			json_object_object_add(o, "tid", json_object_new_int64((int64_t)w->msg.request.tid));
			json_object_object_add(o, "op", json_object_new_string(mdsp_op_name(w->msg.request.op)));
		}
		if (!w->g.n)
			snprintf(why, sizeof(why), "%s", w->g.overflow ? "any revoke's ack" : "its turn to run again");
		char state[600];
		if (w->ordered && !w->g.n)
			snprintf(state, sizeof(state), "parked: behind an earlier request of its session that waits");
		else
			snprintf(state, sizeof(state), "parked: waiting for revokes of %s", why);
		json_object_object_add(o, "state", json_object_new_string(state));
		json_object_object_add(o, "age_ms", json_object_new_double((double)mono_since(now, w->parked_ns) / 1e6));
		json_object_object_add(o, "waits_for", wait);
		json_object_array_add(a, o);
	}
}

void locker_session_json(struct session *s, struct json_object *o)
{
	struct json_object *a = json_object_new_array();
	struct mcap *cap;
	int n = 0;

	json_object_object_add(o, "num_caps", json_object_new_int64((int64_t)s->ncaps));
	json_object_object_add(o, "num_leases", json_object_new_int64((int64_t)s->nleases));
	if (s->caps.next)
		cds_list_for_each_entry(cap, &s->caps, s_item) {
			struct json_object *e;
			char cs[24];

			if (n++ == 100)
				break;      /* `dump cache` has them all */
			e = json_object_new_object();
			json_object_object_add(e, "ino", json_object_new_int64((int64_t)cap->in->a.ino));
			json_object_object_add(e, "caps", json_object_new_string(mdsp_caps_str(cap->pending, cs, sizeof(cs))));
			if (cap->issued != cap->pending)
				json_object_object_add(e, "revoking",
						       json_object_new_string(mdsp_caps_str(cap->issued & ~cap->pending, cs, sizeof(cs))));
			if (cap->wanted)
				json_object_object_add(e, "wanted", json_object_new_string(mdsp_caps_str(cap->wanted, cs, sizeof(cs))));
			json_object_array_add(a, e);
		}
	json_object_object_add(o, "caps", a);
}

static const char *file_state(struct minode *in)
{
	uint32_t all = 0, g = locker_gathering(in);
	int writers = 0, holders = 0;
	struct mcap *cap;

	cds_list_for_each_entry(cap, &in->caps, in_item) {
		all |= cap->issued;
		if (cap->issued & Fw)
			writers++;
		if (cap->issued & FILE_BITS)
			holders++;
	}
	if (g & FILE_BITS)
		return "lock";
	if (all & Fb)
		return "excl";
	if (writers && holders > 1)
		return "mix";
	if (writers)
		return "excl";
	return "sync";
}

void locker_inode_json(struct minode *in, struct json_object *o)
{
	struct json_object *a, *locks;
	uint32_t g;
	struct mcap *cap;
	char cs[24];

	if (!in->caps.next)
		return;
	g = locker_gathering(in);
	if (in->in_stray)
		json_object_object_add(o, "orphan", json_object_new_boolean(true));
	locks = json_object_new_object();
	json_object_object_add(locks, "auth", json_object_new_string(g & MDSP_CAP_AUTH_SHARED ? "lock" : "sync"));
	json_object_object_add(locks, "link", json_object_new_string(g & MDSP_CAP_LINK_SHARED ? "lock" : "sync"));
	json_object_object_add(locks, "xattr", json_object_new_string("sync"));
	if (S_ISDIR(in->a.mode))
		json_object_object_add(locks, "dentries", json_object_new_string(g & Fs ? "lock" : "sync"));
	else
		json_object_object_add(locks, "file", json_object_new_string(file_state(in)));
	json_object_object_add(o, "locks", locks);
	if (cds_list_empty(&in->caps))
		return;
	a = json_object_new_array();
	cds_list_for_each_entry(cap, &in->caps, in_item) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "session", json_object_new_int64((int64_t)cap->s->id));
		json_object_object_add(e, "issued", json_object_new_string(mdsp_caps_str(cap->issued, cs, sizeof(cs))));
		json_object_object_add(e, "pending", json_object_new_string(mdsp_caps_str(cap->pending, cs, sizeof(cs))));
		json_object_object_add(e, "wanted", json_object_new_string(mdsp_caps_str(cap->wanted, cs, sizeof(cs))));
		json_object_object_add(e, "seq", json_object_new_int64((int64_t)cap->seq));
		if (cap->revoke_seq)
			json_object_object_add(e, "revoke_age_ms",
					       json_object_new_double((double)(now_mono_ns() - cap->revoke_ns) / 1e6));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "caps", a);
}
