/*
 * scan.c: the reach scan of the compute step (step 3), on the worker that
 * owns the watcher: its new view and its events from one pass over what
 * lies within its reach, in its shard's grid (index.c) or, for a
 * far-sighted one, in every handle's mark.
 *
 * A scan starts by setting the member bit of every handle its view holds
 * (scan_start). It then gathers the entries of its reach's grid rows, a
 * block at a time (gather_block, within_run), and meets each marker of
 * interest there once: one its view holds is kept, its moved bit set if
 * it moved (meet_hits, meet_member); one it does not hold enters if it
 * lies within the radius itself. One walk of the view then writes the
 * leaves (held, not met) and moves in the view's order (by id), the enters
 * are sorted and merged, and the record is stored (scan_finish).
 *
 *  - aoi__compute_whole: the plain path, for a watcher that changed or
 *    that most of what it sees changed; no policy slows it.
 *  - aoi__compute_policy: the same scan, a copy of its own, for a watcher
 *    that sees a marker by its appeal (the appeal list, take_appeals) or
 *    is told by move bands (meet_member).
 *  - aoi__compute_far: a far-sighted watcher passes over every handle's
 *    mark instead of its shard's grid, which holds no ghosts for it.
 *
 * Membership is two bits over handles, a byte a handle (compute.h), all
 * clear between watchers. Events go straight into the worker's delivery
 * segment as one record per watcher (compute.h), which this worker owns
 * during the tick.
 */
#include "compute.h"

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
   itself among them). Returns their count. Entries that are no marker
   have no layers in the grid (shard_entry, index.c), so one test says
   both. A function of its own, with the arrays in registers: in
   scan_whole's frame they would be reloaded after every byte stored to
   the membership array, which may alias anything. */
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

/* What a watcher's scan carries from its start (scan_start) to its finish
   (scan_finish): a local of the scan's, passed only to steps inlined in
   it, so that the compiler may keep its fields in registers. */
typedef struct scan_state {
  const float *told; /* with move bands, the view's told positions */
  unsigned allowed;  /* the bands this tick allows (aoi__bands_allowed) */
  uint32_t ntells;   /* the told positions noted in k->tells */
  uint32_t nmet;     /* plain path: held markers met, their ids in k->met */
  uint32_t n;        /* enters, in k->candidates */
  bool complete;     /* false once an enter could not be stored */
  bool far;          /* it saw a marker by its appeal */
  bool lagging;      /* a band held a move back */
} scan_state;

/* The start of a watcher's scan (scan_whole, far_scan): the room it needs
   (told positions with move bands; on the plain path the ids of the
   markers it keeps, for its enters to find their places:
   aoi__view_enter_met), the member bit of every handle its view holds,
   and with bands each one's place in the view (k->told_at), its told
   positions (st->told, else NULL) and the bands this tick allows. 0 or
   AOI_ENOMEM (then nothing changed). */
static inline __attribute__((always_inline)) int
scan_start(aoi__worker *k, const aoi__entity *e, uint64_t tick,
           const bool policy, scan_state *st)
{
  aoi_world *w = k->world;
  const aoi__view *view = &e->view;
  uint32_t v = view->count;
  const uint32_t *held = view->handles;
  bool bands = policy && aoi__bands(w);
  *st = (scan_state){.told = bands ? aoi__view_told(view, true) : NULL,
                     .allowed = bands ? aoi__bands_allowed(w, e->id, tick)
                                      : 0,
                     .complete = true};
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

/* ---- the end of a scan -------------------------------------------------- */

/* Room for the end of a watcher's scan: its record (no event stored there
   when the enters are the whole view: by_view) and the moves' scratch;
   else AOI_ENOMEM, the view's bits back to clear (it keeps its view, and
   the positions it was told). Then room in the view for the enters, which
   wait for the next tick where it cannot grow (st->complete false, st->n
   0). *rec: the record, where there is one. */
static inline __attribute__((always_inline)) int
finish_reserve(aoi__worker *k, aoi__view *view, scan_state *st,
               bool by_view, bool bands, uint32_t **rec)
{
  uint32_t v = view->count;
  if (v + st->n > 0 &&
      ((*rec = aoi__reserve_events(k, by_view ? 0 : v + st->n)) == NULL ||
       aoi__reserve(&k->world->allocator, (void **)&k->hits,
                    &k->hit_capacity, v + 1, sizeof(uint32_t)) != 0)) {
    aoi__clear_view_bits(k, view->handles, v);
    return AOI_ENOMEM;
  }
  if (st->n > 0 && aoi__view_reserve_k(k, view, v + st->n, bands) != 0) {
    st->complete = false;
    st->n = 0;
  }
  return 0;
}

/* Writes the told positions noted in k->tells (bands) to the view's. */
static inline void write_tells(const aoi__worker *k, float *told,
                               uint32_t ntells)
{
  for (uint32_t j = 0; j < ntells; j++) {
    const uint32_t *t = &k->tells[3 * j];
    memcpy(&told[2 * t[0]], &t[1], sizeof(float));
    memcpy(&told[2 * t[0] + 1], &t[2], sizeof(float));
  }
}

/* One walk of the view, in its order (by id), from the bits the scan
   left, each cleared as it goes: a held marker not met leaves (its handle
   to out[], *nl of them), a met one is kept, and told (to moves[], *nm)
   where its moved bit is set or on a `resync`; with bands its told
   position moves with it. Returns how many are kept. */
static inline __attribute__((always_inline)) uint32_t
walk_view(aoi__worker *k, aoi__view *view, float *told, bool bands,
          bool resync, uint32_t nmet, uint32_t *out, uint32_t *moves,
          uint32_t *nl_out, uint32_t *nm_out, const bool policy)
{
  uint8_t *const member = k->member;
  bool move_events = k->world->config.move_events != 0;
  uint32_t v = view->count, *hs = view->handles;
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
     if-else compiles to more mispredicted branches). Without a branch on
     who leaves, the one or two of a walking crowd's views a tick at
     random places: each handle (and told position) is written where it
     would go either way, and counted where it goes. */
  for (uint32_t i = kept; i < v; i++) {
    uint32_t h = hs[i];
    unsigned bits = member[h];
    member[h] = 0;
    unsigned leaves = bits & AOI__BIT_MEMBER, stays = leaves ^ 1u;
    out[nl] = h;
    nl += leaves;
    moves[nm] = h; /* counted if told: most of a walking crowd's are */
    nm += ((bits >> 1) | (unsigned)resync) & (unsigned)move_events & stays;
    if (bands) {
      told[2 * kept] = told[2 * i];
      told[2 * kept + 1] = told[2 * i + 1];
    }
    hs[kept] = h;
    kept += stays;
  }
  *nl_out = nl;
  *nm_out = nm;
  return kept;
}

/* Merges the `n` enters into the view's `kept` handles (their handles to
   out[nl..] unless by_view), puts the `nm` moves after them and keeps the
   record: with by_view (and n > 0), one whose enters are the whole view.
   The view is counted in the worker's mean. */
static inline __attribute__((always_inline)) void
finish_record(aoi__worker *k, aoi__entity *e, uint32_t *out,
              const uint32_t *moves, float *told, uint32_t nl, uint32_t n,
              uint32_t nm, uint32_t kept, bool by_view, bool bands,
              const bool policy)
{
  aoi__view *view = &e->view;
  if (policy)
    aoi__view_enter(k, view, told, kept, n, by_view ? NULL : out + nl);
  else
    aoi__view_enter_met(k, view, kept, n, by_view ? NULL : out + nl,
                        k->met);
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
}

/* The end of a watcher's scan, from what its gather left (st): the view's
   held markers met (their member bits cleared, moved bits set where told;
   on the plain path their ids in k->met, st->nmet of them), the others'
   bits still set (they leave), and st->n enters in k->candidates (none
   stored when st->complete is false). Writes the record and the new view.
   st->far: it saw a marker by its appeal; st->lagging: a band held a move
   back (either makes it stale for the policy); st->ntells: the told
   positions noted in k->tells (bands). */
static inline __attribute__((always_inline)) int
scan_finish(aoi__worker *k, aoi__entity *e, scan_state *st,
            const bool policy)
{
  aoi__view *view = &e->view;
  uint32_t v = view->count;
  bool bands = policy && aoi__bands(k->world);
  /* Without bands a resync tells every kept marker; with them the told
     positions say exactly what each client lacks. */
  bool resync = !bands && (e->stale & AOI__STALE_RESYNC) != 0;
  uint32_t later = (st->far || st->lagging) ? AOI__STALE_POLICY : 0;
  if (!st->complete)
    st->n = 0;
  /* With an empty view, the enters are the new view: the record says so
     and stores none (AOI__RECORD_VIEW). */
  bool by_view = v == 0 && st->n > 0;
  uint32_t *rec = NULL;
  if (finish_reserve(k, view, st, by_view, bands, &rec) != 0)
    return AOI_ENOMEM;
  /* (the view's block may have moved) */
  float *told = bands ? aoi__view_told(view, true) : NULL;
  if (bands)
    write_tells(k, told, st->ntells);
  if (v + st->n == 0) {
    k->view_n++;
    if (!st->complete)
      aoi__fail(k, AOI_ENOMEM); /* its enters come next tick */
    e->stale = st->complete ? 0 : AOI__STALE_WHOLE;
    return 0;
  }
  uint32_t *out = rec + AOI__RECORD_HEADER, *moves = k->hits, nl, nm;
  uint32_t kept = walk_view(k, view, told, bands, resync, st->nmet, out,
                            moves, &nl, &nm, policy);
  AOI__ASSERT(policy || st->nmet == kept);
  finish_record(k, e, out, moves, told, nl, st->n, nm, kept, by_view, bands,
                policy);
  if (policy)
    k->lagging += st->lagging;
  if (!st->complete) {
    aoi__fail(k, AOI_ENOMEM);
    e->stale = AOI__STALE_WHOLE | later; /* its enters come next tick */
    return 0;
  }
  e->stale = later;
  return 0;
}

/* ---- the grid scan ------------------------------------------------------ */

/* Where a scan is in the cell rows of its reach: row cy, entries
   [at, end) of it still to read. */
typedef struct row_cursor {
  uint32_t cy, at, end;
} row_cursor;

/* How many hits a scan judges at a time. */
enum { SCAN_BLOCK = 256 };

/* The hits of the rows of the reach r[4] (cells x0, y0, x1, y1) from the
   cursor on, the entries within `reach` of (x, y), written to hits[]: at
   most SCAN_BLOCK, their count. The cursor moves past them; the rows are
   all read once c->cy passes r[3]. */
static inline __attribute__((always_inline)) uint32_t
gather_block(const aoi__shape *shape, const aoi__grid *g, const uint32_t r[4],
             row_cursor *c, float x, float y, double reach, uint32_t *hits)
{
  uint32_t found = 0;
  for (;;) {
    if (c->at == c->end) {
      if (++c->cy > r[3])
        break;
      c->at = aoi__grid_row_begin(g, c->cy, r[0]);
      c->end = aoi__grid_row_end(g, c->cy, r[2]);
      continue;
    }
    if (found == SCAN_BLOCK)
      break;
    uint32_t len = c->end - c->at < SCAN_BLOCK - found ? c->end - c->at
                                                       : SCAN_BLOCK - found;
    found += within_run(shape, g, c->at, len, x, y, reach, hits + found);
    c->at += len;
  }
  return found;
}

/* Judges a block of hits (grid entries within watcher e's outer reach,
   radius plus hysteresis): with `policy`, a held marker of interest is met
   (meet_member), and one whose appeal reaches further is left to the
   appeal list; on the plain path meet_hits has met the held ones and left
   only the others of interest. Each other one but e itself enters if it
   lies within the radius itself: a candidate (st->n), none more once one
   could not be stored (st->complete false). */
static inline __attribute__((always_inline)) void
take_hits(aoi__worker *k, const aoi__entity *e, const aoi__grid *g,
          const uint32_t *hits, uint32_t found, bool any_appeal,
          scan_state *st, const bool policy)
{
  const aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  double inner = e->radius, outer = inner + w->config.hysteresis;
  bool hysteresis = outer != inner;
  uint32_t interest = e->interest, self = e->handle;
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
                    (g->entry[i].info & AOI__ENTRY_MOVED) != 0, h, st->told,
                    &st->ntells, st->allowed, &st->lagging);
        continue;
      }
    }
    if (hysteresis &&
        !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner))
      continue;
    if (!st->complete || !aoi__reserve_candidate(k, st->n)) {
      st->complete = false;
      continue;
    }
    k->candidates[st->n++] = (aoi__candidate){g->entry[i].id, h};
  }
}

/* Meets the markers that reach watcher e by their appeal (appeals[],
   entries of g, from aoi__find_appeals): a held one within its appeal and
   the hysteresis is kept (meet_member), any other within its appeal
   enters; either way e saw one by its appeal (st->far). */
static inline __attribute__((always_inline)) void
take_appeals(aoi__worker *k, const aoi__entity *e, const aoi__grid *g,
             const uint32_t *appeals, uint32_t nappeals, scan_state *st)
{
  const aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  uint32_t interest = e->interest;
  for (uint32_t j = 0; j < nappeals; j++) {
    uint32_t i = appeals[j], h = g->entry[i].handle;
    if ((g->entry[i].layers & interest) == 0)
      continue;
    double base = w->appeal[h];
    if (aoi__is_member(k, h)) {
      if (aoi__within(shape, e->x, e->y, g->x[i], g->y[i],
                      base + w->config.hysteresis)) {
        meet_member(k, e, g->x[i], g->y[i],
                    (g->entry[i].info & AOI__ENTRY_MOVED) != 0, h, st->told,
                    &st->ntells, st->allowed, &st->lagging);
        st->far = true;
      }
      continue;
    }
    if (!aoi__within(shape, e->x, e->y, g->x[i], g->y[i], base))
      continue;
    st->far = true;
    if (!st->complete || !aoi__reserve_candidate(k, st->n)) {
      st->complete = false;
      continue;
    }
    k->candidates[st->n++] = (aoi__candidate){g->entry[i].id, h};
  }
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

   With `policy` (a constant: aoi__compute_whole and aoi__compute_policy
   are two copies), it also takes the markers that reach it by their
   appeal (`appeals`, from aoi__find_appeals) and leaves those to the list
   in its own scan, and with move bands tells each kept marker as its band
   allows. Without, it is the plain path, which no policy slows. */
static inline __attribute__((always_inline)) int
scan_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
           const uint32_t *appeals, uint32_t nappeals, bool any_appeal,
           uint64_t tick, const bool policy)
{
  aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  scan_state st;
  if (scan_start(k, e, tick, policy, &st) != 0)
    return AOI_ENOMEM;
  /* (from locals: a byte stored there may alias anything, and k->member
     would be reloaded after each) */
  uint8_t *const member = k->member;
  uint64_t *const met = k->met;
  uint32_t interest = e->interest;
  double inner = e->radius, outer = inner + w->config.hysteresis;
  double box[4];
  uint32_t r[4];
  aoi__reach_box(shape, e->x, e->y, outer, box);
  aoi__grid_range(g, box, r);
  /* The hits of all the rows in one list (a block at a time when they are
     many), so that one loop takes them: a loop a row would end, and
     mispredict, once a row. */
  uint32_t hits[SCAN_BLOCK];
  row_cursor rows = {r[1], aoi__grid_row_begin(g, r[1], r[0]),
                     aoi__grid_row_end(g, r[1], r[2])};
  do {
    uint32_t found =
        gather_block(shape, g, r, &rows, e->x, e->y, outer, hits);
    if (!policy) { /* held ones met, the rest packed to the front */
      uint64_t *to = met + st.nmet;
      found = meet_hits(g, member, interest, hits, found, &to);
      st.nmet = (uint32_t)(to - met);
    }
    take_hits(k, e, g, hits, found, any_appeal, &st, policy);
  } while (rows.cy <= r[3]);
  if (policy)
    take_appeals(k, e, g, appeals, nappeals, &st);
  return scan_finish(k, e, &st, policy);
}

int aoi__compute_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                       uint64_t tick)
{
  return scan_whole(k, e, g, NULL, 0, false, tick, false);
}

int aoi__compute_policy(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                        const uint32_t *appeals, uint32_t nappeals,
                        bool any_appeal, uint64_t tick)
{
  return scan_whole(k, e, g, appeals, nappeals, any_appeal, tick, true);
}

/* ---- the marks scan ----------------------------------------------------- */

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
  scan_state st;
  if (scan_start(k, e, tick, policy, &st) != 0)
    return AOI_ENOMEM;
  uint8_t *const member = k->member;
  double radius = e->radius, hysteresis = w->config.hysteresis;
  uint32_t interest = e->interest, self = e->handle, now = aoi__stamp(tick);
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
        meet_member(k, e, m->x, m->y, m->moved == now, h, st.told,
                    &st.ntells, st.allowed, &st.lagging);
      } else {
        member[h] = m->moved == now ? AOI__BIT_MOVED : 0;
        met[st.nmet++] = m->id;
      }
      st.far |= by_appeal;
      continue;
    }
    if (h == self || (outer != inner &&
                      !aoi__within(shape, e->x, e->y, m->x, m->y, inner)))
      continue;
    st.far |= by_appeal;
    if (!st.complete || !aoi__reserve_candidate(k, st.n)) {
      st.complete = false;
      continue;
    }
    k->candidates[st.n++] = (aoi__candidate){m->id, h};
  }
  return scan_finish(k, e, &st, policy);
}

int aoi__compute_far(aoi__worker *k, aoi__entity *e, uint64_t tick)
{
  const aoi_world *w = k->world;
  if (w->command.appeals || aoi__bands(w))
    return far_scan(k, e, tick, true);
  return far_scan(k, e, tick, false);
}
