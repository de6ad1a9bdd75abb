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

/* Shard layout: cols columns split at xcut, each split into rows cells at
   cuts of its own, so that a crowd gathered in a few places can still be
   cut into cells of equal load (rebalance.c). Column c holds xcut[c-1] <=
   x < xcut[c], and its row r ycut[c][r-1] <= y < ycut[c][r], where
   ycut[c] is aoi__layout_ycut(layout, c); the edge cells extend to
   infinity. Shard r * cols + c is cell (c, r). */
typedef struct aoi__layout {
  unsigned cols, rows;
  double *xcut; /* cols - 1 cuts, ascending */
  double *ycut; /* cols x (rows - 1) cuts, each column's ascending */
} aoi__layout;

/* Column c's row cuts: rows - 1 of them, ascending. */
static inline const double *aoi__layout_ycut(const aoi__layout *l,
                                             unsigned col)
{
  /* (no cuts, and no array, when there is one row) */
  return l->rows > 1 ? l->ycut + (size_t)col * (l->rows - 1) : NULL;
}

int aoi__layout_init(const aoi_allocator *a, aoi__layout *layout,
                     unsigned shards, double min_x, double min_y,
                     double max_x, double max_y);
void aoi__layout_free(const aoi_allocator *a, aoi__layout *layout);
unsigned aoi__layout_col(const aoi__layout *layout, double x);
unsigned aoi__layout_row(const aoi__layout *layout, unsigned col, double y);
/* Shard s's rectangle: x0, y0, x1, y1 (x0 <= x < x1), the edge shards out
   to infinity. */
void aoi__layout_rect(const aoi__layout *layout, unsigned s, double r[4]);
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
#define AOI__ENTRY_CAPPED 256u /* a watcher with a cap */
#define AOI__ENTRY_QUIET 512u  /* a quiet watcher (push.c); its index
                                  is in cell[], free after the build */
#define AOI__GRID_CLASSES 3u

/* What the grid keeps of an entry besides its position, in 32 bytes on a
   64-byte boundary: placing an entry in the build writes three lines (x, y
   and this), where an array a field wrote nine, each at random. */
typedef struct aoi__grid_entry {
  uint64_t id;
  uint32_t handle, layers, info;
  uint32_t slot;     /* owned entries: index in the shard's entity array */
  float radius;      /* owned watchers: the view radius, else 0 */
  uint32_t interest; /* owned watchers: the interest mask, else 0 */
} aoi__grid_entry;
_Static_assert(sizeof(aoi__grid_entry) == 32, "a grid entry in 32 bytes");

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
  float *x, *y; /* apart, for the scans' vector loads */
  aoi__grid_entry *entry; /* within entry_block, on a 64-byte boundary */
  void *entry_block;      /* capacity entries and a line, as allocated */
  /* scratch: keys in the build, then quiet watchers' places (push.c) or
     the entities' new slots (order_entities, index.c) */
  uint32_t *cell;
} aoi__grid;

/* One entry to index: where it lies, and what the grid keeps of it. */
typedef struct aoi__grid_item {
  float x, y;
  aoi__grid_entry entry;
} aoi__grid_item;

/* Reads entry i of a source of entries to index. */
typedef void aoi__grid_reader(const void *source, uint32_t i,
                              aoi__grid_item *item);

void aoi__grid_free(const aoi_allocator *a, aoi__grid *grid);

/* The steps of a build that read no entry (grid.c). plan: the cells over
   the entries' bounds box[4] (min x, min y, max x, max y), of side about
   cell_size but at most `limit` of them over the bulk of the entries
   (`samples` positions sx, sy, which it reorders), and room for `count`
   entries; then start[] is zero. sum: after each entry's key was counted
   in start[key + 1]. finish: after each entry was placed. */
int aoi__grid_plan(const aoi_allocator *a, aoi__grid *grid, uint32_t count,
                   const double box[4], double *sx, double *sy,
                   uint32_t samples, double cell_size, double limit);
void aoi__grid_sum(aoi__grid *grid);
void aoi__grid_finish(aoi__grid *grid);
/* The cell of v on an axis of n cells from `origin`, clamped. */
static inline uint32_t aoi__grid_axis(double v, double origin, double inverse,
                                      uint32_t n)
{
  /* floor, clamped: below 1 (NaN too) the cell is 0, and from 1 on the
     conversion's truncation is the floor */
  double c = (v - origin) * inverse;
  if (!(c >= 1))
    return 0;
  if (c >= (double)(n - 1))
    return n - 1;
  return (uint32_t)c;
}
/* Where an entry of `info` in `cell` sorts: its slot in start[]. */
static inline uint32_t aoi__grid_slot(uint32_t info, uint32_t cell,
                                      uint32_t cells)
{
  if (info & AOI__ENTRY_DEPARTED)
    return AOI__GRID_CLASSES * cells + cell;
  uint32_t class = !(info & AOI__ENTRY_MARKER)  ? 2
                   : (info & AOI__ENTRY_CHANGED) ? 0
                                                 : 1;
  return AOI__GRID_CLASSES * cell + class;
}
/* Where an entry at (x, y) sorts. */
static inline uint32_t aoi__grid_key(const aoi__grid *grid, float x, float y,
                                     uint32_t info)
{
  uint32_t cx = aoi__grid_axis(x, grid->x0, grid->inverse, grid->width);
  uint32_t cy = aoi__grid_axis(y, grid->y0, grid->inverse, grid->height);
  return aoi__grid_slot(info, cy * grid->width + cx,
                        grid->width * grid->height);
}

/* Grows box[4] (x0, y0, x1, y1) to hold (x, y). */
static inline void aoi__box_add(double box[4], double x, double y)
{
  box[0] = x < box[0] ? x : box[0];
  box[1] = y < box[1] ? y : box[1];
  box[2] = x > box[2] ? x : box[2];
  box[3] = y > box[3] ? y : box[3];
}

/* Indexes the `count` entries `read` gives, with cells of side about
   cell_size but at most `limit` cells: a counting sort by (cell, class),
   departures after every cell. Inline with its reader, so that no entry is
   copied twice and no call is made per entry: each caller reads its own
   entities and ghosts in place. `known` is the box of the entries' positions
   when the caller has it from a pass of its own (else NULL: a pass here). */
static inline __attribute__((always_inline)) int
aoi__grid_build_from(const aoi_allocator *a, aoi__grid *grid, uint32_t count,
                     double cell_size, double limit, aoi__grid_reader *read,
                     const void *source, const double *known)
{
  enum { SAMPLES = 512 };
  double box[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
  aoi__grid_item it;
  if (known != NULL)
    memcpy(box, known, sizeof(box));
  else
    for (uint32_t i = 0; i < count; i++) {
      read(source, i, &it);
      aoi__box_add(box, it.x, it.y);
    }
  /* positions spread over the entries, should one far away need
     clamping */
  double sx[SAMPLES], sy[SAMPLES];
  uint32_t samples = count < SAMPLES ? count : SAMPLES;
  for (uint32_t j = 0; j < samples; j++) {
    read(source, (uint32_t)((uint64_t)j * count / samples), &it);
    sx[j] = it.x;
    sy[j] = it.y;
  }
  int rc = aoi__grid_plan(a, grid, count, box, sx, sy, samples, cell_size,
                          limit);
  if (rc != 0)
    return rc;
  for (uint32_t i = 0; i < count; i++) {
    read(source, i, &it);
    uint32_t key = aoi__grid_key(grid, it.x, it.y, it.entry.info);
    grid->cell[i] = key;
    grid->start[key + 1]++;
  }
  aoi__grid_sum(grid);
  /* start[k] serves as the running cursor; finish shifts them back */
  for (uint32_t i = 0; i < count; i++) {
    read(source, i, &it);
    uint32_t at = grid->start[grid->cell[i]]++;
    grid->x[at] = it.x;
    grid->y[at] = it.y;
    grid->entry[at] = it.entry;
  }
  aoi__grid_finish(grid);
  return 0;
}

/* The limits of cells that the two kinds of grid take: the main grid (about
   two cells an entry at most) and a dense one for searches by nearness
   (about `per_cell` entries a cell over the bulk of them). */
static inline double aoi__grid_limit(uint32_t count)
{
  return 2.0 * count + 64;
}
static inline double aoi__grid_dense_limit(uint32_t count, double per_cell)
{
  return (double)count / per_cell + 16;
}

/* Indexes `count` items of an array with cells of side about `cell_size`
   (aoi__grid_build_from over the array). */
int aoi__grid_build(const aoi_allocator *a, aoi__grid *grid,
                    const aoi__grid_item *items, uint32_t count,
                    double cell_size);
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
