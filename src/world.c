/*
 * world.c: the world's lifecycle and configuration: aoi_config_default and
 * the config's checks, aoi_create and aoi_destroy, the default allocator
 * hooks, error names and the version. A world is created with its shards,
 * rings, workers and their threads (and how long their waits spin), all of
 * which live until aoi_destroy; the host side's state (submit.c) grows with
 * use. A creation that fails frees what it made (world_free), so each step
 * of aoi_create only has to leave what it made where world_free finds it.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the default allocator hooks (malloc) ------------------------------- */

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
#ifdef __linux__
  if (c->pin_threads > 1)
    return false;
#else
  if (c->pin_threads != 0)
    return false;
#endif
  return true;
}

#ifdef __linux__
/* Binds worker i to the i-th CPU, wrapping around, of those the calling
   thread may run on (aoi_config.pin_threads). */
static int pin_workers(aoi_world *w)
{
  cpu_set_t allowed;
  if (pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) != 0)
    return AOI_ESYS;
  unsigned n = (unsigned)CPU_COUNT(&allowed);
  if (n == 0)
    return AOI_ESYS;
  for (unsigned i = 0; i < w->threads; i++) {
    /* the (i mod n)-th CPU of the set */
    unsigned skip = i % n;
    int cpu = 0;
    for (;; cpu++) {
      AOI__ASSERT(cpu < CPU_SETSIZE); /* the n-th is in the set */
      if (CPU_ISSET(cpu, &allowed) && skip-- == 0)
        break;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(w->workers[i].thread, sizeof(one), &one) != 0)
      return AOI_ESYS;
  }
  return 0;
}
#endif

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
  AOI__ASSERT(!aoi__delivering(w)); /* (aoi_destroy) */
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
  aoi__bell_destroy(&w->host_bell);
  aoi_allocator copy = w->allocator;
  aoi__free(&copy, w, sizeof(*w));
}

/* Allocates the world from the config's allocator (or malloc) and takes
   the config; the host bell is the one thing it needs before world_free
   can free it. 0, AOI_ENOMEM or AOI_ESYS (then nothing is left). */
static int world_alloc(const aoi_config *config, aoi_world **out)
{
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
  if (aoi__bell_init(&w->host_bell) != 0) {
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

/* Worker k's rings, batches and per-shard arrays, and its bells; a worker
   whose bells are set up has k->world (world_free reads it). */
static int create_worker(aoi_world *w, aoi__worker *k, unsigned i)
{
  AOI__ASSERT(i < w->threads && k == &w->workers[i]);
  const aoi_allocator *a = &w->allocator;
  k->index = i;
  k->control = aoi__ring_create(a, 4);
  k->done = aoi__ring_create(a, 4);
  k->handoffs_out = aoi__calloc(a, sizeof(aoi__batch) * w->threads);
  k->ghosts_out = aoi__calloc(a, sizeof(aoi__batch) * w->threads);
  k->reach_put = aoi__calloc(a, sizeof(float) * w->shard_count);
  k->reach_to = aoi__calloc(a, sizeof(uint32_t) * w->shard_count);
  k->ghost_reach = aoi__calloc(a, sizeof(double) * w->shard_count);
  if (k->control == NULL || k->done == NULL || k->handoffs_out == NULL ||
      k->ghosts_out == NULL || k->reach_put == NULL || k->reach_to == NULL ||
      k->ghost_reach == NULL)
    return AOI_ENOMEM;
  for (unsigned s = 0; s < w->shard_count; s++)
    k->reach_put[s] = -1;
  if (aoi__bell_init(&k->bell) != 0)
    return AOI_ESYS;
  if (aoi__bell_init(&k->peer_bell) != 0) {
    aoi__bell_destroy(&k->bell);
    return AOI_ESYS;
  }
  k->world = w; /* marks the bells as initialised */
  return 0;
}

/* The workers (not yet their threads) and their delivery segments. */
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

/* How long waits spin before they sleep (sync.c), and which ticks the host
   runs itself (tick.c). A spinner that shares a core with the thread it
   waits for only delays it, so waits spin longer only where the host and
   every worker can have a core each. A worker that waits for the next
   tick spins hardly at all: the next tick is usually a frame away. */
static void set_tunables(aoi_world *w)
{
  AOI__ASSERT(w->workers != NULL); /* (create_workers) */
  bool own_cores = online_cores() > w->threads;
  w->host_bell.spin_ns = own_cores ? 20000 : 2000;
  w->idle_spin_ns = own_cores ? 2000 : 0;
  for (unsigned i = 0; i < w->threads; i++)
    w->workers[i].peer_bell.spin_ns = own_cores ? 50000 : 5000;
  w->inline_cost = AOI__INLINE_COST;
  /* (workers bound to CPUs keep their shares: the host thread is bound to
     none, and may stand on a worker's CPU) */
  w->inline_single = true;
  w->host_share = w->config.pin_threads == 0;
}

/* Starts the worker threads, and binds them to CPUs when the config asks. */
static int start_threads(aoi_world *w)
{
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    if (pthread_create(&k->thread, NULL, aoi__worker_main, k) != 0)
      return AOI_ESYS;
    k->started = true;
  }
#ifdef __linux__
  if (w->config.pin_threads != 0)
    return pin_workers(w);
#endif
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
  if ((rc = start_threads(w)) != 0)
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
