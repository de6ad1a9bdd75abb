/*
 * policy.c: the interest policies of the compute step (trace format v2):
 * caps (a watcher sees at most its cap nearest markers), appeals (a marker
 * is seen from as far as its own appeal, beyond a watcher's radius) and
 * move bands (a far marker's moves are told every few ticks). Called by
 * compute.c for the watchers under a policy; every other watcher takes the
 * plain paths there, which the policies cannot affect.
 *
 * A capped watcher is computed from scratch (aoi__compute_capped): its
 * picks are the markers it could see, found ring by ring in a fine grid
 * (gather_nearest), each with a key (its distance, less the hysteresis for
 * one its view holds); the cap first picks are kept (select_nearest, with
 * ids breaking ties, so the choice is deterministic); what the view held
 * and no pick names leaves, and the rest enter. A far-sighted one
 * (aoi__far_sighted) picks from every handle's mark instead, as its shard
 * holds no ghosts for it (aoi__compute_capped_far). The other policy watchers
 * (appeals, move bands) take scan.c's whole scan. aoi__find_appeals
 * lists, per watcher, the markers whose appeal reaches it from beyond its
 * radius.
 */
#include "compute.h"

static inline bool pick_before(const aoi__pick *a, const aoi__pick *b)
{
  return a->key < b->key || (a->key == b->key && a->id < b->id);
}

static inline void swap_picks(aoi__pick *p, uint32_t i, uint32_t j)
{
  aoi__pick t = p[i];
  p[i] = p[j];
  p[j] = t;
}

/* Puts the k picks that come first (smallest key, then smallest id) in
   p[0 .. k), in no order: a quickselect, O(n) expected. Keys and ids
   order the picks totally, so which k they are does not depend on the
   pivots. */
static void select_nearest(aoi__pick *p, uint32_t n, uint32_t k)
{
  AOI__ASSERT(0 < k && k < n);
  uint32_t lo = 0, hi = n; /* the k-th lies in [lo, hi) */
  while (hi - lo > 1) {
    /* median of three as the pivot, moved to the end */
    uint32_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (pick_before(&p[mid], &p[lo]))
      swap_picks(p, mid, lo);
    if (pick_before(&p[last], &p[lo]))
      swap_picks(p, last, lo);
    if (pick_before(&p[mid], &p[last]))
      swap_picks(p, mid, last);
    aoi__pick pivot = p[last];
    uint32_t store = lo;
    for (uint32_t i = lo; i < last; i++)
      if (pick_before(&p[i], &pivot))
        swap_picks(p, i, store++);
    p[last] = p[store];
    p[store] = pivot;
    /* p[lo .. store) come before the pivot, p[store + 1 .. hi) after */
    if (store == k - 1 || store == k)
      return;
    if (store < k)
      lo = store + 1;
    else
      hi = store;
  }
}

static bool reserve_pick(aoi__worker *k, uint32_t n)
{
  if (n < k->pick_capacity)
    return true;
  return aoi__reserve(&k->world->allocator, (void **)&k->picks,
                      &k->pick_capacity, n + 1, sizeof(aoi__pick)) == 0;
}

/* Lists, for every owned watcher of the shard, the markers whose appeal
   is larger than its radius and reaches it (their appeal plus the
   hysteresis): only those can be seen beyond the watcher's own reach.
   Each marker with an appeal looks around itself once, so a few of them
   cost the watchers near them, and no watcher scans further than its
   own radius. 0 or AOI_ENOMEM. */
int aoi__find_appeals(aoi__worker *k, aoi__shard *s)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__grid *g = &s->grid;
  uint32_t slots = s->count, pairs = 0;
  int rc = aoi__reserve(a, (void **)&k->appeal_start,
                        &k->appeal_start_capacity, slots + 2,
                        sizeof(uint32_t));
  if (rc != 0)
    return rc;
  memset(k->appeal_start, 0, sizeof(uint32_t) * (slots + 2));
  uint32_t end = g->width == 0 ? 0 : aoi__grid_row_end(g, g->height - 1,
                                                        g->width - 1);
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  for (uint32_t i = 0; i < end; i++) {
    const uint32_t appealing = AOI__ENTRY_MARKER | AOI__ENTRY_APPEAL;
    if ((g->entry[i].info & appealing) != appealing)
      continue;
    float appeal = w->appeal[g->entry[i].handle];
    double reach = (double)appeal + w->config.hysteresis, box[4];
    uint32_t r[4];
    aoi__reach_box(&w->shape, g->x[i], g->y[i], reach, box);
    aoi__grid_range(g, box, r);
    for (uint32_t cy = r[1]; cy <= r[3]; cy++)
      for (uint32_t j = aoi__grid_row_begin(g, cy, r[0]);
           j < aoi__grid_row_end(g, cy, r[2]); j++) {
        if ((g->entry[j].info & want) != want ||
            !(g->entry[j].radius < appeal) ||
            g->entry[j].handle == g->entry[i].handle ||
            !aoi__within(&w->shape, g->x[j], g->y[j], g->x[i], g->y[i], reach))
          continue;
        if ((rc = aoi__reserve(a, (void **)&k->appeal_pairs,
                               &k->appeal_pair_capacity, pairs + 1,
                               sizeof(uint64_t))) != 0)
          return rc;
        k->appeal_pairs[pairs++] = (uint64_t)g->entry[j].slot << 32 | i;
        k->appeal_start[g->entry[j].slot + 2]++;
      }
  }
  if ((rc = aoi__reserve(a, (void **)&k->appeal, &k->appeal_capacity,
                         pairs + 1, sizeof(uint32_t))) != 0)
    return rc;
  for (uint32_t i = 0; i < slots; i++)
    k->appeal_start[i + 2] += k->appeal_start[i + 1];
  /* appeal_start[slot + 1] is the running cursor, then the start of the
     next slot */
  for (uint32_t p = 0; p < pairs; p++) {
    uint32_t slot = (uint32_t)(k->appeal_pairs[p] >> 32);
    k->appeal[k->appeal_start[slot + 1]++] = (uint32_t)k->appeal_pairs[p];
  }
  return 0;
}

/* Adds marker h (id, at x, y) to capped watcher e's picks, with its key,
   if e could see it: `base` is max(e's radius, its appeal). False when out
   of memory. */
static bool add_pick_at(aoi__worker *k, const aoi__entity *e, uint32_t h,
                        uint64_t id, float x, float y, double base,
                        uint32_t how, uint32_t *n)
{
  aoi_world *w = k->world;
  if (aoi__is_member(k, h))
    how |= AOI__PICK_MEMBER;
  double hysteresis = w->config.hysteresis;
  double reach = (how & AOI__PICK_MEMBER) ? base + hysteresis : base;
  if (!aoi__within(&w->shape, e->x, e->y, x, y, reach))
    return true;
  if (!reserve_pick(k, *n))
    return false;
  AOI__ASSERT(*n < k->pick_capacity && h < w->handle_capacity);
  aoi__pick *p = &k->picks[(*n)++];
  p->id = id;
  p->handle = h;
  p->how = how;
  double dx = (double)x - (double)e->x, dy = (double)y - (double)e->y;
  p->key = sqrt(dx * dx + dy * dy);
  if (how & AOI__PICK_MEMBER)
    p->key -= hysteresis;
  return true;
}

static inline bool add_pick(aoi__worker *k, const aoi__entity *e,
                            const aoi__grid *g, uint32_t i, double base,
                            uint32_t how, uint32_t *n)
{
  return add_pick_at(k, e, g->entry[i].handle, g->entry[i].id, g->x[i], g->y[i],
                     base, how, n);
}

/* Whether grid entry i is a marker that watcher e's own radius must find:
   not e itself, of interest, and not one whose appeal reaches further
   (the appeal list has those). */
static inline bool own_marker(const aoi_world *w, const aoi__entity *e,
                              const aoi__grid *g, uint32_t i, bool any_appeal)
{
  uint32_t info = g->entry[i].info;
  return (info & AOI__ENTRY_MARKER) &&
         (g->entry[i].layers & e->interest) != 0 &&
         g->entry[i].handle != e->handle &&
         !(any_appeal && (info & AOI__ENTRY_APPEAL) &&
           w->appeal[g->entry[i].handle] > e->radius);
}

/* Keeps the cap nearest picks of n, if there are more: the others can
   never be among the nearest, however many more come. */
static uint32_t keep_nearest(aoi__worker *k, uint32_t n, uint32_t cap)
{
  AOI__ASSERT(cap > 0 && n <= k->pick_capacity);
  if (n <= cap)
    return n;
  select_nearest(k->picks, n, cap);
  return cap;
}

/* The largest key among the first n picks (0 for none). */
static double farthest_key(const aoi__worker *k, uint32_t n)
{
  double kth = 0;
  for (uint32_t j = 0; j < n; j++)
    kth = k->picks[j].key > kth ? k->picks[j].key : kth;
  return kth;
}

/* The markers of one cell of the grid that watcher e's own radius
   finds, and that its view does not hold, as picks. */
static bool pick_cell(aoi__worker *k, const aoi__entity *e,
                      const aoi__grid *fine, uint32_t cell, bool any_appeal,
                      uint32_t *n)
{
  uint32_t begin = fine->start[AOI__GRID_CLASSES * cell];
  uint32_t end = fine->start[AOI__GRID_CLASSES * cell + 2];
  for (uint32_t i = begin; i < end; i++)
    if (own_marker(k->world, e, fine, i, any_appeal) &&
        !aoi__is_member(k, fine->entry[i].handle) &&
        !add_pick(k, e, fine, i, e->radius, 0, n))
      return false;
  return true;
}

/* The picks of a capped watcher, nearest first: the members it held
   (from the marks), its appeal list (entries of g), then the cells of
   `fine` (the fine grid, or g where that could not be built) in rings
   around it, until the cap-th nearest so far is nearer than anything the
   next ring can hold, or its radius is passed. A crowd then costs each
   capped watcher about the cells that hold its cap nearest, not its whole
   reach. Only the cap nearest are left in the picks. */
static bool gather_nearest(aoi__worker *k, const aoi__entity *e,
                           const aoi__grid *g, const aoi__grid *fine,
                           const uint32_t *appeals, uint32_t nappeals,
                           bool any_appeal, uint32_t *n)
{
  aoi_world *w = k->world;
  const aoi__view *view = &e->view;
  double radius = e->radius;
  uint32_t cap = e->cap;
  for (uint32_t j = 0; j < view->count; j++) {
    uint32_t h = view->handles[j];
    const aoi__mark *m = &w->mark[h];
    float appeal = w->appeal[h];
    if ((m->layers & e->interest) != 0 &&
        !add_pick_at(k, e, h, w->mark[h].id, m->x, m->y,
                     appeal > radius ? appeal : radius,
                     appeal > radius ? AOI__PICK_APPEAL : 0, n))
      return false;
  }
  for (uint32_t j = 0; j < nappeals; j++) {
    uint32_t i = appeals[j];
    if ((g->entry[i].layers & e->interest) != 0 &&
        !aoi__is_member(k, g->entry[i].handle) &&
        !add_pick(k, e, g, i, w->appeal[g->entry[i].handle], AOI__PICK_APPEAL,
                  n))
      return false;
  }
  double at[4] = {e->x, e->y, e->x, e->y};
  uint32_t c[4];
  aoi__grid_range(fine, at, c);
  double side = 1 / fine->inverse;
  double rx = floor(((double)e->x - fine->x0) * fine->inverse);
  double ry = floor(((double)e->y - fine->y0) * fine->inverse);
  /* outside the grid's box, its edge cells hold what lies beyond: no ring
     bounds the distance then */
  bool inside = rx == (double)c[0] && ry == (double)c[1];
  /* how far apart, per axis, its radius can see a marker */
  double reach = aoi__reach_extent(&w->shape, radius) * (1 + 1e-9) + 1e-9;
  uint32_t cx = c[0], cy = c[1];
  for (uint32_t ring = 0;; ring++) {
    uint32_t x0 = cx >= ring ? cx - ring : 0, y0 = cy >= ring ? cy - ring : 0;
    uint32_t x1 = cx + ring < fine->width ? cx + ring : fine->width - 1;
    uint32_t y1 = cy + ring < fine->height ? cy + ring : fine->height - 1;
    for (uint32_t y = y0; y <= y1; y++) {
      /* the ring's top and bottom rows whole, its sides' two cells */
      uint32_t row = y * fine->width;
      bool ok = true;
      if (y + ring == cy || y == cy + ring) {
        for (uint32_t x = x0; x <= x1 && ok; x++)
          ok = pick_cell(k, e, fine, row + x, any_appeal, n);
      } else {
        if (cx >= ring)
          ok = pick_cell(k, e, fine, row + cx - ring, any_appeal, n);
        if (ok && cx + ring < fine->width)
          ok = pick_cell(k, e, fine, row + cx + ring, any_appeal, n);
      }
      if (!ok)
        return false;
    }
    bool all = x0 == 0 && y0 == 0 && x1 == fine->width - 1 &&
               y1 == fine->height - 1;
    if (all)
      return true;
    /* nothing beyond this ring lies nearer than `beyond`, per axis */
    double beyond = inside ? (double)ring * side * (1 - 1e-9) : 0;
    if (beyond > reach)
      return true; /* past its own reach: no new pick */
    if (*n >= cap) {
      *n = keep_nearest(k, *n, cap);
      if (farthest_key(k, *n) < beyond)
        return true;
    }
  }
}

/* The picks of a far-sighted capped watcher: every live marker of
   interest but itself whose mark lies within its reach (its radius, or a
   marker's appeal where that is larger; plus the hysteresis for one it
   held), the others being in no shard's grid near it. Once the picks
   outnumber the cap by a margin, only the cap nearest are kept, and a
   mark farther than the farthest of those (beyond the hysteresis, with a
   margin for the rounding) can never be picked: it is passed over. */
static bool gather_marks(aoi__worker *k, const aoi__entity *e, uint32_t *n)
{
  const aoi_world *w = k->world;
  const aoi__mark *mark = w->mark;
  const float *appeal = w->appeal;
  double radius = e->radius, hysteresis = w->config.hysteresis;
  uint32_t interest = e->interest, self = e->handle, cap = e->cap;
  uint64_t limit = 2 * (uint64_t)cap + 64;
  double bound = INFINITY; /* squared, with the margin */
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__mark *m = &mark[h];
    if ((m->layers & interest) == 0 || h == self)
      continue;
    double dx = (double)m->x - (double)e->x, dy = (double)m->y - (double)e->y;
    if (dx * dx + dy * dy > bound)
      continue;
    bool by_appeal = appeal[h] > radius;
    if (!add_pick_at(k, e, h, m->id, m->x, m->y,
                     by_appeal ? appeal[h] : radius,
                     by_appeal ? AOI__PICK_APPEAL : 0, n))
      return false;
    if (*n >= limit) {
      *n = keep_nearest(k, *n, cap);
      double far = (farthest_key(k, *n) + hysteresis) * (1 + 1e-9) + 1e-9;
      bound = far * far;
    }
  }
  return true;
}

/* The kept picks of a capped watcher (the first n): a pick that its view
   held stays (its member bit goes), the others enter, as candidates (*ne
   of them). *far: it picked one by its appeal. False when a candidate
   cannot be stored. */
static bool picks_to_enters(aoi__worker *k, uint32_t n, uint32_t *ne,
                            bool *far)
{
  uint32_t enters = 0;
  bool by_appeal = false;
  for (uint32_t j = 0; j < n; j++) {
    const aoi__pick *p = &k->picks[j];
    by_appeal |= (p->how & AOI__PICK_APPEAL) != 0;
    if (p->how & AOI__PICK_MEMBER) {
      aoi__clear_member(k, p->handle);
      continue;
    }
    if (!aoi__reserve_candidate(k, enters))
      return false;
    AOI__ASSERT(!aoi__is_member(k, p->handle));
    k->candidates[enters++] = (aoi__candidate){p->id, p->handle};
  }
  *ne = enters;
  *far = by_appeal;
  return true;
}

/* One walk of capped watcher e's view, in its order (by id): a held
   marker still a member was not picked and leaves (to out[], *nl), a
   picked one is kept and told (to moves[], *nm) if it moved, or, with
   move bands (`told`), as its band allows, its told position following
   it (*lagging: a band held one back). Returns how many are kept. */
static uint32_t capped_walk(aoi__worker *k, const aoi__entity *e,
                            aoi__view *view, bool told, uint64_t tick,
                            uint32_t *out, uint32_t *moves, uint32_t *nl_out,
                            uint32_t *nm_out, bool *lagging_out)
{
  aoi_world *w = k->world;
  const aoi__mark *mark = w->mark;
  bool resync = (e->stale & AOI__STALE_RESYNC) != 0;
  bool move_events = w->config.move_events != 0, lagging = false;
  unsigned allowed = told ? aoi__bands_allowed(w, e->id, tick) : 0;
  uint32_t v = view->count, *hs = view->handles;
  float *tp = aoi__view_told(view, told);
  uint32_t nl = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    if (aoi__is_member(k, h)) { /* not picked: it leaves */
      aoi__clear_member(k, h);
      out[nl++] = h;
      continue;
    }
    const aoi__mark *m = &mark[h];
    if (told) {
      float tx = tp[2 * i], ty = tp[2 * i + 1];
      int tell = aoi__tell_move(w, e, m, tx, ty, allowed);
      if (tell == AOI__TELL_NOW) {
        moves[nm++] = h;
        tx = m->x;
        ty = m->y;
      }
      lagging |= tell == AOI__TELL_LATER;
      tp[2 * kept] = tx;
      tp[2 * kept + 1] = ty;
    } else if (move_events && (resync || m->moved == aoi__stamp(tick))) {
      moves[nm++] = h;
    }
    hs[kept++] = h;
  }
  *nl_out = nl;
  *nm_out = nm;
  *lagging_out = lagging;
  return kept;
}

/* The rest of a capped watcher's compute, from its `n` picks, with the
   member bits of its view set; `gathered` false when the picks could not
   all be stored (then the view stays, and a resync comes next tick). */
static int capped_finish(aoi__worker *k, aoi__entity *e, bool gathered,
                         uint32_t n, uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  aoi__view *view = &e->view;
  uint32_t v = view->count, ne;
  bool far, told = aoi__bands(w);
  uint32_t *rec = NULL;
  /* The picks that the view held stay: their bit goes. The others enter. */
  if (!gathered ||
      !picks_to_enters(k, keep_nearest(k, n, e->cap), &ne, &far) ||
      (v + ne > 0 &&
       ((rec = aoi__reserve_events(k, v + ne)) == NULL ||
        aoi__reserve(a, (void **)&k->hits, &k->hit_capacity, v + 1,
                     sizeof(uint32_t)) != 0 ||
        aoi__view_reserve_k(k, view, v + ne, told) != 0))) {
    aoi__clear_view_bits(k, view->handles, v);
    return AOI_ENOMEM;
  }
  if (v + ne == 0) { /* nothing held, nothing seen */
    k->view_n++;
    e->stale = 0;
    return 0;
  }
  uint32_t *out = rec + AOI__RECORD_HEADER, *moves = k->hits, nl, nm;
  bool lagging;
  uint32_t kept = capped_walk(k, e, view, told, tick, out, moves, &nl, &nm,
                              &lagging);
  float *tp = aoi__view_told(view, told);
  aoi__view_enter(k, view, tp, kept, ne, out + nl);
  if (nl > 0)
    aoi__view_fit(k, view, aoi__bands(k->world));
  if (nm > 0)
    memcpy(out + nl + ne, moves, sizeof(uint32_t) * nm);
  aoi__commit_events(k, e, nl, ne, nm);
  k->view_sum += view->count;
  k->view_n++;
  e->stale = (far || lagging) ? AOI__STALE_POLICY : 0;
  k->lagging += lagging;
  return 0;
}

/* Computes a capped watcher from scratch: of the markers within its own
   reach (but those whose appeal is larger, which aoi__find_appeals listed)
   and those that reach it by their appeal, the cap nearest; with move
   bands, the moves its bands allow this tick. Events and failures as
   aoi__compute_whole (scan.c). */
int aoi__compute_capped(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                        const aoi__grid *fine, const uint32_t *appeals,
                        uint32_t nappeals, bool any_appeal, uint64_t tick)
{
  AOI__ASSERT(e->cap > 0 && (e->flags & AOI_WATCHER));
  AOI__ASSERT(appeals != NULL || nappeals == 0);
  aoi__view *view = &e->view;
  for (uint32_t i = 0; i < view->count; i++)
    aoi__set_member(k, view->handles[i]);
  uint32_t n = 0;
  bool gathered = gather_nearest(k, e, g, fine != NULL ? fine : g, appeals,
                                 nappeals, any_appeal, &n);
  return capped_finish(k, e, gathered, n, tick);
}

int aoi__compute_capped_far(aoi__worker *k, aoi__entity *e, uint64_t tick)
{
  AOI__ASSERT(e->cap > 0 && (e->flags & AOI_WATCHER));
  aoi__view *view = &e->view;
  for (uint32_t i = 0; i < view->count; i++)
    aoi__set_member(k, view->handles[i]);
  uint32_t n = 0;
  bool gathered = gather_marks(k, e, &n);
  return capped_finish(k, e, gathered, n, tick);
}

