/*
 * test_events.c: the contract of the event stream and the outboxes: the
 * docs/trace-format.md example, event by event; outboxes that accumulate across
 * ticks and drain (borrowed events valid until the next tick); the pending
 * list, ascending and stable while draining; a removed watcher's events
 * dropped; same-tick respawns told as leave + enter; layer masks; a random
 * crowd whose views, watchers and circles equal a brute-force count and
 * whose events are the same on every layout; a marker still for 2^32
 * ticks told when it moves (the 32-bit tick stamps are aged in time); and
 * an emptied world that goes quiet (its ticks only counted) and wakes with
 * the events a fresh world gives.
 *
 * The scenarios run on every layout of `layouts` (api_support.h), with
 * entities spread over the bounds so that several shards, ghosts and
 * handoffs take part.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "aoi.h"
#include "api_support.h"
#include "support.h"
#include "internal.h" /* aoi__world_valid, the tick counter */

/* ---- events ------------------------------------------------------------- */

/* docs/trace-format.md's example. */
static const record example_tick1[] = {
    {7, {9, 0, 10.5f, -3, AOI_ENTER, 1}},
    {9, {7, 0, 12, -3, AOI_ENTER, 1}},
};
static const record example_tick2[] = {
    {7, {9, 0, 0, 0, AOI_LEAVE, 2}},
    {9, {7, 0, 40, -3, AOI_MOVE, 2}},
};

static void add_example(aoi_world *w)
{
  assert_int_equal(test_add(w, 7, 12, -3, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 9, 10.5f, -3, 50, WM, ALL, ALL), 0);
}

static void test_trace_example(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 500);
    records r = {0};
    add_example(w);
    tick_and_drain(w, &r);
    expect_records(&r, example_tick1, COUNT_OF(example_tick1));
    assert_int_equal(aoi_move(w, 7, 40, -3), 0);
    tick_and_drain(w, &r);
    expect_records(&r, example_tick2, COUNT_OF(example_tick2));
    /* Nothing changes: no events at all. */
    tick_and_drain(w, &r);
    assert_int_equal(r.count, 0);
    records_free(&r);
    aoi_destroy(w);
  }
}

static void test_events_accumulate(void **state)
{
  (void)state;
  static const record seven[] = {
      {7, {9, 0, 10.5f, -3, AOI_ENTER, 1}},
      {7, {9, 0, 0, 0, AOI_LEAVE, 2}},
  };
  static const record nine[] = {
      {9, {7, 0, 12, -3, AOI_ENTER, 1}},
      {9, {7, 0, 40, -3, AOI_MOVE, 2}},
      {9, {7, 0, 41, -3, AOI_MOVE, 3}},
  };
  static const record nine_later[] = {
      {9, {7, 0, 0, 0, AOI_LEAVE, 6}},
  };
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 500);
    add_example(w);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_move(w, 7, 40, -3), 0);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_move(w, 7, 41, -3), 0);
    assert_int_equal(aoi_tick(w), 0);

    const uint64_t *ids;
    size_t n;
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 7);
    assert_int_equal(ids[1], 9);

    /* Borrowed events stay valid until the next tick, across drains. */
    const aoi_event *nine_events;
    size_t nine_count;
    assert_int_equal(aoi_drain(w, 9, &nine_events, &nine_count), 0);
    expect_drain(w, 7, seven, COUNT_OF(seven));
    records got = {0};
    for (size_t i = 0; i < nine_count; i++)
      records_push(&got, 9, &nine_events[i]);
    expect_records(&got, nine, COUNT_OF(nine));
    records_free(&got);

    /* Drained outboxes are empty, and stay so while nothing happens. */
    expect_drain(w, 7, NULL, 0);
    expect_drain(w, 9, NULL, 0);
    expect_no_events(w);
    assert_int_equal(aoi_tick(w), 0);
    expect_no_events(w);
    expect_drain(w, 9, NULL, 0);
    assert_int_equal(aoi_tick(w), 0);

    /* A later event comes alone, with its own tick number. */
    assert_int_equal(aoi_move(w, 7, 200, -3), 0);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 9);
    expect_drain(w, 9, nine_later, COUNT_OF(nine_later));
    aoi_destroy(w);
  }
}

static void test_pending_ascending_and_stable(void **state)
{
  (void)state;
  static const uint64_t crowd[] = {UINT64_MAX, 0, 500, 3, UINT64_C(1) << 40,
                                   42};
  static const uint64_t sorted[] = {0, 3, 42, 500, UINT64_C(1) << 40,
                                    UINT64_MAX};
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 50);
    /* All near (50, 50), which is on or near a border for every layout. */
    for (size_t i = 0; i < COUNT_OF(crowd); i++)
      assert_int_equal(test_add(w, crowd[i], 48 + (float)i, 50, 20, WM, ALL,
                               ALL),
                       0);
    assert_int_equal(test_add(w, 77, 50, 49, 20, AOI_MARKER, ALL, ALL), 0);
    assert_int_equal(test_add(w, 88, 5, 5, 1, AOI_WATCHER, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);

    const uint64_t *ids;
    size_t n;
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    answer got;
    memcpy(got.ids, ids, sizeof(uint64_t) * (n < MAX_IDS ? n : MAX_IDS));
    got.count = n;
    expect_ids(&got, sorted, COUNT_OF(sorted));
    /* Drain while iterating: the list stays as it was. */
    for (size_t i = 0; i < n; i++) {
      const aoi_event *events;
      size_t count;
      assert_int_equal(aoi_drain(w, ids[i], &events, &count), 0);
      assert_int_equal(count, COUNT_OF(crowd)); /* 5 watchers + marker 77 */
      for (size_t j = 0; j < n; j++)
        assert_int_equal(ids[j], sorted[j]);
    }
    expect_no_events(w);

    /* 500 moves: everyone else that sees it gets a move; 500 gets none. */
    assert_int_equal(aoi_move(w, 500, 50.5f, 50), 0);
    /* New watchers with ids between the others join the list in order. */
    assert_int_equal(test_add(w, 1, 49, 51, 20, AOI_WATCHER, ALL, ALL), 0);
    assert_int_equal(test_add(w, 41, 49, 52, 20, AOI_WATCHER, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);
    static const uint64_t second[] = {0,  1,   3, 41, 42, UINT64_C(1) << 40,
                                      UINT64_MAX};
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    memcpy(got.ids, ids, sizeof(uint64_t) * (n < MAX_IDS ? n : MAX_IDS));
    got.count = n;
    expect_ids(&got, second, COUNT_OF(second));

    /* Drain a few; a fresh aoi_pending lists only the rest. */
    const aoi_event *events;
    size_t count;
    assert_int_equal(aoi_drain(w, 3, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(events[0].kind, AOI_MOVE);
    assert_int_equal(events[0].id, 500);
    assert_int_equal(aoi_drain(w, UINT64_MAX, &events, &count), 0);
    assert_int_equal(aoi_drain(w, 1, &events, &count), 0);
    assert_int_equal(count, 7); /* 6 crowd markers + 77 */
    static const uint64_t rest[] = {0, 41, 42, UINT64_C(1) << 40};
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    memcpy(got.ids, ids, sizeof(uint64_t) * (n < MAX_IDS ? n : MAX_IDS));
    got.count = n;
    expect_ids(&got, rest, COUNT_OF(rest));

    /* Undrained ones get more events; the list still has each once. */
    assert_int_equal(aoi_move(w, 77, 50, 48), 0);
    assert_int_equal(aoi_tick(w), 0);
    static const uint64_t third[] = {0,  1,  3, 41, 42, 500,
                                     UINT64_C(1) << 40, UINT64_MAX};
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    memcpy(got.ids, ids, sizeof(uint64_t) * (n < MAX_IDS ? n : MAX_IDS));
    got.count = n;
    expect_ids(&got, third, COUNT_OF(third));
    assert_int_equal(aoi_drain(w, 0, &events, &count), 0);
    assert_int_equal(count, 2); /* move 500 (tick 2), move 77 (tick 3) */
    assert_int_equal(events[0].tick, 2);
    assert_int_equal(events[1].tick, 3);
    assert_int_equal(events[1].id, 77);
    aoi_destroy(w);
  }
}

static void test_remove_watcher_drops_events(void **state)
{
  (void)state;
  static const record nine[] = {
      {9, {7, 0, 12, -3, AOI_ENTER, 1}},
      {9, {7, 0, 0, 0, AOI_LEAVE, 2}},
  };
  static const record reborn[] = {
      {7, {9, 0, 10.5f, -3, AOI_ENTER, 3}},
  };
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 500);
    add_example(w);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_remove(w, 7), 0);
    const aoi_event *events = NULL;
    size_t count = 123;
    assert_int_equal(aoi_drain(w, 7, &events, &count), AOI_ENOENT);
    assert_null(events);
    assert_int_equal(count, 123);
    const uint64_t *ids;
    size_t n;
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 9);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 9);
    assert_int_equal(aoi_drain(w, 7, &events, &count), AOI_ENOENT);
    expect_drain(w, 9, nine, COUNT_OF(nine));

    /* Same id back: a new watcher whose first tick is all enters, none of
       the old one's events. */
    assert_int_equal(test_add(w, 7, 12, -3, 20, WM, ALL, ALL), 0);
    expect_drain(w, 7, NULL, 0);
    assert_int_equal(aoi_tick(w), 0);
    expect_drain(w, 7, reborn, COUNT_OF(reborn));

    /* Removed and re-added before a tick, with events undrained: those are
       dropped too. */
    assert_int_equal(aoi_move(w, 9, 11, -3), 0);
    assert_int_equal(aoi_tick(w), 0); /* 7 gets a move, undrained */
    assert_int_equal(aoi_remove(w, 7), 0);
    assert_int_equal(test_add(w, 7, 12, -3, 20, AOI_WATCHER, ALL, ALL), 0);
    expect_drain(w, 7, NULL, 0);
    assert_int_equal(aoi_pending(w, &ids, &n), 0);
    for (size_t i = 0; i < n; i++)
      assert_int_not_equal(ids[i], 7);
    assert_int_equal(aoi_tick(w), 0);
    static const record again[] = {{7, {9, 0, 11, -3, AOI_ENTER, 5}}};
    expect_drain(w, 7, again, COUNT_OF(again));
    aoi_destroy(w);
  }
}

static void test_respawn_in_one_tick(void **state)
{
  (void)state;
  static const record t2[] = {
      {1, {2, 0, 0, 0, AOI_LEAVE, 2}},
      {1, {2, 0, 15, 10, AOI_ENTER, 2}},
  };
  static const record t3[] = {
      {1, {2, 0, 0, 0, AOI_LEAVE, 3}},
      {1, {2, 0, 62, 12, AOI_ENTER, 3}},
      {2, {1, 0, 60, 10, AOI_ENTER, 3}},
  };
  static const record t5[] = {
      {1, {2, 0, 0, 0, AOI_LEAVE, 5}},
      {1, {3, 0, 0, 0, AOI_LEAVE, 5}},
      {1, {2, 0, 61, 11, AOI_ENTER, 5}},
      {1, {3, 0, 55, 12, AOI_ENTER, 5}},
  };
  static const record t6[] = {
      {1, {2, 0, 0, 0, AOI_LEAVE, 6}},
  };
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 50);
    records r = {0};
    assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, 2, 15, 10, 0, AOI_MARKER, ALL, ALL), 0);
    tick_and_drain(w, &r);
    assert_int_equal(r.count, 1);

    /* Same place: leave then enter, no move. */
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(test_add(w, 2, 15, 10, 0, AOI_MARKER, ALL, ALL), 0);
    tick_and_drain(w, &r);
    expect_records(&r, t2, COUNT_OF(t2));

    /* Both moved across the map (into another shard), the marker reborn as
       a watcher too. */
    assert_int_equal(aoi_move(w, 1, 60, 10), 0);
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(test_add(w, 2, 62, 12, 5, WM, ALL, ALL), 0);
    tick_and_drain(w, &r);
    expect_records(&r, t3, COUNT_OF(t3));

    /* Removed, re-added, moved, removed and re-added again in one tick; a
       third id appears, leaves and comes back. */
    assert_int_equal(test_add(w, 3, 55, 11, 0, AOI_MARKER, ALL, ALL), 0);
    tick_and_drain(w, &r);
    assert_int_equal(r.count, 1);
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(test_add(w, 2, 90, 90, 0, AOI_MARKER, ALL, ALL), 0);
    assert_int_equal(aoi_move(w, 2, 20, 20), 0);
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(test_add(w, 2, 61, 11, 0, AOI_MARKER, ALL, ALL), 0);
    assert_int_equal(aoi_remove(w, 3), 0);
    assert_int_equal(test_add(w, 3, 55, 12, 0, AOI_MARKER, ALL, ALL), 0);
    tick_and_drain(w, &r);
    expect_records(&r, t5, COUNT_OF(t5));

    /* Out of sight when reborn: leave only. Added and removed in one tick:
       nothing at all. */
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(test_add(w, 2, 99, 99, 0, AOI_MARKER, ALL, ALL), 0);
    assert_int_equal(test_add(w, 4, 60, 11, 0, AOI_MARKER, ALL, ALL), 0);
    assert_int_equal(aoi_remove(w, 4), 0);
    tick_and_drain(w, &r);
    expect_records(&r, t6, COUNT_OF(t6));
    records_free(&r);
    aoi_destroy(w);
  }
}

/* ---- layer masks --------------------------------------------------------- */

static void test_layer_masks(void **state)
{
  (void)state;
  static const record t2[] = {
      {1, {11, 0, 0, 0, AOI_LEAVE, 2}},
      {1, {12, 0, 52, 50, AOI_ENTER, 2}},
  };
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l], 50);
    answer a;
    /* Watcher 1 is interested in layer 1, watcher 2 in layers 2 and 4. */
    assert_int_equal(test_add(w, 1, 50, 48, 10, AOI_WATCHER, 0, 1), 0);
    assert_int_equal(test_add(w, 2, 50, 52, 10, AOI_WATCHER, 0, 6), 0);
    assert_int_equal(test_add(w, 11, 49, 50, 0, AOI_MARKER, 1, 0), 0);
    assert_int_equal(test_add(w, 12, 52, 50, 0, AOI_MARKER, 2, 0), 0);
    assert_int_equal(test_add(w, 13, 51, 51, 0, AOI_MARKER, 3, 0), 0);
    assert_int_equal(test_add(w, 14, 48, 49, 0, AOI_MARKER, 0, ALL), 0);
    assert_int_equal(test_add(w, 15, 50, 50, 0, WM, 0x80000000u, 0x80000000u),
                     0);
    assert_int_equal(aoi_tick(w), 0);
    EXPECT_VIEW(w, 1, 11, 13);
    EXPECT_VIEW(w, 2, 12, 13);
    EXPECT_EMPTY_VIEW(w, 15); /* sees only layer 31, which nobody else is in */
    watchers_of(w, 13, &a);
    {
      static const uint64_t want[] = {1, 2};
      expect_ids(&a, want, COUNT_OF(want));
    }
    watchers_of(w, 14, &a);
    expect_ids(&a, NULL, 0);
    circle(w, 50, 50, 5, 2, &a);
    {
      static const uint64_t want[] = {12, 13};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 50, 50, 5, 0x80000001u, &a);
    {
      static const uint64_t want[] = {11, 13, 15};
      expect_ids(&a, want, COUNT_OF(want));
    }
    circle(w, 50, 50, 5, 0, &a);
    expect_ids(&a, NULL, 0);
    circle(w, 50, 50, 5, ALL, &a);
    {
      static const uint64_t want[] = {11, 12, 13, 15};
      expect_ids(&a, want, COUNT_OF(want));
    }

    /* Masks change: 11 leaves both layers 1 and 2 (now in 8), 12 joins
       layer 1 too. */
    records r = {0};
    drain_all(w, &r);
    assert_int_equal(r.count, 4); /* 1: 11, 13; 2: 12, 13 */
    assert_int_equal(aoi_set_layers(w, 11, 8, 0), 0);
    assert_int_equal(aoi_set_layers(w, 12, 3, 0), 0);
    assert_int_equal(aoi_set_layers(w, 1, 0, 1), 0); /* unchanged */
    circle(w, 50, 50, 5, 8, &a); /* not yet */
    expect_ids(&a, NULL, 0);
    tick_and_drain(w, &r); /* 2 still sees 12 (layers 3 & 6) */
    expect_records(&r, t2, COUNT_OF(t2));
    EXPECT_VIEW(w, 1, 12, 13);
    EXPECT_VIEW(w, 2, 12, 13);
    circle(w, 50, 50, 5, 8, &a);
    {
      static const uint64_t want[] = {11};
      expect_ids(&a, want, COUNT_OF(want));
    }
    records_free(&r);
    aoi_destroy(w);
  }
}

/* ---- a crowd: views against brute force, events against one layout ---- */

#define CROWD 90

typedef struct person {
  uint64_t id;
  float x, y, r;
  unsigned flags;
  uint32_t layers, interest;
  int live;
} person;

static int sees(const person *a, const person *b)
{
  if (!a->live || !b->live || a == b || !(a->flags & AOI_WATCHER) ||
      !(b->flags & AOI_MARKER) || (a->interest & b->layers) == 0)
    return 0;
  double dx = (double)a->x - b->x, dy = (double)a->y - b->y;
  return dx * dx + dy * dy <= (double)a->r * a->r;
}

static void check_crowd(aoi_world *w, const person *p)
{
  for (int i = 0; i < CROWD; i++) {
    answer got;
    uint64_t want[CROWD];
    size_t n = 0;
    if (!p[i].live) {
      assert_int_equal(aoi_view(w, p[i].id, got.ids, MAX_IDS, &got.count),
                       AOI_ENOENT);
      continue;
    }
    for (int j = 0; j < CROWD; j++) /* ids ascend with the index */
      if (sees(&p[i], &p[j]))
        want[n++] = p[j].id;
    view_of(w, p[i].id, &got);
    expect_ids(&got, want, n);
    n = 0;
    for (int j = 0; j < CROWD; j++)
      if (sees(&p[j], &p[i]))
        want[n++] = p[j].id;
    watchers_of(w, p[i].id, &got);
    expect_ids(&got, want, n);
    /* The circle around each entity, of its radius, over layers 1. */
    n = 0;
    for (int j = 0; j < CROWD; j++) {
      double dx = (double)p[i].x - p[j].x, dy = (double)p[i].y - p[j].y;
      if (p[j].live && (p[j].flags & AOI_MARKER) && (p[j].layers & 1) &&
          dx * dx + dy * dy <= (double)p[i].r * p[i].r)
        want[n++] = p[j].id;
    }
    circle(w, p[i].x, p[i].y, p[i].r, 1, &got);
    expect_ids(&got, want, n);
  }
}

/* Runs the crowd on layout `l` and returns every event of every tick. */
static void run_crowd(layout l, records *all)
{
  aoi_world *w = world_for(l, 25);
  person p[CROWD];
  uint64_t rng = 12345;
  static const unsigned flags[] = {AOI_WATCHER, AOI_MARKER, WM, WM};
  for (int i = 0; i < CROWD; i++) {
    /* Integer coordinates and radii: every distance test is exact. */
    p[i].id = 1000 + 7 * (uint64_t)i;
    p[i].x = (float)rng_below(&rng, 101);
    p[i].y = (float)rng_below(&rng, 101);
    p[i].r = (float)(5 + rng_below(&rng, 21));
    p[i].flags = flags[rng_below(&rng, 4)];
    p[i].layers = 1 + rng_below(&rng, 3);
    p[i].interest = 1 + rng_below(&rng, 3);
    p[i].live = 1;
    assert_int_equal(test_add(w, p[i].id, p[i].x, p[i].y, p[i].r, p[i].flags,
                             p[i].layers, p[i].interest),
                     0);
  }
  all->count = 0;
  for (int t = 0; t < 12; t++) {
    assert_int_equal(aoi_tick(w), 0);
    drain_all(w, all);
    check_crowd(w, p);
    for (int i = 0; i < CROWD; i++) {
      person *q = &p[i];
      unsigned what = rng_below(&rng, 20);
      if (!q->live) {
        if (what < 5) {
          q->live = 1;
          assert_int_equal(test_add(w, q->id, q->x, q->y, q->r, q->flags,
                                   q->layers, q->interest),
                           0);
        }
        continue;
      }
      if (what < 8) { /* walk */
        q->x = (float)((int)q->x + (int)rng_below(&rng, 7) - 3);
        q->y = (float)((int)q->y + (int)rng_below(&rng, 7) - 3);
        assert_int_equal(aoi_move(w, q->id, q->x, q->y), 0);
      } else if (what < 10) { /* teleport, sometimes out of the bounds */
        q->x = (float)((int)rng_below(&rng, 141) - 20);
        q->y = (float)((int)rng_below(&rng, 141) - 20);
        assert_int_equal(aoi_move(w, q->id, q->x, q->y), 0);
      } else if (what == 10) {
        q->r = (float)rng_below(&rng, 26);
        assert_int_equal(aoi_set_radius(w, q->id, q->r), 0);
      } else if (what == 11) {
        q->layers = rng_below(&rng, 4);
        q->interest = rng_below(&rng, 4);
        assert_int_equal(aoi_set_layers(w, q->id, q->layers, q->interest), 0);
      } else if (what == 12) {
        q->live = 0;
        assert_int_equal(aoi_remove(w, q->id), 0);
      } else if (what == 13) { /* respawn elsewhere */
        assert_int_equal(aoi_remove(w, q->id), 0);
        q->x = (float)rng_below(&rng, 101);
        q->flags = flags[rng_below(&rng, 4)];
        assert_int_equal(test_add(w, q->id, q->x, q->y, q->r, q->flags,
                                 q->layers, q->interest),
                         0);
      }
    }
  }
  aoi_stats s;
  assert_int_equal(aoi_world_stats(w, &s), 0);
  assert_int_equal(s.tick, 12);
  if (l.shards > 1)
    assert_true(s.ghosts > 0);
  aoi_destroy(w);
}

static void test_crowd_every_layout(void **state)
{
  (void)state;
  records first = {0}, other = {0};
  run_crowd(layouts[0], &first);
  assert_true(first.count > 500);
  for (size_t l = 1; l < COUNT_OF(layouts); l++) {
    run_crowd(layouts[l], &other);
    expect_records(&other, first.items, first.count);
  }
  records_free(&first);
  records_free(&other);
}

/* ---- tick stamps --------------------------------------------------------- */

/* Entities stamp ticks in 32 bits (aoi__stamp), so a stamp 2^32 ticks old
   would meet the tick's bits again and say the entity changed then: the
   world brings old stamps forward once every 2^31 ticks. Here the tick
   counter jumps over spans that hold no such tick, so the stamps age as in
   a run of 2^32 ticks; then a marker that stood still since tick 1 moves,
   in a standing crowd, and must be told. */
/* Ticks both worlds with the same adds of a small crowd (ids from `base`),
   and checks that they drain the same events. */
static void crowd_in_both(aoi_world *a, aoi_world *b, uint64_t base,
                          uint64_t *rng)
{
  for (uint64_t i = 0; i < 24; i++) {
    float x = (float)rng_below(rng, 100), y = (float)rng_below(rng, 100);
    assert_int_equal(test_add(a, base + i, x, y, 15, WM, ALL, ALL), 0);
    assert_int_equal(test_add(b, base + i, x, y, 15, WM, ALL, ALL), 0);
  }
  records ra = {0}, rb = {0};
  tick_and_drain(a, &ra);
  tick_and_drain(b, &rb);
  assert_true(ra.count > 0);
  assert_int_equal(ra.count, rb.count);
  for (size_t i = 0; i < ra.count; i++)
    assert_true(record_equal(&ra.items[i], &rb.items[i]));
  records_free(&ra);
  records_free(&rb);
}

/* A world emptied of its crowd goes quiet after its empty ticks have let
   its arrays shrink (tick.c): its ticks are then only counted, and
   anything submitted wakes it. It must tell what a world that was never
   quiet tells: the same events at the same ticks, on every layout. One
   entity standing keeps a world from going quiet. */
static void test_quiet_world_wakes(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *quiet = world_for(layouts[l], 20);
    aoi_world *plain = world_for(layouts[l], 20);
    plain->inline_cost = 0; /* (and a different way to tick it) */
    /* a marker far from everyone keeps `plain` from ever going quiet */
    assert_int_equal(test_add(plain, 999, 5000, 5000, 0, AOI_MARKER, ALL, ALL),
                     0);
    uint64_t rng = 7 + l;
    crowd_in_both(quiet, plain, 1, &rng);
    for (uint64_t i = 2; i <= 24; i++) {
      assert_int_equal(aoi_remove(quiet, i), 0);
      assert_int_equal(aoi_remove(plain, i), 0);
    }
    records r = {0};
    for (int t = 0; t < 40; t++) {
      tick_and_drain(quiet, &r);
      assert_false(quiet->quiet); /* entity 1 stands */
      tick_and_drain(plain, &r);
    }
    assert_int_equal(aoi_remove(quiet, 1), 0);
    assert_int_equal(aoi_remove(plain, 1), 0);
    for (int t = 0; t < 20; t++) {
      tick_and_drain(quiet, &r);
      tick_and_drain(plain, &r);
    }
    assert_true(quiet->quiet);
    assert_false(plain->quiet);
    aoi_stats st;
    assert_int_equal(aoi_world_stats(quiet, &st), 0);
    assert_int_equal(st.tick, 61);
    assert_int_equal(st.entities, 0);
    assert_int_equal(st.events, 0);
    /* a crowd wakes it */
    crowd_in_both(quiet, plain, 100, &rng);
    assert_false(quiet->quiet);
    assert_true(aoi__world_valid(quiet));
    records_free(&r);
    assert_int_equal(aoi_destroy(quiet), 0);
    assert_int_equal(aoi_destroy(plain), 0);
  }
}

static void test_stamps_wrap(void **state)
{
  (void)state;
  for (unsigned threads = 1; threads <= 2; threads++) {
    aoi_config c;
    aoi_config_default(&c);
    c.threads = threads;
    aoi_world *w = NULL;
    assert_int_equal(aoi_create(&c, &w), 0);
    assert_int_equal(test_add(w, 1, 10, 10, 5, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, 2, 12, 10, 5, WM, ALL, ALL), 0);
    for (uint64_t id = 3; id < 40; id++) /* standing, out of sight */
      assert_int_equal(
          test_add(w, id, 100 + 20 * (float)id, 100, 5, WM, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);
    const aoi_event *events;
    size_t count;
    assert_int_equal(aoi_drain(w, 1, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(aoi_drain(w, 2, &events, &count), 0);
    assert_int_equal(count, 1);
    /* to tick 2^31 - 1, then through 2^31; to 2^32 - 1, then through 2^32 */
    const uint64_t jumps[2] = {(UINT64_C(1) << 31) - 2,
                               (UINT64_C(1) << 32) - 2};
    for (int j = 0; j < 2; j++) {
      w->tick = jumps[j];
      assert_int_equal(aoi_tick(w), 0);
      assert_int_equal(aoi_tick(w), 0);
    }
    assert_int_equal(w->tick, UINT64_C(1) << 32);
    /* tick 2^32 + 1, whose low bits are tick 1's */
    assert_int_equal(aoi_move(w, 2, 13, 10), 0);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_drain(w, 1, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(events[0].id, 2);
    assert_int_equal(events[0].kind, AOI_MOVE);
    assert_true(events[0].x == 13 && events[0].y == 10);
    assert_int_equal(aoi_drain(w, 2, &events, &count), 0);
    assert_int_equal(count, 0);
    assert_int_equal(aoi_move(w, 2, 60, 10), 0);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_drain(w, 1, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(events[0].kind, AOI_LEAVE);
    assert_int_equal(aoi_drain(w, 2, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(events[0].kind, AOI_LEAVE);
    assert_true(aoi__world_valid(w));
    aoi_destroy(w);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_example),
      cmocka_unit_test(test_events_accumulate),
      cmocka_unit_test(test_pending_ascending_and_stable),
      cmocka_unit_test(test_remove_watcher_drops_events),
      cmocka_unit_test(test_respawn_in_one_tick),
      cmocka_unit_test(test_layer_masks),
      cmocka_unit_test(test_crowd_every_layout),
      cmocka_unit_test(test_stamps_wrap),
      cmocka_unit_test(test_quiet_world_wakes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
