/*
 * test_api.c: unit tests of the public API (aoi.h), one contract at a time:
 * config defaults and validation (move bands too), NULL handling, the error
 * codes of every operation (aoi_set_appeal and aoi_set_cap too, with the
 * model giving the same) and their check order, that a failed call changes
 * nothing, the
 * event stream of the TRACE_FORMAT.md example, outboxes that accumulate and
 * drain, the pending list, removal and same-tick respawn, the queries (as of
 * the last tick, ids ascending, capacity, layer masks), statistics, and the
 * allocator hooks (every byte freed, at any alignment). A failed allocation
 * in each call is test_oom's.
 *
 * Threaded scenarios run on every layout of `layouts` (threads 1, 2, 4 by
 * shards 1, 3, 8), with entities spread over the bounds so that several
 * shards, ghosts and handoffs take part. Only this thread calls cmocka's
 * asserts; the allocator hooks, which workers call too, only count with
 * atomics and record what they saw.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aoi.h"
#include "model.h" /* the oracle agrees on codes and configs */
#include "support.h"
#include "api_support.h"
#include "internal.h" /* aoi__world_valid */

/* ---- config ------------------------------------------------------------- */

static void test_config_default(void **state)
{
  (void)state;
  aoi_config c;
  memset(&c, 0xa5, sizeof(c));
  aoi_config_default(&c);
  assert_int_equal(c.threads, 0);
  assert_int_equal(c.shards, 0);
  assert_true(c.min_x == 0 && c.min_y == 0);
  assert_true(c.max_x == 1000 && c.max_y == 1000);
  assert_true(c.max_radius == 500);
  assert_true(c.hysteresis == 0);
  assert_int_equal(c.move_events, 1);
  assert_int_equal(c.shape, AOI_SHAPE_CIRCLE);
  assert_int_equal(c.move_band_count, 0);
  assert_null(c.allocator);
}

typedef void (*config_mutator)(aoi_config *c);

static aoi_allocator null_alloc = {NULL, counting_realloc, counting_free, NULL};
static aoi_allocator null_realloc = {counting_alloc, NULL, counting_free, NULL};
static aoi_allocator null_free = {counting_alloc, counting_realloc, NULL, NULL};

static void threads_257(aoi_config *c) { c->threads = 257; }
static void threads_max(aoi_config *c) { c->threads = UINT_MAX; }
static void shards_4097(aoi_config *c) { c->shards = 4097; }
static void shards_max(aoi_config *c) { c->shards = UINT_MAX; }
static void min_x_nan(aoi_config *c) { c->min_x = NAN; }
static void min_y_nan(aoi_config *c) { c->min_y = NAN; }
static void max_x_nan(aoi_config *c) { c->max_x = NAN; }
static void max_y_nan(aoi_config *c) { c->max_y = NAN; }
static void radius_negative(aoi_config *c) { c->max_radius = -1; }
static void radius_tiny_negative(aoi_config *c) { c->max_radius = -1e-30f; }
static void radius_nan(aoi_config *c) { c->max_radius = NAN; }
static void radius_infinite(aoi_config *c) { c->max_radius = INFINITY; }
static void hysteresis_negative(aoi_config *c) { c->hysteresis = -0.5f; }
static void hysteresis_nan(aoi_config *c) { c->hysteresis = NAN; }
static void cells_zero(aoi_config *c)
{
  c->shape = AOI_SHAPE_CELLS;
  c->cell_size = 0;
}
static void cells_negative(aoi_config *c)
{
  c->shape = AOI_SHAPE_CELLS;
  c->cell_size = -4;
}
static void cells_nan(aoi_config *c)
{
  c->shape = AOI_SHAPE_CELLS;
  c->cell_size = NAN;
}
static void shape_unknown(aoi_config *c) { c->shape = (aoi_shape)3; }
static void allocator_no_alloc(aoi_config *c) { c->allocator = &null_alloc; }
static void allocator_no_realloc(aoi_config *c)
{
  c->allocator = &null_realloc;
}
static void allocator_no_free(aoi_config *c) { c->allocator = &null_free; }
static void pin_two(aoi_config *c) { c->pin_threads = 2; }
static void pin_max(aoi_config *c) { c->pin_threads = UINT32_MAX; }

/* Move bands: n of them, from `bands`. */
static void set_bands(aoi_config *c, const aoi_move_band *bands, unsigned n)
{
  for (unsigned i = 0; i < n; i++)
    c->move_bands[i] = bands[i];
  c->move_band_count = n;
}
static const aoi_move_band eight_bands[AOI_MAX_MOVE_BANDS] = {
    {0, 1}, {1, 2}, {2, 3}, {4, 4}, {8, 5}, {16, 6}, {32, 7}, {64, 8}};
static void bands_nine(aoi_config *c)
{
  set_bands(c, eight_bands, AOI_MAX_MOVE_BANDS);
  c->move_band_count = AOI_MAX_MOVE_BANDS + 1;
}
static void bands_count_max(aoi_config *c)
{
  set_bands(c, eight_bands, AOI_MAX_MOVE_BANDS);
  c->move_band_count = UINT_MAX;
}
static void band_distance_nan(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{NAN, 2}}, 1);
}
static void band_distance_infinite(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{INFINITY, 2}}, 1);
}
static void band_distance_negative(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{-1, 2}}, 1);
}
static void band_distance_tiny_negative(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{-1e-45f, 2}}, 1);
}
static void band_period_zero(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{5, 0}}, 1);
}
static void bands_equal(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{5, 2}, {5, 3}}, 2);
}
static void bands_decreasing(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{5, 2}, {10, 3}, {nextafterf(10, 0), 4}},
            3);
}
static void bands_zero_then_negative_zero(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{0, 2}, {-0.0f, 3}}, 2);
}
static void band_second_nan(aoi_config *c)
{
  set_bands(c, (const aoi_move_band[]){{5, 2}, {NAN, 3}}, 2);
}
static void band_last_infinite(aoi_config *c)
{
  set_bands(c, eight_bands, AOI_MAX_MOVE_BANDS);
  c->move_bands[AOI_MAX_MOVE_BANDS - 1].distance = INFINITY;
}
static void band_last_period_zero(aoi_config *c)
{
  set_bands(c, eight_bands, AOI_MAX_MOVE_BANDS);
  c->move_bands[AOI_MAX_MOVE_BANDS - 1].period = 0;
}

static void test_create_rejects_bad_config(void **state)
{
  (void)state;
  static const struct {
    const char *name;
    config_mutator mutate;
    int model; /* a value the model reads too: it must refuse it */
  } bad[] = {
      {"threads 257", threads_257, 0},
      {"threads UINT_MAX", threads_max, 0},
      {"shards 4097", shards_4097, 0},
      {"shards UINT_MAX", shards_max, 0},
      {"min_x NaN", min_x_nan, 0},
      {"min_y NaN", min_y_nan, 0},
      {"max_x NaN", max_x_nan, 0},
      {"max_y NaN", max_y_nan, 0},
      {"max_radius -1", radius_negative, 1},
      {"max_radius -1e-30", radius_tiny_negative, 1},
      {"max_radius NaN", radius_nan, 1},
      {"max_radius inf", radius_infinite, 1},
      {"hysteresis -0.5", hysteresis_negative, 1},
      {"hysteresis NaN", hysteresis_nan, 1},
      {"cells, cell_size 0", cells_zero, 1},
      {"cells, cell_size -4", cells_negative, 1},
      {"cells, cell_size NaN", cells_nan, 1},
      {"shape 3", shape_unknown, 1},
      {"allocator without alloc", allocator_no_alloc, 0},
      {"allocator without realloc", allocator_no_realloc, 0},
      {"allocator without free", allocator_no_free, 0},
      {"pin_threads 2", pin_two, 0},
      {"pin_threads UINT32_MAX", pin_max, 0},
      {"9 move bands", bands_nine, 1},
      {"UINT_MAX move bands", bands_count_max, 1},
      {"a band at NaN", band_distance_nan, 1},
      {"a band at infinity", band_distance_infinite, 1},
      {"a band at -1", band_distance_negative, 1},
      {"a band at -1e-45", band_distance_tiny_negative, 1},
      {"a band of period 0", band_period_zero, 1},
      {"bands at 5 and 5", bands_equal, 1},
      {"bands at 5, 10 and a float below 10", bands_decreasing, 1},
      {"bands at 0 and -0", bands_zero_then_negative_zero, 1},
      {"bands at 5 and NaN", band_second_nan, 1},
      {"8 bands, the last at infinity", band_last_infinite, 1},
      {"8 bands, the last of period 0", band_last_period_zero, 1},
  };
  aoi_world *const sentinel = (aoi_world *)&current_layout;
  for (size_t i = 0; i < COUNT_OF(bad); i++) {
    aoi_config c;
    aoi_config_default(&c);
    c.threads = 1;
    bad[i].mutate(&c);
    aoi_world *w = sentinel;
    int rc = aoi_create(&c, &w);
    if (rc != AOI_EINVAL)
      fail_msg("%s: aoi_create returned %d, not AOI_EINVAL", bad[i].name, rc);
    if (w != sentinel)
      fail_msg("%s: aoi_create wrote *out", bad[i].name);
    if (bad[i].model) {
      model *m = model_create(&c);
      if (m != NULL)
        fail_msg("%s: model_create accepted it", bad[i].name);
    }
  }
  aoi_config c;
  aoi_config_default(&c);
  aoi_world *w = sentinel;
  assert_int_equal(aoi_create(NULL, &w), AOI_EINVAL);
  assert_ptr_equal(w, sentinel);
  assert_int_equal(aoi_create(&c, NULL), AOI_EINVAL);
}

#ifdef __linux__
#include <dirent.h>
#include <sched.h>
/* How many of this process's threads may run on one CPU only (from
   /proc/self/task/<tid>/status). */
static unsigned threads_on_one_cpu(void)
{
  DIR *d = opendir("/proc/self/task");
  assert_non_null(d);
  unsigned one = 0;
  struct dirent *t;
  while ((t = readdir(d)) != NULL) {
    if (t->d_name[0] == '.')
      continue;
    char path[320], line[256];
    snprintf(path, sizeof(path), "/proc/self/task/%s/status", t->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) /* the thread is gone */
      continue;
    while (fgets(line, sizeof(line), f) != NULL) {
      int a, b;
      char end;
      if (sscanf(line, "Cpus_allowed_list: %d-%d", &a, &b) == 2 ||
          sscanf(line, "Cpus_allowed_list: %d,%d", &a, &b) == 2)
        break; /* more than one */
      if (sscanf(line, "Cpus_allowed_list: %d%c", &a, &end) == 2 &&
          end == '\n') {
        one++;
        break;
      }
    }
    fclose(f);
  }
  closedir(d);
  return one;
}

/* pin_threads binds each worker to one CPU of the creating thread's set;
   without it they keep the whole set. The events are the same either way
   (test_differential); here, where the threads run. */
static void test_pin_threads(void **state)
{
  (void)state;
  cpu_set_t allowed;
  assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  if (CPU_COUNT(&allowed) < 2)
    skip(); /* on one CPU every thread is on one CPU */
  unsigned before = threads_on_one_cpu();
  for (unsigned pin = 0; pin <= 1; pin++) {
    aoi_config c;
    aoi_config_default(&c);
    c.threads = 3; /* wraps around on a machine of 2 */
    c.pin_threads = pin;
    aoi_world *w = NULL;
    assert_int_equal(aoi_create(&c, &w), 0);
    assert_int_equal(threads_on_one_cpu(), before + (pin ? 3 : 0));
    assert_int_equal(test_add(w, 1, 10, 10, 5, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, 2, 12, 10, 5, WM, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);
    const aoi_event *events;
    size_t count;
    assert_int_equal(aoi_drain(w, 1, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(events[0].id, 2);
    aoi_destroy(w);
  }
}
#endif

/* Entities stamp ticks in 32 bits (aoi__stamp), so a stamp 2^32 ticks old
   would meet the tick's bits again and say the entity changed then: the
   world brings old stamps forward once every 2^31 ticks. Here the tick
   counter jumps over spans that hold no such tick, so the stamps age as in
   a run of 2^32 ticks; then a marker that stood still since tick 1 moves,
   in a standing crowd, and must be told. */
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

/* The edges of the ranges are accepted. */
static void test_create_accepts_edge_config(void **state)
{
  (void)state;
  aoi_config c;
  aoi_stats s;
  aoi_world *w;

  aoi_config_default(&c);
  c.threads = 1;
  c.shards = 4096;
  c.max_radius = 0;
  w = create_or_fail(&c);
  assert_int_equal(aoi_world_stats(w, &s), 0);
  assert_int_equal(s.shards, 4096);
  assert_int_equal(s.threads, 1);
  assert_int_equal(test_add(w, 1, 5, 5, 0, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 5, 5, 0, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 3, 5, 5.5f, 0, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 4, 1e9f, -1e9f, 0, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  /* Radius 0 sees exactly the entities on the same point. */
  EXPECT_VIEW(w, 1, 2);
  EXPECT_VIEW(w, 2, 1);
  EXPECT_EMPTY_VIEW(w, 3);
  EXPECT_EMPTY_VIEW(w, 4);
  aoi_destroy(w);

  /* A degenerate bounds hint is ignored, not refused. */
  aoi_config_default(&c);
  c.threads = 2;
  c.min_x = c.max_x = 5;
  c.min_y = 10;
  c.max_y = -10;
  c.shape = AOI_SHAPE_CELLS;
  c.cell_size = 0.25f;
  c.hysteresis = 0;
  w = create_or_fail(&c);
  aoi_destroy(w);

  /* threads 0 means one per online core, shards 0 one per thread. */
  aoi_config_default(&c);
  w = create_or_fail(&c);
  assert_int_equal(aoi_world_stats(w, &s), 0);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned want = cores < 1 ? 1 : cores > 256 ? 256 : (unsigned)cores;
  assert_int_equal(s.threads, want);
  assert_int_equal(s.shards, want);
  aoi_destroy(w);

  aoi_config_default(&c);
  c.threads = 3;
  w = create_or_fail(&c);
  assert_int_equal(aoi_world_stats(w, &s), 0);
  assert_int_equal(s.threads, 3);
  assert_int_equal(s.shards, 3);
  aoi_destroy(w);

  /* Move bands: eight, from 0 (or -0, which is >= 0) to FLT_MAX, one
     float step apart where they can be, periods 1 to UINT32_MAX; and
     anything at all past move_band_count. */
  static const struct {
    const char *name;
    aoi_move_band bands[AOI_MAX_MOVE_BANDS];
    unsigned count;
  } good[] = {
      {"eight bands",
       {{0, 1}, {1e-45f, 2}, {1, UINT32_MAX}, {1.00000012f, 3}, {100, 4},
        {1e30f, 1}, {3.40282326e38f, 6}, {FLT_MAX, UINT32_MAX}},
       AOI_MAX_MOVE_BANDS},
      {"one band at -0", {{-0.0f, 2}}, 1},
      {"none, garbage past the count", {{NAN, 0}, {-1, 0}}, 0},
      {"one band, garbage past it", {{10, 2}, {NAN, 0}, {5, 0}}, 1},
  };
  for (size_t i = 0; i < COUNT_OF(good); i++) {
    aoi_config_default(&c);
    c.threads = 2;
    for (unsigned k = 0; k < AOI_MAX_MOVE_BANDS; k++)
      c.move_bands[k] = good[i].bands[k];
    c.move_band_count = good[i].count;
    w = NULL;
    int rc = aoi_create(&c, &w);
    if (rc != 0)
      fail_msg("%s: aoi_create returned %d", good[i].name, rc);
    model *m = model_create(&c);
    if (m == NULL)
      fail_msg("%s: model_create refused it", good[i].name);
    model_destroy(m);
    assert_int_equal(test_add(w, 1, 0, 0, 10, WM, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);
    aoi_destroy(w);
  }
}

static void test_destroy_null(void **state)
{
  (void)state;
  assert_int_equal(aoi_destroy(NULL), 0);
}

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

static void test_strerror(void **state)
{
  (void)state;
  static const struct {
    int code;
    const char *name;
  } codes[] = {
      {AOI_EINVAL, "AOI_EINVAL"}, {AOI_ENOMEM, "AOI_ENOMEM"},
      {AOI_EEXIST, "AOI_EEXIST"}, {AOI_ENOENT, "AOI_ENOENT"},
      {AOI_ECOORD, "AOI_ECOORD"}, {AOI_ERADIUS, "AOI_ERADIUS"},
      {AOI_EFLAGS, "AOI_EFLAGS"}, {AOI_ESYS, "AOI_ESYS"},
  };
  for (size_t i = 0; i < COUNT_OF(codes); i++) {
    const char *s = aoi_strerror(codes[i].code);
    assert_non_null(s);
    if (strstr(s, codes[i].name) == NULL)
      fail_msg("aoi_strerror(%d) = \"%s\" does not name %s", codes[i].code, s,
               codes[i].name);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(s, aoi_strerror(codes[j].code));
  }
  assert_non_null(aoi_strerror(0));
  static const int unknown[] = {1, 42, -9, -100, INT_MIN, INT_MAX};
  for (size_t i = 0; i < COUNT_OF(unknown); i++) {
    const char *s = aoi_strerror(unknown[i]);
    assert_non_null(s);
    assert_true(s[0] != '\0');
    for (size_t j = 0; j < COUNT_OF(codes); j++)
      assert_string_not_equal(s, aoi_strerror(codes[j].code));
  }
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

/* ---- events ------------------------------------------------------------- */

/* TRACE_FORMAT.md's example. */
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

static uint64_t rng_next(uint64_t *s)
{
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
  return (unsigned)(rng_next(s) % n);
}

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

/* ---- ghosts by each shard's reach ---------------------------------------- */

/* Markers every 20 units over (0, 0) - (400, 400), cut at 200: the reaches
   below put no marker at the very edge of a band (a multiple of 20 from a
   cut), where the engine's margin against rounding would decide. */
enum { GHOST_GRID = 21 };

typedef struct ghost_world {
  aoi_world *w;
  uint64_t ids[GHOST_GRID * GHOST_GRID + 1];
  float x[GHOST_GRID * GHOST_GRID + 1], y[GHOST_GRID * GHOST_GRID + 1];
  float appeal[GHOST_GRID * GHOST_GRID + 1];
  size_t markers;
} ghost_world;

/* A world of 2 threads and 4 shards over (0, 0) - (400, 400), cut at 200,
   with the lattice of markers added (not yet ticked). */
static void open_lattice(ghost_world *g)
{
  aoi_config c;
  aoi_config_default(&c);
  c.threads = 2;
  c.shards = 4;
  c.max_x = c.max_y = 400;
  g->w = create_or_fail(&c);
  for (unsigned row = 0; row < GHOST_GRID; row++)
    for (unsigned col = 0; col < GHOST_GRID; col++) {
      size_t i = g->markers++;
      g->ids[i] = i + 1;
      g->x[i] = (float)(20 * col);
      g->y[i] = (float)(20 * row);
      assert_int_equal(test_add(g->w, g->ids[i], g->x[i], g->y[i], 0,
                               AOI_MARKER, 1, 0),
                       0);
    }
}

/* Adds marker `id` at (x, y), seen from `appeal` away, to the lattice's
   world and to its list. */
static void add_appealing(ghost_world *g, uint64_t id, float x, float y,
                          float appeal)
{
  size_t a = g->markers++;
  g->ids[a] = id;
  g->x[a] = x;
  g->y[a] = y;
  g->appeal[a] = appeal;
  assert_int_equal(test_add(g->w, id, x, y, 0, AOI_MARKER, 1, 0), 0);
  assert_int_equal(aoi_set_appeal(g->w, id, appeal), 0);
}

/* 60 watchers of radius 5 (ids 1000 ..), in every shard of the lattice's
   world: the usual reach is about 8. */
static void add_short_sighted(ghost_world *g)
{
  for (unsigned i = 0; i < 60; i++)
    assert_int_equal(test_add(g->w, 1000 + i, (float)(10 + 13 * (i % 30)),
                             (float)(10 + 190 * (i / 30)), 5, AOI_WATCHER, 0,
                             1),
                     0);
}

/* The shard whose rectangle holds (x, y). */
static unsigned shard_at(aoi_world *w, unsigned shards, float x, float y)
{
  for (unsigned s = 0; s < shards; s++) {
    aoi_shard_info info;
    assert_int_equal(aoi_shard(w, s, &info), 0);
    if (x >= info.min_x && x < info.max_x && y >= info.min_y &&
        y < info.max_y)
      return s;
  }
  fail_msg("no shard holds (%g, %g)", x, y);
  return 0;
}

/* Shard s held exactly the markers outside its rectangle that lie within
   max(reach, their appeal) of it per axis; none when reach < 0 (it has
   no watchers). */
static void expect_shard_ghosts(ghost_world *g, unsigned s, double reach)
{
  aoi_shard_info r;
  assert_int_equal(aoi_shard(g->w, s, &r), 0);
  uint64_t want[GHOST_GRID * GHOST_GRID + 1], got[GHOST_GRID * GHOST_GRID + 1];
  size_t n = 0, count = 0;
  for (size_t i = 0; reach >= 0 && i < g->markers; i++) {
    double x = g->x[i], y = g->y[i], d = fmax(reach, g->appeal[i]);
    bool in = x >= r.min_x && x < r.max_x && y >= r.min_y && y < r.max_y;
    if (!in && r.min_x <= x + d && x - d < r.max_x && r.min_y <= y + d &&
        y - d < r.max_y)
      want[n++] = g->ids[i];
  }
  /* it reports the reach it was sent by */
  if (reach < 0)
    assert_true(r.ghost_reach == 0);
  else
    assert_true(fabs(r.ghost_reach - reach) < 1e-6);
  assert_int_equal(r.ghosts, n);
  assert_int_equal(aoi_shard_ghosts(g->w, s, got, COUNT_OF(got), &count), 0);
  if (count != n)
    fail_msg("shard %u: %zu ghosts, %zu expected (reach %g)", s, count, n,
             reach);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(got[i], want[i]);
}

/* A shard is sent the markers within its own watchers' reach (or a
   marker's appeal), and a shard without watchers none: one far-sighted
   watcher widens the band around its own shard only, and follows it when
   it moves or narrows. */
static void test_ghosts_by_shard_reach(void **state)
{
  (void)state;
  ghost_world g = {0};
  open_lattice(&g);
  /* one marker seen from 250 away, at the far corner of its shard */
  add_appealing(&g, 2001, 390, 10, 250);
  assert_int_equal(test_add(g.w, 1001, 100, 100, 5, AOI_WATCHER, 0, 1), 0);
  assert_int_equal(test_add(g.w, 1002, 300, 300, 150, AOI_WATCHER, 0, 1), 0);
  assert_int_equal(aoi_tick(g.w), 0);

  unsigned near = shard_at(g.w, 4, 100, 100), far = shard_at(g.w, 4, 300, 300);
  unsigned moved = shard_at(g.w, 4, 100, 300);
  unsigned empty = shard_at(g.w, 4, 300, 100);
  assert_true(near != far && far != moved && moved != near && empty != near &&
              empty != far && empty != moved);
  expect_shard_ghosts(&g, near, 5);
  expect_shard_ghosts(&g, far, 150);
  expect_shard_ghosts(&g, moved, -1);
  expect_shard_ghosts(&g, empty, -1);
  size_t count = 0;
  uint64_t ids[2];
  assert_int_equal(aoi_view(g.w, 1001, ids, 2, &count), 0);
  assert_int_equal(count, 1); /* the marker at (100, 100), and no other */
  assert_int_equal(aoi_view(g.w, 1002, NULL, 0, &count), 0);
  assert_true(count > 100);

  /* handed to another shard: its band goes with it (the shard it left may
     keep its band for the tick, its watchers as of the last one) */
  assert_int_equal(aoi_move(g.w, 1002, 100, 300), 0);
  assert_int_equal(aoi_tick(g.w), 0);
  expect_shard_ghosts(&g, moved, 150);
  expect_shard_ghosts(&g, near, 5);
  expect_shard_ghosts(&g, empty, -1);
  /* a tick later the shard it left holds no watcher and no ghost */
  assert_int_equal(aoi_set_radius(g.w, 1001, 5), 0); /* (a record) */
  assert_int_equal(aoi_tick(g.w), 0);
  expect_shard_ghosts(&g, far, -1);
  expect_shard_ghosts(&g, moved, 150);

  /* narrowed: the band narrows a tick later */
  assert_int_equal(aoi_set_radius(g.w, 1002, 8), 0);
  assert_int_equal(aoi_tick(g.w), 0);
  expect_shard_ghosts(&g, moved, 150);
  assert_int_equal(aoi_set_radius(g.w, 1001, 5), 0);
  assert_int_equal(aoi_tick(g.w), 0);
  expect_shard_ghosts(&g, moved, 8);
  expect_shard_ghosts(&g, near, 5);
  /* widened: at once */
  assert_int_equal(aoi_set_radius(g.w, 1001, 50), 0);
  assert_int_equal(aoi_tick(g.w), 0);
  expect_shard_ghosts(&g, near, 50);
  aoi_destroy(g.w);
}

/* The view of watcher `id` at (x, y) with radius r holds exactly the
   markers of the lattice within r (hysteresis 0). */
static void expect_lattice_view(aoi_world *w, uint64_t id, float x, float y,
                                float r, const ghost_world *g)
{
  uint64_t want[GHOST_GRID * GHOST_GRID + 1], got[GHOST_GRID * GHOST_GRID + 1];
  size_t n = 0, count = 0;
  for (size_t i = 0; i < g->markers; i++) {
    double dx = (double)g->x[i] - x, dy = (double)g->y[i] - y;
    if (dx * dx + dy * dy <= (double)r * r)
      want[n++] = g->ids[i];
  }
  assert_int_equal(aoi_view(w, id, got, COUNT_OF(got), &count), 0);
  assert_int_equal(count, n);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(got[i], want[i]);
}

/* A watcher that sees a good share of the crowd is computed from every
   handle's mark, and its shard is sent no ghosts for it; but only while
   few watchers reach that far (each costs a pass over the marks): with
   nine, their shards take the wide band of ghosts again. Their views are
   the same either way. */
static void test_far_sighted_watchers(void **state)
{
  (void)state;
  ghost_world g = {0};
  open_lattice(&g);
  /* 60 short-sighted watchers, in every shard, and one that sees 190
     far. The crowd's box is 400 wide: a reach box covers a sixteenth of
     it from a reach of 50, which rounds up to 64, above four times the
     usual reach (about 8); so 190 is far-sighted */
  add_short_sighted(&g);
  assert_int_equal(test_add(g.w, 2000, 300, 300, 190, AOI_WATCHER, 0, 1), 0);
  unsigned far = shard_at(g.w, 4, 300, 300);
  assert_true(far < 4);
  /* (the host decides from the crowd and the counts of the ticks before,
     and a shard sheds a band a tick after: four ticks) */
  for (int t = 0; t < 4; t++) {
    assert_int_equal(aoi_set_radius(g.w, 1000, 5), 0); /* (a record) */
    assert_int_equal(aoi_tick(g.w), 0);
    expect_lattice_view(g.w, 2000, 300, 300, 190, &g);
    expect_lattice_view(g.w, 1000, 10, 10, 5, &g);
  }
  for (unsigned s = 0; s < 4; s++)
    expect_shard_ghosts(&g, s, 5);

  /* eight more: too many to pass over the marks each tick */
  for (unsigned i = 0; i < 8; i++)
    assert_int_equal(test_add(g.w, 2001 + i, (float)(250 + 10 * i), 300, 190,
                             AOI_WATCHER, 0, 1),
                     0);
  for (int t = 0; t < 4; t++) {
    assert_int_equal(aoi_set_radius(g.w, 1000, 5), 0);
    assert_int_equal(aoi_tick(g.w), 0);
    expect_lattice_view(g.w, 2000, 300, 300, 190, &g);
    expect_lattice_view(g.w, 2008, 320, 300, 190, &g);
  }
  expect_shard_ghosts(&g, far, 190);
  aoi_destroy(g.w);
}

/* Watcher `id` at (x, y) of radius r and cap `cap` sees the cap markers
   of the lattice nearest to it (ids breaking ties) of those within r, or
   within their appeal where that is larger. */
static void expect_capped_view(aoi_world *w, uint64_t id, float x, float y,
                               float r, uint32_t cap, const ghost_world *g)
{
  enum { N = GHOST_GRID * GHOST_GRID + 1 };
  double key[N];
  uint64_t want[N], got[N];
  size_t n = 0, count = 0;
  for (size_t i = 0; i < g->markers; i++) {
    double dx = (double)g->x[i] - x, dy = (double)g->y[i] - y;
    double d = sqrt(dx * dx + dy * dy), seen = fmax(r, g->appeal[i]);
    if (dx * dx + dy * dy <= seen * seen) {
      key[n] = d;
      want[n++] = g->ids[i];
    }
  }
  /* by key then id, the first cap; then by id */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && (key[j] < key[j - 1] ||
                                 (key[j] == key[j - 1] &&
                                  want[j] < want[j - 1]));
         j--) {
      double k = key[j];
      key[j] = key[j - 1];
      key[j - 1] = k;
      uint64_t t = want[j];
      want[j] = want[j - 1];
      want[j - 1] = t;
    }
  n = n < cap ? n : cap;
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && want[j] < want[j - 1]; j--) {
      uint64_t t = want[j];
      want[j] = want[j - 1];
      want[j - 1] = t;
    }
  assert_int_equal(aoi_view(w, id, got, COUNT_OF(got), &count), 0);
  assert_int_equal(count, n);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(got[i], want[i]);
}

/* A far-sighted watcher with a cap picks its nearest from the marks too:
   its shard is sent no ghosts for it. One with a small cap keeps only the
   nearest of the picks as they come (ties in the lattice, broken by id);
   one whose cap is larger than what it sees takes every marker in its
   radius and the one that reaches it by its appeal. */
static void test_far_sighted_capped(void **state)
{
  (void)state;
  ghost_world g = {0};
  open_lattice(&g);
  /* seen from 420 away, 410 from the second watcher below */
  add_appealing(&g, 3001, 390, 10, 420);
  /* the short-sighted crowd of test_far_sighted_watchers, and two that
     see 190 far with caps */
  add_short_sighted(&g);
  assert_int_equal(test_add(g.w, 2000, 300, 300, 190, AOI_WATCHER, 0, 1), 0);
  assert_int_equal(aoi_set_cap(g.w, 2000, 30), 0);
  assert_int_equal(test_add(g.w, 2001, 100, 300, 190, AOI_WATCHER, 0, 1), 0);
  assert_int_equal(aoi_set_cap(g.w, 2001, 400), 0);
  for (int t = 0; t < 4; t++) {
    assert_int_equal(aoi_set_radius(g.w, 1000, 5), 0); /* (a record) */
    assert_int_equal(aoi_tick(g.w), 0);
    expect_capped_view(g.w, 2000, 300, 300, 190, 30, &g);
    expect_capped_view(g.w, 2001, 100, 300, 190, 400, &g);
  }
  for (unsigned s = 0; s < 4; s++)
    expect_shard_ghosts(&g, s, 5);
  /* moved and narrowed, the picks follow */
  assert_int_equal(aoi_move(g.w, 2000, 250, 150), 0);
  assert_int_equal(aoi_set_cap(g.w, 2001, 7), 0);
  assert_int_equal(aoi_tick(g.w), 0);
  expect_capped_view(g.w, 2000, 250, 150, 190, 30, &g);
  expect_capped_view(g.w, 2001, 100, 300, 190, 7, &g);
  aoi_destroy(g.w);
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

/* ---- allocator ---------------------------------------------------------- */

/* A busy life: adds, ticks, undrained events, queries, removes, respawns,
   and operations left unticked at destroy. */
static void busy_life(aoi_world *w)
{
  records r = {0};
  answer a;
  for (uint64_t id = 1; id <= 300; id++)
    assert_int_equal(test_add(w, id, (float)((id * 37) % 100),
                             (float)((id * 61) % 100), 15, WM, ALL, ALL),
                     0);
  tick_and_drain(w, &r);
  for (int t = 0; t < 4; t++) {
    for (uint64_t id = 1; id <= 300; id += 3)
      assert_int_equal(aoi_move(w, id, (float)((id * 13 + t * 29) % 100),
                                (float)((id * 7 + t * 31) % 100)),
                       0);
    assert_int_equal(aoi_remove(w, 10 + (uint64_t)t), 0);
    assert_int_equal(test_add(w, 10 + (uint64_t)t, 50, 50, 15, WM, ALL, ALL),
                     0);
    assert_int_equal(aoi_remove(w, 150 + 3 * (uint64_t)t), 0);
    assert_int_equal(aoi_tick(w), 0); /* not drained */
    view_of(w, 1, &a);
    watchers_of(w, 2, &a);
    circle(w, 50, 50, 30, ALL, &a);
  }
  const uint64_t *ids;
  size_t n;
  assert_int_equal(aoi_pending(w, &ids, &n), 0);
  assert_true(n > 0);
  for (uint64_t id = 1; id <= 300; id += 2) {
    int rc = aoi_move(w, id, 1, 1);
    assert_true(rc == 0 || (rc == AOI_ENOENT && (id == 153 || id == 159)));
  }
  for (uint64_t id = 301; id <= 1500; id++) /* a growing op queue */
    assert_int_equal(test_add(w, id, 3, 3, 1, AOI_MARKER, ALL, ALL), 0);
  records_free(&r);
}

static void test_allocator_sees_everything_freed(void **state)
{
  (void)state;
  for (size_t l = 0; l < COUNT_OF(layouts); l++) {
    counter c;
    counter_reset(&c);
    aoi_allocator hooks = counting_allocator(&c);
    aoi_config config = config_for(layouts[l], 30);
    config.allocator = &hooks;
    aoi_world *w = create_or_fail(&config);
    assert_true(atomic_load(&c.live_blocks) > 0);
    busy_life(w);
    assert_true(atomic_load(&c.live_bytes) > 0);
    aoi_destroy(w);
    expect_all_freed(&c, NULL);
  }
}

/* Hooks that give every block an offset of 16, 32, 48 or 0 bytes from a
   line, in turn, and move every block a realloc touches: what the engine
   aligns for itself (a shard's entities, a grid's entries: a line each)
   must hold at any alignment the allocator may give, across moves. */
static atomic_uint shift_turn;

static void *shift_alloc(void *user, size_t size)
{
  (void)user;
  unsigned turn = atomic_fetch_add(&shift_turn, 1) % 4;
  size_t room = (size + 2 * 64 + 63) / 64 * 64;
  char *base = aligned_alloc(64, room);
  if (base == NULL)
    return NULL;
  char *p = base + 64 + 16 * turn;
  memcpy(p - sizeof(base), &base, sizeof(base));
  return p;
}

static void shift_free(void *user, void *ptr, size_t size)
{
  (void)user;
  (void)size;
  if (ptr == NULL)
    return;
  char *base;
  memcpy(&base, (char *)ptr - sizeof(base), sizeof(base));
  free(base);
}

static void *shift_realloc(void *user, void *ptr, size_t old_size,
                           size_t new_size)
{
  void *moved = shift_alloc(user, new_size);
  if (moved == NULL)
    return NULL;
  if (ptr != NULL) {
    memcpy(moved, ptr, old_size < new_size ? old_size : new_size);
    shift_free(user, ptr, old_size);
  }
  return moved;
}

/* A crowd that grows over the ticks (so the arrays grow and move) and
   walks, every event drained, the world checked after each tick. */
static void growing_life(const aoi_config *config, records *out)
{
  aoi_world *w = create_or_fail(config);
  records r = {0};
  for (uint64_t t = 0; t < 12; t++) {
    for (uint64_t id = 1; id <= 250 * (t + 1); id++) {
      float x = (float)((id * 37 + t * 7) % 100);
      float y = (float)((id * 61 + t * 3) % 100);
      int rc = id > 250 * t ? test_add(w, id, x, y, 6, WM, ALL, ALL)
                            : aoi_move(w, id, x, y);
      assert_int_equal(rc, 0);
    }
    tick_and_drain(w, &r);
    assert_true(aoi__world_valid(w));
    for (size_t i = 0; i < r.count; i++)
      records_push(out, r.items[i].watcher, &r.items[i].event);
  }
  records_free(&r);
  aoi_destroy(w);
}

static void test_allocator_any_alignment(void **state)
{
  (void)state;
  const layout some[] = {{1, 1}, {2, 3}, {4, 8}};
  for (size_t l = 0; l < COUNT_OF(some); l++) {
    aoi_config config = config_for(some[l], 6);
    records plain = {0}, shifted = {0};
    growing_life(&config, &plain);
    aoi_allocator hooks = {shift_alloc, shift_realloc, shift_free, NULL};
    config.allocator = &hooks;
    growing_life(&config, &shifted);
    assert_true(plain.count > 10000);
    assert_int_equal(plain.count, shifted.count);
    for (size_t i = 0; i < plain.count; i++) {
      const record *a = &plain.items[i], *b = &shifted.items[i];
      if (a->watcher != b->watcher || a->event.id != b->event.id ||
          a->event.kind != b->event.kind || a->event.tick != b->event.tick ||
          memcmp(&a->event.x, &b->event.x, sizeof(float)) != 0 ||
          memcmp(&a->event.y, &b->event.y, sizeof(float)) != 0)
        fail_msg("event %zu differs with shifted blocks", i);
    }
    records_free(&plain);
    records_free(&shifted);
  }
}

/* The work a shard does each tick, as the rebalancer counts it: each
   entity, plus the view each watcher walks. */
static double load_imbalance(aoi_world *w)
{
  uint64_t total = 0, most = 0;
  for (unsigned s = 0; s < w->shard_count; s++) {
    uint64_t load = 0;
    for (uint32_t i = 0; i < w->shards[s].count; i++)
      load += 1 + w->shards[s].entities[i].view.count;
    total += load;
    most = load > most ? load : most;
  }
  return (double)most * w->shard_count / (double)total;
}

/* Rebalancing follows work, not head count: a dense town in one corner and
   as many entities spread thin over the map start on 4 equal shards, with
   nearly all the work in one; once the cuts move, the busiest shard does
   at most 1.5x the mean. */
static void test_rebalance_follows_work(void **state)
{
  (void)state;
  aoi_config config = config_for((layout){2, 4}, 10);
  config.rebalance_interval = 4;
  aoi_world *w = create_or_fail(&config);
  for (uint64_t id = 1; id <= 2000; id++) {
    bool town = id % 2 == 0;
    float x = town ? 5 + (float)((id * 7) % 150) / 10 : (float)((id * 37) % 1000) / 10;
    float y = town ? 5 + (float)((id * 13) % 150) / 10 : (float)((id * 61) % 1000) / 10;
    assert_int_equal(test_add(w, id, x, y, 4, WM, ALL, ALL), 0);
  }
  assert_int_equal(aoi_tick(w), 0);
  double before = load_imbalance(w);
  assert_true(before > 2.5);
  for (int t = 0; t < 8; t++)
    assert_int_equal(aoi_tick(w), 0);
  aoi_stats s;
  assert_int_equal(aoi_world_stats(w, &s), 0);
  assert_true(s.rebalances >= 1);
  double after = load_imbalance(w);
  print_message("load imbalance %.2f before, %.2f after %llu rebalances\n",
                before, after, (unsigned long long)s.rebalances);
  assert_true(after <= 1.5);
  assert_true(aoi__world_valid(w));
  aoi_destroy(w);
}

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
      cmocka_unit_test(test_config_default),
      cmocka_unit_test(test_edge_ids),
      cmocka_unit_test(test_marker_radius_unused),
      cmocka_unit_test(test_tags),
      cmocka_unit_test(test_create_rejects_bad_config),
#ifdef __linux__
      cmocka_unit_test(test_pin_threads),
#endif
      cmocka_unit_test(test_create_accepts_edge_config),
      cmocka_unit_test(test_stamps_wrap),
      cmocka_unit_test(test_destroy_null),
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_strerror),
      cmocka_unit_test(test_operation_error_order),
      cmocka_unit_test(test_failed_operations_change_nothing),
      cmocka_unit_test(test_policy_error_order),
      cmocka_unit_test(test_failed_policy_calls_change_nothing),
      cmocka_unit_test(test_trace_example),
      cmocka_unit_test(test_events_accumulate),
      cmocka_unit_test(test_pending_ascending_and_stable),
      cmocka_unit_test(test_remove_watcher_drops_events),
      cmocka_unit_test(test_respawn_in_one_tick),
      cmocka_unit_test(test_queries_answer_last_tick),
      cmocka_unit_test(test_query_capacity),
      cmocka_unit_test(test_layer_masks),
      cmocka_unit_test(test_crowd_every_layout),
      cmocka_unit_test(test_ghosts_by_shard_reach),
      cmocka_unit_test(test_far_sighted_watchers),
      cmocka_unit_test(test_far_sighted_capped),
      cmocka_unit_test(test_stats),
      cmocka_unit_test(test_allocator_sees_everything_freed),
      cmocka_unit_test(test_allocator_any_alignment),
      cmocka_unit_test(test_rebalance_follows_work),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
