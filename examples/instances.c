/*
 * instances.c: a zone server that hosts one continent and a few hundred
 * dungeon instances, every world on one shared pool of threads. It uses
 * only the public API (aoi.h).
 *
 * The pool's thread count is the server's one setting for AOI threads,
 * as MapUpdate.Threads is TrinityCore's: every world ticks on those
 * threads, however many worlds are open. The continent is a large world:
 * its tick is cut into a task per lane and step, and its lanes (threads
 * = 0: one per pool thread) run on the pool's threads at once. A dungeon
 * is a small world of one lane: its whole tick is one task, and a pool
 * thread takes up to 32 small tasks in one trip to the pool's queue.
 *
 * Each frame it:
 *   1. runs the game: players and NPCs walk on the continent, and groups
 *      of players through their dungeons, where the mobs wait;
 *   2. ticks every open world with one aoi_tick_many call: the calling
 *      thread waits once, for the last world, and the pool's threads stay
 *      busy until then;
 *   3. delivers each world's events and counts them by world kind, and
 *      adds up the continent's CPU time (measure_cpu: aoi_stats.work_ns
 *      on all threads, span_ns on its longest path);
 *   4. every few frames, closes a dungeon (aoi_destroy: the other worlds
 *      on the pool are not disturbed) and opens a new one for the next
 *      group in its place (aoi_create on the same pool).
 *
 * It checks what it counts: every event a tick reported (aoi_stats) is
 * delivered, and every dungeon that opened with a group got that group's
 * enters at its first tick. It exits 1 when a check fails. The counts
 * are the same for any thread count: each world's events are
 * deterministic, whichever threads run it.
 *
 * usage: instances [--frames N] [--threads N]
 *   --threads defaults to $AOI_THREADS, else 0 (one pool thread per core).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "aoi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONTINENT_SIDE 4000.0f
#define CONTINENT_PLAYERS 4000 /* ids 1 .. 4000: watchers and markers */
#define CONTINENT_NPCS 16000   /* ids NPC_BASE ..: markers */
#define NPC_BASE 1000000u
#define DUNGEONS 300         /* open at any time */
#define DUNGEON_SIDE 300.0f
#define EMPTY_EVERY 10       /* every 10th dungeon waits for a group */
#define CLOSE_EVERY 5        /* a dungeon closes and one opens every 5 frames */
#define VIEW_RADIUS 50.0f

enum { CONTINENT, INSTANCE, KINDS };
static const char *const kind_name[KINDS] = {"continent", "instances"};

/* What a world kind delivered: events by aoi_event_kind. */
typedef struct tally {
  unsigned long long events[3];
} tally;

typedef struct walker {
  float x, y;
  aoi_ref ref;
} walker;

typedef struct dungeon {
  aoi_world *world;
  int group;          /* players in it, ids 1 .. group; 0: empty */
  int mobs;           /* mob ids 100 .. 100 + mobs - 1, standing */
  walker players[5];
  int first_tick;     /* its first tick is this frame's */
} dungeon;

static walker continent_walkers[CONTINENT_PLAYERS + CONTINENT_NPCS];
static dungeon dungeons[DUNGEONS];
static tally tallies[KINDS];
static unsigned long long reported[KINDS]; /* events the ticks made */
/* dungeons opened and closed; groups at their first tick, and those of
   them that got enters then */
static unsigned opened, closed, groups, greeted;

/* Stops on any error. */
static void check(int rc, const char *call)
{
  if (rc != 0) {
    fprintf(stderr, "instances: %s: %s\n", call, aoi_strerror(rc));
    exit(1);
  }
}

/* A deterministic PRNG (xorshift64*), uniform in [0, 1). */
static double random_unit(void)
{
  static uint64_t state = UINT64_C(0x9e3779b97f4a7c15);
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return (double)((state * UINT64_C(0x2545f4914f6cdd1d)) >> 11) / 9007199254740992.0;
}

static float clamp(float v, float side)
{
  return v < 0 ? 0 : v > side ? side : v;
}

/* A step of up to `stride` on each axis, inside the map. */
static void walk(walker *w, float stride, float side)
{
  w->x = clamp(w->x + (float)(random_unit() * 2 - 1) * stride, side);
  w->y = clamp(w->y + (float)(random_unit() * 2 - 1) * stride, side);
}

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned parse_count(const char *text, const char *name)
{
  char *end;
  unsigned long v = strtoul(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || v > 1000000) {
    fprintf(stderr, "instances: %s: '%s' is not a count\n", name, text);
    exit(2);
  }
  return (unsigned)v;
}

/* A world on the pool, with the bounds and views every world here has. */
static aoi_world *open_world(aoi_pool *pool, unsigned lanes, float side,
                             int measure)
{
  aoi_config config;
  aoi_config_default(&config);
  config.run = AOI_RUN_POOL;
  config.pool = pool;
  config.threads = lanes; /* 1 a dungeon; a continent, a lane a thread */
  config.max_x = config.max_y = side;
  config.max_radius = VIEW_RADIUS;
  config.hysteresis = 4;
  config.measure_cpu = (unsigned)measure;
  aoi_world *world;
  check(aoi_create(&config, &world), "aoi_create");
  return world;
}

static void add_walker(aoi_world *world, walker *w, uint64_t id,
                       unsigned flags)
{
  aoi_entity e = {.id = id,
                  .x = w->x,
                  .y = w->y,
                  .radius = VIEW_RADIUS,
                  .flags = flags,
                  .layers = AOI_ALL_LAYERS,
                  .interest = AOI_ALL_LAYERS};
  check(aoi_add(world, &e), "aoi_add");
  check(aoi_ref_of(world, id, &w->ref), "aoi_ref_of");
}

/* The continent: players (watchers and markers) and NPCs (markers),
   spread over the map. */
static aoi_world *open_continent(aoi_pool *pool)
{
  aoi_world *world =
      open_world(pool, aoi_pool_threads(pool), CONTINENT_SIDE, 1);
  for (int i = 0; i < CONTINENT_PLAYERS + CONTINENT_NPCS; i++) {
    walker *w = &continent_walkers[i];
    w->x = (float)(random_unit() * CONTINENT_SIDE);
    w->y = (float)(random_unit() * CONTINENT_SIDE);
    if (i < CONTINENT_PLAYERS)
      add_walker(world, w, (uint64_t)i + 1, AOI_WATCHER | AOI_MARKER);
    else
      add_walker(world, w, NPC_BASE + (uint64_t)(i - CONTINENT_PLAYERS),
                 AOI_MARKER);
  }
  return world;
}

/* A dungeon of one lane: a group of 2 to 5 players at the entrance and 0
   to 35 mobs spread through it, or nobody (`empty`). */
static void open_dungeon(aoi_pool *pool, dungeon *d, int empty)
{
  memset(d, 0, sizeof(*d));
  d->world = open_world(pool, 1, DUNGEON_SIDE, 0);
  opened++;
  d->first_tick = 1;
  if (empty)
    return;
  d->group = 2 + (int)(random_unit() * 4);
  d->mobs = (int)(random_unit() * 36);
  for (int i = 0; i < d->group; i++) {
    walker *w = &d->players[i];
    w->x = 10 + (float)(random_unit() * 10); /* the entrance */
    w->y = 10 + (float)(random_unit() * 10);
    add_walker(d->world, w, (uint64_t)i + 1, AOI_WATCHER | AOI_MARKER);
  }
  for (int i = 0; i < d->mobs; i++) {
    walker mob = {(float)(random_unit() * DUNGEON_SIDE),
                  (float)(random_unit() * DUNGEON_SIDE), 0};
    add_walker(d->world, &mob, 100 + (uint64_t)i, AOI_MARKER);
  }
}

/* 1. The game: every continent walker takes a step, and so does every
   player in a dungeon; the mobs wait. */
static void play(aoi_world *continent)
{
  for (int i = 0; i < CONTINENT_PLAYERS + CONTINENT_NPCS; i++) {
    walker *w = &continent_walkers[i];
    walk(w, i < CONTINENT_PLAYERS ? 3 : 1, CONTINENT_SIDE);
    check(aoi_move_ref(continent, w->ref, w->x, w->y), "aoi_move_ref");
  }
  for (int d = 0; d < DUNGEONS; d++)
    for (int i = 0; i < dungeons[d].group; i++) {
      walker *w = &dungeons[d].players[i];
      walk(w, 2, DUNGEON_SIDE);
      check(aoi_move_ref(dungeons[d].world, w->ref, w->x, w->y),
            "aoi_move_ref");
    }
}

/* 3. Delivery: the callback counts. A server would encode each event into
   the watcher's send buffer here (zone_server.c does). */
static void count_events(void *user, uint64_t watcher, uint64_t watcher_tag,
                         const aoi_event *events, size_t count)
{
  tally *t = user;
  (void)watcher;
  (void)watcher_tag;
  for (size_t i = 0; i < count; i++)
    t->events[events[i].kind]++;
}

/* Delivers every event of one world's tick; returns its enters. */
static unsigned long long deliver(aoi_world *world, int kind)
{
  aoi_stats stats;
  check(aoi_world_stats(world, &stats), "aoi_world_stats");
  reported[kind] += stats.events;
  unsigned long long enters = tallies[kind].events[AOI_ENTER];
  for (unsigned s = 0; s < aoi_delivery_segments(world); s++)
    check(aoi_deliver(world, s, count_events, &tallies[kind]), "aoi_deliver");
  return tallies[kind].events[AOI_ENTER] - enters;
}

static int compare_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  unsigned frames = 200, threads = 0;
  const char *env = getenv("AOI_THREADS");
  if (env != NULL && *env != '\0')
    threads = parse_count(env, "AOI_THREADS");
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
      frames = parse_count(argv[++i], "--frames");
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = parse_count(argv[++i], "--threads");
    else {
      fprintf(stderr, "usage: instances [--frames N] [--threads N]\n");
      return 2;
    }
  }

  /* The server's AOI threads: one pool for every world. */
  aoi_pool_config pool_config;
  aoi_pool_config_default(&pool_config);
  pool_config.threads = threads; /* 0: one per core */
  aoi_pool *pool;
  check(aoi_pool_create(&pool_config, &pool), "aoi_pool_create");

  printf("pool: %u threads; continent: %d entities; %d dungeons open\n",
         aoi_pool_threads(pool), CONTINENT_PLAYERS + CONTINENT_NPCS,
         DUNGEONS);
  aoi_world *continent = open_continent(pool);
  for (int d = 0; d < DUNGEONS; d++)
    open_dungeon(pool, &dungeons[d], d % EMPTY_EVERY == EMPTY_EVERY - 1);

  aoi_world *worlds[1 + DUNGEONS];
  int results[1 + DUNGEONS];
  uint64_t *frame_ns = calloc(frames > 0 ? frames : 1, sizeof(uint64_t));
  if (frame_ns == NULL) {
    fprintf(stderr, "instances: out of memory\n");
    return 1;
  }
  unsigned long long work_ns = 0, span_ns = 0;
  for (unsigned frame = 0; frame < frames; frame++) {
    play(continent);

    /* 2. Every open world, in one call. */
    worlds[0] = continent;
    for (int d = 0; d < DUNGEONS; d++)
      worlds[1 + d] = dungeons[d].world;
    uint64_t t0 = now_ns();
    check(aoi_tick_many(worlds, 1 + DUNGEONS, results), "aoi_tick_many");
    frame_ns[frame] = now_ns() - t0;

    /* 3. Each world's events. */
    aoi_stats stats;
    check(aoi_world_stats(continent, &stats), "aoi_world_stats");
    work_ns += stats.work_ns;
    span_ns += stats.span_ns;
    deliver(continent, CONTINENT);
    for (int d = 0; d < DUNGEONS; d++) {
      unsigned long long enters = deliver(dungeons[d].world, INSTANCE);
      if (dungeons[d].first_tick && dungeons[d].group > 0) {
        groups++;
        greeted += enters > 0;
      }
      dungeons[d].first_tick = 0;
    }

    /* 4. A dungeon closes, and the next group's opens in its place. */
    if (frame % CLOSE_EVERY == CLOSE_EVERY - 1) {
      dungeon *d = &dungeons[(frame / CLOSE_EVERY * 37) % DUNGEONS];
      check(aoi_destroy(d->world), "aoi_destroy");
      closed++;
      open_dungeon(pool, d, 0);
    }
  }

  check(aoi_destroy(continent), "aoi_destroy");
  for (int d = 0; d < DUNGEONS; d++)
    check(aoi_destroy(dungeons[d].world), "aoi_destroy");
  check(aoi_pool_destroy(pool), "aoi_pool_destroy");

  printf("dungeons: %u opened, %u closed; %u groups ticked in, %u of "
         "them saw each other enter\n",
         opened, closed, groups, greeted);
  for (int k = 0; k < KINDS; k++)
    printf("%s: %llu enters, %llu leaves, %llu moves\n", kind_name[k],
           tallies[k].events[AOI_ENTER], tallies[k].events[AOI_LEAVE],
           tallies[k].events[AOI_MOVE]);
  if (frames > 0) {
    qsort(frame_ns, frames, sizeof(uint64_t), compare_u64);
    printf("%u frames: aoi_tick_many of %d worlds took %.2f ms median, "
           "%.2f ms max\n",
           frames, 1 + DUNGEONS, frame_ns[frames / 2] / 1e6,
           frame_ns[frames - 1] / 1e6);
    printf("continent tick: %.2f ms CPU on all threads, %.2f ms on its "
           "longest path\n",
           work_ns / 1e6 / frames, span_ns / 1e6 / frames);
  }
  free(frame_ns);

  int failed = 0;
  for (int k = 0; k < KINDS; k++) {
    unsigned long long got = tallies[k].events[0] + tallies[k].events[1] +
                             tallies[k].events[2];
    if (got != reported[k]) {
      fprintf(stderr, "instances: %s: %llu events delivered, %llu made\n",
              kind_name[k], got, reported[k]);
      failed = 1;
    }
  }
  if (greeted != groups) {
    fprintf(stderr, "instances: %u of %u groups saw no enter\n",
            groups - greeted, groups);
    failed = 1;
  }
  return failed;
}
