/* SPDX-License-Identifier: MIT */
/*
 * ipc/atomic.h: the few memory-ordering primitives ringrouter's shared
 * structures use, as thin names over <stdatomic.h> (liburing's barrier.h
 * shape). Every shared index, flag and owner word is declared _Atomic, so the
 * compiler and ThreadSanitizer both see the protocol; plain data (ring slots,
 * packet bytes) is ordered by the acquire/release pairs named at each use.
 *
 *   RELEASE: no load or store before it may be reordered after it.
 *   ACQUIRE: no load or store after it may be reordered before it.
 *   fence_sc: a full fence; the only thing that orders an earlier store
 *             before a later load (the wake-up protocol's Dekker pattern).
 */
#ifndef IPC_ATOMIC_H
#define IPC_ATOMIC_H

#include <stdatomic.h>

#define ipc_ld_acq(p) atomic_load_explicit((p), memory_order_acquire)
#define ipc_ld_rlx(p) atomic_load_explicit((p), memory_order_relaxed)
#define ipc_st_rel(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define ipc_st_rlx(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define ipc_xchg(p, v) atomic_exchange_explicit((p), (v), memory_order_acq_rel)
#define ipc_cas(p, expp, v)                                                                                           \
    atomic_compare_exchange_strong_explicit((p), (expp), (v), memory_order_acq_rel, memory_order_acquire)
#define ipc_add_rlx(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define ipc_fence_sc() atomic_thread_fence(memory_order_seq_cst)

#define IPC_CACHELINE 64

#define ipc_likely(x) __builtin_expect(!!(x), 1)
#define ipc_unlikely(x) __builtin_expect(!!(x), 0)

#endif
