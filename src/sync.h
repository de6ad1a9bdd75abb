/*
 * sync.h: bells (sync.c), which wake a thread that waits for ring traffic,
 * and the monotonic clock. (The stress points are in stress.h.)
 */
#ifndef AOI_SYNC_H
#define AOI_SYNC_H

#include <pthread.h>
#include <stdatomic.h>

#include "base.h"

/* A bell wakes a thread that waits for ring traffic. The waiter reads the
   sequence, tries its rings, and waits only if the sequence did not move. It
   spins for a while (spin_ns, or what the call says), then sleeps: on a
   futex on the sequence (Linux), else on a condition variable. A ringer
   makes a system call only when somebody sleeps. */
typedef struct aoi__bell {
  _Atomic uint32_t sequence;
  _Atomic uint32_t sleepers;
  uint32_t spin_ns; /* how long aoi__bell_wait spins; set before use */
#ifndef __linux__
  pthread_mutex_t mutex;
  pthread_cond_t cond;
#endif
} aoi__bell;

int aoi__bell_init(aoi__bell *bell);
void aoi__bell_destroy(aoi__bell *bell);
uint32_t aoi__bell_read(aoi__bell *bell);
/* Wakes every sleeper. */
void aoi__bell_ring(aoi__bell *bell);
/* Wakes at least `count` sleepers, or all if fewer sleep. A waiter that
   sleeps on may see the new sequence later: it must look for work again
   after any wake-up, and wakers must ring for all they leave undone. */
void aoi__bell_ring_some(aoi__bell *bell, uint32_t count);
/* Waits until the sequence is no longer `seen`, spinning bell->spin_ns
   first. */
void aoi__bell_wait(aoi__bell *bell, uint32_t seen);
/* The same, spinning `spin_ns` first (0: sleep at once). */
void aoi__bell_wait_for(aoi__bell *bell, uint32_t seen, uint32_t spin_ns);

/* The monotonic clock, in nanoseconds. */
uint64_t aoi__now_ns(void);
/* The calling thread's CPU time, in nanoseconds (0 where there is no
   such clock). */
uint64_t aoi__cpu_ns(void);

#endif /* AOI_SYNC_H */
