/*
 * mds_wire.h - a small synchronous MDS client and a loligo-mds process
 * harness for the integration tests and tools/bench/mds_bench.c.
 *
 * mdsw: one TCP connection, one session; a request is sent with a tid and
 * the call waits for its SAFE reply (noting whether an UNSAFE one came
 * first).  mdsw_connect authenticates as client.admin with the key every
 * mdsproc of this process shares (mdsw_test_key), so every frame after it
 * carries a MAC.  mdsw caches nothing: what a reply grants (caps, dentry
 * leases) is released at once, so no other client's change waits for it,
 * unless keep_caps is set; then revokes that arrive while it reads are
 * acked at once (unless no_ack is set), and a create is followed by the
 * CAPS UPDATE of a close.  mdsproc: runs the real
 * loligo-mds binary (fork/exec) on a temp store and an ephemeral port, with
 * a keyring holding client.admin (<dir>/keyring for the MDS,
 * <dir>/client.keyring for clients); the child dies with its parent
 * (PR_SET_PDEATHSIG), so a crashing test leaves no daemon behind.
 */
#ifndef LOLIGO_BENCH_MDS_WIRE_H
#define LOLIGO_BENCH_MDS_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mds_proto/proto.h"

struct mdsw {
	int fd;
	uint64_t out_seq;
	uint64_t in_seq;
	struct mdsp_mac *tx, *rx;   /* authenticated: MAC keys */
	bool hmac_only;             /* offer no GMAC in HELLO (a client of before it) */
	enum mdsp_mac_alg mac_alg;  /* authenticated: the frame MACs the MDS chose */
	uint8_t cnonce[MDSP_NONCE_LEN], snonce[MDSP_NONCE_LEN];
	uint8_t secret[MDSP_KEY_LEN];   /* of the session opened or resumed here */
	bool authenticated;
	uint64_t sid;
	uint64_t next_tid;
	uint64_t oldest_tid;        /* sent with every request; 0 = don't trim */
	uint64_t epoch;
	struct mdsp_caller caller;
	bool got_unsafe;            /* last request: an UNSAFE reply came first */
	bool wait_safe;             /* default true: mdsw_call returns on SAFE */
	bool no_flush_hint;         /* waiting for SAFE, send no REQUEST_FLUSH_JOURNAL (an older client) */
	int timeout_ms;
	bool keep_caps;             /* hold what replies grant (default: release at once) */
	bool no_ack;                /* leave revokes unanswered (a client that hangs) */
	bool no_lease_ack;          /* leave dentry lease revokes unanswered (caps revokes are acked) */
	unsigned revokes, lease_revokes, grants;   /* CAPS messages seen */
	uint8_t uuid[16];           /* client_uuid sent by mdsw_open (default zeros: none) */
	uint64_t reclaim_sid;       /* mdsw_open reclaims this session of client reclaim_uuid (0: none) */
	uint8_t reclaim_uuid[16];
	uint64_t deleg_tid;         /* sent in RECONNECT (0: no bound on the tids naming old delegations) */
};

/* The key of client.admin that every mdsproc of this process holds. */
const uint8_t *mdsw_test_key(void);
/* mdsw_connect - connect and authenticate as client.admin (mdsw_handshake). */
int mdsw_connect(struct mdsw *w, uint16_t port);
/* mdsw_connect_raw - connect only: no AUTH yet. */
int mdsw_connect_raw(struct mdsw *w, uint16_t port);
/* mdsw_handshake - AUTH as client.admin with the test key. */
int mdsw_handshake(struct mdsw *w);
/*
 * mdsw_handshake_as - AUTH as @name with @key (NULL: no key).  Returns 0 or
 * the REJECT's result (-ENOKEY, -EKEYREJECTED, -EACCES), with the reason in
 * @reason (may be NULL).
 */
int mdsw_handshake_as(struct mdsw *w, const char *name, const uint8_t *key, char *reason, size_t rlen);
/* mdsw_fix_frame - after tampering with @b (one frame from mdsw_encode):
 * recompute the header crc if @hdr_crc, then the MAC, as a sender would. */
void mdsw_fix_frame(struct mdsw *w, struct mdsp_buf *b, bool hdr_crc);
/* mdsw_reconnect_secret - RECONNECT @sid proving @secret. */
int mdsw_reconnect_secret(struct mdsw *w, uint64_t sid, const uint8_t *secret);
/* mdsw_connect with the socket's receive buffer set to @rcvbuf bytes first (0: the default). */
int mdsw_connect_rcvbuf(struct mdsw *w, uint16_t port, int rcvbuf);
void mdsw_close(struct mdsw *w);
/* mdsw_open - REQUEST_OPEN; returns 0 and sets w->sid. */
int mdsw_open(struct mdsw *w, const char *name);
/* mdsw_reconnect - RECONNECT with @sid on this connection, proving the
 * secret of @sid if this process opened it (else w->secret); 0 or the
 * REJECT result. */
int mdsw_reconnect(struct mdsw *w, uint64_t sid);
/* mdsw_reconnect_caps - the same, re-asserting @n caps and leases. */
int mdsw_reconnect_caps(struct mdsw *w, uint64_t sid, const struct mdsp_cap_reconnect *caps, uint32_t n);
int mdsw_renew(struct mdsw *w);
int mdsw_session_close(struct mdsw *w);
/* Send a raw frame buffer (for bad-input tests). */
int mdsw_send_raw(struct mdsw *w, const void *buf, size_t len);
/* Encode @msg with the next seq into @out, sealed and (authenticated) with
 * its MAC appended: ready to send (caller frees). */
int mdsw_encode(struct mdsw *w, struct mdsp_msg *msg, struct mdsp_buf *out);

/*
 * mdsw_call - send @req (tid assigned when 0, caller from w->caller) and
 * wait for its SAFE reply (or the first reply if !w->wait_safe) into @rep.
 * Returns the reply's result (0 or -errno), or a transport error < -1000
 * (-1000 + -errno).  Free @rep with mdsw_reply_free.
 */
int mdsw_call(struct mdsw *w, struct mdsp_request *req, struct mdsp_reply *rep);
/* mdsw_send_request - send @req as mdsw_call does, without waiting: 0 or < -1000. */
int mdsw_send_request(struct mdsw *w, struct mdsp_request *req);
/* mdsw_recv_reply - the next reply of any tid (SAFE, or any if !w->wait_safe)
 * into @rep, CAPS messages handled meanwhile; nothing is released: 0 or < -1000. */
int mdsw_recv_reply(struct mdsw *w, struct mdsp_reply *rep);
/* mdsw_flush_hint - SESSION REQUEST_FLUSH_JOURNAL: we wait for SAFE replies,
 * write the journal now (mdsw_call and mdsw_recv_reply send it on an UNSAFE
 * reply while they wait for the SAFE one, unless w->no_flush_hint). */
int mdsw_flush_hint(struct mdsw *w);
/* mdsw_send_caps - send a CAPS message (no answer expected). */
int mdsw_send_caps(struct mdsw *w, const struct mdsp_caps *c);
/* mdsw_poll_caps - read for @ms and answer the revokes that come (ack unless no_ack). */
int mdsw_poll_caps(struct mdsw *w, int ms);
void mdsw_reply_free(struct mdsp_reply *rep);
int mdsw_command(struct mdsw *w, const char *json, char **out);

/* convenience wrappers: return the result; *out gets the target inode */
int mdsw_lookup(struct mdsw *w, uint64_t dir, const char *name, struct mdsp_inode *out);
int mdsw_getattr(struct mdsw *w, uint64_t ino, struct mdsp_inode *out);
int mdsw_create(struct mdsw *w, uint64_t dir, const char *name, uint32_t mode, uint32_t oflags,
		struct mdsp_inode *out);
int mdsw_mkdir(struct mdsw *w, uint64_t dir, const char *name, uint32_t mode, struct mdsp_inode *out);
int mdsw_symlink(struct mdsw *w, uint64_t dir, const char *name, const char *target, struct mdsp_inode *out);
int mdsw_link(struct mdsw *w, uint64_t dir, const char *name, uint64_t ino, struct mdsp_inode *out);
int mdsw_unlink(struct mdsw *w, uint64_t dir, const char *name);
int mdsw_rmdir(struct mdsw *w, uint64_t dir, const char *name);
int mdsw_rename(struct mdsw *w, uint64_t sdir, const char *sname, uint64_t ddir, const char *dname,
		uint32_t flags);
int mdsw_setattr(struct mdsw *w, uint64_t ino, uint32_t mask, const struct mdsp_inode *attr,
		 struct mdsp_inode *out);
int mdsw_readlink(struct mdsw *w, uint64_t ino, char **out);
/* readdir one batch after @cookie; entries are appended to names/cookies (caller frees). */
int mdsw_readdir(struct mdsw *w, uint64_t dir, uint64_t cookie, uint32_t max, struct mdsp_reply *rep);

/* ---- the daemon ------------------------------------------------------------ */

struct mdsproc {
	char dir[256];              /* temp dir: store/, mds.port, mds.log, mds.asok */
	char bin[512];
	pid_t pid;
	uint16_t port;
	char extra[8][256];         /* extra --key=value arguments */
	int nextra;
};

/* mdsproc_init - make a temp dir under @parent (NULL: $TMPDIR or /tmp) and find the binary. */
int mdsproc_init(struct mdsproc *p, const char *parent);
/* mdsproc_run - run loligo-mds with @args (NULL-terminated) to completion; returns its exit
 * status; its stderr goes to @err (may be NULL). */
int mdsproc_run(struct mdsproc *p, const char *const *args, char *err, size_t errlen);
/* mdsproc_run_output - the same, with stdout and stderr both into @out. */
int mdsproc_run_output(struct mdsproc *p, const char *const *args, char *out, size_t outlen);
int mdsproc_mkfs(struct mdsproc *p);
/* mdsproc_start - start the daemon and wait for its port file. */
int mdsproc_start(struct mdsproc *p);
/* mdsproc_stop - send @sig and reap it; returns its exit status (or 128+signal). */
int mdsproc_stop(struct mdsproc *p, int sig);
/*
 * mdsproc_config_set - `config set @var @val` on the running daemon's admin
 * socket (e.g. the mds_journal_hold test hook).  Return: 0, or -errno (the
 * daemon's error, logged to stderr).
 */
int mdsproc_config_set(struct mdsproc *p, const char *var, const char *val);
/* mdsproc_perf - @group.@name of the running daemon's `perf dump` (a counter
 * or gauge) into *@v.  Return: 0, -ENOENT (no such entry), or -errno. */
int mdsproc_perf(struct mdsproc *p, const char *group, const char *name, uint64_t *v);
/* mdsproc_cleanup - kill it if running and remove the temp dir. */
void mdsproc_cleanup(struct mdsproc *p);
/* mdsproc_parent_init - make a suite's parent dir $TMPDIR/<prefix>XXXXXX for mdsproc_init (0 or -errno). */
int mdsproc_parent_init(char *dir, size_t len, const char *prefix);
/* mdsproc_parent_remove - remove it and all below it, unless LOLIGO_TEST_KEEP is set; first print
 * to stderr the tail of every mds.log still in it (a failed case's: its teardown did not run). */
void mdsproc_parent_remove(const char *dir);

#endif
