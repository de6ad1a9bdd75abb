/*
 * aoi-bench.c: drives a synthetic crowd through an AOI world and prints a
 * short summary, using the public API only (aoi.h).
 *
 * A run is: place every entity (each one a watcher and a marker) in a square
 * world sized so that each sees about `--neighbours` others, tick once to warm
 * up (all the `enter`s), then for `--ticks` measured ticks let the scenario
 * move the crowd, call aoi_tick and drain every pending watcher's outbox, as
 * a zone server's game loop would. A tick's time is aoi_tick plus the drain;
 * submitting the moves is timed apart.
 *
 * Scenarios live in one table (`scenarios`): each places the crowd and moves
 * it between ticks, from a deterministic PRNG seeded by `--seed`. Adding a
 * scenario is adding a row. The measurements are gathered in `bench_result`
 * and printed by one function, so other report formats can be added beside it.
 *
 * The checksum hashes every event of every tick (the warm-up included), one
 * watcher at a time in id order as aoi_pending lists them, so it depends only
 * on the events: runs with any thread or shard count must print the same one.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "aoi.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- options ------------------------------------------------------------ */

typedef struct bench_options {
  const char *scenario;
  uint32_t entities;
  double radius;
  double neighbours;
  unsigned ticks;
  unsigned threads;
  unsigned shards;
  uint64_t seed;
  double step;
  int step_given; /* else step = radius / 20 */
  int moves;
} bench_options;

/* ---- errors ------------------------------------------------------------- */

static void die(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  fputs("aoi-bench: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  exit(1);
}

/* Exits with a message when an API call failed. */
static void check(int rc, const char *call)
{
  if (rc != 0)
    die("%s failed: %s", call, aoi_strerror(rc));
}

/* ---- deterministic random numbers (splitmix64) -------------------------- */

typedef struct bench_rng {
  uint64_t state;
} bench_rng;

static uint64_t rng_next(bench_rng *rng)
{
  uint64_t z = (rng->state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rng_unit(bench_rng *rng)
{
  return (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the crowd and its scenarios ---------------------------------------- */

typedef struct crowd {
  uint32_t count;
  double side; /* the world is [0, side] x [0, side] */
  double step;
  float *x, *y;
  unsigned char *moved; /* set by the scenario for each entity it moved */
} crowd;

typedef struct scenario {
  const char *name;
  const char *summary;
  /* Sets every entity's first position. */
  void (*place)(crowd *c, bench_rng *rng);
  /* Moves some of the crowd before a measured tick, marking them in
     c->moved (cleared before each call); only those are submitted. */
  void (*move)(crowd *c, bench_rng *rng);
} scenario;

/* Keeps a coordinate inside [0, side] by reflecting it off the walls. */
static double reflect(double v, double side)
{
  if (v < 0)
    v = -v;
  if (v > side)
    v = 2 * side - v;
  return v < 0 ? 0 : v > side ? side : v;
}

static void place_uniform(crowd *c, bench_rng *rng)
{
  for (uint32_t i = 0; i < c->count; i++) {
    c->x[i] = (float)(rng_unit(rng) * c->side);
    c->y[i] = (float)(rng_unit(rng) * c->side);
  }
}

/* Every entity walks `step` in a fresh random direction. */
static void move_random_walk(crowd *c, bench_rng *rng)
{
  for (uint32_t i = 0; i < c->count; i++) {
    double angle = 2 * M_PI * rng_unit(rng);
    c->x[i] = (float)reflect(c->x[i] + c->step * cos(angle), c->side);
    c->y[i] = (float)reflect(c->y[i] + c->step * sin(angle), c->side);
    c->moved[i] = 1;
  }
}

static const scenario scenarios[] = {
    {"uniform", "uniform crowd, every entity walks every tick", place_uniform,
     move_random_walk},
};

static const scenario *find_scenario(const char *name)
{
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
    if (strcmp(scenarios[i].name, name) == 0)
      return &scenarios[i];
  return NULL;
}

/* ---- measurement -------------------------------------------------------- */

typedef struct bench_result {
  unsigned threads, shards; /* as the world reports them */
  double side, step;
  unsigned ticks;
  double *tick_ms;   /* per measured tick: aoi_tick + drain */
  double *submit_ms; /* per measured tick: the aoi_move calls */
  double *phase_ms[AOI_PHASE_COUNT];
  uint64_t events;   /* drained during the measured ticks */
  uint64_t ghosts;   /* summed over the measured ticks */
  uint64_t handoffs; /* likewise */
  double imbalance;  /* max / mean of shard_entities after the last tick */
  uint64_t checksum;
} bench_result;

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t hash_mix(uint64_t h, uint64_t v)
{
  h ^= v;
  h *= UINT64_C(0x100000001b3);
  return h ^ (h >> 29);
}

static uint64_t float_bits(float f)
{
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return bits;
}

/* Drains every pending watcher, in id order, into the checksum. Returns the
   number of events drained. */
static uint64_t drain_all(aoi_world *world, uint64_t *checksum)
{
  const uint64_t *ids;
  size_t pending;
  check(aoi_pending(world, &ids, &pending), "aoi_pending");
  uint64_t total = 0, h = *checksum;
  for (size_t i = 0; i < pending; i++) {
    const aoi_event *events;
    size_t count;
    check(aoi_drain(world, ids[i], &events, &count), "aoi_drain");
    h = hash_mix(h, ids[i]);
    h = hash_mix(h, count);
    for (size_t j = 0; j < count; j++) {
      const aoi_event *e = &events[j];
      h = hash_mix(h, e->id);
      h = hash_mix(h, ((uint64_t)e->kind << 32) | e->tick);
      h = hash_mix(h, (float_bits(e->x) << 32) | float_bits(e->y));
    }
    total += count;
  }
  *checksum = h;
  return total;
}

/* Ticks, drains, and checks that every event the tick made was drained. */
static uint64_t tick_and_drain(aoi_world *world, uint64_t *checksum,
                               aoi_stats *stats)
{
  check(aoi_tick(world), "aoi_tick");
  uint64_t drained = drain_all(world, checksum);
  check(aoi_stats_get(world, stats), "aoi_stats_get");
  if (drained != stats->events)
    die("tick %" PRIu64 ": drained %" PRIu64 " events, stats say %" PRIu64,
        stats->tick, drained, stats->events);
  return drained;
}

static void *xcalloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size);
  if (p == NULL)
    die("out of memory");
  return p;
}

static void run(const bench_options *o, const scenario *sc, bench_result *r)
{
  crowd c;
  c.count = o->entities;
  c.side = sqrt((double)o->entities * M_PI * o->radius * o->radius /
                o->neighbours);
  c.step = o->step_given ? o->step : o->radius / 20;
  c.x = xcalloc(c.count, sizeof(float));
  c.y = xcalloc(c.count, sizeof(float));
  c.moved = xcalloc(c.count, 1);
  bench_rng rng = {o->seed};

  aoi_config config;
  aoi_config_default(&config);
  config.threads = o->threads;
  config.shards = o->shards;
  config.min_x = 0;
  config.min_y = 0;
  config.max_x = (float)c.side;
  config.max_y = (float)c.side;
  config.max_radius = (float)o->radius;
  config.move_events = o->moves;
  aoi_world *world;
  check(aoi_create(&config, &world), "aoi_create");

  sc->place(&c, &rng);
  for (uint32_t i = 0; i < c.count; i++)
    check(aoi_add(world, (uint64_t)i + 1, c.x[i], c.y[i], (float)o->radius,
                  AOI_WATCHER | AOI_MARKER, UINT32_MAX, UINT32_MAX),
          "aoi_add");
  aoi_stats stats;
  r->checksum = UINT64_C(0xcbf29ce484222325);
  (void)tick_and_drain(world, &r->checksum, &stats); /* warm-up */

  r->threads = stats.threads;
  r->shards = stats.shards;
  r->side = c.side;
  r->step = c.step;
  r->ticks = o->ticks;
  r->tick_ms = xcalloc(o->ticks, sizeof(double));
  r->submit_ms = xcalloc(o->ticks, sizeof(double));
  for (int p = 0; p < AOI_PHASE_COUNT; p++)
    r->phase_ms[p] = xcalloc(o->ticks, sizeof(double));
  r->events = r->ghosts = r->handoffs = 0;
  for (unsigned t = 0; t < o->ticks; t++) {
    memset(c.moved, 0, c.count);
    sc->move(&c, &rng);
    double submit = now_ms();
    for (uint32_t i = 0; i < c.count; i++)
      if (c.moved[i])
        check(aoi_move(world, (uint64_t)i + 1, c.x[i], c.y[i]), "aoi_move");
    double start = now_ms();
    r->events += tick_and_drain(world, &r->checksum, &stats);
    r->tick_ms[t] = now_ms() - start;
    r->submit_ms[t] = start - submit;
    r->ghosts += stats.ghosts;
    r->handoffs += stats.handoffs;
    for (int p = 0; p < AOI_PHASE_COUNT; p++)
      r->phase_ms[p][t] = (double)stats.phase_ns[p] / 1e6;
  }

  uint64_t sum = 0, most = 0;
  for (unsigned s = 0; s < stats.shards; s++) {
    sum += stats.shard_entities[s];
    if (stats.shard_entities[s] > most)
      most = stats.shard_entities[s];
  }
  if (sum != stats.entities)
    die("shard_entities sum to %" PRIu64 ", stats.entities is %" PRIu64, sum,
        stats.entities);
  r->imbalance = sum ? (double)most * stats.shards / (double)sum : 1.0;

  aoi_destroy(world);
  free(c.x);
  free(c.y);
  free(c.moved);
}

static void result_free(bench_result *r)
{
  free(r->tick_ms);
  free(r->submit_ms);
  for (int p = 0; p < AOI_PHASE_COUNT; p++)
    free(r->phase_ms[p]);
}

/* ---- report ------------------------------------------------------------- */

static int compare_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of n values; sorts them. */
static double quantile(double *values, unsigned n, double q)
{
  if (n == 0)
    return 0;
  qsort(values, n, sizeof(double), compare_double);
  double rank = ceil(q * n);
  unsigned i = rank < 1 ? 0 : (unsigned)rank - 1;
  return values[i < n ? i : n - 1];
}

static double sum_of(const double *values, unsigned n)
{
  double s = 0;
  for (unsigned i = 0; i < n; i++)
    s += values[i];
  return s;
}

static void print_summary(const bench_options *o, const scenario *sc,
                          bench_result *r)
{
  unsigned n = r->ticks;
  double total_ms = sum_of(r->tick_ms, n);
  double seconds = total_ms / 1e3;
  double per_tick = n ? 1.0 / n : 0;
  printf("aoi-bench: %s (%s)\n", sc->name, sc->summary);
  printf("  entities    %" PRIu32 "  radius %g  neighbours %g  world side %.1f"
         "  step %g  moves %s\n",
         o->entities, o->radius, o->neighbours, r->side, r->step,
         o->moves ? "on" : "off");
  printf("  layout      threads %u  shards %u  seed %" PRIu64
         "  ticks %u (+1 warm-up)\n",
         r->threads, r->shards, o->seed, n);
  printf("  tick ms     median %.3f  p99 %.3f  max %.3f  (aoi_tick + drain)\n",
         quantile(r->tick_ms, n, 0.5), quantile(r->tick_ms, n, 0.99),
         quantile(r->tick_ms, n, 1.0));
  printf("  submit ms   median %.3f  (the aoi_move calls)\n",
         quantile(r->submit_ms, n, 0.5));
  printf("  phases ms   apply %.3f  exchange %.3f  compute %.3f"
         "  (median, slowest worker)\n",
         quantile(r->phase_ms[AOI_PHASE_APPLY], n, 0.5),
         quantile(r->phase_ms[AOI_PHASE_EXCHANGE], n, 0.5),
         quantile(r->phase_ms[AOI_PHASE_COMPUTE], n, 0.5));
  printf("  throughput  %.3g entity updates/s  %.3g events/s\n",
         seconds > 0 ? (double)o->entities * n / seconds : 0,
         seconds > 0 ? (double)r->events / seconds : 0);
  printf("  per tick    events %.0f  ghosts %.0f  handoffs %.1f\n",
         (double)r->events * per_tick, (double)r->ghosts * per_tick,
         (double)r->handoffs * per_tick);
  printf("  shards      imbalance %.3f  (max / mean entities, last tick)\n",
         r->imbalance);
  printf("  checksum    %016" PRIx64 "\n", r->checksum);
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *out)
{
  fprintf(out,
          "usage: aoi-bench [options]\n"
          "  --scenario NAME   crowd scenario (default uniform)\n"
          "  --entities N      entities, each a watcher and a marker "
          "(default 20000)\n"
          "  --radius R        view radius (default 10)\n"
          "  --neighbours K    entities each one sees, on average; sizes the "
          "world (default 35)\n"
          "  --ticks T         measured ticks, after one warm-up (default 50)\n"
          "  --threads N       worker threads; 0 = one per core (default "
          "$AOI_THREADS, else 0)\n"
          "  --shards M        spatial shards; 0 = one per thread (default 0)\n"
          "  --seed S          PRNG seed (default 1)\n"
          "  --step S          distance walked per tick (default radius/20)\n"
          "  --moves on|off    produce move events (default on)\n"
          "scenarios:");
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
    fprintf(out, " %s", scenarios[i].name);
  fputc('\n', out);
}

static uint64_t parse_unsigned(const char *flag, const char *text,
                               uint64_t max)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > max)
    die("%s: '%s' is not an integer in [0, %" PRIu64 "]", flag, text, max);
  return (uint64_t)v;
}

static double parse_number(const char *flag, const char *text)
{
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !isfinite(v))
    die("%s: '%s' is not a finite number", flag, text);
  return v;
}

static void parse_options(int argc, char **argv, bench_options *o)
{
  o->scenario = "uniform";
  o->entities = 20000;
  o->radius = 10;
  o->neighbours = 35;
  o->ticks = 50;
  o->threads = 0;
  o->shards = 0;
  o->seed = 1;
  o->step = 0;
  o->step_given = 0;
  o->moves = 1;
  const char *env = getenv("AOI_THREADS");
  if (env != NULL && *env != '\0')
    o->threads = (unsigned)parse_unsigned("AOI_THREADS", env, 256);

  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (i + 1 >= argc) {
      usage(stderr);
      die("%s: missing value or unknown flag", flag);
    }
    const char *value = argv[++i];
    if (strcmp(flag, "--scenario") == 0)
      o->scenario = value;
    else if (strcmp(flag, "--entities") == 0)
      o->entities = (uint32_t)parse_unsigned(flag, value, UINT32_MAX - 1);
    else if (strcmp(flag, "--radius") == 0)
      o->radius = parse_number(flag, value);
    else if (strcmp(flag, "--neighbours") == 0)
      o->neighbours = parse_number(flag, value);
    else if (strcmp(flag, "--ticks") == 0)
      o->ticks = (unsigned)parse_unsigned(flag, value, 10000000);
    else if (strcmp(flag, "--threads") == 0)
      o->threads = (unsigned)parse_unsigned(flag, value, 256);
    else if (strcmp(flag, "--shards") == 0)
      o->shards = (unsigned)parse_unsigned(flag, value, 4096);
    else if (strcmp(flag, "--seed") == 0)
      o->seed = parse_unsigned(flag, value, UINT64_MAX);
    else if (strcmp(flag, "--step") == 0) {
      o->step = parse_number(flag, value);
      o->step_given = 1;
    }
    else if (strcmp(flag, "--moves") == 0 && strcmp(value, "on") == 0)
      o->moves = 1;
    else if (strcmp(flag, "--moves") == 0 && strcmp(value, "off") == 0)
      o->moves = 0;
    else if (strcmp(flag, "--moves") == 0)
      die("--moves: '%s' is neither on nor off", value);
    else {
      usage(stderr);
      die("unknown flag %s", flag);
    }
  }
  if (o->entities == 0)
    die("--entities must be at least 1");
  if (!(o->radius > 0))
    die("--radius must be > 0");
  if (!(o->neighbours > 0))
    die("--neighbours must be > 0");
  if (o->step < 0)
    die("--step must be >= 0");
}

int main(int argc, char **argv)
{
  bench_options options;
  parse_options(argc, argv, &options);
  const scenario *sc = find_scenario(options.scenario);
  if (sc == NULL) {
    usage(stderr);
    die("unknown scenario '%s'", options.scenario);
  }
  bench_result result;
  memset(&result, 0, sizeof(result));
  run(&options, sc, &result);
  print_summary(&options, sc, &result);
  result_free(&result);
  return 0;
}
