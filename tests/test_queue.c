/*
 * test_queue.c: the op queues (submit.c) under floods of calls, and ticks
 * with nothing to do.
 *
 * Operations on one entity between two ticks fold into one record, so the
 * queue and what a tick reserves are bounded by the entities, not by the
 * calls; an add and a remove of the same entity before a tick cancel out.
 * These tests drive floods through worlds whose allocator counts every byte
 * (support.h) and compare them with reference worlds that got only what the
 * flood adds up to:
 *
 *  - a million moves of one entity under a tight allocator budget are all
 *    accepted without allocating, and the next tick applies them (the world
 *    does not wedge), also after a tick that failed for want of memory;
 *  - a million zig-zag moves across shard borders and a hundred thousand
 *    remove + add pairs of one id leave the live heap within 1.25x of what
 *    it was before the flood, a few idle ticks after it;
 *  - a hundred thousand add + remove pairs of new ids before a tick take no
 *    handle and make no event;
 *  - a tick with nothing to do (which does not wake the workers) keeps the
 *    statistics and queries right, and one after a tick that held views
 *    back still catches them up.
 *
 * Every scenario runs on several layouts of threads x shards. Only this
 * thread calls cmocka's asserts; the allocator hooks only count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "support.h"
#include "internal.h" /* aoi__world_valid, handle counts */

#define ALL UINT32_MAX
#define WM (AOI_WATCHER | AOI_MARKER)
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define CROWD 2000u
#define MAX_IDS 4096

typedef struct layout {
  unsigned threads, shards;
} layout;

static const layout layouts[] = {{1, 1}, {2, 2}, {2, 4}, {4, 8}, {3, 16}};

/* Names the layout in failure messages. */
static layout current;

/* ---- worlds ------------------------------------------------------------- */

/* A world over (0, 0) - (1000, 1000), counting through `c` unless NULL. */
static aoi_world *world_for(layout l, counter *c)
{
  aoi_config config;
  aoi_config_default(&config);
  config.threads = l.threads;
  config.shards = l.shards;
  config.max_radius = 60;
  aoi_allocator hooks;
  if (c != NULL) {
    hooks = counting_allocator(c);
    config.allocator = &hooks;
  }
  current = l;
  aoi_world *w = NULL;
  int rc = aoi_create(&config, &w);
  if (rc != 0)
    fail_msg("aoi_create (threads %u, shards %u): %s", l.threads, l.shards,
             aoi_strerror(rc));
  return w;
}

/* Entity id's home: a scatter over the map, so that each sees a few. */
static float home_x(uint64_t id)
{
  return (float)((id * 7919) % 1000) + 0.25f;
}

static float home_y(uint64_t id)
{
  return (float)((id * 104729) % 997) + 0.5f;
}

static void add_home(aoi_world *w, uint64_t id)
{
  unsigned flags = id % 5 == 0 ? AOI_MARKER : id % 7 == 0 ? AOI_WATCHER : WM;
  int rc = test_add(w, id, home_x(id), home_y(id), 30 + (float)(id % 20),
                   flags, ALL, ALL);
  if (rc != 0)
    fail_msg("test_add(%llu): %s", (unsigned long long)id, aoi_strerror(rc));
}

static void add_crowd(aoi_world *w, unsigned n)
{
  for (uint64_t id = 1; id <= n; id++)
    add_home(w, id);
}

static void drain_all(aoi_world *w, records *out)
{
  const uint64_t *ids;
  size_t n;
  assert_int_equal(aoi_pending(w, &ids, &n), 0);
  for (size_t i = 0; i < n; i++) {
    const aoi_event *events;
    size_t count;
    assert_int_equal(aoi_drain(w, ids[i], &events, &count), 0);
    for (size_t j = 0; out != NULL && j < count; j++)
      records_push(out, ids[i], &events[j]);
  }
}

static void tick_ok(aoi_world *w)
{
  int rc = aoi_tick(w);
  if (rc != 0)
    fail_msg("aoi_tick (threads %u, shards %u): %s", current.threads,
             current.shards, aoi_strerror(rc));
}

static void expect_same_records(const records *got, const records *want)
{
  size_t n = got->count < want->count ? got->count : want->count;
  for (size_t i = 0; i < n; i++)
    if (!record_equal(&got->items[i], &want->items[i]))
      fail_msg("threads %u shards %u: event %zu: watcher %llu kind %u id "
               "%llu, the reference watcher %llu kind %u id %llu",
               current.threads, current.shards, i,
               (unsigned long long)got->items[i].watcher,
               got->items[i].event.kind,
               (unsigned long long)got->items[i].event.id,
               (unsigned long long)want->items[i].watcher,
               want->items[i].event.kind,
               (unsigned long long)want->items[i].event.id);
  if (got->count != want->count)
    fail_msg("threads %u shards %u: %zu events, the reference %zu",
             current.threads, current.shards, got->count, want->count);
}

/* Every entity of 1..n has the same view in both worlds. */
static void expect_same_views(aoi_world *got, aoi_world *want, unsigned n)
{
  static uint64_t a[MAX_IDS], b[MAX_IDS];
  for (uint64_t id = 1; id <= n; id++) {
    size_t na = 0, nb = 0;
    int ra = aoi_view(got, id, a, MAX_IDS, &na);
    int rb = aoi_view(want, id, b, MAX_IDS, &nb);
    assert_int_equal(ra, rb);
    if (na != nb || memcmp(a, b, sizeof(uint64_t) * (na < MAX_IDS ? na : MAX_IDS)) != 0)
      fail_msg("threads %u shards %u: the view of %llu holds %zu, the "
               "reference's %zu (or other ids)",
               current.threads, current.shards, (unsigned long long)id, na,
               nb);
  }
}

static uint64_t stats_tick(aoi_world *w)
{
  aoi_stats st;
  assert_int_equal(aoi_world_stats(w, &st), 0);
  return st.tick;
}

/* ---- a million moves of one entity under a budget ----------------------- */

/* The flood of one entity: back and forth over the middle of the map, so
   that most moves cross a shard border, ending at (x, y). */
static void flood_one(aoi_world *w, uint64_t id, unsigned moves, float x,
                      float y)
{
  for (unsigned k = 0; k + 1 < moves; k++) {
    float fx = k % 2 ? 1000 - x : x + (float)(k % 7);
    int rc = aoi_move(w, id, fx, (float)(k % 997));
    if (rc != 0)
      fail_msg("threads %u shards %u: move %u of the flood: %s",
               current.threads, current.shards, k, aoi_strerror(rc));
  }
  assert_int_equal(aoi_move(w, id, x, y), 0);
}

static void test_move_flood_under_budget(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    counter c;
    counter_reset(&c);
    aoi_world *w = world_for(layouts[l], &c);
    aoi_world *ref = world_for(layouts[l], NULL);
    add_crowd(w, 300);
    add_crowd(ref, 300);
    tick_ok(w);
    tick_ok(ref);
    drain_all(w, NULL);
    drain_all(ref, NULL);
    /* A budget of 2 MB above what the world holds: far less than a
       million queued operations would take (40 MB), and than a tick that
       reserved for each of them. */
    long long before = atomic_load(&c.live_bytes);
    atomic_store(&c.budget, before + (2ll << 20));
    flood_one(w, 1, 1000000, 120, 640);
    assert_int_equal(aoi_move(ref, 1, 120, 640), 0);
    /* One record at most: nothing grew. */
    assert_true(atomic_load(&c.live_bytes) <= before + 4096);
    assert_int_equal(atomic_load(&c.injected), 0);
    records got = {0}, want = {0};
    tick_ok(w);
    tick_ok(ref);
    drain_all(w, &got);
    drain_all(ref, &want);
    expect_same_records(&got, &want);
    expect_same_views(w, ref, 300);
    assert_true(aoi__world_valid(w));

    /* Again, and the first tick after it finds no memory at all: it fails
       (before or after applying), the next one applies the flood. */
    flood_one(w, 1, 1000000, 700, 90);
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(aoi_move(ref, 1, 700, 90), 0);
    assert_int_equal(aoi_remove(ref, 2), 0);
    uint64_t ticked = stats_tick(w);
    counter_arm(&c, 1, COUNTER_ONWARD);
    int rc = aoi_tick(w);
    counter_disarm(&c);
    assert_true(rc == 0 || rc == AOI_ENOMEM);
    assert_true(aoi__world_valid(w));
    if (stats_tick(w) == ticked) /* did not start: ops still queued */
      tick_ok(w);
    tick_ok(w); /* catches up any views held back */
    tick_ok(ref);
    drain_all(w, NULL);
    drain_all(ref, NULL);
    expect_same_views(w, ref, 300);
    assert_true(aoi__world_valid(w));
    records_free(&got);
    records_free(&want);
    aoi_destroy(w);
    aoi_destroy(ref);
    assert_int_equal(atomic_load(&c.live_bytes), 0);
  }
}

/* ---- flood memory ------------------------------------------------------- */

static void test_flood_memory_given_back(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    counter c;
    counter_reset(&c);
    aoi_world *w = world_for(layouts[l], &c);
    aoi_world *ref = world_for(layouts[l], NULL);
    add_crowd(w, CROWD);
    add_crowd(ref, CROWD);
    for (int t = 0; t < 20; t++) {
      tick_ok(w);
      tick_ok(ref);
      drain_all(w, NULL);
      drain_all(ref, NULL);
    }
    long long before = atomic_load(&c.live_bytes);
    uint32_t handles = w->handle_count;
    /* A million moves: every entity hops over the middle of the map and
       back 500 times, ending at home. */
    for (unsigned k = 0; k < 1000000; k++) {
      uint64_t id = 1 + k % CROWD;
      float x = (k / CROWD) % 2 ? home_x(id) : 1000 - home_x(id);
      assert_int_equal(aoi_move(w, id, x, home_y(id) + (float)(k % 3)), 0);
    }
    for (uint64_t id = 1; id <= CROWD; id++)
      assert_int_equal(aoi_move(w, id, home_x(id), home_y(id)), 0);
    /* A hundred thousand respawns of one id. */
    for (unsigned k = 0; k < 100000; k++) {
      assert_int_equal(aoi_remove(w, 7), 0);
      add_home(w, 7);
    }
    assert_int_equal(aoi_remove(ref, 7), 0);
    add_home(ref, 7);
    for (uint64_t id = 1; id <= CROWD; id++)
      assert_int_equal(aoi_move(ref, id, home_x(id), home_y(id)), 0);
    long long queued = atomic_load(&c.live_bytes);
    assert_true(w->handle_count <= handles + 2);
    assert_true(aoi__world_valid(w));
    records got = {0}, want = {0};
    tick_ok(w);
    tick_ok(ref);
    drain_all(w, &got);
    drain_all(ref, &want);
    expect_same_records(&got, &want);
    long long ticked = atomic_load(&c.live_bytes);
    for (int t = 0; t < 16; t++) {
      tick_ok(w);
      drain_all(w, NULL);
    }
    long long after = atomic_load(&c.live_bytes);
    if (getenv("AOI_TEST_VERBOSE") != NULL)
      printf("threads %u shards %u: live heap %lld before, %lld queued, "
             "%lld after the tick, %lld after 16 idle ticks (x%.3f)\n",
             current.threads, current.shards, before, queued, ticked, after,
             (double)after / (double)before);
    if ((double)queued > 1.25 * (double)before ||
        (double)after > 1.25 * (double)before)
      fail_msg("threads %u shards %u: live heap %lld bytes before the "
               "flood, %lld with it queued, %lld 16 ticks after it",
               current.threads, current.shards, before, queued, after);
    assert_true(aoi__world_valid(w));
    records_free(&got);
    records_free(&want);
    aoi_destroy(w);
    aoi_destroy(ref);
    assert_int_equal(atomic_load(&c.live_bytes), 0);
  }
}

/* ---- add + remove before a tick ----------------------------------------- */

static void test_add_remove_cancel(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    counter c;
    counter_reset(&c);
    aoi_world *w = world_for(layouts[l], &c);
    add_crowd(w, 200);
    tick_ok(w);
    drain_all(w, NULL);
    uint32_t handles = w->handle_count;
    long long before = atomic_load(&c.live_bytes);
    /* New ids, each added (and walked) and removed before the tick, in
       shards all over the map; and one live id removed and added again. */
    for (unsigned k = 0; k < 100000; k++) {
      uint64_t id = 1000 + k % 3;
      assert_int_equal(test_add(w, id, home_x(k), home_y(k), 40, WM, ALL, ALL),
                       0);
      assert_int_equal(aoi_move(w, id, home_x(k + 1), home_y(k + 1)), 0);
      assert_int_equal(aoi_remove(w, id), 0);
    }
    assert_true(w->handle_count <= handles + 1);
    assert_true(atomic_load(&c.live_bytes) <= before + 8192);
    assert_true(aoi__world_valid(w));
    tick_ok(w);
    const uint64_t *ids;
    size_t n;
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    assert_int_equal(n, 0); /* nobody saw any of them */
    aoi_stats st;
    assert_int_equal(aoi_world_stats(w, &st), 0);
    assert_int_equal(st.entities, 200);
    assert_int_equal(st.events, 0);
    aoi_destroy(w);
    assert_int_equal(atomic_load(&c.live_bytes), 0);
  }
}

/* ---- ticks with nothing to do ------------------------------------------- */

static void test_quiet_ticks(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    counter c;
    counter_reset(&c);
    aoi_world *w = world_for(layouts[l], &c);
    aoi_world *ref = world_for(layouts[l], NULL);
    add_crowd(w, 600);
    add_crowd(ref, 600);
    tick_ok(w);
    tick_ok(ref);
    drain_all(w, NULL);
    drain_all(ref, NULL);
    for (uint64_t id = 1; id <= 600; id += 3) {
      assert_int_equal(aoi_move(w, id, home_x(id) + 20, home_y(id)), 0);
      assert_int_equal(aoi_move(ref, id, home_x(id) + 20, home_y(id)), 0);
    }
    tick_ok(w);
    drain_all(w, NULL);
    aoi_stats busy, st;
    assert_int_equal(aoi_world_stats(w, &busy), 0);
    assert_true(busy.events > 0);
    for (int t = 1; t <= 3; t++) {
      tick_ok(w);
      assert_int_equal(aoi_world_stats(w, &st), 0);
      assert_int_equal(st.tick, busy.tick + (uint64_t)t);
      assert_int_equal(st.events, 0);
      assert_int_equal(st.handoffs, 0);
      assert_int_equal(st.ghosts, busy.ghosts);
      assert_int_equal(st.entities, 600);
      assert_int_equal(st.watchers, busy.watchers);
      for (unsigned s = 0; s < st.shards; s++)
        assert_int_equal(st.shard_entities[s], busy.shard_entities[s]);
      const uint64_t *ids;
      size_t n;
      assert_int_equal(aoi_pending(w, &ids, &n), 0);
      assert_int_equal(n, 0);
    }
    /* A tick that holds views back (every allocation in it fails: watcher
       1's view and outbox must grow for the crowd that gathers around it),
       then ticks with nothing to do: they catch up, and end where the
       reference is. */
    for (uint64_t id = 2; id <= 600; id += 3)
      assert_int_equal(aoi_move(w, id, home_x(1) + (float)(id % 13),
                                home_y(1) + (float)(id % 11)),
                       0);
    uint64_t ticked = stats_tick(w);
    counter_arm_every(&c, 1, 1);
    int rc = aoi_tick(w);
    counter_disarm(&c);
    assert_true(rc == 0 || rc == AOI_ENOMEM);
    if (stats_tick(w) == ticked)
      tick_ok(w);
    tick_ok(w);
    tick_ok(w);
    drain_all(w, NULL);
    for (uint64_t id = 2; id <= 600; id += 3)
      assert_int_equal(aoi_move(ref, id, home_x(1) + (float)(id % 13),
                                home_y(1) + (float)(id % 11)),
                       0);
    tick_ok(ref);
    tick_ok(ref);
    drain_all(ref, NULL);
    expect_same_views(w, ref, 600);
    assert_true(aoi__world_valid(w));
    aoi_destroy(w);
    aoi_destroy(ref);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_move_flood_under_budget),
      cmocka_unit_test(test_flood_memory_given_back),
      cmocka_unit_test(test_add_remove_cancel),
      cmocka_unit_test(test_quiet_ticks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
