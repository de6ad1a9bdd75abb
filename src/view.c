/*
 * view.c: view storage.
 *
 * A view (aoi__view, world.h) is the handles of the markers a watcher sees,
 * ordered by id, in one block with the positions each was last told when
 * the world has move bands. The compute step finds a watcher's enters;
 * aoi__view_enter sorts them by id and merges them into the kept handles
 * in place. A view grows by aoi__view_reserve, by the hint the worker's
 * mean view gives (aoi__view_hint). Queries find an id in a view by a
 * binary search (aoi__view_find).
 */
#include "compute.h"

#include <string.h>

/* The second half of the candidates' block, for the radix sort. */
static aoi__candidate *spare_candidates(aoi__worker *k)
{
  return k->candidates == NULL ? NULL : k->candidates + k->candidate_capacity;
}

/* Sorts enters by id in place, without allocating: insertion sort for the
   usual handful, an LSD radix sort on the bytes that differ for a crowd
   (a first tick among thousands), with `spare` as its second buffer. */
static inline __attribute__((always_inline)) void
sort_by_id(aoi__candidate *c, uint32_t n, aoi__candidate *spare)
{
  if (n > 64 && spare != NULL) {
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (uint32_t i = 0; i < n; i++) {
      all_or |= c[i].id;
      all_and &= c[i].id;
    }
    uint64_t differ = all_or ^ all_and;
    aoi__candidate *from = c, *to = spare;
    for (unsigned shift = 0; shift < 64; shift += 8) {
      if (((differ >> shift) & 0xff) == 0)
        continue;
      uint32_t count[257] = {0};
      for (uint32_t i = 0; i < n; i++)
        count[((from[i].id >> shift) & 0xff) + 1]++;
      for (unsigned b = 0; b < 256; b++)
        count[b + 1] += count[b];
      for (uint32_t i = 0; i < n; i++)
        to[count[(from[i].id >> shift) & 0xff]++] = from[i];
      aoi__candidate *swap = from;
      from = to;
      to = swap;
    }
    if (from != c)
      memcpy(c, from, sizeof(*c) * n);
    return;
  }
  for (uint32_t i = 1; i < n; i++) {
    aoi__candidate v = c[i];
    uint32_t j = i;
    while (j > 0 && c[j - 1].id > v.id) {
      c[j] = c[j - 1];
      j--;
    }
    c[j] = v;
  }
}

/* The first of hs[lo..hi), sorted by id, whose id is not below `id`. The
   ids are scattered (in the marks), so each read is likely a miss: the search
   reads three at once to narrow the range to a quarter, and counts the
   last few without a branch, so that the reads of a round overlap instead
   of each waiting for the one before (a binary search would make about
   six dependent reads in a view of 35, this two or three rounds). */
static inline uint32_t lower_bound(const uint32_t *hs, const aoi__mark *mark,
                                   uint32_t lo, uint32_t hi, uint64_t id)
{
  while (hi - lo > 12) {
    uint32_t step = (hi - lo) / 4;
    uint32_t m1 = lo + step, m2 = m1 + step, m3 = m2 + step;
    uint64_t a = mark[hs[m1]].id, b = mark[hs[m2]].id, c = mark[hs[m3]].id;
    if (c < id)
      lo = m3 + 1;
    else if (b < id)
      lo = m2 + 1, hi = m3;
    else if (a < id)
      lo = m1 + 1, hi = m2;
    else
      hi = m1;
  }
  uint32_t below = 0;
  for (uint32_t i = lo; i < hi; i++)
    below += mark[hs[i]].id < id;
  return lo + below;
}

/* Merges `n` enters (by id), each holding in .id its place (the number of
   kept handles before it), into the view's first `kept` handles (by id),
   in place from the back; the view has room for both. The runs between
   places move up in one pass without reading an id. */
static void merge_placed(aoi__view *view, float *told, uint32_t kept,
                         const aoi__candidate *enters, uint32_t n,
                         const aoi__mark *mark)
{
  AOI__ASSERT(kept + n <= view->capacity);
  uint32_t *hs = view->handles;
  uint32_t i = kept, to = kept + n;
  if (told != NULL) { /* the same moves, and an enter tells its position */
    for (uint32_t j = n; j-- > 0;) {
      uint32_t place = (uint32_t)enters[j].id;
      while (i > place) {
        hs[--to] = hs[--i];
        told[2 * to] = told[2 * i];
        told[2 * to + 1] = told[2 * i + 1];
      }
      uint32_t h = enters[j].handle;
      hs[--to] = h;
      told[2 * to] = mark[h].x;
      told[2 * to + 1] = mark[h].y;
    }
    view->count = kept + n;
    return;
  }
  for (uint32_t j = n; j-- > 0;) {
    uint32_t place = (uint32_t)enters[j].id;
    while (i > place)
      hs[--to] = hs[--i];
    hs[--to] = enters[j].handle;
  }
  view->count = kept + n;
}

/* Each enter's place by a search of the view: ids read from the marks,
   scattered. enters[j].id is no longer needed once placed: the place goes
   there. */
static void place_by_search(const aoi__view *view, uint32_t kept,
                            aoi__candidate *enters, uint32_t n,
                            const aoi__mark *mark)
{
  uint32_t lo = 0;
  for (uint32_t j = 0; j < n; j++) {
    lo = lower_bound(view->handles, mark, lo, kept, enters[j].id);
    enters[j].id = lo;
  }
}

/* Sorts the enters by id and writes their handles out. */
static aoi__candidate *sort_enters(aoi__worker *k, uint32_t n, uint32_t *out)
{
  aoi__candidate *enters = k->candidates;
  sort_by_id(enters, n, spare_candidates(k));
  if (out != NULL)
    for (uint32_t j = 0; j < n; j++)
      out[j] = enters[j].handle;
  return enters;
}

void aoi__view_enter(aoi__worker *k, aoi__view *view, float *told,
                     uint32_t kept, uint32_t n, uint32_t *out)
{
  if (n == 0) { /* most watchers, most ticks */
    view->count = kept;
    return;
  }
  aoi__candidate *enters = sort_enters(k, n, out);
  place_by_search(view, kept, enters, n, k->world->mark);
  merge_placed(view, told, kept, enters, n, k->world->mark);
}

void aoi__view_enter_met(aoi__worker *k, aoi__view *view, uint32_t kept,
                         uint32_t n, uint32_t *out, const uint64_t *met)
{
  if (n == 0) {
    view->count = kept;
    return;
  }
  aoi__candidate *enters = sort_enters(k, n, out);
  /* A count reads every kept id, at hand, once an enter; a search a dozen
     scattered ones (each maybe a miss). The count wins but in a huge view. */
  if (kept > 512) {
    place_by_search(view, kept, enters, n, k->world->mark);
  } else {
    for (uint32_t j = 0; j < n; j++) {
      uint64_t id = enters[j].id;
      uint32_t below = 0;
      for (uint32_t t = 0; t < kept; t++)
        below += met[t] < id;
      enters[j].id = below;
    }
  }
  merge_placed(view, NULL, kept, enters, n, k->world->mark);
}

void aoi__view_free(const aoi_allocator *a, aoi__view *view, bool told)
{
  aoi__free(a, view->handles, aoi__view_bytes(view->capacity, told));
  memset(view, 0, sizeof(*view));
}

uint32_t aoi__view_find(const aoi__view *view, const aoi__mark *mark,
                        uint64_t id)
{
  const uint32_t *hs = view->handles;
  uint32_t lo = lower_bound(hs, mark, 0, view->count, id);
  return lo < view->count && mark[hs[lo]].id == id ? lo : view->count;
}

bool aoi__view_holds(const aoi__view *view, const aoi__mark *mark, uint64_t id,
                     uint32_t h)
{
  const uint32_t *hs = view->handles;
  /* a respawned id has a new handle: the old may still be held */
  for (uint32_t at = lower_bound(hs, mark, 0, view->count, id);
       at < view->count && mark[hs[at]].id == id; at++)
    if (hs[at] == h)
      return true;
  return false;
}

/* Room for `need` entries (and their told positions, with `told`); a
   growth takes aoi__roomy(need, hint). 0 or AOI_ENOMEM (then nothing
   changed). */
void aoi__view_recycle(aoi__worker *k, aoi__view *view)
{
  aoi_world *w = k->world;
  if (view->capacity > 0 && view->capacity <= AOI__SPARE_VIEW_MAX &&
      k->spare_view_count < k->spare_view_limit &&
      aoi__reserve(&w->allocator, (void **)&k->spare_views,
                   &k->spare_view_capacity, k->spare_view_count + 1,
                   sizeof(aoi__view)) == 0) {
    aoi__view *spare = &k->spare_views[k->spare_view_count++];
    *spare = *view;
    spare->count = 0;
    memset(view, 0, sizeof(*view));
    return;
  }
  aoi__view_free(&w->allocator, view, aoi__bands(w));
}

void aoi__view_spares_trim(aoi__worker *k, uint32_t keep)
{
  while (k->spare_view_count > keep)
    aoi__view_free(&k->world->allocator,
                   &k->spare_views[--k->spare_view_count],
                   aoi__bands(k->world));
  if (keep == 0) {
    aoi__free(&k->world->allocator, k->spare_views,
              sizeof(aoi__view) * k->spare_view_capacity);
    k->spare_views = NULL;
    k->spare_view_capacity = 0;
  }
}

int aoi__view_reserve_k(aoi__worker *k, aoi__view *view, uint32_t need,
                        uint32_t hint, bool told)
{
  if (need > view->capacity && view->capacity == 0)
    for (uint32_t i = k->spare_view_count; i-- > 0;)
      if (k->spare_views[i].capacity >= need) {
        *view = k->spare_views[i];
        k->spare_views[i] = k->spare_views[--k->spare_view_count];
        return 0;
      }
  return aoi__view_reserve(&k->world->allocator, view, need, hint, told);
}

int aoi__view_reserve(const aoi_allocator *a, aoi__view *view,
                      uint32_t need, uint32_t hint, bool told)
{
  if (need <= view->capacity)
    return 0;
  uint32_t capacity = aoi__roomy(need, hint);
  if (!told) {
    uint32_t *bigger = aoi__realloc(a, view->handles,
                                    sizeof(uint32_t) * view->capacity,
                                    sizeof(uint32_t) * capacity);
    if (bigger == NULL)
      return AOI_ENOMEM;
    view->handles = bigger;
    view->capacity = capacity;
    return 0;
  }
  /* the told positions follow the handles: both move */
  aoi__view bigger = {NULL, view->count, capacity};
  bigger.handles = aoi__alloc(a, aoi__view_bytes(capacity, true));
  if (bigger.handles == NULL)
    return AOI_ENOMEM;
  if (view->count > 0) {
    memcpy(bigger.handles, view->handles, sizeof(uint32_t) * view->count);
    memcpy(aoi__view_told(&bigger, true), aoi__view_told(view, true),
           2 * sizeof(float) * view->count);
  }
  aoi__free(a, view->handles, aoi__view_bytes(view->capacity, true));
  *view = bigger;
  return 0;
}
