/*
 * support.c: what several tests share (see support.h).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include "support.h"

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *plain_alloc(void *user, size_t size)
{
  (void)user;
  return malloc(size);
}

void *plain_realloc(void *user, void *ptr, size_t old_size, size_t new_size)
{
  (void)user;
  (void)old_size;
  return realloc(ptr, new_size);
}

void plain_free(void *user, void *ptr, size_t size)
{
  (void)user;
  (void)size;
  free(ptr);
}

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

size_t slot_events_expand(const aoi_slot_events *e, aoi_event *out)
{
  size_t n = (size_t)e->leaves + e->enters + e->moves;
  for (size_t i = 0; i < n; i++) {
    const aoi_slot *slot = &e->table[e->slots[i]];
    aoi_event_kind kind = i < e->leaves                ? AOI_LEAVE
                          : i < e->leaves + e->enters ? AOI_ENTER
                                                      : AOI_MOVE;
    bool leave = kind == AOI_LEAVE;
    out[i] = (aoi_event){slot->id, e->tags[e->slots[i]], leave ? 0 : slot->x,
                         leave ? 0 : slot->y, kind, e->tick};
  }
  return n;
}

bool record_equal(const record *a, const record *b)
{
  return a->watcher == b->watcher && a->event.id == b->event.id &&
         a->event.kind == b->event.kind && a->event.tick == b->event.tick &&
         memcmp(&a->event.x, &b->event.x, sizeof(float)) == 0 &&
         memcmp(&a->event.y, &b->event.y, sizeof(float)) == 0;
}

const char *kind_name(uint32_t kind)
{
  switch (kind) {
  case AOI_LEAVE:
    return "leave";
  case AOI_ENTER:
    return "enter";
  case AOI_MOVE:
    return "move";
  default:
    return "(bad kind)";
  }
}

uint64_t rng_next(uint64_t *state)
{
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

size_t rng_below(uint64_t *state, size_t n)
{
  return n ? (size_t)(rng_next(state) % n) : 0;
}

uint64_t xorshift64(uint64_t *state)
{
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

int compare_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

void trace_line(trace_text *t, const char *format, ...)
{
  char line[256];
  va_list args;

  va_start(args, format);
  int n = vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (n < 0)
    return;
  size_t length = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (t->length + length + 2 > t->capacity) {
    size_t capacity = 2 * (t->capacity + length + 2);
    char *grown = realloc(t->text, capacity);
    if (grown == NULL) {
      fputs("trace_line: out of memory\n", stderr);
      abort();
    }
    t->text = grown;
    t->capacity = capacity;
  }
  memcpy(t->text + t->length, line, length);
  t->length += length;
  t->text[t->length++] = '\n';
  t->text[t->length] = '\0';
}

void trace_text_free(trace_text *t)
{
  free(t->text);
  memset(t, 0, sizeof(*t));
}

void trace_config(trace_text *t, const aoi_config *c)
{
  trace_line(t, "world %.9g %.9g %.9g %.9g", (double)c->min_x,
             (double)c->min_y, (double)c->max_x, (double)c->max_y);
  trace_line(t, "max-radius %.9g", (double)c->max_radius);
  trace_line(t, "hysteresis %.9g", (double)c->hysteresis);
  trace_line(t, "moves %s", c->move_events ? "on" : "off");
  if (c->shape == AOI_SHAPE_CELLS)
    trace_line(t, "shape cells %.9g", (double)c->cell_size);
  else
    trace_line(t, "shape %s",
               c->shape == AOI_SHAPE_CIRCLE ? "circle" : "square");
  for (unsigned i = 0; i < c->move_band_count; i++)
    trace_line(t, "move-every %.9g %" PRIu32,
               (double)c->move_bands[i].distance, c->move_bands[i].period);
}

const char *flags_word(unsigned flags)
{
  return flags == AOI_WATCHER                  ? "W"
         : flags == AOI_MARKER                 ? "M"
         : flags == (AOI_WATCHER | AOI_MARKER) ? "WM"
                                               : "X";
}

/* ---- this process's threads --------------------------------------------- */

unsigned test_threads(void)
{
  DIR *d = opendir("/proc/self/task");
  if (d == NULL)
    return 0;
  unsigned n = 0;
  struct dirent *t;
  while ((t = readdir(d)) != NULL)
    n += t->d_name[0] != '.';
  closedir(d);
  return n;
}

unsigned test_threads_settled(void)
{
  unsigned n = test_threads();
  for (int i = 0; i < 100; i++) {
    nanosleep(&(struct timespec){0, 10000000}, NULL);
    unsigned again = test_threads();
    if (again == n)
      break;
    n = again;
  }
  return n;
}

static void *no_work(void *arg)
{
  return arg;
}

unsigned test_threads_at_rest(void)
{
  pthread_t t;
  if (pthread_create(&t, NULL, no_work, NULL) != 0 ||
      pthread_join(t, NULL) != 0)
    abort();
  return test_threads_settled();
}

unsigned test_threads_become(unsigned want)
{
  unsigned n = test_threads();
  for (int i = 0; i < 1000 && n != want; i++) {
    nanosleep(&(struct timespec){0, 1000000}, NULL);
    n = test_threads();
  }
  return n;
}
