/*
 * prealloc.c - inode numbers preallocated to each session (Ceph's
 * prealloc_inos), so that a replayed create gets exactly the ino it had.
 *
 * A create answered UNSAFE may be lost in an MDS crash before its journal
 * entry is written.  Its client replays it after the restart, but by then
 * it has written data to the inode the UNSAFE reply named (data objects are
 * named after the ino), and it may have created children in it or linked it
 * elsewhere, requests that name that ino and are replayed after it.  So the
 * replay must create that very ino again, or fail loudly; a new ino would
 * leave the data and the children behind.
 *
 * Each session owns a few ranges of unused inode numbers, granted from the
 * global high-water mark (mds_grant_inos, mdcache.c) and kept in the
 * session record, which every create journals in the same entry as the
 * create itself.  Journal entries become durable in order, so after a crash
 * the session's pool is exactly what it was after its last durable create:
 * every ino taken by a create that was only UNSAFE is back in it.  A fresh
 * create takes the lowest ino of its session's pool; a replay
 * (MDSP_REQ_REPLAY with want_ino, the ino of its UNSAFE reply) takes
 * exactly that one:
 *   - it is in the session's pool: it is taken out;
 *   - it is at or above the high-water mark: the grant that gave it to the
 *     session rode in an entry that the crash lost too, and nobody has been
 *     given it since (a grant moves the mark in the same entry, with no
 *     reserve ahead); [mark, want] is granted to the session again and want
 *     taken.  Bounded: a want far above the mark is refused like the next;
 *   - otherwise it belongs to someone else or is in use: the replay fails
 *     with EEXIST and a log line saying the client's change is lost, never
 *     with another ino.
 * Restored sessions replay before any other session's new mutation runs
 * (the reconnect phase, session.c), so the second case does not race a new
 * grant; after mds_reconnect_timeout it may, and the replay then fails
 * loudly.  So does the rare replay whose lost grant lies below another
 * session's lost grant that was re-granted first (both sessions must have
 * used up half a pool in the unwritten tail of the journal for that).  A
 * request resent after a lost connection (MDSP_REQ_RETRY) is treated as a
 * replay here.  A want_ino on a fresh request must name an unused ino
 * delegated to the session (below), else it is refused (EINVAL).
 *
 * The pool gets a new grant of mds_client_prealloc_inos when it falls below
 * half of that, so the inos a create uses were usually granted many entries
 * earlier.  At most MDS_PREALLOC_RANGES ranges are kept (replays out of
 * order split ranges); beyond, the smallest is dropped (its inos are never
 * used: the high-water mark never comes back to them).
 *
 * Delegated ranges (asynchronous creates, issue 13.3): a create flagged
 * MDSP_REQ_WANT_INOS also gets a fresh range that is the client's to pick
 * from (reply deleg_start/deleg_len, Ceph's delegated_inos): it answers a
 * create itself with one of them and sends the request, with want_ino,
 * in the background.  The MDS never picks a delegated ino for a create
 * without want_ino, and a want_ino on a fresh request must be in the
 * session's pool, unused and not stale (else EINVAL, logged: never another
 * ino).  The
 * delegated mark is journaled with the pool (session record v5): after a
 * restart the MDS must still not pick those inos for a fresh create, since
 * the client may have answered creates with some of them that it sends only
 * now.  The client drops what it was told at any reconnect and asks again;
 * the old ranges become stale (taken by its requests resent with
 * MDSP_REQ_RETRY, or sent first on the new connection, like a replay; never
 * delegated again).  Before its RECONNECT the client stops taking inos from
 * them and waits until every ino it took is in a registered request, and
 * says the highest tid then (deleg_tid): once the session's oldest_tid
 * passes it, every request that could name a stale range was answered
 * safely, and the range is freed (prealloc_trim_stale_locked).  Without a
 * bound (an older client, or the client's wait timed out) a stale range is
 * kept, and is the first dropped when the pool needs room, the oldest first.
 *
 * Everything here runs under mds->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/rcu.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/mdcache.h"
#include "mds/prealloc.h"
#include "mds/session.h"

/* how far above the high-water mark a replay may reach: grants lost in one crash */
#define LOST_GRANTS_MAX 64

static uint64_t chunk(void)
{
	uint64_t n = cfg_uint(CFG_mds_client_prealloc_inos);

	return n ? n : 1;
}

uint64_t prealloc_count(const struct session *s)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < s->nprealloc; i++)
		n += s->prealloc[i].len;
	return n;
}

uint32_t prealloc_stale_count(const struct session *s)
{
	uint32_t i, n = 0;

	for (i = 0; i < s->nprealloc; i++)
		n += s->prealloc[i].stale;
	return n;
}

static void remove_at(struct session *s, uint32_t i)
{
	memmove(&s->prealloc[i], &s->prealloc[i + 1], (s->nprealloc - i - 1) * sizeof(s->prealloc[0]));
	s->nprealloc--;
}

/* which range to drop first for room: a stale delegation (its client forgot
 * it), then one of the MDS's own, last one the client may still name */
static int drop_rank(const struct ino_range *r)
{
	return r->stale ? 0 : r->deleg ? 2 : 1;
}

/*
 * Make room for one more range: drop one (its inos are never used).  Of the
 * lowest rank; of stale ones the oldest (the lowest: the mark only grows),
 * whose requests are the likeliest answered by now, else the smallest.
 */
static void make_room(struct session *s)
{
	const struct ino_range *a, *b;
	uint32_t i, min = 0;

	if (s->nprealloc < MDS_PREALLOC_RANGES)
		return;
	for (i = 1; i < s->nprealloc; i++) {
		a = &s->prealloc[i];
		b = &s->prealloc[min];
		if (drop_rank(a) < drop_rank(b) ||
		    (drop_rank(a) == drop_rank(b) && !a->stale && a->len < b->len))
			min = i;                /* ranges are sorted: a stale b is older */
	}
	dout(MDS, 5, "session %" PRIu64 ": ino pool has %u ranges: dropping [%" PRIx64 ", +%" PRIu64 ")", s->id,
	     s->nprealloc, s->prealloc[min].start, s->prealloc[min].len);
	remove_at(s, min);
}

/* A fresh grant: above everything in the pool (the mark only grows). */
static void add_grant(struct session *s, uint64_t start, uint64_t len, bool deleg)
{
	struct ino_range *last = s->nprealloc ? &s->prealloc[s->nprealloc - 1] : NULL;

	if (last && last->start + last->len == start && last->deleg == deleg && !last->stale) {
		last->len += len;
		return;
	}
	make_room(s);
	s->prealloc[s->nprealloc].start = start;
	s->prealloc[s->nprealloc].len = len;
	s->prealloc[s->nprealloc].deleg = deleg;
	s->prealloc[s->nprealloc].stale = false;
	s->prealloc[s->nprealloc].stale_tid = 0;
	s->nprealloc++;
}

/* inos the MDS may pick itself (not delegated), and the lowest of them */
static uint64_t own_count(const struct session *s, uint64_t *lowest)
{
	uint64_t n = 0;
	uint32_t i;

	*lowest = 0;
	for (i = 0; i < s->nprealloc; i++) {
		if (s->prealloc[i].deleg)
			continue;
		if (!n)
			*lowest = s->prealloc[i].start;
		n += s->prealloc[i].len;
	}
	return n;
}

static int find(const struct session *s, uint64_t ino)
{
	uint32_t i;

	for (i = 0; i < s->nprealloc; i++)
		if (ino >= s->prealloc[i].start && ino - s->prealloc[i].start < s->prealloc[i].len)
			return (int)i;
	return -1;
}

/* Take @ino out of the pool.  Return: 0, or -ENOENT if it is not in it. */
static int take(struct session *s, uint64_t ino)
{
	struct ino_range *r;
	uint64_t end;
	int i = find(s, ino);

	if (i < 0)
		return -ENOENT;
	r = &s->prealloc[i];
	if (ino != r->start && ino != r->start + r->len - 1 && s->nprealloc == MDS_PREALLOC_RANGES) {
		make_room(s);                   /* a split needs a slot */
		i = find(s, ino);
		if (i < 0)
			return 0;               /* dropped with its range: unusable by anyone else */
		r = &s->prealloc[i];
	}
	end = r->start + r->len;
	if (ino == r->start) {
		r->start++;
		if (!--r->len)
			remove_at(s, (uint32_t)i);
	} else if (ino == end - 1) {
		r->len--;
	} else {
		/* split: [start, ino) stays, [ino + 1, end) follows it */
		r->len = ino - r->start;
		memmove(&s->prealloc[i + 2], &s->prealloc[i + 1],
			(s->nprealloc - (uint32_t)i - 1) * sizeof(s->prealloc[0]));
		s->prealloc[i + 1].start = ino + 1;
		s->prealloc[i + 1].len = end - ino - 1;
		s->prealloc[i + 1].deleg = r->deleg;
		s->prealloc[i + 1].stale = r->stale;
		s->prealloc[i + 1].stale_tid = r->stale_tid;
		s->nprealloc++;
	}
	return 0;
}

static bool ino_in_use(struct mds *m, uint64_t ino)
{
	bool used;

	rcu_read_lock();
	used = xa_load(&m->inodes, ino) != NULL;
	rcu_read_unlock();
	return used;
}

int prealloc_take_locked(struct mds *m, struct session *s, const struct mdsp_request *req, struct txn *t,
			 uint64_t *ino)
{
	uint64_t want = req->want_ino, n = chunk(), start;
	bool resent = req->flags & (MDSP_REQ_REPLAY | MDSP_REQ_RETRY);

	if (want) {
		int i = find(s, want);

		if (!resent && (i < 0 || !s->prealloc[i].deleg || s->prealloc[i].stale || ino_in_use(m, want))) {
			derr(MDS, "session %" PRIu64 " (%s) tid %" PRIu64 ": %s of '%s' names ino %" PRIx64 ", which "
			     "is not an unused ino delegated to the session: refused (EINVAL); a client names an ino "
			     "only from a range a reply delegated (deleg_start) on its current connection, and resends "
			     "with MDSP_REQ_RETRY a request whose ino came from an earlier one",
			     s->id, s->client_name ? s->client_name : "", req->tid, mdsp_op_name(req->op),
			     req->name ? req->name : "", want);
			return -EINVAL;
		}
		if (ino_in_use(m, want))
			goto refuse;
		if (take(s, want) == 0)
			goto got;
		/* a resent request may name an ino of a grant the crash lost */
		if (want >= m->next_ino && want - m->next_ino < n * LOST_GRANTS_MAX) {
			start = mds_grant_inos(m, t, 0, want + 1);
			add_grant(s, start, want + 1 - start, false);
			take(s, want);
			dinfo(MDS, "session %" PRIu64 " tid %" PRIu64 ": replay takes ino %" PRIx64 ", whose grant "
			      "was lost in the crash with it", s->id, req->tid, want);
			goto got;
		}
refuse:
		derr(MDS, "session %" PRIu64 " (%s) tid %" PRIu64 ": replayed %s of '%s' wants ino %" PRIx64 ", which "
		     "is not preallocated to the session (in use, or given to another): refusing it; the client's "
		     "unsafe change is lost", s->id, s->client_name ? s->client_name : "", req->tid,
		     mdsp_op_name(req->op), req->name ? req->name : "", want);
		return -EEXIST;
	}
	if (!own_count(s, &want)) {
		prealloc_grant_locked(m, s, t);
		own_count(s, &want);
	}
	take(s, want);
got:
	if (own_count(s, &start) < n / 2)
		prealloc_grant_locked(m, s, t);
	session_rec_edit_locked(s, t);
	*ino = want;
	return 0;
}

void prealloc_grant_locked(struct mds *m, struct session *s, struct txn *t)
{
	uint64_t n = chunk();

	add_grant(s, mds_grant_inos(m, t, n, 0), n, false);
}

uint64_t prealloc_delegate_locked(struct mds *m, struct session *s, struct txn *t, uint64_t *len)
{
	uint64_t n = chunk(), start = mds_grant_inos(m, t, n, 0);

	add_grant(s, start, n, true);
	session_rec_edit_locked(s, t);
	dout(MDS, 10, "session %" PRIu64 ": delegated inos [%" PRIx64 ", +%" PRIu64 ")", s->id, start, n);
	*len = n;
	return start;
}

void prealloc_encode(struct mdsp_buf *b, const struct session *s)
{
	uint32_t i;

	enc_u32(b, s->nprealloc);
	for (i = 0; i < s->nprealloc; i++) {
		enc_u64(b, s->prealloc[i].start);
		enc_u64(b, s->prealloc[i].len);
	}
}

int prealloc_decode(struct dec *d, struct session *s)
{
	uint32_t n = dec_u32(d), i;
	struct ino_range r[MDS_PREALLOC_RANGES];

	if (d->bad || n > MDS_PREALLOC_RANGES)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		r[i].start = dec_u64(d);
		r[i].len = dec_u64(d);
		r[i].deleg = r[i].stale = false;   /* prealloc_deleg_restore */
		r[i].stale_tid = 0;
		if (!r[i].len || r[i].start + r[i].len < r[i].start ||
		    (i && r[i].start < r[i - 1].start + r[i - 1].len))
			return -EBADMSG;
	}
	if (d->bad)
		return -EBADMSG;
	memcpy(s->prealloc, r, n * sizeof(r[0]));
	s->nprealloc = n;
	return 0;
}

uint32_t prealloc_deleg_mask(const struct session *s)
{
	uint32_t i, mask = 0;

	for (i = 0; i < s->nprealloc; i++)
		if (s->prealloc[i].deleg)
			mask |= 1u << i;
	return mask;
}

void prealloc_deleg_restore(struct session *s, uint32_t mask)
{
	uint32_t i;

	for (i = 0; i < s->nprealloc; i++)
		s->prealloc[i].deleg = s->prealloc[i].stale = mask & (1u << i);
}

void prealloc_reconnect_locked(struct session *s, uint64_t deleg_tid)
{
	struct ino_range *r;
	uint32_t i;

	for (i = 0; i < s->nprealloc; i++) {
		r = &s->prealloc[i];
		if (!r->deleg)
			continue;
		r->stale = true;
		/* an older bound holds: tids only grow */
		if (!r->stale_tid || (deleg_tid && deleg_tid < r->stale_tid))
			r->stale_tid = deleg_tid;
	}
}

unsigned int prealloc_trim_stale_locked(struct session *s, uint64_t oldest_tid)
{
	struct ino_range *r;
	unsigned int n = 0;
	uint32_t i = 0;

	while (i < s->nprealloc) {
		r = &s->prealloc[i];
		if (!r->stale || !r->stale_tid || r->stale_tid >= oldest_tid) {
			i++;
			continue;
		}
		dout(MDS, 10, "session %" PRIu64 ": stale delegation [%" PRIx64 ", +%" PRIu64 ") freed: every "
		     "request up to tid %" PRIu64 " is answered", s->id, r->start, r->len, r->stale_tid);
		remove_at(s, i);
		n++;
	}
	return n;
}
