/*
 * algo_core.h: what the four algorithms of algo.h share, for their files
 * only (aoi-bench sees algo.h). Every algorithm's state starts with a
 * `struct algo`, which holds:
 *  - the entities, one slot each (a free list reuses slots; an id map finds
 *    them), with a serial new at each add, so that a view entry whose
 *    entity was removed, or removed and added again under the same id (a
 *    respawn), is told from the live one;
 *  - the live entities in id order (algo_begin_tick brings the list up to
 *    date when some were added or removed);
 *  - each watcher's view, sorted by id, and the two ways of diffing it
 *    into events: against the markers a gather found in reach, in any
 *    order (algo_diff_full), or against a list of markers that changed
 *    near it (algo_diff_notes);
 *  - this tick's outboxes, ordered by watcher id at algo_end_tick (a walk
 *    of the id order when the watchers were not computed in it);
 *  - the bytes held, counted through algo_resize.
 * The incremental algorithms (tower, xlist) add an algo_dirty: the
 * watchers to look at this tick, each either whole (it moved or is new) or
 * only for the markers noted to it.
 *
 * Positions "as of the last tick" (what a `move` compares with) are kept
 * per entity and brought up to date at algo_end_tick for the entities that
 * moved since, so a tick costs nothing for those that stood still.
 */
#ifndef AOI_BENCH_ALGO_CORE_H
#define AOI_BENCH_ALGO_CORE_H

#include "algo.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ALGO_NO_SLOT UINT32_MAX

typedef struct algo_view_entry {
  uint64_t id;
  uint32_t serial;
  uint32_t slot;
} algo_view_entry;

/* A marker a gather found near a watcher: all the diff reads of it. */
typedef struct algo_sighting {
  uint64_t id;
  float x, y;
  uint32_t slot;
  uint32_t serial;
  uint32_t moved; /* its position differs from the last tick's */
} algo_sighting;

/* A marker noted to a watcher: its id, and its slot when noted. */
typedef struct algo_note {
  uint64_t id;
  uint32_t slot;
} algo_note;

/* A live entity in the id-ordered list. */
typedef struct algo_member {
  uint64_t id;
  uint32_t slot;
  uint32_t serial;
} algo_member;

typedef struct algo_entity {
  uint64_t id;
  float x, y;
  float tick_x, tick_y; /* position as of the last tick */
  float radius;
  uint32_t serial; /* 0: a free slot */
  uint32_t flags, layers, interest;
  uint32_t moved; /* in the moved list */
  uint32_t view_count, view_capacity;
  algo_view_entry *view; /* watchers: sorted by id */
} algo_entity;

/* Per slot, a note that holds only while `stamp` is the current pass's:
   in a diff, the place of this slot's marker in the old view; when the
   outboxes are put in order, the place of this slot's outbox. */
typedef struct algo_mark {
  uint32_t stamp;
  uint32_t index;
} algo_mark;

typedef struct algo_outbox {
  uint64_t watcher;
  uint32_t slot;
  size_t start, count;
} algo_outbox;

/* An axis-aligned box, bounds included. */
typedef struct algo_box {
  double x0, y0, x1, y1;
} algo_box;

struct algo {
  const algo_class *cls;
  double hysteresis;
  int move_events;
  aoi_shape shape;
  double cell_size; /* the spec's C, for AOI_SHAPE_CELLS */

  algo_entity *entities;
  size_t entity_count, entity_capacity; /* slots in use or free */
  uint32_t *free_slots;
  size_t free_count, free_capacity;
  uint32_t next_serial;
  uint32_t *moved;
  size_t moved_count, moved_capacity;

  uint64_t *map_ids; /* open addressing, linear probing */
  uint32_t *map_slots; /* ALGO_NO_SLOT where free */
  size_t map_capacity, map_count;

  algo_member *order; /* the live entities by id, as of algo_begin_tick */
  size_t order_count, order_capacity;
  algo_member *joined; /* added since (some may be gone again) */
  size_t joined_count, joined_capacity;
  int left; /* an entity was removed since */

  algo_sighting *candidates; /* what a gather fills, in any order */
  size_t candidate_capacity;
  algo_mark *marks; /* per slot */
  size_t mark_capacity;
  uint32_t stamp; /* the marks' current pass */
  uint32_t *kept; /* algo_diff_full: per old view entry, its candidate or
                     ALGO_NO_SLOT; algo_diff_notes: the entries that go */
  size_t kept_capacity;
  algo_note *entering; /* candidates that enter: id, candidate index */
  size_t entering_capacity;
  algo_view_entry *fresh; /* the view being built */
  uint32_t fresh_capacity;
  algo_view_entry *arrivals; /* algo_diff_notes's entering markers */
  size_t arrival_capacity;
  aoi_event *leaves, *enters, *moves; /* algo_diff_notes's */
  size_t leave_capacity, enter_capacity, move_capacity;

  aoi_event *events; /* this tick's, outbox after outbox */
  size_t event_count, event_capacity;
  algo_outbox *outboxes, *sorted_outboxes;
  size_t outbox_count, outbox_capacity, sorted_outbox_capacity;
  uint64_t *pending;
  size_t pending_capacity;
  uint32_t tick;

  size_t bytes, peak_bytes;
};

/* ---- memory, counted ---------------------------------------------------- */

/* realloc from old_bytes to new_bytes, counted; exits when out of memory. */
void *algo_resize(algo *a, void *p, size_t old_bytes, size_t new_bytes);
void algo_release(algo *a, void *p, size_t bytes);
/* Grows an array of `size`-byte elements to hold `need`, doubling. */
void *algo_grow(algo *a, void *p, size_t *capacity, size_t need, size_t size);

#define ALGO_RESERVE(a, array, capacity, need)                               \
  do {                                                                       \
    if ((need) > (capacity))                                                 \
      (array) = algo_grow((a), (array), &(capacity), (need),                 \
                          sizeof(*(array)));                                 \
  } while (0)

/* The same for arrays with 32-bit counts (per-entity lists). */
void *algo_grow32(algo *a, void *p, uint32_t *capacity, uint32_t need,
                  size_t size);

#define ALGO_RESERVE32(a, array, capacity, need)                             \
  do {                                                                       \
    if ((need) > (capacity))                                                 \
      (array) = algo_grow32((a), (array), &(capacity), (need),               \
                            sizeof(*(array)));                               \
  } while (0)

/* ---- lifecycle and entities --------------------------------------------- */

/* A new algorithm of `size` bytes (its state, starting with a struct
   algo), zeroed but for the common part, set up from the config. */
void *algo_new(const algo_class *cls, const aoi_config *config, size_t size);
/* Frees the common part and `a` itself (the algorithm frees its own
   arrays first). */
void algo_delete(algo *a);

/* The slot of a live id, or ALGO_NO_SLOT. */
uint32_t algo_find_slot(const algo *a, uint64_t id);
/* A new entity (the id must not be live); returns its slot. Its view is
   empty. */
uint32_t algo_new_entity(algo *a, uint64_t id, float x, float y, float radius,
                         unsigned flags, uint32_t layers, uint32_t interest);
/* Sets a live entity's position. */
void algo_set_position(algo *a, uint32_t slot, float x, float y);
/* Whether (x, y) is where entity e stands, to the bit (so -0 and +0
   differ here: a move between them is not skipped). */
static inline int algo_same_place(const algo_entity *e, float x, float y)
{
  return memcmp(&e->x, &x, sizeof(x)) == 0 && memcmp(&e->y, &y, sizeof(y)) == 0;
}
/* Frees a live entity's slot; its watchers' entries no longer match. */
void algo_free_entity(algo *a, uint32_t slot);

/* Operations for an algorithm that keeps nothing between ticks but the
   views (brute, ninegrid): they only record. */
int algo_plain_add(algo *a, uint64_t id, float x, float y, float radius,
                   unsigned flags, uint32_t layers, uint32_t interest);
int algo_plain_move(algo *a, uint64_t id, float x, float y);
int algo_plain_remove(algo *a, uint64_t id);

static inline int algo_is_live(const algo_entity *e, unsigned role)
{
  return e->serial != 0 && (e->flags & role) != 0;
}

/* Entity `slot` as a watcher would see it now. */
static inline algo_sighting algo_sight(const algo *a, uint32_t slot)
{
  const algo_entity *e = &a->entities[slot];
  algo_sighting s = {e->id, e->x, e->y, slot, e->serial,
                     e->x != e->tick_x || e->y != e->tick_y};
  return s;
}

/* ---- geometry ----------------------------------------------------------- */

/* The spec's visibility test of B at (bx, by) from A at (ax, ay), in
   double on the stored floats, the same expression for every shape as
   docs/trace-format.md writes it. */
static inline int algo_within(const algo *a, float ax, float ay, float bx,
                              float by, double reach)
{
  double dx = (double)ax - (double)bx, dy = (double)ay - (double)by;
  switch (a->shape) {
  case AOI_SHAPE_SQUARE:
    return fabs(dx) <= reach && fabs(dy) <= reach;
  case AOI_SHAPE_CELLS: {
    double c = a->cell_size, k = ceil(reach / c);
    double dcx = floor((double)ax / c) - floor((double)bx / c);
    double dcy = floor((double)ay / c) - floor((double)by / c);
    return fabs(dcx) <= k && fabs(dcy) <= k;
  }
  case AOI_SHAPE_CIRCLE:
  default:
    return dx * dx + dy * dy <= reach * reach;
  }
}
/* The config's bounds, or [0, 1000]^2 on an axis where they are empty
   (the engine's own default). */
void algo_bounds(const aoi_config *config, algo_box *box);
/* The most cells a side of an algorithm's grid. */
#define ALGO_GRID_MAX 2048

/* A coordinate in cells clamped into [0, limit): clamping is monotonic, so
   a neighbour within n cells stays within n cells. */
static inline int algo_clamp_cell(double v, int limit)
{
  return v < 0 ? 0 : v > limit - 1 ? limit - 1 : (int)v;
}

/* A uniform grid over the config's bounds (algo_bounds): cell (i, j) holds
   floor((p - min) / cell), clamped (algo_clamp_cell). */
typedef struct algo_grid {
  double cell, min_x, min_y;
  int width, height;
} algo_grid;
/* Lays a grid out with cells a hair wider than `reach`, so that what lies
   within reach of a point lies within one cell of its cell; wider where
   the bounds would take more than ALGO_GRID_MAX cells a side. */
void algo_grid_layout(const aoi_config *config, double reach, algo_grid *g);
/* The column of x and the row of y in grid g. */
static inline int algo_grid_col(const algo_grid *g, float x)
{
  return algo_clamp_cell(floor(((double)x - g->min_x) / g->cell), g->width);
}
static inline int algo_grid_row(const algo_grid *g, float y)
{
  return algo_clamp_cell(floor(((double)y - g->min_y) / g->cell), g->height);
}

/* A box holding every point that passes algo_within from (x, y) at this
   reach, a hair wider (so rounding cannot leave one out). */
void algo_reach_box(const algo *a, float x, float y, double reach,
                    algo_box *box);
/* The reach at which a view keeps what it holds: radius + hysteresis. */
static inline double algo_keep_reach(const algo *a, const algo_entity *w)
{
  return (double)w->radius + a->hysteresis;
}

/* Sorts notes by id (equal ids end up next to each other). */
void algo_sort_notes(algo_note *notes, size_t n);

/* ---- the tick ----------------------------------------------------------- */

/* Starts a tick: brings the id-ordered list of live entities up to date. */
void algo_begin_tick(algo *a);
/* Watcher `slot`'s new view and events from a->candidates[0, n): every
   marker, other than itself, that passes the layer test and algo_within
   at the keep reach, in any order, each once. */
void algo_diff_full(algo *a, uint32_t slot, size_t n);
/* Watcher `slot`'s new view and events when only the markers in `notes`
   may have changed for it (moved, added, removed); notes sorted by id,
   duplicates allowed. Each note's slot is where its id lived when noted. */
void algo_diff_notes(algo *a, uint32_t slot, const algo_note *notes,
                     size_t n);
/* Orders the outboxes by watcher id, lists them, and records the position
   of every entity that moved as of this tick. */
void algo_end_tick(algo *a);

/* ---- watchers to look at (incremental algorithms) ----------------------- */

/* A note as it is taken: watcher `watcher` must look at marker (id,
   slot). */
typedef struct algo_noted {
  uint64_t id;
  uint32_t slot;
  uint32_t watcher;
} algo_noted;

/* The notes are taken in one array, whatever the watcher, and sorted by
   watcher (a counting sort) when the tick runs them: a note costs an
   append, not a write to a list of the watcher's own. */
typedef struct algo_dirty {
  uint8_t *state; /* per slot: DIRTY_* bits (a byte array: notifying
                     reads it for every subscriber of a tower) */
  uint32_t *starts; /* per slot, at the run: where its notes start */
  size_t slot_capacity;
  algo_noted *notes; /* this tick's, as taken */
  size_t note_count, note_capacity;
  algo_note *sorted; /* the same, by watcher, at the run */
  size_t sorted_capacity;
} algo_dirty;

enum {
  DIRTY_WHOLE = 1, /* moved or new: its view is computed whole */
  DIRTY_NOTED = 2  /* it has notes (which a whole one ignores) */
};

/* Fills a->candidates for a watcher computed whole (as algo_diff_full
   wants them); returns how many. */
typedef size_t (*algo_gather_fn)(algo *a, uint32_t slot);

/* Makes room for every slot the algorithm has. */
void algo_dirty_reserve(algo *a, algo_dirty *d);
void algo_dirty_free(algo_dirty *d);
/* Watcher w must look at marker (id, slot) this tick. */
void algo_dirty_note(algo *a, algo_dirty *d, uint32_t w, uint64_t id,
                     uint32_t slot);
/* Watcher w is computed whole this tick (its notes are ignored). */
void algo_dirty_whole(algo_dirty *d, uint32_t w);
/* Watcher w was removed: nothing to compute for it. */
void algo_dirty_drop(algo_dirty *d, uint32_t w);
/* Computes the events of every watcher with something to do, in slot
   order, and forgets the notes. */
void algo_dirty_run(algo *a, algo_dirty *d, algo_gather_fn gather);

#endif /* AOI_BENCH_ALGO_CORE_H */
