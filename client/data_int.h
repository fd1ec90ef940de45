/*
 * data_int.h - private to client/: the data path, above the cache core
 * (types_int.h has the map): striping and store I/O (objio.c), buffered
 * writes and the flusher (writeback.c), open handles, read, write, fsync
 * (file.c), the purge thread (purge.c).  What it needs from the namespace
 * layer goes through c->data_ops; lc_data_register gives the cache core
 * its writeback (c->cache_ops).
 */
#ifndef LOLIGO_CLIENT_DATA_INT_H
#define LOLIGO_CLIENT_DATA_INT_H

#include "client/cache_int.h"


/* ---- writeback.c --------------------------------------------------------- */
/**
 * lc_caps_update_later - lc_caps_update from the flusher thread, soon (its
 * next round, within 250 ms): a close with nothing dirty, so that a storm
 * of create/close does not cost the MDS a message per close right away.
 */
void lc_caps_update_later(struct lclient *c, struct lc_inode *in);
/**
 * lc_caps_update_pending - send @ino's queued cap update now: before we
 * remove a name, the MDS must know we closed its file (or it keeps it as an
 * orphan for us).
 */
void lc_caps_update_pending(struct lclient *c, uint64_t ino);

/* ---- objio.c ------------------------------------------------------------- */
/* a group of store operations in flight; the caller waits for all of them */
struct lc_io_batch {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned int pending;  /* protected by m */
	int err;               /* first error; protected by m */
	unsigned int maxq;     /* client_max_io_inflight */
	struct store_pool *pool;  /* where its ops go: NULL, c->data (the index; lc_io_batch_init's) */
};
void lc_io_batch_init(struct lc_io_batch *b);
/**
 * lc_layout_resolve - open @ly's data pool if it is not open here yet (the
 * first file of a pool: its name from the MDS, c->data_ops.pool_name of
 * @ino), and set ly->pool.  Blocking: call with no lock held, before the
 * I/O functions below, which need ly->pool (a pool id other than 0 with no
 * handle fails them with -EIO).  Return: 0 or -errno.
 */
int lc_layout_resolve(struct lclient *c, uint64_t ino, struct store_file_layout *ly);
/** lc_io_batch_submit_op - submit @op (consumed) on @oid; may wait for room in the batch. */
void lc_io_batch_submit_op(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op);
/**
 * lc_obj_read_start - start reading [@off, @off+@len) of file @ino, inside
 * one stripe unit (store_file_map's length), into @buf; finish with lc_obj_read_end() (exactly once).
 */
int lc_obj_read_start(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off, size_t len,
		      char *buf, struct store_aio **out);
/** lc_obj_read_end - wait for @a; a hole or the part past the object's end reads as zeros.  0 or -errno. */
int lc_obj_read_end(struct store_aio *a, char *buf, size_t len);
/**
 * lc_obj_read_lend_start - lc_obj_read_start() into a buffer the store lends
 * (store_aio_read_lend), when it can and client_read_lend is on; -EOPNOTSUPP
 * otherwise (nothing started: read into a buffer of the client's).  Finish
 * with store_aio_wait_lent() and store_aio_put().
 */
int lc_obj_read_lend_start(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off,
			   size_t len, struct store_aio **out);
/** lc_io_batch_wait - wait for every op; return the first error.  The batch is done after. */
int lc_io_batch_wait(struct lc_io_batch *b);
/** lc_obj_name - "<ino hex>.<objno %08x>" into @buf (>= 32 bytes). */
void lc_obj_name(char *buf, size_t len, uint64_t ino, uint64_t objno);
/**
 * lc_obj_read - read [@off, @off+@len) of the file's objects into @buf,
 * objects in parallel; holes and missing objects read as zeros.  Does not
 * clamp to the file size.  Return: 0 or -errno.
 */
int lc_obj_read(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off, size_t len,
		char *buf);
/** lc_obj_write - write through, objects in parallel, durable on return. */
int lc_obj_write(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off, size_t len,
		 const char *buf);
/** lc_data_full - the data store is full (store_space: full or past its failsafe): writes get ENOSPC. */
bool lc_data_full(struct lclient *c);
/** lc_data_nearfull - the data store is full or past its nearfull ratio (asynchronous creates stop). */
bool lc_data_nearfull(struct lclient *c);
/**
 * lc_obj_index - @in's objects @objs[0..@n) are about to be written: make
 * sure the file's object index lists them (store/file_data.c), with one
 * store op, waited for, for those not known to be listed yet.  Call before
 * submitting the writes.  No lock held.  Return: 0 or -errno (then write
 * nothing: an object the index does not list would never be purged).
 */
int lc_obj_index(struct lclient *c, struct lc_inode *in, const uint64_t *objs, size_t n);
/**
 * lc_obj_index_submit - lc_obj_index without waiting: the op goes into @b
 * (the caller waits for @b, and only then submits the writes and calls
 * lc_obj_index_known).  Return: 1 submitted, 0 nothing to list, -ENOMEM.
 */
int lc_obj_index_submit(struct lclient *c, struct lc_io_batch *b, struct lc_inode *in, const uint64_t *objs,
			size_t n);
/**
 * lc_obj_index_present - a full store refused @objs' keys (-ENOSPC): are
 * they all set already (fallocated objects, keys set before a remount)?
 * Then writes into those objects may still land.  Return: 0 or -ENOSPC.
 * Blocking, no lock held.
 */
int lc_obj_index_present(struct lclient *c, struct lc_inode *in, const uint64_t *objs, size_t n);
/** lc_obj_index_known - remember that @objs are listed (after lc_obj_index_submit's batch succeeded). */
void lc_obj_index_known(struct lc_inode *in, const uint64_t *objs, size_t n);
/**
 * lc_obj_allocated - make @in's st_blocks count what its objects hold, not
 * its size (a sparse file): lists the object index and stats the objects
 * (bounded: past LC_ALLOC_STAT_MAX objects each counts whole, past
 * LC_ALLOC_LIST_MAX the size is used), and remembers it for this size,
 * mtime and change, so lc_inode_fill_attr_locked() reports it without I/O.
 * Call without in->lock.  Nothing to do for non-files, empty files, dirty
 * inodes or pools without an index.
 */
void lc_obj_allocated(struct lclient *c, struct lc_inode *in);
/** lc_obj_alloc_stale_locked - would lc_obj_allocated() count anything?  Caller holds in->lock. */
bool lc_obj_alloc_stale_locked(struct lclient *c, const struct lc_inode *in);
/** lc_obj_indexed - has this client set the index key of @in's object @objno (so far as it remembers)?  Any thread, no lock. */
bool lc_obj_indexed(struct lc_inode *in, uint64_t objno);
/** lc_obj_index_range - lc_obj_index for every object of [@off, @off+@len). */
int lc_obj_index_range(struct lclient *c, struct lc_inode *in, const struct store_file_layout *ly, uint64_t off,
		       size_t len);
/**
 * lc_obj_truncate - drop data past @new_size: through the object index, a
 * cost proportional to the objects that exist; in a pool without indexes,
 * the objects @old_size covers (clamped to lc_max_file_size()).  In the
 * caller's thread, in bounded slices.
 */
int lc_obj_truncate(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t old_size,
		    uint64_t new_size);

/* ---- writeback.c --------------------------------------------------------- */
/**
 * lc_wb_write - buffer a write; may block on the client_oc_size bound.
 * *@off is set to the end of file for @append; a write at or past @limit is
 * -EFBIG, one crossing it is cut to end there (*@len shrinks).
 */
int lc_wb_write(struct lclient *c, struct lc_inode *in, uint64_t *off, size_t *len, const char *buf,
		const struct lc_cred *cr, bool append, uint64_t limit);

/* ---- objio.c ------------------------------------------------------------- */
/** lc_io_batch_submit_maybe - like lc_io_batch_submit_op, for an op on an object that may not exist (-ENOENT is success). */
void lc_io_batch_submit_maybe(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op);

/* ---- writeback.c --------------------------------------------------------- */
/** lc_wb_overlay_snapshot - copy dirty data overlapping a read (see file.c). */
struct lc_extent *lc_wb_snapshot(struct lc_inode *in, uint64_t off, size_t len);
void lc_wb_apply_snapshot(struct lc_extent *snap, uint64_t off, size_t len, char *buf);
/** lc_wb_flush_data - write back @in's dirty extents and wait.  Return: 0 or the writeback error. */
int lc_wb_flush_data(struct lclient *c, struct lc_inode *in);
/** lc_wb_report - send dirty size/mtime to the MDS (a CAPS FLUSH; does not wait). */
int lc_wb_report(struct lclient *c, struct lc_inode *in);
/** lc_wb_note_write_locked - in->lock held: a write ended at @end (wsize). */
void lc_wb_note_write_locked(struct lc_inode *in, uint64_t end);
/** lc_wait_flushes - wait (at most @timeout_ns) until every CAPS FLUSH is acked. */
int lc_wait_flushes(struct lclient *c, uint64_t timeout_ns);
/**
 * lc_wb_flush - data then metadata for one inode.  Return: 0, this call's
 * own writeback error (a lasting one is also recorded in the inode's error
 * sequence, where the handles' fsync/close find it) or the size report's.
 * Consumes nothing: another handle's error stays for that handle.
 */
int lc_wb_flush(struct lclient *c, struct lc_inode *in);
/**
 * lc_wb_start - write @in's buffered data back soon, without waiting (a
 * close under Fb, as ceph-fuse's Client::_flush): the flusher writes it
 * all, then reports size/mtime and updates the caps (Fw/Fb kept until
 * then: lc_data_pending_locked).  Return: false when there is no flusher
 * (the caller writes back itself).
 */
bool lc_wb_start(struct lclient *c, struct lc_inode *in);
/** lc_wb_err_sample_locked - in->lock held: the error sequence a new handle starts from (an error nobody saw yet is reported to it too). */
uint32_t lc_wb_err_sample_locked(const struct lc_inode *in);
/**
 * lc_wb_err_check - a writeback error recorded for @in since *@since (a
 * handle's sample), or 0; advances *@since and marks the error seen.
 * Takes in->lock.
 */
int lc_wb_err_check(struct lc_inode *in, uint32_t *since);
/** lc_wb_discard_past - drop buffered data at or past @size (truncate). */
void lc_wb_discard_past(struct lclient *c, struct lc_inode *in, uint64_t size);
/** lc_flush_all - write back every dirty inode (@report: and send sizes/mtimes). */
int lc_flush_all(struct lclient *c, bool report);
int lc_flusher_start(struct lclient *c);
void lc_flusher_stop(struct lclient *c);
void lc_flusher_kick(struct lclient *c);

/* ---- file.c -------------------------------------------------------------- */
/** lc_fh_new - an open handle on @in (takes its own reference). */
struct lc_fh *lc_fh_new(struct lclient *c, struct lc_inode *in, int flags, const struct lc_cred *cr);
void lc_fh_free(struct lclient *c, struct lc_fh *fh);
/**
 * lc_kill_suid - what a write by @cr clears of @in's mode: setuid, and
 * setgid where it means something, unless @cr is root (file_remove_privs);
 * one MDS SETATTR when there is something to clear.  lc_write does it with
 * the handle's credentials; lc_kill_privs (namei.c) with a caller's.
 */
int lc_kill_suid(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr);
/**
 * lc_ra_pool_trim - free the readahead buffers kept for reuse: all of them
 * with @all, else only when none was taken or given back for 10 s (the
 * flusher's tick: an idle mount holds no readahead memory).
 */
void lc_ra_pool_trim(struct lclient *c, bool all);
/**
 * lc_buf_get - a buffer of at least @len bytes from the client's pool of
 * power-of-two buffers (128 KiB to 4 MiB; what readahead chunks and
 * whole-object write buffers use, so that a fresh buffer does not cost
 * page faults); *@cap gets its size.  Smaller sizes are plain malloc.
 * Return: the buffer or NULL.  Any thread; takes c->ra_pool_lock.
 */
char *lc_buf_get(struct lclient *c, size_t len, size_t *cap);
/** lc_buf_put - give back a buffer of @cap bytes (from lc_buf_get or malloc); frees what the pool does not keep. */
void lc_buf_put(struct lclient *c, char *b, size_t cap);
/**
 * lc_purge_data - @in lost its last link: drop its buffers and data objects
 * now, or at its last close if it is open here.
 */
void lc_purge_data(struct lclient *c, struct lc_inode *in);
/** lc_truncate_data - flush/discard buffers and trim objects for a size change. */
int lc_truncate_data(struct lclient *c, struct lc_inode *in, uint64_t old_size, uint64_t new_size);

/* ---- purge.c ------------------------------------------------------------- */
/**
 * lc_purge_start - load the persisted purge queue (a previous run's
 * unfinished purges) and start the purge thread.  After the data pool is open.
 */
int lc_purge_start(struct lclient *c);
/**
 * lc_purge_stop - stop the thread within one slice; what is left (and what
 * was queued but not yet recorded) is in the persisted queue for the next
 * mount.  No lock held.
 */
void lc_purge_stop(struct lclient *c);
/**
 * lc_purge_enqueue - remove the data of file @ino (layout @ly, at
 * most @size bytes for pools without indexes) on the purge thread.  Cheap,
 * never blocks on the store.  Without a purge thread (not started): done
 * in the caller.
 */
void lc_purge_enqueue(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t size);

/* ---- registration ------------------------------------------------------- */
/** lc_data_register - at create: give the cache core the data path's writeback (c->cache_ops.flush_data). */
void lc_data_register(struct lclient *c);

#endif
