/*
 * compute.c: step 3 of a tick, on each worker for its own shards: the new
 * view of every watcher, and its events. This file is the dispatch over
 * the watchers; the shard's index is index.c's, the reach scan scan.c's,
 * the policies policy.c's, the pushes to quiet watchers push.c's and the
 * views' storage view.c's.
 *
 * The shard is indexed first (index.c: its grid, its entities' order, the
 * fine grid where it owns capped watchers). Then its work list: the
 * watchers that changed or whose view is stale, and those with a changed
 * marker or a departure within their reach (list_work); any other watcher
 * is skipped without reading its view. The quiet watchers (unchanged, no
 * policy, about the usual reach) are not listed: the changes find them
 * (push.c, compute_quiet), unless so much changed that listing them costs
 * less. Each listed watcher is computed by one of seven paths, tried in
 * this order (compute_watcher):
 *
 *  - compute_marks: a watcher whose shard has no usable grid (it missed a
 *    ghost or could not index) takes its leaves and moves from the marks;
 *    its enters wait for a tick that scans.
 *  - aoi__compute_capped_far (policy.c): a far-sighted watcher with a cap
 *    picks its cap nearest from every handle's mark.
 *  - aoi__compute_far (scan.c): any other far-sighted watcher scans every
 *    handle's mark; its shard's grid holds no ghosts for it.
 *  - aoi__compute_capped (policy.c): a capped watcher picks its cap
 *    nearest, ring by ring in the fine grid.
 *  - aoi__compute_policy (scan.c): a watcher that sees some marker by its
 *    appeal (now or at the last tick) or is told by move bands: the whole
 *    scan, with the appeal list and the bands.
 *  - aoi__compute_whole (scan.c): a watcher that changed, or that most of
 *    what it sees changed, checks its previous view (sorted by id) against
 *    one scan of the grid cells of its reach: leaves, moves and kept
 *    entries come out in id order; its enters are the markers within its
 *    radius, found in the grid, that the view does not hold.
 *  - compute_changes: any other watcher only looks at the changed markers
 *    and departures within its reach (a quiet one, when the changes were
 *    too many to push).
 *
 * Membership is two bits over handles, a byte a handle (compute.h), all
 * clear between watchers. Events go straight into the worker's delivery
 * segment as one record per watcher (compute.h), which this worker owns
 * during the tick.
 */
#include "compute.h"

/* ---- the marks path ----------------------------------------------------- */

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

/* ---- the changes path --------------------------------------------------- */

/* What compute_changes carries through its steps: watcher e's reach and
   what it reads of the world, held in locals (a byte stored to the
   membership array may alias anything), and what it found: the held
   markers hit (`nh`, each leaving or told a move, its moved bit set), of
   which `nl` leave, and the `n` enters stored in k->candidates. */
typedef struct change_scan {
  const aoi__shape *shape;
  const aoi__mark *mark;
  double inner, outer;
  uint64_t tick;
  bool move_events;
  uint32_t n, nh, nl;
} change_scan;

/* Meets entry i of g, a changed marker (pass 0) or a departure (pass 1)
   in a cell of watcher e's reach: a held marker leaves or moves (its
   moved bit set, once however often it is hit), one not held may enter.
   False when an enter cannot be stored. */
static inline __attribute__((always_inline)) bool
change_at(aoi__worker *k, const aoi__entity *e, const aoi__grid *g,
          uint32_t i, int pass, change_scan *c)
{
  const aoi__shape *shape = c->shape;
  /* Where a held marker stood is within reach, so a changed marker out of
     reach is no enter and, if held, has moved and left a departure in
     reach. */
  if (!aoi__within(shape, e->x, e->y, g->x[i], g->y[i], c->outer))
    return true;
  uint32_t h = g->entry[i].handle;
  if (h == e->handle || aoi__take_moved(k, h)) {
    if (h != e->handle)
      aoi__set_moved(k, h); /* met before: a hit is taken once */
    return true;
  }
  if (aoi__is_member(k, h)) {
    /* held: it leaves or moves */
    const aoi__mark *m = &c->mark[h];
    if ((m->layers & e->interest) == 0 ||
        !aoi__within(shape, e->x, e->y, m->x, m->y, c->outer)) {
      aoi__clear_member(k, h);
      c->nl++;
    } else if (!c->move_events || m->moved != aoi__stamp(c->tick)) {
      return true;
    }
    aoi__set_moved(k, h);
    c->nh++;
    return true;
  }
  /* not held: a changed marker (each is listed once) may enter */
  if (pass != 0 || (g->entry[i].layers & e->interest) == 0 ||
      !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], c->inner))
    return true;
  if (!aoi__reserve_candidate(k, c->n))
    return false;
  k->candidates[c->n++] = (aoi__candidate){g->entry[i].id, h};
  return true;
}

/* Meets every changed marker and departure in the cells of watcher e's
   outer reach (change_at), a row at a time, past the rows where nothing
   changed. 0 or AOI_ENOMEM. */
static inline __attribute__((always_inline)) int
changes_find(aoi__worker *k, const aoi__entity *e, const aoi__grid *g,
             change_scan *c)
{
  double box[4];
  uint32_t r[4];
  aoi__reach_box(c->shape, e->x, e->y, c->outer, box);
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
      for (uint32_t i = g->start[from]; i < to; i++)
        if (!change_at(k, e, g, i, pass, c))
          return AOI_ENOMEM;
    }
  }
  return 0;
}

/* Writes watcher e's record and new view from what changes_find met: one
   walk of the view, in its order (by id), takes each handle's bits: a
   hit one that is no member leaves, a hit member moves, the rest are
   kept; then the enters merge. 0 or AOI_ENOMEM (then nothing changed). */
static inline __attribute__((always_inline)) int
changes_write(aoi__worker *k, aoi__entity *e, const change_scan *c)
{
  const aoi_allocator *a = &k->world->allocator;
  aoi__view *view = &e->view;
  uint32_t v = view->count, n = c->n, nh = c->nh, nl = c->nl;
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
  const uint32_t *held = e->view.handles;
  uint32_t v = e->view.count;
  for (uint32_t i = 0; i < v; i++)
    aoi__set_member(k, held[i]);
  double inner = e->radius, outer = inner + w->config.hysteresis;
  change_scan c = {&w->shape, w->mark, inner, outer, tick,
                   w->config.move_events != 0, 0, 0, 0};
  if (changes_find(k, e, g, &c) != 0) {
    aoi__clear_view_bits(k, held, v);
    return AOI_ENOMEM;
  }
  if (c.nh + c.n == 0) {
    aoi__clear_view_bits(k, held, v);
    return 0;
  }
  return changes_write(k, e, &c);
}

/* ---- a watcher ---------------------------------------------------------- */

/* Computes one watcher by the path that fits it: compute_marks without a
   grid; for a far-sighted one aoi__compute_capped_far with a cap, else
   aoi__compute_far; aoi__compute_capped for a capped one;
   aoi__compute_policy for one that sees a marker by its appeal (now or at
   the last tick) or is told by move bands; else aoi__compute_whole or
   compute_changes, which no policy touches.
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
                    : aoi__compute_far(k, e, tick);
  else if (e->cap > 0)
    rc = aoi__compute_capped(k, e, g, fine, listed, nlisted, appeals, tick);
  else if (nlisted > 0 || (e->stale & AOI__STALE_POLICY) ||
           aoi__bands(k->world))
    rc = aoi__compute_policy(k, e, g, listed, nlisted, appeals, tick);
  else if (dirty > e->view.count / 2 + 16)
    rc = aoi__compute_whole(k, e, g, tick);
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

/* Room for a shard's compute: the membership bytes (reserve_members),
   each handle's place in a view (move bands), the work list, and the
   appeal lists (aoi__find_appeals). 0 or AOI_ENOMEM. */
static int reserve_scratch(aoi__worker *k, aoi__shard *s, bool appeals)
{
  int rc;
  if ((rc = reserve_members(k)) != 0 ||
      (aoi__bands(k->world) &&
       (rc = aoi__reserve(&k->world->allocator, (void **)&k->told_at,
                          &k->told_at_capacity, k->world->handle_count + 1,
                          sizeof(uint32_t))) != 0) ||
      (rc = aoi__reserve(&k->world->allocator, (void **)&k->work,
                         &k->work_capacity, s->count + 1,
                         sizeof(uint64_t))) != 0 ||
      (appeals && (rc = aoi__find_appeals(k, s)) != 0))
    return rc;
  return 0;
}

/* The watchers with work, listed in k->work: those that changed or missed
   a tick, and those with a changed marker or a departure within their own
   reach. The others keep their views untouched: nothing they see changed.
   Each is listed by its slot, with the number of changes in its reach
   (UINT32_MAX: computed whole anyway), which compute_watcher reuses.
   Without departures (too few unchanged watchers for them to pay,
   tick.c), an unchanged watcher cannot know what left its reach: it is
   computed whole too. Returns how many are listed.

   Quiet watchers (push.c): unchanged ones with no policy and about the
   usual reach are computed from the changes around them, not listed: they
   go to k->quiet, flagged in the grid with their place there in its cell
   scratch, and *quiet_reach is the widest one's reach. */
static inline uint32_t list_work(aoi__worker *k, aoi__shard *s,
                                 const aoi__tick_command *cmd,
                                 bool departures, double *quiet_reach)
{
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  aoi__grid *g = &s->grid;
  uint64_t *work = k->work;
  uint32_t nw = 0;
  uint32_t end = g->width == 0 ? 0 : aoi__grid_row_end(g, g->height - 1,
                                                        g->width - 1);
  double hysteresis = k->world->config.hysteresis;
  bool appeals = cmd->appeals;
  bool push = departures && !aoi__bands(k->world) &&
              aoi__reserve(&k->world->allocator, (void **)&k->quiet,
                           &k->quiet_capacity, s->count + 1,
                           sizeof(aoi__quiet)) == 0;
  double push_limit = 2 * cmd->usual_reach, widest = 0;
  k->quiet_count = 0;
  for (uint32_t i = 0; i < end; i++) {
    uint32_t info = g->entry[i].info;
    if ((info & want) != want)
      continue;
    uint32_t dirty = UINT32_MAX;
    /* a far-sighted one scans every tick: its changes are not all here */
    bool far = aoi__reaches(g->entry[i].radius, hysteresis, cmd->far_reach);
    if (!far && !(info & (AOI__ENTRY_CHANGED | AOI__ENTRY_STALE)) &&
        departures) {
      uint32_t slot = g->entry[i].slot;
      double reach = (double)g->entry[i].radius + hysteresis;
      bool listed =
          appeals && k->appeal_start[slot + 1] != k->appeal_start[slot];
      if (push && !listed && !(info & AOI__ENTRY_CAPPED) &&
          reach <= push_limit) {
        g->entry[i].info |= AOI__ENTRY_QUIET;
        g->cell[i] = k->quiet_count;
        k->quiet[k->quiet_count++] = (aoi__quiet){slot, g->entry[i].handle};
        widest = reach > widest ? reach : widest;
        continue;
      }
      if ((dirty = dirty_in_reach(k, g, g->x[i], g->y[i], reach)) == 0 &&
          !listed)
        continue;
    }
    work[nw++] = (uint64_t)dirty << 32 | g->entry[i].slot;
  }
  *quiet_reach = widest;
  return nw;
}

/* Computes the `nw` listed watchers in turn, fetching ahead what each
   will read: views and entities are scattered, and in a sparse list (a
   few walkers in a standing crowd) the rows of each one's reach are
   cold. */
static inline void compute_work(aoi__worker *k, aoi__shard *s,
                                const aoi__grid *fine, uint32_t nw,
                                bool appeals, uint64_t tick)
{
  const aoi__grid *g = &s->grid;
  const uint64_t *work = k->work;
  double hysteresis = k->world->config.hysteresis;
  bool sparse = (uint64_t)nw * 4 < s->count;
  for (uint32_t j = 0; j < nw; j++) {
    if (j + 8 < nw) /* a line, with its view */
      __builtin_prefetch(&s->entities[(uint32_t)work[j + 8]]);
    if (sparse && j + 6 < nw) {
      const aoi__entity *ahead = &s->entities[(uint32_t)work[j + 6]];
      aoi__prefetch_reach(k, g, ahead->x, ahead->y,
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
                    tick);
  }
}

void aoi__compute_shard(aoi__worker *k, aoi__shard *s,
                        const aoi__tick_command *cmd)
{
  AOI__ASSERT(aoi__worker_of(k->world, s->index) == k->index);
  uint64_t started = aoi__now_ns();
  aoi__shard_source src;
  int rc = aoi__index_shard(k, s, cmd->cell_size, cmd->tick, cmd->departures,
                            &src);
  if (rc != 0) {
    /* No index: queries see this shard as empty until the next tick. */
    aoi__fail(k, rc);
    s->grid.count = 0;
    s->grid.width = s->grid.height = 0;
    compute_from_marks(k, s, cmd->tick);
    return;
  }
  if (s->degraded) {
    compute_from_marks(k, s, cmd->tick); /* indexed for queries */
    return;
  }
  aoi__index_order(k, s, cmd->tick);
  /* NULL where the shard owns no capped watcher, or its fine grid could
     not be built: then they scan their reach */
  const aoi__grid *fine = aoi__index_fine(k, s, &src);
  if ((rc = reserve_scratch(k, s, cmd->appeals)) != 0) {
    aoi__fail(k, rc);
    compute_from_marks(k, s, cmd->tick);
    return;
  }
  double quiet_reach = 0;
  uint32_t nw = list_work(k, s, cmd, src.departures, &quiet_reach);
  compute_work(k, s, fine, nw, cmd->appeals, cmd->tick);
  if (k->quiet_count > 0)
    compute_quiet(k, s, &s->grid, fine, cmd->appeals, quiet_reach,
                  cmd->tick);
  s->compute_ns = aoi__now_ns() - started;
}
