/*
 * auth.h - private to mds/: the AUTH handshake and the keyring (auth.c).
 * Types are in mds.h.
 */
#ifndef LOLIGO_MDS_AUTH_H
#define LOLIGO_MDS_AUTH_H

#include "mds/mds.h"

/* auth_load - read the keyring at start-up.  Return 0 or -errno with @err set. */
int auth_load(struct mds *m, char *err, size_t errlen);
void auth_free(struct mds *m);
/*
 * auth_handle - an AUTH message on @c (its reader thread).  Returns 0, or
 * -EACCES when the connection is to be closed (a REJECT was sent and the
 * reason logged with the peer).
 */
int auth_handle(struct mds *m, struct conn *c, struct mdsp_auth *a);
/* auth_admin_* - the auth admin commands; the keyring is written back. */
struct json_object;
/*
 * auth_admin_get_or_create - @name's key (created with @caps if it has
 * none, and @create).  @caps (NULL: not given) must parse and, for a key
 * that exists, be its caps already (-EINVAL otherwise, @err says to use
 * auth caps).  The reply carries the key and caps.mds.
 */
int auth_admin_get_or_create(struct mds *m, const char *name, const char *caps, bool create,
			     struct json_object *out, char *err, size_t errlen);
/* auth_admin_caps - set @name's caps mds (NULL or "": none, i.e. allow rw);
 * sessions of @name follow them from their next request. */
int auth_admin_caps(struct mds *m, const char *name, const char *caps, struct json_object *out, char *err,
		    size_t errlen);
/*
 * auth_admin_rm - remove @name's key, write the keyring, then cut the name
 * off: its connections are closed and its sessions evicted (how many into
 * *@nconns, *@nsessions, may be NULL).  No lock held.
 */
int auth_admin_rm(struct mds *m, const char *name, int *nconns, int *nsessions, char *err, size_t errlen);
struct json_object *auth_admin_ls(struct mds *m);

#endif
