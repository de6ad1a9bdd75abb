/*
 * check.c: the invariant walks. aoi__world_valid checks every structure of
 * a world against the others (the id map, the handle tables, each shard's
 * entities and views, the op queues and the bounds the host reserves by);
 * the tests call it, and builds with AOI_CHECK_INVARIANTS defined (the
 * sanitizer builds) run it after every tick (aoi__check_tick). Host only,
 * between ticks: then no worker writes anything, and every write a worker
 * made in the tick was published by its done report (a ring push, which
 * the host's pop acquires).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Shard s's op queue: one record per handle, found by its index, in the
   queue of the shard that owns the handle; each extra belongs to one
   record that points at it, and says more than a move; records that add
   carry nothing else to do, ones that remove nothing else at all. */
static bool queue_valid(const aoi_world *w, unsigned s)
{
  const aoi__queue *q = &w->shards[s].queue;
  if (q->count > q->capacity || q->extra_count > q->extra_capacity)
    return false;
  uint32_t extras = 0;
  for (uint32_t i = 0; i < q->count; i++) {
    const aoi__record *r = &q->records[i];
    if (r->extra < AOI__RECORD_JUST_REMOVE) {
      extras++;
      if (r->extra >= q->extra_count || q->extras[r->extra].record != i ||
          (q->extras[r->extra].what & ~AOI__RECORD_MOVE) == 0 ||
          (q->extras[r->extra].what & AOI__RECORD_REMOVE))
        return false;
    }
    uint32_t what = aoi__record_what(q, r);
    uint32_t h = r->handle;
    if (h >= w->handle_count || w->queued[h] != i)
      return false;
    const aoi__host_entity *e = &w->host[h];
    unsigned owner = e->born > w->tick ? e->shard : w->location[h].shard;
    if (owner != s)
      return false;
    if ((what & AOI__RECORD_ADD) &&
        (!(e->flags & AOI__LIVE) || e->born <= w->tick))
      return false;
    if ((what & AOI__RECORD_REMOVE) &&
        (what != AOI__RECORD_REMOVE || (e->flags & AOI__LIVE)))
      return false;
    if (!(what & AOI__RECORD_REMOVE) && !(e->flags & AOI__LIVE))
      return false;
  }
  return extras == q->extra_count;
}

/* The bounds the host keeps for the tick's reservation are exactly what
   the records count: recounted from them. */
static bool bounds_valid(const aoi_world *w)
{
  uint32_t arrivals[AOI__MAX_SHARDS] = {0};
  for (unsigned s = 0; s < w->shard_count; s++) {
    const aoi__queue *q = &w->shards[s].queue;
    for (uint32_t i = 0; i < q->count; i++) {
      const aoi__record *r = &q->records[i];
      unsigned target = aoi__record_target(w, q, r, s);
      if (aoi__record_what(q, r) & AOI__RECORD_ADD)
        arrivals[s]++;
      if (target != s)
        arrivals[target]++;
    }
  }
  for (unsigned s = 0; s < w->shard_count; s++)
    if (arrivals[s] != w->shards[s].arrivals_bound)
      return false;
  for (unsigned i = 0; i < w->threads; i++) {
    uint32_t bound[AOI__MAX_THREADS] = {0};
    for (unsigned s = i; s < w->shard_count; s += w->threads) {
      const aoi__queue *q = &w->shards[s].queue;
      for (uint32_t k = 0; k < q->count; k++) {
        unsigned to =
            aoi__worker_of(w, aoi__record_target(w, q, &q->records[k], s));
        if (to != i)
          bound[to]++;
      }
    }
    for (unsigned j = 0; j < w->threads; j++)
      if (bound[j] != w->workers[i].handoffs_out[j].bound)
        return false;
  }
  return true;
}

/* The op queues (queue_valid) hold w->records in all, their bounds are
   right, and every handle's queued index names a record of its owner. */
static bool queues_valid(const aoi_world *w)
{
  uint32_t total = 0;
  for (unsigned s = 0; s < w->shard_count; s++) {
    if (!queue_valid(w, s))
      return false;
    total += w->shards[s].queue.count;
  }
  if (total != w->records || !bounds_valid(w))
    return false;
  for (uint32_t h = 0; h < w->handle_count; h++)
    if (w->queued[h] != AOI__NONE) {
      unsigned owner = w->host[h].born > w->tick ? w->host[h].shard
                                                 : w->location[h].shard;
      if (owner >= w->shard_count ||
          w->queued[h] >= w->shards[owner].queue.count)
        return false;
    }
  return true;
}

/* The delivery segments: records that end where the segment does, each
   of a handle below the high-water mark, the delivered offset within the
   segment; and the index by handle (event_at) either built, naming each
   record, or all clear (outbox.c). */
static bool records_valid(const aoi_world *w)
{
  uint32_t indexed = 0;
  for (unsigned i = 0; i < w->threads; i++) {
    const aoi__segment *seg = &w->segments[i];
    if (seg->delivered > seg->count || seg->taken > seg->records)
      return false;
    uint32_t at = 0, records = 0;
    while (at < seg->count) {
      const uint32_t *rec = seg->words + at;
      uint32_t h = aoi__record_handle(rec);
      if (h >= w->handle_count ||
          (w->records_indexed && w->event_at[h] != at + 1))
        return false;
      aoi__record_head head = aoi__record_read(rec);
      at += aoi__record_words(&head);
      records++;
      indexed++;
    }
    if (at != seg->count || records != seg->records)
      return false;
  }
  uint32_t named = 0;
  for (uint32_t h = 0; h < w->handle_count; h++)
    named += w->event_at[h] != 0;
  return named == (w->records_indexed ? indexed : 0);
}

bool aoi__world_valid(aoi_world *w)
{
  AOI__ASSERT(!w->in_flight);
  if (!aoi__idmap_valid(&w->ids))
    return false;
  uint64_t live = 0, watchers = 0;
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__host_entity *e = &w->host[h];
    if (!(e->flags & AOI__LIVE))
      continue;
    if (w->generation[h] == 0) /* a live entity's handle is not retired */
      return false;
    if (w->handle_bits[h] & AOI__HANDLE_GONE) /* only a removed one is */
      return false;
    live++;
    if (e->flags & AOI_WATCHER)
      watchers++;
    if (aoi__idmap_get(&w->ids, w->mark[h].id) != h)
      return false;
    if (e->born > w->tick)
      continue;
    const aoi__location *loc = &w->location[h];
    if (loc->shard >= w->shard_count)
      return false;
    const aoi__shard *s = &w->shards[loc->shard];
    if (loc->slot >= s->count || s->entities[loc->slot].handle != h)
      return false;
    if (s->entities[loc->slot].id != w->mark[h].id)
      return false;
  }
  if (live != w->live || watchers != w->watchers || live != w->ids.count)
    return false;
  /* Membership bits are scratch for one watcher at a time: all clear. */
  for (unsigned i = 0; i < w->threads; i++)
    for (uint32_t j = 0; j < w->workers[i].member_count; j++)
      if (w->workers[i].member[j] != 0)
        return false;
  uint64_t owned = 0;
  for (unsigned i = 0; i < w->shard_count; i++) {
    if (!aoi__shard_valid(w, &w->shards[i]))
      return false;
    owned += w->shards[i].count;
  }
  if (!queues_valid(w) || !records_valid(w))
    return false;
  /* Entities added since the last tick are not in any shard yet. */
  uint64_t unborn = 0;
  for (uint32_t h = 0; h < w->handle_count; h++)
    if ((w->host[h].flags & AOI__LIVE) && w->host[h].born > w->tick)
      unborn++;
  return owned + unborn >= live;
}

bool aoi__shard_valid(const aoi_world *w, const aoi__shard *s)
{
  if (!aoi__ring_valid(s->ops))
    return false;
  /* an entity a line (aoi__reserve_lined) */
  if ((uintptr_t)s->entities % AOI__LINE != 0)
    return false;
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    const aoi__location *loc = &w->location[e->handle];
    if (loc->shard != s->index || loc->slot != i)
      return false;
    /* a marker's appeal is the world's, and its flag says whether it has
       one; any other entity has none there */
    float appeal = w->appeal[e->handle];
    if ((e->flags & AOI_MARKER)
            ? ((e->flags & AOI__ENTITY_APPEAL) != 0) != (appeal > 0)
            : appeal != 0)
      return false;
    if (aoi__layout_shard(&w->layout, e->x, e->y) != s->index)
      return false;
    const aoi__mark *m = &w->mark[e->handle];
    if (m->x != e->x || m->y != e->y ||
        m->layers != ((e->flags & AOI_MARKER) ? e->layers : 0))
      return false;
    if (!(e->flags & AOI_WATCHER) && e->view.count != 0)
      return false;
    for (uint32_t j = 1; j < e->view.count; j++)
      if (w->mark[e->view.handles[j - 1]].id >= w->mark[e->view.handles[j]].id)
        return false;
  }
  return s->grid.width == 0 || aoi__grid_valid(&s->grid);
}

/* A world of up to this many live entities is walked after every tick; a
   larger one after every CHECK_PERIOD-th, so that a checked build's large
   tests (the bench's verification runs, the soak) stay quick. */
#define CHECK_EVERY_TICK_UP_TO 20000u
#define CHECK_PERIOD 16u

void aoi__check_tick(aoi_world *w)
{
  if (w->live > CHECK_EVERY_TICK_UP_TO && w->tick % CHECK_PERIOD != 0)
    return;
  if (!aoi__world_valid(w)) {
    fprintf(stderr,
            "aoi: the world's invariants do not hold after tick %llu "
            "(AOI_CHECK_INVARIANTS)\n",
            (unsigned long long)w->tick);
    abort();
  }
}
