/*
 * exchange.c: step 2 of a tick, on each worker for its own shards: ghost
 * publishing.
 *
 * Every owned marker within ghost reach (the largest watcher reach, per
 * axis, shape-aware) of another shard's rectangle is copied there as a
 * ghost: stored directly in a shard of this worker, or appended to the
 * ghost batch for the owning worker, one batch per peer (worker.c). Since
 * a watcher's position lies in its own shard's rectangle, every marker it
 * could see is then in that shard, owned or ghosted. Each departure this
 * tick's ops made (where a marker that moved or was removed stood at the
 * end of the last tick) goes the same way to every other shard near where
 * it stood; this one's grid reads its own in place (compute.c).
 *
 * A shard that misses a ghost (out of memory, here or in a peer's batch)
 * is degraded for the tick: its watchers keep their views and get no
 * events until a tick that is complete.
 */
#include "internal.h"

#include <math.h>

/* Adds a ghost to one of this worker's shards; a shard that misses one
   computes no view this tick. */
static void store_ghost(aoi__worker *k, aoi__shard *t, const aoi__ghost *g)
{
  AOI__ASSERT(aoi__worker_of(k->world, t->index) == k->index);
  int rc = aoi__reserve(&k->world->allocator, (void **)&t->ghosts,
                        &t->ghost_capacity, t->ghost_count + 1,
                        sizeof(aoi__ghost));
  if (rc != 0) {
    aoi__fail(k, rc);
    t->degraded = true;
    return;
  }
  t->ghosts[t->ghost_count++] = *g;
  if (!(g->kind & AOI__GHOST_DEPARTED))
    t->ghost_markers++;
}

/* Sends a copy of g to every shard whose rectangle lies within `reach` of
   (g->x, g->y) per axis, except shard `skip`. Returns how many it sent. */
static uint32_t send_around(aoi__worker *k, aoi__ghost g, double reach,
                            unsigned skip)
{
  aoi_world *w = k->world;
  const aoi__layout *l = &w->layout;
  unsigned c0 = aoi__layout_col(l, (double)g.x - reach);
  unsigned c1 = aoi__layout_col(l, (double)g.x + reach);
  unsigned r0 = aoi__layout_row(l, (double)g.y - reach);
  unsigned r1 = aoi__layout_row(l, (double)g.y + reach);
  uint32_t sent = 0;
  for (unsigned row = r0; row <= r1; row++)
    for (unsigned col = c0; col <= c1; col++) {
      unsigned to = row * l->cols + col;
      if (to == skip)
        continue;
      g.shard = to;
      sent++;
      unsigned owner = aoi__worker_of(w, to);
      if (owner != k->index)
        aoi__batch_append(k, &k->ghosts_out[owner], &g, sizeof(g));
      else
        store_ghost(k, &w->shards[to], &g);
    }
  return sent;
}

/* Ghosts every marker near another shard, and sends this tick's departures
   to every other shard whose watchers could have seen the marker where it
   stood. */
void aoi__publish_ghosts(aoi__worker *k, aoi__shard *s, double reach,
                         uint64_t tick)
{
  AOI__ASSERT(aoi__worker_of(k->world, s->index) == k->index);
  /* A marker farther than `reach` inside every edge of the shard goes to
     no other shard (send_around would find only this one): its own
     rectangle tells so without searching the cuts. */
  const aoi__layout *l = &k->world->layout;
  unsigned col = s->index % l->cols, row = s->index / l->cols;
  double x0 = col > 0 ? l->xcut[col - 1] : -INFINITY;
  double x1 = col + 1 < l->cols ? l->xcut[col] : INFINITY;
  double y0 = row > 0 ? l->ycut[row - 1] : -INFINITY;
  double y1 = row + 1 < l->rows ? l->ycut[row] : INFINITY;
  /* the shard's counts and box for the grid, in the same pass */
  uint32_t capped = 0, unchanged = 0, now = aoi__stamp(tick);
  double box[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
  for (uint32_t i = 0; i < s->count; i++) {
    aoi__entity *e = &s->entities[i];
    aoi__box_add(box, e->x, e->y);
    if (e->flags & AOI_WATCHER) {
      capped += e->cap > 0;
      unchanged += e->changed != now && !e->stale;
    }
    if (!(e->flags & AOI_MARKER))
      continue;
    /* apply set the moved flag of a marker it moved this tick; one that
       moved in an earlier tick and not in this one loses it (stored only
       then: an entity's line stays clean) */
    if ((e->flags & AOI__ENTITY_MOVED) && e->touched != now)
      e->flags &= (uint8_t)~AOI__ENTITY_MOVED;
    double x = e->x, y = e->y;
    if (x - reach >= x0 && x + reach < x1 && y - reach >= y0 &&
        y + reach < y1)
      continue;
    aoi__ghost g;
    g.id = e->id;
    g.handle = e->handle;
    g.layers = e->layers;
    g.x = e->x;
    g.y = e->y;
    g.shard = s->index;
    g.kind = e->changed == now ? AOI__GHOST_CHANGED : 0;
    if (e->flags & AOI__ENTITY_APPEAL)
      g.kind |= AOI__GHOST_APPEAL;
    if (e->flags & AOI__ENTITY_MOVED)
      g.kind |= AOI__GHOST_MOVED;
    k->ghosts += send_around(k, g, reach, s->index);
  }
  for (uint32_t i = 0; i < s->departed_count; i++)
    send_around(k, s->departed[i], reach, s->index);
  s->capped = capped;
  s->unchanged = unchanged;
  memcpy(s->box, box, sizeof(box));
}

void aoi__take_ghosts(aoi__worker *k, const aoi__batch *b)
{
  aoi_world *w = k->world;
  const aoi__ghost *items = b->items;
  if (b->incomplete) /* the peer dropped a ghost for one of these shards */
    for (unsigned s = k->index; s < w->shard_count; s += w->threads)
      w->shards[s].degraded = true;
  for (uint32_t i = 0; i < b->count; i++)
    store_ghost(k, &w->shards[items[i].shard], &items[i]);
}
