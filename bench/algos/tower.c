/*
 * tower.c: the tower (lighthouse) AOI. The map is cut into square towers
 * (--tower-side, by default the crowd's view radius). Each marker registers
 * with the tower its position falls in; each watcher subscribes to every
 * tower its reach box covers (radius + hysteresis, the farthest a marker it
 * holds may be). Both are kept up to date on every operation:
 *  - a watcher that moves subscribes to the towers its box now covers and
 *    unsubscribes from those it left, and is computed whole at the tick:
 *    the markers of its towers that pass the spec's test, diffed with its
 *    view (a move to where it stands changes nothing, and is skipped);
 *  - a marker that is added or removed notifies the subscribers of its
 *    tower (a note: this watcher must look at this marker at the tick); one
 *    that moves re-registers with the tower it enters at once, and at the
 *    tick notifies the subscribers of the tower it started the tick in and,
 *    when that is another, of the one it ends in (so a marker that moves
 *    sixteen times a tick notifies once, and a watcher that moved, computed
 *    whole anyway, is not told: events come out at the tick, so telling
 *    earlier would tell nothing more);
 *  - at the tick, a watcher that did not move looks only at the markers
 *    noted to it (algo_diff_notes): each is kept, left, entered or told
 *    moved by the spec's test at its own reach.
 * Towers outside the map's bounds are clamped into the edge ones (a
 * monotonic map, so a box still covers every tower its markers are in).
 *
 * Why notes are enough: a marker a watcher holds lies within its reach box,
 * so in a tower it subscribes to; whatever changes it (a move, a removal)
 * notifies that tower. A marker that comes within reach does so by an add
 * or a move into a subscribed tower. A watcher that moves is computed whole.
 *
 * A tower holds its markers in two arrays, at the same index: what a
 * whole watcher's filter reads (position and layers, kept in step on every
 * move) and the rest of what its diff reads (id, serial, whether it moved
 * this tick), so a whole watcher reads its towers in place and no entity;
 * and its subscribers, a third. A marker knows its place in its tower's
 * arrays; a watcher knows the rectangle of towers it subscribes to.
 */
#include "algo_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* The towers are at most this many a side. */
#define TOWER_MAX 1024

typedef struct tower_item {
  float x, y;
  uint32_t slot, layers;
} tower_item;

typedef struct tower_detail {
  uint64_t id;
  uint32_t serial;
  uint32_t moved; /* its position differs from the last tick's */
} tower_detail;

typedef struct tower {
  tower_item *markers;
  tower_detail *details; /* the markers' */
  uint32_t marker_count, marker_capacity;
  uint32_t *watchers; /* subscribers' slots */
  uint32_t watcher_count, watcher_capacity;
} tower;

/* Towers [x0, x1] x [y0, y1], columns and rows. */
typedef struct tower_range {
  int x0, y0, x1, y1;
} tower_range;

typedef struct tower_slot {
  uint32_t tower, index; /* a marker: its tower, its place there */
  uint32_t from;         /* a marker that moved: its tower at the last tick */
  uint32_t moving;       /* it moved since the last tick (and is listed) */
  tower_range range;     /* a watcher: the towers it subscribes to */
} tower_slot;

typedef struct towers {
  algo base;
  double side, min_x, min_y;
  int width, height;
  tower *grid; /* row after row */
  tower_slot *slots;
  size_t slot_capacity;
  uint32_t *moving; /* markers that moved since the last tick */
  size_t moving_count, moving_capacity;
  algo_dirty dirty;
} towers;

/* ---- layout ------------------------------------------------------------- */

static void layout(towers *t, const aoi_config *config, double side)
{
  algo_box b;
  algo_bounds(config, &b);
  double extent = fmax(b.x1 - b.x0, b.y1 - b.y0);
  if (side < extent / (TOWER_MAX - 1))
    side = extent / (TOWER_MAX - 1);
  t->side = side;
  t->min_x = b.x0;
  t->min_y = b.y0;
  t->width = (int)fmin(floor((b.x1 - b.x0) / side) + 1, TOWER_MAX);
  t->height = (int)fmin(floor((b.y1 - b.y0) / side) + 1, TOWER_MAX);
  size_t count = (size_t)t->width * (size_t)t->height;
  t->grid = algo_resize(&t->base, NULL, 0, count * sizeof(*t->grid));
  memset(t->grid, 0, count * sizeof(*t->grid));
}

static int column(const towers *t, double v, double min, int limit)
{
  double c = floor((v - min) / t->side);
  return c < 0 ? 0 : c > limit - 1 ? limit - 1 : (int)c;
}

static uint32_t tower_at(const towers *t, float x, float y)
{
  int cx = column(t, x, t->min_x, t->width);
  int cy = column(t, y, t->min_y, t->height);
  return (uint32_t)cy * (uint32_t)t->width + (uint32_t)cx;
}

/* The towers watcher `slot`'s reach box covers. */
static tower_range range_of(const towers *t, uint32_t slot)
{
  const algo_entity *w = &t->base.entities[slot];
  algo_box box;
  algo_reach_box(&t->base, w->x, w->y, algo_keep_reach(&t->base, w), &box);
  tower_range r = {column(t, box.x0, t->min_x, t->width),
                   column(t, box.y0, t->min_y, t->height),
                   column(t, box.x1, t->min_x, t->width),
                   column(t, box.y1, t->min_y, t->height)};
  return r;
}

static int in_range(const tower_range *r, int x, int y)
{
  return x >= r->x0 && x <= r->x1 && y >= r->y0 && y <= r->y1;
}

/* ---- markers and subscribers -------------------------------------------- */

/* Every subscriber of tower `index` but the marker itself must look at
   marker `slot`. */
static void notify(towers *t, uint32_t index, uint32_t slot)
{
  const tower *tw = &t->grid[index];
  uint64_t id = t->base.entities[slot].id;
  for (uint32_t k = 0; k < tw->watcher_count; k++) {
    uint32_t w = tw->watchers[k];
    /* a watcher computed whole needs no note (most, when all walk) */
    if (w != slot && !(t->dirty.state[w] & DIRTY_WHOLE))
      algo_dirty_note(&t->base, &t->dirty, w, id, slot);
  }
}

static int has_moved(const algo_entity *e)
{
  return e->x != e->tick_x || e->y != e->tick_y;
}

static void enlist(towers *t, uint32_t slot)
{
  const algo_entity *e = &t->base.entities[slot];
  uint32_t index = tower_at(t, e->x, e->y);
  tower *tw = &t->grid[index];
  if (tw->marker_count == tw->marker_capacity) {
    uint32_t old = tw->marker_capacity;
    tw->markers = algo_grow32(&t->base, tw->markers, &tw->marker_capacity,
                              old + 1, sizeof(*tw->markers));
    tw->details = algo_resize(&t->base, tw->details,
                              old * sizeof(*tw->details),
                              tw->marker_capacity * sizeof(*tw->details));
  }
  tw->markers[tw->marker_count] = (tower_item){e->x, e->y, slot, e->layers};
  tw->details[tw->marker_count] =
      (tower_detail){e->id, e->serial, (uint32_t)has_moved(e)};
  t->slots[slot].tower = index;
  t->slots[slot].index = tw->marker_count++;
}

static void delist(towers *t, uint32_t slot)
{
  tower *tw = &t->grid[t->slots[slot].tower];
  uint32_t index = t->slots[slot].index, last = --tw->marker_count;
  if (index != last) {
    tw->markers[index] = tw->markers[last];
    tw->details[index] = tw->details[last];
    t->slots[tw->markers[index].slot].index = index;
  }
}

/* Subscribes watcher `slot` to the towers of `r` that are not in `skip`
   (NULL: none), or with `join` 0 unsubscribes it from them. */
static void subscribe(towers *t, uint32_t slot, const tower_range *r,
                      const tower_range *skip, int join)
{
  for (int y = r->y0; y <= r->y1; y++)
    for (int x = r->x0; x <= r->x1; x++) {
      if (skip != NULL && in_range(skip, x, y))
        continue;
      tower *tw = &t->grid[(size_t)y * (size_t)t->width + (size_t)x];
      if (join) {
        ALGO_RESERVE32(&t->base, tw->watchers, tw->watcher_capacity,
                       tw->watcher_count + 1);
        tw->watchers[tw->watcher_count++] = slot;
        continue;
      }
      uint32_t k = 0;
      while (tw->watchers[k] != slot)
        k++;
      tw->watchers[k] = tw->watchers[--tw->watcher_count];
    }
}

/* ---- operations --------------------------------------------------------- */

static algo *tower_create(const algo_params *params)
{
  towers *t = algo_new(&algo_tower, params->config, sizeof(*t));
  layout(t, params->config,
         params->tower_side > 0 ? params->tower_side : params->radius);
  return &t->base;
}

static void tower_destroy(algo *a)
{
  towers *t = (towers *)a;
  size_t count = (size_t)t->width * (size_t)t->height;
  for (size_t i = 0; i < count; i++) {
    free(t->grid[i].markers);
    free(t->grid[i].details);
    free(t->grid[i].watchers);
  }
  free(t->grid);
  free(t->slots);
  free(t->moving);
  algo_dirty_free(&t->dirty);
  algo_delete(a);
}

static int tower_add(algo *a, uint64_t id, float x, float y, float radius,
                     unsigned flags, uint32_t layers, uint32_t interest)
{
  towers *t = (towers *)a;
  if (algo_find_slot(a, id) != ALGO_NO_SLOT)
    return AOI_EEXIST;
  uint32_t slot = algo_new_entity(a, id, x, y, radius, flags, layers,
                                  interest);
  if (a->entity_capacity > t->slot_capacity) {
    t->slots = algo_resize(a, t->slots, t->slot_capacity * sizeof(*t->slots),
                           a->entity_capacity * sizeof(*t->slots));
    t->slot_capacity = a->entity_capacity;
  }
  algo_dirty_reserve(a, &t->dirty);
  t->slots[slot].moving = 0;
  if (flags & AOI_WATCHER) {
    t->slots[slot].range = range_of(t, slot);
    subscribe(t, slot, &t->slots[slot].range, NULL, 1);
    algo_dirty_whole(&t->dirty, slot);
  }
  if (flags & AOI_MARKER) {
    enlist(t, slot);
    notify(t, t->slots[slot].tower, slot);
  }
  return 0;
}

static int tower_move(algo *a, uint64_t id, float x, float y)
{
  towers *t = (towers *)a;
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  if (algo_same_place(&a->entities[slot], x, y))
    return 0; /* nothing changes for anyone */
  algo_set_position(a, slot, x, y);
  const algo_entity *e = &a->entities[slot];
  tower_slot *ts = &t->slots[slot];
  if (e->flags & AOI_MARKER) {
    if (!ts->moving) {
      ts->moving = 1;
      ts->from = ts->tower;
      ALGO_RESERVE(a, t->moving, t->moving_capacity, t->moving_count + 1);
      t->moving[t->moving_count++] = slot;
    }
    if (tower_at(t, x, y) == ts->tower) {
      tower *tw = &t->grid[ts->tower];
      tw->markers[ts->index].x = x;
      tw->markers[ts->index].y = y;
      tw->details[ts->index].moved = (uint32_t)has_moved(e);
    } else {
      delist(t, slot);
      enlist(t, slot);
    }
  }
  if (e->flags & AOI_WATCHER) {
    tower_range now = range_of(t, slot);
    if (memcmp(&now, &ts->range, sizeof(now)) != 0) {
      subscribe(t, slot, &ts->range, &now, 0);
      subscribe(t, slot, &now, &ts->range, 1);
      ts->range = now;
    }
    algo_dirty_whole(&t->dirty, slot);
  }
  return 0;
}

static int tower_remove(algo *a, uint64_t id)
{
  towers *t = (towers *)a;
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  unsigned flags = a->entities[slot].flags;
  if (flags & AOI_MARKER) {
    tower_slot *ts = &t->slots[slot];
    if (ts->moving && ts->from != ts->tower)
      notify(t, ts->from, slot); /* where a watcher may have seen it */
    ts->moving = 0; /* its listing is skipped at the tick */
    notify(t, ts->tower, slot);
    delist(t, slot);
  }
  if (flags & AOI_WATCHER) {
    subscribe(t, slot, &t->slots[slot].range, NULL, 0);
    algo_dirty_drop(&t->dirty, slot);
  }
  algo_free_entity(a, slot);
  return 0;
}

/* ---- the tick ----------------------------------------------------------- */

/* The markers of watcher `slot`'s towers within its keep reach. Each is
   written to the candidates and kept when it passes, so that the loop
   does not branch on the test. */
static size_t gather(algo *a, uint32_t slot)
{
  towers *t = (towers *)a;
  const algo_entity *w = &a->entities[slot];
  const tower_range *r = &t->slots[slot].range;
  double reach = algo_keep_reach(a, w), limit = reach * reach;
  double wx = w->x, wy = w->y;
  uint32_t interest = w->interest;
  int circle = a->shape == AOI_SHAPE_CIRCLE;
  size_t n = 0;
  for (int y = r->y0; y <= r->y1; y++)
    for (int x = r->x0; x <= r->x1; x++) {
      const tower *tw = &t->grid[(size_t)y * (size_t)t->width + (size_t)x];
      ALGO_RESERVE(a, a->candidates, a->candidate_capacity,
                   n + tw->marker_count);
      for (uint32_t k = 0; k < tw->marker_count; k++) {
        const tower_item *m = &tw->markers[k];
        const tower_detail *d = &tw->details[k];
        double dx = wx - (double)m->x, dy = wy - (double)m->y;
        int in = circle ? dx * dx + dy * dy <= limit
                        : algo_within(a, w->x, w->y, m->x, m->y, reach);
        a->candidates[n] =
            (algo_sighting){d->id, m->x, m->y, m->slot, d->serial, d->moved};
        n += in & ((interest & m->layers) != 0) & (m->slot != slot);
      }
    }
  return n;
}

static void tower_tick(algo *a)
{
  towers *t = (towers *)a;
  algo_begin_tick(a);
  for (size_t k = 0; k < t->moving_count; k++) {
    uint32_t slot = t->moving[k];
    tower_slot *ts = &t->slots[slot];
    if (!ts->moving)
      continue; /* removed since, or listed twice */
    ts->moving = 0;
    notify(t, ts->from, slot);
    if (ts->tower != ts->from)
      notify(t, ts->tower, slot);
  }
  algo_dirty_run(a, &t->dirty, gather);
  /* What moved stands where it is as of this tick. */
  for (size_t k = 0; k < t->moving_count; k++) {
    uint32_t slot = t->moving[k];
    if (algo_is_live(&a->entities[slot], AOI_MARKER))
      t->grid[t->slots[slot].tower].details[t->slots[slot].index].moved = 0;
  }
  t->moving_count = 0;
  algo_end_tick(a);
}

const algo_class algo_tower = {
    "tower",
    "towers hold markers, watchers subscribe to theirs; incremental",
    tower_create, tower_destroy, tower_add, tower_move, tower_remove,
    tower_tick};
