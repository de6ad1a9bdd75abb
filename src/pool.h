/*
 * pool.h: pools of threads that run tasks (pool.c), and jobs, which let a
 * host wait for a set of tasks. The tasks themselves are a world's (tick.c
 * makes them); a pool knows nothing of worlds.
 */
#ifndef AOI_POOL_H
#define AOI_POOL_H

#include <stdbool.h>

#include "aoi.h"
#include "sync.h"

/* A unit of work: run(task) on some thread of the pool. A task is in at
   most one queue at a time; its owner embeds it (a world's start, a lane)
   and pushes it again only after it ran. */
typedef struct aoi__task {
  struct aoi__task *next;
  void (*run)(struct aoi__task *task);
  bool big; /* taken alone, not in a chunk of small ones */
} aoi__task;

/* The waiters' side of a set of tasks: `left` counts those not done. The
   last one's aoi__job_done rings the bell, then lets go (released); the
   waiter returns only once it has, so a job may live on its waiter's
   stack. */
typedef struct aoi__job {
  _Atomic uint32_t left;
  _Atomic uint32_t released;
  aoi__bell bell;
} aoi__job;

int aoi__job_init(aoi__job *job, uint32_t spin_ns);
void aoi__job_destroy(aoi__job *job);
/* Arms the job for `count` tasks (no task of the last arming may run). */
void aoi__job_arm(aoi__job *job, uint32_t count);
/* One task done; the job must not be touched by this thread after. */
void aoi__job_done(aoi__job *job);
/* `count` tasks done at once, likewise. */
void aoi__job_done_some(aoi__job *job, uint32_t count);
/* Whether every task is done and the last has let go. */
bool aoi__job_finished(aoi__job *job);
void aoi__job_wait(aoi__job *job);

struct aoi_pool {
  aoi_allocator allocator;
  unsigned threads;
  pthread_t *thread;
  unsigned started; /* threads running */
  /* The queue: tasks from head (run first) to tail, under `mutex`;
     `queued` counts them for the idle threads' spin. */
  pthread_mutex_t mutex;
  bool mutex_ready;
  aoi__task *head, *tail;
  _Atomic uint32_t queued;
  aoi__bell work; /* rung when tasks are pushed, or to stop */
  _Atomic uint32_t stop;
  _Atomic uint32_t worlds; /* worlds on it (aoi_pool_destroy refuses) */
  uint32_t idle_spin_ns;   /* how long an idle thread looks for work */
  uint32_t host_spin_ns;   /* how long a host waits before it sleeps */
};

/* The creation and destruction behind aoi_pool_create and
   aoi_pool_destroy, for world.c's private pools too. */
int aoi__pool_create(const aoi_pool_config *config, aoi_pool **out);
void aoi__pool_free(aoi_pool *pool);

/* Pushes the chain first .. last (linked through next, `count` tasks) to
   the pool's queue: at its head (run before what waits) or its tail. */
void aoi__pool_push(aoi_pool *pool, aoi__task *first, aoi__task *last,
                    uint32_t count, bool head);

/* The most threads of a pool that aoi__pool_spread asks to help. */
#define AOI__SPREAD_HELPERS 63u

/* Runs fn(context, part) for every part 0 .. parts - 1 and returns once
   all are done: the calling thread takes parts as they come, and so do
   up to `helpers` (at most AOI__SPREAD_HELPERS) of the pool's threads,
   each a task pushed to the head of its queue; once every part is taken
   the helpers no thread took yet are taken back out of the queue, so a
   sleeping pool costs no wake-up. On a thread of the pool itself (a
   delivery callback's) it runs every part there, since the pool's
   threads may all be waiting on it. `job` is the caller's, idle; the
   parts must not wait for each other. */
void aoi__pool_spread(aoi_pool *pool, aoi__job *job, unsigned helpers,
                      unsigned parts, void (*fn)(void *context, unsigned part),
                      void *context);

/* The online cores, at least 1 and at most AOI__MAX_THREADS. */
unsigned aoi__online_cores(void);

#endif /* AOI_POOL_H */
