/*
 * push.c: step 3 for the quiet watchers, from the changes.
 *
 * A quiet watcher did not change this tick and its view is exact: it has
 * no cap, sees nothing by appeal, is told by no move band and its reach is
 * about the usual one (aoi__push_quiet's caller picks them). Nothing about
 * it is computed unless a marker near it changed, and then only that
 * change: instead of each watcher looking for the changes in its reach
 * (compute_changes), each change looks for the quiet watchers in the
 * largest quiet reach around it (aoi__push_collect), and the events it
 * makes are then sorted by watcher (a counting sort) and written by
 * aoi__push_finish.
 *
 * A change is a marker that moved or was removed (a departure in the grid:
 * where and with what layers it stood at the end of the last tick), or one
 * that changed in place (added, new layers or appeal: a changed entry
 * with no departure here). Whether a quiet watcher held the marker follows
 * from the departure without reading its view: within its radius it did,
 * beyond its reach (radius plus hysteresis) it did not (the rule of
 * docs/trace-format.md, for a watcher whose view is exact and which did not
 * move). Only between the two, or for a change in place, is the view
 * searched. A marker that moved here from beyond every quiet reach (its
 * departure is elsewhere) was held by none of them.
 *
 * The events are those compute_changes makes, in the same order: a held
 * marker leaves when its layers no longer match or it is out of reach,
 * else is told if it moved; another enters when it is a marker within the
 * radius.
 */
#include "compute.h"

#include <string.h>

#define AOI__PUSH_LEAVE 0u
#define AOI__PUSH_ENTER 1u
#define AOI__PUSH_MOVE 2u
#define AOI__PUSH_KIND_SHIFT 30
#define AOI__PUSH_Q_MASK ((1u << AOI__PUSH_KIND_SHIFT) - 1)
/* More events than k->push_limit: most of what the quiet watchers see
   changed, and scanning their reach costs less (and no scratch). */
#define AOI__PUSH_FULL 1

/* How a change knows whether a quiet watcher held its marker. */
enum held_rule {
  HELD_BY_DEPARTURE, /* from where it stood (the departure) */
  HELD_BY_NONE,      /* it came from beyond every quiet reach */
  HELD_BY_VIEW       /* changed in place: the view says */
};

typedef struct change {
  uint64_t id;
  uint32_t handle;
  enum held_rule rule;
  float ox, oy; /* where it stood (HELD_BY_DEPARTURE) */
  uint32_t old_layers;
  float nx, ny; /* where it is */
  uint32_t new_layers; /* 0: removed, or no marker */
  bool moved;
} change;

static bool view_holds(const aoi__worker *k, const aoi__shard *s,
                       uint32_t slot, const change *c)
{
  return aoi__view_holds(&s->entities[slot].view, k->world->mark, c->id,
                         c->handle);
}

/* The event change c makes for the quiet watcher at grid entry i, if any:
   appended (k->pushes has room). With `fresh`, the watcher lies beyond the
   reach of where the marker stood, so it did not hold it. The watcher is
   read from the grid, where the entries of a cell lie together. 0 or
   AOI__PUSH_FULL. */
static inline __attribute__((always_inline)) int
visit(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
      const aoi__shape *shape, uint32_t i, const change *c, bool fresh)
{
  const aoi_world *w = k->world;
  float x = g->x[i], y = g->y[i];
  uint32_t interest = g->entry[i].interest;
  double inner = g->entry[i].radius, outer = inner + w->config.hysteresis;
  bool held = false;
  if (!fresh) {
    switch (c->rule) {
    case HELD_BY_DEPARTURE:
      if ((c->old_layers & interest) != 0 &&
          aoi__within(shape, x, y, c->ox, c->oy, outer))
        held = outer == inner ||
               aoi__within(shape, x, y, c->ox, c->oy, inner) ||
               view_holds(k, s, g->entry[i].slot, c);
      break;
    case HELD_BY_VIEW:
      held = view_holds(k, s, g->entry[i].slot, c);
      break;
    default:
      break;
    }
  }
  uint32_t kind;
  if (held) {
    if ((c->new_layers & interest) == 0 ||
        !aoi__within(shape, x, y, c->nx, c->ny, outer))
      kind = AOI__PUSH_LEAVE;
    else if (c->moved && w->config.move_events)
      kind = AOI__PUSH_MOVE;
    else
      return 0;
  } else {
    if ((c->new_layers & interest) == 0 ||
        !aoi__within(shape, x, y, c->nx, c->ny, inner))
      return 0;
    kind = AOI__PUSH_ENTER;
  }
  if (k->push_count >= k->push_limit)
    return AOI__PUSH_FULL;
  k->pushes[k->push_count++] = (aoi__push){
      c->id, g->cell[i] | kind << AOI__PUSH_KIND_SHIFT, c->handle};
  return 0;
}

/* visit, for the entry at i if it is a quiet watcher other than the
   change's own marker. */
static inline __attribute__((always_inline)) int
visit_quiet(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
            const aoi__shape *shape, uint32_t i, const change *c, bool fresh)
{
  if (!(g->entry[i].info & AOI__ENTRY_QUIET) || g->entry[i].handle == c->handle)
    return 0;
  return visit(k, s, g, shape, i, c, fresh);
}

/* For a circle: the entries of [begin, begin + n) within `reach` (the
   largest quiet reach) of where change c's marker stands, or of where it
   stood unless `fresh`, written to hits[]: their count. A visit needs one
   or the other for any event, and about half a run's entries have
   neither, at random: a branch-free pass drops them before visit's
   branches. The sums are aoi__within's, rounded the same way, so an entry
   dropped is beyond every quiet watcher's reach of both points. */
static inline __attribute__((always_inline)) uint32_t
near_change(const aoi__grid *g, uint32_t begin, uint32_t n, const change *c,
            bool fresh, double reach, uint32_t *hits)
{
  const float *xs = g->x + begin, *ys = g->y + begin;
  double r2 = reach * reach;
  double nx = c->nx, ny = c->ny;
  /* fresh, or nowhere it stood: the point it stands at, twice */
  bool stood = !fresh && c->rule == HELD_BY_DEPARTURE;
  double ox = stood ? c->ox : nx, oy = stood ? c->oy : ny;
  uint32_t found = 0;
  for (uint32_t i = 0; i < n; i++) {
    double x = xs[i], y = ys[i];
    double dx = nx - x, dy = ny - y, ex = ox - x, ey = oy - y;
    hits[found] = begin + i;
    found += (dx * dx + dy * dy <= r2) | (ex * ex + ey * ey <= r2);
  }
  return found;
}

/* Visits the quiet watchers in the cells of r[4], except those of
   `skip` (NULL: none), for change c. Inline, so that a constant shape
   leaves no shape to ask at each visit. */
static inline __attribute__((always_inline)) int
visit_cells(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
            const aoi__shape *shape, const uint32_t r[4], const uint32_t *skip,
            const change *c, bool fresh, double reach)
{
  for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
    /* one span of columns, or the two beside the skipped ones */
    uint32_t span[4] = {r[0], r[2], 1, 0}, spans = 1;
    if (skip != NULL && cy >= skip[1] && cy <= skip[3]) {
      spans = 2;
      if (skip[0] > r[0])
        span[1] = skip[0] - 1 < r[2] ? skip[0] - 1 : r[2];
      else
        span[0] = 1, span[1] = 0; /* empty */
      span[2] = skip[2] + 1 > r[0] ? skip[2] + 1 : r[0];
      span[3] = r[2];
    }
    for (uint32_t p = 0; p < spans; p++) {
      uint32_t x0 = span[2 * p], x1 = span[2 * p + 1];
      if (x0 > x1)
        continue;
      uint32_t begin = aoi__grid_row_begin(g, cy, x0);
      uint32_t end = aoi__grid_row_end(g, cy, x1);
      /* room for a push an entry of the run, at most */
      if (aoi__reserve(&k->world->allocator, (void **)&k->pushes,
                       &k->push_capacity, k->push_count + (end - begin),
                       sizeof(aoi__push)) != 0)
        return AOI_ENOMEM;
      if (shape->kind != AOI_SHAPE_CIRCLE) {
        for (uint32_t i = begin; i < end; i++) {
          int rc = visit_quiet(k, s, g, shape, i, c, fresh);
          if (rc != 0)
            return rc;
        }
        continue;
      }
      /* a block at a time: those near the change, then their visits */
      enum { BLOCK = 64 };
      uint32_t hits[BLOCK];
      for (uint32_t at = begin; at < end; at += BLOCK) {
        uint32_t n = end - at < BLOCK ? end - at : BLOCK;
        uint32_t found = near_change(g, at, n, c, fresh, reach, hits);
        for (uint32_t f = 0; f < found; f++) {
          int rc = visit_quiet(k, s, g, shape, hits[f], c, fresh);
          if (rc != 0)
            return rc;
        }
      }
    }
  }
  return 0;
}

/* All the events of change c for the quiet watchers within `reach` (the
   largest quiet reach) of where its marker stood or is, for the world's
   shape, which is `shape` (a constant where inlined). */
static inline __attribute__((always_inline)) int
push_change_as(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
               const aoi__shape *shape, const change *c, double reach)
{
  double box[4];
  uint32_t old[4], now[4];
  bool was = c->rule == HELD_BY_DEPARTURE;
  if (was) {
    aoi__reach_box(shape, c->ox, c->oy, reach, box);
    aoi__grid_range(g, box, old);
    int rc = visit_cells(k, s, g, shape, old, NULL, c, false, reach);
    if (rc != 0 || c->new_layers == 0) /* a marker no more: leaves only */
      return rc;
  }
  aoi__reach_box(shape, c->nx, c->ny, reach, box);
  aoi__grid_range(g, box, now);
  /* Beyond the cells around where it stood, no quiet watcher held it. */
  return visit_cells(k, s, g, shape, now, was ? old : NULL, c, was, reach);
}

static int push_change(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
                       const change *c, double reach)
{
  static const aoi__shape circle = {.kind = AOI_SHAPE_CIRCLE};
  const aoi__shape *shape = &k->world->shape;
  if (shape->kind == AOI_SHAPE_CIRCLE) /* the usual one, folded in */
    return push_change_as(k, s, g, &circle, c, reach);
  return push_change_as(k, s, g, shape, c, reach);
}

static int note_done(aoi__worker *k, uint32_t h)
{
  if (aoi__reserve(&k->world->allocator, (void **)&k->pushed_done, &k->pushed_done_capacity,
                   k->pushed_done_count + 1, sizeof(uint32_t)) != 0)
    return AOI_ENOMEM;
  k->pushed_done[k->pushed_done_count++] = h;
  aoi__set_member(k, h); /* a change is pushed once */
  return 0;
}

static int collect_changes(aoi__worker *k, const aoi__shard *s,
                           const aoi__grid *g, uint64_t tick, double reach)
{
  const aoi__mark *mark = k->world->mark;
  uint32_t cells = g->width * g->height;
  /* the departures: markers that moved or were removed */
  uint32_t end = g->start[(AOI__GRID_CLASSES + 1) * cells];
  for (uint32_t i = g->start[AOI__GRID_CLASSES * cells]; i < end; i++) {
    uint32_t h = g->entry[i].handle;
    if (aoi__is_member(k, h)) /* cannot happen: one departure each */
      continue;
    int rc = note_done(k, h);
    if (rc != 0)
      return rc;
    const aoi__mark *m = &mark[h];
    change c = {.id = g->entry[i].id, .handle = h, .rule = HELD_BY_DEPARTURE,
                .ox = g->x[i], .oy = g->y[i],
                .old_layers = g->entry[i].layers, .nx = m->x, .ny = m->y,
                .new_layers = m->layers, .moved = m->moved == aoi__stamp(tick)};
    if ((rc = push_change(k, s, g, &c, reach)) != 0)
      return rc;
  }
  /* the changed markers without a departure here */
  for (uint32_t cy = 0; cy < g->height; cy++) {
    const uint32_t row[4] = {0, cy, g->width - 1, cy};
    if (aoi__grid_dirty(g, row) == 0)
      continue;
    for (uint32_t cx = 0; cx < g->width; cx++) {
      uint32_t cell = AOI__GRID_CLASSES * (cy * g->width + cx);
      for (uint32_t i = g->start[cell]; i < g->start[cell + 1]; i++) {
        uint32_t h = g->entry[i].handle;
        if (aoi__is_member(k, h)) /* pushed from its departure */
          continue;
        int rc = note_done(k, h);
        if (rc != 0)
          return rc;
        const aoi__mark *m = &mark[h];
        bool moved = m->moved == aoi__stamp(tick);
        change c = {.id = g->entry[i].id, .handle = h,
                    .rule = moved ? HELD_BY_NONE : HELD_BY_VIEW,
                    .nx = g->x[i], .ny = g->y[i],
                    .new_layers = g->entry[i].layers, .moved = moved};
        if ((rc = push_change(k, s, g, &c, reach)) != 0)
          return rc;
      }
    }
  }
  return 0;
}

int aoi__push_collect(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
                      uint64_t tick, double reach)
{
  const aoi_allocator *a = &k->world->allocator;
  uint32_t nq = k->quiet_count;
  AOI__ASSERT(nq <= AOI__PUSH_Q_MASK);
  k->push_count = k->pushed_done_count = 0;
  k->push_limit = AOI__PUSH_EVENTS * nq + 1024;
  int rc = collect_changes(k, s, g, tick, reach);
  for (uint32_t j = 0; j < k->pushed_done_count; j++)
    aoi__take_bits(k, k->pushed_done[j]);
  if (rc != 0 ||
      (rc = aoi__reserve(a, (void **)&k->push_start, &k->push_start_capacity,
                         nq + 2, sizeof(uint32_t))) != 0 ||
      (rc = aoi__reserve(a, (void **)&k->pushed, &k->pushed_capacity,
                         k->push_count + 1, sizeof(aoi__push))) != 0 ||
      (rc = aoi__reserve(a, (void **)&k->push_kinds, &k->push_kinds_capacity,
                         nq + 1, 1)) != 0)
    return rc;
  /* by quiet watcher: a counting sort */
  uint32_t *start = k->push_start;
  memset(start, 0, sizeof(uint32_t) * (nq + 2));
  for (uint32_t j = 0; j < k->push_count; j++)
    start[(k->pushes[j].qk & AOI__PUSH_Q_MASK) + 2]++;
  for (uint32_t q = 0; q < nq; q++)
    start[q + 2] += start[q + 1];
  uint8_t *kinds = k->push_kinds;
  memset(kinds, 0, nq);
  uint32_t watchers = 0;
  for (uint32_t j = 0; j < k->push_count; j++) {
    uint32_t qk = k->pushes[j].qk, q = qk & AOI__PUSH_Q_MASK;
    k->pushed[start[q + 1]++] = k->pushes[j];
    watchers += kinds[q] == 0;
    kinds[q] |= (uint8_t)(1u << (qk >> AOI__PUSH_KIND_SHIFT));
  }
  k->push_watchers = watchers;
  return 0;
}

/* Sorts a watcher's pushes by kind (leaves, enters, moves), then id. Two,
   the usual number, are put in order by an index rather than a branch:
   which comes first is as random as the crowd. */
static void sort_pushes(aoi__push *p, uint32_t n)
{
  if (n == 2) {
    uint32_t k0 = p[0].qk >> AOI__PUSH_KIND_SHIFT;
    uint32_t k1 = p[1].qk >> AOI__PUSH_KIND_SHIFT;
    unsigned swap = (unsigned)(k1 < k0) |
                    ((unsigned)(k1 == k0) & (unsigned)(p[1].id < p[0].id));
    aoi__push first = p[swap], second = p[swap ^ 1];
    p[0] = first;
    p[1] = second;
    return;
  }
  for (uint32_t i = 1; i < n; i++) {
    aoi__push v = p[i];
    uint32_t kind = v.qk >> AOI__PUSH_KIND_SHIFT;
    uint32_t j = i;
    while (j > 0) {
      uint32_t before = p[j - 1].qk >> AOI__PUSH_KIND_SHIFT;
      if (before < kind || (before == kind && p[j - 1].id < v.id))
        break;
      p[j] = p[j - 1];
      j--;
    }
    p[j] = v;
  }
}

/* Keeps the record of watcher `handle` whose `n` pushes, in order, are
   moves alone (its view stays): the markers' handles, written where the
   segment's room was reserved. */
static void write_moves(aoi__worker *k, uint32_t handle, const aoi__push *p,
                        uint32_t n)
{
  aoi__segment *seg = &k->world->segments[k->index];
  uint32_t *out = seg->words + seg->count + AOI__RECORD_HEADER;
  for (uint32_t j = 0; j < n; j++)
    out[j] = p[j].handle;
  aoi__commit_record(k, handle, 0, 0, n);
}

uint32_t aoi__push_moves(aoi__worker *k, uint32_t *rest)
{
  const uint32_t *start = k->push_start;
  const uint8_t *kinds = k->push_kinds;
  const uint8_t moves = 1u << AOI__PUSH_MOVE;
  uint32_t nq = k->quiet_count, nr = 0;
  /* room for every pushed watcher's record as if its pushes were moves
     alone (one word of numbers: n < 1024), and the room a record's
     reservation leaves for a long header */
  uint64_t need = (uint64_t)k->push_count +
                  (uint64_t)AOI__RECORD_HEADER * k->push_watchers +
                  AOI__RECORD_LONG_HEADER - AOI__RECORD_HEADER;
  aoi__segment *seg = &k->world->segments[k->index];
  /* without that room, each is written alone, and fails alone */
  bool room = seg->count + need <= UINT32_MAX / 2 &&
              aoi__reserve_snug(&k->world->allocator, (void **)&seg->words,
                                &seg->capacity, (uint32_t)(seg->count + need),
                                sizeof(uint32_t)) == 0;
  for (uint32_t q = 0; q < nq; q++) {
    uint32_t n = start[q + 1] - start[q];
    if (n == 0)
      continue;
    if (!room || kinds[q] != moves || n > AOI__PUSH_MOVES_MAX) {
      rest[nr++] = q;
      continue;
    }
    aoi__push *p = k->pushed + start[q];
    sort_pushes(p, n);
    write_moves(k, k->quiet[q].handle, p, n);
  }
  return nr;
}

void aoi__push_prefetch(const aoi__worker *k, const aoi__entity *e,
                        uint32_t q, bool ids)
{
  uint32_t kinds = k->push_kinds[q];
  if (!(kinds & (1u << AOI__PUSH_ENTER | 1u << AOI__PUSH_LEAVE)))
    return; /* moves only: neither entity nor view is read */
  const uint32_t *hs = e->view.handles;
  uint32_t v = e->view.count;
  if (ids) {
    /* an enter searches the view by id: about a dozen of them */
    if (kinds & 1u << AOI__PUSH_ENTER)
      for (uint32_t i = 0; i < v && i < 64; i++)
        __builtin_prefetch(&k->world->mark[hs[i]].id);
    return;
  }
  for (size_t at = 0; at < sizeof(uint32_t) * v && at < 256; at += 64)
    __builtin_prefetch((const char *)hs + at);
}

int aoi__push_finish(aoi__worker *k, aoi__entity *e, uint32_t handle,
                     aoi__push *p, uint32_t n)
{
  sort_pushes(p, n);
  uint32_t nl = 0, ne = 0;
  while (nl < n && p[nl].qk >> AOI__PUSH_KIND_SHIFT == AOI__PUSH_LEAVE)
    nl++;
  while (nl + ne < n &&
         p[nl + ne].qk >> AOI__PUSH_KIND_SHIFT == AOI__PUSH_ENTER)
    ne++;
  uint32_t nm = n - nl - ne;
  uint32_t *rec = aoi__reserve_events(k, n);
  if (rec == NULL)
    return AOI_ENOMEM;
  if (nl + ne == 0) { /* moves only: the view stays */
    write_moves(k, handle, p, nm);
    return 0;
  }
  aoi__view *view = &e->view;
  uint32_t v = view->count;
  AOI__ASSERT(nl <= v && e->handle == handle);
  if (ne > 0 && aoi__view_reserve_k(k, view, v - nl + ne, false) != 0)
    return AOI_ENOMEM;
  for (uint32_t j = 0; j < ne; j++)
    if (!aoi__reserve_candidate(k, j))
      return AOI_ENOMEM;
  AOI__STRESS();
  uint32_t *out = rec + AOI__RECORD_HEADER;
  uint32_t kept = v;
  if (nl > 0) { /* the leavers out of the view, which keeps its order */
    for (uint32_t j = 0; j < nl; j++) {
      out[j] = p[j].handle;
      aoi__set_member(k, p[j].handle);
    }
    uint32_t *hs = view->handles;
    kept = 0;
    for (uint32_t i = 0; i < v; i++)
      if (!(aoi__take_bits(k, hs[i]) & AOI__BIT_MEMBER))
        hs[kept++] = hs[i];
    AOI__ASSERT(kept == v - nl);
  }
  for (uint32_t j = 0; j < ne; j++)
    k->candidates[j] = (aoi__candidate){p[nl + j].id, p[nl + j].handle};
  aoi__view_enter(k, view, NULL, kept, ne, out + nl);
  if (nl > 0)
    aoi__view_fit(k, view, false);
  for (uint32_t j = 0; j < nm; j++)
    out[nl + ne + j] = p[nl + ne + j].handle;
  aoi__commit_record(k, handle, nl, ne, nm);
  return 0;
}
