/*
 * transfer.c: a watcher's view taken out of one world and put into
 * another, for a world that spans processes (src/mpi/world.c): when a
 * watcher crosses into the part of the map another process owns, its
 * view travels with it, so that the next tick's events there are
 * computed against what it saw, as one world would compute them.
 *
 * aoi__view_export reads a watcher's view as of the last tick (ids and,
 * with move bands, the positions last told), as aoi_view does.
 * aoi__view_install, between ticks, builds a view from ids of entities
 * live in this world and queues it for the watcher, which must have a
 * record this tick (the caller moves it): the next tick's apply
 * step puts it in place of the watcher's own view, after the watcher's
 * record (aoi__adopt_installs, on the lane that owns the watcher's shard),
 * and marks the watcher to be scanned whole against it. The view's block
 * comes from lane 0's blocks, which the host owns between ticks; one that
 * no tick adopted (its watcher was removed, or the tick failed before its
 * apply step) goes back when the tick ends or the world is destroyed.
 */
#include "compute.h"

#include <string.h>

int aoi__view_export(aoi_world *w, uint64_t id, uint64_t *ids, float *told_xy,
                     size_t capacity, size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  int rc = aoi__busy(w);
  if (rc != 0)
    return rc;
  uint32_t h = aoi__live_handle(w, id);
  if (h == AOI__NONE)
    return AOI_ENOENT;
  *count = 0;
  if (w->host[h].born > w->tick)
    return 0; /* added since the last tick: an empty view */
  const aoi__location *loc = &w->location[h];
  const aoi__entity *e = &w->shards[loc->shard].entities[loc->slot];
  const float *told = aoi__view_told(&e->view, aoi__bands(w));
  size_t n = e->view.count;
  for (size_t i = 0; i < n && i < capacity; i++) {
    ids[i] = w->mark[e->view.handles[i]].id;
    if (told_xy != NULL) {
      told_xy[2 * i] = told != NULL ? told[2 * i] : 0;
      told_xy[2 * i + 1] = told != NULL ? told[2 * i + 1] : 0;
    }
  }
  *count = n;
  return 0;
}

/* Gives back the view of install i that no tick adopted. */
static void release_install(aoi_world *w, aoi__install *in)
{
  if (!in->adopted)
    aoi__view_recycle(&w->workers[0], &in->view);
  in->adopted = true;
}

void aoi__installs_clear(aoi_world *w)
{
  for (uint32_t i = 0; i < w->install_count; i++)
    release_install(w, &w->installs[i]);
  w->install_count = 0;
}

void aoi__installs_free(aoi_world *w)
{
  aoi__installs_clear(w);
  aoi__free(&w->allocator, w->installs,
            sizeof(aoi__install) * w->install_capacity);
  w->installs = NULL;
  w->install_capacity = 0;
}

int aoi__view_install(aoi_world *w, uint64_t watcher, const uint64_t *ids,
                      const float *told_xy, size_t n)
{
  if (w == NULL || (ids == NULL && n > 0) || n > UINT32_MAX / 2)
    return AOI_EINVAL;
  int rc = aoi__busy(w);
  if (rc != 0)
    return rc;
  uint32_t h = aoi__live_handle(w, watcher);
  if (h == AOI__NONE)
    return AOI_ENOENT;
  if (!(w->host[h].flags & AOI_WATCHER))
    return AOI_EFLAGS;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && ids[i] <= ids[i - 1])
      return AOI_EINVAL; /* ascending, each once */
    uint32_t m = aoi__live_handle(w, ids[i]);
    if (m == AOI__NONE)
      return AOI_ENOENT;
    if (m == h || !(w->host[m].flags & AOI_MARKER))
      return AOI_EFLAGS;
  }
  rc = aoi__reserve(&w->allocator, (void **)&w->installs,
                    &w->install_capacity, w->install_count + 1,
                    sizeof(aoi__install));
  if (rc != 0)
    return rc;
  bool told = aoi__bands(w);
  aoi__view view = {NULL, 0, 0};
  if (n > 0 && (rc = aoi__view_reserve_k(&w->workers[0], &view, (uint32_t)n,
                                         told)) != 0)
    return rc;
  float *at = aoi__view_told(&view, told);
  for (size_t i = 0; i < n; i++) {
    view.handles[i] = aoi__live_handle(w, ids[i]);
    if (at != NULL) {
      at[2 * i] = told_xy != NULL ? told_xy[2 * i] : 0;
      at[2 * i + 1] = told_xy != NULL ? told_xy[2 * i + 1] : 0;
    }
  }
  view.count = (uint32_t)n;
  /* The shard whose queue takes the watcher's records: its apply step
     adopts the view (before any handoff moves the watcher on). */
  unsigned shard = w->host[h].born > w->tick ? w->host[h].shard
                                             : w->location[h].shard;
  /* A second install for the same watcher before a tick replaces the
     first. */
  for (uint32_t i = 0; i < w->install_count; i++)
    if (w->installs[i].handle == h && !w->installs[i].adopted) {
      release_install(w, &w->installs[i]);
      w->installs[i] = (aoi__install){h, shard, false, view};
      return 0;
    }
  w->installs[w->install_count++] = (aoi__install){h, shard, false, view};
  return 0;
}

void aoi__adopt_installs(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  aoi_world *w = k->world;
  for (uint32_t i = 0; i < w->install_count; i++) {
    aoi__install *in = &w->installs[i];
    if (in->shard != s->index)
      continue; /* another lane's: its fields are not read here */
    const aoi__location *loc = &w->location[in->handle];
    if (in->adopted || loc->shard != s->index)
      continue; /* removed by its record */
    aoi__entity *e = &s->entities[loc->slot];
    aoi__view_recycle(k, &e->view);
    e->view = in->view;
    e->stale |= AOI__STALE_WHOLE;
    e->changed = aoi__stamp(tick);
    in->adopted = true; /* only this lane writes this install */
  }
}
