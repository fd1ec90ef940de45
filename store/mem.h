/*
 * mem.h - the in-memory object store, for tests of the layers above the
 * store (the MDS core's unit suites) and for the conformance suite that
 * keeps it honest.
 *
 * It behaves as the local and rados backends do (store.h), minus
 * durability: nothing survives the process.  It is not reachable through
 * the daemons' configuration (store_backend names local or rados only), so
 * no daemon can be started on a store that forgets everything.
 *
 * Stores are named: every handle opened with one name sees the same
 * objects, and they live while one handle is open, so a test can stop an
 * MDS and start another over what the first one wrote (keep a handle of
 * your own open across the restart).
 */
#ifndef LOLIGO_STORE_MEM_H
#define LOLIGO_STORE_MEM_H

#include "store/store.h"

/**
 * store_open_mem - open the in-memory store called @name (made empty on
 * its first open).  Returns 0 and *@out, or -ENOMEM / -EINVAL (no name).
 * Close with store_close(); the objects go with the last handle.
 */
int store_open_mem(const char *name, struct store **out);

#endif
