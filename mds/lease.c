/*
 * lease.c - dentry leases: a session may cache that a name maps to an
 * inode only while it holds a lease on that dentry (locker.c's essay has
 * the rules they share with caps).  A change to a name revokes the other
 * sessions' leases on it first; requests waiting for those revokes are
 * parked (park.c).  Runs under mds->lock; messages go out under it
 * (mds->lock -> conn->send_lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/locker.h"
#include "mds/locker_priv.h"
#include "mds/mdcache.h"


/* ---- leases ----------------------------------------------------------------- */

/* @s's lease on @dn: from the session's index, like cap_find. */
struct mlease *locker_lease_find(struct mdentry *dn, struct session *s)
{
	struct mlease *l;

	if (!dn->lease_id)
		return NULL;
	rcu_read_lock();
	l = xa_load(&s->lease_index, dn->lease_id);
	rcu_read_unlock();
	return l && l->dn == dn ? l : NULL;
}

/* A new lease of @s on @dn (not granted yet: seq 0), or NULL. */
struct mlease *locker_lease_add(struct mds *m, struct session *s, struct mdentry *dn)
{
	struct mlease *l = mds_obj_alloc(MDS_MEM_LEASE, sizeof(*l));

	if (!l)
		return NULL;
	if (!dn->lease_id)
		dn->lease_id = ++m->lease_ids;
	if (xa_insert(&s->lease_index, dn->lease_id, l)) {
		mds_obj_free(MDS_MEM_LEASE, l, sizeof(*l));
		return NULL;
	}
	l->dn = dn;
	l->s = s;
	CDS_INIT_LIST_HEAD(&l->revoke_item);
	l->next = dn->leases;
	dn->leases = l;
	cds_list_add_tail(&l->s_item, &s->leases);
	s->nleases++;
	return l;
}

void locker_lease_del(struct mlease *l)
{
	struct mlease **pp;

	xa_erase(&l->s->lease_index, l->dn->lease_id);
	for (pp = &l->dn->leases; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	cds_list_del(&l->s_item);
	if (l->revoke_seq)
		cds_list_del(&l->revoke_item);
	if (l->revoke_seq && l->recall)
		locker_recall_answered(l->s);
	l->s->nleases--;
	mds_obj_free(MDS_MEM_LEASE, l, sizeof(*l));
}

void locker_send_lease_msg(struct mlease *l, uint32_t op)
{
	struct mdsp_caps cm;

	memset(&cm, 0, sizeof(cm));
	cm.op = op;
	cm.ino = l->dn->dir->ino;
	cm.seq = l->seq;
	cm.dname = l->dn->name;
	locker_send_caps(l->s, &cm);
}

void locker_lease_revoke(struct mds *m, struct mlease *l)
{
	if (l->revoke_seq)
		return;
	l->revoke_seq = l->seq;
	l->revoke_ns = now_mono_ns();
	cds_list_add_tail(&l->revoke_item, &m->revoking_leases);
	perf_inc(&locker_c_lease_revokes, 1);
	dout(MDS, 10, "revoke lease on %" PRIx64 "/%s from session %" PRIu64, l->dn->dir->ino, l->dn->name,
	     l->s->id);
	locker_send_lease_msg(l, MDSP_CAPS_LEASE_REVOKE);
}

bool locker_lease_issue(struct mds *m, struct session *s, struct mdentry *dn, uint64_t *seq, bool replay)
{
	struct mlease *l;

	*seq = 0;
	if ((m->reconnecting && !replay) || dn->gather)
		return false;
	l = locker_lease_find(dn, s);
	if (l && l->revoke_seq)
		return false;
	if (!l && !(l = locker_lease_add(m, s, dn)))
		return false;
	l->seq = ++s->lease_seq;
	*seq = l->seq;
	/* s->leases in the order of last use: recall takes the coldest */
	cds_list_del(&l->s_item);
	cds_list_add_tail(&l->s_item, &s->leases);
	return true;
}

void locker_wake(struct mds *m, uint64_t ino);

void locker_dentry_drop(struct mds *m, struct mdentry *dn)
{
	bool revoking = false;

	while (dn->leases) {
		revoking |= dn->leases->revoke_seq != 0;
		locker_lease_del(dn->leases);
	}
	/* a request parked for those revokes waits for nothing now: its
	 * ack, if it still comes, finds no lease (a rename parked on a
	 * name that an unlink then removed waited for good) */
	if (revoking)
		locker_wake(m, dn->dir->ino);
}

void locker_dentry_move(struct mdentry *from, struct mdentry *to)
{
	struct mlease *l;

	for (l = from->leases; l; l = l->next)
		l->dn = to;
	to->leases = from->leases;
	from->leases = NULL;
	to->lease_id = from->lease_id;      /* the sessions' index keys stay */
	from->lease_id = 0;
	to->gather = from->gather;
}

void locker_handle_lease(struct mds *m, struct conn *c, struct session *s, struct mdsp_caps *msg)
{
	struct mdentry *dn;
	struct mlease *l;

	if (!msg->dname)
		return;
	dn = locker_dentry_at(m, msg->ino, msg->dname);
	l = dn ? locker_lease_find(dn, s) : NULL;
	if (!l) {
		/* gone meanwhile (the name was removed, the lease with it):
		 * whoever gathers on the directory looks again */
		locker_wake(m, msg->ino);
		return;
	}
	switch (msg->op) {
	case MDSP_CAPS_LEASE_ACK:
		if (!l->revoke_seq || msg->seq < l->revoke_seq)
			return;
		locker_revoke_answered(l->revoke_ns);
		locker_lease_del(l);
		break;
	case MDSP_CAPS_LEASE_RELEASE:
		if (msg->seq < l->seq)
			return;     /* released an older grant */
		locker_lease_del(l);
		break;
	default:
		dout(MDS, 1, "%s: unexpected caps op %s ignored", c->peer, mdsp_caps_op_name(msg->op));
		return;
	}
	locker_wake(m, msg->ino);
}
