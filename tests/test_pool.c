/*
 * test_pool.c: the contract of pools and of ticking many worlds at once
 * (aoi.h: aoi_pool_*, aoi_config.run, aoi_tick_many and its halves, rules
 * 5 and 6).
 *
 * - A pool's life: its config's defaults and bad values (AOI_EINVAL,
 *   writing nothing), its threads started and stopped, aoi_pool_destroy
 *   refused with AOI_EBUSY while a world is on it (the pool then works
 *   on), every byte of its allocator given back.
 * - aoi_tick_many, aoi_tick_many_begin and aoi_tick_many_end refusing a
 *   NULL list, results or world, a world listed twice (AOI_EINVAL), then
 *   a world in flight or delivering (AOI_EBUSY), in that order, ticking
 *   nothing and writing no result; a world begun by one half ended by the
 *   other call; other worlds ticked while some are in flight.
 * - A world destroyed while its tick runs on the pool, beside other worlds
 *   whose ticks go on (their events are the model's); two host threads,
 *   one ticking its worlds while the other creates, ticks and destroys
 *   worlds on the same pool; calls from a delivery callback of a pool
 *   world (AOI_EBUSY); aoi_tick_poll of pool worlds reaching 1.
 * - The same bytes: one stream of operations into a world ticked alone
 *   (AOI_RUN_OWN, one thread) and into copies on pools of 1, 2, 3, 5 and 8
 *   threads and on the calling thread, with other busy worlds on each
 *   pool: every tick, every watcher's events are the same bytes.
 *
 * Events are checked against the model (model.c) or the world ticked
 * alone. Only this thread calls cmocka's asserts: the second host thread
 * and the delivery callbacks record what they saw, and this thread
 * asserts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <dirent.h>
#endif

#include "aoi.h"
#include "api_support.h"
#include "model.h"
#include "support.h"

#define RESULT_UNSET 12345 /* no aoi_* code: a result not written */

/* ---- threads of this process -------------------------------------------- */


/* ---- a world and its model ---------------------------------------------- */

/* A world checked against the model, and a crowd walking in it: ids 1 ..
   n over (0, 0) - (side, side), each live or not. */
typedef struct pair {
  aoi_world *w;
  model *m;
  uint64_t n;
  float side;
  bool *live;
  float *x, *y; /* where each live one is */
  uint64_t rng;
  uint64_t ticks, events; /* ticks checked, events compared */
} pair;

/* The config of a world over (0, 0) - (side, side) that runs as `run`,
   with `lanes` and `shards`. */
static aoi_config run_config(aoi_run run, aoi_pool *pool, unsigned lanes,
                             unsigned shards, float side)
{
  aoi_config c;
  aoi_config_default(&c);
  c.run = run;
  c.pool = run == AOI_RUN_POOL ? pool : NULL;
  c.threads = lanes;
  c.shards = shards;
  c.max_x = side;
  c.max_y = side;
  c.max_radius = 30;
  return c;
}

static float coordinate(pair *p)
{
  return (float)((double)(rng_next(&p->rng) >> 40) / (double)(1 << 24) *
                 (double)p->side);
}

/* Both sides of one call must agree. */
#define BOTH(engine, oracle)                                                  \
  do {                                                                        \
    int got_ = (engine), want_ = (oracle);                                    \
    if (got_ != want_)                                                        \
      fail_msg("%s returned %d, the model %d", #engine, got_, want_);         \
  } while (0)

static void pair_add(pair *p, uint64_t id)
{
  float x = coordinate(p), y = coordinate(p);
  float radius = (float)(5 + rng_below(&p->rng, 25));
  unsigned flags = id % 7 == 0 ? AOI_MARKER : id % 11 == 0 ? AOI_WATCHER : WM;
  BOTH(test_add(p->w, id, x, y, radius, flags, ALL, ALL),
       model_add(p->m, id, x, y, radius, flags, ALL, ALL));
  p->live[id] = true;
  p->x[id] = x;
  p->y[id] = y;
}

static void pair_move(pair *p, uint64_t id, float x, float y)
{
  BOTH(aoi_move(p->w, id, x, y), model_move(p->m, id, x, y));
  p->x[id] = x;
  p->y[id] = y;
}

/* A world of `n` ids over (0, 0) - (side, side), `n` of them added. */
static void pair_open(pair *p, const aoi_config *c, uint64_t n, uint64_t seed)
{
  memset(p, 0, sizeof(*p));
  p->w = create_or_fail(c);
  p->m = model_create(c);
  assert_non_null(p->m);
  p->n = n;
  p->side = c->max_x;
  p->rng = seed;
  p->live = calloc(n + 1, sizeof(bool));
  p->x = calloc(n + 1, sizeof(float));
  p->y = calloc(n + 1, sizeof(float));
  assert_non_null(p->live);
  assert_non_null(p->x);
  assert_non_null(p->y);
  for (uint64_t id = 1; id <= n; id++)
    pair_add(p, id);
}

static void pair_close(pair *p)
{
  if (p->w != NULL)
    assert_int_equal(aoi_destroy(p->w), 0);
  model_destroy(p->m);
  free(p->live);
  free(p->x);
  free(p->y);
  memset(p, 0, sizeof(*p));
}

/* A tick's operations: most walk a step, some teleport, a few leave and
   come back, and a removed id is refused. */
static void pair_walk(pair *p)
{
  for (uint64_t id = 1; id <= p->n; id++) {
    size_t u = rng_below(&p->rng, 100);
    if (!p->live[id]) {
      if (u < 50)
        pair_add(p, id);
      else
        BOTH(aoi_move(p->w, id, 1, 1), model_move(p->m, id, 1, 1));
      continue;
    }
    if (u < 2) {
      BOTH(aoi_remove(p->w, id), model_remove(p->m, id));
      p->live[id] = false;
    } else if (u < 5) {
      float x = coordinate(p), y = coordinate(p);
      pair_move(p, id, x, y);
    } else if (u < 70) {
      float dx = coordinate(p) / p->side * 10 - 5;
      float dy = coordinate(p) / p->side * 10 - 5;
      pair_move(p, id, p->x[id] + dx, p->y[id] + dy);
    }
  }
}

/* The model's tick: `got`, the events the engine's tick left, must be its
   events. */
static void pair_expect_records(pair *p, const records *got)
{
  assert_int_equal(model_tick(p->m), 0);
  const model_event *me;
  size_t n = model_events(p->m, &me);
  record *want = malloc(sizeof(record) * (n + 1));
  assert_non_null(want);
  for (size_t i = 0; i < n; i++) {
    want[i].watcher = me[i].watcher;
    want[i].event = me[i].event;
    want[i].event.tag = test_tag(me[i].event.id);
  }
  expect_records(got, want, n);
  p->ticks++;
  p->events += n;
  free(want);
  aoi_stats st;
  assert_int_equal(aoi_world_stats(p->w, &st), 0);
  assert_int_equal(st.tick, p->ticks);
}

/* The engine's tick (done, with result `rc`) left exactly the model's
   events. */
static void pair_expect(pair *p, int rc)
{
  if (rc != 0)
    fail_msg("the tick returned %d (%s)", rc, aoi_strerror(rc));
  records got = {0};
  drain_all(p->w, &got);
  pair_expect_records(p, &got);
  records_free(&got);
}

static uint64_t stats_tick(aoi_world *w)
{
  aoi_stats st;
  assert_int_equal(aoi_world_stats(w, &st), 0);
  return st.tick;
}

/* ---- a pool's life ------------------------------------------------------ */

static void test_pool_config(void **state)
{
  (void)state;
  aoi_pool_config pc;
  memset(&pc, 0xa5, sizeof(pc));
  aoi_pool_config_default(&pc);
  assert_int_equal(pc.threads, 0);
  assert_int_equal(pc.pin_threads, 0);
  assert_null(pc.allocator);
  aoi_pool_config_default(NULL); /* (nothing to fill) */

  assert_int_equal(aoi_pool_threads(NULL), 0);
  assert_int_equal(aoi_pool_destroy(NULL), 0);

  aoi_pool *const sentinel = (aoi_pool *)&pc;
  aoi_pool *p = sentinel;
  assert_int_equal(aoi_pool_create(NULL, &p), AOI_EINVAL);
  assert_ptr_equal(p, sentinel);
  assert_int_equal(aoi_pool_create(&pc, NULL), AOI_EINVAL);

  static const aoi_allocator no_alloc = {NULL, counting_realloc,
                                         counting_free, NULL};
  static const aoi_allocator no_realloc = {counting_alloc, NULL,
                                           counting_free, NULL};
  static const aoi_allocator no_free = {counting_alloc, counting_realloc,
                                        NULL, NULL};
  const struct {
    const char *name;
    unsigned threads, pin;
    const aoi_allocator *allocator;
  } bad[] = {
      {"threads 257", 257, 0, NULL},
      {"threads UINT_MAX", UINT_MAX, 0, NULL},
      {"pin_threads 2", 1, 2, NULL},
      {"pin_threads UINT_MAX", 1, UINT_MAX, NULL},
      {"allocator without alloc", 1, 0, &no_alloc},
      {"allocator without realloc", 1, 0, &no_realloc},
      {"allocator without free", 1, 0, &no_free},
  };
  unsigned before = test_threads_at_rest();
  for (size_t i = 0; i < COUNT_OF(bad); i++) {
    aoi_pool_config_default(&pc);
    pc.threads = bad[i].threads;
    pc.pin_threads = bad[i].pin;
    pc.allocator = bad[i].allocator;
    p = sentinel;
    int rc = aoi_pool_create(&pc, &p);
    if (rc != AOI_EINVAL || p != sentinel)
      fail_msg("%s: aoi_pool_create returned %d%s", bad[i].name, rc,
               p != sentinel ? " and wrote *out" : "");
  }
  assert_int_equal(test_threads(), before);

  /* threads 0: one per online core (at most 256) */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  aoi_pool_config_default(&pc);
  assert_int_equal(aoi_pool_create(&pc, &p), 0);
  assert_int_equal(aoi_pool_threads(p),
                   cores < 1 ? 1 : cores > 256 ? 256 : (unsigned)cores);
  assert_int_equal(aoi_pool_destroy(p), 0);
}

/* A pool starts its threads and stops them; with pin_threads too; every
   byte its allocator gave is freed. */
static void test_pool_threads(void **state)
{
  (void)state;
  unsigned before = test_threads_at_rest();
  static const unsigned sizes[] = {1, 3, 8, 256};
  for (size_t i = 0; i < COUNT_OF(sizes); i++)
    for (unsigned pin = 0; pin <= 1; pin++) {
#ifndef __linux__
      if (pin)
        continue;
#endif
      counter c;
      counter_reset(&c);
      aoi_allocator hooks = counting_allocator(&c);
      aoi_pool_config pc;
      aoi_pool_config_default(&pc);
      pc.threads = sizes[i];
      pc.pin_threads = pin;
      pc.allocator = &hooks;
      aoi_pool *p = NULL;
      assert_int_equal(aoi_pool_create(&pc, &p), 0);
      assert_non_null(p);
      assert_int_equal(aoi_pool_threads(p), sizes[i]);
      if (before != 0)
        assert_int_equal(test_threads_become(before + sizes[i]),
                         before + sizes[i]);
      assert_true(atomic_load(&c.attempts) > 0); /* (its allocator) */
      assert_int_equal(aoi_pool_destroy(p), 0);
      assert_int_equal(test_threads_become(before), before);
      expect_all_freed(&c, "a pool");
    }
}

/* aoi_pool_destroy is refused while a world is on the pool, which then
   ticks its worlds on; worlds that run on their own threads or on the
   caller's are not on it. */
static void test_pool_busy_while_worlds_on_it(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 2;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  unsigned threads = test_threads_settled();

  aoi_config c = run_config(AOI_RUN_POOL, pool, 2, 3, 200);
  pair a, b;
  pair_open(&a, &c, 300, 1);
  assert_int_equal(aoi_pool_destroy(pool), AOI_EBUSY);
  assert_int_equal(test_threads(), threads); /* nothing stopped */
  pair_expect(&a, aoi_tick(a.w));
  c.threads = 0; /* the pool's 2 */
  pair_open(&b, &c, 200, 2);
  assert_int_equal(aoi_pool_destroy(pool), AOI_EBUSY);
  for (int t = 0; t < 3; t++) {
    pair_walk(&a);
    pair_walk(&b);
    aoi_world *both[2] = {a.w, b.w};
    int results[2] = {RESULT_UNSET, RESULT_UNSET};
    assert_int_equal(aoi_tick_many(both, 2, results), 0);
    pair_expect(&a, results[0]);
    pair_expect(&b, results[1]);
  }
  pair_close(&a);
  assert_int_equal(aoi_pool_destroy(pool), AOI_EBUSY);
  pair_walk(&b);
  pair_expect(&b, aoi_tick(b.w));
  pair_close(&b);

  /* AOI_RUN_CALLER and AOI_RUN_OWN worlds are not on it */
  aoi_config caller = run_config(AOI_RUN_CALLER, NULL, 0, 0, 100);
  aoi_config own = run_config(AOI_RUN_OWN, NULL, 1, 1, 100);
  aoi_world *wc = create_or_fail(&caller), *wo = create_or_fail(&own);
  assert_int_equal(aoi_pool_destroy(pool), 0);
  assert_int_equal(aoi_tick(wc), 0);
  assert_int_equal(aoi_tick(wo), 0);
  assert_int_equal(aoi_destroy(wc), 0);
  assert_int_equal(aoi_destroy(wo), 0);
}

/* ---- aoi_tick_many's checks --------------------------------------------- */

typedef struct trio {
  aoi_pool *pool;
  pair a, b, c; /* a pool world, a pool world of 3 lanes, a caller's */
} trio;

static void trio_open(trio *t)
{
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  assert_int_equal(aoi_pool_create(&pc, &t->pool), 0);
  aoi_config c = run_config(AOI_RUN_POOL, t->pool, 1, 2, 150);
  pair_open(&t->a, &c, 150, 11);
  c = run_config(AOI_RUN_POOL, t->pool, 3, 5, 150);
  pair_open(&t->b, &c, 400, 12);
  c = run_config(AOI_RUN_CALLER, NULL, 2, 3, 150);
  pair_open(&t->c, &c, 120, 13);
}

static void trio_close(trio *t)
{
  pair_close(&t->a);
  pair_close(&t->b);
  pair_close(&t->c);
  assert_int_equal(aoi_pool_destroy(t->pool), 0);
}

/* Every world of the trio is between ticks (not left in flight by a
   refused call) and at its own count of ticks (none ticked). */
static void expect_untouched(trio *t, const int *results, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (results[i] != RESULT_UNSET)
      fail_msg("a refused call wrote results[%zu] = %d", i, results[i]);
  pair *all[3] = {&t->a, &t->b, &t->c};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(stats_tick(all[i]->w), all[i]->ticks);
    assert_int_equal(aoi_tick_poll(all[i]->w), AOI_EINVAL);
  }
}

static void trio_walk(trio *t)
{
  pair_walk(&t->a);
  pair_walk(&t->b);
  pair_walk(&t->c);
}

/* One aoi_tick_many of the three, each checked: what was queued before the
   refused calls is applied now, and no world is still marked as listed. */
static void trio_tick(trio *t)
{
  aoi_world *list[3] = {t->c.w, t->b.w, t->a.w};
  int results[3] = {RESULT_UNSET, RESULT_UNSET, RESULT_UNSET};
  assert_int_equal(aoi_tick_many(list, 3, results), 0);
  pair_expect(&t->c, results[0]);
  pair_expect(&t->b, results[1]);
  pair_expect(&t->a, results[2]);
}

typedef int (*many_call)(aoi_world *const *worlds, size_t n, int *results);

static int call_tick_many(aoi_world *const *worlds, size_t n, int *results)
{
  return aoi_tick_many(worlds, n, results);
}

static int call_tick_many_begin(aoi_world *const *worlds, size_t n,
                                int *results)
{
  (void)results;
  return aoi_tick_many_begin(worlds, n);
}

/* The refusals of aoi_tick_many and aoi_tick_many_begin: AOI_EINVAL for a
   NULL list or results with n > 0, a NULL world, a world listed twice;
   then AOI_EBUSY for a world in flight; EINVAL wins wherever it stands.
   Nothing is ticked, nothing written, nothing left in flight or marked. */
static void test_tick_many_refusals(void **state)
{
  (void)state;
  trio t;
  trio_open(&t);
  trio_tick(&t);
  static const struct {
    const char *name;
    many_call call;
  } calls[] = {{"aoi_tick_many", call_tick_many},
               {"aoi_tick_many_begin", call_tick_many_begin}};
  for (size_t k = 0; k < COUNT_OF(calls); k++) {
    many_call call = calls[k].call;
    bool begin = call == call_tick_many_begin;
    trio_walk(&t);
    int results[4] = {RESULT_UNSET, RESULT_UNSET, RESULT_UNSET, RESULT_UNSET};
    aoi_world *a = t.a.w, *b = t.b.w, *c = t.c.w;

    /* n = 0 needs no list */
    assert_int_equal(call(NULL, 0, NULL), 0);
    assert_int_equal(call((aoi_world *[]){a}, 0, NULL), 0);
    assert_int_equal(call(NULL, 0, results), 0);
    expect_untouched(&t, results, 4);

    assert_int_equal(call(NULL, 2, results), AOI_EINVAL);
    if (!begin) /* (the begin half takes no results) */
      assert_int_equal(call((aoi_world *[]){a, b}, 2, NULL), AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){NULL}, 1, results), AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){a, NULL, b}, 3, results),
                     AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){a, b, NULL}, 3, results),
                     AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){a, b, a}, 3, results), AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){c, c}, 2, results), AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){b, c, a, c}, 4, results),
                     AOI_EINVAL);
    expect_untouched(&t, results, 4);

    /* a in flight: AOI_EBUSY, but AOI_EINVAL first */
    assert_int_equal(aoi_tick_begin(a), 0);
    assert_int_equal(call((aoi_world *[]){a}, 1, results), AOI_EBUSY);
    assert_int_equal(call((aoi_world *[]){b, c, a}, 3, results), AOI_EBUSY);
    assert_int_equal(call((aoi_world *[]){a, b, c}, 3, results), AOI_EBUSY);
    assert_int_equal(call((aoi_world *[]){a, b, b}, 3, results), AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){a, c, NULL}, 3, results),
                     AOI_EINVAL);
    assert_int_equal(call((aoi_world *[]){b, a, c, a}, 4, results),
                     AOI_EINVAL);
    for (int i = 0; i < 4; i++)
      assert_int_equal(results[i], RESULT_UNSET);
    assert_int_equal(stats_tick(b), t.b.ticks);
    assert_int_equal(stats_tick(c), t.c.ticks);
    assert_int_equal(aoi_tick_poll(b), AOI_EINVAL);
    assert_int_equal(aoi_tick_poll(c), AOI_EINVAL);
    pair_expect(&t.a, aoi_tick_end(a));
    expect_untouched(&t, results, 4);

    /* After all that, the queued operations tick as they should. */
    trio_tick(&t);
  }
  trio_close(&t);
}

/* aoi_tick_many_end: AOI_EINVAL (and nothing waited for, nothing written)
   for NULL arguments or a world not in flight; a world begun by either
   half may be ended by the other; while some worlds are in flight the
   others tick, and the worlds in flight refuse everything else. */
static void test_tick_many_halves(void **state)
{
  (void)state;
  trio t;
  trio_open(&t);
  trio_tick(&t);
  aoi_world *a = t.a.w, *b = t.b.w, *c = t.c.w;
  int results[3] = {RESULT_UNSET, RESULT_UNSET, RESULT_UNSET};

  assert_int_equal(aoi_tick_many_end(NULL, 0, NULL), 0);
  assert_int_equal(aoi_tick_many_end((aoi_world *[]){a}, 1, results),
                   AOI_EINVAL);
  expect_untouched(&t, results, 3);

  for (int round = 0; round < 4; round++) {
    trio_walk(&t);
    aoi_world *ab[2] = {a, b};
    assert_int_equal(aoi_tick_many_begin(ab, 2), 0);
    /* in flight: everything else refused */
    assert_int_equal(aoi_move(a, 1, 1, 1), AOI_EBUSY);
    assert_int_equal(aoi_tick(b), AOI_EBUSY);
    assert_int_equal(aoi_tick_begin(a), AOI_EBUSY);
    assert_int_equal(aoi_tick_many_begin(ab, 2), AOI_EBUSY);
    const uint64_t *ids;
    size_t n;
    assert_int_equal(aoi_pending(b, &ids, &n), AOI_EBUSY);
    /* refused ends: nothing waited for, nothing written */
    assert_int_equal(aoi_tick_many_end(NULL, 2, results), AOI_EINVAL);
    assert_int_equal(aoi_tick_many_end(ab, 2, NULL), AOI_EINVAL);
    assert_int_equal(aoi_tick_many_end((aoi_world *[]){a, NULL}, 2, results),
                     AOI_EINVAL);
    assert_int_equal(aoi_tick_many_end((aoi_world *[]){a, b, c}, 3, results),
                     AOI_EINVAL);
    assert_int_equal(aoi_tick_many_end((aoi_world *[]){c, a}, 2, results),
                     AOI_EINVAL);
    for (int i = 0; i < 3; i++)
      assert_int_equal(results[i], RESULT_UNSET);
    int poll = aoi_tick_poll(a);
    assert_true(poll == 0 || poll == 1); /* still in flight */
    /* the caller's world ticks meanwhile, on this thread */
    pair_expect(&t.c, aoi_tick_many((aoi_world *[]){c}, 1, results));
    assert_int_equal(results[0], 0);
    results[0] = RESULT_UNSET;
    switch (round) {
    case 0: /* both halves of aoi_tick_many */
      assert_int_equal(aoi_tick_many_end(ab, 2, results), 0);
      pair_expect(&t.a, results[0]);
      pair_expect(&t.b, results[1]);
      break;
    case 1: /* ended one by one, in the other order */
      pair_expect(&t.b, aoi_tick_end(b));
      pair_expect(&t.a, aoi_tick_end(a));
      break;
    case 2: /* one ended alone, then the other by aoi_tick_many_end */
      pair_expect(&t.a, aoi_tick_end(a));
      assert_int_equal(aoi_tick_many_end(ab, 2, results), AOI_EINVAL);
      assert_int_equal(results[0], RESULT_UNSET);
      assert_int_equal(aoi_tick_many_end((aoi_world *[]){b}, 1, results), 0);
      pair_expect(&t.b, results[0]);
      break;
    default: /* begun by aoi_tick_begin, ended by aoi_tick_many_end */
      pair_expect(&t.a, aoi_tick_end(a));
      pair_expect(&t.b, aoi_tick_end(b));
      trio_walk(&t);
      assert_int_equal(aoi_tick_begin(a), 0);
      assert_int_equal(aoi_tick_begin(c), 0);
      assert_int_equal(aoi_tick_poll(c), 1); /* ran on this thread */
      assert_int_equal(aoi_tick_many_end((aoi_world *[]){c, a}, 2, results),
                       0);
      pair_expect(&t.c, results[0]);
      pair_expect(&t.a, results[1]);
      pair_expect(&t.b, aoi_tick(b));
      break;
    }
    for (int i = 0; i < 3; i++)
      results[i] = RESULT_UNSET;
    assert_int_equal(aoi_tick_many_end(ab, 2, results), AOI_EINVAL);
    expect_untouched(&t, results, 3);
  }
  trio_tick(&t);
  trio_close(&t);
}

/* A world listed twice in aoi_tick_many_end is refused as aoi_tick_many
   and aoi_tick_many_begin refuse it: AOI_EINVAL, and as aoi.h says of a
   call that fails, nothing changed (the world still in flight, nothing
   waited for) and no result written. */
static void test_tick_many_end_refuses_duplicates(void **state)
{
  (void)state;
  trio t;
  trio_open(&t);
  trio_walk(&t);
  aoi_world *a = t.a.w, *b = t.b.w;
  assert_int_equal(aoi_tick_many_begin((aoi_world *[]){a, b}, 2), 0);
  int results[3] = {RESULT_UNSET, RESULT_UNSET, RESULT_UNSET};
  int rc = aoi_tick_many_end((aoi_world *[]){a, b, a}, 3, results);
  int poll = aoi_tick_poll(a);
  /* (end them whatever happened, so that the failure below is clean) */
  if (poll == 0 || poll == 1)
    assert_int_equal(aoi_tick_end(a), 0);
  if (aoi_tick_poll(b) >= 0)
    assert_int_equal(aoi_tick_end(b), 0);
  trio_close(&t);
  if (rc != AOI_EINVAL || results[0] != RESULT_UNSET ||
      results[1] != RESULT_UNSET || results[2] != RESULT_UNSET ||
      (poll != 0 && poll != 1))
    fail_msg("aoi_tick_many_end of a, b, a returned %d, wrote results %d, "
             "%d, %d, and left a %s",
             rc, results[0], results[1], results[2],
             poll == 0 || poll == 1 ? "in flight" : "ended");
}

/* ---- destroying worlds while others tick -------------------------------- */

/* aoi_destroy of a world in flight waits for its tick; the other worlds
   on the pool, begun with it, end with the model's events. Each round
   another world is destroyed (first the large one, whose lanes are tasks
   of the pool), and made again. */
static void test_destroy_while_others_tick(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  const struct {
    aoi_run run;
    unsigned lanes, shards;
    uint64_t n;
    float side;
  } kinds[] = {{AOI_RUN_POOL, 2, 4, 2600, 1000}, /* lane tasks */
               {AOI_RUN_POOL, 3, 5, 300, 200},
               {AOI_RUN_POOL, 1, 1, 60, 100},
               {AOI_RUN_CALLER, 2, 3, 80, 100},
               {AOI_RUN_OWN, 2, 2, 200, 150}};
  enum { KINDS = 5 };
  pair worlds[KINDS];
  counter counters[KINDS];
  aoi_allocator hooks[KINDS];
  for (size_t i = 0; i < KINDS; i++) {
    counter_reset(&counters[i]);
    hooks[i] = counting_allocator(&counters[i]);
    aoi_config c = run_config(kinds[i].run, pool, kinds[i].lanes,
                              kinds[i].shards, kinds[i].side);
    c.allocator = &hooks[i];
    pair_open(&worlds[i], &c, kinds[i].n, 100 + i);
  }
  for (int round = 0; round < 10; round++) {
    size_t victim = (size_t)round % KINDS;
    aoi_world *list[KINDS];
    for (size_t i = 0; i < KINDS; i++) {
      pair_walk(&worlds[i]);
      list[i] = worlds[KINDS - 1 - i].w;
    }
    if (round % 2 == 0) {
      assert_int_equal(aoi_tick_many_begin(list, KINDS), 0);
    } else {
      for (size_t i = 0; i < KINDS; i++)
        assert_int_equal(aoi_tick_begin(list[i]), 0);
    }
    /* the victim goes mid-tick; its allocator gets every byte back */
    assert_int_equal(aoi_destroy(worlds[victim].w), 0);
    worlds[victim].w = NULL;
    char where[64];
    snprintf(where, sizeof(where), "world %zu destroyed in flight", victim);
    expect_all_freed(&counters[victim], where);
    for (size_t i = 0; i < KINDS; i++)
      if (i != victim)
        pair_expect(&worlds[i], aoi_tick_end(worlds[i].w));
    pair_close(&worlds[victim]);
    counter_reset(&counters[victim]);
    aoi_config c = run_config(kinds[victim].run, pool, kinds[victim].lanes,
                              kinds[victim].shards, kinds[victim].side);
    c.allocator = &hooks[victim];
    pair_open(&worlds[victim], &c, kinds[victim].n, 200 + (uint64_t)round);
    pair_expect(&worlds[victim], aoi_tick(worlds[victim].w));
  }
  for (size_t i = 0; i < KINDS; i++)
    pair_close(&worlds[i]);
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

/* The second host thread of test_two_hosts_share_a_pool: worlds of its own
   on the same pool, made, ticked (alone, by aoi_tick_many, or begun and
   destroyed in flight) and destroyed, again and again. It checks that
   watcher 1 sees 2 enter at the first tick, and records what went wrong
   (cmocka asserts on the main thread only). */
typedef struct churner {
  aoi_pool *pool;
  int rounds;
  atomic_int done;
  int failed_line, failed_rc, ticks;
} churner;

#define CHURN_CHECK(h, cond, rc)                                              \
  do {                                                                        \
    if (!(cond) && (h)->failed_line == 0) {                                   \
      (h)->failed_line = __LINE__;                                            \
      (h)->failed_rc = (rc);                                                  \
    }                                                                         \
  } while (0)

static aoi_world *churn_world(churner *h, int i, uint64_t crowd)
{
  aoi_config c = run_config(AOI_RUN_POOL, h->pool, (unsigned)(i % 4),
                            (unsigned)(i % 5), 1000);
  aoi_world *w = NULL;
  int rc = aoi_create(&c, &w);
  CHURN_CHECK(h, rc == 0, rc);
  if (rc != 0)
    return NULL;
  rc = test_add(w, 1, 500, 500, 20, AOI_WATCHER, ALL, ALL);
  CHURN_CHECK(h, rc == 0, rc);
  rc = test_add(w, 2, 510, 500, 0, AOI_MARKER, ALL, ALL);
  CHURN_CHECK(h, rc == 0, rc);
  for (uint64_t id = 3; id < 3 + crowd; id++) {
    /* (below y 400: none near 1 and 2) */
    float x = (float)(id * 7919 % 997), y = (float)(id * 104729 % 400);
    rc = test_add(w, id, x, y, 10, WM, ALL, ALL);
    CHURN_CHECK(h, rc == 0, rc);
  }
  return w;
}

/* After a tick: watcher 1's events are one enter, of 2 at (510, 500). */
static void churn_expect_enter(churner *h, aoi_world *w)
{
  const aoi_event *e = NULL;
  size_t count = 0;
  int rc = aoi_drain(w, 1, &e, &count);
  CHURN_CHECK(h, rc == 0, rc);
  CHURN_CHECK(h, count == 1, (int)count);
  if (rc == 0 && count == 1)
    CHURN_CHECK(h, e[0].id == 2 && e[0].kind == AOI_ENTER && e[0].x == 510 &&
                       e[0].tag == test_tag(2) && e[0].tick == 1,
                (int)e[0].id);
  h->ticks++;
}

static void *churn(void *arg)
{
  churner *h = arg;
  for (int i = 0; i < h->rounds && h->failed_line == 0; i++) {
    uint64_t crowd = i % 3 == 0 ? 2500 : (uint64_t)(i % 50); /* lanes */
    aoi_world *w = churn_world(h, i, crowd), *v = churn_world(h, i + 1, 10);
    if (w == NULL || v == NULL) {
      aoi_destroy(w);
      aoi_destroy(v);
      break;
    }
    int rc, results[2] = {RESULT_UNSET, RESULT_UNSET};
    switch (i % 4) {
    case 0:
      rc = aoi_tick(w);
      CHURN_CHECK(h, rc == 0, rc);
      churn_expect_enter(h, w);
      break;
    case 1:
      rc = aoi_tick_many((aoi_world *[]){v, w}, 2, results);
      CHURN_CHECK(h, rc == 0 && results[0] == 0 && results[1] == 0, rc);
      churn_expect_enter(h, w);
      churn_expect_enter(h, v);
      break;
    case 2: /* destroyed in flight */
      rc = aoi_tick_many_begin((aoi_world *[]){w, v}, 2);
      CHURN_CHECK(h, rc == 0, rc);
      if (rc == 0) {
        rc = aoi_tick_end(v);
        CHURN_CHECK(h, rc == 0, rc);
        churn_expect_enter(h, v);
      }
      break;
    default: /* never ticked */
      break;
    }
    rc = aoi_destroy(w);
    CHURN_CHECK(h, rc == 0, rc);
    rc = aoi_destroy(v);
    CHURN_CHECK(h, rc == 0, rc);
  }
  atomic_store(&h->done, 1);
  return NULL;
}

/* Rule 6: while this thread ticks its worlds on a pool, another makes,
   ticks and destroys worlds on the same pool; both see exact events. */
static void test_two_hosts_share_a_pool(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  pair big, small;
  aoi_config c = run_config(AOI_RUN_POOL, pool, 2, 4, 1000);
  pair_open(&big, &c, 2600, 31);
  c = run_config(AOI_RUN_POOL, pool, 0, 3, 150);
  pair_open(&small, &c, 200, 32);

  churner h = {.pool = pool, .rounds = 24};
  atomic_init(&h.done, 0);
  pthread_t other;
  assert_int_equal(pthread_create(&other, NULL, churn, &h), 0);
  int ticks = 0;
  while (ticks < 6 || !atomic_load(&h.done)) {
    pair_walk(&big);
    pair_walk(&small);
    int results[2] = {RESULT_UNSET, RESULT_UNSET};
    if (ticks % 2 == 0) {
      assert_int_equal(aoi_tick_many((aoi_world *[]){big.w, small.w}, 2,
                                     results),
                       0);
    } else {
      assert_int_equal(aoi_tick_many_begin((aoi_world *[]){small.w, big.w}, 2),
                       0);
      results[0] = aoi_tick_end(big.w);
      results[1] = aoi_tick_end(small.w);
    }
    pair_expect(&big, results[0]);
    pair_expect(&small, results[1]);
    ticks++;
  }
  assert_int_equal(pthread_join(other, NULL), 0);
  if (h.failed_line != 0)
    fail_msg("the second host thread: the check at line %d failed (%d)",
             h.failed_line, h.failed_rc);
  assert_true(h.ticks >= h.rounds / 2);
  pair_close(&big);
  pair_close(&small);
  assert_int_equal(aoi_pool_destroy(pool), 0); /* no world count left */
}

/* ---- delivery callbacks, polls ------------------------------------------ */

typedef struct reentry {
  aoi_world *world, *other;
  aoi_pool *pool;
  int wrong_line, wrong_rc;
  int calls;
  records *got; /* what was delivered, or NULL */
} reentry;

/* Deliveries come segment by segment: puts them in watcher order, each
   watcher's events in theirs (each watcher is delivered once). */
typedef struct keyed_record {
  record r;
  size_t at;
} keyed_record;

static int compare_keyed(const void *a, const void *b)
{
  const keyed_record *x = a, *y = b;
  if (x->r.watcher != y->r.watcher)
    return x->r.watcher < y->r.watcher ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

static void sort_by_watcher(records *r)
{
  keyed_record *k = malloc(sizeof(*k) * (r->count + 1));
  assert_non_null(k);
  for (size_t i = 0; i < r->count; i++)
    k[i] = (keyed_record){r->items[i], i};
  qsort(k, r->count, sizeof(*k), compare_keyed);
  for (size_t i = 0; i < r->count; i++)
    r->items[i] = k[i].r;
  free(k);
}

#define REENTER(r, call)                                                      \
  do {                                                                        \
    int rc_ = (call);                                                         \
    if (rc_ != AOI_EBUSY && (r)->wrong_line == 0) {                           \
      (r)->wrong_line = __LINE__;                                             \
      (r)->wrong_rc = rc_;                                                    \
    }                                                                         \
  } while (0)

/* Every tick call on its own world from inside the callback, alone or in
   a list with another world: AOI_EBUSY, nothing ticked, nothing written. */
static void deliver_ticking(void *user, uint64_t watcher, uint64_t tag,
                            const aoi_event *events, size_t count)
{
  (void)tag;
  reentry *r = user;
  aoi_world *w = r->world;
  int results[2] = {RESULT_UNSET, RESULT_UNSET};
  r->calls++;
  for (size_t i = 0; i < count; i++)
    records_push(r->got, watcher, &events[i]);
  REENTER(r, aoi_tick(w));
  REENTER(r, aoi_tick_begin(w));
  REENTER(r, aoi_tick_poll(w));
  REENTER(r, aoi_tick_end(w));
  REENTER(r, aoi_destroy(w));
  REENTER(r, aoi_pool_destroy(r->pool)); /* (a world is on it) */
  REENTER(r, aoi_tick_many((aoi_world *[]){w}, 1, results));
  REENTER(r, aoi_tick_many((aoi_world *[]){r->other, w}, 2, results));
  REENTER(r, aoi_tick_many_begin((aoi_world *[]){w}, 1));
  REENTER(r, aoi_tick_many_begin((aoi_world *[]){r->other, w}, 2));
  if (results[0] != RESULT_UNSET || results[1] != RESULT_UNSET)
    if (r->wrong_line == 0)
      r->wrong_line = __LINE__;
}

/* Rule 4 on a pool world: a delivery callback that calls a tick function
   of its world gets AOI_EBUSY, and a list with another world ticks neither;
   the events delivered are the model's. */
static void test_callback_on_pool_world_is_busy(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 2;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  pair p, other;
  aoi_config c = run_config(AOI_RUN_POOL, pool, 2, 3, 150);
  pair_open(&p, &c, 300, 41);
  pair_open(&other, &c, 50, 42);
  pair_expect(&other, aoi_tick(other.w));
  for (int t = 0; t < 4; t++) {
    pair_walk(&p);
    assert_int_equal(aoi_tick(p.w), 0);
    records got = {0};
    reentry r = {p.w, other.w, pool, 0, 0, 0, &got};
    for (unsigned g = 0; g < aoi_delivery_segments(p.w); g++)
      assert_int_equal(aoi_deliver(p.w, g, deliver_ticking, &r), 0);
    if (r.wrong_line != 0)
      fail_msg("a call from the callback at line %d returned %d, not "
               "AOI_EBUSY",
               r.wrong_line, r.wrong_rc);
    assert_true(r.calls > 0);
    assert_int_equal(stats_tick(other.w), other.ticks); /* not ticked */
    expect_no_events(p.w); /* all delivered, */
    sort_by_watcher(&got);
    pair_expect_records(&p, &got); /* the model's */
    records_free(&got);
  }
  pair_walk(&p);
  pair_expect(&p, aoi_tick(p.w));
  pair_close(&p);
  pair_close(&other);
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

static void deliver_ending_many(void *user, uint64_t watcher, uint64_t tag,
                                const aoi_event *events, size_t count)
{
  (void)watcher, (void)tag, (void)events, (void)count;
  reentry *r = user;
  int results[1] = {RESULT_UNSET};
  r->calls++;
  REENTER(r, aoi_tick_end(r->world)); /* AOI_EBUSY before AOI_EINVAL */
  REENTER(r, aoi_tick_many_end((aoi_world *[]){r->world}, 1, results));
  if (results[0] != RESULT_UNSET && r->wrong_line == 0)
    r->wrong_line = __LINE__;
}

/* The order of checks (aoi.h: AOI_EINVAL for NULL, then AOI_EBUSY, then
   the call's own): from a delivery callback, aoi_tick_many_end of its
   world is AOI_EBUSY, as aoi_tick_end of it is, not the AOI_EINVAL of a
   world with no tick in flight. */
static void test_tick_many_end_from_a_callback_is_busy(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 2;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  aoi_config c = run_config(AOI_RUN_POOL, pool, 2, 3, 150);
  aoi_world *w = create_or_fail(&c);
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 15, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  reentry r = {w, NULL, pool, 0, 0, 0, NULL};
  for (unsigned g = 0; g < aoi_delivery_segments(w); g++)
    assert_int_equal(aoi_deliver(w, g, deliver_ending_many, &r), 0);
  assert_int_equal(r.calls, 2);
  assert_int_equal(aoi_destroy(w), 0);
  assert_int_equal(aoi_pool_destroy(pool), 0);
  if (r.wrong_line != 0)
    fail_msg("from a delivery callback, the call at line %d returned %d "
             "(%s), not AOI_EBUSY",
             r.wrong_line, r.wrong_rc, aoi_strerror(r.wrong_rc));
}

/* Polls until the tick is done: 1 within ten seconds, 0 before. */
static void poll_until_done(aoi_world *w)
{
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int rc = aoi_tick_poll(w);
    if (rc == 1)
      return;
    assert_int_equal(rc, 0);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 10)
      fail_msg("aoi_tick_poll did not say 1 in ten seconds");
    sched_yield();
  }
}

/* aoi_tick_poll of pool worlds reaches 1 (and stays 1) by itself; of a
   world that runs on the caller, it is 1 at once; AOI_EINVAL before a
   tick is begun and after it ended. */
static void test_poll_pool_worlds(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 2;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  pair big, small, caller;
  aoi_config c = run_config(AOI_RUN_POOL, pool, 2, 4, 1000);
  pair_open(&big, &c, 2600, 51);
  c = run_config(AOI_RUN_POOL, pool, 1, 1, 100);
  pair_open(&small, &c, 50, 52);
  c = run_config(AOI_RUN_CALLER, NULL, 2, 2, 100);
  pair_open(&caller, &c, 50, 53);
  for (int t = 0; t < 6; t++) {
    pair_walk(&big);
    pair_walk(&small);
    pair_walk(&caller);
    assert_int_equal(aoi_tick_poll(big.w), AOI_EINVAL);
    if (t % 2 == 0) {
      assert_int_equal(aoi_tick_begin(big.w), 0);
      assert_int_equal(aoi_tick_begin(small.w), 0);
      assert_int_equal(aoi_tick_begin(caller.w), 0);
    } else {
      assert_int_equal(
          aoi_tick_many_begin((aoi_world *[]){caller.w, big.w, small.w}, 3),
          0);
    }
    assert_int_equal(aoi_tick_poll(caller.w), 1);
    poll_until_done(big.w);
    poll_until_done(small.w);
    assert_int_equal(aoi_tick_poll(big.w), 1);
    pair_expect(&big, aoi_tick_end(big.w));
    pair_expect(&small, aoi_tick_end(small.w));
    pair_expect(&caller, aoi_tick_end(caller.w));
    assert_int_equal(aoi_tick_poll(big.w), AOI_EINVAL);
    assert_int_equal(aoi_tick_end(big.w), AOI_EINVAL);
  }
  pair_close(&big);
  pair_close(&small);
  pair_close(&caller);
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

/* ---- the same bytes, alone and shared ----------------------------------- */

/* One stream of operations into a world ticked alone (AOI_RUN_OWN, one
   thread, one shard) and into copies on pools of each size, with other
   lanes and shards, and on the calling thread; each pool also ticks two
   busy worlds of their own traffic. After each tick every copy's stats,
   pending list and each watcher's events are the alone world's, byte for
   byte. */
#define SAME_POPULATION 2600u
#define SAME_IDS 3300u
#define SAME_TICKS 24
#define SAME_POOLS 5
#define SAME_BUSY 2
static const unsigned same_pool_sizes[SAME_POOLS] = {1, 2, 3, 5, 8};
/* The copies' lanes and shards: one on each pool, the last on the caller. */
static const struct {
  unsigned lanes, shards;
} same_layouts[SAME_POOLS + 1] = {{0, 0}, {2, 3}, {3, 8}, {4, 16}, {8, 9},
                                  {2, 5}};
#define SAME_WORLDS (SAME_POOLS + 1)

typedef struct same_run {
  aoi_pool *pools[SAME_POOLS];
  aoi_world *alone;
  aoi_world *copies[SAME_WORLDS];
  pair busy[SAME_POOLS][SAME_BUSY];
  uint64_t rng;
  bool live[SAME_IDS + 2];
  float x[SAME_IDS + 2], y[SAME_IDS + 2]; /* (move_many moves id + 1) */
  uint64_t events; /* compared */
} same_run;

static same_run *same_now; /* freed by the teardown when the test fails */

static void same_free(same_run *s)
{
  if (s == NULL)
    return;
  aoi_destroy(s->alone);
  for (size_t i = 0; i < SAME_WORLDS; i++)
    aoi_destroy(s->copies[i]);
  for (size_t k = 0; k < SAME_POOLS; k++) {
    for (size_t b = 0; b < SAME_BUSY; b++) {
      aoi_destroy(s->busy[k][b].w);
      model_destroy(s->busy[k][b].m);
      free(s->busy[k][b].live);
      free(s->busy[k][b].x);
      free(s->busy[k][b].y);
    }
    aoi_pool_destroy(s->pools[k]);
  }
  free(s);
}

static int same_teardown(void **state)
{
  (void)state;
  same_free(same_now);
  same_now = NULL;
  return 0;
}

/* One operation on the alone world and every copy, which must return the
   same code. */
typedef enum same_op_kind {
  OP_ADD,
  OP_MOVE,
  OP_MOVE_REF,
  OP_MOVE_MANY,
  OP_REMOVE,
  OP_RADIUS,
  OP_LAYERS,
  OP_APPEAL,
  OP_CAP,
  OP_TAG
} same_op_kind;

typedef struct same_op {
  same_op_kind kind;
  uint64_t id, tag;
  float x, y, radius;
  unsigned flags;
  uint32_t a, b;
} same_op;

/* `done`: what aoi_move_many reports (else 0). */
static int same_apply(aoi_world *w, const same_op *op, size_t *done)
{
  *done = 0;
  switch (op->kind) {
  case OP_ADD:
    return aoi_add(w, &(aoi_entity){.id = op->id,
                                    .tag = op->tag,
                                    .x = op->x,
                                    .y = op->y,
                                    .radius = op->radius,
                                    .flags = op->flags,
                                    .layers = op->a,
                                    .interest = op->b});
  case OP_MOVE:
    return aoi_move(w, op->id, op->x, op->y);
  case OP_MOVE_REF: {
    aoi_ref ref = 0;
    int rc = aoi_ref_of(w, op->id, &ref);
    return rc != 0 ? rc : aoi_move_ref(w, ref, op->x, op->y);
  }
  case OP_MOVE_MANY: {
    aoi_move_op moves[2] = {{op->id, op->x, op->y},
                            {op->id + 1, op->y, op->x}};
    return aoi_move_many(w, moves, 2, done);
  }
  case OP_REMOVE:
    return aoi_remove(w, op->id);
  case OP_RADIUS:
    return aoi_set_radius(w, op->id, op->radius);
  case OP_LAYERS:
    return aoi_set_layers(w, op->id, op->a, op->b);
  case OP_APPEAL:
    return aoi_set_appeal(w, op->id, op->radius);
  case OP_CAP:
    return aoi_set_cap(w, op->id, op->a);
  default:
    return aoi_set_tag(w, op->id, op->tag);
  }
}

static void same_do(same_run *s, const same_op *op)
{
  size_t want_done, got_done;
  int want = same_apply(s->alone, op, &want_done);
  for (size_t i = 0; i < SAME_WORLDS; i++) {
    int got = same_apply(s->copies[i], op, &got_done);
    if (got != want || got_done != want_done)
      fail_msg("operation %d on id %llu: copy %zu returned %d (%zu done), "
               "the world alone %d (%zu)",
               (int)op->kind, (unsigned long long)op->id, i, got, got_done,
               want, want_done);
  }
  if (op->kind == OP_MOVE_MANY) {
    if (want_done >= 1) {
      s->x[op->id] = op->x;
      s->y[op->id] = op->y;
    }
    if (want_done == 2) {
      s->x[op->id + 1] = op->y;
      s->y[op->id + 1] = op->x;
    }
    return;
  }
  if (want != 0)
    return;
  if (op->kind == OP_REMOVE) {
    s->live[op->id] = false;
    return;
  }
  if (op->kind == OP_ADD)
    s->live[op->id] = true;
  if (op->kind == OP_ADD || op->kind == OP_MOVE || op->kind == OP_MOVE_REF) {
    s->x[op->id] = op->x;
    s->y[op->id] = op->y;
  }
}

static float same_coordinate(same_run *s)
{
  return (float)rng_below(&s->rng, 1000 * 16) / 16;
}

static void same_add(same_run *s, uint64_t id)
{
  size_t u = rng_below(&s->rng, 10);
  same_op op = {OP_ADD, id, rng_next(&s->rng), same_coordinate(s),
                same_coordinate(s), (float)(4 + rng_below(&s->rng, 20)),
                u == 0 ? AOI_MARKER : u == 1 ? AOI_WATCHER : WM,
                u == 2 ? 1 : ALL, u == 3 ? 2 : ALL};
  same_do(s, &op);
}

static void same_ops(same_run *s, int tick)
{
  uint64_t *r = &s->rng;
  if (tick == 0) {
    for (uint64_t id = 1; id <= SAME_POPULATION; id++)
      same_add(s, id);
    return;
  }
  bool everybody = rng_below(r, 2) == 0;
  size_t count = everybody ? SAME_IDS : 300 + rng_below(r, 600);
  for (size_t k = 0; k < count; k++) {
    uint64_t id = everybody ? 1 + k : 1 + rng_below(r, SAME_IDS);
    same_op op = {OP_MOVE, id, 0, 0, 0, 0, 0, 0, 0};
    size_t u = rng_below(r, 100);
    if (!s->live[id]) {
      if (u < 30 || everybody)
        continue;
      if (u < 80) {
        same_add(s, id);
        continue;
      }
      op.kind = (same_op_kind)rng_below(r, OP_TAG + 1); /* ENOENT or add */
      op.x = op.y = 5;
      op.radius = 3;
      op.flags = WM;
      op.a = op.b = ALL;
      same_do(s, &op);
      continue;
    }
    if (everybody || u < 60) {
      op.kind = u % 3 == 0 ? OP_MOVE_REF : OP_MOVE;
      op.x = s->x[id] + (float)rng_below(r, 161) / 16 - 5;
      op.y = s->y[id] + (float)rng_below(r, 161) / 16 - 5;
    } else if (u < 64) {
      op.kind = OP_MOVE;
      op.x = same_coordinate(s);
      op.y = same_coordinate(s);
    } else if (u < 67) {
      op.kind = OP_MOVE_MANY;
      op.x = same_coordinate(s);
      op.y = same_coordinate(s);
    } else if (u < 72) {
      op.kind = OP_REMOVE;
    } else if (u < 76) {
      op.kind = OP_REMOVE;
      same_do(s, &op);
      same_add(s, id); /* respawned before the tick */
      continue;
    } else if (u < 81) {
      op.kind = OP_RADIUS;
      op.radius = (float)rng_below(r, 31);
    } else if (u < 85) {
      op.kind = OP_LAYERS;
      op.a = rng_below(r, 2) ? ALL : 1 + (uint32_t)rng_below(r, 3);
      op.b = rng_below(r, 2) ? ALL : 1 + (uint32_t)rng_below(r, 3);
    } else if (u < 90) {
      op.kind = OP_APPEAL;
      op.radius = (float)rng_below(r, 40); /* > 30: AOI_ERADIUS */
    } else if (u < 95) {
      op.kind = OP_CAP;
      op.a = (uint32_t)rng_below(r, 6);
    } else {
      op.kind = OP_TAG;
      op.tag = rng_next(r);
    }
    same_do(s, &op);
  }
}

/* The busy worlds' own traffic, and their delivery (not compared). */
static void deliver_count(void *user, uint64_t watcher, uint64_t tag,
                          const aoi_event *events, size_t count)
{
  (void)watcher, (void)tag, (void)events;
  *(size_t *)user += count;
}

static void busy_deliver(pair *p)
{
  size_t delivered = 0;
  for (unsigned g = 0; g < aoi_delivery_segments(p->w); g++)
    assert_int_equal(aoi_deliver(p->w, g, deliver_count, &delivered), 0);
  assert_int_equal(model_tick(p->m), 0);
  const model_event *me;
  assert_int_equal(delivered, model_events(p->m, &me)); /* the count */
}

/* Every copy against the world alone: stats, pending, each watcher's
   events byte for byte. */
static void same_compare(same_run *s, int tick)
{
  aoi_stats want;
  assert_int_equal(aoi_world_stats(s->alone, &want), 0);
  assert_int_equal(want.tick, (uint64_t)tick + 1);
  for (size_t i = 0; i < SAME_WORLDS; i++) {
    aoi_stats got;
    assert_int_equal(aoi_world_stats(s->copies[i], &got), 0);
    if (got.tick != want.tick || got.entities != want.entities ||
        got.watchers != want.watchers || got.events != want.events)
      fail_msg("tick %d, copy %zu: stats tick %llu entities %llu watchers "
               "%llu events %llu; alone %llu %llu %llu %llu",
               tick, i, (unsigned long long)got.tick,
               (unsigned long long)got.entities,
               (unsigned long long)got.watchers,
               (unsigned long long)got.events, (unsigned long long)want.tick,
               (unsigned long long)want.entities,
               (unsigned long long)want.watchers,
               (unsigned long long)want.events);
  }
  if (tick % 5 == 3)
    return; /* not drained: the outboxes pile up, alike */
  const uint64_t *want_ids;
  size_t want_n;
  assert_int_equal(aoi_pending(s->alone, &want_ids, &want_n), 0);
  uint64_t *ids = malloc(sizeof(uint64_t) * (want_n + 1));
  assert_non_null(ids);
  memcpy(ids, want_ids, sizeof(uint64_t) * want_n);
  for (size_t i = 0; i < SAME_WORLDS; i++) {
    const uint64_t *got_ids;
    size_t got_n;
    assert_int_equal(aoi_pending(s->copies[i], &got_ids, &got_n), 0);
    if (got_n != want_n ||
        memcmp(got_ids, ids, sizeof(uint64_t) * want_n) != 0)
      fail_msg("tick %d, copy %zu: %zu watchers pending, %zu alone, or "
               "others",
               tick, i, got_n, want_n);
  }
  for (size_t k = 0; k < want_n; k++) {
    const aoi_event *want_events;
    size_t want_count;
    assert_int_equal(aoi_drain(s->alone, ids[k], &want_events, &want_count),
                     0);
    for (size_t i = 0; i < SAME_WORLDS; i++) {
      const aoi_event *got_events;
      size_t got_count;
      assert_int_equal(aoi_drain(s->copies[i], ids[k], &got_events,
                                 &got_count),
                       0);
      if (got_count != want_count ||
          memcmp(got_events, want_events, sizeof(aoi_event) * want_count) !=
              0)
        fail_msg("tick %d, copy %zu (pool of %u, lanes %u, shards %u): "
                 "watcher %llu's %zu events differ from the %zu of the "
                 "world alone",
                 tick, i, i < SAME_POOLS ? same_pool_sizes[i] : 0,
                 same_layouts[i].lanes, same_layouts[i].shards,
                 (unsigned long long)ids[k], got_count, want_count);
    }
    s->events += want_count;
  }
  free(ids);
}

static void test_same_bytes_alone_and_shared(void **state)
{
  (void)state;
  same_run *s = calloc(1, sizeof(*s));
  assert_non_null(s);
  same_now = s;
  s->rng = 0x51ab1e;
  aoi_config c = run_config(AOI_RUN_OWN, NULL, 1, 1, 1000);
  s->alone = create_or_fail(&c);
  for (size_t k = 0; k < SAME_POOLS; k++) {
    aoi_pool_config pc;
    aoi_pool_config_default(&pc);
    pc.threads = same_pool_sizes[k];
    assert_int_equal(aoi_pool_create(&pc, &s->pools[k]), 0);
  }
  for (size_t i = 0; i < SAME_WORLDS; i++) {
    c = run_config(i < SAME_POOLS ? AOI_RUN_POOL : AOI_RUN_CALLER,
                   i < SAME_POOLS ? s->pools[i] : NULL, same_layouts[i].lanes,
                   same_layouts[i].shards, 1000);
    s->copies[i] = create_or_fail(&c);
  }
  for (size_t k = 0; k < SAME_POOLS; k++)
    for (size_t b = 0; b < SAME_BUSY; b++) {
      c = run_config(AOI_RUN_POOL, s->pools[k], b == 0 ? 0 : 2,
                     b == 0 ? 0 : 5, b == 0 ? 100 : 400);
      pair_open(&s->busy[k][b], &c, b == 0 ? 40 : 800, 1000 + k * 2 + b);
    }

  for (int tick = 0; tick < SAME_TICKS; tick++) {
    same_ops(s, tick);
    aoi_world *list[SAME_WORLDS + SAME_POOLS * SAME_BUSY];
    int results[SAME_WORLDS + SAME_POOLS * SAME_BUSY];
    size_t n = 0;
    for (size_t k = 0; k < SAME_POOLS; k++) {
      for (size_t b = 0; b < SAME_BUSY; b++) {
        pair_walk(&s->busy[k][b]);
        list[n++] = s->busy[k][b].w;
      }
      list[n++] = s->copies[k];
    }
    list[n++] = s->copies[SAME_POOLS];
    for (size_t k = n; k > 1; k--) { /* pools interleaved */
      size_t j = rng_below(&s->rng, k);
      aoi_world *t = list[k - 1];
      list[k - 1] = list[j];
      list[j] = t;
    }
    for (size_t k = 0; k < n; k++)
      results[k] = RESULT_UNSET;
    switch (tick % 3) {
    case 0: /* alone, then all the others at once */
      assert_int_equal(aoi_tick(s->alone), 0);
      assert_int_equal(aoi_tick_many(list, n, results), 0);
      break;
    case 1: /* all the others begun, the alone one ticked meanwhile */
      assert_int_equal(aoi_tick_many_begin(list, n), 0);
      assert_int_equal(aoi_tick(s->alone), 0);
      for (size_t k = n; k-- > 0;)
        results[k] = aoi_tick_end(list[k]);
      break;
    default: /* a list a pool (pools differ in how they run a list) */
      assert_int_equal(aoi_tick_begin(s->alone), 0);
      n = 0;
      for (size_t k = 0; k < SAME_POOLS; k++) {
        aoi_world *one[1 + SAME_BUSY] = {s->copies[k], s->busy[k][0].w,
                                         s->busy[k][1].w};
        for (size_t i = 0; i <= SAME_BUSY; i++)
          results[n + i] = RESULT_UNSET;
        assert_int_equal(aoi_tick_many(one, 1 + SAME_BUSY, results + n), 0);
        n += 1 + SAME_BUSY;
      }
      results[n++] = aoi_tick(s->copies[SAME_POOLS]);
      assert_int_equal(aoi_tick_end(s->alone), 0);
      break;
    }
    for (size_t k = 0; k < n; k++)
      assert_int_equal(results[k], 0);
    same_compare(s, tick);
    for (size_t k = 0; k < SAME_POOLS; k++)
      for (size_t b = 0; b < SAME_BUSY; b++)
        busy_deliver(&s->busy[k][b]);
  }
  assert_true(s->events > 10000);
  if (getenv("AOI_TEST_VERBOSE") != NULL)
    fprintf(stderr, "same bytes: %llu events compared, %u copies, %d ticks\n",
            (unsigned long long)s->events, SAME_WORLDS, SAME_TICKS);
  same_now = NULL;
  same_free(s);
}

/* ---- aoi_deliver_many and aoi_deliver_many_slots ------------------------ */

/* What the pool threads delivered: every event, under a lock. With slots,
   each watcher's slots expanded here as aoi_deliver would. */
typedef struct collector {
  pthread_mutex_t lock;
  records got;
  size_t calls, slot_calls; /* by aoi_deliver_fn, by slots */
  bool overflow; /* a watcher with more events than a world's entities */
} collector;

static void collect(void *user, uint64_t watcher, uint64_t tag,
                    const aoi_event *events, size_t count)
{
  (void)tag;
  collector *c = user;
  pthread_mutex_lock(&c->lock);
  c->calls++;
  for (size_t i = 0; i < count; i++)
    records_push(&c->got, watcher, &events[i]);
  pthread_mutex_unlock(&c->lock);
}

static void collect_slots(void *user, const aoi_slot_events *e)
{
  collector *c = user;
  aoi_event events[4 * 150];
  size_t n = e->leaves + e->enters + e->moves;
  pthread_mutex_lock(&c->lock);
  if (n > 4 * 150) { /* (reported on the main thread) */
    c->overflow = true;
    pthread_mutex_unlock(&c->lock);
    return;
  }
  slot_events_expand(e, events);
  c->slot_calls++;
  for (size_t i = 0; i < n; i++)
    records_push(&c->got, e->watcher, &events[i]);
  pthread_mutex_unlock(&c->lock);
}

/* Worlds of disjoint ids on a pool (1-3 lanes) and one run by the caller,
   ticked together and delivered by aoi_deliver_many, or by
   aoi_deliver_many_slots: every watcher gets exactly the events its twin
   world, delivered segment by segment with aoi_deliver, gets, ticks that
   nobody delivered (backlogs) and removals between a tick and its
   delivery included. */
static void test_deliver_many_is_deliver(void **state)
{
  (void)state;
  enum { WORLDS = 4, N = 150, TICKS = 12 };
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  for (int slots = 0; slots < 2; slots++) {
    aoi_world *many[WORLDS], *twin[WORLDS];
    for (unsigned k = 0; k < WORLDS; k++) {
      aoi_config c = run_config(k + 1 < WORLDS ? AOI_RUN_POOL : AOI_RUN_CALLER,
                                pool, k + 1 < WORLDS ? k + 1 : 1, 2 * k + 1,
                                150);
      many[k] = create_or_fail(&c);
      twin[k] = create_or_fail(&c);
    }
    uint64_t rng = 7 + (uint64_t)slots;
    float x[WORLDS][N + 1], y[WORLDS][N + 1];
    bool live[WORLDS][N + 1];
    for (unsigned k = 0; k < WORLDS; k++)
      for (uint64_t i = 1; i <= N; i++) {
        uint64_t id = k * 1000 + i;
        x[k][i] = (float)rng_below(&rng, 150);
        y[k][i] = (float)rng_below(&rng, 150);
        live[k][i] = true;
        unsigned flags = i % 5 == 0 ? AOI_MARKER : WM;
        assert_int_equal(test_add(many[k], id, x[k][i], y[k][i], 20, flags,
                                  ALL, ALL),
                         0);
        assert_int_equal(test_add(twin[k], id, x[k][i], y[k][i], 20, flags,
                                  ALL, ALL),
                         0);
      }
    collector c = {.got = {0}}, want = {.got = {0}};
    assert_int_equal(pthread_mutex_init(&c.lock, NULL), 0);
    assert_int_equal(pthread_mutex_init(&want.lock, NULL), 0);
    int refused[WORLDS] = {RESULT_UNSET, RESULT_UNSET, RESULT_UNSET,
                           RESULT_UNSET};
    assert_int_equal(aoi_deliver_many_slots(many, WORLDS, NULL, collect, &c,
                                            refused),
                     AOI_EINVAL);
    assert_int_equal(aoi_deliver_many_slots(many, WORLDS, collect_slots, NULL,
                                            &c, refused),
                     AOI_EINVAL);
    assert_int_equal(aoi_deliver_many(many, WORLDS, NULL, &c, refused),
                     AOI_EINVAL);
    assert_int_equal(refused[0], RESULT_UNSET);
    for (int t = 0; t <= TICKS; t++) {
      bool last = t == TICKS; /* no tick: what is left, delivered */
      for (unsigned k = 0; k < WORLDS && !last; k++)
        for (uint64_t i = 1; i <= N; i++) {
          uint64_t id = k * 1000 + i;
          if (!live[k][i])
            continue;
          x[k][i] += (float)rng_below(&rng, 9) - 4;
          y[k][i] += (float)rng_below(&rng, 9) - 4;
          assert_int_equal(aoi_move(many[k], id, x[k][i], y[k][i]), 0);
          assert_int_equal(aoi_move(twin[k], id, x[k][i], y[k][i]), 0);
        }
      int results[WORLDS];
      if (!last) {
        assert_int_equal(aoi_tick_many(many, WORLDS, results), 0);
        for (unsigned k = 0; k < WORLDS; k++)
          assert_int_equal(aoi_tick(twin[k]), 0);
      }
      if (t % 4 == 1 && !last)
        continue; /* nobody delivers: the next delivery takes backlogs */
      if (t % 5 == 2) /* a watcher removed with its events undelivered */
        for (unsigned k = 0; k < WORLDS; k++) {
          uint64_t i = 1 + (uint64_t)t % N;
          if (!live[k][i] || i % 5 == 0)
            continue;
          live[k][i] = false;
          assert_int_equal(aoi_remove(many[k], k * 1000 + i), 0);
          assert_int_equal(aoi_remove(twin[k], k * 1000 + i), 0);
        }
      for (int i = 0; i < WORLDS; i++)
        results[i] = RESULT_UNSET;
      if (slots)
        assert_int_equal(aoi_deliver_many_slots(many, WORLDS, collect_slots,
                                                collect, &c, results),
                         0);
      else
        assert_int_equal(aoi_deliver_many(many, WORLDS, collect, &c, results),
                         0);
      for (unsigned k = 0; k < WORLDS; k++) {
        assert_int_equal(results[k], 0);
        for (unsigned g = 0; g < aoi_delivery_segments(twin[k]); g++)
          assert_int_equal(aoi_deliver(twin[k], g, collect, &want), 0);
      }
    }
    for (unsigned k = 0; k < WORLDS; k++)
      expect_no_events(many[k]);
    assert_false(c.overflow);
    sort_by_watcher(&c.got);
    sort_by_watcher(&want.got);
    assert_true(want.got.count > 0);
    assert_int_equal(c.got.count, want.got.count);
    if (memcmp(c.got.items, want.got.items,
               sizeof(record) * want.got.count) != 0)
      fail_msg("aoi_deliver_many%s delivered other events than aoi_deliver",
               slots ? "_slots" : "");
    /* with slots, most by slots and the backlogs expanded */
    assert_true(slots ? c.slot_calls > 0 && c.calls > 0 : c.slot_calls == 0);
    for (unsigned k = 0; k < WORLDS; k++) {
      assert_int_equal(aoi_destroy(many[k]), 0);
      assert_int_equal(aoi_destroy(twin[k]), 0);
    }
    records_free(&c.got);
    records_free(&want.got);
    pthread_mutex_destroy(&c.lock);
    pthread_mutex_destroy(&want.lock);
  }
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_config),
      cmocka_unit_test(test_pool_threads),
      cmocka_unit_test(test_pool_busy_while_worlds_on_it),
      cmocka_unit_test(test_tick_many_refusals),
      cmocka_unit_test(test_tick_many_halves),
      cmocka_unit_test(test_tick_many_end_refuses_duplicates),
      cmocka_unit_test(test_destroy_while_others_tick),
      cmocka_unit_test(test_two_hosts_share_a_pool),
      cmocka_unit_test(test_callback_on_pool_world_is_busy),
      cmocka_unit_test(test_deliver_many_is_deliver),
      cmocka_unit_test(test_tick_many_end_from_a_callback_is_busy),
      cmocka_unit_test(test_poll_pool_worlds),
      cmocka_unit_test_teardown(test_same_bytes_alone_and_shared,
                                same_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
