/*
 * test_config.c: the contract of aoi_config and of a world's life (aoi.h):
 * aoi_config_default's values; aoi_create refusing each bad field with
 * AOI_EINVAL, writing nothing (and the model refusing those it reads too),
 * and accepting the edges of every range (max_radius 0, 4096 shards,
 * degenerate bounds, threads and shards 0, eight move bands); where ticks
 * run (run and pool: a pool only with AOI_RUN_POOL, pin_threads only with
 * AOI_RUN_OWN, lanes 0 the pool's threads or 1 on the caller); pin_threads
 * binding the workers and only them; aoi_destroy(NULL); aoi_strerror's
 * names; and the allocator hooks: every byte allocated is freed with its
 * own size, and blocks at any offset from a cache line, moved by every
 * realloc, give the same events as malloc. (A failing allocator is
 * test_oom's.)
 *
 * Only this thread calls cmocka's asserts; the allocator hooks, which the
 * workers call too, only count with atomics.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aoi.h"
#include "api_support.h"
#include "model.h" /* the oracle agrees on configs */
#include "support.h"
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
  assert_int_equal(c.run, AOI_RUN_OWN);
  assert_null(c.pool);
  assert_int_equal(c.pin_threads, 0);
  assert_int_equal(c.measure_cpu, 0);
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

/* Where ticks run (aoi_config.run and pool): a pool only with
   AOI_RUN_POOL and always with it, no other run value, pin_threads only
   for AOI_RUN_OWN, measure_cpu 0 or 1, and the lanes' limit whatever the
   run. Each refused with AOI_EINVAL, writing nothing, and leaving no
   world counted on the pool: aoi_pool_destroy then succeeds. */
static void test_create_rejects_bad_run(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 2;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  static const struct {
    const char *name;
    int run; /* (an int: out-of-range values too) */
    bool with_pool;
    unsigned threads, pin, measure_cpu;
  } bad[] = {
      {"AOI_RUN_OWN with a pool", AOI_RUN_OWN, true, 1, 0, 0},
      {"AOI_RUN_CALLER with a pool", AOI_RUN_CALLER, true, 1, 0, 0},
      {"AOI_RUN_POOL without a pool", AOI_RUN_POOL, false, 1, 0, 0},
      {"AOI_RUN_POOL without a pool, threads 0", AOI_RUN_POOL, false, 0, 0,
       0},
      {"run 3", 3, false, 1, 0, 0},
      {"run 3 with a pool", 3, true, 1, 0, 0},
      {"run -1", -1, false, 1, 0, 0},
      {"run INT_MAX with a pool", INT_MAX, true, 1, 0, 0},
      {"pin_threads with AOI_RUN_POOL", AOI_RUN_POOL, true, 1, 1, 0},
      {"pin_threads with AOI_RUN_CALLER", AOI_RUN_CALLER, false, 1, 1, 0},
      {"pin_threads 2 with AOI_RUN_POOL", AOI_RUN_POOL, true, 1, 2, 0},
      {"measure_cpu 2", AOI_RUN_OWN, false, 1, 0, 2},
      {"measure_cpu 2 with AOI_RUN_POOL", AOI_RUN_POOL, true, 1, 0, 2},
      {"257 lanes on a pool", AOI_RUN_POOL, true, 257, 0, 0},
      {"257 lanes on the caller", AOI_RUN_CALLER, false, 257, 0, 0},
  };
  aoi_world *const sentinel = (aoi_world *)&current_layout;
  for (size_t i = 0; i < COUNT_OF(bad); i++) {
    aoi_config c;
    aoi_config_default(&c);
    c.run = (aoi_run)bad[i].run;
    c.pool = bad[i].with_pool ? pool : NULL;
    c.threads = bad[i].threads;
    c.pin_threads = bad[i].pin;
    c.measure_cpu = bad[i].measure_cpu;
    aoi_world *w = sentinel;
    int rc = aoi_create(&c, &w);
    if (rc != AOI_EINVAL)
      fail_msg("%s: aoi_create returned %d, not AOI_EINVAL", bad[i].name, rc);
    if (w != sentinel)
      fail_msg("%s: aoi_create wrote *out", bad[i].name);
  }
  /* No world was counted on the pool. */
  assert_int_equal(aoi_pool_destroy(pool), 0);
}

/* The edges of where ticks run: lanes 0 are 1 (AOI_RUN_POOL and
   AOI_RUN_CALLER), shards 0 one per lane; more lanes
   than the pool has threads, up to 256; measure_cpu 1 anywhere; each
   ticks. */
static void test_create_accepts_edge_run(void **state)
{
  (void)state;
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = 3;
  aoi_pool *pool = NULL;
  assert_int_equal(aoi_pool_create(&pc, &pool), 0);
  static const struct {
    aoi_run run;
    unsigned threads, shards, measure_cpu, lanes, shards_made;
  } good[] = {
      {AOI_RUN_POOL, 0, 0, 0, 1, 1},    {AOI_RUN_POOL, 0, 7, 1, 1, 7},
      {AOI_RUN_POOL, 1, 0, 0, 1, 1},    {AOI_RUN_POOL, 256, 0, 1, 256, 256},
      {AOI_RUN_POOL, 8, 2, 0, 8, 2},    {AOI_RUN_CALLER, 0, 0, 0, 1, 1},
      {AOI_RUN_CALLER, 0, 5, 1, 1, 5},  {AOI_RUN_CALLER, 4, 0, 0, 4, 4},
      {AOI_RUN_CALLER, 256, 9, 0, 256, 9},
  };
  for (size_t i = 0; i < COUNT_OF(good); i++) {
    aoi_config c;
    aoi_config_default(&c);
    c.run = good[i].run;
    c.pool = good[i].run == AOI_RUN_POOL ? pool : NULL;
    c.threads = good[i].threads;
    c.shards = good[i].shards;
    c.measure_cpu = good[i].measure_cpu;
    aoi_world *w = create_or_fail(&c);
    aoi_stats s;
    assert_int_equal(aoi_world_stats(w, &s), 0);
    assert_int_equal(s.threads, good[i].lanes);
    assert_int_equal(s.shards, good[i].shards_made);
    assert_int_equal(aoi_delivery_segments(w), good[i].lanes);
    assert_int_equal(test_add(w, 1, 10, 10, 5, WM, ALL, ALL), 0);
    assert_int_equal(test_add(w, 2, 12, 10, 5, WM, ALL, ALL), 0);
    assert_int_equal(aoi_tick(w), 0);
    const aoi_event *events;
    size_t count;
    assert_int_equal(aoi_drain(w, 1, &events, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(events[0].id, 2);
    if (good[i].run == AOI_RUN_POOL)
      assert_int_equal(aoi_pool_destroy(pool), AOI_EBUSY);
    assert_int_equal(aoi_destroy(w), 0);
  }
  assert_int_equal(aoi_pool_destroy(pool), 0);
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

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_default),
      cmocka_unit_test(test_create_rejects_bad_config),
      cmocka_unit_test(test_create_rejects_bad_run),
      cmocka_unit_test(test_create_accepts_edge_run),
#ifdef __linux__
      cmocka_unit_test(test_pin_threads),
#endif
      cmocka_unit_test(test_create_accepts_edge_config),
      cmocka_unit_test(test_destroy_null),
      cmocka_unit_test(test_strerror),
      cmocka_unit_test(test_allocator_sees_everything_freed),
      cmocka_unit_test(test_allocator_any_alignment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
