/*
 * sync.c: bells, the wake-up side of the rings. A thread that finds its rings
 * empty waits on its bell; whoever pushes to one of them rings it. Waiting
 * spins for a bounded time (a peer's batch inside a tick usually comes
 * within microseconds), then sleeps in the kernel, so that idle workers
 * between ticks, and threads that share a core, cost no CPU. How long each
 * wait spins is the caller's choice (world.c): long enough to skip a
 * sleep and a wake-up when the other side is running on another core,
 * short where the spinner would take the core the other side needs.
 *
 * On Linux the sleep is a futex on the sequence word itself: the kernel
 * checks that the sequence is still `seen` as it puts the waiter to sleep,
 * and a ringer calls it only when the sleepers count says someone may
 * sleep. Elsewhere a mutex and a condition variable do the same; the mutex
 * is touched only when a waiter actually sleeps.
 *
 * The stress point of AOI_STRESS builds (stress.h) is here too: its spin
 * is the bells' (cpu_relax).
 */
#include "sync.h"
#include "stress.h"

#include <sched.h>
#include <time.h>
#ifdef __linux__
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

int aoi__bell_init(aoi__bell *bell)
{
  atomic_init(&bell->sequence, 0);
  atomic_init(&bell->sleepers, 0);
  bell->spin_ns = 0;
#ifndef __linux__
  if (pthread_mutex_init(&bell->mutex, NULL) != 0)
    return AOI_ESYS;
  if (pthread_cond_init(&bell->cond, NULL) != 0) {
    pthread_mutex_destroy(&bell->mutex);
    return AOI_ESYS;
  }
#endif
  return 0;
}

void aoi__bell_destroy(aoi__bell *bell)
{
#ifndef __linux__
  pthread_cond_destroy(&bell->cond);
  pthread_mutex_destroy(&bell->mutex);
#else
  (void)bell;
#endif
}

uint32_t aoi__bell_read(aoi__bell *bell)
{
  /* seq_cst: ordered against the ring pops that follow and the sleepers
     count a ringer reads */
  return atomic_load(&bell->sequence);
}

#ifdef __linux__
static void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
  /* Returns at once if *word != seen; a signal or a spurious wake-up
     returns too, and the caller checks again. */
  (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL,
                NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int count)
{
  (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL,
                NULL, 0);
}
#endif

void aoi__bell_ring_some(aoi__bell *bell, uint32_t count)
{
  /* seq_cst pair with aoi__bell_wait: either the waiter sees the new
     sequence, or this load sees the waiter counted as a sleeper */
  atomic_fetch_add(&bell->sequence, 1);
  if (atomic_load(&bell->sleepers) != 0) {
#ifdef __linux__
    futex_wake(&bell->sequence, count > INT_MAX ? INT_MAX : (int)count);
#else
    (void)count; /* (a spurious wake-up costs a look at the rings) */
    pthread_mutex_lock(&bell->mutex);
    pthread_cond_broadcast(&bell->cond);
    pthread_mutex_unlock(&bell->mutex);
#endif
  }
}

void aoi__bell_ring(aoi__bell *bell)
{
  aoi__bell_ring_some(bell, UINT32_MAX);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

void aoi__bell_wait_for(aoi__bell *bell, uint32_t seen, uint32_t spin_ns)
{
  if (spin_ns > 0) {
    uint64_t until = aoi__now_ns() + spin_ns;
    for (unsigned i = 1;; i++) {
      if (atomic_load_explicit(&bell->sequence, memory_order_relaxed) != seen)
        return;
      cpu_relax();
      if (i % 32 == 0 && aoi__now_ns() >= until)
        break;
    }
  }
#ifdef __linux__
  atomic_fetch_add(&bell->sleepers, 1);
  while (atomic_load(&bell->sequence) == seen)
    futex_wait(&bell->sequence, seen);
  atomic_fetch_sub(&bell->sleepers, 1);
#else
  pthread_mutex_lock(&bell->mutex);
  atomic_fetch_add(&bell->sleepers, 1);
  while (atomic_load(&bell->sequence) == seen)
    pthread_cond_wait(&bell->cond, &bell->mutex);
  atomic_fetch_sub(&bell->sleepers, 1);
  pthread_mutex_unlock(&bell->mutex);
#endif
}

void aoi__bell_wait(aoi__bell *bell, uint32_t seen)
{
  aoi__bell_wait_for(bell, seen, bell->spin_ns);
}

#ifdef AOI_STRESS
void aoi__stress_point(void)
{
  /* Per-thread xorshift, seeded from the thread's own stack address. */
  static _Thread_local uint64_t state;
  if (state == 0)
    state = (uint64_t)(uintptr_t)&state * 0x9e3779b97f4a7c15ull | 1;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  unsigned roll = (unsigned)(state % 64);
  if (roll < 8) {
    sched_yield();
  } else if (roll < 10) {
    struct timespec pause = {0, (long)(state >> 40) % 50000};
    nanosleep(&pause, NULL);
  } else if (roll < 20) {
    for (unsigned i = (unsigned)(state >> 48) % 2000; i > 0; i--)
      cpu_relax();
  }
}
#endif

uint64_t aoi__now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t aoi__cpu_ns(void)
{
#ifdef CLOCK_THREAD_CPUTIME_ID
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
  return 0;
#endif
}
