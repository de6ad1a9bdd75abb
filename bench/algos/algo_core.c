/*
 * algo_core.c: the part the four AOI algorithms share (algo_core.h): the
 * counted memory, the id map, the entity slots and their id order, the
 * spec's reach box, the diff of a view into events, the outboxes, and the
 * watchers an incremental algorithm must look at; and algo.h's class
 * table.
 *
 * The diff writes a watcher's events to its outbox in the order leave,
 * enter, move, each in id order. An old entry whose entity is gone, or
 * whose id now names another entity (its serial differs), is a `leave`; a
 * marker is kept while it passes at radius + hysteresis and enters only at
 * the radius itself; a kept one is a `move` when its position differs, as
 * floats, from its position at the last tick.
 *
 * algo_diff_full takes the candidates in any order: it stamps each old
 * entry's slot with the entry's place (algo_mark, one per slot), so that a
 * candidate finds its old entry in one look, and sorts only the markers
 * that enter (few, but for a new watcher); the new view is then a merge of
 * the kept entries, in order already, and the entering ones. No sort of
 * the whole view, and no scratch copies of the events: their counts are
 * known before they are written. algo_diff_notes looks each note up in the
 * view by binary search, and rewrites the view only when a marker left or
 * entered it.
 */
#include "algo_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- memory, counted ---------------------------------------------------- */

void *algo_resize(algo *a, void *p, size_t old_bytes, size_t new_bytes)
{
  void *q = bench_realloc(p, new_bytes, 1);
  a->bytes = a->bytes - old_bytes + new_bytes;
  if (a->bytes > a->peak_bytes)
    a->peak_bytes = a->bytes;
  return q;
}

void algo_release(algo *a, void *p, size_t bytes)
{
  free(p);
  a->bytes -= bytes;
}

void *algo_grow(algo *a, void *p, size_t *capacity, size_t need, size_t size)
{
  size_t cap = *capacity ? *capacity : 16;
  while (cap < need)
    cap *= 2;
  p = algo_resize(a, p, *capacity * size, cap * size);
  *capacity = cap;
  return p;
}

void *algo_grow32(algo *a, void *p, uint32_t *capacity, uint32_t need,
                  size_t size)
{
  size_t cap = *capacity;
  p = algo_grow(a, p, &cap, need, size);
  if (cap > UINT32_MAX)
    bench_die("a list of more than 2^32 entries");
  *capacity = (uint32_t)cap;
  return p;
}

/* ---- id map ------------------------------------------------------------- */

static size_t map_home(const algo *a, uint64_t id)
{
  uint64_t z = id * UINT64_C(0x9e3779b97f4a7c15);
  z = (z ^ (z >> 29)) * UINT64_C(0xbf58476d1ce4e5b9);
  return (size_t)(z ^ (z >> 32)) & (a->map_capacity - 1);
}

uint32_t algo_find_slot(const algo *a, uint64_t id)
{
  for (size_t i = map_home(a, id);; i = (i + 1) & (a->map_capacity - 1)) {
    if (a->map_slots[i] == ALGO_NO_SLOT)
      return ALGO_NO_SLOT;
    if (a->map_ids[i] == id)
      return a->map_slots[i];
  }
}

static void map_put(algo *a, uint64_t id, uint32_t slot)
{
  size_t i = map_home(a, id);
  while (a->map_slots[i] != ALGO_NO_SLOT)
    i = (i + 1) & (a->map_capacity - 1);
  a->map_ids[i] = id;
  a->map_slots[i] = slot;
  a->map_count++;
}

static void map_rehash(algo *a, size_t capacity)
{
  uint64_t *ids = a->map_ids;
  uint32_t *slots = a->map_slots;
  size_t old = a->map_capacity;
  a->map_ids = algo_resize(a, NULL, 0, capacity * sizeof(*ids));
  a->map_slots = algo_resize(a, NULL, 0, capacity * sizeof(*slots));
  memset(a->map_slots, 0xff, capacity * sizeof(*slots));
  a->map_capacity = capacity;
  a->map_count = 0;
  for (size_t i = 0; i < old; i++)
    if (slots[i] != ALGO_NO_SLOT)
      map_put(a, ids[i], slots[i]);
  algo_release(a, ids, old * sizeof(*ids));
  algo_release(a, slots, old * sizeof(*slots));
}

/* Removes a present id, shifting back the entries after it (no
   tombstones). */
static void map_erase(algo *a, uint64_t id)
{
  size_t mask = a->map_capacity - 1, i = map_home(a, id);
  while (a->map_ids[i] != id || a->map_slots[i] == ALGO_NO_SLOT)
    i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask; a->map_slots[j] != ALGO_NO_SLOT;
       j = (j + 1) & mask) {
    size_t home = map_home(a, a->map_ids[j]);
    /* j's entry may fill the hole at i when its home is not in (i, j]. */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      a->map_ids[i] = a->map_ids[j];
      a->map_slots[i] = a->map_slots[j];
      i = j;
    }
  }
  a->map_slots[i] = ALGO_NO_SLOT;
  a->map_count--;
}

/* ---- lifecycle and entities --------------------------------------------- */

void *algo_new(const algo_class *cls, const aoi_config *config, size_t size)
{
  algo *a = bench_calloc(1, size);
  a->cls = cls;
  a->bytes = a->peak_bytes = size;
  a->hysteresis = config->hysteresis;
  a->move_events = config->move_events != 0;
  a->shape = config->shape;
  a->cell_size = config->cell_size;
  a->next_serial = 1;
  map_rehash(a, 1024);
  return a;
}

void algo_delete(algo *a)
{
  for (size_t s = 0; s < a->entity_count; s++)
    free(a->entities[s].view);
  free(a->entities);
  free(a->free_slots);
  free(a->moved);
  free(a->map_ids);
  free(a->map_slots);
  free(a->order);
  free(a->joined);
  free(a->candidates);
  free(a->marks);
  free(a->kept);
  free(a->entering);
  free(a->fresh);
  free(a->arrivals);
  free(a->leaves);
  free(a->enters);
  free(a->moves);
  free(a->events);
  free(a->outboxes);
  free(a->sorted_outboxes);
  free(a->pending);
  free(a);
}

uint32_t algo_new_entity(algo *a, uint64_t id, float x, float y, float radius,
                         unsigned flags, uint32_t layers, uint32_t interest)
{
  uint32_t slot;
  if (a->free_count > 0) {
    slot = a->free_slots[--a->free_count];
  } else {
    ALGO_RESERVE(a, a->entities, a->entity_capacity, a->entity_count + 1);
    slot = (uint32_t)a->entity_count++;
    memset(&a->entities[slot], 0, sizeof(algo_entity));
  }
  algo_entity *e = &a->entities[slot];
  e->id = id;
  e->x = e->tick_x = x;
  e->y = e->tick_y = y;
  e->radius = radius;
  e->serial = a->next_serial++;
  e->flags = flags;
  e->layers = layers;
  e->interest = interest;
  e->view_count = 0; /* a new watcher starts with an empty view */
  if (2 * (a->map_count + 1) > a->map_capacity)
    map_rehash(a, 2 * a->map_capacity);
  map_put(a, id, slot);
  ALGO_RESERVE(a, a->joined, a->joined_capacity, a->joined_count + 1);
  a->joined[a->joined_count++] = (algo_member){id, slot, e->serial};
  return slot;
}

void algo_set_position(algo *a, uint32_t slot, float x, float y)
{
  algo_entity *e = &a->entities[slot];
  e->x = x;
  e->y = y;
  if (e->moved)
    return;
  e->moved = 1;
  ALGO_RESERVE(a, a->moved, a->moved_capacity, a->moved_count + 1);
  a->moved[a->moved_count++] = slot;
}

void algo_free_entity(algo *a, uint32_t slot)
{
  algo_entity *e = &a->entities[slot];
  map_erase(a, e->id);
  e->serial = 0; /* its watchers' entries no longer match: `leave` */
  e->flags = 0;
  e->view_count = 0;
  ALGO_RESERVE(a, a->free_slots, a->free_capacity, a->free_count + 1);
  a->free_slots[a->free_count++] = slot;
  a->left = 1;
}

int algo_plain_add(algo *a, uint64_t id, float x, float y, float radius,
                   unsigned flags, uint32_t layers, uint32_t interest)
{
  if (algo_find_slot(a, id) != ALGO_NO_SLOT)
    return AOI_EEXIST;
  algo_new_entity(a, id, x, y, radius, flags, layers, interest);
  return 0;
}

int algo_plain_move(algo *a, uint64_t id, float x, float y)
{
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  algo_set_position(a, slot, x, y);
  return 0;
}

int algo_plain_remove(algo *a, uint64_t id)
{
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  algo_free_entity(a, slot);
  return 0;
}

/* ---- geometry ----------------------------------------------------------- */

void algo_grid_layout(const aoi_config *config, double reach, algo_grid *g)
{
  algo_box b;
  algo_bounds(config, &b);
  g->min_x = b.x0;
  g->min_y = b.y0;
  double extent = b.x1 - b.x0 > b.y1 - b.y0 ? b.x1 - b.x0 : b.y1 - b.y0;
  g->cell = reach * (1 + 1.0 / 65536);
  if (g->cell < extent / (ALGO_GRID_MAX - 1))
    g->cell = extent / (ALGO_GRID_MAX - 1);
  g->width = (int)floor((b.x1 - b.x0) / g->cell) + 1;
  g->height = (int)floor((b.y1 - b.y0) / g->cell) + 1;
  if (g->width > ALGO_GRID_MAX)
    g->width = ALGO_GRID_MAX;
  if (g->height > ALGO_GRID_MAX)
    g->height = ALGO_GRID_MAX;
}

void algo_bounds(const aoi_config *config, algo_box *box)
{
  box->x0 = config->min_x;
  box->x1 = config->max_x;
  box->y0 = config->min_y;
  box->y1 = config->max_y;
  if (!(box->x0 < box->x1)) {
    box->x0 = 0;
    box->x1 = 1000;
  }
  if (!(box->y0 < box->y1)) {
    box->y0 = 0;
    box->y1 = 1000;
  }
}

/* Moves a bound outward by far more than any rounding of the test. */
static double widen(double v, double scale, double sign)
{
  return v + sign * (fabs(v) + scale) * 1e-9;
}

void algo_reach_box(const algo *a, float x, float y, double reach,
                    algo_box *box)
{
  double ax = x, ay = y, scale = reach;
  if (a->shape == AOI_SHAPE_CELLS) {
    /* floor(b / C) within k of floor(a / C): b in [(fa - k) C,
       (fa + k + 1) C). */
    double c = a->cell_size, k = ceil(reach / c);
    double fx = floor(ax / c), fy = floor(ay / c);
    box->x0 = (fx - k) * c;
    box->x1 = (fx + k + 1) * c;
    box->y0 = (fy - k) * c;
    box->y1 = (fy + k + 1) * c;
    scale = (k + 1) * c;
  } else {
    box->x0 = ax - reach;
    box->x1 = ax + reach;
    box->y0 = ay - reach;
    box->y1 = ay + reach;
  }
  box->x0 = widen(box->x0, scale, -1);
  box->y0 = widen(box->y0, scale, -1);
  box->x1 = widen(box->x1, scale, 1);
  box->y1 = widen(box->y1, scale, 1);
}

/* ---- sorting ------------------------------------------------------------ */

static void swap_notes(algo_note *c, size_t i, size_t j)
{
  algo_note t = c[i];
  c[i] = c[j];
  c[j] = t;
}

/* Quicksort by id, insertion sort for the short runs. */
void algo_sort_notes(algo_note *c, size_t n)
{
  while (n > 16) {
    /* Median of three to the front, then Hoare partition. */
    size_t mid = n / 2;
    if (c[mid].id < c[0].id)
      swap_notes(c, 0, mid);
    if (c[n - 1].id < c[0].id)
      swap_notes(c, 0, n - 1);
    if (c[n - 1].id < c[mid].id)
      swap_notes(c, mid, n - 1);
    uint64_t pivot = c[mid].id;
    size_t i = 0, j = n - 1;
    for (;;) {
      while (c[i].id < pivot)
        i++;
      while (c[j].id > pivot)
        j--;
      if (i >= j)
        break;
      swap_notes(c, i, j);
      i++;
      j--;
    }
    /* [0, j] <= pivot <= [j + 1, n): recurse on the smaller side. */
    size_t left = j + 1;
    if (left < n - left) {
      algo_sort_notes(c, left);
      c += left;
      n -= left;
    } else {
      algo_sort_notes(c + left, n - left);
      n = left;
    }
  }
  for (size_t i = 1; i < n; i++) {
    algo_note v = c[i];
    size_t j = i;
    for (; j > 0 && c[j - 1].id > v.id; j--)
      c[j] = c[j - 1];
    c[j] = v;
  }
}

static int compare_members(const void *pa, const void *pb)
{
  uint64_t a = ((const algo_member *)pa)->id;
  uint64_t b = ((const algo_member *)pb)->id;
  return (a > b) - (a < b);
}

/* ---- the id order ------------------------------------------------------- */

/* Drops the removed from a->order and merges in the added, by id (from
   the back, in place). */
static void update_order(algo *a)
{
  if (a->joined_count == 0 && !a->left)
    return;
  size_t kept = 0, joined = 0;
  for (size_t k = 0; k < a->order_count; k++)
    if (a->entities[a->order[k].slot].serial == a->order[k].serial)
      a->order[kept++] = a->order[k];
  for (size_t k = 0; k < a->joined_count; k++)
    if (a->entities[a->joined[k].slot].serial == a->joined[k].serial)
      a->joined[joined++] = a->joined[k];
  if (joined > 1)
    qsort(a->joined, joined, sizeof(*a->joined), compare_members);
  ALGO_RESERVE(a, a->order, a->order_capacity, kept + joined);
  size_t i = kept, j = joined, n = kept + joined;
  while (j > 0)
    if (i > 0 && a->order[i - 1].id > a->joined[j - 1].id)
      a->order[--n] = a->order[--i];
    else
      a->order[--n] = a->joined[--j];
  a->order_count = kept + joined;
  a->joined_count = 0;
  a->left = 0;
}

/* ---- the tick ----------------------------------------------------------- */

void algo_begin_tick(algo *a)
{
  a->tick++;
  a->event_count = 0;
  a->outbox_count = 0;
  update_order(a);
  size_t old = a->mark_capacity;
  if (a->entity_count > old) { /* new marks must hold no stamp */
    a->marks = algo_grow(a, a->marks, &a->mark_capacity, a->entity_count,
                         sizeof(*a->marks));
    memset(a->marks + old, 0, (a->mark_capacity - old) * sizeof(*a->marks));
  }
}

/* A stamp no mark holds yet. */
static uint32_t next_stamp(algo *a)
{
  if (++a->stamp == 0) { /* wrapped: clear every mark */
    if (a->mark_capacity > 0)
      memset(a->marks, 0, a->mark_capacity * sizeof(*a->marks));
    a->stamp = 1;
  }
  return a->stamp;
}

/* Room for `total` events, total > 0, in a new outbox of watcher w. */
static aoi_event *open_outbox(algo *a, const algo_entity *w, size_t total)
{
  ALGO_RESERVE(a, a->outboxes, a->outbox_capacity, a->outbox_count + 1);
  algo_outbox *o = &a->outboxes[a->outbox_count++];
  o->watcher = w->id;
  o->slot = (uint32_t)(w - a->entities);
  o->start = a->event_count;
  o->count = total;
  ALGO_RESERVE(a, a->events, a->event_capacity, a->event_count + total);
  aoi_event *out = a->events + a->event_count;
  a->event_count += total;
  return out;
}

static void put_event(aoi_event *e, uint64_t id, aoi_event_kind kind,
                      float x, float y, uint32_t tick)
{
  e->id = id;
  e->x = x;
  e->y = y;
  e->kind = kind;
  e->tick = tick;
}

/* memcpy for arrays that may be empty, and then NULL. */
static void copy_n(void *to, const void *from, size_t bytes)
{
  if (bytes != 0)
    memcpy(to, from, bytes);
}

/* The view built in a->fresh into place (copied: each view keeps a
   capacity that fits it). */
static void set_view(algo *a, algo_entity *w, uint32_t count)
{
  ALGO_RESERVE32(a, w->view, w->view_capacity, count);
  copy_n(w->view, a->fresh, count * sizeof(*w->view));
  w->view_count = count;
}

void algo_diff_full(algo *a, uint32_t slot, size_t n)
{
  algo_entity *w = &a->entities[slot];
  const algo_sighting *c = a->candidates;
  const algo_view_entry *old = w->view;
  uint32_t old_count = w->view_count;
  double radius = (double)w->radius;
  int sticky = algo_keep_reach(a, w) != radius;
  uint32_t stamp = next_stamp(a);
  ALGO_RESERVE(a, a->kept, a->kept_capacity, old_count);
  for (uint32_t i = 0; i < old_count; i++) {
    a->marks[old[i].slot] = (algo_mark){stamp, i};
    a->kept[i] = ALGO_NO_SLOT;
  }
  /* Each candidate is kept (its old entry's serial is its own) or
     enters; the old entries no candidate kept leave. */
  ALGO_RESERVE(a, a->entering, a->entering_capacity, n);
  size_t kept = 0, enters = 0, moves = 0;
  for (size_t j = 0; j < n; j++) {
    const algo_mark *m = &a->marks[c[j].slot];
    if (m->stamp == stamp && old[m->index].serial == c[j].serial) {
      a->kept[m->index] = (uint32_t)j;
      kept++;
      moves += c[j].moved;
    } else if (!sticky || algo_within(a, w->x, w->y, c[j].x, c[j].y, radius)) {
      a->entering[enters++] = (algo_note){c[j].id, (uint32_t)j};
    }
  }
  if (enters > 1)
    algo_sort_notes(a->entering, enters);
  size_t leaves = old_count - kept;
  size_t total = leaves + enters + (a->move_events ? moves : 0);
  aoi_event *out = total > 0 ? open_outbox(a, w, total) : NULL;
  size_t l = 0, e = leaves, mv = leaves + enters; /* where each kind goes */
  ALGO_RESERVE32(a, a->fresh, a->fresh_capacity, (uint32_t)(kept + enters));
  algo_view_entry *fresh = a->fresh;
  uint32_t count = 0;
  size_t i = 0, k = 0;
  while (i < old_count || k < enters) {
    if (k == enters || (i < old_count && old[i].id <= a->entering[k].id)) {
      uint32_t j = a->kept[i];
      if (j == ALGO_NO_SLOT) {
        put_event(&out[l++], old[i].id, AOI_LEAVE, 0, 0, a->tick);
      } else {
        if (a->move_events && c[j].moved)
          put_event(&out[mv++], c[j].id, AOI_MOVE, c[j].x, c[j].y, a->tick);
        fresh[count++] = (algo_view_entry){c[j].id, c[j].serial, c[j].slot};
      }
      i++;
    } else {
      const algo_sighting *s = &c[a->entering[k++].slot];
      put_event(&out[e++], s->id, AOI_ENTER, s->x, s->y, a->tick);
      fresh[count++] = (algo_view_entry){s->id, s->serial, s->slot};
    }
  }
  set_view(a, w, count);
}

/* The live marker a note names now, other than the watcher itself, or
   ALGO_NO_SLOT. */
static uint32_t resolve(const algo *a, const algo_note *note,
                        uint32_t watcher)
{
  uint32_t m = note->slot;
  const algo_entity *e = &a->entities[m];
  if (e->serial == 0 || e->id != note->id)
    m = algo_find_slot(a, note->id);
  if (m == ALGO_NO_SLOT || m == watcher ||
      !algo_is_live(&a->entities[m], AOI_MARKER))
    return ALGO_NO_SLOT;
  return m;
}

/* This watcher's events so far, by kind (algo_diff_notes). */
typedef struct event_counts {
  size_t leaves, enters, moves;
} event_counts;

static void push_event(algo *a, aoi_event **list, size_t *capacity,
                       size_t *count, uint64_t id, aoi_event_kind kind,
                       float x, float y)
{
  ALGO_RESERVE(a, *list, *capacity, *count + 1);
  put_event(&(*list)[(*count)++], id, kind, x, y, a->tick);
}

static void push_leave(algo *a, event_counts *n, uint64_t id)
{
  push_event(a, &a->leaves, &a->leave_capacity, &n->leaves, id, AOI_LEAVE, 0,
             0);
}

/* The place of `id` in a view, or `count` when it holds none. */
static uint32_t find_entry(const algo_view_entry *view, uint32_t count,
                           uint64_t id)
{
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (view[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && view[lo].id == id ? lo : count;
}

void algo_diff_notes(algo *a, uint32_t slot, const algo_note *notes,
                     size_t n)
{
  algo_entity *w = &a->entities[slot];
  double reach = (double)w->radius, kept_reach = algo_keep_reach(a, w);
  const algo_view_entry *old = w->view;
  uint32_t old_count = w->view_count;
  /* Each note is looked up in the view; the view is rebuilt only when a
     marker left or entered it (most notes are moves inside). The notes
     are in id order, and so each kind of event, the old places that
     leave (a->kept) and the new entries (a->arrivals). */
  ALGO_RESERVE(a, a->kept, a->kept_capacity, n);
  ALGO_RESERVE(a, a->arrivals, a->arrival_capacity, n);
  event_counts counts = {0, 0, 0};
  size_t drops = 0, arrivals = 0;
  for (size_t j = 0; j < n;) {
    const algo_note *note = &notes[j++];
    while (j < n && notes[j].id == note->id)
      j++;
    uint32_t m = resolve(a, note, slot);
    const algo_entity *e = m == ALGO_NO_SLOT ? NULL : &a->entities[m];
    int match = e != NULL && (w->interest & e->layers) != 0;
    uint32_t i = find_entry(old, old_count, note->id);
    if (i < old_count) {
      if (e != NULL && old[i].serial == e->serial &&
          match && algo_within(a, w->x, w->y, e->x, e->y, kept_reach)) {
        if (a->move_events && (e->x != e->tick_x || e->y != e->tick_y))
          push_event(a, &a->moves, &a->move_capacity, &counts.moves, e->id,
                     AOI_MOVE, e->x, e->y);
        continue;
      }
      push_leave(a, &counts, old[i].id); /* out of reach, gone, respawned */
      a->kept[drops++] = i;
      if (e != NULL && old[i].serial == e->serial)
        continue; /* held, so it cannot enter */
    }
    if (match && algo_within(a, w->x, w->y, e->x, e->y, reach)) {
      push_event(a, &a->enters, &a->enter_capacity, &counts.enters, e->id,
                 AOI_ENTER, e->x, e->y);
      a->arrivals[arrivals++] = (algo_view_entry){e->id, e->serial, m};
    }
  }
  if (drops + arrivals > 0) {
    ALGO_RESERVE32(a, a->fresh, a->fresh_capacity,
                   (uint32_t)(old_count - drops + arrivals));
    uint32_t count = 0;
    size_t i = 0, d = 0, k = 0;
    while (i < old_count || k < arrivals) {
      if (i < old_count && d < drops && a->kept[d] == i) {
        i++, d++;
      } else if (k == arrivals ||
                 (i < old_count && old[i].id < a->arrivals[k].id)) {
        a->fresh[count++] = old[i++];
      } else {
        a->fresh[count++] = a->arrivals[k++];
      }
    }
    set_view(a, w, count);
  }
  size_t total = counts.leaves + counts.enters + counts.moves;
  if (total == 0)
    return;
  aoi_event *out = open_outbox(a, w, total);
  copy_n(out, a->leaves, counts.leaves * sizeof(*out));
  copy_n(out + counts.leaves, a->enters, counts.enters * sizeof(*out));
  copy_n(out + counts.leaves + counts.enters, a->moves,
         counts.moves * sizeof(*out));
}

/* Puts the outboxes in watcher id order, when they are not: marks each
   watcher's outbox, then walks the id order. */
static void order_outboxes(algo *a)
{
  int sorted = 1;
  for (size_t k = 1; k < a->outbox_count && sorted; k++)
    sorted = a->outboxes[k - 1].watcher < a->outboxes[k].watcher;
  if (sorted)
    return;
  uint32_t stamp = next_stamp(a);
  for (size_t k = 0; k < a->outbox_count; k++)
    a->marks[a->outboxes[k].slot] = (algo_mark){stamp, (uint32_t)k};
  ALGO_RESERVE(a, a->sorted_outboxes, a->sorted_outbox_capacity,
               a->outbox_count);
  size_t n = 0;
  for (size_t k = 0; k < a->order_count; k++) {
    const algo_mark *m = &a->marks[a->order[k].slot];
    if (m->stamp == stamp)
      a->sorted_outboxes[n++] = a->outboxes[m->index];
  }
  algo_outbox *outboxes = a->outboxes;
  size_t capacity = a->outbox_capacity;
  a->outboxes = a->sorted_outboxes;
  a->outbox_capacity = a->sorted_outbox_capacity;
  a->sorted_outboxes = outboxes;
  a->sorted_outbox_capacity = capacity;
}

void algo_end_tick(algo *a)
{
  order_outboxes(a);
  for (size_t k = 0; k < a->moved_count; k++) {
    algo_entity *e = &a->entities[a->moved[k]];
    e->tick_x = e->x;
    e->tick_y = e->y;
    e->moved = 0;
  }
  a->moved_count = 0;
  ALGO_RESERVE(a, a->pending, a->pending_capacity, a->outbox_count);
  for (size_t k = 0; k < a->outbox_count; k++)
    a->pending[k] = a->outboxes[k].watcher;
}

/* ---- watchers to look at ------------------------------------------------ */

void algo_dirty_reserve(algo *a, algo_dirty *d)
{
  size_t old = d->slot_capacity, cap = a->entity_capacity;
  if (cap <= old)
    return;
  d->state = algo_resize(a, d->state, old, cap);
  memset(d->state + old, 0, cap - old);
  d->starts = algo_resize(a, d->starts, old * sizeof(*d->starts),
                          cap * sizeof(*d->starts));
  d->slot_capacity = cap;
}

void algo_dirty_free(algo_dirty *d)
{
  free(d->state);
  free(d->starts);
  free(d->notes);
  free(d->sorted);
}

void algo_dirty_note(algo *a, algo_dirty *d, uint32_t w, uint64_t id,
                     uint32_t slot)
{
  if (d->state[w] & DIRTY_WHOLE)
    return;
  d->state[w] |= DIRTY_NOTED;
  ALGO_RESERVE(a, d->notes, d->note_capacity, d->note_count + 1);
  d->notes[d->note_count++] = (algo_noted){id, slot, w};
}

void algo_dirty_whole(algo_dirty *d, uint32_t w)
{
  d->state[w] |= DIRTY_WHOLE;
}

void algo_dirty_drop(algo_dirty *d, uint32_t w)
{
  d->state[w] = 0;
}

/* Sorts the notes by watcher into d->sorted (stable), and d->starts[w] to
   where watcher w's begin. */
static void sort_by_watcher(algo *a, algo_dirty *d)
{
  size_t slots = a->entity_count;
  memset(d->starts, 0, slots * sizeof(*d->starts));
  for (size_t k = 0; k < d->note_count; k++)
    d->starts[d->notes[k].watcher]++;
  uint32_t end = 0;
  for (size_t w = 0; w < slots; w++) /* starts[w]: where w's notes end */
    d->starts[w] = end += d->starts[w];
  ALGO_RESERVE(a, d->sorted, d->sorted_capacity, d->note_count);
  for (size_t k = d->note_count; k-- > 0;) { /* back to front: stable */
    const algo_noted *n = &d->notes[k];
    d->sorted[--d->starts[n->watcher]] = (algo_note){n->id, n->slot};
  }
}

void algo_dirty_run(algo *a, algo_dirty *d, algo_gather_fn gather)
{
  if (d->note_count > 0)
    sort_by_watcher(a, d);
  size_t slots = a->entity_count;
  for (uint32_t w = 0; w < slots; w++) {
    if (d->state[w] == 0)
      continue;
    if (algo_is_live(&a->entities[w], AOI_WATCHER)) {
      if (d->state[w] & DIRTY_WHOLE) {
        algo_diff_full(a, w, gather(a, w));
      } else {
        uint32_t begin = d->starts[w];
        uint32_t end = w + 1 < slots ? d->starts[w + 1] : d->note_count;
        algo_sort_notes(d->sorted + begin, end - begin);
        algo_diff_notes(a, w, d->sorted + begin, end - begin);
      }
    }
    d->state[w] = 0;
  }
  d->note_count = 0;
}

/* ---- algo.h ------------------------------------------------------------- */

const algo_class *const algo_classes[ALGO_COUNT] = {
    &algo_brute, &algo_ninegrid, &algo_tower, &algo_xlist, &algo_verlet};

const algo_class *algo_find(const char *name)
{
  for (size_t i = 0; i < ALGO_COUNT; i++)
    if (strcmp(algo_classes[i]->name, name) == 0)
      return algo_classes[i];
  return NULL;
}

algo *algo_create(const algo_class *cls, const algo_params *params)
{
  return cls->create(params);
}

void algo_destroy(algo *a)
{
  if (a != NULL)
    a->cls->destroy(a);
}

const algo_class *algo_class_of(const algo *a)
{
  return a->cls;
}

int algo_add(algo *a, uint64_t id, float x, float y, float radius,
             unsigned flags, uint32_t layers, uint32_t interest)
{
  return a->cls->add(a, id, x, y, radius, flags, layers, interest);
}

int algo_move(algo *a, uint64_t id, float x, float y)
{
  return a->cls->move(a, id, x, y);
}

int algo_remove(algo *a, uint64_t id)
{
  return a->cls->remove(a, id);
}

void algo_tick(algo *a)
{
  a->cls->tick(a);
}

size_t algo_pending(const algo *a, const uint64_t **ids)
{
  *ids = a->pending;
  return a->outbox_count;
}

void algo_events(const algo *a, size_t i, const aoi_event **events,
                 size_t *count)
{
  *events = a->events + a->outboxes[i].start;
  *count = a->outboxes[i].count;
}

size_t algo_bytes(const algo *a)
{
  return a->bytes;
}

size_t algo_peak_bytes(const algo *a)
{
  return a->peak_bytes;
}
