/*
 * aoi-svg.c: draws an aoi world as standalone SVG, from the public API only.
 *
 *   aoi-svg snapshot FILE.svg [crowd flags] [--watcher ID]
 *   aoi-svg chart FILE.svg [crowd flags]
 *   aoi-svg scaling FILE.svg BENCH.jsonl [--title TEXT]
 *
 * Both run a deterministic crowd (`crowd_run`) in a square world of side
 * WORLD_SIDE for --ticks ticks, draining every outbox after each tick as a
 * host would. Players are watchers and markers, NPCs markers only. The
 * scenarios: `hotspot`, where most players walk to one of two cities (a
 * capital and a market town) and mill there while travellers and wild NPCs
 * roam; `uniform`, where everyone random-walks over the whole map.
 *
 * `snapshot` then draws the world as of the last tick: the shards'
 * rectangles from aoi_shard_info_get (edges at infinity clamped to the map),
 * shaded by the entities each owns; every entity; a ring on each marker that
 * some shard holds as a ghost (aoi_shard_ghosts); and one watcher's view
 * circle with what aoi_view says it sees; with --cap K (every player's view
 * cap), also the candidates it did not take: the markers within its radius
 * (aoi_query_circle) that its view does not hold. `chart` draws aoi_stats_get's
 * phase times (apply, exchange, compute; the slowest worker's) stacked, tick
 * by tick, with the whole tick's wall time over them.
 *
 * `scaling` runs nothing: it reads the lines of `aoi-bench --json` (one
 * scenario, runs at several --entities) and draws, log-log, each
 * algorithm's median submit + tick (algo_NAME_frame_ms_median) and the
 * engine's median frame at each thread count against the entities, with
 * two dashed slopes (proportional to N and to N^2) to read growth orders
 * against.
 *
 * The crowd, and so a snapshot, depends only on the flags (the library's
 * results are the same for any thread and shard count); chart timings do not.
 * Coordinates are written with one decimal to keep files small.
 */
#include "aoi.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define WORLD_SIDE 1000.0

/* ---- errors and memory -------------------------------------------------- */

static void die(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  fputs("aoi-svg: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  exit(1);
}

static void check(int rc, const char *call)
{
  if (rc != 0)
    die("%s failed: %s", call, aoi_strerror(rc));
}

static void *xcalloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size);
  if (p == NULL)
    die("out of memory");
  return p;
}

/* ---- options ------------------------------------------------------------ */

typedef struct options {
  const char *mode, *path, *scenario;
  const char *input, *title; /* scaling: the JSON lines, the title */
  uint32_t entities;
  unsigned threads, shards, ticks;
  uint64_t watcher; /* 0: choose one */
  uint64_t seed;
  double radius;
  uint32_t cap; /* every player's view cap; 0 = none */
} options;

/* ---- deterministic random numbers (splitmix64) -------------------------- */

typedef struct rng {
  uint64_t state;
} rng;

static double rng_unit(rng *r)
{
  uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Standard normal (Box-Muller). */
static double rng_normal(rng *r)
{
  double u = rng_unit(r), v = rng_unit(r);
  return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* ---- the crowd ---------------------------------------------------------- */

typedef struct entity {
  double x, y;           /* as submitted for the last tick */
  double goal_x, goal_y; /* hotspot: where it is heading */
  double heading;        /* random walkers: direction of travel */
  int player;            /* watcher + marker; else an NPC (marker) */
  int city;              /* hotspot: index into `cities`, or -1 */
} entity;

typedef struct city {
  double x, y, spread, weight;
} city;

/* The capital straddles no border of a 2x2 layout but lies close to two. */
static const city cities[] = {{380, 610, 70, 0.65}, {730, 290, 45, 0.35}};

static double clamp_world(double v)
{
  return v < 0 ? 0 : v > WORLD_SIDE ? WORLD_SIDE : v;
}

static void place_uniform(entity *e, rng *r)
{
  e->x = rng_unit(r) * WORLD_SIDE;
  e->y = rng_unit(r) * WORLD_SIDE;
}

/* A point near city c, normally spread. */
static void city_point(int c, rng *r, double *x, double *y)
{
  *x = clamp_world(cities[c].x + cities[c].spread * rng_normal(r));
  *y = clamp_world(cities[c].y + cities[c].spread * rng_normal(r));
}

/* Walks `speed` along a slowly turning heading, bouncing off the walls. */
static void walk(entity *e, rng *r, double speed)
{
  e->heading += 0.3 * rng_normal(r);
  e->x += speed * cos(e->heading);
  e->y += speed * sin(e->heading);
  if (e->x < 0 || e->x > WORLD_SIDE) {
    e->x = e->x < 0 ? -e->x : 2 * WORLD_SIDE - e->x;
    e->heading = M_PI - e->heading;
  }
  if (e->y < 0 || e->y > WORLD_SIDE) {
    e->y = e->y < 0 ? -e->y : 2 * WORLD_SIDE - e->y;
    e->heading = -e->heading;
  }
  e->x = clamp_world(e->x);
  e->y = clamp_world(e->y);
}

static void uniform_place(entity *e, rng *r)
{
  e->player = rng_unit(r) < 0.6;
  e->city = -1;
  e->heading = 2 * M_PI * rng_unit(r);
  place_uniform(e, r);
}

static void uniform_step(entity *e, rng *r)
{
  walk(e, r, e->player ? 4 : 1.5);
}

/* Three players in four head for a city, the rest travel; half the NPCs
   live in a city, the rest roam the wilds. Everyone starts scattered
   except the city NPCs. */
static void hotspot_place(entity *e, rng *r)
{
  e->player = rng_unit(r) < 0.6;
  e->heading = 2 * M_PI * rng_unit(r);
  e->city = -1;
  if (rng_unit(r) < (e->player ? 0.75 : 0.5))
    e->city = rng_unit(r) < cities[0].weight ? 0 : 1;
  if (e->player || e->city < 0)
    place_uniform(e, r);
  else
    city_point(e->city, r, &e->x, &e->y);
  if (e->city >= 0)
    city_point(e->city, r, &e->goal_x, &e->goal_y);
}

static void hotspot_step(entity *e, rng *r)
{
  if (e->city < 0) {
    walk(e, r, e->player ? 4 : 1.5);
    return;
  }
  double dx = e->goal_x - e->x, dy = e->goal_y - e->y;
  double distance = sqrt(dx * dx + dy * dy);
  if (!e->player) { /* city NPCs shuffle about their post */
    e->x = clamp_world(e->x + 0.1 * dx + rng_normal(r));
    e->y = clamp_world(e->y + 0.1 * dy + rng_normal(r));
    return;
  }
  if (distance < 4) {
    if (rng_unit(r) < 0.05) /* off to another street */
      city_point(e->city, r, &e->goal_x, &e->goal_y);
  } else {
    double speed = distance < 6 ? distance : 6;
    e->x += speed * dx / distance;
    e->y += speed * dy / distance;
  }
  e->x = clamp_world(e->x + 0.7 * rng_normal(r));
  e->y = clamp_world(e->y + 0.7 * rng_normal(r));
}

typedef struct scenario {
  const char *name, *summary;
  void (*place)(entity *e, rng *r);
  void (*step)(entity *e, rng *r);
} scenario;

static const scenario scenarios[] = {
    {"hotspot", "players converge on a capital and a town", hotspot_place,
     hotspot_step},
    {"uniform", "everyone random-walks", uniform_place, uniform_step},
};

/* One tick's measurements, for the chart. */
typedef struct sample {
  double tick_ms, phase_ms[AOI_PHASE_COUNT];
} sample;

typedef struct crowd {
  const scenario *scenario;
  uint32_t count, players;
  entity *e; /* entity i has id i + 1 */
  aoi_world *world;
  aoi_stats stats; /* after the last tick */
  sample *samples; /* one per tick */
} crowd;

static void drain_all(aoi_world *world)
{
  const uint64_t *ids;
  size_t pending;
  check(aoi_pending(world, &ids, &pending), "aoi_pending");
  for (size_t i = 0; i < pending; i++) {
    const aoi_event *events;
    size_t count;
    check(aoi_drain(world, ids[i], &events, &count), "aoi_drain");
  }
}

/* Creates the world, adds the crowd, runs o->ticks ticks (the first one
   applies the adds). The world stays open for the caller's queries. */
static void crowd_run(const options *o, const scenario *sc, crowd *c)
{
  aoi_config config;
  aoi_config_default(&config);
  config.threads = o->threads;
  config.shards = o->shards;
  config.min_x = config.min_y = 0;
  config.max_x = config.max_y = (float)WORLD_SIDE;
  config.max_radius = (float)o->radius;
  check(aoi_create(&config, &c->world), "aoi_create");

  rng r = {o->seed};
  c->scenario = sc;
  c->count = o->entities;
  c->players = 0;
  c->e = xcalloc(c->count, sizeof(entity));
  c->samples = xcalloc(o->ticks, sizeof(sample));
  for (uint32_t i = 0; i < c->count; i++) {
    entity *e = &c->e[i];
    sc->place(e, &r);
    c->players += (uint32_t)e->player;
    check(aoi_add(c->world,
                  &(aoi_entity){
                      .id = (uint64_t)i + 1,
                      .x = (float)e->x,
                      .y = (float)e->y,
                      .radius = e->player ? (float)o->radius : 0,
                      .flags = e->player ? AOI_WATCHER | AOI_MARKER : AOI_MARKER,
                      .layers = 1,
                      .interest = e->player ? 1u : 0u}),
          "aoi_add");
    if (e->player && o->cap > 0)
      check(aoi_set_cap(c->world, (uint64_t)i + 1, o->cap), "aoi_set_cap");
  }
  for (unsigned t = 0; t < o->ticks; t++) {
    if (t > 0)
      for (uint32_t i = 0; i < c->count; i++) {
        sc->step(&c->e[i], &r);
        check(aoi_move(c->world, (uint64_t)i + 1, (float)c->e[i].x,
                       (float)c->e[i].y),
              "aoi_move");
      }
    check(aoi_tick(c->world), "aoi_tick");
    drain_all(c->world);
    check(aoi_world_stats(c->world, &c->stats), "aoi_stats_get");
    c->samples[t].tick_ms = (double)c->stats.tick_ns / 1e6;
    for (int p = 0; p < AOI_PHASE_COUNT; p++)
      c->samples[t].phase_ms[p] = (double)c->stats.phase_ns[p] / 1e6;
  }
}

static void crowd_free(crowd *c)
{
  aoi_destroy(c->world);
  free(c->e);
  free(c->samples);
}

/* ---- SVG output --------------------------------------------------------- */

static FILE *svg_open(const char *path, double width, double height)
{
  FILE *f = fopen(path, "w");
  if (f == NULL)
    die("%s: %s", path, strerror(errno));
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" "
          "height=\"%g\" viewBox=\"0 0 %g %g\" "
          "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
          width, height, width, height);
  return f;
}

static void svg_close(FILE *f, const char *path)
{
  fputs("</svg>\n", f);
  if (ferror(f) || fclose(f) != 0)
    die("%s: write failed", path);
}

/* Writes <text x y ATTRS>...</text>, the formatted text XML-escaped. */
static void svg_text(FILE *f, double x, double y, const char *attrs,
                     const char *format, ...)
{
  char text[512];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"%s%s>", x, y, *attrs ? " " : "",
          attrs);
  for (const char *p = text; *p; p++) {
    switch (*p) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*p, f);
    }
  }
  fputs("</text>\n", f);
}

#define COLOR_PLAYER "#1f77b4"
#define COLOR_NPC "#ff7f0e"
#define COLOR_GHOST "#9467bd"
#define COLOR_VIEW "#2ca02c"
#define COLOR_WATCHER "#d62728"
#define COLOR_SHARD "#4c78a8"
#define COLOR_INK "#222222"
#define COLOR_MUTED "#666666"
#define COLOR_PASSED "#e377c2"

/* Marks: players are circles, NPCs squares, both centred on (x, y). */
static void svg_mark(FILE *f, int player, double x, double y, double size)
{
  if (player)
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>\n", x, y, size);
  else
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
            x - size, y - size, 2 * size, 2 * size);
}

/* ---- snapshot ----------------------------------------------------------- */

#define MAP_X 24.0
#define MAP_Y 78.0
#define MAP_PX 780.0
#define PANEL_X (MAP_X + MAP_PX + 36)

static double map_x(double x)
{
  return MAP_X + x * (MAP_PX / WORLD_SIDE);
}

static double map_y(double y) /* world y grows up, SVG y down */
{
  return MAP_Y + (WORLD_SIDE - y) * (MAP_PX / WORLD_SIDE);
}

/* Fills *ids (allocated) with the view of `watcher`. */
static size_t view_of(aoi_world *world, uint64_t watcher, uint64_t **ids)
{
  size_t count;
  check(aoi_view(world, watcher, NULL, 0, &count), "aoi_view");
  *ids = xcalloc(count, sizeof(uint64_t));
  check(aoi_view(world, watcher, *ids, count, &count), "aoi_view");
  return count;
}

/* The markers a capped watcher could see and did not take: those of
   interest within its radius (the crowd has no hysteresis and no appeal)
   that its view (`seen`, ascending) does not hold, itself aside. */
static size_t passed_over(aoi_world *world, const entity *w, uint64_t watcher,
                          double radius, const uint64_t *seen,
                          size_t seen_count, uint64_t **ids)
{
  size_t count;
  check(aoi_query_circle(world, (float)w->x, (float)w->y, (float)radius, 1,
                         NULL, 0, &count),
        "aoi_query_circle");
  *ids = xcalloc(count, sizeof(uint64_t));
  check(aoi_query_circle(world, (float)w->x, (float)w->y, (float)radius, 1,
                         *ids, count, &count),
        "aoi_query_circle");
  size_t kept = 0, j = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t id = (*ids)[i];
    while (j < seen_count && seen[j] < id)
      j++;
    if (id != watcher && (j == seen_count || seen[j] != id))
      (*ids)[kept++] = id;
  }
  return kept;
}

/* The shard whose rectangle holds (x, y). */
static unsigned shard_at(const aoi_shard_info *shards, unsigned n, double x,
                         double y)
{
  for (unsigned s = 0; s < n; s++)
    if (x >= shards[s].min_x && x < shards[s].max_x && y >= shards[s].min_y &&
        y < shards[s].max_y)
      return s;
  return 0;
}

/* Entities of `ids` owned by a shard other than the one at (x, y). */
static size_t foreign(const crowd *c, const aoi_shard_info *shards, unsigned n,
                      double x, double y, const uint64_t *ids, size_t count)
{
  unsigned home = shard_at(shards, n, x, y);
  size_t total = 0;
  for (size_t i = 0; i < count; i++) {
    const entity *e = &c->e[ids[i] - 1];
    total += shard_at(shards, n, e->x, e->y) != home;
  }
  return total;
}

/* The player whose view reaches furthest into other shards (the most seen
   entities owned elsewhere; the lowest id on a tie): the view that most
   needs ghosts. */
static uint64_t pick_watcher(const crowd *c, const aoi_shard_info *shards,
                             unsigned n)
{
  uint64_t best = 0;
  size_t best_foreign = 0;
  for (uint32_t i = 0; i < c->count; i++) {
    if (!c->e[i].player)
      continue;
    uint64_t *ids;
    size_t count = view_of(c->world, (uint64_t)i + 1, &ids);
    size_t f = foreign(c, shards, n, c->e[i].x, c->e[i].y, ids, count);
    if (best == 0 || f > best_foreign) {
      best = (uint64_t)i + 1;
      best_foreign = f;
    }
    free(ids);
  }
  return best;
}

static void legend_row(FILE *f, double y, const char *mark, const char *label)
{
  fprintf(f, "<g transform=\"translate(%.1f %.1f)\">%s</g>\n", PANEL_X + 8,
          y - 4, mark);
  svg_text(f, PANEL_X + 24, y, "", "%s", label);
}

static void snapshot(const options *o, crowd *c)
{
  unsigned n = c->stats.shards;
  aoi_shard_info *shards = xcalloc(n, sizeof(aoi_shard_info));
  uint32_t busiest = 1;
  for (unsigned s = 0; s < n; s++) {
    check(aoi_shard(c->world, s, &shards[s]), "aoi_shard_info_get");
    if (shards[s].entities > busiest)
      busiest = shards[s].entities;
  }

  /* Every marker some shard holds as a ghost. */
  unsigned char *ghost = xcalloc(c->count, 1);
  for (unsigned s = 0; s < n; s++) {
    size_t count;
    check(aoi_shard_ghosts(c->world, s, NULL, 0, &count), "aoi_shard_ghosts");
    uint64_t *ids = xcalloc(count, sizeof(uint64_t));
    check(aoi_shard_ghosts(c->world, s, ids, count, &count),
          "aoi_shard_ghosts");
    for (size_t i = 0; i < count; i++)
      if (ids[i] >= 1 && ids[i] <= c->count)
        ghost[ids[i] - 1] = 1;
    free(ids);
  }

  uint64_t watcher = o->watcher ? o->watcher : pick_watcher(c, shards, n);
  if (watcher == 0)
    die("the crowd has no player whose view to draw (more --entities?)");
  if (watcher == 0 || watcher > c->count || !c->e[watcher - 1].player)
    die("--watcher %" PRIu64 ": not a player (players are watchers)", watcher);
  const entity *w = &c->e[watcher - 1];
  uint64_t *seen;
  size_t seen_count = view_of(c->world, watcher, &seen);
  size_t seen_players = 0;
  for (size_t i = 0; i < seen_count; i++)
    seen_players += (size_t)c->e[seen[i] - 1].player;
  uint64_t *passed = NULL;
  size_t passed_count = 0;
  if (o->cap > 0)
    passed_count = passed_over(c->world, w, watcher, o->radius, seen,
                               seen_count, &passed);

  FILE *f = svg_open(o->path, PANEL_X + 350, MAP_Y + MAP_PX + 24);
  svg_text(f, MAP_X, 32, "font-size=\"20\" font-weight=\"bold\"",
           "aoi: %s crowd after %u ticks", c->scenario->name, o->ticks);
  svg_text(f, MAP_X, 56, "fill=\"" COLOR_MUTED "\"",
           "%" PRIu32 " entities (%" PRIu32 " players, %" PRIu32
           " NPCs), view radius %g, %u shard%s on %u thread%s, seed %" PRIu64,
           c->count, c->players, c->count - c->players, o->radius, n,
           n == 1 ? "" : "s", c->stats.threads,
           c->stats.threads == 1 ? "" : "s", o->seed);

  /* The map and its shards, shaded by the entities each owns. */
  fprintf(f, "<rect class=\"map\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
             "height=\"%.1f\" fill=\"#fbfbf8\" stroke=\"#999999\"/>\n",
          MAP_X, MAP_Y, MAP_PX, MAP_PX);
  fprintf(f, "<g fill=\"" COLOR_SHARD "\" stroke=\"#4a4a4a\" "
             "stroke-width=\"1.5\" stroke-dasharray=\"6 4\">\n");
  for (unsigned s = 0; s < n; s++) {
    double x0 = map_x(clamp_world(shards[s].min_x));
    double x1 = map_x(clamp_world(shards[s].max_x));
    double y0 = map_y(clamp_world(shards[s].max_y));
    double y1 = map_y(clamp_world(shards[s].min_y));
    fprintf(f, "<rect class=\"shard\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\" fill-opacity=\"%.3f\"/>\n",
            x0, y0, x1 - x0, y1 - y0,
            0.03 + 0.22 * shards[s].entities / busiest);
  }
  fputs("</g>\n", f);

  /* The watcher's view circle, under the entities. */
  fprintf(f, "<circle class=\"view\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" "
             "fill=\"" COLOR_VIEW "\" fill-opacity=\"0.12\" stroke=\""
             COLOR_VIEW "\" stroke-width=\"1.5\"/>\n",
          map_x(w->x), map_y(w->y), o->radius * (MAP_PX / WORLD_SIDE));

  /* Entities: NPCs then players, then rings on the ghosted markers. */
  fputs("<g class=\"npcs\" fill=\"" COLOR_NPC "\">\n", f);
  for (uint32_t i = 0; i < c->count; i++)
    if (!c->e[i].player)
      svg_mark(f, 0, map_x(c->e[i].x), map_y(c->e[i].y), 1.6);
  fputs("</g>\n<g class=\"players\" fill=\"" COLOR_PLAYER "\">\n", f);
  for (uint32_t i = 0; i < c->count; i++)
    if (c->e[i].player)
      svg_mark(f, 1, map_x(c->e[i].x), map_y(c->e[i].y), 1.8);
  fputs("</g>\n<g class=\"ghosts\" fill=\"none\" stroke=\"" COLOR_GHOST
        "\" stroke-width=\"0.8\">\n", f);
  for (uint32_t i = 0; i < c->count; i++)
    if (ghost[i])
      svg_mark(f, 1, map_x(c->e[i].x), map_y(c->e[i].y), 3.4);
  fputs("</g>\n", f);

  /* What a capped watcher passed over, what it sees, then the watcher. */
  fputs("<g class=\"passed\" fill=\"#ffffff\" stroke=\"" COLOR_PASSED
        "\" stroke-width=\"1.2\">\n", f);
  for (size_t i = 0; i < passed_count; i++) {
    const entity *e = &c->e[passed[i] - 1];
    svg_mark(f, e->player, map_x(e->x), map_y(e->y), 2.4);
  }
  fputs("</g>\n", f);
  fputs("<g class=\"seen\" fill=\"" COLOR_VIEW "\" stroke=\"#0b4d0b\" "
        "stroke-width=\"0.6\">\n", f);
  for (size_t i = 0; i < seen_count; i++) {
    const entity *e = &c->e[seen[i] - 1];
    svg_mark(f, e->player, map_x(e->x), map_y(e->y), 2.4);
  }
  fputs("</g>\n", f);
  fprintf(f, "<g class=\"watcher\" fill=\"" COLOR_WATCHER "\" stroke=\"#ffffff\" "
             "stroke-width=\"1\">\n");
  svg_mark(f, 1, map_x(w->x), map_y(w->y), 4.5);
  fputs("</g>\n", f);

  /* Shard labels, haloed so they stay readable over a crowd; left out
     where the shard is too small on the map (the side panel lists all). */
  for (unsigned s = 0; s < n; s++) {
    double x = map_x(clamp_world(shards[s].min_x)) + 6;
    double y = map_y(clamp_world(shards[s].max_y)) + 16;
    if (map_x(clamp_world(shards[s].max_x)) - x < 190 ||
        map_y(clamp_world(shards[s].min_y)) - y < 40)
      continue;
    const char *halo = "font-size=\"12\" fill=\"" COLOR_INK "\" "
                       "stroke=\"#ffffff\" stroke-width=\"3\" "
                       "paint-order=\"stroke\"";
    svg_text(f, x, y, halo, "shard %u (worker %u)", s, shards[s].worker);
    svg_text(f, x, y + 15, halo,
             "%" PRIu32 " entities, %" PRIu32 " ghosts (reach %.4g)",
             shards[s].entities, shards[s].ghosts, shards[s].ghost_reach);
  }

  /* A scale bar of 100 world units. */
  double bar_x = MAP_X + 12, bar_y = MAP_Y + MAP_PX - 14;
  fprintf(f, "<path d=\"M%.1f %.1fv6h%.1fv-6\" fill=\"none\" stroke=\""
             COLOR_INK "\" stroke-width=\"1.5\"/>\n",
          bar_x, bar_y - 6, 100 * (MAP_PX / WORLD_SIDE));
  svg_text(f, bar_x + 100 * (MAP_PX / WORLD_SIDE) + 6, bar_y,
           "font-size=\"12\" stroke=\"#ffffff\" stroke-width=\"3\" "
           "paint-order=\"stroke\"",
           "100 units");

  /* The side panel: legend, shards, the watcher. */
  double y = MAP_Y + 8;
  svg_text(f, PANEL_X, y, "font-weight=\"bold\"", "Legend");
  y += 24;
  legend_row(f, y, "<circle r=\"3\" fill=\"" COLOR_PLAYER "\"/>",
             "player (watcher + marker)");
  y += 22;
  legend_row(f, y, "<rect x=\"-2.6\" y=\"-2.6\" width=\"5.2\" height=\"5.2\" "
                   "fill=\"" COLOR_NPC "\"/>",
             "NPC (marker only)");
  y += 22;
  legend_row(f, y, "<circle r=\"5\" fill=\"none\" stroke=\"" COLOR_GHOST
                   "\" stroke-width=\"1.2\"/>",
             "held as a ghost by a neighbour shard");
  y += 22;
  legend_row(f, y, "<circle r=\"5\" fill=\"" COLOR_WATCHER "\" "
                   "stroke=\"#ffffff\"/>",
             "the chosen watcher");
  y += 22;
  legend_row(f, y, "<circle r=\"7\" fill=\"" COLOR_VIEW "\" fill-opacity="
                   "\"0.15\" stroke=\"" COLOR_VIEW "\" stroke-width=\"1.2\"/>",
             "its view radius");
  y += 22;
  legend_row(f, y, "<circle r=\"3.4\" fill=\"" COLOR_VIEW "\" "
                   "stroke=\"#0b4d0b\" stroke-width=\"0.6\"/>",
             "in its view (aoi_view)");
  y += 22;
  if (o->cap > 0) {
    legend_row(f, y, "<circle r=\"3.4\" fill=\"#ffffff\" stroke=\""
                     COLOR_PASSED "\" stroke-width=\"1.2\"/>",
               "within its radius, not taken (cap)");
    y += 22;
  }
  legend_row(f, y, "<rect x=\"-7\" y=\"-6\" width=\"14\" height=\"12\" fill=\""
                   COLOR_SHARD "\" fill-opacity=\"0.2\" stroke=\"#4a4a4a\" "
                   "stroke-dasharray=\"4 3\"/>",
             "shard (darker = owns more)");

  y += 44;
  svg_text(f, PANEL_X, y, "font-weight=\"bold\"", "Shards (owned entities)");
  for (unsigned s = 0; s < n && s < 16; s++) {
    y += 22;
    double width = 120.0 * shards[s].entities / busiest;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" "
               "fill=\"" COLOR_SHARD "\" fill-opacity=\"0.7\"/>\n",
            PANEL_X + 60, y - 10, width > 1 ? width : 1);
    svg_text(f, PANEL_X, y, "", "shard %u", s);
    svg_text(f, PANEL_X + 66 + width, y, "font-size=\"12\"",
             "%" PRIu32 " (+%" PRIu32 " ghosts)", shards[s].entities,
             shards[s].ghosts);
  }
  if (n > 16) {
    y += 22;
    svg_text(f, PANEL_X, y, "fill=\"" COLOR_MUTED "\"", "(%u more)", n - 16);
  }

  y += 44;
  svg_text(f, PANEL_X, y, "font-weight=\"bold\"", "Watcher #%" PRIu64, watcher);
  y += 22;
  svg_text(f, PANEL_X, y, "", "at (%.1f, %.1f), in shard %u", w->x, w->y,
           shard_at(shards, n, w->x, w->y));
  y += 20;
  svg_text(f, PANEL_X, y, "", "sees %zu: %zu players, %zu NPCs", seen_count,
           seen_players, seen_count - seen_players);
  y += 20;
  svg_text(f, PANEL_X, y, "", "%zu of them owned by other shards",
           foreign(c, shards, n, w->x, w->y, seen, seen_count));
  if (o->cap > 0) {
    y += 20;
    svg_text(f, PANEL_X, y, "", "cap %" PRIu32 ": took %zu of %zu candidates",
             o->cap, seen_count, seen_count + passed_count);
  }

  y += 44;
  svg_text(f, PANEL_X, y, "font-weight=\"bold\"", "Last tick");
  y += 22;
  svg_text(f, PANEL_X, y, "", "%" PRIu64 " ghosts, %" PRIu64 " handoffs",
           c->stats.ghosts, c->stats.handoffs);
  y += 20;
  svg_text(f, PANEL_X, y, "", "%" PRIu64 " events", c->stats.events);

  svg_close(f, o->path);
  free(passed);
  free(seen);
  free(ghost);
  free(shards);
}

/* ---- chart -------------------------------------------------------------- */

#define PLOT_X 78.0
#define PLOT_Y 84.0
#define PLOT_W 820.0
#define PLOT_H 380.0

/* A round step (1, 2 or 5 times a power of ten) giving about 5 intervals. */
static double nice_step(double range)
{
  double raw = range / 5, magnitude = pow(10, floor(log10(raw)));
  double norm = raw / magnitude;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
}

static void chart(const options *o, const crowd *c)
{
  /* Tick 1 applies every add (all the `enter`s): it is reported apart. */
  unsigned first = o->ticks > 1 ? 1 : 0, last = o->ticks - 1;
  double top = 0, sum = 0;
  for (unsigned t = first; t <= last; t++) {
    const sample *s = &c->samples[t];
    double stacked = 0;
    for (int p = 0; p < AOI_PHASE_COUNT; p++)
      stacked += s->phase_ms[p];
    top = fmax(top, fmax(stacked, s->tick_ms));
    sum += s->tick_ms;
  }
  if (!(top > 0))
    top = 1;
  double step = nice_step(top);
  top = ceil(top / step) * step;
  double span = last > first ? last - first : 1;
#define CHART_X(t) (PLOT_X + ((t) - first) * (PLOT_W / span))
#define CHART_Y(v) (PLOT_Y + PLOT_H - (v) * (PLOT_H / top))

  FILE *f = svg_open(o->path, PLOT_X + PLOT_W + 40, PLOT_Y + PLOT_H + 100);
  svg_text(f, PLOT_X, 32, "font-size=\"20\" font-weight=\"bold\"",
           "aoi tick time by phase: %s crowd", c->scenario->name);
  svg_text(f, PLOT_X, 56, "fill=\"" COLOR_MUTED "\"",
           "%" PRIu32 " entities, view radius %g, %u shard%s on %u thread%s, "
           "seed %" PRIu64 "; mean tick %.3f ms; tick 1 (the adds): %.3f ms",
           c->count, o->radius, c->stats.shards,
           c->stats.shards == 1 ? "" : "s", c->stats.threads,
           c->stats.threads == 1 ? "" : "s", o->seed,
           sum / (last - first + 1), c->samples[0].tick_ms);

  /* Grid and axes. */
  fputs("<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n", f);
  for (double v = step; v <= top + step / 2; v += step)
    fprintf(f, "<path d=\"M%.1f %.1fh%.1f\"/>\n", PLOT_X, CHART_Y(v), PLOT_W);
  fputs("</g>\n", f);
  for (double v = 0; v <= top + step / 2; v += step)
    svg_text(f, PLOT_X - 8, CHART_Y(v) + 4, "text-anchor=\"end\"", "%g", v);
  double tick_step = nice_step(span);
  for (double t = ceil((first + 1) / tick_step) * tick_step; t <= last + 1;
       t += tick_step) {
    double x = CHART_X(t - 1); /* tick numbers count from 1 */
    fprintf(f, "<path d=\"M%.1f %.1fv5\" stroke=\"" COLOR_INK "\"/>\n", x,
            PLOT_Y + PLOT_H);
    svg_text(f, x, PLOT_Y + PLOT_H + 20, "text-anchor=\"middle\"", "%g", t);
  }
  svg_text(f, PLOT_X + PLOT_W / 2, PLOT_Y + PLOT_H + 46,
           "text-anchor=\"middle\"", "tick");
  fprintf(f, "<text transform=\"translate(24 %.1f) rotate(-90)\" "
             "text-anchor=\"middle\">milliseconds</text>\n",
          PLOT_Y + PLOT_H / 2);

  /* The phases, stacked: each band from the sum below it to the sum with it. */
  static const char *const names[AOI_PHASE_COUNT] = {
      "apply (ops, handoffs)", "exchange (ghosts)", "compute (views, events)"};
  static const char *const colors[AOI_PHASE_COUNT] = {"#4c78a8", "#f58518",
                                                      "#54a24b"};
  for (int p = 0; p < AOI_PHASE_COUNT; p++) {
    fprintf(f, "<path class=\"phase\" fill=\"%s\" fill-opacity=\"0.85\" d=\"",
            colors[p]);
    for (unsigned t = first; t <= last; t++) {
      double v = 0;
      for (int q = 0; q <= p; q++)
        v += c->samples[t].phase_ms[q];
      fprintf(f, "%s%.1f %.1f", t == first ? "M" : "L", CHART_X(t),
              CHART_Y(v));
    }
    for (unsigned t = last + 1; t-- > first;) {
      double v = 0;
      for (int q = 0; q < p; q++)
        v += c->samples[t].phase_ms[q];
      fprintf(f, "L%.1f %.1f", CHART_X(t), CHART_Y(v));
    }
    fputs("Z\"/>\n", f);
  }
  fputs("<path class=\"tick\" fill=\"none\" stroke=\"" COLOR_INK "\" "
        "stroke-width=\"1.2\" d=\"", f);
  for (unsigned t = first; t <= last; t++)
    fprintf(f, "%s%.1f %.1f", t == first ? "M" : "L", CHART_X(t),
            CHART_Y(c->samples[t].tick_ms));
  fputs("\"/>\n", f);
  fprintf(f, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" stroke=\""
             COLOR_INK "\"/>\n",
          PLOT_X, PLOT_Y, PLOT_Y + PLOT_H, PLOT_X + PLOT_W);

  /* Legend, under the axis. */
  double x = PLOT_X, y = PLOT_Y + PLOT_H + 76;
  fprintf(f, "<path d=\"M%.1f %.1fh18\" stroke=\"" COLOR_INK "\" "
             "stroke-width=\"1.5\"/>\n", x, y - 4);
  svg_text(f, x + 24, y, "", "whole tick (wall)");
  x += 170;
  for (int p = 0; p < AOI_PHASE_COUNT; p++) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" "
               "fill=\"%s\" fill-opacity=\"0.85\"/>\n", x, y - 10, colors[p]);
    svg_text(f, x + 20, y, "", "%s", names[p]);
    x += 200;
  }
  svg_text(f, PLOT_X + PLOT_W, PLOT_Y - 8,
           "text-anchor=\"end\" font-size=\"12\" fill=\"" COLOR_MUTED "\"",
           "phases: the slowest worker's time (aoi_stats phase_ns)");
  svg_close(f, o->path);
#undef CHART_X
#undef CHART_Y
}

/* ---- scaling: time per tick against crowd size, from aoi-bench --json - */

#define SERIES_MAX 16
#define POINTS_MAX 64

/* One line of the chart: its points, sorted by x when drawn. */
typedef struct series {
  char name[48];
  double x[POINTS_MAX], y[POINTS_MAX];
  int count;
} series;

typedef struct scaling_data {
  series s[SERIES_MAX];
  int count;
  char scenario[32];
} scaling_data;

/* The number after "key": in a flat JSON object line; 0 when the key is
   missing or not a number (null). */
static int json_number_at(const char *line, const char *key, double *value)
{
  char pattern[96];
  snprintf(pattern, sizeof(pattern), "\"%s\":", key);
  const char *at = strstr(line, pattern);
  if (at == NULL)
    return 0;
  char *end;
  double v = strtod(at + strlen(pattern), &end);
  if (end == at + strlen(pattern) || !isfinite(v))
    return 0;
  *value = v;
  return 1;
}

/* Adds (x, y) to the series of that name, made when new; a second point
   at the same x is ignored (aoi-bench repeats the algorithms' figures on
   every thread count's line). */
static void add_point(scaling_data *d, const char *name, double x, double y)
{
  int i = 0;
  while (i < d->count && strcmp(d->s[i].name, name) != 0)
    i++;
  if (i == d->count) {
    if (d->count == SERIES_MAX)
      die("more than %d series", SERIES_MAX);
    snprintf(d->s[i].name, sizeof(d->s[i].name), "%s", name);
    d->count++;
  }
  series *s = &d->s[i];
  for (int k = 0; k < s->count; k++)
    if (s->x[k] == x)
      return;
  if (s->count == POINTS_MAX)
    die("series %s: more than %d points", name, POINTS_MAX);
  s->x[s->count] = x;
  s->y[s->count++] = y;
}

/* One aoi-bench JSON line: the engine's frame at its thread count, and
   every algo_NAME_frame_ms_median that is a number. */
static void read_line(scaling_data *d, const char *line, const char *path,
                      unsigned number)
{
  double entities, threads, frame;
  if (!json_number_at(line, "entities", &entities) ||
      !json_number_at(line, "threads", &threads) ||
      !json_number_at(line, "frame_ms_median", &frame))
    die("%s:%u: not an aoi-bench --json line (entities, threads,"
        " frame_ms_median)", path, number);
  const char *sc = strstr(line, "\"scenario\":\"");
  if (sc != NULL) {
    sc += strlen("\"scenario\":\"");
    size_t len = strcspn(sc, "\"");
    char name[32];
    snprintf(name, sizeof(name), "%.*s", (int)len, sc);
    if (d->scenario[0] == '\0')
      snprintf(d->scenario, sizeof(d->scenario), "%s", name);
    else if (strcmp(d->scenario, name) != 0)
      die("%s:%u: scenario %s after %s: one scenario a chart", path, number,
          name, d->scenario);
  }
  const char *suffix = "_frame_ms_median\":";
  for (const char *p = strstr(line, "\"algo_"); p != NULL;
       p = strstr(p + 1, "\"algo_")) {
    const char *name = p + strlen("\"algo_");
    const char *end = strstr(name, suffix);
    const char *quote = strchr(name, '"');
    double y;
    if (end == NULL || quote == NULL || quote != end + strlen(suffix) - 2)
      continue; /* another algo_ key */
    char key[64];
    snprintf(key, sizeof(key), "%.*s", (int)(quote - p - 1), p + 1);
    if (json_number_at(line, key, &y) && y > 0) {
      char label[48];
      snprintf(label, sizeof(label), "%.*s", (int)(end - name), name);
      add_point(d, label, entities, y);
    }
  }
  if (frame > 0) {
    char label[48];
    snprintf(label, sizeof(label), "engine, %g thread%s", threads,
             threads == 1 ? "" : "s");
    add_point(d, label, entities, frame);
  }
}

static void read_scaling(const char *path, scaling_data *d)
{
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (f == NULL)
    die("%s: %s", path, strerror(errno));
  char line[16384];
  unsigned number = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    number++;
    if (strchr(line, '\n') == NULL && !feof(f))
      die("%s:%u: line too long", path, number);
    if (line[strspn(line, " \t\r\n")] == '\0')
      continue;
    read_line(d, line, path, number);
  }
  if (f != stdin)
    fclose(f);
  if (d->count == 0)
    die("%s: no aoi-bench --json line with a time in it", path);
}

/* "2k", "100k", "1M": a count for an axis label. */
static void count_label(char *out, size_t size, double v)
{
  if (v >= 1e6)
    snprintf(out, size, "%gM", v / 1e6);
  else if (v >= 1e3)
    snprintf(out, size, "%gk", v / 1e3);
  else
    snprintf(out, size, "%g", v);
}

static void scaling(const options *o)
{
  scaling_data d;
  memset(&d, 0, sizeof(d));
  read_scaling(o->input, &d);
  double x0 = INFINITY, x1 = 0, y0 = INFINITY, y1 = 0;
  for (int i = 0; i < d.count; i++) {
    series *s = &d.s[i];
    for (int a = 1; a < s->count; a++) /* by x: insertion sort */
      for (int b = a; b > 0 && s->x[b - 1] > s->x[b]; b--) {
        double tx = s->x[b], ty = s->y[b];
        s->x[b] = s->x[b - 1];
        s->y[b] = s->y[b - 1];
        s->x[b - 1] = tx;
        s->y[b - 1] = ty;
      }
    for (int k = 0; k < s->count; k++) {
      x0 = fmin(x0, s->x[k]);
      x1 = fmax(x1, s->x[k]);
      y0 = fmin(y0, s->y[k]);
      y1 = fmax(y1, s->y[k]);
    }
  }
  /* Whole decades around the data. */
  double lx0 = floor(log10(x0)), lx1 = ceil(log10(x1));
  double ly0 = floor(log10(y0)), ly1 = ceil(log10(y1));
  if (lx1 <= lx0)
    lx1 = lx0 + 1;
  if (ly1 <= ly0)
    ly1 = ly0 + 1;
#define LOG_X(v) (PLOT_X + (log10(v) - lx0) * (PLOT_W / (lx1 - lx0)))
#define LOG_Y(v) (PLOT_Y + PLOT_H - (log10(v) - ly0) * (PLOT_H / (ly1 - ly0)))

  double legend_rows = ceil(d.count / 3.0);
  FILE *f = svg_open(o->path, PLOT_X + PLOT_W + 40,
                     PLOT_Y + PLOT_H + 80 + 22 * legend_rows);
  if (o->title != NULL)
    svg_text(f, PLOT_X, 32, "font-size=\"20\" font-weight=\"bold\"", "%s",
             o->title);
  else
    svg_text(f, PLOT_X, 32, "font-size=\"20\" font-weight=\"bold\"",
             "Time per tick against entities, log-log%s%s",
             d.scenario[0] ? ": " : "", d.scenario);
  svg_text(f, PLOT_X, 56, "fill=\"" COLOR_MUTED "\"",
           "medians; the algorithms: submit + tick, one thread; the engine:"
           " submit + tick + delivery");

  /* Decades, and 2 and 5 times each, as grid lines. */
  fputs("<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n", f);
  for (double e = lx0; e <= lx1; e++)
    for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
      double v = m * pow(10, e);
      if (log10(v) <= lx1 + 1e-9)
        fprintf(f, "<path d=\"M%.1f %.1fv%.1f\"/>\n", LOG_X(v), PLOT_Y,
                PLOT_H);
    }
  for (double e = ly0; e <= ly1; e++)
    for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
      double v = m * pow(10, e);
      if (log10(v) <= ly1 + 1e-9)
        fprintf(f, "<path d=\"M%.1f %.1fh%.1f\"/>\n", PLOT_X, LOG_Y(v),
                PLOT_W);
    }
  fputs("</g>\n", f);
  for (double e = lx0; e <= lx1; e++)
    for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
      double v = m * pow(10, e);
      char label[16];
      if (log10(v) > lx1 + 1e-9)
        continue;
      count_label(label, sizeof(label), v);
      svg_text(f, LOG_X(v), PLOT_Y + PLOT_H + 20, "text-anchor=\"middle\"",
               "%s", label);
    }
  for (double e = ly0; e <= ly1; e++)
    svg_text(f, PLOT_X - 8, LOG_Y(pow(10, e)) + 4, "text-anchor=\"end\"",
             "%g", pow(10, e));
  svg_text(f, PLOT_X + PLOT_W / 2, PLOT_Y + PLOT_H + 46,
           "text-anchor=\"middle\"", "entities");
  fprintf(f, "<text transform=\"translate(24 %.1f) rotate(-90)\" "
             "text-anchor=\"middle\">milliseconds per tick</text>\n",
          PLOT_Y + PLOT_H / 2);

  /* Two slopes to read the others against: from the lowest first point,
     times 10 and times 100 a decade. */
  fprintf(f, "<clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" "
             "width=\"%.1f\" height=\"%.1f\"/></clipPath>\n",
          PLOT_X, PLOT_Y, PLOT_W, PLOT_H);
  double gx = x0, gy = y1;
  for (int i = 0; i < d.count; i++)
    if (d.s[i].x[0] == x0)
      gy = fmin(gy, d.s[i].y[0]);
  for (int order = 1; order <= 2; order++) {
    /* To the right edge, or to the top where it leaves there first. */
    double ex = pow(10, lx1), ey = gy * pow(ex / gx, order);
    if (ey > pow(10, ly1)) {
      ey = pow(10, ly1);
      ex = gx * pow(ey / gy, 1.0 / order);
    }
    fprintf(f, "<path class=\"guide\" clip-path=\"url(#plot)\" d=\"M%.1f "
               "%.1fL%.1f %.1f\" stroke=\"#bbbbbb\" stroke-dasharray=\"5 4\" "
               "fill=\"none\"/>\n",
            LOG_X(gx), LOG_Y(gy), LOG_X(ex), LOG_Y(ey));
    svg_text(f, LOG_X(ex) - 6, LOG_Y(ey) + 16,
             "text-anchor=\"end\" font-size=\"12\" fill=\"#999999\"",
             order == 1 ? "\xe2\x88\x9d N" : "\xe2\x88\x9d N\xc2\xb2");
  }

  static const char *const colors[] = {"#d62728", "#1f77b4", "#2ca02c",
                                       "#9467bd", "#ff7f0e", "#8c564b",
                                       "#e377c2", "#17becf"};
  for (int i = 0; i < d.count; i++) {
    const series *s = &d.s[i];
    const char *color = colors[i % 8];
    int engine = strncmp(s->name, "engine", 6) == 0;
    fprintf(f, "<path class=\"series\" fill=\"none\" stroke=\"%s\" "
               "stroke-width=\"2\"%s d=\"",
            color, engine ? " stroke-dasharray=\"8 3\"" : "");
    for (int k = 0; k < s->count; k++)
      fprintf(f, "%s%.1f %.1f", k ? "L" : "M", LOG_X(s->x[k]),
              LOG_Y(s->y[k]));
    fputs("\"/>\n", f);
    for (int k = 0; k < s->count; k++)
      fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                 "fill=\"%s\"/>\n",
              LOG_X(s->x[k]), LOG_Y(s->y[k]), color);
    double lx = PLOT_X + (i % 3) * 270, ly = PLOT_Y + PLOT_H + 76 + 22 * (i / 3);
    fprintf(f, "<path d=\"M%.1f %.1fh22\" stroke=\"%s\" stroke-width=\"2\"%s/>"
               "\n",
            lx, ly - 4, color, engine ? " stroke-dasharray=\"8 3\"" : "");
    svg_text(f, lx + 28, ly, "", "%s", s->name);
  }
  fprintf(f, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" stroke=\""
             COLOR_INK "\"/>\n",
          PLOT_X, PLOT_Y, PLOT_Y + PLOT_H, PLOT_X + PLOT_W);
  svg_close(f, o->path);
#undef LOG_X
#undef LOG_Y
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *out)
{
  fputs("usage: aoi-svg snapshot FILE.svg [flags] [--watcher ID]\n"
        "       aoi-svg chart FILE.svg [flags]\n"
        "       aoi-svg scaling FILE.svg BENCH.jsonl [--title TEXT]\n"
        "  --scenario NAME  hotspot or uniform (default hotspot)\n"
        "  --entities N     entities, 60% players (default 3000)\n"
        "  --radius R       players' view radius (default 40; map side 1000)\n"
        "  --ticks T        ticks to run (default 150)\n"
        "  --threads N      worker threads; 0 = one per core (default "
        "$AOI_THREADS, else 0)\n"
        "  --shards M       spatial shards; 0 = one per thread (default 4)\n"
        "  --seed S         PRNG seed (default 1)\n"
        "  --watcher ID     snapshot: the player whose view is drawn (default:\n"
        "                   the one that sees most into other shards)\n"
        "  --cap K          every player's view cap (default 0: none); the\n"
        "                   snapshot marks the candidates it did not take\n"
        "scaling reads the lines of aoi-bench --json (one scenario, at\n"
        "several --entities; - for standard input) and draws each\n"
        "algorithm's and the engine's time per tick against the entities,\n"
        "log-log.\n",
        out);
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

static void parse_options(int argc, char **argv, options *o)
{
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                    strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    exit(0);
  }
  if (argc < 3 || (strcmp(argv[1], "snapshot") != 0 &&
                   strcmp(argv[1], "chart") != 0 &&
                   strcmp(argv[1], "scaling") != 0)) {
    usage(stderr);
    exit(2);
  }
  o->mode = argv[1];
  o->path = argv[2];
  o->input = o->title = NULL;
  int first = 3;
  if (strcmp(o->mode, "scaling") == 0) {
    if (argc < 4) {
      usage(stderr);
      die("scaling: which aoi-bench --json output?");
    }
    o->input = argv[3];
    first = 4;
  }
  o->scenario = "hotspot";
  o->entities = 3000;
  o->radius = 40;
  o->ticks = 150;
  o->threads = 0;
  o->shards = 4;
  o->seed = 1;
  o->watcher = 0;
  o->cap = 0;
  const char *env = getenv("AOI_THREADS");
  if (env != NULL && *env != '\0')
    o->threads = (unsigned)parse_unsigned("AOI_THREADS", env, 256);
  for (int i = first; i < argc; i += 2) {
    const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (value == NULL) {
      usage(stderr);
      die("%s: missing value", flag);
    }
    if (o->input != NULL) { /* scaling takes --title alone */
      if (strcmp(flag, "--title") != 0) {
        usage(stderr);
        die("scaling: unknown flag %s", flag);
      }
      o->title = value;
    } else if (strcmp(flag, "--scenario") == 0)
      o->scenario = value;
    else if (strcmp(flag, "--entities") == 0)
      o->entities = (uint32_t)parse_unsigned(flag, value, 1000000);
    else if (strcmp(flag, "--radius") == 0)
      o->radius = (double)parse_unsigned(flag, value, 500);
    else if (strcmp(flag, "--ticks") == 0)
      o->ticks = (unsigned)parse_unsigned(flag, value, 1000000);
    else if (strcmp(flag, "--threads") == 0)
      o->threads = (unsigned)parse_unsigned(flag, value, 256);
    else if (strcmp(flag, "--shards") == 0)
      o->shards = (unsigned)parse_unsigned(flag, value, 4096);
    else if (strcmp(flag, "--seed") == 0)
      o->seed = parse_unsigned(flag, value, UINT64_MAX);
    else if (strcmp(flag, "--watcher") == 0)
      o->watcher = parse_unsigned(flag, value, UINT64_MAX);
    else if (strcmp(flag, "--cap") == 0)
      o->cap = (uint32_t)parse_unsigned(flag, value, UINT32_MAX);
    else {
      usage(stderr);
      die("unknown flag %s", flag);
    }
  }
  if (o->entities == 0 || o->ticks == 0 || o->radius == 0)
    die("--entities, --ticks and --radius must be at least 1");
}

int main(int argc, char **argv)
{
  options o;
  parse_options(argc, argv, &o);
  if (o.input != NULL) {
    scaling(&o);
    return 0;
  }
  const scenario *sc = NULL;
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
    if (strcmp(scenarios[i].name, o.scenario) == 0)
      sc = &scenarios[i];
  if (sc == NULL)
    die("unknown scenario '%s' (hotspot, uniform)", o.scenario);

  crowd c;
  crowd_run(&o, sc, &c);
  if (strcmp(o.mode, "snapshot") == 0)
    snapshot(&o, &c);
  else
    chart(&o, &c);
  crowd_free(&c);
  return 0;
}
