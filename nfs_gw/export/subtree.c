/*
 * subtree.c - the subtree check (export.h nfs_export_contains): a file
 * handle names an export and an inode, and every export shares one
 * filesystem, so a client of /export/a could otherwise forge a handle to
 * any inode.  NFSv4 (every operation's current filehandle) and NFSv3 (every
 * handle) resolve through here and answer STALE for an inode that does not
 * lie below the export's root, as knfsd's subtree_check does.
 *
 * Proving "inside" climbs primary parents at the MDS (LOOKUPPARENT, one
 * round trip per level), so verdicts are cached: a direct-mapped table per
 * exports table (a reload starts afresh: roots may have moved) of (export,
 * inode) -> inside/outside, stamped with the client library's namespace
 * epoch (lc_ns_epoch) read before the walk.  The epoch moves when this
 * client renames or removes a name, or loses a dentry lease or a
 * directory's caps to another client's change, and a verdict is used only
 * while it has not moved: a file renamed out of its export through this
 * process (FUSE, NFS) or under a name this gateway looked up is STALE at
 * the next request.  A rename the client library hears nothing of (another
 * client, in a directory this gateway holds no lease or caps on) is bounded
 * by nfs_subtree_check_ttl.  The walk caches the directories it passes too,
 * so checking the next file of the same directory costs one LOOKUPPARENT
 * at most, and a READ/GETATTR storm costs a table look-up per request.
 *
 * Hard links: the MDS keeps no parent for a hard-linked inode (its names
 * are all remote dentries), so the walk cannot prove one inside.  A LOOKUP
 * or listing (READDIRPLUS, v4 READDIR) in a checked directory of the
 * export that finds it records that link
 * (nfs_export_note_inside); when the verdict is void the link is checked
 * again (the name still names the inode, its directory is inside: one
 * lease-cached LOOKUP and that directory's own check), as knfsd accepts any
 * alias within the export.  A hard-linked inode no LOOKUP through this
 * gateway found (a handle from before a restart, a slot taken by another
 * inode, a name of 48 bytes or more) is STALE until the client looks it up
 * by name again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/export/export.h"

#define WALK_MAX 4096                /* deeper than any path loligo accepts */
#define WALK_REMEMBER 32             /* directories passed whose verdict is cached */

static unsigned int slot_of(uint16_t export_id, uint64_t ino)
{
	uint64_t h = (ino ^ ((uint64_t)export_id << 48)) * 0x9e3779b97f4a7c15ull;

	return (unsigned int)(h >> 51) & (NFS_SUBTREE_SLOTS - 1);
}

/* A valid cached verdict: 1 inside, 0 outside, -1 none.  Takes x->lock. */
static int cache_get(struct nfs_exports *x, uint16_t export_id, uint64_t ino, uint64_t epoch, uint64_t now)
{
	int v = -1;

	pthread_mutex_lock(&x->lock);
	if (x->stc) {
		const struct nfs_subtree_slot *s = &x->stc[slot_of(export_id, ino)];

		if (s->ino == ino && s->export_id == export_id && s->epoch == epoch && now < s->until)
			v = s->inside;
	}
	pthread_mutex_unlock(&x->lock);
	return v;
}

static void cache_put(struct nfs_exports *x, uint16_t export_id, const uint64_t *inos, unsigned int n,
		      bool inside, uint64_t epoch, uint64_t until)
{
	pthread_mutex_lock(&x->lock);
	if (!x->stc)
		x->stc = calloc(NFS_SUBTREE_SLOTS, sizeof(*x->stc));
	if (x->stc) {
		for (unsigned int i = 0; i < n; i++) {
			struct nfs_subtree_slot *s = &x->stc[slot_of(export_id, inos[i])];

			/* an older epoch's verdict never replaces a newer one's */
			if (s->ino == inos[i] && s->export_id == export_id && s->epoch > epoch)
				continue;
			if (s->ino != inos[i] || s->export_id != export_id) {
				s->link_dir = 0;     /* another inode's slot now */
				s->link_name[0] = 0;
			}
			s->ino = inos[i];
			s->export_id = export_id;
			s->epoch = epoch;
			s->until = until;
			s->inside = inside;
		}
	}
	pthread_mutex_unlock(&x->lock);
}

static uint64_t ttl_ns(void)
{
	return (uint64_t)(cfg_double(CFG_nfs_subtree_check_ttl) * 1e9);
}

void nfs_export_note_inside(struct nfs_exports *x, const struct nfs_export *e, uint64_t ino, uint64_t epoch,
			    uint64_t dir, const char *name)
{
	if (!cfg_bool(CFG_nfs_subtree_check) || !strcmp(e->path, "/"))
		return;
	cache_put(x, e->id, &ino, 1, true, epoch, now_mono_ns() + ttl_ns());
	pthread_mutex_lock(&x->lock);
	if (x->stc) {
		struct nfs_subtree_slot *s = &x->stc[slot_of(e->id, ino)];

		if (s->ino == ino && s->export_id == e->id) {
			bool fits = strlen(name) < sizeof(s->link_name);

			s->link_dir = fits ? dir : 0;
			snprintf(s->link_name, sizeof(s->link_name), "%s", fits ? name : "");
		}
	}
	pthread_mutex_unlock(&x->lock);
}

/* The link @ino was last found by in export @e (0: none known). */
static uint64_t link_of(struct nfs_exports *x, uint16_t export_id, uint64_t ino, char *name, size_t len)
{
	uint64_t dir = 0;

	pthread_mutex_lock(&x->lock);
	if (x->stc) {
		const struct nfs_subtree_slot *s = &x->stc[slot_of(export_id, ino)];

		if (s->ino == ino && s->export_id == export_id && s->link_dir && s->link_name[0]) {
			dir = s->link_dir;
			snprintf(name, len, "%s", s->link_name);
		}
	}
	pthread_mutex_unlock(&x->lock);
	return dir;
}

/*
 * @ino has no parent the MDS can name (hard-linked): inside if the link a
 * LOOKUP in @e found it by still names it and that directory is inside.
 * 1 inside, 0 not (or no link known), -errno.
 */
static int via_link(struct nfs_exports *x, const struct nfs_export *e, struct lclient *lc, uint64_t ino, int depth)
{
	static const struct lc_cred root = { 0 };
	struct lc_inode *dir = NULL, *child = NULL;
	char name[64];
	struct lc_attr a;
	uint64_t d = link_of(x, e->id, ino, name, sizeof(name));
	int r;

	if (!d || depth > 0)
		return 0;
	r = lc_lookup_ino(lc, d, 0, &a, &dir);
	if (r)
		return r == -ESTALE ? 0 : r;
	r = lc_lookup(lc, dir, name, &root, &a, &child);
	if (child)
		lc_put(lc, child);
	if (r || a.ino != ino) {
		lc_put(lc, dir);
		return r && r != -ENOENT ? r : 0;
	}
	r = nfs_export_contains(x, e, lc, dir, d);
	lc_put(lc, dir);
	return r == 0 ? 1 : r == -ESTALE ? 0 : r;
}

int nfs_export_contains(struct nfs_exports *x, const struct nfs_export *e, struct lclient *lc,
			struct lc_inode *in, uint64_t ino)
{
	uint64_t rino, rgen, epoch, now, cur_ino = ino;
	uint64_t passed[WALK_REMEMBER];
	struct lc_inode *cur, *up = NULL;
	unsigned int npassed = 0;
	struct lc_attr a;
	int r, v = -1;

	if (!cfg_bool(CFG_nfs_subtree_check) || !strcmp(e->path, "/"))
		return 0;
	epoch = lc_ns_epoch(lc);     /* before anything is asked: a change meanwhile voids the verdict */
	now = now_mono_ns();
	/* the storm's path: the root and the verdict under one lock */
	pthread_mutex_lock(&x->lock);
	if (e->resolved && e->root_ino == ino) {
		v = 1;
	} else if (e->resolved && x->stc) {
		const struct nfs_subtree_slot *s = &x->stc[slot_of(e->id, ino)];

		if (s->ino == ino && s->export_id == e->id && s->epoch == epoch && now < s->until)
			v = s->inside;
	}
	pthread_mutex_unlock(&x->lock);
	if (v >= 0)
		return v ? 0 : -ESTALE;
	r = nfs_export_root(x, e, lc, &rino, &rgen);
	if (r)
		return r;
	if (ino == rino)
		return 0;

	lc_get(in);
	cur = in;
	for (int depth = 0; depth < WALK_MAX; depth++) {
		if (npassed < WALK_REMEMBER)
			passed[npassed++] = cur_ino;
		r = lc_lookup_parent(lc, cur, &a, &up);
		if (r == -ESTALE || r == -ENOENT) {
			/* no primary parent: hard-linked (or removed): the
			 * name a LOOKUP in the export found it by, if any */
			r = cur_ino == ino ? via_link(x, e, lc, ino, 0) : 0;
			if (r < 0)
				break;
			v = r;
			r = 0;
			if (!v)
				dout(NFS, 10, "subtree check: inode %" PRIx64 " (at %" PRIx64 ") has no parent: not in export %u",
				     ino, cur_ino, e->id);
			break;
		}
		if (r)
			break;
		lc_put(lc, cur);
		cur = up;
		if (a.ino == rino) {
			v = 1;
			break;
		}
		if (a.ino == cur_ino) {
			v = 0;           /* the top of the filesystem (or of the client's mount) */
			break;
		}
		cur_ino = a.ino;
		v = cache_get(x, e->id, cur_ino, epoch, now);
		if (v >= 0)
			break;
	}
	lc_put(lc, cur);
	if (v < 0)
		return r ? r : -ELOOP;
	cache_put(x, e->id, passed, npassed, v == 1, epoch, now + ttl_ns());
	if (!v)
		dout(NFS, 5, "subtree check: inode %" PRIx64 " is not below export %u (%s): STALE", ino, e->id,
		     e->path);
	return v ? 0 : -ESTALE;
}
