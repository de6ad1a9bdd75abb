/*
 * test_grid.c: the pure geometry of grid.c: the shape predicates against
 * their definitions, reach boxes that never drop a point, the shard layout,
 * and the spatial grid's index against a linear scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <cmocka.h>

#include "internal.h"
#include "support.h"

static const aoi_allocator A = {plain_alloc, plain_realloc, plain_free, NULL};

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
  return xorshift64(&rng);
}
static float coord(double span)
{
  /* multiples of 0.25, so that exact boundaries come up often */
  return (float)((double)(next() % (uint64_t)(span * 4)) / 4.0 - span / 2);
}

static void circle_and_square(void **state)
{
  (void)state;
  aoi__shape circle = {AOI_SHAPE_CIRCLE, 0}, square = {AOI_SHAPE_SQUARE, 0};
  /* Boundaries are inclusive. */
  assert_true(aoi__within(&circle, 0, 0, 3, 4, 5));
  assert_false(aoi__within(&circle, 0, 0, 3, 4.0001f, 5));
  assert_true(aoi__within(&square, 0, 0, 5, -5, 5));
  assert_false(aoi__within(&square, 0, 0, 5.0001f, 0, 5));
  assert_true(aoi__within(&circle, 1, 1, 1, 1, 0));
  assert_false(aoi__within(&circle, 1, 1, 1, 1.5f, 0));
}

static void cells(void **state)
{
  (void)state;
  aoi__shape s = {AOI_SHAPE_CELLS, 10};
  /* R = C: the 3x3 cells around A's cell, whatever A's place in its cell. */
  assert_true(aoi__within(&s, 0, 0, -10, 19.99f, 10));
  assert_false(aoi__within(&s, 0, 0, 20, 0, 10));
  assert_false(aoi__within(&s, 0, 0, -10.01f, 0, 10));
  assert_true(aoi__within(&s, 9.99f, 9.99f, -10, -10, 10));
  /* ceil(R / C): R = 11 reaches two cells out. */
  assert_true(aoi__within(&s, 0, 0, 29.9f, 0, 11));
  assert_false(aoi__within(&s, 0, 0, 30, 0, 11));
  /* cells count from (0, 0): -0.5 is in cell -1. */
  assert_true(aoi__within(&s, -0.5f, 0, -19.5f, 0, 10));
  assert_false(aoi__within(&s, 0.5f, 0, -19.5f, 0, 10));
}

/* Every point within reach lies inside the reach box and within the reach
   extent per axis. */
static void boxes_hold_reach(void **state)
{
  (void)state;
  aoi__shape shapes[3] = {{AOI_SHAPE_CIRCLE, 0}, {AOI_SHAPE_SQUARE, 0},
                          {AOI_SHAPE_CELLS, 7.5}};
  for (int s = 0; s < 3; s++)
    for (int trial = 0; trial < 200000; trial++) {
      float ax = coord(100), ay = coord(100);
      float bx = coord(100), by = coord(100);
      double reach = (double)(next() % 160) / 4.0;
      if (!aoi__within(&shapes[s], ax, ay, bx, by, reach))
        continue;
      double box[4];
      aoi__reach_box(&shapes[s], ax, ay, reach, box);
      assert_true(bx >= box[0] && bx <= box[2]);
      assert_true(by >= box[1] && by <= box[3]);
      double extent = aoi__reach_extent(&shapes[s], reach);
      assert_true(fabs((double)bx - ax) <= extent);
      assert_true(fabs((double)by - ay) <= extent);
    }
}

static void layout(void **state)
{
  (void)state;
  aoi__layout l;
  assert_int_equal(aoi__layout_init(&A, &l, 16, 0, 0, 1000, 1000), 0);
  assert_int_equal(l.cols, 4);
  assert_int_equal(l.rows, 4);
  assert_int_equal(aoi__layout_shard(&l, 0, 0), 0);
  assert_int_equal(aoi__layout_shard(&l, 250, 0), 1); /* a cut belongs above */
  assert_int_equal(aoi__layout_shard(&l, 249.99f, 0), 0);
  assert_int_equal(aoi__layout_shard(&l, -1e30f, 1e30f), 12);
  assert_int_equal(aoi__layout_shard(&l, 1e30f, 1e30f), 15);
  assert_int_equal(aoi__layout_shard(&l, 999, 260), 7);
  aoi__layout_free(&A, &l);

  assert_int_equal(aoi__layout_init(&A, &l, 7, 0, 0, 1000, 1000), 0);
  assert_int_equal(l.cols * l.rows, 7);
  aoi__layout_free(&A, &l);
  /* A wide world gets columns, a tall one rows. */
  assert_int_equal(aoi__layout_init(&A, &l, 2, 0, 0, 1000, 10), 0);
  assert_int_equal(l.cols, 2);
  aoi__layout_free(&A, &l);
  assert_int_equal(aoi__layout_init(&A, &l, 2, 0, 0, 10, 1000), 0);
  assert_int_equal(l.rows, 2);
  aoi__layout_free(&A, &l);
  /* Monotonic: a shard's column never decreases with x. */
  assert_int_equal(aoi__layout_init(&A, &l, 12, -50, -50, 50, 50), 0);
  unsigned last = 0;
  for (double x = -80; x <= 80; x += 0.125) {
    unsigned c = aoi__layout_col(&l, x);
    assert_true(c >= last && c < l.cols);
    last = c;
  }
  aoi__layout_free(&A, &l);
}

/* A grid query over a box returns exactly the points a linear scan finds in
   that box, for clustered data, outliers and degenerate spans. */
static void grid_matches_scan(void **state)
{
  (void)state;
  enum { N = 3000 };
  aoi__grid_item *items = calloc(N, sizeof(*items));
  assert_non_null(items);
  aoi__grid g = {0};
  for (int round = 0; round < 40; round++) {
    uint32_t n = 1 + (uint32_t)(next() % N);
    for (uint32_t i = 0; i < n; i++) {
      items[i].x = coord(round % 3 == 0 ? 4 : 400);
      items[i].y = coord(400);
      if (round % 5 == 1 && i % 97 == 0)
        items[i].x = (next() & 1) ? 1e30f : -3e7f; /* outliers */
      items[i].entry.id = i;
      items[i].entry.handle = i;
      /* every class: changed markers, other markers, no marker, and
         departures */
      uint32_t kind = (uint32_t)(next() % 4);
      items[i].entry.info = kind == 0   ? AOI__ENTRY_MARKER | AOI__ENTRY_CHANGED
                      : kind == 1 ? AOI__ENTRY_MARKER
                      : kind == 2 ? AOI__ENTRY_WATCHER
                                  : AOI__ENTRY_DEPARTED;
    }
    double cell = round % 4 == 2 ? 0.001 : (double)(1 + next() % 50);
    assert_int_equal(aoi__grid_build(&A, &g, items, n, cell), 0);
    assert_true(aoi__grid_valid(&g));
    assert_int_equal(g.count, n);
    /* the first class of every cell holds exactly the changed markers */
    uint32_t changed = 0, listed = 0;
    for (uint32_t i = 0; i < n; i++)
      changed += (items[i].entry.info & AOI__ENTRY_CHANGED) != 0;
    for (uint32_t c = 0; c < g.width * g.height; c++)
      for (uint32_t i = g.start[AOI__GRID_CLASSES * c];
           i < g.start[AOI__GRID_CLASSES * c + 1]; i++) {
        assert_true(g.entry[i].info & AOI__ENTRY_CHANGED);
        listed++;
      }
    assert_int_equal(listed, changed);
    assert_true((uint64_t)g.width * g.height <= 2ull * n + 64);
    for (int q = 0; q < 50; q++) {
      double box[4] = {coord(500), coord(500), 0, 0};
      box[2] = box[0] + (double)(next() % 200);
      box[3] = box[1] + (double)(next() % 200);
      uint32_t r[4];
      aoi__grid_range(&g, box, r);
      uint32_t found = 0, want = 0, dirty = 0;
      uint32_t cells = g.width * g.height;
      for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
        for (uint32_t i = aoi__grid_row_begin(&g, cy, r[0]);
             i < aoi__grid_row_end(&g, cy, r[2]); i++)
          if (g.x[i] >= box[0] && g.x[i] <= box[2] && g.y[i] >= box[1] &&
              g.y[i] <= box[3])
            found++;
        for (uint32_t cx = r[0]; cx <= r[2]; cx++) {
          uint32_t d = AOI__GRID_CLASSES * cells + cy * g.width + cx;
          uint32_t c = AOI__GRID_CLASSES * (cy * g.width + cx);
          dirty += g.start[c + 1] - g.start[c] + g.start[d + 1] - g.start[d];
          for (uint32_t i = g.start[d]; i < g.start[d + 1]; i++) {
            assert_true(g.entry[i].info & AOI__ENTRY_DEPARTED);
            if (g.x[i] >= box[0] && g.x[i] <= box[2] && g.y[i] >= box[1] &&
                g.y[i] <= box[3])
              found++;
          }
        }
      }
      for (uint32_t i = 0; i < n; i++)
        if (items[i].x >= box[0] && items[i].x <= box[2] &&
            items[i].y >= box[1] && items[i].y <= box[3])
          want++;
      assert_int_equal(found, want);
      /* the prefix sums count the changed markers and departures */
      assert_int_equal(aoi__grid_dirty(&g, r), dirty);
    }
  }
  assert_int_equal(aoi__grid_build(&A, &g, items, 0, 10), 0);
  assert_int_equal(g.count, 0);
  aoi__grid_free(&A, &g);
  free(items);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(circle_and_square),
      cmocka_unit_test(cells),
      cmocka_unit_test(boxes_hold_reach),
      cmocka_unit_test(layout),
      cmocka_unit_test(grid_matches_scan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
