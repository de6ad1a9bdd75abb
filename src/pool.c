/*
 * pool.c: pools of threads and the tasks they run (pool.h). A pool's
 * threads share one queue: a host pushes a world's start as one task, a
 * large world pushes a task per lane and step, and an idle thread takes
 * from the head. The queue carries tasks, not entities (a tick makes one
 * per world, or three per lane), so a mutex guards it: the entities'
 * traffic stays on the lanes' rings (worker.c). Small tasks are taken a
 * chunk at a time, so that ten thousand small worlds cost a few hundred
 * lock round trips, and a large one alone, so that the lanes of a large
 * world spread over the threads.
 *
 * An idle thread spins a while for work (when it has a core of its own),
 * then sleeps on the pool's bell, which a push rings. A job lets a host
 * wait for its tasks: the last one done rings the job's bell.
 */
#include "pool.h"
#include "base.h"
#include "stress.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- jobs --------------------------------------------------------------- */

int aoi__job_init(aoi__job *job, uint32_t spin_ns)
{
  atomic_init(&job->left, 0);
  atomic_init(&job->released, 1);
  if (aoi__bell_init(&job->bell) != 0)
    return AOI_ESYS;
  job->bell.spin_ns = spin_ns;
  return 0;
}

void aoi__job_destroy(aoi__job *job)
{
  aoi__bell_destroy(&job->bell);
}

void aoi__job_arm(aoi__job *job, uint32_t count)
{
  atomic_store(&job->released, count == 0);
  atomic_store(&job->left, count);
}

void aoi__job_done_some(aoi__job *job, uint32_t count)
{
  AOI__ASSERT(atomic_load(&job->left) >= count);
  if (count > 0 && atomic_fetch_sub(&job->left, count) == count) {
    aoi__bell_ring(&job->bell);
    atomic_store(&job->released, 1); /* the last touch */
  }
}

void aoi__job_done(aoi__job *job)
{
  aoi__job_done_some(job, 1);
}

bool aoi__job_finished(aoi__job *job)
{
  return atomic_load(&job->released) != 0;
}

void aoi__job_wait(aoi__job *job)
{
  for (;;) {
    uint32_t seen = aoi__bell_read(&job->bell);
    if (atomic_load(&job->left) == 0)
      break;
    aoi__bell_wait(&job->bell, seen);
  }
  /* the ringer is between its ring and its last touch for a moment */
  while (!aoi__job_finished(job))
    sched_yield();
}

/* ---- the queue ---------------------------------------------------------- */

void aoi__pool_push(aoi_pool *p, aoi__task *first, aoi__task *last,
                    uint32_t count, bool head)
{
  AOI__ASSERT(first != NULL && last != NULL && count > 0);
  AOI__STRESS();
  pthread_mutex_lock(&p->mutex);
  if (p->head == NULL) {
    last->next = NULL;
    p->head = first;
    p->tail = last;
  } else if (head) {
    last->next = p->head;
    p->head = first;
  } else {
    last->next = NULL;
    p->tail->next = first;
    p->tail = last;
  }
  atomic_fetch_add(&p->queued, count);
  pthread_mutex_unlock(&p->mutex);
  aoi__bell_ring_some(&p->work, count); /* a thread a task, at most */
}

/* Takes a chunk from the head: a share of the queue small enough that
   every thread gets some, never more than 32 tasks, and a large task
   only alone. NULL when the queue is empty. */
static aoi__task *take(aoi_pool *p)
{
  if (atomic_load_explicit(&p->queued, memory_order_relaxed) == 0)
    return NULL;
  pthread_mutex_lock(&p->mutex);
  aoi__task *first = p->head;
  if (first == NULL) {
    pthread_mutex_unlock(&p->mutex);
    return NULL;
  }
  uint32_t queued = atomic_load_explicit(&p->queued, memory_order_relaxed);
  uint32_t want = queued / (2 * p->threads);
  want = want < 1 ? 1 : want > 32 ? 32 : want;
  aoi__task *last = first;
  uint32_t got = 1;
  if (!first->big)
    while (got < want && last->next != NULL && !last->next->big) {
      last = last->next;
      got++;
    }
  p->head = last->next;
  if (p->head == NULL)
    p->tail = NULL;
  last->next = NULL;
  atomic_fetch_sub(&p->queued, got);
  pthread_mutex_unlock(&p->mutex);
  return first;
}

/* The pool whose thread this is, if any (aoi__pool_spread). */
static _Thread_local aoi_pool *self_pool;

static void *pool_main(void *arg)
{
  aoi_pool *p = arg;
  self_pool = p;
  for (;;) {
    uint32_t seen = aoi__bell_read(&p->work);
    aoi__task *chain = take(p);
    if (chain == NULL) {
      if (atomic_load(&p->stop))
        break;
      aoi__bell_wait_for(&p->work, seen, p->idle_spin_ns);
      continue;
    }
    while (chain != NULL) {
      aoi__task *t = chain;
      chain = t->next; /* (run may push it again) */
      t->run(t);
    }
  }
  return NULL;
}

/* ---- spreading a host's work -------------------------------------------- */

/* One aoi__pool_spread: the parts handed out in order, `next` the first
   not yet taken. */
typedef struct spread {
  void (*fn)(void *context, unsigned part);
  void *context;
  unsigned parts;
  _Atomic unsigned next;
  aoi__job *job;
} spread;

typedef struct spread_helper {
  aoi__task task; /* first: the task is the helper */
  spread *spread;
} spread_helper;

/* Takes parts until none is left. */
static void spread_take(spread *s)
{
  for (;;) {
    unsigned part = atomic_fetch_add_explicit(&s->next, 1,
                                              memory_order_relaxed);
    if (part >= s->parts)
      return;
    s->fn(s->context, part);
  }
}

static void spread_task(aoi__task *t)
{
  spread *s = ((spread_helper *)t)->spread;
  spread_take(s);
  aoi__job_done(s->job); /* the last touch: s lives on its host's stack */
}

/* Unlinks from the pool's queue those of helper[0 .. count - 1] that no
   thread has taken yet (a helper is taken alone: big), and returns how
   many. */
static uint32_t take_back(aoi_pool *p, spread_helper *helper, unsigned count)
{
  uintptr_t from = (uintptr_t)&helper[0], to = (uintptr_t)&helper[count];
  uint32_t n = 0;
  pthread_mutex_lock(&p->mutex);
  aoi__task **link = &p->head, *last = NULL;
  while (*link != NULL && n < count) {
    aoi__task *t = *link;
    if ((uintptr_t)t >= from && (uintptr_t)t < to) {
      *link = t->next;
      n++;
    } else {
      last = t;
      link = &t->next;
    }
  }
  if (*link == NULL) /* (the walk reached the end: `last` is the tail) */
    p->tail = last;
  atomic_fetch_sub(&p->queued, n);
  pthread_mutex_unlock(&p->mutex);
  return n;
}

void aoi__pool_spread(aoi_pool *pool, aoi__job *job, unsigned helpers,
                      unsigned parts, void (*fn)(void *context, unsigned part),
                      void *context)
{
  spread s = {fn, context, parts, 0, job};
  if (helpers > AOI__SPREAD_HELPERS)
    helpers = AOI__SPREAD_HELPERS;
  if (helpers > parts - 1)
    helpers = parts > 0 ? parts - 1 : 0;
  if (self_pool == pool)
    helpers = 0;
  spread_helper helper[AOI__SPREAD_HELPERS];
  for (unsigned i = 0; i < helpers; i++) {
    helper[i].task = (aoi__task){i + 1 < helpers ? &helper[i + 1].task : NULL,
                                 spread_task, true};
    helper[i].spread = &s;
  }
  aoi__job_arm(job, helpers);
  if (helpers > 0)
    aoi__pool_push(pool, &helper[0].task, &helper[helpers - 1].task, helpers,
                   true);
  spread_take(&s);
  /* Every part is taken. The helpers still queued, whose threads have not
     woken, are taken back, so the host never waits for a wake-up; those
     that run touch s until they count themselves done. */
  if (helpers > 0)
    aoi__job_done_some(job, take_back(pool, helper, helpers));
  aoi__job_wait(job);
}

/* ---- lifecycle ---------------------------------------------------------- */

unsigned aoi__online_cores(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    return 1;
  return n > (long)AOI__MAX_THREADS ? AOI__MAX_THREADS : (unsigned)n;
}

void aoi_pool_config_default(aoi_pool_config *config)
{
  if (config == NULL)
    return;
  memset(config, 0, sizeof(*config));
}

static bool pool_config_valid(const aoi_pool_config *c)
{
  if (c->threads > AOI__MAX_THREADS)
    return false;
  const aoi_allocator *a = c->allocator;
  if (a != NULL && (a->alloc == NULL || a->realloc == NULL || a->free == NULL))
    return false;
#ifdef __linux__
  return c->pin_threads <= 1;
#else
  return c->pin_threads == 0;
#endif
}

#ifdef __linux__
/* Binds thread i to the i-th CPU, wrapping around, of those the calling
   thread may run on. */
static int pin_threads(aoi_pool *p)
{
  cpu_set_t allowed;
  if (pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) != 0)
    return AOI_ESYS;
  unsigned n = (unsigned)CPU_COUNT(&allowed);
  if (n == 0)
    return AOI_ESYS;
  for (unsigned i = 0; i < p->threads; i++) {
    unsigned skip = i % n; /* the (i mod n)-th CPU of the set */
    int cpu = 0;
    for (;; cpu++) {
      AOI__ASSERT(cpu < CPU_SETSIZE); /* the n-th is in the set */
      if (CPU_ISSET(cpu, &allowed) && skip-- == 0)
        break;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(p->thread[i], sizeof(one), &one) != 0)
      return AOI_ESYS;
  }
  return 0;
}
#endif

void aoi__pool_free(aoi_pool *p)
{
  atomic_store(&p->stop, 1);
  aoi__bell_ring(&p->work);
  for (unsigned i = 0; i < p->started; i++)
    pthread_join(p->thread[i], NULL);
  AOI__ASSERT(p->head == NULL); /* every world's tick was waited for */
  if (p->mutex_ready)
    pthread_mutex_destroy(&p->mutex);
  aoi__bell_destroy(&p->work);
  aoi_allocator a = p->allocator;
  if (p->thread != NULL)
    a.free(a.user, p->thread, sizeof(pthread_t) * p->threads);
  a.free(a.user, p, sizeof(*p));
}

int aoi__pool_create(const aoi_pool_config *config, aoi_pool **out)
{
  if (config == NULL || out == NULL || !pool_config_valid(config))
    return AOI_EINVAL;
  aoi_allocator a = aoi__malloc_hooks;
  if (config->allocator != NULL)
    a = *config->allocator;
  aoi_pool *p = a.alloc(a.user, sizeof(*p));
  if (p == NULL)
    return AOI_ENOMEM;
  memset(p, 0, sizeof(*p));
  p->allocator = a;
  p->threads = config->threads ? config->threads : aoi__online_cores();
  atomic_init(&p->queued, 0);
  atomic_init(&p->stop, 0);
  atomic_init(&p->worlds, 0);
  if (aoi__bell_init(&p->work) != 0) {
    a.free(a.user, p, sizeof(*p));
    return AOI_ESYS;
  }
  /* A spinner that shares a core with the thread it waits for only delays
     it: threads spin for work only where the host and each have a core. */
  bool own_cores = aoi__online_cores() > p->threads;
  p->idle_spin_ns = own_cores ? 20000 : 0;
  p->host_spin_ns = own_cores ? 20000 : 2000;
  int rc = AOI_ENOMEM;
  p->thread = a.alloc(a.user, sizeof(pthread_t) * p->threads);
  if (p->thread == NULL)
    goto fail;
  rc = AOI_ESYS;
  if (pthread_mutex_init(&p->mutex, NULL) != 0)
    goto fail;
  p->mutex_ready = true;
  for (unsigned i = 0; i < p->threads; i++) {
    if (pthread_create(&p->thread[i], NULL, pool_main, p) != 0)
      goto fail;
    p->started++;
  }
#ifdef __linux__
  if (config->pin_threads != 0 && (rc = pin_threads(p)) != 0)
    goto fail;
#endif
  *out = p;
  return 0;
fail:
  aoi__pool_free(p);
  return rc;
}

int aoi_pool_create(const aoi_pool_config *config, aoi_pool **out)
{
  return aoi__pool_create(config, out);
}

int aoi_pool_destroy(aoi_pool *pool)
{
  if (pool == NULL)
    return 0;
  if (atomic_load(&pool->worlds) != 0)
    return AOI_EBUSY;
  aoi__pool_free(pool);
  return 0;
}

unsigned aoi_pool_threads(const aoi_pool *pool)
{
  return pool == NULL ? 0 : pool->threads;
}
