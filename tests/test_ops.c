/*
 * test_ops.c: the contract of the operations (aoi_add, aoi_move,
 * aoi_set_radius, aoi_set_layers, aoi_set_appeal, aoi_set_cap, aoi_set_tag,
 * aoi_remove) and of NULL arguments: AOI_EINVAL for a NULL world or
 * out-parameter before anything else, in every call; each operation's codes
 * in their check order (the appeal and cap calls' as the model gives them
 * too); that a failed call changes nothing, events and views alike, on
 * every layout; that ids 0 and UINT64_MAX are ids like any other; that a
 * marker-only entity's radius is checked but gives it no view; and that a
 * tag takes effect at the next tick.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "aoi.h"
#include "api_support.h"
#include "model.h" /* the oracle agrees on codes */
#include "support.h"

/* ---- NULL arguments ------------------------------------------------------ */

static void test_null_arguments(void **state)
{
  (void)state;
  const aoi_event *events = NULL;
  const uint64_t *ids = NULL;
  size_t count = 77;
  uint64_t buffer[4];
  aoi_stats stats;

  assert_int_equal(test_add(NULL, 1, 0, 0, 1, WM, ALL, ALL), AOI_EINVAL);
  assert_int_equal(aoi_move(NULL, 1, 0, 0), AOI_EINVAL);
  assert_int_equal(aoi_move_ref(NULL, 1, 0, 0), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(NULL, 1, NULL), AOI_EINVAL);
  assert_int_equal(aoi_set_radius(NULL, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_set_layers(NULL, 1, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_set_appeal(NULL, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_set_cap(NULL, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_remove(NULL, 1), AOI_EINVAL);
  assert_int_equal(aoi_tick(NULL), AOI_EINVAL);
  assert_int_equal(aoi_drain(NULL, 1, &events, &count), AOI_EINVAL);
  assert_int_equal(aoi_pending(NULL, &ids, &count), AOI_EINVAL);
  assert_int_equal(aoi_query_circle(NULL, 0, 0, 1, ALL, buffer, 4, &count),
                   AOI_EINVAL);
  assert_int_equal(aoi_view(NULL, 1, buffer, 4, &count), AOI_EINVAL);
  assert_int_equal(aoi_watchers_of(NULL, 1, buffer, 4, &count), AOI_EINVAL);
  assert_int_equal(aoi_world_stats(NULL, &stats), AOI_EINVAL);
  assert_int_equal(aoi_set_tag(NULL, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_add(NULL, NULL), AOI_EINVAL);
  aoi_shard_info info;
  assert_int_equal(aoi_shard(NULL, 0, &info), AOI_EINVAL);
  assert_int_equal(aoi_shard_ghosts(NULL, 0, buffer, 4, &count), AOI_EINVAL);
  /* NULL world wins over everything else that is wrong. */
  assert_int_equal(test_add(NULL, 1, NAN, 0, -1, 0, ALL, ALL), AOI_EINVAL);
  assert_int_equal(aoi_move(NULL, 1, NAN, NAN), AOI_EINVAL);
  assert_int_equal(aoi_set_radius(NULL, 1, NAN), AOI_EINVAL);
  assert_int_equal(count, 77);
  assert_null(events);
  assert_null(ids);

  /* NULL out-parameters on a real world. */
  aoi_world *w = world_for((layout){1, 1}, 50);
  assert_int_equal(test_add(w, 1, 0, 0, 1, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_drain(w, 1, NULL, &count), AOI_EINVAL);
  assert_int_equal(aoi_drain(w, 1, &events, NULL), AOI_EINVAL);
  assert_int_equal(aoi_pending(w, NULL, &count), AOI_EINVAL);
  assert_int_equal(aoi_pending(w, &ids, NULL), AOI_EINVAL);
  assert_int_equal(aoi_world_stats(w, NULL), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(w, 1, NULL), AOI_EINVAL);
  assert_int_equal(aoi_add(w, NULL), AOI_EINVAL);
  assert_int_equal(aoi_shard(w, 0, NULL), AOI_EINVAL);
  assert_int_equal(aoi_shard_ghosts(w, 0, buffer, 4, NULL), AOI_EINVAL);
  assert_int_equal(aoi_shard_ghosts(w, 0, NULL, 4, &count), AOI_EINVAL);
  assert_int_equal(aoi_view(w, 1, buffer, 4, NULL), AOI_EINVAL);
  assert_int_equal(aoi_view(w, 1, NULL, 4, &count), AOI_EINVAL);
  assert_int_equal(aoi_watchers_of(w, 1, buffer, 4, NULL), AOI_EINVAL);
  assert_int_equal(aoi_watchers_of(w, 1, NULL, 1, &count), AOI_EINVAL);
  assert_int_equal(aoi_query_circle(w, 0, 0, 1, ALL, buffer, 4, NULL),
                   AOI_EINVAL);
  assert_int_equal(aoi_query_circle(w, 0, 0, 1, ALL, NULL, 4, &count),
                   AOI_EINVAL);
  assert_int_equal(count, 77);
  /* ids may be NULL when capacity is 0. */
  assert_int_equal(aoi_view(w, 1, NULL, 0, &count), 0);
  assert_int_equal(count, 0);
  count = 77;
  assert_int_equal(aoi_query_circle(w, 0, 0, 1, ALL, NULL, 0, &count), 0);
  assert_int_equal(count, 1);
  aoi_destroy(w);
}

/* ---- operations: codes, check order, no effect on failure -------------- */

static void test_operation_error_order(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){1, 1}, 50);
  const float above = nextafterf(50, 100);

  assert_int_equal(test_add(w, 1, 10, 10, 50, WM, ALL, ALL), 0); /* max: ok */
  assert_int_equal(test_add(w, 2, 10, 10, 0, AOI_MARKER, ALL, ALL), 0);
  assert_int_equal(test_add(w, 3, 10, 10, 5, AOI_WATCHER, 0, 0), 0);

  /* aoi_add: EEXIST before everything else. */
  assert_int_equal(test_add(w, 1, NAN, NAN, -1, 0, ALL, ALL), AOI_EEXIST);
  assert_int_equal(test_add(w, 1, 10, 10, 1, WM, ALL, ALL), AOI_EEXIST);
  assert_int_equal(test_add(w, 2, INFINITY, 0, above, 8, ALL, ALL), AOI_EEXIST);
  /* then EFLAGS */
  assert_int_equal(test_add(w, 4, NAN, NAN, -1, 0, ALL, ALL), AOI_EFLAGS);
  assert_int_equal(test_add(w, 4, 0, 0, 1, 4, ALL, ALL), AOI_EFLAGS);
  assert_int_equal(test_add(w, 4, 0, 0, 1, WM | 8, ALL, ALL), AOI_EFLAGS);
  assert_int_equal(test_add(w, 4, 0, 0, 1, 0x80000000u | AOI_MARKER, ALL, ALL),
                   AOI_EFLAGS);
  /* then ECOORD */
  assert_int_equal(test_add(w, 4, NAN, 0, -1, WM, ALL, ALL), AOI_ECOORD);
  assert_int_equal(test_add(w, 4, 0, NAN, 1, WM, ALL, ALL), AOI_ECOORD);
  assert_int_equal(test_add(w, 4, INFINITY, 0, 1, WM, ALL, ALL), AOI_ECOORD);
  assert_int_equal(test_add(w, 4, 0, -INFINITY, NAN, WM, ALL, ALL), AOI_ECOORD);
  /* then ERADIUS */
  assert_int_equal(test_add(w, 4, 0, 0, -1, WM, ALL, ALL), AOI_ERADIUS);
  assert_int_equal(test_add(w, 4, 0, 0, NAN, WM, ALL, ALL), AOI_ERADIUS);
  assert_int_equal(test_add(w, 4, 0, 0, INFINITY, WM, ALL, ALL), AOI_ERADIUS);
  assert_int_equal(test_add(w, 4, 0, 0, above, WM, ALL, ALL), AOI_ERADIUS);
  assert_int_equal(test_add(w, 4, 0, 0, 51, AOI_MARKER, ALL, ALL), AOI_ERADIUS);
  /* None of those made 4 live. */
  assert_int_equal(aoi_move(w, 4, 0, 0), AOI_ENOENT);
  assert_int_equal(test_add(w, 4, 0, 0, 0, AOI_MARKER, 0, 0), 0);

  /* aoi_move: ENOENT, then ECOORD. */
  assert_int_equal(aoi_move(w, 99, NAN, NAN), AOI_ENOENT);
  assert_int_equal(aoi_move(w, 1, NAN, 0), AOI_ECOORD);
  assert_int_equal(aoi_move(w, 1, 0, INFINITY), AOI_ECOORD);
  assert_int_equal(aoi_move(w, 1, -INFINITY, 0), AOI_ECOORD);
  assert_int_equal(aoi_move(w, 1, -1e30f, 1e30f), 0);

  /* aoi_set_radius: ENOENT, then ERADIUS. */
  assert_int_equal(aoi_set_radius(w, 99, NAN), AOI_ENOENT);
  assert_int_equal(aoi_set_radius(w, 1, -0.001f), AOI_ERADIUS);
  assert_int_equal(aoi_set_radius(w, 1, NAN), AOI_ERADIUS);
  assert_int_equal(aoi_set_radius(w, 1, INFINITY), AOI_ERADIUS);
  assert_int_equal(aoi_set_radius(w, 1, above), AOI_ERADIUS);
  assert_int_equal(aoi_set_radius(w, 1, 50), 0);
  assert_int_equal(aoi_set_radius(w, 2, 0), 0);

  /* aoi_set_layers: ENOENT only; any masks are fine. */
  assert_int_equal(aoi_set_layers(w, 99, ALL, ALL), AOI_ENOENT);
  assert_int_equal(aoi_set_layers(w, 1, 0, 0), 0);

  /* aoi_remove: ENOENT; the state as submitted so far counts. */
  assert_int_equal(aoi_remove(w, 99), AOI_ENOENT);
  assert_int_equal(aoi_remove(w, 3), 0);
  assert_int_equal(aoi_remove(w, 3), AOI_ENOENT);
  assert_int_equal(aoi_move(w, 3, 0, 0), AOI_ENOENT);
  assert_int_equal(aoi_set_radius(w, 3, 1), AOI_ENOENT);
  assert_int_equal(aoi_set_layers(w, 3, 1, 1), AOI_ENOENT);
  assert_int_equal(test_add(w, 3, NAN, 0, 1, WM, ALL, ALL), AOI_ECOORD);
  assert_int_equal(test_add(w, 3, 0, 0, 1, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 3, 0, 0, 1, WM, ALL, ALL), AOI_EEXIST);

  /* The same after a tick. */
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(test_add(w, 2, NAN, 0, -1, 0, ALL, ALL), AOI_EEXIST);
  assert_int_equal(aoi_move(w, 99, 0, 0), AOI_ENOENT);
  assert_int_equal(aoi_remove(w, 4), 0);
  assert_int_equal(aoi_move(w, 4, 0, 0), AOI_ENOENT);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_move(w, 4, 0, 0), AOI_ENOENT);
  assert_int_equal(aoi_set_radius(w, 1, above), AOI_ERADIUS);
  aoi_destroy(w);
}

/* Entities 1 to 6 of the failing scripts below, of radius `radius`: three
   pairs, each pair a few units apart. */
static void add_script_entities(aoi_world *w, float radius)
{
  static const float where[][2] = {{10, 10}, {20, 10}, {50, 50},
                                   {55, 52}, {90, 90}, {85, 88}};
  for (uint64_t id = 1; id <= 6; id++)
    assert_int_equal(test_add(w, id, where[id - 1][0], where[id - 1][1], radius,
                             WM, ALL, ALL),
                     0);
}

/* aoi_set_appeal or aoi_set_cap (cap == 1) on the world and the model: both
   return `want`. */
static void expect_policy(aoi_world *w, model *m, int cap, uint64_t id,
                          float appeal, uint32_t k, int want)
{
  int got = cap ? aoi_set_cap(w, id, k) : aoi_set_appeal(w, id, appeal);
  int oracle = cap ? model_set_cap(m, id, k) : model_set_appeal(m, id, appeal);
  if (got != want || oracle != want)
    fail_msg("%s(%" PRIu64 ", %.9g / %" PRIu32 "): the world %s, the model "
             "%s, expected %s",
             cap ? "aoi_set_cap" : "aoi_set_appeal", id, (double)appeal, k,
             aoi_strerror(got), aoi_strerror(oracle), aoi_strerror(want));
}

#define APPEAL(id, a, want) expect_policy(w, m, 0, (id), (a), 0, (want))
#define CAP(id, k, want) expect_policy(w, m, 1, (id), 0, (k), (want))

static void test_policy_error_order(void **state)
{
  (void)state;
  aoi_config c = config_for((layout){2, 3}, 50);
  aoi_world *w = create_or_fail(&c);
  model *m = model_create(&c);
  assert_non_null(m);
  const float above = nextafterf(50, 100);
  static const float bad[] = {-1, -1e-45f, -FLT_MIN, -FLT_MAX, 51,
                              1e30f, FLT_MAX, 0, 0, 0};
  float bad_appeals[COUNT_OF(bad)];
  memcpy(bad_appeals, bad, sizeof bad);
  bad_appeals[7] = above;
  bad_appeals[8] = NAN;
  bad_appeals[9] = INFINITY;

  /* NULL world first, whatever else is wrong. */
  assert_int_equal(aoi_set_appeal(NULL, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_set_appeal(NULL, 99, NAN), AOI_EINVAL);
  assert_int_equal(aoi_set_cap(NULL, 1, 1), AOI_EINVAL);
  assert_int_equal(aoi_set_cap(NULL, 99, 0), AOI_EINVAL);
  assert_int_equal(model_set_appeal(NULL, 99, NAN), AOI_EINVAL);
  assert_int_equal(model_set_cap(NULL, 99, 0), AOI_EINVAL);

  /* Nothing live yet: ENOENT before ERADIUS. */
  APPEAL(1, 5, AOI_ENOENT);
  CAP(1, 1, AOI_ENOENT);
  assert_int_equal(test_add(w, 1, 10, 10, 10, WM, ALL, ALL), 0);
  assert_int_equal(model_add(m, 1, 10, 10, 10, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 20, 10, 0, AOI_MARKER, ALL, ALL), 0);
  assert_int_equal(model_add(m, 2, 20, 10, 0, AOI_MARKER, ALL, ALL), 0);
  assert_int_equal(test_add(w, 3, 90, 90, 5, AOI_WATCHER, ALL, ALL), 0);
  assert_int_equal(model_add(m, 3, 90, 90, 5, AOI_WATCHER, ALL, ALL), 0);
  for (size_t i = 0; i < COUNT_OF(bad_appeals); i++) {
    APPEAL(99, bad_appeals[i], AOI_ENOENT);
    APPEAL(2, bad_appeals[i], AOI_ERADIUS);
    APPEAL(3, bad_appeals[i], AOI_ERADIUS);
  }
  APPEAL(2, -NAN, AOI_ERADIUS);
  APPEAL(2, -INFINITY, AOI_ERADIUS);
  CAP(99, 0, AOI_ENOENT);
  CAP(99, UINT32_MAX, AOI_ENOENT);

  /* Accepted: 0, -0, the smallest float, max_radius, on any kind of entity
     (an appeal of a watcher only, a cap of a marker only, do nothing); any
     cap. */
  static const float good_appeals[] = {0, -0.0f, 1e-45f, 0.5f, 25, 50};
  for (size_t i = 0; i < COUNT_OF(good_appeals); i++)
    for (uint64_t id = 1; id <= 3; id++)
      APPEAL(id, good_appeals[i], 0);
  static const uint32_t caps[] = {0, 1, 2, 3, 1000, UINT32_C(1) << 31,
                                  UINT32_MAX, 0};
  for (size_t i = 0; i < COUNT_OF(caps); i++)
    for (uint64_t id = 1; id <= 3; id++)
      CAP(id, caps[i], 0);

  /* Live as submitted: removed, ENOENT (even with a bad appeal); added
     again before the tick, live. */
  assert_int_equal(aoi_remove(w, 2), 0);
  assert_int_equal(model_remove(m, 2), 0);
  APPEAL(2, 5, AOI_ENOENT);
  APPEAL(2, NAN, AOI_ENOENT);
  CAP(2, 1, AOI_ENOENT);
  assert_int_equal(test_add(w, 2, 20, 10, 0, AOI_MARKER, ALL, ALL), 0);
  assert_int_equal(model_add(m, 2, 20, 10, 0, AOI_MARKER, ALL, ALL), 0);
  APPEAL(2, 40, 0);
  APPEAL(2, above, AOI_ERADIUS);
  CAP(2, 1, 0);

  /* The same after a tick; and EBUSY, before ENOENT and ERADIUS, while a
     tick is in flight. */
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(model_tick(m), 0);
  APPEAL(1, NAN, AOI_ERADIUS);
  APPEAL(98, 1, AOI_ENOENT);
  CAP(98, 1, AOI_ENOENT);
  APPEAL(1, 50, 0);
  CAP(1, 1, 0);
  assert_int_equal(aoi_tick_begin(w), 0);
  assert_int_equal(aoi_set_appeal(w, 1, 5), AOI_EBUSY);
  assert_int_equal(aoi_set_appeal(w, 1, NAN), AOI_EBUSY);
  assert_int_equal(aoi_set_appeal(w, 98, NAN), AOI_EBUSY);
  assert_int_equal(aoi_set_cap(w, 1, 0), AOI_EBUSY);
  assert_int_equal(aoi_set_cap(w, 98, 0), AOI_EBUSY);
  assert_int_equal(aoi_tick_end(w), 0);
  assert_int_equal(model_tick(m), 0);
  APPEAL(1, 0, 0);
  CAP(1, 0, 0);
  aoi_destroy(w);
  model_destroy(m);
}

#undef APPEAL
#undef CAP

/* The policy script on two worlds, the second with failing appeal and cap
   calls in between (ERADIUS, ENOENT, EBUSY in a tick in flight): the events
   and views must come out the same. The script sets policies that change
   what is seen (an appeal of max_radius, caps of 1 and 2), so that a failed
   call that cleared or changed one would show. */
static void policy_tick(aoi_world *w, int with_failures, records *out)
{
  out->count = 0;
  assert_int_equal(aoi_tick_begin(w), 0);
  if (with_failures) {
    assert_int_equal(aoi_set_appeal(w, 3, 0), AOI_EBUSY);
    assert_int_equal(aoi_set_appeal(w, 4, 30), AOI_EBUSY);
    assert_int_equal(aoi_set_cap(w, 1, 0), AOI_EBUSY);
    assert_int_equal(aoi_set_cap(w, 2, 1), AOI_EBUSY);
  }
  assert_int_equal(aoi_tick_end(w), 0);
  drain_all(w, out);
}

static void run_policy_script(aoi_world *w, int with_failures, records *t1,
                              records *t2, answer views[8])
{
  add_script_entities(w, 10);
  assert_int_equal(aoi_set_appeal(w, 3, 30), 0);
  assert_int_equal(aoi_set_cap(w, 1, 1), 0);
  assert_int_equal(aoi_set_cap(w, 4, 2), 0);
  if (with_failures) {
    assert_int_equal(aoi_set_appeal(w, 3, NAN), AOI_ERADIUS);
    assert_int_equal(aoi_set_appeal(w, 3, 31), AOI_ERADIUS);
    assert_int_equal(aoi_set_appeal(w, 3, -1), AOI_ERADIUS);
    assert_int_equal(aoi_set_appeal(w, 99, 10), AOI_ENOENT);
    assert_int_equal(aoi_set_cap(w, 99, 1), AOI_ENOENT);
  }
  policy_tick(w, with_failures, t1);
  assert_int_equal(aoi_move(w, 2, 45, 45), 0);
  assert_int_equal(aoi_remove(w, 6), 0);
  if (with_failures) {
    assert_int_equal(aoi_set_appeal(w, 6, 30), AOI_ENOENT);
    assert_int_equal(aoi_set_cap(w, 6, 1), AOI_ENOENT);
    assert_int_equal(aoi_set_appeal(w, 4, INFINITY), AOI_ERADIUS);
  }
  assert_int_equal(test_add(w, 6, 60, 55, 10, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 7, 50, 55, 30, WM, ALL, ALL), 0);
  if (with_failures)
    assert_int_equal(aoi_set_appeal(w, 7, nextafterf(30, 31)), AOI_ERADIUS);
  policy_tick(w, with_failures, t2);
  for (uint64_t id = 1; id <= 7; id++)
    view_of(w, id, &views[id]);
}

/* The same script on two worlds, the second with failing calls in between:
   the events and views must come out the same. */
static void failing_script_step(aoi_world *w, int with_failures, int step)
{
  if (!with_failures)
    return;
  switch (step) {
  case 0:
    assert_int_equal(test_add(w, 1, 0, 0, 1, WM, ALL, ALL), AOI_EEXIST);
    assert_int_equal(test_add(w, 8, NAN, 50, 1, WM, ALL, ALL), AOI_ECOORD);
    assert_int_equal(test_add(w, 9, 50, 50, 10, 0, ALL, ALL), AOI_EFLAGS);
    assert_int_equal(test_add(w, 10, 50, 50, 31, WM, ALL, ALL), AOI_ERADIUS);
    break;
  case 1:
    assert_int_equal(aoi_move(w, 2, NAN, 0), AOI_ECOORD);
    assert_int_equal(aoi_move(w, 99, 50, 50), AOI_ENOENT);
    assert_int_equal(aoi_set_radius(w, 2, 31), AOI_ERADIUS);
    assert_int_equal(aoi_set_radius(w, 2, -1), AOI_ERADIUS);
    assert_int_equal(aoi_set_layers(w, 99, 0, 0), AOI_ENOENT);
    assert_int_equal(aoi_remove(w, 99), AOI_ENOENT);
    break;
  case 2:
    assert_int_equal(aoi_remove(w, 5), AOI_ENOENT);
    assert_int_equal(aoi_move(w, 5, 50, 50), AOI_ENOENT);
    assert_int_equal(test_add(w, 7, 0, 0, 30, WM, ALL, ALL), AOI_EEXIST);
    assert_int_equal(aoi_set_radius(w, 7, INFINITY), AOI_ERADIUS);
    break;
  default:
    break;
  }
}

static void run_failing_script(aoi_world *w, int with_failures, records *t1,
                               records *t2, answer views[8])
{
  add_script_entities(w, 30);
  failing_script_step(w, with_failures, 0);
  tick_and_drain(w, t1);
  failing_script_step(w, with_failures, 0);
  failing_script_step(w, with_failures, 1);
  assert_int_equal(aoi_move(w, 1, 60, 50), 0);
  failing_script_step(w, with_failures, 1);
  assert_int_equal(aoi_set_radius(w, 3, 5), 0);
  assert_int_equal(aoi_set_layers(w, 4, 2, 2), 0);
  assert_int_equal(aoi_remove(w, 5), 0);
  assert_int_equal(test_add(w, 7, 50, 55, 30, WM, ALL, ALL), 0);
  failing_script_step(w, with_failures, 2);
  tick_and_drain(w, t2);
  for (uint64_t id = 1; id <= 7; id++) {
    if (id == 5) {
      assert_int_equal(aoi_view(w, id, views[id].ids, MAX_IDS,
                                &views[id].count),
                       AOI_ENOENT);
      continue;
    }
    view_of(w, id, &views[id]);
  }
  for (uint64_t id = 8; id <= 10; id++)
    assert_int_equal(aoi_move(w, id, 0, 0), AOI_ENOENT);
}

typedef void (*failing_script)(aoi_world *w, int with_failures, records *t1,
                               records *t2, answer views[8]);

/* Runs `script` on two worlds of every layout, the second with its failing
   calls: the events, the views of ids 1 to 7 (but `gone`, removed at the
   end) and the number of entities must come out the same. */
static void expect_failures_change_nothing(failing_script script,
                                           uint64_t gone, uint64_t entities)
{
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    records clean1 = {0}, clean2 = {0}, dirty1 = {0}, dirty2 = {0};
    answer clean_views[8], dirty_views[8];
    aoi_world *a = world_for(layouts[l], 30);
    aoi_world *b = world_for(layouts[l], 30);
    script(a, 0, &clean1, &clean2, clean_views);
    script(b, 1, &dirty1, &dirty2, dirty_views);
    assert_true(clean1.count > 0 && clean2.count > 0);
    expect_records(&dirty1, clean1.items, clean1.count);
    expect_records(&dirty2, clean2.items, clean2.count);
    for (uint64_t id = 1; id <= 7; id++)
      if (id != gone)
        expect_ids(&dirty_views[id], clean_views[id].ids,
                   clean_views[id].count);
    aoi_stats sa, sb;
    assert_int_equal(aoi_world_stats(a, &sa), 0);
    assert_int_equal(aoi_world_stats(b, &sb), 0);
    assert_int_equal(sa.entities, entities);
    assert_int_equal(sb.entities, entities);
    aoi_destroy(a);
    aoi_destroy(b);
    records_free(&clean1);
    records_free(&clean2);
    records_free(&dirty1);
    records_free(&dirty2);
  }
}

static void test_failed_operations_change_nothing(void **state)
{
  (void)state;
  expect_failures_change_nothing(run_failing_script, 5, 6);
}

static void test_failed_policy_calls_change_nothing(void **state)
{
  (void)state;
  expect_failures_change_nothing(run_policy_script, 0, 7);
}

/* ---- ids, radii and tags ------------------------------------------------- */

/* Every uint64_t is an id: 0 and UINT64_MAX are entities like any other,
   seen, moved, tagged, removed and added again, on every layout. */
static void test_edge_ids(void **state)
{
  (void)state;
  static const layout edges[] = {{1, 1}, {2, 3}, {3, 7}};
  for (size_t l = 0; l < sizeof(edges) / sizeof(edges[0]); l++) {
    aoi_world *w = world_for(edges[l], 50);
    const uint64_t lo = 0, hi = UINT64_MAX;
    assert_int_equal(test_add(w, lo, 10, 10, 20, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, hi, 15, 10, 20, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, lo, 1, 1, 1, WM, ALL, ALL), AOI_EEXIST);
    assert_int_equal(test_add(w, hi, 1, 1, 1, WM, ALL, ALL), AOI_EEXIST);
    assert_int_equal(aoi_tick(w), 0);
    const record tick1[] = {{lo, {hi, 0, 15, 10, AOI_ENTER, 1}}};
    expect_drain(w, lo, tick1, 1);
    const record tick1b[] = {{hi, {lo, 0, 10, 10, AOI_ENTER, 1}}};
    expect_drain(w, hi, tick1b, 1);
    uint64_t ids[2];
    size_t n;
    assert_int_equal(aoi_view(w, lo, ids, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_true(ids[0] == hi);
    assert_int_equal(aoi_move(w, hi, 16, 11), 0);
    assert_int_equal(aoi_tick(w), 0);
    const record tick2[] = {{lo, {hi, 0, 16, 11, AOI_MOVE, 2}}};
    expect_drain(w, lo, tick2, 1);
    assert_int_equal(aoi_remove(w, hi), 0);
    assert_int_equal(aoi_tick(w), 0);
    const record tick3[] = {{lo, {hi, 0, 0, 0, AOI_LEAVE, 3}}};
    expect_drain(w, lo, tick3, 1);
    assert_int_equal(aoi_move(w, hi, 1, 1), AOI_ENOENT);
    assert_int_equal(test_add(w, hi, 12, 10, 20, WM, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);
    const record tick4[] = {{lo, {hi, 0, 12, 10, AOI_ENTER, 4}}};
    expect_drain(w, lo, tick4, 1);
    assert_int_equal(aoi_destroy(w), 0);
  }
}

/* A marker-only entity has no view: its radius is checked like any
   radius (AOI_ERADIUS above max_radius) and kept, but it sees nothing,
   gets no events, and a new radius changes none of that; it is seen by
   watchers within their own radius, whatever its own. */
static void test_marker_radius_unused(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){2, 3}, 50);
  assert_int_equal(test_add(w, 1, 10, 10, 51, AOI_MARKER, ALL, ALL),
                   AOI_ERADIUS);
  assert_int_equal(test_add(w, 1, 10, 10, 50, AOI_MARKER, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 12, 10, 5, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 3, 40, 10, 5, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  uint64_t ids[4];
  size_t n = 77;
  assert_int_equal(aoi_view(w, 1, ids, 4, &n), 0);
  assert_int_equal(n, 0);
  const aoi_event *events;
  assert_int_equal(aoi_drain(w, 1, &events, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(aoi_watchers_of(w, 1, ids, 4, &n), 0);
  assert_int_equal(n, 1); /* 2 sees it; 3, 30 away, does not */
  assert_int_equal(ids[0], 2);
  assert_int_equal(aoi_set_radius(w, 1, 0), 0);
  assert_int_equal(aoi_set_radius(w, 1, 51), AOI_ERADIUS);
  assert_int_equal(aoi_move(w, 3, 39, 10), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_view(w, 1, ids, 4, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(aoi_drain(w, 1, &events, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(aoi_destroy(w), 0);
}

/* A tag set after the add takes effect at the next tick, like every
   operation: an event carries its entity's tag as of the tick that made
   it, a delivery the watcher's as of the last tick; a removed entity's
   leave keeps its last tag, and a re-added id starts from its new one. */
static void deliver_tags(void *user, uint64_t watcher, uint64_t tag,
                         const aoi_event *events, size_t count)
{
  uint64_t *seen = user; /* [watcher tag, event tags...] for watcher 1 */
  if (watcher != 1)
    return;
  seen[0] = tag;
  for (size_t i = 0; i < count && i < 3; i++)
    seen[1 + i] = events[i].tag;
}

static void test_tags(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){2, 2}, 50);
  assert_int_equal(aoi_add(w, &(aoi_entity){.id = 1, .tag = 100, .x = 10,
                                            .y = 10, .radius = 20,
                                            .flags = WM, .layers = ALL,
                                            .interest = ALL}),
                   0);
  assert_int_equal(aoi_add(w, &(aoi_entity){.id = 2, .tag = 200, .x = 12,
                                            .y = 10, .flags = AOI_MARKER,
                                            .layers = ALL}),
                   0);
  assert_int_equal(aoi_set_tag(w, 2, 201), 0); /* before its first tick */
  assert_int_equal(aoi_set_tag(w, 3, 1), AOI_ENOENT);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_set_tag(w, 1, 101), 0); /* for the next tick */
  uint64_t seen[4] = {0};
  for (unsigned g = 0; g < aoi_delivery_segments(w); g++)
    assert_int_equal(aoi_deliver(w, g, deliver_tags, seen), 0);
  assert_true(seen[0] == 100 && seen[1] == 201);
  assert_int_equal(aoi_move(w, 2, 13, 10), 0);
  assert_int_equal(aoi_set_tag(w, 2, 202), 0);
  assert_int_equal(aoi_remove(w, 1), 0);
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(aoi_set_tag(w, 1, 102), 0);
  assert_int_equal(aoi_tick(w), 0);
  memset(seen, 0, sizeof(seen));
  for (unsigned g = 0; g < aoi_delivery_segments(w); g++)
    assert_int_equal(aoi_deliver(w, g, deliver_tags, seen), 0);
  /* a new watcher 1, to which 2 enters */
  assert_true(seen[0] == 102 && seen[1] == 202);
  const aoi_event *events;
  size_t n;
  assert_int_equal(aoi_remove(w, 2), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_drain(w, 1, &events, &n), 0);
  assert_int_equal(n, 1); /* a removed entity's leave keeps its tag */
  assert_true(events[0].kind == AOI_LEAVE && events[0].tag == 202);
  assert_int_equal(aoi_destroy(w), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_operation_error_order),
      cmocka_unit_test(test_failed_operations_change_nothing),
      cmocka_unit_test(test_policy_error_order),
      cmocka_unit_test(test_failed_policy_calls_change_nothing),
      cmocka_unit_test(test_edge_ids),
      cmocka_unit_test(test_marker_radius_unused),
      cmocka_unit_test(test_tags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
