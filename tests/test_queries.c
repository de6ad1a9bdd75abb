/*
 * test_queries.c: the contract of the queries (aoi_view, aoi_watchers_of,
 * aoi_query_circle) and of aoi_world_stats: answers as of the last tick,
 * ids ascending, operations submitted since not seen and a removed id
 * AOI_ENOENT; the whole count whatever the capacity, nothing written past
 * it; the circle's argument checks; and the statistics (tick, threads,
 * shards, entities, watchers, per-shard counts, events, handoffs) on every
 * layout, and the CPU times of measure_cpu (work_ns, span_ns) wherever the
 * ticks run. (Queries under layer masks: test_events; queries against a
 * brute-force count: test_events' crowd.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "aoi.h"
#include "api_support.h"
#include "support.h"

/* ---- queries ------------------------------------------------------------ */

static void test_queries_answer_last_tick(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 100);
    answer a;
    /* A small town across the map's middle. */
    assert_int_equal(test_add(w, 10, 50, 50, 30, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, 5, 30, 50, 10, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, 30, 70, 50, 25, AOI_WATCHER, ALL, ALL), 0);
    assert_int_equal(test_add(w, 20, 50, 80, 0, AOI_MARKER, ALL, ALL), 0);
    assert_int_equal(test_add(w, 40, 5, 5, 0, AOI_MARKER, ALL, ALL), 0);

    /* Before the first tick nothing is seen. */
    EXPECT_EMPTY_VIEW(w, 10);
    watchers_of(w, 20, &a);
    expect_ids(&a, NULL, 0);
    circle(w, 50, 50, 100, ALL, &a);
    expect_ids(&a, NULL, 0);

    assert_int_equal(aoi_tick(w), 0);
    EXPECT_VIEW(w, 10, 5, 20);
    EXPECT_EMPTY_VIEW(w, 5); /* 10 is 20 away, radius 10 */
    EXPECT_VIEW(w, 30, 10);
    EXPECT_EMPTY_VIEW(w, 20); /* a marker only */
    watchers_of(w, 10, &a);
    {
      static const uint64_t want[] = {30};
      expect_ids(&a, want, COUNT_OF(want));
    }
    watchers_of(w, 20, &a);
    {
      static const uint64_t want[] = {10};
      expect_ids(&a, want, COUNT_OF(want));
    }
    watchers_of(w, 30, &a); /* not a marker */
    expect_ids(&a, NULL, 0);
    circle(w, 50, 50, 30, ALL, &a); /* inclusive: 20 and 5 at exactly 30 */
    {
      static const uint64_t want[] = {5, 10, 20};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 50, 50, nextafterf(30, 0), ALL, &a);
    {
      static const uint64_t want[] = {5, 10};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 8, 9, 5, ALL, &a); /* (3, 4) away from 40 */
    {
      static const uint64_t want[] = {40};
      expect_ids(&a, want, COUNT_OF(want));
    }

    /* Operations submitted now are not seen until the next tick. */
    assert_int_equal(aoi_move(w, 20, 5, 6), 0);
    assert_int_equal(aoi_move(w, 5, 90, 90), 0);
    assert_int_equal(aoi_set_radius(w, 30, 0), 0);
    assert_int_equal(aoi_set_layers(w, 10, 0, 0), 0);
    assert_int_equal(aoi_remove(w, 40), 0);
    assert_int_equal(test_add(w, 50, 50, 51, 40, WM, ALL, ALL), 0);
    EXPECT_VIEW(w, 10, 5, 20);
    EXPECT_VIEW(w, 30, 10);
    EXPECT_EMPTY_VIEW(w, 50);
    watchers_of(w, 50, &a);
    expect_ids(&a, NULL, 0);
    watchers_of(w, 20, &a);
    {
      static const uint64_t want[] = {10};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 50, 50, 30, ALL, &a);
    {
      static const uint64_t want[] = {5, 10, 20};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 8, 9, 5, ALL, &a); /* 40 as of the last tick; not 20 yet */
    {
      static const uint64_t want[] = {40};
      expect_ids(&a, want, COUNT_OF(want));
    }
    /* The removed entity is not live: ENOENT, and nothing written. */
    a.count = 999;
    assert_int_equal(aoi_view(w, 40, a.ids, MAX_IDS, &a.count), AOI_ENOENT);
    assert_int_equal(aoi_watchers_of(w, 40, a.ids, MAX_IDS, &a.count),
                     AOI_ENOENT);
    assert_int_equal(aoi_view(w, 12345, a.ids, MAX_IDS, &a.count),
                     AOI_ENOENT);
    assert_int_equal(a.count, 999);

    assert_int_equal(aoi_tick(w), 0);
    EXPECT_EMPTY_VIEW(w, 10); /* interest 0 */
    EXPECT_EMPTY_VIEW(w, 30); /* radius 0 */
    /* 10 is in no layer now, 5 and 20 are out of 50's reach. */
    EXPECT_EMPTY_VIEW(w, 50);
    watchers_of(w, 20, &a);
    expect_ids(&a, NULL, 0);
    circle(w, 8, 9, 5, ALL, &a);
    {
      static const uint64_t want[] = {20};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 50, 50, 30, ALL, &a);
    {
      static const uint64_t want[] = {50}; /* 10 is in no layer */
      expect_ids(&a, want, COUNT_OF(want));
    }
    aoi_destroy(w);
  }
}

static void test_query_capacity(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){2, 3}, 100);
  /* Watcher 100 sees 9..1 (added in descending order); 0 watches all. */
  for (uint64_t id = 9; id >= 1; id--)
    assert_int_equal(test_add(w, id, 40 + (float)id, 50, 0, AOI_MARKER, ALL,
                             ALL),
                     0);
  assert_int_equal(test_add(w, 100, 45, 45, 20, AOI_WATCHER, ALL, ALL), 0);
  assert_int_equal(test_add(w, 0, 45, 55, 20, AOI_WATCHER, ALL, ALL), 0);
  assert_int_equal(test_add(w, 200, 45, 52, 20, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);

  uint64_t buffer[16];
  size_t count;
  for (size_t capacity = 0; capacity <= 12; capacity++) {
    for (size_t i = 0; i < 16; i++)
      buffer[i] = SENTINEL;
    count = 777;
    assert_int_equal(aoi_view(w, 100, buffer, capacity, &count), 0);
    assert_int_equal(count, 10);
    for (size_t i = 0; i < 16; i++) {
      uint64_t want = i < capacity && i < 10 ? (i < 9 ? i + 1 : 200) : SENTINEL;
      assert_int_equal(buffer[i], want);
    }

    for (size_t i = 0; i < 16; i++)
      buffer[i] = SENTINEL;
    assert_int_equal(aoi_watchers_of(w, 5, buffer, capacity, &count), 0);
    assert_int_equal(count, 3);
    static const uint64_t watchers[] = {0, 100, 200};
    for (size_t i = 0; i < 16; i++)
      assert_int_equal(buffer[i], i < capacity && i < 3 ? watchers[i]
                                                        : SENTINEL);

    for (size_t i = 0; i < 16; i++)
      buffer[i] = SENTINEL;
    assert_int_equal(aoi_query_circle(w, 45, 50, 100, ALL, buffer, capacity,
                                      &count),
                     0);
    assert_int_equal(count, 10);
    for (size_t i = 0; i < 16; i++) {
      uint64_t want = i < capacity && i < 10 ? (i < 9 ? i + 1 : 200) : SENTINEL;
      assert_int_equal(buffer[i], want);
    }
  }
  count = 777;
  assert_int_equal(aoi_view(w, 100, NULL, 0, &count), 0);
  assert_int_equal(count, 10);
  count = 777;
  assert_int_equal(aoi_watchers_of(w, 1, NULL, 0, &count), 0);
  assert_int_equal(count, 3);

  /* Bad query arguments. */
  count = 777;
  assert_int_equal(aoi_query_circle(w, NAN, 0, 1, ALL, buffer, 16, &count),
                   AOI_ECOORD);
  assert_int_equal(aoi_query_circle(w, 0, INFINITY, 1, ALL, buffer, 16,
                                    &count),
                   AOI_ECOORD);
  assert_int_equal(aoi_query_circle(w, NAN, 0, -1, ALL, buffer, 16, &count),
                   AOI_ECOORD);
  assert_int_equal(aoi_query_circle(w, 0, 0, -1, ALL, buffer, 16, &count),
                   AOI_ERADIUS);
  assert_int_equal(aoi_query_circle(w, 0, 0, NAN, ALL, buffer, 16, &count),
                   AOI_ERADIUS);
  /* The world's max_radius (100) bounds a query as it bounds a view. */
  assert_int_equal(aoi_query_circle(w, 0, 0, nextafterf(100, INFINITY), ALL,
                                    buffer, 16, &count),
                   AOI_ERADIUS);
  assert_int_equal(aoi_query_circle(w, 0, 0, INFINITY, ALL, buffer, 16,
                                    &count),
                   AOI_ERADIUS);
  assert_int_equal(count, 777);
  assert_int_equal(aoi_query_circle(w, 45, 50, 100, ALL, buffer, 16, &count),
                   0);
  assert_true(count > 0);
  aoi_destroy(w);
}

/* ---- statistics --------------------------------------------------------- */

static void expect_stats(aoi_world *w, layout l, uint64_t tick,
                         uint64_t entities, uint64_t watchers)
{
  aoi_stats s;
  memset(&s, 0xa5, sizeof(s));
  assert_int_equal(aoi_world_stats(w, &s), 0);
  assert_int_equal(s.tick, tick);
  assert_int_equal(s.threads, l.threads);
  assert_int_equal(s.shards, l.shards ? l.shards : l.threads);
  assert_int_equal(s.entities, entities);
  assert_int_equal(s.watchers, watchers);
  assert_non_null(s.shard_entities);
  assert_non_null(s.shard_ns);
  uint64_t sum = 0;
  for (unsigned i = 0; i < s.shards; i++)
    sum += s.shard_entities[i];
  assert_int_equal(sum, entities);
  if (s.shards == 1) {
    assert_int_equal(s.ghosts, 0);
    assert_int_equal(s.handoffs, 0);
    aoi_shard_info info;
    assert_int_equal(aoi_shard(w, 0, &info), 0);
    assert_true(info.ghost_reach == 0);
  }
}

static void test_stats(void **state)
{
  (void)state;
  static const layout more[] = {{1, 0}, {3, 0}};
  for (size_t l = 0; l < COUNT_OF(layouts) + COUNT_OF(more); l++) {
    layout lay =
        l < COUNT_OF(layouts) ? layouts[l] : more[l - COUNT_OF(layouts)];
    aoi_world *w = world_for(lay, 30);
    expect_stats(w, lay, 0, 0, 0);
    /* 10 watcher-markers, 5 markers, 3 watchers, spread over the map. */
    for (uint64_t id = 1; id <= 18; id++) {
      unsigned f = id <= 10 ? WM : id <= 15 ? AOI_MARKER : AOI_WATCHER;
      float x = (float)((id * 37) % 100), y = (float)((id * 61) % 100);
      assert_int_equal(test_add(w, id, x, y, 30, f, ALL, ALL), 0);
    }
    expect_stats(w, lay, 0, 0, 0); /* nothing until the tick */
    records r = {0};
    tick_and_drain(w, &r);
    expect_stats(w, lay, 1, 18, 13);
    aoi_stats s;
    assert_int_equal(aoi_world_stats(w, &s), 0);
    assert_int_equal(s.events, r.count);
    assert_true(r.count > 0);

    /* One watcher and one marker go; one crosses the whole map. */
    assert_int_equal(aoi_remove(w, 16), 0);
    assert_int_equal(aoi_remove(w, 12), 0);
    assert_int_equal(aoi_move(w, 1, 1, 1), 0);
    tick_and_drain(w, &r);
    assert_int_equal(aoi_move(w, 1, 99, 99), 0);
    tick_and_drain(w, &r);
    expect_stats(w, lay, 3, 16, 12);
    assert_int_equal(aoi_world_stats(w, &s), 0);
    assert_int_equal(s.events, r.count);
    if (s.shards > 1)
      assert_true(s.handoffs >= 1);
    records_free(&r);
    aoi_destroy(w);
  }
}

/* measure_cpu: after a tick that did work, work_ns and span_ns are set,
   and the span (the slowest lane's share of each phase, plus the serial
   part) is at most the work (every lane's); without it both are 0; before
   the first tick both are 0. On a private pool, a shared one and the
   caller's thread, with one lane and several. */
static void test_measure_cpu(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  static const struct {
    aoi_run run;
    unsigned lanes;
  } runs[] = {{AOI_RUN_OWN, 1}, {AOI_RUN_OWN, 2},    {AOI_RUN_POOL, 1},
              {AOI_RUN_POOL, 3}, {AOI_RUN_CALLER, 1}, {AOI_RUN_CALLER, 2}};
  for (size_t r = 0; r < COUNT_OF(runs); r++)
    for (unsigned measure = 0; measure <= 1; measure++) {
      aoi_config c = config_for((layout){runs[r].lanes, 4}, 10);
      c.run = runs[r].run;
      c.pool = runs[r].run == AOI_RUN_POOL ? pool : NULL;
      c.measure_cpu = measure;
      aoi_world *w = create_or_fail(&c);
      aoi_stats s;
      assert_int_equal(aoi_world_stats(w, &s), 0);
      assert_true(s.work_ns == 0 && s.span_ns == 0);
      /* 3000 entities: a tick of the pool world runs as lane tasks */
      for (uint64_t id = 1; id <= 3000; id++)
        assert_int_equal(test_add(w, id, (float)(id % 97),
                                  (float)(id * 31 % 89), 3, WM, ALL, ALL),
                         0);
      for (int t = 0; t < 4; t++) {
        for (uint64_t id = 1; id <= 3000; id += 2)
          assert_int_equal(aoi_move(w, id, (float)((id + (uint64_t)t) % 97),
                                    (float)(id * 31 % 89)),
                           0);
        if (t % 2 == 0) {
          assert_int_equal(aoi_tick(w), 0);
        } else {
          int result = 1;
          assert_int_equal(aoi_tick_many(&w, 1, &result), 0);
          assert_int_equal(result, 0);
        }
        assert_int_equal(aoi_world_stats(w, &s), 0);
        if (measure) {
          if (s.work_ns == 0 || s.span_ns == 0 || s.span_ns > s.work_ns)
            fail_msg("run %d, %u lanes, tick %d: work %llu ns, span %llu ns",
                     (int)runs[r].run, runs[r].lanes, t,
                     (unsigned long long)s.work_ns,
                     (unsigned long long)s.span_ns);
        } else {
          assert_true(s.work_ns == 0 && s.span_ns == 0);
        }
        records out = {0};
        drain_all(w, &out);
        records_free(&out);
      }
      assert_int_equal(aoi_destroy(w), 0);
    }
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_queries_answer_last_tick),
      cmocka_unit_test(test_query_capacity),
      cmocka_unit_test(test_stats),
      cmocka_unit_test(test_measure_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
