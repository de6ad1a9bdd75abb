/*
 * ninegrid.c: the classic nine-grid AOI, single-threaded and plain, as a
 * zone server without this library would write it.
 *
 * State (algo_core.h): one slot per live entity, each watcher's view as an
 * array sorted by id. Nothing is kept between ticks but the views: every
 * tick recomputes every watcher.
 *
 * A tick:
 *  1. Counting-sorts the live markers into a uniform grid over the world's
 *     bounds (positions outside are clamped into the edge cells: clamping is
 *     monotonic, so a neighbour within n cells stays within n cells). For
 *     circle and square views the cell is the crowd's reach (the radius
 *     algo_params gives, plus the hysteresis), a hair wider, so such a
 *     watcher scans the 3 x 3 cells around its own, and one that sees
 *     farther scans floor(reach / cell) + 1 cells each way; for `cells C`
 *     the grid is the spec's own C-grid (C doubled while the grid would be
 *     too big) and a watcher scans ceil(reach / C) cells each way. The
 *     grid holds what the filter reads (position, layers, slot: 16 bytes)
 *     in one array, and what the diff reads of a marker in another, at the
 *     same index; a row of cells is one run of both.
 *  2. For each watcher, in id order (so the outboxes come out in order):
 *     filters the markers of those cells by the layer test and the spec's
 *     visibility test at reach + hysteresis (the most any of them may
 *     have), without a branch on the outcome, and diffs those that pass
 *     with its view (algo_diff_full).
 *  3. Records the positions of the entities that moved (algo_end_tick).
 */
#include "algo_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* A marker as the grid holds it: what the filter reads. What the diff
   reads of it is at the same index of `sights`. */
typedef struct cell_item {
  float x, y;
  uint32_t layers;
  uint32_t slot;
} cell_item;

typedef struct ninegrid {
  algo base;
  /* The grid: for circle and square, cell (i, j) holds
     floor((p - min) / grid_cell); for cells, floor(floor(p / C) / multiple)
     - the origin's. */
  double grid_cell;
  uint32_t multiple;
  double min_x, min_y, origin_x, origin_y;
  int width, height;
  uint32_t *cell_end; /* after the fill: cell c is [cell_end[c-1], cell_end[c]) */
  uint32_t *item_cell; /* per slot */
  size_t item_cell_capacity;
  cell_item *items;
  algo_sighting *sights;
  size_t item_capacity;
  uint32_t *hits; /* the items that pass a watcher's filter */
  size_t hit_capacity;
} ninegrid;

/* ---- geometry ----------------------------------------------------------- */

/* The grid column of x (or row of y, with its own origin). */
static int grid_index(const ninegrid *g, float p, double min, double origin,
                      int limit)
{
  double v;
  if (g->base.shape == AOI_SHAPE_CELLS)
    v = floor(floor((double)p / g->base.cell_size) / g->multiple) - origin;
  else
    v = floor(((double)p - min) / g->grid_cell);
  return algo_clamp_cell(v, limit);
}

/* How many grid cells each way a watcher with this reach must scan. */
static int grid_span(const ninegrid *g, double reach)
{
  if (g->base.shape == AOI_SHAPE_CELLS) {
    double k = ceil(reach / g->base.cell_size);
    double span = ceil(k / g->multiple);
    return span > ALGO_GRID_MAX ? ALGO_GRID_MAX : (int)span;
  }
  /* |dx| <= reach keeps the cells within floor(reach / cell) + 1 of each
     other; the 1e-6 covers rounding in the divisions. */
  double span = floor(reach / g->grid_cell + 1e-6) + 1;
  return span > ALGO_GRID_MAX ? ALGO_GRID_MAX : (int)span;
}

static void grid_layout(ninegrid *g, const aoi_config *config, double reach)
{
  algo_box bounds;
  algo_bounds(config, &bounds);
  double min_x = bounds.x0, min_y = bounds.y0;
  double max_x = bounds.x1, max_y = bounds.y1;
  g->min_x = min_x;
  g->min_y = min_y;
  double extent = max_x - min_x > max_y - min_y ? max_x - min_x
                                                : max_y - min_y;
  if (g->base.shape == AOI_SHAPE_CELLS) {
    double c = g->base.cell_size;
    g->multiple = 1;
    while (g->multiple < (UINT32_MAX >> 1) &&
           extent / (c * g->multiple) + 2 > ALGO_GRID_MAX)
      g->multiple *= 2;
    g->origin_x = floor(floor(min_x / c) / g->multiple);
    g->origin_y = floor(floor(min_y / c) / g->multiple);
    g->width = (int)(floor(floor(max_x / c) / g->multiple) - g->origin_x) + 1;
    g->height = (int)(floor(floor(max_y / c) / g->multiple) - g->origin_y) + 1;
  } else {
    /* cells a hair wider than the crowd's reach */
    algo_grid grid;
    algo_grid_layout(config, reach, &grid);
    g->grid_cell = grid.cell;
    g->width = grid.width;
    g->height = grid.height;
  }
  if (g->width > ALGO_GRID_MAX)
    g->width = ALGO_GRID_MAX;
  if (g->height > ALGO_GRID_MAX)
    g->height = ALGO_GRID_MAX;
  size_t cells = (size_t)g->width * (size_t)g->height + 1;
  g->cell_end = algo_resize(&g->base, NULL, 0, cells * sizeof(*g->cell_end));
}

/* ---- lifecycle and operations ------------------------------------------- */

static algo *ninegrid_create(const algo_params *params)
{
  ninegrid *g = algo_new(&algo_ninegrid, params->config, sizeof(*g));
  grid_layout(g, params->config, params->radius + g->base.hysteresis);
  return &g->base;
}

static void ninegrid_destroy(algo *a)
{
  ninegrid *g = (ninegrid *)a;
  free(g->cell_end);
  free(g->item_cell);
  free(g->items);
  free(g->sights);
  free(g->hits);
  algo_delete(a);
}

/* ---- the tick ----------------------------------------------------------- */

static void build_grid(ninegrid *g)
{
  algo *a = &g->base;
  size_t cells = (size_t)g->width * (size_t)g->height;
  memset(g->cell_end, 0, (cells + 1) * sizeof(*g->cell_end));
  ALGO_RESERVE(a, g->item_cell, g->item_cell_capacity, a->entity_count);
  size_t markers = 0;
  for (size_t s = 0; s < a->entity_count; s++) {
    const algo_entity *e = &a->entities[s];
    if (!algo_is_live(e, AOI_MARKER))
      continue;
    int gx = grid_index(g, e->x, g->min_x, g->origin_x, g->width);
    int gy = grid_index(g, e->y, g->min_y, g->origin_y, g->height);
    uint32_t cell = (uint32_t)gy * (uint32_t)g->width + (uint32_t)gx;
    g->item_cell[s] = cell;
    g->cell_end[cell + 1]++;
    markers++;
  }
  for (size_t c = 0; c < cells; c++) /* cell_end[c]: where cell c starts */
    g->cell_end[c + 1] += g->cell_end[c];
  if (markers > g->item_capacity) {
    size_t old = g->item_capacity;
    g->items = algo_resize(a, g->items, old * sizeof(*g->items),
                           markers * sizeof(*g->items));
    g->sights = algo_resize(a, g->sights, old * sizeof(*g->sights),
                            markers * sizeof(*g->sights));
    g->item_capacity = markers;
  }
  for (size_t s = 0; s < a->entity_count; s++) {
    const algo_entity *e = &a->entities[s];
    if (!algo_is_live(e, AOI_MARKER))
      continue;
    uint32_t i = g->cell_end[g->item_cell[s]]++;
    g->items[i] = (cell_item){e->x, e->y, e->layers, (uint32_t)s};
    g->sights[i] = algo_sight(a, (uint32_t)s);
  }
  /* Each cell_end[c] moved up to where cell c + 1 starts: its end. */
}

/* Appends to g->hits the items of [begin, end) that pass watcher w's
   filter at `reach`: the layer test, the spec's test, not itself. The
   index is written whatever the test says and kept when it passes, so
   that the loop does not branch on it. */
static size_t filter(ninegrid *g, const algo_entity *w, uint32_t slot,
                     double reach, uint32_t begin, uint32_t end, size_t n)
{
  const cell_item *items = g->items;
  uint32_t *hits = g->hits, interest = w->interest;
  if (g->base.shape == AOI_SHAPE_CIRCLE) {
    /* algo_within's circle, written out */
    double wx = w->x, wy = w->y, limit = reach * reach;
    for (uint32_t i = begin; i < end; i++) {
      double dx = wx - (double)items[i].x, dy = wy - (double)items[i].y;
      hits[n] = i;
      n += (dx * dx + dy * dy <= limit) & ((interest & items[i].layers) != 0) &
           (items[i].slot != slot);
    }
    return n;
  }
  for (uint32_t i = begin; i < end; i++) {
    hits[n] = i;
    n += (interest & items[i].layers) != 0 && items[i].slot != slot &&
         algo_within(&g->base, w->x, w->y, items[i].x, items[i].y, reach);
  }
  return n;
}

/* The markers near watcher `slot` within its keep reach, into
   a->candidates. */
static size_t gather(ninegrid *g, uint32_t slot)
{
  algo *a = &g->base;
  const algo_entity *w = &a->entities[slot];
  double reach = algo_keep_reach(a, w);
  int gx = grid_index(g, w->x, g->min_x, g->origin_x, g->width);
  int gy = grid_index(g, w->y, g->min_y, g->origin_y, g->height);
  int span = grid_span(g, reach);
  int x0 = gx - span < 0 ? 0 : gx - span;
  int x1 = gx + span >= g->width ? g->width - 1 : gx + span;
  int y0 = gy - span < 0 ? 0 : gy - span;
  int y1 = gy + span >= g->height ? g->height - 1 : gy + span;
  size_t n = 0;
  for (int cy = y0; cy <= y1; cy++) {
    size_t row = (size_t)cy * (size_t)g->width;
    uint32_t begin = row + (size_t)x0 == 0 ? 0 : g->cell_end[row + x0 - 1];
    uint32_t end = g->cell_end[row + (size_t)x1];
    /* The cells x0..x1 of a row are contiguous in `items`. */
    ALGO_RESERVE(a, g->hits, g->hit_capacity, n + (end - begin));
    n = filter(g, w, slot, reach, begin, end, n);
  }
  ALGO_RESERVE(a, a->candidates, a->candidate_capacity, n);
  for (size_t k = 0; k < n; k++)
    a->candidates[k] = g->sights[g->hits[k]];
  return n;
}

static void ninegrid_tick(algo *a)
{
  ninegrid *g = (ninegrid *)a;
  algo_begin_tick(a);
  build_grid(g);
  for (size_t k = 0; k < a->order_count; k++) { /* watchers by id */
    uint32_t s = a->order[k].slot;
    if (a->entities[s].flags & AOI_WATCHER)
      algo_diff_full(a, s, gather(g, s));
  }
  algo_end_tick(a);
}

const algo_class algo_ninegrid = {
    "ninegrid",
    "a grid of the crowd's reach, rebuilt a tick; 3 x 3 cells scanned",
    ninegrid_create, ninegrid_destroy, algo_plain_add, algo_plain_move,
    algo_plain_remove, ninegrid_tick};
