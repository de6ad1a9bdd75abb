/*
 * sync.c: bells, the wake-up side of the rings. A thread that finds its rings
 * empty waits on its bell; whoever pushes to one of them rings it. Waiting
 * spins briefly (the next message usually comes within microseconds inside a
 * tick), then yields, then sleeps on a condition variable so that idle
 * workers between ticks, and oversubscribed hosts, cost no CPU. The mutex is
 * touched only when a waiter actually sleeps.
 */
#include "internal.h"

#include <sched.h>
#include <time.h>

#define SPINS 4000
#define YIELDS 64

int aoi__bell_init(aoi__bell *bell)
{
  atomic_init(&bell->sequence, 0);
  atomic_init(&bell->sleepers, 0);
  if (pthread_mutex_init(&bell->mutex, NULL) != 0)
    return AOI_ESYS;
  if (pthread_cond_init(&bell->cond, NULL) != 0) {
    pthread_mutex_destroy(&bell->mutex);
    return AOI_ESYS;
  }
  return 0;
}

void aoi__bell_destroy(aoi__bell *bell)
{
  pthread_cond_destroy(&bell->cond);
  pthread_mutex_destroy(&bell->mutex);
}

uint32_t aoi__bell_read(aoi__bell *bell)
{
  /* seq_cst: ordered against the ring pops that follow and the sleepers
     count a ringer reads */
  return atomic_load(&bell->sequence);
}

void aoi__bell_ring(aoi__bell *bell)
{
  /* seq_cst pair with aoi__bell_wait: either the waiter sees the new
     sequence, or this load sees the waiter counted as a sleeper */
  atomic_fetch_add(&bell->sequence, 1);
  if (atomic_load(&bell->sleepers) != 0) {
    pthread_mutex_lock(&bell->mutex);
    pthread_cond_broadcast(&bell->cond);
    pthread_mutex_unlock(&bell->mutex);
  }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

void aoi__bell_wait(aoi__bell *bell, uint32_t seen)
{
  for (int i = 0; i < SPINS; i++) {
    if (atomic_load_explicit(&bell->sequence, memory_order_relaxed) != seen)
      return;
    cpu_relax();
  }
  for (int i = 0; i < YIELDS; i++) {
    if (atomic_load_explicit(&bell->sequence, memory_order_relaxed) != seen)
      return;
    sched_yield();
  }
  pthread_mutex_lock(&bell->mutex);
  atomic_fetch_add(&bell->sleepers, 1);
  while (atomic_load(&bell->sequence) == seen)
    pthread_cond_wait(&bell->cond, &bell->mutex);
  atomic_fetch_sub(&bell->sleepers, 1);
  pthread_mutex_unlock(&bell->mutex);
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
