/*
 * verlet.c: a compute that follows change, measured alone: each watcher
 * keeps a list of candidates (a Verlet list), the markers within its keep
 * reach plus a skin, and each tick checks only its list instead of the
 * grid cells around it. The list holds while no entity has gone more than
 * half the skin from where it stood when the lists were made: a marker
 * within reach now stood within reach + skin then (two displacements of
 * under skin / 2 each). So a tick whose crowd has stayed within that
 * checks ~(1 + skin / reach)^2 x the view's size of candidates, read by
 * slot; the tick after the crowd has gone further makes every list again,
 * from a grid of reach + skin (the nine-grid's, a wider cell).
 *
 * The skin trades the two: a thin one checks fewer candidates and makes
 * the lists more often. algo_params.skin sets it as a share of the
 * crowd's reach (0: a quarter). How often the lists are made depends on
 * how far the crowd goes a tick (aoi-bench --step), which is the point of
 * measuring it. An add (a new slot) makes every list again; a removed
 * marker is skipped by its slot's liveness. With `shape cells`, which is
 * no distance, the lists are made every tick (exact, and no faster than
 * the nine-grid).
 *
 * The views, the diff and the outboxes are algo_core's, as for the
 * nine-grid: the two differ only in how the candidates are found.
 */
#include "algo_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct verlet {
  algo base;
  double reach; /* the crowd's keep reach */
  double skin;
  int stale; /* the lists must be made before the next gather */
  /* The grid the lists are made from (cells of reach + skin). */
  algo_grid grid;
  uint32_t *cell_end;
  uint32_t *item_cell;
  size_t item_cell_capacity;
  uint32_t *items; /* slots, by cell: the lists' order */
  size_t item_count, item_capacity;
  /* Per item, copied from its entity each tick, so that a gather reads
     them near each other (a list is in cell order) and not its entities,
     which lie in the order they came: where it stands (NaN once gone,
     which no test passes), and what the diff reads of it. */
  float *gx, *gy;
  algo_sighting *sights;
  uint32_t *hits;
  size_t sight_capacity;
  /* Per slot: where it stood when the lists were made, and its list. */
  float *x0, *y0;
  uint32_t *list_begin, *list_end;
  size_t slot_capacity;
  uint32_t *list; /* the lists (items), one after another */
  size_t list_count, list_capacity;
  uint64_t rebuilds;
} verlet;

static algo *verlet_create(const algo_params *params)
{
  verlet *v = algo_new(&algo_verlet, params->config, sizeof(*v));
  v->reach = params->radius + v->base.hysteresis;
  v->skin = v->reach * (params->skin > 0 ? params->skin : ALGO_VERLET_SKIN);
  v->stale = 1;
  algo_grid_layout(params->config, v->reach + v->skin, &v->grid);
  size_t cells = (size_t)v->grid.width * (size_t)v->grid.height + 1;
  v->cell_end = algo_resize(&v->base, NULL, 0, cells * sizeof(*v->cell_end));
  return &v->base;
}

static void verlet_destroy(algo *a)
{
  verlet *v = (verlet *)a;
  free(v->cell_end);
  free(v->item_cell);
  free(v->items);
  free(v->x0);
  free(v->y0);
  free(v->gx);
  free(v->gy);
  free(v->sights);
  free(v->hits);
  free(v->list_begin);
  free(v->list_end);
  free(v->list);
  algo_delete(a);
}

static int verlet_add(algo *a, uint64_t id, float x, float y, float radius,
                      unsigned flags, uint32_t layers, uint32_t interest)
{
  int rc = algo_plain_add(a, id, x, y, radius, flags, layers, interest);
  if (rc == 0)
    ((verlet *)a)->stale = 1;
  return rc;
}

/* Room for a slot's per-slot arrays for every slot. */
static void reserve_slots(verlet *v)
{
  algo *a = &v->base;
  size_t n = a->entity_count;
  if (n > v->slot_capacity) {
    size_t old = v->slot_capacity;
    v->x0 = algo_resize(a, v->x0, old * sizeof(float), n * sizeof(float));
    v->y0 = algo_resize(a, v->y0, old * sizeof(float), n * sizeof(float));
    v->list_begin = algo_resize(a, v->list_begin, old * sizeof(uint32_t),
                                n * sizeof(uint32_t));
    v->list_end = algo_resize(a, v->list_end, old * sizeof(uint32_t),
                              n * sizeof(uint32_t));
    v->slot_capacity = n;
  }
}

/* Whether some live entity has gone half the skin (a hair less, for
   rounding) from where it stood when the lists were made. */
static int crowd_strayed(const verlet *v)
{
  const algo *a = &v->base;
  double limit = v->skin * 0.4995, limit2 = limit * limit;
  int strayed = 0;
  for (size_t s = 0; s < a->entity_count; s++) {
    const algo_entity *e = &a->entities[s];
    double dx = (double)e->x - v->x0[s], dy = (double)e->y - v->y0[s];
    strayed |= e->serial != 0 && dx * dx + dy * dy >= limit2;
  }
  return strayed;
}

/* Copies each item's position and sighting from its entity. */
static void refresh_items(verlet *v)
{
  algo *a = &v->base;
  if (v->item_count > v->sight_capacity) {
    size_t old = v->sight_capacity, n = v->item_count;
    v->gx = algo_resize(a, v->gx, old * sizeof(float), n * sizeof(float));
    v->gy = algo_resize(a, v->gy, old * sizeof(float), n * sizeof(float));
    v->sights = algo_resize(a, v->sights, old * sizeof(*v->sights),
                            n * sizeof(*v->sights));
    v->hits = algo_resize(a, v->hits, old * sizeof(uint32_t),
                          n * sizeof(uint32_t));
    v->sight_capacity = n;
  }
  for (size_t i = 0; i < v->item_count; i++) {
    uint32_t s = v->items[i];
    const algo_entity *e = &a->entities[s];
    int live = e->serial != 0;
    v->gx[i] = live ? e->x : NAN;
    v->gy[i] = live ? e->y : NAN;
    v->sights[i] = algo_sight(a, s);
  }
}

/* Makes every watcher's list: the live markers of interest within its keep
   reach plus the skin (with `cells`, within its keep reach itself). */
static void make_lists(verlet *v)
{
  algo *a = &v->base;
  size_t n = a->entity_count;
  /* the grid of the markers, by a counting sort */
  const algo_grid *grid = &v->grid;
  size_t cells = (size_t)grid->width * (size_t)grid->height;
  memset(v->cell_end, 0, (cells + 1) * sizeof(*v->cell_end));
  ALGO_RESERVE(a, v->item_cell, v->item_cell_capacity, n);
  size_t markers = 0;
  for (size_t s = 0; s < n; s++) {
    const algo_entity *e = &a->entities[s];
    v->x0[s] = e->x;
    v->y0[s] = e->y;
    if (!algo_is_live(e, AOI_MARKER))
      continue;
    uint32_t c = (uint32_t)algo_grid_row(grid, e->y) * (uint32_t)grid->width +
                 (uint32_t)algo_grid_col(grid, e->x);
    v->item_cell[s] = c;
    v->cell_end[c + 1]++;
    markers++;
  }
  for (size_t c = 0; c < cells; c++)
    v->cell_end[c + 1] += v->cell_end[c];
  ALGO_RESERVE(a, v->items, v->item_capacity, markers);
  v->item_count = markers;
  for (size_t s = 0; s < n; s++)
    if (algo_is_live(&a->entities[s], AOI_MARKER))
      v->items[v->cell_end[v->item_cell[s]]++] = (uint32_t)s;
  /* each watcher's list from the cells around it */
  int cells_shape = a->shape == AOI_SHAPE_CELLS;
  v->list_count = 0;
  for (size_t s = 0; s < n; s++) {
    const algo_entity *w = &a->entities[s];
    v->list_begin[s] = v->list_end[s] = (uint32_t)v->list_count;
    if (!algo_is_live(w, AOI_WATCHER))
      continue;
    double reach = algo_keep_reach(a, w) + (cells_shape ? 0 : v->skin);
    algo_box box;
    algo_reach_box(a, w->x, w->y, reach, &box);
    int x0 = algo_grid_col(grid, (float)box.x0);
    int x1 = algo_grid_col(grid, (float)box.x1);
    int y0 = algo_grid_row(grid, (float)box.y0);
    int y1 = algo_grid_row(grid, (float)box.y1);
    for (int cy = y0; cy <= y1; cy++) {
      size_t row = (size_t)cy * (size_t)grid->width;
      uint32_t begin = row + (size_t)x0 == 0 ? 0 : v->cell_end[row + x0 - 1];
      uint32_t end = v->cell_end[row + (size_t)x1];
      ALGO_RESERVE(a, v->list, v->list_capacity, v->list_count + (end - begin));
      for (uint32_t i = begin; i < end; i++) {
        uint32_t m = v->items[i];
        const algo_entity *e = &a->entities[m];
        v->list[v->list_count] = i;
        v->list_count += m != s && (e->layers & w->interest) != 0 &&
                         algo_within(a, w->x, w->y, e->x, e->y, reach);
      }
    }
    v->list_end[s] = (uint32_t)v->list_count;
  }
  v->stale = cells_shape; /* `cells`: good for this tick only */
  v->rebuilds++;
}

/* The markers of watcher `slot`'s list within its keep reach now, into
   a->candidates. */
static size_t gather(verlet *v, uint32_t slot)
{
  algo *a = &v->base;
  const algo_entity *w = &a->entities[slot];
  double reach = algo_keep_reach(a, w);
  uint32_t begin = v->list_begin[slot], end = v->list_end[slot];
  ALGO_RESERVE(a, a->candidates, a->candidate_capacity, end - begin);
  size_t n = 0;
  const float *gx = v->gx, *gy = v->gy;
  if (a->shape == AOI_SHAPE_CIRCLE) { /* algo_within's circle, written out */
    double wx = w->x, wy = w->y, limit = reach * reach;
    uint32_t *hits = v->hits;
    for (uint32_t j = begin; j < end; j++) {
      uint32_t i = v->list[j];
      double dx = wx - (double)gx[i], dy = wy - (double)gy[i];
      hits[n] = i;
      n += dx * dx + dy * dy <= limit;
    }
    for (size_t j = 0; j < n; j++)
      a->candidates[j] = v->sights[hits[j]];
    return n;
  }
  for (uint32_t j = begin; j < end; j++) {
    uint32_t i = v->list[j];
    if (algo_within(a, w->x, w->y, gx[i], gy[i], reach)) /* NaN: gone */
      a->candidates[n++] = v->sights[i];
  }
  return n;
}

static void verlet_tick(algo *a)
{
  verlet *v = (verlet *)a;
  algo_begin_tick(a);
  reserve_slots(v);
  if (v->stale || crowd_strayed(v))
    make_lists(v);
  refresh_items(v);
  for (size_t k = 0; k < a->order_count; k++) { /* watchers by id */
    uint32_t s = a->order[k].slot;
    if (a->entities[s].flags & AOI_WATCHER)
      algo_diff_full(a, s, gather(v, s));
  }
  algo_end_tick(a);
}

uint64_t algo_verlet_rebuilds(const algo *a)
{
  return a->cls == &algo_verlet ? ((const verlet *)a)->rebuilds : 0;
}

const algo_class algo_verlet = {
    "verlet",
    "a list per watcher of what lies within reach + a skin, checked a tick",
    verlet_create, verlet_destroy, verlet_add, algo_plain_move,
    algo_plain_remove, verlet_tick};
