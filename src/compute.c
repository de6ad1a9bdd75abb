/*
 * compute.c: step 3 of a tick, on each worker for its own shards: the new
 * view of every watcher, and its events.
 *
 * The shard indexes its owned entities, ghosts and departures in a uniform
 * grid, read in place (the markers that changed this tick first in each
 * cell, departures apart, and only when some watcher may need them;
 * index_shard), and once in a while puts its entities in the grid's
 * order (order_entities). Then its work list: the watchers that changed or
 * whose view is stale, and those with a changed marker or a departure
 * within their reach; any other watcher is skipped without reading its
 * view. The quiet watchers (unchanged, no policy, about the usual reach)
 * are not listed: the changes find them (push.c, compute_quiet), unless
 * so much changed that listing them costs less. Each listed watcher is
 * computed by one of four paths (compute_watcher):
 *
 *  - compute_whole: a watcher that changed, or that most of what it sees
 *    changed, checks its previous view (sorted by id) against one scan of
 *    the grid cells of its reach: leaves, moves and kept entries come out
 *    in id order; its enters are the markers within its radius, found in
 *    the grid, that the view does not hold.
 *  - compute_changes: any other watcher only looks at the changed markers
 *    and departures within its reach (a quiet one, when the changes were
 *    too many to push).
 *  - compute_policy: compute_whole's scan for a watcher that sees some
 *    marker by its appeal (now or at the last tick) or is told by move
 *    bands; aoi__compute_capped (policy.c) for a capped one.
 *  - compute_marks: a watcher whose shard has no usable grid (it missed a
 *    ghost or could not index) takes its leaves and moves from the marks.
 *
 * Membership is two bits over handles, a byte a handle (compute.h), all
 * clear between watchers. Events go straight into the worker's delivery
 * segment as one record per watcher (compute.h), which this worker owns
 * during the tick.
 */
#include "compute.h"

/* What the grid indexes of a shard, read in place (shard_entry): its owned
   entities, then its first `ghosts` ghosts, then its own departures of
   this tick when `departures`. */
typedef struct shard_source {
  const aoi__shard *s;
  uint64_t tick;
  uint32_t ghosts;
  bool departures;
} shard_source;

static uint32_t source_count(const shard_source *src)
{
  return src->s->count + src->ghosts +
         (src->departures ? src->s->departed_count : 0);
}

static inline __attribute__((always_inline)) void
shard_entry(const void *source, uint32_t i, aoi__grid_item *it)
{
  const shard_source *src = source;
  const aoi__shard *s = src->s;
  if (i < s->count) {
    const aoi__entity *e = &s->entities[i];
    it->x = e->x;
    it->y = e->y;
    it->entry.id = e->id;
    it->entry.handle = e->handle;
    /* no layers for one that is no marker: a layer test then says both
       (meet_hits) */
    it->entry.layers = (e->flags & AOI_MARKER) ? e->layers : 0;
    it->entry.slot = i;
    it->entry.radius = e->radius;
    it->entry.interest = (e->flags & AOI_WATCHER) ? e->interest : 0;
    uint32_t info = AOI__ENTRY_OWNED;
    if (e->flags & AOI_MARKER) {
      info |= AOI__ENTRY_MARKER;
      if (e->flags & AOI__ENTITY_APPEAL)
        info |= AOI__ENTRY_APPEAL;
      if (e->flags & AOI__ENTITY_MOVED) /* set by apply */
        info |= AOI__ENTRY_MOVED;
    }
    if (e->flags & AOI_WATCHER)
      info |= AOI__ENTRY_WATCHER | (e->cap > 0 ? AOI__ENTRY_CAPPED : 0);
    if (e->changed == aoi__stamp(src->tick))
      info |= AOI__ENTRY_CHANGED;
    if (e->stale)
      info |= AOI__ENTRY_STALE;
    it->entry.info = info;
    return;
  }
  i -= s->count;
  const aoi__ghost *g =
      i < src->ghosts ? &s->ghosts[i] : &s->departed[i - src->ghosts];
  it->x = g->x;
  it->y = g->y;
  it->entry.id = g->id;
  it->entry.handle = g->handle;
  it->entry.layers = g->layers;
  it->entry.slot = AOI__NONE;
  it->entry.radius = 0;
  it->entry.interest = 0;
  uint32_t info = (g->kind & AOI__GHOST_DEPARTED) ? AOI__ENTRY_DEPARTED
                  : (g->kind & AOI__GHOST_CHANGED)
                      ? AOI__ENTRY_MARKER | AOI__ENTRY_CHANGED
                      : AOI__ENTRY_MARKER;
  if (g->kind & AOI__GHOST_MOVED)
    info |= AOI__ENTRY_MOVED;
  if (g->kind & AOI__GHOST_APPEAL)
    info |= AOI__ENTRY_APPEAL;
  it->entry.info = info;
}

/* Indexes the shard's entities, ghosts and departures in its grid: the
   ones its neighbours sent among its ghosts, and its own in place.
   Departures serve only the watchers that compute_changes may take
   (unchanged, and not stale); when the tick left none (`departures`,
   tick.c) or the shard owns no such watcher, they are left out, which
   halves an all-walking shard's grid. The source is kept for the fine
   grid. */
static int index_shard(aoi__worker *k, aoi__shard *s, double cell_size,
                       uint64_t tick, bool departures, shard_source *src)
{
  /* the owned entities' box and counts come from publish_ghosts' pass */
  uint32_t unchanged = departures ? s->unchanged : 0;
  double box[4];
  memcpy(box, s->box, sizeof(box));
  uint32_t ghosts = s->ghost_count;
  if (unchanged == 0 && s->ghost_markers < ghosts) {
    /* the markers first, in their order; the rest stay departures (the
       count is kept: what arrived sizes the ghost array) */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < ghosts; i++)
      if (!(s->ghosts[i].kind & AOI__GHOST_DEPARTED))
        s->ghosts[kept++] = s->ghosts[i];
    for (uint32_t i = kept; i < ghosts; i++)
      s->ghosts[i].kind = AOI__GHOST_DEPARTED;
    ghosts = kept;
  }
  *src = (shard_source){s, tick, ghosts, unchanged > 0};
  for (uint32_t i = 0; i < ghosts; i++)
    aoi__box_add(box, s->ghosts[i].x, s->ghosts[i].y);
  for (uint32_t i = 0; src->departures && i < s->departed_count; i++)
    aoi__box_add(box, s->departed[i].x, s->departed[i].y);
  uint32_t n = source_count(src);
  return aoi__grid_build_from(&k->world->allocator, &s->grid, n, cell_size,
                              aoi__grid_limit(n), shard_entry, src, box);
}

/* Two bits per handle, a byte each (compute.h), all clear between
   watchers: held by the view being computed (member), and, for a held
   marker the scan found, whether it moved. Membership is then one load
   from an array of a byte a handle. */
static int reserve_members(aoi__worker *k)
{
  uint32_t old = k->member_count;
  if (aoi__reserve(&k->world->allocator, (void **)&k->member,
                   &k->member_count, k->world->handle_count, 1) != 0)
    return AOI_ENOMEM;
  /* what was there is all clear; the new room is made so */
  if (k->member_count > old)
    memset(k->member + old, 0, k->member_count - old);
  return 0;
}

#ifdef __SSE2__
#include <emmintrin.h>
/* For each set of lanes (a 4-bit mask), the places of its set lanes, in
   order, first. */
static const uint32_t COMPRESS[16][4] __attribute__((aligned(16))) = {
    {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0},
    {2, 0, 0, 0}, {0, 2, 0, 0}, {1, 2, 0, 0}, {0, 1, 2, 0},
    {3, 0, 0, 0}, {0, 3, 0, 0}, {1, 3, 0, 0}, {0, 1, 3, 0},
    {2, 3, 0, 0}, {0, 2, 3, 0}, {1, 2, 3, 0}, {0, 1, 2, 3}};
/* and how many they are (a table: baseline x86-64 has no popcnt) */
static const uint8_t PASSED[16] = {0, 1, 1, 2, 1, 2, 2, 3,
                                   1, 2, 2, 3, 2, 3, 3, 4};
#endif

/* The entries of [begin, begin + n) within `reach` of (ax, ay), written to
   hits[]: their count (stored four at a time with SSE2, never past the
   n-th). Branch-free for circles, where about a third of a cell's entries
   pass, at random. */
static inline __attribute__((always_inline)) uint32_t
within_run(const aoi__shape *shape, const aoi__grid *g, uint32_t begin,
           uint32_t n, float ax, float ay, double reach, uint32_t *hits)
{
  uint32_t found = 0;
  if (shape->kind == AOI_SHAPE_CIRCLE) {
    const float *xs = g->x + begin, *ys = g->y + begin;
    double x = ax, y = ay, r2 = reach * reach;
    /* Two at a time in double lanes: the same operations, rounded the
       same way, as the scalar tail. */
    typedef double pair __attribute__((vector_size(16)));
    typedef int64_t pair_mask __attribute__((vector_size(16)));
    const pair px = {x, x}, py = {y, y}, pr = {r2, r2};
    uint32_t i = 0;
#ifdef __SSE2__
    /* Four at a time: two double lanes each half, and the entries that
       pass written by a table of their places (COMPRESS) */
    for (; i + 4 <= n; i += 4) {
      __m128 fx = _mm_loadu_ps(xs + i), fy = _mm_loadu_ps(ys + i);
      __m128d dx0 = _mm_sub_pd(_mm_cvtps_pd(fx), px);
      __m128d dx1 = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(fx, fx)), px);
      __m128d dy0 = _mm_sub_pd(_mm_cvtps_pd(fy), py);
      __m128d dy1 = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(fy, fy)), py);
      __m128d d0 = _mm_add_pd(_mm_mul_pd(dx0, dx0), _mm_mul_pd(dy0, dy0));
      __m128d d1 = _mm_add_pd(_mm_mul_pd(dx1, dx1), _mm_mul_pd(dy1, dy1));
      unsigned in = (unsigned)_mm_movemask_pd(_mm_cmple_pd(d0, pr)) |
                    (unsigned)_mm_movemask_pd(_mm_cmple_pd(d1, pr)) << 2;
      __m128i at = _mm_add_epi32(_mm_set1_epi32((int)(begin + i)),
                                 _mm_load_si128((const __m128i *)COMPRESS[in]));
      _mm_storeu_si128((__m128i *)(hits + found), at);
      found += PASSED[in];
    }
#endif
    for (; i + 2 <= n; i += 2) {
      pair dx = (pair){xs[i], xs[i + 1]} - px;
      pair dy = (pair){ys[i], ys[i + 1]} - py;
      pair_mask in = dx * dx + dy * dy <= pr; /* -1 or 0 per lane */
      hits[found] = begin + i;
      found -= (uint32_t)in[0];
      hits[found] = begin + i + 1;
      found -= (uint32_t)in[1];
    }
    for (; i < n; i++) {
      double dx = (double)xs[i] - x, dy = (double)ys[i] - y;
      hits[found] = begin + i;
      found += dx * dx + dy * dy <= r2;
    }
    return found;
  }
  for (uint32_t i = begin; i < begin + n; i++)
    if (aoi__within(shape, ax, ay, g->x[i], g->y[i], reach))
      hits[found++] = i;
  return found;
}

/* The plain path's pass over a block of hits (grid entries within the
   outer reach): each marker of interest that the view holds is met (its
   member bit cleared and its moved bit set if it moved, in one store:
   kept) and its id appended at *met; the others of interest are packed to
   the front of hits[], for the caller to judge as enters (the watcher
   itself among them). Returns
   their count. Entries that are no marker have no layers in the grid
   (shard_entry), so one test says both. A function of its own, with the
   arrays in registers: in scan_whole's frame they would be reloaded after
   every byte stored to the membership array, which may alias anything. */
static __attribute__((noinline)) uint32_t
meet_hits(const aoi__grid *g, uint8_t *member, uint32_t interest,
          uint32_t *hits, uint32_t found, uint64_t **met)
{
  const aoi__grid_entry *const entry = g->entry;
  uint64_t *out = *met;
  uint32_t fresh = 0;
  for (uint32_t f = 0; f < found; f++) {
    uint32_t i = hits[f];
    const aoi__grid_entry *en = &entry[i];
    if ((en->layers & interest) == 0)
      continue;
    uint8_t *bits = &member[en->handle];
    if (*bits & AOI__BIT_MEMBER) {
      /* the moved bit is clear: a held handle is met once a scan, and
         its moved bit is set only when it is met */
      *bits = (uint8_t)(en->info / (AOI__ENTRY_MOVED / AOI__BIT_MOVED) &
                        AOI__BIT_MOVED);
      *out++ = en->id;
      continue;
    }
    hits[fresh++] = i;
  }
  *met = out;
  return fresh;
}

/* ---- the four paths of a watcher ---------------------------------------- */

/* A watcher whose view cannot be computed from the grid (its shard missed a
   ghost or has no index): its leaves and moves come from the marks, which
   are exact; its enters wait for a tick that scans. */
static int compute_marks(aoi__worker *k, aoi__entity *e, uint64_t tick)
{
  aoi_world *w = k->world;
  aoi__view *view = &e->view;
  uint32_t v = view->count, *hs = view->handles;
  bool resync = (e->stale & AOI__STALE_RESYNC) != 0;
  uint32_t *rec = aoi__reserve_events(k, v);
  if (rec == NULL)
    return AOI_ENOMEM;
  if (aoi__reserve(&w->allocator, (void **)&k->hits, &k->hit_capacity, v + 1,
                   sizeof(uint32_t)) != 0)
    return AOI_ENOMEM;
  const aoi__mark *mark = w->mark;
  double radius = e->radius, hysteresis = w->config.hysteresis;
  bool move_events = w->config.move_events != 0;
  float *told = aoi__view_told(view, aoi__bands(w));
  unsigned allowed = told ? aoi__bands_allowed(w, e->id, tick) : 0;
  bool lagging = false;
  uint32_t *leaves = rec + AOI__RECORD_HEADER, *moves = k->hits;
  uint32_t nl = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    const aoi__mark *m = &mark[h];
    double outer = fmax(radius, w->appeal[h]) + hysteresis;
    if ((m->layers & e->interest) == 0 ||
        !aoi__within(&w->shape, e->x, e->y, m->x, m->y, outer)) {
      leaves[nl++] = h;
      continue;
    }
    if (told != NULL) {
      float tx = told[2 * i], ty = told[2 * i + 1];
      told[2 * kept] = tx;
      told[2 * kept + 1] = ty;
      switch (aoi__tell_move(w, e, m, tx, ty, allowed)) {
      case AOI__TELL_NOW:
        moves[nm++] = h;
        told[2 * kept] = m->x;
        told[2 * kept + 1] = m->y;
        break;
      case AOI__TELL_LATER:
        lagging = true;
        break;
      default:
        break;
      }
    } else if (move_events && (resync || m->moved == aoi__stamp(tick))) {
      moves[nm++] = h;
    }
    hs[kept++] = h;
  }
  if (nm > 0)
    memcpy(leaves + nl, moves, sizeof(uint32_t) * nm);
  view->count = kept;
  aoi__commit_events(k, e, nl, 0, nm);
  e->stale = AOI__STALE_WHOLE | (lagging ? AOI__STALE_POLICY : 0);
  k->lagging += lagging;
  return 0;
}

/* A held marker met at (x, y), `moved` if its position changed this tick
   (at a grid entry, by its appeal, or at its mark): kept. Without bands
   it is told if it moved; with them (told: the view's told
   positions, k->told_at: each handle's place in the view) if it is
   elsewhere than last told and its band allows this tick, else it lags.
   A told position is noted in k->tells (room for the whole view), to be
   written once the events are stored. */
static inline void meet_member(aoi__worker *k, const aoi__entity *e,
                               float x, float y, bool moved, uint32_t h,
                               const float *told, uint32_t *ntells,
                               unsigned allowed, bool *lagging)
{
  aoi__clear_member(k, h);
  if (told == NULL) {
    if (moved)
      aoi__set_moved(k, h);
    return;
  }
  uint32_t at = k->told_at[h];
  switch (aoi__tell_move_at(k->world, e, x, y, told[2 * at],
                            told[2 * at + 1], allowed)) {
  case AOI__TELL_NOW: {
    aoi__set_moved(k, h);
    uint32_t *t = &k->tells[3 * (*ntells)++];
    t[0] = at;
    memcpy(&t[1], &x, sizeof(float));
    memcpy(&t[2], &y, sizeof(float));
    break;
  }
  case AOI__TELL_LATER:
    *lagging = true;
    break;
  default:
    break;
  }
}

/* The end of a watcher's scan, from what its gather left: the view's
   held markers met (their member bits cleared, moved bits set where told;
   on the plain path their ids in k->met, `nmet` of them), the others'
   bits still set (they leave), and `n` enters in k->candidates (none
   stored when `complete` is false). Writes the record and the new view.
   `far`: it saw a marker by its appeal; `lagging`: a band held a move
   back; `ntells`: the told positions noted in k->tells (bands). */
static inline __attribute__((always_inline)) int
scan_finish(aoi__worker *k, aoi__entity *e, uint32_t n, uint32_t nmet,
            bool complete, bool far, bool lagging, uint32_t ntells,
            const bool policy)
{
  aoi_world *w = k->world;
  aoi__view *view = &e->view;
  uint32_t v = view->count;
  const uint32_t *held = view->handles;
  bool bands = policy && aoi__bands(w);
  uint8_t *const member = k->member;
  uint64_t *met = k->met;
  /* Without bands a resync tells every kept marker; with them the told
     positions say exactly what each client lacks. */
  bool resync = !bands && (e->stale & AOI__STALE_RESYNC) != 0;
  uint32_t later = (far || lagging) ? AOI__STALE_POLICY : 0;
  if (!complete)
    n = 0;
  uint32_t *rec = NULL;
  /* With an empty view, the enters are the new view: the record says so
     and stores none (AOI__RECORD_VIEW). */
  bool by_view = v == 0 && n > 0;
  if (v + n > 0 &&
      ((rec = aoi__reserve_events(k, by_view ? 0 : v + n)) == NULL ||
       aoi__reserve(&w->allocator, (void **)&k->hits, &k->hit_capacity,
                    v + 1, sizeof(uint32_t)) != 0)) {
    /* keep the view, and the positions it was told; the bits go back to
       clear */
    aoi__clear_view_bits(k, held, v);
    return AOI_ENOMEM;
  }
  if (n > 0 &&
      aoi__view_reserve_k(k, view, v + n, bands) != 0) {
    complete = false;
    n = 0;
  }
  uint32_t *hs = view->handles; /* may have moved */
  if (bands) {
    float *now = aoi__view_told(view, true);
    for (uint32_t j = 0; j < ntells; j++) {
      const uint32_t *t = &k->tells[3 * j];
      memcpy(&now[2 * t[0]], &t[1], sizeof(float));
      memcpy(&now[2 * t[0] + 1], &t[2], sizeof(float));
    }
  }
  float *told_now = bands ? aoi__view_told(view, true) : NULL;
  bool move_events = w->config.move_events != 0;
  if (v + n == 0) {
    k->view_n++;
    if (!complete)
      aoi__fail(k, AOI_ENOMEM); /* its enters come next tick */
    e->stale = complete ? 0 : AOI__STALE_WHOLE;
    return 0;
  }
  uint32_t *out = rec + AOI__RECORD_HEADER, *moves = k->hits;
  uint32_t nl = 0, nm = 0, kept = 0;
  if (!policy && nmet == v) { /* every held marker met: none leaves */
    for (uint32_t i = 0; i < v; i++) {
      uint32_t h = hs[i];
      unsigned bits = member[h];
      member[h] = 0;
      moves[nm] = h;
      nm += ((bits >> 1) | (unsigned)resync) & (unsigned)move_events;
    }
    kept = v;
  }
  /* (the general walk, from kept: nothing left after the one above; an
     if-else compiles to more mispredicted branches) */
  for (uint32_t i = kept; i < v; i++) {
    uint32_t h = hs[i];
    unsigned bits = member[h];
    member[h] = 0;
    if (bits & AOI__BIT_MEMBER) { /* not met: it leaves */
      out[nl++] = h;
      continue;
    }
    moves[nm] = h; /* counted if told: most of a walking crowd's are */
    nm += ((bits >> 1) | (unsigned)resync) & (unsigned)move_events;
    if (bands) {
      told_now[2 * kept] = told_now[2 * i];
      told_now[2 * kept + 1] = told_now[2 * i + 1];
    }
    hs[kept++] = h;
  }
  if (policy)
    aoi__view_enter(k, view, told_now, kept, n, by_view ? NULL : out + nl);
  else {
    AOI__ASSERT(nmet == kept);
    aoi__view_enter_met(k, view, kept, n, by_view ? NULL : out + nl, met);
  }
  if (nl > 0)
    aoi__view_fit(k, view, bands);
  if (nm > 0)
    memcpy(out + nl + n, moves, sizeof(uint32_t) * nm);
  if (by_view && n > 0) /* (n is 0 when its enters wait) */
    aoi__commit_view_record(k, e->handle, n);
  else
    aoi__commit_events(k, e, nl, n, nm);
  k->view_sum += view->count;
  k->view_n++;
  if (policy)
    k->lagging += lagging;
  if (!complete) {
    aoi__fail(k, AOI_ENOMEM);
    e->stale = AOI__STALE_WHOLE | later; /* its enters come next tick */
    return 0;
  }
  e->stale = later;
  return 0;
}


/* The start of a watcher's scan (scan_whole, far_scan): the room it needs
   (told positions with move bands; on the plain path the ids of the
   markers it keeps, for its enters to find their places:
   aoi__view_enter_met), the member bit of every handle its view holds,
   and with bands each one's place in the view (k->told_at), its told
   positions (*told, else NULL) and the bands this tick allows. 0 or
   AOI_ENOMEM (then nothing changed). */
static inline __attribute__((always_inline)) int
scan_start(aoi__worker *k, const aoi__entity *e, uint64_t tick,
           const bool policy, const float **told, unsigned *allowed)
{
  aoi_world *w = k->world;
  const aoi__view *view = &e->view;
  uint32_t v = view->count;
  const uint32_t *held = view->handles;
  bool bands = policy && aoi__bands(w);
  *told = bands ? aoi__view_told(view, true) : NULL;
  *allowed = bands ? aoi__bands_allowed(w, e->id, tick) : 0;
  if (bands && aoi__reserve(&w->allocator, (void **)&k->tells,
                            &k->tell_capacity, 3 * v + 3,
                            sizeof(uint32_t)) != 0)
    return AOI_ENOMEM;
  if (!policy && aoi__reserve(&w->allocator, (void **)&k->met,
                              &k->met_capacity, v + 1,
                              sizeof(uint64_t)) != 0)
    return AOI_ENOMEM;
  uint8_t *const member = k->member;
  AOI__ASSERT(k->member_count >= w->handle_count);
  for (uint32_t i = 0; i < v; i++) /* (all clear: a store, no load) */
    member[held[i]] = AOI__BIT_MEMBER;
  if (bands)
    for (uint32_t i = 0; i < v; i++)
      k->told_at[held[i]] = i;
  return 0;
}

/* Computes one watcher's events and new view from a scan of the grid.
   Every marker of interest within its outer reach (radius plus hysteresis)
   is met once: one its view holds is kept (and told if it moved), one it
   does not hold enters if it lies within the radius itself. What the view
   holds and the scan did not meet leaves. Leaves and moves come out in the
   view's order (by id), the enters are sorted. Returns 0 or AOI_ENOMEM:
   when the record cannot be stored the watcher keeps its view and gets no
   event (a resync next tick); when only its enters cannot be stored, they
   wait for the next tick (and the worker reports AOI_ENOMEM).

   With `policy` (a constant: compute_whole and compute_policy are two
   copies), it also takes the markers that reach it by their appeal
   (`appeals`, from aoi__find_appeals) and leaves those to the list in its
   own scan, and with move bands tells each kept marker as its band allows.
   Without, it is the plain path, which no policy slows. */
static inline __attribute__((always_inline)) int
scan_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
           const uint32_t *appeals, uint32_t nappeals, bool any_appeal,
           uint64_t tick, const bool policy)
{
  aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  const float *told;
  unsigned allowed;
  if (scan_start(k, e, tick, policy, &told, &allowed) != 0)
    return AOI_ENOMEM;
  uint32_t ntells = 0;
  uint64_t *met = k->met;
  uint32_t nmet = 0;
  /* (from a local: a byte stored there may alias anything, and k->member
     would be reloaded after each) */
  uint8_t *const member = k->member;

  double inner = e->radius, outer = inner + w->config.hysteresis;
  bool hysteresis = outer != inner, lagging = false, far = false;
  uint32_t interest = e->interest, self = e->handle;
  double box[4];
  uint32_t r[4], n = 0;
  bool complete = true;
  aoi__reach_box(shape, e->x, e->y, outer, box);
  aoi__grid_range(g, box, r);
  /* The hits of all the rows in one list (a block at a time when they are
     many), so that one loop takes them: a loop a row would end, and
     mispredict, once a row. */
  enum { BLOCK = 256 };
  uint32_t hits[BLOCK];
  uint32_t cy = r[1];
  uint32_t at = aoi__grid_row_begin(g, cy, r[0]);
  uint32_t end = aoi__grid_row_end(g, cy, r[2]);
  for (;;) {
    uint32_t found = 0;
    for (;;) {
      if (at == end) {
        if (++cy > r[3])
          break;
        at = aoi__grid_row_begin(g, cy, r[0]);
        end = aoi__grid_row_end(g, cy, r[2]);
        continue;
      }
      if (found == BLOCK)
        break;
      uint32_t len = end - at < BLOCK - found ? end - at : BLOCK - found;
      found += within_run(shape, g, at, len, e->x, e->y, outer, hits + found);
      at += len;
    }
    if (!policy) { /* held ones met, the rest packed to the front */
      uint64_t *to = met + nmet;
      found = meet_hits(g, member, interest, hits, found, &to);
      nmet = (uint32_t)(to - met);
    }
    for (uint32_t f = 0; f < found; f++) {
      uint32_t i = hits[f];
      uint32_t h = g->entry[i].handle;
      if (h == self)
        continue;
      if (policy) { /* (meet_hits has judged these on the plain path) */
        if (!(g->entry[i].info & AOI__ENTRY_MARKER) ||
            (g->entry[i].layers & interest) == 0)
          continue;
        /* one whose appeal reaches further is on the appeal list */
        if (any_appeal && (g->entry[i].info & AOI__ENTRY_APPEAL) &&
            w->appeal[h] > e->radius)
          continue;
        if (aoi__is_member(k, h)) {
          meet_member(k, e, g->x[i], g->y[i],
                      (g->entry[i].info & AOI__ENTRY_MOVED) != 0, h, told,
                      &ntells, allowed, &lagging);
          continue;
        }
      }
      if (hysteresis &&
          !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner))
        continue;
      if (!complete || !aoi__reserve_candidate(k, n)) {
        complete = false;
        continue;
      }
      k->candidates[n++] = (aoi__candidate){g->entry[i].id, h};
    }
    if (cy > r[3])
      break;
  }
  for (uint32_t j = 0; policy && j < nappeals; j++) {
    uint32_t i = appeals[j], h = g->entry[i].handle;
    if ((g->entry[i].layers & interest) == 0)
      continue;
    double base = w->appeal[h];
    if (aoi__is_member(k, h)) {
      if (aoi__within(shape, e->x, e->y, g->x[i], g->y[i],
                      base + w->config.hysteresis)) {
        meet_member(k, e, g->x[i], g->y[i],
                    (g->entry[i].info & AOI__ENTRY_MOVED) != 0, h, told,
                    &ntells, allowed, &lagging);
        far = true;
      }
      continue;
    }
    if (!aoi__within(shape, e->x, e->y, g->x[i], g->y[i], base))
      continue;
    far = true;
    if (!complete || !aoi__reserve_candidate(k, n)) {
      complete = false;
      continue;
    }
    k->candidates[n++] = (aoi__candidate){g->entry[i].id, h};
  }
  return scan_finish(k, e, n, nmet, complete, far, lagging, ntells, policy);
}

static int compute_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                         uint64_t tick)
{
  return scan_whole(k, e, g, NULL, 0, false, tick, false);
}

/* A far-sighted watcher (aoi__far_sighted): scan_whole, with a pass over
   every handle's mark in place of a scan of its shard's grid, which holds
   no ghosts for it (exchange.c). The marks are this tick's: the apply
   step wrote them, and nothing writes them in this step. A mark's layers
   are 0 unless it is a live marker. With `policy` (a world with appeals
   or move bands), a marker whose appeal is above the radius is seen
   within its appeal (and the watcher is stale for the policy, as
   scan_whole has it), and a kept one is told as its band allows. */
static inline __attribute__((always_inline)) int
far_scan(aoi__worker *k, aoi__entity *e, uint64_t tick, const bool policy)
{
  aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  const float *told;
  unsigned allowed;
  if (scan_start(k, e, tick, policy, &told, &allowed) != 0)
    return AOI_ENOMEM;
  uint32_t ntells = 0;
  uint8_t *const member = k->member;
  double radius = e->radius, hysteresis = w->config.hysteresis;
  bool complete = true, far = false, lagging = false;
  uint32_t interest = e->interest, self = e->handle, now = aoi__stamp(tick);
  uint32_t nmet = 0, n = 0;
  uint64_t *met = k->met;
  const aoi__mark *mark = w->mark;
  const float *appeal = w->appeal;
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__mark *m = &mark[h];
    if ((m->layers & interest) == 0)
      continue;
    /* seen within its appeal where that is the farther */
    bool by_appeal = policy && appeal[h] > radius;
    double inner = by_appeal ? appeal[h] : radius, outer = inner + hysteresis;
    if (!aoi__within(shape, e->x, e->y, m->x, m->y, outer))
      continue;
    if (member[h] & AOI__BIT_MEMBER) { /* kept, and told if it moved */
      if (policy) {
        meet_member(k, e, m->x, m->y, m->moved == now, h, told, &ntells,
                    allowed, &lagging);
      } else {
        member[h] = m->moved == now ? AOI__BIT_MOVED : 0;
        met[nmet++] = m->id;
      }
      far |= by_appeal;
      continue;
    }
    if (h == self || (outer != inner &&
                      !aoi__within(shape, e->x, e->y, m->x, m->y, inner)))
      continue;
    far |= by_appeal;
    if (!complete || !aoi__reserve_candidate(k, n)) {
      complete = false;
      continue;
    }
    k->candidates[n++] = (aoi__candidate){m->id, h};
  }
  return scan_finish(k, e, n, nmet, complete, far, lagging, ntells, policy);
}

static int compute_far(aoi__worker *k, aoi__entity *e, uint64_t tick)
{
  const aoi_world *w = k->world;
  if (w->command.appeals || aoi__bands(w))
    return far_scan(k, e, tick, true);
  return far_scan(k, e, tick, false);
}

/* A watcher that sees some marker by its appeal, or under move bands,
   without a cap. */
static int compute_policy(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                          const uint32_t *appeals, uint32_t nappeals,
                          bool any_appeal, uint64_t tick)
{
  return scan_whole(k, e, g, appeals, nappeals, any_appeal, tick, true);
}

/* Computes the events of a watcher that did not change this tick and whose
   view the last tick computed: only markers that changed can enter, leave
   or move, and each one that the view holds stood within the watcher's
   reach at the end of the last tick, so it is in the grid near the watcher
   as a changed marker or as a departure. The view's handles get their
   membership bit; each changed one met is marked in the second bit
   (a move keeps its membership bit, a leave loses it), and one walk of the
   view then writes the leaves and moves in id order. Cost follows change:
   a watcher with nothing changed near it is not computed at all, and one
   with a few changes reads its view and a few cells. Returns 0 or
   AOI_ENOMEM (then nothing changed). */
static int compute_changes(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                           uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__shape *shape = &w->shape;
  const aoi__mark *mark = w->mark;
  aoi__view *view = &e->view;
  const uint32_t *held = view->handles;
  uint32_t v = view->count;
  for (uint32_t i = 0; i < v; i++)
    aoi__set_member(k, held[i]);
  double inner = e->radius, outer = inner + w->config.hysteresis;
  bool move_events = w->config.move_events != 0;
  double box[4];
  uint32_t r[4], n = 0, nh = 0, nl = 0;
  aoi__reach_box(shape, e->x, e->y, outer, box);
  aoi__grid_range(g, box, r);
  uint32_t departed = AOI__GRID_CLASSES * g->width * g->height;
  for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
    const uint32_t row_range[4] = {r[0], cy, r[2], cy};
    if (aoi__grid_dirty(g, row_range) == 0) /* nothing changed there */
      continue;
    uint32_t row = cy * g->width;
    /* each cell's changed markers, then the row's departures, which lie
       together */
    for (uint32_t cx = r[0]; cx <= r[2] + 1; cx++) {
      int pass = cx > r[2];
      uint32_t from = pass == 0 ? AOI__GRID_CLASSES * (row + cx)
                                : departed + row + r[0];
      uint32_t to = pass == 0 ? g->start[from + 1]
                              : g->start[departed + row + r[2] + 1];
      for (uint32_t i = g->start[from]; i < to; i++) {
        /* Where a held marker stood is within reach, so a changed
           marker out of reach is no enter and, if held, has moved and
           left a departure in reach. */
        if (!aoi__within(shape, e->x, e->y, g->x[i], g->y[i], outer))
          continue;
        uint32_t h = g->entry[i].handle;
        if (h == e->handle || aoi__take_moved(k, h)) {
          if (h != e->handle)
            aoi__set_moved(k, h); /* met before: a hit is taken once */
          continue;
        }
        if (aoi__is_member(k, h)) {
          /* held: it leaves or moves */
          const aoi__mark *m = &mark[h];
          if ((m->layers & e->interest) == 0 ||
              !aoi__within(shape, e->x, e->y, m->x, m->y, outer)) {
            aoi__clear_member(k, h);
            nl++;
          } else if (!move_events || m->moved != aoi__stamp(tick)) {
            continue;
          }
          aoi__set_moved(k, h);
          nh++;
          continue;
        }
        /* not held: a changed marker (each is listed once) may enter */
        if (pass != 0 || (g->entry[i].layers & e->interest) == 0 ||
            !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner))
          continue;
        if (!aoi__reserve_candidate(k, n)) {
          aoi__clear_view_bits(k, held, v);
          return AOI_ENOMEM;
        }
        k->candidates[n++] = (aoi__candidate){g->entry[i].id, h};
      }
    }
  }
  if (nh + n == 0) {
    aoi__clear_view_bits(k, held, v);
    return 0;
  }
  uint32_t *rec = aoi__reserve_events(k, nh + n);
  if (rec == NULL ||
      aoi__view_reserve_k(k, view, v - nl + n, false) != 0 ||
      aoi__reserve(a, (void **)&k->hits, &k->hit_capacity, nh + 1,
                   sizeof(uint32_t)) != 0) {
    aoi__clear_view_bits(k, view->handles, v);
    return AOI_ENOMEM;
  }
  AOI__STRESS();
  uint32_t *hs = view->handles, *moves = k->hits;
  uint32_t *out = rec + AOI__RECORD_HEADER;
  uint32_t ql = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    unsigned bits = aoi__take_bits(k, h);
    bool member = bits & AOI__BIT_MEMBER, hit = bits & AOI__BIT_MOVED;
    if (hit && !member) {
      out[ql++] = h;
      continue;
    }
    if (hit)
      moves[nm++] = h;
    hs[kept++] = h;
  }
  aoi__view_enter(k, view, NULL, kept, n, out + nl);
  if (nl > 0)
    aoi__view_fit(k, view, false);
  if (nm > 0)
    memcpy(out + nl + n, moves, sizeof(uint32_t) * nm);
  aoi__commit_events(k, e, nl, n, nm);
  return 0;
}

/* Computes one watcher by the path that fits it: compute_marks without a
   grid; aoi__compute_capped for a capped one; compute_policy for one that
   sees a marker by its appeal (now or at the last tick) or is told by move
   bands; else compute_whole or compute_changes, which no policy touches.
   `dirty` is the number of changed markers and departures within its
   reach, or UINT32_MAX for a watcher that changed or missed a tick (the
   grid's flags say so): where most of what it sees changed (a spectator
   over a walking crowd), one scan is cheaper than a probe per change. A
   watcher whose record cannot be stored keeps its view and is resynced by
   its next compute; one whose enters wait is scanned whole next tick. */
static void compute_watcher(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                            const aoi__grid *fine, uint32_t dirty,
                            uint32_t slot, bool appeals, uint64_t tick)
{
  const uint32_t *listed = NULL;
  uint32_t nlisted = 0;
  if (appeals && g != NULL) {
    listed = k->appeal + k->appeal_start[slot];
    nlisted = k->appeal_start[slot + 1] - k->appeal_start[slot];
  }
  int rc;
  if (g == NULL)
    rc = compute_marks(k, e, tick);
  else if (aoi__far_sighted(k->world, e->radius))
    rc = e->cap > 0 ? aoi__compute_capped_far(k, e, tick)
                    : compute_far(k, e, tick);
  else if (e->cap > 0)
    rc = aoi__compute_capped(k, e, g, fine, listed, nlisted, appeals, tick);
  else if (nlisted > 0 || (e->stale & AOI__STALE_POLICY) ||
           aoi__bands(k->world))
    rc = compute_policy(k, e, g, listed, nlisted, appeals, tick);
  else if (dirty > e->view.count / 2 + 16)
    rc = compute_whole(k, e, g, tick);
  else
    rc = compute_changes(k, e, g, tick);
  if (rc != 0) {
    aoi__fail(k, rc);
    e->stale |= AOI__STALE_WHOLE | AOI__STALE_RESYNC;
  }
}

/* The changed markers and departures in the cells of a reach. */
static uint32_t dirty_in_reach(const aoi__worker *k, const aoi__grid *g,
                               float x, float y, double reach)
{
  double box[4];
  uint32_t r[4];
  aoi__reach_box(&k->world->shape, x, y, reach, box);
  aoi__grid_range(g, box, r);
  return aoi__grid_dirty(g, r);
}

/* The quiet watchers: from the changes (push.c). One that most of what it
   sees changed (a standing spectator over a walking crowd) is computed
   whole instead; and where the changes would make more than a few events
   each (most of the crowd moved), or their events cannot be stored, each
   is listed as any other watcher would be. */
static void compute_quiet(aoi__worker *k, aoi__shard *s, const aoi__grid *g,
                          const aoi__grid *fine, bool appeals, double reach,
                          uint64_t tick)
{
  const aoi__quiet *quiet = k->quiet;
  uint32_t nq = k->quiet_count;
  /* A moved marker leaves a departure and a changed entry: about half the
     dirty entries are changes, each seen by about a mean view of
     watchers. Where that is more than the limit, do not try. */
  const uint32_t all[4] = {0, 0, g->width - 1, g->height - 1};
  uint64_t views = k->view_n + k->last_view_n;
  uint64_t mean = views > 0 ? (k->view_sum + k->last_view_sum) / views : 0;
  bool many = !aoi__pushes_pay(aoi__grid_dirty(g, all) / 2, mean, nq);
  if (many || aoi__push_collect(k, s, g, tick, reach) != 0) {
    double hysteresis = k->world->config.hysteresis;
    for (uint32_t q = 0; q < nq; q++) {
      aoi__entity *e = &s->entities[quiet[q].slot];
      uint32_t dirty = dirty_in_reach(k, g, e->x, e->y,
                                      (double)e->radius + hysteresis);
      if (dirty > 0)
        compute_watcher(k, e, g, fine, dirty, quiet[q].slot, appeals, tick);
    }
    return;
  }
  /* Moves alone (most watchers) are written from the pushes; the rest
     read their views, their entities fetched ahead (they are scattered).
     The work list is done: its room holds the rest. */
  uint32_t *rest = (uint32_t *)k->work;
  uint32_t nr = aoi__push_moves(k, rest);
  const uint32_t *start = k->push_start;
  for (uint32_t r = 0; r < nr; r++) {
    if (r + 16 < nr)
      __builtin_prefetch(&s->entities[quiet[rest[r + 16]].slot]);
    if (r + 10 < nr)
      aoi__push_prefetch(k, &s->entities[quiet[rest[r + 10]].slot],
                         rest[r + 10], false);
    if (r + 5 < nr)
      aoi__push_prefetch(k, &s->entities[quiet[rest[r + 5]].slot],
                         rest[r + 5], true);
    uint32_t q = rest[r], n = start[q + 1] - start[q];
    aoi__entity *e = &s->entities[quiet[q].slot];
    if (n > AOI__PUSH_MOVES_MAX && n > e->view.count / 2 + 16) {
      compute_watcher(k, e, g, fine, UINT32_MAX, quiet[q].slot, appeals,
                      tick);
      continue;
    }
    int rc = aoi__push_finish(k, e, quiet[q].handle, k->pushed + start[q], n);
    if (rc != 0) {
      aoi__fail(k, rc);
      e->stale |= AOI__STALE_WHOLE | AOI__STALE_RESYNC;
    }
  }
}

/* ---- a shard ------------------------------------------------------------ */

/* Every owned watcher of a shard that cannot scan: leaves and moves from
   the marks, enters later. */
static void compute_from_marks(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  for (uint32_t i = 0; i < s->count; i++)
    if (s->entities[i].flags & AOI_WATCHER)
      compute_watcher(k, &s->entities[i], NULL, NULL, UINT32_MAX, i, false,
                      tick);
}

/* Puts the shard's owned entities in the order of its grid (by cell), so
   that the passes that follow the grid read them about in order: the work
   list, the quiet watchers, and the next builds' scatter. In place, by the
   permutation's cycles; the grid's slots and the locations follow. The
   host's records then meet the entities out of order (apply fetches
   ahead); at 100k walkers and 1 thread that costs about 2 ms and saves
   about 5 (README). */
#define AOI__ORDER_PERIOD 8u
static void order_entities(aoi__worker *k, aoi__shard *s, aoi__grid *g)
{
  uint32_t n = s->count;
  uint32_t *to = g->cell; /* free after the build: new slot by old */
  uint32_t next = 0;
  uint32_t end = aoi__grid_row_end(g, g->height - 1, g->width - 1);
  for (uint32_t i = 0; i < end; i++) {
    uint32_t slot = g->entry[i].slot;
    if (slot == AOI__NONE)
      continue;
    g->entry[i].slot = next;
    to[slot] = next++;
  }
  AOI__ASSERT(next == n);
  aoi__entity *es = s->entities;
  for (uint32_t i = 0; i < n; i++)
    while (to[i] != i) {
      uint32_t j = to[i];
      aoi__entity e = es[j];
      es[j] = es[i];
      es[i] = e;
      to[i] = to[j];
      to[j] = j;
    }
  aoi__location *location = k->world->location;
  for (uint32_t i = 0; i < n; i++)
    location[es[i].handle].slot = i;
}

/* Fetches ahead the first lines of each grid row within `reach` of
   (x, y): a watcher of a sparse work list finds them cold (its neighbours
   in the list stand cells away), and the hardware follows a row once it
   has begun. */
static void prefetch_reach(const aoi__worker *k, const aoi__grid *g, float x,
                           float y, double reach)
{
  double box[4];
  uint32_t r[4];
  aoi__reach_box(&k->world->shape, x, y, reach, box);
  aoi__grid_range(g, box, r);
  for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
    uint32_t at = aoi__grid_row_begin(g, cy, r[0]);
    __builtin_prefetch(&g->x[at]);
    __builtin_prefetch(&g->y[at]);
    __builtin_prefetch(&g->entry[at]);
    __builtin_prefetch((const char *)&g->entry[at] + AOI__LINE);
  }
}

void aoi__compute_shard(aoi__worker *k, aoi__shard *s,
                        const aoi__tick_command *cmd)
{
  AOI__ASSERT(aoi__worker_of(k->world, s->index) == k->index);
  uint64_t started = aoi__now_ns();
  shard_source src;
  int rc = index_shard(k, s, cmd->cell_size, cmd->tick, cmd->departures,
                       &src);
  if (rc != 0) {
    /* No index: queries see this shard as empty until the next tick. */
    aoi__fail(k, rc);
    s->grid.count = 0;
    s->grid.width = s->grid.height = 0;
    compute_from_marks(k, s, cmd->tick);
    return;
  }
  const aoi__grid *g = &s->grid;
  if (s->degraded) {
    compute_from_marks(k, s, cmd->tick); /* indexed for queries */
    return;
  }
  /* once in AOI__ORDER_PERIOD ticks, a shard's in turn: a walking crowd
     drifts out of order slowly */
  if (s->grid.width > 0 && (cmd->tick + s->index) % AOI__ORDER_PERIOD == 0)
    order_entities(k, s, &s->grid);
  bool appeals = cmd->appeals;
  /* Capped watchers look for their nearest in a grid of cells about as
     small as the entries are dense (its cells are bounded by the entries,
     as the main grid's), built only where there are capped watchers. */
  const aoi__grid *fine = NULL;
  if (s->capped == 0) {
    if (s->fine.capacity > 0)
      aoi__grid_free(&k->world->allocator, &s->fine);
  } else {
    uint32_t n = source_count(&src);
    if (aoi__grid_build_from(&k->world->allocator, &s->fine, n, 1e-30,
                             aoi__grid_dense_limit(n, 3), shard_entry,
                             &src, NULL) == 0)
      fine = &s->fine;
  } /* else: they scan their reach */
  if ((rc = reserve_members(k)) != 0 ||
      (aoi__bands(k->world) &&
       (rc = aoi__reserve(&k->world->allocator, (void **)&k->told_at,
                          &k->told_at_capacity, k->world->handle_count + 1,
                          sizeof(uint32_t))) != 0) ||
      (rc = aoi__reserve(&k->world->allocator, (void **)&k->work,
                         &k->work_capacity, s->count + 1,
                         sizeof(uint64_t))) != 0 ||
      (appeals && (rc = aoi__find_appeals(k, s)) != 0)) {
    aoi__fail(k, rc);
    compute_from_marks(k, s, cmd->tick);
    return;
  }
  /* The watchers with work: those that changed or missed a tick, and those
     with a changed marker or a departure within their own reach. The
     others keep their views untouched: nothing they see changed. Each is
     listed by its slot, with the number of changes in its reach
     (UINT32_MAX: computed whole anyway), which compute_watcher reuses.
     Without departures (too few unchanged watchers for them to pay,
     tick.c), an unchanged watcher cannot know what left its reach: it is
     computed whole too. */
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  uint64_t *work = k->work;
  uint32_t nw = 0;
  uint32_t end = g->width == 0 ? 0 : aoi__grid_row_end(g, g->height - 1,
                                                        g->width - 1);
  double hysteresis = k->world->config.hysteresis;
  /* Quiet watchers (push.c): unchanged ones with no policy and about the
     usual reach are computed from the changes around them, not listed. */
  aoi__grid *mg = &s->grid;
  bool push = src.departures && !aoi__bands(k->world) &&
              aoi__reserve(&k->world->allocator, (void **)&k->quiet,
                           &k->quiet_capacity, s->count + 1,
                           sizeof(aoi__quiet)) == 0;
  double push_limit = 2 * cmd->usual_reach, quiet_reach = 0;
  k->quiet_count = 0;
  for (uint32_t i = 0; i < end; i++) {
    uint32_t info = g->entry[i].info;
    if ((info & want) != want)
      continue;
    uint32_t dirty = UINT32_MAX;
    /* a far-sighted one scans every tick: its changes are not all here */
    bool far = aoi__reaches(g->entry[i].radius, hysteresis, cmd->far_reach);
    if (!far && !(info & (AOI__ENTRY_CHANGED | AOI__ENTRY_STALE)) &&
        src.departures) {
      uint32_t slot = g->entry[i].slot;
      double reach = (double)g->entry[i].radius + hysteresis;
      bool listed =
          appeals && k->appeal_start[slot + 1] != k->appeal_start[slot];
      if (push && !listed && !(info & AOI__ENTRY_CAPPED) &&
          reach <= push_limit) {
        mg->entry[i].info |= AOI__ENTRY_QUIET;
        mg->cell[i] = k->quiet_count;
        k->quiet[k->quiet_count++] = (aoi__quiet){slot, g->entry[i].handle};
        quiet_reach = reach > quiet_reach ? reach : quiet_reach;
        continue;
      }
      if ((dirty = dirty_in_reach(k, g, g->x[i], g->y[i], reach)) == 0 &&
          !listed)
        continue;
    }
    work[nw++] = (uint64_t)dirty << 32 | g->entry[i].slot;
  }
  /* a sparse list (a few walkers in a standing crowd): the rows of each
     one's reach are cold */
  bool sparse = (uint64_t)nw * 4 < s->count;
  for (uint32_t j = 0; j < nw; j++) {
    /* Views and entities are scattered: fetch ahead. */
    if (j + 8 < nw) /* a line, with its view */
      __builtin_prefetch(&s->entities[(uint32_t)work[j + 8]]);
    if (sparse && j + 6 < nw) {
      const aoi__entity *ahead = &s->entities[(uint32_t)work[j + 6]];
      prefetch_reach(k, g, ahead->x, ahead->y,
                     (double)ahead->radius + hysteresis);
    }
    if (j + 4 < nw) {
      const aoi__entity *ahead = &s->entities[(uint32_t)work[j + 4]];
      const char *hs = (const char *)ahead->view.handles;
      size_t n = ahead->view.count;
      for (size_t at = 0; at < sizeof(uint32_t) * n && at < 512; at += 64)
        __builtin_prefetch(hs + at);
    }
    compute_watcher(k, &s->entities[(uint32_t)work[j]], g, fine,
                    (uint32_t)(work[j] >> 32), (uint32_t)work[j], appeals,
                    cmd->tick);
  }
  if (k->quiet_count > 0)
    compute_quiet(k, s, g, fine, appeals, quiet_reach, cmd->tick);
  s->compute_ns = aoi__now_ns() - started;
}
