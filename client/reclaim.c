/*
 * reclaim.c - a restarted client reclaims its dead predecessor's session.
 *
 * A loligo-fuse killed with kill -9 leaves its MDS session behind: its caps
 * (the directory-create cap on the directories it made, Fb on what it
 * wrote), leases and file locks stay until mds_session_timeout, and every
 * request of anyone on them waits that long, the remount's own included.
 * The MDS cannot tell a dead client from one whose network broke; the
 * client's host can.
 *
 * So each process that mounts takes a lock file on its host, named by what
 * makes it "the same client": client_auth_name and the mount key (the
 * realpath of the FUSE mount point, or "nfs ADDR:PORT" for a gateway
 * alone), in client_reclaim_dir:
 *
 *   <client_reclaim_dir>/<client_auth_name>.<fnv1a64(key) hex>.lock
 *
 * flock(LOCK_EX|LOCK_NB) at start-up, held for the life of the process.
 * Held by someone else: another live process is that client; the mount is
 * refused (two would fight over one mount point).  Ours: whoever held it
 * before is dead (the kernel drops a flock when its holder's last
 * descriptor closes, at kill -9 too), and the file names its session (id
 * and client uuid, written once our own session opened).  Our REQUEST_OPEN
 * names it (SESSION v7) and the MDS evicts it as `client evict` would,
 * fence first, before opening ours (mds/session.c, session_reclaim).
 *
 * The identity is rewritten when a new session opens (after an eviction
 * with client_reconnect_stale).  A clean unmount closed the session, so it
 * removes the file while still holding the lock (a process that opened the
 * old file and then locks it sees its inode gone from the path and starts
 * over).  Only kill -9 (or a crash) leaves a file behind, which is what
 * the next mount reclaims.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cache_int.h"
#include "client/client_int.h"
#include "client/mds_client.h"
#include "common/config.h"
#include "common/log.h"

#define RECLAIM_FILE_MAX 1024

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* mkdir -p of @dir (mode 0755: the lock files in it are 0600). */
static int mkdirs(const char *dir)
{
	char p[PATH_MAX];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		p[i] = i == n ? '\0' : '/';
	}
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Parse "sid=N" and "uuid=32 hex digits" lines of @text; 0 or -EINVAL. */
static int parse_ident(const char *text, uint64_t *sid, uint8_t *uuid)
{
	const char *s = strstr(text, "\nsid="), *u = strstr(text, "\nuuid=");
	char *end;
	int i;

	if (!s || !u)
		return -EINVAL;
	*sid = strtoull(s + 5, &end, 10);
	if (end == s + 5 || *sid == 0)
		return -EINVAL;
	u += 6;
	for (i = 0; i < 16; i++) {
		int hi = hexval(u[2 * i]), lo = hi < 0 ? -1 : hexval(u[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		uuid[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Replace the file's text: who holds it, and the session a successor reclaims. */
static void write_file(struct lclient *c, uint64_t sid, const uint8_t *uuid)
{
	char text[RECLAIM_FILE_MAX], hex[33];
	int n, i;

	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", uuid ? uuid[i] : 0);
	n = snprintf(text, sizeof(text),
		     "# loligo client lock (client/reclaim.c): held by a live process; after its death\n"
		     "# the next one with this name and mount point reclaims the session below\n"
		     "key=%s\npid=%d\n",
		     c->reclaim_key, (int)getpid());
	if (sid && uuid && n > 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "sid=%" PRIu64 "\nuuid=%s\n", sid, hex);
	if (n < 0 || (size_t)n >= sizeof(text))
		return;
	if (ftruncate(c->reclaim_fd, 0) < 0 || pwrite(c->reclaim_fd, text, (size_t)n, 0) != n)
		derr(CLIENT, "reclaim: cannot write %s: %s (a successor will not reclaim our session)",
		     c->reclaim_path, strerror(errno));
}

int lclient_claim(struct lclient *c, const char *key, char *err, size_t errlen)
{
	char dir[PATH_MAX], ent[128], path[PATH_MAX], text[RECLAIM_FILE_MAX];
	struct stat fst, pst;
	ssize_t n;
	int fd = -1, r, tries;

	cfg_str(CFG_client_reclaim_dir, dir, sizeof(dir));
	if (!*dir || !key || !*key)
		return 0;
	cfg_str(CFG_client_auth_name, ent, sizeof(ent));
	for (char *p = ent; *p; p++)
		if (*p == '/')
			*p = '_';
	if (snprintf(path, sizeof(path), "%s/%s.%016" PRIx64 ".lock", dir, *ent ? ent : "client", fnv1a64(key)) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "client_reclaim_dir %s: path too long", dir);
		return -ENAMETOOLONG;
	}
	r = mkdirs(dir);
	if (r < 0) {
		/* a user without /run/loligo still mounts, as before this existed */
		dinfo(CLIENT, "reclaim: cannot make client_reclaim_dir %s (%s): a restart of this client will "
			      "wait for mds_session_timeout instead of reclaiming its session", dir, strerror(-r));
		return 0;
	}
	for (tries = 0;; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			dinfo(CLIENT, "reclaim: cannot open %s (%s): a restart of this client will wait for "
				      "mds_session_timeout instead of reclaiming its session", path, strerror(errno));
			return 0;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			r = -errno;
			n = pread(fd, text, sizeof(text) - 1, 0);
			text[n > 0 ? n : 0] = '\0';
			close(fd);
			if (r != -EWOULDBLOCK) {
				snprintf(err, errlen, "cannot lock %s: %s", path, strerror(-r));
				return r;
			}
			{
				const char *pid = strstr(text, "\npid=");

				snprintf(err, errlen, "another live loligo client (pid %d) has client name %s and mount "
						      "point %s (lock file %s): stop it first",
					 pid ? atoi(pid + 5) : 0, *ent ? ent : "client", key, path);
			}
			return -EBUSY;
		}
		/* the previous holder may have removed the file (clean unmount)
		 * between our open and our lock: lock what the path names */
		if (fstat(fd, &fst) == 0 && stat(path, &pst) == 0 && fst.st_dev == pst.st_dev &&
		    fst.st_ino == pst.st_ino)
			break;
		close(fd);
		if (tries >= 10) {
			snprintf(err, errlen, "%s keeps changing under us", path);
			return -EAGAIN;
		}
	}
	n = pread(fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	c->reclaim_fd = fd;
	c->reclaim_held = true;
	c->reclaim_path = strdup(path);
	c->reclaim_key = strdup(key);
	if (!c->reclaim_path || !c->reclaim_key) {
		lc_reclaim_release(c, false);
		return -ENOMEM;
	}
	if (parse_ident(text, &c->reclaim_sid, c->reclaim_uuid) == 0) {
		dinfo(CLIENT, "reclaim: %s names session %" PRIu64 " of a client that is gone: the mds evicts it "
			      "when our session opens", path, c->reclaim_sid);
		/* kept in the file until our session opens: if we die first, the next one reclaims it */
		write_file(c, c->reclaim_sid, c->reclaim_uuid);
	} else {
		c->reclaim_sid = 0;
		write_file(c, 0, NULL);
	}
	return 0;
}

void lc_reclaim_opened(struct lclient *c)
{
	uint8_t uuid[16];
	uint64_t sid;

	if (!c->reclaim_held || !c->mdsc)
		return;
	sid = mdsc_session_ident(c->mdsc, uuid);
	if (!sid)
		return;
	write_file(c, sid, uuid);
}

void lc_reclaim_release(struct lclient *c, bool unlink_file)
{
	if (!c->reclaim_held)
		return;
	/* still ours: nobody else can have it locked, or be about to write it */
	if (unlink_file && c->reclaim_path && unlink(c->reclaim_path) < 0 && errno != ENOENT)
		dinfo(CLIENT, "reclaim: cannot remove %s: %s", c->reclaim_path, strerror(errno));
	close(c->reclaim_fd);
	c->reclaim_held = false;
	c->reclaim_fd = -1;
	free(c->reclaim_path);
	free(c->reclaim_key);
	c->reclaim_path = NULL;
	c->reclaim_key = NULL;
}

uint64_t lclient_session_ident(struct lclient *c, uint8_t *uuid)
{
	return c->mdsc ? mdsc_session_ident(c->mdsc, uuid) : 0;
}

int lclient_reclaim_session(struct lclient *c, uint64_t sid, const uint8_t *uuid)
{
	struct mds_request *req;
	int r;

	if (!sid)
		return -EINVAL;
	req = lc_req_new(c, MDSP_OP_RECLAIM_SESSION, sid, NULL);
	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	req->args.data = malloc(16);
	if (!req->args.data) {
		mdsc_request_put(req);
		return -ENOMEM;
	}
	memcpy(req->args.data, uuid, 16);
	req->args.data_len = 16;
	r = lc_req_run(c, req, NULL);
	mdsc_request_put(req);
	dinfo(CLIENT, "reclaim: session %" PRIu64 " of another client reclaimed: %s", sid, r ? strerror(-r) : "evicted "
	      "(or gone already)");
	return r;
}
