/*
 * names.c - names of message types, ops and session ops for logs, perf
 * counters and admin output; which ops are journaled writes; the check of
 * a path component both the client and the MDS apply (mdsp_check_name).
 */
#include "mds_proto/proto_int.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const op_names[] = {
	[MDSP_OP_LOOKUP] = "lookup",
	[MDSP_OP_GETATTR] = "getattr",
	[MDSP_OP_SETATTR] = "setattr",
	[MDSP_OP_CREATE] = "create",
	[MDSP_OP_OPEN] = "open",
	[MDSP_OP_MKNOD] = "mknod",
	[MDSP_OP_MKDIR] = "mkdir",
	[MDSP_OP_SYMLINK] = "symlink",
	[MDSP_OP_LINK] = "link",
	[MDSP_OP_UNLINK] = "unlink",
	[MDSP_OP_RMDIR] = "rmdir",
	[MDSP_OP_RENAME] = "rename",
	[MDSP_OP_READDIR] = "readdir",
	[MDSP_OP_READLINK] = "readlink",
	[MDSP_OP_STATFS] = "statfs",
	[MDSP_OP_GETXATTR] = "getxattr",
	[MDSP_OP_SETXATTR] = "setxattr",
	[MDSP_OP_LISTXATTR] = "listxattr",
	[MDSP_OP_REMOVEXATTR] = "removexattr",
	[MDSP_OP_GETLK] = "getlk",
	[MDSP_OP_SETLK] = "setlk",
	[MDSP_OP_LOOKUPINO] = "lookupino",
	[MDSP_OP_LOOKUPPARENT] = "lookupparent",
	[MDSP_OP_TMPFILE] = "tmpfile",
	[MDSP_OP_EXTENTS] = "extents",
	[MDSP_OP_RECLAIM_SESSION] = "reclaim_session",
};

static const char *const msg_type_names[] = {
	[MDSP_MSG_SESSION] = "session",
	[MDSP_MSG_REQUEST] = "request",
	[MDSP_MSG_REPLY] = "reply",
	[MDSP_MSG_CAPS] = "caps",
	[MDSP_MSG_COMMAND] = "command",
	[MDSP_MSG_COMMAND_REPLY] = "command_reply",
	[MDSP_MSG_AUTH] = "auth",
};

static const char *const auth_op_names[] = {
	[MDSP_AUTH_HELLO] = "hello",
	[MDSP_AUTH_CHALLENGE] = "challenge",
	[MDSP_AUTH_PROOF] = "proof",
	[MDSP_AUTH_OK] = "ok",
	[MDSP_AUTH_REJECT] = "reject",
};

static const char *const session_op_names[] = {
	[MDSP_SESSION_REQUEST_OPEN] = "request_open",
	[MDSP_SESSION_OPEN] = "open",
	[MDSP_SESSION_REQUEST_RENEW] = "request_renew",
	[MDSP_SESSION_RENEW] = "renew",
	[MDSP_SESSION_REQUEST_CLOSE] = "request_close",
	[MDSP_SESSION_CLOSE] = "close",
	[MDSP_SESSION_RECONNECT] = "reconnect",
	[MDSP_SESSION_STALE] = "stale",
	[MDSP_SESSION_EVICTED] = "evicted",
	[MDSP_SESSION_REJECT] = "reject",
	[MDSP_SESSION_CONFIG] = "config",
	[MDSP_SESSION_REQUEST_FLUSH_JOURNAL] = "request_flush_journal",
};

static const char *const caps_op_names[] = {
	[MDSP_CAPS_GRANT] = "grant",
	[MDSP_CAPS_REVOKE] = "revoke",
	[MDSP_CAPS_ACK] = "ack",
	[MDSP_CAPS_FLUSH] = "flush",
	[MDSP_CAPS_FLUSH_ACK] = "flush_ack",
	[MDSP_CAPS_RELEASE] = "release",
	[MDSP_CAPS_UPDATE] = "update",
	[MDSP_CAPS_LEASE_REVOKE] = "lease_revoke",
	[MDSP_CAPS_LEASE_ACK] = "lease_ack",
	[MDSP_CAPS_LEASE_RELEASE] = "lease_release",
};

static const char *lookup(const char *const *tab, size_t n, uint32_t i)
{
	return i < n && tab[i] ? tab[i] : "unknown";
}

const char *mdsp_op_name(uint32_t op)
{
	return lookup(op_names, ARRAY_SIZE(op_names), op);
}

const char *mdsp_msg_type_name(uint32_t type)
{
	return lookup(msg_type_names, ARRAY_SIZE(msg_type_names), type);
}

const char *mdsp_session_op_name(uint32_t op)
{
	return lookup(session_op_names, ARRAY_SIZE(session_op_names), op);
}

const char *mdsp_auth_op_name(uint32_t op)
{
	return lookup(auth_op_names, ARRAY_SIZE(auth_op_names), op);
}

const char *mdsp_caps_op_name(uint32_t op)
{
	return lookup(caps_op_names, ARRAY_SIZE(caps_op_names), op);
}

/* Ceph's notation: p, then As Ls Xs, then F with s c r w b. */
const char *mdsp_caps_str(uint32_t caps, char *buf, size_t len)
{
	char t[24];
	size_t n = 0;

	if (caps & MDSP_CAP_PIN)
		t[n++] = 'p';
	if (caps & MDSP_CAP_AUTH_SHARED) {
		t[n++] = 'A';
		t[n++] = 's';
	}
	if (caps & MDSP_CAP_LINK_SHARED) {
		t[n++] = 'L';
		t[n++] = 's';
	}
	if (caps & MDSP_CAP_XATTR_SHARED) {
		t[n++] = 'X';
		t[n++] = 's';
	}
	if (caps & (MDSP_CAP_FILE_SHARED | MDSP_CAP_FILE_CACHE | MDSP_CAP_FILE_RD | MDSP_CAP_FILE_WR |
		    MDSP_CAP_FILE_BUFFER)) {
		t[n++] = 'F';
		if (caps & MDSP_CAP_FILE_SHARED)
			t[n++] = 's';
		if (caps & MDSP_CAP_FILE_CACHE)
			t[n++] = 'c';
		if (caps & MDSP_CAP_FILE_RD)
			t[n++] = 'r';
		if (caps & MDSP_CAP_FILE_WR)
			t[n++] = 'w';
		if (caps & MDSP_CAP_FILE_BUFFER)
			t[n++] = 'b';
	}
	if (caps & MDSP_CAP_DIR_CREATE) {
		t[n++] = 'D';
		t[n++] = 'c';
	}
	if (!n)
		t[n++] = '-';
	t[n] = '\0';
	if (len) {
		strncpy(buf, t, len - 1);
		buf[len - 1] = '\0';
	}
	return buf;
}

/*
 * Writes change the namespace and are journaled before their SAFE reply.
 * OPEN is not one by its op alone: whether an open with O_TRUNC or O_CREAT
 * changes anything depends on its flags, which only the MDS can judge.
 * File locks are not namespace state.
 */
bool mdsp_op_changes_names(uint32_t op)
{
	return mdsp_op_is_write(op) && op != MDSP_OP_SETATTR && op != MDSP_OP_TMPFILE && op != MDSP_OP_SETXATTR &&
	       op != MDSP_OP_REMOVEXATTR;
}

bool mdsp_op_is_write(uint32_t op)
{
	switch (op) {
	case MDSP_OP_SETATTR:
	case MDSP_OP_CREATE:
	case MDSP_OP_TMPFILE:
	case MDSP_OP_MKNOD:
	case MDSP_OP_MKDIR:
	case MDSP_OP_SYMLINK:
	case MDSP_OP_LINK:
	case MDSP_OP_UNLINK:
	case MDSP_OP_RMDIR:
	case MDSP_OP_RENAME:
	case MDSP_OP_SETXATTR:
	case MDSP_OP_REMOVEXATTR:
		return true;
	default:
		return false;
	}
}

int mdsp_check_name(const char *name)
{
	size_t n;

	if (!name || !*name)
		return -ENOENT;
	n = strlen(name);
	if (n > MDSP_NAME_MAX)
		return -ENAMETOOLONG;
	if (strchr(name, '/'))
		return -EINVAL;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 1;
	return 0;
}
