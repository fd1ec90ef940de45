/*
 * optrack.h - private to client/: a thread's slot in the operations in
 * flight (optrack.c), and the pointer to it that the waits everywhere in
 * client/ annotate (opwait.c: no dependency but this header, so the MDS
 * session layer, built alone in its tests, has it too).
 */
#ifndef LOLIGO_CLIENT_OPTRACK_H
#define LOLIGO_CLIENT_OPTRACK_H

#include <stdatomic.h>
#include <stdint.h>

struct lclient;

struct lc_op_slot {
	struct lc_op_slot *next;        /* all_slots; slots_lock */
	struct lclient *_Atomic c;      /* whose requests it tracks; NULL: free */
	uint64_t cid;                   /* that client's c->op_cid */
	_Atomic int tid;                /* its thread (0: free) */
	char thread[16];
	_Atomic uint64_t start_ns;      /* 0: idle */
	_Atomic(const char *) who;      /* "fuse", "nfs4", "nfs3", "client": static strings */
	_Atomic(const char *) op;
	_Atomic uint64_t ino;
	_Atomic int wait;               /* enum lc_wait */
	_Atomic uint64_t wait_arg;
	_Atomic uint64_t wait_ns;
	_Atomic uint64_t seq;           /* bumped per operation */
	uint64_t warned_seq;            /* the watchdog's: the operation it warned about */
	int depth;                      /* its thread only: nested begins */
};

/* this thread's slot (NULL: it never served a request) */
extern __thread struct lc_op_slot *lc_my_slot;

#endif
