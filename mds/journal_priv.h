/*
 * journal_priv.h - private to the journal: the state journal.c (the
 * writer), journal_expire.c (applying edits to the objects, expiry) and
 * journal_replay.c (replay at start) share, and the helpers they call in
 * each other.  The rest of mds/ sees journal.h only.
 *
 * Lock order inside the journal (mds.h and docs/LOCKING.md have the whole
 * MDS's); outermost first:
 *   j->expire_lock     one expiry at a time (journal_expire.c)
 *     j->hdr_lock      j->hdr; held across a header write
 *     j->seg_lock      the sealed list
 *     x->lock          one japply's ops in flight (journal_expire.c)
 *   j->lock            the queue and the writer's state: taken under
 *                      mds->lock and conn->send_lock; none of the four
 *                      above is held when it is taken or taken under it
 * The store's locks are leaves under all of these.
 */
#ifndef LOLIGO_MDS_JOURNAL_PRIV_H
#define LOLIGO_MDS_JOURNAL_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/perf.h"
#include "mds/journal_int.h"
#include "mds/mds.h"

struct jchunk {
	struct jchunk *next;
	uint8_t *data;
	size_t len;
};

/*
 * One segment.  The current one (j->cur) is owned by the writer thread
 * (and by replay/start before the writer runs); sealed ones are on the
 * sealed list, owned by expiry.
 */
struct jseg {
	struct jseg *next;
	uint64_t no;
	uint32_t fmt;
	size_t len;                   /* bytes written (durable) and valid */
	struct jchunk *chunks, **tail;
	uint64_t first_ns;            /* when its first EDITS entry was written (0: none yet) */
	uint64_t nentries;            /* entries of every type */
	uint64_t nedits;
	uint64_t start_seq;           /* v2: seq of its SEG_START */
	uint64_t last_seq;            /* seq of its last entry (SEG_END once sealed) */
	bool opened;                  /* v2: SEG_START is durable (else the next write starts it) */
	bool trunc;                   /* the object holds a torn tail past len: cut it with the next write */
};

struct journal {
	pthread_mutex_t lock;         /* protects the fields up to "writer" */
	pthread_cond_t cond;
	struct mdsp_buf pending;      /* encoded entries not yet written */
	uint32_t npending;
	struct jitem *items, **items_tail;
	struct jitem *writing_items;	/* the batch the writer has taken (`ops`); protected by lock */
	uint64_t next_seq;            /* last seq handed out */
	uint64_t written_seq;         /* entries up to it are durable (journal_wait_written) */
	bool stop, seal_req, writing;
	bool draining;                /* shutdown: write what is queued at once (journal_drain) */
	bool urgent;                  /* somebody waits for what is queued: no mds_journal_max_delay
				       * (journal_submit_locked, journal_flush_hint); the writer
				       * clears it as it takes a batch */
	uint64_t seg_size;
	size_t cur_len;               /* copies of cur->len, cur->nedits and cur->first_ns for journal_tick */
	uint64_t cur_nedits;
	uint64_t cur_first_ns;
	/* write failures: while werr != 0 the MDS is read-only */
	int werr;
	uint64_t werr_since_ns, werr_retries, werr_logged_ns;
	char werr_oid[64];

	pthread_t writer;
	bool writer_started;
	struct jseg *cur;             /* writer-owned (and replay) */

	_Atomic int ro_err;           /* copy of werr, read without the lock by journal_admit() */

	pthread_mutex_t hdr_lock;     /* protects hdr; held across a header write so that
				       * two writers (the journal writer naming a new head, expiry
				       * moving the expire position) never overtake each other */
	struct jheader hdr;
	/* what the header on disk says, for status (no hdr_lock: a header
	 * write may take an OSD timeout) */
	_Atomic uint64_t pub_expire_seg, pub_head_seg;
	_Atomic uint32_t pub_fmt;

	pthread_mutex_t seg_lock;     /* protects sealed list */
	struct jseg *sealed, **sealed_tail;
	uint64_t nsealed;
	pthread_mutex_t expire_lock;  /* one expiry at a time */
	uint64_t expire_seg;          /* protected by expire_lock */
	uint64_t removed_upto;        /* segment objects below this are removed; expire_lock */
#define JOURNAL_KEEP_RING 64
	uint64_t expired_ns[JOURNAL_KEEP_RING];  /* expire_lock: when segment no (at no % ring) expired */
	bool expire_failing;          /* expire_lock: the last expiry failed (log once) */
	_Atomic uint64_t clean_below; /* entries with a lower seq are expired (0: replayed ones are not yet) */
	uint64_t replay_last_edit;    /* seq of the last EDITS entry replayed at start (v2) */
	uint64_t replay_skip;         /* replay applies only entries after this one (a standby-replay's position) */
	uint64_t replay_applied, replay_skipped;  /* EDITS entries replay applied, and left to the standby-replay's cache */

	char damage[1536];             /* why replay refused the journal (-EUCLEAN) */

	/*
	 * What journal_throttle bounds (protected by lock): the bytes of the
	 * entries queued or in the write in flight, with the reply frames
	 * (and their jitems) waiting for those entries to be SAFE.  A batch's
	 * bytes leave it only once its replies are sent, so a write in flight
	 * counts until it is durable.
	 */
	uint64_t qbytes;
	uint64_t qbytes_batch;        /* the part of qbytes in the writer's batch */
	uint64_t qbytes_peak;         /* the highest qbytes seen (perf queued_bytes_max) */
	struct jwaiter *waiters;      /* requests waiting in journal_throttle (`ops`) */
	uint32_t nwaiting;

	pthread_cond_t space;         /* qbytes or the segments in memory shrank (throttled requests wait on it) */
	struct perf_counter writes, entries, bytes, expired, expire_errors, throttled, write_errors, refused;
	struct perf_counter throttled_segments;   /* of throttled: waiting for expiry, not a write */
	struct perf_counter flush_hints;          /* clients that wait for SAFE asked for a write now */
	struct hist batch, write_lat, expire_lat, throttle_lat;
};

/* A request waiting in journal_throttle (on its reader's stack), for `ops`. */
struct jwaiter {
	struct jwaiter *next;
	uint64_t sid, tid, start_ns;
	uint32_t op;
	bool segments;                /* waits for expiry (segments in memory), not for a write */
};

/* Bytes of journal segments held in memory (the current one and the sealed
 * ones not yet expired: expiry applies them from memory). */
extern _Atomic uint64_t journal_seg_mem;

/* journal.c */
struct jseg *jseg_new(uint64_t no, uint32_t fmt);
void jseg_free(struct jseg *s);
int jseg_add_chunk(struct jseg *s, uint8_t *data, size_t len);
/* journal_hdr_publish - copy j->hdr to the lock-free pub_* fields (status).  Caller holds hdr_lock. */
void journal_hdr_publish(struct journal *j);

/* journal_space_freed_locked - the queue or the segments shrank, or the
 * journal went read-only or stops: throttled requests look again (j->space)
 * and so do the event loops' held ones (the space_freed hook).  Caller
 * holds j->lock. */
void journal_space_freed_locked(struct mds *m);

/* journal_expire.c */
/* journal_remove_segments - remove expired segment objects below @below.  Caller holds expire_lock. */
void journal_remove_segments(struct mds *m, uint64_t below);

/* journal_replay.c */
/* journal_upgrade_v1 - replace a format-1 journal by an empty format-2 one (after its replay). */
int journal_upgrade_v1(struct mds *m);

#endif
