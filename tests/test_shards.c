/*
 * test_shards.c: the contract of the shards, as aoi_shard and
 * aoi_shard_ghosts show it: a shard is sent as ghosts the markers within
 * its own watchers' reach (or a marker's appeal) and no more, and a shard
 * without watchers none; a far-sighted watcher, capped or not, is computed
 * from every handle's mark instead, while few watchers reach that far;
 * and rebalancing moves the cuts after the work, not the head count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>

#include "aoi.h"
#include "api_support.h"
#include "support.h"
#include "internal.h" /* the shards' entities, aoi__world_valid */

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

/* ---- rebalancing --------------------------------------------------------- */

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

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ghosts_by_shard_reach),
      cmocka_unit_test(test_far_sighted_watchers),
      cmocka_unit_test(test_far_sighted_capped),
      cmocka_unit_test(test_rebalance_follows_work),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
