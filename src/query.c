/*
 * query.c: what the host reads between ticks: aoi_query_circle, aoi_view,
 * aoi_watchers_of, aoi_shard_ghosts, aoi_world_stats and aoi_shard.
 *
 * Queries read the shards' state as of the last tick (their grids, views
 * and ghosts), which no thread writes between ticks; every one returns
 * AOI_EBUSY while a tick or a delivery is under way (aoi__busy). A query
 * by place visits only the shards whose rectangles meet its box, and
 * there only the grid cells the box covers. An answer of ids is sorted,
 * so it does not depend on the shard layout; the ids are gathered in the
 * world's query scratch (query_ids), which grows with the largest answer.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

static int compare_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

#if AOI__ASSERTS_EXPENSIVE
/* Whether an answer names each entity once: its ids strictly ascend. An
   answer of owned entities does, each entity having one owner. */
static bool each_once(const uint64_t *ids, uint32_t n)
{
  for (uint32_t i = 1; i < n; i++)
    if (ids[i - 1] >= ids[i])
      return false;
  return true;
}
#endif

static int collect(aoi_world *w, uint32_t n, uint64_t id)
{
  int rc = aoi__reserve(&w->allocator, (void **)&w->query_ids,
                        &w->query_capacity, n + 1, sizeof(uint64_t));
  if (rc == 0)
    w->query_ids[n] = id;
  return rc;
}

/* Answers the n ids collected, sorted: as many as `capacity` into ids,
   and n into *count. */
static void answer(aoi_world *w, uint32_t n, uint64_t *ids, size_t capacity,
                   size_t *count)
{
  AOI__ASSERT(n == 0 || n <= w->query_capacity);
  if (n > 1)
    qsort(w->query_ids, n, sizeof(uint64_t), compare_u64);
  for (uint32_t i = 0; i < n && i < capacity; i++)
    ids[i] = w->query_ids[i];
  *count = n;
}

/* The shards whose rectangles meet box[4] (x0, y0, x1, y1): the inclusive
   range of their columns, range[2] = (c0, c1), and in column c the rows
   aoi__layout_row(c, box[1]) .. aoi__layout_row(c, box[3]); shard (c, r)
   is shards[r * cols + c]. */
static void columns_in_box(const aoi_world *w, const double box[4],
                           unsigned range[2])
{
  range[0] = aoi__layout_col(&w->layout, box[0]);
  range[1] = aoi__layout_col(&w->layout, box[2]);
  AOI__ASSERT(range[0] <= range[1] && range[1] < w->layout.cols);
}

int aoi_query_circle(aoi_world *w, float x, float y, float radius,
                     uint32_t layer_mask, uint64_t *ids, size_t capacity,
                     size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (aoi__busy(w) != 0)
    return AOI_EBUSY;
  if (!isfinite(x) || !isfinite(y))
    return AOI_ECOORD;
  if (!aoi__radius_ok(w, radius))
    return AOI_ERADIUS;
  aoi__shape circle = {AOI_SHAPE_CIRCLE, 0};
  double box[4];
  aoi__reach_box(&circle, x, y, radius, box);
  unsigned cr[2];
  columns_in_box(w, box, cr);
  uint32_t n = 0;
  for (unsigned col = cr[0]; col <= cr[1]; col++)
    for (unsigned row = aoi__layout_row(&w->layout, col, box[1]),
                  last = aoi__layout_row(&w->layout, col, box[3]);
         row <= last; row++) {
      const aoi__grid *g = &w->shards[row * w->layout.cols + col].grid;
      if (g->count == 0)
        continue;
      uint32_t r[4];
      aoi__grid_range(g, box, r);
      for (uint32_t cy = r[1]; cy <= r[3]; cy++)
        for (uint32_t i = aoi__grid_row_begin(g, cy, r[0]);
             i < aoi__grid_row_end(g, cy, r[2]); i++) {
          const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_MARKER;
          if ((g->entry[i].info & want) != want ||
              (g->entry[i].layers & layer_mask) == 0)
            continue;
          if (!aoi__within(&circle, x, y, g->x[i], g->y[i], radius))
            continue;
          if (collect(w, n, g->entry[i].id) != 0)
            return AOI_ENOMEM;
          n++;
        }
    }
  answer(w, n, ids, capacity, count);
  AOI__ASSERT_EXPENSIVE(each_once(w->query_ids, n));
  return 0;
}

/* The shard record of a live, applied handle, or NULL. */
static const aoi__entity *applied(const aoi_world *w, uint32_t h)
{
  AOI__ASSERT(h < w->handle_count);
  if (w->host[h].born > w->tick)
    return NULL;
  const aoi__location *loc = &w->location[h];
  AOI__ASSERT(loc->shard < w->shard_count);
  AOI__ASSERT(loc->slot < w->shards[loc->shard].count);
  return &w->shards[loc->shard].entities[loc->slot];
}

/* The checks of a query about live entity `id`, in their documented order
   (AOI_EINVAL, AOI_EBUSY, AOI_ENOENT), then its handle and its shard
   record (NULL until a tick applied it). */
static int query_entity(const aoi_world *w, uint64_t id, const uint64_t *ids,
                        size_t capacity, const size_t *count, uint32_t *h,
                        const aoi__entity **e)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (aoi__busy(w) != 0)
    return AOI_EBUSY;
  *h = aoi__live_handle(w, id);
  if (*h == AOI__NONE)
    return AOI_ENOENT;
  *e = applied(w, *h);
  return 0;
}

int aoi_view(aoi_world *w, uint64_t id, uint64_t *ids, size_t capacity,
             size_t *count)
{
  uint32_t h;
  const aoi__entity *e;
  int rc = query_entity(w, id, ids, capacity, count, &h, &e);
  if (rc != 0)
    return rc;
  size_t n = e != NULL ? e->view.count : 0;
  AOI__ASSERT(n == 0 || (e->flags & AOI_WATCHER));
  for (size_t i = 0; i < n && i < capacity; i++)
    ids[i] = w->mark[e->view.handles[i]].id;
  *count = n;
  return 0;
}

static bool view_holds(const aoi_world *w, const aoi__view *v, uint64_t id,
                       uint32_t handle)
{
  uint32_t at = aoi__view_find(v, w->mark, id);
  return at < v->count && v->handles[at] == handle;
}

int aoi_watchers_of(aoi_world *w, uint64_t id, uint64_t *ids, size_t capacity,
                    size_t *count)
{
  uint32_t h;
  const aoi__entity *e;
  int rc = query_entity(w, id, ids, capacity, count, &h, &e);
  if (rc != 0)
    return rc;
  uint32_t n = 0;
  if (e != NULL && (e->flags & AOI_MARKER)) {
    double d = w->last_ghost_reach;
    double box[4] = {e->x - d, e->y - d, e->x + d, e->y + d};
    unsigned cr[2];
    columns_in_box(w, box, cr);
    for (unsigned col = cr[0]; col <= cr[1]; col++)
      for (unsigned row = aoi__layout_row(&w->layout, col, box[1]),
                    last = aoi__layout_row(&w->layout, col, box[3]);
           row <= last; row++) {
        const aoi__shard *s = &w->shards[row * w->layout.cols + col];
        const aoi__grid *g = &s->grid;
        if (g->count == 0)
          continue;
        uint32_t r[4];
        aoi__grid_range(g, box, r);
        for (uint32_t cy = r[1]; cy <= r[3]; cy++)
          for (uint32_t i = aoi__grid_row_begin(g, cy, r[0]);
               i < aoi__grid_row_end(g, cy, r[2]); i++) {
            const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
            if ((g->entry[i].info & want) != want)
              continue;
            AOI__ASSERT(g->entry[i].slot < s->count);
            if (!view_holds(w, &s->entities[g->entry[i].slot].view, e->id, h))
              continue;
            if (collect(w, n, g->entry[i].id) != 0)
              return AOI_ENOMEM;
            n++;
          }
      }
  }
  answer(w, n, ids, capacity, count);
  AOI__ASSERT_EXPENSIVE(each_once(w->query_ids, n));
  return 0;
}

int aoi_shard_ghosts(aoi_world *w, unsigned shard, uint64_t *ids,
                     size_t capacity, size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (aoi__busy(w) != 0)
    return AOI_EBUSY;
  if (shard >= w->shard_count)
    return AOI_EINVAL;
  const aoi__shard *s = &w->shards[shard];
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->ghost_count; i++) {
    if (s->ghosts[i].kind & AOI__GHOST_DEPARTED)
      continue;
    if (collect(w, n, s->ghosts[i].id) != 0)
      return AOI_ENOMEM;
    n++;
  }
  answer(w, n, ids, capacity, count);
  return 0;
}

/* ---- statistics --------------------------------------------------------- */

int aoi_world_stats(const aoi_world *world, aoi_stats *stats)
{
  if (world == NULL || stats == NULL)
    return AOI_EINVAL;
  if (aoi__busy(world) != 0)
    return AOI_EBUSY;
  *stats = world->stats;
  stats->tick = world->tick; /* (kept there alone: a quiet tick counts it) */
  return 0;
}

int aoi_shard(const aoi_world *w, unsigned shard, aoi_shard_info *info)
{
  if (w == NULL || info == NULL)
    return AOI_EINVAL;
  if (aoi__busy(w) != 0)
    return AOI_EBUSY;
  if (shard >= w->shard_count)
    return AOI_EINVAL;
  double r[4];
  aoi__layout_rect(&w->layout, shard, r);
  aoi_shard_info i;
  i.min_x = r[0];
  i.min_y = r[1];
  i.max_x = r[2];
  i.max_y = r[3];
  i.worker = aoi__worker_of(w, shard);
  i.entities = w->shards[shard].count;
  i.ghosts = w->shards[shard].ghost_markers;
  i.compute_ns = w->shards[shard].compute_ns;
  i.ghost_reach = w->shards[shard].ghost_reach;
  *info = i;
  return 0;
}
