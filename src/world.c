/*
 * world.c: the world's lifecycle and configuration: aoi_config_default and
 * the config's checks, aoi_create and aoi_destroy, error names and the
 * version. A world is created with its shards, rings, workers (lanes) and
 * its place on a pool (its own pool's threads, for AOI_RUN_OWN), all of
 * which live until aoi_destroy; the host side's state (submit.c) grows
 * with use. A creation that fails frees what it made (world_free), so
 * each step of aoi_create only has to leave what it made where world_free
 * finds it.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    return "AOI_EBUSY: a tick or a delivery is under way, or a pool has "
           "worlds";
  case AOI_EREMOTE:
    return "AOI_EREMOTE: the entity, or the position of an add, is another "
           "rank's";
  case AOI_EPEER:
    return "AOI_EPEER: a peer rank failed, timed out, or sent a message "
           "that does not decode";
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
  config->pin_threads = 0;
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
  switch (c->run) {
  case AOI_RUN_OWN:
  case AOI_RUN_CALLER:
    if (c->pool != NULL)
      return false;
    break;
  case AOI_RUN_POOL:
    if (c->pool == NULL)
      return false;
    break;
  default:
    return false;
  }
  if (c->measure_cpu > 1)
    return false;
#ifdef __linux__
  return c->pin_threads == 0 || (c->pin_threads == 1 && c->run == AOI_RUN_OWN);
#else
  return c->pin_threads == 0;
#endif
}

/* The least double s with sqrt(s) > d, for a finite d >= 0: sqrt is
   correctly rounded and never decreases, so sqrt(s) > d exactly when s is
   at least this. */
static double least_square_above(float distance)
{
  AOI__ASSERT(isfinite(distance) && distance >= 0); /* (config_valid) */
  double d = distance, s = d * d;
  while (s > 0 && sqrt(s) > d)
    s = nextafter(s, 0);
  while (!(sqrt(s) > d))
    s = nextafter(s, INFINITY);
  return s;
}

/* ---- lifecycle ---------------------------------------------------------- */

static void world_free(aoi_world *w)
{
  AOI__ASSERT(!aoi__delivering(w)); /* (aoi_destroy) */
  const aoi_allocator *a = &w->allocator;
  if (w->in_flight)
    (void)aoi_tick_end(w);
  if (w->own_pool)
    aoi__pool_free(w->pool); /* (its threads were idle) */
  else if (w->pool != NULL)
    atomic_fetch_sub(&w->pool->worlds, 1);
  if (w->workers != NULL) {
    aoi__installs_free(w); /* its views are lane 0's blocks */
    aoi__worker_free(a, w->workers, w->threads, w->shard_count);
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
  aoi__job_destroy(&w->solo);
  aoi_allocator copy = w->allocator;
  aoi__free(&copy, w, sizeof(*w));
}

/* Allocates the world from the config's allocator (or malloc) and takes
   the config; its job is the one thing it needs before world_free can
   free it. 0, AOI_ENOMEM or AOI_ESYS (then nothing is left). */
static int world_alloc(const aoi_config *config, aoi_world **out)
{
  aoi_allocator allocator = aoi__malloc_hooks;
  if (config->allocator != NULL)
    allocator = *config->allocator;
  aoi_world *w = aoi__calloc(&allocator, sizeof(*w));
  if (w == NULL)
    return AOI_ENOMEM;
  w->config = *config;
  w->config.allocator = NULL;
  w->allocator = allocator;
  if (aoi__job_init(&w->solo, 0) != 0) {
    aoi__free(&allocator, w, sizeof(*w));
    return AOI_ESYS;
  }
  *out = w;
  return 0;
}

/* The view shape, the move bands' thresholds, the thread and shard counts,
   and the shard layout over the config's bounds (0..1000 on an axis whose
   bounds are empty). */
static int set_geometry(aoi_world *w, const aoi_config *config)
{
  w->shape.kind = config->shape;
  w->shape.cell = config->cell_size;
  for (unsigned b = 0; b < config->move_band_count; b++)
    w->band_above[b] = least_square_above(config->move_bands[b].distance);
  w->threads = config->threads;
  if (w->threads == 0)
    w->threads = config->run == AOI_RUN_OWN ? aoi__online_cores() : 1;
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
  w->last_far_candidate = INFINITY;
  AOI__ASSERT(w->threads >= 1 && w->threads <= AOI__MAX_THREADS);
  AOI__ASSERT(w->shard_count >= 1 && w->shard_count <= AOI__MAX_SHARDS);
  return aoi__layout_init(&w->allocator, &w->layout, w->shard_count, min_x,
                          min_y, max_x, max_y);
}

/* The shards, each with its op ring, and their stats arrays. */
static int create_shards(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  w->shards = aoi__calloc(a, sizeof(aoi__shard) * w->shard_count);
  w->shard_entities = aoi__calloc(a, sizeof(uint32_t) * w->shard_count);
  w->shard_ns = aoi__calloc(a, sizeof(uint64_t) * w->shard_count);
  if (w->shards == NULL || w->shard_entities == NULL || w->shard_ns == NULL)
    return AOI_ENOMEM;
  for (unsigned i = 0; i < w->shard_count; i++) {
    w->shards[i].index = i;
    w->shards[i].reach_radius = w->shards[i].radius_held = -1;
    w->shards[i].radius_held_all = -1;
    w->shards[i].far_held = INFINITY;
    if ((w->shards[i].ops = aoi__ring_create(a, 4)) == NULL)
      return AOI_ENOMEM;
  }
  return 0;
}

/* The rings between every two workers, peer[from * threads + to]. */
static int create_peer_rings(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  w->peer = aoi__calloc(a, sizeof(aoi__ring *) * w->threads * w->threads);
  if (w->peer == NULL)
    return AOI_ENOMEM;
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++)
      if (i != j &&
          (w->peer[i * w->threads + j] = aoi__ring_create(a, 8)) == NULL)
        return AOI_ENOMEM;
  return 0;
}

/* Worker k's batches and per-shard arrays. */
static int create_worker(aoi_world *w, aoi__worker *k, unsigned i)
{
  AOI__ASSERT(i < w->threads && k == &w->workers[i]);
  const aoi_allocator *a = &w->allocator;
  k->index = i;
  k->world = w;
  k->handoffs_out = aoi__calloc(a, sizeof(aoi__batch) * w->threads);
  k->ghosts_out = aoi__calloc(a, sizeof(aoi__batch) * w->threads);
  k->reach_put = aoi__calloc(a, sizeof(float) * w->shard_count);
  k->reach_to = aoi__calloc(a, sizeof(uint32_t) * w->shard_count);
  k->ghost_reach = aoi__calloc(a, sizeof(double) * w->shard_count);
  if (k->handoffs_out == NULL || k->ghosts_out == NULL ||
      k->reach_put == NULL || k->reach_to == NULL || k->ghost_reach == NULL)
    return AOI_ENOMEM;
  for (unsigned s = 0; s < w->shard_count; s++)
    k->reach_put[s] = -1;
  return 0;
}

/* The workers (lanes) and their delivery segments. */
static int create_workers(aoi_world *w)
{
  w->workers = aoi__calloc(&w->allocator, sizeof(aoi__worker) * w->threads);
  w->segments = aoi__calloc(&w->allocator, sizeof(aoi__segment) * w->threads);
  if (w->workers == NULL || w->segments == NULL)
    return AOI_ENOMEM;
  for (unsigned i = 0; i < w->threads; i++) {
    int rc = create_worker(w, &w->workers[i], i);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Which ticks the thread that starts them runs itself (tick.c). */
static void set_tunables(aoi_world *w)
{
  w->inline_cost = AOI__INLINE_COST;
  /* (threads bound to CPUs keep their shares: the host thread is bound to
     none, and may stand on a worker's CPU) */
  w->inline_single = true;
  w->host_share = w->config.pin_threads == 0;
  aoi__tick_tasks_init(w);
}

/* The pool the world ticks on: its own (AOI_RUN_OWN), one it shares, or
   none. */
static int join_pool(aoi_world *w, const aoi_config *config)
{
  if (config->run == AOI_RUN_POOL) {
    w->pool = config->pool;
    atomic_fetch_add(&w->pool->worlds, 1);
  } else if (config->run == AOI_RUN_OWN) {
    aoi_pool_config pc;
    aoi_pool_config_default(&pc);
    pc.threads = w->threads;
    pc.pin_threads = config->pin_threads;
    pc.allocator = &w->allocator;
    int rc = aoi__pool_create(&pc, &w->pool);
    if (rc != 0)
      return rc;
    w->own_pool = true;
  }
  if (w->pool != NULL)
    w->solo.bell.spin_ns = w->pool->host_spin_ns;
  return 0;
}

int aoi_create(const aoi_config *config, aoi_world **out)
{
  if (config == NULL || out == NULL || !config_valid(config))
    return AOI_EINVAL;
  aoi_world *w;
  int rc = world_alloc(config, &w);
  if (rc != 0)
    return rc;
  if ((rc = set_geometry(w, config)) != 0 || (rc = create_shards(w)) != 0 ||
      (rc = create_peer_rings(w)) != 0 || (rc = aoi__host_init(w)) != 0 ||
      (rc = create_workers(w)) != 0)
    goto fail;
  set_tunables(w);
  if ((rc = join_pool(w, config)) != 0)
    goto fail;
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

int aoi_destroy(aoi_world *world)
{
  if (world == NULL)
    return 0;
  /* A tick in flight is waited for (world_free); a delivery cannot be. */
  if (aoi__delivering(world))
    return AOI_EBUSY;
  world_free(world);
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
