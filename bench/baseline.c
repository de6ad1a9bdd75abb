/*
 * baseline.c: the classic nine-grid AOI, single-threaded and plain, as a
 * zone server without this library would write it.
 *
 * State: one slot per live entity (a free list reuses slots; an id map finds
 * them), each watcher's view as an array sorted by id. Every entity has a
 * serial, new at each add, so a view entry whose entity was removed, or
 * removed and added again under the same id (a respawn), is told from the
 * live one: the watcher gets `leave` for the old and `enter` for the new.
 *
 * A tick:
 *  1. Counting-sorts the live markers into a uniform grid over the world's
 *     bounds (positions outside are clamped into the edge cells: clamping is
 *     monotonic, so a neighbour within n cells stays within n cells). For
 *     circle and square views the cell is the crowd's reach (the radius
 *     baseline_create is given, plus the hysteresis), a hair wider, so such
 *     a watcher scans the 3 x 3 cells around its own, and one that sees
 *     farther scans floor(reach / cell) + 1 cells each way; for `cells C`
 *     the grid is the spec's own C-grid (C doubled while the grid would be
 *     too big) and a watcher scans ceil(reach / C) cells each way.
 *  2. For each watcher: gathers the markers of those cells that pass the
 *     layer test and the spec's visibility test at reach + hysteresis (the
 *     most any of them may have), sorts them by id, and walks them beside
 *     the previous view: an entry only in the old view is a `leave`; a
 *     candidate only in the new is an `enter` if it passes at the plain
 *     reach; one in both stays, and is a `move` if it moved since the last
 *     tick. The walk is in id order, so each of the three groups comes out
 *     sorted, and they are written to the watcher's outbox in the order
 *     leave, enter, move.
 *  3. Orders the outboxes by watcher id and records everyone's position as
 *     of this tick (what the next tick's `move` compares with).
 *
 * The visibility test is the spec's, in double on the stored floats, the
 * same expression for every shape as TRACE_FORMAT.md writes it.
 */
#include "baseline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* The grid has at most this many cells a side. */
#define GRID_MAX 2048
#define EMPTY_SLOT UINT32_MAX

typedef struct view_entry {
  uint64_t id;
  uint32_t serial;
  uint32_t slot;
} view_entry;

typedef struct entity {
  uint64_t id;
  float x, y;
  float tick_x, tick_y; /* position as of the last tick */
  float radius;
  uint32_t serial; /* 0: a free slot */
  uint32_t flags, layers, interest;
  view_entry *view; /* watchers: sorted by id */
  size_t view_count, view_capacity;
} entity;

/* A marker as the grid holds it: what the inner loop reads. */
typedef struct cell_item {
  uint64_t id;
  float x, y;
  uint32_t slot, layers;
} cell_item;

typedef struct candidate {
  uint64_t id;
  uint32_t slot;
} candidate;

typedef struct outbox {
  uint64_t watcher;
  size_t start, count;
} outbox;

struct baseline {
  double hysteresis;
  int move_events;
  aoi_shape shape;
  double cell_size; /* the spec's C, for AOI_SHAPE_CELLS */

  entity *entities;
  size_t entity_count, entity_capacity; /* slots in use or free */
  uint32_t *free_slots;
  size_t free_count, free_capacity;
  uint32_t next_serial;

  uint64_t *map_ids; /* open addressing, linear probing */
  uint32_t *map_slots; /* EMPTY_SLOT where free */
  size_t map_capacity, map_count;

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
  size_t item_capacity;

  candidate *candidates;
  size_t candidate_capacity;
  view_entry *fresh; /* the view being built */
  size_t fresh_capacity;
  aoi_event *leaves, *enters, *moves;
  size_t leave_capacity, enter_capacity, move_capacity;

  aoi_event *events; /* this tick's, outbox after outbox */
  size_t event_count, event_capacity;
  outbox *outboxes;
  size_t outbox_count, outbox_capacity;
  uint64_t *pending;
  size_t pending_capacity;
  uint32_t tick;

  size_t bytes, peak_bytes;
};

/* ---- memory, counted ---------------------------------------------------- */

static void *resize(baseline *b, void *p, size_t old_bytes, size_t new_bytes)
{
  void *q = bench_realloc(p, new_bytes, 1);
  b->bytes = b->bytes - old_bytes + new_bytes;
  if (b->bytes > b->peak_bytes)
    b->peak_bytes = b->bytes;
  return q;
}

static void release(baseline *b, void *p, size_t bytes)
{
  free(p);
  b->bytes -= bytes;
}

/* Grows an array to hold `need` elements, doubling. */
static void *grow(baseline *b, void *p, size_t *capacity, size_t need,
                  size_t size)
{
  size_t cap = *capacity ? *capacity : 16;
  while (cap < need)
    cap *= 2;
  p = resize(b, p, *capacity * size, cap * size);
  *capacity = cap;
  return p;
}

#define RESERVE(b, array, capacity, need)                                    \
  do {                                                                       \
    if ((need) > (capacity))                                                 \
      (array) = grow((b), (array), &(capacity), (need), sizeof(*(array)));   \
  } while (0)

/* ---- id map ------------------------------------------------------------- */

static size_t map_home(const baseline *b, uint64_t id)
{
  uint64_t z = id * UINT64_C(0x9e3779b97f4a7c15);
  z = (z ^ (z >> 29)) * UINT64_C(0xbf58476d1ce4e5b9);
  return (size_t)(z ^ (z >> 32)) & (b->map_capacity - 1);
}

/* The slot of a live id, or EMPTY_SLOT. */
static uint32_t map_find(const baseline *b, uint64_t id)
{
  for (size_t i = map_home(b, id);; i = (i + 1) & (b->map_capacity - 1)) {
    if (b->map_slots[i] == EMPTY_SLOT)
      return EMPTY_SLOT;
    if (b->map_ids[i] == id)
      return b->map_slots[i];
  }
}

static void map_put(baseline *b, uint64_t id, uint32_t slot)
{
  size_t i = map_home(b, id);
  while (b->map_slots[i] != EMPTY_SLOT)
    i = (i + 1) & (b->map_capacity - 1);
  b->map_ids[i] = id;
  b->map_slots[i] = slot;
  b->map_count++;
}

static void map_rehash(baseline *b, size_t capacity)
{
  uint64_t *ids = b->map_ids;
  uint32_t *slots = b->map_slots;
  size_t old = b->map_capacity;
  b->map_ids = resize(b, NULL, 0, capacity * sizeof(*ids));
  b->map_slots = resize(b, NULL, 0, capacity * sizeof(*slots));
  memset(b->map_slots, 0xff, capacity * sizeof(*slots));
  b->map_capacity = capacity;
  b->map_count = 0;
  for (size_t i = 0; i < old; i++)
    if (slots[i] != EMPTY_SLOT)
      map_put(b, ids[i], slots[i]);
  release(b, ids, old * sizeof(*ids));
  release(b, slots, old * sizeof(*slots));
}

/* Removes a present id, shifting back the entries after it (no
   tombstones). */
static void map_erase(baseline *b, uint64_t id)
{
  size_t mask = b->map_capacity - 1, i = map_home(b, id);
  while (b->map_ids[i] != id || b->map_slots[i] == EMPTY_SLOT)
    i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask; b->map_slots[j] != EMPTY_SLOT;
       j = (j + 1) & mask) {
    size_t home = map_home(b, b->map_ids[j]);
    /* j's entry may fill the hole at i when its home is not in (i, j]. */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      b->map_ids[i] = b->map_ids[j];
      b->map_slots[i] = b->map_slots[j];
      i = j;
    }
  }
  b->map_slots[i] = EMPTY_SLOT;
  b->map_count--;
}

/* ---- geometry ----------------------------------------------------------- */

/* The spec's visibility test of B at (bx, by) from A at (ax, ay). */
static int within(const baseline *b, float ax, float ay, float bx, float by,
                  double reach)
{
  double dx = (double)ax - (double)bx, dy = (double)ay - (double)by;
  switch (b->shape) {
  case AOI_SHAPE_SQUARE:
    return fabs(dx) <= reach && fabs(dy) <= reach;
  case AOI_SHAPE_CELLS: {
    double c = b->cell_size, k = ceil(reach / c);
    double dcx = floor((double)ax / c) - floor((double)bx / c);
    double dcy = floor((double)ay / c) - floor((double)by / c);
    return fabs(dcx) <= k && fabs(dcy) <= k;
  }
  case AOI_SHAPE_CIRCLE:
  default:
    return dx * dx + dy * dy <= reach * reach;
  }
}

static int clamp_cell(double v, int limit)
{
  return v < 0 ? 0 : v > limit - 1 ? limit - 1 : (int)v;
}

/* The grid column of x (or row of y, with its own origin). */
static int grid_index(const baseline *b, float p, double min, double origin,
                      int limit)
{
  double v;
  if (b->shape == AOI_SHAPE_CELLS)
    v = floor(floor((double)p / b->cell_size) / b->multiple) - origin;
  else
    v = floor(((double)p - min) / b->grid_cell);
  return clamp_cell(v, limit);
}

/* How many grid cells each way a watcher with this reach must scan. */
static int grid_span(const baseline *b, double reach)
{
  if (b->shape == AOI_SHAPE_CELLS) {
    double k = ceil(reach / b->cell_size);
    double span = ceil(k / b->multiple);
    return span > GRID_MAX ? GRID_MAX : (int)span;
  }
  /* |dx| <= reach keeps the cells within floor(reach / cell) + 1 of each
     other; the 1e-6 covers rounding in the divisions. */
  double span = floor(reach / b->grid_cell + 1e-6) + 1;
  return span > GRID_MAX ? GRID_MAX : (int)span;
}

static void grid_layout(baseline *b, const aoi_config *config, double reach)
{
  double min_x = config->min_x, min_y = config->min_y;
  double max_x = config->max_x, max_y = config->max_y;
  if (!(min_x < max_x)) {
    min_x = 0;
    max_x = 1000;
  }
  if (!(min_y < max_y)) {
    min_y = 0;
    max_y = 1000;
  }
  b->min_x = min_x;
  b->min_y = min_y;
  double extent = max_x - min_x > max_y - min_y ? max_x - min_x
                                                : max_y - min_y;
  if (b->shape == AOI_SHAPE_CELLS) {
    double c = b->cell_size;
    b->multiple = 1;
    while (b->multiple < (UINT32_MAX >> 1) &&
           extent / (c * b->multiple) + 2 > GRID_MAX)
      b->multiple *= 2;
    b->origin_x = floor(floor(min_x / c) / b->multiple);
    b->origin_y = floor(floor(min_y / c) / b->multiple);
    b->width = (int)(floor(floor(max_x / c) / b->multiple) - b->origin_x) + 1;
    b->height = (int)(floor(floor(max_y / c) / b->multiple) - b->origin_y) + 1;
  } else {
    /* A hair wider than the crowd's reach, so that it spans one cell. */
    b->grid_cell = reach * (1 + 1.0 / 65536);
    if (b->grid_cell < extent / (GRID_MAX - 1))
      b->grid_cell = extent / (GRID_MAX - 1);
    b->width = (int)floor((max_x - min_x) / b->grid_cell) + 1;
    b->height = (int)floor((max_y - min_y) / b->grid_cell) + 1;
  }
  if (b->width > GRID_MAX)
    b->width = GRID_MAX;
  if (b->height > GRID_MAX)
    b->height = GRID_MAX;
  size_t cells = (size_t)b->width * (size_t)b->height + 1;
  b->cell_end = resize(b, NULL, 0, cells * sizeof(*b->cell_end));
}

/* ---- lifecycle and operations ------------------------------------------- */

baseline *baseline_create(const aoi_config *config, double radius)
{
  baseline *b = bench_calloc(1, sizeof(*b));
  b->bytes = b->peak_bytes = sizeof(*b);
  b->hysteresis = config->hysteresis;
  b->move_events = config->move_events != 0;
  b->shape = config->shape;
  b->cell_size = config->cell_size;
  b->next_serial = 1;
  map_rehash(b, 1024);
  grid_layout(b, config, radius + b->hysteresis);
  return b;
}

void baseline_destroy(baseline *b)
{
  if (b == NULL)
    return;
  for (size_t s = 0; s < b->entity_count; s++)
    free(b->entities[s].view);
  free(b->entities);
  free(b->free_slots);
  free(b->map_ids);
  free(b->map_slots);
  free(b->cell_end);
  free(b->item_cell);
  free(b->items);
  free(b->candidates);
  free(b->fresh);
  free(b->leaves);
  free(b->enters);
  free(b->moves);
  free(b->events);
  free(b->outboxes);
  free(b->pending);
  free(b);
}

int baseline_add(baseline *b, uint64_t id, float x, float y, float radius,
                 unsigned flags, uint32_t layers, uint32_t interest)
{
  if (map_find(b, id) != EMPTY_SLOT)
    return AOI_EEXIST;
  uint32_t slot;
  if (b->free_count > 0) {
    slot = b->free_slots[--b->free_count];
  } else {
    RESERVE(b, b->entities, b->entity_capacity, b->entity_count + 1);
    slot = (uint32_t)b->entity_count++;
    memset(&b->entities[slot], 0, sizeof(entity));
  }
  entity *e = &b->entities[slot];
  e->id = id;
  e->x = e->tick_x = x;
  e->y = e->tick_y = y;
  e->radius = radius;
  e->serial = b->next_serial++;
  e->flags = flags;
  e->layers = layers;
  e->interest = interest;
  e->view_count = 0; /* a new watcher starts with an empty view */
  if (2 * (b->map_count + 1) > b->map_capacity)
    map_rehash(b, 2 * b->map_capacity);
  map_put(b, id, slot);
  return 0;
}

int baseline_move(baseline *b, uint64_t id, float x, float y)
{
  uint32_t slot = map_find(b, id);
  if (slot == EMPTY_SLOT)
    return AOI_ENOENT;
  b->entities[slot].x = x;
  b->entities[slot].y = y;
  return 0;
}

int baseline_remove(baseline *b, uint64_t id)
{
  uint32_t slot = map_find(b, id);
  if (slot == EMPTY_SLOT)
    return AOI_ENOENT;
  map_erase(b, id);
  entity *e = &b->entities[slot];
  e->serial = 0; /* its watchers' entries no longer match: `leave` */
  e->view_count = 0;
  RESERVE(b, b->free_slots, b->free_capacity, b->free_count + 1);
  b->free_slots[b->free_count++] = slot;
  return 0;
}

/* ---- the tick ----------------------------------------------------------- */

static void swap_candidates(candidate *c, size_t i, size_t j)
{
  candidate t = c[i];
  c[i] = c[j];
  c[j] = t;
}

/* Quicksort by id, insertion sort for the short runs. */
static void sort_candidates(candidate *c, size_t n)
{
  while (n > 16) {
    /* Median of three to the front, then Hoare partition. */
    size_t mid = n / 2;
    if (c[mid].id < c[0].id)
      swap_candidates(c, 0, mid);
    if (c[n - 1].id < c[0].id)
      swap_candidates(c, 0, n - 1);
    if (c[n - 1].id < c[mid].id)
      swap_candidates(c, mid, n - 1);
    uint64_t pivot = c[mid].id;
    size_t i = 0, j = n - 1;
    for (;;) {
      while (c[i].id < pivot)
        i++;
      while (c[j].id > pivot)
        j--;
      if (i >= j)
        break;
      swap_candidates(c, i, j);
      i++;
      j--;
    }
    /* [0, j] <= pivot <= [j + 1, n): recurse on the smaller side. */
    size_t left = j + 1;
    if (left < n - left) {
      sort_candidates(c, left);
      c += left;
      n -= left;
    } else {
      sort_candidates(c + left, n - left);
      n = left;
    }
  }
  for (size_t i = 1; i < n; i++) {
    candidate v = c[i];
    size_t j = i;
    for (; j > 0 && c[j - 1].id > v.id; j--)
      c[j] = c[j - 1];
    c[j] = v;
  }
}

static void build_grid(baseline *b)
{
  size_t cells = (size_t)b->width * (size_t)b->height;
  memset(b->cell_end, 0, (cells + 1) * sizeof(*b->cell_end));
  RESERVE(b, b->item_cell, b->item_cell_capacity, b->entity_count);
  size_t markers = 0;
  for (size_t s = 0; s < b->entity_count; s++) {
    const entity *e = &b->entities[s];
    if (e->serial == 0 || !(e->flags & AOI_MARKER))
      continue;
    int gx = grid_index(b, e->x, b->min_x, b->origin_x, b->width);
    int gy = grid_index(b, e->y, b->min_y, b->origin_y, b->height);
    uint32_t cell = (uint32_t)gy * (uint32_t)b->width + (uint32_t)gx;
    b->item_cell[s] = cell;
    b->cell_end[cell + 1]++;
    markers++;
  }
  for (size_t c = 0; c < cells; c++) /* cell_end[c]: where cell c starts */
    b->cell_end[c + 1] += b->cell_end[c];
  RESERVE(b, b->items, b->item_capacity, markers);
  for (size_t s = 0; s < b->entity_count; s++) {
    const entity *e = &b->entities[s];
    if (e->serial == 0 || !(e->flags & AOI_MARKER))
      continue;
    cell_item *item = &b->items[b->cell_end[b->item_cell[s]]++];
    item->id = e->id;
    item->x = e->x;
    item->y = e->y;
    item->slot = (uint32_t)s;
    item->layers = e->layers;
  }
  /* Each cell_end[c] moved up to where cell c + 1 starts: its end. */
}

/* The markers near watcher a within reach + hysteresis, sorted by id. */
static size_t gather(baseline *b, uint32_t slot, double reach)
{
  const entity *a = &b->entities[slot];
  int gx = grid_index(b, a->x, b->min_x, b->origin_x, b->width);
  int gy = grid_index(b, a->y, b->min_y, b->origin_y, b->height);
  int span = grid_span(b, reach);
  int x0 = gx - span < 0 ? 0 : gx - span;
  int x1 = gx + span >= b->width ? b->width - 1 : gx + span;
  int y0 = gy - span < 0 ? 0 : gy - span;
  int y1 = gy + span >= b->height ? b->height - 1 : gy + span;
  size_t n = 0;
  for (int cy = y0; cy <= y1; cy++) {
    size_t row = (size_t)cy * (size_t)b->width;
    uint32_t begin = row + (size_t)x0 == 0 ? 0 : b->cell_end[row + x0 - 1];
    uint32_t end = b->cell_end[row + (size_t)x1];
    /* The cells x0..x1 of a row are contiguous in `items`. */
    RESERVE(b, b->candidates, b->candidate_capacity, n + (end - begin));
    for (uint32_t i = begin; i < end; i++) {
      const cell_item *m = &b->items[i];
      if (m->slot == slot || !(a->interest & m->layers) ||
          !within(b, a->x, a->y, m->x, m->y, reach))
        continue;
      b->candidates[n].id = m->id;
      b->candidates[n].slot = m->slot;
      n++;
    }
  }
  sort_candidates(b->candidates, n);
  return n;
}

static aoi_event *push_event(baseline *b, aoi_event **list, size_t *capacity,
                             size_t *count, uint64_t id, aoi_event_kind kind,
                             float x, float y)
{
  if (*count == *capacity)
    *list = grow(b, *list, capacity, *count + 1, sizeof(**list));
  aoi_event *e = &(*list)[(*count)++];
  e->id = id;
  e->x = x;
  e->y = y;
  e->kind = kind;
  e->tick = b->tick;
  return e;
}

/* memcpy for arrays that may be empty, and then NULL. */
static void copy_n(void *to, const void *from, size_t bytes)
{
  if (bytes != 0)
    memcpy(to, from, bytes);
}

/* Watcher `slot`'s new view and events. */
static void compute_watcher(baseline *b, uint32_t slot)
{
  entity *a = &b->entities[slot];
  double reach = (double)a->radius;
  double reach_kept = reach + b->hysteresis;
  size_t n = gather(b, slot, reach_kept);
  RESERVE(b, b->fresh, b->fresh_capacity, n);

  size_t leaves = 0, enters = 0, moves = 0, kept = 0;
  const view_entry *old = a->view;
  size_t i = 0, old_count = a->view_count, j = 0;
  while (i < old_count || j < n) {
    if (j == n || (i < old_count && old[i].id < b->candidates[j].id)) {
      push_event(b, &b->leaves, &b->leave_capacity, &leaves, old[i].id,
                 AOI_LEAVE, 0, 0);
      i++;
      continue;
    }
    const candidate *c = &b->candidates[j++];
    const entity *m = &b->entities[c->slot];
    int was = 0;
    if (i < old_count && old[i].id == c->id) {
      was = old[i].serial == m->serial;
      if (!was) /* the same id, a new entity: a respawn */
        push_event(b, &b->leaves, &b->leave_capacity, &leaves, old[i].id,
                   AOI_LEAVE, 0, 0);
      i++;
    }
    if (was) {
      if (b->move_events && (m->x != m->tick_x || m->y != m->tick_y))
        push_event(b, &b->moves, &b->move_capacity, &moves, m->id, AOI_MOVE,
                   m->x, m->y);
    } else {
      if (reach_kept != reach && !within(b, a->x, a->y, m->x, m->y, reach))
        continue;
      push_event(b, &b->enters, &b->enter_capacity, &enters, m->id,
                 AOI_ENTER, m->x, m->y);
    }
    b->fresh[kept].id = m->id;
    b->fresh[kept].serial = m->serial;
    b->fresh[kept].slot = c->slot;
    kept++;
  }

  RESERVE(b, a->view, a->view_capacity, kept);
  copy_n(a->view, b->fresh, kept * sizeof(*a->view));
  a->view_count = kept;

  size_t total = leaves + enters + moves;
  if (total == 0)
    return;
  RESERVE(b, b->outboxes, b->outbox_capacity, b->outbox_count + 1);
  outbox *o = &b->outboxes[b->outbox_count++];
  o->watcher = a->id;
  o->start = b->event_count;
  o->count = total;
  RESERVE(b, b->events, b->event_capacity, b->event_count + total);
  aoi_event *out = b->events + b->event_count;
  copy_n(out, b->leaves, leaves * sizeof(*out));
  copy_n(out + leaves, b->enters, enters * sizeof(*out));
  copy_n(out + leaves + enters, b->moves, moves * sizeof(*out));
  b->event_count += total;
}

static int compare_outbox(const void *pa, const void *pb)
{
  uint64_t a = ((const outbox *)pa)->watcher, b = ((const outbox *)pb)->watcher;
  return (a > b) - (a < b);
}

void baseline_tick(baseline *b)
{
  b->tick++;
  b->event_count = 0;
  b->outbox_count = 0;
  build_grid(b);
  for (size_t s = 0; s < b->entity_count; s++) {
    const entity *e = &b->entities[s];
    if (e->serial != 0 && (e->flags & AOI_WATCHER))
      compute_watcher(b, (uint32_t)s);
  }
  for (size_t s = 0; s < b->entity_count; s++) {
    entity *e = &b->entities[s];
    e->tick_x = e->x;
    e->tick_y = e->y;
  }
  int sorted = 1;
  for (size_t k = 1; k < b->outbox_count && sorted; k++)
    sorted = b->outboxes[k - 1].watcher < b->outboxes[k].watcher;
  if (!sorted)
    qsort(b->outboxes, b->outbox_count, sizeof(*b->outboxes), compare_outbox);
  RESERVE(b, b->pending, b->pending_capacity, b->outbox_count);
  for (size_t k = 0; k < b->outbox_count; k++)
    b->pending[k] = b->outboxes[k].watcher;
}

size_t baseline_pending(const baseline *b, const uint64_t **ids)
{
  *ids = b->pending;
  return b->outbox_count;
}

void baseline_events(const baseline *b, size_t i, const aoi_event **events,
                     size_t *count)
{
  *events = b->events + b->outboxes[i].start;
  *count = b->outboxes[i].count;
}

size_t baseline_bytes(const baseline *b)
{
  return b->bytes;
}

size_t baseline_peak_bytes(const baseline *b)
{
  return b->peak_bytes;
}
