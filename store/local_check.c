/*
 * local_check.c - look at a store directory before LMDB maps it.
 *
 * LMDB trusts its file.  It maps data.mdb and follows page numbers, so a
 * truncated file is a SIGBUS at the first access past its end, and a meta
 * page that points anywhere is a SIGSEGV; an empty data.mdb it takes for a
 * new one and initialises, which would put a new, empty store over the old
 * objects.  So before LMDB opens anything the two meta pages are read and
 * checked here (the layout of LMDB 0.9's data version 1, from mdb.c:
 * MDB_page header, then MDB_meta), the file must reach the last page the
 * newer meta page uses, and a directory that holds a store is never taken
 * for a new one.  Each refusal is one message that names the file, says
 * what is wrong and what to do, and never advises making a new filesystem
 * (which would destroy what is left); store_open() then returns -EUCLEAN.
 *
 * What is not detected: damage inside the B-trees beyond the meta pages
 * (LMDB 0.9 keeps no page checksums).  The store format version and a
 * missing objects/ directory are checked once LMDB is open (local.c,
 * open_dbs), where the object table says whether objects/ must exist.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "store/local_int.h"

#if MDB_VERSION_MAJOR != 0
#error "local_check.c knows the meta page layout of LMDB 0.9 only"
#endif

#define LMDB_MAGIC 0xBEEFC0DEu
#define LMDB_DATA_VERSION 1u
#define LMDB_P_META 0x08
#define LMDB_P_INVALID UINT64_MAX
#define META_END 152                  /* bytes of a meta page we read */

struct meta {
	bool ok;
	char why[96];
	uint32_t psize;
	uint64_t last_pg, txnid, root_free, root_main;
};

static uint16_t ne16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static uint32_t ne32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t ne64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/*
 * One meta page, native-endian as LMDB writes it: page header (pgno u64,
 * pad u16, flags u16, lower/upper u16 x2), then magic u32, version u32,
 * address u64, mapsize u64, two MDB_db of 48 bytes (pad u32 - the page size
 * in the first -, flags u16, depth u16, branch, leaf, overflow, entries,
 * root u64), last_pg u64, txnid u64.
 */
static void parse_meta(const unsigned char *p, size_t len, struct meta *m)
{
	uint32_t magic, version;

	memset(m, 0, sizeof(*m));
	if (len < META_END) {
		snprintf(m->why, sizeof(m->why), "the file ends inside it");
		return;
	}
	magic = ne32(p + 16);
	version = ne32(p + 20);
	m->psize = ne32(p + 40);
	m->root_free = ne64(p + 80);
	m->root_main = ne64(p + 128);
	m->last_pg = ne64(p + 136);
	m->txnid = ne64(p + 144);
	if (!(ne16(p + 10) & LMDB_P_META) || magic != LMDB_MAGIC)
		snprintf(m->why, sizeof(m->why), "%s", magic == 0 ? "zeroed" : "not an LMDB meta page");
	else if (version != LMDB_DATA_VERSION)
		snprintf(m->why, sizeof(m->why), "LMDB data version %u, this build reads %u", version, LMDB_DATA_VERSION);
	else if (m->psize < 512 || m->psize > 65536 || (m->psize & (m->psize - 1)))
		snprintf(m->why, sizeof(m->why), "page size %u", m->psize);
	else if (m->last_pg < 1 || (m->root_free != LMDB_P_INVALID && m->root_free > m->last_pg) ||
		 (m->root_main != LMDB_P_INVALID && m->root_main > m->last_pg))
		snprintf(m->why, sizeof(m->why), "page numbers out of range");
	else
		m->ok = true;
}

#define RESTORE "restore the store directory from a backup (do not create a new filesystem over it: " \
		"that would discard what is left)"

/* data.mdb exists and is not empty: its meta pages and its length. */
static int check_lmdb(struct local_store *ls, const struct stat *sb)
{
	unsigned char buf[META_END];
	struct meta m[2];
	const struct meta *best;
	long os_psize = sysconf(_SC_PAGESIZE);
	uint32_t psize;
	ssize_t n;
	int fd, r = 0;

	fd = openat(ls->dirfd, "data.mdb", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		store_open_refuse("local store: %s/data.mdb: %s", ls->path, strerror(errno));
		return r;
	}
	n = pread(fd, buf, sizeof(buf), 0);
	if (n < 0)
		goto out_io;
	parse_meta(buf, (size_t)n, &m[0]);
	/* LMDB finds the second meta page one page (as the first says) in */
	psize = m[0].ok ? m[0].psize : (uint32_t)(os_psize > 0 ? os_psize : 4096);
	n = pread(fd, buf, sizeof(buf), psize);
	if (n < 0)
		goto out_io;
	parse_meta(buf, (size_t)n, &m[1]);
	if (m[0].ok && m[1].ok && m[0].psize != m[1].psize) {
		m[1].ok = false;
		snprintf(m[1].why, sizeof(m[1].why), "page size %u, the first says %u", m[1].psize, m[0].psize);
	}
	if (!m[0].ok || !m[1].ok) {
		if (!m[0].ok && !m[1].ok)
			store_open_refuse("local store: %s/data.mdb is damaged: both meta pages are unreadable (page 0: %s; "
			     "page 1: %s); %s", ls->path, m[0].why, m[1].why, RESTORE);
		else
			store_open_refuse("local store: %s/data.mdb is damaged: meta page %d is unreadable (%s), so its "
			     "latest commit cannot be trusted; %s", ls->path, m[0].ok ? 1 : 0, m[0].ok ? m[1].why : m[0].why,
			     RESTORE);
		r = -EUCLEAN;
		goto out;
	}
	best = m[0].txnid >= m[1].txnid ? &m[0] : &m[1];
	if ((uint64_t)sb->st_size / best->psize < best->last_pg + 1) {
		store_open_refuse("local store: %s/data.mdb is truncated: it has %lld bytes, but its latest commit "
		     "(transaction %" PRIu64 ") uses pages up to %" PRIu64 " of %u bytes (%" PRIu64 " bytes); %s",
		     ls->path, (long long)sb->st_size, best->txnid, best->last_pg, best->psize,
		     (best->last_pg + 1) * best->psize, RESTORE);
		r = -EUCLEAN;
	}
	goto out;
out_io:
	r = -errno;
	store_open_refuse("local store: reading %s/data.mdb: %s", ls->path, strerror(errno));
out:
	close(fd);
	return r;
}

int local_check_dir(struct local_store *ls, bool create, bool *fresh)
{
	struct stat db, od;
	bool have_obj;

	*fresh = false;
	have_obj = fstatat(ls->dirfd, "objects", &od, 0) == 0;
	if (have_obj && !S_ISDIR(od.st_mode)) {
		store_open_refuse("local store: %s/objects is not a directory; %s", ls->path, RESTORE);
		return -EUCLEAN;
	}
	if (fstatat(ls->dirfd, "data.mdb", &db, 0) < 0) {
		int r = -errno;
		if (r != -ENOENT) {
			store_open_refuse("local store: %s/data.mdb: %s", ls->path, strerror(-r));
			return r;
		}
		if (have_obj) {
			store_open_refuse("local store: %s/data.mdb is missing, but objects/ holds the object data: the "
			     "store's metadata is gone; %s", ls->path, RESTORE);
			return -EUCLEAN;
		}
		if (!create) {
			store_open_refuse("local store: %s is not an object store (no data.mdb); create it first", ls->path);
			return -ENOENT;
		}
		*fresh = true;
		return 0;
	}
	if (!S_ISREG(db.st_mode)) {
		store_open_refuse("local store: %s/data.mdb is not a regular file; %s", ls->path, RESTORE);
		return -EUCLEAN;
	}
	if (db.st_size == 0) {
		if (have_obj) {
			store_open_refuse("local store: %s/data.mdb is empty (truncated to 0 bytes?), but objects/ holds "
			     "object data; %s", ls->path, RESTORE);
			return -EUCLEAN;
		}
		if (!create) {   /* a creation that never finished: nothing was ever stored */
			store_open_refuse("local store: %s is not an object store (data.mdb is empty); create it first",
			     ls->path);
			return -ENOENT;
		}
		*fresh = true;
		return 0;
	}
	return check_lmdb(ls, &db);
}
