/*
 * model.c: the brute-force model of docs/trace-format.md (see model.h).
 *
 * State: one array of entity records. A record is one entity from its add to
 * its remove; an id removed and added again before a tick gets a new record
 * with a new serial, so views, which hold (id, serial) pairs, tell the old
 * entity from the new one. Each record keeps two copies of what a watcher can
 * see of it: the fields as submitted (what the next tick uses) and the fields
 * as of the last tick (what queries and `move` events compare against). A
 * removed record stays, marked not live, until the next tick has computed
 * its leaves; then it is dropped.
 *
 * A tick: for every live watcher A by id, and every live marker B by id, B is
 * a candidate for A's new view when A != B, A.interest & B.layers != 0 and B
 * is within reach (max(A.r, B.appeal), plus the hysteresis when B was in A's
 * previous view), all in double. When A has a cap K > 0 and more than K
 * candidates, its view is the K of smallest key (the distance, less the
 * hysteresis for a member of the previous view), ties by id: the candidates
 * are sorted by (key, id) and the first K kept. The events are the
 * differences of the old and new views, plus a `move` for each marker kept
 * whose position differs from the one A was last told (each view entry
 * keeps it) when the move rate allows this tick. The new views and events
 * are built in fresh memory first, so that a failed allocation leaves the
 * model as it was.
 */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct view_entry {
  uint64_t id;
  uint64_t serial;
  float told_x, told_y; /* the position last told to the watcher */
} view_entry;

typedef struct entity {
  uint64_t id;
  uint64_t serial;
  unsigned flags;
  int live; /* as submitted: not removed since its add */
  /* As submitted. */
  float x, y, radius, appeal;
  uint32_t layers, interest;
  uint32_t cap;
  /* As of the last tick; `ticked` is 0 for a record added since. */
  int ticked;
  float tick_x, tick_y;
  uint32_t tick_layers;
  view_entry *view; /* V_t(A), by id ascending; NULL when empty */
  size_t view_count;
} entity;

struct model {
  float max_radius;
  float hysteresis;
  int move_events;
  aoi_shape shape;
  float cell_size;
  aoi_move_band bands[AOI_MAX_MOVE_BANDS];
  unsigned band_count;

  entity *entities;
  size_t entity_count, entity_capacity;
  uint64_t next_serial;
  uint64_t tick;

  model_event *events;
  size_t event_count;
};

model *model_create(const aoi_config *config) {
  if (config == NULL || !isfinite(config->max_radius) ||
      !(config->max_radius >= 0) || !isfinite(config->hysteresis) ||
      !(config->hysteresis >= 0))
    return NULL;
  if (config->shape != AOI_SHAPE_CIRCLE && config->shape != AOI_SHAPE_SQUARE &&
      config->shape != AOI_SHAPE_CELLS)
    return NULL;
  if (config->shape == AOI_SHAPE_CELLS &&
      (!isfinite(config->cell_size) || !(config->cell_size > 0)))
    return NULL;
  if (config->move_band_count > AOI_MAX_MOVE_BANDS)
    return NULL;
  for (unsigned i = 0; i < config->move_band_count; i++) {
    const aoi_move_band *band = &config->move_bands[i];
    if (!isfinite(band->distance) || !(band->distance >= 0) ||
        band->period < 1 ||
        (i > 0 && !(band->distance > config->move_bands[i - 1].distance)))
      return NULL;
  }
  model *m = calloc(1, sizeof *m);
  if (m == NULL)
    return NULL;
  m->max_radius = config->max_radius;
  m->hysteresis = config->hysteresis;
  m->move_events = config->move_events != 0;
  m->shape = config->shape;
  m->cell_size = config->cell_size;
  m->band_count = config->move_band_count;
  memcpy(m->bands, config->move_bands, sizeof m->bands);
  m->next_serial = 1;
  return m;
}

void model_destroy(model *m) {
  if (m == NULL)
    return;
  for (size_t i = 0; i < m->entity_count; i++)
    free(m->entities[i].view);
  free(m->entities);
  free(m->events);
  free(m);
}

static entity *find_live(const model *m, uint64_t id) {
  for (size_t i = 0; i < m->entity_count; i++)
    if (m->entities[i].live && m->entities[i].id == id)
      return &m->entities[i];
  return NULL;
}

static int bad_coord(float x, float y) { return !isfinite(x) || !isfinite(y); }

static int bad_radius(const model *m, float radius) {
  return !isfinite(radius) || radius < 0 || radius > m->max_radius;
}

int model_add(model *m, uint64_t id, float x, float y, float radius,
              unsigned flags, uint32_t layers, uint32_t interest) {
  if (m == NULL)
    return AOI_EINVAL;
  if (find_live(m, id) != NULL)
    return AOI_EEXIST;
  if (flags != AOI_WATCHER && flags != AOI_MARKER &&
      flags != (AOI_WATCHER | AOI_MARKER))
    return AOI_EFLAGS;
  if (bad_coord(x, y))
    return AOI_ECOORD;
  if (bad_radius(m, radius))
    return AOI_ERADIUS;
  if (m->entity_count == m->entity_capacity) {
    size_t capacity = m->entity_capacity ? 2 * m->entity_capacity : 64;
    entity *grown = realloc(m->entities, capacity * sizeof *grown);
    if (grown == NULL)
      return AOI_ENOMEM;
    m->entities = grown;
    m->entity_capacity = capacity;
  }
  entity *e = &m->entities[m->entity_count++];
  memset(e, 0, sizeof *e);
  e->id = id;
  e->serial = m->next_serial++;
  e->flags = flags;
  e->live = 1;
  e->x = x;
  e->y = y;
  e->radius = radius;
  e->layers = layers;
  e->interest = interest;
  return 0;
}

int model_move(model *m, uint64_t id, float x, float y) {
  if (m == NULL)
    return AOI_EINVAL;
  entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  if (bad_coord(x, y))
    return AOI_ECOORD;
  e->x = x;
  e->y = y;
  return 0;
}

int model_set_radius(model *m, uint64_t id, float radius) {
  if (m == NULL)
    return AOI_EINVAL;
  entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  if (bad_radius(m, radius))
    return AOI_ERADIUS;
  e->radius = radius;
  return 0;
}

int model_set_layers(model *m, uint64_t id, uint32_t layers,
                     uint32_t interest) {
  if (m == NULL)
    return AOI_EINVAL;
  entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  e->layers = layers;
  e->interest = interest;
  return 0;
}

int model_set_appeal(model *m, uint64_t id, float appeal) {
  if (m == NULL)
    return AOI_EINVAL;
  entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  if (bad_radius(m, appeal))
    return AOI_ERADIUS;
  e->appeal = appeal;
  return 0;
}

int model_set_cap(model *m, uint64_t id, uint32_t cap) {
  if (m == NULL)
    return AOI_EINVAL;
  entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  e->cap = cap;
  return 0;
}

int model_remove(model *m, uint64_t id) {
  if (m == NULL)
    return AOI_EINVAL;
  entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  e->live = 0;
  return 0;
}

/* The entry of (id, serial) in a view sorted by id, or NULL. */
static const view_entry *view_find(const view_entry *view, size_t count,
                                   uint64_t id, uint64_t serial) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (view[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < count && view[lo].id == id && view[lo].serial == serial)
    return &view[lo];
  return NULL;
}

static int view_has(const view_entry *view, size_t count, uint64_t id,
                    uint64_t serial) {
  return view_find(view, count, id, serial) != NULL;
}

/* d(A, B): the Euclidean distance in double. */
static double distance(const entity *a, const entity *b) {
  double dx = (double)a->x - (double)b->x;
  double dy = (double)a->y - (double)b->y;
  return sqrt(dx * dx + dy * dy);
}

/* Whether marker b is within watcher a's reach, per the shape: the base is
   max(A.r, B.appeal), plus the hysteresis when b was in a's view. */
static int within_reach(const model *m, const entity *a, const entity *b,
                        int was_visible) {
  double reach = (double)(a->radius > b->appeal ? a->radius : b->appeal);
  if (was_visible)
    reach += (double)m->hysteresis;
  double dx = (double)a->x - (double)b->x;
  double dy = (double)a->y - (double)b->y;
  switch (m->shape) {
  case AOI_SHAPE_SQUARE:
    return fabs(dx) <= reach && fabs(dy) <= reach;
  case AOI_SHAPE_CELLS: {
    double cell = (double)m->cell_size;
    double k = ceil(reach / cell);
    double dcx = floor((double)a->x / cell) - floor((double)b->x / cell);
    double dcy = floor((double)a->y / cell) - floor((double)b->y / cell);
    return fabs(dcx) <= k && fabs(dcy) <= k;
  }
  case AOI_SHAPE_CIRCLE:
  default:
    return dx * dx + dy * dy <= reach * reach;
  }
}

/* Whether tick t allows a `move` of b to watcher a: P is the period of the
   band of largest distance D with d(a, b) > D (1 if none), and t is allowed
   when P = 1 or (a.id + t) mod P = 0, computed without overflow. */
static int move_allowed(const model *m, const entity *a, const entity *b,
                        uint64_t t) {
  uint64_t period = 1;
  double d = distance(a, b);
  for (unsigned i = 0; i < m->band_count; i++)
    if (d > (double)m->bands[i].distance)
      period = m->bands[i].period;
  return period == 1 || (a->id % period + t % period) % period == 0;
}

/* A candidate of a capped view: its key, id and record index. */
typedef struct keyed {
  double key;
  uint64_t id;
  size_t index;
} keyed;

static int compare_keyed(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

static int compare_keyed_id(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  return (a->id > b->id) - (a->id < b->id);
}

/* A live record's id and index, to sort records by id. */
typedef struct by_id {
  uint64_t id;
  size_t index;
} by_id;

static int compare_by_id(const void *pa, const void *pb) {
  uint64_t a = ((const by_id *)pa)->id, b = ((const by_id *)pb)->id;
  return (a > b) - (a < b);
}

static int compare_ids(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return (a > b) - (a < b);
}

/* Appends one event to a growing array; -1 when out of memory. */
static int push_event(model_event **events, size_t *count, size_t *capacity,
                      uint64_t watcher, uint64_t id, uint32_t kind, float x,
                      float y, uint32_t tick) {
  if (*count == *capacity) {
    size_t grown_capacity = *capacity ? 2 * *capacity : 256;
    model_event *grown = realloc(*events, grown_capacity * sizeof *grown);
    if (grown == NULL)
      return -1;
    *events = grown;
    *capacity = grown_capacity;
  }
  model_event *e = &(*events)[(*count)++];
  memset(e, 0, sizeof *e);
  e->watcher = watcher;
  e->event.id = id;
  e->event.x = x;
  e->event.y = y;
  e->event.kind = kind;
  e->event.tick = tick;
  return 0;
}

/* Keeps in `visible` (count entries, ids ascending) the `cap` candidates
   of smallest key, ids ascending; `keys` has room for count entries. */
static size_t apply_cap(const model *m, const entity *a, size_t *visible,
                        size_t count, uint32_t cap, keyed *keys) {
  if (cap == 0 || count <= cap)
    return count;
  for (size_t k = 0; k < count; k++) {
    const entity *b = &m->entities[visible[k]];
    keys[k].key = distance(a, b);
    if (view_has(a->view, a->view_count, b->id, b->serial))
      keys[k].key -= (double)m->hysteresis;
    keys[k].id = b->id;
    keys[k].index = visible[k];
  }
  qsort(keys, count, sizeof *keys, compare_keyed);
  /* The first `cap`, back in id order. */
  qsort(keys, cap, sizeof *keys, compare_keyed_id);
  for (size_t k = 0; k < cap; k++)
    visible[k] = keys[k].index;
  return cap;
}

int model_tick(model *m) {
  if (m == NULL)
    return AOI_EINVAL;
  uint64_t tick = m->tick + 1;
  uint32_t event_tick = (uint32_t)tick; /* aoi_event keeps the low 32 bits */
  size_t live_count = 0;
  size_t n = m->entity_count;
  by_id *order = malloc((n ? n : 1) * sizeof *order);
  size_t *visible = malloc((n ? n : 1) * sizeof *visible); /* one new view */
  keyed *keys = malloc((n ? n : 1) * sizeof *keys);
  view_entry **new_views = calloc(n ? n : 1, sizeof *new_views);
  size_t *new_counts = calloc(n ? n : 1, sizeof *new_counts);
  model_event *events = NULL;
  size_t event_count = 0, event_capacity = 0;
  if (order == NULL || visible == NULL || keys == NULL || new_views == NULL ||
      new_counts == NULL)
    goto nomem;

  for (size_t i = 0; i < n; i++)
    if (m->entities[i].live) {
      order[live_count].id = m->entities[i].id;
      order[live_count++].index = i;
    }
  qsort(order, live_count, sizeof *order, compare_by_id);

  for (size_t ai = 0; ai < live_count; ai++) {
    const entity *a = &m->entities[order[ai].index];
    if (!(a->flags & AOI_WATCHER))
      continue;
    size_t count = 0;
    for (size_t bi = 0; bi < live_count; bi++) {
      const entity *b = &m->entities[order[bi].index];
      if (b == a || !(b->flags & AOI_MARKER) || !(a->interest & b->layers))
        continue;
      int was = view_has(a->view, a->view_count, b->id, b->serial);
      if (within_reach(m, a, b, was))
        visible[count++] = order[bi].index;
    }
    count = apply_cap(m, a, visible, count, a->cap, keys);
    view_entry *view = NULL;
    if (count > 0) {
      view = malloc(count * sizeof *view);
      if (view == NULL)
        goto nomem;
    }
    new_views[order[ai].index] = view;
    new_counts[order[ai].index] = count;

    /* The new view: members keep the position they were last told, newcomers
       are told where they are. */
    for (size_t k = 0; k < count; k++) {
      const entity *b = &m->entities[visible[k]];
      const view_entry *old = view_find(a->view, a->view_count, b->id,
                                        b->serial);
      view[k].id = b->id;
      view[k].serial = b->serial;
      view[k].told_x = old != NULL ? old->told_x : b->x;
      view[k].told_y = old != NULL ? old->told_y : b->y;
    }

    for (size_t k = 0; k < a->view_count; k++)
      if (!view_has(view, count, a->view[k].id, a->view[k].serial) &&
          push_event(&events, &event_count, &event_capacity, a->id,
                     a->view[k].id, AOI_LEAVE, 0, 0, event_tick) != 0)
        goto nomem;
    for (size_t k = 0; k < count; k++) {
      const entity *b = &m->entities[visible[k]];
      if (!view_has(a->view, a->view_count, b->id, b->serial) &&
          push_event(&events, &event_count, &event_capacity, a->id, b->id,
                     AOI_ENTER, b->x, b->y, event_tick) != 0)
        goto nomem;
    }
    if (!m->move_events)
      continue;
    for (size_t k = 0; k < count; k++) {
      const entity *b = &m->entities[visible[k]];
      view_entry *entry = &view[k];
      /* Floats compare -0 equal to +0: the same position. */
      if (!view_has(a->view, a->view_count, b->id, b->serial) ||
          (b->x == entry->told_x && b->y == entry->told_y) ||
          !move_allowed(m, a, b, tick))
        continue;
      if (push_event(&events, &event_count, &event_capacity, a->id, b->id,
                     AOI_MOVE, b->x, b->y, event_tick) != 0)
        goto nomem;
      entry->told_x = b->x;
      entry->told_y = b->y;
    }
  }

  /* Commit: live records take their new views and become the state as of
     this tick; removed records are dropped. */
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    entity *e = &m->entities[i];
    free(e->view);
    if (!e->live)
      continue;
    e->view = new_views[i];
    e->view_count = new_counts[i];
    e->ticked = 1;
    e->tick_x = e->x;
    e->tick_y = e->y;
    e->tick_layers = e->layers;
    m->entities[kept++] = *e;
  }
  m->entity_count = kept;
  free(m->events);
  m->events = events;
  m->event_count = event_count;
  m->tick = tick;
  free(order);
  free(visible);
  free(keys);
  free(new_views);
  free(new_counts);
  return 0;

nomem:
  if (new_views != NULL)
    for (size_t i = 0; i < n; i++)
      free(new_views[i]);
  free(events);
  free(order);
  free(visible);
  free(keys);
  free(new_views);
  free(new_counts);
  return AOI_ENOMEM;
}

size_t model_events(const model *m, const model_event **events) {
  if (m == NULL) {
    *events = NULL;
    return 0;
  }
  *events = m->events;
  return m->event_count;
}

/* Sorts `found` ids and writes the first `capacity` of them out. */
static void write_ids(uint64_t *found, size_t count, uint64_t *ids,
                      size_t capacity, size_t *out_count) {
  qsort(found, count, sizeof *found, compare_ids);
  for (size_t i = 0; i < count && i < capacity; i++)
    ids[i] = found[i];
  *out_count = count;
}

int model_view(const model *m, uint64_t id, uint64_t *ids, size_t capacity,
               size_t *count) {
  if (m == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  const entity *e = find_live(m, id);
  if (e == NULL)
    return AOI_ENOENT;
  for (size_t i = 0; i < e->view_count && i < capacity; i++)
    ids[i] = e->view[i].id;
  *count = e->view_count;
  return 0;
}

int model_watchers_of(const model *m, uint64_t id, uint64_t *ids,
                      size_t capacity, size_t *count) {
  if (m == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  const entity *b = find_live(m, id);
  if (b == NULL)
    return AOI_ENOENT;
  uint64_t *found = malloc((m->entity_count + 1) * sizeof *found);
  if (found == NULL)
    return AOI_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < m->entity_count; i++) {
    const entity *a = &m->entities[i];
    if (view_has(a->view, a->view_count, b->id, b->serial))
      found[n++] = a->id;
  }
  write_ids(found, n, ids, capacity, count);
  free(found);
  return 0;
}

int model_query_circle(const model *m, float x, float y, float radius,
                       uint32_t layer_mask, uint64_t *ids, size_t capacity,
                       size_t *count) {
  if (m == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (bad_coord(x, y))
    return AOI_ECOORD;
  if (!isfinite(radius) || radius < 0 || radius > m->max_radius)
    return AOI_ERADIUS;
  uint64_t *found = malloc((m->entity_count + 1) * sizeof *found);
  if (found == NULL)
    return AOI_ENOMEM;
  size_t n = 0;
  double r = (double)radius;
  for (size_t i = 0; i < m->entity_count; i++) {
    const entity *b = &m->entities[i];
    if (!b->ticked || !(b->flags & AOI_MARKER) || !(b->tick_layers & layer_mask))
      continue;
    double dx = (double)b->tick_x - (double)x;
    double dy = (double)b->tick_y - (double)y;
    if (dx * dx + dy * dy <= r * r)
      found[n++] = b->id;
  }
  write_ids(found, n, ids, capacity, count);
  free(found);
  return 0;
}
