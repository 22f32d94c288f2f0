/*-------------------------------------------------------------------------
 *
 * fps_port.h
 *	  The few primitives the FPSketch core needs from its host: fixed-width
 *	  integers, a short-hold spinlock, and 64-bit atomics.
 *
 * The core (fpsketch.c) is compiled twice: inside the server (this header
 * then maps onto PostgreSQL's slock_t, whose stuck-spinlock detection we
 * want there) and standalone with -DFPS_STANDALONE for the pthread tests,
 * where a test-and-set lock stands in.  Atomics are GCC __atomic builtins in
 * both builds, always sequentially consistent: the protocols' correctness
 * arguments (lock-then-validate, install-then-unlock) rely on a total order
 * of these operations, and identical code in both builds means the
 * standalone stress test exercises exactly what the server runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FPS_PORT_H
#define FPS_PORT_H

#ifdef FPS_STANDALONE

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>

typedef uint64_t fps_u64;
typedef uint32_t fps_u32;
typedef uint16_t fps_u16;
typedef int32_t fps_i32;

typedef volatile char fps_spinlock;

static inline void
fps_spin_init(fps_spinlock *lock)
{
	__atomic_clear(lock, __ATOMIC_SEQ_CST);
}

static inline void
fps_spin_acquire(fps_spinlock *lock)
{
	int			spins = 0;

	while (__atomic_test_and_set(lock, __ATOMIC_ACQUIRE))
	{
		if (++spins > 100)
		{
			sched_yield();
			spins = 0;
		}
	}
}

static inline void
fps_spin_release(fps_spinlock *lock)
{
	__atomic_clear(lock, __ATOMIC_RELEASE);
}

#else							/* inside the server */

#include "postgres.h"
#include "storage/spin.h"

typedef uint64 fps_u64;
typedef uint32 fps_u32;
typedef uint16 fps_u16;
typedef int32 fps_i32;

typedef slock_t fps_spinlock;

#define fps_spin_init(l)	SpinLockInit(l)
#define fps_spin_acquire(l) SpinLockAcquire(l)
#define fps_spin_release(l) SpinLockRelease(l)

#endif							/* FPS_STANDALONE */

static inline fps_u64
fps_atomic_load(volatile fps_u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void
fps_atomic_store(volatile fps_u64 *p, fps_u64 v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* On failure *expected receives the current value. */
static inline bool
fps_atomic_cas(volatile fps_u64 *p, fps_u64 *expected, fps_u64 desired)
{
	return __atomic_compare_exchange_n(p, expected, desired, false,
									   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static inline fps_u64
fps_atomic_add(volatile fps_u64 *p, fps_u64 delta)
{
	return __atomic_add_fetch(p, delta, __ATOMIC_SEQ_CST);
}

static inline fps_u64
fps_atomic_sub(volatile fps_u64 *p, fps_u64 delta)
{
	return __atomic_sub_fetch(p, delta, __ATOMIC_SEQ_CST);
}

/* Atomic max: there is no fetch_max, so a CAS loop. Returns the new value. */
static inline fps_u64
fps_atomic_max(volatile fps_u64 *p, fps_u64 v)
{
	fps_u64		cur = fps_atomic_load(p);

	while (cur < v)
	{
		if (fps_atomic_cas(p, &cur, v))
			return v;
	}
	return cur;
}

#endif							/* FPS_PORT_H */
