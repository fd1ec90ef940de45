/*
 * journal_replay.c - replay at start: every entry after the header's expire
 * position is applied to memory (mdcache_replay_edit, which hands the
 * tables of the layers above to them through mdcache_hooks), the tail is
 * checked (a torn last write is cut, damage stops the MDS with what to do:
 * journal_int.h's rules), and a format-1 journal is upgraded.  Runs before
 * the writer thread and any connection exist: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crc32c.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/journal_priv.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/mdcache.h"
#include "mds/net.h"

/* ---- replay and start ------------------------------------------------------ */

static int replay_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		       const char *key2)
{
	struct mds *m = arg;
	int r = mdcache_replay_edit(m, op, oid, key, val, len, key2);

	if (r)
		derr(JOURNAL, "replay: edit %d of %s/%s failed: %s (skipped)", op, oid, key, strerror(-r));
	return 0;
}

/* jent_fn of replay: apply an entry to memory.  Caller holds mds->lock. */
static int replay_entry(void *arg, uint64_t segno, size_t off, const struct jentry *e)
{
	struct mds *m = arg;
	int r;

	if (e->type != JE_EDITS)
		return 0;
	if (e->seq && e->seq <= m->j->replay_skip) {
		/* a standby-replay applied it to its cache already */
		m->j->replay_skipped++;
		m->j->replay_last_edit = e->seq;
		return 0;
	}
	m->j->replay_applied++;
	r = jedits_for_each(e->payload, e->plen, replay_edit, m);
	if (r)
		derr(JOURNAL, "replay: entry %" PRIu64 " at %" PRIx64 "+%zu does not decode (%s); skipped", e->seq,
		     segno, off, strerror(-r));
	m->j->replay_last_edit = e->seq;
	return 0;
}

/* jseg_fn of replay: keep a segment's bytes for expiry (or as the current one). */
static int replay_segment(void *arg, const struct jseg_info *si, uint8_t *data)
{
	struct mds *m = arg;
	struct journal *j = m->j;
	struct jseg *s = jseg_new(si->no, j->hdr.fmt);

	if (!s || jseg_add_chunk(s, data, si->valid)) {
		free(data);
		free(s);
		return -ENOMEM;
	}
	s->first_ns = si->nedits ? now_mono_ns() : 0;
	s->nentries = si->nentries;
	s->nedits = si->nedits;
	s->start_seq = si->first_seq;
	s->last_seq = si->last_seq;
	s->opened = si->nentries > 0;
	s->trunc = si->valid < si->size;
	if (si->sealed) {
		*j->sealed_tail = s;
		j->sealed_tail = &s->next;
		j->nsealed++;
	} else {
		j->cur = s;
	}
	return 0;
}

const char *journal_damage_msg(struct mds *m)
{
	return m->j && m->j->damage[0] ? m->j->damage : NULL;
}

int journal_replay(struct mds *m)
{
	return journal_replay_from(m, 0);
}

int journal_replay_from(struct mds *m, uint64_t applied)
{
	struct journal *j;
	struct jscan_result res;
	struct jreader rd;
	const char *why;
	int r;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&j->cond, &ca);
		pthread_cond_init(&j->space, NULL);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&j->hdr_lock, NULL);
	pthread_mutex_init(&j->seg_lock, NULL);
	pthread_mutex_init(&j->expire_lock, NULL);
	mdsp_buf_init(&j->pending);
	j->items_tail = &j->items;
	j->sealed_tail = &j->sealed;
	j->seg_size = cfg_uint(CFG_mds_journal_segment_size);
	if (j->seg_size < 4096)
		j->seg_size = 4096;
	m->j = j;

	r = journal_header_read(m->meta, &j->hdr, &why);
	if (r == -ENOENT)
		why = "the object is missing";
	if (r == -EBADMSG || r == -ENOENT) {
		snprintf(j->damage, sizeof(j->damage),
			 "the journal header %s is damaged: %s.  The MDS does not start on a damaged journal: "
			 "see `loligo-mds --journal-inspect`; `loligo-mds journal reset --yes-i-really-mean-it` "
			 "writes a new one (the changes still in the journal are lost)", OID_JOURNAL, why);
		derr(JOURNAL, "%s", j->damage);
		return -EUCLEAN;
	}
	if (r) {
		derr(JOURNAL, "cannot read the journal header %s: %s", OID_JOURNAL, strerror(-r));
		return r;
	}
	if (applied && (j->hdr.fmt != JFMT_V2 || j->hdr.expire_seq > applied + 1)) {
		dinfo(JOURNAL, "the journal starts at entry %" PRIu64 " (segment %" PRIx64 "), after the entries this "
		      "standby-replay applied (up to %" PRIu64 "): what lies between is in the objects only",
		      j->hdr.expire_seq, j->hdr.expire_seg, applied);
		return -ESTALE;
	}
	j->replay_skip = applied;
	j->expire_seg = j->hdr.expire_seg;
	j->removed_upto = j->hdr.removed_upto;
	journal_hdr_publish(j);
	journal_store_reader(m->meta, &rd);
	m->replaying = true;
	pthread_mutex_lock(&m->lock);
	r = jscan(&j->hdr, &rd, replay_entry, replay_segment, m, &res);
	pthread_mutex_unlock(&m->lock);
	m->replaying = false;
	if (r == -EUCLEAN) {
		char ent[48] = "";

		if (res.bad_seq)
			snprintf(ent, sizeof(ent), " (entry %" PRIu64 ")", res.bad_seq);
		snprintf(j->damage, sizeof(j->damage),
			 "the journal is damaged: segment object %s, offset %zu%s: %s.  This is not the torn tail "
			 "of a crash (that can only be at the end of the newest segment), so the MDS does not start: "
			 "replaying past it would serve a filesystem that silently lost changes.  See "
			 "`loligo-mds --journal-inspect`, save the journal with `loligo-mds journal export FILE`, "
			 "then repair or restore the object, or run `loligo-mds journal reset --yes-i-really-mean-it` "
			 "(applies every entry before the damage and drops the rest: the changes from there on are lost)",
			 res.bad_oid, res.bad_off, ent, res.why);
		derr(JOURNAL, "%s", j->damage);
		return r;
	}
	if (r) {
		derr(JOURNAL, "journal replay failed: %s", strerror(-r));
		return r;
	}
	if (applied && (!res.next_seq || res.next_seq - 1 < applied)) {
		derr(JOURNAL, "the journal ends at entry %" PRIu64 ", before entry %" PRIu64 " this standby-replay "
		     "applied: its cache is not the journal's", res.next_seq ? res.next_seq - 1 : 0, applied);
		return -ESTALE;
	}
	if (!j->cur) {
		/* the newest segment is sealed, or there is none: the next one
		 * starts with the next write */
		j->cur = jseg_new(res.next_seg, j->hdr.fmt);
		if (!j->cur)
			return -ENOMEM;
	}
	if (!j->cur->opened)
		j->cur->start_seq = res.next_seq;
	if (res.torn_bytes)
		dinfo(JOURNAL, "journal segment %" PRIx64 ": cutting a torn tail of %zu bytes at %zu (a write that "
		      "was in flight at a crash, never acknowledged)", res.newest_seg, res.torn_bytes,
		      res.newest_valid);
	/* the last seq handed out: the current segment's last entry, or its
	 * SEG_START's if that is still to be written */
	j->next_seq = j->cur->opened ? j->cur->last_seq : j->cur->start_seq;
	j->written_seq = res.next_seq ? res.next_seq - 1 : 0;   /* replayed: durable */
	j->cur_len = j->cur->len;
	j->cur_nedits = j->cur->nedits;
	j->cur_first_ns = j->cur->first_ns;
	if (applied)
		dinfo(JOURNAL, "journal (format %u) replayed %" PRIu64 " entries from segment %" PRIx64 " to %" PRIx64
		      "+%zu: standby-replay had applied %" PRIu64 " of them (up to entry %" PRIu64 "), %" PRIu64
		      " applied at takeover", j->hdr.fmt, res.nedits, j->hdr.expire_seg, j->cur->no, j->cur->len,
		      j->replay_skipped, applied, j->replay_applied);
	else
		dinfo(JOURNAL, "journal (format %u) replayed %" PRIu64 " entries from segment %" PRIx64 " to %" PRIx64
		      "+%zu", j->hdr.fmt, res.nedits, j->hdr.expire_seg, j->cur->no, j->cur->len);
	return 0;
}

/*
 * A format-1 journal (replayed with its own rules) is applied to the
 * objects and replaced by an empty format-2 one before the MDS serves.
 * Crash-safe: until the format-2 header is written, a restart replays the
 * format-1 journal again (edits are idempotent).
 */
int journal_upgrade_v1(struct mds *m)
{
	struct journal *j = m->j;
	struct jseg *cur = j->cur;
	uint64_t next = cur->no + (cur->nentries ? 1 : 0);

	if (!next)
		next = 1;   /* head_seg = next - 1 must be a number below it */
	int r;

	dinfo(JOURNAL, "journal format 1: applying it to the objects and starting a format-2 journal at segment %"
	      PRIx64, next);
	if (cur->nentries) {
		pthread_mutex_lock(&j->seg_lock);
		*j->sealed_tail = cur;
		j->sealed_tail = &cur->next;
		j->nsealed++;
		pthread_mutex_unlock(&j->seg_lock);
		j->cur = NULL;
	} else {
		jseg_free(cur);
		j->cur = NULL;
	}
	journal_expire_sealed(m);
	if (j->sealed) {
		derr(JOURNAL, "cannot convert the format-1 journal: expiring segment %" PRIx64 " failed; fix the "
		     "store and start again", j->sealed->no);
		return -EIO;
	}
	pthread_mutex_lock(&j->hdr_lock);
	j->hdr.fmt = JFMT_V2;
	j->hdr.expire_seg = next;
	j->hdr.expire_seq = 1;
	j->hdr.removed_upto = j->removed_upto;
	j->hdr.head_seg = next - 1;
	r = journal_header_write(m->meta, &j->hdr);
	if (!r)
		journal_hdr_publish(j);
	pthread_mutex_unlock(&j->hdr_lock);
	if (r) {
		derr(JOURNAL, "cannot convert the format-1 journal: writing the header failed: %s", strerror(-r));
		return r;
	}
	j->expire_seg = next;
	j->cur = jseg_new(next, JFMT_V2);
	if (!j->cur)
		return -ENOMEM;
	j->cur->start_seq = 1;
	j->next_seq = 1;
	j->replay_last_edit = 0;
	atomic_store(&j->clean_below, 1);
	j->cur_len = 0;
	j->cur_nedits = 0;
	j->cur_first_ns = 0;
	return 0;
}
