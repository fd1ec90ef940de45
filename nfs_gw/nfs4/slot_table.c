/*
 * slot_table.c - NFSv4.1 slot table and per-slot reply cache (see
 * slot_table.h).  Sequence ids are compared with wrap-around: the RFC has
 * them wrap from 0xffffffff to 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "nfs_gw/nfs4/slot_table.h"

int slot_table_init(struct slot_table *t, uint32_t nslots)
{
	memset(t, 0, sizeof(*t));
	if (!nslots)
		return -EINVAL;
	t->slots = calloc(nslots, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->nslots = nslots;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void slot_table_destroy(struct slot_table *t)
{
	uint32_t i;

	if (!t->slots)
		return;
	for (i = 0; i < t->nslots; i++)
		free(t->slots[i].reply);
	free(t->slots);
	t->slots = NULL;
	pthread_mutex_destroy(&t->lock);
}

static void release_reply_locked(struct slot_table *t, struct nfs4_slot *s)
{
	/* caller holds t->lock */
	if (s->reply) {
		t->cached_bytes -= s->reply_len;
		free(s->reply);
	}
	s->reply = NULL;
	s->reply_len = 0;
	s->cached = false;
}

int slot_table_begin(struct slot_table *t, uint32_t slotid, uint32_t seqid, bool cachethis, uint32_t opcnt,
		     uint8_t **reply, size_t *len)
{
	struct nfs4_slot *s;
	int r;

	*reply = NULL;
	*len = 0;
	if (slotid >= t->nslots)
		return NFS4ERR_BADSLOT;
	pthread_mutex_lock(&t->lock);
	s = &t->slots[slotid];
	if (seqid == s->seqid + 1u) {
		/* new request: the implied ACK of the previous reply */
		if (s->inuse) {
			/* the client cannot have seen the previous reply */
			r = NFS4ERR_SEQ_MISORDERED;
			goto out;
		}
		release_reply_locked(t, s);
		s->seqid = seqid;
		s->used = true;
		s->inuse = true;
		s->cachethis = cachethis;
		s->opcnt = opcnt;
		r = SLOT_NEW;
	} else if (seqid == s->seqid && s->used) {
		if (s->inuse) {
			r = NFS4ERR_DELAY;
		} else if (s->cachethis != cachethis || s->opcnt != opcnt) {
			r = NFS4ERR_SEQ_FALSE_RETRY;
		} else if (s->cached) {
			*reply = malloc(s->reply_len ? s->reply_len : 1);
			if (!*reply) {
				r = NFS4ERR_DELAY;
				goto out;
			}
			memcpy(*reply, s->reply, s->reply_len);
			*len = s->reply_len;
			r = SLOT_REPLAY;
		} else {
			r = SLOT_REPLAY_UNCACHED;
		}
	} else {
		r = NFS4ERR_SEQ_MISORDERED;
	}
out:
	pthread_mutex_unlock(&t->lock);
	return r;
}

int slot_table_end(struct slot_table *t, uint32_t slotid, const uint8_t *reply, size_t len, bool cache)
{
	struct nfs4_slot *s;
	uint8_t *copy = NULL;
	int r = 0;

	if (slotid >= t->nslots)
		return -EINVAL;
	if (cache) {
		copy = malloc(len ? len : 1);
		if (copy)
			memcpy(copy, reply, len);
		else
			r = -ENOMEM;
	}
	pthread_mutex_lock(&t->lock);
	s = &t->slots[slotid];
	release_reply_locked(t, s);
	if (copy) {
		s->reply = copy;
		s->reply_len = len;
		s->cached = true;
		t->cached_bytes += len;
	}
	s->inuse = false;
	pthread_mutex_unlock(&t->lock);
	return r;
}

size_t slot_table_cached_bytes(struct slot_table *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->cached_bytes;
	pthread_mutex_unlock(&t->lock);
	return n;
}
