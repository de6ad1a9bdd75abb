/*
 * support.c: what several tests share (see support.h).
 */
#include "support.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each block carries its size in a header, so that a free or realloc with
   another size than the block's is seen. */
typedef union block_header {
  size_t size;
  max_align_t align;
} block_header;

void counter_reset(counter *c)
{
  atomic_store(&c->live_bytes, 0);
  atomic_store(&c->live_blocks, 0);
  atomic_store(&c->peak_bytes, 0);
  atomic_store(&c->attempts, 0);
  atomic_store(&c->fail_from, 0);
  atomic_store(&c->fail_until, 0);
  atomic_store(&c->period, 0);
  atomic_store(&c->budget, 0);
  atomic_store(&c->injected, 0);
  atomic_store(&c->wrong_sizes, 0);
  atomic_store(&c->wrong_given, 0);
  atomic_store(&c->wrong_actual, 0);
}

void counter_arm(counter *c, long long n, long long span)
{
  long long from = atomic_load(&c->attempts) + n;
  atomic_store(&c->period, 0);
  atomic_store(&c->fail_until,
               span == COUNTER_ONWARD ? LLONG_MAX : from + span);
  atomic_store(&c->fail_from, from);
}

void counter_arm_every(counter *c, long long n, long long period)
{
  long long from = atomic_load(&c->attempts) + n;
  atomic_store(&c->fail_until, LLONG_MAX);
  atomic_store(&c->period, period);
  atomic_store(&c->fail_from, from);
}

void counter_disarm(counter *c)
{
  atomic_store(&c->fail_from, 0);
}

/* Whether an allocation that adds `grow` live bytes would break the
   budget. (Threads may race past it by a block or two: a budget is a
   ceiling for tests that need one, not an exact one.) */
static bool over_budget(counter *c, long long grow)
{
  long long budget = atomic_load(&c->budget);
  if (budget <= 0 || atomic_load(&c->live_bytes) + grow <= budget)
    return false;
  atomic_fetch_add(&c->injected, 1);
  return true;
}

static bool counter_fails(counter *c)
{
  long long n = atomic_fetch_add(&c->attempts, 1) + 1;
  long long from = atomic_load(&c->fail_from);
  if (from == 0 || n < from || n >= atomic_load(&c->fail_until))
    return false;
  long long period = atomic_load(&c->period);
  if (period > 0 && (n - from) % period != 0)
    return false;
  atomic_fetch_add(&c->injected, 1);
  return true;
}

static void counter_wrong_size(counter *c, size_t given, size_t actual)
{
  atomic_fetch_add(&c->wrong_sizes, 1);
  atomic_store(&c->wrong_given, (long long)given);
  atomic_store(&c->wrong_actual, (long long)actual);
}

static void add_live(counter *c, long long delta)
{
  long long now = atomic_fetch_add(&c->live_bytes, delta) + delta;
  long long peak = atomic_load(&c->peak_bytes);
  while (now > peak &&
         !atomic_compare_exchange_weak(&c->peak_bytes, &peak, now))
    ;
}

void *counting_alloc(void *user, size_t size)
{
  counter *c = user;
  if (counter_fails(c) || over_budget(c, (long long)size))
    return NULL;
  block_header *b = malloc(sizeof(block_header) + size);
  if (b == NULL)
    return NULL;
  b->size = size;
  add_live(c, (long long)size);
  atomic_fetch_add(&c->live_blocks, 1);
  return b + 1;
}

void *counting_realloc(void *user, void *ptr, size_t old_size,
                       size_t new_size)
{
  counter *c = user;
  block_header *old = (block_header *)ptr - 1;
  if (counter_fails(c) ||
      over_budget(c, (long long)new_size - (long long)old->size))
    return NULL; /* the old block stays as it was */
  if (old->size != old_size)
    counter_wrong_size(c, old_size, old->size);
  size_t had = old->size;
  block_header *b = realloc(old, sizeof(block_header) + new_size);
  if (b == NULL)
    return NULL;
  b->size = new_size;
  add_live(c, (long long)new_size - (long long)had);
  return b + 1;
}

void counting_free(void *user, void *ptr, size_t size)
{
  counter *c = user;
  if (ptr == NULL)
    return;
  block_header *b = (block_header *)ptr - 1;
  if (b->size != size)
    counter_wrong_size(c, size, b->size);
  atomic_fetch_sub(&c->live_bytes, (long long)b->size);
  atomic_fetch_sub(&c->live_blocks, 1);
  free(b);
}

aoi_allocator counting_allocator(counter *c)
{
  aoi_allocator a = {counting_alloc, counting_realloc, counting_free, c};
  return a;
}

void records_push(records *r, uint64_t watcher, const aoi_event *e)
{
  if (r->count == r->capacity) {
    size_t capacity = r->capacity ? r->capacity * 2 : 64;
    record *items = realloc(r->items, sizeof(record) * capacity);
    if (items == NULL) {
      fputs("records_push: out of memory\n", stderr);
      abort();
    }
    r->items = items;
    r->capacity = capacity;
  }
  r->items[r->count].watcher = watcher;
  r->items[r->count].event = *e;
  r->count++;
}

void records_free(records *r)
{
  free(r->items);
  memset(r, 0, sizeof(*r));
}
