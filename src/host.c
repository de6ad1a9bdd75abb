/*
 * host.c: everything the host thread calls between ticks, and the tick's
 * orchestration.
 *
 * Submission: each operation is validated against the state as submitted so
 * far, every allocation it needs is made first (so a failure changes
 * nothing), then it is recorded in the host's handle table and folded into
 * the entity's record in the queue of the shard that owns it (route()):
 * one record per handle per tick, holding the latest position, radius and
 * masks, so a queue holds at most one record per live entity plus one per
 * entity removed since the last tick, however many calls were made. An add
 * and a remove of the same handle between two ticks cancel out, and the
 * handle is free again at once. The host keeps, per record, the bounds the
 * tick reserves for (an arrival in the shard its position names, a slot in
 * a handoff batch), and moves them when a later move names another shard.
 *
 * aoi_tick pushes each shard's queue onto its ring, hands each worker the
 * tick command through its control ring, and sleeps on the host bell until
 * every worker has reported through its done ring. After that the workers
 * are idle again and the host owns everything: it collects the watchers
 * that got events, empties the queues, frees the handles removed this
 * tick, and sums the statistics.
 *
 * Queries read the shards' state as of the last tick (their grids and
 * views), which no thread writes between ticks.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int aoi__host_init(aoi_world *w)
{
  aoi__idmap_init(&w->ids);
  return 0;
}

/* The per-handle tables live in one block, so growing them is one
   allocation: it succeeds or changes nothing. */
typedef struct handle_tables {
  aoi__host_entity *host;
  aoi__location *location;
  aoi__mark *mark;
  float *appeal;
  aoi__outbox *outbox;
  uint64_t *idof;
  uint32_t *event_at, *queued, *free_handles, *limbo, *limbo_old, *backlog,
      *assigned;
  uint8_t *in_backlog;
} handle_tables;

static size_t align16(size_t n)
{
  return (n + 15) & ~(size_t)15;
}

/* The block's size for `cap` handles; with `block`, where each table is. */
static size_t handle_block(uint32_t cap, char *block, handle_tables *t)
{
  size_t at = 0;
#define TABLE(field, elem)                                                     \
  do {                                                                         \
    if (block != NULL)                                                         \
      t->field = (void *)(block + at);                                         \
    at += align16(sizeof(elem) * (size_t)cap);                                 \
  } while (0)
  TABLE(host, aoi__host_entity);
  TABLE(location, aoi__location);
  TABLE(mark, aoi__mark);
  TABLE(appeal, float);
  TABLE(outbox, aoi__outbox);
  TABLE(idof, uint64_t);
  TABLE(event_at, uint32_t);
  TABLE(queued, uint32_t);
  TABLE(free_handles, uint32_t);
  TABLE(limbo, uint32_t);
  TABLE(limbo_old, uint32_t);
  TABLE(backlog, uint32_t);
  TABLE(assigned, uint32_t);
  TABLE(in_backlog, uint8_t);
#undef TABLE
  return at;
}

void aoi__host_free(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  aoi__idmap_free(a, &w->ids);
  if (w->outbox != NULL)
    for (uint32_t h = 0; h < w->handle_capacity; h++)
      aoi__outbox_free(a, &w->outbox[h]);
  if (w->host != NULL)
    aoi__free(a, w->host, handle_block(w->handle_capacity, NULL, NULL));
  aoi__pending_free(a, &w->pending);
  /* Records still queued (submitted, never ticked) go with their queues. */
  if (w->shards != NULL)
    for (unsigned s = 0; s < w->shard_count; s++) {
      aoi__queue *q = &w->shards[s].queue;
      aoi__free(a, q->records, sizeof(aoi__record) * q->capacity);
      memset(q, 0, sizeof(*q));
    }
  aoi__free(a, w->query_ids, sizeof(uint64_t) * w->query_capacity);
  aoi__plan *p = &w->plan;
  aoi__free(a, p->xcut, sizeof(double) * w->layout.cols);
  aoi__free(a, p->ycut, sizeof(double) * w->layout.rows);
  aoi__free(a, p->arrivals, sizeof(uint32_t) * w->shard_count);
  aoi__free(a, p->bound, sizeof(uint32_t) * w->threads * w->threads);
  aoi__free(a, p->xs, sizeof(aoi__sample) * p->xs_capacity);
  aoi__free(a, p->ys, sizeof(aoi__sample) * p->ys_capacity);
}

/* ---- handles ------------------------------------------------------------ */

/* Makes sure one more handle can be taken. */
static int reserve_handle(aoi_world *w)
{
  if (w->free_count > 0 || w->handle_count < w->handle_capacity)
    return 0;
  const aoi_allocator *a = &w->allocator;
  uint32_t old = w->handle_capacity;
  if (old >= (UINT32_MAX - 1) / 2)
    return AOI_ENOMEM;
  uint32_t cap = old ? old * 2 : 64;
  char *block = aoi__alloc(a, handle_block(cap, NULL, NULL));
  if (block == NULL)
    return AOI_ENOMEM;
  handle_tables t;
  handle_block(cap, block, &t);
  if (old > 0) {
    memcpy(t.host, w->host, sizeof(*t.host) * old);
    memcpy(t.location, w->location, sizeof(*t.location) * old);
    memcpy(t.mark, w->mark, sizeof(*t.mark) * old);
    memcpy(t.appeal, w->appeal, sizeof(*t.appeal) * old);
    memcpy(t.outbox, w->outbox, sizeof(*t.outbox) * old);
    memcpy(t.idof, w->idof, sizeof(*t.idof) * old);
    memcpy(t.event_at, w->event_at, sizeof(*t.event_at) * old);
    memcpy(t.queued, w->queued, sizeof(*t.queued) * old);
    memcpy(t.in_backlog, w->in_backlog, old);
    memcpy(t.free_handles, w->free_handles, sizeof(uint32_t) * w->free_count);
    memcpy(t.limbo, w->limbo, sizeof(uint32_t) * w->limbo_count);
    memcpy(t.limbo_old, w->limbo_old, sizeof(uint32_t) * w->limbo_old_count);
    memcpy(t.backlog, w->backlog, sizeof(uint32_t) * w->backlog_count);
    memcpy(t.assigned, w->assigned, sizeof(uint32_t) * old);
  }
  memset(t.host + old, 0, sizeof(*t.host) * (cap - old));
  memset(t.location + old, 0xff, sizeof(*t.location) * (cap - old));
  memset(t.mark + old, 0, sizeof(*t.mark) * (cap - old));
  memset(t.appeal + old, 0, sizeof(*t.appeal) * (cap - old));
  memset(t.outbox + old, 0, sizeof(*t.outbox) * (cap - old));
  memset(t.idof + old, 0, sizeof(*t.idof) * (cap - old));
  memset(t.event_at + old, 0, sizeof(*t.event_at) * (cap - old));
  memset(t.queued + old, 0xff, sizeof(*t.queued) * (cap - old));
  memset(t.in_backlog + old, 0, cap - old);
  aoi__free(a, w->host, old > 0 ? handle_block(old, NULL, NULL) : 0);
  w->host = t.host;
  w->location = t.location;
  w->mark = t.mark;
  w->appeal = t.appeal;
  w->outbox = t.outbox;
  w->idof = t.idof;
  w->event_at = t.event_at;
  w->queued = t.queued;
  w->in_backlog = t.in_backlog;
  w->free_handles = t.free_handles;
  w->limbo = t.limbo;
  w->limbo_old = t.limbo_old;
  w->backlog = t.backlog;
  w->assigned = t.assigned;
  w->handle_capacity = cap;
  return 0;
}

static uint32_t take_handle(aoi_world *w)
{
  if (w->free_count > 0)
    return w->free_handles[--w->free_count];
  return w->handle_count++;
}

/* ---- op queues --------------------------------------------------------- */

/* The shard whose queue gets this entity's record: the one that owns it
   at the start of the next tick. */
static unsigned route(const aoi_world *w, uint32_t h)
{
  if (w->host[h].born > w->tick)
    return w->host[h].shard;
  return w->location[h].shard;
}

/* Makes sure handle h has a record in the queue of `shard`, or room for
   one. */
static int reserve_record(aoi_world *w, uint32_t h, unsigned shard)
{
  if (w->queued[h] != AOI__NONE)
    return 0;
  aoi__queue *q = &w->shards[shard].queue;
  return aoi__reserve(&w->allocator, (void **)&q->records, &q->capacity,
                      q->count + 1, sizeof(aoi__record));
}

/* Handle h's record in the queue of `shard`, made empty if it had none
   (room reserved by reserve_record). */
static aoi__record *record_of(aoi_world *w, uint32_t h, unsigned shard)
{
  aoi__queue *q = &w->shards[shard].queue;
  if (w->queued[h] != AOI__NONE)
    return &q->records[w->queued[h]];
  aoi__record *r = &q->records[q->count];
  memset(r, 0, sizeof(*r));
  r->handle = h;
  r->target = shard;
  w->queued[h] = q->count++;
  w->records++;
  return r;
}

/* Counts (delta 1) or uncounts (delta -1) the handoff from `from` to `to`
   that a record may cause: an arrival there and, between two workers, a
   slot in their handoff batch. */
static void count_handoff(aoi_world *w, unsigned from, unsigned to, int delta)
{
  if (to == from)
    return;
  w->shards[to].arrivals_bound += (uint32_t)delta;
  unsigned from_worker = aoi__worker_of(w, from);
  unsigned to_worker = aoi__worker_of(w, to);
  if (from_worker != to_worker)
    w->workers[from_worker].handoffs_out[to_worker].bound += (uint32_t)delta;
}

/* Points a record of `shard` at the shard its new position names, moving
   the counted handoff with it. */
static void retarget(aoi_world *w, aoi__record *r, unsigned shard,
                     unsigned to)
{
  if (r->target == to)
    return;
  count_handoff(w, shard, r->target, -1);
  count_handoff(w, shard, to, 1);
  r->target = to;
}

/* Takes handle h's record (one that adds it) out of the queue of `shard`
   with everything counted for it: the entity is never seen. */
static void cancel_record(aoi_world *w, uint32_t h, unsigned shard)
{
  aoi__queue *q = &w->shards[shard].queue;
  uint32_t at = w->queued[h];
  aoi__record *r = &q->records[at];
  retarget(w, r, shard, shard);
  w->shards[shard].arrivals_bound--; /* its insertion */
  uint32_t last = --q->count;
  if (at != last) {
    *r = q->records[last];
    w->queued[r->handle] = at;
  }
  w->queued[h] = AOI__NONE;
  w->records--;
}

/* ---- operations --------------------------------------------------------- */

static bool radius_ok(const aoi_world *w, float radius)
{
  return isfinite(radius) && radius >= 0 && radius <= w->config.max_radius;
}

int aoi_add(aoi_world *w, uint64_t id, float x, float y, float radius,
            unsigned flags, uint32_t layers, uint32_t interest)
{
  if (w == NULL)
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  if (aoi__idmap_get(&w->ids, id) != AOI__NONE)
    return AOI_EEXIST;
  if (flags == 0 || (flags & ~(AOI_WATCHER | AOI_MARKER)) != 0)
    return AOI_EFLAGS;
  if (!isfinite(x) || !isfinite(y))
    return AOI_ECOORD;
  if (!radius_ok(w, radius))
    return AOI_ERADIUS;
  unsigned shard = aoi__layout_shard(&w->layout, x, y);
  int rc;
  if ((rc = aoi__idmap_reserve(&w->allocator, &w->ids)) != 0 ||
      (rc = reserve_handle(w)) != 0)
    return rc;
  /* The handle it will take is free, so it has no record: make room. */
  aoi__queue *q = &w->shards[shard].queue;
  if ((rc = aoi__reserve(&w->allocator, (void **)&q->records, &q->capacity,
                         q->count + 1, sizeof(aoi__record))) != 0)
    return rc;
  uint32_t h = take_handle(w);
  aoi__host_entity *e = &w->host[h];
  e->id = id;
  e->born = w->tick + 1;
  e->radius = radius;
  e->appeal = 0;
  e->flags = flags | AOI__LIVE;
  e->shard = shard;
  w->outbox[h].count = 0;
  w->idof[h] = id;
  w->event_at[h] = 0;
  aoi__idmap_put(&w->ids, id, h);
  w->live++;
  if (flags & AOI_WATCHER) {
    w->watchers++;
    w->radius_sum += radius;
    if (radius > w->radius_high)
      w->radius_high = radius;
  }
  aoi__record *r = record_of(w, h, shard);
  r->what = AOI__RECORD_ADD;
  r->id = id;
  r->x = x;
  r->y = y;
  r->radius = radius;
  r->flags = flags;
  r->layers = layers;
  r->interest = interest;
  w->shards[shard].arrivals_bound++; /* its insertion */
  return 0;
}

/* Looks up a live id; AOI__NONE if it is not live. */
static uint32_t live_handle(const aoi_world *w, uint64_t id)
{
  return aoi__idmap_get(&w->ids, id);
}

/* The prologue of an operation on a live entity: the checks in their
   documented order (`invalid` is the argument check's verdict), then room
   for its record in the queue of the shard that owns the entity. */
static int begin_op(aoi_world *w, uint64_t id, int invalid, uint32_t *h,
                    unsigned *shard)
{
  if (w->in_flight)
    return AOI_EBUSY;
  *h = live_handle(w, id);
  if (*h == AOI__NONE)
    return AOI_ENOENT;
  if (invalid != 0)
    return invalid;
  *shard = route(w, *h);
  return reserve_record(w, *h, *shard);
}

int aoi_move(aoi_world *w, uint64_t id, float x, float y)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, isfinite(x) && isfinite(y) ? 0 : AOI_ECOORD, &h,
                    &shard);
  if (rc != 0)
    return rc;
  aoi__record *r = record_of(w, h, shard);
  r->what |= AOI__RECORD_MOVE;
  r->x = x;
  r->y = y;
  /* If it ends up in another shard, that shard and the batch between the
     two workers need room for it: count it, to reserve before the tick. */
  retarget(w, r, shard, aoi__layout_shard(&w->layout, x, y));
  return 0;
}

int aoi_set_radius(aoi_world *w, uint64_t id, float radius)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, radius_ok(w, radius) ? 0 : AOI_ERADIUS, &h, &shard);
  if (rc != 0)
    return rc;
  aoi__host_entity *e = &w->host[h];
  if (e->flags & AOI_WATCHER) {
    w->radius_sum += (double)radius - (double)e->radius;
    if (radius > w->radius_high)
      w->radius_high = radius;
    else if (e->radius == w->radius_high && radius < e->radius)
      w->radius_high_dirty = true;
  }
  e->radius = radius;
  aoi__record *r = record_of(w, h, shard);
  r->what |= AOI__RECORD_RADIUS;
  r->radius = radius;
  return 0;
}

int aoi_set_layers(aoi_world *w, uint64_t id, uint32_t layers,
                   uint32_t interest)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, 0, &h, &shard);
  if (rc != 0)
    return rc;
  aoi__record *r = record_of(w, h, shard);
  r->what |= AOI__RECORD_LAYERS;
  r->layers = layers;
  r->interest = interest;
  return 0;
}

int aoi_set_appeal(aoi_world *w, uint64_t id, float appeal)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, radius_ok(w, appeal) ? 0 : AOI_ERADIUS, &h, &shard);
  if (rc != 0)
    return rc;
  aoi__host_entity *e = &w->host[h];
  if (appeal > w->appeal_high)
    w->appeal_high = appeal;
  else if (e->appeal == w->appeal_high && appeal < e->appeal)
    w->appeal_high_dirty = true;
  e->appeal = appeal;
  aoi__record *r = record_of(w, h, shard);
  r->what |= AOI__RECORD_APPEAL;
  r->appeal = appeal;
  return 0;
}

int aoi_set_cap(aoi_world *w, uint64_t id, uint32_t cap)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, 0, &h, &shard);
  if (rc != 0)
    return rc;
  aoi__record *r = record_of(w, h, shard);
  r->what |= AOI__RECORD_CAP;
  r->cap = cap;
  return 0;
}

int aoi_remove(aoi_world *w, uint64_t id)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, 0, &h, &shard);
  if (rc != 0)
    return rc;
  aoi__host_entity *e = &w->host[h];
  aoi__idmap_del(&w->ids, id);
  e->flags &= ~AOI__LIVE;
  w->live--;
  if (e->appeal > 0 && e->appeal == w->appeal_high)
    w->appeal_high_dirty = true;
  if (e->flags & AOI_WATCHER) {
    w->watchers--;
    w->radius_sum -= e->radius;
    if (e->radius == w->radius_high)
      w->radius_high_dirty = true;
    /* A removed watcher's undrained events are dropped now, with their
       memory: the handle's next owner may need none. */
    if (e->born <= w->tick)
      aoi__record_drop(w, h);
    aoi__outbox_free(&w->allocator, &w->outbox[h]);
  }
  if (e->born > w->tick) {
    /* Added since the last tick: no tick, no view, no query has seen it,
       so the add and the remove cancel out and the handle is free now. */
    cancel_record(w, h, shard);
    w->free_handles[w->free_count++] = h;
    return 0;
  }
  /* Whatever else the record held is moot now; where it stood at the end of
     the last tick is what its watchers must leave. */
  aoi__record *r = record_of(w, h, shard);
  retarget(w, r, shard, shard);
  r->what = AOI__RECORD_REMOVE;
  w->limbo[w->limbo_count++] = h;
  return 0;
}

/* ---- tick --------------------------------------------------------------- */

/* The largest radius of a live watcher and appeal of a live entity, after
   the one that was the largest shrank or left. */
static void recompute_highs(aoi_world *w)
{
  float radius = 0, appeal = 0;
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__host_entity *e = &w->host[h];
    if (!(e->flags & AOI__LIVE))
      continue;
    if ((e->flags & AOI_WATCHER) && e->radius > radius)
      radius = e->radius;
    if (e->appeal > appeal)
      appeal = e->appeal;
  }
  w->radius_high = radius;
  w->appeal_high = appeal;
  w->radius_high_dirty = w->appeal_high_dirty = false;
}

/* ---- rebalancing -------------------------------------------------------- */

static int compare_samples(const void *a, const void *b)
{
  float x = ((const aoi__sample *)a)->v, y = ((const aoi__sample *)b)->v;
  return (x > y) - (x < y);
}

/* Cuts that split the sampled coordinates into `bands` parts of equal
   weight. */
static void quantile_cuts(aoi__sample *sample, uint32_t n, uint64_t total,
                          unsigned bands, double *cut)
{
  qsort(sample, n, sizeof(*sample), compare_samples);
  uint64_t sum = 0;
  uint32_t i = 0;
  for (unsigned c = 1; c < bands; c++) {
    uint64_t want = total * c / bands;
    while (i + 1 < n && sum + sample[i].weight <= want)
      sum += sample[i++].weight;
    double v = sample[i].v;
    if (c > 1 && !(v > cut[c - 2]))
      v = nextafter(cut[c - 2], INFINITY); /* strictly increasing */
    cut[c - 1] = v;
  }
}

/* The work an entity brings its shard each tick: itself, plus the view it
   walks when it is a watcher. A crowd's dense quarter costs more than its
   head count says. */
static uint32_t entity_load(const aoi__entity *e)
{
  return 1 + e->view.count;
}

/* Counts an entity in shard `from` at (x, y) that the new cuts `next` may
   hand off. */
static void plan_arrival(aoi_world *w, const aoi__layout *next, unsigned from,
                         float x, float y)
{
  unsigned to = aoi__layout_shard(next, x, y);
  if (to == from)
    return;
  w->plan.arrivals[to]++;
  unsigned from_worker = aoi__worker_of(w, from);
  unsigned to_worker = aoi__worker_of(w, to);
  if (from_worker != to_worker)
    w->plan.bound[from_worker * w->threads + to_worker]++;
}

/* Decides whether this tick moves the shard cuts and, if so, plans the new
   ones and counts exactly where every entity goes, so that the tick can
   reserve for the handoffs. Nothing is changed yet; false when no move is
   due, or when the plan cannot get memory (rebalancing is only an
   optimisation). */
static bool plan_relayout(aoi_world *w)
{
  unsigned interval = w->config.rebalance_interval;
  unsigned shards = w->shard_count;
  if (interval == 0 || shards < 2 || (w->tick + 1) % interval != 0)
    return false;
  uint64_t total = 0, most = 0, count = 0;
  for (unsigned s = 0; s < shards; s++) {
    uint64_t load = 0;
    for (uint32_t i = 0; i < w->shards[s].count; i++)
      load += entity_load(&w->shards[s].entities[i]);
    total += load;
    count += w->shards[s].count;
    if (load > most)
      most = load;
  }
  if (count < 4ull * shards || most * 4 <= total * 5 / shards)
    return false; /* busiest shard within 1.25x of the mean load */
  const aoi_allocator *a = &w->allocator;
  aoi__plan *p = &w->plan;
  unsigned cols = w->layout.cols, rows = w->layout.rows;
  uint32_t step = (uint32_t)(count / 65536 + 1);
  uint32_t n = (uint32_t)(count / step + shards);
  if (p->xcut == NULL) {
    p->xcut = aoi__calloc(a, sizeof(double) * cols);
    p->ycut = aoi__calloc(a, sizeof(double) * rows);
    p->arrivals = aoi__calloc(a, sizeof(uint32_t) * shards);
    p->bound = aoi__calloc(a, sizeof(uint32_t) * w->threads * w->threads);
    if (!p->xcut || !p->ycut || !p->arrivals || !p->bound)
      return false;
  }
  if (aoi__reserve(a, (void **)&p->xs, &p->xs_capacity, n,
                   sizeof(aoi__sample)) != 0 ||
      aoi__reserve(a, (void **)&p->ys, &p->ys_capacity, n,
                   sizeof(aoi__sample)) != 0)
    return false;
  uint32_t m = 0, seen = 0;
  uint64_t sampled = 0;
  for (unsigned s = 0; s < shards; s++)
    for (uint32_t i = 0; i < w->shards[s].count; i++)
      if (seen++ % step == 0 && m < n) {
        const aoi__entity *e = &w->shards[s].entities[i];
        uint32_t load = entity_load(e);
        p->xs[m] = (aoi__sample){e->x, load};
        p->ys[m] = (aoi__sample){e->y, load};
        sampled += load;
        m++;
      }
  quantile_cuts(p->xs, m, sampled, cols, p->xcut);
  quantile_cuts(p->ys, m, sampled, rows, p->ycut);
  aoi__layout next = {cols, rows, p->xcut, p->ycut};
  memset(p->arrivals, 0, sizeof(uint32_t) * shards);
  memset(p->bound, 0, sizeof(uint32_t) * w->threads * w->threads);
  /* Under the new cuts an entity may leave from where it is now, or from
     where this tick's ops put it: count both, an upper bound. */
  for (unsigned s = 0; s < shards; s++)
    for (uint32_t i = 0; i < w->shards[s].count; i++) {
      const aoi__entity *e = &w->shards[s].entities[i];
      plan_arrival(w, &next, s, e->x, e->y);
    }
  for (unsigned s = 0; s < shards; s++) {
    const aoi__queue *q = &w->shards[s].queue;
    for (uint32_t i = 0; i < q->count; i++) {
      const aoi__record *r = &q->records[i];
      if (r->what & (AOI__RECORD_ADD | AOI__RECORD_MOVE))
        plan_arrival(w, &next, s, r->x, r->y);
    }
  }
  return true;
}

static void commit_relayout(aoi_world *w)
{
  if (w->layout.cols > 1)
    memcpy(w->layout.xcut, w->plan.xcut, sizeof(double) * (w->layout.cols - 1));
  if (w->layout.rows > 1)
    memcpy(w->layout.ycut, w->plan.ycut, sizeof(double) * (w->layout.rows - 1));
  w->stats.rebalances++;
}

/* aoi_tick_begin; `blocking` when aoi_tick calls it. */
static int tick_begin(aoi_world *w, bool blocking)
{
  if (w == NULL)
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  uint64_t started = aoi__now_ns();
  bool relayout = plan_relayout(w);
  const aoi_allocator *a = &w->allocator;
  int rc;
  /* The last tick's undelivered events move to their outboxes, so that the
     workers can reuse the segments (and the marks can change). */
  if ((rc = aoi__segments_settle(w)) != 0)
    return rc;
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    /* The apply phase then never allocates: no op and no handoff can be
       lost to a failed allocation inside the tick. Each record touches and
       departs at most once. */
    uint32_t planned = relayout ? w->plan.arrivals[s] : 0;
    uint32_t need = sh->count + sh->arrivals_bound + planned;
    aoi__peak_note(&sh->entity_peak, need);
    aoi__peak_note(&sh->queue.peak, sh->queue.count);
    if ((rc = aoi__reserve(a, (void **)&sh->entities, &sh->capacity, need,
                           sizeof(aoi__entity))) != 0 ||
        (rc = aoi__reserve(a, (void **)&sh->touched, &sh->touched_capacity,
                           sh->queue.count, sizeof(uint32_t))) != 0 ||
        (rc = aoi__reserve(a, (void **)&sh->departed, &sh->departed_capacity,
                           sh->queue.count, sizeof(aoi__ghost))) != 0)
      return rc;
  }
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++) {
      aoi__batch *b = &w->workers[i].handoffs_out[j];
      uint32_t bound = b->bound + (relayout ? w->plan.bound[i * w->threads + j] : 0);
      aoi__peak_note(&b->peak, bound);
      if (bound > 0 && (rc = aoi__reserve(a, &b->items, &b->capacity, bound,
                                          sizeof(aoi__handoff))) != 0)
        return rc;
    }
  /* From here on nothing can fail before the workers run. */
  if (relayout)
    commit_relayout(w);
  w->command.relayout = relayout;
  if (w->radius_high_dirty || w->appeal_high_dirty)
    recompute_highs(w);
  /* A marker is seen from max(the watcher's radius, its own appeal). */
  double seen = fmax(w->radius_high, w->appeal_high);
  double reach = seen + (double)w->config.hysteresis;
  double extent = aoi__reach_extent(&w->shape, reach);
  w->command.tick = w->tick + 1;
  w->command.ghost_reach = extent * (1 + 1e-9) + 1e-9;
  w->command.appeals = w->appeal_high > 0;
  /* Cells follow the usual reach, not the largest: a watcher scans the
     cells its own reach covers, so one spectator with a huge radius costs
     its own scan and nobody else's. */
  double usual = w->watchers > 0 ? w->radius_sum / (double)w->watchers : 0;
  usual = fmin(fmax(usual, 0) + (double)w->config.hysteresis, reach);
  w->command.cell_size = w->shape.kind == AOI_SHAPE_CELLS
                             ? fmax(w->shape.cell, usual)
                             : fmax(usual * AOI__CELL_PER_REACH, 1e-3);
  w->command.shutdown = 0;
  w->in_flight = true;
  w->tick_started = started;
  /* A tick with nothing to apply, no view held back by the last one, the
     cuts where they were and the same ghost reach would rebuild the same
     ghosts and grids, compute no watcher and make no event: the workers
     sleep on, and aoi_tick_end counts the tick with what they reported
     last (no handoff, no event, no time). */
  if (w->records == 0 && !relayout && !w->views_held && !w->lagging &&
      w->command.ghost_reach == w->last_ghost_reach) {
    for (unsigned i = 0; i < w->threads; i++) {
      aoi__worker *k = &w->workers[i];
      k->handoffs = k->events_made = 0;
      memset(k->phase_ns, 0, sizeof(k->phase_ns));
    }
    for (unsigned s = 0; s < w->shard_count; s++)
      w->shards[s].compute_ns = 0;
    w->workers_done = w->threads;
    return 0;
  }
  for (unsigned s = 0; s < w->shard_count; s++)
    while (aoi__ring_push(w->shards[s].ops, &w->shards[s].queue) != 0)
      ; /* holds 3; at most one queue is ever on it */
  /* A small world with a few changes is cheaper to tick here than to wake
     the workers for: a wake-up and the batches between them cost more
     than the tick itself (a tick costs about 50 ns per entity and a few
     us per changed one; a wake-up tens of us). So is any tick the host
     would only wait for, alone with its one worker. */
  w->command.on_host = w->live + 16 * (uint64_t)w->records <= w->inline_cost ||
                       (blocking && w->threads == 1 && w->inline_single);
  if (w->command.on_host) {
    aoi__tick_on_host(w, &w->command);
    w->workers_done = w->threads;
    return 0;
  }
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    AOI__STRESS();
    while (aoi__ring_push(k->control, &w->command) != 0)
      ; /* holds 3; at most one command is ever in flight */
    aoi__bell_ring(&k->bell);
  }
  w->workers_done = 0;
  return 0;
}

/* Every SHRINK_PERIOD ticks, the arrays that grew for a burst of
   operations, handoffs or departures give back what the last two periods
   did not need: a flood's memory goes back 8 to 12 ticks after it, while a
   crowd whose needs stay within 4x of their peaks never reallocates. (The
   grid and the compute scratch, sized by entities plus ghosts, are left
   as they are.) */
#define SHRINK_PERIOD 4

/* Gives back what one array of `elem`-byte items did not need lately, but
   never what it holds now. */
static void shrink_to_peak(const aoi_allocator *a, void **array, uint32_t *cap,
                           aoi__peak *peak, uint32_t holds, size_t elem)
{
  uint32_t recent = aoi__peak_recent(peak);
  aoi__peak_turn(peak);
  aoi__shrink(a, array, cap, recent > holds ? recent : holds, elem);
}

static void shrink_arrays(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  /* The needs of the apply phase were noted when the tick reserved them;
     those of the exchange, now. */
  for (unsigned s = 0; s < w->shard_count; s++)
    aoi__peak_note(&w->shards[s].ghost_peak, w->shards[s].ghost_count);
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++)
      aoi__peak_note(&w->workers[i].ghosts_out[j].peak,
                     w->workers[i].ghosts_out[j].count);
  if (w->tick % SHRINK_PERIOD != 0)
    return;
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    aoi__queue *q = &sh->queue;
    /* Each record touches and departs at most once: one peak for three. */
    uint32_t records = aoi__peak_recent(&q->peak);
    aoi__peak_turn(&q->peak);
    aoi__shrink(a, (void **)&q->records, &q->capacity,
                records > q->count ? records : q->count, sizeof(aoi__record));
    aoi__shrink(a, (void **)&sh->touched, &sh->touched_capacity, records,
                sizeof(uint32_t));
    aoi__shrink(a, (void **)&sh->departed, &sh->departed_capacity, records,
                sizeof(aoi__ghost));
    shrink_to_peak(a, (void **)&sh->entities, &sh->capacity, &sh->entity_peak,
                   sh->count, sizeof(aoi__entity));
    shrink_to_peak(a, (void **)&sh->ghosts, &sh->ghost_capacity,
                   &sh->ghost_peak, sh->ghost_count, sizeof(aoi__ghost));
  }
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++) {
      aoi__batch *b = &w->workers[i].handoffs_out[j];
      shrink_to_peak(a, &b->items, &b->capacity, &b->peak, b->count,
                     sizeof(aoi__handoff));
      b = &w->workers[i].ghosts_out[j];
      shrink_to_peak(a, &b->items, &b->capacity, &b->peak, b->count,
                     sizeof(aoi__ghost));
    }
}

/* Empties the queues the tick applied. */
static void end_queues(aoi_world *w)
{
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    for (uint32_t i = 0; i < sh->queue.count; i++)
      w->queued[sh->queue.records[i].handle] = AOI__NONE;
    sh->queue.count = 0;
    sh->arrivals_bound = 0;
    sh->touched_count = sh->departed_count = 0; /* read only in the tick */
  }
  w->records = 0;
}

/* Takes the done reports that have arrived; true when all have. */
static bool collect_done(aoi_world *w)
{
  for (unsigned i = 0; i < w->threads; i++)
    while (aoi__ring_pop(w->workers[i].done) != NULL)
      w->workers_done++;
  return w->workers_done == w->threads;
}

int aoi_tick_poll(aoi_world *w)
{
  if (w == NULL || !w->in_flight)
    return AOI_EINVAL;
  return collect_done(w) ? 1 : 0;
}

int aoi_tick_end(aoi_world *w)
{
  if (w == NULL || !w->in_flight)
    return AOI_EINVAL;
  for (;;) {
    uint32_t seen = aoi__bell_read(&w->host_bell);
    if (collect_done(w))
      break;
    aoi__bell_wait(&w->host_bell, seen);
  }
  w->in_flight = false;
  w->tick++;

  /* The workers are idle: collect, recycle, count. */
  end_queues(w);
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++)
      w->workers[i].handoffs_out[j].bound = 0;
  int rc = 0;
  aoi_stats *st = &w->stats;
  memset(st->phase_ns, 0, sizeof(st->phase_ns));
  st->ghosts = st->handoffs = st->events = 0;
  w->lagging = false;
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    if (k->error != 0)
      rc = k->error;
    for (int p = 0; p < AOI_PHASE_COUNT; p++)
      if (k->phase_ns[p] > st->phase_ns[p])
        st->phase_ns[p] = k->phase_ns[p];
    st->ghosts += k->ghosts;
    st->handoffs += k->handoffs;
    st->events += k->events_made;
    w->lagging |= k->lagging > 0;
  }
  /* Handles removed before this tick are free once no view can hold them:
     after a tick that recomputed every view. A view held back by a failed
     tick may still hold one, and a new entity under it would pass for the
     old one, so those wait for a tick that succeeds. */
  w->views_held = rc != 0;
  /* Their ids stay readable for one more tick: the leaves of this one name
     them until they are delivered. */
  if (rc == 0) {
    for (uint32_t i = 0; i < w->limbo_old_count; i++)
      w->free_handles[w->free_count++] = w->limbo_old[i];
    w->limbo_old_count = 0;
  }
  for (uint32_t i = 0; i < w->limbo_count; i++)
    w->limbo_old[w->limbo_old_count++] = w->limbo[i];
  w->limbo_count = 0;
  aoi__segments_assign(w);
  shrink_arrays(w);
  w->last_ghost_reach = w->command.ghost_reach;
  for (unsigned s = 0; s < w->shard_count; s++) {
    w->shard_entities[s] = w->shards[s].count;
    w->shard_ns[s] = w->shards[s].compute_ns;
  }
  st->tick = w->tick;
  st->entities = w->live;
  st->watchers = w->watchers;
  st->tick_ns = aoi__now_ns() - w->tick_started;
  return rc;
}

int aoi_tick_begin(aoi_world *w)
{
  return tick_begin(w, false);
}

int aoi_tick(aoi_world *w)
{
  int rc = tick_begin(w, true);
  return rc != 0 ? rc : aoi_tick_end(w);
}

/* ---- outboxes ----------------------------------------------------------- */

int aoi_pending(aoi_world *w, const uint64_t **ids, size_t *count)
{
  if (w == NULL || ids == NULL || count == NULL)
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  int rc = aoi__pending_update(w);
  if (rc != 0)
    return rc;
  *ids = w->pending.ids;
  *count = w->pending.ids_count;
  return 0;
}

/* ---- queries ------------------------------------------------------------ */

static int compare_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int collect(aoi_world *w, uint32_t n, uint64_t id)
{
  int rc = aoi__reserve(&w->allocator, (void **)&w->query_ids,
                        &w->query_capacity, n + 1, sizeof(uint64_t));
  if (rc == 0)
    w->query_ids[n] = id;
  return rc;
}

static void answer(aoi_world *w, uint32_t n, uint64_t *ids, size_t capacity,
                   size_t *count)
{
  if (n > 1)
    qsort(w->query_ids, n, sizeof(uint64_t), compare_u64);
  for (uint32_t i = 0; i < n && i < capacity; i++)
    ids[i] = w->query_ids[i];
  *count = n;
}

/* Calls visit(shard) for every shard whose rectangle meets the box. */
static void shards_in_box(const aoi_world *w, const double box[4],
                          unsigned range[4])
{
  range[0] = aoi__layout_col(&w->layout, box[0]);
  range[1] = aoi__layout_row(&w->layout, box[1]);
  range[2] = aoi__layout_col(&w->layout, box[2]);
  range[3] = aoi__layout_row(&w->layout, box[3]);
}

int aoi_query_circle(aoi_world *w, float x, float y, float radius,
                     uint32_t layer_mask, uint64_t *ids, size_t capacity,
                     size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  if (!isfinite(x) || !isfinite(y))
    return AOI_ECOORD;
  if (!radius_ok(w, radius))
    return AOI_ERADIUS;
  aoi__shape circle = {AOI_SHAPE_CIRCLE, 0};
  double box[4];
  aoi__reach_box(&circle, x, y, radius, box);
  unsigned sr[4];
  shards_in_box(w, box, sr);
  uint32_t n = 0;
  for (unsigned row = sr[1]; row <= sr[3]; row++)
    for (unsigned col = sr[0]; col <= sr[2]; col++) {
      const aoi__grid *g = &w->shards[row * w->layout.cols + col].grid;
      if (g->count == 0)
        continue;
      uint32_t r[4];
      aoi__grid_range(g, box, r);
      for (uint32_t cy = r[1]; cy <= r[3]; cy++)
        for (uint32_t i = aoi__grid_row_begin(g, cy, r[0]);
             i < aoi__grid_row_end(g, cy, r[2]); i++) {
          const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_MARKER;
          if ((g->info[i] & want) != want || (g->layers[i] & layer_mask) == 0)
            continue;
          if (!aoi__within(&circle, x, y, g->x[i], g->y[i], radius))
            continue;
          if (collect(w, n, g->id[i]) != 0)
            return AOI_ENOMEM;
          n++;
        }
    }
  answer(w, n, ids, capacity, count);
  return 0;
}

/* The shard record of a live, applied handle, or NULL. */
static const aoi__entity *applied(const aoi_world *w, uint32_t h)
{
  if (w->host[h].born > w->tick)
    return NULL;
  const aoi__location *loc = &w->location[h];
  return &w->shards[loc->shard].entities[loc->slot];
}

int aoi_view(aoi_world *w, uint64_t id, uint64_t *ids, size_t capacity,
             size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  uint32_t h = live_handle(w, id);
  if (h == AOI__NONE)
    return AOI_ENOENT;
  const aoi__entity *e = applied(w, h);
  size_t n = e != NULL ? e->view.count : 0;
  for (size_t i = 0; i < n && i < capacity; i++)
    ids[i] = w->idof[e->view.handles[i]];
  *count = n;
  return 0;
}

static bool view_holds(const aoi_world *w, const aoi__view *v, uint64_t id,
                       uint32_t handle)
{
  uint32_t at = aoi__view_find(v, w->idof, id);
  return at < v->count && v->handles[at] == handle;
}

int aoi_watchers_of(aoi_world *w, uint64_t id, uint64_t *ids, size_t capacity,
                    size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0))
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  uint32_t h = live_handle(w, id);
  if (h == AOI__NONE)
    return AOI_ENOENT;
  const aoi__entity *e = applied(w, h);
  uint32_t n = 0;
  if (e != NULL && (e->flags & AOI_MARKER)) {
    double d = w->last_ghost_reach;
    double box[4] = {e->x - d, e->y - d, e->x + d, e->y + d};
    unsigned sr[4];
    shards_in_box(w, box, sr);
    for (unsigned row = sr[1]; row <= sr[3]; row++)
      for (unsigned col = sr[0]; col <= sr[2]; col++) {
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
            if ((g->info[i] & want) != want)
              continue;
            if (!view_holds(w, &s->entities[g->slot[i]].view, e->id, h))
              continue;
            if (collect(w, n, g->id[i]) != 0)
              return AOI_ENOMEM;
            n++;
          }
      }
  }
  answer(w, n, ids, capacity, count);
  return 0;
}

int aoi_shard_ghosts(aoi_world *w, unsigned shard, uint64_t *ids,
                     size_t capacity, size_t *count)
{
  if (w == NULL || count == NULL || (ids == NULL && capacity > 0) ||
      shard >= w->shard_count)
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
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
