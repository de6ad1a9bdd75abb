/*
 * world.c: the world's lifecycle and configuration, the allocator hooks,
 * error names and statistics. A world is created with its shards, rings and
 * worker threads, all of which live until aoi_destroy.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- allocation --------------------------------------------------------- */

static void *default_alloc(void *user, size_t size)
{
  (void)user;
  return malloc(size);
}

static void *default_realloc(void *user, void *ptr, size_t old_size,
                             size_t new_size)
{
  (void)user;
  (void)old_size;
  return realloc(ptr, new_size);
}

static void default_free(void *user, void *ptr, size_t size)
{
  (void)user;
  (void)size;
  free(ptr);
}

void *aoi__alloc(const aoi_allocator *a, size_t size)
{
  return a->alloc(a->user, size ? size : 1);
}

void *aoi__calloc(const aoi_allocator *a, size_t size)
{
  void *p = aoi__alloc(a, size);
  if (p != NULL)
    memset(p, 0, size ? size : 1);
  return p;
}

void *aoi__realloc(const aoi_allocator *a, void *ptr, size_t old_size,
                   size_t new_size)
{
  if (ptr == NULL)
    return aoi__alloc(a, new_size);
  return a->realloc(a->user, ptr, old_size, new_size ? new_size : 1);
}

void aoi__free(const aoi_allocator *a, void *ptr, size_t size)
{
  if (ptr != NULL)
    a->free(a->user, ptr, size);
}

int aoi__reserve(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  uint64_t capacity = *cap ? *cap : 8;
  while (capacity < need)
    capacity *= 2;
  if (capacity > UINT32_MAX)
    capacity = UINT32_MAX;
  if (capacity * elem / elem != capacity)
    return AOI_ENOMEM;
  void *p = aoi__realloc(a, *array, elem * *cap, elem * capacity);
  if (p == NULL)
    return AOI_ENOMEM;
  *array = p;
  *cap = (uint32_t)capacity;
  return 0;
}

int aoi__reserve_roomy(const aoi_allocator *a, void **array, uint32_t *cap,
                       uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  uint64_t roomy = (uint64_t)need + need / 2;
  return aoi__reserve(a, array, cap,
                      roomy > UINT32_MAX ? UINT32_MAX : (uint32_t)roomy, elem);
}

uint32_t aoi__roomy(uint32_t need, uint32_t hint)
{
  uint64_t want = (uint64_t)need + need / 2;
  if (want < hint)
    want = hint;
  want = (want + 7) & ~(uint64_t)7;
  return want > UINT32_MAX - 7 ? UINT32_MAX - 7 : (uint32_t)want;
}

void aoi__shrink(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t recent, size_t elem)
{
  if (*cap <= 64 || *cap / 4 <= recent)
    return;
  uint32_t capacity = aoi__roomy(recent, 32);
  void *p = aoi__realloc(a, *array, elem * *cap, elem * capacity);
  if (p == NULL)
    return;
  *array = p;
  *cap = capacity;
}

uint64_t aoi__now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- errors ------------------------------------------------------------- */

const char *aoi_strerror(int code)
{
  switch (code) {
  case 0:
    return "success";
  case AOI_EINVAL:
    return "AOI_EINVAL: invalid argument";
  case AOI_ENOMEM:
    return "AOI_ENOMEM: out of memory";
  case AOI_EEXIST:
    return "AOI_EEXIST: id is already live";
  case AOI_ENOENT:
    return "AOI_ENOENT: no such entity";
  case AOI_ECOORD:
    return "AOI_ECOORD: coordinate is NaN or infinite";
  case AOI_ERADIUS:
    return "AOI_ERADIUS: radius is negative, not finite, or above max_radius";
  case AOI_EFLAGS:
    return "AOI_EFLAGS: flags must be AOI_WATCHER, AOI_MARKER or both";
  case AOI_ESYS:
    return "AOI_ESYS: the system refused a thread or sync object";
  case AOI_EBUSY:
    return "AOI_EBUSY: a tick is in flight (call aoi_tick_end first)";
  default:
    return "unknown error";
  }
}

/* ---- config ------------------------------------------------------------- */

void aoi_config_default(aoi_config *config)
{
  if (config == NULL)
    return;
  memset(config, 0, sizeof(*config));
  config->threads = 0;
  config->shards = 0;
  config->min_x = 0;
  config->min_y = 0;
  config->max_x = 1000;
  config->max_y = 1000;
  config->max_radius = 500;
  config->hysteresis = 0;
  config->move_events = 1;
  config->shape = AOI_SHAPE_CIRCLE;
  config->cell_size = 0;
  config->rebalance_interval = 16;
  config->allocator = NULL;
}

static bool config_valid(const aoi_config *c)
{
  if (c->threads > AOI__MAX_THREADS || c->shards > AOI__MAX_SHARDS)
    return false;
  if (!isfinite(c->min_x) || !isfinite(c->min_y) || !isfinite(c->max_x) ||
      !isfinite(c->max_y))
    return false;
  if (!isfinite(c->max_radius) || c->max_radius < 0)
    return false;
  if (!isfinite(c->hysteresis) || c->hysteresis < 0)
    return false;
  switch (c->shape) {
  case AOI_SHAPE_CIRCLE:
  case AOI_SHAPE_SQUARE:
    break;
  case AOI_SHAPE_CELLS:
    if (!isfinite(c->cell_size) || !(c->cell_size > 0))
      return false;
    break;
  default:
    return false;
  }
  if (c->move_band_count > AOI_MAX_MOVE_BANDS)
    return false;
  for (unsigned i = 0; i < c->move_band_count; i++) {
    const aoi_move_band *b = &c->move_bands[i];
    if (!isfinite(b->distance) || b->distance < 0 || b->period < 1 ||
        (i > 0 && !(b->distance > c->move_bands[i - 1].distance)))
      return false;
  }
  const aoi_allocator *a = c->allocator;
  if (a != NULL && (a->alloc == NULL || a->realloc == NULL || a->free == NULL))
    return false;
  return true;
}

static unsigned online_cores(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    return 1;
  return n > (long)AOI__MAX_THREADS ? AOI__MAX_THREADS : (unsigned)n;
}

/* ---- lifecycle ---------------------------------------------------------- */

static void world_free(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  if (w->in_flight)
    (void)aoi_tick_end(w);
  if (w->workers != NULL) {
    aoi__tick_command stop = {0};
    stop.shutdown = 1;
    w->command = stop;
    for (unsigned i = 0; i < w->threads; i++) {
      aoi__worker *k = &w->workers[i];
      if (!k->started)
        continue;
      while (aoi__ring_push(k->control, &w->command) != 0)
        ;
      aoi__bell_ring(&k->bell);
      pthread_join(k->thread, NULL);
    }
    aoi__worker_free(a, w->workers, w->threads);
    aoi__free(a, w->workers, sizeof(aoi__worker) * w->threads);
  }
  if (w->peer != NULL) {
    for (unsigned i = 0; i < w->threads * w->threads; i++)
      aoi__ring_destroy(a, w->peer[i]);
    aoi__free(a, w->peer, sizeof(aoi__ring *) * w->threads * w->threads);
  }
  if (w->segments != NULL) {
    for (unsigned i = 0; i < w->threads; i++)
      aoi__segment_free(a, &w->segments[i]);
    aoi__free(a, w->segments, sizeof(aoi__segment) * w->threads);
  }
  aoi__host_free(w); /* before the shards: it empties their op rings */
  if (w->shards != NULL) {
    for (unsigned i = 0; i < w->shard_count; i++)
      aoi__shard_free(a, &w->shards[i], aoi__bands(w));
    aoi__free(a, w->shards, sizeof(aoi__shard) * w->shard_count);
  }
  aoi__layout_free(a, &w->layout);
  aoi__free(a, w->shard_entities, sizeof(uint32_t) * w->shard_count);
  aoi__free(a, w->shard_ns, sizeof(uint64_t) * w->shard_count);
  aoi__bell_destroy(&w->host_bell);
  aoi_allocator copy = w->allocator;
  aoi__free(&copy, w, sizeof(*w));
}

int aoi_create(const aoi_config *config, aoi_world **out)
{
  if (config == NULL || out == NULL || !config_valid(config))
    return AOI_EINVAL;
  aoi_allocator allocator = {default_alloc, default_realloc, default_free,
                             NULL};
  if (config->allocator != NULL)
    allocator = *config->allocator;
  aoi_world *w = aoi__calloc(&allocator, sizeof(*w));
  if (w == NULL)
    return AOI_ENOMEM;
  w->config = *config;
  w->config.allocator = NULL;
  w->allocator = allocator;
  const aoi_allocator *a = &w->allocator;
  if (aoi__bell_init(&w->host_bell) != 0) {
    aoi__free(a, w, sizeof(*w));
    return AOI_ESYS;
  }
  w->shape.kind = config->shape;
  w->shape.cell = config->cell_size;
  w->threads = config->threads ? config->threads : online_cores();
  w->shard_count = config->shards ? config->shards : w->threads;

  double min_x = config->min_x, max_x = config->max_x;
  double min_y = config->min_y, max_y = config->max_y;
  if (!(min_x < max_x)) {
    min_x = 0;
    max_x = 1000;
  }
  if (!(min_y < max_y)) {
    min_y = 0;
    max_y = 1000;
  }
  int rc = aoi__layout_init(a, &w->layout, w->shard_count, min_x, min_y,
                            max_x, max_y);
  if (rc != 0)
    goto fail;
  rc = AOI_ENOMEM;
  w->shards = aoi__calloc(a, sizeof(aoi__shard) * w->shard_count);
  w->shard_entities = aoi__calloc(a, sizeof(uint32_t) * w->shard_count);
  w->shard_ns = aoi__calloc(a, sizeof(uint64_t) * w->shard_count);
  if (w->shards == NULL || w->shard_entities == NULL || w->shard_ns == NULL)
    goto fail;
  for (unsigned i = 0; i < w->shard_count; i++) {
    w->shards[i].index = i;
    if ((w->shards[i].ops = aoi__ring_create(a, 4)) == NULL)
      goto fail;
  }
  w->peer = aoi__calloc(a, sizeof(aoi__ring *) * w->threads * w->threads);
  if (w->peer == NULL)
    goto fail;
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++)
      if (i != j && (w->peer[i * w->threads + j] = aoi__ring_create(a, 8)) == NULL)
        goto fail;
  if ((rc = aoi__host_init(w)) != 0)
    goto fail;
  rc = AOI_ENOMEM;
  w->workers = aoi__calloc(a, sizeof(aoi__worker) * w->threads);
  w->segments = aoi__calloc(a, sizeof(aoi__segment) * w->threads);
  if (w->workers == NULL || w->segments == NULL)
    goto fail;
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    k->index = i;
    k->control = aoi__ring_create(a, 4);
    k->done = aoi__ring_create(a, 4);
    k->handoffs_out = aoi__calloc(a, sizeof(aoi__batch) * w->threads);
    k->ghosts_out = aoi__calloc(a, sizeof(aoi__batch) * w->threads);
    if (k->control == NULL || k->done == NULL || k->handoffs_out == NULL ||
        k->ghosts_out == NULL)
      goto fail;
    if (aoi__bell_init(&k->bell) != 0) {
      rc = AOI_ESYS;
      goto fail;
    }
    k->world = w; /* marks the bell as initialised */
  }
  /* How long waits spin before they sleep (sync.c). A spinner that shares
     a core with the thread it waits for only delays it, so waits spin
     longer only where the host and every worker can have a core each. A
     worker that waits for the next tick spins hardly at all: the next
     tick is usually a frame away. */
  bool own_cores = online_cores() > w->threads;
  w->host_bell.spin_ns = own_cores ? 20000 : 2000;
  w->idle_spin_ns = own_cores ? 2000 : 0;
  for (unsigned i = 0; i < w->threads; i++)
    w->workers[i].bell.spin_ns = own_cores ? 50000 : 5000;
  w->inline_cost = AOI__INLINE_COST;
  w->inline_single = true;
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    if (pthread_create(&k->thread, NULL, aoi__worker_main, k) != 0) {
      rc = AOI_ESYS;
      goto fail;
    }
    k->started = true;
  }
  w->stats.threads = w->threads;
  w->stats.shards = w->shard_count;
  w->stats.shard_entities = w->shard_entities;
  w->stats.shard_ns = w->shard_ns;
  *out = w;
  return 0;
fail:
  world_free(w);
  return rc;
}

void aoi_destroy(aoi_world *world)
{
  if (world != NULL)
    world_free(world);
}

int aoi_stats_get(const aoi_world *world, aoi_stats *stats)
{
  if (world == NULL || stats == NULL)
    return AOI_EINVAL;
  if (world->in_flight)
    return AOI_EBUSY;
  *stats = world->stats;
  return 0;
}

/* ---- invariants --------------------------------------------------------- */

/* The op queues: one record per handle, in the queue of the shard that owns
   it, found by its index; records that add carry nothing else to do, ones
   that remove nothing else at all; and the bounds the host keeps for the
   tick's reservation are exactly what the records count. */
static bool queues_valid(const aoi_world *w)
{
  uint32_t total = 0;
  for (unsigned s = 0; s < w->shard_count; s++) {
    const aoi__queue *q = &w->shards[s].queue;
    if (q->count > q->capacity)
      return false;
    total += q->count;
    for (uint32_t i = 0; i < q->count; i++) {
      const aoi__record *r = &q->records[i];
      uint32_t h = r->handle;
      if (h >= w->handle_count || w->queued[h] != i)
        return false;
      const aoi__host_entity *e = &w->host[h];
      unsigned owner = e->born > w->tick ? e->shard : w->location[h].shard;
      if (owner != s)
        return false;
      if ((r->what & AOI__RECORD_ADD) &&
          (!(e->flags & AOI__LIVE) || e->born <= w->tick))
        return false;
      if ((r->what & AOI__RECORD_REMOVE) &&
          (r->what != AOI__RECORD_REMOVE || (e->flags & AOI__LIVE)))
        return false;
      if (!(r->what & AOI__RECORD_REMOVE) && !(e->flags & AOI__LIVE))
        return false;
      unsigned named = (r->what & (AOI__RECORD_ADD | AOI__RECORD_MOVE))
                           ? aoi__layout_shard(&w->layout, r->x, r->y)
                           : s;
      if (r->target != named)
        return false;
    }
  }
  if (total != w->records)
    return false;
  /* Recount the bounds from the records. */
  uint32_t arrivals[AOI__MAX_SHARDS] = {0};
  for (unsigned s = 0; s < w->shard_count; s++) {
    const aoi__queue *q = &w->shards[s].queue;
    for (uint32_t i = 0; i < q->count; i++) {
      const aoi__record *r = &q->records[i];
      if (r->what & AOI__RECORD_ADD)
        arrivals[s]++;
      if (r->target != s)
        arrivals[r->target]++;
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
        unsigned to = aoi__worker_of(w, q->records[k].target);
        if (to != i)
          bound[to]++;
      }
    }
    for (unsigned j = 0; j < w->threads; j++)
      if (bound[j] != w->workers[i].handoffs_out[j].bound)
        return false;
  }
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

bool aoi__world_valid(aoi_world *w)
{
  if (!aoi__idmap_valid(&w->ids))
    return false;
  uint64_t live = 0, watchers = 0;
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__host_entity *e = &w->host[h];
    if (!(e->flags & AOI__LIVE))
      continue;
    live++;
    if (e->flags & AOI_WATCHER)
      watchers++;
    if (aoi__idmap_get(&w->ids, e->id) != h)
      return false;
    if (e->born > w->tick)
      continue;
    const aoi__location *loc = &w->location[h];
    if (loc->shard >= w->shard_count)
      return false;
    const aoi__shard *s = &w->shards[loc->shard];
    if (loc->slot >= s->count || s->entities[loc->slot].handle != h)
      return false;
    if (s->entities[loc->slot].id != e->id)
      return false;
  }
  if (live != w->live || watchers != w->watchers || live != w->ids.count)
    return false;
  /* Membership bits are scratch for one watcher at a time: all clear. */
  for (unsigned i = 0; i < w->threads; i++)
    for (uint32_t j = 0; j < w->workers[i].member_words; j++)
      if (w->workers[i].member[j] != 0)
        return false;
  uint64_t owned = 0;
  for (unsigned i = 0; i < w->shard_count; i++) {
    if (!aoi__shard_valid(w, &w->shards[i]))
      return false;
    owned += w->shards[i].count;
  }
  if (!queues_valid(w))
    return false;
  /* Entities added since the last tick are not in any shard yet. */
  uint64_t unborn = 0;
  for (uint32_t h = 0; h < w->handle_count; h++)
    if ((w->host[h].flags & AOI__LIVE) && w->host[h].born > w->tick)
      unborn++;
  return owned + unborn >= live;
}

int aoi_shard_info_get(const aoi_world *w, unsigned shard,
                       aoi_shard_info *info)
{
  if (w == NULL || info == NULL || shard >= w->shard_count)
    return AOI_EINVAL;
  if (w->in_flight)
    return AOI_EBUSY;
  const aoi__layout *l = &w->layout;
  unsigned col = shard % l->cols, row = shard / l->cols;
  aoi_shard_info i;
  i.min_x = col > 0 ? l->xcut[col - 1] : -INFINITY;
  i.max_x = col + 1 < l->cols ? l->xcut[col] : INFINITY;
  i.min_y = row > 0 ? l->ycut[row - 1] : -INFINITY;
  i.max_y = row + 1 < l->rows ? l->ycut[row] : INFINITY;
  i.worker = aoi__worker_of(w, shard);
  i.entities = w->shards[shard].count;
  i.ghosts = w->shards[shard].ghost_markers;
  i.compute_ns = w->shards[shard].compute_ns;
  *info = i;
  return 0;
}

#define AOI__STRING(x) #x
#define AOI__VERSION_STRING(a, b, c) AOI__STRING(a) "." AOI__STRING(b) "." AOI__STRING(c)

unsigned aoi_version(void)
{
  return AOI_VERSION;
}

const char *aoi_version_string(void)
{
  return AOI__VERSION_STRING(AOI_VERSION_MAJOR, AOI_VERSION_MINOR,
                             AOI_VERSION_PATCH);
}
