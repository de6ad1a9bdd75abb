/*
 * test_refs.c: references (aoi_ref_of, aoi_move_ref), one contract at a
 * time: their error codes and check order, what a reference is valid for
 * (the entity's whole life, and nothing after it: a remove, a same-tick
 * respawn, an add and remove that cancel out, a handle taken by another
 * entity), 0 and forged references, the generation's wrap, and that a move
 * by reference is aoi_move: the same events, views and folding into one
 * record, and a failed call changes nothing (against worlds that moved by
 * id and made no failing call), AOI_ENOMEM included.
 *
 * The test knows how submit.c builds a reference (the generation above
 * the handle) only to forge ones and to check that a handle was reused;
 * the world's tables (internal.h) only to wrap a generation. aoi_move_many
 * (moves by id in a batch) is here too: its checks, and that a batch is
 * the aoi_move calls it stands for, up to the first that fails. Scenarios run
 * on several layouts of threads x shards, with entities spread over the
 * bounds so that moves cross shards.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "support.h"
#include "internal.h" /* aoi__world_valid, the generation table */

#define SENTINEL UINT64_C(0x5e5e5e5e5e5e5e5e)
#define ALL UINT32_MAX
#define WM (AOI_WATCHER | AOI_MARKER)
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_IDS 64

typedef struct layout {
  unsigned threads, shards;
} layout;

static const layout layouts[] = {{1, 1}, {1, 4}, {2, 1}, {2, 3},
                                 {2, 8}, {4, 3}, {4, 8}};

/* A world over (0, 0) - (100, 100); `allocator` NULL for malloc. */
static aoi_world *world_with(layout l, const aoi_allocator *allocator)
{
  aoi_config c;
  aoi_config_default(&c);
  c.threads = l.threads;
  c.shards = l.shards;
  c.max_x = 100;
  c.max_y = 100;
  c.max_radius = 50;
  c.allocator = allocator;
  aoi_world *w = NULL;
  int rc = aoi_create(&c, &w);
  if (rc != 0)
    fail_msg("aoi_create (threads %u, shards %u): %s", l.threads, l.shards,
             aoi_strerror(rc));
  return w;
}

static aoi_world *world_for(layout l)
{
  return world_with(l, NULL);
}

/* Takes every watcher's events, in the order aoi_pending gives. */
static void drain(aoi_world *w, records *out)
{
  const uint64_t *ids;
  size_t count;
  assert_int_equal(aoi_pending(w, &ids, &count), 0);
  for (size_t i = 0; i < count; i++) {
    const aoi_event *events;
    size_t k;
    assert_int_equal(aoi_drain(w, ids[i], &events, &k), 0);
    for (size_t j = 0; j < k; j++)
      records_push(out, ids[i], &events[j]);
  }
}

static aoi_ref ref_of(aoi_world *w, uint64_t id)
{
  aoi_ref ref = SENTINEL;
  int rc = aoi_ref_of(w, id, &ref);
  if (rc != 0)
    fail_msg("aoi_ref_of(%" PRIu64 "): %s", id, aoi_strerror(rc));
  assert_true(ref != 0 && ref != SENTINEL);
  return ref;
}

/* The handle and generation a reference of world w names, and a
   reference forged from parts with w's key (submit.c's encoding). */
static uint32_t handle_of(const aoi_world *w, aoi_ref ref)
{
  return (uint32_t)(ref * w->ref_inverse);
}
static uint32_t generation_of(const aoi_world *w, aoi_ref ref)
{
  return (uint32_t)((ref * w->ref_inverse) >> 32);
}
static aoi_ref forge(const aoi_world *w, uint32_t generation, uint32_t handle)
{
  return ((aoi_ref)generation << 32 | handle) * w->ref_key;
}

static void expect_valid(aoi_world *w)
{
  assert_true(aoi__world_valid(w));
}

/* ---- aoi_ref_of --------------------------------------------------------- */

static void test_ref_of_errors(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){2, 3});
  aoi_ref ref = SENTINEL;

  /* NULL world or out-parameter, before anything else. */
  assert_int_equal(aoi_ref_of(NULL, 1, &ref), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(NULL, 1, NULL), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(w, 1, NULL), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(w, 1, &ref), AOI_ENOENT);
  assert_true(ref == SENTINEL);

  /* Live as submitted: an entity added since the last tick has one; it is
     the same for the entity's whole life, and no two live entities share
     one. */
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 90, 90, 0, AOI_MARKER, ALL, ALL), 0);
  assert_int_equal(aoi_ref_of(w, 1, NULL), AOI_EINVAL);
  aoi_ref one = ref_of(w, 1), two = ref_of(w, 2);
  assert_true(one != two);
  assert_true(ref_of(w, 1) == one);
  assert_int_equal(aoi_tick(w), 0);
  assert_true(ref_of(w, 1) == one);
  assert_int_equal(aoi_move(w, 1, 95, 5), 0); /* into another shard */
  assert_int_equal(aoi_set_radius(w, 1, 30), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_true(ref_of(w, 1) == one);
  assert_true(ref_of(w, 2) == two);

  /* Removed: ENOENT at once, and after the tick; nothing written. */
  assert_int_equal(aoi_remove(w, 2), 0);
  ref = SENTINEL;
  assert_int_equal(aoi_ref_of(w, 2, &ref), AOI_ENOENT);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_ref_of(w, 2, &ref), AOI_ENOENT);
  assert_int_equal(aoi_ref_of(w, 99, &ref), AOI_ENOENT);
  assert_true(ref == SENTINEL);

  /* In flight: EBUSY, after the NULL checks, before ENOENT. */
  assert_int_equal(aoi_tick_begin(w), 0);
  assert_int_equal(aoi_ref_of(NULL, 1, &ref), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(w, 1, NULL), AOI_EINVAL);
  assert_int_equal(aoi_ref_of(w, 1, &ref), AOI_EBUSY);
  assert_int_equal(aoi_ref_of(w, 99, &ref), AOI_EBUSY);
  assert_true(ref == SENTINEL);
  assert_int_equal(aoi_tick_end(w), 0);
  assert_true(ref_of(w, 1) == one);
  aoi_destroy(w);
}

/* ---- aoi_move_ref: codes and their order -------------------------------- */

static void test_move_ref_error_order(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){2, 3});
  assert_int_equal(aoi_move_ref(w, 0, 0, 0), AOI_ENOENT); /* empty world */
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 20, 10, 0, AOI_MARKER, ALL, ALL), 0);
  aoi_ref one = ref_of(w, 1), two = ref_of(w, 2);

  /* NULL world wins over everything. */
  assert_int_equal(aoi_move_ref(NULL, one, 0, 0), AOI_EINVAL);
  assert_int_equal(aoi_move_ref(NULL, 0, NAN, NAN), AOI_EINVAL);

  /* ENOENT before ECOORD. */
  assert_int_equal(aoi_move_ref(w, 0, 0, 0), AOI_ENOENT);
  assert_int_equal(aoi_move_ref(w, 0, NAN, INFINITY), AOI_ENOENT);
  assert_int_equal(aoi_remove(w, 2), 0);
  assert_int_equal(aoi_move_ref(w, two, 1, 1), AOI_ENOENT);
  assert_int_equal(aoi_move_ref(w, two, NAN, 1), AOI_ENOENT);

  /* then ECOORD */
  assert_int_equal(aoi_move_ref(w, one, NAN, 0), AOI_ECOORD);
  assert_int_equal(aoi_move_ref(w, one, 0, NAN), AOI_ECOORD);
  assert_int_equal(aoi_move_ref(w, one, INFINITY, 0), AOI_ECOORD);
  assert_int_equal(aoi_move_ref(w, one, 0, -INFINITY), AOI_ECOORD);
  assert_int_equal(aoi_move_ref(w, one, -1e30f, 1e30f), 0);
  assert_int_equal(aoi_move_ref(w, one, 10, 10), 0);
  assert_int_equal(aoi_tick(w), 0);

  /* EBUSY while a tick is in flight, before ENOENT and ECOORD. */
  assert_int_equal(aoi_tick_begin(w), 0);
  assert_int_equal(aoi_move_ref(NULL, one, 0, 0), AOI_EINVAL);
  assert_int_equal(aoi_move_ref(w, one, 5, 5), AOI_EBUSY);
  assert_int_equal(aoi_move_ref(w, one, NAN, 5), AOI_EBUSY);
  assert_int_equal(aoi_move_ref(w, 0, NAN, 5), AOI_EBUSY);
  assert_int_equal(aoi_move_ref(w, two, 5, 5), AOI_EBUSY);
  assert_int_equal(aoi_tick_end(w), 0);
  assert_int_equal(aoi_move_ref(w, two, 5, 5), AOI_ENOENT);
  assert_int_equal(aoi_move_ref(w, one, 5, 5), 0);
  expect_valid(w);
  aoi_destroy(w);
}

/* ---- what a reference is valid for -------------------------------------- */

static void test_stale_refs(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    aoi_world *w = world_for(layouts[l]);
    for (uint64_t id = 1; id <= 4; id++)
      assert_int_equal(test_add(w, id, (float)(20 * id), (float)(20 * id), 10,
                               WM, ALL, ALL),
                       0);
    aoi_ref a = ref_of(w, 1), c = ref_of(w, 2), r3 = ref_of(w, 3);
    assert_int_equal(aoi_tick(w), 0);

    /* Removed: refused before and after the tick; the id added again is a
       new entity with a new reference, and the old one stays refused. */
    assert_int_equal(aoi_remove(w, 1), 0);
    assert_int_equal(aoi_move_ref(w, a, 50, 50), AOI_ENOENT);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_move_ref(w, a, 50, 50), AOI_ENOENT);
    assert_int_equal(test_add(w, 1, 30, 30, 10, WM, ALL, ALL), 0);
    aoi_ref b = ref_of(w, 1);
    assert_true(b != a);
    assert_int_equal(aoi_move_ref(w, a, 50, 50), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, b, 31, 31), 0);

    /* Removed and added again before the same tick. */
    assert_int_equal(aoi_remove(w, 2), 0);
    assert_int_equal(test_add(w, 2, 45, 45, 10, WM, ALL, ALL), 0);
    aoi_ref d = ref_of(w, 2);
    assert_true(d != c);
    assert_int_equal(aoi_move_ref(w, c, 50, 50), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, d, 46, 46), 0);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_move_ref(w, c, 50, 50), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, b, 32, 32), 0);
    assert_int_equal(aoi_move_ref(w, d, 47, 47), 0);

    /* A removed entity's handle taken by another id, once the ticks that
       keep it for the leaves have passed: its old reference reaches
       nobody. */
    assert_int_equal(aoi_remove(w, 3), 0);
    for (int t = 0; t < 3; t++)
      assert_int_equal(aoi_tick(w), 0);
    /* (free handles are taken oldest first: add until one takes it) */
    uint64_t id100 = 100;
    aoi_ref r100 = 0;
    for (; id100 < 164; id100++) {
      assert_int_equal(test_add(w, id100, 60, 60, 10, WM, ALL, ALL), 0);
      r100 = ref_of(w, id100);
      if (handle_of(w, r100) == handle_of(w, r3))
        break;
    }
    assert_int_equal(handle_of(w, r100), handle_of(w, r3));
    assert_true(r100 != r3);
    assert_int_equal(aoi_move_ref(w, r3, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, r100, 61, 61), 0);

    /* An add and a remove that cancel out before a tick: the handle is
       free at once, and its reference stale at once. */
    assert_int_equal(test_add(w, 50, 50, 50, 10, WM, ALL, ALL), 0);
    aoi_ref e = ref_of(w, 50);
    assert_int_equal(aoi_move_ref(w, e, 51, 51), 0);
    assert_int_equal(aoi_remove(w, 50), 0);
    assert_int_equal(aoi_move_ref(w, e, 52, 52), AOI_ENOENT);
    aoi_ref none = SENTINEL;
    assert_int_equal(aoi_ref_of(w, 50, &none), AOI_ENOENT);
    assert_true(none == SENTINEL);
    /* Its handle, free now with its new generation, is no entity's: a
       reference forged from them is refused too. */
    uint32_t h = handle_of(w, e);
    assert_int_equal(aoi_move_ref(w, forge(w, w->generation[h], h), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(test_add(w, 50, 53, 53, 10, WM, ALL, ALL), 0);
    aoi_ref f = ref_of(w, 50);
    assert_int_equal(handle_of(w, f), handle_of(w, e)); /* the same handle */
    assert_true(f != e);
    assert_int_equal(aoi_move_ref(w, e, 1, 1), AOI_ENOENT);
    /* Another id on that handle, after a second cancel. */
    assert_int_equal(aoi_remove(w, 50), 0);
    assert_int_equal(test_add(w, 51, 54, 54, 10, WM, ALL, ALL), 0);
    aoi_ref g = ref_of(w, 51);
    assert_int_equal(handle_of(w, g), handle_of(w, e));
    assert_int_equal(aoi_move_ref(w, e, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, f, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, g, 55, 55), 0);
    assert_int_equal(aoi_tick(w), 0);

    /* 0 and forged references: a handle out of range, a generation that
       is not the handle's, a removed entity's handle (waiting for its
       leaves) with its current generation. */
    aoi_ref live = ref_of(w, 4);
    uint32_t gen = generation_of(w, live);
    assert_int_equal(aoi_move_ref(w, 0, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, gen, w->handle_count), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, gen, w->handle_capacity), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, gen, UINT32_MAX), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, 1, UINT32_MAX - 1), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, 0, handle_of(w, live)), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, gen + 1, handle_of(w, live)), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, UINT32_MAX, handle_of(w, live)), 1,
                                  1),
                     AOI_ENOENT);
    assert_int_equal(aoi_remove(w, 51), 0);
    assert_int_equal(aoi_move_ref(w, forge(w, w->generation[h], h), 1, 1),
                     AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, live, 80, 80), 0);
    assert_int_equal(aoi_tick(w), 0);
    expect_valid(w);
    aoi_destroy(w);
  }
}

/* A handle whose generation is at its largest is retired at the next
   removal: its last reference is refused, and no entity takes the handle
   again, whether the removal cancelled an add or waited for a tick. */
static void test_generation_retires(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){1, 1});
  for (int cancel = 0; cancel < 2; cancel++) {
    uint64_t id = 7 + (uint64_t)cancel;
    assert_int_equal(test_add(w, id, 10, 10, 10, WM, ALL, ALL), 0);
    if (!cancel)
      assert_int_equal(aoi_tick(w), 0);
    uint32_t h = handle_of(w, ref_of(w, id));
    w->generation[h] = UINT32_MAX;
    aoi_ref last = ref_of(w, id);
    assert_true(last == forge(w, UINT32_MAX, h));
    assert_int_equal(aoi_move_ref(w, last, 11, 11), 0);
    assert_int_equal(aoi_remove(w, id), 0);
    assert_int_equal(w->generation[h], 0); /* retired */
    assert_int_equal(aoi_move_ref(w, last, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, 0, h), 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(w, forge(w, 1, h), 1, 1), AOI_ENOENT);
    /* Through ticks and many adds, no entity gets the handle back. */
    for (uint64_t i = 0; i < 200; i++) {
      assert_int_equal(test_add(w, 1000 + i, 20, 20, 10, WM, ALL, ALL), 0);
      assert_int_not_equal(handle_of(w, ref_of(w, 1000 + i)), h);
      if (i % 50 == 0)
        assert_int_equal(aoi_tick(w), 0);
    }
    for (uint64_t i = 0; i < 200; i++) {
      assert_int_equal(aoi_remove(w, 1000 + i), 0);
      if (i % 50 == 0)
        assert_int_equal(aoi_tick(w), 0);
    }
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_move_ref(w, last, 1, 1), AOI_ENOENT);
    expect_valid(w);
  }
  aoi_destroy(w);
}

/* A reference is its world's: the same entity (same id, same handle, same
   generation) in another world has another reference, and neither world
   takes the other's, nor a reference made of a handle and a generation
   without the key. */
static void test_refs_are_keyed(void **state)
{
  (void)state;
  aoi_world *a = world_for((layout){1, 1}), *b = world_for((layout){1, 1});
  for (uint64_t id = 1; id <= 64; id++) {
    assert_int_equal(test_add(a, id, 10, 10, 10, WM, ALL, ALL), 0);
    assert_int_equal(test_add(b, id, 10, 10, 10, WM, ALL, ALL), 0);
  }
  for (uint64_t id = 1; id <= 64; id++) {
    aoi_ref ra = ref_of(a, id), rb = ref_of(b, id);
    assert_true(ra != rb);
    assert_int_equal(aoi_move_ref(a, rb, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(b, ra, 1, 1), AOI_ENOENT);
    uint32_t h = handle_of(a, ra);
    assert_int_equal(aoi_move_ref(a, (aoi_ref)1 << 32 | h, 1, 1), AOI_ENOENT);
    assert_int_equal(aoi_move_ref(a, ra, 2, 2), 0);
  }
  expect_valid(a);
  expect_valid(b);
  aoi_destroy(a);
  aoi_destroy(b);
}

/* ---- a move by reference is aoi_move ------------------------------------ */

/* How a script world moves its entities, and whether it also makes calls
   that must fail. */
enum { BY_ID, BY_REF, BY_REF_FAILING };

typedef struct script {
  aoi_world *w;
  int mode;
  aoi_ref ref[128]; /* by id, taken at each add (BY_REF*) */
  records ticks[8];
  uint64_t views[10][MAX_IDS];
  size_t view_counts[10];
} script;

static void add(script *s, uint64_t id, float x, float y, float radius,
                unsigned flags)
{
  assert_int_equal(test_add(s->w, id, x, y, radius, flags, ALL, ALL), 0);
  if (s->mode != BY_ID)
    s->ref[id] = ref_of(s->w, id);
}

static void move(script *s, uint64_t id, float x, float y)
{
  int rc = s->mode == BY_ID ? aoi_move(s->w, id, x, y)
                            : aoi_move_ref(s->w, s->ref[id], x, y);
  assert_int_equal(rc, 0);
}

/* Calls that must fail, in the failing world only. */
static void expect_refused(script *s, aoi_ref ref, float x, float y, int want)
{
  if (s->mode == BY_REF_FAILING)
    assert_int_equal(aoi_move_ref(s->w, ref, x, y), want);
}

/* Ticks with aoi_tick_begin / aoi_tick_end (the failing world calls in
   between) and takes every event. */
static void tick(script *s, int n)
{
  assert_int_equal(aoi_tick_begin(s->w), 0);
  if (s->mode == BY_REF_FAILING) {
    aoi_ref ref = SENTINEL;
    assert_int_equal(aoi_move_ref(s->w, s->ref[1], 0, 0), AOI_EBUSY);
    assert_int_equal(aoi_move_ref(s->w, 0, NAN, 0), AOI_EBUSY);
    assert_int_equal(aoi_ref_of(s->w, 1, &ref), AOI_EBUSY);
    assert_true(ref == SENTINEL);
  }
  assert_int_equal(aoi_tick_end(s->w), 0);
  expect_valid(s->w);
  drain(s->w, &s->ticks[n]);
}

static void run_script(script *s)
{
  /* 1: a spread of watchers and markers. */
  add(s, 1, 10, 10, 30, WM);
  add(s, 2, 20, 10, 10, WM);
  add(s, 3, 50, 50, 0, AOI_MARKER);
  add(s, 4, 55, 52, 20, WM);
  add(s, 5, 90, 90, 0, AOI_MARKER);
  add(s, 6, 85, 88, 30, WM);
  expect_refused(s, s->ref[2], NAN, 10, AOI_ECOORD);
  tick(s, 1);

  /* 2: across borders; three moves of one entity fold, the last wins;
     a teleport; a respawn in the same tick, whose old reference must not
     move the new entity. */
  aoi_ref old6 = s->ref[6];
  move(s, 2, 40, 12);
  move(s, 3, 70, 70);
  if (s->mode != BY_ID)
    assert_int_equal(aoi_move(s->w, 3, 10, 90), 0); /* by id between */
  else
    move(s, 3, 10, 90);
  move(s, 3, 52, 49);
  move(s, 5, 5, 5);
  assert_int_equal(aoi_remove(s->w, 6), 0);
  expect_refused(s, old6, 50, 50, AOI_ENOENT);
  add(s, 6, 80, 80, 30, WM);
  expect_refused(s, old6, 50, 50, AOI_ENOENT);
  expect_refused(s, old6, NAN, 50, AOI_ENOENT);
  expect_refused(s, s->ref[2], 40, INFINITY, AOI_ECOORD);
  expect_refused(s, 0, 1, 1, AOI_ENOENT);
  if (s->mode == BY_REF_FAILING) {
    aoi_ref ref = SENTINEL;
    assert_int_equal(aoi_ref_of(s->w, 99, &ref), AOI_ENOENT);
    assert_int_equal(aoi_ref_of(s->w, 99, NULL), AOI_EINVAL);
    assert_int_equal(aoi_ref_of(NULL, 1, &ref), AOI_EINVAL);
    assert_int_equal(aoi_move_ref(NULL, s->ref[1], 1, 1), AOI_EINVAL);
    assert_true(ref == SENTINEL);
  }
  tick(s, 2);

  /* 3: an add and a remove that cancel out, then another id on the same
     handle: the cancelled one's reference must not move it. */
  move(s, 1, 15, 15);
  move(s, 6, 60, 60);
  add(s, 7, 30, 30, 10, WM);
  aoi_ref ref7 = s->ref[7];
  assert_int_equal(aoi_remove(s->w, 7), 0);
  add(s, 8, 50, 55, 10, WM);
  expect_refused(s, ref7, 12, 12, AOI_ENOENT);
  expect_refused(s, old6, 12, 12, AOI_ENOENT);
  move(s, 8, 52, 55);
  tick(s, 3);

  /* 4 to 6: a removal, and its handle taken by a new id later. */
  aoi_ref ref5 = s->ref[5];
  assert_int_equal(aoi_remove(s->w, 5), 0);
  expect_refused(s, ref5, 10, 10, AOI_ENOENT);
  move(s, 4, 45, 45);
  tick(s, 4);
  expect_refused(s, ref5, 10, 10, AOI_ENOENT);
  tick(s, 5);
  add(s, 9, 20, 25, 15, WM);
  expect_refused(s, ref5, 11, 11, AOI_ENOENT);
  expect_refused(s, ref7, 11, 11, AOI_ENOENT);
  move(s, 9, 22, 22);
  move(s, 2, 21, 21);
  tick(s, 6);
  static const uint64_t live[] = {1, 2, 3, 4, 6, 8, 9};
  for (size_t i = 0; i < COUNT_OF(live); i++) {
    uint64_t id = live[i];
    assert_int_equal(aoi_view(s->w, id, s->views[id], MAX_IDS,
                              &s->view_counts[id]),
                     0);
  }
}

static int same_records(const records *a, const records *b)
{
  if (a->count != b->count)
    return 0;
  for (size_t i = 0; i < a->count; i++) {
    const record *x = &a->items[i], *y = &b->items[i];
    if (x->watcher != y->watcher || x->event.id != y->event.id ||
        x->event.kind != y->event.kind || x->event.tick != y->event.tick ||
        memcmp(&x->event.x, &y->event.x, sizeof(float)) != 0 ||
        memcmp(&x->event.y, &y->event.y, sizeof(float)) != 0)
      return 0;
  }
  return 1;
}

static void test_move_ref_is_move(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    static script s[3];
    memset(s, 0, sizeof(s));
    for (int m = BY_ID; m <= BY_REF_FAILING; m++) {
      s[m].w = world_for(layouts[l]);
      s[m].mode = m;
      run_script(&s[m]);
    }
    for (int m = BY_REF; m <= BY_REF_FAILING; m++) {
      for (int t = 1; t <= 6; t++)
        if (!same_records(&s[BY_ID].ticks[t], &s[m].ticks[t]))
          fail_msg("threads %u shards %u, tick %d: the world that moved %s"
                   " got other events than the one that moved by id",
                   layouts[l].threads, layouts[l].shards, t,
                   m == BY_REF ? "by reference"
                               : "by reference and made failing calls");
      assert_true(s[BY_ID].ticks[1].count > 0 && s[BY_ID].ticks[2].count > 0);
      for (uint64_t id = 1; id < 10; id++) {
        assert_int_equal(s[m].view_counts[id], s[BY_ID].view_counts[id]);
        assert_memory_equal(s[m].views[id], s[BY_ID].views[id],
                            sizeof(uint64_t) * s[m].view_counts[id]);
      }
      aoi_stats a, b;
      assert_int_equal(aoi_world_stats(s[BY_ID].w, &a), 0);
      assert_int_equal(aoi_world_stats(s[m].w, &b), 0);
      assert_int_equal(a.entities, 7);
      assert_int_equal(b.entities, 7);
    }
    for (int m = BY_ID; m <= BY_REF_FAILING; m++) {
      aoi_destroy(s[m].w);
      for (int t = 0; t < 8; t++)
        records_free(&s[m].ticks[t]);
    }
  }
}

/* AOI_ENOMEM as aoi_move gives it: only for an entity's first operation
   since the last tick, when its shard's queue cannot grow; it changes
   nothing (against a world that moved by id and never failed), and the
   entities that have a record still move. */
static void test_move_ref_out_of_memory(void **state)
{
  (void)state;
  static const layout some[] = {{1, 1}, {2, 3}, {4, 8}};
  enum { N = 200 };
  for (size_t l = 0; l < COUNT_OF(some); l++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_world *w = world_with(some[l], &hooks), *by_id = world_for(some[l]);
    static aoi_ref refs[N + 1];
    records got = {0}, want = {0};
    /* A few adds a tick: the queues stay far smaller than N. */
    for (uint64_t id = 1; id <= N; id++) {
      float x = (float)(id * 37 % 100), y = (float)(id * 61 % 100);
      assert_int_equal(test_add(w, id, x, y, 10, WM, ALL, ALL), 0);
      assert_int_equal(test_add(by_id, id, x, y, 10, WM, ALL, ALL), 0);
      refs[id] = ref_of(w, id);
      if (id % 4 == 0) {
        assert_int_equal(aoi_tick(w), 0);
        assert_int_equal(aoi_tick(by_id), 0);
      }
    }
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_tick(by_id), 0);
    drain(w, &got);
    drain(by_id, &want);

    counter_arm(&c, 1, COUNTER_ONWARD);
    int failed = 0;
    for (uint64_t id = 1; id <= N; id++) {
      float x = (float)(id * 53 % 100), y = (float)(id * 29 % 100);
      int rc = aoi_move_ref(w, refs[id], x, y);
      if (rc == AOI_ENOMEM) {
        failed++;
        continue;
      }
      assert_int_equal(rc, 0);
      assert_int_equal(aoi_move(by_id, id, x, y), 0);
      assert_int_equal(aoi_move_ref(w, refs[id], x, y + 1), 0);
      assert_int_equal(aoi_move(by_id, id, x, y + 1), 0);
    }
    assert_true(failed > 0 && failed < N);
    counter_disarm(&c);
    got.count = want.count = 0;
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_tick(by_id), 0);
    expect_valid(w);
    drain(w, &got);
    drain(by_id, &want);
    assert_true(want.count > 0);
    assert_int_equal(got.count, want.count);
    assert_memory_equal(got.items, want.items, sizeof(record) * got.count);
    records_free(&got);
    records_free(&want);
    aoi_destroy(w);
    aoi_destroy(by_id);
    assert_int_equal(atomic_load(&c.live_bytes), 0);
  }
}

/* ---- aoi_move_many ------------------------------------------------------- */

/* Its argument checks, EBUSY, and what *done says. */
static void test_move_many_errors(void **state)
{
  (void)state;
  aoi_world *w = world_for((layout){2, 3});
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 20, 10, 0, AOI_MARKER, ALL, ALL), 0);
  aoi_move_op ops[] = {{1, 11, 10}, {2, 21, 10}};
  size_t done = 99;
  assert_int_equal(aoi_move_many(NULL, ops, 2, &done), AOI_EINVAL);
  assert_int_equal(done, 0);
  done = 99;
  assert_int_equal(aoi_move_many(w, NULL, 1, &done), AOI_EINVAL);
  assert_int_equal(done, 0);
  done = 99;
  assert_int_equal(aoi_move_many(w, NULL, 0, &done), 0);
  assert_int_equal(done, 0);
  assert_int_equal(aoi_move_many(w, ops, 0, NULL), AOI_EINVAL);
  assert_int_equal(aoi_move_many(w, ops, 2, &done), 0);
  assert_int_equal(done, 2);
  assert_int_equal(aoi_move_many(w, ops, 2, NULL), AOI_EINVAL);
  assert_int_equal(aoi_tick(w), 0);
  /* EBUSY while a tick is in flight: nothing moves */
  assert_int_equal(aoi_tick_begin(w), 0);
  done = 99;
  assert_int_equal(aoi_move_many(w, ops, 2, &done), AOI_EBUSY);
  assert_int_equal(done, 0);
  assert_int_equal(aoi_move_many(NULL, ops, 2, &done), AOI_EINVAL);
  assert_int_equal(aoi_move_many(w, NULL, 1, &done), AOI_EINVAL);
  assert_int_equal(aoi_move_many(w, ops, 0, &done), AOI_EBUSY);
  assert_int_equal(aoi_tick_end(w), 0);
  /* the first failing move: its error, its index */
  aoi_move_op bad[] = {{1, 12, 10}, {3, 5, 5}, {2, 22, 10}};
  assert_int_equal(aoi_move_many(w, bad, 3, &done), AOI_ENOENT);
  assert_int_equal(done, 1);
  bad[1] = (aoi_move_op){2, NAN, 5};
  assert_int_equal(aoi_move_many(w, bad, 3, &done), AOI_ECOORD);
  assert_int_equal(done, 1);
  expect_valid(w);
  aoi_destroy(w);
}

/* A batch is the calls it stands for: against a world that made them one
   by one (and, where the batch fails, only those before the failing one),
   the same events and views, on every layout; batches longer than the
   lookahead, an id moved twice in one batch, moves across shards; ids
   from a counter (looked up directly) and ids spread over 64 bits
   (hashed). */
static uint64_t batch_id(uint64_t n, bool spread)
{
  return spread ? n * 0x9e3779b97f4a7c15ull : n;
}

/* Ticks both worlds and drains them into got and want (emptied first):
   whether they told the same events, at least one. */
static bool tick_alike(aoi_world *many, aoi_world *one, records *got,
                       records *want)
{
  assert_int_equal(aoi_tick(many), 0);
  assert_int_equal(aoi_tick(one), 0);
  expect_valid(many);
  got->count = want->count = 0;
  drain(many, got);
  drain(one, want);
  return want->count > 0 && got->count == want->count &&
         memcmp(got->items, want->items, sizeof(record) * got->count) == 0;
}

/* The two worlds' views of `id` are the same. */
static void expect_same_view(aoi_world *a, aoi_world *b, uint64_t id)
{
  uint64_t va[MAX_IDS], vb[MAX_IDS];
  size_t na = 0, nb = 0;
  int ra = aoi_view(a, id, va, MAX_IDS, &na);
  int rb = aoi_view(b, id, vb, MAX_IDS, &nb);
  assert_int_equal(ra, rb);
  assert_int_equal(na, nb);
  if (ra == 0)
    assert_memory_equal(va, vb, sizeof(uint64_t) * na);
}

static void test_move_many_is_move(void **state)
{
  (void)state;
  enum { N = 300, TICKS = 6 };
  static aoi_move_op ops[2 * N];
  for (size_t run = 0; run < 2 * COUNT_OF(layouts); run++) {
    size_t l = run / 2;
    bool spread = run % 2 == 1;
    aoi_world *many = world_for(layouts[l]), *one = world_for(layouts[l]);
    records got = {0}, want = {0};
    for (uint64_t id = 1; id <= N; id++) {
      float x = (float)(id * 37 % 100), y = (float)(id * 61 % 100);
      unsigned flags = id % 3 == 0 ? AOI_MARKER : WM;
      uint64_t named = batch_id(id, spread);
      assert_int_equal(test_add(many, named, x, y, 8, flags, ALL, ALL), 0);
      assert_int_equal(test_add(one, named, x, y, 8, flags, ALL, ALL), 0);
    }
    for (int t = 0; t < TICKS; t++) {
      size_t n = 0;
      for (uint64_t id = 1; id <= N; id++) {
        if ((id + (uint64_t)t) % 5 == 0)
          continue; /* some stand */
        float x = (float)((id * 13 + (uint64_t)t * 7) % 100);
        float y = (float)((id * 29 + (uint64_t)t * 3) % 100);
        ops[n++] = (aoi_move_op){batch_id(id, spread), x, y};
        if (id % 17 == 0) /* moved again, as a teleport then its step */
          ops[n++] = (aoi_move_op){batch_id(id, spread), y, x};
      }
      size_t fail_at = n;
      if (t == 3) { /* a batch that fails midway */
        fail_at = n / 2;
        ops[fail_at].id = batch_id(N + 1, spread);
      }
      size_t done = 0;
      int rc = aoi_move_many(many, ops, n, &done);
      assert_int_equal(rc, fail_at < n ? AOI_ENOENT : 0);
      assert_int_equal(done, fail_at);
      for (size_t i = 0; i < fail_at; i++)
        assert_int_equal(aoi_move(one, ops[i].id, ops[i].x, ops[i].y), 0);
      if (!tick_alike(many, one, &got, &want))
        fail_msg("threads %u shards %u, %s ids, tick %d: moving in batches"
                 " gave other events than moving one by one",
                 layouts[l].threads, layouts[l].shards,
                 spread ? "spread" : "counter", t + 1);
    }
    for (uint64_t id = 1; id <= N; id += 7)
      expect_same_view(many, one, batch_id(id, spread));
    records_free(&got);
    records_free(&want);
    aoi_destroy(many);
    aoi_destroy(one);
  }
}

/* A batch long enough to be spread over the pool's threads (submit.c):
   the same events and views as the moves one by one, on own pools of 3-8
   threads and on a shared pool; batches that move each id once, and
   batches longer than a window that move each id twice (so in two parts
   of a window); a failure in the second window, and one in the first. */
static aoi_world *spread_world(unsigned threads, unsigned shards,
                               aoi_pool *pool)
{
  aoi_config c;
  aoi_config_default(&c);
  c.threads = threads;
  c.shards = shards;
  c.max_x = 1000;
  c.max_y = 1000;
  c.max_radius = 50;
  if (pool != NULL) {
    c.run = AOI_RUN_POOL;
    c.pool = pool;
  } else if (threads == 0) {
    c.run = AOI_RUN_CALLER;
    c.threads = 1;
  }
  aoi_world *w = NULL;
  int rc = aoi_create(&c, &w);
  if (rc != 0)
    fail_msg("aoi_create (threads %u, shards %u): %s", threads, shards,
             aoi_strerror(rc));
  return w;
}

static void test_move_many_spread(void **state)
{
  (void)state;
  aoi__spread_cores = 16; /* spread whatever this machine has */
  enum { N = 30000, TICKS = 4 };
  static aoi_move_op ops[2 * N];
  aoi_pool *pool = NULL;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 4;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  const struct {
    unsigned threads, shards;
    bool shared;
  } runs[] = {{3, 1, false}, {4, 3, false}, {8, 8, false}, {3, 5, true}};
  for (size_t run = 0; run < COUNT_OF(runs); run++) {
    aoi_world *many = spread_world(runs[run].threads, runs[run].shards,
                                   runs[run].shared ? pool : NULL);
    aoi_world *one = spread_world(0, 1, NULL);
    records got = {0}, want = {0};
    for (uint64_t id = 1; id <= N; id++) {
      float x = (float)(id * 37 % 1000), y = (float)(id * 61 % 997);
      unsigned flags = id % 3 == 0 ? AOI_MARKER : WM;
      uint64_t named = batch_id(id, run % 2 == 1);
      assert_int_equal(test_add(many, named, x, y, 8, flags, ALL, ALL), 0);
      assert_int_equal(test_add(one, named, x, y, 8, flags, ALL, ALL), 0);
    }
    assert_int_equal(aoi_tick(many), 0);
    assert_int_equal(aoi_tick(one), 0);
    for (int t = 0; t < TICKS; t++) {
      size_t n = 0;
      /* every id once (each in one part), or twice (in two parts) */
      for (int pass = 0; pass < 1 + t % 2; pass++)
        for (uint64_t id = 1; id <= N; id++) {
          if ((id + (uint64_t)t) % 5 == 0)
            continue; /* some stand */
          float x = (float)(id * 37 % 1000) + (float)(pass + t) * 1.5f;
          float y = (float)(id * 61 % 997) - (float)((id + t) % 4) * 3.0f;
          if (id % 101 == 0) /* across the map: another shard */
            x = 1000 - x;
          ops[n++] = (aoi_move_op){batch_id(id, run % 2 == 1), x, y};
        }
      size_t fail_at = n;
      int want_rc = 0;
      if (t == 1) { /* in the second window */
        fail_at = n - 1000;
        ops[fail_at].id = batch_id(N + 1, run % 2 == 1);
        want_rc = AOI_ENOENT;
      } else if (t == 2) { /* in the first */
        fail_at = 777;
        ops[fail_at].y = NAN;
        want_rc = AOI_ECOORD;
      }
      size_t done = 0;
      assert_int_equal(aoi_move_many(many, ops, n, &done), want_rc);
      assert_int_equal(done, fail_at);
      for (size_t i = 0; i < fail_at; i++)
        assert_int_equal(aoi_move(one, ops[i].id, ops[i].x, ops[i].y), 0);
      expect_valid(many);
      if (!tick_alike(many, one, &got, &want))
        fail_msg("threads %u shards %u%s, tick %d: a spread batch gave other"
                 " events than moving one by one",
                 runs[run].threads, runs[run].shards,
                 runs[run].shared ? " (shared pool)" : "", t + 1);
    }
    for (uint64_t id = 1; id <= N; id += 997)
      expect_same_view(many, one, batch_id(id, run % 2 == 1));
    records_free(&got);
    records_free(&want);
    aoi_destroy(many);
    aoi_destroy(one);
  }
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

/* A spread batch that runs out of memory: each of its first allocations
   failed in turn (the scratch, whose failure leaves the batch to the
   calling thread, or, with the scratch warm, a queue's growth, the queues
   having shrunk over idle ticks), it either moves everything or returns
   AOI_ENOMEM with the moves before *done standing, and the world goes on
   as one that made those moves one by one. */
static void test_move_many_spread_out_of_memory(void **state)
{
  (void)state;
  aoi__spread_cores = 16;
  enum { N = 20000 };
  static aoi_move_op ops[N];
  int failures = 0;
  for (int run = 0; run < 10; run++) {
    bool warm = run >= 5;
    long long arm = run % 5 + 1;
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_config config;
    aoi_config_default(&config);
    config.threads = 4;
    config.shards = 3;
    config.max_x = 1000;
    config.max_y = 1000;
    config.max_radius = 50;
    config.allocator = &hooks;
    aoi_world *w = NULL, *one = spread_world(0, 1, NULL);
    assert_int_equal(aoi_create(&config, &w), 0);
    records got = {0}, want = {0};
    for (uint64_t id = 1; id <= N; id++) {
      float x = (float)(id * 37 % 1000), y = (float)(id * 61 % 997);
      assert_int_equal(test_add(w, id, x, y, 8, WM, ALL, ALL), 0);
      assert_int_equal(test_add(one, id, x, y, 8, WM, ALL, ALL), 0);
    }
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_tick(one), 0);
    drain(w, &got);
    drain(one, &want);
    size_t done = 99;
    if (warm) { /* a spread batch, then the queues shrink */
      for (uint64_t id = 1; id <= N; id++)
        ops[id - 1] = (aoi_move_op){id, (float)(id * 37 % 1000) + 1,
                                    (float)(id * 61 % 997)};
      assert_int_equal(aoi_move_many(w, ops, N, &done), 0);
      for (size_t i = 0; i < N; i++)
        assert_int_equal(aoi_move(one, ops[i].id, ops[i].x, ops[i].y), 0);
    }
    for (int t = 0; t < 11; t++) { /* to the second shrink (tick.c) */
      assert_int_equal(aoi_tick(w), 0);
      assert_int_equal(aoi_tick(one), 0);
    }
    got.count = want.count = 0;
    drain(w, &got);
    drain(one, &want);
    for (uint64_t id = 1; id <= N; id++)
      ops[id - 1] = (aoi_move_op){id, (float)(id * 37 % 1000) + 2,
                                  (float)(id * 61 % 997)};
    counter_arm(&c, arm, COUNTER_ONWARD);
    int rc = aoi_move_many(w, ops, N, &done);
    counter_disarm(&c);
    if (rc == 0)
      assert_int_equal(done, N);
    else {
      assert_int_equal(rc, AOI_ENOMEM);
      assert_true(done < N);
      failures++;
    }
    for (size_t i = 0; i < done; i++)
      assert_int_equal(aoi_move(one, ops[i].id, ops[i].x, ops[i].y), 0);
    expect_valid(w);
    if (!tick_alike(w, one, &got, &want) && (got.count | want.count) != 0)
      fail_msg("arm %lld%s: the world after AOI_ENOMEM told other events",
               arm, warm ? ", warm" : "");
    records_free(&got);
    records_free(&want);
    aoi_destroy(w);
    aoi_destroy(one);
    assert_int_equal(atomic_load(&c.live_bytes), 0);
  }
  assert_true(failures > 0); /* (the failing paths ran) */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ref_of_errors),
      cmocka_unit_test(test_move_ref_error_order),
      cmocka_unit_test(test_stale_refs),
      cmocka_unit_test(test_generation_retires),
      cmocka_unit_test(test_refs_are_keyed),
      cmocka_unit_test(test_move_ref_is_move),
      cmocka_unit_test(test_move_ref_out_of_memory),
      cmocka_unit_test(test_move_many_errors),
      cmocka_unit_test(test_move_many_is_move),
      cmocka_unit_test(test_move_many_spread),
      cmocka_unit_test(test_move_many_spread_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
