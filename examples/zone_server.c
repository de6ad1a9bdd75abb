/*
 * zone_server.c: a small zone server's game loop around an aoi world, the
 * program to copy first. It uses only the public API (aoi.h).
 *
 * Each frame it:
 *   1. lets players log in (watcher + marker: they see and are seen) and
 *      respawns dead NPCs (marker only: seen, see nothing);
 *   2. runs the game tick: players walk, a few teleport, NPCs follow the
 *      paths their AI chose last frame. Each entity's record keeps the
 *      reference aoi_ref_of gave right after its aoi_add, and its moves
 *      go by that reference (aoi_move_ref), which skips the id lookup;
 *   3. runs the AOI tick in two halves. aoi_tick_begin hands the frame's
 *      operations to the worker threads and returns; the host then runs
 *      logic that needs nothing from the world (here the NPC AI, on the
 *      host's own arrays: while a tick is in flight the world answers only
 *      aoi_tick_poll and aoi_tick_end); aoi_tick_end waits for the workers;
 *   4. delivers every client's events into that client's send buffer, in a
 *      tiny wire format, as a server would before writing to the socket:
 *      one network thread per delivery segment, all at once (aoi_deliver);
 *   5. runs combat: some players strike every NPC in range (a circle
 *      query on the NPC layer); a struck NPC dies and despawns.
 *
 * Every call's return code is checked. The output is the same for any
 * thread count: the library's events are deterministic.
 *
 * usage: zone-server [--frames N] [--threads N]
 *   --threads defaults to $AOI_THREADS, else 0 (one worker per core).
 */
#include "aoi.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORLD_SIDE 1000.0f
#define PLAYERS 500          /* client ids 1 .. PLAYERS */
#define NPCS 2000            /* NPC ids NPC_BASE .. NPC_BASE + NPCS - 1 */
#define NPC_BASE 1000000u
#define VIEW_RADIUS 40.0f
#define STRIKE_RANGE 12.0f
#define LAYER_PLAYER 1u      /* layers: what an entity is in */
#define LAYER_NPC 2u
#define EVENT_BYTES 17       /* kind u8, id u64, x f32, y f32; little-endian */

typedef struct client {
  float x, y, heading;
  int online;
  aoi_ref ref; /* while online: its entity, for aoi_move_ref */
  unsigned char *buffer; /* bytes waiting for this client's socket */
  size_t length, capacity;
} client;

typedef struct npc {
  float x, y, goal_x, goal_y;
  int alive;
  aoi_ref ref; /* while alive */
} npc;

static client clients[PLAYERS];
static npc npcs[NPCS];

/* Stops on any error. (A real server could carry on after AOI_ENOMEM from
   a tick: the world stays consistent, see aoi.h.) */
static void check(int rc, const char *call)
{
  if (rc != 0) {
    fprintf(stderr, "zone-server: %s: %s\n", call, aoi_strerror(rc));
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

static float random_coordinate(void)
{
  return (float)(random_unit() * WORLD_SIDE);
}

static float clamp_to_world(float v)
{
  return v < 0 ? 0 : v > WORLD_SIDE ? WORLD_SIDE : v;
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int bytes)
{
  for (int i = 0; i < bytes; i++)
    *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

/* Appends one event to a client's send buffer in the wire format. */
static void encode_event(client *c, const aoi_event *e)
{
  if (c->length + EVENT_BYTES > c->capacity) {
    size_t capacity = c->capacity ? 2 * c->capacity : 1024;
    unsigned char *buffer = realloc(c->buffer, capacity);
    if (buffer == NULL) {
      fprintf(stderr, "zone-server: out of memory\n");
      exit(1);
    }
    c->buffer = buffer;
    c->capacity = capacity;
  }
  uint32_t x, y; /* the floats' bits */
  memcpy(&x, &e->x, 4);
  memcpy(&y, &e->y, 4);
  unsigned char *p = put_le(c->buffer + c->length, e->kind, 1);
  p = put_le(put_le(put_le(p, e->id, 8), x, 4), y, 4);
  c->length += EVENT_BYTES;
}

/* NPC AI, on host data only: pick a new goal when the old one is reached. */
static void think(void)
{
  for (int i = 0; i < NPCS; i++) {
    npc *n = &npcs[i];
    if (fabsf(n->goal_x - n->x) < 1 && fabsf(n->goal_y - n->y) < 1) {
      n->goal_x = clamp_to_world(n->x + (float)(random_unit() * 60 - 30));
      n->goal_y = clamp_to_world(n->y + (float)(random_unit() * 60 - 30));
    }
  }
}

static unsigned parse_count(const char *text, const char *name)
{
  char *end;
  unsigned long v = strtoul(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || v > 1000000) {
    fprintf(stderr, "zone-server: %s: '%s' is not a count\n", name, text);
    exit(2);
  }
  return (unsigned)v;
}

/* 1. Logins (20 a frame until the zone is full) and NPC respawns. */
static void spawn(aoi_world *world, unsigned frame)
{
  for (int i = 0, joined = 0; i < PLAYERS && joined < 20; i++) {
    client *c = &clients[i];
    if (c->online)
      continue;
    c->x = random_coordinate();
    c->y = random_coordinate();
    c->heading = (float)(random_unit() * 6.2831853);
    aoi_entity player = {.id = (uint64_t)i + 1,
                         .tag = (uint64_t)i, /* its index in clients[] */
                         .x = c->x,
                         .y = c->y,
                         .radius = VIEW_RADIUS,
                         .flags = AOI_WATCHER | AOI_MARKER,
                         .layers = LAYER_PLAYER,
                         .interest = LAYER_PLAYER | LAYER_NPC};
    check(aoi_add(world, &player), "aoi_add player");
    check(aoi_ref_of(world, (uint64_t)i + 1, &c->ref), "aoi_ref_of player");
    c->online = 1;
    joined++;
  }
  for (int i = 0; i < NPCS; i++) {
    npc *n = &npcs[i];
    if (n->alive || (frame > 1 && random_unit() > 0.05))
      continue;
    n->x = n->goal_x = random_coordinate();
    n->y = n->goal_y = random_coordinate();
    aoi_entity monster = {.id = NPC_BASE + (uint64_t)i,
                          .tag = (uint64_t)i, /* its index in npcs[] */
                          .x = n->x,
                          .y = n->y,
                          .flags = AOI_MARKER,
                          .layers = LAYER_NPC};
    check(aoi_add(world, &monster), "aoi_add npc");
    check(aoi_ref_of(world, NPC_BASE + (uint64_t)i, &n->ref),
          "aoi_ref_of npc");
    n->alive = 1;
  }
}

/* 2. Game tick: players walk or (1 in 200) teleport; NPCs walk toward the
   goal their AI chose. Only entities that moved are submitted. */
static void game_tick(aoi_world *world)
{
  for (int i = 0; i < PLAYERS; i++) {
    client *c = &clients[i];
    if (!c->online)
      continue;
    if (random_unit() < 0.005) {
      c->x = random_coordinate();
      c->y = random_coordinate();
    } else {
      c->heading += (float)(random_unit() - 0.5);
      c->x = clamp_to_world(c->x + 3 * cosf(c->heading));
      c->y = clamp_to_world(c->y + 3 * sinf(c->heading));
    }
    check(aoi_move_ref(world, c->ref, c->x, c->y), "aoi_move_ref player");
  }
  for (int i = 0; i < NPCS; i++) {
    npc *n = &npcs[i];
    float dx = n->goal_x - n->x, dy = n->goal_y - n->y;
    if (!n->alive || (dx == 0 && dy == 0))
      continue;
    float step = fminf(1, 1.5f / sqrtf(dx * dx + dy * dy));
    n->x += step * dx;
    n->y += step * dy;
    check(aoi_move_ref(world, n->ref, n->x, n->y), "aoi_move_ref npc");
  }
}

/* 4. Delivery, in parallel: the tick left its events in
   aoi_delivery_segments() segments, each for its own clients, so one
   network thread per segment encodes them into those clients' send
   buffers at once (no id lookup, no sort). The callback runs on the
   delivering thread; it only touches its own watcher's client. */
typedef struct sender {
  /* each on its own cache line: the threads count at every client */
  _Alignas(64) aoi_world *world;
  unsigned first, step; /* segments first, first + step, ... */
  size_t events;
  unsigned long long bytes;
} sender;

static void send_client(void *user, uint64_t watcher, uint64_t tag,
                        const aoi_event *events, size_t count)
{
  sender *s = user;
  client *c = &clients[tag]; /* only players are watchers: tag = index */
  (void)watcher;
  for (size_t j = 0; j < count; j++)
    encode_event(c, &events[j]);
  s->events += count;
  s->bytes += c->length;
  c->length = 0; /* a real server would write(socket, buffer) here */
}

static void *send_share(void *arg)
{
  sender *s = arg;
  unsigned segments = aoi_delivery_segments(s->world);
  for (unsigned i = s->first; i < segments; i += s->step)
    check(aoi_deliver(s->world, i, send_client, s), "aoi_deliver");
  return NULL;
}

/* Returns the number of events; adds the bytes sent to *bytes. A real
   server keeps its network threads; this one starts them per frame. */
static size_t send_events(aoi_world *world, unsigned long long *bytes)
{
  enum { NETWORK_THREADS = 4 };
  unsigned segments = aoi_delivery_segments(world);
  unsigned n = segments < NETWORK_THREADS ? segments : NETWORK_THREADS;
  sender senders[NETWORK_THREADS];
  pthread_t threads[NETWORK_THREADS];
  for (unsigned i = 0; i < n; i++)
    senders[i] = (sender){world, i, n, 0, 0};
  for (unsigned i = 1; i < n; i++)
    if (pthread_create(&threads[i], NULL, send_share, &senders[i]) != 0) {
      fprintf(stderr, "zone-server: cannot start a thread\n");
      exit(1);
    }
  send_share(&senders[0]);
  size_t total = 0;
  for (unsigned i = 0; i < n; i++) {
    if (i > 0)
      pthread_join(threads[i], NULL);
    total += senders[i].events;
    *bytes += senders[i].bytes;
  }
  return total;
}

/* 5. Combat: a tenth of the players strike, in turn, at every NPC within
   STRIKE_RANGE (as of this frame's tick); NPCs hit die. Returns the kills. */
static unsigned combat(aoi_world *world, unsigned frame)
{
  unsigned kills = 0;
  for (int i = (int)(frame % 10); i < PLAYERS; i += 10) {
    uint64_t struck[16];
    size_t found;
    if (!clients[i].online)
      continue;
    check(aoi_query_circle(world, clients[i].x, clients[i].y, STRIKE_RANGE,
                           LAYER_NPC, struck, 16, &found),
          "aoi_query_circle");
    for (size_t j = 0; j < found && j < 16; j++) { /* at most 16 a strike */
      npc *n = &npcs[struck[j] - NPC_BASE];
      if (!n->alive)
        continue; /* already killed this frame */
      check(aoi_remove(world, struck[j]), "aoi_remove npc");
      n->alive = 0;
      kills++;
    }
  }
  return kills;
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
      fprintf(stderr, "usage: zone-server [--frames N] [--threads N]\n");
      return 2;
    }
  }

  aoi_config config;
  aoi_config_default(&config);
  config.threads = threads; /* 0: one worker per core */
  config.max_x = config.max_y = WORLD_SIDE;
  config.max_radius = VIEW_RADIUS;
  config.hysteresis = 4; /* no enter/leave flicker at the view's edge */
#ifdef __linux__
  /* A zone server that runs heavy game logic on this thread before each
     tick keeps the workers apart: each on a CPU of its own. */
  config.pin_threads = 1;
#endif
  aoi_world *world;
  check(aoi_create(&config, &world), "aoi_create");

  unsigned long long events = 0, bytes = 0, kills = 0;
  aoi_stats stats;
  for (unsigned frame = 1; frame <= frames; frame++) {
    spawn(world, frame);
    game_tick(world);
    /* 3. The AOI tick, with host-only work while the workers compute. */
    check(aoi_tick_begin(world), "aoi_tick_begin");
    think();
    check(aoi_tick_end(world), "aoi_tick_end");
    events += send_events(world, &bytes);
    kills += combat(world, frame);

    if (frame % 50 == 0 || frame == frames) {
      check(aoi_world_stats(world, &stats), "aoi_stats_get");
      printf("frame %u: %llu entities, %llu clients, %llu events, "
             "%llu bytes sent, %llu NPCs killed\n",
             frame, (unsigned long long)stats.entities,
             (unsigned long long)stats.watchers, events, bytes, kills);
    }
  }
  check(aoi_world_stats(world, &stats), "aoi_stats_get");
  printf("done: %u frames, %u worker threads, %u shards\n", frames,
         stats.threads, stats.shards);
  aoi_destroy(world);
  for (int i = 0; i < PLAYERS; i++)
    free(clients[i].buffer);
  return 0;
}
