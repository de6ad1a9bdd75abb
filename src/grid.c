/*
 * grid.c: geometry, pure and thread-free. The visibility predicate of each
 * shape, the boxes that bound a reach, the shard layout, and the uniform
 * spatial grid each shard rebuilds every tick.
 *
 * All distance arithmetic is in double on the stored floats, so a predicate
 * is exact for any coordinates a trace can carry (the difference of two
 * floats of similar magnitude is exact in double). Boxes and ghost reaches
 * are inflated by a relative margin: a box may hold a few points too many,
 * which the exact predicate then drops, but never one too few. The grid
 * clamps positions into its range with a monotonic cell function, so a box
 * query over clamped cells still finds every point inside the box.
 */
#include "grid.h"

#include <math.h>
#include <string.h>

static inline double margin(double a, double b)
{
  return (fabs(a) + fabs(b)) * 1e-9 + 1e-30;
}

void aoi__reach_box(const aoi__shape *shape, float x, float y, double reach,
                    double box[4])
{
  AOI__ASSERT(reach >= 0); /* (not NaN either) */
  if (shape->kind == AOI_SHAPE_CELLS) {
    double c = shape->cell;
    double k = ceil(reach / c);
    double cx = floor((double)x / c), cy = floor((double)y / c);
    box[0] = (cx - k) * c;
    box[1] = (cy - k) * c;
    box[2] = (cx + k + 1) * c;
    box[3] = (cy + k + 1) * c;
  } else {
    box[0] = (double)x - reach;
    box[1] = (double)y - reach;
    box[2] = (double)x + reach;
    box[3] = (double)y + reach;
  }
  double mx = margin(x, box[2] - box[0]), my = margin(y, box[3] - box[1]);
  box[0] -= mx;
  box[1] -= my;
  box[2] += mx;
  box[3] += my;
}

double aoi__reach_extent(const aoi__shape *shape, double reach)
{
  if (shape->kind == AOI_SHAPE_CELLS)
    return (ceil(reach / shape->cell) + 1) * shape->cell;
  return reach;
}

/* ---- layout ------------------------------------------------------------- */

int aoi__layout_init(const aoi_allocator *a, aoi__layout *layout,
                     unsigned shards, double min_x, double min_y,
                     double max_x, double max_y)
{
  AOI__ASSERT(shards >= 1 && shards <= AOI__MAX_SHARDS);
  AOI__ASSERT(min_x < max_x && min_y < max_y);
  double width = max_x - min_x, height = max_y - min_y;
  /* The factor pair whose rectangles are closest to square. */
  unsigned best_cols = shards, best_rows = 1;
  double best = INFINITY;
  for (unsigned cols = 1; cols <= shards; cols++) {
    if (shards % cols != 0)
      continue;
    unsigned rows = shards / cols;
    double aspect = fabs(log((width / cols) / (height / rows)));
    if (aspect < best - 1e-12) {
      best = aspect;
      best_cols = cols;
      best_rows = rows;
    }
  }
  aoi__layout l = {best_cols, best_rows, NULL, NULL};
  if (best_cols > 1 && (l.xcut = aoi__alloc(a, sizeof(double) * (best_cols - 1))) == NULL)
    return AOI_ENOMEM;
  size_t ycuts = (size_t)best_cols * (best_rows - 1);
  if (ycuts > 0 && (l.ycut = aoi__alloc(a, sizeof(double) * ycuts)) == NULL) {
    aoi__free(a, l.xcut, sizeof(double) * (best_cols - 1));
    return AOI_ENOMEM;
  }
  for (unsigned i = 1; i < best_cols; i++)
    l.xcut[i - 1] = min_x + width * i / best_cols;
  for (unsigned c = 0; c < best_cols; c++)
    for (unsigned i = 1; i < best_rows; i++)
      l.ycut[(size_t)c * (best_rows - 1) + i - 1] =
          min_y + height * i / best_rows;
  *layout = l;
  return 0;
}

void aoi__layout_free(const aoi_allocator *a, aoi__layout *layout)
{
  if (layout->cols > 1)
    aoi__free(a, layout->xcut, sizeof(double) * (layout->cols - 1));
  if (layout->rows > 1)
    aoi__free(a, layout->ycut,
              sizeof(double) * layout->cols * (layout->rows - 1));
  memset(layout, 0, sizeof(*layout));
}

/* The number of cuts <= v: the index of the band holding v. The halving
   adds a comparison's 0 or 1 times the half rather than branch on it
   (which a compiler keeps as a branch): which side of a cut an entity
   lies on is as random as the crowd, and a branch there would mispredict
   about once a move. */
static unsigned band(const double *cut, unsigned n, double v)
{
  AOI__ASSERT(n == 0 || cut != NULL);
  unsigned lo = 0;
  while (n > 1) {
    unsigned half = n / 2;
    lo += (unsigned)(cut[lo + half - 1] <= v) * half;
    n -= half;
  }
  return n == 1 ? lo + (unsigned)(cut[lo] <= v) : lo;
}

unsigned aoi__layout_col(const aoi__layout *layout, double x)
{
  return band(layout->xcut, layout->cols - 1, x);
}

unsigned aoi__layout_row(const aoi__layout *layout, unsigned col, double y)
{
  AOI__ASSERT(col < layout->cols);
  return band(aoi__layout_ycut(layout, col), layout->rows - 1, y);
}

unsigned aoi__layout_shard(const aoi__layout *layout, float x, float y)
{
  unsigned col = aoi__layout_col(layout, x);
  return aoi__layout_row(layout, col, y) * layout->cols + col;
}

void aoi__layout_rect(const aoi__layout *l, unsigned s, double r[4])
{
  unsigned col = s % l->cols, row = s / l->cols;
  const double *ycut = aoi__layout_ycut(l, col);
  r[0] = col > 0 ? l->xcut[col - 1] : -INFINITY;
  r[1] = row > 0 ? ycut[row - 1] : -INFINITY;
  r[2] = col + 1 < l->cols ? l->xcut[col] : INFINITY;
  r[3] = row + 1 < l->rows ? ycut[row] : INFINITY;
}

/* ---- spatial grid ------------------------------------------------------- */

void aoi__grid_free(const aoi_allocator *a, aoi__grid *grid)
{
  aoi__free(a, grid->start, sizeof(uint32_t) * grid->start_capacity);
  aoi__free(a, grid->dirty, sizeof(uint32_t) * grid->dirty_capacity);
  aoi__free(a, grid->x, sizeof(float) * grid->capacity);
  aoi__free(a, grid->y, sizeof(float) * grid->capacity);
  aoi__free(a, grid->entry_block,
            aoi__lined_bytes(grid->capacity, sizeof(aoi__grid_entry)));
  aoi__free(a, grid->cell, sizeof(uint32_t) * grid->capacity);
  memset(grid, 0, sizeof(*grid));
}

static int grid_reserve(const aoi_allocator *a, aoi__grid *grid,
                        uint32_t count, uint32_t width, uint32_t height)
{
  AOI__ASSERT(width >= 1 && height >= 1);
  uint32_t cells = width * height;
  uint32_t corners = (width + 1) * (height + 1);
  uint32_t slots = (AOI__GRID_CLASSES + 1) * cells + 1;
  /* A grid that grew for a burst (a tick where everyone moved and left a
     departure) gives the room back once it needs under a quarter of it;
     a failed shrink keeps what it had. The entries are rebuilt from
     scratch every tick, so nothing needs keeping. */
  if (grid->start_capacity > 4 * (uint64_t)slots + 1024) {
    uint32_t *smaller = aoi__realloc(a, grid->start,
                                     sizeof(uint32_t) * grid->start_capacity,
                                     sizeof(uint32_t) * (slots + slots / 2));
    if (smaller != NULL) {
      grid->start = smaller;
      grid->start_capacity = slots + slots / 2;
    }
  }
  if (grid->dirty_capacity > 4 * (uint64_t)corners + 1024) {
    uint32_t *smaller = aoi__realloc(a, grid->dirty,
                                     sizeof(uint32_t) * grid->dirty_capacity,
                                     sizeof(uint32_t) * (corners + corners / 2));
    if (smaller != NULL) {
      grid->dirty = smaller;
      grid->dirty_capacity = corners + corners / 2;
    }
  }
  if (grid->capacity > 4 * (uint64_t)count + 1024) {
    /* freed here, allocated again below at the size it needs now */
    aoi__grid kept = {0};
    kept.start = grid->start;
    kept.start_capacity = grid->start_capacity;
    kept.dirty = grid->dirty;
    kept.dirty_capacity = grid->dirty_capacity;
    grid->start = grid->dirty = NULL;
    grid->start_capacity = grid->dirty_capacity = 0;
    aoi__grid_free(a, grid);
    *grid = kept;
  }
  int rc = aoi__reserve_roomy(a, (void **)&grid->dirty, &grid->dirty_capacity,
                              corners, sizeof(uint32_t));
  if (rc != 0 ||
      (rc = aoi__reserve_roomy(a, (void **)&grid->start,
                               &grid->start_capacity, slots,
                               sizeof(uint32_t))) != 0)
    return rc;
  if (count <= grid->capacity)
    return 0;
  uint32_t capacity = count + count / 8 + 16;
  aoi__grid bigger = {0};
  bigger.x = aoi__alloc(a, sizeof(float) * capacity);
  bigger.y = aoi__alloc(a, sizeof(float) * capacity);
  bigger.entry_block =
      aoi__alloc(a, aoi__lined_bytes(capacity, sizeof(aoi__grid_entry)));
  bigger.cell = aoi__alloc(a, sizeof(uint32_t) * capacity);
  bigger.capacity = capacity;
  if (!bigger.x || !bigger.y || !bigger.entry_block || !bigger.cell) {
    aoi__grid_free(a, &bigger);
    return AOI_ENOMEM;
  }
  bigger.entry = aoi__line_up(bigger.entry_block);
  /* The entries are rebuilt from scratch, so nothing needs copying. */
  bigger.start = grid->start;
  bigger.start_capacity = grid->start_capacity;
  bigger.dirty = grid->dirty;
  bigger.dirty_capacity = grid->dirty_capacity;
  grid->start = grid->dirty = NULL;
  grid->start_capacity = grid->dirty_capacity = 0;
  aoi__grid_free(a, grid);
  *grid = bigger;
  return 0;
}

/* The k-th smallest of v[0..n) (v is reordered). */
static double select_kth(double *v, uint32_t n, uint32_t k)
{
  AOI__ASSERT(k < n);
  uint32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = v[lo + (hi - lo) / 2];
    uint32_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot)
        i++;
      while (v[j] > pivot)
        j--;
      if (i <= j) {
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        if (j == 0)
          break;
        j--;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      break;
  }
  return v[k];
}

/* Narrows [*lo, *hi] on one axis to where the bulk of the entries lie: the
   1st to 99th percentile of a sample v[0..n), widened by half its span.
   Entries outside are clamped into the edge cells, so one far entity (a GM
   parked at the end of the float range) does not stretch every cell. */
static void bulk_range(double *v, uint32_t n, double *lo, double *hi)
{
  double a = select_kth(v, n, n / 100);
  double b = select_kth(v, n, n - 1 - n / 100);
  double pad = (b - a) / 2;
  if (a - pad > *lo)
    *lo = a - pad;
  if (b + pad < *hi)
    *hi = b + pad;
}

int aoi__grid_plan(const aoi_allocator *a, aoi__grid *grid, uint32_t count,
                   const double box[4], double *sx, double *sy,
                   uint32_t samples, double cell_size, double limit)
{
  AOI__ASSERT(samples <= count && limit >= 1);
  double min_x = box[0], min_y = box[1], max_x = box[2], max_y = box[3];
  if (count == 0)
    min_x = min_y = max_x = max_y = 0;
  double size = cell_size > 0 && isfinite(cell_size) ? cell_size : 1;
  double wx = floor((max_x - min_x) / size) + 1;
  double wy = floor((max_y - min_y) / size) + 1;
  if (wx * wy > limit && count >= 16 && samples > 0) {
    bulk_range(sx, samples, &min_x, &max_x);
    bulk_range(sy, samples, &min_y, &max_y);
  }
  for (;;) {
    wx = floor((max_x - min_x) / size) + 1;
    wy = floor((max_y - min_y) / size) + 1;
    if (wx * wy <= limit)
      break;
    size *= sqrt(wx * wy / limit) * 1.01 + 1e-9;
  }
  uint32_t width = (uint32_t)wx, height = (uint32_t)wy;
  AOI__ASSERT((double)width * height <= limit);
  int rc = grid_reserve(a, grid, count, width, height);
  if (rc != 0)
    return rc;
  grid->x0 = min_x;
  grid->y0 = min_y;
  grid->inverse = 1.0 / size;
  grid->width = width;
  grid->height = height;
  grid->count = count;
  uint32_t slots = (AOI__GRID_CLASSES + 1) * width * height;
  memset(grid->start, 0, sizeof(uint32_t) * (slots + 1));
  return 0;
}

void aoi__grid_sum(aoi__grid *grid)
{
  uint32_t slots = (AOI__GRID_CLASSES + 1) * grid->width * grid->height;
  uint32_t *start = grid->start;
  for (uint32_t k = 0; k < slots; k++)
    start[k + 1] += start[k];
}

void aoi__grid_finish(aoi__grid *grid)
{
  uint32_t width = grid->width, height = grid->height;
  uint32_t cells = width * height;
  uint32_t slots = (AOI__GRID_CLASSES + 1) * cells;
  uint32_t *start = grid->start;
  for (uint32_t k = slots; k > 0; k--)
    start[k] = start[k - 1];
  start[0] = 0;
  AOI__ASSERT(start[slots] == grid->count); /* every entry was placed */
  uint32_t stride = width + 1, *dirty = grid->dirty;
  memset(dirty, 0, sizeof(uint32_t) * stride);
  for (uint32_t cy = 0; cy < height; cy++) {
    uint32_t row = 0;
    dirty[(cy + 1) * stride] = 0;
    for (uint32_t cx = 0; cx < width; cx++) {
      uint32_t c = cy * width + cx, d = AOI__GRID_CLASSES * cells + c;
      row += start[AOI__GRID_CLASSES * c + 1] - start[AOI__GRID_CLASSES * c] +
             start[d + 1] - start[d];
      dirty[(cy + 1) * stride + cx + 1] = dirty[cy * stride + cx + 1] + row;
    }
  }
  AOI__ASSERT_EXPENSIVE(aoi__grid_valid(grid));
}

static inline __attribute__((always_inline)) void
read_item(const void *source, uint32_t i, aoi__grid_item *item)
{
  *item = ((const aoi__grid_item *)source)[i];
}

int aoi__grid_build(const aoi_allocator *a, aoi__grid *grid,
                    const aoi__grid_item *items, uint32_t count,
                    double cell_size)
{
  return aoi__grid_build_from(a, grid, count, cell_size,
                              aoi__grid_limit(count), read_item, items, NULL);
}

void aoi__grid_range(const aoi__grid *grid, const double box[4],
                     uint32_t range[4])
{
  AOI__ASSERT(grid->width > 0 && grid->height > 0);
  range[0] = aoi__grid_axis(box[0], grid->x0, grid->inverse, grid->width);
  range[1] = aoi__grid_axis(box[1], grid->y0, grid->inverse, grid->height);
  range[2] = aoi__grid_axis(box[2], grid->x0, grid->inverse, grid->width);
  range[3] = aoi__grid_axis(box[3], grid->y0, grid->inverse, grid->height);
}

bool aoi__grid_valid(const aoi__grid *grid)
{
  if (grid->width == 0)
    return grid->count == 0;
  uint32_t cells = grid->width * grid->height;
  uint32_t slots = (AOI__GRID_CLASSES + 1) * cells;
  if (grid->start[0] != 0 || grid->start[slots] != grid->count)
    return false;
  for (uint32_t k = 0; k < slots; k++) {
    if (grid->start[k] > grid->start[k + 1])
      return false;
    for (uint32_t i = grid->start[k]; i < grid->start[k + 1]; i++) {
      double box[4] = {grid->x[i], grid->y[i], grid->x[i], grid->y[i]};
      uint32_t r[4];
      aoi__grid_range(grid, box, r);
      if (aoi__grid_slot(grid->entry[i].info, r[1] * grid->width + r[0],
                         cells) != k)
        return false;
    }
  }
  uint32_t all[4] = {0, 0, grid->width - 1, grid->height - 1}, dirty = 0;
  for (uint32_t i = 0; i < grid->count; i++)
    dirty +=
        (grid->entry[i].info & (AOI__ENTRY_DEPARTED | AOI__ENTRY_CHANGED)) &&
        (grid->entry[i].info & (AOI__ENTRY_DEPARTED | AOI__ENTRY_MARKER));
  return aoi__grid_dirty(grid, all) == dirty;
}
