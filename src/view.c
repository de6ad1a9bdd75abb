/*
 * view.c: view storage.
 *
 * A view (aoi__view, types.h) is the handles of the markers a watcher sees,
 * ordered by id, in one block with the positions each was last told when
 * the world has move bands. The compute step finds a watcher's enters;
 * aoi__view_enter sorts them by id and merges them into the kept handles
 * in place. Queries find an id in a view by a search (aoi__view_find).
 *
 * Blocks. A view of up to AOI__VIEW_SLAB_MAX entries lives in a block of
 * its worker's, of a capacity just above what it holds (an eighth more and
 * two, to a multiple of AOI__VIEW_GRAIN), carved from a chunk of its
 * worker's. A view that outgrows its block, or falls two grains below what
 * it would take now (after its leaves), moves to one of the right capacity, and the old block goes on
 * the worker's free list for its capacity; a removed watcher's block goes
 * there too. So views are sized close to what they hold, and yet a crowd
 * whose views grow and shrink, or that churns, takes its blocks from the
 * free lists and almost never calls the allocator: a new chunk is an
 * eighth of what the worker's chunks hold (at least AOI__VIEW_CHUNK), and
 * once the spread of view sizes has settled (some tens of ticks) the
 * carving stops. A block may end up in another worker's lists (its entity was
 * handed over): any block of the right capacity will do. The chunks go
 * only with the worker (aoi_destroy): what a worker's views took at their
 * peak stays on its lists for its later views. A view beyond
 * AOI__VIEW_SLAB_MAX is a block of the allocator's, grown by half again
 * (a crowd on one spot).
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

/* ---- blocks ------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define AOI__VIEW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AOI__VIEW_ASAN 1
#endif
#endif
#ifdef AOI__VIEW_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* A chunk's header: the link to the next chunk and the chunk's size, in
   16 bytes so that the blocks after it stay aligned. */
enum { CHUNK_HEADER = 16 };

static bool in_slab(uint32_t capacity)
{
  return capacity > 0 && capacity <= AOI__VIEW_SLAB_MAX;
}

/* The capacity a view of `need` entries takes: an eighth more and two,
   to a multiple of the grain, in a worker's chunks; beyond those, half as
   much again (aoi__roomy). */
static uint32_t view_capacity(uint32_t need)
{
  uint64_t want = (uint64_t)need + need / 8 + 2;
  if (want <= AOI__VIEW_SLAB_MAX)
    return (uint32_t)((want + AOI__VIEW_GRAIN - 1) / AOI__VIEW_GRAIN *
                      AOI__VIEW_GRAIN);
  return aoi__roomy(need, 0);
}

/* A block of `capacity` (in_slab) from worker k: a free one of that
   capacity, else carved from its chunk, else from a new chunk. NULL when
   no chunk can be had. */
static void *block_take(aoi__worker *k, uint32_t capacity, bool told)
{
  void **list = &k->view_free[capacity / AOI__VIEW_GRAIN - 1];
  size_t bytes = aoi__view_bytes(capacity, told);
  void *b = *list;
  if (b != NULL) {
    UNPOISON(b, bytes);
    memcpy(list, b, sizeof(void *));
    return b;
  }
  if (k->view_carve_left < bytes) {
    /* an eighth of what the worker's chunks hold, at least
       AOI__VIEW_CHUNK: as many chunks as the logarithm of the peak */
    size_t size = k->view_chunk_bytes / 8;
    size = size > AOI__VIEW_CHUNK ? (size + 4095) & ~(size_t)4095
                                  : AOI__VIEW_CHUNK;
    char *chunk = aoi__alloc(&k->world->allocator, size);
    if (chunk == NULL)
      return NULL;
    memcpy(chunk, &k->view_chunks, sizeof(void *));
    memcpy(chunk + sizeof(void *), &size, sizeof(size));
    k->view_chunks = chunk;
    k->view_chunk_bytes += size;
    k->view_carve = chunk + CHUNK_HEADER;
    k->view_carve_left = size - CHUNK_HEADER;
    POISON(k->view_carve, k->view_carve_left);
  }
  b = k->view_carve;
  k->view_carve += bytes;
  k->view_carve_left -= bytes;
  UNPOISON(b, bytes);
  return b;
}

/* Gives a block of `capacity` (in_slab) back to worker k's free list. */
static void block_give(aoi__worker *k, void *b, uint32_t capacity, bool told)
{
  void **list = &k->view_free[capacity / AOI__VIEW_GRAIN - 1];
  memcpy(b, list, sizeof(void *));
  *list = b;
  POISON((char *)b + sizeof(void *),
         aoi__view_bytes(capacity, told) - sizeof(void *));
}

/* Gives the view's block back (to worker k, or to the allocator). */
static void block_release(aoi__worker *k, const aoi__view *view, bool told)
{
  if (in_slab(view->capacity))
    block_give(k, view->handles, view->capacity, told);
  else if (view->handles != NULL)
    aoi__free(&k->world->allocator, view->handles,
              aoi__view_bytes(view->capacity, told));
}

void aoi__view_free(const aoi_allocator *a, aoi__view *view, bool told)
{
  if (!in_slab(view->capacity))
    aoi__free(a, view->handles, aoi__view_bytes(view->capacity, told));
  memset(view, 0, sizeof(*view));
}

void aoi__view_chunks_free(aoi__worker *k)
{
  char *chunk = k->view_chunks;
  while (chunk != NULL) {
    void *next;
    size_t size;
    memcpy(&next, chunk, sizeof(void *));
    memcpy(&size, chunk + sizeof(void *), sizeof(size));
    UNPOISON(chunk, size);
    aoi__free(&k->world->allocator, chunk, size);
    chunk = next;
  }
  k->view_chunks = NULL;
  k->view_chunk_bytes = 0;
  k->view_carve = NULL;
  k->view_carve_left = 0;
  memset(k->view_free, 0, sizeof(k->view_free));
}

void aoi__view_recycle(aoi__worker *k, aoi__view *view)
{
  block_release(k, view, aoi__bands(k->world));
  memset(view, 0, sizeof(*view));
}

/* Moves the view into a block of `capacity`, which holds its entries. */
static int view_move(aoi__worker *k, aoi__view *view, uint32_t capacity,
                     bool told)
{
  AOI__ASSERT(view->count <= capacity);
  const aoi_allocator *a = &k->world->allocator;
  if (!told && !in_slab(capacity) && !in_slab(view->capacity)) {
    /* the allocator's to the allocator's: it may grow in place */
    uint32_t *bigger = aoi__realloc(a, view->handles,
                                    sizeof(uint32_t) * view->capacity,
                                    sizeof(uint32_t) * capacity);
    if (bigger == NULL)
      return AOI_ENOMEM;
    view->handles = bigger;
    view->capacity = capacity;
    return 0;
  }
  aoi__view moved = {NULL, view->count, capacity};
  moved.handles = in_slab(capacity)
                      ? block_take(k, capacity, told)
                      : aoi__alloc(a, aoi__view_bytes(capacity, told));
  if (moved.handles == NULL)
    return AOI_ENOMEM;
  if (view->count > 0) {
    memcpy(moved.handles, view->handles, sizeof(uint32_t) * view->count);
    if (told)
      memcpy(aoi__view_told(&moved, true), aoi__view_told(view, true),
             2 * sizeof(float) * view->count);
  }
  block_release(k, view, told);
  *view = moved;
  return 0;
}

int aoi__view_reserve_k(aoi__worker *k, aoi__view *view, uint32_t need,
                        bool told)
{
  if (need <= view->capacity)
    return 0;
  return view_move(k, view, view_capacity(need), told);
}

void aoi__view_fit(aoi__worker *k, aoi__view *view, bool told)
{
  /* A view well below its block moves to a block its size (where that
     cannot be had, it stays): views that shrink give back the blocks the
     growing ones take, so the free lists stay stocked. Two grains apart,
     so that a view moves only every few ticks. */
  uint32_t fit = view_capacity(view->count);
  if (in_slab(view->capacity) ? view->capacity > fit + 2 * AOI__VIEW_GRAIN
                              : view->capacity > 2 * fit)
    (void)view_move(k, view, fit, told);
}
