/*
 * journal_int.h - private to mds/: the journal's on-disk format and the
 * pieces the running MDS (journal.c, journal_expire.c) shares with the offline journal tool
 * (journal_tool.c).
 *
 * Format 2 (the current one), in the metadata pool:
 *
 *   "mds_journal"               header: u8 version 2, u8 compat 2, u32 len,
 *                               { u64 expire_seg, u64 expire_seq,
 *                                 u64 removed_upto, u64 head_seg },
 *                               then u32 crc32c of everything before it.
 *   "mds_journal.<seg %016x>"   append-only segments of entries:
 *        u32 magic "LJE2", u32 type, u64 seq, u32 len,
 *        u32 crc32c(the 20 header bytes before it, payload), payload.
 *
 * Every entry has the next sequence number: seq grows by exactly one from
 * entry to entry, across segments.  A segment starts with a SEG_START entry
 * whose payload is its own segment number and ends, once full or old, with
 * a SEG_END entry.  expire_seg is where replay starts and expire_seq the
 * sequence number of its SEG_START; head_seg is the newest segment that was
 * started (it exists: the writer creates a segment before it writes
 * head_seg).  Segments below removed_upto are removed.
 *
 * What a reader accepts (jscan()):
 *   - every segment in [expire_seg, head_seg] exists; head_seg + 1 may
 *     exist (created, header not yet written); no segment follows one that
 *     is not sealed;
 *   - entries parse, check and follow each other in sequence, the first of
 *     a segment is its SEG_START, nothing follows a SEG_END;
 *   - the one exception: the newest segment may end in a short entry, or in
 *     a bad one after which nothing valid follows.  That is the write that
 *     was in flight at a crash (never acknowledged), a "torn tail", and it
 *     is cut off.
 * Anything else is damage: the reader names the segment object, the offset
 * and what is wrong, and the MDS refuses to start (-EUCLEAN).
 *
 * Format 1 (before entries had sequence numbers: header version 1
 * { expire_seg, removed_upto }, entries "LJE1" with a 16-byte header and no
 * seq, no SEG_START) is still read: it is replayed with the rules it
 * allows (a bad entry is a torn tail only if no segment follows), expired
 * into the directory objects and replaced by an empty format-2 journal
 * before the MDS serves (journal_start()).
 */
#ifndef LOLIGO_MDS_JOURNAL_INT_H
#define LOLIGO_MDS_JOURNAL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_proto/proto.h"

struct mds;
struct store_pool;

#define JFMT_V1 1
#define JFMT_V2 2

#define JE1_MAGIC   0x31454a4cu   /* "LJE1" */
#define JE2_MAGIC   0x32454a4cu   /* "LJE2" */
#define JE1_HDR_LEN 16
#define JE2_HDR_LEN 24

enum jentry_type { JE_EDITS = 1, JE_SEG_END = 2, JE_SEG_START = 3 };

struct jheader {
	uint32_t fmt;                 /* JFMT_V1 or JFMT_V2 */
	uint64_t expire_seg;
	uint64_t expire_seq;          /* v2 */
	uint64_t removed_upto;
	uint64_t head_seg;            /* v2 */
};

/** jheader_encode - @h in format @h->fmt into @b (its oom flag records failure). */
void jheader_encode(struct mdsp_buf *b, const struct jheader *h);
/**
 * jheader_decode - parse a header object.  Return: 0, or -EBADMSG with a
 * reason in @why (a static string).
 */
int jheader_decode(const void *p, size_t len, struct jheader *h, const char **why);

struct jentry {
	uint32_t type;
	uint64_t seq;                 /* 0 in format 1 */
	const uint8_t *payload;
	uint32_t plen;
	size_t len;                   /* header + payload */
};

/** jent_put - append a format-2 entry to @b. */
void jent_put(struct mdsp_buf *b, uint32_t type, uint64_t seq, const void *payload, size_t len);
/** jent_put_v1 - append a format-1 entry (tests and the upgrade path only). */
void jent_put_v1(struct mdsp_buf *b, uint32_t type, const void *payload, size_t len);

enum { JP_OK = 0, JP_SHORT = 1, JP_BAD = 2 };
/**
 * jent_parse - parse the entry at @p (@avail bytes) in format @fmt.
 * Return: JP_OK (@e filled), JP_SHORT (the bytes end inside the entry),
 * JP_BAD (not an entry: wrong magic or checksum).
 */
int jent_parse(uint32_t fmt, const uint8_t *p, size_t avail, struct jentry *e);

/* What one segment holds (jseg_scan). */
enum jtail { JT_CLEAN = 0, JT_TORN, JT_DAMAGED };
struct jseg_info {
	uint64_t no;
	size_t size;                  /* bytes in the object */
	size_t valid;                 /* bytes of good entries from the start */
	bool sealed;                  /* ends with SEG_END */
	uint64_t first_seq, last_seq; /* of its entries (v2; 0 when it has none) */
	uint64_t nentries;            /* entries of every type */
	uint64_t nedits;              /* EDITS entries */
	enum jtail tail;              /* what follows the valid bytes */
	size_t bad_off;               /* offset of the first bad byte (tail != JT_CLEAN) */
	char why[192];                /* what is wrong there */
};

/* Called for each good entry in order; a non-zero return stops the scan with it. */
typedef int (*jent_fn)(void *arg, uint64_t segno, size_t off, const struct jentry *e);

/**
 * jseg_scan - parse segment @no (@len bytes at @data) in format @fmt.
 * @expect_seq: the seq its first entry must have (v2; 0: not known).
 * @fn (may be NULL) sees each good entry before the scan goes on.
 * Fills @si.  A bad entry followed by nothing valid is JT_TORN (whether a
 * torn tail is allowed here is the caller's decision: only in the newest
 * segment); sequence and structure errors and a bad entry with good ones
 * after it are JT_DAMAGED.  Return: 0 or what @fn returned.
 */
int jseg_scan(uint32_t fmt, uint64_t no, const uint8_t *data, size_t len, uint64_t expect_seq,
	      jent_fn fn, void *arg, struct jseg_info *si);

/* Segment access for jscan(): over the store, or over an exported file. */
struct jreader {
	/* read segment @no whole into a malloc'd buffer: 0, -ENOENT or -errno */
	int (*read)(void *arg, uint64_t no, uint8_t **data, size_t *len);
	void *arg;
};

/* Called for each segment once scanned; takes ownership of @data (free() it or keep it). */
typedef int (*jseg_fn)(void *arg, const struct jseg_info *si, uint8_t *data);

struct jscan_result {
	uint64_t nsegs, nentries, nedits;
	uint64_t newest_seg;          /* the last segment of the journal (or next_seg - 1) */
	bool have_newest;             /* a segment exists at all */
	bool newest_sealed;
	size_t newest_valid;          /* good bytes of the newest segment */
	size_t torn_bytes;            /* a torn tail of this many bytes follows them */
	uint64_t next_seg;            /* where the writer goes on: newest_seg, or + 1 if sealed */
	uint64_t next_seq;            /* seq of the next entry (v2) */
	/* damage (jscan returned -EUCLEAN) */
	char bad_oid[64];
	uint64_t bad_seg;
	size_t bad_off;
	uint64_t bad_seq;             /* the seq expected there (v2), 0 if unknown */
	char why[384];
};

/**
 * jscan - walk the journal described by @h through @rd, checking every rule
 * above.  @efn/@sfn may be NULL.  Return: 0 (a clean journal, or one whose
 * only fault is a torn tail: see torn_bytes), -EUCLEAN (damage: described
 * in @res), or -errno from @rd or a callback.
 */
int jscan(const struct jheader *h, const struct jreader *rd, jent_fn efn, jseg_fn sfn, void *arg,
	  struct jscan_result *res);

/** journal_oid_seg - "mds_journal.<no %016x>". */
void journal_oid_seg(char *buf, size_t len, uint64_t no);

/* ---- shared with the tool (journal.c, journal_expire.c) ----------------- */

/* The edits of one EDITS payload, one call each. */
typedef int (*jedit_fn)(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
			const char *key2);
/** jedits_for_each - walk an EDITS payload.  Return: 0, -EBADMSG, or what @fn returned. */
int jedits_for_each(const uint8_t *p, size_t len, jedit_fn fn, void *arg);

/* Edits gathered into one compound op per object, then applied in parallel. */
struct japply;
struct japply *japply_new(void);
/** japply_edit - a jedit_fn: add an edit (arg is the struct japply). */
int japply_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		const char *key2);
/** japply_run - submit every object's op to @pool, wait, free @a.  Return: first error. */
int japply_run(struct japply *a, struct store_pool *pool, size_t *nobjects);
void japply_free(struct japply *a);

/** journal_header_read - read and decode the header object. */
int journal_header_read(struct store_pool *meta, struct jheader *h, const char **why);
/** journal_header_write - write @h (write_full). */
int journal_header_write(struct store_pool *meta, const struct jheader *h);
/** journal_store_reader - a jreader over the segment objects in @meta. */
void journal_store_reader(struct store_pool *meta, struct jreader *rd);

/** journal_tool_main - `loligo-mds journal ...` (journal_tool.c).  Returns the exit status. */
int journal_tool_main(struct mds *m, const char *cmd, const char *file, bool confirmed, bool entries);

#endif
