/*
 * rcu.h - the one userspace-rcu flavour loligo uses.
 *
 * We use the "bulletproof" flavour (urcu-bp): threads need not register
 * before their first read-side section.  libfuse, io_uring completions and
 * librados all create threads we do not own, and a forgotten
 * rcu_register_thread() there would be a silent use-after-free; urcu-bp
 * registers lazily and costs a few nanoseconds more per rcu_read_lock().
 * Include this header instead of any <urcu*.h> so the cds_lfht and
 * call_rcu() users all agree on the flavour.
 */
#ifndef LOLIGO_COMMON_RCU_H
#define LOLIGO_COMMON_RCU_H

#include <urcu-bp.h>
#include <urcu/rculfhash.h>
#include <urcu/compiler.h>
#include <urcu/rcuhlist.h>
#include <urcu/rculist.h>

#endif
