/*
 * ops_deleg.c - delegations (RFC 8881 10.2, 10.4; RFC 7530 10.2).
 *
 * OPEN grants a delegation when `nfs4_delegations` is on, the client's
 * callback path answered its last call (callback.c: probed up), it is not
 * the grace period (4.0: the owner is confirmed), the client did not say
 * WANT_NO_DELEG, and the gateway's client holds the MDS caps that make the
 * promise true (lc_caps_held), checked again after the grant:
 *
 *  - a read delegation (open_read_delegation4) to an OPEN for reading
 *    while nobody has the file open for writing (no NFS open with write
 *    access, no writer through FUSE or NFSv3: lc_inode_writers) and the
 *    client holds LC_CAP_CACHE|LC_CAP_ATTRS (nobody else of the MDS writes);
 *  - a write delegation (open_write_delegation4) to an OPEN with write
 *    access when the client is the file's only opener: no other NFS
 *    client's open, no delegation, no handle of FUSE or NFSv3 on it
 *    (lc_inode_opens counts only the NFS opens' handles) and the client
 *    holds LC_CAP_CACHE|LC_CAP_ATTRS|LC_CAP_BUFFER (Fb: nobody else of the
 *    MDS has the file open).  Its space limit is NFS_LIMIT_SIZE with no
 *    limit (as knfsd): the gateway buffers what the client writes under Fb
 *    and has no quota to reserve against.
 *
 * The delegation type follows the open's access; a client that wanted the
 * other one (WANT_WRITE_DELEG on a read-only open, WANT_READ_DELEG with
 * write access) gets OPEN_DELEGATE_NONE_EXT with WND4_NOT_SUPP_UPGRADE /
 * WND4_NOT_SUPP_DOWNGRADE; contention (another opener or delegation)
 * WND4_CONTENTION; anything else WND4_RESOURCE (RFC 8881 18.16.3).
 *
 * A conflicting request marks the delegation recalled, queues a CB_RECALL
 * and answers NFS4ERR_DELAY (the client retries): another client's OPEN
 * for writing (for a write delegation: any OPEN), its READ or WRITE (or an
 * anonymous / READ-bypass stateid's) of a write-delegated file, and
 * through lc_break_for_write / lc_break_for_read and the caps revoke hook
 * (gw.c) every writer (any opener, for a write delegation) beside the
 * gateway: FUSE of this process, NFSv3, any other client of the MDS (gw.c's
 * revoke hook recalls here and defers the ack until DELEGRETURN:
 * nfs4_deleg_break_caps, nfs4_deleg_caps_revoked).  The MDS does not
 * revoke from the client that asks, so this gateway's own conflicting
 * requests check for themselves: nfs4ops_deleg_conflict (REMOVE, RENAME,
 * LINK, SETATTR, a truncating OPEN; NFS4ERR_DELAY).  DELEGRETURN ends it;
 * what the holder flushed before it is in the
 * gateway's client, which writes it back before it acks the revoke.  One
 * not returned within a lease of its recall (or whose recall could not be
 * sent) is revoked: it leaves its file, the conflicting request proceeds
 * on its next try, and the holder sees SEQ4_STATUS_RECALLABLE_STATE_REVOKED
 * (4.1) until it frees the revoked stateid (FREE_STATEID; TEST_STATEID and
 * READ say NFS4ERR_DELEG_REVOKED).
 *
 * CB_GETATTR (RFC 8881 10.4.3, 20.1): another client's GETATTR of the size
 * or change of a write-delegated file asks the holder (nfs4ops_deleg_getattr
 * below) and answers with what it reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

#define OPEN_DELEGATE_READ 1
#define OPEN_DELEGATE_WRITE 2
#define NFS_LIMIT_SIZE 1
#define ACE4_ACCESS_ALLOWED_ACE_TYPE 0

uint32_t nfs4ops_deleg_may_grant(struct nfs4_compound *cs, struct os_file *f, uint64_t clientid, uint32_t access,
				 uint32_t deny)
{
	bool write = access & OS_SHARE_ACCESS_WRITE;

	/* caller holds the state lock: no client library or callback lock is taken */
	(void)cs;
	if (!cfg_bool(CFG_nfs4_delegations))
		return WND4_RESOURCE;
	if (!write && (deny & OS_SHARE_ACCESS_WRITE))
		return WND4_RESOURCE;            /* nobody may write anyway: nothing to promise */
	for (struct os_stid *s = f->stids; s; s = s->fnext) {
		if (s->kind == OS_OPEN && s->clientid != clientid && write)
			return WND4_CONTENTION;  /* a write delegation: the only opener */
		if (s->kind == OS_OPEN && (s->access & OS_SHARE_ACCESS_WRITE) && !write)
			return WND4_CONTENTION;  /* a writer: nothing to promise a reader */
		if (s->kind == OS_DELEG && !s->revoked && s->clientid == clientid)
			return WND4_RESOURCE;    /* one already (no upgrade: a return and an open) */
		if (s->kind == OS_DELEG && !s->revoked && (s->recalled || write))
			return WND4_CONTENTION;  /* one being recalled, or another client's */
	}
	return NFS4_DELEG_GRANT;
}

unsigned int nfs4ops_deleg_nfs_handles_locked(const struct os_file *f)
{
	unsigned int n = 0;

	for (const struct os_stid *s = f ? f->stids : NULL; s; s = s->fnext)
		if (s->kind == OS_OPEN && s->fh)
			n++;
	return n;
}

void nfs4ops_deleg_put(struct xdr_enc *res, const struct nfs4_stateid *sid, bool write)
{
	xdr_put_u32(res, write ? OPEN_DELEGATE_WRITE : OPEN_DELEGATE_READ);
	nfs4_put_stateid(res, sid);
	xdr_put_bool(res, false);                /* recall: not now */
	if (write) {
		/* nfs_space_limit4: no limit (see the top of this file) */
		xdr_put_u32(res, NFS_LIMIT_SIZE);
		xdr_put_u64(res, UINT64_MAX);
	}
	xdr_put_u32(res, ACE4_ACCESS_ALLOWED_ACE_TYPE);   /* permissions: as knfsd, EVERYONE@ */
	xdr_put_u32(res, 0);
	xdr_put_u32(res, 0);
	xdr_put_string(res, "EVERYONE@");
}

/*
 * recall_mark_locked - caller holds st->lock.  Mark delegation @d recalled
 * at @now and fill @rc with what its CB_RECALL needs (holder, stateid, file
 * handle), to be sent once st->lock is dropped (nfs4ops_deleg_recall_send,
 * nfs4_cb_recall).  @d must not be recalled already.
 */
static void recall_mark_locked(struct ostate *st, struct os_stid *d, uint64_t now, struct nfs4ops_recall *rc)
{
	d->recalled = true;
	d->recall_ns = now;
	rc->pending = true;
	rc->clientid = d->clientid;
	os_stid_wire(st, d, &rc->sid);
	if (d->dfh)
		rc->fh = *d->dfh;
	else
		rc->fh.len = 0;
}

bool nfs4ops_deleg_break_locked(struct nfs4_compound *cs, struct os_file *f, uint64_t clientid, uint32_t access,
				struct nfs4ops_recall *rc)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_stid *d = os_deleg_conflict_locked(f, clientid, access);

	rc->pending = false;
	if (!d)
		return false;
	if (!d->recalled)
		recall_mark_locked(c->st, d, now_mono_ns(), rc);
	return true;
}

void nfs4ops_deleg_recall_send(struct nfs4_compound *cs, const struct nfs4ops_recall *rc)
{
	if (!rc->pending)
		return;
	dout(NFS, 5, "client %#llx: recalling its delegation for a conflicting request", (unsigned long long)rc->clientid);
	perf_inc(&cs->srv->perf.delegs_recalled, 1);
	nfs4_cb_recall(cs->srv, rc->clientid, &rc->sid, &rc->fh);
}

/*
 * CB_GETATTR (RFC 8881 10.4.3): @attr of a file another client asks the
 * size or change of.  If a client other than the asking one holds a write
 * delegation of it, the holder's cache is newer than ours: ask it (bounded
 * by nfs4_cb_getattr_timeout) and answer with the size it reports, and
 * with a change attribute that moves on whenever the holder's did (ours
 * plus the times its reported change moved since the grant).  A holder
 * that does not answer in time: what the gateway knows (ours plus the
 * moves seen so far).  No lock held.
 */
void nfs4ops_deleg_getattr(struct nfs4_compound *cs, struct lc_attr *attr)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint64_t asker = cs->clp ? cs->clp->clientid : 0, holder = 0, change = 0, size = 0;
	struct nfs4_stateid sid;
	struct nfs4_fh fh;
	struct os_stid *d = NULL;
	struct os_file *f;
	uint32_t mask = 0;
	int r;

	if (!c || !cfg_bool(CFG_nfs4_delegations))
		return;
	pthread_mutex_lock(&c->st->lock);
	f = c->st->ndelegs ? os_file_get_locked(c->st, attr->ino, false) : NULL;
	for (struct os_stid *s = f ? f->stids : NULL; s; s = s->fnext)
		if (os_deleg_is_write(s) && !s->revoked && s->clientid != asker && s->dfh) {
			d = s;
			break;
		}
	if (d) {
		holder = d->clientid;
		fh = *d->dfh;
		os_stid_wire(c->st, d, &sid);
	}
	pthread_mutex_unlock(&c->st->lock);
	if (!d)
		return;
	perf_inc(&cs->srv->perf.cb_getattrs, 1);
	r = nfs4_cb_getattr(cs->srv, holder, &fh, cs->srv->p.cb_getattr_ns, &mask, &change, &size);
	if (r) {
		perf_inc(&cs->srv->perf.cb_getattr_failures, 1);
		dout(NFS, 1, "client %#llx: CB_GETATTR of %#llx: %s; answering with what the gateway knows",
		     (unsigned long long)holder, (unsigned long long)attr->ino, strerror(-r));
	}
	pthread_mutex_lock(&c->st->lock);
	/* still the same delegation? (returned or revoked meanwhile: our own attributes are current) */
	if (os_stid_check_locked(c->st, &sid, 1, 0, OS_DELEG, &d) == NFS4_OK && !d->revoked &&
	    d->file && d->file->ino == attr->ino) {
		if (!r && (mask & NFS4_CB_GETATTR_CHANGE)) {
			if (d->cb_valid && change != d->cb_change)
				d->cb_bumps++;           /* the holder changed the file since it last said */
			if (!d->cb_valid && change != attr->change)
				d->cb_bumps++;           /* ... since the grant (it started from ours) */
			d->cb_valid = true;
			d->cb_change = change;
		}
		if (!r && (mask & NFS4_CB_GETATTR_SIZE)) {
			d->cb_size = size;
			attr->size = size;
		}
		attr->change += d->cb_bumps;
	}
	pthread_mutex_unlock(&c->st->lock);
}

/*
 * A delegation of @clientid was revoked (no lock held): count it, and a 4.1
 * client sees SEQ4_STATUS_RECALLABLE_STATE_REVOKED until it frees the
 * revoked stateids (nfs4ops_deleg_freed).
 */
static void revoked_count(struct nfs4_server *srv, uint64_t clientid)
{
	struct nfs4_client *clp;

	perf_inc(&srv->perf.delegs_revoked, 1);
	if (nfs4_client_find(srv, clientid, &clp) == NFS4_OK) {
		if (clp->minorversion >= 1)
			atomic_fetch_or(&clp->seq_flags, SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
		nfs4_client_put(srv, clp);
	}
}

/* The lease reaper's tick: revoke what was not returned within a lease of its recall. */
void nfs4ops_deleg_tick(struct nfs4_server *srv, struct nfs4ops_ctx *c, uint64_t now)
{
	struct os_putlist pl = { 0 };
	uint64_t ids[32];
	unsigned int n = 0;

	pthread_mutex_lock(&c->st->lock);
	for (struct os_stid *d = c->st->delegs; d && n < 32; d = d->dnext) {
		if (!d->recalled || d->revoked || mono_since(now, d->recall_ns) <= srv->p.lease_ns)
			continue;
		os_deleg_revoke_locked(c->st, d, &pl);
		ids[n++] = d->clientid;
		if (pl.n > 48 || pl.ni > 48)
			break;
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	for (unsigned int i = 0; i < n; i++) {
		dinfo(NFS, "client %#llx: delegation not returned within a lease of its recall: revoked",
		      (unsigned long long)ids[i]);
		revoked_count(srv, ids[i]);
	}
}

void nfs4ops_deleg_freed(struct nfs4_compound *cs, uint64_t clientid)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	bool left;

	pthread_mutex_lock(&c->st->lock);
	left = os_client_revoked_locked(c->st, clientid);
	pthread_mutex_unlock(&c->st->lock);
	if (!left && cs->clp)
		atomic_fetch_and(&cs->clp->seq_flags, ~(uint32_t)SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
}

/*
 * lc_break_for_write's hook (gw.c): a frontend beside the gateway (FUSE)
 * opened @ino for writing or truncates it.  Every delegation on it is
 * recalled, and the caller waits until they are returned or revoked (a
 * lease after the recall at most), as a local opener waits for a lease
 * break; it gives up early only when the server stops.
 */
static int break_ino_until(struct nfs4_server *srv, uint64_t ino, bool writes_only, uint64_t deadline);

/* Revoke every delegation (@writes_only: write delegation) on @ino now (a cap revoke that cannot wait any longer). */
static void revoke_ino(struct nfs4_server *srv, struct nfs4ops_ctx *c, uint64_t ino, bool writes_only)
{
	struct os_putlist pl = { 0 };
	uint64_t ids[8];
	unsigned int n = 0;
	struct os_file *f;

	pthread_mutex_lock(&c->st->lock);
	f = os_file_get_locked(c->st, ino, false);
	for (struct os_stid *d = f ? f->stids : NULL, *next; d && n < 8; d = next) {
		next = d->fnext;
		if (d->kind != OS_DELEG || d->revoked || (writes_only && !os_deleg_is_write(d)))
			continue;
		ids[n++] = d->clientid;
		os_deleg_revoke_locked(c->st, d, &pl);   /* may free f once its last stid leaves */
		if (!next)
			break;
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	for (unsigned int i = 0; i < n; i++) {
		dinfo(NFS, "client %#llx: delegation of %#llx revoked: the MDS took the caps back before it was returned",
		      (unsigned long long)ids[i], (unsigned long long)ino);
		revoked_count(srv, ids[i]);
	}
}

void nfs4_deleg_caps_revoked(struct nfs4_server *srv, uint64_t ino, uint32_t lost, uint64_t wait_ns)
{
	/* Fb alone: another opener, no writer - read delegations stand */
	bool writes_only = !(lost & (LC_CAP_CACHE | LC_CAP_ATTRS));
	struct nfs4ops_ctx *c;

	pthread_mutex_lock(&srv->lock);
	c = srv->hooks.tick ? srv->hooks.arg : NULL;
	pthread_mutex_unlock(&srv->lock);
	if (!c)
		return;
	if (!lost)
		return;
	if (wait_ns)
		break_ino_until(srv, ino, writes_only, now_mono_ns() + wait_ns);
	revoke_ino(srv, c, ino, writes_only);   /* what is still out goes now: the ack must not wait longer */
}

void nfs4_deleg_wait(struct nfs4_server *srv, uint64_t deadline)
{
	struct nfs4ops_ctx *c;
	struct timespec ts;

	pthread_mutex_lock(&srv->lock);
	c = srv->hooks.tick ? srv->hooks.arg : NULL;
	pthread_mutex_unlock(&srv->lock);
	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	if (!c) {
		/* no state yet: sleep all the same, the caller polls */
		struct timespec rel;
		uint64_t now = now_mono_ns();

		if (deadline <= now)
			return;
		rel.tv_sec = (time_t)((deadline - now) / 1000000000ull);
		rel.tv_nsec = (long)((deadline - now) % 1000000000ull);
		nanosleep(&rel, NULL);
		return;
	}
	pthread_mutex_lock(&c->st->lock);
	pthread_cond_timedwait(&c->st->deleg_cv, &c->st->lock, &ts);
	pthread_mutex_unlock(&c->st->lock);
}

int nfs4_deleg_break_ino(struct nfs4_server *srv, uint64_t ino, bool write, bool wait)
{
	if (!wait)
		return break_ino_until(srv, ino, !write, 0);
	return break_ino_until(srv, ino, !write, now_mono_ns() + srv->p.lease_ns + 5000000000ull);
}

int nfs4_deleg_break_ino_until(struct nfs4_server *srv, uint64_t ino, uint64_t deadline)
{
	return break_ino_until(srv, ino, false, deadline);
}

int nfs4_deleg_break_caps(struct nfs4_server *srv, uint64_t ino, uint32_t lost, uint64_t deadline)
{
	return break_ino_until(srv, ino, !(lost & (LC_CAP_CACHE | LC_CAP_ATTRS)), deadline);
}

static int break_ino_until(struct nfs4_server *srv, uint64_t ino, bool writes_only, uint64_t deadline)
{
	struct nfs4ops_ctx *c;
	struct nfs4ops_recall rc[8];
	bool wait = deadline != 0;

	if (!deadline)
		deadline = UINT64_MAX;
	unsigned int n;
	bool stopping;

	pthread_mutex_lock(&srv->lock);
	c = srv->hooks.tick ? srv->hooks.arg : NULL;   /* no compound yet: no delegation either */
	pthread_mutex_unlock(&srv->lock);
	if (!c)
		return 0;
	for (;;) {
		struct os_file *f;
		bool any = false;
		struct timespec ts;
		uint64_t now = now_mono_ns(), until;

		/* srv->lock before st->lock, never under it */
		pthread_mutex_lock(&srv->lock);
		stopping = srv->stopping;
		pthread_mutex_unlock(&srv->lock);
		if (stopping || now >= deadline)
			break;
		pthread_mutex_lock(&c->st->lock);
		f = os_file_get_locked(c->st, ino, false);
		n = 0;
		for (struct os_stid *d = f ? f->stids : NULL; d; d = d->fnext) {
			if (d->kind != OS_DELEG || d->revoked || (writes_only && !os_deleg_is_write(d)))
				continue;
			any = true;
			if (!d->recalled && n < 8)
				recall_mark_locked(c->st, d, now, &rc[n++]);
		}
		if (any && !n && !wait) {
			pthread_mutex_unlock(&c->st->lock);
			return -EAGAIN;
		}
		if (any && !n) {
			/* recalled: wait for a DELEGRETURN or the revocation */
			until = now + 100000000ull < deadline ? now + 100000000ull : deadline;
			ts.tv_sec = (time_t)(until / 1000000000ull);
			ts.tv_nsec = (long)(until % 1000000000ull);
			pthread_cond_timedwait(&c->st->deleg_cv, &c->st->lock, &ts);
		}
		pthread_mutex_unlock(&c->st->lock);
		if (!any)
			break;
		for (unsigned int i = 0; i < n; i++) {
			dout(NFS, 5, "client %#llx: recalling its delegation of %#llx for a %s beside the gateway",
			     (unsigned long long)rc[i].clientid, (unsigned long long)ino, writes_only ? "reader" : "writer");
			perf_inc(&srv->perf.delegs_recalled, 1);
			nfs4_cb_recall(srv, rc[i].clientid, &rc[i].sid, &rc[i].fh);
		}
	}
	return 0;
}

/*
 * This gateway's own request changes @ino the way a delegation promises
 * nobody else will (REMOVE, RENAME of it or over it, LINK, SETATTR of the
 * size, mode or owner, a truncating OPEN): every delegation on it that
 * @holder (0: the session's client, else the client of @sid when it is a
 * regular stateid) does not hold is recalled, and the request is answered
 * NFS4ERR_DELAY while one is out (RFC 8881 10.4.4, as knfsd: no worker
 * waits for a DELEGRETURN; the client retries).  The MDS does not revoke
 * caps from the client that asks, so nothing else would recall them.
 */
uint32_t nfs4ops_deleg_conflict(struct nfs4_compound *cs, uint64_t ino, uint64_t holder,
				const struct nfs4_stateid *sid)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct nfs4ops_recall rc[8];
	unsigned int n = 0;
	struct os_file *f;
	bool any = false;
	uint64_t now = now_mono_ns();

	if (!holder && cs->clp)
		holder = cs->clp->clientid;
	pthread_mutex_lock(&c->st->lock);
	if (!holder && sid && !os_is_special(sid)) {
		struct os_stid *s;

		if (os_stid_check_locked(c->st, sid, cs->minorversion, 0, OS_KIND_ALL, &s) == NFS4_OK)
			holder = s->clientid;
	}
	f = os_file_get_locked(c->st, ino, false);
	for (struct os_stid *d = f ? f->stids : NULL; d; d = d->fnext) {
		if (d->kind != OS_DELEG || d->revoked || (holder && d->clientid == holder))
			continue;
		any = true;
		if (!d->recalled && n < 8)
			recall_mark_locked(c->st, d, now, &rc[n++]);
	}
	pthread_mutex_unlock(&c->st->lock);
	for (unsigned int i = 0; i < n; i++)
		nfs4ops_deleg_recall_send(cs, &rc[i]);
	return any ? NFS4ERR_DELAY : NFS4_OK;
}
