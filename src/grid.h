/*
 * grid.h: geometry (grid.c), pure functions and no threads: the visibility
 * predicate of each shape, the boxes that bound a reach, the shard layout,
 * and the uniform spatial grid each shard rebuilds every tick.
 */
#ifndef AOI_GRID_H
#define AOI_GRID_H

#include <math.h>

#include "base.h"

typedef struct aoi__shape {
  aoi_shape kind;
  double cell; /* AOI_SHAPE_CELLS */
} aoi__shape;

/* Whether B at (bx, by) is within reach `reach` of A at (ax, ay). Inline:
   it is the innermost test of a tick. */
static inline bool aoi__within(const aoi__shape *shape, float ax, float ay,
                               float bx, float by, double reach)
{
  double dx = (double)bx - (double)ax;
  double dy = (double)by - (double)ay;
  switch (shape->kind) {
  case AOI_SHAPE_SQUARE:
    return (dx < 0 ? -dx : dx) <= reach && (dy < 0 ? -dy : dy) <= reach;
  case AOI_SHAPE_CELLS: {
    double c = shape->cell;
    double k = ceil(reach / c);
    double cx = floor((double)bx / c) - floor((double)ax / c);
    double cy = floor((double)by / c) - floor((double)ay / c);
    return (cx < 0 ? -cx : cx) <= k && (cy < 0 ? -cy : cy) <= k;
  }
  case AOI_SHAPE_CIRCLE:
  default:
    return dx * dx + dy * dy <= reach * reach;
  }
}
/* A box [x0, x1] x [y0, y1] that holds every point within `reach` of (x, y),
   slightly inflated so that float rounding can never drop one. */
void aoi__reach_box(const aoi__shape *shape, float x, float y, double reach,
                    double box[4]);
/* The largest per-axis distance at which anything can be within `reach`. */
double aoi__reach_extent(const aoi__shape *shape, double reach);

/* Shard layout: cols x rows rectangles split at xcut / ycut. Column c holds
   xcut[c-1] <= x < xcut[c]; the edge columns extend to infinity. */
typedef struct aoi__layout {
  unsigned cols, rows;
  double *xcut; /* cols - 1 cuts, ascending */
  double *ycut; /* rows - 1 cuts, ascending */
} aoi__layout;

int aoi__layout_init(const aoi_allocator *a, aoi__layout *layout,
                     unsigned shards, double min_x, double min_y,
                     double max_x, double max_y);
void aoi__layout_free(const aoi_allocator *a, aoi__layout *layout);
unsigned aoi__layout_col(const aoi__layout *layout, double x);
unsigned aoi__layout_row(const aoi__layout *layout, double y);
unsigned aoi__layout_shard(const aoi__layout *layout, float x, float y);

/* Uniform spatial grid over one shard's entries, rebuilt every tick by a
   counting sort; entries are stored by cell, structure of arrays. Within a
   cell come first the markers that changed this tick (added, moved, new
   layers), then the other markers, then the entries that are no marker:
   start[] has AOI__GRID_CLASSES offsets per cell. After all cells come the
   departures (where a marker that moved or was removed this tick stood at
   the end of the last one), by cell: cell c's are
   [start[AOI__GRID_CLASSES * cells + c], ... + 1). Only the compute phase's
   unchanged watchers look at departures. */
#define AOI__ENTRY_MARKER 1u
#define AOI__ENTRY_WATCHER 2u
#define AOI__ENTRY_OWNED 4u
#define AOI__ENTRY_CHANGED 8u
#define AOI__ENTRY_DEPARTED 16u
#define AOI__ENTRY_STALE 32u /* a watcher whose view the last tick kept */
#define AOI__ENTRY_MOVED 64u /* a marker whose position changed this tick */
#define AOI__ENTRY_APPEAL 128u /* a marker whose appeal is not 0 */
#define AOI__GRID_CLASSES 3u

typedef struct aoi__grid {
  double x0, y0, inverse; /* cell of x: floor((x - x0) * inverse) */
  uint32_t width, height;
  uint32_t *start; /* (AOI__GRID_CLASSES + 1) * width * height + 1 */
  uint32_t start_capacity;
  /* (width + 1) * (height + 1) prefix sums over cells of the changed
     markers and departures: dirty[(cy) * (width + 1) + cx] counts those in
     cells [0, cx) x [0, cy). */
  uint32_t *dirty;
  uint32_t dirty_capacity;
  uint32_t count, capacity;
  float *x, *y;
  uint64_t *id;
  uint32_t *handle, *layers, *info;
  uint32_t *slot; /* owned entries: index in the shard's entity array */
  float *radius;  /* owned watchers: the view radius, else 0 */
  uint32_t *cell; /* scratch for the build */
} aoi__grid;

/* One entry to index. */
typedef struct aoi__grid_item {
  float x, y;
  uint64_t id;
  uint32_t handle, layers, info, slot;
  float radius;
} aoi__grid_item;

void aoi__grid_free(const aoi_allocator *a, aoi__grid *grid);
/* Indexes `count` items with cells of side about `cell_size`. */
int aoi__grid_build(const aoi_allocator *a, aoi__grid *grid,
                    const aoi__grid_item *items, uint32_t count,
                    double cell_size);
/* Indexes `count` items with cells as small as about `per_cell` items a
   cell over the bulk of them allow: for searches by nearness. */
int aoi__grid_build_dense(const aoi_allocator *a, aoi__grid *grid,
                          const aoi__grid_item *items, uint32_t count,
                          double per_cell);
/* The inclusive cell range that covers box[4] (x0, y0, x1, y1). */
void aoi__grid_range(const aoi__grid *grid, const double box[4],
                     uint32_t range[4]);
bool aoi__grid_valid(const aoi__grid *grid);
/* How many changed markers and departures lie in the inclusive cell range
   r[4] (x0, y0, x1, y1). */
static inline uint32_t aoi__grid_dirty(const aoi__grid *grid,
                                       const uint32_t r[4])
{
  uint32_t stride = grid->width + 1;
  const uint32_t *d = grid->dirty;
  return d[(r[3] + 1) * stride + r[2] + 1] - d[r[1] * stride + r[2] + 1] -
         d[(r[3] + 1) * stride + r[0]] + d[r[1] * stride + r[0]];
}
/* The entries of cells cx0..cx1 of row cy, which lie contiguously (no
   departures among them). */
static inline uint32_t aoi__grid_row_begin(const aoi__grid *grid, uint32_t cy,
                                           uint32_t cx0)
{
  return grid->start[AOI__GRID_CLASSES * (cy * grid->width + cx0)];
}
static inline uint32_t aoi__grid_row_end(const aoi__grid *grid, uint32_t cy,
                                         uint32_t cx1)
{
  return grid->start[AOI__GRID_CLASSES * (cy * grid->width + cx1 + 1)];
}

#endif /* AOI_GRID_H */
