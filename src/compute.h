/*
 * compute.h: what the compute step's files share (included by compute.c,
 * index.c, scan.c, policy.c, push.c and view.c, and nothing else): the hot
 * helpers of the inner loops, inline here so that splitting the step into
 * files costs no call in a loop, and the functions index.c, scan.c,
 * push.c, policy.c and view.c offer compute.c (the dispatch over the
 * watchers).
 *
 * All of it runs on the worker that owns the watcher being computed, on
 * that worker's scratch (aoi__worker).
 */
#ifndef AOI_COMPUTE_H
#define AOI_COMPUTE_H

#include "internal.h"

/* ---- membership bitsets ------------------------------------------------- */

/* Two bits per handle, in a byte of their own (reserve_members,
   compute.c), so that one load answers both and one store sets or clears
   both, with no word or shift to work out: whether the view being
   computed holds the handle (member), and, for a held marker the scan
   met, whether it moved. All clear between watchers. */
#define AOI__BIT_MEMBER 1u
#define AOI__BIT_MOVED 2u

static inline uint8_t *aoi__bits_of(const aoi__worker *k, uint32_t h)
{
  AOI__ASSERT(h < k->member_count);
  return &k->member[h];
}

static inline bool aoi__is_member(const aoi__worker *k, uint32_t h)
{
  return *aoi__bits_of(k, h) & AOI__BIT_MEMBER;
}

static inline void aoi__set_member(aoi__worker *k, uint32_t h)
{
  *aoi__bits_of(k, h) |= AOI__BIT_MEMBER;
}

static inline void aoi__clear_member(aoi__worker *k, uint32_t h)
{
  *aoi__bits_of(k, h) &= (uint8_t)~AOI__BIT_MEMBER;
}

static inline void aoi__set_moved(aoi__worker *k, uint32_t h)
{
  *aoi__bits_of(k, h) |= AOI__BIT_MOVED;
}

static inline bool aoi__take_moved(aoi__worker *k, uint32_t h)
{
  uint8_t *bits = aoi__bits_of(k, h);
  bool was = (*bits & AOI__BIT_MOVED) != 0;
  *bits &= (uint8_t)~AOI__BIT_MOVED;
  return was;
}

/* Both bits of handle h (AOI__BIT_*), cleared. */
static inline unsigned aoi__take_bits(aoi__worker *k, uint32_t h)
{
  uint8_t *bits = aoi__bits_of(k, h);
  unsigned was = *bits;
  *bits = 0;
  return was;
}

/* Clears both bits of every handle of a view. */
static inline void aoi__clear_view_bits(aoi__worker *k, const uint32_t *hs,
                                        uint32_t v)
{
  for (uint32_t i = 0; i < v; i++)
    *aoi__bits_of(k, hs[i]) = 0;
}

/* ---- enters: the candidates ---------------------------------------------- */

/* Room for one more candidate; false when it cannot grow. The spare half
   (for the radix sort) grows with it. */
static inline bool aoi__reserve_candidate(aoi__worker *k, uint32_t n)
{
  if (n < k->candidate_capacity)
    return true;
  const aoi_allocator *a = &k->world->allocator;
  uint32_t old = k->candidate_capacity;
  uint32_t cap = old ? old * 2 : 64;
  aoi__candidate *c = aoi__alloc(a, sizeof(aoi__candidate) * 2 * (size_t)cap);
  if (c == NULL)
    return false;
  if (n > 0)
    memcpy(c, k->candidates, sizeof(aoi__candidate) * n);
  aoi__free(a, k->candidates, sizeof(aoi__candidate) * 2 * (size_t)old);
  k->candidates = c;
  k->candidate_capacity = cap;
  return true;
}

/* ---- the shard index (index.c) ------------------------------------------ */

/* What a shard's grid indexes, read in place: its owned entities, then
   its first `ghosts` ghosts, then its own departures of this tick when
   `departures`. */
typedef struct aoi__shard_source {
  const aoi__shard *s;
  uint64_t tick;
  uint32_t ghosts;
  bool departures;
} aoi__shard_source;

/* Indexes the shard's entities, ghosts and departures in its grid: the
   ones its neighbours sent among its ghosts, and its own in place.
   Departures serve only the watchers that compute_changes may take
   (unchanged, and not stale); when the tick left none (`departures`,
   tick.c) or the shard owns no such watcher, they are left out, which
   halves an all-walking shard's grid. *src is what was indexed, kept for
   the fine grid. 0 or AOI_ENOMEM. */
int aoi__index_shard(aoi__worker *k, aoi__shard *s, double cell_size,
                     uint64_t tick, bool departures, aoi__shard_source *src);
/* Once in a few ticks (a shard's in turn), puts the shard's owned
   entities in the order of its grid; the grid's slots and the locations
   follow. */
void aoi__index_order(aoi__worker *k, aoi__shard *s, uint64_t tick);
/* The fine grid in which capped watchers look for their nearest: the
   entries of *src again, in cells about as small as they are dense (its
   cells bounded by the entries, as the main grid's). Built only where the
   shard owns capped watchers (else freed); NULL then, or where it could
   not be built. */
const aoi__grid *aoi__index_fine(aoi__worker *k, aoi__shard *s,
                                 const aoi__shard_source *src);

/* Fetches ahead the first lines of each grid row within `reach` of
   (x, y): a watcher of a sparse work list finds them cold (its neighbours
   in the list stand cells away), and the hardware follows a row once it
   has begun. */
static inline void aoi__prefetch_reach(const aoi__worker *k,
                                       const aoi__grid *g, float x, float y,
                                       double reach)
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

/* ---- the reach scan (scan.c) -------------------------------------------- */

/* Computes watcher e's events and new view from one scan of the cells of
   grid g within its reach: every marker of interest within its outer
   reach (radius plus hysteresis) is met once; one its view holds is kept
   (and told if it moved), one it does not hold enters if it lies within
   the radius itself, and what the view holds and the scan did not meet
   leaves. Leaves and moves come out in the view's order (by id), the
   enters sorted. The plain path, which no policy slows. Returns 0 or
   AOI_ENOMEM: when the record cannot be stored the watcher keeps its view
   and gets no event (a resync next tick); when only its enters cannot be
   stored, they wait for the next tick (and the worker reports
   AOI_ENOMEM). */
int aoi__compute_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                       uint64_t tick);
/* The same for a watcher under a policy without a cap: it also meets the
   markers that reach it by their appeal (`appeals`, entries of g listed
   by aoi__find_appeals; `any_appeal`: the world has appeals) and leaves
   those to the list in its own scan, and with move bands tells each kept
   marker as its band allows. */
int aoi__compute_policy(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                        const uint32_t *appeals, uint32_t nappeals,
                        bool any_appeal, uint64_t tick);
/* The same for a far-sighted watcher without a cap (aoi__far_sighted),
   from every handle's mark instead of its shard's grid, which holds no
   ghosts for it; under the world's policies (appeals, move bands) where
   it has any. */
int aoi__compute_far(aoi__worker *k, aoi__entity *e, uint64_t tick);

/* ---- quiet watchers (push.c) -------------------------------------------- */

/* The events of the changes in grid g (departures and changed markers) for
   the worker's quiet watchers (k->quiet, flagged AOI__ENTRY_QUIET in g with
   their index in g->cell), which lie within `reach` of them: by watcher in
   k->pushed from k->push_start. 0; AOI_ENOMEM; or another code when the
   changes make more than AOI__PUSH_EVENTS events a quiet watcher (then a
   scan of each one's reach costs less, and the pushes would take more
   room than the world needs for itself). */
int aoi__push_collect(aoi__worker *k, const aoi__shard *s, const aoi__grid *g,
                      uint64_t tick, double reach);
/* Writes quiet watcher e's record from its `n` pushes (reordered) and
   updates its view; e is read only when a marker enters or leaves. 0 or
   AOI_ENOMEM (then nothing changed). */
int aoi__push_finish(aoi__worker *k, aoi__entity *e, uint32_t handle,
                     aoi__push *p, uint32_t n);
/* The most pushes a quiet watcher's moves are written from, without a
   look at its view (more may be a standing spectator's, which
   compute_quiet computes whole when they are most of its view). */
#define AOI__PUSH_MOVES_MAX 16u
/* Writes the record of every quiet watcher whose pushes are moves alone,
   at most AOI__PUSH_MOVES_MAX, from the pushes: neither its entity nor its
   view is read. The other quiet watchers with pushes are listed in rest[]
   (room for k->quiet_count), in order: their count. After
   aoi__push_collect. */
uint32_t aoi__push_moves(aoi__worker *k, uint32_t *rest);
/* Fetches ahead what aoi__push_finish will read of quiet watcher q (entity
   e), whose entity was fetched before, if it reads any (else it returns at
   once, without touching e): with `ids` (a later stage, when the view's
   handles have come), the ids of its view if something enters it, else
   its view's handles. */
void aoi__push_prefetch(const aoi__worker *k, const aoi__entity *e,
                        uint32_t q, bool ids);

/* ---- views (view.c) ----------------------------------------------------- */

/* Sorts the worker's `n` candidates (a watcher's enters) by id, writes
   their handles to out[0..n) in that order (unless out is NULL), and
   merges them into the
   view's first `kept` handles (by id) in place, the view having room for
   both; with `told`, an enter's told position is its mark. With n = 0 the
   view keeps its first `kept`. */
void aoi__view_enter(aoi__worker *k, aoi__view *view, float *told,
                     uint32_t kept, uint32_t n, uint32_t *out);
/* The same without told positions, for a scan that met the kept handles
   and noted their ids, in any order, in met[0..kept): a few enters find
   their places by counting there (the ids are at hand) instead of reading
   the scattered ids of the view. */
void aoi__view_enter_met(aoi__worker *k, aoi__view *view, uint32_t kept,
                         uint32_t n, uint32_t *out, const uint64_t *met);
/* Room for `need` entries in a view of worker k's: a block of an eighth
   more and two (one of the worker's, see view.c), or for a view beyond
   AOI__VIEW_SLAB_MAX half as much again (the allocator's). 0 or
   AOI_ENOMEM (then nothing changed). */
int aoi__view_reserve_k(aoi__worker *k, aoi__view *view, uint32_t need,
                        bool told);
/* After its leaves: a view well below its block moves to a smaller one,
   if one can be had (view.c). */
void aoi__view_fit(aoi__worker *k, aoi__view *view, bool told);

/* ---- event records ------------------------------------------------------ */

/* A watcher's events go into its worker's delivery segment (aoi__segment,
   types.h) as one record, reserved before its view changes, so that a
   watcher whose record cannot be stored keeps its view, and kept once it
   is written. */

/* Room in this worker's segment for a record of up to `events` events, or
   NULL (then nothing changed). The record is written there, then kept by
   aoi__commit_events. */
static inline uint32_t *aoi__reserve_events(aoi__worker *k, uint32_t events)
{
  aoi__segment *seg = &k->world->segments[k->index];
  uint64_t need = (uint64_t)seg->count + AOI__RECORD_LONG_HEADER + events;
  if (need > UINT32_MAX / 2 ||
      aoi__reserve_snug(&k->world->allocator, (void **)&seg->words,
                        &seg->capacity, (uint32_t)need,
                        sizeof(uint32_t)) != 0)
    return NULL;
  return seg->words + seg->count;
}

/* Writes the header of the record at rec: one word of numbers when they
   fit, else the long form, the `stored` events written after the short
   header moving up to make room for it. Returns the record's words. */
static inline uint32_t aoi__record_write(uint32_t *rec, uint32_t h,
                                         uint32_t nl, uint32_t ne, uint32_t nm,
                                         uint32_t view, uint32_t stored)
{
  rec[0] = h;
  if (nl <= AOI__RECORD_SHORT_MAX && ne <= AOI__RECORD_SHORT_MAX &&
      nm <= AOI__RECORD_SHORT_MAX) {
    rec[1] = view | nl | ne << 10 | nm << 20;
    return AOI__RECORD_HEADER + stored;
  }
  if (stored > 0)
    memmove(rec + AOI__RECORD_LONG_HEADER, rec + AOI__RECORD_HEADER,
            sizeof(uint32_t) * stored);
  rec[1] = view | AOI__RECORD_LONG;
  rec[2] = nl;
  rec[3] = ne;
  rec[4] = nm;
  return AOI__RECORD_LONG_HEADER + stored;
}

/* Keeps the record just written for the watcher of handle h, if it holds
   any event. */
static inline void aoi__commit_record(aoi__worker *k, uint32_t h, uint32_t nl,
                                      uint32_t ne, uint32_t nm)
{
  uint32_t total = nl + ne + nm;
  if (total == 0)
    return;
  aoi__segment *seg = &k->world->segments[k->index];
  AOI__ASSERT(seg->count + AOI__RECORD_LONG_HEADER + total <= seg->capacity);
  uint32_t *rec = seg->words + seg->count;
  seg->count += aoi__record_write(rec, h, nl, ne, nm, 0, total);
  seg->records++;
  k->events_made += total;
}

/* Keeps a record for the watcher of handle h whose `ne` enters are its
   whole view (AOI__RECORD_VIEW), reserved with room for no event. */
static inline void aoi__commit_view_record(aoi__worker *k, uint32_t h,
                                           uint32_t ne)
{
  AOI__ASSERT(ne > 0);
  aoi__segment *seg = &k->world->segments[k->index];
  AOI__ASSERT(seg->count + AOI__RECORD_LONG_HEADER <= seg->capacity);
  uint32_t *rec = seg->words + seg->count;
  seg->count += aoi__record_write(rec, h, 0, ne, 0, AOI__RECORD_VIEW, 0);
  seg->records++;
  k->events_made += ne;
}

/* The same for watcher e. */
static inline void aoi__commit_events(aoi__worker *k, const aoi__entity *e,
                                      uint32_t nl, uint32_t ne, uint32_t nm)
{
  aoi__commit_record(k, e->handle, nl, ne, nm);
}

/* ---- interest policies (policy.c) --------------------------------------- */

/* What a kept marker's move is to a watcher under move bands: nothing (it
   is where the watcher was told), told now, or held back by its band. */
enum { AOI__TELL_NOTHING, AOI__TELL_NOW, AOI__TELL_LATER };

/* The move bands whose period allows tick t for watcher `id`: bit b for
   band b. Once per watcher, so no marker pays a division. */
static inline unsigned aoi__bands_allowed(const aoi_world *w, uint64_t id,
                                          uint64_t tick)
{
  unsigned allowed = 0;
  for (unsigned b = 0; b < w->config.move_band_count; b++) {
    uint64_t period = w->config.move_bands[b].period;
    if (period == 1 || (id % period + tick % period) % period == 0)
      allowed |= 1u << b;
  }
  return allowed;
}

/* Whether watcher a is told now of a kept marker at (x, y), last told at
   (tx, ty), with `allowed` from aoi__bands_allowed. The band is that of
   the largest distance D with d > D, found without a square root:
   w->band_above[b] is the least dx^2 + dy^2 whose root is above D. */
static inline int aoi__tell_move_at(const aoi_world *w, const aoi__entity *a,
                                    float x, float y, float tx, float ty,
                                    unsigned allowed)
{
  if (x == tx && y == ty) /* as floats: -0 is +0 */
    return AOI__TELL_NOTHING;
  double dx = (double)x - (double)a->x, dy = (double)y - (double)a->y;
  double squared = dx * dx + dy * dy;
  for (unsigned b = w->config.move_band_count; b-- > 0;)
    if (squared >= w->band_above[b])
      return (allowed >> b) & 1 ? AOI__TELL_NOW : AOI__TELL_LATER;
  return AOI__TELL_NOW;
}

/* The same for marker m, where it stands now. */
static inline int aoi__tell_move(const aoi_world *w, const aoi__entity *a,
                                 const aoi__mark *m, float tx, float ty,
                                 unsigned allowed)
{
  return aoi__tell_move_at(w, a, m->x, m->y, tx, ty, allowed);
}

/* Lists, per owned watcher of the shard, the markers whose appeal reaches
   it from beyond its radius (worker->appeal, appeal_start). 0 or
   AOI_ENOMEM. */
int aoi__find_appeals(aoi__worker *k, aoi__shard *s);
/* Computes a capped watcher from scratch (its cap nearest). Events and
   failures as aoi__compute_whole (scan.c). aoi__compute_capped_far, for a
   far-sighted one (aoi__far_sighted), picks from the marks instead. */
int aoi__compute_capped_far(aoi__worker *k, aoi__entity *e, uint64_t tick);
int aoi__compute_capped(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                        const aoi__grid *fine, const uint32_t *appeals,
                        uint32_t nappeals, bool any_appeal, uint64_t tick);

#endif /* AOI_COMPUTE_H */
