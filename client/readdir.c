/*
 * readdir.c - directory listings: READDIR paging and a per-directory batch.
 *
 * lc_readdir pages through the directory with MDSP_OP_READDIR, asking for
 * client_readdir_batch entries after a cookie.  Every entry comes with its
 * inode, which goes into the inode cache, and its name into the dentry
 * cache, so the stat() that follows an ls needs no round trip (this is the
 * readdirplus of DESIGN.md).
 *
 * A frontend consumes a listing in small pieces (FUSE fills one 4-128 KiB
 * buffer per call and comes back with the cookie of the last entry it
 * took), so the last batch fetched is kept on the directory
 * (in->dstate->rd) and the next call that resumes inside it is served
 * from memory while the directory holds Fs (another client's change in it
 * revokes that first).
 * Each entry brings the caps on its inode and a lease on its name, so the
 * kernel may cache them like a lookup's.
 *
 * While a listing goes through a batch, the batch after it is already asked
 * for (prefetch: a READDIR submitted without waiting, hung on the batch
 * kept on the directory, taken by the fetch of that cookie): the MDS
 * prepares the next 1,024 entries while the client hands these to the
 * kernel and `ls -l` stats them (issue 21.3: the MDS's part of the cold
 * `ls -l` of 200,000 files was waited for, 196 times).
 *
 * A storm of listings of one directory (32 FUSE threads after another
 * client's create revoked its Fs) fetches once: a READDIR that finds one
 * in flight for the same cookie waits for it and takes its batch, provided
 * the directory lost no Fs between that fetch's start and its own arrival
 * (dir->ngen): what the fetch misses was changed after it started, and a
 * change that completed before the waiter came revoked Fs first.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client/ns_int.h"
#include "client/rd_pack.h"
#include "common/lockdep.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"

/*
 * A kept batch is paid for by every entry of every directory listed
 * (issue 21.4), and its entries' inodes are mostly in the inode cache
 * already; but an entry must still be able to bring its inode back (a
 * batch outlives the inodes the trimmer evicts meanwhile: without their
 * attributes the listing fetched again, which made a 200,000-name `ls -l`
 * slower).  So each entry keeps its whole mdsp_inode, packed: the fixed
 * part that the cookie search needs in ents[], the rest in one buffer per
 * batch (data): the name, the cap and lease sequences, then the inode as
 * 8-byte words, each zero (a file's rstat, quotas, layout), the same as
 * the word two before (a time as the one before it: a file's four times
 * are often one), or a varint of it or of its complement (the "unknown"
 * values near UINT64_MAX).  ~80 bytes an entry instead of ~310 (the
 * record with the inode's 240 bytes, and its name's own allocation).
 */
struct rd_ent {
	uint64_t cookie;
	uint32_t off;                  /* in data: the entry's name, then rd_pack's */
	uint32_t caps;
};

/* every entry of a kept listing pays for it (issue 21.4) */
_Static_assert(sizeof(struct rd_ent) == 16, "struct rd_ent grew: every entry of every kept listing pays for it");

struct rd_batch {
	_Atomic int ref;
	uint64_t start_cookie;  /* the cookie the batch was fetched after */
	uint64_t ngen;          /* dir->ngen when the fetch started */
	uint64_t until;         /* mono ns */
	uint64_t dgen;          /* dir->dgen at fetch */
	uint64_t rx0;           /* lc_dir_names_rx when the fetch went out: its names
				 * are the MDS's only while no change of ours came since */
	struct lc_caps_since since;  /* lc_caps_gen() before the fetch: its entries' grants are checked against it */
	bool end;
	uint32_t n;
	struct rd_ent *ents;
	char *data;             /* the entries' names and what rd_pack made of the rest */
	struct lclient *c;      /* whose LC_MEM_DIRLIST counts mem bytes */
	size_t mem;
	/* the READDIR of the batch after this one, asked for ahead (see the
	 * top), with dir->dgen and dir->ngen when it was sent; dir->lock */
	struct mds_request *pf_req;
	uint64_t pf_dgen, pf_ngen, pf_change, pf_rx;
	bool pf_fs;                     /* Fs held when it was sent */
	struct lc_caps_since pf_since;  /* lc_caps_gen() when it was sent (lc_req_submit) */
	bool pf_started;
};

/* @e's sequences and inode, packed at @p (NULL: only counted); the bytes it takes */
static size_t rd_pack_ent(char *p, const struct mdsp_dirent *e)
{
	return rd_pack(p, e->cap_seq, e->lease ? e->lease_seq : 0, &e->inode);
}

static const char *rd_ent_name(const struct rd_batch *b, const struct rd_ent *e)
{
	return b->data + e->off;
}

/* @e's cap and lease sequences (0: no lease) and inode, as the READDIR reply had them */
static void rd_ent_unpack(const struct rd_batch *b, const struct rd_ent *e, uint64_t *cap_seq, uint64_t *lease_seq,
			  struct mdsp_inode *mi)
{
	const char *name = rd_ent_name(b, e);

	rd_unpack(name + strlen(name) + 1, cap_seq, lease_seq, mi);
}

void lc_rd_batch_put(struct rd_batch *b)
{
	if (!b || atomic_fetch_sub(&b->ref, 1) != 1)
		return;
	if (b->c)
		lc_mem_sub(b->c, LC_MEM_DIRLIST, b->mem);
	if (b->pf_req)
		mdsc_request_put(b->pf_req);   /* its reply, if it comes, goes with it */
	free(b->ents);
	free(b->data);
	free(b);
}

/* index to resume at in @b for @cookie, or -1 */
static long batch_index(const struct rd_batch *b, uint64_t cookie)
{
	if (cookie == b->start_cookie)
		return 0;
	long lo = 0, hi = (long)b->n - 1;
	while (lo <= hi) {
		long mid = (lo + hi) / 2;
		if (b->ents[mid].cookie == cookie)
			return mid + 1;
		if (b->ents[mid].cookie < cookie)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

void lc_readdir_dump(struct lc_inode *dir, struct json_object *o)
{
	struct rd_batch *b;
	struct json_object *l, *names;
	uint64_t now = now_mono_ns();

	pthread_mutex_lock(&dir->lock);
	b = dir->dstate ? dir->dstate->rd : NULL;
	if (!b) {
		pthread_mutex_unlock(&dir->lock);
		return;
	}
	l = json_object_new_object();
	names = json_object_new_array();
	json_object_object_add(l, "start_cookie", json_object_new_uint64(b->start_cookie));
	json_object_object_add(l, "entries", json_object_new_uint64(b->n));
	json_object_object_add(l, "end", json_object_new_boolean(b->end));
	/* what cached_batch checks */
	json_object_object_add(l, "valid_for_s", json_object_new_double(b->until > now ? (double)(b->until - now) / 1e9 : 0));
	json_object_object_add(l, "dgen", json_object_new_uint64(b->dgen));
	json_object_object_add(l, "ngen", json_object_new_uint64(b->ngen));
	for (uint32_t i = 0; i < b->n && i < 256; i++)
		json_object_array_add(names, json_object_new_string(rd_ent_name(b, &b->ents[i])));
	json_object_object_add(l, "names", names);
	json_object_object_add(o, "listing", l);
	pthread_mutex_unlock(&dir->lock);
}

/* the cached batch covering @cookie with a reference, or NULL */
static struct rd_batch *cached_batch(struct lc_inode *dir, uint64_t cookie, long *idx)
{
	struct rd_batch *b = NULL;
	uint64_t now = now_mono_ns();

	pthread_mutex_lock(&dir->lock);
	struct rd_batch *cur = dir->dstate ? dir->dstate->rd : NULL;
	/* listed with Fs held since its READDIR went out (ngen): a batch
	 * whose reply came after a revoke of Fs may predate the change that
	 * revoked it, even if Fs is back by now */
	if (cur && now < cur->until && cur->dgen == atomic_load(&dir->dgen) && cur->ngen == atomic_load(&dir->ngen) &&
	    (dir->caps & MDSP_CAP_FILE_SHARED)) {
		long i = batch_index(cur, cookie);
		/* resuming after the last entry: the next batch, unless this was the end */
		if (i >= 0 && (i < (long)cur->n || cur->end)) {
			atomic_fetch_add(&cur->ref, 1);
			b = cur;
			*idx = i;
		}
	}
	pthread_mutex_unlock(&dir->lock);
	return b;
}

/* a READDIR of @dir after @cookie, not sent yet, or NULL */
static struct mds_request *readdir_req(struct lclient *c, struct lc_inode *dir, uint64_t cookie,
				       const struct lc_cred *cr)
{
	struct mds_request *req = lc_req_new(c, MDSP_OP_READDIR, dir->ino, cr);

	if (!req)
		return NULL;
	uint64_t max = cfg_uint(CFG_client_readdir_batch);
	if (max == 0 || max > MDSP_READDIR_MAX)
		max = MDSP_READDIR_MAX;
	req->args.cookie = cookie;
	req->args.max_entries = (uint32_t)max;
	return req;
}

/* the READDIR asked for ahead for @cookie, if the directory's batch has one
 * made under the directory's current dgen and ngen (the caller's then) */
static struct mds_request *prefetched(struct lc_inode *dir, uint64_t cookie, uint64_t *dgen, uint64_t *ngen,
				      uint64_t *change, uint64_t *rx, bool *fs, struct lc_caps_since *since)
{
	struct mds_request *req = NULL;

	pthread_mutex_lock(&dir->lock);
	struct rd_batch *cur = dir->dstate ? dir->dstate->rd : NULL;
	if (cur && cur->pf_req && cur->n && cur->ents[cur->n - 1].cookie == cookie &&
	    cur->pf_dgen == atomic_load(&dir->dgen) && cur->pf_ngen == atomic_load(&dir->ngen)) {
		req = cur->pf_req;
		cur->pf_req = NULL;
		*dgen = cur->pf_dgen;
		*ngen = cur->pf_ngen;
		*change = cur->pf_change;
		*rx = cur->pf_rx;
		*fs = cur->pf_fs;
		*since = cur->pf_since;
	}
	pthread_mutex_unlock(&dir->lock);
	return req;
}

/*
 * dir->lock held: nothing of ours changed @dir since @change was read (a
 * create, rename or unlink of ours in it moves its change attribute when
 * its reply is folded in, or when we answered it ourselves; a rename's
 * source directory is set to 0, lc_rename): a listing the MDS made before
 * that must not be kept, Fs or not.  The READDIR's own reply folds in the
 * directory's attributes too, so a change that only the MDS knew of
 * (another client's, whose revoke of Fs we saw) also fails this; that
 * costs a fetch, never a stale name.
 */
static bool change_unmoved(const struct lc_inode *dir, uint64_t change)
{
	return change && dir->mi.change == change;      /* 0: not known, the MDS's next one wins */
}

/*
 * Ask now for the batch after @b, kept on @dir: the listing gets there
 * next, and the MDS works on it meanwhile.  Once per batch; none past the
 * end, without an MDS, or for a batch the directory does not keep (the
 * fetch of its cookie would not find it).
 */
static void prefetch(struct lclient *c, struct lc_inode *dir, struct rd_batch *b, const struct lc_cred *cr)
{
	struct mds_request *req;
	struct lc_caps_since since;
	uint64_t dgen, ngen, change, rx;
	bool fs;

	if (b->end || !b->n || !c->mdsc)
		return;
	pthread_mutex_lock(&dir->lock);
	bool go = dir->dstate && dir->dstate->rd == b && !b->pf_started;
	if (go)
		b->pf_started = true;
	pthread_mutex_unlock(&dir->lock);
	if (!go)
		return;
	req = readdir_req(c, dir, b->ents[b->n - 1].cookie, cr);
	if (!req)
		return;
	lc_async_unlink_wait(c, dir, NULL);     /* the listing has none of the names we unlinked */
	dgen = atomic_load(&dir->dgen);
	ngen = atomic_load(&dir->ngen);
	pthread_mutex_lock(&dir->lock);
	change = dir->mi.change;
	rx = lc_dir_names_rx_locked(dir);
	fs = dir->caps & MDSP_CAP_FILE_SHARED;
	pthread_mutex_unlock(&dir->lock);
	if (lc_req_submit(c, req, &since) < 0) {
		mdsc_request_put(req);
		return;
	}
	pthread_mutex_lock(&dir->lock);
	if (!b->pf_req) {
		b->pf_req = req;
		b->pf_dgen = dgen;
		b->pf_ngen = ngen;
		b->pf_change = change;
		b->pf_rx = rx;
		b->pf_fs = fs;
		b->pf_since = since;
		req = NULL;
	}
	pthread_mutex_unlock(&dir->lock);
	if (req)
		mdsc_request_put(req);
}

static int fetch_batch(struct lclient *c, struct lc_inode *dir, uint64_t cookie, const struct lc_cred *cr,
		       struct rd_batch **out)
{
	struct rd_batch *b;
	uint64_t dgen, ngen;
	struct lc_caps_since since;
	int r;
	uint64_t change = 0, rx0 = 0;
	bool fs0 = false;
	struct mds_request *req = prefetched(dir, cookie, &dgen, &ngen, &change, &rx0, &fs0, &since);

	if (req) {
		/* its grants are checked against the revokes and evictions
		 * since it was sent, not since now */
		r = lc_req_wait(c, req, &since, NULL);
		perf_inc(&c->perf.readdir_prefetched, 1);
	} else {
		req = readdir_req(c, dir, cookie, cr);
		if (!req)
			return c->mdsc ? -ENOMEM : -ENOTCONN;
		lc_async_unlink_wait(c, dir, NULL);     /* the listing has none of the names we unlinked */
		dgen = atomic_load(&dir->dgen);
		ngen = atomic_load(&dir->ngen);
		pthread_mutex_lock(&dir->lock);
		change = dir->mi.change;
		rx0 = lc_dir_names_rx_locked(dir);
		fs0 = dir->caps & MDSP_CAP_FILE_SHARED;
		pthread_mutex_unlock(&dir->lock);
		since = lc_caps_gen(c);
		r = lc_req_run(c, req, NULL);
	}
	if (r < 0) {
		mdsc_request_put(req);
		return r;
	}
	b = calloc(1, sizeof(*b));
	struct mdsp_reply *rep = req->reply;
	uint32_t n = rep ? rep->nentries : 0;
	size_t dlen = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct mdsp_dirent *e = &rep->entries[i];
		if (e->name)
			dlen += strlen(e->name) + 1 + rd_pack_ent(NULL, e);
	}
	if (dlen > UINT32_MAX) {
		/* off is 32 bits: MDSP_READDIR_MAX entries of names of at most
		 * NAME_MAX are far from it */
		free(b);
		b = NULL;
	}
	if (b && n) {
		b->ents = calloc(n, sizeof(*b->ents));
		b->data = malloc(dlen ? dlen : 1);
		if (!b->ents || !b->data) {
			free(b->ents);
			free(b->data);
			free(b);
			b = NULL;
		}
	}
	if (!b) {
		mdsc_request_put(req);
		return -ENOMEM;
	}
	atomic_init(&b->ref, 1);
	b->start_cookie = cookie;
	b->dgen = dgen;
	b->ngen = ngen;
	b->rx0 = rx0;
	b->since = since;
	b->end = rep ? rep->end : true;
	char *p = b->data;
	for (uint32_t i = 0; i < n; i++) {
		const struct mdsp_dirent *e = &rep->entries[i];
		if (!e->name)
			continue;
		struct rd_ent *d = &b->ents[b->n];
		size_t nl = strlen(e->name) + 1;
		d->off = (uint32_t)(p - b->data);
		memcpy(p, e->name, nl);
		p += nl;
		p += rd_pack_ent(p, e);
		d->cookie = e->cookie;
		d->caps = e->caps;
		b->n++;
	}
	mdsc_request_put(req);
	perf_inc(&c->perf.readdir_fetch, 1);
	b->mem = lc_mem_size(b) + lc_mem_size(b->ents) + lc_mem_size(b->data);
	b->c = c;
	lc_mem_add(c, LC_MEM_DIRLIST, b->mem);

	pthread_mutex_lock(&dir->lock);
	/* kept only if the directory held Fs all along since the READDIR went
	 * out: Fs lost meanwhile (ngen) means another client changed it, maybe
	 * after the MDS listed it, whatever caps the directory has by now
	 * (test_caps test_kept_batch_after_fs_lost); and Fs not held when it
	 * went out proves nothing (another client's change then revoked
	 * nothing of ours: lc_dir_ngen_fs_locked) */
	bool shared = fs0 && (dir->caps & MDSP_CAP_FILE_SHARED) && ngen == atomic_load(&dir->ngen) &&
		      dgen == atomic_load(&dir->dgen) && change_unmoved(dir, change) &&
		      rx0 == lc_dir_names_rx_locked(dir);
	b->until = shared ? now_mono_ns() + lc_secs_ns(CFG_client_caps_timeout) : 0;
	/* no memory for the directory's lc_dstate: nothing kept */
	struct lc_dstate *ds = lc_dstate_locked(dir);
	if (shared && ds) {
		if (ds->rd)
			lc_rd_batch_put(ds->rd);
		atomic_fetch_add(&b->ref, 1);
		ds->rd = b;
	}
	if (ds) {
		if (ds->rd_last)
			lc_rd_batch_put(ds->rd_last);
		atomic_fetch_add(&b->ref, 1);
		ds->rd_last = b;
	}
	pthread_mutex_unlock(&dir->lock);
	*out = b;
	return 0;
}

/* dir->rd_busy: a lock of flag and dir->cond, held by the one fetch in
 * flight across its MDS round trip; its holder waits for nothing else of
 * the kind, its waiters hold nothing (lockdep's class below checks both) */
static LOCKDEP_CLASS(rd_class, "directory READDIR in flight (dir->rd_busy)");

/* The batch after @cookie: one fetch in flight per directory, which those
 * that come for the same cookie meanwhile share (see the top). */
static int shared_fetch(struct lclient *c, struct lc_inode *dir, uint64_t cookie, const struct lc_cred *cr,
			struct rd_batch **out)
{
	uint64_t ngen;
	int r;

	pthread_mutex_lock(&dir->lock);
	ngen = atomic_load(&dir->ngen);
	/* rd_busy is set only with dstate made */
	if (dir->rd_busy && dir->dstate->rd_busy_cookie == cookie && dir->dstate->rd_busy_ngen == ngen) {
		lockdep_wait_cond(&rd_class, &dir->rd_busy, &dir->lock);
		lc_op_wait_set(LC_WAIT_MDS, 0);
		while (dir->rd_busy)
			pthread_cond_wait(&dir->cond, &dir->lock);
		lc_op_wait_clear();
		struct rd_batch *b = dir->dstate->rd_last;
		if (b && b->start_cookie == cookie && b->ngen == ngen && b->dgen == atomic_load(&dir->dgen)) {
			atomic_fetch_add(&b->ref, 1);
			pthread_mutex_unlock(&dir->lock);
			perf_inc(&c->perf.readdir_shared, 1);
			*out = b;
			return 0;
		}
	}
	/* no memory for dstate: not shared, as when another fetch is in flight */
	struct lc_dstate *ds = dir->rd_busy ? NULL : lc_dstate_locked(dir);
	bool mine = ds != NULL;
	if (mine) {
		dir->rd_busy = true;
		ds->rd_busy_cookie = cookie;
		ds->rd_busy_ngen = ngen;
		lockdep_acquired(&rd_class, &dir->rd_busy, true);
	}
	pthread_mutex_unlock(&dir->lock);
	r = fetch_batch(c, dir, cookie, cr, out);
	if (mine) {
		pthread_mutex_lock(&dir->lock);
		lockdep_released(&dir->rd_busy);
		dir->rd_busy = false;
		pthread_cond_broadcast(&dir->cond);
		pthread_mutex_unlock(&dir->lock);
	}
	return r;
}

int lc_readdir(struct lclient *c, struct lc_inode *dir, uint64_t cookie, bool plus, const struct lc_cred *cr,
	       lc_readdir_cb cb, void *arg, bool *eof)
{
	struct rd_batch *b;
	long i;
	int r;

	*eof = false;
	pthread_mutex_lock(&dir->lock);
	bool isdir = S_ISDIR(dir->mi.mode);
	pthread_mutex_unlock(&dir->lock);
	if (!isdir)
		return -ENOTDIR;
	for (;;) {
		b = cached_batch(dir, cookie, &i);
		if (b) {
			struct lc_attr da;
			lc_inode_fill_attr(dir, &da);
			r = lc_perm_check(&da, 4, cr);
			if (r == LC_PERM_ASK) {
				/* an ACL decides: the MDS's readdir */
				lc_rd_batch_put(b);
				b = NULL;
			} else if (r < 0) {
				lc_rd_batch_put(b);
				return r;
			} else {
				perf_inc(&c->perf.readdir_cached, 1);
			}
		}
		if (!b) {
			r = shared_fetch(c, dir, cookie, cr, &b);
			if (r < 0)
				return r;
			i = 0;
		}
		prefetch(c, dir, b, cr);
		/* its names are the MDS's as of the fetch: not cached if a
		 * change of ours in the directory came since (a name we
		 * renamed away, whose lease the MDS dropped with it, would
		 * come back under it) */
		pthread_mutex_lock(&dir->lock);
		bool names_ok = b->rx0 == lc_dir_names_rx_locked(dir);
		pthread_mutex_unlock(&dir->lock);
		for (; i < (long)b->n; i++) {
			struct rd_ent *e = &b->ents[i];
			const char *name = rd_ent_name(b, e);
			struct mdsp_inode mi;
			uint64_t cap_seq, lease_seq;
			struct lc_attr attr;
			struct lc_inode *in = NULL;

			rd_ent_unpack(b, e, &cap_seq, &lease_seq, &mi);
			/* a cached batch: its caps were applied when it came (a
			 * newer state since wins by sequence); an entry's inode
			 * not cached now may have been revoked since, as not
			 * cached, or evicted since, its caps released: checked
			 * against the revokes and evictions since the fetch */
			if (mi.ino)
				in = lc_inode_update_seen(c, &mi, e->caps, cap_seq, &b->since);
			if (in) {
				if (lease_seq && names_ok)
					lc_dcache_add_lease(c, dir, name, in->ino, lease_seq);
				else if (names_ok)
					lc_dcache_add(c, dir, name, in->ino);
				lc_inode_fill_attr(in, &attr);
			} else {
				lc_attr_from_mdsp(&mi, &attr);
			}
			dout(CLIENT, 25, "readdir %" PRIx64 ": %s ino %" PRIx64 " gen %" PRIu64 " mode 0%o in %p cookie %" PRIu64,
			     dir->ino, name, attr.ino, attr.generation, (unsigned int)attr.mode, (void *)in, e->cookie);
			int stop = cb(arg, name, plus ? in : NULL, &attr, e->cookie);
			if (!plus || stop)
				lc_put(c, in);
			if (stop) {
				lc_rd_batch_put(b);
				return 0;
			}
			cookie = e->cookie;
		}
		bool end = b->end || b->n == 0;
		lc_rd_batch_put(b);
		if (end) {
			*eof = true;
			return 0;
		}
	}
}
