/*
 * opwait.c - what the current thread's operation waits for (client.h
 * lc_op_wait_set): the slot's wait fields, written by its own thread only.
 * See optrack.c for who reads them.
 */
#include "client/client.h"
#include "client/optrack.h"
#include "common/time.h"

__thread struct lc_op_slot *lc_my_slot;

void lc_op_wait_set(enum lc_wait w, uint64_t arg)
{
	struct lc_op_slot *s = lc_my_slot;

	if (!s || !s->depth)
		return;
	atomic_store_explicit(&s->wait_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&s->wait_ns, now_mono_ns(), memory_order_relaxed);
	atomic_store_explicit(&s->wait, w, memory_order_release);
}

void lc_op_wait_clear(void)
{
	struct lc_op_slot *s = lc_my_slot;

	if (s && s->depth)
		atomic_store_explicit(&s->wait, LC_WAIT_NONE, memory_order_release);
}

