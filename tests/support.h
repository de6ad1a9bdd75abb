/*
 * support.h: what several tests share.
 *
 * A counting, failing allocator, for aoi_config's allocator hooks. It counts live bytes and blocks (and their peak), checks
 * that every free and realloc names the block's true size, and fails the
 * allocations it is armed for, and those that would take the live bytes
 * above its budget when it has one. The hooks are called from every thread, so
 * all its state is atomic; only the test's main thread reads it.
 */
#ifndef AOI_TESTS_SUPPORT_H
#define AOI_TESTS_SUPPORT_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

/* The tag the tests give entity `id`: not the id, so that a tag handed
   back for the wrong entity shows. */
static inline uint64_t test_tag(uint64_t id)
{
  return (id ^ 0x5bd1e995u) * 0x9e3779b97f4a7c15u;
}

/* aoi_add from the fields one by one, the tag being test_tag(id). */
static inline int test_add(aoi_world *w, uint64_t id, float x, float y,
                           float radius, unsigned flags, uint32_t layers,
                           uint32_t interest)
{
  return aoi_add(w, &(aoi_entity){.id = id,
                                  .tag = test_tag(id),
                                  .x = x,
                                  .y = y,
                                  .radius = radius,
                                  .flags = flags,
                                  .layers = layers,
                                  .interest = interest});
}

#define COUNTER_ONWARD LLONG_MAX /* a span: fail every attempt from n on */

typedef struct counter {
  atomic_llong live_bytes, live_blocks;
  atomic_llong peak_bytes;              /* since it was last reset */
  atomic_llong attempts;                /* alloc and realloc calls */
  atomic_llong fail_from, fail_until;   /* attempts in [from, until) fail */
  atomic_llong period;                  /* or, if > 0, every period-th */
  atomic_llong budget;                  /* if > 0, the most live bytes */
  atomic_llong injected;                /* failures returned */
  atomic_llong wrong_sizes;             /* frees and reallocs of a wrong size */
  atomic_llong wrong_given, wrong_actual; /* the last one, for the message */
} counter;

void counter_reset(counter *c);
/* Fails `span` attempts (or COUNTER_ONWARD: all) from the n-th from now. */
void counter_arm(counter *c, long long n, long long span);
/* Fails the n-th attempt from now and every period-th after it, until
   disarmed. */
void counter_arm_every(counter *c, long long n, long long period);
void counter_disarm(counter *c);
/* The hooks, with c as their user pointer. */
aoi_allocator counting_allocator(counter *c);
void *counting_alloc(void *user, size_t size);
void *counting_realloc(void *user, void *ptr, size_t old_size,
                       size_t new_size);
void counting_free(void *user, void *ptr, size_t size);

/* A log of events as the host drained them: (watcher, event) pairs. */
typedef struct record {
  uint64_t watcher;
  aoi_event event;
} record;

typedef struct records {
  record *items;
  size_t count, capacity;
} records;

/* Appends one; aborts when memory runs out. */
void records_push(records *r, uint64_t watcher, const aoi_event *e);
void records_free(records *r);

#endif
