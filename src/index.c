/*
 * index.c: the shard index of the compute step (step 3), on each worker
 * for its own shards: binning, ordering and what is fetched ahead, apart
 * from the reach scan that reads it (scan.c) and the dispatch over the
 * watchers (compute.c).
 *
 * A shard indexes its owned entities, ghosts and departures in a uniform
 * grid, read in place (shard_entry): the markers that changed this tick
 * first in each cell, departures apart, and only when some watcher may
 * need them (aoi__index_shard). Where it owns capped watchers, a fine grid
 * of the same entries, with cells about as small as the entries are dense,
 * serves their search by nearness (aoi__index_fine). Once in a while the
 * shard puts its entities in the grid's order (aoi__index_order), so that
 * the passes that follow the grid read them about in order; the rows of a
 * reach that a sparse work list would find cold are fetched ahead by
 * aoi__prefetch_reach (compute.h: inline in the work list's loop).
 *
 * Nothing here reads or writes a view or an event.
 */
#include "compute.h"

static uint32_t source_count(const aoi__shard_source *src)
{
  return src->s->count + src->ghosts +
         (src->departures ? src->s->departed_count : 0);
}

static inline __attribute__((always_inline)) void
shard_entry(const void *source, uint32_t i, aoi__grid_item *it)
{
  const aoi__shard_source *src = source;
  const aoi__shard *s = src->s;
  if (i < s->count) {
    const aoi__entity *e = &s->entities[i];
    it->x = e->x;
    it->y = e->y;
    it->entry.id = e->id;
    it->entry.handle = e->handle;
    /* no layers for one that is no marker: a layer test then says both
       (meet_hits, scan.c) */
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

int aoi__index_shard(aoi__worker *k, aoi__shard *s, double cell_size,
                     uint64_t tick, bool departures, aoi__shard_source *src)
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
  *src = (aoi__shard_source){s, tick, ghosts, unchanged > 0};
  for (uint32_t i = 0; i < ghosts; i++)
    aoi__box_add(box, s->ghosts[i].x, s->ghosts[i].y);
  for (uint32_t i = 0; src->departures && i < s->departed_count; i++)
    aoi__box_add(box, s->departed[i].x, s->departed[i].y);
  uint32_t n = source_count(src);
  return aoi__grid_build_from(&k->world->allocator, &s->grid, n, cell_size,
                              aoi__grid_limit(n), shard_entry, src, box);
}

const aoi__grid *aoi__index_fine(aoi__worker *k, aoi__shard *s,
                                 const aoi__shard_source *src)
{
  if (s->capped == 0) {
    if (s->fine.capacity > 0)
      aoi__grid_free(&k->world->allocator, &s->fine);
    return NULL;
  }
  uint32_t n = source_count(src);
  if (aoi__grid_build_from(&k->world->allocator, &s->fine, n, 1e-30,
                           aoi__grid_dense_limit(n, 3), shard_entry, src,
                           NULL) == 0)
    return &s->fine;
  return NULL; /* they scan their reach */
}

/* Puts the shard's owned entities in the order of its grid (by cell), so
   that the passes that follow the grid read them about in order: the work
   list, the quiet watchers, and the next builds' scatter. In place, by the
   permutation's cycles; the grid's slots and the locations follow. The
   host's records then meet the entities out of order (apply fetches
   ahead), which costs less than the in-order passes save
   (docs/performance.md). */
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

void aoi__index_order(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  /* once in AOI__ORDER_PERIOD ticks, a shard's in turn: a walking crowd
     drifts out of order slowly */
  if (s->grid.width > 0 && (tick + s->index) % AOI__ORDER_PERIOD == 0)
    order_entities(k, s, &s->grid);
}
