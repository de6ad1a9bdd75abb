/*
 * test_oom.c: the out-of-memory group of "Never lose an event". A counting
 * allocator fails the n-th allocation (or, in the "onward" runs, every
 * allocation from the n-th until the failing call returns), for every n from
 * 1 to the number of allocations a step makes when nothing fails, through
 * world creation, adds that grow every host table, operations that grow a
 * shard's op queue, a flood of moves that folds into a few records, ticks
 * (plain, with many handoffs and
 * teleports, with ghosts growing, with outboxes growing because nobody
 * drained, the first tick of many new watchers, an id removed and respawned
 * around a failed tick; through aoi_tick and aoi_tick_begin/end by turns),
 * and the queries and aoi_pending, on several layouts of threads x shards.
 *
 * After each failure: the call must return exactly AOI_ENOMEM (calls that
 * fail validation their own code, allocating nothing), and write no
 * out-parameter; aoi__world_valid must hold; a failed operation is retried
 * and a tick that did not start is ticked again. A call may absorb a failed
 * allocation it can do without (an optional shrink) only if the run then
 * ends exactly as the reference's. The world then runs more ticks and must
 * converge on a reference world that never failed: the same stats, views,
 * watchers and query answers, and the same client picture (every drained
 * event applied to a per-watcher set: an enter must be new, a leave or move
 * must find its entity, and each entry remembers which incarnation of its id
 * it shows, so that a leave and an enter collapsed into a move is seen).
 * Each live watcher's picture must also equal its own view, at current
 * positions and incarnations. When no tick degraded, the drained events
 * must equal the reference's byte for byte. With hysteresis, where views
 * depend on their history, the worlds are held to the visibility bounds
 * instead of the reference's views. Finally the world is destroyed: every
 * byte it allocated must be freed, with the sizes given to free and realloc
 * matching what was allocated (and LeakSanitizer or valgrind see the rest).
 *
 * Sampling: steps of at most 64 allocations are failed at every n. Larger
 * steps are failed at the first 16, the last 4, and about 32 more spread
 * evenly. AOI_OOM_STRIDE=k instead fails every k-th allocation of every step
 * (plus the first and last); AOI_OOM_STRIDE=1 is exhaustive. AOI_OOM_ONLY
 * names the tests to run (a cmocka filter); AOI_TEST_VERBOSE=1 prints what
 * each scenario met.
 *
 * One call at a time (the tests named *_out_of_memory, at the end): every
 * allocation of aoi_create, of the queries and aoi_pending, of each of 400
 * operations, of a tick of those operations and of a tick that moves the
 * shard cuts is failed in turn, each n (no sampling), on worlds over
 * api_support.h's bounds: the call returns AOI_ENOMEM and writes nothing,
 * or (a tick) keeps aoi.h's promise; the world then ends as one that never
 * failed, what each client was told included, and frees every byte.
 * Pools too: every allocation of aoi_pool_create (no thread left running),
 * of aoi_create of a world on a pool or on the caller (the pool counts no
 * world: aoi_pool_destroy succeeds), and of one world's tick inside
 * aoi_tick_many or its halves, beside a world on the same pool and one on
 * the caller, which tick exactly as their references.
 *
 * Only this thread calls cmocka's asserts; the allocator hooks, which the
 * workers call too, only count with atomics.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <dirent.h>
#endif

#include "aoi.h"
#include "api_support.h"
#include "support.h"
#include "internal.h" /* aoi__world_valid */

#define MAX_ID 2048u /* every scenario's ids are below this */
#define ONWARD COUNTER_ONWARD /* a span: fail every allocation from n on */
#define EXHAUSTIVE_UP_TO 64
#define SAMPLES 32

/* Every layout: api_support.h's `layouts`. For the heavier steps: each
   thread count and each shard count once. */
static const layout spread_layouts[] = {{1, 1}, {1, 8}, {2, 3}, {4, 1}, {4, 8}};
/* For the "onward" reruns. */
static const layout few_layouts[] = {{1, 1}, {2, 3}, {4, 8}};

/* Names the run that a failure message comes from. */
static char where[256];
/* AOI_OOM_STRIDE; 0 = the default sampling. */
static long long stride_env;

/* ---- sampling ----------------------------------------------------------- */

/* Which n to fail, of `needed`, on the layout of index `li`. */
static bool sampled(long long n, long long needed, size_t li)
{
  if (n == 1 || n == needed || stride_env == 1)
    return true;
  if (stride_env > 1)
    return (n + (long long)li) % stride_env == 0;
  if (needed <= EXHAUSTIVE_UP_TO || n <= 16 || n > needed - 4)
    return true;
  long long stride = (needed + SAMPLES - 1) / SAMPLES;
  return (n + (long long)li) % stride == 0;
}

/* ---- deterministic positions -------------------------------------------- */

static uint64_t mix(uint64_t a, uint64_t b)
{
  uint64_t z = a * UINT64_C(0x9e3779b97f4a7c15) +
               b * UINT64_C(0xbf58476d1ce4e5b9) + UINT64_C(0x94d049bb133111eb);
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* A value in [lo, hi) on a 1/64 grid, from (id, salt). */
static float pick(uint64_t id, uint64_t salt, float lo, float hi)
{
  uint64_t steps = (uint64_t)((hi - lo) * 64);
  return lo + (float)(mix(id, salt) % steps) / 64.0f;
}

/* ---- events and the client picture (records: support.h) ----------------- */

/* One entity in a watcher's picture: where it was last told to be, and the
   tick that added the incarnation of the id it shows. */
typedef struct seen {
  uint64_t id, born;
  float x, y;
} seen;

typedef struct seen_list {
  seen *items;
  uint32_t count, capacity;
} seen_list;

/* The last ticks that added each id (a tiny ring, newest last). */
#define BORN_HISTORY 4
typedef struct born_list {
  uint64_t tick[BORN_HISTORY];
  unsigned count;
} born_list;

/* ---- a world and what its host knows ------------------------------------ */

typedef struct side {
  aoi_world *w;
  counter *c;      /* NULL: the reference, which never fails */
  counter counter; /* c, when counting: it must outlive the world */
  uint64_t tick;   /* ticks completed */
  bool recording;  /* drained events go to `log` */
  bool split;      /* ticks through aoi_tick_begin / poll / end */
  records log;
  unsigned flags[MAX_ID]; /* 0 = not live */
  float x[MAX_ID], y[MAX_ID], radius[MAX_ID];
  uint32_t layers[MAX_ID], interest[MAX_ID];
  float hysteresis;
  born_list born[MAX_ID];
  seen_list picture[MAX_ID]; /* by watcher */
  /* AOI_ENOMEM returns: all of them, ticks that did not start, ticks that
     did but degraded, queries and aoi_pending */
  int enomem, not_started, degraded, query_failures;
  int absorbed; /* calls that succeeded although an allocation failed */
  int retries;  /* AOI_ENOMEM returns: a bound, for periodic failures */
} side;

/* The sides open now, so that a test that fails half-way still destroys its
   worlds (in its teardown) and LeakSanitizer sees only real leaks. */
static side *open_sides[4];

static side *side_open(layout l, bool counting, float hysteresis)
{
  side *s = calloc(1, sizeof(*s));
  assert_non_null(s);
  size_t slot = 0;
  while (slot < COUNT_OF(open_sides) && open_sides[slot] != NULL)
    slot++;
  assert_true(slot < COUNT_OF(open_sides));
  open_sides[slot] = s;
  counter *c = NULL;
  if (counting) {
    c = &s->counter;
    counter_reset(c);
  }
  s->c = c;
  s->hysteresis = hysteresis;
  aoi_allocator hooks = {counting_alloc, counting_realloc, counting_free, c};
  aoi_config config;
  aoi_config_default(&config);
  config.threads = l.threads;
  config.shards = l.shards;
  config.max_x = 1000;
  config.max_y = 1000;
  config.max_radius = 2000; /* queries reach as far as 2000 */
  config.hysteresis = hysteresis;
  config.allocator = c != NULL ? &hooks : NULL;
  int rc = aoi_create(&config, &s->w);
  if (rc != 0)
    fail_msg("%s: aoi_create: %s", where, aoi_strerror(rc));
  return s;
}

static void side_free(side *s)
{
  for (size_t i = 0; i < COUNT_OF(open_sides); i++)
    if (open_sides[i] == s)
      open_sides[i] = NULL;
  aoi_destroy(s->w);
  for (unsigned i = 0; i < MAX_ID; i++)
    free(s->picture[i].items);
  records_free(&s->log);
  free(s);
}

/* Destroys the world, which must give back every byte it allocated. */
static void side_close(side *s)
{
  aoi_destroy(s->w);
  s->w = NULL;
  if (s->c != NULL)
    expect_all_freed(s->c, where);
  side_free(s);
}

static int close_open_sides(void **state)
{
  (void)state;
  for (size_t i = 0; i < COUNT_OF(open_sides); i++)
    if (open_sides[i] != NULL)
      side_free(open_sides[i]);
  return 0;
}

static long long injected(const side *s)
{
  return s->c != NULL ? atomic_load(&s->c->injected) : 0;
}

static long long attempts(const side *s)
{
  return s->c != NULL ? atomic_load(&s->c->attempts) : 0;
}

/* Checks a call's result against the failures injected since `before`:
   AOI_ENOMEM needs a failed allocation, and a failed allocation makes the
   call return AOI_ENOMEM, unless the call could do without it (an optional
   shrink): it is then "absorbed", and the run must end exactly as the
   reference did. On AOI_ENOMEM the world must be consistent; memory then
   comes back and this returns true (the caller retries). */
static bool failed_oom(side *s, const char *call, int rc, long long before)
{
  long long now = injected(s);
  if (now > before && rc != AOI_ENOMEM) {
    if (rc != 0)
      fail_msg("%s: an allocation failed inside %s, which returned %d (%s)",
               where, call, rc, aoi_strerror(rc));
    s->absorbed++;
  }
  if (rc != AOI_ENOMEM)
    return false;
  if (now == before)
    fail_msg("%s: %s returned AOI_ENOMEM, but no allocation failed", where,
             call);
  s->enomem++;
  if (atomic_load(&s->c->period) == 0)
    counter_disarm(s->c);
  if (++s->retries > 10000)
    fail_msg("%s: %s keeps failing", where, call);
  if (!aoi__world_valid(s->w))
    fail_msg("%s: the world is inconsistent after %s failed", where, call);
  return true;
}

/* Whether `id` is live, as aoi_view tells without writing anything. */
static bool is_live(side *s, uint64_t id)
{
  size_t n = 777;
  int rc = aoi_view(s->w, id, NULL, 0, &n);
  if (rc != 0 && rc != AOI_ENOENT)
    fail_msg("%s: aoi_view(%llu): %s", where, (unsigned long long)id,
             aoi_strerror(rc));
  return rc == 0;
}

/* ---- operations, each retried after AOI_ENOMEM -------------------------- */

static void s_add(side *s, uint64_t id, float x, float y, float radius,
                  unsigned flags, uint32_t layers, uint32_t interest)
{
  assert_true(id < MAX_ID && s->flags[id] == 0);
  for (;;) {
    long long before = injected(s);
    int rc = test_add(s->w, id, x, y, radius, flags, layers, interest);
    if (failed_oom(s, "aoi_add", rc, before)) {
      if (is_live(s, id))
        fail_msg("%s: test_add(%llu) failed, yet the id is live", where,
                 (unsigned long long)id);
      continue;
    }
    if (rc != 0)
      fail_msg("%s: test_add(%llu): %s", where, (unsigned long long)id,
               aoi_strerror(rc));
    break;
  }
  s->flags[id] = flags;
  s->x[id] = x;
  s->y[id] = y;
  s->radius[id] = radius;
  s->layers[id] = layers;
  s->interest[id] = interest;
  born_list *b = &s->born[id];
  if (b->count == BORN_HISTORY) {
    memmove(b->tick, b->tick + 1, sizeof(uint64_t) * (BORN_HISTORY - 1));
    b->count--;
  }
  b->tick[b->count++] = s->tick + 1;
}

static void s_move(side *s, uint64_t id, float x, float y)
{
  assert_true(id < MAX_ID && s->flags[id] != 0);
  for (;;) {
    long long before = injected(s);
    int rc = aoi_move(s->w, id, x, y);
    if (failed_oom(s, "aoi_move", rc, before))
      continue;
    if (rc != 0)
      fail_msg("%s: aoi_move(%llu): %s", where, (unsigned long long)id,
               aoi_strerror(rc));
    break;
  }
  s->x[id] = x;
  s->y[id] = y;
}

static void s_radius(side *s, uint64_t id, float radius)
{
  assert_true(id < MAX_ID && s->flags[id] != 0);
  for (;;) {
    long long before = injected(s);
    int rc = aoi_set_radius(s->w, id, radius);
    if (failed_oom(s, "aoi_set_radius", rc, before))
      continue;
    if (rc != 0)
      fail_msg("%s: aoi_set_radius(%llu): %s", where, (unsigned long long)id,
               aoi_strerror(rc));
    break;
  }
  s->radius[id] = radius;
}

static void s_layers(side *s, uint64_t id, uint32_t layers, uint32_t interest)
{
  assert_true(id < MAX_ID && s->flags[id] != 0);
  for (;;) {
    long long before = injected(s);
    int rc = aoi_set_layers(s->w, id, layers, interest);
    if (failed_oom(s, "aoi_set_layers", rc, before))
      continue;
    if (rc != 0)
      fail_msg("%s: aoi_set_layers(%llu): %s", where, (unsigned long long)id,
               aoi_strerror(rc));
    break;
  }
  s->layers[id] = layers;
  s->interest[id] = interest;
}

static void s_remove(side *s, uint64_t id)
{
  assert_true(id < MAX_ID && s->flags[id] != 0);
  for (;;) {
    long long before = injected(s);
    int rc = aoi_remove(s->w, id);
    if (failed_oom(s, "aoi_remove", rc, before)) {
      if (!is_live(s, id))
        fail_msg("%s: aoi_remove(%llu) failed, yet the id is gone", where,
                 (unsigned long long)id);
      continue;
    }
    if (rc != 0)
      fail_msg("%s: aoi_remove(%llu): %s", where, (unsigned long long)id,
               aoi_strerror(rc));
    break;
  }
  /* A removed watcher's client is gone; its undrained events with it. */
  if (s->flags[id] & AOI_WATCHER)
    s->picture[id].count = 0;
  s->flags[id] = 0;
}

/* A call that must fail validation with `want`, allocating nothing, even
   while allocations fail. */
static void expect_code(side *s, const char *call, int rc, int want,
                        long long attempts_before)
{
  if (rc != want)
    fail_msg("%s: %s returned %d (%s), %d (%s) expected", where, call, rc,
             aoi_strerror(rc), want, aoi_strerror(want));
  if (attempts(s) != attempts_before)
    fail_msg("%s: %s allocated", where, call);
}

/* Operations that fail validation: none may allocate or change anything. */
static void s_invalid_ops(side *s, uint64_t live, uint64_t dead)
{
  long long a = attempts(s);
  expect_code(s, "aoi_add of a live id",
              test_add(s->w, live, 1, 1, 1, WM, ALL, ALL), AOI_EEXIST, a);
  expect_code(s, "aoi_add with no flags",
              test_add(s->w, dead, 1, 1, 1, 0, ALL, ALL), AOI_EFLAGS, a);
  expect_code(s, "aoi_add at NaN", test_add(s->w, dead, NAN, 1, 1, WM, ALL, ALL),
              AOI_ECOORD, a);
  expect_code(s, "aoi_add beyond max_radius",
              test_add(s->w, dead, 1, 1, 2001, WM, ALL, ALL), AOI_ERADIUS, a);
  expect_code(s, "aoi_move of a dead id", aoi_move(s->w, dead, 1, 1),
              AOI_ENOENT, a);
  expect_code(s, "aoi_set_radius of a dead id", aoi_set_radius(s->w, dead, 1),
              AOI_ENOENT, a);
  expect_code(s, "aoi_set_radius beyond max_radius",
              aoi_set_radius(s->w, live, 2500), AOI_ERADIUS, a);
  expect_code(s, "aoi_set_layers of a dead id",
              aoi_set_layers(s->w, dead, 1, 1), AOI_ENOENT, a);
  expect_code(s, "aoi_remove of a dead id", aoi_remove(s->w, dead), AOI_ENOENT,
              a);
  expect_code(s, "aoi_move to infinity", aoi_move(s->w, live, INFINITY, 1),
              AOI_ECOORD, a);
}

/* ---- ticks, drains and queries ------------------------------------------ */

static void s_tick(side *s)
{
  for (;;) {
    long long before = injected(s);
    const char *call = "aoi_tick";
    int rc;
    if (s->split) {
      call = "aoi_tick_begin";
      rc = aoi_tick_begin(s->w);
      if (rc == 0) {
        int done;
        for (int polls = 0; (done = aoi_tick_poll(s->w)) == 0 && polls < 4;
             polls++)
          sched_yield();
        if (done != 0 && done != 1)
          fail_msg("%s: aoi_tick_poll returned %d", where, done);
        call = "aoi_tick_end";
        rc = aoi_tick_end(s->w);
      }
    } else {
      rc = aoi_tick(s->w);
    }
    aoi_stats st;
    assert_int_equal(aoi_world_stats(s->w, &st), 0);
    if (failed_oom(s, call, rc, before)) {
      if (st.tick == s->tick) {
        /* Not started: the operations stay queued for the next tick. */
        if (strcmp(call, "aoi_tick_end") == 0)
          fail_msg("%s: aoi_tick_end failed and the tick did not advance",
                   where);
        s->not_started++;
        continue;
      }
      if (st.tick != s->tick + 1 || strcmp(call, "aoi_tick_begin") == 0)
        fail_msg("%s: %s failed and the tick went from %llu to %llu", where,
                 call, (unsigned long long)s->tick,
                 (unsigned long long)st.tick);
      s->degraded++;
      s->tick = st.tick;
      return;
    }
    if (rc != 0)
      fail_msg("%s: %s: %s", where, call, aoi_strerror(rc));
    if (st.tick != s->tick + 1)
      fail_msg("%s: %s succeeded and the tick went from %llu to %llu", where,
               call, (unsigned long long)s->tick, (unsigned long long)st.tick);
    s->tick = st.tick;
    return;
  }
}

/* The tick that added the incarnation of `id` that was live at `tick`. */
static uint64_t born_at(const side *s, uint64_t id, uint64_t tick)
{
  const born_list *b = &s->born[id];
  for (unsigned i = b->count; i > 0; i--)
    if (b->tick[i - 1] <= tick)
      return b->tick[i - 1];
  fail_msg("%s: an event of tick %llu names %llu, not added by then", where,
           (unsigned long long)tick, (unsigned long long)id);
  return 0;
}

static uint32_t seen_find(const seen_list *l, uint64_t id, bool *found)
{
  uint32_t lo = 0, hi = l->count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (l->items[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = lo < l->count && l->items[lo].id == id;
  return lo;
}

static void picture_apply(side *s, uint64_t watcher, const aoi_event *e)
{
  if (e->id >= MAX_ID)
    fail_msg("%s: watcher %llu got an event for unknown id %llu", where,
             (unsigned long long)watcher, (unsigned long long)e->id);
  seen_list *l = &s->picture[watcher];
  bool have;
  uint32_t at = seen_find(l, e->id, &have);
  switch (e->kind) {
  case AOI_ENTER:
    if (have)
      fail_msg("%s: watcher %llu: enter %llu (tick %u), which it already "
               "sees",
               where, (unsigned long long)watcher, (unsigned long long)e->id,
               e->tick);
    if (l->count == l->capacity) {
      l->capacity = l->capacity ? l->capacity * 2 : 16;
      l->items = realloc(l->items, sizeof(seen) * l->capacity);
      assert_non_null(l->items);
    }
    memmove(l->items + at + 1, l->items + at, sizeof(seen) * (l->count - at));
    l->items[at] = (seen){e->id, born_at(s, e->id, e->tick), e->x, e->y};
    l->count++;
    break;
  case AOI_LEAVE:
    if (!have)
      fail_msg("%s: watcher %llu: leave %llu (tick %u), which it does not "
               "see",
               where, (unsigned long long)watcher, (unsigned long long)e->id,
               e->tick);
    memmove(l->items + at, l->items + at + 1,
            sizeof(seen) * (l->count - at - 1));
    l->count--;
    break;
  case AOI_MOVE:
    if (!have)
      fail_msg("%s: watcher %llu: move %llu (tick %u), which it does not see",
               where, (unsigned long long)watcher, (unsigned long long)e->id,
               e->tick);
    l->items[at].x = e->x;
    l->items[at].y = e->y;
    break;
  default:
    fail_msg("%s: watcher %llu: event of kind %u", where,
             (unsigned long long)watcher, e->kind);
  }
}

static const uint64_t sentinel_ids[1] = {SENTINEL};

/* Drains every pending watcher into the picture (and the log). */
static void s_drain(side *s)
{
  const uint64_t *ids;
  size_t n;
  for (;;) {
    ids = sentinel_ids;
    n = 777;
    long long before = injected(s);
    int rc = aoi_pending(s->w, &ids, &n);
    if (failed_oom(s, "aoi_pending", rc, before)) {
      if (ids != sentinel_ids || n != 777)
        fail_msg("%s: aoi_pending failed and wrote its out-parameters", where);
      s->query_failures++;
      continue;
    }
    if (rc != 0)
      fail_msg("%s: aoi_pending: %s", where, aoi_strerror(rc));
    break;
  }
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && ids[i - 1] >= ids[i])
      fail_msg("%s: aoi_pending is not ascending", where);
    if (ids[i] >= MAX_ID || !(s->flags[ids[i]] & AOI_WATCHER))
      fail_msg("%s: aoi_pending names %llu, not a live watcher", where,
               (unsigned long long)ids[i]);
    /* aoi_drain lays the last tick's events out in the outbox, which may
       need memory: a failure writes nothing and keeps every event. */
    static const aoi_event sentinel_event;
    const aoi_event *events;
    size_t count;
    int rc;
    for (;;) {
      events = &sentinel_event;
      count = 777;
      long long before = injected(s);
      rc = aoi_drain(s->w, ids[i], &events, &count);
      if (!failed_oom(s, "aoi_drain", rc, before))
        break;
      if (events != &sentinel_event || count != 777)
        fail_msg("%s: aoi_drain failed and wrote its out-parameters", where);
      s->query_failures++;
    }
    if (rc != 0)
      fail_msg("%s: aoi_drain(%llu): %s", where, (unsigned long long)ids[i],
               aoi_strerror(rc));
    if (count == 0)
      fail_msg("%s: pending watcher %llu had no events", where,
               (unsigned long long)ids[i]);
    for (size_t j = 0; j < count; j++) {
      if (events[j].tag != test_tag(events[j].id))
        fail_msg("%s: watcher %llu: an event of %llu with another's tag",
                 where, (unsigned long long)ids[i],
                 (unsigned long long)events[j].id);
      picture_apply(s, ids[i], &events[j]);
      if (s->recording)
        records_push(&s->log, ids[i], &events[j]);
    }
  }
}

typedef struct side_answer {
  uint64_t ids[MAX_ID];
  size_t count;
} side_answer;

static void answer_clear(side_answer *a)
{
  for (size_t i = 0; i < MAX_ID; i++)
    a->ids[i] = SENTINEL;
  a->count = 777;
}

static void expect_untouched(const side_answer *a, const char *call)
{
  if (a->count != 777)
    fail_msg("%s: %s failed and wrote its count", where, call);
  for (size_t i = 0; i < MAX_ID; i++)
    if (a->ids[i] != SENTINEL)
      fail_msg("%s: %s failed and wrote ids", where, call);
}

static void s_circle(side *s, float x, float y, float radius, uint32_t mask,
                     side_answer *a)
{
  for (;;) {
    answer_clear(a);
    long long before = injected(s);
    int rc =
        aoi_query_circle(s->w, x, y, radius, mask, a->ids, MAX_ID, &a->count);
    if (failed_oom(s, "aoi_query_circle", rc, before)) {
      expect_untouched(a, "aoi_query_circle");
      s->query_failures++;
      continue;
    }
    if (rc != 0)
      fail_msg("%s: aoi_query_circle: %s", where, aoi_strerror(rc));
    return;
  }
}

static int s_watchers_of(side *s, uint64_t id, side_answer *a)
{
  for (;;) {
    answer_clear(a);
    long long before = injected(s);
    int rc = aoi_watchers_of(s->w, id, a->ids, MAX_ID, &a->count);
    if (failed_oom(s, "aoi_watchers_of", rc, before)) {
      expect_untouched(a, "aoi_watchers_of");
      s->query_failures++;
      continue;
    }
    if (rc != 0 && rc != AOI_ENOENT)
      fail_msg("%s: aoi_watchers_of(%llu): %s", where, (unsigned long long)id,
               aoi_strerror(rc));
    return rc;
  }
}

/* aoi_view never allocates. */
static int s_view(side *s, uint64_t id, side_answer *a)
{
  answer_clear(a);
  long long before = attempts(s);
  int rc = aoi_view(s->w, id, a->ids, MAX_ID, &a->count);
  if (attempts(s) != before)
    fail_msg("%s: aoi_view allocated", where);
  if (rc != 0 && rc != AOI_ENOENT)
    fail_msg("%s: aoi_view(%llu): %s", where, (unsigned long long)id,
             aoi_strerror(rc));
  return rc;
}

/* ---- convergence -------------------------------------------------------- */

/* The same for both sides: drain what the step left, move some, tick
   twice. */
static void converge(side *s, uint64_t max_id)
{
  s_drain(s);
  for (uint64_t id = 1; id < max_id; id++)
    if (s->flags[id] != 0 && id % 5 == 0)
      s_move(s, id, s->x[id] + 3.25f, s->y[id] - 2.5f);
  s_tick(s);
  s_drain(s);
  s_tick(s);
  s_drain(s);
}

static void expect_same_ids(const side_answer *got,
                            const side_answer *want,
                            const char *what, uint64_t id)
{
  bool same = got->count == want->count;
  for (size_t i = 0; same && i < want->count && i < MAX_ID; i++)
    same = got->ids[i] == want->ids[i];
  if (same)
    return;
  print_message("%s of %llu: %zu ids, the reference %zu\n", what,
                (unsigned long long)id, got->count, want->count);
  for (size_t i = 0; i < got->count && i < MAX_ID; i++)
    if (i >= want->count || got->ids[i] != want->ids[i]) {
      print_message("  first difference at %zu: %llu, reference %llu\n", i,
                    (unsigned long long)got->ids[i],
                    i < want->count ? (unsigned long long)want->ids[i] : 0ull);
      break;
    }
  fail_msg("%s: %s of %llu differs from the reference", where, what,
           (unsigned long long)id);
}

static void expect_same_picture(const side *s, const side *ref)
{
  for (uint64_t w = 0; w < MAX_ID; w++) {
    const seen_list *g = &s->picture[w], *r = &ref->picture[w];
    for (uint32_t i = 0; i < g->count || i < r->count; i++) {
      const seen *a = i < g->count ? &g->items[i] : NULL;
      const seen *b = i < r->count ? &r->items[i] : NULL;
      if (a != NULL && b != NULL && a->id == b->id && a->born == b->born &&
          memcmp(&a->x, &b->x, sizeof(float)) == 0 &&
          memcmp(&a->y, &b->y, sizeof(float)) == 0)
        continue;
      if (a != NULL)
        print_message("watcher %llu sees %llu (added at tick %llu) at "
                      "(%.9g, %.9g)\n",
                      (unsigned long long)w, (unsigned long long)a->id,
                      (unsigned long long)a->born, (double)a->x, (double)a->y);
      if (b != NULL)
        print_message("the reference's %llu sees %llu (added at tick %llu) "
                      "at (%.9g, %.9g)\n",
                      (unsigned long long)w, (unsigned long long)b->id,
                      (unsigned long long)b->born, (double)b->x, (double)b->y);
      fail_msg("%s: watcher %llu's client picture differs from the "
               "reference's",
               where, (unsigned long long)w);
    }
  }
}

static void expect_same_log(const side *s, const side *ref)
{
  size_t n = s->log.count < ref->log.count ? s->log.count : ref->log.count;
  for (size_t i = 0; i <= n; i++) {
    if (i == n && s->log.count == ref->log.count)
      return;
    if (i < n && record_equal(&s->log.items[i], &ref->log.items[i]))
      continue;
    print_message("%zu events drained, the reference %zu; first "
                  "difference at %zu\n",
                  s->log.count, ref->log.count, i);
    for (int k = 0; k < 2; k++) {
      const records *r = k == 0 ? &s->log : &ref->log;
      if (i < r->count)
        print_message("  %s: %llu %s %llu %.9g %.9g tick %u\n",
                      k == 0 ? "got" : "reference",
                      (unsigned long long)r->items[i].watcher,
                      kind_name(r->items[i].event.kind),
                      (unsigned long long)r->items[i].event.id,
                      (double)r->items[i].event.x, (double)r->items[i].event.y,
                      r->items[i].event.tick);
    }
    fail_msg("%s: the drained events differ from the reference's", where);
  }
}

/* What every world must show after a successful tick, failures or not: each
   live watcher's client picture holds exactly its view, at the entities'
   current positions and in their current incarnations, and nobody else has
   a picture. */
static void expect_self_consistent(side *s, uint64_t max_id)
{
  static side_answer view;
  for (uint64_t w = 0; w < max_id; w++) {
    const seen_list *l = &s->picture[w];
    if (!(s->flags[w] & AOI_WATCHER)) {
      if (l->count != 0)
        fail_msg("%s: %llu is no live watcher, yet its client sees %u "
                 "entities",
                 where, (unsigned long long)w, l->count);
      continue;
    }
    if (s_view(s, w, &view) != 0)
      fail_msg("%s: aoi_view(%llu) of a live watcher failed", where,
               (unsigned long long)w);
    bool same = view.count == l->count;
    for (uint32_t i = 0; same && i < l->count; i++)
      same = view.ids[i] == l->items[i].id;
    if (!same)
      fail_msg("%s: watcher %llu's view holds %zu entities, its client "
               "picture %u",
               where, (unsigned long long)w, view.count, l->count);
    for (uint32_t i = 0; i < l->count; i++) {
      const seen *e = &l->items[i];
      const born_list *b = &s->born[e->id];
      if (s->flags[e->id] == 0 || e->x != s->x[e->id] || e->y != s->y[e->id] ||
          b->count == 0 || e->born != b->tick[b->count - 1])
        fail_msg("%s: watcher %llu's client sees %llu (added at tick %llu) "
                 "at (%.9g, %.9g); it is %s, added at tick %llu, at "
                 "(%.9g, %.9g)",
                 where, (unsigned long long)w, (unsigned long long)e->id,
                 (unsigned long long)e->born, (double)e->x, (double)e->y,
                 s->flags[e->id] ? "live" : "gone",
                 b->count ? (unsigned long long)b->tick[b->count - 1] : 0ull,
                 (double)s->x[e->id], (double)s->y[e->id]);
    }
  }
}

/* With hysteresis a view depends on its history, and a watcher that kept
   its view through a failed tick may rightly differ from one that never
   failed. What must hold either way (circles): every marker within the
   radius is seen, and nothing seen is beyond the radius plus hysteresis. */
static void expect_views_in_reach(side *s, uint64_t max_id)
{
  static side_answer view;
  static bool in_view[MAX_ID];
  for (uint64_t w = 1; w < max_id; w++) {
    if (!(s->flags[w] & AOI_WATCHER))
      continue;
    assert_int_equal(s_view(s, w, &view), 0);
    memset(in_view, 0, sizeof(in_view));
    for (size_t i = 0; i < view.count; i++)
      in_view[view.ids[i]] = true;
    double r = s->radius[w], outer = r + (double)s->hysteresis;
    for (uint64_t b = 1; b < max_id; b++) {
      bool can = b != w && (s->flags[b] & AOI_MARKER) &&
                 (s->interest[w] & s->layers[b]) != 0;
      double dx = (double)s->x[b] - (double)s->x[w];
      double dy = (double)s->y[b] - (double)s->y[w];
      double d2 = dx * dx + dy * dy;
      if (can && d2 <= r * r && !in_view[b])
        fail_msg("%s: watcher %llu does not see %llu, within its radius", where,
                 (unsigned long long)w, (unsigned long long)b);
      if (in_view[b] && (!can || d2 > outer * outer))
        fail_msg("%s: watcher %llu sees %llu, which it cannot", where,
                 (unsigned long long)w, (unsigned long long)b);
    }
  }
}

/* `s` (after its failure and convergence) against the reference. */
static void expect_converged(side *s, side *ref, uint64_t max_id)
{
  if (!aoi__world_valid(s->w))
    fail_msg("%s: the world is inconsistent after converging", where);
  aoi_stats a, b;
  assert_int_equal(aoi_world_stats(s->w, &a), 0);
  assert_int_equal(aoi_world_stats(ref->w, &b), 0);
  if (a.tick != b.tick || a.entities != b.entities || a.watchers != b.watchers)
    fail_msg("%s: stats (tick %llu, %llu entities, %llu watchers) differ "
             "from the reference's (%llu, %llu, %llu)",
             where, (unsigned long long)a.tick, (unsigned long long)a.entities,
             (unsigned long long)a.watchers, (unsigned long long)b.tick,
             (unsigned long long)b.entities, (unsigned long long)b.watchers);
  expect_self_consistent(s, max_id);
  if (s->hysteresis > 0) {
    expect_views_in_reach(s, max_id);
    return;
  }
  static side_answer got, want;
  for (uint64_t id = 0; id < max_id; id++) {
    int rg = s_view(s, id, &got), rw = s_view(ref, id, &want);
    if (rg != rw)
      fail_msg("%s: aoi_view(%llu) returned %d, the reference %d", where,
               (unsigned long long)id, rg, rw);
    if (rg == 0)
      expect_same_ids(&got, &want, "the view", id);
    rg = s_watchers_of(s, id, &got);
    rw = s_watchers_of(ref, id, &want);
    if (rg != rw)
      fail_msg("%s: aoi_watchers_of(%llu) returned %d, the reference %d", where,
               (unsigned long long)id, rg, rw);
    if (rg == 0)
      expect_same_ids(&got, &want, "the watchers", id);
  }
  for (int i = 0; i < 10; i++) {
    float x = i == 9 ? 500 : 100 + 400 * (float)(i % 3);
    float y = i == 9 ? 500 : 100 + 400 * (float)(i / 3);
    float r = i == 9 ? 2000 : 150;
    uint32_t mask = i % 2 ? ALL : 2;
    s_circle(s, x, y, r, mask, &got);
    s_circle(ref, x, y, r, mask, &want);
    expect_same_ids(&got, &want, "a circle query", (uint64_t)i);
  }
  expect_same_picture(s, ref);
  if (s->degraded == 0)
    expect_same_log(s, ref); /* failures retried or absorbed: exact */
}

/* ---- the driver --------------------------------------------------------- */

typedef struct scenario {
  const char *name;
  uint64_t max_id;        /* ids are below this */
  void (*setup)(side *s); /* brings a world to the step, never failing */
  void (*step)(side *s);  /* what is failed at every allocation */
  float hysteresis;
} scenario;

typedef struct tally {
  long long runs, op_failures, not_started, degraded, query_failures;
  long long absorbed, abandoned;
} tally;

/* How allocations fail in a run: from the n-th, `span` of them (ONWARD:
   all until the failing call returns); or, when `period` > 0, the n-th and
   every period-th after it until the step ends, for each n up to period. */
typedef struct failure_mode {
  long long span, period;
} failure_mode;

static const failure_mode once = {1, 0}, onward = {ONWARD, 0};

static void run_scenario(const scenario *sc, const layout *among,
                         size_t layout_count, failure_mode mode)
{
  const char *mode_name = mode.period > 0       ? " every k-th"
                          : mode.span == ONWARD ? " onward"
                                                : "";
  tally t = {0};
  clock_t cpu = clock();
  for (size_t li = 0; li < layout_count; li++) {
    layout l = among[li];
    snprintf(where, sizeof(where), "%s, threads %u shards %u, reference",
             sc->name, l.threads, l.shards);
    side *ref = side_open(l, false, sc->hysteresis);
    sc->setup(ref);
    ref->recording = true;
    sc->step(ref);
    converge(ref, sc->max_id);
    expect_self_consistent(ref, sc->max_id);
    if (sc->hysteresis > 0)
      expect_views_in_reach(ref, sc->max_id);

    /* How many allocations the step makes when none fails. */
    snprintf(where, sizeof(where), "%s, threads %u shards %u, no failure",
             sc->name, l.threads, l.shards);
    side *s = side_open(l, true, sc->hysteresis);
    sc->setup(s);
    s->recording = true;
    long long before = attempts(s);
    sc->step(s);
    long long needed = attempts(s) - before;
    converge(s, sc->max_id);
    expect_converged(s, ref, sc->max_id);
    side_close(s);
    if (needed == 0)
      fail_msg("%s: the step allocates nothing", where);

    long long last = mode.period > 0 ? mode.period : needed;
    for (long long n = 1; n <= last && n <= needed; n++) {
      if (mode.period == 0 && !sampled(n, needed, li))
        continue;
      if (mode.period > 0)
        snprintf(where, sizeof(where),
                 "%s, threads %u shards %u, allocation %lld and every "
                 "%lld-th after it, of %lld",
                 sc->name, l.threads, l.shards, n, mode.period, needed);
      else
        snprintf(where, sizeof(where),
                 "%s, threads %u shards %u, allocation %lld%s of %lld",
                 sc->name, l.threads, l.shards, n, mode_name, needed);
      s = side_open(l, true, sc->hysteresis);
      s->split = (n + (long long)li) % 2 == 1;
      sc->setup(s);
      s->recording = true;
      if (mode.period > 0)
        counter_arm_every(s->c, n, mode.period);
      else
        counter_arm(s->c, n, mode.span);
      sc->step(s);
      counter_disarm(s->c);
      if (injected(s) == 0)
        fail_msg("%s: the failing allocation was never reached", where);
      if ((mode.period == 0 && s->enomem > 1) || s->enomem + s->absorbed == 0)
        fail_msg("%s: %d calls returned AOI_ENOMEM and %d absorbed a "
                 "failure; 1 expected",
                 where, s->enomem, s->absorbed);
      if (!aoi__world_valid(s->w))
        fail_msg("%s: the world is inconsistent after the step", where);
      t.runs++;
      t.not_started += s->not_started;
      t.degraded += s->degraded;
      t.query_failures += s->query_failures;
      t.absorbed += s->absorbed;
      t.op_failures +=
          s->enomem - s->not_started - s->degraded - s->query_failures;
      /* Now and then the host gives up on the world right there. */
      if (mode.period == 0 && mix((uint64_t)n, li) % 5 == 0) {
        t.abandoned++;
        side_close(s);
        continue;
      }
      converge(s, sc->max_id);
      expect_converged(s, ref, sc->max_id);
      side_close(s);
    }
    side_close(ref);
  }
  if (getenv("AOI_TEST_VERBOSE") != NULL)
    fprintf(stderr,
            "%s%s: %lld runs (%lld abandoned): %lld operations, %lld ticks "
            "not started, %lld degraded, %lld queries failed, %lld "
            "absorbed; %.1f s of CPU\n",
            sc->name, mode_name, t.runs, t.abandoned, t.op_failures,
            t.not_started, t.degraded, t.query_failures, t.absorbed,
            (double)(clock() - cpu) / CLOCKS_PER_SEC);
}

/* ---- world creation ----------------------------------------------------- */

static void create_fails_cleanly(layout l, long long span, size_t li)
{
  counter c;
  counter_reset(&c);
  aoi_allocator hooks = {counting_alloc, counting_realloc, counting_free, &c};
  aoi_config config;
  aoi_config_default(&config);
  config.threads = l.threads;
  config.shards = l.shards;
  config.allocator = &hooks;
  snprintf(where, sizeof(where), "aoi_create, threads %u shards %u", l.threads,
           l.shards);
  aoi_world *w = NULL;
  assert_int_equal(aoi_create(&config, &w), 0);
  long long needed = atomic_load(&c.attempts);
  aoi_destroy(w);
  expect_all_freed(&c, where);
  assert_true(needed > 0);
  for (long long n = 1; n <= needed; n++) {
    if (!sampled(n, needed, li))
      continue;
    snprintf(where, sizeof(where),
             "aoi_create, threads %u shards %u, allocation %lld%s of %lld",
             l.threads, l.shards, n, span == ONWARD ? " onward" : "", needed);
    counter_reset(&c);
    counter_arm(&c, n, span);
    aoi_world *const sentinel = (aoi_world *)&c;
    w = sentinel;
    int rc = aoi_create(&config, &w);
    if (rc != AOI_ENOMEM)
      fail_msg("%s: aoi_create returned %d (%s)", where, rc, aoi_strerror(rc));
    if (w != sentinel)
      fail_msg("%s: aoi_create failed and wrote *out", where);
    expect_all_freed(&c, where);
  }
  /* Memory back: the same config makes a world that works. */
  counter_reset(&c);
  counter_arm(&c, needed + 1, span);
  assert_int_equal(aoi_create(&config, &w), 0);
  counter_disarm(&c);
  assert_int_equal(test_add(w, 1, 10, 10, 50, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 20, 10, 50, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  size_t count;
  uint64_t id;
  assert_int_equal(aoi_view(w, 1, &id, 1, &count), 0);
  assert_int_equal(count, 1);
  assert_int_equal(id, 2);
  assert_true(aoi__world_valid(w));
  aoi_destroy(w);
  expect_all_freed(&c, where);
}

static void test_create_oom(void **state)
{
  (void)state;
  static const layout more[] = {{8, 64}, {3, 1000}};
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    create_fails_cleanly(layouts[l], 1, l);
    create_fails_cleanly(layouts[l], ONWARD, l);
  }
  for (size_t l = 0; l < COUNT_OF(more); l++)
    create_fails_cleanly(more[l], 1, l);
}

/* ---- adds that grow every host table ------------------------------------ */

/* Inside shard 0 of every layout (x < 500, y < 250). */
static float corner_x(uint64_t id, uint64_t salt)
{
  return pick(id, salt, 5, 395);
}
static float corner_y(uint64_t id, uint64_t salt)
{
  return pick(id, salt, 5, 195);
}

static void setup_empty(side *s)
{
  s_tick(s);
  s_drain(s);
}

/* 1300 adds: the id map, the handle tables, the free and limbo lists all
   double several times (first add, the 33rd, 65th, 129th, ...), and so
   does the op queue of shard 0, which gets more than 1024 records. Some ids are
   removed and added again in the same tick, and invalid calls in between
   must keep their codes while allocations fail. */
static void step_adds(side *s)
{
  for (uint64_t id = 1; id <= 1300; id++) {
    float x = id <= 1100 ? corner_x(id, 1) : pick(id, 2, 0, 1000);
    float y = id <= 1100 ? corner_y(id, 3) : pick(id, 4, 0, 1000);
    unsigned flags = id % 3 == 0 ? AOI_WATCHER : id % 3 == 1 ? AOI_MARKER : WM;
    uint32_t layers = 1u | (1u << (id % 4));
    uint32_t interest = id % 5 == 0 ? 2u : ALL;
    s_add(s, id, x, y, 10 + (float)(id % 20), flags, layers, interest);
    if (id % 97 == 0) {
      s_remove(s, id - 40);
      s_add(s, id - 40, x, y, 12, WM, ALL, ALL);
      s_invalid_ops(s, id, 1900);
    }
  }
}

static void test_adds_oom(void **state)
{
  (void)state;
  static const scenario sc = {"adds", 1400, setup_empty, step_adds, 0};
  run_scenario(&sc, spread_layouts, COUNT_OF(spread_layouts), once);
}

/* ---- operations that grow an op queue ----------------------------------- */

/* 1200 entities in shard 0, added over two ticks so that its op queue
   holds at most 600 records. */
static void setup_corner_crowd(side *s)
{
  s_tick(s);
  for (uint64_t id = 1; id <= 1200; id++) {
    s_add(s, id, corner_x(id, 5), corner_y(id, 6), 15,
          id % 4 == 0 ? AOI_MARKER : WM, ALL, ALL);
    if (id == 600) {
      s_tick(s);
      s_drain(s);
    }
  }
  s_tick(s);
  s_drain(s);
}

/* 4200 ops to shard 0: the moves give each entity a record (the queue
   grows past 600 to 1200 records); radius and mask changes and removals
   fold into those records and need no memory. */
static void step_queue_ops(side *s)
{
  for (uint64_t id = 1; id <= 1200; id++)
    s_move(s, id, corner_x(id, 7), corner_y(id, 8));
  for (uint64_t id = 1; id <= 1200; id++)
    s_radius(s, id, 5 + (float)(id % 25));
  for (uint64_t id = 1; id <= 1200; id++)
    s_layers(s, id, 1u | ((uint32_t)(id % 3) << 1), ALL ^ (uint32_t)(id % 2));
  for (uint64_t id = 1; id <= 1200; id += 2)
    s_remove(s, id);
  s_invalid_ops(s, 2, 1);
}

static void test_op_queue_oom(void **state)
{
  (void)state;
  static const scenario sc = {"op queue", 1300, setup_corner_crowd,
                              step_queue_ops, 0};
  run_scenario(&sc, layouts, COUNT_OF(layouts), once);
}

/* 20 entities in shard 0. */
static void setup_corner_few(side *s)
{
  for (uint64_t id = 1; id <= 20; id++)
    s_add(s, id, corner_x(id, 81), corner_y(id, 82), 30, WM, ALL, ALL);
  s_tick(s);
  s_drain(s);
}

/* 140000 moves of 20 entities in shard 0 in one tick: they fold into 20
   records, and the tick reserves for 20 (the op chunks that were here
   before took 137 chunks and a bigger ring, and a tick that reserved for
   every move). The 20 alone need no more memory than they hold (a tick in
   which every entity moves leaves no departures to make room for), so
   ten more join them in the same tick: what those take is where it can
   fail, with the flood queued. */
static void step_ring_growth(side *s)
{
  for (uint64_t i = 0; i < 140000; i++)
    s_move(s, 1 + i % 20, corner_x(i, 83), corner_y(i, 84));
  for (uint64_t id = 21; id <= 30; id++)
    s_add(s, id, corner_x(id, 85), corner_y(id, 86), 30, WM, ALL, ALL);
  s_tick(s);
}

static void test_move_flood_oom(void **state)
{
  (void)state;
  static const scenario sc = {"move flood", 30, setup_corner_few,
                              step_ring_growth, 0};
  run_scenario(&sc, few_layouts, COUNT_OF(few_layouts), once);
}

/* ---- ticks -------------------------------------------------------------- */

static void add_spread(side *s, uint64_t first, uint64_t last, float r_lo,
                       float r_hi)
{
  for (uint64_t id = first; id <= last; id++) {
    unsigned flags = id % 4 == 0 ? AOI_MARKER : id % 4 == 1 ? AOI_WATCHER : WM;
    s_add(s, id, pick(id, 11, 0, 1000), pick(id, 12, 0, 1000),
          pick(id, 13, r_lo, r_hi), flags, id % 7 == 0 ? 2u : ALL,
          id % 9 == 0 ? 2u : ALL);
  }
}

/* A settled world of 400 and a tick's worth of ordinary changes. */
static void setup_plain(side *s)
{
  add_spread(s, 1, 400, 30, 90);
  s_tick(s);
  s_drain(s);
  s_tick(s);
  s_drain(s);
  for (uint64_t id = 1; id <= 400; id++) {
    if (id % 3 == 0)
      s_move(s, id, s->x[id] + pick(id, 14, -20, 20),
             s->y[id] + pick(id, 15, -20, 20));
    if (id % 7 == 0)
      s_radius(s, id, pick(id, 16, 60, 120));
    if (id % 11 == 0)
      s_layers(s, id, id % 2 ? 2u : ALL, ALL);
    if (id % 13 == 0)
      s_remove(s, id);
  }
  add_spread(s, 401, 440, 30, 90);
}

static void step_tick(side *s)
{
  s_tick(s);
}

static const scenario plain_tick = {"plain tick", 500, setup_plain, step_tick,
                                    0};

static void test_tick_plain_oom(void **state)
{
  (void)state;
  run_scenario(&plain_tick, layouts, COUNT_OF(layouts), once);
}

/* 400 watchers added in a crowd over several shards: their first tick
   grows every view, outbox, candidate and event buffer from nothing. */
static void setup_new_watchers(side *s)
{
  s_tick(s);
  for (uint64_t id = 1; id <= 400; id++)
    s_add(s, id, pick(id, 21, 300, 700), pick(id, 22, 150, 550),
          pick(id, 23, 30, 70), WM, ALL, ALL);
}

static const scenario new_watchers_tick = {"first tick of 400 watchers", 500,
                                           setup_new_watchers, step_tick, 0};

static void test_tick_new_watchers_oom(void **state)
{
  (void)state;
  run_scenario(&new_watchers_tick, spread_layouts, COUNT_OF(spread_layouts),
               once);
}

/* The cuts of the layouts of 3 and 8 shards over (0, 0) - (1000, 1000). */
static const float x_cuts[] = {500};
static const float y_cuts[] = {250, 1000.0f / 3, 500, 2000.0f / 3, 750};

/* 800 entities, half of them close to a shard border; then walks across
   borders, teleports across the map, entities added and moved away in the
   same tick, moved and removed, moved twice. */
static void setup_handoffs(side *s)
{
  for (uint64_t id = 1; id <= 400; id++) {
    float d = pick(id, 31, 0.5f, 10);
    float x = pick(id, 32, 0, 1000), y = pick(id, 33, 0, 1000);
    if (id % 2)
      x = x_cuts[0] - d;
    else
      y = y_cuts[id % COUNT_OF(y_cuts)] - d;
    s_add(s, id, x, y, pick(id, 34, 20, 60), id % 3 ? WM : AOI_MARKER, ALL,
          ALL);
  }
  add_spread(s, 401, 800, 20, 60);
  s_tick(s);
  s_drain(s);
  for (uint64_t id = 1; id <= 400; id++) {
    float d = 2 * pick(id, 31, 0.5f, 10);
    if (id % 2)
      s_move(s, id, s->x[id] + d, s->y[id]);
    else
      s_move(s, id, s->x[id], s->y[id] + d);
    if (id % 10 == 0) /* and back, or further */
      s_move(s, id, s->x[id] + (id % 20 ? -d : d), s->y[id]);
  }
  for (uint64_t id = 401; id <= 600; id++)
    s_move(s, id, 1000 - s->x[id], 1000 - s->y[id]);
  for (uint64_t id = 801; id <= 850; id++) {
    s_add(s, id, pick(id, 35, 0, 1000), pick(id, 36, 0, 1000), 40, WM, ALL,
          ALL);
    s_move(s, id, 1000 - s->x[id], s->y[id]);
  }
  for (uint64_t id = 601; id <= 630; id++) {
    s_move(s, id, 1000 - s->x[id], 1000 - s->y[id]);
    s_remove(s, id);
  }
  for (uint64_t id = 851; id <= 870; id++) {
    s_add(s, id, pick(id, 37, 0, 1000), pick(id, 38, 0, 1000), 40, WM, ALL,
          ALL);
    s_remove(s, id);
  }
}

static const scenario handoff_tick = {"handoff tick", 900, setup_handoffs,
                                      step_tick, 0};

static void test_tick_handoffs_oom(void **state)
{
  (void)state;
  run_scenario(&handoff_tick, layouts, COUNT_OF(layouts), once);
}

/* 800 markers and 100 watchers of radius 5: few ghosts. Then ten watchers
   reach out to 120 and markers gather at the borders: every shard's ghost
   array, the ghost batches and the grids grow. */
static void setup_ghosts(side *s)
{
  for (uint64_t id = 1; id <= 800; id++)
    s_add(s, id, pick(id, 41, 0, 1000), pick(id, 42, 0, 1000), 0, AOI_MARKER,
          ALL, ALL);
  for (uint64_t id = 801; id <= 900; id++)
    s_add(s, id, pick(id, 43, 0, 1000), pick(id, 44, 0, 1000), 5, AOI_WATCHER,
          ALL, ALL);
  s_tick(s);
  s_drain(s);
  for (uint64_t id = 801; id <= 810; id++)
    s_radius(s, id, 120);
  for (uint64_t id = 1; id <= 200; id++)
    s_move(s, id, x_cuts[0] + pick(id, 45, -30, 30), s->y[id]);
}

static const scenario ghost_tick = {"ghost tick", 1000, setup_ghosts, step_tick,
                                    0};

static void test_tick_ghosts_oom(void **state)
{
  (void)state;
  run_scenario(&ghost_tick, layouts, COUNT_OF(layouts), once);
}

/* 300 watchers that see each other; the host does not drain for five
   ticks of moves, so every outbox grows tick after tick. A watcher with
   undrained events is removed, added again, and ids respawn meanwhile. */
static void setup_outbox(side *s)
{
  for (uint64_t id = 1; id <= 300; id++)
    s_add(s, id, pick(id, 51, 200, 800), pick(id, 52, 200, 800),
          pick(id, 53, 50, 100), WM, ALL, ALL);
  s_tick(s);
  s_drain(s);
}

static void step_outbox(side *s)
{
  for (uint64_t round = 1; round <= 5; round++) {
    for (uint64_t id = 1; id <= 300; id++)
      if (s->flags[id] != 0)
        s_move(s, id, s->x[id] + pick(id, 54 + round, -8, 8),
               s->y[id] + pick(id, 60 + round, -8, 8));
    if (round == 2)
      s_remove(s, 17);
    if (round == 3) {
      s_add(s, 17, 500, 500, 80, WM, ALL, ALL);
      s_remove(s, 23);
      s_add(s, 23, 480, 510, 70, WM, ALL, ALL);
      s_remove(s, 31);
    }
    if (round == 5)
      s_add(s, 31, 520, 490, 60, WM, ALL, ALL);
    s_tick(s);
  }
}

static const scenario undrained_ticks = {"undrained ticks", 400, setup_outbox,
                                         step_outbox, 0};

/* Each run fails once (span 1), then every allocation from the n-th on
   until the failing call returns, so whole phases starve. */
static void test_tick_outbox_growth_oom(void **state)
{
  (void)state;
  run_scenario(&undrained_ticks, spread_layouts, COUNT_OF(spread_layouts),
               once);
  run_scenario(&undrained_ticks, few_layouts, COUNT_OF(few_layouts), onward);
}

/* Watcher 1 sees marker 10. 10 is removed in a tick that also brings 20
   new markers into 1's view (so that tick allocates for 1's view); the next
   tick adds 10 again, a new entity, where 1 sees it. Whatever failed in the
   first tick, 1's client must get `leave 10` and then `enter 10`: the new
   10 is not the old one that moved. */
static void setup_respawn(side *s)
{
  s_add(s, 1, 100, 100, 50, WM, ALL, ALL);
  for (uint64_t id = 2; id <= 9; id++)
    s_add(s, id, 100 + 5 * (float)id, 110, 10, AOI_MARKER, ALL, ALL);
  s_add(s, 10, 110, 100, 10, AOI_MARKER, ALL, ALL);
  s_tick(s);
  s_drain(s);
}

static void step_respawn(side *s)
{
  s_remove(s, 10);
  for (uint64_t id = 11; id <= 30; id++)
    s_add(s, id, 80 + (float)id, 90, 10, AOI_MARKER, ALL, ALL);
  s_tick(s);
  s_drain(s);
  s_add(s, 10, 120, 100, 10, AOI_MARKER, ALL, ALL);
  s_tick(s);
  s_drain(s);
}

static const scenario respawn = {"respawn after a failed tick", 40,
                                 setup_respawn, step_respawn, 0};

static void test_respawn_after_failed_tick_oom(void **state)
{
  (void)state;
  run_scenario(&respawn, layouts, COUNT_OF(layouts), once);
  run_scenario(&respawn, few_layouts, COUNT_OF(few_layouts), onward);
}

/* The other tick steps with every allocation from the n-th on failing until
   the call returns: whole phases starve, not one buffer. */
static void test_ticks_starving_oom(void **state)
{
  (void)state;
  const scenario *scenarios[] = {&plain_tick, &new_watchers_tick, &handoff_tick,
                                 &ghost_tick};
  for (size_t i = 0; i < COUNT_OF(scenarios); i++)
    run_scenario(scenarios[i], few_layouts, COUNT_OF(few_layouts), onward);
}

/* Every k-th allocation fails for a whole step: failed operations and
   ticks that did not start fail again when retried, and ticks degrade
   several times in a row before the world may converge. */
static void test_repeated_failures_oom(void **state)
{
  (void)state;
  static const scenario adds = {"adds", 1400, setup_empty, step_adds, 0};
  static const scenario chunks = {"op queue", 1300, setup_corner_crowd,
                                  step_queue_ops, 0};
  const scenario *scenarios[] = {
      &adds,         &chunks,     &plain_tick,      &new_watchers_tick,
      &handoff_tick, &ghost_tick, &undrained_ticks, &respawn};
  static const failure_mode every_7th = {1, 7}, every_13th = {1, 13};
  for (size_t i = 0; i < COUNT_OF(scenarios); i++) {
    run_scenario(scenarios[i], few_layouts, COUNT_OF(few_layouts), every_7th);
    run_scenario(scenarios[i], few_layouts, COUNT_OF(few_layouts), every_13th);
  }
}

/* With hysteresis, a watcher that kept its view through a failed tick may
   keep seeing a marker in the hysteresis band that a world that never
   failed had not let in (or the reverse): views depend on their history.
   So here each world is checked against the visibility bounds and its own
   clients, not against the reference. */
static void test_ticks_hysteresis_oom(void **state)
{
  (void)state;
  static const scenario scenarios[] = {
      {"plain tick, hysteresis 15", 500, setup_plain, step_tick, 15},
      {"handoff tick, hysteresis 15", 900, setup_handoffs, step_tick, 15},
      {"ghost tick, hysteresis 15", 1000, setup_ghosts, step_tick, 15},
  };
  for (size_t i = 0; i < COUNT_OF(scenarios); i++)
    run_scenario(&scenarios[i], few_layouts, COUNT_OF(few_layouts), once);
}

/* ---- queries and aoi_pending -------------------------------------------- */

/* 300 watchers in a crowd, ticked and not drained: 300 are pending and the
   query buffer has never grown. */
static void setup_queries(side *s)
{
  for (uint64_t id = 1; id <= 300; id++)
    s_add(s, id, pick(id, 71, 350, 650), pick(id, 72, 350, 650),
          pick(id, 73, 30, 80), WM, ALL, ALL);
  s_tick(s);
}

static void step_queries(side *s)
{
  static side_answer buffer;
  side_answer *a = &buffer;
  s_drain(s); /* aoi_pending grows its id, scratch and sort buffers */
  assert_int_equal(s_watchers_of(s, 300, a), 0);
  assert_true(a->count > 8);
  s_circle(s, 500, 500, 400, ALL, a);
  assert_int_equal(a->count, 300);
  assert_int_equal(s_view(s, 300, a), 0);
}

static void test_queries_oom(void **state)
{
  (void)state;
  static const scenario sc = {"queries", 400, setup_queries, step_queries, 0};
  run_scenario(&sc, layouts, COUNT_OF(layouts), once);
}

/* ---- one call at a time ------------------------------------------------ */

/* The tests below fail every allocation of one call (aoi_create, the
   queries and aoi_pending, an operation, a tick, a tick that moves the
   cuts) in turn, with the allocator of support.h and no sampling, and
   compare with a world that never failed. */

static void test_create_out_of_memory(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_config config = config_for(layouts[l], 30);
    config.allocator = &hooks;
    aoi_world *w = create_or_fail(&config);
    long long needed = atomic_load(&c.attempts);
    assert_true(needed > 0);
    aoi_destroy(w);
    expect_all_freed(&c, NULL);
    for (long long n = 1; n <= needed; n++) {
      counter_reset(&c);
      counter_arm(&c, n, 1);
      aoi_world *const sentinel = (aoi_world *)&current_layout;
      w = sentinel;
      int rc = aoi_create(&config, &w);
      if (rc != AOI_ENOMEM)
        fail_msg("threads %u shards %u: failing allocation %lld of %lld: "
                 "aoi_create returned %d",
                 layouts[l].threads, layouts[l].shards, n, needed, rc);
      assert_ptr_equal(w, sentinel);
      expect_all_freed(&c, NULL);
    }
    /* Failing one past the last does not matter. */
    counter_reset(&c);
    counter_arm(&c, needed + 1, 1);
    w = create_or_fail(&config);
    aoi_destroy(w);
    expect_all_freed(&c, NULL);
  }
}

/* Queries and aoi_pending may need memory too: on AOI_ENOMEM they write
   nothing, and the same call succeeds once memory is back. */
static void test_queries_out_of_memory(void **state)
{
  (void)state;
  counter c;
  counter_reset(&c);
  aoi_allocator hooks = counting_allocator(&c);
  aoi_config config = config_for((layout){2, 3}, 200);
  config.allocator = &hooks;
  aoi_world *w = create_or_fail(&config);
  for (uint64_t id = 1; id <= 200; id++)
    assert_int_equal(test_add(w, id, (float)(id % 20) * 5, (float)(id / 20) * 9,
                             30, WM, ALL, ALL),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  int failures = 0;
  for (long long n = 1; n <= 8; n++) {
    uint64_t ids[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    size_t count = 777;
    counter_arm(&c, n, 1);
    int rc = aoi_query_circle(w, 50, 50, 200, ALL, ids, 4, &count);
    counter_disarm(&c);
    if (rc == AOI_ENOMEM) {
      failures++;
      assert_int_equal(count, 777);
      for (int i = 0; i < 4; i++)
        assert_int_equal(ids[i], SENTINEL);
    } else {
      assert_int_equal(rc, 0);
      assert_int_equal(count, 200);
    }
    assert_int_equal(aoi_query_circle(w, 50, 50, 200, ALL, ids, 4, &count), 0);
    assert_int_equal(count, 200);
    assert_int_equal(ids[3], 4);

    const uint64_t *pending = NULL;
    count = 777;
    counter_arm(&c, n, 1);
    rc = aoi_pending(w, &pending, &count);
    counter_disarm(&c);
    if (rc == AOI_ENOMEM) {
      failures++;
      assert_int_equal(count, 777);
      assert_null(pending);
    } else {
      assert_int_equal(rc, 0);
      assert_int_equal(count, 200);
    }
  }
  assert_true(failures > 0);
  const uint64_t *pending;
  size_t count;
  assert_int_equal(aoi_pending(w, &pending, &count), 0);
  assert_int_equal(count, 200);
  for (size_t i = 0; i < count; i++)
    assert_int_equal(pending[i], i + 1);
  aoi_destroy(w);
  expect_all_freed(&c, NULL);
}

/* Operation i of a tick's worth of changes to a world of 160 entities:
   adds (more than fit the first tables), moves, radius and mask changes,
   removes and re-adds, some of which fail with EEXIST or ENOENT. */
#define SCRIPT_OPS 400

static int script_op(aoi_world *w, int i)
{
  uint64_t id = 1 + (uint64_t)(i % 160);
  float x = (float)((i * 37) % 100), y = (float)((i * 53) % 100);
  switch (i % 5) {
  case 0:
  case 1:
    return test_add(w, 1000 + (uint64_t)i, x, y, 12, WM, ALL, ALL);
  case 2:
    return aoi_move(w, id, x, y);
  case 3:
    return i % 2 ? aoi_set_radius(w, id, (float)(i % 20))
                 : aoi_set_layers(w, id, 1 + (uint32_t)(i % 3), ALL);
  default:
    return i % 3 ? aoi_remove(w, id) : test_add(w, id, x, y, 10, WM, ALL, ALL);
  }
}

static aoi_world *scripted_world(layout l, const aoi_allocator *hooks)
{
  aoi_config config = config_for(l, 30);
  config.allocator = hooks;
  aoi_world *w = create_or_fail(&config);
  for (uint64_t id = 1; id <= 160; id++)
    assert_int_equal(test_add(w, id, (float)((id * 37) % 100),
                             (float)((id * 61) % 100), 12, WM, ALL, ALL),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  records r = {0};
  drain_all(w, &r);
  records_free(&r);
  return w;
}

/* Every allocation an operation makes may fail: the operation then returns
   AOI_ENOMEM and changes nothing, and the world goes on as if it had not
   been called. */
static void test_operations_out_of_memory(void **state)
{
  (void)state;
  static const layout some[] = {{1, 1}, {2, 3}, {4, 8}};
  for (size_t l = 0; l < COUNT_OF(some); l++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_world *w = scripted_world(some[l], &hooks);
    long long before = atomic_load(&c.attempts);
    for (int i = 0; i < SCRIPT_OPS; i++)
      (void)script_op(w, i);
    long long needed = atomic_load(&c.attempts) - before;
    aoi_destroy(w);
    /* the handle tables and the id map grow, one allocation each */
    assert_true(needed >= 2);
    long long failures = 0;
    for (long long n = 1; n <= needed; n++) {
      counter_reset(&c);
      w = scripted_world(some[l], &hooks);
      aoi_world *ref = scripted_world(some[l], NULL);
      counter_arm(&c, n, 1);
      int failed = 0;
      for (int i = 0; i < SCRIPT_OPS; i++) {
        int rc = script_op(w, i);
        if (rc == AOI_ENOMEM) {
          failed++;
          continue;
        }
        int want = script_op(ref, i);
        if (rc != want)
          fail_msg("allocation %lld: op %d returned %d, reference %d", n, i,
                   rc, want);
      }
      assert_true(failed <= 1);
      failures += failed;
      counter_disarm(&c);
      records got = {0}, want = {0};
      tick_and_drain(w, &got);
      tick_and_drain(ref, &want);
      expect_records(&got, want.items, want.count);
      records_free(&got);
      records_free(&want);
      aoi_destroy(ref);
      aoi_destroy(w);
      expect_all_freed(&c, NULL);
    }
    assert_true(failures > 0);
  }
}

/* ---- one call at a time: what a client was told ------------------------ */

/* The picture a client would hold if it applied every event it was sent:
   (watcher, entity) -> last told position. Applying an enter for something
   it already has, or a leave or move for something it lacks, is a lost or
   duplicated event and fails the test. An open-addressing table. */
typedef struct told_entry {
  uint64_t watcher, id;
  float x, y;
  int used;
} told_entry;

typedef struct told_map {
  told_entry *slots;
  size_t capacity, count;
} told_map;

static size_t told_slot(const told_map *p, uint64_t watcher, uint64_t id)
{
  uint64_t h = watcher * 0x9e3779b97f4a7c15ull ^ (id + 0x632be59bd9b4e019ull);
  h ^= h >> 29;
  size_t i = (size_t)h & (p->capacity - 1);
  while (p->slots[i].used &&
         (p->slots[i].watcher != watcher || p->slots[i].id != id))
    i = (i + 1) & (p->capacity - 1);
  return i;
}

static void told_grow(told_map *p)
{
  told_map bigger = {calloc(p->capacity ? p->capacity * 2 : 1024,
                            sizeof(told_entry)),
                     p->capacity ? p->capacity * 2 : 1024, 0};
  assert_non_null(bigger.slots);
  for (size_t i = 0; i < p->capacity; i++)
    if (p->slots[i].used) {
      bigger.slots[told_slot(&bigger, p->slots[i].watcher, p->slots[i].id)] =
          p->slots[i];
      bigger.count++;
    }
  free(p->slots);
  *p = bigger;
}

static void told_remove(told_map *p, size_t i)
{
  /* backward-shift deletion keeps probe runs intact */
  p->slots[i].used = 0;
  p->count--;
  for (size_t j = (i + 1) & (p->capacity - 1); p->slots[j].used;
       j = (j + 1) & (p->capacity - 1)) {
    told_entry e = p->slots[j];
    p->slots[j].used = 0;
    p->slots[told_slot(p, e.watcher, e.id)] = e;
  }
}

static void told_apply(told_map *p, const records *r)
{
  for (size_t k = 0; k < r->count; k++) {
    if ((p->count + 1) * 2 > p->capacity)
      told_grow(p);
    const record *e = &r->items[k];
    size_t i = told_slot(p, e->watcher, e->event.id);
    int have = p->slots[i].used;
    switch (e->event.kind) {
    case AOI_ENTER:
      if (have)
        fail_msg("watcher %llu: enter %llu, which it already sees",
                 (unsigned long long)e->watcher,
                 (unsigned long long)e->event.id);
      p->slots[i] = (told_entry){e->watcher, e->event.id, e->event.x,
                                 e->event.y, 1};
      p->count++;
      break;
    case AOI_LEAVE:
      if (!have)
        fail_msg("watcher %llu: leave %llu, which it does not see",
                 (unsigned long long)e->watcher,
                 (unsigned long long)e->event.id);
      told_remove(p, i);
      break;
    default:
      if (!have)
        fail_msg("watcher %llu: move %llu, which it does not see",
                 (unsigned long long)e->watcher,
                 (unsigned long long)e->event.id);
      p->slots[i].x = e->event.x;
      p->slots[i].y = e->event.y;
      break;
    }
  }
}

/* A removed watcher's client is gone: a re-added one starts from nothing. */
static void told_forget(told_map *p, uint64_t watcher)
{
  told_map kept = {calloc(p->capacity, sizeof(told_entry)), p->capacity, 0};
  assert_non_null(kept.slots);
  for (size_t i = 0; i < p->capacity; i++)
    if (p->slots[i].used && p->slots[i].watcher != watcher) {
      kept.slots[told_slot(&kept, p->slots[i].watcher, p->slots[i].id)] =
          p->slots[i];
      kept.count++;
    }
  free(p->slots);
  *p = kept;
}

static void expect_same_told(const told_map *got, const told_map *want)
{
  if (got->count != want->count)
    fail_msg("the client picture holds %zu entries, %zu expected", got->count,
             want->count);
  for (size_t i = 0; i < want->capacity; i++) {
    const told_entry *e = &want->slots[i];
    if (!e->used)
      continue;
    const told_entry *g = &got->slots[told_slot(got, e->watcher, e->id)];
    if (!g->used || g->x != e->x || g->y != e->y)
      fail_msg("watcher %llu's picture of %llu differs",
               (unsigned long long)e->watcher, (unsigned long long)e->id);
  }
}

static void drain_told(aoi_world *w, told_map *p, records *copy)
{
  records r = {0};
  drain_all(w, &r);
  told_apply(p, &r);
  if (copy != NULL)
    for (size_t i = 0; i < r.count; i++)
      records_push(copy, r.items[i].watcher, &r.items[i].event);
  records_free(&r);
}

/* scripted_world of a config, keeping the first tick's events in a
   picture. */
static aoi_world *told_world_of(const aoi_config *config, told_map *p)
{
  aoi_world *w = create_or_fail(config);
  for (uint64_t id = 1; id <= 160; id++)
    assert_int_equal(test_add(w, id, (float)((id * 37) % 100),
                             (float)((id * 61) % 100), 12, WM, ALL, ALL),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  drain_told(w, p, NULL);
  return w;
}

/* scripted_world, keeping the first tick's events in a picture. */
static aoi_world *told_world(layout l, const aoi_allocator *hooks,
                             told_map *p)
{
  aoi_config config = config_for(l, 30);
  config.allocator = hooks;
  return told_world_of(&config, p);
}

/* Every allocation a tick makes may fail, and aoi_tick then keeps the
   header's promise: either nothing was applied (stats.tick unchanged) and
   the next tick is exact, or everything was applied and the watchers that
   missed their events catch up at the next tick, so that what each client
   was told adds up to exactly what the reference world told it: nothing
   lost, nothing duplicated, positions current. */
static void test_tick_out_of_memory(void **state)
{
  (void)state;
  static const layout some[] = {{1, 1}, {2, 3}, {4, 8}};
  for (size_t l = 0; l < COUNT_OF(some); l++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_world *w = scripted_world(some[l], &hooks);
    for (int i = 0; i < SCRIPT_OPS; i++)
      (void)script_op(w, i);
    long long before = atomic_load(&c.attempts);
    assert_int_equal(aoi_tick(w), 0);
    long long needed = atomic_load(&c.attempts) - before;
    aoi_destroy(w);
    assert_true(needed > 3);
    int not_started = 0, degraded = 0;
    for (long long n = 1; n <= needed; n++) {
      counter_reset(&c);
      told_map pw = {0}, pr = {0};
      w = told_world(some[l], &hooks, &pw);
      aoi_world *ref = told_world(some[l], NULL, &pr);
      for (int i = 0; i < SCRIPT_OPS; i++) {
        int rc = script_op(w, i);
        assert_int_equal(rc, script_op(ref, i));
        if (rc == 0 && i % 5 == 4 && i % 3 != 0) { /* a removal */
          told_forget(&pw, 1 + (uint64_t)(i % 160));
          told_forget(&pr, 1 + (uint64_t)(i % 160));
        }
      }
      counter_arm(&c, n, 1);
      int rc = aoi_tick(w);
      counter_disarm(&c);
      assert_int_equal(aoi_tick(ref), 0);
      aoi_stats s;
      assert_int_equal(aoi_world_stats(w, &s), 0);
      if (rc != 0 && rc != AOI_ENOMEM)
        fail_msg("allocation %lld of the tick: aoi_tick returned %d", n, rc);
      records got = {0}, want = {0};
      if (getenv("AOI_TEST_VERBOSE"))
        fprintf(stderr, "allocation %lld of %lld: %s, tick %llu\n", n, needed,
                aoi_strerror(rc), (unsigned long long)s.tick);
      if (s.tick == 1) {
        /* Not started: the queued operations apply at the next tick. */
        assert_int_equal(rc, AOI_ENOMEM);
        not_started++;
        assert_int_equal(aoi_tick(w), 0);
        drain_told(ref, &pr, &want);
        drain_told(w, &pw, &got);
        expect_records(&got, want.items, want.count);
      } else {
        assert_int_equal(s.tick, 2);
        drain_told(w, &pw, &got);
        drain_told(ref, &pr, &want);
        if (rc == 0)
          expect_records(&got, want.items, want.count);
        else
          degraded++;
      }
      /* One more round of moves: views and pictures agree again. */
      for (uint64_t id = 1; id <= 160; id += 4) {
        int a = aoi_move(w, id, 50, 50), b = aoi_move(ref, id, 50, 50);
        assert_int_equal(a, b);
      }
      assert_int_equal(aoi_tick(w), 0);
      assert_int_equal(aoi_tick(ref), 0);
      drain_told(w, &pw, NULL);
      drain_told(ref, &pr, NULL);
      expect_same_told(&pw, &pr);
      for (uint64_t id = 1; id <= 2000; id++) {
        answer a, b;
        int ra = aoi_view(w, id, a.ids, MAX_IDS, &a.count);
        int rb = aoi_view(ref, id, b.ids, MAX_IDS, &b.count);
        assert_int_equal(ra, rb);
        if (ra == 0)
          expect_ids(&a, b.ids, b.count);
      }
      assert_true(aoi__world_valid(w));
      records_free(&got);
      records_free(&want);
      free(pw.slots);
      free(pr.slots);
      aoi_destroy(ref);
      aoi_destroy(w);
      expect_all_freed(&c, NULL);
    }
    /* Both ways of failing were reached. */
    assert_true(not_started > 0);
    assert_true(degraded > 0);
  }
}

/* A tick that moves the shard cuts (every entity may change shard) fails
   at each of its allocations in turn: no entity is lost, the world stays
   valid, and once a tick succeeds every view equals a world that never
   failed (hysteresis 0, so views do not depend on history). */
static aoi_world *crowded_world(layout l, const aoi_allocator *hooks)
{
  aoi_config config = config_for(l, 30);
  config.allocator = hooks;
  config.rebalance_interval = 2; /* tick 2 may move the cuts */
  aoi_world *w = create_or_fail(&config);
  for (uint64_t id = 1; id <= 300; id++) /* most in one corner */
    assert_int_equal(test_add(w, id, (float)(id % 4 ? (id * 7) % 20 : (id * 37) % 100),
                             (float)(id % 4 ? (id * 13) % 20 : (id * 61) % 100),
                             10, WM, ALL, ALL),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  records r = {0};
  drain_all(w, &r);
  records_free(&r);
  for (uint64_t id = 1; id <= 300; id += 3) /* walks, some across cuts */
    assert_int_equal(aoi_move(w, id, (float)((id * 11) % 100), (float)((id * 17) % 100)), 0);
  return w;
}

static void test_relayout_tick_out_of_memory(void **state)
{
  (void)state;
  static const layout some[] = {{1, 4}, {2, 4}, {4, 8}};
  for (size_t l = 0; l < COUNT_OF(some); l++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_world *w = crowded_world(some[l], &hooks);
    long long before = atomic_load(&c.attempts);
    assert_int_equal(aoi_tick(w), 0);
    long long needed = atomic_load(&c.attempts) - before;
    aoi_stats s;
    assert_int_equal(aoi_world_stats(w, &s), 0);
    assert_int_equal(s.rebalances, 1); /* the cuts did move */
    aoi_destroy(w);
    for (long long n = 1; n <= needed; n++) {
      counter_reset(&c);
      w = crowded_world(some[l], &hooks);
      aoi_world *ref = crowded_world(some[l], NULL);
      counter_arm(&c, n, 1);
      int rc = aoi_tick(w);
      counter_disarm(&c);
      assert_true(rc == 0 || rc == AOI_ENOMEM);
      assert_true(aoi__world_valid(w));
      assert_int_equal(aoi_tick(ref), 0);
      if (aoi_world_stats(w, &s) == 0 && s.tick == 1)
        assert_int_equal(aoi_tick(w), 0); /* did not start: now it does */
      assert_int_equal(aoi_tick(w), 0);
      assert_int_equal(aoi_tick(ref), 0);
      assert_true(aoi__world_valid(w));
      assert_int_equal(aoi_world_stats(w, &s), 0);
      assert_int_equal(s.entities, 300);
      for (uint64_t id = 1; id <= 300; id++) {
        answer a, b;
        assert_int_equal(aoi_view(w, id, a.ids, MAX_IDS, &a.count), 0);
        assert_int_equal(aoi_view(ref, id, b.ids, MAX_IDS, &b.count), 0);
        assert_true(b.count <= MAX_IDS);
        expect_ids(&a, b.ids, b.count);
      }
      aoi_destroy(ref);
      aoi_destroy(w);
      expect_all_freed(&c, NULL);
    }
  }
}

/* ---- pools -------------------------------------------------------------- */


/* A world of two entities on `pool` ticks, and watcher 1 sees 2 enter. */
static void expect_pool_works(aoi_pool *pool)
{
  aoi_config config = config_for((layout){2, 3}, 30);
  config.run = AOI_RUN_POOL;
  config.pool = pool;
  aoi_world *w = create_or_fail(&config);
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 90, 90, 20, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_move(w, 2, 20, 10), 0);
  assert_int_equal(aoi_tick_many(&w, 1, (int[]){1}), 0);
  static const record want[] = {{1, {2, 0, 20, 10, AOI_ENTER, 2}},
                                {2, {1, 0, 10, 10, AOI_ENTER, 2}}};
  records got = {0};
  drain_all(w, &got);
  expect_records(&got, want, COUNT_OF(want));
  records_free(&got);
  assert_int_equal(aoi_destroy(w), 0);
}

/* aoi_pool_create fails at each of its allocations (once, and every one
   from there on): AOI_ENOMEM, *out untouched, every byte freed and no
   thread left running. With memory back, the pool starts and works. */
static void test_pool_create_out_of_memory(void **state)
{
  (void)state;
  unsigned before = test_threads_at_rest();
  static const unsigned sizes[] = {1, 3, 8};
  for (size_t k = 0; k < COUNT_OF(sizes); k++)
    for (int onward_run = 0; onward_run <= 1; onward_run++) {
      long long span = onward_run ? ONWARD : 1;
      counter c;
      counter_reset(&c);
      aoi_allocator hooks = counting_allocator(&c);
      aoi_pool_config pc;
      aoi_pool_config_default(&pc);
      pc.threads = sizes[k];
      pc.allocator = &hooks;
      aoi_pool *p = NULL;
      assert_int_equal(aoi_pool_create(&pc, &p), 0);
      long long needed = atomic_load(&c.attempts);
      assert_int_equal(aoi_pool_destroy(p), 0);
      snprintf(where, sizeof(where), "aoi_pool_create, %u threads",
               sizes[k]);
      expect_all_freed(&c, where);
      assert_true(needed >= 1);
      for (long long n = 1; n <= needed; n++) {
        snprintf(where, sizeof(where),
                 "aoi_pool_create, %u threads, allocation %lld%s of %lld",
                 sizes[k], n, onward_run ? " onward" : "", needed);
        counter_reset(&c);
        counter_arm(&c, n, span);
        aoi_pool *const sentinel = (aoi_pool *)&c;
        p = sentinel;
        int rc = aoi_pool_create(&pc, &p);
        if (rc != AOI_ENOMEM)
          fail_msg("%s: aoi_pool_create returned %d", where, rc);
        if (p != sentinel)
          fail_msg("%s: aoi_pool_create failed and wrote *out", where);
        expect_all_freed(&c, where);
        if (test_threads_become(before) != before)
          fail_msg("%s: %u threads, %u before", where, test_threads(),
                   before);
      }
      counter_reset(&c);
      counter_arm(&c, needed + 1, span);
      assert_int_equal(aoi_pool_create(&pc, &p), 0);
      counter_disarm(&c);
      if (before != 0)
        assert_int_equal(test_threads_become(before + sizes[k]), before + sizes[k]);
      expect_pool_works(p);
      assert_int_equal(aoi_pool_destroy(p), 0);
      expect_all_freed(&c, where);
    }
}

/* aoi_create of a world on a pool (AOI_RUN_POOL) or on the caller's
   thread (AOI_RUN_CALLER) fails at each of its allocations: AOI_ENOMEM,
   *out untouched, every byte freed; the pool runs on, with no world
   counted on it: a world made there ticks, and aoi_pool_destroy then
   succeeds. */
static void test_create_on_pool_out_of_memory(void **state)
{
  (void)state;
  static const struct {
    aoi_run run;
    unsigned lanes, shards;
  } runs[] = {{AOI_RUN_POOL, 1, 1},   {AOI_RUN_POOL, 0, 5},
              {AOI_RUN_POOL, 4, 8},   {AOI_RUN_CALLER, 0, 0},
              {AOI_RUN_CALLER, 3, 4}};
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 2;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  unsigned threads = test_threads_settled();
  for (size_t r = 0; r < COUNT_OF(runs); r++)
    for (int onward_run = 0; onward_run <= 1; onward_run++) {
      long long span = onward_run ? ONWARD : 1;
      counter c;
      counter_reset(&c);
      aoi_allocator hooks = counting_allocator(&c);
      aoi_config config = config_for((layout){runs[r].lanes, runs[r].shards},
                                     30);
      config.run = runs[r].run;
      config.pool = runs[r].run == AOI_RUN_POOL ? pool : NULL;
      config.allocator = &hooks;
      aoi_world *w = create_or_fail(&config);
      long long needed = atomic_load(&c.attempts);
      assert_int_equal(aoi_destroy(w), 0);
      snprintf(where, sizeof(where), "aoi_create, %s, lanes %u shards %u",
               runs[r].run == AOI_RUN_POOL ? "AOI_RUN_POOL" : "AOI_RUN_CALLER",
               runs[r].lanes, runs[r].shards);
      expect_all_freed(&c, where);
      assert_true(needed > 0);
      for (long long n = 1; n <= needed; n++) {
        snprintf(where, sizeof(where),
                 "aoi_create, %s, lanes %u shards %u, allocation %lld%s of "
                 "%lld",
                 runs[r].run == AOI_RUN_POOL ? "AOI_RUN_POOL"
                                             : "AOI_RUN_CALLER",
                 runs[r].lanes, runs[r].shards, n,
                 onward_run ? " onward" : "", needed);
        counter_reset(&c);
        counter_arm(&c, n, span);
        aoi_world *const sentinel = (aoi_world *)&c;
        w = sentinel;
        int rc = aoi_create(&config, &w);
        if (rc != AOI_ENOMEM)
          fail_msg("%s: aoi_create returned %d", where, rc);
        if (w != sentinel)
          fail_msg("%s: aoi_create failed and wrote *out", where);
        expect_all_freed(&c, where);
        if (n % 8 == 1)
          expect_pool_works(pool);
      }
      counter_reset(&c);
      counter_arm(&c, needed + 1, span);
      w = create_or_fail(&config);
      counter_disarm(&c);
      assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
      assert_int_equal(test_add(w, 2, 20, 10, 20, WM, ALL, ALL), 0);
      assert_int_equal(aoi_tick_many(&w, 1, (int[]){1}), 0);
      EXPECT_VIEW(w, 1, 2);
      assert_int_equal(aoi_destroy(w), 0);
      expect_all_freed(&c, where);
    }
  assert_int_equal(test_threads_settled(), threads);
  expect_pool_works(pool);
  assert_int_equal(aoi_pool_destroy(pool), 0); /* no world count leaked */
}

/* A world of the one-call tests with its client picture, and a reference
   world that never fails with its own. */
typedef struct told_pair {
  aoi_world *w, *ref;
  told_map pw, pr;
} told_pair;

static void told_pair_open(told_pair *t, const aoi_config *config)
{
  memset(t, 0, sizeof(*t));
  t->w = told_world_of(config, &t->pw);
  aoi_config ref = config_for((layout){1, 1}, 30);
  t->ref = told_world_of(&ref, &t->pr);
}

static void told_pair_close(told_pair *t)
{
  assert_int_equal(aoi_destroy(t->w), 0);
  assert_int_equal(aoi_destroy(t->ref), 0);
  free(t->pw.slots);
  free(t->pr.slots);
}

/* The script's operations on both worlds, which must agree. */
static void told_pair_script(told_pair *t)
{
  for (int i = 0; i < SCRIPT_OPS; i++) {
    int rc = script_op(t->w, i);
    assert_int_equal(rc, script_op(t->ref, i));
    if (rc == 0 && i % 5 == 4 && i % 3 != 0) { /* a removal */
      told_forget(&t->pw, 1 + (uint64_t)(i % 160));
      told_forget(&t->pr, 1 + (uint64_t)(i % 160));
    }
  }
}

/* The reference ticks; both drain: the same events. */
static void told_pair_exact(told_pair *t)
{
  assert_int_equal(aoi_tick(t->ref), 0);
  records got = {0}, want = {0};
  drain_told(t->w, &t->pw, &got);
  drain_told(t->ref, &t->pr, &want);
  expect_records(&got, want.items, want.count);
  records_free(&got);
  records_free(&want);
}

/* After one more round of moves and a tick, the pictures and views of
   both worlds agree, and the world is consistent. */
static void told_pair_converge(told_pair *t, aoi_world *const *others,
                               size_t n)
{
  for (uint64_t id = 1; id <= 160; id += 4)
    assert_int_equal(aoi_move(t->w, id, 50, 50), aoi_move(t->ref, id, 50, 50));
  int results[4] = {1, 1, 1, 1};
  aoi_world *list[4] = {t->w};
  for (size_t i = 0; i < n; i++)
    list[1 + i] = others[i];
  assert_int_equal(aoi_tick_many(list, 1 + n, results), 0);
  assert_int_equal(aoi_tick(t->ref), 0);
  drain_told(t->w, &t->pw, NULL);
  drain_told(t->ref, &t->pr, NULL);
  expect_same_told(&t->pw, &t->pr);
  for (uint64_t id = 1; id <= 2000; id++) {
    answer a, b;
    int ra = aoi_view(t->w, id, a.ids, MAX_IDS, &a.count);
    int rb = aoi_view(t->ref, id, b.ids, MAX_IDS, &b.count);
    assert_int_equal(ra, rb);
    if (ra == 0)
      expect_ids(&a, b.ids, b.count);
  }
  assert_true(aoi__world_valid(t->w));
}

/* Every allocation of one world's tick fails in turn while aoi_tick_many
   (or its two halves) ticks it with two others, one on the same pool and
   one on the calling thread: the failing world's result is 0 or
   AOI_ENOMEM, as aoi_tick's would be (not started: the next tick is
   exact; started: nothing lost, nothing duplicated), the call returns it,
   and the others tick exactly as their references. The failing world runs
   on the pool with one lane or several, on the caller, on its own
   threads. Then every byte is freed. */
static void test_tick_many_out_of_memory(void **state)
{
  (void)state;
  static const struct {
    aoi_run run;
    unsigned lanes, shards;
  } runs[] = {{AOI_RUN_POOL, 1, 1},
              {AOI_RUN_POOL, 2, 3},
              {AOI_RUN_POOL, 4, 8},
              {AOI_RUN_CALLER, 2, 3},
              {AOI_RUN_OWN, 2, 3}};
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  aoi_config other_pool = config_for((layout){2, 2}, 30);
  other_pool.run = AOI_RUN_POOL;
  other_pool.pool = pool;
  aoi_config other_caller = config_for((layout){1, 3}, 30);
  other_caller.run = AOI_RUN_CALLER;
  for (size_t r = 0; r < COUNT_OF(runs); r++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_config config =
        config_for((layout){runs[r].lanes, runs[r].shards}, 30);
    config.run = runs[r].run;
    config.pool = runs[r].run == AOI_RUN_POOL ? pool : NULL;
    config.allocator = &hooks;
    told_map scratch = {0};
    aoi_world *w = told_world_of(&config, &scratch);
    for (int i = 0; i < SCRIPT_OPS; i++)
      (void)script_op(w, i);
    long long before = atomic_load(&c.attempts);
    int result = 1;
    assert_int_equal(aoi_tick_many(&w, 1, &result), 0);
    assert_int_equal(result, 0);
    long long needed = atomic_load(&c.attempts) - before;
    aoi_destroy(w);
    free(scratch.slots);
    assert_true(needed > 3);
    int not_started = 0, degraded = 0;
    for (long long n = 1; n <= needed; n++) {
      snprintf(where, sizeof(where),
               "aoi_tick_many, run %d lanes %u shards %u, allocation %lld of "
               "%lld",
               (int)runs[r].run, runs[r].lanes, runs[r].shards, n, needed);
      counter_reset(&c);
      told_pair f, g, h;
      told_pair_open(&f, &config);
      told_pair_open(&g, &other_pool);
      told_pair_open(&h, &other_caller);
      told_pair_script(&f);
      told_pair_script(&g);
      told_pair_script(&h);
      aoi_world *list[3] = {g.w, f.w, h.w};
      int results[3] = {1, 1, 1};
      counter_arm(&c, n, 1);
      int rc;
      if (n % 2 == 0) {
        rc = aoi_tick_many(list, 3, results);
      } else {
        assert_int_equal(aoi_tick_many_begin(list, 3), 0);
        rc = aoi_tick_many_end(list, 3, results);
      }
      counter_disarm(&c);
      if (results[0] != 0 || results[2] != 0)
        fail_msg("%s: the other worlds' results %d and %d", where,
                 results[0], results[2]);
      if (results[1] != 0 && results[1] != AOI_ENOMEM)
        fail_msg("%s: the failing world's result %d", where, results[1]);
      if (rc != results[1])
        fail_msg("%s: returned %d, the failing world's result %d", where, rc,
                 results[1]);
      if (results[1] == AOI_ENOMEM && atomic_load(&c.injected) == 0)
        fail_msg("%s: AOI_ENOMEM, but no allocation failed", where);
      told_pair_exact(&g);
      told_pair_exact(&h);
      aoi_stats s;
      assert_int_equal(aoi_world_stats(f.w, &s), 0);
      if (s.tick == 1) {
        /* Not started: the queued operations apply at the next tick. */
        assert_int_equal(results[1], AOI_ENOMEM);
        not_started++;
        assert_int_equal(aoi_tick(f.ref), 0); /* its missed tick */
        records got = {0}, want = {0};
        drain_told(f.ref, &f.pr, &want);
        assert_int_equal(aoi_tick_many(&f.w, 1, results), 0);
        drain_told(f.w, &f.pw, &got);
        expect_records(&got, want.items, want.count);
        records_free(&got);
        records_free(&want);
      } else {
        assert_int_equal(s.tick, 2);
        if (results[1] == 0) {
          told_pair_exact(&f);
        } else {
          degraded++;
          assert_int_equal(aoi_tick(f.ref), 0);
          drain_told(f.w, &f.pw, NULL);
          drain_told(f.ref, &f.pr, NULL);
        }
      }
      assert_true(aoi__world_valid(f.w));
      /* The next tick, with the others: pictures and views agree. */
      aoi_world *others[2] = {g.w, h.w};
      told_pair_converge(&f, others, 2);
      told_pair_close(&f);
      told_pair_close(&g);
      told_pair_close(&h);
      expect_all_freed(&c, where);
    }
    /* Both ways of failing were reached. */
    assert_true(not_started > 0);
    assert_true(degraded > 0);
  }
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

int main(void)
{
  const char *stride = getenv("AOI_OOM_STRIDE");
  if (stride != NULL) {
    stride_env = strtoll(stride, NULL, 10);
    if (stride_env < 1) {
      fprintf(stderr, "AOI_OOM_STRIDE must be a positive integer\n");
      return 2;
    }
  }
  if (getenv("AOI_OOM_ONLY") != NULL)
    cmocka_set_test_filter(getenv("AOI_OOM_ONLY"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_create_oom, close_open_sides),
      cmocka_unit_test_teardown(test_adds_oom, close_open_sides),
      cmocka_unit_test_teardown(test_op_queue_oom, close_open_sides),
      cmocka_unit_test_teardown(test_move_flood_oom, close_open_sides),
      cmocka_unit_test_teardown(test_tick_plain_oom, close_open_sides),
      cmocka_unit_test_teardown(test_tick_new_watchers_oom, close_open_sides),
      cmocka_unit_test_teardown(test_tick_handoffs_oom, close_open_sides),
      cmocka_unit_test_teardown(test_tick_ghosts_oom, close_open_sides),
      cmocka_unit_test_teardown(test_tick_outbox_growth_oom, close_open_sides),
      cmocka_unit_test_teardown(test_respawn_after_failed_tick_oom,
                                close_open_sides),
      cmocka_unit_test_teardown(test_ticks_starving_oom, close_open_sides),
      cmocka_unit_test_teardown(test_ticks_hysteresis_oom, close_open_sides),
      cmocka_unit_test_teardown(test_repeated_failures_oom, close_open_sides),
      cmocka_unit_test_teardown(test_queries_oom, close_open_sides),
      cmocka_unit_test(test_create_out_of_memory),
      cmocka_unit_test(test_queries_out_of_memory),
      cmocka_unit_test(test_operations_out_of_memory),
      cmocka_unit_test(test_tick_out_of_memory),
      cmocka_unit_test(test_relayout_tick_out_of_memory),
      cmocka_unit_test(test_pool_create_out_of_memory),
      cmocka_unit_test(test_create_on_pool_out_of_memory),
      cmocka_unit_test(test_tick_many_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
